#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Guest half of run-vm-tests.sh's shutdown check (busybox sh, run by the
# VM's init): loads fpgacomm.ko on every board, holds a chain running on
# the first (the stall knob) and keeps chains moving data on the others,
# then reboots the machine under them. The driver's .shutdown must stop
# every board (one "shutdown:" line each in the kernel log); the host
# checks that and that no board reached guest memory or raised an
# interrupt after its last board reset (fpgacomm-emud -v logs both).
#
# usage: vm-shutdown-guest.sh NBOARDS
# Prints PASS/FAIL lines and its own FCVM-TAINT and FCVM-EXIT lines (init
# never gets to: the reboot ends the VM).

n=$1
insmod /fcvm/ko/fpgacomm.ko ivshmem=1 || { echo "FAIL shutdown: insmod fpgacomm.ko"; exit 1; }
i=0
while [ ! -c "/dev/fpgacomm$((n - 1))" ] && [ $i -lt 40 ]; do
	sleep 0.05
	i=$((i + 1))
done
fpgacomm-reg -d /dev/fpgacomm0 write EMU_FAULT_DMA_STALL 1 > /dev/null
fpgacomm-dma -d /dev/fpgacomm0 -s 64K -i 1 --dir h2b > /dev/null 2>&1 &
b=1
while [ $b -lt "$n" ]; do
	(while fpgacomm-dma -d "/dev/fpgacomm$b" -s 1M -n 4 -i 20 > /dev/null 2>&1; do :; done) &
	b=$((b + 1))
done
sleep 1
echo "PASS shutdown: a chain held on board 0, chains moving data on the others; rebooting"
echo "FCVM-TAINT $(cat /proc/sys/kernel/tainted)"
echo "FCVM-EXIT 0"
reboot -f
sleep 30
