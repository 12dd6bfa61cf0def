#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench, DMA part: ntbsmc streams with each copy path into the peer's 1 MiB
# buffer, side by side in one run: CPU copy, DMA from a kernel copy, zero-copy DMA
# from the sender's pages (a written buffer, and one that asks for transparent huge
# pages: the line says what share got them), at 4 KiB, 64 KiB and 1 MiB writes:
# at 64 KiB and 1 MiB all paths three rounds over, with medians and zero-copy
# against the CPU path round by round, as single 5 s streams swing by a third.
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
sctl net.ntbsmc.rmb_kb=1024
barrier dma-loaded
ulp_wait_active
SRV=$([ "$ROLE" = a ] && echo "$PEER_IP" || echo "$MY_IP")	# host b serves
port=$((7000 + RANDOM % 1000))
[ "$ROLE" = a ] && put dma-port "$port" || port=$(get dma-port)
if [ "$ROLE" = b ]; then
	inns "$NB" server --ulp "$SRV" "$port" &
	wait_for 60 "nbench server" pid_listening $! "$port"
	barrier dma-up
	# 28 streams of 5 s and the tools between them: three to four minutes
	barrier dma-done 900
	kill %1 2>/dev/null
	wait 2>/dev/null
	exit 0
fi
barrier dma-up

# median A B C...: the middle value (of an odd count).
median() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# least N% M%...: the smallest share.
least() {
	printf '%s\n' "$@" | sort -n | head -1
}

# stream PATH WRITE_SIZE: one 5 s stream by PATH. Sets mode (ntb or tcp), mbs,
# spg (the sender's s/GiB) and huge (its share on huge pages, with --huge), and
# adds to the path's byte counts by copy path and to the engine's counts.
stream() {
	local path=$1 w=$2 opt= out c0 d0 z0 eb0 ec0 ecb0 eb ec ecb
	local -A O	# (its fields, result's)
	case $path in
	cpu) dma_paths 0 0 ;;
	dma) dma_paths 1 0 ;;
	zerocopy) dma_paths 1 1 ;;
	zerocopy-huge) dma_paths 1 1; opt=--huge ;;
	esac
	c0=$(ntb_stat cpu_bytes) d0=$(ntb_stat dma_bytes) z0=$(ntb_stat zc_bytes)
	read -r eb0 ec0 ecb0 <"$SOFT_DMA/busy"
	out=$(inns "$NB" client --ulp $opt "$SRV" "$port" stream "$w" "$SECS") ||
		fail "nbench: $path stream of ${w}B writes failed"
	read -r eb ec ecb <"$SOFT_DMA/busy"
	mode=$(echo "$out" | awk '{ print $NF }')
	mbs=$(echo "$out" | awk '{ print $3 }') spg=$(echo "$out" | awk '{ print $6 }')
	huge=$(echo "$out" | sed -n 's/.* huge \(-\?[0-9]*%\) .*/\1/p')
	cpu_b[$path]=$((${cpu_b[$path]:-0} + $(ntb_stat cpu_bytes) - c0))
	dma_b[$path]=$((${dma_b[$path]:-0} + $(ntb_stat dma_bytes) - d0))
	zc_b[$path]=$((${zc_b[$path]:-0} + $(ntb_stat zc_bytes) - z0))
	eng_b[$path]=$((${eng_b[$path]:-0} + eb - eb0))
	eng_copy[$path]=$((${eng_copy[$path]:-0} + ec - ec0))
	eng_cb[$path]=$((${eng_cb[$path]:-0} + ecb - ecb0))
}

# Each size: the paths one after another, $rounds times over. Prints each path's
# median, and zero-copy against the CPU path round by round.
PATHS="cpu dma zerocopy zerocopy-huge"
for w in 4096 65536 1048576; do
	rounds=3
	[ "$w" = 4096 ] && rounds=1
	declare -A mode_l=() mbs_l=() spg_l=() huge_l=() cpu_b=() dma_b=() zc_b=() eng_b=() eng_copy=() eng_cb=()
	for ((r = 0; r < rounds; r++)); do
		for path in $PATHS; do
			stream "$path" "$w"
			mbs_l[$path]+=" $mbs" spg_l[$path]+=" $spg"
			# every mode a path's streams ran in, not just the last one's
			[[ " ${mode_l[$path]} " == *" $mode "* ]] || mode_l[$path]+=" $mode"
			[ -z "$huge" ] || huge_l[$path]+=" $huge"
		done
	done
	for path in $PATHS; do
		all=$((cpu_b[$path] + dma_b[$path]))
		[ $all -gt 0 ] || all=1
		engine=$(awk -v b="${eng_b[$path]}" -v c="${eng_copy[$path]}" -v k="${eng_cb[$path]}" \
			'BEGIN { if (b > 0) printf ", engine copy %.3f + callbacks %.3f s/GiB",
				 c * 2 ^ 30 / b / 1e9, k * 2 ^ 30 / b / 1e9 }')
		share="cpu $((100 * cpu_b[$path] / all))% dma $((100 * (dma_b[$path] - zc_b[$path]) / all))% zc $((100 * zc_b[$path] / all))%"
		runs=
		[ "$rounds" = 1 ] || runs=", runs$(echo "${mbs_l[$path]}" | sed 's/ /\//g; s/^\// /')"
		bench "ntbsmc $path ${w}B writes: MB/s, sender CPU s/GiB" \
		      "$(median ${mbs_l[$path]}), $(median ${spg_l[$path]}) [$(echo ${mode_l[$path]} | tr ' ' /), $share$engine${huge_l[$path]:+, on huge pages $(least ${huge_l[$path]})}$runs]"
	done
	if [ "$rounds" != 1 ]; then
		for path in zerocopy zerocopy-huge; do
			bench "ntbsmc $path / cpu throughput at ${w}B, round by round" \
			      "$(echo "${mbs_l[cpu]} |${mbs_l[$path]}" | awk -F'|' '{
					n = split($1, c, " "); split($2, z, " ")
					for (i = 1; i <= n; i++)
						printf "%s%.0f%%", (i > 1 ? ", " : ""), 100 * z[i] / c[i] }')"
		done
	fi
	unset mode_l mbs_l spg_l huge_l cpu_b dma_b zc_b eng_b eng_copy eng_cb
done
dma_paths 65536 262144
barrier dma-done
