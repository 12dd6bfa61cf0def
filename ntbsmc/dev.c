// SPDX-License-Identifier: GPL-2.0
/* ntbsmc: NTB client: link bring-up, windows, event doorbells, link groups. */

#include <linux/module.h>
#include <linux/pci.h>
#include <linux/property.h>
#include <linux/dma-mapping.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/io.h>
#include "ntbsmc.h"

#define PIDX NTB_DEF_PEER_IDX

LIST_HEAD(ntbsmc_devs);
/* Guards ntbsmc_devs; taken before any device's lock. */
DEFINE_MUTEX(ntbsmc_devs_lock);
static atomic_t ntbsmc_lgr_ids = ATOMIC_INIT(0);

static unsigned int max_window_kb = 65536;
module_param(max_window_kb, uint, 0444);
MODULE_PARM_DESC(max_window_kb, "Largest inbound window used per NTB device, KiB (default 65536)");

static void dev_release(struct kref *ref)
{
	struct ntbsmc_dev *dev = container_of(ref, struct ntbsmc_dev, ref);

	bitmap_free(dev->slot_map);
	kfree(dev->conns);
	kfree(dev);
}

void ntbsmc_dev_put(struct ntbsmc_dev *dev)
{
	kref_put(&dev->ref, dev_release);
}

/* ---- what crosses the link: counted, and priced in the test build ---- */

/*
 * The hardware's price, for make bench: a read across a real NTB link stalls the
 * CPU for microseconds, a doorbell reaches the peer's CPU later than its write
 * left ours. The emulated fabric costs neither, so it is charged here: every
 * read spins price_read_ns, every doorbell's handler spins price_doorbell_ns
 * before it schedules the tasklet (the delay is right; on hardware it costs no
 * CPU). Off in the module users install (it has no reason to be slower than
 * its hardware); the test build charges reads by default.
 */
static unsigned int price_read_ns = IS_ENABLED(CONFIG_NTBSMC_FAULT_INJECTION) ? 1500 : 0;
static unsigned int price_doorbell_ns;

/*
 * Both spin with interrupts off (the doorbell's in its hard irq handler): a
 * price is bounded well above any real link's (a read ~1-5 us, a doorbell's
 * delivery ~1-2 us) and well below what starves the CPU.
 */
#define PRICE_MAX_NS	100000

static int price_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 0, PRICE_MAX_NS);
}

static const struct kernel_param_ops price_ops = {
	.set = price_set,
	.get = param_get_uint,
};
module_param_cb(price_read_ns, &price_ops, &price_read_ns, 0644);
MODULE_PARM_DESC(price_read_ns, "Benchmarks: each read across the link spins this long, 0-100000: 20 times a real link's read at most, a bound on the spin (default 0; test build 1500)");
module_param_cb(price_doorbell_ns, &price_ops, &price_doorbell_ns, 0644);
MODULE_PARM_DESC(price_doorbell_ns, "Benchmarks: each doorbell is handled this much later, spinning in its interrupt handler, 0-100000: far above a real doorbell's delay, a bound on the spin (default 0)");

/*
 * One read across the link before each doorbell, for hardware whose write-
 * combining buffers a store fence does not drain ahead of the doorbell write
 * (README.md, "What crosses the link"). Off: x86's sfence (wmb()) does, and
 * PCIe keeps the posted writes that follow in order.
 */
static bool doorbell_flush;
module_param(doorbell_flush, bool, 0644);
MODULE_PARM_DESC(doorbell_flush, "Read the peer's window back before each doorbell (default off: a store fence orders it)");

/* A posted write of @bytes into the peer's window; @conn's if it is one's. */
void ntbsmc_link_wrote(struct ntbsmc_dev *dev, struct ntbsmc_conn *conn, size_t bytes)
{
	enum ntbsmc_stat class = bytes <= 64 ? NTBSMC_STAT_PW_SMALL :
				 bytes <= SZ_4K ? NTBSMC_STAT_PW_MEDIUM : NTBSMC_STAT_PW_LARGE;

	ntbsmc_stat_add(dev->net, class, 1);
	ntbsmc_stat_add(dev->net, NTBSMC_STAT_PW_BYTES, bytes);
	if (conn) {
		atomic64_inc(&conn->link_writes);
		atomic64_add(bytes, &conn->link_write_bytes);
	}
}

/* A read of the peer's window: the CPU waits for its completion across the link. */
static u32 dev_link_read32(struct ntbsmc_dev *dev, struct ntbsmc_conn *conn,
			   const void __iomem *p)
{
	unsigned int ns = READ_ONCE(price_read_ns);
	u32 v = ioread32(p);

	if (ns)
		ndelay(ns);
	ntbsmc_stat_add(dev->net, NTBSMC_STAT_LINK_READS, 1);
	if (conn)
		atomic64_inc(&conn->link_reads);
	return v;
}

/* ---- events: the peer's ring in our window, ours in the peer's ---- */

static struct ntbsmc_win_hdr *win_hdr(struct ntbsmc_dev *dev)
{
	return dev->win;
}

static struct ntbsmc_win_hdr __iomem *peer_hdr(struct ntbsmc_dev *dev)
{
	return dev->peer_win;
}

