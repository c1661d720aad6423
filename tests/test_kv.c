/*
 * test_kv.c - conformance of the kv seam's backends (kv_i.h): the same tests
 * run on the RocksDB backend in strict mode (etcd's limits enforced) and,
 * with PATHFS_TEST_KV=etcd, on the etcd cluster named by PATHFS_TEST_ETCD
 * (host:port,... as tests/etcd_cluster.sh prints; tests/with_etcd.sh sets
 * both), and with PATHFS_TEST_KV=dynamodb on the DynamoDB Local whose
 * endpoint is PATHFS_TEST_DYNAMODB (tests/with_dynamodb.sh). Each test gets
 * a fresh store: a mkdtemp directory, a fresh key prefix on the cluster, or
 * a fresh table. PATHFS_TEST_KV_SCALE=N divides the counts of the tests
 * that write thousands of keys (DynamoDB Local takes ~10 ms a commit, and
 * much more on a loaded machine: each test must fit its timeout).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ddb_i.h"
#include "etcd_i.h"
#include "kv_i.h"

#ifdef __SANITIZE_ADDRESS__
/* out_of_memory_is_an_error asks for more memory than there is: malloc is
 * to answer NULL, as it does without ASan, not stop the process */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}
#endif

static struct kv *kv;
static char where[PATH_MAX];
static char tmpdir[64];

/*
 * The writer's lease of the stores the tests open read-write on etcd, unless
 * a test is about the lease: the default 5 s fences a writer whose process
 * or cluster did not run for ~3 s (a loaded machine, the sanitized build),
 * and its commits then fail with EROFS in tests about anything else.
 */
#define TEST_LEASE "?lease-ttl=60"

/*
 * Tests that compact the cluster's history (compact_all) hold the cluster's
 * lock file exclusively, every other test shares it, from setup to teardown:
 * criterion runs two tests at a time on one cluster, and a compaction in one
 * ends the other's iterators and pinned reads with -ESTALE, or fails the
 * other's own compaction (its revision compacted already).
 */
static const char *const compacting_tests[] = {
    "compacted_revision",
    "watch_from_compacted_revision_resets",
    "pinned_reads_are_one_moment",
};
static int cluster_lock = -1;
static bool cluster_lock_ex;

static bool compacts(const char *test)
{
	for (size_t i = 0;
	     i < sizeof(compacting_tests) / sizeof(*compacting_tests); i++)
		if (!strcmp(test, compacting_tests[i]))
			return true;
	return false;
}

static bool on_etcd(void)
{
	const char *s = getenv("PATHFS_TEST_KV");

	return s && !strcmp(s, "etcd");
}

static bool on_dynamodb(void)
{
	const char *s = getenv("PATHFS_TEST_KV");

	return s && !strcmp(s, "dynamodb");
}

/* @n divided by PATHFS_TEST_KV_SCALE (at least 1). */
static int scaled(int n)
{
	const char *s = getenv("PATHFS_TEST_KV_SCALE");
	int d = s ? atoi(s) : 1;

	return d > 1 && n / d > 0 ? n / d : n;
}

/* `where` as the tests' writers open it: on etcd and DynamoDB, with
 * TEST_LEASE. */
static const char *rw_url(void)
{
	static char url[PATH_MAX + 32];

	if (on_dynamodb())
		snprintf(url, sizeof(url), "%s&lease-ttl=60", where);
	else
		snprintf(url, sizeof(url), "%s%s", where,
			 on_etcd() ? TEST_LEASE : "");
	return url;
}

static void kv_setup(void)
{
	struct kv_options o = {.create = true, .strict = true};
	int rc;

	if (on_etcd()) {
		const char *eps = getenv("PATHFS_TEST_ETCD");
		struct timespec ts;

		cr_assert(eps && *eps,
			  "PATHFS_TEST_ETCD is not set: run through "
			  "tests/with_etcd.sh");
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(where, sizeof(where), "etcd://%s/kvt-%d-%ld", eps,
			 (int)getpid(), (long)ts.tv_nsec);
	} else if (on_dynamodb()) {
		const char *ep = getenv("PATHFS_TEST_DYNAMODB");
		struct timespec ts;

		cr_assert(ep && *ep,
			  "PATHFS_TEST_DYNAMODB is not set: run through "
			  "tests/with_dynamodb.sh");
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(where, sizeof(where),
			 "dynamodb://kvt-%d-%ld?endpoint=%s", (int)getpid(),
			 (long)ts.tv_nsec, ep);
	} else {
		snprintf(tmpdir, sizeof(tmpdir), "/tmp/pathfs-kv-XXXXXX");
		cr_assert_not_null(mkdtemp(tmpdir));
		snprintf(where, sizeof(where), "%s/db", tmpdir);
	}
	if (on_etcd()) {
		const char *dir = getenv("PATHFS_TEST_ETCD_DIR");
		char lock[PATH_MAX + 16];

		snprintf(lock, sizeof(lock), "%s/kv-tests.lock",
			 dir && *dir ? dir : "/tmp");
		cluster_lock = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		cr_assert_geq(cluster_lock, 0, "%s: %s", lock, strerror(errno));
		cluster_lock_ex = compacts(criterion_current_test->name);
		rc = flock(cluster_lock, cluster_lock_ex ? LOCK_EX : LOCK_SH);
		cr_assert_eq(rc, 0, "flock %s: %s", lock, strerror(errno));
		rc = kv_open(&kv, rw_url(), &o);
	} else {
		rc = kv_open(&kv, on_dynamodb() ? rw_url() : where, &o);
	}
	cr_assert_eq(rc, 0, "kv_open(%s): %s", where, strerror(-rc));
}

static void kv_teardown(void)
{
	kv_close(kv);
	kv = NULL;
	if (cluster_lock >= 0)
		close(cluster_lock); /* and so unlocked */
	cluster_lock = -1;
	if (!on_etcd() && !on_dynamodb()) {
		char cmd[PATH_MAX + 16];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		cr_expect_eq(system(cmd), 0);
	}
}

TestSuite(kv, .init = kv_setup, .fini = kv_teardown, .timeout = 120);

static void put(const char *k, const char *v)
{
	struct kv_batch *b = kv_batch_new(kv);
	int rc;

	kv_batch_put(b, k, strlen(k), v, strlen(v));
	rc = kv_batch_commit(kv, b, false);
	cr_assert_eq(rc, 0, "put %s: %s", k, strerror(-rc));
	kv_batch_free(b);
}

/* The value of @k as a string, or "-" if missing. The caller frees. */
static char *get(const char *k)
{
	char *v = NULL;
	size_t n;
	int rc = kv_get(kv, k, strlen(k), &v, &n);

	if (rc == -ENOENT)
		return strdup("-");
	cr_assert_eq(rc, 0, "get %s: %s", k, strerror(-rc));
	cr_assert_eq(strlen(v), n);
	return v;
}

static void expect_value(const char *k, const char *want)
{
	char *v = get(k);

	cr_expect_str_eq(v, want, "%s", k);
	free(v);
}

/* The keys of [lo, hi) joined by spaces. */
static char *scan(const char *lo, const char *hi)
{
	static char out[1 << 16];
	struct kv_iter *it;
	size_t o = 0;

	cr_assert_eq(
	    kv_iter_open(&it, kv, lo, strlen(lo), hi, hi ? strlen(hi) : 0), 0);
	out[0] = '\0';
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t n;
		const char *k = kv_iter_key(it, &n);
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%.*s",
				      o ? " " : "", (int)n, k);
	}
	cr_assert_eq(kv_iter_status(it), 0);
	kv_iter_free(it);
	return out;
}

Test(kv, put_get_delete)
{
	struct kv_batch *b;
	char *v;
	size_t n;

	cr_expect_eq(kv_get(kv, "a", 1, &v, &n), -ENOENT);
	put("a", "1");
	put("empty", "");
	expect_value("a", "1");
	expect_value("empty", "");
	put("a", "2");
	expect_value("a", "2");
	b = kv_batch_new(kv);
	kv_batch_delete(b, "a", 1);
	kv_batch_delete(b, "never", 5);
	cr_assert_eq(kv_batch_commit(kv, b, true), 0);
	kv_batch_free(b);
	expect_value("a", "-");
	expect_value("empty", "");
}

Test(kv, binary_keys_and_values)
{
	const char k[] = {'x', 0, (char)0xff, 'y'};
	const char v[] = {0, 1, 0, (char)0x80, (char)0xff};
	struct kv_batch *b = kv_batch_new(kv);
	struct kv_iter *it;
	char *got;
	size_t n;

	kv_batch_put(b, k, sizeof(k), v, sizeof(v));
	kv_batch_put(b, "x", 1, "plain", 5);
	cr_assert_eq(kv_batch_commit(kv, b, false), 0);
	kv_batch_free(b);
	cr_assert_eq(kv_get(kv, k, sizeof(k), &got, &n), 0);
	cr_assert_eq(n, sizeof(v));
	cr_expect_eq(memcmp(got, v, n), 0);
	free(got);
	/* "x" < "x\0\xffy" < "y" in byte order */
	cr_assert_eq(kv_iter_open(&it, kv, "x", 1, "y", 1), 0);
	cr_assert(kv_iter_valid(it));
	kv_iter_key(it, &n);
	cr_expect_eq(n, 1);
	kv_iter_next(it);
	cr_assert(kv_iter_valid(it));
	cr_expect_eq(memcmp(kv_iter_key(it, &n), k, sizeof(k)), 0);
	cr_expect_eq(n, sizeof(k));
	cr_expect_eq(memcmp(kv_iter_value(it, &n), v, sizeof(v)), 0);
	kv_iter_next(it);
	cr_expect_not(kv_iter_valid(it));
	kv_iter_free(it);
}

Test(kv, iterator_bounds_and_seek)
{
	struct kv_iter *it;
	size_t n;

	put("a", "1");
	put("b", "2");
	put("b/1", "3");
	put("c", "4");
	put("d", "5");
	cr_expect_str_eq(scan("b", "d"), "b b/1 c");
	cr_expect_str_eq(scan("", NULL), "a b b/1 c d");
	cr_expect_str_eq(scan("bb", "c"), "");
	cr_assert_eq(kv_iter_open(&it, kv, "b", 1, "d", 1), 0);
	kv_iter_seek(it, "c", 1);
	cr_assert(kv_iter_valid(it));
	cr_expect_eq(memcmp(kv_iter_key(it, &n), "c", 1), 0);
	kv_iter_seek(it, "a", 1); /* below the lower bound: at the bound */
	cr_assert(kv_iter_valid(it));
	cr_expect_eq(memcmp(kv_iter_key(it, &n), "b", 1), 0);
	cr_expect_eq(n, 1);
	kv_iter_seek(it, "c0", 2);
	cr_expect_not(kv_iter_valid(it));
	kv_iter_free(it);
}

