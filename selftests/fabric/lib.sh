# SPDX-License-Identifier: GPL-2.0
# Helpers for the tests of the NTB fabric through ntb_tool (guest side), on top
# of selftests/lib.sh.

# tool_link T: ntb_tool's port T (its debugfs directory) enables the link and
# waits for it.
tool_link() {
	wait_for 30 "ntb_tool on $NTB" test -d "$1/peer0"
	run sh -c "echo Y >$1/link"
	run timeout 30 sh -c "echo Y >$1/peer0/link_event"
}

# tool_windows T SIZE TAG: each host sets up every inbound window of its port
# (in window order: the emulation hands out window memory in allocation order),
# the peer writes SIZE different bytes into each through its outbound windows,
# and each host checks what arrived. The windows stay set (tool_windows_clear).
# TOOL_MW: how many windows the port has.
tool_windows() {
	local T=$1 size=$2 tag=$3 w sum want files
	files=("$T"/peer0/mw_trans*)
	TOOL_MW=${#files[@]}
	put "${tag}mw" "$TOOL_MW"
	[ "$(get "${tag}mw")" = "$TOOL_MW" ] ||
		fail "$TOOL_MW inbound windows here, $(get "${tag}mw") at $PEER"
	for ((w = 0; w < TOOL_MW; w++)); do
		head -c "$size" /dev/urandom >"$WORK/mw$w.$ROLE"
		put "${tag}mw${w}_sum" "$(sha256sum <"$WORK/mw$w.$ROLE" | cut -d' ' -f1)"
		run sh -c "echo $size >$T/peer0/mw_trans$w"
	done
	barrier "${tag}mw_trans"
	for ((w = 0; w < TOOL_MW; w++)); do
		run sh -c "echo 0:$size >$T/peer0/peer_mw_trans$w"
		run dd if="$WORK/mw$w.$ROLE" of="$T/peer0/peer_mw$w" bs=64K status=none
	done
	barrier "${tag}mw_written"
	for ((w = 0; w < TOOL_MW; w++)); do
		sum=$(head -c "$size" "$T/peer0/mw$w" | sha256sum | cut -d' ' -f1)
		want=$(get "${tag}mw${w}_sum")
		check "window $w: read $sum, $PEER wrote $want" [ "$sum" = "$want" ] &&
			log "window $w: $size bytes written by $PEER read back intact"
	done
}

# tool_windows_clear T: tears the windows down, as ntb_tool must before it is
# unloaded or its port unbound: 6.1's tool_remove() removes its debugfs tree
# and then the windows' files again (use-after-free).
tool_windows_clear() {
	local f
	for f in "$1"/peer0/peer_mw_trans*; do
		[ -e "$f" ] && echo "0:0" >"$f"
	done
	for f in "$1"/peer0/mw_trans*; do
		[ -e "$f" ] && echo 0 >"$f"
	done
}

# port_state: the port's doorbell and link state, for a failure's message: what
# ntb_hw_plx sees (debugfs) and, on the emulated fabric, what the modelled chip
# holds.
port_state() {
	local f
	for f in "/sys/bus/pci/devices/$NTB/plx_model" "$NTB_DBG/ntb_hw_plx/$NTB/info"; do
		[ -r "$f" ] && sed "s|^|# [$ROLE] ${f##*/}: |" "$f"
	done
	return 0
}
