// SPDX-License-Identifier: GPL-2.0
/* ntbsmc: the send path: CPU and DMA writes into the peer's buffer, end of data. */

#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include "ntbsmc.h"
#include "fault.h"

/*
 * A zero-copy sender waits, uninterruptibly, for its writes: as long as this at
 * most. Below the floor a busy engine would be dropped for being busy.
 */
#define DMA_TIMEOUT_MIN_MS	10
#define DMA_TIMEOUT_MAX_MS	60000

static unsigned int dma_timeout_ms = 2000;

static int dma_timeout_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, DMA_TIMEOUT_MIN_MS, DMA_TIMEOUT_MAX_MS);
}

static const struct kernel_param_ops dma_timeout_ops = {
	.set = dma_timeout_set,
	.get = param_get_uint,
};
module_param_cb(dma_timeout_ms, &dma_timeout_ops, &dma_timeout_ms, 0644);
MODULE_PARM_DESC(dma_timeout_ms, "A DMA write not completed after this long is redone by the CPU and its channel dropped, 10-60000 (default 2000)");

/*
 * Publishes our producer cursor over bytes already in the peer's buffer: payload,
 * then cursor, each visible before anything that follows (the window is
 * write-combining). Caller holds conn->lock, is in the SRCU section, link ok.
 */
void ntbsmc_conn_publish_locked(struct ntbsmc_conn *conn, u64 prod)
{
	lockdep_assert_held(&conn->lock);
	RCU_LOCKDEP_WARN(!srcu_read_lock_held(&ntbsmc_srcu), "outside the SRCU section");
	wmb();	/* the payload before the cursor over it */
	conn->tx_pub = prod;
	conn_ctl_write64(conn, prod, &conn->tx_ctl->prod);
	wmb();	/* the cursor before what follows (the doorbell, our flags) */
}

/* ---- the segment ring: DMA writes in flight (dma.c submits them) ---- */

enum {
	SEG_PENDING,	/* descriptors in flight */
	SEG_DONE,	/* all called back */
	SEG_REDO,	/* seg_work() is writing it with the CPU */
};

static struct ntbsmc_txseg *seg_at(struct ntbsmc_conn *conn, u32 seq)
{
	return &conn->segs[seq % NTBSMC_TX_SEGS];
}

static void seg_kick_locked(struct ntbsmc_conn *conn, unsigned long delay)
{
	lockdep_assert_held(&conn->lock);
	mod_delayed_work(ntbsmc_dma_wq, &conn->tx_work, delay);
}

static unsigned int seg_retire_done_locked(struct ntbsmc_conn *conn);

/*
 * Entries retired. A sender that may not wait found the ring full and left
 * with -EAGAIN (tx_seg_send()): it waits for EPOLLOUT, and only a free
 * entry brings it. It set ring_eagain under conn->lock and looked at the ring
 * again there, so either it saw this entry free or this sees its flag.
 */
static void seg_wake_sender(struct ntbsmc_conn *conn)
{
	struct sock *sk = NULL;
	unsigned long flags;

	if (!READ_ONCE(conn->ring_eagain))
		return;
	spin_lock_irqsave(&conn->lock, flags);
	if (conn->ring_eagain && conn->seg_tail - conn->seg_head < NTBSMC_TX_SEGS &&
	    conn->sk) {
		conn->ring_eagain = false;
		sk = conn->sk;
		sock_hold(sk);		/* put below; conn->sk is cleared under the lock */
	}
	spin_unlock_irqrestore(&conn->lock, flags);
	if (sk) {
		ntbsmc_conn_wake(sk, NTBSMC_WAKE_OUT);
		sock_put(sk);
	}
}

/*
 * The last descriptor of @seg was called back (or none was issued). Clean
 * segments at the head retire right here, in the engine's completion context;
 * failed ones and the ring's last reference are seg_work()'s.
 */
