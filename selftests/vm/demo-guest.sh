#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of make demo: VM b serves, VM a connects and reports.
set -u
me=$1
export ROLE=$me PEER=$([ "$me" = a ] && echo b || echo a) SYNC=/run/out/sync NS="" TOPO=twovm
source "$REPO/selftests/lib.sh"
mkdir -p "$SYNC"
ip link set eth0 up
ip addr add "10.77.0.$([ "$me" = a ] && echo 1 || echo 2)/24" dev eth0
insmod "$REPO/selftests/fabric/ntb_hw_ivshmem.ko" || exit 1
insmod "$REPO/ntbsmc/ntbsmc.ko" || exit 1
NTB=$(ls /sys/bus/ntb/devices | head -1)
wait_for 60 "ntbsmc link" sh -c "dmesg | grep -q 'ntbsmc: link active'"
barrier up
X=$REPO/selftests/ulp/xfer.py
if [ "$me" = b ]; then
	python3 "$X" server 10.77.0.2 7001 --ulp --conns 2 >/tmp/s1 &
	python3 "$X" server 10.77.0.2 7002 --conns 1 >/tmp/s2 &
	barrier listening
	wait
	barrier done
	exit 0
fi
barrier listening
show() {	# TITLE JSON
	python3 - "$1" "$2" <<'PY'
import json, sys
t, r = sys.argv[1], json.loads(sys.argv[2])
how = 'NTB' if r['mode'] == 'ntb' else 'TCP (fallback: %s)' % r['reason'] if r['reason'] != 'no_ulp' else 'TCP'
print('%-38s %-28s %-7s %8.1f MB/s   %s bytes over NTB' % (t, how,
      'intact' if r.get('intact', True) else 'CORRUPT', r['mb_per_s'], r.get('ntb_tx_bytes', 0)))
PY
}
r1=$(python3 "$X" client 10.77.0.2 7001 --ulp --bytes "$BYTES")
r2=$(python3 "$X" client 10.77.0.2 7002 --ulp --bytes 1000000)
r3=$(python3 "$X" client 10.77.0.2 7001 --bytes "$BYTES")
barrier done
echo "ntbsmc demo: VM a -> VM b, $BYTES bytes"
echo
printf '%-38s %-28s %-7s %13s\n' "connection" "ran over" "data" "throughput"
show "ULP client -> ULP server" "$r1"
show "ULP client -> server without ULP" "$r2"
show "plain TCP client -> ULP server" "$r3"
echo
"$REPO/netlink-tool/ntbsmc" linkgroup show 2>/dev/null || true
ok=ok
python3 -c 'import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if r["mode"]=="ntb" and r["intact"] and r["ntb_tx_bytes"]>=r["bytes"] else 1)' "$r1" || ok=FAILED
python3 -c 'import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if r["mode"]=="tcp" and r["reason"]=="peer_no_offer" and r["intact"] else 1)' "$r2" || ok=FAILED
echo "RESULT $ok"
