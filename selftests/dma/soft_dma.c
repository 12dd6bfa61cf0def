// SPDX-License-Identifier: GPL-2.0
/*
 * soft_dma: a dmaengine provider that copies with the CPU, for tests.
 *
 * It offers DMA_MEMCPY channels like a hardware engine (plx_dma, ioatdma): clients
 * prepare, submit and issue descriptors and are called back from the provider's own
 * context when a copy completed. Knobs (module parameters, writable at run time):
 *
 *   latency_us  each descriptor completes no earlier than this after it was issued
 *   fail_nth    the Nth descriptor processed from now fails: it writes half of its
 *               bytes, garbled, and completes with DMA_TRANS_WRITE_FAILED
 *   busy        (read only) "BYTES COPY_NS CALLBACK_NS" since loading: the bytes
 *               of the descriptors run, the CPU time spent copying them (what a
 *               hardware engine takes off the CPUs) and in the clients' callbacks
 *
 *   profile     (at load) which real provider the channels behave like:
 *                 soft  (default) terminate_all and synchronize work: queued
 *                       descriptors are dropped without a callback
 *                 plx   as plx_dma (PEX-87xx DMA): no terminate_all, no
 *                       synchronize; prep returns with the ring's lock held
 *                       (spin_lock_bh) until submit; completions are called
 *                       back in softirq context; the engine stops only when
 *                       the channel is released, and every descriptor still
 *                       queued is then called back with DMA_TRANS_ABORTED
 *                 ioat  as ioatdma: no terminate_all; callbacks in softirq
 *                       context; releasing the channel stops the engine and
 *                       drops what is queued without calling back
 *   ring        (at load) descriptors per channel, 1-65536 (default 2048, as
 *               plx_dma's ring): a prep on a full ring returns NULL
 *   stop_us     releasing a channel whose engine is busy takes this long: the
 *               engine halts only then, and the descriptor it is on (the one
 *               waiting out its latency, or the next one if a copy was under
 *               way) is written then and called back completed; the rest as
 *               the profile says. plx_dma_stop() waits up to a second for its
 *               engine's graceful pause, and the descriptor in progress
 *               completes meanwhile
 *   stopping    (read only) "RELEASING LATE": releases now waiting for their
 *               engine to halt, and the descriptors written after their
 *               channel's release began, since loading; each such write is also
 *               logged ("engine halted: ... written after the release began")
 *
 *   on_pci      (at load) a second engine, "soft_dma.1", below this PCI device
 *               (e.g. 0000:00:04.0, an NTB port), as a switch's own DMA function
 *               sits beside its NT port: clients that prefer an engine on their
 *               device's switch find it there
 *
 * The channels belong to a platform device the module creates; unbinding it
 * (echo soft_dma > /sys/bus/platform/drivers/soft_dma/unbind) is the engine going
 * away under its clients, as when a hardware engine's driver is removed: queued
 * descriptors complete with DMA_TRANS_ABORTED and new ones cannot be prepared.
 *
 * Addresses are bus addresses from the DMA API on this device. Without an IOMMU
 * they are physical: RAM is reached through the direct map, anything else (a
 * memory window's BAR) through write-combining mappings cached per channel. What
 * is RAM is read once, when the device probes: memory added later is taken for
 * MMIO, which ioremap() refuses, so such a descriptor fails (the client redoes it).
 */

#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pci.h>
#include <linux/dmaengine.h>
#include <linux/dma-mapping.h>
#include <linux/delay.h>
#include <linux/dma-direct.h>
#include <linux/io.h>
#include <linux/ioport.h>
#include <linux/range.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>
#include <linux/wait.h>
#include <linux/version.h>

#define DRV_NAME	"soft_dma"
#define MMIO_BLOCK	SZ_2M		/* granule of the cached MMIO mappings */
#define MMIO_CACHE	64
#define RAM_RANGES	32		/* System RAM ranges remembered */

static char *on_pci;
module_param(on_pci, charp, 0444);
MODULE_PARM_DESC(on_pci, "Also create an engine (soft_dma.1) below this PCI device, as a switch's DMA function beside its NT port");

enum { PROFILE_SOFT, PROFILE_PLX, PROFILE_IOAT };
static const char * const profile_names[] = { "soft", "plx", "ioat" };
static char *profile = "soft";
module_param(profile, charp, 0444);
MODULE_PARM_DESC(profile, "soft (terminate_all works), plx (as plx_dma: cannot be stopped but by releasing the channel, which aborts with callbacks) or ioat (as ioatdma: release drops without callbacks)");
static int prof;

