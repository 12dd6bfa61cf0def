// SPDX-License-Identifier: GPL-2.0
/* sockets: the checks' helpers: clocks, socket options, the data stream, data connections. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* ---------------------------------------- errno names, clocks, socket options */

const char *en(int e)
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

double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

const char *fmt_sa(const struct sockaddr_storage *ss, char *buf, size_t len)
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

int set_int(const struct ctx *c, int fd, int level, int name, int val, const char *what)
{
	if (setsockopt(fd, level, name, &val, sizeof(val)))
		return fail(c, "setsockopt(%s, %d): %s", what, val, en(errno));
	return 0;
}

int get_int(const struct ctx *c, int fd, int level, int name, int *val, const char *what)
{
	socklen_t len = sizeof(*val);

	*val = -1;
	if (getsockopt(fd, level, name, val, &len))
		return fail(c, "getsockopt(%s): %s", what, en(errno));
	if (len != sizeof(*val))
		return fail(c, "getsockopt(%s): optlen %u, expected %zu", what, len, sizeof(*val));
	return 0;
}

int set_timeo(const struct ctx *c, int fd, int name, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	if (setsockopt(fd, SOL_SOCKET, name, &tv, sizeof(tv)))
		return fail(c, "setsockopt(%s): %s",
			    name == SO_RCVTIMEO ? "SO_RCVTIMEO" : "SO_SNDTIMEO", en(errno));
	return 0;
}

int set_nonblock(const struct ctx *c, int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK))
		return fail(c, "fcntl(O_NONBLOCK): %s", en(errno));
	return 0;
}

int set_ulp(int fd)
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
void gen_bytes(uint64_t seed, uint64_t off, uint8_t *p, size_t len)
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

struct tconn *find_conn(struct ctx *c, int fd)
{
	int i;

	for (i = 0; i < c->nconns; i++)
		if (c->conns[i].fd == fd)
			return &c->conns[i];
	return NULL;
}

void account(struct ctx *c, int fd, uint64_t tx, uint64_t rx)
{
	struct tconn *t = find_conn(c, fd);

	/* one field at a time: a sender thread and the receiver share the entry */
	if (t && tx)
		t->tx += tx;
	if (t && rx)
		t->rx += rx;
}

struct tconn *track(struct ctx *c, int fd)
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
void untrack(struct ctx *c, int fd)
{
	struct tconn *t = find_conn(c, fd);

	if (t)
		*t = c->conns[--c->nconns];
}

/* Stop checking a connection's NTB counters (its peer is gone). */
void no_counters(struct ctx *c, int fd)
{
	struct tconn *t = find_conn(c, fd);

	if (t)
		t->ntb = false;
}

/* Close a connection before the end of the check. */
void close_conn(struct ctx *c, int fd)
{
	untrack(c, fd);
	close(fd);
}

void close_all(struct ctx *c)
{
	while (c->nconns)
		close(c->conns[--c->nconns].fd);
}

int get_info(int fd, struct ntbsmc_info *info, socklen_t *len)
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
int check_mode(struct ctx *c, struct tconn *t, const char *what)
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
int check_counters(struct ctx *c)
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

/* ------------------------------------------------------- data connections */

int setup_data_fd(struct ctx *c, int fd)
{
	if (set_timeo(c, fd, SO_RCVTIMEO, IO_TIMEOUT_S * 1000) ||
	    set_timeo(c, fd, SO_SNDTIMEO, IO_TIMEOUT_S * 1000))
		return -1;
	return 0;
}

/* Client: a new data connection (with the ULP if --ulp), tracked and mode-checked. */
int data_connect_ex(struct ctx *c, bool ulp, bool mode)
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

int data_connect(struct ctx *c)
{
	return data_connect_ex(c, opt.ulp, true);
}

/* Server: accept the next data connection, bounded, unless the peer gave up. */
int data_accept_ex(struct ctx *c, bool mode)
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

int data_accept(struct ctx *c)
{
	return data_accept_ex(c, true);
}

/* The check's data connection, from either side. */
int data_conn(struct ctx *c)
{
	return c->srv ? data_accept(c) : data_connect(c);
}

/* --------------------------------------------------------------- data I/O */

int send_all(struct ctx *c, int fd, const void *buf, size_t len, const char *what)
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

int recv_all(struct ctx *c, int fd, void *buf, size_t len, const char *what)
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
int expect_eof(struct ctx *c, int fd, const char *what)
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
int send_stream(struct ctx *c, int fd, uint64_t seed, uint64_t len,
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
int recv_stream(struct ctx *c, int fd, uint64_t seed, uint64_t len,
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
int xfer(struct ctx *c, int fd, bool sender_srv, uint64_t seed, uint64_t len,
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

/* -------------------------------------------------------------- readiness */

/* "POLLIN|POLLOUT|..." of @ev (poll and epoll bits are the same). */
const char *ev_str(int ev, char *buf, size_t len)
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
int poll_one(struct ctx *c, int fd, short events, int ms)
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

/*
 * Non-blocking writes of stream @seed until EAGAIN, bounded; *@total counts
 * what was accepted. Leaves @fd non-blocking.
 */
int fill_nonblock(struct ctx *c, int fd, uint64_t seed, uint64_t *total)
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
