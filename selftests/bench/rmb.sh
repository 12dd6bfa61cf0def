#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench, receive-buffer part: ntbsmc stream throughput at 64 KiB and 1 MiB
# writes with 256 KiB, 1 MiB (the default) and 2 MiB receive buffers (the most a
# connection gets from the emulated 8 MiB window, see ulp/buffers.sh), side by
# side in one run. A stream keeps going only while the peer's buffer holds more
# than the data the sender writes during one doorbell-and-wakeup round trip;
# under emulation that round trip is ~100 us (about 1 us on hardware), so the
# buffer this takes here is ~100 times what hardware needs. Also the doorbells
# each end rang and how often the sender found the peer's buffer full.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"
source "$REPO/selftests/bench/lib.sh"

case $1 in
setup) exit 0 ;;
cleanup) ulp_cleanup; exit 0 ;;
esac

once_per_kernel ulp_setup
barrier rmb-loaded
ulp_wait_active
SRV=$([ "$ROLE" = a ] && echo "$PEER_IP" || echo "$MY_IP")	# host b serves
port=$((7000 + RANDOM % 1000))
[ "$ROLE" = a ] && put rmb-port "$port" || port=$(get rmb-port)
if [ "$ROLE" = b ]; then
	inns "$NB" server --ulp "$SRV" "$port" &
	wait_for 60 "nbench server" pid_listening $! "$port"
fi
counter() { jfield "$1" "$2"; }
for kb in 256 1024 2048; do
	sctl net.ntbsmc.rmb_kb=$kb || fail "cannot set rmb_kb"
	barrier "rmb-$kb"
	if [ "$ROLE" = a ]; then
		for w in 65536 1048576; do
			s0=$(cli -j stats)
			out=$(inns "$NB" client --ulp "$SRV" "$port" stream $w "$SECS"); jmap O "$out"
			s1=$(cli -j stats)
			# Sizes are per connection: the receiver's, which the sender reports.
			[ "$(echo "$out" | awk '{print $NF}')" = "ntb:${kb}K" ] ||
				fail "not over NTB into a $kb KiB buffer: $out"
			d=$(($(counter "$s1" doorbells_tx) - $(counter "$s0" doorbells_tx)))
			f=$(($(counter "$s1" buffer_full) - $(counter "$s0" buffer_full)))
			bench "ntbsmc ${kb} KiB buffers, ${w}B writes: MB/s, doorbells the sender rang, buffer full" \
				"$(echo "$out" | awk '{print $3}'), $d, $f [$(echo "$out" | awk '{print $NF}')]"
		done
	fi
	barrier "rmb-$kb-done"
done
if [ "$ROLE" = b ]; then
	kill %1 2>/dev/null
	wait 2>/dev/null
fi
barrier rmb-all-done
