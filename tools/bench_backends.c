/*
 * bench_backends.c - `pathfs-bench backends`: the same workloads through the
 * mount on a drive in the embedded RocksDB store, on a drive in a 3-member
 * etcd cluster, and on one mounted -o shared there (a writer of several,
 * alone: issue 24's "a single writer within 10% of today's figures"), in
 * one run: the backends alternate (run 1 forward, run 2 backward, ...),
 * medians, the etcd / RocksDB and the shared / etcd ratios are reported,
 * with the targets for etcd (13: rename rewrite >= 5,000
 * entries/s, subtree scan >= 30,000 entries/s, `ls -l` of 1,000 entries
 * < 0.2 s).
 *
 * The cluster: started here (bench_etcd.c: loopback ports, data in our temp
 * dir, stopped by pid on every way out), afresh for every etcd run
 * (fresh_cluster: a run on a cluster that earlier runs used is slower), or
 * --etcd ENDPOINTS for one that runs already; each run's drive is a fresh
 * key prefix, deleted after it.
 *
 * One run of one backend, on a fresh drive, mounted:
 *   create the generated tree (--files, --fanout, --depth; 2,000 files in
 *   20 folders by default: a create through the mount costs 20-60 ms on
 *   etcd at load 15) and a folder of 1,000 files; pathfsctl cp -r of the
 *   tree SCAN_COPIES times into one folder, the scan tree (10,106 entries
 *   by default: on a tree of 2,000 the fixed costs of a command, a mount
 *   and a connection hide the rates the targets are about); remount (a
 *   fresh daemon) and drop the kernel's caches, find of the scan tree, then
 *   with the caches dropped before each: du -s of it, ls -l of the
 *   1,000-file folder; pathfsctl du of the scan tree (the store's own
 *   subtree scan, in the daemon: the target's "subtree scan"); caches
 *   dropped, mv of the scan tree (every key rewritten: the rename rate);
 *   create/stat/unlink of --churn files in one folder (500); sequential
 *   write of --write-mb MiB (64) with fsync and its read with the caches
 *   dropped. Every step checks what it can (entry counts, lines, the bytes
 *   read back, the tree moved); a failed step is FAIL and exit status 1.
 *
 * --writers N: create/stat/unlink and mv of a folder by several writers of
 * one etcd drive through the store instead (bench_writers.c), on the same
 * cluster.
 *
 * Not in `all`: it needs etcd (etcd-server, etcd-client) and takes minutes.
 *
 * Limits: needs root (mounts, drop_caches). The three members share this
 * machine's disk and CPUs with the daemon and the tools: the numbers are a
 * loopback cluster's, every commit a quorum of fsyncs on one disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_mount_i.h"

/* etcd-shared: the same etcd drive mounted -o shared, a writer of several
 * (issue 24) that is here the only one: what the conditioned commits, the
 * branch lock's checks and the watch of the others cost a lone writer */
enum { B_ROCKSDB, B_ETCD, B_SHARED, NB };
static const char *const bname[NB] = {"rocksdb", "etcd", "etcd-shared"};

enum {
	BW_CREATE,
	BW_CLONE,
	BW_FIND,
	BW_DU,
	BW_LSL,
	BW_CTL_DU,
	BW_MV,
	BW_CHURN,
	BW_WRITE,
	BW_READ,
	NBW
};

#define LS_FILES    1000
#define SCAN_COPIES 5

/* What each workload is, per run: the amount its rate counts. */
enum { A_TREE, A_CLONED, A_SCAN, A_LS, A_CHURN, A_MB, NA };
static const struct {
	const char *metric, *label, *unit;
	int amount;
} bw[NBW] = {
    [BW_CREATE] = {"create_tree", "create the tree", "entries/s", A_TREE},
    [BW_CLONE] = {"pathfsctl_cp", "pathfsctl cp -r (clone)", "entries/s",
		  A_CLONED},
    [BW_FIND] = {"find_cold", "find, fresh mount", "entries/s", A_SCAN},
    [BW_DU] = {"du_s", "du -s, cold", "entries/s", A_SCAN},
    [BW_LSL] = {"ls_l_1000", "ls -l of 1,000 entries", "entries/s", A_LS},
    [BW_CTL_DU] = {"pathfsctl_du", "pathfsctl du (store scan)", "entries/s",
		   A_SCAN},
    [BW_MV] = {"mv_tree", "mv of the tree (rewrite)", "entries/s", A_SCAN},
    [BW_CHURN] = {"create_stat_unlink", "create/stat/unlink", "ops/s", A_CHURN},
    [BW_WRITE] = {"write_fsync", "sequential write + fsync", "MiB/s", A_MB},
    [BW_READ] = {"read_cold", "sequential read, cold", "MiB/s", A_MB},
};

