/*
 * bench_mount.c - `pathfs-bench mount`: the standard tools through the kernel,
 * on pathfs, on a host folder, on a tmpfs folder (--tmpfs, /dev/shm) and
 * (--vs-passthrough) on libfuse's example passthrough_ll over the host
 * folder, in alternation, medians reported.
 *
 * One run of one target, on a fresh store or folder:
 *   create the tree (mkdir/open/write/close from this process), remount and
 *   drop caches, find (cold), find (warm), du -s, ls -lR (warm), lstat of
 *   every entry, remount and drop caches, ls -lR (cold), pathfsctl du (pathfs
 *   only), mv of the depth-1 folder (~10k
 *   entries), cp -a of it, rm -rf of the tree, pathfsctl rm -r of a rebuilt
 *   tree (pathfs only), create/stat/unlink of --churn files in one folder,
 *   tar x of an uncompressed archive of --tar-src (/usr/include), cp -a and
 *   rsync -a of --copy-src (/usr/share/doc), each checked by its entry count,
 *   sequential write of --write-mb MiB with fsync, and its read after dropping
 *   the caches (content checked).
 * --workloads runs only the named steps (CSV metric names) after creating
 * the tree.
 * Every step checks what it can (entry counts seen by find, by the stat walk
 * and by pathfsctl du; the tree is gone after rm; the bytes read back): a step
 * that fails or sees the wrong thing is reported as FAIL, and the bench exits 1.
 *
 * The pathfsctl rows compare `pathfsctl du` with `du -s` and `pathfsctl rm -r`
 * with `rm -rf` on the host (the same tree).
 *
 * Limits: needs root (mounts, drop_caches). "Cold" means a fresh daemon and
 * dropped kernel caches; RocksDB's files come back from disk then too.
 * passthrough_ll keeps one O_PATH fd per inode it has seen: RLIMIT_NOFILE is
 * raised to fs.nr_open first, which holds trees of up to about a million
 * entries.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bench.h"

enum { T_PATHFS, T_HOST, T_TMPFS, T_PT, NT };
static const char *const tname[NT] = {"pathfs", "host", "tmpfs", "passthrough"};

static bool wanted(const struct bench_opts *o, int k);

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

static const struct {
	const char *metric; /* CSV metric */
	const char *label;  /* table row */
} wl[NW] = {
    [W_CREATE] = {"create_tree", "create the tree"},
    [W_FIND_COLD] = {"find_cold", "find, first after mount"},
    [W_FIND_WARM] = {"find_warm", "find, warm"},
    [W_DU] = {"du_s", "du -s"},
    [W_LSLR] = {"ls_lR", "ls -lR, warm"},
    [W_LSLR_COLD] = {"ls_lR_cold", "ls -lR, first after mount"},
    [W_STAT] = {"stat_all", "stat of every entry"},
    [W_CTL_DU] = {"pathfsctl_du", "pathfsctl du (host: du -s)"},
    [W_MV] = {"mv_folder", "mv of the depth-1 folder"},
    [W_CP] = {"cp_a_folder", "cp -a of it"},
    [W_RM] = {"rm_rf_tree", "rm -rf of the tree"},
    [W_CTL_RM] = {"pathfsctl_rm_r", "pathfsctl rm -r (host: rm -rf)"},
    [W_CHURN] = {"create_stat_unlink", "create/stat/unlink, one folder"},
    [W_TAR] = {"tar_x", "tar x of --tar-src"},
    [W_CP_REAL] = {"cp_a_real", "cp -a of --copy-src"},
    [W_RSYNC] = {"rsync_a_real", "rsync -a of --copy-src"},
    [W_WRITE] = {"write_fsync", "sequential write + fsync"},
    [W_READ] = {"read_cold", "sequential read, cold"},
};

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

static double *slot(struct mctx *c, int w, int k, unsigned r)
{
	return &c->t[((size_t)w * NT + k) * c->o->runs + r];
}

static void failed(struct mctx *c, int w, int k, const char *why)
{
	progress("FAIL: %s on %s: %s", wl[w].label, tname[k], why);
	c->failures++;
}

/* ---- workloads run by this process ------------------------------------- */

struct cwalk {
	char *buf;
	size_t size;
	uint64_t n;
	int err;
};

static int create_one(void *ctx, const char *path, bool dir)
{
	struct cwalk *w = ctx;
	int fd;

	if (dir) {
		if (mkdir(path, 0755))
			goto fail;
	} else {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			goto fail;
		if (w->size && write(fd, w->buf, w->size) != (ssize_t)w->size) {
			close(fd);
			goto fail;
		}
		if (close(fd))
			goto fail;
	}
	w->n++;
	return 0;
fail:
	w->err = errno ? errno : EIO;
	progress("%s: %s", path, strerror(w->err));
	return -w->err;
}

