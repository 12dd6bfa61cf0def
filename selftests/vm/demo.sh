#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: two VMs joined by an emulated NTB link and by virtio-net. In VM b an
# unmodified server runs under ntbsmc_run, a second one without ntbsmc; VM a
# connects to both (an unmodified client under ntbsmc_run, a client that sets
# TCP_ULP, a plain TCP client) and shows how each connection ran, whether the
# bytes arrived intact, throughput and round trip next to TCP between the same
# VMs, then both VMs' link group and connection views (ntbsmc linkgroup/conn show).
# On the guest kernel without debug options (DEMO_KERNEL=debug for the other).
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO" || exit 1
source "$REPO/selftests/vm/host.sh"
vm_prepare "${DEMO_KERNEL:-nodebug}" || exit 1

RUN=${NTBSMC_OUT:-$REPO/selftests/output}/demo-$(date +%Y%m%d-%H%M%S)
mkdir -p "$RUN"
trap vm_cleanup EXIT

BYTES=${DEMO_BYTES:-67108864}
cat >"$RUN/job.a" <<JOB
export REPO=$REPO KBUILD=$KBUILD BYTES=$BYTES
bash $REPO/selftests/vm/demo-guest.sh a >/run/out/demo.a 2>&1
JOB
cat >"$RUN/job.b" <<JOB
export REPO=$REPO KBUILD=$KBUILD BYTES=$BYTES
bash $REPO/selftests/vm/demo-guest.sh b >/run/out/demo.b 2>&1
JOB
vm_server fabric || exit 1
echo "Booting two VMs (QEMU, software emulation; about a minute)..."
vm_start_pair
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
grep -q "^RESULT ok" "$RUN/demo.a"
