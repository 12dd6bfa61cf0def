// SPDX-License-Identifier: GPL-2.0
/* ntb_hw_plx: the PEX-87xx NT port's logic and its ntb_dev_ops, over plx_io_ops. */

/*
 * An NT port has two faces: the Virtual Interface, which the local host sees,
 * and the Link Interface, which whatever is cabled to the NT link sees. Each
 * face has a page of registers in BAR0 ("ours"); the other face's page
 * ("other") is where this side programs what the link side of its own chip
 * does: the Link BARs, the inbound translations, the link side's requester-ID
 * LUT.
 *
 * Modes:
 *  - NTB-to-NTB (B2B): two switches cabled NT link to NT link, a host on each
 *    Virtual Interface. The last data BAR is the B2B window: its lower half
 *    (all of it if it is under 2 MiB) reaches the peer chip's BAR0, through
 *    which we ring the peer's doorbells and write its scratchpads; the upper
 *    half stays a data window.
 *  - NTB-to-Root-Port: the peer's root complex enumerates our Link Interface.
 *    Both faces share one chip: doorbells are rung in the other face's
 *    registers, the 8 scratchpads are split 4 and 4.
 *
 * Errata handled here: MSI only fires when the doorbell register leaves zero,
 * so the backend uses INTx, level-triggered, and the ISR masks what it reports
 * until the client clears it; a DL_Down resets the link-side registers, so the
 * set-up is written again when the link returns; the Test Pattern registers
 * used as extra scratchpads are read-only for ~100 us after a link down, so
 * they are written until they read back.
 */

#include <linux/module.h>
#include <linux/pci.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "ntb_hw_plx.h"

#define PLX_SPAD_RETRIES	1000	/* 1 us apart: the ~100 us read-only window */
#define PLX_TEST_VALUE		0x12345678
#define PLX_B2B_MIN_SPLIT	SZ_2M	/* a smaller last BAR goes wholly to B2B */
#define PLX_LINK_BAR_MIN	SZ_1M

static bool all_ones(u32 v)
{
	return v == U32_MAX;
}

static u32 ntx_base(const struct plx_ntb *plx)
{
	return plx->ntx ? PLX_NT1_BASE : PLX_NT0_BASE;
}

/* our face's page, and the other face's */
static u32 our_page(const struct plx_ntb *plx)
{
	return ntx_base(plx) + (plx->link_side ? PLX_LINK_PAGE : 0);
}

static u32 other_page(const struct plx_ntb *plx)
{
	return ntx_base(plx) + (plx->link_side ? 0 : PLX_LINK_PAGE);
}

static u32 rd(struct plx_ntb *plx, u32 off)
{
	return plx->ops->rd32(plx->io, PLX_SPACE_BAR0, off);
}

static void wr(struct plx_ntb *plx, u32 off, u32 val)
{
	plx->ops->wr32(plx->io, PLX_SPACE_BAR0, off, val);
}

static u32 our_rd(struct plx_ntb *plx, u32 reg)
{
	return rd(plx, our_page(plx) + reg);
}

static void our_wr(struct plx_ntb *plx, u32 reg, u32 val)
{
	wr(plx, our_page(plx) + reg, val);
}

static void other_wr(struct plx_ntb *plx, u32 reg, u32 val)
{
	wr(plx, other_page(plx) + reg, val);
}

static void other_wr64(struct plx_ntb *plx, u32 reg, u64 val, bool is64)
{
	other_wr(plx, reg, lower_32_bits(val));
	if (is64)
		other_wr(plx, reg + 4, upper_32_bits(val));
}

static bool b2b(const struct plx_ntb *plx)
{
	return plx->b2b_mw >= 0;
}

/* the doorbell registers of our face */
static u32 db_reg_set(const struct plx_ntb *plx)
{
	return plx->link_side ? PLX_DB_SET_L : PLX_DB_SET_V;
}

static u32 db_reg_clear(const struct plx_ntb *plx)
{
	return plx->link_side ? PLX_DB_CLEAR_L : PLX_DB_CLEAR_V;
}

static u32 db_reg_mask_set(const struct plx_ntb *plx)
{
	return plx->link_side ? PLX_DB_MASK_SET_L : PLX_DB_MASK_SET_V;
}

static u32 db_reg_mask_clear(const struct plx_ntb *plx)
{
	return plx->link_side ? PLX_DB_MASK_CLEAR_L : PLX_DB_MASK_CLEAR_V;
}

/* B2B places the Link BARs at bar * 2^61 (2^29 for 32-bit BARs) */
static u64 link_bar_addr(const struct plx_mw *mw)
{
	return mw->is64 ? (u64)mw->bar << 61 : (u64)mw->bar << 29;
}

static u64 mw_off(const struct plx_ntb *plx, int i)
{
	return i == plx->b2b_mw ? plx->b2b_off : 0;
}

static unsigned int mw_split(const struct plx_ntb *plx, const struct plx_mw *mw)
{
	return mw->bar == 2 ? plx->split : 0;
}

/*
 * A user's window index: the 2^split parts of BAR2 first, then the other
 * BARs; a B2B window with no data half is not one. Returns the mw[] index and
 * the part in *part, or -EINVAL.
 */
static int user_mw(const struct plx_ntb *plx, int pidx, int widx, unsigned int *part)
{
	int t = 1 << plx->split;
	int i;

	if (pidx != 0 || widx < 0)
		return -EINVAL;
	if (widx < t) {
		i = 0;
		*part = widx;
	} else {
		i = widx - (t - 1);
		*part = 0;
	}
	if (i >= plx->nr_mw || (i == plx->b2b_mw && !plx->b2b_off))
		return -EINVAL;
	return i;
}

/* Test Pattern registers ignore writes for ~100 us after a link down. */
static int write_verify(struct plx_ntb *plx, enum plx_space space, u32 off, u32 val)
{
	int t;

	for (t = 0; t < PLX_SPAD_RETRIES; t++) {
		plx->ops->wr32(plx->io, space, off, val);
		if (plx->ops->rd32(plx->io, space, off) == val)
			return 0;
		udelay(1);
	}
	return -EIO;
}

