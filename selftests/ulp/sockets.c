// SPDX-License-Identifier: GPL-2.0
/* sockets: TCP socket-behaviour oracle run between two hosts, with or without the ntbsmc ULP. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/sockios.h>
#include <linux/ntbsmc.h>

#include "names.h"

#ifndef SOL_TCP
#define SOL_TCP		6
#endif
#ifndef TCP_ULP
#define TCP_ULP		31
#endif

#define R_FAIL		(-1)
#define R_PASS		0
#define R_SKIP		1

#define IO_TIMEOUT_S	10		/* SO_RCVTIMEO/SO_SNDTIMEO of data sockets */
#define CONNECT_WAIT_MS	10000		/* client retries the control connect */
#define ACCEPT_WAIT_MS	10000
#define MODE_WAIT_MS	10000		/* NTBSMC_MODE_HANDSHAKE must end by then */
#define SERVER_WAIT_MS	120000		/* server waits for the client this long */
#define CHUNK		(128 * 1024)
#define MAX_CHECKS	64

enum expect { EXPECT_NONE, EXPECT_NTB, EXPECT_TCP };

static struct {
	bool server;
	bool ulp;
	enum expect expect;
	const char *only;
	const char *addr;
	int port;
	int conns;
	long big_mib;
	int family;
	struct sockaddr_storage ctl_sa, data_sa;
	socklen_t salen;
} opt = { .conns = 200 };

/* A data connection of the running check, with the payload it moved. */
struct tconn {
	int fd;
	bool ntb;			/* NTB mode: verify the info counters */
	uint64_t tx, rx;		/* payload bytes written / read */
	struct ntbsmc_info base;	/* NTBSMC_INFO when it was tracked */
};

struct check;

struct ctx {
	bool srv;
	const struct check *chk;
	int ctl;			/* control connection */
	int lfd;			/* server: listener of the data connections */
	char rbuf[8192];		/* control connection input */
	size_t rlen;
	bool ctl_dead;
	bool peer_done;			/* the peer's DONE arrived during the check */
	int peer_res;
	struct tconn *conns;
	int nconns, maxconns;
	int wait_ms;			/* bound of control waits inside a check */
	int conns_n;			/* many_conns: connections (from the client) */
	long big_mib;			/* data_sizes: extra transfer (from the client) */
	char skip[160];
};

struct check {
	const char *name;
	int (*fn)(struct ctx *c);
	int budget_s;			/* watchdog */
};

static volatile sig_atomic_t sigpipes;
static char watchdog_msg[512];

/* ---------------------------------------------------------------- helpers */

static const char *en(int e)
{
	static __thread char buf[16];

	switch (e) {
	case 0: return "0";
	case EAGAIN: return "EAGAIN";
	case EINTR: return "EINTR";
	case EPIPE: return "EPIPE";
	case ECONNRESET: return "ECONNRESET";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ECONNABORTED: return "ECONNABORTED";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EINVAL: return "EINVAL";
	case EISCONN: return "EISCONN";
	case ENOTCONN: return "ENOTCONN";
	case EEXIST: return "EEXIST";
	case ENOENT: return "ENOENT";
	case ENOPROTOOPT: return "ENOPROTOOPT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EBADF: return "EBADF";
	case EFAULT: return "EFAULT";
	case ENOMEM: return "ENOMEM";
	case ENOBUFS: return "ENOBUFS";
	case EADDRINUSE: return "EADDRINUSE";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	case EINPROGRESS: return "EINPROGRESS";
	case EALREADY: return "EALREADY";
	case EMFILE: return "EMFILE";
	case ENFILE: return "ENFILE";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EBUSY: return "EBUSY";
	case ENETUNREACH: return "ENETUNREACH";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case ESHUTDOWN: return "ESHUTDOWN";
	case ENOTSOCK: return "ENOTSOCK";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	}
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * The kernel counts socket timeouts (SO_RCVTIMEO, SO_SNDTIMEO) in jiffies. In the
 * two-vCPU TCG guest, jiffies once went 200 ms while CLOCK_MONOTONIC went 93 ms
 * (times() against clock_gettime() every 2 ms for 150 s), so even a plain TCP
 * socket's 200 ms timeout can end early by CLOCK_MONOTONIC. A timeout's lower
 * bound is checked in the clock the kernel counts it in, jiffies, which times()
 * gives in clock ticks; its upper bound in CLOCK_MONOTONIC.
 */
struct stamp {
	double ms;		/* CLOCK_MONOTONIC */
	clock_t ticks;		/* times(): jiffies, in clock ticks */
};

static struct stamp stamp_now(void)
{
	struct tms t;
	struct stamp s = { .ticks = times(&t) };

	s.ms = now_ms();
	return s;
}

/* Milliseconds of jiffies since @s, to the clock tick (10 ms). */
static double jiffies_ms_since(struct stamp s)
{
	struct tms t;

	return (double)(times(&t) - s.ticks) * 1000 / sysconf(_SC_CLK_TCK);
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static const char *side(const struct ctx *c)
{
	return c->srv ? "server" : "client";
}

static void diag(const struct ctx *c, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("# %s: %s: %s\n", side(c), c->chk ? c->chk->name : "-", msg);
}

/* Print why the check failed; returns R_FAIL (== -1) for both checks and helpers. */
static int fail(const struct ctx *c, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("# %s: %s: FAIL: %s\n", side(c), c->chk ? c->chk->name : "-", msg);
	return R_FAIL;
}

static int skip(struct ctx *c, const char *reason)
{
	snprintf(c->skip, sizeof(c->skip), "%s", reason);
	return R_SKIP;
}

/* The module's names (netlink-tool/names.c), valid until the end of the enclosing block. */
#define MODE_NAME(m)	mode_name((m), (char[32]){ 0 }, 32)
#define REASON_NAME(r)	reason_name((r), (char[32]){ 0 }, 32)

static const char *fmt_sa(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(s4->sin_port));
	} else {
		snprintf(buf, len, "<family %d>", ss->ss_family);
	}
	return buf;
}

static int set_int(const struct ctx *c, int fd, int level, int name, int val, const char *what)
{
	if (setsockopt(fd, level, name, &val, sizeof(val)))
		return fail(c, "setsockopt(%s, %d): %s", what, val, en(errno));
	return 0;
}

static int get_int(const struct ctx *c, int fd, int level, int name, int *val, const char *what)
{
	socklen_t len = sizeof(*val);

	*val = -1;
	if (getsockopt(fd, level, name, val, &len))
		return fail(c, "getsockopt(%s): %s", what, en(errno));
	if (len != sizeof(*val))
		return fail(c, "getsockopt(%s): optlen %u, expected %zu", what, len, sizeof(*val));
	return 0;
}

static int set_timeo(const struct ctx *c, int fd, int name, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	if (setsockopt(fd, SOL_SOCKET, name, &tv, sizeof(tv)))
		return fail(c, "setsockopt(%s): %s",
			    name == SO_RCVTIMEO ? "SO_RCVTIMEO" : "SO_SNDTIMEO", en(errno));
	return 0;
}

static int set_nonblock(const struct ctx *c, int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK))
		return fail(c, "fcntl(O_NONBLOCK): %s", en(errno));
	return 0;
}

static int set_ulp(int fd)
{
	return setsockopt(fd, SOL_TCP, TCP_ULP, NTBSMC_ULP_NAME, sizeof(NTBSMC_ULP_NAME));
}

/* ------------------------------------------------------ seeded data stream */

#define GOLDEN	0x9e3779b97f4a7c15ULL

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Byte @off of the stream @seed, for any chunking of the stream. */
static void gen_bytes(uint64_t seed, uint64_t off, uint8_t *p, size_t len)
{
	while (len) {
		uint64_t w = mix64(seed + (off >> 3) * GOLDEN);
		unsigned int i;

		for (i = off & 7; i < 8 && len; i++, len--, off++)
			*p++ = w >> (i * 8);
	}
}

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t len)
{
	while (len--) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV_INIT	0xcbf29ce484222325ULL

/* Small PRNG for sizes and timings. */
static uint64_t rnd(uint64_t *s)
{
	*s += GOLDEN;
	return mix64(*s);
}

/* A random I/O size: mostly small, sometimes large. */
static size_t rnd_size(uint64_t *s)
{
	uint64_t r = rnd(s);

	switch (r % 10) {
	case 0 ... 4:
		return 1 + (r >> 8) % 64;
	case 5 ... 7:
		return 1 + (r >> 8) % 4096;
	default:
		return 1 + (r >> 8) % CHUNK;
	}
}

/* --------------------------------------------------------- data tracking */

static struct tconn *find_conn(struct ctx *c, int fd)
{
	int i;

	for (i = 0; i < c->nconns; i++)
		if (c->conns[i].fd == fd)
			return &c->conns[i];
	return NULL;
}

static void account(struct ctx *c, int fd, uint64_t tx, uint64_t rx)
{
	struct tconn *t = find_conn(c, fd);

	/* one field at a time: a sender thread and the receiver share the entry */
	if (t && tx)
		t->tx += tx;
	if (t && rx)
		t->rx += rx;
}

static struct tconn *track(struct ctx *c, int fd)
{
	struct tconn *t;

	if (c->nconns == c->maxconns) {
		fail(c, "too many connections in one check");
		return NULL;
	}
	t = &c->conns[c->nconns++];
	memset(t, 0, sizeof(*t));
	t->fd = fd;
	return t;
}

/* Forget a connection (the caller closes it); its counters go unchecked. */
static void untrack(struct ctx *c, int fd)
{
	struct tconn *t = find_conn(c, fd);

	if (t)
		*t = c->conns[--c->nconns];
}

/* Stop checking a connection's NTB counters (its peer is gone). */
static void no_counters(struct ctx *c, int fd)
{
	struct tconn *t = find_conn(c, fd);

	if (t)
		t->ntb = false;
}

/* Close a connection before the end of the check. */
static void close_conn(struct ctx *c, int fd)
{
	untrack(c, fd);
	close(fd);
}

static void close_all(struct ctx *c)
{
	while (c->nconns)
		close(c->conns[--c->nconns].fd);
}

static int get_info(int fd, struct ntbsmc_info *info, socklen_t *len)
{
	*len = sizeof(*info);
	memset(info, 0, sizeof(*info));
	return getsockopt(fd, SOL_NTBSMC, NTBSMC_INFO, info, len);
}

/* NTBSMC_INFO is read with --ulp, or when NTB mode is expected (and fails without it). */
static bool want_info(void)
{
	return opt.ulp || opt.expect == EXPECT_NTB;
}

/* Wait for the end of the handshake, then compare the mode with --expect. */
static int check_mode(struct ctx *c, struct tconn *t, const char *what)
{
	double end = now_ms() + MODE_WAIT_MS;
	struct ntbsmc_info info;
	socklen_t len;

	if (!want_info())
		return 0;
	for (;;) {
		if (get_info(t->fd, &info, &len))
			return fail(c, "%s: getsockopt(SOL_NTBSMC, NTBSMC_INFO): %s%s", what,
				    en(errno), errno == ENOPROTOOPT || errno == EOPNOTSUPP ?
				    " (the ntbsmc ULP is not active on this socket)" : "");
		if (len < sizeof(info))
			return fail(c, "%s: NTBSMC_INFO optlen %u < %zu", what, len,
				    sizeof(info));
		if (info.mode != NTBSMC_MODE_HANDSHAKE)
			break;
		if (now_ms() > end)
			return fail(c, "%s: still in mode HANDSHAKE after %d ms", what,
				    MODE_WAIT_MS);
		msleep(2);
	}
	if (opt.expect != EXPECT_NONE) {
		uint32_t want = opt.expect == EXPECT_NTB ? NTBSMC_MODE_NTB : NTBSMC_MODE_TCP;

		if (info.mode != want)
			return fail(c, "%s: mode %s (reason %s, peer_reason %s), expected %s",
				    what, MODE_NAME(info.mode), REASON_NAME(info.reason),
				    REASON_NAME(info.peer_reason), MODE_NAME(want));
	}
	t->ntb = info.mode == NTBSMC_MODE_NTB && opt.expect == EXPECT_NTB;
	t->base = info;
	return 0;
}

/* Has connection @t's NTB traffic covered what it moved? 1 yes, 0 not yet, -1 failure. */
static int counters_ok(struct ctx *c, int i, bool report)
{
	struct tconn *t = &c->conns[i];
	struct ntbsmc_info info;
	uint64_t dtx, drx;
	socklen_t len;

	if (get_info(t->fd, &info, &len))
		return fail(c, "conn %d: NTBSMC_INFO: %s", i, en(errno));
	if (info.mode != NTBSMC_MODE_NTB)
		return fail(c, "conn %d: mode changed to %s (reason %s)", i,
			    MODE_NAME(info.mode), REASON_NAME(info.reason));
	dtx = info.tx_bytes - t->base.tx_bytes;
	drx = info.rx_bytes - t->base.rx_bytes;
	if (dtx >= t->tx && drx >= t->rx)
		return 1;
	if (!report)
		return 0;
	if (dtx < t->tx)
		fail(c, "conn %d: ntbsmc tx_bytes grew by %" PRIu64 ", but %" PRIu64
		     " bytes were sent", i, dtx, t->tx);
	if (drx < t->rx)
		fail(c, "conn %d: ntbsmc rx_bytes grew by %" PRIu64 ", but %" PRIu64
		     " bytes were received", i, drx, t->rx);
	return -1;
}

/*
 * After the check, both ends done: what crossed NTB must cover what the check
 * moved. Counters updated asynchronously get 2 s to catch up.
 */
static int check_counters(struct ctx *c)
{
	double end = now_ms() + 2000;
	int i, r, ret = 0;

	for (i = 0; i < c->nconns; i++) {
		if (!c->conns[i].ntb)
			continue;
		while (!(r = counters_ok(c, i, now_ms() > end)))
			msleep(10);
		if (r < 0)
			ret = -1;
	}
	return ret;
}

/* ------------------------------------------------------ control connection */

static int ctl_send(struct ctx *c, const char *fmt, ...)
{
	char line[600];
	size_t off = 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(line) - 1)
		return fail(c, "control line too long");
	line[n++] = '\n';
	while (off < (size_t)n) {
		ssize_t r = send(c->ctl, line + off, n - off, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			c->ctl_dead = true;
			return fail(c, "control connection: send: %s", en(errno));
		}
		off += r;
	}
	return 0;
}