struct bctx {
	struct mctx
	    m; /* the tree, buffers and options for bench_mount_work.c */
	char endpoints[512];
	char etcd_dir[2100];
	bool own_cluster;
	double *t; /* [w][backend][run] seconds, NaN = failed */
	int failures;
};

static double *bslot(struct bctx *c, int w, int b, unsigned r)
{
	return &c->t[((size_t)w * NB + b) * c->m.o->runs + r];
}

static void bfailed(struct bctx *c, int w, int b, const char *why)
{
	progress("FAIL: %s on %s: %s", bw[w].label, bname[b], why);
	c->failures++;
}

/* Runs @argv as workload @w; checks its line count against @want_lines
 * when that is not 0. Returns 0 if it was recorded. */
static int btimed(struct bctx *c, int w, int b, unsigned r, char *const argv[],
		  uint64_t want_lines, char *out, size_t outlen)
{
	uint64_t lines = 0;
	double secs;
	char why[128];
	int rc;

	rc = run_cmd(argv, &secs, &lines, out, outlen);
	if (rc) {
		bfailed(c, w, b,
			rc == -ECHILD ? "command failed" : strerror(-rc));
		return rc;
	}
	if (want_lines && lines != want_lines) {
		snprintf(why, sizeof(why), "saw %llu lines, expected %llu",
			 (unsigned long long)lines,
			 (unsigned long long)want_lines);
		bfailed(c, w, b, why);
		return -EIO;
	}
	*bslot(c, w, b, r) = secs;
	return 0;
}

/* A drive of backend @b for run @r: its STORE argument, mount point, log. */
struct drive {
	int b;
	char store[4200], mnt[4200], log[4200], name[64];
	char *argv[8];
	char logopt[4300];
	struct fsmount fm;
};

static int drive_mount(struct bctx *c, struct drive *d)
{
	int rc;

	d->argv[0] = c->m.pathfs;
	d->argv[1] = (char *)"-f";
	d->argv[2] = (char *)"-o";
	d->argv[3] = d->logopt;
	d->argv[4] = d->store;
	d->argv[5] = d->mnt;
	d->argv[6] = NULL;
	rc = fs_mount(&d->fm, d->argv, d->mnt, d->log);
	if (rc)
		progress("cannot mount %s on %s: %s (log: %s)", d->store,
			 d->mnt, strerror(-rc), d->log);
	return rc;
}

static int drive_setup(struct bctx *c, struct drive *d, int b, unsigned r)
{
	memset(d, 0, sizeof(*d));
	d->b = b;
	snprintf(d->log, sizeof(d->log), "%s/%s.log", c->m.dir, bname[b]);
	snprintf(d->logopt, sizeof(d->logopt), "log=%s%s", d->log,
		 b == B_SHARED ? ",shared" : "");
	snprintf(d->mnt, sizeof(d->mnt), "%s/mnt-%s", c->m.dir, bname[b]);
	if (b == B_ROCKSDB) {
		snprintf(d->store, sizeof(d->store), "%s/store-%u", c->m.dir,
			 r);
	} else {
		snprintf(d->name, sizeof(d->name), "pathfs-bench-%d-%u",
			 (int)getpid(), r);
		snprintf(d->store, sizeof(d->store), "etcd://%s/%s",
			 c->endpoints, d->name);
	}
	if (mkdir(d->mnt, 0755) && errno != EEXIST)
		return -errno;
	return drive_mount(c, d);
}

static void drive_teardown(struct bctx *c, struct drive *d)
{
	if (fs_umount(&d->fm)) {
		progress("%s did not shut down cleanly; see %s", bname[d->b],
			 d->log);
		c->failures++;
	}
	if (d->b == B_ROCKSDB)
		run_sh("rm -rf '%s'", d->store);
	else if (d->name[0])
		etcd_drop_store(c->endpoints, d->name);
}

/* A fresh daemon and dropped kernel caches. */
static int drive_cold(struct bctx *c, struct drive *d, int w)
{
	if (fs_umount(&d->fm)) {
		bfailed(c, w, d->b, "unmount failed");
		return -EIO;
	}
	drop_caches(c->m.o);
	if (drive_mount(c, d)) {
		bfailed(c, w, d->b, "remount failed");
		return -EIO;
	}
	return 0;
}

/* Creates @n empty files in folder @dir (made). Errors: -errno. */
static int make_files(const char *dir, unsigned n)
{
	char p[4400];
	unsigned i;
	int fd;

	if (mkdir(dir, 0755))
		return -errno;
	for (i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/e%05u", dir, i);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 || close(fd))
			return -errno;
	}
	return 0;
}