static unsigned int ring = 2048;
module_param(ring, uint, 0444);
MODULE_PARM_DESC(ring, "Descriptors per channel, 1-65536 (default 2048, as plx_dma)");

static unsigned int nr_channels = 4;
module_param(nr_channels, uint, 0444);
MODULE_PARM_DESC(nr_channels, "DMA_MEMCPY channels (default 4)");

static unsigned int latency_us;
module_param(latency_us, uint, 0644);
MODULE_PARM_DESC(latency_us, "Least time from issue to completion of a descriptor, us");

static unsigned int stop_us;
module_param(stop_us, uint, 0644);
MODULE_PARM_DESC(stop_us, "A busy engine halts this long after its channel's release began, us, at most 60 s (plx_dma: up to 1 s)");

static atomic_t releasing, late_writes;

static int stopping_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d %d\n", atomic_read(&releasing), atomic_read(&late_writes));
}

static const struct kernel_param_ops stopping_ops = {
	.get = stopping_get,
};
module_param_cb(stopping, &stopping_ops, NULL, 0444);
MODULE_PARM_DESC(stopping, "Releases waiting for their engine to halt; descriptors written after their release began");

static atomic_t fail_countdown = ATOMIC_INIT(0);

static int fail_nth_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int rc = kstrtouint(val, 0, &n);

	if (rc)
		return rc;
	if (n > INT_MAX)
		return -ERANGE;
	atomic_set(&fail_countdown, n);
	return 0;
}

static int fail_nth_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&fail_countdown));
}

static const struct kernel_param_ops fail_nth_ops = {
	.set = fail_nth_set,
	.get = fail_nth_get,
};
module_param_cb(fail_nth, &fail_nth_ops, NULL, 0644);
MODULE_PARM_DESC(fail_nth, "Fail the Nth descriptor processed from now (0: none); reads how many remain");

static atomic64_t busy_bytes, busy_copy_ns, busy_cb_ns;

static int busy_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%lld %lld %lld\n", (long long)atomic64_read(&busy_bytes),
			  (long long)atomic64_read(&busy_copy_ns),
			  (long long)atomic64_read(&busy_cb_ns));
}

static const struct kernel_param_ops busy_ops = {
	.get = busy_get,
};
module_param_cb(busy, &busy_ops, NULL, 0444);
MODULE_PARM_DESC(busy, "Bytes copied, ns copying, ns in callbacks, since loading");

struct sdma_desc {
	struct dma_async_tx_descriptor tx;
	struct list_head node;
	dma_addr_t dst, src;
	size_t len;
	ktime_t due;
};

struct sdma_map {
	phys_addr_t base;		/* MMIO_BLOCK aligned; 0: unused */
	void __iomem *va;
};

struct sdma_chan {
	struct dma_chan chan;
	struct sdma_dev *sd;
	spinlock_t lock;		/* lists, cookies, dead */
	spinlock_t prep_lock;		/* plx: held (bh) from prep to submit */
	struct list_head submitted;	/* tx_submit()ted, not yet issued */
	struct list_head issued;	/* issue_pending()ed, in order */
	dma_cookie_t completed;
	bool dead;			/* device removed: nothing more is accepted */
	bool stop;			/* terminate_all(): drop what is queued */
	bool running;			/* sdma_work() holds a descriptor */
	bool halting;			/* released: the engine halts at halt_at */
	bool halted;			/* ... its last descriptor written then */
	ktime_t halt_at;
	struct work_struct work;
	wait_queue_head_t wq;		/* latency waits, cut short by stop */
	struct sdma_map maps[MMIO_CACHE];
	unsigned int next_map;
	struct list_head free;		/* unused descriptors of ring */
	struct sdma_desc *ring;
};

struct sdma_dev {
	struct dma_device dma;
	struct work_struct free_work;
	struct platform_device *pdev;
	/*
	 * System RAM at probe time. page_is_ram() walks the resource tree under a
	 * lock; with a descriptor per 4 KiB page (zero-copy from ordinary pages)
	 * that was a quarter of the engine's time. 0 ranges: there were too many,
	 * ask page_is_ram() after all.
	 */
	unsigned int nram;
	struct range ram[RAM_RANGES];
	unsigned int nchans;
	struct sdma_chan chans[];
};

