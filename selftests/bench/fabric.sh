#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench, fabric part: doorbell round trip (ntb_rtt) and raw window bandwidth
# (ntb_perf, CPU copy) between the two hosts.
source "$REPO/selftests/lib.sh"

bench() { log "bench: $1|$2"; }

case $1 in
setup) exit 0 ;;
cleanup) unload_module ntb_rtt; unload_module ntb_perf; exit 0 ;;
esac

insmod "$REPO/selftests/fabric/ntb_rtt.ko" 2>/dev/null
R=$NTB_DBG/ntb_rtt/$NTB
wait_for 30 "ntb_rtt on $NTB" test -e "$R/run"
barrier rtt_start
if [ "$ROLE" = a ]; then
	wait_for 60 "link up" sh -c "echo 1 >$R/run"
	echo 20000 >"$R/run" || fail "ntb_rtt run failed"
	read -r _ n _ min _ med _ p99 _ max <"$R/run"
	bench "doorbell round trip, median / p99 (us)" \
		"$((med / 1000)).$(((med % 1000) / 100)) / $((p99 / 1000)).$(((p99 % 1000) / 100))"
fi
barrier rtt_done
[ "$ROLE" = a ] && unload_module ntb_rtt
barrier rtt_unloaded
[ "$ROLE" = b ] && unload_module ntb_rtt
barrier rtt_unloaded_b

# once per kernel: in the one-VM topology both hosts share it
if [ "$TOPO" = twovm ] || [ "$ROLE" = a ]; then
	load_module ntb_perf total_order=28 max_mw_size=2097152
fi
P=$NTB_DBG/ntb_perf/$NTB
wait_for 30 "ntb_perf on $NTB" test -e "$P/run"
barrier perf_start
if [ "$ROLE" = a ]; then
	run timeout 300 sh -c "echo 0 >$P/run"
	mbs=$(sed -n 's/.*, \([0-9]*\) MBytes\/s/\1/p' "$P/run" | head -1)
	[ -n "$mbs" ] || fail "no ntb_perf figure"
	bench "ntb_perf window write bandwidth, CPU copy (MB/s)" "$mbs"
fi
barrier perf_done
