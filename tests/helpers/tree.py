#!/usr/bin/env python3
"""tree.py - mount-test helper: builds test trees and prints their manifests.

  tree.py gen DIR N        a branch of at least N entries under DIR (created):
                           nested folders, files of many sizes with
                           deterministic content, symlinks (relative and
                           dangling), hard links, xattrs, odd modes and
                           nanosecond mtimes, and names whose bytes sort
                           before '/' (space, '-', '.') next to plain ones.
                           Prints the number of entries made.
  tree.py flat DIR N       DIR (created) holding exactly N small files.
  tree.py fixture DIR      the POSIX fixture of the mount tests under DIR
                           (created): files of 0, 1, 65535, 65536, 65537 bytes
                           and a few MiB, a sparse file, symlinks (relative,
                           absolute, dangling, to a folder), hard links, a
                           FIFO, xattrs (empty, binary, long names), odd modes
                           (0000, 0600, setuid, setgid and sticky folders),
                           an odd owner, mtimes in 1969, 1970, 2040 and 2100
                           with nanoseconds, and names with spaces, a leading
                           '-', a leading '.', '...', a newline, a tab, UTF-8
                           and 255 bytes. Needs root (chown).
  tree.py manifest DIR [--no-mtime] [--no-dir-mtime]
                           one line per entry below DIR (DIR itself excluded),
                           sorted by path bytes: path, type, mode, uid, gid,
                           size (not for folders), nlink, hard-link group,
                           mtime (ns), sha256 of content / symlink target /
                           rdev, and every xattr (name=hex value). Paths are
                           escaped so that each entry is one line.

Everything is deterministic: two runs of gen with the same N make identical
manifests, so a manifest taken before an operation can be compared with one
taken after it. Limits: content is held in memory one file at a time; the
manifest reads every byte of every file.
"""
import concurrent.futures
import hashlib
import os
import random
import stat
import sys


def esc(b):
    """One-line, unambiguous rendering of a path (bytes)."""
    out = []
    for c in b:
        if 0x21 <= c < 0x7F and c != 0x5C:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    return "".join(out)


def content(seed, size):
    return random.Random(seed).randbytes(size)


FILE_MODES = [0o644, 0o600, 0o755, 0o640, 0o444, 0o4755, 0o664]
DIR_MODES = [0o755, 0o750, 0o2775, 0o700, 0o1777]
# Names next to each other in byte order around '/' (0x2f): ' ' (0x20),
# '-' (0x2d) and '.' (0x2e) sort before it, '0' (0x30) right after it.
ODD_NAMES = ["a b", "-dash", ".dot", "x-", "x.y", "x", "x0", "üñí", "..."]
MTIME0 = 1_600_000_000_123_456_789


def mtime(i):
    return MTIME0 + i * 1_000_003_007


class Gen:
    def __init__(self, top):
        self.top = top
        self.n = 0
        self.dirs = []  # (path, index) to stamp after filling

    def mkdir(self, path, i):
        os.mkdir(path)
        self.n += 1
        self.dirs.append((path, i))  # list.append is atomic

    def file(self, path, i):
        size = (i * 101) % 3001
        if i % 97 == 13:
            size = 65536 + (i % 3) - 1 + 65536 * (i % 2)  # across blocks
        with open(path, "wb") as f:
            f.write(content(i, size))
        if i % 5 == 0:
            os.setxattr(path, "user.idx", str(i).encode())
        if i % 11 == 0:
            os.setxattr(path, "user.bin", bytes(range(i % 7, 40)))
        os.chmod(path, FILE_MODES[i % len(FILE_MODES)])
        os.utime(path, ns=(mtime(i), mtime(i)))
        self.n += 1

    def symlink(self, target, path, i):
        os.symlink(target, path)
        os.utime(path, ns=(mtime(i), mtime(i)), follow_symlinks=False)
        self.n += 1

    def finish(self):
        # Deepest first: stamping a folder after its children were made.
        for path, i in sorted(self.dirs, key=lambda d: -d[0].count("/")):
            os.setxattr(path, "user.dir", ("d%d" % i).encode())
            os.chmod(path, DIR_MODES[i % len(DIR_MODES)])
            os.utime(path, ns=(mtime(i), mtime(i)))


PER_DIR = 86  # entries gen_dir() makes