/* pathfsctl cp -r of /t to /s/c1 ... /s/cSCAN_COPIES (/s made by the
 * caller): *secs the commands' time, summed. Errors: -errno, -ECHILD for a
 * command that failed. */
static int clone_copies(struct bctx *c, struct drive *d, double *secs)
{
	char dst[32];
	char *argv[] = {c->m.pathfsctl, (char *)"-s", d->store, (char *)"cp",
			(char *)"-r",	(char *)"/t", dst,	NULL};
	double s;
	int i, rc;

	*secs = 0;
	for (i = 1; i <= SCAN_COPIES; i++) {
		snprintf(dst, sizeof(dst), "/s/c%d", i);
		rc = run_cmd(argv, &s, NULL, NULL, 0);
		if (rc)
			return rc;
		*secs += s;
	}
	return 0;
}

/*
 * Our own cluster, started afresh in an empty folder (a cluster given with
 * --etcd is left as it is): every etcd run gets one. Runs on one cluster
 * are not alike: each deletes its drive's keys after it, but etcd keeps
 * their revisions until it compacts, and its database grows, so a later
 * run pays for the earlier ones. With one run, etcd-shared after etcd
 * measured 1.9x-2.7x etcd's time on create/stat/unlink, and 0.6x-0.8x when
 * it went first (same code, same load).
 */
static int fresh_cluster(struct bctx *c)
{
	int rc;

	if (!c->own_cluster)
		return 0;
	etcd_stop();
	run_sh("rm -rf '%s'", c->etcd_dir);
	if (mkdir(c->etcd_dir, 0700))
		return -errno;
	progress("backends: starting a fresh 3-member etcd cluster in %s",
		 c->etcd_dir);
	rc = etcd_start(c->etcd_dir, c->endpoints, sizeof(c->endpoints));
	if (rc)
		progress("backends: the etcd cluster did not start: %s",
			 strerror(-rc));
	return rc;
}

static void run_backend(struct bctx *c, int b, unsigned r)
{
	const struct bench_opts *o = c->m.o;
	const struct shape *sh = &c->m.sh;
	uint64_t entries = shape_entries(sh, 0) + 1; /* + the root */
	uint64_t scanned = SCAN_COPIES * entries + 1;
	uint64_t sdirs = SCAN_COPIES * (shape_dirs(sh, 0) + 1);
	char root[4300], scan[4300], moved[4400], ls[4300], big[4300];
	char out[4096];
	struct drive d;
	struct stat st;
	double secs;
	int rc;

	progress("backends: run %u/%u, %s", r + 1, o->runs, bname[b]);
	rc = drive_setup(c, &d, b, r);
	if (rc) {
		c->failures++;
		goto out;
	}
	snprintf(root, sizeof(root), "%s/t", d.mnt);
	snprintf(scan, sizeof(scan), "%s/s", d.mnt);
	snprintf(moved, sizeof(moved), "%s/s.moved", d.mnt);
	snprintf(ls, sizeof(ls), "%s/ls", d.mnt);

	progress("  create the tree (%llu entries) and %u files in a folder",
		 (unsigned long long)entries, LS_FILES);
	rc = create_tree(&c->m, root, &secs);
	if (rc) {
		bfailed(c, BW_CREATE, b, strerror(-rc));
		goto out;
	}
	*bslot(c, BW_CREATE, b, r) = secs;
	rc = make_files(ls, LS_FILES);
	if (rc) {
		bfailed(c, BW_LSL, b, strerror(-rc));
		goto out;
	}
	progress("  pathfsctl cp -r of the tree, %d copies", SCAN_COPIES);
	rc = mkdir(scan, 0755) ? -errno : clone_copies(c, &d, &secs);
	if (rc) {
		bfailed(c, BW_CLONE, b,
			rc == -ECHILD ? "command failed" : strerror(-rc));
		goto out;
	}
	*bslot(c, BW_CLONE, b, r) = secs;

	if (drive_cold(c, &d, BW_FIND))
		goto out;
	{
		char *argv[] = {(char *)"find", scan, NULL};

		progress("  find, fresh mount");
		btimed(c, BW_FIND, b, r, argv, scanned, NULL, 0);
	}
	drop_caches(o);
	{
		char *argv[] = {(char *)"du", (char *)"-s", scan, NULL};

		progress("  du -s");
		btimed(c, BW_DU, b, r, argv, 1, NULL, 0);
	}
	drop_caches(o);
	{
		char *argv[] = {(char *)"ls", (char *)"-l", ls, NULL};

		progress("  ls -l of %u entries", LS_FILES);
		/* "total N" and one line an entry */
		btimed(c, BW_LSL, b, r, argv, LS_FILES + 1, NULL, 0);
	}
	{
		char *argv[] = {
		    c->m.pathfsctl, (char *)"-s",     d.store, (char *)"du",
		    (char *)"/s",   (char *)"--json", NULL};
		uint64_t files = 0, dirs = 0;

		progress("  pathfsctl du");
		if (!btimed(c, BW_CTL_DU, b, r, argv, 0, out, sizeof(out)) &&
		    (json_u64(out, "files", &files) ||
		     json_u64(out, "dirs", &dirs) ||
		     files != SCAN_COPIES * shape_files(sh, 0) ||
		     dirs < sdirs || dirs > sdirs + 1)) {
			*bslot(c, BW_CTL_DU, b, r) = NAN;
			bfailed(c, BW_CTL_DU, b, "wrong counts in --json");
			progress("  pathfsctl said: %s", out);
		}
	}
	drop_caches(o);
	{
		char *argv[] = {(char *)"mv", scan, moved, NULL};

		progress("  mv of the scan tree");
		if (!btimed(c, BW_MV, b, r, argv, 0, NULL, 0) &&
		    (lstat(moved, &st) || !lstat(scan, &st))) {
			*bslot(c, BW_MV, b, r) = NAN;
			bfailed(c, BW_MV, b, "source still there or no target");
		}
	}

	progress("  create/stat/unlink %llu files in one folder",
		 (unsigned long long)o->churn);
	rc = churn(&c->m, d.mnt, &secs);
	if (rc)
		bfailed(c, BW_CHURN, b, strerror(-rc));
	else
		*bslot(c, BW_CHURN, b, r) = secs;

	snprintf(big, sizeof(big), "%s/big", d.mnt);
	progress("  write %llu MiB + fsync", (unsigned long long)o->write_mb);
	rc = seq_write(&c->m, big, &secs);
	if (rc) {
		bfailed(c, BW_WRITE, b, strerror(-rc));
	} else {
		*bslot(c, BW_WRITE, b, r) = secs;
		drop_caches(o);
		progress("  read it back, cold");
		rc = seq_read(&c->m, big, &secs);
		if (rc)
			bfailed(c, BW_READ, b, strerror(-rc));
		else
			*bslot(c, BW_READ, b, r) = secs;
	}
out:
	drive_teardown(c, &d);
}

