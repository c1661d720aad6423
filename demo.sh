#!/usr/bin/env bash
# Sets pathfs up on a fresh Debian 12 machine and mounts a demo drive:
# installs the packages it needs, builds, creates an embedded store and mounts
# its drive "main", logging to pathfs.log beside the store. The demo files are
# written once, when the store is new: a rerun mounts the drive again (if it
# is not mounted) and leaves its files as the user left them. Needs root (or
# sudo) for the packages.
#   ./demo.sh [STORE [MOUNTPOINT]]
set -euo pipefail
cd "$(dirname "$0")"
scripts/deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null

store=${1:-/var/tmp/pathfs-demo/store}
mnt=${2:-/var/tmp/pathfs-demo/mnt}
mkdir -p "$(dirname "$store")" "$mnt"
store=$(cd "$(dirname "$store")" && pwd)/$(basename "$store")
log=$(dirname "$store")/pathfs.log
new=false
[ -e "$store" ] || new=true
if mountpoint -q "$mnt"; then
	echo "pathfs: $mnt is already mounted"
else
	build/fs/pathfs -o log="$log" "$store" "$mnt"
fi
if $new; then
	echo "Welcome to pathfs: every file and folder here is one RocksDB key." \
		>"$mnt/README.txt"
	mkdir -p "$mnt/docs/notes"
	cp README.md "$mnt/docs/"
fi
echo "pathfs: drive 'main' of store $store is mounted at $mnt"
echo "pathfs: the daemon logs to $log"
echo "pathfs: try: build/tools/pathfsctl -s $store du /"
echo "pathfs: unmount with: fusermount3 -u $mnt"
