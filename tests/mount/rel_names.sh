#!/usr/bin/env bash
# rel_names.sh - names and paths at and past every limit, through the mount:
# 255-byte names work and 256 bytes are ENAMETOOLONG; drive paths of exactly
# TREE_PATH_MAX (32767) bytes work, one more fails to be made and is ENOENT
# to a lookup; 1,000 nested folders (created, walked, renamed,
# removed); every byte 0x01-0xFF but '/' in names (create, list, stat, read
# back, rename, remove); names like "...", "..a", ".a.", "a.."; xattr names
# of 255 bytes and values of 64 KiB work, past them the kernel's errno. The
# checks run in Python (byte names, *at() calls with folder fds, since such
# a drive path is longer than PATH_MAX below the mountpoint). The daemon
# must stay up throughout and fsck be clean.
source "$(dirname "$0")/rel_lib.sh"

rel_mount_fg
check "names and paths at and past their limits" \
	env PATHFSCTL="$PATHFSCTL" STORE="$STORE" timeout 300 python3 - "$MNT" <<'PY'
import errno, os, shutil, subprocess, sys

sys.setrecursionlimit(20000)  # shutil.rmtree of 1000 levels

mnt = sys.argv[1].encode()
fails = 0

def ok(cond, what):
    global fails
    if cond:
        print("  ok   " + what)
    else:
        fails += 1
        print("  FAIL " + what, file=sys.stderr)

def err_of(fn, *a, **k):
    try:
        fn(*a, **k)
        return 0
    except OSError as e:
        return e.errno

def write(path, data, dir_fd=None):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644, dir_fd=dir_fd)
    os.write(fd, data)
    os.close(fd)

def read(path, dir_fd=None):
    fd = os.open(path, os.O_RDONLY, dir_fd=dir_fd)
    data = b""
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            break
        data += b
    os.close(fd)
    return data

# ---- name length ----------------------------------------------------------
d = os.path.join(mnt, b"len")
os.mkdir(d)
n255 = b"n" * 250 + b".txt\xc3"[:5]
assert len(n255) == 255
ok(err_of(write, os.path.join(d, n255), b"255") == 0, "create a 255-byte name")
ok(n255 in os.listdir(d), "the 255-byte name lists")
ok(read(os.path.join(d, n255)) == b"255", "the 255-byte name reads back")
ok(err_of(os.mkdir, os.path.join(d, b"D" * 255)) == 0, "mkdir a 255-byte name")
ok(err_of(os.rename, os.path.join(d, n255), os.path.join(d, b"r" * 255)) == 0,
   "rename to a 255-byte name")
for what, fn in [
    ("create", lambda p: write(p, b"x")),
    ("mkdir", lambda p: os.mkdir(p)),
    ("symlink", lambda p: os.symlink(b"t", p)),
    ("link", lambda p: os.link(os.path.join(d, b"r" * 255), p)),
    ("rename", lambda p: os.rename(os.path.join(d, b"r" * 255), p)),
    ("stat", lambda p: os.stat(p)),
]:
    e = err_of(fn, os.path.join(d, b"m" * 256))
    ok(e == errno.ENAMETOOLONG, "%s of a 256-byte name: %s" % (what, os.strerror(e) if e else "success"))
u = "é".encode() * 128  # 256 bytes of 2-byte characters
ok(err_of(write, os.path.join(d, u), b"x") == errno.ENAMETOOLONG, "256 bytes of UTF-8: ENAMETOOLONG")
ok(err_of(write, os.path.join(d, u[:254] + b"z"), b"x") == 0, "255 bytes of UTF-8 ok")
ok(sorted(os.listdir(d)) == sorted([b"r" * 255, b"D" * 255, u[:254] + b"z"]),
   "the folder holds exactly what succeeded")

# ---- path length: drive paths of LIMIT and LIMIT + 1 bytes -----------------
LIMIT = 32767  # TREE_PATH_MAX (store/include/tree.h)
# drive path of folder at depth k = "/plen" + "/" + 200-byte names...
top = b"/plen"
os.mkdir(mnt + top)
fd = os.open(mnt + top, os.O_RDONLY | os.O_DIRECTORY)
plen = len(top)
fds = [fd]
while plen + 1 + 200 + 1 + 200 < LIMIT:
    name = b"p" * 200
    os.mkdir(name, dir_fd=fd)
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    fds.append(fd)
    plen += 1 + 200
room = LIMIT - plen - 1  # bytes left for a last name (<= 255 since < 401)
if room > 255:
    name = b"q" * (room - 201 - 1 if room - 201 - 1 <= 255 else 200)
    os.mkdir(name, dir_fd=fd)
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    fds.append(fd)
    plen += 1 + len(name)
    room = LIMIT - plen - 1
assert 1 <= room <= 255, room
last = b"L" * room
ok(err_of(write, last, b"deep", dir_fd=fd) == 0,
   "create a file whose drive path is exactly %d bytes" % LIMIT)