/* Programs window i's Link BAR (B2B), inbound translation and A-LUT. */
static int set_trans(struct plx_ntb *plx, int i)
{
	struct plx_mw *mw = &plx->mw[i];
	unsigned int split = mw_split(plx, mw);
	unsigned int n = 128 * plx->alut;
	u64 off = mw_off(plx, i);
	u64 addr, size, bsize;
	u32 entry, perm;
	unsigned int e, sp;

	lockdep_assert_held(&plx->cfg_lock);
	/* B2B sizes the Link BAR to the translation; else the BAR is fixed */
	if (split || !b2b(plx)) {
		bsize = mw->size - off;
	} else {
		bsize = mw->xlat[0].size;
		if (bsize)
			bsize = max_t(u64, roundup_pow_of_two(bsize), PLX_LINK_BAR_MIN);
	}
	/* the shared window's Link BAR sits at off and must be aligned there */
	if (bsize && (off & (bsize - 1)))
		return -EINVAL;

	if (b2b(plx)) {
		u64 setup = bsize ? ~(bsize - 1) & ~(u64)(SZ_1M - 1) : 0;

		if (mw->is64)
			setup |= PCI_BASE_ADDRESS_MEM_TYPE_64 | PCI_BASE_ADDRESS_MEM_PREFETCH;
		other_wr64(plx, PLX_BAR_SETUP(mw->bar), setup, mw->is64);
		other_wr64(plx, PCI_BASE_ADDRESS_0 + mw->bar * 4,
			   link_bar_addr(mw) + off, mw->is64);
	}

	addr = split ? U64_MAX : mw->xlat[0].addr;
	other_wr64(plx, PLX_BAR_XLAT(mw->bar), addr, mw->is64);

	if (!plx->alut || mw->bar != 2)
		return 0;
	size = split ? 0 : mw->xlat[0].size;
	if (!split && !(addr & (bsize - 1)) && size == bsize) {
		our_wr(plx, PLX_ALUT_CTRL, 0);
		return 0;
	}
	/*
	 * n entries of bsize / n each: part sp of the split owns entries
	 * [sp * n >> split, (sp + 1) * n >> split) and maps them onto its
	 * translation, permitted up to its size.
	 */
	entry = ((plx->link_side ? 0 : 1) + (plx->alut == 1 ? 2 * plx->ntx : 0)) *
		0x1000 * plx->alut + PLX_ALUT_BASE;
	for (e = 0, sp = 0; e < n; e++) {
		u32 reg = entry + e * 4 + (e >= 128 ? 0xe00 : 0);
		u64 eaddr;

		if (e % (n >> split) == 0) {
			addr = mw->xlat[sp].addr;
			size = mw->xlat[sp].size;
			sp++;
		}
		eaddr = addr + (u64)(e % (n >> split)) * (bsize / n);
		perm = eaddr < addr + size ? 0x3 : 0;
		wr(plx, reg, lower_32_bits(eaddr));
		wr(plx, reg + 0x400, upper_32_bits(eaddr));
		wr(plx, reg + 0x800, perm);
	}
	our_wr(plx, PLX_ALUT_CTRL, PLX_ALUT_ON);
	return 0;
}

/**
 * plx_ntb_setup() - writes the chip's static configuration
 * @plx: the port
 *
 * At probe, and again once the link is back after a DL_Down, which resets the
 * link-side registers. Caller holds cfg_lock (or is the probe).
 */
