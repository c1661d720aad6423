#!/usr/bin/env python3
"""flagops.py - runs file system calls read from stdin, one a line, in the
current folder, and prints each one's outcome: "LINE: ok" (or its result)
or "LINE: ERRNAME" (errno's name). Used by tests/mount/posix_chattr.sh to
run the same calls on two file systems and compare what they answer.

A line is an operation and its arguments, separated by spaces:
  open PATH MODE KEY    open PATH (MODE: r, w, rw, a = write|append,
                        rt = read|trunc, at = append|trunc, wc = write|creat)
                        and keep the descriptor as KEY
  close KEY | write KEY TEXT | ftruncate KEY N | fallocate KEY MODE OFF LEN
                        (MODE: alloc, keep, punch, zero)
  truncate PATH N | chmod PATH OCTAL | chown PATH UID GID | touch PATH
  (times to now) | utime PATH SECONDS | setxattr PATH NAME VALUE |
  removexattr PATH NAME | link OLD NEW | unlink PATH | rename OLD NEW |
  mkdir PATH | rmdir PATH | symlink TARGET PATH | mkfifo PATH |
  tmpfile DIR (O_TMPFILE) | cat PATH (prints the content) |
  directread PATH (an O_DIRECT read of 4 KiB) | atime PATH (seconds) |
  ioctl PATH (an ioctl no file system knows)
"""
import errno
import os
import sys

FALLOC = {"alloc": 0, "keep": 1, "punch": 3, "zero": 0x10}
OPEN = {
    "r": os.O_RDONLY,
    "w": os.O_WRONLY,
    "rw": os.O_RDWR,
    "a": os.O_WRONLY | os.O_APPEND,
    "rt": os.O_RDONLY | os.O_TRUNC,
    "at": os.O_WRONLY | os.O_APPEND | os.O_TRUNC,
    "wc": os.O_WRONLY | os.O_CREAT,
}


def run(fds, op, a):
    if op == "open":
        fds[a[2]] = os.open(a[0], OPEN[a[1]], 0o644)
    elif op == "close":
        os.close(fds.pop(a[0]))
    elif op == "write":
        os.write(fds[a[0]], a[1].encode())
    elif op == "ftruncate":
        os.ftruncate(fds[a[0]], int(a[1]))
    elif op == "fallocate":
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int,
                                   ctypes.c_long, ctypes.c_long]
        if libc.fallocate(fds[a[0]], FALLOC[a[1]], int(a[2]), int(a[3])):
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
    elif op == "truncate":
        os.truncate(a[0], int(a[1]))
    elif op == "chmod":
        os.chmod(a[0], int(a[1], 8))
    elif op == "chown":
        os.chown(a[0], int(a[1]), int(a[2]))
    elif op == "touch":
        os.utime(a[0], None)
    elif op == "utime":
        os.utime(a[0], (int(a[1]), int(a[1])))
    elif op == "setxattr":
        os.setxattr(a[0], a[1], a[2].encode())
    elif op == "removexattr":
        os.removexattr(a[0], a[1])
    elif op == "link":
        os.link(a[0], a[1])
    elif op == "unlink":
        os.unlink(a[0])
    elif op == "rename":
        os.rename(a[0], a[1])
    elif op == "mkdir":
        os.mkdir(a[0])
    elif op == "rmdir":
        os.rmdir(a[0])
    elif op == "symlink":
        os.symlink(a[0], a[1])
    elif op == "mkfifo":
        os.mkfifo(a[0])
    elif op == "tmpfile":
        os.close(os.open(a[0], os.O_TMPFILE | os.O_WRONLY, 0o600))
    elif op == "cat":
        with open(a[0], "rb") as f:
            return repr(f.read().decode())
    elif op == "directread":
        import mmap
        fd = os.open(a[0], os.O_RDONLY | os.O_DIRECT)
        try:
            buf = mmap.mmap(-1, 4096)
            os.readv(fd, [buf])
        finally:
            os.close(fd)
    elif op == "atime":
        return str(int(os.stat(a[0]).st_atime))
    elif op == "ioctl":
        import fcntl
        fd = os.open(a[0], os.O_RDONLY)
        try:
            # _IOR('z', 99, int): no file system knows it
            fcntl.ioctl(fd, (2 << 30) | (4 << 16) | (ord("z") << 8) | 99,
                        b"\0" * 4)
        finally:
            os.close(fd)
    else:
        raise SystemExit("flagops: unknown operation " + op)
    return "ok"


def main():
    fds = {}
    for line in sys.stdin:
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        try:
            out = run(fds, words[0], words[1:])
        except OSError as e:
            out = errno.errorcode.get(e.errno, str(e.errno))
        print("%s: %s" % (" ".join(words), out), flush=True)
    for fd in fds.values():
        os.close(fd)


main()
