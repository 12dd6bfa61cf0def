#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# After the handshake:
#   - a hostile window writer (fault point tx_bad_cursor): that connection resets, a
#     concurrent one finishes intact over NTB
#   - the link going down under a connection: reset within a bound; TCP while it
#     is down; NTB again once it is back
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

case $1 in
setup)
	ulp_setup
	exit ;;
cleanup)
	fault_clear
	ulp_cleanup
	exit ;;
esac

need_faults
ulp_wait_active
port=6100

# A hostile window writer: host b's send on one connection publishes an impossible
# cursor; that connection is reset, a concurrent one finishes intact over NTB. The
# healthy one is held open until the hostile one is over, so that it is there to
# be seen however fast its bytes go, and its orderly close afterwards shows that
# the reset left it alone.
good=$((port + 1)) bad=$((port + 2))
port=$((port + 2))
release=$SYNC/good-release
if [ "$ROLE" = a ]; then
	inns "$XFER" server "$MY_IP" $good --ulp --hold $release >$WORK/good.json &
	g=$!
	inns "$XFER" server "$MY_IP" $bad --ulp --allow-reset >$WORK/bad.json &
	b=$!
	wait_for 90 "servers" pid_listening $b $bad
	wait_for 90 "servers" pid_listening $g $good
	barrier hostile-listening
	wait $g || check "healthy connection failed: $(cat $WORK/good.json)" false
	wait $b
	out=$(tail -1 $WORK/good.json)
	log "healthy: $out"
	check "healthy connection: $(jfield "$out" mode) intact=$(jfield "$out" intact)" \
		[ "$(jfield "$out" mode)/$(jfield "$out" intact)" = ntb/true ]
	out=$(tail -1 $WORK/bad.json)
	log "hostile: $out"
	check "hostile connection not reset: $out" [ "$(jfield "$out" outcome)" = reset ]
else
	barrier hostile-listening
	inns "$XFER" client "$PEER_IP" $good --ulp --bytes 33554432 --hold $release \
		>$WORK/good.json &
	g=$!
	wait_for 90 "the healthy connection over NTB" ntb_conn_to $good
	fault_set tx_bad_cursor 1 0 $bad
	inns "$XFER" client "$PEER_IP" $bad --ulp --allow-reset --bytes 8388608 >$WORK/bad.json
	touch $release
	wait $g || check "healthy connection failed: $(cat $WORK/good.json)" false
	log "hostile (sender side): $(tail -1 $WORK/bad.json)"
fi
barrier hostile-done

# Link down under a running connection: both ends are reset within a bound; while
# the link is down new connections stay TCP; then it comes back.
port=$((port + 1))
if [ "$ROLE" = a ]; then
	inns "$XFER" server "$MY_IP" $port --ulp --allow-reset >$WORK/down.json &
	srv=$!
	wait_for 90 "server on $port" pid_listening $srv $port
	barrier down-listening
	barrier unbound
	t0=$(now_us)
	echo "ntbsmc-test: setup" >/dev/kmsg	# wait for a fresh link later
	wait $srv
	ms=$((($(now_us) - t0) / 1000))
	out=$(tail -1 $WORK/down.json)
	log "link down, server: $out (${ms} ms after the unbind was announced)"
	check "server not reset by link down: $out" [ "$(jfield "$out" outcome)" = reset ]
	check "server took ${ms} ms to see the reset" [ "$ms" -le 5000 ]
else
	barrier down-listening
	inns "$XFER" client "$PEER_IP" $port --ulp --allow-reset --bytes 17179869184 \
		>$WORK/down.json &
	cli=$!
	wait_for 90 "the connection over NTB" ntb_conn_to $port
	echo "ntbsmc-test: unbind" >/dev/kmsg
	run sh -c "echo $NTB >/sys/bus/pci/drivers/ntb_hw_ivshmem/unbind"
	t0=$(now_us)
	barrier unbound
	wait $cli
	ms=$((($(now_us) - t0) / 1000))
	out=$(tail -1 $WORK/down.json)
	log "link down, client: $out (${ms} ms after the unbind)"
	check "client not reset by link down: $out" [ "$(jfield "$out" outcome)" = reset ]
	check "client took ${ms} ms to see the reset" [ "$ms" -le 5000 ]
fi
xfer_one while_down "--ulp" "--ulp --bytes 100000 --both"
check "while_down: $(jfield "$out" mode) intact=$(jfield "$out" intact)" \
	[ "$(jfield "$out" mode)/$(jfield "$out" intact)" = tcp/true ]
if [ "$ROLE" = b ]; then
	echo "ntbsmc-test: setup" >/dev/kmsg
	run sh -c "echo $NTB >/sys/bus/pci/drivers/ntb_hw_ivshmem/bind"
	[ "$TOPO" = onevm ] && run "$NTBSMC_CLI" dev set "$NTB" netns b
fi
barrier rebound
ulp_wait_active
xfer_one after_down "--ulp" "--ulp --bytes 100000"
check "after the link returned: mode $(jfield "$out" mode)" [ "$(jfield "$out" mode)" = ntb ]
checked
