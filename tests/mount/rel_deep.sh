#!/usr/bin/env bash
# rel_deep.sh - paths inside a drive as long as on ext4 (issue 10.2). Linux
# limits each system call's argument (PATH_MAX) and each name (NAME_MAX), not
# a tree's depth: with chdir and *at() calls a tree goes deeper than 4,095
# bytes from its root. pathfs keeps paths up to TREE_PATH_MAX (32,767 bytes).
#
# A chain of 40 folders of 255-byte names (a drive path of ~10 KiB) is made
# with relative mkdir + cd; at its bottom files, symlinks, FIFOs, hard links,
# xattrs, chmod/chown/truncate/rename/unlink work through the standard tools;
# everything survives a remount; a folder rename whose branch holds such paths
# moves it whole, also when the daemon is crashed by the fault hook after each
# kind of batch (PATHFS_CRASH_AFTER_BATCHES, see rename_crash.sh), with
# batches bounded by entries and by bytes (-o rename_bytes); pathfsctl
# du/ls/stat/tree/cp -r/mv/rm -r take ~10 KiB drive paths, mounted and not;
# fsck is clean. At the limit: a path of exactly 32,767 bytes is made, one
# byte more is ENAMETOOLONG to create, and a lookup of such a missing name is
# ENOENT (nothing can be there), never ENAMETOOLONG.
#
# The manifests are taken by deep.py (written below) with folder fds only:
# no path handed to the kernel is longer than one name.
source "$(dirname "$0")/rel_lib.sh"

DEPTH=40
LIMIT=32767 # TREE_PATH_MAX (store/include/tree.h)
J='DRIVE#main|JOURNAL#'
# level names: 255 bytes each, different per level ("001xxx...", "002xxx...")
PAD=$(printf 'x%.0s' $(seq 252))
L=()
for i in $(seq 1 $DEPTH); do
	L[i]=$(printf '%03d' "$i")$PAD
done
# the drive path of the bottom folder below /TOP (chain_n: of level K)
chain_n() {
	local p="/$1" i
	for i in $(seq 1 "$2"); do
		p+="/${L[i]}"
	done
	printf '%s' "$p"
}
chain() { chain_n "$1" $DEPTH; }
C() { timeout 300 "$PATHFSCTL" -s "$STORE" "$@"; }

cat >"$T/deep.py" <<'PY'
# deep.py manifest DIR: one line per entry below DIR (relative path, type,
# mode, owner, size, link count, sha256 or link target, xattrs), sorted;
# walked with folder fds so no path is longer than one name.
# deep.py limit DIR: builds folders of 255-byte names below DIR until the
# drive path is TREE_PATH_MAX long and checks the errors past it.
import errno, hashlib, os, stat, sys

def entries(dfd, rel, out):
    for name in sorted(os.fsencode(n) for n in os.listdir(dfd)):
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        r = rel + b"/" + name
        m = st.st_mode
        what, xa = "-", ""
        if stat.S_ISREG(m) or stat.S_ISDIR(m):
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW |
                         (os.O_DIRECTORY if stat.S_ISDIR(m) else 0), dir_fd=dfd)
            try:
                xa = ",".join("%s=%s" % (k, os.getxattr(fd, k).hex())
                              for k in sorted(os.listxattr(fd)))
                if stat.S_ISREG(m):
                    h = hashlib.sha256()
                    while True:
                        b = os.read(fd, 1 << 20)
                        if not b:
                            break
                        h.update(b)
                    what = h.hexdigest()
                else:
                    entries(fd, r, out)
            finally:
                os.close(fd)
        elif stat.S_ISLNK(m):
            what = os.readlink(name, dir_fd=dfd).hex()
        nl = st.st_nlink if not stat.S_ISDIR(m) else 0
        out.append("%s %o %d:%d %d %d %s %s" % (r.hex(), m, st.st_uid, st.st_gid,
                   st.st_size if not stat.S_ISDIR(m) else 0, nl, what, xa))

def manifest(top):
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    out = []
    entries(fd, b"", out)
    os.close(fd)
    out.sort()
    sys.stdout.write("".join(l + "\n" for l in out))

def err_of(f, *a, **k):
    try:
        r = f(*a, **k)
        if isinstance(r, int) and f is os.open:
            os.close(r)
        return 0
    except OSError as e:
        return e.errno

