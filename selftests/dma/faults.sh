#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The DMA path when things go wrong; every transfer must still arrive intact:
#   - the engine fails a descriptor mid-stream (soft_dma fail_nth), staged and
#     zero-copy: the CPU writes that range again
#   - the engine stops completing (latency beyond ntbsmc's dma_timeout_ms): the
#     channel is dropped, the CPU takes over
#   - the sender's buffer is unmapped by another thread during a zero-copy send:
#     the peer gets exactly the bytes send() reported, intact
#   - another thread forks during a zero-copy send and the child writes over its
#     copy of the buffer: the peer gets the parent's bytes
#   - the sending process is killed during a zero-copy send: no pinned page is
#     left behind, the next connection runs
#   - the engine's device is unbound mid-stream: the connection finishes on CPU
#     copies; once the link groups are idle the engine's module unloads
# Host b sends, host a receives.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"
source "$REPO/selftests/dma/lib.sh"

cleanup() {
	echo 0 >$SOFT_DMA/fail_nth 2>/dev/null
	echo 0 >$SOFT_DMA/latency_us 2>/dev/null
	echo 2000 >$NTBSMC_PARAMS/dma_timeout_ms 2>/dev/null
	dma_cleanup
}

test_phases dma_setup cleanup "$@"

ulp_wait_active
port=6950
MB=1048576
sctl net.ntbsmc.lgr_idle_ms=1000 || fail "cannot set lgr_idle_ms"

# conn_field PORT KEY: KEY of this host's NTB connection to PORT.
conn_field() {
	jfield "$(cli -j conn show mode ntb dport "$1")" "$2"
}
# conn_moved PORT KEY: that connection moved some bytes by KIND.
conn_moved() {
	local v
	v=$(conn_field "$1" "$2")
	[ "$v" != missing ] && [ "$v" != null ] && [ "$v" -gt 0 ]
}

# failed_case NAME ZEROCOPY_THRESHOLD: the third descriptor fails (a full 64 KiB
# segment, or part of one).
failed_case() {
	local before
	dma_paths 4096 "$2"
	before=$(ntb_stat dma_failed)
	[ "$ROLE" = b ] && echo 3 >$SOFT_DMA/fail_nth
	paths_case "$1" "--bytes $((4 * MB)) --write-size 65536"
	if [ "$ROLE" = b ]; then
		check "$1: the engine failed a descriptor (fail_nth $(<$SOFT_DMA/fail_nth))" \
			[ "$(<$SOFT_DMA/fail_nth)" = 0 ]
		check "$1: DMA writes redone by the CPU: $(($(ntb_stat dma_failed) - before))" \
			[ $(($(ntb_stat dma_failed) - before)) -ge 1 ]
		check "$1: CPU bytes $(sent_by cpu), DMA bytes $(sent_by dma)" \
			[ "$(sent_by cpu)" -ge 32768 -a "$(sent_by dma)" -gt 0 ]
	fi
}
failed_case failed_staged 0
failed_case failed_zerocopy 4096

# The timeout takes 10-60000 ms: no instant kill of every channel, no sender held
# in an uninterruptible wait without a bound. Out of range: refused, value kept.
if [ "$ROLE" = b ]; then
	for bad in 0 9 60001 4294967296 -1 abc; do
		check "dma_timeout_ms=$bad refused" \
			sh -c "! echo $bad 2>/dev/null >$NTBSMC_PARAMS/dma_timeout_ms"
	done
	check "dma_timeout_ms kept: $(<$NTBSMC_PARAMS/dma_timeout_ms)" \
		[ "$(<$NTBSMC_PARAMS/dma_timeout_ms)" = 2000 ]
	check "dma_timeout_ms=10 taken" sh -c "echo 10 >$NTBSMC_PARAMS/dma_timeout_ms"
	echo 2000 >$NTBSMC_PARAMS/dma_timeout_ms
fi

# An engine that stops completing.
dma_paths 4096 0
before=$(ntb_stat dma_failed)
if [ "$ROLE" = b ]; then
	echo 300 >$NTBSMC_PARAMS/dma_timeout_ms
	echo 3000000 >$SOFT_DMA/latency_us
fi
paths_case timeout "--bytes $((2 * MB)) --write-size 65536"
if [ "$ROLE" = b ]; then
	echo 0 >$SOFT_DMA/latency_us
	echo 2000 >$NTBSMC_PARAMS/dma_timeout_ms
	check "timeout: DMA writes redone by the CPU: $(($(ntb_stat dma_failed) - before))" \
		[ $(($(ntb_stat dma_failed) - before)) -ge 1 ]
	check "timeout: channel dropped (dev shows $(dma_chan))" [ "$(dma_chan)" = null ]
fi
barrier timeout-done

# munmap of the buffer by another thread during a zero-copy send.
dma_paths 4096 4096
port=$((port + 1))
bytes=$((96 * MB))
if [ "$ROLE" = a ]; then
	inns "$XFER" server "$MY_IP" $port --ulp >"$WORK/munmap.json" &
	srv=$!
	wait_for 90 "server on $port" pid_listening $srv $port
	barrier munmap-listening
	wait $srv	# it did not get everything: that is the point
	log "munmap, server: $(tail -1 "$WORK/munmap.json")"