void ntbsmc_txseg_done(struct ntbsmc_txseg *seg)
{
	struct ntbsmc_conn *conn = seg->conn;
	unsigned int retired = 0;
	unsigned long flags;
	bool wake = false;
	u32 head;

	/* seg_work() may drop the ring's reference once we unlock */
	rcu_read_lock();
	spin_lock_irqsave(&conn->lock, flags);
	seg->state = SEG_DONE;
	if (seg == seg_at(conn, conn->seg_head)) {
		head = conn->seg_head;
		if (!seg->error)
			retired = seg_retire_done_locked(conn);
		/*
		 * The sender waits (tx_seg_wait()) for the ring to drain or for
		 * an entry of a full one: waking it for every segment would cost
		 * it a context switch per 64 KiB.
		 */
		wake = retired && (conn->seg_head == conn->seg_tail ||
				   conn->seg_tail - head >= NTBSMC_TX_SEGS);
		if (conn->seg_head == conn->seg_tail ||
		    seg_at(conn, conn->seg_head)->state == SEG_DONE)
			seg_kick_locked(conn, 0);	/* drained, or one to redo */
	}
	spin_unlock_irqrestore(&conn->lock, flags);
	if (retired)
		ntbsmc_conn_notify_data(conn);
	if (wake) {
		wake_up(&conn->tx_wq);
		seg_wake_sender(conn);
	}
	rcu_read_unlock();
}

/* Writes @seg with the CPU: its DMA failed; nothing of it is in flight. */
static void seg_copy_cpu(struct ntbsmc_txseg *seg)
{
	struct ntbsmc_conn *conn = seg->conn;
	void __iomem *dst;
	u32 done = 0, i;
	int idx;

	idx = srcu_read_lock(&ntbsmc_srcu);
	if (!ntbsmc_conn_link_ok(conn))
		goto out;
	dst = conn->peer_rmb + seg->off;
	ntbsmc_link_wrote(conn->dev, conn, seg->len);
	if (!seg->zc) {
		memcpy_toio(dst, conn->stage + seg->off, seg->len);
		goto out;
	}
	for (i = 0; i < seg->npages && done < seg->len; i++) {
		u32 off = i ? 0 : seg->pg_off;
		u32 n = min_t(u32, PAGE_SIZE - off, seg->len - done);
		void *src = kmap_local_page(seg->pages[i]);

		memcpy_toio(dst + done, src + off, n);
		kunmap_local(src);
		done += n;
	}
out:
	srcu_read_unlock(&ntbsmc_srcu, idx);
}

/*
 * A zero-copy segment's @len bytes, from its pinned pages into the mirror at its
 * offset: what a switch of transport resends once the pages are the caller's
 * again. (Pages are kmapped one at a time; no fault: they are pinned.)
 */
static void seg_mirror_pages(struct ntbsmc_conn *conn, struct ntbsmc_txseg *seg, u32 len)
{
	u32 done = 0, i;

	for (i = 0; i < seg->npages && done < len; i++) {
		u32 off = i ? 0 : seg->pg_off;
		u32 n = min_t(u32, PAGE_SIZE - off, len - done);
		void *src = kmap_local_page(seg->pages[i]);

		memcpy(conn->stage + seg->off + done, src + off, n);
		kunmap_local(src);
		done += n;
	}
}

/* Lets go of a finished segment and counts it; conn->lock held. */
static void seg_release(struct ntbsmc_conn *conn, struct ntbsmc_txseg *seg)
{
	struct net *net = conn->dev->net;

	lockdep_assert_held(&conn->lock);
	ntbsmc_dma_unmap(seg);
	if (seg->error) {
		conn->cpu_bytes += seg->len;
		ntbsmc_stat_add(net, NTBSMC_STAT_CPU_BYTES, seg->len);
		ntbsmc_stat_add(net, NTBSMC_STAT_DMA_FAILED, 1);
	} else {
		conn->dma_bytes += seg->len;
		ntbsmc_stat_add(net, NTBSMC_STAT_DMA_BYTES, seg->len);
		if (seg->zc) {
			conn->zc_bytes += seg->len;
			ntbsmc_stat_add(net, NTBSMC_STAT_ZC_BYTES, seg->len);
		}
	}
	ntbsmc_dma_put(seg->dma);
	conn->seg_head++;
}

