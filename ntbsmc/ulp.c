// SPDX-License-Identifier: GPL-2.0
/* ntbsmc: the TCP upper-layer protocol: socket behaviour and mode switches. */

/*
 * Like kTLS, ntbsmc keeps the TCP socket and swaps its sk_prot and socket ops:
 *
 *   ACTIVE    while the handshake runs and in NTB mode: our tables, which pass
 *             anything that is not ours to TCP's;
 *   FALLBACK  plain TCP: TCP's own tables, but for getsockopt, so that the
 *             application can still ask why (the data path is TCP's, untouched).
 *
 * A listening socket stays ACTIVE; each accepted child gets its own context in
 * ->clone() and its handshake starts as soon as TCP established it, before accept().
 */

#include <linux/module.h>
#include <linux/sched/signal.h>
#include <net/tcp.h>
#include <linux/ioctl.h>
#include <asm/ioctls.h>
#include <net/inet_common.h>
#include <net/transp_v6.h>
#include "ntbsmc.h"
#include "fault.h"

enum { NTBSMC_V4, NTBSMC_V6, NTBSMC_NFAM };
enum { NTBSMC_ACTIVE, NTBSMC_FALLBACK, NTBSMC_NCONF };

static struct proto ntbsmc_prots[NTBSMC_NFAM][NTBSMC_NCONF];
static struct proto_ops ntbsmc_proto_ops[NTBSMC_NFAM];
static const struct proto *saved_tcpv6_prot;
static DEFINE_MUTEX(ntbsmc_prot_lock);

LIST_HEAD(ntbsmc_socks);
DEFINE_SPINLOCK(ntbsmc_socks_lock);	/* _bh: children are listed from softirq */

static struct ntbsmc_sock *ntbsmc_ctx(const struct sock *sk)
{
	return (__force struct ntbsmc_sock *)inet_csk(sk)->icsk_ulp_data;
}

static int sk_fam(const struct sock *sk)
{
	return sk->sk_family == AF_INET6 ? NTBSMC_V6 : NTBSMC_V4;
}

static void ctx_put(struct ntbsmc_sock *ctx)
{
	if (refcount_dec_and_test(&ctx->ref)) {
		kvfree(ctx->sw_keep);
		kfree_rcu(ctx, rcu);
	}
}

/*
 * NTBSMC_INFO_F_* of a socket and its connection (@conn may be NULL), for
 * NTBSMC_INFO and the connection dump: under the socket lock or
 * ntbsmc_socks_lock, and neither field changes back.
 */
u32 ntbsmc_info_flags(const struct ntbsmc_sock *ctx, const struct ntbsmc_conn *conn)
{
	u32 flags = 0;

	if (conn && conn->mirror)
		flags |= NTBSMC_INFO_F_SWITCH;
	if (READ_ONCE(ctx->sw_time))
		flags |= NTBSMC_INFO_F_FAILED_OVER;
	return flags;
}

int ntbsmc_sock_dead(struct ntbsmc_sock *ctx)
{
	return READ_ONCE(ctx->dead);
}

/*
 * The handshake set up @conn for the socket: it carries the socket's data from
 * now on, unless the socket closed or was destroyed meanwhile; then the caller
 * keeps @conn and gets the NTBSMC_SOCK_* that ended the socket.
 */
int ntbsmc_sock_set_conn(struct ntbsmc_sock *ctx, struct ntbsmc_conn *conn)
{
	int dead;

	spin_lock_bh(&ntbsmc_socks_lock);
	dead = ctx->dead;
	if (!dead)
		rcu_assign_pointer(ctx->conn, conn);	/* the dump reads it locklessly */
	spin_unlock_bh(&ntbsmc_socks_lock);
	return dead;
}

/*
 * The socket's NTB connection, if it runs over NTB: the mode is published after
 * the connection (ctx_finish()), so a reader without the socket lock (poll,
 * ioctl) that sees NTB mode sees the connection too.
 */
static struct ntbsmc_conn *ctx_conn(struct ntbsmc_sock *ctx)
{
	if (smp_load_acquire(&ctx->mode) != NTBSMC_MODE_NTB)	/* pairs: ctx_finish() */
		return NULL;
	/* no RCU read side: the caller's file keeps close(), which takes it, away */
	return rcu_dereference_check(ctx->conn, true);
}

/* In NTB mode, socket locked: set before the mode, cleared only by close(). */
static struct ntbsmc_conn *ctx_conn_locked(struct sock *sk, struct ntbsmc_sock *ctx)
{
	return rcu_dereference_protected(ctx->conn, lockdep_sock_is_held(sk));
}

/* ---- callbacks while the handshake runs ---- */

