// SPDX-License-Identifier: GPL-2.0
/* ntb_hw_plx: the PCI driver, and the hardware backend of the chip logic (BAR0, INTx). */

#include <linux/module.h>
#include <linux/pci.h>
#include <linux/io.h>

#include "ntb_hw_plx.h"

#define DRV_NAME	"ntb_hw_plx"
#define PLX_BAR0_SIZE	SZ_256K		/* the chip's whole register space */

static bool b2b = true;
module_param(b2b, bool, 0444);
MODULE_PARM_DESC(b2b, "Virtual Interface: NTB-to-NTB (back-to-back) mode (default) or, with 0, NTB-to-Root-Port mode; the Link Interface is always the latter");

static unsigned int split;
module_param(split, uint, 0444);
MODULE_PARM_DESC(split, "Split BAR2 into 2^split memory windows with the A-LUT (0-7, default 0)");

static char *rid;
module_param(rid, charp, 0444);
MODULE_PARM_DESC(rid, "More requesters on this host that write through the NT port, as bus:device[,bus:device...] in hex (lspci's 03:00 or 03:00.0): DMA engines other than the switch's own (added by themselves) and Xeon I/OAT; at most 10 in all");

#define PCI_DEVICE_ID_PLX_DMA	0x87d0

struct plx_pci {
	struct plx_ntb plx;		/* first: the NTB core's device lives in it */
	struct pci_dev *pdev;
	void __iomem *bar0;
	void __iomem *b2b;		/* the peer chip's registers, B2B mode */
	resource_size_t b2b_len;
	bool irq;
};

static u32 plx_pci_rd32(void *io, enum plx_space space, u32 off)
{
	struct plx_pci *p = io;

	if (space == PLX_SPACE_B2B)
		return p->b2b && off < p->b2b_len ? ioread32(p->b2b + off) : U32_MAX;
	return off < PLX_BAR0_SIZE ? ioread32(p->bar0 + off) : U32_MAX;
}

static void plx_pci_wr32(void *io, enum plx_space space, u32 off, u32 val)
{
	struct plx_pci *p = io;

	if (space == PLX_SPACE_B2B) {
		if (p->b2b && off < p->b2b_len)
			iowrite32(val, p->b2b + off);
	} else if (off < PLX_BAR0_SIZE) {
		iowrite32(val, p->bar0 + off);
	}
}

static u32 plx_pci_cfg_rd32(void *io, u32 off)
{
	struct plx_pci *p = io;
	u32 val;

	if (pci_read_config_dword(p->pdev, off, &val))
		return U32_MAX;
	return val;
}

static u16 plx_pci_lnksta(void *io)
{
	struct plx_pci *p = io;
	u16 sta;

	if (pcie_capability_read_word(p->pdev, PCI_EXP_LNKSTA, &sta))
		return U16_MAX;
	return sta;
}

static const struct plx_io_ops plx_pci_io = {
	.rd32		= plx_pci_rd32,
	.wr32		= plx_pci_wr32,
	.cfg_rd32	= plx_pci_cfg_rd32,
	.lnksta		= plx_pci_lnksta,
};

/* The upstream port of the switch a function is below, or NULL. */
static struct pci_dev *switch_of(struct pci_dev *p)
{
	for (p = pci_upstream_bridge(p); p; p = pci_upstream_bridge(p))
		if (pci_is_pcie(p) && pci_pcie_type(p) == PCI_EXP_TYPE_UPSTREAM)
			return p;
	return NULL;
}

/*
 * The requester IDs the LUT must admit beyond the fixed ones: the switch's
 * own DMA functions (plx_dma), which ntbsmc prefers, and those named by the
 * rid option. The LUT drops a write from anyone else.
 */
static int find_rids(struct pci_dev *pdev, struct plx_params *params)
{
	struct pci_dev *sw = switch_of(pdev), *dma = NULL;

	while (sw && (dma = pci_get_device(PCI_VENDOR_ID_PLX, PCI_DEVICE_ID_PLX_DMA, dma))) {
		if (switch_of(dma) != sw)
			continue;
		if (params->nr_rid == PLX_MAX_RID) {
			dev_warn(&pdev->dev, "no LUT entry left for DMA function %s\n",
				 pci_name(dma));
			pci_dev_put(dma);
			break;
		}
		params->rid[params->nr_rid++] = pci_dev_id(dma);
	}
	return plx_parse_rids(params, rid, &pdev->dev);
}

static irqreturn_t plx_pci_isr(int irq, void *data)
{
	struct plx_pci *p = data;

	return plx_ntb_isr(&p->plx);
}

