#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench, ULP part: ntbsmc against TCP over the ordinary link (veth in one VM,
# virtio-net between VMs), and TCP over ntb_netdev.
#
# One sample under emulation is worth little: five 5 s streams at 64 KiB in one
# boot went at 687 to 1375 MB/s. So the three comparisons that matter (a stream
# at 64 KiB writes, 1-byte round trips with interrupts, and with ntbsmc
# busy-polling) run as PAIRS rounds in one boot, each round a TCP sample and
# then ntbsmc's, both servers up throughout: TCP and ntbsmc see the same moments
# of the emulator, and the ratio round by round says more than either median.
# In each round ntbsmc runs with the hardware price its module can charge
# (price_read_ns, price_doorbell_ns: a read across PCIe stalls the CPU, a
# doorbell arrives late) and without it. Then the link operations one round
# trip and one stream cost, counted on both hosts: what that price is paid on.
# The 1 KiB and 1 MiB streams, connections per second and TCP over ntb_netdev
# are single samples, labelled so.
#
#   host a (clients)                         host b (servers)
#   nbench client ----- veth / virtio -----> nbench server        (TCP)
#   nbench client --ulp --- NTB window ----> nbench server --ulp  (ntbsmc)
#   nbench client ------ ntb_netdev -------> nbench server        (TCP, last)
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"
source "$REPO/selftests/bench/lib.sh"

# Busy-poll budget: a round trip takes ~200 us under emulation, so the 50 us
# usual on hardware would expire before every answer.
BP_US=${BENCH_BUSY_POLL_US:-1000}
# Rounds: with fewer than five the median of the ratios is little better than
# one of them.
PAIRS=${BENCH_PAIRS:-5}
if ! [ "$PAIRS" -ge 5 ] 2>/dev/null; then
	log "BENCH_PAIRS=$PAIRS: 5 rounds, the fewest"
	PAIRS=5
fi
# Round trips per rr sample: 2-4 s at the 170-380 us of an interrupt-mode round
# trip under emulation (a busy-poll sample is over in a fraction of that).
RR_COUNT=${BENCH_RR_COUNT:-10000}
# The hardware price, in ns: a non-posted PCIe read stalls the CPU ~1.5 us; a
# doorbell is delivered ~1 us after it was rung.
PRICE_READ_NS=${BENCH_PRICE_READ_NS:-1500}
PRICE_DOORBELL_NS=${BENCH_PRICE_DOORBELL_NS:-1000}
PARAMS=/sys/module/ntbsmc/parameters
# The counters of link operations, from ntbsmc -j stats (a module without one
# reports it "n/a").
COUNT_KEYS="link_writes link_writes_small link_writes_medium link_writes_large
	link_reads doorbells_tx interrupts link_write_bytes tx_bytes"

case $1 in
setup) exit 0 ;;
cleanup) unload_module ntb_netdev; unload_module ntb_transport; unload_module ntbsmc; exit 0 ;;
esac

SRV=$([ "$ROLE" = a ] && echo "$PEER_IP" || echo "$MY_IP")	# host b serves
LINK=$([ "$TOPO" = onevm ] && echo veth || echo virtio)

# serve ADDR PORT [--ulp]: host b starts an nbench server, kept in $SERVERS.
SERVERS=()
serve() {
	inns "$NB" server ${3:+"$3"} "$1" "$2" &
	SERVERS+=($!)
	wait_for 60 "nbench server on $2" pid_listening $! "$2"
}

serve_stop() {
	local p
	for p in "${SERVERS[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	SERVERS=()
}

