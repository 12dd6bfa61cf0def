// SPDX-License-Identifier: GPL-2.0
/* ntbsmc: one NTB-mode connection: its lifetime and the control-block protocol. */

#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/io.h>
#include <linux/sched/signal.h>
#include <linux/srcu.h>
#include <net/tcp.h>
#include <net/inet_sock.h>
#include "ntbsmc.h"
#include "fault.h"

/*
 * Window accesses happen inside this SRCU section after checking that the
 * connection is healthy; aborting a connection and then synchronising it is what
 * lets a device go away under running connections.
 */
DEFINE_SRCU(ntbsmc_srcu);

void ntbsmc_conn_sync(void)
{
	synchronize_srcu(&ntbsmc_srcu);
}

/*
 * The receive buffer a socket asks for: half its SO_RCVBUF if the program set
 * one (the kernel doubled it for overhead, as SMC-R reads it), else the
 * namespace's rmb_kb; rounded up to a power of two the window layout allows.
 */
static u32 conn_rmb_want(struct sock *sk)
{
	u32 want = (u32)READ_ONCE(ntbsmc_net(sock_net(sk))->rmb_kb) << 10;

	if (sk->sk_userlocks & SOCK_RCVBUF_LOCK)
		want = READ_ONCE(sk->sk_rcvbuf) / 2;
	return roundup_pow_of_two(clamp_t(u32, want, NTBSMC_RMB_UNIT, NTBSMC_RMB_MAX));
}

static void conn_maybe_release(struct ntbsmc_conn *conn);
static void conn_recheck(struct timer_list *t);
static void conn_want_late_init(struct ntbsmc_conn *conn);

/* Resets a closed connection the peer does not let go of; counted. */
static void conn_orphan_reset(struct ntbsmc_conn *conn, const char *why)
{
	ntbsmc_stat_add(conn->dev->net, NTBSMC_STAT_ORPHAN_RESET, 1);
	net_info_ratelimited("ntbsmc: %s: closed connection reset: %s\n",
			     conn->dev->name, why);
	ntbsmc_conn_abort(conn, why);
}

/*
 * When a held connection's timer next looks: at the end of the hold, and every
 * second before it (or orphan_timeout_ms if shorter), as a peer that attached
 * late says so only in our slot (its DETACHED, which would wake us, may never
 * come). A look reads our own memory: nothing crosses the link.
 */
#define CONN_HOLD_LOOK_MS	1000

static unsigned long conn_hold_next(struct ntbsmc_conn *conn)
{
	unsigned int ms = READ_ONCE(ntbsmc_net(conn->dev->net)->orphan_timeout_ms);

	return min(conn->hold_end, jiffies + msecs_to_jiffies(min(ms, CONN_HOLD_LOOK_MS)));
}

/* How long a held slot is held: NTBSMC_HOLD_MS (the test build: hold_short's). */
static unsigned long conn_hold_len(void)
{
	if (ntbsmc_fault(NTBSMC_FAULT_HOLD_SHORT, NULL))
		return msecs_to_jiffies(ntbsmc_fault_delay_ms(NTBSMC_FAULT_HOLD_SHORT));
	return msecs_to_jiffies(NTBSMC_HOLD_MS);
}

/*
 * A held slot (the peer was told it and never attached): the peer had all the
 * time a handshake may take to attach to it; one it attached to meanwhile is an
 * orphan from then on (conn_held_attached_locked()). An orphan (an established
 * connection the peer attached to): closed, and the peer did not let go in
 * orphan_timeout_ms.
 */
static void conn_hold_expired(struct timer_list *t)
{
	struct ntbsmc_conn *conn = from_timer(conn, t, hold_timer);

	if (test_bit(0, &conn->released))
		goto out;
	if (!READ_ONCE(conn->held)) {
		conn_orphan_reset(conn, "orphan timeout");
		goto out;
	}
	ntbsmc_conn_update(conn);	/* the peer's late attach */
	if (!READ_ONCE(conn->held))
		goto out;
	if (time_before(jiffies, conn->hold_end)) {
		refcount_inc(&conn->ref);	/* the timer's, as below */
		if (mod_timer(&conn->hold_timer, conn_hold_next(conn)))
			ntbsmc_conn_put(conn);	/* armed meanwhile, with its own */
		goto out;
	}
	WRITE_ONCE(conn->hold_expired, true);
	conn_maybe_release(conn);
out:
	ntbsmc_conn_put(conn);	/* taken when the timer was armed */
}

struct ntbsmc_conn *ntbsmc_conn_alloc(struct ntbsmc_dev *dev, struct sock *sk)
{
	struct ntbsmc_conn *conn;
	int rc;

	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn)
		return ERR_PTR(-ENOMEM);
	refcount_set(&conn->ref, 1);	/* the socket's, put at close */
	spin_lock_init(&conn->lock);
	kref_get(&dev->ref);		/* put in conn_free() */
	conn->dev = dev;
	conn->sk = sk;
	timer_setup(&conn->hold_timer, conn_hold_expired, 0);
	timer_setup(&conn->recheck_timer, conn_recheck, 0);
	conn_want_late_init(conn);
	rc = ntbsmc_dev_slot_get(dev, conn, conn_rmb_want(sk));
	if (rc) {
		ntbsmc_dev_put(dev);
		kfree(conn);
		return ERR_PTR(rc);
	}
	conn->rmb = dev->win + ntbsmc_rmb_off(conn->my_slot);
	conn->rx_ctl = dev->win + ntbsmc_ctl_off(conn->my_slot);
	ntbsmc_tx_conn_init(conn);
	ntbsmc_dma_attach(dev, sock_net(sk));
	return conn;
}

/*
 * Checks the RMB the peer offered in the handshake and points our writes at it.
 * The values come from the peer: nothing is used before it passed here.
 */
int ntbsmc_conn_attach(struct ntbsmc_conn *conn, const struct ntbsmc_clc_rmb *peer)
{
	struct ntbsmc_dev *dev = conn->dev;
	u32 slot = be32_to_cpu(peer->slot), size = be32_to_cpu(peer->size);
	unsigned long flags;
	int idx;

	if (be32_to_cpu(peer->epoch) != READ_ONCE(dev->peer_epoch))
		return -ESTALE;
	if (slot >= NTBSMC_SLOT_MAX || size < NTBSMC_RMB_UNIT || size > NTBSMC_RMB_MAX ||
	    !is_power_of_2(size) || slot % (size / NTBSMC_RMB_UNIT) ||
	    ntbsmc_rmb_off(slot) + size > dev->peer_win_size)
		return -EPROTO;
	/*
	 * The link may have gone down, or the device away, since the handshake
	 * found it: the peer's window is written only by a connection of the
	 * current epoch, within this section (ntbsmc_remove() unmaps it after).
	 */
	idx = srcu_read_lock(&ntbsmc_srcu);
	if (!conn_link_alive(conn)) {
		srcu_read_unlock(&ntbsmc_srcu, idx);
		return -ESTALE;
	}
	/* An abort (link down, the peer's reset) publishes under the lock too. */
	spin_lock_irqsave(&conn->lock, flags);
	conn->peer_slot = slot;
	conn->peer_token = be32_to_cpu(peer->token);
	conn->peer_rmb_size = size;
	conn->peer_rmb_off = ntbsmc_rmb_off(slot);
	conn->peer_rmb = dev->peer_win + conn->peer_rmb_off;
	conn->tx_ctl = dev->peer_win + ntbsmc_ctl_off(slot);
	/*
	 * Fresh control block for the peer: cursors first, the token that makes
	 * them current last. WANT_DATA from the start: nobody reads yet (see
	 * "Notifications" below).
	 */
	conn->my_flags |= NTBSMC_F_WANT_DATA;
	conn_ctl_write64(conn, 0, &conn->tx_ctl->prod);
	conn_ctl_write64(conn, 0, &conn->tx_ctl->cons);
	conn_ctl_write64(conn, 0, &conn->tx_ctl->seen_prod);
	conn_ctl_write64(conn, 0, &conn->tx_ctl->seen_cons);
	conn_ctl_write32(conn, conn->my_flags, &conn->tx_ctl->flags);
	wmb();	/* the peer reads the token, then the cursors (conn_read_peer()) */
	conn_ctl_write32(conn, conn->peer_token, &conn->tx_ctl->token);
	spin_unlock_irqrestore(&conn->lock, flags);
	srcu_read_unlock(&ntbsmc_srcu, idx);
	return 0;
}

