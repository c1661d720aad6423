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
	struct store *s;
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
	struct writer w[MAX_WRITERS] = {0};
	pthread_t th[MAX_WRITERS];
	pthread_barrier_t go;
	char url[1024], name[128], dirs[MAX_WRITERS][32];
	unsigned k, round;
	int rc = 0;

	snprintf(name, sizeof(name), "pathfs-bench-w-%d-%u", (int)getpid(),
		 row);
	/* a lease that outlives a loaded machine's stalls */
	snprintf(url, sizeof(url), "etcd://%s/%s?lease-ttl=30", eps, name);
	for (k = 0; k < n && !rc; k++) {
		rc = store_open(&w[k].s, url, &so);
		if (!rc && k == 0)
			rc = store_drive_create(w[k].s, "main", 0, 0);
		if (!rc)
			rc = store_drive(w[k].s, "main", &w[k].t);
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
		struct store_kv_counts c0[MAX_WRITERS], c1;
		double t0;

		pthread_barrier_init(&go, NULL, n + 1);
		for (k = 0; k < n; k++) {
			w[k].dir = round ? "/shared" : dirs[k];
			w[k].rc = 0;
			store_kv_counts(w[k].s, &c0[k]);
			if (pthread_create(&th[k], NULL, writer_run, &w[k]))
				abort(); /* the barrier would wait for ever */
		}
		pthread_barrier_wait(&go);
		t0 = now_s();
		for (k = 0; k < n; k++)
			pthread_join(th[k], NULL);
		r->secs = now_s() - t0;
		pthread_barrier_destroy(&go);
		for (k = 0; k < n; k++) {
			store_kv_counts(w[k].s, &c1);
			r->conflicts += c1.conflicts - c0[k].conflicts;
			if (w[k].rc) {
				progress("writers: FAIL writer %u: %s", k,
					 w[k].what);
				r->failed = true;
			}
		}
	}
out:
	for (k = 0; k < n; k++)
		store_close(w[k].s);
	if (run_sh("ETCDCTL_API=3 etcdctl --endpoints '%s' del --prefix "
		   "'%s/' >/dev/null",
		   eps, name))
		progress("could not delete the drive's keys %s/ from etcd",
			 name);
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
	return rc ? rc : failed ? -EIO : 0;
}
