/* SPDX-License-Identifier: GPL-2.0 */
/* ntb_hw_ivshmem: the emulated fabric's shared state, for ivshmem.c and plx_model.c. */
#ifndef NTB_HW_IVSHMEM_H
#define NTB_HW_IVSHMEM_H

#include <linux/ntb.h>
#include <linux/pci.h>
#include <linux/irq_work.h>
#include <linux/workqueue.h>
#include <linux/property.h>
#include <linux/spinlock.h>

/* 6.11 renamed CONFIG_DMA_OPS to CONFIG_ARCH_HAS_DMA_OPS */
#if !IS_ENABLED(CONFIG_DMA_OPS) && !IS_ENABLED(CONFIG_ARCH_HAS_DMA_OPS)
#error "ntb_hw_ivshmem needs dma_map_ops (x86: CONFIG_GART_IOMMU)"
#endif

#define DRV_NAME "ntb_hw_ivshmem"

/* ivshmem BAR0 registers */
#define IVSHMEM_INTRMASK	0x00
#define IVSHMEM_INTRSTATUS	0x04
#define IVSHMEM_IVPOSITION	0x08
#define IVSHMEM_DOORBELL	0x0c

/* Fabric header, written by the ivshmem server (selftests/vm/ivshmem-server.c) */
#define FABRIC_MAGIC		0x4e54424d	/* "NTBM" */
#define FABRIC_LAYOUT		1
#define FABRIC_ID_LEN		16

struct fabric_hdr {
	__le32 magic;
	__le32 layout;
	__le64 size;
	u8 fabric_id[FABRIC_ID_LEN];
	__le32 max_peers;
	__le32 vectors;
};

#define CTRL_OFFSET		0x1000
#define CTRL_SIZE		0x1000
#define DB_MAX			64
#define SPAD_MAX		64
#define MW_MAX			4
#define BUF_MAX			(128 + MW_MAX)	/* the model's BAR2 split 128 ways */

/*
 * One side's control block. Everything but spad[] is written only by the side that
 * owns the block; spad[] is also written by the peer (ntb_peer_spad_write), with
 * plain 32-bit stores, never read-modify-write. Once the owner's VM is gone the
 * ivshmem server clears present and link_en and bumps event (the offsets are in
 * selftests/vm/ivshmem-server.c).
 */
struct side_ctrl {
	__le32 present;		/* driver bound and serving */
	__le32 link_en;		/* ntb_link_enable() called */
	__le32 gen;		/* bumped at every probe: peer sees a reboot */
	__le32 heartbeat;	/* bumped every heartbeat period */
	__le32 event;		/* bumped on any link-relevant change */
	__le32 pad[3];
	__le32 ring[DB_MAX];	/* doorbell rings towards the peer, per bit */
	__le32 spad[SPAD_MAX];
};

static_assert(sizeof(struct fabric_hdr) == 40);
static_assert(sizeof(struct side_ctrl) <= CTRL_SIZE);
static_assert(offsetof(struct side_ctrl, present) == 0 &&
	      offsetof(struct side_ctrl, link_en) == 4 &&
	      offsetof(struct side_ctrl, event) == 16);
static_assert(CTRL_OFFSET + 2 * CTRL_SIZE <= (1 << 20));

struct ivs_limits {
	unsigned int db_count;
	unsigned int spad_count;
	unsigned int max_vectors;
	bool align_to_window;
};

struct ivs_dev;

struct ivs_vec {
	struct ivs_dev *ivs;
	unsigned int vec;
};

struct plx_model;

struct ivs_dev {
	struct ntb_dev ntb;		/* registered unless the model is */
	struct plx_model *model;	/* profile=plx */
	struct pci_dev *pdev;
	struct ivs_limits lim;
	u8 fabric_id[FABRIC_ID_LEN];

	void __iomem *regs;		/* BAR0 */
	phys_addr_t shm_phys;		/* BAR2 */
	resource_size_t shm_size;
	resource_size_t mw_size;
	void *ctrl_area;		/* slot 0, mapped write-back */
	struct side_ctrl *self;
	struct side_ctrl *peer;
	void *inbound;			/* our inbound windows, mapped write-back */
	phys_addr_t inbound_phys;
	u32 side, peer_id;
	unsigned int nvec;
	struct ivs_vec vecs[DB_MAX];

	/* Fabric identity for clients: the "ntb-fabric-id" property of pdev */
	struct property_entry props[2];
	struct software_node swnode;

	/* Doorbells: ring_lock serialises our ring[] counters. */
	spinlock_t ring_lock;
	spinlock_t db_lock;		/* protects the four fields below */
	u64 db_pending;
	u64 db_mask;
	u32 db_seen[DB_MAX];
	u32 event_seen;
	struct irq_work db_redeliver;

	/*
	 * mw_lock: the buffers ivs_dma_alloc() hands out, one for each of the
	 * clients' windows in window order (offset and size in our inbound
	 * memory), and the translations clients set.
	 */
	struct mutex mw_lock;
	unsigned int nr_bufs;
	struct {
		resource_size_t off, size;
	} bufs[BUF_MAX];
	DECLARE_BITMAP(buf_alloced, BUF_MAX);
	dma_addr_t mw_xlat[MW_MAX];

	/* Link state, updated only by link_work */
	struct delayed_work link_work;
	bool link_enabled;
	bool link_up;
	bool link_held;			/* the model's link is down (DL_Down, gone) */
	bool removing;
	u32 peer_hb, peer_gen;
	unsigned long peer_hb_seen;	/* jiffies when peer_hb last changed */
	unsigned long last_check;	/* jiffies of the last link_work run */
	unsigned long ready_since;	/* jiffies since both ends ready, 0: not */
};

#define ntb_ivs(__ntb) container_of(__ntb, struct ivs_dev, ntb)

static inline u32 shm_read(const __le32 *p)
{
	return le32_to_cpu(READ_ONCE(*p));
}

static inline void shm_write(__le32 *p, u32 v)
{
	WRITE_ONCE(*p, cpu_to_le32(v));
}

/* ivshmem.c, for the model */
void ivs_kick_peer(struct ivs_dev *ivs, unsigned int vec);
void ivs_ring(struct ivs_dev *ivs, u64 bits);
u64 ivs_rings_taken(struct ivs_dev *ivs, u32 *seen, u64 scan);
int ivs_link_set(struct ivs_dev *ivs, bool enable);
void ivs_link_hold(struct ivs_dev *ivs, bool hold);
resource_size_t ivs_mw_offset(struct ivs_dev *ivs, u32 side, int widx);
void ivs_add_bufs(struct ivs_dev *ivs, resource_size_t off, resource_size_t size,
		  unsigned int n);

/* plx_model.c: profile=plx, a PEX-87xx NT port under ntb_hw_plx */
int ivs_plx_model_create(struct ivs_dev *ivs, unsigned int split);
void ivs_plx_model_destroy(struct ivs_dev *ivs);
void ivs_plx_model_irq(struct ivs_dev *ivs);

#endif /* NTB_HW_IVSHMEM_H */
