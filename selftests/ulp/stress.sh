#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The stress tier: PAIRS connections at once between the two hosts, in six
# phases, every transfer checked byte for byte by its reader, seeded and
# reproducible (STRESS_SEED, STRESS_ROUNDS):
#
#   host b: closer client / xfer client  x PAIRS  ---->  host a: the servers
#
#   mixed   closer --seed: each round draws its size (CPU, staged DMA or
#           zero-copy path), its end (close, shutdown, exit, SO_LINGER), blocking
#           or not, a slow reader or not, and which end writes and ends it.
#           No round may lose a byte, every round runs over NTB, the readers'
#           NTB bytes add up to what was written, and each path carried some.
#   unspec  closer --seed --how unspec: each round writes a random amount (any
#           path, maybe in flight), disconnects with connect(AF_UNSPEC) at once,
#           reconnects the socket and writes the round's bytes there (TCP now):
#           the old connection's reader gets a prefix of its own bytes only,
#           the new one all of its bytes; every old connection was NTB at its
#           client (the disconnect may reset the server's end mid-handshake).
#   dma     the same as mixed while the software engine fails a descriptor and slows
#           down at random: the failed ranges are rewritten, nothing is lost.
#   kill    1 GiB both ways, and one end of each pair is killed (SIGKILL) at a
#           random moment of its first second: the other ends within a bound.
#   unbind  4 MiB both ways (a reset is an outcome), and host b's NTB port is
#           unbound at a random moment, some connections in their handshake,
#           and bound again: what completed is intact, then NTB again.
#   unbinds host b keeps 100 handshakes in flight (closer flood) and unbinds
#           its port at a random moment, STRESS_UNBINDS (2; make stress: 6) times: handshakes
#           between their PROPOSAL and their attach while the window is
#           unmapped (finding 7 of issue 18: on 5cdd1ae, 100 in flight and 20
#           unbinds gave 13 oopses in ntbsmc_conn_attach() at 3 of them).
#
# After each phase both hosts are idle again: no receive buffer, orphan,
# connection, link-group connection or pinned page left (the harness then
# checks kmemleak and the kernel log for splats).
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"
source "$REPO/selftests/dma/lib.sh"

cleanup() {
	[ -w "$SOFT_DMA/fail_nth" ] && echo 0 >"$SOFT_DMA/fail_nth"
	[ -w "$SOFT_DMA/latency_us" ] && echo 0 >"$SOFT_DMA/latency_us"
	dma_cleanup
}

test_phases dma_setup cleanup "$@"

CLOSER=$REPO/selftests/ulp/closer
seed=${STRESS_SEED:-2026}
rounds=${STRESS_ROUNDS:-$(tier 3 8)}
pairs=3
RANDOM=$seed
port=7600
log "seed $seed, $rounds rounds, $pairs pairs"
# the kill phase's victim and moment for each pair, the unbind phase's moment
victims=()
for i in $(seq $pairs); do
	victims+=("$((RANDOM % 2)) 0.$((RANDOM % 10))")
done
unbind_when=0.$((1 + RANDOM % 9))
unbinds=${STRESS_UNBINDS:-$(tier 2 6)}
unbinds_when=()
for i in $(seq "$unbinds"); do
	unbinds_when+=("$((1 + RANDOM % 3)).$((RANDOM % 10))")
done
ulp_wait_active
dma_paths 65536 262144	# the defaults: each path by the size of the write

# phase NAME: NAME is to run (STRESS_PHASES, e.g. "unbind kill", for
# development: all of them by default). A phase's draws from the seed do not
# depend on which others run.
phase() {
	[ -z "${STRESS_PHASES:-}" ] || [[ " $STRESS_PHASES " == *" $1 "* ]]
}

