#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntb_transport + ntb_netdev over the emulated fabric: ping, then a TCP stream over
# the ntb interface checked byte for byte, both directions.
#
# ntb_transport is loaded with as many queues as ntb_netdev uses (one): in 6.1,
# link-up allocates receive entries for every queue, and those of a queue that no
# client created are never freed (kmemleak: 96-byte objects from its link work).
source "$REPO/selftests/lib.sh"

setup() { load_module ntb_transport max_num_clients=1; load_module ntb_netdev; }
cleanup() { unload_module ntb_netdev; unload_module ntb_transport; }

test_phases setup cleanup "$@"

wait_for 30 "ntb_netdev interface on $NTB" ntb_netdev_of "$NTB"
dev=$(ntb_netdev_of "$NTB")
if [ -n "$NS" ]; then
	run in_first ip link set "$dev" netns "$NS"
fi
me=10.78.0.$([ "$ROLE" = a ] && echo 1 || echo 2)
peer=10.78.0.$([ "$ROLE" = a ] && echo 2 || echo 1)
run inns ip addr add "$me/24" dev "$dev"
run inns ip link set "$dev" up
barrier start
wait_for 60 "carrier on $dev" carrier_up "$dev"
barrier carrier
run inns ping -c 3 -W 5 "$peer"

# Each host in turn serves, the other sends 4 MiB; xfer checks every byte where it
# lands; the interface's counters show the bytes went through ntb_netdev.
size=$((4 * 1024 * 1024))
xfer=$REPO/selftests/ulp/xfer
for server in a b; do
	if [ "$ROLE" = "$server" ]; then
		rx_bytes_of rx0 "$dev"
		inns "$xfer" server "$me" 5001 >"$WORK/rx.json" &
		sink=$!
		wait_for 60 "server listening" pid_listening $sink 5001
		barrier "listening_$server"
		wait "$sink" || fail "stream from $PEER: $(<"$WORK/rx.json")"
		rx_bytes_of rx "$dev"
		rx=$((rx - rx0))
		[ "$rx" -ge "$size" ] || fail "only $rx bytes crossed $dev for $size sent"
		log "$size bytes from $PEER intact over $dev ($rx bytes on the interface)"
		barrier "checked_$server"
	else
		barrier "listening_$server"
		run inns "$xfer" client "$peer" 5001 --bytes $size
		barrier "checked_$server"
	fi
done
barrier done
