#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntbsmc_run and libntbsmc-preload.so on the host, without the ntbsmc module. Prints TAP.
#
#   one process (ntbsmc_run PROGRAM), everything over the loopback device:
#
#     listener  [::]:PORT or 127.0.0.1:PORT or [::1]:PORT  <---  clients (threads,
#         |  listen(): ULP?                                      forked and exec'd
#         +-- accepted sockets (inherit the listener's ULP)      children) connect(): ULP?
#
# Run by "make check" in netlink-tool/. Two ways to answer setsockopt(TCP_ULP, "ntbsmc"):
#  - real: the host kernel, which has no ntbsmc module and fails with ENOENT; proves the
#    program runs unharmed (bytes checksummed, errno unchanged) and, with -d, which
#    sockets the library tried;
#  - fake: a preloaded shim (built below from $TMP/fake_ulp.c) that accepts "ntbsmc" on
#    a fresh socket like the module does (EISCONN, EINVAL, EEXIST otherwise), answers
#    getsockopt(TCP_ULP) with it, logs every attempt and leaves a stray errno behind;
#    proves the ULP really is set, exactly on the sockets the filters select.
# The kernel's own "tls" ULP cannot stand in for the module: it attaches only to an
# ESTABLISHED socket (and is often not even built).

set -u
cd "$(dirname "$0")/.." || exit 1

RUN=$PWD/ntbsmc_run
LIB=$PWD/libntbsmc-preload.so
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0
failed=0

