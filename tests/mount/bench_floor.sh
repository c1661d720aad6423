#!/usr/bin/env bash
# bench_floor.sh - pathfs-floor, the floor daemon of `pathfs-bench mount`:
# it mounts, serves the bench's workloads at a small size with the right
# results (a created tree read back, tar x, cp -a and rsync -a of real
# folders identical to their sources, mv, churn, a sequential write read
# back, rm -rf leaving nothing), and the kernel sends it the very requests it
# sends pathfs for the same work (each workload's count per opcode, by the
# two daemons' own counters; see alike). It prints its counts at unmount; a
# missing mount point is a usage error.
. "$(dirname "$0")/lib.sh"

: "${PATHFS_FLOOR:=$(dirname "$PATHFS")/pathfs-floor}"
FMNT=$T/floor
SRC=$TESTS_DIR/helpers # a real folder for cp -a and rsync -a
mkdir -p "$FMNT"
tar cf "$T/src.tar" -C "$TESTS_DIR" mount helpers

"$PATHFS_FLOOR" -f -o stats="$T/floor.json" "$FMNT" >"$T/floor.out" \
	2>"$T/floor.err" &
FPID=$!
for i in $(seq 1 100); do mountpoint -q "$FMNT" && break; sleep 0.05; done
check "pathfs-floor mounts" mountpoint -q "$FMNT"
check "its mount is fuse.pathfs-floor with default_permissions" \
	awk -v m="$FMNT" '$2 == m && $3 == "fuse.pathfs-floor" &&
		$4 ~ /default_permissions/ {f = 1} END {exit !f}' /proc/mounts
pfs_mount

# snap_floor FILE, snap_pathfs FILE: the daemon's counts so far (JSON)
snap_floor() {
	rm -f "$T/floor.json"
	kill -USR1 "$FPID"
	for i in $(seq 1 200); do [ -s "$T/floor.json" ] && break; sleep 0.05; done
	mv "$T/floor.json" "$1"
}
snap_pathfs() { "$PATHFSCTL" -s "$STORE" stats --json >"$1"; }

# delta BEFORE AFTER: the requests between two snapshots, "OPCODE COUNT" a
# line; fails until every OPEN, CREATE and OPENDIR has had its RELEASE or
# RELEASEDIR (the kernel sends those after close(2) returns)
delta() {
	python3 -c 'import json, sys
a, b = (json.load(open(f))["ops"] for f in sys.argv[1:3])
d = {k: v["count"] - a.get(k, {}).get("count", 0) for k, v in b.items()}
d = {k: v for k, v in d.items() if v}
for k in sorted(d):
    print(k, d[k])
n = lambda k: d.get(k, 0)
sys.exit(n("RELEASE") != n("OPEN") + n("CREATE") or
         n("RELEASEDIR") != n("OPENDIR"))' "$1" "$2"
}

# requests_of DAEMON OUT COMMAND...: runs COMMAND on DAEMON's mount (floor
# or pathfs) and writes the requests it sent there to OUT
requests_of() {
	local who=$1 out=$2 dir i
	shift 2
	dir=$FMNT
	[ "$who" = pathfs ] && dir=$MNT
	"snap_$who" "$T/before.json"
	"$@" "$dir" >/dev/null
	for i in $(seq 1 200); do
		"snap_$who" "$T/after.json"
		delta "$T/before.json" "$T/after.json" >"$out" && return 0
		sleep 0.05
	done
	echo "$who: a RELEASE missing after 10 s" >&2
}

# make_tree DIR: 4 folders of 25 files of 0..2 KiB, written by the shell
make_tree() {
	local d f
	mkdir "$1"
	for d in 0 1 2 3; do
		mkdir "$1/d$d"
		for f in $(seq 0 24); do
			head -c $((d * 500 + f * 11)) /dev/zero >"$1/d$d/f$f"
		done
	done
}

# alike PATHFS_OPS FLOOR_OPS: the same opcodes, each as many times. The
# kernel asks again for what its caches dropped (an entry, attributes, a
# listing, a page): when it dropped inodes in one run and not in the other
# (the FORGETs differ: memory pressure, another user's drop_caches), the
# opcodes a cache answers are not compared, and a line says so. Says what
# differs.
alike() {
	python3 -c 'import sys
p, f = ({l.split()[0]: int(l.split()[1]) for l in open(x)} for x in sys.argv[1:3])
forgets = {"FORGET", "BATCH_FORGET"}
cached = {"LOOKUP", "GETATTR", "GETXATTR", "READDIRPLUS", "READ"}
dropped = any(p.get(k, 0) != f.get(k, 0) for k in forgets)
if dropped:
    print("  # caches dropped in one run: " + ", ".join(sorted(cached)) +
          " not compared")
skip = forgets | (cached if dropped else set())
bad = [k for k in sorted(set(p) | set(f))
       if k not in skip and p.get(k, 0) != f.get(k, 0)]
for k in bad:
    print(f"  {k}: pathfs {p.get(k, 0)}, floor {f.get(k, 0)}", file=sys.stderr)
sys.exit(1 if bad else 0)' "$1" "$2"
}

