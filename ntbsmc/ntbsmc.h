/* SPDX-License-Identifier: GPL-2.0 */
/* ntbsmc: internal interfaces, grouped by the file that implements them. */

/*
 * Locking and lifetimes (the comments at each structure have the details)
 *
 * struct ntbsmc_dev (dev.c): kref; the NTB client's reference from probe to
 * ntbsmc_remove(), one per connection (put in conn_free()), one per DMA channel
 * record (put in dma_free_work()), one from ntbsmc_dev_find_active() to its
 * caller. On ntbsmc_devs under ntbsmc_devs_lock; netlink dumps walk it there.
 * dev->ntb and the windows are used inside ntbsmc_srcu read sections, by
 * connections of the current epoch: going down aborts every connection and
 * waits for those sections (ntbsmc_dma_detach()), ntbsmc_remove() too before it
 * unmaps the windows.
 *
 * struct ntbsmc_conn (conn.c): refcount, freed by conn_free() after an RCU grace
 * period. The handshake worker holds the socket's reference from
 * ntbsmc_conn_alloc() until ntbsmc_sock_set_conn() hands it over (or releases
 * it); once released, conn_maybe_release() puts it when the slot is given back.
 * hold_timer and recheck_timer hold one while pending, the segment ring one
 * while a write is in flight (ring_ref; tx_work runs under it), the test
 * build's want_late_work one while pending. The event
 * tasklet and dev_abort_all() find connections in dev->conns[] under RCU and
 * take one with refcount_inc_not_zero(). A DMA completion uses its connection
 * under rcu_read_lock() (ntbsmc_txseg_done()). conn->sk is cleared under
 * conn->lock by ntbsmc_conn_release(); the abort, the event and the re-check
 * sock_hold() it there before they wake the socket.
 *
 * The switch to TCP (Documentation/switch.md): ntbsmc_conn_failover(), under
 * dev->lock in the link's teardown, copies the unread bytes into conn->sw_keep
 * (the connection's until handed over, freed by conn_free()) and has
 * ntbsmc_ulp_switch() queue the socket's switch work, which holds a reference
 * on the socket, its context and the connection (ctx->sw_conn) until it ends;
 * the work hands the bytes to ctx->sw_keep (freed by the context's last put).
 * close() and connect(AF_UNSPEC) wait for the work's end (its bound).
 *
 * struct ntbsmc_sock (ulp.c): see its comment. ctx->conn is set and cleared
 * under ntbsmc_socks_lock, so the connection dump (under that lock, an RCU read
 * side) never sees it freed; the socket reads it under its lock, poll() and
 * ioctl() once NTB mode was published (ctx_conn()).
 *
 * struct ntbsmc_dma (dma.c): kref; dev->dma's (put by dma_kill()), one per
 * segment on it (put when the segment retires), and short-lived ones around a
 * kill (ntbsmc_dma_detach(), ntbsmc_dma_kill_async(), a timed-out segment).
 * dev->dma is set and cleared under dev->dma_lock and read under ntbsmc_srcu.
 * A record cleared from dev->dma is counted in dev->dma_killing (under
 * dev->dma_lock) until its channel was released: ntbsmc_dma_detach() waits
 * for the count to drop to zero, so the device's next epoch and its removal
 * come after every engine of the last epoch stopped. dma.c's opening comment
 * says why, what a stuck engine holds, and for how long.
 *
 * The segment ring (struct ntbsmc_txseg, tx.c): conn->segs, allocated by the
 * first DMA write and freed with the connection. The sender fills the tail
 * under the socket lock; completions and tx_work retire the head under
 * conn->lock. The engine may use an entry until its channel is terminated.
 *
 * Lock order, outer first:
 *   ntbsmc_devs_lock -> dev->lock -> dev->dma_lock -> dmaengine's dma_list_mutex
 *   dev->lock -> dev->slot_lock
 *   dev->lock -> conn->lock, ntbsmc_socks_lock (ntbsmc_conn_failover())
 *   dma_list_mutex -> conn->lock (a channel's release calls segments back)
 *   socket lock -> ntbsmc_socks_lock
 *   socket lock -> conn->lock -> ntbsmc_srcu read side
 * Windows are written inside the SRCU read side, which may also enclose
 * conn->lock or dev->dma_lock, but never a page fault or anything that waits
 * for it: dev->lock's holders and dma_kill() synchronize it. dev->ev_lock and
 * dev->slot_lock are innermost; no one takes conn->lock under either.
 */

#ifndef NTBSMC_H
#define NTBSMC_H

#include <linux/io.h>
#include <linux/ntb.h>
#include <linux/net.h>
#include <linux/refcount.h>
#include <linux/workqueue.h>
#include <linux/interrupt.h>
#include <linux/srcu.h>
#include <net/sock.h>
#include <net/netns/generic.h>
#include <uapi/linux/ntbsmc.h>
#include "compat.h"
#include "wire.h"

