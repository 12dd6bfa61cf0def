#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: figures on the non-debug guest kernel (KASAN and lockdep slow the
# kernel's own paths several-fold under emulation, so debug figures mean nothing).
# Boots both topologies and prints one table. Not a test: it asserts nothing but
# that every measurement produced a figure.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO" || exit 1
source "$REPO/selftests/vm/host.sh"
vm_prepare nodebug || exit 1

TOP=${NTBSMC_OUT:-$REPO/selftests/output}/bench-$(date +%Y%m%d-%H%M%S)
mkdir -p "$TOP"
trap vm_cleanup EXIT
BENCH_TESTS=(${NTBSMC_BENCH:-bench/fabric.sh bench/ulp.sh bench/rmb.sh bench/dma.sh bench/wrk.sh})

# bench_env: the bench's settings exported here (BENCH_SECS, BENCH_PAIRS, ...,
# read by the guest's scripts), as assignments for the guest's job.
bench_env() {
	local v
	for v in $(compgen -e | grep '^BENCH_'); do
		printf ' %s=%q' "$v" "${!v}"
	done
}

job() {
	local vm=$1
	shift
	cat >"$RUN/job.$vm" <<JOB
export REPO=$REPO KBUILD=$KBUILD IVS_PARAMS=profile=default BENCH=1$(bench_env)
bash $REPO/selftests/vm/guest-run.sh $* >/run/out/tap.$vm
JOB
}

RUN=$TOP/onevm
mkdir -p "$RUN"
echo "# bench: one VM, two namespaces"
vm_server fabric || exit 1
job a onevm "${BENCH_TESTS[@]}"
vm_start a $(vm_ntb_port fabric 0) $(vm_ntb_port fabric 1)
vm_wait a
vm_cleanup

RUN=$TOP/twovm
mkdir -p "$RUN"
echo "# bench: two VMs"
vm_server fabric || exit 1
job a twovm a "${BENCH_TESTS[@]}"
job b twovm b "${BENCH_TESTS[@]}"
vm_start_pair
vm_wait a b
vm_cleanup

echo
echo "ntbsmc bench ($(nproc) host cores, QEMU TCG, non-debug guest kernel)"
printf '%-8s %-52s %s\n' topology measurement value
for t in onevm twovm; do
	grep -h "^# \[a .*\] bench: " "$TOP/$t"/tap.a 2>/dev/null |
		sed 's/^# \[a [0-9.]*\] bench: //' | while IFS='|' read -r what val; do
			printf '%-8s %-52s %s\n' "$t" "$what" "$val"
		done
	# A plot per comparison of bench/ulp.sh, from the samples host a logged
	# (ID|TITLE|UNIT|SERIES|VALUES): the spread behind the medians above.
	samples=$(sed -n 's/^# \[a [0-9.]*\] samples: //p' "$TOP/$t"/tap.a 2>/dev/null)
	awk -F'|' '$1 != "" && !seen[$1]++ { print $1 "|" $2 }' <<<"$samples" |
		while IFS='|' read -r id title; do
			svg=$TOP/$t-$id.svg
			awk -F'|' -v id="$id" -v topo="$([ $t = onevm ] && echo "one VM" || echo "two VMs")" \
				-f "$REPO/selftests/bench/plot.awk" <<<"$samples" >"$svg"
			printf '%-8s %-52s %s\n' "$t" "plot: $title" "$svg"
		done
done
fails=$(grep -h "^not ok" "$TOP"/*/tap.* 2>/dev/null)
[ -z "$fails" ] || { echo "$fails"; echo "bench: some measurements failed ($TOP)"; exit 1; }
if ! splats=$(vm_splats "$TOP"/*/console.*.log); then
	echo "$splats"
	exit 1
fi
echo "# logs: $TOP"