static void ntbsmc_data_ready(struct sock *sk)
{
	struct ntbsmc_sock *ctx;

	read_lock_bh(&sk->sk_callback_lock);
	ctx = ntbsmc_ctx(sk);
	if (ctx) {
		wake_up_all(&ctx->hs_wq);
		ctx->saved_data_ready(sk);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

static void ntbsmc_write_space(struct sock *sk)
{
	struct ntbsmc_sock *ctx;

	read_lock_bh(&sk->sk_callback_lock);
	ctx = ntbsmc_ctx(sk);
	if (ctx) {
		wake_up_all(&ctx->hs_wq);
		ctx->saved_write_space(sk);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

static void ntbsmc_state_change(struct sock *sk)
{
	struct ntbsmc_sock *ctx;

	read_lock_bh(&sk->sk_callback_lock);
	ctx = ntbsmc_ctx(sk);
	if (ctx) {
		/* A client's handshake starts when its connect completes. */
		if (ctx->client && READ_ONCE(ctx->mode) == NTBSMC_MODE_HANDSHAKE &&
		    sk->sk_state == TCP_ESTABLISHED && !ctx->hs_started) {
			ctx->hs_started = true;
			ctx->hs_start = jiffies;
			/* put in ntbsmc_hs_work(); bounded by ntbsmc_connect() */
			atomic_inc(&ntbsmc_net(sock_net(sk))->client_handshakes);
			ctx->hs_counted = true;
			refcount_inc(&ctx->ref);	/* put by hs_work */
			sock_hold(sk);			/* put by hs_work */
			queue_work(ntbsmc_net(sock_net(sk))->hs_wq, &ctx->hs_work);
		}
		wake_up_all(&ctx->hs_wq);
		ctx->saved_state_change(sk);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

/*
 * @from: the context whose callbacks the socket may have copied (a child's
 * listener): ours are never saved as the socket's own, which would recurse.
 */
static void ctx_hook(struct ntbsmc_sock *ctx, struct sock *sk, struct ntbsmc_sock *from)
{
	ctx->saved_data_ready = sk->sk_data_ready;
	ctx->saved_write_space = sk->sk_write_space;
	ctx->saved_state_change = sk->sk_state_change;
	if (from && ctx->saved_data_ready == ntbsmc_data_ready)
		ctx->saved_data_ready = from->saved_data_ready;
	if (from && ctx->saved_state_change == ntbsmc_state_change)
		ctx->saved_state_change = from->saved_state_change;
	if (from && ctx->saved_write_space == ntbsmc_write_space)
		ctx->saved_write_space = from->saved_write_space;
	sk->sk_data_ready = ntbsmc_data_ready;
	sk->sk_state_change = ntbsmc_state_change;
	sk->sk_write_space = ntbsmc_write_space;
}

static void ctx_unhook(struct ntbsmc_sock *ctx, struct sock *sk)
{
	write_lock_bh(&sk->sk_callback_lock);
	if (sk->sk_data_ready == ntbsmc_data_ready)
		sk->sk_data_ready = ctx->saved_data_ready;
	if (sk->sk_state_change == ntbsmc_state_change)
		sk->sk_state_change = ctx->saved_state_change;
	if (sk->sk_write_space == ntbsmc_write_space)
		sk->sk_write_space = ctx->saved_write_space;
	write_unlock_bh(&sk->sk_callback_lock);
}

static void ntbsmc_hs_work(struct work_struct *work);
static void ntbsmc_sw_work(struct work_struct *work);

/*
 * Contexts for children whose atomic allocation fails. A child whose SYN-ACK
 * offered ntbsmc must run a handshake: as plain TCP, its application would
 * read the client's HELLO. The reserve is refilled in process context; a SYN
 * that finds it empty is answered without the offer (ntbsmc_hs_congested()),
 * so only more failures than it holds within one round trip leave a child
 * without a context.
 */
#define CTX_RESERVE	64

static DEFINE_SPINLOCK(ctx_reserve_lock);
static void *ctx_reserve[CTX_RESERVE];
static unsigned int ctx_reserved;	/* under ctx_reserve_lock; read racily */

static void ctx_reserve_fill(struct work_struct *work)
{
	void *p;

	for (;;) {
		p = kzalloc(sizeof(struct ntbsmc_sock), GFP_KERNEL);
		if (!p)
			return;
		spin_lock_bh(&ctx_reserve_lock);
		if (ctx_reserved < CTX_RESERVE) {
			ctx_reserve[ctx_reserved++] = p;
			p = NULL;
		}
		spin_unlock_bh(&ctx_reserve_lock);
		if (p) {
			kfree(p);
			return;
		}
	}
}

static DECLARE_WORK(ctx_reserve_work, ctx_reserve_fill);

static void *ctx_reserve_take(void)
{
	void *p = NULL;

	spin_lock_bh(&ctx_reserve_lock);
	if (ctx_reserved)
		p = ctx_reserve[--ctx_reserved];
	spin_unlock_bh(&ctx_reserve_lock);
	schedule_work(&ctx_reserve_work);
	if (p)
		memset(p, 0, sizeof(struct ntbsmc_sock));
	return p;
}

static void ctx_reserve_free(void)
{
	cancel_work_sync(&ctx_reserve_work);
	while (ctx_reserved)
		kfree(ctx_reserve[--ctx_reserved]);
}

static struct ntbsmc_sock *ctx_alloc(struct sock *sk, gfp_t gfp)
{
	struct ntbsmc_sock *ctx = NULL;

	if (gfpflags_allow_blocking(gfp) || !ntbsmc_fault(NTBSMC_FAULT_CLONE_NOMEM, sk))
		ctx = kzalloc(sizeof(*ctx), gfp | __GFP_NOWARN);
	if (!ctx && !gfpflags_allow_blocking(gfp))
		ctx = ctx_reserve_take();
	if (!ctx)
		return NULL;
	refcount_set(&ctx->ref, 1);	/* the socket's, put in ->release() */
	ctx->sk = sk;
	ctx->mode = NTBSMC_MODE_HANDSHAKE;
	init_waitqueue_head(&ctx->hs_wq);
	INIT_WORK(&ctx->hs_work, ntbsmc_hs_work);
	INIT_WORK(&ctx->sw_work, ntbsmc_sw_work);
	INIT_LIST_HEAD(&ctx->node);
	return ctx;
}

static void ctx_list(struct ntbsmc_sock *ctx)
{
	spin_lock_bh(&ntbsmc_socks_lock);
	list_add_tail(&ctx->node, &ntbsmc_socks);
	spin_unlock_bh(&ntbsmc_socks_lock);
}

/*
 * The socket closes (@how NTBSMC_SOCK_CLOSED) or is destroyed: takes its
 * connection before releasing it, so that the dump, which finds it under
 * ntbsmc_socks_lock (an RCU read side), never sees it freed; a handshake that
 * ends later finds the socket dead and changes nothing (ntbsmc_sock_set_conn()).
 */
static struct ntbsmc_conn *ctx_take_conn(struct ntbsmc_sock *ctx, int how)
{
	struct ntbsmc_conn *conn;

	spin_lock_bh(&ntbsmc_socks_lock);
	conn = rcu_dereference_protected(ctx->conn, lockdep_is_held(&ntbsmc_socks_lock));
	RCU_INIT_POINTER(ctx->conn, NULL);
	WRITE_ONCE(ctx->dead, max_t(u8, ctx->dead, how));
	spin_unlock_bh(&ntbsmc_socks_lock);
	/* a handshake waiting for the peer gives up now */
	wake_up_all(&ctx->hs_wq);
	return conn;
}

/* ---- mode switches ---- */

static void count_result(struct ntbsmc_sock *ctx)
{
	struct net *net = sock_net(ctx->sk);

	if (ctx->mode == NTBSMC_MODE_NTB) {
		ntbsmc_stat_add(net, NTBSMC_STAT_CONN_NTB, 1);
		return;
	}
	ntbsmc_stat_add(net, NTBSMC_STAT_CONN_TCP, 1);
	ntbsmc_stat_add(net, (ctx->client ? NTBSMC_STAT_FB_CLIENT : NTBSMC_STAT_FB_SERVER) +
			min_t(u32, ctx->reason, __NTBSMC_REASON_MAX - 1), 1);
}

/*
 * shutdown() in the connection's final mode, socket locked; @how is RCV_SHUTDOWN
 * and/or SEND_SHUTDOWN. TCP's half of it is inet_shutdown()'s for an established
 * socket; over NTB TCP's own shutdown is left alone: the peer learns it from us.
 */
static void shutdown_locked(struct sock *sk, struct ntbsmc_sock *ctx, int how)
{
	WRITE_ONCE(sk->sk_shutdown, sk->sk_shutdown | how);
	if (ctx->mode == NTBSMC_MODE_NTB)
		ntbsmc_conn_shutdown(ctx_conn_locked(sk, ctx), how);
	else
		sk->sk_prot->shutdown(sk, how);
}

/*
 * The connection runs over TCP from now on, for @reason: TCP's own tables but
 * for getsockopt, so that the application can still ask why.
 */
static void ctx_to_tcp(struct sock *sk, struct ntbsmc_sock *ctx, u32 reason)
{
	ctx->reason = reason;
	WRITE_ONCE(ctx->mode, NTBSMC_MODE_TCP);
	WRITE_ONCE(sk->sk_prot, &ntbsmc_prots[sk_fam(sk)][NTBSMC_FALLBACK]);
	if (sk->sk_socket)
		WRITE_ONCE(sk->sk_socket->ops, ctx->sk_ops);
}

/*
 * Why a handshake that failed with @rc (< 0) resets its connection. A TCP
 * connection that is gone itself (the peer reset it, or it failed: TCP's own
 * error is what the application reads) is the peer's doing, as a FIN is
 * (NTBSMC_REASON_PEER_CLOSED): a client that aborts its connection mid-handshake
 * (haproxy's backends, a load generator at its end) sent nothing malformed.
 */
static u32 hs_error_reason(struct sock *sk, int rc)
{
	switch (rc) {
	case -EPROTO:
		return NTBSMC_REASON_PROTOCOL;
	case -ETIMEDOUT:
		return NTBSMC_REASON_TIMEOUT;
	case -ENOLINK:
		return NTBSMC_REASON_LINK_DOWN;
	case -ENOMEM:
	case -ENOBUFS:
		return NTBSMC_REASON_NO_MEMORY;
	}
	if (READ_ONCE(sk->sk_err) || READ_ONCE(sk->sk_state) == TCP_CLOSE)
		return NTBSMC_REASON_PEER_CLOSED;
	return NTBSMC_REASON_PROTOCOL;
}

/*
 * Ends the handshake: NTB mode (rc 0), plain TCP with a reason (rc > 0), or a
 * reset TCP connection (rc < 0: the handshake bytes can no longer be accounted
 * for, so neither end may fall back). Wakes everyone who waited for it.
 */
static void ctx_finish(struct ntbsmc_sock *ctx, int rc)
{
	struct sock *sk = ctx->sk;
	bool dead;

	/*
	 * The peer closed before it sent anything of the next message: nothing is
	 * in flight either way, the application reads EOF from TCP.
	 */
	if (rc == -ESHUTDOWN)
		rc = NTBSMC_REASON_PEER_CLOSED;
	/* Closed or destroyed meanwhile: TCP's close or destruction runs its course. */
	if (ntbsmc_sock_dead(ctx)) {
		wake_up_all(&ctx->hs_wq);
		return;
	}
	if (rc < 0) {
		if (rc == -EPROTO)
			ntbsmc_stat_add(sock_net(sk), NTBSMC_STAT_HS_ERR, 1);
		ctx->reason = hs_error_reason(sk, rc);
		net_info_ratelimited("ntbsmc: handshake of port %u with port %u failed (%d, reason %u): connection reset\n",
				     ntohs(inet_sk(sk)->inet_sport), ntohs(inet_sk(sk)->inet_dport),
				     rc, ctx->reason);
		/*
		 * The application sees a reset (or a timeout), never EPROTO:
		 * NTBSMC_INFO tells it why.
		 */
		tcp_abort(sk, rc == -ETIMEDOUT ? ETIMEDOUT : ECONNRESET);
		rc = ctx->reason;
	}
	ctx_unhook(ctx, sk);
	lock_sock(sk);
	/*
	 * close() takes the socket lock; a listener's close destroys a child
	 * without it, but ->release() restores TCP's tables after it marked the
	 * context dead, under the same spinlock.
	 */
	spin_lock_bh(&ntbsmc_socks_lock);
	dead = ctx->dead;
	if (!dead && rc == 0)	/* the mode after ctx->conn: readers acquire it */
		smp_store_release(&ctx->mode, NTBSMC_MODE_NTB);
	else if (!dead)
		ctx_to_tcp(sk, ctx, rc);
	spin_unlock_bh(&ntbsmc_socks_lock);
	if (!dead && ctx->hs_shutdown && !sk->sk_err)
		shutdown_locked(sk, ctx, ctx->hs_shutdown);
	release_sock(sk);
	if (dead) {
		wake_up_all(&ctx->hs_wq);
		return;
	}
	count_result(ctx);
	wake_up_all(&ctx->hs_wq);
	/* Wake readers, writers and pollers: the socket is usable now. */
	sk->sk_state_change(sk);
	sk->sk_data_ready(sk);
	sk->sk_write_space(sk);
}

/* A child's handshake ended: its listener may close now (listener_drain()). */
static void listener_child_done(struct ntbsmc_sock *ctx)
{
	struct ntbsmc_sock *lctx = ctx->listener;

	if (ctx->hs_counted)
		atomic_dec(&ntbsmc_net(sock_net(ctx->sk))->handshakes);
	spin_lock_bh(&ntbsmc_socks_lock);
	lctx->hs_children--;
	ctx->listener = NULL;
	spin_unlock_bh(&ntbsmc_socks_lock);
	wake_up_all(&lctx->hs_wq);
	ctx_put(lctx);		/* ntbsmc_ulp_clone()'s */
}

/*
 * A listener closes: TCP's close destroys the children in its accept queue
 * under their bh lock, which must not find a handshake worker owning one. No
 * new child starts a handshake, and those running end first (each is bounded
 * by the handshake timeout).
 */
static void listener_drain(struct ntbsmc_sock *lctx)
{
	might_sleep();
	spin_lock_bh(&ntbsmc_socks_lock);
	lctx->closing = true;
	spin_unlock_bh(&ntbsmc_socks_lock);
	wait_event(lctx->hs_wq, !READ_ONCE(lctx->hs_children));
}

/*
 * listener_drain() where sleeping is not allowed: false, and the listener open
 * for handshakes again, if some are still running.
 */
static bool listener_drained(struct ntbsmc_sock *lctx)
{
	bool drained;

	spin_lock_bh(&ntbsmc_socks_lock);
	drained = !lctx->hs_children;
	lctx->closing = drained;
	spin_unlock_bh(&ntbsmc_socks_lock);
	return drained;
}

/*
 * TCP stopped a listener other than by close(): shutdown(SHUT_RD or SHUT_RDWR),
 * connect(AF_UNSPEC) or SOCK_DESTROY, after listener_drain(). If it is no
 * longer listening, the socket may connect or listen again, as plain TCP that
 * offers nothing: its SYN must not offer ntbsmc to a peer that would then wait
 * for a handshake nobody runs (a socket's handshake runs once, as on a
 * disconnected connection). Socket locked.
 */
static void listener_stopped(struct sock *sk, struct ntbsmc_sock *ctx)
{
	if (sk->sk_state != TCP_LISTEN) {
		tcp_sk(sk)->syn_smc = 0;
		ctx_to_tcp(sk, ctx, NTBSMC_REASON_DISCONNECTED);
		return;
	}
	spin_lock_bh(&ntbsmc_socks_lock);
	ctx->closing = false;		/* still listening */
	spin_unlock_bh(&ntbsmc_socks_lock);
}

/* The close() that came during the handshake, TCP's part (see hs_close_defer()). */
static void hs_close(struct ntbsmc_sock *ctx, struct sock *sk)
{
	struct proto *tcp = ctx->sk_proto;

	lock_sock(sk);
	WRITE_ONCE(sk->sk_prot, tcp);
	release_sock(sk);
	ctx_unhook(ctx, sk);
	tcp->close(sk, 0);
}

static void ntbsmc_hs_work(struct work_struct *work)
{
	struct ntbsmc_sock *ctx = container_of(work, struct ntbsmc_sock, hs_work);
	struct sock *sk = ctx->sk;
	bool close;
	int rc;

	rc = ctx->client ? ntbsmc_clc_client(ctx) : ntbsmc_clc_server(ctx);
	ctx_finish(ctx, rc);
	if (ctx->client && ctx->hs_counted)
		atomic_dec(&ntbsmc_net(sock_net(sk))->client_handshakes);
	if (ctx->listener)
		listener_child_done(ctx);
	/* set before the socket was marked dead, which ctx_finish() saw */
	spin_lock_bh(&ntbsmc_socks_lock);
	close = ctx->close_deferred;
	spin_unlock_bh(&ntbsmc_socks_lock);
	if (close)
		hs_close(ctx, sk);
	sock_put(sk);
	ctx_put(ctx);
}

/* ---- the switch of transport (Documentation/switch.md) ---- */

/*
 * The link of the socket's NTB connection @conn went, and the connection can
 * move to its TCP connection (ntbsmc_conn_failover(), which keeps what we
 * received): the switch work does the rest. @conn may be established and its
 * handshake not yet ended (ctx_finish() publishes the mode after): the work
 * waits for that. Called with @sk held. False if the socket is no longer there
 * to move (closing, destroyed): the caller resets.
 */
bool ntbsmc_ulp_switch(struct sock *sk, struct ntbsmc_conn *conn)
{
	struct ntbsmc_sock *ctx;
	bool ok = false;
	u8 mode;

	rcu_read_lock();
	ctx = rcu_dereference(inet_csk(sk)->icsk_ulp_data);
	if (ctx && !refcount_inc_not_zero(&ctx->ref))
		ctx = NULL;
	rcu_read_unlock();
	if (!ctx)
		return false;
	spin_lock_bh(&ntbsmc_socks_lock);
	mode = READ_ONCE(ctx->mode);
	if (!ctx->dead && !ctx->sw_conn &&
	    (mode == NTBSMC_MODE_HANDSHAKE ||
	     (mode == NTBSMC_MODE_NTB &&
	      conn == rcu_dereference_protected(ctx->conn,
						lockdep_is_held(&ntbsmc_socks_lock))))) {
		refcount_inc(&conn->ref);	/* the work's */
		ctx->sw_conn = conn;
		ok = true;
	}
	spin_unlock_bh(&ntbsmc_socks_lock);
	if (!ok) {
		ctx_put(ctx);
		return false;
	}
	sock_hold(sk);		/* the work's, with the context's reference */
	queue_work(ntbsmc_net(sock_net(sk))->hs_wq, &ctx->sw_work);
	return true;
}

/*
 * Sends @conn's kept bytes [@from, @to) on TCP: what the peer did not receive
 * over NTB. Without the socket lock (TCP's sendmsg takes it); by @deadline.
 */
static int sw_resend(struct ntbsmc_sock *ctx, struct ntbsmc_conn *conn, u64 from, u64 to,
		     unsigned long deadline)
{
	struct sock *sk = ctx->sk;
	u32 size = conn->peer_rmb_size;
	int sndbuf, grown = 0, rc = 0;

	/*
	 * Queued at once, whatever the peer's window: the peer's application
	 * reads it only once its own switch ended, which may wait for its own
	 * resend to us; both waiting for the other's window would hold both
	 * switches until their bound. The send buffer grows for it (up to the
	 * peer's buffer, twice for the skbs' overhead) and shrinks back after.
	 */
	lock_sock(sk);
	sndbuf = READ_ONCE(sk->sk_sndbuf);
	if (to != from) {
		grown = max_t(int, sndbuf, READ_ONCE(sk->sk_wmem_queued) + 2 * (int)(to - from) +
			      SKB_TRUESIZE(SKB_MAX_ALLOC));
		WRITE_ONCE(sk->sk_sndbuf, grown);
	}
	release_sock(sk);

	while (from != to) {
		u32 off = from & (size - 1);
		u32 n = min_t(u64, to - from, size - off);
		struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
		struct kvec vec = { conn->stage + off, n };
		long left;
		int rc;

		iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, &vec, 1, n);
		rc = ctx->sk_proto->sendmsg(sk, &msg, n);
		if (rc > 0) {
			from += rc;
			rc = 0;
			continue;
		}
		if (rc != -EAGAIN) {
			rc = rc ?: -ECONNRESET;
			break;
		}
		rc = 0;
		left = deadline - jiffies;
		if (left <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		/* (TCP's memory pressure) the write_space hook wakes us */
		wait_event_timeout(ctx->hs_wq, sk_stream_is_writeable(sk) ||
				   READ_ONCE(sk->sk_err) ||
				   (READ_ONCE(sk->sk_shutdown) & SEND_SHUTDOWN),
				   min_t(long, left, HZ / 10));
	}
	if (grown) {
		lock_sock(sk);
		if (READ_ONCE(sk->sk_sndbuf) == grown)	/* (SO_SNDBUF meanwhile: its own) */
			WRITE_ONCE(sk->sk_sndbuf, sndbuf);
		release_sock(sk);
	}
	return rc;
}

static const char *sw_why(int rc)
{
	switch (rc) {
	case -EPROTO:
		return "switch failed: bad SWITCH from the peer";
	case -ETIMEDOUT:
		return "switch failed: the peer did not answer in time";
	case -ESHUTDOWN:
		return "switch failed: the peer closed";
	}
	return "switch failed: the TCP connection failed";
}

/*
 * The move itself, once per connection: our SWITCH out, the peer's in, what it
 * did not receive sent again, our FIN if our stream had ended; then the socket
 * runs over TCP, the bytes received over NTB and not read yet first. Bounded by
 * switch_timeout_ms. A switch that fails resets the connection, TCP included:
 * its bytes could no longer be accounted for.
 */
static void ntbsmc_sw_work(struct work_struct *work)
{
	struct ntbsmc_sock *ctx = container_of(work, struct ntbsmc_sock, sw_work);
	struct ntbsmc_conn *conn = ctx->sw_conn;
	struct sock *sk = ctx->sk;
	struct net *net = sock_net(sk);
	struct ntbsmc_switch_msg mine = { .seq = 1 }, peer = {};
	unsigned long deadline, flags;
	bool moved = false;
	u64 seen_cons;
	int rc = 0;

	/*
	 * A handshake that established @conn as the link went ends at once
	 * (ctx_finish() wakes us): its hooks are gone once its mode is out.
	 */
	wait_event(ctx->hs_wq, READ_ONCE(ctx->mode) != NTBSMC_MODE_HANDSHAKE ||
		   ntbsmc_sock_dead(ctx));
	deadline = jiffies + msecs_to_jiffies(READ_ONCE(ntbsmc_net(net)->switch_timeout_ms));
	write_lock_bh(&sk->sk_callback_lock);
	ctx_hook(ctx, sk, NULL);	/* io_wait() and sw_resend() are woken */
	write_unlock_bh(&sk->sk_callback_lock);

	/*
	 * Not under the socket lock, which a sender may hold while an engine
	 * keeps its segments: what we say was fixed by ntbsmc_conn_failover().
	 */
	mine.rx_end = conn->sw_rx_end;
	mine.tx_end = conn->sw_tx_end;
	seen_cons = READ_ONCE(conn->peer_cons);
	/*
	 * A stream that ended over NTB (shutdown(SHUT_WR)) has not ended on TCP:
	 * TCP may send our SWITCH and the resend, then its FIN (below). Any
	 * sender waits for us meanwhile, and shutdown() too.
	 */
	lock_sock(sk);
	if (sk->sk_shutdown & SEND_SHUTDOWN)
		mine.flags |= NTBSMC_SWITCH_WRITE_DONE;
	WRITE_ONCE(sk->sk_shutdown, sk->sk_shutdown & ~SEND_SHUTDOWN);
	release_sock(sk);

	if (!conn->sw_peer_closed) {
		rc = ntbsmc_clc_switch(ctx, conn, &mine, &peer);
		/* it received what it consumed at least, and nothing we never sent */
		if (!rc && (peer.rx_end < seen_cons || peer.rx_end > mine.tx_end ||
			    peer.tx_end < mine.rx_end))
			rc = -EPROTO;
		if (!rc)
			rc = sw_resend(ctx, conn, peer.rx_end, mine.tx_end, deadline);
	}

	lock_sock(sk);
	if (mine.flags & NTBSMC_SWITCH_WRITE_DONE) {
		WRITE_ONCE(sk->sk_shutdown, sk->sk_shutdown | SEND_SHUTDOWN);
		if (!rc)
			ctx->sk_proto->shutdown(sk, SEND_SHUTDOWN);	/* FIN after the resend */
	}
	if (!rc && !ntbsmc_sock_dead(ctx) && READ_ONCE(ctx->mode) == NTBSMC_MODE_NTB) {
		ctx->sw_keep = conn->sw_keep;
		ctx->sw_keep_len = conn->sw_keep_len;
		conn->sw_keep = NULL;
		WRITE_ONCE(ctx->sw_time, ktime_get_real_ns());
		ctx->reason = NTBSMC_REASON_LINK_DOWN;
		/* ctx->conn stays until close(), for its counters (and a poll) */
		smp_store_release(&ctx->mode, NTBSMC_MODE_TCP);
		moved = true;
	}
	release_sock(sk);
	ctx_unhook(ctx, sk);

	if (moved) {
		ntbsmc_stat_add(net, NTBSMC_STAT_SWITCH_TCP, 1);
		if (!conn->sw_peer_closed)
			ntbsmc_stat_add(net, NTBSMC_STAT_SWITCH_RESENT, mine.tx_end - peer.rx_end);
		net_info_ratelimited("ntbsmc: %s: connection on slot %u moved to TCP (resent %llu bytes)\n",
				     conn->dev->name, conn->my_slot,
				     conn->sw_peer_closed ? 0ULL : mine.tx_end - peer.rx_end);
	} else {
		/* closed or disconnected meanwhile (both wait for us), or failed */
		if (!rc)
			rc = -ESHUTDOWN;
		ntbsmc_stat_add(net, NTBSMC_STAT_SWITCH_FAILED, 1);
		spin_lock_irqsave(&conn->lock, flags);
		WRITE_ONCE(conn->switching, false);	/* the reset below ends the wait */
		spin_unlock_irqrestore(&conn->lock, flags);
		ntbsmc_conn_abort(conn, sw_why(rc));
		if (!ntbsmc_sock_dead(ctx))
			tcp_abort(sk, ECONNRESET);
	}
	/* Wake readers, writers and pollers: the socket runs over TCP, or failed. */
	wake_up_all(&ctx->hs_wq);
	sk->sk_state_change(sk);
	sk->sk_data_ready(sk);
	sk->sk_write_space(sk);
	spin_lock_bh(&ntbsmc_socks_lock);
	ctx->sw_conn = NULL;
	spin_unlock_bh(&ntbsmc_socks_lock);
	ntbsmc_conn_put(conn);
	sock_put(sk);
	ctx_put(ctx);
}

/*
 * The socket's NTB connection is moving to TCP: waits (socket locked) until it
 * moved or was reset; bounded by the switch's own bound. Returns 0, or -EAGAIN /
 * -EINTR / -ERESTARTSYS as a TCP call that would wait.
 */
static int sw_wait(struct sock *sk, struct ntbsmc_sock *ctx, struct ntbsmc_conn *conn,
		   long *timeo)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);

	while (READ_ONCE(ctx->mode) == NTBSMC_MODE_NTB && ntbsmc_conn_switching(conn)) {
		if (!*timeo)
			return -EAGAIN;
		if (signal_pending(current))
			return sock_intr_errno(*timeo);
		add_wait_queue(sk_sleep(sk), &wait);
		sk_wait_event(sk, timeo, READ_ONCE(ctx->mode) != NTBSMC_MODE_NTB ||
			      !ntbsmc_conn_switching(conn), &wait);
		remove_wait_queue(sk_sleep(sk), &wait);
	}
	return 0;
}

/* close() or a disconnect: a switch under way ends first (its bound at most). */
static void sw_wait_end(struct sock *sk, struct ntbsmc_sock *ctx)
{
	struct ntbsmc_net *nn = ntbsmc_net(sock_net(sk));
	long timeo = msecs_to_jiffies(READ_ONCE(nn->switch_timeout_ms)) + HZ;
	struct ntbsmc_conn *conn;

	if (READ_ONCE(ctx->mode) != NTBSMC_MODE_NTB)
		return;
	conn = ctx_conn_locked(sk, ctx);
	if (conn && ntbsmc_conn_switching(conn))
		sw_wait(sk, ctx, conn, &timeo);
}

/* After the move: the bytes received over NTB and not read yet come first. */
static int sw_read_kept(struct sock *sk, struct ntbsmc_sock *ctx, struct msghdr *msg,
			size_t len, int flags)
{
	u32 n = min_t(size_t, len, ctx->sw_keep_len - ctx->sw_keep_off);
	struct ntbsmc_conn *conn;

	n = copy_to_iter(ctx->sw_keep + ctx->sw_keep_off, n, &msg->msg_iter);
	if (!n)
		return -EFAULT;
	if (flags & MSG_PEEK)
		return n;
	WRITE_ONCE(ctx->sw_keep_off, ctx->sw_keep_off + n);
	/* they crossed NTB: counted as the connection's */
	conn = rcu_dereference_protected(ctx->conn, lockdep_sock_is_held(sk));
	if (conn)
		conn->rx_bytes += n;
	ntbsmc_stat_add(sock_net(sk), NTBSMC_STAT_RX_BYTES, n);
	return n;
}

static bool sw_kept(struct ntbsmc_sock *ctx)
{
	return READ_ONCE(ctx->sw_keep_off) != READ_ONCE(ctx->sw_keep_len);
}

/* ---- the ULP ---- */

static void build_protos(struct proto prot[NTBSMC_NCONF], struct proto_ops *ops,
			 const struct proto *base, const struct proto_ops *base_ops);

/* tcpv6_prot lives in the ipv6 module: build its tables once we see it. */
static void ntbsmc_build(struct sock *sk)
{
	const struct proto *prot = READ_ONCE(sk->sk_prot);

	if (sk_fam(sk) != NTBSMC_V6 ||	/* acquire: pairs with the release below */
	    likely(prot == smp_load_acquire(&saved_tcpv6_prot)))
		return;
	mutex_lock(&ntbsmc_prot_lock);
	if (prot != saved_tcpv6_prot) {
		build_protos(ntbsmc_prots[NTBSMC_V6], &ntbsmc_proto_ops[NTBSMC_V6], prot,
			     sk->sk_socket->ops);
		/* the tables are complete before the pointer says so */
		smp_store_release(&saved_tcpv6_prot, prot);
	}
	mutex_unlock(&ntbsmc_prot_lock);
}

static int ntbsmc_ulp_init_sk(struct sock *sk)
{
	struct ntbsmc_net *nn = ntbsmc_net(sock_net(sk));
	struct ntbsmc_sock *ctx;

	/* Before connect() or listen(): the offer travels in the SYN. */
	if (sk->sk_state != TCP_CLOSE)
		return sk->sk_state == TCP_LISTEN ? -EINVAL : -EISCONN;
	if (!sk->sk_socket || sk->sk_type != SOCK_STREAM)
		return -EINVAL;
	ntbsmc_build(sk);
	ctx = ctx_alloc(sk, GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	ctx->client = true;	/* until listen() */
	ctx->sk_proto = READ_ONCE(sk->sk_prot);
	ctx->sk_ops = sk->sk_socket->ops;

	write_lock_bh(&sk->sk_callback_lock);
	ctx_hook(ctx, sk, NULL);
	rcu_assign_pointer(inet_csk(sk)->icsk_ulp_data, ctx);
	write_unlock_bh(&sk->sk_callback_lock);
	WRITE_ONCE(sk->sk_prot, &ntbsmc_prots[sk_fam(sk)][NTBSMC_ACTIVE]);
	WRITE_ONCE(sk->sk_socket->ops, &ntbsmc_proto_ops[sk_fam(sk)]);
	tcp_sk(sk)->syn_smc = READ_ONCE(nn->enabled);
	ctx_list(ctx);
	return 0;
}

/* TCP's own table for a socket of @sk's family. */
static struct proto *tcp_proto_of(const struct sock *sk)
{
	if (sk_fam(sk) == NTBSMC_V6)
		return (struct proto *)smp_load_acquire(&saved_tcpv6_prot);	/* ntbsmc_build() */
	return &tcp_prot;
}

/*
 * TCP asks a listener before it answers a SYN that offers SMC (softirq): with
 * max_handshakes server handshakes running, the SYN-ACK does not offer, and the
 * connection is TCP at once on both ends. Each handshake is bounded by the
 * handshake timeout, so a host that opens connections and stalls them holds at
 * most this many, and only for that long. Server handshakes run on their
 * namespace's own workqueue (hs_srv_wq): this host's connects never wait for a
 * worker behind them.
 */
static bool ntbsmc_hs_congested(const struct sock *sk)
{
	struct ntbsmc_net *nn = ntbsmc_net(sock_net(sk));

	return atomic_read(&nn->handshakes) >= READ_ONCE(nn->max_handshakes) ||
	       !READ_ONCE(ctx_reserved);	/* the child may find no memory */
}

/*
 * A child whose SYN-ACK offered ntbsmc starts its handshake: the client will
 * send HELLO. The SYN was let through because fewer than max_handshakes ran
 * then, but SYNs are checked one by one and children counted only here (a
 * round trip later), so N SYNs and then N ACKs would start N: beyond the limit
 * the child's handshake only declines (its CHALLENGE, then a DECLINE of the
 * PROPOSAL with reason congested: no buffer, no attach), and the client falls
 * back to TCP.
 * Under ntbsmc_socks_lock, which serialises the count's increments.
 */
static void hs_count(struct ntbsmc_sock *ctx, struct ntbsmc_net *nn)
{
	atomic64_t *peak = &nn->stats[NTBSMC_STAT_HS_PEAK];
	int n;

	lockdep_assert_held(&ntbsmc_socks_lock);
	if (atomic_read(&nn->handshakes) >= READ_ONCE(nn->max_handshakes)) {
		ctx->hs_congested = true;
		ntbsmc_stat_add(sock_net(ctx->sk), NTBSMC_STAT_HS_CONGESTED, 1);
		return;
	}
	n = atomic_inc_return(&nn->handshakes);
	ctx->hs_counted = true;
	if (n > atomic64_read(peak))
		atomic64_set(peak, n);	/* increments are serialised: no race */
}

/*
 * A child whose SYN exchange did not agree on ntbsmc (softirq): TCP at once,
 * no handshake. Why, as far as the server can tell: the SYN-ACK decision is
 * not kept, so a child of a congested listener is told apart by the
 * congestion it finds now (SYN to ACK is one round trip).
 */
static void clone_fallback(struct ntbsmc_sock *ctx, struct sock *newsk)
{
	struct ntbsmc_net *nn = ntbsmc_net(sock_net(newsk));

	if (!tcp_sk(newsk)->syn_smc)	/* the listener's, copied: it did not offer */
		ctx->reason = READ_ONCE(nn->enabled) ? NTBSMC_REASON_PEER_NO_OFFER :
						       NTBSMC_REASON_DISABLED;
	else
		ctx->reason = ntbsmc_hs_congested(newsk) ? NTBSMC_REASON_CONGESTED :
							   NTBSMC_REASON_PEER_NO_OFFER;
	ctx->mode = NTBSMC_MODE_TCP;
	newsk->sk_prot = &ntbsmc_prots[sk_fam(newsk)][NTBSMC_FALLBACK];
	count_result(ctx);
}

/*
 * A child of an ntbsmc listener (softirq): its own context, its handshake starts
 * now. The listener may be closing on another CPU: its context, copied here
 * with the rest of the socket, stays readable for this RCU read side, and a
 * listener that closes starts no new handshakes.
 */
static void ntbsmc_ulp_clone(const struct request_sock *req, struct sock *newsk,
			     const gfp_t priority)
{
	struct ntbsmc_sock *lctx, *ctx;
	bool start = false;

	/* tcp_cleanup_ulp() puts a module reference for every socket. */
	__module_get(THIS_MODULE);
	rcu_read_lock();
	lctx = ntbsmc_ctx(newsk);	/* copied from the listener */
	/*
	 * sock_copy() made the listener's current sk_prot, our table in module
	 * memory, the child's creator; its TIME_WAIT socket and its final free
	 * would use that after the module is gone. TCP's table is the creator.
	 */
	newsk->sk_prot_creator = lctx ? lctx->sk_proto : tcp_proto_of(newsk);
	ctx = lctx ? ctx_alloc(newsk, priority) : NULL;
	if (ctx && !(tcp_sk(newsk)->syn_smc && inet_rsk(req)->smc_ok)) {
		ctx->sk_proto = lctx->sk_proto;
		ctx->sk_ops = lctx->sk_ops;
		clone_fallback(ctx, newsk);
		rcu_read_unlock();
		rcu_assign_pointer(inet_csk(newsk)->icsk_ulp_data, ctx);
		ctx_list(ctx);
		return;
	}
	if (ctx) {
		spin_lock_bh(&ntbsmc_socks_lock);
		if (!lctx->closing && !lctx->dead && refcount_inc_not_zero(&lctx->ref)) {
			lctx->hs_children++;	/* ctx->listener holds the ref */
			ctx->listener = lctx;
			list_add_tail(&ctx->node, &ntbsmc_socks);
			hs_count(ctx, ntbsmc_net(sock_net(newsk)));
			start = true;
		}
		spin_unlock_bh(&ntbsmc_socks_lock);
	}
	if (!start) {
		/*
		 * The listener is going: the child is plain TCP, told nothing it
		 * could misread (a closing listener resets it anyway). No memory,
		 * even in the reserve: the same, and the client's HELLO reaches
		 * the application (see ctx_reserve); counted.
		 */
		if (!ctx && lctx)
			ntbsmc_stat_add(sock_net(newsk), NTBSMC_STAT_FB_SERVER +
					NTBSMC_REASON_NO_MEMORY, 1);
		kfree(ctx);
		newsk->sk_prot = newsk->sk_prot_creator;
		tcp_sk(newsk)->syn_smc = 0;
		rcu_assign_pointer(inet_csk(newsk)->icsk_ulp_data, NULL);
		rcu_read_unlock();
		return;
	}
	ctx->sk_proto = lctx->sk_proto;
	ctx->sk_ops = lctx->sk_ops;
	ctx->hs_started = true;
	ctx->hs_start = jiffies;
	ctx_hook(ctx, newsk, lctx);
	rcu_read_unlock();
	rcu_assign_pointer(inet_csk(newsk)->icsk_ulp_data, ctx);
	refcount_inc(&ctx->ref);	/* put by hs_work */
	sock_hold(newsk);		/* put by hs_work */
	queue_work(ntbsmc_net(sock_net(newsk))->hs_srv_wq, &ctx->hs_work);
}

/* The socket is destroyed (any context): drop what it owned. */
static void ntbsmc_ulp_release(struct sock *sk)
{
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sk);
	struct ntbsmc_conn *conn;

	if (!ctx)
		return;
	spin_lock_bh(&ntbsmc_socks_lock);
	list_del(&ctx->node);
	/*
	 * The rest of the destruction must not use our tables: the module
	 * reference goes with this ULP. A handshake's end, which may run on
	 * another CPU, sees the context dead under this lock first.
	 */
	WRITE_ONCE(sk->sk_prot, ctx->sk_proto);
	conn = rcu_dereference_protected(ctx->conn, lockdep_is_held(&ntbsmc_socks_lock));
	RCU_INIT_POINTER(ctx->conn, NULL);
	WRITE_ONCE(ctx->dead, NTBSMC_SOCK_DESTROYED);
	spin_unlock_bh(&ntbsmc_socks_lock);
	wake_up_all(&ctx->hs_wq);
	/* Never closed through close(), e.g. a child nobody accepted. */
	if (conn)
		ntbsmc_conn_release(conn, true);
	rcu_assign_pointer(inet_csk(sk)->icsk_ulp_data, NULL);
	ctx_put(ctx);
}

static struct tcp_ulp_ops ntbsmc_ulp_ops __read_mostly = {
	.name		= NTBSMC_ULP_NAME,
	.owner		= THIS_MODULE,
	.init		= ntbsmc_ulp_init_sk,
	.clone		= ntbsmc_ulp_clone,
	.release	= ntbsmc_ulp_release,
};

/*
 * The ULP of a socket made by socket(..., IPPROTO_NTBSMC) (proto.c), set as
 * setsockopt(TCP_ULP) sets it (__tcp_set_ulp()), the module reference being
 * the one sk_alloc() took for the socket's creator.
 */
int ntbsmc_ulp_set(struct sock *sk)
{
	int rc;

	lock_sock(sk);
	clear_bit(SOCK_SUPPORT_ZC, &sk->sk_socket->flags);
	rc = ntbsmc_ulp_init_sk(sk);
	if (!rc)
		inet_csk(sk)->icsk_ulp_ops = &ntbsmc_ulp_ops;
	release_sock(sk);
	return rc;
}

/* ---- socket operations while ACTIVE ---- */

/*
 * Waits (lock held) until the handshake ended. Returns 0, or -EAGAIN / -EINTR /
 * -ERESTARTSYS like a TCP call that would wait.
 */
static int wait_handshake(struct sock *sk, struct ntbsmc_sock *ctx, long *timeo)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);

	while (READ_ONCE(ctx->mode) == NTBSMC_MODE_HANDSHAKE) {
		if (!*timeo)
			return -EAGAIN;
		if (signal_pending(current))
			return sock_intr_errno(*timeo);
		add_wait_queue(sk_sleep(sk), &wait);
		sk_wait_event(sk, timeo, READ_ONCE(ctx->mode) != NTBSMC_MODE_HANDSHAKE,
			      &wait);
		remove_wait_queue(sk_sleep(sk), &wait);
	}
	return 0;
}

/*
 * The handshake is running: TCP was established and the outcome is pending,
 * whatever TCP's state is now (a child may still be in SYN_RECV with Fast Open
 * data, or in CLOSE_WAIT after a client that wrote and closed: its data comes
 * over NTB once the handshake ends).
 */
static bool in_handshake(struct sock *sk, struct ntbsmc_sock *ctx)
{
	return READ_ONCE(ctx->mode) == NTBSMC_MODE_HANDSHAKE && READ_ONCE(ctx->hs_started);
}

/*
 * Ends the handshake in TCP before it started: nothing of ours was sent, the
 * SYN did not offer ntbsmc (or was not sent yet). Socket locked, no worker.
 */
static void fallback_locked(struct sock *sk, struct ntbsmc_sock *ctx, u32 reason)
{
	sock_owned_by_me(sk);
	tcp_sk(sk)->syn_smc = 0;
	ctx_unhook(ctx, sk);
	ctx_to_tcp(sk, ctx, reason);
	count_result(ctx);
}

/*
 * Before a client's send or receive reaches TCP (socket locked): data sent in
 * the SYN (Fast Open) would precede the handshake, so such a connection is TCP
 * from the start; a connect still in progress (non-blocking) is waited for, as
 * TCP would, and then the handshake it starts. Returns 0 or -errno.
 */
static int hs_wait(struct sock *sk, struct ntbsmc_sock *ctx, int msg_flags, long *timeo)
{
	if (READ_ONCE(ctx->mode) != NTBSMC_MODE_HANDSHAKE)
		return 0;
	if (!READ_ONCE(ctx->hs_started) && ctx->client) {
		if (((msg_flags & MSG_FASTOPEN) && sk->sk_state == TCP_CLOSE) ||
		    ntbsmc_defer_connect(sk)) {
			fallback_locked(sk, ctx, NTBSMC_REASON_FASTOPEN);
			return 0;
		}
		if (sk->sk_state == TCP_SYN_SENT) {
			int rc = sk_stream_wait_connect(sk, timeo);

			if (rc)
				return rc;
		}
	}
	if (in_handshake(sk, ctx))
		return wait_handshake(sk, ctx, timeo);
	return 0;
}

static int ntbsmc_sendmsg(struct sock *sk, struct msghdr *msg, size_t len)
{
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sk);
	size_t sent = 0;
	long timeo;
	int rc;

	lock_sock(sk);
	timeo = sock_sndtimeo(sk, msg->msg_flags & MSG_DONTWAIT);
	rc = hs_wait(sk, ctx, msg->msg_flags, &timeo);
	if (rc) {
		release_sock(sk);
		return rc;
	}
	while (READ_ONCE(ctx->mode) == NTBSMC_MODE_NTB) {
		struct ntbsmc_conn *conn = ctx_conn_locked(sk, ctx);

		rc = ntbsmc_conn_sendmsg(sk, conn, msg, len - sent);
		if (rc > 0) {
			sent += rc;
			if (!msg_data_left(msg) || !ntbsmc_conn_switching(conn))
				break;
			continue;	/* the rest after the switch */
		}
		if (rc == -NTBSMC_ESWITCH)
			rc = sw_wait(sk, ctx, conn, &timeo);
		if (rc) {
			release_sock(sk);
			return sent ?: rc;
		}
	}
	if (READ_ONCE(ctx->mode) == NTBSMC_MODE_NTB) {
		release_sock(sk);
		return sent;
	}
	release_sock(sk);
	rc = ctx->sk_proto->sendmsg(sk, msg, len - sent);
	if (!sent)
		return rc;
	return rc > 0 ? sent + rc : sent;
}

static int ntbsmc_recvmsg(struct sock *sk, struct msghdr *msg, size_t len,
			  int flags, int *addr_len)
{
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sk);
	long timeo;
	int rc;

	if (flags & MSG_ERRQUEUE)
		return ctx->sk_proto->recvmsg(sk, msg, len, flags, addr_len);
	lock_sock(sk);
	timeo = sock_rcvtimeo(sk, flags & MSG_DONTWAIT);
	rc = hs_wait(sk, ctx, 0, &timeo);
	if (rc) {
		release_sock(sk);
		return rc;
	}
	while (READ_ONCE(ctx->mode) == NTBSMC_MODE_NTB) {
		struct ntbsmc_conn *conn = ctx_conn_locked(sk, ctx);

		if (flags & MSG_OOB)
			rc = -EINVAL;	/* no urgent data over NTB */
		else
			rc = ntbsmc_conn_recvmsg(sk, conn, msg, len, flags);
		if (rc == -NTBSMC_ESWITCH) {
			rc = sw_wait(sk, ctx, conn, &timeo);
			if (!rc)
				continue;
		}
		release_sock(sk);
		return rc;
	}
	if (sw_kept(ctx) && !(flags & MSG_OOB)) {
		rc = sw_read_kept(sk, ctx, msg, len, flags);
		release_sock(sk);
		/* MSG_WAITALL: the rest from TCP */
		if (rc > 0 && rc < len && (flags & MSG_WAITALL) && !(flags & MSG_PEEK)) {
			int more = ctx->sk_proto->recvmsg(sk, msg, len - rc, flags, addr_len);

			if (more > 0)
				rc += more;
		}
		return rc;
	}
	release_sock(sk);
	return ctx->sk_proto->recvmsg(sk, msg, len, flags, addr_len);
}