# same_requests NAME COMMAND...: runs COMMAND with its last argument the
# floor's mount, then pathfs's, and checks that both daemons got the same
# requests (alike).
same_requests() {
	local what=$1
	shift
	requests_of floor "$T/f.ops" "$@"
	requests_of pathfs "$T/p.ops" "$@"
	check "$what: the floor gets pathfs's requests" alike "$T/p.ops" \
		"$T/f.ops"
	check "$what: some requests counted" test -s "$T/f.ops"
}

create() { make_tree "$1/t"; }
find_all() { find "$1/t"; }
list_all() { ls -lR "$1/t"; }
# two opens of one folder, each listed while the other is open: only a
# folder's sole open lists from the kernel's cache (fs_opendir)
two_listers() {
	python3 -c 'import os, sys
fds = [os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY) for _ in "ab"]
for fd in fds:
    assert len(os.listdir(fd)) == 25
for fd in fds:
    os.close(fd)' "$1/t/d1"
}
tar_x() { mkdir "$1/x" && tar xf "$T/src.tar" -C "$1/x"; }
cp_a() { cp -a "$SRC" "$1/cp"; }
rsync_a() { rsync -a "$SRC/" "$1/rs"; }
mv_dir() { mv "$1/t/d0" "$1/t/d0.moved"; }
churn() {
	local i
	mkdir "$1/c"
	for i in $(seq 0 49); do : >"$1/c/f$i"; done
	for i in $(seq 0 49); do stat "$1/c/f$i" >/dev/null; done
	for i in $(seq 0 49); do rm "$1/c/f$i"; done
	rmdir "$1/c"
}
head -c $((3 << 20)) /dev/urandom >"$T/big"
write_fsync() { dd if="$T/big" of="$1/big" bs=1M conv=fsync 2>/dev/null; }
rm_all() { rm -rf "$1/t" "$1/x" "$1/cp" "$1/rs" "$1/big"; }

# both_ok WHAT COMMAND...: a check of the floor's mount, then of pathfs's
# (the last argument), so that both kernels' caches see the same reads
both_ok() {
	local what=$1 r
	shift
	for r in "$FMNT" "$MNT"; do
		check "$what (${r##*/})" "$@" "$r"
	done
}
entries() { test "$(find "$2/t" -mindepth 1 | wc -l)" = "$1"; }
tar_same() { diff -r --no-dereference "$TESTS_DIR/mount" "$1/x/mount" &&
	diff -r --no-dereference "$TESTS_DIR/helpers" "$1/x/helpers"; }
cp_same() { diff -r --no-dereference "$SRC" "$1/cp"; }
rsync_same() { diff -r --no-dereference "$SRC" "$1/rs"; }
moved() { test "$(find "$1/t/d0.moved" -type f | wc -l)" = 25 &&
	test ! -e "$1/t/d0"; }
read_back() { cmp "$T/big" "$1/big"; }
empty() { test -z "$(find "$1" -mindepth 1 -print -quit)"; }

same_requests "create a tree of 100 files" create
both_ok "the tree's 104 entries" entries 104
same_requests "find" find_all
same_requests "ls -lR" list_all
same_requests "two opens of a folder, each listed" two_listers
same_requests "tar x" tar_x
both_ok "tar x: the copy is the source" tar_same
same_requests "cp -a" cp_a
both_ok "cp -a: the copy is the source" cp_same
same_requests "rsync -a" rsync_a
both_ok "rsync -a: the copy is the source" rsync_same
same_requests "mv of a folder" mv_dir
both_ok "mv: the folder is at its new name only" moved
same_requests "create, stat, unlink 50 files" churn
same_requests "write 3 MiB + fsync" write_fsync
both_ok "the 3 MiB read back" read_back
same_requests "rm -rf" rm_all
both_ok "rm -rf: nothing left" empty

pfs_umount
pfs_unmount fusermount3 -u "$FMNT"
wait "$FPID"
check "pathfs-floor exits 0 at unmount" test $? = 0
check "and prints its counts on stdout" grep -Eq '^total +[0-9]+' \
	"$T/floor.out"
check "and in its stats file" python3 -c 'import json, sys
json.load(open(sys.argv[1]))["count"]' "$T/floor.json"
check "nothing on its stderr" test ! -s "$T/floor.err"
rc=0
"$PATHFS_FLOOR" >/dev/null 2>"$T/usage" || rc=$?
check "no mount point: exit 2" test "$rc" = 2
check "and a usage line" grep -q '^usage: pathfs-floor' "$T/usage"
finish