/*
 * The handshake tells the peer our slot (@exposed: ACCEPT or CONFIRM goes out), or
 * the peer declined under its MAC, which it does only before it attached (not
 * @exposed). From the first until the peer acknowledges our end, a connection the
 * peer has not attached to holds the slot: the peer may still attach to it and
 * write, and reset what it finds there.
 */
void ntbsmc_conn_expose(struct ntbsmc_conn *conn, bool exposed)
{
	WRITE_ONCE(conn->exposed, exposed);
}

/*
 * The peer attached to our slot: its CONFIRM, which it sends only once it wrote
 * our control block, checked (the server), or its token is in our control block
 * (conn_read_peer()). From then on our slot is an orphan's once we close, not a
 * held one.
 */
void ntbsmc_conn_peer_attached(struct ntbsmc_conn *conn)
{
	WRITE_ONCE(conn->peer_attached, true);
}

/*
 * The handshake completed: from now on the peer writes into our slot. A peer
 * that reset it meanwhile (its ABORT came before we attached) resets it now.
 * False, and not established, if the link went first (@hs_lost): decided
 * under conn->lock, against ntbsmc_conn_failover()'s look at @established.
 */
bool ntbsmc_conn_established(struct ntbsmc_conn *conn)
{
	unsigned int ms = READ_ONCE(ntbsmc_net(conn->dev->net)->recheck_ms);
	unsigned long flags;
	bool lost;

	spin_lock_irqsave(&conn->lock, flags);
	lost = conn->hs_lost;
	if (!lost)
		WRITE_ONCE(conn->established, true);
	spin_unlock_irqrestore(&conn->lock, flags);
	if (lost)
		return false;
	ntbsmc_conn_update(conn);
	if (!ms)
		return true;
	spin_lock_irqsave(&conn->lock, flags);
	if (conn->sk) {
		refcount_inc(&conn->ref);	/* the timer's: put in conn_recheck() or release */
		mod_timer(&conn->recheck_timer, jiffies + msecs_to_jiffies(ms));
	}
	spin_unlock_irqrestore(&conn->lock, flags);
	return true;
}

static void conn_free(struct rcu_head *rcu)
{
	struct ntbsmc_conn *conn = container_of(rcu, struct ntbsmc_conn, rcu);

	ntbsmc_tx_conn_free(conn);
	kvfree(conn->sw_keep);
	ntbsmc_dev_put(conn->dev);
	kfree_sensitive(conn);	/* the switch keys */
}

void ntbsmc_conn_put(struct ntbsmc_conn *conn)
{
	if (refcount_dec_and_test(&conn->ref))
		call_rcu(&conn->rcu, conn_free);
}

bool ntbsmc_conn_link_ok(struct ntbsmc_conn *conn)
{
	return conn_link_ok(conn);
}

/*
 * We may write our flags into the peer's control block: attached, not reset, on
 * this link; established or not. Caller holds conn->lock (attach sets tx_ctl
 * under it).
 */
static bool conn_peer_writable(struct ntbsmc_conn *conn)
{
	lockdep_assert_held(&conn->lock);
	return !conn->err && conn->tx_ctl && !conn->detached && conn_link_alive(conn);
}

/*
 * Wakes the socket's waiters for @key: a doorbell that brings data wakes
 * readers, one that brings space writers (keyed, as TCP's data_ready and
 * write_space are: epoll and poll filter by it, ntbsmc_conn_wait() too).
 */
void ntbsmc_conn_wake(struct sock *sk, __poll_t key)
{
	struct socket_wq *wq;

	rcu_read_lock();
	wq = rcu_dereference(sk->sk_wq);
	if (skwq_has_sleeper(wq))
		wake_up_interruptible_poll(&wq->wait, key);
	rcu_read_unlock();
	if (key & EPOLLOUT)
		sk_wake_async(sk, SOCK_WAKE_SPACE, POLL_OUT);
	if (key & (EPOLLIN | EPOLLERR))
		sk_wake_async(sk, SOCK_WAKE_WAITD, POLL_IN);
}

/*
 * Publishes our flags; caller holds conn->lock and is in the SRCU section. The
 * terminal ones let the peer reuse its buffer for another connection, so they wait
 * until none of our writes into it is in flight (ntbsmc_conn_tx_idle()).
 */
void ntbsmc_conn_publish_flags(struct ntbsmc_conn *conn)
{
	u32 flags = conn->my_flags;

	lockdep_assert_held(&conn->lock);
	RCU_LOCKDEP_WARN(!srcu_read_lock_held(&ntbsmc_srcu), "outside the SRCU section");
	if (conn->detached)
		return;		/* the slot may be another connection's now */
	if (conn_tx_inflight(conn))
		flags &= ~NTBSMC_F_TERMINAL;
	flags |= (u32)conn->my_want_seq << NTBSMC_F_WANT_SEQ_SHIFT;
	conn_ctl_write32(conn, flags, &conn->tx_ctl->flags);
	if (flags & NTBSMC_F_DETACHED)
		WRITE_ONCE(conn->detached, true);	/* our last write there */
}

/*
 * The peer may still write into our slot: it knows the slot (exposed), has not
 * acknowledged our end (closed or reset its own), the link epoch has not ended,
 * and, if it never attached, it may still attach (hold_timer).
 */
static bool conn_peer_may_write(struct ntbsmc_conn *conn)
{
	if (!READ_ONCE(conn->exposed) || !conn_link_alive(conn) ||
	    (READ_ONCE(conn->peer_flags) & NTBSMC_F_PEER_GONE))
		return false;
	return READ_ONCE(conn->peer_attached) || !READ_ONCE(conn->hold_expired);
}

/*
 * A closed connection's slot is reused only once the peer can no longer write
 * into it (conn_peer_may_write()): a late write would land in another
 * connection's buffer, an ABORT on another connection. Exactly once; drops the
 * reference the closed socket left behind.
 */
static void conn_maybe_release(struct ntbsmc_conn *conn)
{
	unsigned long flags;

	if (!READ_ONCE(conn->closed) || conn_peer_may_write(conn))
		return;
	if (test_and_set_bit(0, &conn->released))
		return;
	if (timer_delete(&conn->hold_timer))
		ntbsmc_conn_put(conn);	/* the timer's: it will not run */
	/* ntbsmc_conn_release()'s; @held may change under the lock until released */
	spin_lock_irqsave(&conn->lock, flags);
	atomic_dec(conn->held ? &conn->dev->held : &conn->dev->orphans);
	spin_unlock_irqrestore(&conn->lock, flags);
	atomic64_add(conn->tx_bytes, &conn->dev->lgr_tx_bytes);
	atomic64_add(conn->rx_bytes, &conn->dev->lgr_rx_bytes);
	ntbsmc_dev_slot_put(conn->dev, conn);
	ntbsmc_conn_put(conn);
}

