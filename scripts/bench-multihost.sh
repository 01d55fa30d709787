#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench-multihost.sh - what links between hosts cost (docs/performance.md,
# "Across hosts"): channels between two simulated hosts (fpgacomm-run
# --hosts, links over libfabric's tcp provider on 127.0.0.0/8) beside Open
# MPI over its tcp BTL (--mca btl tcp,self: loopback TCP, no shared
# memory) and beside a bare libfabric tcp ping-pong (fi_pingpong -p tcp -e
# rdm; again with its two processes bound to a core each, where taskset
# and 2 cores are: it spins in both); then allreduce and alltoall on 16
# ranks over 4 hosts beside Open MPI over tcp. Prints each pair and its
# ratio, and writes them to build/bench/multihost.dat.
#
# Needs root (the simulated hosts are mount namespaces). Open MPI and
# fi_pingpong are optional: without them their column says why.
#
# FPGACOMM_BENCH_ROUNDS (default 3): runs of each, the best kept (a shared
# machine's noise only ever slows a run down); the rounds of every column
# alternate, so that a slow spell of the machine hits them all alike.
# FPGACOMM_BENCH_BASE=DIR: the tools of another build (a copy of its
# build/tools), measured round by round beside this one (column "base").
# FPGACOMM_BENCH_COLL=0: the channels only, no collectives.

set -euo pipefail

prog=${0##*/}
TOOLS=build/tools
OUT=build/bench
ROUNDS=${FPGACOMM_BENCH_ROUNDS:-3}
RUN_TIMEOUT=300
MPIRUN_ARGS=(--allow-run-as-root --oversubscribe --mca btl tcp,self
	--mca btl_tcp_if_include lo --mca pml ob1)

if [ "$(id -u)" != 0 ]; then
	echo "$prog: simulated hosts need root (unshare, mount); skipped"
	exit 77
fi
mkdir -p "$OUT"
DAT=$OUT/multihost.dat
: >"$DAT"

# best LINES...: per size (first column), the best of the rounds' second
# column: the least for latency (-l), the most for bandwidth (-b).
best() {
	local mode=$1
	sort -k1,1n -k2,2g | awk -v m="$mode" '
		{ if (!($1 in v) || (m == "-l" && $2 < v[$1]) || (m == "-b" && $2 > v[$1])) v[$1] = $2 }
		END { for (s in v) print s, v[s] }' | sort -k1,1n
}

# fpgacomm-bench output: data lines are "SIZE VALUE..."
data() { grep -E '^[0-9]+ ' | awk '{ print $1, $2 }'; }

BASE=${FPGACOMM_BENCH_BASE:-}

fc_p2p() { # MODE SIZES [TOOLS]: one round
	local t=${3:-$TOOLS}
	timeout "$RUN_TIMEOUT" "$t"/fpgacomm-run --hosts 2 -n 2 -t full:2 -- \
		"$t"/fpgacomm-bench "$1" -s "$2" | data || true
}

mpi_why=
if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
	mpi_why="no Open MPI (scripts/install-deps.sh --mpi)"
elif ! mpicc -O2 -std=gnu11 -o "$OUT/osu-mpi" scripts/bench/osu-mpi.c 2>"$OUT/osu-mpi.log" ||
	! mpicc -O2 -std=gnu11 -o "$OUT/coll-mpi" scripts/bench/coll-mpi.c -lm 2>>"$OUT/osu-mpi.log"; then
	mpi_why="mpicc could not build scripts/bench/osu-mpi.c or coll-mpi.c"
fi

mpi_p2p() { # MODE SIZES: one round
	timeout "$RUN_TIMEOUT" mpirun "${MPIRUN_ARGS[@]}" -np 2 \
		"$OUT/osu-mpi" "$1" -s "$2" 2>/dev/null | data || true
}

# fi_pingpong's line per size: bytes #sent #ack total time MB/sec
# usec/xfer Mxfers/sec; usec/xfer is per message, one way.
# PIN=1: server on core 0, client on core 1.
fi_p2p() { # SIZE [PIN]: one round
	local port=$((47600 + RANDOM % 1000)) srv=() cli=()
	if [ "${2:-0}" = 1 ]; then
		srv=(taskset -c 0)
		cli=(taskset -c 1)
	fi
	timeout 60 "${srv[@]}" fi_pingpong -p tcp -e rdm -B "$port" -S "$1" \
		-I 1000 >/dev/null 2>&1 &
	sleep 0.5
	timeout 60 "${cli[@]}" fi_pingpong -p tcp -e rdm -P "$port" -S "$1" \
		-I 1000 127.0.0.1 2>/dev/null |
		awk -v s="$1" '$1 ~ /^[0-9]/ && NF >= 7 { print s, $7 }' || true
	wait || true
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }

lookup() { awk -v s="$1" '$1 == s { print $2 }'; }

PIN=0
command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ] && PIN=1
echo "== Across 2 simulated hosts: channels over libfabric tcp, Open MPI over its tcp BTL, bare fi_pingpong"
echo "   (this machine: $(nproc) cores; every process of the run shares them)"
RAW=$(mktemp -d)
trap 'rm -rf "$RAW"' EXIT
for i in $(seq "$ROUNDS"); do
	fc_p2p pingpong 8,4K,1M >>"$RAW/fc_lat"
	fc_p2p bw 4M >>"$RAW/fc_bw"
	if [ -n "$BASE" ]; then
		fc_p2p pingpong 8,4K,1M "$BASE" >>"$RAW/base_lat"
		fc_p2p bw 4M "$BASE" >>"$RAW/base_bw"
	fi
	if [ -z "$mpi_why" ]; then
		mpi_p2p pingpong 8,4K,1M >>"$RAW/mpi_lat"
		mpi_p2p bw 4M >>"$RAW/mpi_bw"
	fi
	if command -v fi_pingpong >/dev/null 2>&1; then
		(fi_p2p 8; fi_p2p 4096; fi_p2p 1048576) >>"$RAW/fi_lat" || true
		if [ "$PIN" = 1 ]; then
			(fi_p2p 8 1; fi_p2p 4096 1; fi_p2p 1048576 1) \
				>>"$RAW/fip_lat" || true
		fi
	fi
