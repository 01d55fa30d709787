#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Guest half of run-vm-tests.sh (busybox sh, run by the VM's init). The
# boards are ivshmem-doorbell devices served by fpgacomm-emud, one per
# expected node, in PCI slot order; with --plain, one ivshmem-plain device
# whose registers the daemon polls (no doorbell, no interrupts).
#
# Covers, before any driver loads (the rig): each board's identity and node
# through BAR2; that the daemon acts on a register write only once rung
# through ivshmem's DOORBELL; that its interrupts arrive as MSI-X messages
# (fcvm_msix.ko, a fixture, requests the vectors). Then, once per pass:
# fpgacomm.ko ivshmem=1 binds every board (pass "poll": poll=1; pass "irq":
# interrupts), /dev/fpgacommN appear, the library tests pass on
# /dev/fpgacomm0 (scripts/run-tests.sh), fpgacomm-info and fpgacomm-dma
# --verify work on each board, with two or more boards the first two, linked
# in one emulated cluster by their daemons, pass channel messages both ways
# and a remote write through the driver (test_fabric_pair), interrupts
# arrive (pass "irq"), and rmmod leaves nothing behind.
#
# usage: vm-tests-guest.sh [--plain] [--pass poll|irq]... [--test-timeout SEC]
#                          NODE...
# Prints one line per check: "PASS name", "FAIL name (why)" or
# "SKIP name: why", then "guest: N passed, M failed, K skipped".
# Exit status: 0 when nothing failed, else 1.
#
# shellcheck disable=SC2086 # lists of IRQs, boards and module arguments
# are split into words on purpose

ko=/fcvm/ko/fpgacomm.ko
msix_ko=/fcvm/ko/fcvm_msix.ko
dmabuf_ko=/fcvm/ko/fcvm_dmabuf.ko
drv=/sys/bus/pci/drivers/fpgacomm
passes='' test_timeout=300 plain=0

while [ $# -gt 0 ]; do
	case $1 in
	--pass) passes="$passes $2"; shift 2 ;;
	--test-timeout) test_timeout=$2; shift 2 ;;
	--plain) plain=1; shift ;;
	*) break ;;
	esac
done
passes=${passes:-poll irq}
nodes="$*"
nboards=$#

passed=0 failed=0 skipped=0
pass() { echo "PASS $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
skip() { echo "SKIP $*"; skipped=$((skipped + 1)); }
# check NAME COMMAND...: PASS or FAIL by the command's status
check() {
	_name=$1
	shift
	if "$@"; then pass "$_name"; else fail "$_name"; fi
}

# ---- Registers through devmem (only while no driver claims the BARs) ----

# Board registers of hw.h, and ivshmem's own (BAR0).
REG_ID=0x0000 REG_NODE_ID=0x000c REG_SCRATCH=0x0020 REG_SCRATCH_ECHO=0x0024
REG_IRQ_ENABLE=0x0800 REG_IRQ_COUNT0=0x0810 REG_IRQ_ACK0=0x0820
DMA0=0x1000 DMA_DESC_COUNT=0x08 DMA_DOORBELL=0x0c DMA_IRQ_ENABLE=0x10
DMA_RESET=0x14 DMA_STATUS=0x20 DMA_ERROR=0x24 DMA_DONE_SEQ=0x2c
DMA_RESET_ACK=0x3c DMA_IRQ_ERROR=4 DMA_ERR_COUNT=1 DMA_STATUS_ERROR=2
HW_ID_MAGIC=0x46434f4d IV_IVPOSITION=0x08 IV_DOORBELL=0x0c

# rd BASE OFF: the 32-bit register, in decimal; wr BASE OFF VALUE
rd() { echo $(($(devmem $(($1 + $2)) 32))); }
wr() { devmem $(($1 + $2)) 32 $(($3 & 0xffffffff)); }
# Ring the daemon (peer 0, vector 0) through ivshmem's doorbell.
ring() { wr "$1" $IV_DOORBELL 0; }
# wait_reg BASE OFF VALUE: up to 2 s for the register to read VALUE.
wait_reg() {
	_i=0
	while [ "$(rd "$1" "$2")" != $(($3 & 0xffffffff)) ]; do
		_i=$((_i + 1))
		[ $_i -le 40 ] || return 1
		sleep 0.05
	done
}

# ---- Interrupts: /proc/interrupts, summed over CPUs ----

# irq_sum IRQ...: interrupts counted on these IRQ numbers
irq_sum() {
	awk -v list=" $* " '
		{ n = $1; sub(":", "", n) }
		index(list, " " n " ") {
			for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++)
				s += $i
		}
		END { print s + 0 }' /proc/interrupts
}
# dev_irqs BDF: the device's MSI/MSI-X IRQ numbers (none without vectors)
dev_irqs() {
	for _f in "/sys/bus/pci/devices/$1/msi_irqs"/*; do
		[ -e "$_f" ] && echo "${_f##*/}"
	done | sort -n | tr '\n' ' '
}
# requested IRQ...: how many of them have a handler (a /proc/interrupts line)
requested() {
	awk -v list=" $* " '{ n = $1; sub(":", "", n) }
		index(list, " " n " ") { c++ } END { print c + 0 }' /proc/interrupts
}
# named_irq NAME: the IRQ number of the /proc/interrupts line ending in NAME
named_irq() {
	awk -v name="$1" '$NF == name { n = $1; sub(":", "", n); print n }' \
		/proc/interrupts
}