static struct workqueue_struct *sdma_wq;

static struct sdma_chan *to_schan(struct dma_chan *c)
{
	return container_of(c, struct sdma_chan, chan);
}

static struct sdma_desc *to_sdesc(struct dma_async_tx_descriptor *tx)
{
	return container_of(tx, struct sdma_desc, tx);
}

/* A kernel address for @addr, valid for *@len bytes (shortened to what is). */
static void *sdma_ptr(struct sdma_chan *sc, dma_addr_t addr, size_t *len)
{
	struct device *dev = sc->sd->dma.dev;
	phys_addr_t phys = dma_to_phys(dev, addr), base;
	struct sdma_dev *sd = sc->sd;
	struct sdma_map *m;
	unsigned int i;

	/* RAM is linear in the direct map */
	for (i = 0; i < sd->nram; i++) {
		if (phys >= sd->ram[i].start && phys <= sd->ram[i].end) {
			*len = min_t(u64, *len, sd->ram[i].end - phys + 1);
			return phys_to_virt(phys);
		}
	}
	if (!sd->nram && page_is_ram(PHYS_PFN(phys)) && page_is_ram(PHYS_PFN(phys + *len - 1)))
		return phys_to_virt(phys);
	base = ALIGN_DOWN(phys, MMIO_BLOCK);
	*len = min_t(size_t, *len, base + MMIO_BLOCK - phys);
	for (i = 0; i < MMIO_CACHE; i++)
		if (sc->maps[i].va && sc->maps[i].base == base)
			return (void __force *)sc->maps[i].va + (phys - base);
	m = &sc->maps[sc->next_map++ % MMIO_CACHE];
	if (m->va)
		iounmap(m->va);
	m->base = base;
	m->va = ioremap_wc(base, MMIO_BLOCK);
	if (!m->va)
		return NULL;
	return (void __force *)m->va + (phys - base);
}

static void sdma_unmap_all(struct sdma_chan *sc)
{
	unsigned int i;

	for (i = 0; i < MMIO_CACHE; i++) {
		if (sc->maps[i].va)
			iounmap(sc->maps[i].va);
		sc->maps[i].va = NULL;
	}
}

/* Copies @len bytes, at most @limit of them; false if an address is unusable. */
static bool sdma_copy(struct sdma_chan *sc, struct sdma_desc *d, size_t limit, bool garble)
{
	size_t done = 0;

	while (done < limit) {
		size_t n = limit - done, m;
		void *dst, *src;

		dst = sdma_ptr(sc, d->dst + done, &n);
		m = n;
		src = sdma_ptr(sc, d->src + done, &m);
		if (!dst || !src)
			return false;
		/*
		 * Non-temporal stores, as an engine's writes bypass the CPU's
		 * caches; wmb() in sdma_work() orders them. Not plain memcpy():
		 * in a kernel built for size gcc inlines it as "rep movsb",
		 * which TCG runs a byte per step (~490 MB/s against ~4 GB/s for
		 * 8-byte moves): the engine would be the bottleneck.
		 */
		memcpy_flushcache(dst, src, m);
		if (garble)
			memset(dst, 0xa5, min_t(size_t, m, 64));
		done += m;
	}
	return true;
}

static void sdma_desc_put(struct sdma_chan *sc, struct sdma_desc *d)
{
	unsigned long flags;

	spin_lock_irqsave(&sc->lock, flags);
	list_add(&d->node, &sc->free);
	spin_unlock_irqrestore(&sc->lock, flags);
}

static void sdma_complete(struct sdma_chan *sc, struct sdma_desc *d, enum dmaengine_tx_result r)
{
	struct dmaengine_result res = { .result = r };
	struct dma_async_tx_descriptor *tx = &d->tx;
	dma_async_tx_callback_result cb_result = tx->callback_result;
	dma_async_tx_callback cb = tx->callback;
	void *param = tx->callback_param;
	unsigned long flags;

	spin_lock_irqsave(&sc->lock, flags);
	sc->completed = tx->cookie;
	list_add(&d->node, &sc->free);	/* reusable once we return */
	spin_unlock_irqrestore(&sc->lock, flags);
	/* plx_dma and ioatdma call back from a tasklet */
	if (prof != PROFILE_SOFT)
		local_bh_disable();
	if (cb_result)
		cb_result(param, &res);
	else if (cb && r == DMA_TRANS_NOERROR)
		cb(param);
	if (prof != PROFILE_SOFT)
		local_bh_enable();
}

