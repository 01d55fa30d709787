#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Guest half of the driver DMA test (busybox sh, run by the VM's init), with
# the board hosted by fpgacomm-emud on the host (run-vm.sh --host-cmd).
# Loads fpgacomm.ko for ivshmem, checks /dev/fpgacomm0 and its sysfs files,
# then runs the library's tests and tools through the kernel backend, the
# raw ioctl test, the timeout recovery, and unloads.
#
# usage: driver-dma-guest.sh [MODULE_PARAMS...]

ko=/fcvm/ko/fpgacomm.ko
dev=/dev/fpgacomm0
fails=0

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

ok() {
	echo "ok: $*"
}

# run NAME CMD...: run a program, its status 0 (or 77 for a skip) passes.
run() {
	name=$1
	shift
	echo "== $name: $*"
	t0=$(date +%s)
	"$@" 2>&1
	rc=$?
	t1=$(date +%s)
	case $rc in
	0) ok "$name ($((t1 - t0)) s)" ;;
	77) echo "skip: $name" ;;
	*) fail "$name: exit $rc" ;;
	esac
}

if ! insmod "$ko" ivshmem=1 "$@"; then
	echo "FAIL: insmod"
	exit 1
fi
dmesg | grep fpgacomm | sed 's/^/  dmesg: /'

[ -c "$dev" ] && ok "$dev exists" || fail "no $dev"
cls=/sys/class/fpgacomm/fpgacomm0
for a in id version caps node_id numa_node link_state irq_mode; do
	if [ -r "$cls/$a" ]; then
		echo "  sysfs $a: $(cat "$cls/$a")"
	else
		fail "no sysfs attribute $a"
	fi
done
# The class device sits under its PCI device.
parent=$(readlink -f "$cls/device")
case $parent in
/sys/devices/pci*) ok "parent is the PCI device ${parent##*/}" ;;
*) fail "parent of $cls is $parent" ;;
esac

export FPGACOMM_TEST_DEVICE=$dev
run info fpgacomm-info -d "$dev"
run dma fpgacomm-dma -d "$dev" -s 1M -n 16 --verify
run test_driver_abi test_driver_abi
run test_dma_integrity test_dma_integrity
run test_bad_input test_bad_input

# Recovery: a stalled chain times out after dma_timeout_ms, the next works.
echo 300 > /sys/module/fpgacomm/parameters/dma_timeout_ms
run timeout_recovery test_driver_abi --timeout-test
echo 5000 > /sys/module/fpgacomm/parameters/dma_timeout_ms

# rmmod is refused while a file is open, then works.
exec 3< "$dev"
if rmmod fpgacomm 2>/dev/null; then
	fail "rmmod with $dev open succeeded"
else
	ok "rmmod refused while $dev is open"
fi
exec 3<&-

# PCI remove with the file open: calls give -ENODEV, close is clean.
run remove_while_open test_driver_abi --remove-test

dmesg | grep -E 'fpgacomm' | tail -n 20 | sed 's/^/  dmesg: /'
if rmmod fpgacomm; then
	ok "rmmod"
else
	fail "rmmod"
fi

if [ "$fails" != 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "all checks passed"
exit 0
