#!/bin/sh
# SPDX-License-Identifier: MIT
#
# install-deps.sh - install what building and testing fpgacomm needs on
# Debian or Ubuntu. Idempotent: when everything is present it only asks
# dpkg, prints nothing and exits 0.
#
#   scripts/install-deps.sh        build and emulator tests
#   scripts/install-deps.sh --vm   also what the VM driver tests need
#   scripts/install-deps.sh --mpi  also Open MPI, which `make bench` runs
#                                  beside the fabric (scripts/bench-fabric.sh)
#
# Exit status: 0 all present (or installed), 1 could not install, 2 bad usage.

set -eu

PKGS="build-essential pkg-config libpci-dev libnuma-dev libcmocka-dev kmod pciutils"
VM_PKGS="qemu-system-x86 linux-image-amd64 linux-headers-amd64 busybox-static strace"
MPI_PKGS="openmpi-bin libopenmpi-dev"

prog=${0##*/}

usage() {
	echo "usage: $prog [--vm] [--mpi]" >&2
	exit 2
}

die() {
	echo "$prog: $*" >&2
	exit 1
}

want=$PKGS
for arg in "$@"; do
	case $arg in
	--vm) want="$want $VM_PKGS" ;;
	--mpi) want="$want $MPI_PKGS" ;;
	-h | --help)
		echo "usage: $prog [--vm] [--mpi]"
		echo "Installs the missing ones among: $PKGS"
		echo "With --vm, also: $VM_PKGS"
		echo "With --mpi, also: $MPI_PKGS"
		exit 0
		;;
	*) usage ;;
	esac
done

command -v dpkg-query >/dev/null 2>&1 ||
	die "dpkg-query not found: this script supports Debian and Ubuntu only; install by hand: $want"

missing=
for p in $want; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case $status in
	*" ok installed") ;;
	*) missing="$missing $p" ;;
	esac
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
	as_root=
elif command -v sudo >/dev/null 2>&1; then
	as_root=sudo
else
	die "missing:$missing; run as root or install sudo, or install them by hand"
fi

command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install by hand:$missing"

echo "$prog: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086 # word splitting of the package list is wanted
$as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q ||
	die "apt-get update failed; install by hand:$missing"
# shellcheck disable=SC2086
$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing ||
	die "apt-get install failed for:$missing"