else
	barrier munmap-listening
	inns "$XFER" client "$PEER_IP" $port --ulp --bytes $bytes --munmap-ms 150 \
		>"$WORK/munmap.json"
	result "$WORK/munmap.json"
	log "munmap, client: $out"
	sent=${O[sent]-missing} got=${O[peer_received]-missing}
	check "munmap: send() reported $sent bytes, the peer received $got" \
		[ "$sent" = "$got" -a "${O[mode]-missing}" = ntb ]
	check "munmap: no wrong byte (peer_first_bad ${O[peer_first_bad]-missing})" \
		[ "${O[peer_first_bad]-missing}" = missing ]
	check "munmap: the mapping went away during the send ($sent of $bytes)" \
		[ "$sent" -lt $bytes ]
fi
barrier munmap-done

# fork() by another thread during a zero-copy send; the child scribbles over its
# copy of the buffer. Pages pinned for DMA stay the parent's (FOLL_PIN makes fork
# copy them for the child), so the peer gets the parent's bytes.
paths_case fork "--bytes $((96 * MB)) --fork-ms 150"
if [ "$ROLE" = b ]; then
	check "fork: the fork came during the send (${O[fork_during_send]-missing})" \
		[ "${O[fork_during_send]-missing}" = true ]
	check "fork: $(sent_by zc) of $((96 * MB)) bytes zero-copy" \
		[ "$(sent_by zc)" = $((96 * MB)) ]
fi
wait_for 10 "every pinned page released" pins_balanced

# The sender is killed during a zero-copy send.
port=$((port + 1))
if [ "$ROLE" = a ]; then
	inns "$XFER" server "$MY_IP" $port --ulp --allow-reset >"$WORK/kill.json" &
	srv=$!
	wait_for 90 "server on $port" pid_listening $srv $port
	barrier kill-listening
	wait $srv
	log "killed sender, server: $(tail -1 "$WORK/kill.json")"
else
	barrier kill-listening
	inns "$XFER" client "$PEER_IP" $port --ulp --bytes $((1024 * MB)) \
		--write-size $((16 * MB)) >"$WORK/kill.json" &
	cli=$!
	wait_for 90 "zero-copy bytes on the connection" conn_moved $port zc_bytes
	run kill -9 $cli
	wait $cli
fi
barrier kill-done
wait_for 10 "every pinned page released" pins_balanced
paths_case after_kill "--bytes $((4 * MB)) --write-size $MB"
[ "$ROLE" = b ] && check "after_kill: zero-copy $(sent_by zc)" [ "$(sent_by zc)" = $((4 * MB)) ]

# The engine's device is unbound under a running connection.
dma_paths 4096 0
port=$((port + 1))
if [ "$ROLE" = a ]; then
	inns "$XFER" server "$MY_IP" $port --ulp >"$WORK/unbind.json" &
	srv=$!
	wait_for 90 "server on $port" pid_listening $srv $port
	barrier unbind-listening
	wait $srv || check "unbind: server failed: $(<"$WORK/unbind.json")" false
	result "$WORK/unbind.json"
	log "unbind, server: $out"
	check "unbind: server ${O[mode]-missing} intact ${O[intact]-missing}" \
		[ "${O[mode]-missing}/${O[intact]-missing}" = ntb/true ]
	[ "$TOPO" = twovm ] && run sh -c "echo soft_dma >$SOFT_DMA_DEV/driver/unbind"
else
	barrier unbind-listening
	# Each descriptor takes 20 ms: with at most a peer buffer's worth in flight
	# the stream cannot finish by DMA in less than 2.5 s, long after the unbind
	# starts (1 MiB buffers otherwise carried all of it before the unbind).
	echo 20000 >$SOFT_DMA/latency_us
	inns "$XFER" client "$PEER_IP" $port --ulp --bytes $((128 * MB)) >"$WORK/unbind.json" &
	cli=$!
	wait_for 90 "DMA bytes on the connection" conn_moved $port dma_bytes
	run sh -c "echo soft_dma >$SOFT_DMA_DEV/driver/unbind"
	wait $cli || check "unbind: client failed: $(<"$WORK/unbind.json")" false
	echo 0 >$SOFT_DMA/latency_us
	result "$WORK/unbind.json"
	log "unbind, client: $out"
	check "unbind: ${O[mode]-missing} intact ${O[intact]-missing}" \
		[ "${O[mode]-missing}/${O[intact]-missing}" = ntb/true ]
	check "unbind: DMA $(sent_by dma) then CPU $(sent_by cpu) bytes" \
		[ "$(sent_by dma)" -gt 0 -a "$(sent_by cpu)" -gt 32768 ]
fi
barrier unbound
# Idle link groups let their channels go: then nothing holds the engine's module.
if [ "$ROLE" = b ] || [ "$TOPO" = twovm ]; then
	wait_for 30 "soft_dma to unload" rmmod soft_dma
fi
barrier unloaded
paths_case after_unload "--bytes $((2 * MB)) --write-size 65536"
[ "$ROLE" = b ] && check "after_unload: all by CPU ($(sent_by cpu) bytes)" [ "$(sent_by dma)" = 0 ]
checked
