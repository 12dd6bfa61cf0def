// SPDX-License-Identifier: GPL-2.0
/* ntb_hw_ivshmem profile=plx: a register-level PEX-87xx NT port model under ntb_hw_plx. */

/*
 * Each end of the emulated link becomes the NT0 Virtual Interface of a
 * PEX-87xx cabled back to back to the other end's, and ntb_hw_plx drives it
 * through struct plx_io_ops: the same chip logic as on hardware, here over a
 * model of the registers it uses. The two chips' register files (256 KiB each)
 * live in the shared memory, so the peer's B2B accesses land in ours:
 *
 *   shm + 1 MiB + side * 256 KiB	chip "side"'s BAR0 (little endian)
 *
 * What the model does with a register, beyond holding it:
 *  - doorbells (own page 0xc4c..0xc58): pending bits are set by our own writes
 *    and by the peer's writes to our 0xc4c through its B2B window, which count
 *    per bit in the peer's side_ctrl.ring[] (one writer each, as cross-VM
 *    read-modify-write is not atomic under TCG) and kick our ivshmem vector;
 *    write 1 to clear, mask set/clear. A pending unmasked bit or an unmasked
 *    link error holds the "INTx" asserted: the ISR is called again while it is
 *    (level-triggered), from an irq_work;
 *  - link errors (0xfe0 write 1 to clear, 0xfe4 mask); an injected DL_Down
 *    (sysfs plx_dl_down) sets its bit, takes the link down for a while on both
 *    ends and clears the Link page, as the chip resets its link-side
 *    registers; the Test Pattern registers then ignore writes for 1 ms;
 *  - the station's Port Control bit of our port enables the link;
 *  - the B2B window reaches the peer's registers only while our BAR4
 *    translation points at 4 << 61, the peer's Link BAR0 sits there with its
 *    memory enabled and the link is up: otherwise reads return all ones and
 *    writes are dropped (counted as b2b_miss);
 *  - an inbound translation (Link page 0xc3c..) must point at the memory the
 *    window has in this fabric (the buffer dma_alloc_coherent() gave the
 *    client); one that does not is counted as bad_xlat, since the peer's
 *    writes would land elsewhere. Data windows are plain shared memory: the
 *    model cannot stop a write that a cleared translation would drop;
 *  - with plx_split (the chip's A-LUT on for NT0: 256 entries), BAR2 is
 *    translated by the A-LUT whenever its control (0xc94) is on: each entry
 *    the driver permits must map its 1/256 of BAR2 onto the same slice of
 *    window 0's memory, else bad_xlat; the entries permitted at the last
 *    switch-on are counted (alut). dma_alloc_coherent() then hands out BAR2's
 *    2^plx_split slices in turn, as the split's windows;
 *  - a device gone (sysfs plx_gone 1) reads all ones and drops writes.
 *
 * BAR2 is window 0's memory; BAR4 (B2B) is twice a window, its upper half
 * window 1's memory, its lower half the peer's registers (never mapped: the
 * accessor routes it). sysfs plx_model reads
 * "bad_xlat N b2b_miss N irqs N alut N".
 */

#include <linux/module.h>
#include <linux/io.h>
#include <linux/slab.h>
#include <linux/delay.h>

#include "ivshmem.h"
#include "../../ntb_hw_plx/ntb_hw_plx.h"

#define MODEL_REGS	SZ_1M		/* the register files, in slot 0 */
#define MODEL_PORT	8		/* NT0 on station 1's first port */
#define MODEL_REQ_ID	0x0100		/* 1:0.0 */
#define MODEL_LNKSTA	0x0043		/* x4 at 8 GT/s */
#define OUR		PLX_NT0_BASE
#define OTHER		(PLX_NT0_BASE + PLX_LINK_PAGE)
#define PORT_CTRL	(PLX_PORT_BASE(MODEL_PORT & ~7) + PLX_PORT_CTRL)
#define TEST_PATTERN	(PLX_PORT_BASE(0) + PLX_TEST_PATTERN)
#define B2B_BAR		4
#define ALUT_ENTRIES	256		/* NT0's A-LUT alone: 256 entries */
#define ALUT		(PLX_ALUT_BASE + 0x1000 * 2)	/* the Virtual side's */
#define INTX_REPEAT_MAX	1000		/* ISR calls in a row with the line still up */

