// SPDX-License-Identifier: GPL-2.0
/* sockets: connection checks: many at once, TCP_ULP's states, the handshake's edges. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

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
	/* 200 handshakes took up to 39 s between the debug kernel's VMs */
	{ "many_conns",		t_many_conns,		120 },
	{ "ulp_states",		t_ulp_states,		20 },
	{ "connect_close",	t_connect_close,	20 },
	{ "connect_send",	t_connect_send,		20 },
	{ "fastopen",		t_fastopen,		20 },
	{ "disconnect",		t_disconnect,		20 },
};

const struct check_group connect_checks = { checks, ARRAY_SIZE(checks) };
