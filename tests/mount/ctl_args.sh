#!/usr/bin/env bash
# ctl_args.sh - hostile pathfsctl arguments (issue 7), the one suite for
# them: bad drive ids, paths without a leading '/', empty paths, empty, '.'
# and '..' names, over-long names and paths, unknown commands and options,
# bad counts (--max-items 0 too, which removed the whole branch), operations
# on '/' or into their own branch, and resume tokens
# that are empty, truncated, altered (at the end or in the middle), for
# another operation, other paths or another drive: the store's MAC'd token
# refuses them all. Each is refused with a message and exit 2 (usage);
# missing drives, paths and existing drives exit 1 or 2 with a message.
# Nothing changes: every key of the store is the same afterwards, unmounted
# and after the same run through the daemon. The genuine tokens still finish their jobs afterwards.
source "$(dirname "$0")/lib.sh"

C() { "$PATHFSCTL" -s "$STORE" "$@"; }
: "${REL_PLANT:=$BUILD_DIR/rel_plant}"

# refused DESCRIPTION ARGS...: pathfsctl ARGS must exit 2 with a message.
refused() {
	local what=$1 rc=0
	shift
	C "$@" >"$T/out" 2>"$T/err" || rc=$?
	CHECKS=$((CHECKS + 1))
	if [ "$rc" = 2 ] && [ -s "$T/err" ] && grep -q '^pathfsctl: ' "$T/err"; then
		echo "ok - $what (exit 2: $(head -n1 "$T/err" | cut -c1-90))"
	else
		echo "FAIL - $what: exit $rc, stderr: $(head -c 300 "$T/err")" >&2
		FAILS=$((FAILS + 1))
	fi
}

# rejected DESCRIPTION ARGS...: pathfsctl ARGS must exit 1 or 2 with a
# message (the operation's own errors, not only usage).
rejected() {
	local what=$1 rc=0
	shift
	C "$@" >"$T/out" 2>"$T/err" </dev/null || rc=$?
	CHECKS=$((CHECKS + 1))
	if { [ "$rc" = 1 ] || [ "$rc" = 2 ]; } && [ -s "$T/err" ]; then
		echo "ok - $what (exit $rc: $(head -n1 "$T/err" | cut -c1-90))"
	else
		echo "FAIL - $what: exit $rc, stderr: $(head -c 300 "$T/err")" >&2
		FAILS=$((FAILS + 1))
	fi
}

# forge TOKEN: TOKEN with one character in the middle of its MAC'd part
# changed to another valid one (the store's MAC is what refuses it).
forge() {
	python3 - "$1" <<'PY'
import sys
tok = sys.argv[1]
i = len(tok) // 2
print(tok[:i] + ("A" if tok[i] != "A" else "B") + tok[i + 1:])
PY
}

