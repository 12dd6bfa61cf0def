#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntb_perf over the emulated fabric: each host writes into the peer's window with the
# CPU; records the bandwidth.
source "$REPO/selftests/lib.sh"

# max_mw_size: ntb_perf kmallocs a buffer of the window size, beyond the page
# allocator's largest order for our 8 MiB windows.
setup() { load_module ntb_perf total_order=${PERF_TOTAL_ORDER:-24} max_mw_size=2097152; }
cleanup() { unload_module ntb_perf; }

test_phases setup cleanup "$@"

P=$NTB_DBG/ntb_perf/$NTB
wait_for 30 "ntb_perf on $NTB" test -e "$P/run"
barrier start
# Submitting waits for ntb_perf's own handshake with the peer (link up, windows).
# That handshake drops a command that arrives before the receiver sees the link
# up, and its sender then waits for the scratchpad to be taken (1000 tries of
# 1-2 s): the fabric must not deliver a doorbell across a link a side has not
# reported up yet. One attempt, bounded.
timeout 120 sh -c "echo 0 >$P/run" ||
	fail "ntb_perf did not complete its handshake with $PEER in 120 s"
out=$(<"$P/run") || fail "ntb_perf run failed"
echo "$out" | sed 's/^/# /'
mbs=$(echo "$out" | sed -n 's/.*, \([0-9]*\) MBytes\/s/\1/p' | head -1)
[ -n "$mbs" ] && [ "$mbs" -gt 0 ] || fail "no bandwidth in ntb_perf output"
log "figure: ntb_perf $TOPO $NTB->peer ${mbs} MB/s"
barrier done