Test(kv, iterator_is_a_snapshot)
{
	struct kv_iter *it;
	size_t n;
	int seen = 0;

	put("s1", "old");
	put("s2", "old");
	cr_assert_eq(kv_iter_open(&it, kv, "s", 1, "t", 1), 0);
	put("s15", "new");
	put("s2", "new");
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		const char *v = kv_iter_value(it, &n);
		cr_expect_eq(n, 3);
		cr_expect_eq(memcmp(v, "old", 3), 0);
		seen++;
	}
	cr_expect_eq(seen, 2);
	kv_iter_free(it);
}

/* Many keys across many pages (etcd) in order, and seeks past the page. */
Test(kv, long_scan_and_far_seek)
{
	const int N = scaled(6000);
	struct kv_batch *b = kv_batch_new(kv);
	const struct kv_limits *l = kv_limits(kv);
	struct kv_iter *it;
	char k[32];
	size_t n;
	int i = 0;

	for (int j = 0; j < N; j++) {
		int len = snprintf(k, sizeof(k), "n%05d", j);
		if (!kv_batch_fits(b, (size_t)len, 3)) {
			cr_assert_eq(kv_batch_commit(kv, b, false), 0);
			kv_batch_clear(b);
		}
		kv_batch_put(b, k, (size_t)len, "val", 3);
	}
	cr_assert_eq(kv_batch_commit(kv, b, false), 0);
	kv_batch_free(b);
	cr_expect_leq(l->batch_ops, 128);
	cr_assert_eq(kv_iter_open(&it, kv, "n", 1, "o", 1), 0);
	for (; kv_iter_valid(it); kv_iter_next(it), i++) {
		const char *key = kv_iter_key(it, &n);
		snprintf(k, sizeof(k), "n%05d", i);
		cr_assert_eq(n, 6);
		cr_assert_eq(memcmp(key, k, 6), 0, "at %d", i);
	}
	cr_assert_eq(kv_iter_status(it), 0);
	cr_expect_eq(i, N);
	snprintf(k, sizeof(k), "n%05d", N * 5 / 6);
	kv_iter_seek(it, k, 6);
	cr_assert(kv_iter_valid(it));
	cr_expect_eq(memcmp(kv_iter_key(it, &n), k, 6), 0);
	kv_iter_seek(it, "n00010", 6);
	cr_assert(kv_iter_valid(it));
	cr_expect_eq(memcmp(kv_iter_key(it, &n), "n00010", 6), 0);
	kv_iter_next(it);
	cr_expect_eq(memcmp(kv_iter_key(it, &n), "n00011", 6), 0);
	kv_iter_free(it);
}

/* A keys-only iterator (kv_iter_open_keys) sees the keys a full one sees,
 * across pages and seeks, with empty values; the values stay as they were. */
Test(kv, keys_only_iterator)
{
	enum { V = 2000 };
	const int N = scaled(1500);
	struct kv_batch *b = kv_batch_new(kv);
	struct kv_iter *it, *full;
	char k[32], *val = malloc(V);
	size_t n, vn;
	int i = 0;

	cr_assert_not_null(val);
	for (int j = 0; j < N; j++) {
		int len = snprintf(k, sizeof(k), "v%05d", j);

		memset(val, 'a' + j % 26, V);
		if (!kv_batch_fits(b, (size_t)len, V)) {
			cr_assert_eq(kv_batch_commit(kv, b, false), 0);
			kv_batch_clear(b);
		}
		kv_batch_put(b, k, (size_t)len, val, V);
	}
	cr_assert_eq(kv_batch_commit(kv, b, false), 0);
	kv_batch_free(b);
	put("w", "after");
	cr_assert_eq(kv_iter_open_keys(&it, kv, "v", 1, "w", 1), 0);
	cr_assert_eq(kv_iter_open(&full, kv, "v", 1, "w", 1), 0);
	for (; kv_iter_valid(it); kv_iter_next(it), kv_iter_next(full), i++) {
		const char *key = kv_iter_key(it, &n);
		const char *v = kv_iter_value(it, &vn);

		snprintf(k, sizeof(k), "v%05d", i);
		cr_assert_eq(n, 6);
		cr_assert_eq(memcmp(key, k, 6), 0, "at %d", i);
		cr_assert_eq(vn, 0);
		cr_assert_str_eq(v, "");
		cr_assert(kv_iter_valid(full));
		cr_assert_eq(memcmp(kv_iter_key(full, &n), k, 6), 0);
		v = kv_iter_value(full, &vn);
		cr_assert_eq(vn, V);
		cr_assert_eq(v[V - 1], 'a' + i % 26);
	}
	cr_assert_eq(kv_iter_status(it), 0);
	cr_assert_not(kv_iter_valid(full));
	cr_expect_eq(i, N);
	snprintf(k, sizeof(k), "v%05d", N * 14 / 15);
	kv_iter_seek(it, k, 6);
	cr_assert(kv_iter_valid(it));
	cr_expect_eq(memcmp(kv_iter_key(it, &n), k, 6), 0);
	kv_iter_seek(it, "v00010", 6);
	cr_assert(kv_iter_valid(it));
	cr_expect_eq(memcmp(kv_iter_key(it, &n), "v00010", 6), 0);
	kv_iter_next(it);
	cr_expect_eq(memcmp(kv_iter_key(it, &n), "v00011", 6), 0);
	kv_iter_value(it, &vn);
	cr_expect_eq(vn, 0);
	kv_iter_free(it);
	kv_iter_free(full);
	free(val);
}

/* A batch applies in order: the last operation on a key wins, whatever the
 * engine does with duplicates and puts inside delete-ranges. */
Test(kv, batch_order_semantics)
{
	struct kv_batch *b;

	put("r/a", "old");
	put("r/b", "old");
	put("r/c", "old");
	put("r/d", "old");
	put("z", "old");
	b = kv_batch_new(kv);
	kv_batch_put(b, "p", 1, "1", 1);
	kv_batch_put(b, "p", 1, "2", 1); /* put twice: the last */
	kv_batch_put(b, "q", 1, "1", 1);
	kv_batch_delete(b, "q", 1); /* put then delete: gone */
	kv_batch_delete(b, "z", 1);
	kv_batch_put(b, "z", 1, "new", 3); /* delete then put: there */
	kv_batch_put(b, "r/a", 3, "x", 1); /* put, then a range over it */
	kv_batch_delete_range(b, "r/", 2, "r0", 2);
	kv_batch_put(b, "r/b", 3, "new", 3); /* puts inside the range after */
	kv_batch_put(b, "r/d", 3, "new", 3);
	kv_batch_put(b, "r/", 2, "lo", 2);	  /* at its lower bound */
	kv_batch_delete(b, "r/c", 3);		  /* a point delete inside it */
	kv_batch_delete_range(b, "s", 1, "s", 1); /* empty */
	cr_assert_eq(kv_batch_count(b), 13);
	cr_assert_eq(kv_batch_commit(kv, b, false), 0);
	kv_batch_free(b);
	expect_value("p", "2");
	expect_value("q", "-");
	expect_value("z", "new");
	cr_expect_str_eq(scan("r", "s"), "r/ r/b r/d");
	expect_value("r/", "lo");
	expect_value("r/b", "new");
	expect_value("r/d", "new");
	expect_value("r/a", "-");
}

Test(kv, two_ranges_and_cuts)
{
	struct kv_batch *b;

	for (int i = 0; i < 10; i++) {
		char k[8];
		snprintf(k, sizeof(k), "t%d", i);
		put(k, "old");
	}
	b = kv_batch_new(kv);
	kv_batch_delete_range(b, "t0", 2, "t6", 2);
	kv_batch_delete_range(b, "t4", 2, "t9", 2); /* overlapping */
	kv_batch_put(b, "t5", 2, "new", 3);	    /* inside both */
	kv_batch_put(b, "t1", 2, "new", 3);
	kv_batch_put(b, "t3", 2, "new", 3);
	cr_assert_eq(kv_batch_commit(kv, b, false), 0);
	kv_batch_free(b);
	cr_expect_str_eq(scan("t", "u"), "t1 t3 t5 t9");
	expect_value("t5", "new");
}

/* A batch over the limits is refused whole, never split: one past the
 * operations a batch sized by the limits holds fits while the exact count
 * (kv_batch_room) has room, one past that is refused, unsent. */
Test(kv, limits_refuse_whole_batch)
{
	const struct kv_limits *l = kv_limits(kv);
	struct kv_batch *b = kv_batch_new(kv);
	struct kv_counts c0, c1;
	char k[32];
	size_t i;

	cr_assert_leq(l->batch_ops, 128);
	cr_assert_leq(l->batch_actions, 128);
	cr_assert_geq(l->batch_actions, l->batch_ops);
	cr_assert_leq(l->batch_bytes, 1536u << 10);
	for (i = 0; i < l->batch_ops; i++) {
		int len = snprintf(k, sizeof(k), "L%05zu", i);
		cr_assert(kv_batch_fits(b, (size_t)len, 1));
		kv_batch_put(b, k, (size_t)len, "v", 1);
	}
	cr_expect_not(kv_batch_fits(b, 6, 1));
	cr_expect_eq(kv_batch_room(b), l->batch_actions - l->batch_ops);
	for (; kv_batch_room(b); i++) {
		int len = snprintf(k, sizeof(k), "L%05zu", i);
		kv_batch_put(b, k, (size_t)len, "v", 1);
	}
	cr_expect_eq(i, l->batch_actions);
	kv_batch_put(b, "L99999", 6, "v", 1);
	kv_counts(kv, &c0);
	cr_expect_eq(kv_batch_commit(kv, b, false), -E2BIG);
	kv_counts(kv, &c1);
	cr_expect_eq(c1.commits, c0.commits, "refused before the engine");
	cr_expect_eq(c1.txns, c0.txns);
	cr_expect_str_eq(scan("L", "M"), "");
	/* exactly at the limit: commits */
	kv_batch_clear(b);
	for (i = 0; i < l->batch_actions; i++) {
		int len = snprintf(k, sizeof(k), "L%05zu", i);
		kv_batch_put(b, k, (size_t)len, "v", 1);
	}
	cr_expect_eq(kv_batch_room(b), 0);
	cr_expect_eq(kv_batch_commit(kv, b, false), 0);
	kv_batch_free(b);
	expect_value("L00000", "v");
}