static int stat_one(void *ctx, const char *path, bool dir)
{
	struct cwalk *w = ctx;
	struct stat st;

	if (lstat(path, &st)) {
		w->err = errno;
		progress("lstat %s: %s", path, strerror(errno));
		return -w->err;
	}
	if (dir ? !S_ISDIR(st.st_mode)
		: (!S_ISREG(st.st_mode) || (size_t)st.st_size != w->size)) {
		progress("lstat %s: wrong type or size %lld", path,
			 (long long)st.st_size);
		w->err = EIO;
		return -EIO;
	}
	w->n++;
	return 0;
}

static int create_tree(struct mctx *c, const char *root, double *secs)
{
	struct cwalk w = {.buf = c->buf, .size = c->sh.size};
	double t0 = now_s();
	int rc;

	*secs = 0;
	if (mkdir(root, 0755))
		return -errno;
	rc = shape_walk(&c->sh, root, 0, create_one, &w);
	*secs = now_s() - t0;
	return rc;
}

static int churn(struct mctx *c, const char *base, double *secs)
{
	char dir[4200], p[4300];
	struct stat st;
	uint64_t i, n = c->o->churn;
	double t0;
	int fd, rc = 0;

	snprintf(dir, sizeof(dir), "%s/churn", base);
	if (mkdir(dir, 0755))
		return -errno;
	t0 = now_s();
	for (i = 0; i < n && !rc; i++) {
		snprintf(p, sizeof(p), "%s/file-%llu.tmp", dir,
			 (unsigned long long)i);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 || close(fd))
			rc = -errno;
	}
	for (i = 0; i < n && !rc; i++) {
		snprintf(p, sizeof(p), "%s/file-%llu.tmp", dir,
			 (unsigned long long)i);
		if (stat(p, &st) || !S_ISREG(st.st_mode))
			rc = -(errno ? errno : EIO);
	}
	for (i = 0; i < n && !rc; i++) {
		snprintf(p, sizeof(p), "%s/file-%llu.tmp", dir,
			 (unsigned long long)i);
		if (unlink(p))
			rc = -errno;
	}
	*secs = now_s() - t0;
	if (rc)
		progress("churn at %s: %s", p, strerror(-rc));
	if (!rc && rmdir(dir))
		rc = -errno;
	return rc;
}

static int seq_write(struct mctx *c, const char *path, double *secs)
{
	uint64_t i;
	double t0 = now_s();
	int fd, rc = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	for (i = 0; i < c->o->write_mb && !rc; i++) {
		/* stamp the chunk number so a misplaced chunk is caught */
		memcpy(c->buf, &i, sizeof(i));
		if (write(fd, c->buf, CHUNK) != CHUNK)
			rc = -(errno ? errno : EIO);
	}
	if (!rc && fsync(fd))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	*secs = now_s() - t0;
	return rc;
}

static int seq_read(struct mctx *c, const char *path, double *secs)
{
	uint64_t i;
	double t0 = now_s();
	ssize_t n;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (i = 0; i < c->o->write_mb && !rc; i++) {
		size_t got = 0;

		while (got < CHUNK) {
			n = read(fd, c->rbuf + got, CHUNK - got);
			if (n <= 0) {
				rc = n ? -errno : -EIO;
				break;
			}
			got += (size_t)n;
		}
		memcpy(c->buf, &i, sizeof(i));
		if (!rc && memcmp(c->buf, c->rbuf, CHUNK)) {
			progress("%s: chunk %llu reads back wrong", path,
				 (unsigned long long)i);
			rc = -EIO;
		}
	}
	if (!rc && read(fd, c->rbuf, 1) != 0) {
		progress("%s: longer than written", path);
		rc = -EIO;
	}
	close(fd);
	*secs = now_s() - t0;
	return rc;
}

/* Whether workload @w runs (--workloads; the tree is always created). */
static bool want_w(const struct mctx *c, int w)
{
	char list[512], *tok, *save = NULL;

	if (!c->o->workloads || w == W_CREATE)
		return true;
	snprintf(list, sizeof(list), "%s", c->o->workloads);
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, wl[w].metric))
			return true;
	return false;
}

static uint64_t walk_n, walk_bytes;

static int count_one(const char *path, const struct stat *st, int flag,
		     struct FTW *ftw)
{
	(void)path;
	(void)flag;
	if (ftw->level > 0) {
		walk_n++;
		if (S_ISREG(st->st_mode))
			walk_bytes += (uint64_t)st->st_size;
	}
	return 0;
}

/* Entries below @dir (not @dir itself) and their file bytes, without
 * following symlinks. Errors: -errno of the walk. */
static int count_tree(const char *dir, uint64_t *n, uint64_t *bytes)
{
	walk_n = walk_bytes = 0;
	if (nftw(dir, count_one, 64, FTW_PHYS))
		return -(errno ? errno : EIO);
	*n = walk_n;
	if (bytes)
		*bytes = walk_bytes;
	return 0;
}

