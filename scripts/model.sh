#!/bin/sh
# SPDX-License-Identifier: MIT
# make model: each paper's experiment on the emulated boards in simulated
# time with that paper's profile (model/profiles/), or, where the emulator
# does not run it, from the model's arithmetic (build/tools/fpgacomm-model,
# marked "analytic"); per figure the paper's value, the model's and their
# ratio, then "N of M figures within 10%". Rows marked "fit" are figures a
# parameter was fitted on (docs/model.md); "check" rows are not.
set -eu

B=${B:-build}
RUN=$B/tools/fpgacomm-run
BENCH=$B/tools/fpgacomm-bench
DMA=$B/tools/fpgacomm-dma
CALC=$B/tools/fpgacomm-model
for t in "$RUN" "$BENCH" "$DMA" "$CALC"; do
	if [ ! -x "$t" ]; then
		echo "model: $t is missing: run make first" >&2
		exit 1
	fi
done
# small emulated boards; a word each way of the bench's ping-pong is enough
export FPGACOMM_EMU_MEM=${FPGACOMM_EMU_MEM:-256M}
ROWS=$(mktemp)
trap 'rm -f "$ROWS"' EXIT

# row PAPER FIGURE PAPER_VALUE MODEL_VALUE UNIT HOW KIND
#   HOW: emulator or analytic; KIND: fit, check or predict
row() {
	case $4 in
	'' | *[!0-9.]*)
		echo "model: $1, $2: no figure from the run ('$4')" >&2
		exit 1 ;;
	esac
	printf '%s|%s|%s|%s|%s|%s|%s\n' "$@" >> "$ROWS"
}

# The model's latency column (us) of a ping-pong of SIZE bytes to PEER:
# pp PROFILE TOPOLOGY RANKS PEER SIZE
pp() {
	FPGACOMM_EMU_MODEL=$1 FPGACOMM_RNDV_MIN=0 \
		"$RUN" -n "$3" -t "$2" -- "$BENCH" pingpong -s "$5" -p "$4" -i 20 |
		awk -v s="$5" '!/^#/ && $1 == s { print $3 }'
}

# Gb/s of SIZE bytes in US microseconds
gbps() {
	awk -v s="$1" -v us="$2" 'BEGIN { printf "%.3f", s * 8 / (us * 1000) }'
}

# The model's GB/s of chains: dma PROFILE SIZE COUNT h2b|b2h
dma() {
	FPGACOMM_EMU_MODEL=$1 "$DMA" -s "$2" -n "$3" -i 3 --dir "$4" --json |
		awk -v k="\"$4\"" '$1 == k ":" {
			for (i = 1; i <= NF; i++)
				if ($i == "\"model_gbps\":") { v = $(i + 1); sub(/[,}]/, "", v); print v }
		}'
}

us_to_ns() {
	awk -v u="$1" 'BEGIN { printf "%.1f", u * 1000 }'
}

echo "model: each paper's experiment in simulated time" >&2

# ---- CIRCUS: ping-pong on a ring of 14 (7 hops the longest route) ----
l1=$(pp circus ring:14 14 1 16)
l3=$(pp circus ring:14 14 3 16)
l7=$(pp circus ring:14 14 7 16)
t1=$(pp circus ring:14 14 1 1048576)
t7=$(pp circus ring:14 14 7 1048576)
row CIRCUS "ping-pong latency, 1 hop" 0.5 "$l1" us emulator fit
row CIRCUS "ping-pong latency, 7 hops" 1.87 "$l7" us emulator fit
row CIRCUS "latency, 3 hops (~ CoE's 1 hop)" 0.95 "$l3" us emulator check
row CIRCUS "throughput 1 MB, 1 hop" 90.2 "$(gbps 1048576 "$t1")" Gb/s emulator check
row CIRCUS "throughput 1 MB, 7 hops" 88.7 "$(gbps 1048576 "$t7")" Gb/s emulator check
row CIRCUS "link payload rate (Table 5)" 90.762 "$($CALC -p circus link)" Gb/s analytic check

# ---- PEACH2: chains between host and board, a PIO store to the next board ----
w255=$(dma peach2 4K 255 b2h)
r255=$(dma peach2 4K 255 h2b)
w4=$(dma peach2 4K 4 b2h)
r4=$(dma peach2 4K 4 h2b)
w2=$(dma peach2 4K 2 b2h)
w8k=$(dma peach2 8K 1 b2h)
pio=$(pp peach2 ring:2 2 1 4)
row PEACH2 "peak, Gen2 x8, 256 B TLPs" 3.66 "$($CALC -p peach2 pcie)" GB/s analytic check
row PEACH2 "DMA write, 255 x 4 KB (93%)" 3.40 "$w255" GB/s emulator check
row PEACH2 "DMA read, 255 x 4 KB (> 3.3)" 3.3 "$r255" GB/s emulator check
row PEACH2 "DMA write, 4 x 4 KB (75-80%)" 2.84 "$w4" GB/s emulator check
row PEACH2 "DMA read, 4 x 4 KB (75-80%)" 2.84 "$r4" GB/s emulator check
row PEACH2 "2 x 4 KB over 1 x 8 KB (~ same)" 1.0 \
	"$(awk -v a="$w2" -v b="$w8k" 'BEGIN { printf "%.3f", a / b }')" ratio emulator check
