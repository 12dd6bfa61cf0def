#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Engines that cannot be stopped. The engines beside the target's NT ports,
# plx_dma and ioatdma, have no terminate_all: once a descriptor is issued, only
# releasing the channel stops the engine (plx_dma then calls every queued
# descriptor back as aborted, ioatdma drops them). soft_dma's profiles plx and
# ioat behave so (soft_dma.c); for each of them, with concurrent staged and
# zero-copy streams both ways, every byte checked where it lands:
#   timeout   each descriptor takes longer than ntbsmc's dma_timeout_ms, rounds (1, 3 in make stress)
#             of streams: channels are killed with segments in flight, and the
#             engine would still write them (on 45ea773: stale or future bytes
#             published, a use-after-free in the completion)
#   ring      a descriptor ring of 40 entries, filled by the streams: segments
#             partly issued are rewritten once their descriptors came back
#   linkloss  host b's NTB port is unbound while descriptors are queued: the
#             connections reset (or finish), nothing lands in the next epoch,
#             and after the port is back a stream is intact over NTB again
#   flap      (plx) a timeout kill's release is still halting the engine
#             (soft_dma's stop_us: 8 s, plx_dma's up to 1 s) when host b's
#             port is unbound and bound again: the descriptor under way lands
#             before the next epoch begins, and that epoch's streams are intact
#             (before 'dma: wait for every channel being killed', the epoch
#             began first and the engine wrote into it)
# make check runs the ring and the link loss on plx only (ioat's in make
# stress). After each: every pinned page released.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"
source "$REPO/selftests/dma/lib.sh"

engine_defaults() {
	[ -w "$SOFT_DMA/latency_us" ] && echo 0 >"$SOFT_DMA/latency_us"
	[ -w "$SOFT_DMA/stop_us" ] && echo 0 >"$SOFT_DMA/stop_us"
	echo 2000 >"$NTBSMC_PARAMS/dma_timeout_ms" 2>/dev/null
}

cleanup() { engine_defaults; dma_cleanup; }

test_phases dma_setup cleanup "$@"

[ "$TOPO" = onevm ] || skip "one kernel: both hosts share the engine it reloads"
PROFILES=${STUCK_PROFILES:-plx ioat}
MB=1048576
port=7300
ulp_wait_active
sctl net.ntbsmc.lgr_idle_ms=1000 || fail "cannot set lgr_idle_ms"
dma_paths 65536 262144

# engine NAME PROFILE [PARAM=VALUE...]: host b reloads the engine (both hosts
# share it) once the idle link groups let their channels go.
engine() {
	local name=$1 prof=$2
	shift 2
	barrier "$name-reload"
	if [ "$ROLE" = b ]; then
		wait_for 30 "soft_dma to unload" rmmod soft_dma
		SOFT_DMA_PROFILE=$prof dma_load "$@"
	fi
	barrier "$name-loaded"
}