/* ntb_hw_plx, found at probe: the fabric loads without it in other profiles */
struct plx_lib {
	typeof(plx_ntb_init) *init;
	typeof(plx_ntb_register) *reg;
	typeof(plx_ntb_unregister) *unreg;
	typeof(plx_ntb_uninit) *uninit;
	typeof(plx_ntb_isr) *isr;
};

struct plx_model {
	struct plx_ntb plx;		/* ntb_hw_plx's state; its ntb_dev is registered */
	struct ivs_dev *ivs;
	struct plx_lib lib;
	__le32 *regs, *peer_regs;	/* the two chips' register files */

	/* lock: the registers with side effects */
	spinlock_t lock;
	u16 pending, hwmask;
	u32 seen[PLX_NUM_DB];		/* the peer's ring counters, as taken */
	u32 link_err, link_err_mask;
	bool stopped;			/* being destroyed: no more interrupts */
	unsigned int repeats;		/* ISR calls in a row, line still up */

	unsigned int split;		/* plx_split: A-LUT on, BAR2 split */
	unsigned int alut_entries;	/* permitted at the last switch-on */
	bool gone;			/* surprise removal */
	unsigned long tp_ro_until;	/* Test Pattern registers read-only */
	struct irq_work intx;
	struct delayed_work dl_work;	/* ends an injected DL_Down */
	atomic_t bad_xlat, b2b_miss, irqs;
};

static u32 reg_get(__le32 *regs, u32 off)
{
	return le32_to_cpu(READ_ONCE(regs[off / 4]));
}

static void reg_put(__le32 *regs, u32 off, u32 val)
{
	WRITE_ONCE(regs[off / 4], cpu_to_le32(val));
}

static u64 reg_get64(__le32 *regs, u32 off)
{
	return reg_get(regs, off) | (u64)reg_get(regs, off + 4) << 32;
}

/* Takes the peer's rings into pending; lock held. */
static void scan_rings(struct plx_model *m)
{
	lockdep_assert_held(&m->lock);
	m->pending |= ivs_rings_taken(m->ivs, m->seen, PLX_DB_MASK);
}

static bool line_up(struct plx_model *m)
{
	lockdep_assert_held(&m->lock);
	return (m->pending & ~m->hwmask) ||
	       (m->link_err & ~m->link_err_mask & PLX_LINK_ERR_ALL);
}

/* Raises the INTx if a register write left it asserted; lock held. */
static void eval_line(struct plx_model *m)
{
	if (!m->stopped && !m->gone && line_up(m)) {
		m->repeats = 0;
		irq_work_queue(&m->intx);
	}
}

static void intx_work(struct irq_work *work)
{
	struct plx_model *m = container_of(work, struct plx_model, intx);
	irqreturn_t ret;
	bool again;

	if (READ_ONCE(m->stopped))
		return;
	atomic_inc(&m->irqs);
	ret = m->lib.isr(&m->plx);
	spin_lock(&m->lock);
	scan_rings(m);
	again = !m->stopped && !m->gone && line_up(m);
	if (again && (ret != IRQ_HANDLED || ++m->repeats > INTX_REPEAT_MAX)) {
		dev_err_ratelimited(&m->ivs->pdev->dev,
				    "plx model: INTx stays asserted (pending %#x mask %#x, link error %#x mask %#x): %s\n",
				    m->pending, m->hwmask, m->link_err, m->link_err_mask,
				    ret == IRQ_HANDLED ? "interrupt storm" : "nobody cared");
		again = false;
	}
	spin_unlock(&m->lock);
	if (again)
		irq_work_queue(&m->intx);
}

/* The ivshmem vector: the peer rang, or announced a link change. */
void ivs_plx_model_irq(struct ivs_dev *ivs)
{
	struct plx_model *m = ivs->model;
	unsigned long flags;

	spin_lock_irqsave(&m->lock, flags);
	scan_rings(m);
	eval_line(m);
	spin_unlock_irqrestore(&m->lock, flags);
}