#define NTBSMC_ID_LEN		16

/* ---- netns.c: per network namespace state, settings, statistics ---- */

enum ntbsmc_stat {
	NTBSMC_STAT_CONN_NTB,		/* connections that ran over NTB */
	NTBSMC_STAT_CONN_TCP,		/* connections that fell back */
	NTBSMC_STAT_HS_ERR,		/* handshakes ended by a protocol error */
	NTBSMC_STAT_TX_BYTES,
	NTBSMC_STAT_RX_BYTES,
	NTBSMC_STAT_DB_TX,		/* doorbells rung */
	NTBSMC_STAT_DB_RX,		/* doorbell events handled */
	NTBSMC_STAT_DB_SUPPRESSED,	/* updates that needed no doorbell */
	NTBSMC_STAT_BUF_FULL,		/* writer found the peer's buffer full */
	NTBSMC_STAT_ABORT,		/* connections reset (bad peer value, link) */
	NTBSMC_STAT_CPU_BYTES,		/* bytes copied by the CPU */
	NTBSMC_STAT_DMA_BYTES,		/* bytes moved by DMA */
	NTBSMC_STAT_ZC_BYTES,		/* of those, straight from the sender's pages */
	NTBSMC_STAT_DMA_FAILED,		/* DMA writes redone by the CPU */
	NTBSMC_STAT_NOTIFY_LOST,	/* waiters woken by a re-check, not a doorbell */
	NTBSMC_STAT_ORPHAN_RESET,	/* closed connections reset: timeout or too many */
	NTBSMC_STAT_HS_PEAK,		/* most server handshakes running at once */
	NTBSMC_STAT_HS_CONGESTED,	/* children beyond max_handshakes: declined */
	NTBSMC_STAT_NO_MIRROR,		/* version 7 connections that keep no copy: cannot switch */
	NTBSMC_STAT_SWITCH_TCP,		/* connections moved from NTB to TCP */
	NTBSMC_STAT_SWITCH_RESENT,	/* bytes sent again over TCP by those switches */
	NTBSMC_STAT_SWITCH_FAILED,	/* switches that ended in a reset */
	/* What crossed the link (dev.c, ntbsmc_link_wrote()) */
	NTBSMC_STAT_PW_SMALL,		/* posted writes into the peer's window, <= 64 B */
	NTBSMC_STAT_PW_MEDIUM,		/* ... <= 4 KiB */
	NTBSMC_STAT_PW_LARGE,		/* ... larger (a CPU copy, a DMA segment) */
	NTBSMC_STAT_PW_BYTES,		/* bytes of them all */
	NTBSMC_STAT_LINK_READS,		/* reads across the link */
	NTBSMC_STAT_IRQ,		/* doorbell interrupts taken */
	NTBSMC_STAT_FB_CLIENT,		/* first of __NTBSMC_REASON_MAX client reasons */
	NTBSMC_STAT_FB_SERVER = NTBSMC_STAT_FB_CLIENT + __NTBSMC_REASON_MAX,
	__NTBSMC_STAT_MAX = NTBSMC_STAT_FB_SERVER + __NTBSMC_REASON_MAX,
};

struct ntbsmc_net {
	u8 sysid[NTBSMC_ID_LEN];	/* this "host": one per network namespace */
	int enabled;
	int handshake_timeout_ms;
	int busy_poll_us;
	int rmb_kb;
	int lgr_idle_ms;
	int dma_threshold;		/* writes of at least this many bytes use DMA; 0: never */
	int zerocopy_threshold;		/* ... and straight from user pages; 0: never */
	/* server handshakes at once, SYNs beyond: TCP; client ones, connects beyond: TCP */
	int max_handshakes;
	int recheck_ms;			/* period of the lost-notification re-check; 0: off */
	int orphan_timeout_ms;		/* a closed connection unacknowledged this long: reset */
	int max_orphans;		/* per device; beyond, a closing connection resets */
	int switch_on;			/* sysctl switch: offer protocol version 7 */
	int switch_timeout_ms;		/* bound on a switch of transport's exchange */
	/* policy.c: struct ntbsmc_rule, RCU; the rest under its policy_lock */
	struct list_head policy;
	unsigned int policy_rules;
	u32 policy_last_id;		/* ids are never reused */
	atomic_t handshakes;		/* server handshakes running, max_handshakes at most */
	atomic_t client_handshakes;	/* client handshakes running (hs_client_bound()) */
	/*
	 * This namespace's handshakes, the clients' and the servers' apart: one
	 * namespace's flood does not hold up another's, and stalled server
	 * handshakes (any host may open them) do not hold up our connects
	 */
	struct workqueue_struct *hs_wq;
	struct workqueue_struct *hs_srv_wq;
	atomic64_t stats[__NTBSMC_STAT_MAX];
	struct ctl_table_header *sysctl;
};

