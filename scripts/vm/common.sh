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
