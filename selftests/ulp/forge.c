// SPDX-License-Identifier: GPL-2.0
/* forge: ntbsmc's handshake spoken by hand, by a host that has no NTB access. */

/*
 *   forge relay LADDR LPORT SADDR SPORT --bind-port P [--bind-addr A] --record DIR
 *               [--max-s S] [--swap accept]
 *   forge client ADDR PORT --bind-port P [--bind-addr A] --record DIR --attack KIND
 *                [--slots N] [--slot-step S]
 *   forge server LADDR LPORT --record DIR --attack KIND [--count N]
 *   forge probe ADDR PORT
 *   forge sink LADDR LPORT [--count N] [--idle-s S]
 *
 * The hostile host of the auth test: it reaches the servers over TCP but has no
 * NTB link, so it cannot read the link secrets that key the handshake's MACs
 * (wire.h). Every socket of forge has the ntbsmc ULP, so that it offers ntbsmc
 * in its SYN or SYN-ACK; the test arms the fault point raw_handshake for the
 * local ports forge forges from, and there the kernel does no handshake of its
 * own: the bytes of the TCP stream are forge's to read and write.
 *
 * relay    a man in the middle: accepts one connection on LADDR:LPORT, connects
 *          to SADDR:SPORT from local port P and forwards both ways until both
 *          ends closed, recording the first 4096 bytes of each direction in
 *          DIR/c2s and DIR/s2c as they pass (an honest handshake, to replay).
 *          With --swap accept it gives the client a DECLINE in place of the
 *          server's ACCEPT and the server a forged CONFIRM (relay_swap()).
 * client   forged clients, from local port P, one connection per attempt:
 *          claim (the recorded client's identity, its slot and slots 0, S, 2S,
 *          ... up to N of them, a made-up MAC),
 *          replay (the recorded HELLO and PROPOSAL verbatim), mutate (the
 *          recorded PROPOSAL with one field or its length altered), legacy (a
 *          version-3 client, whose handshake has no proof), abort (a client
 *          that resets its connection mid-handshake: at once, and after the
 *          server's CHALLENGE; result "aborted").
 * server   a forged server for N honest clients: claim (the recorded server's
 *          identity and buffer, a made-up MAC; version 3's messages to an old
 *          client), replay (the recorded answers verbatim), legacy (version 3's
 *          messages whatever the client speaks).
 * probe    an honest client: connects, sends a byte, says how the connection
 *          runs (getsockopt NTBSMC_INFO).
 * sink     an honest server: reads each connection to its end and says how it
 *          ran.
 *
 * relay and client connect from local port P and address A (--bind-addr;
 * default: any).
 *
 * One JSON object per line on stdout: for each attempt or connection, e.g.
 *
 *   {"attack": "claim", "case": "slot:3", "answer": "challenge",
 *    "result": "declined", "reason": "auth", "reason_num": 16}
 *
 * and a summary per attack. A result is "declined" (with the DECLINE's reason),
 * "accepted" (the forgery worked: an ACCEPT, or the client's CONFIRM),
 * "closed", "reset", "timeout", "garbage" (bytes that are no message of ours)
 * or "skipped" (a mutation of a field that the layout the server asked for
 * lacks). A client's "answer" is "challenge", "hello_ack" or "none". What the
 * server or client did is data, judged by the test: the exit status is 0 unless
 * forge itself failed (1: a socket call that must not fail, a malformed
 * recording) or was called wrongly (2).
 *
 * The message layouts below are forge's own copies of those of wire.h, not that
 * header: forge checks the format as documented, and still speaks versions 5
 * (the client's buffer in its PROPOSAL) and 3 (no nonce, no MAC), which wire.h
 * no longer describes, to old code. Every wait is bounded.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ntbsmc.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "names.h"

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

#define CONNECT_RETRY_S	30	/* a refused connect is retried: the peer may not listen yet */
#define CONNECT_S	30	/* SO_SNDTIMEO: bounds connect(), an honest handshake included */
#define IO_S		10	/* each handshake message; the probe's EOF */
#define ACCEPT_S	60	/* forge server: each connection */
#define DRAIN_S		20	/* forge server, sink: until the peer's EOF */
#define EXPLOIT_S	2	/* an accepted forgery keeps its connection this long */
#define EXPLOIT_BYTES	65536
#define RECORD_MAX	4096	/* recorded bytes per direction */
#define RELAY_BUF	65536
#define MAX_WAIT_S	1000000	/* --max-s, --idle-s */

/* ---- the handshake's messages (wire.h), all fields big endian ---- */

#define SMC_EYECATCHER	"\xe2\xd4\xc3\xd9"	/* "SMCR" in EBCDIC */
#define SMC_DECLINE	0x04
#define SMC_V1		0x10
#define SMC_PEERNOSMC	0x03010000
#define HELLO_ID	"NTBSMC\x00\x01"
#define VERSION		6	/* the protocol version: each side proves NTB presence before it is shown a buffer */
#define VERSION_V5	5	/* the one before: the client names its buffer before any proof */
#define VERSION_OLD	3	/* no proof at all, still spoken by old code */

#define CLC_MAGIC	"NTBS"
#define CLC_TRAILER	"SBTN"
#define CLC_FRAME_VERSION	1
#define CLC_MAX_LEN	4096	/* the longest message forge reads */

enum { HELLO_ACK = 1, PROPOSAL, ACCEPT, CONFIRM, DECLINE, CHALLENGE, DECLINE_MAC };

/* The client's first message: an SMC-R v1 CLC DECLINE with our marker in it. */
struct hello {
	uint8_t eyecatcher[4];
	uint8_t type;
	uint16_t length;
	uint8_t version;
	uint8_t id_for_peer[8];
	uint32_t peer_diagnosis;
	uint8_t os_type;
	uint8_t reserved[3];	/* [0]: the highest version the client speaks */
	uint8_t trailer[4];
} __attribute__((packed));

struct clc_hdr {
	uint8_t magic[4];
	uint8_t type;
	uint8_t version;	/* of the framing: 1 in every protocol version */
	uint16_t length;	/* whole message, header and trailer included */
} __attribute__((packed));

/* To a client older than version 4 (and, from old servers, to anyone). */
struct hello_ack {
	struct clc_hdr hdr;
	uint8_t version_min;
	uint8_t version_max;
	uint8_t reserved[2];
	uint8_t sysid[16];
	uint8_t trl[4];
} __attribute__((packed));

struct challenge {
	struct clc_hdr hdr;
	uint8_t version_min;
	uint8_t version_max;
	uint8_t reserved[2];
	uint8_t sysid[16];
	uint8_t nonce[16];
	uint8_t trl[4];
} __attribute__((packed));

struct clc_rmb {
	uint32_t slot;
	uint32_t token;
	uint32_t size;
	uint32_t epoch;
} __attribute__((packed));

/* Version 6's: no buffer, the client names it only in its CONFIRM. */
struct proposal {
	struct clc_hdr hdr;
	uint8_t version;
	uint8_t reserved[3];
	uint8_t sysid[16];
	uint8_t fabric_id[16];
	uint8_t nonce[16];
	uint8_t mac[16];
	uint8_t trl[4];
} __attribute__((packed));

/* Versions 4 and 5: the client's buffer in the PROPOSAL. */
struct proposal_v5 {
	struct clc_hdr hdr;
	uint8_t version;
	uint8_t reserved[3];
	uint8_t sysid[16];
	uint8_t fabric_id[16];
	struct clc_rmb rmb;
	uint8_t nonce[16];
	uint8_t mac[16];
	uint8_t trl[4];
} __attribute__((packed));

/* Version 3's: version 4's without nonce and MAC. */
struct proposal_v3 {
	struct clc_hdr hdr;
	uint8_t version;
	uint8_t reserved[3];
	uint8_t sysid[16];
	uint8_t fabric_id[16];
	struct clc_rmb rmb;
	uint8_t trl[4];
} __attribute__((packed));

struct accept {
	struct clc_hdr hdr;
	struct clc_rmb rmb;
	uint8_t mac[16];
	uint8_t trl[4];
} __attribute__((packed));

struct accept_v3 {
	struct clc_hdr hdr;
	struct clc_rmb rmb;
	uint8_t trl[4];
} __attribute__((packed));

