#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntb_tool over the emulated fabric: scratchpads, doorbells (with masking and
# coalescing) and memory windows, written on one host and read on the other, both
# directions.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/fabric/lib.sh"

setup() { load_module ntb_tool; }
cleanup() { unload_module ntb_tool; }

test_phases setup cleanup "$@"

T=$NTB_DBG/ntb_tool/$NTB
barrier start
log "waiting for link up"
tool_link "$T"

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
			fail "doorbells from $ringer: db reads $(<"$T/db"), want all of $valid"
		echo "c $valid" >"$T/db"
		echo "s 0x4" >"$T/db_mask"
		barrier "db_masked_$ringer"
		barrier "db_rung_twice_$ringer"
		timeout 10 sh -c "echo 0x4 >$T/db_event" ||
			fail "masked bit 2 not pending: db reads $(<"$T/db")"
		[ $(($(<"$T/db_mask"))) = 4 ] || fail "db_mask reads $(<"$T/db_mask")"
		echo "c 0x4" >"$T/db_mask"
		echo "c 0x4" >"$T/db"
		[ $(($(<"$T/db"))) = 0 ] || fail "db reads $(<"$T/db") after clear"
		barrier "db_unmasked_$ringer"
	fi
done
log "$nbits doorbell bits crossed both ways; a masked bit rung twice is one pending bit"

# Memory windows, every one of them, both ways (256 KiB each: read back
# through debugfs at about 4 s a MiB in the debug guest).
tool_windows "$T" $((256 * 1024)) ""
barrier done
tool_windows_clear "$T"
checked