/*
 * The exact count: on an engine that applies a range delete as one action
 * per key (DynamoDB), the keys a range covers when added count, the range
 * none; elsewhere the range is one operation. A batch of a range and puts
 * filled to kv_batch_room() commits (on DynamoDB: one transaction); one put
 * more is refused unsent. Conditions count, and so do the tracked reads a
 * commit will turn into conditions.
 */
Test(kv, room_counts_range_keys)
{
	const struct kv_limits *l = kv_limits(kv);
	const size_t K = 40; /* keys under the range */
	struct kv_batch *b = kv_batch_new(kv);
	struct kv_counts c0, c1;
	size_t i, room, puts;
	char k[32], *v;

	for (i = 0; i < K; i++) {
		int len = snprintf(k, sizeof(k), "D%03zu", i);
		kv_batch_put(b, k, (size_t)len, "v", 1);
	}
	cr_assert_eq(kv_batch_commit(kv, b, false), 0);
	kv_batch_clear(b);
	room = kv_batch_room(b);
	cr_assert_eq(room, l->batch_actions);
	cr_expect_eq(kv_batch_range_room(b),
		     l->range_per_key ? room : kv_range_keys(kv));
	kv_batch_delete_range(b, "D", 1, "E", 1);
	cr_expect_eq(kv_batch_count(b), 1);
	cr_expect_eq(kv_batch_room(b), room - (l->range_per_key ? K : 1));
	cr_expect_eq(l->range_per_key, on_dynamodb());
	kv_batch_expect(b, "cond", 4, 0); /* absent: holds */
	cr_expect_eq(kv_batch_room(b), room - (l->range_per_key ? K : 1) - 1);
	for (puts = 0; kv_batch_room(b); puts++) {
		int len = snprintf(k, sizeof(k), "P%03zu", puts);
		kv_batch_put(b, k, (size_t)len, "p", 1);
	}
	kv_batch_put(b, "Pzzz", 4, "p", 1);
	kv_counts(kv, &c0);
	cr_expect_eq(kv_batch_commit(kv, b, false), -E2BIG);
	kv_counts(kv, &c1);
	cr_expect_eq(c1.commits, c0.commits, "refused before the engine");
	cr_expect_eq(c1.txns, c0.txns);
	cr_expect_str_eq(scan("P", "Q"), "");
	/* without the one too many: one commit, one transaction on DynamoDB */
	kv_batch_clear(b);
	kv_batch_delete_range(b, "D", 1, "E", 1);
	kv_batch_expect(b, "cond", 4, 0);
	for (i = 0; i < puts; i++) {
		int len = snprintf(k, sizeof(k), "P%03zu", i);
		kv_batch_put(b, k, (size_t)len, "p", 1);
	}
	cr_expect_eq(kv_batch_room(b), 0);
	cr_expect_eq(kv_batch_commit(kv, b, false), 0);
	kv_counts(kv, &c0);
	cr_expect_eq(c0.commits, c1.commits + 1);
	if (on_dynamodb())
		cr_expect_eq(c0.txns, c1.txns + 1);
	cr_expect_str_eq(scan("D", "E"), "");
	expect_value("P000", "p");
	/* a tracked read is a condition of the next commit: it takes room */
	kv_batch_clear(b);
	kv_track(kv);
	cr_expect_eq(kv_get(kv, "P000", 4, &v, &i), 0);
	free(v);
	cr_expect_eq(kv_batch_room(b), l->batch_actions - 1);
	cr_expect_not(kv_untrack(kv));
	cr_expect_eq(kv_batch_room(b), l->batch_actions);
	kv_batch_free(b);
}

Test(kv, limits_bytes)
{
	const struct kv_limits *l = kv_limits(kv);
	size_t big = 256 << 10, i;
	char *v = malloc(big);
	struct kv_batch *b = kv_batch_new(kv);
	char k[16];

	memset(v, 'v', big);
	for (i = 0; kv_batch_fits(b, 4, big); i++) {
		snprintf(k, sizeof(k), "B%03zu", i);
		kv_batch_put(b, k, 4, v, big);
	}
	cr_expect_geq(i, 4);
	cr_expect_leq(kv_batch_bytes(b), l->batch_bytes);
	cr_expect_eq(kv_batch_commit(kv, b, false), 0); /* fits: commits */
	kv_batch_put(b, "Bzzz", 4, v, big);
	cr_expect_gt(kv_batch_bytes(b), l->batch_bytes);
	cr_expect_eq(kv_batch_commit(kv, b, false), -E2BIG);
	kv_batch_free(b);
	expect_value("Bzzz", "-");
	free(v);
}

struct writer {
	int id, each;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char k[32];

	for (int i = 0; i < w->each; i++) {
		struct kv_batch *b = kv_batch_new(kv);
		int len = snprintf(k, sizeof(k), "w%d/%03d", w->id, i);
		kv_batch_put(b, k, (size_t)len, k, (size_t)len);
		if (kv_batch_commit(kv, b, false))
			abort();
		kv_batch_free(b);
	}
	return NULL;
}

Test(kv, concurrent_commits)
{
	pthread_t th[12];
	struct writer w[12];
	struct kv_iter *it;
	int n = 0;

	for (int i = 0; i < 12; i++) {
		w[i].id = i;
		w[i].each = scaled(100);
		pthread_create(&th[i], NULL, writer_main, &w[i]);
	}
	for (int i = 0; i < 12; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(kv_iter_open(&it, kv, "w", 1, "x", 1), 0);
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const char *k = kv_iter_key(it, &kl);
		const char *v = kv_iter_value(it, &vl);
		cr_expect_eq(kl, vl);
		cr_expect_eq(memcmp(k, v, kl), 0);
		n++;
	}
	kv_iter_free(it);
	cr_expect_eq(n, 12 * scaled(100));
}

/* etcd: an iterator whose revision was compacted stops with -ESTALE, and a
 * new one opened at the last key seen goes on. */
/* Compacts the cluster's history up to now (etcd); returns that revision. */
static long long compact_all(void)
{
	struct json_object *req, *resp = NULL, *h;
	const char *eps = getenv("PATHFS_TEST_ETCD");
	struct etcd *e;
	long long rev;

	cr_assert(cluster_lock_ex, "%s compacts: list it in compacting_tests",
		  criterion_current_test->name);
	cr_assert_eq(etcd_open(&e, eps, NULL), 0);
	req = json_object_new_object();
	json_object_object_add(req, "key", json_object_new_string("AA=="));
	cr_assert_eq(etcd_call(e, "/v3/kv/range", req, &resp), 0);
	json_object_put(req);
	cr_assert(json_object_object_get_ex(resp, "header", &h));
	rev = etcd_int(h, "revision");
	req = json_object_new_object();
	json_object_object_add(req, "revision", json_object_new_int64(rev));
	json_object_put(resp);
	cr_assert_eq(etcd_call(e, "/v3/kv/compaction", req, &resp), 0);
	json_object_put(req);
	json_object_put(resp);
	etcd_close(e);
	return rev;
}

Test(kv, compacted_revision)
{
	struct kv_batch *b;
	struct kv_iter *it;
	char k[16], *last = NULL;
	size_t n;
	int seen = 0;

	if (!on_etcd()) {
		/* RocksDB never compacts a snapshot away: nothing to test */
		cr_assert(true);
		return;
	}
	b = kv_batch_new(kv);
	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "c%04d", i);
		kv_batch_put(b, k, 5, "v", 1);
		if (kv_batch_count(b) == 100) {
			cr_assert_eq(kv_batch_commit(kv, b, false), 0);
			kv_batch_clear(b);
		}
	}
	kv_batch_free(b);
	cr_assert_eq(kv_iter_open(&it, kv, "c", 1, "d", 1), 0);
	put("c0000", "newer"); /* the iterator's revision is history now */
	compact_all();
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		free(last);
		last = strndup(kv_iter_key(it, &n), 5);
		seen++;
	}
	cr_expect_eq(kv_iter_status(it), -ESTALE);
	cr_expect_lt(seen, 1000);
	kv_iter_free(it);
	cr_assert_not_null(last);
	cr_assert_eq(kv_iter_open(&it, kv, last, 5, "d", 1), 0);
	for (; kv_iter_valid(it); kv_iter_next(it))
		seen++;
	cr_expect_eq(kv_iter_status(it), 0);
	cr_expect_eq(seen, 1001); /* the last key seen twice */
	kv_iter_free(it);
	free(last);
}

/*
 * etcd: a commit whose answer is lost after etcd applied it is sent again
 * (etcd.c); meanwhile another commit rewrote the key. The retry must not
 * apply the batch a second time: a delete would take the newer value, a put
 * would bring back the older one. The transport's test hook loses the
 * answer and makes the other commit inside that window.
 */
static const char *lose_key, *lose_value;
static int lose_armed;

static bool lose_and_rewrite(const char *path)
{
	if (!lose_armed || strcmp(path, "/v3/kv/txn"))
		return false;
	lose_armed = 0;
	put(lose_key, lose_value); /* a commit of its own, not lost */
	return true;
}

static void lost_answer_case(bool delete)
{
	struct kv_batch *b = kv_batch_new(kv);

	put("lost", "old");
	if (delete)
		kv_batch_delete(b, "lost", 4);
	else
		kv_batch_put(b, "lost", 4, "first", 5);
	lose_key = "lost";
	lose_value = "newer";
	lose_armed = 1;
	etcd_test_lose_answer = lose_and_rewrite;
	cr_assert_eq(kv_batch_commit(kv, b, false), 0);
	etcd_test_lose_answer = NULL;
	cr_assert_eq(lose_armed, 0, "the hook did not run");
	kv_batch_free(b);
	expect_value("lost", "newer");
}

Test(kv, lost_answer_delete_applies_once)
{
	if (!on_etcd()) {
		cr_assert(true); /* RocksDB commits are local: no retry */
		return;
	}
	lost_answer_case(true);
}

Test(kv, lost_answer_put_applies_once)
{
	if (!on_etcd()) {
		cr_assert(true);
		return;
	}
	lost_answer_case(false);
}

/* ---- conditioned commits ------------------------------------------------- */

/* The version of @k (0: absent), as kv_get_ver() says it. */
static uint64_t ver_of(struct kv *k, const char *key)
{
	uint64_t ver = 42;
	char *v = NULL;
	size_t n;
	int rc = kv_get_ver(k, key, strlen(key), &v, &n, &ver);

	free(v);
	cr_assert(rc == 0 || rc == -ENOENT, "get %s: %s", key, strerror(-rc));
	cr_assert_eq(rc == 0, ver != 0, "%s: rc %d, version %llu", key, rc,
		     (unsigned long long)ver);
	return ver;
}

