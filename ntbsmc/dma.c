// SPDX-License-Identifier: GPL-2.0
/* ntbsmc: dmaengine glue: the device's channel, mapping and submitting segments. */

#include <linux/dmaengine.h>
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include "ntbsmc.h"

/*
 * A link group's device gets one DMA_MEMCPY channel (an engine on the NTB
 * device's own switch first, then one on its NUMA node, then any) and maps its
 * outbound window for it. A connection's
 * large writes become segments: a run of the peer's buffer written by one or more
 * descriptors, from a kernel copy of the data (the staging buffer) or straight
 * from the sender's pinned pages (zero-copy). Segments retire in order in
 * tx_work, which publishes the producer cursor over what completed; a segment
 * whose DMA failed, timed out or was aborted is written again by the CPU first,
 * so the peer never sees a byte twice, out of order or missing.
 *
 * A channel dies (its engine went away, it stopped completing, the device goes
 * down or idle) in dma_kill(): no new submissions (SRCU), then the channel is
 * stopped. The engines beside the target's NT ports cannot be stopped any other
 * way than by releasing the channel: plx_dma and ioatdma have no terminate_all,
 * so dmaengine_terminate_sync() fails on them and stops nothing. So dma_kill()
 * tries it (engines that can, drop what is queued without calling back) and then
 * always releases the channel: the provider stops its engine there (plx_dma:
 * halts it, waiting up to a second, and calls every descriptor left back as
 * aborted; ioatdma: resets the channel and drops them). Only once that returned
 * is the channel "terminated": nothing of ours is in flight on it and nothing
 * more will be called back, and a segment still pending is rewritten by the CPU.
 * Until then a segment is never retired, unmapped, unpinned or rewritten:
 * whatever the engine may still read or write stays as it was given to it.
 *
 * A channel stops being the device's (dev->dma cleared) before its release
 * begins, and the release of a failed one runs from the workqueue: plx_dma's
 * may take a second, and the descriptor its engine is on lands meanwhile, in
 * the peer's window at the offset of a connection of that epoch. So the
 * device counts the channels it let go that are not released yet
 * (dev->dma_killing), and ntbsmc_dma_detach(), through which every epoch ends
 * (link down, peer restart, move, removal), waits for all of them, not only
 * for the one it finds: no slot is given to the next epoch's connections, and
 * no window freed, while an engine of the last one may still write.
 *
 * What a stuck engine can hold: per connection, the NTBSMC_TX_SEGS segments of
 * its ring (their pinned pages or the staging buffer) and, through the ring's
 * reference, the connection and its slot; for at most dma_timeout_ms from the
 * oldest segment's issue plus the provider's stop (plx_dma: 1 s), after which
 * the channel is released and the CPU writes what the engine did not.
 *
 * The record lives on while segments reference it.
 */

struct ntbsmc_dma {
	struct kref ref;		/* dev->dma's, and one per segment on it */
	struct ntbsmc_dev *dev;		/* ref held, put in dma_free_work() */
	struct dma_chan *chan;
	struct device *dmadev;		/* buffers are mapped for it; ref held */
	dma_addr_t peer_win;		/* the peer's window as the engine addresses it */
	size_t peer_win_size;
	unsigned long flags;
	bool terminated;		/* released: nothing of ours in flight on it */
	struct completion killed;	/* dma_kill() released the channel */
	atomic_t prep_failures;		/* consecutive */
	struct work_struct kill_work, free_work;
	char name[32];			/* the channel's; its device may go first */
	char devname[32];		/* the engine's device's */
	enum ntbsmc_dma_choice choice;	/* why this channel */
};

#define DMA_KILLED		0	/* flags: dma_kill() ran or runs */
#define DMA_KILL_QUEUED		1
#define DMA_MAX_PREP_FAILURES	256	/* in a row: the engine is gone, not busy */

struct workqueue_struct *ntbsmc_dma_wq;
static atomic_t dma_live = ATOMIC_INIT(0);	/* records not freed yet */

/* ---- channels ---- */

