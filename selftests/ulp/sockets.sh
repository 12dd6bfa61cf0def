#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Socket behaviour over NTB must match TCP's: sockets (the oracle, which passes on
# plain TCP) runs its checks with the ULP on both ends, asserting for every
# connection that it ran over NTB and that the bytes crossed NTB. IPv4 and IPv6.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup_faults "$@"

ulp_wait_active
S=$REPO/selftests/ulp/sockets
# Fewer concurrent connections than the link has receive buffers (over 250 in the
# emulated window, see buffers.sh): beyond that they fall back to TCP (no_buffer).
opts="--ulp --expect ntb --conns 200"
# run_sockets NAME ADDR MY PORT OPTS...: the oracle's server here (a) or its
# client (b) on PORT (and PORT+1 for data); its TAP output goes to the log.
run_sockets() {
	local name=$1 addr=$2 my=$3 port=$4 srv rc
	shift 4
	if [ "$ROLE" = a ]; then
		inns "$S" server "$@" "$my" "$port" >"$WORK/$name.tap" 2>&1 &
		srv=$!
		wait_for 90 "sockets server" pid_listening $srv "$port"
		barrier "$name-listening"
		wait $srv
		rc=$?
	else
		barrier "$name-listening"
		inns "$S" client "$@" "$addr" "$port" >"$WORK/$name.tap" 2>&1
		rc=$?
	fi
	sed "s/^/# [$ROLE $name] /" "$WORK/$name.tap" | grep -E "not ok|ok |Totals|# " | head -120
	check "sockets $name: exit $rc" [ $rc = 0 ]
	barrier "$name-done"
}

for fam in 4 6; do
	if [ $fam = 4 ]; then addr=$PEER_IP my=$MY_IP; else addr=$PEER_IP6 my=$MY_IP6; fi
	# shellcheck disable=SC2086
	run_sockets v$fam "$addr" "$my" $((6500 + fam * 10)) $opts
done

# The peer's shutdown arriving while a poll asks for doorbells, the moment
# widened by the client's fault point poll_arm_delay (the check's server waits
# 100 ms before its shutdown).
if have_faults; then
	[ "$ROLE" = b ] && fault_set poll_arm_delay -1 500 6581
	# shellcheck disable=SC2086
	run_sockets late "$PEER_IP" "$MY_IP" 6580 $opts --only poll_late_shutdown
	[ "$ROLE" = b ] && fault_clear poll_arm_delay
fi
checked
