#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntbsmc between the two hosts: a connection with the ULP on both ends runs over
# NTB (mode, intact bytes, NTB byte counters), in both directions at once and at
# several sizes; with the ULP on one end only, it stays TCP with its reason.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup "$@"

ulp_wait_active
port=6000
# xfer_case NAME SERVER_OPTS CLIENT_OPTS MODE SERVER_REASON CLIENT_REASON: one
# xfer_one transfer, then its mode, reason, bytes and (NTB mode) NTB counters.
xfer_case() {
	local name=$1 mode=$4 reason n ntb
	[ "$ROLE" = a ] && reason=$5 || reason=$6
	xfer_one "$name" "$2" "$3"
	check "$name: mode ${O[mode]-missing}, want $mode" [ "${O[mode]-missing}" = "$mode" ]
	check "$name: reason ${O[reason]-missing}, want $reason" \
		[ "${O[reason]-missing}" = "$reason" ]
	check "$name: bytes not intact" [ "${O[intact]-missing}" = true ]
	if [ "$mode" = ntb ]; then
		n=${O[bytes]-missing}
		[ "$ROLE" = b ] && ntb=${O[ntb_tx_bytes]-missing} || ntb=${O[ntb_rx_bytes]-missing}
		check "$name: only $ntb of $n bytes crossed NTB" [ "$ntb" -ge "$n" ]
	fi
}

xfer_case small "--ulp" "--ulp --bytes 1" ntb none none
xfer_case stream "--ulp" "--ulp --bytes 33554432" ntb none none
xfer_case bidir "--ulp" "--ulp --bytes 8388608 --both --write-size 4000" ntb none none
xfer_case ipv6 "--ulp" "--ulp -6 --bytes 1048576" ntb none none
xfer_case server_plain "" "--ulp --bytes 100000" tcp no_ulp peer_no_offer
xfer_case client_plain "--ulp" "--bytes 100000" tcp peer_no_offer no_ulp
# Programs that do not set the ULP themselves, under ntbsmc_run: NTB, both ways.
RUNNER="$REPO/netlink-tool/ntbsmc_run" xfer_case preload "" "--bytes 1048576 --both" ntb none none
# An unprivileged user may opt in; the CLI shows it the namespace but refuses it
# every change, with exit status 4 and a message.
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
RUNNER=$NOBODY xfer_case unprivileged "--ulp" "--ulp --bytes 1048576" ntb none none
for cmd in "stats reset" "dev set $NTB disable"; do
	# shellcheck disable=SC2086
	msg=$(inns $NOBODY "$NTBSMC_CLI" $cmd 2>&1)
	rc=$?
	check "'ntbsmc $cmd' as nobody: exit $rc ($msg), want 4 with a message" \
		[ $rc = 4 -a -n "$msg" ]
done
check "dev set as nobody changed the device" \
	[ "$(jfield "$(cli -j dev show "$NTB")" enabled)" = true ]
# The connection dump shows a live connection on each host, in that host's
# namespace only: its ports, NTB mode, link group and the bytes it moved; with -a
# also host a's listener.
port=$((port + 1))
if [ "$ROLE" = a ]; then
	inns "$XFER" server "$MY_IP" $port --ulp --hold "$SYNC/release" >"$WORK/hold.json" &
	wait_for 90 "server on $port" pid_listening $! $port
	barrier hold-listening
else
	barrier hold-listening
	inns "$XFER" client "$PEER_IP" $port --ulp --bytes 100000 --both --hold "$SYNC/release" \
		>"$WORK/hold.json" &
fi
held_pid=$!
wait_for 90 "the held connection" test -s "$WORK/hold.json"
barrier hold-up
dump=$(cli -j conn show -a)
log "conn show -a: $dump"
python3 - "$(tail -1 "$WORK/hold.json")" "$dump" "$ROLE" $port <<'PY' ||
import json, sys
held, dump, role, port = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4])
lp, pp = held['local_port'], held['peer_port']
mine = [c for c in dump if c.get('local_port') == lp and c.get('peer_port') == pp]
assert len(mine) == 1, f'{len(mine)} entries for the held connection {lp}->{pp}'
c = mine[0]
assert c['mode'] == 'ntb', c
assert c['tx_bytes'] >= held['bytes'] and c['rx_bytes'] >= held['bytes'], c
assert c['lgr_id'] > 0 and c['rmb_size'] > 0 and c['peer_rmb_size'] > 0, c
assert c['tx_prod'] >= held['bytes'] and c['rx_cons'] >= held['bytes'], c
assert not [c for c in dump if c.get('local_port') == pp and c.get('peer_port') == lp], \
    'the peer host\'s socket shows in this namespace'
if role == 'a':
    assert [c for c in dump if c['mode'] == 'listen' and c['local_port'] == port], \
        'no listener in conn show -a'
PY
	check "conn show: the held connection is missing or wrong (see the log)" false
# Without privilege a user sees its own sockets only: nobody's listener, not
# root's held connection.
nport=$((port + 100))
inns $NOBODY "$XFER" server "$MY_IP" $nport --ulp >/dev/null &
npid=$!
wait_for 60 "nobody's listener" pid_listening $npid $nport
ndump=$(inns $NOBODY "$NTBSMC_CLI" -j conn show -a)
log "conn show -a as nobody: $ndump"
held_port=$(jfield "$(tail -1 "$WORK/hold.json")" local_port)
check "nobody does not see its own listener" has "$ndump" "\"local_port\":$nport,"
check "nobody sees root's connection (port $held_port)" \
	lacks "$ndump" "\"local_port\":$held_port,"
kill $npid
# ss -ti names the ULP of the held connection.
ssout=$(inns ss -tin "( sport = :$held_port )")
log "ss -tin: $ssout"
check "ss -ti does not show tcp-ulp-ntbsmc on the held connection" has "$ssout" tcp-ulp-ntbsmc
barrier hold-checked
[ "$ROLE" = a ] && touch "$SYNC/release"
wait $held_pid || check "the held connection failed: $(<"$WORK/hold.json")" false

barrier done
checked
