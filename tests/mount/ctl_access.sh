#!/usr/bin/env bash
# ctl_access.sh - the control socket and store opening (issues 5 and 7): the
# socket is mode 0600; another unprivileged user is refused, both by the mode
# bits and, past them, by the daemon's peer-credential check, which logs it;
# root is served; a stale socket left by a killed daemon neither stops
# pathfsctl (it opens the store itself) nor the next daemon; a store held by a
# process that does not answer, a missing store and a store of a newer
# format each give one clear line and exit 1 (a directory that is not a
# store: rel_open_errors.sh).
# Planted damage (a node value that does not decode) makes fsck, du, ls and
# rm -r exit 1 naming it, unmounted and through the daemon.
source "$(dirname "$0")/lib.sh"

C() { "$PATHFSCTL" -s "$STORE" "$@"; }
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
: "${REL_PLANT:=$BUILD_DIR/rel_plant}"

# nobody must be able to reach the socket for the daemon to refuse it
chmod 755 "$T"
"$PATHFS" -f "$STORE" "$MNT" 2>"$T/daemon.log" &
for i in $(seq 1 100); do
	mountpoint -q "$MNT" && break
	sleep 0.05
done
check "mounted in the foreground" mountpoint -q "$MNT"
chmod 755 "$STORE"
mkdir "$MNT/data"
echo keep >"$MNT/data/file"

check "the socket is mode 0600, owned by the mounting user" \
	test "$(stat -c '%a %u' "$STORE/pathfs.sock")" = "600 $(id -u)"
check "root is served" test "$(C drives)" = "main (mounted)"

RC=0
"${NOBODY[@]}" "$PATHFSCTL" -s "$STORE" rm -r /data >/dev/null 2>"$T/n1.err" || RC=$?
check "nobody is refused by the socket's mode (exit 1)" test "$RC" = 1
check "... with a clear message" grep -q "refuses you" "$T/n1.err"

# Past the mode bits, the daemon's own check must hold.
chmod 666 "$STORE/pathfs.sock"
RC=0
"${NOBODY[@]}" "$PATHFSCTL" -s "$STORE" rm -r /data >/dev/null 2>"$T/n2.err" || RC=$?
check "with the socket opened up, the daemon still refuses nobody (exit 1)" test "$RC" = 1
check "... and says so" grep -q "the daemon refused" "$T/n2.err"
check "... the daemon logged the refusal with the uid" \
	grep -q "control: refused uid $(id -u nobody)" "$T/daemon.log"
check "... nothing changed" test "$(cat "$MNT/data/file")" = keep
chmod 600 "$STORE/pathfs.sock"
check "root is still served after the refusals" test "$(C drives)" = "main (mounted)"

# A store held by a process that does not answer: one clear line.
mv "$STORE/pathfs.sock" "$T/sock.aside"
RC=0
C drives >/dev/null 2>"$T/busy.err" || RC=$?
check "store held, no socket: exit 1" test "$RC" = 1
check "... saying another process holds it" grep -q "held by another process" "$T/busy.err"
check "... in one line" test "$(wc -l <"$T/busy.err")" = 1
mv "$T/sock.aside" "$STORE/pathfs.sock"
check "the socket back, pathfsctl reaches the daemon again" \
	bash -c "'$PATHFSCTL' -s '$STORE' stat /data/file >/dev/null"

# kill -9: the socket file stays behind, stale.
kill -9 "$(pfs_pid)"
pfs_reap
check "a stale socket file is left by the killed daemon" test -S "$STORE/pathfs.sock"
check "pathfsctl falls back to opening the store itself" test "$(C drives)" = main
check "... and reads it" bash -c "'$PATHFSCTL' -s '$STORE' ls /data | grep -q ' file$'"
pfs_mount
check "the next daemon starts over the stale socket" test "$(C drives)" = "main (mounted)"
check "... serving a fresh socket of mode 0600" test "$(stat -c %a "$STORE/pathfs.sock")" = 600
pfs_umount
check "unmounting removes the socket" test ! -e "$STORE/pathfs.sock"

# Stores pathfsctl cannot open.
RC=0
"$PATHFSCTL" -s "$T/missing" drives 2>"$T/e1" || RC=$?
check "a missing store: exit 1" test "$RC" = 1
check "... one clear line" bash -c "[ \$(wc -l <'$T/e1') = 1 ] && grep -q 'no store at' '$T/e1'"
check "... and nothing is created" test ! -e "$T/missing"
# Planted damage: fsck finds it (exit 1, the path named), unmounted and
# through the daemon; du, ls and rm -r say what they could not read.
if [ -x "$REL_PLANT" ]; then
	C cp -r /data /dmg >/dev/null
		"$REL_PLANT" node "$STORE" main /data/file >/dev/null
	RC=0
	C fsck >"$T/fsck.out" 2>&1 || RC=$?
	check "fsck of a planted bad node: exit 1" test "$RC" = 1
	check "... the finding names the path" grep -q "/data/file" "$T/fsck.out"
	C fsck --json >"$T/fsck.json" 2>/dev/null || true
	check "... fsck --json counts it" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d[0]["count"] >= 1 and any("/data/file" in f for f in d[0]["findings"]), d' "$T/fsck.json"
	RC=0
	C du --json /data >"$T/du.json" 2>/dev/null || RC=$?
	check "du: exit 1, the bad node counted unreadable" bash -c \
		"[ $RC = 1 ] && grep -q '\"unreadable\": 1' '$T/du.json'"
	RC=0
	C ls /data >/dev/null 2>"$T/ls.err" || RC=$?
	check "ls: exit 1, saying which entry does not decode" bash -c \
		"[ $RC = 1 ] && grep -q 'ls: /data/file: record does not decode' '$T/ls.err'"
	pfs_mount
	RC=0
	C fsck >"$T/fsck2.out" 2>&1 || RC=$?
	check "fsck through the daemon: exit 1 too" test "$RC" = 1
	check "... naming the path" grep -q "/data/file" "$T/fsck2.out"
	RC=0
	C rm -r /data >"$T/rm.out" 2>&1 || RC=$?
	check "rm -r through the daemon: exit 1, the bad node listed with its reason" \
		bash -c "[ $RC = 1 ] && grep -q '^failed: [1-9]' '$T/rm.out' && grep -q '/data/file: value does not decode' '$T/rm.out'"
	check "... the branch's root stays as the anchor" test -d "$MNT/data"
	check "... the healthy branch next to it is untouched" test "$(cat "$MNT/dmg/file")" = keep
	pfs_umount
	"$REL_PLANT" meta "$STORE" main 99 >/dev/null
	RC=0
	C drives 2>"$T/e3" || RC=$?
	check "a store of a newer format: exit 1" test "$RC" = 1
	check "... one clear line" bash -c "[ \$(wc -l <'$T/e3') = 1 ] && grep -q 'newer pathfs' '$T/e3'"
fi
RC=0
env -u PATHFS_STORE "$PATHFSCTL" drives 2>"$T/e4" || RC=$?
check "no store given: usage error (exit 2)" test "$RC" = 2

finish