#if NTBSMC_HAVE_SENDPAGE
static int ntbsmc_sendpage(struct sock *sk, struct page *page, int offset,
			   size_t size, int flags)
{
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sk);
	struct msghdr msg = { .msg_flags = flags };
	struct bio_vec bvec = { .bv_page = page, .bv_offset = offset, .bv_len = size };

	if (READ_ONCE(ctx->mode) != NTBSMC_MODE_NTB && !in_handshake(sk, ctx))
		return ctx->sk_proto->sendpage(sk, page, offset, size, flags);
	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, &bvec, 1, size);
	return ntbsmc_sendmsg(sk, &msg, size);
}
#endif

/*
 * Over NTB, SIOCINQ and SIOCOUTQ count the NTB ring's bytes. Moved to TCP,
 * TCP's queues, and SIOCINQ counts the bytes kept from NTB too. Returns
 * -ENOIOCTLCMD for what TCP answers alone.
 */
static int ioctl_val(struct sock *sk, struct ntbsmc_sock *ctx, int cmd, int *val)
{
	struct ntbsmc_conn *conn = ctx_conn(ctx);
	bool slow;

	if (!conn || READ_ONCE(ctx->mode) != NTBSMC_MODE_NTB) {
		if (cmd != SIOCINQ || !sw_kept(ctx))
			return -ENOIOCTLCMD;
		slow = lock_sock_fast(sk);
		*val = tcp_inq(sk) + ctx->sw_keep_len - ctx->sw_keep_off;
		unlock_sock_fast(sk, slow);
		return 0;
	}
	switch (cmd) {
	case SIOCINQ:
		*val = ntbsmc_conn_inq(conn);
		return 0;
	case SIOCOUTQ:
	case SIOCOUTQNSD:
		*val = ntbsmc_conn_outq(conn);
		return 0;
	case SIOCATMARK:
		*val = 0;
		return 0;
	}
	return -ENOIOCTLCMD;
}

