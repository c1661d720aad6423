/*
 * bench_mount_target.c - the targets of `pathfs-bench mount`: each run on a
 * freshly made file system, so that no target inherits another's or an
 * earlier run's state:
 *
 *   ext4    a loop image in our temp dir, formatted with mkfs.ext4 (inode
 *           tables written at once: no lazy init thread during the run)
 *           and mounted; or a fresh folder in --host
 *   tmpfs   a tmpfs mounted for the run
 *   pathfs  a fresh store on a freshly formatted image (in --host with it),
 *           so pathfs writes to the file system the ext4 column measures
 *   floor   pathfs-floor, mounted afresh
 *
 * The image and the tmpfs are sized for the workloads (targets_prepare());
 * the image is sparse. Also the cold remounts, teardown, and the requests the
 * FUSE daemons counted (pathfsctl stats of pathfs, the floor's stats file).
 * See bench_mount_i.h.
 *
 * Limits: needs root (mount, loop devices) and mkfs.ext4 (e2fsprogs).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_mount_i.h"

/* The bytes a file of @size takes on ext4 (4 KiB blocks). */
static uint64_t on_disk(uint64_t size)
{
	return (size + 4095) / 4096 * 4096;
}

int targets_prepare(struct mctx *c)
{
	const struct bench_opts *o = c->o;
	uint64_t files = shape_files(&c->sh, 0), dirs = shape_dirs(&c->sh, 0);
	uint64_t tree, real, bytes, entries;

	/* the tree and cp -a of its depth-1 branch, then one real copy at a
	 * time, then the sequential file; pathfs's store holds about as much
	 * again in its write-ahead log before a flush */
	tree = files * on_disk(c->sh.size) + (dirs + 1) * 4096;
	tree += tree / c->sh.fanout;
	real =
	    (uint64_t)((c->tar_mb > c->copy_mb ? c->tar_mb : c->copy_mb) * 1e6);
	real += 4096 * (c->tar_entries > c->copy_entries ? c->tar_entries
							 : c->copy_entries);
	bytes = 2 * (tree + real + (o->write_mb << 20)) + (256ull << 20);
	c->ref_mb = bytes >> 20;
	entries = shape_entries(&c->sh, 0) + shape_entries(&c->sh, 1);
	entries +=
	    c->tar_entries > c->copy_entries ? c->tar_entries : c->copy_entries;
	c->ref_inodes = entries + o->churn + 65536;
	snprintf(c->refmnt, sizeof(c->refmnt), "%s/ref", c->dir);
	snprintf(c->image, sizeof(c->image), "%s/ext4.img", c->dir);
	if (mkdir(c->refmnt, 0755))
		return -errno;
	if (!o->host)
		return 0;
	snprintf(c->hostdir, sizeof(c->hostdir), "%s/pathfs-bench.XXXXXX",
		 o->host);
	if (!mkdtemp(c->hostdir)) {
		progress("cannot make a folder in %s: %s", o->host,
			 strerror(errno));
		c->hostdir[0] = '\0';
		return -errno;
	}
	return 0;
}

/* Formats the image afresh and mounts it on c->refmnt (tg->made). */
static int fresh_ext4(struct mctx *c, struct target *tg)
{
	int rc =
	    ext4_image_mount(c->image, c->refmnt, c->ref_mb, c->ref_inodes);

	if (!rc)
		snprintf(tg->made, sizeof(tg->made), "%s", c->refmnt);
	return rc;
}

/* Mounts a fresh tmpfs on c->refmnt (tg->made). */
static int fresh_tmpfs(struct mctx *c, struct target *tg)
{
	if (run_sh("mount -t tmpfs -o size=%lluM,mode=0755 pathfs-bench '%s'",
		   (unsigned long long)c->ref_mb, c->refmnt)) {
		progress("cannot mount a tmpfs on %s", c->refmnt);
		return -ECHILD;
	}
	ref_mounted(c->refmnt);
	snprintf(tg->made, sizeof(tg->made), "%s", c->refmnt);
	return 0;
}

static int target_mount(struct mctx *c, struct target *tg)
{
	char opt[4200];
	char *pathfs[] = {c->pathfs, (char *)"-f", tg->store, tg->mnt, NULL};
	char *floor[] = {c->floor, (char *)"-f", (char *)"-o",
			 opt,	   tg->mnt,	 NULL};
	int rc;

	snprintf(opt, sizeof(opt), "stats=%s", tg->stats);
	rc = fs_mount(&tg->m, tg->kind == T_PATHFS ? pathfs : floor, tg->mnt,
		      tg->log);
	if (rc)
		progress("cannot mount %s on %s: %s (log: %s)", tname[tg->kind],
			 tg->mnt, strerror(-rc), tg->log);
	return rc;
}

/* A fresh folder @name in --host's folder, or in a fresh file system made
 * by @fresh, into @out. */