def gen_dir(g, top, d):
    """One top-level folder of gen(): PER_DIR entries, content by index."""
    i = d * 100
    if d < len(ODD_NAMES):
        dname = os.path.join(top, ODD_NAMES[d])
    else:
        dname = os.path.join(top, "d%04d" % d)
    g.mkdir(dname, d)
    for j in range(60):
        i += 1
        g.file(os.path.join(dname, "f%03d" % j), i)
    for name in ODD_NAMES:
        i += 1
        g.file(os.path.join(dname, name + ".f"), i)
    for j in range(6):
        i += 1
        g.symlink("f%03d" % j, os.path.join(dname, "l%d" % j), i)
    i += 1
    g.symlink("../nowhere/%d" % d, os.path.join(dname, "dangling"), i)
    i += 1
    g.symlink("/etc/passwd", os.path.join(dname, "abs"), i)
    os.link(os.path.join(dname, "f000"), os.path.join(dname, "hard"))
    sub = os.path.join(dname, "sub")
    g.mkdir(sub, d + 1000)
    for name in ["s0", "s 1", "s-2", "s.3"]:
        i += 1
        g.file(os.path.join(sub, name), i)
    deeper = os.path.join(sub, "deep")  # a folder inside the nested one
    g.mkdir(deeper, d + 2000)
    i += 1
    g.file(os.path.join(deeper, "leaf"), i)


def gen(top, want):
    g = Gen(top)
    os.makedirs(top, exist_ok=True)
    ndirs = (want + PER_DIR - 1) // PER_DIR
    # Folders are independent: make them in parallel (a mount is
    # latency-bound); the result does not depend on the order.
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda d: gen_dir(g, top, d), range(ndirs)))
    g.finish()
    print(ndirs * PER_DIR)


def flat(top, n):
    os.makedirs(top, exist_ok=True)
    for i in range(n):
        with open(os.path.join(top, "e%06d" % i), "wb") as f:
            f.write(b"entry %d\n" % i)
    print(n)


def fixture(top):
    j = os.path.join
    os.makedirs(top)
    stamps = []  # (path, mtime ns), applied last, deepest first

    def wfile(path, data, mode=0o644, mt=None):
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
        if mt is not None:
            stamps.append((path, mt))

    def mkdir(path, mode=0o755, mt=None):
        os.mkdir(path)
        os.chmod(path, mode)
        if mt is not None:
            stamps.append((path, mt))

    mkdir(j(top, "files"))
    for n in [0, 1, 2, 4095, 4096, 4097, 65535, 65536, 65537, 131072,
              3 * 1048576 + 123]:
        wfile(j(top, "files", "b%d" % n), content(n, n))
    wfile(j(top, "files", "text"), b"hello pathfs\n" * 100)
    # sparse: data at 0 and in the middle, a hole at the end
    with open(j(top, "files", "sparse"), "wb") as f:
        f.write(b"start")
        f.seek(4 * 1048576 + 5)
        f.write(b"middle" * 20)
        f.truncate(10 * 1048576)
    mkdir(j(top, "links"))
    os.symlink("../files/b1", j(top, "links", "rel"))
    os.symlink("/etc/hostname", j(top, "links", "abs"))
    os.symlink("does/not/exist", j(top, "links", "dangling"))
    os.symlink("../files", j(top, "links", "dirlink"))
    os.symlink("x" * 1000, j(top, "links", "longtarget"))
    os.link(j(top, "files", "b65537"), j(top, "links", "hard"))
    os.link(j(top, "files", "text"), j(top, "files", "text.2"))
    os.link(j(top, "files", "text"), j(top, "files", "text.3"))
    mkdir(j(top, "special"))
    os.mkfifo(j(top, "special", "fifo"), 0o640)
    # xattrs
    xf = j(top, "files", "b1")
    os.setxattr(xf, "user.a", b"hello")
    os.setxattr(xf, "user.empty", b"")
    os.setxattr(xf, "user.bin", bytes(range(256)))
    os.setxattr(xf, "user." + "n" * 200, b"long name")
    os.setxattr(j(top, "files"), "user.dir", b"folder xattr")
    os.setxattr(j(top, "files", "b65536"), "user.big", content(7, 4000))
    # modes and owners
    mkdir(j(top, "modes"))
    wfile(j(top, "modes", "m600"), b"secret\n", 0o600)
    wfile(j(top, "modes", "m000"), b"nobody\n", 0o000)
    wfile(j(top, "modes", "suid"), b"#!/bin/sh\n", 0o4755)
    wfile(j(top, "modes", "sgid"), b"#!/bin/sh\n", 0o2711)
    mkdir(j(top, "modes", "d751"), 0o751)
    wfile(j(top, "modes", "d751", "inner"), b"in 751\n")
    mkdir(j(top, "modes", "setgid"), 0o2775)
    wfile(j(top, "modes", "setgid", "inner"), b"in setgid\n")
    mkdir(j(top, "modes", "sticky"), 0o1777)
    wfile(j(top, "modes", "owned"), b"odd owner\n", 0o640)
    os.chown(j(top, "modes", "owned"), 1234, 5678)
    mkdir(j(top, "modes", "owned-dir"), 0o700)
    os.chown(j(top, "modes", "owned-dir"), 4321, 8765)
    # mtimes with nanoseconds, before and after the 32-bit limits
    mkdir(j(top, "times"))
    for name, ns in [("y1970", 1_000_000_001),
                     ("y1969", -1_250_000_000),
                     ("y2001", 1_000_000_000_123_456_789),
                     ("y2040", 2_220_000_000_987_654_321),
                     ("y2100", 4_102_444_800_500_000_001)]:
        wfile(j(top, "times", name), name.encode(), mt=ns)
    mkdir(j(top, "times", "dir2040"), mt=2_220_000_000_000_000_007)
    # names
    mkdir(j(top, "names"))
    names = ["with space", "-leading-dash", ".hidden", "...", "new\nline",
             "tab\there", "ünïcödé 日本語", "x" * 255,
             ("é" * 127 + "x"), "quote'\"", "star*?[", "back\\slash"]
    for i, n in enumerate(names):
        wfile(j(top, "names", n), ("name %d\n" % i).encode())
    # folders whose names sort around '/' and their children
    for n in ["a", "a b", "a-b", "a.b", "a0", "a-"]:
        mkdir(j(top, "names", n))
        wfile(j(top, "names", n, "child"), n.encode())
        mkdir(j(top, "names", n, "sub"))
        wfile(j(top, "names", n, "sub", "grandchild"), n.encode() * 3)
    # deep nesting
    d = j(top, "deep")
    for i in range(30):
        d = j(d, "level%02d" % i)
        os.makedirs(d)
    wfile(j(d, "bottom"), b"deep\n")
    # odd mtimes on everything else too, so a tool that drops them shows
    for root, dirs, files in os.walk(top):
        for n in files:
            p = j(root, n)
            if not any(p == s[0] for s in stamps):
                stamps.append((p, MTIME0 + len(stamps) * 7_777_777))
        for n in dirs:
            p = j(root, n)
            if os.path.islink(p):
                continue
            if not any(p == s[0] for s in stamps):
                stamps.append((p, MTIME0 + len(stamps) * 7_777_777))
    for n in ["rel", "abs", "dangling", "dirlink", "longtarget"]:
        stamps.append((j(top, "links", n), mtime(len(stamps))))
    for p, ns in sorted(stamps, key=lambda s: -s[0].count("/")):
        os.utime(p, ns=(ns, ns), follow_symlinks=False)


