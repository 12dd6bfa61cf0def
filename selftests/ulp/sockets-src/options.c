// SPDX-License-Identifier: GPL-2.0
/* sockets: ioctls, SO_ERROR, EPIPE and SIGPIPE, the socket names, socket options. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "harness.h"

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

static const struct check checks[] = {
	{ "ioctls",		t_ioctls,		20 },
	{ "so_error",		t_so_error,		20 },
	{ "epipe",		t_epipe,		20 },
	{ "names",		t_names,		20 },
	{ "sockopts",		t_sockopts,		30 },
};

const struct check_group options_checks = { checks, ARRAY_SIZE(checks) };
