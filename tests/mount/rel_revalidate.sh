#!/usr/bin/env bash
# rel_revalidate.sh - renames racing LOOKUPs and requests on open files,
# through the real kernel. Mounted with the shortest cache timeout (-o
# timeout: any value above 0 is taken, 0 means the default; the kernel keeps
# an entry at least one jiffy), the kernel revalidates every cached name
# (d_revalidate sends LOOKUP without the folder lock) while a writer renames,
# so LOOKUPs, OPENs, READs and GETATTRs run between a rename's store commit
# and its table update (the race of d516851: a READ on an open file answered
# ENOENT). Each workload is one writer and REL_REVALIDATE_READERS readers
# (tests/helpers/saver.py, shared with rel_replace.sh):
#   exchange  saves by renameat2(RENAME_EXCHANGE) + unlink of the old version
#   plain     saves by os.replace
#   hardlink  saves onto a hard-linked inode
#   move      a/f moves to b/f and back; readers open it by both names (at
#             open, ENOENT is allowed for the name it is not at) and keep a
#             descriptor of it open all along
# and readers also open g, which nobody touches, and create and unlink a
# file of their own now and then (table changes while renames run: the old
# fs_retry gave up on any). Saves are not fsync'd (rel_replace's are): the
# race wants renames a second. Asserts what a user relies on: a name that
# always exists never misses, a read or fstat on an open descriptor never
# fails, every read gives a whole version; then the last version is in
# place, fsck is clean and the daemon alive.
#
# REL_REVALIDATE_SAVES (default 10000) saves or moves per workload, at most
# REL_REVALIDATE_SECONDS (default 10) each; REL_REVALIDATE_READERS (default
# 2) readers; REL_REVALIDATE_TIMEOUT (default 0.000000001) the mount's -o
# timeout; REL_REVALIDATE_FSYNC=1 fsyncs each save.
source "$(dirname "$0")/rel_lib.sh"

SAVES=${REL_REVALIDATE_SAVES:-10000}
SECS=${REL_REVALIDATE_SECONDS:-10}
READERS=${REL_REVALIDATE_READERS:-2}
export SAVER_FSYNC=${REL_REVALIDATE_FSYNC:-0} SAVER_CHURN=1
rel_mount_fg -o "timeout=${REL_REVALIDATE_TIMEOUT:-0.000000001}"

# moved_back: the moved file ended at a/f, whole (version 0), b/f is free.
moved_back() {
	[ "$(cat "$MNT/move/a/f")" = "0:x:0" ] &&
		! [ -e "$MNT/move/b/f" ]
}

for mode in exchange plain hardlink move; do
	mkdir "$MNT/$mode"
	start=$SECONDS
	out=$(python3 "$SAVER" "$mode" "$MNT/$mode" "$SAVES" "$READERS" "$SECS" \
		2>>"$T/saver.err") || out="writer failed: $(tail -n 2 "$T/saver.err")"
	read -r reads missing partial fdfail saves <<<"$out" || true
	what="$mode: ${saves:-?} saves, $READERS readers, $((SECONDS - start)) s"
	check "$what: 0 missing, 0 partial, 0 failed read/fstat ($out)" \
		saver_clean
	if [ "$mode" = move ]; then
		check "move: the file is back at a/f, whole, b/f is free" \
			moved_back
	else
		check "$mode: f holds the last version" \
			grep -q "^${saves:-x}:" "$MNT/$mode/f"
	fi
done
if [ -s "$T/saver.err" ]; then
	echo "--- first failures the readers saw:" >&2
	head -n 12 "$T/saver.err" >&2
fi

check "fsck clean while mounted" rel_fsck
check "daemon alive" rel_alive
rel_umount_fg
check "fsck clean unmounted" rel_fsck
rel_finish
