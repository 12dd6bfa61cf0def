#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The NTB link goes under running connections of protocol version 7: each moves
# to its own TCP connection at the byte both ends agree on, and every byte
# arrives once, in order (Documentation/switch.md). The streams are paced, so
# that the port goes in the middle of them; every byte is checked where it lands
# (xfer), and each end reports that it failed over, having moved bytes over NTB
# before and TCP after (its NTB counters are below the stream's size); the
# client's connection shows as failed over in ntbsmc conn show while it runs.
#   oneway   host b's port unbound under b's one-way stream to a
#   both     host a's port unbound under a stream both ways
#   lastwrite  the port goes between b's last write and its close(), the
#            close at once or once moved: a reads every byte, then EOF
#   many     128 connections of an epoll client (echoed, checked requests):
#            100 or more over NTB when the port goes, all move, none fails
#   full     host a's reader stopped, its buffer full, b's writer blocked:
#            b's port unbound; a reads the kept buffer first, SIOCINQ
#            counts it
#   bad_mac  a relay changes host a's SWITCH (switch_bad_mac): the switch
#            fails on both ends, which reset (never a wrong byte), counted
#   replay   a relay replays, in place of host a's SWITCH, one recorded on an
#            earlier connection (switch_replay): refused, both reset, counted
#   v6       host b speaks version 6 (sysctl switch=0): as before version 7,
#            both ends reset on link loss
# After each the port is bound again and connections run over NTB.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"
CLOSER=$REPO/selftests/ulp/closer
EVLOOP=$REPO/selftests/ulp/evloop

test_phases ulp_setup ulp_cleanup_faults "$@"

need_faults
ulp_wait_active
port=7900
BYTES=67108864		# reset_case: 64 MiB at 64 KiB every 10 ms, ~10 s; the link goes after ~2 s

stat_now() { jfield "$(cli -j stats)" "$1"; }

# moved NAME UNBINDER ARGS: one paced stream (client b, server a) whose
# UNBINDER's port goes once it runs over NTB; it goes on for 2 s after host
# b's end moved, then ends (xfer --until); checks both ends' verdicts as
# failed over, intact, with bytes over NTB below the stream's size.
moved() {
	local name=$1 who=$2 args=$3 s0 out t0 ms end=$SYNC/$1.end
	local -A O	# (its fields, result's)
	s0=$(stat_now switch_to_tcp)
	port=$((port + 1))
	if [ "$ROLE" = a ]; then
		inns "$XFER" server "$MY_IP" $port --ulp --pace-ms 10 --until "$end" >"$WORK/$name.json" &
		local srv=$!
		wait_for 90 "server on $port" pid_listening $srv $port
		barrier "$name-listening"
		[ "$who" = a ] && { wait_for 60 "the connection over NTB" ntb_conn_from $port; }
		[ "$who" = a ] && port_unbind
		barrier "$name-unbound"
		wait $srv || check "$name: server failed: $(<"$WORK/$name.json")" false
	else
		barrier "$name-listening"
		# shellcheck disable=SC2086
		inns "$XFER" client "$PEER_IP" $port --ulp --until "$end" --write-size 65536 \
			--pace-ms 10 $args >"$WORK/$name.json" &
		local cli=$!
		wait_for 60 "the connection over NTB" ntb_conn_to $port
		nap 2
		[ "$who" = b ] && port_unbind
		t0=${EPOCHREALTIME/./}
		barrier "$name-unbound"
		# the stream runs on over TCP: the tool sees the move
		wait_for 60 "conn show: failed over, with its time" conn_failed_over dport $port
		nap 2
		touch "$end"
		wait $cli || check "$name: client failed: $(<"$WORK/$name.json")" false
		ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
		log "$name: the stream ended ${ms} ms after the unbind"
	fi
	result "$WORK/$name.json"
	log "$name: $out"
	check "$name: outcome ${O[outcome]-missing}, intact ${O[intact]-missing}" \
		[ "${O[outcome]-missing}/${O[intact]-missing}" = ok/true ]
	check "$name: failed over: mode ${O[mode]-missing} reason ${O[reason]-missing} failed_over ${O[failed_over]-missing}" \
		[ "${O[mode]-missing}/${O[reason]-missing}/${O[failed_over]-missing}" = tcp/link_down/true ]
	if [ "$ROLE" = a ]; then
		check "$name: the server received ${O[ntb_rx_bytes]-missing} of ${O[bytes]-missing} bytes over NTB, some and not all" \
			[ "${O[ntb_rx_bytes]-missing}" -gt 0 -a "${O[ntb_rx_bytes]-missing}" -lt "${O[bytes]-0}" ]
	else
		check "$name: the client sent ${O[ntb_tx_bytes]-missing} of ${O[bytes]-missing} bytes over NTB, some and not all" \
			[ "${O[ntb_tx_bytes]-missing}" -gt 0 -a "${O[ntb_tx_bytes]-missing}" -lt "${O[bytes]-0}" ]
	fi
	check "$name: switch_to_tcp counted ($(($(stat_now switch_to_tcp) - s0)))" \
		[ $(($(stat_now switch_to_tcp) - s0)) -ge 1 ]
	barrier "$name-checked"
	[ "$ROLE" = "$who" ] && port_bind
	barrier "$name-rebound"
	ulp_wait_active
}