# ---- The boards ----

bdfs=''
for d in /sys/bus/pci/devices/*; do
	if [ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x1110 ]; then
		bdfs="$bdfs ${d##*/}"
	fi
done
set -- $bdfs
if [ $# = "$nboards" ]; then
	pass "rig: $nboards ivshmem boards:$bdfs"
else
	fail "rig: $nboards ivshmem boards expected, found $# ($bdfs)"
	echo "guest: $passed passed, $failed failed, $skipped skipped"
	exit 1
fi

# board_field INDEX FIELD: bdf, node, bar0 (ivshmem registers) or bar2
board_field() {
	_b=$1 _field=$2
	set -- $bdfs
	shift "$_b"
	_bdf=$1
	set -- $nodes
	shift "$_b"
	case $_field in
	bdf) echo "$_bdf" ;;
	node) echo "$1" ;;
	bar0) echo $(($(sed -n 1p "/sys/bus/pci/devices/$_bdf/resource" | cut -d' ' -f1))) ;;
	bar2) echo $(($(sed -n 3p "/sys/bus/pci/devices/$_bdf/resource" | cut -d' ' -f1))) ;;
	esac
}
board_indexes() {
	_i=0
	while [ $_i -lt "$nboards" ]; do
		echo $_i
		_i=$((_i + 1))
	done
}

# ---- The rig: daemon, doorbells and MSI-X, before the driver ----

rig_board() {
	b=$1
	bdf=$(board_field "$b" bdf)
	node=$(board_field "$b" node)
	iv=$(board_field "$b" bar0)
	regs=$(board_field "$b" bar2)
	name="rig: board $b ($bdf)"

	id=$(rd "$regs" $REG_ID)
	got_node=$(rd "$regs" $REG_NODE_ID)
	if [ $plain = 1 ]; then
		peer=plain
	else
		peer=$(rd "$iv" $IV_IVPOSITION)
	fi
	if [ "$id" = $((HW_ID_MAGIC)) ] && [ "$got_node" = "$node" ] &&
	   { [ $plain = 1 ] || [ "$peer" -ge 1 ]; }; then
		pass "$name: ID 0x46434f4d at BAR2 0, node $node, ivshmem peer $peer"
	else
		fail "$name: ID $(printf 0x%08x "$id") node $got_node peer $peer (want 0x46434f4d, $node, >= 1)"
	fi

	scratch=$((0x5ca1ab00 + b))
	want=$((~scratch & 0xffffffff))
	if [ $plain = 1 ]; then
		# ivshmem-plain: no doorbell; the daemon polls the registers.
		wr "$regs" $REG_SCRATCH $scratch
		if wait_reg "$regs" $REG_SCRATCH_ECHO $want; then
			pass "$name: the polling daemon answers SCRATCH"
		else
			fail "$name: SCRATCH_ECHO is $(printf 0x%08x "$(rd "$regs" $REG_SCRATCH_ECHO)"), want $(printf 0x%08x $want)"
		fi
		return
	fi
	# The daemon sleeps until rung: SCRATCH_ECHO follows only then.
	wr "$regs" $REG_SCRATCH $scratch
	sleep 0.2
	if [ "$(rd "$regs" $REG_SCRATCH_ECHO)" != "$want" ]; then
		pass "$name: the daemon leaves SCRATCH alone until rung"
	else
		fail "$name: SCRATCH_ECHO followed SCRATCH without a doorbell (the daemon polls)"
	fi
	ring "$iv"
	if wait_reg "$regs" $REG_SCRATCH_ECHO $want; then
		pass "$name: a doorbell (0 << 16 | 0 to BAR0+12) wakes the daemon"
	else
		fail "$name: SCRATCH_ECHO is $(printf 0x%08x "$(rd "$regs" $REG_SCRATCH_ECHO)") after the doorbell, want $(printf 0x%08x $want)"
	fi
}

