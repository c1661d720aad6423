#!/bin/bash
# posix_handles.sh - file handles (name_to_handle_at / open_by_handle_at, what
# an NFS server exporting the mount uses): a handle of a file or folder at
# depth opens the same node after the kernel dropped its caches, after a
# remount, after a folder above it was renamed, and for a hard-linked file
# after the name the handle was taken by is gone; a handle of a removed node
# is ESTALE, also when another file now has its name. fsck stays clean.
# (Needs root: open_by_handle_at wants CAP_DAC_READ_SEARCH.)
. "$(dirname "$0")/lib.sh"
: "${FHANDLE:=$(dirname "$PATHFS")/../tests/fhandle}"
sanitizer_logs

# The kernel forgets the mount's dentries and inodes (and their pages):
# a handle then reaches the daemon. Only this mount is synced, and echo 2
# (slab caches) skips a file system it cannot lock, where a global sync or
# echo 1 or 3 would wait for every file system on the machine.
drop_caches() {
	sync -f "$MNT"
	echo 2 >/proc/sys/vm/drop_caches
}
# the daemon's LOOKUP count (a handle of a node the kernel forgot is looked up)
lookups() {
	"$PATHFSCTL" -s "$STORE" stats --json | python3 -c \
		'import json,sys; print(json.load(sys.stdin)["ops"].get("LOOKUP", {}).get("count", 0))'
}
# opens HANDLE on the mount and compares what it found with EXPECTED
opens_as() {
	local what=$1 h=$2 want=$3 got
	got=$("$FHANDLE" open "$MNT" "$h" 2>&1) || got="helper failed: $got"
	CHECKS=$((CHECKS + 1))
	if [ "$got" = "$want" ]; then
		echo "ok - $what"
	else
		echo "FAIL - $what: expected '$want', got '$got'" >&2
		FAILS=$((FAILS + 1))
	fi
}

pfs_mount
mkdir -p "$MNT/a/b/c d/e"
printf 'deep file' >"$MNT/a/b/c d/e/f.txt"
printf 'top' >"$MNT/top"
printf 'linked' >"$MNT/a/l1"
ln "$MNT/a/l1" "$MNT/a/b/l2"
printf 'doomed' >"$MNT/a/b/doomed"
mkdir "$MNT/a/gone-dir"
HF=$("$FHANDLE" save "$MNT/a/b/c d/e/f.txt")
HD=$("$FHANDLE" save "$MNT/a/b/c d")
HT=$("$FHANDLE" save "$MNT/top")
HL=$("$FHANDLE" save "$MNT/a/l1")
HX=$("$FHANDLE" save "$MNT/a/b/doomed")
HG=$("$FHANDLE" save "$MNT/a/gone-dir")
HR=$("$FHANDLE" save "$MNT")
check "handles were given" test -n "$HF" -a "${HF:0:1}" = 0

opens_as "file handle, cached" "$HF" "file deep file"
drop_caches
before=$(lookups)
opens_as "file handle at depth, after drop_caches" "$HF" "file deep file"
check "  the kernel had forgotten it: the daemon looked it up" \
	test "$(lookups)" -gt "$before"
opens_as "top-level file, after drop_caches" "$HT" "file top"
drop_caches
opens_as "folder handle at depth, after drop_caches (reconnected)" "$HD" \
	"dir $MNT/a/b/c d e"
opens_as "root handle" "$HR" "dir $MNT a top"
drop_caches
opens_as "hard-linked file, after drop_caches" "$HL" "file linked"

pfs_umount
pfs_mount
opens_as "file handle, after remount" "$HF" "file deep file"
opens_as "folder handle, after remount" "$HD" "dir $MNT/a/b/c d e"

# a folder above renamed (the journaled rewrite: 'b' holds a branch)
mv "$MNT/a/b" "$MNT/a/B2"
drop_caches
opens_as "file handle, after its grandparent's rename" "$HF" "file deep file"
opens_as "folder handle, after its parent's rename" "$HD" \
	"dir $MNT/a/B2/c d e"
pfs_umount
pfs_mount
opens_as "folder handle, rename then remount" "$HD" "dir $MNT/a/B2/c d e"
# the file moved into another folder (its own rename)
mv "$MNT/a/B2/c d/e/f.txt" "$MNT/moved.txt"
drop_caches
opens_as "file handle, after its own move" "$HF" "file deep file"

# hard link: the name the handle was taken by goes, the inode stays
rm "$MNT/a/l1"
drop_caches
opens_as "hard-linked file, its first name removed" "$HL" "file linked"

# removed nodes: ESTALE, never another node (a new file takes the name)
rm "$MNT/a/B2/doomed"
printf 'impostor' >"$MNT/a/B2/doomed"
rmdir "$MNT/a/gone-dir"
mkdir "$MNT/a/gone-dir"
drop_caches
opens_as "removed file: ESTALE (a new file has its name)" "$HX" "ESTALE"
opens_as "removed folder: ESTALE (a new folder has its name)" "$HG" "ESTALE"
rm "$MNT/a/B2/l2"
drop_caches
opens_as "hard-linked file, every name removed: ESTALE" "$HL" "ESTALE"
pfs_umount
pfs_mount
opens_as "removed file, after remount: ESTALE" "$HX" "ESTALE"
opens_as "moved file, after remount" "$HF" "file deep file"
rm -r "$MNT/a/B2"
drop_caches
opens_as "folder removed with rm -r: ESTALE" "$HD" "ESTALE"
opens_as "file still there, after rm -r elsewhere" "$HF" "file deep file"
pfs_umount

check "fsck clean" pfs_fsck
sanitizer_clean
finish
