#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Receive buffers are sized per connection: SO_RCVBUF when the program set it, else
# net.ntbsmc.rmb_kb; the first connections of a link get that size, later ones
# smaller buffers while half the space is left, then 16 KiB each, until the space is
# used up and the next connection falls back (no_buffer). Every buffer size carries
# bytes intact over NTB; the device's accounting matches, and is whole again once
# the connections closed.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup "$@"

ulp_wait_active
B=$REPO/selftests/ulp/buffers.py
port=6900
sget want net.ntbsmc.rmb_kb
want=$((want * 1024))
dev=$(cli -j dev show "$NTB")
space=$(jfield "$dev" buffer_space)
log "dev show: $dev"
check "$NTB: $(jfield "$dev" buffers) buffers in use before the test, want 0" \
	[ "$(jfield "$dev" buffers)" = 0 -a "$(jfield "$dev" buffer_free)" = "$space" ]

# held_ok JSON: the device's count and free space match the connections in JSON.
held_ok() {
	local d
	d=$(cli -j dev show "$NTB")
	log "dev show while held: $d"
	python3 - "$1" "$(jfield "$d" buffers)" "$(jfield "$d" buffer_free)" "$space" <<'PY'
import json, sys
conns = [c for c in json.load(open(sys.argv[1])) if c['mode'] == 'ntb']
used = sum(c['rmb_size'] for c in conns)
n, free, space = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
assert n == len(conns), f'device counts {n} buffers, {len(conns)} connections over NTB'
assert free == space - used, f'device has {free} bytes free, connections hold {used} of {space}'
PY
}

released() {
	local d
	d=$(cli -j dev show "$NTB")
	[ "$(jfield "$d" buffers)" = 0 -a "$(jfield "$d" buffer_free)" = "$space" ]
}

if [ "$ROLE" = a ]; then
	inns python3 "$B" server "$MY_IP" $port "$SYNC/bufs-count" "$WORK/bufs.json" \
		>"$WORK/bufs.err" 2>&1 &
	srv=$!
	wait_for 90 "buffers server" pid_listening $srv $port
	barrier listening
	wait_for 900 "the server to accept every connection" test -s "$WORK/bufs.json"
	held_ok "$WORK/bufs.json" || check "server: accounting while held (see the log)" false
	python3 - "$WORK/bufs.json" "$want" <<'PY' || check "server: first buffers (see the log)" false
import json, sys
c, want = json.load(open(sys.argv[1])), int(sys.argv[2])
assert c[0]['mode'] == 'ntb' and c[0]['rmb_size'] == want, c[0]
assert c[0]['peer_rmb_size'] == 65536, c[0]
PY
	barrier held
	wait $srv || check "server failed: $(<"$WORK/bufs.err")" false
	cp "$WORK/bufs.json" "$SYNC/bufs-server.json"
	barrier done
else
	barrier listening
	inns python3 "$B" client "$PEER_IP" $port 1024 "$SYNC/bufs-go" "$WORK/bufs.json" \
		>"$WORK/bufs.err" 2>&1 &
	cli=$!
	wait_for 900 "the client's connections" test -s "$WORK/bufs.json"
	log "client connections: $(<"$WORK/bufs.json")"
	python3 - "$WORK/bufs.json" "$want" "$space" <<'PY' || check "client: buffer sizes (see the log)" false
import json, sys
c, want, space = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
ntb, last = c[:-1], c[-1]
assert all(x['mode'] == 'ntb' for x in ntb), 'a connection fell back before the last'
assert last['mode'] == 'tcp' and 'no_buffer' in (last['reason'], last['peer_reason']), \
    f'the last connection did not fall back for want of buffers: {last}'
assert ntb[0]['rmb_size'] == 65536, f'SO_RCVBUF 40000 gave {ntb[0]["rmb_size"]}, want 65536'
assert ntb[1]['rmb_size'] == want, f'second connection got {ntb[1]["rmb_size"]}, want {want}'
sizes = [x['rmb_size'] for x in ntb[1:]]
assert sizes == sorted(sizes, reverse=True), f'sizes grow again: {sizes}'
assert all(s >= 16384 and s & (s - 1) == 0 for s in sizes), sizes
assert sizes[-1] == 16384, f'the space ran out before 16 KiB buffers: {sizes}'
assert len(ntb) >= space // 16384 // 2, f'{len(ntb)} connections in {space} bytes'
print(f'# {len(ntb)} connections over NTB in {space} bytes, largest {sizes[0]}')
PY
	held_ok "$WORK/bufs.json" || check "client: accounting while held (see the log)" false
	n=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$WORK/bufs.json")
	echo "$n" >"$SYNC/bufs-count"
	barrier held
	touch "$SYNC/bufs-go"
	wait $cli || check "client failed: $(<"$WORK/bufs.err")" false
	barrier done
	python3 - "$WORK/bufs.json" "$SYNC/bufs-server.json" <<'PY' || check "data through the buffers (see the log)" false
import json, sys
cli, srv = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
srv = {x['port']: x for x in srv}
assert len(srv) == len(cli), f'server saw {len(srv)} connections, client {len(cli)}'
sizes = set()
for c in cli:
    s = srv[c['port']]
    assert s['intact'] and s['received'] == c.get('sent', 0), (c, s)
    if 'sent' in c and c['mode'] == 'ntb':
        assert c['tx_bytes'] >= c['sent'] and s['rx_bytes'] >= c['sent'], (c, s)
        sizes.add(s['rmb_size'])
assert 16384 in sizes and len(sizes) >= 2, f'data went through buffers of {sizes} only'
print(f'# data intact through buffers of {sorted(sizes)} bytes')
PY
fi
wait_for $IDLE_WAIT "every buffer released" released
checked
