#!/usr/bin/env bash
# bench_smoke.sh - runs every pathfs-bench benchmark at a tiny size, so CI
# proves the bench works end to end: it mounts pathfs (and libfuse's
# passthrough_ll when its example source is installed), every workload passes
# its own checks (entry counts, content read back, tree gone after rm), and
# the CSV and plot hold what the tree's shape implies.
#
# Not a performance test: nothing here depends on timing.
. "$(dirname "$0")/lib.sh"

: "${PATHFS_BENCH:=$(dirname "$PATHFS")/../tools/pathfs-bench}"
# --no-drop-caches: cold runs are cold in the daemons only (a fresh daemon);
# dropping the kernel's caches would sync and drop every file system on the
# machine, the other suites running beside this one included.
B=("$PATHFS_BENCH" --tmp "$T" --pathfs "$PATHFS" --pathfsctl "$PATHFSCTL"
	--no-drop-caches)

# csv_get FILE BENCH TARGET METRIC UNIT: prints the value of one row.
csv_get() {
	awk -F, -v b="$2" -v t="$3" -v m="$4" -v u="$5" \
		'$1 == b && $2 == t && $3 == m && $5 == u {print $4; exit}' "$1"
}

# positive VALUE: a finite number above zero.
positive() {
	awk -v v="$1" 'BEGIN {exit !(v != "" && v != "nan" && v + 0 > 0)}'
}

# no_nan FILE BENCH: every row of BENCH has a finite value.
no_nan() {
	[ -s "$1" ] && ! awk -F, -v b="$2" '$1 == b && ($4 == "nan" || $4 == "inf")' "$1" | grep -q .
}

# --- subtree: 3 x 3 leaf folders, ceil(300 / 9) = 34 files each ---------------
# entries below the root: 3 + 9 folders + 306 files = 318.
check "subtree runs" "${B[@]}" subtree --files 300 --fanout 3 --depth 2 \
	--size 10 --runs 2 --csv "$T/sub.csv"
check "subtree csv: no failed medians" no_nan "$T/sub.csv" subtree
check "subtree: scan rate measured" positive \
	"$(csv_get "$T/sub.csv" subtree scan depth0_entries_per_s entries/s)"
check "subtree: a scan is one API call" test \
	"$(csv_get "$T/sub.csv" subtree scan depth0_api_calls calls)" = 1
check "subtree: the walk opens each of the 13 folders" test \
	"$(csv_get "$T/sub.csv" subtree walk depth0_api_calls calls)" = 13
check "subtree: one lookup per entry (318)" test \
	"$(csv_get "$T/sub.csv" subtree lookup depth0_api_calls calls)" = 318
check "subtree: lookups are one kv get each at least" awk -v v="$(csv_get \
	"$T/sub.csv" subtree lookup depth0_kv_roundtrips calls)" \
	'BEGIN {exit !(v >= 318)}'
check "subtree: a scan is a bounded number of kv round trips" awk -v v="$(csv_get \
	"$T/sub.csv" subtree scan depth0_kv_roundtrips calls)" \
	'BEGIN {exit !(v >= 1 && v <= 4)}'
check "subtree: depth 2 branch measured" positive \
	"$(csv_get "$T/sub.csv" subtree walk depth2_entries_per_s entries/s)"

# --- mount: pathfs vs host (vs passthrough_ll), tiny --------------------------
pt=()
if [ -e /usr/share/doc/libfuse3-dev/examples/passthrough_ll.c ] ||
	[ -e /usr/share/doc/libfuse3-dev/examples/passthrough_ll.c.gz ]; then
	pt=(--vs-passthrough)
else
	echo "# passthrough_ll source not installed: pathfs and host only"
fi
# tar x, cp -a and rsync -a of small real folders of the source tree
check "mount runs" "${B[@]}" mount --files 200 --fanout 2 --depth 2 --size 50 \
	--write-mb 4 --churn 300 --runs 1 "${pt[@]}" --csv "$T/mnt.csv" \
	--copy-src "$TESTS_DIR/helpers" --tar-src "$TESTS_DIR/mount" \
	--plot "$T/mnt.png"
check "mount csv: no failed medians" no_nan "$T/mnt.csv" mount
for m in create_tree find_cold find_warm du_s ls_lR ls_lR_cold stat_all mv_folder \
	cp_a_folder rm_rf_tree create_stat_unlink tar_x cp_a_real rsync_a_real \
	write_fsync read_cold; do
	check "mount: pathfs $m measured" positive \
		"$(csv_get "$T/mnt.csv" mount pathfs $m s)"
	check "mount: host $m measured" positive \
		"$(csv_get "$T/mnt.csv" mount host $m s)"
	check "mount: tmpfs $m measured" positive \
		"$(csv_get "$T/mnt.csv" mount tmpfs $m s)"
	check "mount: pathfs/tmpfs ratio of $m" positive \
		"$(csv_get "$T/mnt.csv" mount ratio_vs_tmpfs $m x)"
	if [ ${#pt[@]} -gt 0 ]; then
		check "mount: passthrough $m measured" positive \
			"$(csv_get "$T/mnt.csv" mount passthrough $m s)"
	fi
done
check "mount: pathfsctl du measured" positive \
	"$(csv_get "$T/mnt.csv" mount pathfs pathfsctl_du s)"
check "mount: pathfsctl rm -r measured" positive \
	"$(csv_get "$T/mnt.csv" mount pathfs pathfsctl_rm_r s)"
check "mount: plot drawn" test -s "$T/mnt.png"
# only the workloads asked for (the tree is always made)
check "mount --workloads runs" "${B[@]}" mount --files 50 --fanout 2 --depth 1 \
	--runs 1 --targets pathfs,host --workloads rm_rf_tree --csv "$T/only.csv"
check "mount --workloads: the tree and rm -rf measured" positive \
	"$(csv_get "$T/only.csv" mount pathfs rm_rf_tree s)"
check "mount --workloads: nothing else measured" test \
	"$(awk -F, '$1 == "mount" && $2 == "pathfs" && $5 == "s"' "$T/only.csv" |
		cut -d, -f3 | sort | tr '\n' ' ')" = "create_tree rm_rf_tree "
check "mount: nothing left mounted" bash -c \
	"! awk -v t='$T' 'index(\$2, t) == 1' /proc/mounts | grep -q ."

# --- rename: two sizes, pathfs mv next to host mv ------------------------------
check "rename runs" "${B[@]}" rename --sizes 100,1500 --runs 2 \
	--csv "$T/ren.csv"
check "rename csv: no failed medians" no_nan "$T/ren.csv" rename
check "rename: in-process rewrite rate" positive \
	"$(csv_get "$T/ren.csv" rename inproc n1500 entries/s)"
check "rename: mv through the mount" positive \
	"$(csv_get "$T/ren.csv" rename pathfs n1500 s)"
check "rename: host mv" positive "$(csv_get "$T/ren.csv" rename host n1500 s)"

# --- usage errors --------------------------------------------------------------
usage_fails() {
	local rc=0
	"$@" >/dev/null 2>&1 || rc=$?
	[ "$rc" -eq 2 ]
}
check "unknown benchmark is a usage error" usage_fails "$PATHFS_BENCH" nosuch
check "bad number is a usage error" usage_fails "$PATHFS_BENCH" subtree \
	--files many
finish
