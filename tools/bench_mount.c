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

#include "bench_mount_i.h"

const char *const tname[NT] = {"pathfs", "host", "tmpfs", "passthrough"};

const struct mount_wl wl[NW] = {
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

/* Whether target @k runs (--vs-passthrough, --targets). */
bool wanted(const struct bench_opts *o, int k)
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
	mount_report(&c);
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
