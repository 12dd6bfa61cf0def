#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntb_pingpong over the emulated fabric: doorbells and scratchpads bounce between the
# ports as fast as they can (delay_ms=1). Each bounce is one doorbell that must
# arrive: one lost stops the game on both hosts, so the counter must keep growing
# on both for the whole watch (PINGPONG_SECS, 20). A stall reports the port's
# doorbell state as the driver and the modelled chip see it.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/fabric/lib.sh"

setup() { load_module ntb_pingpong delay_ms=1; }
cleanup() { unload_module ntb_pingpong; }

test_phases setup cleanup "$@"

secs=${PINGPONG_SECS:-20}
C=$NTB_DBG/ntb_pingpong/$NTB/count
wait_for 30 "ntb_pingpong on $NTB" test -e "$C"
barrier start
# grows: the counter passes its value of now within 10 s
grows() {
	local last end=$((${EPOCHREALTIME/./} + 10000000))
	last=$(<"$C")
	until [ "$(<"$C")" -gt "$last" ]; do
		if [ "${EPOCHREALTIME/./}" -gt "$end" ]; then
			port_state
			fail "pingpong count stuck at $last for 10s: a doorbell lost?"
		fi
		nap
	done
}
wait_for 60 "pingpong count to pass 20 (it was $(<"$C") at the start)" \
	test "$(<"$C")" -ge 20
first=$(<"$C")
end=$((${EPOCHREALTIME/./} + secs * 1000000))
while [ "${EPOCHREALTIME/./}" -lt "$end" ]; do
	grows
	nap 1
done
log "pingpong count $first -> $(<"$C") in ${secs}s"
barrier done