/* Up to version 5: nothing but the frame. */
struct confirm {
	struct clc_hdr hdr;
	uint8_t trl[4];
} __attribute__((packed));

/* Version 6's: the client's buffer and its MAC. */
struct confirm_v6 {
	struct clc_hdr hdr;
	struct clc_rmb rmb;
	uint8_t mac[16];
	uint8_t trl[4];
} __attribute__((packed));

/* Version 6: a DECLINE that changes what the peer may free carries a MAC. */
struct decline_mac {
	struct clc_hdr hdr;
	uint32_t reason;
	uint8_t mac[16];
	uint8_t trl[4];
} __attribute__((packed));

struct decline {
	struct clc_hdr hdr;
	uint32_t reason;	/* enum ntbsmc_reason */
	uint8_t trl[4];
} __attribute__((packed));

_Static_assert(sizeof(struct hello) == 28, "HELLO");
_Static_assert(sizeof(struct clc_hdr) == 8, "header");
_Static_assert(sizeof(struct hello_ack) == 32, "HELLO_ACK");
_Static_assert(sizeof(struct challenge) == 48, "CHALLENGE");
_Static_assert(sizeof(struct clc_rmb) == 16, "RMB");
_Static_assert(sizeof(struct proposal) == 80, "PROPOSAL");
_Static_assert(sizeof(struct proposal_v5) == 96, "version 5 PROPOSAL");
_Static_assert(sizeof(struct confirm_v6) == 44, "version 6 CONFIRM");
_Static_assert(sizeof(struct decline_mac) == 32, "DECLINE with MAC");
_Static_assert(sizeof(struct proposal_v3) == 64, "version 3 PROPOSAL");
_Static_assert(sizeof(struct accept) == 44, "ACCEPT");
_Static_assert(sizeof(struct accept_v3) == 28, "version 3 ACCEPT");
_Static_assert(sizeof(struct confirm) == 12, "CONFIRM");
_Static_assert(sizeof(struct decline) == 16, "DECLINE");
/* The shorter forms are prefixes of the longer ones: one builder serves both. */
_Static_assert(offsetof(struct hello_ack, trl) == offsetof(struct challenge, nonce), "");
_Static_assert(offsetof(struct proposal_v3, trl) == offsetof(struct proposal_v5, nonce), "");
_Static_assert(offsetof(struct accept_v3, trl) == offsetof(struct accept, mac), "");
_Static_assert(offsetof(struct hello_ack, sysid) == offsetof(struct challenge, sysid), "");

/* An RMB in host order. */
struct rmb {
	uint32_t slot, token, size, epoch;
};

/* A PROPOSAL's contents, whatever its layout. */
struct prop {
	uint8_t version, reserved[3], sysid[16], fabric_id[16];
	struct rmb rmb;
	uint8_t nonce[16], mac[16];
};

/* An honest handshake as the relay recorded it, and what forge takes from it. */
static struct {
	uint8_t hello[sizeof(struct hello)];
	uint8_t prop[sizeof(struct proposal_v5)];
	uint8_t answer[sizeof(struct challenge)];	/* CHALLENGE or HELLO_ACK */
	uint8_t accept[sizeof(struct accept)];
	size_t prop_len, answer_len, accept_len;
	struct prop client;
	uint8_t server_sysid[16];
	struct rmb server_rmb;
} rec;

static struct {
	const char *addr, *port, *saddr, *sport, *record, *attack, *bind_addr, *swap;
	unsigned long bind_port, slots, slot_step, count, max_s, idle_s;
} opt = {
	.slots = 16,
	.slot_step = 1,
	.max_s = 900,
	.idle_s = 300,
};

/*
 * How a step of a connection ended. A message read whole is GOT_MSG; the rest
 * are results, by the names printed.
 */
enum got {
	GOT_MSG, GOT_CLOSED, GOT_RESET, GOT_TIMEOUT, GOT_GARBAGE, GOT_DECLINED,
	GOT_ACCEPTED, GOT_SKIPPED, GOT_ABORTED,
};

static const char *const got_names[] = {
	[GOT_MSG] = "message", [GOT_CLOSED] = "closed", [GOT_RESET] = "reset",
	[GOT_TIMEOUT] = "timeout", [GOT_GARBAGE] = "garbage", [GOT_DECLINED] = "declined",
	[GOT_ACCEPTED] = "accepted", [GOT_SKIPPED] = "skipped", [GOT_ABORTED] = "aborted",
};

struct result {
	enum got got;
	const char *answer;	/* client: what the server answered our HELLO with */
	bool declined;
	uint32_t reason;	/* of the DECLINE */
};

struct tally {
	unsigned long attempts, accepted, declined_auth, declined_other, closed_or_reset, aborted;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void __attribute__((noreturn)) die(const char *what)
{
	int err = errno;

	fflush(stdout);
	fprintf(stderr, "forge: %s: %s\n", what, strerror(err));
	exit(1);
}

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("forge: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("getrandom");
		p += n;
		len -= n;
	}
}

static uint32_t random_u32(void)
{
	uint32_t v;

	random_bytes(&v, sizeof(v));
	return v;
}

/* ---- building and reading messages ---- */

static void rmb_put(struct clc_rmb *w, const struct rmb *r)
{
	w->slot = htobe32(r->slot);
	w->token = htobe32(r->token);
	w->size = htobe32(r->size);
	w->epoch = htobe32(r->epoch);
}

static void rmb_get(struct rmb *r, const struct clc_rmb *w)
{
	r->slot = be32toh(w->slot);
	r->token = be32toh(w->token);
	r->size = be32toh(w->size);
	r->epoch = be32toh(w->epoch);
}

/* Header and trailer of one of our messages of LEN bytes. */
static void clc_frame(uint8_t *msg, uint8_t type, size_t len)
{
	struct clc_hdr *h = (struct clc_hdr *)msg;

	memcpy(h->magic, CLC_MAGIC, 4);
	h->type = type;
	h->version = CLC_FRAME_VERSION;
	h->length = htobe16(len);
	memcpy(msg + len - 4, CLC_TRAILER, 4);
}

/* Our HELLO, saying that its client speaks up to VERSION. */
static void hello_build(uint8_t *buf, uint8_t version)
{
	struct hello *h = (struct hello *)buf;

	memset(h, 0, sizeof(*h));
	memcpy(h->eyecatcher, SMC_EYECATCHER, 4);
	h->type = SMC_DECLINE;
	h->length = htobe16(sizeof(*h));
	h->version = SMC_V1;
	memcpy(h->id_for_peer, HELLO_ID, 8);
	h->peer_diagnosis = htobe32(SMC_PEERNOSMC);
	h->reserved[0] = version;
	memcpy(h->trailer, SMC_EYECATCHER, 4);
}

/* A HELLO_ACK (versions VMIN..VMAX) or a CHALLENGE (and a fresh nonce); its length. */
static size_t answer_build(uint8_t *buf, uint8_t type, uint8_t vmin, uint8_t vmax,
			   const uint8_t *sysid)
{
	size_t len = type == HELLO_ACK ? sizeof(struct hello_ack) : sizeof(struct challenge);
	struct challenge c = { .version_min = vmin, .version_max = vmax };

	memcpy(c.sysid, sysid, sizeof(c.sysid));
	random_bytes(c.nonce, sizeof(c.nonce));
	memcpy(buf, &c, len);
	clc_frame(buf, type, len);
	return len;
}

/* A PROPOSAL of F in the layout of protocol version LAYOUT (3, 5 or 6); its length. */
static size_t prop_build(uint8_t *buf, const struct prop *f, int layout)
{
	size_t len = layout == VERSION_OLD ? sizeof(struct proposal_v3) : sizeof(struct proposal_v5);
	struct proposal_v5 p = { .version = f->version };
	struct proposal p6 = { .version = f->version };

	if (layout == VERSION) {
		memcpy(p6.reserved, f->reserved, sizeof(p6.reserved));
		memcpy(p6.sysid, f->sysid, sizeof(p6.sysid));
		memcpy(p6.fabric_id, f->fabric_id, sizeof(p6.fabric_id));
		memcpy(p6.nonce, f->nonce, sizeof(p6.nonce));
		memcpy(p6.mac, f->mac, sizeof(p6.mac));
		memcpy(buf, &p6, sizeof(p6));
		clc_frame(buf, PROPOSAL, sizeof(p6));
		return sizeof(p6);
	}
	memcpy(p.reserved, f->reserved, sizeof(p.reserved));
	memcpy(p.sysid, f->sysid, sizeof(p.sysid));
	memcpy(p.fabric_id, f->fabric_id, sizeof(p.fabric_id));
	rmb_put(&p.rmb, &f->rmb);
	memcpy(p.nonce, f->nonce, sizeof(p.nonce));
	memcpy(p.mac, f->mac, sizeof(p.mac));
	memcpy(buf, &p, len);
	clc_frame(buf, PROPOSAL, len);
	return len;
}

