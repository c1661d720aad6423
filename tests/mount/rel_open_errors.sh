#!/usr/bin/env bash
# rel_open_errors.sh - opening a store that cannot be served: one held by
# another daemon, a directory that is not a pathfs store, a store whose
# format version is newer than the program (marker and META planted, META
# by tests/helpers/rel_plant.c), a store whose parent is missing. pathfs and
# pathfsctl must print one clear line, exit non-zero (pathfsctl: 1), mount
# nothing, and write nothing (the directory's listing and checksums are
# unchanged). The one suite for "not a pathfs store". A store on a full file
# system too: opening it for writing is refused in one line (RocksDB 7.8
# aborted both programs there), the commands that only read open it
# read-only and work, a -o ro mount works, and an open with a few MiB free
# either works or is refused, never aborts. A store whose CURRENT (or its
# MANIFEST) is gone is named damaged, naming the file; one on a read-only
# file system mounts -o ro and pathfsctl's read commands open it; another
# user's pathfsctl is told permission denied.
source "$(dirname "$0")/rel_lib.sh"

MNT2=$T/mnt2
mkdir "$MNT2"

# refused DESC PATTERN DIR CMD...: CMD fails, prints one line on stderr that
# matches PATTERN (grep -Ei), mounts nothing on MNT2 and leaves DIR as it was.
refused() {
	local what=$1 pat=$2 dir=$3 rc=0 before after
	shift 3
	before=$(rel_tree_sum "$dir" 2>/dev/null || echo missing)
	timeout 60 "$@" >"$T/out" 2>"$T/err" </dev/null || rc=$?
	LAST_RC=$rc
	after=$(rel_tree_sum "$dir" 2>/dev/null || echo missing)
	check "$what: non-zero exit ($rc)" [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
	check "$what: one line on stderr: $(head -n 1 "$T/err")" \
		[ "$(grep -c . "$T/err")" -eq 1 ]
	[ "$(grep -c . "$T/err")" -eq 1 ] || cat "$T/err" >&2
	check "$what: the line says why" grep -Eqi "$pat" "$T/err"
	check "$what: nothing mounted" bash -c "! mountpoint -q '$MNT2'"
	if [ "$before" = "$after" ]; then
		check "$what: nothing written in $dir" true
	else
		check "$what: nothing written in $dir" false
		diff <(echo "$before") <(echo "$after") >&2 || true
	fi
	if mountpoint -q "$MNT2"; then fusermount3 -u -z "$MNT2" || true; fi
}

# 1. held by another daemon
rel_mount_fg
echo data >"$MNT/f"
# (a second mount of the served drive is another mount of the daemon's:
# mount_twice.sh; another drive is refused)
refused "store held by a daemon (pathfs)" "lock|busy|in use|another" \
	"$STORE" "$PATHFS" -o drive=other "$STORE" "$MNT2"
refused "store held by a daemon (pathfs -f)" "lock|busy|in use|another" \
	"$STORE" "$PATHFS" -f -o drive=other "$STORE" "$MNT2"
check "the first daemon still serves" bash -c "[ \"\$(cat '$MNT/f')\" = data ]"
rel_umount_fg

# 2. not a pathfs store
J=$T/junk
mkdir -p "$J/sub"
head -c 5000 /dev/urandom >"$J/a.bin"
echo "notes" >"$J/sub/b.txt"
refused "not a pathfs store (pathfs)" "not a pathfs store" \
	"$J" "$PATHFS" "$J" "$MNT2"
refused "not a pathfs store (pathfs -f)" "not a pathfs store" \
	"$J" "$PATHFS" -f "$J" "$MNT2"
refused "not a pathfs store (pathfsctl fsck)" "not a pathfs store" \
	"$J" "$PATHFSCTL" -s "$J" fsck
check "... exit 1" [ "$LAST_RC" = 1 ]
refused "not a pathfs store (pathfsctl drives)" "not a pathfs store" \
	"$J" "$PATHFSCTL" -s "$J" drives
check "... exit 1" [ "$LAST_RC" = 1 ]

# 3. a format version newer than the program, as a newer pathfs would leave
# it: the store's format in its PATHFS marker (checked before RocksDB opens
# anything) and the drive's in META.
check "plant META format 99" "$REL_PLANT" meta "$STORE" main 99
printf 'pathfs store\nformat 99\n' >"$STORE/PATHFS"
refused "newer format (pathfs)" "format|version|newer" \
	"$STORE" "$PATHFS" "$STORE" "$MNT2"
refused "newer format (pathfsctl fsck)" "format|version|newer" \
	"$STORE" "$PATHFSCTL" -s "$STORE" fsck
refused "newer format (pathfsctl ls)" "format|version|newer" \
	"$STORE" "$PATHFSCTL" -s "$STORE" ls /

# 4. a missing parent directory is not created
P=$T/parent
mkdir "$P"
refused "missing parent of the store" "no such|not exist|missing" \
	"$P" "$PATHFS" "$P/nope/store" "$MNT2"
check "the missing parent was not created" [ ! -e "$P/nope" ]

# 5. a full file system: a 32 MiB tmpfs that a ballast file fills
SMALL=$T/small
mkdir "$SMALL"
mount -t tmpfs -o size=32m tmpfs "$SMALL"
STORE=$SMALL/store
rel_mount_fg
mkdir "$MNT/docs"
echo kept >"$MNT/docs/a.txt"
head -c 300000 /dev/urandom >"$MNT/b.bin"
(cd "$MNT" && sha256sum docs/a.txt b.bin) >"$T/full.sums"
rel_umount_fg
avail() { df -B1 --output=avail "$SMALL" | tail -n 1; }
fallocate -l "$(avail)" "$SMALL/ballast"
check "the file system is full ($(avail) bytes free)" [ "$(avail)" -lt 4096 ]
refused "full file system (pathfs)" "no space left.*-o ro" \
	"$STORE" "$PATHFS" "$STORE" "$MNT2"
check "... exit 1 (not an abort)" [ "$LAST_RC" = 1 ]
# what the open said it needs, to try just above it below
need=$(sed -n 's/.*needs \([0-9]*\) KiB.*/\1/p' "$T/err")
need=${need:-2048}
refused "full file system (pathfs -f)" "no space left.*-o ro" \
	"$STORE" "$PATHFS" -f "$STORE" "$MNT2"
check "... exit 1 (not an abort)" [ "$LAST_RC" = 1 ]
refused "full file system (pathfsctl mkdrive)" "no space left" \
	"$STORE" "$PATHFSCTL" -s "$STORE" mkdrive other
check "... exit 1 (not an abort)" [ "$LAST_RC" = 1 ]
refused "full file system (pathfsctl rm -r)" "no space left" \
	"$STORE" "$PATHFSCTL" -s "$STORE" rm -r /docs
check "... exit 1 (not an abort)" [ "$LAST_RC" = 1 ]
# reads_ro DESC WANT CMD...: CMD exits 0, prints WANT (grep -F) on stdout
# and one line on stderr saying it opened the store read-only
reads_ro() {
	local what=$1 want=$2 rc=0
	shift 2
	timeout 60 "$@" >"$T/out" 2>"$T/err" </dev/null || rc=$?
	check "$what: exit 0 ($rc)" [ "$rc" = 0 ]
	check "$what: prints $want" grep -qF -- "$want" "$T/out"
	check "$what: one line says read-only: $(head -n 1 "$T/err")" \
		bash -c "[ \$(grep -c . '$T/err') = 1 ] &&
			grep -q 'opened read-only' '$T/err'"
}
reads_ro "full file system (pathfsctl ls)" "a.txt" \
	"$PATHFSCTL" -s "$STORE" ls /docs
reads_ro "full file system (pathfsctl du)" "2 files" \
	"$PATHFSCTL" -s "$STORE" du /
reads_ro "full file system (pathfsctl fsck)" "0 findings" \
	"$PATHFSCTL" -s "$STORE" fsck
reads_ro "full file system (pathfsctl drives)" "main" \
	"$PATHFSCTL" -s "$STORE" drives
check "full file system: -o ro mounts" "$PATHFS" -o ro "$STORE" "$MNT"
check "full file system: -o ro reads every byte" \
	bash -c "cd '$MNT' && sha256sum --quiet -c '$T/full.sums'"
pfs_umount
# Up to a few MiB free, just above what the open said it needs too: the
# open works (writes may meet ENOSPC) or is refused in one line; nothing
# aborts (exit 134), in either program.
for kib in 256 1024 $((need - 64)) $((need + 16)) $((need + 256)) 6144; do
	rm -f "$SMALL/ballast"
	fallocate -l "$(($(avail) - kib * 1024))" "$SMALL/ballast"
	rc=0
	timeout 60 "$PATHFS" "$STORE" "$MNT" 2>"$T/err" || rc=$?
	if [ "$rc" = 0 ]; then
		head -c 200000 /dev/urandom >"$MNT/new$kib" 2>/dev/null || true
		pfs_umount
		check "$kib KiB free: mounted and unmounted" true
	else
		check "$kib KiB free: refused in one line ($rc): $(cat "$T/err")" \
			bash -c "[ $rc = 1 ] && [ \$(grep -c . '$T/err') = 1 ] &&
				grep -qi 'no space left' '$T/err'"
	fi
	rc=0
	timeout 60 "$PATHFSCTL" -s "$STORE" fsck >"$T/out" 2>"$T/err" || rc=$?
	check "$kib KiB free: fsck clean ($rc): $(head -n 1 "$T/err")" \
		[ "$rc" = 0 ]
done
rm -f "$SMALL/ballast"
rel_mount_fg
check "space freed: the store mounts read-write, every byte there" \
	bash -c "cd '$MNT' && sha256sum --quiet -c '$T/full.sums'"
check "space freed: it takes writes" bash -c "echo more >'$MNT/more'"
rel_umount_fg
check "space freed: fsck clean" pfs_fsck

# 6. a damaged store: RocksDB's CURRENT (or the MANIFEST it names) gone is
# named, never "not a pathfs store", and no open makes a new database over
# the old tables (mkdrive may create one)
STORE=$T/damaged
rel_mount_fg
echo data >"$MNT/f"
rel_umount_fg
cp "$STORE/CURRENT" "$T/CURRENT.aside"
rm "$STORE/CURRENT"
refused "CURRENT missing (pathfs)" "damaged pathfs store: its file CURRENT is missing" \
	"$STORE" "$PATHFS" "$STORE" "$MNT2"
refused "CURRENT missing (pathfsctl ls)" "damaged pathfs store: its file CURRENT is missing" \
	"$STORE" "$PATHFSCTL" -s "$STORE" ls /
refused "CURRENT missing (pathfsctl mkdrive)" "damaged pathfs store: its file CURRENT is missing" \
	"$STORE" "$PATHFSCTL" -s "$STORE" mkdrive other
check "... exit 1" [ "$LAST_RC" = 1 ]
cp "$T/CURRENT.aside" "$STORE/CURRENT"
manifest=$(head -n 1 "$STORE/CURRENT")
mv "$STORE/$manifest" "$T/manifest.aside"
refused "$manifest missing (pathfs -o ro)" "damaged pathfs store: its file $manifest is missing" \
	"$STORE" "$PATHFS" -o ro "$STORE" "$MNT2"
refused "$manifest missing (pathfsctl fsck)" "damaged pathfs store: its file $manifest is missing" \
	"$STORE" "$PATHFSCTL" -s "$STORE" fsck
mv "$T/manifest.aside" "$STORE/$manifest"
rel_mount_fg
check "put back, the store serves its file" grep -qx data "$MNT/f"
rel_umount_fg

# 7. another user's pathfsctl on a store in a folder it cannot enter ($T is
# 0700): permission denied, mounted or not (not "the control socket
# refuses you", which says it is mounted)
STORE=$T/private
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
rel_mount_fg
echo data >"$MNT/f"
rel_umount_fg
refused "another user, unmounted (pathfsctl ls)" "^pathfsctl: store .*: permission denied" \
	"$STORE" "${NOBODY[@]}" "$PATHFSCTL" -s "$STORE" ls /
check "... exit 1" [ "$LAST_RC" = 1 ]
rel_mount_fg
refused "another user, mounted (pathfsctl ls)" "^pathfsctl: store .*: permission denied" \
	"$STORE" "${NOBODY[@]}" "$PATHFSCTL" -s "$STORE" ls /
rel_umount_fg

# 8. a store on a read-only file system (a tmpfs remounted ro): -o ro mounts
# it (no log file there: syslog, said on stderr), read commands open it
# read-only, a read-write mount is refused naming the cause
RO=$T/rofs
mkdir "$RO"
mount -t tmpfs -o size=64m tmpfs "$RO"
STORE=$RO/store
rel_mount_fg
echo data >"$MNT/f"
rel_umount_fg
mount -o remount,ro "$RO"
refused "read-only file system (pathfs)" "read-only file system: mount it with -o ro" \
	"$STORE" "$PATHFS" "$STORE" "$MNT2"
rc=0
"$PATHFS" -o ro "$STORE" "$MNT" 2>"$T/err" || rc=$?
check "read-only file system: -o ro mounts ($rc): $(cat "$T/err")" [ "$rc" = 0 ]
check "... and reads" grep -qx data "$MNT/f"
reads_ro "read-only file system, mounted -o ro (pathfsctl ls)" " f" \
	"$PATHFSCTL" -s "$STORE" ls /
pfs_umount
reads_ro "read-only file system (pathfsctl ls)" " f" \
	"$PATHFSCTL" -s "$STORE" ls /
reads_ro "read-only file system (pathfsctl fsck)" "0 findings" \
	"$PATHFSCTL" -s "$STORE" fsck

rel_finish
