#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Guest half of bench-fabric-driver.sh (busybox sh, run by the VM's init).
# Two boards of one emulated cluster, /dev/fpgacomm0 and /dev/fpgacomm1,
# behind fpgacomm.ko (poll=1). Per round, in alternating order, channel
# ping-pong between two processes, one per board (fpgacomm-bench pingpong:
# rank 0 on board 0, rank 1 on board 1), with the receive path
#   eq     the board's event queue (FC_IOC_EQ; the default)
#   rings  a ring per channel (FPGACOMM_EQ=0)
# then the system calls of rank 0 under strace -f -c at two iteration
# counts (the difference is the cost of the added round trips alone).
#
# usage: bench-fabric-driver-guest.sh [--rounds N] [--iters N]
#                                     [--sizes LIST] [--strace-iters N]
# Prints machine-readable lines for the host:
#   LAT mode=M round=R size=S us=U
#   COUNT mode=M iters=N syscalls=N ioctls=N
# and "FAIL ..." lines; exit 0 when every run worked, else 1.
#
# shellcheck disable=SC2086,SC2046 # tool arguments and register values
# are split into words on purpose

ko=/fcvm/ko/fpgacomm.ko
rounds=5 iters=500 sizes=8,64,1K,4K strace_iters=200

while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	--strace-iters) strace_iters=$2; shift 2 ;;
	*) echo "FAIL bench-fabric-driver-guest: unknown argument $1"; exit 1 ;;
	esac
done
failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

eq_env() { [ "$1" = rings ] && echo 0 || echo 1; }

# pingpong MODE ITERS [WRAPPER...]: rank 1 in the background, rank 0 here
# (under WRAPPER); rank 0's output on stdout.
pingpong() {
	_eq=$(eq_env "$1")
	_it=$2
	shift 2
	FPGACOMM_EQ=$_eq fpgacomm-bench pingpong -d /dev/fpgacomm1 \
		-s "$sizes" -i "$_it" > /tmp/rank1.out 2>&1 &
	_r1=$!
	# Through the driver nothing tells rank 0 when rank 1's endpoints
	# are on, and a packet for one that is off is dropped: give it time.
	sleep 1
	FPGACOMM_EQ=$_eq "$@" fpgacomm-bench pingpong -d /dev/fpgacomm0 \
		-s "$sizes" -i "$_it"
	_rc=$?
	wait $_r1 || _rc=1
	return $_rc
}

if ! insmod "$ko" ivshmem=1 poll=1; then
	fail "insmod fpgacomm.ko ivshmem=1 poll=1"
	exit 1
fi
_i=0
while [ ! -c /dev/fpgacomm1 ] && [ $_i -lt 40 ]; do
	sleep 0.05
	_i=$((_i + 1))
done

r=1
while [ $r -le "$rounds" ]; do
	if [ $((r % 2)) = 1 ]; then order='eq rings'; else order='rings eq'; fi
	for m in $order; do
		if ! out=$(pingpong $m "$iters" 2>&1); then
			echo "$out" | sed 's/^/    /'
			for b in 0 1; do
				echo "    board $b: EQ_TAIL EQ_HEAD EQ_STALLS" \
					"ROUTER_EJECT_DROPS CHAN0_DROPS:" \
					$(fpgacomm-reg -d /dev/fpgacomm$b read EQ_TAIL \
					  read EQ_HEAD read EQ_STALLS \
					  read ROUTER_EJECT_DROPS read 0x6018)
			done
			fail "$m round $r: fpgacomm-bench pingpong"
			continue
		fi
		echo "$out" | awk -v m=$m -v r=$r \
			'/^[0-9]/ { printf "LAT mode=%s round=%s size=%s us=%s\n", m, r, $1, $2 }'
	done
	r=$((r + 1))
done

# System calls of rank 0: a run of N and one of 2N round trips per size.
for m in eq rings; do
	for n in "$strace_iters" $((strace_iters * 2)); do
		if ! pingpong $m "$n" strace -f -c -o /tmp/strace.out > /dev/null 2>&1; then
			fail "$m: strace of fpgacomm-bench pingpong"
			continue
		fi
		awk -v m=$m -v n=$n '
			$NF == "ioctl" { io = $4 }
			$NF == "total" { sc = $4 }
			END { printf "COUNT mode=%s iters=%s syscalls=%s ioctls=%s\n", m, n, sc, io }' \
			/tmp/strace.out
	done
done

rmmod fpgacomm || fail "rmmod fpgacomm"
[ "$failed" = 0 ]