static void prop_parse(struct prop *f, const uint8_t *buf, size_t len)
{
	struct proposal_v5 p = { 0 };
	struct proposal p6;

	memset(f, 0, sizeof(*f));
	if (len == sizeof(p6)) {
		memcpy(&p6, buf, sizeof(p6));
		f->version = p6.version;
		memcpy(f->reserved, p6.reserved, sizeof(f->reserved));
		memcpy(f->sysid, p6.sysid, sizeof(f->sysid));
		memcpy(f->fabric_id, p6.fabric_id, sizeof(f->fabric_id));
		memcpy(f->nonce, p6.nonce, sizeof(f->nonce));
		memcpy(f->mac, p6.mac, sizeof(f->mac));
		return;
	}
	memcpy(&p, buf, len < sizeof(p) ? len : sizeof(p));
	f->version = p.version;
	memcpy(f->reserved, p.reserved, sizeof(f->reserved));
	memcpy(f->sysid, p.sysid, sizeof(f->sysid));
	memcpy(f->fabric_id, p.fabric_id, sizeof(f->fabric_id));
	rmb_get(&f->rmb, &p.rmb);
	if (len == sizeof(p)) {
		memcpy(f->nonce, p.nonce, sizeof(f->nonce));
		memcpy(f->mac, p.mac, sizeof(f->mac));
	}
}

/* An ACCEPT naming R, in LAYOUT; from version 4 on with a made-up MAC. */
static size_t accept_build(uint8_t *buf, const struct rmb *r, int layout)
{
	size_t len = layout == VERSION_OLD ? sizeof(struct accept_v3) : sizeof(struct accept);
	struct accept a = { 0 };

	rmb_put(&a.rmb, r);
	random_bytes(a.mac, sizeof(a.mac));
	memcpy(buf, &a, len);
	clc_frame(buf, ACCEPT, len);
	return len;
}

/*
 * A connection error is a result; anything else on a connected socket is a bug
 * of forge's.
 */
static enum got conn_error(int err, const char *what)
{
	if (err == ECONNRESET || err == ECONNABORTED || err == EPIPE || err == ETIMEDOUT ||
	    err == ENOTCONN)
		return GOT_RESET;
	errno = err;
	die(what);
}

/* Waits until FD is ready for EVENTS, or DEADLINE (now()) passed. */
static bool wait_fd(int fd, short events, double deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		double left = deadline - now();
		int rc;

		if (left <= 0)
			return false;
		rc = poll(&p, 1, (int)(left * 1000) + 1);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			die("poll");
		if (rc)
			return true;
	}
}

/* Reads exactly LEN bytes by DEADLINE. */
static enum got recv_by(int fd, void *buf, size_t len, double deadline)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n;

		if (!wait_fd(fd, POLLIN, deadline))
			return GOT_TIMEOUT;
		n = recv(fd, p, len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return conn_error(errno, "recv");
		if (!n)
			return GOT_CLOSED;
		p += n;
		len -= n;
	}
	return GOT_MSG;
}

/* Sends exactly LEN bytes by DEADLINE (GOT_MSG: sent). */
static enum got send_by(int fd, const void *buf, size_t len, double deadline)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n;

		if (!wait_fd(fd, POLLOUT, deadline))
			return GOT_TIMEOUT;
		n = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return conn_error(errno, "send");
		p += n;
		len -= n;
	}
	return GOT_MSG;
}

/* Reads and drops everything until EOF (GOT_CLOSED), a reset or DEADLINE. */
static enum got drain(int fd, double deadline)
{
	uint8_t buf[4096];

	for (;;) {
		ssize_t n;

		if (!wait_fd(fd, POLLIN, deadline))
			return GOT_TIMEOUT;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return conn_error(errno, "recv");
		if (!n)
			return GOT_CLOSED;
	}
}

/*
 * Reads one of our messages whole, as far as its header says: the magic, a
 * length with room for header and trailer, up to CLC_MAX_LEN, the trailer.
 * Anything else is garbage, and what follows it is no message of ours.
 */
static enum got read_msg(int fd, uint8_t *buf, size_t *len, double deadline)
{
	const struct clc_hdr *h = (const struct clc_hdr *)buf;
	enum got g = recv_by(fd, buf, sizeof(*h), deadline);
	size_t n;

	if (g != GOT_MSG)
		return g;
	n = be16toh(h->length);
	if (memcmp(h->magic, CLC_MAGIC, 4) || n < sizeof(struct confirm) || n > CLC_MAX_LEN)
		return GOT_GARBAGE;
	g = recv_by(fd, buf + sizeof(*h), n - sizeof(*h), deadline);
	if (g != GOT_MSG)
		return g;
	if (memcmp(buf + n - 4, CLC_TRAILER, 4))
		return GOT_GARBAGE;
	*len = n;
	return GOT_MSG;
}

/* A message that is not the one expected: a DECLINE (its reason in R), or garbage. */
static enum got not_expected(const uint8_t *msg, size_t len, struct result *r)
{
	const struct decline *d = (const struct decline *)msg;

	if (!(d->hdr.type == DECLINE && len == sizeof(*d)) &&
	    !(d->hdr.type == DECLINE_MAC && len == sizeof(struct decline_mac)))
		return GOT_GARBAGE;
	r->declined = true;
	r->reason = be32toh(d->reason);
	return GOT_DECLINED;
}

/* ---- sockets ---- */

/* A TCP socket with the ntbsmc ULP: it offers ntbsmc in its SYN or SYN-ACK. */
static int ulp_socket(int family)
{
	struct timeval tv = { .tv_sec = CONNECT_S };
	int fd = socket(family, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		die("socket");
	if (setsockopt(fd, SOL_TCP, TCP_ULP, NTBSMC_ULP_NAME, sizeof(NTBSMC_ULP_NAME)))
		die("setsockopt TCP_ULP \"ntbsmc\" (is the ntbsmc module loaded?)");
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		die("setsockopt");
	return fd;
}

static struct addrinfo *resolve(const char *addr, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST },
			*ai;
	int err = getaddrinfo(addr, port, &hints, &ai);

	if (err) {
		fprintf(stderr, "forge: %s port %s: %s\n", addr, port, gai_strerror(err));
		exit(2);
	}
	return ai;
}

/*
 * Where the sockets forge connects from are bound: --bind-port, the local port
 * the kernel leaves the handshake to us on (raw_handshake), and --bind-addr
 * (default: any).
 */
static void bind_local(int fd, int family)
{
	const char *addr = opt.bind_addr ?: family == AF_INET6 ? "::" : "0.0.0.0";
	struct addrinfo *ai;
	char port[24];

	snprintf(port, sizeof(port), "%lu", opt.bind_port);
	ai = resolve(addr, port);
	if (ai->ai_family != family) {
		fprintf(stderr, "forge: --bind-addr %s: not of the peer address's family\n", addr);
		exit(2);
	}
	if (bind(fd, ai->ai_addr, ai->ai_addrlen))
		die("bind --bind-addr/--bind-port");
	freeaddrinfo(ai);
}

/*
 * A fresh socket per try (a refused socket cannot connect again), bound by
 * bind_local() if BOUND. Returns -1 with errno ECONNRESET when the connection
 * was reset during connect() (an honest handshake can end so).
 */
static int connect_retry(const struct addrinfo *ai, bool bound)
{
	double end = now() + CONNECT_RETRY_S;

	for (;;) {
		int fd = ulp_socket(ai->ai_family), err;

		if (bound)
			bind_local(fd, ai->ai_family);
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			return fd;
		err = errno;
		close(fd);
		if (err == ECONNRESET || err == ECONNABORTED) {
			errno = ECONNRESET;
			return -1;
		}
		errno = err;
		if (err == EINPROGRESS)		/* SO_SNDTIMEO ran out */
			fail("connect: no connection in %d s", CONNECT_S);
		if (err != ECONNREFUSED || now() > end)
			die("connect");
		usleep(100000);
	}
}