/*
 * Tells the peer that its control block of @conn's slot changed: an entry in its
 * event ring and a doorbell. Callers wrote payload, cursors and flags before;
 * nothing is read across the link.
 *
 * Ordering: the caller's writes, the entry and the doorbell are posted writes
 * of this CPU into the NT port, in that order (wmb() drains the write-combining
 * buffers between them); PCIe does not reorder posted writes along one path,
 * and the peer's NT port raises its interrupt (an MSI, posted too) after it
 * forwarded them. So the peer's tasklet finds the entry, and the entry's block.
 *
 * Every entry is rung for: the peer's hardware latches the doorbell bit, so
 * entries posted before its handler cleared it cost no further interrupt, and
 * one posted after the clear is one it has to look for anyway. A ring with no
 * room (the peer is that far behind, or lies about it) drops the entry and
 * counts the overflow, after which the peer looks at every slot.
 */
void ntbsmc_dev_post_event(struct ntbsmc_dev *dev, struct ntbsmc_conn *conn)
{
	struct ntbsmc_win_hdr __iomem *ph = peer_hdr(dev);
	unsigned long flags;
	u32 cons;
	int idx;

	/* The windows stay mapped while this section runs (see ntbsmc_conn_sync). */
	idx = srcu_read_lock(&ntbsmc_srcu);
	if (READ_ONCE(dev->state) != NTBSMC_DEV_ACTIVE) {
		srcu_read_unlock(&ntbsmc_srcu, idx);
		return;
	}
	spin_lock_irqsave(&dev->ev_lock, flags);
	/* how far the peer consumed: peer-written, a lower bound, trusted only within it */
	cons = le32_to_cpu(READ_ONCE(win_hdr(dev)->ev_cons));
	wmb();	/* the caller's writes before the entry that names them */
	if (dev->ev_tx_prod - cons >= NTBSMC_EV_RING) {
		/* a local count: we never read back what we only write */
		iowrite32(++dev->ev_tx_overflow, &ph->ev_overflow);
	} else {
		iowrite32(ntbsmc_ev_entry(dev->peer_epoch, dev->ev_tx_prod, conn->peer_slot),
			  &ph->ev[dev->ev_tx_prod % NTBSMC_EV_RING]);
		dev->ev_tx_prod++;
	}
	ntbsmc_link_wrote(dev, conn, 4);
	spin_unlock_irqrestore(&dev->ev_lock, flags);

	wmb();	/* the entry before the doorbell (sfence: WC buffers drained) */
	if (READ_ONCE(doorbell_flush))
		dev_link_read32(dev, conn, &ph->magic);
	/* dev->ntb is the device's only inside the section (ntbsmc_remove()) */
	ntb_peer_db_set(dev->ntb, BIT_ULL(NTBSMC_DB_EVENT));
	ntbsmc_stat_add(dev->net, NTBSMC_STAT_DB_TX, 1);
	atomic64_inc(&conn->doorbells);
	srcu_read_unlock(&ntbsmc_srcu, idx);
}

static void dev_event_slot(struct ntbsmc_dev *dev, u32 slot)
{
	struct ntbsmc_conn *conn;

	rcu_read_lock();
	conn = rcu_dereference(dev->conns[slot]);
	if (conn && refcount_inc_not_zero(&conn->ref)) {
		rcu_read_unlock();
		ntbsmc_conn_event(conn);
		ntbsmc_conn_put(conn);
		return;
	}
	rcu_read_unlock();
}

/*
 * The entry of our event ring at @cons if the peer posted it in this epoch
 * (tagged with the epoch and its index), else false: not posted yet, or a
 * stale or made-up value. Reads our own window only.
 */
static bool dev_ev_posted(struct ntbsmc_dev *dev, u32 epoch, u32 cons, u32 *e)
{
	*e = le32_to_cpu(READ_ONCE(win_hdr(dev)->ev[cons % NTBSMC_EV_RING]));
	return *e >> NTBSMC_EV_SLOT_BITS == ntbsmc_ev_tag(epoch, cons);
}

/*
 * Drains our event ring; every value in it is the peer's and checked here. At
 * most one ring's worth of work per run, entries and then slots rescanned: a
 * peer that keeps posting, or keeps counting overflows, gets the rest in the
 * next run, as NAPI budgets a busy device, not a softirq that never ends.
 */
static void dev_ev_tasklet(struct tasklet_struct *t)
{
	struct ntbsmc_dev *dev = from_tasklet(dev, t, ev_tasklet);
	struct ntbsmc_win_hdr *h = win_hdr(dev);
	unsigned int budget = NTBSMC_EV_RING;
	u32 e, slot, ovf;
	int idx;

	if (READ_ONCE(dev->state) != NTBSMC_DEV_ACTIVE)
		return;
	ntbsmc_stat_add(dev->net, NTBSMC_STAT_DB_RX, 1);
	for (; budget; budget--) {
		if (!dev_ev_posted(dev, dev->epoch, dev->ev_rx_cons, &e))
			break;
		rmb();	/* the entry before the control block it names */
		dev->ev_rx_cons++;
		slot = e & (BIT(NTBSMC_EV_SLOT_BITS) - 1);
		if (slot < dev->nslots)
			dev_event_slot(dev, slot);
	}
	/* Room for the peer, in batches: it sees the ring fuller than it is. */
	if (dev->ev_rx_cons - dev->ev_rx_cons_pub >= NTBSMC_EV_CONS_BATCH) {
		idx = srcu_read_lock(&ntbsmc_srcu);
		if (READ_ONCE(dev->state) == NTBSMC_DEV_ACTIVE) {
			iowrite32(dev->ev_rx_cons, &peer_hdr(dev)->ev_cons);
			ntbsmc_link_wrote(dev, NULL, 4);
			dev->ev_rx_cons_pub = dev->ev_rx_cons;
		}
		srcu_read_unlock(&ntbsmc_srcu, idx);
	}
	/*
	 * An entry the peer had no room for was dropped; its slot may be any. A
	 * change of the overflow count asks for a pass over every slot, which
	 * runs in slot order from what the budget left (dev->ev_rescan_next),
	 * the rest in the next runs. A change seen while a pass runs asks for
	 * another pass after it: a peer that bumps the count with every doorbell
	 * costs one pass at a time, at most a ring's worth of slots per run.
	 *
	 * No event of an honest peer is lost: it wrote the control block before
	 * it counted the overflow, and a pass that starts after we saw the count
	 * (rmb()) looks at every slot after that; one already running looks at
	 * the slots ahead of it after that too, and the pass it asks for at the
	 * slots it passed.
	 */
	ovf = le32_to_cpu(READ_ONCE(h->ev_overflow));
	if (ovf != dev->ev_rx_overflow) {
		dev->ev_rx_overflow = ovf;
		dev->ev_rescan_want = true;
	}
	if (dev->ev_rescan_next >= dev->nslots && dev->ev_rescan_want) {
		dev->ev_rescan_want = false;
		dev->ev_rescan_next = 0;
		rmb();	/* the count before the control blocks */
	}
	for (; budget && dev->ev_rescan_next < dev->nslots; budget--)
		dev_event_slot(dev, dev->ev_rescan_next++);
	if (!budget || dev->ev_rescan_want)
		tasklet_schedule(t);
}

