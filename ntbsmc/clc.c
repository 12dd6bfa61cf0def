// SPDX-License-Identifier: GPL-2.0
/* ntbsmc: the handshake over the TCP connection (see wire.h for the exchange). */

/*
 * Results: 0 means the connection runs over NTB (ctx->conn is set); a positive
 * value is the enum ntbsmc_reason it falls back to TCP with; a negative errno means
 * the TCP connection must be reset because the handshake bytes can no longer be
 * accounted for on both ends (a malformed message, or a timeout once both ends
 * know they speak ntbsmc). Every wait is bounded by the namespace's
 * handshake_timeout_ms.
 *
 * Stray bytes: the only message sent before the peer proved it speaks ntbsmc is
 * the client's HELLO, which a Linux SMC server consumes as an SMC DECLINE. A server
 * answers HELLO only within half the timeout of the connection's establishment,
 * so that a client that gave up waiting (and fell back, sending application data)
 * never receives a late answer: the server falls back silently instead.
 *
 * Trust: every field of the peer's messages is the claim of whoever holds the
 * TCP connection, which need not be a host on the NTB link at all. Nothing is
 * allocated for, exposed to, or written into a window a message names, and no
 * exposed buffer is freed early, on the word of a peer whose MAC has not proved
 * that it reads the link's windows now, on this TCP connection (wire.h says
 * which message authorises what).
 */

#include <linux/module.h>
#include <linux/siphash.h>
#include <net/tcp.h>
#include "ntbsmc.h"
#include "fault.h"

struct clc_io {
	struct ntbsmc_sock *ctx;
	struct sock *sk;
	unsigned long deadline;	/* jiffies */
};

static void io_init(struct clc_io *io, struct ntbsmc_sock *ctx)
{
	struct ntbsmc_net *nn = ntbsmc_net(sock_net(ctx->sk));

	io->ctx = ctx;
	io->sk = ctx->sk;
	io->deadline = jiffies + msecs_to_jiffies(READ_ONCE(nn->handshake_timeout_ms));
}

/*
 * The server's one deadline, for its whole handshake: a handshake timeout from
 * the child's creation (ctx->hs_start), however late its worker ran and however
 * late the client answered. A listener that closes waits for its children's
 * handshakes (listener_drain()): that long at most, not a timeout per message.
 */
static void io_init_server(struct clc_io *io, struct ntbsmc_sock *ctx)
{
	struct ntbsmc_net *nn = ntbsmc_net(sock_net(ctx->sk));

	io_init(io, ctx);
	io->deadline = ctx->hs_start + msecs_to_jiffies(READ_ONCE(nn->handshake_timeout_ms));
}

/*
 * TCP can bring no more of the peer's bytes. A socket closed during its
 * handshake has sent its FIN (FIN_WAIT1/2) and still reads the peer's answer.
 */
static bool tcp_gone(struct sock *sk)
{
	return READ_ONCE(sk->sk_err) || (READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN) ||
	       READ_ONCE(sk->sk_state) == TCP_CLOSE;
}

/* The socket was destroyed: nobody is left to read or to close. */
static bool sock_destroyed(struct ntbsmc_sock *ctx)
{
	return ntbsmc_sock_dead(ctx) == NTBSMC_SOCK_DESTROYED;
}

/*
 * Waits until @want bytes are queued (or TCP failed, or our socket was
 * destroyed). Returns 0, -ETIMEDOUT, -ECONNRESET, or -ESHUTDOWN: the socket was
 * destroyed, or the peer closed (its FIN, with nothing of ours pending: a client
 * that connected and closed at once, a server that closed the connection). A
 * socket that was closed still reads the answer it is owed (see io_send()). The
 * data_ready and state_change hooks, close() and ->release() wake ctx->hs_wq.
 */
static int io_wait(struct clc_io *io, int want)
{
	struct sock *sk = io->sk;
	long left = io->deadline - jiffies;

	/* bytes that came after the deadline are not an answer in time */
	if (left <= 0)
		return -ETIMEDOUT;
	left = wait_event_timeout(io->ctx->hs_wq,
				  tcp_inq(sk) >= want || tcp_gone(sk) ||
				  sock_destroyed(io->ctx), left);
	if (left && tcp_inq(sk) >= want)
		return 0;
	if (sock_destroyed(io->ctx))
		return -ESHUTDOWN;
	if (!tcp_gone(sk))
		return -ETIMEDOUT;
	return sock_flag(sk, SOCK_DONE) && !tcp_inq(sk) ? -ESHUTDOWN : -ECONNRESET;
}

static int io_recv(struct clc_io *io, void *buf, int len, int flags)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | flags };
	struct kvec vec = { buf, len };
	int addr_len, rc;

	iov_iter_kvec(&msg.msg_iter, ITER_DEST, &vec, 1, len);
	rc = io->ctx->sk_proto->recvmsg(io->sk, &msg, len, MSG_DONTWAIT | flags,
					&addr_len);
	if (rc < 0)
		return rc;
	return rc == len ? 0 : -EPROTO;
}

/* Reads exactly @len bytes: the caller knows the peer owes them. */
static int io_read(struct clc_io *io, void *buf, int len)
{
	int rc = io_wait(io, len);

	return rc ?: io_recv(io, buf, len, 0);
}

static int io_peek(struct clc_io *io, void *buf, int len)
{
	return io_recv(io, buf, len, MSG_PEEK);
}

/*
 * A socket closed during its handshake sends nothing more: each message would
 * be answered, and an answer that reaches a closed TCP socket resets the
 * connection (the peer's application would read ECONNRESET where TCP gives
 * EOF). Its handshake ends at the next message it would send, with the answer
 * to its last one read; the peer then reads our FIN and falls back to TCP.
 */
static int io_send(struct clc_io *io, const void *buf, int len)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	struct kvec vec = { (void *)buf, len };
	int rc;

	if (ntbsmc_sock_dead(io->ctx))
		return -ESHUTDOWN;
	iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, &vec, 1, len);
	rc = io->ctx->sk_proto->sendmsg(io->sk, &msg, len);
	if (rc < 0)
		return rc;
	return rc == len ? 0 : -ECONNRESET;
}