/*
 * Runs a copying program (tar x, cp -a, rsync -a) on target @k as workload
 * @w, then checks that @dst holds @want entries below it, and removes @dst.
 */
static void timed_copy(struct mctx *c, int w, int k, unsigned r,
		       char *const argv[], const char *dst, uint64_t want)
{
	uint64_t n = 0;
	double secs;
	int rc;

	progress("  %s", wl[w].label);
	rc = run_cmd(argv, &secs, NULL, NULL, 0);
	if (rc) {
		failed(c, w, k,
		       rc == -ECHILD ? "command failed" : strerror(-rc));
	} else if (count_tree(dst, &n, NULL) || n != want) {
		char why[128];

		snprintf(why, sizeof(why), "%llu entries, expected %llu",
			 (unsigned long long)n, (unsigned long long)want);
		failed(c, w, k, why);
	} else {
		*slot(c, w, k, r) = secs;
	}
	run_sh("rm -rf '%s'", dst);
}

/* ---- targets ------------------------------------------------------------- */

static int target_mount(struct mctx *c, struct target *tg)
{
	int rc;

	if (tg->kind == T_PATHFS) {
		char *argv[] = {c->pathfs, (char *)"-f", tg->store, tg->mnt,
				NULL};

		rc = fs_mount(&tg->m, argv, tg->mnt, tg->log);
	} else {
		char opt[4300];
		char *argv[] = {c->pt, (char *)"-f", (char *)"-o",
				opt,   tg->mnt,	     NULL};

		snprintf(opt, sizeof(opt), "source=%s", tg->src);
		rc = fs_mount(&tg->m, argv, tg->mnt, tg->log);
	}
	if (rc)
		progress("cannot mount %s on %s: %s (log: %s)", tname[tg->kind],
			 tg->mnt, strerror(-rc), tg->log);
	return rc;
}

static int target_setup(struct mctx *c, struct target *tg, int kind,
			unsigned run)
{
	memset(tg, 0, sizeof(*tg));
	tg->kind = kind;
	tg->fuse = kind == T_PATHFS || kind == T_PT;
	snprintf(tg->log, sizeof(tg->log), "%s/%s.log", c->dir, tname[kind]);
	switch (kind) {
	case T_PATHFS:
		snprintf(tg->store, sizeof(tg->store), "%s/store-%u", c->dir,
			 run);
		snprintf(tg->mnt, sizeof(tg->mnt), "%s/mnt-pathfs", c->dir);
		snprintf(tg->base, sizeof(tg->base), "%s", tg->mnt);
		break;
	case T_HOST:
	case T_TMPFS:
		snprintf(tg->base, sizeof(tg->base), "%s/host-%u",
			 kind == T_HOST ? c->hostdir : c->tmpfsdir, run);
		if (mkdir(tg->base, 0755))
			return -errno;
		return 0;
	case T_PT:
		snprintf(tg->src, sizeof(tg->src), "%s/pt-src-%u", c->hostdir,
			 run);
		snprintf(tg->mnt, sizeof(tg->mnt), "%s/mnt-pt", c->dir);
		snprintf(tg->base, sizeof(tg->base), "%s", tg->mnt);
		if (mkdir(tg->src, 0755))
			return -errno;
		break;
	}
	if (mkdir(tg->mnt, 0755) && errno != EEXIST)
		return -errno;
	return target_mount(c, tg);
}

static void target_teardown(struct mctx *c, struct target *tg)
{
	if (fs_umount(&tg->m)) {
		progress("%s did not shut down cleanly; see %s",
			 tname[tg->kind], tg->log);
		c->failures++;
	}
	if (tg->kind == T_PATHFS)
		run_sh("rm -rf '%s'", tg->store);
	else if (tg->kind == T_HOST || tg->kind == T_TMPFS)
		run_sh("rm -rf '%s'", tg->base);
	else
		run_sh("rm -rf '%s'", tg->src);
}

/* Runs a program on target @k as workload @w; checks its line count against
 * @want_lines when that is not 0. */
static void timed_cmd(struct mctx *c, int w, int k, unsigned r,
		      char *const argv[], uint64_t want_lines, char *out,
		      size_t outlen)
{
	uint64_t lines = 0;
	double secs;
	int rc;

	rc = run_cmd(argv, &secs, &lines, out, outlen);
	if (rc) {
		failed(c, w, k,
		       rc == -ECHILD ? "command failed" : strerror(-rc));
		return;
	}
	if (want_lines && lines != want_lines) {
		char why[128];

		snprintf(why, sizeof(why), "saw %llu lines, expected %llu",
			 (unsigned long long)lines,
			 (unsigned long long)want_lines);
		failed(c, w, k, why);
		return;
	}
	*slot(c, w, k, r) = secs;
}