/* Read what is available on the control connection (waits up to @ms). */
static int ctl_fill(struct ctx *c, int ms)
{
	struct pollfd p = { c->ctl, POLLIN, 0 };
	ssize_t r;
	int n;

	if (c->ctl_dead)
		return fail(c, "control connection lost");
	if (c->rlen == sizeof(c->rbuf))
		return fail(c, "control line too long");
	n = poll(&p, 1, ms);
	if (n < 0 && errno != EINTR)
		return fail(c, "control connection: poll: %s", en(errno));
	if (n <= 0)
		return 0;
	r = recv(c->ctl, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen, MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r <= 0) {
		c->ctl_dead = true;
		return fail(c, "control connection: %s", r ? en(errno) : "closed by the peer");
	}
	c->rlen += r;
	return 0;
}

/* Next line of the control connection, waiting up to @ms. */
static int ctl_readline(struct ctx *c, char *out, size_t sz, int ms)
{
	double end = now_ms() + ms;

	for (;;) {
		char *nl = memchr(c->rbuf, '\n', c->rlen);
		int left;

		if (nl) {
			size_t n = nl - c->rbuf;

			snprintf(out, sz, "%.*s", (int)n, c->rbuf);
			memmove(c->rbuf, nl + 1, c->rlen - n - 1);
			c->rlen -= n + 1;
			return 0;
		}
		left = end - now_ms();
		if (left <= 0)
			return fail(c, "control connection: nothing from the peer in %d ms", ms);
		if (ctl_fill(c, left))
			return -1;
	}
}

/* Is a complete "DONE" line of the peer waiting? */
static bool ctl_peer_gave_up(struct ctx *c)
{
	size_t i = 0;

	if (c->peer_done)
		return true;
	while (i < c->rlen) {
		char *nl = memchr(c->rbuf + i, '\n', c->rlen - i);

		if (!nl)
			break;
		if (!strncmp(c->rbuf + i, "DONE ", 5))
			return true;
		i = nl - c->rbuf + 1;
	}
	return false;
}

static int parse_res(const char *s)
{
	if (!strncmp(s, "pass", 4))
		return R_PASS;
	if (!strncmp(s, "skip", 4))
		return R_SKIP;
	return R_FAIL;
}

/* Send a sync point "S tag args" of the running check. */
#define sync_send(c, ...)	ctl_send(c, "S " __VA_ARGS__)

/*
 * Wait for the peer's sync point @tag; its arguments go to @args. The peer's
 * DONE instead means it gave up on the check.
 */
static int sync_wait(struct ctx *c, const char *tag, char *args, size_t sz)
{
	size_t tl = strlen(tag);
	char line[600];

	if (c->peer_done)
		return fail(c, "waiting for '%s': the peer already ended the check", tag);
	if (ctl_readline(c, line, sizeof(line), c->wait_ms))
		return fail(c, "waiting for '%s' from the peer", tag);
	if (!strncmp(line, "DONE ", 5)) {
		c->peer_done = true;
		c->peer_res = parse_res(line + 5);
		return fail(c, "waiting for '%s': the peer ended the check (%s)", tag, line + 5);
	}
	if (strncmp(line, "S ", 2) || strncmp(line + 2, tag, tl) ||
	    (line[2 + tl] && line[2 + tl] != ' '))
		return fail(c, "control desync: expected 'S %s', got '%s'", tag, line);
	if (args)
		snprintf(args, sz, "%s", line[2 + tl] ? line + 3 + tl : "");
	return 0;
}

/* ------------------------------------------------------- data connections */

static int setup_data_fd(struct ctx *c, int fd)
{
	if (set_timeo(c, fd, SO_RCVTIMEO, IO_TIMEOUT_S * 1000) ||
	    set_timeo(c, fd, SO_SNDTIMEO, IO_TIMEOUT_S * 1000))
		return -1;
	return 0;
}

