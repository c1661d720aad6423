#!/usr/bin/env bash
# own_ns.sh COMMAND [ARGS...] - runs COMMAND in a mount namespace of its own
# (private propagation), as the mount tests (tests/mount/lib.sh) and the
# xfstests runs (scripts/xfstests.sh) do: the mounts COMMAND makes are seen
# by its own processes only, so nobody else's look at every mount (a df with
# no argument, another suite's fuser, a walk of /tmp) passes through one of
# them and holds it when COMMAND unmounts it. On FUSE such a statfs or stat
# is a round trip to the daemon, and holds the mount as long (for ever if
# the daemon is stopped): the unmount was refused as busy.
#
# The namespace starts as a copy of the caller's mounts. The copies of FUSE
# mounts and of mounts in the tests' temp dirs (/tmp/pathfs-*: another
# test's tmpfs) are detached at once: each would keep its file system alive
# after its owner unmounted it (a FUSE daemon would not see its unmount, and
# not exit) as long as COMMAND runs.
#
# Needs root (CAP_SYS_ADMIN). Exit status: COMMAND's.
set -eu
if [ -z "${PFS_OWN_NS:-}" ]; then
	export PFS_OWN_NS=1
	exec unshare --mount --propagation private -- "$0" "$@"
fi
# mountinfo: field 5 the mount point (octal escapes), the type after " - "
awk '{
	for (i = 7; i <= NF && $i != "-"; i++)
		;
	if ($(i + 1) ~ /^fuse/ || index($5, "/tmp/pathfs-") == 1)
		print $5
}' /proc/self/mountinfo | tac | while read -r m; do
	umount -l "$(printf '%b' "$m")" 2>/dev/null || true
done
exec "$@"
