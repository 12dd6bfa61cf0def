// SPDX-License-Identifier: GPL-2.0
/* NTB hardware driver for QEMU's ivshmem-doorbell device: an emulated NTB link. */

/*
 * Two ivshmem-doorbell devices attached to one ivshmem server share one memory
 * region (BAR2) and can interrupt each other (BAR0 doorbell register -> peer's MSI-X
 * vector). This driver turns that pair into an NTB link registered with the NTB
 * core, so that every NTB client runs over it unmodified.
 *
 * Shared memory layout (all little endian; the server writes the fabric header):
 *
 *   slot 0              fabric header (4 KiB) | side 0 control | side 1 control
 *   slot 1 .. mw        side 0's inbound memory windows (written by side 1)
 *   slot mw+1 .. 2*mw   side 1's inbound memory windows (written by side 0)
 *
 * A slot is the largest power of two such that 1 + 2 * mw_count slots fit, so every
 * window is naturally aligned to its size (the PEX-8749 profile's translation
 * alignment). A side is the device's ivshmem peer id (0 or 1).
 *
 * Memory windows: real NTB hardware translates the peer's writes into whatever
 * buffer the client programs with ntb_mw_set_trans(). Shared memory cannot be
 * re-pointed, so the driver instead hands out the window itself as the buffer:
 * it installs dma_map_ops on the PCI device whose ->alloc returns the next free
 * inbound window, and ntb_mw_set_trans() accepts exactly that window's address.
 * Clients that allocate with dma_alloc_coherent(&ntb->pdev->dev, ...) and then set
 * the translation (ntb_transport, ntb_perf, ntb_tool) work unchanged.
 *
 * Doorbells: every field in shared memory has a single writer. The ringing side
 * counts each bit in its own control block (ring[bit]++), then writes the ivshmem
 * doorbell register; the receiving side's interrupt handler turns changed counters
 * into pending bits. Pending bits, the mask and the "seen" counters are local
 * state, so a bit rung while masked stays pending and is delivered on unmask.
 * Likewise a bit rung before this side reports the link up stays pending until
 * it does: on hardware a doorbell cannot cross a link that is down, and clients
 * drop a command from a peer whose link they do not see up (ntb_perf does, and
 * then waits forever for its next command to be taken).
 *
 * Link: each side publishes a heartbeat, a presence flag and its link-enable flag.
 * The link is up while both sides are present and enabled and the peer's heartbeat
 * advanced within link_timeout_ms. A side that unloads clears its flags and kicks
 * the peer; when a VM goes away the ivshmem server does the same for it (as a
 * switch reports the link of a host that powered off): both are seen at once. The
 * heartbeat only catches a peer that stops without leaving (a hung VM); its
 * timeout is long because under emulation a busy host deschedules a VM for
 * hundreds of milliseconds.
 */

#include <linux/module.h>
#include <linux/pci.h>
#include <linux/ntb.h>
#include <linux/io.h>
#include <linux/interrupt.h>
#include <linux/irq_work.h>
#include <linux/workqueue.h>
#include <linux/dma-map-ops.h>
#include <linux/property.h>
#include <linux/spinlock.h>
#include <linux/bitmap.h>

#include "ivshmem.h"

enum { PROFILE_DEFAULT, PROFILE_PEX8749, PROFILE_PLX };

static char *profile = "default";
module_param(profile, charp, 0444);
MODULE_PARM_DESC(profile, "Device limits: default, pex8749 (16 doorbells, 1 vector, 8 scratchpads, translation alignment = window size) or plx (a register-level model of a PEX-87xx NT port under ntb_hw_plx)");

static unsigned int mw_count = 2;
module_param(mw_count, uint, 0444);
MODULE_PARM_DESC(mw_count, "Memory windows per direction (1-4, default 2)");

static unsigned int plx_split;
module_param(plx_split, uint, 0644);
MODULE_PARM_DESC(plx_split, "profile plx: the chip's A-LUT on, and BAR2 split into 2^plx_split windows by ntb_hw_plx (its split option); read at each bind (default 0: A-LUT off)");

static unsigned int link_train_ms = 50;
module_param(link_train_ms, uint, 0644);
MODULE_PARM_DESC(link_train_ms, "Link comes up once both ends have been ready this long, like link training (default 50)");

static unsigned int link_timeout_ms = 5000;
module_param(link_timeout_ms, uint, 0644);
MODULE_PARM_DESC(link_timeout_ms, "Link goes down when the peer's heartbeat stalls this long: a hung peer (100-60000, default 5000)");

static const struct ivs_limits ivs_profiles[] = {
	[PROFILE_DEFAULT] = { .db_count = 32, .spad_count = 16, .max_vectors = 4 },
	[PROFILE_PEX8749] = { .db_count = 16, .spad_count = 8, .max_vectors = 1,
			      .align_to_window = true },
};

static unsigned int link_timeout(void)
{
	return clamp(link_timeout_ms, 100U, 60000U);
}

/*
 * Heartbeats are written and checked every tenth of the timeout. A peer that died
 * right after a heartbeat is noticed at most one period late, and the check that
 * finds it stale runs at most one period late, so the peer is declared dead once
 * its heartbeat is seven periods old: down within the timeout.
 */
static unsigned long hb_period(void)
{
	return msecs_to_jiffies(link_timeout() / 10);
}