void ntbsmc_conn_abort(struct ntbsmc_conn *conn, const char *why)
{
	struct sock *sk;
	unsigned long flags;
	bool post;
	int idx;

	spin_lock_irqsave(&conn->lock, flags);
	if (conn->err) {
		spin_unlock_irqrestore(&conn->lock, flags);
		/* Already reset: a closed one may have waited for this link to go. */
		conn_maybe_release(conn);
		return;
	}
	/* Tell the peer, unless the link itself is what failed. */
	idx = srcu_read_lock(&ntbsmc_srcu);
	post = conn_peer_writable(conn);
	if (post) {
		conn->my_flags |= NTBSMC_F_ABORT;
		ntbsmc_conn_publish_flags(conn);
	}
	srcu_read_unlock(&ntbsmc_srcu, idx);
	sk = conn->sk;
	if (sk) {
		sock_hold(sk);	/* put below */
		/*
		 * The socket's error before the connection's: whoever finds the
		 * connection reset (under conn->lock, or after the barrier) finds
		 * the error to report, never a socket without one, which reads
		 * as EOF (a truncation; its peer's TCP FIN may wake the reader
		 * before we do). What TCP said first, if it did (a reset, a
		 * timeout), stands.
		 */
		if (!READ_ONCE(sk->sk_err))
			WRITE_ONCE(sk->sk_err, ECONNRESET);
		smp_wmb();	/* pairs with the reader's look at conn->err */
	}
	WRITE_ONCE(conn->err, ECONNRESET);
	spin_unlock_irqrestore(&conn->lock, flags);

	ntbsmc_stat_add(conn->dev->net, NTBSMC_STAT_ABORT, 1);
	net_info_ratelimited("ntbsmc: %s: connection on slot %u reset: %s\n",
			     conn->dev->name, conn->my_slot, why);
	if (post)
		ntbsmc_dev_post_event(conn->dev, conn);
	/* test build: the socket woken late (its TCP's FIN may come first) */
	if (sk && in_task() && preemptible())
		ntbsmc_fault_delay(NTBSMC_FAULT_ABORT_REPORT_DELAY, sk);
	if (sk) {
		sk_error_report(sk);
		ntbsmc_conn_wake(sk, NTBSMC_WAKE_ALL);
		sock_put(sk);
	}
	conn_maybe_release(conn);
}

/*
 * The socket is to wait for a switch of transport instead of failing: one is
 * running, or the link went under a connection that can switch and the link's
 * teardown (dev_go_down()) has not come to it yet; that teardown either
 * starts the switch or resets the connection, so the wait ends.
 */
bool ntbsmc_conn_switching(struct ntbsmc_conn *conn)
{
	return READ_ONCE(conn->switching) ||
	       (conn->mirror && !READ_ONCE(conn->err) && READ_ONCE(conn->established) &&
		!conn_link_alive(conn));
}

/*
 * The link of @conn goes (dev_go_down(), with the device no longer ACTIVE and
 * the SRCU section synchronised since: no reader or writer of the socket is in
 * the windows, and none enters). A connection that can switch keeps what it
 * received and did not read yet, before its slot is freed for the next epoch,
 * and hands the rest to its socket's switch work. Bytes the peer wrote beyond
 * its last producer cursor we validated are not taken: the peer sends them
 * again (its engine may still write them after this, or never). One whose
 * handshake still runs is left to it (@hs_lost). Returns false if it does not
 * switch: the caller resets it.
 */
bool ntbsmc_conn_failover(struct ntbsmc_conn *conn)
{
	unsigned long flags;
	struct sock *sk;
	u32 n, off, first;
	void *keep = NULL;
	u64 from, to;

	might_sleep();
	spin_lock_irqsave(&conn->lock, flags);
	/*
	 * Still the handshake's: it committed to NTB, or may yet, and its peer
	 * may run over NTB already. Reset, but the socket's error is the
	 * handshake's to set: it moves to TCP with the peer, or declines.
	 */
	if (!conn->established && conn->sk && !conn->err) {
		conn->hs_lost = true;
		WRITE_ONCE(conn->err, ECONNRESET);
		spin_unlock_irqrestore(&conn->lock, flags);
		return true;
	}
	if (!conn->mirror || conn->err || !conn->established || conn->switching ||
	    !conn->sk || (conn->peer_flags & NTBSMC_F_ABORT)) {
		spin_unlock_irqrestore(&conn->lock, flags);
		return false;
	}
	sk = conn->sk;
	sock_hold(sk);		/* put below */
	from = conn->rx_cons;
	to = conn->peer_prod;
	spin_unlock_irqrestore(&conn->lock, flags);

	/* (the reader moves rx_cons only inside the SRCU section: it is out) */
	n = to - from;
	if (n) {
		keep = kvmalloc(n, GFP_KERNEL);
		if (!keep)
			goto fail;
		off = from & (conn->rmb_size - 1);
		first = min(n, conn->rmb_size - off);
		memcpy(keep, conn->rmb + off, first);
		memcpy(keep + first, conn->rmb, n - first);
	}
	spin_lock_irqsave(&conn->lock, flags);
	conn->sw_keep = keep;
	conn->sw_keep_len = n;
	conn->sw_rx_end = to;
	/* final: senders advance it only inside the SRCU section, with the link up */
	conn->sw_tx_end = READ_ONCE(conn->tx_prod);
	/*
	 * The peer's CLOSED follows its last cursor: everything it sent is here,
	 * and it reads nothing more (nor will its socket, closed, switch).
	 */
	conn->sw_peer_closed = conn->peer_flags & NTBSMC_F_CLOSED;
	conn->rx_cons = to;	/* read, as far as the slot is concerned */
	WRITE_ONCE(conn->switching, true);
	spin_unlock_irqrestore(&conn->lock, flags);
	if (!ntbsmc_ulp_switch(sk, conn)) {
		spin_lock_irqsave(&conn->lock, flags);
		WRITE_ONCE(conn->switching, false);
		spin_unlock_irqrestore(&conn->lock, flags);
		goto fail;
	}
	/* waiters look again, and wait for the switch's end */
	wake_up_all(&conn->tx_wq);
	ntbsmc_conn_wake(sk, NTBSMC_WAKE_ALL);
	sock_put(sk);
	return true;

fail:
	ntbsmc_stat_add(conn->dev->net, NTBSMC_STAT_SWITCH_FAILED, 1);
	sock_put(sk);
	return false;
}

/*
 * The peer closed: it reads nothing more, so we write nothing more into its slot
 * (our sends fail, as after TCP's RST) and say so, which lets it reuse the slot
 * now rather than when our socket closes too. Held back while our writes are in
 * flight (ntbsmc_conn_publish_flags()). True if the peer is to be told now.
 */
static bool conn_detach(struct ntbsmc_conn *conn)
{
	lockdep_assert_held(&conn->lock);
	if ((conn->my_flags & NTBSMC_F_DETACHED) || !conn->established || !conn->tx_ctl)
		return false;
	/* the test build's silent peer (a wedged host, one of protocol version 2) */
	if (ntbsmc_fault(NTBSMC_FAULT_DETACH_DROP, conn->sk))
		return false;
	conn->my_flags |= NTBSMC_F_DETACHED;
	ntbsmc_conn_publish_flags(conn);
	return conn->detached;
}

