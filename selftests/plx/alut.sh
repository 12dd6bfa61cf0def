#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntb_hw_plx's split of BAR2 by the A-LUT, end to end over the modelled
# PEX-87xx NT ports (ntb_hw_ivshmem profile=plx): both hosts bind their port
# again with the chip's A-LUT on and BAR2 split into 8 windows (make stress:
# into 2 first; the same code with another count) (plx_split, handed to
# ntb_hw_plx as its split option would be), and ntb_tool
# writes different data through every window, both ways, the B2B window's too.
#
# Proves: the driver's window count, slice addresses and alignment for a split
# BAR2; that every A-LUT entry it permits maps its slice of BAR2 onto the very
# memory the client set as that window's translation, and no entry past the
# translation's size is permitted (the model checks each entry at the A-LUT's
# switch-on: bad_xlat, and counts them: alut); the windows' data arriving
# intact; the port unbound and bound again, and back unsplit at the end.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/fabric/lib.sh"

T=$NTB_DBG/ntb_tool/$NTB
pci=/sys/bus/pci/devices/$NTB
param=/sys/module/ntb_hw_ivshmem/parameters/plx_split
# (each window's data is read back through ntb_tool's debugfs, about 4 s a
# MiB in the debug guest: 256 KiB, 8 A-LUT entries of a window, prove the
# same as 1 MiB did in a third of the time)
size=$((256 * 1024))

# rebind SPLIT: this host's port, bound again with BAR2 split 2^SPLIT ways.
rebind() {
	echo "ntbsmc-test: unbind" >/dev/kmsg
	run sh -c "echo $NTB >/sys/bus/pci/drivers/ntb_hw_ivshmem/unbind"
	run sh -c "echo $1 >$param"
	echo "ntbsmc-test: setup" >/dev/kmsg
	run sh -c "echo $NTB >/sys/bus/pci/drivers/ntb_hw_ivshmem/bind"
}

setup() { load_module ntb_tool; }
cleanup() {
	# a failed run may have left windows set, and the port split
	for t in "$NTB_DBG"/ntb_tool/*; do
		[ -d "$t" ] && tool_windows_clear "$t"
	done
	unload_module ntb_tool
	if [ -e "$param" ] && [ "$(<"$param")" != 0 ]; then
		for NTB in /sys/bus/pci/drivers/ntb_hw_ivshmem/0000:*; do
			NTB=${NTB##*/}
			rebind 0
		done
	fi
}

test_phases setup cleanup "$@"

[ -e "$pci/plx_model" ] || skip "$NTB is not a modelled PLX port (ntb_hw_ivshmem profile=plx)"

for split in $(tier 3 "1 3"); do
	barrier "split$split"
	rebind $split
	barrier "bound$split"
	tool_link "$T"
	msg=$(dmesg | grep "$NTB: NT0 " | tail -1)
	check "split $split: ntb_hw_plx says: $msg" has "$msg" ", $(((1 << split) + 1)) memory windows, 12 scratchpads, A-LUT"
	tool_windows "$T" $size "s$split."
	check "split $split: $TOOL_MW windows, want $(((1 << split) + 1))" \
		[ "$TOOL_MW" = $(((1 << split) + 1)) ]
	# each of BAR2's windows: 256 KiB set of its 8 MiB / 2^split, in
	# entries of 8 MiB / 256
	want=$(((1 << split) * size / (8 * 1024 * 1024 / 256)))
	stats=$(<"$pci/plx_model")
	log "split $split: model: $stats"
	check "split $split: translations that missed their memory: $stats" has "$stats" "bad_xlat 0 "
	check "split $split: A-LUT entries permitted: $stats, want alut $want" has "$stats" "alut $want"
	barrier "checked$split"
	tool_windows_clear "$T"
	stats=$(<"$pci/plx_model")
	check "split $split: entries still permitted after the windows were cleared: $stats" \
		has "$stats" "alut 0"
done

barrier unsplit
rebind 0
barrier bound0
tool_link "$T"
msg=$(dmesg | grep "$NTB: NT0 " | tail -1)
check "unsplit: ntb_hw_plx says: $msg" has "$msg" ", 2 memory windows, 12 scratchpads"
checked
