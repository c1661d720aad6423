#!/usr/bin/env bash
# etcd_netns.sh - writers of one etcd drive on separate machines (issue 24):
# machines A and B are network namespaces (tests/netns.sh), each joined to
# the cluster's namespace (with_etcd.sh --netns) by a veth pair of its own,
# each running one daemon that mounts the drive with -o shared (on $MNT and
# $T/b: the mountpoints are in this test's mount namespace, so the test
# drives both). Then:
#  - each daemon is in its own network namespace, none in this one, which
#    cannot reach the cluster; each namespace's pathfsctl socket is its own
#    daemon's, and pathfsctl on either machine works through it;
#  - the races of lib.sh's shared_races between A and B;
#  - random operations (tests/helpers/rel_stress, seeded) on both mounts at
#    once: two processes in A's folder st, two in B's folder sb (each in a
#    subtree of its own, every result predicted by its model, and in the
#    folder's shared/ folder among the others), and two more from B in
#    st/shared, racing A's there (ESTALE let pass there, and counted:
#    fs/watch.c's limit); then fsck clean, both mounts listing the
#    same tree (find with types, sizes, modes and link counts), and each
#    machine reading the other's subtrees as their models say;
#  - git clone of a local repository on A, then on B: git fsck --full,
#    git status clean, git log, and a C program built from it that runs;
#  - a network cut: B holds a file open and an unlinked file open, its link
#    goes down (ip link set down), and B writes into the open file; once its
#    lease expired (lease-ttl=3) A writes the same file and it reads whole,
#    A frees B's orphan (its reclaim of dead writers' orphans runs every
#    5 s), and after B's link comes back up, B's writes fail (EIO/EROFS:
#    fenced, its writer key is gone) and A's bytes stay, also for a new
#    mount on B's machine; fsck clean.
# Where a check waits for the other machine's watch, it gets 10 s after a
# burst (etcd_shared's races: the backlog) and 1 s after a single change.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

: "${PATHFS_TEST_ETCD:?run through tests/with_etcd.sh --netns}"
: "${PATHFS_TEST_NETNS:?run through tests/with_etcd.sh --netns}"
NETNS=$TESTS_DIR/netns.sh
TTL=3
STORE="etcd://$PATHFS_TEST_ETCD/nn$$?lease-ttl=$TTL"
A=$MNT
B=$T/b
mkdir -p "$B" "$T/bin"

# on N CMD...: CMD on machine N (1: A, 2: B)
on() {
	local n=$1
	shift
	"$NETNS" exec "$PATHFS_TEST_NETNS" "$n" "$@"
}
# on_script FILE N PROGRAM: FILE runs PROGRAM on machine N
on_script() {
	printf '#!/bin/sh\nexec "%s" exec "%s" %s "%s" "$@"\n' "$NETNS" \
		"$PATHFS_TEST_NETNS" "$2" "$3" >"$1"
	chmod +x "$1"
}
# pathfsctl on machine N ($T/bin/ctlN); what pfs_fsck and kv_count run: A's
on_script "$T/bin/ctl1" 1 "$PATHFSCTL"
on_script "$T/bin/ctl2" 2 "$PATHFSCTL"
on_script "$T/bin/kvkeys1" 1 "$KVKEYS"
PATHFSCTL=$T/bin/ctl1
KVKEYS=$T/bin/kvkeys1
# mount_on N DIR: machine N's daemon mounts the drive -o shared on DIR
mount_on() {
	on "$1" "$PATHFS" -o shared -o "log=$T/m$1.log" "$STORE" "$2"
	seen 10000 "mount on machine $1" mountpoint -q "$2"
}
# tree_stat MNT: every path below MNT with its type, size, mode and links
tree_stat() { (cd "$1" && find . -printf '%P %y %s %m %n\n' | LC_ALL=C sort); }
same_stat() { [ "$(tree_stat "$A")" = "$(tree_stat "$B")" ]; }