/*
 * Publishes our consumer cursor if it moved since it last was: rx.c does so in
 * batches (the peer learns of space when it waits for it, or a quarter of the
 * buffer came free), the re-check and an answered want the rest. Caller holds
 * conn->lock.
 */
void conn_publish_cons_locked(struct ntbsmc_conn *conn)
{
	int idx;

	lockdep_assert_held(&conn->lock);
	if (conn->rx_cons_pub == conn->rx_cons)
		return;
	idx = srcu_read_lock(&ntbsmc_srcu);
	if (conn_link_ok(conn)) {
		conn->rx_cons_pub = conn->rx_cons;
		conn_ctl_write64(conn, conn->rx_cons, &conn->tx_ctl->cons);
	}
	srcu_read_unlock(&ntbsmc_srcu, idx);
}

/*
 * A want the peer set since we last answered one (see "Notifications"): the
 * cursor it saw then against ours now. Either may be a lie; a lie costs the
 * peer a doorbell it did not need. Caller holds conn->lock, link ok. True if
 * the peer is to be rung.
 */
static bool conn_answer_want(struct ntbsmc_conn *conn, u32 flags, u16 seq)
{
	struct ntbsmc_slot *c = conn->rx_ctl;
	bool ring = false;

	if (seq == conn->peer_want_seq)
		return false;
	conn->peer_want_seq = seq;
	/* test build: a peer that does not answer (the protocol before version 5) */
	if (conn->sk && ntbsmc_fault(NTBSMC_FAULT_ANSWER_DROP, conn->sk))
		return false;
	/* (rmb() in the caller: the seen cursors were written before the flags) */
	if ((flags & NTBSMC_F_WANT_DATA) &&
	    le64_to_cpu(READ_ONCE(c->seen_prod)) != conn->tx_pub)
		ring = true;
	if ((flags & NTBSMC_F_WANT_SPACE) &&
	    le64_to_cpu(READ_ONCE(c->seen_cons)) != conn->rx_cons) {
		/* consumed, perhaps not published yet (rx.c publishes in batches) */
		conn_publish_cons_locked(conn);
		ring = true;
	}
	return ring && conn_link_ok(conn);
}

/*
 * Reads the peer's control block of this connection: the one place where cursors
 * and flags from the peer's side enter. A value out of range, going backwards or
 * beyond the buffer aborts this connection only. Caller holds conn->lock and is
 * in the SRCU section. Returns 1 when the peer is to be told of our reply
 * (conn_detach(), conn_answer_want()).
 */
static int conn_read_peer(struct ntbsmc_conn *conn)
{
	struct ntbsmc_slot *c = conn->rx_ctl;
	u64 prod, cons;
	u32 flags;
	u16 seq;

	lockdep_assert_held(&conn->lock);
	RCU_LOCKDEP_WARN(!srcu_read_lock_held(&ntbsmc_srcu), "outside the SRCU section");
	if (le32_to_cpu(READ_ONCE(c->token)) != conn->my_token)
		return 0;	/* the peer has not written this connection's block yet */
	if (!conn->peer_attached)
		ntbsmc_conn_peer_attached(conn);
	rmb();	/* the peer wrote the token before the flags and cursors */
	flags = le32_to_cpu(READ_ONCE(c->flags));
	seq = flags >> NTBSMC_F_WANT_SEQ_SHIFT;
	flags &= (1U << NTBSMC_F_WANT_SEQ_SHIFT) - 1;
	if (conn->err) {
		/*
		 * We reset it, perhaps over these very cursors: only the peer's
		 * acknowledgement matters now, which frees the slot.
		 */
		conn->peer_flags |= flags & NTBSMC_F_PEER_GONE;
		return 0;
	}
	rmb();	/* the peer wrote its cursors before the flags that follow them */
	prod = le64_to_cpu(READ_ONCE(c->prod));
	cons = le64_to_cpu(READ_ONCE(c->cons));
	if (flags & ~NTBSMC_F_VALID)
		return -EPROTO;
	if (prod < conn->peer_prod || prod - conn->rx_cons > conn->rmb_size)
		return -EPROTO;		/* producer went back or beyond our buffer */
	if (cons < conn->peer_cons || cons > conn->tx_pub)
		return -EPROTO;		/* consumed what we never published */
	if ((conn->peer_flags & NTBSMC_F_WRITE_DONE) && prod != conn->peer_prod)
		return -EPROTO;		/* data after the peer's FIN */
	conn->peer_prod = prod;
	conn->peer_cons = cons;
	/* Terminal flags stick; the want flags follow the peer. */
	conn->peer_flags = (conn->peer_flags & NTBSMC_F_TERMINAL) | flags;
	if (conn->peer_flags & NTBSMC_F_CLOSED)
		return conn_detach(conn);
	return conn_answer_want(conn, flags, seq);
}

/*
 * A closed, held connection the peer attached to after all (the client wrote and
 * closed before the server's attach came): it is an orphan from now on, as if
 * the peer had attached before the close, with an orphan's bounds; the hold
 * timer, which never ends a wait for a peer that attached, would leave it for as
 * long as the peer keeps its end. Caller holds conn->lock and a reference.
 * Returns whether it waits as an orphan (counted against max_orphans).
 */
static bool conn_held_attached_locked(struct ntbsmc_conn *conn)
{
	unsigned int ms = READ_ONCE(ntbsmc_net(conn->dev->net)->orphan_timeout_ms);

	lockdep_assert_held(&conn->lock);
	/* (conn_maybe_release() reads @held under the lock too) */
	if (!conn->closed || !conn->held || test_bit(0, &conn->released))
		return false;
	WRITE_ONCE(conn->held, false);
	atomic_inc(&conn->dev->orphans);
	atomic_dec(&conn->dev->held);
	if (!conn->established || (conn->my_flags & NTBSMC_F_ABORT)) {
		/* reset: it waits for the peer's acknowledgement, as an orphan's */
		if (timer_delete(&conn->hold_timer))
			ntbsmc_conn_put(conn);	/* the timer's: not the last */
		return false;
	}
	/* orphan_timeout_ms from the close, as if it had been an orphan then */
	refcount_inc(&conn->ref);	/* the timer's, put when it ran or died */
	if (mod_timer(&conn->hold_timer, conn->closed_at + msecs_to_jiffies(ms)))
		ntbsmc_conn_put(conn);	/* it was pending with its own */
	return true;
}

