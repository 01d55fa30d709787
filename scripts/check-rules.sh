#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# check-rules.sh: the house rules that a machine can check, run by
# `make check` before the tests. Each rule prints one line, "ok: RULE" or
# "FAIL: RULE" with what broke it; the script ends with the usual
# "N passed, M failed" line and fails if any rule failed.
#
#   - version: the header's FC_API_VERSION_MAJOR.MINOR is the newest node
#     of lib/libfpgacomm.map, so the release and the symbols agree.
#   - format: clang-format (.clang-format) would change no file of
#     `make format`'s list (skipped without clang-format).
#   - functions: no function of lib/, emu/, driver/, model/, topo/ or tools/
#     is over 100 lines (universal-ctags finds them; skipped without it).
#   - layers: no loop of calls between files of lib/, emu/ or driver/, no
#     call against lib/'s layer order, no include of another folder's
#     private header (scripts/check-layers.sh, docs/layout.md).
set -uo pipefail

cd "$(dirname "$0")/.."
passed=0 failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAIL: $1"; shift; printf '  %s\n' "$@"; failed=$((failed + 1)); }

api_version() {
	sed -n "s/^#define FC_API_VERSION_$1[[:space:]]*//p" include/fpgacomm/fpgacomm.h
}

rule_version() {
	local want newest
	want="FPGACOMM_$(api_version MAJOR).$(api_version MINOR)"
	newest=$(grep -oE '^FPGACOMM_[0-9]+\.[0-9]+' lib/libfpgacomm.map | sort -V | tail -1)
	if [[ $want == "$newest" ]]; then
		ok "version: the API ($want) is the newest symbol node"
	else
		bad "version: the header says $want, lib/libfpgacomm.map's newest node is $newest" \
		    "a new public call goes into a new node named after the new FC_API_VERSION_MINOR"
	fi
}

# Each function's length: from the line ctags gives to the first line
# after it that is a lone "}" (kernel style closes a function so).
rule_functions() {
	local long long_lines
	if ! command -v ctags >/dev/null || ! ctags --version 2>/dev/null | grep -q Universal; then
		echo "skip: functions: universal-ctags is not installed"
		return
	fi
	long=$(find lib emu driver model topo tools -name '*.c' 2>/dev/null | sort |
	       xargs ctags -x --c-kinds=f 2>/dev/null |
	       awk '{ print $4, $3, $1 }' | sort -k1,1 -k2,2n |
	       while read -r file line name; do
		       awk -v s="$line" -v n="$name" -v f="$file" \
			   'NR > s && /^}$/ { if (NR - s > 100) print f ":" s " " n "() " NR - s " lines"; exit }' "$file"
	       done)
	if [[ -z $long ]]; then
		ok "functions: none over 100 lines"
	else
		mapfile -t long_lines <<<"$long"
		bad "functions: over 100 lines (split them into named steps)" "${long_lines[@]}"
	fi
}

rule_format() {
	local files
	if ! command -v clang-format >/dev/null; then
		echo "skip: format: clang-format is not installed"
		return
	fi
	files=$(make --no-print-directory -s format-check)
	if [[ -z $files ]]; then
		ok "format: clang-format would change nothing"
	else
		mapfile -t format_files <<<"$files"
		bad "format: clang-format would change these (make format):" \
		    "${format_files[@]}"
	fi
}

# scripts/check-layers.sh prints its own ok/FAIL/skip lines.
rule_layers() {
	local out
	out=$(scripts/check-layers.sh)
	echo "$out"
	passed=$((passed + $(grep -c '^ok: ' <<<"$out")))
	failed=$((failed + $(grep -c '^FAIL: ' <<<"$out")))
}

rule_version
rule_format
rule_functions
rule_layers

echo "$passed passed, $failed failed"
(( failed == 0 ))
