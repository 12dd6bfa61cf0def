#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench, ULP part: ntbsmc against TCP over the ordinary link (veth in one VM,
# virtio-net between VMs) and TCP over ntb_netdev, side by side in one run:
# stream at 1 KiB, 64 KiB and 1 MiB writes, 1-byte round trips (interrupt mode and
# busy-poll), connections per second.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"
source "$REPO/selftests/bench/lib.sh"

# Busy-poll budget: a round trip takes ~200 us under emulation, so the 50 us
# usual on hardware would expire before every answer.
BP_US=${BENCH_BUSY_POLL_US:-1000}

case $1 in
setup) exit 0 ;;
cleanup) unload_module ntb_netdev; unload_module ntb_transport; unload_module ntbsmc; exit 0 ;;
esac

# run_set LABEL SERVER_ADDR [--ulp]: host b serves, host a measures.
run_set() {
	local label=$1 addr=$2 ulp=${3:-} port
	port=$((7000 + RANDOM % 1000))
	[ "$ROLE" = a ] && put "port-$label" "$port" || port=$(get "port-$label")
	if [ "$ROLE" = b ]; then
		# shellcheck disable=SC2086
		inns "$NB" server $ulp "$addr" "$port" &
		wait_for 60 "nbench server" pid_listening $! "$port"
		barrier "$label-up"
		if [ -n "$ulp" ]; then
			barrier "$label-bp-on"
			inns sysctl -qw net.ntbsmc.busy_poll_us="$BP_US"
			barrier "$label-bp-set"
			barrier "$label-bp-off"
			inns sysctl -qw net.ntbsmc.busy_poll_us=0
		fi
		barrier "$label-done"
		kill %1 2>/dev/null
		wait 2>/dev/null
		return
	fi
	barrier "$label-up"
	local w out
	for w in 1024 65536 1048576; do
		# shellcheck disable=SC2086
		out=$(inns "$NB" client $ulp "$addr" "$port" stream $w "$SECS")
		bench "$label stream ${w}B writes (MB/s)" "$(echo "$out" | awk '{print $3}') [$(echo "$out" | awk '{print $NF}')]"
	done
	# shellcheck disable=SC2086
	out=$(inns "$NB" client $ulp "$addr" "$port" rr 2000)
	bench "$label 1-byte round trip median/p99 (us)" "$(echo "$out" | awk '{print $3 " / " $6}') [$(echo "$out" | awk '{print $NF}')]"
	if [ -n "$ulp" ]; then
		# both ends spin (the namespace default, sysctl busy_poll_us)
		barrier "$label-bp-on"
		inns sysctl -qw net.ntbsmc.busy_poll_us="$BP_US"
		barrier "$label-bp-set"
		# shellcheck disable=SC2086
		out=$(inns "$NB" client $ulp "$addr" "$port" rr 2000)
		inns sysctl -qw net.ntbsmc.busy_poll_us=0
		barrier "$label-bp-off"
		bench "$label busy-poll ${BP_US}us round trip median/p99 (us)" "$(echo "$out" | awk '{print $3 " / " $6}') [$(echo "$out" | awk '{print $NF}')]"
	fi
	# shellcheck disable=SC2086
	out=$(inns "$NB" client $ulp "$addr" "$port" crr "$SECS")
	bench "$label connections per second" "$(echo "$out" | awk '{print $2}') [$(echo "$out" | awk '{print $NF}')]"
	barrier "$label-done"
}

SRV=$([ "$ROLE" = a ] && echo "$PEER_IP" || echo "$MY_IP")	# host b serves

# TCP over the ordinary link between the hosts
run_set "tcp-$([ "$TOPO" = onevm ] && echo veth || echo virtio)" "$SRV"

# ntbsmc
once_per_kernel ulp_setup
barrier ntbsmc-loaded
ulp_wait_active
run_set ntbsmc "$SRV" --ulp
# Closed connections hold the module until TCP has finished with them.
once_per_kernel wait_for 180 "ntbsmc to unload" rmmod ntbsmc
barrier ntbsmc-unloaded

# TCP over ntb_netdev
once_per_kernel load_module ntb_transport max_num_clients=1	# see fabric/ntb_transport.sh
once_per_kernel load_module ntb_netdev
barrier netdev-loaded
wait_for 30 "ntb_netdev interface" ntb_netdev_of "$NTB"
dev=$(ntb_netdev_of "$NTB")
[ -n "$NS" ] && ip link set "$dev" netns "$NS"
inns ip addr add "10.78.0.$([ "$ROLE" = a ] && echo 1 || echo 2)/24" dev "$dev"
inns ip link set "$dev" up
barrier netdev-up
wait_for 60 "ntb_netdev carrier" carrier_up "$dev"
run_set tcp-ntb_netdev 10.78.0.2
barrier all-done