# idle: nothing of a connection is left on this host.
idle() {
	ulp_idle && [[ ! $(cli -j lgr show) =~ \"connections\":\ *[1-9] ]] && pins_balanced
}

# phase_end NAME: both hosts idle again, within a bound.
phase_end() {
	wait_for $IDLE_WAIT "$1: no buffer, orphan, connection or pin left" idle
	log "$1: idle: $(cli -j dev show "$NTB")"
	barrier "$1-idle"
}

# start_pairs NAME PROG SERVER_OPTS CLIENT_OPTS [GAP]: PAIRS connections of PROG
# (xfer, closer): host a serves on the ports after $port, host b connects to
# them, GAP seconds apart. "@i@" in the options is the pair's number. This
# host's ends' pids go to pids, their output to $WORK/NAME<i>.json.
start_pairs() {
	local name=$1 prog=$2 sopts=$3 copts=$4 gap=${5:-} i
	pids=()
	if [ "$ROLE" = a ]; then
		for i in $(seq $pairs); do
			# shellcheck disable=SC2086
			inns "$prog" server "$MY_IP" $((port + i)) ${sopts//@i@/$i} \
				>"$WORK/$name$i.json" 2>&1 &
			pids+=($!)
			wait_for 90 "server on $((port + i))" pid_listening $! $((port + i))
		done
	fi
	barrier "$name-listening"
	[ "$ROLE" = b ] || return 0
	for i in $(seq $pairs); do
		# shellcheck disable=SC2086
		inns "$prog" client "$PEER_IP" $((port + i)) ${copts//@i@/$i} \
			>"$WORK/$name$i.json" 2>&1 &
		pids+=($!)
		[ -z "$gap" ] || nap "$gap"
	done
}

# closers NAME [HOW [ROUNDS]]: PAIRS closer pairs with seeded random rounds (all
# of them HOW if given; ROUNDS of them, by default STRESS_ROUNDS); checks each.
# Pair i's seed is the seed with i appended.
closers() {
	local name=$1 how=${2:-} rounds=${3:-$rounds} i pids rc out ntb=0 wrote=0 opts
	local -A O	# (its fields, result's)
	opts="--rounds $rounds --seed $seed@i@${how:+ --how $how}"
	start_pairs "$name" "$CLOSER" "$opts" "$opts"
	for i in $(seq $pairs); do
		wait "${pids[$((i - 1))]}"
		rc=$?
		result "$WORK/$name$i.json"
		log "$name $i: $out"
		[ $rc = 0 ] || check "$name $i: closer $ROLE exited $rc: $(<"$WORK/$name$i.json")" false
		check "$name $i: ${O[lost]-missing} of $rounds rounds lost bytes" \
			[ "${O[lost]-missing}" = 0 ]
		# unspec: the client's disconnect may reset a server handshake
		# still reading the CONFIRM that made the client's end NTB
		[ "$how" = unspec ] && [ "$ROLE" = a ] ||
			check "$name $i: ${O[ntb]-missing} of $rounds rounds over NTB" \
				[ "${O[ntb]-missing}" = "$rounds" ]
		ntb=$((ntb + ${O[ntb_bytes]-missing}))
		wrote=$((wrote + ${O[bytes]-missing}))
	done
	port=$((port + pairs))
	# unspec: the old connections' bytes were cut short by a reset, the new
	# connections' ran over TCP
	[ "$how" = unspec ] && return
	# what this host read over NTB is what the other one wrote
	put "$name-wrote" $wrote
	check "$name: read $ntb bytes over NTB, the peer wrote $(get "$name-wrote")" \
		[ "$ntb" = "$(get "$name-wrote")" ]
}

# path_bytes: this host's bytes sent by each copy path, "CPU DMA ZC".
path_bytes() {
	echo "$(ntb_stat cpu_bytes) $(ntb_stat dma_bytes) $(ntb_stat zc_bytes)"
}

# --- mixed
if phase mixed; then
	read -r c0 d0 z0 <<<"$(path_bytes)"
	closers mixed
	read -r c1 d1 z1 <<<"$(path_bytes)"
	put mixed-paths "$((c1 - c0)) $((d1 - d0)) $((z1 - z0))"
	read -r pc pd pz <<<"$(get mixed-paths)"
	log "mixed: sent by CPU/DMA/zero-copy: here $((c1 - c0))/$((d1 - d0))/$((z1 - z0)), peer $pc/$pd/$pz"
	for k in "CPU $((c1 - c0 + pc))" "DMA $((d1 - d0 + pd))" "zero-copy $((z1 - z0 + pz))"; do
		check "mixed: the $k bytes by path ${k%% *}, want some" [ "${k##* }" -gt 0 ]
	done
	phase_end mixed
fi

# --- unspec
if phase unspec; then
	closers unspec unspec $(((rounds + 1) / 2))
	phase_end unspec
fi

# --- dma: host a drives the engine (one in the one-VM topology, shared)
if phase dma; then
	if [ "$ROLE" = a ]; then
		(
			RANDOM=$((seed + 1))
			while [ ! -e "$WORK/dma-stop" ]; do
				echo $((1 + RANDOM % 40)) >"$SOFT_DMA/fail_nth"
				echo $((RANDOM % 3 * 1000)) >"$SOFT_DMA/latency_us"
				nap "0.$((1 + RANDOM % 3))"
			done
			echo 0 >"$SOFT_DMA/fail_nth"
			echo 0 >"$SOFT_DMA/latency_us"
		) &
		chaos=$!
	fi
	failed0=$(ntb_stat dma_failed)
	closers dma
	if [ "$ROLE" = a ]; then
		touch "$WORK/dma-stop"
		wait $chaos
	fi
	log "dma: DMA writes failed here: $(($(ntb_stat dma_failed) - failed0))"
	phase_end dma
fi

# --- kill
if phase kill; then
	start_pairs kill "$XFER" "--ulp --allow-reset" \
		"--ulp --allow-reset --bytes 1073741824 --both"
	# the moment counts from the connection's establishment (killed before it
	# connects, a client would leave its server waiting for nobody): in its
	# handshake, or in its transfer
	me=$([ "$ROLE" = a ] && echo 0 || echo 1)
	for i in $(seq $pairs); do
		read -r who when <<<"${victims[$((i - 1))]}"
		[ "$who" = "$me" ] || continue
		(
			wait_for 60 "pair $i connected" pid_connected "${pids[$((i - 1))]}" $((port + i))
			nap "$when"
			kill -9 "${pids[$((i - 1))]}" 2>/dev/null
		) &
	done
	t0=${EPOCHREALTIME/./}
	for i in $(seq $pairs); do
		wait "${pids[$((i - 1))]}"
		log "kill $i: exit $? after $(((${EPOCHREALTIME/./} - t0) / 1000)) ms: $(tail -1 "$WORK/kill$i.json")"
	done
	ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
	check "kill: the survivors took $ms ms to end, bound 60000" [ $ms -le 60000 ]
	port=$((port + pairs))
	phase_end kill
fi

# --- unbind: host b's port goes away under connections and comes back
if phase unbind; then
	start_pairs unbind "$XFER" "--ulp --allow-reset" \
		"--ulp --allow-reset --bytes 4194304 --both" 0.2
	if [ "$ROLE" = b ]; then
		nap "$unbind_when"
		port_unbind
	fi
	ok=0
	for i in $(seq $pairs); do
		wait "${pids[$((i - 1))]}"
		rc=$?
		result "$WORK/unbind$i.json"
		log "unbind $i: $out"
		[ $rc = 0 ] || check "unbind $i: xfer $ROLE exited $rc: $(<"$WORK/unbind$i.json")" false
		case ${O[outcome]-missing} in
		ok)
			check "unbind $i: not intact" [ "${O[intact]-missing}" = true ]
			ok=$((ok + 1)) ;;
		reset) ;;
		*) check "unbind $i: outcome ${O[outcome]-missing}" false ;;
		esac
	done
	log "unbind: $ok of $pairs transfers completed, the others were reset"
	port=$((port + pairs))
	barrier unbind-done
	[ "$ROLE" = b ] && port_bind
	barrier rebound
	ulp_wait_active
	phase_end unbind
fi

# --- unbinds: the port goes away under 100 handshakes, again and again
if phase unbinds; then
	for i in $(seq "$unbinds"); do
		port=$((port + 1))
		if [ "$ROLE" = a ]; then
			inns "$CLOSER" server "$MY_IP" $port --rounds 1000000 --bytes 1 \
				>/dev/null 2>&1 &
			srv=$!
			wait_for 90 "server on $port" pid_listening $srv $port
			barrier "unbinds$i-listening"
			barrier "unbinds$i-unbound"
			kill $srv
			wait $srv 2>/dev/null
		else
			barrier "unbinds$i-listening"
			inns "$CLOSER" flood "$PEER_IP" $port --rounds 100 --secs 6 \
				>"$WORK/unbinds$i.json" 2>&1 &
			fl=$!
			nap "${unbinds_when[$((i - 1))]}"
			port_unbind
			wait $fl
			log "unbinds $i: $(<"$WORK/unbinds$i.json")"
			port_bind
			barrier "unbinds$i-unbound"
		fi
		barrier "unbinds$i-done"
		ulp_wait_active
	done
	phase_end unbinds
fi

xfer_one after "--ulp" "--ulp --bytes 1000000 --both"
check "after the stress: mode ${O[mode]-missing} intact ${O[intact]-missing}" \
	[ "${O[mode]-missing}/${O[intact]-missing}" = ntb/true ]
checked
