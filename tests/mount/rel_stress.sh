#!/usr/bin/env bash
# rel_stress.sh - 8 processes doing random creates, writes, appends,
# truncates, renames of files and folders, links, unlinks, mkdirs and rmdirs
# on overlapping paths of one mount for a bounded time (REL_STRESS_SECONDS,
# default 20). Every process predicts each result in its own subtree from a
# model and checks the errno of its racing calls in the shared one
# (tests/helpers/rel_stress.c). Then: the daemon is still up, no call hung,
# fsck is clean (mounted and unmounted), and after a remount every process's
# subtree is exactly what its model says.
source "$(dirname "$0")/rel_lib.sh"

N=8
rel_mount_fg
mkdir "$T/manifests"
check "8 processes, ${REL_STRESS_SECONDS:-20} s: every call as predicted, none hung" \
	timeout 300 "$REL_STRESS" -n $N -t "${REL_STRESS_SECONDS:-20}" \
	-m "$T/manifests" "$MNT"
check "daemon alive after the stress" rel_alive
check "fsck clean through the daemon" rel_fsck
check "shared area: every file reads" \
	timeout 60 find "$MNT/shared" -type f -exec cat {} + >/dev/null
rel_umount_fg
check "fsck clean on the unmounted store" rel_fsck
rel_mount_fg
for i in $(seq 0 $((N - 1))); do
	check "w$i: tree after remount matches its model" \
		timeout 60 "$REL_STRESS" check "$MNT/w$i" "$T/manifests/w$i.txt"
done
rel_umount_fg
rel_finish