extern unsigned int ntbsmc_net_id;

static inline struct ntbsmc_net *ntbsmc_net(const struct net *net)
{
	return net_generic(net, ntbsmc_net_id);
}

static inline void ntbsmc_stat_add(const struct net *net, enum ntbsmc_stat s, u64 v)
{
	atomic64_add(v, &ntbsmc_net(net)->stats[s]);
}

int ntbsmc_netns_init(void);
void ntbsmc_netns_exit(void);

/* ---- dev.c: NTB client, link bring-up, windows, doorbells; link groups ---- */

enum ntbsmc_dev_state {
	NTBSMC_DEV_DOWN,	/* link down */
	NTBSMC_DEV_BRINGUP,	/* link up, scratchpads being exchanged */
	NTBSMC_DEV_ACTIVE,	/* both sides know each other: usable */
};

struct ntbsmc_conn;
struct ntbsmc_dma;

struct ntbsmc_dev {
	struct kref ref;
	struct list_head list;		/* ntbsmc_devs, under ntbsmc_devs_lock */
	struct ntb_dev *ntb;
	char name[32];
	/* the namespace it serves; no reference: moved back to init_net when it exits */
	struct net *net;
	bool enabled;
	u8 fabric_id[NTBSMC_ID_LEN];

	struct mutex lock;		/* state changes */
	enum ntbsmc_dev_state state;
	u32 epoch, peer_epoch;
	/*
	 * Under lock: the event tags (wire.h) of our epochs the peer may still
	 * post with, and of those current since we last read its scratchpads,
	 * whose epoch it last showed (dev_ev_tags_*())
	 */
	DECLARE_BITMAP(ev_tags_live, NTBSMC_EV_EPOCH_TAGS);
	DECLARE_BITMAP(ev_tags_since, NTBSMC_EV_EPOCH_TAGS);
	u32 peer_spad_epoch;
	u8 peer_sysid[NTBSMC_ID_LEN];
	/* ours for this epoch, in the peer's window header; under lock */
	u8 secret[NTBSMC_SECRET_LEN];

	/* Inbound window: written by the peer, read here */
	void *win;
	dma_addr_t win_dma;
	size_t win_size;
	/* Outbound window: the peer's inbound window */
	void __iomem *peer_win;
	size_t peer_win_size;

	/*
	 * Receive buffers: nslots units of NTBSMC_RMB_UNIT (wire.h); a connection's
	 * RMB covers units slot .. slot + rmb_size / NTBSMC_RMB_UNIT - 1.
	 */
	spinlock_t slot_lock;
	unsigned int nslots;
	unsigned int free_units;
	unsigned int rmbs;		/* connections holding units */
	/* of those, closed: the peer attached, we wait for it to let go */
	atomic_t orphans;
	/* ... closed: the peer was told the slot, never attached, may still */
	atomic_t held;
	unsigned long *slot_map;	/* units in use */
	struct ntbsmc_conn __rcu **conns;	/* by local slot */
	bool removed;			/* ntbsmc_remove() ran; under slot_lock */

	/* Events: posting into the peer's ring (under ev_lock), draining ours (tasklet) */
	spinlock_t ev_lock;
	u32 ev_tx_prod;			/* entries posted to the peer */
	u32 ev_tx_overflow;		/* entries the peer's ring had no room for */
	u32 ev_rx_cons;			/* entries of ours consumed */
	u32 ev_rx_cons_pub;		/* ... as the peer was last told */
	u32 ev_rx_overflow;
	u32 ev_rescan_next;		/* the pass over the slots: next, or >= nslots: none */
	bool ev_rescan_want;		/* the overflow count changed: a pass (after this one) */
	struct tasklet_struct ev_tasklet;

	struct delayed_work bringup_work;
	struct work_struct link_work;

	/* Link group: the connections between the two systems on this link */
	u32 lgr_id;
	unsigned long lgr_created, lgr_idle_since;
	atomic_t lgr_conns;
	atomic64_t lgr_tx_bytes, lgr_rx_bytes;
	struct delayed_work lgr_idle_work;

	/* DMA channel for writes into the peer's window (dma.c) */
	struct mutex dma_lock;		/* attaching and detaching it */
	struct ntbsmc_dma __rcu *dma;	/* under ntbsmc_srcu */
	atomic_t dma_killing;		/* let go of, not released yet */
	unsigned long dma_retry;	/* jiffies: no new channel before */
};

extern struct list_head ntbsmc_devs;
extern struct mutex ntbsmc_devs_lock;

int ntbsmc_dev_init(void);
void ntbsmc_dev_exit(void);
int ntbsmc_dev_set(struct net *net, const char *name, int enabled, struct net *to,
		   struct netlink_ext_ack *extack);
