#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench-coll.sh: collectives on 2, 4 and 8 ranks of an emulated cluster
# beside Open MPI's, in the same run. Run from the repository root after
# `make`; `make bench` runs it as its last part.
#
# usage: scripts/bench-coll.sh [--rounds N] [--ranks "2 4 8"] [--no-mpi]
#
# Cases (each rank's buffer, nccl-tests' size): allreduce float32 sum of
# 1 Ki, 1 Mi and 16 Mi elements; alltoall of 1 MiB per peer; bcast of
# 4 KiB and 1 MiB from rank 0; barrier (size 0). fpgacomm is
# `fpgacomm-run -n N -- fpgacomm-bench COLL` (default topology: full:N up
# to 9 ranks, else the squarest torus); Open MPI is scripts/bench/coll-mpi.c,
# which measures the same way (same sizes, iterations, warm-up, inputs and
# checks), run as `mpirun -n N --mca btl self,vader`. Every round runs both,
# the order alternating; the table shows the medians of the out-of-place
# time and the median and range of the per-round ratios fc/MPI (below 1:
# fpgacomm is faster). #wrong must be 0 for both, or the script fails.
#
# Aim (the project's target): the alltoall of 1 MiB per peer on 4 ranks at or below
# Open MPI's time (its median fc/MPI <= 1), printed as met or not met.
#
# Raw per-round lines go to build/bench/coll-raw.txt; the medians to
# build/bench/coll.dat (a plain table that scripts/plot.sh draws).
set -euo pipefail
. "$(dirname "$0")/bench/data.sh"

prog=${0##*/}
TOOLS=build/tools
OUT=build/bench
ROUNDS=${FPGACOMM_BENCH_ROUNDS:-3}
RANKS="2 4 8"
RUN_TIMEOUT=900
mpi=1

while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=${2-}; shift 2 || { echo "$prog: --rounds N" >&2; exit 2; } ;;
	--ranks) RANKS=${2-}; shift 2 || { echo "$prog: --ranks LIST" >&2; exit 2; } ;;
	--no-mpi) mpi=0; shift ;;
	-h | --help) sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "$prog: --rounds takes a positive number" >&2; exit 2; }
for t in fpgacomm-run fpgacomm-bench; do
	[[ -x $TOOLS/$t ]] || { echo "$prog: $TOOLS/$t not found: run 'make' first" >&2; exit 1; }
done
mkdir -p "$OUT"
RAW=$OUT/coll-raw.txt
echo "# $(date -u '+%F %T UTC'), tree $(git describe --always --dirty 2>/dev/null || echo unknown)" >"$RAW"

mpi_why=""
if ((mpi)); then
	if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
		mpi_why="Open MPI not installed (scripts/install-deps.sh --mpi installs it)"
	elif ! mpicc -O2 -std=gnu11 -Wall -Wextra -o "$OUT/coll-mpi" scripts/bench/coll-mpi.c \
		2>"$OUT/coll-mpi.log"; then
		mpi_why="mpicc could not build scripts/bench/coll-mpi.c (see $OUT/coll-mpi.log)"
	fi
	if [[ -n $mpi_why ]]; then
		echo "$prog: SKIP the Open MPI half: $mpi_why" >&2
		mpi=0
	fi
fi