/* Client: a new data connection (with the ULP if --ulp), tracked and mode-checked. */
static int data_connect_ex(struct ctx *c, bool ulp, bool mode)
{
	struct tconn *t;
	int fd;

	fd = socket(opt.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(c, "socket: %s", en(errno));
	if (setup_data_fd(c, fd))
		goto err;
	if (ulp && set_ulp(fd)) {
		fail(c, "setsockopt(TCP_ULP, \"ntbsmc\"): %s", en(errno));
		goto err;
	}
	if (connect(fd, (struct sockaddr *)&opt.data_sa, opt.salen)) {
		fail(c, "connect to the data port: %s", en(errno));
		goto err;
	}
	t = track(c, fd);
	if (!t)
		goto err;
	if (mode && check_mode(c, t, "client data connection"))
		return -1;		/* closed at the end of the check */
	return fd;
err:
	close(fd);
	return -1;
}

static int data_connect(struct ctx *c)
{
	return data_connect_ex(c, opt.ulp, true);
}

/* Server: accept the next data connection, bounded, unless the peer gave up. */
static int data_accept_ex(struct ctx *c, bool mode)
{
	double end = now_ms() + ACCEPT_WAIT_MS;
	struct tconn *t;
	int fd;

	for (;;) {
		struct pollfd p[2] = { { c->lfd, POLLIN, 0 }, { c->ctl, POLLIN, 0 } };
		int left = end - now_ms();

		if (ctl_peer_gave_up(c))
			return fail(c, "accept: the client ended the check before connecting");
		if (left <= 0)
			return fail(c, "accept: no data connection within %d ms", ACCEPT_WAIT_MS);
		if (poll(p, 2, left) < 0 && errno != EINTR)
			return fail(c, "poll: %s", en(errno));
		if (p[1].revents && ctl_fill(c, 0))
			return -1;
		if (!p[0].revents)
			continue;
		fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			break;
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			return fail(c, "accept: %s", en(errno));
	}
	if (setup_data_fd(c, fd)) {
		close(fd);
		return -1;
	}
	t = track(c, fd);
	if (!t) {
		close(fd);
		return -1;
	}
	if (mode && check_mode(c, t, "server data connection"))
		return -1;
	return fd;
}

static int data_accept(struct ctx *c)
{
	return data_accept_ex(c, true);
}

/* The check's data connection, from either side. */
static int data_conn(struct ctx *c)
{
	return c->srv ? data_accept(c) : data_connect(c);
}

/* --------------------------------------------------------------- data I/O */

static int send_all(struct ctx *c, int fd, const void *buf, size_t len, const char *what)
{
	size_t off = 0;

	while (off < len) {
		ssize_t r = send(fd, (const char *)buf + off, len - off, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return fail(c, "%s: send after %zu of %zu bytes: %s%s", what, off, len,
				    en(errno), errno == EAGAIN ? " (timed out)" : "");
		off += r;
		account(c, fd, r, 0);
	}
	return 0;
}

static int recv_all(struct ctx *c, int fd, void *buf, size_t len, const char *what)
{
	size_t off = 0;

	while (off < len) {
		ssize_t r = recv(fd, (char *)buf + off, len - off, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return fail(c, "%s: recv after %zu of %zu bytes: %s%s", what, off, len,
				    en(errno), errno == EAGAIN ? " (timed out)" : "");
		if (r == 0)
			return fail(c, "%s: EOF after %zu of %zu bytes", what, off, len);
		off += r;
		account(c, fd, 0, r);
	}
	return 0;
}

/* The next recv must report EOF. */
static int expect_eof(struct ctx *c, int fd, const char *what)
{
	char b;
	ssize_t r;

	do {
		r = recv(fd, &b, 1, 0);
	} while (r < 0 && errno == EINTR);
	if (r == 0)
		return 0;
	if (r > 0)
		return fail(c, "%s: expected EOF, got data (0x%02x)", what, (uint8_t)b);
	return fail(c, "%s: expected EOF, got %s", what, en(errno));
}

/*
 * Send @len bytes of stream @seed; write sizes are random (from @sizes) or
 * CHUNK. *@sum gets the checksum.
 */
static int send_stream(struct ctx *c, int fd, uint64_t seed, uint64_t len,
		       uint64_t *sizes, uint64_t *sum)
{
	uint8_t *buf = malloc(CHUNK);
	uint64_t off = 0, h = FNV_INIT;
	int ret = 0;

	if (!buf)
		return fail(c, "out of memory");
	while (off < len) {
		size_t n = sizes ? rnd_size(sizes) : CHUNK;

		if (n > len - off)
			n = len - off;
		gen_bytes(seed, off, buf, n);
		h = fnv1a(h, buf, n);
		ret = send_all(c, fd, buf, n, "stream");
		if (ret)
			break;
		off += n;
	}
	free(buf);
	if (sum)
		*sum = h;
	return ret;
}

/* Receive and verify @len bytes of stream @seed, byte-exact. */
static int recv_stream(struct ctx *c, int fd, uint64_t seed, uint64_t len,
		       uint64_t *sizes, uint64_t *sum)
{
	uint8_t *buf = malloc(CHUNK), *exp = malloc(CHUNK);
	uint64_t off = 0, h = FNV_INIT;
	int ret = 0;

	if (!buf || !exp) {
		free(buf);
		free(exp);
		return fail(c, "out of memory");
	}
	while (off < len) {
		size_t n = sizes ? rnd_size(sizes) : CHUNK;
		ssize_t r;

		if (n > len - off)
			n = len - off;
		r = recv(fd, buf, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ret = fail(c, "stream: recv after %" PRIu64 " of %" PRIu64 " bytes: %s",
				   off, len, r ? en(errno) : "EOF");
			break;
		}
		account(c, fd, 0, r);
		gen_bytes(seed, off, exp, r);
		if (memcmp(buf, exp, r)) {
			ssize_t i = 0;

			while (buf[i] == exp[i])
				i++;
			ret = fail(c, "stream: byte %" PRIu64 " of %" PRIu64
				   " is 0x%02x, expected 0x%02x", off + i, len, buf[i], exp[i]);
			break;
		}
		h = fnv1a(h, buf, r);
		off += r;
	}
	free(buf);
	free(exp);
	if (sum)
		*sum = h;
	return ret;
}

/*
 * One direction of a transfer: @sender_srv says which side sends. The receiver
 * reports its checksum, the sender compares it with its own.
 */
static int xfer(struct ctx *c, int fd, bool sender_srv, uint64_t seed, uint64_t len,
		uint64_t wseed, uint64_t rseed)
{
	char args[64];
	uint64_t sum = 0, peer;

	if (c->srv == sender_srv) {
		if (send_stream(c, fd, seed, len, wseed ? &wseed : NULL, &sum) ||
		    sync_wait(c, "sum", args, sizeof(args)))
			return -1;
		peer = strtoull(args, NULL, 16);
		if (peer != sum)
			return fail(c, "%" PRIu64 " bytes: receiver checksum %016" PRIx64
				    ", sender %016" PRIx64, len, peer, sum);
		return 0;
	}
	if (recv_stream(c, fd, seed, len, rseed ? &rseed : NULL, &sum))
		return -1;
	return sync_send(c, "sum %016" PRIx64, sum);
}

/* ----------------------------------------------------------------- checks */

/* Byte-exact transfers of growing sizes, both directions, then EOF. */
static int t_data_sizes(struct ctx *c)
{
	uint64_t sizes[8] = { 1, 100, 4096, 65536, 1 << 20, 16 << 20 };
	int n = 6, i, fd;

	if (c->big_mib > 0)
		sizes[n++] = (uint64_t)c->big_mib << 20;
	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	for (i = 0; i < n; i++) {
		if (xfer(c, fd, false, 0x1000 + i, sizes[i], 0, 0) ||
		    xfer(c, fd, true, 0x2000 + i, sizes[i], 0, 0))
			return fail(c, "transfer of %" PRIu64 " bytes", sizes[i]);
	}
	if (c->srv) {
		if (expect_eof(c, fd, "after the client's shutdown(SHUT_WR)"))
			return R_FAIL;
		if (shutdown(fd, SHUT_WR))
			return fail(c, "shutdown: %s", en(errno));
	} else {
		if (shutdown(fd, SHUT_WR))
			return fail(c, "shutdown: %s", en(errno));
		if (expect_eof(c, fd, "after the server's shutdown(SHUT_WR)"))
			return R_FAIL;
	}
	return R_PASS;
}

/* Random write sizes against random read sizes, each direction in turn. */
static int t_random_io(struct ctx *c)
{
	uint64_t len = 8 << 20;
	int fd = data_conn(c);

	if (fd < 0)
		return R_FAIL;
	if (xfer(c, fd, false, 0x3000, len, 0x31, 0x32) ||
	    xfer(c, fd, true, 0x3001, len, 0x33, 0x34))
		return R_FAIL;
	return R_PASS;
}

struct bidir_arg {
	struct ctx *c;
	int fd;
	uint64_t seed, len, sum;
	int ret;
};

static void *bidir_sender(void *p)
{
	struct bidir_arg *a = p;

	a->ret = send_stream(a->c, a->fd, a->seed, a->len, NULL, &a->sum);
	return NULL;
}

/* Both directions at once: a sender thread while the main thread receives. */
static int t_bidir(struct ctx *c)
{
	struct bidir_arg a = { .c = c, .len = 8 << 20 };
	uint64_t rsum = 0, psum;
	char args[64];
	pthread_t th;
	int fd, ret;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	a.fd = fd;
	a.seed = c->srv ? 0x4001 : 0x4002;
	if (sync_send(c, "go") || sync_wait(c, "go", NULL, 0))
		return R_FAIL;
	errno = pthread_create(&th, NULL, bidir_sender, &a);
	if (errno)
		return fail(c, "pthread_create: %s", en(errno));
	ret = recv_stream(c, fd, c->srv ? 0x4002 : 0x4001, a.len, NULL, &rsum);
	if (ret)
		shutdown(fd, SHUT_RDWR);	/* unblock the sender */
	pthread_join(th, NULL);
	if (ret || a.ret)
		return fail(c, "receiving %s, sending %s", ret ? "failed" : "ok",
			    a.ret ? "failed" : "ok");
	if (sync_send(c, "sum %016" PRIx64, rsum) || sync_wait(c, "sum", args, sizeof(args)))
		return R_FAIL;
	psum = strtoull(args, NULL, 16);
	if (psum != a.sum)
		return fail(c, "the peer received checksum %016" PRIx64 ", we sent %016" PRIx64,
			    psum, a.sum);
	return R_PASS;
}

#define IOV_MAX_N	16
#define IOV_GAP		16
#define IOV_GUARD	0xa5

/* Lay @n slices of @lens out in @base between guard gaps; returns the payload total. */
static size_t iov_layout(struct iovec *iov, const size_t *lens, int n, uint8_t *base)
{
	size_t total = 0;
	int i;

	for (i = 0; i < n; i++) {
		memset(base, IOV_GUARD, IOV_GAP);
		base += IOV_GAP;
		iov[i].iov_base = base;
		iov[i].iov_len = lens[i];
		base += lens[i];
		total += lens[i];
	}
	memset(base, IOV_GUARD, IOV_GAP);
	return total;
}

static size_t iov_span(const size_t *lens, int n)
{
	size_t s = IOV_GAP;
	int i;

	for (i = 0; i < n; i++)
		s += lens[i] + IOV_GAP;
	return s;
}

/* Consume @done bytes of the iovec array *@iov of *@n entries. */
static void iov_advance(struct iovec **iov, int *n, size_t done)
{
	while (*n && done >= (*iov)->iov_len) {
		done -= (*iov)->iov_len;
		(*iov)++;
		(*n)--;
	}
	if (*n && done) {
		(*iov)->iov_base = (char *)(*iov)->iov_base + done;
		(*iov)->iov_len -= done;
	}
}

/* Send stream @seed from slices of @lens with one writev or sendmsg. */
static int iov_send(struct ctx *c, int fd, uint64_t seed, const size_t *lens, int n,
		    bool msg)
{
	const char *call = msg ? "sendmsg" : "writev";
	uint8_t *base = malloc(iov_span(lens, n));
	struct iovec iov[IOV_MAX_N];
	size_t total, off = 0;
	ssize_t r;
	int i;

	if (!base)
		return fail(c, "out of memory");
	total = iov_layout(iov, lens, n, base);
	for (i = 0; i < n; i++) {
		gen_bytes(seed, off, iov[i].iov_base, lens[i]);
		off += lens[i];
	}
	if (msg) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n };

		r = sendmsg(fd, &mh, MSG_NOSIGNAL);
	} else {
		r = writev(fd, iov, n);
	}
	free(base);
	if (r < 0)
		return fail(c, "%s: %s", call, en(errno));
	account(c, fd, r, 0);
	if ((size_t)r != total)
		return fail(c, "blocking %s of %d iovecs sent %zd of %zu bytes", call, n, r,
			    total);
	return 0;
}

/* Receive stream @seed into slices of @lens with readv or recvmsg, and verify. */
static int iov_recv(struct ctx *c, int fd, uint64_t seed, const size_t *lens, int n,
		    bool msg)
{
	const char *call = msg ? "recvmsg" : "readv";
	size_t span = iov_span(lens, n), total, got = 0, off = 0;
	uint8_t *base = malloc(span), *exp = malloc(span);
	struct iovec iov[IOV_MAX_N], work[IOV_MAX_N], *cur = work;
	int i, j, left = n, ret = R_FAIL;

	if (!base || !exp) {
		fail(c, "out of memory");
		goto out;
	}
	total = iov_layout(iov, lens, n, base);
	memcpy(work, iov, sizeof(iov[0]) * n);
	while (got < total) {
		ssize_t r;

		if (msg) {
			struct msghdr mh = { .msg_iov = cur, .msg_iovlen = left };

			r = recvmsg(fd, &mh, 0);
			if (r > 0 && mh.msg_flags) {
				fail(c, "recvmsg: msg_flags 0x%x, expected 0", mh.msg_flags);
				goto out;
			}
		} else {
			r = readv(fd, cur, left);
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fail(c, "%s after %zu of %zu bytes: %s", call, got, total,
			     r ? en(errno) : "EOF");
			goto out;
		}
		if ((size_t)r > total - got) {
			fail(c, "%s returned %zd, only %zu bytes of room left", call, r,
			     total - got);
			goto out;
		}
		account(c, fd, 0, r);
		got += r;
		iov_advance(&cur, &left, r);
	}
	for (i = 0; i <= n; i++) {
		const uint8_t *g = i < n ? (const uint8_t *)iov[i].iov_base - IOV_GAP :
				   (const uint8_t *)iov[n - 1].iov_base + lens[n - 1];

		for (j = 0; j < IOV_GAP; j++)
			if (g[j] != IOV_GUARD) {
				fail(c, "%s wrote into the guard gap before iovec %d", call, i);
				goto out;
			}
	}
	for (i = 0; i < n; i++) {
		gen_bytes(seed, off, exp, lens[i]);
		if (memcmp(exp, iov[i].iov_base, lens[i])) {
			const uint8_t *b = iov[i].iov_base;

			for (j = 0; b[j] == exp[j]; j++)
				;
			fail(c, "%s: iovec %d byte %d (stream byte %zu) is 0x%02x, expected 0x%02x",
			     call, i, j, off + j, b[j], exp[j]);
			goto out;
		}
		off += lens[i];
	}
	ret = R_PASS;
out:
	free(base);
	free(exp);
	return ret;
}

/* writev -> readv, then sendmsg -> recvmsg, with odd-sized scattered iovecs. */
static int t_iov(struct ctx *c)
{
	static const size_t wlens[] = { 1, 7, 4093, 13, 65537, 3, 250, 999 };
	static const size_t rlens[] = { 5, 11, 8191, 2, 1000, 333, 60001, 1, 1357 };
	static const size_t slens[] = { 3, 65539, 17, 1, 4099, 511 };
	static const size_t mlens[] = { 4097, 9, 23, 65521, 520 };
	int fd = data_conn(c);

#define N(a)	((int)(sizeof(a) / sizeof(a[0])))
	if (fd < 0)
		return R_FAIL;
	if (c->srv) {
		if (iov_recv(c, fd, 0x5001, rlens, N(rlens), false) ||
		    iov_send(c, fd, 0x5002, slens, N(slens), true))
			return R_FAIL;
	} else {
		if (iov_send(c, fd, 0x5001, wlens, N(wlens), false) ||
		    iov_recv(c, fd, 0x5002, mlens, N(mlens), true))
			return R_FAIL;
	}
#undef N
	return R_PASS;
}

/* MSG_PEEK shows the bytes without consuming them; the read returns the same. */
static int t_peek(struct ctx *c)
{
	uint8_t exp[1000], a[1000], b[1000];
	double end;
	ssize_t r;
	int fd;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	gen_bytes(0x6001, 0, exp, sizeof(exp));
	if (!c->srv) {
		if (send_all(c, fd, exp, sizeof(exp), "peek data") || sync_send(c, "sent"))
			return R_FAIL;
		return sync_wait(c, "done", NULL, 0);
	}
	if (sync_wait(c, "sent", NULL, 0))
		return R_FAIL;
	/* wait until all 1000 bytes can be peeked */
	end = now_ms() + 5000;
	do {
		r = recv(fd, a, sizeof(a), MSG_PEEK | MSG_DONTWAIT);
		if (r < 0 && errno != EAGAIN && errno != EINTR)
			return fail(c, "recv(MSG_PEEK): %s", en(errno));
		if (r == 0)
			return fail(c, "recv(MSG_PEEK): EOF");
		if (r < (ssize_t)sizeof(a))
			msleep(1);
	} while (r < (ssize_t)sizeof(a) && now_ms() < end);
	if (r != sizeof(a))
		return fail(c, "recv(MSG_PEEK) shows %zd of the 1000 bytes sent, after 5 s", r);
	if (memcmp(a, exp, sizeof(a)))
		return fail(c, "peeked bytes differ from the bytes sent");
	r = recv(fd, b, 100, MSG_PEEK);
	if (r != 100 || memcmp(b, exp, 100))
		return fail(c, "second peek of 100: got %zd (%s), or different bytes", r,
			    r < 0 ? en(errno) : "-");
	r = recv(fd, b, 300, 0);
	if (r != 300 || memcmp(b, exp, 300))
		return fail(c, "read of 300 after peeks: got %zd (%s), or different bytes", r,
			    r < 0 ? en(errno) : "-");
	account(c, fd, 0, r);
	r = recv(fd, a, sizeof(a), MSG_PEEK);
	if (r != 700 || memcmp(a, exp + 300, 700))
		return fail(c, "peek after reading 300: got %zd (%s), expected the last 700", r,
			    r < 0 ? en(errno) : "-");
	r = recv(fd, b, sizeof(b), 0);
	if (r != 700 || memcmp(b, exp + 300, 700))
		return fail(c, "read after the peek: got %zd (%s), expected the peeked 700", r,
			    r < 0 ? en(errno) : "-");
	account(c, fd, 0, r);
	r = recv(fd, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
	if (r != -1 || errno != EAGAIN)
		return fail(c, "peek on the drained socket: %zd (%s), expected EAGAIN", r,
			    r < 0 ? en(errno) : "data");
	return sync_send(c, "done");
}

/*
 * A read takes everything already there, up to its size, as TCP's does: not
 * one chunk of it. What is there is what SIOCINQ reports once it stops growing
 * (TCP's window may hold back part of the 256 KiB; a 1 MiB NTB buffer holds it
 * all).
 */
static int t_read_all(struct ctx *c)
{
	static uint8_t exp[256 * 1024], got[1024 * 1024];
	struct tconn *t;
	int fd, inq, last = -1;
	double end, steady = 0;
	size_t off;
	ssize_t r;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	gen_bytes(0x7001, 0, exp, sizeof(exp));
	if (!c->srv) {
		if (send_all(c, fd, exp, sizeof(exp), "read_all data"))
			return R_FAIL;
		return sync_wait(c, "done", NULL, 0);
	}
	end = now_ms() + 10000;
	for (;;) {
		if (ioctl(fd, SIOCINQ, &inq))
			return fail(c, "SIOCINQ: %s", en(errno));
		if (inq == (int)sizeof(exp))
			break;
		if (inq != last) {
			last = inq;
			steady = now_ms() + 500;
		} else if (inq && now_ms() > steady) {
			break;
		}
		if (now_ms() > end)
			return fail(c, "SIOCINQ still at %d of %zu bytes after 10 s", inq,
				    sizeof(exp));
		msleep(5);
	}
	t = find_conn(c, fd);
	if (t && t->ntb && inq != (int)sizeof(exp))
		return fail(c, "NTB buffer holds %d of the %zu bytes sent", inq, sizeof(exp));
	r = recv(fd, got, sizeof(got), MSG_DONTWAIT);
	if (r < inq)
		return fail(c, "read of %zu with %d bytes there returned %zd (%s)", sizeof(got),
			    inq, r, r < 0 ? en(errno) : "short");
	account(c, fd, 0, r);
	off = r;
	if (off < sizeof(exp) &&
	    recv_all(c, fd, got + off, sizeof(exp) - off, "read_all rest"))
		return R_FAIL;
	if (memcmp(got, exp, sizeof(exp)))
		return fail(c, "bytes read differ from the bytes sent");
	return sync_send(c, "done");
}

/* MSG_WAITALL waits past the first burst and returns after the second. */
static int t_waitall(struct ctx *c)
{
	uint8_t exp[4000], buf[4000];
	double t0, dt;
	ssize_t r;
	int fd;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	gen_bytes(0x7001, 0, exp, sizeof(exp));
	if (!c->srv) {
		if (sync_wait(c, "ready", NULL, 0) ||
		    send_all(c, fd, exp, 1000, "first burst"))
			return R_FAIL;
		msleep(300);
		if (send_all(c, fd, exp + 1000, 3000, "second burst"))
			return R_FAIL;
		return sync_wait(c, "done", NULL, 0);
	}
	if (sync_send(c, "ready"))
		return R_FAIL;
	t0 = now_ms();
	r = recv(fd, buf, sizeof(buf), MSG_WAITALL);
	dt = now_ms() - t0;
	if (r < 0)
		return fail(c, "recv(MSG_WAITALL, 4000): %s after %.0f ms", en(errno), dt);
	account(c, fd, 0, r);
	if (r != sizeof(buf))
		return fail(c, "recv(MSG_WAITALL, 4000) returned %zd after %.0f ms", r, dt);
	if (dt < 200)
		return fail(c, "recv(MSG_WAITALL) returned after %.0f ms, before the second burst (300 ms)",
			    dt);
	if (memcmp(buf, exp, sizeof(buf)))
		return fail(c, "recv(MSG_WAITALL) returned different bytes");
	return sync_send(c, "done");
}

/* "POLLIN|POLLOUT|..." of @ev (poll and epoll bits are the same). */
static const char *ev_str(int ev, char *buf, size_t len)
{
	static const struct { int bit; const char *name; } bits[] = {
		{ POLLIN, "IN" }, { POLLPRI, "PRI" }, { POLLOUT, "OUT" },
		{ POLLERR, "ERR" }, { POLLHUP, "HUP" }, { POLLNVAL, "NVAL" },
		{ POLLRDNORM, "RDNORM" }, { POLLRDBAND, "RDBAND" },
		{ POLLWRNORM, "WRNORM" }, { POLLWRBAND, "WRBAND" },
		{ POLLRDHUP, "RDHUP" },
	};
	size_t i, off = 0;

	buf[0] = 0;
	for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		if (ev & bits[i].bit)
			off += snprintf(buf + off, len - off, "%s%s", off ? "|" : "",
					bits[i].name);
	if (!off)
		snprintf(buf, len, "none");
	return buf;
}

/* poll() one fd; returns revents, or -1 after a failure message. */
static int poll_one(struct ctx *c, int fd, short events, int ms)
{
	struct pollfd p = { fd, events, 0 };
	int n;

	do {
		n = poll(&p, 1, ms);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return fail(c, "poll: %s", en(errno));
	return p.revents;
}

#define SEL_RD	1
#define SEL_WR	2

/* select() one fd for reading and/or writing (@which); returns the ready SEL_ bits. */
static int select_one(struct ctx *c, int fd, int which, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	fd_set r, w;
	int n;

	if (fd >= FD_SETSIZE)
		return fail(c, "fd %d too large for select", fd);
	FD_ZERO(&r);
	FD_ZERO(&w);
	if (which & SEL_RD)
		FD_SET(fd, &r);
	if (which & SEL_WR)
		FD_SET(fd, &w);
	do {
		n = select(fd + 1, &r, &w, NULL, &tv);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return fail(c, "select: %s", en(errno));
	return (FD_ISSET(fd, &r) ? SEL_RD : 0) | (FD_ISSET(fd, &w) ? SEL_WR : 0);
}

static const char *sel_str(int bits)
{
	static const char * const n[] = { "neither", "readable", "writable",
					  "readable and writable" };

	return n[bits & 3];
}

/* poll(@events, @ms) must report exactly @want. */
static int poll_expect(struct ctx *c, int fd, short events, int ms, int want,
		       const char *when)
{
	char es[64], ws[64];
	int rev = poll_one(c, fd, events, ms);

	if (rev < 0)
		return -1;
	if (rev != want)
		return fail(c, "%s: poll(%d ms) revents %s, expected %s", when, ms,
			    ev_str(rev, es, sizeof(es)), ev_str(want, ws, sizeof(ws)));
	return 0;
}

/* select() on @which, waiting up to @ms, must report exactly @want. */
static int select_expect(struct ctx *c, int fd, int which, int ms, int want,
			 const char *when)
{
	int got = select_one(c, fd, which, ms);

	if (got < 0)
		return -1;
	if (got != want)
		return fail(c, "%s: select(%d ms) says %s, expected %s", when, ms,
			    sel_str(got), sel_str(want));
	return 0;
}

/* recv(MSG_DONTWAIT) must fail with EAGAIN: nothing is waiting. */
static int expect_empty(struct ctx *c, int fd, const char *what)
{
	char b;
	ssize_t r = recv(fd, &b, 1, MSG_DONTWAIT);

	if (r < 0 && errno == EAGAIN)
		return 0;
	if (r < 0)
		return fail(c, "%s: recv(MSG_DONTWAIT): %s, expected EAGAIN", what, en(errno));
	return fail(c, "%s: recv(MSG_DONTWAIT) returned %zd (%s), expected EAGAIN", what, r,
		    r ? "unexpected data" : "EOF");
}

/*
 * Non-blocking writes of stream @seed until EAGAIN, bounded; *@total counts
 * what was accepted. Leaves @fd non-blocking.
 */
static int fill_nonblock(struct ctx *c, int fd, uint64_t seed, uint64_t *total)
{
	double end = now_ms() + 10000;
	uint8_t *buf = malloc(CHUNK);
	int ret = 0;

	if (!buf)
		return fail(c, "out of memory");
	if (set_nonblock(c, fd, true)) {
		free(buf);
		return -1;
	}
	for (;;) {
		ssize_t r;

		gen_bytes(seed, *total, buf, 65536);
		r = send(fd, buf, 65536, MSG_NOSIGNAL);
		if (r < 0 && errno == EAGAIN)
			break;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ret = fail(c, "non-blocking send after %" PRIu64 " bytes: %s", *total,
				   r ? en(errno) : "returned 0");
			break;
		}
		account(c, fd, r, 0);
		*total += r;
		if (*total > (1ULL << 30) || now_ms() > end) {
			ret = fail(c, "non-blocking send: no EAGAIN after %" PRIu64
				   " bytes, although the peer does not read", *total);
			break;
		}
	}
	free(buf);
	return ret;
}

/* MSG_DONTWAIT/O_NONBLOCK: EAGAIN when empty, EAGAIN when full, writable again. */
static int t_dontwait(struct ctx *c)
{
	uint64_t total = 0;
	char args[64], b;
	ssize_t r;
	int fd;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	if (expect_empty(c, fd, "fresh connection") || set_nonblock(c, fd, true))
		return R_FAIL;
	r = read(fd, &b, 1);
	if (r != -1 || errno != EAGAIN)
		return fail(c, "O_NONBLOCK read on an empty socket: %zd (%s), expected EAGAIN", r,
			    r < 0 ? en(errno) : r ? "data" : "EOF");
	if (set_nonblock(c, fd, false) || sync_send(c, "empty") ||
	    sync_wait(c, "empty", NULL, 0))
		return R_FAIL;
	if (c->srv) {
		if (sync_wait(c, "filled", args, sizeof(args)))
			return R_FAIL;
		total = strtoull(args, NULL, 10);
		diag(c, "the client wrote %" PRIu64 " bytes before EAGAIN", total);
		if (recv_stream(c, fd, 0x8001, total, NULL, NULL) ||
		    expect_empty(c, fd, "after reading all the client wrote before EAGAIN") ||
		    sync_send(c, "drained") || sync_wait(c, "more", NULL, 0) ||
		    recv_stream(c, fd, 0x8002, 1000, NULL, NULL) ||
		    expect_empty(c, fd, "after the last 1000 bytes"))
			return R_FAIL;
		return sync_send(c, "done");
	}
	if (fill_nonblock(c, fd, 0x8001, &total) ||
	    sync_send(c, "filled %" PRIu64, total) || sync_wait(c, "drained", NULL, 0))
		return R_FAIL;
	r = poll_one(c, fd, POLLOUT, 5000);
	if (r < 0)
		return R_FAIL;
	if (!(r & POLLOUT))
		return fail(c, "not writable within 5 s after the peer drained the socket");
	{
		uint8_t more[1000];

		gen_bytes(0x8002, 0, more, sizeof(more));
		r = send(fd, more, sizeof(more), MSG_NOSIGNAL);
		if (r != sizeof(more))
			return fail(c, "non-blocking send of 1000 after the drain: %zd (%s)", r,
				    r < 0 ? en(errno) : "short");
		account(c, fd, r, 0);
	}
	if (sync_send(c, "more") || sync_wait(c, "done", NULL, 0))
		return R_FAIL;
	return R_PASS;
}

/* SO_RCVTIMEO of 200 ms: recv on an idle connection fails with EAGAIN in time. */
static int t_rcvtimeo(struct ctx *c)
{
	struct timeval tv;
	socklen_t len = sizeof(tv);
	struct stamp t0;
	double dt, jt;
	ssize_t r;
	char b;
	int fd;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	if (set_timeo(c, fd, SO_RCVTIMEO, 200))
		return R_FAIL;
	if (getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len))
		return fail(c, "getsockopt(SO_RCVTIMEO): %s", en(errno));
	if (tv.tv_sec || tv.tv_usec < 190000 || tv.tv_usec > 210000)
		return fail(c, "SO_RCVTIMEO reads back as %ld.%06ld s, set 0.2 s",
			    (long)tv.tv_sec, (long)tv.tv_usec);
	t0 = stamp_now();
	r = recv(fd, &b, 1, 0);
	dt = now_ms() - t0.ms;
	jt = jiffies_ms_since(t0);
	if (r != -1 || errno != EAGAIN)
		return fail(c, "recv with SO_RCVTIMEO 200 ms: %zd (%s) after %.0f ms, expected EAGAIN",
			    r, r < 0 ? en(errno) : r ? "data" : "EOF", dt);
	if (jt < 180 || dt >= 2000)
		return fail(c, "recv with SO_RCVTIMEO 200 ms returned EAGAIN after %.0f ms (%.0f ms of jiffies)",
			    dt, jt);
	if (sync_send(c, "done") || sync_wait(c, "done", NULL, 0))
		return R_FAIL;
	return R_PASS;
}

/* SO_SNDTIMEO of 200 ms against a peer that does not read: EAGAIN or a short write. */
static int t_sndtimeo(struct ctx *c)
{
	struct stamp t0 = { 0 };
	double end, dt = 0, jt = 0;
	uint8_t *buf;
	uint64_t total = 0;
	char args[64];
	ssize_t r = 0;
	int fd;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	if (c->srv) {
		if (sync_wait(c, "stuck", args, sizeof(args)))
			return R_FAIL;
		total = strtoull(args, NULL, 10);
		if (recv_stream(c, fd, 0x9001, total, NULL, NULL) ||
		    expect_empty(c, fd, "after reading all the client wrote"))
			return R_FAIL;
		return sync_send(c, "drained");
	}
	if (set_timeo(c, fd, SO_SNDTIMEO, 200))
		return R_FAIL;
	buf = malloc(65536);
	if (!buf)
		return fail(c, "out of memory");
	end = now_ms() + 20000;
	while (now_ms() < end && total < (1ULL << 30)) {
		gen_bytes(0x9001, total, buf, 65536);
		t0 = stamp_now();
		r = send(fd, buf, 65536, MSG_NOSIGNAL);
		dt = now_ms() - t0.ms;
		jt = jiffies_ms_since(t0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		account(c, fd, r, 0);
		total += r;
		if (r < 65536)
			break;
	}
	free(buf);
	if (r < 0 && errno != EAGAIN)
		return fail(c, "blocking send with SO_SNDTIMEO: %s after %" PRIu64 " bytes",
			    en(errno), total);
	if (r == 65536)
		return fail(c, "blocking send never timed out (%" PRIu64 " bytes in %s)", total,
			    total >= (1ULL << 30) ? "under 20 s" : "20 s");
	diag(c, "%s after %" PRIu64 " bytes, the call took %.0f ms (%.0f ms of jiffies)",
	     r < 0 ? "EAGAIN" : "short write", total, dt, jt);
	if (jt < 150 || dt >= 2000)
		return fail(c, "the send that timed out took %.0f ms (%.0f ms of jiffies), SO_SNDTIMEO is 200 ms",
			    dt, jt);
	if (sync_send(c, "stuck %" PRIu64, total) || sync_wait(c, "drained", NULL, 0))
		return R_FAIL;
	return R_PASS;
}

/* Make @fd unwritable: non-blocking writes until EAGAIN and poll() no longer says POLLOUT. */
static int fill_until_unwritable(struct ctx *c, int fd, uint64_t seed, uint64_t *total)
{
	int i, rev;

	for (i = 0; i < 50; i++) {
		if (fill_nonblock(c, fd, seed, total))
			return -1;
		rev = poll_one(c, fd, POLLOUT, 200);
		if (rev < 0)
			return -1;
		if (!(rev & POLLOUT))
			return 0;
	}
	return fail(c, "still POLLOUT after %d rounds of writing until EAGAIN (%" PRIu64
		    " bytes)", i, *total);
}

/* poll and select: readable only with data, writable only with room, POLLRDHUP on SHUT_WR. */
static int t_poll_select(struct ctx *c)
{
	const int RW = SEL_RD | SEL_WR;
	uint8_t exp[10], buf[10];
	uint64_t total = 0;
	char args[64];
	int fd;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	gen_bytes(0xa001, 0, exp, sizeof(exp));
	if (c->srv) {
		if (sync_wait(c, "empty", NULL, 0) ||
		    send_all(c, fd, exp, sizeof(exp), "10 bytes") ||
		    sync_wait(c, "full", args, sizeof(args)))
			return R_FAIL;
		total = strtoull(args, NULL, 10);
		if (recv_stream(c, fd, 0xa002, total, NULL, NULL) ||
		    sync_send(c, "drained") || sync_wait(c, "writable", NULL, 0))
			return R_FAIL;
		if (shutdown(fd, SHUT_WR))
			return fail(c, "shutdown(SHUT_WR): %s", en(errno));
		return sync_wait(c, "done", NULL, 0);
	}

	/* idle: writable, not readable */
	if (poll_expect(c, fd, POLLIN | POLLOUT | POLLRDHUP, 0, POLLOUT, "idle connection") ||
	    select_expect(c, fd, RW, 0, SEL_WR, "idle connection"))
		return R_FAIL;

	/* readable while data waits, not once it is read */
	if (sync_send(c, "empty") ||
	    poll_expect(c, fd, POLLIN | POLLRDHUP, 5000, POLLIN, "the peer sent 10 bytes") ||
	    select_expect(c, fd, SEL_RD, 5000, SEL_RD, "the peer sent 10 bytes") ||
	    recv_all(c, fd, buf, sizeof(buf), "10 bytes"))
		return R_FAIL;
	if (memcmp(buf, exp, sizeof(buf)))
		return fail(c, "the 10 bytes differ");
	if (poll_expect(c, fd, POLLIN, 0, 0, "10 bytes read") ||
	    select_expect(c, fd, SEL_RD, 0, 0, "10 bytes read"))
		return R_FAIL;

	/* full: not writable; after the peer drained: writable again */
	if (fill_until_unwritable(c, fd, 0xa002, &total) ||
	    select_expect(c, fd, RW, 0, 0, "send buffer full") ||
	    sync_send(c, "full %" PRIu64, total) || sync_wait(c, "drained", NULL, 0) ||
	    poll_expect(c, fd, POLLOUT, 5000, POLLOUT, "the peer drained the connection") ||
	    select_expect(c, fd, RW, 0, SEL_WR, "the peer drained the connection") ||
	    set_nonblock(c, fd, false))
		return R_FAIL;

	/* the peer's shutdown(SHUT_WR): IN|RDHUP but no HUP, still writable, EOF */
	if (sync_send(c, "writable") ||
	    poll_expect(c, fd, POLLIN | POLLRDHUP, 5000, POLLIN | POLLRDHUP,
			"after the peer's shutdown(SHUT_WR)") ||
	    poll_expect(c, fd, POLLOUT, 0, POLLOUT, "half-closed by the peer") ||
	    select_expect(c, fd, RW, 0, RW, "half-closed by the peer") ||
	    expect_eof(c, fd, "after the peer's shutdown(SHUT_WR)"))
		return R_FAIL;
	return sync_send(c, "done");
}

/*
 * The peer's shutdown(SHUT_WR) arriving while a poll that found nothing asks for
 * doorbells: it reports IN and RDHUP, not IN alone. sockets.sh widens that moment
 * with the fault point poll_arm_delay.
 */
static int t_poll_late_shutdown(struct ctx *c)
{
	int fd;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	if (c->srv) {
		if (sync_wait(c, "polling", NULL, 0))
			return R_FAIL;
		msleep(100);
		if (shutdown(fd, SHUT_WR))
			return fail(c, "shutdown(SHUT_WR): %s", en(errno));
		return sync_wait(c, "done", NULL, 0);
	}
	if (sync_send(c, "polling") ||
	    poll_expect(c, fd, POLLIN | POLLRDHUP, 5000, POLLIN | POLLRDHUP,
			"the peer's shutdown(SHUT_WR) while poll looked") ||
	    expect_eof(c, fd, "after the peer's shutdown(SHUT_WR)"))
		return R_FAIL;
	return sync_send(c, "done");
}

/* epoll_wait on @ep for up to @ms: the events of the one fd (0 if none), -1 on error. */
static int ep_wait(struct ctx *c, int ep, int ms)
{
	struct epoll_event ev[2];
	int n;

	do {
		n = epoll_wait(ep, ev, 2, ms);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return fail(c, "epoll_wait: %s", en(errno));
	if (n > 1)
		return fail(c, "epoll_wait returned %d events for one fd", n);
	return n ? (int)ev[0].events : 0;
}

static int ep_expect(struct ctx *c, int ep, int ms, int want, const char *when)
{
	char es[64], ws[64];
	int got = ep_wait(c, ep, ms);

	if (got < 0)
		return -1;
	if (got != want)
		return fail(c, "%s: epoll_wait(%d ms) events %s, expected %s", when, ms,
			    ev_str(got, es, sizeof(es)), ev_str(want, ws, sizeof(ws)));
	return 0;
}

/* Read everything waiting, until EAGAIN; returns the count or -1. */
static ssize_t drain_nb(struct ctx *c, int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;

	for (;;) {
		ssize_t r = recv(fd, buf + got, len - got, MSG_DONTWAIT);

		if (r < 0 && errno == EAGAIN)
			return got;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return fail(c, "reading until EAGAIN: %s", r ? en(errno) : "EOF");
		account(c, fd, 0, r);
		got += r;
		if (got == len)
			return fail(c, "reading until EAGAIN: more than %zu bytes", len);
	}
}

/* Server half of the epoll checks: 100 bytes, (ET: 50 more), then SHUT_WR. */
static int epoll_server(struct ctx *c, int fd, bool et)
{
	uint8_t exp[150];

	gen_bytes(0xb001, 0, exp, sizeof(exp));
	if (sync_wait(c, "armed", NULL, 0) || send_all(c, fd, exp, 100, "100 bytes") ||
	    sync_wait(c, "drained", NULL, 0))
		return R_FAIL;
	if (et && (send_all(c, fd, exp + 100, 50, "50 bytes") ||
		   sync_wait(c, "drained", NULL, 0)))
		return R_FAIL;
	if (shutdown(fd, SHUT_WR))
		return fail(c, "shutdown(SHUT_WR): %s", en(errno));
	return sync_wait(c, "done", NULL, 0);
}

static int epoll_add(struct ctx *c, int ep, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		return fail(c, "epoll_ctl(ADD): %s", en(errno));
	return 0;
}

static int epoll_lt(struct ctx *c, int fd, int ep, int epo)
{
	uint8_t exp[100], buf[100];

	gen_bytes(0xb001, 0, exp, sizeof(exp));
	if (epoll_add(c, ep, fd, EPOLLIN | EPOLLRDHUP) || epoll_add(c, epo, fd, EPOLLOUT) ||
	    ep_expect(c, ep, 0, 0, "idle connection") ||
	    ep_expect(c, epo, 0, EPOLLOUT, "idle connection (EPOLLOUT)") ||
	    sync_send(c, "armed") ||
	    ep_expect(c, ep, 5000, EPOLLIN, "the peer sent 100 bytes") ||
	    recv_all(c, fd, buf, 50, "first 50") ||
	    ep_expect(c, ep, 0, EPOLLIN, "50 of 100 read (level-triggered)") ||
	    ep_expect(c, ep, 0, EPOLLIN, "50 of 100 read, again") ||
	    recv_all(c, fd, buf + 50, 50, "last 50") ||
	    ep_expect(c, ep, 0, 0, "all read"))
		return R_FAIL;
	if (memcmp(buf, exp, sizeof(buf)))
		return fail(c, "the 100 bytes differ");
	if (sync_send(c, "drained") ||
	    ep_expect(c, ep, 5000, EPOLLIN | EPOLLRDHUP, "after the peer's shutdown(SHUT_WR)") ||
	    ep_expect(c, ep, 0, EPOLLIN | EPOLLRDHUP, "after SHUT_WR, again (level-triggered)") ||
	    ep_expect(c, epo, 0, EPOLLOUT, "half-closed by the peer (EPOLLOUT)") ||
	    expect_eof(c, fd, "after the peer's shutdown(SHUT_WR)"))
		return R_FAIL;
	return sync_send(c, "done");
}

static int epoll_et(struct ctx *c, int fd, int ep)
{
	uint8_t exp[150], buf[256];
	ssize_t n;
	int ev;

	gen_bytes(0xb001, 0, exp, sizeof(exp));
	if (epoll_add(c, ep, fd, EPOLLIN | EPOLLRDHUP | EPOLLET) ||
	    ep_expect(c, ep, 0, 0, "idle connection") || sync_send(c, "armed") ||
	    ep_expect(c, ep, 5000, EPOLLIN, "the peer sent 100 bytes") ||
	    recv_all(c, fd, buf, 10, "first 10"))
		return R_FAIL;
	/* no new data: edge-triggered need not fire again (TCP does not) */
	ev = ep_wait(c, ep, 50);
	if (ev < 0)
		return R_FAIL;
	if (ev)
		diag(c, "note: edge-triggered epoll fired again without new data");
	n = drain_nb(c, fd, buf + 10, sizeof(buf) - 10);
	if (n < 0)
		return R_FAIL;
	if (n != 90 || memcmp(buf, exp, 100))
		return fail(c, "read %zd + 10 bytes until EAGAIN, expected the 100 sent", n);
	if (sync_send(c, "drained") ||
	    ep_expect(c, ep, 5000, EPOLLIN, "new data after draining to EAGAIN (edge-triggered)"))
		return R_FAIL;
	n = drain_nb(c, fd, buf, sizeof(buf));
	if (n < 0)
		return R_FAIL;
	if (n != 50 || memcmp(buf, exp + 100, 50))
		return fail(c, "read %zd bytes until EAGAIN, expected the 50 sent", n);
	if (sync_send(c, "drained") ||
	    ep_expect(c, ep, 5000, EPOLLIN | EPOLLRDHUP, "after the peer's shutdown(SHUT_WR)") ||
	    expect_eof(c, fd, "after the peer's shutdown(SHUT_WR)"))
		return R_FAIL;
	return sync_send(c, "done");
}

static int epoll_check(struct ctx *c, bool et)
{
	int fd, ep, epo, ret;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	if (c->srv)
		return epoll_server(c, fd, et);
	ep = epoll_create1(EPOLL_CLOEXEC);
	epo = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || epo < 0)
		ret = fail(c, "epoll_create1: %s", en(errno));
	else
		ret = et ? epoll_et(c, fd, ep) : epoll_lt(c, fd, ep, epo);
	if (ep >= 0)
		close(ep);
	if (epo >= 0)
		close(epo);
	return ret;
}

/* Level-triggered epoll: IN while data waits, RDHUP after the peer's SHUT_WR. */
static int t_epoll_lt(struct ctx *c)
{
	return epoll_check(c, false);
}

/* Edge-triggered epoll: fires again on new data after draining to EAGAIN. */
static int t_epoll_et(struct ctx *c)
{
	return epoll_check(c, true);
}

/* Client SHUT_WR after its data; the server reads it all, EOF, and answers. */
static int t_half_close(struct ctx *c)
{
	uint64_t len = 100 * 1024;
	ssize_t r;
	int fd;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	if (c->srv) {
		if (recv_stream(c, fd, 0xc001, len, NULL, NULL) ||
		    expect_eof(c, fd, "after the client's shutdown(SHUT_WR)") ||
		    send_stream(c, fd, 0xc002, len, NULL, NULL))
			return R_FAIL;
		if (shutdown(fd, SHUT_WR))
			return fail(c, "shutdown(SHUT_WR): %s", en(errno));
		return sync_wait(c, "done", NULL, 0);
	}
	if (send_stream(c, fd, 0xc001, len, NULL, NULL))
		return R_FAIL;
	if (shutdown(fd, SHUT_WR))
		return fail(c, "shutdown(SHUT_WR): %s", en(errno));
	r = send(fd, "x", 1, MSG_NOSIGNAL);
	if (r != -1 || errno != EPIPE)
		return fail(c, "send after our own shutdown(SHUT_WR): %zd (%s), expected EPIPE", r,
			    r < 0 ? en(errno) : "sent");
	if (recv_stream(c, fd, 0xc002, len, NULL, NULL) ||
	    expect_eof(c, fd, "after the server's shutdown(SHUT_WR)"))
		return R_FAIL;
	return sync_send(c, "done");
}

/*
 * shutdown(SHUT_WR) right after accept(), while the handshake still runs (what
 * ncat does when its standard input is empty): it takes effect in the mode the
 * connection ends in, the client reads EOF and can still send.
 */
static int t_early_shutdown(struct ctx *c)
{
	uint64_t len = 100 * 1024;
	ssize_t r;
	int fd;

	if (!c->srv) {
		fd = data_connect(c);
		if (fd < 0)
			return R_FAIL;
		if (expect_eof(c, fd, "after the server's shutdown(SHUT_WR) at accept") ||
		    send_stream(c, fd, 0xe001, len, NULL, NULL))
			return R_FAIL;
		if (shutdown(fd, SHUT_WR))
			return fail(c, "shutdown(SHUT_WR): %s", en(errno));
		return sync_wait(c, "done", NULL, 0);
	}
	fd = data_accept_ex(c, false);
	if (fd < 0)
		return R_FAIL;
	if (shutdown(fd, SHUT_WR))
		return fail(c, "shutdown(SHUT_WR) right after accept: %s", en(errno));
	if (check_mode(c, find_conn(c, fd), "server data connection, shut down at accept"))
		return R_FAIL;
	r = send(fd, "x", 1, MSG_NOSIGNAL);
	if (r != -1 || errno != EPIPE)
		return fail(c, "send after shutdown(SHUT_WR): %zd (%s), expected EPIPE", r,
			    r < 0 ? en(errno) : "sent");
	if (recv_stream(c, fd, 0xe001, len, NULL, NULL) ||
	    expect_eof(c, fd, "after the client's shutdown(SHUT_WR)"))
		return R_FAIL;
	return sync_send(c, "done");
}

/* write N and close at once: the peer still reads all N, then EOF. */
static int t_close_unsent(struct ctx *c)
{
	uint64_t len = 4 << 20;
	int fd;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	if (c->srv) {
		msleep(200);	/* let the client's buffers fill */
		if (recv_stream(c, fd, 0xd001, len, NULL, NULL) ||
		    expect_eof(c, fd, "after the client's close"))
			return R_FAIL;
		return sync_wait(c, "closed", NULL, 0);
	}
	if (send_stream(c, fd, 0xd001, len, NULL, NULL))
		return R_FAIL;
	close_conn(c, fd);
	return sync_send(c, "closed");
}

/* The receiver closes with unread data: the sender's writes fail, bounded. */
static int t_close_unread(struct ctx *c)
{
	uint8_t buf[1000];
	double end;
	int fd, rev, n = 0;
	char es[64];
	ssize_t r;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	gen_bytes(0xe001, 0, buf, sizeof(buf));
	if (c->srv) {
		if (sync_wait(c, "sent", NULL, 0))
			return R_FAIL;
		rev = poll_one(c, fd, POLLIN, 5000);
		if (rev < 0)
			return R_FAIL;
		if (!(rev & POLLIN))
			return fail(c, "the client's 1000 bytes did not arrive in 5 s (revents %s)",
				    ev_str(rev, es, sizeof(es)));
		close_conn(c, fd);
		if (sync_send(c, "closed"))
			return R_FAIL;
		return sync_wait(c, "done", NULL, 0);
	}
	if (send_all(c, fd, buf, sizeof(buf), "1000 bytes") || sync_send(c, "sent") ||
	    sync_wait(c, "closed", NULL, 0))
		return R_FAIL;
	no_counters(c, fd);	/* what follows cannot reach the peer */
	end = now_ms() + 5000;
	for (;;) {
		r = send(fd, buf, sizeof(buf), MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n++;
		if (now_ms() > end)
			return fail(c, "writes still succeed 5 s after the peer closed with unread data (%d writes)",
				    n);
		msleep(10);
	}
	if (errno != ECONNRESET && errno != EPIPE)
		return fail(c, "write after the peer closed with unread data: %s, expected ECONNRESET or EPIPE",
			    en(errno));
	diag(c, "write failed with %s after %d more successful writes", en(errno), n);
	return sync_send(c, "done");
}

/* SO_LINGER {1,0}: close resets the peer; {1,2}: close returns in time, data arrives. */
static int t_linger(struct ctx *c)
{
	struct linger lg = { 1, 0 };
	uint64_t len = 64 * 1024;
	double t0, dt;
	char b, es[64];
	ssize_t r;
	int fd, rev;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	if (c->srv) {
		if (sync_wait(c, "closed", NULL, 0))
			return R_FAIL;
		rev = poll_one(c, fd, POLLIN, 5000);
		if (rev < 0)
			return R_FAIL;
		r = recv(fd, &b, 1, 0);
		if (r != -1 || errno != ECONNRESET)
			return fail(c, "recv after the peer's SO_LINGER {1,0} close: %zd (%s), revents %s, expected ECONNRESET",
				    r, r < 0 ? en(errno) : r ? "data" : "EOF",
				    ev_str(rev, es, sizeof(es)));
		close_conn(c, fd);
		fd = data_accept(c);
		if (fd < 0)
			return R_FAIL;
		if (recv_stream(c, fd, 0xf001, len, NULL, NULL) ||
		    expect_eof(c, fd, "after the client's SO_LINGER {1,2} close"))
			return R_FAIL;
		return sync_wait(c, "done", NULL, 0);
	}
	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)))
		return fail(c, "setsockopt(SO_LINGER {1,0}): %s", en(errno));
	close_conn(c, fd);
	if (sync_send(c, "closed"))
		return R_FAIL;
	fd = data_connect(c);
	if (fd < 0 || send_stream(c, fd, 0xf001, len, NULL, NULL))
		return R_FAIL;
	lg.l_linger = 2;
	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)))
		return fail(c, "setsockopt(SO_LINGER {1,2}): %s", en(errno));
	t0 = now_ms();
	r = close(fd);
	dt = now_ms() - t0;
	untrack(c, fd);
	if (r)
		return fail(c, "close with SO_LINGER {1,2}: %s", en(errno));
	if (dt > 2500)
		return fail(c, "close with SO_LINGER {1,2} took %.0f ms", dt);
	return sync_send(c, "done");
}

