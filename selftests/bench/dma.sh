#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench, DMA part: ntbsmc streams with each copy path into the peer's 1 MiB
# buffer, side by side in one run: CPU copy, DMA from a kernel copy, zero-copy DMA
# from the sender's pages (a written buffer, and one that asks for transparent huge
# pages: the line says what share got them), at 4 KiB, 64 KiB and 1 MiB writes.
# Throughput and the sender's own CPU time per GiB sent. The engine is soft_dma,
# whose copies run on a CPU too (its worker's), so what DMA saves here is the
# sender's time; soft_dma's counters give what its worker spent per GiB copying
# (what a hardware engine takes off the CPUs) and in ntbsmc's completion callbacks.
# The share of the bytes each path actually carried comes from the namespace's
# counters.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"
source "$REPO/selftests/bench/lib.sh"
source "$REPO/selftests/dma/lib.sh"

case $1 in
setup) exit 0 ;;
cleanup) dma_cleanup; exit 0 ;;
esac

once_per_kernel dma_setup
# 1 MiB receive buffers (the default) on both hosts, for every path alike: a DMA
# write is published when it completed, so the deeper the peer's buffer the more
# of them overlap.
inns sysctl -q -w net.ntbsmc.rmb_kb=1024
barrier dma-loaded
ulp_wait_active
SRV=$([ "$ROLE" = a ] && echo "$PEER_IP" || echo "$MY_IP")	# host b serves
port=$((7000 + RANDOM % 1000))
[ "$ROLE" = a ] && put dma-port "$port" || port=$(get dma-port)
if [ "$ROLE" = b ]; then
	inns "$NB" server --ulp "$SRV" "$port" &
	wait_for 60 "nbench server" pid_listening $! "$port"
	barrier dma-up
	barrier dma-done
	kill %1 2>/dev/null
	wait 2>/dev/null
	exit 0
fi
barrier dma-up
for path in cpu dma zerocopy zerocopy-huge; do
	huge=
	case $path in
	cpu) dma_paths 0 0 ;;
	dma) dma_paths 1 0 ;;
	zerocopy) dma_paths 1 1 ;;
	zerocopy-huge) dma_paths 1 1; huge=--huge ;;
	esac
	for w in 4096 65536 1048576; do
		c0=$(ntb_stat cpu_bytes) d0=$(ntb_stat dma_bytes) z0=$(ntb_stat zc_bytes)
		e0=$(cat $SOFT_DMA/busy)
		out=$(inns "$NB" client --ulp $huge "$SRV" "$port" stream $w "$SECS")
		c=$(($(ntb_stat cpu_bytes) - c0)) d=$(($(ntb_stat dma_bytes) - d0))
		z=$(($(ntb_stat zc_bytes) - z0)) all=$((c + d))
		[ $all -gt 0 ] || all=1
		engine=$(echo "$e0 $(cat $SOFT_DMA/busy)" | awk '$4 > $1 {
			g = 2 ^ 30 / ($4 - $1) / 1e9
			printf ", engine copy %.3f + callbacks %.3f s/GiB", ($5 - $2) * g, ($6 - $3) * g }')
		bench "ntbsmc $path ${w}B writes: MB/s, sender CPU s/GiB" \
		      "$(echo "$out" | awk '{print $3 ", " $6}') [$(echo "$out" | awk '{print $NF}'), cpu $((100 * c / all))% dma $((100 * (d - z) / all))% zc $((100 * z / all))%$engine$(echo "$out" | sed -n 's/.* huge \(-\?[0-9]*%\) .*/, on huge pages \1/p')]"
	done
done
dma_paths 65536 262144
barrier dma-done