# A chain of 0 descriptors fails at once (FC_DMA_ERR_COUNT): with
# FC_DMA_IRQ_ERROR it raises vector 0, which must arrive on this board's
# first MSI-X vector and on no other board's.
rig_irq() {
	b=$1
	bdf=$(board_field "$b" bdf)
	iv=$(board_field "$b" bar0)
	regs=$(board_field "$b" bar2)
	name="rig: board $b ($bdf)"

	irqs=$(dev_irqs "$bdf")
	n=$(echo $irqs | wc -w)
	if [ "$n" = 4 ] && [ "$(requested $irqs)" = 4 ]; then
		pass "$name: 4 MSI-X vectors (IRQs $irqs)"
	else
		fail "$name: $n MSI-X vectors (IRQs $irqs), want 4"
		return
	fi
	mine=$(named_irq "fcvm-msix-0@$bdf")
	all=''
	for i in $(board_indexes); do
		all="$all $(dev_irqs "$(board_field "$i" bdf)")"
	done
	others=$(for i in $all; do [ "$i" = "$mine" ] || echo "$i"; done)
	before=$(irq_sum "$mine")
	before_others=$(irq_sum $others)
	count=$(rd "$regs" $REG_IRQ_COUNT0)

	seq=$(($(rd "$regs" $((DMA0 + DMA_DOORBELL))) + 1))
	wr "$regs" $REG_IRQ_ENABLE 1
	wr "$regs" $((DMA0 + DMA_IRQ_ENABLE)) $DMA_IRQ_ERROR
	wr "$regs" $((DMA0 + DMA_DESC_COUNT)) 0
	wr "$regs" $((DMA0 + DMA_DOORBELL)) $seq
	ring "$iv"
	if wait_reg "$regs" $((DMA0 + DMA_DONE_SEQ)) $seq &&
	   [ "$(rd "$regs" $((DMA0 + DMA_STATUS)))" = $DMA_STATUS_ERROR ] &&
	   [ "$(rd "$regs" $((DMA0 + DMA_ERROR)))" = $DMA_ERR_COUNT ] &&
	   [ "$(rd "$regs" $REG_IRQ_COUNT0)" = $(((count + 1) & 0xffffffff)) ]; then
		pass "$name: an empty chain ends in FC_DMA_ERR_COUNT and counts IRQ 0"
	else
		fail "$name: empty chain: DONE_SEQ $(rd "$regs" $((DMA0 + DMA_DONE_SEQ))) (want $seq) STATUS $(rd "$regs" $((DMA0 + DMA_STATUS))) ERROR $(rd "$regs" $((DMA0 + DMA_ERROR))) IRQ_COUNT0 $(rd "$regs" $REG_IRQ_COUNT0) (was $count)"
	fi
	_i=0
	while [ "$(irq_sum "$mine")" = "$before" ] && [ $_i -lt 40 ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	after=$(irq_sum "$mine")
	after_others=$(irq_sum $others)
	if [ "$after" = $((before + 1)) ] && [ "$after_others" = "$before_others" ]; then
		pass "$name: the daemon's interrupt arrives as MSI-X vector 0 (IRQ $mine), once"
	else
		fail "$name: IRQ $mine counted $((after - before)) interrupts (want 1), other vectors $((after_others - before_others)) (want 0)"
	fi

	# Leave the board as found: acknowledged, engine reset, IRQs off.
	wr "$regs" $REG_IRQ_ACK0 "$(rd "$regs" $REG_IRQ_COUNT0)"
	reset=$(($(rd "$regs" $((DMA0 + DMA_RESET))) + 1))
	wr "$regs" $((DMA0 + DMA_RESET)) $reset
	wr "$regs" $((DMA0 + DMA_IRQ_ENABLE)) 0
	wr "$regs" $REG_IRQ_ENABLE 0
	ring "$iv"
	if wait_reg "$regs" $((DMA0 + DMA_RESET_ACK)) $reset &&
	   [ "$(rd "$regs" $((DMA0 + DMA_STATUS)))" = 0 ]; then
		pass "$name: engine reset acknowledged, engine idle"
	else
		fail "$name: RESET_ACK $(rd "$regs" $((DMA0 + DMA_RESET_ACK))) (want $reset) STATUS $(rd "$regs" $((DMA0 + DMA_STATUS)))"
	fi
}

for b in $(board_indexes); do
	rig_board "$b"
done

if [ $plain = 1 ]; then
	skip "rig: MSI-X: ivshmem-plain has no interrupts"
elif insmod "$msix_ko"; then
	echo "1af4 1110" > /sys/bus/pci/drivers/fcvm_msix/new_id
	for b in $(board_indexes); do
		rig_irq "$b"
	done
	if rmmod fcvm_msix; then
		gone=1
		for b in $(board_indexes); do
			[ -z "$(dev_irqs "$(board_field "$b" bdf)")" ] || gone=0
		done
		check "rig: fcvm_msix unloaded, MSI-X vectors freed" [ $gone = 1 ]
	else
		fail "rig: rmmod fcvm_msix"
	fi
else
	fail "rig: insmod fcvm_msix.ko (the MSI-X fixture)"
fi

# ---- The driver, once per pass ----

# dev_index_of B: N such that /dev/fpgacommN belongs to board B (from
# sysfs when the class device hangs off the PCI device, else B).
dev_index_of() {
	for _d in /sys/bus/pci/devices/"$(board_field "$1" bdf)"/fpgacomm[0-9]* \
		  /sys/bus/pci/devices/"$(board_field "$1" bdf)"/*/fpgacomm[0-9]*; do
		if [ -e "$_d" ]; then
			echo "${_d##*/fpgacomm}"
			return
		fi
	done
	echo "$1"
}