/* Commits a put of @key=@v on @k conditioned on @key's version @ver: rc. */
static int put_if(struct kv *k, const char *key, uint64_t ver, const char *v)
{
	struct kv_batch *b = kv_batch_new(k);
	int rc;

	kv_batch_expect(b, key, strlen(key), ver);
	kv_batch_put(b, key, strlen(key), v, strlen(v));
	rc = kv_batch_commit(k, b, false);
	kv_batch_free(b);
	return rc;
}

/* A key's version is 0 while absent, changes with its value, not with
 * other keys' commits, and is 0 again once deleted. */
Test(kv, versions_follow_values)
{
	struct kv_batch *b;
	uint64_t v1, v2;

	cr_assert_eq(ver_of(kv, "k"), 0);
	put("k", "one");
	v1 = ver_of(kv, "k");
	put("other", "x");
	cr_expect_eq(ver_of(kv, "k"), v1);
	put("k", "two");
	v2 = ver_of(kv, "k");
	cr_expect_neq(v2, v1);
	b = kv_batch_new(kv);
	kv_batch_delete(b, "k", 1);
	cr_assert_eq(kv_batch_commit(kv, b, false), 0);
	kv_batch_free(b);
	cr_expect_eq(ver_of(kv, "k"), 0);
}

/* Two commits that create one name, each on condition that it is absent:
 * the first lands, the second fails with -EAGAIN and writes nothing, none
 * of its other operations either; kv_counts counts the conflict. */
Test(kv, condition_absent_creates_once)
{
	struct kv_counts c0, c1;
	struct kv_batch *b;

	kv_counts(kv, &c0);
	cr_assert_eq(put_if(kv, "name", 0, "first"), 0);
	b = kv_batch_new(kv);
	kv_batch_expect(b, "name", 4, 0);
	kv_batch_put(b, "name", 4, "second", 6);
	kv_batch_put(b, "side", 4, "effect", 6);
	kv_batch_delete(b, "other", 5);
	put("other", "kept");
	cr_assert_eq(kv_batch_commit(kv, b, false), -EAGAIN);
	kv_batch_free(b);
	expect_value("name", "first");
	expect_value("side", "-");
	expect_value("other", "kept");
	kv_counts(kv, &c1);
	cr_expect_eq(c1.conflicts - c0.conflicts, 1);
}

/* A commit conditioned on what it read fails once the key changed, and
 * lands after reading again; one conditioned on several keys fails if any
 * of them changed. A batch of conditions only says whether they hold. */
Test(kv, condition_on_stale_version_fails)
{
	struct kv_batch *b;
	uint64_t va, vb;

	put("a", "1");
	put("b", "1");
	va = ver_of(kv, "a");
	vb = ver_of(kv, "b");
	put("a", "2"); /* another writer's */
	cr_assert_eq(put_if(kv, "a", va, "3"), -EAGAIN);
	expect_value("a", "2");
	va = ver_of(kv, "a");
	b = kv_batch_new(kv);
	kv_batch_expect(b, "a", 1, va);
	kv_batch_expect(b, "b", 1, vb);
	cr_assert_eq(kv_batch_commit(kv, b, false), 0);
	put("b", "2");
	cr_assert_eq(kv_batch_commit(kv, b, false), -EAGAIN);
	kv_batch_clear(b); /* the conditions go too */
	kv_batch_put(b, "c", 1, "x", 1);
	cr_assert_eq(kv_batch_commit(kv, b, false), 0);
	kv_batch_free(b);
	expect_value("c", "x");
	cr_assert_eq(put_if(kv, "a", va, "3"), 0);
	expect_value("a", "3");
}

/* Threads incrementing one counter by read, add, conditioned put, retried
 * on -EAGAIN: no increment is lost (an unconditioned put loses some). */
#define INC_THREADS 4
#define INC_EACH    25

static void *increment(void *arg)
{
	struct kv *k = arg;
	long retries = 0;

	for (int i = 0; i < INC_EACH; i++) {
		for (;;) {
			char *v = NULL, buf[32];
			size_t n;
			uint64_t ver;
			int rc = kv_get_ver(k, "ctr", 3, &v, &n, &ver);
			long c = rc == 0 ? strtol(v, NULL, 10) : 0;

			free(v);
			if (rc && rc != -ENOENT)
				return (void *)-1L;
			snprintf(buf, sizeof(buf), "%ld", c + 1);
			rc = put_if(k, "ctr", ver, buf);
			if (rc == 0)
				break;
			if (rc != -EAGAIN)
				return (void *)-1L;
			retries++;
		}
	}
	return (void *)retries;
}

static void increments_on(struct kv *const ks[INC_THREADS])
{
	pthread_t th[INC_THREADS];
	char want[16];

	for (int i = 0; i < INC_THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, increment, ks[i]), 0);
	for (int i = 0; i < INC_THREADS; i++) {
		void *r;
		pthread_join(th[i], &r);
		cr_expect_geq((long)r, 0, "thread %d failed", i);
	}
	snprintf(want, sizeof(want), "%d", INC_THREADS * INC_EACH);
	expect_value("ctr", want);
}

Test(kv, conditioned_increments_lose_nothing)
{
	struct kv *ks[INC_THREADS] = {kv, kv, kv, kv};

	increments_on(ks);
}

/* A put by another thread: a commit no tracking of this thread sees. */
struct put_args {
	const char *k, *v;
};

static void *put_thread(void *arg)
{
	struct put_args *p = arg;

	put(p->k, p->v);
	return NULL;
}

static void put_elsewhere(const char *k, const char *v)
{
	struct put_args p = {k, v};
	pthread_t th;

	cr_assert_eq(pthread_create(&th, NULL, put_thread, &p), 0);
	pthread_join(th, NULL);
}

/* Commits a put of @k=@v by this thread: its rc. */
static int try_put(const char *k, const char *v)
{
	struct kv_batch *b = kv_batch_new(kv);
	int rc;

	kv_batch_put(b, k, strlen(k), v, strlen(v));
	rc = kv_batch_commit(kv, b, false);
	kv_batch_free(b);
	return rc;
}

/*
 * Tracked reads (kv_track): a commit fails once a key the thread read, or
 * found absent, changed since; the first commit that lands ends the
 * tracking; a batch with conditions of its own ignores the tracked reads.
 */
Test(kv, tracked_reads_condition_the_commit)
{
	char *v;

	put("k", "1");
	kv_track(kv);
	free(get("k"));
	free(get("absent"));
	put_elsewhere("k", "2");
	cr_assert_eq(try_put("x", "1"), -EAGAIN);
	cr_assert(kv_untrack(kv), "the conflict is reported");
	expect_value("x", "-");

	kv_track(kv);
	free(get("k"));
	free(get("absent"));
	put_elsewhere("absent", "now");
	cr_assert_eq(try_put("x", "2"), -EAGAIN);
	cr_assert(kv_untrack(kv));

	kv_track(kv);
	v = get("k");
	cr_assert_eq(put_if(kv, "other", 0, "own"), 0); /* own conditions */
	cr_assert_eq(try_put("x", "3"), 0);		/* tracked: k as read */
	put_elsewhere("k", "3");
	cr_assert_eq(try_put("x", "4"), 0); /* the tracking ended */
	cr_assert_not(kv_untrack(kv));
	expect_value("x", "4");
	free(v);
}

/* etcd: a conditioned commit whose answer is lost after etcd applied it is
 * sent again; its condition fails then (its own put changed the key), but
 * the commit was applied: 0, not -EAGAIN. */
Test(kv, lost_answer_of_conditioned_commit)
{
	if (!on_etcd()) {
		cr_assert(true); /* RocksDB commits are local: no retry */
		return;
	}
	lose_key = "elsewhere";
	lose_value = "x";
	lose_armed = 1;
	etcd_test_lose_answer = lose_and_rewrite;
	cr_assert_eq(put_if(kv, "once", 0, "1"), 0);
	etcd_test_lose_answer = NULL;
	cr_assert_eq(lose_armed, 0, "the hook did not run");
	expect_value("once", "1");
}

/* ---- one writer per store (etcd) ------------------------------------------ */

/* Opens @url read-write (or read-only) for a test: its rc, *out on success. */
static int open_at(struct kv **out, const char *url, bool ro)
{
	struct kv_options o = {.create = true, .strict = true, .read_only = ro};

	return kv_open(out, url, &o);
}

static void put_on(struct kv *k, const char *key, const char *v, int want)
{
	struct kv_batch *b = kv_batch_new(k);
	int rc;

	kv_batch_put(b, key, strlen(key), v, strlen(v));
	rc = kv_batch_commit(k, b, false);
	cr_assert_eq(rc, want, "put %s: %s", key, strerror(-rc));
	kv_batch_free(b);
}

/* Revokes the lease of the key NAME/m/@what of the store at `where` (its
 * owner key, or a shared writer's), as its expiry would (a writer that
 * stopped answering). */
static void revoke_lease_of(const char *what)
{
	const char *eps = getenv("PATHFS_TEST_ETCD");
	const char *name = strrchr(where, '/') + 1;
	struct json_object *req, *resp = NULL, *kvs;
	struct etcd *e;
	char key[128], *b;
	long long lease;

	snprintf(key, sizeof(key), "%s/m/%s", name, what);
	cr_assert_eq(etcd_open(&e, eps, NULL), 0);
	req = json_object_new_object();
	b = etcd_b64(key, strlen(key));
	json_object_object_add(req, "key", json_object_new_string(b));
	free(b);
	cr_assert_eq(etcd_call(e, "/v3/kv/range", req, &resp), 0);
	json_object_put(req);
	cr_assert(json_object_object_get_ex(resp, "kvs", &kvs) &&
		      json_object_array_length(kvs) == 1,
		  "no owner key %s", key);
	lease = etcd_int(json_object_array_get_idx(kvs, 0), "lease");
	json_object_put(resp);
	cr_assert_gt(lease, 0);
	req = json_object_new_object();
	json_object_object_add(req, "ID", json_object_new_int64(lease));
	cr_assert_eq(etcd_call(e, "/v3/lease/revoke", req, &resp), 0);
	json_object_put(req);
	json_object_put(resp);
	etcd_close(e);
}

static void revoke_owner_lease(void)
{
	revoke_lease_of("owner");
}

/* DynamoDB: a client of the test's DynamoDB Local, as the store's. */
static struct ddb *test_ddb(void)
{
	struct ddb *d;
	char why[256];

