#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntbsmc_run --bpf: a statically linked program that issues its socket calls
# as raw system calls (ulp/rawsys: LD_PRELOAD cannot reach it) goes over NTB
# when a BPF program on update_socket_protocol makes its TCP sockets
# IPPROTO_NTBSMC. It needs a kernel with the hook and BTF: make check runs it
# in one VM on Debian's own 6.12 image (the pkg boot), the packages installed;
# the tests' kernels have neither.
#
#   host a --- TCP + NTB link --- host b (BPF selector)
#
#   - a host without the hook (a 6.1 kernel): ntbsmc_run --bpf refuses (exit 1,
#     "only the preload helper works here") and runs nothing (on Debian's 6.1
#     image ulp/packaged.sh proves it too)
#   - rawsys is static (no program interpreter) and has none of libc's socket
#     functions; under the preload helper it stays TCP (no_ulp)
#   - under --bpf (cgroup scope) it connects and serves over NTB, IPv4 and
#     IPv6: mode, reasons, SO_PROTOCOL 6, bytes checked both ways and counted
#     over NTB; the selector says it rewrote exactly its one socket
#   - scope and lifetime: while a selector (cgroup) runs, its process is in the
#     selector's cgroup, a process outside it stays TCP, and the module cannot
#     be unloaded; SIGTERM reaches the program, the exit status passes through,
#     the cgroup goes. A netns selector takes every process of the namespace
#     (a plain rawsys goes NTB); after it detaches, a new socket is TCP. A
#     process that outlives its program is moved out and the cgroup removed
#   - bad input: an unknown scope, -p with --bpf (exit 2), no privilege (exit 1,
#     CAP_BPF named), a program that does not exist (127): nothing ran, nothing
#     left attached
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

test_phases ulp_setup ulp_cleanup "$@"

RUN=$REPO/netlink-tool/ntbsmc_run
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
ulp_wait_active
port=6700

# selector_attached LOG: the selector whose -d output goes to LOG is attached.
selector_attached() { grep -q "are IPPROTO_NTBSMC$" "$1"; }

# not_in PATTERN FILE: FILE has no line matching PATTERN.
not_in() { ! grep -q "$1" "$2"; }

# no_selector_cgroup: no cgroup of a selector is left.
no_selector_cgroup() { ! compgen -G "$CG/ntbsmc-run.*" >/dev/null; }

# ---- a host without the hook: --bpf refuses ----
# The selector's cases need it on b, and a peer that may run a selector; a
# pair where either lacks it (a 6.1 kernel) stops after the refusal.
hook=yes
bpf_hook || hook=no
# make check runs this on Debian's 6.12 image, which has both: the selector's
# cases must run there, not only the refusal
case $(uname -r) in
6.[0-5].* | [1-5].*) ;;
*)	[ $hook = no ] && [ -n "${IVS_PARAMS:-}" ] && [ -e "/boot/config-$(uname -r)" ] &&
		fail "Debian's $(uname -r) has no update_socket_protocol hook or BTF" ;;
esac
put hook $hook
peer_hook=$(get hook)
if [ $hook = no ]; then
	rm -f "$WORK/ran"
	err=$("$RUN" --bpf touch "$WORK/ran" 2>&1)
	rc=$?
	log "no hook: exit $rc: $err"
	check "no hook: exit $rc, want 1" [ $rc = 1 ]
	check "no hook: message: $err" has "$err" "Only the preload helper works here"
	check "no hook: message names the kernel: $err" has "$err" "($(uname -r))"
	check "no hook: the program ran" [ ! -e "$WORK/ran" ]
fi
if [ $hook = no ] || [ "$peer_hook" = no ]; then
	log "hook here: $hook, on $PEER: $peer_hook: no selector case runs"
	checked
fi

# ---- the hook: b selects, a is its peer ----
if [ "$ROLE" = b ]; then
	CG=/sys/fs/cgroup
	if ! grep -q " $CG cgroup2 " /proc/mounts; then
		run mount -t cgroup2 none $CG
	fi

	# Static, and none of libc's socket functions: only raw system calls.
	interp=$(readelf -l "$RAWSYS" | grep -c "program interpreter")
	check "rawsys has a program interpreter (not static)" [ "$interp" = 0 ]
	syms=$(nm "$RAWSYS" | grep -wE "[TtWw] (__)?(socket|connect|accept4?|bind|listen)$" || true)
	check "rawsys links libc's socket functions: $syms" [ -z "$syms" ]

	# Bad input: nothing runs, nothing stays attached.
	rm -f /tmp/bpfsel-ran
	for bad in "--bpf --scope bogus" "--bpf -p 80"; do
		# shellcheck disable=SC2086
		err=$("$RUN" $bad touch /tmp/bpfsel-ran 2>&1)
		rc=$?
		check "$bad: exit $rc, want 2 ($err)" [ $rc = 2 ]
	done
	err=$($NOBODY "$RUN" --bpf touch /tmp/bpfsel-ran 2>&1)
	rc=$?
	log "as nobody: exit $rc: $err"
	check "as nobody: exit $rc, want 1" [ $rc = 1 ]
	check "as nobody: message names CAP_BPF: $err" has "$err" "CAP_BPF"
	check "usage errors: the program ran" [ ! -e /tmp/bpfsel-ran ]
	err=$("$RUN" --bpf /nonexistent/prog 2>&1)
	rc=$?
	check "missing program: exit $rc, want 127 ($err)" [ $rc = 127 ]
	check "missing program: message: $err" has "$err" "/nonexistent/prog: No such file"
	"$RUN" --bpf sh -c 'exit 7'
	rc=$?
	check "the program's exit status: $rc, want 7" [ $rc = 7 ]
	check "a selector's cgroup is left" no_selector_cgroup
