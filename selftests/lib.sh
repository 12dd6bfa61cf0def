# SPDX-License-Identifier: GPL-2.0
# Helpers for the ntbsmc selftests, sourced by every test script (guest side).
#
# A test script is called as
#   TEST setup            once per kernel, before the roles run (load modules)
#   TEST run a|b          once per host; in the one-VM topology both roles run at
#                         once, each in its own network namespace
#   TEST cleanup          once per kernel, after the roles finished
# with this environment from vm/guest-run.sh:
#   ROLE PEER     a or b, and the other one
#   NTB           the NTB device (PCI name) this host owns
#   NS            the host's network namespace ("" in the two-VM topology)
#   MY_IP PEER_IP MY_IP6 PEER_IP6   addresses on the ordinary (veth/virtio) link
#   SYNC          a directory both hosts see, private to this test
#   TOPO          onevm or twovm
#   KBUILD REPO   the test kernel's build tree and the source tree
#   MODDIR        where our modules for this kernel were built (REPO, or a
#                 copy of the module sources for a second kernel series)

KSFT_SKIP=4
MODDIR=${MODDIR:-$REPO}
NTB_DBG=/sys/kernel/debug

# Scratch files: per role, since both hosts of the one-VM topology share /tmp.
WORK=/tmp/work-${ROLE:-none}
mkdir -p "$WORK"

# A role that ends, failed or not, takes its background processes with it: a
# server left behind would hold its socket (and the module) past the test.
_kill_jobs() {
	local p
	for p in $(jobs -p); do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
}
trap _kill_jobs EXIT

# Guest scripts start as few processes as they can: under emulation with the debug
# kernel one fork+exec costs about a second of the guest's time.
log() {
	local up _
	read -r up _ </proc/uptime
	echo "# [$ROLE $up] $*"
}
fail() { echo "# [$ROLE] FAIL: $*"; exit 1; }

# check DESCRIPTION CMD...: like an assertion, but the test goes on (so that the
# peer is not left waiting at a barrier); the test fails at its end via checked.
_failed=0
check() {
	local what=$1
	shift
	"$@" && return 0
	echo "# [$ROLE] FAIL: $what"
	_failed=1
	return 1
}
checked() { exit $_failed; }
# has TEXT PART / lacks TEXT PART: TEXT contains PART / does not.
has() { [[ $1 == *"$2"* ]]; }
lacks() { [[ $1 != *"$2"* ]]; }
# one_of VALUE WORD...: VALUE is one of the WORDs.
one_of() {
	local v=$1 w
	shift
	for w; do
		[ "$v" = "$w" ] && return 0
	done
	return 1
}
skip() { echo "# [$ROLE] SKIP: $*"; exit $KSFT_SKIP; }

# tier CHECK STRESS: how many (rounds, streams, bytes) for this run's tier.
# make check (NTBSMC_TIER=check) proves each behaviour once and fits its time
# budget; make stress (NTBSMC_TIER=stress) repeats the race-prone cases as
# often as the suite did before it had tiers. A count a test's verdict
# depends on is derived from these, never fixed beside them.
tier() {
	if [ "${NTBSMC_TIER:-check}" = stress ]; then echo "$2"; else echo "$1"; fi
}
stress_tier() { [ "${NTBSMC_TIER:-check}" = stress ]; }

# run CMD...: logs and runs a command, failing the test when it fails.
run() {
	log "+ $*"
	"$@" || fail "'$*' exited $?"
}

# test_phases SETUP CLEANUP "$@": a test's prologue, after its sources. The
# harness calls the test with "setup" before its roles run and with "cleanup"
# after them: these run SETUP or CLEANUP (a command or a function, without
# arguments) and exit with its status. Called otherwise ("run a|b"), the test
# goes on.
test_phases() {
	case ${3-} in
	setup) "$1"; exit ;;
	cleanup) "$2"; exit ;;
	esac
}

# The one-VM topology runs each role's shell in its host's network namespace
# (guest-run.sh), so that what it starts, and what it writes to /proc/sys/net,
# is that host's without `ip netns exec`: two process starts, up to two
# seconds in a loaded debug guest. _in_ns says so (always in the two VMs).
_in_ns=
{ [ -z "${NS:-}" ] || [ /proc/self/ns/net -ef "/run/netns/$NS" ]; } && _in_ns=1

