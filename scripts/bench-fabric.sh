#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench-fabric.sh: channel latency and bandwidth between two ranks of an
# emulated cluster beside Open MPI's shared-memory transport and, for
# latency, beside a plain shared-memory ring (the floor), then latency
# against hop count on a 4x4 torus. Run from the repository root after
# `make`; `make bench` runs it as its third part.
#
# usage: scripts/bench-fabric.sh [--rounds N] [--no-mpi] [--no-ring]
#                                [--no-torus] [--bind]
#   --rounds N   rounds (default $FPGACOMM_BENCH_ROUNDS, else 5)
#   --no-mpi     without Open MPI (also when it is not installed)
#   --no-ring    without the ring
#   --no-torus   leave out the hop-count part
#   --bind       bind fpgacomm's two ranks one per CPU (taskset), as mpirun
#                binds Open MPI's and shm-ring binds its processes;
#                fpgacomm-run leaves them to the scheduler
#
# Two ranks: fpgacomm is `fpgacomm-run -n 2 -- fpgacomm-bench` (topology
# full:2, one hop); Open MPI is scripts/bench/osu-mpi.c, compiled here with
# mpicc into build/bench/, run as `mpirun -n 2 --mca btl self,vader`. Both
# programs measure the same way (see osu-mpi.c): ping-pong one-way latency
# is the round trip over 2, bandwidth is windows of 16 non-blocking sends
# then a 1-byte ack, the same sizes, iteration counts and warm-up. The
# host's two vCPUs move under the ranks and cross-core figures swing 2-5x
# from run to run, so each metric runs N rounds, the two contenders side by
# side in every round (in alternating order), and the table shows medians
# and the median and range of the per-round ratios.
#
# The ring: scripts/bench/shm-ring.c, compiled here with cc, two processes
# passing each message through a single-producer single-consumer ring in
# shared memory (copy in, copy out), measured as the other two (ping-pong
# of 8 B, 4 KiB and 64 KiB: the floor for small messages; two copies lose
# to one for large ones). It runs in every round too, the three taking
# turns to go first.
#
# Aims (the project's targets): 8 B latency at or below Open MPI's (fc/MPI <= 1) and
# within 2x of the ring (fc/ring <= 2); 4 KiB and 64 KiB latency at or
# below Open MPI's; 4 MiB bandwidth at or above. Each is judged on the
# median of the per-round ratios and printed as met or not met.
#
# Torus: `fpgacomm-run -n 16 --topology torus:4x4`, rank 0 pinging a rank
# at 1, 2, 3 and 4 hops (chosen with fpgacomm-route hops) while the other
# 14 ranks wait in fc_barrier. 16 processes share the 2 cores.
#
# Raw per-round figures go to build/bench/fabric-raw.txt; the medians to
# build/bench/fabric-latency.dat, fabric-bandwidth.dat and fabric-hops.dat
# (plain tables that scripts/plot.sh draws).
# Exit status: 0 done (the Open MPI half skipped, saying why, when Open
# MPI is missing or does not run; the same for the ring without cc), 1
# failed, 2 bad usage.
set -euo pipefail
. "$(dirname "$0")/bench/data.sh"

prog=${0##*/}
TOOLS=build/tools
OUT=build/bench
ROUNDS=${FPGACOMM_BENCH_ROUNDS:-5}
# per run; far above what a run takes, only so that a hang ends
RUN_TIMEOUT=120
LAT_SIZES="8,64,512,4K,32K,64K,256K,1M"
BW_SIZES="4K,64K,256K,1M,4M"
HOP_SIZES="8,4K"
# the ring is the floor for small messages: copied twice, a large one loses
# to a transport that copies once (rendezvous, CMA)
RING_SIZES="8,64,512,4K,32K,64K"
TORUS=torus:4x4
# shellcheck disable=SC2054 # self,vader is one argument
MPIRUN_ARGS=(--allow-run-as-root --oversubscribe -n 2 --mca btl self,vader)

mpi=1 ring=1 torus=1 bind=0
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=${2-}; shift 2 || { echo "$prog: --rounds N" >&2; exit 2; } ;;
	--no-mpi) mpi=0; shift ;;
	--no-ring) ring=0; shift ;;
	--bind) bind=1; shift ;;
	--no-torus) torus=0; shift ;;
	-h | --help) sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "$prog: --rounds takes a positive number" >&2; exit 2; }

