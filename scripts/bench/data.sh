# SPDX-License-Identifier: MIT
#
# data.sh: sourced by the scripts/bench*.sh scripts. Each writes its
# figures as a plain whitespace table under build/bench/ (NAME.dat), which
# scripts/plot.sh turns into build/bench/NAME.png. A table starts with
# comment lines: what was measured, then "# machine: ...", "# date: ...",
# "# tree: ...", "# load: ..." (scripts/plot.sh puts those in the plot's
# caption: other programs' load moves the figures), then
# "# columns: ..." naming the columns; "-" marks a figure not measured.

# dat_tree: the commit, and whether the code measured (lib/ emu/ include/
# topo/ tools/) differs from it; other changes do not count.
dat_tree() {
	local t n
	t=$(git describe --always 2>/dev/null) || { echo unknown; return; }
	n=$(git status --porcelain -- lib emu include topo tools 2>/dev/null | wc -l)
	if ((n)); then echo "$t + $n changed file(s) of the code"; else echo "$t"; fi
}

# dat_header FILE WHAT COLUMNS: start FILE with the comment lines.
dat_header() {
	local cpu
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
	{
		echo "# $2"
		echo "# machine: $(nproc) CPUs${cpu:+, $cpu}, $(uname -r)"
		echo "# date: $DAT_DATE"
		echo "# tree: $DAT_TREE"
		echo "# load: $DAT_LOAD at the start, $(cut -d' ' -f1 /proc/loadavg) at the end (1-minute load average)"
		echo "# columns: $3"
	} >"$1"
}

# The tree and the time when the script started: what a table measured.
DAT_TREE=$(dat_tree)
DAT_DATE=$(date -u '+%F %H:%M UTC')
DAT_LOAD=$(cut -d' ' -f1 /proc/loadavg)
