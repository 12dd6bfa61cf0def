#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Close after write: the client writes and at once closes (or shuts down, exits,
# lingers); the server reads to EOF and must get every byte, in order, then EOF,
# on each copy path. The end of the NTB data is signalled in the ring after the
# last byte: TCP's FIN, which the closing socket sends at once, must not end the
# reader's data early (DMA writes may still be on their way when it arrives).
#
#   host b: closer client --how HOW  ---- NTB (cpu | staged DMA | zero-copy) --->
#   host a: closer server (reads to EOF, checks each byte, counts NTB rounds)
#
# CLOSE_ROUNDS (default 3, make stress 8) rounds a case, CLOSE_ROUNDS_BIG (default a fifth of
# that) a 4 MiB case; every round must have run over NTB, and the client's
# namespace counters must show the bytes went by the path named.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"
source "$REPO/selftests/dma/lib.sh"

cleanup() {
	fault_clear
	dma_cleanup
}

test_phases dma_setup cleanup "$@"

CLOSER=$REPO/selftests/ulp/closer
R=${CLOSE_ROUNDS:-$(tier 3 8)}
RB=${CLOSE_ROUNDS_BIG:-$(((R + 4) / 5))}
ulp_wait_active
port=7100

# close_case NAME PATH ROUNDS BYTES SERVER_OPTS CLIENT_OPTS: ROUNDS connections
# of BYTES each from b to a over PATH (cpu, dma, zc).
close_case() {
	local name=$1 path=$2 rounds=$3 bytes=$4 sopts=$5 copts=$6 my=$MY_IP peer=$PEER_IP
	local before after moved rc closed0 closed cpu0 cpu want
	port=$((port + 1))
	case " $copts " in *" -6 "*) my=$MY_IP6 peer=$PEER_IP6 copts=${copts/-6/} ;; esac
	case $path in
	cpu) dma_paths 0 0 ;;
	dma) dma_paths 4096 0 ;;
	zc) dma_paths 4096 4096 ;;
	esac
	# (one read of the counters before and one after: a process start
	# costs a second of a loaded guest's time)
	stats
	before=${S[${path}_bytes]-missing} cpu0=${S[cpu_bytes]-missing}
	fb_server_of closed0 peer_closed
	if [ "$ROLE" = a ]; then
		# shellcheck disable=SC2086
		inns "$CLOSER" server "$my" $port --rounds "$rounds" --bytes "$bytes" $sopts \
			>"$WORK/$name.json" 2>&1 &
		local srv=$!
		wait_for 90 "server on $port" pid_listening $srv $port
		barrier "$name-listening"
		wait $srv
		rc=$?
	else
		barrier "$name-listening"
		# shellcheck disable=SC2086
		inns "$CLOSER" client "$peer" $port --rounds "$rounds" --bytes "$bytes" $copts \
			>"$WORK/$name.json" 2>&1
		rc=$?
	fi
	[ $rc = 0 ] || check "$name: closer $ROLE exited $rc: $(<"$WORK/$name.json")" false
	result "$WORK/$name.json"
	log "$name: $out"
	check "$name: ${O[lost]-missing} of $rounds rounds lost bytes" [ "${O[lost]-missing}" = 0 ]
	stats
	if [[ $copts == *"--how handshake"* ]]; then
		# the client cannot ask; its server counts the rounds that ended
		# in TCP because the client closed in the handshake
		if [ "$ROLE" = a ]; then
			fb_server_of closed peer_closed
			closed=$((closed - closed0))
			check "$name: $closed of $rounds rounds ended in the handshake (peer_closed), ${O[ntb]-missing} over NTB" \
				[ "$closed" -gt 0 -a $((closed + ${O[ntb]-missing})) = "$rounds" ]
		fi
	else
		check "$name: ${O[ntb]-missing} of $rounds rounds over NTB" [ "${O[ntb]-missing}" = "$rounds" ]
	fi
	if [ "$ROLE" = a ]; then
		check "$name: ${O[ntb_bytes]-missing} bytes over NTB, want $((rounds * bytes))" \
			[ "${O[ntb_bytes]-missing}" = $((rounds * bytes)) ]
	else
		after=${S[${path}_bytes]-missing}
		moved=$((after - before))
		want=$((rounds * bytes))
		if [[ $sopts == *--slow* && $path != cpu ]]; then
			# a slow reader frees the ring in pieces, and a piece
			# below the DMA threshold is copied by the CPU: the
			# bulk by the path named, the rest by the CPU
			cpu=${S[cpu_bytes]-missing}
			cpu=$((cpu - cpu0))
			check "$name: $moved bytes by $path and $cpu by the CPU, want at least $want in all, 3/4 by $path" \
				[ $((moved + cpu)) -ge $want -a $((moved * 4)) -ge $((want * 3)) ]
		else
			check "$name: $moved bytes by $path, want at least $want" \
				[ "$moved" -ge $want ]
		fi
	fi
	barrier "$name-done"
}