# ---- two machines ------------------------------------------------------------
"$NETNS" machine "$PATHFS_TEST_NETNS" 1 >/dev/null
"$NETNS" machine "$PATHFS_TEST_NETNS" 2 >/dev/null
check "A mounts -o shared from its machine" mount_on 1 "$A"
check "B mounts -o shared from its machine" mount_on 2 "$B"
pa=$(pgrep -f "pathfs .*$A" | head -n1 || true)
pb=$(pgrep -f "pathfs .*$B" | head -n1 || true)
netof() { readlink "/proc/$1/ns/net" 2>/dev/null; }
check "two daemons, each in its machine's network namespace" bash -c "
	[ -n '$pa' ] && [ -n '$pb' ] && [ '$(netof "$pa")' != '$(netof "$pb")' ] &&
	[ '$(netof "$pa")' != '$(netof $$)' ] && [ '$(netof "$pb")' != '$(netof $$)' ]"
check "this namespace cannot reach the cluster" bash -c "! ETCDCTL_API=3 timeout 10 \
	etcdctl --dial-timeout=2s --command-timeout=3s --endpoints '$PATHFS_TEST_ETCD' \
	get x >/dev/null 2>&1"
check "... machine A can" on 1 env ETCDCTL_API=3 timeout 10 etcdctl \
	--endpoints "$PATHFS_TEST_ETCD" get x
# sockets N: the listening abstract unix sockets (@...) of pathfs in machine N
sockets() { on "$1" ss -xlpH | awk '/pathfs/ && $5 ~ /^@/ {sub(/@+$/, "", $5); print $5, $NF}'; }
sockets 1 >"$T/sockets1"
sockets 2 >"$T/sockets2"
check "A's namespace: one pathfsctl socket, A's daemon's ($(cat "$T/sockets1"))" \
	bash -c "[ \$(wc -l <'$T/sockets1') = 1 ] && grep -q 'pid=$pa,' '$T/sockets1'"
check "B's namespace: one pathfsctl socket, B's daemon's ($(cat "$T/sockets2"))" \
	bash -c "[ \$(wc -l <'$T/sockets2') = 1 ] && grep -q 'pid=$pb,' '$T/sockets2'"
check "neither daemon found another's socket" \
	bash -c "! grep -q 'serves pathfsctl' '$T/m1.log' '$T/m2.log'"
echo from-b >"$B/fromb"
check "B's file, read on A" seen 1000 "create on B" is "cat '$A/fromb' 2>/dev/null" from-b
for n in 1 2; do
	check "pathfsctl on machine $n through its daemon: ls" \
		bash -c "'$T/bin/ctl$n' -s '$STORE' ls / | grep -qw fromb"
done
rm "$A/fromb"

# ---- races ---------------------------------------------------------------------
mkdir "$A/r"
check "A's folder on B" seen 1000 "mkdir on A" test -d "$B/r"
shared_races "$A/r" "$B/r"
check "fsck through A's daemon is clean after the races" pfs_fsck
rm -rf "$A/r"

# ---- random operations on both machines ----------------------------------------
SEED=${ETCD_NETNS_SEED:-$RANDOM}
SECS=${ETCD_NETNS_STRESS_SECONDS:-15}
STRESS=$BUILD_DIR/rel_stress
mkdir "$A/st" "$B/sb" "$T/man-a" "$T/man-b"
check "each machine's stress folder on the other" \
	seen 1000 "stress folders" bash -c "[ -d '$B/st' ] && [ -d '$A/sb' ]"
stress() { # WHAT ARGS...: rel_stress ARGS..., its output in $T/WHAT.out
	local what=$1
	shift
	timeout 300 "$STRESS" --shared-mount -t "$SECS" "$@" >"$T/$what.out" 2>&1
}
stress a -n 2 -S "$SEED" -m "$T/man-a" "$A/st" &
sa=$!
stress b -n 2 -S $((SEED + 1)) -m "$T/man-b" "$B/sb" &
sb=$!
stress ab --shared-only -n 2 -S $((SEED + 2)) "$B/st" &
sab=$!
for w in a:$sa b:$sb ab:$sab; do
	rc=0
	wait "${w#*:}" || rc=$?
	check "stress ${w%%:*} (seed $SEED, $SECS s): every call as predicted ($(tail -n1 "$T/${w%%:*}.out"))" \
		[ "$rc" = 0 ]
	[ "$rc" = 0 ] || tail -n 20 "$T/${w%%:*}.out" >&2