/* Publishes the producer cursor up to @end; conn->lock held. */
static void seg_publish_locked(struct ntbsmc_conn *conn, u64 end)
{
	int idx;

	lockdep_assert_held(&conn->lock);
	idx = srcu_read_lock(&ntbsmc_srcu);
	if (ntbsmc_conn_link_ok(conn))
		ntbsmc_conn_publish_locked(conn, end);
	srcu_read_unlock(&ntbsmc_srcu, idx);
}

/*
 * Retires the segments at the head whose DMA completed cleanly and publishes the
 * cursor over them: what the engine wrote is in the peer's buffer (providers make
 * their writes visible before calling back). Returns how many. conn->lock held.
 */
static unsigned int seg_retire_done_locked(struct ntbsmc_conn *conn)
{
	struct ntbsmc_txseg *seg;
	unsigned int n = 0;
	u64 end = 0;

	lockdep_assert_held(&conn->lock);
	while (conn->seg_head != conn->seg_tail) {
		seg = seg_at(conn, conn->seg_head);
		if (seg->state != SEG_DONE || seg->error)
			break;
		end = seg->end;
		seg_release(conn, seg);
		n++;
	}
	if (n)
		seg_publish_locked(conn, end);
	return n;
}

/*
 * What the completion path leaves: segments to write again with the CPU (their
 * DMA failed, or their channel was killed with them in flight), the deadline of
 * the oldest one in flight (after which its channel is killed), and the ring's
 * reference once it drained. Runs in order; re-arms itself while any is in flight.
 */
static void seg_work(struct work_struct *work)
{
	struct ntbsmc_conn *conn = container_of(to_delayed_work(work), struct ntbsmc_conn,
						tx_work);
	struct ntbsmc_dma *kill = NULL;
	struct ntbsmc_txseg *seg;
	bool published = false;
	unsigned long flags;
	u64 end;

	for (;;) {
		spin_lock_irqsave(&conn->lock, flags);
		if (seg_retire_done_locked(conn))
			published = true;
		if (conn->seg_head == conn->seg_tail)
			break;
		seg = seg_at(conn, conn->seg_head);
		if (seg->state == SEG_PENDING) {
			if (!ntbsmc_dma_terminated(seg->dma)) {
				unsigned long now = jiffies;

				if (time_before(now, seg->deadline)) {
					seg_kick_locked(conn, seg->deadline - now);
				} else {
					kill = seg->dma;
					ntbsmc_dma_get(kill);	/* put below */
					seg_kick_locked(conn, msecs_to_jiffies(20));
				}
				spin_unlock_irqrestore(&conn->lock, flags);
				goto out;
			}
			/* its channel was terminated: it will never be called back */
			seg->error = true;
		}
		/* DONE with an error, or abandoned: ours to write again */
		seg->state = SEG_REDO;
		spin_unlock_irqrestore(&conn->lock, flags);

		seg_copy_cpu(seg);

		spin_lock_irqsave(&conn->lock, flags);
		/* once released, the sender may fill the entry again */
		end = seg->end;
		seg_release(conn, seg);
		seg_publish_locked(conn, end);
		spin_unlock_irqrestore(&conn->lock, flags);
		published = true;
		wake_up(&conn->tx_wq);
		seg_wake_sender(conn);
	}
	/* Drained, conn->lock held: nothing is in flight, nothing will kick us. */
	if (!conn->ring_ref) {
		spin_unlock_irqrestore(&conn->lock, flags);
		goto out;
	}
	conn->ring_ref = false;
	cancel_delayed_work(&conn->tx_work);
	spin_unlock_irqrestore(&conn->lock, flags);
	wake_up(&conn->tx_wq);
	seg_wake_sender(conn);
	if (published)
		ntbsmc_conn_notify_data(conn);
	ntbsmc_conn_tx_idle(conn);
	ntbsmc_conn_put(conn);		/* the ring's, from tx_seg_send() */
	return;

out:
	wake_up(&conn->tx_wq);
	seg_wake_sender(conn);
	if (published)
		ntbsmc_conn_notify_data(conn);
	if (kill) {
		net_info_ratelimited("ntbsmc: %s: DMA write not completed in %u ms\n",
				     conn->dev->name, dma_timeout_ms);
		ntbsmc_dma_kill_async(kill);
		ntbsmc_dma_put(kill);
	}
}