void ntbsmc_dev_netns_exit(struct net *net);
void ntbsmc_dev_put(struct ntbsmc_dev *dev);
struct ntbsmc_dev *ntbsmc_dev_find_active(struct net *net, const u8 *fabric_id,
					  const u8 *peer_sysid);
int ntbsmc_dev_no_link_reason(struct net *net, const u8 *peer_sysid);

/* A link's secrets (wire.h, "Proof of NTB presence"); wiped after use. */
struct ntbsmc_link_keys {
	u8 mine[NTBSMC_SECRET_LEN];	/* keys the peer's MAC */
	u8 peer[NTBSMC_SECRET_LEN];	/* keys ours */
};

int ntbsmc_dev_link_keys(struct ntbsmc_dev *dev, struct ntbsmc_link_keys *keys);
void ntbsmc_dev_post_event(struct ntbsmc_dev *dev, struct ntbsmc_conn *conn);
bool ntbsmc_dev_events_pending(struct ntbsmc_dev *dev);
/*
 * Every write into the peer's window is counted here, per namespace by size and
 * per connection; the device's own (header, events consumed) with @conn NULL.
 */
void ntbsmc_link_wrote(struct ntbsmc_dev *dev, struct ntbsmc_conn *conn, size_t bytes);
int ntbsmc_dev_slot_get(struct ntbsmc_dev *dev, struct ntbsmc_conn *conn, u32 want);
void ntbsmc_dev_slot_put(struct ntbsmc_dev *dev, struct ntbsmc_conn *conn);

/* ---- conn.c: one NTB-mode connection: lifetime, control block, notifications ---- */

struct ntbsmc_conn {
	refcount_t ref;
	spinlock_t lock;		/* cursors and flags below */
	struct rcu_head rcu;
	unsigned long released;		/* bit 0: slot given back */
	struct ntbsmc_dev *dev;		/* ref held */
	struct sock *sk;		/* NULL once the socket is gone */
	u32 epoch;			/* dev->epoch when set up */
	u32 my_slot, my_token;
	u32 peer_slot, peer_token;
	u32 rmb_size, peer_rmb_size;
	u32 peer_rmb_off;			/* of the peer's buffer in its window */

	void *rmb;				/* our buffer, peer writes */
	struct ntbsmc_slot *rx_ctl;		/* our control block, peer writes */
	void __iomem *peer_rmb;			/* peer's buffer, we write */
	struct ntbsmc_slot __iomem *tx_ctl;	/* peer's control block */

	/* Ours, published to the peer through tx_ctl */
	u64 tx_prod;		/* bytes written into the peer's buffer */
	u64 rx_cons;		/* bytes consumed from our buffer */
	u64 rx_cons_pub;	/* ... as published (rx.c: in batches) */
	u32 my_flags;
	u16 my_want_seq;	/* WANT flags set so far (wire.h) */
	/* Peer's, as last validated from rx_ctl */
	u64 peer_prod;
	u64 peer_cons;
	u32 peer_flags;
	u16 peer_want_seq;	/* the peer's last want we answered */

	/* What crossed the link for this connection (ntbsmc_link_wrote()) */
	atomic64_t link_writes, link_write_bytes, link_reads, doorbells;
#ifdef CONFIG_NTBSMC_FAULT_INJECTION
	/* fault want_late: a want flag still "on the link"; the work holds a reference */
	u32 want_late;
	u64 want_late_seen;		/* the cursor its waiter had seen */
	struct delayed_work want_late_work;
#endif