static void dma_free_work(struct work_struct *work)
{
	struct ntbsmc_dma *d = container_of(work, struct ntbsmc_dma, free_work);

	/* the channel was released in dma_kill(), which every record goes through */
	dma_unmap_resource(d->dmadev, d->peer_win, d->peer_win_size, DMA_FROM_DEVICE, 0);
	put_device(d->dmadev);
	ntbsmc_dev_put(d->dev);
	kfree(d);
	if (atomic_dec_and_test(&dma_live))
		wake_up_var(&dma_live);
}

static void dma_release(struct kref *ref)
{
	struct ntbsmc_dma *d = container_of(ref, struct ntbsmc_dma, ref);

	/* dma_release_channel() sleeps; the last put may not. */
	queue_work(ntbsmc_dma_wq, &d->free_work);
}

void ntbsmc_dma_put(struct ntbsmc_dma *d)
{
	kref_put(&d->ref, dma_release);
}

void ntbsmc_dma_get(struct ntbsmc_dma *d)
{
	kref_get(&d->ref);
}

/*
 * dma_kill() released the channel: nothing of ours is in flight on it, and a
 * segment still pending on it will never be called back.
 */
bool ntbsmc_dma_terminated(struct ntbsmc_dma *d)
{
	/* pairs with the release that marks the channel terminated */
	return smp_load_acquire(&d->terminated);
}

/*
 * Stops all use of @d: it is no longer the device's channel, nobody submits on it
 * any more (SRCU) and the channel is released: its engine stopped, and every
 * descriptor of ours on it was called back or never will be. Returns when that
 * is so, also when another caller does the work. After a @failed channel the
 * device waits a second before it asks for another one; one let go because the
 * device went down or idle may be followed by the next connection's at once.
 * Process context; the caller holds a reference on @d.
 */
static void dma_kill(struct ntbsmc_dma *d, bool failed)
{
	struct ntbsmc_dev *dev = d->dev;
	bool owned = false;

	might_sleep();
	mutex_lock(&dev->dma_lock);
	if (rcu_access_pointer(dev->dma) == d) {
		RCU_INIT_POINTER(dev->dma, NULL);
		if (failed)
			dev->dma_retry = jiffies + HZ;
		/* under dma_lock: a detach that finds no channel sees the count */
		atomic_inc(&dev->dma_killing);	/* dropped below, once released */
		owned = true;
	}
	mutex_unlock(&dev->dma_lock);
	if (!test_and_set_bit(DMA_KILLED, &d->flags)) {
		ntbsmc_conn_sync();
		/*
		 * -ENOSYS on plx_dma and ioatdma. The release stops them; it may
		 * call our segments back (aborted), from here, under dmaengine's
		 * dma_list_mutex: seg_desc_done() takes no mutex.
		 */
		dmaengine_terminate_sync(d->chan);
		dma_release_channel(d->chan);
		/* segments still pending now will never be called back */
		smp_store_release(&d->terminated, true);
		complete_all(&d->killed);
		/* dev->name: the NTB device may be on its way out */
		pr_info("ntbsmc: %s: DMA channel %s dropped\n", dev->name, d->name);
	} else {
		/* the device's next epoch must not begin under a running engine */
		wait_for_completion(&d->killed);
	}
	if (owned) {
		/* @d holds @dev: the waker does not outlive it */
		if (atomic_dec_and_test(&dev->dma_killing))
			wake_up_var(&dev->dma_killing);
		ntbsmc_dma_put(d);
	}
}

static void dma_kill_work(struct work_struct *work)
{
	struct ntbsmc_dma *d = container_of(work, struct ntbsmc_dma, kill_work);

	dma_kill(d, true);
	ntbsmc_dma_put(d);	/* ntbsmc_dma_kill_async()'s */
}

/* From any context: the channel failed; the caller holds a reference on @d. */
void ntbsmc_dma_kill_async(struct ntbsmc_dma *d)
{
	if (test_and_set_bit(DMA_KILL_QUEUED, &d->flags))
		return;
	kref_get(&d->ref);	/* put in dma_kill_work() */
	queue_work(ntbsmc_dma_wq, &d->kill_work);
}

