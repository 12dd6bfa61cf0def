#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Edge-triggered event loops over NTB: no notification is lost.
#
#   host a                                   host b
#   evloop server (epoll ET, echo) <======== evloop client (epoll ET, pipelined)
#     reads until a short read, like nginx     checks every echoed byte, fails a
#     (no EAGAIN), then epoll_wait()           connection idle 30 s with requests out
#
# late_request: one connection, one request at a time, the server sleeping
# 50 ms after each answer before it waits again: the client's next request
# arrives while the server is not in epoll_wait(). With the re-check off
# (recheck_ms=0) nothing but the notification protocol can wake the server:
# ntbsmc before this test stalled at the third request, every run. Then many
# connections with pipelined requests, small and larger than a chunk. Every
# case checks that its bytes crossed NTB (the hosts' counters), that every
# connection ran over NTB, and that no notification was lost (notify_lost).
# The client's bound on a connection without progress (30 s) is a bound on a
# hang, not a measure of speed: a lost wakeup with the re-check off stalls
# for good, and with it on notify_lost counts it; under load a healthy
# connection here has waited 3 s for its first answer (a loaded two-VM
# boot, 20261202), and the longest gap of a healthy stream seen is 3 s.
# One VM only: a doorbell the peer asked for is dropped (fault notify_drop) on
# every request and answer, and the re-check must deliver each within a bound.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup_faults "$@"

ulp_wait_active
# Every connection must run over NTB (the loop's wakeups are what is tested):
# a bound on a stalled handshake with room for a machine four times slower
# than ours under load, not the default 2 s, whose timeouts (a correct
# fallback) would come and go with the machine's load.
sctl net.ntbsmc.handshake_timeout_ms=20000 || fail "cannot set handshake_timeout_ms"
E=$REPO/selftests/ulp/evloop
port=6900
sget recheck_default net.ntbsmc.recheck_ms 2>/dev/null

# recheck MS: this host's re-check period for connections set up from now on.
# (An ntbsmc from before the re-check has none: it is run as it is.)
recheck() {
	[ -n "$recheck_default" ] || return 0
	sctl net.ntbsmc.recheck_ms="$1" || fail "cannot set recheck_ms=$1"
}

# evloop_case NAME CONNS SERVER_OPTS CLIENT_ARGS...: the server here (a), the
# client (b); both check their counters: the bytes crossed NTB, all CONNS ran
# over NTB, no lost notification unless LOST_OK is set. Sets $out (this host's
# JSON line).
evloop_case() {
	local name=$1 conns=$2 sopts=$3 srv rc bytes
	shift 3
	port=$((port + 1))
	local ntb0 tcp0 tx0 rx0 lost0
	stats
	ntb0=${S[conn_ntb]-missing} tcp0=${S[conn_tcp]-missing} lost0=${S[notify_lost]-missing}
	tx0=${S[tx_bytes]-missing} rx0=${S[rx_bytes]-missing}
	if [ "$ROLE" = a ]; then
		# shellcheck disable=SC2086
		inns "$E" server --ulp $sopts "$MY_IP" $port "$conns" >"$WORK/$name.json" 2>&1 &
		srv=$!
		wait_for 60 "evloop server on $port" pid_listening $srv $port
		barrier "$name-listening"
		wait $srv
		rc=$?
	else
		barrier "$name-listening"
		inns "$E" client --ulp --stall-ms 30000 "$PEER_IP" $port "$conns" "$@" \
			>"$WORK/$name.json" 2>&1
		rc=$?
	fi
	result "$WORK/$name.json"
	log "$name: $out"
	check "$name: evloop exited $rc: $out" [ $rc = 0 ]
	bytes=${O[bytes]-missing}
	[[ $bytes =~ ^[0-9]+$ ]] || bytes=1
	stats
	check "$name: sent over NTB $((${S[tx_bytes]-missing} - tx0)) bytes, want >= $bytes" \
		[ $((${S[tx_bytes]-missing} - tx0)) -ge "$bytes" ]
	check "$name: received over NTB $((${S[rx_bytes]-missing} - rx0)) bytes, want >= $bytes" \
		[ $((${S[rx_bytes]-missing} - rx0)) -ge "$bytes" ]
	check "$name: $((${S[conn_ntb]-missing} - ntb0)) connections over NTB, want $conns" \
		[ $((${S[conn_ntb]-missing} - ntb0)) -ge "$conns" ]
	check "$name: $((${S[conn_tcp]-missing} - tcp0)) connections fell back, want 0" \
		[ "${S[conn_tcp]-missing}" = "$tcp0" ]
	lost=$((${S[notify_lost]-missing} - lost0))
	[ -n "${LOST_OK:-}" ] ||
		check "$name: $lost notifications lost (found by the re-check), want 0" [ $lost = 0 ]
	barrier "$name-done"
}

# The protocol alone: no re-check to hide a lost wakeup.
recheck 0
evloop_case late_request 1 "--delay-ms 50" 30 1 200
recheck "$recheck_default"

evloop_case many_small 32 "" 300 8 300
evloop_case many_large 8 "" 40 4 300000
evloop_case pipelined_late 8 "--delay-ms 20" 60 16 2000

# The re-check's bound: every doorbell that ntbsmc_conn_notify() owes is dropped, in
# both directions; each request and answer then waits for the re-check (one to
# two periods of 100 ms), never for ever: notify_lost says the re-check found
# them, and the longest wait is bounded as a hang is, not timed.
if [ "$TOPO" = onevm ] && have_faults; then
	recheck 100
	[ "$ROLE" = b ] && fault_set notify_drop -1 0 $((port + 1))
	LOST_OK=1 evloop_case notify_drop 1 "" 10 1 200
	gap=${O[max_gap_ms]-missing}
	check "notify_drop: $lost notifications found by the re-check here, want >= 5" [ $lost -ge 5 ]
	[ "$ROLE" = b ] &&
		check "notify_drop: longest wait $gap ms, want < 10000 (a bound on a hang: two 100 ms periods, and a loaded guest's 3 s gaps with room)" \
			[ "${gap:-99999}" -lt 10000 ]
	[ "$ROLE" = b ] && fault_clear notify_drop
	barrier notify_drop-cleared
	recheck "$recheck_default"
fi
checked
