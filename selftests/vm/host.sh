# SPDX-License-Identifier: GPL-2.0
# Host-side helpers to boot selftest guests under QEMU (TCG): the ivshmem server that
# joins their NTB ports, the guests themselves, and the scan of their logs.
# Needs: REPO, RUN (the run directory, shared with the guests as "out"), KIMAGE
# (vm_prepare sets it).

QEMU=${QEMU:-qemu-system-x86_64}
VM_MEM=${VM_MEM:-2G}
VM_SMP=${VM_SMP:-2}
# A guard against a guest that hangs, not a verdict on a slow one: a new
# machine's one-VM boot took over an hour (issue 37), and CI allows 90 minutes
# for the whole run; a guest still running after 80 is killed, and its boot
# fails with the tests it did not reach named.
VM_TIMEOUT=${VM_TIMEOUT:-4800}
SHM_SIZE=${SHM_SIZE:-64M}
IVS_VECTORS=${IVS_VECTORS:-4}

_servers=()
_qemus=()

# vm_prepare FLAVOUR [SERIES]: installs what is missing, builds (or reuses) the
# guest kernel FLAVOUR (debug, nodebug) of SERIES (kernel.sh's default: 6.1),
# then our modules and tools against it. Sets KBUILD and KIMAGE. A debug
# kernel has the fault-injection framework (config.debug), and its guests load
# the test build of ntbsmc (fault.h); the nodebug kernel's (make bench, make
# demo) the module users install.
vm_prepare() {
	"$REPO/selftests/vm/deps.sh" || return 1
	KBUILD=$("$REPO/selftests/vm/kernel.sh" "$@") || return 1
	KIMAGE=$KBUILD/arch/x86/boot/bzImage
	make -s -C "$REPO" KDIR="$KBUILD" FAULT_INJECTION="$([ "$1" = debug ] && echo 1)" all
}

# vm_prepare_series FLAVOUR SERIES DIR: the guest kernel FLAVOUR of a second
# kernel series (make stress: 6.1) for some guests, and our modules built
# against it in DIR, a copy of their sources (copy-modules.sh: REPO's objects
# are the first kernel's). Sets KBUILD2, KIMAGE2 and MODDIR2.
vm_prepare_series() {
	KBUILD2=$("$REPO/selftests/vm/kernel.sh" "$1" "$2") || return 1
	KIMAGE2=$KBUILD2/arch/x86/boot/bzImage
	MODDIR2=$3
	rm -rf "$MODDIR2"
	"$REPO/selftests/vm/copy-modules.sh" "$MODDIR2" &&
	make -s -C "$KBUILD2" M="$MODDIR2" W=1 \
		"CONFIG_NTBSMC_FAULT_INJECTION=$([ "$1" = debug ] && echo y)" \
		modules >"$MODDIR2/build.log" 2>&1 ||
		{ tail -20 "$MODDIR2/build.log" >&2; return 1; }
}

# vm_server NAME: starts an ivshmem server; its socket is $RUN/NAME.sock.
vm_server() {
	local name=$1 i
	rm -f "$RUN/$name.pid"
	"$REPO/selftests/vm/ivshmem-server" -S "$RUN/$name.sock" \
		-m "/dev/shm/ntbsmc-$$-${RUN##*/}-$name" -l "$SHM_SIZE" -n "$IVS_VECTORS" \
		-F "$RUN/$name.pid" -v 2>>"$RUN/$name.log" &
	_servers+=($!)
	for i in $(seq 100); do
		[ -e "$RUN/$name.pid" ] && return 0
		sleep 0.1
	done
	echo "host: ivshmem server $name did not start (see $RUN/$name.log)" >&2
	return 1
}

# vm_ntb_port SERVER N: QEMU arguments for the VM's NTB port N on SERVER's fabric.
vm_ntb_port() {
	echo "-chardev socket,path=$RUN/$1.sock,id=ivs$2" \
		"-device ivshmem-doorbell,chardev=ivs$2,vectors=$IVS_VECTORS"
}

