#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The NTB link goes under running connections of protocol version 7: each moves
# to its own TCP connection at the byte both ends agree on, and every byte
# arrives once, in order (Documentation/switch.md). The streams are paced, so
# that the port goes in the middle of them; every byte is checked where it lands
# (xfer), and each end reports that it failed over, having moved bytes over NTB
# before and TCP after (its NTB counters are below the stream's size).
#   oneway   host b's port unbound under b's one-way stream to a
#   both     host a's port unbound under a stream both ways
#   bad_mac  a relay changes host a's SWITCH (switch_bad_mac): the switch
#            fails on both ends, which reset (never a wrong byte), counted
#   v6       host b speaks version 6 (sysctl switch=0): as before version 7,
#            both ends reset on link loss
# After each the port is bound again and connections run over NTB.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup_faults "$@"

need_faults
ulp_wait_active
port=7900
BYTES=67108864		# 64 MiB at 64 KiB every 10 ms: ~10 s, the link goes after ~2 s

stat_now() { jfield "$(cli -j stats)" "$1"; }

# moved NAME UNBINDER ARGS: one paced stream (client b, server a) whose
# UNBINDER's port goes once it runs over NTB; checks both ends' verdicts as
# failed over, intact, with bytes over NTB below the stream's size.
moved() {
	local name=$1 who=$2 args=$3 s0 out t0 ms
	s0=$(stat_now switch_to_tcp)
	port=$((port + 1))
	if [ "$ROLE" = a ]; then
		inns "$XFER" server "$MY_IP" $port --ulp >"$WORK/$name.json" &
		local srv=$!
		wait_for 90 "server on $port" pid_listening $srv $port
		barrier "$name-listening"
		[ "$who" = a ] && { wait_for 60 "the connection over NTB" ntb_conn_from $port; }
		[ "$who" = a ] && port_unbind
		barrier "$name-unbound"
		wait $srv || check "$name: server failed: $(cat "$WORK/$name.json")" false
	else
		barrier "$name-listening"
		# shellcheck disable=SC2086
		inns "$XFER" client "$PEER_IP" $port --ulp --bytes $BYTES --write-size 65536 \
			--pace-ms 10 $args >"$WORK/$name.json" &
		local cli=$!
		wait_for 60 "the connection over NTB" ntb_conn_to $port
		nap 2
		[ "$who" = b ] && port_unbind
		t0=$(now_us)
		barrier "$name-unbound"
		wait $cli || check "$name: client failed: $(cat "$WORK/$name.json")" false
		ms=$((($(now_us) - t0) / 1000))
		log "$name: the stream ended ${ms} ms after the unbind"
	fi
	out=$(tail -1 "$WORK/$name.json")
	log "$name: $out"
	check "$name: outcome $(jfield "$out" outcome), intact $(jfield "$out" intact)" \
		[ "$(jfield "$out" outcome)/$(jfield "$out" intact)" = ok/true ]
	check "$name: failed over: mode $(jfield "$out" mode) reason $(jfield "$out" reason) failed_over $(jfield "$out" failed_over)" \
		[ "$(jfield "$out" mode)/$(jfield "$out" reason)/$(jfield "$out" failed_over)" = tcp/link_down/true ]
	if [ "$ROLE" = a ]; then
		check "$name: the server received $(jfield "$out" ntb_rx_bytes) bytes over NTB, some and not all" \
			[ "$(jfield "$out" ntb_rx_bytes)" -gt 0 -a "$(jfield "$out" ntb_rx_bytes)" -lt $BYTES ]
	else
		check "$name: the client sent $(jfield "$out" ntb_tx_bytes) bytes over NTB, some and not all" \
			[ "$(jfield "$out" ntb_tx_bytes)" -gt 0 -a "$(jfield "$out" ntb_tx_bytes)" -lt $BYTES ]
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

# reset NAME SETUP: one paced stream whose host b port goes; both ends reset
# (allowed), no byte wrong, with the switch counted as failed (or not tried)
reset_case() {
	local name=$1 out
	port=$((port + 1))
	if [ "$ROLE" = a ]; then
		inns "$XFER" server "$MY_IP" $port --ulp --allow-reset >"$WORK/$name.json" &
		local srv=$!
		wait_for 90 "server on $port" pid_listening $srv $port
		barrier "$name-listening"
		barrier "$name-unbound"
		wait $srv || check "$name: server failed: $(cat "$WORK/$name.json")" false
	else
		barrier "$name-listening"
		inns "$XFER" client "$PEER_IP" $port --ulp --allow-reset --bytes $BYTES \
			--write-size 65536 --pace-ms 10 >"$WORK/$name.json" &
		local cli=$!
		wait_for 60 "the connection over NTB" ntb_conn_to $port
		nap 2
		port_unbind
		barrier "$name-unbound"
		wait $cli || check "$name: client failed: $(cat "$WORK/$name.json")" false
	fi
	out=$(tail -1 "$WORK/$name.json")
	log "$name: $out"
	check "$name: outcome $(jfield "$out" outcome), want a reset" \
		[ "$(jfield "$out" outcome)" = reset ]
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
	[ "$(cat "$FAULTS/switch_bad_mac/times")" = 0 ]
[ "$ROLE" = a ] && fault_clear switch_bad_mac
# (host b's end refused the SWITCH; host a's, which checked b's, moved and
# then read b's TCP reset)
[ "$ROLE" = b ] && check "bad_mac: switch_failed counted ($(($(stat_now switch_failed) - f0)))" \
	[ $(($(stat_now switch_failed) - f0)) -ge 1 ]

[ "$ROLE" = b ] && inns sysctl -qw net.ntbsmc.switch=0
barrier v6-set
reset_case v6
inns sysctl -qw net.ntbsmc.switch=1

wait_for $IDLE_WAIT "no buffer, orphan or connection left" ulp_idle
checked