done
col() { [ -s "$RAW/$1" ] && best "$2" <"$RAW/$1" || true; }
fc_lat=$(col fc_lat -l)
fc_bw=$(col fc_bw -b)
base_lat=$(col base_lat -l)
base_bw=$(col base_bw -b)
mpi_lat=$(col mpi_lat -l)
mpi_bw=$(col mpi_bw -b)
fi_lat=$(col fi_lat -l)
fip_lat=$(col fip_lat -l)
printf "%-10s %14s %14s %8s %16s %8s" "size" "fpgacomm us" "Open MPI us" "ratio" "fi_pingpong us" "ratio"
[ -n "$BASE" ] && printf " %10s %8s" "base us" "ratio"
[ "$PIN" = 1 ] && printf " %14s %8s" "fi_pp bound us" "ratio"
echo
for s in 8 4096 1048576; do
	a=$(echo "$fc_lat" | lookup $s)
	b=$(echo "$mpi_lat" | lookup $s)
	c=$(echo "$fi_lat" | lookup $s)
	d=$(echo "$base_lat" | lookup $s)
	printf "%-10s %14s %14s %8s %16s %8s" "$s" "${a:--}" "${b:--}" "$(ratio "${a:-0}" "${b:-0}")" \
		"${c:--}" "$(ratio "${a:-0}" "${c:-0}")"
	[ -n "$BASE" ] && printf " %10s %8s" "${d:--}" "$(ratio "${d:-0}" "${b:-0}")"
	e=$(echo "$fip_lat" | lookup $s)
	[ "$PIN" = 1 ] && printf " %14s %8s" "${e:--}" "$(ratio "${a:-0}" "${e:-0}")"
	echo
	echo "lat $s ${a:--} ${b:--} ${c:--}${BASE:+ ${d:--}} ${e:--}" >>"$DAT"
done
a=$(echo "$fc_bw" | lookup 4194304)
b=$(echo "$mpi_bw" | lookup 4194304)
d=$(echo "$base_bw" | lookup 4194304)
printf "%-10s %14s %14s %8s" "bw 4M" "${a:--}" "${b:--}" "$(ratio "${a:-0}" "${b:-0}")"
[ -n "$BASE" ] && printf "   base %s MB/s, ratio %s" "${d:--}" "$(ratio "${d:-0}" "${b:-0}")"
echo "   (MB/s, ratio fpgacomm / Open MPI)"
echo "bw 4194304 ${a:--} ${b:--}${BASE:+ ${d:--}}" >>"$DAT"
[ -n "$mpi_why" ] && echo "   Open MPI: $mpi_why"
[ "${FPGACOMM_BENCH_COLL:-1}" = 0 ] && exit 0

echo
echo "== 16 ranks over 4 simulated hosts (torus:4x4): collectives beside Open MPI over tcp"
printf "%-10s %-8s %14s %14s %8s\n" "coll" "bytes" "fpgacomm us" "Open MPI us" "ratio"
for coll in allreduce alltoall; do
	fc=$(for i in $(seq "$ROUNDS"); do
		timeout "$RUN_TIMEOUT" $TOOLS/fpgacomm-run --hosts 4 -n 16 -t torus:4x4 -- \
			$TOOLS/fpgacomm-bench "$coll" -s 1K,64K -i 20 2>/dev/null |
			awk '$1 ~ /^[0-9]+$/ { print $1, $6 }' || true
	done | best -l)
	if [ -z "$mpi_why" ]; then
		mp=$(for i in $(seq "$ROUNDS"); do
			timeout "$RUN_TIMEOUT" mpirun "${MPIRUN_ARGS[@]}" -np 16 \
				"$OUT/coll-mpi" "$coll" -s 1K,64K -i 20 2>/dev/null |
				awk '$1 ~ /^[0-9]+$/ { print $1, $6 }' || true
		done | best -l)
	else
		mp=
	fi
	for s in 1024 65536; do
		a=$(echo "$fc" | lookup $s)
		b=$(echo "$mp" | lookup $s)
		printf "%-10s %-8s %14s %14s %8s\n" "$coll" "$s" "${a:--}" "${b:--}" "$(ratio "${a:-0}" "${b:-0}")"
		echo "$coll $s ${a:--} ${b:--}" >>"$DAT"
	done
done
