// SPDX-License-Identifier: GPL-2.0
/* uring: ntbsmc's data path driven by io_uring (SEND, RECV, ACCEPT, ASYNC_CANCEL). */

/*
 *   uring server ADDR PORT CASE [--no-ulp] [--ready FILE] [--wait-ms MS]
 *   uring client ADDR PORT CASE [--no-ulp] [--bytes N] [--pairs N] [--inflight N]
 *                               [--after FILE] [--no-send] [--corrupt N]
 *   uring probe
 *
 * The server accepts one connection with an io_uring ACCEPT; both ends move
 * every byte with io_uring SEND and RECV, never send() or recv(). The SENDs
 * carry MSG_WAITALL (io_uring retries a short send itself, so linked SENDs
 * stay in order); of the RECVs every other one has IORING_RECVSEND_POLL_FIRST
 * (armed on the socket's poll before any attempt) and the others try first
 * and arm the poll only when nothing is there; every other exact-length RECV
 * has MSG_WAITALL (io_uring collects the rest through the poll). The client
 * opens with a hello naming the case. CASE is one of:
 *
 *   stream       the client sends --bytes (256 MiB) of data that is a function
 *                of each byte's offset, in linked chains of 8 SENDs of 64 KiB
 *                (the next chain filled while one is in flight); the server
 *                receives with one RECV at a time, checks every byte where it
 *                lands and returns a verdict (bytes received, first bad
 *                offset) that the client checks.
 *   pingpong     --pairs (10,000) requests of 1..300 bytes, --inflight (16) at
 *                a time; each request has its sequence number and content
 *                derived from it, each response a checksum of the request as
 *                received and content derived from that checksum. Both ends
 *                keep a RECV armed while their SEND runs; each checks every
 *                message, in order.
 *   cancel       the server arms a RECV (no POLL_FIRST: it tries, finds
 *                nothing, arms the poll) while the client sends nothing, waits
 *                200 ms, cancels it with IORING_OP_ASYNC_CANCEL: the RECV must
 *                complete with -ECANCELED ("cancel_res"). Then it sends one
 *                byte, on which the client sends a 1000-byte message; the
 *                server receives it with new RECVs and answers with data
 *                derived from it, which the client checks.
 *   closed_fd    the server arms a RECV (POLL_FIRST) and close()s the socket's
 *                fd; io_uring holds the file. It then creates --ready FILE; the
 *                client waits for --after FILE and sends a 1000-byte message
 *                (with --no-send nothing). The server waits --wait-ms (60 s)
 *                for the RECV: "closed_fd": "data" (the bytes arrived in its
 *                buffer, checked) or "cancelled_at_exit" (none came: the ring's
 *                teardown cancels it); then io_uring_queue_exit(), which drops
 *                the last reference to the socket. The client waits for the
 *                server's close ("peer_close": "eof" or "reset"). Mode and NTB
 *                counters of the server are taken before its close().
 *   accept_exit  the server forks a child that makes a listener on PORT, arms
 *                an io_uring ACCEPT on it, tells the parent through a pipe and
 *                _exit()s with the ACCEPT armed and the ring never torn down.
 *                The parent waits for the child, then until PORT can be bound
 *                again ("listener_gone_ms"). The client connects once, 10 s at
 *                most: "refused": true is its success.
 *
 * "probe" exits 0 if this kernel has io_uring, else 4 (a test's SKIP).
 *
 * Each side prints one JSON line: "case", "role", "outcome" ("ok" or "fail"),
 * "intact" (every byte it checked was right), the case's counts, "app_tx_bytes"
 * and "app_rx_bytes" (what it sent and received on the connection), then the
 * connection's mode and fallback reason and the bytes that crossed NTB
 * (getsockopt NTBSMC_INFO, as xfer prints them; "reason": "no_ulp" without the
 * ULP). A failure prints the line with "error" and "during". Exit status 1 on
 * any failure, 2 on a usage error.
 *
 * Every socket gets the ntbsmc ULP before connect() or listen(); failing that
 * is an error (ENOENT where ntbsmc is not loaded) unless --no-ulp is given,
 * for checking the program itself over plain TCP. --corrupt N flips a byte the
 * client sends (stream: the byte at offset N; pingpong: request N's first;
 * cancel, closed_fd: the message's N-th), to check the checks. Every wait is
 * bounded (60 s a completion or a socket call; the client retries a refused
 * connect for 30 s): a stall ends with an error, never a hang.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <linux/ntbsmc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "names.h"

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

#define IO_TIMEOUT_MS	60000
#define CONNECT_RETRY_S	30
#define REFUSE_WAIT_S	10
#define CANCEL_WAIT_MS	200
#define RING_ENTRIES	64
#define CHAIN		8		/* stream: linked SENDs in flight */
#define SEND_CHUNK	(64 << 10)
#define RECV_CHUNK	(256 << 10)
#define MSG_LEN		1000		/* cancel, closed_fd: the client's message */
#define PP_MAX		300		/* pingpong: payload sizes 1..PP_MAX */
#define PP_BUF		(64 << 10)
#define NO_ERROR	UINT64_MAX
#define HELLO_MAGIC	0x55524e47	/* "URNG" */

/* Seeds of the data streams: one per kind of message. */
#define STREAM_SEED	0x6e7462736d630001ULL
#define REQ_SEED	0x6e7462736d630002ULL
#define RESP_SEED	0x6e7462736d630003ULL
#define MSG_SEED	0x6e7462736d630004ULL

/* user_data of the requests: what completed. */
enum { TAG_ACCEPT = 1, TAG_RECV, TAG_SEND, TAG_CANCEL, TAG_CHAIN = 0x100 };