/* ---- our messages ---- */

static void clc_hdr(void *msg, u8 type, size_t len)
{
	struct ntbsmc_clc_hdr *h = msg;

	memcpy(h->magic, NTBSMC_CLC_MAGIC, 4);
	h->type = type;
	h->version = NTBSMC_CLC_FRAME_VERSION;
	h->length = cpu_to_be16(len);
	memcpy((u8 *)msg + len - sizeof(struct ntbsmc_clc_trailer), NTBSMC_CLC_TRAILER, 4);
}

static size_t clc_len(u8 type)
{
	switch (type) {
	case NTBSMC_CLC_HELLO_ACK:
		return sizeof(struct ntbsmc_clc_hello_ack);
	case NTBSMC_CLC_PROPOSAL:
		return sizeof(struct ntbsmc_clc_proposal);
	case NTBSMC_CLC_ACCEPT:
		return sizeof(struct ntbsmc_clc_accept);
	case NTBSMC_CLC_CONFIRM:
		return sizeof(struct ntbsmc_clc_confirm);
	case NTBSMC_CLC_DECLINE:
		return sizeof(struct ntbsmc_clc_decline);
	case NTBSMC_CLC_CHALLENGE:
		return sizeof(struct ntbsmc_clc_challenge);
	case NTBSMC_CLC_DECLINE_MAC:
		return sizeof(struct ntbsmc_clc_decline_mac);
	case NTBSMC_CLC_SWITCH:
		return sizeof(struct ntbsmc_clc_switch);
	}
	return 0;
}

static int clc_send(struct clc_io *io, void *msg, u8 type)
{
	size_t len = clc_len(type);

	clc_hdr(msg, type, len);
	if (ntbsmc_fault(NTBSMC_FAULT_CLC_TRUNCATED, io->sk))
		return io_send(io, msg, len / 2);	/* a header that promises more */
	if (ntbsmc_fault(NTBSMC_FAULT_CLC_GARBAGE, io->sk))
		memset(msg, 0x5a, len);
	else if (ntbsmc_fault(NTBSMC_FAULT_CLC_OVERSIZED, io->sk))
		((struct ntbsmc_clc_hdr *)msg)->length = cpu_to_be16(60000);
	return io_send(io, msg, len);
}

static int clc_decline(struct clc_io *io, u32 reason)
{
	struct ntbsmc_clc_decline d = { .reason = cpu_to_be32(reason) };

	clc_send(io, &d, NTBSMC_CLC_DECLINE);
	return reason;
}

/*
 * Receives one of our messages and validates its framing: magic, version, a type
 * the caller accepts, the exact length of that type, the trailer. Anything else is
 * a protocol error. A DECLINE is always accepted, and in place of a CONFIRM one
 * with a MAC (which the caller checks: the header says which came); its reason
 * is returned > 0.
 */
static int clc_recv(struct clc_io *io, void *buf, u8 type)
{
	struct ntbsmc_clc_hdr *h = buf;
	size_t len;
	int rc;

	rc = io_read(io, h, sizeof(*h));
	if (rc)
		return rc;
	if (memcmp(h->magic, NTBSMC_CLC_MAGIC, 4) || h->version != NTBSMC_CLC_FRAME_VERSION ||
	    (h->type != type && h->type != NTBSMC_CLC_DECLINE &&
	     !(h->type == NTBSMC_CLC_DECLINE_MAC && type == NTBSMC_CLC_CONFIRM)))
		return -EPROTO;
	len = clc_len(h->type);
	if (be16_to_cpu(h->length) != len)
		return -EPROTO;
	rc = io_read(io, buf + sizeof(*h), len - sizeof(*h));
	if (rc)
		return rc;
	if (memcmp(buf + len - sizeof(struct ntbsmc_clc_trailer), NTBSMC_CLC_TRAILER, 4))
		return -EPROTO;
	if (h->type == NTBSMC_CLC_DECLINE || h->type == NTBSMC_CLC_DECLINE_MAC) {
		/* the reason is at the same place in both */
		struct ntbsmc_clc_decline *d = buf;

		io->ctx->peer_reason = min_t(u32, be32_to_cpu(d->reason),
					     __NTBSMC_REASON_MAX - 1);
		return NTBSMC_REASON_DECLINED;
	}
	return 0;
}

static void fill_rmb(struct ntbsmc_clc_rmb *r, struct ntbsmc_conn *conn)
{
	r->slot = cpu_to_be32(conn->my_slot);
	r->token = cpu_to_be32(conn->my_token);
	r->size = cpu_to_be32(conn->rmb_size);
	r->epoch = cpu_to_be32(conn->epoch);
}

/* @sk's own and its peer's address, IPv4 ones mapped (an IPv6 socket's already are). */
static void sk_addrs(struct sock *sk, struct in6_addr *local, struct in6_addr *remote)
{
#if IS_ENABLED(CONFIG_IPV6)
	if (sk->sk_family == AF_INET6) {
		*local = sk->sk_v6_rcv_saddr;
		*remote = sk->sk_v6_daddr;
		return;
	}
#endif
	ipv6_addr_set_v4mapped(inet_sk(sk)->inet_rcv_saddr, local);
	ipv6_addr_set_v4mapped(inet_sk(sk)->inet_daddr, remote);
}

/*
 * The TCP connection's identity (wire.h), the same bytes on both ends: each
 * fills its own end's address and port and the peer's from its socket.
 */
static void clc_tcp_id(struct sock *sk, bool client, struct ntbsmc_clc_tcp_id *id)
{
	struct inet_sock *inet = inet_sk(sk);
	struct in6_addr local, remote;

	sk_addrs(sk, &local, &remote);
	memcpy(client ? id->client_addr : id->server_addr, &local, sizeof(local));
	memcpy(client ? id->server_addr : id->client_addr, &remote, sizeof(remote));
	id->client_port = client ? inet->inet_sport : inet->inet_dport;
	id->server_port = client ? inet->inet_dport : inet->inet_sport;
}