# ntb_conn_from PORT: a connection over NTB on our local PORT (host a's server)
ntb_conn_from() {
	[[ $(cli -j conn show mode ntb sport "$1") == *local_port* ]]
}

moved oneway b ""
moved both a "--both"

# full: host a's reader stops, b's stream fills a's buffer and blocks; b's
# port goes. The full buffer's bytes are kept and read first once the reader
# goes on, and SIOCINQ counts them with what TCP holds.
full() {
	local out rmb inq
	local -A O	# (its fields, result's)
	port=$((port + 1))
	if [ "$ROLE" = a ]; then
		rm -f "$WORK/full.go"
		inns "$XFER" server "$MY_IP" $port --ulp --read-after "$WORK/full.go" \
			>"$WORK/full.json" &
		local srv=$!
		wait_for 90 "server on $port" pid_listening $srv $port
		barrier full-listening
		barrier full-unbound
		wait_for 30 "the stopped reader's connection failed over" \
			conn_failed_over sport $port
		barrier full-moved
		nap 1		# TCP carries more of the stream meanwhile
		touch "$WORK/full.go"
		wait $srv || check "full: server failed: $(<"$WORK/full.json")" false
	else
		barrier full-listening
		inns "$XFER" client "$PEER_IP" $port --ulp --bytes 8388608 \
			>"$WORK/full.json" &
		local cli=$!
		wait_for 60 "the connection over NTB" ntb_conn_to $port
		nap 2		# a's buffer fills, the writer blocks
		port_unbind
		barrier full-unbound
		wait_for 30 "the blocked writer's connection failed over" \
			conn_failed_over dport $port
		barrier full-moved
		wait $cli || check "full: client failed: $(<"$WORK/full.json")" false
	fi
	result "$WORK/full.json"
	log "full: $out"
	check "full: outcome ${O[outcome]-missing}, intact ${O[intact]-missing}" \
		[ "${O[outcome]-missing}/${O[intact]-missing}" = ok/true ]
	check "full: failed over: ${O[mode]-missing}/${O[failed_over]-missing}" \
		[ "${O[mode]-missing}/${O[failed_over]-missing}" = tcp/true ]
	if [ "$ROLE" = a ]; then
		rmb=${O[rmb_size]-missing}
		inq=${O[inq_at_read]-missing}
		check "full: the full buffer crossed NTB (${O[ntb_rx_bytes]-missing} >= $rmb bytes)" \
			[ "${O[ntb_rx_bytes]-missing}" -ge "$rmb" ]
		check "full: SIOCINQ $inq counts the kept buffer ($rmb) and TCP's bytes" \
			[ "$inq" -gt "$rmb" ]
	fi
	barrier full-checked
	[ "$ROLE" = b ] && port_bind
	barrier full-rebound
	ulp_wait_active
}
full