	int err;		/* ECONNRESET once aborted */
	bool exposed;		/* the peer was told our slot: it may write into it */
	bool peer_attached;	/* ... and did (ntbsmc_conn_peer_attached()) */
	bool established;	/* handshake completed (set under conn->lock) */
	/*
	 * The link went while the handshake still owned the connection (not
	 * established): ntbsmc_conn_failover() marks it so, and resets it
	 * without touching the socket, under conn->lock; the handshake finds
	 * it where it commits (ntbsmc_conn_established()) or when its attach
	 * fails, and moves the socket to TCP with the peer (clc_lost_link()).
	 */
	bool hs_lost;
	bool closed;		/* our side closed: slot freed when the peer is done */
	bool detached;		/* we published DETACHED: we write nothing more to the peer */
	/*
	 * A connection closed with our slot exposed and the peer not attached is
	 * held (@held, counted in dev->held) until the peer acknowledges or can
	 * no longer attach (NTBSMC_HOLD_MS): the timer, which holds a reference,
	 * ends that wait. An established connection the peer attached to, once
	 * closed, is an orphan (dev->orphans): it waits for the peer's DETACHED
	 * (or its CLOSED, or ABORT) at most orphan_timeout_ms: then the timer
	 * resets it, as TCP's FIN-WAIT-2 timer ends an orphan, and the slot is
	 * freed when the peer acknowledges the ABORT or the link epoch ends.
	 * A held connection the peer attaches to late becomes an orphan then
	 * (conn_held_attached_locked(); the hold timer looks for that every
	 * orphan_timeout_ms). @held changes under conn->lock only.
	 */
	bool held;
	bool hold_expired;
	unsigned long closed_at;	/* jiffies of ntbsmc_conn_release() */
	unsigned long hold_end;		/* held: jiffies when the hold ends (set at release) */
	struct timer_list hold_timer;
	bool rd_shut;		/* shutdown(SHUT_RD): reads end at what arrived */
	/*
	 * The protocol version the handshake agreed on, and from version 7 the
	 * keys of the connection's SWITCH messages (wire.h: ours keys what we
	 * send, the peer's what we receive): written by the handshake before
	 * the connection is established, read only after; zeroed when freed.
	 */
	u8 version;
	u8 sw_key_tx[NTBSMC_SECRET_LEN], sw_key_rx[NTBSMC_SECRET_LEN];
	/*
	 * The move to TCP when the link goes (Documentation/switch.md; ulp.c's
	 * switch work). @switching: set by ntbsmc_conn_failover() under
	 * conn->lock once no reader or writer of the socket is in the windows;
	 * from then on the socket waits for the switch's end. @sw_rx_end: the
	 * peer's producer cursor we received up to, @sw_tx_end: our producer
	 * cursor, final by then; @sw_keep: the @sw_keep_len
	 * bytes of it not read yet, copied out of our buffer before its slot
	 * went; the switch work hands them to the socket (ctx->sw_keep), or
	 * conn_free() frees them.
	 */
	bool switching;
	bool sw_peer_closed;	/* the peer's CLOSED came before: nothing to exchange */
	u64 sw_rx_end, sw_tx_end;
	void *sw_keep;
	u32 sw_keep_len;
	u64 tx_bytes, rx_bytes;
	u64 cpu_bytes, dma_bytes, zc_bytes;	/* of tx_bytes, by copy path */

	/*
	 * The lost-notification re-check (conn_recheck(), under conn->lock).
	 * rung_*: the peer's cursors and end flags as far as every waiter has
	 * been told of them: by an event (ntbsmc_conn_event() wakes by state),
	 * by the re-check's own wakeup, or, for the cursor a want names, by
	 * our want itself (the peer owes a doorbell only beyond the cursor we
	 * said we had seen). A look by one thread of the socket (recvmsg, poll,
	 * sendmsg) wakes no other, so it moves none of them. pend_*: what the
	 * previous tick found beyond them (0: nothing). The timer runs from
	 * establishment until ntbsmc_conn_release() and holds a reference while
	 * pending.
	 */
	struct timer_list recheck_timer;
	u64 rung_prod, rung_cons;
	u32 rung_flags;
	u64 pend_prod, pend_cons;
	u32 pend_flags;		/* end flags; and WANT_DATA if it was set */

	/*
	 * Writes into the peer's buffer that the published producer cursor does not
	 * cover yet (tx.c): DMA in flight, and what was written after it. Retired in
	 * order by tx_work, which publishes the cursor; while any is in flight the
	 * ring holds a reference on the connection.
	 */
	u64 tx_pub;			/* producer cursor the peer was given */
	unsigned int tx_busy;		/* CPU copies into the peer's buffer running */
	struct ntbsmc_txseg *segs;	/* NTBSMC_TX_SEGS, allocated at the first DMA */
	u32 seg_head, seg_tail;		/* free running: retired up to, filled up to */
	bool ring_ref;			/* the ring holds a reference (seg_work() puts it) */
	bool ring_eagain;		/* a sender left with -EAGAIN: full (tx.c) */
	void *stage;			/* kernel copy for DMA, laid out like the peer's buffer */
	/*
	 * @stage keeps every byte we wrote until the peer's consumer cursor
	 * passes it (version 7, Documentation/switch.md): every path writes
	 * through it. Set by the handshake, before the connection is established.
	 */
	bool mirror;
	struct delayed_work tx_work;
	wait_queue_head_t tx_wq;	/* a segment retired */
};

/* net.ntbsmc.handshake_timeout_ms at most: how long either end's handshake waits */
#define NTBSMC_HS_TIMEOUT_MAX_MS	60000
/*
 * How long a failed handshake holds a slot the peer was told and never
 * acknowledged: longer than any handshake may take to attach to it.
 */
#define NTBSMC_HOLD_MS			(NTBSMC_HS_TIMEOUT_MAX_MS + 5000)

/*
 * net.ntbsmc.recheck_ms by default: a lost notification delays a waiter one to
 * two periods; a peer stalled that long between its cursor and its doorbell
 * (a preempted VM) is not taken for one.
 */
#define NTBSMC_RECHECK_MS		500

/* Flags that tell the peer it may reuse its buffer: held back while we write into it. */
#define NTBSMC_F_TERMINAL	(NTBSMC_F_WRITE_DONE | NTBSMC_F_CLOSED | NTBSMC_F_ABORT | \
				 NTBSMC_F_DETACHED)
