#!/usr/bin/env bash
# posix_fixture.sh - the POSIX fixture round trips (issue 3).
#
# A fixture tree (tests/helpers/tree.py fixture: files of 0, 1, 4096+-1,
# 65536+-1 bytes and 3 MiB, a sparse file, relative/absolute/dangling
# symlinks, hard links, a FIFO, xattrs, odd modes, owners and ns mtimes, names
# with spaces, '-', '.', '...', newline, tab, UTF-8 and 255 bytes) goes into
# the mount and back out with cp -a, tar (pax, --xattrs) and rsync -aHAX. Each
# copy must have the fixture's exact manifest (names, types, modes, owners,
# sizes, link counts and groups, mtimes in ns, content sha256, symlink targets,
# xattrs) and diff -r clean; find, du and ls -lAR must agree with the fixture;
# after an unmount and a remount everything is still there byte for byte.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

SRC=$T/src
python3 "$TREE_PY" fixture "$SRC"
manifest "$SRC" "$T/m.src"

pfs_mount

# ---- cp -a in and out ------------------------------------------------------
check "cp -a into the mount" cp -a "$SRC" "$MNT/cp"
manifest "$MNT/cp" "$T/m.cp"
same_file "cp -a in: manifest identical" "$T/m.src" "$T/m.cp"
check "cp -a in: diff -r clean" diff -r --no-dereference -x fifo "$SRC" "$MNT/cp"
check "cp -a out of the mount" cp -a "$MNT/cp" "$T/out.cp"
manifest "$T/out.cp" "$T/m.out.cp"
same_file "cp -a out: manifest identical" "$T/m.src" "$T/m.out.cp"
check "cp -a out: diff -r clean" diff -r --no-dereference -x fifo "$SRC" "$T/out.cp"

# Spot checks the manifest already covers, stated plainly.
check "hard link count 3 and one inode" test \
	"$(stat -c '%h %i' "$MNT/cp/files/text")" = \
	"$(stat -c '%h %i' "$MNT/cp/files/text.3")" -a \
	"$(stat -c '%h' "$MNT/cp/files/text")" = 3
check "symlink targets" test "$(readlink "$MNT/cp/links/rel")" = ../files/b1 \
	-a "$(readlink "$MNT/cp/links/dangling")" = does/not/exist
check "relative symlink resolves in the mount" cmp "$MNT/cp/links/rel" \
	"$SRC/files/b1"
check "FIFO stays a FIFO" test -p "$MNT/cp/special/fifo"
check "mtime 2040 with ns" test "$(stat -c %y "$MNT/cp/times/y2040")" = \
	"$(stat -c %y "$SRC/times/y2040")"
check "getfattr -d agrees" cmp <(cd "$SRC" && getfattr -R -d -m - -e hex \
	files 2>&1) <(cd "$MNT/cp" && getfattr -R -d -m - -e hex files 2>&1)
check "255-byte name is there" test -f "$MNT/cp/names/$(printf 'x%.0s' \
	$(seq 255))"
check "sparse file reads back its hole as zeros" cmp \
	<(dd if="$MNT/cp/files/sparse" bs=1M skip=5 count=5 status=none) \
	<(head -c $((5 * 1048576)) /dev/zero)

# ---- tar c | tar x, both ways ----------------------------------------------
TAR=(tar --format=posix --xattrs --xattrs-include='*' --warning=no-timestamp)
mkdir "$MNT/tar"
check "tar c | tar x into the mount" bash -c \
	'cd "$1" && "${@:3}" -cf - . | "${@:3}" -C "$2" -xpf -' _ \
	"$SRC" "$MNT/tar" "${TAR[@]}"
manifest "$MNT/tar" "$T/m.tar"
same_file "tar in: manifest identical" "$T/m.src" "$T/m.tar"
mkdir "$T/out.tar"
check "tar c | tar x out of the mount" bash -c \
	'cd "$1" && "${@:3}" -cf - . | "${@:3}" -C "$2" -xpf -' _ \
	"$MNT/tar" "$T/out.tar" "${TAR[@]}"
manifest "$T/out.tar" "$T/m.out.tar"
same_file "tar out: manifest identical" "$T/m.src" "$T/m.out.tar"

