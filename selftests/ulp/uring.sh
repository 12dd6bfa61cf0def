#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntbsmc's data path driven by io_uring (ulp/uring): requests that io_uring
# arms on the socket's poll (a RECV that found nothing, or one with
# IORING_RECVSEND_POLL_FIRST; likewise SENDs) are completed by ntbsmc's
# wakeups, cancel cleanly, and leak nothing when they outlive their fd or
# their process:
#
#   host a (server) --- TCP + NTB link --- host b (client)
#
#   stream          256 MiB from b to a in linked chains of 8 SENDs of 64 KiB,
#                   received one RECV at a time, every byte checked where it
#                   lands; a's verdict checked by b
#   pingpong        10,000 requests of 1..300 bytes, 16 in flight, each answered
#                   with data derived from it, a RECV armed while each SEND
#                   runs; every message checked, in order
#   cancel          a RECV armed with nothing coming, cancelled after 200 ms
#                   (IORING_OP_ASYNC_CANCEL): it ends -ECANCELED, the cancel 0,
#                   and the connection then carries a message and its answer
#   closed_fd       a RECV armed, then its fd closed: b's message still lands
#                   in its buffer (io_uring holds the file), intact; the ring's
#                   teardown closes the connection, b reads EOF
#   closed_fd_exit  the same with nothing sent: the ring's teardown cancels
#                   the RECV and closes the connection, b reads EOF
#   accept_exit     a process exits with an ACCEPT armed on its listener: the
#                   listener goes (ntbsmc conn show -a, ss), b's connect is
#                   refused
#
# Each case with data runs over NTB at both ends (mode), and every byte each
# end sent and received crossed NTB (its counters). After closed_fd,
# closed_fd_exit and accept_exit neither host has a socket of ntbsmc on the
# port; at the end no buffer, orphan or connection is left on either host.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup "$@"

URING=$REPO/selftests/ulp/uring
"$URING" probe || skip "no io_uring in this kernel (CONFIG_IO_URING, kernel.io_uring_disabled)"
ulp_wait_active
port=6600
STREAM_BYTES=$((256 << 20))
PAIRS=10000

# uring_one NAME CASE SERVER_OPTS CLIENT_OPTS: one case on the next $port, host
# a serving, host b connecting; this host's JSON line is left in $out.
uring_one() {
	local name=$1 case=$2 sopts=$3 copts=$4
	port=$((port + 1))
	if [ "$ROLE" = a ]; then
		# shellcheck disable=SC2086
		inns "$URING" server "$MY_IP" $port "$case" $sopts >"$WORK/$name.json" &
		local srv=$!
		wait_for 90 "server on $port" pid_listening $srv $port
		barrier "$name-listening"
		wait $srv || check "$name: server failed: $(<"$WORK/$name.json")" false
	else
		barrier "$name-listening"
		# shellcheck disable=SC2086
		inns "$URING" client "$PEER_IP" $port "$case" $copts >"$WORK/$name.json" ||
			check "$name: client failed: $(<"$WORK/$name.json")" false
	fi
	result "$WORK/$name.json"
	log "$name: $out"
	barrier "$name-done"
}

# uring_ok NAME: this host's end of the case ended well, every byte it checked right.
uring_ok() {
	check "$1: outcome ${O[outcome]-missing} (error ${O[error]-missing} during ${O[during]-missing}), want ok" \
		[ "${O[outcome]-missing}" = ok ]
	check "$1: bytes not intact" [ "${O[intact]-missing}" = true ]
}

# uring_ntb NAME: this host's end ran over NTB, and all it sent and received
# (until its mode and counters were read) crossed NTB.
uring_ntb() {
	local tx rx ntx nrx
	tx=${O[app_tx_bytes]-missing} rx=${O[app_rx_bytes]-missing}
	ntx=${O[ntb_tx_bytes]-missing} nrx=${O[ntb_rx_bytes]-missing}
	check "$1: mode ${O[mode]-missing} (reason ${O[reason]-missing}), want ntb" \
		[ "${O[mode]-missing}" = ntb ]
	check "$1: only $ntx of the $tx bytes sent crossed NTB" [ "$ntx" -ge "$tx" ]
	check "$1: only $nrx of the $rx bytes received crossed NTB" [ "$nrx" -ge "$rx" ]
}

# no_sock_on PORT: this host has no socket of ntbsmc (listener or connection,
# in any state) with PORT at either end.
no_sock_on() {
	[[ $(cli -j conn show -a port "$1") != *local_port* ]]
}

