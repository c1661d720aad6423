#!/usr/bin/env python3
"""call_circles.py - fails if the files of a library call each other in a
circle.

    call_circles.py [--max-files N] ARCHIVE_OR_OBJECT...

Reads the global symbols of every object (each member of a static archive,
each object file given) with nm: a file that leaves a symbol undefined
(a call, or the address of a function or variable) which another file of
the set defines depends on that file. Files that depend on each other,
directly or around a longer loop, form a circle (a strongly connected
component of that graph). Exit 1 and each circle with one dependency per
line if any holds more than N files (default 1: no circle at all), else 0.

What it sees is what the linker sees: calls through a function pointer set
elsewhere, static functions and static inline functions of headers are not
dependencies. An object's name is its file name (meson's "inodes.c.o"),
so two objects of one name in the set are one file.
"""
import argparse
import os
import subprocess
import sys

DEFINED = set("TDBRCVWGSi")
UNDEFINED = set("Uwv")


def read_symbols(paths):
    """{file: (defined set, undefined set)} from nm of @paths."""
    out = subprocess.run(["nm", "--print-file-name", "--extern-only"] +
                         paths, check=True, capture_output=True,
                         text=True).stdout
    files = {}
    for line in out.splitlines():
        # "lib.a:member.o:0000 T name", "obj.o:0000 T name",
        # "lib.a:member.o:                 U name"
        where, _, rest = line.rpartition(":")
        fields = rest.split()
        if len(fields) < 2:
            continue
        kind, name = fields[-2], fields[-1]
        member = os.path.basename(where.split(":")[-1])
        defs, undefs = files.setdefault(member, (set(), set()))
        if kind in DEFINED:
            defs.add(name)
        elif kind in UNDEFINED:
            undefs.add(name)
    return files


def circles(graph):
    """The strongly connected components of @graph ({node: {node: why}})
    (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, succ = work[-1]
            nxt = next(succ, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    comp.append(n)
                    if n == node:
                        break
                found.append(sorted(comp))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-files", type=int, default=1,
                    help="largest circle allowed (1: none)")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()

    files = read_symbols(args.paths)
    owner = {}
    for f, (defs, _) in files.items():
        for name in defs:
            owner[name] = f
    graph = {f: {} for f in files}
    for f, (_, undefs) in files.items():
        for name in sorted(undefs):
            to = owner.get(name)
            if to and to != f:
                graph[f].setdefault(to, name)
    bad = [c for c in circles(graph) if len(c) > args.max_files]
    for comp in bad:
        print("call circle of %d files: %s" % (len(comp), " ".join(comp)))
        members = set(comp)
        for f in comp:
            for to, name in sorted(graph[f].items()):
                if to in members:
                    print("  %s -> %s (%s)" % (f, to, name))
    if not bad:
        print("no call circle of more than %d file(s) among %d files" %
              (args.max_files, len(files)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
