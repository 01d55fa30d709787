#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench-gpu-fabric.sh: GPU to GPU across two emulated boards, each rank
# with its own GPU (CUDA device = rank), beside cuMemcpyPeer and beside
# the three-copy path through host memory, in the same run
# (`fpgacomm-bench gpu-fabric`, tools/bench_gpu_fabric.c). Run from the
# repository root after `make`, on a machine with two GPUs (one GPU works
# too: both ranks then share it).
#
# usage: scripts/bench-gpu-fabric.sh [--rounds N] [--sizes LIST] [--fake]
#   --rounds N    rounds (default $FPGACOMM_BENCH_ROUNDS, else 5)
#   --sizes LIST  bandwidth sizes (default 64K,256K,1M,4M,16M,64M,256M)
#   --fake        use the stand-in CUDA driver (build/tests/fake-cuda):
#                 a smoke test of the benchmark on a machine without a GPU;
#                 its figures mean nothing
#
# The table goes to stdout and to build/bench/gpu-fabric.txt.
# Exit status: 0 done, 77 no CUDA driver or GPU (skipped, saying why),
# 1 failed, 2 bad usage.
set -euo pipefail

prog=${0##*/}
TOOLS=build/tools
OUT=build/bench
ROUNDS=${FPGACOMM_BENCH_ROUNDS:-5}
SIZES=64K,256K,1M,4M,16M,64M,256M
FAKE=0

usage() {
	echo "usage: $prog [--rounds N] [--sizes LIST] [--fake]" >&2
	exit 2
}

while (($#)); do
	case $1 in
	--rounds) ROUNDS=${2:?}; shift 2 ;;
	--sizes) SIZES=${2:?}; shift 2 ;;
	--fake) FAKE=1; shift ;;
	-h | --help) usage ;;
	*) echo "$prog: unknown argument '$1'" >&2; usage ;;
	esac
done

for t in fpgacomm-run fpgacomm-bench; do
	if [[ ! -x $TOOLS/$t ]]; then
		echo "$prog: $TOOLS/$t missing: run make first" >&2
		exit 1
	fi
done
if ((FAKE)); then
	if [[ ! -e build/tests/fake-cuda/libcuda.so.1 ]]; then
		echo "$prog: build/tests/fake-cuda/libcuda.so.1 missing: make tests" >&2
		exit 1
	fi
	export LD_LIBRARY_PATH=$PWD/build/tests/fake-cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	echo "# the stand-in CUDA driver: a smoke test, not a measurement"
fi
mkdir -p "$OUT"
set +e
timeout 3600 "$TOOLS/fpgacomm-run" -n 2 -- "$TOOLS/fpgacomm-bench" gpu-fabric \
	--rounds "$ROUNDS" --sizes "$SIZES" | tee "$OUT/gpu-fabric.txt"
rc=${PIPESTATUS[0]}
set -e
if ((rc == 77)); then
	echo "$prog: skipped: no CUDA driver or GPU (--fake runs the stand-in)"
fi
exit "$rc"