static int listen_on(const struct addrinfo *ai)
{
	int fd = ulp_socket(ai->ai_family);

	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 16))
		die("bind/listen");
	return fd;
}

/* The next connection by DEADLINE, else -1. */
static int accept_by(int lfd, double deadline)
{
	for (;;) {
		int fd;

		if (!wait_fd(lfd, POLLIN, deadline))
			return -1;
		fd = accept(lfd, NULL, NULL);
		if (fd >= 0)
			return fd;
		/* gone before we took it: wait for the next one */
		if (errno != ECONNABORTED && errno != EAGAIN && errno != EINTR)
			die("accept");
	}
}

/* Closes with an RST: no TIME_WAIT keeps the next attempt from binding the port. */
static void rst_close(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)))
		die("setsockopt SO_LINGER");
	close(fd);
}

/* "mode", "reason", "peer_reason" of FD as JSON members, as xfer prints them. */
static void print_info(int fd)
{
	struct ntbsmc_info info;
	socklen_t len = sizeof(info);
	char b1[32], b2[32], b3[32];

	if (getsockopt(fd, SOL_NTBSMC, NTBSMC_INFO, &info, &len)) {
		printf("\"mode\": \"tcp\", \"reason\": \"no_ulp\", \"peer_reason\": \"\"");
		return;
	}
	printf("\"mode\": \"%s\", \"reason\": \"%s\", \"peer_reason\": \"%s\"",
	       mode_name(info.mode, b1, sizeof(b1)), reason_name(info.reason, b2, sizeof(b2)),
	       reason_name(info.peer_reason, b3, sizeof(b3)));
}

/* ---- the recording ---- */

static size_t read_file(const char *name, uint8_t *buf, size_t size)
{
	char path[PATH_MAX];
	size_t len = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", opt.record, name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	while (len < size) {
		ssize_t n = read(fd, buf + len, size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die(path);
		if (!n)
			break;
		len += n;
	}
	close(fd);
	return len;
}

/*
 * The message at OFF of the recorded direction NAME: of TYPE1 and LEN1, of
 * TYPE2 and LEN2 or of TYPE2 and LEN3, framed as ours. Returns its length.
 */
static size_t recorded_msg(const char *name, const uint8_t *buf, size_t have, size_t off,
			   const char *what, uint8_t type1, size_t len1, uint8_t type2,
			   size_t len2, size_t len3)
{
	const struct clc_hdr *h = (const struct clc_hdr *)(buf + off);
	size_t len;

	if (have < off + sizeof(*h))
		fail("recording %s/%s: no %s after byte %zu (%zu bytes recorded)", opt.record,
		     name, what, off, have);
	len = be16toh(h->length);
	if (memcmp(h->magic, CLC_MAGIC, 4) ||
	    !((h->type == type1 && len == len1) ||
	      (h->type == type2 && (len == len2 || len == len3))))
		fail("recording %s/%s: not a %s at byte %zu (type %u, length %zu)", opt.record,
		     name, what, off, h->type, len);
	if (have < off + len || memcmp(buf + off + len - 4, CLC_TRAILER, 4))
		fail("recording %s/%s: %s at byte %zu cut short or without its trailer",
		     opt.record, name, what, off);
	return len;
}

/*
 * An honest handshake: the client's HELLO and PROPOSAL, the server's answer
 * (CHALLENGE, or HELLO_ACK from version 3) and ACCEPT, in any version. From
 * version 6 on a relay sees no ACCEPT (the server's check of the PROPOSAL
 * covers the addresses, which the relay changed: it declines): then the
 * server's buffer is a made-up one.
 */
static void load_recording(void)
{
	uint8_t c2s[RECORD_MAX], s2c[RECORD_MAX];
	size_t nc = read_file("c2s", c2s, sizeof(c2s));
	size_t ns = read_file("s2c", s2c, sizeof(s2c));
	const struct hello *h = (const struct hello *)c2s;
	size_t off;

	if (nc < sizeof(*h) || memcmp(h->eyecatcher, SMC_EYECATCHER, 4) ||
	    h->type != SMC_DECLINE || be16toh(h->length) != sizeof(*h) ||
	    memcmp(h->id_for_peer, HELLO_ID, 8))
		fail("recording %s/c2s: does not start with a HELLO (%zu bytes recorded)",
		     opt.record, nc);
	memcpy(rec.hello, c2s, sizeof(rec.hello));
	off = sizeof(*h);
	rec.prop_len = recorded_msg("c2s", c2s, nc, off, "PROPOSAL", PROPOSAL,
				    sizeof(struct proposal_v3), PROPOSAL,
				    sizeof(struct proposal_v5), sizeof(struct proposal));
	memcpy(rec.prop, c2s + off, rec.prop_len);
	prop_parse(&rec.client, rec.prop, rec.prop_len);

	rec.answer_len = recorded_msg("s2c", s2c, ns, 0, "CHALLENGE or HELLO_ACK", CHALLENGE,
				      sizeof(struct challenge), HELLO_ACK,
				      sizeof(struct hello_ack), sizeof(struct hello_ack));
	memcpy(rec.answer, s2c, rec.answer_len);
	memcpy(rec.server_sysid, ((const struct challenge *)rec.answer)->sysid,
	       sizeof(rec.server_sysid));
	off = rec.answer_len;
	if (ns >= off + sizeof(struct clc_hdr) &&
	    (s2c[off + offsetof(struct clc_hdr, type)] == DECLINE ||
	     s2c[off + offsetof(struct clc_hdr, type)] == DECLINE_MAC)) {
		rec.server_rmb = (struct rmb){ .slot = 0, .token = random_u32(),
					       .size = 65536, .epoch = 1 };
		rec.accept_len = accept_build(rec.accept, &rec.server_rmb, VERSION);
		return;
	}
	rec.accept_len = recorded_msg("s2c", s2c, ns, off, "ACCEPT", ACCEPT,
				      sizeof(struct accept_v3), ACCEPT, sizeof(struct accept),
				      sizeof(struct accept));
	memcpy(rec.accept, s2c + off, rec.accept_len);
	rmb_get(&rec.server_rmb, &((const struct accept *)rec.accept)->rmb);
}

/* ---- results ---- */

static void print_result(const char *kind, const char *name, const struct result *r)
{
	char buf[32];

	printf("{\"attack\": \"%s\", \"case\": \"%s\", ", kind, name);
	if (r->answer)
		printf("\"answer\": \"%s\", ", r->answer);
	printf("\"result\": \"%s\", \"reason\": \"%s\"", got_names[r->got],
	       r->declined ? reason_name(r->reason, buf, sizeof(buf)) : "");
	if (r->declined)
		printf(", \"reason_num\": %u", r->reason);
	printf("}\n");
	fflush(stdout);
	if (r->got == GOT_ACCEPTED)
		fprintf(stderr, "forge: *** %s %s ACCEPTED: the forged handshake succeeded ***\n",
			kind, name);
}

static void count(struct tally *t, const struct result *r)
{
	t->attempts++;
	if (r->got == GOT_ACCEPTED)
		t->accepted++;
	else if (r->got == GOT_DECLINED && r->reason == NTBSMC_REASON_AUTH)
		t->declined_auth++;
	else if (r->got == GOT_DECLINED)
		t->declined_other++;
	else if (r->got == GOT_CLOSED || r->got == GOT_RESET)
		t->closed_or_reset++;
	else if (r->got == GOT_ABORTED)
		t->aborted++;
}

static void print_tally(const char *kind, const struct tally *t)
{
	printf("{\"attack\": \"%s\", \"attempts\": %lu, \"accepted\": %lu, "
	       "\"declined_auth\": %lu, \"declined_other\": %lu, \"closed_or_reset\": %lu, "
	       "\"aborted\": %lu}\n",
	       kind, t->attempts, t->accepted, t->declined_auth, t->declined_other,
	       t->closed_or_reset, t->aborted);
	fflush(stdout);
}