static u64 ivs_db_valid(struct ivs_dev *ivs)
{
	return GENMASK_ULL(ivs->lim.db_count - 1, 0);
}

static u64 ivs_vector_mask(struct ivs_dev *ivs, unsigned int vec)
{
	u64 mask = 0;
	unsigned int bit;

	for (bit = vec; bit < ivs->lim.db_count; bit += ivs->nvec)
		mask |= BIT_ULL(bit);
	return mask;
}

void ivs_kick_peer(struct ivs_dev *ivs, unsigned int vec)
{
	/* The stores the peer must see (payload, ring counters) precede the kick. */
	wmb();
	iowrite32((ivs->peer_id << 16) | vec, ivs->regs + IVSHMEM_DOORBELL);
}

/* Announces a change of our presence or link enable to the peer, on vector 0. */
static void ivs_publish_event(struct ivs_dev *ivs)
{
	shm_write(&ivs->self->event, shm_read(&ivs->self->event) + 1);
	ivs_kick_peer(ivs, 0);
}

/* ---- link ---- */

/* Reports a link state change to the clients, once, from any context. */
static void ivs_link_report(struct ivs_dev *ivs, bool up)
{
	if (xchg(&ivs->link_up, up) == up)
		return;
	dev_info(&ivs->pdev->dev, "link %s\n", up ? "up" : "down");
	/* the model's driver polls the link, as on its hardware */
	if (ivs->model)
		return;
	ntb_link_event(&ivs->ntb);
	/* Doorbells the peer rang while our side was still training. */
	if (up)
		irq_work_queue(&ivs->db_redeliver);
}

/*
 * A doorbell from the peer proves the link is up, as on hardware where doorbells
 * only cross a live link: report it before the doorbell itself, or a client may
 * receive a command from a peer it still believes unreachable (ntb_perf drops it).
 */
static void ivs_link_up_by_doorbell(struct ivs_dev *ivs)
{
	unsigned long since = READ_ONCE(ivs->ready_since);

	if (READ_ONCE(ivs->link_up) || READ_ONCE(ivs->removing) ||
	    READ_ONCE(ivs->link_held) ||
	    !READ_ONCE(ivs->link_enabled) || !shm_read(&ivs->peer->present) ||
	    !shm_read(&ivs->peer->link_en) || !since ||
	    time_before(jiffies, since + msecs_to_jiffies(link_train_ms)))
		return;
	ivs_link_report(ivs, true);
}

static void ivs_link_work(struct work_struct *work)
{
	struct ivs_dev *ivs = container_of(to_delayed_work(work), struct ivs_dev,
					   link_work);
	unsigned long delay, train;
	u32 hb, gen, present, en;
	bool alive, up, bounced = false;

	shm_write(&ivs->self->heartbeat, shm_read(&ivs->self->heartbeat) + 1);
	/*
	 * A stale heartbeat means a dead peer only if we were watching: after a gap
	 * of our own (this VM, or the whole host, stalled) the peer gets a fresh grace
	 * period, or a host hiccup would take every link down.
	 */
	if (time_after(jiffies, ivs->last_check + 2 * hb_period()))
		ivs->peer_hb_seen = jiffies;
	ivs->last_check = jiffies;

	present = shm_read(&ivs->peer->present);
	smp_rmb();	/* pairs with ivs_side_start()'s smp_wmb(): present, then gen */
	en = shm_read(&ivs->peer->link_en);
	hb = shm_read(&ivs->peer->heartbeat);
	gen = shm_read(&ivs->peer->gen);

	if (hb != ivs->peer_hb) {
		ivs->peer_hb = hb;
		ivs->peer_hb_seen = jiffies;
	}
	if (gen != ivs->peer_gen) {
		/* The peer re-probed: any link we saw belonged to its old instance. */
		bounced = ivs->link_up;
		ivs->peer_gen = gen;
	}
	alive = present &&
		time_before(jiffies, ivs->peer_hb_seen + 7 * hb_period());
	up = alive && en && READ_ONCE(ivs->link_enabled) &&
	     !READ_ONCE(ivs->link_held) && !READ_ONCE(ivs->removing);

	if (bounced && up && xchg(&ivs->link_up, false) && !ivs->model)
		ntb_link_event(&ivs->ntb);
	/*
	 * Training: up is reported once both ends have been ready link_train_ms.
	 * A client's probe may report "down" and queue its own cleanup; a link up
	 * before that cleanup ran would be undone by it (ntb_transport does that).
	 */
	delay = hb_period();
	if (!up) {
		WRITE_ONCE(ivs->ready_since, 0);
	} else if (!ivs->link_up) {
		train = msecs_to_jiffies(link_train_ms);
		if (!ivs->ready_since)
			WRITE_ONCE(ivs->ready_since, jiffies ?: 1);
		if (time_before(jiffies, ivs->ready_since + train)) {
			up = false;
			delay = min(delay, ivs->ready_since + train - jiffies);
		}
	}
	if (up || ivs->link_up)
		ivs_link_report(ivs, up);
	if (!READ_ONCE(ivs->removing))
		schedule_delayed_work(&ivs->link_work, delay);
}

static u64 ivs_link_is_up(struct ntb_dev *ntb, enum ntb_speed *speed,
			  enum ntb_width *width)
{
	struct ivs_dev *ivs = ntb_ivs(ntb);
	bool up = READ_ONCE(ivs->link_up);