/* Refreshes the peer's view; aborts the connection on a bad value. */
int ntbsmc_conn_update(struct ntbsmc_conn *conn)
{
	struct ntbsmc_net *nn = ntbsmc_net(conn->dev->net);
	bool tell = false, orphan = false, attached;
	unsigned long flags;
	int rc = 0, idx;

	spin_lock_irqsave(&conn->lock, flags);
	idx = srcu_read_lock(&ntbsmc_srcu);
	/* Even after an abort: the peer's acknowledgement frees the slot. */
	if (READ_ONCE(conn->exposed) && conn_link_alive(conn)) {
		attached = conn->peer_attached;
		rc = conn_read_peer(conn);
		if (!attached && conn->peer_attached)
			orphan = conn_held_attached_locked(conn);
	}
	if (rc > 0) {
		tell = true;
		rc = 0;
	}
	srcu_read_unlock(&ntbsmc_srcu, idx);
	if (!rc && conn->err)
		rc = -conn->err;
	if (!rc && (conn->peer_flags & NTBSMC_F_ABORT))
		rc = -ECONNRESET;
	spin_unlock_irqrestore(&conn->lock, flags);
	if (tell)
		ntbsmc_dev_post_event(conn->dev, conn);
	if (orphan && atomic_read(&conn->dev->orphans) > READ_ONCE(nn->max_orphans))
		conn_orphan_reset(conn, "too many orphans");
	if (rc == -EPROTO) {
		ntbsmc_conn_abort(conn, "invalid cursor or flags from the peer");
		rc = -ECONNRESET;	/* what the application sees, as from TCP */
	} else if (rc == -ECONNRESET && !conn->err && READ_ONCE(conn->established)) {
		/* (in the handshake the ABORT is kept for ntbsmc_conn_established()) */
		ntbsmc_conn_abort(conn, "reset by the peer");
	}
	return rc;
}

/*
 * Every waiter of the socket is being woken for the peer's cursors and end flags
 * as they are now (an event, or the re-check): nothing up to them is owed a
 * doorbell any more. Caller holds conn->lock.
 */
static void conn_rung_locked(struct ntbsmc_conn *conn)
{
	lockdep_assert_held(&conn->lock);
	conn->rung_prod = conn->peer_prod;
	conn->rung_cons = conn->peer_cons;
	conn->rung_flags = conn->peer_flags & NTBSMC_F_TERMINAL;
}

/*
 * Whom an event wakes: readers if there is something to read, writers if there
 * is room, everyone after a reset. By state, not by what changed: another
 * thread of the socket may have looked first, and a poller still has to hear
 * of it, as TCP wakes every sleeper when data or space comes. Caller holds
 * conn->lock.
 */
static __poll_t conn_event_key(struct ntbsmc_conn *conn)
{
	__poll_t key = 0;

	lockdep_assert_held(&conn->lock);
	if (conn->err || (conn->peer_flags & NTBSMC_F_ABORT))
		return NTBSMC_WAKE_ALL;
	if (conn->peer_prod != conn->rx_cons ||
	    (conn->peer_flags & (NTBSMC_F_WRITE_DONE | NTBSMC_F_CLOSED)))
		key |= NTBSMC_WAKE_IN;
	if (conn_space(conn) || (conn->peer_flags & NTBSMC_F_CLOSED))
		key |= NTBSMC_WAKE_OUT;
	return key;
}

/* Called for an event on this connection (tasklet): wake whoever waits for it. */
void ntbsmc_conn_event(struct ntbsmc_conn *conn)
{
	struct sock *sk = NULL;
	unsigned long flags;
	__poll_t key;

	ntbsmc_conn_update(conn);
	/* irqsave as everywhere: a DMA provider may call back in hard irq */
	spin_lock_irqsave(&conn->lock, flags);
	key = conn_event_key(conn);
	conn_rung_locked(conn);
	if (key && conn->sk) {
		sk = conn->sk;
		sock_hold(sk);	/* put below */
	}
	spin_unlock_irqrestore(&conn->lock, flags);
	if (sk) {
		ntbsmc_conn_wake(sk, key);
		sock_put(sk);
	}
	conn_maybe_release(conn);
}

/*
 * Publishes our flags after a want changed; @set, the one just set, with @seen,
 * the peer's cursor its waiter last looked at, and a new want sequence (steps 1
 * of "Notifications"). The peer owes a doorbell for what lies beyond @seen only:
 * the re-check counts from there. Caller holds conn->lock, in the SRCU section.
 * True if the peer is to get an event for it (step 2, after the lock).
 */
static bool conn_publish_want(struct ntbsmc_conn *conn, u32 set, u64 seen)
{
	lockdep_assert_held(&conn->lock);
	if (!conn_link_ok(conn))
		return false;
	if (set) {
		conn->my_want_seq++;
		if (set & NTBSMC_F_WANT_DATA) {
			conn_ctl_write64(conn, seen, &conn->tx_ctl->seen_prod);
			conn->rung_prod = max(conn->rung_prod, seen);
		} else {
			conn_ctl_write64(conn, seen, &conn->tx_ctl->seen_cons);
			conn->rung_cons = max(conn->rung_cons, seen);
		}
		wmb();	/* the seen cursor before the flag that asks about it */
	}
	ntbsmc_conn_publish_flags(conn);
	return set;
}

/* The peer's cursor a waiter for @flag has seen. Caller holds conn->lock. */
static u64 conn_seen(struct ntbsmc_conn *conn, u32 flag)
{
	return flag & NTBSMC_F_WANT_DATA ? conn->peer_prod : conn->peer_cons;
}

#ifdef CONFIG_NTBSMC_FAULT_INJECTION
/* Fault want_late: the want lands now, its waiter looked long ago. */
static void conn_want_late_work(struct work_struct *work)
{
	struct ntbsmc_conn *conn = container_of(to_delayed_work(work), struct ntbsmc_conn,
						want_late_work);
	unsigned long flags;
	bool post = false;
	int idx;

	spin_lock_irqsave(&conn->lock, flags);
	idx = srcu_read_lock(&ntbsmc_srcu);
	if (conn->my_flags & conn->want_late)
		post = conn_publish_want(conn, conn->want_late, conn->want_late_seen);
	conn->want_late = 0;
	srcu_read_unlock(&ntbsmc_srcu, idx);
	spin_unlock_irqrestore(&conn->lock, flags);
	if (post)
		ntbsmc_dev_post_event(conn->dev, conn);
	ntbsmc_conn_put(conn);	/* taken when it was queued */
}

/*
 * The test build's want on its way: the flag (just set in my_flags) is written
 * by conn_want_late_work() delay_ms from now. Caller holds conn->lock.
 */
static bool conn_want_late(struct ntbsmc_conn *conn, u32 flag)
{
	lockdep_assert_held(&conn->lock);
	if (conn->want_late || !conn->sk || !READ_ONCE(conn->established) ||
	    !ntbsmc_fault(NTBSMC_FAULT_WANT_LATE, conn->sk))
		return false;
	conn->want_late = flag;
	conn->want_late_seen = conn_seen(conn, flag);
	refcount_inc(&conn->ref);	/* put by the work */
	schedule_delayed_work(&conn->want_late_work,
			      msecs_to_jiffies(ntbsmc_fault_delay_ms(NTBSMC_FAULT_WANT_LATE)));
	return true;
}

static void conn_want_late_init(struct ntbsmc_conn *conn)
{
	INIT_DELAYED_WORK(&conn->want_late_work, conn_want_late_work);
}
#else
static bool conn_want_late(struct ntbsmc_conn *conn, u32 flag)
{
	return false;
}

static void conn_want_late_init(struct ntbsmc_conn *conn)
{
}
#endif