/* Finds "key": NUMBER in a JSON object (pathfsctl's flat output). */
static int json_u64(const char *json, const char *key, uint64_t *v)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\"", key);
	p = strstr(json, pat);
	if (!p)
		return -ENOENT;
	p += strlen(pat);
	while (*p == ' ' || *p == ':' || *p == '\t')
		p++;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	*v = strtoull(p, NULL, 10);
	return 0;
}

/* Remounts a FUSE target (a fresh daemon) and drops the kernel's caches. */
static int make_cold(struct mctx *c, struct target *tg, int w)
{
	if (tg->fuse) {
		if (fs_umount(&tg->m)) {
			failed(c, w, tg->kind, "unmount failed");
			return -EIO;
		}
		drop_caches(c->o);
		if (target_mount(c, tg)) {
			failed(c, w, tg->kind, "remount failed");
			return -EIO;
		}
	} else {
		drop_caches(c->o);
	}
	return 0;
}

static void run_target(struct mctx *c, int k, unsigned r)
{
	const struct bench_opts *o = c->o;
	struct target tg;
	char root[4300], a[4400], b[4400], big[4300], out[4096];
	uint64_t entries = shape_entries(&c->sh, 0) + 1; /* + the root */
	struct cwalk w = {.size = c->sh.size};
	struct stat st;
	double secs;
	int rc;

	progress("mount: run %u/%u, %s", r + 1, o->runs, tname[k]);
	rc = target_setup(c, &tg, k, r);
	if (rc) {
		progress("cannot set up %s: %s", tname[k], strerror(-rc));
		c->failures++;
		goto out;
	}
	snprintf(root, sizeof(root), "%s/t", tg.base);

	progress("  create the tree (%llu entries)",
		 (unsigned long long)entries);
	rc = create_tree(c, root, &secs);
	if (rc) {
		failed(c, W_CREATE, k, strerror(-rc));
		goto out; /* nothing below means anything without the tree */
	}
	*slot(c, W_CREATE, k, r) = secs;

	if (want_w(c, W_FIND_COLD) && make_cold(c, &tg, W_FIND_COLD))
		goto out;
	if (want_w(c, W_FIND_COLD) || want_w(c, W_FIND_WARM)) {
		char *argv[] = {(char *)"find", root, NULL};

		progress("  find (cold, then warm)");
		timed_cmd(c, W_FIND_COLD, k, r, argv, entries, NULL, 0);
		timed_cmd(c, W_FIND_WARM, k, r, argv, entries, NULL, 0);
	}
	if (want_w(c, W_DU)) {
		char *argv[] = {(char *)"du", (char *)"-s", root, NULL};

		progress("  du -s");
		timed_cmd(c, W_DU, k, r, argv, 1, NULL, 0);
	}
	if (want_w(c, W_LSLR)) {
		char *argv[] = {(char *)"ls", (char *)"-lR", root, NULL};

		progress("  ls -lR");
		timed_cmd(c, W_LSLR, k, r, argv, 0, NULL, 0);
	}
	if (want_w(c, W_STAT)) {
		progress("  stat of every entry");
		secs = now_s();
		rc = shape_walk(&c->sh, root, 0, stat_one, &w);
		secs = now_s() - secs;
		if (rc || w.n != entries - 1)
			failed(c, W_STAT, k,
			       rc ? strerror(-rc) : "wrong count");
		else
			*slot(c, W_STAT, k, r) = secs;
	}

	if (want_w(c, W_LSLR_COLD) && make_cold(c, &tg, W_LSLR_COLD))
		goto out;
	if (want_w(c, W_LSLR_COLD)) {
		char *argv[] = {(char *)"ls", (char *)"-lR", root, NULL};

		progress("  ls -lR (cold)");
		timed_cmd(c, W_LSLR_COLD, k, r, argv, 0, NULL, 0);
	}

	if (k == T_PATHFS && want_w(c, W_CTL_DU)) {
		char *argv[] = {c->pathfsctl, (char *)"-s", tg.store,
				(char *)"du", (char *)"/t", (char *)"--json",
				NULL};
		uint64_t files = 0, dirs = 0;

		progress("  pathfsctl du");
		timed_cmd(c, W_CTL_DU, k, r, argv, 0, out, sizeof(out));
		if (!isnan(*slot(c, W_CTL_DU, k, r)) &&
		    (json_u64(out, "files", &files) ||
		     json_u64(out, "dirs", &dirs) ||
		     files != shape_files(&c->sh, 0) ||
		     dirs + 1 < shape_dirs(&c->sh, 0) + 1 ||
		     dirs > shape_dirs(&c->sh, 0) + 1)) {
			*slot(c, W_CTL_DU, k, r) = NAN;
			failed(c, W_CTL_DU, k, "wrong counts in --json output");
			progress("  pathfsctl said: %s", out);
		}
	}

	snprintf(a, sizeof(a), "%s/d0", root);
	snprintf(b, sizeof(b), "%s/d0.moved", root);
	if (!want_w(c, W_MV))
		snprintf(b, sizeof(b), "%s", a); /* cp -a copies d0 itself */
	if (want_w(c, W_MV)) {
		char *argv[] = {(char *)"mv", a, b, NULL};

		progress("  mv of %s (%llu entries)", a,
			 (unsigned long long)shape_entries(&c->sh, 1) + 1);
		timed_cmd(c, W_MV, k, r, argv, 0, NULL, 0);
		if (!isnan(*slot(c, W_MV, k, r)) &&
		    (lstat(b, &st) || !lstat(a, &st))) {
			*slot(c, W_MV, k, r) = NAN;
			failed(c, W_MV, k, "source still there or no target");
		}
	}
	snprintf(a, sizeof(a), "%s/copy", tg.base);
	if (want_w(c, W_CP)) {
		char *argv[] = {(char *)"cp", (char *)"-a", b, a, NULL};

		progress("  cp -a of it");
		timed_cmd(c, W_CP, k, r, argv, 0, NULL, 0);
		run_sh("rm -rf '%s'", a);
	}
	if (want_w(c, W_RM)) {
		char *argv[] = {(char *)"rm", (char *)"-rf", root, NULL};

		progress("  rm -rf of the tree");
		timed_cmd(c, W_RM, k, r, argv, 0, NULL, 0);
		if (!lstat(root, &st)) {
			*slot(c, W_RM, k, r) = NAN;
			failed(c, W_RM, k, "tree still there");
		}
	}
	if (!want_w(c, W_RM))
		run_sh("rm -rf '%s'", root);
	if (k == T_PATHFS && want_w(c, W_CTL_RM)) {
		char *argv[] = {c->pathfsctl, (char *)"-s", tg.store,
				(char *)"rm", (char *)"-r", (char *)"/t",
				NULL};

		progress("  pathfsctl rm -r of a rebuilt tree");
		rc = create_tree(c, root, &secs);
		if (rc) {
			failed(c, W_CTL_RM, k, "could not rebuild the tree");
		} else {
			timed_cmd(c, W_CTL_RM, k, r, argv, 0, NULL, 0);
			if (!lstat(root, &st)) {
				*slot(c, W_CTL_RM, k, r) = NAN;
				failed(c, W_CTL_RM, k,
				       "tree still visible in the mount");
			}
		}
	}

	if (want_w(c, W_CHURN)) {
		progress("  create/stat/unlink %llu files in one folder",
			 (unsigned long long)o->churn);
		rc = churn(c, tg.base, &secs);
		if (rc)
			failed(c, W_CHURN, k, strerror(-rc));
		else
			*slot(c, W_CHURN, k, r) = secs;
	}

	snprintf(a, sizeof(a), "%s/real", tg.base);
	if (want_w(c, W_TAR)) {
		char *argv[] = {
		    (char *)"tar", (char *)"xf", c->archive, (char *)"-C", a,
		    NULL};

		if (mkdir(a, 0755))
			failed(c, W_TAR, k, strerror(errno));
		else /* the archive holds the folder itself too */
			timed_copy(c, W_TAR, k, r, argv, a, c->tar_entries + 1);
	}
	if (want_w(c, W_CP_REAL)) {
		char *argv[] = {(char *)"cp", (char *)"-a", (char *)o->copy_src,
				a, NULL};

		timed_copy(c, W_CP_REAL, k, r, argv, a, c->copy_entries);
	}
	if (want_w(c, W_RSYNC)) {
		char src[4200];
		char *argv[] = {(char *)"rsync", (char *)"-a", src, a, NULL};

		snprintf(src, sizeof(src), "%s/", o->copy_src);
		timed_copy(c, W_RSYNC, k, r, argv, a, c->copy_entries);
	}

	snprintf(big, sizeof(big), "%s/big", tg.base);
	if (!want_w(c, W_WRITE) && !want_w(c, W_READ))
		goto out;
	progress("  write %llu MiB + fsync", (unsigned long long)o->write_mb);
	rc = seq_write(c, big, &secs);
	if (rc) {
		failed(c, W_WRITE, k, strerror(-rc));
	} else {
		*slot(c, W_WRITE, k, r) = secs;
		drop_caches(o);
		progress("  read it back, cold");
		rc = seq_read(c, big, &secs);
		if (rc)
			failed(c, W_READ, k, strerror(-rc));
		else
			*slot(c, W_READ, k, r) = secs;
	}
	unlink(big);
out:
	target_teardown(c, &tg);
}