	if (speed)
		*speed = up ? NTB_SPEED_GEN3 : NTB_SPEED_NONE;
	if (width)
		*width = up ? NTB_WIDTH_8 : NTB_WIDTH_NONE;
	return up;
}

int ivs_link_set(struct ivs_dev *ivs, bool enable)
{
	WRITE_ONCE(ivs->link_enabled, enable);
	if (READ_ONCE(ivs->removing))
		return 0;
	shm_write(&ivs->self->link_en, enable && !READ_ONCE(ivs->link_held));
	ivs_publish_event(ivs);
	mod_delayed_work(system_wq, &ivs->link_work, 0);
	return 0;
}

/* The model holds the link down (a DL_Down, a device gone), both ends see it. */
void ivs_link_hold(struct ivs_dev *ivs, bool hold)
{
	WRITE_ONCE(ivs->link_held, hold);
	ivs_link_set(ivs, READ_ONCE(ivs->link_enabled));
}

static int ivs_link_enable(struct ntb_dev *ntb, enum ntb_speed max_speed,
			   enum ntb_width max_width)
{
	return ivs_link_set(ntb_ivs(ntb), true);
}

static int ivs_link_disable(struct ntb_dev *ntb)
{
	return ivs_link_set(ntb_ivs(ntb), false);
}

/* ---- memory windows ---- */

resource_size_t ivs_mw_offset(struct ivs_dev *ivs, u32 side, int widx)
{
	return ivs->mw_size * (1 + side * mw_count + widx);
}

static int ivs_mw_count(struct ntb_dev *ntb, int pidx)
{
	return pidx == NTB_DEF_PEER_IDX ? mw_count : -EINVAL;
}

static int ivs_mw_get_align(struct ntb_dev *ntb, int pidx, int widx,
			    resource_size_t *addr_align,
			    resource_size_t *size_align,
			    resource_size_t *size_max)
{
	struct ivs_dev *ivs = ntb_ivs(ntb);

	if (pidx != NTB_DEF_PEER_IDX || widx < 0 || widx >= mw_count)
		return -EINVAL;
	if (addr_align)
		*addr_align = ivs->lim.align_to_window ? ivs->mw_size : PAGE_SIZE;
	if (size_align)
		*size_align = PAGE_SIZE;
	if (size_max)
		*size_max = ivs->mw_size;
	return 0;
}

static int ivs_mw_set_trans(struct ntb_dev *ntb, int pidx, int widx,
			    dma_addr_t addr, resource_size_t size)
{
	struct ivs_dev *ivs = ntb_ivs(ntb);
	dma_addr_t base;

	if (pidx != NTB_DEF_PEER_IDX || widx < 0 || widx >= mw_count)
		return -EINVAL;
	base = ivs->inbound_phys + widx * ivs->mw_size;
	if (addr != base || size > ivs->mw_size) {
		/* Only the window's own memory can receive: see the file comment. */
		dev_err(&ivs->pdev->dev,
			"mw%d: translation to %pad+%pa refused: only buffers from dma_alloc_coherent() on this device (in window order) can be translated\n",
			widx, &addr, &size);
		return -EINVAL;
	}
	mutex_lock(&ivs->mw_lock);
	ivs->mw_xlat[widx] = addr;
	mutex_unlock(&ivs->mw_lock);
	return 0;
}

static int ivs_mw_clear_trans(struct ntb_dev *ntb, int pidx, int widx)
{
	struct ivs_dev *ivs = ntb_ivs(ntb);

	if (pidx != NTB_DEF_PEER_IDX || widx < 0 || widx >= mw_count)
		return -EINVAL;
	mutex_lock(&ivs->mw_lock);
	ivs->mw_xlat[widx] = 0;
	mutex_unlock(&ivs->mw_lock);
	return 0;
}

static int ivs_peer_mw_count(struct ntb_dev *ntb)
{
	return mw_count;
}

static int ivs_peer_mw_get_addr(struct ntb_dev *ntb, int widx,
				phys_addr_t *base, resource_size_t *size)
{
	struct ivs_dev *ivs = ntb_ivs(ntb);

	if (widx < 0 || widx >= mw_count)
		return -EINVAL;
	if (base)
		*base = ivs->shm_phys + ivs_mw_offset(ivs, ivs->peer_id, widx);
	if (size)
		*size = ivs->mw_size;
	return 0;
}

/* ---- doorbells ---- */

/*
 * A doorbell crosses as a counter per bit in the ringer's control block, which
 * only the ringer writes (cross-VM read-modify-write is not atomic under TCG):
 * ivs_ring() counts @bits rung; the receiver's ivs_rings_taken() returns the
 * bits of @scan whose counters moved since its @seen, and updates @seen.
 */
void ivs_ring(struct ivs_dev *ivs, u64 bits)
{
	unsigned long flags;
	unsigned int bit;

	spin_lock_irqsave(&ivs->ring_lock, flags);
	for (bit = 0; bit < DB_MAX; bit++)
		if (bits & BIT_ULL(bit))
			shm_write(&ivs->self->ring[bit], shm_read(&ivs->self->ring[bit]) + 1);
	spin_unlock_irqrestore(&ivs->ring_lock, flags);
}

