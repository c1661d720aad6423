#!/usr/bin/env bash
# ctl_cmds.sh - pathfsctl's commands (issue 5) on a real store, mounted (the
# daemon runs them over its control socket) and unmounted (pathfsctl opens the
# store): drives, mkdrive, rmdrive, ls, stat, tree, du, fsck, recover, and
# rm -r / cp -r / mv whose effect the mount shows at once. du's numbers must
# equal what find/stat report through the mount.
source "$(dirname "$0")/lib.sh"

C() { "$PATHFSCTL" -s "$STORE" "$@"; }
# jget FILE KEY: a top-level key of the JSON object in FILE
jget() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# du_expect DIR: "bytes files dirs symlinks" as find sees DIR (itself
# included; each hard-linked inode's bytes once).
du_expect() {
	python3 - "$1" <<'PY'
import os, stat, sys
top = sys.argv[1]
seen, b, f, d, l = set(), 0, 0, 0, 0
for root, dirs, files in os.walk(top):
    d += 1
    for n in files + [x for x in dirs if os.path.islink(os.path.join(root, x))]:
        st = os.lstat(os.path.join(root, n))
        if stat.S_ISREG(st.st_mode):
            f += 1
            if st.st_ino not in seen:
                seen.add(st.st_ino)
                b += st.st_size
        elif stat.S_ISLNK(st.st_mode):
            l += 1
print(b, f, d, l)
PY
}
du_got() {
	C du --json "$1" >"$T/du.json" || return 1
	echo "$(jget "$T/du.json" bytes) $(jget "$T/du.json" files) $(jget "$T/du.json" dirs) $(jget "$T/du.json" symlinks)"
}

# ---- build a tree through the mount ------------------------------------
pfs_mount
python3 "$TREE_PY" gen "$MNT/data" 400 >/dev/null
mkdir "$MNT/empty" "$MNT/data-x"
printf 'hello\n' >"$MNT/hello"
ln "$MNT/hello" "$MNT/hello2"
ln "$MNT/data/x.y/f000" "$MNT/data/hard-twin"
EXP_DATA=$(du_expect "$MNT/data")
EXP_ROOT=$(du_expect "$MNT")

# ---- mounted: through the control socket -------------------------------
check "mounted: the control socket exists with mode 0600" \
	test "$(stat -c %a "$STORE/pathfs.sock")" = 600
check "mounted: drives lists main as mounted" \
	test "$(C drives)" = "main (mounted)"
check "mounted: du --json /data equals find through the mount ($EXP_DATA)" \
	test "$(du_got /data)" = "$EXP_DATA"
check "mounted: du --json / equals find through the mount ($EXP_ROOT)" \
	test "$(du_got /)" = "$EXP_ROOT"
check "mounted: du reports seconds" python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); assert d["seconds"] >= 0' "$T/du.json"

C ls --json /data >"$T/ls.json"
check "mounted: ls --json /data names equal the mount's listing" python3 -c '
import json, os, sys
names = sorted(e["name"] for e in json.load(open(sys.argv[1])))
assert names == sorted(os.listdir(sys.argv[2])), (names[:5], sorted(os.listdir(sys.argv[2]))[:5])' \
	"$T/ls.json" "$MNT/data"
check "mounted: ls --json attributes equal lstat through the mount" python3 -c '
import json, os, stat, sys
for e in json.load(open(sys.argv[1])):
    st = os.lstat(os.path.join(sys.argv[2], e["name"]))
    assert e["ino"] == st.st_ino, e
    assert int(e["mode"], 8) == stat.S_IMODE(st.st_mode), e
    assert e["nlink"] == st.st_nlink, e
    if e["type"] != "dir":
        assert e["size"] == st.st_size, e' "$T/ls.json" "$MNT/data"
check "mounted: ls of plain text shows a symlink target" \
	bash -c "'$PATHFSCTL' -s '$STORE' ls /data/x.y | grep -q -- '-> /etc/passwd'"

C stat --json /data/hard-twin >"$T/stat.json"
check "mounted: stat --json matches stat(1) through the mount" \
	test "$(jget "$T/stat.json" ino) $(jget "$T/stat.json" size) $(jget "$T/stat.json" nlink) $(jget "$T/stat.json" mode)" = \
	"$(stat -c '%i %s %h 0%a' "$MNT/data/hard-twin")"
check "mounted: stat of a hard link says so" test "$(jget "$T/stat.json" hardlinked)" = True

C tree /data >"$T/tree.txt"
check "mounted: tree's summary counts what find counts" \
	test "$(tail -n1 "$T/tree.txt")" = \
	"$(($(find "$MNT/data" -mindepth 1 -type d | wc -l))) directories, $(find "$MNT/data" -mindepth 1 ! -type d | wc -l) files"