# last_write WHEN: host b's client writes 2 MiB in one write(), which returns
# with up to a buffer's worth unread by a's slow reader; then b's port goes,
# and b closes: at once (WHEN now: the close meets the switch under way) or
# once its connection failed over (moved). a must read every byte, then EOF.
last_write() {
	local name=lastwrite-$1 s0 out rc=0
	local -A O	# (its fields, result's)
	s0=$(stat_now switch_to_tcp)
	port=$((port + 1))
	if [ "$ROLE" = a ]; then
		inns "$CLOSER" server "$MY_IP" $port --rounds 1 --bytes 2097152 --slow \
			>"$WORK/$name.json" &
		local srv=$!
		wait_for 90 "server on $port" pid_listening $srv $port
		barrier "$name-listening"
		barrier "$name-closed"
		wait $srv || rc=$?
	else
		barrier "$name-listening"
		rm -f "$WORK/$name.go" "$WORK/$name.go.wrote"
		inns "$CLOSER" client "$PEER_IP" $port --rounds 1 --bytes 2097152 \
			--close-after "$WORK/$name.go" >"$WORK/$name.json" &
		local cli=$!
		wait_for 60 "the client's write" test -e "$WORK/$name.go.wrote"
		port_unbind
		[ "$1" = moved ] && wait_for 30 "the writer's connection failed over" \
			conn_failed_over dport $port
		touch "$WORK/$name.go"
		wait $cli || rc=$?
		barrier "$name-closed"
	fi
	out=$(<"$WORK/$name.json"); jmap O "$out"
	log "$name: $out"
	check "$name: closer $ROLE exited $rc: $out" [ $rc = 0 ]
	check "$name: no round lost: $out" has "$out" '"lost": 0'
	[ "$ROLE" = a ] && check "$name: the reader's connection moved, ${O[ntb_bytes]-missing} bytes over NTB before" \
		[ "${O[moved]-missing}" = 1 -a "${O[ntb_bytes]-missing}" -gt 0 ]
	check "$name: switch_to_tcp counted ($(($(stat_now switch_to_tcp) - s0)))" \
		[ $(($(stat_now switch_to_tcp) - s0)) -ge 1 ]
	barrier "$name-checked"
	[ "$ROLE" = b ] && port_bind
	barrier "$name-rebound"
	ulp_wait_active
}
last_write now
last_write moved

# many: 128 connections of an epoll client, pipelining echoed requests whose
# every byte it checks; once 100 of them run over NTB the requests start, and
# half a second later host b's port goes. All
# move to TCP (counted on both ends, none failed) and finish: no stall of
# more than 30 s (a switch is bounded by switch_timeout_ms, 5 s), no error.
# The handshakes' limits are raised so that 128 at once run over NTB.
ntb_conns_to() {
	local n
	n=$(cli -j conn show mode ntb dport "$1" | grep -o local_port | wc -l)
	[ "$n" -ge "$2" ]
}
many() {
	local conns=128 s0 f0 out rc=0 hs_max hs_ms
	local -A O	# (its fields, result's)
	sget hs_max net.ntbsmc.max_handshakes
	sget hs_ms net.ntbsmc.handshake_timeout_ms
	sctl net.ntbsmc.max_handshakes=256 net.ntbsmc.handshake_timeout_ms=20000
	s0=$(stat_now switch_to_tcp) f0=$(stat_now switch_failed)
	port=$((port + 1))
	if [ "$ROLE" = a ]; then
		inns "$EVLOOP" server --ulp "$MY_IP" $port $conns >"$WORK/many.json" 2>&1 &
		local srv=$!
		wait_for 60 "evloop server on $port" pid_listening $srv $port
		barrier many-listening
		wait $srv || rc=$?
	else
		barrier many-listening
		rm -f "$WORK/many.go"
		inns "$EVLOOP" client --ulp --stall-ms 30000 --go "$WORK/many.go" "$PEER_IP" $port \
			$conns 100 2 1000 >"$WORK/many.json" 2>&1 &
		local cli=$!
		wait_for 120 "100 connections over NTB" ntb_conns_to $port 100
		touch "$WORK/many.go"
		nap 0.5
		port_unbind
		wait $cli || rc=$?
	fi
	barrier many-done
	result "$WORK/many.json"
	log "many: $out"
	check "many: evloop $ROLE exited $rc: $out" [ $rc = 0 ]
	check "many: $(($(stat_now switch_to_tcp) - s0)) connections moved to TCP, want >= 100" \
		[ $(($(stat_now switch_to_tcp) - s0)) -ge 100 ]
	check "many: $(($(stat_now switch_failed) - f0)) switches failed, want 0" \
		[ "$(stat_now switch_failed)" = "$f0" ]
	sctl net.ntbsmc.max_handshakes="$hs_max" \
		net.ntbsmc.handshake_timeout_ms="$hs_ms"
	[ "$ROLE" = b ] && port_bind
	barrier many-rebound
	ulp_wait_active
}
many