u64 ivs_rings_taken(struct ivs_dev *ivs, u32 *seen, u64 scan)
{
	unsigned int bit;
	u64 rung = 0;
	u32 cnt;

	for (bit = 0; bit < DB_MAX; bit++) {
		if (!(scan & BIT_ULL(bit)))
			continue;
		cnt = shm_read(&ivs->peer->ring[bit]);
		if (cnt != seen[bit]) {
			seen[bit] = cnt;
			rung |= BIT_ULL(bit);
		}
	}
	return rung;
}

/*
 * Turns the peer's changed ring counters into pending bits and reports the bits of
 * @vec that are pending and unmasked. Called from the vector's interrupt handler
 * and from the redelivery irq_work.
 */
static void ivs_db_deliver(struct ivs_dev *ivs, unsigned int vec, bool scan)
{
	u64 vmask = ivs_vector_mask(ivs, vec), fire;
	unsigned long flags;

	spin_lock_irqsave(&ivs->db_lock, flags);
	if (scan)
		ivs->db_pending |= ivs_rings_taken(ivs, ivs->db_seen, vmask);
	fire = ivs->db_pending & ~ivs->db_mask & vmask;
	if (!READ_ONCE(ivs->link_up))
		fire = 0;	/* held until ivs_link_report(true) */
	spin_unlock_irqrestore(&ivs->db_lock, flags);

	if (fire)
		ntb_db_event(&ivs->ntb, vec);
}

static irqreturn_t ivs_isr(int irq, void *data)
{
	struct ivs_vec *v = data;
	struct ivs_dev *ivs = v->ivs;
	unsigned int vec = v->vec;
	u32 ev;

	/* Rings are read after the interrupt that announced them. */
	rmb();
	ivs_link_up_by_doorbell(ivs);
	if (vec == 0) {
		ev = shm_read(&ivs->peer->event);
		if (ev != READ_ONCE(ivs->event_seen)) {
			WRITE_ONCE(ivs->event_seen, ev);
			mod_delayed_work(system_wq, &ivs->link_work, 0);
		}
	}
	if (ivs->model)
		ivs_plx_model_irq(ivs);
	else
		ivs_db_deliver(ivs, vec, true);
	return IRQ_HANDLED;
}

static void ivs_db_redeliver(struct irq_work *work)
{
	struct ivs_dev *ivs = container_of(work, struct ivs_dev, db_redeliver);
	unsigned int vec;

	for (vec = 0; vec < ivs->nvec; vec++)
		ivs_db_deliver(ivs, vec, false);
}

static u64 ivs_db_valid_mask(struct ntb_dev *ntb)
{
	return ivs_db_valid(ntb_ivs(ntb));
}

static int ivs_db_vector_count(struct ntb_dev *ntb)
{
	return ntb_ivs(ntb)->nvec;
}

static u64 ivs_db_vector_mask(struct ntb_dev *ntb, int db_vector)
{
	struct ivs_dev *ivs = ntb_ivs(ntb);

	if (db_vector < 0 || db_vector >= ivs->nvec)
		return 0;
	return ivs_vector_mask(ivs, db_vector);
}

static u64 ivs_db_read(struct ntb_dev *ntb)
{
	return READ_ONCE(ntb_ivs(ntb)->db_pending);
}

static u64 ivs_db_read_mask(struct ntb_dev *ntb)
{
	return READ_ONCE(ntb_ivs(ntb)->db_mask);
}

/* Updates the local doorbell state; redelivers when unmasked bits are pending. */
static int ivs_db_update(struct ntb_dev *ntb, u64 set_pending, u64 clear_pending,
			 u64 set_mask, u64 clear_mask)
{
	struct ivs_dev *ivs = ntb_ivs(ntb);
	u64 valid = ivs_db_valid(ivs);
	unsigned long flags;
	bool redeliver;

	if ((set_pending | clear_pending | set_mask | clear_mask) & ~valid)
		return -EINVAL;

	spin_lock_irqsave(&ivs->db_lock, flags);
	ivs->db_pending = (ivs->db_pending | set_pending) & ~clear_pending;
	ivs->db_mask = (ivs->db_mask | set_mask) & ~clear_mask;
	redeliver = (set_pending | clear_mask) &&
		    (ivs->db_pending & ~ivs->db_mask);
	spin_unlock_irqrestore(&ivs->db_lock, flags);

	/* Like hardware, an unmasked pending bit raises the interrupt again. */
	if (redeliver)
		irq_work_queue(&ivs->db_redeliver);
	return 0;
}

static int ivs_db_set(struct ntb_dev *ntb, u64 bits)
{
	return ivs_db_update(ntb, bits, 0, 0, 0);
}

static int ivs_db_clear(struct ntb_dev *ntb, u64 bits)
{
	return ivs_db_update(ntb, 0, bits, 0, 0);
}

static int ivs_db_set_mask(struct ntb_dev *ntb, u64 bits)
{
	return ivs_db_update(ntb, 0, 0, bits, 0);
}

static int ivs_db_clear_mask(struct ntb_dev *ntb, u64 bits)
{
	return ivs_db_update(ntb, 0, 0, 0, bits);
}

static int ivs_peer_db_set(struct ntb_dev *ntb, u64 bits)
{
	struct ivs_dev *ivs = ntb_ivs(ntb);
	DECLARE_BITMAP(vecs, DB_MAX) = { };
	unsigned int bit, vec;

	if (bits & ~ivs_db_valid(ivs))
		return -EINVAL;

	ivs_ring(ivs, bits);
	for (bit = 0; bit < ivs->lim.db_count; bit++)
		if (bits & BIT_ULL(bit))
			__set_bit(bit % ivs->nvec, vecs);
	for_each_set_bit(vec, vecs, ivs->nvec)
		ivs_kick_peer(ivs, vec);
	return 0;
}

