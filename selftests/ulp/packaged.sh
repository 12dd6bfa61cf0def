#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntbsmc as installed by its Debian packages on Debian's own kernel (make
# check's pkg boots: the guest boots Debian's unmodified kernel image on a
# throwaway root where ntbsmc-dkms and ntbsmc-tools were installed with dpkg -i
# and DKMS built ntbsmc, ntb_hw_plx and, from linux-source, the NTB core and
# plx_dma; see vm/pkg.sh): modprobe loads DKMS's modules, of the package's
# version, in their order, the package's tools set the hosts up, and an
# unmodified program under the package's ntbsmc_run runs over NTB, checked byte
# for byte, by its mode and by the package's ntbsmc stats; on Debian's 6.12 a
# static program of raw system calls does under ntbsmc_run --bpf, and on its
# 6.1 --bpf refuses.
# The NTB ports are the test fabric's (its driver built against the kernel's
# stock headers), with the fabric's own device profile (PKG_PROFILE=default)
# or as modelled PEX-87xx NT ports under the package's ntb_hw_plx
# (PKG_PROFILE=plx, packaged_plx.sh). Only that driver and xfer come from the
# tree.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

NTBSMC_CLI=/usr/sbin/ntbsmc
RUNNER=/usr/sbin/ntbsmc_run
PROFILE=${PKG_PROFILE:-default}
IVS=$MODDIR/selftests/fabric/ntb_hw_ivshmem.ko

# The fabric again, with this test's profile: for plx the ports appear only
# when the package's ntb_hw_plx drives the modelled chip.
setup() {
	[ -x $NTBSMC_CLI ] && [ -x $RUNNER ] || { echo "no packaged tools"; exit 1; }
	unload_module ntbsmc
	unload_module ntb_hw_ivshmem
	[ "$PROFILE" = plx ] && { run modprobe ntb_hw_plx || exit 1; }
	run insmod "$IVS" profile="$PROFILE" || exit 1
	wait_for 60 "2 NTB ports" test "$(ntb_ports)" -ge 2 || exit 1
	run modprobe ntbsmc || exit 1
	for h in a b; do
		run $NTBSMC_CLI dev set "$(dev_of_host $h)" netns "$h" || exit 1
	done
}
cleanup() { unload_module ntbsmc; }

test_phases setup cleanup "$@"

want=$(<"$REPO/VERSION")
log "kernel $(uname -r), $(uname -v); profile $PROFILE; $($NTBSMC_CLI -V)"
# Both hosts are one kernel: host a checks the modules.
if [ "$ROLE" = a ]; then
	for m in ntb plx_dma ntb_hw_plx ntbsmc; do
		p=$(modinfo -n $m 2>&1)
		check "$m from DKMS: $p" has "$p" /updates/dkms/$m.ko
	done
	check "module ntbsmc version $(cat /sys/module/ntbsmc/version 2>&1), want $want" \
		[ "$(cat /sys/module/ntbsmc/version 2>/dev/null)" = "$want" ]
	check "ntb_hw_plx version $(modinfo -F version ntb_hw_plx 2>&1), want $want" \
		[ "$(modinfo -F version ntb_hw_plx 2>/dev/null)" = "$want" ]
	# modprobe loaded the core first, for ntbsmc, which uses it
	check "ntb (the NTB core) loaded, used by ntbsmc: $(grep '^ntb ' /proc/modules)" \
		has "$(grep '^ntb ' /proc/modules)" ntbsmc
	# plx_dma loads (no PEX DMA function here to bind) and unloads
	check "modprobe plx_dma: $(modprobe plx_dma 2>&1; echo "exit $?")" \
		grep -q '^plx_dma ' /proc/modules
	modprobe -r plx_dma
	if [ "$PROFILE" = plx ]; then
		check "the package's ntb_hw_plx drives the ports: $(grep '^ntb_hw_plx ' /proc/modules)" \
			[ -e "/sys/kernel/debug/ntb_hw_plx/$NTB/info" ]
	fi
fi
check "ntbsmc -V: $($NTBSMC_CLI -V 2>&1)" has "$($NTBSMC_CLI -V 2>&1)" "version $want "

ulp_wait_active
port=6900
before=$(jfield "$(inns $NTBSMC_CLI -j stats)" tx_bytes)
[ "$before" = missing ] && before=0
xfer_one packaged "" "--bytes 1048576 --both"
check "mode ${O[mode]-missing}, want ntb (reason ${O[reason]-missing})" \
	[ "${O[mode]-missing}" = ntb ]
check "bytes not intact" [ "${O[intact]-missing}" = true ]
after=$(jfield "$(inns $NTBSMC_CLI -j stats)" tx_bytes)
[ "$after" = missing ] && after=0
check "ntbsmc stats: $before -> $after bytes sent over NTB, want 1 MiB more" \
	[ $((after - before)) -ge 1048576 ]

# The package's BPF selector on Debian's own kernel: 6.12 has the hook, and a
# static program of raw system calls (ulp/rawsys) in host b's namespace goes
# over NTB under it; on 6.1 it refuses, naming the preload helper.
if bpf_hook; then
	raw_case packaged_bpf a "" "--proto" "$RUNNER --bpf --scope netns" "--bytes 1048576" \
		ntb none none
elif [ "$ROLE" = a ]; then
	err=$($RUNNER --bpf true 2>&1)
	rc=$?
	check "--bpf without the hook: exit $rc, want 1 ($err)" [ $rc = 1 ]
	check "--bpf without the hook: message: $err" has "$err" "Only the preload helper works here"
fi
checked
