#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Build a small initramfs for the test VM from what is installed here:
# busybox-static, scripts/vm/init, kernel modules of the guest kernel, our
# own .ko files, programs (with the shared libraries ldd finds) and a test
# script that the init runs and whose exit status it reports.
#
# usage: mkinitramfs.sh -o OUT -k KVER [options] TEST_SCRIPT [ARGS...]
#   -o OUT          the initramfs to write (a newc cpio, uncompressed)
#   -k KVER         guest kernel release; its modules are in /lib/modules/KVER
#   --kmod NAME     a module of the guest kernel, loaded at boot with the
#                   modules it depends on (repeatable)
#   --module KO     one of our modules, copied to /fcvm/ko/; not loaded, but
#                   the kernel modules it depends on are (repeatable)
#   --prog PATH     a program, copied to /fcvm/bin/ (on PATH) with the shared
#                   libraries it needs (repeatable)
#   --lib PATH      a shared object loaded at run time (a plugin), copied
#                   to the same path with the libraries it needs (repeatable)
#   --file SRC:DST  any file, copied to DST in the guest (repeatable)
#   --gzip          compress (smaller, but slower to unpack under TCG)
# The test script is copied to /fcvm/test.sh; ARGS are given to it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
prog=${0##*/}

die() { echo "$prog: $*" >&2; exit 2; }

out='' kver='' gzip=0
kmods=() modules=() progs=() libs_rt=() files=()
while [ $# -gt 0 ]; do
	case $1 in
	-o) out=$2; shift 2 ;;
	-k) kver=$2; shift 2 ;;
	--kmod) kmods+=("$2"); shift 2 ;;
	--module) modules+=("$2"); shift 2 ;;
	--prog) progs+=("$2"); shift 2 ;;
	--lib) libs_rt+=("$2"); shift 2 ;;
	--file) files+=("$2"); shift 2 ;;
	--gzip) gzip=1; shift ;;
	--) shift; break ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
[ -n "$out" ] || die "-o OUT is required"
[ -n "$kver" ] || die "-k KVER is required"
[ $# -ge 1 ] || die "a test script is required"
test_script=$1
shift
[ -r "$test_script" ] || die "cannot read test script $test_script"

busybox=
for b in /bin/busybox /usr/bin/busybox; do
	if [ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1; then
		busybox=$b
		break
	fi
done
[ -n "$busybox" ] ||
	die "no static busybox found; install it: apt-get install busybox-static"

root=$(mktemp -d "${TMPDIR:-/tmp}/fcvm-initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,run,etc,root} "$root"/fcvm/{bin,ko}
cp "$busybox" "$root/bin/busybox"
for app in $("$root/bin/busybox" --list); do
	[ "$app" = busybox ] || ln -sf busybox "$root/bin/$app"
done
install -m 755 "$here/init" "$root/init"

# Copy a file to the same path in the guest, keeping symlinks that lead to it.
copy_path() {
	local src=$1 dst=$root$1
	[ -e "$dst" ] && return 0
	mkdir -p "$(dirname "$dst")"
	if [ -L "$src" ]; then
		local target
		target=$(readlink "$src")
		ln -s "$target" "$dst"
		case $target in
		/*) copy_path "$target" ;;
		*) copy_path "$(dirname "$src")/$target" ;;
		esac
	else
		cp "$src" "$dst"
	fi
}

# Kernel modules of the guest kernel, in load order, deduplicated.
: > "$root/fcvm/modules.load"
add_kmod() {
	local line path
	if ! modprobe -S "$kver" --show-depends "$1" > "$root/.deps" 2>&1; then
		cat "$root/.deps" >&2
		die "module $1 not found for kernel $kver"
	fi
	while read -r line; do
		case $line in
		insmod\ *)
			path=${line#insmod }
			path=${path%% *}
			grep -qxF "$path" "$root/fcvm/modules.load" && continue
			copy_path "$path"
			echo "$path" >> "$root/fcvm/modules.load"
			;;
		builtin\ *) ;;
		esac
	done < "$root/.deps"
	rm -f "$root/.deps"
}

for m in "${kmods[@]}"; do
	add_kmod "$m"
done
for ko in "${modules[@]}"; do
	[ -r "$ko" ] || die "cannot read module $ko"
	cp "$ko" "$root/fcvm/ko/"
	deps=$(modinfo -F depends "$ko")
	for m in ${deps//,/ }; do
		add_kmod "$m"
	done
done

# The shared libraries that @1 needs, by ldd.
copy_needed() {
	local libs lib
	# ldd prints "lib => /path (addr)" or "/path (addr)"; static: nothing.
	libs=$(ldd "$1" 2>/dev/null || true)
	if grep -q 'not found' <<< "$libs"; then
		die "$1 needs libraries that are not installed: $libs"
	fi
	for lib in $(grep -o '/[^ ]*' <<< "$libs" || true); do
		copy_path "$lib"
	done
}

for p in "${progs[@]}"; do
	[ -x "$p" ] || die "$p is not an executable"
	cp "$p" "$root/fcvm/bin/"
	copy_needed "$p"
done
for l in "${libs_rt[@]}"; do
	[ -r "$l" ] || die "cannot read $l"
	copy_path "$l"
	copy_needed "$l"
done

for f in "${files[@]}"; do
	src=${f%%:*}
	dst=${f#*:}
	[ "$src" != "$f" ] || die "--file wants SRC:DST, got $f"
	mkdir -p "$root/$(dirname "$dst")"
	cp "$src" "$root/$dst"
done

install -m 755 "$test_script" "$root/fcvm/test.sh"
# Arguments, quoted for the guest's shell.
: > "$root/fcvm/args"
for a in "$@"; do
	printf "'%s' " "${a//\'/\'\\\'\'}" >> "$root/fcvm/args"
done
echo "$kver" > "$root/fcvm/kver"

# Same inputs, same bytes: fixed order, owner and times.
find "$root" -exec touch -h -d @0 {} +
tmp=$out.tmp.$$
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
	cpio --quiet -o -H newc -R 0:0 --reproducible) > "$tmp"
if [ "$gzip" = 1 ]; then
	gzip -n -9 < "$tmp" > "$out"
	rm -f "$tmp"
else
	mv "$tmp" "$out"
fi
