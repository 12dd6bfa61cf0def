#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntbsmc listeners stopped under a connect storm with handshakes running: host b
# keeps 6 connects at a time going to host a's listener, whose handshakes are
# held in the middle (server_attach_delay, after the buffer is allocated; for
# shutdown(SHUT_RD) also server_hello_delay); host a stops the listener with
# shutdown(SHUT_RD), shutdown(SHUT_RDWR) and connect(AF_UNSPEC), four rounds
# each (lstop.c). TCP destroys the accept queue's children then, as on close():
# their handshakes must end first (on e8be0bf the children were destroyed
# under their handshake worker). Each round: the threads blocked in accept()
# return, and the stopped socket, connected again, is plain TCP that offers
# nothing (on e8be0bf its SYN offered ntbsmc with no handshake behind it, and
# the peer reset it).
# burst: max_handshakes 4 on host a; host b opens 32 connections at once whose
# final ACKs are held back (TCP_DEFER_ACCEPT; their HELLOs 400 ms later, fault
# client_hello_delay): a sees 32 SYNs while no handshake runs, then 32 ACKs.
# At most 4 full handshakes run at once (handshakes_peak), the others are
# declined (handshakes_congested) and fall back to TCP; none fails (on e8be0bf
# all 32 ran over NTB at once: the limit was checked per SYN only).
# nomem: every child's context allocation fails (fault clone_nomem): the
# children take theirs from the reserve and still run their handshakes, 8 of 8
# over NTB (on e8be0bf such a child was plain TCP after its SYN-ACK offered
# ntbsmc, and the server's application read the client's HELLO).
# drain: a listener closed with a child's handshake stalled after a late HELLO
# returns within one handshake timeout of the connect (host a alone).
# Then no buffer, orphan or connection is left on either host; the harness
# checks the kernel logs.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup_faults "$@"

need_faults
LSTOP=$REPO/selftests/ulp/lstop
port=7700
echo_port=7701
ulp_wait_active

[ "$ROLE" = b ] && { inns "$LSTOP" echo "$MY_IP" $echo_port & echo_pid=$!; }
for how in rd rdwr unspec; do
	if [ "$ROLE" = a ]; then
		fault_clear
		fault_set server_attach_delay -1 300 $port
		[ $how = rd ] && fault_set server_hello_delay 20 200 $port
		barrier "$how-storm"
		inns "$LSTOP" server "$MY_IP" $port $how 4 "$PEER_IP" $echo_port \
			>"$WORK/lstop-$how.json" ||
			check "$how: lstop failed: $(<"$WORK/lstop-$how.json")" false
		rounds=0
		while read -r line; do
			log "$how: $line"
			rounds=$((rounds + 1))
			check "$how round $rounds: stopped ($(jfield "$line" stop)), accept() woken" \
				[ "$(jfield "$line" stop)" = ok -a "$(jfield "$line" woken_ms)" -ge 0 ]
			check "$how round $rounds: reconnected as $(jfield "$line" mode)/$(jfield "$line" reason), echo $(jfield "$line" echo)" \
				[ "$(jfield "$line" echo)/$(jfield "$line" mode)/$(jfield "$line" reason)" = ok/tcp/disconnected ]
		done <"$WORK/lstop-$how.json"
		check "$how: 4 rounds ($rounds)" [ $rounds = 4 ]
		fault_clear
		barrier "$how-done"
	else
		wait_for 30 "echo server on $echo_port" pid_listening $echo_pid $echo_port
		barrier "$how-storm"
		inns "$LSTOP" storm "$PEER_IP" $port 120 6 >"$WORK/storm-$how.json" &
		storm=$!
		barrier "$how-done" 300
		kill $storm 2>/dev/null
		wait $storm
	fi
done

