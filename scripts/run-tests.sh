#!/bin/sh
# SPDX-License-Identifier: MIT
# Run test programs, one after another, each with a time limit.
#
#   scripts/run-tests.sh build/tests/test_a build/tests/test_b ...
#
# A program passes with exit 0, is skipped with exit 77 and fails otherwise
# (a timeout is a failure). The last line is "N passed, M failed, K skipped";
# the exit status is non-zero when anything failed.
#
# Environment:
#   FPGACOMM_TEST_TIMEOUT  seconds per program (default 300)
#   FPGACOMM_VALGRIND=1    run each program under valgrind (leak check);
#                          valgrind errors fail the program (exit 99)
#   FPGACOMM_TEST_LOGDIR   keep each program's output there (default: a
#                          temporary directory, removed at the end); the
#                          output of a failed program is always printed

timeout_s=${FPGACOMM_TEST_TIMEOUT:-300}

case $1 in
-h | --help)
	sed -n '3,/^$/p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
esac
if [ $# -eq 0 ]; then
	echo "usage: $0 TEST_PROGRAM..." >&2
	exit 2
fi

if [ -n "$FPGACOMM_TEST_LOGDIR" ]; then
	logdir=$FPGACOMM_TEST_LOGDIR
	mkdir -p "$logdir" || exit 2
	keep=1
else
	logdir=$(mktemp -d "${TMPDIR:-/tmp}/fpgacomm-tests.XXXXXX") || exit 2
	keep=0
	trap 'rm -rf "$logdir"' EXIT
	trap 'exit 130' INT TERM
fi

wrap=
if [ "$FPGACOMM_VALGRIND" = 1 ]; then
	if ! command -v valgrind >/dev/null 2>&1; then
		echo "FPGACOMM_VALGRIND=1 but valgrind is not installed" >&2
		exit 2
	fi
	wrap="valgrind -q --error-exitcode=99 --leak-check=full \
--errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect"
fi

passed=0
failed=0
skipped=0
failed_names=

for t in "$@"; do
	name=$(basename "$t")
	log=$logdir/$name.log
	if [ ! -x "$t" ]; then
		echo "FAIL $name (not an executable file)"
		failed=$((failed + 1))
		failed_names="$failed_names $name"
		continue
	fi
	start=$(date +%s)
	# --kill-after: a program that ignores SIGTERM is still stopped
	# shellcheck disable=SC2086
	timeout --kill-after=10 "$timeout_s" $wrap "$t" >"$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	0)
		echo "PASS $name (${secs}s)"
		passed=$((passed + 1))
		;;
	77)
		reason=$(grep -i -m1 'skip' "$log" |
			 sed 's/^[[ ]*skip[] :]*//I' | cut -c1-120)
		echo "SKIP $name${reason:+: $reason}"
		skipped=$((skipped + 1))
		;;
	*)
		case $rc in
		124|137) why="timed out after ${timeout_s}s" ;;
		99) why="valgrind errors" ;;
		*) why="exit $rc" ;;
		esac
		echo "FAIL $name ($why, ${secs}s)"
		sed 's/^/    /' "$log"
		failed=$((failed + 1))
		failed_names="$failed_names $name"
		;;
	esac
done

[ -n "$failed_names" ] && echo "failed:$failed_names"
[ "$keep" = 1 ] && echo "logs in $logdir"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