static void sdma_sleep_until(ktime_t t)
{
	ktime_t left = ktime_sub(t, ktime_get());

	if (ktime_to_ns(left) > 0)
		fsleep(ktime_to_us(left));
}

/* Runs the issued descriptors in order, from the provider's own context. */
static void sdma_work(struct work_struct *work)
{
	struct sdma_chan *sc = container_of(work, struct sdma_chan, work);
	enum dmaengine_tx_result r;
	struct sdma_desc *d;
	u64 start, now;

	for (;;) {
		bool late = false;

		spin_lock_irq(&sc->lock);
		d = list_first_entry_or_null(&sc->issued, struct sdma_desc, node);
		if (!d || sc->stop || sc->halted) {
			sc->running = false;
			spin_unlock_irq(&sc->lock);
			return;
		}
		list_del(&d->node);
		sc->running = true;
		spin_unlock_irq(&sc->lock);

		if (ktime_before(ktime_get(), d->due))
			wait_event_hrtimeout(sc->wq, READ_ONCE(sc->stop),
					     ktime_sub(d->due, ktime_get()));
		spin_lock_irq(&sc->lock);
		late = sc->halting;
		sc->halted = late;
		spin_unlock_irq(&sc->lock);
		if (late) {
			/*
			 * The channel is being released and the engine is slow
			 * to halt: the descriptor it is on (this one, or the
			 * next if the release came during a copy) lands when it
			 * does, whatever its client did meanwhile.
			 */
			sdma_sleep_until(sc->halt_at);
		} else if (READ_ONCE(sc->stop)) {
			/* terminate_all() or removal took the channel meanwhile */
			sdma_complete(sc, d, DMA_TRANS_ABORTED);
			continue;
		}
		start = ktime_get_ns();
		/* 0 exactly when the countdown was 1 */
		if (atomic_dec_if_positive(&fail_countdown) == 0) {
			sdma_copy(sc, d, d->len / 2, true);
			r = DMA_TRANS_WRITE_FAILED;
		} else {
			r = sdma_copy(sc, d, d->len, false) ? DMA_TRANS_NOERROR :
							     DMA_TRANS_WRITE_FAILED;
		}
		/*
		 * The client publishes what we wrote, from another CPU: make the
		 * write-combined stores globally visible before saying done.
		 */
		wmb();
		atomic64_add(d->len, &busy_bytes);
		if (late) {
			atomic_inc(&late_writes);
			pr_info(DRV_NAME ": %s: engine halted: %zu bytes to %pad written after the release began\n",
				dma_chan_name(&sc->chan), d->len, &d->dst);
		}
		now = ktime_get_ns();
		atomic64_add(now - start, &busy_copy_ns);
		sdma_complete(sc, d, r);
		atomic64_add(ktime_get_ns() - now, &busy_cb_ns);
	}
}

static dma_cookie_t sdma_tx_submit(struct dma_async_tx_descriptor *tx)
{
	struct sdma_chan *sc = to_schan(tx->chan);
	struct sdma_desc *d = to_sdesc(tx);
	struct dma_chan *c = tx->chan;
	unsigned long flags;
	dma_cookie_t cookie;

	spin_lock_irqsave(&sc->lock, flags);
	if (sc->dead) {
		list_add(&d->node, &sc->free);
		spin_unlock_irqrestore(&sc->lock, flags);
		if (prof == PROFILE_PLX)
			spin_unlock_bh(&sc->prep_lock);
		return -ENODEV;
	}
	cookie = c->cookie + 1;
	if (cookie < DMA_MIN_COOKIE)
		cookie = DMA_MIN_COOKIE;
	c->cookie = cookie;
	tx->cookie = cookie;
	list_add_tail(&d->node, &sc->submitted);
	spin_unlock_irqrestore(&sc->lock, flags);
	if (prof == PROFILE_PLX)
		spin_unlock_bh(&sc->prep_lock);	/* taken in sdma_prep_memcpy() */
	return cookie;
}