port=7710
if [ "$ROLE" = a ]; then
	sctl net.ntbsmc.max_handshakes=4 || fail "cannot set max_handshakes"
	inns "$LSTOP" echo "$MY_IP" $port &
	srv=$!
	wait_for 30 "burst server on $port" pid_listening $srv $port
	run "$NTBSMC_CLI" ${NS:+-n "$NS"} stats reset	# handshakes_peak from here
	stats
	ntb0=${S[conn_ntb]-missing} cong0=${S[handshakes_congested]-missing}
	barrier burst-listening
	barrier burst-done 120
	stats
	log "burst: server stats: $STATS"
	check "burst: at most 4 handshakes at once (handshakes_peak ${S[handshakes_peak]-missing})" \
		[ "${S[handshakes_peak]-missing}" -le 4 ]
	# how many ran over NTB depends on how many SYNs came before the first
	# handshakes ended (4 of 32 in one VM; more between two slower VMs)
	log "burst: $((${S[conn_ntb]-missing} - ntb0)) over NTB"
	check "burst: $((${S[handshakes_congested]-missing} - cong0)) declined beyond the limit" \
		[ $((${S[handshakes_congested]-missing} - cong0)) -ge 1 ]
	kill $srv
	sctl net.ntbsmc.max_handshakes=64
else
	fault_set client_hello_delay -1 400 $port
	barrier burst-listening
	inns "$LSTOP" burst "$PEER_IP" $port 32 >"$WORK/burst.json" ||
		check "burst: lstop failed: $(<"$WORK/burst.json")" false
	result "$WORK/burst.json"
	log "burst: $out"
	check "burst: 32 connections, none failed: $out" \
		[ "${O[conns]-missing}/${O[failed]-missing}" = 32/0 ]
	fault_clear
	barrier burst-done
fi

port=7720
if [ "$ROLE" = a ]; then
	fault_set clone_nomem 8 0 $port
	inns "$LSTOP" echo "$MY_IP" $port &
	srv=$!
	wait_for 30 "nomem server on $port" pid_listening $srv $port
	barrier nomem-listening
	barrier nomem-done 120
	check "nomem: the allocation failed for 8 children ($(<$FAULTS/clone_nomem/times) of 8 left)" \
		[ "$(<$FAULTS/clone_nomem/times)" = 0 ]
	fault_clear
	kill $srv
else
	barrier nomem-listening
	inns "$LSTOP" burst "$PEER_IP" $port 8 >"$WORK/nomem.json" ||
		check "nomem: lstop failed: $(<"$WORK/nomem.json")" false
	result "$WORK/nomem.json"
	log "nomem: $out"
	check "nomem: 8 of 8 over NTB: $out" [ "${O[ntb]-missing}" = 8 ]
	barrier nomem-done
fi
# drain: a listener closed while a child's handshake stalls after a late HELLO
# (1.4 s, fault client_hello_delay; the client then leaves the CHALLENGE unread,
# client_answer_delay) waits for that handshake: one handshake timeout (4 s) from
# the connect at most. Before, the server's deadline began again after its
# CHALLENGE: the close returned 1.4 + 4 s after the connect. Host a alone, its
# client in its own namespace.
port=7730
if [ "$ROLE" = a ]; then
	sget hs_ms net.ntbsmc.handshake_timeout_ms
	run sctl net.ntbsmc.handshake_timeout_ms=4000
	fault_set client_hello_delay -1 1400 $port
	fault_set client_answer_delay -1 8000 $port
	inns "$LSTOP" drain "$MY_IP" $port 2500 >"$WORK/drain.json" ||
		check "drain: lstop failed: $(<"$WORK/drain.json")" false
	result "$WORK/drain.json"
	log "drain: $out"
	ms=${O[drained_ms]-missing}
	check "drain: the listener's close returned $ms ms after the connect, bound 4000 + 800" \
		[ "$ms" -ge 2500 -a "$ms" -le 4800 ]
	fault_clear
	run sctl net.ntbsmc.handshake_timeout_ms="$hs_ms"
fi
barrier drain-done 300

[ "$ROLE" = b ] && kill $echo_pid 2>/dev/null
wait_for $IDLE_WAIT "no buffer, orphan or connection left" ulp_idle
log "idle: $(cli -j dev show "$NTB")"
checked
