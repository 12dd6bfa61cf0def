#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs a list of selftests and prints their TAP lines.
#
#   guest-run.sh onevm TEST...     both hosts on this machine: namespaces a and b,
#                                  each owning one NTB port and one end of a veth
#                                  pair (make -C selftests run_tests, and make
#                                  check's one-VM guests through it)
#   guest-run.sh twovm VM TEST...  this VM is host VM (a or b); the other VM owns the
#                                  other NTB port, reached over virtio-net
#
# The NTB ports are this machine's; without any, the test fabric's driver is
# loaded if it was built and QEMU's ivshmem-doorbell is there; make check's
# guests (IVS_PARAMS set) always load it, and fail without it. With fewer ports
# than the topology needs every test is skipped (exit 4).
# Environment: REPO; from make check's job also KBUILD MODDIR IVS_PARAMS.
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
# QEMU's ivshmem-doorbell (1af4:1110): the emulated fabric's ports
ivshmem_here() {
	local d v i
	for d in /sys/bus/pci/devices/*; do
		read -r v <"$d/vendor" && read -r i <"$d/device" || continue
		[ "$v:$i" = 0x1af4:0x1110 ] && return 0
	done
	return 1
}
ivs=$MODDIR/selftests/fabric/ntb_hw_ivshmem.ko
if [ -n "${IVS_PARAMS:-}" ] ||
   { [ "$(ntb_ports)" = 0 ] && [ -e "$ivs" ] && ivshmem_here; }; then
	# make check's guests (IVS_PARAMS) must have the fabric: no skipping there;
	# its plx profile is a PEX-87xx model under the tree's ntb_hw_plx
	case " ${IVS_PARAMS:-} " in
	*" profile=plx "*) insmod "$MODDIR/ntb_hw_plx/ntb_hw_plx.ko" || exit 1 ;;
	esac
	# Debian's own kernel (the pkg boots): the NTB core is a module, DKMS's
	[ -e "/lib/modules/$(uname -r)/modules.dep" ] && modprobe ntb
	# shellcheck disable=SC2086
	insmod "$ivs" ${IVS_PARAMS:-} || exit 1
	wait_for 60 "$nports NTB port(s)" test "$(ntb_ports)" -ge "$nports"
	# The first TCP connection of each family flips static keys (the hash
	# secrets' net_get_random_once()): the kernel patches its text with int3
	# (text_poke_bp), and under QEMU's TCG another vCPU running that code was
	# seen to take the int3 after the patch was done, and oops (inet6_ehashfn,
	# at a test's first IPv6 connection, once). Both are made here, while
	# nothing else runs.
	ip link set lo up 2>/dev/null
	python3 - <<'PY'
import socket
for fam, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    try:
        with socket.socket(fam) as l:
            l.bind((addr, 0))
            l.listen(1)
            with socket.create_connection(l.getsockname()[:2], timeout=10):
                l.accept()[0].close()
    except OSError:
        pass
PY
fi
echo "TAP version 13"
echo "1..$#"
if [ "$(ntb_ports)" -lt "$nports" ]; then
	n=0
	for t in "$@"; do
		n=$((n + 1))
		echo "ok $n $(basename "$t" .sh) # SKIP $(ntb_ports) NTB port(s) here, $nports needed"
	done
	exit "$KSFT_SKIP"
fi

declare -A port_dev
for d in /sys/bus/ntb/devices/*; do
	d=$(basename "$d")
	port_dev[$(<"/sys/bus/pci/devices/$d/port")]=$d
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

n=0 failed=0
for t in "$@"; do
	n=$((n + 1))
	name=$(basename "$t" .sh)
	export SYNC=/run/out/sync/$topo-$name
	mkdir -p "$SYNC"
	out=/tmp/$name
	t0=$SECONDS
	ROLE=setup PEER=none bash "$REPO/selftests/$t" setup >"$out.setup" 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then
		pids=()
		for r in $roles; do
			# (in its host's namespace: lib.sh's inns)
			(role_env "$r"; exec timeout "$TEST_TIMEOUT" ${NS:+nsenter "--net=/run/netns/$NS"} \
				bash "$REPO/selftests/$t" run "$r") \
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
	echo "# time: $name took $((SECONDS - t0)) s"
	if [ "$rc" != 0 ] && [ "$rc" != "$KSFT_SKIP" ]; then
		echo "# kernel log at the failure of $name:"
		dmesg | tail -25 | sed 's/^/#   /'
	fi
	case $rc in
	0) echo "ok $n $name" ;;
	"$KSFT_SKIP") echo "ok $n $name # SKIP" ;;
	*) echo "not ok $n $name # exit $rc"; failed=1 ;;
	esac
done
if [ "$topo" = onevm ]; then
	ip link del va 2>/dev/null
	ip netns del a 2>/dev/null
	ip netns del b 2>/dev/null
fi
exit $failed
