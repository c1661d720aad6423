/*
 * bench_mount_i.h - what the files of `pathfs-bench mount` share:
 *
 *   bench_mount.c        the run: one target after another, every step of
 *                        a run, checked (run_target), and the driver
 *   bench_mount_work.c   the workloads this process runs itself (creating
 *                        and stat'ing the tree, churn, sequential write and
 *                        read) and the copies checked by their entry count
 *   bench_mount_target.c the targets: a fresh ext4 image or tmpfs, the
 *                        FUSE mounts, remount cold, teardown, and the
 *                        requests the FUSE daemons counted
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

enum { T_PATHFS, T_EXT4, T_TMPFS, T_FLOOR, NT };
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
	char mnt[4096];	  /* FUSE targets: mount point */
	char log[4096];	  /* daemon log */
	char stats[4096]; /* floor: its -o stats= file */
	char made[4096];  /* the ext4 image or tmpfs we mounted, "" if none */
	struct fsmount m;
};

/* Requests a FUSE daemon answered, by opcode (its own counts). */
#define MAX_OPS 40
struct reqs {
	unsigned n;
	char name[MAX_OPS][16];
	uint64_t count[MAX_OPS];
};

struct mctx {
	const struct bench_opts *o;
	struct shape sh;
	char dir[2048];	    /* our temp dir */
	char hostdir[3072]; /* --host: our folder in it, "" if none */
	char image[2100];   /* the ext4 image, in dir */
	char refmnt[2100];  /* where the image or the tmpfs is mounted */
	uint64_t ref_mb;    /* image and tmpfs size, MiB */
	uint64_t ref_inodes;
	char archive[2100];		    /* tar of --tar-src, in dir */
	uint64_t tar_entries, copy_entries; /* below the top folder */
	double tar_mb, copy_mb;
	char *pathfs, *pathfsctl, *floor;
	double *t;    /* [w][target][run] seconds, NaN = failed or not run */
	double *reqs; /* [target][run] requests per created file, or NaN */
	struct reqs ops[NT]; /* the last run's requests of the tree's create */
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
/* Whether target @k runs (--targets). */
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

/* Sizes the ext4 image and the tmpfs for the workloads (c->ref_mb,
 * c->ref_inodes) and makes --host's folder. Errors: -errno of mkdtemp. */
int targets_prepare(struct mctx *c);
/* Makes target @kind ready for run @run in @tg: pathfs with a fresh store on
 * a freshly made ext4 (or in --host), the floor mounted, a freshly made ext4
 * image (or a fresh folder in --host), a fresh tmpfs. Errors: -errno of
 * mkdir, -ECHILD (mkfs.ext4 or mount failed), those of fs_mount(). */
int target_setup(struct mctx *c, struct target *tg, int kind, unsigned run);
/* Unmounts target @tg and removes what target_setup() made. */
void target_teardown(struct mctx *c, struct target *tg);
/* Remounts pathfs (a fresh daemon: the floor's tree lives as long as its
 * mount) and drops the kernel's caches. */
int make_cold(struct mctx *c, struct target *tg, int w);
/*
 * The requests FUSE target @tg's daemon has answered, by opcode (pathfsctl
 * stats --json of pathfs, the floor's stats file after SIGUSR1): all so
 * far, or with @before (an earlier answer) those since then, once every
 * OPEN, CREATE and OPENDIR since has had its RELEASE (the kernel sends it
 * after close(2) returns; up to 5 s). Errors: -ENOENT (no answer), -ECHILD
 * (pathfsctl failed), -ETIMEDOUT, -errno of kill.
 */
int target_requests(struct mctx *c, struct target *tg,
		    const struct reqs *before, struct reqs *out);

/* ---- bench_mount_report.c -------------------------------------------------- */

/* The type of the file system holding @path ("ext4", "tmpfs", ...). */
const char *fstype(const char *path);
/* Prints the table of medians and ratios and records the CSV rows. */
void mount_report(struct mctx *c);

#endif
