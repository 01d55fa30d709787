#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench-libfabric.sh: point-to-point latency and bandwidth between two ranks
# three ways, in one run:
#   prov    Open MPI over the libfabric provider fpgacomm
#           (mpirun --mca pml cm --mca mtl ofi, FI_PROVIDER=fpgacomm)
#   vader   Open MPI over shared memory (mpirun --mca pml ob1 --mca btl self,vader)
#   native  the library's channels (fpgacomm-run -n 2 -- fpgacomm-bench),
#           each rank bound to one CPU with taskset, as mpirun binds its own
# Open MPI runs scripts/bench/osu-mpi.c (built here with mpicc), which
# measures as fpgacomm-bench does: ping-pong one-way latency (round trip
# over 2) and bandwidth (windows of 16 non-blocking sends, then an ack).
# Each round runs the three in turn, the first of them rotating, and the
# table shows each one's median over the rounds and the medians of the
# per-round ratios prov/native and prov/vader.
#
# Aims: latency of prov at most 1.1x native at 8 B and 4 KiB;
# prov within 1.2x of vader at 8 B; prov bandwidth at or above vader's
# from 1 MiB. Printed as met or not met, judged on the median ratios.
#
# usage: scripts/bench-libfabric.sh [--rounds N]   (default 5)
# Run from the repository root after `make`. Raw figures go to
# build/bench/libfabric-raw.txt. Exit status: 0 done, 1 failed, 77 Open MPI
# or the provider missing.
set -euo pipefail

prog=${0##*/}
OUT=build/bench
ROUNDS=${FPGACOMM_BENCH_ROUNDS:-5}
LAT_SIZES="8,4K,1M"
BW_SIZES="4K,1M,4M"
RUN_TIMEOUT=180

while (($#)); do
	case $1 in
	--rounds) ROUNDS=$2; shift 2 ;;
	*) echo "usage: $prog [--rounds N]" >&2; exit 2 ;;
	esac
done

if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
	echo "$prog: Open MPI not installed (scripts/install-deps.sh --mpi)"
	exit 77
fi
if [ ! -f build/libfpgacomm-fi.so ]; then
	echo "$prog: no build/libfpgacomm-fi.so (make prov; libfabric-dev)"
	exit 77
fi
mkdir -p "$OUT"
mpicc -O2 -std=gnu11 -o "$OUT/osu-mpi" scripts/bench/osu-mpi.c
RAW=$OUT/libfabric-raw.txt
: >"$RAW"
MPI=(timeout "$RUN_TIMEOUT" mpirun --allow-run-as-root --oversubscribe -n 2)

# run WAY KIND SIZES: "size value" lines
run() {
	local way=$1 kind=$2 sizes=$3
	case $way in
	prov)
		FI_PROVIDER_PATH=$PWD/build "${MPI[@]}" --mca pml cm --mca mtl ofi \
			-x FI_PROVIDER=fpgacomm -x FI_PROVIDER_PATH \
			"$OUT/osu-mpi" "$kind" -s "$sizes" ;;
	vader)
		"${MPI[@]}" --mca pml ob1 --mca btl self,vader \
			"$OUT/osu-mpi" "$kind" -s "$sizes" ;;
	native)
		timeout "$RUN_TIMEOUT" build/tools/fpgacomm-run -n 2 -- \
			sh -c 'exec taskset -c "$FPGACOMM_RANK" "$@"' sh \
			build/tools/fpgacomm-bench "$kind" -s "$sizes" ;;
	esac | awk '!/^#/ && NF == 2 { print $1, $2 }'
}

ways=(prov vader native)
for ((r = 0; r < ROUNDS; r++)); do
	for kind in pingpong bw; do
		sizes=$LAT_SIZES
		[ "$kind" = bw ] && sizes=$BW_SIZES
		for ((k = 0; k < 3; k++)); do
			way=${ways[$(((r + k) % 3))]}
			run "$way" "$kind" "$sizes" | while read -r s v; do
				echo "$r $kind $way $s $v"
			done >>"$RAW"
		done
	done
done

awk -v rounds="$ROUNDS" '
function median(list,    n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++)
		for (j = i + 1; j <= n; j++)
			if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	if (n == 0) return 0
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ v[$2, $3, $4, $1] = $5; key[$2, $4] = 1; rs[$1] = 1 }
END {
	print "# two ranks, " rounds " rounds; medians; ratios are medians of per-round ratios"
	for (kind_i = 1; kind_i <= 2; kind_i++) {
		kind = kind_i == 1 ? "pingpong" : "bw"
		unit = kind == "pingpong" ? "latency us" : "bandwidth MB/s"
		printf "%-9s %8s %12s %12s %12s %12s %12s\n", kind, "size",
		       "prov", "vader", "native", "prov/native", "prov/vader"
		n = 0
		for (k in key) {
			split(k, p, SUBSEP)
			if (p[1] == kind) sz[++n] = p[2]
		}
		for (i = 1; i <= n; i++)
			for (j = i + 1; j <= n; j++)
				if (sz[j] + 0 < sz[i] + 0) { t = sz[i]; sz[i] = sz[j]; sz[j] = t }
		for (i = 1; i <= n; i++) {
			s = sz[i]; lp = lv = ln = rn = rv = ""
			for (r in rs) {
				a = v[kind, "prov", s, r]; b = v[kind, "vader", s, r]
				c = v[kind, "native", s, r]
				lp = lp " " a; lv = lv " " b; ln = ln " " c
				if (c > 0) rn = rn " " a / c
				if (b > 0) rv = rv " " a / b
			}
			mrn = median(rn); mrv = median(rv)
			printf "%-9s %8s %12.3f %12.3f %12.3f %12.2f %12.2f\n", unit, s,
			       median(lp), median(lv), median(ln), mrn, mrv
			res[kind, s, "n"] = mrn; res[kind, s, "v"] = mrv
		}
	}
	print ""
	aim("prov latency <= 1.1x native at 8 B", res["pingpong", 8, "n"] <= 1.1, res["pingpong", 8, "n"])
	aim("prov latency <= 1.1x native at 4 KiB", res["pingpong", 4096, "n"] <= 1.1, res["pingpong", 4096, "n"])
	aim("prov latency <= 1.2x vader at 8 B", res["pingpong", 8, "v"] <= 1.2, res["pingpong", 8, "v"])
	aim("prov bandwidth >= vader at 1 MiB", res["bw", 1048576, "v"] >= 1, res["bw", 1048576, "v"])
	aim("prov bandwidth >= vader at 4 MiB", res["bw", 4194304, "v"] >= 1, res["bw", 4194304, "v"])
}
function aim(what, ok, ratio) {
	printf "aim: %-40s %s (%.2f)\n", what, ok ? "met" : "not met", ratio
}' "$RAW"