/* ---- report -------------------------------------------------------------- */

static double med(struct mctx *c, int w, int k)
{
	double v[64];
	unsigned i, n = c->o->runs;

	for (i = 0; i < n; i++)
		v[i] = *slot(c, w, k, i);
	return median(v, n);
}

/* The value of target @k (host or tmpfs) a pathfs row is compared with. */
static double host_ref(struct mctx *c, int w, int k)
{
	if (w == W_CTL_DU)
		return med(c, W_DU, k);
	if (w == W_CTL_RM)
		return med(c, W_RM, k);
	return med(c, w, k);
}

static const char *fstype(const char *path)
{
	struct statfs sf;

	if (statfs(path, &sf))
		return "?";
	switch ((unsigned long)sf.f_type) {
	case 0xEF53:
		return "ext4";
	case 0x01021994:
		return "tmpfs";
	case 0x58465342:
		return "xfs";
	case 0x9123683E:
		return "btrfs";
	case 0x65735546:
		return "fuse";
	default:
		return "other";
	}
}

static void report(struct mctx *c)
{
	const struct bench_opts *o = c->o;
	char s1[32], s2[32], s3[32], r1[32], r2[32], lab[96];
	int w, k;
	double amount[NW] = {0};
	const char *unit[NW] = {0};

	amount[W_CHURN] = 3.0 * o->churn;
	unit[W_CHURN] = "ops/s";
	amount[W_WRITE] = amount[W_READ] = (double)o->write_mb;
	unit[W_WRITE] = unit[W_READ] = "MiB/s";

	printf("\nmount: %llu-entry tree (%llu files of %zu B), host %s (%s), "
	       "median of %u runs\n",
	       (unsigned long long)shape_entries(&c->sh, 0) + 1,
	       (unsigned long long)shape_files(&c->sh, 0), c->sh.size,
	       c->hostdir, fstype(c->hostdir), o->runs);
	printf(
	    "ratio = pathfs time / other time: below 1 pathfs is faster\n\n");
	printf("%-32s %10s %10s %8s", "workload", "pathfs", "host", "p/host");
	if (wanted(o, T_TMPFS))
		printf(" %10s %8s", "tmpfs", "p/tmpfs");
	if (o->vs_pt)
		printf(" %12s %8s", "passthrough", "p/pt");
	printf("\n");
	for (w = 0; w < NW; w++) {
		double p = med(c, w, T_PATHFS), h = host_ref(c, w, T_HOST);
		double tm = host_ref(c, w, T_TMPFS);
		double pt = med(c, w, T_PT);

		if (!want_w(c, w))
			continue;
		bool ctl = w == W_CTL_DU || w == W_CTL_RM;

		for (k = 0; k < NT; k++) {
			double v = med(c, w, k);

			if (ctl && k != T_PATHFS)
				continue;
			if (!wanted(o, k))
				continue;
			res_add("mount", tname[k], wl[w].metric, v, "s");
			if (unit[w])
				res_add("mount", tname[k], wl[w].metric,
					amount[w] / v, unit[w]);
		}
		res_add("mount", "ratio_vs_host", wl[w].metric, p / h, "x");
		res_plot(MOUNT_PANEL, "vs host", wl[w].label, p / h);
		snprintf(lab, sizeof(lab), "%s", wl[w].label);
		if (w == W_MV)
			snprintf(lab, sizeof(lab), "mv of a %llu-entry folder",
				 (unsigned long long)shape_entries(&c->sh, 1) +
				     1);
		if (w == W_CHURN)
			snprintf(lab, sizeof(lab), "create/stat/unlink %llu",
				 (unsigned long long)o->churn);
		if (w == W_TAR)
			snprintf(
			    lab, sizeof(lab), "tar x, %llu entries %.0f MB",
			    (unsigned long long)c->tar_entries + 1, c->tar_mb);
		if (w == W_CP_REAL || w == W_RSYNC)
			snprintf(lab, sizeof(lab), "%s, %llu entries %.0f MB",
				 w == W_CP_REAL ? "cp -a" : "rsync -a",
				 (unsigned long long)c->copy_entries,
				 c->copy_mb);
		if (w == W_WRITE || w == W_READ)
			snprintf(lab, sizeof(lab), "%s %llu MiB",
				 w == W_WRITE ? "write+fsync" : "read, cold",
				 (unsigned long long)o->write_mb);
		if (unit[w]) {
			fmt_rate(s1, sizeof(s1), amount[w] / p, "");
			fmt_rate(s2, sizeof(s2), amount[w] / h, "");
		} else {
			fmt_secs(s1, sizeof(s1), p);
			fmt_secs(s2, sizeof(s2), h);
		}
		if (!wanted(o, T_PATHFS))
			snprintf(s1, sizeof(s1), "-");
		if (!wanted(o, T_HOST))
			snprintf(s2, sizeof(s2), "-");
		printf("%-32s %10s %10s %8s", lab, s1, s2,
		       fmt_ratio(r1, sizeof(r1), p / h));
		if (wanted(o, T_TMPFS)) {
			if (unit[w])
				fmt_rate(s3, sizeof(s3), amount[w] / tm, "");
			else
				fmt_secs(s3, sizeof(s3), tm);
			printf(" %10s %8s", s3,
			       fmt_ratio(r2, sizeof(r2), p / tm));
			res_add("mount", "ratio_vs_tmpfs", wl[w].metric, p / tm,
				"x");
			res_plot(MOUNT_PANEL, "vs tmpfs", wl[w].label, p / tm);
		}
		if (o->vs_pt) {
			if (ctl) {
				printf(" %12s %8s", "-", "-");
			} else {
				if (unit[w])
					fmt_rate(s3, sizeof(s3), amount[w] / pt,
						 "");
				else
					fmt_secs(s3, sizeof(s3), pt);
				printf(" %12s %8s", s3,
				       fmt_ratio(r2, sizeof(r2), p / pt));
				res_add("mount", "ratio_vs_passthrough",
					wl[w].metric, p / pt, "x");
				res_plot(MOUNT_PANEL, "vs passthrough",
					 wl[w].label, p / pt);
			}
		}
		if (unit[w])
			printf("  (%s)", unit[w]);
		printf("\n");
	}
	printf("\n");
	fflush(stdout);
}

