#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The PCIe transaction budget, counted (not timed): what each host's ntbsmc
# puts on the link per message, from its counters (ntbsmc stats).
#
#   host a: nbench server  <====  host b: nbench client
#
#   1-byte round trips, interrupt mode and busy-poll, CPU path:
#     0 reads across the link; per message at most 3 posted writes (payload,
#     cursor, event: all small; and the receiver's event ring position once per
#     32 events) and 1 doorbell
#   64 KiB stream, CPU path and DMA path (software engine):
#     0 reads across the link on either host; the sender at most 64 posted
#     writes per MiB (a 64 KiB payload, its cursor, an event each), the
#     receiver at most 32 (its consumer cursor in quarters of its buffer,
#     its wants)
#
#   1-byte round trips with doorbell_flush=1: one read per doorbell, no other
#
# One more write is the design's, and it moves with time, not with messages:
# the re-check (recheck_ms) publishes a consumer cursor that rx.c held back,
# once per period at most, per connection; a 1-byte round trip never fills a
# quarter of the buffer, so on a slow or loaded machine, where 2000 round
# trips take longer, each period costs one write (on a new machine under load:
# 6166 writes for 2000 messages, 3.08 each). So every bound adds one write per
# recheck_ms period of the case's span, measured, and nothing else: a doorbell,
# a want or an event more per message still fails it.
#
# A read across the link stalls the CPU for microseconds on hardware and
# nothing here, so only a count shows it; the bounds include a connection's
# set-up and close (SLACK writes). Each case also checks that its bytes went
# over NTB. Figures per message and per MiB go to the log.
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"
source "$REPO/selftests/dma/lib.sh"

test_phases dma_setup dma_cleanup "$@"

ulp_wait_active
NB=$REPO/selftests/ulp/nbench
COUNT=2000
SECS=3
SLACK=64
port=7400
KEYS="link_writes link_writes_small link_writes_medium link_writes_large link_reads doorbells_tx
      interrupts tx_bytes rx_bytes dma_bytes"

sget RECHECK_MS net.ntbsmc.recheck_ms

declare -A c0 d
# snap/delta: the counters, and TICKS, the re-check periods in between (the
# span's, rounded up, and the one a connection's timer may have begun before)
snap() {
	stats
	local k
	for k in $KEYS; do c0[$k]=${S[$k]-missing}; done
	t_snap=${EPOCHREALTIME/./}
}
delta() {
	stats
	local k
	for k in $KEYS; do d[$k]=$((${S[$k]-missing} - ${c0[$k]})); done
	TICKS=0
	[ "$RECHECK_MS" -gt 0 ] &&
		TICKS=$(((${EPOCHREALTIME/./} - t_snap) / 1000 / RECHECK_MS + 2))
}

# per N DIVISOR: N / DIVISOR with two decimals
per() { awk -v n="$1" -v q="$2" 'BEGIN { printf "%.2f", q ? n / q : 0 }'; }

# run_case NAME CLIENT_ARGS...: host a serves, host b runs nbench client; both
# take their counters' deltas into d[].
run_case() {
	local name=$1 srv out
	local -A O	# (its fields, result's)
	shift
	port=$((port + 1))
	snap
	if [ "$ROLE" = a ]; then
		inns "$NB" server --ulp "$MY_IP" $port &
		srv=$!
		wait_for 60 "nbench server on $port" pid_listening $srv $port
		barrier "$name-up"
		barrier "$name-done"
		kill $srv 2>/dev/null
		wait $srv 2>/dev/null
	else
		barrier "$name-up"
		out=$(inns "$NB" client --ulp "$PEER_IP" $port "$@" 2>&1); jmap O "$out"
		log "$name: $out"
		check "$name: nbench ran over NTB: $out" [ "${out#*mode ntb}" != "$out" ]
		barrier "$name-done"
	fi
	# the server's socket closed: its last writes (the close) are in
	wait_for 30 "no connection of this host left" ulp_idle
	barrier "$name-idle"
	delta
	log "$name: $(for k in $KEYS; do printf '%s %s ' "$k" "${d[$k]}"; done)re-check periods $TICKS"
}