# ---- rsync -aHAX, both ways ------------------------------------------------
check "rsync -aHAX into the mount" rsync -aHAX "$SRC/" "$MNT/rsync/"
manifest "$MNT/rsync" "$T/m.rsync"
same_file "rsync in: manifest identical" "$T/m.src" "$T/m.rsync"
check "rsync -aHAX out of the mount" rsync -aHAX "$MNT/rsync/" "$T/out.rsync/"
manifest "$T/out.rsync" "$T/m.out.rsync"
same_file "rsync out: manifest identical" "$T/m.src" "$T/m.out.rsync"
check "rsync again finds nothing to do" test -z "$(rsync -aHAXi "$SRC/" \
	"$MNT/rsync/")"

# ---- find, du, ls agree with the fixture -----------------------------------
# Folder sizes are the file system's own business (pathfs says 0, ext4 4096),
# so they are left out of the listings (and ls's column padding, which depends
# on them, is squeezed); everything else must match.
find_list() {
	(cd "$1" && find . \( -type d -printf '%P\t%y %m %U %G %n %T@\0' \) -o \
		-printf '%P\t%y %m %U %G %n %T@ %s %l\0') | sort -z | tr '\0' '\n'
}
find_list "$SRC" >"$T/find.src"
find_list "$MNT/cp" >"$T/find.mnt"
same_file "find -printf agrees" "$T/find.src" "$T/find.mnt"
check "find -type counts agree" test \
	"$(find "$SRC" -printf '%y\n' | sort | uniq -c)" = \
	"$(find "$MNT/cp" -printf '%y\n' | sort | uniq -c)"
check "find -newer/-size work in the mount" test \
	"$(cd "$MNT/cp" && find . -size +60k -type f | sort)" = \
	"$(cd "$SRC" && find . -size +60k -type f | sort)"

# du --apparent-size: file bytes (each inode once) plus the folders' own sizes
du_expect() {
	local files dirs
	files=$(find "$1" ! -type d -printf '%i %s\n' | sort -u |
		awk '{s += $2} END {print s + 0}')
	dirs=$(find "$2" -type d -printf '%s\n' | awk '{s += $1} END {print s + 0}')
	echo $((files + dirs))
}
for sub in . files links names modes times deep; do
	check "du -sb --apparent-size $sub" test \
		"$(du -sb --apparent-size "$MNT/cp/$sub" | cut -f1)" = \
		"$(du_expect "$SRC/$sub" "$MNT/cp/$sub")"
done
check "du --inodes agrees" test \
	"$(du -s --inodes "$MNT/cp" | cut -f1)" = "$(du -s --inodes "$SRC" | cut -f1)"

ls_list() {
	(cd "$1" && LC_ALL=C ls -lAR -b --time-style=+%s.%N .) |
		awk '/^total / {next} /^d/ {$5 = "-"} {$1 = $1; print}'
}
ls_list "$SRC" >"$T/ls.src"
ls_list "$MNT/cp" >"$T/ls.mnt"
same_file "ls -lAR agrees" "$T/ls.src" "$T/ls.mnt"
check "ls -la lists . and .. too" test \
	"$(ls -la "$MNT/cp/files" | awk 'NR > 1 {print $NF}' | head -n2 | tr '\n' ' ')" = \
	". .. "

# ---- unmount, remount: all still there, byte for byte ----------------------
pfs_umount
check "unmounted" test -z "$(ls -A "$MNT")"
pfs_mount
check "root lists exactly what was made" test \
	"$(ls -A "$MNT" | tr '\n' ' ')" = "cp rsync tar "
for c in cp tar rsync; do
	manifest "$MNT/$c" "$T/m.re.$c"
	same_file "after remount: $c manifest identical" "$T/m.src" "$T/m.re.$c"
done
check "after remount: diff -r clean" diff -r --no-dereference -x fifo "$SRC" "$MNT/cp"
check "after remount: 3 MiB file byte for byte" cmp "$SRC/files/b3145851" \
	"$MNT/rsync/files/b3145851"
pfs_umount

sanitizer_clean
finish