enum test_case { STREAM, PINGPONG, CANCEL, CLOSED_FD, ACCEPT_EXIT, __CASE_MAX };

static const char *const tcase_names[__CASE_MAX] = {
	[STREAM] = "stream", [PINGPONG] = "pingpong", [CANCEL] = "cancel",
	[CLOSED_FD] = "closed_fd", [ACCEPT_EXIT] = "accept_exit",
};

static struct {
	bool server, ulp, no_send;
	enum test_case tcase;
	const char *addr, *port, *ready, *after;
	uint64_t bytes, pairs, inflight, wait_ms, corrupt;
} opt = {
	.ulp = true,
	.bytes = 256 << 20,
	.pairs = 10000,
	.inflight = 16,
	.wait_ms = IO_TIMEOUT_MS,
	.corrupt = NO_ERROR,
};

static struct io_uring ring;
static int cur_fd = -1;		/* the connection, for a failure's info */
static double t_start;
static bool intact = true;
static uint64_t app_tx, app_rx;	/* bytes this end sent and received */
static struct {
	unsigned long recvs, poll_first, waitall, sends, sends_poll_first;
} st;

/* The case's own fields of the JSON line, each ", \"key\": value". */
static char fields[2048];
static size_t fields_len;

/* The connection as last looked at: mode, counters, ports. */
static struct {
	bool have, ulp;
	struct ntbsmc_info info;
	uint64_t tx, rx;
	unsigned int lport, pport;
} snap;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Seconds since @t0, never 0 (a rate's divisor). */
static double since(double t0)
{
	double d = now() - t0;

	return d > 1e-6 ? d : 1e-6;
}

static void __attribute__((format(printf, 1, 2))) field(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (fields_len >= sizeof(fields) - 2)
		return;
	fields_len += snprintf(fields + fields_len, sizeof(fields) - fields_len, ", ");
	va_start(ap, fmt);
	n = vsnprintf(fields + fields_len, sizeof(fields) - fields_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		fields_len += n;
	if (fields_len >= sizeof(fields))
		fields_len = sizeof(fields) - 1;
}

static const char *err_name(int err)
{
	return strerrorname_np(err) ?: "?";
}

/* ---- the JSON line ---- */

/* The ports, while connected (after both FINs getpeername() fails). */
static void take_ports(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	if (!getsockname(fd, (struct sockaddr *)&a, &len))
		snap.lport = ntohs(a.sin_port);
	len = sizeof(a);
	if (!getpeername(fd, (struct sockaddr *)&a, &len))
		snap.pport = ntohs(a.sin_port);
}

static void take_snapshot(int fd)
{
	socklen_t len = sizeof(snap.info);

	snap.have = true;
	snap.ulp = !getsockopt(fd, SOL_NTBSMC, NTBSMC_INFO, &snap.info, &len);
	snap.tx = app_tx;
	snap.rx = app_rx;
}

static void print_info(void)
{
	const struct ntbsmc_info *i = &snap.info;
	char b1[32], b2[32], b3[32];

	printf(", \"app_tx_bytes\": %" PRIu64 ", \"app_rx_bytes\": %" PRIu64
	       ", \"local_port\": %u, \"peer_port\": %u", snap.tx, snap.rx, snap.lport, snap.pport);
	if (!snap.ulp) {
		printf(", \"mode\": \"tcp\", \"reason\": \"no_ulp\"");
		return;
	}
	printf(", \"mode\": \"%s\", \"reason\": \"%s\", \"peer_reason\": \"%s\", \"lgr\": %u, "
	       "\"ntb_tx_bytes\": %llu, \"ntb_rx_bytes\": %llu, \"rmb_size\": %u, "
	       "\"peer_rmb_size\": %u, \"ntb_cpu_bytes\": %llu, \"ntb_dma_bytes\": %llu, "
	       "\"ntb_zc_bytes\": %llu, \"version\": %u, \"failed_over\": %s",
	       mode_name(i->mode, b1, sizeof(b1)), reason_name(i->reason, b2, sizeof(b2)),
	       reason_name(i->peer_reason, b3, sizeof(b3)), i->lgr_id,
	       (unsigned long long)i->tx_bytes, (unsigned long long)i->rx_bytes,
	       i->rmb_size, i->peer_rmb_size, (unsigned long long)i->cpu_bytes,
	       (unsigned long long)i->dma_bytes, (unsigned long long)i->zc_bytes,
	       i->version, i->flags & NTBSMC_INFO_F_FAILED_OVER ? "true" : "false");
}

static void print_line(const char *outcome, const char *extra)
{
	printf("{\"case\": \"%s\", \"role\": \"%s\", \"outcome\": \"%s\"%s, \"intact\": %s%s",
	       tcase_names[opt.tcase], opt.server ? "server" : "client", outcome, extra,
	       intact ? "true" : "false", fields);
	if (st.recvs || st.sends)
		printf(", \"recvs\": %lu, \"recvs_poll_first\": %lu, \"recvs_waitall\": %lu, "
		       "\"sends\": %lu, \"sends_poll_first\": %lu", st.recvs, st.poll_first,
		       st.waitall, st.sends, st.sends_poll_first);
	if (snap.have)
		print_info();
	printf(", \"secs\": %.3f}\n", now() - t_start);
	fflush(stdout);
}

/* Ends the case on an error (@err an errno, 0 for none): the line says where. */
static void __attribute__((noreturn)) fail(const char *during, int err)
{
	char extra[256];

	snprintf(extra, sizeof(extra), ", \"error\": \"%s\", \"during\": \"%s\"",
		 err ? err_name(err) : "unexpected", during);
	if (cur_fd >= 0)
		take_snapshot(cur_fd);
	print_line("fail", extra);
	exit(1);
}

/* ---- the data: a function of the stream, the offset and the seed ---- */

/* splitmix64: word K of the stream SEED. */
static uint64_t word(uint64_t seed, uint64_t k)
{
	uint64_t z = seed + (k + 1) * 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The LEN bytes of stream SEED from offset OFF (little-endian words). */
static void fill(uint64_t seed, uint64_t off, unsigned char *buf, size_t len)
{
	for (; len && off % 8; len--, off++)
		*buf++ = word(seed, off / 8) >> (8 * (off % 8));
	for (; len >= 8; len -= 8, off += 8, buf += 8) {
		uint64_t w = htole64(word(seed, off / 8));

		memcpy(buf, &w, 8);
	}
	for (; len; len--, off++)
		*buf++ = word(seed, off / 8) >> (8 * (off % 8));
}

static uint64_t fnv64(const unsigned char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (len--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

/* --corrupt: flips the byte at @pos if it is the chosen one. */
static void corrupt(unsigned char *buf, uint64_t base, size_t len)
{
	if (opt.corrupt != NO_ERROR && opt.corrupt >= base && opt.corrupt - base < len)
		buf[opt.corrupt - base] ^= 0x40;
}

/* ---- io_uring ---- */

static struct io_uring_sqe *get_sqe(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

	if (!sqe)
		fail("io_uring_get_sqe", EBUSY);
	return sqe;
}

static void submit(void)
{
	int ret = io_uring_submit(&ring);

	if (ret < 0)
		fail("io_uring_submit", -ret);
}

struct done {
	uint64_t tag;
	int res;
};

/* Reaps one completion within @ms; false if none came. */
static bool reap(struct done *d, uint64_t ms)
{
	double end = now() + ms / 1e3;
	struct io_uring_cqe *cqe;
	int ret;

	for (;;) {
		double left = end - now();
		struct __kernel_timespec ts = {
			.tv_sec = left > 0 ? (long long)left : 0,
			.tv_nsec = left > 0 ? (long long)((left - (long long)left) * 1e9) : 0,
		};

		ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
		if (ret == -ETIME)
			return false;
		if (ret != -EINTR)
			break;
	}
	if (ret)
		fail("io_uring_wait_cqe_timeout", -ret);
	d->tag = cqe->user_data;
	d->res = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	return true;
}

/* The completion of the one request in flight, @tag; its result. */
static int complete(uint64_t tag, const char *what)
{
	struct done d;

	if (!reap(&d, IO_TIMEOUT_MS))
		fail(what, ETIMEDOUT);
	if (d.tag != tag)
		fail(what, 0);
	return d.res;
}

static void prep_recv_as(int fd, void *buf, size_t len, int msg_flags, unsigned int ioprio,
			 uint64_t tag)
{
	struct io_uring_sqe *sqe = get_sqe();

	io_uring_prep_recv(sqe, fd, buf, len, msg_flags);
	sqe->ioprio |= ioprio;
	sqe->user_data = tag;
	st.recvs++;
	st.poll_first += !!(ioprio & IORING_RECVSEND_POLL_FIRST);
	st.waitall += !!(msg_flags & MSG_WAITALL);
}

/*
 * A RECV of the rotation: every other one POLL_FIRST; of those that want
 * exactly @len bytes, every other pair with MSG_WAITALL.
 */
static void prep_recv(int fd, void *buf, size_t len, bool exact, uint64_t tag)
{
	unsigned long k = st.recvs;

	prep_recv_as(fd, buf, len, exact && (k & 2) ? MSG_WAITALL : 0,
		     k & 1 ? IORING_RECVSEND_POLL_FIRST : 0, tag);
}

/* A SEND of all @len bytes (io_uring retries a short one); every other one POLL_FIRST. */
static void prep_send(int fd, const void *buf, size_t len, uint64_t tag, bool link)
{
	struct io_uring_sqe *sqe = get_sqe();

	io_uring_prep_send(sqe, fd, buf, len, MSG_WAITALL | MSG_NOSIGNAL);
	if (st.sends++ & 1) {
		sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
		st.sends_poll_first++;
	}
	if (link)
		sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = tag;
}

static void send_all(int fd, const void *buf, size_t len, const char *what)
{
	int res;

	prep_send(fd, buf, len, TAG_SEND, false);
	submit();
	res = complete(TAG_SEND, what);
	if (res < 0)
		fail(what, -res);
	if ((size_t)res != len)
		fail(what, EIO);
	app_tx += len;
}

/* Exactly @len bytes; false on EOF before them. */
static bool recv_all(int fd, void *buf, size_t len, const char *what)
{
	unsigned char *p = buf;
	int res;

	while (len) {
		prep_recv(fd, p, len, true, TAG_RECV);
		submit();
		res = complete(TAG_RECV, what);
		if (res < 0)
			fail(what, -res);
		if (!res)
			return false;
		p += res;
		len -= res;
		app_rx += res;
	}
	return true;
}

/* Ends our direction and waits for the peer's end; nothing else may come. */
static void finish(int fd)
{
	unsigned char c;

	if (shutdown(fd, SHUT_WR))
		fail("shutdown", errno);
	if (recv_all(fd, &c, 1, "recv end"))
		fail("recv end: data after the exchange", 0);
}

/* ---- the hello ---- */

struct hello {
	uint32_t magic;
	uint32_t tcase;
	uint64_t count;		/* stream: bytes; pingpong: pairs */
} __attribute__((packed));

static void hello_send(int fd, uint64_t count)
{
	struct hello h = { htobe32(HELLO_MAGIC), htobe32(opt.tcase), htobe64(count) };

	send_all(fd, &h, sizeof(h), "send hello");
}

static uint64_t hello_recv(int fd)
{
	struct hello h;

	if (!recv_all(fd, &h, sizeof(h), "recv hello"))
		fail("recv hello", ECONNRESET);
	if (be32toh(h.magic) != HELLO_MAGIC || be32toh(h.tcase) != opt.tcase)
		fail("hello: another case or program", EPROTO);
	return be64toh(h.count);
}

/* ---- stream ---- */

struct verdict {
	uint64_t received;
	uint64_t first_bad;
} __attribute__((packed));

struct chain {
	unsigned char *buf;
	size_t len[CHAIN];
	unsigned int n;
};

/* Fills @c with the next chunks of the stream from @off; the bytes it covers. */
static uint64_t chain_fill(struct chain *c, uint64_t off, uint64_t bytes)
{
	uint64_t start = off;

	for (c->n = 0; c->n < CHAIN && off < bytes; c->n++) {
		size_t len = bytes - off < SEND_CHUNK ? bytes - off : SEND_CHUNK;
		unsigned char *p = c->buf + (size_t)c->n * SEND_CHUNK;

		fill(STREAM_SEED, off, p, len);
		corrupt(p, off, len);
		c->len[c->n] = len;
		off += len;
	}
	return off - start;
}

static void chain_submit(int fd, const struct chain *c)
{
	unsigned int i;

	for (i = 0; i < c->n; i++)
		prep_send(fd, c->buf + (size_t)i * SEND_CHUNK, c->len[i], TAG_CHAIN + i,
			  i + 1 < c->n);
	submit();
}

/* Linked SENDs complete in order; a short one would cancel the rest (-ECANCELED). */
static void chain_reap(const struct chain *c)
{
	unsigned int i;
	struct done d;

	for (i = 0; i < c->n; i++) {
		if (!reap(&d, IO_TIMEOUT_MS))
			fail("send chain", ETIMEDOUT);
		if (d.tag != TAG_CHAIN + i)
			fail("send chain: out of order", 0);
		if (d.res < 0)
			fail("send chain", -d.res);
		if ((size_t)d.res != c->len[i])
			fail("send chain: short send", EIO);
		app_tx += d.res;
	}
}

static void stream_client(int fd)
{
	struct chain c[2];
	struct verdict v;
	uint64_t off = 0, len;
	double t0;
	int k = 0;

	c[0].buf = malloc(2 * CHAIN * SEND_CHUNK);
	if (!c[0].buf)
		fail("malloc", ENOMEM);
	c[1].buf = c[0].buf + CHAIN * SEND_CHUNK;
	hello_send(fd, opt.bytes);
	t0 = now();
	len = chain_fill(&c[k], off, opt.bytes);
	while (c[k].n) {
		chain_submit(fd, &c[k]);
		off += len;
		len = chain_fill(&c[!k], off, opt.bytes);	/* while this one is sent */
		chain_reap(&c[k]);
		k = !k;
	}
	if (!recv_all(fd, &v, sizeof(v), "recv verdict"))
		fail("recv verdict", ECONNRESET);
	v.received = be64toh(v.received);
	v.first_bad = be64toh(v.first_bad);
	intact = v.received == opt.bytes && v.first_bad == NO_ERROR;
	field("\"bytes\": %" PRIu64 ", \"peer_received\": %" PRIu64 ", \"mb_per_s\": %.1f",
	      opt.bytes, v.received, opt.bytes / since(t0) / 1e6);
	if (v.first_bad != NO_ERROR)
		field("\"peer_first_bad\": %" PRIu64, v.first_bad);
	finish(fd);
	free(c[0].buf);
}

/* The offset of the first of @n bytes at @off that differ from the stream's. */
static uint64_t first_wrong(const unsigned char *buf, unsigned char *want, uint64_t off,
			    size_t n)
{
	size_t i;

	fill(STREAM_SEED, off, want, n);
	if (!memcmp(buf, want, n))
		return NO_ERROR;
	for (i = 0; buf[i] == want[i]; i++)
		;
	return off + i;
}

static void stream_server(int fd)
{
	unsigned char *buf = malloc(RECV_CHUNK), *want = malloc(RECV_CHUNK);
	struct verdict v = { 0, NO_ERROR };
	uint64_t bytes = hello_recv(fd);
	double t0 = now();

	if (!buf || !want)
		fail("malloc", ENOMEM);
	while (v.received < bytes) {
		size_t len = bytes - v.received < RECV_CHUNK ? bytes - v.received : RECV_CHUNK;
		int res;

		prep_recv(fd, buf, len, true, TAG_RECV);
		submit();
		res = complete(TAG_RECV, "recv stream");
		if (res < 0)
			fail("recv stream", -res);
		if (!res)
			break;
		if (v.first_bad == NO_ERROR)
			v.first_bad = first_wrong(buf, want, v.received, res);
		v.received += res;
		app_rx += res;
	}
	intact = v.received == bytes && v.first_bad == NO_ERROR;
	field("\"bytes\": %" PRIu64 ", \"received\": %" PRIu64 ", \"mb_per_s\": %.1f", bytes,
	      v.received, v.received / since(t0) / 1e6);
	if (v.first_bad != NO_ERROR)
		field("\"first_bad\": %" PRIu64, v.first_bad);
	if (v.received < bytes)
		fail("recv stream: EOF before the end", 0);
	v.received = htobe64(v.received);
	v.first_bad = htobe64(v.first_bad);
	send_all(fd, &v, sizeof(v), "send verdict");
	finish(fd);
	free(buf);
	free(want);
}

/* ---- pingpong ---- */

struct req_hdr {
	uint32_t seq, len;
} __attribute__((packed));

struct resp_hdr {
	uint32_t seq, len;
	uint64_t sum;		/* fnv64 of the request's payload as received */
} __attribute__((packed));

/* Request @seq's payload; its length. */
static size_t req_payload(uint64_t seq, unsigned char *p)
{
	size_t len = 1 + word(REQ_SEED, seq) % PP_MAX;

	fill(word(REQ_SEED ^ 1, seq), 0, p, len);
	return len;
}

/* The response to a request whose payload summed to @sum; its length. */
static size_t resp_payload(uint64_t sum, unsigned char *p)
{
	size_t len = 1 + sum % PP_MAX;

	fill(sum ^ RESP_SEED, 0, p, len);
	return len;
}

/* A pingpong message at the head of @have bytes: its total length, 0 if incomplete. */
static size_t pp_framed(const unsigned char *p, size_t have, size_t hdr, const char *what)
{
	uint32_t len;

	if (have < hdr)
		return 0;
	memcpy(&len, p + 4, 4);
	len = be32toh(len);
	if (len < 1 || len > PP_MAX)
		fail(what, EPROTO);
	return have >= hdr + len ? hdr + len : 0;
}

struct pp_end {
	int fd;
	unsigned char rbuf[PP_BUF], tbuf[2][PP_BUF];
	size_t have, tlen[2];
	int cur;			/* the send buffer being filled */
	bool sending, recving;
	uint64_t done;			/* requests answered (server) or checked (client) */
	uint64_t first_bad;		/* the first pair found wrong */
};

static void pp_bad(struct pp_end *e)
{
	if (e->first_bad == NO_ERROR)
		e->first_bad = e->done;
	intact = false;
}

/* Sends what was queued in the current buffer, unless a SEND is running. */
static void pp_flush(struct pp_end *e)
{
	if (e->sending || !e->tlen[e->cur])
		return;
	prep_send(e->fd, e->tbuf[e->cur], e->tlen[e->cur], TAG_SEND, false);
	e->sending = true;
	e->cur = !e->cur;
	e->tlen[e->cur] = 0;
}

/* One completion of the loop: a SEND done, or bytes appended to rbuf. */
static bool pp_reap(struct pp_end *e, const char *what)
{
	struct done d;

	submit();
	if (!reap(&d, IO_TIMEOUT_MS))
		fail(what, ETIMEDOUT);
	if (d.res < 0)
		fail(d.tag == TAG_SEND ? "pingpong send" : "pingpong recv", -d.res);
	if (d.tag == TAG_SEND) {
		if ((size_t)d.res != e->tlen[!e->cur])
			fail("pingpong send: short", EIO);
		app_tx += d.res;
		e->sending = false;
		return false;
	}
	if (d.tag != TAG_RECV)
		fail(what, 0);
	if (!d.res)
		fail("pingpong recv: early EOF", ECONNRESET);
	e->recving = false;
	e->have += d.res;
	app_rx += d.res;
	return true;
}

static void pp_consume(struct pp_end *e, size_t n)
{
	memmove(e->rbuf, e->rbuf + n, e->have - n);
	e->have -= n;
}

/* The server checks and answers each complete request in rbuf. */
static void pp_answer(struct pp_end *e)
{
	unsigned char want[PP_MAX];
	size_t n;

	while ((n = pp_framed(e->rbuf, e->have, sizeof(struct req_hdr), "request framing"))) {
		struct req_hdr h;
		struct resp_hdr r;
		unsigned char *out = e->tbuf[e->cur] + e->tlen[e->cur];
		size_t len = n - sizeof(h);
		uint64_t sum;

		memcpy(&h, e->rbuf, sizeof(h));
		if (be32toh(h.seq) != e->done || req_payload(e->done, want) != len ||
		    memcmp(e->rbuf + sizeof(h), want, len))
			pp_bad(e);
		sum = fnv64(e->rbuf + sizeof(h), len);
		if (e->tlen[e->cur] + sizeof(r) + PP_MAX > PP_BUF)
			fail("pingpong: responses backed up", ENOBUFS);
		r.len = resp_payload(sum, out + sizeof(r));
		r.seq = h.seq;
		r.sum = htobe64(sum);
		e->tlen[e->cur] += sizeof(r) + r.len;
		r.len = htobe32(r.len);
		memcpy(out, &r, sizeof(r));
		pp_consume(e, n);
		e->done++;
	}
}

static void pingpong_server(int fd)
{
	static struct pp_end e;
	uint64_t pairs = hello_recv(fd);

	e.fd = fd;
	e.first_bad = NO_ERROR;
	while (e.done < pairs || e.sending) {
		if (!e.recving && e.done < pairs) {
			prep_recv(fd, e.rbuf + e.have, PP_BUF - e.have, false, TAG_RECV);
			e.recving = true;
		}
		if (pp_reap(&e, "pingpong server"))
			pp_answer(&e);
		pp_flush(&e);
	}
	if (e.have)
		fail("pingpong: requests beyond the count", EPROTO);
	field("\"pairs\": %" PRIu64, e.done);
	if (e.first_bad != NO_ERROR)
		field("\"first_bad_pair\": %" PRIu64, e.first_bad);
	finish(fd);
}

/* The client queues requests until @inflight are unanswered. */
static void pp_request(struct pp_end *e, uint64_t *sent)
{
	while (*sent < opt.pairs && *sent - e->done < opt.inflight &&
	       e->tlen[e->cur] + sizeof(struct req_hdr) + PP_MAX <= PP_BUF) {
		unsigned char *out = e->tbuf[e->cur] + e->tlen[e->cur];
		struct req_hdr h;
		size_t len = req_payload(*sent, out + sizeof(h));

		if (*sent == opt.corrupt)
			out[sizeof(h)] ^= 0x40;
		h.seq = htobe32(*sent);
		h.len = htobe32(len);
		memcpy(out, &h, sizeof(h));
		e->tlen[e->cur] += sizeof(h) + len;
		(*sent)++;
	}
}

/* The client checks each complete response in rbuf against its request. */
static void pp_check(struct pp_end *e)
{
	unsigned char req[PP_MAX], want[PP_MAX];
	size_t n;

	while ((n = pp_framed(e->rbuf, e->have, sizeof(struct resp_hdr), "response framing"))) {
		size_t req_len = req_payload(e->done, req), len;
		uint64_t sum = fnv64(req, req_len);
		struct resp_hdr r;

		len = resp_payload(sum, want);
		memcpy(&r, e->rbuf, sizeof(r));
		if (be32toh(r.seq) != e->done || be64toh(r.sum) != sum ||
		    n - sizeof(r) != len || memcmp(e->rbuf + sizeof(r), want, len))
			pp_bad(e);
		pp_consume(e, n);
		e->done++;
	}
}

static void pingpong_client(int fd)
{
	static struct pp_end e;
	uint64_t sent = 0;
	double t0;

	e.fd = fd;
	e.first_bad = NO_ERROR;
	hello_send(fd, opt.pairs);
	t0 = now();
	while (e.done < opt.pairs) {
		if (!e.sending) {
			pp_request(&e, &sent);
			pp_flush(&e);
		}
		if (!e.recving) {
			prep_recv(fd, e.rbuf + e.have, PP_BUF - e.have, false, TAG_RECV);
			e.recving = true;
		}
		if (pp_reap(&e, "pingpong client"))
			pp_check(&e);
	}
	while (e.sending)
		if (pp_reap(&e, "pingpong client: last send"))
			fail("pingpong: data after the last response", EPROTO);
	if (e.have)
		fail("pingpong: responses beyond the count", EPROTO);
	field("\"pairs\": %" PRIu64 ", \"inflight\": %" PRIu64 ", \"pairs_per_s\": %.0f", e.done,
	      opt.inflight, e.done / since(t0));
	if (e.first_bad != NO_ERROR)
		field("\"first_bad_pair\": %" PRIu64, e.first_bad);
	finish(fd);
}

/* ---- cancel, closed_fd: a message and its answer ---- */

static void message(unsigned char *p)
{
	fill(MSG_SEED, 0, p, MSG_LEN);
}

static void answer_of(const unsigned char *msg, size_t len, unsigned char *p)
{
	fill(fnv64(msg, len) ^ RESP_SEED, 0, p, MSG_LEN);
}

/* The server's half of the exchange after the cancel: a message in, its answer out. */
static void exchange_server(int fd)
{
	unsigned char msg[MSG_LEN], want[MSG_LEN], ans[MSG_LEN];

	if (!recv_all(fd, msg, sizeof(msg), "recv message"))
		fail("recv message: early EOF", ECONNRESET);
	message(want);
	if (memcmp(msg, want, sizeof(msg)))
		intact = false;
	answer_of(msg, sizeof(msg), ans);
	send_all(fd, ans, sizeof(ans), "send answer");
}

static void cancel_server(int fd)
{
	static unsigned char buf[MSG_LEN];
	int recv_res = 0, cancel_res = 0, pending = 2;
	struct io_uring_sqe *sqe;
	struct done d;

	hello_recv(fd);
	/* no POLL_FIRST: it tries, finds nothing, and arms the poll */
	prep_recv_as(fd, buf, sizeof(buf), 0, 0, TAG_RECV);
	submit();
	if (reap(&d, CANCEL_WAIT_MS)) {
		field("\"cancel_res\": %d", d.res);
		fail("recv completed before the cancel, with nothing sent", d.res < 0 ? -d.res : 0);
	}
	sqe = get_sqe();
	io_uring_prep_cancel64(sqe, TAG_RECV, 0);
	sqe->user_data = TAG_CANCEL;
	submit();
	for (; pending; pending--) {
		if (!reap(&d, IO_TIMEOUT_MS))
			fail("cancel: the RECV's or the cancel's completion", ETIMEDOUT);
		if (d.tag == TAG_RECV)
			recv_res = d.res;
		else if (d.tag == TAG_CANCEL)
			cancel_res = d.res;
		else
			fail("cancel", 0);
	}
	field("\"cancel_res\": %d, \"cancel_res_name\": \"%s\", \"cancel_op_res\": %d",
	      recv_res, recv_res < 0 ? err_name(-recv_res) : "data", cancel_res);
	if (recv_res != -ECANCELED)
		fail("cancelled recv: not -ECANCELED", recv_res < 0 ? -recv_res : 0);
	send_all(fd, "G", 1, "send go");
	exchange_server(fd);
	field("\"msg_bytes\": %d", MSG_LEN);
	finish(fd);
}

static void cancel_client(int fd)
{
	unsigned char msg[MSG_LEN], ans[MSG_LEN], want[MSG_LEN];
	char go;

	hello_send(fd, 0);
	if (!recv_all(fd, &go, 1, "recv go") || go != 'G')
		fail("recv go", EPROTO);
	message(msg);
	answer_of(msg, sizeof(msg), want);
	corrupt(msg, 0, sizeof(msg));
	send_all(fd, msg, sizeof(msg), "send message");
	if (!recv_all(fd, ans, sizeof(ans), "recv answer"))
		fail("recv answer: early EOF", ECONNRESET);
	intact = !memcmp(ans, want, sizeof(ans));
	field("\"msg_bytes\": %d", MSG_LEN);
	finish(fd);
}

/* Creates FILE (for the peer's program, or the test). */
static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		fail(path, errno);
	close(fd);
}

static void wait_file(const char *path)
{
	double end = now() + IO_TIMEOUT_MS / 1e3;

	while (access(path, F_OK)) {
		if (now() > end)
			fail(path, ETIMEDOUT);
		usleep(10000);
	}
}

static void closed_fd_server(int fd)
{
	static unsigned char buf[2 * MSG_LEN], want[MSG_LEN];
	struct io_uring_cqe *cqe;
	const char *how;
	struct done d;

	hello_recv(fd);
	take_snapshot(fd);	/* mode and counters while the fd is ours */
	prep_recv_as(fd, buf, sizeof(buf), 0, IORING_RECVSEND_POLL_FIRST, TAG_RECV);
	submit();
	if (!io_uring_peek_cqe(&ring, &cqe))
		fail("recv completed with nothing sent", 0);
	close(fd);
	cur_fd = -1;
	touch(opt.ready);
	if (reap(&d, opt.wait_ms)) {
		if (d.tag != TAG_RECV)
			fail("closed_fd", 0);
		how = d.res > 0 ? "data" : d.res ? "error" : "eof";
		field("\"closed_fd_res\": %d", d.res);
		if (d.res < 0)
			field("\"closed_fd_error\": \"%s\"", err_name(-d.res));
		if (d.res > 0) {
			message(want);
			intact = d.res <= MSG_LEN && !memcmp(buf, want, d.res);
			app_rx += d.res;
		}
	} else {
		how = "cancelled_at_exit";
	}
	io_uring_queue_exit(&ring);	/* drops the ring's hold on the socket */
	field("\"closed_fd\": \"%s\"", how);
	if (!strcmp(how, "error"))
		fail("closed_fd recv", -d.res);
}

static void closed_fd_client(int fd)
{
	unsigned char msg[MSG_LEN], c;
	const char *how;
	int res;

	hello_send(fd, 0);
	wait_file(opt.after);
	if (!opt.no_send) {
		message(msg);
		corrupt(msg, 0, sizeof(msg));
		send_all(fd, msg, sizeof(msg), "send message");
	}
	prep_recv(fd, &c, 1, true, TAG_RECV);
	submit();
	res = complete(TAG_RECV, "wait for the server's close");
	how = !res ? "eof" : res == -ECONNRESET ? "reset" : res > 0 ? "data" : err_name(-res);
	field("\"sent\": %d, \"peer_close\": \"%s\"", opt.no_send ? 0 : MSG_LEN, how);
	if (res && res != -ECONNRESET)
		fail("the server's close", res < 0 ? -res : EPROTO);
}

/* ---- accept_exit ---- */

static int new_socket(int timeout_s)
{
	struct timeval tv = { .tv_sec = timeout_s };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		fail("socket", errno);
	if (opt.ulp && setsockopt(fd, SOL_TCP, TCP_ULP, "ntbsmc", sizeof("ntbsmc")))
		fail("setsockopt TCP_ULP ntbsmc", errno);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		fail("setsockopt", errno);
	return fd;
}

static struct sockaddr_in sockaddr(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(opt.port)) };

	if (inet_pton(AF_INET, opt.addr, &a.sin_addr) != 1)
		fail("address", EINVAL);
	return a;
}

static int listener(void)
{
	struct sockaddr_in a = sockaddr();
	int fd = new_socket(IO_TIMEOUT_MS / 1000);

	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16))
		fail("bind/listen", errno);
	return fd;
}

