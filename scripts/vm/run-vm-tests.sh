#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The driver and the library against emulated boards in a VM: builds the
# tree (make all), fpgacomm.ko and the MSI-X fixture for the guest kernel,
# starts one fpgacomm-emud per board as the ivshmem server of an
# ivshmem-doorbell device (two boards, nodes 0 and 1 of one emulated cluster,
# full:2, so that they are linked: channels work between them through
# the driver), boots the VM once and
# runs vm-tests-guest.sh in it: the rig (identity, doorbells, MSI-X) before
# any driver, then per pass (poll=1, then interrupts) insmod, the library's
# test programs on /dev/fpgacomm0 through scripts/run-tests.sh,
# fpgacomm-info and fpgacomm-dma --verify on every board, rmmod.
# run-vm.sh fails the run if the kernel log shows BUG:, WARNING:, Oops...
#
# usage: scripts/vm/run-vm-tests.sh [options]
#   --kver KVER          guest kernel (default: the newest with headers)
#   --pass poll|irq      run only this pass (repeatable; default both, or
#                        poll with --plain)
#   --plain              one board behind ivshmem-plain instead, which the
#                        daemon polls (no doorbell, no interrupts)
#   --test-timeout SEC   per test program in the guest (default 300)
#   --timeout SEC        the whole VM (default 1200)
#   --smp N              guest CPUs (default 1)
#   --logdir DIR         keep the VM's logs there (console.log, output.log,
#                        board-N.log, result); by default they are kept
#                        only when the run fails
#   -v, --verbose        print the kernel console log too
#
# The last line is "N passed, M failed, K skipped", counting the guest's
# checks and three of the host's (the VM ended in time, the kernel log is
# clean, the daemons lived as long as the VM). Exit status: 0 when nothing
# failed, 77 when skipped (no qemu, kernel image or headers), else 1.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
prog=${0##*/}

kver='' passes=() test_timeout=300 timeout=1200 smp=1 logdir='' vmargs=() plain=0
while [ $# -gt 0 ]; do
	case $1 in
	--kver) kver=$2; shift 2 ;;
	--pass) passes+=(--pass "$2"); shift 2 ;;
	--test-timeout) test_timeout=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--plain) plain=1; shift ;;
	--logdir) logdir=$2; shift 2 ;;
	-v|--verbose) vmargs+=(-v); shift ;;
	-h|--help) sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done

