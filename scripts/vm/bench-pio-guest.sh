#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Guest half of bench-pio.sh (busybox sh, run by the VM's init). Two boards,
# nodes 0 and 1 of one emulated cluster, each an ivshmem-doorbell device
# served by fpgacomm-emud. Channel ping-pong between them through the
# driver (fpgacomm-bench pingpong, one process per board, MSI-X), small
# messages through the PIO window, two ways in alternating order:
#   kick   FPGACOMM_PIO_KICK=1: a PIO_KICK ioctl after every PIO_TAIL write,
#          as the library did before FC_PIO_WATCH
#   watch  a kick only when the board says it is not watching (FC_PIO_WATCH)
# and 8-byte messages streamed (fpgacomm-bench bw), then ioctls per round trip under strace -f -c (the difference between
# two iteration counts, so that setup drops out).
#
# usage: bench-pio-guest.sh [--rounds N] [--iters N] [--sizes LIST]
# Prints, one line per measurement:
#   PP mode=M round=R size=S us=U      (half a round trip, microseconds)
#   BW mode=M round=R size=8 mbs=B     (8-byte messages streamed, MB/s)
#   COUNT mode=M iters=N ioctls=C syscalls=T
#   KICKS mode=M iters=N kicks=K       (PIO_KICK ioctls of rank 0)
# and "FAIL ..." lines; exit 0 when every run worked, else 1.
#
# shellcheck disable=SC2086 # option lists are split into words on purpose

ko=/fcvm/ko/fpgacomm.ko
rounds=5 iters=300 sizes=8,1K
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	*) echo "FAIL bench-pio-guest: unknown argument $1"; exit 1 ;;
	esac
done
failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

insmod "$ko" ivshmem=1 || { fail "insmod fpgacomm.ko ivshmem=1"; exit 1; }
_i=0	# devtmpfs makes the nodes a little after the probe
while { [ ! -c /dev/fpgacomm0 ] || [ ! -c /dev/fpgacomm1 ]; } && [ $_i -lt 40 ]; do
	sleep 0.05
	_i=$((_i + 1))
done
lead='' peer=''
for n in 0 1; do
	case $(cat /sys/class/fpgacomm/fpgacomm$n/node_id 2>/dev/null) in
	0) lead=/dev/fpgacomm$n ;;
	1) peer=/dev/fpgacomm$n ;;
	esac
done
[ -n "$lead" ] && [ -n "$peer" ] || { fail "no boards of nodes 0 and 1"; exit 1; }
echo "MODE irq_mode=$(cat /sys/class/fpgacomm/fpgacomm0/irq_mode) lead=$lead peer=$peer"

kick_of() { [ "$1" = kick ] && echo 1 || echo 0; }

# settle: a pause between runs, so that the last run's files are gone
# and a new rank gets its board's rings (a file still closing holds them:
# that rank would be in no world).
settle() {
	sleep 1
}

# ready DEV: wait until a rank has opened DEV. Through the driver a board's
# endpoints are off until its program opens it, and a packet that comes
# earlier is dropped (CHAN_DROPS): rank 0 must not send before that.
ready() {
	_i=0
	# CHAN0_CTRL's ENABLE bit (EQ may be set beside it)
	while [ $(($(fpgacomm-reg -d "$1" read CHAN0_CTRL 2>/dev/null || echo 0) & 1)) != 1 ]; do
		_i=$((_i + 1))
		[ $_i -lt 600 ] || { fail "rank 1 never opened $1"; return 1; }
		sleep 0.1
	done
}

# pingpong MODE ROUND: one run of both ranks, PP lines from rank 0's table.
pingpong() {
	settle
	FPGACOMM_PIO_KICK=$(kick_of "$1") fpgacomm-bench pingpong -d "$peer" \
		-s "$sizes" -i "$iters" > /tmp/peer.out 2>&1 &
	_pid=$!
	ready "$peer"
	if ! FPGACOMM_PIO_KICK=$(kick_of "$1") fpgacomm-bench pingpong \
		-d "$lead" -s "$sizes" -i "$iters" > /tmp/lead.out 2>&1; then
		sed 's/^/    /' /tmp/lead.out
		fail "$1 round $2: fpgacomm-bench pingpong (rank 0)"
	fi
	wait $_pid || { sed 's/^/    /' /tmp/peer.out; fail "$1 round $2: rank 1"; }
	grep -v '^#' /tmp/lead.out | while read -r _s _us; do
		echo "PP mode=$1 round=$2 size=$_s us=$_us"
	done
}