#if NTBSMC_IOCTL_KARG
static int ntbsmc_ioctl(struct sock *sk, int cmd, int *karg)
{
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sk);
	int rc = ioctl_val(sk, ctx, cmd, karg);

	return rc == -ENOIOCTLCMD ? ctx->sk_proto->ioctl(sk, cmd, karg) : rc;
}
#else
static int ntbsmc_ioctl(struct sock *sk, int cmd, unsigned long arg)
{
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sk);
	int val, rc = ioctl_val(sk, ctx, cmd, &val);

	if (rc == -ENOIOCTLCMD)
		return ctx->sk_proto->ioctl(sk, cmd, arg);
	return rc ?: put_user(val, (int __user *)arg);
}
#endif

static int ntbsmc_getsockopt(struct sock *sk, int level, int optname,
			     char __user *optval, int __user *optlen)
{
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sk);
	struct ntbsmc_info info = {};
	struct ntbsmc_conn *conn;
	int len;

	if (level != SOL_NTBSMC)
		return ctx->sk_proto->getsockopt(sk, level, optname, optval, optlen);
	if (optname != NTBSMC_INFO)
		return -ENOPROTOOPT;
	if (get_user(len, optlen))
		return -EFAULT;
	if (len < 0)
		return -EINVAL;
	lock_sock(sk);
	info.mode = sk->sk_state == TCP_LISTEN ? NTBSMC_MODE_LISTEN : READ_ONCE(ctx->mode);
	info.reason = ctx->reason;
	info.peer_reason = ctx->peer_reason;
	/* a handshake may set it meanwhile; only close() clears it */
	conn = rcu_dereference_check(ctx->conn, lockdep_sock_is_held(sk));
	if (conn) {
		info.lgr_id = conn->dev->lgr_id;
		info.tx_bytes = conn->tx_bytes;
		info.rx_bytes = conn->rx_bytes;
		info.rmb_size = conn->rmb_size;
		info.peer_rmb_size = conn->peer_rmb_size;
		info.cpu_bytes = READ_ONCE(conn->cpu_bytes);
		info.dma_bytes = READ_ONCE(conn->dma_bytes);
		info.zc_bytes = READ_ONCE(conn->zc_bytes);
		info.version = conn->version;
	}
	info.flags = ntbsmc_info_flags(ctx, conn);
	info.switch_time = ctx->sw_time;
	release_sock(sk);
	len = min_t(int, len, sizeof(info));
	if (put_user(len, optlen) || copy_to_user(optval, &info, len))
		return -EFAULT;
	return 0;
}

