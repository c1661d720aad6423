#!/usr/bin/env bash
# dynamodb_programs.sh - real programs on a drive in a DynamoDB table
# (tests/with_dynamodb.sh starts DynamoDB Local):
# - git clone of a local repository (three commits, a branch, a binary
#   file, a symlink) into the mount, git fsck --full there, the clone's
#   status clean and its files those of the repository's HEAD;
# - tar of a generated tree (odd names, xattrs, modes, times; 2 folders,
#   172 entries: tests/helpers/tree.py gen) into the mount and out again:
#   manifests identical, diff -r clean;
# - rsync -aHX of the tree into the mount: manifest identical (hard
#   links too); a second one transfers nothing (mtimes and sizes kept
#   exactly);
# - after a remount all three are still there, and fsck is clean.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

: "${PATHFS_TEST_DYNAMODB:?run through tests/with_dynamodb.sh}"
STORE="dynamodb://pg$$?endpoint=$PATHFS_TEST_DYNAMODB&lease-ttl=20"
export HOME=$T GIT_CONFIG_NOSYSTEM=1 \
	GIT_AUTHOR_NAME=pathfs GIT_AUTHOR_EMAIL=pathfs@example.org \
	GIT_COMMITTER_NAME=pathfs GIT_COMMITTER_EMAIL=pathfs@example.org

# ---- the sources, outside the mount ------------------------------------------
R=$T/repo
mkdir -p "$R/src" "$R/docs"
g() { git -C "$R" "$@"; }
g init -q -b main
for i in $(seq 1 30); do
	printf 'line %d of file %d\n' $(seq 1 $((i * 10))) >"$R/src/f$i.c"
done
head -c 150000 /dev/urandom >"$R/docs/blob.bin"
ln -s src/f1.c "$R/link"
g add . && g commit -q -m one
g checkout -q -b side && echo side >>"$R/src/f2.c" && g commit -qam two
g checkout -q main && rm "$R/src/f3.c" && echo new >"$R/src/new.c" &&
	g add -A && g commit -q -m three
SRC=$T/src
python3 "$TREE_PY" gen "$SRC" 170 >/dev/null
manifest "$SRC" "$T/m.src"

pfs_mount -o "log=$T/a.log"

# ---- git ----------------------------------------------------------------------
C=$MNT/clone
check "git clone into the mount" git clone -q "$R" "$C"
check "git fsck --full in the mount" git -C "$C" fsck --full --no-progress
check "the clone's status is clean" test -z "$(git -C "$C" status --porcelain)"
check "the clone has both branches' history" \
	test "$(git -C "$C" rev-list --all | wc -l)" = 3
check "its files are HEAD's" diff -r -x .git "$R" "$C"

# ---- tar in and out -----------------------------------------------------------
mkdir "$MNT/tar"
check "tar into the mount" bash -c \
	"tar -C '$T' --xattrs -cf - src | tar -C '$MNT/tar' --xattrs -xpf -"
check "tar out of the mount" bash -c \
	"mkdir '$T/tarout' && tar -C '$MNT/tar' --xattrs -cf - src | tar -C '$T/tarout' --xattrs -xpf -"
manifest "$MNT/tar/src" "$T/m.tarin"
same_file "tar in: manifest identical" "$T/m.src" "$T/m.tarin"
manifest "$T/tarout/src" "$T/m.tarout"
same_file "tar out: manifest identical" "$T/m.src" "$T/m.tarout"
check "tar out: diff -r clean" diff -r --no-dereference "$SRC" "$T/tarout/src"

# ---- rsync twice ----------------------------------------------------------------
check "rsync -a into the mount" rsync -aHX "$SRC/" "$MNT/rsync/"
manifest "$MNT/rsync" "$T/m.rsync"
same_file "rsync: manifest identical" "$T/m.src" "$T/m.rsync"
check "a second rsync -a" bash -c \
	"rsync -aHX --itemize-changes --stats '$SRC/' '$MNT/rsync/' >'$T/rsync2.out'"
check "... transfers nothing" \
	grep -q "Number of regular files transferred: 0" "$T/rsync2.out"
check "... and changes nothing" \
	test -z "$(grep -E '^[<>ch.*][fdLDS]' "$T/rsync2.out" | grep -v '^\.d\.\.\.\.\.\.\.\.\. \./$')"

# ---- after a remount --------------------------------------------------------------
pfs_umount
pfs_mount -o "log=$T/a.log"
check "after a remount: git fsck --full" git -C "$C" fsck --full --no-progress
check "after a remount: status clean" test -z "$(git -C "$C" status --porcelain)"
manifest "$MNT/rsync" "$T/m.again"
same_file "after a remount: the rsync'd tree" "$T/m.src" "$T/m.again"
manifest "$MNT/tar/src" "$T/m.again2"
same_file "after a remount: the tar'd tree" "$T/m.src" "$T/m.again2"
pfs_umount
check "fsck is clean" pfs_fsck

sanitizer_clean
finish