/* The PCI function a device is, or sits below (a platform engine's parent). */
static struct pci_dev *dma_pci_dev(struct device *d)
{
	for (; d; d = d->parent)
		if (dev_is_pci(d))
			return to_pci_dev(d);
	return NULL;
}

/* The upstream port of the PCIe switch a function is below, or NULL. */
static struct pci_dev *pci_switch_of(struct pci_dev *p)
{
	for (p = pci_upstream_bridge(p); p; p = pci_upstream_bridge(p))
		if (pci_is_pcie(p) && pci_pcie_type(p) == PCI_EXP_TYPE_UPSTREAM)
			return p;
	return NULL;
}

/*
 * An engine is on the NTB device's switch when it is a function of the same
 * device (a PEX-87xx's NT port and its DMA functions can be) or below the same
 * upstream port: its writes into the window then never leave the switch.
 */
static bool dma_on_switch(struct device *engine, struct pci_dev *ntb)
{
	struct pci_dev *p = dma_pci_dev(engine);
	struct pci_dev *sw;

	if (!p || !ntb)
		return false;
	if (p->bus == ntb->bus && PCI_SLOT(p->devfn) == PCI_SLOT(ntb->devfn))
		return true;
	sw = pci_switch_of(ntb);
	return sw && sw == pci_switch_of(p);
}

struct dma_pref {
	enum ntbsmc_dma_choice choice;
	struct pci_dev *ntb;
	int node;
};

static bool dma_filter(struct dma_chan *chan, void *param)
{
	const struct dma_pref *pref = param;
	struct device *engine = chan->device->dev;

	switch (pref->choice) {
	case NTBSMC_DMA_CHOICE_SWITCH:
		return dma_on_switch(engine, pref->ntb);
	case NTBSMC_DMA_CHOICE_NUMA:
		return dev_to_node(engine) == pref->node;
	default:
		return true;
	}
}

/* The first DMA_MEMCPY channel in order of preference; its choice in *pref. */
static struct dma_chan *dma_choose(struct ntbsmc_dev *dev, struct dma_pref *pref)
{
	struct dma_chan *chan;
	dma_cap_mask_t mask;

	dma_cap_zero(mask);
	dma_cap_set(DMA_MEMCPY, mask);
	pref->ntb = dev->ntb->pdev;
	pref->node = dev_to_node(&dev->ntb->dev);
	for (pref->choice = 0; pref->choice < __NTBSMC_DMA_CHOICE_MAX; pref->choice++) {
		if (pref->choice == NTBSMC_DMA_CHOICE_NUMA && pref->node == NUMA_NO_NODE)
			continue;
		chan = dma_request_channel(mask, dma_filter, pref);
		if (chan)
			return chan;
	}
	return NULL;
}

/*
 * Gives the device a DMA channel if the namespace wants DMA and it has none; called
 * when a connection is set up (process context). Without one, writes use the CPU.
 */