static struct dma_async_tx_descriptor *
sdma_prep_memcpy(struct dma_chan *c, dma_addr_t dst, dma_addr_t src, size_t len,
		 unsigned long flags)
{
	struct sdma_chan *sc = to_schan(c);
	struct sdma_desc *d;
	unsigned long irqflags;

	if (!len)
		return NULL;
	/*
	 * plx_dma_prep_memcpy() returns with its ring's lock held and its
	 * tx_submit drops it: nothing between may sleep or prep again.
	 */
	if (prof == PROFILE_PLX)
		spin_lock_bh(&sc->prep_lock);
	spin_lock_irqsave(&sc->lock, irqflags);
	d = sc->dead ? NULL : list_first_entry_or_null(&sc->free, struct sdma_desc, node);
	if (d)
		list_del(&d->node);
	spin_unlock_irqrestore(&sc->lock, irqflags);
	if (!d) {
		if (prof == PROFILE_PLX)
			spin_unlock_bh(&sc->prep_lock);
		return NULL;	/* ring full, or the device is gone */
	}
	memset(&d->tx, 0, sizeof(d->tx));
	dma_async_tx_descriptor_init(&d->tx, c);
	d->tx.tx_submit = sdma_tx_submit;
	d->tx.flags = flags;
	d->dst = dst;
	d->src = src;
	d->len = len;
	return &d->tx;
}

static void sdma_issue_pending(struct dma_chan *c)
{
	struct sdma_chan *sc = to_schan(c);
	ktime_t due = ktime_add_us(ktime_get(), READ_ONCE(latency_us));
	struct sdma_desc *d;
	unsigned long flags;

	spin_lock_irqsave(&sc->lock, flags);
	list_for_each_entry(d, &sc->submitted, node)
		d->due = due;
	list_splice_tail_init(&sc->submitted, &sc->issued);
	if (!sc->dead)
		sc->stop = false;
	spin_unlock_irqrestore(&sc->lock, flags);
	queue_work(sdma_wq, &sc->work);
}

static enum dma_status sdma_tx_status(struct dma_chan *c, dma_cookie_t cookie,
				      struct dma_tx_state *st)
{
	struct sdma_chan *sc = to_schan(c);
	dma_cookie_t used, done;
	unsigned long flags;

	spin_lock_irqsave(&sc->lock, flags);
	used = c->cookie;
	done = sc->completed;
	spin_unlock_irqrestore(&sc->lock, flags);
	dma_set_tx_state(st, done, used, 0);
	return dma_async_is_complete(cookie, done, used);
}

/* Drops every queued descriptor; @abort: tell their clients (device removal). */
static void sdma_flush(struct sdma_chan *sc, bool abort)
{
	struct sdma_desc *d, *n;
	LIST_HEAD(gone);

	spin_lock_irq(&sc->lock);
	sc->stop = true;
	list_splice_tail_init(&sc->issued, &gone);
	list_splice_tail_init(&sc->submitted, &gone);
	spin_unlock_irq(&sc->lock);
	wake_up(&sc->wq);
	list_for_each_entry_safe(d, n, &gone, node) {
		list_del(&d->node);
		if (abort)
			sdma_complete(sc, d, DMA_TRANS_ABORTED);
		else
			sdma_desc_put(sc, d);
	}
}

/* dmaengine's contract: terminated descriptors are not called back. */
static int sdma_terminate_all(struct dma_chan *c)
{
	sdma_flush(to_schan(c), false);
	return 0;
}

static void sdma_synchronize(struct dma_chan *c)
{
	flush_work(&to_schan(c)->work);
}

/*
 * The client let the channel go. soft and ioat drop what is queued; plx stops
 * the engine (a copy under way finishes first) and calls every descriptor left
 * back as aborted, as plx_dma_free_chan_resources() does. With stop_us, a busy
 * engine takes that long to halt, and the descriptor under way lands then.
 */
static void sdma_free_chan_resources(struct dma_chan *c)
{
	struct sdma_chan *sc = to_schan(c);
	unsigned int us = min_t(unsigned int, READ_ONCE(stop_us), 60 * USEC_PER_SEC);
	bool halting;

	spin_lock_irq(&sc->lock);
	halting = us && (sc->running || !list_empty(&sc->issued));
	if (halting) {
		sc->halt_at = ktime_add_us(ktime_get(), us);
		sc->halting = true;
	}
	spin_unlock_irq(&sc->lock);
	if (halting) {
		atomic_inc(&releasing);
		sdma_sleep_until(sc->halt_at);
		/* the one under way is written and called back first, as plx_dma does */
		flush_work(&sc->work);
	}
	sdma_flush(sc, prof == PROFILE_PLX);
	flush_work(&sc->work);
	if (halting) {
		sc->halting = false;
		sc->halted = false;
		atomic_dec(&releasing);
	}
	sdma_unmap_all(sc);
}