/*
 * Notifications: who rings whom, and why no wakeup is lost.
 *
 * A side learns of the peer's progress by reading its own window (local
 * memory); the peer tells it that something changed by an entry in its event
 * ring and a doorbell (ntbsmc_dev_post_event()), which wakes the socket
 * (ntbsmc_conn_event()). To spare doorbells the peer rings only for what we
 * said we wait for: WANT_DATA (ring me when you produce) and WANT_SPACE (ring
 * me when you consume), our flags in its window. Nothing is ever read across
 * the link: every write is posted, and either side reads only its own memory.
 *
 * So a waiter's flag and a notifier's cursor may cross on the link: the waiter
 * sets WANT_x and then finds no new cursor in its memory, while the notifier
 * wrote its cursor and then found no WANT_x in its own. Neither can wait for
 * its write to land without a read across the link (microseconds of stalled
 * CPU, per message). Instead, setting a WANT flag is itself a message:
 *
 *   waiter (ntbsmc_conn_want(on))      notifier
 *   1. writes the cursor it has seen   a. writes payload, then its cursor
 *      (seen_prod or seen_cons), then     (ntbsmc_conn_publish_locked()), or
 *      WANT_x with its want sequence      its consumer cursor
 *      bumped, into the peer's block   b. reads the waiter's flags in its own
 *   2. posts an event and rings           window (ntbsmc_conn_update()):
 *   3. reads the notifier's cursor        WANT_x set: post an event and ring
 *      from its own window             c. on the waiter's event, a want
 *                                         sequence it has not answered: if its
 *                                         cursor differs from the seen one,
 *                                         post an event and ring
 *                                         (conn_answer_want())
 *
 * Posted writes along one path stay in order, so when the waiter's event
 * arrives (c), its flag and seen cursor are there. If the notifier's cursor
 * came before the waiter looked (3), the waiter has it; if not, the seen
 * cursor differs from the notifier's and c rings; if b saw the flag, b rang.
 * A race costs one doorbell more, never a wakeup. Since each setting of a flag
 * costs an event, the flags are states held for long, not requests of one
 * wait; and the rest of the time they cost nothing.
 *
 * When WANT_x is set. A waiter that sets it after it last looked has only
 * itself to ask; but a waiter may also sleep without ever calling us again:
 * edge-triggered epoll waits after a read that returned less than asked
 * (nginx takes that as "drained", not EAGAIN), a SIGIO owner after its last
 * read. So:
 *
 *  - WANT_DATA is set whenever the reader may wait: from the attach
 *    (ntbsmc_conn_attach()) on, and again by every recvmsg() that drained
 *    the ring or peeked, before it returns (conn_rx_arm(), steps 1-3,
 *    copying what step 3 found or waking the socket for it, TCP's edge for
 *    data that came during a read). It is off only while a recvmsg() copies
 *    more than a chunk, and after a full read that left bytes in the ring,
 *    whose caller comes back for them (ntbsmc_conn_unwant(), which wakes
 *    pollers so that they ask anew). A request-response connection keeps it
 *    set throughout: its messages cost no event of ours.
 *  - WANT_SPACE is set by every wait for space (ntbsmc_conn_wait(), also the
 *    non-blocking one that returns EAGAIN, and a short write ends in it) and
 *    by poll() without EPOLLOUT; a send that finds space clears it. Space
 *    comes only after the writer found the buffer full, as TCP's write_space.
 *
 * Every path that waits goes through those: recvmsg/splice_read (recvmsg),
 * sendmsg/sendpage/sendfile/splice to the socket (sendmsg), blocking waits
 * (ntbsmc_conn_wait(), after busy-polling), poll/select/epoll in both
 * triggers (ntbsmc_conn_poll(): a first look, the flags for what it lacks, a
 * second look), and the DMA path, whose completion publishes the cursor and
 * notifies like a CPU copy (ntbsmc_conn_notify_data()).
 *
 * A notification lost anyway (a peer's bug, a dropped interrupt) costs a
 * bounded delay, not a hang: conn_recheck() looks every recheck_ms and wakes
 * the socket for what waited unannounced a whole period, counting it. A
 * program that breaks the contract above (a full read, then a wait for an
 * edge) is woken that way too, uncounted. What it owes is kept in cursors
 * (rung_*, struct ntbsmc_conn) that only three things move, each of which
 * wakes every waiter there is for what it covers or is made by that waiter:
 * an event (ntbsmc_conn_event() wakes by state, not by what changed), the
 * re-check's own wakeup (all of them), and a want that the waiter itself
 * publishes with the cursor it has seen (the peer owes nothing below it).
 * A look does not move them: a recvmsg, poll or sendmsg of one thread, or
 * epoll's re-poll of a level-triggered socket, sees the state for itself and
 * wakes no one else. So, for each waiter whose doorbell is lost:
 *
 *  - a reader blocked in recvmsg (also splice_read, and a busy-poller once
 *    its budget is spent: ntbsmc_conn_wait()) sleeps with WANT_DATA set; data
 *    beyond the cursor it said it had seen, unread at two ticks, wakes it.
 *    Another thread that reads that data first leaves it nothing to wait
 *    for; one that reads only part leaves the rest owed.
 *  - a writer blocked for space (sendmsg, sendfile, splice to the socket)
 *    sleeps with WANT_SPACE set; space beyond the consumer cursor it saw,
 *    unannounced at two ticks while WANT_SPACE is still set, wakes it. A
 *    send by another thread that finds the space clears WANT_SPACE and wakes
 *    every writer and poller to look anew (ntbsmc_conn_unwant()).
 *  - a poller (poll, select, epoll in either trigger) set the flags for
 *    what it lacked before it slept, and is on the same wait queue: woken
 *    as the reader or the writer above.
 *  - the peer's end flags (WRITE_DONE, CLOSED, ABORT) are always followed
 *    by an event: one not announced at two ticks wakes everyone.
 *
 * Sets or clears one of our "want" flags; setting it tells the peer (steps 1
 * and 2). True if it changed.
 */
bool ntbsmc_conn_want(struct ntbsmc_conn *conn, u32 flag, bool on)
{
	unsigned long flags;
	bool post = false;
	int idx;

	spin_lock_irqsave(&conn->lock, flags);
	if (!!(conn->my_flags & flag) == on) {
		spin_unlock_irqrestore(&conn->lock, flags);
		return false;
	}
	conn->my_flags ^= flag;
	if (on && conn_want_late(conn, flag)) {
		spin_unlock_irqrestore(&conn->lock, flags);
		return true;
	}
	idx = srcu_read_lock(&ntbsmc_srcu);
	post = conn_publish_want(conn, on ? flag : 0, on ? conn_seen(conn, flag) : 0);
	srcu_read_unlock(&ntbsmc_srcu, idx);
	spin_unlock_irqrestore(&conn->lock, flags);
	if (post)
		ntbsmc_dev_post_event(conn->dev, conn);
	return true;
}

/*
 * We make progress without the peer's doorbell: it need not ring us while we copy.
 * Another thread may sleep on the same condition (poll) relying on the flag; it
 * is woken to look again, and asks anew if it still has to wait.
 */
void ntbsmc_conn_unwant(struct sock *sk, struct ntbsmc_conn *conn, u32 flag)
{
	if (!(READ_ONCE(conn->my_flags) & flag))
		return;
	ntbsmc_conn_want(conn, flag, false);
	ntbsmc_conn_wake(sk, flag == NTBSMC_F_WANT_DATA ? EPOLLIN : EPOLLOUT);
}

/*
 * Test build: the doorbell is not rung (the peer's bug, or a lost interrupt:
 * conn_recheck()). Called without the socket lock (a DMA completion, tx_work):
 * conn->sk is looked at under conn->lock, which ntbsmc_conn_release() takes to
 * clear it, so the socket is not freed while its ports are read.
 */
