#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench-msgcost.sh: what one small channel message costs the host, counted
# in instructions. `fpgacomm-bench msgcost` drives two boards of one
# emulated cluster (full:2) from one process and one thread, so nothing
# waits on another core and the count does not change from run to run.
# Run from the repository root after `make`; `make bench` runs it.
#
# usage: scripts/bench-msgcost.sh [--size S] [--iters N1,N2] [--rounds R]
#                                 [--top K]
#   --size S       message size in bytes (default 8)
#   --iters N1,N2  ping-pongs of the two counted runs (default 1000,3000)
#   --rounds R     timed runs without valgrind (default
#                  $FPGACOMM_BENCH_ROUNDS, else 5)
#   --top K        functions listed (default 10)
#
# Instructions: valgrind --tool=callgrind counts the instructions (Ir) of
# a run of N1 and of N2 ping-pongs (each after the same 100 untimed ones);
# the difference over 2 * (N2 - N1) one-way messages is one message's
# count, with start-up and teardown gone. It is everything the host does
# for the message: the sender's and the receiver's library and, since the
# boards are emulated in this process, the board model. Counted twice:
# with fc_chan_send and fc_chan_recv, the calls of fpgacomm-bench
# pingpong, and with fc_chan_isend, fc_chan_irecv and fc_req_test (the
# request path); the lists are for the first. Sizes of 32 KiB and more
# (rendezvous, at the default threshold) are counted with the second
# only: one thread cannot block in a send its own receive has to clear.
# They give
# the functions with the most inclusive Ir per message (the same
# difference, function by function, from callgrind_annotate --inclusive),
# then those with the most self Ir, the most called (calls per message),
# and the self Ir per message of each part: lib/, emu/, libc.
# Time: the same program without valgrind (the first calls), R runs of
# 20000 ping-pongs; one-way = round trip / 2, in us (median and range).
#
# The callgrind files stay in build/bench/msgcost/ (callgrind_annotate
# FILE shows more); the figures go to build/bench/msgcost-raw.txt and, as
# one line of a plain table, to build/bench/msgcost.dat.
# Exit status: 0 done (the instruction count skipped, saying why, when
# valgrind is missing), 1 failed, 2 bad usage.
set -euo pipefail
. "$(dirname "$0")/bench/data.sh"

prog=${0##*/}
TOOLS=build/tools
OUT=build/bench
SIZE=8
ITERS="1000,3000"
ROUNDS=${FPGACOMM_BENCH_ROUNDS:-5}
TOP=10
TIME_ITERS=20000
RUN_TIMEOUT=600

while [ $# -gt 0 ]; do
	case $1 in
	--size) SIZE=${2-}; shift 2 || { echo "$prog: --size S" >&2; exit 2; } ;;
	--iters) ITERS=${2-}; shift 2 || { echo "$prog: --iters N1,N2" >&2; exit 2; } ;;
	--rounds) ROUNDS=${2-}; shift 2 || { echo "$prog: --rounds R" >&2; exit 2; } ;;
	--top) TOP=${2-}; shift 2 || { echo "$prog: --top K" >&2; exit 2; } ;;
	-h | --help) sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "$prog: --rounds takes a positive number" >&2; exit 2; }
[[ $TOP =~ ^[1-9][0-9]*$ ]] || { echo "$prog: --top takes a positive number" >&2; exit 2; }
[[ $SIZE =~ ^[1-9][0-9]*$ ]] || { echo "$prog: --size takes a number of bytes" >&2; exit 2; }
IFS=, read -r N1 N2 <<<"$ITERS"
if ! [[ ${N1-} =~ ^[1-9][0-9]*$ && ${N2-} =~ ^[1-9][0-9]*$ ]] || ((N2 <= N1)); then
	echo "$prog: --iters takes N1,N2 with 0 < N1 < N2" >&2
	exit 2
fi

for t in fpgacomm-run fpgacomm-bench; do
	if [[ ! -x $TOOLS/$t ]]; then
		echo "$prog: $TOOLS/$t not found: run 'make' in the repository root first" >&2
		exit 1
	fi
done
if ! make -q "$TOOLS/fpgacomm-bench" >/dev/null 2>&1; then
	echo "$prog: warning: build/tools is older than the sources: this measures the last build ('make' rebuilds)" >&2
fi
# Rendezvous sizes only with fc_chan_isend: one thread cannot block in a
# send that its own receive has to clear.
MODES=(send isend)
((SIZE < 32768)) || MODES=(isend)
tree="$(git describe --always --dirty 2>/dev/null || echo unknown)"
mkdir -p "$OUT/msgcost"
RAW=$OUT/msgcost-raw.txt
echo "# $(date -u '+%F %T UTC'), tree $tree" >"$RAW"

