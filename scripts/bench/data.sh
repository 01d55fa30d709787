# SPDX-License-Identifier: MIT
#
# data.sh: sourced by the scripts/bench*.sh scripts. Each writes its
# figures as a plain whitespace table under build/bench/ (NAME.dat), which
# scripts/plot.sh turns into build/bench/NAME.png. A table starts with
# comment lines: what was measured, then "# machine: ...", "# date: ...",
# "# tree: ..." (scripts/plot.sh puts those in the plot's caption), then
# "# columns: ..." naming the columns; "-" marks a figure not measured.

# dat_header FILE WHAT COLUMNS: start FILE with the comment lines.
dat_header() {
	local cpu
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
	{
		echo "# $2"
		echo "# machine: $(nproc) CPUs${cpu:+, $cpu}, $(uname -r)"
		echo "# date: $(date -u '+%F %H:%M UTC')"
		echo "# tree: $(git describe --always --dirty 2>/dev/null || echo unknown)"
		echo "# columns: $3"
	} >"$1"
}
