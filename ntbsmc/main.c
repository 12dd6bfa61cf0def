// SPDX-License-Identifier: GPL-2.0
/* ntbsmc: module init and exit. */

#include <linux/module.h>
#include <net/tcp.h>
#include "ntbsmc.h"
#include "fault.h"

static int __init ntbsmc_init(void)
{
	int rc;

	rc = ntbsmc_fault_init();
	if (rc)
		return rc;
	rc = ntbsmc_netns_init();
	if (rc)
		goto err_fault;
	rc = ntbsmc_dev_init();
	if (rc)
		goto err_netns;
	rc = ntbsmc_netlink_init();
	if (rc)
		goto err_dev;
	rc = ntbsmc_ulp_init();
	if (rc)
		goto err_netlink;
	rc = ntbsmc_proto_init();
	if (rc)
		goto err_ulp;
	return 0;

err_ulp:
	ntbsmc_ulp_exit();
err_netlink:
	ntbsmc_netlink_exit();
err_dev:
	ntbsmc_dev_exit();
err_netns:
	ntbsmc_netns_exit();
err_fault:
	ntbsmc_fault_exit();
	return rc;
}

static void __exit ntbsmc_exit(void)
{
	ntbsmc_proto_exit();
	ntbsmc_ulp_exit();
	ntbsmc_netlink_exit();
	ntbsmc_dev_exit();
	ntbsmc_netns_exit();
	ntbsmc_fault_exit();
}

module_init(ntbsmc_init);
module_exit(ntbsmc_exit);

MODULE_DESCRIPTION("ntbsmc: TCP sockets over PCIe NTB (TCP upper-layer protocol)");
MODULE_AUTHOR("ntbsmc developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(NTBSMC_VERSION);
MODULE_ALIAS_TCP_ULP("ntbsmc");
