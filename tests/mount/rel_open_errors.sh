#!/usr/bin/env bash
# rel_open_errors.sh - opening a store that cannot be served: one held by
# another daemon, a directory that is not a pathfs store, a store whose
# format version is newer than the program (marker and META planted, META
# by tests/helpers/rel_plant.c), a store whose parent is missing. pathfs and
# pathfsctl must print one clear line, exit non-zero (pathfsctl: 1), mount
# nothing, and write nothing (the directory's listing and checksums are
# unchanged). The one suite for "not a pathfs store".
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

rel_finish
