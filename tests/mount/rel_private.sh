#!/usr/bin/env bash
# rel_private.sh - no other user can read a store: a store made in a folder
# made with mkdir (README's /srv/pathfs-store pattern, mode 0755) is made
# owner-only by the mount (folder 0700, the log says so), and every file
# RocksDB writes into it, at the mount and all the daemon's life (tables
# flushed by its background threads), is 0600: another user's `grep -r` of
# the store finds nothing of a file written through the mount. A store an
# older pathfs left readable (0755 folder, 0644 files) is an fsck finding
# (exit 1), `fsck --repair` makes it owner-only, and so does a mount.
source "$(dirname "$0")/rel_lib.sh"

chmod 755 "$T" # other users reach the store's folder; its mode decides
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
# open_to_others: what in the store grants group or others anything
open_to_others() { find "$STORE" -perm /077 -printf '%m %p\n'; }
# nobody_finds WORD: whether user nobody's grep of the store finds WORD
nobody_finds() { as_nobody grep -rlq -- "$1" "$STORE" 2>/dev/null; }
nobody_misses() { ! nobody_finds "$1"; }
nobody_cannot_list() { ! as_nobody ls "$STORE" >/dev/null 2>&1; }

mkdir -m 755 "$STORE"
rel_mount_fg
echo "MARKER-$$-secret" >"$MNT/s"
chmod 600 "$MNT/s"
sync "$MNT/s"
# more than a memtable (32 MiB): the daemon flushes tables while it runs
head -c $((48 << 20)) /dev/urandom >"$MNT/big"
echo "MARKER-$$-later" >"$MNT/later"
sync "$MNT/big" "$MNT/later"
sleep 1
check "the store's folder is 0700 once mounted" \
	[ "$(stat -c %a "$STORE")" = 700 ]
check "nothing in the store grants others anything: $(open_to_others | head -n 3)" \
	[ -z "$(open_to_others)" ]
check "tables flushed while mounted are there" \
	bash -c "ls '$STORE' | grep -q 'sst$'"
check "another user's grep -r of the store finds nothing" \
	nobody_misses "MARKER-$$"
check "another user cannot list the store" nobody_cannot_list
check "the log says the folder was made owner-only" \
	grep -q "store folder $STORE: other users may read it (mode 0755.*made owner-only" "$DLOG"
check "fsck of the mounted store: clean" pfs_fsck
rel_umount_fg

# a store as an older pathfs left it: folder 0755, files 0644
loosen() {
	chmod 755 "$STORE"
	find "$STORE" -type f -exec chmod 644 {} +
}
loosen
check "loosened: another user's grep finds the file's bytes (the exposure)" \
	nobody_finds "MARKER-$$-secret"
rc=0
"$PATHFSCTL" -s "$STORE" fsck >"$T/fsck.out" 2>&1 || rc=$?
check "fsck of a readable store: exit 1 ($rc)" [ "$rc" = 1 ]
check "fsck names the folder" \
	grep -q "store folder $STORE: other users may read it (mode 0755, wants 0700)$" "$T/fsck.out"
check "fsck names the files" \
	grep -Eq "store $STORE: [0-9]+ files \(.*\): other users may read them \(mode 0644, wants 0600\)$" "$T/fsck.out"
[ "$rc" = 1 ] || cat "$T/fsck.out" >&2
rc=0
"$PATHFSCTL" -s "$STORE" fsck --repair >"$T/fsck.out" 2>&1 || rc=$?
check "fsck --repair makes them owner-only" \
	grep -q "made owner-only" "$T/fsck.out"
check "after --repair nothing grants others anything: $(open_to_others | head -n 3)" \
	[ -z "$(open_to_others)" ]
check "after --repair fsck is clean" pfs_fsck
loosen
rel_mount_fg
check "a mount makes a readable store owner-only: $(open_to_others | head -n 3)" \
	[ -z "$(open_to_others)" ]
check "... and another user's grep finds nothing" nobody_misses "MARKER-$$"
check "the files read back" grep -q "MARKER-$$-secret" "$MNT/s"
rel_umount_fg
check "fsck clean" pfs_fsck

rel_finish
