#!/usr/bin/env bash
# bench_smoke.sh - runs every pathfs-bench benchmark at a tiny size, so CI
# proves the bench works end to end: `mount` makes each of its references
# itself (a fresh ext4 loop image, a tmpfs, pathfs-floor; a folder with
# --host) and mounts pathfs, every workload passes its own checks (entry
# counts, content read back, tree gone after rm), the requests per created
# file are counted for pathfs and the floor, nothing stays mounted, and the
# CSV and plot hold what the tree's shape implies.
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

# --- mount: pathfs vs a fresh ext4, tmpfs and the floor, tiny ---------------
# mount_run ARGS...: pathfs-bench mount, its table in $T/mnt.out
mount_run() { "${B[@]}" mount "$@" >"$T/mnt.out"; }
# tar x, cp -a and rsync -a of small real folders of the source tree
check "mount runs" mount_run --files 200 --fanout 2 --depth 2 --size 50 \
	--write-mb 4 --churn 300 --runs 1 --csv "$T/mnt.csv" \
	--copy-src "$TESTS_DIR/helpers" --tar-src "$TESTS_DIR/mount" \
	--plot "$T/mnt.png"
check "mount csv: no failed medians" no_nan "$T/mnt.csv" mount
check "mount: the ext4 column is an image made for the run" \
	grep -q '^ext4: a [0-9]* MiB image formatted for each run' "$T/mnt.out"
for m in create_tree find_cold find_warm du_s ls_lR ls_lR_cold stat_all mv_folder \
	cp_a_folder rm_rf_tree create_stat_unlink tar_x cp_a_real rsync_a_real \
	write_fsync read_cold; do
	for t in pathfs ext4 tmpfs floor; do
		check "mount: $t $m measured" positive \
			"$(csv_get "$T/mnt.csv" mount $t $m s)"
	done
	for t in ext4 tmpfs floor; do
		check "mount: pathfs/$t ratio of $m" positive \
			"$(csv_get "$T/mnt.csv" mount ratio_vs_$t $m x)"
	done
done
check "mount: pathfsctl du measured" positive \
	"$(csv_get "$T/mnt.csv" mount pathfs pathfsctl_du s)"
check "mount: pathfsctl rm -r measured" positive \
	"$(csv_get "$T/mnt.csv" mount pathfs pathfsctl_rm_r s)"
# creating a file is a LOOKUP, CREATE, GETXATTR, WRITE, RELEASE and the
# folder's GETATTR: about 6 requests, one of them a CREATE
for t in pathfs floor; do
	check "mount: $t's requests per created file counted (5 to 8)" awk \
		-v v="$(csv_get "$T/mnt.csv" mount $t create_requests_per_file \
			req/file)" 'BEGIN {exit !(v >= 5 && v <= 8)}'
	check "mount: $t got one CREATE per created file" test \
		"$(csv_get "$T/mnt.csv" mount $t create_CREATE_per_file req/file)" = 1
done
check "mount: the table gives the requests per file" \
	grep -Eq '^  floor +[0-9.]+: .*CREATE 1.00' "$T/mnt.out"
check "mount: plot drawn" test -s "$T/mnt.png"
# only the workloads asked for (the tree is always made), the ext4 column
# in a folder named by --host
mkdir "$T/host"
check "mount --workloads --host runs" "${B[@]}" mount --files 50 --fanout 2 \
	--depth 1 --runs 1 --targets pathfs,ext4 --host "$T/host" \
	--workloads rm_rf_tree --csv "$T/only.csv"
check "mount --workloads: the tree and rm -rf measured" positive \
	"$(csv_get "$T/only.csv" mount ext4 rm_rf_tree s)"
check "mount --workloads: nothing else measured" test \
	"$(awk -F, '$1 == "mount" && $2 == "pathfs" && $5 == "s"' "$T/only.csv" |
		cut -d, -f3 | sort | tr '\n' ' ')" = "create_tree rm_rf_tree "
check "mount --host: its folder left empty" test -z "$(ls -A "$T/host")"
check "mount: nothing left mounted" bash -c \
	"! awk -v t='$T' 'index(\$2, t) == 1' /proc/mounts | grep -q ."
usage_fails() {
	local rc=0
	"$@" >/dev/null 2>&1 || rc=$?
	[ "$rc" -eq 2 ]
}
check "mount: --vs-passthrough is gone (a usage error)" usage_fails \
	"${B[@]}" mount --vs-passthrough

# --- rename: two sizes, pathfs mv next to host mv ------------------------------
# the host's mv and the store on an ext4 image made for the run
ren_run() { "${B[@]}" rename "$@" 2>"$T/ren.err"; }
check "rename runs" ren_run --sizes 100,1500 --runs 2 --csv "$T/ren.csv"
check "rename: the host is a fresh ext4 image" \
	grep -q 'a fresh [0-9]* MiB ext4 image mounted on .*/ext4$' "$T/ren.err"
check "rename csv: no failed medians" no_nan "$T/ren.csv" rename
check "rename: in-process rewrite rate" positive \
	"$(csv_get "$T/ren.csv" rename inproc n1500 entries/s)"
check "rename: mv through the mount" positive \
	"$(csv_get "$T/ren.csv" rename pathfs n1500 s)"
check "rename: host mv" positive "$(csv_get "$T/ren.csv" rename host n1500 s)"

# --- content: churn, pwrite and sqlite, pathfs next to ext4 and tmpfs ----------
con_run() { "${B[@]}" content "$@" 2>"$T/con.err"; }
check "content runs" con_run --big-mb 2 --content-files 20 --pwrites 20 \
	--sqlite-rows 2000 --runs 1 --csv "$T/con.csv"
check "content csv: no failed medians" no_nan "$T/con.csv" content
check "content: the host is a fresh ext4 image" \
	grep -q 'a fresh [0-9]* MiB ext4 image mounted on .*/ext4$' "$T/con.err"
for t in pathfs host tmpfs; do
	check "content: $t pwrite measured" positive \
		"$(csv_get "$T/con.csv" content $t pwrite4k us)"
	check "content: $t sqlite measured" positive \
		"$(csv_get "$T/con.csv" content $t sqlite_wal_s s)"
done
check "rename, content: nothing left mounted" bash -c \
	"! awk -v t='$T' 'index(\$2, t) == 1' /proc/mounts | grep -q ."

# --- backends --writers: shared writers of one etcd drive, tiny --------------
# (the bench starts its own 3-member cluster on loopback and stops it)
check "backends --writers runs" "${B[@]}" backends --writers 2 --churn 5 \
	--files 150 --runs 1 --csv "$T/wr.csv"
check "writers csv: no failed rows" no_nan "$T/wr.csv" writers
for n in sole 1-shared 2-shared; do
	check "writers: $n create/stat/unlink measured" positive \
		"$(csv_get "$T/wr.csv" writers etcd \
			create_stat_unlink_${n}_one files/s)"
	check "writers: $n mv of its folder measured" positive \
		"$(csv_get "$T/wr.csv" writers etcd mv_$n entries/s)"
done

# --- usage errors --------------------------------------------------------------
check "unknown benchmark is a usage error" usage_fails "$PATHFS_BENCH" nosuch
check "bad number is a usage error" usage_fails "$PATHFS_BENCH" subtree \
	--files many
finish