/* ---- passthrough_ll ------------------------------------------------------ */

static int build_passthrough(struct mctx *c)
{
	const char *ex = "/usr/share/doc/libfuse3-dev/examples";
	char src[4200], bin[4200];
	int rc;

	snprintf(src, sizeof(src), "%s/passthrough_ll.c", c->dir);
	snprintf(bin, sizeof(bin), "%s/passthrough_ll", c->dir);
	if (access(ex, R_OK)) {
		progress("%s is missing (libfuse3-dev)", ex);
		return -ENOENT;
	}
	rc =
	    run_sh("cd '%s' && (cp '%s/passthrough_ll.c' . 2>/dev/null || "
		   "zcat '%s/passthrough_ll.c.gz' > passthrough_ll.c) && "
		   "(cp '%s/passthrough_helpers.h' . 2>/dev/null || zcat "
		   "'%s/passthrough_helpers.h.gz' > passthrough_helpers.h "
		   "2>/dev/null; true) && "
		   "cc -O2 -Wall $(pkg-config fuse3 --cflags) passthrough_ll.c "
		   "-o passthrough_ll $(pkg-config fuse3 --libs) >/dev/null "
		   "2>&1",
		   c->dir, ex, ex, ex, ex);
	if (rc || access(bin, X_OK)) {
		progress("cannot compile %s", src);
		return -ENOENT;
	}
	c->pt = strdup(bin);
	return c->pt ? 0 : -ENOMEM;
}

