#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# check-layers.sh: calls go one way. From the object files that `make`
# (build/lib, build/emu, build/topo, build/model) and `make driver`
# (driver/*.o) leave, it makes the graph of calls between files: file A
# calls file B when a function A leaves undefined is defined in B (nm:
# text symbols; a variable or a table is data, not a call). A
# call through a pointer (a backend's ops, a registered handler) is no
# edge: that is how a lower file calls a higher one. It fails on:
#
#   - loops: a strongly connected set of two or more files, printed file
#     by file with one symbol per call;
#   - layer order: a file of lib/ calling a file of a folder whose rank
#     (RANKS below, docs/layout.md) is not lower than its own folder's;
#     folders of one rank do not call each other;
#   - private headers: a file including another folder's header named
#     *_internal.h (each folder's own; its other headers are what it
#     offers the folders above).
#
# usage: scripts/check-layers.sh [-v]     -v also prints every call edge
# The driver part is skipped, saying why, when driver/*.o are missing or
# older than their sources and `make driver` cannot build them.
# Prints "ok: layers: ..." or "FAIL: layers: ..." lines for check-rules.sh.
set -uo pipefail

cd "$(dirname "$0")/.."
verbose=0
[[ ${1:-} == -v ]] && verbose=1

if ! command -v nm >/dev/null || ! command -v python3 >/dev/null; then
	echo "skip: layers: nm (binutils) or python3 is not installed"
	exit 0
fi

# The folders of lib/, lowest first: a file may call files of its own
# folder and of folders with a lower rank, never the other way.
RANKS='
lib/peer      0
lib/core      1
lib/backend   2
lib/hbm       3
lib/fabric    3
lib/proto     4
lib/chan      5
lib/coll      6
lib/sort      7
lib/open      8
'

lib_objs=$(find build/lib build/emu build/topo build/model -name '*.o' 2>/dev/null | sort)
if [[ -z $lib_objs ]]; then
	echo "FAIL: layers: no object files under build/ (run make first)"
	exit 1
fi

