#!/usr/bin/env python3
# xattr_ns.py - the xattr namespace cases of posix_xattr_ns.sh on one file:
# prints one line per case, the call and its answer (ok, the value or list,
# or the errno's name), so two file systems' runs compare line by line.
#
#   xattr_ns.py set FILE   (as root: the cases that set)
#   xattr_ns.py look FILE  (as anyone: the cases that read and list)
import errno
import os
import sys

how, f = sys.argv[1], sys.argv[2]


def say(what, call):
    try:
        r = call()
        if isinstance(r, list):
            r = ",".join(sorted(r))
        elif isinstance(r, bytes):
            r = r.decode()
        print(what, "ok" if r is None else r)
    except OSError as e:
        print(what, errno.errorcode.get(e.errno, e.errno))


if how == "set":
    for name in ["user.a", "trusted.t", "security.s", "system.foo", "foo.x",
                 "user.", "trusted.", "security.", "user.b"]:
        say("set " + name, lambda: os.setxattr(f, name, b"1"))
    say("remove system.foo", lambda: os.removexattr(f, "system.foo"))
    say("remove foo.x", lambda: os.removexattr(f, "foo.x"))
    say("remove user.", lambda: os.removexattr(f, "user."))
else:
    say("list", lambda: os.listxattr(f))
    for name in ["user.a", "trusted.t", "system.foo", "foo.x", "user."]:
        say("get " + name, lambda: os.getxattr(f, name))