result() {	# result OK DESCRIPTION [DETAILS]
	n=$((n + 1))
	if [ "$1" = 1 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		[ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/#   /'
		failed=$((failed + 1))
	fi
}

finish() {
	echo "1..$n"
	[ "$failed" = 0 ] || echo "# $failed of $n failed"
	exit $((failed != 0))
}

# run CMD...: sets $rc, $out (stdout), $err (stderr) and $log (the fake ULP's attempts)
run() {
	: >"$TMP/ulp.log"
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	out=$(cat "$TMP/out")
	err=$(cat "$TMP/err")
	log=$(cat "$TMP/ulp.log")
}

details() {
	printf 'command: %s\nrc=%s\nstdout: %s\nstderr: %s\nfake ULP log: %s\n' \
		"$cmd" "$rc" "$out" "$err" "$log"
}

# has TEXT REGEX DESCRIPTION: a line of TEXT matches REGEX
has() {
	grep -Eq -- "$2" <<<"$1"
	result $((! $?)) "$3" "$(details)
want a line matching: $2"
}

# count TEXT REGEX N DESCRIPTION: exactly N lines of TEXT match REGEX
count() {
	local c
	c=$(grep -Ec -- "$2" <<<"$1")
	[ "$c" = "$3" ]
	result $((! $?)) "$4" "$(details)
want $3 lines matching $2, got $c"
}

# is VALUE WANT DESCRIPTION
is() {
	[ "$1" = "$2" ]
	result $((! $?)) "$3" "$(details)
got:  $1
want: $2"
}

# real CMD...: under ntbsmc_run with the host kernel; fake CMD...: with the fake ULP
real() {
	cmd="$*"
	run "$@"
}

fake() {
	cmd="fake: $*"
	run env LD_PRELOAD="$TMP/fake_ulp.so" FAKE_ULP_LOG="$TMP/ulp.log" "$@"
}

# ---- ntbsmc_run: usage and finding the library (needs nothing else) ----

real "$RUN" -h
is "$rc" 0 "-h: exit 0"
has "$out" '^Usage: ntbsmc_run \[-p PORTS\] \[-a ADDRS\] \[-d\] \[-h\] \[--\] PROGRAM' "-h: usage"
real "$RUN"
is "$rc" 2 "no program: exit 2"
has "$err" '^ntbsmc_run: no program given' "no program: message"
real "$RUN" -x true
is "$rc" 2 "unknown option: exit 2"
has "$err" '^ntbsmc_run: unknown option -x' "unknown option: message"
real "$RUN" -p
is "$rc" 2 "-p without PORTS: exit 2"
has "$err" '^ntbsmc_run: option -p needs an argument' "-p without PORTS: message"

mkdir -p "$TMP/alone"
cp "$RUN" "$TMP/alone/"
real "$TMP/alone/ntbsmc_run" true
is "$rc" 1 "library missing: exit 1"
has "$err" '^ntbsmc_run: libntbsmc-preload.so not found' "library missing: message"

# --bpf: its options (the selector itself needs a kernel with the hook: the
# guests' ulp/bpfsel.sh); nothing runs on a usage error.
has "$(sh "$RUN" -h)" '^       ntbsmc_run --bpf \[--scope cgroup|netns\]' "-h: --bpf usage"
for bad in "--bpf --scope bogus" "--bpf --scope=bogus" "--bpf -s bogus"; do
	# shellcheck disable=SC2086
	real "$RUN" $bad touch "$TMP/ran"
	is "$rc" 2 "$bad: exit 2"
	has "$err" "^ntbsmc_run: unknown scope 'bogus' \\(cgroup or netns\\)" "$bad: message"
done
real "$RUN" --bpf --scope
is "$rc" 2 "--scope without a value: exit 2"
real "$RUN" --scope netns touch "$TMP/ran"
is "$rc" 2 "--scope without --bpf: exit 2"
has "$err" '^ntbsmc_run: --scope goes with --bpf' "--scope without --bpf: message"
real "$RUN" --bpf -p 80 touch "$TMP/ran"
is "$rc" 2 "--bpf with -p: exit 2"
has "$err" "^ntbsmc_run: -p and -a filter in the preload helper; with --bpf choose peers and ports with 'ntbsmc policy'" "--bpf with -p: message"
real env NTBSMC_ADDRS=10.0.0.0/8 "$RUN" --bpf touch "$TMP/ran"
is "$rc" 2 "--bpf with NTBSMC_ADDRS: exit 2"
real "$RUN" --frob touch "$TMP/ran"
is "$rc" 2 "unknown long option: exit 2"
has "$err" '^ntbsmc_run: unknown option --frob' "unknown long option: message"
[ ! -e "$TMP/ran" ]
result $((! $?)) "usage errors: the program never ran"
real "$RUN" -p 80 -- sh -c 'printf %s "$*"' x --bpf --scope bogus
is "$out" "--bpf --scope bogus" "PROGRAM's own --bpf and --scope are its arguments"
real "$TMP/alone/ntbsmc_run" --bpf true
is "$rc" 1 "selector missing: exit 1"
has "$err" '^ntbsmc_run: ntbsmc-bpf not found' "selector missing: message"

real "$RUN" sh -c 'exit 7'
is "$rc" 7 "the program's exit status passes through"
real "$RUN" -p 80,443 -a ::1 -d -- sh -c 'echo "$NTBSMC_PORTS|$NTBSMC_ADDRS|$NTBSMC_DEBUG"'
is "$out" "80,443|::1|1" "-p -a -d: exported to the program"
real env LD_PRELOAD=/nonexistent/other.so "$RUN" sh -c 'printf %s "$LD_PRELOAD"'
is "$out" "$LIB:/nonexistent/other.so" "LD_PRELOAD: the library is prepended, absolute"
real env LD_PRELOAD="$LIB" "$RUN" "$RUN" sh -c 'printf %s "$LD_PRELOAD"'
is "$out" "$LIB" "LD_PRELOAD: nested ntbsmc_run adds the library once"

# "make install" into $TMP: ../lib/ntbsmc from sbin, then the directory baked in.
inst=$TMP/inst
real "${MAKE:-make}" -s install PREFIX="$inst" SBINDIR="$inst/sbin" PKGLIBDIR="$inst/lib/ntbsmc"
is "$rc" 0 "make install"
real "$inst/sbin/ntbsmc_run" sh -c 'printf %s "$LD_PRELOAD"'
is "$out" "$inst/lib/ntbsmc/libntbsmc-preload.so" "installed: library found in ../lib/ntbsmc"
[ -x "$inst/lib/ntbsmc/ntbsmc-bpf" ]
result $((! $?)) "installed: ntbsmc-bpf beside the library"
real "${MAKE:-make}" -s install PREFIX="$inst" SBINDIR="$inst/bin/x" PKGLIBDIR="$inst/pkg"
real "$inst/bin/x/ntbsmc_run" sh -c 'printf %s "$LD_PRELOAD"'
is "$out" "$inst/pkg/libntbsmc-preload.so" "installed: library found in the baked-in directory"
real "${MAKE:-make}" -s uninstall PREFIX="$inst" SBINDIR="$inst/bin/x" PKGLIBDIR="$inst/pkg"
[ ! -e "$inst/bin/x/ntbsmc_run" ] && [ ! -e "$inst/pkg" ] && [ ! -e "$inst/bin/x/ntbsmc" ]
result $((! $?)) "make uninstall" "$(ls -R "$inst")"

PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
CC=${CC:-cc}
if [ -z "$PY" ] || ! command -v "$CC" >/dev/null; then
	echo "ok $((n += 1)) - sockets # SKIP needs python3 and a C compiler"
	finish
fi

# ---- the fake module ----

cat >"$TMP/fake_ulp.c" <<'EOF'
/* A stand-in for the ntbsmc module's TCP_ULP, preloaded behind libntbsmc-preload.so. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static char has_ulp[65536];

static void note(int fd, const char *what)
{
	const char *path = getenv("FAKE_ULP_LOG");
	int lfd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;

	if (lfd >= 0) {
		dprintf(lfd, "pid %d fd %d %s\n", (int)getpid(), fd, what);
		((int (*)(int))dlsym(RTLD_NEXT, "close"))(lfd);
	}
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	static int (*real)(int, int, int, const void *, socklen_t);
	const char *mode = getenv("FAKE_ULP");
	char ulp[16] = "";
	struct tcp_info ti;
	socklen_t tlen = sizeof(ti);

	if (!real)
		real = dlsym(RTLD_NEXT, "setsockopt");
	if (level != SOL_TCP || name != TCP_ULP || fd < 0 || fd >= 65536)
		return real(fd, level, name, val, len);
	memcpy(ulp, val, len < sizeof(ulp) - 1 ? len : sizeof(ulp) - 1);
	if (strcmp(ulp, "ntbsmc"))
		return real(fd, level, name, val, len);
	if (mode && !strcmp(mode, "enoent")) {
		note(fd, "ENOENT");
		errno = ENOENT;
		return -1;
	}
	if (getsockopt(fd, SOL_TCP, TCP_INFO, &ti, &tlen))
		return -1;
	errno = ti.tcpi_state == TCP_LISTEN ? EINVAL : ti.tcpi_state != TCP_CLOSE ? EISCONN :
		has_ulp[fd] ? EEXIST : 0;
	note(fd, errno == EINVAL ? "EINVAL" : errno == EISCONN ? "EISCONN" :
		 errno == EEXIST ? "EEXIST" : "set");
	if (errno)
		return -1;
	has_ulp[fd] = 1;
	errno = EXDEV;	/* a stray errno the library must not let through */
	return 0;
}

int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	static int (*real)(int, int, int, void *, socklen_t *);

	if (!real)
		real = dlsym(RTLD_NEXT, "getsockopt");
	if (level != SOL_TCP || name != TCP_ULP || fd < 0 || fd >= 65536 || !has_ulp[fd])
		return real(fd, level, name, val, len);
	*len = *len < 16 ? *len : 16;
	strncpy(val, "ntbsmc", *len);
	errno = EXDEV;
	return 0;
}