/*
 * The real folders of tar x, cp -a and rsync -a: counts their entries and
 * bytes (what each copy is checked against) and archives --tar-src into our
 * temp dir (uncompressed: the time is the file system's, not gzip's).
 */
static int prepare_real(struct mctx *c)
{
	const struct bench_opts *o = c->o;
	char *copy = NULL, *dir, *base;
	uint64_t bytes = 0;
	int rc = 0;

	if (want_w(c, W_CP_REAL) || want_w(c, W_RSYNC)) {
		rc = count_tree(o->copy_src, &c->copy_entries, &bytes);
		if (rc) {
			progress("cannot walk --copy-src %s: %s", o->copy_src,
				 strerror(-rc));
			goto out;
		}
		c->copy_mb = (double)bytes / 1e6;
	}
	if (!want_w(c, W_TAR))
		goto out;
	rc = count_tree(o->tar_src, &c->tar_entries, &bytes);
	if (rc) {
		progress("cannot walk --tar-src %s: %s", o->tar_src,
			 strerror(-rc));
		goto out;
	}
	c->tar_mb = (double)bytes / 1e6;
	copy = realpath(o->tar_src, NULL);
	if (!copy || !strcmp(copy, "/")) {
		rc = -EINVAL;
		progress("--tar-src %s: not a folder below /", o->tar_src);
		goto out;
	}
	base = strrchr(copy, '/');
	*base++ = '\0';
	dir = copy[0] ? copy : (char *)"/";
	snprintf(c->archive, sizeof(c->archive), "%s/src.tar", c->dir);
	progress("archiving %s/%s (%llu entries) for tar x", dir, base,
		 (unsigned long long)c->tar_entries + 1);
	if (run_sh("tar cf '%s' -C '%s' '%s'", c->archive, dir, base)) {
		rc = -EIO;
		progress("cannot archive %s", o->tar_src);
	}
out:
	free(copy);
	return rc;
}

/* Whether target @k runs (--vs-passthrough, --targets). */
static bool wanted(const struct bench_opts *o, int k)
{
	char list[256], *tok, *save = NULL;

	if (k == T_PT && !o->vs_pt)
		return false;
	if (k == T_TMPFS && (!o->tmpfs || !strcmp(o->tmpfs, "none")))
		return false;
	if (!o->targets)
		return true;
	snprintf(list, sizeof(list), "%s", o->targets);
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, tname[k]))
			return true;
	return false;
}

