// SPDX-License-Identifier: GPL-2.0
/* ntbsmc: the receive path: reads out of our buffer, poll(), queue sizes for ioctl(). */

#include <linux/io.h>
#include <linux/uio.h>
#include "ntbsmc.h"
#include "fault.h"

/*
 * The peer's end of data: signalled in the ring, after its last byte. TCP's FIN
 * is not: the peer's socket may close while its last writes are still on their
 * way (DMA), and its TCP close does not wait for them.
 */
static bool conn_peer_done(struct ntbsmc_conn *conn)
{
	return READ_ONCE(conn->peer_flags) & (NTBSMC_F_WRITE_DONE | NTBSMC_F_CLOSED);
}

static bool conn_readable(struct ntbsmc_conn *conn)
{
	return conn_avail(conn) || conn_peer_done(conn) || READ_ONCE(conn->err) ||
	       ntbsmc_conn_switching(conn);
}

/* Like conn_copy_out(), the other way: page faults disabled, bytes copied. */
static u32 conn_copy_in(struct ntbsmc_conn *conn, struct msghdr *msg, u64 from, u32 n)
{
	u32 off = from & (conn->rmb_size - 1);
	u32 first = min(n, conn->rmb_size - off);
	size_t done;

	pagefault_disable();
	done = copy_to_iter(conn->rmb + off, first, &msg->msg_iter);
	if (done == first && n > first)
		done += copy_to_iter(conn->rmb, n - first, &msg->msg_iter);
	pagefault_enable();
	return done;
}

/*
 * Before recvmsg() returns: WANT_DATA set and announced to the peer, then one
 * more look (steps 1-3 of "Notifications"). True if the peer's producer moved
 * since the caller last looked: data no doorbell will announce.
 */
static bool conn_rx_arm(struct ntbsmc_conn *conn)
{
	u64 seen = READ_ONCE(conn->peer_prod);

	/* Already set: the peer has known it since it was announced. */
	if (!ntbsmc_conn_want(conn, NTBSMC_F_WANT_DATA, true))
		return false;
	ntbsmc_conn_update(conn);
	return READ_ONCE(conn->peer_prod) != seen;
}

/* Called with the socket locked. Returns bytes read, 0 at EOF, or -errno. */
int ntbsmc_conn_recvmsg(struct sock *sk, struct ntbsmc_conn *conn,
			struct msghdr *msg, size_t len, int flags)
{
	long timeo = sock_rcvtimeo(sk, flags & MSG_DONTWAIT);
	int target = sock_rcvlowat(sk, flags & MSG_WAITALL, len);
	bool peek = flags & MSG_PEEK, told = true;
	size_t copied = 0;
	int err = 0, idx;
	u32 avail, n;

	sock_owned_by_me(sk);
	if (!len)
		return 0;
	ntbsmc_conn_check_tcp(sk, conn);
	while (copied < len) {
		/*
		 * The link went under a connection that can switch: the rest is
		 * the switch's, and conn_readable() would not let us sleep.
		 */
		if (ntbsmc_conn_switching(conn)) {
			err = -NTBSMC_ESWITCH;
			break;
		}
		err = ntbsmc_conn_update(conn);
		/*
		 * Like TCP, which reads what arrived before a reset: data the peer
		 * published before it reset is read first, while the link it came
		 * over is up (our buffer is in our window; the cursor over it was
		 * validated when it came).
		 */
		if (err && !(err == -ECONNRESET && conn_avail(conn) - (peek ? copied : 0) &&
			     READ_ONCE(conn->established) && conn_link_alive(conn)))
			break;
		avail = conn_avail(conn) - (peek ? copied : 0);
		if (avail) {
			unsigned long lflags;

			/*
			 * More than this chunk to copy now: the writer need not
			 * ring while we do (conn_rx_arm() sets it again).
			 */
			if (avail > NTBSMC_CHUNK && len - copied > NTBSMC_CHUNK)
				ntbsmc_conn_unwant(sk, conn, NTBSMC_F_WANT_DATA);
			n = min_t(size_t, min_t(size_t, avail, len - copied), NTBSMC_CHUNK);
			/* no page fault inside the SRCU section (conn_send_cpu()) */
			if (fault_in_iov_iter_writeable(&msg->msg_iter, n) == n) {
				err = -EFAULT;
				break;
			}
			idx = srcu_read_lock(&ntbsmc_srcu);
			if (!conn_link_alive(conn)) {
				srcu_read_unlock(&ntbsmc_srcu, idx);
				err = -ECONNRESET;
				break;
			}
			rmb();	/* the cursor was written after the payload */
			n = conn_copy_in(conn, msg, conn->rx_cons + (peek ? copied : 0), n);
			if (!peek) {
				/* under the lock: never after our DETACHED */
				spin_lock_irqsave(&conn->lock, lflags);
				conn->rx_cons += n;
				/*
				 * Our reads of the ring before the cursor that
				 * lets the peer overwrite it: a store barrier
				 * does not order loads (arm64's writeq neither).
				 */
				mb();
				/*
				 * The peer hears of the space when it waits for
				 * it (WANT_SPACE, or its want's answer), or once
				 * a quarter of the buffer came free; a small
				 * message costs no write of ours.
				 */
				if ((conn->peer_flags & NTBSMC_F_WANT_SPACE) ||
				    conn->rx_cons - conn->rx_cons_pub >= conn->rmb_size / 4)
					conn_publish_cons_locked(conn);
				spin_unlock_irqrestore(&conn->lock, lflags);
			}
			srcu_read_unlock(&ntbsmc_srcu, idx);
			copied += n;
			if (peek)
				continue;
			conn->rx_bytes += n;
			/*
			 * A writer waiting for space hears of it once a quarter of
			 * the buffer is free, and when we stop reading: not for
			 * every chunk, each ring would cost it a wakeup for a
			 * chunk's worth of space (TCP's silly window avoidance).
			 */
			told = conn_avail(conn) <= conn->rmb_size - conn->rmb_size / 4;
			if (told)
				ntbsmc_conn_notify(conn, NTBSMC_F_WANT_SPACE);
			continue;
		}
		if (copied >= target || conn_peer_done(conn) || READ_ONCE(conn->rd_shut)) {
			/* drained: what came while WANT_DATA was off is read too */
			if (conn_rx_arm(conn))
				continue;
			break;
		}
		err = ntbsmc_conn_wait(sk, conn, NTBSMC_F_WANT_DATA, conn_readable, &timeo);
		if (err)
			break;
	}
	if (!told)
		ntbsmc_conn_notify(conn, NTBSMC_F_WANT_SPACE);
	/*
	 * WANT_DATA on the way out. A read that drained the ring, or only
	 * peeked, may be followed by a wait for an edge: set it, and data that
	 * came meanwhile wakes the socket, as its arrival would TCP's. A read
	 * that leaves bytes was a full one: its caller comes back for them (so
	 * edge-triggered epoll's contract says) and then drains and sets it; the
	 * writer need not ring for every chunk meanwhile.
	 */
	if (!READ_ONCE(conn->err)) {
		if (peek || !conn_avail(conn)) {
			if (conn_rx_arm(conn))
				ntbsmc_conn_wake(sk, NTBSMC_WAKE_IN);
		} else {
			ntbsmc_conn_unwant(sk, conn, NTBSMC_F_WANT_DATA);
		}
	}
	if (copied) {
		if (!peek)
			ntbsmc_stat_add(sock_net(sk), NTBSMC_STAT_RX_BYTES, copied);
		return copied;
	}
	if (err && ntbsmc_conn_switching(conn))
		return -NTBSMC_ESWITCH;
	if (err == -ECONNRESET && conn->err) {
		/* like TCP: a reset is reported once, then reads return EOF */
		err = sock_error(sk);
	}
	return err;
}