void ntbsmc_dma_attach(struct ntbsmc_dev *dev, struct net *net)
{
	struct ntbsmc_dma *d = NULL;
	struct dma_pref pref;
	struct dma_chan *chan;
	phys_addr_t pbase;
	resource_size_t psize;
	int idx;

	if (!READ_ONCE(ntbsmc_net(net)->dma_threshold) || rcu_access_pointer(dev->dma))
		return;
	/*
	 * dev->ntb is the device's only while it is up: a device going down sets
	 * its state first and then waits for this section (ntbsmc_dma_detach()
	 * under dma_lock, then SRCU), and a channel attached just before is
	 * dropped there.
	 */
	idx = srcu_read_lock(&ntbsmc_srcu);
	mutex_lock(&dev->dma_lock);
	if (rcu_access_pointer(dev->dma) || time_before(jiffies, dev->dma_retry) ||
	    READ_ONCE(dev->state) != NTBSMC_DEV_ACTIVE)
		goto out;
	dev->dma_retry = jiffies + HZ;	/* failures are not retried at once */
	chan = dma_choose(dev, &pref);
	if (!chan)
		goto out;
	if (ntb_peer_mw_get_addr(dev->ntb, 0, &pbase, &psize))
		goto err_chan;
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		goto err_chan;
	kref_init(&d->ref);		/* dev->dma's, put in dma_kill() */
	INIT_WORK(&d->kill_work, dma_kill_work);
	INIT_WORK(&d->free_work, dma_free_work);
	init_completion(&d->killed);
	d->chan = chan;
	d->choice = pref.choice;
	strscpy(d->name, dma_chan_name(chan), sizeof(d->name));
	strscpy(d->devname, dev_name(chan->device->dev), sizeof(d->devname));
	d->dmadev = get_device(dmaengine_get_dma_device(chan));	/* put in dma_free_work() */
	d->peer_win_size = dev->peer_win_size;
	/* The engine writes the peer's window: map the BAR, not struct pages. */
	d->peer_win = dma_map_resource(d->dmadev, pbase, d->peer_win_size, DMA_FROM_DEVICE, 0);
	if (dma_mapping_error(d->dmadev, d->peer_win)) {
		put_device(d->dmadev);
		kfree(d);
		goto err_chan;
	}
	kref_get(&dev->ref);		/* put in dma_free_work() */
	d->dev = dev;
	atomic_inc(&dma_live);
	rcu_assign_pointer(dev->dma, d);
	dev->dma_retry = 0;
	dev_info(&dev->ntb->dev, "ntbsmc: DMA channel %s of %s (%s)\n", d->name, d->devname,
		 pref.choice == NTBSMC_DMA_CHOICE_SWITCH ? "on this switch" :
		 pref.choice == NTBSMC_DMA_CHOICE_NUMA ? "on this NUMA node" : "any");
	goto out;

err_chan:
	dma_release_channel(chan);
out:
	mutex_unlock(&dev->dma_lock);
	srcu_read_unlock(&ntbsmc_srcu, idx);
}

/*
 * The device goes down or away: its channel is dropped, every channel it let go
 * before is released, and nothing is in flight. Waits for kills that take
 * dev->dma_lock and dmaengine's dma_list_mutex, so the caller holds neither;
 * dev->lock it may hold (no kill takes it).
 */
void ntbsmc_dma_detach(struct ntbsmc_dev *dev)
{
	struct ntbsmc_dma *d;

	might_sleep();
	mutex_lock(&dev->dma_lock);
	d = rcu_dereference_protected(dev->dma, lockdep_is_held(&dev->dma_lock));
	if (d)
		kref_get(&d->ref);	/* put below */
	mutex_unlock(&dev->dma_lock);
	if (d) {
		dma_kill(d, false);
		ntbsmc_dma_put(d);
	} else {
		/* no DMA, but CPU writers of the old epoch must be gone too */
		ntbsmc_conn_sync();
	}
	/*
	 * Channels dropped earlier (a timeout's kill, from the workqueue) may be
	 * halting their engines still. A device going down gets no new one; an
	 * active one (its link group idle) may, and its kill is waited for too:
	 * each release is bounded by its provider.
	 */
	wait_var_event(&dev->dma_killing, !atomic_read(&dev->dma_killing));
}

/* The device's channel, its engine and why it was chosen; false if it has none. */
bool ntbsmc_dma_chan_info(struct ntbsmc_dev *dev, struct ntbsmc_dma_info *info)
{
	struct ntbsmc_dma *d;
	int idx;

	idx = srcu_read_lock(&ntbsmc_srcu);
	d = srcu_dereference(dev->dma, &ntbsmc_srcu);
	if (d) {
		strscpy(info->chan, d->name, sizeof(info->chan));
		strscpy(info->dev, d->devname, sizeof(info->dev));
		info->choice = d->choice;
	}
	srcu_read_unlock(&ntbsmc_srcu, idx);
	return d != NULL;
}