void plx_ntb_setup(struct plx_ntb *plx)
{
	u32 lut = plx->link_side ? PLX_RID_LUT_L : PLX_RID_LUT_V;
	int i;

	if (b2b(plx)) {
		struct plx_mw *mw = &plx->mw[plx->b2b_mw];

		/* the peer reaches our registers through our Link BAR0 */
		other_wr(plx, PLX_BAR_SETUP0, mw->is64 ? 0x3 : 0x2);
		other_wr64(plx, PCI_BASE_ADDRESS_0,
			   link_bar_addr(mw) | (mw->is64 ? PCI_BASE_ADDRESS_MEM_TYPE_64 : 0),
			   mw->is64);
		/* our outbound windows land on the peer's Link BARs */
		for (i = 0; i < plx->nr_mw; i++) {
			mw = &plx->mw[i];
			our_wr(plx, PLX_BAR_XLAT(mw->bar), lower_32_bits(link_bar_addr(mw)));
			if (mw->is64)
				our_wr(plx, PLX_BAR_XLAT(mw->bar) + 4,
				       upper_32_bits(link_bar_addr(mw)));
		}
		if (plx->alut)
			other_wr(plx, PLX_ALUT_CTRL, 0);
		/* the peer chip's requester IDs: bus 0, slots 0-31 */
		for (i = 0; i < 32; i += 2)
			other_wr(plx, PLX_RID_LUT_L + i * 2,
				 0x00010001 | ((i + 1) << 19) | (i << 3));
	}

	/*
	 * Our side's requester IDs: 0:0.*, the one the chip reads back for us,
	 * 0/64/128/192:4.* (the Xeon I/OAT DMA engines), then the backend's
	 * (the switch's own DMA functions, those the user named).
	 */
	wr(plx, our_page(plx) + lut, (our_rd(plx, PLX_REQ_ID) << 16) | 0x00010001);
	wr(plx, our_page(plx) + lut + 4, 0x40210021);
	wr(plx, our_page(plx) + lut + 8, 0xc0218021);
	for (i = 0; i < plx->nr_rid; i += 2)
		wr(plx, our_page(plx) + lut + (PLX_RID_FIXED + i) * 2,
		   plx->rid_lut[i] | (i + 1 < plx->nr_rid ? plx->rid_lut[i + 1] << 16 : 0));

	for (i = 0; i < plx->nr_mw; i++)
		set_trans(plx, i);

	if (b2b(plx))
		other_wr(plx, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
}
EXPORT_SYMBOL_GPL(plx_ntb_setup);

/* Finds whether the Test Pattern registers at off hold a value. */
static bool probe_test_pattern(struct plx_ntb *plx, u32 off)
{
	bool ok = !write_verify(plx, PLX_SPACE_BAR0, off, PLX_TEST_VALUE);

	wr(plx, off, 0);
	return ok;
}

static int init_layout(struct plx_ntb *plx, const struct plx_bar bars[6],
		       const struct plx_params *params)
{
	u32 face, cfg;
	unsigned int i;
	int bar;

	face = plx->ops->cfg_rd32(plx->io, PLX_CFG_FACE);
	cfg = rd(plx, PLX_PORT_CFG);
	if (all_ones(face) || all_ones(cfg)) {
		dev_err(plx->dev, "device does not answer\n");
		return -ENODEV;
	}
	plx->ntx = face & PLX_CFG_FACE_NT1 ? 1 : 0;
	plx->link_side = face & PLX_CFG_FACE_LINK;
	plx->port = (cfg >> (plx->ntx ? 16 : 8)) & 0x1f;
	cfg >>= 30;
	plx->alut = cfg == 0x3 ? 1 : cfg & BIT(plx->ntx) ? 2 : 0;

	for (bar = 2; bar <= 5; bar++) {
		struct plx_mw *mw;

		if (!bars[bar].size)
			continue;
		mw = &plx->mw[plx->nr_mw++];
		mw->bar = bar;
		mw->is64 = bars[bar].is64;
		mw->phys = bars[bar].phys;
		mw->size = bars[bar].size;
		if (mw->is64)
			bar++;
	}

	if (params->nr_rid > PLX_MAX_RID) {
		dev_err(plx->dev, "%u more requester IDs: the LUT has room for %u\n",
			params->nr_rid, PLX_MAX_RID);
		return -EINVAL;
	}
	/* one entry a slot: functions of one device share it */
	for (i = 0; i < params->nr_rid; i++) {
		u16 e = (params->rid[i] & ~7) | 1;
		unsigned int j;

		for (j = 0; j < plx->nr_rid && plx->rid_lut[j] != e; j++)
			;
		if (j == plx->nr_rid)
			plx->rid_lut[plx->nr_rid++] = e;
	}

	plx->b2b_mw = -1;
	if (!plx->link_side && params->b2b) {
		if (!plx->nr_mw) {
			dev_err(plx->dev, "B2B mode needs a memory window BAR\n");
			return -ENODEV;
		}
		plx->b2b_mw = plx->nr_mw - 1;
		if (plx->mw[plx->b2b_mw].size >= PLX_B2B_MIN_SPLIT)
			plx->b2b_off = plx->mw[plx->b2b_mw].size / 2;
	}

	if (!params->split)
		return 0;
	if (params->split > PLX_MAX_SPLIT_ORDER || !plx->alut || !plx->nr_mw ||
	    plx->mw[0].bar != 2 || (plx->b2b_mw == 0 && !plx->b2b_off)) {
		dev_err(plx->dev, "cannot split BAR2 into %u windows: %s\n",
			1U << min(params->split, 31U),
			params->split > PLX_MAX_SPLIT_ORDER ? "more than 128" :
			!plx->alut ? "A-LUT disabled" :
			!plx->nr_mw || plx->mw[0].bar != 2 ? "BAR2 disabled" :
			"BAR2 is the B2B window");
		return -EINVAL;
	}
	plx->split = params->split;
	return 0;
}

/*
 * The Test Pattern registers serve as extra scratchpads. B2B: each side has
 * all of them, the peer's reached through the B2B window at the same offsets.
 * Root-Port: both faces share one set, the Virtual side takes the lower half.
 */
static void init_spads(struct plx_ntb *plx)
{
	plx->spad_off1 = our_page(plx) + PLX_SPAD0;
	plx->spad_off2 = PLX_PORT_BASE(plx->ntx * 8) + PLX_TEST_PATTERN;
	plx->spad_offp1 = plx->spad_off1;
	plx->spad_offp2 = plx->spad_off2;
	if (b2b(plx)) {
		plx->spad_count1 = PLX_NUM_SPAD;
		if (probe_test_pattern(plx, plx->spad_off2))
			plx->spad_count2 = PLX_NUM_SPAD_PATT;
		return;
	}
	if (plx->link_side) {
		plx->spad_off1 += PLX_NUM_SPAD / 2 * 4;
		plx->spad_off2 += PLX_NUM_SPAD_PATT / 2 * 4;
	} else {
		plx->spad_offp1 += PLX_NUM_SPAD / 2 * 4;
		plx->spad_offp2 += PLX_NUM_SPAD_PATT / 2 * 4;
	}
	plx->spad_count1 = PLX_NUM_SPAD / 2;
	if (probe_test_pattern(plx, plx->spad_off2))
		plx->spad_count2 = PLX_NUM_SPAD_PATT / 2;
}

static void link_work(struct work_struct *work)
{
	struct plx_ntb *plx = container_of(to_delayed_work(work), struct plx_ntb,
					   link_work);

	plx_ntb_check_link(plx);
	schedule_delayed_work(&plx->link_work, msecs_to_jiffies(plx->link_poll_ms));
}

/**
 * plx_parse_rids() - adds requester IDs named by the user to @params
 * @params:	where they go, after those already there
 * @list:	"bus:device[,bus:device...]" in hex, each also as lspci's
 *		bus:device.function (the LUT admits the whole device); NULL or
 *		"" adds none
 * @dev:	for messages
 *
 * Return: 0, -EINVAL (a malformed entry, or more than the LUT holds), -ENOMEM.
 */
int plx_parse_rids(struct plx_params *params, const char *list, struct device *dev)
{
	char *buf, *s, *tok;
	int ret = 0;

	if (!list || !*list)
		return 0;
	buf = kstrdup(list, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	s = buf;
	while ((tok = strsep(&s, ",")) && !ret) {
		unsigned int bus, slot, fn;
		char end;

		fn = 0;
		if (tok[strspn(tok, "0123456789abcdefABCDEF:.")] ||
		    (sscanf(tok, "%x:%x%c", &bus, &slot, &end) != 2 &&
		     sscanf(tok, "%x:%x.%x%c", &bus, &slot, &fn, &end) != 3) ||
		    bus > 0xff || slot > 0x1f || fn > 7) {
			dev_err(dev, "rid=%s: '%s' is not bus:device in hex\n", list, tok);
			ret = -EINVAL;
		} else if (params->nr_rid == PLX_MAX_RID) {
			dev_err(dev, "rid=%s: more requesters than the LUT's %u free entries\n",
				list, PLX_MAX_RID);
			ret = -EINVAL;
		} else {
			params->rid[params->nr_rid++] = PCI_DEVID(bus, PCI_DEVFN(slot, 0));
		}
	}
	kfree(buf);
	return ret;
}
EXPORT_SYMBOL_GPL(plx_parse_rids);

/**
 * plx_ntb_init() - finds an NT port's layout and sets the chip up
 * @plx:	zeroed
 * @ops:	the backend's accessors, and @io their context
 * @io:		passed to @ops
 * @dev:	for messages
 * @bars:	the function's BARs, by number (0 and 1 unused)
 * @params:	mode and split
 *
 * Nothing is registered yet: plx_ntb_register() does that once the backend's
 * interrupt is in place. Return: 0, -ENODEV (the device does not answer or
 * cannot serve the mode), -EINVAL (a @params the chip cannot do).
 */
int plx_ntb_init(struct plx_ntb *plx, const struct plx_io_ops *ops, void *io,
		 struct device *dev, const struct plx_bar bars[6],
		 const struct plx_params *params)
{
	int ret;

	plx->ops = ops;
	plx->io = io;
	plx->dev = dev;
	spin_lock_init(&plx->db_lock);
	mutex_init(&plx->cfg_lock);
	INIT_DELAYED_WORK(&plx->link_work, link_work);
	plx->link_poll_ms = 100;
	/* ntb_db_event() and ntb_link_event() take it even before registration */
	spin_lock_init(&plx->ntb.ctx_lock);

	ret = init_layout(plx, bars, params);
	if (ret)
		return ret;
	init_spads(plx);

	/* every doorbell masked until a client unmasks it */
	plx->db_mask = PLX_DB_MASK;
	our_wr(plx, db_reg_mask_set(plx), PLX_DB_MASK);

	mutex_lock(&plx->cfg_lock);
	plx_ntb_setup(plx);
	mutex_unlock(&plx->cfg_lock);

	/* the Link Interface has no link-error registers */
	if (!plx->link_side) {
		our_wr(plx, PLX_LINK_ERR, PLX_LINK_ERR_ALL);
		our_wr(plx, PLX_LINK_ERR_MASK, 0);
	}
	plx->ntb.ops = &plx_ntb_ops;
	plx->ntb.topo = b2b(plx) ? NTB_TOPO_B2B_USD :
			plx->link_side ? NTB_TOPO_SEC : NTB_TOPO_PRI;
	dev_info(dev, "NT%u %s, port %u, %s mode, %d memory windows, %u scratchpads%s\n",
		 plx->ntx, plx->link_side ? "Link" : "Virtual", plx->port,
		 b2b(plx) ? "NTB-to-NTB" : "NTB-to-Root-Port",
		 plx_ntb_ops.mw_count(&plx->ntb, 0),
		 plx->spad_count1 + plx->spad_count2,
		 plx->alut ? ", A-LUT" : "");
	return 0;
}
EXPORT_SYMBOL_GPL(plx_ntb_init);

/* The PCIe link of the NT port: up when it has a width. */
static bool phys_link(struct plx_ntb *plx, enum ntb_speed *speed, enum ntb_width *width)
{
	u16 sta = plx->ops->lnksta(plx->io);
	unsigned int w = 0;

	if (sta != U16_MAX)
		w = (sta & PCI_EXP_LNKSTA_NLW) >> PCI_EXP_LNKSTA_NLW_SHIFT;
	if (speed)
		*speed = w ? (enum ntb_speed)(sta & PCI_EXP_LNKSTA_CLS) : NTB_SPEED_NONE;
	if (width)
		*width = w ? (enum ntb_width)w : NTB_WIDTH_NONE;
	return w;
}

/*
 * debugfs: ntb_hw_plx/<device>/info, the port as the driver sees it and the
 * chip's doorbell and link-error registers, for bring-up and for a doorbell
 * that seems lost (client mask, what the ISR masked and holds, what is pending).
 */
static struct dentry *plx_debugfs_root;

static int info_show(struct seq_file *s, void *unused)
{
	struct plx_ntb *plx = s->private;
	enum ntb_speed speed;
	enum ntb_width width;
	unsigned long flags;
	u16 mask, irq_masked, held;
	bool phys;
	int i, j;

	phys = phys_link(plx, &speed, &width);
	seq_printf(s, "NT%u %s, port %u, %s mode, A-LUT entries %u, split %u\n",
		   plx->ntx, plx->link_side ? "Link" : "Virtual", plx->port,
		   b2b(plx) ? "NTB-to-NTB" : "NTB-to-Root-Port", plx->alut * 128,
		   plx->split);
	seq_printf(s, "link: reported %s, PCIe %s (x%d, gen %d)%s\n",
		   READ_ONCE(plx->link_up) ? "up" : "down", phys ? "up" : "down",
		   width, speed, test_bit(PLX_REINIT, &plx->flags) ?
		   ", set-up due at link up" : "");
	spin_lock_irqsave(&plx->db_lock, flags);
	mask = plx->db_mask;
	irq_masked = plx->db_irq_masked;
	held = plx->db_held;
	spin_unlock_irqrestore(&plx->db_lock, flags);
	seq_printf(s, "doorbells: client mask %#06x, masked by the ISR %#06x, held for link up %#06x\n",
		   mask, irq_masked, held);
	seq_printf(s, "chip: doorbells pending %#010x, mask %#010x\n",
		   our_rd(plx, db_reg_set(plx)), our_rd(plx, db_reg_mask_set(plx)));
	if (!plx->link_side)
		seq_printf(s, "chip: link errors %#010x, mask %#010x\n",
			   our_rd(plx, PLX_LINK_ERR), our_rd(plx, PLX_LINK_ERR_MASK));
	mutex_lock(&plx->cfg_lock);
	for (i = 0; i < plx->nr_mw; i++) {
		struct plx_mw *mw = &plx->mw[i];

		seq_printf(s, "BAR%d: %pa, size %pa%s%s\n", mw->bar, &mw->phys,
			   &mw->size, mw->is64 ? ", 64-bit" : "",
			   i == plx->b2b_mw ? ", B2B" : "");
		for (j = 0; j < PLX_MAX_SPLIT && mw->xlat[j].size; j++)
			seq_printf(s, "  inbound %d: %pad, size %pa\n", j,
				   &mw->xlat[j].addr, &mw->xlat[j].size);
	}
	mutex_unlock(&plx->cfg_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(info);

static void plx_debugfs_add(struct plx_ntb *plx)
{
	if (!plx_debugfs_root)
		return;
	plx->dbgfs = debugfs_create_dir(dev_name(plx->dev), plx_debugfs_root);
	debugfs_create_file("info", 0400, plx->dbgfs, plx, &info_fops);
}

/* The module's debugfs directory; without it the ports have none. */
void plx_debugfs_init(void)
{
	plx_debugfs_root = debugfs_create_dir(KBUILD_MODNAME, NULL);
	if (IS_ERR(plx_debugfs_root))
		plx_debugfs_root = NULL;
}

void plx_debugfs_exit(void)
{
	debugfs_remove_recursive(plx_debugfs_root);
}

/**
 * plx_ntb_register() - registers the port with the NTB core
 * @plx:	initialised, its interrupt handler in place
 * @pdev:	the PCI function clients allocate their buffers against
 */
int plx_ntb_register(struct plx_ntb *plx, struct pci_dev *pdev)
{
	int ret;

	plx->ntb.pdev = pdev;
	ret = ntb_register_device(&plx->ntb);
	if (ret)
		return ret;
	schedule_delayed_work(&plx->link_work, 0);
	plx_debugfs_add(plx);
	return 0;
}
EXPORT_SYMBOL_GPL(plx_ntb_register);

/* The clients are gone when this returns; no link event follows. */
void plx_ntb_unregister(struct plx_ntb *plx)
{
	/* waits for its readers: none touches @plx afterwards */
	debugfs_remove_recursive(plx->dbgfs);
	plx->dbgfs = NULL;
	ntb_unregister_device(&plx->ntb);
	cancel_delayed_work_sync(&plx->link_work);
}
EXPORT_SYMBOL_GPL(plx_ntb_unregister);

/**
 * plx_ntb_uninit() - leaves the chip quiet: no interrupt, no translation
 * @plx: unregistered; its interrupt handler may still run (a shared line)
 *   until the backend frees it, and then does nothing
 *
 * With the translations cleared (B2B: the Link BARs disabled) the peer's
 * writes no longer reach the memory the clients freed.
 */
void plx_ntb_uninit(struct plx_ntb *plx)
{
	unsigned long flags;
	int i;

	spin_lock_irqsave(&plx->db_lock, flags);
	plx->dead = true;
	WRITE_ONCE(plx->db_mask, PLX_DB_MASK);
	our_wr(plx, db_reg_mask_set(plx), PLX_DB_MASK);
	if (!plx->link_side)
		our_wr(plx, PLX_LINK_ERR_MASK, PLX_LINK_ERR_ALL);
	spin_unlock_irqrestore(&plx->db_lock, flags);
	cancel_delayed_work_sync(&plx->link_work);

	mutex_lock(&plx->cfg_lock);
	for (i = 0; i < plx->nr_mw; i++) {
		memset(plx->mw[i].xlat, 0, sizeof(plx->mw[i].xlat));
		set_trans(plx, i);
	}
	mutex_unlock(&plx->cfg_lock);
	mutex_destroy(&plx->cfg_lock);
}
EXPORT_SYMBOL_GPL(plx_ntb_uninit);

/* The link as last reported (plx_ntb_check_link()), with its speed and width. */
static u64 plx_link_is_up(struct ntb_dev *ntb, enum ntb_speed *speed,
			  enum ntb_width *width)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);
	bool up = phys_link(plx, speed, width) && READ_ONCE(plx->link_up);

	if (!up && speed)
		*speed = NTB_SPEED_NONE;
	if (!up && width)
		*width = NTB_WIDTH_NONE;
	return up ? 1 : 0;
}

/*
 * B2B: the peer chip answers through the B2B window. After a link loss its
 * link side comes back reset, and until its driver has set it up again our
 * scratchpad and doorbell writes to it are lost: a client that announced
 * itself then would wait for ever. Its NT port's ID cannot read all ones.
 */
static bool peer_answers(struct plx_ntb *plx)
{
	return !b2b(plx) ||
	       !all_ones(plx->ops->rd32(plx->io, PLX_SPACE_B2B, our_page(plx) + PCI_VENDOR_ID));
}

/* Doorbells that came before the link was reported up: unmasked, they fire again. */
static void release_held(struct plx_ntb *plx)
{
	unsigned long flags;
	u16 unmask;

	spin_lock_irqsave(&plx->db_lock, flags);
	unmask = plx->db_held & ~plx->db_mask;
	plx->db_held = 0;
	if (unmask && !plx->dead)
		our_wr(plx, db_reg_mask_clear(plx), unmask);
	spin_unlock_irqrestore(&plx->db_lock, flags);
}

/**
 * plx_ntb_check_link() - tells the clients of a link change
 * @plx: the port
 *
 * The chip raises no interrupt when the link comes up: the link work polls
 * this, and the ISR kicks it on a DL_Down. A link that went down comes back
 * with its link-side registers reset, so the set-up is written again before
 * the clients hear of it.
 */
void plx_ntb_check_link(struct plx_ntb *plx)
{
	bool phys = phys_link(plx, NULL, NULL), up, bounced = false;

	mutex_lock(&plx->cfg_lock);
	if (!phys && plx->phys_up) {
		/* lost: whatever reset the link reset the link side too */
		set_bit(PLX_REINIT, &plx->flags);
	} else if (phys && test_and_clear_bit(PLX_REINIT, &plx->flags)) {
		/* a DL_Down during the set-up sets the bit again: once more then */
		plx_ntb_setup(plx);
		dev_info(plx->dev, "link back, chip set up again\n");
		/*
		 * Down and back between two looks, the clients told of neither:
		 * doorbells and scratchpad writes that crossed meanwhile are gone,
		 * and a client waiting for one would wait for ever. Tell them.
		 */
		bounced = plx->link_up;
	}
	plx->phys_up = phys;
	up = phys && peer_answers(plx);
	mutex_unlock(&plx->cfg_lock);
	if (bounced) {
		WRITE_ONCE(plx->link_up, false);
		dev_info(plx->dev, "link down (lost and back between two looks)\n");
		ntb_link_event(&plx->ntb);
	}
	if (up != plx->link_up) {
		WRITE_ONCE(plx->link_up, up);
		dev_info(plx->dev, "link %s\n", up ? "up" : "down");
		ntb_link_event(&plx->ntb);
	}
	if (up)
		release_held(plx);
}
EXPORT_SYMBOL_GPL(plx_ntb_check_link);

/**
 * plx_ntb_isr() - the port's interrupt: doorbells and link errors
 * @plx: the port
 *
 * INTx is level-triggered and stays asserted while an unmasked doorbell is
 * pending, so the bits reported are masked until the client clears or
 * unmasks them (plx_db_clear(), plx_db_clear_mask()); the client's own mask
 * is kept apart. Any context: a backend calls it from its interrupt handler,
 * a model from an irq_work.
 */
irqreturn_t plx_ntb_isr(struct plx_ntb *plx)
{
	irqreturn_t ret = IRQ_NONE;
	unsigned long flags;
	u32 raw, err = 0;
	u16 bits = 0;

	/*
	 * Under db_lock throughout: plx_ntb_uninit() sets dead under it and
	 * then cancels the link work, so no ISR queues the work after that.
	 */
	spin_lock_irqsave(&plx->db_lock, flags);
	if (plx->dead)
		goto out;
	raw = our_rd(plx, db_reg_set(plx));
	if (all_ones(raw))
		goto out;	/* surprise removal: the link work sees it */
	bits = raw & PLX_DB_MASK & ~(plx->db_mask | plx->db_irq_masked | plx->db_held);
	if (bits) {
		our_wr(plx, db_reg_mask_set(plx), bits);
		ret = IRQ_HANDLED;
		/*
		 * A doorbell crossed the link, so it is up: the clients hear of
		 * the link first (ntb_perf drops a command from a peer it does
		 * not see up), the doorbell once plx_ntb_check_link() told them.
		 */
		if (!READ_ONCE(plx->link_up)) {
			plx->db_held |= bits;
			mod_delayed_work(system_wq, &plx->link_work, 0);
			bits = 0;
		} else {
			plx->db_irq_masked |= bits;
		}
	}
	/* the Link Interface has no link-error registers */
	if (!plx->link_side)
		err = our_rd(plx, PLX_LINK_ERR);
	if (err && !all_ones(err)) {
		our_wr(plx, PLX_LINK_ERR, err);
		if (err & PLX_LINK_ERR_DL_DOWN) {
			/* the link-side registers are reset: set up again at link up */
			set_bit(PLX_REINIT, &plx->flags);
			mod_delayed_work(system_wq, &plx->link_work, 0);
		}
		ret = IRQ_HANDLED;
	}
out:
	spin_unlock_irqrestore(&plx->db_lock, flags);

	if (err & PLX_LINK_ERR_CORR && !all_ones(err))
		dev_warn_ratelimited(plx->dev, "correctable link error\n");
	if (err & PLX_LINK_ERR_UNCORR && !all_ones(err))
		dev_err_ratelimited(plx->dev, "uncorrectable link error\n");
	if (err & PLX_LINK_ERR_MSG_DROP && !all_ones(err))
		dev_err_ratelimited(plx->dev, "uncorrectable error message dropped\n");
	/* outside db_lock: the client's callback clears doorbells */
	if (bits)
		ntb_db_event(&plx->ntb, 0);
	return ret;
}
EXPORT_SYMBOL_GPL(plx_ntb_isr);

/*
 * NTB-to-Root-Port: the Virtual Interface is port 0, the Link Interface 1.
 * B2B: two Virtual Interfaces, alike: both are port 0, as on other two-port
 * hardware without unique numbers (ntb_perf pairs its scratchpads by them).
 */
static int plx_port_number(struct ntb_dev *ntb)
{
	return ntb_to_plx(ntb)->link_side ? 1 : 0;
}

static int plx_peer_port_count(struct ntb_dev *ntb)
{
	return 1;
}

static int plx_peer_port_number(struct ntb_dev *ntb, int pidx)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);

	if (pidx != 0)
		return -EINVAL;
	return b2b(plx) || plx->link_side ? 0 : 1;
}