/* ---- relay ---- */

/* One direction of the relay. */
struct pipe_dir {
	const char *name;	/* "c2s", "s2c": also its recording's file */
	int in, out;
	uint8_t buf[RELAY_BUF];
	size_t len, off;	/* bytes buffered, of which off are written */
	uint64_t total;
	bool eof, shut;		/* EOF read; passed on (shutdown(out, SHUT_WR)) */
	uint8_t rec[RECORD_MAX];
	size_t rec_len;
};

static struct pipe_dir dirs[2];

/*
 * DIR/NAME holds BUF: written aside and renamed into place, so that a test that
 * reads it while the connection runs never sees a half-written file.
 */
static void write_record(const char *name, const void *buf, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", opt.record, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", opt.record, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(tmp);
	if (write(fd, buf, len) != (ssize_t)len)
		die(tmp);
	if (close(fd) || rename(tmp, path))
		die(path);
}

static void record(struct pipe_dir *d, const uint8_t *p, size_t n)
{
	size_t take = RECORD_MAX - d->rec_len;

	if (!take)
		return;
	if (take > n)
		take = n;
	memcpy(d->rec + d->rec_len, p, take);
	d->rec_len += take;
	write_record(d->name, d->rec, d->rec_len);
}

/*
 * One step of a direction after poll(): read when its buffer is empty, write
 * what is buffered, pass EOF on once everything before it is written. Returns 0
 * or the errno that ended the connection. Everything is non-blocking, so a step
 * with nothing to do costs an EAGAIN.
 */