median() {
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# msgcost [WRAPPER...] -- ARGS...: fpgacomm-bench msgcost as rank 0 of a
# cluster of 2, under WRAPPER; rank 1 only lends its board (and exits).
msgcost() {
	local wrap=()
	while [[ $1 != -- ]]; do wrap+=("$1"); shift; done
	shift
	# shellcheck disable=SC2016 # expanded by the rank's sh
	"$TOOLS/fpgacomm-run" -n 2 --timeout "$RUN_TIMEOUT" -- \
		sh -c '[ "$FPGACOMM_RANK" = 0 ] || exit 0; exec "$@"' sh \
		"${wrap[@]}" "$TOOLS/fpgacomm-bench" msgcost -s "$SIZE" "$@"
}

declare -A ir=()
plib="" pemu="" plibc=""
start=$SECONDS
echo "One $SIZE B channel message, both boards in one process and thread (fpgacomm-bench msgcost, full:2)"

# ---- Instructions ----
why=""
if ! command -v valgrind >/dev/null 2>&1; then
	why="valgrind not installed (scripts/install-deps.sh --valgrind installs it)"
elif ! command -v callgrind_annotate >/dev/null 2>&1; then
	why="callgrind_annotate not found (it comes with valgrind)"
fi
if [[ -n $why ]]; then
	echo "$prog: SKIP the instruction count: $why" >&2
	echo "Instructions per message: skipped ($why)."
else
	rm -f "$OUT"/msgcost/callgrind.*
	msgs=$((2 * (N2 - N1)))
	total() { sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$1"; }
	declare -A file=()
	for mode in "${MODES[@]}"; do
		for n in "$N1" "$N2"; do
			file[$mode $n]=$OUT/msgcost/callgrind.$mode.$n
			if ! msgcost valgrind --tool=callgrind --callgrind-out-file="${file[$mode $n]}" -- \
				-m "$mode" -i "$n" >"$OUT/msgcost/valgrind.$mode.$n.log" 2>&1; then
				echo "$prog: the run of $n ping-pongs ($mode) under callgrind failed:" >&2
				tail -20 "$OUT/msgcost/valgrind.$mode.$n.log" >&2
				exit 1
			fi
		done
		t1=$(total "${file[$mode $N1]}")
		t2=$(total "${file[$mode $N2]}")
		if [[ -z $t1 || -z $t2 ]]; then
			echo "$prog: no totals in the callgrind files" >&2
			exit 1
		fi
		ir[$mode]=$(awk -v a="$t1" -v b="$t2" -v m="$msgs" 'BEGIN { printf "%.0f", (b - a) / m }')
		echo "instructions $mode ${ir[$mode]} Ir ($t1 Ir at $N1, $t2 Ir at $N2 ping-pongs)" >>"$RAW"
	done
	per=${ir[${MODES[0]}]}
	if [[ ${MODES[0]} == send ]]; then
		printf 'Instructions per one-way message: %s Ir with fc_chan_send/recv (as the ping-pong),\n' "${ir[send]}"
		printf '%s Ir with fc_chan_isend/irecv and fc_req_test (callgrind; runs of %s and %s ping-pongs).\n' \
			"${ir[isend]}" "$N1" "$N2"
		echo "The lists below are for fc_chan_send/recv."
	else
		printf 'Instructions per one-way message: %s Ir with fc_chan_isend/irecv and fc_req_test\n' "${ir[isend]}"
		printf '(a rendezvous size: one thread cannot block in fc_chan_send; callgrind; runs of %s and %s ping-pongs).\n' \
			"$N1" "$N2"
	fi

	# "IR KEY" per function of callgrind_annotate's table, KEY = the
	# function's file (relative to here) and name, its object dropped.
	functions() {
		callgrind_annotate --auto=no --threshold=100 "$@" 2>/dev/null |
			awk -v root="$PWD/" '
			/^-+$/ { rule++; next }
			rule >= 6 && /^ *[0-9,]+ \( *[0-9.]+%\) / {
				ir = $1; gsub(",", "", ir)
				key = $0
				sub(/^ *[0-9,]+ \( *[0-9.]+%\) +/, "", key)
				sub(/ \[[^]]*\]$/, "", key)
				if (index(key, root) == 1) key = substr(key, length(root) + 1)
				# glibc built elsewhere: its name, not its build path
				if (key ~ /^\.\//) { sub(/^[^:]*:/, "libc:", key); sub(/@@.*/, "", key) }
				# a function may be listed with and without its object
				if (ir > best[key]) best[key] = ir
			}
			END { for (k in best) print best[k] "\t" k }'
	}
	# per message: (run 2 - run 1) / messages, for each function
	per_message() {
		awk -F '\t' -v m="$msgs" '
			FNR == NR { a[$2] = $1; next }
			{ d = ($1 - a[$2]) / m; if (d > 0.5) printf "%.0f\t%s\n", d, $2 }
		' <(functions "$@" "${file[${MODES[0]} $N1]}") <(functions "$@" "${file[${MODES[0]} $N2]}")
	}
	echo
	echo "Top $TOP functions by inclusive Ir per message (the library, the emulated board, libc):"
	printf '%8s %6s  %s\n' "Ir/msg" "share" "function"
	# the benchmark's own frames and the start-up above main include all
	per_message --inclusive=yes |
		awk -F '\t' '$2 !~ /^tools\// && $2 !~ /below main|__libc_start|^\?\?\?:/' |
		sort -t "$(printf '\t')" -k1,1nr | head -n "$TOP" |
		while IFS=$'\t' read -r ir key; do
			printf '%8s %5.1f%%  %s\n' "$ir" "$(awk -v a="$ir" -v b="$per" 'BEGIN { print 100 * a / b }')" "$key"
			echo "inclusive $ir $key" >>"$RAW"
		done
	echo
	echo "Top $TOP functions by self (exclusive) Ir per message:"
	printf '%8s %6s  %s\n' "Ir/msg" "share" "function"
	per_message | sort -t "$(printf '\t')" -k1,1nr | head -n "$TOP" |
		while IFS=$'\t' read -r ir key; do
			printf '%8s %5.1f%%  %s\n' "$ir" "$(awk -v a="$ir" -v b="$per" 'BEGIN { print 100 * a / b }')" "$key"
			echo "self $ir $key" >>"$RAW"
		done
	echo
	# calls per message, from the files' call records ("cfn=(ID) NAME"
	# names a callee the first time, "cfn=(ID)" after; "calls=N ..."
	# follows), summed over the callers
	calls() {
		awk '
			/^c?fn=\(/ {
				p = index($0, "("); q = index($0, ")")
				id = substr($0, p + 1, q - p - 1)
				if (q < length($0)) name[id] = substr($0, q + 2)
				if ($0 ~ /^cfn=/) callee = name[id]
				next
			}
			/^calls=/ { split(substr($0, 7), a, " "); n[callee] += a[1] }
			END { for (k in n) print n[k] "\t" k }' "$1"
	}
	echo "Top $TOP functions by calls per message:"
	printf '%8s  %s\n' "calls" "function"
	awk -F '\t' -v m="$msgs" '
		FNR == NR { a[$2] = $1; next }
		{ d = ($1 - a[$2]) / m; if (d >= 0.05) printf "%.1f\t%s\n", d, $2 }
	' <(calls "${file[${MODES[0]} $N1]}") <(calls "${file[${MODES[0]} $N2]}") |
		sort -t "$(printf '\t')" -k1,1gr | head -n "$TOP" |
		while IFS=$'\t' read -r n key; do
			printf '%8s  %s\n' "$n" "${key%%@@*}"
			echo "calls $n ${key%%@@*}" >>"$RAW"
		done
	echo
	# exclusive Ir per message summed by where the code is
	parts=$(per_message | awk -F '\t' '
		{
			if ($2 ~ /^lib\//) p = "lib"
			else if ($2 ~ /^emu\//) p = "emu"
			else if ($2 ~ /^tools\//) p = "tools"
			else if ($2 ~ /^libc:/) p = "libc"
			else p = "other"
			s[p] += $1
		}
		END { printf "%d %d %d %d %d", s["lib"], s["emu"], s["libc"], s["tools"], s["other"] }')
	read -r plib pemu plibc ptools pother <<<"$parts"
	echo "exclusive lib $plib emu $pemu libc $plibc tools $ptools other $pother" >>"$RAW"
	printf 'By part (exclusive Ir per message): lib/ %s, emu/ %s, libc %s, the benchmark %s, other %s.\n' \
		"$plib" "$pemu" "$plibc" "$ptools" "$pother"
	echo "emu/ is the emulated board's work, which a real board does in hardware; lib/"
	echo "and libc (locks, copies) are the host stack's cost, sender and receiver together."
fi

# ---- Time, without valgrind ----
echo
times=""
for ((r = 1; r <= ROUNDS; r++)); do
	v=$(msgcost -- -m "${MODES[0]}" -i "$TIME_ITERS" | awk '!/^#/ && NF == 2 { print $2 }')
	if [[ -z $v ]]; then
		echo "$prog: fpgacomm-bench msgcost printed no time" >&2
		exit 1
	fi
	times+="$v"$'\n'
	echo "round $r time $v us" >>"$RAW"
done
times=${times%$'\n'}
dat_header "$OUT/msgcost.dat" \
	"One channel message, both boards in one process and thread: instructions (callgrind) and one-way time (median of $ROUNDS runs)" \
	"size_B Ir_send_recv Ir_isend_irecv_test lib_Ir emu_Ir libc_Ir time_us"
echo "$SIZE ${ir[send]:--} ${ir[isend]:--} ${plib:--} ${pemu:--} ${plibc:--} $(median <<<"$times")" \
	>>"$OUT/msgcost.dat"
printf 'Time per one-way message: %.3f us (median of %s runs of %s ping-pongs, %s-%s; no valgrind)\n' \
	"$(median <<<"$times")" "$ROUNDS" "$TIME_ITERS" \
	"$(sort -g <<<"$times" | head -1)" "$(sort -g <<<"$times" | tail -1)"
echo "Took $((SECONDS - start)) s. Tree: $tree."
echo "Raw figures: $RAW; callgrind files: $OUT/msgcost/; table: $OUT/msgcost.dat."