static int ioctl_int(struct ctx *c, int fd, unsigned long req, const char *name, int *v)
{
	*v = -1;
	if (ioctl(fd, req, v))
		return fail(c, "ioctl(%s): %s", name, en(errno));
	return 0;
}

/* SIOCINQ counts the bytes waiting; SIOCOUTQ drops to 0 once the peer read all. */
static int t_ioctls(struct ctx *c)
{
	uint8_t exp[1234], buf[1234];
	double end;
	int fd, v;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	gen_bytes(0x10001, 0, exp, sizeof(exp));
	if (ioctl_int(c, fd, SIOCINQ, "SIOCINQ", &v))
		return R_FAIL;
	if (v)
		return fail(c, "SIOCINQ on a fresh connection is %d", v);
	if (ioctl_int(c, fd, SIOCOUTQ, "SIOCOUTQ", &v))
		return R_FAIL;
	if (v)
		return fail(c, "SIOCOUTQ on a fresh connection is %d", v);
	if (sync_send(c, "fresh") || sync_wait(c, "fresh", NULL, 0))
		return R_FAIL;
	if (c->srv) {
		if (sync_wait(c, "sent", NULL, 0))
			return R_FAIL;
		end = now_ms() + 5000;
		for (;;) {
			if (ioctl_int(c, fd, SIOCINQ, "SIOCINQ", &v))
				return R_FAIL;
			if (v > 1234)
				return fail(c, "SIOCINQ is %d, only 1234 bytes were sent", v);
			if (v == 1234)
				break;
			if (now_ms() > end)
				return fail(c, "SIOCINQ is %d, not 1234, after 5 s", v);
			msleep(2);
		}
		if (recv_all(c, fd, buf, 234, "234 bytes") ||
		    ioctl_int(c, fd, SIOCINQ, "SIOCINQ", &v))
			return R_FAIL;
		if (v != 1000)
			return fail(c, "SIOCINQ is %d after reading 234 of 1234, expected 1000", v);
		if (recv_all(c, fd, buf + 234, 1000, "1000 bytes") ||
		    ioctl_int(c, fd, SIOCINQ, "SIOCINQ", &v))
			return R_FAIL;
		if (v)
			return fail(c, "SIOCINQ is %d after reading everything", v);
		if (memcmp(buf, exp, sizeof(buf)))
			return fail(c, "the 1234 bytes differ");
		if (sync_send(c, "read"))
			return R_FAIL;
		return sync_wait(c, "done", NULL, 0);
	}
	if (send_all(c, fd, exp, sizeof(exp), "1234 bytes") || sync_send(c, "sent") ||
	    sync_wait(c, "read", NULL, 0))
		return R_FAIL;
	end = now_ms() + 5000;
	for (;;) {
		if (ioctl_int(c, fd, SIOCOUTQ, "SIOCOUTQ", &v))
			return R_FAIL;
		if (v < 0 || v > 1234)
			return fail(c, "SIOCOUTQ is %d, only 1234 bytes were sent", v);
		if (!v)
			break;
		if (now_ms() > end)
			return fail(c, "SIOCOUTQ is still %d 5 s after the peer read everything", v);
		msleep(2);
	}
	if (ioctl_int(c, fd, SIOCINQ, "SIOCINQ", &v))
		return R_FAIL;
	if (v)
		return fail(c, "SIOCINQ is %d, the peer sent nothing", v);
	return sync_send(c, "done");
}

