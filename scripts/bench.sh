#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench.sh: DMA throughput on the emulated board beside a plain memcpy of the
# same bytes, measured in the same run, for small and long chains, with the
# doorbells each chain cost. Run from the repository root after `make`.
# Sized to finish in well under a minute on a 2-core machine.
set -euo pipefail

TOOLS=build/tools
DEV=${FPGACOMM_BENCH_DEVICE:-emu:}
# 1 MiB x 255 needs 255 MiB of board memory; it is backed only when written.
export FPGACOMM_EMU_MEM=${FPGACOMM_EMU_MEM:-1G}

if [[ ! -x $TOOLS/fpgacomm-dma ]]; then
	echo "bench: $TOOLS/fpgacomm-dma not found: run 'make' in the repository root first" >&2
	exit 1
fi

# label size count iterations: few long chains, many short ones, so each
# case moves enough bytes to time yet all of them fit the budget.
CASES=(
	"4_KiB_x_1    4K   1   200000"
	"4_KiB_x_255  4K   255 4000"
	"1_MiB_x_255  1M   255 20"
)

# field JSON_LINE KEY: the number after "KEY": on one line of fpgacomm-dma --json.
field() {
	sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" <<<"$1"
}

printf '%-12s %-4s %10s %12s %10s %16s\n' \
	"chain" "dir" "DMA GB/s" "memcpy GB/s" "dma/memcpy" "doorbells/chain"
printf '%-12s %-4s %10s %12s %10s %16s\n' \
	"------------" "----" "--------" "-----------" "----------" "---------------"

start=$SECONDS
for c in "${CASES[@]}"; do
	read -r label size count iters <<<"$c"
	json=$("$TOOLS/fpgacomm-dma" -d "$DEV" -s "$size" -n "$count" -i "$iters" \
		--memcpy --verify --json)
	mc=$(field "$(grep '"memcpy"' <<<"$json")" gbps)
	for dir in h2b b2h; do
		line=$(grep "\"$dir\"" <<<"$json")
		printf '%-12s %-4s %10.2f %12.2f %10.2f %16.2f\n' "${label//_/ }" "$dir" \
			"$(field "$line" gbps)" "$mc" \
			"$(field "$line" dma_memcpy_ratio)" \
			"$(field "$line" doorbells_per_chain)"
	done
	if ! grep -q '"verify": "ok"' <<<"$json"; then
		echo "bench: $label: data read back did not verify" >&2
		exit 1
	fi
done
echo
echo "GB/s = 10^9 bytes/s of wall time; each case warmed up, data verified."
echo "memcpy copies the same bytes between two host buffers: small cases run"
echo "from the CPU cache, so there the ratio measures per-chain overhead."
echo "Board: $DEV (FPGACOMM_EMU_MEM=$FPGACOMM_EMU_MEM); took $((SECONDS - start)) s."