fi
barrier bad-input

# ---- the static program under each way in ----
# LD_PRELOAD does not reach it: TCP, and the server's peer did not offer.
raw_case preload_static a "" "--proto" "$RUN" "" tcp peer_no_offer no_ulp
raw_case bpf_client a "" "--proto" "$RUN --bpf -d" "--bytes 4194304" ntb none none
if [ "$ROLE" = b ]; then
	check "bpf_client: selector count: $(<"$WORK/bpf_client.err")" \
		grep -q "^ntbsmc_run: --bpf: 1 sockets made IPPROTO_NTBSMC; detached$" "$WORK/bpf_client.err"
	check "bpf_client: a selector's cgroup is left" no_selector_cgroup
fi
raw_case bpf_server b "$RUN --bpf" "" "" "--proto --bytes 4194304" ntb none none
raw_case bpf_ipv6 a "" "--proto" "$RUN --bpf" "-6 --bytes 1048576" ntb none none

# ---- scope: a cgroup selector takes its own processes only ----
if [ "$ROLE" = b ]; then
	"$RUN" --bpf -d sleep 600 2>"$WORK/cg.err" &
	sel=$!
	wait_for 60 "the cgroup selector" selector_attached "$WORK/cg.err"
	kid=$(pgrep -P $sel -x sleep)
	check "the program is not in the selector's cgroup: $(</proc/$kid/cgroup)" \
		grep -q "/ntbsmc-run\.$sel$" /proc/$kid/cgroup
	msg=$(rmmod ntbsmc 2>&1)
	rc=$?
	check "rmmod under an attached selector: exit $rc ($msg), want refused" [ $rc != 0 ]
	check "ntbsmc unloaded under an attached selector" grep -q "^ntbsmc " /proc/modules
fi
barrier cg-attached
raw_case cg_outside a "" "--proto" "" "" tcp peer_no_offer no_ulp
if [ "$ROLE" = b ]; then
	kill -TERM $sel
	wait $sel
	rc=$?
	check "SIGTERM to the selector: exit $rc, want 143 (its program got it)" [ $rc = 143 ]
	check "the cgroup selector's program still runs" [ ! -e "/proc/$kid" ]
	wait_for 10 "the selector's cgroup gone" no_selector_cgroup
fi
barrier cg-done

# ---- a netns selector takes the namespace; detached, sockets are TCP ----
if [ "$ROLE" = b ]; then
	inns "$RUN" --bpf --scope netns -d sleep 600 2>"$WORK/ns.err" &
	sel=$!
	wait_for 60 "the netns selector" selector_attached "$WORK/ns.err"
fi
barrier ns-attached
raw_case ns_plain a "" "--proto" "" "--bytes 1048576" ntb none none
if [ "$ROLE" = b ]; then
	kill -TERM $sel
	wait $sel
	check "netns selector: $(<"$WORK/ns.err")" \
		grep -q "^ntbsmc_run: --bpf: 1 sockets made IPPROTO_NTBSMC; detached$" "$WORK/ns.err"
fi
barrier ns-detached
raw_case ns_detached a "" "--proto" "" "" tcp peer_no_offer no_ulp

# ---- a process that outlives its program is moved out of the cgroup ----
if [ "$ROLE" = b ]; then
	"$RUN" --bpf sh -c "sleep 600 >/dev/null 2>&1 & echo \$! >$WORK/survivor"
	kid=$(<"$WORK/survivor")
	check "the survivor is gone" [ -e "/proc/$kid" ]
	check "the survivor is still in the selector's cgroup: $(</proc/$kid/cgroup)" \
		not_in "/ntbsmc-run\." "/proc/$kid/cgroup"
	check "a selector's cgroup is left" no_selector_cgroup
	kill "$kid"
fi
barrier survivor
wait_for $IDLE_WAIT "no buffer, orphan or connection left" ulp_idle
checked