/* SO_ERROR is 0 on a healthy connection, before and after traffic. */
static int t_so_error(struct ctx *c)
{
	char b = 'e';
	int fd, v;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	if (get_int(c, fd, SOL_SOCKET, SO_ERROR, &v, "SO_ERROR"))
		return R_FAIL;
	if (v)
		return fail(c, "SO_ERROR before traffic is %s, expected 0", en(v));
	if (c->srv) {
		if (recv_all(c, fd, &b, 1, "ping") || send_all(c, fd, &b, 1, "pong"))
			return R_FAIL;
	} else {
		if (send_all(c, fd, &b, 1, "ping") || recv_all(c, fd, &b, 1, "pong"))
			return R_FAIL;
	}
	if (get_int(c, fd, SOL_SOCKET, SO_ERROR, &v, "SO_ERROR"))
		return R_FAIL;
	if (v)
		return fail(c, "SO_ERROR after traffic is %s, expected 0", en(v));
	return R_PASS;
}

/* After the peer's close: write fails with EPIPE; SIGPIPE unless MSG_NOSIGNAL. */
static int t_epipe(struct ctx *c)
{
	double end;
	int fd, n = 0, sp;
	ssize_t r;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	if (c->srv) {
		close_conn(c, fd);
		if (sync_send(c, "closed"))
			return R_FAIL;
		return sync_wait(c, "done", NULL, 0);
	}
	if (sync_wait(c, "closed", NULL, 0) ||
	    expect_eof(c, fd, "after the peer's close"))
		return R_FAIL;
	no_counters(c, fd);
	end = now_ms() + 5000;
	for (;;) {
		r = send(fd, "abc", 3, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n++;
		if (now_ms() > end)
			return fail(c, "writes still succeed 5 s after the peer closed (%d writes)", n);
		msleep(5);
	}
	if (errno != EPIPE)
		return fail(c, "send(MSG_NOSIGNAL) after the peer closed: %s, expected EPIPE",
			    en(errno));
	diag(c, "EPIPE after %d successful write(s)", n);
	sp = sigpipes;
	r = write(fd, "abc", 3);
	if (r != -1 || errno != EPIPE)
		return fail(c, "write() after EPIPE: %zd (%s), expected EPIPE", r,
			    r < 0 ? en(errno) : "sent");
	if (sigpipes != sp + 1)
		return fail(c, "write() failing with EPIPE raised %d SIGPIPE, expected 1",
			    sigpipes - sp);
	sp = sigpipes;
	r = send(fd, "abc", 3, MSG_NOSIGNAL);
	if (r != -1 || errno != EPIPE)
		return fail(c, "send(MSG_NOSIGNAL) after EPIPE: %zd (%s), expected EPIPE", r,
			    r < 0 ? en(errno) : "sent");
	if (sigpipes != sp)
		return fail(c, "send(MSG_NOSIGNAL) raised SIGPIPE");
	return sync_send(c, "done");
}

/* getsockname/getpeername of one end are getpeername/getsockname of the other. */
static int t_names(struct ctx *c)
{
	struct sockaddr_storage ss;
	char me[80], peer[80], args[200], pme[80], ppeer[80];
	socklen_t len;
	int fd;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return fail(c, "getsockname: %s", en(errno));
	if (ss.ss_family != opt.family)
		return fail(c, "getsockname: family %d, expected %d", ss.ss_family, opt.family);
	fmt_sa(&ss, me, sizeof(me));
	len = sizeof(ss);
	if (getpeername(fd, (struct sockaddr *)&ss, &len))
		return fail(c, "getpeername: %s", en(errno));
	fmt_sa(&ss, peer, sizeof(peer));
	if (!c->srv) {
		char want[80];

		fmt_sa(&opt.data_sa, want, sizeof(want));
		if (strcmp(peer, want))
			return fail(c, "getpeername is %s, but the client connected to %s",
				    peer, want);
	}
	if (sync_send(c, "names %s %s", me, peer) ||
	    sync_wait(c, "names", args, sizeof(args)))
		return R_FAIL;
	if (sscanf(args, "%79s %79s", pme, ppeer) != 2)
		return fail(c, "bad names message '%s'", args);
	if (strcmp(me, ppeer))
		return fail(c, "getsockname is %s, the peer's getpeername is %s", me, ppeer);
	if (strcmp(peer, pme))
		return fail(c, "getpeername is %s, the peer's getsockname is %s", peer, pme);
	return R_PASS;
}

/* Set @name to @val and read it back as @want. */
static int opt_roundtrip(struct ctx *c, int fd, int level, int name, int val, int want,
			 const char *what)
{
	int v;

	if (set_int(c, fd, level, name, val, what) || get_int(c, fd, level, name, &v, what))
		return -1;
	if (v != want)
		return fail(c, "%s set to %d reads back as %d, expected %d", what, val, v, want);
	return 0;
}

/* Common socket options are accepted, read back as on TCP, and data still flows. */
static int t_sockopts(struct ctx *c)
{
	uint8_t exp[60], buf[60];
	uint64_t len = 1 << 20;
	int fd;

	fd = data_conn(c);
	if (fd < 0)
		return R_FAIL;
	/* Linux doubles SO_SNDBUF/SO_RCVBUF for bookkeeping overhead */
	if (opt_roundtrip(c, fd, SOL_TCP, TCP_NODELAY, 1, 1, "TCP_NODELAY") ||
	    opt_roundtrip(c, fd, SOL_SOCKET, SO_KEEPALIVE, 1, 1, "SO_KEEPALIVE") ||
	    opt_roundtrip(c, fd, SOL_TCP, TCP_KEEPIDLE, 30, 30, "TCP_KEEPIDLE") ||
	    opt_roundtrip(c, fd, SOL_TCP, TCP_KEEPINTVL, 5, 5, "TCP_KEEPINTVL") ||
	    opt_roundtrip(c, fd, SOL_TCP, TCP_KEEPCNT, 3, 3, "TCP_KEEPCNT") ||
	    opt_roundtrip(c, fd, SOL_SOCKET, SO_SNDBUF, 32768, 65536, "SO_SNDBUF") ||
	    opt_roundtrip(c, fd, SOL_SOCKET, SO_RCVBUF, 32768, 65536, "SO_RCVBUF"))
		return R_FAIL;
	gen_bytes(0x11001, 0, exp, sizeof(exp));
	if (c->srv) {
		if (recv_all(c, fd, buf, sizeof(buf), "corked bytes"))
			return R_FAIL;
		if (memcmp(buf, exp, sizeof(buf)))
			return fail(c, "the bytes written under TCP_CORK differ");
	} else {
		/* three small writes under TCP_CORK, sent when it comes off */
		if (opt_roundtrip(c, fd, SOL_TCP, TCP_CORK, 1, 1, "TCP_CORK") ||
		    send_all(c, fd, exp, 10, "corked 10") ||
		    send_all(c, fd, exp + 10, 20, "corked 20") ||
		    send_all(c, fd, exp + 30, 30, "corked 30") ||
		    opt_roundtrip(c, fd, SOL_TCP, TCP_CORK, 0, 0, "TCP_CORK"))
			return R_FAIL;
	}
	if (opt_roundtrip(c, fd, SOL_TCP, TCP_NODELAY, 0, 0, "TCP_NODELAY") ||
	    xfer(c, fd, false, 0x11002, len, 0x11, 0x12) ||
	    xfer(c, fd, true, 0x11003, len, 0x13, 0x14))
		return R_FAIL;
	return R_PASS;
}

/* Many concurrent connections, each echoing a few bytes of its own. */
static int t_many_conns(struct ctx *c)
{
	int n = c->conns_n, i, *fds;
	int ret = R_FAIL;

	fds = calloc(n, sizeof(*fds));
	if (!fds)
		return fail(c, "out of memory");
	for (i = 0; i < n; i++) {
		fds[i] = data_conn(c);
		if (fds[i] < 0) {
			fail(c, "connection %d of %d", i + 1, n);
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		uint32_t msg[2] = { htonl(i), htonl(0x4e540000 ^ i) };

		if (c->srv) {
			if (recv_all(c, fds[i], msg, sizeof(msg), "message") ||
			    send_all(c, fds[i], msg, sizeof(msg), "echo"))
				goto out;
		} else if (send_all(c, fds[i], msg, sizeof(msg), "message")) {
			goto out;
		}
	}
	if (c->srv) {
		ret = sync_wait(c, "done", NULL, 0) ? R_FAIL : R_PASS;
		goto out;
	}
	for (i = 0; i < n; i++) {
		uint32_t msg[2];

		if (recv_all(c, fds[i], msg, sizeof(msg), "echo"))
			goto out;
		if (ntohl(msg[0]) != (uint32_t)i || ntohl(msg[1]) != (0x4e540000u ^ i)) {
			fail(c, "connection %d got the echo of %u/%08x", i, ntohl(msg[0]),
			     ntohl(msg[1]));
			goto out;
		}
	}
	ret = sync_send(c, "done") ? R_FAIL : R_PASS;
out:
	free(fds);
	return ret;
}

/* Client: where TCP_ULP "ntbsmc" must be refused, and LISTEN mode. */
static int ulp_states_client(struct ctx *c)
{
	struct sockaddr_storage ss = { .ss_family = opt.family };	/* any address, port 0 */
	struct ntbsmc_info info;
	socklen_t len;
	int fd, r;

	/* set twice */
	fd = socket(opt.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(c, "socket: %s", en(errno));
	if (set_ulp(fd)) {
		r = fail(c, "TCP_ULP on a new socket: %s", en(errno));
		close(fd);
		return r;
	}
	r = set_ulp(fd);
	close(fd);
	if (r != -1 || errno != EEXIST)
		return fail(c, "TCP_ULP set twice: %d (%s), expected EEXIST", r,
			    r ? en(errno) : "accepted");

	/* a listening socket: refused after listen(), LISTEN mode if set before */
	fd = socket(opt.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(c, "socket: %s", en(errno));
	if (bind(fd, (struct sockaddr *)&ss, opt.salen) || listen(fd, 1)) {
		r = fail(c, "bind/listen on port 0: %s", en(errno));
		close(fd);
		return r;
	}
	r = set_ulp(fd);
	close(fd);
	if (!r)
		return fail(c, "TCP_ULP on a listening socket was accepted");
	diag(c, "TCP_ULP on a listening socket: %s", en(errno));
	fd = socket(opt.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(c, "socket: %s", en(errno));
	if (set_ulp(fd) || bind(fd, (struct sockaddr *)&ss, opt.salen) || listen(fd, 1)) {
		r = fail(c, "TCP_ULP, bind, listen: %s", en(errno));
		close(fd);
		return r;
	}
	r = get_info(fd, &info, &len);
	close(fd);
	if (r)
		return fail(c, "NTBSMC_INFO on a listening socket: %s", en(errno));
	if (info.mode != NTBSMC_MODE_LISTEN)
		return fail(c, "NTBSMC_INFO on a listening socket: mode %s, expected LISTEN",
			    MODE_NAME(info.mode));

	/* a connected socket (without the ULP) */
	fd = data_connect_ex(c, false, false);
	if (fd < 0)
		return R_FAIL;
	r = set_ulp(fd);
	if (!r)
		return fail(c, "TCP_ULP on a connected socket was accepted");
	if (errno != EISCONN && errno != EINVAL)
		return fail(c, "TCP_ULP on a connected socket: %s, expected EISCONN or EINVAL",
			    en(errno));
	diag(c, "TCP_ULP on a connected socket: %s", en(errno));
	return sync_send(c, "done");
}

/* TCP_ULP "ntbsmc" refused on connected and listening sockets and when set twice. */
static int t_ulp_states(struct ctx *c)
{
	char args[32];

	if (!c->srv) {
		if (sync_send(c, "mode %s", opt.ulp ? "run" : "skip"))
			return R_FAIL;
		if (!opt.ulp)
			return skip(c, "needs --ulp");
		return ulp_states_client(c);
	}
	if (sync_wait(c, "mode", args, sizeof(args)))
		return R_FAIL;
	if (strcmp(args, "run"))
		return skip(c, "needs --ulp");
	/* the client's plain connection: no ntbsmc mode to check */
	if (data_accept_ex(c, false) < 0)
		return R_FAIL;
	return sync_wait(c, "done", NULL, 0);
}

/* A new client socket (with the ULP if --ulp), SO_*TIMEO set, not tracked. */
static int raw_socket(struct ctx *c, int flags)
{
	int fd = socket(opt.family, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);

	if (fd < 0)
		return fail(c, "socket: %s", en(errno));
	if (setup_data_fd(c, fd) || (opt.ulp && set_ulp(fd))) {
		fail(c, "socket setup: %s", en(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Waits (bounded) until TCP established @fd's connection. */
static int wait_established(struct ctx *c, int fd)
{
	double end = now_ms() + 5000;
	struct tcp_info ti;
	socklen_t len;

	for (;;) {
		len = sizeof(ti);
		if (getsockopt(fd, SOL_TCP, TCP_INFO, &ti, &len))
			return fail(c, "TCP_INFO: %s", en(errno));
		if (ti.tcpi_state == TCP_ESTABLISHED)
			return 0;
		if (now_ms() > end)
			return fail(c, "not established in 5 s (state %u)", ti.tcpi_state);
		msleep(1);
	}
}

/*
 * A client connects (non-blocking) and closes as soon as TCP is established,
 * during ntbsmc's handshake: the server reads EOF, as from TCP, not a reset.
 */
static int t_connect_close(struct ctx *c)
{
	int fd;

	if (c->srv) {
		fd = data_accept_ex(c, false);
		if (fd < 0 || expect_eof(c, fd, "after the client's connect and close"))
			return R_FAIL;
		return sync_wait(c, "closed", NULL, 0);
	}
	fd = raw_socket(c, SOCK_NONBLOCK);
	if (fd < 0)
		return R_FAIL;
	if (connect(fd, (struct sockaddr *)&opt.data_sa, opt.salen) && errno != EINPROGRESS) {
		close(fd);
		return fail(c, "connect: %s", en(errno));
	}
	if (wait_established(c, fd)) {
		close(fd);
		return R_FAIL;
	}
	close(fd);
	return sync_send(c, "closed");
}

/*
 * send() on a socket whose non-blocking connect is still in progress waits for
 * the connection like TCP's; the bytes arrive whole (over ntbsmc: after its
 * handshake, never ahead of it).
 */
static int t_connect_send(struct ctx *c)
{
	uint8_t buf[1000], got[1000];
	struct tconn *t;
	int fd;

	gen_bytes(0xc5e1, 0, buf, sizeof(buf));
	if (c->srv) {
		fd = data_accept(c);
		if (fd < 0 || recv_all(c, fd, got, sizeof(got), "1000 bytes"))
			return R_FAIL;
		if (memcmp(buf, got, sizeof(buf)))
			return fail(c, "the 1000 bytes differ");
		return sync_wait(c, "done", NULL, 0);
	}
	fd = raw_socket(c, SOCK_NONBLOCK);
	if (fd < 0)
		return R_FAIL;
	t = track(c, fd);
	if (!t) {
		close(fd);
		return R_FAIL;
	}
	if (connect(fd, (struct sockaddr *)&opt.data_sa, opt.salen) && errno != EINPROGRESS)
		return fail(c, "connect: %s", en(errno));
	if (fcntl(fd, F_SETFL, 0))
		return fail(c, "fcntl: %s", en(errno));
	if (send_all(c, fd, buf, sizeof(buf), "1000 bytes right after connect") ||
	    check_mode(c, t, "client data connection"))
		return R_FAIL;
	/* the mode was looked at after the send: its counters count from zero */
	t->base.tx_bytes = t->base.rx_bytes = 0;
	return sync_send(c, "done");
}

/*
 * Data in the SYN (TCP Fast Open, sendto with MSG_FASTOPEN): it arrives, in
 * order. Over ntbsmc it would precede the handshake, so such a connection stays
 * TCP (reason fastopen) on both ends.
 */
static int t_fastopen(struct ctx *c)
{
	uint8_t buf[1000], got[1000];
	struct ntbsmc_info info;
	socklen_t len;
	ssize_t r;
	int fd;

	gen_bytes(0xfa57, 0, buf, sizeof(buf));
	if (c->srv) {
		fd = data_accept_ex(c, false);
		if (fd < 0 || recv_all(c, fd, got, sizeof(got), "1000 bytes"))
			return R_FAIL;
		if (memcmp(buf, got, sizeof(buf)))
			return fail(c, "the 1000 bytes differ");
		return sync_wait(c, "done", NULL, 0);
	}
	fd = raw_socket(c, 0);
	if (fd < 0)
		return R_FAIL;
	if (!track(c, fd)) {
		close(fd);
		return R_FAIL;
	}
	do {
		r = sendto(fd, buf, sizeof(buf), MSG_FASTOPEN | MSG_NOSIGNAL,
			   (struct sockaddr *)&opt.data_sa, opt.salen);
	} while (r < 0 && errno == EINTR);
	if (r < 0 && errno == EOPNOTSUPP)
		return skip(c, "TCP Fast Open is off (net.ipv4.tcp_fastopen)");
	if (r < 0)
		return fail(c, "sendto(MSG_FASTOPEN): %s", en(errno));
	if (r != sizeof(buf) && send_all(c, fd, buf + r, sizeof(buf) - r, "the rest"))
		return R_FAIL;
	if (opt.ulp && (get_info(fd, &info, &len) || info.mode != NTBSMC_MODE_TCP ||
			info.reason != NTBSMC_REASON_FASTOPEN))
		return fail(c, "Fast Open connection: mode %s reason %s, want tcp fastopen",
			    MODE_NAME(info.mode), REASON_NAME(info.reason));
	return sync_send(c, "done");
}

/*
 * connect(AF_UNSPEC) ends a connection (a reset, for the peer) and the socket
 * connects anew: what it sends then arrives on the new connection only.
 */
static int t_disconnect(struct ctx *c)
{
	struct sockaddr sa = { .sa_family = AF_UNSPEC };
	uint8_t buf[1000], got[1000];
	ssize_t r;
	int fd, fd2;

	if (c->srv) {
		fd = data_accept(c);
		if (fd < 0 || recv_all(c, fd, got, 100, "100 bytes") ||
		    sync_wait(c, "reconnected", NULL, 0))
			return R_FAIL;
		no_counters(c, fd);	/* its peer moved on */
		fd2 = data_accept_ex(c, false);
		if (fd2 < 0 || recv_all(c, fd2, got, sizeof(got), "1000 bytes, new connection"))
			return R_FAIL;
		gen_bytes(0xd15c, 1, buf, sizeof(buf));
		if (memcmp(buf, got, sizeof(buf)))
			return fail(c, "the new connection's 1000 bytes differ");
		do {
			r = recv(fd, got, 1, MSG_DONTWAIT);
		} while (r < 0 && errno == EINTR);
		if (r > 0)
			return fail(c, "the old connection got data after the disconnect");
		return sync_wait(c, "done", NULL, 0);
	}
	fd = data_connect(c);
	gen_bytes(0xd15c, 0, buf, sizeof(buf));
	if (fd < 0 || send_all(c, fd, buf, 100, "100 bytes"))
		return R_FAIL;
	no_counters(c, fd);
	if (connect(fd, &sa, sizeof(sa)))
		return fail(c, "connect(AF_UNSPEC): %s", en(errno));
	if (connect(fd, (struct sockaddr *)&opt.data_sa, opt.salen))
		return fail(c, "connect again: %s", en(errno));
	if (sync_send(c, "reconnected"))
		return R_FAIL;
	gen_bytes(0xd15c, 1, buf, sizeof(buf));
	if (send_all(c, fd, buf, sizeof(buf), "1000 bytes, new connection"))
		return R_FAIL;
	return sync_send(c, "done");
}

static const struct check checks[] = {
	{ "data_sizes",		t_data_sizes,		60 },
	{ "random_io",		t_random_io,		30 },
	{ "bidir",		t_bidir,		30 },
	{ "iov",		t_iov,			20 },
	{ "peek",		t_peek,			20 },
	{ "read_all",		t_read_all,		30 },
	{ "waitall",		t_waitall,		20 },
	{ "dontwait",		t_dontwait,		30 },
	{ "rcvtimeo",		t_rcvtimeo,		20 },
	{ "sndtimeo",		t_sndtimeo,		40 },
	{ "poll_select",	t_poll_select,		40 },
	{ "poll_late_shutdown",	t_poll_late_shutdown,	20 },
	{ "epoll_lt",		t_epoll_lt,		20 },
	{ "epoll_et",		t_epoll_et,		20 },
	{ "half_close",		t_half_close,		20 },
	{ "early_shutdown",	t_early_shutdown,	20 },
	{ "close_unsent",	t_close_unsent,		20 },
	{ "close_unread",	t_close_unread,		20 },
	{ "linger",		t_linger,		20 },
	{ "ioctls",		t_ioctls,		20 },
	{ "so_error",		t_so_error,		20 },
	{ "epipe",		t_epipe,		20 },
	{ "names",		t_names,		20 },
	{ "sockopts",		t_sockopts,		30 },
	/* 200 handshakes took up to 39 s between the debug kernel's VMs */
	{ "many_conns",		t_many_conns,		120 },
	{ "ulp_states",		t_ulp_states,		20 },
	{ "connect_close",	t_connect_close,	20 },
	{ "connect_send",	t_connect_send,		20 },
	{ "fastopen",		t_fastopen,		20 },
	{ "disconnect",		t_disconnect,		20 },
};

#define NCHECKS	((int)(sizeof(checks) / sizeof(checks[0])))

/* ---------------------------------------------------------------- harness */

static void on_alarm(int sig)
{
	ssize_t r;

	(void)sig;
	r = write(STDOUT_FILENO, watchdog_msg, strlen(watchdog_msg));
	(void)r;
	_exit(1);
}

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

static const struct check *find_check(const char *name)
{
	int i;

	for (i = 0; i < NCHECKS; i++)
		if (!strcmp(checks[i].name, name))
			return &checks[i];
	return NULL;
}

/* Server: close whatever an earlier check left in the accept queue. */
static void drain_backlog(struct ctx *c)
{
	int fd;

	while ((fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(fd);
}

static int worst(int a, int b)
{
	if (a == R_FAIL || b == R_FAIL)
		return R_FAIL;
	if (a == R_SKIP || b == R_SKIP)
		return R_SKIP;
	return R_PASS;
}

static const char *res_name(int r)
{
	return r == R_PASS ? "pass" : r == R_SKIP ? "skip" : "fail";
}

/*
 * Run check @chk as test @num: the check itself, then "DONE res" both ways, the
 * NTB counters while the connections are still open, then "RESULT res reason"
 * both ways. Both sides print the same verdict.
 */
static int run_check(struct ctx *c, const struct check *chk, int num)
{
	int budget = chk->budget_s + (int)(c->big_mib / 8);
	char line[600], reason[200] = "";
	int res, peer = R_FAIL;
	double end, t0 = now_ms();

	snprintf(watchdog_msg, sizeof(watchdog_msg),
		 "# %s: %s: FAIL: watchdog: the check took longer than %d s\n"
		 "not ok %d %s\nBail out! %s: watchdog expired\n",
		 side(c), chk->name, budget, num, chk->name, side(c));
	alarm(budget);
	c->chk = chk;
	c->peer_done = false;
	c->skip[0] = 0;
	c->wait_ms = budget * 1000;
	res = chk->fn(c);
	if (res != R_PASS)
		close_all(c);

	/* DONE: both ends are finished with the data connections */
	if (!c->ctl_dead)
		ctl_send(c, "DONE %s", res_name(res));
	end = now_ms() + budget * 1000.0;
	while (!c->peer_done && !c->ctl_dead) {
		int left = end - now_ms();

		if (ctl_readline(c, line, sizeof(line), left > 0 ? left : 1))
			break;
		if (!strncmp(line, "DONE ", 5)) {
			c->peer_done = true;
			c->peer_res = parse_res(line + 5);
		}
	}
	if (!c->peer_done)
		res = fail(c, "no DONE from the peer");
	peer = c->peer_res;
	if (res == R_PASS && peer != R_FAIL && check_counters(c))
		res = R_FAIL;
	close_all(c);

	/* RESULT: agree on the verdict */
	if (!c->ctl_dead)
		ctl_send(c, "RESULT %s %s", res_name(res), c->skip);
	for (;;) {
		int left = end - now_ms();

		if (c->ctl_dead || ctl_readline(c, line, sizeof(line), left > 0 ? left : 1)) {
			peer = R_FAIL;
			fail(c, "no RESULT from the peer");
			break;
		}
		if (!strncmp(line, "RESULT ", 7)) {
			char *sp = strchr(line + 7, ' ');

			peer = parse_res(line + 7);
			if (sp && peer == R_SKIP && !c->skip[0])
				snprintf(reason, sizeof(reason), "%s", sp + 1);
			break;
		}
	}
	alarm(0);
	if (c->skip[0])
		snprintf(reason, sizeof(reason), "%s", c->skip);
	if (res == R_PASS && peer == R_FAIL)
		printf("# %s: %s: the peer failed this check (see its output)\n",
		       side(c), chk->name);
	res = worst(res, peer);
	printf("# %s: %s: %.0f ms\n", side(c), chk->name, now_ms() - t0);
	if (res == R_FAIL)
		printf("not ok %d %s\n", num, chk->name);
	else if (res == R_SKIP)
		printf("ok %d %s # SKIP %s\n", num, chk->name, reason[0] ? reason : "");
	else
		printf("ok %d %s\n", num, chk->name);
	c->chk = NULL;
	return res;
}

static int resolve(const char *addr, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = {
		.ai_family = strchr(addr, ':') ? AF_INET6 : AF_INET,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
	};
	struct addrinfo *ai;
	char ps[16];
	int err;

	snprintf(ps, sizeof(ps), "%d", port);
	err = getaddrinfo(addr, ps, &hints, &ai);
	if (err) {
		fprintf(stderr, "sockets: bad address %s: %s\n", addr, gai_strerror(err));
		return -1;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static void summary(int pass, int fail_n, int skip_n)
{
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:0\n",
	       pass, fail_n, skip_n);
}

static int listen_on(const struct sockaddr_storage *ss, bool ulp, int backlog)
{
	int fd, one = 1;

	fd = socket(opt.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		printf("Bail out! socket: %s\n", en(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, opt.salen)) {
		printf("Bail out! bind: %s\n", en(errno));
		goto err;
	}
	if (ulp && set_ulp(fd)) {
		printf("Bail out! setsockopt(TCP_ULP, \"ntbsmc\") on the listening socket: %s%s\n",
		       en(errno), errno == ENOENT ? " (is the ntbsmc module loaded?)" : "");
		goto err;
	}
	if (listen(fd, backlog)) {
		printf("Bail out! listen: %s\n", en(errno));
		goto err;
	}
	return fd;
err:
	close(fd);
	return -1;
}

static int run_server(struct ctx *c)
{
	int cl, pass = 0, fails = 0, skips = 0, n = 0, num = 0;
	char line[600];
	struct pollfd p;

	c->lfd = listen_on(&opt.data_sa, opt.ulp, 4096);
	if (c->lfd < 0)
		return 1;
	cl = listen_on(&opt.ctl_sa, false, 4);
	if (cl < 0)
		return 1;
	if (opt.ulp) {
		struct ntbsmc_info info;
		socklen_t len;

		if (get_info(c->lfd, &info, &len))
			printf("# server: listening socket: NTBSMC_INFO: %s\n", en(errno));
		else
			printf("# server: listening socket: mode %s\n", MODE_NAME(info.mode));
	}
	p.fd = cl;
	p.events = POLLIN;
	if (poll(&p, 1, SERVER_WAIT_MS) != 1) {
		printf("Bail out! server: no client within %d s\n", SERVER_WAIT_MS / 1000);
		return 1;
	}
	c->ctl = accept4(cl, NULL, NULL, SOCK_CLOEXEC);
	close(cl);
	if (c->ctl < 0) {
		printf("Bail out! server: accept of the control connection: %s\n", en(errno));
		return 1;
	}
	set_timeo(c, c->ctl, SO_RCVTIMEO, SERVER_WAIT_MS);
	if (ctl_readline(c, line, sizeof(line), SERVER_WAIT_MS) ||
	    sscanf(line, "PLAN %d %d %ld", &n, &c->conns_n, &c->big_mib) != 3) {
		printf("Bail out! server: no PLAN from the client ('%s')\n", line);
		return 1;
	}
	if (c->conns_n + 16 > c->maxconns) {
		free(c->conns);
		c->maxconns = c->conns_n + 16;
		c->conns = calloc(c->maxconns, sizeof(*c->conns));
		if (!c->conns) {
			printf("Bail out! server: out of memory\n");
			return 1;
		}
	}
	printf("1..%d\n", n);
	for (;;) {
		const struct check *chk;
		int res;

		if (ctl_readline(c, line, sizeof(line), SERVER_WAIT_MS)) {
			printf("Bail out! server: lost the client\n");
			return 1;
		}
		if (!strcmp(line, "BYE"))
			break;
		if (strncmp(line, "RUN ", 4) || !(chk = find_check(line + 4))) {
			printf("Bail out! server: unexpected '%s' from the client\n", line);
			return 1;
		}
		drain_backlog(c);
		if (ctl_send(c, "READY %s", chk->name))
			return 1;
		res = run_check(c, chk, ++num);
		if (res == R_PASS)
			pass++;
		else if (res == R_SKIP)
			skips++;
		else
			fails++;
		if (c->ctl_dead) {
			printf("Bail out! server: control connection lost\n");
			return 1;
		}
	}
	summary(pass, fails, skips);
	if (num != n) {
		printf("# server: the client announced %d checks but ran %d\n", n, num);
		return 1;
	}
	return fails ? 1 : 0;
}

static int ctl_connect(struct ctx *c)
{
	double end = now_ms() + CONNECT_WAIT_MS;
	int err;

	for (;;) {
		c->ctl = socket(opt.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c->ctl < 0) {
			printf("Bail out! socket: %s\n", en(errno));
			return -1;
		}
		set_timeo(c, c->ctl, SO_SNDTIMEO, 2000);
		if (!connect(c->ctl, (struct sockaddr *)&opt.ctl_sa, opt.salen))
			break;
		err = errno;
		close(c->ctl);
		if (now_ms() > end) {
			printf("Bail out! client: connect to the server's control port: %s (tried %d s)\n",
			       en(err), CONNECT_WAIT_MS / 1000);
			return -1;
		}
		msleep(100);
	}
	set_timeo(c, c->ctl, SO_RCVTIMEO, SERVER_WAIT_MS);
	return 0;
}

static int run_client(struct ctx *c, const struct check **plan, int n)
{
	int i, pass = 0, fails = 0, skips = 0;
	char line[600];

	if (opt.ulp) {
		/* fail early and clearly if the ULP is not available */
		int fd = socket(opt.family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0 || set_ulp(fd)) {
			printf("Bail out! setsockopt(TCP_ULP, \"ntbsmc\"): %s%s\n", en(errno),
			       errno == ENOENT ? " (is the ntbsmc module loaded?)" : "");
			return 1;
		}
		close(fd);
	}
	if (ctl_connect(c))
		return 1;
	c->conns_n = opt.conns;
	c->big_mib = opt.big_mib;
	printf("1..%d\n", n);
	if (ctl_send(c, "PLAN %d %d %ld", n, c->conns_n, c->big_mib))
		return 1;
	for (i = 0; i < n; i++) {
		int res;

		if (ctl_send(c, "RUN %s", plan[i]->name) ||
		    ctl_readline(c, line, sizeof(line), 30000) ||
		    strncmp(line, "READY ", 6) || strcmp(line + 6, plan[i]->name)) {
			printf("Bail out! client: the server did not start %s\n", plan[i]->name);
			return 1;
		}
		res = run_check(c, plan[i], i + 1);
		if (res == R_PASS)
			pass++;
		else if (res == R_SKIP)
			skips++;
		else
			fails++;
		if (c->ctl_dead) {
			printf("Bail out! client: control connection lost\n");
			return 1;
		}
	}
	ctl_send(c, "BYE");
	summary(pass, fails, skips);
	return fails ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sockets server|client [options] ADDR PORT\n"
		"       sockets --list\n"
		"  --ulp              use the ntbsmc ULP (TCP_ULP) on the data sockets\n"
		"  --expect ntb|tcp   mode every data connection must be in\n"
		"  --only N[,N...]    run only these checks\n"
		"  --list             list the checks\n"
		"  --conns N          connections of many_conns (default 200)\n"
		"  --big MIB          add a transfer of MIB MiB to data_sizes\n"
		"PORT is the control connection, PORT+1 the data listener. The server runs\n"
		"what the client asks for (its --only, --conns, --big); --ulp and --expect\n"
		"apply to each side's own sockets. Exit 0 if all passed, 1 otherwise.\n");
}

/* Select the checks of --only, in table order. */
static int make_plan(const struct check **plan)
{
	int i, n = 0;

	if (opt.only) {
		char *list = strdup(opt.only), *tok, *save;

		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (!find_check(tok)) {
				fprintf(stderr, "sockets: unknown check '%s' (see --list)\n", tok);
				free(list);
				return -1;
			}
		}
		free(list);
	}
	for (i = 0; i < NCHECKS; i++) {
		if (opt.only) {
			const char *p = opt.only;
			size_t l = strlen(checks[i].name);
			bool found = false;

			while (p && *p) {
				if (!strncmp(p, checks[i].name, l) && (p[l] == ',' || !p[l]))
					found = true;
				p = strchr(p, ',');
				if (p)
					p++;
			}
			if (!found)
				continue;
		}
		plan[n++] = &checks[i];
	}
	return n;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "ulp", no_argument, NULL, 'u' },
		{ "expect", required_argument, NULL, 'e' },
		{ "only", required_argument, NULL, 'o' },
		{ "list", no_argument, NULL, 'l' },
		{ "conns", required_argument, NULL, 'c' },
		{ "big", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct check *plan[MAX_CHECKS];
	struct sigaction sa = { 0 };
	struct ctx c = { .ctl = -1, .lfd = -1 };
	bool list = false;
	struct rlimit rl;
	int o, n, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((o = getopt_long(argc, argv, "+", lopts, NULL)) != -1 || optind < argc) {
		if (o == -1) {
			/* a positional argument; options may follow it */
			if (!strcmp(argv[optind], "server") || !strcmp(argv[optind], "client")) {
				if (opt.addr) {
					usage(stderr);
					return 2;
				}
				opt.server = argv[optind][0] == 's';
				opt.addr = "";
			} else if (opt.addr && !*opt.addr) {
				opt.addr = argv[optind];
			} else if (opt.addr && !opt.port) {
				opt.port = atoi(argv[optind]);
				if (opt.port <= 0 || opt.port > 65534) {
					fprintf(stderr, "sockets: bad port %s\n", argv[optind]);
					return 2;
				}
			} else {
				usage(stderr);
				return 2;
			}
			optind++;
			continue;
		}
		switch (o) {
		case 'u':
			opt.ulp = true;
			break;
		case 'e':
			if (!strcmp(optarg, "ntb"))
				opt.expect = EXPECT_NTB;
			else if (!strcmp(optarg, "tcp"))
				opt.expect = EXPECT_TCP;
			else {
				fprintf(stderr, "sockets: --expect ntb|tcp\n");
				return 2;
			}
			break;
		case 'o':
			opt.only = optarg;
			break;
		case 'l':
			list = true;
			break;
		case 'c':
			opt.conns = atoi(optarg);
			if (opt.conns < 1 || opt.conns > 100000) {
				fprintf(stderr, "sockets: bad --conns %s\n", optarg);
				return 2;
			}
			break;
		case 'b':
			opt.big_mib = atol(optarg);
			if (opt.big_mib < 1) {
				fprintf(stderr, "sockets: bad --big %s\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	n = make_plan(plan);
	if (n < 0)
		return 2;
	if (list) {
		for (o = 0; o < n; o++)
			printf("%s\n", plan[o]->name);
		return 0;
	}
	if (!opt.addr || !*opt.addr || !opt.port) {
		usage(stderr);
		return 2;
	}
	if (resolve(opt.addr, opt.port, &opt.ctl_sa, &opt.salen) ||
	    resolve(opt.addr, opt.port + 1, &opt.data_sa, &opt.salen))
		return 2;
	opt.family = opt.ctl_sa.ss_family;

	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_sigpipe;
	sigaction(SIGPIPE, &sa, NULL);
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	c.srv = opt.server;
	c.maxconns = opt.conns + 16;
	c.conns = calloc(c.maxconns, sizeof(*c.conns));
	if (!c.conns)
		return 1;

	printf("TAP version 13\n");
	printf("# %s: %s %s port %d (data %d)%s%s%s\n", side(&c), opt.server ? "listening on" :
	       "connecting to", opt.addr, opt.port, opt.port + 1, opt.ulp ? ", ULP ntbsmc" : "",
	       opt.expect == EXPECT_NTB ? ", expecting NTB mode" : "",
	       opt.expect == EXPECT_TCP ? ", expecting TCP mode" : "");
	ret = opt.server ? run_server(&c) : run_client(&c, plan, n);
	if (c.ctl >= 0)
		close(c.ctl);
	return ret;
}
