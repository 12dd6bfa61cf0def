#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# packaged.sh over modelled PEX-87xx NT ports, driven by the package's ntb_hw_plx.
PKG_PROFILE=plx exec bash "$(dirname "$0")/packaged.sh" "$@"