row PEACH2 "remote PIO store" 782 "$(us_to_ns "$pio")" ns emulator fit

# ---- HBM2: the invert over 64 MB in place, 64 KB chunks, 8 LS ----
# GB/s of bytes read and written by the LS, as the paper's peak counts them
hbm() {
	FPGACOMM_EMU_MODEL=hbm2 "$BENCH" hbm -s 64M -l 8 -S "$1" -I -r 1 -j |
		sed -n 's/.*"model_moved_gbps": \([0-9.]*\).*/\1/p'
}
row HBM2 "peak, 400 MHz x 256 bit x 8" 102.4 "$($CALC -p hbm2 show | awk '/HBM peak/ { print $3 }')" GB/s analytic check
row HBM2 "invert 64 MB, 2 streams" 101.05 "$(hbm 2)" GB/s emulator check

# ---- OPTWEB: the sort's five designs (Table 3): A, C, B, m ----
set -- "11 125 32 2 19 23" "6 150 50 2 41 51" "3 125 50 2 69 85" \
       "2 178 50 2 144 182" "1 150 50 1 243 307"
eff=$(awk -F= '/^sort_eff/ { split($2, f, "#"); print f[1] }' model/profiles/optweb.prof |
      awk -F/ '{ printf "%.6f", NF == 2 ? $1 / $2 : $1 }')
for d in "$@"; do
	set -- $d
	peak=$($CALC -p optweb sort 8 "$1" "$2" "$3" "$4")
	kind=check
	[ "$1" = 1 ] && kind=fit
	row OPTWEB "sort, $1 pass(es), its model" "$6" "$peak" GB/s analytic check
	row OPTWEB "sort, $1 pass(es), measured" "$5" \
		"$(awk -v p="$peak" -v e="$eff" 'BEGIN { printf "%.2f", p * e }')" GB/s analytic $kind
done

# ---- CoE: a channel between two boards through the switch ----
cl=$(pp coe ring:2 2 1 16)
ct=$(pp coe ring:2 2 1 1048576)
row CoE "latency" 980 "$(us_to_ns "$cl")" ns emulator fit
row CoE "latency (as CIRCUS's paper measured it)" 950 "$(us_to_ns "$cl")" ns emulator check
row CoE "throughput 1 MB" 7.13 "$(gbps 1048576 "$ct")" Gb/s emulator check

# ---- Beyond the papers ----
c8=$(pp circus torus:8x8 64 36 16)
c8t=$(pp circus torus:8x8 64 36 1048576)
p16=$(pp peach2 torus:8x2 16 12 4)
row "CIRCUS 8x8" "latency, 8 hops (the torus's longest)" - "$c8" us emulator predict
row "CIRCUS 8x8" "throughput 1 MB, 8 hops" - "$(gbps 1048576 "$c8t")" Gb/s emulator predict
row "PEACH2 x16" "PIO store, 5 hops (2 x 8 ring pairs)" - "$(us_to_ns "$p16")" ns emulator predict
row HBM2 "invert 64 MB, 1 stream (no double buffer)" - "$(hbm 1)" GB/s emulator predict
for n in 16 32; do
	peak=$($CALC -p optweb sort "$n" 1 150 50 1)
	row "OPTWEB x$n" "sort, 1 pass, its model" - "$peak" GB/s analytic predict
	row "OPTWEB x$n" "sort, 1 pass, at 8 nodes' efficiency" - \
		"$(awk -v p="$peak" -v e="$eff" 'BEGIN { printf "%.1f", p * e }')" GB/s analytic predict
done

awk -F'|' '
BEGIN {
	printf "%-11s %-40s %9s %9s %5s  %-6s %-9s %s\n", "paper", "figure", "paper",
	       "model", "ratio", "unit", "how", ""
}
{
	ratio = ""
	if ($3 != "-" && $3 + 0 > 0 && $4 + 0 > 0) {
		r = $4 / $3
		ratio = sprintf("%.3f", r)
		m++
		if (r >= 0.9 && r <= 1.1)
			n++
		if ($7 == "check") {
			cm++
			if (r >= 0.9 && r <= 1.1)
				cn++
		}
	}
	printf "%-11s %-40s %9s %9s %5s  %-6s %-9s %s\n", $1, $2, $3, $4, ratio, $5,
	       $6, $7
}
END {
	printf "\n%d of %d figures within 10%% (%d of %d that no parameter was fitted on)\n",
	       n, m, cn, cm
}' "$ROWS"