for t in fpgacomm-run fpgacomm-bench fpgacomm-route; do
	if [[ ! -x $TOOLS/$t ]]; then
		echo "$prog: $TOOLS/$t not found: run 'make' in the repository root first" >&2
		exit 1
	fi
done
# the tools link the library statically: they are what is measured
if ! make -q "$TOOLS/fpgacomm-bench" "$TOOLS/fpgacomm-run" "$TOOLS/fpgacomm-route" >/dev/null 2>&1; then
	echo "$prog: warning: build/tools is older than the sources: this measures the last build ('make' rebuilds)" >&2
fi
# which tree this measures: the commit, and a digest of the uncommitted
# changes to the library, the emulator and the headers
tree="$(git describe --always --dirty 2>/dev/null || echo unknown)"
if git rev-parse --git-dir >/dev/null 2>&1; then
	tree+=", $(git status --porcelain lib emu include | wc -l) file(s) of lib/ emu/ include/ changed"
	tree+=" (diff $(git diff HEAD -- lib emu include | sha1sum | cut -c1-8))"
fi
mkdir -p "$OUT"
RAW=$OUT/fabric-raw.txt
echo "# $(date -u '+%F %T UTC'), tree $tree" >"$RAW"

median() {
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# The data lines of fpgacomm-bench or osu-mpi output: "SIZE VALUE".
data() {
	awk '!/^#/ && NF == 2 { print $1, $2 }'
}
human() {
	case $1 in
	*[!0-9]*) echo "$1" ;;
	*) if (($1 >= 1048576 && $1 % 1048576 == 0)); then echo "$(($1 / 1048576)) MiB"
	   elif (($1 >= 1024 && $1 % 1024 == 0)); then echo "$(($1 / 1024)) KiB"
	   else echo "$1 B"; fi ;;
	esac
}
sizes_of() {
	local s list=() v
	IFS=, read -ra s <<<"$1"
	for v in "${s[@]}"; do
		case $v in
		*K) list+=($((${v%K} * 1024))) ;;
		*M) list+=($((${v%M} * 1048576))) ;;
		*) list+=("$v") ;;
		esac
	done
	echo "${list[@]}"
}

# ---- Open MPI: there, compiles, runs? ----
mpi_why=""
if ((mpi)); then
	if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
		mpi_why="Open MPI not installed (no mpicc or mpirun; scripts/install-deps.sh --mpi installs it)"
	elif ! mpicc -O2 -std=gnu11 -Wall -Wextra -o "$OUT/osu-mpi" scripts/bench/osu-mpi.c 2>"$OUT/osu-mpi.log"; then
		mpi_why="mpicc could not build scripts/bench/osu-mpi.c (see $OUT/osu-mpi.log)"
	elif ! timeout "$RUN_TIMEOUT" mpirun "${MPIRUN_ARGS[@]}" "$OUT/osu-mpi" pingpong -s 8 -i 10 \
		>>"$OUT/osu-mpi.log" 2>&1; then
		mpi_why="mpirun ${MPIRUN_ARGS[*]} did not run (see $OUT/osu-mpi.log)"
	fi
	if [[ -n $mpi_why ]]; then
		echo "$prog: SKIP the Open MPI half: $mpi_why; fpgacomm alone below" >&2
		mpi=0
	fi
else
	mpi_why="--no-mpi"
fi

# ---- --bind: the first two CPUs allowed, one a line, for the two ranks ----
if ((bind)); then
	if ! command -v taskset >/dev/null 2>&1; then
		echo "$prog: --bind needs taskset (util-linux)" >&2
		exit 1
	fi
	taskset -cp $$ | sed 's/.*: //' | tr ',' '\n' |
		awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }' | head -2 >"$OUT/cpus"
	if (($(wc -l <"$OUT/cpus") < 2)); then
		echo "$prog: --bind needs two CPUs" >&2
		exit 1
	fi
fi

