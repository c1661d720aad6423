#!/usr/bin/env bash
# xfstests.sh - runs xfstests (fstests) on pathfs through its FUSE support, as
# a user would mount it: `mount -t fuse.pathfs STORE MNT` (mount(8) runs
# mount.fuse3, which runs `pathfs` found in PATH). Optionally the same tests
# on ext4 (loop-device images), to know which tests pass there.
#
# xfstests is not part of pathfs and not a Debian package: clone it beside
# the repository (git://git.kernel.org/pub/scm/fs/xfs/xfstests-dev.git, or
# its mirror https://github.com/kdave/xfstests), install the packages its
# README lists (xfsprogs xfslibs-dev uuid-dev libtool-bin e2fsprogs automake
# gcc quota attr make libacl1-dev libaio-dev libgdbm-dev gawk fio
# uuid-runtime bc libcap2-bin acl psmisc ...) and run `make` in it.
#
#   scripts/xfstests.sh [--ext4] [CHECK ARGS...]     (as root; default -g quick)
#
#   XFSTESTS   the built xfstests checkout (default: /work/xfstests)
#   PATHFS     the daemon to test (default: build/fs/pathfs of this checkout)
#   RESULTS    where results, stores and mounts go (default: /work/xfstests-results)
#   SUBTYPE    the name the daemon is installed and mounted as (default
#              pathfs): /usr/local/bin/SUBTYPE, mounted with -t fuse.SUBTYPE
#              (the mounts show fuse.pathfs all the same: the daemon names
#              its subtype)
#
# Two checks at once, each with its own daemon: give each its own SUBTYPE
# and RESULTS (SUBTYPE=pathfsacl RESULTS=/work/xfstests-results/acl ...).
# mount.fuse3 runs the program the type names (fuse.SUBTYPE: SUBTYPE, found
# in PATH), so each check's mounts run its own daemon, and a check with
# another SUBTYPE leaves /usr/local/bin/pathfs alone.
#
# Two adapters, since xfstests knows FUSE only through libfuse's example
# daemon (README.fuse: a source that is a plain word, no subtype): its
# DF_PROG is a df that says "fuse" for pathfs's "fuse.SUBTYPE", and its
# UMOUNT_PROG a umount that turns a store (the mount's source, a directory,
# which umount(8) would take for a mount point) into its mount point.
#
# What it changes on the machine: /usr/local/bin/SUBTYPE (pathfs) becomes a
# symlink to a copy of PATHFS in RESULTS/bin (as `meson install` would put
# pathfs in PATH; a copy, so a rebuild does not change the daemon under a
# running check); the users fsgqa, fsgqa2 and 123456-fsgqa that xfstests runs
# unprivileged steps as are created if missing. With --ext4, two 2 GiB
# images in RESULTS/ext4 on loop devices, detached at the end.
#
# Results: RESULTS/{pathfs,ext4}/check.log (the summary: "Ran", "Not run",
# "Failures"), and per test its .out.bad/.full/.notrun under
# RESULTS/{pathfs,ext4}/results. The test and scratch stores are fresh
# folders under RESULTS/{pathfs}/work at each run.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
XFSTESTS=${XFSTESTS:-/work/xfstests}
PATHFS=${PATHFS:-$here/build/fs/pathfs}
RESULTS=${RESULTS:-/work/xfstests-results}
SUBTYPE=${SUBTYPE:-pathfs}

fstyp=pathfs
if [ "${1:-}" = --ext4 ]; then
	fstyp=ext4
	shift
