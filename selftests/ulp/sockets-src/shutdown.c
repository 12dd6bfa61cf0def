// SPDX-License-Identifier: GPL-2.0
/* sockets: shutdown and close checks: half-close, close with data in flight, SO_LINGER. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include "harness.h"

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

static const struct check checks[] = {
	{ "half_close",		t_half_close,		20 },
	{ "early_shutdown",	t_early_shutdown,	20 },
	{ "close_unsent",	t_close_unsent,		20 },
	{ "close_unread",	t_close_unread,		20 },
	{ "linger",		t_linger,		20 },
};

const struct check_group shutdown_checks = { checks, ARRAY_SIZE(checks) };