/*
 * close() while the handshake runs (socket locked; unlocks it). The FIN goes
 * now, as TCP's close() would send it, but TCP's close waits for the handshake's
 * worker: its last message may still be answered, and an answer that reaches a
 * closed TCP socket resets the connection, so that the peer's application would
 * read ECONNRESET where TCP gives EOF. The worker sends nothing more, reads that
 * answer (bounded by the handshake timeout) and closes TCP (hs_close()). The
 * socket outlives its struct socket meanwhile: detached from it like an orphan,
 * with the socket's reference, but not SOCK_DEAD, so that TCP does not destroy
 * it before that close.
 */
static bool hs_close_defer(struct sock *sk, struct ntbsmc_sock *ctx)
{
	bool defer;

	/* A handshake that set up its connection has ended: close it as such. */
	spin_lock_bh(&ntbsmc_socks_lock);
	defer = !rcu_access_pointer(ctx->conn);
	if (defer) {
		ctx->close_deferred = true;
		ctx->dead = NTBSMC_SOCK_CLOSED;
	}
	spin_unlock_bh(&ntbsmc_socks_lock);
	if (!defer)
		return false;
	WRITE_ONCE(sk->sk_shutdown, sk->sk_shutdown | SEND_SHUTDOWN);
	ctx->sk_proto->shutdown(sk, SEND_SHUTDOWN);
	release_sock(sk);
	write_lock_bh(&sk->sk_callback_lock);
	sk_set_socket(sk, NULL);
	sk->sk_wq = NULL;
	write_unlock_bh(&sk->sk_callback_lock);
	wake_up_all(&ctx->hs_wq);
	return true;
}