static bool conn_notify_dropped(struct ntbsmc_conn *conn)
{
	unsigned long flags;
	bool drop;

	if (!IS_ENABLED(CONFIG_NTBSMC_FAULT_INJECTION))
		return false;
	spin_lock_irqsave(&conn->lock, flags);
	drop = conn->sk && ntbsmc_fault(NTBSMC_FAULT_NOTIFY_DROP, conn->sk);
	spin_unlock_irqrestore(&conn->lock, flags);
	return drop;
}

/* After a cursor update: ring the peer only if it said it waits for one. */
void ntbsmc_conn_notify(struct ntbsmc_conn *conn, u32 want)
{
	if (ntbsmc_conn_update(conn))
		return;
	if (READ_ONCE(conn->peer_flags) & want) {
		if (conn_notify_dropped(conn))
			return;
		ntbsmc_dev_post_event(conn->dev, conn);
	} else
		ntbsmc_stat_add(conn->dev->net, NTBSMC_STAT_DB_SUPPRESSED, 1);
}

void ntbsmc_conn_notify_data(struct ntbsmc_conn *conn)
{
	ntbsmc_conn_notify(conn, NTBSMC_F_WANT_DATA);
}

/*
 * None of our writes into the peer's buffer is in flight any more: terminal flags
 * that ntbsmc_conn_publish_flags() held back can go out now.
 */
void ntbsmc_conn_tx_idle(struct ntbsmc_conn *conn)
{
	unsigned long flags;
	bool post = false;
	int idx;

	spin_lock_irqsave(&conn->lock, flags);
	idx = srcu_read_lock(&ntbsmc_srcu);
	if ((conn->my_flags & NTBSMC_F_TERMINAL) && !conn_tx_inflight(conn) &&
	    READ_ONCE(conn->established) && conn_link_alive(conn)) {
		ntbsmc_conn_publish_flags(conn);
		post = true;
	}
	srcu_read_unlock(&ntbsmc_srcu, idx);
	spin_unlock_irqrestore(&conn->lock, flags);
	if (post)
		ntbsmc_dev_post_event(conn->dev, conn);
}

/*
 * TCP failed for good: a reset or a timeout closed it with an error. (An ICMP
 * error reported under IP_RECVERR sets sk_err and leaves TCP established.)
 */
static bool tcp_failed(const struct sock *sk)
{
	return READ_ONCE(sk->sk_err) && READ_ONCE(sk->sk_state) == TCP_CLOSE;
}

/*
 * TCP failed under the connection (a reset, a keepalive or user timeout): that
 * ends the NTB connection too, as it would end TCP's, and the peer hears of it.
 * Once reset, we read no more of the peer's cursors, so they are read first:
 * what the peer published before its reset (connect(AF_UNSPEC) writes, then
 * resets TCP) is still read, as TCP reads what arrived before an RST.
 */
void ntbsmc_conn_check_tcp(struct sock *sk, struct ntbsmc_conn *conn)
{
	if (likely(!tcp_failed(sk)) || READ_ONCE(conn->err))
		return;
	if (!ntbsmc_conn_update(conn))
		ntbsmc_conn_abort(conn, "the TCP connection failed");
}

/* Spins on the cursors for the socket's busy-poll budget before sleeping. */
static bool conn_busy_poll(struct sock *sk, struct ntbsmc_conn *conn,
			   bool (*ready)(struct ntbsmc_conn *))
{
	struct ntbsmc_net *nn = ntbsmc_net(sock_net(sk));
	unsigned int us = READ_ONCE(sk->sk_ll_usec) ?: READ_ONCE(nn->busy_poll_us);
	u64 end;

	if (!us)
		return false;
	end = ktime_get_ns() + (u64)us * NSEC_PER_USEC;
	do {
		if (ntbsmc_conn_update(conn) || ready(conn))
			return true;
		cpu_relax();
	} while (ktime_get_ns() < end && !need_resched() && !signal_pending(current));
	return false;
}

/* A sleeper of ntbsmc_conn_wait(): woken only by the wakeups it waits for. */
struct conn_waiter {
	struct wait_queue_entry wq;
	__poll_t key;
};

static int conn_wake_fn(struct wait_queue_entry *wq, unsigned int mode, int sync, void *key)
{
	struct conn_waiter *w = container_of(wq, struct conn_waiter, wq);

	/* unkeyed: TCP's state changes, which end the wait too */
	if (key && !(key_to_poll(key) & w->key))
		return 0;
	return woken_wake_function(wq, mode, sync, key);
}

/*
 * Waits for @ready: spins for the busy-poll budget, then publishes our @flag (so
 * the peer rings us), looks once more and sleeps. TCP failing under the
 * connection meanwhile (its keepalive or user timeout, a reset) wakes it too,
 * and ends the connection. Returns 0 to look again, or -EAGAIN (timeout used
 * up) or -EINTR/-ERESTARTSYS.
 */
int ntbsmc_conn_wait(struct sock *sk, struct ntbsmc_conn *conn, u32 flag,
		     bool (*ready)(struct ntbsmc_conn *), long *timeo)
{
	struct conn_waiter w = {
		.key = (flag == NTBSMC_F_WANT_DATA ? NTBSMC_WAKE_IN : NTBSMC_WAKE_OUT) |
		       EPOLLERR | EPOLLHUP | EPOLLRDHUP,
	};

	if (conn_busy_poll(sk, conn, ready))
		return 0;
	ntbsmc_conn_want(conn, flag, true);
	if (ntbsmc_conn_update(conn) || ready(conn))
		return 0;
	if (!*timeo)
		return -EAGAIN;
	if (signal_pending(current))
		return sock_intr_errno(*timeo);
	init_waitqueue_func_entry(&w.wq, conn_wake_fn);
	w.wq.private = current;
	add_wait_queue(sk_sleep(sk), &w.wq);
	sk_wait_event(sk, timeo, ntbsmc_conn_update(conn) || ready(conn) || tcp_failed(sk),
		      &w.wq);
	remove_wait_queue(sk_sleep(sk), &w.wq);
	ntbsmc_conn_check_tcp(sk, conn);
	return 0;
}

/*
 * The socket closes: unread data means a reset, like TCP's RST; otherwise the peer
 * reads EOF after everything we wrote (our writes are already in its buffer). The
 * slot is freed once the peer closed too; until then the connection outlives the
 * socket, holding the reference the socket had.
 */
