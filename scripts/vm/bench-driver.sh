#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The cost of a chain through the kernel driver, in a VM: one chain of
# 255 x 4 KiB transfers against 255 single 4 KiB transfers (one chain
# each), host->board on one emulated board (fpgacomm-emud behind an
# ivshmem-doorbell device), with the driver polling (poll=1) and with
# MSI-X interrupts. Builds the tree and fpgacomm.ko, boots the VM once and
# runs bench-driver-guest.sh in it, which alternates the two contenders
# over several rounds (timed by fpgacomm-dma, CLOCK_MONOTONIC in the guest)
# and counts their system calls with strace. Prints a table of medians.
#
# usage: scripts/vm/bench-driver.sh [options]
#   --kver KVER        guest kernel (default: the newest with headers)
#   --rounds N         timed rounds per mode (default $FPGACOMM_BENCH_ROUNDS,
#                      else 5)
#   --iters N          255-transfer groups per timed run (default 20: 20
#                      chains of 255, or 5100 single transfers)
#   --mode poll|irq    only this mode (repeatable; default both)
#   --timeout SEC      the whole VM (default 600)
#   --logdir DIR       keep the VM's logs there (output.log has every raw
#                      measurement and the strace -c tables)
#   -v, --verbose      print the guest's raw output too
#
# Times are per 4 KiB transfer: the timed loop's seconds over its transfers
# (each run warms up with one untimed chain first). Under TCG the guest
# runs 10-100x slower than on hardware: the ratios are what matter.
# System calls per transfer are marginal: strace -f -c counts of a run with
# 2N groups minus one with N, over the 255 N added transfers, so the fixed
# cost of opening the board and registering memory drops out.
# Exit status: 0 done, 77 skipped (no qemu, kernel, headers or strace),
# 1 failed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
prog=${0##*/}

kver='' rounds=${FPGACOMM_BENCH_ROUNDS:-5} iters=20 modes=() timeout=600
logdir='' verbose=0
while [ $# -gt 0 ]; do
	case $1 in
	--kver) kver=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--mode) modes+=(--mode "$2"); shift 2 ;;
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
bench_setup bench
echo "$prog: booting $kver (TCG, 1 vCPU) with one board;" \
	"$rounds rounds of $iters x 255 transfers per contender and mode" >&2
start=$SECONDS
rc=0
"$here/run-vm.sh" --kver "$kver" --smp 1 --timeout "$timeout" --logdir "$logdir" \
	--board-socket "$work/board0.sock" \
	--board-cmd "exec '$emud' --socket \"\$FCVM_SOCKET\" --guest-ram \"\$FCVM_RAM\" --node 1" \
	--module "$top/driver/fpgacomm.ko" \
	--prog "$top/build/tools/fpgacomm-dma" --prog "$strace" \
	-- "$here/bench-driver-guest.sh" --rounds "$rounds" --iters "$iters" \
	"${modes[@]}" > "$work/output" 2>&1 || rc=$?
bench_check_run "$rc"

# ---- The table ----
# TIME/COUNT lines -> one row per mode and contender: medians over rounds.
awk -v rounds="$rounds" '
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
/^MODE / { irqmode[kv($0, "mode")] = kv($0, "irq_mode") }
/^TIME / {
	m = kv($0, "mode"); w = kv($0, "who"); r = kv($0, "round")
	us = kv($0, "secs") / kv($0, "transfers") * 1e6
	t[m, w] = t[m, w] " " us
	per[m, w, r] = us
	bells[m, w] = bells[m, w] " " kv($0, "doorbells") / kv($0, "transfers")
	xfers = kv($0, "chains") * (w == "chain" ? 255 : 1)
	irq[m, w] = irq[m, w] " " kv($0, "irqs") / xfers
	if (!(m in seen)) { seen[m] = 1; order[++nm] = m }
}
/^COUNT / {
	m = kv($0, "mode"); w = kv($0, "who")
	k = ++nc[m, w]
	cx[m, w, k] = kv($0, "transfers")
	cs[m, w, k] = kv($0, "syscalls")
	ci[m, w, k] = kv($0, "ioctls")
}
END {
	printf "%-5s %-19s %9s %11s %17s %9s %9s %9s %9s\n", "mode", "submission",
		"us/xfer", "ms/255 xfer", "singles/chain", "syscalls", "ioctls",
		"doorbells", "IRQs"
	printf "%-5s %-19s %9s %11s %17s %9s %9s %9s %9s\n", "", "", "", "",
		"(range)", "/xfer", "/xfer", "/xfer", "/xfer"
	for (i = 1; i <= nm; i++) {
		m = order[i]
		ratios = ""
		for (r = 1; r <= rounds; r++)
			if ((m, "chain", r) in per && (m, "singles", r) in per)
				ratios = ratios " " per[m, "singles", r] / per[m, "chain", r]
		for (j = 1; j <= 2; j++) {
			w = j == 1 ? "chain" : "singles"
			label = j == 1 ? "1 chain of 255" : "255 chains of 1"
			us = median(t[m, w])
			if (j == 1)
				rat = "1"
			else
				rat = sprintf("%.1f (%.1f-%.1f)", median(ratios),
					minmax(ratios, "min"), minmax(ratios, "max"))
			if (nc[m, w] >= 2) {
				dx = cx[m, w, 2] - cx[m, w, 1]
				sc = sprintf("%.3f", (cs[m, w, 2] - cs[m, w, 1]) / dx)
				io = sprintf("%.3f", (ci[m, w, 2] - ci[m, w, 1]) / dx)
			} else {
				sc = io = "?"
			}
			iq = irqmode[m] == "poll" ? "-" : sprintf("%.3f", median(irq[m, w]))
			printf "%-5s %-19s %9.1f %11.2f %17s %9s %9s %9.3f %9s\n",
				m, label, us, us * 255 / 1000, rat, sc, io,
				median(bells[m, w]), iq
		}
	}
}' "$work/output" > "$work/table"
cat "$work/table"

grep '^IOCTLS ' "$work/output" | sed 's/^IOCTLS /ioctls of a whole run: /'
cat <<EOF

Host->board, 4 KiB per transfer, through /dev/fpgacomm0 (fpgacomm.ko on
$kver) to fpgacomm-emud over ivshmem-doorbell; poll = insmod poll=1,
irq = MSI-X. Medians of $rounds rounds, the two contenders alternating
(each run: $iters chains of 255, or $((iters * 255)) chains of 1; data verified).
singles/chain: per-round ratio of the time per transfer. syscalls, ioctls:
strace -f -c, marginal (a run with 2N groups minus one with N). IRQs: the
board's MSI-X interrupts per transfer, including the warm-up chain and the
one that reads the data back. The guest is TCG (no KVM) with 1 vCPU on a
$(nproc)-CPU host: absolute times are slow, the ratios are what matter.
VM: $((SECONDS - start)) s.
EOF
if [ "$own_logs" = 0 ]; then
	echo "$prog: logs in $logdir" >&2
fi
