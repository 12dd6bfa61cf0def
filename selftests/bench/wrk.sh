#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench, event loops: nginx (host b) and wrk (host a), each under
# ntbsmc_run, against the same nginx over TCP on a second port, side by side in
# one boot: keep-alive with a 1 KiB and a 1 MiB file, and "Connection: close"
# with 1 KiB. ROUNDS rounds, each running every case over TCP and then over
# ntbsmc, so that both see the same moments of the emulator; per case the
# median and the range of the rounds, and per round the ratio. Over ntbsmc also
# the doorbells host a rang and received per request (a doorbell is a posted
# write, an interrupt on the other side: what it costs on hardware is counted
# here, not timed).
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"
source "$REPO/selftests/bench/lib.sh"

ROUNDS=${BENCH_WRK_ROUNDS:-3}
NTB_PORT=8080 TCP_PORT=8090

case $1 in
setup) exit 0 ;;
cleanup) unload_module ntbsmc; exit 0 ;;
esac

once_per_kernel ulp_setup
barrier ntbsmc-loaded
ulp_wait_active
www_files
if [ "$ROLE" = b ]; then
	nginx_up $NTB_PORT $TCP_PORT
	barrier nginx-up
	barrier wrk-done 3600
	kill "$NGINX_PID"
	wait "$NGINX_PID" 2>/dev/null
	exit 0
fi
barrier nginx-up

# one NAME PORT FILE [ntb] [WRK-ARGS...]: a 1-thread, 4-connection wrk run of
# SECS s; prints its requests/s (checked bodies, none bad), else fails.
one() {
	local name=$1 port=$2 file=$3 mode=$4 out run=()
	local -A O	# (its fields, result's)
	shift 4
	[ "$mode" = ntb ] && run=("$REPO/netlink-tool/ntbsmc_run")
	out=$(WRK_BODY=$WWW/$file inns "${run[@]}" wrk -t1 -c4 -d"${SECS}s" -s "$LUA" "$@" \
		"http://$PEER_IP:$port/$file" 2>&1)
	[[ $out == *" 0 bad"* ]] || fail "$name: $out"
	sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out"
}

# db: doorbells this host rang and handled so far.
db() { stats; echo $((${S[doorbells_tx]-missing} + ${S[doorbells_rx]-missing})); }

cases=("keep-alive 1 KiB|1k|" "keep-alive 1 MiB|1m|" "Connection: close 1 KiB|1k|close")
declare -A tcp ntb dbs
for r in $(seq "$ROUNDS"); do
	for c in "${cases[@]}"; do
		IFS='|' read -r label file close <<<"$c"
		args=()
		[ -n "$close" ] && args=(-H "Connection: close")
		t=$(one "$label tcp" $TCP_PORT "$file" tcp "${args[@]}")
		d0=$(db)
		n=$(one "$label ntbsmc" $NTB_PORT "$file" ntb "${args[@]}")
		d1=$(db)
		tcp[$label]+=" $t" ntb[$label]+=" $n"
		dbs[$label]+=" $(awk -v d=$((d1 - d0)) -v n="$n" -v s="$SECS" 'BEGIN { printf "%.2f", d / (n * s) }')"
		log "round $r: $label: TCP $t, ntbsmc $n requests/s"
	done
done

# summary WORDS...: median [min-max] of numbers
summary() {
	tr ' ' '\n' <<<"$*" | grep . | sort -g |
		awk '{ v[NR] = $1 } END { printf "%s [%s-%s]", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
for c in "${cases[@]}"; do
	IFS='|' read -r label _ <<<"$c"
	read -r -a ts <<<"${tcp[$label]}"
	read -r -a ns <<<"${ntb[$label]}"
	ratios=""
	for i in "${!ts[@]}"; do
		ratios+=$(awk -v t="${ts[$i]}" -v n="${ns[$i]}" -v f="$i" \
			'BEGIN { printf "%s%.2fx", (f > 0 ? ", " : ""), n / t }')
	done
	bench "wrk $label, TCP requests/s, median [range] of $ROUNDS" "$(summary "${tcp[$label]}")"
	bench "wrk $label, ntbsmc requests/s" "$(summary "${ntb[$label]}")"
	bench "wrk $label, ntbsmc / TCP by round" "$ratios"
	bench "wrk $label, host a's doorbells (rung+handled) per request" "$(summary "${dbs[$label]}")"
done
barrier wrk-done
