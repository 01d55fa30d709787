#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# check.sh: everything `make check` runs, after `make all`: the library's
# test programs on the emulated board, then the driver in a VM (the same
# programs through /dev/fpgacomm0, two boards, polling and MSI-X). Ends with
# one line that adds up both: `N passed, M failed, K skipped`.
#
#   scripts/check.sh TEST...     the host test programs to run
#
# FPGACOMM_SKIP_VM=1 leaves the VM out (it is then counted as one skip).
set -uo pipefail

cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT

passed=0 failed=0 skipped=0
# add_summary FILE: add the last "N passed, M failed, K skipped" of FILE.
add_summary() {
	local line p f s
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$1" | tail -1)
	if [[ -z $line ]]; then
		failed=$((failed + 1))	# a run that gave no summary failed
		return
	fi
	read -r p _ f _ s _ <<<"${line//,/}"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + ${s:-0}))
}

echo "== Library tests on the emulated board"
scripts/run-tests.sh "$@" | tee "$log"
host_status=${PIPESTATUS[0]}
add_summary "$log"

if [[ ${FPGACOMM_SKIP_VM:-0} == 1 ]]; then
	echo "== Driver tests in a VM: skipped (FPGACOMM_SKIP_VM=1)"
	skipped=$((skipped + 1))
	vm_status=0
else
	echo "== Driver tests in a VM"
	scripts/install-deps.sh --vm || exit 1
	scripts/vm/run-vm-tests.sh 2>&1 | tee "$log"
	vm_status=${PIPESTATUS[0]}
	add_summary "$log"
fi

echo "$passed passed, $failed failed, $skipped skipped"
[[ $host_status == 0 && $vm_status == 0 && $failed == 0 ]]