# stream MODE ROUND: 8-byte messages in windows (fpgacomm-bench bw), BW lines.
stream() {
	settle
	FPGACOMM_PIO_KICK=$(kick_of "$1") fpgacomm-bench bw -d "$peer" \
		-s 8 -i "$iters" > /tmp/peer.out 2>&1 &
	_pid=$!
	ready "$peer"
	if ! FPGACOMM_PIO_KICK=$(kick_of "$1") fpgacomm-bench bw \
		-d "$lead" -s 8 -i "$iters" > /tmp/lead.out 2>&1; then
		sed 's/^/    /' /tmp/lead.out
		fail "$1 round $2: fpgacomm-bench bw (rank 0)"
	fi
	wait $_pid || { sed 's/^/    /' /tmp/peer.out; fail "$1 round $2: bw rank 1"; }
	grep -v '^#' /tmp/lead.out | while read -r _s _mbs; do
		echo "BW mode=$1 round=$2 size=$_s mbs=$_mbs"
	done
}

# calls FILE NAME: the calls column of NAME (or total) in strace -c output
calls() {
	awk -v name="$2" '$NF == name && $4 ~ /^[0-9]+$/ { print $4; f = 1 }
		END { if (!f) print 0 }' "$1"
}

# counted MODE: rank 0 under strace -f -c at ITERS and twice that, 8 bytes.
counted() {
	for _k in "$iters" $((iters * 2)); do
		settle
		FPGACOMM_PIO_KICK=$(kick_of "$1") fpgacomm-bench pingpong \
			-d "$peer" -s 8 -i "$_k" > /tmp/peer.out 2>&1 &
		_pid=$!
		ready "$peer"
		if ! FPGACOMM_PIO_KICK=$(kick_of "$1") strace -f -c -o /tmp/strace.c \
			fpgacomm-bench pingpong -d "$lead" -s 8 -i "$_k" \
			> /tmp/lead.out 2>&1; then
			sed 's/^/    /' /tmp/lead.out
			fail "$1: strace -c fpgacomm-bench -i $_k"
		fi
		wait $_pid || fail "$1: rank 1 under strace"
		echo "COUNT mode=$1 iters=$_k ioctls=$(calls /tmp/strace.c ioctl)" \
			"syscalls=$(calls /tmp/strace.c total)"
	done
}

# kicks MODE: rank 0 under strace -e trace=ioctl: PIO_KICKs (nr 0x0c).
kicks() {
	settle
	FPGACOMM_PIO_KICK=$(kick_of "$1") fpgacomm-bench pingpong \
		-d "$peer" -s 8 -i "$iters" > /tmp/peer.out 2>&1 &
	_pid=$!
	ready "$peer"
	FPGACOMM_PIO_KICK=$(kick_of "$1") strace -f -e trace=ioctl \
		-o /tmp/strace.t fpgacomm-bench pingpong -d "$lead" -s 8 \
		-i "$iters" > /tmp/lead.out 2>&1 || fail "$1: strace -e ioctl"
	wait $_pid || fail "$1: rank 1 under strace -e ioctl"
	echo "KICKS mode=$1 iters=$iters kicks=$(grep -c '0xfc, 0xc,' /tmp/strace.t)"
}

pingpong watch 0 > /dev/null	# warm-up: the daemons fault in memory
r=1
while [ $r -le "$rounds" ]; do
	if [ $((r % 2)) = 1 ]; then
		pingpong kick $r
		pingpong watch $r
		stream kick $r
		stream watch $r
	else
		pingpong watch $r
		pingpong kick $r
		stream watch $r
		stream kick $r
	fi
	r=$((r + 1))
done
counted kick
counted watch
kicks kick
kicks watch
rmmod fpgacomm || fail "rmmod fpgacomm"
[ "$failed" = 0 ]
