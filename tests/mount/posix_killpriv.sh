#!/usr/bin/env bash
# posix_killpriv.sh - the daemon clears set-user-ID and set-group-ID itself
# (FUSE_HANDLE_KILLPRIV_V2, negotiated by fs/devio.c), so the kernel stops
# asking for security.capability before every write:
# - a loop of pwrites into one file sends at most one GETXATTR (one per write
#   before), with the request loop and with -s (libfuse's loop);
# - what writes, truncates, open(O_TRUNC), fallocate (allocate, keep size,
#   punch, zero), chown and chgrp leave of the set-user-ID and set-group-ID
#   bits and of security.capability is what the host folder ($T, ext4 here)
#   leaves, case by case: by root, by nobody outside the file's group, in it
#   by its primary or a supplementary group, and as the file's owner; and
#   again after root set the bits back on a file written before (the
#   kernel's S_NOSEC mark must not survive a chmod).
source "$(dirname "$0")/lib.sh"
sanitizer_logs

ctl() { "$PATHFSCTL" -s "$STORE" "$@"; }
# count JSON OPCODE: the count of OPCODE in `stats --json` output (0 if absent)
count() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["ops"].get(sys.argv[2], {}).get("count", 0))' "$1" "$2"; }
chmod 755 "$T" # let nobody reach the mountpoint (allow_other below)

# pwrites FILE N: N 4 KiB pwrites into FILE through one open
pwrites() {
	python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
for i in range(int(sys.argv[2])):
    os.pwrite(fd, b"w" * 4096, (i * 7919 % 256) * 4096)
os.close(fd)' "$1" "$2"
}

