/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ntb_hw_plx: the chip logic of a Broadcom/PLX PEX-87xx NT port and the small
 * accessor interface it drives the chip through.
 *
 * The logic (chip.c) never touches hardware itself: every register access goes
 * through struct plx_io_ops, whose real backend (pci.c) maps BAR0 and the B2B
 * window of a PCI function, and whose test backends are a register-level model
 * of the NT port (selftests/plx/) and the KUnit tests' recorder. Register facts
 * and where each comes from: ../shared/notes/pex87xx-nt-driver.md, section 2.
 */
#ifndef NTB_HW_PLX_H
#define NTB_HW_PLX_H

#include <linux/ntb.h>
#include <linux/interrupt.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#define PLX_MAX_BARS		4	/* data BARs: BAR2..BAR5 */
#define PLX_NUM_SPAD		8	/* scratchpads of an NTx */
#define PLX_NUM_SPAD_PATT	4	/* Physical Layer User Test Pattern registers */
#define PLX_NUM_DB		16
#define PLX_DB_MASK		GENMASK(PLX_NUM_DB - 1, 0)
#define PLX_MAX_SPLIT_ORDER	7	/* BAR2 into at most 2^7 windows (A-LUT) */
#define PLX_MAX_SPLIT		BIT(PLX_MAX_SPLIT_ORDER)

/* BAR0 register pages: an NTx's Virtual page, its Link page 0x1000 above */
#define PLX_NT0_BASE		0x3e000
#define PLX_NT1_BASE		0x3c000
#define PLX_LINK_PAGE		0x01000
#define PLX_PORT_BASE(p)	((u32)(p) << 12)

/* chip-wide, at BAR0 + 0 */
#define PLX_PORT_CFG		0x360	/* [12:8] NT0 port, [20:16] NT1 port, b30/b31 A-LUT */
#define PLX_PORT_CTRL		0x208	/* in the station's first port: bit (port & 7) disables */
#define PLX_TEST_PATTERN	0x20c	/* in port ntx * 8: 4 Test Pattern registers */
#define PLX_ALUT_BASE		0x38000

/* in an NTx page */
#define PLX_BAR_SETUP0		0xe4	/* Link page: BAR0/1 (B2B): 3 = 64-bit, 2 = 32-bit */
#define PLX_BAR_SETUP(bar)	(0xe8 + ((bar) - 2) * 4)	/* Link page: BAR2..5 size */
#define PLX_BAR_XLAT(bar)	(0xc3c + ((bar) - 2) * 4)
#define PLX_DB_SET_V		0xc4c	/* Virtual side's doorbells: set (read: pending) */
#define PLX_DB_CLEAR_V		0xc50
#define PLX_DB_MASK_SET_V	0xc54
#define PLX_DB_MASK_CLEAR_V	0xc58
#define PLX_DB_SET_L		0xc5c	/* Link side's doorbells */
#define PLX_DB_CLEAR_L		0xc60
#define PLX_DB_MASK_SET_L	0xc64
#define PLX_DB_MASK_CLEAR_L	0xc68
#define PLX_SPAD0		0xc6c	/* 8 scratchpads */
#define PLX_REQ_ID		0xc90	/* our requester ID, read back */
#define PLX_ALUT_CTRL		0xc94	/* 0x10000000 on, 0 off */
#define PLX_ALUT_ON		0x10000000
#define PLX_RID_LUT_V		0xd94	/* requester-ID LUT, two entries a dword */
#define PLX_RID_LUT_L		0xdb4
#define PLX_RID_FIXED		6	/* entries the driver always writes */
#define PLX_RID_LUT_SIZE	16	/* the Virtual LUT's, as 0xd94..0xdb3 holds */
#define PLX_MAX_RID		(PLX_RID_LUT_SIZE - PLX_RID_FIXED)
#define PLX_LINK_ERR		0xfe0	/* Virtual page only: write 1 to clear */
#define PLX_LINK_ERR_MASK	0xfe4
#define  PLX_LINK_ERR_CORR	BIT(0)
#define  PLX_LINK_ERR_UNCORR	BIT(1)
#define  PLX_LINK_ERR_DL_DOWN	BIT(2)
#define  PLX_LINK_ERR_MSG_DROP	BIT(3)
#define  PLX_LINK_ERR_ALL	GENMASK(3, 0)

/* config space */
#define PLX_CFG_FACE		0xc8c	/* bit 0: NT1, bit 31: Link Interface */
#define PLX_CFG_FACE_NT1	BIT(0)
#define PLX_CFG_FACE_LINK	BIT(31)

/* plx_ntb.flags: the link went down, set the chip up again when it is back */
#define PLX_REINIT		0

/* where an access goes */
enum plx_space {
	PLX_SPACE_BAR0,		/* this chip's registers (BAR0) */
	PLX_SPACE_B2B,		/* the peer chip's, through the B2B window (B2B mode) */
};

/**
 * struct plx_io_ops - how the chip logic reaches one NT port
 * @rd32:	32-bit read at @off of @space; all ones when the device is gone
 * @wr32:	32-bit write
 * @cfg_rd32:	32-bit read of the function's own config space
 * @lnksta:	PCIe Link Status of the NT link (0xffff when the device is gone)
 *
 * Called in process context and from the interrupt handler: none may sleep.
 */
