/*
 * bench_mount_target.c - the targets of `pathfs-bench mount`: a fresh store
 * or folder per run, the FUSE mounts (pathfs, passthrough_ll) and their cold
 * remounts, teardown, and building libfuse's passthrough_ll with its fd
 * limit. See bench_mount_i.h.
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

int target_setup(struct mctx *c, struct target *tg, int kind, unsigned run)
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

void target_teardown(struct mctx *c, struct target *tg)
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

/* Remounts a FUSE target (a fresh daemon) and drops the kernel's caches. */
int make_cold(struct mctx *c, struct target *tg, int w)
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

/* ---- passthrough_ll ------------------------------------------------------ */

int build_passthrough(struct mctx *c)
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
 * passthrough_ll keeps an O_PATH fd open for every inode the kernel knows:
 * the whole tree plus the cp -a copy at the peak, and every churn file. Past
 * RLIMIT_NOFILE it fails with EMFILE, which would be measured as a failure of
 * the workload. Raising the limit needs CAP_SYS_RESOURCE above the hard
 * limit; when the workload does not fit, say so and refuse.
 */
int check_nofile(struct mctx *c)
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
