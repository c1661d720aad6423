/*
 * test_dir.c - children listings and subtree scans (store/dir.c): the
 * ordering traps of path keys, resuming after any name while entries come and
 * go, the root's special ranges, and a timing printout of scan and lookup
 * throughput (never asserted).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

#define T    tu_tree
#define MAXN 64

/* Sibling names that sort around "docs" in byte order ('-' '.' ' ' '!' and
 * 0x01 all sort before '/'), UTF-8, and a 255-byte name built at run time. */
static const char *traps[] = {
    "docs",
    "docs-archive",
    "docs.txt",
    "docs 2",
    "docs!",
    "\x01"
    "docs",
    "do",
    "doc",
    "docs0",
    "docsa",
    "d\xc3\xb6"
    "cs",
    "\xe6\x96\x87\xe6\xa1\xa3",
    "docs\x7f",
    "docs\xff",
};
#define NTRAPS (sizeof(traps) / sizeof(traps[0]))
static char longname[TREE_NAME_MAX + 1];

struct names {
	char *v[MAXN];
	size_t n;
};

static void names_free(struct names *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	s->n = 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_children(const char *dir, const char *after, struct names *out)
{
	struct tree_dir *d;
	struct tree_attr a;
	const char *name;
	size_t nl;
	int rc;

	out->n = 0;
	rc = tree_dir_open(&d, T, dir, after);
	cr_assert_eq(rc, 0, "dir_open %s: %s", dir, strerror(-rc));
	while ((rc = tree_dir_next(d, &name, &nl, &a)) == 1) {
		cr_assert_lt(out->n, MAXN);
		cr_assert_eq(strlen(name), nl);
		cr_expect_neq(a.mode, 0, "%s/%s decodes", dir, name);
		out->v[out->n++] = strdup(name);
	}
	cr_assert_eq(rc, 0);
	tree_dir_free(d);
}

static void list_subtree(const char *dir, struct names *out)
{
	struct tree_scan *sc;
	struct tree_attr a;
	const char *p;
	int rc;

	out->n = 0;
	rc = tree_scan_open(&sc, T, dir);
	cr_assert_eq(rc, 0, "scan_open %s: %s", dir, strerror(-rc));
	while ((rc = tree_scan_next(sc, &p, &a)) == 1) {
		cr_assert_lt(out->n, MAXN);
		cr_expect_neq(a.mode, 0);
		out->v[out->n++] = strdup(p);
	}
	cr_assert_eq(rc, 0);
	tree_scan_free(sc);
}

/* Builds /NAME and /NAME/child and /NAME/sub/deep for every trap name under
 * @base ("" = the root). */
static void build_traps(const char *base)
{
	char p[1024];

	memset(longname, 'L', TREE_NAME_MAX);
	longname[0] = 'd';
	longname[TREE_NAME_MAX] = '\0';
	for (size_t i = 0; i <= NTRAPS; i++) {
		const char *n = i < NTRAPS ? traps[i] : longname;

		snprintf(p, sizeof(p), "%s/%s", base, n);
		tu_mkdir(T, p);
		snprintf(p, sizeof(p), "%s/%s/child", base, n);
		tu_mkfile(T, p, "x", 1);
		snprintf(p, sizeof(p), "%s/%s/sub", base, n);
		tu_mkdir(T, p);
		snprintf(p, sizeof(p), "%s/%s/sub/deep", base, n);
		tu_mkfile(T, p, "", 0);
	}
}

static void check_traps(const char *base)
{
	struct names s = {0};
	char dir[1024], want[1100];
	const char *expect_sub[3] = {"child", "sub", "sub/deep"};

	for (size_t i = 0; i <= NTRAPS; i++) {
		const char *n = i < NTRAPS ? traps[i] : longname;

		snprintf(dir, sizeof(dir), "%s/%s", base, n);
		list_children(dir, NULL, &s);
		cr_expect_eq(s.n, 2, "children of %s: %zu", dir, s.n);
		if (s.n == 2) {
			cr_expect_str_eq(s.v[0], "child");
			cr_expect_str_eq(s.v[1], "sub");
		}
		names_free(&s);
		list_subtree(dir, &s);
		cr_expect_eq(s.n, 3, "subtree of %s: %zu", dir, s.n);
		qsort(s.v, s.n, sizeof(s.v[0]), cmp);
		for (size_t j = 0; j < s.n && j < 3; j++) {
			snprintf(want, sizeof(want), "%s/%s", dir,
				 expect_sub[j]);
			cr_expect_str_eq(s.v[j], want);
		}
		names_free(&s);
	}
	/* the folder holding them lists exactly the traps, in byte order */
	list_children(base[0] ? base : "/", NULL, &s);
	cr_expect_eq(s.n, NTRAPS + 1);
	for (size_t j = 1; j < s.n; j++)
		cr_expect_lt(strcmp(s.v[j - 1], s.v[j]), 0, "byte order");
	names_free(&s);
}

Test(dir, ordering_traps_below_a_folder, .init = tu_setup, .fini = tu_teardown)
{
	struct names s = {0};

	tu_mkdir(T, "/top");
	build_traps("/top");
	check_traps("/top");
	/* the subtree of /top has every node below it and nothing else */
	tu_mkdir(T, "/top-x");
	tu_mkfile(T, "/top-x/n", "", 0);
	tu_mkfile(T, "/top.y", "", 0);
	list_subtree("/top", &s);
	cr_expect_eq(s.n, 4 * (NTRAPS + 1));
	for (size_t i = 0; i < s.n; i++)
		cr_expect(strncmp(s.v[i], "/top/", 5) == 0, "%s", s.v[i]);
	names_free(&s);
}

Test(dir, ordering_traps_at_the_root, .init = tu_setup, .fini = tu_teardown)
{
	struct names s = {0};

	build_traps("");
	check_traps("");
	/* the root's subtree: every node, not "/" itself */
	list_subtree("/", &s);
	cr_expect_eq(s.n, 4 * (NTRAPS + 1));
	for (size_t i = 0; i < s.n; i++)
		cr_expect(strcmp(s.v[i], "/") != 0);
	names_free(&s);
}

Test(dir, errnos, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_dir *d;
	struct tree_scan *sc;

	tu_mkfile(T, "/f", "", 0);
	cr_expect_eq(tree_dir_open(&d, T, "/nope", NULL), -ENOENT);
	cr_expect_eq(tree_dir_open(&d, T, "/f", NULL), -ENOTDIR);
	cr_expect_eq(tree_dir_open(&d, T, "nope", NULL), -EINVAL);
	cr_expect_eq(tree_dir_open(&d, T, "/", "a/b"), -EINVAL);
	cr_expect_eq(tree_scan_open(&sc, T, "/nope"), -ENOENT);
	cr_expect_eq(tree_scan_open(&sc, T, "/f"), -ENOTDIR);
	cr_expect_eq(tree_scan_open(&sc, T, "/f/"), -EINVAL);
}

Test(dir, empty_folder, .init = tu_setup, .fini = tu_teardown)
{
	struct names s = {0};

	list_children("/", NULL, &s);
	cr_expect_eq(s.n, 0);
	list_subtree("/", &s);
	cr_expect_eq(s.n, 0);
	tu_mkdir(T, "/e");
	list_children("/e", NULL, &s);
	cr_expect_eq(s.n, 0);
	list_children("/", "zzz", &s);
	cr_expect_eq(s.n, 0);
}

/*
 * A listing with an entry costs its range read alone (on etcd each read is a
 * round trip): the entry says the path is a folder, so the folder's record
 * is not read; an empty listing from the start still reads it, so an empty
 * folder, a file and a missing path stay apart; a listing resumed after a
 * name that finds no more ends, whatever became of the folder.
 */
Test(dir, a_listing_with_entries_reads_no_folder_record, .init = tu_setup,
     .fini = tu_teardown)
{
	struct store_kv_counts c0, c1;
	struct names s = {0};
	struct tree_dir *d;
	struct tree_attr a;
	const char *name;
	size_t nl;

	tu_mkdir(T, "/d");
	tu_mkfile(T, "/d/a", "x", 1);
	tu_mkfile(T, "/d/b", "yy", 2);
	tu_mkfile(T, "/f", "", 0);
	tu_mkdir(T, "/e");

	store_kv_counts(tu_store, &c0);
	list_children("/d", NULL, &s);
	store_kv_counts(tu_store, &c1);
	cr_expect_eq(s.n, 2);
	cr_expect_str_eq(s.v[0], "a"); /* the entry read at open is listed */
	cr_expect_str_eq(s.v[1], "b");
	cr_expect_eq(c1.gets - c0.gets, 0, "point reads: %llu",
		     (unsigned long long)(c1.gets - c0.gets));
	cr_expect_eq(c1.iters - c0.iters, 1);
	names_free(&s);

	/* resumed after "a": "b", still no record read */
	store_kv_counts(tu_store, &c0);
	list_children("/d", "a", &s);
	store_kv_counts(tu_store, &c1);
	cr_assert_eq(s.n, 1);
	cr_expect_str_eq(s.v[0], "b");
	cr_expect_eq(c1.gets - c0.gets, 0);
	names_free(&s);

	/* the end of a listing, resumed after its last name: no record read */
	store_kv_counts(tu_store, &c0);
	list_children("/d", "b", &s);
	store_kv_counts(tu_store, &c1);
	cr_expect_eq(s.n, 0);
	cr_expect_eq(c1.gets - c0.gets, 0);

	/* from the start and empty: the record tells the three apart */
	list_children("/e", NULL, &s);
	cr_expect_eq(s.n, 0);
	cr_expect_eq(tree_dir_open(&d, T, "/f", NULL), -ENOTDIR);
	cr_expect_eq(tree_dir_open(&d, T, "/nope", NULL), -ENOENT);

	/* the folder gone between two calls of a listing: it ends */
	cr_assert_eq(tree_unlink(T, "/d/a", 0, NULL), 0);
	cr_assert_eq(tree_unlink(T, "/d/b", 0, NULL), 0);
	cr_assert_eq(tree_rmdir(T, "/d"), 0);
	cr_assert_eq(tree_dir_open(&d, T, "/d", "a"), 0);
	cr_expect_eq(tree_dir_next(d, &name, &nl, &a), 0);
	cr_expect_eq(tree_dir_next(d, &name, &nl, &a), 0); /* and stays so */
	tree_dir_free(d);
	cr_expect_eq(tree_dir_open(&d, T, "/d", NULL), -ENOENT);
}

Test(dir, resume_after_any_name, .init = tu_setup, .fini = tu_teardown)
{
	struct names all = {0}, s = {0};
	char p[600];

	tu_mkdir(T, "/r");
	build_traps("/r");
	list_children("/r", NULL, &all);
	cr_assert_eq(all.n, NTRAPS + 1);
	/* after each listed name: exactly the rest */
	for (size_t i = 0; i < all.n; i++) {
		list_children("/r", all.v[i], &s);
		cr_expect_eq(s.n, all.n - i - 1, "after %s", all.v[i]);
		for (size_t j = 0; j < s.n; j++)
			cr_expect_str_eq(s.v[j], all.v[i + 1 + j]);
		names_free(&s);
	}
	/* after a name that does not exist: everything greater */
	list_children("/r", "docs ", &s);
	for (size_t j = 0; j < s.n; j++)
		cr_expect_gt(strcmp(s.v[j], "docs "), 0);
	{
		size_t greater = 0;
		for (size_t i = 0; i < all.n; i++)
			greater += strcmp(all.v[i], "docs ") > 0;
		cr_expect_eq(s.n, greater);
	}
	names_free(&s);
	/* entries added and removed between calls: the resumed listing has
	 * every survivor after the cursor exactly once, and no removed one */
	snprintf(p, sizeof(p), "/r/%s", "docs-archive");
	cr_assert_eq(tree_unlink(T, "/r/docs-archive/sub/deep", 0, NULL), 0);
	cr_assert_eq(tree_rmdir(T, "/r/docs-archive/sub"), 0);
	cr_assert_eq(tree_unlink(T, "/r/docs-archive/child", 0, NULL), 0);
	cr_assert_eq(tree_rmdir(T, p), 0);
	tu_mkfile(T, "/r/docs-b", "", 0);  /* after the cursor "docs" */
	tu_mkfile(T, "/r/a-first", "", 0); /* before it */
	list_children("/r", "docs", &s);
	for (size_t j = 0; j < s.n; j++) {
		cr_expect_gt(strcmp(s.v[j], "docs"), 0);
		cr_expect_str_neq(s.v[j], "docs-archive");
		cr_expect_str_neq(s.v[j], "a-first");
		if (j)
			cr_expect_lt(strcmp(s.v[j - 1], s.v[j]), 0);
	}
	{
		bool seen = false;
		for (size_t j = 0; j < s.n; j++)
			seen = seen || strcmp(s.v[j], "docs-b") == 0;
		cr_expect(seen);
	}
	names_free(&s);
	names_free(&all);
}

Test(dir, stream_with_changes_between_batches, .init = tu_setup,
     .fini = tu_teardown)
{
	/* a reader listing in pages of 7 while a writer adds and removes:
	 * every entry that existed throughout is seen exactly once */
	char p[64], last[64] = "";
	int seen[400] = {0};
	struct tree_dir *d;
	struct tree_attr a;
	const char *name;
	size_t nl;
	int round = 0, rc;

	tu_mkdir(T, "/s");
	for (int i = 0; i < 300; i++) {
		snprintf(p, sizeof(p), "/s/n%03d", i);
		tu_mkfile(T, p, "", 0);
	}
	for (;;) {
		int got = 0;

		cr_assert_eq(tree_dir_open(&d, T, "/s", last), 0);
		while (got < 7 &&
		       (rc = tree_dir_next(d, &name, &nl, &a)) == 1) {
			int i = atoi(name + 1);
			if (name[0] == 'n')
				seen[i]++;
			snprintf(last, sizeof(last), "%s", name);
			got++;
		}
		tree_dir_free(d);
		if (got == 0)
			break;
		/* churn: remove a few multiples of 5 ahead and behind, add
		 * extra names */
		snprintf(p, sizeof(p), "/s/n%03d", (round * 5) % 300);
		if (round * 5 < 300 && (round * 5) % 10 == 5)
			cr_assert_eq(tree_unlink(T, p, 0, NULL), 0);
		snprintf(p, sizeof(p), "/s/x%03d", round);
		tu_mkfile(T, p, "", 0);
		round++;
	}
	for (int i = 0; i < 300; i++) {
		bool removed = i % 10 == 5 && i / 5 < round;
		if (!removed)
			cr_expect_eq(seen[i], 1, "n%03d seen %d times", i,
				     seen[i]);
		else
			cr_expect_leq(seen[i], 1);
	}
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(dir, throughput_printout, .init = tu_setup, .fini = tu_teardown,
     .timeout = 500)
{
	enum { N = 100000 };
	char p[64];
	struct tree_scan *sc;
	struct tree_dir *d;
	struct tree_attr a;
	const char *s;
	size_t nl;
	double t0, t1;
	long n = 0;
	unsigned seed = 7;

	tu_mkdir(T, "/big");
	t0 = now_s();
	for (int i = 0; i < N; i++) {
		snprintf(p, sizeof(p), "/big/file-%07d", i);
		cr_assert_eq(
		    tree_mknode(T, p, S_IFREG | 0644, 0, 0, 0, NULL, NULL), 0);
	}
	t1 = now_s();
	printf("tree: mknode %d entries: %.0f creates/s\n", N, N / (t1 - t0));

	for (int pass = 0; pass < 2; pass++) {
		const char *where =
		    pass ? "after reopen (SST files)" : "(memtable)";

		if (pass)
			tu_reopen(); /* recovery flushes the memtable to SST files */
		n = 0;
		t0 = now_s();
		cr_assert_eq(tree_scan_open(&sc, T, "/big"), 0);
		while (tree_scan_next(sc, &s, &a) == 1)
			n++;
		tree_scan_free(sc);
		t1 = now_s();
		cr_expect_eq(n, N);
		printf("tree: tree_scan %ld entries %s: %.0f entries/s\n", n,
		       where, n / (t1 - t0));

		n = 0;
		t0 = now_s();
		cr_assert_eq(tree_dir_open(&d, T, "/big", NULL), 0);
		while (tree_dir_next(d, &s, &nl, &a) == 1)
			n++;
		tree_dir_free(d);
		t1 = now_s();
		cr_expect_eq(n, N);
		printf("tree: tree_dir %ld entries %s: %.0f entries/s\n", n,
		       where, n / (t1 - t0));

		t0 = now_s();
		for (int i = 0; i < N; i++) {
			snprintf(p, sizeof(p), "/big/file-%07d",
				 (int)(rand_r(&seed) % N));
			cr_assert_eq(tree_lookup(T, p, &a), 0);
		}
		t1 = now_s();
		printf("tree: tree_lookup random %d %s: %.0f lookups/s\n", N,
		       where, N / (t1 - t0));
	}
	fflush(stdout);
}

Test(dir, every_byte_in_a_name, .init = tu_setup, .fini = tu_teardown)
{
	char name[256], path[300];
	struct names s = {0};
	size_t n = 0;
	struct tree_attr a;

	for (int c = 1; c < 256; c++)
		if (c != '/')
			name[n++] = (char)c;
	name[n] = '\0'; /* 254 bytes: 0x01..0xff without '/' */
	snprintf(path, sizeof(path), "/%s", name);
	tu_mkdir(T, path);
	snprintf(path, sizeof(path), "/%s/in", name);
	tu_mkfile(T, path, "x", 1);
	tu_mkfile(T, "/\x01", "", 0);
	tu_mkfile(T, "/\xff", "", 0);
	list_children("/", NULL, &s);
	cr_assert_eq(s.n, 3);
	cr_expect_str_eq(s.v[0], "\x01");
	cr_expect_str_eq(s.v[1], name);
	cr_expect_str_eq(s.v[2], "\xff");
	names_free(&s);
	snprintf(path, sizeof(path), "/%s", name);
	list_children(path, NULL, &s);
	cr_assert_eq(s.n, 1);
	cr_expect_str_eq(s.v[0], "in");
	names_free(&s);
	list_subtree("/", &s);
	cr_expect_eq(s.n, 4);
	names_free(&s);
	snprintf(path, sizeof(path), "/%s/in", name);
	cr_expect_eq(tree_lookup(T, path, &a), 0);
	/* "..." and ".a" are ordinary names */
	tu_mkfile(T, "/...", "", 0);
	tu_mkfile(T, "/.a", "", 0);
	cr_expect_eq(tree_lookup(T, "/...", &a), 0);
}

Test(dir, deep_nesting_and_path_limit, .init = tu_setup, .fini = tu_teardown)
{
	enum { DEPTH = 1000 };
	char *p = malloc(TREE_PATH_MAX + 64);
	struct tree_scan *sc;
	struct tree_attr a;
	const char *sp;
	size_t len = 0, n = 0;

	for (int i = 0; i < DEPTH; i++) {
		memcpy(p + len, "/d", 3);
		len += 2;
		tu_mkdir(T, p);
	}
	cr_assert_eq(tree_scan_open(&sc, T, "/"), 0);
	while (tree_scan_next(sc, &sp, &a) == 1) {
		cr_expect(S_ISDIR(a.mode));
		cr_expect_eq(strlen(sp) % 2, 0);
		n++;
	}
	tree_scan_free(sc);
	cr_expect_eq(n, DEPTH);
	cr_expect_eq(tree_lookup(T, p, &a), 0);
	cr_expect_eq(a.nlink, 2);
	/* grow the path to exactly TREE_PATH_MAX bytes, then one past:
	 * 199-byte names first (fewer levels; the length stays even), then
	 * "/d" */
	while (len + 200 + 2 <= TREE_PATH_MAX) {
		p[len] = '/';
		memset(p + len + 1, 'n', 199);
		len += 200;
		p[len] = '\0';
		tu_mkdir(T, p);
	}
	while (len + 2 <= TREE_PATH_MAX) {
		memcpy(p + len, "/d", 3);
		len += 2;
		tu_mkdir(T, p);
	}
	if (len < TREE_PATH_MAX) {
		memcpy(p + len, "/e", 3);
		len += 2;
		cr_expect_eq(
		    tree_mknode(T, p, S_IFREG | 0644, 0, 0, 0, NULL, NULL),
		    -ENAMETOOLONG);
		len -= 4; /* name "xxxx" beside the deepest folder */
		memcpy(p + len, "/", 2);
		memset(p + len + 1, 'x', TREE_PATH_MAX - len - 1);
		p[TREE_PATH_MAX] = '\0';
	}
	cr_assert_eq(strlen(p), TREE_PATH_MAX);
	cr_expect_eq(tree_mknode(T, p, S_IFREG | 0644, 0, 0, 0, NULL, NULL), 0);
	cr_expect_eq(tree_lookup(T, p, &a), 0);
	memcpy(p + TREE_PATH_MAX, "y", 2);
	cr_expect_eq(tree_mknode(T, p, S_IFREG | 0644, 0, 0, 0, NULL, NULL),
		     -ENAMETOOLONG);
	free(p);
}