/*
 * Waits until segments before @upto retired; bounded by the DMA timeout. @upto is
 * the ring's tail (drained) or makes one entry of a full ring free:
 * ntbsmc_txseg_done() wakes for nothing else.
 */
static bool tx_seg_wait(struct ntbsmc_conn *conn, u32 upto)
{
	might_sleep();
	WARN_ON_ONCE(upto != conn->seg_tail && upto != conn->seg_tail - NTBSMC_TX_SEGS + 1);
	/*
	 * Not across a switch of transport: the socket lock we hold is the
	 * switch's too, and an engine that cannot be stopped may keep its
	 * segments long after the link went (ntbsmc_conn_failover() wakes us).
	 * The mirror holds what they carry; their pages stay pinned until they
	 * retire. False if it left for the switch.
	 */
	wait_event(conn->tx_wq, (s32)(READ_ONCE(conn->seg_head) - upto) >= 0 ||
		   ntbsmc_conn_switching(conn));
	return (s32)(READ_ONCE(conn->seg_head) - upto) >= 0;
}

/*
 * Sends up to @n bytes of @msg (that much space is free in the peer's buffer) by
 * DMA at our producer cursor: from pinned user pages if @zc, else from a kernel
 * copy. The cursor is published when the segment retires. Returns the bytes
 * taken, 0 if DMA cannot take them (the caller copies with the CPU), or -errno:
 * -EAGAIN for a @nonblock sender that finds the ring full. Called with the
 * socket locked.
 */
