#!/usr/bin/env python3
"""circles.py - fails when the files of a library call each other in a circle.

    circles.py MAX LIB.a [LIB.a ...]

Reads the symbols of the libraries' object files (nm): a file that uses a
symbol another file defines depends on it. Files that depend on each other,
directly or round a longer path (a strongly connected part of that graph),
form a circle; one of more than MAX files fails, and each is printed with
the symbols that hold it together, so that the leaf to move out shows. A
library is named by its objects, so a helper inlined from a header does not
count, and neither does a call through a pointer set elsewhere.
"""
import os
import subprocess
import sys


def source_of(member):
    """tree.c for .../libpathfs-store.a.p/tree.c.o"""
    name = os.path.basename(member)
    return name[:-2] if name.endswith('.o') else name


def read(libs):
    defs, uses = {}, {}
    for lib in libs:
        out = subprocess.run(['nm', '-A', '-P', lib], check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            # lib.a[member.o]: name TYPE [value size]
            head, _, rest = line.partition(']: ')
            fields = rest.split()
            if not rest or len(fields) < 2:
                continue
            f = source_of(head.partition('[')[2])
            name, kind = fields[0], fields[1]
            uses.setdefault(f, set())
            if kind == 'U':
                uses[f].add(name)
            elif kind.isupper():
                defs[name] = f
    graph = {f: {} for f in uses}
    for f, names in uses.items():
        for name in names:
            g = defs.get(name)
            if g and g != f:
                graph[f].setdefault(g, []).append(name)
    return graph


def circles(graph):
    """Tarjan's strongly connected components, without recursion."""
    index, low, on, stack, out = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                part = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    part.append(w)
                    if w == v:
                        break
                out.append(sorted(part))
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    most = int(sys.argv[1])
    graph = read(sys.argv[2:])
    bad = [c for c in circles(graph) if len(c) > most]
    for c in bad:
        print('a circle of %d files (at most %d): %s' %
              (len(c), most, ' '.join(c)))
        for f in c:
            for g in sorted(graph[f]):
                if g in c:
                    print('  %s -> %s: %s' %
                          (f, g, ' '.join(sorted(graph[f][g]))))
    if not graph:
        sys.exit('no object files read')
    sys.exit(1 if bad else 0)


main()