# run_tool NAME COMMAND...: PASS or FAIL, with the command's output indented
run_tool() {
	_name=$1
	shift
	_out=$(timeout -k 10 "$test_timeout" "$@" 2>&1)
	_rc=$?
	echo "$_out" | sed 's/^/    /'
	if [ $_rc = 0 ]; then pass "$_name"; else fail "$_name (exit $_rc)"; fi
	return $_rc
}

# libfabric's fi_pingpong through the provider (FI_PROVIDER=fpgacomm)
# between a process on each board, with its data check (-c); its control
# connection over the guest's loopback.
fi_pingpong_pair() {
	_p=$1
	if [ ! -x /fcvm/bin/fi_pingpong ] || [ ! -f /fcvm/fi/libfpgacomm-fi.so ]; then
		skip "$_p: fi_pingpong over the provider (no fi_pingpong or provider in the image)"
		return 0
	fi
	ip link set lo up 2> /dev/null || ifconfig lo 127.0.0.1 up
	for _m in msg tagged; do
		FPGACOMM_DEVICE=$2 FI_PROVIDER_PATH=/fcvm/fi FI_PROVIDER=fpgacomm \
			timeout -k 5 120 fi_pingpong -p fpgacomm -e rdm -m $_m -c \
			-I 20 -B 47592 > /tmp/pp-server.out 2>&1 &
		_srv=$!
		sleep 1
		FPGACOMM_DEVICE=$3 FI_PROVIDER_PATH=/fcvm/fi FI_PROVIDER=fpgacomm \
			run_tool "$_p: fi_pingpong -m $_m -c over the provider between two boards through the driver" \
			fi_pingpong -p fpgacomm -e rdm -m $_m -c -I 20 -P 47592 127.0.0.1
		_crc=$?
		wait $_srv
		_src=$?
		sed 's/^/    server: /' /tmp/pp-server.out
		if [ $_crc = 0 ] && [ $_src != 0 ]; then
			fail "$_p: fi_pingpong -m $_m server (exit $_src)"
		fi
	done
}