/* Our B2B window reaches the peer chip's BAR0 (and the link carries it). */
static bool b2b_open(struct plx_model *m)
{
	u64 where = (u64)B2B_BAR << 61;

	return READ_ONCE(m->ivs->link_up) &&
	       reg_get64(m->regs, OUR + PLX_BAR_XLAT(B2B_BAR)) == where &&
	       (reg_get64(m->peer_regs, OTHER + PCI_BASE_ADDRESS_0) & ~0xfULL) == where &&
	       (reg_get(m->peer_regs, OTHER + PCI_COMMAND) & PCI_COMMAND_MEMORY);
}

/* An inbound translation of BAR2 (window 0) or BAR4 (window 1) was written. */
static void check_xlat(struct plx_model *m, int bar)
{
	struct ivs_dev *ivs = m->ivs;
	int widx = bar == 2 ? 0 : 1;
	u64 addr = reg_get64(m->regs, OTHER + PLX_BAR_XLAT(bar));
	phys_addr_t mem = ivs->shm_phys + ivs_mw_offset(ivs, ivs->side, widx);

	if (!addr || addr == mem)
		return;
	atomic_inc(&m->bad_xlat);
	dev_err_ratelimited(&ivs->pdev->dev,
			    "plx model: BAR%d inbound translation %#llx is not window %d's memory %pa\n",
			    bar, addr, widx, &mem);
}

/* The A-LUT was switched on: where each permitted slice of BAR2 lands. */
static void check_alut(struct plx_model *m)
{
	struct ivs_dev *ivs = m->ivs;
	phys_addr_t mem = ivs->shm_phys + ivs_mw_offset(ivs, ivs->side, 0);
	u64 slice = ivs->mw_size / ALUT_ENTRIES;
	unsigned int e, n = 0;

	for (e = 0; e < ALUT_ENTRIES; e++) {
		u32 reg = ALUT + e * 4 + (e >= 128 ? 0xe00 : 0);
		u64 addr;

		if (!(reg_get(m->regs, reg + 0x800) & 0x3))
			continue;
		n++;
		addr = reg_get(m->regs, reg) | (u64)reg_get(m->regs, reg + 0x400) << 32;
		if (addr == mem + e * slice)
			continue;
		atomic_inc(&m->bad_xlat);
		dev_err_ratelimited(&ivs->pdev->dev,
				    "plx model: A-LUT entry %u maps %#llx, not window 0's memory %pa + %#llx\n",
				    e, addr, &mem, e * slice);
	}
	m->alut_entries = n;
}

static u32 model_rd32(void *io, enum plx_space space, u32 off)
{
	struct plx_model *m = io;
	unsigned long flags;
	u32 val;

	if (READ_ONCE(m->gone) || off >= SZ_256K)
		return U32_MAX;
	off &= ~3;
	if (space == PLX_SPACE_B2B) {
		if (!b2b_open(m)) {
			atomic_inc(&m->b2b_miss);
			return U32_MAX;
		}
		return reg_get(m->peer_regs, off);
	}
	spin_lock_irqsave(&m->lock, flags);
	switch (off) {
	case OUR + PLX_DB_SET_V:
	case OUR + PLX_DB_CLEAR_V:
		scan_rings(m);
		val = m->pending;
		break;
	case OUR + PLX_DB_MASK_SET_V:
	case OUR + PLX_DB_MASK_CLEAR_V:
		val = m->hwmask;
		break;
	case OUR + PLX_LINK_ERR:
		val = m->link_err;
		break;
	case OUR + PLX_LINK_ERR_MASK:
		val = m->link_err_mask;
		break;
	case OUR + PLX_REQ_ID:
		val = MODEL_REQ_ID;
		break;
	default:
		val = reg_get(m->regs, off);
	}
	spin_unlock_irqrestore(&m->lock, flags);
	return val;
}

/* A write through the B2B window: the peer chip's doorbells, scratchpads, ... */
static void b2b_wr32(struct plx_model *m, u32 off, u32 val)
{
	if (!b2b_open(m)) {
		atomic_inc(&m->b2b_miss);
		return;
	}
	if (off != OUR + PLX_DB_SET_V) {
		reg_put(m->peer_regs, off, val);
		return;
	}
	if (val & PLX_DB_MASK) {
		ivs_ring(m->ivs, val & PLX_DB_MASK);
		ivs_kick_peer(m->ivs, 0);
	}
}

