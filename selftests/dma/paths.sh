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
	[ "$(sent_by dma)" = 0 -a "$(sent_by cpu)" = "$(jfield "$out" ntb_tx_bytes)" ]

dma_paths 4096 65536
paths_case mixed "--bytes $B --write-size 200000 --random-writes --both"
cpu=$(sent_by cpu) dma=$(sent_by dma) zc=$(sent_by zc) tx=$(jfield "$out" ntb_tx_bytes)
[ "$ROLE" = b ] && check "mixed: cpu $cpu + dma $dma = sent $tx, zero-copy $zc, each path used" \
	[ $((cpu + dma)) = "$tx" -a "$cpu" -gt 0 -a "$dma" -gt "$zc" -a "$zc" -gt 0 ]

barrier paths-done
wait_for 10 "every pinned page released" pins_balanced
checked
