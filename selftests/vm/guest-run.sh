#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs a list of selftests inside a guest and prints their TAP lines.
#
#   guest-run.sh onevm TEST...     both hosts in this VM: namespaces a and b, each
#                                  owning one NTB port and one end of a veth pair
#   guest-run.sh twovm VM TEST...  this VM is host VM (a or b); the other VM owns the
#                                  other NTB port, reached over virtio-net
#
# Environment from the host job: REPO KBUILD MODDIR IVS_PARAMS.
set -u
topo=$1
shift
if [ "$topo" = twovm ]; then
	me=$1
	shift
fi
source "$REPO/selftests/lib.sh"
# One test's bound (the slowest, ulp/hostile.sh, takes about two minutes).
TEST_TIMEOUT=${TEST_TIMEOUT:-1200}
ROLE=${me:-setup}
PEER=none
export REPO KBUILD MODDIR TOPO=$topo

nports=2
[ "$topo" = twovm ] && nports=1
# shellcheck disable=SC2086
insmod "$MODDIR/selftests/fabric/ntb_hw_ivshmem.ko" ${IVS_PARAMS:-} || exit 1
wait_for 60 "$nports NTB port(s)" test "$(ls /sys/bus/ntb/devices 2>/dev/null | wc -l)" -ge "$nports"

declare -A port_dev
for d in /sys/bus/ntb/devices/*; do
	d=$(basename "$d")
	port_dev[$(cat "/sys/bus/pci/devices/$d/port")]=$d
done

declare -A ns ip ip6
ip[a]=10.77.0.1 ip[b]=10.77.0.2
ip6[a]=fd77::1 ip6[b]=fd77::2
if [ "$topo" = onevm ]; then
	ns[a]=a ns[b]=b
	ip netns add a && ip netns add b
	ip link add va netns a type veth peer name vb netns b
	for h in a b; do
		ip -n "$h" link set lo up
		ip -n "$h" link set "v$h" up
		ip -n "$h" addr add "${ip[$h]}/24" dev "v$h"
		ip -n "$h" addr add "${ip6[$h]}/64" dev "v$h" nodad
	done
	roles="a b"
else
	ns[$me]=""
	ip link set eth0 up
	ip addr add "${ip[$me]}/24" dev eth0
	ip addr add "${ip6[$me]}/64" dev eth0 nodad
	roles=$me
fi

# Host a owns port 0, host b port 1.
declare -A dev_of=([a]=${port_dev[0]:-} [b]=${port_dev[1]:-})

role_env() {
	local r=$1
	ROLE=$r PEER=$([ "$r" = a ] && echo b || echo a) NTB=${dev_of[$r]} NS=${ns[$r]:-}
	MY_IP=${ip[$r]} PEER_IP=${ip[$PEER]} MY_IP6=${ip6[$r]} PEER_IP6=${ip6[$PEER]}
	export ROLE PEER NTB NS MY_IP PEER_IP MY_IP6 PEER_IP6
}

n=0
for t in "$@"; do
	n=$((n + 1))
	name=$(basename "$t" .sh)
	export SYNC=/run/out/sync/$topo-$name
	mkdir -p "$SYNC"
	out=/tmp/$name
	ROLE=setup PEER=none bash "$REPO/selftests/$t" setup >"$out.setup" 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then
		pids=()
		for r in $roles; do
			(role_env "$r"; exec timeout "$TEST_TIMEOUT" bash "$REPO/selftests/$t" run "$r") \
				>"$out.$r" 2>&1 &
			pids+=($!)
		done
		for p in "${pids[@]}"; do
			wait "$p"
			r2=$?
			[ "$rc" = 0 ] && rc=$r2
			# timeout(1) led the role's process group: whatever the role
			# left running goes with it, before cleanup unloads modules.
			kill -KILL -- -"$p" 2>/dev/null
		done
	fi
	ROLE=cleanup PEER=none bash "$REPO/selftests/$t" cleanup >"$out.cleanup" 2>&1 || true
	cat "$out".* | sed 's/^\([^#]\)/# \1/'
	if [ "$rc" != 0 ] && [ "$rc" != "$KSFT_SKIP" ]; then
		echo "# kernel log at the failure of $name:"
		dmesg | tail -25 | sed 's/^/#   /'
	fi
	case $rc in
	0) echo "ok $n $name" ;;
	"$KSFT_SKIP") echo "ok $n $name # SKIP" ;;
	*) echo "not ok $n $name # exit $rc" ;;
	esac
done