void ntbsmc_conn_release(struct ntbsmc_conn *conn, bool abort)
{
	struct ntbsmc_net *nn = ntbsmc_net(conn->dev->net);
	bool post, orphan_wait = false;
	unsigned long flags;
	int idx;

	ntbsmc_conn_update(conn);
	spin_lock_irqsave(&conn->lock, flags);
	conn->sk = NULL;
	if (conn_avail(conn))
		abort = true;
	conn->my_flags |= abort ? NTBSMC_F_ABORT :
			   NTBSMC_F_WRITE_DONE | NTBSMC_F_CLOSED;
	conn->my_flags &= ~(NTBSMC_F_WANT_DATA | NTBSMC_F_WANT_SPACE);
	idx = srcu_read_lock(&ntbsmc_srcu);
	/* established or not: a failed handshake's ABORT is for the peer too */
	post = conn_peer_writable(conn);
	if (post)
		ntbsmc_conn_publish_flags(conn);
	srcu_read_unlock(&ntbsmc_srcu, idx);
	/*
	 * A slot the peer was told and never attached to (a failed handshake, or
	 * a server that never checked our CONFIRM) is held: the peer may still
	 * attach that long at most. A closed connection the peer attached to is
	 * an orphan for orphan_timeout_ms, then it resets.
	 */
	WRITE_ONCE(conn->held, READ_ONCE(conn->exposed) && !READ_ONCE(conn->peer_attached));
	conn->closed_at = jiffies;
	if (conn->held) {
		conn->hold_end = conn->closed_at + conn_hold_len();
		refcount_inc(&conn->ref);	/* the timer's, put when it ran or died */
		mod_timer(&conn->hold_timer, conn_hold_next(conn));
	} else if (conn->established && !abort) {
		refcount_inc(&conn->ref);	/* the timer's, put when it ran or died */
		mod_timer(&conn->hold_timer, jiffies +
			  msecs_to_jiffies(READ_ONCE(nn->orphan_timeout_ms)));
		orphan_wait = true;
	}
	/*
	 * Held, or an orphan, until conn_maybe_release() gives the slot back;
	 * counted before closed is seen, so that its decrement never comes first.
	 */
	atomic_inc(conn->held ? &conn->dev->held : &conn->dev->orphans);
	smp_mb__after_atomic();	/* the count before closed (comment above) */
	WRITE_ONCE(conn->closed, true);
	spin_unlock_irqrestore(&conn->lock, flags);

	if (post)
		ntbsmc_dev_post_event(conn->dev, conn);
	/* conn->sk is gone: a running conn_recheck() does not arm it again */
	if (timer_delete(&conn->recheck_timer))
		ntbsmc_conn_put(conn);	/* the timer's: it will not run */
	/*
	 * Beyond max_orphans waiting, a closing connection resets, as TCP's do.
	 * (Before conn_maybe_release(), which may drop the last reference.)
	 */
	if (orphan_wait && conn_peer_may_write(conn) &&
	    atomic_read(&conn->dev->orphans) > READ_ONCE(nn->max_orphans))
		conn_orphan_reset(conn, "too many orphans");
	conn_maybe_release(conn);
}

/* What a lost notification was owed for (conn_recheck()) */
#define OWED_DATA	BIT(0)
#define OWED_SPACE	BIT(1)
#define OWED_END	BIT(2)

static const char *conn_owed_name(unsigned int owed)
{
	if (owed & OWED_END)
		return "an end flag";
	return owed & OWED_DATA ? (owed & OWED_SPACE ? "data and space" : "data") : "space";
}

/*
 * Every recheck_ms while the socket lives: a doorbell the peer owed us and did
 * not ring (its bug, or an interrupt lost on the way) would leave a waiter
 * asleep for good. What the previous tick found beyond the rung cursors (see
 * struct ntbsmc_conn), and is still beyond them and still wanted, had a whole
 * period for its doorbell: wake the socket as the event would have, and count
 * it. Which thread of the socket looked meanwhile does not matter: only an
 * event, a want or this wakeup moves the rung cursors, and each of those wakes
 * (or is made by) whoever waits. A tick that finds the socket owned by a user
 * wakes it all the same: the owner may be another thread than the sleeper.
 *
 * Counted, and warned of in the test build, when a doorbell was owed: data
 * beyond what our WANT_DATA said we had seen while it stayed set, space beyond
 * our WANT_SPACE's, or an end flag (the peer always posts an event for one);
 * not when an event of the peer's waits in our ring (its doorbell or our
 * tasklet is late, on a busy machine: ntbsmc_dev_events_pending()).
 * Data left unread by a reader that let go of WANT_DATA (a full read, whose
 * caller comes back for the rest) is woken for, uncounted. The warning names
 * what was owed; it is not given where the test dropped doorbells on purpose
 * (faults notify_drop, want_late, answer_drop: a late want can be found lost
 * before the answer it waits for is dropped).
 */
static void conn_recheck(struct timer_list *t)
{
	struct ntbsmc_conn *conn = from_timer(conn, t, recheck_timer);
	unsigned int ms = READ_ONCE(ntbsmc_net(conn->dev->net)->recheck_ms);
	unsigned int owed = 0, lost = 0;
	struct sock *sk = NULL;
	unsigned long flags;
	u64 bytes = 0;
	bool again;

	ntbsmc_conn_update(conn);	/* a bad value or a reset ends it, and wakes */
	spin_lock_irqsave(&conn->lock, flags);
	conn_publish_cons_locked(conn);	/* what rx.c held back, once idle */
	if (!conn->err && conn->sk) {
		/* found at the last tick, and still unread and unannounced */
		if (conn->pend_prod > max(conn->rung_prod, conn->rx_cons)) {
			owed |= OWED_DATA;
			if ((conn->pend_flags & NTBSMC_F_WANT_DATA) &&
			    (conn->my_flags & NTBSMC_F_WANT_DATA))
				lost |= OWED_DATA;
		}
		if (conn->pend_cons > conn->rung_cons &&
		    (conn->my_flags & NTBSMC_F_WANT_SPACE)) {
			owed |= OWED_SPACE;
			lost |= OWED_SPACE;
		}
		if (conn->pend_flags & NTBSMC_F_TERMINAL & ~conn->rung_flags) {
			owed |= OWED_END;
			lost |= OWED_END;
		}
	}
	if (owed) {
		int idx = srcu_read_lock(&ntbsmc_srcu);

		/* the peer rang, and its event waits for our tasklet: late, not lost */
		if (lost && conn_link_alive(conn) && ntbsmc_dev_events_pending(conn->dev))
			lost = 0;
		srcu_read_unlock(&ntbsmc_srcu, idx);
		bytes = conn->peer_prod - conn->rx_cons;
		conn_rung_locked(conn);
	}
	/* what the next tick finds owed, if nothing announces it meanwhile */
	conn->pend_prod = conn->peer_prod > max(conn->rung_prod, conn->rx_cons) ?
			  conn->peer_prod : 0;
	conn->pend_cons = (conn->my_flags & NTBSMC_F_WANT_SPACE) &&
			  conn->peer_cons > conn->rung_cons ? conn->peer_cons : 0;
	conn->pend_flags = (conn->peer_flags & NTBSMC_F_TERMINAL & ~conn->rung_flags) |
			   (conn->my_flags & NTBSMC_F_WANT_DATA);
	sk = conn->sk;
	again = sk && ms && !conn->err;
	if (again)
		mod_timer(&conn->recheck_timer, jiffies + msecs_to_jiffies(ms));
	if (owed && sk)
		sock_hold(sk);	/* put below */
	else
		owed = 0;
	spin_unlock_irqrestore(&conn->lock, flags);

	if (lost && owed) {
		ntbsmc_stat_add(conn->dev->net, NTBSMC_STAT_NOTIFY_LOST, 1);
		if (IS_ENABLED(CONFIG_NTBSMC_FAULT_INJECTION) &&
		    !ntbsmc_fault_hit(NTBSMC_FAULT_NOTIFY_DROP) &&
		    !ntbsmc_fault_hit(NTBSMC_FAULT_WANT_LATE) &&
		    !ntbsmc_fault_hit(NTBSMC_FAULT_ANSWER_DROP))
			pr_warn_ratelimited("ntbsmc: %s: slot %u: lost notification: %s unannounced for over %u ms (%llu bytes readable)\n",
					    conn->dev->name, conn->my_slot, conn_owed_name(lost),
					    ms, bytes);
	}
	if (owed) {
		ntbsmc_conn_wake(sk, NTBSMC_WAKE_ALL);
		sock_put(sk);
	}
	if (!again)
		ntbsmc_conn_put(conn);	/* the timer's (ntbsmc_conn_established()) */
}