/*
 * Events of the peer's not taken yet: an entry posted at our consumer index, or
 * an overflow not handled. The peer rang; its doorbell, or our tasklet, is
 * late (a busy CPU). For the re-check, which wakes for such a notification but
 * does not count it as lost; it also kicks the tasklet. Reads our own window
 * only, racing the tasklet (a hint: it may be taking the entry now). Caller is
 * in the SRCU section with the link of @dev up.
 */
bool ntbsmc_dev_events_pending(struct ntbsmc_dev *dev)
{
	u32 e;

	RCU_LOCKDEP_WARN(!srcu_read_lock_held(&ntbsmc_srcu), "outside the SRCU section");
	if (!dev_ev_posted(dev, READ_ONCE(dev->epoch), READ_ONCE(dev->ev_rx_cons), &e) &&
	    le32_to_cpu(READ_ONCE(win_hdr(dev)->ev_overflow)) == READ_ONCE(dev->ev_rx_overflow))
		return false;
	tasklet_schedule(&dev->ev_tasklet);
	return true;
}

/* ---- windows: set up at the first link up (limits need the link) ---- */

static int dev_setup_windows(struct ntbsmc_dev *dev)
{
	struct ntb_dev *ntb = dev->ntb;
	resource_size_t align, size_align, size_max, psize;
	phys_addr_t pbase;
	int rc;

	rc = ntb_mw_get_align(ntb, PIDX, 0, &align, &size_align, &size_max);
	if (rc)
		return rc;
	dev->win_size = min_t(resource_size_t, size_max, (resource_size_t)max_window_kb << 10);
	dev->win_size = round_down(dev->win_size, max_t(resource_size_t, size_align, 1));
	if (dev->win_size < NTBSMC_RMB_OFFSET + SZ_64K)
		return -ENOSPC;
	dev->win = dma_alloc_coherent(&ntb->pdev->dev, dev->win_size, &dev->win_dma,
				      GFP_KERNEL);
	if (!dev->win)
		return -ENOMEM;
	if (!IS_ALIGNED(dev->win_dma, align)) {
		rc = -EINVAL;
		goto err_free;
	}
	rc = ntb_mw_set_trans(ntb, PIDX, 0, dev->win_dma, dev->win_size);
	if (rc)
		goto err_free;

	rc = ntb_peer_mw_get_addr(ntb, 0, &pbase, &psize);
	if (rc)
		goto err_trans;
	dev->peer_win_size = min_t(resource_size_t, psize,
				   (resource_size_t)max_window_kb << 10);
	dev->peer_win = ioremap_wc(pbase, dev->peer_win_size);
	if (!dev->peer_win) {
		rc = -ENOMEM;
		goto err_trans;
	}
	return 0;

err_trans:
	ntb_mw_clear_trans(ntb, PIDX, 0);
err_free:
	dma_free_coherent(&ntb->pdev->dev, dev->win_size, dev->win, dev->win_dma);
	return rc;
}

static void dev_free_windows(struct ntbsmc_dev *dev)
{
	iounmap(dev->peer_win);
	ntb_mw_clear_trans(dev->ntb, PIDX, 0);
	dma_free_coherent(&dev->ntb->pdev->dev, dev->win_size, dev->win, dev->win_dma);
}

/* ---- link bring-up ---- */

/*
 * The link's connections end on it: each that can switch moves to its TCP
 * connection (ntbsmc_conn_failover()), the others are reset. Called with the
 * device no longer ACTIVE: once the SRCU section is synchronised no reader or
 * writer of a socket is in the windows, and none enters.
 */
static void dev_abort_all(struct ntbsmc_dev *dev, const char *why)
{
	u32 slot;

	ntbsmc_conn_sync();

	for (slot = 0; slot < dev->nslots; slot++) {
		struct ntbsmc_conn *conn;

		rcu_read_lock();
		conn = rcu_dereference(dev->conns[slot]);
		if (!conn || !refcount_inc_not_zero(&conn->ref))
			conn = NULL;
		rcu_read_unlock();
		if (conn) {
			if (!ntbsmc_conn_failover(conn))
				ntbsmc_conn_abort(conn, why);
			ntbsmc_conn_put(conn);
		}
	}
}

