#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntb_perf over the emulated fabric: each host writes into the peer's window with the
# CPU; records the bandwidth.
source "$REPO/selftests/lib.sh"

case $1 in
# max_mw_size: ntb_perf kmallocs a buffer of the window size, beyond the page
# allocator's largest order for our 8 MiB windows.
setup) load_module ntb_perf total_order=${PERF_TOTAL_ORDER:-24} max_mw_size=2097152; exit ;;
cleanup) unload_module ntb_perf; exit ;;
esac

P=$NTB_DBG/ntb_perf/$NTB
wait_for 30 "ntb_perf on $NTB" test -e "$P/run"
barrier start
# Submitting waits for ntb_perf's own handshake with the peer (link up, windows).
# That handshake gives up for good when the peer takes more than ~100 ms to take
# a scratchpad command (1000 tries of 50-100 us), which a busy emulated guest can:
# then both ends reload ntb_perf and try again, five times at most.
for attempt in 1 2 3 4 5; do
	ok=0
	timeout 60 sh -c "echo 0 >$P/run" && ok=1
	put "ok$attempt" $ok
	peer_ok=$(get "ok$attempt")
	[ $ok = 1 ] && [ "$peer_ok" = 1 ] && break
	log "ntb_perf attempt $attempt: here $ok, at $PEER $peer_ok; reloading it"
	barrier "reload$attempt"
	if [ "$TOPO" = twovm ] || [ "$ROLE" = a ]; then
		rmmod ntb_perf
		insmod "$(ko ntb_perf)" total_order=${PERF_TOTAL_ORDER:-24} max_mw_size=2097152
	fi
	barrier "reloaded$attempt"
	wait_for 30 "ntb_perf on $NTB" test -e "$P/run"
done
[ $ok = 1 ] || fail "ntb_perf did not complete its handshake in 5 attempts"
out=$(cat "$P/run") || fail "ntb_perf run failed"
echo "$out" | sed 's/^/# /'
mbs=$(echo "$out" | sed -n 's/.*, \([0-9]*\) MBytes\/s/\1/p' | head -1)
[ -n "$mbs" ] && [ "$mbs" -gt 0 ] || fail "no bandwidth in ntb_perf output"
log "figure: ntb_perf $TOPO $NTB->peer ${mbs} MB/s"
barrier done