/* ---- scratchpads ---- */

static int ivs_spad_count(struct ntb_dev *ntb)
{
	return ntb_ivs(ntb)->lim.spad_count;
}

static u32 ivs_spad_read(struct ntb_dev *ntb, int sidx)
{
	struct ivs_dev *ivs = ntb_ivs(ntb);

	if (sidx < 0 || sidx >= ivs->lim.spad_count)
		return 0;
	return shm_read(&ivs->self->spad[sidx]);
}

static int ivs_spad_write(struct ntb_dev *ntb, int sidx, u32 val)
{
	struct ivs_dev *ivs = ntb_ivs(ntb);

	if (sidx < 0 || sidx >= ivs->lim.spad_count)
		return -EINVAL;
	shm_write(&ivs->self->spad[sidx], val);
	return 0;
}

static u32 ivs_peer_spad_read(struct ntb_dev *ntb, int pidx, int sidx)
{
	struct ivs_dev *ivs = ntb_ivs(ntb);

	if (pidx != NTB_DEF_PEER_IDX || sidx < 0 || sidx >= ivs->lim.spad_count)
		return 0;
	return shm_read(&ivs->peer->spad[sidx]);
}

static int ivs_peer_spad_write(struct ntb_dev *ntb, int pidx, int sidx, u32 val)
{
	struct ivs_dev *ivs = ntb_ivs(ntb);

	if (pidx != NTB_DEF_PEER_IDX || sidx < 0 || sidx >= ivs->lim.spad_count)
		return -EINVAL;
	shm_write(&ivs->peer->spad[sidx], val);
	return 0;
}

/*
 * Ports: like two-port hardware without unique port numbers, both ends are port 0
 * (ntb_perf then uses window 0 in both directions, which the in-order window
 * allocation can always serve). The sysfs "port" attribute tells the sides apart.
 */
static int ivs_port_number(struct ntb_dev *ntb)
{
	return 0;
}

static int ivs_peer_port_count(struct ntb_dev *ntb)
{
	return 1;
}

static int ivs_peer_port_number(struct ntb_dev *ntb, int pidx)
{
	return pidx == NTB_DEF_PEER_IDX ? 0 : -EINVAL;
}

static int ivs_peer_port_idx(struct ntb_dev *ntb, int port)
{
	return port == 0 ? NTB_DEF_PEER_IDX : -EINVAL;
}

static const struct ntb_dev_ops ivs_ntb_ops = {
	.port_number		= ivs_port_number,
	.peer_port_count	= ivs_peer_port_count,
	.peer_port_number	= ivs_peer_port_number,
	.peer_port_idx		= ivs_peer_port_idx,
	.link_is_up		= ivs_link_is_up,
	.link_enable		= ivs_link_enable,
	.link_disable		= ivs_link_disable,
	.mw_count		= ivs_mw_count,
	.mw_get_align		= ivs_mw_get_align,
	.mw_set_trans		= ivs_mw_set_trans,
	.mw_clear_trans		= ivs_mw_clear_trans,
	.peer_mw_count		= ivs_peer_mw_count,
	.peer_mw_get_addr	= ivs_peer_mw_get_addr,
	.db_valid_mask		= ivs_db_valid_mask,
	.db_vector_count	= ivs_db_vector_count,
	.db_vector_mask		= ivs_db_vector_mask,
	.db_read		= ivs_db_read,
	.db_set			= ivs_db_set,
	.db_clear		= ivs_db_clear,
	.db_read_mask		= ivs_db_read_mask,
	.db_set_mask		= ivs_db_set_mask,
	.db_clear_mask		= ivs_db_clear_mask,
	.peer_db_set		= ivs_peer_db_set,
	.spad_count		= ivs_spad_count,
	.spad_read		= ivs_spad_read,
	.spad_write		= ivs_spad_write,
	.peer_spad_read		= ivs_peer_spad_read,
	.peer_spad_write	= ivs_peer_spad_write,
};

/* ---- window memory for clients: dma_map_ops of the PCI device ---- */

static void *ivs_dma_alloc(struct device *dev, size_t size, dma_addr_t *dma,
			   gfp_t gfp, unsigned long attrs)
{
	struct ivs_dev *ivs = dev_get_drvdata(dev);
	void *vaddr = NULL;
	unsigned int i;

	if (!ivs)
		return NULL;
	mutex_lock(&ivs->mw_lock);
	for (i = 0; i < ivs->nr_bufs; i++) {
		if (test_bit(i, ivs->buf_alloced) || size > ivs->bufs[i].size)
			continue;
		__set_bit(i, ivs->buf_alloced);
		vaddr = ivs->inbound + ivs->bufs[i].off;
		*dma = ivs->inbound_phys + ivs->bufs[i].off;
		break;
	}
	mutex_unlock(&ivs->mw_lock);
	if (vaddr)
		memset(vaddr, 0, size);
	return vaddr;
}

