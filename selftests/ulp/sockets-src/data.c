// SPDX-License-Identifier: GPL-2.0
/* sockets: data checks: transfers of all sizes, both ways at once, iovecs, peek, MSG_WAITALL. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <linux/sockios.h>

#include "harness.h"

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

static const struct check checks[] = {
	{ "data_sizes",		t_data_sizes,		60 },
	{ "random_io",		t_random_io,		30 },
	{ "bidir",		t_bidir,		30 },
	{ "iov",		t_iov,			20 },
	{ "peek",		t_peek,			20 },
	{ "read_all",		t_read_all,		30 },
	{ "waitall",		t_waitall,		20 },
};

const struct check_group data_checks = { checks, ARRAY_SIZE(checks) };
