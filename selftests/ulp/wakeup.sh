#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A want that crosses a cursor on the link costs a doorbell, never a wakeup.
#
#   host a: wakeup writer  <========  host b: wakeup reader (source port SRC)
#
# Nothing is read across the link (protocol version 5), so a reader's WANT_DATA
# and the writer's cursor may pass each other: on hardware a posted write takes
# a while to land, on the emulated fabric it lands at once. Fault want_late
# makes the reader's want land delay_ms after the reader looked and fell asleep,
# and the writer writes into that gap, finds no want and does not ring. The
# want's own event makes the writer compare the cursor the reader had seen with
# its own, and ring (conn.c, "Notifications").
#
# answered: the re-check off (recheck_ms=0), so that nothing else can wake the
# reader: every round must end, its bytes checked, with no lost notification,
# and want_late must have fired in every round. unanswered: the same with the
# writer's answers dropped (fault answer_drop), the re-check at 100 ms: the
# reader is woken by the re-check alone, counted as lost notifications - the
# case above would hang without the answer, this one shows the race was real.
#
# lostbell: one doorbell lost while another thread of the waiter's socket keeps
# looking (ulp/lostbell's header has the scenarios): a writer blocked for space
# while its socket is polled for POLLIN, read with MSG_DONTWAIT, or polled once;
# a reader blocked for data while its socket sends a byte every 2 ms; each also
# alone. The server drops the one doorbell (fault notify_drop, once); the waiter
# must still wake, from the re-check (recheck_ms 200: within two periods, 400 ms;
# a round fails if it woke later than 8 s, twenty times that; the sockets time
# out after 20 s, where a writer never woken wakes anyway),
# and the re-check counts what it found as lost notifications on its side (at
# least one a case).
# A look by one thread wakes no other, so it must not hide what the re-check
# owes the sleeper (conn.c, conn_recheck()).
# One VM: the two programs pace each other through a FIFO.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup_faults "$@"

need_faults
ulp_wait_active
W=$REPO/selftests/ulp/wakeup
FIFO=/tmp/ntbsmc-wakeup.fifo
sget recheck_default net.ntbsmc.recheck_ms
ROUNDS=$(tier 6 12)
port=6960

# wakeup_case NAME RECHECK_MS: ROUNDS rounds on a fresh connection; sets $lost
# (the reader's notifications found by the re-check) on host b.
wakeup_case() {
	local name=$1 src srv rc out lost0 tx0 rx0
	local -A O	# (its fields, result's)
	port=$((port + 1))
	src=$((port + 100))
	sctl net.ntbsmc.recheck_ms="$2" || fail "cannot set recheck_ms=$2"
	stats
	lost0=${S[notify_lost]-missing} tx0=${S[tx_bytes]-missing} rx0=${S[rx_bytes]-missing}
	if [ "$ROLE" = a ]; then
		rm -f $FIFO
		mkfifo $FIFO || fail "mkfifo"
		fault_set want_late "$ROUNDS" 200 "$src"
		[ "$name" = unanswered ] && fault_set answer_drop -1 0 "$port"
		inns "$W" writer "$MY_IP" $port $ROUNDS $FIFO >"$WORK/$name.json" 2>&1 &
		srv=$!
		wait_for 60 "wakeup writer on $port" pid_listening $srv $port
		barrier "$name-listening"
		wait $srv
		rc=$?
	else
		barrier "$name-listening"
		inns "$W" reader "$PEER_IP" $port $ROUNDS $FIFO $src >"$WORK/$name.json" 2>&1
		rc=$?
	fi
	result "$WORK/$name.json"
	log "$name: $out"
	check "$name: wakeup $ROLE exited $rc: $out" [ $rc = 0 ]
	barrier "$name-done"
	stats
	lost=$((${S[notify_lost]-missing} - lost0))
	if [ "$ROLE" = a ]; then
		# (unanswered, the re-check may end a round before its want landed,
		# and the next round's want is then on time)
		[ "$name" = answered ] &&
			check "$name: want_late fired in all $ROUNDS rounds (times left $(<$FAULTS/want_late/times))" \
				[ "$(<$FAULTS/want_late/times)" = 0 ]
		check "$name: sent $((${S[tx_bytes]-missing} - tx0)) bytes over NTB, want $((3 * ROUNDS))" \
			[ $((${S[tx_bytes]-missing} - tx0)) -ge $((3 * ROUNDS)) ]
		fault_clear want_late answer_drop
	else
		check "$name: received $((${S[rx_bytes]-missing} - rx0)) bytes over NTB, want $((3 * ROUNDS))" \
			[ $((${S[rx_bytes]-missing} - rx0)) -ge $((3 * ROUNDS)) ]
	fi
	sctl net.ntbsmc.recheck_ms="$recheck_default"
	barrier "$name-cleared"
}