static int plx_peer_port_idx(struct ntb_dev *ntb, int port)
{
	return port == plx_peer_port_number(ntb, 0) ? 0 : -EINVAL;
}

static int plx_link_enable(struct ntb_dev *ntb, enum ntb_speed max_speed,
			   enum ntb_width max_width)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);
	u32 reg = PLX_PORT_BASE(plx->port & ~7) + PLX_PORT_CTRL;
	u32 val;

	/* a Link Interface we can see is a link that is enabled */
	if (!plx->link_side) {
		val = rd(plx, reg);
		if (all_ones(val))
			return -ENODEV;
		if (val & BIT(plx->port & 7))
			wr(plx, reg, val & ~BIT(plx->port & 7));
	}
	mod_delayed_work(system_wq, &plx->link_work, 0);
	return 0;
}

static int plx_link_disable(struct ntb_dev *ntb)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);
	u32 reg = PLX_PORT_BASE(plx->port & ~7) + PLX_PORT_CTRL;
	u32 val;

	/* disabling the link from its far side would cut ourselves off */
	if (plx->link_side)
		return 0;
	val = rd(plx, reg);
	if (all_ones(val))
		return -ENODEV;
	wr(plx, reg, val | BIT(plx->port & 7));
	return 0;
}

static int plx_mw_count(struct ntb_dev *ntb, int pidx)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);

	if (pidx != 0)
		return -EINVAL;
	return plx->nr_mw + (1 << plx->split) - 1 - (b2b(plx) && !plx->b2b_off);
}