# streams NAME COUNT BYTES: COUNT transfers at once from host b to host a and
# back (--both), half staged (64 KiB writes), half zero-copy (1 MiB writes);
# STREAM_OPTS are added to both ends. Each must be over NTB and intact; with
# --allow-reset in STREAM_OPTS a reset is an outcome, a wrong byte never.
streams() {
	local name=$1 n=$2 bytes=$3 i pids=() base=$port ws out
	local -A O	# (its fields, result's)
	port=$((port + n))
	if [ "$ROLE" = a ]; then
		for i in $(seq "$n"); do
			# shellcheck disable=SC2086
			inns "$XFER" server "$MY_IP" $((base + i)) --ulp ${STREAM_OPTS:-} \
				>"$WORK/$name.$i.json" &
			pids+=($!)
		done
		for i in $(seq "$n"); do
			wait_for 90 "server on $((base + i))" pid_listening "${pids[i - 1]}" $((base + i))
		done
		barrier "$name-listening"
	else
		barrier "$name-listening"
		for i in $(seq "$n"); do
			ws=$(((i % 2) ? 65536 : MB))
			# shellcheck disable=SC2086
			inns "$XFER" client "$PEER_IP" $((base + i)) --ulp ${STREAM_OPTS:-} --both \
				--bytes "$bytes" --write-size $ws --seed "$name$i" \
				>"$WORK/$name.$i.json" &
			pids+=($!)
		done
	fi
	STREAM_PIDS=("${pids[@]}")
	[ -n "${STREAM_HOOK:-}" ] && $STREAM_HOOK
	for i in $(seq "$n"); do
		wait "${pids[i - 1]}" || check "$name.$i: failed: $(tail -1 "$WORK/$name.$i.json")" false
		result "$WORK/$name.$i.json"
		log "$name.$i: $out"
		if [ "${STREAM_WANT:-}" = moved ]; then
			# (Open, selftests/README.md: one stream's switch may time out
			# here, its peer's SWITCH not read within switch_timeout_ms)
			check "$name.$i: ${O[outcome]-missing}, intact ${O[intact]-missing}, failed over ${O[failed_over]-missing}" \
				one_of "${O[outcome]-missing}/${O[intact]-missing}/${O[failed_over]-missing}" \
				ok/true/true reset/missing/false reset/missing/true
			[ "${O[failed_over]-missing}" = true ] && MOVED=$((MOVED + 1))
		elif [[ " ${STREAM_OPTS:-} " == *" --allow-reset "* ]]; then
			check "$name.$i: ${O[outcome]-missing}, intact ${O[intact]-missing}" \
				one_of "${O[outcome]-missing}/${O[intact]-missing}" \
				reset/missing ok/true
		else
			check "$name.$i: mode ${O[mode]-missing}, intact ${O[intact]-missing}" \
				[ "${O[mode]-missing}/${O[intact]-missing}" = ntb/true ]
		fi
	done
	barrier "$name-done"
}

# dropped: how many times a DMA channel was let go, from the kernel log.
dropped() {
	dmesg | grep -c "ntbsmc: .*: DMA channel .* dropped"
}

