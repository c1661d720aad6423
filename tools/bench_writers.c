/*
 * bench_writers.c - `pathfs-bench backends --writers N`: create/stat/unlink
 * by several writers of one etcd drive (issue 24), through the store (no
 * mount, no FUSE): what the conditioned commits of shared writers cost and
 * how often they conflict.
 *
 * Each row is one drive, a fresh key prefix of the cluster, deleted after:
 *   - the sole writer (store_options.shared off: the owner key, commits
 *     not conditioned on what they read), today's single-writer path;
 *   - 1, 2, ... N shared writers (store_options.shared), each a store
 *     handle of its own (as a daemon of its own would open it) driven by a
 *     thread of its own, all released together.
 * Each writer creates (tree_mknode), stats (tree_lookup) and unlinks
 * (tree_unlink) --churn files, one after the other, first in a folder of
 * its own (/own<k>), then all in one folder (/shared: every create and
 * unlink rewrites that folder's node, which the others' commits are
 * conditioned on). Reported per row: the aggregate rate (files of all
 * writers / wall time, and operations: three a file), and the conflicts:
 * commits refused because a key read changed (store_kv_counts().conflicts;
 * each is one retry of the operation, TREE_TRACKED), all handles summed,
 * and per 100 files.
 *
 * Then `mv` of a folder of --files entries (a branch of folders of 1,000
 * files, built through the store and copied with tree_cp_r), on one more
 * drive: the sole writer moves one such folder, then 1, 2, ... N shared
 * writers each move a folder of their own at once (tree_rename: the
 * journaled key rewrite, under the branch lock among shared writers, whose
 * LOCKS key every rename takes and drops in commits conditioned on it).
 * Reported per row: the aggregate rate (entries moved by all writers /
 * wall time) and the conflicts, as above. After each row every branch must
 * be whole at its new place, as bench_rename checks.
 *
 * Limits: the cluster's three members, the writers and this process share
 * one machine: the numbers are a loopback cluster's at that machine's load.
 * A failed operation stops its writer and fails the row (exit status 1).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

#define MAX_WRITERS 16

struct writer {
	struct tree *t;
	unsigned id;
	const char *dir; /* the folder it works in, for this round */
	uint64_t files;
	pthread_barrier_t *go;
	int rc;		/* the first failure, 0 if none */
	char what[300]; /* what failed */
};

static void *writer_run(void *arg)
{
	struct writer *w = arg;
	struct tree_attr a;
	char p[256];
	uint64_t i;
	int rc = 0;

	pthread_barrier_wait(w->go);
	for (i = 0; i < w->files && !rc; i++) {
		snprintf(p, sizeof(p), "%s/w%u-%06llu", w->dir, w->id,
			 (unsigned long long)i);
		rc = tree_mknode(w->t, p, S_IFREG | 0644, 0, 0, 0, NULL, NULL);
		if (!rc)
			rc = tree_lookup(w->t, p, &a);
		if (!rc)
			rc = tree_unlink(w->t, p, 0, NULL);
	}
	if (rc) {
		w->rc = rc;
		snprintf(w->what, sizeof(w->what), "%s: %s", p, strerror(-rc));
	}
	return NULL;
}

/*
 * Runs @fn on @n threads at once, thread k on @arg + k * @size (each waits
 * on @go, set up here, before its work): *secs gets the time from their
 * release to the last one's end, *conflicts += the conflicts of handles
 * @s meanwhile (store_kv_counts).
 */
