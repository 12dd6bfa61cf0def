# SPDX-License-Identifier: GPL-2.0
# Helpers for the DMA tests (guest side): the software engine and the copy paths.

SOFT_DMA=/sys/module/soft_dma/parameters
SOFT_DMA_DEV=/sys/bus/platform/devices/soft_dma
NTBSMC_PARAMS=/sys/module/ntbsmc/parameters

# The software engine's profile (soft_dma.c): which real provider it behaves like.
# The two VMs' ports are the PEX-87xx model, so their engine is plx_dma's double:
# one that cannot be terminated. SOFT_DMA_PROFILE overrides.
dma_profile() {
	echo "${SOFT_DMA_PROFILE:-$([ "$TOPO" = twovm ] && echo plx || echo soft)}"
}

# dma_load [PARAM=VALUE...]: loads the software engine with this boot's profile.
dma_load() {
	run insmod "$MODDIR/selftests/dma/soft_dma.ko" profile="$(dma_profile)" "$@"
}

dma_setup() {
	if grep -q "^soft_dma " /proc/modules &&
	   [ "$(<"$SOFT_DMA/profile")" != "$(dma_profile)" ]; then
		wait_for 30 "soft_dma to unload" rmmod soft_dma
	fi
	grep -q "^soft_dma " /proc/modules || dma_load
	ulp_setup
}

dma_cleanup() {
	ulp_cleanup
	unload_module soft_dma
}

# dma_paths DMA_THRESHOLD ZEROCOPY_THRESHOLD: this host's copy-path settings.
dma_paths() {
	sctl net.ntbsmc.dma_threshold="$1" net.ntbsmc.zerocopy_threshold="$2" ||
		fail "cannot set the copy-path sysctls"
}

# The DMA channel this host's NTB port writes with, or "null".
dma_chan() {
	jfield "$(cli -j dev show "$NTB")" dma_chan
}

# ntb_stat KEY: one of this host's ntbsmc counters.
ntb_stat() {
	jfield "$(cli -j stats)" "$1"
}

# pins_balanced: every page pinned with FOLL_PIN (zero-copy) was unpinned.
pins_balanced() {
	local k v acq=0 rel=0
	while read -r k v; do
		case $k in
		nr_foll_pin_acquired) acq=$v ;;
		nr_foll_pin_released) rel=$v ;;
		esac
	done </proc/vmstat
	[ "$acq" = "$rel" ]
}

# paths_case NAME CLIENT_OPTS: a transfer from host b to host a (with --both, back
# too); checks that it ran over NTB intact; $out is this host's JSON line.
paths_case() {
	xfer_one "$1" "--ulp" "--ulp $2"
	check "$1: mode ${O[mode]-missing} intact ${O[intact]-missing}" \
		[ "${O[mode]-missing}/${O[intact]-missing}" = ntb/true ]
}

# sent_by KIND: bytes this host's connection sent by KIND (cpu, dma, zc).
sent_by() {
	jfield "$out" "ntb_${1}_bytes"
}

# engine_bytes: the bytes of the descriptors soft_dma ran since it was loaded.
engine_bytes() {
	local bytes rest
	read -r bytes rest <"$SOFT_DMA/busy"
	echo "$bytes"
}