# vm_start VM QEMU-ARGS...: boots guest VM in the background; it runs $RUN/job.VM,
# on the kernel KIMAGE_<VM> if set, else KIMAGE; its root is the host's root, or
# VM_ROOT (read-only either way). A kernel with an initramfs, KINITRD_<VM> or
# KINITRD (Debian's own, vm/pkg.sh), mounts that root with the initramfs's
# ntbsmc9p boot script; the test kernels have 9p built in.
vm_start() {
	local vm=$1 kimage initrd
	shift
	eval "kimage=\${KIMAGE_$vm:-\$KIMAGE} initrd=\${KINITRD_$vm:-\${KINITRD:-}}"
	# root= names the 9p mount tag: 6.1 stripped a "/dev/" from it, 6.12 does not
	local append="console=ttyS0 root=root rootfstype=9p"
	append+=" rootflags=trans=virtio,version=9p2000.L,cache=loose,msize=262144 ro"
	local initrd_args=()
	[ -n "$initrd" ] && append+=" boot=ntbsmc9p" && initrd_args=(-initrd "$initrd")
	append+=" init=$REPO/selftests/vm/guest-init NTBSMC_VM=$vm panic=-1"
	# Under TCG the guest's TSC is the host's. Calibrating it against the PIT fails
	# under load, and the jiffies-based watchdog (TCG loses ticks) would reject it:
	# either leaves a 1 ms clocksource. Tell the guest the host's TSC frequency.
	append+=" kmemleak=on tsc=reliable"
	# The IO-APIC timer check counts ticks in a few emulated milliseconds: on a
	# loaded host TCG's PIT does not tick in time and the kernel panics ("IO-APIC
	# + timer doesn't work!", 2026-12-08, beside another guest). A VM's timer
	# needs no check (as cloud images boot).
	append+=" no_timer_check"
	local mhz
	mhz=$(awk -F': *' '/^cpu MHz/ { print $2; exit }' /proc/cpuinfo)
	[ -n "$mhz" ] && append+=" tsc_early_khz=$(awk -v m="$mhz" 'BEGIN { printf "%d", m * 1000 }')"
	rm -f "$RUN/rc.$vm" "$RUN/qemu.$vm.pid"
	# No 5-level paging: with it (TCG's "max" CPU offers LA57), an interrupt
	# during identify_cpu() at boot trips KASAN (wild-memory-access in
	# do_raw_spin_lock from handle_edge_irq) in about one boot of six.
	# No ERMS/FSRM: with them the kernel copies to and from user space (and
	# memcpy) with "rep movsb", which TCG runs one byte per step: 490 MB/s
	# measured in the guest against 4.1 GB/s for "rep movsq" and 4.4 GB/s for a
	# loop of 8-byte moves. Without, the kernel takes its unrolled 8-byte loops,
	# for TCP and ntbsmc alike.
	# One CPU per socket: the guest kernel (no ACPI) finds its CPUs in SeaBIOS's
	# MP table, which lists one per package, so "-smp 2" (QEMU 7.2 makes that two
	# cores of one socket) would boot with one CPU.
	# shellcheck disable=SC2068
	timeout -s KILL "$VM_TIMEOUT" "$QEMU" -M pc -cpu max,la57=off,erms=off,fsrm=off \
		-smp "$VM_SMP,sockets=$VM_SMP" -m "$VM_MEM" \
		-nodefaults -display none -no-reboot -pidfile "$RUN/qemu.$vm.pid" \
		-kernel "$kimage" "${initrd_args[@]}" -append "$append" \
		-serial "file:$RUN/console.$vm.log" \
		-fsdev "local,id=root,path=${VM_ROOT:-/},security_model=none,readonly=on,multidevs=remap" \
		-device virtio-9p-pci,fsdev=root,mount_tag=root \
		-fsdev "local,id=out,path=$RUN,security_model=none,multidevs=remap" \
		-device virtio-9p-pci,fsdev=out,mount_tag=out \
		-device virtio-rng-pci \
		$@ >"$RUN/qemu.$vm.log" 2>&1 &
	_qemus+=($!)
	eval "_qemu_$vm=$!"
}

