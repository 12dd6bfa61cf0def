#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The copy paths into the peer's buffer, each checked byte for byte (xfer) and by
# the sending connection's counters (which path carried how many bytes):
#
#   host b  --- xfer (and back with --both) --->  host a
#   soft_dma engine in each kernel: DMA_MEMCPY from its own worker
#
#   below the DMA threshold      CPU copy
#   at or above it               DMA from a kernel copy of the data (staged)
#   at or above zerocopy too     DMA straight from the sender's pinned pages
#
# at odd buffer offsets, writes that cross pages, wrap the peer's buffer or are
# larger than it, and random sizes that mix the paths on one connection. The
# server writes 64 KiB blocks back (--both), by whichever path that size takes.
# Then non-blocking sends into a stopped reader (ulp/nbsend): never zero-copy.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"
source "$REPO/selftests/dma/lib.sh"

test_phases dma_setup dma_cleanup "$@"

ulp_wait_active
port=6900
MB=1048576
B=$((8 * MB))

# carried KIND BYTES: this host's connection sent BYTES by KIND (dma or zc); what
# else it sent went by CPU and is only the small control writes (header, verdict).
carried() {
	local name=$1 kind=$2 want=$3 got cpu
	got=$(sent_by "$kind") cpu=$(sent_by cpu)
	check "$name: $got of $want bytes by $kind, $cpu by CPU" \
		[ "$got" = "$want" -a "$cpu" -lt 4096 ]
}

dma_paths 4096 0
e0=$(engine_bytes)
paths_case staged "--bytes $B --write-size 65536 --both"
check "a DMA channel is attached to $NTB: $(dma_chan)" [ "$(dma_chan)" != null ]
carried staged dma $B
# the engine's own count: it ran those bytes (in one VM it serves both hosts)
ran=$(($(engine_bytes) - e0))
check "staged: soft_dma ran $ran bytes for the $B sent by DMA" [ "$ran" -ge "$B" ]
check "staged: nothing zero-copy: $(sent_by zc)" [ "$(sent_by zc)" = 0 ]

paths_case staged_v6_odd "-6 --bytes $B --write-size 100003 --offset 3"
[ "$ROLE" = b ] && carried staged_v6_odd dma $B

dma_paths 4096 4096
paths_case zerocopy_odd "--bytes $B --write-size $MB --offset 1"
[ "$ROLE" = b ] && carried zerocopy_odd zc $B && carried zerocopy_odd dma $B

paths_case zerocopy_pages "--bytes $B --write-size 10000 --offset 4090"
[ "$ROLE" = b ] && carried zerocopy_pages zc $B

# rmb_kb is 1024 (the default): one write is 4 times the peer's buffer
paths_case zerocopy_huge "--bytes $((4 * B)) --write-size $((4 * MB)) --both"
carried zerocopy_huge zc $((4 * B))

dma_paths 65536 0
paths_case below_threshold "--bytes $((2 * MB)) --write-size 1000"
[ "$ROLE" = b ] && check "below_threshold: $(sent_by cpu) by CPU, $(sent_by dma) by DMA" \
	[ "$(sent_by dma)" = 0 -a "$(sent_by cpu)" = "${O[ntb_tx_bytes]-missing}" ]

dma_paths 4096 65536
paths_case mixed "--bytes $B --write-size 200000 --random-writes --both"
cpu=$(sent_by cpu) dma=$(sent_by dma) zc=$(sent_by zc) tx=${O[ntb_tx_bytes]-missing}
[ "$ROLE" = b ] && check "mixed: cpu $cpu + dma $dma = sent $tx, zero-copy $zc, each path used" \
	[ $((cpu + dma)) = "$tx" -a "$cpu" -gt 0 -a "$dma" -gt "$zc" -a "$zc" -gt 0 ]