ok(err_of(read, last, dir_fd=fd) == 0 and read(last, dir_fd=fd) == b"deep",
   "the %d-byte path reads back" % LIMIT)
lst = [os.fsencode(x) for x in os.listdir(fd)]  # str names for an fd
ok(last in lst, "the %d-byte path lists (%r)" % (LIMIT, [(x[:4], len(x)) for x in lst]))
e = err_of(write, last + b"X", b"x", dir_fd=fd)
ok(e == errno.ENAMETOOLONG, "a %d-byte path: ENAMETOOLONG (got %s)" % (LIMIT + 1, os.strerror(e) if e else "success"))
e = err_of(os.stat, last + b"X", dir_fd=fd)
ok(e == errno.ENOENT, "stat of a missing %d-byte path: ENOENT (got %s)" % (LIMIT + 1, os.strerror(e) if e else "success"))
e = err_of(os.mkdir, last + b"Y", dir_fd=fd)
ok(e == errno.ENAMETOOLONG, "mkdir at %d bytes: ENAMETOOLONG (got %s)" % (LIMIT + 1, os.strerror(e) if e else "success"))
e = err_of(os.rename, last, last + b"Z", src_dir_fd=fd, dst_dir_fd=fd)
ok(e == errno.ENAMETOOLONG, "rename to %d bytes: ENAMETOOLONG (got %s)" % (LIMIT + 1, os.strerror(e) if e else "success"))
# renaming the top folder to a longer name would push descendants past LIMIT:
# either refused with ENAMETOOLONG and nothing changed, or fully done
def read_deep(topname):
    # walks down with fresh folder fds: nothing cached by an open fd
    f = os.open(mnt + topname, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(len(fds) - 1):
            name = [x for x in os.listdir(f)][0]
            g = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=f)
            os.close(f)
            f = g
        return read(last, dir_fd=f)
    finally:
        os.close(f)
e = err_of(os.rename, mnt + top, mnt + top + b"-longer")
if e == 0:
    ok(os.path.isdir(mnt + top + b"-longer") and not os.path.exists(mnt + top),
       "renaming the top folder (paths past %d) done completely" % LIMIT)
    e = err_of(read_deep, top + b"-longer")
    ok(e == 0 and read_deep(top + b"-longer") == b"deep",
       "after renaming the top folder the deep file (now past %d) reads (%s)"
       % (LIMIT, os.strerror(e) if e else "ok"))
    r = subprocess.run([os.environ["PATHFSCTL"], "-s", os.environ["STORE"], "fsck"],
                       capture_output=True, timeout=120)
    ok(r.returncode == 0, "fsck clean with paths past %d bytes: %r" % (LIMIT, r.stdout[-300:]))
    os.rename(mnt + top + b"-longer", mnt + top)
else:
    ok(e == errno.ENAMETOOLONG and os.path.isdir(mnt + top),
       "renaming the top folder past %d: refused, nothing moved (%s)" % (LIMIT, os.strerror(e)))
ok(read(last, dir_fd=fd) == b"deep", "the deep file still reads after that")
for f in fds:
    os.close(f)
shutil.rmtree(mnt + top)
ok(not os.path.exists(mnt + top), "the deep tree removes")

