/*
 * bench_mount.c - `pathfs-bench mount`: the standard tools through the kernel
 * on pathfs and on three references, in alternation, medians reported:
 *
 *   ext4    a fresh ext4 (a loop image formatted for each run; or a fresh
 *           folder in --host DIR): what a disk file system costs
 *   tmpfs   a fresh tmpfs: what the kernel's own in-memory file system
 *           costs
 *   floor   pathfs-floor, an in-memory FUSE daemon doing no storage work
 *           that the kernel sends the requests it sends pathfs (its INIT
 *           answer, options and timeouts): what any daemon costs on this
 *           machine's FUSE transport. pathfs / floor is pathfs's own cost.
 *
 * pathfs's store is on a freshly formatted image too (in --host with it).
 * Nothing is measured on a long-lived file system: the same create of 100k
 * files took 2 s and 48 s on the machine's long-lived /tmp ext4 (issue 29).
 *
 * One run of one target, on a fresh store or file system:
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
 * Requests per created file: the requests pathfs and the floor answered
 * while the tree was created, by their own counts (pathfsctl stats, the
 * floor's stats file), over the files created. This kernel's
 * fuse:fuse_request_send tracepoint would count them too, but needs tracefs
 * and a reader of every event; the two counts agree (tests/mount/
 * bench_floor.sh checks that the floor gets pathfs's requests).
 *
 * The pathfsctl rows compare `pathfsctl du` with `du -s` and `pathfsctl rm -r`
 * with `rm -rf` on each reference (the same tree).
 *
 * Limits: needs root (mounts, loop devices, drop_caches) and mkfs.ext4.
 * "Cold" means a fresh daemon and dropped kernel caches; RocksDB's files
 * come back from disk then too. The image lives in --tmp: its writes reach
 * the disk through the file system there.
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

const char *const tname[NT] = {"pathfs", "ext4", "tmpfs", "floor"};

const struct mount_wl wl[NW] = {
    [W_CREATE] = {"create_tree", "create the tree"},
    [W_FIND_COLD] = {"find_cold", "find, first after mount"},
    [W_FIND_WARM] = {"find_warm", "find, warm"},
    [W_DU] = {"du_s", "du -s"},
    [W_LSLR] = {"ls_lR", "ls -lR, warm"},
    [W_LSLR_COLD] = {"ls_lR_cold", "ls -lR, first after mount"},
    [W_STAT] = {"stat_all", "stat of every entry"},
    [W_CTL_DU] = {"pathfsctl_du", "pathfsctl du (others: du -s)"},
    [W_MV] = {"mv_folder", "mv of the depth-1 folder"},
    [W_CP] = {"cp_a_folder", "cp -a of it"},
    [W_RM] = {"rm_rf_tree", "rm -rf of the tree"},
    [W_CTL_RM] = {"pathfsctl_rm_r", "pathfsctl rm -r (others: rm -rf)"},
    [W_CHURN] = {"create_stat_unlink", "create/stat/unlink, one folder"},
    [W_TAR] = {"tar_x", "tar x of --tar-src"},
    [W_CP_REAL] = {"cp_a_real", "cp -a of --copy-src"},
    [W_RSYNC] = {"rsync_a_real", "rsync -a of --copy-src"},
    [W_WRITE] = {"write_fsync", "sequential write + fsync"},
    [W_READ] = {"read_cold", "sequential read, cold"},
};

double *slot(struct mctx *c, int w, int k, unsigned r)
{
	return &c->t[((size_t)w * NT + k) * c->o->runs + r];
}

void failed(struct mctx *c, int w, int k, const char *why)
{
	progress("FAIL: %s on %s: %s", wl[w].label, tname[k], why);
	c->failures++;
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

/* The requests FUSE target @tg answered since @before (the tree's create)
 * per file created, into c->reqs and c->ops. */
static void count_requests(struct mctx *c, struct target *tg, unsigned r,
			   const struct reqs *before)
{
	struct reqs *d = &c->ops[tg->kind];
	uint64_t total = 0;
	unsigned i;
	int rc;

	rc = target_requests(c, tg, before, d);
	if (rc) {
		progress("FAIL: cannot count the requests of %s: %s",
			 tname[tg->kind], strerror(-rc));
		c->failures++;
		d->n = 0;
		return;
	}
	for (i = 0; i < d->n; i++)
		total += d->count[i];
	c->reqs[tg->kind * c->o->runs + r] =
	    (double)total / (double)shape_files(&c->sh, 0);
}

static void run_target(struct mctx *c, int k, unsigned r)
{
	const struct bench_opts *o = c->o;
	struct target tg;
	char root[4300], a[4400], b[4400], big[4300], out[4096];
	uint64_t entries = shape_entries(&c->sh, 0) + 1; /* + the root */
	struct cwalk w = {.size = c->sh.size};
	struct reqs before;
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
	rc = tg.fuse ? target_requests(c, &tg, NULL, &before) : 0;
	if (!rc)
		rc = create_tree(c, root, &secs);
	if (rc) {
		failed(c, W_CREATE, k, strerror(-rc));
		goto out; /* nothing below means anything without the tree */
	}
	*slot(c, W_CREATE, k, r) = secs;
	if (tg.fuse)
		count_requests(c, &tg, r, &before);

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

/* Whether target @k runs (--targets). */
bool wanted(const struct bench_opts *o, int k)
{
	return bench_wanted(o, tname[k]);
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
	c.floor = find_prog(o->floor, "pathfs-floor");
	if (!c.pathfs || !c.pathfsctl || !c.floor) {
		progress("mount: cannot find %s (use --pathfs/--pathfsctl/"
			 "--floor)",
			 !c.pathfs	? "pathfs"
			 : !c.pathfsctl ? "pathfsctl"
					: "pathfs-floor");
		rc = -ENOENT;
		goto out;
	}
	rc = make_tmpdir(o, c.dir, sizeof(c.dir));
	if (rc) {
		progress("cannot make a temp dir in %s", o->tmp);
		goto out;
	}
	rc = prepare_real(&c);
	if (rc)
		goto out;
	rc = targets_prepare(&c);
	if (rc)
		goto out;
	n = (size_t)NW * NT * o->runs;
	c.t = malloc(n * sizeof(*c.t));
	c.reqs = malloc((size_t)NT * o->runs * sizeof(*c.reqs));
	c.buf = malloc(CHUNK);
	c.rbuf = malloc(CHUNK);
	if (!c.t || !c.reqs || !c.buf || !c.rbuf) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		c.t[i] = NAN;
	for (i = 0; i < (size_t)NT * o->runs; i++)
		c.reqs[i] = NAN;
	for (i = 0; i < CHUNK; i++)
		c.buf[i] = (char)('a' + (i * 7 + i / 4096) % 26);
	progress("mount: pathfs %s, floor %s, ext4 %s, temp %s", c.pathfs,
		 c.floor, c.hostdir[0] ? c.hostdir : "a fresh image", c.dir);
	for (r = 0; r < o->runs; r++)
		for (k = 0; k < NT; k++)
			if (wanted(o, k))
				run_target(&c, k, r);
	mount_report(&c);
	rc = c.failures ? -EIO : 0;
out:
	if (c.dir[0] && !o->keep)
		run_sh("rm -rf '%s'", c.dir);
	if (c.hostdir[0] && !o->keep)
		run_sh("rm -rf '%s'", c.hostdir);
	free(c.t);
	free(c.reqs);
	free(c.buf);
	free(c.rbuf);
	free(c.pathfs);
	free(c.pathfsctl);
	free(c.floor);
	return rc;
}
