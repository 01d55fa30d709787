#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Unpack the ELF kernel from a compressed bzImage, so that QEMU can start it
# directly at its PVH entry point. Decompressing the bzImage inside a TCG
# guest takes longer than the rest of the boot (about 6 s of 9 here).
#
# usage: extract-vmlinux.sh BZIMAGE OUT
# Exit status 0 with OUT written when it holds an ELF kernel with a PVH entry
# note; 1 otherwise (the caller then boots the bzImage).
set -euo pipefail

[ $# = 2 ] || { echo "usage: ${0##*/} BZIMAGE OUT" >&2; exit 2; }
in=$1
out=$2
tmp=$out.tmp.$$
trap 'rm -f "$tmp"' EXIT

# Byte offsets where a compressed stream may start, in the order to try.
offsets() {
	LC_ALL=C grep -obUaP "$1" "$in" 2>/dev/null | cut -d: -f1 | head -n 4
}

try() {	# try DECOMPRESSOR MAGIC_REGEX
	local off
	for off in $(offsets "$2"); do
		tail -c +$((off + 1)) "$in" | $1 > "$tmp" 2>/dev/null || true
		if [ "$(head -c 4 "$tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
			return 0
		fi
	done
	return 1
}

# The payload is followed by other data, so stop at the end of the stream.
try "xz -dc --single-stream" '\xfd7zXZ\x00' ||
	try "zstd -dcq" '\x28\xb5\x2f\xfd' ||
	try "gzip -dcq" '\x1f\x8b\x08' ||
	try "lz4 -dcq" '\x02\x21\x4c\x18' ||
	exit 1

# PVH entry: an ELF note of type XEN_ELFNOTE_PHYS32_ENTRY (18) from "Xen".
readelf -n "$tmp" 2>/dev/null | grep -q 'Xen.*(0x00000012)' || exit 1
mv "$tmp" "$out"