# A sender that may not wait, into a reader that stopped, with an engine that
# takes 500 ms per descriptor: each MSG_DONTWAIT send returns at once with what
# it took, staged rather than zero-copy, until one returns EAGAIN, and the
# reader then checks every byte. nonblock: writes of 256 KiB (at or above both
# thresholds) until the peer's buffer is full (on a module that sent them
# zero-copy the first call waited for the engine, socket locked). nonblock_ring:
# writes of 4 KiB, a DMA segment each, until the ring of 64 is full (a
# non-blocking sender waited there for a free entry); the edge-triggered
# EPOLLOUT that a free entry brings comes, and the next send takes its bytes.
NB=$REPO/selftests/ulp/nbsend
dma_paths 4096 4096

# nonblock_case NAME WRITE_SIZE MAX_BYTES [OUT_MS]: one such connection from
# host b to host a; $out is this host's JSON line.
nonblock_case() {
	local name=$1 ms
	shift
	port=$((port + 1))
	if [ "$ROLE" = a ]; then
		rm -f "$WORK/$name.go"
		inns "$NB" server "$MY_IP" $port "$WORK/$name.go" >"$WORK/$name.json" &
		local srv=$!
		wait_for 90 "server on $port" pid_listening $srv $port
		barrier "$name-listening"
		barrier "$name-sent"
		touch "$WORK/$name.go"
		wait $srv || check "$name: server failed: $(<"$WORK/$name.json")" false
		result "$WORK/$name.json"
		log "$name: $out"
		check "$name: the reader got ${O[bytes]-missing} bytes, intact ${O[intact]-missing}" \
			[ "${O[intact]-missing}" = true -a "${O[bytes]-missing}" -gt 1 ]
		put "$name-bytes" "${O[bytes]-missing}"
	else
		echo 500000 >"$SOFT_DMA/latency_us"
		barrier "$name-listening"
		inns "$NB" client "$PEER_IP" $port "$@" >"$WORK/$name.json" ||
			check "$name: client failed: $(<"$WORK/$name.json")" false
		echo 0 >"$SOFT_DMA/latency_us"
		barrier "$name-sent"
		result "$WORK/$name.json"
		log "$name: $out"
		ms=${O[max_call_ms]-missing}
		check "$name: mode ${O[mode]-missing}, ${O[sent]-missing} bytes in ${O[calls]-missing} calls, EAGAIN last: ${O[eagain]-missing}" \
			[ "${O[mode]-missing}/${O[eagain]-missing}" = ntb/true ]
		check "$name: longest call ${ms} ms, under 250 (the engine takes 500)" \
			[ "${ms%.*}" -lt 250 ]
		# DMA bytes are counted as their segments retire, after the 500 ms
		check "$name: ${O[ntb_tx_bytes]-missing} bytes taken, $(sent_by cpu) by CPU (the first), $(sent_by zc) zero-copy, the rest staged for DMA" \
			[ "$(sent_by zc)" = 0 -a "$(sent_by cpu)" = 1 -a \
			  "${O[ntb_tx_bytes]-missing}" = "${O[sent]-missing}" ]
	fi
	barrier "$name-done"
	if [ "$ROLE" = b ]; then
		check "$name: the reader got $(get "$name-bytes") of the ${O[sent]-missing} bytes sent" \
			[ "$(get "$name-bytes")" = "${O[sent]-missing}" ]
	fi
}

nonblock_case nonblock 262144 $((4 * MB))
nonblock_case nonblock_ring 4096 $((768 * 1024)) 5000
if [ "$ROLE" = b ]; then
	check "nonblock_ring: EAGAIN after ${O[sent]-missing} bytes: 64 segments of 4 KiB and the first byte" \
		[ "${O[sent]-missing}" -ge 262145 -a "${O[sent]-missing}" -lt $((768 * 1024)) ]
	check "nonblock_ring: EPOLLOUT after ${O[out_ms]-missing} ms, then ${O[after]-missing} bytes taken" \
		[ "${O[out_ms]-missing}" != -1.0 -a "${O[after]-missing}" -gt 0 ]
fi

barrier paths-done
wait_for 10 "every pinned page released" pins_balanced
checked