static bool sdma_no_channel(struct dma_chan *chan, void *param)
{
	return false;
}

static void sdma_free_work(struct work_struct *work)
{
	struct sdma_dev *sd = container_of(work, struct sdma_dev, free_work);
	dma_cap_mask_t mask;
	unsigned int i;

	/*
	 * dma_release_channel() (6.1) still reads chan->device after it dropped
	 * the reference whose release called us, under dma_list_mutex: a channel
	 * request that takes nothing waits for that mutex, then sd may go.
	 */
	dma_cap_zero(mask);
	dma_cap_set(DMA_MEMCPY, mask);
	dma_request_channel(mask, sdma_no_channel, NULL);
	for (i = 0; i < sd->nchans; i++) {
		sdma_unmap_all(&sd->chans[i]);
		kvfree(sd->chans[i].ring);
	}
	put_device(&sd->pdev->dev);
	kfree(sd);
}

/* The device was removed and its last client let go (dma_list_mutex held). */
static void sdma_release(struct dma_device *dma)
{
	struct sdma_dev *sd = container_of(dma, struct sdma_dev, dma);

	INIT_WORK(&sd->free_work, sdma_free_work);
	queue_work(sdma_wq, &sd->free_work);
}

static int sdma_note_ram(struct resource *res, void *arg)
{
	struct sdma_dev *sd = arg;

	if (sd->nram == RAM_RANGES)
		return -ENOSPC;
	sd->ram[sd->nram++] = (struct range){ .start = res->start, .end = res->end };
	return 0;
}

static int sdma_probe(struct platform_device *pdev)
{
	struct sdma_dev *sd;
	struct dma_device *dma;
	unsigned int i, j;
	int rc;

	rc = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (rc)
		return rc;
	sd = kzalloc(struct_size(sd, chans, nr_channels), GFP_KERNEL);
	if (!sd)
		return -ENOMEM;
	for (i = 0; i < nr_channels; i++) {
		sd->chans[i].ring = kvcalloc(ring, sizeof(struct sdma_desc), GFP_KERNEL);
		if (!sd->chans[i].ring) {
			rc = -ENOMEM;
			goto err_free;
		}
	}
	sd->pdev = pdev;
	if (walk_iomem_res_desc(IORES_DESC_NONE, IORESOURCE_SYSTEM_RAM | IORESOURCE_BUSY,
				0, U64_MAX, sd, sdma_note_ram) == -ENOSPC)
		sd->nram = 0;
	sd->nchans = nr_channels;
	dma = &sd->dma;
	dma->dev = &pdev->dev;
	dma->owner = THIS_MODULE;
	INIT_LIST_HEAD(&dma->channels);
	dma_cap_set(DMA_MEMCPY, dma->cap_mask);
	dma_cap_set(DMA_PRIVATE, dma->cap_mask);	/* channels go to one client each */
	dma->src_addr_widths = BIT(DMA_SLAVE_BUSWIDTH_1_BYTE);
	dma->dst_addr_widths = BIT(DMA_SLAVE_BUSWIDTH_1_BYTE);
	dma->directions = BIT(DMA_MEM_TO_MEM);
	dma->device_prep_dma_memcpy = sdma_prep_memcpy;
	dma->device_issue_pending = sdma_issue_pending;
	dma->device_tx_status = sdma_tx_status;
	if (prof == PROFILE_SOFT) {
		dma->device_terminate_all = sdma_terminate_all;
		dma->device_synchronize = sdma_synchronize;
	}
	dma->device_free_chan_resources = sdma_free_chan_resources;
	dma->device_release = sdma_release;
	for (i = 0; i < sd->nchans; i++) {
		struct sdma_chan *sc = &sd->chans[i];

		sc->sd = sd;
		spin_lock_init(&sc->lock);
		spin_lock_init(&sc->prep_lock);
		INIT_LIST_HEAD(&sc->submitted);
		INIT_LIST_HEAD(&sc->issued);
		INIT_LIST_HEAD(&sc->free);
		for (j = 0; j < ring; j++)
			list_add_tail(&sc->ring[j].node, &sc->free);
		INIT_WORK(&sc->work, sdma_work);
		init_waitqueue_head(&sc->wq);
		sc->chan.device = dma;
		sc->chan.cookie = DMA_MIN_COOKIE;
		sc->completed = DMA_MIN_COOKIE;
		list_add_tail(&sc->chan.device_node, &dma->channels);
	}
	get_device(&pdev->dev);		/* put in sdma_release() */
	rc = dma_async_device_register(dma);
	if (rc) {
		put_device(&pdev->dev);
		goto err_free;
	}
	platform_set_drvdata(pdev, sd);
	dev_info(&pdev->dev, "%u DMA_MEMCPY channels, profile %s, %u descriptors each\n",
		 sd->nchans, profile_names[prof], ring);
	return 0;

err_free:
	for (i = 0; i < nr_channels; i++)
		kvfree(sd->chans[i].ring);
	kfree(sd);
	return rc;
}