# ---- The ring: compiles, runs? ----
ring_why=""
if ((ring)); then
	if ! command -v cc >/dev/null 2>&1; then
		ring_why="no C compiler (cc)"
	elif ! cc -O2 -std=gnu11 -Wall -Wextra -o "$OUT/shm-ring" scripts/bench/shm-ring.c \
		2>"$OUT/shm-ring.log"; then
		ring_why="cc could not build scripts/bench/shm-ring.c (see $OUT/shm-ring.log)"
	elif ! timeout "$RUN_TIMEOUT" "$OUT/shm-ring" pingpong -s 8 -i 10 >>"$OUT/shm-ring.log" 2>&1; then
		ring_why="$OUT/shm-ring did not run (see $OUT/shm-ring.log)"
	fi
	if [[ -n $ring_why ]]; then
		echo "$prog: SKIP the ring: $ring_why" >&2
		ring=0
	fi
else
	ring_why="--no-ring"
fi

# run_fc ARGS...: fpgacomm-bench as 2 ranks; run_mpi ARGS...: osu-mpi;
# run_ring ARGS...: shm-ring.
run_fc() {
	if ((bind)); then
		# shellcheck disable=SC2016 # expanded by the rank's sh
		"$TOOLS/fpgacomm-run" -n 2 --timeout "$RUN_TIMEOUT" -- sh -c \
			'exec taskset -c "$(sed -n "$((FPGACOMM_RANK + 1))p" "$0")" "$@"' \
			"$OUT/cpus" "$TOOLS/fpgacomm-bench" "$@"
	else
		"$TOOLS/fpgacomm-run" -n 2 --timeout "$RUN_TIMEOUT" -- "$TOOLS/fpgacomm-bench" "$@"
	fi
}
run_mpi() {
	timeout "$RUN_TIMEOUT" mpirun "${MPIRUN_ARGS[@]}" "$OUT/osu-mpi" "$@"
}
run_ring() {
	timeout "$RUN_TIMEOUT" "$OUT/shm-ring" "$@"
}

# ---- Two ranks, alternating contenders ----
declare -A val=()   # "who metric size" -> newline-separated per-round values
declare -A ratio=() # "metric size" -> per-round fpgacomm/MPI
declare -A rratio=() # "metric size" -> per-round fpgacomm/ring
METRICS=("pingpong $LAT_SIZES" "bw $BW_SIZES")

start=$SECONDS
# one untimed run of each, so that neither pays for a cold start in round 1
for m in "${METRICS[@]}"; do
	read -r metric sizes <<<"$m"
	run_fc "$metric" -s "$sizes" >/dev/null
	((mpi)) && run_mpi "$metric" -s "$sizes" >/dev/null
	((ring)) && [[ $metric == pingpong ]] && run_ring "$metric" -s "$RING_SIZES" >/dev/null
done