/*
 * close(): like TCP's, it returns at once and the connection delivers what was
 * written in the background (ntbsmc_conn_release()); with SO_LINGER it first
 * waits up to @timeout for that, with a zero linger time it resets.
 */
static void ntbsmc_close(struct sock *sk, long timeout)
{
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sk);
	struct proto *tcp = ctx->sk_proto;
	struct ntbsmc_conn *conn;
	bool abort;

	if (sk->sk_state == TCP_LISTEN)
		listener_drain(ctx);
	lock_sock(sk);
	abort = sock_flag(sk, SOCK_LINGER) && !sk->sk_lingertime;
	if (in_handshake(sk, ctx) && !abort && hs_close_defer(sk, ctx))
		return;
	/* what we sent must reach the peer before our FIN does */
	sw_wait_end(sk, ctx);
	conn = ctx_take_conn(ctx, NTBSMC_SOCK_CLOSED);
	if (conn) {
		if (!abort && timeout)
			ntbsmc_conn_linger(conn, timeout);
		ntbsmc_conn_release(conn, abort);
	}
	/*
	 * From here on the socket is TCP's, tables included (like kTLS); the
	 * context is freed by ->release().
	 */
	WRITE_ONCE(sk->sk_prot, tcp);
	release_sock(sk);
	ctx_unhook(ctx, sk);
	tcp->close(sk, timeout);
}

