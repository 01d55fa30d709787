#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Guest half of bench-driver.sh (busybox sh, run by the VM's init). One
# board, /dev/fpgacomm0, an ivshmem-doorbell device served by fpgacomm-emud.
# Per mode (poll: insmod fpgacomm.ko ivshmem=1 poll=1; irq: ivshmem=1, MSI-X)
# it times two ways of moving the same 4 KiB transfers host->board through
# the driver with fpgacomm-dma, in alternating order round by round:
#   chain    chains of 255 x 4 KiB (-n 255 -i ITERS)
#   singles  single 4 KiB transfers (-n 1 -i 255*ITERS)
# and then counts their system calls under strace: strace -f -c at two
# iteration counts (the difference is the cost of the added transfers
# alone), and strace -e trace=ioctl for which ioctls they were.
#
# usage: bench-driver-guest.sh [--rounds N] [--iters N] [--strace-iters N]
#                              [--mode poll|irq]...
# Prints machine-readable lines for the host (one per measurement):
#   TIME mode=M who=W round=R transfers=T secs=S doorbells=D chains=C irqs=I
#   COUNT mode=M who=W transfers=T syscalls=N ioctls=N
#   IOCTLS mode=M who=W transfers=T INFO=n REG_READ=n SUBMIT=n WAIT=n ...
# and "FAIL ..." lines; exit 0 when every run worked, else 1.
#
# shellcheck disable=SC2086,SC2046 # lists of IRQs, module and tool
# arguments are split into words on purpose

ko=/fcvm/ko/fpgacomm.ko
dev=/dev/fpgacomm0
cls=/sys/class/fpgacomm/fpgacomm0
rounds=5 iters=20 strace_iters=2 modes=''

while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--strace-iters) strace_iters=$2; shift 2 ;;
	--mode) modes="$modes $2"; shift 2 ;;
	*) echo "FAIL bench-driver-guest: unknown argument $1"; exit 1 ;;
	esac
done
modes=${modes:-poll irq}
failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

# The board's MSI/MSI-X IRQ numbers, and interrupts counted on them.
bdf=$(basename "$(readlink -f "$cls/device" 2>/dev/null)" 2>/dev/null)
dev_irqs() {
	for _f in "/sys/bus/pci/devices/$bdf/msi_irqs"/*; do
		[ -e "$_f" ] && echo "${_f##*/}"
	done
}
irq_sum() {
	awk -v list=" $(dev_irqs | tr '\n' ' ') " '
		{ n = $1; sub(":", "", n) }
		index(list, " " n " ") {
			for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++)
				s += $i
		}
		END { print s + 0 }' /proc/interrupts
}

# dma_args WHO ITERS: fpgacomm-dma's arguments for ITERS rounds of 255
# transfers, as one chain each (chain) or as 255 chains of one (singles).
dma_args() {
	case $1 in
	chain) echo "-d $dev -s 4K -n 255 -i $2 --dir h2b --verify --json" ;;
	singles) echo "-d $dev -s 4K -n 1 -i $(($2 * 255)) --dir h2b --verify --json" ;;
	esac
}
# field JSON KEY: the number after "KEY": in the "h2b" line
field() {
	echo "$1" | grep '"h2b"' | sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p"
}

# timed MODE WHO ROUND: one timed run, one TIME line.
timed() {
	_before=$(irq_sum)
	if ! _json=$(fpgacomm-dma $(dma_args "$2" "$iters") 2>&1); then
		echo "$_json" | sed 's/^/    /'
		fail "$1 $2 round $3: fpgacomm-dma"
		return
	fi
	_irqs=$(($(irq_sum) - _before))
	if ! echo "$_json" | grep -q '"verify": "ok"'; then
		fail "$1 $2 round $3: data read back did not verify"
		return
	fi
	# Chains run by the tool: a warm-up, the timed ones, and one
	# board->host chain to read the data back for --verify.
	case $2 in
	chain) _n=$iters ;;
	singles) _n=$((iters * 255)) ;;
	esac
	echo "TIME mode=$1 who=$2 round=$3 transfers=$((iters * 255))" \
		"secs=$(field "$_json" seconds) doorbells=$(field "$_json" doorbells)" \
		"chains=$((_n + 2)) irqs=$_irqs"
}