K=131072
M4=$((4 * 1048576))
for path in cpu dma zc; do
	close_case "close_$path" $path "$R" $K "" "--how close"
	close_case "close_4m_$path" $path "$RB" $M4 "" "--how close"
	close_case "slow_reader_$path" $path "$RB" $M4 "--slow" "--how close"
	close_case "exit_$path" $path "$R" $K "" "--how exit"
done
close_case shutdown_dma dma "$R" $K "" "--how shutdown"
close_case linger_dma dma "$R" $K "" "--how linger"
# A non-blocking send never waits for the engine with the caller's pages
# (tx.c): at the zero-copy size it is staged, and goes by DMA all the same.
close_case nonblock_zc_size dma "$R" $K "" "--how close --nonblock"
close_case nonblock_v6_dma dma "$R" $K "" "-6 --how close --nonblock"

# The client closes during the handshake, as soon as TCP is established or 50 ms
# later, while the server's answer to its HELLO waits unread (the client's kernel
# reads it 200 ms after the HELLO: client_answer_delay). TCP closes a socket
# with unread data with a reset: the server would read ECONNRESET. It must read
# EOF, as from TCP, in every round; the rounds end in TCP (peer_closed), or over
# NTB if a close came after the handshake after all.
if have_faults; then
	[ "$ROLE" = b ] && fault_set client_answer_delay -1 200
	close_case close_in_handshake cpu "$R" 0 "" "--how handshake"
	[ "$ROLE" = b ] && fault_clear client_answer_delay
fi

# no_orphans: no closed connection of this host holds a buffer any more.
no_orphans() {
	[ "$(jfield "$(cli -j dev show "$NTB")" orphans)" = 0 ]
}

# An orphan lasts until the peer's kernel saw the close, not until the peer's
# application closes too (TCP bounds its orphans too: tcp_fin_timeout). The
# client writes 1 MiB and closes at once; the server reads it to EOF and holds
# its socket open. The client's buffer is free within 5 s all the same: the
# server's kernel answers the close with DETACHED and writes nothing more into
# it. Before, it stayed held until the server's close.
port=$((port + 1))
release=$SYNC/orphan-release
dma_paths 65536 262144
if [ "$ROLE" = a ]; then
	inns "$CLOSER" server "$MY_IP" $port --rounds 1 --bytes 1048576 --hold "$release" \
		>"$WORK/orphan.json" 2>&1 &
	srv=$!
	wait_for 90 "server on $port" pid_listening $srv $port
	barrier orphan-listening
	barrier orphan-freed
	touch "$release"
	wait $srv
	rc=$?
else
	barrier orphan-listening
	inns "$CLOSER" client "$PEER_IP" $port --rounds 1 --bytes 1048576 --how close \
		>"$WORK/orphan.json" 2>&1
	rc=$?
	t0=${EPOCHREALTIME/./}
	wait_for 5 "the closed client's buffer free, its server still open" no_orphans
	log "orphan_bound: buffer free $(((${EPOCHREALTIME/./} - t0) / 1000)) ms after the client's close"
	barrier orphan-freed
fi
result "$WORK/orphan.json"
log "orphan_bound: $out"
[ $rc = 0 ] || check "orphan_bound: closer $ROLE exited $rc: $(<"$WORK/orphan.json")" false
check "orphan_bound: ${O[ntb]-missing} of 1 round over NTB, ${O[lost]-missing} lost" \
	[ "${O[ntb]-missing}/${O[lost]-missing}" = 1/0 ]

barrier close-done
wait_for 10 "every pinned page released" pins_balanced
# every connection closed at both ends: none is left an orphan holding a buffer
wait_for 30 "no orphan connection left on $NTB" no_orphans
checked