# The driver's objects, rebuilt when a source is newer than its object.
driver_objs=
driver_note=
stale=0
for c in driver/*.c; do
	o=${c%.c}.o
	if [[ ! -f $o || $c -nt $o || driver/fc.h -nt $o ]]; then
		stale=1
	fi
done
if ((stale)); then
	if ! make --no-print-directory -s driver >/dev/null 2>&1; then
		driver_note="driver/: skipped, \`make driver\` failed (kernel headers?)"
	fi
fi
if [[ -z $driver_note ]]; then
	driver_objs=$(ls driver/*.o 2>/dev/null | grep -v -e 'driver/fpgacomm\.o' -e '\.mod\.o$')
fi

python3 - "$verbose" "$RANKS" "$driver_note" <<EOF
import collections, os, re, subprocess, sys

verbose = sys.argv[1] == "1"
ranks = {}
for line in sys.argv[2].splitlines():
    p = line.split()
    if len(p) == 2:
        ranks[p[0]] = int(p[1])
driver_note = sys.argv[3]
groups = {"lib, emu, topo, model": """$lib_objs""".split(),
          "driver": """$driver_objs""".split()}
failed = 0

def src_of(obj):
    name = obj[len("build/"):] if obj.startswith("build/") else obj
    return name[:-2] + ".c"

def nm(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True).stdout
    defined, undef = set(), set()
    for l in out.splitlines():
        p = l.split()
        if len(p) == 3 and p[1] in "TWi":
            defined.add(p[2])
        elif len(p) == 2 and p[0] == "U":
            undef.add(p[1])
    return defined, undef

def graph(objs):
    where, needs = {}, {}
    for o in objs:
        f = src_of(o)
        if not os.path.exists(f):
            continue  # an object left from a file since moved or removed
        d, u = nm(o)
        needs[f] = u
        for s in d:
            where.setdefault(s, f)
    edges = collections.defaultdict(dict)
    for f, u in needs.items():
        for s in sorted(u):
            g = where.get(s)
            if g and g != f and g not in edges[f]:
                edges[f][g] = s
    return sorted(needs), edges

def sccs(nodes, edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)
    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v); on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))
    for v in nodes:
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]

def cycle_in(comp, edges):
    """One cycle through the component's first file, by breadth-first search."""
    members, start = set(comp), comp[0]
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(edges.get(v, {})):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w in members and w not in prev:
                prev[w] = v; todo.append(w)
    return [start]

def folder(f):
    return os.path.dirname(f)

def report(ok, what, lines=()):
    global failed
    print(("ok: " if ok else "FAIL: ") + what)
    for l in lines:
        print("  " + l)
    failed += 0 if ok else 1

for name, objs in groups.items():
    if not objs:
        print("skip: layers: " + (driver_note or name + ": no object files"))
        continue
    nodes, edges = graph(objs)
    if verbose:
        for a in nodes:
            for b, s in sorted(edges.get(a, {}).items()):
                print(f"  edge {a} -> {b} ({s})")
    loops = sccs(nodes, edges)
    lines = []
    for comp in loops:
        lines.append(f"a loop of {len(comp)} files: " + " ".join(comp))
        cyc = cycle_in(comp, edges)
        lines.append("  one way round: " + " -> ".join(cyc))
        for a in comp:
            for b, s in sorted(edges.get(a, {}).items()):
                if b in comp:
                    lines.append(f"    {a} -> {b} ({s})")
    report(not loops, f"layers: {name}: no loop of calls between files"
           if not loops else f"layers: {name}: calls in a loop "
           "(move the function to the file it belongs to, or pass a callback down)",
           lines)
    if name == "driver":
        continue
    bad, unranked = [], set()
    for a in nodes:
        fa = folder(a)
        if not fa.startswith("lib"):
            continue
        if fa not in ranks:
            unranked.add(fa); continue
        for b, s in sorted(edges.get(a, {}).items()):
            fb = folder(b)
            if fb == fa or not fb.startswith("lib"):
                continue
            if fb not in ranks:
                unranked.add(fb); continue
            if ranks[fb] >= ranks[fa]:
                bad.append(f"{a} ({fa}, rank {ranks[fa]}) -> {b} "
                           f"({fb}, rank {ranks[fb]}) ({s})")
    report(not bad and not unranked,
           "layers: lib/: each folder calls only folders below it" if not bad
           and not unranked else "layers: lib/: calls against the layer order",
           bad + [f"{f}: a folder with no rank (RANKS in scripts/check-layers.sh)"
                  for f in sorted(unranked)])

# Private headers: a header named *_internal.h is its folder's own.
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
headers = collections.defaultdict(list)
srcs = []
for top in ("lib", "emu", "driver", "topo", "model"):
    for d, _, files in os.walk(top):
        for fn in files:
            p = os.path.join(d, fn)
            if fn.endswith(".h"):
                headers[fn].append(p)
            if fn.endswith((".c", ".h")):
                srcs.append(p)
bad = []
for s in sorted(srcs):
    with open(s, errors="replace") as fh:
        for n, l in enumerate(fh, 1):
            m = inc.match(l)
            if not m:
                continue
            name = m.group(1)
            local = os.path.normpath(os.path.join(os.path.dirname(s), name))
            if os.path.exists(local):
                target = local
            else:
                hits = headers.get(os.path.basename(name), [])
                hits = [h for h in hits if h.endswith(name)]
                if len(hits) != 1:
                    continue
                target = hits[0]
            if (os.path.basename(target).endswith("_internal.h")
                    and folder(target) != folder(s)):
                bad.append(f"{s}:{n}: includes {target}, private to {folder(target)}/")
report(not bad, "layers: no file includes another folder's private header"
       if not bad else "layers: private headers included from another folder", bad)
sys.exit(1 if failed else 0)
EOF