static int tx_seg_send(struct ntbsmc_conn *conn, struct msghdr *msg, u32 n, bool zc,
		       bool nonblock)
{
	u32 off = conn->tx_prod & (conn->peer_rmb_size - 1), len;
	struct ntbsmc_txseg *seg;
	struct ntbsmc_dma *d;
	unsigned long flags;
	int rc = 0, idx;

	if (!conn->segs) {
		conn->segs = kvcalloc(NTBSMC_TX_SEGS, sizeof(*conn->segs), GFP_KERNEL);
		if (!conn->segs)
			return 0;
	}
	if (!zc && !conn->stage) {
		conn->stage = (void *)__get_free_pages(GFP_KERNEL | __GFP_NOWARN | __GFP_NORETRY,
						       get_order(conn->peer_rmb_size));
		if (!conn->stage)
			return 0;
	}
	/*
	 * A free ring entry: only we fill it, so it stays free. A sender that may
	 * not block gets none while the engine is busy, as TCP's finds no memory,
	 * and EPOLLOUT once one is free (seg_wake_sender()).
	 */
	if (conn->seg_tail - READ_ONCE(conn->seg_head) >= NTBSMC_TX_SEGS) {
		if (nonblock) {
			bool full;

			spin_lock_irqsave(&conn->lock, flags);
			full = conn->seg_tail - conn->seg_head >= NTBSMC_TX_SEGS;
			conn->ring_eagain |= full;
			spin_unlock_irqrestore(&conn->lock, flags);
			if (full)
				return -EAGAIN;
		} else if (!tx_seg_wait(conn, conn->seg_tail - NTBSMC_TX_SEGS + 1)) {
			return -NTBSMC_ESWITCH;
		}
	}

	len = min3(n, conn->peer_rmb_size - off, (u32)NTBSMC_CHUNK);
	seg = seg_at(conn, conn->seg_tail);
	memset(seg, 0, offsetof(struct ntbsmc_txseg, pages));
	seg->conn = conn;
	seg->off = off;
	seg->zc = zc;
	seg->src = DMA_MAPPING_ERROR;

	/*
	 * The data is taken (pinned, or copied into the staging buffer) before the
	 * SRCU section: a page fault that waits (userfaultfd, FUSE) must not hold
	 * up the device's teardown, which waits for the section to end.
	 */
	if (!rcu_access_pointer(conn->dev->dma))
		return 0;
	if (zc) {
		rc = ntbsmc_dma_pin(seg, msg, &len);
		if (rc == -EAGAIN) {
			zc = false;	/* not user memory here: stage it */
			seg->zc = false;
			if (!conn->stage)
				return 0;
		} else if (rc) {
			return rc;
		}
		/* the engine reads the pages, the mirror keeps a copy */
		if (zc && conn->mirror)
			seg_mirror_pages(conn, seg, len);
	}
	if (!zc) {
		len = copy_from_iter(conn->stage + off, len, &msg->msg_iter);
		if (!len)
			return -EFAULT;
	}

	idx = srcu_read_lock(&ntbsmc_srcu);
	d = srcu_dereference(conn->dev->dma, &ntbsmc_srcu);
	if (!d || !ntbsmc_conn_link_ok(conn)) {
		/* 0: the CPU path sends the data again and finds out what is wrong */
		srcu_read_unlock(&ntbsmc_srcu, idx);
		if (zc)
			unpin_user_pages(seg->pages, seg->npages);
		iov_iter_revert(&msg->msg_iter, len);
		return 0;
	}
	seg->len = len;
	seg->end = conn->tx_prod + len;
	seg->dma = d;
	ntbsmc_dma_get(d);		/* put when the segment retires */
	atomic_set(&seg->descs, 1);	/* ours until all are submitted */
	seg->deadline = jiffies + msecs_to_jiffies(READ_ONCE(dma_timeout_ms));

	spin_lock_irqsave(&conn->lock, flags);
	if (!conn->ring_ref) {
		refcount_inc(&conn->ref);	/* the ring's, put by seg_work() */
		conn->ring_ref = true;
	}
	/* seg_work() then keeps itself armed for the oldest one */
	if (conn->seg_head == conn->seg_tail)
		seg_kick_locked(conn, msecs_to_jiffies(READ_ONCE(dma_timeout_ms)));
	seg->state = SEG_PENDING;
	conn->seg_tail++;
	spin_unlock_irqrestore(&conn->lock, flags);
	conn->tx_prod += len;

	/* the engine's posted writes: one range, counted as one */
	ntbsmc_link_wrote(conn->dev, conn, len);
	ntbsmc_dma_submit(seg);
	if (atomic_dec_and_test(&seg->descs))
		ntbsmc_txseg_done(seg);
	srcu_read_unlock(&ntbsmc_srcu, idx);
	return len;
}

void ntbsmc_tx_conn_init(struct ntbsmc_conn *conn)
{
	INIT_DELAYED_WORK(&conn->tx_work, seg_work);
	init_waitqueue_head(&conn->tx_wq);
}

/*
 * Version 7: the stage becomes the copy of what we wrote that a switch of
 * transport resends from. Allocated now, as large as the peer's buffer; one
 * that cannot have it runs as version 6 would (reset on link loss), counted.
 * Called by the handshake before the connection is established.
 */
void ntbsmc_tx_mirror_init(struct ntbsmc_conn *conn)
{
	if (conn->version < NTBSMC_CLC_VERSION_SWITCH)
		return;
	if (!conn->stage)
		conn->stage = (void *)__get_free_pages(GFP_KERNEL | __GFP_NOWARN,
						       get_order(conn->peer_rmb_size));
	conn->mirror = !!conn->stage;
	if (!conn->mirror)
		ntbsmc_stat_add(conn->dev->net, NTBSMC_STAT_NO_MIRROR, 1);
}

