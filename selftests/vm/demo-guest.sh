#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of make demo: VM b serves, VM a connects and reports.
set -u
me=$1
export ROLE=$me PEER=$([ "$me" = a ] && echo b || echo a) SYNC=/run/out/sync NS="" TOPO=twovm
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"
mkdir -p "$SYNC"
ip link set eth0 up
ip addr add "10.77.0.$([ "$me" = a ] && echo 1 || echo 2)/24" dev eth0
# ntbsmc and the NTB core as DKMS installed them; the emulated port's driver
modprobe ntb || exit 1
insmod "$MODDIR/selftests/fabric/ntb_hw_ivshmem.ko" || exit 1
modprobe ntbsmc || exit 1
wait_for 60 "ntbsmc link" sh -c "dmesg | grep -q 'ntbsmc: link active'"
barrier up
X=$XFER
NB=$REPO/selftests/ulp/nbench
CLI=/usr/sbin/ntbsmc
RUNNER=/usr/sbin/ntbsmc_run
SRV=10.77.0.2

# The views an operator has while a connection is open, on both hosts.
views() {
	if [ "$1" = server ]; then
		"$X" server $SRV 7004 --ulp --hold "$SYNC/release" >/dev/null &
	else
		"$X" client $SRV 7004 --ulp --bytes 100000 --both --hold "$SYNC/release" >/dev/null &
	fi
	wait_for 60 "the held connection" sh -c "$CLI -j conn show | grep -q ntb"
	barrier held
	echo "--- VM $me: ntbsmc linkgroup show"
	"$CLI" linkgroup show
	echo "--- VM $me: ntbsmc conn show -a"
	"$CLI" conn show -a
	barrier viewed
	touch "$SYNC/release"
	wait
}

if [ "$me" = b ]; then
	# an unmodified server program under ntbsmc_run, and one without ntbsmc
	"$RUNNER" "$X" server $SRV 7001 --conns 2 >/dev/null &
	"$X" server $SRV 7002 --conns 1 >/dev/null &
	"$NB" server --ulp $SRV 7011 &
	"$NB" server $SRV 7012 &
	wait_for 60 "servers" pid_listening $! 7012
	barrier listening
	barrier measured
	kill %3 %4 2>/dev/null
	wait %1 %2
	views server
	barrier done
	exit 0
fi
barrier listening
show() {	# TITLE JSON
	local how=TCP data=intact ntb=0
	case "$(jfield "$2" mode)/$(jfield "$2" reason)" in
	ntb/*) how=NTB ntb=$(jfield "$2" ntb_tx_bytes) ;;
	tcp/no_ulp) ;;
	*) how="TCP (fallback: $(jfield "$2" reason))" ;;
	esac
	[ "$(jfield "$2" intact)" = true ] || data=CORRUPT
	printf '%-40s %-28s %-7s %s bytes over NTB\n' "$1" "$how" "$data" "$ntb"
}
r1=$("$RUNNER" "$X" client $SRV 7001 --bytes "$BYTES")
r2=$("$X" client $SRV 7002 --ulp --bytes 1000000)
r3=$("$X" client $SRV 7001 --bytes 1000000)
t1=$("$NB" client --ulp $SRV 7011 stream 65536 5)
t2=$("$NB" client $SRV 7012 stream 65536 5)
l1=$("$NB" client --ulp $SRV 7011 rr 2000)
l2=$("$NB" client $SRV 7012 rr 2000)
barrier measured
echo "ntbsmc demo: VM a -> VM b over an emulated NTB link (and virtio-net for TCP)"
echo "kernel $(uname -r) ($(uname -v | sed -n 's/.*\(Debian [^ ]*\).*/\1/p')), $(modinfo -n ntbsmc), $("$CLI" -V)"
echo
printf '%-40s %-28s %-7s\n' "connection ($BYTES / 1000000 bytes, every byte checked)" "ran over" "data"
show "unmodified client under ntbsmc_run" "$r1"
show "ULP client -> server without ULP" "$r2"
show "plain TCP client -> ULP server" "$r3"
echo
echo "throughput and latency (nbench, 64 KiB writes for 5 s; 1-byte ping-pong x2000):"
printf '  %-16s %s\n' "ntbsmc:" "$(echo "$t1" | awk '{print $3 " MB/s"}'), round trip median $(echo "$l1" | awk '{print $3 " us, p99 " $6 " us"}') ($(echo "$t1" | awk '{print $NF}'))"
printf '  %-16s %s\n' "TCP (virtio):" "$(echo "$t2" | awk '{print $3 " MB/s"}'), round trip median $(echo "$l2" | awk '{print $3 " us, p99 " $6 " us"}') ($(echo "$t2" | awk '{print $NF}'))"
echo
views client
ok=ok
[ "$(jfield "$r1" mode)/$(jfield "$r1" intact)" = ntb/true ] &&
	[ "$(jfield "$r1" ntb_tx_bytes)" -ge "$(jfield "$r1" bytes)" ] || ok=FAILED
[ "$(jfield "$r2" mode)/$(jfield "$r2" reason)/$(jfield "$r2" intact)" = tcp/peer_no_offer/true ] ||
	ok=FAILED
case "$t1" in *"mode ntb"*) ;; *) ok=FAILED ;; esac
barrier done
echo "RESULT $ok"