/* A fallen-back socket closes like TCP, on TCP's own tables. */
static void ntbsmc_fallback_close(struct sock *sk, long timeout)
{
	struct proto *tcp = ntbsmc_ctx(sk)->sk_proto;

	WRITE_ONCE(sk->sk_prot, tcp);
	tcp->close(sk, timeout);
}

/* ---- socket-level operations while ACTIVE ---- */

/*
 * connect(AF_UNSPEC): TCP's disconnect, after which the socket may connect
 * anywhere. An NTB connection ends with a reset of its own (the peer must not
 * wait for more, nor may our next sends go into its buffer), and whatever
 * the socket connects to next is plain TCP, offered nothing: the handshake
 * ran once, as it does on a Linux SMC socket.
 */
static int disconnect(struct socket *sock, struct sockaddr *uaddr, int addr_len, int flags)
{
	struct sock *sk = sock->sk;
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sk);
	long timeo = MAX_SCHEDULE_TIMEOUT;
	int rc;

	/* a listener's: ntbsmc_tcp_disconnect() */
	if (sk->sk_state == TCP_LISTEN)
		return ctx->sk_ops->connect(sock, uaddr, addr_len, flags);
	lock_sock(sk);
	/* the handshake's worker is bounded by the handshake timeout */
	rc = in_handshake(sk, ctx) ? wait_handshake(sk, ctx, &timeo) : 0;
	if (rc) {
		release_sock(sk);
		return rc;
	}
	sw_wait_end(sk, ctx);
	if (READ_ONCE(ctx->mode) == NTBSMC_MODE_NTB) {
		ntbsmc_conn_abort(ctx_conn_locked(sk, ctx), "disconnected (connect AF_UNSPEC)");
		tcp_sk(sk)->syn_smc = 0;
		ctx_to_tcp(sk, ctx, NTBSMC_REASON_DISCONNECTED);
		/* ctx->conn stays, aborted, until ->release(): a poll may use it */
	} else if (READ_ONCE(ctx->mode) == NTBSMC_MODE_HANDSHAKE) {
		fallback_locked(sk, ctx, NTBSMC_REASON_DISCONNECTED);
	}
	release_sock(sk);
	return ctx->sk_ops->connect(sock, uaddr, addr_len, flags);
}

/*
 * A client's handshakes are bounded as a server's are: with max_handshakes of
 * them running in the namespace, a new connect does not offer ntbsmc and is TCP
 * at once (congested). Each holds nothing in a window until its server proved
 * NTB presence, but a flood of connects to hosts that stall would otherwise
 * hold as many handshakes, each for a handshake timeout. Like the server's,
 * the count is read before the SYN and taken at establishment: connects made
 * within one round trip may pass it together.
 */
static void hs_client_bound(struct sock *sk, struct ntbsmc_sock *ctx)
{
	struct ntbsmc_net *nn = ntbsmc_net(sock_net(sk));

	lock_sock(sk);
	if (READ_ONCE(ctx->mode) == NTBSMC_MODE_HANDSHAKE && !ctx->hs_started &&
	    sk->sk_state == TCP_CLOSE && tcp_sk(sk)->syn_smc &&
	    atomic_read(&nn->client_handshakes) >= READ_ONCE(nn->max_handshakes))
		fallback_locked(sk, ctx, NTBSMC_REASON_CONGESTED);
	release_sock(sk);
}

/*
 * The namespace's policy, before the SYN offers ntbsmc: a peer and port it
 * does not offer to are TCP at once. An address TCP will refuse is TCP's to
 * refuse.
 */
static void hs_client_policy(struct sock *sk, struct ntbsmc_sock *ctx,
			     const struct sockaddr *uaddr, int addr_len)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)uaddr;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)uaddr;
	struct in6_addr peer;
	u16 port;

	if (uaddr->sa_family == AF_INET && addr_len >= (int)sizeof(*sin)) {
		ipv6_addr_set_v4mapped(sin->sin_addr.s_addr, &peer);
		port = ntohs(sin->sin_port);
	} else if (uaddr->sa_family == AF_INET6 && sk->sk_family == AF_INET6 &&
		   addr_len >= SIN6_LEN_RFC2133) {
		peer = sin6->sin6_addr;
		port = ntohs(sin6->sin6_port);
	} else {
		return;
	}
	lock_sock(sk);
	if (READ_ONCE(ctx->mode) == NTBSMC_MODE_HANDSHAKE && !ctx->hs_started &&
	    sk->sk_state == TCP_CLOSE && tcp_sk(sk)->syn_smc &&
	    !ntbsmc_policy_offers(sock_net(sk), &peer, port))
		fallback_locked(sk, ctx, NTBSMC_REASON_POLICY);
	release_sock(sk);
}