/* The connection is freed: its ring is empty (it held a reference otherwise). */
void ntbsmc_tx_conn_free(struct ntbsmc_conn *conn)
{
	kvfree(conn->segs);
	if (conn->stage)
		free_pages((unsigned long)conn->stage, get_order(conn->peer_rmb_size));
}

/* ---- CPU copies, sendmsg ---- */

/*
 * Copies user data into the peer's buffer at our producer cursor, wrapping, with
 * page faults disabled (we are in the SRCU section): returns the bytes copied,
 * fewer than @n where a page was not present.
 */
static u32 conn_copy_out(struct ntbsmc_conn *conn, struct msghdr *msg, u32 n)
{
	u32 off = conn->tx_prod & (conn->peer_rmb_size - 1);
	u32 first = min(n, conn->peer_rmb_size - off);
	/*
	 * No accessor copies from an iov_iter into I/O memory, and one through a
	 * bounce buffer would cost a second copy. The window is ordinary memory to
	 * the CPU, mapped write-combining (dev.c: ioremap_wc()), where plain
	 * and non-temporal stores are what memcpy_toio() itself does on x86; they
	 * are ordered before the cursor by ntbsmc_conn_publish_locked()'s wmb().
	 * Nothing reads through it, so no load is left to the CPU's choosing.
	 */
	void *dst = (void __force *)conn->peer_rmb;
	size_t done;

	pagefault_disable();
	/* Non-temporal stores: the window is write-combining. */
	done = copy_from_iter_nocache(dst + off, first, &msg->msg_iter);
	if (done)
		ntbsmc_link_wrote(conn->dev, conn, done);
	if (done == first && n > first) {
		size_t more = copy_from_iter_nocache(dst, n - first, &msg->msg_iter);

		if (more)
			ntbsmc_link_wrote(conn->dev, conn, more);
		done += more;
	}
	pagefault_enable();
	return done;
}

/*
 * The mirror's CPU path, first half: up to @n bytes of @msg into the stage at our
 * producer cursor, wrapping, outside the SRCU section (a page fault may wait).
 * Returns the bytes taken: 0 only if none could be (a bad address).
 */
static u32 conn_stage_in(struct ntbsmc_conn *conn, struct msghdr *msg, u32 n)
{
	u32 off = conn->tx_prod & (conn->peer_rmb_size - 1);
	u32 first = min(n, conn->peer_rmb_size - off);
	size_t done;

	done = copy_from_iter(conn->stage + off, first, &msg->msg_iter);
	if (done == first && n > first)
		done += copy_from_iter(conn->stage, n - first, &msg->msg_iter);
	return done;
}

/*
 * ... and second: the @n staged bytes into the peer's buffer, as
 * seg_copy_cpu() writes a segment. In the SRCU section, link ok.
 */
static u32 conn_stage_out(struct ntbsmc_conn *conn, u32 n)
{
	u32 off = conn->tx_prod & (conn->peer_rmb_size - 1);
	u32 first = min(n, conn->peer_rmb_size - off);

	memcpy_toio(conn->peer_rmb + off, conn->stage + off, first);
	ntbsmc_link_wrote(conn->dev, conn, first);
	if (n > first) {
		memcpy_toio(conn->peer_rmb, conn->stage, n - first);
		ntbsmc_link_wrote(conn->dev, conn, n - first);
	}
	return n;
}

/*
 * Copies up to @n bytes with the CPU into the peer's buffer and publishes them;
 * returns how many (0: a page went away since it was faulted in, try again) or
 * -errno. Writes still in flight by DMA come first: the cursor is published in
 * order. A page fault never happens inside the SRCU section: one that waits
 * (userfaultfd, FUSE) would hold up the device's teardown, which waits for the
 * section to end; the source is faulted in before it.
 */