static double bmed(struct bctx *c, int w, int b)
{
	double v[64];
	unsigned i, n = c->m.o->runs;

	for (i = 0; i < n; i++)
		v[i] = *bslot(c, w, b, i);
	return median(v, n);
}

/* The target for etcd on workload @w, or NULL; *ok whether met. */
static const char *target_of(int w, double secs, double rate, bool *ok)
{
	switch (w) {
	case BW_MV:
		*ok = rate >= 5000;
		return ">= 5,000/s";
	case BW_CTL_DU: /* find and du walk folder by folder through FUSE */
		*ok = rate >= 30000;
		return ">= 30,000/s";
	case BW_LSL:
		*ok = secs < 0.2;
		return "< 0.2 s";
	default:
		return NULL;
	}
}

static void report(struct bctx *c)
{
	const struct bench_opts *o = c->m.o;
	double amount[NA];
	char s[NB][32], rt[32], ra[32];
	int w, b;

	amount[A_TREE] = (double)(shape_entries(&c->m.sh, 0) + 1);
	amount[A_CLONED] = SCAN_COPIES * amount[A_TREE];
	amount[A_SCAN] = amount[A_CLONED] + 1;
	amount[A_LS] = LS_FILES;
	amount[A_CHURN] = 3.0 * (double)o->churn;
	amount[A_MB] = (double)o->write_mb;
	printf("\nbackends: %llu-entry tree (%llu files of %zu B), %d copies "
	       "of it the %llu-entry scan tree, etcd %s, median of %u "
	       "runs\n",
	       (unsigned long long)amount[A_TREE],
	       (unsigned long long)shape_files(&c->m.sh, 0), c->m.sh.size,
	       SCAN_COPIES, (unsigned long long)amount[A_SCAN],
	       c->own_cluster ? "a fresh 3-member cluster started here for "
				"each run"
			      : c->endpoints,
	       o->runs);
	printf("e/r = etcd time / rocksdb time, s/e = etcd-shared (-o shared, "
	       "the only writer) time / etcd time; the rate is etcd's\n\n");
	printf("%-28s %10s %10s %10s %8s %8s %14s %12s\n", "workload",
	       "rocksdb", "etcd", "shared", "e/r", "s/e", "etcd rate",
	       "target");
	for (w = 0; w < NBW; w++) {
		double v[NB], rate;
		char rs[32];
		const char *tgt;
		bool ok = false;

		for (b = 0; b < NB; b++) {
			v[b] = bmed(c, w, b);
			res_add("backends", bname[b], bw[w].metric, v[b], "s");
			res_add("backends", bname[b], bw[w].metric,
				amount[bw[w].amount] / v[b], bw[w].unit);
			fmt_secs(s[b], sizeof(s[b]), v[b]);
		}
		res_add("backends", "ratio_etcd_vs_rocksdb", bw[w].metric,
			v[B_ETCD] / v[B_ROCKSDB], "x");
		res_add("backends", "ratio_shared_vs_etcd", bw[w].metric,
			v[B_SHARED] / v[B_ETCD], "x");
		res_plot("backends: etcd time / rocksdb time", "etcd",
			 bw[w].label, v[B_ETCD] / v[B_ROCKSDB]);
		res_plot("backends: etcd time / rocksdb time", "etcd -o shared",
			 bw[w].label, v[B_SHARED] / v[B_ROCKSDB]);
		rate = amount[bw[w].amount] / v[B_ETCD];
		tgt = target_of(w, v[B_ETCD], rate, &ok);
		fmt_rate(rt, sizeof(rt), rate, "");
		printf("%-28s %10s %10s %10s %8s %8s %10s %-5s %s%s\n",
		       bw[w].label, s[B_ROCKSDB], s[B_ETCD], s[B_SHARED],
		       fmt_ratio(ra, sizeof(ra), v[B_ETCD] / v[B_ROCKSDB]),
		       fmt_ratio(rs, sizeof(rs), v[B_SHARED] / v[B_ETCD]), rt,
		       bw[w].unit, tgt ? tgt : "",
		       tgt ? (ok ? " met" : " NOT met") : "");
	}
	printf("\n");
	fflush(stdout);
}

