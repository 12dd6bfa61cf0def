// SPDX-License-Identifier: GPL-2.0
/* sockets: non-blocking I/O and the socket timeouts SO_RCVTIMEO and SO_SNDTIMEO. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/times.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

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

static const struct check checks[] = {
	{ "dontwait",		t_dontwait,		30 },
	{ "rcvtimeo",		t_rcvtimeo,		20 },
	{ "sndtimeo",		t_sndtimeo,		40 },
};

const struct check_group nonblock_checks = { checks, ARRAY_SIZE(checks) };