/* Flags after which the peer writes nothing more into our buffer */
#define NTBSMC_F_PEER_GONE	(NTBSMC_F_CLOSED | NTBSMC_F_ABORT | NTBSMC_F_DETACHED)

struct ntbsmc_conn *ntbsmc_conn_alloc(struct ntbsmc_dev *dev, struct sock *sk);
int ntbsmc_conn_attach(struct ntbsmc_conn *conn, const struct ntbsmc_clc_rmb *peer);
void ntbsmc_conn_expose(struct ntbsmc_conn *conn, bool exposed);
void ntbsmc_conn_peer_attached(struct ntbsmc_conn *conn);
void ntbsmc_conn_put(struct ntbsmc_conn *conn);
extern struct srcu_struct ntbsmc_srcu;
void ntbsmc_conn_sync(void);
bool ntbsmc_conn_established(struct ntbsmc_conn *conn);
void ntbsmc_conn_abort(struct ntbsmc_conn *conn, const char *why);
void ntbsmc_conn_event(struct ntbsmc_conn *conn);
void ntbsmc_conn_release(struct ntbsmc_conn *conn, bool abort);
bool ntbsmc_conn_link_ok(struct ntbsmc_conn *conn);
void ntbsmc_conn_tx_idle(struct ntbsmc_conn *conn);
void ntbsmc_conn_notify_data(struct ntbsmc_conn *conn);
/* The control block and notifications, for tx.c and rx.c */
int ntbsmc_conn_update(struct ntbsmc_conn *conn);
void ntbsmc_conn_publish_flags(struct ntbsmc_conn *conn);
/* What a wakeup is for (ntbsmc_conn_wake()) */
#define NTBSMC_WAKE_IN		(EPOLLIN | EPOLLRDNORM | EPOLLRDHUP)
#define NTBSMC_WAKE_OUT		(EPOLLOUT | EPOLLWRNORM)
#define NTBSMC_WAKE_ALL		(NTBSMC_WAKE_IN | NTBSMC_WAKE_OUT | EPOLLHUP | EPOLLERR)
void ntbsmc_conn_wake(struct sock *sk, __poll_t key);
void conn_publish_cons_locked(struct ntbsmc_conn *conn);
bool ntbsmc_conn_want(struct ntbsmc_conn *conn, u32 flag, bool on);
void ntbsmc_conn_unwant(struct sock *sk, struct ntbsmc_conn *conn, u32 flag);
void ntbsmc_conn_notify(struct ntbsmc_conn *conn, u32 want);
void ntbsmc_conn_check_tcp(struct sock *sk, struct ntbsmc_conn *conn);
int ntbsmc_conn_wait(struct sock *sk, struct ntbsmc_conn *conn, u32 flag,
		     bool (*ready)(struct ntbsmc_conn *), long *timeo);

/* The connection's link and cursors, as conn.c, tx.c and rx.c look at them */

/* The link this connection was set up on is still the current one. */
static inline bool conn_link_alive(struct ntbsmc_conn *conn)
{
	return READ_ONCE(conn->dev->state) == NTBSMC_DEV_ACTIVE &&
	       conn->epoch == READ_ONCE(conn->dev->epoch);
}

static inline bool conn_link_ok(struct ntbsmc_conn *conn)
{
	return !READ_ONCE(conn->err) && READ_ONCE(conn->established) &&
	       !READ_ONCE(conn->detached) && conn_link_alive(conn);
}

/* We may still write into the peer's buffer; caller holds conn->lock. */
static inline bool conn_tx_inflight(struct ntbsmc_conn *conn)
{
	lockdep_assert_held(&conn->lock);
	return conn->tx_busy || conn->seg_head != conn->seg_tail;
}

/* Our writes into the peer's control block of @conn: posted, counted. */
static inline void conn_ctl_write32(struct ntbsmc_conn *conn, u32 v, void __iomem *p)
{
	iowrite32(v, p);
	ntbsmc_link_wrote(conn->dev, conn, sizeof(v));
}

static inline void conn_ctl_write64(struct ntbsmc_conn *conn, u64 v, void __iomem *p)
{
	writeq(v, p);
	ntbsmc_link_wrote(conn->dev, conn, sizeof(v));
}

static inline u32 conn_space(struct ntbsmc_conn *conn)
{
	return conn->peer_rmb_size - (u32)(conn->tx_prod - READ_ONCE(conn->peer_cons));
}

static inline u32 conn_avail(struct ntbsmc_conn *conn)
{
	return READ_ONCE(conn->peer_prod) - conn->rx_cons;
}

/*
 * Most bytes copied into the peer's buffer, or out of ours, before the cursor over
 * them is published: the other side works on one chunk while the next is copied.
 */
#define NTBSMC_CHUNK		SZ_64K

