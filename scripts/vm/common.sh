# SPDX-License-Identifier: MIT
# Sourced by the host-side VM scripts (bash): helpers they share.
# Expects $work (a scratch directory) and a die() that prints and exits.

# build WHAT COMMAND...: run a build step quietly; on failure show its log.
build() {
	local what=$1
	shift
	if ! "$@" > "$work/build.log" 2>&1; then
		cat "$work/build.log" >&2
		die "build of $what"
	fi
}