int close(int fd)
{
	if (fd >= 0 && fd < 65536)
		has_ulp[fd] = 0;
	return ((int (*)(int))dlsym(RTLD_NEXT, "close"))(fd);
}
EOF
if ! "$CC" -O1 -Wall -Werror -fPIC -shared -o "$TMP/fake_ulp.so" "$TMP/fake_ulp.c" -ldl; then
	result 0 "build the fake ULP"
	finish
fi

# ---- the test program ----

cat >"$TMP/probe.py" <<'EOF'
"""Sockets for tests/preload.sh: each command prints what the test compares."""
import ctypes, errno, hashlib, os, platform, select, socket, subprocess, sys, threading

SOL_TCP, TCP_ULP = 6, 31
LO = {"4": "127.0.0.1", "6": "::1"}
libc = ctypes.CDLL(None, use_errno=True)


def ulp(s):
    name = s.getsockopt(SOL_TCP, TCP_ULP, 16).split(b"\0")[0].decode()
    return name or "none"


def ename(e):
    return errno.errorcode.get(e, str(e)) if e else "0"


def listener(host, port, backlog=8):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if fam == socket.AF_INET6 and host == "::":
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind((host, port))
    s.listen(backlog)
    return s


def client(host, flags=0):
    """host: an address, or m:a.b.c.d for an AF_INET6 socket to ::ffff:a.b.c.d."""
    if host.startswith("m:"):
        host = "::ffff:" + host[2:]
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.socket(fam, socket.SOCK_STREAM | flags), host


