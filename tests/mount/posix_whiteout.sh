#!/usr/bin/env bash
# posix_whiteout.sh - renameat2(RENAME_WHITEOUT), as overlayfs's upper layer
# uses it: the rename leaves a whiteout (a 0:0 character device, mode 0,
# owned by the caller; in a set-group-ID folder the folder's group) at the
# old name. The same source/target matrix as xfstests generic/078 (every
# pair of none, file, symlink, empty and non-empty folder, in one folder
# and across two) answers as there; NOREPLACE still refuses an existing
# target, EXCHANGE with it is EINVAL, an unprivileged caller makes one too
# (as on ext4: Linux allows it since 5.8, owned by that caller);
# a non-empty folder's journaled rename puts the whiteout in its final
# batch: a crash during the copy or after the final batch leaves, after the
# replay, the branch at the destination and the whiteout at the source;
# whiteouts stay across a remount, fsck is clean; and an overlay mount with
# its upper and work folders on pathfs works (the kernel refuses one whose
# upper file system cannot make whiteouts).
source "$(dirname "$0")/lib.sh"
sanitizer_logs

R2=$RENAMEAT2
J='DRIVE#main|JOURNAL#'
kind() { stat -c '%F %t:%T %a' "$1"; }
WH="character special file 0:0 0"

chmod 755 "$T" # let nobody reach the mountpoint (allow_other)
pfs_mount -o allow_other

# ---- generic/078's matrix --------------------------------------------------
setup_one() {
	case $2 in
	none) ;;
	regu) echo foo >"$1" ;;
	symb) ln -s foo "$1" ;;
	dire) mkdir "$1" ;;
	tree) mkdir "$1" && echo foo >"$1/bar" ;;
	esac
}
cleanup_one() {
	if [ -d "$1" ] && [ ! -h "$1" ]; then
		rm -f "$1/bar"
		rmdir "$1"
	else
		rm -f "$1"
	fi
}
showtype_one() {
	if [ -e "$1" ] || [ -h "$1" ]; then
		if [ -d "$1" ] && [ -e "$1/bar" ]; then
			echo -n tree
		else
			echo -n "$(stat -c %F "$1" | cut -b-4)"
		fi
	else
		echo -n none
	fi
}
matrix() { # SRC DST LABEL
	local s d err
	for s in none regu symb dire tree; do
		for d in none regu symb dire tree; do
			echo -n "$3 $s/$d -> "
			setup_one "$1" $s
			setup_one "$2" $d
			if err=$("$R2" whiteout "$1" "$2" 2>&1); then
				showtype_one "$1"
				echo -n /
				showtype_one "$2"
				echo .
			else
				echo "${err##*: }"
			fi
			cleanup_one "$1"
			cleanup_one "$2"
		done
	done
}
cat >"$T/078.same" <<'OUT'
samedir  none/none -> No such file or directory
samedir  none/regu -> No such file or directory
samedir  none/symb -> No such file or directory
samedir  none/dire -> No such file or directory
samedir  none/tree -> No such file or directory
samedir  regu/none -> char/regu.
samedir  regu/regu -> char/regu.
samedir  regu/symb -> char/regu.
samedir  regu/dire -> Is a directory
samedir  regu/tree -> Is a directory
samedir  symb/none -> char/symb.
samedir  symb/regu -> char/symb.
samedir  symb/symb -> char/symb.
samedir  symb/dire -> Is a directory
samedir  symb/tree -> Is a directory
samedir  dire/none -> char/dire.
samedir  dire/regu -> Not a directory
samedir  dire/symb -> Not a directory
samedir  dire/dire -> char/dire.
samedir  dire/tree -> Directory not empty
samedir  tree/none -> char/tree.
samedir  tree/regu -> Not a directory
samedir  tree/symb -> Not a directory
samedir  tree/dire -> char/tree.
samedir  tree/tree -> Directory not empty
OUT
{
	cat "$T/078.same"
	sed 's/^samedir /crossdir/' "$T/078.same"
} >"$T/078.want"
mkdir "$MNT/m" "$MNT/m/x" "$MNT/m/y"
{
	matrix "$MNT/m/src" "$MNT/m/dst" "samedir "
	matrix "$MNT/m/x/src" "$MNT/m/y/dst" crossdir
} >"$T/078.got"
same_file "generic/078's matrix of whiteout renames" "$T/078.want" "$T/078.got"

# ---- the whiteout ------------------------------------------------------------
mkdir "$MNT/w"
echo data >"$MNT/w/a"
check "rename a file with RENAME_WHITEOUT" "$R2" whiteout "$MNT/w/a" "$MNT/w/b"
check "  the old name is a whiteout ($(kind "$MNT/w/a"))" test "$(kind "$MNT/w/a")" = "$WH"
check "  owned by the caller, one link ($(stat -c '%u:%g %h' "$MNT/w/a"))" \
	test "$(stat -c '%u:%g %h' "$MNT/w/a")" = "0:0 1"
check "  the new name has the content" test "$(cat "$MNT/w/b")" = data
check "  the folder lists both" test "$(ls "$MNT/w" | tr '\n' ' ')" = "a b "
mkdir "$MNT/w/g"
chown 0:4242 "$MNT/w/g"
chmod 2775 "$MNT/w/g"
echo g >"$MNT/w/g/f"
"$R2" whiteout "$MNT/w/g/f" "$MNT/w/g/f2"
check "  in a set-group-ID folder it takes the folder's group ($(stat -c %g "$MNT/w/g/f"))" \
	test "$(stat -c %g "$MNT/w/g/f")" = 4242
