#!/usr/bin/env bash
# rel_corrupt.sh - damaged records planted in an unmounted store
# (tests/helpers/rel_plant.c: garbage as one file's node value, garbage as
# one content block of another file, and garbage as the node value of a file
# whose name holds a newline and a backslash): after the remount each such
# file alone gives EIO (its folder lists, its neighbours read back intact,
# the first block of the damaged file still reads), the daemon logs a line naming each damaged
# record, does not crash, and pathfsctl fsck reports both and exits 1,
# mounted and unmounted, each odd byte of a name escaped once (\xNN).
source "$(dirname "$0")/rel_lib.sh"

rel_mount_fg
mkdir "$MNT/a" "$MNT/b"
echo good1 >"$MNT/a/good1"
echo victim >"$MNT/a/bad-node"
echo odd >"$MNT/a/odd"$'\n'"name\\"
head -c 200000 /dev/urandom >"$MNT/a/bad-block"
head -c 300000 /dev/urandom >"$MNT/b/good2"
echo sibling >"$MNT/a/bad-node2" # sorts right after the damaged node
(cd "$MNT" && sha256sum a/good1 b/good2 a/bad-node2) >"$T/sums"
head -c 65536 "$MNT/a/bad-block" | sha256sum >"$T/block0"
rel_umount_fg

check "plant garbage as the node value of /a/bad-node" \
	"$REL_PLANT" node "$STORE" main /a/bad-node
check "plant garbage as the node value of /a/odd<newline>name<backslash>" \
	"$REL_PLANT" node "$STORE" main "/a/odd"$'\n'"name\\"
"$REL_PLANT" block "$STORE" main /a/bad-block 1 >"$T/plant.out"
read -r _ ino inohex <"$T/plant.out"
check "planted garbage as block 1 of /a/bad-block (ino $ino)" [ -n "$inohex" ]

rel_mount_fg
expect_errno EIO "stat of the damaged node" stat "$MNT/a/bad-node"
expect_errno EIO "reading the damaged node" cat "$MNT/a/bad-node"
expect_errno EIO "reading across the damaged block" \
	bash -c "cat '$MNT/a/bad-block' >/dev/null"
check "the block before the damaged one still reads" \
	bash -c "head -c 65536 '$MNT/a/bad-block' | sha256sum | cmp -s - '$T/block0'"
check "the damaged file's folder lists, with its neighbours" \
	bash -c "ls '$MNT/a' | grep -qx good1 && ls '$MNT/a' | grep -qx bad-node2"
check "every other file reads back intact" \
	bash -c "cd '$MNT' && sha256sum --quiet -c '$T/sums'"
check "the damaged file's folder still takes new files" \
	bash -c "echo new >'$MNT/a/new' && [ \"\$(cat '$MNT/a/new')\" = new ]"
check "find over the whole mount completes" \
	bash -c "find '$MNT' >/dev/null 2>&1; find '$MNT' | grep -q b/good2"
check "daemon alive" rel_alive
check "a log line names the damaged node" grep -q "bad-node" "$DLOG"
check "a log line names the damaged block (inode $inohex)" \
	grep -Eqi "$inohex|ino(de)? *$ino\b" "$DLOG"

# fsck_finds HOW WHERE: pathfsctl fsck (HOW: through the daemon, of the
# unmounted store) exits 1 and names the damaged node and block; keeps $out
fsck_finds() {
	local rc=0
	out=$(timeout 120 "$PATHFSCTL" -s "$STORE" fsck 2>&1) || rc=$?
	check "fsck $1 exits 1" [ "$rc" -eq 1 ]
	check "fsck ($2) reports the damaged node" grep -q "bad-node" <<<"$out"
	check "fsck ($2) reports the damaged block" \
		grep -Eqi "$inohex|bad-block|ino(de)? *$ino\b" <<<"$out"
	check "fsck ($2) prints the odd name's bytes escaped once" \
		grep -qF '/a/odd\x0aname\x5c: value does not decode' <<<"$out"
}
fsck_finds "through the daemon" mounted
rel_umount_fg
fsck_finds "of the unmounted store" unmounted
[ "$FAILS" -eq 0 ] || { echo "--- fsck said:"; echo "$out"; echo "--- daemon log:"; cat "$DLOG"; } >&2
rel_finish