static int plx_peer_mw_count(struct ntb_dev *ntb)
{
	return plx_mw_count(ntb, 0);
}

static int plx_mw_get_align(struct ntb_dev *ntb, int pidx, int widx,
			    resource_size_t *addr_align, resource_size_t *size_align,
			    resource_size_t *size_max)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);
	unsigned int part;
	struct plx_mw *mw;
	u64 s, lut;
	int i;

	i = user_mw(plx, pidx, widx, &part);
	if (i < 0)
		return i;
	mw = &plx->mw[i];
	s = mw->size - mw_off(plx, i);
	/*
	 * A translation is aligned to the BAR's size, or to an A-LUT entry's
	 * when the A-LUT remaps BAR2. The chip has no limit register: the
	 * A-LUT gives access control per entry; B2B can resize the Link BAR,
	 * but no smaller than half the window is safe to promise.
	 */
	lut = plx->alut && mw->bar == 2 ? s / (128 * plx->alut) : 0;
	if (addr_align)
		*addr_align = lut ? lut : s;
	if (size_align)
		*size_align = lut ? lut : b2b(plx) ? s / 2 : s;
	if (size_max)
		*size_max = s >> mw_split(plx, mw);
	return 0;
}

static int plx_mw_set_trans(struct ntb_dev *ntb, int pidx, int widx,
			    dma_addr_t addr, resource_size_t size)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);
	resource_size_t align, max;
	unsigned int part;
	struct plx_mw *mw;
	int i, ret;

	i = user_mw(plx, pidx, widx, &part);
	if (i < 0)
		return i;
	mw = &plx->mw[i];
	if (!mw->is64 && ((u64)addr + size > SZ_4G))
		return -ERANGE;
	plx_mw_get_align(ntb, pidx, widx, &align, NULL, &max);
	if (size > max || !IS_ALIGNED(addr, align))
		return -EINVAL;

	mutex_lock(&plx->cfg_lock);
	mw->xlat[part].addr = addr;
	mw->xlat[part].size = size;
	ret = set_trans(plx, i);
	mutex_unlock(&plx->cfg_lock);
	return ret;
}