static void run_at_once(unsigned n, void *(*fn)(void *), void *arg, size_t size,
			pthread_barrier_t *go, struct store *const *s,
			double *secs, uint64_t *conflicts)
{
	struct store_kv_counts c0[MAX_WRITERS], c1;
	pthread_t th[MAX_WRITERS];
	unsigned k;
	double t0;

	pthread_barrier_init(go, NULL, n + 1);
	for (k = 0; k < n; k++) {
		store_kv_counts(s[k], &c0[k]);
		if (pthread_create(&th[k], NULL, fn, (char *)arg + k * size))
			abort(); /* the barrier would wait for ever */
	}
	pthread_barrier_wait(go);
	t0 = now_s();
	for (k = 0; k < n; k++)
		pthread_join(th[k], NULL);
	*secs = now_s() - t0;
	pthread_barrier_destroy(go);
	for (k = 0; k < n; k++) {
		store_kv_counts(s[k], &c1);
		*conflicts += c1.conflicts - c0[k].conflicts;
	}
}

/* One row's result. */
struct row {
	double secs;
	uint64_t conflicts;
	bool failed;
};

/*
 * Runs @n writers (@shared: shared handles; else the one sole writer) on a
 * fresh drive of the cluster at @eps, in their own folders, then in one,
 * into @own and @one. Returns 0, or a negative errno when the drive could not
 * be set up (a failed operation only marks its row failed).
 */
static int run_row(const char *eps, unsigned row, unsigned n, bool shared,
		   uint64_t files, struct row *own, struct row *one)
{
	struct store_options so = {.create = true, .shared = shared};
	struct store *s[MAX_WRITERS] = {0};
	struct writer w[MAX_WRITERS] = {0};
	pthread_barrier_t go;
	char url[1024], name[128], dirs[MAX_WRITERS][32];
	unsigned k, round;
	int rc = 0;

	snprintf(name, sizeof(name), "pathfs-bench-w-%d-%u", (int)getpid(),
		 row);
	/* a lease that outlives a loaded machine's stalls */
	snprintf(url, sizeof(url), "etcd://%s/%s?lease-ttl=30", eps, name);
	for (k = 0; k < n && !rc; k++) {
		rc = store_open(&s[k], url, &so);
		if (!rc && k == 0)
			rc = store_drive_create(s[k], "main", 0, 0);
		if (!rc)
			rc = store_drive(s[k], "main", &w[k].t);
		w[k].id = k;
		w[k].files = files;
		w[k].go = &go;
	}
	for (k = 0; k < n && !rc; k++) {
		snprintf(dirs[k], sizeof(dirs[k]), "/own%u", k);
		rc = tree_mknode(w[0].t, dirs[k], S_IFDIR | 0755, 0, 0, 0, NULL,
				 NULL);
	}
	if (!rc)
		rc = tree_mknode(w[0].t, "/shared", S_IFDIR | 0755, 0, 0, 0,
				 NULL, NULL);
	if (rc) {
		progress("writers: cannot set up drive %s: %s", url,
			 strerror(-rc));
		goto out;
	}
	for (round = 0; round < 2; round++) {
		struct row *r = round ? one : own;

		for (k = 0; k < n; k++) {
			w[k].dir = round ? "/shared" : dirs[k];
			w[k].rc = 0;
		}
		run_at_once(n, writer_run, w, sizeof(w[0]), &go, s, &r->secs,
			    &r->conflicts);
		for (k = 0; k < n; k++) {
			if (w[k].rc) {
				progress("writers: FAIL writer %u: %s", k,
					 w[k].what);
				r->failed = true;
			}
		}
	}
out:
	for (k = 0; k < n; k++)
		store_close(s[k]);
	etcd_drop_store(eps, name);
	return rc;
}

/* ---- mv of a folder per writer ------------------------------------------ */

struct mover {
	struct tree *t;
	char src[32], dst[32]; /* this row's move */
	pthread_barrier_t *go;
	int rc;
};

static void *mover_run(void *arg)
{
	struct mover *m = arg;

	pthread_barrier_wait(m->go);
	m->rc = tree_rename(m->t, m->src, m->dst, 0, NULL);
	return NULL;
}

/* The folder of writer @k, at @at (0: /big<k>, 1: /moved<k>), into @buf. */
static void mv_name(char buf[32], unsigned k, int at)
{
	snprintf(buf, 32, at ? "/moved%u" : "/big%u", k);
}

