#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntb_tool over the emulated fabric: scratchpads, doorbells (with masking and
# coalescing) and memory windows, written on one host and read on the other, both
# directions.
source "$REPO/selftests/lib.sh"

case $1 in
setup) load_module ntb_tool; exit ;;
cleanup) unload_module ntb_tool; exit ;;
esac

T=$NTB_DBG/ntb_tool/$NTB
wait_for 30 "ntb_tool on $NTB" test -d "$T/peer0"
barrier start
log "waiting for link up"
run sh -c "echo Y >$T/link"
run timeout 30 sh -c "echo Y >$T/peer0/link_event"

# Scratchpads: write every one of the peer's, read every one of ours.
spads=("$T"/peer0/spad*)
nspad=${#spads[@]}
[ "$nspad" -ge 8 ] || fail "only $nspad scratchpads"
for ((i = 0; i < nspad; i++)); do
	echo $((0x5a000000 + i * 7 + ($ROLE == a ? 0 : 0x100000))) >"$T/peer0/spad$i" ||
		fail "write peer spad$i"
done
barrier spads_written
for ((i = 0; i < nspad; i++)); do
	want=$((0x5a000000 + i * 7 + ($PEER == a ? 0 : 0x100000)))
	read -r got <"$T/spad$i"
	got=$((got))
	[ "$got" = "$want" ] || fail "spad$i: read $got, peer wrote $want"
done
log "$nspad scratchpads crossed"
barrier spads_checked

# Doorbells: the ringer rings every valid bit, one at a time; all of them must be
# pending at the other end. Then a masked bit rung twice is one pending bit, and
# stays pending until cleared.
# $(<file), not read: ntb_tool's doorbell files answer a 1-byte read with nothing.
valid=$(($(<"$T/db_valid_mask")))
nbits=0
for ((bit = 0; bit < 64; bit++)); do
	[ $(((valid >> bit) & 1)) = 1 ] && nbits=$((nbits + 1))
done
[ "$nbits" -ge 16 ] || fail "only $nbits doorbell bits"
for ringer in a b; do
	if [ "$ROLE" = "$ringer" ]; then
		barrier "db_ready_$ringer"
		for ((bit = 0; bit < nbits; bit++)); do
			echo "s $((1 << bit))" >"$T/peer_db" || fail "ring bit $bit"
		done
		barrier "db_rung_$ringer"
		barrier "db_masked_$ringer"
		echo "s 0x4" >"$T/peer_db"
		echo "s 0x4" >"$T/peer_db"
		barrier "db_rung_twice_$ringer"
		barrier "db_unmasked_$ringer"
	else
		# unmasked: some drivers (Intel's, ntb_hw_plx) mask all at probe
		echo "c $valid" >"$T/db_mask"
		echo "c $valid" >"$T/db"
		barrier "db_ready_$ringer"
		barrier "db_rung_$ringer"
		timeout 10 sh -c "echo $valid >$T/db_event" ||
			fail "doorbells from $ringer: db reads $(cat "$T/db"), want all of $valid"
		echo "c $valid" >"$T/db"
		echo "s 0x4" >"$T/db_mask"
		barrier "db_masked_$ringer"
		barrier "db_rung_twice_$ringer"
		timeout 10 sh -c "echo 0x4 >$T/db_event" ||
			fail "masked bit 2 not pending: db reads $(cat "$T/db")"
		[ $(($(cat "$T/db_mask"))) = 4 ] || fail "db_mask reads $(cat "$T/db_mask")"
		echo "c 0x4" >"$T/db_mask"
		echo "c 0x4" >"$T/db"
		[ $(($(cat "$T/db"))) = 0 ] || fail "db reads $(cat "$T/db") after clear"
		barrier "db_unmasked_$ringer"
	fi
done
log "$nbits doorbell bits crossed both ways; a masked bit rung twice is one pending bit"

# Memory windows: each host sets up both of its inbound windows (in window order:
# the emulation hands out window memory in allocation order) and the peer writes
# different data into each through its outbound windows.
size=$((1024 * 1024))
for w in 0 1; do
	head -c $size /dev/urandom >"$WORK/mw$w.$ROLE"
	put "mw${w}_sum" "$(sha256sum <"$WORK/mw$w.$ROLE" | cut -d' ' -f1)"
	run sh -c "echo $size >$T/peer0/mw_trans$w"
done
barrier mw_trans
for w in 0 1; do
	run sh -c "echo 0:$size >$T/peer0/peer_mw_trans$w"
	run dd if="$WORK/mw$w.$ROLE" of="$T/peer0/peer_mw$w" bs=64K status=none
done
barrier mw_written
for w in 0 1; do
	sum=$(head -c $size "$T/peer0/mw$w" | sha256sum | cut -d' ' -f1)
	want=$(get "mw${w}_sum")
	check "window $w: read $sum, $PEER wrote $want" [ "$sum" = "$want" ] &&
		log "window $w: $size bytes written by $PEER read back intact"
done
barrier done
# Tear the windows down before ntb_tool is unloaded: 6.1's tool_remove() removes
# its debugfs tree and then the windows' files again (use-after-free).
for w in 0 1; do
	echo "0:0" >"$T/peer0/peer_mw_trans$w"
	echo 0 >"$T/peer0/mw_trans$w"
done
checked