# reset NAME SETUP: one paced stream whose host b port goes; both ends reset
# (allowed), no byte wrong, with the switch counted as failed (or not tried)
reset_case() {
	local name=$1 out
	local -A O	# (its fields, result's)
	port=$((port + 1))
	if [ "$ROLE" = a ]; then
		inns "$XFER" server "$MY_IP" $port --ulp --allow-reset >"$WORK/$name.json" &
		local srv=$!
		wait_for 90 "server on $port" pid_listening $srv $port
		barrier "$name-listening"
		barrier "$name-unbound"
		wait $srv || check "$name: server failed: $(<"$WORK/$name.json")" false
	else
		barrier "$name-listening"
		inns "$XFER" client "$PEER_IP" $port --ulp --allow-reset --bytes $BYTES \
			--write-size 65536 --pace-ms 10 >"$WORK/$name.json" &
		local cli=$!
		wait_for 60 "the connection over NTB" ntb_conn_to $port
		nap 2
		port_unbind
		barrier "$name-unbound"
		wait $cli || check "$name: client failed: $(<"$WORK/$name.json")" false
	fi
	result "$WORK/$name.json"
	log "$name: $out"
	check "$name: outcome ${O[outcome]-missing}, want a reset" \
		[ "${O[outcome]-missing}" = reset ]
	check "$name: a reader read EOF before its error (a truncation): $out" lacks "$out" early_eof
	barrier "$name-checked"
	[ "$ROLE" = b ] && port_bind
	barrier "$name-rebound"
	ulp_wait_active
}

# bad_mac: host a's server's SWITCH (the point matches its local port only,
# so in one kernel host b's client is not hit)
f0=$(stat_now switch_failed)
[ "$ROLE" = a ] && fault_set switch_bad_mac 1 0 $((port + 1))
reset_case bad_mac
[ "$ROLE" = a ] && check "bad_mac: the point fired" \
	[ "$(<"$FAULTS/switch_bad_mac/times")" = 0 ]
[ "$ROLE" = a ] && fault_clear switch_bad_mac
# (host b's end refused the SWITCH; host a's, which checked b's, moved and
# then read b's TCP reset)
[ "$ROLE" = b ] && check "bad_mac: switch_failed counted ($(($(stat_now switch_failed) - f0)))" \
	[ $(($(stat_now switch_failed) - f0)) -ge 1 ]

# replay: a relay puts in place of host a's SWITCH one it recorded on an
# earlier connection (switch_replay: the last SWITCH this kernel sent, valid
# under that connection's key): host b refuses it and both reset, counted
f0=$(stat_now switch_failed)
[ "$ROLE" = a ] && fault_set switch_replay 1 0 $((port + 1))
reset_case replay
[ "$ROLE" = a ] && check "replay: the point fired" \
	[ "$(<"$FAULTS/switch_replay/times")" = 0 ]
[ "$ROLE" = a ] && fault_clear switch_replay
[ "$ROLE" = b ] && check "replay: switch_failed counted ($(($(stat_now switch_failed) - f0)))" \
	[ $(($(stat_now switch_failed) - f0)) -ge 1 ]

[ "$ROLE" = b ] && sctl net.ntbsmc.switch=0
barrier v6-set
reset_case v6
sctl net.ntbsmc.switch=1

wait_for $IDLE_WAIT "no buffer, orphan or connection left" ulp_idle
checked