static int fresh_dir(struct mctx *c, struct target *tg,
		     int (*fresh)(struct mctx *, struct target *),
		     const char *name, unsigned run, char *out, size_t len)
{
	int rc;

	if (c->hostdir[0] && fresh == fresh_ext4) {
		snprintf(out, len, "%s/%s-%u", c->hostdir, name, run);
	} else {
		rc = fresh(c, tg);
		if (rc)
			return rc;
		snprintf(out, len, "%s/%s", c->refmnt, name);
	}
	return 0;
}

int target_setup(struct mctx *c, struct target *tg, int kind, unsigned run)
{
	int rc = 0;

	memset(tg, 0, sizeof(*tg));
	tg->kind = kind;
	tg->fuse = kind == T_PATHFS || kind == T_FLOOR;
	snprintf(tg->log, sizeof(tg->log), "%s/%s.log", c->dir, tname[kind]);
	snprintf(tg->mnt, sizeof(tg->mnt), "%s/mnt-%s", c->dir, tname[kind]);
	switch (kind) {
	case T_PATHFS: /* the store is made by the daemon */
		rc = fresh_dir(c, tg, fresh_ext4, "store", run, tg->store,
			       sizeof(tg->store));
		break;
	case T_FLOOR:
		snprintf(tg->stats, sizeof(tg->stats), "%s/floor-stats.json",
			 c->dir);
		break;
	default:
		rc =
		    fresh_dir(c, tg, kind == T_TMPFS ? fresh_tmpfs : fresh_ext4,
			      "work", run, tg->base, sizeof(tg->base));
		if (!rc && mkdir(tg->base, 0755))
			rc = -errno;
		return rc;
	}
	if (rc)
		return rc;
	snprintf(tg->base, sizeof(tg->base), "%s", tg->mnt);
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
	if (tg->made[0]) {
		if (ref_umount(tg->made))
			c->failures++;
		unlink(c->image);
	} else if (tg->kind == T_PATHFS) {
		run_sh("rm -rf '%s'", tg->store);
	} else if (!tg->fuse) {
		run_sh("rm -rf '%s'", tg->base);
	}
}

/* Remounts pathfs (a fresh daemon) and drops the kernel's caches. The
 * floor keeps its tree only while mounted: its caches are the kernel's. */
int make_cold(struct mctx *c, struct target *tg, int w)
{
	if (tg->kind == T_PATHFS) {
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

/* ---- requests counted by the daemons ------------------------------------ */

/* Reads the "OPCODE": {"count": N pairs of pathfsctl stats --json's form. */
static int parse_reqs(const char *json, struct reqs *out)
{
	static const char key[] = "\": {\"count\": ";
	const char *p = json, *q, *name;

	memset(out, 0, sizeof(*out));
	if (!strstr(json, "\"ops\""))
		return -ENOENT;
	while ((q = strstr(p, key)) && out->n < MAX_OPS) {
		for (name = q; name > json && name[-1] != '"'; name--)
			;
		snprintf(out->name[out->n], sizeof(out->name[0]), "%.*s",
			 (int)(q - name), name);
		out->count[out->n++] = strtoull(q + sizeof(key) - 1, NULL, 10);
		p = q + 1;
	}
	return 0;
}

/* The count of opcode @name in @r (0 if none). */
static uint64_t reqs_of(const struct reqs *r, const char *name)
{
	unsigned i;

	for (i = 0; i < r->n; i++)
		if (!strcmp(r->name[i], name))
			return r->count[i];
	return 0;
}

/* The daemon's counts so far into @out. */
static int snapshot(struct mctx *c, struct target *tg, struct reqs *out)
{
	char json[16384];
	double secs, deadline = now_s() + 10;
	FILE *f;
	size_t n;
	int rc;

	if (tg->kind == T_PATHFS) {
		char *argv[] = {c->pathfsctl,	 (char *)"-s",	   tg->store,
				(char *)"stats", (char *)"--json", NULL};

		rc = run_cmd(argv, &secs, NULL, json, sizeof(json));
		return rc ? rc : parse_reqs(json, out);
	}
	unlink(tg->stats);
	if (kill(tg->m.pid, SIGUSR1))
		return -errno;
	while (!(f = fopen(tg->stats, "re"))) {
		if (now_s() > deadline)
			return -ETIMEDOUT;
		usleep(10000);
	}
	n = fread(json, 1, sizeof(json) - 1, f);
	json[n] = '\0';
	fclose(f);
	return parse_reqs(json, out);
}

int target_requests(struct mctx *c, struct target *tg,
		    const struct reqs *before, struct reqs *out)
{
	double deadline = now_s() + 5;
	unsigned i;
	int rc;

	for (;;) {
		rc = snapshot(c, tg, out);
		if (rc || !before)
			return rc;
		for (i = 0; i < out->n; i++)
			out->count[i] -= reqs_of(before, out->name[i]);
		/* RELEASE comes after close(2) returns */
		if (reqs_of(out, "RELEASE") ==
			reqs_of(out, "OPEN") + reqs_of(out, "CREATE") &&
		    reqs_of(out, "RELEASEDIR") == reqs_of(out, "OPENDIR"))
			return 0;
		if (now_s() > deadline)
			return -ETIMEDOUT;
		usleep(20000);
	}
}