# ---- 1000 nested folders ---------------------------------------------------
os.mkdir(mnt + b"/nest")
fd = os.open(mnt + b"/nest", os.O_RDONLY | os.O_DIRECTORY)
for i in range(1000):
    os.mkdir(b"a", dir_fd=fd)
    nfd = os.open(b"a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd)
    fd = nfd
write(b"bottom", b"bottom of 1000", dir_fd=fd)
os.close(fd)
ok(read(mnt + b"/nest/" + b"a/" * 1000 + b"bottom") == b"bottom of 1000",
   "1000 nested folders: the bottom file reads by full path")
def count_tree(path):
    # iterative, with folder fds: os.walk recurses too deep for 1000 levels
    n = 0
    stack = [os.open(path, os.O_RDONLY | os.O_DIRECTORY)]
    while stack:
        fd = stack.pop()
        for e in map(os.fsencode, os.listdir(fd)):
            n += 1
            st = os.stat(e, dir_fd=fd, follow_symlinks=False)
            if (st.st_mode & 0o170000) == 0o040000:
                stack.append(os.open(e, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd))
        os.close(fd)
    return n
count = count_tree(mnt + b"/nest")
ok(count == 1001, "walking 1000 nested folders finds 1001 entries (%d)" % count)
ok(err_of(os.rename, mnt + b"/nest", mnt + b"/nest2") == 0, "rename the 1000-deep branch")
ok(read(mnt + b"/nest2/" + b"a/" * 1000 + b"bottom") == b"bottom of 1000",
   "the bottom file reads at its new path")
shutil.rmtree(mnt + b"/nest2")
ok(not os.path.exists(mnt + b"/nest2"), "the 1000-deep branch removes")

# ---- every byte ------------------------------------------------------------
d = mnt + b"/bytes"
os.mkdir(d)
names = []
for b in range(1, 256):
    if b == ord("/"):
        continue
    names.append(b"x" + bytes([b]) + b"y")
    if b != ord("."):
        names.append(bytes([b]))
allb = bytes(b for b in range(1, 256) if b != ord("/"))
names.append(allb)  # 254 bytes: every byte in one name
names += [b"...", b"..a", b".a.", b"a..", b". ", b".. ", b"--x", b"-.-"]
assert len(names) == len(set(names))
bad = []
for n in names:
    if err_of(write, os.path.join(d, n), n) != 0:
        bad.append(n)
ok(not bad, "create a file for every byte value (%d names), failed: %r" % (len(names), bad[:5]))
listed = os.listdir(d)
ok(sorted(listed) == sorted(names), "the folder lists exactly those names (%d listed)" % len(listed))
ok(len(listed) == len(set(listed)), "no name listed twice")
bad = [n for n in names if err_of(os.stat, os.path.join(d, n)) or read(os.path.join(d, n)) != n]
ok(not bad, "every name stats and reads back its own bytes, failed: %r" % bad[:5])
sub = os.path.join(d, b"sub\x01dir")
os.mkdir(sub)
bad = [n for n in names if err_of(os.rename, os.path.join(d, n), os.path.join(sub, n))]
ok(not bad, "every name renames into a folder, failed: %r" % bad[:5])
ok(sorted(os.listdir(sub)) == sorted(names), "the folder they moved to lists them all")
ok(err_of(os.rename, sub, os.path.join(d, b"sub-\xff")) == 0, "rename that folder")
sub = os.path.join(d, b"sub-\xff")
bad = [n for n in names if read(os.path.join(sub, n)) != n]
ok(not bad, "every file reads back after the folder rename, failed: %r" % bad[:5])
bad = [n for n in names if err_of(os.unlink, os.path.join(sub, n))]
ok(not bad and os.listdir(sub) == [], "every name removes, the folder is empty")
os.rmdir(sub)
for n in [b"...", b"..a", b".a.", b"a.."]:
    p = os.path.join(d, n)
    ok(err_of(os.mkdir, p) == 0 and os.path.isdir(p) and err_of(os.rmdir, p) == 0,
       "folder named %r: mkdir, stat, rmdir" % n)
ok(err_of(os.mkdir, os.path.join(d, b"a") + b"/../b") != 0 or os.path.isdir(os.path.join(d, b"b")),
   ".. in a path resolves (kernel)")

# ---- xattrs ----------------------------------------------------------------
f = mnt + b"/xf"
write(f, b"x")
n255 = b"user." + b"k" * 250
n256 = b"user." + b"k" * 251
e = err_of(os.setxattr, f, n255, b"v")
ok(e == 0, "xattr name of 255 bytes (%s)" % (os.strerror(e) if e else "ok"))
ok(e != 0 or os.getxattr(f, n255) == b"v", "the 255-byte xattr name reads back")
e = err_of(os.setxattr, f, n256, b"v")
ok(e == errno.ERANGE, "xattr name of 256 bytes: ERANGE (got %s)" % (os.strerror(e) if e else "success"))
v64 = bytes(range(256)) * 256
assert len(v64) == 65536
e = err_of(os.setxattr, f, b"user.big", v64)
ok(e == 0, "xattr value of 64 KiB (%s)" % (os.strerror(e) if e else "ok"))
ok(e != 0 or os.getxattr(f, b"user.big") == v64, "the 64 KiB value reads back")
e = err_of(os.setxattr, f, b"user.big2", v64 + b"!")
ok(e == errno.E2BIG, "xattr value of 64 KiB + 1: E2BIG (got %s)" % (os.strerror(e) if e else "success"))
ok(err_of(os.setxattr, f, b"user.empty", b"") == 0 and os.getxattr(f, b"user.empty") == b"",
   "empty xattr value")
ok(err_of(os.setxattr, f, b"user.\x01\xff odd", b"o") == 0, "xattr name with odd bytes")
lst = os.listxattr(f)
ok(set(x.encode("utf-8", "surrogateescape") for x in lst) >=
   {n255, b"user.big", b"user.empty", b"user.\x01\xff odd"},
   "listxattr lists them (%d)" % len(lst))
for n in [n255, b"user.big", b"user.empty", b"user.\x01\xff odd"]:
    err_of(os.removexattr, f, n)
ok(os.listxattr(f) == [], "all removed")
e = err_of(os.getxattr, f, b"user.big")
ok(e == errno.ENODATA, "a removed xattr is ENODATA")
sys.exit(1 if fails else 0)
PY
check "daemon alive" rel_alive
check "fsck clean" rel_fsck
rel_umount_fg
rel_finish
