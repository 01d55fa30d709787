#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench-sort.sh: the distributed sort on 2 and 4 ranks of an emulated
# cluster beside the same algorithms over Open MPI and a single-process
# sort of the same keys, in the same run. Run from the repository root
# after `make`; `make bench` runs it.
#
# usage: scripts/bench-sort.sh [--keys N] [--ranks "2 4"] [--iters N] [--rounds N] [--no-mpi]
#
# Cases: N keys (default 2^26) of 6 bits (64 values: OPTWEB's counting
# sort) and N full 32-bit keys (the one-pass sort, and the radix sort
# that crosses the network on every 8-bit digit). fpgacomm is
# `fpgacomm-run -n R -- fpgacomm-bench sort` (default topology, full:R);
# Open MPI is scripts/bench/sort-mpi.c (the same keys, steps, timing and
# columns) under `mpirun -n R --mca btl self,vader`; the single-process
# lines are `fpgacomm-bench sort --serial` (a plain local counting or
# radix sort, and a memcpy of the same bytes). Each line is the median of
# ITERS timed sorts after one untimed one; every result is checked
# (sorted within and across ranks) or the script fails. The whole set
# runs ROUNDS times (default 3), fpgacomm and Open MPI in alternating
# order; the table shows the median over the rounds, and the median and
# range of the per-round ratios (the machine is shared: single runs
# vary by 2x and more).
#
# Raw lines go to build/bench/sort-raw.txt; the medians to
# build/bench/sort.dat (a plain table that scripts/plot.sh draws).
set -euo pipefail
. "$(dirname "$0")/bench/data.sh"

prog=${0##*/}
TOOLS=build/tools
OUT=build/bench
KEYS=$((1 << 26))
RANKS="2 4"
ITERS=3
ROUNDS=${FPGACOMM_BENCH_ROUNDS:-3}
RUN_TIMEOUT=900
mpi=1

while [ $# -gt 0 ]; do
	case $1 in
	--keys) KEYS=${2-}; shift 2 || { echo "$prog: --keys N" >&2; exit 2; } ;;
	--ranks) RANKS=${2-}; shift 2 || { echo "$prog: --ranks LIST" >&2; exit 2; } ;;
	--iters) ITERS=${2-}; shift 2 || { echo "$prog: --iters N" >&2; exit 2; } ;;
	--rounds) ROUNDS=${2-}; shift 2 || { echo "$prog: --rounds N" >&2; exit 2; } ;;
	--no-mpi) mpi=0; shift ;;
	-h | --help) sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $KEYS =~ ^[1-9][0-9]*$ ]] || { echo "$prog: --keys takes a positive number" >&2; exit 2; }
[[ $ITERS =~ ^[1-9][0-9]*$ ]] || { echo "$prog: --iters takes a positive number" >&2; exit 2; }
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "$prog: --rounds takes a positive number" >&2; exit 2; }
for t in fpgacomm-run fpgacomm-bench; do
	[[ -x $TOOLS/$t ]] || { echo "$prog: $TOOLS/$t not found: run 'make' first" >&2; exit 1; }
done
mkdir -p "$OUT"
RAW=$OUT/sort-raw.txt
echo "# $(date -u '+%F %T UTC'), tree $(git describe --always --dirty 2>/dev/null || echo unknown)" >"$RAW"

mpi_why=""
if ((mpi)); then
	if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
		mpi_why="Open MPI not installed (scripts/install-deps.sh --mpi installs it)"
	elif ! mpicc -O2 -std=gnu11 -Wall -Wextra -o "$OUT/sort-mpi" scripts/bench/sort-mpi.c \
		2>"$OUT/sort-mpi.log"; then
		mpi_why="mpicc could not build scripts/bench/sort-mpi.c (see $OUT/sort-mpi.log)"
	fi
	if [[ -n $mpi_why ]]; then
		echo "$prog: SKIP the Open MPI half: $mpi_why" >&2
		mpi=0
	fi
fi