static void ivs_dma_free(struct device *dev, size_t size, void *vaddr,
			 dma_addr_t dma, unsigned long attrs)
{
	struct ivs_dev *ivs = dev_get_drvdata(dev);
	unsigned int i;

	mutex_lock(&ivs->mw_lock);
	for (i = 0; i < ivs->nr_bufs; i++)
		if (dma == ivs->inbound_phys + ivs->bufs[i].off)
			break;
	if (!WARN_ON(i == ivs->nr_bufs || !test_bit(i, ivs->buf_alloced)))
		__clear_bit(i, ivs->buf_alloced);
	mutex_unlock(&ivs->mw_lock);
}

/*
 * The buffers dma_alloc_coherent() hands out: @n of @size each from @off of
 * our inbound memory on, after those set already. Before clients bind.
 */
void ivs_add_bufs(struct ivs_dev *ivs, resource_size_t off, resource_size_t size,
		  unsigned int n)
{
	while (n-- && !WARN_ON(ivs->nr_bufs == BUF_MAX)) {
		ivs->bufs[ivs->nr_bufs].off = off;
		ivs->bufs[ivs->nr_bufs++].size = size;
		off += size;
	}
}

/* The guest has no IOMMU: streaming mappings are physical addresses. */
static dma_addr_t ivs_dma_map_page(struct device *dev, struct page *page,
				   unsigned long offset, size_t size,
				   enum dma_data_direction dir,
				   unsigned long attrs)
{
	return page_to_phys(page) + offset;
}

static void ivs_dma_unmap_page(struct device *dev, dma_addr_t dma, size_t size,
			       enum dma_data_direction dir, unsigned long attrs)
{
}

static int ivs_dma_map_sg(struct device *dev, struct scatterlist *sgl, int nents,
			  enum dma_data_direction dir, unsigned long attrs)
{
	struct scatterlist *sg;
	int i;

	for_each_sg(sgl, sg, nents, i) {
		sg->dma_address = sg_phys(sg);
		sg_dma_len(sg) = sg->length;
	}
	return nents;
}

static void ivs_dma_unmap_sg(struct device *dev, struct scatterlist *sgl,
			     int nents, enum dma_data_direction dir,
			     unsigned long attrs)
{
}

static dma_addr_t ivs_dma_map_resource(struct device *dev, phys_addr_t phys,
				       size_t size, enum dma_data_direction dir,
				       unsigned long attrs)
{
	return phys;
}

static const struct dma_map_ops ivs_dma_ops = {
	.alloc		= ivs_dma_alloc,
	.free		= ivs_dma_free,
	.map_page	= ivs_dma_map_page,
	.unmap_page	= ivs_dma_unmap_page,
	.map_sg		= ivs_dma_map_sg,
	.unmap_sg	= ivs_dma_unmap_sg,
	.map_resource	= ivs_dma_map_resource,
};

/* ---- fabric identity ---- */

static ssize_t fabric_id_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	struct ivs_dev *ivs = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%*phN\n", FABRIC_ID_LEN, ivs->fabric_id);
}
static DEVICE_ATTR_RO(fabric_id);

static ssize_t profile_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	struct ivs_dev *ivs = dev_get_drvdata(dev);

	if (ivs->model)
		return sysfs_emit(buf,
				  "plx mw=%u mw_size=%pa db=16 vectors=1 spad=12 align=window\n",
				  mw_count, &ivs->mw_size);
	return sysfs_emit(buf, "%s mw=%u mw_size=%pa db=%u vectors=%u spad=%u align=%s\n",
			  ivs->lim.align_to_window ? "pex8749" : "default",
			  mw_count, &ivs->mw_size, ivs->lim.db_count, ivs->nvec,
			  ivs->lim.spad_count,
			  ivs->lim.align_to_window ? "window" : "page");
}
static DEVICE_ATTR_RO(profile);

static ssize_t port_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct ivs_dev *ivs = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", ivs->side);
}
static DEVICE_ATTR_RO(port);

static struct attribute *ivs_attrs[] = {
	&dev_attr_fabric_id.attr,
	&dev_attr_port.attr,
	&dev_attr_profile.attr,
	NULL,
};
ATTRIBUTE_GROUPS(ivs);

/*
 * NTB clients find the fabric identity as the "ntb-fabric-id" property of
 * ntb->pdev: 16 bytes both ends of the link read identically.
 */
static int ivs_publish_fabric_id(struct ivs_dev *ivs)
{
	ivs->props[0] = PROPERTY_ENTRY_U8_ARRAY("ntb-fabric-id", ivs->fabric_id);
	ivs->swnode.properties = ivs->props;
	return device_add_software_node(&ivs->pdev->dev, &ivs->swnode);
}

/* ---- probe / remove ---- */

/* Validates the server-written header: it is the first thing read from the peer side. */
static int ivs_read_fabric_hdr(struct ivs_dev *ivs)
{
	struct fabric_hdr h;

	memcpy(&h, ivs->ctrl_area, sizeof(h));
	if (le32_to_cpu(h.magic) != FABRIC_MAGIC ||
	    le32_to_cpu(h.layout) != FABRIC_LAYOUT) {
		dev_err(&ivs->pdev->dev,
			"no ntbsmc fabric header in shared memory (magic %#x layout %u): use selftests/vm/ivshmem-server\n",
			le32_to_cpu(h.magic), le32_to_cpu(h.layout));
		return -ENODEV;
	}
	if (le64_to_cpu(h.size) != ivs->shm_size || le32_to_cpu(h.max_peers) != 2) {
		dev_err(&ivs->pdev->dev,
			"fabric header disagrees with the device (size %llu vs %pa, peers %u)\n",
			le64_to_cpu(h.size), &ivs->shm_size,
			le32_to_cpu(h.max_peers));
		return -ENODEV;
	}
	memcpy(ivs->fabric_id, h.fabric_id, FABRIC_ID_LEN);
	return 0;
}