static int plx_mw_clear_trans(struct ntb_dev *ntb, int pidx, int widx)
{
	return plx_mw_set_trans(ntb, pidx, widx, 0, 0);
}

static int plx_peer_mw_get_addr(struct ntb_dev *ntb, int widx, phys_addr_t *base,
				resource_size_t *size)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);
	unsigned int part;
	struct plx_mw *mw;
	u64 ss;
	int i;

	i = user_mw(plx, 0, widx, &part);
	if (i < 0)
		return i;
	mw = &plx->mw[i];
	ss = (mw->size - mw_off(plx, i)) >> mw_split(plx, mw);
	if (base)
		*base = mw->phys + mw_off(plx, i) + ss * part;
	if (size)
		*size = ss;
	return 0;
}

static u64 plx_db_valid_mask(struct ntb_dev *ntb)
{
	return PLX_DB_MASK;
}

static int plx_db_vector_count(struct ntb_dev *ntb)
{
	return 1;
}

static u64 plx_db_vector_mask(struct ntb_dev *ntb, int db_vector)
{
	return db_vector == 0 ? PLX_DB_MASK : 0;
}

static u64 plx_db_read(struct ntb_dev *ntb)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);
	u32 raw = our_rd(plx, db_reg_set(plx));

	return all_ones(raw) ? 0 : raw & PLX_DB_MASK;
}

