#!/bin/bash
# SPDX-License-Identifier: MIT
#
# driver-lint.sh: the driver's house rules, checked by the compiler and
# sparse: driver/ must build with no warning at W=1 (extra warnings, made
# errors) and no sparse report (C=2: every file checked), against the
# headers of every installed kernel (Debian 12's 6.1 and bookworm-backports'
# 6.12 where both are there). It builds a copy of driver/ in a temporary
# directory, so driver/fpgacomm.ko is left as it was.
#
# usage: scripts/driver-lint.sh [KVER...]   (default: every kernel under
#        /lib/modules with a build tree)
#
# One PASS/FAIL line per kernel with what was reported, then
# "N passed, M failed, K skipped". Exit 0 clean, 1 a report, 77 skipped:
# no sparse (scripts/install-deps.sh --vm installs it) or no kernel headers.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
prog=${0##*/}

skip() {
	echo "$prog: SKIP: $*"
	echo "0 passed, 0 failed, 1 skipped"
	exit 77
}

command -v sparse >/dev/null 2>&1 ||
	skip "sparse is not installed (scripts/install-deps.sh --vm installs it)"

kvers=("$@")
if (( ${#kvers[@]} == 0 )); then
	for d in /lib/modules/*/build; do
		[[ -f $d/Makefile ]] && kvers+=("$(basename "$(dirname "$d")")")
	done
fi
(( ${#kvers[@]} )) ||
	skip "no kernel headers under /lib/modules/*/build (linux-headers-amd64)"

work=$(mktemp -d "${TMPDIR:-/tmp}/fc-driver-lint.XXXXXX")
trap 'rm -rf "$work"' EXIT

passed=0 failed=0
for k in "${kvers[@]}"; do
	kdir=/lib/modules/$k/build
	if [[ ! -f $kdir/Makefile ]]; then
		echo "FAIL $k: no build tree at $kdir"
		failed=$((failed + 1))
		continue
	fi
	# A fresh copy per kernel: nothing of another kernel's build is reused.
	src=$work/$k
	mkdir -p "$src/include"
	cp "$top"/driver/Kbuild "$top"/driver/Makefile "$top"/driver/*.[ch] "$src/"
	cp -r "$top"/include/fpgacomm "$top"/include/uapi "$src/include/"
	log=$work/$k.log
	make -C "$kdir" M="$src" W=1 C=2 KCFLAGS=-Werror modules >"$log" 2>&1
	rc=$?
	# sparse reports as warnings without failing the build: count them.
	reports=$(grep -cE '(warning|error):' "$log")
	if [[ $rc == 0 && $reports == 0 ]]; then
		echo "PASS $k: W=1 and sparse clean"
		passed=$((passed + 1))
	else
		echo "FAIL $k: make exit $rc, $reports warnings or errors:"
		grep -E '(warning|error):' "$log" | sed "s|$src/||; s/^/    /"
		[[ $rc != 0 && $reports == 0 ]] && tail -n 20 "$log" | sed 's/^/    /'
		failed=$((failed + 1))
	fi
done

echo "$passed passed, $failed failed, 0 skipped"
(( failed == 0 ))
