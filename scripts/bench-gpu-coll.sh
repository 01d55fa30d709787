#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench-gpu-coll.sh: allreduce on CUDA device buffers beside the same on
# host buffers, in one run (fpgacomm-bench allreduce --mem plain,cuda, as
# every rank under fpgacomm-run; rank r uses GPU r % GPUs). Device buffers
# are staged through host memory at the call's start and end
# (docs/collectives.md, Device memory), so the ratio device/host is what
# that staging costs. Run from the repository root after `make`.
#
# usage: scripts/bench-gpu-coll.sh [--ranks N] [--sizes LIST] [--type T]
#                                  [--rounds R] [--fake]
#   --ranks N     ranks (default 2; topology full:N)
#   --sizes LIST  bytes per rank (default 8,4K,64K,1M,16M,64M)
#   --type T      float32 (default), float64, int32, int64
#   --rounds R    runs (default 3); the table gives the medians
#   --fake        against tests/fake_libcuda.c (no GPU: a smoke test; its
#                 "device memory" is host memory behind the driver calls)
#
# The table: size, then the out-of-place time (us) on host buffers, on
# device buffers, and their ratio device/host (above 1: device buffers are
# slower), medians over the rounds. #wrong must be 0 or the script fails.
# Raw output goes to build/bench/gpu-coll-raw.txt.
# Exit status: 0 done, 77 no CUDA driver or GPU, 1 failed, 2 bad usage.
set -euo pipefail

prog=${0##*/}
TOOLS=build/tools
OUT=build/bench
RANKS=2
SIZES=8,4K,64K,1M,16M,64M
TYPE=float32
ROUNDS=3
fake=0

while [ $# -gt 0 ]; do
	case $1 in
	--ranks) RANKS=${2-}; shift 2 || { echo "$prog: --ranks N" >&2; exit 2; } ;;
	--sizes) SIZES=${2-}; shift 2 || { echo "$prog: --sizes LIST" >&2; exit 2; } ;;
	--type) TYPE=${2-}; shift 2 || { echo "$prog: --type T" >&2; exit 2; } ;;
	--rounds) ROUNDS=${2-}; shift 2 || { echo "$prog: --rounds R" >&2; exit 2; } ;;
	--fake) fake=1; shift ;;
	-h | --help) sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $RANKS =~ ^[1-9][0-9]*$ ]] || { echo "$prog: --ranks takes a positive number" >&2; exit 2; }
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "$prog: --rounds takes a positive number" >&2; exit 2; }
for t in fpgacomm-run fpgacomm-bench; do
	[[ -x $TOOLS/$t ]] || { echo "$prog: $TOOLS/$t not found: run 'make' first" >&2; exit 1; }
done
if [ $fake = 1 ]; then
	[[ -r build/tests/fake-cuda/libcuda.so.1 ]] ||
		{ echo "$prog: build/tests/fake-cuda/libcuda.so.1 not found: run 'make'" >&2; exit 1; }
	export LD_LIBRARY_PATH=$PWD/build/tests/fake-cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export FAKE_CUDA_GUARD=1
fi
mkdir -p "$OUT"
RAW=$OUT/gpu-coll-raw.txt
: >"$RAW"

for ((r = 1; r <= ROUNDS; r++)); do
	set +e
	timeout 900 "$TOOLS/fpgacomm-run" -n "$RANKS" --topology "full:$RANKS" -- \
		"$TOOLS/fpgacomm-bench" allreduce -s "$SIZES" -t "$TYPE" \
		-m plain,cuda >"$OUT/gpu-coll-round.txt" 2>&1
	st=$?
	set -e
	cat "$OUT/gpu-coll-round.txt" >>"$RAW"
	if grep -q -- "--mem cuda: " "$OUT/gpu-coll-round.txt"; then
		grep -m1 -- "--mem cuda: " "$OUT/gpu-coll-round.txt" >&2
		echo "$prog: skipped (no GPU to use)" >&2
		exit 77
	fi
	if [ $st != 0 ]; then
		echo "$prog: round $r failed (status $st):" >&2
		tail -20 "$OUT/gpu-coll-round.txt" >&2
		exit 1
	fi
done
rm -f "$OUT/gpu-coll-round.txt"

# rows: size ... time(us) algbw busbw #wrong (out of place) ... buffers
awk -v rounds="$ROUNDS" '
function median(list,    n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++)
		for (j = i + 1; j <= n; j++)
			if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/^#/ { if (!hdr++) print; next }
NF >= 14 {
	if ($9 + 0 != 0 || $13 + 0 != 0) bad = 1
	key = $1 " " $NF
	t[key] = t[key] " " $6
	if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 }
}
END {
	printf("%12s %14s %14s %10s\n", "size(B)", "host(us)", "device(us)", "dev/host")
	for (i = 0; i < n; i++) {
		s = order[i]
		h = median(t[s " plain"]); d = median(t[s " cuda"])
		printf("%12s %14.2f %14.2f %10.2f\n", s, h, d, h > 0 ? d / h : 0)
	}
	if (bad) { print "wrong results (#wrong above 0): see the raw output" > "/dev/stderr"; exit 1 }
}' "$RAW"