/*
 * Every byte of a handshake, as sent or received, in the order the MACs cover
 * them (wire.h, "Proof of NTB presence"), after the connection's identity; the
 * label says which MAC. The client's last message is a CONFIRM or a DECLINE
 * with a MAC.
 */
struct clc_transcript {
	u8 label[8];
	struct ntbsmc_clc_tcp_id id;
	struct ntbsmc_smc_decline hello;
	struct ntbsmc_clc_challenge chal;
	struct ntbsmc_clc_proposal prop;
	struct ntbsmc_clc_accept acc;
	union {
		struct ntbsmc_clc_confirm conf;
		struct ntbsmc_clc_decline_mac dec;
	} __packed fin;
} __packed;

#define CLC_MAC_PROPOSAL	offsetof(struct clc_transcript, prop.mac)
#define CLC_MAC_ACCEPT		offsetof(struct clc_transcript, acc.mac)
#define CLC_MAC_CONFIRM		offsetof(struct clc_transcript, fin.conf.mac)
#define CLC_MAC_DECLINE		offsetof(struct clc_transcript, fin.dec.mac)

/* MAC(@key, @len bytes at @data) as wire.h defines it, into @mac. */
static void mac_of(const u8 key[NTBSMC_SECRET_LEN], const void *data, size_t len,
		   u8 mac[NTBSMC_MAC_LEN])
{
	siphash_key_t k;
	int i;

	for (i = 0; i < 2; i++) {
		k.key[0] = get_unaligned_le64(key + 16 * i);
		k.key[1] = get_unaligned_le64(key + 16 * i + 8);
		put_unaligned_le64(siphash(data, len, &k), mac + 8 * i);
	}
	memzero_explicit(&k, sizeof(k));
}

/*
 * @got is the MAC we computed into @want (cleared here): compared in constant
 * time, as crypto_memneq() does (which lives in the crypto API, a module some
 * kernels build without).
 */
static bool mac_matches(u8 want[NTBSMC_MAC_LEN], const u8 *got)
{
	unsigned int i, diff = 0;

	for (i = 0; i < NTBSMC_MAC_LEN; i++) {
		diff |= want[i] ^ got[i];
		OPTIMIZER_HIDE_VAR(diff);
	}
	memzero_explicit(want, NTBSMC_MAC_LEN);
	return !diff;
}

/* MAC(@key, the transcript up to @len) as wire.h defines it, into @mac. */
static void clc_mac(const u8 key[NTBSMC_SECRET_LEN], struct clc_transcript *t,
		    const char *label, size_t len, u8 mac[NTBSMC_MAC_LEN])
{
	memcpy(t->label, label, sizeof(t->label));
	mac_of(key, t, len, mac);
}

/* The peer's MAC at @len in @t is the one @key makes. */
static bool clc_mac_ok(const u8 key[NTBSMC_SECRET_LEN], struct clc_transcript *t,
		       const char *label, size_t len)
{
	u8 want[NTBSMC_MAC_LEN];

	clc_mac(key, t, label, len, want);
	return mac_matches(want, (const u8 *)t + len);
}

/*
 * Sends @msg, the transcript's last message, of @type, with its MAC at @mac_off
 * in @t under @key: framed first, since the MAC covers the header too.
 */
static int clc_send_mac(struct clc_io *io, struct clc_transcript *t, void *msg, u8 type,
			const u8 key[NTBSMC_SECRET_LEN], const char *label, size_t mac_off)
{
	clc_hdr(msg, type, clc_len(type));
	clc_mac(key, t, label, mac_off, (u8 *)t + mac_off);
	if ((type == NTBSMC_CLC_ACCEPT &&
	     ntbsmc_fault(NTBSMC_FAULT_WIRE_DECLINE_ACCEPT, io->sk)) ||
	    (type == NTBSMC_CLC_CONFIRM &&
	     ntbsmc_fault(NTBSMC_FAULT_WIRE_DECLINE_CONFIRM, io->sk))) {
		clc_decline(io, NTBSMC_REASON_NO_BUFFER);	/* what a relay sends on */
		return 0;
	}
	return clc_send(io, msg, type);
}

#define CLC_SWITCH_KEYS_LEN	(offsetof(struct clc_transcript, fin) + \
				 sizeof(struct ntbsmc_clc_confirm))

/*
 * Version 7: the connection's SWITCH keys (wire.h), from the transcript up to
 * the CONFIRM checked, before the connection is established. Ours comes from
 * the key of our handshake MACs, the peer's from the key of its.
 */
static void clc_switch_keys(struct ntbsmc_conn *conn, struct clc_transcript *t,
			    const struct ntbsmc_link_keys *keys, u8 version)
{
	conn->version = version;
	if (version < NTBSMC_CLC_VERSION_SWITCH)
		return;
	clc_mac(keys->peer, t, NTBSMC_KEY_LABEL_SWITCH0, CLC_SWITCH_KEYS_LEN,
		conn->sw_key_tx);
	clc_mac(keys->peer, t, NTBSMC_KEY_LABEL_SWITCH1, CLC_SWITCH_KEYS_LEN,
		conn->sw_key_tx + NTBSMC_MAC_LEN);
	clc_mac(keys->mine, t, NTBSMC_KEY_LABEL_SWITCH0, CLC_SWITCH_KEYS_LEN,
		conn->sw_key_rx);
	clc_mac(keys->mine, t, NTBSMC_KEY_LABEL_SWITCH1, CLC_SWITCH_KEYS_LEN,
		conn->sw_key_rx + NTBSMC_MAC_LEN);
}

/* The highest version this namespace offers (sysctl switch). */
static u8 clc_version_max(struct net *net)
{
	return READ_ONCE(ntbsmc_net(net)->switch_on) ? NTBSMC_CLC_VERSION :
						       NTBSMC_CLC_VERSION_MIN;
}

