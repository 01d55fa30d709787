#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# check.sh: everything `make check` runs, after `make all`: the library's
# test programs on the emulated board, the driver's build with W=1 and
# sparse (scripts/driver-lint.sh), then the driver in a VM (the same
# programs through /dev/fpgacomm0, two boards, polling and MSI-X). Ends with
# one line that adds them up: `N passed, M failed, K skipped`.
#
#   scripts/check.sh TEST...     the host test programs to run
#
# FPGACOMM_SKIP_VM=1 leaves the VM out (it is then counted as one skip);
# FPGACOMM_SKIP_ASAN=1 the sanitizer cut likewise.
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

echo "== House rules (scripts/check-rules.sh)"
scripts/check-rules.sh | tee "$log"
rules_status=${PIPESTATUS[0]}
add_summary "$log"

echo "== Library tests on the emulated board"
scripts/run-tests.sh "$@" | tee "$log"
host_status=${PIPESTATUS[0]}
add_summary "$log"

# A few programs again under ASan and UBSan (make check-asan runs them all).
if [[ ${FPGACOMM_SKIP_ASAN:-0} == 1 ]]; then
	echo "== Sanitizer cut: skipped (FPGACOMM_SKIP_ASAN=1)"
	skipped=$((skipped + 1))
	asan_status=0
else
	echo "== Sanitizer cut (make check-asan-cut)"
	make --no-print-directory check-asan-cut 2>&1 | tee "$log"
	asan_status=${PIPESTATUS[0]}
	add_summary "$log"
fi

# What the VM and the driver lint need (sparse, kernel headers), first.
if [[ ${FPGACOMM_SKIP_VM:-0} != 1 ]]; then
	scripts/install-deps.sh --vm || exit 1
fi

# The driver's build with W=1 and sparse on every installed kernel;
# skipped, saying why, without sparse or kernel headers.
echo "== Driver lint: W=1 and sparse (scripts/driver-lint.sh)"
scripts/driver-lint.sh 2>&1 | tee "$log"
lint_status=${PIPESTATUS[0]}
[[ $lint_status == 77 ]] && lint_status=0
add_summary "$log"

if [[ ${FPGACOMM_SKIP_VM:-0} == 1 ]]; then
	echo "== Driver tests in a VM: skipped (FPGACOMM_SKIP_VM=1)"
	skipped=$((skipped + 1))
	vm_status=0
else
	# Every kernel with an image, modules and headers: Debian 12's 6.1
	# and, where install-deps.sh could add it, bookworm-backports' 6.12.
	kvers=()
	for k in $(find /boot -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' |
		   sed 's/^vmlinuz-//' | sort -V); do
		[[ -d /lib/modules/$k/kernel && -f /lib/modules/$k/build/Makefile ]] &&
			kvers+=("$k")
	done
	vm_status=0
	# None: run-vm-tests.sh says why it cannot run.
	(( ${#kvers[@]} )) || kvers=('')
	for k in "${kvers[@]}"; do
		echo "== Driver tests in a VM: ${k:-no kernel}"
		scripts/vm/run-vm-tests.sh ${k:+--kver "$k"} 2>&1 | tee "$log"
		rc=${PIPESTATUS[0]}
		[[ $rc == 0 ]] || vm_status=$rc
		add_summary "$log"
	done
	if (( ${#kvers[@]} < 2 )) && [[ -n ${kvers[0]} ]]; then
		echo "== Driver tests in a VM: one kernel only (${kvers[*]:-none}); a second (6.12, bookworm-backports) is not installed"
		skipped=$((skipped + 1))
	fi
fi

echo "$passed passed, $failed failed, $skipped skipped"
[[ $rules_status == 0 && $host_status == 0 && $asan_status == 0 && $lint_status == 0 &&
   $vm_status == 0 && $failed == 0 ]]