static void ring_init(void)
{
	int ret = io_uring_queue_init(RING_ENTRIES, &ring, 0);

	if (ret)
		fail("io_uring_queue_init", -ret);
}

/*
 * The child: a listener with an ACCEPT armed, and an exit that leaves both
 * behind. The ring is its own: nobody else holds it open.
 */
static void __attribute__((noreturn)) accept_child(int ready)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int lfd = listener();

	ring_init();
	sqe = get_sqe();
	io_uring_prep_accept(sqe, lfd, NULL, NULL, 0);
	sqe->user_data = TAG_ACCEPT;
	submit();
	if (!io_uring_peek_cqe(&ring, &cqe))
		fail("accept completed with no client", cqe->res < 0 ? -cqe->res : 0);
	if (write(ready, "R", 1) != 1)
		fail("write ready", errno);
	_exit(0);
}

/* Whether @port can be bound again: no listener holds it. */
static bool port_free(void)
{
	struct sockaddr_in a = sockaddr();
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	bool ok;

	if (fd < 0)
		fail("socket", errno);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ok = !bind(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	return ok;
}

static void accept_exit_server(void)
{
	struct pollfd p = { .events = POLLIN };
	int pipefd[2], status;
	double t_exit, end;
	pid_t pid;
	char c;

	if (pipe(pipefd))
		fail("pipe", errno);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		fail("fork", errno);
	if (!pid)
		accept_child(pipefd[1]);
	close(pipefd[1]);
	p.fd = pipefd[0];
	if (poll(&p, 1, IO_TIMEOUT_MS) != 1)
		fail("the child's ACCEPT armed", ETIMEDOUT);
	if (read(pipefd[0], &c, 1) != 1)
		fail("the child's ACCEPT armed: the child failed", ECHILD);
	for (end = now() + IO_TIMEOUT_MS / 1e3; waitpid(pid, &status, WNOHANG) != pid;
	     usleep(10000))
		if (now() > end)
			fail("the child's exit", ETIMEDOUT);
	t_exit = now();
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("the child", ECHILD);
	while (!port_free()) {
		if (now() > t_exit + IO_TIMEOUT_MS / 1e3)
			fail("the listener left after the exit", ETIMEDOUT);
		usleep(10000);
	}
	field("\"armed\": true, \"child_status\": %d, \"listener_gone_ms\": %.0f",
	      WEXITSTATUS(status), (now() - t_exit) * 1e3);
}

static void accept_exit_client(void)
{
	struct sockaddr_in a = sockaddr();
	int fd = new_socket(REFUSE_WAIT_S), err = 0;

	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		err = errno;
	close(fd);
	field("\"refused\": %s, \"connect\": \"%s\"", err == ECONNREFUSED ? "true" : "false",
	      err ? err_name(err) : "connected");
	if (err != ECONNREFUSED)
		fail("connect to the dead listener: not refused", err);
}

/* ---- connections ---- */

static int accept_one(void)
{
	int lfd = listener(), fd;

	struct io_uring_sqe *sqe = get_sqe();

	io_uring_prep_accept(sqe, lfd, NULL, NULL, 0);
	sqe->user_data = TAG_ACCEPT;
	submit();
	fd = complete(TAG_ACCEPT, "accept");
	if (fd < 0)
		fail("accept", -fd);
	close(lfd);
	return fd;
}

static int connect_one(void)
{
	struct sockaddr_in a = sockaddr();
	double end = now() + CONNECT_RETRY_S;
	int fd, err;

	/* A fresh socket per attempt: a refused one cannot connect again. */
	for (;;) {
		fd = new_socket(IO_TIMEOUT_MS / 1000);
		if (!connect(fd, (struct sockaddr *)&a, sizeof(a)))
			return fd;
		err = errno;
		close(fd);
		if (err != ECONNREFUSED || now() > end)
			fail("connect", err);
		usleep(100000);
	}
}

static void (*const servers[__CASE_MAX])(int) = {
	[STREAM] = stream_server, [PINGPONG] = pingpong_server, [CANCEL] = cancel_server,
	[CLOSED_FD] = closed_fd_server,
};

static void (*const clients[__CASE_MAX])(int) = {
	[STREAM] = stream_client, [PINGPONG] = pingpong_client, [CANCEL] = cancel_client,
	[CLOSED_FD] = closed_fd_client,
};

static void run(void)
{
	if (opt.tcase == ACCEPT_EXIT) {
		if (opt.server)
			accept_exit_server();
		else
			accept_exit_client();
		return;
	}
	ring_init();
	cur_fd = opt.server ? accept_one() : connect_one();
	take_ports(cur_fd);
	(opt.server ? servers : clients)[opt.tcase](cur_fd);
	if (cur_fd >= 0) {
		take_snapshot(cur_fd);
		close(cur_fd);
		cur_fd = -1;
	}
}

/* ---- the command line ---- */

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr,
		"usage: uring server ADDR PORT CASE [--no-ulp] [--ready FILE] [--wait-ms MS]\n"
		"       uring client ADDR PORT CASE [--no-ulp] [--bytes N] [--pairs N] [--inflight N]\n"
		"                                   [--after FILE] [--no-send] [--corrupt N]\n"
		"       uring probe\n"
		"CASE := { stream | pingpong | cancel | closed_fd | accept_exit }\n");
	exit(2);
}