done
# a known limit (rel_stress --shared-mount lets it pass, in the shared
# folders only): a call through a folder the other machine changed in the
# same moment can answer ESTALE (fs/watch.c)
echo "# ESTALE answered to racing calls in the shared folders: $(cat "$T"/a.out \
	"$T"/b.out "$T"/ab.out | sed -n 's/.*(\([0-9]*\) ESTALE).*/\1/p' |
	awk '{s += $1} END {print s + 0}')"
check "fsck through A's daemon is clean after the stress" pfs_fsck
check "both mounts list the same tree (types, sizes, modes, links)" \
	seen 10000 "stress trees" same_stat
[ "$(tree_stat "$A")" = "$(tree_stat "$B")" ] ||
	diff <(tree_stat "$A") <(tree_stat "$B") | head -n 20 >&2
for i in 0 1; do
	check "B reads A's subtree w$i as its model says" \
		"$STRESS" check "$B/st/w$i" "$T/man-a/w$i.txt"
	check "A reads B's subtree w$i as its model says" \
		"$STRESS" check "$A/sb/w$i" "$T/man-b/w$i.txt"
done
rm -rf "$A/st" "$A/sb"

# ---- git clone on A, git fsck and a build on B -----------------------------------
src=$T/src
mkdir "$src"
git -C "$src" init -q
cat >"$src/hello.c" <<'EOF'
#include <stdio.h>
int main(void) { puts("hello from the other machine"); return 0; }
EOF
echo hello >"$src/.gitignore"
for i in $(seq 1 20); do
	mkdir -p "$src/d$((i % 4))"
	head -c $((i * 3000)) /dev/urandom | base64 >"$src/d$((i % 4))/f$i"
	git -C "$src" add -A
	git -C "$src" -c user.name=t -c user.email=t@t commit -qm "commit $i"
done
rc=0
git clone -q --no-local "$src" "$A/g" 2>"$T/clone.err" || rc=$?
check "git clone on A ($(head -c 300 "$T/clone.err"))" [ "$rc" = 0 ]
check "the clone on B" seen 10000 "clone on B" \
	is "git -C '$B/g' rev-parse HEAD" "$(git -C "$src" rev-parse HEAD)"
