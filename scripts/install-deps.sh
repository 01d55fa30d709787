#!/bin/sh
# SPDX-License-Identifier: MIT
#
# install-deps.sh - install what building and testing fpgacomm needs on
# Debian or Ubuntu. Idempotent: when everything is present it only asks
# dpkg, prints nothing and exits 0.
#
#   scripts/install-deps.sh        build and emulator tests (with libfabric's
#                                  headers and tools: the provider, fi_info,
#                                  fi_pingpong; libpmix-dev: the bridges
#                                  between hosts meet through PMIx)
#   scripts/install-deps.sh --vm   also what the VM driver tests and the
#                                  driver lint (sparse) need, and
#                                  on Debian 12 the newer kernel they also
#                                  run on: bookworm-backports' (6.12 series)
#                                  image and headers, beside Debian's own
#   scripts/install-deps.sh --mpi  also Open MPI, which `make bench` runs
#                                  beside the fabric (scripts/bench-fabric.sh)
#                                  and `make check` over the provider
#   scripts/install-deps.sh --valgrind  also valgrind, whose instruction
#                                  counter `make bench` uses
#                                  (scripts/bench-msgcost.sh)
#   scripts/install-deps.sh --plot also gnuplot (no X), which draws
#                                  `make bench`'s plots (scripts/plot.sh)
#
# Exit status: 0 all present (or installed), 1 could not install, 2 bad usage.

set -eu

PKGS="build-essential pkg-config libpci-dev libnuma-dev libcmocka-dev kmod pciutils universal-ctags clang-format libfabric-dev libfabric-bin libpmix-dev"
VM_PKGS="qemu-system-x86 linux-image-amd64 linux-headers-amd64 busybox-static strace sparse"
MPI_PKGS="openmpi-bin libopenmpi-dev"
VALGRIND_PKGS="valgrind"
PLOT_PKGS="gnuplot-nox"

prog=${0##*/}

usage() {
	echo "usage: $prog [--vm] [--mpi] [--valgrind] [--plot]" >&2
	exit 2
}

die() {
	echo "$prog: $*" >&2
	exit 1
}

want=$PKGS
vm=0
for arg in "$@"; do
	case $arg in
	--vm) want="$want $VM_PKGS"; vm=1 ;;
	--mpi) want="$want $MPI_PKGS" ;;
	--valgrind) want="$want $VALGRIND_PKGS" ;;
	--plot) want="$want $PLOT_PKGS" ;;
	-h | --help)
		echo "usage: $prog [--vm] [--mpi] [--valgrind] [--plot]"
		echo "Installs the missing ones among: $PKGS"
		echo "With --vm, also: $VM_PKGS"
		echo "With --mpi, also: $MPI_PKGS"
		echo "With --valgrind, also: $VALGRIND_PKGS"
		echo "With --plot, also: $PLOT_PKGS"
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

# Debian 12 only: is a bookworm-backports kernel with headers installed?
backports_wanted() {
	[ "$vm" = 1 ] || return 1
	codename=$( . /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
	[ "$codename" = bookworm ] || return 1
	# Debian 12's own kernels are 6.1.x; any other with headers will do.
	for d in /lib/modules/*/build; do
		k=${d%/build}
		k=${k##*/}
		case $k in
		6.1.*) ;;
		*) [ -f "$d/Makefile" ] && return 1 ;;
		esac
	done
	return 0
}

[ -z "$missing" ] && ! backports_wanted && exit 0

if [ "$(id -u)" -eq 0 ]; then
	as_root=
elif command -v sudo >/dev/null 2>&1; then
	as_root=sudo
else
	die "missing:$missing; run as root or install sudo, or install them by hand"
fi

command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install by hand:$missing"

export DEBIAN_FRONTEND=noninteractive
if [ -n "$missing" ]; then
	echo "$prog: installing:$missing" >&2
	# shellcheck disable=SC2086 # word splitting of the package list is wanted
	$as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q ||
		die "apt-get update failed; install by hand:$missing"
	# shellcheck disable=SC2086
	$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing ||
		die "apt-get install failed for:$missing"
fi

# The second kernel of the VM suites: the image and headers the backports
# metapackages name, installed by name so that Debian's own stay the
# system's; dwarves (pahole) for the BTF of modules built against it.
if backports_wanted; then
	if ! grep -rqs '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		echo "$prog: adding the bookworm-backports suite" >&2
		echo "deb http://deb.debian.org/debian bookworm-backports main" |
			$as_root tee /etc/apt/sources.list.d/fpgacomm-bookworm-backports.list >/dev/null ||
			die "cannot add bookworm-backports to /etc/apt/sources.list.d"
	fi
	$as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q ||
		die "apt-get update failed (bookworm-backports)"
	bpo=
	for meta in linux-image-amd64 linux-headers-amd64; do
		p=$(apt-cache depends "$meta/bookworm-backports" 2>/dev/null |
		    sed -n 's/^ *Depends: \(linux-[a-z]*-[0-9][^ ]*\)$/\1/p' | head -n 1)
		[ -n "$p" ] || die "no $meta in bookworm-backports"
		bpo="$bpo $p"
	done
	echo "$prog: installing from bookworm-backports:$bpo dwarves" >&2
	# shellcheck disable=SC2086
	$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends -t bookworm-backports $bpo dwarves ||
		die "apt-get install failed for:$bpo"
fi
