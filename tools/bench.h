/*
 * bench.h - what the files of pathfs-bench share: options, results, the
 * generated tree shape, timing, running programs and mounting file systems.
 *
 * pathfs-bench is a measuring tool, not a library: functions here print their
 * own progress on stderr and return 0 or a negative errno. Nothing here is
 * thread-safe; the bench runs one workload at a time on purpose.
 *
 * Limits: a run keeps every result in memory (a few hundred rows); the tree
 * shape is regular (fan-out^depth leaf folders, files only in the leaves).
 */
#ifndef PATHFS_BENCH_H
#define PATHFS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tree.h"

/* ---- options ------------------------------------------------------------ */

struct bench_opts {
	unsigned runs;		/* --runs: repetitions, medians reported */
	uint64_t files;		/* --files: files in the generated tree */
	unsigned fanout, depth; /* --fanout, --depth: folder shape */
	size_t size;		/* --size: bytes per file */
	const char *tmp;	/* --tmp: where temp dirs go ($TMPDIR, /tmp) */
	const char *host;	/* --host: host folder to compare with */
	const char *targets;	/* --targets: comma list, NULL = all */
	const char *tmpfs;	/* --tmpfs: content's tmpfs folder */
	const char *copy_src;	/* --copy-src: folder for cp -a, rsync -a */
	const char *tar_src;	/* --tar-src: folder archived for tar x */
	const char *workloads;	/* --workloads: comma list, NULL = all */
	const char *pathfs;	/* --pathfs: daemon binary */
	const char *pathfsctl;	/* --pathfsctl: admin tool binary */
	const char *floor;	/* --floor: pathfs-floor binary */
	uint64_t write_mb;	/* --write-mb: sequential write/read size */
	uint64_t churn;		/* --churn: create/stat/unlink count */
	unsigned writers;	/* --writers: backends: shared writers, 0 off */
	uint64_t big_mb;	/* --big-mb: content: the full drive's file */
	uint64_t content_files; /* --content-files: content churn count */
	uint64_t pwrites;	/* --pwrites: content: 4 KiB pwrites */
	uint64_t sqlite_rows;	/* --sqlite-rows: content: rows inserted */
	uint64_t *sizes;	/* --sizes: rename branch sizes (malloc'd) */
	size_t nsizes;
	uint64_t host_max; /* --host-max: largest rename branch on host */
	bool keep;	   /* --keep: leave temp dirs for inspection */
	bool no_drop;	   /* --no-drop-caches */
	const char *etcd;  /* --etcd: backends: a running cluster's endpoints */
	const char *csv;   /* --csv FILE */
	const char *plot;  /* --plot FILE.png */
};

/* ---- results ------------------------------------------------------------ */

/*
 * Records one median: a CSV row benchmark,target,metric,value,unit. The
 * strings are copied. A failed measurement is recorded as NaN.
 */
void res_add(const char *bench, const char *target, const char *metric,
	     double value, const char *unit);

/* Records a ratio to draw in the plot: one panel per @panel (its title),
 * one cluster of bars per @label, one bar colour per @series (all copied). */
void res_plot(const char *panel, const char *series, const char *label,
	      double ratio);

/* Writes every row to @path as CSV. Errors: -errno of fopen/fclose. */
int res_write_csv(const char *path);

/* Draws the recorded ratios with gnuplot into @png. Errors: -ENOENT (no
 * gnuplot), -EIO (gnuplot failed), -ENODATA (no ratios recorded). */
int res_write_plot(const char *png);

/* Frees every recorded row. */
void res_free(void);

/* Median of @n values (NaN values ignored; NaN if none). Sorts @v. */
double median(double *v, size_t n);

/* Monotonic clock in seconds. */
double now_s(void);

/* Formats @secs as "12.3 ms" / "1.23 s" into @buf (returns @buf). */
const char *fmt_secs(char *buf, size_t len, double secs);
/* Formats a rate "6.12 M/s" etc. into @buf (returns @buf). */
const char *fmt_rate(char *buf, size_t len, double per_s, const char *unit);

/* Formats a ratio "1.23x", or "-" when it is not a finite number. */
/* Whether --targets names @name (no --targets: every one does). */
bool bench_wanted(const struct bench_opts *o, const char *name);
const char *fmt_ratio(char *buf, size_t len, double ratio);

/* Progress line on stderr (prefixed "bench: "). */
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the generated tree -------------------------------------------------- */