/* Undoes plx_ntb_init() and what followed it, registration apart. */
static void plx_pci_teardown(struct plx_pci *p)
{
	/* quiet first: a masked port raises nothing on the shared line */
	plx_ntb_uninit(&p->plx);
	if (p->irq)
		free_irq(p->pdev->irq, p);
	if (p->b2b)
		pci_iounmap(p->pdev, p->b2b);
}

static int plx_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct plx_params params = { .b2b = b2b, .split = split };
	struct plx_bar bars[6] = {};
	resource_size_t len = pci_resource_len(pdev, 0);
	struct plx_pci *p;
	int i, ret;

	if (len < PLX_BAR0_SIZE) {
		dev_err(&pdev->dev, "BAR0 is %pa bytes, not the chip's 256 KiB of registers\n",
			&len);
		return -ENODEV;
	}
	ret = find_rids(pdev, &params);
	if (ret)
		return ret;
	p = devm_kzalloc(&pdev->dev, sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->pdev = pdev;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(32));
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, BIT(0), DRV_NAME);
	if (ret)
		return ret;
	p->bar0 = pcim_iomap_table(pdev)[0];
	for (i = 2; i <= 5; i++) {
		if (!(pci_resource_flags(pdev, i) & IORESOURCE_MEM) ||
		    !pci_resource_len(pdev, i))
			continue;
		bars[i].phys = pci_resource_start(pdev, i);
		bars[i].size = pci_resource_len(pdev, i);
		bars[i].is64 = pci_resource_flags(pdev, i) & IORESOURCE_MEM_64;
		if (bars[i].is64)
			i++;
	}
	pci_set_master(pdev);
	pci_intx(pdev, 1);

	ret = plx_ntb_init(&p->plx, &plx_pci_io, p, &pdev->dev, bars, &params);
	if (ret)
		return ret;
	if (p->plx.b2b_mw >= 0) {
		struct plx_mw *mw = &p->plx.mw[p->plx.b2b_mw];

		p->b2b_len = min_t(resource_size_t, p->plx.b2b_off ?: mw->size,
				   PLX_BAR0_SIZE);
		p->b2b = pci_iomap_range(pdev, mw->bar, 0, p->b2b_len);
		if (!p->b2b) {
			ret = -ENOMEM;
			goto err;
		}
	}
	ret = request_irq(pdev->irq, plx_pci_isr, IRQF_SHARED, DRV_NAME, p);
	if (ret)
		goto err;
	p->irq = true;
	ret = plx_ntb_register(&p->plx, pdev);
	if (ret)
		goto err;
	pci_set_drvdata(pdev, p);
	return 0;

err:
	plx_pci_teardown(p);
	return ret;
}

static void plx_pci_remove(struct pci_dev *pdev)
{
	struct plx_pci *p = pci_get_drvdata(pdev);

	plx_ntb_unregister(&p->plx);
	plx_pci_teardown(p);
}

static const struct pci_device_id plx_pci_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_PLX, 0x87a0) },	/* NT0 Link Interface */
	{ PCI_DEVICE(PCI_VENDOR_ID_PLX, 0x87a1) },	/* NT1 Link Interface */
	{ PCI_DEVICE(PCI_VENDOR_ID_PLX, 0x87b0) },	/* NT0 Virtual Interface */
	{ PCI_DEVICE(PCI_VENDOR_ID_PLX, 0x87b1) },	/* NT1 Virtual Interface */
	{ }
};
MODULE_DEVICE_TABLE(pci, plx_pci_ids);

static struct pci_driver plx_pci_driver = {
	.name		= DRV_NAME,
	.id_table	= plx_pci_ids,
	.probe		= plx_pci_probe,
	.remove		= plx_pci_remove,
};

static int __init plx_pci_init(void)
{
	int ret;

	if (split > PLX_MAX_SPLIT_ORDER) {
		pr_err(DRV_NAME ": split=%u: at most %u (2^%u windows)\n", split,
		       PLX_MAX_SPLIT_ORDER, PLX_MAX_SPLIT_ORDER);
		return -EINVAL;
	}
	plx_debugfs_init();
	ret = pci_register_driver(&plx_pci_driver);
	if (ret)
		plx_debugfs_exit();
	return ret;
}
module_init(plx_pci_init);

static void __exit plx_pci_exit(void)
{
	pci_unregister_driver(&plx_pci_driver);
	plx_debugfs_exit();
}
module_exit(plx_pci_exit);

MODULE_DESCRIPTION("NTB hardware driver for the NT ports of Broadcom/PLX PEX-87xx switches");
MODULE_AUTHOR("ntbsmc developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(NTBSMC_VERSION);