# ---- data ----
uring_one stream stream "" "--bytes $STREAM_BYTES"
uring_ok stream
uring_ntb stream
if [ "$ROLE" = a ]; then
	check "stream: received ${O[received]-missing}, want $STREAM_BYTES" \
		[ "${O[received]-missing}" = $STREAM_BYTES ]
	check "stream: only ${O[ntb_rx_bytes]-missing} of $STREAM_BYTES bytes came over NTB" \
		[ "${O[ntb_rx_bytes]-missing}" -ge $STREAM_BYTES ]
else
	check "stream: only ${O[ntb_tx_bytes]-missing} of $STREAM_BYTES bytes went over NTB" \
		[ "${O[ntb_tx_bytes]-missing}" -ge $STREAM_BYTES ]
fi

uring_one pingpong pingpong "" "--pairs $PAIRS --inflight 16"
uring_ok pingpong
uring_ntb pingpong
check "pingpong: ${O[pairs]-missing} pairs, want $PAIRS" [ "${O[pairs]-missing}" = $PAIRS ]

# ---- cancel ----
uring_one cancel cancel "" ""
uring_ok cancel
uring_ntb cancel
if [ "$ROLE" = a ]; then
	check "cancel: the RECV ended ${O[cancel_res_name]-missing}, want ECANCELED" \
		[ "${O[cancel_res_name]-missing}" = ECANCELED ]
	check "cancel: ASYNC_CANCEL returned ${O[cancel_op_res]-missing}, want 0 (found, cancelled)" \
		[ "${O[cancel_op_res]-missing}" = 0 ]
fi

# ---- a RECV that outlives its fd ----
# closed_fd_case NAME SERVER_OPTS CLIENT_OPTS SERVER_OUTCOME: host a arms a RECV
# and closes its fd, host b sends (or not) once told; afterwards neither host
# has a socket on the port.
closed_fd_case() {
	local name=$1 want=$4 res closes=(eof)
	uring_one "$name" closed_fd "--ready $SYNC/$name.ready $2" "--after $SYNC/$name.ready $3"
	uring_ok "$name"
	uring_ntb "$name"
	if [ "$ROLE" = a ]; then
		check "$name: the armed RECV ended as ${O[closed_fd]-missing}, want $want" \
			[ "${O[closed_fd]-missing}" = "$want" ]
		put "$name-res" "${O[closed_fd_res]-missing}"
	else
		# all of the message read: a clean close; part of it: a reset is TCP's answer
		res=$(get "$name-res")
		[ "$res" = 1000 ] || closes+=(reset)
		check "$name: the server's close read as ${O[peer_close]-missing} (its RECV: $res)" \
			one_of "${O[peer_close]-missing}" "${closes[@]}"
	fi
	wait_for 60 "no socket of ntbsmc on port $port" no_sock_on $port
	barrier "$name-idle"
}

closed_fd_case closed_fd "" "" data
closed_fd_case closed_fd_exit "--wait-ms 2000" "--no-send" cancelled_at_exit

# ---- an ACCEPT that outlives its process ----
port=$((port + 1))
if [ "$ROLE" = a ]; then
	inns "$URING" server "$MY_IP" $port accept_exit >"$WORK/accept_exit.json" ||
		check "accept_exit: server failed: $(<"$WORK/accept_exit.json")" false
	result "$WORK/accept_exit.json"
	log "accept_exit: $out"
	uring_ok accept_exit
	check "accept_exit: the child's ACCEPT was not armed" [ "${O[armed]-missing}" = true ]
	wait_for 60 "no socket of ntbsmc on port $port" no_sock_on $port
	lsn=$(inns ss -Hltn "sport = :$port")
	check "accept_exit: ss shows a listener on $port: $lsn" [ -z "$lsn" ]
	barrier accept_exit-gone
else
	barrier accept_exit-gone
	inns "$URING" client "$PEER_IP" $port accept_exit >"$WORK/accept_exit.json" ||
		check "accept_exit: client failed: $(<"$WORK/accept_exit.json")" false
	result "$WORK/accept_exit.json"
	log "accept_exit: $out"
	check "accept_exit: refused ${O[refused]-missing} (${O[connect]-missing}), want true" \
		[ "${O[refused]-missing}" = true ]
	wait_for 60 "no socket of ntbsmc on port $port" no_sock_on $port
fi
barrier accept_exit-done

wait_for "$IDLE_WAIT" "no buffer, orphan or connection left" ulp_idle
barrier all-done
checked