static void model_wr32(void *io, enum plx_space space, u32 off, u32 val)
{
	struct plx_model *m = io;
	unsigned long flags;
	bool port_ctrl = false;

	if (READ_ONCE(m->gone) || off >= SZ_256K)
		return;
	off &= ~3;
	if (space == PLX_SPACE_B2B) {
		b2b_wr32(m, off, val);
		return;
	}
	spin_lock_irqsave(&m->lock, flags);
	switch (off) {
	case OUR + PLX_DB_SET_V:
		m->pending |= val & PLX_DB_MASK;
		break;
	case OUR + PLX_DB_CLEAR_V:
		scan_rings(m);	/* what rang before the clear is cleared */
		m->pending &= ~val;
		break;
	case OUR + PLX_DB_MASK_SET_V:
		m->hwmask |= val & PLX_DB_MASK;
		break;
	case OUR + PLX_DB_MASK_CLEAR_V:
		m->hwmask &= ~val;
		break;
	case OUR + PLX_LINK_ERR:
		m->link_err &= ~val;
		break;
	case OUR + PLX_LINK_ERR_MASK:
		m->link_err_mask = val;
		break;
	case TEST_PATTERN ... TEST_PATTERN + 12:
		if (time_before(jiffies, m->tp_ro_until))
			break;
		reg_put(m->regs, off, val);
		break;
	case PORT_CTRL:
		reg_put(m->regs, off, val);
		port_ctrl = true;
		break;
	case OUR + PLX_ALUT_CTRL:
		/* the A-LUT or the BAR's translation register, now settled */
		reg_put(m->regs, off, val);
		if (!m->split)
			break;
		if (val & PLX_ALUT_ON)
			check_alut(m);
		else
			check_xlat(m, 2);
		break;
	default:
		reg_put(m->regs, off, val);
		/*
		 * A 64-bit translation is complete with its upper half; with the
		 * A-LUT, BAR2's is checked once the driver switched it on or off.
		 */
		if ((off == OTHER + PLX_BAR_XLAT(2) + 4 && !m->split) ||
		    off == OTHER + PLX_BAR_XLAT(4) + 4)
			check_xlat(m, off == OTHER + PLX_BAR_XLAT(2) + 4 ? 2 : 4);
	}
	eval_line(m);
	spin_unlock_irqrestore(&m->lock, flags);
	if (port_ctrl)
		ivs_link_set(m->ivs, !(val & BIT(MODEL_PORT & 7)));
}

static u32 model_cfg_rd32(void *io, u32 off)
{
	struct plx_model *m = io;

	/* 0xc8c, the face: NT0's Virtual Interface; nothing else is read */
	return READ_ONCE(m->gone) ? U32_MAX : 0;
}

static u16 model_lnksta(void *io)
{
	struct plx_model *m = io;

	if (READ_ONCE(m->gone))
		return U16_MAX;
	return READ_ONCE(m->ivs->link_up) ? MODEL_LNKSTA : 0;
}

static const struct plx_io_ops model_io = {
	.rd32		= model_rd32,
	.wr32		= model_wr32,
	.cfg_rd32	= model_cfg_rd32,
	.lnksta		= model_lnksta,
};

/* ---- fault injection: sysfs of the PCI device ---- */

static void dl_work(struct work_struct *work)
{
	struct plx_model *m = container_of(to_delayed_work(work), struct plx_model,
					   dl_work);

	ivs_link_hold(m->ivs, READ_ONCE(m->gone));
}

/* What a link loss resets in the chip: the Link page (Link BARs, translations, LUT). */
static void reset_link_side(struct plx_model *m)
{
	memset(&m->regs[OTHER / 4], 0, PLX_LINK_PAGE);
}

/* The link drops: link-side registers reset, DL_Down raised, back after @ms. */
static void model_dl_down(struct plx_model *m, unsigned int ms)
{
	unsigned long flags;

	ivs_link_hold(m->ivs, true);
	spin_lock_irqsave(&m->lock, flags);
	reset_link_side(m);
	m->tp_ro_until = jiffies + msecs_to_jiffies(1) + 1;
	m->link_err |= PLX_LINK_ERR_DL_DOWN;
	eval_line(m);
	spin_unlock_irqrestore(&m->lock, flags);
	mod_delayed_work(system_wq, &m->dl_work, msecs_to_jiffies(ms));
}