/* ---- tx.c: the send path: CPU copies, the DMA segment ring, end of data ---- */

#define NTBSMC_TX_SEGS		64		/* writes in flight per connection */
#define NTBSMC_ZC_PAGES		(NTBSMC_CHUNK / PAGE_SIZE + 1)	/* a segment is a chunk */

/* One write of the ring: filled by the sender, issued by dma.c, retired by tx.c */
struct ntbsmc_txseg {
	struct ntbsmc_conn *conn;
	struct ntbsmc_dma *dma;
	u64 end;			/* producer cursor once this segment is in */
	u32 off, len;			/* in the peer's buffer; never wraps */
	u8 state;			/* under conn->lock */
	bool zc;			/* from pinned user pages, else from conn->stage */
	bool error;			/* a descriptor failed or none could be issued */
	atomic_t descs;			/* not called back yet, +1 while submitting */
	unsigned long deadline;		/* jiffies */
	dma_addr_t src;			/* staging: the mapped range, or DMA_MAPPING_ERROR */
	unsigned int npages, pg_off;	/* zero-copy: data starts at pg_off of pages[0] */
	unsigned int nruns;		/* physically contiguous runs mapped */
	struct page *pages[NTBSMC_ZC_PAGES];
	dma_addr_t run_addr[NTBSMC_ZC_PAGES];
	u32 run_len[NTBSMC_ZC_PAGES];
};

int ntbsmc_conn_sendmsg(struct sock *sk, struct ntbsmc_conn *conn,
			struct msghdr *msg, size_t len);
void ntbsmc_conn_shutdown(struct ntbsmc_conn *conn, int how);
void ntbsmc_conn_linger(struct ntbsmc_conn *conn, long timeout);
void ntbsmc_conn_publish_locked(struct ntbsmc_conn *conn, u64 prod);
void ntbsmc_txseg_done(struct ntbsmc_txseg *seg);
void ntbsmc_tx_conn_init(struct ntbsmc_conn *conn);
void ntbsmc_tx_conn_free(struct ntbsmc_conn *conn);
void ntbsmc_tx_mirror_init(struct ntbsmc_conn *conn);

/* ---- the switch of transport (Documentation/switch.md) ---- */

struct ntbsmc_sock;

/* What one end says in its SWITCH */
struct ntbsmc_switch_msg {
	u64 rx_end, tx_end;
	u8 seq, flags;
};

/* conn.c: returned by the NTB send and receive paths: wait for the switch */
#define NTBSMC_ESWITCH	EXDEV
bool ntbsmc_conn_switching(struct ntbsmc_conn *conn);
bool ntbsmc_conn_failover(struct ntbsmc_conn *conn);
/* ulp.c */
bool ntbsmc_ulp_switch(struct sock *sk, struct ntbsmc_conn *conn);
/* clc.c */
int ntbsmc_clc_switch(struct ntbsmc_sock *ctx, struct ntbsmc_conn *conn,
		      const struct ntbsmc_switch_msg *mine, struct ntbsmc_switch_msg *peer);

/* ---- rx.c: the receive path: recvmsg, poll, queue sizes ---- */

int ntbsmc_conn_recvmsg(struct sock *sk, struct ntbsmc_conn *conn,
			struct msghdr *msg, size_t len, int flags);
__poll_t ntbsmc_conn_poll(struct sock *sk, struct ntbsmc_conn *conn);
int ntbsmc_conn_inq(struct ntbsmc_conn *conn);
int ntbsmc_conn_outq(struct ntbsmc_conn *conn);

/* ---- dma.c: dmaengine glue: the device's channel; mapping and issuing segments ---- */

enum ntbsmc_tx_path { NTBSMC_TX_CPU, NTBSMC_TX_DMA, NTBSMC_TX_ZC };

int ntbsmc_dma_init(void);
void ntbsmc_dma_exit(void);
void ntbsmc_dma_attach(struct ntbsmc_dev *dev, struct net *net);
void ntbsmc_dma_detach(struct ntbsmc_dev *dev);
struct ntbsmc_dma_info {
	char chan[32];
	char dev[32];
	enum ntbsmc_dma_choice choice;
};
bool ntbsmc_dma_chan_info(struct ntbsmc_dev *dev, struct ntbsmc_dma_info *info);
enum ntbsmc_tx_path ntbsmc_dma_path(struct sock *sk, struct ntbsmc_conn *conn,
				    struct msghdr *msg, size_t len);
/* For tx.c: the channel record, and the segments it writes */
extern struct workqueue_struct *ntbsmc_dma_wq;
void ntbsmc_dma_get(struct ntbsmc_dma *d);
void ntbsmc_dma_put(struct ntbsmc_dma *d);
bool ntbsmc_dma_terminated(struct ntbsmc_dma *d);
void ntbsmc_dma_kill_async(struct ntbsmc_dma *d);
int ntbsmc_dma_pin(struct ntbsmc_txseg *seg, struct msghdr *msg, u32 *len);
void ntbsmc_dma_submit(struct ntbsmc_txseg *seg);
void ntbsmc_dma_unmap(struct ntbsmc_txseg *seg);

