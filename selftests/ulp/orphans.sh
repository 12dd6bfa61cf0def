#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Orphans are bounded, as TCP bounds them (tcp_fin_timeout, tcp_max_orphans).
# Host a's kernel plays a peer that never lets go of a connection the other end
# closed (fault detach_drop: a wedged host, or one of protocol version 2), and
# its programs keep their sockets open. Host b closes its ends: each becomes an
# orphan, holding its slot while the peer may still write into it.
#   timeout  one orphan, orphan_timeout_ms 1500: reset after that (counted in
#            orphan_resets), the peer hears the reset and acknowledges it, the
#            slot comes back (on e8be0bf it waited for as long as a kept its
#            socket open)
#   late     one connection whose server attaches 3 s after its client wrote
#            and closed (server_attach_delay): held at the close, an orphan
#            from the attach on, reset by the timer as in timeout (before
#            this, the hold timer could not end it: it stayed as long as host
#            a kept its socket, and was never counted against max_orphans)
#   count    four orphans at once, max_orphans 2 and a long timeout: the two
#            beyond the limit reset at once, the others wait (until host a's
#            programs close: their CLOSED lets them go); a late attach counts
#            as in late (on a loaded machine the servers attach after their
#            clients closed)
# Then no buffer, orphan or connection is left on either host.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup_faults "$@"

need_faults
[ "$TOPO" = onevm ] || skip "one kernel: host a's fault point must not hit host b"
CLOSER=$REPO/selftests/ulp/closer
port=7800
ulp_wait_active

dev_field() { jfield "$(cli -j dev show "$NTB")" "$1"; }
orphans_are() { [ "$(dev_field orphans)" = "$1" ]; }
resets() { jfield "$(cli -j stats)" orphan_resets; }
resets_since() { [ $(($(resets) - $1)) -ge "$2" ]; }
# hold_conns NAME N: N connections from b to a, each server holding its socket
# open until $WORK/NAME.release exists; b's ends close once their transfer is
# checked.
hold_conns() {
	local name=$1 n=$2 i pids=()
	if [ "$ROLE" = a ]; then
		for i in $(seq "$n"); do
			inns "$CLOSER" server "$MY_IP" $((port + i)) --rounds 1 --bytes 65536 \
				--hold "$WORK/$name.release" >"$WORK/$name.$i.json" &
			pids+=($!)
		done
		for i in $(seq "$n"); do
			wait_for 90 "server on $((port + i))" pid_listening "${pids[i - 1]}" $((port + i))
		done
		HOLD_PIDS=("${pids[@]}")
		barrier "$name-listening"
	else
		barrier "$name-listening"
		for i in $(seq "$n"); do
			inns "$CLOSER" client "$PEER_IP" $((port + i)) --rounds 1 --bytes 65536 \
				--how close >"$WORK/$name.$i.json" ||
				check "$name.$i: client failed: $(<"$WORK/$name.$i.json")" false
		done
	fi
	port=$((port + n))
}

# release NAME: host a's servers let go.
release() {
	local i out
	local -A O	# (its fields, result's)
	if [ "$ROLE" = a ]; then
		: >"$WORK/$1.release"
		for i in "${!HOLD_PIDS[@]}"; do
			# late's and count's resets fail their round: checked below
			wait "${HOLD_PIDS[i]}" || [ "$1" != timeout ] ||
				check "$1: server failed: $(cat "$WORK/$1.$((i + 1)).json")" false
			result "$WORK/$1.$((i + 1)).json"
			log "$1.$((i + 1)): $out"
			if [ "$1" != timeout ]; then
				# reset at once, as TCP resets beyond tcp_max_orphans:
				# the reader may lose what it had not read yet
				check "$1.$((i + 1)): over NTB" [ "${O[ntb]-missing}" = 1 ]
			else
				check "$1.$((i + 1)): over NTB, nothing lost" \
					[ "${O[ntb]-missing}/${O[lost]-missing}" = 1/0 ]
			fi
		done
	fi
	barrier "$1-released"
}

[ "$ROLE" = a ] && fault_set detach_drop
if [ "$ROLE" = b ]; then
	sctl net.ntbsmc.orphan_timeout_ms=1500 net.ntbsmc.max_orphans=2 ||
		fail "cannot set the orphan sysctls"
	for bad in 99 86400001 -1; do
		check "orphan_timeout_ms=$bad refused" \
			eval '! sctl net.ntbsmc.orphan_timeout_ms=$bad'
	done
	check "max_orphans=1025 refused" \
		eval '! sctl net.ntbsmc.max_orphans=1025'
fi

# timeout: one orphan
r0=$(resets)
hold_conns timeout 1
if [ "$ROLE" = b ]; then
	wait_for 30 "the orphan reset" orphans_are 0
	log "timeout: $(cli -j dev show "$NTB")"
	check "timeout: reset by the timer ($(($(resets) - r0)) orphan_resets)" \
		[ $(($(resets) - r0)) = 1 ]
fi
barrier timeout-checked
release timeout

# late: the server attaches after its client closed
held_is() { [ "$(dev_field held)" = "$1" ]; }
late_gone() { orphans_are 0 && held_is 0 && resets_since "$r0" 1; }
r0=$(resets)
[ "$ROLE" = a ] && fault_set server_attach_delay 1 3000 $((port + 1))
hold_conns late 1
if [ "$ROLE" = b ]; then
	log "late: after the close: $(cli -j dev show "$NTB")"
	wait_for 30 "the late orphan reset by its timer" late_gone
	check "late: reset by the timer ($(($(resets) - r0)) orphan_resets)" \
		[ $(($(resets) - r0)) = 1 ]
fi
barrier late-checked
[ "$ROLE" = a ] && check "late: the server's attach was late" \
	[ "$(<"$FAULTS/server_attach_delay/times")" = 0 ]
[ "$ROLE" = a ] && fault_clear server_attach_delay
release late

# count: four orphans, two allowed
if [ "$ROLE" = b ]; then
	sctl net.ntbsmc.orphan_timeout_ms=600000 || fail "sysctl"
	r0=$(resets)
fi
hold_conns count 4
if [ "$ROLE" = b ]; then
	log "count: clients: $(cat "$WORK"/count.*.json | tr '\n' ' ')"
	log "count: after the closes: $(cli -j dev show "$NTB")"
	# (a close beyond max_orphans resets in close() itself, a late attach
	# when it is seen: the bound is for a loaded machine's servers)
	wait_for 60 "two orphans reset at once" resets_since "$r0" 2
	nap 1
	check "count: $(dev_field orphans) orphans left, $(($(resets) - r0)) reset" \
		[ "$(dev_field orphans)" = 2 -a $(($(resets) - r0)) = 2 ]
	log "count: $(cli -j dev show "$NTB")"
fi
barrier count-checked 300
release count
fault_clear
wait_for $IDLE_WAIT "no buffer, orphan or connection left" ulp_idle
log "idle: $(cli -j dev show "$NTB")"
checked
