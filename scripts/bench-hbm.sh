#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench-hbm.sh: the HBM2 paper's benchmark on the emulated board
# (fpgacomm-bench hbm): a random uint32 array inverted by stream programs on
# 1..all local stores with 1 and 2 streams each, checked element by element,
# beside a host loop inverting the same array in the same run. Prints the
# table, then the ratios that matter: 2 streams over 1, n LS over
# 1, and the board over the host loop. Run from the repository root after
# `make`. The figures also go to build/bench/hbm.dat and hbm-passes.dat
# (plain tables that scripts/plot.sh draws).
set -euo pipefail
. "$(dirname "$0")/bench/data.sh"

TOOLS=build/tools
DEV=${FPGACOMM_BENCH_DEVICE:-emu:}
ROUNDS=${FPGACOMM_BENCH_ROUNDS:-5}
SIZES=${FPGACOMM_BENCH_HBM_SIZES:-1M,4M,16M,64M}
# 64 MiB on one LS needs a pseudo-channel of 64 MiB: 32 of them need 2 GiB.
export FPGACOMM_EMU_MEM=${FPGACOMM_EMU_MEM:-8G}

if [[ ! -x $TOOLS/fpgacomm-bench ]]; then
	echo "bench-hbm: $TOOLS/fpgacomm-bench not found: run 'make' first" >&2
	exit 1
fi

OUT=build/bench
mkdir -p "$OUT"
start=$SECONDS
# dat FILE WHAT: the JSON lines on stdin as a table, one line per case.
dat() {
	dat_header "$1" "$2" "size_B ls streams board_GBps host_GBps"
	awk '
	function num(key,   m) {
		match($0, "\"" key "\": [0-9.]+")
		return substr($0, RSTART + length(key) + 4, RLENGTH - length(key) - 4) + 0
	}
	/"ls"/ { printf "%d %d %d %.3f %.3f\n", num("size"), num("ls"), num("streams"),
		 num("board_gbps"), num("host_gbps") }' >>"$1"
}
table() {
awk -v cores="$(nproc)" -v note="$1" '
function num(key,   m) {
	match($0, "\"" key "\": [0-9.]+")
	return substr($0, RSTART + length(key) + 4, RLENGTH - length(key) - 4) + 0
}
{
	s = num("size"); l = num("ls"); st = num("streams")
	g[s, l, st] = num("board_gbps"); h[s, l, st] = num("host_gbps")
	r[s, l, st] = num("ratio")
	if (!(s in seen)) { seen[s] = 1; sizes[++ns] = s }
	if (!(l in lseen)) { lseen[l] = 1; lss[++nl] = l }
}
END {
	printf "%-8s %4s %10s %10s %10s %8s %8s %8s\n", "size", "LS", "1 str GB/s",
	       "2 str GB/s", "host GB/s", "2/1 str", "vs 1 LS", "vs host"
	for (i = 1; i <= ns; i++) {
		s = sizes[i]
		for (j = 1; j <= nl; j++) {
			l = lss[j]
			if (!((s, l, 2) in g))
				continue
			printf "%-8s %4d %10.2f %10.2f %10.2f %8.2f %8.2f %8.2f\n",
			       s / 1048576 " MiB", l, g[s, l, 1], g[s, l, 2], h[s, l, 2],
			       g[s, l, 2] / g[s, l, 1], g[s, l, 2] / g[s, lss[1], 2],
			       r[s, l, 2]
		}
	}
	printf "\n2/1 str: 2 streams per LS over 1; vs 1 LS: 2 streams on LS n over\n"
	printf "on 1 LS; vs host: the board (2 streams) over a host loop inverting the\n"
	printf "same array in the same run. Best of each case'"'"'s rounds; %d CPUs run the\n", cores
	printf "emulated LS cores, so scaling stops at %d. %s\n", cores, note
}'
}

out=$("$TOOLS/fpgacomm-bench" hbm -d "$DEV" -s "$SIZES" -r "$ROUNDS" --json)
echo "The paper's benchmark: one invert per element."
table "One invert per element is bound by host memory bandwidth." <<<"$out"
dat "$OUT/hbm.dat" "HBM streams: the invert on the local stores of $DEV, best of $ROUNDS rounds, beside a host loop" <<<"$out"
echo
# The same with 15 inverts per chunk inside the LS (odd: the result is still
# inverted): compute in the cores rather than traffic to memory, so that the
# streams and LS can use the cores; the host loop does the same passes
# chunk by chunk.
out=$("$TOOLS/fpgacomm-bench" hbm -d "$DEV" -s 16M -p 15 -r "$ROUNDS" --json)
echo "15 inverts per chunk in the LS (compute-bound):"
table "" <<<"$out"
dat "$OUT/hbm-passes.dat" "HBM streams: 15 inverts per chunk in the local stores of $DEV, best of $ROUNDS rounds, beside a host loop" <<<"$out"
echo "Board: $DEV (FPGACOMM_EMU_MEM=$FPGACOMM_EMU_MEM), $ROUNDS rounds, every round verified; took $((SECONDS - start)) s.
Tables: $OUT/hbm.dat, $OUT/hbm-passes.dat."