static void sdma_remove(struct platform_device *pdev)
{
	struct sdma_dev *sd = platform_get_drvdata(pdev);
	unsigned int i;

	for (i = 0; i < sd->nchans; i++) {
		struct sdma_chan *sc = &sd->chans[i];

		spin_lock_irq(&sc->lock);
		sc->dead = true;
		spin_unlock_irq(&sc->lock);
		sdma_flush(sc, true);
		flush_work(&sc->work);
	}
	/* sd lives on until the last client released its channel */
	dma_async_device_unregister(&sd->dma);
}

/* 6.11: platform drivers' remove returns nothing */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 11, 0)
static int sdma_remove_int(struct platform_device *pdev)
{
	sdma_remove(pdev);
	return 0;
}

#define sdma_remove sdma_remove_int
#endif

static struct platform_driver sdma_driver = {
	.driver = { .name = DRV_NAME },
	.probe = sdma_probe,
	.remove = sdma_remove,
};

static struct platform_device *sdma_pdev, *sdma_pdev_pci;

/* The engine below PCI device @name: registered after the first, so found second. */
static int sdma_add_on_pci(const char *name)
{
	struct platform_device_info info = { .name = DRV_NAME, .id = 1 };
	struct device *parent;

	parent = bus_find_device_by_name(&pci_bus_type, NULL, name);
	if (!parent) {
		pr_err(DRV_NAME ": on_pci=%s: no such PCI device\n", name);
		return -ENODEV;
	}
	info.parent = parent;
	sdma_pdev_pci = platform_device_register_full(&info);
	put_device(parent);	/* the child holds its parent */
	return PTR_ERR_OR_ZERO(sdma_pdev_pci);
}

static int __init sdma_init(void)
{
	int rc;

	if (!nr_channels || nr_channels > 64 || !ring || ring > 65536)
		return -EINVAL;
	prof = match_string(profile_names, ARRAY_SIZE(profile_names), profile);
	if (prof < 0) {
		pr_err(DRV_NAME ": profile=%s: soft, plx or ioat\n", profile);
		return -EINVAL;
	}
	sdma_wq = alloc_workqueue(DRV_NAME, WQ_UNBOUND | WQ_HIGHPRI, 0);
	if (!sdma_wq)
		return -ENOMEM;
	rc = platform_driver_register(&sdma_driver);
	if (rc)
		goto err_wq;
	sdma_pdev = platform_device_register_simple(DRV_NAME, -1, NULL, 0);
	if (IS_ERR(sdma_pdev)) {
		rc = PTR_ERR(sdma_pdev);
		goto err_drv;
	}
	if (on_pci && *on_pci) {
		rc = sdma_add_on_pci(on_pci);
		if (rc)
			goto err_pdev;
	}
	return 0;

err_pdev:
	platform_device_unregister(sdma_pdev);
err_drv:
	platform_driver_unregister(&sdma_driver);
err_wq:
	destroy_workqueue(sdma_wq);
	return rc;
}

static void __exit sdma_exit(void)
{
	if (!IS_ERR_OR_NULL(sdma_pdev_pci))
		platform_device_unregister(sdma_pdev_pci);
	platform_device_unregister(sdma_pdev);
	platform_driver_unregister(&sdma_driver);
	destroy_workqueue(sdma_wq);
}

module_init(sdma_init);
module_exit(sdma_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Software DMA_MEMCPY engine for ntbsmc's tests");