/* ---- poll(), the queue sizes ioctl() reports ---- */

/* What poll() reports, from the state ntbsmc_conn_update() (returning @rc) just read. */
static __poll_t conn_poll_mask(struct sock *sk, struct ntbsmc_conn *conn, int rc)
{
	__poll_t mask = 0;

	if (rc || READ_ONCE(conn->err))
		mask |= EPOLLERR | EPOLLHUP | EPOLLIN | EPOLLRDNORM | EPOLLOUT;
	if (conn_avail(conn))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (conn_peer_done(conn) || READ_ONCE(conn->rd_shut))
		mask |= EPOLLIN | EPOLLRDNORM | EPOLLRDHUP;
	if (conn_peer_done(conn) && (sk->sk_shutdown & SEND_SHUTDOWN))
		mask |= EPOLLHUP;
	if (!(sk->sk_shutdown & SEND_SHUTDOWN) &&
	    (conn_space(conn) || (conn->peer_flags & NTBSMC_F_CLOSED)))
		mask |= EPOLLOUT | EPOLLWRNORM;
	if (sk->sk_shutdown & SEND_SHUTDOWN)
		mask |= EPOLLOUT | EPOLLWRNORM;
	return mask;
}

__poll_t ntbsmc_conn_poll(struct sock *sk, struct ntbsmc_conn *conn)
{
	__poll_t mask;

	/* nothing to report until the switch ends: its end wakes the socket */
	if (ntbsmc_conn_switching(conn))
		return 0;
	ntbsmc_conn_check_tcp(sk, conn);
	mask = conn_poll_mask(sk, conn, ntbsmc_conn_update(conn));
	/* readable and writable (an error is both): nothing to wait for */
	if ((mask & (EPOLLIN | EPOLLOUT)) == (EPOLLIN | EPOLLOUT))
		return mask;
	/* Whoever polls will sleep until something changes: ask for doorbells. */
	if (!(mask & EPOLLIN))
		ntbsmc_conn_want(conn, NTBSMC_F_WANT_DATA, true);
	if (!(mask & EPOLLOUT))
		ntbsmc_conn_want(conn, NTBSMC_F_WANT_SPACE, true);
	/*
	 * Whatever came before the peer saw our flags rang no doorbell: look
	 * again, and report all of it (a shutdown seen only now is IN and RDHUP).
	 */
	ntbsmc_fault_delay(NTBSMC_FAULT_POLL_ARM_DELAY, sk);
	mask |= conn_poll_mask(sk, conn, ntbsmc_conn_update(conn));
	return mask;
}

int ntbsmc_conn_inq(struct ntbsmc_conn *conn)
{
	ntbsmc_conn_update(conn);
	return min_t(u64, conn_avail(conn), INT_MAX);
}

int ntbsmc_conn_outq(struct ntbsmc_conn *conn)
{
	ntbsmc_conn_update(conn);
	return conn->tx_prod - READ_ONCE(conn->peer_cons);
}
