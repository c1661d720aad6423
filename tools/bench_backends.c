/*
 * bench_backends.c - `pathfs-bench backends`: the same workloads through the
 * mount on a drive in the embedded RocksDB store, on a drive in a 3-member
 * etcd cluster, on one mounted -o shared there (a writer of several,
 * alone: issue 24's "a single writer within 10% of today's figures"), and
 * on a drive in a DynamoDB Local table (issue 30), in one run: the
 * backends alternate (run 1 forward, run 2 backward, ...), medians, the
 * etcd / RocksDB, shared / etcd and DynamoDB / RocksDB ratios are reported,
 * with the targets for etcd (13: rename rewrite >= 5,000
 * entries/s, subtree scan >= 30,000 entries/s, `ls -l` of 1,000 entries
 * < 0.2 s).
 *
 * The cluster: started here (bench_etcd.c: loopback ports, data in our temp
 * dir, stopped by pid on every way out), afresh for every etcd run
 * (fresh_cluster: a run on a cluster that earlier runs used is slower), or
 * --etcd ENDPOINTS for one that runs already; each run's drive is a fresh
 * key prefix, deleted after it. DynamoDB Local: started here once
 * (bench_ddb.c), each run's drive a table of its own, deleted after it.
 * For DynamoDB the bench also reads the daemon's kv counts (`pathfsctl
 * stats --json`) around each workload and reports the requests, Query
 * pages, transactions and capacity units each consumed, per entry, and
 * those of one create, one cold stat and one unlink (PROBE_FILES empty
 * files, untimed), with what a million cost.
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
 * --targets LIST: only these columns (rocksdb, etcd, etcd-shared,
 * dynamodb); the others print "-".
 *
 * --writers N: create/stat/unlink and mv of a folder by several writers of
 * one etcd drive through the store instead (bench_writers.c), on the same
 * cluster.
 *
 * Not in `all`: it needs etcd (etcd-server, etcd-client), java and
 * DynamoDB Local, and takes minutes.
 *
 * Limits: needs root (mounts, drop_caches). The three members share this
 * machine's disk and CPUs with the daemon and the tools: the numbers are a
 * loopback cluster's, every commit a quorum of fsyncs on one disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_mount_i.h"

/* etcd-shared: the same etcd drive mounted -o shared, a writer of several
 * (issue 24) that is here the only one: what the conditioned commits, the
 * branch lock's checks and the watch of the others cost a lone writer */
enum { B_ROCKSDB, B_ETCD, B_SHARED, B_DDB, NB };
static const char *const bname[NB] = {"rocksdb", "etcd", "etcd-shared",
				      "dynamodb"};

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
#define PROBE_FILES 100 /* DynamoDB: the files of the units probe */

/* What a DynamoDB drive's requests consumed (the daemon's `pathfsctl stats
 * --json` "kv" counts, after less before). */
struct units {
	double requests, retries, pages, txns, rcu, wcu;
};
#define UNITS_NAN                                                              \
	{                                                                      \
		NAN, NAN, NAN, NAN, NAN, NAN                                   \
	}

/* The units probe's steps, on PROBE_FILES empty files in one folder: */
enum { U_CREATE, U_STAT, U_UNLINK, NU };
static const char *const uname_[NU] = {"create (empty file)",
				       "stat, cold (lookup)", "unlink"};

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
	char ddb_endpoint[128]; /* DynamoDB Local's, started here */
	double *t;		/* [w][backend][run] seconds, NaN = failed */
	struct units *u;	/* DynamoDB: [w][run] */
	struct units *pu;	/* DynamoDB, the probe: [step][run] */
	int failures;
};

static double *bslot(struct bctx *c, int w, int b, unsigned r)
{
	return &c->t[((size_t)w * NB + b) * c->m.o->runs + r];
}