start=$(date +%s.%N)
elapsed() { awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

skip() {
	echo "$prog: SKIP: $*" >&2
	echo "0 passed, 0 failed, 1 skipped"
	exit 77
}
# Setup that fails before the VM runs is one failed test.
die() {
	echo "$prog: FAIL: $*" >&2
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
}

# shellcheck source=scripts/vm/common.sh
. "$here/common.sh"
need_vm_tools
pick_kernel
kdir=/lib/modules/$kver/build

work=$(mktemp -d "${TMPDIR:-/tmp}/fcvm-tests.XXXXXX")
keep_logs=0
if [ -z "$logdir" ]; then
	logdir=$work/logs
else
	keep_logs=1
fi
trap '[ "$keep_logs" = 1 ] || rm -rf "$work"' EXIT

# ---- Build: the tree, the driver, the fixture ----
build "the library, tools and tests (make all)" make -C "$top" -j2 all
build "fpgacomm.ko for $kver" env KDIR="$kdir" "$top/scripts/build-driver.sh"
fixture=$top/build/vm/fcvm-msix
mkdir -p "$fixture"
for f in fcvm_msix.c Kbuild; do
	cmp -s "$here/fcvm-msix/$f" "$fixture/$f" || cp "$here/fcvm-msix/$f" "$fixture/$f"
done
build "fcvm_msix.ko for $kver" make -C "$kdir" M="$fixture" modules
dmabuf_fixture=$top/build/vm/fcvm-dmabuf
mkdir -p "$dmabuf_fixture"
for f in fcvm_dmabuf.c fcvm_dmabuf.h Kbuild; do
	cmp -s "$here/fcvm-dmabuf/$f" "$dmabuf_fixture/$f" ||
		cp "$here/fcvm-dmabuf/$f" "$dmabuf_fixture/$f"
done
build "fcvm_dmabuf.ko for $kver" make -C "$kdir" M="$dmabuf_fixture" modules
echo "$prog: built in $(elapsed)s" >&2

ko=$top/driver/fpgacomm.ko
emud=$top/build/tools/fpgacomm-emud
nodes=(0 1)
# Both daemons join one cluster; the first to start creates it, the last to
# leave removes it (and so does our exit trap, should a daemon be killed).
cluster=fcvm-$$
trap '[ "$keep_logs" = 1 ] || rm -rf "$work"; rm -f "/dev/shm/fpgacomm-$cluster"' EXIT
guest_args=("${passes[@]}" --test-timeout "$test_timeout")
if [ "$plain" = 1 ]; then
	nodes=(1)
	[ ${#passes[@]} = 0 ] && guest_args+=(--pass poll)
	guest_args+=(--plain)
fi

initrd_args=(--module "$ko" --module "$fixture/fcvm_msix.ko"
	     --module "$dmabuf_fixture/fcvm_dmabuf.ko"
	     --kmod aer_inject
	     --prog /bin/dash --prog /usr/bin/timeout
	     --prog "$top/build/tools/fpgacomm-info"
	     --prog "$top/build/tools/fpgacomm-dma"
	     --prog "$top/build/tools/fpgacomm-reg"
	     --file "$top/scripts/run-tests.sh:/fcvm/bin/run-tests.sh")
for t in "$top"/build/tests/test_*; do
	[ -x "$t" ] && initrd_args+=(--prog "$t")
done
# libfabric's fi_pingpong over the provider, one process per board
pp=$(command -v fi_pingpong || true)
if [ -n "$pp" ] && [ -f "$top/build/libfpgacomm-fi.so" ]; then
	initrd_args+=(--prog "$pp"
		      --file "$top/build/libfpgacomm-fi.so:/fcvm/fi/libfpgacomm-fi.so")
fi
# Open MPI (mpirun, its components and data files) and tests/mpi/mpi_fabric,
# for an MPI job of one rank per board over the provider
mpirun_bin=$(readlink -f "$(command -v mpirun || true)" 2> /dev/null || true)
ompi_lib=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
pmix_lib=/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
mem_args=()
if [ -x "$mpirun_bin" ] && [ -x "$top/build/tests/mpi/mpi_fabric" ] &&
   [ -d "$ompi_lib" ] && [ -f "$top/build/libfpgacomm-fi.so" ]; then
	initrd_args+=(--prog "$mpirun_bin" --prog "$top/build/tests/mpi/mpi_fabric")
	# the components it loads; those needing what is not installed
	# (psm, ...) are left out, as Open MPI passes over them
	for so in "$ompi_lib"/*.so "$pmix_lib"/*.so; do
		[ -f "$so" ] || continue
		ldd "$so" 2> /dev/null | grep -q 'not found' ||
			initrd_args+=(--lib "$so")
	done
	for f in /usr/share/openmpi/* /etc/openmpi/* \
		 /usr/lib/x86_64-linux-gnu/pmix2/share/pmix/* \
		 /usr/lib/x86_64-linux-gnu/pmix2/share/pmix-mca-params.conf; do
		[ -f "$f" ] && initrd_args+=(--file "$f:$f")
	done
	# the image no longer unpacks into 256M of guest RAM
	mem_args=(--mem 512M)
fi
board_args=()
if [ "$plain" = 1 ]; then
	board_args+=(--host-cmd "exec '$emud' -v --shm \"\$FCVM_BAR\" --guest-ram \"\$FCVM_RAM\" --node ${nodes[0]}")
else
	for i in "${!nodes[@]}"; do
		# Each board's memory in a file that the others map (--peer),
		# so that their DMA reaches its aperture, as PCIe peers do.
		peers=''
		for j in "${!nodes[@]}"; do
			[ "$j" = "$i" ] || peers="$peers --peer '$work/board$j.shm'"
		done
		board_args+=(--board-socket "$work/board$i.sock"
			     --board-cmd "exec '$emud' -v --socket \"\$FCVM_SOCKET\" --shm '$work/board$i.shm'$peers --guest-ram \"\$FCVM_RAM\" --node ${nodes[$i]} --cluster $cluster --topology full:${#nodes[@]}")
	done
	# Each board in a slot of its own, as a card is: a bus reset through
	# sysfs and AER through its root port reach it.
	board_args+=(--root-port)
fi

# ---- The VM ----
echo "$prog: booting $kver with ${#nodes[@]} boards; the guest's output" \
	"follows when the VM ends (at most ${timeout}s)" >&2
rc=0
# slub_debug: poisoned and red-zoned kmalloc slabs catch use-after-free
# and overruns in the driver.
"$here/run-vm.sh" --kver "$kver" --smp "$smp" --timeout "$timeout" \
	--logdir "$logdir" "${vmargs[@]}" "${mem_args[@]}" "${board_args[@]}" "${initrd_args[@]}" \
	--append "slub_debug=FZPU,kmalloc-* ${FCVM_APPEND:-}" \
	-- "$here/vm-tests-guest.sh" "${guest_args[@]}" "${nodes[@]}" |
	tee "$work/output" || rc=$?

# ---- Shutdown: the VM rebooted under running chains ----
# The last board reset a daemon logs (the driver's .shutdown) must be the
# last thing its board did to the guest: "guest RAM reached N times, M
# interrupts" the same there as at the end.
shutdown_check() {
	local dir=$logdir/shutdown i last end n
	mkdir -p "$dir"
	"$here/run-vm.sh" --kver "$kver" --smp "$smp" --timeout 300 \
		--logdir "$dir" "${mem_args[@]}" "${board_args[@]}" "${initrd_args[@]}" \
		--append "slub_debug=FZPU,kmalloc-* ${FCVM_APPEND:-}" \
		-- "$here/vm-shutdown-guest.sh" "${#nodes[@]}" > "$dir/run.out" 2>&1
	echo "$prog: shutdown VM: exit $?" >&2
	grep -E '^(PASS|FAIL) ' "$dir/output.log" | tr -d '\r' >> "$work/output"
	n=$(grep -c 'shutdown: board stopped' "$dir/console.log" || true)
	if [ "$n" = "${#nodes[@]}" ]; then
		echo "PASS shutdown: the driver stopped all $n boards at the reboot (kernel log)"
	else
		echo "FAIL shutdown: $n of ${#nodes[@]} boards logged 'shutdown: board stopped'"
	fi
	for i in "${!nodes[@]}"; do
		last=$(sed -n 's/.*board reset [0-9]*: //p' "$dir/board-$i.log" | tail -n 1)
		end=$(sed -n 's/.*at the end: //p' "$dir/board-$i.log")
		if [ -n "$last" ] && [ "$last" = "$end" ]; then
			echo "PASS shutdown: board $i did nothing to the guest after its last reset ($end)"
		else
			echo "FAIL shutdown: board $i: at its last reset '${last:-none}', at the end '${end:-none}'"
		fi
	done
	if grep -q '^kernel=clean' "$dir/result" 2> /dev/null; then
		echo "PASS shutdown: kernel log clean through the reboot"
	else
		echo "FAIL shutdown: kernel log not clean (see $dir/console.log)"
	fi
}
if [ "$plain" = 0 ]; then
	shutdown_check | tee -a "$work/output"
fi

# ---- Count ----
passed=$(grep -c '^PASS ' "$work/output" || true)
failed=$(grep -c '^FAIL ' "$work/output" || true)
skipped=$(grep -c '^SKIP ' "$work/output" || true)
host_check() {	# host_check NAME CONDITION...
	local name=$1
	shift
	if "$@"; then
		echo "PASS host: $name"
		passed=$((passed + 1))
	else
		echo "FAIL host: $name"
		failed=$((failed + 1))
	fi
}
result() { sed -n "s/^$1=//p" "$logdir/result" 2>/dev/null || true; }
vm_ended() {
	[ "$(result timeout)" = 0 ] && [ -n "$(result guest)" ] &&
		[ "$(result guest)" != none ]
}
host_check "the VM ran to the end (guest exit ${rc_guest:=$(result guest)}, ${timeout}s limit)" \
	vm_ended
host_check "kernel log clean (no BUG:, WARNING:, Oops; taint O/E only)" \
	[ "$(result kernel)" = clean ]
daemons_lived() {
	[ "$(result boards)" = ok ] && [ "$(result host)" != ended ]
}
host_check "fpgacomm-emud served every board for the whole run" daemons_lived
# Never a silent pass: a failed run with no failed check is one.
if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then
	echo "FAIL host: run-vm.sh exited $rc with no failed check"
	failed=1
fi
if [ "$failed" != 0 ]; then
	if [ "$keep_logs" = 0 ]; then
		keep_logs=1
		logdir=$work	# with build.log and the output
	fi
	echo "$prog: logs kept in $logdir" >&2
elif [ "$keep_logs" = 0 ]; then
	echo "$prog: passed; logs removed (--logdir DIR keeps them)" >&2
fi
echo "$prog: $(elapsed)s in all (VM $(result secs)s)" >&2
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