# tests/mpi/mpi_fabric as an Open MPI job of two ranks, one per board
# ($2 and $3), Open MPI's ofi MTL over the provider through the driver; the
# board counts the provider writes at close (FPGACOMM_FI_STATS) must show
# that both boards sent packets, so a job that fell back to another
# transport fails.
mpi_pair() {
	_p=$1
	if [ ! -x /fcvm/bin/orterun ] || [ ! -x /fcvm/bin/mpi_fabric ] ||
	   [ ! -f /fcvm/fi/libfpgacomm-fi.so ]; then
		skip "$_p: mpi_fabric over the provider (no Open MPI or mpi_fabric in the image)"
		return 0
	fi
	ip link set lo up 2> /dev/null || ifconfig lo 127.0.0.1 up
	# Open MPI wants a host name it can parse, not the kernel's "(none)"
	hostname fcvm
	rm -f /tmp/mpi-stats.*
	FCVM_DEV0=$2 FCVM_DEV1=$3 HOME=/root \
		run_tool "$_p: mpi_fabric as 2 MPI ranks, one per board, ofi MTL over the provider through the driver" \
		orterun --allow-run-as-root --oversubscribe -n 2 \
		--mca plm isolated --mca pml cm --mca mtl ofi --mca btl self \
		-x FI_PROVIDER=fpgacomm -x FI_PROVIDER_PATH=/fcvm/fi \
		-x FPGACOMM_FI_STATS=/tmp/mpi-stats -x FCVM_DEV0 -x FCVM_DEV1 \
		sh -c 'if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then
			export FPGACOMM_DEVICE=$FCVM_DEV0
		else
			export FPGACOMM_DEVICE=$FCVM_DEV1
		fi
		exec /fcvm/bin/mpi_fabric 1048576' || return 0
	for _r in 0 1; do
		_pk=$(sed -n 's/^tx_pkts //p' /tmp/mpi-stats.$_r 2> /dev/null)
		if [ "${_pk:-0}" -gt 0 ]; then
			pass "$_p: mpi_fabric: board $_r sent $_pk packets (FPGACOMM_FI_STATS)"
		else
			fail "$_p: mpi_fabric: board $_r wrote no counts or sent no packets: the provider was not used"
		fi
	done
}

# Recovery on the first board, which the last two steps remove and probe
# again: a stalled chain times out and the next one works; rmmod is refused
# while the device is open; a board deaf to resets leaves the device broken
# (SUBMIT -EIO) until a PCI remove and rescan; a remove with the file open
# makes its calls fail with -ENODEV and its mappings (registers, aperture,
# MEM_ALLOC buffers) fault with SIGBUS.
recovery_checks() {
	_p=$1
	_par=/sys/module/fpgacomm/parameters/dma_timeout_ms
	_dev=/dev/fpgacomm$(dev_index_of 0)
	echo 300 > $_par
	FPGACOMM_TEST_DEVICE=$_dev run_tool \
		"$_p: a stalled chain times out, the next one works" \
		test_driver_abi --timeout-test
	exec 3< "$_dev"
	if rmmod fpgacomm 2> /dev/null; then
		fail "$_p: rmmod with $_dev open succeeded"
		exec 3<&-
		return
	fi
	pass "$_p: rmmod refused while $_dev is open"
	exec 3<&-
	FPGACOMM_TEST_DEVICE=$_dev run_tool \
		"$_p: a board deaf to resets: device broken, then remove and rescan" \
		test_driver_abi --deaf-reset-test
	echo 5000 > $_par
	FPGACOMM_TEST_DEVICE=$_dev run_tool \
		"$_p: PCI remove with the file open and mapped, then rescan" \
		test_driver_abi --remove-test
}