/*
 * fanout^depth leaf folders of per_leaf files each, folders "dN" at every
 * level, files "fNNNNN" in the leaves. The branch at depth k is root/d0/../d0
 * (k times).
 */
struct shape {
	unsigned fanout, depth;
	uint64_t per_leaf;
	size_t size;
};

void shape_init(struct shape *sh, uint64_t files, unsigned fanout,
		unsigned depth, size_t size);
/* Entries (folders and files) strictly below a branch at depth @k. */
uint64_t shape_entries(const struct shape *sh, unsigned k);
/* Folders below a branch at depth @k, not counting the branch itself. */
uint64_t shape_dirs(const struct shape *sh, unsigned k);
/* Files below a branch at depth @k. */
uint64_t shape_files(const struct shape *sh, unsigned k);

/* Called once per entry in pre-order (a folder before its children).
 * A non-zero return stops the walk and is returned by shape_walk(). */
typedef int (*shape_cb)(void *ctx, const char *path, bool dir);

/* Walks the entries below @root (a path without trailing slash; "" for the
 * top of a drive) of the branch at depth @k. */
int shape_walk(const struct shape *sh, const char *root, unsigned k,
	       shape_cb cb, void *ctx);

/* Writes the branch path of depth @k below @root into @buf. */
void shape_branch(const struct shape *sh, const char *root, unsigned k,
		  char *buf, size_t len);

/* ---- programs and mounts ------------------------------------------------- */

/*
 * Runs @argv (argv[0] looked up in PATH), stdout read by us (its lines
 * counted into *lines if not NULL, the first @outlen - 1 bytes kept in @out
 * if not NULL), stderr to ours. *secs gets the wall time from fork to exit.
 * Returns 0 if it exited 0, -ECHILD if it failed (status printed), -errno if
 * it could not start.
 */
int run_cmd(char *const argv[], double *secs, uint64_t *lines, char *out,
	    size_t outlen);

/* Runs a shell command line quietly; 0 if it exited 0, else -ECHILD. */
int run_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* sync(2), then drops the page, dentry and inode caches (needs root; when
 * that fails, only syncs). Nothing with --no-drop-caches: both wait for
 * every file system of the machine (a stuck FUSE unmount anywhere stops
 * them). */
void drop_caches(const struct bench_opts *o);

/* A FUSE daemon we started in the foreground and must stop. */
struct fsmount {
	pid_t pid;
	char mnt[4096];
};

/*
 * Starts @argv (a FUSE daemon run with -f, so it is our child) and waits until
 * @mnt appears in /proc/self/mountinfo. Its stderr goes to @log.
 * Errors: -ETIMEDOUT (no mount within 20 s; the daemon is killed), -ECHILD
 * (it exited first), -errno of fork/exec.
 */
int fs_mount(struct fsmount *m, char *const argv[], const char *mnt,
	     const char *log);

/* Unmounts with fusermount3 -u and waits for the daemon to exit (SIGKILL
 * after 120 s). Safe on a mount that was never made (pid 0). */
int fs_umount(struct fsmount *m);

/* Installs SIGINT/SIGTERM/SIGHUP handlers that unmount every mount made by
 * fs_mount() and still up, then exit 128 + signal. */
void bench_signals(void);

/* Also calls @fn (async-signal-safe) in that handler, after the mounts. */
void bench_at_signal(void (*fn)(void));

/*
 * A sound host reference (issue 29): formats a sparse @mb MiB image at @image
 * afresh with mkfs.ext4 (@inodes inodes, the inode tables and journal written
 * at once, so no lazy init thread runs during a measurement) and mounts it on
 * @mnt, an existing folder. The machine's long-lived file systems are no
 * reference: an aged ext4 created the same 100k files in 2 s and 48 s within
 * the hour. Until ref_umount(@mnt), a signal unmounts it (lazily).
 * Errors: -ECHILD (mkfs.ext4 or mount failed; said why). Needs root.
 */
int ext4_image_mount(const char *image, const char *mnt, uint64_t mb,
		     uint64_t inodes);

/* ext4_image_mount() of the image @dir/ext4.img on the folder @dir/ext4,
 * which it makes; that folder's path into @mnt, or "" on an error. */
int ext4_image_in(const char *dir, char *mnt, size_t len, uint64_t mb,
		  uint64_t inodes);

/* Marks @mnt (a file system the bench mounted itself) for a signal to unmount
 * lazily; one at a time. */
void ref_mounted(const char *mnt);

/* Unmounts @mnt (lazily if it is busy) and forgets it; -ECHILD if it was
 * busy (said so). */