wakeup_case answered 0
[ "$ROLE" = b ] && check "answered: $lost notifications lost, want 0" [ $lost = 0 ]

wakeup_case unanswered 100
[ "$ROLE" = b ] &&
	check "unanswered: $lost notifications found by the re-check, want >= $((ROUNDS / 2)) (the race was hit)" \
		[ $lost -ge $((ROUNDS / 2)) ]

LB=$REPO/selftests/ulp/lostbell
LB_ROUNDS=$(tier 3 4)
LB_FIRED=/tmp/ntbsmc-lostbell.fired
sget rmb_default net.ntbsmc.rmb_kb

# lostbell_case MODE: LB_ROUNDS rounds, a connection each, with the server's
# buffer at 64 KiB (host a) and the re-check at 200 ms.
lostbell_case() {
	local mode=$1 srv rc out lost fired lost0
	local -A O	# (its fields, result's)
	port=$((port + 1))
	sctl net.ntbsmc.recheck_ms=200 || fail "cannot set recheck_ms=200"
	stats
	lost0=${S[notify_lost]-missing}
	if [ "$ROLE" = a ]; then
		rm -f $FIFO $FIFO.back $LB_FIRED
		mkfifo $FIFO && mkfifo $FIFO.back || fail "mkfifo"
		sctl net.ntbsmc.rmb_kb=64 || fail "cannot set rmb_kb=64"
		# (ip netns exec mounts a sysfs of its own, without debugfs: the
		# fault points through init's root)
		inns "$LB" server "$MY_IP" $port $LB_ROUNDS $FIFO "/proc/1/root$FAULTS" \
			>"$WORK/lb-$mode.out" 2>&1 &
		srv=$!
		wait_for 60 "lostbell server on $port" pid_listening $srv $port
		barrier "lb-$mode-listening"
		wait $srv
		rc=$?
		fired=$(grep -c "fired 1" "$WORK/lb-$mode.out")
		echo "$fired" >$LB_FIRED
		result "$WORK/lb-$mode.out"
		check "lostbell $mode: server exited $rc: $out" [ $rc = 0 ]
		check "lostbell $mode: the doorbell was dropped in $fired of $LB_ROUNDS rounds, want >= 1" \
			[ "$fired" -ge 1 ]
		sctl net.ntbsmc.rmb_kb="$rmb_default"
		barrier "lb-$mode-done"
	else
		barrier "lb-$mode-listening"
		inns "$LB" client "$PEER_IP" $port $LB_ROUNDS $FIFO "$mode" >"$WORK/lb-$mode.out" 2>&1
		rc=$?
		result "$WORK/lb-$mode.out"
		log "lostbell $mode: $out"
		check "lostbell $mode: the waiter woke in every round (client exited $rc: $out)" [ $rc = 0 ]
		barrier "lb-$mode-done"
		fired=$(cat $LB_FIRED 2>/dev/null || echo 0)
		stats
		lost=$((${S[notify_lost]-missing} - lost0))
		# (at least one: a round's waiter may also be woken by an event of
		# the peer's that announces the same space or data by state)
		check "lostbell $mode: $lost lost notifications found for $fired dropped doorbells, want >= 1" \
			[ "$lost" -ge 1 ]
	fi
	sctl net.ntbsmc.recheck_ms="$recheck_default"
	barrier "lb-$mode-cleared"
}

for m in space-alone space-poll space-recv space-once data-alone data-send; do
	lostbell_case $m
done
checked