/* No usable link to @peer_sysid: why, as a reason. */
static int no_link_reason(struct net *net, const u8 *peer_sysid)
{
	return ntbsmc_dev_no_link_reason(net, peer_sysid) ?: NTBSMC_REASON_NO_FABRIC;
}

static int conn_alloc_reason(long err)
{
	if (err == -ENOBUFS)
		return NTBSMC_REASON_NO_BUFFER;
	if (err == -ENOLINK)
		return NTBSMC_REASON_LINK_DOWN;
	return NTBSMC_REASON_NO_MEMORY;
}

/* ---- the SMC-shaped first messages ---- */

/*
 * The client declines an ACCEPT whose MAC it could check, under its own MAC:
 * "I did not attach to your buffer", which the server believes only so.
 */
static int clc_decline_mac(struct clc_io *io, struct clc_transcript *t,
			   const u8 key[NTBSMC_SECRET_LEN], u32 reason)
{
	struct ntbsmc_clc_decline_mac *d = &t->fin.dec;

	memset(d, 0, sizeof(*d));
	d->reason = cpu_to_be32(reason);
	clc_send_mac(io, t, d, NTBSMC_CLC_DECLINE_MAC, key, NTBSMC_MAC_LABEL_DECLINE,
		     CLC_MAC_DECLINE);
	return reason;
}

static int clc_lost_link(struct ntbsmc_sock *ctx, struct ntbsmc_conn *conn);

/*
 * Ends a handshake that holds @conn: on success it carries the socket's data,
 * unless its link went first (then it moves to TCP with the peer). A socket
 * that closed meanwhile ends it as close() would have: the peer reads EOF; one
 * that was destroyed resets it.
 */
static int clc_finish(struct ntbsmc_sock *ctx, struct ntbsmc_conn *conn, int rc)
{
	int dead;

	if (rc) {
		ntbsmc_conn_release(conn, true);
		ntbsmc_fault_delay(NTBSMC_FAULT_HS_FAIL_DELAY, ctx->sk);
		return rc;
	}
	ntbsmc_tx_mirror_init(conn);
	if (!ntbsmc_conn_established(conn))
		return clc_lost_link(ctx, conn);
	dead = ntbsmc_sock_set_conn(ctx, conn);
	if (dead)
		ntbsmc_conn_release(conn, dead == NTBSMC_SOCK_DESTROYED);
	return 0;
}

static void smc_decline(struct ntbsmc_smc_decline *d, const char *id)
{
	memset(d, 0, sizeof(*d));
	memcpy(d->eyecatcher, NTBSMC_SMC_EYECATCHER, 4);
	d->type = NTBSMC_SMC_DECLINE;
	d->length = cpu_to_be16(sizeof(*d));
	d->version = NTBSMC_SMC_V1;
	memcpy(d->id_for_peer, id, 8);
	d->peer_diagnosis = cpu_to_be32(NTBSMC_SMC_PEERNOSMC);
	memcpy(d->trailer, NTBSMC_SMC_EYECATCHER, 4);
}

/* ---- client ---- */

/*
 * Waits for the server's answer to HELLO: a CHALLENGE, or an older server's
 * HELLO_ACK, into @msg (room for a CHALLENGE; its header says which). Returns
 * 0, a fallback reason, or -errno.
 */
static int client_wait_answer(struct clc_io *io, void *msg)
{
	/* magic, type (either answer: tested apart), framing version */
	static const u8 prefix[] = { 'N', 'T', 'B', 'S', 0, NTBSMC_CLC_FRAME_VERSION };
	u8 got[sizeof(prefix)];
	int n, i, rc;

	/*
	 * A Linux SMC server took our HELLO for a DECLINE and fell back: it never
	 * answers, its application may speak first. Look without consuming: a first
	 * byte that is not ours means exactly that.
	 */
	for (n = 1; n <= sizeof(got); n++) {
		rc = io_wait(io, n);
		if (rc == -ETIMEDOUT)
			return NTBSMC_REASON_TIMEOUT;
		if (rc)
			return rc;
		n = min_t(int, tcp_inq(io->sk), sizeof(got));
		rc = io_peek(io, got, n);
		if (rc)
			return rc;
		for (i = 0; i < n; i++) {
			bool ours = i == 4 ? got[i] == NTBSMC_CLC_CHALLENGE ||
					     got[i] == NTBSMC_CLC_HELLO_ACK :
					     got[i] == prefix[i];

			if (!ours)
				return NTBSMC_REASON_PEER_SMC;
		}
	}
	rc = clc_recv(io, msg, got[4]);
	return rc == NTBSMC_REASON_DECLINED ? -EPROTO : rc;	/* a HELLO is never declined */
}

/*
 * The client's side, from the server's checked ACCEPT on: our buffer, our
 * attach to the server's, and the CONFIRM that names ours. Nothing of ours was
 * allocated before; a failure before the CONFIRM declines under our MAC (we did
 * not attach), after it the buffer is held.
 */