static int ivs_setup_layout(struct ivs_dev *ivs)
{
	unsigned int slots = roundup_pow_of_two(1 + 2 * mw_count);

	ivs->mw_size = ivs->shm_size / slots;
	if (ivs->mw_size < SZ_1M) {
		dev_err(&ivs->pdev->dev, "shared memory %pa too small for %u windows\n",
			&ivs->shm_size, mw_count);
		return -EINVAL;
	}
	ivs->ctrl_area = devm_memremap(&ivs->pdev->dev, ivs->shm_phys,
				       CTRL_OFFSET + 2 * CTRL_SIZE, MEMREMAP_WB);
	if (IS_ERR(ivs->ctrl_area))
		return PTR_ERR(ivs->ctrl_area);
	ivs->inbound_phys = ivs->shm_phys + ivs_mw_offset(ivs, ivs->side, 0);
	ivs->inbound = devm_memremap(&ivs->pdev->dev, ivs->inbound_phys,
				     mw_count * ivs->mw_size, MEMREMAP_WB);
	if (IS_ERR(ivs->inbound))
		return PTR_ERR(ivs->inbound);
	ivs->self = ivs->ctrl_area + CTRL_OFFSET + ivs->side * CTRL_SIZE;
	ivs->peer = ivs->ctrl_area + CTRL_OFFSET + ivs->peer_id * CTRL_SIZE;
	return 0;
}

/* Announces this side: fresh control block, then present, then a kick. */
static void ivs_side_start(struct ivs_dev *ivs)
{
	u32 gen = shm_read(&ivs->self->gen) + 1;

	/* Bits the peer rang before we were here are not ours to deliver. */
	ivs_rings_taken(ivs, ivs->db_seen, GENMASK_ULL(DB_MAX - 1, 0));
	ivs->event_seen = shm_read(&ivs->peer->event);
	ivs->peer_hb = shm_read(&ivs->peer->heartbeat);
	ivs->peer_gen = shm_read(&ivs->peer->gen);
	ivs->peer_hb_seen = jiffies;
	ivs->last_check = jiffies;

	shm_write(&ivs->self->link_en, 0);
	shm_write(&ivs->self->gen, gen);
	smp_wmb();	/* pairs with the smp_rmb() in ivs_link_work(): gen, then present */
	shm_write(&ivs->self->present, 1);
	ivs_publish_event(ivs);
}

static void ivs_side_stop(struct ivs_dev *ivs)
{
	shm_write(&ivs->self->link_en, 0);
	shm_write(&ivs->self->present, 0);
	ivs_publish_event(ivs);
}

static int ivs_parse_profile(struct ivs_limits *lim)
{
	if (sysfs_streq(profile, "default"))
		*lim = ivs_profiles[PROFILE_DEFAULT];
	else if (sysfs_streq(profile, "pex8749") || sysfs_streq(profile, "plx"))
		*lim = ivs_profiles[PROFILE_PEX8749];
	else
		return -EINVAL;
	return 0;
}