# The first board's PCI device in sysfs, and the driver's state of it.
pci_dir_of() { readlink -f "/sys/class/fpgacomm/fpgacomm$(dev_index_of "$1")/device"; }
state_of() { cat "/sys/class/fpgacomm/fpgacomm$(dev_index_of "$1")/state" 2> /dev/null; }

# The board through the machine's life (test_lifecycle runs with the
# library's programs: reset through sysfs with chains in flight and
# mappings, AER): here the fuzzer across a reset, and suspend, refused
# while a chain runs and done when the board is idle.
lifecycle_checks() {
	_p=$1
	_dev=/dev/fpgacomm$(dev_index_of 0)
	_pci=$(pci_dir_of 0)
	if [ ! -w "$_pci/reset" ]; then
		if [ $plain = 1 ]; then
			skip "$_p: PCI reset: the plain board sits on the root bus (no bus reset, no FLR)"
		else
			fail "$_p: $_pci has no reset method (is the board behind a root port?)"
		fi
		return
	fi
	FPGACOMM_FUZZ_SECONDS=4 FPGACOMM_TEST_DEVICE=$_dev \
		timeout -k 10 "$test_timeout" test_driver_fuzz > /tmp/fuzz.out 2>&1 &
	_fuzz=$!
	sleep 2
	echo 1 > "$_pci/reset"
	_reset=$?
	wait $_fuzz
	_rc=$?
	sed 's/^/    /' /tmp/fuzz.out
	_state=$(state_of 0)
	check "$_p: the fuzzer across a PCI reset (reset $_reset, fuzzer exit $_rc, state $_state)" \
		[ "$_reset $_rc $_state" = "0 0 ok" ]

	# Suspend: devices only (pm_test), a second each.
	if [ ! -w /sys/power/pm_test ]; then
		skip "$_p: suspend: no /sys/power/pm_test (CONFIG_PM_DEBUG)"
		return
	fi
	echo devices > /sys/power/pm_test
	echo 1 > /sys/module/suspend/parameters/pm_test_delay 2> /dev/null
	fpgacomm-reg -d "$_dev" write EMU_FAULT_DMA_STALL 1 > /dev/null
	fpgacomm-dma -d "$_dev" -s 64K -i 1 --dir h2b > /tmp/held.out 2>&1 &
	_held=$!
	sleep 0.5
	dmesg -c > /dev/null
	if echo freeze > /sys/power/state 2> /dev/null; then
		fail "$_p: suspend with a chain running was not refused"
	elif dmesg | grep -q 'suspend refused'; then
		pass "$_p: suspend refused while a chain runs"
	else
		fail "$_p: suspend failed, but not by the driver's refusal"
	fi
	fpgacomm-reg -d "$_dev" write EMU_FAULT_DMA_STALL 0 > /dev/null
	wait $_held
	_rc=$?
	check "$_p: the held chain ends well after the refused suspend (exit $_rc)" \
		[ $_rc = 0 ]
	dmesg -c > /dev/null
	echo freeze > /sys/power/state
	_rc=$?
	dmesg -c | grep -i fpgacomm | sed 's/^/    dmesg: /'
	_state=$(state_of 0)
	check "$_p: suspend and resume with the boards idle (write $_rc, state $_state)" \
		[ "$_rc $_state" = "0 ok" ]
	run_tool "$_p: a chain after the resume (fpgacomm-dma --verify)" \
		fpgacomm-dma -d "$_dev" --verify
	echo none > /sys/power/pm_test
}

