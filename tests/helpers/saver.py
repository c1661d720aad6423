#!/usr/bin/env python3
# saver.py - one writer saving or moving a file while readers open and read
# it, for the mount suites rel_replace.sh and rel_revalidate.sh (run with
# python3, never built).
#
#   saver.py MODE DIR COUNT [READERS [SECONDS]]
#
# The writer does COUNT saves (or moves), or as many as it can in SECONDS
# (if given), and exits; READERS reader processes (default 1) loop until it
# is done. Prints one line:
#
#   reads missing partial fdfail saves
#
# reads: files opened and read whole; missing: a name that always exists
# failed to open (ENOENT or any error); partial: a read gave bytes that are
# not one whole version; fdfail: a read or fstat on a descriptor that was
# open failed (an open file never loses its inode, whatever its names do);
# saves: how many the writer did (DIR/f then holds version "saves:").
# The first few failures are said on stderr. Exit status 1 if the writer
# failed.
#
# MODE (the writer's work; DIR/f exists from the start to the end):
#   plain     write DIR/f.tmp, fsync, os.replace() it over DIR/f
#   hardlink  the same, but the replaced inode is a hard-linked one
#             (attributes in its INODE record)
#   exchange  renameat2(RENAME_EXCHANGE) DIR/f.tmp and DIR/f, then unlink
#             DIR/f.tmp (the old version's last name)
#   move      DIR/a/f moves to DIR/b/f and back (os.rename); readers open
#             it by both names (ENOENT at open allowed: it is at one of
#             them), and keep one descriptor of it open all along
# In every mode readers also open DIR/g, a file nobody touches (it always
# exists), and drop the pages of each file before they read it (the
# mount's keep_cache would answer from them: every read is a READ).
# Environment: SAVER_READ_DIR=PATH: the readers use PATH for DIR (the same
# folder through another mount: a -o ro follower of the writer's etcd
# drive); they start once the files show there;
# SAVER_FSYNC=0: saves without fsync (more renames a second);
# SAVER_CHURN=1: each reader also creates and unlinks a file of its own in
# DIR every 8th round, changing the daemon's inode table while renames run.
import ctypes
import mmap
import os
import sys
import time

mode, d, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
nreaders = int(sys.argv[4]) if len(sys.argv) > 4 else 1
seconds = float(sys.argv[5]) if len(sys.argv) > 5 else None
rd = os.environ.get("SAVER_READ_DIR") or d  # where the readers look
f, tmp, lnk, g = d + "/f", d + "/f.tmp", d + "/f.lnk", d + "/g"
fa, fb = d + "/a/f", d + "/b/f"
rf, rg, rfa, rfb = rd + "/f", rd + "/g", rd + "/a/f", rd + "/b/f"
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
MAXSAY = 3
FSYNC = os.environ.get("SAVER_FSYNC", "1") != "0"
CHURN = os.environ.get("SAVER_CHURN", "0") == "1"


def body(i):
    # a length that changes with i: a partial read cannot look whole
    return ("%d:" % i + "x" * (1 + (i * 7919) % 9000) + ":%d\n" % i).encode()


def whole(b):
    try:
        head, _, _ = b.partition(b":")
        return b == body(int(head))
    except ValueError:
        return False


def save(i):
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, body(i))
    if FSYNC:
        os.fsync(fd)
    os.close(fd)
    if mode == "plain":
        os.replace(tmp, f)
    elif mode == "hardlink":
        os.link(tmp, lnk)  # the new version has two names...
        os.replace(tmp, f)  # ...the old one (once linked) its last
        os.unlink(lnk)
    else:
        if libc.renameat2(AT_FDCWD, tmp.encode(), AT_FDCWD, f.encode(),
                          RENAME_EXCHANGE):
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
        os.unlink(tmp)  # the old version's last name