static int client_confirm(struct ntbsmc_sock *ctx, struct clc_io *io,
			  struct clc_transcript *t, struct ntbsmc_dev *dev,
			  const struct ntbsmc_link_keys *keys)
{
	struct ntbsmc_conn *conn;
	int rc;

	conn = ntbsmc_conn_alloc(dev, ctx->sk);
	if (IS_ERR(conn))
		return clc_decline_mac(io, t, keys->peer, conn_alloc_reason(PTR_ERR(conn)));
	/*
	 * Also after our deadline, or with TCP gone: the server holds the slot it
	 * told us of until we acknowledge or it can no longer be attached to
	 * (NTBSMC_HOLD_MS, longer than any handshake), so it is still ours to
	 * write, and the ABORT that follows an attach lets the server free it.
	 */
	rc = ntbsmc_conn_attach(conn, &t->acc.rmb);
	if (rc) {
		ntbsmc_conn_release(conn, true);	/* not exposed: freed now */
		return clc_decline_mac(io, t, keys->peer, rc == -ESTALE ?
				       NTBSMC_REASON_LINK_DOWN : NTBSMC_REASON_PROTOCOL);
	}
	/*
	 * Closed meanwhile: no CONFIRM, our buffer was never named. Attached all
	 * the same, so that our ABORT reaches the server, which holds its slot
	 * until it hears from us.
	 */
	if (ntbsmc_sock_dead(ctx))
		return clc_finish(ctx, conn, -ESHUTDOWN);
	fill_rmb(&t->fin.conf.rmb, conn);
	/*
	 * Named from here, even if the send fails half-way: held until the
	 * server attached and let go, or can no longer attach.
	 */
	ntbsmc_conn_expose(conn, true);
	rc = clc_send_mac(io, t, &t->fin.conf, NTBSMC_CLC_CONFIRM, keys->peer,
			  NTBSMC_MAC_LABEL_CONFIRM, CLC_MAC_CONFIRM);
	if (!rc)
		clc_switch_keys(conn, t, keys, t->prop.version);
	ntbsmc_fault_delay(NTBSMC_FAULT_CLIENT_CONFIRM_DELAY, ctx->sk);
	return clc_finish(ctx, conn, rc);
}

int ntbsmc_clc_client(struct ntbsmc_sock *ctx)
{
	struct net *net = sock_net(ctx->sk);
	struct ntbsmc_net *nn = ntbsmc_net(net);
	struct ntbsmc_link_keys keys;
	struct clc_transcript t = {};
	struct ntbsmc_clc_proposal *prop = &t.prop;
	struct ntbsmc_dev *dev;
	struct clc_io io;
	u8 version;
	int rc;

	if (!tcp_sk(ctx->sk)->syn_smc)
		return READ_ONCE(nn->enabled) ? NTBSMC_REASON_PEER_NO_OFFER :
						NTBSMC_REASON_DISABLED;
	if (ntbsmc_fault(NTBSMC_FAULT_RAW_HANDSHAKE, ctx->sk))
		return NTBSMC_REASON_DISABLED;	/* the program speaks for itself */
	/* before io_init(): the delay is the client's, not the server's late answer */
	ntbsmc_fault_delay(NTBSMC_FAULT_CLIENT_HELLO_DELAY, ctx->sk);
	io_init(&io, ctx);
	if (ntbsmc_fault(NTBSMC_FAULT_CLIENT_SILENT, ctx->sk)) {
		io_wait(&io, INT_MAX);
		return NTBSMC_REASON_TIMEOUT;
	}
	smc_decline(&t.hello, NTBSMC_HELLO_ID);
	t.hello.reserved[0] = clc_version_max(net);
	rc = io_send(&io, &t.hello, sizeof(t.hello));
	if (rc)
		return rc;
	ntbsmc_fault_delay(NTBSMC_FAULT_CLIENT_ANSWER_DELAY, ctx->sk);
	rc = client_wait_answer(&io, &t.chal);
	if (rc)
		return rc;
	/* A server older than the proof: it would believe anyone. */
	if (t.chal.hdr.type == NTBSMC_CLC_HELLO_ACK)
		return clc_decline(&io, NTBSMC_REASON_AUTH);
	/* the highest version both speak */
	version = min(t.hello.reserved[0], t.chal.version_max);
	if (version < t.chal.version_min || version < NTBSMC_CLC_VERSION_MIN)
		return clc_decline(&io, NTBSMC_REASON_VERSION);

	/* The server is ntbsmc: from here on a timeout resets, it never falls back. */
	io_init(&io, ctx);
	dev = ntbsmc_dev_find_active(net, NULL, t.chal.sysid);
	if (!dev)
		return clc_decline(&io, no_link_reason(net, t.chal.sysid));
	if (ntbsmc_dev_link_keys(dev, &keys)) {
		ntbsmc_dev_put(dev);
		return clc_decline(&io, NTBSMC_REASON_LINK_DOWN);
	}

	/* Our proof, and nothing allocated: the server has proved nothing yet. */
	clc_tcp_id(ctx->sk, true, &t.id);
	prop->version = version;
	memcpy(prop->sysid, nn->sysid, NTBSMC_ID_LEN);
	memcpy(prop->fabric_id, dev->fabric_id, NTBSMC_ID_LEN);
	get_random_bytes(prop->nonce, sizeof(prop->nonce));
	rc = clc_send_mac(&io, &t, prop, NTBSMC_CLC_PROPOSAL, keys.peer,
			  NTBSMC_MAC_LABEL_PROPOSAL, CLC_MAC_PROPOSAL);
	if (rc)
		goto out;
	/* a DECLINE here changes nothing: we named no buffer */
	rc = clc_recv(&io, &t.acc, NTBSMC_CLC_ACCEPT);
	if (rc)
		goto out;
	/*
	 * Only the server on the other end of the link, on this TCP connection,
	 * knows our secret and both nonces. A forged ACCEPT is declined before
	 * we allocate anything or write into the window it names.
	 */
	if (!clc_mac_ok(keys.mine, &t, NTBSMC_MAC_LABEL_ACCEPT, CLC_MAC_ACCEPT)) {
		rc = clc_decline_mac(&io, &t, keys.peer, NTBSMC_REASON_AUTH);
		goto out;
	}
	rc = client_confirm(ctx, &io, &t, dev, &keys);
out:
	ntbsmc_dev_put(dev);	/* a connection holds its own */
	memzero_explicit(&keys, sizeof(keys));
	return rc;
}

/* ---- server ---- */

/*
 * The client's first message: our HELLO (an SMC DECLINE with our marker), or a
 * Linux SMC client's PROPOSAL, which is consumed and declined the SMC way.
 */