# client WANT ARGS...: host a's nbench client (ARGS: [--ulp] ADDR PORT TEST...);
# its result line in $out, its words in $res. A run that failed or went another
# way than WANT (the start of its mode: "tcp", "ntb:") is a failure of the
# bench and its figure "n/a"; the bench goes on, so that host b is not left at
# a barrier, and fails at its end.
client() {
	local want=$1
	shift
	out=$(inns "$NB" client "$@"); jmap O "$out"
	log "nbench client $*: $out"
	if [[ ${out##* } == "$want"* ]]; then
		read -r -a res <<<"$out"
	else
		check "nbench client $*: '$out', not $want" false
		res=(failed n/a n/a)
	fi
}

# singles LABEL WANT SIZES RR ARGS...: host a's single samples against the
# server at ARGS ([--ulp] ADDR PORT): a stream at each write size in SIZES,
# a round trip if RR is "rr", connections per second.
singles() {
	local label=$1 want=$2 sizes=$3 rr=$4 w
	shift 4
	[ "$ROLE" = a ] || return 0
	for w in $sizes; do
		client "$want" "$@" stream "$w" "$SECS"
		bench "$label stream ${w}B writes (MB/s), single sample" "${res[2]} [${out##* }]"
	done
	if [ "$rr" = rr ]; then
		client "$want" "$@" rr "$RR_COUNT"
		bench "$label 1-byte round trip median/p99 (us), single sample" \
			"${res[2]} / ${res[5]:-n/a} [${out##* }]"
	fi
	client "$want" "$@" crr "$SECS"
	bench "$label connections per second, single sample" "${res[1]} [${out##* }]"
}

# sample SERIES WANT ARGS...: host a runs one nbench client and appends its
# figure (a stream's MB/s, the median us of the round trips) to SERIES; host b's
# servers answer.
declare -A samples
sample() {
	local series=$1
	shift
	[ "$ROLE" = a ] || return 0
	client "$@"
	samples[$series]+=" ${res[2]}"
}

# set_price priced|unpriced: this kernel's price of a read across the link and
# of a doorbell (module parameters, writable at runtime). Called through
# once_per_kernel, which shellcheck does not follow:
# shellcheck disable=SC2317
set_price() {
	local r=0 d=0
	[ "$1" = priced ] && r=$PRICE_READ_NS d=$PRICE_DOORBELL_NS
	{ echo "$r" >"$PARAMS/price_read_ns" && echo "$d" >"$PARAMS/price_doorbell_ns"; } ||
		check "price_read_ns $r, price_doorbell_ns $d" false
}

# mode BP_US PRICE: busy-poll (us, 0 off) and price (priced, unpriced) of the
# ntbsmc samples to come. Both hosts call it at the same points of the same
# sequence, so that what host b changes (its namespace's busy_poll_us for its
# server's sockets; between VMs its own kernel's price) it changes between two
# of host a's samples, never during one; in one VM host a prices the one kernel.
CUR_BP=0 CUR_PRICE=unpriced STEP=0
mode() {
	local bp=$1 price=$2 peer=0
	[ "$bp" = "$CUR_BP" ] && [ "$price" = "$CUR_PRICE" ] && return 0
	[ "$bp" != "$CUR_BP" ] && peer=1
	[ "$price" != "$CUR_PRICE" ] && [ "$TOPO" = twovm ] && peer=1
	STEP=$((STEP + 1))
	# Host b waits here through host a's samples since the last change.
	[ $peer = 1 ] && barrier "mode-$STEP" 3600
	if [ "$bp" != "$CUR_BP" ]; then
		sctl net.ntbsmc.busy_poll_us="$bp" || check "busy_poll_us $bp" false
	fi
	[ "$price" = "$CUR_PRICE" ] || once_per_kernel set_price "$price"
	[ $peer = 1 ] && barrier "mode-$STEP-set"
	CUR_BP=$bp CUR_PRICE=$price
}

# variants ROUND: ntbsmc's runs in a round: priced and unpriced, each first in
# every other round, so that neither always runs right after TCP.
variants() {
	if [ "$PRICED" != yes ]; then
		echo unpriced
	elif [ $(($1 % 2)) = 1 ]; then
		echo priced unpriced
	else
		echo unpriced priced
	fi
}

# compare ID TITLE UNIT TCP-SERIES TCP-LABEL PREFIX: host a reports one
# comparison: per series the median and the samples in the order they ran,
# per ntbsmc series the ratio ntbsmc/TCP round by round (median [min-max]);
# and logs the samples for the plot (vm/bench.sh, bench/plot.awk).
compare() {
	local id=$1 title=$2 unit=$3 tcp=${samples[$4]} tlabel=$5 prefix=$6 v s r
	[ "$ROLE" = a ] || return 0
	log "samples: $id|$title|$unit|TCP|$tcp"
	bench "$title: $tlabel $unit, median [samples by round]" "$(median %.1f "$tcp") [${tcp# }]"
	for v in priced unpriced; do
		if [ "$v" = priced ] && [ "$PRICED" != yes ]; then
			bench "$title: ntbsmc priced" "n/a (no price_* parameters)"
			continue
		fi
		s=${samples[$prefix $v]}
		r=$(ratios "$s" "$tcp")
		log "samples: $id|$title|$unit|ntbsmc $v|$s"
		log "$title: ntbsmc $v / TCP by round: $r"
		bench "$title: ntbsmc $v $unit, median [samples by round]" "$(median %.1f "$s") [${s# }]"
		bench "$title: ntbsmc $v ${unit%% *} / TCP ${unit%% *} by round, median [min-max]" \
			"$(summary %.2f "$r")"
	done
}

# deltas BEFORE AFTER: KEY=DIFF for each of COUNT_KEYS between two outputs of
# ntbsmc -j stats; DIFF "n/a" for a counter the module does not report.
deltas() {
	local k a b d=()
	for k in $COUNT_KEYS; do
		a=$(jfield "$1" "$k") b=$(jfield "$2" "$k")
		if [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ ]]; then
			d+=("$k=$((b - a))")
		else
			d+=("$k=n/a")
		fi
	done
	echo "${d[*]}"
}

# counted NAME LABEL PER BP PRICE ARGS...: one ntbsmc sample (nbench ARGS) with
# busy-poll BP and price PRICE between two snapshots of both hosts' counters;
# host b hands its deltas to host a, which reports the sum of both hosts' per
# PER messages, or per MiB sent if PER is "MiB". A connection's set-up and end
# count too: a few operations among the thousands of a run.
counted() {
	local name=$1 label=$2 per=$3 s0 mine theirs
	mode "$4" "$5"
	shift 5
	# host b only serves: its snapshot waits until host a's last sample ended
	barrier "count-$name-ready"
	stats
	s0=$STATS
	barrier "count-$name"
	[ "$ROLE" = a ] && client ntb: --ulp "$SRV" "$PORT_ULP" "$@"
	barrier "count-$name-done" 3600
	stats
	mine=$(deltas "$s0" "$STATS")
	if [ "$ROLE" = b ]; then
		put "count-$name" "$mine"
		return
	fi
	theirs=$(get "count-$name")
	log "counted $name: a: $mine; b: $theirs"
	bench "$label" "$(awk -v per="$per" -v d="$mine $theirs" '
		function f(k, x) {
			if ((k in bad) || !(k in s) || !div)
				return "n/a"
			x = s[k] / div
			return sprintf(x >= 1000 ? "%.0f" : "%.2f", x)
		}
		BEGIN {
			n = split(d, w, " ")
			for (i = 1; i <= n; i++) {
				split(w[i], kv, "=")
				if (kv[2] ~ /^-?[0-9]+$/)
					s[kv[1]] += kv[2]
				else
					bad[kv[1]] = 1
			}
			div = per
			if (per == "MiB")
				div = ("tx_bytes" in bad) ? 0 : s["tx_bytes"] / 1048576
			printf "writes %s (small %s, medium %s, large %s), reads %s, doorbells %s, " \
				"interrupts %s, bytes written %s\n", f("link_writes"),
				f("link_writes_small"), f("link_writes_medium"), f("link_writes_large"),
				f("link_reads"), f("doorbells_tx"), f("interrupts"), f("link_write_bytes")
		}')"
}

# TCP over the ordinary link and ntbsmc, both servers up from here to the end
# of the comparisons.
once_per_kernel ulp_setup
barrier ntbsmc-loaded
ulp_wait_active
if [ "$ROLE" = a ]; then
	PRICED=no
	[ -w "$PARAMS/price_read_ns" ] && [ -w "$PARAMS/price_doorbell_ns" ] && PRICED=yes
	PORT_TCP=$((7000 + RANDOM % 1000))
	put priced "$PRICED"
	put ports "$PORT_TCP"
else
	PRICED=$(get priced)
	PORT_TCP=$(get ports)
fi
PORT_ULP=$((PORT_TCP + 1000))
[ "$PRICED" = yes ] || log "no $PARAMS/price_*: ntbsmc runs unpriced only"
# Start unpriced, whatever the module's default.
[ "$PRICED" = yes ] && once_per_kernel set_price unpriced
if [ "$ROLE" = b ]; then
	serve "$SRV" "$PORT_TCP"
	serve "$SRV" "$PORT_ULP" --ulp
fi
barrier servers-up

singles "tcp-$LINK" tcp "1024 1048576" - "$SRV" "$PORT_TCP"
singles "ntbsmc (unpriced)" ntb: "1024 1048576" - --ulp "$SRV" "$PORT_ULP"

# Streams at 64 KiB writes; in each round also one of protocol version 6
# (host a's connects offer only it: sysctl switch=0), which keeps no copy of
# what it sent for a switch of transport: what that copy costs.
for r in $(seq "$PAIRS"); do
	sample "stream tcp" tcp "$SRV" "$PORT_TCP" stream 65536 "$SECS"
	for v in $(variants "$r"); do
		mode 0 "$v"
		sample "stream $v" ntb: --ulp "$SRV" "$PORT_ULP" stream 65536 "$SECS"
	done
	mode 0 unpriced
	[ "$ROLE" = a ] && { sctl net.ntbsmc.switch=0 || check "switch=0" false; }
	sample "stream v6" ntb: --ulp "$SRV" "$PORT_ULP" stream 65536 "$SECS"
	[ "$ROLE" = a ] && { sctl net.ntbsmc.switch=1 || check "switch=1" false; }
done
compare stream-64k "stream, 64 KiB writes" "MB/s" "stream tcp" "TCP ($LINK)" stream
if [ "$ROLE" = a ]; then
	s6=${samples[stream v6]}
	bench "stream, 64 KiB writes: ntbsmc version 6 (no copy for a switch) unpriced MB/s, median [samples by round]" \
		"$(median %.1f "$s6") [${s6# }]"
	bench "stream, 64 KiB writes: version 7 / version 6 unpriced MB/s by round, median [min-max]" \
		"$(summary %.2f "$(ratios "${samples[stream unpriced]}" "$s6")")"
fi

# 1-byte round trips: per round TCP, then each ntbsmc variant with interrupts
# and busy-polling, in the order that switches the least (a switch of
# busy-polling costs two barriers).
for r in $(seq "$PAIRS"); do
	sample "rr tcp" tcp "$SRV" "$PORT_TCP" rr "$RR_COUNT"
	bps="0 $BP_US"
	for v in $(variants "$r"); do
		for bp in $bps; do
			mode "$bp" "$v"
			sample "rr-$bp $v" ntb: --ulp "$SRV" "$PORT_ULP" rr "$RR_COUNT"
		done
		bps="$BP_US 0"
	done
done
compare rr-interrupt "1-byte round trip, interrupts" "RTT us" "rr tcp" "TCP ($LINK)" rr-0
compare rr-busy-poll "1-byte round trip, ntbsmc busy-poll ${BP_US}us" "RTT us" "rr tcp" \
	"TCP ($LINK, the samples above)" "rr-$BP_US"

# Link operations, priced if the module can be (the hardware's timing).
cv=unpriced
[ "$PRICED" = yes ] && cv=priced
counted rr-irq "ntbsmc counted per message, rr interrupt, $cv" $((2 * RR_COUNT)) 0 $cv \
	rr "$RR_COUNT"
counted rr-bp "ntbsmc counted per message, rr busy-poll ${BP_US}us, $cv" $((2 * RR_COUNT)) \
	"$BP_US" $cv rr "$RR_COUNT"
counted stream "ntbsmc counted per MiB sent, stream 64 KiB writes, $cv" MiB 0 $cv \
	stream 65536 "$SECS"

# Switch-over, NTB to TCP: a stream from host a to host b, 64 KiB every 5 ms,
# whose host b port is unbound once it runs over NTB; the reader's longest
# wait for a byte (xfer's max_gap_ms; the pace alone makes 5 ms) is what the
# application sees of the move. TCP to NTB (failback) is not built.
ntb_conn_from() {
	[[ $(cli -j conn show mode ntb sport "$1") == *local_port* ]]
}
barrier switchover 3600
gaps=""
for r in $(seq "${BENCH_SWITCH_ROUNDS:-3}"); do
	p=$((PORT_ULP + 100 + r))
	if [ "$ROLE" = b ]; then
		inns "$XFER" server "$MY_IP" $p --ulp >"$WORK/switch$r.json" &
		srv=$!
		wait_for 60 "xfer server on $p" pid_listening $srv $p
		barrier "switch$r-up"
		wait_for 60 "the stream over NTB" ntb_conn_from $p
		nap 1
		port_unbind
		wait $srv || check "switch-over $r: xfer server failed: $(<"$WORK/switch$r.json")" false
		result "$WORK/switch$r.json"
		log "switch-over $r: $out"
		if [ "${O[failed_over]-missing}" = true ]; then
			gaps+=" ${O[max_gap_ms]-missing}"
		else
			gaps+=" n/a"
		fi
		port_bind
		barrier "switch$r-done"
	else
		barrier "switch$r-up"
		inns "$XFER" client "$SRV" $p --ulp --bytes 33554432 --write-size 65536 \
			--pace-ms 5 >"$WORK/switch$r.json" ||
			check "switch-over $r: xfer client failed: $(<"$WORK/switch$r.json")" false
		barrier "switch$r-done"
	fi
	ulp_wait_active
done
[ "$ROLE" = b ] && put switch-gaps "$gaps"
if [ "$ROLE" = a ]; then
	gaps=$(get switch-gaps)
	bench "switch-over NTB to TCP on link loss, reader's longest wait ms, median [min-max] [samples]" \
		"$(summary %.0f "$gaps") [${gaps# }]"
	bench "switch-over TCP to NTB (failback)" "n/a (not built)"
fi

barrier ulp-done 3600
[ "$ROLE" = b ] && serve_stop
# Closed connections hold the module until TCP has finished with them.
once_per_kernel wait_for 180 "ntbsmc to unload" rmmod ntbsmc
barrier ntbsmc-unloaded

# TCP over ntb_netdev
once_per_kernel load_module ntb_transport max_num_clients=1	# see fabric/ntb_transport.sh
once_per_kernel load_module ntb_netdev
barrier netdev-loaded
wait_for 30 "ntb_netdev interface" ntb_netdev_of "$NTB"
dev=$(ntb_netdev_of "$NTB")
[ -n "$NS" ] && in_first ip link set "$dev" netns "$NS"
inns ip addr add "10.78.0.$([ "$ROLE" = a ] && echo 1 || echo 2)/24" dev "$dev"
inns ip link set "$dev" up
barrier netdev-up
wait_for 60 "ntb_netdev carrier" carrier_up "$dev"
[ "$ROLE" = b ] && serve 10.78.0.2 "$PORT_TCP"
barrier netdev-serving
singles tcp-ntb_netdev tcp "1024 65536 1048576" rr 10.78.0.2 "$PORT_TCP"
barrier all-done 3600
[ "$ROLE" = b ] && serve_stop
checked