static void dev_write_spads(struct ntbsmc_dev *dev, u32 epoch)
{
	struct ntbsmc_net *nn = ntbsmc_net(dev->net);
	struct ntb_dev *ntb = dev->ntb;
	int i;

	ntb_peer_spad_write(ntb, PIDX, NTBSMC_SPAD_EPOCH, 0);
	ntb_peer_spad_write(ntb, PIDX, NTBSMC_SPAD_MAGIC, NTBSMC_SPAD_MAGIC_V1);
	for (i = 0; i < 4; i++)
		ntb_peer_spad_write(ntb, PIDX, NTBSMC_SPAD_SYSID0 + i,
				    get_unaligned_le32(nn->sysid + 4 * i));
	ntb_peer_spad_write(ntb, PIDX, NTBSMC_SPAD_WIN_KB, dev->win_size >> 10);
	/* the epoch, written last, says the other scratchpads are valid */
	wmb();
	ntb_peer_spad_write(ntb, PIDX, NTBSMC_SPAD_EPOCH, epoch);
}

static void dev_go_down(struct ntbsmc_dev *dev)
{
	int i;

	lockdep_assert_held(&dev->lock);
	if (dev->state == NTBSMC_DEV_DOWN)
		return;
	WRITE_ONCE(dev->state, NTBSMC_DEV_DOWN);
	tasklet_kill(&dev->ev_tasklet);
	dev_abort_all(dev, "link down");
	/* Nothing of ours may land in the peer's window after this epoch. */
	ntbsmc_dma_detach(dev);
	/*
	 * Aborted connections never touch the windows again, so every slot is free
	 * for the next epoch; their later release leaves the new owners alone.
	 */
	spin_lock_irq(&dev->slot_lock);
	for (i = 0; i < NTBSMC_SLOT_MAX; i++)
		RCU_INIT_POINTER(dev->conns[i], NULL);
	bitmap_zero(dev->slot_map, NTBSMC_SLOT_MAX);
	dev->free_units = dev->nslots;
	dev->rmbs = 0;
	spin_unlock_irq(&dev->slot_lock);
	dev_info(&dev->ntb->dev, "ntbsmc: link down\n");
}

/*
 * Called from the link and bring-up works, and from a namespace move (netlink);
 * all may sleep. Until the random pool is ready (early boot) that waits for it,
 * with dev->lock held: a device without its secret has nothing to offer yet. A
 * signal ends the wait of a netlink caller; the link work, which takes none,
 * then brings the link up.
 */
/*
 * The event tag holds our epoch's low byte only (wire.h), so an entry the peer
 * posted for an earlier epoch of ours would be taken for one of the current
 * epoch if their bytes were equal: it would run our consumer ahead of the
 * peer. A new epoch's byte is therefore none of those the peer may still post
 * with (ev_tags_live): an old entry, late or still being posted, never matches.
 *
 * The peer posts with our epoch X only while it is active on X, which it read
 * from our scratchpads. Every bring-up of ours rings it; an active peer that
 * sees our epoch change goes down, waits for its posters (dev_go_down()), and
 * only then writes its own new epoch into our scratchpads: its posted writes
 * land before that one is read (PCIe orders them, and a read's completion
 * does not pass them). So once we read a peer epoch other than the one we
 * read last, the peer posts with none of the epochs we had before that last
 * read: only those current since then (ev_tags_since) stay live.
 */
static void dev_ev_tags_peer(struct ntbsmc_dev *dev, u32 peer_spad_epoch)
{
	lockdep_assert_held(&dev->lock);
	if (peer_spad_epoch != dev->peer_spad_epoch) {
		bitmap_copy(dev->ev_tags_live, dev->ev_tags_since, NTBSMC_EV_EPOCH_TAGS);
		dev->peer_spad_epoch = peer_spad_epoch;
	}
	bitmap_zero(dev->ev_tags_since, NTBSMC_EV_EPOCH_TAGS);
	__set_bit(dev->epoch % NTBSMC_EV_EPOCH_TAGS, dev->ev_tags_since);
}

/* A new epoch for our window; its tag is none the peer may still post with. */
static void dev_ev_tags_new_epoch(struct ntbsmc_dev *dev)
{
	u32 tag;

	lockdep_assert_held(&dev->lock);
	/*
	 * 255 epochs and the peer never showed a new one: it is stalled or
	 * gone, and what it posted before stalling is as likely to match as
	 * without this (1 in 256); all but the current are forgotten.
	 */
	if (bitmap_full(dev->ev_tags_live, NTBSMC_EV_EPOCH_TAGS)) {
		bitmap_zero(dev->ev_tags_live, NTBSMC_EV_EPOCH_TAGS);
		__set_bit(dev->epoch % NTBSMC_EV_EPOCH_TAGS, dev->ev_tags_live);
	}
	do {
		dev->epoch = get_random_u32();
		tag = dev->epoch % NTBSMC_EV_EPOCH_TAGS;
	} while (!dev->epoch || test_bit(tag, dev->ev_tags_live));
	__set_bit(tag, dev->ev_tags_live);
	__set_bit(tag, dev->ev_tags_since);
}