/*
 * One mv row: @n handles of @url (@shared or the sole writer), writer k
 * moving its folder from where at[k] says to the other place, all at once.
 * The result in *r; every branch is checked whole (@entries below it) at
 * its new place, and at[] follows.
 */
static int mv_row(const char *url, unsigned n, bool shared, uint64_t entries,
		  int at[MAX_WRITERS], struct row *r)
{
	struct store_options so = {.shared = shared};
	struct store *s[MAX_WRITERS] = {0};
	struct mover m[MAX_WRITERS] = {0};
	pthread_barrier_t go;
	unsigned k;
	int rc = 0;

	for (k = 0; k < n && !rc; k++) {
		rc = store_open(&s[k], url, &so);
		if (!rc)
			rc = store_drive(s[k], "main", &m[k].t);
		mv_name(m[k].src, k, at[k]);
		mv_name(m[k].dst, k, !at[k]);
		m[k].go = &go;
	}
	if (rc) {
		progress("writers: mv: cannot open %s: %s", url, strerror(-rc));
		goto out;
	}
	run_at_once(n, mover_run, m, sizeof(m[0]), &go, s, &r->secs,
		    &r->conflicts);
	for (k = 0; k < n; k++) {
		uint64_t seen = 0;
		int crc = m[k].rc;

		if (!crc)
			crc = branch_count(m[k].t, m[k].dst, &seen);
		if (crc || seen != entries) {
			progress("writers: FAIL mv %s %s: %s (%llu of %llu "
				 "entries there)",
				 m[k].src, m[k].dst,
				 crc ? strerror(-crc) : "moved",
				 (unsigned long long)seen,
				 (unsigned long long)entries);
			r->failed = true;
		} else {
			at[k] = !at[k];
		}
	}
out:
	for (k = 0; k < n; k++)
		store_close(s[k]);
	return rc;
}

/*
 * Builds /big0 of about @files files on a fresh drive of the cluster at
 * @eps (named by the caller into @url) and copies it to /big1.. /big<n-1>,
 * through the sole writer. *entries gets the nodes below each.
 */
static int mv_setup(const char *url, unsigned n, uint64_t files,
		    uint64_t *entries)
{
	struct store_options so = {.create = true};
	struct store *s = NULL;
	struct tree *t = NULL;
	struct shape sh;
	char dst[32];
	double secs;
	unsigned k;
	int rc;

	branch_shape(&sh, files);
	*entries = shape_entries(&sh, 0);
	rc = store_open(&s, url, &so);
	if (!rc)
		rc = store_drive_create(s, "main", 0, 0);
	if (!rc)
		rc = store_drive(s, "main", &t);
	if (!rc)
		rc = build_tree_inproc(t, &sh, "/big0", &secs);
	if (!rc)
		progress("writers: mv: built /big0, %llu entries, in %.1f s",
			 (unsigned long long)*entries, secs);
	for (k = 1; k < n && !rc; k++) {
		struct tree_op_result res = {0};

		mv_name(dst, k, 0);
		rc = tree_cp_r(t, "/big0", t, dst, 0, NULL, &res);
		if (!rc && res.token)
			rc = -EIO; /* no budget: it must finish */
		tree_op_result_release(&res);
	}
	if (rc)
		progress("writers: mv: cannot set up drive %s: %s", url,
			 strerror(-rc));
	store_close(s);
	return rc;
}

