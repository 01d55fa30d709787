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

rule_version

echo "$passed passed, $failed failed"
(( failed == 0 ))
