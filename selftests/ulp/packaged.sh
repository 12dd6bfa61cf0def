#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntbsmc as installed by its Debian packages (make check's pkg boot: the guest's
# root is a throwaway root where ntbsmc-dkms and ntbsmc-tools were installed
# with dpkg -i and DKMS built the module for this kernel; see vm/pkg.sh):
# modprobe loads DKMS's module, of the package's version, the package's tools
# set the hosts up, and an unmodified program under the package's ntbsmc_run
# runs over NTB, checked byte for byte, by its mode and by the package's
# ntbsmc stats.
# Only the NTB port's driver (the test fabric) and xfer come from the tree.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

NTBSMC_CLI=/usr/sbin/ntbsmc
RUNNER=/usr/sbin/ntbsmc_run

setup() {
	[ -x $NTBSMC_CLI ] && [ -x $RUNNER ] || { echo "no packaged tools"; exit 1; }
	run modprobe ntbsmc || exit 1
	for h in a b; do
		run $NTBSMC_CLI dev set "$(dev_of_host $h)" netns "$h" || exit 1
	done
}
cleanup() { run modprobe -r ntbsmc; }

test_phases setup cleanup "$@"

want=$(cat "$REPO/VERSION")
path=$(modinfo -n ntbsmc)
log "module $path, version $(cat /sys/module/ntbsmc/version); $($NTBSMC_CLI -V)"
check "module from DKMS: $path" has "$path" /updates/dkms/ntbsmc.ko
check "module version $(cat /sys/module/ntbsmc/version 2>&1), want $want" \
	[ "$(cat /sys/module/ntbsmc/version 2>/dev/null)" = "$want" ]
check "ntbsmc -V: $($NTBSMC_CLI -V 2>&1)" has "$($NTBSMC_CLI -V 2>&1)" "version $want "
# the package's NTB hardware driver for PEX-87xx NT ports, built by DKMS too
plx=$(modinfo -n ntb_hw_plx 2>&1)
check "ntb_hw_plx from DKMS: $plx" has "$plx" /updates/dkms/ntb_hw_plx.ko
check "ntb_hw_plx version $(modinfo -F version ntb_hw_plx 2>&1), want $want" \
	[ "$(modinfo -F version ntb_hw_plx 2>/dev/null)" = "$want" ]

ulp_wait_active
port=6900
before=$(jfield "$(inns $NTBSMC_CLI -j stats)" tx_bytes)
[ "$before" = missing ] && before=0
xfer_one packaged "" "--bytes 1048576 --both"
check "mode $(jfield "$out" mode), want ntb (reason $(jfield "$out" reason))" \
	[ "$(jfield "$out" mode)" = ntb ]
check "bytes not intact" [ "$(jfield "$out" intact)" = true ]
after=$(jfield "$(inns $NTBSMC_CLI -j stats)" tx_bytes)
[ "$after" = missing ] && after=0
check "ntbsmc stats: $before -> $after bytes sent over NTB, want 1 MiB more" \
	[ $((after - before)) -ge 1048576 ]
checked