static int ntbsmc_connect(struct socket *sock, struct sockaddr *uaddr, int addr_len,
			  int flags)
{
	struct sock *sk = sock->sk;
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sk);
	long timeo;
	int rc;

	if (addr_len >= (int)sizeof(uaddr->sa_family) && uaddr->sa_family == AF_UNSPEC)
		return disconnect(sock, uaddr, addr_len, flags);
	if (addr_len >= (int)sizeof(uaddr->sa_family))
		hs_client_policy(sk, ctx, uaddr, addr_len);
	hs_client_bound(sk, ctx);
	rc = ctx->sk_ops->connect(sock, uaddr, addr_len, flags);
	if (rc)
		return rc;
	/* Established: a blocking connect returns once the handshake ended. */
	lock_sock(sk);
	timeo = sock_sndtimeo(sk, flags & O_NONBLOCK);
	if (in_handshake(sk, ctx))
		rc = wait_handshake(sk, ctx, &timeo);
	release_sock(sk);
	return rc == -EAGAIN ? -EINPROGRESS : rc;
}

static int ntbsmc_accept(struct socket *sock, struct socket *newsock,
			 NTBSMC_ACCEPT_PARAMS)
{
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sock->sk), *cctx;
	struct sock *csk;
	int rc;

	rc = ctx->sk_ops->accept(sock, newsock, NTBSMC_ACCEPT_ARGS);
	if (rc)
		return rc;
	csk = newsock->sk;
	lock_sock(csk);
	cctx = ntbsmc_ctx(csk);
	if (!cctx || READ_ONCE(cctx->mode) == NTBSMC_MODE_TCP)
		newsock->ops = ctx->sk_ops;
	release_sock(csk);
	return 0;
}

static int ntbsmc_listen(struct socket *sock, int backlog)
{
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sock->sk);
	struct sock *sk = sock->sk;
	int rc;

	/*
	 * Children hook themselves: unhooked before the first can be cloned, so
	 * that none copies our callbacks (ctx_hook() copes with it all the same).
	 */
	if (sk->sk_state != TCP_LISTEN)
		ctx_unhook(ctx, sk);
	rc = ctx->sk_ops->listen(sock, backlog);
	if (!rc) {
		ctx->client = false;
		tcp_sk(sk)->smc_hs_congested = ntbsmc_hs_congested;
	} else if (sk->sk_state != TCP_LISTEN) {
		write_lock_bh(&sk->sk_callback_lock);
		ctx_hook(ctx, sk, NULL);
		write_unlock_bh(&sk->sk_callback_lock);
	}
	return rc;
}

static __poll_t ntbsmc_poll(struct file *file, struct socket *sock,
			    struct poll_table_struct *wait)
{
	struct sock *sk = sock->sk;
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sk);
	struct ntbsmc_conn *conn = ctx_conn(ctx);

	if (conn) {
		sock_poll_wait(file, sock, wait);
		return ntbsmc_conn_poll(sk, conn);
	}
	if (!in_handshake(sk, ctx))
		return ctx->sk_ops->poll(file, sock, wait) |
		       (sw_kept(ctx) ? EPOLLIN | EPOLLRDNORM : 0);
	/* Negotiating: nothing to report yet but errors; ctx_finish() wakes us. */
	sock_poll_wait(file, sock, wait);
	return READ_ONCE(sk->sk_err) ? EPOLLERR : 0;
}

/*
 * During the handshake TCP's shutdown would put a FIN among the handshake's
 * bytes (and make our own sends fail): like TCP, shutdown() returns at once, and
 * the handshake's end applies it to whichever mode the connection ends in.
 */
static int ntbsmc_shutdown(struct socket *sock, int how)
{
	struct sock *sk = sock->sk;
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sk);

	how++;	/* SHUT_RD/WR/RDWR -> RCV_SHUTDOWN/SEND_SHUTDOWN/both */
	if ((how & ~SHUTDOWN_MASK) || !how)
		return -EINVAL;
	lock_sock(sk);
	sw_wait_end(sk, ctx);	/* its SEND_SHUTDOWN is the switch's meanwhile */
	if (in_handshake(sk, ctx)) {
		ctx->hs_shutdown |= how;
	} else if (ctx->mode == NTBSMC_MODE_NTB) {
		shutdown_locked(sk, ctx, how);
	} else {
		release_sock(sk);
		return ctx->sk_ops->shutdown(sock, how - 1);
	}
	release_sock(sk);
	sk->sk_state_change(sk);
	return 0;
}

/*
 * TCP's disconnect, socket locked: from connect(AF_UNSPEC) and, on a listener,
 * from shutdown(SHUT_RD or SHUT_RDWR). On a listener it destroys the accept
 * queue's children, as close() does: their handshakes end first.
 */
static int ntbsmc_tcp_disconnect(struct sock *sk, int flags)
{
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sk);
	int rc;

	/* also a listener's child, copied with our table, from its listener's stop */
	if (!ctx)
		return tcp_proto_of(sk)->disconnect(sk, flags);
	if (sk->sk_state != TCP_LISTEN)
		return ctx->sk_proto->disconnect(sk, flags);
	listener_drain(ctx);
	rc = ctx->sk_proto->disconnect(sk, flags);
	listener_stopped(sk, ctx);
	return rc;
}

/*
 * SOCK_DESTROY (and bpf_sock_destroy()): TCP's abort destroys a listener's
 * children too. A BPF iterator may not sleep: with handshakes running it is
 * refused, as tcp_abort() refuses a socket it cannot lock.
 */
static int ntbsmc_diag_destroy(struct sock *sk, int err)
{
	struct ntbsmc_sock *ctx = ntbsmc_ctx(sk);
	int rc;

	if (!ctx)
		return tcp_proto_of(sk)->diag_destroy(sk, err);
	if (READ_ONCE(sk->sk_state) != TCP_LISTEN)
		return ctx->sk_proto->diag_destroy(sk, err);
	if (!ntbsmc_may_sleep())
		return listener_drained(ctx) ? ctx->sk_proto->diag_destroy(sk, err) : -EBUSY;
	listener_drain(ctx);
	rc = ctx->sk_proto->diag_destroy(sk, err);
	lock_sock(sk);
	listener_stopped(sk, ctx);
	release_sock(sk);
	return rc;
}

/* ---- tables ---- */

static void build_protos(struct proto prot[NTBSMC_NCONF], struct proto_ops *ops,
			 const struct proto *base, const struct proto_ops *base_ops)
{
	prot[NTBSMC_ACTIVE] = *base;
	prot[NTBSMC_ACTIVE].close = ntbsmc_close;
	prot[NTBSMC_ACTIVE].sendmsg = ntbsmc_sendmsg;
	prot[NTBSMC_ACTIVE].recvmsg = ntbsmc_recvmsg;
#if NTBSMC_HAVE_SENDPAGE
	prot[NTBSMC_ACTIVE].sendpage = ntbsmc_sendpage;
#endif
	prot[NTBSMC_ACTIVE].ioctl = ntbsmc_ioctl;
	prot[NTBSMC_ACTIVE].getsockopt = ntbsmc_getsockopt;
	prot[NTBSMC_ACTIVE].disconnect = ntbsmc_tcp_disconnect;
	if (base->diag_destroy)
		prot[NTBSMC_ACTIVE].diag_destroy = ntbsmc_diag_destroy;

	prot[NTBSMC_FALLBACK] = *base;
	prot[NTBSMC_FALLBACK].getsockopt = ntbsmc_getsockopt;
	prot[NTBSMC_FALLBACK].close = ntbsmc_fallback_close;

	*ops = *base_ops;
	ops->connect = ntbsmc_connect;
	ops->accept = ntbsmc_accept;
	ops->listen = ntbsmc_listen;
	ops->poll = ntbsmc_poll;
	ops->shutdown = ntbsmc_shutdown;
	/* TCP's splice and read_sock read the skb queue: read through recvmsg. */
	ops->splice_read = NULL;
	ops->read_sock = NULL;
}

int ntbsmc_ulp_init(void)
{
	int rc;

	ctx_reserve_fill(NULL);
	build_protos(ntbsmc_prots[NTBSMC_V4], &ntbsmc_proto_ops[NTBSMC_V4], &tcp_prot,
		     &inet_stream_ops);
	/* The SYN option both ends offer ntbsmc with (shared with Linux SMC). */
	static_branch_inc(&tcp_have_smc);
	rc = tcp_register_ulp(&ntbsmc_ulp_ops);
	if (rc) {
		static_branch_dec(&tcp_have_smc);
		ctx_reserve_free();
	}
	return rc;
}

void ntbsmc_ulp_exit(void)
{
	tcp_unregister_ulp(&ntbsmc_ulp_ops);
	static_branch_dec(&tcp_have_smc);
	ctx_reserve_free();
}