static int server_first_message(struct clc_io *io, struct ntbsmc_smc_decline *hello)
{
	struct ntbsmc_smc_decline d;
	u8 hdr[8];
	u16 len;
	int rc;

	rc = io_wait(io, sizeof(hdr));
	if (rc)
		return rc;
	rc = io_peek(io, hdr, sizeof(hdr));
	if (rc)
		return rc;
	if (memcmp(hdr, NTBSMC_SMC_EYECATCHER, 4))
		return -EPROTO;
	len = get_unaligned_be16(hdr + 5);
	if (len < sizeof(hdr) || len > NTBSMC_SMC_MAX_LEN)
		return -EPROTO;
	if (hdr[4] == NTBSMC_SMC_DECLINE && len == sizeof(d)) {
		rc = io_read(io, &d, sizeof(d));
		if (rc)
			return rc;
		if (!memcmp(d.id_for_peer, NTBSMC_HELLO_ID, 8) &&
		    !memcmp(d.trailer, NTBSMC_SMC_EYECATCHER, 4)) {
			*hello = d;			/* our HELLO */
			return 0;
		}
		return NTBSMC_REASON_PEER_SMC;	/* an SMC client declined */
	}
	if (hdr[4] != NTBSMC_SMC_PROPOSAL && hdr[4] != NTBSMC_SMC_DECLINE)
		return -EPROTO;
	/*
	 * A Linux SMC client: its PROPOSAL (or, without SMC devices, its DECLINE) is
	 * consumed whole; a PROPOSAL is declined the SMC way; both ends use TCP.
	 */
	while (len) {
		u8 chunk[64];
		int n = min_t(int, len, sizeof(chunk));

		rc = io_read(io, chunk, n);
		if (rc)
			return rc;
		len -= n;
	}
	if (hdr[4] == NTBSMC_SMC_DECLINE)
		return NTBSMC_REASON_PEER_SMC;
	smc_decline(&d, "\0\0\0\0\0\0\0\0");
	rc = io_send(io, &d, sizeof(d));
	return rc ?: NTBSMC_REASON_PEER_SMC;
}

/*
 * A client older than the proof: offered only our version, it declines (reason
 * version), and we fall back with ours.
 */
static int server_legacy_client(struct clc_io *io, const u8 *sysid)
{
	struct ntbsmc_clc_hello_ack ack = {
		.version_min = NTBSMC_CLC_VERSION,
		.version_max = NTBSMC_CLC_VERSION,
	};
	struct ntbsmc_clc_decline dec;
	int rc;

	memcpy(ack.sysid, sysid, NTBSMC_ID_LEN);
	rc = clc_send(io, &ack, NTBSMC_CLC_HELLO_ACK);
	if (rc)
		return rc;
	rc = clc_recv(io, &dec, NTBSMC_CLC_DECLINE);
	return rc == NTBSMC_REASON_DECLINED ? NTBSMC_REASON_AUTH : rc;
}

/*
 * The link a PROPOSAL names, or why not. A client only proposes over a link it
 * found active to us, so a system we have no link to, or an active link to it
 * on another fabric, is a claim nobody on a link would make. A link to it that
 * is down, or a device to it that we disabled, is ours to name.
 */
static struct ntbsmc_dev *server_find_link(struct net *net,
					   const struct ntbsmc_clc_proposal *prop,
					   int *reason)
{
	struct ntbsmc_dev *dev = ntbsmc_dev_find_active(net, prop->fabric_id, prop->sysid);

	if (dev)
		return dev;
	dev = ntbsmc_dev_find_active(net, NULL, prop->sysid);
	if (dev) {
		ntbsmc_dev_put(dev);
		*reason = NTBSMC_REASON_AUTH;
	} else {
		*reason = ntbsmc_dev_no_link_reason(net, prop->sysid) ?: NTBSMC_REASON_AUTH;
	}
	return NULL;
}

/*
 * The server's side, from its ACCEPT on: @conn is exposed. The client's CONFIRM
 * authorises our attach to its buffer; its DECLINE under its MAC says it did not
 * attach to ours, which we free at once. Anything else (a DECLINE without a MAC
 * that checks, a CONFIRM whose MAC does not, a timeout) resets the connection,
 * and our buffer is held until the client acknowledges or can no longer attach.
 */
static int server_confirm(struct ntbsmc_sock *ctx, struct clc_io *io,
			  struct clc_transcript *t, struct ntbsmc_conn *conn,
			  const struct ntbsmc_link_keys *keys)
{
	int rc;

	if (ntbsmc_fault(NTBSMC_FAULT_SERVER_CONFIRM_LOST, ctx->sk))
		return clc_finish(ctx, conn, -ETIMEDOUT);
	rc = clc_recv(io, &t->fin, NTBSMC_CLC_CONFIRM);
	if (rc == NTBSMC_REASON_DECLINED) {
		if (t->fin.dec.hdr.type == NTBSMC_CLC_DECLINE_MAC &&
		    clc_mac_ok(keys->mine, t, NTBSMC_MAC_LABEL_DECLINE, CLC_MAC_DECLINE)) {
			ntbsmc_conn_expose(conn, false);
			return clc_finish(ctx, conn, rc);
		}
		return clc_finish(ctx, conn, -EPROTO);	/* not believed */
	}
	if (rc)
		return clc_finish(ctx, conn, rc > 0 ? -EPROTO : rc);
	if (!clc_mac_ok(keys->mine, t, NTBSMC_MAC_LABEL_CONFIRM, CLC_MAC_CONFIRM))
		return clc_finish(ctx, conn, -EPROTO);
	/* the client attached to ours before it sent the CONFIRM */
	ntbsmc_conn_peer_attached(conn);
	clc_switch_keys(conn, t, keys, t->prop.version);
	ntbsmc_fault_delay(NTBSMC_FAULT_SERVER_ATTACH_DELAY, ctx->sk);
	/*
	 * The client runs over NTB now: a buffer we cannot attach to resets
	 * the connection, as nothing can fall back any more; a link that went
	 * moves both to TCP.
	 */
	rc = ntbsmc_conn_attach(conn, &t->fin.conf.rmb);
	if (rc == -ESTALE)
		return clc_lost_link(ctx, conn);
	return clc_finish(ctx, conn, rc ? -EPROTO : 0);
}