median() {
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# run WHO N COLL SIZES: "SIZE TIME WRONG" per data line (out of place).
run() {
	local who=$1 n=$2
	shift 2
	if [[ $who == fc ]]; then
		"$TOOLS/fpgacomm-run" -n "$n" --timeout "$RUN_TIMEOUT" -- "$TOOLS/fpgacomm-bench" "$@"
	else
		timeout "$RUN_TIMEOUT" mpirun --allow-run-as-root --oversubscribe -n "$n" \
			--mca btl self,vader "$OUT/coll-mpi" "$@"
	fi | awk '!/^#/ && NF >= 9 { print $1, $6, $9 }'
}

declare -A val=() ratio=()
cases=()
start=$SECONDS
for n in $RANKS; do
	cases+=("$n allreduce 4K,4M,64M")
	cases+=("$n alltoall $((n))M")
	cases+=("$n bcast 4K,1M")
	cases+=("$n barrier 0")
done
for ((r = 1; r <= ROUNDS; r++)); do
	for c in "${cases[@]}"; do
		read -r n coll sizes <<<"$c"
		if ((!mpi)); then order=(fc); elif ((r % 2)); then order=(fc mpi); else order=(mpi fc); fi
		declare -A this=()
		for who in "${order[@]}"; do
			while read -r size t bad; do
				if [[ $bad != 0 ]]; then
					echo "$prog: $who $coll on $n ranks, $size B: $bad wrong elements" >&2
					exit 1
				fi
				val["$who $n $coll $size"]+="$t"$'\n'
				this[$who $size]=$t
				echo "round $r $who n=$n $coll $size $t" >>"$RAW"
			done < <(run "$who" "$n" "$coll" -s "$sizes")
		done
		if ((mpi)); then
			for k in "${!this[@]}"; do
				[[ $k == fc\ * ]] || continue
				size=${k#fc }
				ratio["$n $coll $size"]+="$(awk -v a="${this[fc $size]}" -v b="${this[mpi $size]}" \
					'BEGIN { printf "%.4f", a / b }')"$'\n'
			done
		fi
		unset this
	done
done

echo "Collectives: fpgacomm (fpgacomm-run, full:N) and Open MPI $(
	mpirun --version 2>/dev/null | sed -n '1s/.*) //p') (btl self,vader); out-of-place time in us"
printf '%-5s %-10s %-10s %12s %12s %8s %-13s %s\n' ranks collective size fpgacomm "Open MPI" fc/MPI \
	"(range)" aim
dat_header "$OUT/coll.dat" \
	"Collectives, out-of-place time, medians of $ROUNDS rounds: fpgacomm (fpgacomm-run, full:N) and Open MPI (btl self,vader)" \
	"ranks collective size_B fpgacomm_us openmpi_us fc/MPI"
for c in "${cases[@]}"; do
	read -r n coll sizes <<<"$c"
	for k in "${!val[@]}"; do
		if [[ $k == "fc $n $coll "* ]]; then echo "${k##* }"; fi
	done | sort -n | while read -r size; do
		fc=$(median <<<"${val[fc $n $coll $size]%$'\n'}")
		if ((mpi)); then
			mp=$(median <<<"${val[mpi $n $coll $size]%$'\n'}")
			rs=${ratio[$n $coll $size]%$'\n'}
			rmed=$(median <<<"$rs")
			aim=""
			if [[ $n == 4 && $coll == alltoall && $size == 4194304 ]]; then
				aim="fc/MPI <= 1: $(awk -v r="$rmed" 'BEGIN { print (r <= 1) ? "met" : "not met" }')"
			fi
			printf '%-5s %-10s %-10s %12.1f %12.1f %8.2f %-13s %s\n' "$n" "$coll" "$size" "$fc" "$mp" \
				"$rmed" "$(printf '(%.2f-%.2f)' "$(sort -g <<<"$rs" | head -1)" \
					"$(sort -g <<<"$rs" | tail -1)")" "$aim"
			printf '%s %s %s %.1f %.1f %.3f\n' "$n" "$coll" "$size" "$fc" "$mp" "$rmed" >>"$OUT/coll.dat"
		else
			printf '%-5s %-10s %-10s %12.1f %12s %8s\n' "$n" "$coll" "$size" "$fc" - -
			printf '%s %s %s %.1f - -\n' "$n" "$coll" "$size" "$fc" >>"$OUT/coll.dat"
		fi
	done
done
echo "Medians of $ROUNDS rounds, both contenders in every round, alternating."
echo "size: bytes of each rank's send buffer (alltoall: size / ranks to each peer)."
((mpi)) || echo "Open MPI columns skipped: $mpi_why."
echo "Took $((SECONDS - start)) s. Raw lines: $RAW; table: $OUT/coll.dat."