static void dev_start_bringup(struct ntbsmc_dev *dev)
{
	lockdep_assert_held(&dev->lock);
	might_sleep();
	/*
	 * A secret per epoch: what the peer learnt of the last one proves nothing,
	 * and none is drawn from a pool that cannot make it unguessable.
	 */
	if (get_random_bytes_wait(dev->secret, sizeof(dev->secret))) {
		schedule_work(&dev->link_work);
		return;
	}
	/* Nothing the peer wrote before this epoch may be read as current. */
	memset(dev->win, 0, NTBSMC_RMB_OFFSET);
	dev_ev_tags_new_epoch(dev);
	spin_lock_irq(&dev->slot_lock);
	dev->nslots = min_t(size_t, NTBSMC_SLOT_MAX,
			    (min(dev->win_size, dev->peer_win_size) - NTBSMC_RMB_OFFSET) /
			    NTBSMC_RMB_UNIT);
	dev->free_units = dev->nslots;
	spin_unlock_irq(&dev->slot_lock);
	WRITE_ONCE(dev->state, NTBSMC_DEV_BRINGUP);
	dev_write_spads(dev, dev->epoch);
	ntb_peer_db_set(dev->ntb, BIT_ULL(NTBSMC_DB_BRINGUP));
	mod_delayed_work(system_wq, &dev->bringup_work, msecs_to_jiffies(20));
}

/*
 * Reads the peer's scratchpads (the peer wrote them into ours) and, when they are
 * complete and valid, makes the device usable.
 */
static void dev_try_activate(struct ntbsmc_dev *dev)
{
	struct ntb_dev *ntb = dev->ntb;
	u32 epoch, win_kb;
	u8 sysid[NTBSMC_ID_LEN];
	int i;

	lockdep_assert_held(&dev->lock);
	epoch = ntb_spad_read(ntb, NTBSMC_SPAD_EPOCH);
	if (!epoch || ntb_spad_read(ntb, NTBSMC_SPAD_MAGIC) != NTBSMC_SPAD_MAGIC_V1)
		return;
	/* the other scratchpads are read after the epoch that validates them */
	rmb();
	for (i = 0; i < 4; i++)
		put_unaligned_le32(ntb_spad_read(ntb, NTBSMC_SPAD_SYSID0 + i),
				   sysid + 4 * i);
	win_kb = ntb_spad_read(ntb, NTBSMC_SPAD_WIN_KB);
	if (ntb_spad_read(ntb, NTBSMC_SPAD_EPOCH) != epoch)
		return;		/* rewritten while we read: next round */
	dev_ev_tags_peer(dev, epoch);
	if ((size_t)win_kb << 10 != dev->peer_win_size &&
	    (size_t)win_kb << 10 > dev->peer_win_size) {
		dev_err_ratelimited(&ntb->dev,
				    "ntbsmc: peer translated %u KiB, more than its window\n",
				    win_kb);
		return;
	}
	if (dev->state == NTBSMC_DEV_ACTIVE) {
		if (epoch == dev->peer_epoch)
			return;
		/* The peer restarted its side: everything on the old epoch is gone. */
		dev_go_down(dev);
		dev_start_bringup(dev);
		return;
	}
	dev->peer_epoch = epoch;
	memcpy(dev->peer_sysid, sysid, sizeof(sysid));
	if (!device_property_present(&ntb->pdev->dev, "ntb-fabric-id")) {
		/* No fabric identity from the hardware driver: one both ends derive. */
		struct ntbsmc_net *nn = ntbsmc_net(dev->net);

		for (i = 0; i < NTBSMC_ID_LEN; i++)
			dev->fabric_id[i] = nn->sysid[i] ^ sysid[i];
	}
	dev->ev_tx_prod = 0;
	dev->ev_tx_overflow = 0;
	dev->ev_rx_cons = 0;
	dev->ev_rx_cons_pub = 0;
	dev->ev_rx_overflow = 0;
	dev->ev_rescan_next = NTBSMC_SLOT_MAX;	/* no pass */
	dev->ev_rescan_want = false;
	/*
	 * The peer has consumed none of our entries yet. Its tasklet of the old
	 * epoch may have written here after our bringup cleared the header (it was
	 * killed before the peer wrote the scratchpads we just read): a stale value
	 * would make post_event() overwrite entries the peer has not read.
	 */
	WRITE_ONCE(win_hdr(dev)->ev_cons, 0);
	WRITE_ONCE(win_hdr(dev)->ev_overflow, 0);
	/*
	 * Our writes into the peer's window start from a clean header: the peer
	 * cleared it before it wrote the scratchpads we read, so nothing of ours
	 * lands before that. The secret goes first, the epoch that validates it
	 * (ntbsmc_dev_link_keys()) last.
	 */
	memcpy_toio(peer_hdr(dev)->secret, dev->secret, sizeof(dev->secret));
	iowrite32(NTBSMC_WIN_MAGIC, &peer_hdr(dev)->magic);
	wmb();
	iowrite32(dev->epoch, &peer_hdr(dev)->epoch);
	ntbsmc_link_wrote(dev, NULL, sizeof(dev->secret));
	ntbsmc_link_wrote(dev, NULL, 4);
	ntbsmc_link_wrote(dev, NULL, 4);
	WRITE_ONCE(dev->state, NTBSMC_DEV_ACTIVE);
	dev_info(&ntb->dev, "ntbsmc: link active, peer system %*phN, %u KiB of buffers\n",
		 NTBSMC_ID_LEN, sysid, dev->nslots * (NTBSMC_RMB_UNIT >> 10));
}

/*
 * The two secrets of the link's current epoch, for the handshake's proof of NTB
 * presence (clc.c): ours, which keys what the peer proves, and the one the peer
 * wrote into our window, which keys what we prove. -ENOLINK until the link is
 * active and the peer's secret of its current epoch is there.
 */
