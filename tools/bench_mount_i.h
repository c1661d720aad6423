/*
 * bench_mount_i.h - what the files of `pathfs-bench mount` share:
 *
 *   bench_mount.c        the run: one target after another, every step of
 *                        a run, checked (run_target), and the driver
 *   bench_mount_work.c   the workloads this process runs itself (creating
 *                        and stat'ing the tree, churn, sequential write and
 *                        read) and the copies checked by their entry count
 *   bench_mount_target.c the targets: setup, mount, remount cold, teardown,
 *                        and building libfuse's passthrough_ll
 *   bench_mount_report.c the table of medians and ratios
 *
 * What is measured and the limits: bench_mount.c's overview.
 */
#ifndef PATHFS_BENCH_MOUNT_I_H
#define PATHFS_BENCH_MOUNT_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"

enum { T_PATHFS, T_HOST, T_TMPFS, T_PT, NT };
/* Target names, as --targets and the CSV spell them. */
extern const char *const tname[NT];

enum {
	W_CREATE,
	W_FIND_COLD,
	W_FIND_WARM,
	W_DU,
	W_LSLR,
	W_LSLR_COLD,
	W_STAT,
	W_CTL_DU,
	W_MV,
	W_CP,
	W_RM,
	W_CTL_RM,
	W_CHURN,
	W_TAR,
	W_CP_REAL,
	W_RSYNC,
	W_WRITE,
	W_READ,
	NW
};

struct mount_wl {
	const char *metric; /* CSV metric */
	const char *label;  /* table row */
};
/* The workloads' CSV metric and table row. */
extern const struct mount_wl wl[NW];

struct target {
	int kind;
	bool fuse;
	char base[4096];  /* where the workloads run */
	char store[4096]; /* pathfs: the store */
	char src[4096];	  /* passthrough: its source folder */
	char mnt[4096];	  /* FUSE targets: mount point */
	char log[4096];	  /* daemon log */
	struct fsmount m;
};

struct mctx {
	const struct bench_opts *o;
	struct shape sh;
	char dir[2048];	     /* our temp dir */
	char hostdir[3072];  /* the host folder: ours or in --host */
	char tmpfsdir[3072]; /* ours in --tmpfs, "" if none */
	char archive[2100];  /* tar of --tar-src, in dir */
	uint64_t tar_entries, copy_entries; /* below the top folder */
	double tar_mb, copy_mb;
	char *pathfs, *pathfsctl, *pt;
	double *t; /* [w][target][run] seconds, NaN = failed or not run */
	int failures;
	char *buf;  /* write buffer (1 MiB pattern) */
	char *rbuf; /* read buffer */
};

#define CHUNK	    (1u << 20)
#define MOUNT_PANEL "mount: pathfs time / other time (below 1 = pathfs faster)"

/* bench_mount.c: the seconds of workload @w on target @k in run @r. */
double *slot(struct mctx *c, int w, int k, unsigned r);
/* bench_mount.c: reports workload @w on target @k as failed (@why). */
void failed(struct mctx *c, int w, int k, const char *why);
/* Whether target @k runs (--vs-passthrough, --targets). */
bool wanted(const struct bench_opts *o, int k);

/* ---- bench_mount_work.c ---------------------------------------------------- */

/* The state of a walk of the generated tree (create_tree, stat_one). */
struct cwalk {
	char *buf;
	size_t size;
	uint64_t n;
	int err;
};

/* Creates the generated tree below @root from this process; *secs its time.
 * Errors: -errno of the first create or write that failed. */
int create_tree(struct mctx *c, const char *root, double *secs);
/* shape_walk() callback: checks one entry's type and size (@ctx a struct
 * cwalk) and counts it. Errors: -errno of lstat, -EIO (wrong entry). */
int stat_one(void *ctx, const char *path, bool dir);
/* Creates, stats and unlinks --churn files in folder @base. Errors: -errno. */
int churn(struct mctx *c, const char *base, double *secs);
/* Writes --write-mb MiB to @path and fsyncs it. Errors: -errno. */
int seq_write(struct mctx *c, const char *path, double *secs);
/* Reads @path back, checking its bytes. Errors: -errno, -EIO (wrong bytes). */
int seq_read(struct mctx *c, const char *path, double *secs);
/* Whether workload @w runs (--workloads; the tree is always created). */
bool want_w(const struct mctx *c, int w);
/* Entries below @dir (not @dir itself) and their file bytes, without
 * following symlinks. Errors: -errno of the walk. */
int count_tree(const char *dir, uint64_t *n, uint64_t *bytes);
/*
 * Runs a copying program (tar x, cp -a, rsync -a) on target @k as workload
 * @w, then checks that @dst holds @want entries below it, and removes @dst.
 */
void timed_copy(struct mctx *c, int w, int k, unsigned r, char *const argv[],
		const char *dst, uint64_t want);
/*
 * The real folders of tar x, cp -a and rsync -a: counts their entries and
 * bytes (what each copy is checked against) and archives --tar-src into our
 * temp dir (uncompressed: the time is the file system's, not gzip's).
 */
int prepare_real(struct mctx *c);

/* ---- bench_mount_target.c -------------------------------------------------- */

/* Makes target @kind ready for run @run (fresh store or folder, mounted if
 * FUSE) in @tg. Errors: -errno of mkdir, those of fs_mount(). */
int target_setup(struct mctx *c, struct target *tg, int kind, unsigned run);
/* Unmounts target @tg and removes what target_setup() made. */
void target_teardown(struct mctx *c, struct target *tg);
/* Remounts a FUSE target (a fresh daemon) and drops the kernel's caches. */
int make_cold(struct mctx *c, struct target *tg, int w);
/* Compiles libfuse's example passthrough_ll into our temp dir (c->pt).
 * Errors: -ENOENT (no example or no compiler), -ENOMEM. */
int build_passthrough(struct mctx *c);
/*
 * passthrough_ll keeps an O_PATH fd open for every inode the kernel knows:
 * the whole tree plus the cp -a copy at the peak, and every churn file. Past
 * RLIMIT_NOFILE it fails with EMFILE, which would be measured as a failure of
 * the workload. Raising the limit needs CAP_SYS_RESOURCE above the hard
 * limit; when the workload does not fit, say so and refuse.
 */
int check_nofile(struct mctx *c);

/* ---- bench_mount_report.c -------------------------------------------------- */

/* The type of the file system holding @path ("ext4", "tmpfs", ...). */
const char *fstype(const char *path);
/* Prints the table of medians and ratios and records the CSV rows. */
void mount_report(struct mctx *c);

#endif