/* The mv table: the sole writer, then 1..@max shared writers at once. */
static int bench_mv(const struct bench_opts *o, const char *eps, unsigned max,
		    bool *failed)
{
	int at[MAX_WRITERS] = {0};
	uint64_t entries = 0;
	char url[1024], name[128], label[32], metric[64];
	unsigned n;
	int rc;

	snprintf(name, sizeof(name), "pathfs-bench-mv-%d", (int)getpid());
	snprintf(url, sizeof(url), "etcd://%s/%s?lease-ttl=30", eps, name);
	rc = mv_setup(url, max ? max : 1, o->files, &entries);
	if (rc)
		goto out;
	printf("\nmv of a folder of %llu entries, each writer its own, all "
	       "at once, one etcd drive\n",
	       (unsigned long long)entries);
	printf("%-14s %9s %8s %11s %9s\n", "writers", "entries", "secs",
	       "entries/s", "conflicts");
	for (n = 0; n <= max && !rc; n++) {
		struct row r = {0};
		double total;

		if (n)
			snprintf(label, sizeof(label), "%u-shared", n);
		else
			snprintf(label, sizeof(label), "sole");
		progress("writers: mv: %s", label);
		rc = mv_row(url, n ? n : 1, n > 0, entries, at, &r);
		if (rc)
			break;
		total = (double)(n ? n : 1) * (double)entries;
		printf("%-14s %9.0f %8.2f %11.0f %9llu%s\n", label, total,
		       r.secs, r.failed ? NAN : total / r.secs,
		       (unsigned long long)r.conflicts,
		       r.failed ? "  FAIL" : "");
		fflush(stdout);
		snprintf(metric, sizeof(metric), "mv_%s", label);
		res_add("writers", "etcd", metric,
			r.failed ? NAN : total / r.secs, "entries/s");
		snprintf(metric, sizeof(metric), "mv_conflicts_%s", label);
		res_add("writers", "etcd", metric, (double)r.conflicts,
			"commits");
		*failed |= r.failed;
	}
out:
	etcd_drop_store(eps, name);
	return rc;
}

/* Prints and records one row. */
static void report_row(const char *label, const char *folder, unsigned n,
		       uint64_t files, const struct row *r)
{
	double total = (double)n * (double)files;
	double rate = r->failed ? NAN : total / r->secs;
	char metric[64];

	printf("%-14s %-9s %7.0f %8.1f %9.1f %9.1f %9llu %9.1f%s\n", label,
	       folder, total, r->secs, rate, 3 * rate,
	       (unsigned long long)r->conflicts,
	       100.0 * (double)r->conflicts / total, r->failed ? "  FAIL" : "");
	snprintf(metric, sizeof(metric), "create_stat_unlink_%s_%s", label,
		 folder);
	res_add("writers", "etcd", metric, rate, "files/s");
	snprintf(metric, sizeof(metric), "conflicts_%s_%s", label, folder);
	res_add("writers", "etcd", metric, (double)r->conflicts, "commits");
}

int bench_writers(const struct bench_opts *o, const char *eps)
{
	unsigned n, max = o->writers;
	bool failed = false;
	int rc = 0;

	if (max > MAX_WRITERS) {
		progress("writers: at most %d", MAX_WRITERS);
		return -EINVAL;
	}
	printf("create/stat/unlink of %llu files per writer through the store, "
	       "one etcd drive (3 members, loopback)\n",
	       (unsigned long long)o->churn);
	printf("%-14s %-9s %7s %8s %9s %9s %9s %9s\n", "writers", "folders",
	       "files", "secs", "files/s", "ops/s", "conflicts", "per 100");
	/* n 0: the sole writer */
	for (n = 0; n <= max && !rc; n++) {
		struct row own = {0}, one = {0};
		char label[32];

		if (n)
			snprintf(label, sizeof(label), "%u-shared", n);
		else
			snprintf(label, sizeof(label), "sole");
		progress("writers: %s", label);
		rc = run_row(eps, n, n ? n : 1, n > 0, o->churn, &own, &one);
		if (rc)
			break;
		report_row(label, "own", n ? n : 1, o->churn, &own);
		report_row(label, "one", n ? n : 1, o->churn, &one);
		failed |= own.failed || one.failed;
		fflush(stdout);
	}
	if (!rc)
		rc = bench_mv(o, eps, max, &failed);
	return rc ? rc : failed ? -EIO : 0;
}