int ntbsmc_dev_link_keys(struct ntbsmc_dev *dev, struct ntbsmc_link_keys *keys)
{
	const struct ntbsmc_win_hdr *h = win_hdr(dev);
	int rc = -ENOLINK;

	mutex_lock(&dev->lock);
	if (dev->state != NTBSMC_DEV_ACTIVE ||
	    le32_to_cpu(READ_ONCE(h->epoch)) != dev->peer_epoch)
		goto out;
	/* written before the epoch that validates it, read after it */
	rmb();
	memcpy(keys->peer, h->secret, sizeof(keys->peer));
	rmb();
	if (le32_to_cpu(READ_ONCE(h->epoch)) != dev->peer_epoch ||
	    !memchr_inv(keys->peer, 0, sizeof(keys->peer)))
		goto out;
	memcpy(keys->mine, dev->secret, sizeof(keys->mine));
	rc = 0;
out:
	mutex_unlock(&dev->lock);
	if (rc)
		memzero_explicit(keys, sizeof(*keys));
	return rc;
}

static void dev_bringup_work(struct work_struct *work)
{
	struct ntbsmc_dev *dev = container_of(to_delayed_work(work), struct ntbsmc_dev,
					      bringup_work);

	mutex_lock(&dev->lock);
	if (dev->state != NTBSMC_DEV_DOWN)
		dev_try_activate(dev);
	if (dev->state == NTBSMC_DEV_BRINGUP)
		schedule_delayed_work(&dev->bringup_work, msecs_to_jiffies(100));
	mutex_unlock(&dev->lock);
}

static void dev_link_work(struct work_struct *work)
{
	struct ntbsmc_dev *dev = container_of(work, struct ntbsmc_dev, link_work);
	bool up = ntb_link_is_up(dev->ntb, NULL, NULL) & BIT_ULL(PIDX);

	mutex_lock(&dev->lock);
	/* Window limits are known once the link is up; set up once, kept. */
	if (up && !dev->win) {
		int rc = dev_setup_windows(dev);

		if (rc) {
			dev_err(&dev->ntb->dev, "ntbsmc: cannot set up memory window 0: %d\n", rc);
			dev->win = NULL;
			up = false;
		}
	}
	if (up && dev->state == NTBSMC_DEV_DOWN)
		dev_start_bringup(dev);
	else if (!up)
		dev_go_down(dev);
	mutex_unlock(&dev->lock);
}

static void dev_link_event(void *ctx)
{
	struct ntbsmc_dev *dev = ctx;

	schedule_work(&dev->link_work);
}

static void dev_db_event(void *ctx, int vector)
{
	struct ntbsmc_dev *dev = ctx;
	u64 bits = ntb_db_read(dev->ntb) &
		   (BIT_ULL(NTBSMC_DB_EVENT) | BIT_ULL(NTBSMC_DB_BRINGUP));

	unsigned int ns = READ_ONCE(price_doorbell_ns);

	ntb_db_clear(dev->ntb, bits);
	ntbsmc_stat_add(READ_ONCE(dev->net), NTBSMC_STAT_IRQ, 1);
	if (bits & BIT_ULL(NTBSMC_DB_BRINGUP))
		mod_delayed_work(system_wq, &dev->bringup_work, 0);
	if (!(bits & BIT_ULL(NTBSMC_DB_EVENT)))
		return;
	/* the bench's doorbell price: a timer this short costs far more under emulation */
	if (ns)
		ndelay(ns);
	tasklet_schedule(&dev->ev_tasklet);
}

static const struct ntb_ctx_ops ntbsmc_ctx_ops = {
	.link_event	= dev_link_event,
	.db_event	= dev_db_event,
};

/* ---- link groups ---- */

static void dev_lgr_idle_work(struct work_struct *work)
{
	struct ntbsmc_dev *dev = container_of(to_delayed_work(work), struct ntbsmc_dev,
					      lgr_idle_work);

	mutex_lock(&dev->lock);
	if (!atomic_read(&dev->lgr_conns) && dev->lgr_id) {
		dev_info(&dev->ntb->dev, "ntbsmc: link group %u idle, freed\n",
			 dev->lgr_id);
		dev->lgr_id = 0;
		/* the channel was the link group's; the next one picks again */
		ntbsmc_dma_detach(dev);
	}
	mutex_unlock(&dev->lock);
}

/* ---- lookup for the handshake ---- */

/*
 * Finds an active, enabled device of @net whose peer is @peer_sysid (and, when
 * given, on fabric @fabric_id). Returns it with a reference, or NULL.
 */
struct ntbsmc_dev *ntbsmc_dev_find_active(struct net *net, const u8 *fabric_id,
					  const u8 *peer_sysid)
{
	struct ntbsmc_dev *dev, *found = NULL;

	mutex_lock(&ntbsmc_devs_lock);
	list_for_each_entry(dev, &ntbsmc_devs, list) {
		if (!net_eq(dev->net, net) || !READ_ONCE(dev->enabled) ||
		    READ_ONCE(dev->state) != NTBSMC_DEV_ACTIVE)
			continue;
		if (memcmp(dev->peer_sysid, peer_sysid, NTBSMC_ID_LEN))
			continue;
		if (fabric_id && memcmp(dev->fabric_id, fabric_id, NTBSMC_ID_LEN))
			continue;
		kref_get(&dev->ref);	/* put by the caller */
		found = dev;
		break;
	}
	mutex_unlock(&ntbsmc_devs_lock);
	return found;
}

/*
 * Why no device of @net serves @peer_sysid (ntbsmc_dev_find_active() found
 * none), by the devices that reached it before: NTBSMC_REASON_LINK_DOWN if one
 * is enabled (its link may come back), NTBSMC_REASON_DEV_DISABLED if each is
 * disabled; 0 if none ever reached it.
 */