echo c >"$MNT/w/c"
expect_errno EEXIST "NOREPLACE|WHITEOUT onto an existing name" \
	"$R2" noreplace,whiteout "$MNT/w/c" "$MNT/w/b"
check "NOREPLACE|WHITEOUT onto a free name" "$R2" noreplace,whiteout "$MNT/w/c" "$MNT/w/d"
check "  leaves the whiteout" test "$(kind "$MNT/w/c")" = "$WH"
expect_errno EINVAL "EXCHANGE|WHITEOUT" "$R2" exchange,whiteout "$MNT/w/b" "$MNT/w/d"
chmod 777 "$MNT/w"
echo e >"$MNT/w/e"
chmod 666 "$MNT/w/e"
check "an unprivileged caller (nobody)" \
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$R2" whiteout "$MNT/w/e" "$MNT/w/e2"
check "  gets a whiteout of its own ($(stat -c '%F %t:%T %a %U:%G' "$MNT/w/e"))" test \
	"$(stat -c '%F %t:%T %a %U:%G' "$MNT/w/e")" = "$WH nobody:nogroup"
ln "$MNT/w/b" "$MNT/w/b-link"
check "two links of one file: nothing moves, no whiteout" \
	"$R2" whiteout "$MNT/w/b" "$MNT/w/b-link"
check "  both names still the file" test "$(stat -c '%F %h' "$MNT/w/b")" = "regular file 2"
check "a whiteout can be renamed over and removed" bash -c \
	"mv '$MNT/w/d' '$MNT/w/a' && rm '$MNT/w/c' && [ \"\$(cat '$MNT/w/a')\" = c ] && [ ! -e '$MNT/w/c' ]"
pfs_umount
pfs_mount
check "after a remount: the whiteout is there ($(kind "$MNT/w/g/f"))" test "$(kind "$MNT/w/g/f")" = "$WH"
check "fsck clean" pfs_fsck

# ---- a non-empty folder: the journal's final batch ---------------------------
python3 "$TREE_PY" flat "$MNT/big" 700 >/dev/null
manifest "$MNT/big" "$T/m.big"
pfs_umount
BATCH=256
k=$(((700 + BATCH - 1) / BATCH))
cur=big
other=big2
for N in 1 $((k + 1)); do
	what="crash after batch $N of a whiteout folder rename"
	PATHFS_CRASH_AFTER_BATCHES=$N pfs_mount -o rename_batch=$BATCH
	pid=$(pfs_pid)
	rc=0
	timeout 120 "$R2" whiteout "$MNT/$cur" "$MNT/$other" 2>/dev/null || rc=$?
	pfs_wait_dead "$pid" "$what"
	check "$what: the rename did not report success" test "$rc" -ne 0
	pfs_reap
	check "$what: journal records ($(kv_count "$J"))" \
		test "$(kv_count "$J")" = $([ "$N" -le "$k" ] && echo 1 || echo 0)
	pfs_mount
	check "$what: after the replay the source is a whiteout" \
		test "$(kind "$MNT/$cur")" = "$WH"
	manifest "$MNT/$other" "$T/m.now"
	same_file "$what: the whole branch at the destination" "$T/m.big" "$T/m.now"
	rm "$MNT/$cur"
	pfs_umount
	check "$what: fsck clean" pfs_fsck
	t=$cur
	cur=$other
	other=$t
done
pfs_mount
check "a whiteout rename of a folder without a crash" "$R2" whiteout "$MNT/$cur" "$MNT/$other"
check "  the source is a whiteout" test "$(kind "$MNT/$cur")" = "$WH"
manifest "$MNT/$other" "$T/m.now"
same_file "  the whole branch at the destination" "$T/m.big" "$T/m.now"

# ---- overlayfs with its upper layer on pathfs --------------------------------
if grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null; then
	mkdir -p "$T/lower/ld" "$T/ovl" "$MNT/upper" "$MNT/work"
	echo lower >"$T/lower/lf"
	echo lower2 >"$T/lower/ld/g"
	check "mount -t overlay with upperdir and workdir on pathfs" \
		mount -t overlay overlay -o "lowerdir=$T/lower,upperdir=$MNT/upper,workdir=$MNT/work" "$T/ovl"
	if mountpoint -q "$T/ovl"; then
		mv "$T/ovl/lf" "$T/ovl/lf2"
		rm -r "$T/ovl/ld"
		echo new >"$T/ovl/n"
		check "  the overlay shows the changes" test \
			"$(ls "$T/ovl" | tr '\n' ' ')" = "lf2 n " -a "$(cat "$T/ovl/lf2")" = lower
		check "  the lower folder is untouched" test -f "$T/lower/lf" -a -f "$T/lower/ld/g"
		check "  the upper layer holds whiteouts for lf and ld" test \
			"$(kind "$MNT/upper/lf")|$(kind "$MNT/upper/ld")" = "$WH|$WH"
		umount "$T/ovl"
	fi
else
	echo "# overlayfs not available here: its part skipped"
fi

pfs_umount
check "fsck clean at the end" pfs_fsck
sanitizer_clean
finish