/* ---- ulp.c: the TCP ULP, socket-level behaviour, mode switches ---- */

/* What ended a socket's use of its context (ntbsmc_sock.dead) */
enum {
	NTBSMC_SOCK_LIVE,
	NTBSMC_SOCK_CLOSED,	/* close(): a connection set up now ends gracefully */
	NTBSMC_SOCK_DESTROYED,	/* ->release(): ... ends with a reset */
};

/*
 * Lifetime: the socket holds one reference (put in ->release()), a running
 * handshake one, each child in its handshake one on its listener's. The last put
 * frees after an RCU grace period: a child's ->clone() reads its listener's
 * context without a reference, in softirq.
 */
struct ntbsmc_sock {
	refcount_t ref;
	struct rcu_head rcu;
	struct sock *sk;
	struct proto *sk_proto;		/* TCP's, restored on fallback */
	const struct proto_ops *sk_ops;
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);

	u32 mode;			/* enum ntbsmc_mode */
	u32 reason;			/* enum ntbsmc_reason */
	u32 peer_reason;
	bool client;
	bool hs_started;
	/* in ntbsmc_net.handshakes (a server's) or .client_handshakes (a client's) */
	bool hs_counted;
	bool hs_congested;		/* a child beyond max_handshakes: it only declines */
	u8 hs_shutdown;			/* shutdown() during the handshake, applied at its end */
	unsigned long hs_start;		/* jiffies: connection established */
	struct work_struct hs_work;
	wait_queue_head_t hs_wq;	/* handshake worker waits for TCP here */

	struct ntbsmc_conn __rcu *conn;	/* NTB mode; freed after an RCU grace period */
	/*
	 * The move to TCP (ntbsmc_ulp_switch()): its work, and once it moved,
	 * the bytes received over NTB before the switch and not read yet
	 * (@sw_keep_len, read up to @sw_keep_off under the socket lock; freed
	 * with the context), and when it moved (ktime_get_real_ns()).
	 */
	struct work_struct sw_work;
	struct ntbsmc_conn *sw_conn;	/* the work's reference */
	void *sw_keep;
	u32 sw_keep_len, sw_keep_off;
	u64 sw_time;
	struct list_head node;		/* in ntbsmc_socks */

	/* Under ntbsmc_socks_lock */
	u8 dead;			/* NTBSMC_SOCK_*: the handshake's end changes nothing */
	bool closing;			/* a listener that closes: no new handshakes */
	bool close_deferred;		/* closed in its handshake: the worker closes TCP */
	struct ntbsmc_sock *listener;	/* a child's, ref held until its handshake ends */
	unsigned int hs_children;	/* a listener's children still in their handshake */
};

/* Every socket with the ULP, for the connection dump. */
extern struct list_head ntbsmc_socks;
extern spinlock_t ntbsmc_socks_lock;

int ntbsmc_ulp_set(struct sock *sk);
int ntbsmc_ulp_init(void);
void ntbsmc_ulp_exit(void);
int ntbsmc_sock_dead(struct ntbsmc_sock *ctx);
u32 ntbsmc_info_flags(const struct ntbsmc_sock *ctx, const struct ntbsmc_conn *conn);
int ntbsmc_sock_set_conn(struct ntbsmc_sock *ctx, struct ntbsmc_conn *conn);

/* ---- policy.c: which peers and ports are offered ntbsmc ---- */

struct genl_info;
struct netlink_callback;

bool ntbsmc_policy_offers(struct net *net, const struct in6_addr *peer, u16 port);
bool ntbsmc_policy_offers_sk(const struct sock *sk);
void ntbsmc_policy_flush(struct net *net);
int ntbsmc_nl_policy_dump(struct sk_buff *skb, struct netlink_callback *cb);
int ntbsmc_nl_policy_add(struct sk_buff *skb, struct genl_info *info);
int ntbsmc_nl_policy_del(struct sk_buff *skb, struct genl_info *info);
int ntbsmc_nl_policy_flush(struct sk_buff *skb, struct genl_info *info);

/* ---- proto.c: socket(..., IPPROTO_NTBSMC) ---- */

int ntbsmc_proto_init(void);
void ntbsmc_proto_exit(void);

/* ---- netlink.c ---- */

extern struct genl_family ntbsmc_genl;

int ntbsmc_netlink_init(void);
void ntbsmc_netlink_exit(void);

/* ---- clc.c: the handshake ---- */

int ntbsmc_clc_client(struct ntbsmc_sock *ctx);
int ntbsmc_clc_server(struct ntbsmc_sock *ctx);

#endif /* NTBSMC_H */