int ntbsmc_dev_no_link_reason(struct net *net, const u8 *peer_sysid)
{
	struct ntbsmc_dev *dev;
	int reason = 0;

	mutex_lock(&ntbsmc_devs_lock);
	list_for_each_entry(dev, &ntbsmc_devs, list) {
		if (!net_eq(dev->net, net) ||
		    memcmp(dev->peer_sysid, peer_sysid, NTBSMC_ID_LEN))
			continue;
		if (READ_ONCE(dev->enabled)) {
			reason = NTBSMC_REASON_LINK_DOWN;
			break;
		}
		reason = NTBSMC_REASON_DEV_DISABLED;
	}
	mutex_unlock(&ntbsmc_devs_lock);
	return reason;
}

/* ---- settings (netlink) ---- */

/*
 * Moves @dev to @to: its connections are reset and the link is brought up again,
 * so that the peer learns the system identity of the new namespace.
 */
static void dev_move(struct ntbsmc_dev *dev, struct net *to)
{
	mutex_lock(&dev->lock);
	if (!net_eq(dev->net, to)) {
		dev_go_down(dev);
		WRITE_ONCE(dev->net, to);
		if (dev->win && ntb_link_is_up(dev->ntb, NULL, NULL))
			dev_start_bringup(dev);
	}
	mutex_unlock(&dev->lock);
}

int ntbsmc_dev_set(struct net *net, const char *name, int enabled, struct net *to,
		   struct netlink_ext_ack *extack)
{
	struct ntbsmc_dev *dev;
	int rc = -ENODEV;

	mutex_lock(&ntbsmc_devs_lock);
	list_for_each_entry(dev, &ntbsmc_devs, list) {
		if (!net_eq(dev->net, net) || strcmp(dev->name, name))
			continue;
		if (enabled >= 0)
			WRITE_ONCE(dev->enabled, enabled);
		if (to)
			dev_move(dev, to);
		rc = 0;
		break;
	}
	mutex_unlock(&ntbsmc_devs_lock);
	if (rc)
		NL_SET_ERR_MSG(extack, "no such NTB device in this network namespace");
	return rc;
}

/* A namespace goes away: its devices return to the initial one, like netdevs. */
void ntbsmc_dev_netns_exit(struct net *net)
{
	struct ntbsmc_dev *dev;

	mutex_lock(&ntbsmc_devs_lock);
	list_for_each_entry(dev, &ntbsmc_devs, list)
		if (net_eq(dev->net, net))
			dev_move(dev, &init_net);
	mutex_unlock(&ntbsmc_devs_lock);
}

/* ---- NTB client ---- */

static int ntbsmc_probe(struct ntb_client *client, struct ntb_dev *ntb)
{
	u64 need = BIT_ULL(NTBSMC_DB_EVENT) | BIT_ULL(NTBSMC_DB_BRINGUP);
	struct ntbsmc_dev *dev;
	int rc;

	if (ntb_spad_count(ntb) < NTBSMC_SPAD_COUNT || ntb_mw_count(ntb, PIDX) < 1 ||
	    ntb_peer_mw_count(ntb) < 1 || (ntb_db_valid_mask(ntb) & need) != need) {
		dev_info(&ntb->dev, "ntbsmc: device lacks scratchpads, doorbells or windows\n");
		return -ENODEV;
	}
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	kref_init(&dev->ref);
	dev->ntb = ntb;
	strscpy(dev->name, dev_name(&ntb->dev), sizeof(dev->name));
	dev->net = &init_net;
	dev->enabled = true;
	mutex_init(&dev->lock);
	mutex_init(&dev->dma_lock);
	spin_lock_init(&dev->slot_lock);
	spin_lock_init(&dev->ev_lock);
	tasklet_setup(&dev->ev_tasklet, dev_ev_tasklet);
	INIT_DELAYED_WORK(&dev->bringup_work, dev_bringup_work);
	INIT_WORK(&dev->link_work, dev_link_work);
	INIT_DELAYED_WORK(&dev->lgr_idle_work, dev_lgr_idle_work);
	device_property_read_u8_array(&ntb->pdev->dev, "ntb-fabric-id",
				      dev->fabric_id, NTBSMC_ID_LEN);

	dev->slot_map = bitmap_zalloc(NTBSMC_SLOT_MAX, GFP_KERNEL);
	dev->conns = kcalloc(NTBSMC_SLOT_MAX, sizeof(*dev->conns), GFP_KERNEL);
	if (!dev->slot_map || !dev->conns) {
		rc = -ENOMEM;
		goto err_put;
	}
	rc = ntb_set_ctx(ntb, dev, &ntbsmc_ctx_ops);
	if (rc)
		goto err_put;
	ntb_db_clear(ntb, need);
	ntb_db_clear_mask(ntb, need);
	mutex_lock(&ntbsmc_devs_lock);
	list_add_tail(&dev->list, &ntbsmc_devs);
	mutex_unlock(&ntbsmc_devs_lock);
	ntb_link_enable(ntb, NTB_SPEED_AUTO, NTB_WIDTH_AUTO);
	schedule_work(&dev->link_work);
	dev_info(&ntb->dev, "ntbsmc: bound, fabric %*phN\n", NTBSMC_ID_LEN, dev->fabric_id);
	return 0;

err_put:
	ntbsmc_dev_put(dev);
	return rc;
}