check "mounted: tree draws one line per entry" \
	test "$(($(wc -l <"$T/tree.txt") - 3))" = "$(find "$MNT/data" -mindepth 1 | wc -l)"

check "mounted: mkdrive extra" C mkdrive extra
check "mounted: drives lists extra" bash -c "'$PATHFSCTL' -s '$STORE' drives | grep -qx extra"
RC=0; C rmdrive main 2>"$T/err" || RC=$?
check "mounted: rmdrive of the mounted drive is refused (exit 1)" test "$RC" = 1
check "mounted: ... saying it is mounted" grep -q "is mounted" "$T/err"
check "mounted: ... and the mount still works" test -s "$MNT/hello"
check "mounted: rmdrive extra" C rmdrive extra

check "mounted: fsck is clean (exit 0)" C fsck
check "mounted: recover finds nothing to do" \
	bash -c "'$PATHFSCTL' -s '$STORE' recover | grep -q 'records replayed now, 0 left'"

# Branch operations: the mount must show the change at once (caches
# invalidated), including entries the kernel has already looked up.
ls -la "$MNT/data/a b" >/dev/null
stat "$MNT/data/a b/f000" >/dev/null
manifest "$MNT/data" "$T/data.before" --no-dir-mtime
check "mounted: cp -r /data /copy" C cp -r /data /copy
check "mounted: the copy is visible at once" test -d "$MNT/copy/a b/sub"
manifest "$MNT/copy" "$T/copy.m" --no-dir-mtime
same_file "mounted: the copy equals the original" "$T/data.before" "$T/copy.m"
check "mounted: copies are new inodes" \
	test "$(stat -c %i "$MNT/copy/hard-twin")" != "$(stat -c %i "$MNT/data/hard-twin")"
check "mounted: rm -r '/data/a b'" C rm -r "/data/a b"
check "mounted: the removed branch is gone from the mount at once" \
	test ! -e "$MNT/data/a b/f000" -a ! -e "$MNT/data/a b"
check "mounted: ... and from its listing" bash -c "! ls '$MNT/data' | grep -qx 'a b'"
ls -la "$MNT/copy" >/dev/null
check "mounted: mv /copy /moved" C mv /copy /moved
check "mounted: the source is gone at once" test ! -e "$MNT/copy"
manifest "$MNT/moved" "$T/moved.m" --no-dir-mtime
same_file "mounted: the moved branch is intact" "$T/data.before" "$T/moved.m"
check "mounted: the hard link still counts two" test "$(stat -c %h "$MNT/hello")" = 2
check "mounted: fsck is clean after the branch operations" C fsck
EXP_MOVED=$(du_expect "$MNT/moved")
pfs_umount

# ---- unmounted: pathfsctl opens the store ------------------------------
check "unmounted: no control socket is left" test ! -e "$STORE/pathfs.sock"
check "unmounted: drives lists main" test "$(C drives)" = main
check "unmounted: du of /moved matches what the mount showed" \
	test "$(du_got /moved)" = "$EXP_MOVED"
check "unmounted: stat /hello" bash -c "'$PATHFSCTL' -s '$STORE' stat /hello | grep -q 'size: 6'"
check "unmounted: ls /" bash -c "'$PATHFSCTL' -s '$STORE' ls / | grep -q ' moved$'"
check "unmounted: tree --depth 1 /" bash -c "'$PATHFSCTL' -s '$STORE' tree --depth 1 / | grep -q 'moved'"
check "unmounted: mkdrive second" C mkdrive second
check "unmounted: cp -r to another drive" C cp -r /moved second:/m
check "unmounted: rm -r /moved/-dash" C rm -r /moved/-dash
check "unmounted: mv /moved /final" C mv /moved /final
check "unmounted: fsck --all is clean" C fsck --all
check "unmounted: recover" C recover
C fsck --all --json >"$T/fsck.json"
check "unmounted: fsck --json is valid JSON with counts 0" python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); assert len(d) == 2 and all(x["count"] == 0 for x in d), d' "$T/fsck.json"

pfs_mount
check "remounted: the unmounted rm -r shows" test ! -e "$MNT/final/-dash" -a -d "$MNT/final/x.y/sub"
check "remounted: the unmounted mv shows" test ! -e "$MNT/moved" -a -f "$MNT/final/hard-twin"
pfs_umount
pfs_mount -o drive=second
manifest "$MNT/m" "$T/second.m" --no-dir-mtime
same_file "drive second holds the clone made unmounted" "$T/data.before" "$T/second.m"
pfs_umount
check "rmdrive second (unmounted)" C rmdrive second
check "drives no longer lists second" test "$(C drives)" = main

finish
