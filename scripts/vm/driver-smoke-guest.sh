#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Guest half of run-driver-smoke.sh (busybox sh, run by the VM's init).
# Covers: fpgacomm.ko leaves ivshmem alone by default, binds to it with
# ivshmem=1 and logs the board, refuses bad boards with a clear error, and
# unloads cleanly.
#
# usage: driver-smoke-guest.sh good NODE MEM_MIB   (host wrote a valid board)
#        driver-smoke-guest.sh bad                 (host wrote all-ones)

ko=/fcvm/ko/fpgacomm.ko
drv=/sys/bus/pci/drivers/fpgacomm
fails=0

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

ok() {
	echo "ok: $*"
}

# The ivshmem device: vendor 1af4, device 1110.
dev=
for d in /sys/bus/pci/devices/*; do
	if [ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x1110 ]; then
		dev=${d##*/}
		break
	fi
done
if [ -z "$dev" ]; then
	echo "FAIL: no ivshmem device in the guest"
	exit 1
fi
echo "ivshmem device $dev: $(sed -n 3p "/sys/bus/pci/devices/$dev/resource")"

bound() {
	[ -e "$drv/$dev" ]
}

# Load the module with "$@" as parameters; the kernel log of the load is
# left in $log.
load() {
	dmesg -c > /dev/null
	if ! insmod "$ko" "$@"; then
		fail "insmod $* failed"
		return 1
	fi
	log=$(dmesg -c)
	echo "$log" | grep fpgacomm | sed 's/^/  dmesg: /'
}

unload() {
	dmesg -c > /dev/null
	if ! rmmod fpgacomm; then
		fail "rmmod failed"
		return 1
	fi
	log=$(dmesg -c)
	echo "$log" | grep fpgacomm | sed 's/^/  dmesg: /'
	if [ -e /sys/module/fpgacomm ]; then
		fail "module still present after rmmod"
	fi
	if grep -q fpgacomm /proc/iomem; then
		fail "memory regions still claimed after rmmod"
	fi
}

# Load with ivshmem=1 and expect a refusal logged as $1.
expect_refusal() {
	load ivshmem=1 || return
	if bound; then
		fail "bound to a bad board ($1)"
	elif echo "$log" | grep -qF "fpgacomm $dev: $1"; then
		ok "refused: $1"
	else
		fail "no refusal line '$1'"
	fi
	unload
}

# Physical address of the register file: BAR2 of ivshmem, from sysfs.
regs_addr() {
	sed -n 3p "/sys/bus/pci/devices/$dev/resource" | cut -d' ' -f1
}

case $1 in
good)
	node=$2
	mem_mib=$3

	load || exit 1
	if bound || echo "$log" | grep -q "fpgacomm $dev"; then
		fail "bound to ivshmem without ivshmem=1"
	else
		ok "ivshmem left alone by default"
	fi
	unload

	load ivshmem=1 || exit 1
	# the version and capabilities are the emulator's, whatever they are
	want="fpgacomm $dev: board id 0x46434f4d version [0-9]+\.[0-9]+ caps 0x[0-9a-f]+ node $node mem $mem_mib MiB \(ivshmem\)"
	if ! bound; then
		fail "not bound with ivshmem=1"
	elif echo "$log" | grep -qE "$want"; then
		ok "probe line as expected"
	else
		fail "no probe line '$want'"
	fi
	grep fpgacomm /proc/iomem | sed 's/^/  iomem: /'
	grep -q fpgacomm /proc/iomem || fail "BARs not claimed"
	unload
	if echo "$log" | grep -qF "fpgacomm $dev: removed"; then
		ok "removed"
	else
		fail "no remove line"
	fi

	# With the driver gone, play other bad boards through the BAR itself.
	base=$(regs_addr)
	devmem $((base + 0x0)) 32 0x12345678
	expect_refusal "not an fpgacomm board: ID 0x12345678, expected 0x46434f4d"
	devmem $((base + 0x0)) 32 0x46434f4d
	devmem $((base + 0x4)) 32 0x00020001
	expect_refusal "unsupported hardware version 2.1, driver supports 1.x"
	devmem $((base + 0x4)) 32 0x00010000
	# The host checks that this write reached the ivshmem backing file.
	devmem $((base + 0x20)) 32 0x5eed0001
	;;
bad)
	expect_refusal "board not responding: ID register reads all-ones"
	;;
*)
	echo "usage: $0 good NODE MEM_MIB | bad"
	exit 2
	;;
esac

if [ "$fails" != 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "all checks passed"
exit 0
