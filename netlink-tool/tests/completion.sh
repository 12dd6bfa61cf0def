#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Bash completion tests: source ntbsmc.bash-completion, complete command lines
# as bash would (COMP_LINE, COMP_POINT, COMP_WORDS) and compare COMPREPLY.
#
# Run by "make check" in netlink-tool/. Device names and link group ids come
# from tests/ntbsmc-fake (the tool's sources answered by tests/fake_kernel.c),
# or from the stub below for PCI-address names. Prints TAP.

set -u
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=ntbsmc.bash-completion
. ./ntbsmc.bash-completion

FAKE=tests/ntbsmc-fake
n=0
failed=0

# Real NTB devices are named by their PCI address, and bash breaks words at ':'.
# shellcheck disable=SC2317 # run by the completion, as the tool
stub_pci() {
	[ "$*" = "dev show" ] && printf '%s\n' "0000:00:03.0: state active enabled yes" \
		"    fabric_id 0112233445566778899aabbccddeef00 netns_cookie 4097"
}

# expect FUNC LINE WANT: completing at the end of LINE gives the words WANT (any order).
expect() {
	local func=$1 line=$2 want=$3 got
	COMP_LINE=$line
	COMP_POINT=${#line}
	read -ra COMP_WORDS <<<"$line"
	[[ $line == *' ' ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	"$func"
	got=$(printf "%s\n" "${COMPREPLY[@]}" | sort -u | xargs)
	want=$(printf '%s\n' "$want" | tr ' ' '\n' | sort | xargs)
	n=$((n + 1))
	if [ "$got" = "$want" ]; then
		echo "ok $n - \"$line\" -> $want"
	else
		echo "not ok $n - \"$line\" -> $want"
		echo "#   got: $got"
		failed=$((failed + 1))
	fi
}

# Objects, with the tool's prefix matching and aliases.
expect _ntbsmc "ntbsmc d" "dev"
expect _ntbsmc "ntbsmc devi" "device"
expect _ntbsmc "ntbsmc " "dev linkgroup conn stats policy check help"
expect _ntbsmc "ntbsmc p" "policy"
expect _ntbsmc "ntbsmc c" "conn check"
expect _ntbsmc "ntbsmc -" "-j --json -p --pretty -d --details -n --netns -V --version -h --help"
expect _ntbsmc "ntbsmc -j -p " "dev linkgroup conn stats policy check help"
expect _ntbsmc "ntbsmc -V " ""
expect _ntbsmc "ntbsmc -n /proc/self/ns/ne" "/proc/self/ns/net"
expect _ntbsmc "ntbsmc --netns=/proc/self/ns/ne" "/proc/self/ns/net"
expect _ntbsmc "ntbsmc c s " ""

# dev
expect _ntbsmc "ntbsmc dev " "show set help"
expect _ntbsmc "ntbsmc dev s" "show set"
expect _ntbsmc "$FAKE dev show " "ntb0 ntb1"
expect _ntbsmc "$FAKE -j d s ntb" "ntb0 ntb1"
expect _ntbsmc "$FAKE dev show ntb0 " ""
expect _ntbsmc "$FAKE dev set " "ntb0 ntb1"
expect _ntbsmc "$FAKE dev set ntb1 " "enable disable netns"
expect _ntbsmc "$FAKE dev set ntb1 dis " "netns"
expect _ntbsmc "$FAKE dev se ntb1 netns /proc/self/ns/ne" "/proc/self/ns/net"
expect _ntbsmc "$FAKE dev set ntb1 netns 1 " "enable disable"
expect _ntbsmc "stub_pci dev show 0000:00:0" "03.0"
expect _ntbsmc "stub_pci dev set 0000:00:03.0 " "enable disable netns"

# linkgroup
expect _ntbsmc "ntbsmc linkgroup " "show help"
expect _ntbsmc "$FAKE lgr show " "3"
expect _ntbsmc "$FAKE lgr show 3 " ""

# conn
expect _ntbsmc "ntbsmc conn " "show help"
expect _ntbsmc "ntbsmc conn -" "-a --all -d --details -4 -6"
expect _ntbsmc "ntbsmc conn -a " "mode port lport dport lgr dev family"
expect _ntbsmc "ntbsmc conn show mode " "ntb tcp handshake listen"
expect _ntbsmc "ntbsmc conn show fam " "inet inet6"
expect _ntbsmc "ntbsmc co s -4 -a mode ntb " "port lport dport lgr dev"
expect _ntbsmc "ntbsmc conn show -4 -a -" "-d --details"
expect _ntbsmc "ntbsmc conn show port " ""
expect _ntbsmc "$FAKE conn show dev " "ntb0 ntb1"
expect _ntbsmc "$FAKE conn show linkgroup " "3"

# stats, check
expect _ntbsmc "ntbsmc stats " "show reset help"
expect _ntbsmc "ntbsmc stats reset " ""
expect _ntbsmc "ntbsmc check -" "-4 -6 -l --listen -t --timeout"
expect _ntbsmc "ntbsmc check -l -6 -" "-t --timeout -c --count"
expect _ntbsmc "ntbsmc check -t " ""
expect _ntbsmc "ntbsmc check localhos" "localhost"
expect _ntbsmc "ntbsmc check -l " ""

# policy; rule ids from the fake module's table of two rules
export NTBSMC_FAKE_POLICY
NTBSMC_FAKE_POLICY=$(mktemp)
trap 'rm -f "$NTBSMC_FAKE_POLICY"' EXIT
$FAKE policy add include 10.0.0.0/8 && $FAKE policy add exclude any port 22
expect _ntbsmc "ntbsmc policy " "show add del flush help"
expect _ntbsmc "ntbsmc policy d" "del"
expect _ntbsmc "ntbsmc policy add " "include exclude"
expect _ntbsmc "ntbsmc policy add ex" "exclude"
expect _ntbsmc "ntbsmc policy add include " "any port"
expect _ntbsmc "ntbsmc po a ex 10.0.0.0/8 " "port"
expect _ntbsmc "ntbsmc policy add ex any " "port"
expect _ntbsmc "ntbsmc policy add ex port " ""
expect _ntbsmc "ntbsmc policy add ex port 22 " "any"
expect _ntbsmc "ntbsmc policy add ex p 22 fd00::/8 " ""
expect _ntbsmc "ntbsmc policy flush " ""
expect _ntbsmc "$FAKE policy del " "1 2"
expect _ntbsmc "$FAKE policy delete " "1 2"
expect _ntbsmc "$FAKE policy del 1 " ""

# ntbsmc_run: its options, then the program's completion.
expect _ntbsmc_run "ntbsmc_run -" "-p -a -d -h --bpf --scope --"
expect _ntbsmc_run "ntbsmc_run -p " ""
expect _ntbsmc_run "ntbsmc_run -p 80 -d -" "-p -a -d -h --bpf --scope --"
expect _ntbsmc_run "ntbsmc_run --bpf --scope " "cgroup netns"
expect _ntbsmc_run "ntbsmc_run --bpf --scope n" "netns"
expect _ntbsmc_run "ntbsmc_run --bpf --scope netns -- stub_pc" "stub_pci"
expect _ntbsmc_run "ntbsmc_run -- stub_pc" "stub_pci"

echo "1..$n"
[ "$failed" = 0 ] || echo "# $failed of $n failed"
exit $((failed != 0))