static ssize_t plx_dl_down_store(struct device *dev, struct device_attribute *attr,
				 const char *buf, size_t count)
{
	struct ivs_dev *ivs = dev_get_drvdata(dev);
	unsigned int ms;

	if (kstrtouint(buf, 0, &ms) || !ms || ms > 60000)
		return -EINVAL;
	model_dl_down(ivs->model, ms);
	return count;
}
static DEVICE_ATTR_WO(plx_dl_down);

static ssize_t plx_gone_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ivs_dev *ivs = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", READ_ONCE(ivs->model->gone));
}

/* 1: the device stops answering (all ones), as after a surprise removal; 0: back */
static ssize_t plx_gone_store(struct device *dev, struct device_attribute *attr,
			      const char *buf, size_t count)
{
	struct ivs_dev *ivs = dev_get_drvdata(dev);
	struct plx_model *m = ivs->model;
	bool gone;

	if (kstrtobool(buf, &gone))
		return -EINVAL;
	if (gone == READ_ONCE(m->gone))
		return count;
	if (!gone) {
		/* it comes back reset on the link side, as after a DL_Down */
		reset_link_side(m);
	}
	WRITE_ONCE(m->gone, gone);
	ivs_link_hold(ivs, gone);
	return count;
}
static DEVICE_ATTR_RW(plx_gone);

static ssize_t plx_model_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	struct ivs_dev *ivs = dev_get_drvdata(dev);
	struct plx_model *m = ivs->model;
	u32 seen[PLX_NUM_DB];
	unsigned long flags;
	u16 pending, mask, unseen;

	/* rings the peer counted that no interrupt of ours has taken yet */
	spin_lock_irqsave(&m->lock, flags);
	memcpy(seen, m->seen, sizeof(seen));
	pending = m->pending;
	mask = m->hwmask;
	spin_unlock_irqrestore(&m->lock, flags);
	unseen = ivs_rings_taken(ivs, seen, PLX_DB_MASK);
	return sysfs_emit(buf, "bad_xlat %d b2b_miss %d irqs %d alut %u pending %#x mask %#x unseen %#x\n",
			  atomic_read(&m->bad_xlat), atomic_read(&m->b2b_miss),
			  atomic_read(&m->irqs), READ_ONCE(m->alut_entries),
			  pending, mask, unseen);
}
static DEVICE_ATTR_RO(plx_model);

static struct attribute *model_attrs[] = {
	&dev_attr_plx_dl_down.attr,
	&dev_attr_plx_gone.attr,
	&dev_attr_plx_model.attr,
	NULL,
};

static const struct attribute_group model_group = {
	.attrs = model_attrs,
};

/* ---- create / destroy ---- */

/* No more interrupts from the model: the ISR's port is going away. */
static void model_stop(struct plx_model *m)
{
	unsigned long flags;

	spin_lock_irqsave(&m->lock, flags);
	m->stopped = true;
	spin_unlock_irqrestore(&m->lock, flags);
	irq_work_sync(&m->intx);
	cancel_delayed_work_sync(&m->dl_work);
}

static void lib_put(struct plx_lib *lib)
{
	if (lib->init)
		symbol_put(plx_ntb_init);
	if (lib->reg)
		symbol_put(plx_ntb_register);
	if (lib->unreg)
		symbol_put(plx_ntb_unregister);
	if (lib->uninit)
		symbol_put(plx_ntb_uninit);
	if (lib->isr)
		symbol_put(plx_ntb_isr);
}

static int lib_get(struct plx_lib *lib)
{
	lib->init = symbol_get(plx_ntb_init);
	lib->reg = symbol_get(plx_ntb_register);
	lib->unreg = symbol_get(plx_ntb_unregister);
	lib->uninit = symbol_get(plx_ntb_uninit);
	lib->isr = symbol_get(plx_ntb_isr);
	if (lib->init && lib->reg && lib->unreg && lib->uninit && lib->isr)
		return 0;
	lib_put(lib);
	return -ENOENT;
}