def pair(fam, port, nbytes):
    """Listener and client in one process (two threads), bytes there and back."""
    lst = listener(LO[fam], int(port))
    data = os.urandom(int(nbytes))
    got = {}

    def serve():
        conn, _ = lst.accept()
        got["accepted"] = ulp(conn)
        buf = bytearray()
        while chunk := conn.recv(65536):
            buf += chunk
        got["server"] = hashlib.sha256(buf).hexdigest()
        conn.sendall(buf)
        conn.close()

    t = threading.Thread(target=serve)
    t.start()
    c, _ = client(LO[fam])
    c.connect((LO[fam], int(port)))
    cu = ulp(c)
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    back = bytearray()
    while chunk := c.recv(65536):
        back += chunk
    t.join()
    sent, echoed = hashlib.sha256(data).hexdigest(), hashlib.sha256(back).hexdigest()
    print(f"listen_ulp={ulp(lst)} client_ulp={cu} accepted_ulp={got['accepted']}")
    print(f"sent={sent} server={got['server']} echoed={echoed}")
    print("data", "ok" if sent == got["server"] == echoed and len(back) == len(data)
          else "corrupt")


def multi(port, *hosts):
    """A dual-stack listener on [::]:port; one connection to it from each host."""
    lst = listener("::", int(port))
    lst.listen(4)       # again, as servers do to change the backlog
    print(f"listen ulp={ulp(lst)}")
    for h in hosts:
        c, addr = client(h)
        e = c.connect_ex((addr, int(port)))
        print(f"{h} errno={ename(e)} ulp={ulp(c)}")
        c.close()


def sockaddr_in(port):
    return (socket.AF_INET.to_bytes(2, sys.byteorder) + int(port).to_bytes(2, "big") +
            socket.inet_aton("127.0.0.1") + bytes(8))


def serve(port):
    """A listener for errnos(), in a process without the library."""
    lst = listener("127.0.0.1", int(port))
    print("ready", flush=True)
    sys.stdin.read()
    lst.close()


