#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: two VMs joined by an emulated NTB link and by virtio-net, booting
# Debian 12's own kernel (no kernel is built): apt installs its image in a
# throwaway root (an overlay of this host's root on a tmpfs, vm/pkg.sh), then
# ntbsmc's Debian packages, whose DKMS builds ntbsmc and the NTB core there;
# the VMs boot that kernel on that root. In VM b an unmodified server runs
# under ntbsmc_run, a second one without ntbsmc; VM a connects to both (an
# unmodified client under ntbsmc_run, a client that sets TCP_ULP, a plain TCP
# client) and shows how each connection ran, whether the bytes arrived intact,
# throughput and round trip next to TCP between the same VMs, then both VMs'
# link group and connection views (ntbsmc linkgroup/conn show).
# Only the emulated NTB port's driver (selftests/fabric, built against the
# kernel's headers) and the test programs come from the tree.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO" || exit 1
source "$REPO/selftests/vm/host.sh"
source "$REPO/selftests/vm/pkg.sh"

t0=$SECONDS
"$REPO/selftests/vm/deps.sh" build-essential pkg-config kmod cpio xz-utils openssl \
	qemu-system-x86 linux-source-6.1 linux-headers-amd64 libnl-3-dev libnl-genl-3-dev \
	python3 iproute2 procps || exit 1
"$REPO/debian/deps.sh" || exit 1
make -s -C "$REPO" tools || exit 1

RUN=${NTBSMC_OUT:-$REPO/selftests/output}/demo-$(date +%Y%m%d-%H%M%S)
mkdir -p "$RUN"
trap 'vm_cleanup; pkg_teardown' EXIT
PKG_BOOT=demo
record() {
	echo "$1" >>"$RUN/results"
	case $1 in "not ok"*) echo "demo: ${1#not ok demo/}" >&2 ;; esac
}
rel=$(pkg_stock_releases 6.1)
[ -n "$rel" ] || { echo "demo: no Debian 6.1 kernel headers (apt install linux-headers-amd64)" >&2; exit 1; }
echo "Installing Debian's kernel $rel and ntbsmc's packages in a throwaway root (DKMS builds the modules)..."
pkg_up "$rel" || exit 1
grep -q "^not ok" "$RUN/results" 2>/dev/null && exit 1
pkg_fabric "$rel" "$RUN/modules" || { echo "demo: the test fabric's driver did not build: see $RUN/modules/build.log" >&2; exit 1; }

BYTES=${DEMO_BYTES:-67108864}
for vm in a b; do
	cat >"$RUN/job.$vm" <<JOB
export REPO=$REPO MODDIR=$RUN/modules BYTES=$BYTES
bash $REPO/selftests/vm/demo-guest.sh $vm >/run/out/demo.$vm 2>&1
JOB
done
vm_server fabric || exit 1
echo "Booting two VMs on Debian's kernel $rel (QEMU, software emulation; about a minute)..."
KIMAGE=$PKG_ROOT/boot/vmlinuz-$rel KINITRD=$PKG_ROOT/boot/initrd.img-$rel VM_ROOT=$PKG_ROOT vm_start_pair
vm_wait a b
echo
cat "$RUN/demo.a" 2>/dev/null || { echo "VM a produced no output: see $RUN"; exit 1; }
sed -n '/^--- VM b/,$p' "$RUN/demo.b" 2>/dev/null
if splats=$(vm_splats "$RUN/console.a.log" "$RUN/console.b.log"); then
	echo "Guest kernel logs: clean ($RUN)"
else
	echo "$splats"
	echo "Kernel problems in the guest logs ($RUN)"
	exit 1
fi
echo "make demo: $((SECONDS - t0)) s"
grep -q "^RESULT ok" "$RUN/demo.a"