# vm_start_pair: boots VMs a and b (one vCPU each, so that two VMs do not
# oversubscribe the host) on the two ports of fabric "fabric", joined by virtio-net
# over loopback.
vm_start_pair() {
	local netport
	local VM_SMP=1
	netport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	# distinct MACs: QEMU would give both NICs its one default address
	vm_start a $(vm_ntb_port fabric 0) \
		-netdev "socket,id=n0,listen=127.0.0.1:$netport" \
		-device virtio-net-pci,netdev=n0,mac=52:54:00:4e:54:0a
	sleep 1
	vm_start b $(vm_ntb_port fabric 0) \
		-netdev "socket,id=n0,connect=127.0.0.1:$netport" \
		-device virtio-net-pci,netdev=n0,mac=52:54:00:4e:54:0b
}

# vm_pid VM: the process that runs VM (timeout(1) around QEMU: it ends with QEMU).
vm_pid() {
	eval "echo \${_qemu_$1}"
}

# vm_kill VM: kills VM's QEMU itself, like pulling the plug (killing the
# timeout(1) around it would leave QEMU running).
vm_kill() {
	local pid
	pid=$(cat "$RUN/qemu.$1.pid" 2>/dev/null) || return 1
	# only that QEMU: a stale pid file may name a recycled pid
	grep -aq -- "$RUN/console.$1.log" "/proc/$pid/cmdline" 2>/dev/null &&
		kill -KILL "$pid"
}

# vm_wait VM...: waits for the guests to end.
vm_wait() {
	local vm
	for vm in "$@"; do
		wait "$(vm_pid "$vm")" 2>/dev/null
	done
}

vm_cleanup() {
	local p
	for p in "$RUN"/qemu.*.pid; do
		[ -e "$p" ] || continue
		p=${p##*/qemu.}
		vm_kill "${p%.pid}"
	done
	for p in "${_qemus[@]}" "${_servers[@]}"; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -f "/dev/shm/ntbsmc-$$-${RUN##*/}-"*
	_servers=() _qemus=()
}

# Patterns of a kernel splat: any of them in a guest log fails the run.
SPLAT_RE='BUG:|WARNING:|KASAN|UBSAN|Oops|general protection|Kernel panic|kernel BUG|'
SPLAT_RE+='possible circular locking|possible recursive locking|inconsistent lock state|'
SPLAT_RE+='suspicious RCU usage|sleeping function called from invalid context|'
SPLAT_RE+='kmemleak: unreferenced|hung_task|soft lockup|rcu_sched self-detected|'
SPLAT_RE+='Call Trace:|list_add corruption|list_del corruption|ODEBUG:|'
# the test build's warning of a notification the peer owed and never rang
SPLAT_RE+='ntbsmc: .*lost notification'

# vm_splats LOG...: prints the splat lines of the logs; fails when there are some,
# or when a log is missing or empty (no log proves nothing).
vm_splats() {
	local f
	for f in "$@"; do
		[ -s "$f" ] || { echo "$f: missing or empty"; return 1; }
	done
	grep -E -H "$SPLAT_RE" "$@"
	[ $? = 1 ]
}

# vm_splat_context LOG...: the first splat of each log with the 40 lines after
# it, so that a failed run's own output shows the trace.
vm_splat_context() {
	local f n
	for f in "$@"; do
		n=$(grep -n -m1 -E "$SPLAT_RE" "$f" 2>/dev/null | cut -d: -f1)
		[ -n "$n" ] || continue
		echo "first splat in $f:"
		sed -n "$((n > 5 ? n - 5 : 1)),$((n + 40))p" "$f"
	done
}
