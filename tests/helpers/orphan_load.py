#!/usr/bin/env python3
"""orphan_load.py - mount-test helper: a load of the operations that make,
keep and reclaim orphans, for crash rounds (tests/mount/rel_orphan_kill.sh).

    orphan_load.py DIR SECONDS SEED

Runs for SECONDS (or until the mount dies: ENOTCONN, ECONNABORTED, EIO), in
DIR, a random mix of: saves by os.replace over a file another descriptor has
open, over a hard-linked file, by RENAME_EXCHANGE + unlink; open + unlink +
write + close (an orphan released); link + unlink of second names; rmdir and
rename over of open folders; with readers keeping descriptors across it all.
Every other error is the expected answer of a racing namespace and ignored.
Exit status 0 always, unless the program itself breaks (a Python error).

Limits: one process, so races come only from the daemon's own threads and
from the kernel's asynchronous FORGET and RELEASE; the mount test runs
several of these at once.
"""
import ctypes
import errno
import os
import random
import sys
import time

DEAD = {errno.ENOTCONN, errno.ECONNABORTED, errno.EIO, errno.ENODEV}
libc = ctypes.CDLL(None, use_errno=True)


class Dead(Exception):
    pass


def call(fn, *a):
    try:
        return fn(*a)
    except OSError as e:
        if e.errno in DEAD:
            raise Dead() from e
        return None


def exchange(a, b):
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2):
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def write_file(p, data, fsync=False):
    fd = call(os.open, p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    if fd is None:
        return
    try:
        call(os.write, fd, data)
        if fsync:
            call(os.fsync, fd)
    finally:
        call(os.close, fd)


def main():
    d, secs, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    rnd = random.Random(seed)
    held = []  # descriptors kept open across operations
    end = time.monotonic() + secs
    n = 0
    names = ["f%d" % i for i in range(6)]
    dirs = ["d%d" % i for i in range(3)]
    try:
        while time.monotonic() < end:
            n += 1
            p = os.path.join(d, rnd.choice(names))
            q = os.path.join(d, rnd.choice(names))
            op = rnd.randrange(10)
            data = os.urandom(rnd.choice([1, 100, 5000, 70000]))
            if op == 0:  # save over a file that may be open
                write_file(p + ".tmp", data, fsync=rnd.random() < 0.2)
                call(os.replace, p + ".tmp", q)
            elif op == 1:  # over a hard-linked one
                write_file(p + ".tmp", data)
                call(os.link, p + ".tmp", p + ".lnk")
                call(os.replace, p + ".tmp", q)
                call(os.unlink, p + ".lnk")
            elif op == 2:  # exchange, then unlink the old version
                write_file(p + ".tmp", data)
                call(exchange, p + ".tmp", q)
                call(os.unlink, p + ".tmp")
            elif op == 3:  # an open file unlinked, written, released
                fd = call(os.open, p, os.O_RDWR | os.O_CREAT, 0o644)
                if fd is not None:
                    call(os.unlink, p)
                    call(os.pwrite, fd, data, rnd.randrange(4096))
                    call(os.setxattr, fd, "user.k", b"v")
                    call(os.close, fd)
            elif op == 4:  # second names come and go
                call(os.link, p, q + ".h")
                call(os.unlink, rnd.choice([p, q + ".h"]))
            elif op == 5:  # keep a descriptor (file or folder) open
                fd = call(os.open, rnd.choice([p, os.path.join(
                    d, rnd.choice(dirs))]), os.O_RDONLY)
                if fd is not None:
                    held.append(fd)
            elif op == 6 and held:  # read through and close one
                fd = held.pop(rnd.randrange(len(held)))
                call(os.fstat, fd)
                call(os.pread, fd, 100, 0)
                call(os.close, fd)
            elif op == 7:  # folders: made, removed, renamed over
                a = os.path.join(d, rnd.choice(dirs))
                b = os.path.join(d, rnd.choice(dirs))
                call(os.mkdir, a)
                if rnd.random() < 0.5:
                    call(os.rmdir, a)
                else:
                    call(os.mkdir, b)
                    call(os.rename, a, b)
            elif op == 8:  # setattr and xattrs by node id
                fd = call(os.open, p, os.O_RDWR)
                if fd is not None:
                    call(os.ftruncate, fd, rnd.randrange(9000))
                    call(os.fchmod, fd, 0o600)
                    call(os.close, fd)
            else:  # plain unlink
                call(os.unlink, p)
            if len(held) > 20:
                call(os.close, held.pop(0))
    except Dead:
        pass
    for fd in held:
        try:
            os.close(fd)
        except OSError:
            pass
    print(n)


if __name__ == "__main__":
    main()
