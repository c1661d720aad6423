/*
 * test_shared.c - several writers of one drive on etcd (issue 24), at the
 * store: two store handles opened as shared writers
 * (store_options.shared) on one drive of the cluster that
 * tests/with_etcd.sh starts (PATHFS_TEST_ETCD), as two daemons on two
 * machines would hold it. Each test gets a fresh store name on the
 * cluster. Without a cluster the suite fails: it runs through
 * with_etcd.sh only.
 *
 * What it covers so far: who may open the store, and inode numbers. The
 * namespace operations are not yet conditioned on what they read (issue
 * 24's next step).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codec_i.h"
#include "drive_i.h"
#include "keys_i.h"

static char url[PATH_MAX];
static struct store *a, *b;

static struct store *open_shared(void)
{
	struct store_options o = {.create = true, .shared = true};
	struct store *s = NULL;
	int rc = store_open(&s, url, &o);

	cr_assert_eq(rc, 0, "store_open(%s): %s", url, strerror(-rc));
	return s;
}

static void setup(void)
{
	const char *eps = getenv("PATHFS_TEST_ETCD");
	struct timespec ts;

	cr_assert(
	    eps && *eps,
	    "PATHFS_TEST_ETCD is not set: run through tests/with_etcd.sh");
	clock_gettime(CLOCK_REALTIME, &ts);
	/* a lease that outlives a loaded machine's stalls (test_kv.c) */
	snprintf(url, sizeof(url), "etcd://%s/sh-%d-%ld?lease-ttl=60", eps,
		 (int)getpid(), (long)ts.tv_nsec);
	a = open_shared();
	cr_assert_eq(store_drive_create(a, "main", getuid(), getgid()), 0);
	b = open_shared();
}

static void teardown(void)
{
	store_close(a);
	store_close(b);
	a = b = NULL;
}

TestSuite(shared, .init = setup, .fini = teardown, .timeout = 300);

static struct tree *drive_of(struct store *s)
{
	struct tree *t;

	cr_assert_eq(store_drive(s, "main", &t), 0);
	return t;
}

/* META's inode high-water mark, as the cluster holds it. */
static uint64_t meta_hwm(struct store *s)
{
	struct sbuf k = {0};
	struct meta m;
	char *v = NULL;
	size_t vlen;

	key_meta(&k, "main");
	cr_assert_eq(kv_get(s->kv, k.buf, k.len, &v, &vlen), 0);
	cr_assert_eq(meta_decode(v, vlen, &m), 0);
	free(v);
	sbuf_release(&k);
	return m.ino_hwm;
}

/* Two writers that loaded the drive at one moment each take a range when
 * they first need one: never the same (on a blind write of META both
 * would hand out the mark they loaded). */
Test(shared, first_ranges_differ)
{
	struct tree *ta = drive_of(a), *tb = drive_of(b);
	uint64_t ia, ib, ja, jb;

	/* a, the drive's creator, hands out below the first mark: past it */
	for (ia = 0; ia < INO_RANGE - 1;)
		cr_assert_eq(tree_alloc_ino(ta, &ia), 0);
	cr_assert_eq(tree_alloc_ino(tb, &ib), 0);
	cr_assert_eq(tree_alloc_ino(ta, &ja), 0);
	cr_assert_eq(tree_alloc_ino(tb, &jb), 0);
	cr_expect_eq(ib, INO_RANGE, "b's first number");
	cr_expect_eq(ja, 2 * INO_RANGE, "a's range after b's");
	cr_expect_eq(jb, ib + 1);
	cr_expect_eq(meta_hwm(a), 3 * INO_RANGE);
}

/* Threads of both writers allocating at once, across many ranges: every
 * number is handed out once, and all lie below META's mark. */
#define THREADS	   4
#define PER_THREAD 3000

struct alloc_job {
	struct tree *t;
	uint64_t *out;
	int rc;
};

static void *alloc_many(void *arg)
{
	struct alloc_job *j = arg;

	for (int i = 0; i < PER_THREAD && !j->rc; i++)
		j->rc = tree_alloc_ino(j->t, &j->out[i]);
	return NULL;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t p = *(const uint64_t *)x, q = *(const uint64_t *)y;

	return p < q ? -1 : p > q;
}

Test(shared, inode_numbers_unique_across_writers)
{
	struct tree *t[2] = {drive_of(a), drive_of(b)};
	uint64_t *all = calloc(THREADS * PER_THREAD, sizeof(*all));
	struct alloc_job jobs[THREADS];
	pthread_t th[THREADS];
	size_t n = THREADS * PER_THREAD;

	cr_assert_not_null(all);
	for (int i = 0; i < THREADS; i++) {
		jobs[i] = (struct alloc_job){t[i % 2], all + i * PER_THREAD, 0};
		cr_assert_eq(pthread_create(&th[i], NULL, alloc_many, &jobs[i]),
			     0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(jobs[i].rc, 0, "thread %d: %s", i,
			     strerror(-jobs[i].rc));
	}
	qsort(all, n, sizeof(*all), cmp_u64);
	for (size_t i = 1; i < n; i++)
		cr_assert_neq(all[i], all[i - 1], "%llu handed out twice",
			      (unsigned long long)all[i]);
	cr_expect_gt(all[0], TREE_ROOT_INO);
	cr_expect_lt(all[n - 1], meta_hwm(b));
	free(all);
}

/* An exclusive writer (a mount today) is refused while shared ones hold
 * the store, and a shared one while an exclusive one does. */
Test(shared, exclusive_and_shared_writers_exclude_each_other)
{
	struct store_options o = {0};
	struct store *s = NULL;

	cr_assert_eq(store_open(&s, url, &o), -EBUSY);
	store_close(a);
	store_close(b);
	a = b = NULL;
	cr_assert_eq(store_open(&s, url, &o), 0);
	o.shared = true;
	cr_assert_eq(store_open(&a, url, &o), -EBUSY);
	a = NULL;
	store_close(s);
}
