#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Which DMA engine a link group takes: one on the NTB device's own switch first
# (a PEX-87xx's plx_dma beside its NT port), then one on its NUMA node, then any.
#
#   soft_dma      engine 0, a platform device of its own, registered first
#   soft_dma.1    engine 1, below host a's NTB port (PCI): "on a's switch"
#
#   host a  ---- 4 MiB each way, 64 KiB writes, DMA ---->  host b
#   takes soft_dma.1 (switch)             takes soft_dma (any: no engine beside
#   although soft_dma comes first         its port, no NUMA in the guest)
#
# Each host's `ntbsmc dev show` names its engine and why; the transfer is checked
# byte for byte and by the counters of the path that carried it.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"
source "$REPO/selftests/dma/lib.sh"

setup() {
	# an engine left by another test would lack the second one
	unload_module soft_dma
	run insmod "$MODDIR/selftests/dma/soft_dma.ko" on_pci="$(dev_of_host a)"
	ulp_setup
}

test_phases setup dma_cleanup "$@"

[ -e /sys/bus/platform/devices/soft_dma.1 ] || fail "soft_dma made no engine below host a's port"
ulp_wait_active
port=6950
B=$((4 * 1048576))

dma_paths 4096 0
paths_case choice "--bytes $B --write-size 65536 --both"
check "choice: $(sent_by dma) of $B bytes by DMA" [ "$(sent_by dma)" -ge "$B" ]

want=soft_dma/any
[ "$ROLE" = a ] && want=soft_dma.1/switch
dev=$(cli -j dev show "$NTB")
log "dev show: $dev"
check "engine/choice $(jfield "$dev" dma_dev)/$(jfield "$dev" dma_choice), want $want" \
	[ "$(jfield "$dev" dma_dev)/$(jfield "$dev" dma_choice)" = "$want" ]
text=$(cli dev show "$NTB")
check "dev show's text names the engine and why: $text" \
	has "$text" "of ${want%/*} (${want#*/})"
checked