def manifest(top, with_mtime=True, with_dir_mtime=True):
    top = os.fsencode(top)
    entries = []
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            p = os.path.join(root, name)
            entries.append((os.path.relpath(p, top), p))
    entries.sort()
    # Reading through a mount is latency-bound: overlap the per-entry work
    # (lstat, read, xattrs) in threads; the output order stays sorted.
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        infos = list(pool.map(lambda e: entry_info(*e, with_mtime,
                                                   with_dir_mtime), entries))
    groups = {}
    lines = []
    for (rel, p), (st, fields) in zip(entries, infos):
        group = "-"
        if fields[1] != "d" and st.st_nlink > 1:
            group = groups.setdefault((st.st_dev, st.st_ino), esc(rel))
        fields[7] = group
        lines.append("\t".join(fields))
    sys.stdout.write("".join(line + "\n" for line in lines))


def entry_info(rel, p, with_mtime, with_dir_mtime):
    """The stat result and manifest fields of one entry (group left blank)."""
    st = os.lstat(p)
    m = st.st_mode
    t = {stat.S_IFDIR: "d", stat.S_IFREG: "f", stat.S_IFLNK: "l",
         stat.S_IFIFO: "p", stat.S_IFSOCK: "s", stat.S_IFCHR: "c",
         stat.S_IFBLK: "b"}[stat.S_IFMT(m)]
    if t == "f":
        h = hashlib.sha256()
        with open(p, "rb") as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                h.update(b)
        what = h.hexdigest()
    elif t == "l":
        what = "->" + esc(os.readlink(p))
    elif t in "cb":
        what = "rdev=%d" % st.st_rdev
    else:
        what = "-"
    xs = []
    if t != "l":  # user.* xattrs are not allowed on symlinks
        for x in sorted(os.listxattr(p, follow_symlinks=False)):
            v = os.getxattr(p, x, follow_symlinks=False)
            xs.append("%s=%s" % (x, v.hex()))
    mt = str(st.st_mtime_ns)
    if not with_mtime or (t == "d" and not with_dir_mtime):
        mt = "-"
    size = "-" if t == "d" else str(st.st_size)
    return st, [esc(rel), t, "%05o" % stat.S_IMODE(m), str(st.st_uid),
                str(st.st_gid), size, str(st.st_nlink), "-", mt, what,
                ",".join(xs) or "-"]


def main(argv):
    if len(argv) >= 4 and argv[1] == "gen":
        gen(argv[2], int(argv[3]))
    elif len(argv) >= 4 and argv[1] == "flat":
        flat(argv[2], int(argv[3]))
    elif len(argv) >= 3 and argv[1] == "fixture":
        fixture(argv[2])
    elif len(argv) >= 3 and argv[1] == "manifest":
        manifest(argv[2], "--no-mtime" not in argv,
                 "--no-dir-mtime" not in argv)
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
