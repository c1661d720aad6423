/*
 * test_shared.c - several writers of one drive on etcd (issue 24), at the
 * store: two store handles opened as shared writers
 * (store_options.shared) on one drive of the cluster that
 * tests/with_etcd.sh starts (PATHFS_TEST_ETCD), as two daemons on two
 * machines would hold it. Each test gets a fresh store name on the
 * cluster. Without a cluster the suite fails: it runs through
 * with_etcd.sh only.
 *
 * What it covers so far: who may open the store.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tree.h"

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