def writer():
    """Returns how many saves (or moves there and back) it did."""
    end = time.monotonic() + seconds if seconds else None
    for i in range(1, count + 1):
        if mode == "move":
            os.rename(fa, fb)
            os.rename(fb, fa)
        else:
            save(i)
        if end and time.monotonic() >= end:
            return i
    return count


class Reader:
    def __init__(self):
        self.reads = self.missing = self.partial = self.fdfail = 0
        self.said = 0

    def say(self, what, e):
        if self.said < MAXSAY:
            self.said += 1
            print("reader %d: %s: %s" % (os.getpid(), what, e),
                  file=sys.stderr)

    def use(self, fd, what):
        """Reads and fstats an open descriptor: both must work."""
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            b = os.pread(fd, 1 << 16, 0)
            os.fstat(fd)
        except OSError as e:
            self.fdfail += 1
            self.say("read/fstat of open " + what, e)
            return
        self.reads += 1
        if not whole(b):
            self.partial += 1
            self.say("partial read of " + what, b[:40])

    def open_read(self, name, always):
        try:
            fd = os.open(name, os.O_RDONLY)
        except FileNotFoundError as e:
            if always:
                self.missing += 1
                self.say("open " + name, e)
            return
        except OSError as e:
            self.missing += 1
            self.say("open " + name, e)
            return
        try:
            self.use(fd, name)
        finally:
            os.close(fd)

    def run(self, stop, held):
        churn = "%s/c.%d" % (d, os.getpid())  # the writer's mount
        rounds = 0
        while not stop[0]:
            rounds += 1
            if CHURN and rounds % 8 == 0:
                os.close(os.open(churn, os.O_WRONLY | os.O_CREAT, 0o644))
                os.unlink(churn)
            if mode == "move":
                self.open_read(rfa, False)
                self.open_read(rfb, False)
                self.use(held, "descriptor held across moves")
            else:
                self.open_read(rf, True)
            self.open_read(rg, True)


def main():
    if mode == "move":
        os.mkdir(d + "/a")
        os.mkdir(d + "/b")
        with open(fa, "wb") as fh:
            fh.write(body(0))
    else:
        with open(f, "wb") as fh:
            fh.write(body(0))
    if mode == "hardlink":
        os.link(f, lnk)
        os.unlink(lnk)
    with open(g, "wb") as fh:
        fh.write(body(7))
    stop = mmap.mmap(-1, 1)  # shared with the readers: the writer is done
    # another mount (a follower) shows the files within its lag
    until = time.monotonic() + 10
    while not (os.path.exists(rg) and os.path.exists(rfa if mode == "move"
                                                      else rf)):
        if time.monotonic() > until:
            raise SystemExit("the readers' folder never showed the files")
        time.sleep(0.02)
    # opened before the writer starts moving it, shared by the readers
    held = os.open(rfa, os.O_RDONLY) if mode == "move" else None
    readers = []
    for _ in range(nreaders):
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            r = Reader()
            try:
                r.run(stop, held)
            except BaseException as e:
                print("reader:", repr(e), file=sys.stderr)
                r.fdfail += 1
            os.write(wfd, ("%d %d %d %d" % (r.reads, r.missing, r.partial,
                                            r.fdfail)).encode())
            os._exit(0)
        os.close(wfd)
        readers.append((pid, rfd))
    ok = True
    saves = 0
    try:
        saves = writer()
    except BaseException as e:
        print("writer:", e, file=sys.stderr)
        ok = False
    stop[0] = 1
    total = [0, 0, 0, 0]
    for pid, rfd in readers:
        out = b""
        while True:
            chunk = os.read(rfd, 100)
            if not chunk:
                break
            out += chunk
        os.close(rfd)
        os.waitpid(pid, 0)
        got = out.split()
        if len(got) == 4 and all(v.isdigit() for v in got):
            total = [t + int(v) for t, v in zip(total, got)]
        else:
            total[3] += 1  # a reader died without a report
    print(*total, saves)
    sys.exit(0 if ok else 1)


main()
