#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# plot.sh: draw the tables that the bench scripts wrote under build/bench/
# as PNG plots beside them, with gnuplot. `make bench` runs it last. A
# plot whose table is missing is skipped, saying so.
#
# usage: scripts/plot.sh [DIR]      (DIR: where the tables are, and the
#                                    plots go; default build/bench)
#
#   fabric-latency.dat   -> fabric-latency.png    scripts/bench-fabric.sh
#   fabric-bandwidth.dat -> fabric-bandwidth.png  scripts/bench-fabric.sh
#   fabric-hops.dat      -> fabric-hops.png       scripts/bench-fabric.sh
#   coll.dat             -> coll.png              scripts/bench-coll.sh
#   sort.dat             -> sort.png              scripts/bench-sort.sh
#   hbm.dat, hbm-passes.dat -> hbm.png            scripts/bench-hbm.sh
#
# Each plot's caption is the machine, date, tree and load its table names.
# Exit status: 0 done (plots without a table skipped), 1 failed, 2 bad
# usage, 77 gnuplot missing (scripts/install-deps.sh --plot installs it).
set -euo pipefail

prog=${0##*/}
DIR=${1:-build/bench}
[ $# -le 1 ] || { echo "usage: $prog [DIR]" >&2; exit 2; }
[[ -d $DIR ]] || { echo "$prog: no directory $DIR: run the bench scripts first" >&2; exit 1; }
if ! command -v gnuplot >/dev/null 2>&1; then
	echo "$prog: SKIP: gnuplot not installed (scripts/install-deps.sh --plot installs it)" >&2
	exit 77
fi

# caption FILE: "machine, date, tree" from a table's comment lines.
caption() {
	local m d t l
	m=$(sed -n 's/^# machine: //p' "$1" | head -1)
	d=$(sed -n 's/^# date: //p' "$1" | head -1)
	t=$(sed -n 's/^# tree: //p' "$1" | head -1)
	l=$(sed -n 's/^# load: \([0-9.]*\) at the start, \([0-9.]*\) at the end.*/load average \1 to \2/p' "$1" | head -1)
	# gnuplot strings are in double quotes: keep them out of the text
	echo "${m//\"/}; ${d//\"/}; tree ${t//\"/}${l:+; $l}"
}

# have NAME...: all the tables there? else say which plot is skipped.
have() {
	local f
	for f in "$@"; do
		if [[ ! -s $DIR/$f ]]; then
			echo "$prog: skip ${1%.dat}.png: no $DIR/$f"
			return 1
		fi
	done
}

# plot PNG SCRIPT: run gnuplot on SCRIPT (stdin) with the common settings.
plot() {
	local png=$1
	{
		cat <<-EOF
		set terminal pngcairo size ${SIZE:-900,560} font "sans,10" noenhanced
		set output "$DIR/$png"
		set datafile missing "-"
		set grid
		set key top left
		EOF
		cat
	} | gnuplot
	echo "$prog: $DIR/$png"
}

# filtered tables for gnuplot, removed at exit
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fcplot.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

drawn=0

if have fabric-latency.dat; then
	f=$DIR/fabric-latency.dat
	plot fabric-latency.png <<-EOF
	set title "Channel latency between two ranks, one way\n$(caption "$f")"
	set xlabel "message size (bytes)"
	set ylabel "us (median over rounds)"
	set logscale xy 2
	set xtics ("8 B" 8, "64 B" 64, "512 B" 512, "4 KiB" 4096, "32 KiB" 32768, "256 KiB" 262144, "1 MiB" 1048576, "4 MiB" 4194304)
	set format y "%g"
	plot "$f" using 1:2 with linespoints lw 2 pt 7 title "fpgacomm (emulated boards)", \
	     "$f" using 1:3 with linespoints lw 2 pt 5 title "Open MPI, btl vader", \
	     "$f" using 1:4 with linespoints lw 2 pt 9 title "plain shared-memory ring"
	EOF
	drawn=$((drawn + 1))
fi

if have fabric-bandwidth.dat; then
	f=$DIR/fabric-bandwidth.dat
	plot fabric-bandwidth.png <<-EOF
	set title "Streaming bandwidth between two ranks, windows of 16 sends\n$(caption "$f")"
	set xlabel "message size (bytes)"
	set ylabel "MB/s (10^6 bytes/s, median over rounds)"
	set logscale x 2
	set xtics ("8 B" 8, "64 B" 64, "512 B" 512, "4 KiB" 4096, "32 KiB" 32768, "256 KiB" 262144, "1 MiB" 1048576, "4 MiB" 4194304)
	set yrange [0:*]
	plot "$f" using 1:2 with linespoints lw 2 pt 7 title "fpgacomm (emulated boards)", \
	     "$f" using 1:3 with linespoints lw 2 pt 5 title "Open MPI, btl vader"
	EOF
	drawn=$((drawn + 1))
fi

if have fabric-hops.dat; then
	f=$DIR/fabric-hops.dat
	plot fabric-hops.png <<-EOF
	set title "Latency against hops on a 4x4 torus (16 ranks), one way\n$(caption "$f")"
	set xlabel "hops from rank 0"
	set ylabel "us (median over rounds)"
	set xtics 1
	set xrange [0.5:4.5]
	set yrange [0:*]
	plot "$f" using 1:3 with linespoints lw 2 pt 7 title "8 B", \
	     "$f" using 1:4 with linespoints lw 2 pt 5 title "4 KiB"
	EOF
	drawn=$((drawn + 1))
fi

if have coll.dat; then
	f=$DIR/coll.dat
	# sel COLL SIZE: a file of the rows of one case (SIZE 0: any size),
	# as "ranks fc mpi ratio"
	sel() {
		awk -v c="$1" -v s="$2" '!/^#/ && $2 == c && (s == 0 || $3 == s) { print $1, $4, $5, $6 }' \
			"$f" >"$TMP/coll-$1-$2"
		echo "$TMP/coll-$1-$2"
	}
	panel() {
		cat <<-EOF
		set title "$1"
		plot "$(sel "$2" "$3")" using 1:2 with linespoints lw 2 pt 7 title "fpgacomm", \
		     "$(sel "$2" "$3")" using 1:3 with linespoints lw 2 pt 5 title "Open MPI"
		EOF
	}
	SIZE=1200,760 plot coll.png <<-EOF
	set multiplot layout 2,3 title "Collectives against ranks (out-of-place time, median over rounds)\n$(caption "$f")"
	set xlabel "ranks"
	set ylabel "us"
	set logscale xy 2
	set xtics (2, 4, 8, 16)
	set xrange [1.7:*]
	set offsets 0, graph 0.08, 0, 0
	set format y "%g"
	$(panel "allreduce f32 sum, 4 KiB" allreduce 4096)
	$(panel "allreduce f32 sum, 4 MiB" allreduce 4194304)
	$(panel "allreduce f32 sum, 64 MiB" allreduce 67108864)
	$(panel "alltoall, 1 MiB per peer" alltoall 0)
	$(panel "bcast, 1 MiB" bcast 1048576)
	set title "fpgacomm / Open MPI (below 1: fpgacomm faster)"
	set ylabel "ratio of times"
	set ytics (0.25, 0.5, 1, 2, 4, 8, 16)
	set key top left
	plot "$(sel allreduce 4096)" using 1:4 with linespoints lw 2 title "allreduce 4 KiB", \
	     "$(sel allreduce 4194304)" using 1:4 with linespoints lw 2 title "allreduce 4 MiB", \
	     "$(sel allreduce 67108864)" using 1:4 with linespoints lw 2 title "allreduce 64 MiB", \
	     "$(sel alltoall 0)" using 1:4 with linespoints lw 2 title "alltoall", \
	     "$(sel bcast 1048576)" using 1:4 with linespoints lw 2 title "bcast", \
	     1 with lines lc "black" dt 2 notitle
	unset multiplot
	EOF
	drawn=$((drawn + 1))
fi

if have sort.dat; then
	f=$DIR/sort.dat
	keys=$(sed -n 's/^# Sort of \([0-9]*\) .*/\1/p' "$f" | head -1)
	awk '!/^#/ { printf "\"%s ranks\" \"%s-bit %s\" %s %s %s\n", $1, $2, $3, $4, $5, $6 }' "$f" >"$TMP/sort"
	# 2^k for a power of two
	if [[ $keys =~ ^[0-9]+$ ]] && ((keys > 0 && (keys & (keys - 1)) == 0)); then
		k=0; while ((1 << k < keys)); do k=$((k + 1)); done
		keys="2^$k"
	fi
	plot sort.png <<-EOF
	set title "Distributed sort of ${keys:-?} 32-bit keys (median time; lower is faster)\n$(caption "$f")"
	set ylabel "ms"
	set yrange [0:*]
	set style data histogram
	set style histogram clustered gap 1
	set style fill solid 0.8 border -1
	set boxwidth 0.9
	set xtics nomirror
	set bmargin 4
	set key top left
	plot "$TMP/sort" using 3:xtic(sprintf("%s\n%s", strcol(1), strcol(2))) title "fpgacomm", \
	     "" using 4 title "Open MPI, same steps", \
	     "" using 5 title "one process"
	EOF
	drawn=$((drawn + 1))
fi

if have hbm.dat hbm-passes.dat; then
	f=$DIR/hbm.dat
	g=$DIR/hbm-passes.dat
	# rows SIZE STREAMS FILE: "ls board host" of one case
	rows() {
		awk -v s="$1" -v n="$2" '!/^#/ && $1 == s && $3 == n { print $2, $4, $5 }' "$3" \
			>"$TMP/hbm-$1-$2-${3##*/}"
		echo "$TMP/hbm-$1-$2-${3##*/}"
	}
	sizes=$(awk '!/^#/ { print $1 }' "$f" | sort -nu)
	lines=()
	i=1
	for s in $sizes; do
		lines+=("\"$(rows "$s" 2 "$f")\" using 1:2 with linespoints lw 2 lc $i pt 7 title \"$((s / 1048576)) MiB, 2 streams per LS\"")
		lines+=("\"$(rows "$s" 2 "$f")\" using 1:3 with lines lw 1 lc $i dt 2 title \"$((s / 1048576)) MiB, host loop\"")
		i=$((i + 1))
	done
	SIZE=1200,620 plot hbm.png <<-EOF
	set multiplot layout 1,2 title "HBM streams: the invert on the emulated board's local stores\n$(caption "$f")"
	set xlabel "local stores (LS) used"
	set ylabel "GB/s (best round)"
	set logscale x 2
	set xtics (1, 2, 4, 8, 16, 32)
	set yrange [0:*]
	set key below maxrows 4
	set title "one invert per element"
	plot $(IFS=,; echo "${lines[*]}")
	set title "15 inverts per chunk, 16 MiB"
	plot "$(rows 16777216 1 "$g")" using 1:2 with linespoints lw 2 pt 7 title "1 stream per LS", \
	     "$(rows 16777216 2 "$g")" using 1:2 with linespoints lw 2 pt 5 title "2 streams per LS", \
	     "$(rows 16777216 2 "$g")" using 1:3 with lines lw 1 dt 2 title "host loop"
	unset multiplot
	EOF
	drawn=$((drawn + 1))
fi

echo "$prog: $drawn plot(s) in $DIR"