	cr_assert_eq(ddb_open(&d, "us-east-1", getenv("PATHFS_TEST_DYNAMODB"),
			      why, sizeof(why)),
		     0, "%s", why);
	return d;
}

/* The table of `where` (dynamodb://TABLE?...) in @buf. */
static const char *test_table(char *buf, size_t size)
{
	const char *t = where + strlen("dynamodb://");

	snprintf(buf, size, "%.*s", (int)strcspn(t, "?"), t);
	return buf;
}

/* DynamoDB: another writer took the store's lease once it expired, as a
 * writer that stopped answering for the TTL would find it. */
static void steal_ddb_lease(void)
{
	struct ddb *d = test_ddb();
	struct json_object *req = json_object_new_object(), *resp = NULL;
	struct json_object *item = json_object_new_object();
	char table[128];

	cr_assert_eq(ddb_add(item, "pk", ddb_s("#meta")), 0);
	cr_assert_eq(ddb_add(item, "sk", ddb_b("lease", 5)), 0);
	cr_assert_eq(ddb_add(item, "o", ddb_s("a thief")), 0);
	cr_assert_eq(ddb_add(item, "h", ddb_s("test_kv")), 0);
	cr_assert_eq(ddb_add(item, "e", ddb_n(0)), 0); /* expired at once */
	cr_assert_eq(
	    ddb_add(req, "TableName",
		    json_object_new_string(test_table(table, sizeof(table)))),
	    0);
	cr_assert_eq(ddb_add(req, "Item", item), 0);
	cr_assert_eq(ddb_call(d, "PutItem", req, &resp), 0);
	json_object_put(req);
	json_object_put(resp);
	ddb_close(d);
}

/* DynamoDB: shared writer @id's item expired (e in the past), as its
 * keeper would leave it after it stopped. */
static void expire_ddb_writer(uint64_t id)
{
	struct ddb *d = test_ddb();
	struct json_object *req = json_object_new_object(), *resp = NULL;
	struct json_object *key = json_object_new_object();
	struct json_object *vals = json_object_new_object();
	char table[128], sk[32];

	snprintf(sk, sizeof(sk), "writer#%016llx", (unsigned long long)id);
	cr_assert_eq(ddb_add(key, "pk", ddb_s("#meta")), 0);
	cr_assert_eq(ddb_add(key, "sk", ddb_b(sk, strlen(sk))), 0);
	cr_assert_eq(ddb_add(vals, ":z", ddb_n(1)), 0);
	cr_assert_eq(
	    ddb_add(req, "TableName",
		    json_object_new_string(test_table(table, sizeof(table)))),
	    0);
	cr_assert_eq(ddb_add(req, "Key", key), 0);
	cr_assert_eq(ddb_add(req, "UpdateExpression",
			     json_object_new_string("SET e = :z")),
		     0);
	cr_assert_eq(ddb_add(req, "ConditionExpression",
			     json_object_new_string("attribute_exists(e)")),
		     0);
	cr_assert_eq(ddb_add(req, "ExpressionAttributeValues", vals), 0);
	cr_assert_eq(ddb_call(d, "UpdateItem", req, &resp), 0,
		     "no writer item %s", sk);
	json_object_put(req);
	json_object_put(resp);
	ddb_close(d);
}

/* A second read-write open is refused while the first holds the store;
 * read-only opens are not; once the first closes, a new writer opens. */
Test(kv, one_writer_per_store)
{
	struct kv *other;

	if (!on_etcd() && !on_dynamodb()) {
		cr_assert(true); /* RocksDB: store.c's flock, test_store */
		return;
	}
	cr_assert_eq(open_at(&other, where, false), -EBUSY);
	{ /* who holds it, as pathfsctl says it */
		char holder[256] = "";

		cr_expect_eq(kv_holder(where, holder, sizeof(holder)), 0);
		cr_expect(strstr(holder, "(pid ") != NULL, "%s", holder);
	}
	cr_assert_eq(open_at(&other, where, true), 0);
	kv_close(other);
	put("k", "v");
	kv_close(kv);
	kv = NULL;
	cr_assert_eq(open_at(&kv, rw_url(), false), 0);
	expect_value("k", "v");
	put("k", "w");
}

/* The lease outlives its TTL while the open lives (the keeper renews it). */
Test(kv, lease_kept_alive)
{
	char url[PATH_MAX + 32];
	struct kv *other;
	int ttl;

	if (!on_etcd() && !on_dynamodb()) {
		cr_assert(true);
		return;
	}
	/* DynamoDB: 6 s, renewed every 2 s: a renewal of DynamoDB Local's
	 * JVM on a loaded machine took more than the 1.3 s left of 2 s */
	ttl = on_dynamodb() ? 6 : 2;
	kv_close(kv);
	kv = NULL;
	snprintf(url, sizeof(url), "%s%clease-ttl=%d", where,
		 on_dynamodb() ? '&' : '?', ttl);
	cr_assert_eq(open_at(&kv, url, false), 0);
	sleep(3 * ttl);
	put("after", "ttl");
	cr_assert_eq(open_at(&other, where, false), -EBUSY);
}

/* A writer whose lease is gone is fenced: its commits fail with -EROFS,
 * before and after a new writer took the store, and change nothing. */
Test(kv, stale_writer_fenced)
{
	struct kv *other;

	if (!on_etcd() && !on_dynamodb()) {
		cr_assert(true);
		return;
	}
	put("k", "first");
	if (on_dynamodb())
		steal_ddb_lease();
	else
		revoke_owner_lease();
	put_on(kv, "k", "stale", -EROFS);
	cr_assert_eq(open_at(&other, rw_url(), false), 0);
	put_on(other, "k", "second", 0);
	put_on(kv, "k", "stale2", -EROFS);
	{ /* a delete-only batch is fenced too */
		struct kv_batch *b = kv_batch_new(kv);
		kv_batch_delete(b, "k", 1);
		cr_assert_eq(kv_batch_commit(kv, b, false), -EROFS);
		kv_batch_free(b);
	}
	kv_close(kv); /* must not take the new writer's owner key */
	kv = other;
	expect_value("k", "second");
	cr_assert_eq(open_at(&other, where, false), -EBUSY);
}

/* Opens @url as one writer of several (kv_options.shared): its rc. */
static int open_shared(struct kv **out, const char *url)
{
	struct kv_options o = {.create = true, .strict = true, .shared = true};

	return kv_open(out, url, &o);
}

/*
 * etcd, DynamoDB: shared writers and an owner never hold one store together, in
 * either order; two shared writers do, and their conditioned commits
 * (threads of both incrementing one counter) lose nothing. Once they
 * close, an owner opens again.
 */
Test(kv, shared_writers_exclude_an_owner)
{
	struct kv *a, *b, *other;

	if (!on_etcd() && !on_dynamodb()) {
		cr_assert(true); /* RocksDB: one process, store.c's flock */
		return;
	}
	cr_assert_eq(open_shared(&other, rw_url()), -EBUSY);
	kv_close(kv);
	kv = NULL;
	cr_assert_eq(open_shared(&a, rw_url()), 0);
	cr_assert_eq(open_shared(&b, rw_url()), 0);
	cr_assert_eq(open_at(&other, rw_url(), false), -EBUSY);
	cr_assert_eq(open_at(&other, where, true), 0); /* a reader may */
	kv = other;
	{
		struct kv *ks[INC_THREADS] = {a, b, a, b};
		increments_on(ks);
	}
	kv_close(a);
	cr_assert_eq(open_at(&other, rw_url(), false), -EBUSY); /* b holds */
	kv_close(b);
	kv_close(kv);
	cr_assert_eq(open_at(&kv, rw_url(), false), 0);
	put("after", "owner");
}

/* Whether writer @id is among those kv_writers(@k) lists. */
static bool lists_writer(struct kv *k, uint64_t id)
{
	uint64_t *ids = NULL;
	size_t n = 0;
	bool found = false;

	cr_assert_eq(kv_writers(k, &ids, &n), 0);
	for (size_t i = 0; i < n; i++)
		found |= ids[i] == id;
	free(ids);
	return found;
}

/* Shared writer @a's hold on the store runs out, as if it stopped: its
 * item expired (DynamoDB), its lease revoked (etcd). */
static void stop_writer(struct kv *a)
{
	char what[64];

	if (on_dynamodb()) {
		expire_ddb_writer(kv_writer_id(a));
		return;
	}
	snprintf(what, sizeof(what), "writer/%016llx",
		 (unsigned long long)kv_writer_id(a));
	revoke_lease_of(what);
}

/*
 * A shared writer that stopped (its lease ran out) is no longer listed by
 * kv_writers, and from the moment it is not, it is fenced: what the
 * others take over from it (its renames, holds, orphans) it can no longer
 * change. Its close changes nothing of the others'.
 */
Test(kv, a_writer_not_listed_is_fenced)
{
	struct kv *a, *b, *other;

	if (!on_etcd() && !on_dynamodb()) {
		cr_assert(true); /* RocksDB: one process, no shared writers */
		return;
	}
	kv_close(kv);
	kv = NULL;
	cr_assert_eq(open_shared(&a, rw_url()), 0);
	cr_assert_eq(open_shared(&b, rw_url()), 0);
	cr_assert_neq(kv_writer_id(a), 0);
	cr_assert_neq(kv_writer_id(a), kv_writer_id(b));
	cr_assert(lists_writer(b, kv_writer_id(a)));
	cr_assert(lists_writer(a, kv_writer_id(b)));
	put_on(a, "k", "from a", 0);
	stop_writer(a);
	cr_assert(!lists_writer(b, kv_writer_id(a)), "a is still listed");
	cr_assert(lists_writer(b, kv_writer_id(b)));
	put_on(a, "k", "stale", -EROFS);
	put_on(b, "k", "from b", 0);
	put_on(a, "k", "stale2", -EROFS);
	kv_close(a); /* takes nothing of b's */
	cr_assert(lists_writer(b, kv_writer_id(b)));
	cr_assert_eq(open_at(&other, rw_url(), false), -EBUSY); /* b lives */
	kv_close(b);
	cr_assert_eq(open_at(&kv, rw_url(), false), 0);
	expect_value("k", "from b");
}

/* A writer without kv_options.shared opens a store whose only shared
 * writer stopped (its lease ran out), and that writer is fenced. */