# dma_moved: one of this host's NTB connections sent bytes by DMA.
dma_moved() {
	[[ $(cli -j conn show mode ntb) =~ \"dma_bytes\":\ ?[1-9] ]]
}

# linkloss_hook: host b unbinds its port once DMA carried bytes of a stream.
linkloss_hook() {
	[ "$ROLE" = b ] || return 0
	wait_for 90 "DMA bytes on a connection" dma_moved
	port_unbind
}

# releasing: a channel's release waits for its engine to halt (soft_dma's stop_us).
releasing() {
	local rel late
	read -r rel late <"$SOFT_DMA/stopping"
	[ "$rel" -ge 1 ]
}

# flap_hook: once a timeout kill's release is halting its engine, host b's port
# goes away and comes back while it does (the engine's later releases are quick).
flap_hook() {
	[ "$ROLE" = b ] || return 0
	# (under load the channel may come and go a few times first: the device
	# waits a second after a failed one, and a stream may run on the CPU)
	wait_for 240 "a channel's release halting its engine" releasing
	echo "ntbsmc-test: flap" >/dev/kmsg
	engine_defaults
	port_unbind
	port_bind
}

# epoch_order: "HALTED LATE" from the kernel log since the flap: the engine
# writes that landed after their channel's release began, and how many of them
# came after an epoch had begun again ("ntbsmc: link active").
epoch_order() {
	dmesg | awk '/ntbsmc-test: flap/ { on = 1; halted = 0; active = 0; late = 0; next }
		on && /soft_dma: .*engine halted/ { halted++; if (active) late++ }
		on && /ntbsmc: link active/ { active++ }
		END { print halted + 0, late + 0 }'
}

for prof in $PROFILES; do
	engine "$prof-timeout" "$prof"
	# A descriptor takes 250 ms, the timeout is 150 ms: every channel dies with
	# segments queued, and a plx or ioat engine goes on with them unless the
	# channel is released first.
	before=$(ntb_stat dma_failed) drops=$(dropped)
	if [ "$ROLE" = b ]; then
		echo 150 >"$NTBSMC_PARAMS/dma_timeout_ms"
		echo 250000 >"$SOFT_DMA/latency_us"
	fi
	for round in $(seq "$(tier 1 3)"); do
		streams "$prof-timeout$round" 4 $((6 * MB))
		nap 1.2		# the device asks for a new channel after a second
	done
	[ "$ROLE" = b ] && engine_defaults
	check "$prof-timeout: channels dropped: $(($(dropped) - drops))" \
		[ $(($(dropped) - drops)) -ge 1 ]
	# A host's writes are killed so only while its port holds a channel,
	# which it asks for at most once a second, at a connection's set-up
	# (ntbsmc_dma_attach()): in one round a host may have written with the
	# CPU throughout (seen once under load), so the two hosts' sum counts.
	redone=$(($(ntb_stat dma_failed) - before))
	put "$prof-redone" "$redone"
	log "$prof-timeout: DMA writes redone by the CPU here: $redone"
	redone=$((redone + $(get "$prof-redone")))
	check "$prof-timeout: DMA writes redone by the CPU on both hosts: $redone" \
		[ "$redone" -ge 1 ]
	wait_for 10 "every pinned page released" pins_balanced

	# make check: what differs between the engines is what a release does
	# with the descriptors queued (plx_dma calls them back aborted, ioatdma
	# drops them), which the timeout rounds show; the ring and the link loss
	# run on plx, the target's engine, and on ioat in make stress.
	[ "$prof" = plx ] || stress_tier || continue

	# Four streams of 1 MiB buffers against a ring of 40 descriptors.
	engine "$prof-ring" "$prof" ring=40
	before=$(ntb_stat dma_failed)
	[ "$ROLE" = b ] && echo 3000 >"$SOFT_DMA/latency_us"
	streams "$prof-ring" 4 $((16 * MB))
	[ "$ROLE" = b ] && engine_defaults
	log "$prof-ring: DMA writes redone by the CPU: $(($(ntb_stat dma_failed) - before))"
	wait_for 10 "every pinned page released" pins_balanced

	# The link goes down with descriptors queued (20 ms each), staged and
	# zero-copy: a stream moves to TCP (version 7) with every byte, the
	# engine's writes still in flight and never completed included, or is
	# reset; never a wrong byte.
	engine "$prof-linkloss" "$prof"
	[ "$ROLE" = b ] && echo 20000 >"$SOFT_DMA/latency_us"
	# (Both ends resend up to 1 MiB here: before the resend was queued at
	# once, each waited for the other's window, which opens only once the
	# other's switch ended, until the bound: none of two moved. One must;
	# a reset of the other is accepted, never a wrong byte: Open.)
	MOVED=0
	STREAM_OPTS=--allow-reset STREAM_WANT=moved STREAM_HOOK=linkloss_hook \
		streams "$prof-linkloss" 2 $((64 * MB))
	check "$prof-linkloss: $MOVED of 2 streams moved to TCP intact, want 1 at least" \
		[ "$MOVED" -ge 1 ]
	[ "$ROLE" = b ] && engine_defaults
	barrier "$prof-linkloss-unbound"
	[ "$ROLE" = b ] && port_bind
	ulp_wait_active
	streams "$prof-after" 2 $((4 * MB))
	wait_for 10 "every pinned page released" pins_balanced

	[ "$prof" = plx ] || continue
	# A descriptor takes 250 ms against a timeout of 150 ms, and releasing a
	# busy channel takes 8 s: the port flaps while a timeout kill waits for
	# its engine to halt, which then writes the descriptor it was on.
	engine "$prof-flap" "$prof"
	if [ "$ROLE" = b ]; then
		echo 150 >"$NTBSMC_PARAMS/dma_timeout_ms"
		echo 250000 >"$SOFT_DMA/latency_us"
		echo 8000000 >"$SOFT_DMA/stop_us"
	fi
	# (long enough to be under way whenever the release begins: the flap
	# resets them, as version 6 (sysctl switch=0): the epochs' order is what
	# is looked at, not 4 GiB moved to TCP)
	sctl net.ntbsmc.switch=0 || fail "sysctl switch"
	STREAM_OPTS=--allow-reset STREAM_HOOK=flap_hook \
		streams "$prof-flap" 4 $((1024 * MB))
	sctl net.ntbsmc.switch=1 || fail "sysctl switch"
	[ "$ROLE" = b ] && engine_defaults
	ulp_wait_active
	streams "$prof-epoch" 4 $((16 * MB))
	if [ "$ROLE" = b ]; then
		wait_for 30 "every release to halt its engine" eval '! releasing'
		read -r halted late <<<"$(epoch_order)"
		check "$prof-flap: engine writes after their release began: $halted" \
			[ "$halted" -ge 1 ]
		check "$prof-flap: of those, after the next epoch began: $late" [ "$late" = 0 ]
	fi
	wait_for 10 "every pinned page released" pins_balanced
done
checked
