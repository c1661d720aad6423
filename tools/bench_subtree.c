/*
 * bench_subtree.c - `pathfs-bench subtree`: reading one branch three ways,
 * in-process on a fresh store, through store/include/tree.h only.
 *
 *  (a) scan:   one subtree range read (tree_scan_open/next);
 *  (b) walk:   one children scan per folder (tree_dir_open/next), the way an
 *              adjacency-list store (parent id -> children) must read a branch;
 *  (c) lookup: one point read per path (tree_lookup), the way a store keyed
 *              by anything but the path must resolve a list of paths.
 *
 * Each way must return every entry of the branch with the right sizes, or the
 * benchmark fails. For each we report entries/s (median of --runs, the three
 * ways run in alternation), the tree API calls it made and the calls store/
 * made into its kv seam (point gets, iterator opens and seeks: each one is a
 * round trip once the ordered KV engine is remote; the store counts them:
 * store_kv_counts()).
 *
 * The store is closed and reopened after the build, so reads come from
 * RocksDB's table files rather than the memtable.
 *
 * Limits: measures a warm store (after the first run the blocks are in
 * RocksDB's block cache and the page cache); single-threaded; the path list
 * for (c) is held in memory (about 40 bytes per entry).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define ROOT "/t"
#define SUBTREE_PANEL                                                          \
	"subtree: speed-up of one subtree scan (above 1 = scan faster)"

struct build_ctx {
	struct tree *t;
	char *buf;
	size_t size;
	uint64_t done;
	double t0;
};

static int build_one(void *ctx, const char *path, bool dir)
{
	struct build_ctx *b = ctx;
	struct tree_attr a;
	int rc;

	rc = tree_mknode(b->t, path, dir ? (S_IFDIR | 0755) : (S_IFREG | 0644),
			 0, 0, 0, NULL, &a);
	if (rc) {
		progress("tree_mknode %s: %s", path, strerror(-rc));
		return rc;
	}
	if (!dir && b->size) {
		rc = tree_write(b->t, path, a.ino, 0, b->buf, b->size, false,
				NULL);
		if (rc) {
			progress("tree_write %s: %s", path, strerror(-rc));
			return rc;
		}
	}
	if (++b->done % 200000 == 0)
		progress("  built %llu entries (%.0f/s)",
			 (unsigned long long)b->done,
			 b->done / (now_s() - b->t0));
	return 0;
}

int build_tree_inproc(struct tree *t, const struct shape *sh, const char *root,
		      double *secs)
{
	struct build_ctx b = {.t = t, .size = sh->size};
	int rc;

	b.buf = malloc(sh->size ? sh->size : 1);
	if (!b.buf)
		return -ENOMEM;
	memset(b.buf, 'x', sh->size ? sh->size : 1);
	b.t0 = now_s();
	rc = tree_mknode(t, root, S_IFDIR | 0755, 0, 0, 0, NULL, NULL);
	if (rc) {
		progress("tree_mknode %s: %s", root, strerror(-rc));
		goto out;
	}
	rc = shape_walk(sh, root, 0, build_one, &b);
	if (secs)
		*secs = now_s() - b.t0;
out:
	free(b.buf);
	return rc;
}

void branch_shape(struct shape *sh, uint64_t n)
{
	uint64_t folders = (n + BRANCH_PER_FOLDER - 1) / BRANCH_PER_FOLDER;

	sh->fanout = (unsigned)folders;
	sh->depth = 1;
	sh->per_leaf = (n + folders - 1) / folders;
	sh->size = 0;
}

int branch_count(struct tree *t, const char *path, uint64_t *n)
{
	struct tree_scan *sc = NULL;
	struct tree_attr a;
	const char *p;
	int rc;

	*n = 0;
	rc = tree_scan_open(&sc, t, path);
	if (rc)
		goto out;
	while ((rc = tree_scan_next(sc, &p, &a)) == 1)
		(*n)++;
out:
	tree_scan_free(sc);
	return rc;
}

/* What one way of reading a branch saw and cost. */
struct readout {
	uint64_t entries, dirs, bytes;
	uint64_t api_calls; /* opens + lookups (not the per-entry nexts) */
	struct store_kv_counts kv; /* made during the read */
};