def errnos(open_port, closed_port, first):
    """errno as libc's callers see it, through ctypes: no Python in between.

    Without the module, only the first attempt of a process reaches the kernel (then
    ENOENT is cached): first=connect or first=listen says which call makes it."""
    res = {}

    def call(name, fn, fd, *args):
        ctypes.set_errno(errno.EDOM)
        rc = fn(fd, *args)
        res[name] = f"{name} rc={rc} errno={ename(ctypes.get_errno())}"

    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    if first == "connect":
        srv = subprocess.Popen([sys.executable, __file__, "serve", open_port], env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        srv.stdout.readline()
    else:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", int(open_port)))
        call("listen", libc.listen, s.fileno(), 8)
    c = socket.socket()
    call("connect", libc.connect, c.fileno(), sockaddr_in(open_port), 16)
    r = socket.socket()
    call("refused", libc.connect, r.fileno(), sockaddr_in(closed_port), 16)
    call("listen_connected", libc.listen, c.fileno(), 8)
    if first == "connect":
        srv.stdin.close()
        srv.wait()
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", int(open_port)))
        call("listen", libc.listen, s.fileno(), 8)
    for name in "connect", "refused", "listen", "listen_connected":
        print(res[name])


def nonblock(port):
    """SOCK_NONBLOCK|SOCK_CLOEXEC: connect and its retries, errno of each call."""
    full = listener("127.0.0.1", int(port), 0)
    a, _ = client("127.0.0.1")
    a.connect(("127.0.0.1", int(port)))     # fills the accept queue: SYNs are dropped
    b, _ = client("127.0.0.1", socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC)
    r1 = b.connect_ex(("127.0.0.1", int(port)))
    bu = ulp(b)
    r2 = b.connect_ex(("127.0.0.1", int(port)))
    print(f"pending: {ename(r1)} {ename(r2)} ulp={bu}")
    b.close()
    a.close()
    full.close()
    lst = listener("127.0.0.1", int(port))
    c, _ = client("127.0.0.1", socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC)
    r1 = c.connect_ex(("127.0.0.1", int(port)))
    select.select([], [c], [], 5)
    r2 = c.connect_ex(("127.0.0.1", int(port)))
    r3 = c.connect_ex(("127.0.0.1", int(port)))
    print(f"completing: {ename(r1)} {ename(r2)} {ename(r3)} ulp={ulp(c)}")


def forks(port):
    """Children: fork() only, and fork()+exec() of this script."""
    lst = listener("127.0.0.1", int(port))
    print(f"parent pid={os.getpid()}")
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        c, _ = client("127.0.0.1")
        c.connect(("127.0.0.1", int(port)))
        print(f"forked pid={os.getpid()} ulp={ulp(c)}")
        sys.stdout.flush()
        os._exit(0)
    os.waitpid(pid, 0)
    subprocess.run([sys.executable, __file__, "connect", "127.0.0.1", port], check=True)
    lst.close()


def connect(host, port):
    c, addr = client(host)
    e = c.connect_ex((addr, int(port)))
    print(f"exec pid={os.getpid()} errno={ename(e)} ulp={ulp(c)}")


def inherit(port, run, *args):
    """A socket made here, without the library, connected by an exec'd program under it."""
    lst = listener("127.0.0.1", int(port))
    s = socket.socket()
    s.set_inheritable(True)
    subprocess.run([run, *args, sys.executable, __file__, "connectfd", str(s.fileno()), port],
                   pass_fds=[s.fileno()], check=True)
    lst.close()


def connectfd(fd, port):
    c = socket.socket(fileno=int(fd))
    c.connect(("127.0.0.1", int(port)))
    print(f"inherited fd={fd} ulp={ulp(c)}")


def raw_syscall(port):
    """A socket from syscall(SYS_socket), which no socket() wrapper would see."""
    nr = {"x86_64": 41, "aarch64": 198, "riscv64": 198}.get(platform.machine())
    lst = listener("127.0.0.1", int(port))
    if nr is None:
        print("syscall skipped")
        return
    c = socket.socket(fileno=libc.syscall(nr, socket.AF_INET, socket.SOCK_STREAM, 0))
    c.connect(("127.0.0.1", int(port)))
    print(f"syscall ulp={ulp(c)}")
    lst.close()


def others(port, path):
    """Sockets that are not TCP, then one that is."""
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.connect(("127.0.0.1", int(port)))
    u6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    u6.connect(("::1", int(port)))
    ul = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ul.bind(path)
    ul.listen()
    uc = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    uc.connect(path)
    try:
        m = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)     # IPPROTO_MPTCP
        m.connect_ex(("127.0.0.1", int(port)))
        print("mptcp tried")
    except OSError:
        print("mptcp unavailable")
    t = socket.socket()
    print(f"tcp errno={ename(t.connect_ex(('127.0.0.1', int(port))))}")


def selfset(port):
    """The program sets the ULP itself before connect()."""
    lst = listener("127.0.0.1", int(port))
    c = socket.socket()
    c.setsockopt(SOL_TCP, TCP_ULP, b"ntbsmc")
    c.connect(("127.0.0.1", int(port)))
    print(f"selfset ulp={ulp(c)}")


def freeports(count):
    socks = []
    for _ in range(int(count)):
        s = listener("::", 0)
        socks.append(s)
        print(s.getsockname()[1])


globals()[sys.argv[1]](*sys.argv[2:])
EOF