# getxattr_counts PREFIX: GETXATTRs counted over 200 pwrites into a file
# written before, and over 20 new files (PREFIX0..19) written 10 times each
getxattr_counts() {
	head -c 1M /dev/urandom >"$MNT/pw"
	ctl stats --reset >/dev/null
	pwrites "$MNT/pw" 200
	j=$(ctl stats --json)
	g1=$(count "$j" GETXATTR)
	w1=$(count "$j" WRITE)
	ctl stats --reset >/dev/null
	python3 -c '
import os, sys
for n in range(20):
    fd = os.open(f"{sys.argv[1]}{n}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    for i in range(10):
        os.write(fd, b"c" * 10240)
    os.close(fd)' "$1"
	j=$(ctl stats --json)
	g2=$(count "$j" GETXATTR)
	w2=$(count "$j" WRITE)
}

for mode in loop single; do
	opt=()
	[ $mode = single ] && opt=(-s)
	pfs_mount "${opt[@]}"
	getxattr_counts "$MNT/$mode"
	check "$mode: 200 pwrites into a written file: $w1 WRITEs, $g1 GETXATTRs (at most 1)" \
		[ "$w1" -ge 200 -a "$g1" -le 1 ]
	check "$mode: 20 created files written 10 times each: $w2 WRITEs, $g2 GETXATTRs (one per file at most)" \
		[ "$w2" -ge 200 -a "$g2" -le 20 ]
	check "$mode: the bytes are there" cmp <(head -c $((10240 * 10)) /dev/zero | tr '\0' c) "$MNT/${mode}7"
	pfs_umount
done

# ---- the bits and security.capability, against the host folder ------------
# cases DIR: runs every case in DIR (a fresh folder) and prints one line per
# case: its name, the mode left, whether security.capability is left
cases() {
	python3 - "$1" <<'PY'
import os, subprocess, sys
d = sys.argv[1]
NOBODY, NOGROUP, USERS = 65534, 65534, 100
callers = {
    # name: (setpriv prefix, file owner uid, file gid)
    "root": ([], 0, 0),
    "other": (["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"], 0, 0),
    "ingroup": (["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"], 0, NOGROUP),
    "suppgroup": (["setpriv", "--reuid=nobody", "--regid=nogroup", "--groups=users"], 0, USERS),
    "owner": (["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"], NOBODY, 0),
}
ops = {
    "append": ["sh", "-c", 'echo x >>"$0"'],
    "pwrite": ["dd", "if=/dev/zero", "bs=1", "count=3", "seek=5", "conv=notrunc", "status=none", "of={}"],
    "truncate": ["truncate", "-s", "10", "{}"],
    "otrunc": ["sh", "-c", ': >"$0"'],
    "falloc": ["fallocate", "-l", "100000", "{}"],
    "keepsize": ["fallocate", "-n", "-o", "0", "-l", "300000", "{}"],
    "punch": ["fallocate", "-p", "-o", "0", "-l", "4096", "{}"],
    "zero": ["fallocate", "-z", "-o", "0", "-l", "4096", "{}"],
    "chown-self": ["sh", "-c", 'chown "$(id -u)" "$0"'],
    "chgrp-own": ["sh", "-c", 'chgrp "$(id -g)" "$0"'],
}
CAP = bytes.fromhex("0100000200200000000000000000000000000000")  # cap_net_raw+ep
modes = [0o4777, 0o2767, 0o2777, 0o6767, 0o0777]
n = 0
for cname, (pre, uid, gid) in callers.items():
    for oname, cmd in ops.items():
        for mode in modes:
            for cap in (False, True):
                if cap and mode not in (0o0777, 0o6767):
                    continue
                n += 1
                f = f"{d}/f{n}"
                with open(f, "wb") as fh:
                    fh.write(b"0123456789" * 100)
                os.chown(f, uid, gid)
                os.chmod(f, mode)
                if cap:
                    os.setxattr(f, "security.capability", CAP)
                argv = [a.replace("{}", f) for a in cmd]
                if argv[0] == "sh":
                    argv.append(f)
                r = subprocess.run(pre + argv, capture_output=True)
                st = os.stat(f)
                try:
                    has = bool(os.getxattr(f, "security.capability"))
                except OSError:
                    has = False
                print(f"{cname:9} {oname:10} {mode:05o} cap={int(cap)}: rc={r.returncode} "
                      f"mode={st.st_mode & 0o7777:05o} cap={int(has)}")
                # a second round after root sets the bits again: a file
                # written once must not keep the kernel's no-check mark
                if oname in ("append", "pwrite") and not cap:
                    os.chmod(f, mode)
                    r = subprocess.run(pre + argv, capture_output=True)
                    st = os.stat(f)
                    print(f"{cname:9} {oname:10} {mode:05o} again: rc={r.returncode} "
                          f"mode={st.st_mode & 0o7777:05o}")
PY
}

mkdir "$T/host"
chmod 755 "$T/host"
cases "$T/host" >"$T/host.txt"
pfs_mount -o allow_other
mkdir "$MNT/c"
chmod 755 "$MNT/c"
cases "$MNT/c" >"$T/pfs.txt"
n=$(wc -l <"$T/host.txt")
check "every case ran on the host folder ($(stat -f -c %T "$T")) and on pathfs ($n lines)" \
	[ "$n" -gt 300 -a "$(wc -l <"$T/pfs.txt")" = "$n" ]
check "on the host, nobody's write clears the bits and root's does not (the test can tell)" \
	bash -c "grep -q '^other .*append .*06767 cap=0: rc=0 mode=00767' '$T/host.txt' &&
		grep -q '^root .*append .*06767 cap=0: rc=0 mode=06767' '$T/host.txt'"
if ! diff "$T/host.txt" "$T/pfs.txt" >"$T/diff.txt"; then
	echo "pathfs differs from the host folder (< host, > pathfs):" >&2
	cat "$T/diff.txt" >&2
fi
check "set-user-ID, set-group-ID and security.capability left as on the host, in all $n cases" \
	[ ! -s "$T/diff.txt" ]
pfs_umount

finish
