#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Small-message latency through the kernel driver, in a VM: channel
# ping-pong (fpgacomm-bench pingpong) between two processes on two boards
# of one emulated cluster (two fpgacomm-emud behind ivshmem-doorbell
# devices, full:2, driver with poll=1), with the receive path through the
# board's event queue (FC_IOC_EQ: entries polled in the process's own
# mapping, HEAD given back a quarter of the queue at a time) against a ring
# per channel (FPGACOMM_EQ=0: TAIL and the event counters read with
# REG_READ, HEAD moved with CHAN_HEAD). Builds the tree and fpgacomm.ko,
# boots the VM once and runs bench-fabric-driver-guest.sh in it, which
# alternates the two over several rounds and counts rank 0's system calls
# with strace. Prints a table of medians.
#
# usage: scripts/vm/bench-fabric-driver.sh [options]
#   --kver KVER        guest kernel (default: the newest with headers)
#   --rounds N         timed rounds per mode (default $FPGACOMM_BENCH_ROUNDS,
#                      else 5)
#   --iters N          round trips per size and run (default 500)
#   --sizes LIST       message sizes (default 8,64,1K,4K)
#   --smp N            guest CPUs (default 2: one per rank)
#   --timeout SEC      the whole VM (default 900)
#   --logdir DIR       keep the VM's logs there (output.log has every raw
#                      measurement)
#   -v, --verbose      print the guest's raw output too
#
# Latency is half the round trip, as fpgacomm-bench prints it, in the
# guest's CLOCK_MONOTONIC. Under TCG the guest runs 10-100x slower than on
# hardware: the ratio is what matters. System calls are per round trip of
# rank 0 (a send and a receive): strace -f -c counts of a run with 2N round
# trips per size minus one with N, over the N * sizes added round trips.
# Exit status: 0 done, 77 skipped (no qemu, kernel, headers or strace),
# 1 failed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
prog=${0##*/}

kver='' rounds=${FPGACOMM_BENCH_ROUNDS:-5} iters=500 sizes=8,64,1K,4K smp=2
timeout=900 logdir='' verbose=0
while [ $# -gt 0 ]; do
	case $1 in
	--kver) kver=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--logdir) logdir=$2; shift 2 ;;
	-v|--verbose) verbose=1; shift ;;
	-h|--help) sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done

skip() {
	echo "$prog: SKIP: $*" >&2
	exit 77
}
die() {
	echo "$prog: FAIL: $*" >&2
	exit 1
}

# shellcheck source=scripts/vm/common.sh
. "$here/common.sh"
bench_check_counts
bench_setup fbench "fcvm-fbench-$$"
bench_two_boards
echo "$prog: booting $kver (TCG, $smp vCPUs) with two boards;" \
	"$rounds rounds of $iters round trips per size and mode" >&2
start=$SECONDS
rc=0
"$here/run-vm.sh" --kver "$kver" --smp "$smp" --timeout "$timeout" \
	--logdir "$logdir" "${board_args[@]}" \
	--module "$top/driver/fpgacomm.ko" \
	--prog "$top/build/tools/fpgacomm-bench" --prog "$strace" \
	--prog "$top/build/tools/fpgacomm-reg" \
	-- "$here/bench-fabric-driver-guest.sh" --rounds "$rounds" \
	--iters "$iters" --sizes "$sizes" > "$work/output" 2>&1 || rc=$?
bench_check_run "$rc"

# ---- The table: medians over rounds, rings/eq per round ----
nsizes=$(echo "$sizes" | tr ',' '\n' | grep -c .)
awk -v nsizes="$nsizes" '
function kv(line, key,    a, i, n, p) {
	n = split(line, a, " ")
	for (i = 1; i <= n; i++) {
		p = index(a[i], "=")
		if (p && substr(a[i], 1, p - 1) == key)
			return substr(a[i], p + 1)
	}
	return ""
}
function median(list,    v, n, i, j, t) {
	n = split(list, v, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
			t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
		}
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function minmax(list, want,    v, n, i, r) {
	n = split(list, v, " ")
	r = v[1]
	for (i = 2; i <= n; i++)
		if (want == "min" ? v[i] + 0 < r + 0 : v[i] + 0 > r + 0)
			r = v[i]
	return r
}
/^LAT / {
	m = kv($0, "mode"); r = kv($0, "round"); s = kv($0, "size")
	t[m, s] = t[m, s] " " kv($0, "us")
	per[m, s, r] = kv($0, "us")
	if (!(s in seen)) { seen[s] = 1; order[++ns] = s }
	if (r > rounds) rounds = r
}
/^COUNT / {
	m = kv($0, "mode")
	k = ++nc[m]
	ci[m, k] = kv($0, "iters"); cs[m, k] = kv($0, "syscalls")
	cio[m, k] = kv($0, "ioctls")
}
END {
	printf "%-8s %12s %12s %18s\n", "size", "eq us", "rings us",
		"rings/eq (range)"
	for (i = 1; i <= ns; i++) {
		s = order[i]
		ratios = ""
		for (r = 1; r <= rounds; r++)
			if ((("eq", s, r) in per) && (("rings", s, r) in per) &&
			    per["eq", s, r] > 0)
				ratios = ratios " " per["rings", s, r] / per["eq", s, r]
		printf "%-8s %12.2f %12.2f %7.2f (%.2f-%.2f)\n", s,
			median(t["eq", s]), median(t["rings", s]), median(ratios),
			minmax(ratios, "min"), minmax(ratios, "max")
	}
	printf "\nrank 0, per round trip (send + receive):\n"
	printf "%-8s %10s %10s\n", "mode", "syscalls", "ioctls"
	for (j = 1; j <= 2; j++) {
		m = j == 1 ? "eq" : "rings"
		if (nc[m] < 2) {
			printf "%-8s %10s %10s\n", m, "?", "?"
			continue
		}
		dx = (ci[m, 2] - ci[m, 1]) * nsizes
		printf "%-8s %10.2f %10.2f\n", m, (cs[m, 2] - cs[m, 1]) / dx,
			(cio[m, 2] - cio[m, 1]) / dx
	}
}' "$work/output" > "$work/table"
cat "$work/table"
echo "$prog: $((SECONDS - start))s (guest kernel $kver, TCG)" >&2