static int plx_db_set(struct ntb_dev *ntb, u64 db_bits)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);

	if (db_bits & ~PLX_DB_MASK)
		return -EINVAL;
	our_wr(plx, db_reg_set(plx), db_bits);
	return 0;
}

static int plx_db_clear(struct ntb_dev *ntb, u64 db_bits)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);
	unsigned long flags;
	u16 unmask;

	if (db_bits & ~PLX_DB_MASK)
		return -EINVAL;
	our_wr(plx, db_reg_clear(plx), db_bits);
	/* what the ISR masked is acknowledged now: unmask unless the client masked it */
	spin_lock_irqsave(&plx->db_lock, flags);
	unmask = plx->db_irq_masked & db_bits & ~plx->db_mask;
	plx->db_irq_masked &= ~db_bits;
	if (unmask)
		our_wr(plx, db_reg_mask_clear(plx), unmask);
	spin_unlock_irqrestore(&plx->db_lock, flags);
	return 0;
}

static u64 plx_db_read_mask(struct ntb_dev *ntb)
{
	return READ_ONCE(ntb_to_plx(ntb)->db_mask);
}

static int plx_db_set_mask(struct ntb_dev *ntb, u64 db_bits)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);
	unsigned long flags;

	if (db_bits & ~PLX_DB_MASK)
		return -EINVAL;
	spin_lock_irqsave(&plx->db_lock, flags);
	WRITE_ONCE(plx->db_mask, plx->db_mask | db_bits);
	our_wr(plx, db_reg_mask_set(plx), db_bits);
	spin_unlock_irqrestore(&plx->db_lock, flags);
	return 0;
}