Test(kv, an_owner_opens_past_a_stopped_shared_writer)
{
	struct kv *a, *other;

	if (!on_etcd() && !on_dynamodb()) {
		cr_assert(true); /* RocksDB: one process, no shared writers */
		return;
	}
	kv_close(kv);
	kv = NULL;
	cr_assert_eq(open_shared(&a, rw_url()), 0);
	put_on(a, "k", "from a", 0);
	cr_assert_eq(open_at(&other, rw_url(), false), -EBUSY);
	stop_writer(a);
	cr_assert_eq(open_at(&kv, rw_url(), false), 0);
	put_on(a, "k", "stale", -EROFS);
	cr_assert_eq(open_shared(&other, rw_url()), -EBUSY);
	kv_close(a); /* takes nothing of the owner's */
	put("k", "owner");
	expect_value("k", "owner");
}

/* ---- watches (etcd, DynamoDB) ------------------------------------------------ */

/* Whether the engine under test has watches (other processes write it). */
static bool has_watch(void)
{
	return on_etcd() || on_dynamodb();
}

/* What a watch was told, as text: "reset;" and "put KEY=VALUE;" or "del KEY;" */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static char seen[4096];

static void seen_add(const char *fmt, const char *k, size_t klen, const char *v,
		     size_t vlen)
{
	size_t o;

	pthread_mutex_lock(&seen_lock);
	o = strlen(seen);
	snprintf(seen + o, sizeof(seen) - o, fmt, (int)klen, k, (int)vlen, v);
	pthread_mutex_unlock(&seen_lock);
}

static void on_change(void *ctx, long long rev, const char *k, size_t klen,
		      const char *v, size_t vlen)
{
	if (v)
		seen_add("put %.*s=%.*s;", k, klen, v, vlen);
	else
		seen_add("del %.*s;%.*s", k, klen, "", 0);
}

static void on_reset(void *ctx)
{
	seen_add("%.*s%.*sreset;", "", 0, "", 0);
}

/* Waits up to 5 s for the log to read @want. */
static void expect_seen(const char *want)
{
	bool ok = false;

	for (int i = 0; i < 500 && !ok; i++) {
		pthread_mutex_lock(&seen_lock);
		ok = !strcmp(seen, want);
		pthread_mutex_unlock(&seen_lock);
		if (!ok)
			usleep(10000);
	}
	pthread_mutex_lock(&seen_lock);
	cr_expect_str_eq(seen, want);
	pthread_mutex_unlock(&seen_lock);
}

/* A read-only open watching [w/, w0) is told of another open's commits in
 * [w/, w0), keys and values (deletes without one), in commit order, of
 * nothing else, and of nothing after kv_watch_stop(); RocksDB has no watch. */
