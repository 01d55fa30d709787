# SPDX-License-Identifier: MIT
# Sourced by the host-side VM scripts (bash): helpers they share.
# Expects skip() and die() that print and exit, and for build() $work (a
# scratch directory).

# need_vm_tools: QEMU and busybox, or SKIP.
need_vm_tools() {
	command -v qemu-system-x86_64 > /dev/null ||
		skip "qemu-system-x86_64 not installed (scripts/install-deps.sh --vm)"
	[ -x /bin/busybox ] || [ -x /usr/bin/busybox ] ||
		skip "busybox not installed (scripts/install-deps.sh --vm)"
}

# pick_kernel: unless $kver is set, the newest kernel with an image,
# modules and headers into it, or SKIP.
pick_kernel() {
	local k
	[ -z "$kver" ] || return 0
	for k in $(find /boot -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' |
		   sed 's/^vmlinuz-//' | sort -rV); do
		if [ -d "/lib/modules/$k/kernel" ] && [ -f "/lib/modules/$k/build/Makefile" ]; then
			kver=$k
			return 0
		fi
	done
	skip "no kernel with an image, modules and headers" \
		"(scripts/install-deps.sh --vm)"
}

# build WHAT COMMAND...: run a build step quietly; on failure show its log.
build() {
	local what=$1
	shift
	if ! "$@" > "$work/build.log" 2>&1; then
		cat "$work/build.log" >&2
		die "build of $what"
	fi
}

# ---- The benchmarks' host halves (bench-*.sh) ----

# bench_check_counts: --rounds and --iters are positive numbers.
bench_check_counts() {
	[[ $rounds =~ ^[1-9][0-9]*$ && $iters =~ ^[1-9][0-9]*$ ]] ||
		{ echo "$prog: --rounds and --iters take a positive number" >&2; exit 2; }
}

# bench_setup NAME [CLUSTER]: the checks, $strace, $kver, a scratch $work
# (removed at exit unless keep_work=1), $logdir inside it unless given
# (then own_logs=1: kept with $work when the run fails), the tree and
# fpgacomm.ko built, $emud; with CLUSTER, its shared memory removed at exit.
bench_setup() {
	local name=$1
	cluster=${2:-}
	need_vm_tools
	strace=$(command -v strace) ||
		skip "strace not installed (scripts/install-deps.sh --vm)"
	pick_kernel
	work=$(mktemp -d "${TMPDIR:-/tmp}/fcvm-$name.XXXXXX")
	own_logs=0 keep_work=0
	if [ -z "$logdir" ]; then
		logdir=$work/logs
		own_logs=1
	fi
	trap '[ "$keep_work" = 1 ] || rm -rf "$work"; [ -z "$cluster" ] || rm -f "/dev/shm/fpgacomm-$cluster"' EXIT
	build "the library and tools (make all)" make -C "$top" -j2 all
	build "fpgacomm.ko for $kver" env KDIR="/lib/modules/$kver/build" \
		"$top/scripts/build-driver.sh"
	emud=$top/build/tools/fpgacomm-emud
}

# bench_two_boards: board_args for run-vm.sh: nodes 0 and 1 of $cluster,
# full:2, one daemon each.
bench_two_boards() {
	local i
	board_args=()
	for i in 0 1; do
		board_args+=(--board-socket "$work/board$i.sock"
			     --board-cmd "exec '$emud' --socket \"\$FCVM_SOCKET\" --guest-ram \"\$FCVM_RAM\" --node $i --cluster $cluster --topology full:2")
	done
}

# bench_check_run RC: a failed VM run (or a FAIL line in its output) ends
# the script, logs kept; with --verbose the output is shown either way.
bench_check_run() {
	[ "$verbose" = 1 ] && cat "$work/output"
	if [ "$1" != 0 ] || grep -q '^FAIL ' "$work/output"; then
		[ "$verbose" = 1 ] || cat "$work/output" >&2
		keep_work=$own_logs
		die "the VM run failed (run-vm.sh exit $1); logs in $logdir"
	fi
}