# inns CMD...: runs CMD in this host's network namespace. In a subshell of its own
# ("inns CMD &", "$(inns CMD)", a pipeline) it execs, so that $! is CMD's pid (to
# kill it, wait for it, or read its /proc/PID/net) and not a shell's; so never use
# it in a subshell that has more to do after it. (The role's /sys is still the
# guest's, whose /sys/class/net lists the first namespace's interfaces:
# carrier_up and rx_bytes_of ask ip and /proc/net instead.)
inns() {
	local ns=()
	[ -n "$NS" ] && [ -z "$_in_ns" ] && ns=(ip netns exec "$NS")
	[ "$BASHPID" != $$ ] && exec "${ns[@]}" "$@"
	"${ns[@]}" "$@"
}

# sctl KEY=VALUE...: sets sysctls of this host's namespace (as sysctl -q -w,
# dots in KEY), a write each from this shell; fails on a value the kernel refuses.
sctl() {
	local kv k
	[ -n "$_in_ns" ] || { inns sysctl -q -w "$@"; return; }
	for kv; do
		k=${kv%%=*}
		{ echo "${kv#*=}" >"/proc/sys/${k//.//}"; } 2>/dev/null || return 1
	done
}

# sget VAR KEY: a sysctl of this host's namespace into VAR.
sget() {
	local _sg_k=${2//.//}
	printf -v "$1" %s ""
	if [ -n "$_in_ns" ]; then
		read -r "$1" <"/proc/sys/$_sg_k"
	else
		printf -v "$1" %s "$(inns cat "/proc/sys/$_sg_k")"
	fi
}

# last_line VAR FILE: FILE's last line into VAR ("" if none): $(tail -1 FILE)
# without starting a process. (These helpers set the caller's VAR with
# printf -v: their own locals have names no caller uses.)
last_line() {
	local _ll_line
	printf -v "$1" %s ""
	[ -r "$2" ] || return 1
	while IFS= read -r _ll_line || [ -n "$_ll_line" ]; do
		printf -v "$1" %s "$_ll_line"
	done <"$2"
}

# nap [SECONDS]: sleeps (50 ms) without starting a process (process start-up
# costs ~100 ms under emulation): a read that times out on a FIFO nobody writes.
_nap_fifo=$WORK/.nap.$$
nap() {
	if [ -z "${_nap_fd:-}" ]; then
		mkfifo "$_nap_fifo" && exec {_nap_fd}<>"$_nap_fifo" && rm -f "$_nap_fifo"
	fi
	read -r -t "${1:-0.05}" -u "$_nap_fd" _ || true
}

# pid_tcp PID PORT STATE...: a TCP socket in one of the STATEs (/proc's hex
# codes: 0A listening, 01 established) with local PORT, or remote PORT if it is
# connected, in the network namespace of process PID; read from /proc without
# starting a process.
pid_tcp() {
	local pid=$1 hex f _sl local rem st _rest
	printf -v hex ':%04X' "$2"
	shift 2
	for f in "/proc/$pid/net/tcp" "/proc/$pid/net/tcp6"; do
		[ -r "$f" ] || continue
		while read -r _sl local rem st _rest; do
			[[ " $* " == *" $st "* ]] || continue
			[[ $local == *"$hex" ]] && return 0
			[ "$st" != 0A ] && [[ $rem == *"$hex" ]] && return 0
		done <"$f"
	done
	return 1
}

# pid_listening PID PORT: something listens on TCP PORT in the network namespace
# of process PID.
pid_listening() { pid_tcp "$1" "$2" 0A; }

# pid_gone PID: process PID has ended (gone, or a zombie not yet waited for);
# read without starting a process, as pid_tcp.
pid_gone() {
	local st
	read -r st 2>/dev/null <"/proc/$1/stat" || return 0
	[[ $st == *") Z "* ]]
}

# pid_connected PID PORT: an established TCP connection there with local or
# remote PORT.
pid_connected() { pid_tcp "$1" "$2" 01; }

# carrier_up IFACE: the interface in this host's namespace has a carrier.
carrier_up() {
	[[ $(inns ip -o link show dev "$1" 2>/dev/null) == *LOWER_UP* ]]
}

# rx_bytes_of VAR IFACE: the bytes IFACE of this host's namespace received.
rx_bytes_of() {
	local _rb_ifc _rb_rx _
	printf -v "$1" %s ""
	while IFS=': ' read -r _rb_ifc _rb_rx _; do
		[ "$_rb_ifc" = "$2" ] && printf -v "$1" %s "$_rb_rx" && return 0
	done </proc/net/dev
	return 1
}

# in_first CMD...: runs CMD in the guest's first network namespace, where a
# port's interfaces appear before they are moved to a host's.
in_first() {
	if [ -n "$NS" ]; then
		nsenter --net=/proc/1/ns/net "$@"
	else
		"$@"
	fi
}

# ntb_ports: how many NTB ports this machine has (devices on the NTB bus).
ntb_ports() {
	ls /sys/bus/ntb/devices 2>/dev/null | wc -l
}

# wait_for SECONDS DESCRIPTION CMD...: polls CMD every 50 ms until it succeeds.
# CMD runs in this shell, so it may be a function.
wait_for() {
	local secs=$1 what=$2 end
	shift 2
	end=$((${EPOCHREALTIME/./} + secs * 1000000))
	until "$@" 2>/dev/null; do
		[ "${EPOCHREALTIME/./}" -lt "$end" ] || fail "timed out after ${secs}s waiting for $what"
		nap
	done
}

# barrier NAME [SECONDS]: both roles reach NAME before either goes on; fails after
# SECONDS (120) of waiting for the peer. Past half a second it looks every 0.4 s:
# a look costs the guest a 9p round trip and some ms of bash under emulation, and
# a long wait is usually the peer's measurement, running on the same CPUs (one
# VM) or needing this VM's only one (two VMs).
barrier() {
	local secs=${2:-120} n=0
	local end=$((${EPOCHREALTIME/./} + secs * 1000000))
	: >"$SYNC/$ROLE.$1"
	until test -e "$SYNC/$PEER.$1"; do
		[ "${EPOCHREALTIME/./}" -lt "$end" ] ||
			fail "timed out after ${secs}s waiting for $PEER to reach barrier '$1'"
		n=$((n + 1))
		if [ $n -le 10 ]; then nap; else nap 0.4; fi
	done
}

# put NAME VALUE / get NAME: hand a value to the peer through the sync directory.
put() {
	echo "$2" >"$SYNC/$ROLE.val.$1.tmp"
	mv "$SYNC/$ROLE.val.$1.tmp" "$SYNC/$ROLE.val.$1"
}
get() {
	wait_for 120 "$PEER to publish '$1'" test -e "$SYNC/$PEER.val.$1"
	cat "$SYNC/$PEER.val.$1"
}

# ko NAME: path of a module of the test kernel.
# Read from the tree's modules.order (NAME.ko in 6.1, NAME.o in 6.12), not found
# by a walk of its 6000 files over 9p.
ko() {
	local m
	while read -r m; do
		case "$m" in
		*/"$1".ko | "$1".ko | */"$1".o | "$1".o) echo "$KBUILD/${m%.*}.ko"; return ;;
		esac
	done <"$KBUILD/modules.order"
}

# load_module NAME [PARAMS]: loads a module of the test kernel (once per kernel).
load_module() {
	local name=$1
	shift
	grep -q "^$name " /proc/modules && return 0
	local path
	path=$(ko "$name")
	[ -n "$path" ] || fail "module $name not built in $KBUILD"
	run insmod "$path" "$@"
}

unload_module() {
	grep -q "^$1 " /proc/modules || return 0
	run rmmod "$1"
}

# pci_of_netdev IFACE: the PCI name of the NTB port an ntb_netdev interface runs on.
ntb_netdev_of() {
	local dev path
	for dev in /sys/class/net/*; do
		path=$(readlink -f "$dev/device" 2>/dev/null) || continue
		case "$path" in */"$1"/*) basename "$dev"; return 0 ;; esac
	done
	return 1
}
