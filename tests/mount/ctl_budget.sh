#!/usr/bin/env bash
# ctl_budget.sh - budgeted branch operations of pathfsctl (issue 5): rm -r,
# cp -r and a cross-drive mv run in slices of --max-items, each slice ending
# with "resume: TOKEN" as its last line and exit 3, until done; the result must
# equal the same operation done in one go. Unmounted (pathfsctl opens the
# store) and mounted (the daemon runs the slices, the mount shows them).
# On RocksDB, or on the engine tests/with_etcd.sh or tests/with_dynamodb.sh
# started (PATHFS_TEST_KV): etcd_budget, dynamodb_budget.
source "$(dirname "$0")/lib.sh"

# files in the branch (a remote engine's round trips: fewer there)
FILES=550
case ${PATHFS_TEST_KV:-} in
etcd) STORE="etcd://$PATHFS_TEST_ETCD/bud$$" FILES=250 ;;
dynamodb) STORE="dynamodb://bud$$?endpoint=$PATHFS_TEST_DYNAMODB&lease-ttl=20" FILES=250 ;;
esac

C() { "$PATHFSCTL" -s "$STORE" "$@"; }

# sliced N OP ARGS...: runs "OP ARGS" with --max-items N, resuming with each
# printed token until the exit status is not 3. Sets SLICES and BADTAIL (the
# slices whose last stdout line was not "resume: TOKEN"); returns the last
# exit status; LAST holds the last slice's output.
sliced() {
	local n=$1 op=$2 tok="" out rc
	shift 2
	SLICES=0
	BADTAIL=0
	while :; do
		rc=0
		if [ -n "$tok" ]; then
			out=$(C $op --max-items "$n" --resume "$tok" "$@") || rc=$?
		else
			out=$(C $op --max-items "$n" "$@") || rc=$?
		fi
		SLICES=$((SLICES + 1))
		LAST=$out
		[ "$rc" -eq 3 ] || return "$rc"
		tok=$(printf '%s\n' "$out" | tail -n1)
		[[ "$tok" == "resume: "* ]] || BADTAIL=$((BADTAIL + 1))
		tok=${tok#resume: }
		[ "$SLICES" -lt 500 ] || return 99
	done
}

pfs_mount -o "log=$T/pathfs.log"
python3 "$TREE_PY" gen "$MNT/data" $FILES >/dev/null
manifest "$MNT/data" "$T/data.m" --no-dir-mtime
N=$(find "$MNT/data" | wc -l)
pfs_umount
echo "# branch of $N entries"

# ---- unmounted ---------------------------------------------------------
check "unmounted: cp -r in one go" C cp -r /data /one
RC=0; sliced 80 "cp -r" /data /sliced || RC=$?
check "unmounted: sliced cp -r ends with exit 0" test "$RC" = 0
check "unmounted: ... after several slices ($SLICES)" test "$SLICES" -ge $((N / 80))
check "unmounted: ... each stopped slice printed resume: last" test "$BADTAIL" = 0
check "unmounted: the last slice prints no resume line" \
	test "${LAST/resume:/}" = "$LAST"
check "unmounted: mkdrive other" C mkdrive other
RC=0; sliced 150 mv /sliced other:/moved || RC=$?
check "unmounted: sliced mv to another drive ends with exit 0 ($SLICES slices)" test "$RC" = 0
check "unmounted: ... in several slices" test "$SLICES" -ge 3
RC=0; C stat /sliced >/dev/null 2>&1 || RC=$?
check "unmounted: the moved branch left its drive" test "$RC" = 1
check "unmounted: cp -r /data /rmme" C cp -r /data /rmme
RC=0; sliced 90 "rm -r" /rmme || RC=$?
check "unmounted: sliced rm -r ends with exit 0 ($SLICES slices)" test "$RC" = 0
check "unmounted: ... in several slices" test "$SLICES" -ge $((N / 90))
RC=0; C stat /rmme >/dev/null 2>&1 || RC=$?
check "unmounted: the removed branch is gone" test "$RC" = 1
check "unmounted: fsck --all is clean" C fsck --all

# A summary line per count, and --json for scripts.
C cp -r --max-items 10 --json /data /j >"$T/j.json" || true
check "unmounted: --json summary of a stopped slice" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["processed"] == 10 and d["done"] is False and len(d["resume"]) > 40, d' "$T/j.json"
RC=0; C cp -r --resume "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["resume"])' "$T/j.json")" /data /j >"$T/j.out" || RC=$?
check "unmounted: resuming it without a budget finishes (exit 0)" test "$RC" = 0
check "unmounted: ... and prints the summary" grep -q "^processed: $((N - 10))$" "$T/j.out"
check "unmounted: rm -r /j" C rm -r /j

# ---- mounted: the daemon runs the slices ----------------------------------
pfs_mount -o "log=$T/pathfs.log"
manifest "$MNT/one" "$T/one.m" --no-dir-mtime
same_file "the one-go clone equals the original" "$T/data.m" "$T/one.m"
check "the sliced move left nothing on main" test ! -e "$MNT/sliced" -a ! -e "$MNT/rmme"

ls -laR "$MNT" >/dev/null
RC=0; sliced 150 "cp -r" /data /mcopy || RC=$?
check "mounted: sliced cp -r ends with exit 0 ($SLICES slices)" test "$RC" = 0
manifest "$MNT/mcopy" "$T/mcopy.m" --no-dir-mtime
same_file "mounted: the sliced clone equals the original" "$T/data.m" "$T/mcopy.m"
C rm -r --max-items 100 /mcopy >"$T/part.out" || true
check "mounted: a stopped rm -r slice prints resume: last" \
	bash -c "tail -n1 '$T/part.out' | grep -Eq '^resume: [A-Za-z0-9_-]{40,}$'"
check "mounted: ... and the mount shows the branch partly removed" \
	test "$(find "$MNT/mcopy" | wc -l)" -eq $((N - 100))
RC=0; sliced 150 "rm -r" /mcopy || RC=$?
check "mounted: sliced rm -r finishes (exit 0)" test "$RC" = 0
check "mounted: the mount shows the branch gone" test ! -e "$MNT/mcopy"
# A progress bar on stderr when it is a terminal (script(1) gives one), drawn
# by the daemon through the socket; none when it is not.
script -qec "'$PATHFSCTL' -s '$STORE' cp -r /data /pcopy" /dev/null >"$T/tty.out" 2>&1 || true
check "mounted: a terminal gets a progress bar (done/total, rate)" \
	grep -aq "cp -r: [0-9]*/$N (100%) [0-9]*/s" "$T/tty.out"
C rm -r /pcopy >"$T/notty.out" 2>&1
check "mounted: no progress bar when stderr is not a terminal" \
	bash -c "! grep -aq '/s' '$T/notty.out'"
check "mounted: fsck is clean" C fsck
pfs_umount

pfs_mount -o drive=other -o "log=$T/pathfs.log"
manifest "$MNT/moved" "$T/moved.m" --no-dir-mtime
same_file "the sliced cross-drive move equals the original" "$T/data.m" "$T/moved.m"
pfs_umount
check "fsck --all is clean at the end" C fsck --all

finish