static struct units *uslot(struct bctx *c, int w, unsigned r)
{
	return &c->u[(size_t)w * c->m.o->runs + r];
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
	} else if (b == B_DDB) {
		snprintf(d->name, sizeof(d->name), "pathfs-bench-%d-%u",
			 (int)getpid(), r);
		snprintf(d->store, sizeof(d->store),
			 "dynamodb://%s?endpoint=%s", d->name, c->ddb_endpoint);
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
	else if (d->b == B_DDB && d->name[0])
		ddb_drop_table(c->ddb_endpoint, d->name);
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

/* DynamoDB: drive @d's daemon's counts now (`pathfsctl stats --json`)
 * into *u; NaN where unread. Other backends: nothing. */
static void units_now(struct bctx *c, struct drive *d, struct units *u)
{
	static const char *const key[] = {
	    "requests",	  "retries",	 "pages",	    "txns",
	    "read_milli", "write_milli", "txn_write_milli", "txn_rule_milli"};
	char *argv[] = {c->m.pathfsctl,	 (char *)"-s",	   d->store,
			(char *)"stats", (char *)"--json", NULL};
	double v[8] = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
	char out[65536];
	double secs;
	uint64_t x;
	size_t i;

	*u = (struct units)UNITS_NAN;
	if (d->b != B_DDB || run_cmd(argv, &secs, NULL, out, sizeof(out)))
		return;
	for (i = 0; i < 8; i++)
		if (!json_u64(out, key[i], &x))
			v[i] = (double)x / (i >= 4 ? 1000.0 : 1.0);
	u->requests = v[0];
	u->retries = v[1];
	u->pages = v[2];
	u->txns = v[3];
	u->rcu = v[4];
	/* DynamoDB Local's units of a transaction are no DynamoDB's (4 for
	 * any): those by DynamoDB's rules instead (ddb_i.h) */
	u->wcu = v[5] - v[6] + v[7];
}

/* DynamoDB: what drive @d consumed since *@u0 (units_now), into *@into. */
static void units_since(struct bctx *c, struct drive *d, const struct units *u0,
			struct units *into)
{
	struct units u1;

	if (d->b != B_DDB)
		return;
	units_now(c, d, &u1);
	into->requests = u1.requests - u0->requests;
	into->retries = u1.retries - u0->retries;
	into->pages = u1.pages - u0->pages;
	into->txns = u1.txns - u0->txns;
	into->rcu = u1.rcu - u0->rcu;
	into->wcu = u1.wcu - u0->wcu;
}

/* DynamoDB: the capacity units of single operations, from PROBE_FILES
 * empty files in a fresh folder of drive @d (not timed): created, then
 * each stat'ed with the kernel's caches dropped (a lookup reaches the
 * store), then unlinked. */
static void units_probe(struct bctx *c, struct drive *d, unsigned r)
{
	char dir[4300], p[4400];
	struct units u0;
	struct stat st;
	int i, step, fd, rc = 0;

	snprintf(dir, sizeof(dir), "%s/probe", d->mnt);
	if (mkdir(dir, 0755)) {
		progress("  units probe: mkdir: %s", strerror(errno));
		return;
	}
	for (step = 0; step < NU && !rc; step++) {
		if (step == U_STAT)
			drop_caches(c->m.o);
		units_now(c, d, &u0);
		for (i = 0; i < PROBE_FILES && !rc; i++) {
			snprintf(p, sizeof(p), "%s/p%03d", dir, i);
			if (step == U_CREATE) {
				fd = open(
				    p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
				    0644);
				rc = fd < 0 || close(fd) ? -errno : 0;
			} else if (step == U_STAT) {
				rc = stat(p, &st) ? -errno : 0;
			} else {
				rc = unlink(p) ? -errno : 0;
			}
		}
		if (!rc)
			units_since(c, d, &u0, &c->pu[step * c->m.o->runs + r]);
	}
	if (rc) {
		progress("  units probe: %s: %s", p, strerror(-rc));
		c->failures++;
	}
	rmdir(dir);
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
	struct units u0;
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
	units_now(c, &d, &u0);
	rc = create_tree(&c->m, root, &secs);
	if (rc) {
		bfailed(c, BW_CREATE, b, strerror(-rc));
		goto out;
	}
	*bslot(c, BW_CREATE, b, r) = secs;
	units_since(c, &d, &u0, uslot(c, BW_CREATE, r));
	rc = make_files(ls, LS_FILES);
	if (rc) {
		bfailed(c, BW_LSL, b, strerror(-rc));
		goto out;
	}
	progress("  pathfsctl cp -r of the tree, %d copies", SCAN_COPIES);
	units_now(c, &d, &u0);
	rc = mkdir(scan, 0755) ? -errno : clone_copies(c, &d, &secs);
	if (rc) {
		bfailed(c, BW_CLONE, b,
			rc == -ECHILD ? "command failed" : strerror(-rc));
		goto out;
	}
	*bslot(c, BW_CLONE, b, r) = secs;
	units_since(c, &d, &u0, uslot(c, BW_CLONE, r));

	if (drive_cold(c, &d, BW_FIND))
		goto out;
	{
		char *argv[] = {(char *)"find", scan, NULL};

		progress("  find, fresh mount");
		units_now(c, &d, &u0);
		btimed(c, BW_FIND, b, r, argv, scanned, NULL, 0);
		units_since(c, &d, &u0, uslot(c, BW_FIND, r));
	}
	units_now(c, &d, &u0);
	drop_caches(o);
	{
		char *argv[] = {(char *)"du", (char *)"-s", scan, NULL};

		progress("  du -s");
		btimed(c, BW_DU, b, r, argv, 1, NULL, 0);
	}
	units_since(c, &d, &u0, uslot(c, BW_DU, r));
	units_now(c, &d, &u0);
	drop_caches(o);
	{
		char *argv[] = {(char *)"ls", (char *)"-l", ls, NULL};

		progress("  ls -l of %u entries", LS_FILES);
		/* "total N" and one line an entry */
		btimed(c, BW_LSL, b, r, argv, LS_FILES + 1, NULL, 0);
	}
	units_since(c, &d, &u0, uslot(c, BW_LSL, r));
	{
		char *argv[] = {
		    c->m.pathfsctl, (char *)"-s",     d.store, (char *)"du",
		    (char *)"/s",   (char *)"--json", NULL};
		uint64_t files = 0, dirs = 0;

		progress("  pathfsctl du");
		units_now(c, &d, &u0);
		if (!btimed(c, BW_CTL_DU, b, r, argv, 0, out, sizeof(out)) &&
		    (json_u64(out, "files", &files) ||
		     json_u64(out, "dirs", &dirs) ||
		     files != SCAN_COPIES * shape_files(sh, 0) ||
		     dirs < sdirs || dirs > sdirs + 1)) {
			*bslot(c, BW_CTL_DU, b, r) = NAN;
			bfailed(c, BW_CTL_DU, b, "wrong counts in --json");
			progress("  pathfsctl said: %s", out);
		}
		units_since(c, &d, &u0, uslot(c, BW_CTL_DU, r));
	}
	units_now(c, &d, &u0);
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
	units_since(c, &d, &u0, uslot(c, BW_MV, r));

	progress("  create/stat/unlink %llu files in one folder",
		 (unsigned long long)o->churn);
	units_now(c, &d, &u0);
	rc = churn(&c->m, d.mnt, &secs);
	if (rc)
		bfailed(c, BW_CHURN, b, strerror(-rc));
	else
		*bslot(c, BW_CHURN, b, r) = secs;
	units_since(c, &d, &u0, uslot(c, BW_CHURN, r));
	if (b == B_DDB) {
		progress("  the units of one create, stat, unlink (%d files)",
			 PROBE_FILES);
		units_probe(c, &d, r);
	}

	snprintf(big, sizeof(big), "%s/big", d.mnt);
	progress("  write %llu MiB + fsync", (unsigned long long)o->write_mb);
	units_now(c, &d, &u0);
	rc = seq_write(&c->m, big, &secs);
	if (rc) {
		bfailed(c, BW_WRITE, b, strerror(-rc));
	} else {
		*bslot(c, BW_WRITE, b, r) = secs;
		units_since(c, &d, &u0, uslot(c, BW_WRITE, r));
		drop_caches(o);
		progress("  read it back, cold");
		units_now(c, &d, &u0);
		rc = seq_read(&c->m, big, &secs);
		if (rc)
			bfailed(c, BW_READ, b, strerror(-rc));
		else
			*bslot(c, BW_READ, b, r) = secs;
		units_since(c, &d, &u0, uslot(c, BW_READ, r));
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

/* The median of field @f of the @n units at @u (stride 1). */
static double umed(const struct units *u, unsigned n, size_t off)
{
	double v[64];

	for (unsigned i = 0; i < n; i++)
		v[i] = *(const double *)((const char *)&u[i] + off);
	return median(v, n);
}

/* One row of the units table: @u (runs of it), per @per items. */
static void units_row(const char *label, const struct units *u, unsigned n,
		      double per, const char *metric)
{
	double rq = umed(u, n, offsetof(struct units, requests));
	double rt = umed(u, n, offsetof(struct units, retries));
	double pg = umed(u, n, offsetof(struct units, pages));
	double tx = umed(u, n, offsetof(struct units, txns));
	double rc = umed(u, n, offsetof(struct units, rcu));
	double wc = umed(u, n, offsetof(struct units, wcu));

	printf("%-28s %8.0f %7.0f %7.0f %7.0f %10.1f %10.1f %8.0f %9.3f "
	       "%9.3f %9.2f %10.2f\n",
	       label, rq, rt, pg, tx, rc, wc, per, rc / per, wc / per,
	       /* the dollars a million of them cost on demand in us-east-1
		* (request units): $0.125 a million reads, $0.625 a million
		* writes since November 2024; $0.25 and $1.25 before */
	       0.125 * rc / per + 0.625 * wc / per,
	       0.25 * rc / per + 1.25 * wc / per);
	res_add("backends_units", "dynamodb", metric, rc / per, "RCU");
	res_add("backends_units", "dynamodb", metric, wc / per, "WCU");
	res_add("backends_units", "dynamodb", metric, pg, "query_pages");
	res_add("backends_units", "dynamodb", metric, tx, "transactions");
}

/* DynamoDB's requests and capacity units per workload and per item. */
static void report_units(struct bctx *c, const double *amount)
{
	unsigned n = c->m.o->runs;
	int w, k;

	printf("dynamodb: requests, Query pages, transactions and the capacity "
	       "units DynamoDB Local reported (ReturnConsumedCapacity TOTAL; "
	       "the write units of transactions by DynamoDB's rules instead, "
	       "as Local reports 4 for any) per workload, median of %u runs; "
	       "per item = per the workload's entries (files for "
	       "create/stat/unlink, MiB for write/read); $/M = dollars per "
	       "million items on demand in us-east-1 ($0.125 per million "
	       "read units, $0.625 per million write units since November "
	       "2024; <11/24: $0.25 and $1.25 before)\n\n",
	       n);
	printf("%-28s %8s %7s %7s %7s %10s %10s %8s %9s %9s %9s %10s\n",
	       "workload", "requests", "retries", "pages", "txns", "RCU", "WCU",
	       "items", "RCU/item", "WCU/item", "$/M", "$/M <11/24");
	for (w = 0; w < NBW; w++)
		units_row(bw[w].label, uslot(c, w, 0), n,
			  w == BW_CHURN ? (double)c->m.o->churn
					: amount[bw[w].amount],
			  bw[w].metric);
	for (k = 0; k < NU; k++)
		units_row(uname_[k], &c->pu[(size_t)k * n], n, PROBE_FILES,
			  uname_[k]);
	printf("\n");
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
	       "the only writer) time / etcd time, d/r = dynamodb (DynamoDB "
	       "Local %s, a JVM on this machine) time / rocksdb time; the "
	       "rate is etcd's\n\n",
	       c->ddb_endpoint[0] ? c->ddb_endpoint : "not run");
	printf("%-28s %10s %10s %10s %10s %8s %8s %8s %14s %12s\n", "workload",
	       "rocksdb", "etcd", "shared", "dynamodb", "e/r", "s/e", "d/r",
	       "etcd rate", "target");
	for (w = 0; w < NBW; w++) {
		double v[NB], rate;
		char rs[32], rd[32];
		const char *tgt;
		bool ok = false;

		for (b = 0; b < NB; b++) {
			v[b] = bmed(c, w, b);
			if (!bench_wanted(o, bname[b])) { /* not run: "-" */
				snprintf(s[b], sizeof(s[b]), "-");
				continue;
			}
			res_add("backends", bname[b], bw[w].metric, v[b], "s");
			res_add("backends", bname[b], bw[w].metric,
				amount[bw[w].amount] / v[b], bw[w].unit);
			fmt_secs(s[b], sizeof(s[b]), v[b]);
		}
		res_add("backends", "ratio_etcd_vs_rocksdb", bw[w].metric,
			v[B_ETCD] / v[B_ROCKSDB], "x");
		res_add("backends", "ratio_shared_vs_etcd", bw[w].metric,
			v[B_SHARED] / v[B_ETCD], "x");
		res_add("backends", "ratio_dynamodb_vs_rocksdb", bw[w].metric,
			v[B_DDB] / v[B_ROCKSDB], "x");
		res_plot("backends: etcd time / rocksdb time", "etcd",
			 bw[w].label, v[B_ETCD] / v[B_ROCKSDB]);
		res_plot("backends: etcd time / rocksdb time", "etcd -o shared",
			 bw[w].label, v[B_SHARED] / v[B_ROCKSDB]);
		rate = amount[bw[w].amount] / v[B_ETCD];
		tgt = target_of(w, v[B_ETCD], rate, &ok);
		fmt_rate(rt, sizeof(rt), rate, "");
		printf("%-28s %10s %10s %10s %10s %8s %8s %8s %10s %-5s %s%s\n",
		       bw[w].label, s[B_ROCKSDB], s[B_ETCD], s[B_SHARED],
		       s[B_DDB],
		       fmt_ratio(ra, sizeof(ra), v[B_ETCD] / v[B_ROCKSDB]),
		       fmt_ratio(rs, sizeof(rs), v[B_SHARED] / v[B_ETCD]),
		       fmt_ratio(rd, sizeof(rd), v[B_DDB] / v[B_ROCKSDB]), rt,
		       bw[w].unit, tgt ? tgt : "",
		       tgt ? (ok ? " met" : " NOT met") : "");
	}
	printf("\n");
	if (bench_wanted(o, bname[B_DDB]))
		report_units(c, amount);
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
	c.u = malloc((size_t)NBW * o->runs * sizeof(*c.u));
	c.pu = malloc((size_t)NU * o->runs * sizeof(*c.pu));
	c.m.buf = malloc(CHUNK);
	c.m.rbuf = malloc(CHUNK);
	if (!c.t || !c.u || !c.pu || !c.m.buf || !c.m.rbuf) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		c.t[i] = NAN;
	for (i = 0; i < (size_t)NBW * o->runs; i++)
		c.u[i] = (struct units)UNITS_NAN;
	for (i = 0; i < (size_t)NU * o->runs; i++)
		c.pu[i] = (struct units)UNITS_NAN;
	for (i = 0; i < CHUNK; i++)
		c.m.buf[i] = (char)('a' + (i * 7 + i / 4096) % 26);
	if (o->etcd) {
		snprintf(c.endpoints, sizeof(c.endpoints), "%s", o->etcd);
	} else {
		snprintf(c.etcd_dir, sizeof(c.etcd_dir), "%s/etcd", c.m.dir);
		c.own_cluster = true;
	}
	if (o->writers) { /* shared writers through the store instead */
		rc = fresh_cluster(&c);
		if (rc == 0)
			rc = bench_writers(o, c.endpoints);
		goto out;
	}
	if (bench_wanted(o, bname[B_DDB])) {
		progress("backends: starting DynamoDB Local (its log in %s)",
			 c.m.dir);
		rc = ddb_local_start(c.m.dir, c.ddb_endpoint,
				     sizeof(c.ddb_endpoint));
		if (rc)
			goto out;
	}
	progress("backends: pathfs %s, DynamoDB Local %s, temp %s", c.m.pathfs,
		 c.ddb_endpoint[0] ? c.ddb_endpoint : "(not wanted)", c.m.dir);
	for (r = 0; r < o->runs; r++)
		for (k = 0; k < NB; k++) { /* alternate who goes first */
			int b = r % 2 ? NB - 1 - k : k;

			if (!bench_wanted(o, bname[b]))
				continue;

			if ((b == B_ETCD || b == B_SHARED) && fresh_cluster(&c))
				c.failures++;
			else
				run_backend(&c, b, r);
		}
	report(&c);
	rc = c.failures ? -EIO : 0;
out:
	etcd_stop();
	ddb_local_stop();
	if (c.m.dir[0] && !o->keep)
		run_sh("rm -rf '%s'", c.m.dir);
	free(c.t);
	free(c.u);
	free(c.pu);
	free(c.m.buf);
	free(c.m.rbuf);
	free(c.m.pathfs);
	free(c.m.pathfsctl);
	return rc;
}
