#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Link state and identity of the emulated fabric: both ports read the same fabric
# identity, the device honours the selected profile, the link comes up, goes down
# within the link timeout when the peer's driver unbinds, and comes back.
source "$REPO/selftests/lib.sh"

setup() { load_module ntb_tool; }
cleanup() {
	unload_module ntb_tool
	# A failed run must not leave a port unbound for the tests after it.
	for d in /sys/bus/pci/drivers/ntb_hw_ivshmem/../../devices/*; do
		# read, not cat: a process per device cost this loop half a minute
		read -r v <"$d/vendor" && read -r i <"$d/device" || continue
		[ "$v:$i" = 0x1af4:0x1110 ] || continue
		[ -e "$d/driver" ] || echo "${d##*/}" >/sys/bus/pci/drivers/ntb_hw_ivshmem/bind
	done
}

test_phases setup cleanup "$@"

pci=/sys/bus/pci/devices/$NTB
T=$NTB_DBG/ntb_tool/$NTB
wait_for 30 "ntb_tool on $NTB" test -d "$T/peer0"
barrier start

id=$(<"$pci/fabric_id")
[ ${#id} = 32 ] || fail "fabric_id '$id' is not 16 bytes of hex"
put fabric_id "$id"
[ "$(get fabric_id)" = "$id" ] || fail "fabric ids differ: $id here, $(get fabric_id) at $PEER"
log "fabric id $id on both ends"

prof=$(<"$pci/profile")
log "profile: $prof"
# A PEX-8749's limits: ntb_hw_ivshmem's own (pex8749), or what ntb_hw_plx makes
# of the register model (plx: 8 scratchpads and the 4 Test Pattern registers).
nspad=
case "${IVS_PARAMS:-}" in
*pex8749*) name=pex8749 nspad=8 ;;
*plx*) name=plx nspad=12 ;;
esac
if [ -n "$nspad" ]; then
	for want in $name db=16 vectors=1 spad=$nspad align=window; do
		echo "$prof" | grep -qw "$want" || fail "$name profile lacks $want: $prof"
	done
	[ $(($(<"$T/db_valid_mask"))) = $((0xffff)) ] || fail "db_valid_mask $(<"$T/db_valid_mask")"
	spads=("$T"/spad*)
	[ ${#spads[@]} = "$nspad" ] || fail "${#spads[@]} scratchpads, the $name profile gives $nspad"
	[ -e "$T/msg0" ] && fail "$name profile must have no message registers"
fi

run sh -c "echo Y >$T/link"
run timeout 30 sh -c "echo Y >$T/peer0/link_event"
barrier up

# b unbinds its driver; a sees its link go down. The delay is measured between the
# two ports' kernel messages (one kernel in the one-VM topology): process start-up
# under emulation would swamp a measurement taken in the shell.
if [ "$ROLE" = a ]; then
	(timeout 30 sh -c "echo N >$T/peer0/link_event") &
	waiter=$!
	sleep 0.3
	barrier waiting
	wait $waiter || fail "link still up 30 s after $PEER unbound its driver"
	if [ "$TOPO" = onevm ]; then
		peer_ntb=$(get ntb)
		t0=$(dmesg | grep "$peer_ntb: port .* leaving the link" | tail -1 | sed 's/^\[ *\([0-9.]*\)\].*/\1/')
		t1=$(dmesg | grep "$NTB: link down" | tail -1 | sed 's/^\[ *\([0-9.]*\)\].*/\1/')
		ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", (b - a) * 1000 }')
		log "figure: link down ${ms} ms after the peer driver left (kernel timestamps $t0 -> $t1)"
		check "link down: no kernel timestamps ('$t0' -> '$t1')" [ -n "$t0" -a -n "$t1" ]
		# The leaving port kicks its peer: a few ms. The bound is below the 3.5 s
		# after which a stalled heartbeat alone takes the link down, so it tells
		# the two apart, with room for the host stalls a loaded emulated guest
		# sees (1.5 s once, with three guests on two cores).
		check "link down took ${ms} ms (> 2500)" [ "$ms" -le 2500 ]
	fi
	barrier down
	barrier rebound
	wait_for 30 "ntb_tool on $NTB" test -d "$T/peer0"
	run sh -c "echo Y >$T/link"
	run timeout 60 sh -c "echo Y >$T/peer0/link_event"
else
	put ntb "$NTB"
	barrier waiting
	run sh -c "echo $NTB >/sys/bus/pci/drivers/ntb_hw_ivshmem/unbind"
	barrier down
	run sh -c "echo $NTB >/sys/bus/pci/drivers/ntb_hw_ivshmem/bind"
	barrier rebound
	wait_for 30 "ntb_tool on $NTB" test -d "$T/peer0"
	run sh -c "echo Y >$T/link"
	run timeout 60 sh -c "echo Y >$T/peer0/link_event"
fi
log "link up again after rebind"
barrier done
checked