check "git fsck --full on B" git -C "$B/g" fsck --full --no-progress
check "git status on B: clean" is "git -C '$B/g' status --porcelain" ""
check "git log on B: 20 commits" is "git -C '$B/g' log --oneline | wc -l" 20
check "a build on B runs" bash -c "cc -o '$B/g/hello' '$B/g/hello.c' &&
	[ \"\$('$B/g/hello')\" = 'hello from the other machine' ]"
check "... and git status on A sees nothing new" \
	seen 1000 "build on B" is "git -C '$A/g' status --porcelain" ""
git -C "$A/g" status --porcelain 2>&1 | head -n 20 | sed 's/^/# git status on A: /'
rm -rf "$A/g"

# ---- B's network cut ---------------------------------------------------------------
mkdir "$A/cut"
printf 'A-old-%.0s' $(seq 1 1000) >"$A/cut/f"
check "A's file on B" seen 1000 "file on B" \
	is "head -c 6 '$B/cut/f' 2>/dev/null" A-old-
# B's process: holds cut/f open for writing and an unlinked file open;
# writes into cut/f when told (a line on its stdin, after the cut), and
# again when told (after the link is back), closing it then; prints each
# result (ok or the errno's name); its first line names the unlinked file's
# inode
cat >"$T/hold.py" <<'EOF'
import os, sys
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from race import res
fd = os.open(d + "/f", os.O_WRONLY)
o = os.open(d + "/orphan", os.O_CREAT | os.O_RDWR, 0o644)
os.write(o, b"x" * 100000)
os.unlink(d + "/orphan")
print("held", os.fstat(o).st_ino, flush=True)
sys.stdin.readline()
print("cut-write", res(lambda: os.pwrite(fd, b"B-late" * 100, 0)),
      res(lambda: os.fsync(fd)), flush=True)
sys.stdin.readline()
print("late-write", res(lambda: os.pwrite(fd, b"B-late" * 100, 0)),
      res(lambda: os.fsync(fd)), res(lambda: os.close(fd)), flush=True)
print("new-file", res(lambda: os.close(os.open(d + "/new", os.O_CREAT | os.O_WRONLY))),
      flush=True)
EOF
mkfifo "$T/bgo"
python3 -u "$T/hold.py" "$B/cut" "$TESTS_DIR/helpers" <"$T/bgo" >"$T/b.out" 2>&1 &
bpy=$!
exec 7>"$T/bgo"
check "B holds the file and an unlinked one open" seen 10000 "B's holds" grep -q held "$T/b.out"
# B's orphan, by its inode: other orphans may come and go meanwhile (a file
# unlinked before the kernel's asynchronous release of it reached A's daemon)
orphan_key=$(printf 'DRIVE#main|ORPHAN#%016x' "$(awk '/^held/ { print $2 }' "$T/b.out")")
orphans() { kv_count "$orphan_key"; }
check "B's orphan in the store" seen 5000 "B's orphan" is orphans 1
"$NETNS" cut "$PATHFS_TEST_NETNS" 2
cut_at=$(date +%s%N)
echo >&7 # B writes while cut off; its fsync waits for a cluster it cannot reach
sleep $((TTL + 2)) # B's lease expires
printf 'A-new-%.0s' $(seq 1 1000) >"$A/cut/f"
printf 'A-new-%.0s' $(seq 1 1000) >"$T/a-new"
check "A writes B's open file once B's lease expired" cmp "$T/a-new" "$A/cut/f"
echo later >"$A/cut/later"
check "A keeps working: a new file" is "cat '$A/cut/later'" later
check "A frees B's orphan (B cut off)" seen 15000 "orphan freed" is orphans 0
"$NETNS" mend "$PATHFS_TEST_NETNS" 2
echo "# B's link down for $((($(date +%s%N) - cut_at) / 1000000)) ms"
seen 30000 "B's write while cut off" grep -q cut-write "$T/b.out" || true
echo >&7
exec 7>&-
rc=0
timeout 60 tail --pid="$bpy" -f /dev/null || rc=$?
check "B's process ended ($(paste -sd ' ' "$T/b.out"))" [ "$rc" = 0 ]
check "B's write while cut off fails (EIO/EROFS), by its fsync at the latest" \
	grep -Eq '^cut-write .*\<(EIO|EROFS)\>' "$T/b.out"
check "B's writes after its link came back fail (EIO/EROFS)" \
	grep -Eq '^late-write .*\<(EIO|EROFS)\>' "$T/b.out"
check "B creates nothing any more (EIO/EROFS)" \
	grep -Eq '^new-file (EIO|EROFS)$' "$T/b.out"
sleep 2
check "A's bytes stay: on A" cmp "$T/a-new" "$A/cut/f"
check "B's new file is nowhere" bash -c "[ ! -e '$A/cut/new' ]"
check "B's log says it is fenced" \
	grep -q "no longer its writer" "$T/m2.log"
check "fsck through A's daemon is clean at the end" pfs_fsck
MNT=$B pfs_umount
pfs_umount
check "fsck of the unmounted drive is clean" pfs_fsck
check "B's machine mounts again" mount_on 2 "$B"
check "... and reads A's bytes" cmp "$T/a-new" "$B/cut/f"
MNT=$B pfs_umount
sanitizer_clean
finish