# calls FILE NAME: the calls column of NAME (or total) in strace -c output
calls() {
	awk -v name="$2" '$NF == name && $4 ~ /^[0-9]+$/ { print $4; f = 1 }
		END { if (!f) print 0 }' "$1"
}

# counted MODE WHO: strace -f -c at strace_iters and twice that, then
# strace -e trace=ioctl at twice that; COUNT and IOCTLS lines.
counted() {
	for _k in "$strace_iters" $((strace_iters * 2)); do
		if ! strace -f -c -o /tmp/strace.c fpgacomm-dma \
			$(dma_args "$2" "$_k") > /tmp/strace.out 2>&1; then
			sed 's/^/    /' /tmp/strace.out /tmp/strace.c
			fail "$1 $2: strace -c fpgacomm-dma -i $_k"
			return
		fi
		echo "== $1 $2: strace -f -c fpgacomm-dma $(dma_args "$2" "$_k")"
		sed 's/^/    /' /tmp/strace.c
		echo "COUNT mode=$1 who=$2 transfers=$((_k * 255))" \
			"syscalls=$(calls /tmp/strace.c total)" \
			"ioctls=$(calls /tmp/strace.c ioctl)"
	done
	if ! strace -f -e trace=ioctl -o /tmp/strace.t fpgacomm-dma \
		$(dma_args "$2" "$_k") > /tmp/strace.out 2>&1; then
		sed 's/^/    /' /tmp/strace.out
		fail "$1 $2: strace -e trace=ioctl fpgacomm-dma -i $_k"
		return
	fi
	# _IOC(dir, 0xfc, NR, size): NR names the command (uapi/fpgacomm.h).
	_split=$(awk '
		/ioctl\(/ {
			if (match($0, /0xfc, (0x)?[0-9a-f]+,/)) {
				s = substr($0, RSTART + 6, RLENGTH - 7)
				n = (s ~ /^0x/) ? index("0123456789abcdef", substr(s, 3)) - 1 : s + 0
				c[n]++
			} else
				other++
		}
		END {
			split("INFO MEM_REGISTER MEM_UNREGISTER MEM_ALLOC SUBMIT WAIT RESET REG_READ REG_WRITE", nm)
			for (i = 0; i < 9; i++)
				if (c[i]) printf "%s=%d ", nm[i + 1], c[i]
			printf "other=%d\n", other + 0
		}' /tmp/strace.t)
	echo "IOCTLS mode=$1 who=$2 transfers=$((_k * 255)) $_split"
}

for m in $modes; do
	case $m in
	poll) args="ivshmem=1 poll=1" want=poll ;;
	irq) args="ivshmem=1" want=msix ;;
	*) fail "unknown mode $m (poll or irq)"; continue ;;
	esac
	echo "== mode $m: insmod fpgacomm.ko $args"
	if ! insmod "$ko" $args; then
		fail "$m: insmod fpgacomm.ko $args"
		continue
	fi
	_i=0	# devtmpfs makes the node a little after the probe
	while [ ! -c "$dev" ] && [ $_i -lt 40 ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	bdf=$(basename "$(readlink -f "$cls/device")")
	mode=$(cat "$cls/irq_mode" 2>/dev/null)
	echo "MODE mode=$m irq_mode=$mode bdf=$bdf vectors=$(dev_irqs | wc -l)"
	if [ "$mode" != "$want" ]; then
		fail "$m: irq_mode is '$mode', want '$want'"
		rmmod fpgacomm
		continue
	fi

	# Warm-up, not reported: the daemon faults in board memory.
	fpgacomm-dma $(dma_args chain 1) > /dev/null 2>&1
	fpgacomm-dma $(dma_args singles 1) > /dev/null 2>&1
	r=1
	while [ $r -le "$rounds" ]; do
		if [ $((r % 2)) = 1 ]; then
			timed "$m" chain $r
			timed "$m" singles $r
		else
			timed "$m" singles $r
			timed "$m" chain $r
		fi
		r=$((r + 1))
	done
	counted "$m" chain
	counted "$m" singles
	rmmod fpgacomm || fail "$m: rmmod fpgacomm"
done

[ "$failed" = 0 ]