def limit(top, drive_top, lim):
    fails = 0
    def ok(c, what):
        nonlocal fails
        print(("ok - " if c else "FAIL - ") + what, file=sys.stdout if c else sys.stderr)
        fails += 0 if c else 1
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    plen = len(drive_top)
    n = 0
    while lim - plen > 500:
        name = b"%03d" % n + b"y" * 252
        os.mkdir(name, dir_fd=fd)
        nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
        plen += 256
        n += 1
    room = lim - plen - 2  # 243..498 bytes: two more names
    mid = b"m" * (room // 2)
    os.mkdir(mid, dir_fd=fd)
    nfd = os.open(mid, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd)
    fd = nfd
    plen += 1 + len(mid)
    last = b"L" * (lim - plen - 1)
    ok(plen + 1 + len(last) == lim and len(last) <= 255,
       "%d levels to the limit" % (n + 2))
    e = err_of(os.open, last, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)
    ok(e == 0, "a file whose drive path is %d bytes: made (%s)" % (lim, os.strerror(e)))
    ok(err_of(os.stat, last, dir_fd=fd) == 0, "  and found")
    e = err_of(os.stat, last + b"X", dir_fd=fd)
    ok(e == errno.ENOENT, "lookup of a missing name %d bytes deep: ENOENT (%s)" % (lim + 1, os.strerror(e)))
    e = err_of(os.stat, b"N" * 255, dir_fd=fd)
    ok(e == errno.ENOENT, "lookup of a missing 255-byte name past the limit: ENOENT (%s)" % os.strerror(e))
    e = err_of(os.open, last + b"X", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)
    ok(e == errno.ENAMETOOLONG, "create past the limit: ENAMETOOLONG (%s)" % os.strerror(e))
    e = err_of(os.mkdir, b"N" * 255, dir_fd=fd)
    ok(e == errno.ENAMETOOLONG, "mkdir past the limit: ENAMETOOLONG (%s)" % os.strerror(e))
    e = err_of(os.symlink, b"t", last + b"X", dir_fd=fd)
    ok(e == errno.ENAMETOOLONG, "symlink past the limit: ENAMETOOLONG (%s)" % os.strerror(e))
    e = err_of(os.rename, last, last + b"X", src_dir_fd=fd, dst_dir_fd=fd)
    ok(e == errno.ENAMETOOLONG, "rename past the limit: ENAMETOOLONG (%s)" % os.strerror(e))
    ok(err_of(os.stat, last, dir_fd=fd) == 0, "  the file is still there")
    os.close(fd)
    return fails

if sys.argv[1] == "manifest":
    manifest(sys.argv[2])
else:
    sys.exit(1 if limit(sys.argv[2], sys.argv[3].encode(), int(sys.argv[4])) else 0)
PY
deep_manifest() { python3 "$T/deep.py" manifest "$1" >"$2" || echo "manifest of $1 failed" >>"$2"; }

# at_bottom TOP SCRIPT: runs SCRIPT (bash) in the bottom folder below $MNT/TOP,
# reached by relative cd, one level at a time.
at_bottom() {
	(
		cd "$MNT/$1" || exit 1
		for i in $(seq 1 $DEPTH); do
			cd "${L[i]}" || exit 1
		done
		eval "$2"
	)
}

# ---- a chain of 40 levels made with relative mkdir + cd ------------------
rel_mount_fg
mkdir "$MNT/deep"
build() {
	(
		cd "$MNT/deep" || exit 1
		for i in $(seq 1 $DEPTH); do
			mkdir "${L[i]}" && cd "${L[i]}" || exit 1
			echo "level $i" >f
		done
	)
}
check "40 levels of 255-byte names with relative mkdir + cd" build
check "the bottom's drive path is over 10 KiB" test "$(chain deep | wc -c)" -gt 10240
check "the bottom is reached by relative cd" at_bottom deep 'test "$(cat f)" = "level 40"'

# ---- every kind of node and attribute at the bottom -----------------------
check "a file: written and read" at_bottom deep \
	'head -c 300000 /dev/urandom >data && cp data data.copy && cmp data data.copy'
check "a symlink: made and read" at_bottom deep \
	'ln -s "../${L[DEPTH]}/f" sl && test "$(readlink sl)" = "../${L[DEPTH]}/f" && test "$(cat sl)" = "level 40"'
check "a FIFO: made" at_bottom deep 'mkfifo fifo && test -p fifo'
check "a hard link: two names, one inode" at_bottom deep \
	'ln data hard && test "$(stat -c %h data)" = 2 && test "$(stat -c %i data)" = "$(stat -c %i hard)"'
check "xattrs: set and read" at_bottom deep \
	'setfattr -n user.deep -v "v$(printf "%.0s1" $(seq 200))" data && test "$(getfattr --only-values -n user.deep data)" = "v$(printf "%.0s1" $(seq 200))"'
check "chmod" at_bottom deep 'chmod 640 data && test "$(stat -c %a hard)" = 640'
check "chown" at_bottom deep 'chown 1234:5678 data && test "$(stat -c %u:%g hard)" = 1234:5678'
check "truncate down and up" at_bottom deep \
	'truncate -s 1000 data.copy && truncate -s 5000 data.copy && test "$(stat -c %s data.copy)" = 5000 && cmp -n 1000 data data.copy'
check "rename at the bottom" at_bottom deep \
	'mv data.copy moved && test ! -e data.copy && test "$(stat -c %s moved)" = 5000'
check "rename of a folder halfway down (to another 255-byte name)" at_bottom deep \
	'cd ../../../.. && mv "${L[DEPTH - 3]}" "${L[DEPTH - 3]/x/z}" && mv "${L[DEPTH - 3]/x/z}" "${L[DEPTH - 3]}"'
check "unlink" at_bottom deep 'mkfifo gone && unlink gone && test ! -e gone'
check "mkdir and rmdir one level deeper" at_bottom deep \
	'mkdir "${L[1]}" && echo x >"${L[1]}/f" && rm "${L[1]}/f" && rmdir "${L[1]}"'
check "a listing at the bottom" at_bottom deep \
	'test "$(ls | tr "\n" " ")" = "data f fifo hard moved sl "'
check "the daemon is up" rel_alive

# ---- remount: all of it is durable ---------------------------------------
deep_manifest "$MNT/deep" "$T/m.ref"
check "the manifest lists the whole chain" test "$(wc -l <"$T/m.ref")" = $((2 * DEPTH + 5))
rel_umount_fg
rel_mount_fg
deep_manifest "$MNT/deep" "$T/m.now"
same_file "after a remount: the same branch" "$T/m.ref" "$T/m.now"

# ---- a folder rename that moves ~10 KiB paths ----------------------------
check "mv of the top folder to a longer name" mv "$MNT/deep" "$MNT/deep-renamed-longer"
deep_manifest "$MNT/deep-renamed-longer" "$T/m.now"
same_file "  the branch moved whole" "$T/m.ref" "$T/m.now"
check "  nothing at the old name" test ! -e "$MNT/deep"
check "mv back" mv "$MNT/deep-renamed-longer" "$MNT/deep"

# ---- pathfsctl with ~10 KiB drive paths, mounted -------------------------
ctl_ls() { [ "$(C ls "$(chain deep)" | grep -c " sl -> ")" = 1 ]; }
ctl_stat() { C stat "$(chain deep)/hard" | grep -q 300000; }
# du: the 40 f, data and hard (one inode), moved; the chain and /deep itself
ctl_du() {
	C du --json /deep >"$T/du.json" || return 1
	python3 - "$T/du.json" $DEPTH <<'PY'
import json, sys
d, n = json.load(open(sys.argv[1])), int(sys.argv[2])
want = {"files": n + 3, "dirs": n + 1, "symlinks": 1,
        "bytes": sum(len("level %d\n" % i) for i in range(1, n + 1)) + 300000 + 5000}
got = {k: d[k] for k in want}
print("du:", got) if got == want else print("du: got", got, "want", want, file=sys.stderr)
sys.exit(got != want)
PY
}
ctl_tree() {
	C tree /deep >"$T/tree.out" && grep -q "${L[DEPTH]}" "$T/tree.out" &&
		grep -q "^$DEPTH directories, $((DEPTH + 5)) files" "$T/tree.out"
}
check "pathfsctl ls of the bottom" ctl_ls
check "pathfsctl stat of a file at the bottom" ctl_stat
check "pathfsctl du of the branch" ctl_du
check "pathfsctl tree of the branch" ctl_tree
check "pathfsctl cp -r of the branch" C cp -r /deep /deep-copy
deep_manifest "$MNT/deep-copy" "$T/m.copy"
# a clone has new inodes: the same manifest but for the owner of nothing
same_file "  the clone shows in the mount, identical" "$T/m.ref" "$T/m.copy"
check "pathfsctl mv of the clone" C mv /deep-copy /deep-copy-moved-further
deep_manifest "$MNT/deep-copy-moved-further" "$T/m.copy"
same_file "  the moved clone shows in the mount, identical" "$T/m.ref" "$T/m.copy"
check "pathfsctl cp -r of the bottom folder alone (~10 KiB source and target)" \
	C cp -r "$(chain deep)" "$(chain deep-copy-moved-further)/again"
check "  it shows in the mount" at_bottom deep-copy-moved-further \
	'cmp again/data data'
# in_slices CMD -r ARGS...: pathfsctl CMD -r --max-items 5 ARGS, again with
# the token each run prints (exit 3: work left) until it is done
in_slices() {
	local cmd=$1 r=$2 tok="" rc out runs=0 longest=0
	shift 2
	while :; do
		rc=0
		out=$(C "$cmd" "$r" --max-items 5 ${tok:+--resume "$tok"} "$@") || rc=$?
		runs=$((runs + 1))
		[ "$rc" = 0 ] && break
		[ "$rc" = 3 ] || return 1
		tok=$(printf '%s\n' "$out" | sed -n 's/^resume: //p' | tail -n 1)
		[ -n "$tok" ] && [ "$runs" -lt 100 ] || return 1
		[ "${#tok}" -gt "$longest" ] && longest=${#tok}
	done
	echo "# $cmd $r in $runs runs, the longest token $longest bytes"
	[ "$runs" -gt 5 ] && [ "$longest" -gt 10000 ]
}
# manifest_at K NAME: deep.py's manifest of NAME in the folder of level K
manifest_at() {
	(
		cd "$MNT/deep" || exit 1
		for i in $(seq 1 "$1"); do
			cd "${L[i]}" || exit 1
		done
		python3 "$T/deep.py" manifest "$2"
	)
}
check "pathfsctl cp -r in slices (tokens of two ~5 KiB paths)" \
	in_slices cp -r "$(chain_n deep 20)" "$(chain_n deep 19)/slices"
manifest_at 20 . >"$T/m.l20"
manifest_at 19 slices >"$T/m.slices"
same_file "  the clone made in slices is identical" "$T/m.l20" "$T/m.slices"
check "pathfsctl rm -r in slices (tokens of ~10 KiB paths)" \
	in_slices rm -r "$(chain_n deep 19)/slices"
slices_gone() {
	(
		cd "$MNT/deep" || exit 1
		for i in $(seq 1 19); do
			cd "${L[i]}" || exit 1
		done
		test ! -e slices
	)
}
check "  gone from the mount" slices_gone
check "  gone from the store" test "$(C ls "$(chain_n deep 19)" | grep -c slices)" = 0
check "pathfsctl rm -r of the clone" C rm -r /deep-copy-moved-further
check "  gone from the mount" test ! -e "$MNT/deep-copy-moved-further"
check "fsck clean (mounted)" rel_fsck
check "the daemon is up" rel_alive

# ---- the limit itself ------------------------------------------------------
mkdir "$MNT/lim"
check "paths up to $LIMIT bytes, and past it" python3 "$T/deep.py" limit "$MNT/lim" /lim $LIMIT
rel_umount_fg

# ---- pathfsctl unmounted ---------------------------------------------------
cp_mv_rm() { C cp -r /deep /d2 && C mv /d2 /d3 && C rm -r /d3; }
check "pathfsctl ls of the bottom (unmounted)" ctl_ls
check "pathfsctl du of the branch (unmounted)" ctl_du
check "pathfsctl cp -r + mv + rm -r (unmounted)" cp_mv_rm
check "pathfsctl rm -r of the limit tree (unmounted)" C rm -r /lim
check "fsck clean (unmounted)" rel_fsck

# ---- folder renames of the deep branch crashed after each kind of batch ----
# crash_round N RECORD WHAT [pathfs options]: mv of $cur to $other in a daemon
# that the hook kills after batch N; RECORD: 1 if the journal record must
# still be there; after a remount the whole branch is at $other.
crash_round() {
	local N=$1 record=$2 what=$3 pid rc=0 t
	shift 3
	PATHFS_CRASH_AFTER_BATCHES=$N pfs_mount "$@"
	pid=$(pfs_pid)
	timeout 120 mv "$MNT/$cur" "$MNT/$other" 2>/dev/null || rc=$?
	pfs_wait_dead "$pid" "$what"
	check "$what: the mv did not report success" test "$rc" -ne 0
	pfs_reap
	check "$what: journal records left: $record" test "$(kv_count "$J")" = "$record"
	pfs_mount
	check "$what: nothing left at the source" test ! -e "$MNT/$cur"
	deep_manifest "$MNT/$other" "$T/m.now"
	same_file "$what: the whole branch at the destination" "$T/m.ref" "$T/m.now"
	pfs_umount
	check "$what: no journal record left" test "$(kv_count "$J")" = 0
	check "$what: fsck clean" pfs_fsck
	t=$cur
	cur=$other
	other=$t
}
BATCH=8
n=$(kv_count 'DRIVE#main|PATH#/deep/')
k=$(((n + BATCH - 1) / BATCH))
echo "# $n keys below /deep: $k copy batches of $BATCH"
cur=deep
other=deep-other-name
for N in 0 1 $((k / 2)) "$k" $((k + 1)); do
	crash_round "$N" $((N <= k ? 1 : 0)) "crash after batch $N of $((k + 1))" \
		-o rename_batch=$BATCH
done
# by bytes: the entry bound alone would copy the branch in one batch, 16 KiB
# of its ~5 KiB keys (~420 KiB in all) make ~25
for N in 8 20; do
	crash_round "$N" 1 "batches of 16 KiB, crash after batch $N" \
		-o rename_batch=1000 -o rename_bytes=16384
done

rel_finish
