# SPDX-License-Identifier: GPL-2.0
#
# make              modules (against KDIR) and userspace tools
# make check        the test suite: guest kernel, QEMU topologies, kselftest TAP;
#                   each behaviour once, within 45 minutes on a new machine
# make stress       the same suite with the race-prone cases repeated (longer)
# make sparse       sparse over the modules against KDIR (make check runs it)
# make demo         the main job on the emulated fabric, on Debian's own kernel
# make bench        figures on the non-debug guest kernel
# make install      modules and tools for KDIR's kernel (real hardware)
#
# FAULT_INJECTION=1 builds the test build of ntbsmc, with the selftests' delay and
# failure points (ntbsmc/fault.h); make check's guests load it. Never install it.

KDIR ?= /lib/modules/$(shell uname -r)/build
DEBIAN_KDIRS ?= $(wildcard /usr/src/linux-headers-*-amd64)
CFLAGS ?= -O2 -g
CFLAGS += -Wall -Wextra -Werror -std=gnu11

TOOLS := selftests/vm/ivshmem-server
FAULT_FLAGS := $(if $(filter 1 y,$(FAULT_INJECTION)),CONFIG_NTBSMC_FAULT_INJECTION=y)

all: modules tools

modules:
	@test -d "$(KDIR)" || { echo "Error: no kernel build tree at KDIR=$(KDIR)" >&2; exit 1; }
	@ntbsmc/check-kernel.sh $(KDIR)
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 $(FAULT_FLAGS) modules

tools: $(TOOLS)
	$(MAKE) -C netlink-tool
	$(MAKE) -C selftests/ulp

selftests/vm/ivshmem-server: selftests/vm/ivshmem-server.c
	$(CC) $(CFLAGS) -o $@ $<

# Debian's kernels have no NTB core, so modules cannot link against them; every
# object must still compile warning-free with W=1 against the headers of each
# series we support (Debian 12's 6.1, Debian 13's 6.12), in a private tree so
# that objects built for another kernel prove nothing.
headers-check:
	@test -n "$(DEBIAN_KDIRS)" || { echo "Error: no /usr/src/linux-headers-*-amd64 (apt install linux-headers-amd64 linux-headers-6.12-amd64)" >&2; exit 1; }
	@for k in $(DEBIAN_KDIRS); do \
		echo "headers-check: $$k"; \
		d=$$(mktemp -d /tmp/ntbsmc-hc.XXXXXX) && \
		selftests/vm/copy-modules.sh $$d && \
		$(MAKE) -s -C $$k M=$$d W=1 >$$d.log 2>&1; \
		rc=$$?; grep -v "has no NTB core\|Skipping BTF generation" $$d.log; rm -f $$d.log; \
		rm -rf $$d; [ $$rc = 0 ] || exit $$rc; \
	done

# sparse (C=2, endianness too) over the modules users install, ntbsmc as
# built (FAULT_INJECTION=1: the test build's too), against KDIR, in a private
# tree as above: any line sparse or the compiler prints fails.
sparse:
	@test -d "$(KDIR)" || { echo "Error: no kernel build tree at KDIR=$(KDIR)" >&2; exit 1; }
	@command -v sparse >/dev/null || { echo "Error: no sparse (apt install sparse)" >&2; exit 1; }
	@d=$$(mktemp -d /tmp/ntbsmc-sparse.XXXXXX) && selftests/vm/copy-modules.sh $$d && \
	rc=0 && for m in $(INSTALL_MODULES); do \
		$(MAKE) -s -C $(KDIR) M=$$d/$$m C=2 CF="-D__CHECK_ENDIAN__" $(FAULT_FLAGS) \
			>>$$d.log 2>&1 || rc=$$?; \
	done; \
	grep -v "has no NTB core\|Skipping BTF generation" $$d.log | sed "s|$$d/||g" >$$d.out; \
	cat $$d.out; [ -s $$d.out ] && rc=1; rm -rf $$d $$d.log $$d.out; \
	[ $$rc = 0 ] || { echo "Error: make sparse: warnings in our code (above)" >&2; exit 1; }

check:
	bash selftests/run_tests.sh

stress:
	NTBSMC_TIER=stress bash selftests/run_tests.sh

demo:
	bash selftests/vm/demo.sh

bench:
	bash selftests/vm/bench.sh

# What a real installation needs, as DKMS builds it: ntbsmc and ntb_hw_plx, each
# from its own directory, never the selftests' drivers.
INSTALL_MODULES := ntbsmc ntb_hw_plx

install:
	@test -z "$(FAULT_FLAGS)" || { echo "Error: FAULT_INJECTION=1 is the test build: install a normal one" >&2; exit 1; }
	@test -d "$(KDIR)" || { echo "Error: no kernel build tree at KDIR=$(KDIR)" >&2; exit 1; }
	@ntbsmc/check-kernel.sh $(KDIR)
	for m in $(INSTALL_MODULES); do \
		$(MAKE) -C $(KDIR) M=$(CURDIR)/$$m W=1 modules modules_install || exit 1; \
	done
	depmod -a $$(cat $(KDIR)/include/config/kernel.release)
	$(MAKE) -C netlink-tool install

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -f $(TOOLS)
	-$(MAKE) -C netlink-tool clean
	-$(MAKE) -C selftests/ulp clean

.PHONY: all modules tools headers-check sparse check stress demo bench install clean deb

# Debian packages ntbsmc-dkms and ntbsmc-tools (debian/deps.sh installs the
# tools), built from a copy of the tree, in build/deb/ with lintian's report.
deb:
	debian/build-deb.sh build/deb