fi
[ $# -gt 0 ] || set -- -g quick

die() { echo "xfstests.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (xfstests mounts and unmounts)"
[ -x "$XFSTESTS/check" ] || die "no xfstests at $XFSTESTS (see the comment at the top)"
[ -x "$XFSTESTS/ltp/fsstress" ] || die "xfstests at $XFSTESTS is not built (make)"
[[ "$SUBTYPE" =~ ^[a-z][a-z0-9_]*$ ]] ||
	die "SUBTYPE=$SUBTYPE: a program name of a-z 0-9 _ expected"

# xfstests runs their steps with su, so each needs a shell (this
# repository's own suites create fsgqa with nologin when it is missing)
for u in fsgqa fsgqa2 123456-fsgqa; do
	id "$u" >/dev/null 2>&1 || useradd -m "$u"
	[ "$(getent passwd "$u" | cut -d: -f7)" = /bin/sh ] || usermod -s /bin/sh "$u"
done

out=$RESULTS/$fstyp
mkdir -p "$out"
cfg=$out/local.config
work=$out/work
loops=()
cleanup() {
	local l
	for l in "${loops[@]}"; do
		umount "$work/test" "$work/scratch" 2>/dev/null || true
		losetup -d "$l" 2>/dev/null || true
	done
}
trap cleanup EXIT

# a previous run's mounts go first (its stores are then replaced)
for m in "$work/test" "$work/scratch"; do
	if mountpoint -q "$m" 2>/dev/null; then umount "$m"; fi
done
rm -rf "$work"
mkdir -p "$work/test" "$work/scratch"

if [ "$fstyp" = pathfs ]; then
	[ -x "$PATHFS" ] || die "no daemon at $PATHFS (ninja -C build)"
	mkdir -p "$RESULTS/bin"
	cp "$PATHFS" "$RESULTS/bin/$SUBTYPE.new"
	mv "$RESULTS/bin/$SUBTYPE.new" "$RESULTS/bin/$SUBTYPE"
	ln -sfn "$RESULTS/bin/$SUBTYPE" "/usr/local/bin/$SUBTYPE"
	# xfstests checks the mount's type with df -T and expects "fuse" (its
	# own example daemon sets no subtype); pathfs's mounts are of type
	# fuse.pathfs whatever program mount.fuse3 ran (the daemon names its
	# subtype; fstab's fuse.SUBTYPE picks the program): its df is told to
	# say fuse for either
	cat >"$RESULTS/bin/df" <<-EOF
		#!/bin/sh
		df "\$@" | sed -E 's/ fuse\.(pathfs|$SUBTYPE) / fuse /'
	EOF
	# and it unmounts by device: umount(8) takes a directory for a mount
	# point, never for a source, so its umount is told the store's mount
	cat >"$RESULTS/bin/umount" <<-'EOF'
		#!/bin/bash
		args=()
		for a; do
			m=
			[ -d "$a" ] && ! mountpoint -q "$a" &&
				m=$(findmnt -rn -S "$a" -o TARGET | head -1)
			args+=("${m:-$a}")
		done
		exec umount "${args[@]}"
	EOF
	chmod 755 "$RESULTS/bin/df" "$RESULTS/bin/umount"
	# the stores are created by their first mount
	cat >"$cfg" <<-EOF
		export FSTYP=fuse
		export FUSE_SUBTYP=.$SUBTYPE
		export TEST_DEV=$work/test-store
		export TEST_DIR=$work/test
		export SCRATCH_DEV=$work/scratch-store
		export SCRATCH_MNT=$work/scratch
		export TEST_FS_MOUNT_OPTS="-o allow_other"
		export MOUNT_OPTIONS="-o allow_other"
		export RESULT_BASE=$out/results
		export DF_PROG="$RESULTS/bin/df -T -P"
		export UMOUNT_PROG="$RESULTS/bin/umount"
	EOF
else
	for d in test scratch; do
		truncate -s 2G "$work/$d.img"
		loops+=("$(losetup -f --show "$work/$d.img")")
	done
	mkfs.ext4 -q -F "${loops[0]}"
	mkfs.ext4 -q -F "${loops[1]}"
	cat >"$cfg" <<-EOF
		export FSTYP=ext4
		export TEST_DEV=${loops[0]}
		export TEST_DIR=$work/test
		export SCRATCH_DEV=${loops[1]}
		export SCRATCH_MNT=$work/scratch
		export RESULT_BASE=$out/results
	EOF
fi

echo "xfstests $(git -C "$XFSTESTS" rev-parse HEAD 2>/dev/null || echo '?')" \
	"on $fstyp: ./check $*" | tee "$out/check.log"
cd "$XFSTESTS"
# the check runs in its own mount namespace (tests/helpers/own_ns.sh): its
# mounts are not seen by the rest of the machine, so another check's `df`
# (xfstests runs it with no argument, a statfs of every mount) or a test
# suite never holds them when a test unmounts ("target is busy"), and it
# holds no copy of theirs; its last mounts are unmounted in there, before
# the namespace (and its daemons) go
rc=0
W=$work HOST_OPTIONS=$cfg "$here/tests/helpers/own_ns.sh" \
	bash -c './check "$@"; rc=$?; umount "$W/test" "$W/scratch" 2>/dev/null; exit $rc' \
	check "$@" 2>&1 | tee -a "$out/check.log" || rc=$?
exit "$rc"
