#!/usr/bin/env bash
# rel_replace.sh - a node id lives until the kernel FORGETs it (issue 10.1,
# issue 15.3). The save pattern of editors and package managers (write f.tmp,
# fsync, rename over f) while readers keep opening f: the kernel resolved f
# to the old inode just before the rename and then sends OPEN (or GETATTR)
# for it, so an inode that lost its last name but is still known to the
# kernel must answer as an orphan with nlink 0, never ENOENT. Covers the
# shell loop of the issue, os.replace saves (plain, onto a hard-linked inode,
# by RENAME_EXCHANGE + unlink), fstat of an open folder after rmdir and after
# a rename over it, and that every orphan is reclaimed once the kernel lets go
# (no ORPHAN# key left, mounted and after unmount; fsck clean both ways).
#
# REL_REPLACE_SAVES (default 2000) saves per pattern.
source "$(dirname "$0")/rel_lib.sh"

SAVES=${REL_REPLACE_SAVES:-2000}
rel_mount_fg

# ---- the shell loop of issue 10.1 --------------------------------------------
shell_loop() {
	local n=0 i
	cd "$MNT"
	echo 0 >f
	(for i in $(seq "$SAVES"); do echo "$i" >f.tmp; mv -f f.tmp f; done) &
	local w=$!
	for i in $(seq $((SAVES / 2))); do
		cat f >/dev/null 2>>"$T/cat.err" || n=$((n + 1))
	done
	wait "$w"
	cd /
	echo "$n"
}
n=$(shell_loop)
check "shell loop: cat of a file replaced by mv never fails ($n of $((SAVES / 2)) failed)" \
	[ "$n" -eq 0 ]
head -n 3 "$T/cat.err" >&2 || true

# ---- os.replace saves with fsync, a reader reading the whole file ------------
# tests/helpers/saver.py (shared with rel_revalidate.sh): one writer saving
# SAVES versions of DIR/f and one reader opening and reading DIR/f until the
# writer is done; prints "reads missing partial fdfail saves". MODE: plain
# (os.replace), hardlink (the replaced inode is a hard-linked one: attributes
# in its INODE record), exchange (renameat2(RENAME_EXCHANGE) then unlink of
# the old version).
for mode in plain hardlink exchange; do
	mkdir "$MNT/$mode"
	out=$(python3 "$SAVER" "$mode" "$MNT/$mode" "$SAVES" 2>>"$T/saver.err") ||
		out="writer failed: $(tail -n 2 "$T/saver.err")"
	read -r reads missing partial fdfail _ <<<"$out" || true
	check "$mode saves: reader saw 0 missing, 0 partial reads, 0 failed read/fstat ($out)" \
		saver_clean
	check "$mode saves: f holds the last version" \
		grep -q "^$SAVES:" "$MNT/$mode/f"
done

# ---- fstat of an open folder after rmdir and rename over it (issue 15.3) ----
cat >"$T/dirs.py" <<'EOF'
import os, sys, stat
d = sys.argv[1]
bad = []
def gone(fd, what):
    try:
        st = os.fstat(fd)
    except OSError as e:
        bad.append("%s: fstat: %s" % (what, e))
        return
    if not stat.S_ISDIR(st.st_mode) or st.st_nlink != 0:
        bad.append("%s: mode %o nlink %d, want a folder with nlink 0"
                   % (what, st.st_mode, st.st_nlink))
    try:
        os.fchmod(fd, 0o700)
        if stat.S_IMODE(os.fstat(fd).st_mode) != 0o700:
            bad.append("%s: fchmod did not stick" % what)
    except OSError as e:
        bad.append("%s: fchmod: %s" % (what, e))
    if os.listdir(fd) != []:
        bad.append("%s: a removed folder lists entries" % what)
os.mkdir(d + "/a")
fd = os.open(d + "/a", os.O_RDONLY | os.O_DIRECTORY)
os.rmdir(d + "/a")
gone(fd, "rmdir")
os.close(fd)
os.mkdir(d + "/b")
os.mkdir(d + "/c")
fd = os.open(d + "/c", os.O_RDONLY | os.O_DIRECTORY)
os.rename(d + "/b", d + "/c")
gone(fd, "rename over")
os.close(fd)
# a file: the same through an open descriptor
with open(d + "/f", "w") as fh:
    fh.write("x")
    os.unlink(d + "/f")
    st = os.fstat(fh.fileno())
    if st.st_nlink != 0:
        bad.append("unlinked file: nlink %d" % st.st_nlink)
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
mkdir "$MNT/dirs"
check "fstat of an open folder after rmdir and after rename over it: nlink 0" \
	python3 "$T/dirs.py" "$MNT/dirs"

# reclaimed at FORGET and release, while mounted (not only at unmount):
# every replaced version is gone from the store once the kernel let go of it
orphans_gone() {
	local i
	for i in $(seq 1 100); do
		[ "$(kv_count 'DRIVE#main|ORPHAN#')" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}
check "while mounted, every orphan is reclaimed once the kernel forgot it" \
	orphans_gone
check "fsck clean while mounted" rel_fsck
check "daemon alive" rel_alive
rel_umount_fg
check "every orphan reclaimed by the time of unmount (no ORPHAN# key left)" \
	[ "$(kv_count 'DRIVE#main|ORPHAN#')" = 0 ]
check "fsck clean unmounted" rel_fsck
rel_finish