static int conn_send_cpu(struct sock *sk, struct ntbsmc_conn *conn, struct msghdr *msg, u32 n)
{
	unsigned long flags;
	u32 done = 0, staged = 0;
	int err = 0, idx;
	bool idle;

	if (conn->mirror) {
		staged = conn_stage_in(conn, msg, n);
		if (!staged)
			return -EFAULT;
	} else if (fault_in_iov_iter_readable(&msg->msg_iter, n) == n) {
		return -EFAULT;
	}
	if (conn->seg_head != conn->seg_tail && !tx_seg_wait(conn, conn->seg_tail)) {
		if (staged)
			iov_iter_revert(&msg->msg_iter, staged);	/* not sent */
		return -NTBSMC_ESWITCH;
	}
	spin_lock_irqsave(&conn->lock, flags);
	conn->tx_busy++;
	spin_unlock_irqrestore(&conn->lock, flags);

	idx = srcu_read_lock(&ntbsmc_srcu);
	if (!conn_link_ok(conn))
		err = -ECONNRESET;
	else if (staged)
		done = conn_stage_out(conn, staged);
	else
		done = conn_copy_out(conn, msg, n);
	spin_lock_irqsave(&conn->lock, flags);
	conn->tx_busy--;
	if (!err && conn_link_ok(conn)) {
		conn->tx_prod += done;
		conn->cpu_bytes += done;
		ntbsmc_conn_publish_locked(conn, conn->tx_prod);
		if (done && ntbsmc_fault(NTBSMC_FAULT_TX_BAD_CURSOR, sk))
			conn_ctl_write64(conn, conn->tx_prod + 2ULL * conn->peer_rmb_size,
					 &conn->tx_ctl->prod);
	} else if (!err) {
		err = -ECONNRESET;
	}
	idle = !conn->tx_busy && (conn->my_flags & NTBSMC_F_TERMINAL);
	spin_unlock_irqrestore(&conn->lock, flags);
	srcu_read_unlock(&ntbsmc_srcu, idx);
	if (idle)
		ntbsmc_conn_tx_idle(conn);
	if (err && staged)
		iov_iter_revert(&msg->msg_iter, staged);	/* not sent */
	return err ?: done;
}

static bool conn_writable(struct ntbsmc_conn *conn)
{
	return conn_space(conn) || READ_ONCE(conn->err) ||
	       (READ_ONCE(conn->peer_flags) & NTBSMC_F_CLOSED) || ntbsmc_conn_switching(conn);
}

/*
 * Called with the socket locked. Returns bytes sent or a negative errno. Bytes
 * taken are in the peer's buffer or, with DMA, in a kernel copy on their way; a
 * zero-copy send returns only once the engine is done with the caller's pages.
 * A sender that may not wait (MSG_DONTWAIT, O_NONBLOCK, a zero SO_SNDTIMEO)
 * returns what it sent or -EAGAIN, as TCP's: its data is staged, never sent
 * zero-copy, and a full segment ring ends its send.
 */
int ntbsmc_conn_sendmsg(struct sock *sk, struct ntbsmc_conn *conn,
			struct msghdr *msg, size_t len)
{
	long timeo = sock_sndtimeo(sk, msg->msg_flags & MSG_DONTWAIT);
	enum ntbsmc_tx_path path = ntbsmc_dma_path(sk, conn, msg, len);
	size_t copied = 0, cpu = 0;
	bool nonblock = !timeo;
	bool zc_sent = false;
	int err = 0, rc;
	u32 n;