static int ivs_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct ivs_dev *ivs;
	int rc, nvec;
	bool plx;
	unsigned int i;

	if (mw_count < 1 || mw_count > MW_MAX) {
		dev_err(&pdev->dev, "mw_count=%u out of range 1-%d\n", mw_count, MW_MAX);
		return -EINVAL;
	}
	ivs = devm_kzalloc(&pdev->dev, sizeof(*ivs), GFP_KERNEL);
	if (!ivs)
		return -ENOMEM;
	if (ivs_parse_profile(&ivs->lim)) {
		dev_err(&pdev->dev, "unknown profile '%s' (default, pex8749, plx)\n", profile);
		return -EINVAL;
	}
	plx = sysfs_streq(profile, "plx");
	if (plx && mw_count != 2) {
		/* BAR2 and the B2B window BAR4, each with one window's memory */
		dev_err(&pdev->dev, "profile plx needs mw_count=2\n");
		return -EINVAL;
	}
	ivs->pdev = pdev;
	spin_lock_init(&ivs->ring_lock);
	spin_lock_init(&ivs->db_lock);
	mutex_init(&ivs->mw_lock);
	init_irq_work(&ivs->db_redeliver, ivs_db_redeliver);
	INIT_DELAYED_WORK(&ivs->link_work, ivs_link_work);

	rc = pcim_enable_device(pdev);
	if (rc)
		return rc;
	rc = pcim_iomap_regions(pdev, BIT(0), DRV_NAME);
	if (rc)
		return rc;
	ivs->regs = pcim_iomap_table(pdev)[0];
	ivs->shm_phys = pci_resource_start(pdev, 2);
	ivs->shm_size = pci_resource_len(pdev, 2);
	if (!ivs->shm_size || !is_power_of_2(ivs->shm_size)) {
		dev_err(&pdev->dev, "BAR2 (shared memory) missing or not a power of two\n");
		return -ENODEV;
	}
	if (!devm_request_mem_region(&pdev->dev, ivs->shm_phys, ivs->shm_size,
				     DRV_NAME))
		return -EBUSY;

	ivs->side = ioread32(ivs->regs + IVSHMEM_IVPOSITION);
	if (ivs->side > 1) {
		dev_err(&pdev->dev,
			"ivshmem peer id %u: an NTB link has exactly two ends (0 and 1)\n",
			ivs->side);
		return -ENODEV;
	}
	ivs->peer_id = 1 - ivs->side;

	rc = ivs_setup_layout(ivs);
	if (rc)
		return rc;
	if (!plx)
		ivs_add_bufs(ivs, 0, ivs->mw_size, mw_count);
	rc = ivs_read_fabric_hdr(ivs);
	if (rc)
		return rc;

	pci_set_master(pdev);	/* ivshmem delivers MSI-X only to a bus master */
	nvec = pci_msix_vec_count(pdev);
	if (nvec < 1) {
		dev_err(&pdev->dev, "no MSI-X vectors: start QEMU with ivshmem-doorbell,vectors=N\n");
		return -ENODEV;
	}
	nvec = min_t(int, nvec, ivs->lim.max_vectors);
	nvec = pci_alloc_irq_vectors(pdev, 1, nvec, PCI_IRQ_MSIX);
	if (nvec < 0)
		return nvec;
	ivs->nvec = nvec;

	rc = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (rc)
		goto err_vectors;
	pci_set_drvdata(pdev, ivs);
	set_dma_ops(&pdev->dev, &ivs_dma_ops);

	for (i = 0; i < ivs->nvec; i++) {
		ivs->vecs[i].ivs = ivs;
		ivs->vecs[i].vec = i;
		rc = request_irq(pci_irq_vector(pdev, i), ivs_isr, 0, DRV_NAME,
				 &ivs->vecs[i]);
		if (rc)
			goto err_irqs;
	}

	rc = ivs_publish_fabric_id(ivs);
	if (rc)
		goto err_irqs;

	ivs->ntb.pdev = pdev;
	ivs->ntb.topo = NTB_TOPO_B2B_USD;
	ivs->ntb.ops = &ivs_ntb_ops;

	ivs_side_start(ivs);
	/* Clients bound here may enable the link; link_work starts below. */
	if (plx)
		rc = ivs_plx_model_create(ivs, plx_split);
	else
		rc = ntb_register_device(&ivs->ntb);
	if (rc)
		goto err_stop;
	mod_delayed_work(system_wq, &ivs->link_work, 0);
	if (ivs->model)
		return 0;

	dev_info(&pdev->dev,
		 "NTB port %u of fabric %*phN: %s profile, %u x %pa windows, %u doorbells on %u vectors, %u scratchpads\n",
		 ivs->side, FABRIC_ID_LEN, ivs->fabric_id,
		 ivs->lim.align_to_window ? "pex8749" : "default", mw_count,
		 &ivs->mw_size, ivs->lim.db_count, ivs->nvec, ivs->lim.spad_count);
	return 0;

err_stop:
	ivs_side_stop(ivs);
	device_remove_software_node(&pdev->dev);
err_irqs:
	WRITE_ONCE(ivs->removing, true);
	while (i--)
		free_irq(pci_irq_vector(pdev, i), &ivs->vecs[i]);
	irq_work_sync(&ivs->db_redeliver);
	cancel_delayed_work_sync(&ivs->link_work);
	set_dma_ops(&pdev->dev, NULL);
err_vectors:
	pci_free_irq_vectors(pdev);
	return rc;
}

static void ivs_remove(struct pci_dev *pdev)
{
	struct ivs_dev *ivs = pci_get_drvdata(pdev);
	unsigned int i;

	/*
	 * Like a port whose driver goes away, the link drops first: the peer sees us
	 * leave at once, our clients see the link down, then they are unbound.
	 */
	WRITE_ONCE(ivs->removing, true);
	ivs_side_stop(ivs);
	dev_info(&pdev->dev, "port %u leaving the link\n", ivs->side);
	mod_delayed_work(system_wq, &ivs->link_work, 0);
	flush_delayed_work(&ivs->link_work);
	if (ivs->model)
		ivs_plx_model_destroy(ivs);
	else
		ntb_unregister_device(&ivs->ntb);
	for (i = 0; i < ivs->nvec; i++)
		free_irq(pci_irq_vector(pdev, i), &ivs->vecs[i]);
	irq_work_sync(&ivs->db_redeliver);
	cancel_delayed_work_sync(&ivs->link_work);
	pci_free_irq_vectors(pdev);
	device_remove_software_node(&pdev->dev);
	set_dma_ops(&pdev->dev, NULL);
}

static const struct pci_device_id ivs_pci_tbl[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1110) },
	{ }
};
MODULE_DEVICE_TABLE(pci, ivs_pci_tbl);

static struct pci_driver ivs_pci_driver = {
	.name		= DRV_NAME,
	.id_table	= ivs_pci_tbl,
	.probe		= ivs_probe,
	.remove		= ivs_remove,
	.dev_groups	= ivs_groups,
};
module_pci_driver(ivs_pci_driver);

MODULE_DESCRIPTION("NTB hardware driver for QEMU ivshmem-doorbell (emulated NTB link)");
MODULE_AUTHOR("ntbsmc developers");
MODULE_LICENSE("GPL");