declare -A ms=() this=()
# run WHO R BITS ALGOS: appends time_ms to ms["impl R bits algo"] and sets
# this[...] for the round; fails on WRONG.
run() {
	local who=$1 r=$2 b=$3 algos=$4 line
	local -a cmd
	case $who in
	fc) cmd=("$TOOLS/fpgacomm-run" -n "$r" --timeout "$RUN_TIMEOUT" -- \
		"$TOOLS/fpgacomm-bench" sort -n "$KEYS" -b "$b" -a "$algos" -i "$ITERS") ;;
	mpi) cmd=(timeout "$RUN_TIMEOUT" mpirun --allow-run-as-root --oversubscribe -n "$r" \
		--mca btl self,vader "$OUT/sort-mpi" -n "$KEYS" -b "$b" -a "$algos" -i "$ITERS") ;;
	serial) cmd=("$TOOLS/fpgacomm-bench" sort --serial -n "$KEYS" -b "$b" -i "$ITERS") ;;
	esac
	while read -r line; do
		echo "$line" >>"$RAW"
		[[ $line == \#* ]] && continue
		read -r impl _ _ _ algo t _ _ _ _ _ _ check <<<"$line"
		if [[ $check != ok ]]; then
			echo "$prog: $impl $algo on $r ranks, $b bits: result $check" >&2
			exit 1
		fi
		ms["$impl $r $b $algo"]+="$t"$'\n'
		this["$impl $r $b $algo"]=$t
	done < <("${cmd[@]}")
}

median() {
	sort -g | awk 'NF { v[++n] = $1 } END { if (!n) print ""; else print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'
}

declare -A rat=()
start=$SECONDS
for ((round = 1; round <= ROUNDS; round++)); do
	echo "# round $round" >>"$RAW"
	run serial 1 6 counting
	run serial 1 32 radix
	for r in $RANKS; do
		if ((!mpi)); then order=(fc); elif ((round % 2)); then order=(fc mpi); else order=(mpi fc); fi
		for who in "${order[@]}"; do
			run "$who" "$r" 6 counting
			if [[ $who == fc ]]; then run fc "$r" 32 onepass,radix_net; else run mpi "$r" 32 onepass; fi
		done
		if ((mpi)); then
			for c in "6 counting" "32 onepass"; do
				read -r b algo <<<"$c"
				rat["$r $b $algo"]+="$(awk -v a="${this[mpi $r $b $algo]}" \
					-v f="${this[fpgacomm $r $b $algo]}" 'BEGIN { printf "%.4f", a / f }')"$'\n'
			done
		fi
	done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }
rate() { awk -v t="$1" -v k="$KEYS" 'BEGIN { if (t == "" || t == "-") print "-"; else printf "%.1f", k / t / 1e3 }'; }

echo "Sort of $KEYS 32-bit keys: time in ms (Mkeys/s); fpgacomm on fpgacomm-run (full:R),"
echo "Open MPI $(mpirun --version 2>/dev/null | sed -n '1s/.*) //p') (btl self,vader), one process."
printf '%-5s %-5s %-10s %18s %18s %18s %7s %-11s %9s\n' ranks bits algo fpgacomm "Open MPI" "1 process" \
	"MPI/fc" "(range)" "fc/memcpy"
f2() { awk -v x="$1" 'BEGIN { if (x == "") print "-"; else printf "%.2f", x }'; }
med() { f2 "$(median <<<"${ms[$1]-}")"; }
mc6=$(med "memcpy 1 6 -")
dat_header "$OUT/sort.dat" \
	"Sort of $KEYS 32-bit keys, time in ms, medians over $ROUNDS rounds of the median of $ITERS sorts: fpgacomm (fpgacomm-run, full:R), the same steps over Open MPI (btl self,vader), one process; memcpy of the same bytes in one process" \
	"ranks bits algo fpgacomm_ms openmpi_ms one_process_ms memcpy_ms"
for r in $RANKS; do
	for c in "6 counting counting" "32 onepass radix" "32 radix_net radix"; do
		read -r b algo salgo <<<"$c"
		fc=$(med "fpgacomm $r $b $algo")
		mp=$(med "mpi $r $b $algo")
		se=$(med "serial 1 $b $salgo")
		rs=${rat[$r $b $algo]-}
		if [[ -n $rs ]]; then
			rr="$(f2 "$(median <<<"$rs")") ($(f2 "$(sort -g <<<"$rs" | sed '/^$/d' | head -1)")-$(f2 "$(sort -g <<<"$rs" | tail -1)"))"
		else
			rr="- "
		fi
		printf '%-5s %-5s %-10s %9s (%6s) %9s (%6s) %9s (%6s) %-19s %9s\n' "$r" "$b" "$algo" \
			"${fc:--}" "$(rate "$fc")" "${mp:--}" "$(rate "$mp")" "${se:--}" "$(rate "$se")" \
			"$rr" "$([[ $algo == counting ]] && ratio "$fc" "$mc6" || echo -)"
		echo "$r $b $algo ${fc:--} ${mp:--} ${se:--} ${mc6:--}" >>"$OUT/sort.dat"
	done
done
echo "MPI/fc above 1: fpgacomm is faster. fc/memcpy: the counting sort's time over one"
echo "process's memcpy of the same $((KEYS * 4)) bytes (${mc6:-?} ms). Times: medians over $ROUNDS"
echo "rounds of the median of $ITERS sorts; MPI/fc: median (range) of the per-round ratios."
((mpi)) || echo "Open MPI columns skipped: $mpi_why."
echo "Model lines (m, A, modelled GB/s) are in $RAW; the table in $OUT/sort.dat. Took $((SECONDS - start)) s."