struct plx_io_ops {
	u32 (*rd32)(void *io, enum plx_space space, u32 off);
	void (*wr32)(void *io, enum plx_space space, u32 off, u32 val);
	u32 (*cfg_rd32)(void *io, u32 off);
	u16 (*lnksta)(void *io);
};

/**
 * struct plx_bar - a data BAR as the backend found it
 * @phys:	CPU physical address (what peer_mw_get_addr returns)
 * @size:	size; 0 when the BAR is not assigned
 * @is64:	a 64-bit BAR (it takes the next BAR number too)
 */
struct plx_bar {
	phys_addr_t phys;
	resource_size_t size;
	bool is64;
};

/**
 * struct plx_params - the choices the chip cannot tell us
 * @b2b:	NTB-to-NTB mode (the Virtual side cannot see what is cabled to it);
 *		the Link Interface is always NTB-to-Root-Port mode
 * @split:	split BAR2 into 2^split windows with the A-LUT (0-7)
 * @rid:	requester IDs (bus << 8 | devfn) of more functions on our side
 *		that write through the port, such as DMA engines; the LUT
 *		admits a whole slot (device) per entry
 * @nr_rid:	how many (at most PLX_MAX_RID)
 */
struct plx_params {
	bool b2b;
	unsigned int split;
	u16 rid[PLX_MAX_RID];
	unsigned int nr_rid;
};

struct plx_mw {
	int bar;			/* 2..5 */
	bool is64;
	phys_addr_t phys;
	resource_size_t size;
	struct {
		dma_addr_t addr;
		resource_size_t size;
	} xlat[PLX_MAX_SPLIT];
};

/**
 * struct plx_ntb - one NT port registered with the NTB core
 *
 * Everything but @db_lock's fields and @link_up is set at plx_ntb_init() and
 * read-only afterwards (plx_ntb_setup() rewrites the chip from it).
 */
struct plx_ntb {
	struct ntb_dev ntb;
	const struct plx_io_ops *ops;
	void *io;
	struct device *dev;		/* for messages */

	unsigned int ntx;		/* NT0 or NT1 */
	bool link_side;			/* on the Link Interface (NTB-to-Root-Port) */
	unsigned int port;		/* the chip port the NTx is on */
	unsigned int alut;		/* 0, or A-LUT entries / 128 */
	unsigned int split;		/* BAR2 split order */
	u16 rid_lut[PLX_MAX_RID];	/* more LUT entries: bus << 8 | slot << 3 | 1 */
	unsigned int nr_rid;

	struct plx_mw mw[PLX_MAX_BARS];
	int nr_mw;			/* BARs in mw[] */
	int b2b_mw;			/* mw[] index of the B2B window, -1: none */
	u64 b2b_off;			/* its data part starts here; 0: all B2B */

	unsigned int spad_count1, spad_count2;	/* scratchpads, Test Pattern ones */
	u32 spad_off1, spad_off2;		/* ours (BAR0 offsets) */
	u32 spad_offp1, spad_offp2;		/* the peer's */

	/*
	 * db_lock: the client's mask; the bits the ISR masked until the client
	 * clears them; those it holds, masked, until the link is reported up.
	 */
	spinlock_t db_lock;
	u16 db_mask;
	u16 db_irq_masked;
	u16 db_held;
	bool dead;			/* uninit: the ISR does nothing */

	/*
	 * cfg_lock: translations and the chip's set-up registers, which
	 * mw_set_trans() and the re-initialisation after a DL_Down both write.
	 */
	struct mutex cfg_lock;
	unsigned long flags;		/* PLX_REINIT */
	bool phys_up;			/* the PCIe link, as last polled */
	bool link_up;			/* as last reported to the NTB core: the
					 * link up and, B2B, the peer chip set up */
	struct delayed_work link_work;	/* polls the PCIe link: no link-up IRQ */
	unsigned int link_poll_ms;
	struct dentry *dbgfs;		/* debugfs: ntb_hw_plx/<device>/ */
};

static inline struct plx_ntb *ntb_to_plx(struct ntb_dev *ntb)
{
	return container_of(ntb, struct plx_ntb, ntb);
}

/* chip.c: what a backend calls */
int plx_ntb_init(struct plx_ntb *plx, const struct plx_io_ops *ops, void *io,
		 struct device *dev, const struct plx_bar bars[6],
		 const struct plx_params *params);
void plx_ntb_setup(struct plx_ntb *plx);
int plx_ntb_register(struct plx_ntb *plx, struct pci_dev *pdev);
void plx_ntb_unregister(struct plx_ntb *plx);
void plx_ntb_uninit(struct plx_ntb *plx);
irqreturn_t plx_ntb_isr(struct plx_ntb *plx);
void plx_ntb_check_link(struct plx_ntb *plx);
void plx_debugfs_init(void);
void plx_debugfs_exit(void);
int plx_parse_rids(struct plx_params *params, const char *list, struct device *dev);

extern const struct ntb_dev_ops plx_ntb_ops;

#endif /* NTB_HW_PLX_H */