static void ntbsmc_remove(struct ntb_client *client, struct ntb_dev *ntb)
{
	struct ntbsmc_dev *dev = ntb->ctx;

	mutex_lock(&ntbsmc_devs_lock);
	list_del(&dev->list);
	mutex_unlock(&ntbsmc_devs_lock);

	ntb_link_disable(ntb);
	ntb_db_set_mask(ntb, BIT_ULL(NTBSMC_DB_EVENT) | BIT_ULL(NTBSMC_DB_BRINGUP));
	ntb_clear_ctx(ntb);
	/* no doorbell is handled after this (its callback is gone), none pending */
	tasklet_kill(&dev->ev_tasklet);
	cancel_work_sync(&dev->link_work);
	cancel_delayed_work_sync(&dev->bringup_work);
	mutex_lock(&dev->lock);
	dev_go_down(dev);
	mutex_unlock(&dev->lock);
	ntb_peer_spad_write(ntb, PIDX, NTBSMC_SPAD_EPOCH, 0);
	/*
	 * Sockets may close their aborted connections long after this; the last
	 * one must not re-arm the idle timer of a device that is then freed.
	 */
	spin_lock_irq(&dev->slot_lock);
	dev->removed = true;
	spin_unlock_irq(&dev->slot_lock);
	cancel_delayed_work_sync(&dev->lgr_idle_work);
	/* Aborted connections no longer touch the windows once readers left. */
	ntbsmc_conn_sync();
	/* nor does an engine: going down waited for every channel's release */
	WARN_ON_ONCE(atomic_read(&dev->dma_killing));
	if (dev->win)
		dev_free_windows(dev);
	dev->win = NULL;
	dev->peer_win = NULL;
	ntbsmc_dev_put(dev);
}

static struct ntb_client ntbsmc_client = {
	.ops = {
		.probe = ntbsmc_probe,
		.remove = ntbsmc_remove,
	},
};

/* ---- slots: called by conn.c ---- */

/*
 * Gives @conn a receive buffer of at most @want bytes (a power of two of at least
 * NTBSMC_RMB_UNIT): the size wanted while that leaves half the buffer space free,
 * else the largest smaller size that does; past half, NTBSMC_RMB_UNIT while any
 * unit is left. So the first connections of a link get large buffers and the link
 * still holds at least half as many connections as it has units.
 */
int ntbsmc_dev_slot_get(struct ntbsmc_dev *dev, struct ntbsmc_conn *conn, u32 want)
{
	unsigned int units = want / NTBSMC_RMB_UNIT;
	unsigned long flags;
	int slot;

	spin_lock_irqsave(&dev->slot_lock, flags);
	if (READ_ONCE(dev->state) != NTBSMC_DEV_ACTIVE) {
		slot = -ENOLINK;
		goto out;
	}
	for (;; units /= 2) {
		if (units > 1 && dev->free_units < units + dev->nslots / 2)
			continue;
		slot = bitmap_find_next_zero_area(dev->slot_map, dev->nslots, 0, units,
						  units - 1);
		if (slot < dev->nslots)
			break;
		if (units == 1) {
			slot = -ENOBUFS;
			goto out;
		}
	}
	bitmap_set(dev->slot_map, slot, units);
	dev->free_units -= units;
	dev->rmbs++;
	conn->my_slot = slot;
	/* random: a value nobody can predict from the tokens it saw */
	do {
		conn->my_token = get_random_u32();
	} while (!conn->my_token);
	conn->epoch = dev->epoch;
	conn->rmb_size = units * NTBSMC_RMB_UNIT;
	rcu_assign_pointer(dev->conns[slot], conn);
	if (atomic_inc_return(&dev->lgr_conns) == 1) {
		if (!dev->lgr_id) {
			dev->lgr_id = atomic_inc_return(&ntbsmc_lgr_ids);
			dev->lgr_created = jiffies;
			atomic64_set(&dev->lgr_tx_bytes, 0);
			atomic64_set(&dev->lgr_rx_bytes, 0);
		}
	}
out:
	spin_unlock_irqrestore(&dev->slot_lock, flags);
	return slot < 0 ? slot : 0;
}

void ntbsmc_dev_slot_put(struct ntbsmc_dev *dev, struct ntbsmc_conn *conn)
{
	struct ntbsmc_net *nn = ntbsmc_net(dev->net);
	unsigned long flags;

	spin_lock_irqsave(&dev->slot_lock, flags);
	/* A slot of an older epoch was released when the link went down. */
	if (rcu_access_pointer(dev->conns[conn->my_slot]) == conn) {
		unsigned int units = conn->rmb_size / NTBSMC_RMB_UNIT;

		RCU_INIT_POINTER(dev->conns[conn->my_slot], NULL);
		bitmap_clear(dev->slot_map, conn->my_slot, units);
		dev->free_units += units;
		dev->rmbs--;
	}
	/* Never after ntbsmc_remove(): the work must not outlive the device. */
	if (atomic_dec_and_test(&dev->lgr_conns) && !dev->removed) {
		dev->lgr_idle_since = jiffies;
		mod_delayed_work(system_wq, &dev->lgr_idle_work,
				 msecs_to_jiffies(READ_ONCE(nn->lgr_idle_ms)));
	}
	spin_unlock_irqrestore(&dev->slot_lock, flags);
}

int ntbsmc_dev_init(void)
{
	int rc;

	rc = ntbsmc_dma_init();
	if (rc)
		return rc;
	rc = ntb_register_client(&ntbsmc_client);
	if (rc)
		ntbsmc_dma_exit();
	return rc;
}

void ntbsmc_dev_exit(void)
{
	ntb_unregister_client(&ntbsmc_client);
	ntbsmc_dma_exit();
	rcu_barrier();	/* conn_free() callbacks run module code */
}