	sock_owned_by_me(sk);
	if (path == NTBSMC_TX_ZC && nonblock)
		path = NTBSMC_TX_DMA;
	ntbsmc_conn_check_tcp(sk, conn);
	while (msg_data_left(msg)) {
		/* the rest goes over TCP; conn_writable() would not let us sleep */
		if (ntbsmc_conn_switching(conn)) {
			err = -NTBSMC_ESWITCH;
			break;
		}
		err = ntbsmc_conn_update(conn);
		if (err)
			break;
		if ((sk->sk_shutdown & SEND_SHUTDOWN) ||
		    (conn->peer_flags & NTBSMC_F_CLOSED)) {
			err = -EPIPE;
			break;
		}
		n = min_t(size_t, conn_space(conn), msg_data_left(msg));
		if (!n) {
			ntbsmc_stat_add(sock_net(sk), NTBSMC_STAT_BUF_FULL, 1);
			err = ntbsmc_conn_wait(sk, conn, NTBSMC_F_WANT_SPACE, conn_writable,
					       &timeo);
			if (err)
				break;
			continue;
		}
		ntbsmc_conn_unwant(sk, conn, NTBSMC_F_WANT_SPACE);
		if (path != NTBSMC_TX_CPU) {
			rc = tx_seg_send(conn, msg, n, path == NTBSMC_TX_ZC, nonblock);
			if (rc < 0) {
				err = rc;
				break;
			}
			if (rc) {
				copied += rc;
				conn->tx_bytes += rc;
				zc_sent |= path == NTBSMC_TX_ZC;
				continue;
			}
			path = NTBSMC_TX_CPU;	/* no channel (any more), no memory */
		}
		n = min_t(u32, n, NTBSMC_CHUNK);
		rc = conn_send_cpu(sk, conn, msg, n);
		if (rc < 0) {
			err = rc;
			break;
		}
		copied += rc;
		cpu += rc;
		conn->tx_bytes += rc;
		if (rc)
			ntbsmc_conn_notify(conn, NTBSMC_F_WANT_DATA);
	}
	/* The engine may still be reading the caller's pages. */
	if (zc_sent)
		tx_seg_wait(conn, conn->seg_tail);
	if (copied) {
		ntbsmc_stat_add(sock_net(sk), NTBSMC_STAT_TX_BYTES, copied);
		ntbsmc_stat_add(sock_net(sk), NTBSMC_STAT_CPU_BYTES, cpu);
		return copied;
	}
	if (err && err != -EAGAIN && ntbsmc_conn_switching(conn))
		return -NTBSMC_ESWITCH;
	if (err == -ECONNRESET && sk->sk_err)
		err = sock_error(sk);	/* reported once, as TCP does */
	if (err == -EPIPE && !(msg->msg_flags & MSG_NOSIGNAL))
		send_sig(SIGPIPE, current, 0);
	return err;
}

/* ---- end of data ---- */

/*
 * shutdown(): SHUT_WR, the peer reads EOF after the data already in its buffer
 * (or on its way: the flag waits for DMA in flight); SHUT_RD, reads return EOF
 * once what arrived was read.
 */
void ntbsmc_conn_shutdown(struct ntbsmc_conn *conn, int how)
{
	unsigned long flags;
	int idx;

	if (how & RCV_SHUTDOWN)
		WRITE_ONCE(conn->rd_shut, true);
	if (!(how & SEND_SHUTDOWN))
		return;
	spin_lock_irqsave(&conn->lock, flags);
	conn->my_flags |= NTBSMC_F_WRITE_DONE;
	idx = srcu_read_lock(&ntbsmc_srcu);
	if (conn_link_ok(conn))
		ntbsmc_conn_publish_flags(conn);
	srcu_read_unlock(&ntbsmc_srcu, idx);
	spin_unlock_irqrestore(&conn->lock, flags);
	if (conn_link_ok(conn))
		ntbsmc_dev_post_event(conn->dev, conn);
}

/* No write of ours into the peer's buffer is in flight. */
static bool conn_tx_drained(struct ntbsmc_conn *conn)
{
	unsigned long flags;
	bool drained;

	spin_lock_irqsave(&conn->lock, flags);
	drained = !conn_tx_inflight(conn);
	spin_unlock_irqrestore(&conn->lock, flags);
	return drained;
}

/*
 * close() with SO_LINGER: waits up to @timeout (jiffies) until everything
 * written is in the peer's buffer, as TCP's waits for its data to be acked.
 * Socket locked: the writes retire without it.
 */
void ntbsmc_conn_linger(struct ntbsmc_conn *conn, long timeout)
{
	might_sleep();
	wait_event_interruptible_timeout(conn->tx_wq, conn_tx_drained(conn), timeout);
}