int bench_backends(const struct bench_opts *o)
{
	struct bctx c = {.m.o = o};
	unsigned r;
	size_t i, n;
	int k, rc;

	shape_init(&c.m.sh, o->files, o->fanout, o->depth, o->size);
	c.m.pathfs = find_prog(o->pathfs, "pathfs");
	c.m.pathfsctl = find_prog(o->pathfsctl, "pathfsctl");
	if (!c.m.pathfs || !c.m.pathfsctl) {
		progress("backends: cannot find %s (use --pathfs/--pathfsctl)",
			 c.m.pathfs ? "pathfsctl" : "pathfs");
		rc = -ENOENT;
		goto out;
	}
	rc = make_tmpdir(o, c.m.dir, sizeof(c.m.dir));
	if (rc) {
		progress("cannot make a temp dir in %s", o->tmp);
		goto out;
	}
	n = (size_t)NBW * NB * o->runs;
	c.t = malloc(n * sizeof(*c.t));
	c.m.buf = malloc(CHUNK);
	c.m.rbuf = malloc(CHUNK);
	if (!c.t || !c.m.buf || !c.m.rbuf) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		c.t[i] = NAN;
	for (i = 0; i < CHUNK; i++)
		c.m.buf[i] = (char)('a' + (i * 7 + i / 4096) % 26);
	if (o->etcd) {
		snprintf(c.endpoints, sizeof(c.endpoints), "%s", o->etcd);
	} else {
		snprintf(c.etcd_dir, sizeof(c.etcd_dir), "%s/etcd", c.m.dir);
		c.own_cluster = true;
	}
	progress("backends: pathfs %s, temp %s", c.m.pathfs, c.m.dir);
	if (o->writers) { /* shared writers through the store instead */
		rc = fresh_cluster(&c);
		if (rc == 0)
			rc = bench_writers(o, c.endpoints);
		goto out;
	}
	for (r = 0; r < o->runs; r++)
		for (k = 0; k < NB; k++) { /* alternate who goes first */
			int b = r % 2 ? NB - 1 - k : k;

			if (b != B_ROCKSDB && fresh_cluster(&c))
				c.failures++;
			else
				run_backend(&c, b, r);
		}
	report(&c);
	rc = c.failures ? -EIO : 0;
out:
	etcd_stop();
	if (c.m.dir[0] && !o->keep)
		run_sh("rm -rf '%s'", c.m.dir);
	free(c.t);
	free(c.m.buf);
	free(c.m.rbuf);
	free(c.m.pathfs);
	free(c.m.pathfsctl);
	return rc;
}
