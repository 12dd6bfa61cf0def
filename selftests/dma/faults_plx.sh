#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# dma/faults.sh with an engine like plx_dma, the target's: one that cannot be
# terminated, calls back from softirq context and aborts only on release.
SOFT_DMA_PROFILE=plx exec bash "$(dirname "$0")/faults.sh" "$@"