# The round trips: each host sent COUNT one-byte messages.
rr_budget() {
	local name=$1
	log "$name: per message: writes $(per "${d[link_writes]}" $COUNT), reads $(per "${d[link_reads]}" $COUNT), doorbells $(per "${d[doorbells_tx]}" $COUNT), interrupts $(per "${d[interrupts]}" $COUNT)"
	check "$name: ${d[link_reads]} reads across the link, want 0" [ "${d[link_reads]}" = 0 ]
	check "$name: ${d[link_writes]} posted writes for $COUNT messages, want <= 3 each, +1 per 32 events, +1 per re-check period ($TICKS) (+$SLACK)" \
		[ "${d[link_writes]}" -le $((3 * COUNT + COUNT / 32 + TICKS + SLACK)) ]
	check "$name: ${d[link_writes_medium]}+${d[link_writes_large]} writes over 64 bytes, want 0" \
		[ $((d[link_writes_medium] + d[link_writes_large])) -le 4 ]
	check "$name: ${d[doorbells_tx]} doorbells for $COUNT messages, want <= 1 each (+16)" \
		[ "${d[doorbells_tx]}" -le $((COUNT + 16)) ]
	check "$name: sent ${d[tx_bytes]} bytes over NTB, want >= $COUNT" [ "${d[tx_bytes]}" -ge $COUNT ]
}

# The stream: host b sent, host a received; per MiB of it.
stream_budget() {
	local name=$1 mib bound
	if [ "$ROLE" = b ]; then
		mib=$((d[tx_bytes] >> 20)) bound=64
	else
		mib=$((d[rx_bytes] >> 20)) bound=32
	fi
	log "$name: per MiB: writes $(per "${d[link_writes]}" $mib), reads $(per "${d[link_reads]}" $mib), doorbells $(per "${d[doorbells_tx]}" $mib)"
	check "$name: moved $mib MiB over NTB, want >= 8" [ "$mib" -ge 8 ]
	check "$name: ${d[link_reads]} reads across the link, want 0" [ "${d[link_reads]}" = 0 ]
	check "$name: ${d[link_writes]} posted writes for $mib MiB, want <= $bound per MiB, +1 per re-check period ($TICKS) (+$SLACK)" \
		[ "${d[link_writes]}" -le $((bound * mib + TICKS + SLACK)) ]
}

dma_paths 0 0
run_case rr_interrupt rr $COUNT
rr_budget rr_interrupt

sctl net.ntbsmc.busy_poll_us=1000 || fail "cannot set busy_poll_us"
run_case rr_busy_poll rr $COUNT
sctl net.ntbsmc.busy_poll_us=0
rr_budget rr_busy_poll

# doorbell_flush (hardware whose fence does not order the doorbell): exactly one
# read per doorbell, and none elsewhere; with the bench's doorbell price on, so
# that its timer path runs under the debug kernel too.
P=/sys/module/ntbsmc/parameters
echo 1 >$P/doorbell_flush && echo 5000 >$P/price_doorbell_ns || fail "cannot set the module's parameters"
run_case rr_flush rr 500
echo 0 >$P/doorbell_flush && echo 0 >$P/price_doorbell_ns
check "rr_flush: ${d[link_reads]} reads across the link for ${d[doorbells_tx]} doorbells, want one each" \
	[ "${d[link_reads]}" = "${d[doorbells_tx]}" -a "${d[link_reads]}" -ge 500 ]
# The prices spin with interrupts off: 100 us at most, a larger one refused
# (host a: in one VM both hosts share the parameters).
barrier prices
for p in price_read_ns price_doorbell_ns; do
	[ "$ROLE" = a ] || break
	old=$(<$P/$p)
	check "$p: 100000 taken, 100001 refused" \
		sh -c "echo 100000 >$P/$p && ! echo 100001 2>/dev/null >$P/$p && [ \$(cat $P/$p) = 100000 ]"
	echo "$old" >$P/$p
done
barrier prices-done

run_case stream_cpu stream 65536 $SECS
stream_budget stream_cpu

dma_paths 4096 0
run_case stream_dma stream 65536 $SECS
[ "$ROLE" = b ] && check "stream_dma: ${d[dma_bytes]} of ${d[tx_bytes]} bytes by DMA, want most" \
	[ "${d[dma_bytes]}" -ge $((d[tx_bytes] / 2)) ]
stream_budget stream_dma
dma_paths 0 0
checked
