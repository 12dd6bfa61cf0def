#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Link loss on a modelled PEX-87xx NT port (ntb_hw_ivshmem profile=plx under
# ntb_hw_plx), twice, each under a running connection:
#
#   host a (server)  <==== NTB, a paced stream ====  host b (client)
#                             host b's port: 1. DL_Down for 500 ms
#                                            2. gone (reads all ones), then back
#
# 1. A DL_Down: the chip resets its link-side registers and raises DL_Down;
#    the driver must set the chip up again when the link returns, or the
#    peer's B2B window (its doorbells and scratchpads to us) stays dead.
# 2. A surprise removal: every read of the device returns all ones, which the
#    driver and ntbsmc above it must take as a link down, nothing worse.
# Each time the running connection (protocol version 7) moves to its TCP
# connection and ends intact, both ends saying they failed over (before
# version 7: both reset); once the link is back a new connection runs over NTB
# again, intact; the model saw no inbound translation that missed its window's
# memory.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup "$@"

pci=/sys/bus/pci/devices/$NTB
[ -e "$pci/plx_dl_down" ] || skip "$NTB is not a modelled PLX port (ntb_hw_ivshmem profile=plx)"
ulp_wait_active
port=7100

xfer_one before "--ulp" "--ulp --bytes 1048576 --both"
check "before: mode ${O[mode]-missing} intact ${O[intact]-missing}" \
	[ "${O[mode]-missing}/${O[intact]-missing}" = ntb/true ]

# lose NAME CMD...: host b runs CMD under a running connection (64 KiB every
# 10 ms), which both ends must finish intact over TCP: the stream goes on for
# 2 s after host b's end moved, then ends (xfer --until).
lose() {
	local name=$1 pid t0 ms
	shift
	port=$((port + 1))
	if [ "$ROLE" = a ]; then
		inns "$XFER" server "$MY_IP" $port --ulp >"$WORK/$name.json" &
		pid=$!
		wait_for 90 "server on $port" pid_listening $pid $port
		barrier "$name-listening"
		barrier "$name"
		t0=${EPOCHREALTIME/./}
	else
		barrier "$name-listening"
		inns "$XFER" client "$PEER_IP" $port --ulp --until "$WORK/$name.end" \
			--write-size 65536 --pace-ms 10 >"$WORK/$name.json" &
		pid=$!
		wait_for 90 "the connection over NTB" ntb_conn_to $port
		run "$@"
		t0=${EPOCHREALTIME/./}
		barrier "$name"
		wait_for 60 "the connection moved to TCP" conn_failed_over dport $port
		nap 2
		touch "$WORK/$name.end"
	fi
	wait $pid || check "$name: xfer failed: $(<"$WORK/$name.json")" false
	ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
	result "$WORK/$name.json"
	log "$name: $out (ended ${ms} ms after the loss)"
	check "$name: ${O[outcome]-missing}, intact ${O[intact]-missing}, failed over ${O[failed_over]-missing}" \
		[ "${O[outcome]-missing}/${O[intact]-missing}/${O[failed_over]-missing}" = ok/true/true ]
	barrier "$name-seen"
}

# back NAME: the link returned: NTB again, intact, no translation amiss.
back() {
	local stats
	ulp_wait_active
	xfer_one "$1" "--ulp" "--ulp --bytes 1048576 --both"
	check "$1: mode ${O[mode]-missing} intact ${O[intact]-missing}" \
		[ "${O[mode]-missing}/${O[intact]-missing}" = ntb/true ]
	stats=$(<"$pci/plx_model")
	log "$1: model: $stats"
	check "$1: translations that missed their window: $stats" has "$stats" "bad_xlat 0 "
}

lose dl_down sh -c "echo 500 >$pci/plx_dl_down"
back after_dl_down
[ "$ROLE" = b ] && check "ntb_hw_plx did not set the chip up again after the DL_Down" \
	has "$(dmesg)" "$NTB: link back, chip set up again"

lose gone sh -c "echo 1 >$pci/plx_gone"
# while the device is gone: TCP, with the bytes intact
xfer_one while_gone "--ulp" "--ulp --bytes 100000 --both"
check "while_gone: mode ${O[mode]-missing} intact ${O[intact]-missing}" \
	[ "${O[mode]-missing}/${O[intact]-missing}" = tcp/true ]
[ "$ROLE" = b ] && run sh -c "echo 0 >$pci/plx_gone"
barrier returned
back after_gone
checked