# "probe CMD ARGS" runs a command of probe.py, also under ntbsmc_run and env.
mkdir "$TMP/bin"
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$PY" "$TMP/probe.py" >"$TMP/bin/probe"
chmod +x "$TMP/bin/probe"
PATH=$TMP/bin:$PATH
# Two ports free for now: P for listeners, Q stays closed.
read -r P Q < <(probe freeports 2 | tr '\n' ' ')
# The debug line of one decision; the pid differs from run to run.
line() {	# line CALL WHERE VERDICT_REGEX
	local w=${2//./\\.}

	w=${w//[/\\[}
	echo "^ntbsmc_run: pid [0-9]+ fd [0-9]+ $1 ${w//]/\\]}: $3\$"
}
NOMOD='ULP not set: No such file or directory \(module not loaded\?\)'

# ---- (a) real kernel, no module: the program runs on plain TCP ----

for fam in 4 6; do
	host=$([ $fam = 4 ] && echo 127.0.0.1 || echo "[::1]")
	real "$RUN" -d probe pair $fam "$P" 1048577
	is "$rc" 0 "IPv$fam pair: exit 0"
	has "$out" '^data ok$' "IPv$fam pair: 1 MiB there and back, checksums match"
	has "$out" '^listen_ulp=none client_ulp=none accepted_ulp=none$' "IPv$fam pair: no ULP"
	has "$err" "$(line listen "$host:$P" "$NOMOD")" "IPv$fam pair: listen tried, ENOENT"
	has "$err" "$(line connect "$host:$P" "$NOMOD( \[cached\])?")" \
		"IPv$fam pair: connect tried, ENOENT"
	count "$err" . 2 "IPv$fam pair: nothing else on stderr"
done
real "$RUN" probe pair 4 "$P" 1000
is "$err$(grep -c '^data ok$' <<<"$out")" 1 "without -d: the library prints nothing"

# ---- (b) the ULP is set, exactly on the sockets the filters select (fake module) ----

for fam in 4 6; do
	fake "$RUN" -d probe pair $fam "$P" 1048577
	has "$out" '^data ok$' "fake IPv$fam pair: checksums match"
	has "$out" '^listen_ulp=ntbsmc client_ulp=ntbsmc ' "fake IPv$fam pair: ULP set on both"
	count "$err" ': ULP set$' 2 "fake IPv$fam pair: two 'ULP set' lines"
	count "$log" ' set$' 2 "fake IPv$fam pair: two attempts"
done

fake "$RUN" -d -p "$((P - 1))-$((P + 1))" probe multi "$P" 127.0.0.1 ::1 m:127.0.0.1
has "$out" '^listen ulp=ntbsmc$' "port range: listener selected"
has "$out" '^127.0.0.1 errno=0 ulp=ntbsmc$' "port range: IPv4 client selected"
has "$out" '^::1 errno=0 ulp=ntbsmc$' "port range: IPv6 client selected"
has "$out" '^m:127.0.0.1 errno=0 ulp=ntbsmc$' "port range: v4-mapped client selected"
count "$log" ' set$' 4 "port range: four attempts"
fake "$RUN" -d -p "80,$((P + 1))-65535" probe multi "$P" 127.0.0.1 ::1
is "$(grep -c 'ulp=none$' <<<"$out")/$log" "3/" "port filter: no socket selected, no attempt"
has "$err" "$(line listen "[::]:$P" 'skipped by port filter')" "port filter: listen line"
has "$err" "$(line connect "[::1]:$P" 'skipped by port filter')" "port filter: connect line"
count "$err" 'skipped by port filter$' 4 "port filter: a line per call (listen twice)"

fake "$RUN" -d -a "127.0.0.2/32, ::1" probe multi "$P" 127.0.0.1 127.0.0.2 ::1 \
	m:127.0.0.1 m:127.0.0.2
is "$(tr '\n' ' ' <<<"$out")" "listen ulp=ntbsmc 127.0.0.1 errno=0 ulp=none \
127.0.0.2 errno=0 ulp=ntbsmc ::1 errno=0 ulp=ntbsmc m:127.0.0.1 errno=0 ulp=none \
m:127.0.0.2 errno=0 ulp=ntbsmc " "address filter: v4, v6 and v4-mapped peers; listener kept"
count "$log" ' set$' 4 "address filter: four attempts"
has "$err" "$(line connect "127.0.0.1:$P" 'skipped by address filter')" \
	"address filter: skip line"
has "$err" "$(line connect "[::ffff:127.0.0.2]:$P" 'ULP set')" "address filter: mapped line"
fake "$RUN" -a "127.0.0.0/8,fd00::/8" -p "$P" probe multi "$P" 127.0.0.9 ::1 m:127.0.0.1
is "$(tr '\n' ' ' <<<"$out")" "listen ulp=ntbsmc 127.0.0.9 errno=0 ulp=ntbsmc \
::1 errno=0 ulp=none m:127.0.0.1 errno=0 ulp=ntbsmc " "address and port filter: prefixes"
# (::3 is not on this host: its connect fails, after the decision.)
fake "$RUN" -a "127.0.0.0/29,::2/127" probe multi "$P" 127.0.0.7 127.0.0.8 ::1 ::3
is "$(sed 's/ errno=[A-Z0-9]*//' <<<"$out" | tr '\n' ' ')" "listen ulp=ntbsmc \
127.0.0.7 ulp=ntbsmc 127.0.0.8 ulp=none ::1 ulp=none ::3 ulp=ntbsmc " \
	"address filter: prefixes that end inside a byte"

for mode in real fake; do
	$mode "$RUN" -d probe others "$P" "$TMP/unix.sock"
	rm -f "$TMP/unix.sock"
	has "$out" '^tcp errno=ECONNREFUSED$' "$mode: other sockets ran"
	count "$err" . 1 "$mode: UDP, AF_UNIX, MPTCP sockets not considered, TCP one is"
	has "$err" "$(line connect "127.0.0.1:$P" '.*')" "$mode: the TCP socket's line"
done
count "$log" . 1 "fake: one attempt, on the TCP socket"

# ---- (c) errno is the real call's ----

real probe errnos "$P" "$Q" connect
plain=$out
is "$(tr '\n' ' ' <<<"$plain")" "connect rc=0 errno=EDOM refused rc=-1 errno=ECONNREFUSED \
listen rc=0 errno=EDOM listen_connected rc=-1 errno=EINVAL " "errno without the library"
for first in connect listen; do
	real "$RUN" -d probe errnos "$P" "$Q" $first
	is "$out" "$plain" "real, $first first: errno unchanged (untouched on success)"
	count "$err" "$NOMOD\$" 1 "real, $first first: $first tried (and failed)"
	count "$err" "$NOMOD \[cached\]\$" 2 "real, $first first: two more attempts, cached"
	has "$err" 'listen 127\.0\.0\.1:[0-9]+: ULP not set: socket not fresh \(ESTABLISHED\)$' \
		"real, $first first: listen on a connected socket not tried"
	fake "$RUN" -d probe errnos "$P" "$Q" $first
	is "$out" "$plain" "fake, $first first: errno unchanged, the ULP's stray errno hidden"
	count "$log" ' set$' 3 "fake, $first first: three attempts"
done
real "$RUN" -d probe multi "$P"
has "$err" "$(line listen "[::]:$P" 'ULP not set: socket not fresh \(LISTEN\)')" \
	"real: second listen() not tried"

real probe nonblock "$P"
plain=$(sed 's/ ulp=.*//' <<<"$out")
is "$(tr '\n' ' ' <<<"$plain")" "pending: EINPROGRESS EALREADY completing: EINPROGRESS 0 EISCONN " \
	"non-blocking connect without the library"
real "$RUN" -d probe nonblock "$P"
is "$(sed 's/ ulp=.*//' <<<"$out")" "$plain" "real: non-blocking errno sequence unchanged"
count "$err" "connect 127.0.0.1:$P: ULP not set: socket not fresh \(SYN-SENT\)$" 1 \
	"real: retry of a pending connect not tried again"
fake "$RUN" -d probe nonblock "$P"
is "$(sed 's/ ulp=.*//' <<<"$out")" "$plain" "fake: non-blocking errno sequence unchanged"
has "$out" '^pending: .* ulp=ntbsmc$' "fake: SOCK_NONBLOCK|SOCK_CLOEXEC socket gets the ULP"
has "$out" '^completing: .* ulp=ntbsmc$' "fake: completed non-blocking socket has the ULP"
count "$err" ': ULP already set$' 3 "fake: retries find the ULP already set"
count "$log" ' set$' 5 "fake: one attempt per socket (2 listeners, 3 clients), none per retry"
count "$log" . 5 "fake: no failed attempts"

# ---- (d) children, inherited and raw sockets ----

for mode in real fake; do
	$mode "$RUN" -d probe forks "$P"
	ppid=$(sed -n 's/^parent pid=//p' <<<"$out")
	fpid=$(sed -n 's/^forked pid=\([0-9]*\).*/\1/p' <<<"$out")
	epid=$(sed -n 's/^exec pid=\([0-9]*\).*/\1/p' <<<"$out")
	has "$err" "^ntbsmc_run: pid $ppid fd [0-9]+ listen 127\.0\.0\.1:$P: " "$mode: parent's listen"
	has "$err" "^ntbsmc_run: pid $fpid fd [0-9]+ connect 127\.0\.0\.1:$P: " "$mode: forked child"
	has "$err" "^ntbsmc_run: pid $epid fd [0-9]+ connect 127\.0\.0\.1:$P: " "$mode: exec'd child"
	[ -n "$ppid" ] && [ "$ppid" != "$fpid" ] && [ "$ppid" != "$epid" ] && [ "$fpid" != "$epid" ]
	result $((! $?)) "$mode: three different processes" "$(details)"
done
has "$out" '^forked pid=[0-9]+ ulp=ntbsmc$' "fake: forked child's socket has the ULP"
has "$out" '^exec pid=[0-9]+ errno=0 ulp=ntbsmc$' "fake: exec'd child's socket has the ULP"

fake probe inherit "$P" "$RUN" -d
has "$out" '^inherited fd=[0-9]+ ulp=ntbsmc$' "fake: socket inherited across exec gets the ULP"
fake "$RUN" -d probe raw_syscall "$P"
has "$out" '^syscall (ulp=ntbsmc|skipped)$' "fake: socket from syscall(SYS_socket) gets the ULP"
fake "$RUN" -d probe selfset "$P"
has "$out" '^selfset ulp=ntbsmc$' "fake: ULP the program set itself kept"
has "$err" "$(line connect "127.0.0.1:$P" 'ULP already set')" "fake: ... and not set again"
count "$log" . 2 "fake: only the listener's and the program's own attempts"

fake env FAKE_ULP=enoent "$RUN" -d probe multi "$P" 127.0.0.1 ::1 127.0.0.1
count "$err" "$NOMOD\$" 1 "no module: asked once"
count "$err" "$NOMOD \[cached\]$" 3 "no module: then not asked again for a while"
count "$log" . 1 "no module: one attempt"

# ---- (e) bad filters: a message, and the program runs on TCP ----

# (The program, not the probe's sh wrapper: every program reports it once.)
fake "$RUN" -d -p 80,bogus "$PY" "$TMP/probe.py" pair 4 "$P" 100000
has "$out" '^data ok$' "bad -p: the program runs, checksums match"
has "$out" '^listen_ulp=none client_ulp=none ' "bad -p: no ULP"
count "$err" '^ntbsmc_run: NTBSMC_PORTS="80,bogus": bad port or range "bogus"' 1 \
	"bad -p: one message"
count "$err" ': skipped: invalid filter$' 2 "bad -p: every socket skipped"
is "$log" "" "bad -p: no attempt"
fake env NTBSMC_ADDRS="10.0.0.0/8,fd00::/129" LD_PRELOAD="$LIB:$TMP/fake_ulp.so" \
	"$PY" "$TMP/probe.py" pair 6 "$P" 100000
has "$out" '^data ok$' "bad NTBSMC_ADDRS: the program runs"
is "$err" "ntbsmc_run: NTBSMC_ADDRS=\"10.0.0.0/8,fd00::/129\": bad address \"fd00::/129\" \
(want ADDR or ADDR/PREFIX, IPv4 or IPv6); ntbsmc is not used, the program runs on plain TCP" \
	"bad NTBSMC_ADDRS: the message, also without -d"
is "$log" "" "bad NTBSMC_ADDRS: no attempt"
for bad in "5-3" "0" "65536" "80,,443" "80-" " , "; do
	real env NTBSMC_PORTS="$bad" LD_PRELOAD="$LIB" true
	has "$err" "^ntbsmc_run: NTBSMC_PORTS=\"$bad\": bad port" "NTBSMC_PORTS=\"$bad\" rejected"
done
for bad in "10.0.0.1/" "10.0.0" "::1/x" "host.example" "10.0.0.0/8,"; do
	real env NTBSMC_ADDRS="$bad" LD_PRELOAD="$LIB" true
	has "$err" "^ntbsmc_run: NTBSMC_ADDRS=\"$bad\": bad address" "NTBSMC_ADDRS=\"$bad\" rejected"
done
real env NTBSMC_PORTS=" 1 , 2-3 ,65535" NTBSMC_ADDRS=" ::/0 , 1.2.3.4/0,::ffff:1.2.3.4/128" \
	LD_PRELOAD="$LIB" true
is "$err" "" "good filters with blanks accepted"

finish
