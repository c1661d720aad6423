#!/usr/bin/env bash
# etcd_full.sh - a drive on an etcd cluster whose quota fills up
# (tests/with_etcd.sh --quota starts it with a small --quota-backend-bytes):
# writes fill it and then fail with ENOSPC (not EIO, the daemon lives on, a
# file whose write failed holds exactly the bytes the writer was told were
# written, an overwritten file keeps its old content), mkdir and create fail
# with ENOSPC too; the writer's lease is kept while the cluster is full (it
# is still the writer afterwards); rm of the files passes while the cluster
# is full; after the operator's compact, defrag and alarm disarm, writes
# succeed again; nothing is lost and fsck is clean.
source "$(dirname "$0")/lib.sh"

: "${PATHFS_TEST_ETCD:?run through tests/with_etcd.sh --quota BYTES}"
: "${PATHFS_TEST_ETCD_QUOTA:?run through tests/with_etcd.sh --quota BYTES}"
QUOTA=$PATHFS_TEST_ETCD_QUOTA
STORE="etcd://$PATHFS_TEST_ETCD/full$$?quota-bytes=$QUOTA&lease-ttl=3"
ETCDCTL=(env ETCDCTL_API=3 etcdctl --endpoints "$PATHFS_TEST_ETCD"
	--command-timeout=30s)

pfs_mount -o "log=$T/pathfs.log"
pid=$(pfs_pid)
check "mount of a new store on a cluster with a $QUOTA-byte quota" \
	mountpoint -q "$MNT"
check "df shows the quota" \
	bash -c "[ \$(df -B1 --output=size '$MNT' | tail -1) -eq $QUOTA ]"
mkdir "$MNT/keep" "$MNT/fill"
head -c 300000 /dev/urandom >"$T/old"
head -c 5000 /dev/urandom >"$T/small"
cp "$T/old" "$MNT/keep/old"
cp "$T/small" "$MNT/keep/small"

# ---- fill it: 1 MiB files written 128 KiB at a time until a write fails ----
# Prints the errno name of the failure, then the name of the file whose write
# failed; leaves the bytes that were acknowledged in $T/expect.
python3 - "$MNT/fill" "$T/expect" >"$T/fill.out" <<'EOF'
import errno, os, sys
d, expect = sys.argv[1], sys.argv[2]
for i in range(10000):
    name = os.path.join(d, "f%04d" % i)
    done = b""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as e:
        print(errno.errorcode[e.errno]); print(""); sys.exit(0)
    try:
        for _ in range(8):
            chunk = os.urandom(128 << 10)
            n = os.write(fd, chunk)
            done += chunk[:n]
            if n < len(chunk):
                raise OSError(errno.ENOSPC, "short write")
        os.close(fd)
    except OSError as e:
        try:
            os.close(fd)
        except OSError:
            pass
        open(expect, "wb").write(done)
        print(errno.errorcode[e.errno]); print(name); sys.exit(0)
print("NOFAIL"); print("")
EOF
err=$(sed -n 1p "$T/fill.out")
failed=$(sed -n 2p "$T/fill.out")
echo "# filled: $(ls "$MNT/fill" | wc -l) files, then $err on '${failed##*/}'"
check "writes that fill the quota fail with ENOSPC (got $err)" \
	[ "$err" = ENOSPC ]
check "the daemon survives a full cluster" kill -0 "$pid"
if [ -n "$failed" ]; then
	echo "# acknowledged $(stat -c %s "$T/expect") bytes, the file has $(stat -c %s "$failed")"
	check "the file whose write failed holds the acknowledged bytes" \
		cmp "$T/expect" "$failed"
fi

# an overwrite in place: fails, and what it did not write is the old content
python3 - "$MNT/keep/old" "$T/old" >"$T/over.out" <<'EOF'
import errno, os, sys
path, orig = sys.argv[1], sys.argv[2]
data = open(orig, "rb").read()
new = os.urandom(256 << 10)
fd = os.open(path, os.O_WRONLY)
done = 0
try:
    while done < len(new):
        done += os.write(fd, new[done:done + (128 << 10)])
    res = "OK"
except OSError as e:
    res = errno.errorcode[e.errno]
try:
    os.close(fd)
except OSError:
    pass
open(orig + ".expect", "wb").write(new[:done] + data[done:])
print(res)
EOF
check "an overwrite on a full cluster fails with ENOSPC (got $(cat "$T/over.out"))" \
	[ "$(cat "$T/over.out")" = ENOSPC ]
check "the overwritten file holds old content past the acknowledged bytes" \
	cmp "$T/old.expect" "$MNT/keep/old"
expect_errno ENOSPC "mkdir on a full cluster" mkdir "$MNT/newdir"
expect_errno ENOSPC "create on a full cluster" \
	bash -c "echo x >'$MNT/keep/new'"
check "reads pass on a full cluster" cmp "$T/small" "$MNT/keep/small"

# the writer's lease (3 s) must be kept while the cluster is full
sleep 5
check "the daemon still serves after twice its lease" kill -0 "$pid"

# ---- deletes pass on a full cluster -----------------------------------------
check "rm of the files passes on a full cluster" \
	bash -c "rm -f '$MNT'/fill/*"
check "the files are gone" [ -z "$(ls "$MNT/fill")" ]
expect_errno ENOSPC "writes still fail until the operator disarms the alarm" \
	bash -c "echo x >'$MNT/keep/new'"

# ---- the operator frees the space: compact, defrag, disarm ------------------
rev=$("${ETCDCTL[@]}" endpoint status -w json |
	python3 -c 'import json,sys; print(max(s["Status"]["header"]["revision"] for s in json.load(sys.stdin)))')
check "etcdctl compact" "${ETCDCTL[@]}" compact "$rev"
check "etcdctl defrag" "${ETCDCTL[@]}" defrag --cluster
check "etcdctl alarm disarm" "${ETCDCTL[@]}" alarm disarm
check "no alarm stands" bash -c "[ -z \"\$(${ETCDCTL[*]} alarm list)\" ]"

head -c 3000000 /dev/urandom >"$T/after"
check "writes succeed again after the alarm is disarmed" \
	cp "$T/after" "$MNT/keep/after"
check "the new file reads back" cmp "$T/after" "$MNT/keep/after"
check "rmdir of the emptied folder" rmdir "$MNT/fill"
check "mkdir" mkdir "$MNT/newdir"
check "the daemon is still the writer (same process)" \
	[ "$(pfs_pid)" = "$pid" ]
check "the small file is intact" cmp "$T/small" "$MNT/keep/small"
check "the overwritten file is intact" cmp "$T/old.expect" "$MNT/keep/old"
grep -E 'ERROR|EIO|Input/output' "$T/pathfs.log" | head -5 >&2 || true
pfs_umount
check "fsck is clean" "$PATHFSCTL" -s "$STORE" fsck
pfs_mount -o "log=$T/pathfs.log"
check "the files are there after a remount" \
	bash -c "cmp '$T/after' '$MNT/keep/after' && cmp '$T/old.expect' '$MNT/keep/old'"
pfs_umount
finish