/*
 * passthrough_ll keeps an O_PATH fd open for every inode the kernel knows:
 * the whole tree plus the cp -a copy at the peak, and every churn file. Past
 * RLIMIT_NOFILE it fails with EMFILE, which would be measured as a failure of
 * the workload. Raising the limit needs CAP_SYS_RESOURCE above the hard
 * limit; when the workload does not fit, say so and refuse.
 */
static int check_nofile(struct mctx *c)
{
	uint64_t lim = raise_nofile();
	uint64_t peak =
	    shape_entries(&c->sh, 0) + shape_entries(&c->sh, 1) + 16;

	if (c->o->churn + 16 > peak)
		peak = c->o->churn + 16;
	progress("passthrough_ll: RLIMIT_NOFILE %llu, needs about %llu",
		 (unsigned long long)lim, (unsigned long long)peak + 64);
	if (peak + 64 <= lim)
		return 0;
	progress("passthrough_ll holds one fd per inode and RLIMIT_NOFILE "
		 "cannot go above %llu here: use a tree of at most about "
		 "%llu entries and --churn below that (e.g. --files 10000 "
		 "--churn 10000)",
		 (unsigned long long)lim,
		 (unsigned long long)(lim - 100) * 9 / 10);
	return -EMFILE;
}

int bench_mount(const struct bench_opts *o)
{
	struct mctx c = {.o = o};
	unsigned r;
	size_t i, n;
	int k, rc;

	shape_init(&c.sh, o->files, o->fanout, o->depth, o->size);
	if (o->depth < 1) {
		progress("mount: needs --depth of at least 1");
		return -EINVAL;
	}
	c.pathfs = find_prog(o->pathfs, "pathfs");
	c.pathfsctl = find_prog(o->pathfsctl, "pathfsctl");
	if (!c.pathfs || !c.pathfsctl) {
		progress("mount: cannot find %s (use --pathfs/--pathfsctl)",
			 c.pathfs ? "pathfsctl" : "pathfs");
		rc = -ENOENT;
		goto out;
	}
	rc = make_tmpdir(o, c.dir, sizeof(c.dir));
	if (rc) {
		progress("cannot make a temp dir in %s", o->tmp);
		goto out;
	}
	if (o->host) {
		snprintf(c.hostdir, sizeof(c.hostdir), "%s/pathfs-bench.XXXXXX",
			 o->host);
		if (!mkdtemp(c.hostdir)) {
			rc = -errno;
			progress("cannot make a folder in %s: %s", o->host,
				 strerror(errno));
			c.hostdir[0] = '\0';
			goto out;
		}
	} else {
		snprintf(c.hostdir, sizeof(c.hostdir), "%s/host", c.dir);
		if (mkdir(c.hostdir, 0755)) {
			rc = -errno;
			goto out;
		}
	}
	if (wanted(o, T_TMPFS)) {
		snprintf(c.tmpfsdir, sizeof(c.tmpfsdir),
			 "%s/pathfs-bench.XXXXXX", o->tmpfs);
		if (!mkdtemp(c.tmpfsdir)) {
			rc = -errno;
			progress("cannot make a folder in %s: %s", o->tmpfs,
				 strerror(errno));
			c.tmpfsdir[0] = '\0';
			goto out;
		}
	}
	rc = prepare_real(&c);
	if (rc)
		goto out;
	if (o->vs_pt) {
		rc = build_passthrough(&c);
		if (rc)
			goto out;
		rc = check_nofile(&c);
		if (rc)
			goto out;
	}
	n = (size_t)NW * NT * o->runs;
	c.t = malloc(n * sizeof(*c.t));
	c.buf = malloc(CHUNK);
	c.rbuf = malloc(CHUNK);
	if (!c.t || !c.buf || !c.rbuf) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		c.t[i] = NAN;
	for (i = 0; i < CHUNK; i++)
		c.buf[i] = (char)('a' + (i * 7 + i / 4096) % 26);
	progress("mount: pathfs %s, host %s (%s), temp %s", c.pathfs, c.hostdir,
		 fstype(c.hostdir), c.dir);
	for (r = 0; r < o->runs; r++)
		for (k = 0; k < NT; k++)
			if (wanted(o, k))
				run_target(&c, k, r);
	report(&c);
	rc = c.failures ? -EIO : 0;
out:
	if (c.dir[0] && !o->keep)
		run_sh("rm -rf '%s'", c.dir);
	if (o->host && c.hostdir[0] && !o->keep)
		run_sh("rm -rf '%s'", c.hostdir);
	if (c.tmpfsdir[0] && !o->keep)
		run_sh("rm -rf '%s'", c.tmpfsdir);
	free(c.t);
	free(c.buf);
	free(c.rbuf);
	free(c.pathfs);
	free(c.pathfsctl);
	free(c.pt);
	return rc;
}
