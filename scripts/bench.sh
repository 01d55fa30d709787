#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench.sh: DMA throughput on the emulated board beside a plain memcpy of the
# same bytes, for small and long chains, with the doorbells each chain cost.
# The machine is shared and noisy, so each case runs ROUNDS times, DMA and
# memcpy side by side in every round, and the table shows medians: of the
# throughputs, and of the per-round ratios. Run from the repository root
# after `make`; sized to finish in well under a minute on 2 cores. The
# medians also go to build/bench/dma.dat (a plain table).
set -euo pipefail
. "$(dirname "$0")/bench/data.sh"

TOOLS=build/tools
DEV=${FPGACOMM_BENCH_DEVICE:-emu:}
ROUNDS=${FPGACOMM_BENCH_ROUNDS:-5}
# 1 MiB x 255 needs 255 MiB of board memory; it is backed only when written.
export FPGACOMM_EMU_MEM=${FPGACOMM_EMU_MEM:-1G}

if [[ ! -x $TOOLS/fpgacomm-dma ]]; then
	echo "bench: $TOOLS/fpgacomm-dma not found: run 'make' in the repository root first" >&2
	exit 1
fi

# label size count iterations-per-round
CASES=(
	"4_KiB_x_1    4K   1   40000"
	"4_KiB_x_255  4K   255 800"
	"1_MiB_x_255  1M   255 4"
)

# field JSON_LINE KEY: the number after "KEY": on one line of fpgacomm-dma --json.
field() {
	sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" <<<"$1"
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

printf '%-12s %-4s %10s %12s %18s %16s\n' \
	"chain" "dir" "DMA GB/s" "memcpy GB/s" "dma/memcpy (range)" "doorbells/chain"
printf '%-12s %-4s %10s %12s %18s %16s\n' \
	"------------" "----" "--------" "-----------" "------------------" "---------------"

OUT=build/bench
mkdir -p "$OUT"
rows=""
start=$SECONDS
for c in "${CASES[@]}"; do
	read -r label size count iters <<<"$c"
	declare -A gb=() ratio=() bells=()
	mcs=""
	for ((r = 0; r < ROUNDS; r++)); do
		json=$("$TOOLS/fpgacomm-dma" -d "$DEV" -s "$size" -n "$count" -i "$iters" \
			--memcpy --verify --json)
		if ! grep -q '"verify": "ok"' <<<"$json"; then
			echo "bench: $label: data read back did not verify" >&2
			exit 1
		fi
		mcs+="$(field "$(grep '"memcpy"' <<<"$json")" gbps)"$'\n'
		for dir in h2b b2h; do
			line=$(grep "\"$dir\"" <<<"$json")
			gb[$dir]+="$(field "$line" gbps)"$'\n'
			ratio[$dir]+="$(field "$line" dma_memcpy_ratio)"$'\n'
			bells[$dir]+="$(field "$line" doorbells_per_chain)"$'\n'
		done
	done
	mc=$(median <<<"${mcs%$'\n'}")
	for dir in h2b b2h; do
		rs=${ratio[$dir]%$'\n'}
		lo=$(sort -g <<<"$rs" | head -1)
		hi=$(sort -g <<<"$rs" | tail -1)
		printf '%-12s %-4s %10.2f %12.2f %6.2f (%.2f-%.2f) %16.2f\n' "${label//_/ }" "$dir" \
			"$(median <<<"${gb[$dir]%$'\n'}")" "$mc" \
			"$(median <<<"$rs")" "$lo" "$hi" \
			"$(median <<<"${bells[$dir]%$'\n'}")"
		case $size in
		*K) bytes=$((${size%K} * 1024)) ;;
		*M) bytes=$((${size%M} * 1048576)) ;;
		*) bytes=$size ;;
		esac
		rows+="$bytes $count $dir $(median <<<"${gb[$dir]%$'\n'}") $mc $(median <<<"$rs")"
		rows+=" $(median <<<"${bells[$dir]%$'\n'}")"$'\n'
	done
	unset gb ratio bells
done
dat_header "$OUT/dma.dat" \
	"Chaining DMA on $DEV beside memcpy of the same bytes, medians of $ROUNDS rounds" \
	"chain_size_B descriptors dir dma_GBps memcpy_GBps dma/memcpy doorbells_per_chain"
printf '%s' "$rows" >>"$OUT/dma.dat"
echo
echo "Medians of $ROUNDS rounds; in each round DMA and memcpy ran side by side."
echo "GB/s = 10^9 bytes/s of wall time; each case warmed up, data verified."
echo "memcpy copies the same bytes between two host buffers: small cases run"
echo "from the CPU cache, so there the ratio measures per-chain overhead."
echo "Board: $DEV (FPGACOMM_EMU_MEM=$FPGACOMM_EMU_MEM); took $((SECONDS - start)) s. Table: $OUT/dma.dat."
