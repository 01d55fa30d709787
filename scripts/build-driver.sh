#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Build driver/fpgacomm.ko with kbuild against installed kernel headers.
#
# usage: scripts/build-driver.sh [make arguments, e.g. clean or W=1]
#   KDIR=DIR  the kernel build tree (default /lib/modules/$(uname -r)/build,
#             else the newest /lib/modules/*/build)
#   KVER=REL  shorthand for KDIR=/lib/modules/REL/build
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "${KDIR:-}" ] && [ -n "${KVER:-}" ]; then
	KDIR=/lib/modules/$KVER/build
fi
if [ -z "${KDIR:-}" ]; then
	running=$(uname -r)
	if [ -f "/lib/modules/$running/build/Makefile" ]; then
		KDIR=/lib/modules/$running/build
	else
		newest=$(ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n 1 || true)
		if [ -z "$newest" ] || [ ! -f "$newest/Makefile" ]; then
			cat >&2 <<EOF
build-driver: no kernel build tree found: /lib/modules/$running/build does
not exist, nor any other /lib/modules/*/build.
Install the headers of the kernel to build for. On Debian, for the running
kernel (if Debian packages it):
    apt-get install linux-headers-$running
or for Debian's current kernel (what the test VM boots, with linux-image-amd64):
    apt-get install linux-headers-amd64
Or point KDIR at a configured kernel tree: KDIR=/path/to/linux make driver
EOF
			exit 1
		fi
		KDIR=$newest
		echo "build-driver: no headers for the running kernel $running;" \
			"building for $(basename "$(dirname "$KDIR")") instead" >&2
	fi
fi
if [ ! -f "$KDIR/Makefile" ]; then
	echo "build-driver: $KDIR is not a kernel build tree (no Makefile)" >&2
	exit 1
fi

make -C "$top/driver" KDIR="$KDIR" "$@"

if [ $# = 0 ] || [ "$*" != clean ]; then
	ko=$top/driver/fpgacomm.ko
	if [ -f "$ko" ]; then
		echo "build-driver: $ko for $(modinfo -F vermagic "$ko" 2>/dev/null |
			cut -d' ' -f1)"
	fi
fi