driver_pass() {
	p=$1
	case $p in
	poll) args="ivshmem=1 poll=1" ;;
	irq) args="ivshmem=1" ;;
	*) fail "$p: unknown pass (poll or irq)"; return ;;
	esac
	echo "== pass $p: insmod fpgacomm.ko $args"

	dmesg -c > /dev/null
	if ! insmod "$ko" $args; then
		fail "$p: insmod fpgacomm.ko $args"
		dmesg -c | sed 's/^/    dmesg: /'
		return
	fi
	log=$(dmesg -c)
	echo "$log" | grep -i fpgacomm | sed 's/^/    dmesg: /'
	pass "$p: insmod fpgacomm.ko $args"
	if [ "$p" = poll ]; then
		if echo "$log" | grep -q "unknown parameter 'poll'"; then
			fail "$p: the driver has no poll parameter"
		else
			pass "$p: the driver takes poll=1"
		fi
	fi

	irq_before=''
	for b in $(board_indexes); do
		bdf=$(board_field "$b" bdf)
		check "$p: board $b ($bdf) bound to fpgacomm" [ -e "$drv/$bdf" ]
		n=$(dev_index_of "$b")
		_i=0	# devtmpfs makes the node a little after the probe
		while [ ! -c "/dev/fpgacomm$n" ] && [ $_i -lt 40 ]; do
			sleep 0.05
			_i=$((_i + 1))
		done
		check "$p: board $b: /dev/fpgacomm$n is a character device" \
			[ -c "/dev/fpgacomm$n" ]
		irqs=$(dev_irqs "$bdf")
		if [ "$p" = irq ]; then
			n=$(requested $irqs)
			check "$p: board $b: MSI-X vectors requested ($n: IRQs $irqs)" \
				[ "$n" -ge 1 ]
		fi
		irq_before="$irq_before $(irq_sum $irqs)"
	done

	# Peer mapping (test_peer) imports dma-bufs of this fixture's pages.
	if [ ! -e /sys/module/fcvm_dmabuf ]; then
		check "$p: insmod fcvm_dmabuf.ko (dma-bufs of kernel pages)" \
			insmod "$dmabuf_ko"
	fi

	# The library's test programs on the first board.
	echo "== pass $p: scripts/run-tests.sh on /dev/fpgacomm0"
	# Under dash: busybox sh would run its own timeout applet, which has
	# no --kill-after, rather than coreutils' from PATH.
	FPGACOMM_TEST_DEVICE=/dev/fpgacomm0 FPGACOMM_TEST_TIMEOUT=$test_timeout \
		dash /fcvm/bin/run-tests.sh /fcvm/bin/test_* > /tmp/run-tests.out 2>&1
	while IFS= read -r line; do
		case $line in
		"PASS "*) pass "$p: ${line#PASS }" ;;
		"FAIL "*) fail "$p: ${line#FAIL }" ;;
		"SKIP "*) skip "$p: ${line#SKIP }" ;;
		*) echo "    $line" ;;
		esac
	done < /tmp/run-tests.out

	# Two boards of one cluster: a channel through the driver, both ways.
	if [ "$nboards" -ge 2 ] && [ -x /fcvm/bin/test_fabric_pair ]; then
		pair="/dev/fpgacomm$(dev_index_of 0) /dev/fpgacomm$(dev_index_of 1)"
		export FPGACOMM_TEST_PAIR="$pair"
		run_tool "$p: channel and put between $pair through the driver (test_fabric_pair)" \
			test_fabric_pair
		# a mismatch says which member and field disagreed
		export FPGACOMM_COLL_DEBUG=1
		run_tool "$p: collectives between $pair through the driver (test_collectives)" \
			test_collectives
		unset FPGACOMM_COLL_DEBUG
		run_tool "$p: a message cut off by an engine reset never glued onto the next, by PIO or chain (test_chan_abort)" \
			test_chan_abort
		run_tool "$p: a board reset through the driver ends the running chain at once and keeps the channel rings (test_board_reset)" \
			test_board_reset
		unset FPGACOMM_TEST_PAIR
		fi_pingpong_pair "$p" "/dev/fpgacomm$(dev_index_of 0)" \
			"/dev/fpgacomm$(dev_index_of 1)"
		mpi_pair "$p" "/dev/fpgacomm$(dev_index_of 0)" \
			"/dev/fpgacomm$(dev_index_of 1)"
		# Board 0's aperture exported, imported into board 1, written
		# by board 1's DMA (peer-to-peer).
		FPGACOMM_TEST_DEVICE=/dev/fpgacomm$(dev_index_of 0) \
		FPGACOMM_TEST_PAIR="$pair" FPGACOMM_TEST_FILTER=test_export_import \
			run_tool "$p: board 0's aperture written by board 1's DMA through a dma-buf (test_peer)" \
			test_peer
		# A dma-buf on board 1 in its peer window, written by board 0.
		FPGACOMM_TEST_PAIR="$pair" \
			run_tool "$p: board 0's PUT into a dma-buf in board 1's peer window; revoked and bad ranges refused (test_peer_window)" \
			test_peer_window
		FPGACOMM_TEST_DEVICE=/dev/fpgacomm$(dev_index_of 0) \
		FPGACOMM_TEST_PAIR="$pair" \
			run_tool "$p: board 0 removed while board 1 imports its aperture and it is mapped, then rescan (test_peer --remove-test)" \
			test_peer --remove-test
		FPGACOMM_TEST_PAIR="$pair" \
			run_tool "$p: board 1 removed with a dma-buf in its peer window: board 0's PUT refused, the import let go; rescanned, it serves again (test_peer_window --remove-test)" \
			test_peer_window --remove-test
	fi

	# The boards outlive each test program, unlike an in-process emulated
	# board: a fault knob a test left set would fail every later step.
	for b in $(board_indexes); do
		n=$(dev_index_of "$b")
		knobs=$(fpgacomm-reg -d "/dev/fpgacomm$n" read EMU_FAULT_DMA_STALL \
			read EMU_FAULT_DMA_ERROR 2>&1 | tr '\n' ' ')
		if [ "$knobs" = "0x00000000 0x00000000 " ]; then
			pass "$p: board $b: the test programs left no fault knob set"
		else
			fail "$p: board $b: fault knobs STALL, ERROR after the test programs: $knobs(cleared now)"
			fpgacomm-reg -d "/dev/fpgacomm$n" write EMU_FAULT_DMA_STALL 0 \
				write EMU_FAULT_DMA_ERROR 0
		fi
	done

	for b in $(board_indexes); do
		n=$(dev_index_of "$b")
		node=$(board_field "$b" node)
		if run_tool "$p: fpgacomm-info -d /dev/fpgacomm$n" \
			fpgacomm-info -d "/dev/fpgacomm$n"; then
			got=$(echo "$_out" | awk '$1 == "node" && $2 == "id" { print $3 }')
			check "$p: board $b: /dev/fpgacomm$n reports node $node (got ${got:-none})" \
				[ "$got" = "$node" ]
		fi
		run_tool "$p: fpgacomm-dma -d /dev/fpgacomm$n --verify" \
			fpgacomm-dma -d "/dev/fpgacomm$n" --verify
	done

	if [ "$p" = irq ]; then
		set -- $irq_before
		for b in $(board_indexes); do
			irqs=$(dev_irqs "$(board_field "$b" bdf)")
			now=$(irq_sum $irqs)
			check "$p: board $b: interrupts delivered during the pass ($((now - $1)))" \
				[ "$now" -gt "$1" ]
			shift
		done
	fi

	lifecycle_checks "$p"
	recovery_checks "$p"

	dmesg -c > /dev/null
	if rmmod fpgacomm; then
		dmesg -c | grep -i fpgacomm | sed 's/^/    dmesg: /'
		left=''
		[ -e /sys/module/fpgacomm ] && left="$left module"
		grep -q fpgacomm /proc/iomem && left="$left BARs"
		ls /dev/fpgacomm* > /dev/null 2>&1 && left="$left /dev/fpgacomm*"
		for b in $(board_indexes); do
			[ -z "$(dev_irqs "$(board_field "$b" bdf)")" ] ||
				left="$left vectors($b)"
		done
		if [ -e /sys/module/fcvm_dmabuf ]; then
			for _c in live_bufs live_attach; do
				_n=$(cat /sys/module/fcvm_dmabuf/parameters/$_c)
				[ "$_n" = 0 ] || left="$left fcvm_dmabuf:$_c=$_n"
			done
			rmmod fcvm_dmabuf || left="$left fcvm_dmabuf(busy)"
		fi
		if [ -z "$left" ]; then
			pass "$p: rmmod fpgacomm leaves nothing behind"
		else
			fail "$p: after rmmod fpgacomm, left:$left"
		fi
	else
		fail "$p: rmmod fpgacomm"
	fi
}

for p in $passes; do
	driver_pass "$p"
done

echo "guest: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