static int read_scan(struct tree *t, const char *branch, struct readout *r)
{
	struct tree_scan *sc = NULL;
	struct tree_attr a;
	const char *path;
	int rc;

	r->api_calls++;
	rc = tree_scan_open(&sc, t, branch);
	if (rc)
		goto out;
	while ((rc = tree_scan_next(sc, &path, &a)) == 1) {
		r->entries++;
		if (S_ISDIR(a.mode))
			r->dirs++;
		else
			r->bytes += a.size;
	}
out:
	tree_scan_free(sc);
	return rc;
}

static int read_walk(struct tree *t, const char *branch, struct readout *r)
{
	char **queue = NULL, *child;
	size_t head = 0, tail = 0, cap = 1024;
	struct tree_dir *d = NULL;
	struct tree_attr a;
	const char *name;
	size_t namelen;
	int rc = -ENOMEM;

	queue = malloc(cap * sizeof(*queue));
	if (!queue)
		goto out;
	queue[tail++] = strdup(branch);
	while (head < tail) {
		char *dir = queue[head++];

		r->api_calls++;
		rc = tree_dir_open(&d, t, dir, NULL);
		if (rc) {
			free(dir);
			goto out;
		}
		while ((rc = tree_dir_next(d, &name, &namelen, &a)) == 1) {
			r->entries++;
			if (!S_ISDIR(a.mode)) {
				r->bytes += a.size;
				continue;
			}
			r->dirs++;
			if (asprintf(&child, "%s/%s", dir, name) < 0) {
				rc = -ENOMEM;
				break;
			}
			if (tail == cap) {
				char **q;

				cap *= 2;
				q = realloc(queue, cap * sizeof(*queue));
				if (!q) {
					free(child);
					rc = -ENOMEM;
					break;
				}
				queue = q;
			}
			queue[tail++] = child;
		}
		tree_dir_free(d);
		d = NULL;
		free(dir);
		queue[head - 1] = NULL;
		if (rc < 0)
			goto out;
	}
	rc = 0;
out:
	while (queue && head < tail)
		free(queue[head++]);
	free(queue);
	return rc;
}

struct pathlist {
	char **p;
	size_t n, cap;
};

static int collect(void *ctx, const char *path, bool dir)
{
	struct pathlist *l = ctx;

	if (l->n == l->cap) {
		char **p;

		l->cap = l->cap ? l->cap * 2 : 4096;
		p = realloc(l->p, l->cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		l->p = p;
	}
	l->p[l->n] = strdup(path);
	if (!l->p[l->n])
		return -ENOMEM;
	l->n++;
	return 0;
}

static void pathlist_release(struct pathlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->p[i]);
	free(l->p);
	memset(l, 0, sizeof(*l));
}

static int read_lookup(struct tree *t, const struct pathlist *l,
		       struct readout *r)
{
	struct tree_attr a;
	size_t i;
	int rc;

	for (i = 0; i < l->n; i++) {
		r->api_calls++;
		rc = tree_lookup(t, l->p[i], &a);
		if (rc) {
			progress("tree_lookup %s: %s", l->p[i], strerror(-rc));
			return rc;
		}
		r->entries++;
		if (S_ISDIR(a.mode))
			r->dirs++;
		else
			r->bytes += a.size;
	}
	return 0;
}

enum { WAY_SCAN, WAY_WALK, WAY_LOOKUP, NWAYS };
static const char *const way_name[NWAYS] = {"scan", "walk", "lookup"};