static int pipe_step(struct pipe_dir *d)
{
	ssize_t n;

	if (!d->eof && d->off == d->len) {
		n = recv(d->in, d->buf, sizeof(d->buf), MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return errno;
		if (!n)
			d->eof = true;
		if (n > 0) {
			d->len = n;
			d->off = 0;
			d->total += n;
			record(d, d->buf, n);
		}
	}
	if (d->off < d->len) {
		n = send(d->out, d->buf + d->off, d->len - d->off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return errno;
		if (n > 0)
			d->off += n;
	}
	if (d->eof && d->off == d->len && !d->shut) {
		if (shutdown(d->out, SHUT_WR))
			return errno;
		d->shut = true;
	}
	return 0;
}

/* What a direction waits for: its input when its buffer is empty, else its output. */
static void pipe_events(const struct pipe_dir *d, struct pollfd *p)
{
	if (d->shut)
		return;
	if (d->off < d->len)
		p[d->out == p[0].fd ? 0 : 1].events |= POLLOUT;
	else if (!d->eof)
		p[d->in == p[0].fd ? 0 : 1].events |= POLLIN;
}

static void relay_end(const char *how, int err, const char *during)
{
	printf("{\"relay\": \"%s\", ", how);
	if (err)
		printf("\"error\": \"%s\", \"during\": \"%s\", ", strerrorname_np(err) ?: "?",
		       during);
	printf("\"c2s\": %llu, \"s2c\": %llu}\n", (unsigned long long)dirs[0].total,
	       (unsigned long long)dirs[1].total);
	fflush(stdout);
}

/* Forwards until both directions passed EOF on, an error, or DEADLINE. */
static void relay_run(int a, int b, double deadline)
{
	int i, err;

	dirs[0].in = dirs[1].out = a;
	dirs[0].out = dirs[1].in = b;
	while (!dirs[0].shut || !dirs[1].shut) {
		struct pollfd p[2] = { { .fd = a }, { .fd = b } };
		double left = deadline - now();
		int rc;

		if (left <= 0) {
			relay_end("timeout", 0, NULL);
			goto reset;
		}
		for (i = 0; i < 2; i++)
			pipe_events(&dirs[i], p);
		/* a socket shut both ways polls HUP forever: leave it out */
		for (i = 0; i < 2; i++)
			if (!p[i].events)
				p[i].fd = -1;
		rc = poll(p, 2, (int)(left * 1000) + 1);
		if (rc < 0 && errno != EINTR)
			die("poll");
		for (i = 0; rc > 0 && i < 2; i++) {
			err = pipe_step(&dirs[i]);
			if (err) {
				relay_end("reset", err, dirs[i].name);
				goto reset;
			}
		}
	}
	relay_end("done", 0, NULL);
	close(a);
	close(b);
	return;
reset:
	/* a reset on one side is passed on as one */
	rst_close(a);
	rst_close(b);
}

/*
 * --swap accept: the relay passes HELLO, the server's answer and the PROPOSAL,
 * and if the server accepts, gives the client a DECLINE (no_buffer) instead of
 * the ACCEPT and the server a forged CONFIRM (version 5's 12 bytes, or version
 * 6's with a made-up buffer and MAC), then relays as before. Says what it did.
 */
static void relay_swap(int a, int b)
{
	uint8_t msg[CLC_MAX_LEN], out[sizeof(struct confirm_v6)];
	struct decline d = { .reason = htobe32(NTBSMC_REASON_NO_BUFFER) };
	double end = now() + 3 * IO_S;
	const char *what = "none";
	size_t len, plen = 0;
	enum got g;

	g = recv_by(a, msg, sizeof(struct hello), end);
	if (g == GOT_MSG)
		g = send_by(b, msg, sizeof(struct hello), end);
	if (g == GOT_MSG)
		g = read_msg(b, msg, &len, end);
	if (g == GOT_MSG)
		g = send_by(a, msg, len, end);
	if (g == GOT_MSG)
		g = read_msg(a, msg, &plen, end);
	if (g == GOT_MSG)
		g = send_by(b, msg, plen, end);
	if (g == GOT_MSG)
		g = read_msg(b, msg, &len, end);
	if (g == GOT_MSG && ((struct clc_hdr *)msg)->type == ACCEPT) {
		struct confirm_v6 c = { 0 };
		struct rmb r = { .slot = 0, .token = random_u32(), .size = 65536, .epoch = 1 };
		size_t clen = plen == sizeof(struct proposal) ? sizeof(c) : sizeof(struct confirm);

		what = "accept";
		clc_frame((uint8_t *)&d, DECLINE, sizeof(d));
		g = send_by(a, &d, sizeof(d), end);
		rmb_put(&c.rmb, &r);
		random_bytes(c.mac, sizeof(c.mac));
		memcpy(out, &c, clen);
		clc_frame(out, CONFIRM, clen);
		if (g == GOT_MSG)
			g = send_by(b, out, clen, end);
	} else if (g == GOT_MSG) {
		what = ((struct clc_hdr *)msg)->type == DECLINE ||
		       ((struct clc_hdr *)msg)->type == DECLINE_MAC ? "decline" : "other";
		g = send_by(a, msg, len, end);
	}
	printf("{\"swap\": \"%s\", \"proposal_len\": %zu, \"step\": \"%s\"}\n", what, plen,
	       got_names[g]);
	fflush(stdout);
}

static void cmd_relay(void)
{
	struct addrinfo *lai = resolve(opt.addr, opt.port), *sai = resolve(opt.saddr, opt.sport);
	double deadline = now() + opt.max_s;
	int lfd, a, b;

	dirs[0].name = "c2s";
	dirs[1].name = "s2c";
	write_record("c2s", "", 0);
	write_record("s2c", "", 0);
	lfd = listen_on(lai);
	a = accept_by(lfd, deadline);
	close(lfd);	/* one connection: later ones are refused */
	b = a < 0 ? -1 : connect_retry(sai, true);
	if (a < 0) {
		relay_end("timeout", 0, NULL);
	} else if (b < 0) {
		relay_end("reset", errno, "connect");
		rst_close(a);
	} else {
		if (opt.swap)
			relay_swap(a, b);
		relay_run(a, b, deadline);
	}
	freeaddrinfo(lai);
	freeaddrinfo(sai);
}

/* ---- forged clients ---- */

enum mutation { M_NONE, M_FLIP, M_INC, M_LEN, M_TRUNC, M_EXTRA };

/* A field of the PROPOSAL, at its offsets in version 6's and version 5's layouts. */
struct field {
	const char *name;
	size_t off6, off5, size;
	bool numeric;		/* a big-endian number: also mutated by +1 */
};

#define NO_FIELD	((size_t)-1)
#define FIELD(name, member, numeric) \
	{ name, offsetof(struct proposal, member), offsetof(struct proposal_v5, member), \
	  sizeof(((struct proposal_v5 *)0)->member), numeric }
/* a field version 6 no longer has */
#define FIELD5(name, member, numeric) \
	{ name, NO_FIELD, offsetof(struct proposal_v5, member), \
	  sizeof(((struct proposal_v5 *)0)->member), numeric }

static const struct field fields[] = {
	FIELD("hdr.magic", hdr.magic, false),
	FIELD("hdr.type", hdr.type, false),
	FIELD("hdr.version", hdr.version, false),
	FIELD("hdr.length", hdr.length, true),
	FIELD("version", version, false),
	FIELD("reserved", reserved, false),
	FIELD("sysid", sysid, false),
	FIELD("fabric_id", fabric_id, false),
	FIELD5("rmb.slot", rmb.slot, true),
	FIELD5("rmb.token", rmb.token, true),
	FIELD5("rmb.size", rmb.size, true),
	FIELD5("rmb.epoch", rmb.epoch, true),
	FIELD("nonce", nonce, false),
	FIELD("mac", mac, false),
	FIELD("trailer", trl, false),
};

/* One forged connection: its HELLO, and how to build its PROPOSAL once answered. */
struct plan {
	char name[48];
	uint8_t hello[sizeof(struct hello)];
	/* the PROPOSAL in the answer's LAYOUT into MSG; its length, 0: not applicable */
	size_t (*build)(const struct plan *p, int layout, uint8_t *msg);
	uint32_t slot;			/* claim */
	const struct field *field;	/* mutate */
	enum mutation op;
	long value;			/* M_LEN: the header's length ... */
	bool relative;			/* ... or that added to the real one */
	bool shut_wr;			/* shutdown(SHUT_WR) after the PROPOSAL */
};

/*
 * The PROPOSAL layout an answer asks for: version 3's after a HELLO_ACK that
 * offers version 3 (an old server), otherwise that of the highest version it
 * offers (version 6's, or version 5's for 4 and 5).
 */
static int answer_layout(const uint8_t *msg)
{
	const struct hello_ack *a = (const struct hello_ack *)msg;

	if (a->hdr.type == HELLO_ACK && a->version_min <= VERSION_OLD &&
	    a->version_max >= VERSION_OLD)
		return VERSION_OLD;
	return a->version_max >= VERSION ? VERSION : VERSION_V5;
}

/* The recorded client's identity in slot p->slot; a made-up nonce and MAC. */
static size_t build_claim(const struct plan *p, int layout, uint8_t *msg)
{
	struct prop f = rec.client;

	f.version = layout;
	f.rmb.slot = p->slot;
	if (p->slot != rec.client.rmb.slot)
		f.rmb.token = random_u32();
	random_bytes(f.nonce, sizeof(f.nonce));
	random_bytes(f.mac, sizeof(f.mac));
	return prop_build(msg, &f, layout);
}

static size_t build_replay(const struct plan *p, int layout, uint8_t *msg)
{
	(void)p;
	(void)layout;
	memcpy(msg, rec.prop, rec.prop_len);
	return rec.prop_len;
}

/* Version 3's PROPOSAL of the recorded client, whatever the server answered. */
static size_t build_legacy(const struct plan *p, int layout, uint8_t *msg)
{
	struct prop f = rec.client;

	(void)p;
	(void)layout;
	f.version = VERSION_OLD;
	return prop_build(msg, &f, VERSION_OLD);
}

/* Big-endian +1 of the SIZE bytes at P. */
static void bump(uint8_t *p, size_t size)
{
	while (size--)
		if (++p[size])
			break;
}

/*
 * The recorded PROPOSAL, recorded nonce and MAC kept, in the answer's layout,
 * with one mutation: a replay that also differs in one place.
 */
static size_t build_mutate(const struct plan *p, int layout, uint8_t *msg)
{
	struct clc_hdr *h = (struct clc_hdr *)msg;
	struct prop f = rec.client;
	size_t len, off;

	f.version = layout;
	len = prop_build(msg, &f, layout);
	off = !p->field ? 0 : layout == VERSION ? p->field->off6 : p->field->off5;
	if (off == NO_FIELD)
		return 0;	/* the buffer: not in version 6's layout */
	if (p->field && !strcmp(p->field->name, "trailer"))
		off = len - 4;
	else if (p->field && off + p->field->size > len - 4)
		return 0;	/* nonce and MAC: not in version 3's layout */

	switch (p->op) {
	case M_NONE:
		break;
	case M_FLIP:
		msg[off] ^= 0xff;
		break;
	case M_INC:
		bump(msg + off, p->field->size);
		break;
	case M_LEN:
		h->length = htobe16(p->relative ? (long)len + p->value : p->value);
		break;
	case M_TRUNC:
		return len / 2;
	case M_EXTRA:
		memset(msg + len, 0, 64);
		return len + 64;
	}
	return len;
}

/*
 * The server accepted a forgery: finish as a real attacker would, so that an
 * old server completes (CONFIRM), and write into the connection for a while
 * before the reset.
 */
static void exploit(int fd)
{
	uint8_t conf[sizeof(struct confirm)], data[4096];
	double end = now() + EXPLOIT_S, left;
	size_t sent = 0;

	clc_frame(conf, CONFIRM, sizeof(conf));
	if (send_by(fd, conf, sizeof(conf), end) != GOT_MSG)
		return;
	memset(data, 0x41, sizeof(data));
	while (sent < EXPLOIT_BYTES && send_by(fd, data, sizeof(data), end) == GOT_MSG)
		sent += sizeof(data);
	left = end - now();
	if (left > 0)
		usleep(left * 1e6);
}

/* The server's answer to our HELLO; GOT_MSG for a HELLO_ACK or a CHALLENGE. */
static enum got read_answer(int fd, uint8_t *msg, struct result *r)
{
	const struct clc_hdr *h = (const struct clc_hdr *)msg;
	size_t len;
	enum got g = read_msg(fd, msg, &len, now() + IO_S);

	if (g != GOT_MSG)
		return g;
	if (h->type == HELLO_ACK && len == sizeof(struct hello_ack)) {
		r->answer = "hello_ack";
		return GOT_MSG;
	}
	if (h->type == CHALLENGE && len == sizeof(struct challenge)) {
		r->answer = "challenge";
		return GOT_MSG;
	}
	return not_expected(msg, len, r);
}

/*
 * Reads one message: WANT if it is of TYPE and LEN1 or LEN2 bytes long (LEN1 0:
 * any length), else what not_expected() makes of it.
 */
static enum got read_typed(int fd, uint8_t type, size_t len1, size_t len2, enum got want,
			   struct result *r)
{
	uint8_t msg[CLC_MAX_LEN];
	const struct clc_hdr *h = (const struct clc_hdr *)msg;
	size_t len;
	enum got g = read_msg(fd, msg, &len, now() + IO_S);

	if (g != GOT_MSG)
		return g;
	if (h->type == type && (!len1 || len == len1 || len == len2))
		return want;
	return not_expected(msg, len, r);
}

/* What the server made of our PROPOSAL. */
static enum got read_verdict(int fd, struct result *r)
{
	return read_typed(fd, ACCEPT, sizeof(struct accept), sizeof(struct accept_v3),
			  GOT_ACCEPTED, r);
}

/* The client's side of a handshake by plan P on FD, as far as the server lets it go. */
static enum got forge_handshake(int fd, const struct plan *p, struct result *r)
{
	uint8_t answer[CLC_MAX_LEN], prop[sizeof(struct proposal_v5) + 64];
	enum got g = send_by(fd, p->hello, sizeof(p->hello), now() + IO_S);
	size_t len;

	if (g == GOT_MSG)
		g = read_answer(fd, answer, r);
	if (g != GOT_MSG)
		return g;
	len = p->build(p, answer_layout(answer), prop);
	if (!len)
		return GOT_SKIPPED;
	g = send_by(fd, prop, len, now() + IO_S);
	if (g == GOT_MSG && p->shut_wr && shutdown(fd, SHUT_WR))
		g = conn_error(errno, "shutdown");
	return g == GOT_MSG ? read_verdict(fd, r) : g;
}

/* One connection of a forged client; its line; an RST ends it. */
static void attempt(const struct addrinfo *ai, const struct plan *p, struct tally *t)
{
	struct result r = { .answer = "none", .got = GOT_RESET };
	int fd = connect_retry(ai, true);

	if (fd >= 0)
		r.got = forge_handshake(fd, p, &r);
	print_result(opt.attack, p->name, &r);
	count(t, &r);
	if (fd < 0)
		return;		/* reset during connect() */
	if (r.got == GOT_ACCEPTED)
		exploit(fd);
	rst_close(fd);
}

static void plan_init(struct plan *p, size_t (*build)(const struct plan *, int, uint8_t *))
{
	memset(p, 0, sizeof(*p));
	hello_build(p->hello, VERSION);
	p->build = build;
}

static void attack_claim(const struct addrinfo *ai, struct tally *t)
{
	uint32_t own = rec.client.rmb.slot, slot;
	struct plan p;

	plan_init(&p, build_claim);
	p.slot = own;
	snprintf(p.name, sizeof(p.name), "recorded_slot:%u", own);
	attempt(ai, &p, t);
	/* where buffers of 16 KiB << k start: slot step 1 << k */
	for (slot = 0; slot < opt.slots * opt.slot_step; slot += opt.slot_step) {
		if (slot == own)
			continue;
		p.slot = slot;
		snprintf(p.name, sizeof(p.name), "slot:%u", slot);
		attempt(ai, &p, t);
	}
}

static void attack_replay(const struct addrinfo *ai, struct tally *t)
{
	struct plan p;
	int i;

	plan_init(&p, build_replay);
	memcpy(p.hello, rec.hello, sizeof(p.hello));
	for (i = 1; i <= 3; i++) {
		snprintf(p.name, sizeof(p.name), "replay:%d", i);
		attempt(ai, &p, t);
	}
}

static void attack_legacy(const struct addrinfo *ai, struct tally *t)
{
	struct plan p;

	plan_init(&p, build_legacy);
	p.hello[offsetof(struct hello, reserved)] = 0;	/* a version-3 client says nothing */
	snprintf(p.name, sizeof(p.name), "legacy:v%d", VERSION_OLD);
	attempt(ai, &p, t);
}

/*
 * Clients that reset their connection mid-handshake, as haproxy does to a
 * backend connection whose client went: the server's handshake meets TCP's
 * reset, which is no malformed message (its reason: peer_closed).
 */
static void attack_abort(const struct addrinfo *ai, struct tally *t)
{
	static const char *const cases[] = { "abort:connected", "abort:challenged" };
	uint8_t answer[CLC_MAX_LEN];
	struct plan p;
	int i, fd;

	plan_init(&p, NULL);	/* its HELLO only */
	for (i = 0; i < 2; i++) {
		struct result r = { .answer = "none", .got = GOT_RESET };

		fd = connect_retry(ai, true);
		if (fd >= 0) {
			r.got = i ? send_by(fd, p.hello, sizeof(p.hello), now() + IO_S) : GOT_MSG;
			if (r.got == GOT_MSG && i)
				r.got = read_answer(fd, answer, &r);
			if (r.got == GOT_MSG)
				r.got = GOT_ABORTED;
			rst_close(fd);
		}
		print_result(opt.attack, cases[i], &r);
		count(t, &r);
	}
}

static void attack_mutate(const struct addrinfo *ai, struct tally *t)
{
	static const long lens[] = { 0, 8, 4096, 65535 };
	static const struct { const char *name; size_t off; uint8_t value; } hellos[] = {
		{ "hello:id_last=2", offsetof(struct hello, id_for_peer) + 7, 2 },
		{ "hello:version=0", offsetof(struct hello, reserved), 0 },
		{ "hello:version=255", offsetof(struct hello, reserved), 255 },
	};
	struct plan p;
	size_t i;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		plan_init(&p, build_mutate);
		p.field = &fields[i];
		p.op = M_FLIP;
		snprintf(p.name, sizeof(p.name), "field:%s", fields[i].name);
		attempt(ai, &p, t);
		if (!fields[i].numeric || fields[i].size < 2)
			continue;
		p.op = M_INC;
		snprintf(p.name, sizeof(p.name), "field:%s+1", fields[i].name);
		attempt(ai, &p, t);
	}
	plan_init(&p, build_mutate);
	p.op = M_LEN;
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		p.value = lens[i];
		snprintf(p.name, sizeof(p.name), "len:%ld", lens[i]);
		attempt(ai, &p, t);
	}
	p.relative = true;
	p.value = -1;
	snprintf(p.name, sizeof(p.name), "len:real-1");
	attempt(ai, &p, t);
	p.value = 1;
	snprintf(p.name, sizeof(p.name), "len:real+1");
	attempt(ai, &p, t);

	plan_init(&p, build_mutate);
	p.op = M_TRUNC;
	p.shut_wr = true;
	snprintf(p.name, sizeof(p.name), "trunc:half");
	attempt(ai, &p, t);
	plan_init(&p, build_mutate);
	p.op = M_EXTRA;
	snprintf(p.name, sizeof(p.name), "extra:64");
	attempt(ai, &p, t);

	for (i = 0; i < sizeof(hellos) / sizeof(hellos[0]); i++) {
		plan_init(&p, build_mutate);
		p.hello[hellos[i].off] = hellos[i].value;
		snprintf(p.name, sizeof(p.name), "%s", hellos[i].name);
		attempt(ai, &p, t);
	}
}

