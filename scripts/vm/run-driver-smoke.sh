#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Driver smoke test in a VM: builds fpgacomm.ko for the guest kernel, writes
# a register file into the ivshmem backing file (a valid board, then one that
# reads all-ones), boots the VM once for each and checks, inside the guest,
# that the driver binds only with ivshmem=1, logs the board or refuses it,
# and unloads cleanly; run-vm.sh checks the kernel log.
#
# usage: scripts/vm/run-driver-smoke.sh [--kver KVER] [-v]
# Exit status: 0 pass, 77 skipped (no qemu, kernel image or headers), else
# fail.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
prog=${0##*/}

kver='' vmargs=()
while [ $# -gt 0 ]; do
	case $1 in
	--kver) kver=$2; shift 2 ;;
	-v|--verbose) vmargs+=(-v); shift ;;
	*) echo "usage: $prog [--kver KVER] [-v]" >&2; exit 2 ;;
	esac
done

skip() { echo "$prog: SKIP: $*" >&2; exit 77; }

command -v qemu-system-x86_64 > /dev/null ||
	skip "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
[ -x /bin/busybox ] || [ -x /usr/bin/busybox ] ||
	skip "busybox not installed (apt-get install busybox-static)"

# The guest kernel: the newest with an image, modules and headers.
if [ -z "$kver" ]; then
	for k in $(ls /boot/ 2>/dev/null | sed -n 's/^vmlinuz-//p' | sort -rV); do
		if [ -d "/lib/modules/$k/kernel" ] && [ -f "/lib/modules/$k/build/Makefile" ]; then
			kver=$k
			break
		fi
	done
	[ -n "$kver" ] || skip "no kernel with an image, modules and headers" \
		"(apt-get install linux-image-amd64 linux-headers-amd64)"
fi

start=$(date +%s.%N)
KDIR=/lib/modules/$kver/build "$top/scripts/build-driver.sh" > "${TMPDIR:-/tmp}/fcvm-build.$$.log" 2>&1 || {
	cat "${TMPDIR:-/tmp}/fcvm-build.$$.log" >&2
	rm -f "${TMPDIR:-/tmp}/fcvm-build.$$.log"
	echo "$prog: FAIL: driver build" >&2
	exit 1
}
rm -f "${TMPDIR:-/tmp}/fcvm-build.$$.log"

mkdir -p "$top/build/vm"
fill=$top/build/vm/fill-regs
${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -I"$top/include" \
	-o "$fill" "$here/fill-regs.c"

bar=/dev/shm/fcvm-smoke-$$-bar
trap 'rm -f "$bar"' EXIT
node=5
mem_mib=8192

failed=0
run() {	# run NAME GUEST_ARGS...
	local name=$1 t0 t1 rc=0
	shift
	echo "== $name"
	t0=$(date +%s.%N)
	# slub_debug: poisoned and red-zoned slabs catch use-after-free and
	# overruns of kmalloc memory (about 0.3 s more boot time).
	"$here/run-vm.sh" --kver "$kver" --bar "$bar" "${vmargs[@]}" \
		--append "slub_debug=FZPU,kmalloc-*" \
		--module "$top/driver/fpgacomm.ko" \
		-- "$here/driver-smoke-guest.sh" "$@" || rc=$?
	t1=$(date +%s.%N)
	echo "== $name: $([ "$rc" = 0 ] && echo PASS || echo "FAIL ($rc)")," \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')s"
	[ "$rc" = 0 ] || failed=$((failed + 1))
}

rm -f "$bar"
"$fill" --node "$node" --mem "$((mem_mib << 20))" "$bar"
run "good board" good "$node" "$mem_mib"
# The guest wrote FC_REG_SCRATCH through the BAR: it must be in the file.
scratch=$(od -An -tx4 -j $((0x20)) -N 4 "$bar" | tr -d ' ')
if [ "$scratch" = 5eed0001 ]; then
	echo "ok: a guest write to the BAR reached $bar"
else
	echo "FAIL: FC_REG_SCRATCH in $bar is 0x$scratch, the guest wrote 0x5eed0001"
	failed=$((failed + 1))
fi

"$fill" --all-ones "$bar"
run "board reading all-ones" bad

end=$(date +%s.%N)
echo "driver-smoke: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')s in all, build included"
echo "driver-smoke: $((2 - failed)) passed, $failed failed"
[ "$failed" = 0 ]