/*
 * The link went after this end committed to NTB (the client sent its CONFIRM,
 * the server checked it) and before the connection was established. The peer
 * may run over NTB already, and moves to TCP as any connection of the link
 * does (Documentation/switch.md): so do we, from the handshake. We sent nothing
 * over NTB and take nothing the peer wrote into our buffer: our SWITCH says 0
 * both ways, the peer sends it all again on TCP, after its own SWITCH, and the
 * socket falls back (link_down) with its TCP stream whole. Version 6 has no
 * SWITCH: both ends reset, as their established connections do.
 */
static int clc_lost_link(struct ntbsmc_sock *ctx, struct ntbsmc_conn *conn)
{
	struct ntbsmc_switch_msg mine = { .seq = 1 }, peer = {};
	int rc;

	if (conn->version < NTBSMC_CLC_VERSION_SWITCH)
		return clc_finish(ctx, conn, -ENOLINK);
	rc = ntbsmc_clc_switch(ctx, conn, &mine, &peer);
	/* it cannot have received what we never sent */
	if (!rc && peer.rx_end)
		rc = -EPROTO;
	return clc_finish(ctx, conn, rc ?: NTBSMC_REASON_LINK_DOWN);
}

int ntbsmc_clc_server(struct ntbsmc_sock *ctx)
{
	struct sock *sk = ctx->sk;
	struct net *net = sock_net(sk);
	struct ntbsmc_net *nn = ntbsmc_net(net);
	struct clc_transcript t = {};
	struct ntbsmc_clc_challenge *chal = &t.chal;
	struct ntbsmc_clc_accept *acc = &t.acc;
	struct ntbsmc_link_keys keys;
	unsigned long answer_by;
	struct ntbsmc_conn *conn;
	struct ntbsmc_dev *dev;
	struct clc_io io;
	int rc;

	ntbsmc_fault_delay(NTBSMC_FAULT_SERVER_HELLO_DELAY, sk);
	io_init_server(&io, ctx);
	/* The child may still be in SYN_RECV: wait for the final state. */
	wait_event_timeout(ctx->hs_wq, READ_ONCE(sk->sk_state) != TCP_SYN_RECV,
			   max(0L, (long)(io.deadline - jiffies)));
	if (READ_ONCE(sk->sk_state) != TCP_ESTABLISHED &&
	    READ_ONCE(sk->sk_state) != TCP_CLOSE_WAIT)
		return NTBSMC_REASON_PEER_NO_OFFER;
	if (!tcp_sk(sk)->syn_smc)
		return READ_ONCE(nn->enabled) ? NTBSMC_REASON_PEER_NO_OFFER :
						NTBSMC_REASON_DISABLED;
	if (ntbsmc_fault(NTBSMC_FAULT_RAW_HANDSHAKE, sk))
		return NTBSMC_REASON_DISABLED;	/* the program speaks for itself */

	rc = server_first_message(&io, &t.hello);
	if (rc)
		return rc;
	/*
	 * The client closed right after its HELLO (its FIN is here): an answer
	 * would reach a closed socket, whose TCP resets the connection, and our
	 * application would read ECONNRESET where TCP gives EOF.
	 */
	if (sock_flag(sk, SOCK_DONE) && !tcp_inq(sk))
		return -ESHUTDOWN;
	answer_by = ctx->hs_start +
		    msecs_to_jiffies(READ_ONCE(nn->handshake_timeout_ms)) / 2;
	if (time_after(jiffies, answer_by))
		return NTBSMC_REASON_TIMEOUT;	/* the client gave up or will: silence */
	if (t.hello.reserved[0] < NTBSMC_CLC_VERSION_CHALLENGE)
		return server_legacy_client(&io, nn->sysid);

	/* Says nothing of us but who we claim to be: nothing is allocated yet. */
	chal->version_min = NTBSMC_CLC_VERSION_MIN;
	chal->version_max = clc_version_max(net);
	if (ntbsmc_fault(NTBSMC_FAULT_SERVER_VERSION, sk)) {
		chal->version_min = NTBSMC_CLC_VERSION + 1;	/* none the client speaks */
		chal->version_max = NTBSMC_CLC_VERSION + 1;
	}
	memcpy(chal->sysid, nn->sysid, NTBSMC_ID_LEN);
	get_random_bytes(chal->nonce, sizeof(chal->nonce));
	rc = clc_send(&io, chal, NTBSMC_CLC_CHALLENGE);
	if (rc)
		return rc;

	/* PROPOSAL and CONFIRM by the same deadline: the client has half of it */
	rc = clc_recv(&io, &t.prop, NTBSMC_CLC_PROPOSAL);
	/* a client of version 4 or 5 declines our CHALLENGE: no common version */
	if (rc == NTBSMC_REASON_DECLINED && t.hello.reserved[0] < NTBSMC_CLC_VERSION_MIN)
		return NTBSMC_REASON_VERSION;
	if (rc)
		return rc;
	if (ctx->hs_congested)		/* beyond max_handshakes (hs_count()) */
		return clc_decline(&io, NTBSMC_REASON_CONGESTED);
	/* A HELLO is never declined: the first answer that may decline */
	if (!ntbsmc_policy_offers_sk(sk))
		return clc_decline(&io, NTBSMC_REASON_POLICY);
	dev = server_find_link(net, &t.prop, &rc);
	if (!dev)
		return clc_decline(&io, rc);
	if (ntbsmc_dev_link_keys(dev, &keys)) {
		ntbsmc_dev_put(dev);
		return clc_decline(&io, NTBSMC_REASON_LINK_DOWN);
	}
	/*
	 * The proof, before anything is allocated for the client or written into
	 * its window: only a host that reads our link's window knows our secret,
	 * our nonce makes every PROPOSAL new, and the identity covers the TCP
	 * connection as we see it.
	 */
	clc_tcp_id(sk, false, &t.id);
	if (!clc_mac_ok(keys.mine, &t, NTBSMC_MAC_LABEL_PROPOSAL, CLC_MAC_PROPOSAL)) {
		ntbsmc_dev_put(dev);
		rc = clc_decline(&io, NTBSMC_REASON_AUTH);
		goto out;
	}
	/* one we offered and the client speaks (the MAC covers both) */
	if (t.prop.version < chal->version_min || t.prop.version > chal->version_max ||
	    t.prop.version > t.hello.reserved[0]) {
		ntbsmc_dev_put(dev);
		rc = clc_decline(&io, NTBSMC_REASON_VERSION);
		goto out;
	}
	conn = ntbsmc_conn_alloc(dev, sk);
	ntbsmc_dev_put(dev);
	if (IS_ERR(conn)) {
		rc = clc_decline(&io, conn_alloc_reason(PTR_ERR(conn)));
		goto out;
	}
	ntbsmc_fault_delay(NTBSMC_FAULT_SERVER_ACCEPT_DELAY, sk);
	fill_rmb(&acc->rmb, conn);
	/* named from here, even if the send fails half-way */
	ntbsmc_conn_expose(conn, true);
	rc = clc_send_mac(&io, &t, acc, NTBSMC_CLC_ACCEPT, keys.peer,
			  NTBSMC_MAC_LABEL_ACCEPT, CLC_MAC_ACCEPT);
	if (rc)
		rc = clc_finish(ctx, conn, rc);
	else
		rc = server_confirm(ctx, &io, &t, conn, &keys);
out:
	memzero_explicit(&keys, sizeof(keys));
	return rc;
}