static int plx_db_clear_mask(struct ntb_dev *ntb, u64 db_bits)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);
	unsigned long flags;
	u16 unmask;

	if (db_bits & ~PLX_DB_MASK)
		return -EINVAL;
	/*
	 * Unmasking delivers what is pending, as the NTB API promises: a bit
	 * the ISR reported and masked fires once more even if nobody cleared
	 * it. Left masked, a bit reported while no client was bound (or to one
	 * that went away before clearing it) stayed masked for the next client,
	 * and the peer's doorbells on it were lost for good.
	 */
	spin_lock_irqsave(&plx->db_lock, flags);
	WRITE_ONCE(plx->db_mask, plx->db_mask & ~db_bits);
	plx->db_irq_masked &= ~db_bits;
	unmask = db_bits & ~plx->db_held;
	if (unmask)
		our_wr(plx, db_reg_mask_clear(plx), unmask);
	spin_unlock_irqrestore(&plx->db_lock, flags);
	return 0;
}

static int plx_peer_db_set(struct ntb_dev *ntb, u64 db_bits)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);

	if (db_bits & ~PLX_DB_MASK)
		return -EINVAL;
	if (b2b(plx))
		plx->ops->wr32(plx->io, PLX_SPACE_B2B, ntx_base(plx) + PLX_DB_SET_V, db_bits);
	else
		our_wr(plx, plx->link_side ? PLX_DB_SET_V : PLX_DB_SET_L, db_bits);
	return 0;
}

static int plx_spad_is_unsafe(struct ntb_dev *ntb)
{
	return 0;
}

static int plx_spad_count(struct ntb_dev *ntb)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);

	return plx->spad_count1 + plx->spad_count2;
}

/* scratchpad sidx's offset, from our (peer false) or the peer's bases */
static int spad_off(struct plx_ntb *plx, int sidx, bool peer, u32 *off)
{
	unsigned int i = sidx;

	if (sidx < 0 || i >= plx->spad_count1 + plx->spad_count2)
		return -EINVAL;
	if (i < plx->spad_count1)
		*off = (peer ? plx->spad_offp1 : plx->spad_off1) + i * 4;
	else
		*off = (peer ? plx->spad_offp2 : plx->spad_off2) +
		       (i - plx->spad_count1) * 4;
	return i < plx->spad_count1 ? 0 : 1;
}

static u32 plx_spad_read(struct ntb_dev *ntb, int sidx)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);
	u32 off;

	if (spad_off(plx, sidx, false, &off) < 0)
		return 0;
	return rd(plx, off);
}

static int spad_write(struct plx_ntb *plx, int sidx, bool peer, u32 val)
{
	enum plx_space space = peer && b2b(plx) ? PLX_SPACE_B2B : PLX_SPACE_BAR0;
	int pattern;
	u32 off;

	pattern = spad_off(plx, sidx, peer, &off);
	if (pattern < 0)
		return pattern;
	if (!pattern) {
		plx->ops->wr32(plx->io, space, off, val);
		return 0;
	}
	if (write_verify(plx, space, off, val)) {
		dev_err_ratelimited(plx->dev, "Test Pattern register 0x%x stays read-only\n",
				    off);
		return -EIO;
	}
	return 0;
}

static int plx_spad_write(struct ntb_dev *ntb, int sidx, u32 val)
{
	return spad_write(ntb_to_plx(ntb), sidx, false, val);
}

static u32 plx_peer_spad_read(struct ntb_dev *ntb, int pidx, int sidx)
{
	struct plx_ntb *plx = ntb_to_plx(ntb);
	u32 off;

	if (pidx != 0 || spad_off(plx, sidx, true, &off) < 0)
		return 0;
	return plx->ops->rd32(plx->io, b2b(plx) ? PLX_SPACE_B2B : PLX_SPACE_BAR0, off);
}

static int plx_peer_spad_write(struct ntb_dev *ntb, int pidx, int sidx, u32 val)
{
	if (pidx != 0)
		return -EINVAL;
	return spad_write(ntb_to_plx(ntb), sidx, true, val);
}

const struct ntb_dev_ops plx_ntb_ops = {
	.port_number		= plx_port_number,
	.peer_port_count	= plx_peer_port_count,
	.peer_port_number	= plx_peer_port_number,
	.peer_port_idx		= plx_peer_port_idx,
	.link_is_up		= plx_link_is_up,
	.link_enable		= plx_link_enable,
	.link_disable		= plx_link_disable,
	.mw_count		= plx_mw_count,
	.mw_get_align		= plx_mw_get_align,
	.mw_set_trans		= plx_mw_set_trans,
	.mw_clear_trans		= plx_mw_clear_trans,
	.peer_mw_count		= plx_peer_mw_count,
	.peer_mw_get_addr	= plx_peer_mw_get_addr,
	.db_valid_mask		= plx_db_valid_mask,
	.db_vector_count	= plx_db_vector_count,
	.db_vector_mask		= plx_db_vector_mask,
	.db_read		= plx_db_read,
	.db_set			= plx_db_set,
	.db_clear		= plx_db_clear,
	.db_read_mask		= plx_db_read_mask,
	.db_set_mask		= plx_db_set_mask,
	.db_clear_mask		= plx_db_clear_mask,
	.peer_db_set		= plx_peer_db_set,
	.spad_is_unsafe		= plx_spad_is_unsafe,
	.spad_count		= plx_spad_count,
	.spad_read		= plx_spad_read,
	.spad_write		= plx_spad_write,
	.peer_spad_read		= plx_peer_spad_read,
	.peer_spad_write	= plx_peer_spad_write,
};
EXPORT_SYMBOL_GPL(plx_ntb_ops);