int ref_umount(const char *mnt);

/* Finds "key": NUMBER in a flat JSON object (pathfsctl --json) into *v.
 * Errors: -ENOENT (no such key), -EINVAL (not a number). */
int json_u64(const char *json, const char *key, uint64_t *v);

/* True if @path is a mount point in /proc/self/mountinfo. */
bool is_mounted(const char *path);

/* Finds a program: @given if set, else @name next to this executable, in
 * ../fs/ of it (build tree), or in PATH. Returns a malloc'd path or NULL. */
char *find_prog(const char *given, const char *name);

/* Makes a fresh temp dir "<o->tmp>/pathfs-bench.XXXXXX" into @buf. */
int make_tmpdir(const struct bench_opts *o, char *buf, size_t len);

/* ---- benchmarks --------------------------------------------------------- */

int bench_subtree(const struct bench_opts *o);
int bench_mount(const struct bench_opts *o);
int bench_rename(const struct bench_opts *o);
int bench_content(const struct bench_opts *o);
int bench_backends(const struct bench_opts *o);
/* bench_writers.c: backends --writers, on the cluster at @eps */
int bench_writers(const struct bench_opts *o, const char *eps);

/* bench_server.c: the servers the bench runs as its children. */
/* The first of @n consecutive loopback ports free now (from a random base
 * in 20000-59999). */
unsigned server_ports(unsigned n);
/* Starts @argv in @cwd (NULL: here), its output appended to @log, in a
 * session of its own, killed with us; *pid its pid. Errors: -EMFILE (too
 * many servers), -errno of fork. */
int server_spawn(pid_t *pid, const char *cwd, const char *log,
		 char *const argv[]);
/* Runs @probe quietly until it exits 0, for at most @secs, while the
 * servers @pids (@n) run. Errors: -ECHILD (one exited), -ENOENT (@probe
 * cannot run), -ETIMEDOUT; said (progress) with @what. */
int server_wait(const pid_t *pids, int n, char *const probe[], double secs,
		const char *what);
/* Stops server @pid (SIGKILL, reaped); all of them. No-op if none. */
void server_stop(pid_t pid);
void server_stop_all(void);

/* bench_ddb.c: starts DynamoDB Local (scripts/dynamodb_local.sh installs
 * it; in memory, on a free loopback port, its log in @dir), waits up to
 * 180 s until it answers, and writes its endpoint "http://127.0.0.1:PORT"
 * into @endpoint; sets fake AWS credentials in our environment (it checks
 * their form only), for the daemons and pathfsctl we start. Errors:
 * -ENOENT (cannot install it, or no java), -ECHILD, -ETIMEDOUT. */
int ddb_local_start(const char *dir, char *endpoint, size_t len);
/* Stops it (SIGKILL by pid); no-op if not started. */
void ddb_local_stop(void);
/* Deletes table @table at @endpoint; a failure is said, not fatal. */
void ddb_drop_table(const char *endpoint, const char *table);

/* bench_etcd.c: starts a 3-member etcd cluster on loopback ports with its
 * data in @dir (made by the caller), waits until it serves, and writes its
 * client endpoints "h:p,h:p,h:p" into @endpoints. Errors: -ENOENT (no
 * etcdctl), -ECHILD (a member exited), -ETIMEDOUT (not healthy in 30 s),
 * -errno of fork; the members started are stopped then. */
int etcd_start(const char *dir, char *endpoints, size_t len);
/* Stops the cluster of etcd_start() (SIGKILL by pid, reaped); no-op if none. */
void etcd_stop(void);
/* Deletes the keys of store @name (every key under "@name/") from the
 * cluster at @eps with etcdctl; a failure is said (progress), not fatal. */
void etcd_drop_store(const char *eps, const char *name);

/* Builds the generated tree under @root (created) of drive @t through the
 * store API; *secs (may be NULL) gets the time. Used by subtree, rename
 * and backends --writers. */
int build_tree_inproc(struct tree *t, const struct shape *sh, const char *root,
		      double *secs);

/* The shape of a branch of about @n files for rename and mv: ceil(n / 1000)
 * folders of BRANCH_PER_FOLDER files each at most. */
#define BRANCH_PER_FOLDER 1000
void branch_shape(struct shape *sh, uint64_t n);

/* How many nodes the branch at @path of drive @t holds below it (one
 * subtree scan) into *n. Errors: those of tree_scan_open/next. */
int branch_count(struct tree *t, const char *path, uint64_t *n);

#endif