static void cmd_client(void)
{
	struct addrinfo *ai = resolve(opt.addr, opt.port);
	struct tally t = { 0 };

	load_recording();
	if (!strcmp(opt.attack, "claim"))
		attack_claim(ai, &t);
	else if (!strcmp(opt.attack, "replay"))
		attack_replay(ai, &t);
	else if (!strcmp(opt.attack, "mutate"))
		attack_mutate(ai, &t);
	else if (!strcmp(opt.attack, "abort"))
		attack_abort(ai, &t);
	else
		attack_legacy(ai, &t);
	print_tally(opt.attack, &t);
	freeaddrinfo(ai);
}

/* ---- a forged server ---- */

static bool is_hello(const uint8_t *msg)
{
	const struct hello *h = (const struct hello *)msg;

	return !memcmp(h->eyecatcher, SMC_EYECATCHER, 4) && h->type == SMC_DECLINE &&
	       be16toh(h->length) == sizeof(*h);
}

/* The client's PROPOSAL (GOT_MSG), or its DECLINE. */
static enum got read_proposal(int fd, struct result *r)
{
	return read_typed(fd, PROPOSAL, 0, 0, GOT_MSG, r);
}

/* The client's answer to our ACCEPT: CONFIRM means it took the forgery. */
static enum got read_confirm(int fd, struct result *r)
{
	return read_typed(fd, CONFIRM, sizeof(struct confirm), sizeof(struct confirm_v6),
			  GOT_ACCEPTED, r);
}

/*
 * One honest client's handshake with the forged server. The answers depend on
 * the attack and, for claim, on the version the client's HELLO says it speaks:
 * a client of version 4 or later a CHALLENGE of its own version (the client of
 * version 5 then names its buffer at once), an older one version 3's messages,
 * which have no MAC to fail.
 */