for ((r = 1; r <= ROUNDS; r++)); do
	for m in "${METRICS[@]}"; do
		read -r metric sizes <<<"$m"
		# who runs, each taking its turn to go first from round to round
		who_all=(fc)
		((mpi)) && who_all+=(mpi)
		((ring)) && [[ $metric == pingpong ]] && who_all+=(ring)
		order=()
		for ((k = 0; k < ${#who_all[@]}; k++)); do
			order+=("${who_all[(k + r - 1) % ${#who_all[@]}]}")
		done
		declare -A this=()
		for who in "${order[@]}"; do
			if [[ $who == ring ]]; then
				out=$(run_ring "$metric" -s "$RING_SIZES" | data)
			else
				out=$(run_"$who" "$metric" -s "$sizes" | data)
			fi
			while read -r size v; do
				val["$who $metric $size"]+="$v"$'\n'
				this[$who $size]=$v
				echo "round $r $who $metric $size $v" >>"$RAW"
			done <<<"$out"
		done
		if ((mpi)); then
			for size in $(sizes_of "$sizes"); do
				ratio["$metric $size"]+="$(awk -v a="${this[fc $size]}" -v b="${this[mpi $size]}" \
					'BEGIN { printf "%.4f", a / b }')"$'\n'
			done
		fi
		if [[ " ${order[*]} " == *" ring "* ]]; then
			for size in $(sizes_of "$RING_SIZES"); do
				rratio["$metric $size"]+="$(awk -v a="${this[fc $size]}" -v b="${this[ring $size]}" \
					'BEGIN { printf "%.4f", a / b }')"$'\n'
			done
		fi
		unset this
	done
done

lohi() {
	local s
	s=$(sort -g)
	echo "$(head -1 <<<"$s")-$(tail -1 <<<"$s")"
}

if ((mpi)); then
	mpi_name="Open MPI $(mpirun --version 2>/dev/null | sed -n '1s/.*) //p') (btl self,vader)"
else
	mpi_name="Open MPI skipped"
fi
if ((ring)); then
	ring_name="the ring (scripts/bench/shm-ring.c; latency, 8 B to 64 KiB)"
else
	ring_name="the ring skipped"
fi
if ((bind)); then
	fc_name="fpgacomm (fpgacomm-run -n 2, full:2, 1 hop, ranks bound to CPUs $(paste -sd, "$OUT/cpus"))"
else
	fc_name="fpgacomm (fpgacomm-run -n 2, full:2, 1 hop)"
fi
echo "Two ranks: $fc_name, $mpi_name, $ring_name"
row() {
	printf '%-12s %-8s %10s %10s %10s %7s %-13s %7s %-13s %s\n' "$@"
}
row "metric" "size" "fpgacomm" "Open MPI" "ring" "fc/MPI" "(range)" "fc/ring" "(range)" "aim"
row "------------" "--------" "--------" "--------" "----" "------" "-------" "-------" "-------" "---"
# judge RATIO OP LIMIT: "met" or "not met"
judge() {
	awk -v r="$1" -v op="$2" -v l="$3" 'BEGIN {
		ok = op == "<=" ? r <= l : r >= l
		print ok ? "met" : "not met" }'
}
# col VALUES: the median of newline-separated values, or "-" for none
col() {
	if [[ -n $1 ]]; then printf '%.3f' "$(median <<<"$1")"; else echo -; fi
}
# rcol RATIOS: the median ratio and its range, or "- -" for none
rcol() {
	if [[ -n $1 ]]; then
		printf '%.3f %s' "$(median <<<"$1")" \
			"$(awk -F- '{ printf "(%.2f-%.2f)", $1, $2 }' <<<"$(lohi <<<"$1")")"
	else
		echo "- -"
	fi
}
dat_header "$OUT/fabric-latency.dat" \
	"Two ranks, one-way latency (round trip / 2), medians of $ROUNDS rounds: $fc_name; $mpi_name; $ring_name" \
	"size_B fpgacomm_us openmpi_us ring_us"
dat_header "$OUT/fabric-bandwidth.dat" \
	"Two ranks, bandwidth in windows of 16 sends, medians of $ROUNDS rounds: $fc_name; $mpi_name" \
	"size_B fpgacomm_MBps openmpi_MBps"
for m in "${METRICS[@]}"; do
	read -r metric sizes <<<"$m"
	for size in $(sizes_of "$sizes"); do
		if [[ $metric == pingpong ]]; then
			label="latency us"
		else
			label="bw MB/s"
		fi
		rs=${ratio[$metric $size]-}
		rs=${rs%$'\n'}
		rr=${rratio[$metric $size]-}
		rr=${rr%$'\n'}
		aim=""
		if [[ $metric == pingpong && $size =~ ^(8|4096|65536)$ && -n $rs ]]; then
			aim="fc/MPI <= 1: $(judge "$(median <<<"$rs")" "<=" 1)"
		elif [[ $metric == bw && $size == 4194304 && -n $rs ]]; then
			aim="fc/MPI >= 1: $(judge "$(median <<<"$rs")" ">=" 1)"
		fi
		if [[ $metric == pingpong && $size == 8 && -n $rr ]]; then
			aim+="${aim:+; }fc/ring <= 2: $(judge "$(median <<<"$rr")" "<=" 2)"
		fi
		fc=${val[fc $metric $size]%$'\n'}
		mp=${val[mpi $metric $size]-}
		rg=${val[ring $metric $size]-}
		read -r rmed rrange <<<"$(rcol "$rs")"
		read -r gmed grange <<<"$(rcol "$rr")"
		row "$label" "$(human "$size")" "$(col "$fc")" "$(col "${mp%$'\n'}")" \
			"$(col "${rg%$'\n'}")" "$rmed" "$rrange" "$gmed" "$grange" "$aim"
		if [[ $metric == pingpong ]]; then
			echo "$size $(col "$fc") $(col "${mp%$'\n'}") $(col "${rg%$'\n'}")" >>"$OUT/fabric-latency.dat"
		else
			echo "$size $(col "$fc") $(col "${mp%$'\n'}")" >>"$OUT/fabric-bandwidth.dat"
		fi
	done
done
echo
if ((mpi || ring)); then
	echo "Medians of $ROUNDS rounds; in each round all ran, taking turns to go first."
else
	echo "Medians of $ROUNDS rounds."
fi
echo "Latency: one way (round trip / 2), us. Bandwidth: 10^6 bytes/s, windows of 16."
echo "fc/MPI, fc/ring: median (and range) of the per-round ratios; below 1 is faster"
echo "for latency, above 1 is faster for bandwidth."
((mpi)) || echo "Open MPI columns skipped: $mpi_why."
((ring)) || echo "Ring columns skipped: $ring_why."
echo "Took $((SECONDS - start)) s."

# ---- Latency against hop count on the torus ----
if ((torus)); then
	echo
	tstart=$SECONDS
	# the first rank at each hop count from rank 0
	peers=()
	for ((h = 1; h <= 4; h++)); do
		for ((b = 1; b < 16; b++)); do
			if [[ $("$TOOLS/fpgacomm-route" hops "$TORUS" 0 "$b") == "$h" ]]; then
				peers+=("$b")
				break
			fi
		done
	done
	if ((${#peers[@]} != 4)); then
		echo "$prog: no rank at each of 1-4 hops from 0 on $TORUS" >&2
		exit 1
	fi
	declare -A hv=()
	hop_sizes=$(sizes_of "$HOP_SIZES")
	run_torus() {
		"$TOOLS/fpgacomm-run" -n 16 --topology "$TORUS" --timeout "$RUN_TIMEOUT" -- \
			"$TOOLS/fpgacomm-bench" pingpong -s "$HOP_SIZES" -p "$1"
	}
	run_torus "${peers[0]}" >/dev/null # untimed
	for ((r = 1; r <= ROUNDS; r++)); do
		# rotate the order of the peers from round to round
		for ((k = 0; k < 4; k++)); do
			i=$(((k + r - 1) % 4))
			p=${peers[$i]}
			out=$(run_torus "$p")
			hops=$(sed -n 's/.*rank [0-9]*, \([0-9]*\) hop(s).*/\1/p' <<<"$out")
			if [[ $hops != $((i + 1)) ]]; then
				echo "$prog: rank $p: fpgacomm-bench says $hops hop(s), fpgacomm-route $((i + 1))" >&2
				exit 1
			fi
			while read -r size v; do
				hv["$hops $size"]+="$v"$'\n'
				echo "round $r torus $hops-hops rank-$p $size $v" >>"$RAW"
			done < <(data <<<"$out")
		done
	done
	echo "Latency against hop count: $TORUS, 16 ranks on $(nproc) CPUs, rank 0 pinging"
	dat_header "$OUT/fabric-hops.dat" \
		"Latency against hop count on $TORUS (16 ranks, rank 0 pinging), medians of $ROUNDS rounds" \
		"hops rank $(for size in $hop_sizes; do printf '%s_us ' "$size"; done)"
	printf '%-5s %-5s' "hops" "rank"
	for size in $hop_sizes; do
		printf ' %22s' "$(human "$size") us (range)"
	done
	echo
	for ((h = 1; h <= 4; h++)); do
		printf '%-5s %-5s' "$h" "${peers[$((h - 1))]}"
		line="$h ${peers[$((h - 1))]}"
		for size in $hop_sizes; do
			vs=${hv[$h $size]%$'\n'}
			line+=" $(printf '%.3f' "$(median <<<"$vs")")"
			printf ' %22s' "$(printf '%.3f (%s)' "$(median <<<"$vs")" \
				"$(awk -F- '{ printf "%.1f-%.1f", $1, $2 }' <<<"$(lohi <<<"$vs")")")"
		done
		echo
		echo "$line" >>"$OUT/fabric-hops.dat"
	done
	echo
	echo "Medians of $ROUNDS rounds of one-way latency (round trip / 2); the other 14"
	echo "ranks wait in fc_barrier meanwhile, and all 16 processes share $(nproc) CPUs."
	echo "Took $((SECONDS - tstart)) s."
fi
echo
echo "Tree at the start: $tree."
echo "Raw figures: $RAW; tables: $OUT/fabric-latency.dat, fabric-bandwidth.dat$( ((torus)) && echo ", fabric-hops.dat")."
