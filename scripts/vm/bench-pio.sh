#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Small-message latency through the kernel driver, in a VM, with and
# without a system call per PIO send: two boards (fpgacomm-emud behind
# ivshmem-doorbell devices, nodes 0 and 1 of one emulated cluster),
# fpgacomm-bench pingpong between them through fpgacomm.ko (MSI-X), the
# small messages through the PIO window. "kick" follows every PIO_TAIL
# write with FC_IOC_PIO_KICK (FPGACOMM_PIO_KICK=1, as the library did
# before FC_PIO_WATCH); "watch" kicks only when the board's FC_PIO_WATCH
# reads zero (the daemon sleeping). Both in one VM, alternating round by
# round (bench-pio-guest.sh). Prints medians per size, their ratio, 8-byte
# messages streamed (fpgacomm-bench bw), and ioctls per round trip (strace
# -f -c of rank 0, marginal). Rank 0 starts once rank 1 has opened its
# board: through the driver a board's endpoints are off until then, and a
# message that comes earlier is dropped (CHAN_DROPS), which left both
# ranks waiting for the 60 s timeout.
#
# usage: scripts/vm/bench-pio.sh [options]
#   --kver KVER        guest kernel (default: the newest with headers)
#   --rounds N         timed rounds per way (default $FPGACOMM_BENCH_ROUNDS,
#                      else 5)
#   --iters N          round trips per size and run (default 300)
#   --sizes LIST       message sizes (default 8,1K; at most 2880 B go by PIO)
#   --smp N            guest CPUs (default 2: one per rank)
#   --timeout SEC      the whole VM (default 600)
#   --logdir DIR       keep the VM's logs there
#   -v, --verbose      print the guest's raw output too
#
# Under TCG the guest runs 10-100x slower than on hardware: compare the
# two ways, not the absolute numbers. Exit status: 0 done, 77 skipped (no
# qemu, kernel, headers or strace), 1 failed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
prog=${0##*/}

kver='' rounds=${FPGACOMM_BENCH_ROUNDS:-5} iters=300 sizes=8,1K smp=2
timeout=600 logdir='' verbose=0
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
bench_setup pio "fcvm-pio-$$"
bench_two_boards
echo "$prog: booting $kver (TCG, $smp vCPUs) with two boards;" \
	"$rounds rounds of $iters round trips per way and size" >&2
rc=0
"$here/run-vm.sh" --kver "$kver" --smp "$smp" --timeout "$timeout" \
	--logdir "$logdir" "${board_args[@]}" \
	--module "$top/driver/fpgacomm.ko" \
	--prog "$top/build/tools/fpgacomm-bench" --prog "$strace" \
	--prog "$top/build/tools/fpgacomm-reg" \
	-- "$here/bench-pio-guest.sh" --rounds "$rounds" --iters "$iters" \
	--sizes "$sizes" > "$work/output" 2>&1 || rc=$?
bench_check_run "$rc"

# ---- The table: medians over rounds, the ratio kick / watch ----
awk '
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
/^PP / {
	m = kv($0, "mode"); s = kv($0, "size"); r = kv($0, "round")
	t[m, s] = t[m, s] " " kv($0, "us")
	per[m, s, r] = kv($0, "us")
	if (!(s in seen)) { seen[s] = 1; order[++ns] = s }
	if (r > maxr) maxr = r
}
/^BW / {
	m = kv($0, "mode"); r = kv($0, "round")
	b[m] = b[m] " " kv($0, "mbs"); bper[m, r] = kv($0, "mbs")
}
/^KICKS / { kicks[kv($0, "mode")] = kv($0, "kicks") / kv($0, "iters") }
/^COUNT / {
	m = kv($0, "mode"); k = ++nc[m]
	ci[m, k] = kv($0, "iters"); cc[m, k] = kv($0, "ioctls")
}
END {
	printf "%-8s %12s %12s %18s\n", "size", "kick (us)", "watch (us)",
		"kick/watch (range)"
	for (i = 1; i <= ns; i++) {
		s = order[i]; lo = 1e9; hi = 0; rat = ""
		for (r = 1; r <= maxr; r++)
			if (("kick", s, r) in per && ("watch", s, r) in per) {
				q = per["kick", s, r] / per["watch", s, r]
				rat = rat " " q
				if (q < lo) lo = q
				if (q > hi) hi = q
			}
		printf "%-8s %12.1f %12.1f %7.2f (%.2f-%.2f)\n", s,
			median(t["kick", s]), median(t["watch", s]),
			median(rat), lo, hi
	}
	if (b["kick"] != "" && b["watch"] != "") {
		rat = ""
		for (r = 1; r <= maxr; r++)
			if (("kick", r) in bper && ("watch", r) in bper && bper["kick", r] > 0)
				rat = rat " " bper["watch", r] / bper["kick", r]
		printf "8 B streamed: kick %.3f MB/s, watch %.3f MB/s, watch/kick %.2f\n",
			median(b["kick"]), median(b["watch"]), median(rat)
	}
	for (j = 1; j <= 2; j++) {
		m = j == 1 ? "kick" : "watch"
		if (m in kicks)
			printf "PIO_KICKs per 8 B round trip, rank 0, %s: %.2f\n",
				m, kicks[m]
		if (nc[m] >= 2)
			printf "ioctls per 8 B round trip, rank 0, %s: %.2f\n", m,
				(cc[m, 2] - cc[m, 1]) / (ci[m, 2] - ci[m, 1])
	}
}' "$work/output"
