# SPDX-License-Identifier: GPL-2.0
#
# make              modules (against KDIR) and userspace tools
# make check        the test suite: guest kernel, QEMU topologies, kselftest TAP
# make demo         the main job on the emulated fabric
# make bench        figures on the non-debug guest kernel
# make install      modules into /lib/modules/$(uname -r) of KDIR's kernel

KDIR ?= /lib/modules/$(shell uname -r)/build
DEBIAN_KDIR ?= $(firstword $(wildcard /usr/src/linux-headers-*-amd64))
CFLAGS ?= -O2 -g
CFLAGS += -Wall -Wextra -Werror -std=gnu11

TOOLS := selftests/vm/ivshmem-server
MODULE_SRCS := $(filter-out %.mod.c,$(wildcard ntbsmc/*.c selftests/fabric/*.c))
HC_DIR := $(CURDIR)/.headers-check

all: modules tools

modules:
	@test -d "$(KDIR)" || { echo "Error: no kernel build tree at KDIR=$(KDIR)" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 modules

tools: $(TOOLS)

selftests/vm/ivshmem-server: selftests/vm/ivshmem-server.c
	$(CC) $(CFLAGS) -o $@ $<

# Debian's kernel has no NTB core, so modules cannot link against it; every object
# must still compile warning-free with W=1 against its headers.
headers-check:
	@test -d "$(DEBIAN_KDIR)" || { echo "Error: linux-headers-amd64 not installed" >&2; exit 1; }
	rm -rf $(HC_DIR) && mkdir -p $(HC_DIR)
	cp -r Kbuild ntbsmc include $(HC_DIR)/ && mkdir -p $(HC_DIR)/selftests
	cp -r selftests/fabric $(HC_DIR)/selftests/
	$(MAKE) -C $(DEBIAN_KDIR) M=$(HC_DIR) W=1 $(MODULE_SRCS:.c=.o)
	rm -rf $(HC_DIR)

check:
	bash selftests/run_tests.sh

install: modules
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules_install
	depmod -a

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null || true
	rm -f $(TOOLS)

.PHONY: all modules tools headers-check check install clean