/* ---- segments: mapping, submitting, completion ---- */

/* dmaengine callback, in the engine's completion context. */
static void seg_desc_done(void *param, const struct dmaengine_result *res)
{
	struct ntbsmc_txseg *seg = param;

	if (res->result != DMA_TRANS_NOERROR) {
		WRITE_ONCE(seg->error, true);
		if (res->result == DMA_TRANS_ABORTED)
			ntbsmc_dma_kill_async(seg->dma);	/* the engine went away */
	}
	if (atomic_dec_and_test(&seg->descs))
		ntbsmc_txseg_done(seg);
}

/* Issues one descriptor of @seg: @len bytes from @src to @off of the peer's buffer. */
static bool seg_issue(struct ntbsmc_txseg *seg, dma_addr_t src, u32 off, u32 len)
{
	struct ntbsmc_conn *conn = seg->conn;
	struct ntbsmc_dma *d = seg->dma;
	struct dma_async_tx_descriptor *tx;
	dma_addr_t dst = d->peer_win + conn->peer_rmb_off + off;

	if (!is_dma_copy_aligned(d->chan->device, src, dst, len))
		return false;
	tx = dmaengine_prep_dma_memcpy(d->chan, dst, src, len,
				       DMA_PREP_INTERRUPT | DMA_CTRL_ACK);
	if (!tx) {
		/* full or gone; an engine that refuses everything is dropped */
		if (atomic_inc_return(&d->prep_failures) >= DMA_MAX_PREP_FAILURES)
			ntbsmc_dma_kill_async(d);
		return false;
	}
	atomic_set(&d->prep_failures, 0);
	tx->callback_result = seg_desc_done;
	tx->callback_param = seg;
	atomic_inc(&seg->descs);
	if (dma_submit_error(dmaengine_submit(tx))) {
		atomic_dec(&seg->descs);
		ntbsmc_dma_kill_async(d);
		return false;
	}
	return true;
}

/*
 * The user address range the iterator continues with, if it is user memory:
 * zero-copy pins it. Stops at the end of the current iovec.
 */
static bool iter_user_span(const struct iov_iter *i, unsigned long *addr, size_t *len)
{
	if (iter_is_ubuf(i)) {
		*addr = (unsigned long)i->ubuf + i->iov_offset;
		*len = i->count;
		return true;
	}
	if (iter_is_iovec(i) && i->nr_segs) {
		*addr = (unsigned long)iter_iov(i)->iov_base + i->iov_offset;
		*len = min(i->count, iter_iov(i)->iov_len - i->iov_offset);
		return true;
	}
	return false;
}

/*
 * Pins the user pages behind the next up to *@len bytes of @msg (FOLL_PIN, as for
 * O_DIRECT and RDMA: a fork or munmap meanwhile leaves them ours) and shortens
 * *@len to what was pinned. 0, or -EFAULT when nothing could be.
 */
int ntbsmc_dma_pin(struct ntbsmc_txseg *seg, struct msghdr *msg, u32 *len)
{
	unsigned long addr;
	size_t span;
	int n, got;

	if (!iter_user_span(&msg->msg_iter, &addr, &span) || !span)
		return -EAGAIN;		/* nothing to pin here: stage it */
	*len = min_t(size_t, *len, span);
	seg->pg_off = offset_in_page(addr);
	n = DIV_ROUND_UP(seg->pg_off + *len, PAGE_SIZE);
	got = pin_user_pages_fast(addr & PAGE_MASK, n, 0, seg->pages);
	if (got <= 0)
		return -EFAULT;
	seg->npages = got;
	*len = min_t(u32, *len, got * PAGE_SIZE - seg->pg_off);
	iov_iter_advance(&msg->msg_iter, *len);
	return 0;
}

/*
 * Maps the pinned pages for the engine, merging physically contiguous runs, and
 * issues one descriptor per run. False if not all of it went out.
 */