/*
 * The chip as it comes out of reset and EEPROM load: NT0 on port 8, its A-LUT
 * on with plx_split, the port's link disabled until the driver enables it.
 */
static void model_reset(struct plx_model *m)
{
	memset(m->regs, 0, SZ_256K);
	reg_put(m->regs, PLX_PORT_CFG, MODEL_PORT << 8 | (m->split ? BIT(30) : 0));
	reg_put(m->regs, PORT_CTRL, BIT(MODEL_PORT & 7));
	m->hwmask = PLX_DB_MASK;
	m->link_err_mask = PLX_LINK_ERR_ALL;
}

int ivs_plx_model_create(struct ivs_dev *ivs, unsigned int split)
{
	struct plx_params params = { .b2b = true, .split = split };
	struct plx_bar bars[6] = {};
	struct device *dev = &ivs->pdev->dev;
	struct plx_model *m;
	void *regs;
	int rc;

	if (ivs->mw_size < MODEL_REGS + 2 * SZ_256K) {
		dev_err(dev, "plx model: window slots of %pa cannot hold the register files\n",
			&ivs->mw_size);
		return -EINVAL;
	}
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	rc = lib_get(&m->lib);
	if (rc) {
		dev_err(dev, "plx model: ntb_hw_plx is not loaded\n");
		goto err_free;
	}
	regs = devm_memremap(dev, ivs->shm_phys + MODEL_REGS, 2 * SZ_256K, MEMREMAP_WB);
	if (IS_ERR(regs)) {
		rc = PTR_ERR(regs);
		goto err_lib;
	}
	m->ivs = ivs;
	m->regs = regs + ivs->side * SZ_256K;
	m->peer_regs = regs + ivs->peer_id * SZ_256K;
	spin_lock_init(&m->lock);
	init_irq_work(&m->intx, intx_work);
	INIT_DELAYED_WORK(&m->dl_work, dl_work);
	m->split = split;
	model_reset(m);
	/* bits the peer rang before we were here are not ours */
	ivs_rings_taken(ivs, m->seen, PLX_DB_MASK);

	bars[2] = (struct plx_bar){ ivs->shm_phys + ivs_mw_offset(ivs, ivs->peer_id, 0),
				    ivs->mw_size, true };
	bars[4] = (struct plx_bar){ ivs->shm_phys + ivs_mw_offset(ivs, ivs->peer_id, 1) -
				    ivs->mw_size, 2 * ivs->mw_size, true };
	rc = m->lib.init(&m->plx, &model_io, m, dev, bars, &params);
	if (rc)
		goto err_lib;
	/* the clients' buffers: BAR2's windows (its split), then window 1 */
	ivs_add_bufs(ivs, 0, ivs->mw_size >> split, 1 << split);
	ivs_add_bufs(ivs, ivs->mw_size, ivs->mw_size, 1);
	ivs->model = m;
	rc = sysfs_create_group(&dev->kobj, &model_group);
	if (rc)
		goto err_uninit;
	rc = m->lib.reg(&m->plx, ivs->pdev);
	if (rc)
		goto err_group;
	dev_info(dev, "NTB port %u of fabric %*phN: a PEX-87xx NT port model under ntb_hw_plx\n",
		 ivs->side, FABRIC_ID_LEN, ivs->fabric_id);
	return 0;

err_group:
	sysfs_remove_group(&dev->kobj, &model_group);
err_uninit:
	model_stop(m);
	m->lib.uninit(&m->plx);
	ivs->model = NULL;
err_lib:
	lib_put(&m->lib);
err_free:
	kfree(m);
	return rc;
}

/* The port leaves: clients first, then the chip is quieted and forgotten. */
void ivs_plx_model_destroy(struct ivs_dev *ivs)
{
	struct plx_model *m = ivs->model;
	struct device *dev = &ivs->pdev->dev;

	m->lib.unreg(&m->plx);
	sysfs_remove_group(&dev->kobj, &model_group);
	m->lib.uninit(&m->plx);
	model_stop(m);
	ivs->model = NULL;
	lib_put(&m->lib);
	kfree(m);
}
