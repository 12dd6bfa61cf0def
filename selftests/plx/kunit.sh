#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntb_hw_plx's KUnit suite (selftests/plx/plx_kunit.c), once per kernel: the
# exact register writes the driver makes at probe, link-up, translation set and
# clear, doorbells, DL_Down and unbind, in B2B (large and small last BAR, 32- and
# 64-bit BARs), NTB-to-Root-Port from each side and with the A-LUT on and off,
# against traces worked out from the register map; no NTB port is needed, the
# suite drives the chip logic through a recording backend.
source "$REPO/selftests/lib.sh"

# the suite runs once per kernel, in setup; the hosts have nothing to do
case $1 in
run | cleanup) exit 0 ;;
esac

plx=$MODDIR/ntb_hw_plx/ntb_hw_plx.ko
test=$MODDIR/selftests/plx/plx_kunit.ko
[ -e "$test" ] || skip "plx_kunit.ko not built (a kernel without CONFIG_KUNIT?)"
# the fabric's plx profile runs on the driver: leave it loaded then
loaded=
grep -q "^ntb_hw_plx " /proc/modules || { run insmod "$plx"; loaded=1; }
# the suite runs when its module loads; its report is what the kernel logged since
seen=$(dmesg | wc -l)
run insmod "$test"
report=$(dmesg | tail -n +"$((seen + 1))")
echo "$report" | sed 's/^\[[ 0-9.]*\] */# /'
run rmmod plx_kunit
[ -z "$loaded" ] || run rmmod ntb_hw_plx

# "# ntb_hw_plx: pass:N fail:N skip:N total:N", and every case ran
totals=$(echo "$report" | grep -o 'ntb_hw_plx: pass:[0-9]* fail:[0-9]* skip:[0-9]* total:[0-9]*')
echo "$report" | grep -q "^\[[ 0-9.]*\] ok [0-9]* ntb_hw_plx$" ||
	fail "the ntb_hw_plx suite did not pass (its report above)"
[ -n "$totals" ] || fail "no totals for the ntb_hw_plx suite in the kernel log"
log "$totals"
# (a here-string: the guests have no /dev/fd for process substitution)
read -r pass fail skipped total <<<"$(echo "$totals" | sed 's/[^0-9 ]//g; s/  */ /g; s/^ //')"
cases=$(grep -c 'KUNIT_CASE(' "$REPO/selftests/plx/plx_kunit.c")
[ "$fail" = 0 ] || fail "$fail of $total KUnit cases failed"
[ "$skipped" = 0 ] || fail "$skipped KUnit cases skipped"
[ "$pass" = "$cases" ] || fail "$pass cases passed, the suite has $cases"