Test(kv, watch_tells_commits)
{
	struct kv_watch *w;
	struct kv_batch *b;
	struct kv *ro;

	seen[0] = '\0';
	if (!has_watch()) {
		cr_assert_eq(kv_watch(&w, kv, "w/", 2, "w0", 2, 0, on_change,
				      on_reset, NULL),
			     -EOPNOTSUPP);
		cr_assert_null(w);
		return;
	}
	cr_assert_eq(open_at(&ro, where, true), 0);
	cr_assert_eq(
	    kv_watch(&w, ro, "w/", 2, "w0", 2, 0, on_change, on_reset, NULL),
	    0);
	expect_seen("reset;");
	put("w/a", "1");
	put("x", "outside");
	b = kv_batch_new(kv);
	kv_batch_delete(b, "w/a", 3);
	kv_batch_put(b, "w/b", 3, "", 0);
	cr_assert_eq(kv_batch_commit(kv, b, false), 0);
	kv_batch_free(b);
	put("w/b", "2");
	expect_seen("reset;put w/a=1;del w/a;put w/b=;put w/b=2;");
	kv_watch_stop(w);
	put("w/c", "3");
	usleep(200000);
	expect_seen("reset;put w/a=1;del w/a;put w/b=;put w/b=2;");
	kv_close(ro);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits up to 5 s for the log to end with @tail; how long it took (ms),
 * or -1 if it never did. */
static long long wait_seen_tail(const char *tail, long long since)
{
	size_t tl = strlen(tail);

	for (;;) {
		bool ok;
		size_t n;

		pthread_mutex_lock(&seen_lock);
		n = strlen(seen);
		ok = n >= tl && !strcmp(seen + n - tl, tail);
		pthread_mutex_unlock(&seen_lock);
		if (ok)
			return now_ms() - since;
		if (now_ms() - since > 5000)
			return -1;
		usleep(5000);
	}
}

/* The reset of watch_within_a_second: the writer commits w/r as the
 * watch says it stands, before anything else can happen on its thread. */
static void on_reset_then_put(void *ctx)
{
	on_reset(ctx);
	if (ctx)
		put("w/r", "at-start");
}

/*
 * On every engine with a watch (etcd, DynamoDB's stream): a follower's
 * watch is told of each of the writer's puts, deletes and batches within
 * a second; a change made between the follower's read and its watch's
 * start is not lost (the watch's reset() says to read again, and the read
 * then finds it); and a commit the moment the watch stands (in its reset())
 * is handed out, not lost in between.
 */
Test(kv, watch_within_a_second)
{
	struct kv_watch *w;
	struct kv_batch *b;
	struct kv *ro;
	char *v = NULL;
	size_t n;
	long long t, worst = 0;
	struct {
		const char *what, *tail;
	} steps[] = {
	    {"put", "put w/a=1;"},
	    {"put again", "put w/a=2;"},
	    {"delete", "del w/a;"},
	    {"batch", "put w/c=3;del w/b;"},
	};

	seen[0] = '\0';
	if (!has_watch()) {
		cr_assert(true); /* no watch on RocksDB: watch_tells_commits */
		return;
	}
	put("w/b", "old");
	cr_assert_eq(open_at(&ro, where, true), 0);
	/* the follower reads, then the writer changes what it read */
	cr_assert_eq(kv_get(ro, "w/b", 3, &v, &n), 0);
	cr_expect_str_eq(v, "old");
	free(v);
	put("w/b", "new");
	cr_assert_eq(kv_watch(&w, ro, "w/", 2, "w0", 2, 0, on_change,
			      on_reset_then_put, ro),
		     0);
	cr_expect_geq(wait_seen_tail("reset;put w/r=at-start;", now_ms()), 0,
		      "the commit as the watch stood: %s", seen);
	/* after the reset, the follower reads again: the change is there */
	cr_assert_eq(kv_get(ro, "w/b", 3, &v, &n), 0);
	cr_expect_str_eq(v, "new");
	free(v);
	for (size_t i = 0; i < sizeof(steps) / sizeof(*steps); i++) {
		long long start = now_ms();

		switch (i) {
		case 0:
			put("w/a", "1");
			break;
		case 1:
			put("w/a", "2");
			break;
		case 2:
			b = kv_batch_new(kv);
			kv_batch_delete(b, "w/a", 3);
			cr_assert_eq(kv_batch_commit(kv, b, false), 0);
			kv_batch_free(b);
			break;
		default:
			b = kv_batch_new(kv);
			kv_batch_put(b, "w/c", 3, "3", 1);
			kv_batch_put(b, "x/outside", 9, "no", 2);
			kv_batch_delete(b, "w/b", 3);
			cr_assert_eq(kv_batch_commit(kv, b, false), 0);
			kv_batch_free(b);
			break;
		}
		t = wait_seen_tail(steps[i].tail, start);
		cr_expect(t >= 0 && t < 1000, "%s: seen after %lld ms: %s",
			  steps[i].what, t, seen);
		if (t > worst)
			worst = t;
	}
	cr_log_info("watch: slowest change seen after %lld ms", worst);
	kv_watch_stop(w);
	expect_seen("reset;put w/r=at-start;put w/a=1;put w/a=2;del w/a;"
		    "put w/c=3;del w/b;");
	kv_close(ro);
}

/* A watch from a revision etcd compacted is canceled: it watches again from
 * now and says so (a second reset), then tells the commits after. */
Test(kv, watch_from_compacted_revision_resets)
{
	struct kv_watch *w;
	struct kv *ro;
	long long rev;

	seen[0] = '\0';
	if (!on_etcd()) {
		cr_assert(true); /* no watch on RocksDB: watch_tells_commits */
		return;
	}
	put("w/a", "1");
	put("w/a", "2");
	rev = compact_all();
	cr_assert_eq(open_at(&ro, where, true), 0);
	cr_assert_eq(kv_watch(&w, ro, "w/", 2, "w0", 2, rev - 1, on_change,
			      on_reset, NULL),
		     0);
	/* created at the old revision, canceled, created again from now */
	expect_seen("reset;reset;");
	put("w/b", "3");
	expect_seen("reset;reset;put w/b=3;");
	kv_watch_stop(w);
	kv_close(ro);
}

/* A thread's commits after kv_quiet(), each a put of w/q and a put of w/r
 * in one batch; how many failed. */
static void *quiet_commits(void *arg)
{
	intptr_t failed = 0;

	kv_quiet(kv);
	for (int i = 0; i < 20; i++) {
		struct kv_batch *b = kv_batch_new(kv);

		kv_batch_put(b, "w/q", 3, "q", 1);
		kv_batch_put(b, "w/r", 3, "r", 1);
		failed += kv_batch_commit(kv, b, false) != 0;
		kv_batch_free(b);
	}
	return (void *)failed;
}

/* A watch of the writing open does not hand out what a thread committed
 * after kv_quiet() (its caller applied those itself), however quickly the
 * watch meets them, and hands out every other thread's commits. */
Test(kv, quiet_commits_are_not_handed_out)
{
	struct kv_watch *w;
	pthread_t th;
	void *failed;

	seen[0] = '\0';
	if (!on_etcd()) {
		cr_assert(true); /* no watch on RocksDB: watch_tells_commits */
		return;
	}
	cr_assert_eq(
	    kv_watch(&w, kv, "w/", 2, "w0", 2, 0, on_change, on_reset, NULL),
	    0);
	expect_seen("reset;");
	put("w/a", "1");
	cr_assert_eq(pthread_create(&th, NULL, quiet_commits, NULL), 0);
	put("w/b", "2");
	cr_assert_eq(pthread_join(th, &failed), 0);
	cr_assert_eq((intptr_t)failed, 0);
	put("w/c", "3");
	expect_seen("reset;put w/a=1;put w/b=2;put w/c=3;");
	kv_watch_stop(w);
}

/* Between kv_pin() and kv_unpin() this thread's reads see the store as the
 * first of them did, whatever is committed meanwhile (etcd: one revision;
 * -ESTALE once compacted), or kv_unpin() says -ESTALE (RocksDB, DynamoDB:
 * a key read under the pin changed; a pin no commit overlapped is 0). */
Test(kv, pinned_reads_are_one_moment)
{
	char *v = NULL;
	size_t n;

	put("p/a", "1");
	put("p/b", "1");
	kv_pin(kv);
	expect_value("p/a", "1");
	put("p/a", "2");
	put("p/b", "2");
	put("p/c", "2");
	if (!on_etcd()) {
		expect_value("p/b", "2"); /* no revision there: the latest */
		cr_expect_eq(kv_unpin(kv), -ESTALE, "p/a changed: not one");
		kv_pin(kv);
		expect_value("p/a", "2");
		expect_value("p/b", "2");
		cr_expect_eq(kv_unpin(kv), 0, "nothing committed meanwhile");
		/* a commit that leaves the keys read alone: still one moment */
		kv_pin(kv);
		expect_value("p/a", "2");
		put("p/d", "2");
		cr_expect_eq(kv_unpin(kv), 0, "p/a did not change");
		cr_expect_eq(kv_unpin(kv), 0); /* harmless */
		return;
	}
	expect_value("p/b", "1");
	expect_value("p/c", "-");
	cr_expect_str_eq(scan("p/", "p0"), "p/a p/b");
	{
		struct kv_iter *it;
		size_t len;

		cr_assert_eq(kv_iter_open(&it, kv, "p/b", 3, "p0", 2), 0);
		cr_assert(kv_iter_valid(it));
		cr_expect_eq(strncmp(kv_iter_value(it, &len), "1", 1), 0);
		kv_iter_free(it);
	}
	kv_unpin(kv);
	expect_value("p/b", "2");
	cr_expect_str_eq(scan("p/", "p0"), "p/a p/b p/c");

	/* a pinned revision compacted meanwhile: -ESTALE, then pin again */
	kv_pin(kv);
	expect_value("p/a", "2");
	put("p/a", "3");
	compact_all();
	cr_expect_eq(kv_get(kv, "p/a", 3, &v, &n), -ESTALE);
	kv_unpin(kv);
	kv_pin(kv);
	expect_value("p/a", "3");
	cr_expect_eq(kv_unpin(kv), 0);
	cr_expect_eq(kv_unpin(kv), 0); /* harmless */
}

/*
 * A reader that another process's commits race (a -o ro follower of a
 * DynamoDB table): a pin whose record changed among its reads is -ESTALE
 * at kv_unpin(), one whose record did not is 0 at the cost of one more
 * point read (a GetItem) per record read, and none for a content block.
 */
static int content_family(const char *key, size_t klen)
{
	return klen > 5 && !memcmp(key, "DATA#", 5) ? KV_CONTENT : KV_TREE;
}

Test(kv, follower_pin_sees_the_writers_commits)
{
	struct kv_options o = {.read_only = true, .family = content_family};
	struct kv *ro = NULL;
	struct kv_counts c0, c1;
	char *v = NULL;
	size_t n;

	if (!on_dynamodb())
		return; /* etcd: pinned_reads_are_one_moment; RocksDB: one
			   process */
	put("REC#f", "size=2");
	put("DATA#f#0", "aa");
	cr_assert_eq(kv_open(&ro, where, &o), 0);
	/* the writer rewrites the file between the follower's two reads */
	kv_pin(ro);
	cr_assert_eq(kv_get(ro, "REC#f", 5, &v, &n), 0);
	free(v);
	put("DATA#f#0", "bbb");
	put("REC#f", "size=3");
	cr_assert_eq(kv_get(ro, "DATA#f#0", 8, &v, &n), 0);
	free(v);
	cr_expect_eq(kv_unpin(ro), -ESTALE, "size and bytes of two moments");
	/* nothing meanwhile: one moment, one GetItem more (the record's) */
	kv_counts(ro, &c0);
	kv_pin(ro);
	cr_assert_eq(kv_get(ro, "REC#f", 5, &v, &n), 0);
	cr_expect_str_eq(v, "size=3");
	free(v);
	cr_assert_eq(kv_get(ro, "DATA#f#0", 8, &v, &n), 0);
	cr_expect_str_eq(v, "bbb");
	free(v);
	cr_expect_eq(kv_unpin(ro), 0);
	kv_counts(ro, &c1);
	cr_expect_eq(c1.requests - c0.requests, 3, "record, block, record");
	/* a record rewritten with the same value is a change too */
	kv_pin(ro);
	cr_assert_eq(kv_get(ro, "REC#f", 5, &v, &n), 0);
	free(v);
	put("REC#f", "size=3");
	cr_expect_eq(kv_unpin(ro), -ESTALE);
	/* the writer's own pin, no commit of its own overlapping: no read
	 * again (it holds the lease: nobody else commits) */
	kv_counts(kv, &c0);
	kv_pin(kv);
	expect_value("REC#f", "size=3");
	cr_expect_eq(kv_unpin(kv), 0);
	kv_counts(kv, &c1);
	cr_expect_eq(c1.requests - c0.requests, 1, "the record, once");
	kv_close(ro);
}

/*
 * A sole writer's pin needs no record read to answer for an iterator
 * (kv_pin_needs_record false: a readdir page reads no folder record) while
 * none of its own commits runs; one that ran makes it -ESTALE, and the
 * next pin of the thread reads the record (true), then false again. A
 * follower's pin always reads it.
 */
Test(kv, sole_writer_pin_needs_no_record)
{
	struct kv_options o = {.read_only = true};
	struct kv *ro = NULL;

	if (!on_dynamodb())
		return; /* etcd reads at a revision; RocksDB's iterators are
			   snapshots: neither pins a record */
	put("REC#d", "v1");
	kv_pin(kv);
	cr_expect_not(kv_pin_needs_record(kv));
	cr_expect_eq(kv_unpin(kv), 0, "no commit: one moment");
	kv_pin(kv);
	cr_expect_not(kv_pin_needs_record(kv));
	put("REC#d", "v2");
	cr_expect_eq(kv_unpin(kv), -ESTALE, "its own commit ran, unseen");
	kv_pin(kv);
	cr_expect(kv_pin_needs_record(kv), "the try after reads the record");
	expect_value("REC#d", "v2");
	put("OTHER", "x");
	cr_expect_eq(kv_unpin(kv), 0, "the record did not change");
	kv_pin(kv);
	cr_expect_not(kv_pin_needs_record(kv));
	cr_expect_eq(kv_unpin(kv), 0);
	cr_assert_eq(kv_open(&ro, where, &o), 0);
	kv_pin(ro);
	cr_expect(kv_pin_needs_record(ro), "a follower reads the record");
	kv_unpin(ro);
	kv_close(ro);
}

/*
 * Keys sort as bytes on every engine, across drives too (DynamoDB: one
 * partition per drive, keys naming none in one more): a folder's subtree
 * and children runs hold nothing of /docs-archive or /docs.txt, a name
 * byte 0xff sorts after every other, and a scan over several drives and
 * keys of none gives them in key order ('-' before '|': DRIVE#d-2| before
 * DRIVE#d|), seeks included.
 */
/* Whether @it is at key @k. */
static bool key_is(struct kv_iter *it, const char *k)
{
	size_t n;
	const char *at = kv_iter_key(it, &n);

	return n == strlen(k) && !memcmp(at, k, n);
}

Test(kv, keys_sort_as_bytes_across_drives)
{
	static const char *const keys[] = {
	    "DRIVE#d|PATH#//docs",
	    "DRIVE#d|PATH#//docs-archive",
	    "DRIVE#d|PATH#//docs.txt",
	    "DRIVE#d|PATH#/docs//a",
	    "DRIVE#d|PATH#/docs//\xff",
	    "DRIVE#d|PATH#/docs/sub//x",
	    "DRIVE#d|PATH#/docs-archive//b",
	    "DRIVE#d|PATH#/docs.txt//c",
	    "DRIVE#d|META",
	    "DRIVE#d-2|META",
	    "DRIVE#e|META",
	    "DRIVE#d",
	    "DRIVE#",
	    "\xff",
	    "DRIVE#bad id|x",
	};
	struct kv_batch *b = kv_batch_new(kv);
	struct kv_iter *it;
	size_t n;

	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		kv_batch_put(b, keys[i], strlen(keys[i]), "v", 1);
	cr_assert_eq(kv_batch_commit(kv, b, false), 0);
	kv_batch_free(b);
	cr_expect_str_eq(scan("DRIVE#d|PATH#/docs/", "DRIVE#d|PATH#/docs0"),
			 "DRIVE#d|PATH#/docs//a DRIVE#d|PATH#/docs//\xff "
			 "DRIVE#d|PATH#/docs/sub//x");
	cr_expect_str_eq(scan("DRIVE#d|PATH#/docs//", "DRIVE#d|PATH#/docs/0"),
			 "DRIVE#d|PATH#/docs//a DRIVE#d|PATH#/docs//\xff");
	cr_expect_str_eq(scan("DRIVE#d|PATH#//", "DRIVE#d|PATH#/0"),
			 "DRIVE#d|PATH#//docs DRIVE#d|PATH#//docs-archive "
			 "DRIVE#d|PATH#//docs.txt");
	cr_expect_str_eq(scan("DRIVE#", "DRIVE$"),
			 "DRIVE# DRIVE#bad id|x DRIVE#d DRIVE#d-2|META "
			 "DRIVE#d|META DRIVE#d|PATH#//docs "
			 "DRIVE#d|PATH#//docs-archive DRIVE#d|PATH#//docs.txt "
			 "DRIVE#d|PATH#/docs-archive//b "
			 "DRIVE#d|PATH#/docs.txt//c DRIVE#d|PATH#/docs//a "
			 "DRIVE#d|PATH#/docs//\xff DRIVE#d|PATH#/docs/sub//x "
			 "DRIVE#e|META");
	cr_expect_str_eq(scan("DRIVE#d|PATH#/docs-", "\xff"),
			 "DRIVE#d|PATH#/docs-archive//b "
			 "DRIVE#d|PATH#/docs.txt//c DRIVE#d|PATH#/docs//a "
			 "DRIVE#d|PATH#/docs//\xff DRIVE#d|PATH#/docs/sub//x "
			 "DRIVE#e|META");
	/* a drive skipped by a seek past its run, as drive_names() does */
	cr_assert_eq(kv_iter_open(&it, kv, "DRIVE#", 6, "DRIVE$", 6), 0);
	kv_iter_seek(it, "DRIVE#d}", 8);
	cr_assert(kv_iter_valid(it));
	cr_expect_eq(key_is(it, "DRIVE#e|META"), true);
	kv_iter_seek(it, "DRIVE#d-2|", 10);
	cr_assert(kv_iter_valid(it));
	cr_expect_eq(key_is(it, "DRIVE#d-2|META"), true);
	kv_iter_next(it);
	cr_expect_eq(key_is(it, "DRIVE#d|META"), true);
	kv_iter_free(it);
	/* the last byte value sorts last */
	cr_assert_eq(kv_iter_open(&it, kv, "", 0, NULL, 0), 0);
	while (kv_iter_valid(it)) {
		const char *k = kv_iter_key(it, &n);

		kv_iter_next(it);
		if (!kv_iter_valid(it))
			cr_expect(n == 1 && (unsigned char)k[0] == 0xff);
	}
	cr_expect_eq(kv_iter_status(it), 0);
	kv_iter_free(it);
}

/* Fresh credentials and a table name for the DynamoDB open tests. */
static int ddb_open_why(const char *table, bool ro, char *why, size_t wlen)
{
	struct kv_options o = {
	    .create = true, .read_only = ro, .why = why, .why_size = wlen};
	char url[PATH_MAX];
	struct kv *k = NULL;
	int rc;

	snprintf(url, sizeof(url), "dynamodb://%s?endpoint=%s", table,
		 getenv("PATHFS_TEST_DYNAMODB"));
	why[0] = '\0';
	rc = kv_open(&k, url, &o);
	kv_close(k);
	return rc;
}

/* DynamoDB: credentials it refuses are one clear error at open, within
 * seconds, that names them without their secret; no credentials at all
 * are said before any request. */
Test(kv, dynamodb_wrong_credentials_said)
{
	struct timespec t0, t1;
	char why[512];

	if (!on_dynamodb()) {
		cr_assert(true); /* no credentials elsewhere */
		return;
	}
	setenv("AWS_ACCESS_KEY_ID", "not-a-key!", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t-never-said", 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(ddb_open_why("kvt-creds", false, why, sizeof(why)),
		     -EACCES);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_expect_lt(t1.tv_sec - t0.tv_sec, 10);
	cr_expect(strstr(why, "credentials were refused"), "%s", why);
	cr_expect_null(strstr(why, "s3cr3t"), "%s", why);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_PROFILE");
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
	cr_expect_eq(ddb_open_why("kvt-creds", false, why, sizeof(why)),
		     -EACCES);
	cr_expect(strstr(why, "no AWS credentials"), "%s", why);
}

/* DynamoDB: a table whose key schema is not pathfs's is refused, naming
 * what it has; a read-only open creates no table. */
Test(kv, dynamodb_other_schema_refused)
{
	static const char spec[] =
	    "{\"TableName\":\"kvt-other-schema\","
	    "\"AttributeDefinitions\":["
	    "{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},"
	    "{\"AttributeName\":\"sk\",\"AttributeType\":\"S\"}],"
	    "\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":"
	    "\"HASH\"},{\"AttributeName\":\"sk\",\"KeyType\":\"RANGE\"}],"
	    "\"BillingMode\":\"PAY_PER_REQUEST\"}";
	struct json_object *req, *resp = NULL;
	struct ddb *d;
	char why[512];
	int rc;

	if (!on_dynamodb()) {
		cr_assert(true); /* no schema elsewhere */
		return;
	}
	d = test_ddb();
	req = json_tokener_parse(spec);
	cr_assert_not_null(req);
	rc = ddb_call(d, "CreateTable", req, &resp);
	cr_assert(rc == 0 || rc == -EBUSY, "%s", strerror(-rc));
	json_object_put(req);
	json_object_put(resp);
	ddb_close(d);
	cr_expect_eq(ddb_open_why("kvt-other-schema", false, why, sizeof(why)),
		     -EMEDIUMTYPE);
	cr_expect(strstr(why, "sk (S, sort key)") &&
		      strstr(why, "wants pk (S, partition key) + sk (B"),
		  "%s", why);
	cr_expect_eq(ddb_open_why("kvt-missing", true, why, sizeof(why)),
		     -ENOENT);
	cr_expect(strstr(why, "no table kvt-missing"), "%s", why);
}

static void expect_identity(const char *where_, const char *want)
{
	char *id = NULL;
	int rc = kv_identity(where_, &id);

	cr_expect_eq(rc, 0, "kv_identity(%s): %s", where_, strerror(-rc));
	if (!rc)
		cr_expect_str_eq(id, want, "identity of %s", where_);
	free(id);
}

/* Every spelling of one location has one identity (the control socket's
 * name): members in any order, case, localhost for 127.0.0.1, named twice,
 * a trailing slash, options; another NAME or member set another. */
Test(kv, identity_of_a_location)
{
	char *id = (char *)1;

	expect_identity("etcd://h2:2,h1:1/n", "etcd://h1:1,h2:2/n");
	expect_identity("etcd://H1:1,,h2:2,h1:1/n/", "etcd://h1:1,h2:2/n");
	expect_identity("etcd://localhost:5,LOCALHOST:4,127.0.0.1:3/n"
			"?lease-ttl=9",
			"etcd://127.0.0.1:3,127.0.0.1:4,127.0.0.1:5/n");
	expect_identity("etcd://localhostx:5/n", "etcd://localhostx:5/n");
	expect_identity("etcd://h1:1/n.x-Y_/?max-txn-ops=64",
			"etcd://h1:1/n.x-Y_");
	expect_identity("/some/dir/", "/some/dir/");
	expect_identity("dynamodb://tbl/", "dynamodb://tbl");
	expect_identity("dynamodb://tbl?lease-ttl=9&endpoint=http://h:1&"
			"region=eu-west-1",
			"dynamodb://tbl?region=eu-west-1&endpoint=http://h:1");
	expect_identity("dynamodb://tbl?endpoint=http://h:1&lease-ttl=9",
			"dynamodb://tbl?endpoint=http://h:1");
	cr_expect_eq(kv_identity("etcd://h1:1/a/b", &id), -EINVAL);
	cr_expect_null(id);
	cr_expect_eq(kv_identity("etcd://h1:1//", &id), -EINVAL);
	cr_expect_eq(kv_identity("etcd:///n", &id), -EINVAL);
	cr_expect_eq(kv_identity("etcd://,/n", &id), -EINVAL);
	cr_expect_eq(kv_identity("dynamodb://t", &id), -EINVAL);
	cr_expect_eq(kv_identity("dynamodb://tbl?password=x", &id), -EINVAL);
}

/* etcd+https:// names the same keys as etcd://: one identity; the TLS and
 * user options (etcdctl's --cacert, --cert, --key, --user) are no part of
 * it, and a value may spell a byte as %XX. */
Test(kv, identity_of_a_tls_location)
{
	expect_identity("etcd+https://H2:2,h1:1/n?cacert=/c%26a.pem&cert=/c"
			"&key=/k&user=u&password-file=/p&lease-ttl=9",
			"etcd://h1:1,h2:2/n");
	expect_identity("etcd+https://h1:1/n?cacert=/etc/ssl/ca.pem",
			"etcd://h1:1/n");
	expect_identity("etcd://h1:1/n?user=u", "etcd://h1:1/n");
}

/* What a location cannot say is refused, before any request: a password
 * (it would show in the process list and the mount table), TLS files
 * without TLS, a certificate without its key, a password file without a
 * user, an empty or unknown option, a bad %XX. */
Test(kv, tls_location_refusals)
{
	static const char *const bad[] = {
	    "etcd+https://h1:1/n?user=u&password=secret",
	    "etcd+https://h1:1/n?user=u:secret",
	    "etcd://h1:1/n?cacert=/ca.pem",
	    "etcd://h1:1/n?cert=/c&key=/k",
	    "etcd+https://h1:1/n?cert=/c",
	    "etcd+https://h1:1/n?key=/k",
	    "etcd+https://h1:1/n?password-file=/p",
	    "etcd+https://h1:1/n?cacert=",
	    "etcd+https://h1:1/n?cacert=/a%2",
	    "etcd+https://h1:1/n?cacert=/a%00b",
	    "etcd+https://h1:1/n?insecure=1",
	    "etcd+https:///n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *id = NULL;

		cr_expect_eq(kv_identity(bad[i], &id), -EINVAL, "%s", bad[i]);
		cr_expect_null(id, "%s", bad[i]);
		free(id);
	}
}

/* An open that fails says why in one line (kv_options.why), within
 * seconds: a member where nothing listens is named with its cause rather
 * than retried for ETCD_RETRY_S; a user without a password is refused
 * before any request. */
Test(kv, etcd_open_says_why)
{
	char why[512] = "x", url[128], cause[64];
	struct kv_options o = {
	    .read_only = true, .why = why, .why_size = sizeof(why)};
	struct timespec t0, t1;
	struct kv *kv = NULL;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);

	/* a port nothing listens on: bound, never listening */
	cr_assert(fd >= 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	snprintf(url, sizeof(url), "etcd+https://127.0.0.1:%d/n", port);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(kv_open(&kv, url, &o), -EHOSTUNREACH);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_expect_lt(t1.tv_sec - t0.tv_sec, 5);
	snprintf(cause, sizeof(cause), "127.0.0.1:%d: Connection refused",
		 port);
	cr_expect(strstr(why, cause) != NULL, "%s", why);
	close(fd);

	unsetenv("PATHFS_ETCD_PASSWORD");
	cr_expect_eq(kv_open(&kv, "etcd+https://127.0.0.1:1/n?user=u", &o),
		     -EINVAL);
	cr_expect(strstr(why, "user u has no password") != NULL, "%s", why);
	cr_expect_eq(kv_open(&kv, "etcd://127.0.0.1:1/n?user=u:pw", &o),
		     -EINVAL);
	cr_expect(strstr(why, "takes no password") != NULL, "%s", why);
}

static void no_change(void *ctx, long long rev, const char *k, size_t klen,
		      const char *v, size_t vlen)
{
}

static void no_reset(void *ctx)
{
}

/* An allocation the etcd backend cannot make (a key longer than memory; the
 * bytes are never read) is -ENOMEM, not the end of the process; the store
 * works on. */
Test(kv, out_of_memory_is_an_error)
{
	const size_t huge = SIZE_MAX / 2;
	struct kv_iter *it = (struct kv_iter *)1;
	struct kv_watch *w = (struct kv_watch *)1;

	if (!on_etcd()) {
		cr_assert(true); /* RocksDB allocates (and aborts) itself */
		return;
	}
	cr_expect_eq(kv_iter_open(&it, kv, "a", huge, NULL, 0), -ENOMEM);
	cr_expect_eq(kv_iter_open(&it, kv, "a", 1, "b", huge), -ENOMEM);
	cr_expect_eq(
	    kv_watch(&w, kv, "a", huge, "b", 1, 0, no_change, no_reset, NULL),
	    -ENOMEM);
	cr_expect_null(w);
	put("k", "v");
	expect_value("k", "v");
}
