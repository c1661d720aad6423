/*
 * bench_mount_work.c - the workloads of `pathfs-bench mount` that this
 * process runs itself, timed (creating and stat'ing the generated tree,
 * create/stat/unlink churn, sequential write and read), the copies (tar x,
 * cp -a, rsync -a) checked by their entry count, and the real folders they
 * copy. See bench_mount_i.h.
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

#include "bench_mount_i.h"

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

int stat_one(void *ctx, const char *path, bool dir)
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

int create_tree(struct mctx *c, const char *root, double *secs)
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

int churn(struct mctx *c, const char *base, double *secs)
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

int seq_write(struct mctx *c, const char *path, double *secs)
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

int seq_read(struct mctx *c, const char *path, double *secs)
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
bool want_w(const struct mctx *c, int w)
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
int count_tree(const char *dir, uint64_t *n, uint64_t *bytes)
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
void timed_copy(struct mctx *c, int w, int k, unsigned r, char *const argv[],
		const char *dst, uint64_t want)
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

/*
 * The real folders of tar x, cp -a and rsync -a: counts their entries and
 * bytes (what each copy is checked against) and archives --tar-src into our
 * temp dir (uncompressed: the time is the file system's, not gzip's).
 */
int prepare_real(struct mctx *c)
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
