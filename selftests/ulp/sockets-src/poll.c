// SPDX-License-Identifier: GPL-2.0
/* sockets: readiness checks: poll, select, and epoll level- and edge-triggered. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <unistd.h>

#include "harness.h"

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

static const struct check checks[] = {
	{ "poll_select",	t_poll_select,		40 },
	{ "poll_late_shutdown",	t_poll_late_shutdown,	20 },
	{ "epoll_lt",		t_epoll_lt,		20 },
	{ "epoll_et",		t_epoll_et,		20 },
};

const struct check_group poll_checks = { checks, ARRAY_SIZE(checks) };