/* ---- version 7: SWITCH (Documentation/switch.md) ---- */

#ifdef CONFIG_NTBSMC_FAULT_INJECTION
/* The relay of fault point switch_replay: the last SWITCH this kernel sent. */
static DEFINE_SPINLOCK(switch_rec_lock);
static struct ntbsmc_clc_switch switch_rec;
static bool switch_rec_valid;

static void switch_record(struct sock *sk, struct ntbsmc_clc_switch *out)
{
	bool replay = ntbsmc_fault(NTBSMC_FAULT_SWITCH_REPLAY, sk);
	struct ntbsmc_clc_switch mine = *out;

	spin_lock_bh(&switch_rec_lock);
	if (replay && switch_rec_valid)
		*out = switch_rec;
	switch_rec = mine;
	switch_rec_valid = true;
	spin_unlock_bh(&switch_rec_lock);
}
#else
static void switch_record(struct sock *sk, struct ntbsmc_clc_switch *out)
{
}
#endif

/* MAC(@key, "ntbsmc7S" @m[..mac]) into @mac, as wire.h defines it. */
static void clc_switch_mac(const u8 key[NTBSMC_SECRET_LEN], const struct ntbsmc_clc_switch *m,
			   u8 mac[NTBSMC_MAC_LEN])
{
	struct {
		u8 label[8];
		struct ntbsmc_clc_switch m;
	} __packed b;

	memcpy(b.label, NTBSMC_MAC_LABEL_SWITCH, sizeof(b.label));
	b.m = *m;
	mac_of(key, &b, sizeof(b.label) + offsetof(struct ntbsmc_clc_switch, mac), mac);
}

/*
 * Sends our SWITCH (@mine) on the connection's TCP connection and reads the
 * peer's into @peer, within switch_timeout_ms: its framing, its MAC under the
 * peer's switch key, and that it is the switch we are in (@mine->seq). Anything
 * else is -EPROTO: a relay can neither forge one nor replay another
 * connection's, or this one's earlier. The socket's data_ready and
 * state_change hooks wake ctx->hs_wq meanwhile.
 */
int ntbsmc_clc_switch(struct ntbsmc_sock *ctx, struct ntbsmc_conn *conn,
		      const struct ntbsmc_switch_msg *mine, struct ntbsmc_switch_msg *peer)
{
	struct ntbsmc_net *nn = ntbsmc_net(sock_net(ctx->sk));
	struct ntbsmc_clc_switch out = {}, in;
	u8 want[NTBSMC_MAC_LEN];
	struct clc_io io;
	int rc;

	io.ctx = ctx;
	io.sk = ctx->sk;
	io.deadline = jiffies + msecs_to_jiffies(READ_ONCE(nn->switch_timeout_ms));
	out.seq = mine->seq;
	out.flags = mine->flags;
	out.rx_end = cpu_to_be64(mine->rx_end);
	out.tx_end = cpu_to_be64(mine->tx_end);
	clc_hdr(&out, NTBSMC_CLC_SWITCH, sizeof(out));
	clc_switch_mac(conn->sw_key_tx, &out, out.mac);
	if (ntbsmc_fault(NTBSMC_FAULT_SWITCH_BAD_MAC, ctx->sk))
		out.mac[0] ^= 1;
	switch_record(ctx->sk, &out);
	rc = io_send(&io, &out, sizeof(out));
	if (rc)
		return rc;
	ntbsmc_fault_delay(NTBSMC_FAULT_SWITCH_DELAY, ctx->sk);
	rc = clc_recv(&io, &in, NTBSMC_CLC_SWITCH);
	if (rc)
		return rc > 0 ? -EPROTO : rc;	/* a DECLINE has no place here */
	if (in.hdr.type != NTBSMC_CLC_SWITCH)
		return -EPROTO;
	clc_switch_mac(conn->sw_key_rx, &in, want);
	if (!mac_matches(want, in.mac) || in.seq != mine->seq ||
	    (in.flags & ~NTBSMC_SWITCH_WRITE_DONE))
		return -EPROTO;
	peer->seq = in.seq;
	peer->flags = in.flags;
	peer->rx_end = be64_to_cpu(in.rx_end);
	peer->tx_end = be64_to_cpu(in.tx_end);
	return 0;
}