int bench_subtree(const struct bench_opts *o)
{
	struct store_options sopt = {.create = true};
	struct store *s = NULL;
	struct tree *t = NULL;
	struct shape sh;
	struct pathlist pl = {0};
	char dir[4096], sdir[4200], branch[4096], metric[64];
	char b1[32], b2[32], b3[32];
	double *times = NULL, build_s = 0;
	struct readout last[NWAYS];
	double rate[NWAYS];
	unsigned k, r, w;
	int rc;

	shape_init(&sh, o->files, o->fanout, o->depth, o->size);
	rc = make_tmpdir(o, dir, sizeof(dir));
	if (rc) {
		progress("cannot make a temp dir in %s: %s", o->tmp,
			 strerror(-rc));
		return rc;
	}
	snprintf(sdir, sizeof(sdir), "%s/store", dir);
	rc = store_open(&s, sdir, &sopt);
	if (!rc)
		rc = store_drive_create(s, "bench", 0, 0);
	if (!rc)
		rc = store_drive(s, "bench", &t);
	if (rc) {
		progress("cannot create store %s: %s", sdir, strerror(-rc));
		goto out;
	}
	progress("subtree: building %llu files of %zu bytes in %llu folders "
		 "(%u levels of %u) under %s",
		 (unsigned long long)shape_files(&sh, 0), sh.size,
		 (unsigned long long)shape_dirs(&sh, 0) + 1, sh.depth,
		 sh.fanout, ROOT);
	rc = build_tree_inproc(t, &sh, ROOT, &build_s);
	if (rc)
		goto out;
	progress("subtree: built %llu entries in %.2f s (%.0f entries/s)",
		 (unsigned long long)shape_entries(&sh, 0) + 1, build_s,
		 (shape_entries(&sh, 0) + 1) / build_s);
	res_add("subtree", "build", "entries_per_s",
		(shape_entries(&sh, 0) + 1) / build_s, "entries/s");

	/*
	 * Reopen: RocksDB replays its log into table files on open, so the
	 * branch is read from SST blocks as in a store that has been running
	 * for a while, not from the memtable the build just filled.
	 */
	store_close(s);
	s = NULL;
	t = NULL;
	rc = store_open(&s, sdir, &sopt);
	if (!rc)
		rc = store_drive(s, "bench", &t);
	if (rc) {
		progress("cannot reopen store %s: %s", sdir, strerror(-rc));
		goto out;
	}

	times = calloc((size_t)o->runs * NWAYS, sizeof(*times));
	if (!times) {
		rc = -ENOMEM;
		goto out;
	}
	printf("\nsubtree: read one branch three ways, in-process, warm store "
	       "(median of %u runs)\n",
	       o->runs);
	printf("  (a) one subtree scan  (b) one children scan per folder  "
	       "(c) one lookup per path\n");
	printf("  calls: tree API calls / kv round trips (get + iterator "
	       "open + seek)\n\n");
	printf("%-12s %9s | %-22s | %-22s | %-22s | %7s %7s\n", "branch",
	       "entries", "(a) scan /s  calls", "(b) walk /s  calls",
	       "(c) lookup /s  calls", "a/b", "a/c");
	for (k = 0; k <= sh.depth; k++) {
		uint64_t want = shape_entries(&sh, k);
		uint64_t want_bytes = shape_files(&sh, k) * sh.size;

		shape_branch(&sh, ROOT, k, branch, sizeof(branch));
		pathlist_release(&pl);
		rc = shape_walk(&sh, ROOT, k, collect, &pl);
		if (rc)
			goto out;
		progress("subtree: branch %s (depth %u, %llu entries)", branch,
			 k, (unsigned long long)want);
		for (r = 0; r < o->runs; r++) {
			for (w = 0; w < NWAYS; w++) {
				struct readout ro = {0};
				struct store_kv_counts k0, k1;
				double t0;

				store_kv_counts(s, &k0);
				t0 = now_s();
				if (w == WAY_SCAN)
					rc = read_scan(t, branch, &ro);
				else if (w == WAY_WALK)
					rc = read_walk(t, branch, &ro);
				else
					rc = read_lookup(t, &pl, &ro);
				times[r * NWAYS + w] = now_s() - t0;
				store_kv_counts(s, &k1);
				ro.kv.gets = k1.gets - k0.gets;
				ro.kv.iters = k1.iters - k0.iters;
				ro.kv.seeks = k1.seeks - k0.seeks;
				ro.kv.nexts = k1.nexts - k0.nexts;
				if (rc < 0) {
					progress("%s of %s failed: %s",
						 way_name[w], branch,
						 strerror(-rc));
					goto out;
				}
				if (ro.entries != want ||
				    ro.bytes != want_bytes) {
					progress(
					    "%s of %s saw %llu entries "
					    "and %llu bytes, expected "
					    "%llu and %llu",
					    way_name[w], branch,
					    (unsigned long long)ro.entries,
					    (unsigned long long)ro.bytes,
					    (unsigned long long)want,
					    (unsigned long long)want_bytes);
					rc = -EIO;
					goto out;
				}
				last[w] = ro;
			}
		}
		for (w = 0; w < NWAYS; w++) {
			double v[64];
			unsigned i, n = o->runs < 64 ? o->runs : 64;
			uint64_t trips = last[w].kv.gets + last[w].kv.iters +
					 last[w].kv.seeks;

			for (i = 0; i < n; i++)
				v[i] = times[i * NWAYS + w];
			rate[w] = want / median(v, n);
			snprintf(metric, sizeof(metric),
				 "depth%u_entries_per_s", k);
			res_add("subtree", way_name[w], metric, rate[w],
				"entries/s");
			snprintf(metric, sizeof(metric), "depth%u_api_calls",
				 k);
			res_add("subtree", way_name[w], metric,
				(double)last[w].api_calls, "calls");
			snprintf(metric, sizeof(metric),
				 "depth%u_kv_roundtrips", k);
			res_add("subtree", way_name[w], metric, (double)trips,
				"calls");
			snprintf(metric, sizeof(metric), "depth%u_kv_nexts", k);
			res_add("subtree", way_name[w], metric,
				(double)last[w].kv.nexts, "calls");
		}
		snprintf(metric, sizeof(metric), "depth%u_scan_over_walk", k);
		res_add("subtree", "ratio", metric, rate[0] / rate[1], "x");
		snprintf(metric, sizeof(metric), "depth%u_scan_over_lookup", k);
		res_add("subtree", "ratio", metric, rate[0] / rate[2], "x");
		snprintf(metric, sizeof(metric), "depth %u (%llu entries)", k,
			 (unsigned long long)want);
		res_plot(SUBTREE_PANEL, "a/b: scan vs per-folder walk", metric,
			 rate[0] / rate[1]);
		res_plot(SUBTREE_PANEL, "a/c: scan vs lookup per path", metric,
			 rate[0] / rate[2]);
		{
			char c[NWAYS][48];

			for (w = 0; w < NWAYS; w++)
				snprintf(
				    c[w], sizeof(c[w]), "%s %llu/%llu",
				    w == 0
					? fmt_rate(b1, sizeof(b1), rate[w], "")
				    : w == 1
					? fmt_rate(b2, sizeof(b2), rate[w], "")
					: fmt_rate(b3, sizeof(b3), rate[w], ""),
				    (unsigned long long)last[w].api_calls,
				    (unsigned long long)(last[w].kv.gets +
							 last[w].kv.iters +
							 last[w].kv.seeks));
			printf("%-12s %9llu | %-22s | %-22s | %-22s | %6.1fx "
			       "%6.1fx\n",
			       branch, (unsigned long long)want, c[0], c[1],
			       c[2], rate[0] / rate[1], rate[0] / rate[2]);
		}
	}
	printf("\n");
	fflush(stdout);
	rc = 0;
out:
	pathlist_release(&pl);
	free(times);
	store_close(s);
	if (!o->keep)
		run_sh("rm -rf '%s'", dir);
	else
		progress("kept %s", dir);
	return rc;
}
