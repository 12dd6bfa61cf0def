#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntb_transport + ntb_netdev over the emulated fabric: ping, then a TCP stream over
# the ntb interface checked byte for byte, both directions.
#
# ntb_transport is loaded with as many queues as ntb_netdev uses (one): in 6.1,
# link-up allocates receive entries for every queue, and those of a queue that no
# client created are never freed (kmemleak: 96-byte objects from its link work).
source "$REPO/selftests/lib.sh"

case $1 in
setup) load_module ntb_transport max_num_clients=1; load_module ntb_netdev; exit ;;
cleanup) unload_module ntb_netdev; unload_module ntb_transport; exit ;;
esac

wait_for 30 "ntb_netdev interface on $NTB" ntb_netdev_of "$NTB"
dev=$(ntb_netdev_of "$NTB")
if [ -n "$NS" ]; then
	run ip link set "$dev" netns "$NS"
fi
me=10.78.0.$([ "$ROLE" = a ] && echo 1 || echo 2)
peer=10.78.0.$([ "$ROLE" = a ] && echo 2 || echo 1)
run inns ip addr add "$me/24" dev "$dev"
run inns ip link set "$dev" up
barrier start
wait_for 60 "carrier on $dev" carrier_up "$dev"
barrier carrier
run inns ping -c 3 -W 5 "$peer"

# Each host in turn serves, the other sends 4 MiB of random bytes; compare sums and
# check the bytes went through the ntb interface (its counters).
size=$((4 * 1024 * 1024))
for server in a b; do
	if [ "$ROLE" = "$server" ]; then
		rx0=$(inns cat /sys/class/net/$dev/statistics/rx_bytes)
		inns python3 "$REPO/selftests/fabric/sink.py" "$me" 5001 "$WORK/rx.$ROLE" &
		sink=$!
		wait_for 60 "sink listening" listening 5001
		barrier "listening_$server"
		wait "$sink" || fail "sink failed"
		rx=$(($(inns cat /sys/class/net/$dev/statistics/rx_bytes) - rx0))
		sum=$(sha256sum <"$WORK/rx.$ROLE" | cut -d' ' -f1)
		[ "$sum" = "$(get tx_sum)" ] || fail "stream: received $sum, sent $(get tx_sum)"
		[ "$rx" -ge "$size" ] || fail "only $rx bytes crossed $dev for $size sent"
		log "$size bytes from $PEER intact over $dev ($rx bytes on the interface)"
		barrier "checked_$server"
	else
		head -c $size /dev/urandom >"$WORK/tx.$ROLE"
		put tx_sum "$(sha256sum <"$WORK/tx.$ROLE" | cut -d' ' -f1)"
		barrier "listening_$server"
		run inns python3 "$REPO/selftests/fabric/source.py" "$peer" 5001 "$WORK/tx.$ROLE"
		barrier "checked_$server"
		rm -f "$SYNC/$ROLE.val.tx_sum"
	fi
done
barrier done