static void serve_one(int fd, struct tally *t)
{
	uint8_t msg[CLC_MAX_LEN];
	struct result r = { 0 };
	const char *name = opt.attack;
	int layout = VERSION, v;
	char vname[16];
	size_t len;

	r.got = recv_by(fd, msg, sizeof(struct hello), now() + IO_S);
	if (r.got == GOT_MSG && !is_hello(msg))
		r.got = GOT_GARBAGE;
	if (r.got != GOT_MSG)
		goto out;

	if (!strcmp(opt.attack, "replay")) {
		name = "replay";
		memcpy(msg, rec.answer, rec.answer_len);
		len = rec.answer_len;
	} else if (!strcmp(opt.attack, "claim") && ((struct hello *)msg)->reserved[0] >= 4) {
		v = ((struct hello *)msg)->reserved[0];
		layout = v > VERSION ? VERSION : v;
		snprintf(vname, sizeof(vname), "claim:v%d", layout);
		name = vname;
		len = answer_build(msg, CHALLENGE, layout, layout, rec.server_sysid);
	} else {
		name = strcmp(opt.attack, "claim") ? "legacy:v3" : "claim:v3";
		layout = VERSION_OLD;
		len = answer_build(msg, HELLO_ACK, VERSION_OLD, VERSION_OLD, rec.server_sysid);
	}
	r.got = send_by(fd, msg, len, now() + IO_S);
	if (r.got == GOT_MSG)
		r.got = read_proposal(fd, &r);
	if (r.got != GOT_MSG)
		goto out;

	if (!strcmp(opt.attack, "replay")) {
		memcpy(msg, rec.accept, rec.accept_len);
		len = rec.accept_len;
	} else {
		len = accept_build(msg, &rec.server_rmb, layout);
	}
	r.got = send_by(fd, msg, len, now() + IO_S);
	if (r.got == GOT_MSG)
		r.got = read_confirm(fd, &r);
out:
	print_result(opt.attack, name, &r);
	count(t, &r);
	/* the client, whatever it concluded, falls back or ends and closes */
	if (r.got == GOT_ACCEPTED || r.got == GOT_DECLINED)
		r.got = drain(fd, now() + DRAIN_S);
	if (r.got == GOT_CLOSED || r.got == GOT_RESET)
		close(fd);
	else
		rst_close(fd);
}

static void cmd_server(void)
{
	struct addrinfo *ai = resolve(opt.addr, opt.port);
	unsigned long i, n = opt.count ?: 1;
	struct tally t = { 0 };
	int lfd, fd;

	load_recording();
	lfd = listen_on(ai);
	for (i = 0; i < n; i++) {
		fd = accept_by(lfd, now() + ACCEPT_S);
		if (fd < 0) {
			struct result r = { .got = GOT_TIMEOUT };

			/* no client came: the ones after it would not either */
			print_result(opt.attack, "accept", &r);
			break;
		}
		serve_one(fd, &t);
	}
	close(lfd);
	print_tally(opt.attack, &t);
	freeaddrinfo(ai);
}

/* ---- honest ends ---- */

static void cmd_probe(void)
{
	struct addrinfo *ai = resolve(opt.addr, opt.port);
	int fd = connect_retry(ai, false);
	enum got g;
	char c = 'p';

	if (fd < 0) {
		printf("{\"probe\": \"reset\"}\n");
		goto out;
	}
	g = send_by(fd, &c, 1, now() + IO_S);
	if (g == GOT_MSG) {
		printf("{\"probe\": \"done\", ");
		print_info(fd);
		printf("}\n");
		fflush(stdout);
		if (shutdown(fd, SHUT_WR))
			g = conn_error(errno, "shutdown");
		else
			g = drain(fd, now() + IO_S);
	}
	if (g == GOT_RESET || g == GOT_TIMEOUT)
		printf("{\"probe\": \"%s\"}\n", got_names[g]);
	if (g == GOT_CLOSED)
		close(fd);
	else
		rst_close(fd);
out:
	fflush(stdout);
	freeaddrinfo(ai);
}

static void cmd_sink(void)
{
	struct addrinfo *ai = resolve(opt.addr, opt.port);
	int lfd = listen_on(ai), fd;
	unsigned long k;

	for (k = 1; !opt.count || k <= opt.count; k++) {
		enum got g;

		fd = accept_by(lfd, now() + opt.idle_s);
		if (fd < 0) {
			fprintf(stderr, "forge: sink: no connection for %lu s, done\n", opt.idle_s);
			break;
		}
		g = drain(fd, now() + DRAIN_S);
		printf("{\"sink\": %lu, ", k);
		print_info(fd);
		printf(", \"outcome\": \"%s\"}\n", g == GOT_CLOSED ? "eof" : got_names[g]);
		fflush(stdout);
		if (g == GOT_CLOSED)
			close(fd);
		else
			rst_close(fd);
	}
	close(lfd);
	freeaddrinfo(ai);
}

/* ---- arguments ---- */

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr,
		"usage: forge relay LADDR LPORT SADDR SPORT --bind-port P [--bind-addr A] --record DIR\n"
		"                   [--max-s S] [--swap accept]\n"
		"       forge client ADDR PORT --bind-port P [--bind-addr A] --record DIR --attack KIND\n"
		"                    [--slots N] [--slot-step S]\n"
		"                    KIND: claim, replay, mutate, legacy, abort\n"
		"       forge server LADDR LPORT --record DIR --attack KIND [--count N]\n"
		"                    KIND: claim, replay, legacy\n"
		"       forge probe ADDR PORT\n"
		"       forge sink LADDR LPORT [--count N] [--idle-s S]\n");
	exit(2);
}

static const struct command {
	const char *name;
	int args;		/* positional */
	const char *opts;	/* allowed options, each between spaces */
	const char *needs;	/* required ones */
	const char *attacks;	/* " kind kind " */
	void (*run)(void);
} commands[] = {
	{ "relay", 4, " --bind-port --bind-addr --record --max-s --swap ",
	  " --bind-port --record ", " accept ", cmd_relay },
	{ "client", 2, " --bind-port --bind-addr --record --attack --slots --slot-step ",
	  " --bind-port --record --attack ", " claim replay mutate legacy abort ", cmd_client },
	{ "server", 2, " --record --attack --count ", " --record --attack ",
	  " claim replay legacy ", cmd_server },
	{ "probe", 2, " ", " ", NULL, cmd_probe },
	{ "sink", 2, " --count --idle-s ", " ", NULL, cmd_sink },
};

/* Whether WORD is one of the space-separated LIST. */
static bool listed(const char *list, const char *word)
{
	char key[40];

	if (strlen(word) > 32)
		return false;
	snprintf(key, sizeof(key), " %.32s ", word);
	return strstr(list, key);
}

static bool parse_ulong(const char *s, unsigned long min, unsigned long max,
			unsigned long *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoul(s, &end, 10);
	return !errno && !*end && *v >= min && *v <= max;
}

static const struct command *parse_args(int argc, char **argv)
{
	const struct command *c = NULL;
	char given[128] = " ", need[32];
	const char *p;
	size_t i;
	int a, n;

	for (i = 0; argc > 1 && i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			c = &commands[i];
	if (!c || argc < 2 + c->args)
		usage();
	opt.addr = argv[2];
	opt.port = argv[3];
	if (c->args == 4) {
		opt.saddr = argv[4];
		opt.sport = argv[5];
	}
	for (a = 2 + c->args; a < argc; a += 2) {
		const char *o = argv[a], *val = a + 1 < argc ? argv[a + 1] : NULL;
		bool ok = true;

		if (!val || !listed(c->opts, o) || listed(given, o))
			usage();
		/* at most MAX_WAIT_S: poll() takes its timeout in int milliseconds */
		if (!strcmp(o, "--bind-port")) {
			ok = parse_ulong(val, 1, 65535, &opt.bind_port);
		} else if (!strcmp(o, "--slots")) {
			ok = parse_ulong(val, 0, 1 << 20, &opt.slots);
		} else if (!strcmp(o, "--slot-step")) {
			ok = parse_ulong(val, 1, 1 << 10, &opt.slot_step);
		} else if (!strcmp(o, "--count")) {
			ok = parse_ulong(val, 1, ULONG_MAX, &opt.count);
		} else if (!strcmp(o, "--max-s")) {
			ok = parse_ulong(val, 1, MAX_WAIT_S, &opt.max_s);
		} else if (!strcmp(o, "--idle-s")) {
			ok = parse_ulong(val, 1, MAX_WAIT_S, &opt.idle_s);
		} else if (!strcmp(o, "--record")) {
			opt.record = val;
		} else if (!strcmp(o, "--bind-addr")) {
			opt.bind_addr = val;
		} else if (!strcmp(o, "--swap")) {
			opt.swap = val;
			ok = listed(c->attacks, val);
		} else {	/* --attack */
			opt.attack = val;
			ok = listed(c->attacks, val);
		}
		if (!ok)
			usage();
		strncat(given, o, sizeof(given) - strlen(given) - 2);
		strcat(given, " ");
	}
	for (p = c->needs; sscanf(p, " %31s%n", need, &n) == 1; p += n)
		if (!listed(given, need))
			usage();
	return c;
}

int main(int argc, char **argv)
{
	const struct command *c = parse_args(argc, argv);

	signal(SIGPIPE, SIG_IGN);
	c->run();
	return 0;
}