static bool parse_u64(const char *s, uint64_t max, uint64_t *v)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return !errno && !*end && *v <= max;
}

static void parse_args(int argc, char **argv)
{
	int i;

	if (argc < 5 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")))
		usage();
	opt.server = !strcmp(argv[1], "server");
	opt.addr = argv[2];
	opt.port = argv[3];
	for (opt.tcase = 0; opt.tcase < __CASE_MAX; opt.tcase++)
		if (!strcmp(argv[4], tcase_names[opt.tcase]))
			break;
	if (opt.tcase == __CASE_MAX)
		usage();
	for (i = 5; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--no-ulp"))
			opt.ulp = false;
		else if (!strcmp(a, "--no-send"))
			opt.no_send = true;
		else if (!strcmp(a, "--bytes") && parse_u64(val, UINT64_MAX - 1, &opt.bytes))
			i++;
		else if (!strcmp(a, "--pairs") && parse_u64(val, UINT32_MAX, &opt.pairs))
			i++;
		else if (!strcmp(a, "--inflight") && parse_u64(val, 64, &opt.inflight) &&
			 opt.inflight)
			i++;
		else if (!strcmp(a, "--wait-ms") && parse_u64(val, 600000, &opt.wait_ms))
			i++;
		else if (!strcmp(a, "--corrupt") && parse_u64(val, UINT64_MAX - 1, &opt.corrupt))
			i++;
		else if (!strcmp(a, "--ready") && val)
			opt.ready = argv[++i];
		else if (!strcmp(a, "--after") && val)
			opt.after = argv[++i];
		else
			usage();
	}
	if (opt.tcase == CLOSED_FD && (opt.server ? !opt.ready : !opt.after))
		usage();
}

int main(int argc, char **argv)
{
	int ret;

	if (argc == 2 && !strcmp(argv[1], "probe")) {
		ret = io_uring_queue_init(RING_ENTRIES, &ring, 0);
		if (ret)
			fprintf(stderr, "uring: no io_uring here: %s\n", strerror(-ret));
		return ret ? 4 : 0;
	}
	parse_args(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	t_start = now();
	run();
	print_line(intact ? "ok" : "fail", "");
	return intact ? 0 : 1;
}