static bool seg_issue_pages(struct ntbsmc_txseg *seg)
{
	struct device *dmadev = seg->dma->dmadev;
	u32 done = 0, i = 0;

	while (done < seg->len) {
		u32 start = i, off = i ? 0 : seg->pg_off;
		u32 run = min_t(u32, PAGE_SIZE - off, seg->len - done);
		dma_addr_t a;

		while (done + run < seg->len && i + 1 < seg->npages &&
		       page_to_pfn(seg->pages[i + 1]) == page_to_pfn(seg->pages[i]) + 1) {
			i++;
			run += min_t(u32, PAGE_SIZE, seg->len - done - run);
		}
		i++;
		a = dma_map_page(dmadev, seg->pages[start], off, run, DMA_TO_DEVICE);
		if (dma_mapping_error(dmadev, a))
			return false;
		seg->run_addr[seg->nruns] = a;
		seg->run_len[seg->nruns++] = run;
		if (!seg_issue(seg, a, seg->off + done, run))
			return false;
		done += run;
	}
	return true;
}

/*
 * Maps @seg for its channel and issues it: its pinned pages (zero-copy) or its
 * run of the staging buffer. What did not go out, the CPU writes when the
 * segment retires (tx.c). In the SRCU section, which dma_kill() waits for.
 */
void ntbsmc_dma_submit(struct ntbsmc_txseg *seg)
{
	struct ntbsmc_conn *conn = seg->conn;
	struct ntbsmc_dma *d = seg->dma;
	u32 off = seg->off, len = seg->len;
	bool ok;

	RCU_LOCKDEP_WARN(!srcu_read_lock_held(&ntbsmc_srcu), "outside the SRCU section");
	if (seg->zc) {
		ok = seg_issue_pages(seg);
	} else {
		seg->src = dma_map_single(d->dmadev, conn->stage + off, len, DMA_TO_DEVICE);
		ok = !dma_mapping_error(d->dmadev, seg->src);
		if (!ok)
			seg->src = DMA_MAPPING_ERROR;
		else
			ok = seg_issue(seg, seg->src, off, len);
	}
	if (!ok)
		WRITE_ONCE(seg->error, true);	/* the CPU writes what did not go out */
	dma_async_issue_pending(d->chan);
}

/* Undoes what submitting @seg set up; every descriptor of it is done. */
void ntbsmc_dma_unmap(struct ntbsmc_txseg *seg)
{
	struct device *dmadev = seg->dma->dmadev;
	u32 i;

	if (seg->zc) {
		for (i = 0; i < seg->nruns; i++)
			dma_unmap_page(dmadev, seg->run_addr[i], seg->run_len[i], DMA_TO_DEVICE);
		unpin_user_pages(seg->pages, seg->npages);
	} else if (seg->src != DMA_MAPPING_ERROR) {
		dma_unmap_single(dmadev, seg->src, seg->len, DMA_TO_DEVICE);
	}
}

enum ntbsmc_tx_path ntbsmc_dma_path(struct sock *sk, struct ntbsmc_conn *conn,
				    struct msghdr *msg, size_t len)
{
	struct ntbsmc_net *nn = ntbsmc_net(sock_net(sk));
	int thr = READ_ONCE(nn->dma_threshold), zthr = READ_ONCE(nn->zerocopy_threshold);

	if (!thr || len < thr || !rcu_access_pointer(conn->dev->dma))
		return NTBSMC_TX_CPU;
	if (zthr && len >= zthr && user_backed_iter(&msg->msg_iter))
		return NTBSMC_TX_ZC;
	return NTBSMC_TX_DMA;
}

int ntbsmc_dma_init(void)
{
	ntbsmc_dma_wq = alloc_workqueue("ntbsmc_dma", WQ_HIGHPRI, 0);
	return ntbsmc_dma_wq ? 0 : -ENOMEM;
}

/* After every device was removed: their channels are detached, segments retire. */
void ntbsmc_dma_exit(void)
{
	wait_var_event(&dma_live, !atomic_read(&dma_live));
	destroy_workqueue(ntbsmc_dma_wq);
}