pfs_mount
python3 "$TREE_PY" gen "$MNT/data" 200 >/dev/null
pfs_umount
check "mkdrive other" C mkdrive other
# a stopped clone and a stopped rm, to have real tokens
TOKCP=$(C cp -r --max-items 20 /data /c | tail -n1) || true
TOKCP=${TOKCP#resume: }
check "a real cp token" grep -Eq '^[A-Za-z0-9_-]{40,}$' <<<"$TOKCP"
C cp -r /data /r >/dev/null
TOKRM=$(C rm -r --max-items 20 /r | tail -n1) || true
TOKRM=${TOKRM#resume: }
check "a real rm token" grep -Eq '^[A-Za-z0-9_-]{40,}$' <<<"$TOKRM"

LONG=$(printf 'n%.0s' $(seq 1 256))
LONGP=$(python3 -c "print('/d' * 16384)") # TREE_PATH_MAX + 1 bytes
DRV65=$(printf 'd%.0s' $(seq 1 65))
bad_args() {
	refused "bad drive id with '|'" -d 'a|b' ls /
	refused "bad drive id '../x'" -d '../x' ls /
	refused "empty drive id" -d '' ls /
	refused "drive id of 65 bytes" -d "$DRV65" ls /
	refused "bad drive in DRIVE:PATH" ls 'a|b:/data'
	refused "empty drive in DRIVE:PATH" ls ':/data'
	refused "mkdrive with a bad id" mkdrive 'has space'
	refused "rmdrive with a bad id" rmdrive 'x/y'
	refused "path without a leading /" ls data
	refused "rm -r of a relative path" rm -r data
	refused "cp -r to a relative path" cp -r /data copy
	refused "empty name in a path" stat /data//x
	refused "'..' in a path" rm -r /data/../r
	refused "'.' in a path" rm -r /data/./x
	refused "a name over 255 bytes" stat "/data/$LONG"
	refused "unknown command" frobnicate /
	refused "unknown option" ls --frob /
	refused "rm without -r" rm /r
	refused "rm -r of /" rm -r /
	refused "cp -r into its own branch" cp -r /data /data/x.y/in
	refused "mv into its own branch" mv /data /data/sub
	refused "mv of /" mv / /x
	refused "missing argument" cp -r /data
	refused "too many arguments" stat /data /r
	refused "--max-items not a number" rm -r --max-items many /r
	refused "--max-items negative" rm -r --max-items -5 /r
	refused "--max-items without a value" rm -r /r --max-items
	# 0 would read as "nothing", and was "no limit": the whole branch
	refused "--max-items 0 (rm -r)" rm -r --max-items 0 /r
	refused "--max-items=0 (cp -r)" cp -r --max-items=0 /data /c0
	refused "--max-items 00 (mv)" mv --max-items 00 /r /r0
	refused "garbage resume token" rm -r --resume garbage /r
	refused "truncated token" rm -r --resume "${TOKRM%???}" /r
	refused "token cut in half" rm -r --resume "${TOKRM:0:$((${#TOKRM} / 2))}" /r
	refused "altered token" cp -r --resume "$(printf '%s' "$TOKCP" | sed 's/\(.*\)[A-Za-z0-9]$/\1_/')" /data /c
	refused "token of cp given to rm" rm -r --resume "$TOKCP" /data
	refused "token of rm given to mv" mv --resume "$TOKRM" /r other:/r
	refused "token for other paths" cp -r --resume "$TOKCP" /data /elsewhere
	refused "token for another drive" -d other cp -r --resume "$TOKCP" /data /c
	refused "cp token altered in the middle" \
		cp -r --resume "$(forge "$TOKCP")" /data /c
	refused "rm token altered in the middle" rm -r --resume "$(forge "$TOKRM")" /r
	rejected "drive id with a space" -d 'a b' ls /
	rejected "missing drive" -d nosuch ls /
	rejected "cp -r to a bad drive id" cp -r /data 'bad|id:/x'
	rejected "cp -r to a missing drive" cp -r /data nosuch:/x
	rejected "empty path" ls ''
	rejected "path over 32767 bytes" rm -r "$LONGP"
	rejected "rm -r of a missing path" rm -r /nosuch
	rejected "empty token" rm -r --resume '' /r
	rejected "mkdrive of an existing drive" mkdrive main
	rejected "rmdrive of a missing drive" rmdrive nosuch
}

# ---- unmounted: every key must be unchanged ------------------------------
"$REL_PLANT" dump "$STORE" >"$T/dump.before"
bad_args
"$REL_PLANT" dump "$STORE" >"$T/dump.after"
same_file "unmounted: the store is byte for byte unchanged" "$T/dump.before" "$T/dump.after"

# ---- mounted: the daemon refuses the same, every key is unchanged --------
# (nothing reads the mount meanwhile: a read would move atimes)
pfs_mount
bad_args
rejected "rmdrive of the mounted drive" rmdrive main
check "the daemon still serves" test "$(C drives)" = "main (mounted)
other"
pfs_umount
"$REL_PLANT" dump "$STORE" >"$T/dump.after2"
same_file "mounted: the store is unchanged, key by key" "$T/dump.before" "$T/dump.after2"

# The real tokens still work after all that.
RC=0; C cp -r --resume "$TOKCP" /data /c >/dev/null || RC=$?
check "the genuine cp token still finishes the clone" test "$RC" = 0
RC=0; C rm -r --resume "$TOKRM" /r >/dev/null || RC=$?
check "the genuine rm token still finishes the delete" test "$RC" = 0
pfs_mount
check "... /r is gone" test ! -e "$MNT/r"
check "... /c equals /data" diff -r --no-dereference "$MNT/data" "$MNT/c"
pfs_umount
check "fsck --all is clean" C fsck --all

finish
