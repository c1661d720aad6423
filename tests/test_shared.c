/*
 * test_shared.c - several writers of one drive (issue 24), at the store:
 * two store handles opened as shared writers (store_options.shared) on one
 * drive, as two daemons on two machines would hold it, on the engine the
 * wrapper starts: an etcd cluster (tests/with_etcd.sh, PATHFS_TEST_ETCD:
 * shared_etcd) or DynamoDB Local (tests/with_dynamodb.sh,
 * PATHFS_TEST_DYNAMODB: shared_dynamodb). Each test gets a fresh store: a
 * store name on the cluster, a table. Without either the suite fails: it
 * runs through a wrapper only.
 *
 * What it covers so far: who may open the store, inode numbers,
 * creates, removals, one-batch renames, hard links, an O_TMPFILE's linkat
 * and a setattr by path racing between the writers (tree_track), and one
 * file's content, size and mode changed by both at once (TREE_TRACKED), a
 * folder's journaled rewrite held by its branch lock while the other
 * writer works inside it, and its takeover when its writer stops.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "branchutil.h"
#include "branch_lock_i.h"
#include "drive_i.h"
#include "keys_i.h"

static char url[PATH_MAX];
static char name[64]; /* the test's store: etcd's NAME, DynamoDB's table */
static struct store *a, *b;

static bool on_dynamodb(void)
{
	const char *s = getenv("PATHFS_TEST_KV");

	return s && !strcmp(s, "dynamodb");
}

/*
 * A short lease for the tests of a writer that stops: @s seconds on etcd,
 * 2 more on DynamoDB (its keeper renews through DynamoDB Local's JVM,
 * which on a loaded machine took more than the 1.3 s left of 2 s:
 * test_kv.c's lease_kept_alive).
 */
static int short_ttl(int s)
{
	return on_dynamodb() ? s + 2 : s;
}

/* The URL of a store of the test's own (its name and -@tag; @tag NULL:
 * the test's store) with a lease of @ttl seconds. */
static void store_url(char *u, size_t len, const char *tag, int ttl)
{
	const char *eps = getenv("PATHFS_TEST_ETCD");
	const char *ep = getenv("PATHFS_TEST_DYNAMODB");

	if (on_dynamodb())
		snprintf(u, len, "dynamodb://%s%s%s?endpoint=%s&lease-ttl=%d",
			 name, tag ? "-" : "", tag ? tag : "", ep, ttl);
	else
		snprintf(u, len, "etcd://%s/%s%s%s?lease-ttl=%d", eps, name,
			 tag ? "-" : "", tag ? tag : "", ttl);
}

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
	const char *eps =
	    getenv(on_dynamodb() ? "PATHFS_TEST_DYNAMODB" : "PATHFS_TEST_ETCD");
	struct timespec ts;

	cr_assert(eps && *eps,
		  "PATHFS_TEST_ETCD or PATHFS_TEST_DYNAMODB is not set: run "
		  "through tests/with_etcd.sh or tests/with_dynamodb.sh");
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(name, sizeof(name), "sh-%d-%ld", (int)getpid(),
		 (long)ts.tv_nsec);
	/* a lease that outlives a loaded machine's stalls (test_kv.c) */
	store_url(url, sizeof(url), NULL, 60);
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
	cr_expect_eq(meta_hwm(a, "main"), 3 * INO_RANGE);
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
	cr_expect_lt(all[n - 1], meta_hwm(b, "main"));
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

/*
 * Races between the two writers, one thread each, released together by a
 * barrier each round so that their reads overlap their commits. Round i's
 * paths are @fmt1 and @fmt2 with i for each %d.
 */
#define ROUNDS 20

struct racer {
	int (*op)(struct tree *t, const char *p1, const char *p2);
	const char *fmt1, *fmt2;
	int stagger_us; /* round i starts i * stagger_us after the other's */
	struct tree *t;
	pthread_barrier_t *go;
	int rc[ROUNDS];
};

static void *race(void *arg)
{
	struct racer *r = arg;

	for (int i = 0; i < ROUNDS; i++) {
		char p1[32], p2[32] = "";

		snprintf(p1, sizeof(p1), r->fmt1, i, i);
		if (r->fmt2)
			snprintf(p2, sizeof(p2), r->fmt2, i, i);
		pthread_barrier_wait(r->go);
		if (r->stagger_us)
			usleep(i * r->stagger_us);
		r->rc[i] = r->op(r->t, p1, p2);
	}
	return NULL;
}

static void run_race(struct racer *x, struct racer *y)
{
	pthread_barrier_t go;
	pthread_t tx, ty;

	cr_assert_eq(pthread_barrier_init(&go, NULL, 2), 0);
	x->t = drive_of(a);
	y->t = drive_of(b);
	x->go = y->go = &go;
	cr_assert_eq(pthread_create(&tx, NULL, race, x), 0);
	cr_assert_eq(pthread_create(&ty, NULL, race, y), 0);
	pthread_join(tx, NULL);
	pthread_join(ty, NULL);
	pthread_barrier_destroy(&go);
}

static int make_file(struct tree *t, const char *path, const char *unused)
{
	return tree_mknode(t, path, S_IFREG | 0644, 0, 0, 0, NULL, NULL);
}

static int remove_dir(struct tree *t, const char *path, const char *unused)
{
	return tree_rmdir(t, path);
}

static int move(struct tree *t, const char *src, const char *dst)
{
	return tree_rename(t, src, dst, 0, NULL);
}

/* Makes the nodes @fmt with 0 .. ROUNDS-1 on writer a; folders, files. */
static void make_nodes(const char *fmt, mode_t mode)
{
	for (int i = 0; i < ROUNDS; i++) {
		char p[32];

		snprintf(p, sizeof(p), fmt, i);
		cr_assert_eq(
		    tree_mknode(drive_of(a), p, mode, 0, 0, 0, NULL, NULL), 0,
		    "%s", p);
	}
}

static void make_dirs(const char *fmt)
{
	make_nodes(fmt, S_IFDIR | 0755);
}

/* Each round: one of @x and @y made the name, the other got EEXIST. */
static void expect_one_wins(const struct racer *x, const struct racer *y)
{
	for (int i = 0; i < ROUNDS; i++)
		cr_expect((x->rc[i] == 0 && y->rc[i] == -EEXIST) ||
			      (x->rc[i] == -EEXIST && y->rc[i] == 0),
			  "round %d: %d and %d", i, x->rc[i], y->rc[i]);
}

/* Both writers create one name: one wins, the other gets EEXIST. */
Test(shared, create_race_one_wins)
{
	struct racer x = {.op = make_file, .fmt1 = "/name-%d"};
	struct racer y = {.op = make_file, .fmt1 = "/name-%d"};

	run_race(&x, &y);
	expect_one_wins(&x, &y);
}

/* rmdir on one writer, a create inside on the other: either the folder
 * stays with the file (ENOTEMPTY), or it is gone and the create failed
 * (ENOENT); never a file under a removed folder. */
Test(shared, rmdir_races_a_create_inside)
{
	struct racer x = {.op = remove_dir, .fmt1 = "/d-%d"};
	struct racer y = {.op = make_file, .fmt1 = "/d-%d/f"};
	struct tree_attr at;

	make_dirs("/d-%d");
	run_race(&x, &y);
	for (int i = 0; i < ROUNDS; i++) {
		char dir[32], file[32];

		snprintf(dir, sizeof(dir), "/d-%d", i);
		snprintf(file, sizeof(file), "/d-%d/f", i);
		if (x.rc[i] == 0) {
			cr_expect_eq(y.rc[i], -ENOENT, "round %d", i);
			cr_expect_eq(tree_lookup(drive_of(b), dir, &at),
				     -ENOENT);
			cr_expect_eq(
			    tree_lookup(drive_of(b), file, &at), -ENOENT,
			    "round %d: a file under a removed folder", i);
		} else {
			cr_expect_eq(x.rc[i], -ENOTEMPTY, "round %d", i);
			cr_expect_eq(y.rc[i], 0, "round %d", i);
			cr_expect_eq(tree_lookup(drive_of(b), file, &at), 0);
		}
	}
}

/* 0 if @path is a folder reachable from the root: every ancestor a
 * folder, as a walk down from / finds it. */
static int reachable(struct tree *t, const char *path)
{
	char p[64];
	struct tree_attr at;

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1;; s++) {
		char c = *s;

		if (c != '/' && c != '\0')
			continue;
		*s = '\0';
		if (tree_lookup(t, p, &at) || !S_ISDIR(at.mode))
			return -ENOENT;
		if (!c)
			return 0;
		*s = c;
	}
}

/* The rename-cycle race: one writer moves a into b, the other b into a, at
 * once. One wins, the other gets ENOENT (its source moved away), and both
 * folders stay reachable from the root: none is cut off in a cycle. */
Test(shared, rename_cycle_race_cuts_nothing_off)
{
	struct racer x = {.op = move, .fmt1 = "/a-%d", .fmt2 = "/b-%d/a-%d"};
	struct racer y = {.op = move, .fmt1 = "/b-%d", .fmt2 = "/a-%d/b-%d"};

	make_dirs("/a-%d");
	make_dirs("/b-%d");
	run_race(&x, &y);
	for (int i = 0; i < ROUNDS; i++) {
		char pa[32], pb[32];
		bool xwon = x.rc[i] == 0;

		cr_expect((x.rc[i] == 0) != (y.rc[i] == 0),
			  "round %d: %d and %d", i, x.rc[i], y.rc[i]);
		cr_expect_eq(xwon ? y.rc[i] : x.rc[i], -ENOENT, "round %d", i);
		if (xwon) {
			snprintf(pa, sizeof(pa), "/b-%d/a-%d", i, i);
			snprintf(pb, sizeof(pb), "/b-%d", i);
		} else {
			snprintf(pa, sizeof(pa), "/a-%d", i);
			snprintf(pb, sizeof(pb), "/a-%d/b-%d", i, i);
		}
		cr_expect_eq(reachable(drive_of(b), pa), 0, "%s", pa);
		cr_expect_eq(reachable(drive_of(b), pb), 0, "%s", pb);
	}
}

/*
 * One file changed by both writers at once (close-to-open's "each write
 * lands whole"): a write that merges a partial block (etcd has no patches:
 * read, modify, put), moves the size or puts the node back must not
 * overwrite what the other writer committed since its read. Each thread
 * changes only its own part, so a lost update shows as a part that lost
 * its writer's last change.
 */
#define WROUNDS 40
#define SPAN	100

enum change { OVERWRITE, APPEND, CHMOD };

struct changer {
	enum change what;
	uint64_t off; /* OVERWRITE: its SPAN bytes of block 0 */
	struct tree *t;
	pthread_barrier_t *go;
	int rc;
	char why[128];
};

/* Round @i of @c: its change, then (OVERWRITE, CHMOD) a read of it. */
static int change_once(struct changer *c, int i)
{
	char mine[SPAN], got[SPAN];
	struct tree_attr in = {.mode = i % 2 ? 0600 : 0640}, at;
	size_t n = 0;
	int rc;

	memset(mine, 'a' + i % 26, SPAN);
	mine[0] = (char)('0' + c->off / SPAN);
	if (c->what == CHMOD) {
		rc = tree_setattr(c->t, "/f", 0, &in, TREE_SET_MODE, NULL);
		if (!rc)
			rc = tree_lookup(c->t, "/f", &at);
		if (!rc && (at.mode & 07777) != in.mode)
			snprintf(c->why, sizeof(c->why),
				 "round %d: mode %o, not %o", i,
				 at.mode & 07777, in.mode);
		return rc;
	}
	rc = tree_write(c->t, "/f", 0, c->off, mine, SPAN, c->what == APPEND,
			NULL);
	if (rc || c->what == APPEND)
		return rc;
	rc = tree_read(c->t, "/f", 0, c->off, SPAN, got, &n);
	if (!rc && (n != SPAN || memcmp(got, mine, SPAN)))
		snprintf(c->why, sizeof(c->why),
			 "round %d: bytes %llu.. lost their write", i,
			 (unsigned long long)c->off);
	return rc;
}

static void *change_rounds(void *arg)
{
	struct changer *c = arg;

	for (int i = 0; i < WROUNDS; i++) {
		pthread_barrier_wait(c->go);
		if (!c->rc && !c->why[0])
			c->rc = change_once(c, i);
	}
	return NULL;
}

/* Runs @x on writer a and @y on writer b against a new file /f. */
static void run_changers(struct changer *x, struct changer *y)
{
	pthread_barrier_t go;
	pthread_t tx, ty;

	cr_assert_eq(
	    tree_mknode(drive_of(a), "/f", S_IFREG | 0644, 0, 0, 0, NULL, NULL),
	    0);
	cr_assert_eq(pthread_barrier_init(&go, NULL, 2), 0);
	x->t = drive_of(a);
	y->t = drive_of(b);
	x->go = y->go = &go;
	cr_assert_eq(pthread_create(&tx, NULL, change_rounds, x), 0);
	cr_assert_eq(pthread_create(&ty, NULL, change_rounds, y), 0);
	pthread_join(tx, NULL);
	pthread_join(ty, NULL);
	pthread_barrier_destroy(&go);
	cr_assert_eq(x->rc, 0, "a: %s", strerror(-x->rc));
	cr_assert_eq(y->rc, 0, "b: %s", strerror(-y->rc));
	cr_expect_str_empty(x->why, "a: %s", x->why);
	cr_expect_str_empty(y->why, "b: %s", y->why);
}

/* Each writer's bytes of one block, written again and again at once: none
 * is lost to the other's read-modify-write of the block. */
Test(shared, writes_into_one_block_keep_each_writers_bytes)
{
	struct changer x = {.what = OVERWRITE, .off = 0};
	struct changer y = {.what = OVERWRITE, .off = 2 * SPAN};

	run_changers(&x, &y);
}

/* Appends from both writers: every one lands whole, none over another
 * (each appends at the size it read, and that read is its condition). */
Test(shared, appends_from_both_writers_all_land)
{
	struct changer x = {.what = APPEND, .off = 0};
	struct changer y = {.what = APPEND, .off = SPAN};
	size_t len = 2 * WROUNDS * SPAN, n = 0;
	char *buf = malloc(len);
	int seen[2] = {0, 0};
	struct tree_attr at;

	cr_assert_not_null(buf);
	run_changers(&x, &y);
	cr_assert_eq(tree_lookup(drive_of(b), "/f", &at), 0);
	cr_expect_eq(at.size, len, "size %llu, not %zu",
		     (unsigned long long)at.size, len);
	cr_assert_eq(tree_read(drive_of(b), "/f", 0, 0, len, buf, &n), 0);
	for (size_t i = 0; i + SPAN <= n; i += SPAN) {
		const char *r = buf + i;
		int who = r[0] - '0';

		cr_assert(who == 0 || who == 1, "record at %zu: %c", i, r[0]);
		for (int j = 2; j < SPAN; j++)
			cr_assert_eq(r[j], r[1], "record at %zu torn", i);
		seen[who]++;
	}
	cr_expect_eq(seen[0], WROUNDS);
	cr_expect_eq(seen[1], WROUNDS);
	free(buf);
}

/* A chmod on one writer while the other writes the file: the write's bytes
 * and the chmod's mode both stay. */
Test(shared, chmod_and_write_at_once_both_stay)
{
	struct changer x = {.what = OVERWRITE, .off = 0};
	struct changer y = {.what = CHMOD};

	run_changers(&x, &y);
}

/* Makes the folder /w of 40 files (f00 .. f39) on drive @t. */
static void make_w(struct tree *t)
{
	cr_assert_eq(tree_mknode(t, "/w", S_IFDIR | 0755, 0, 0, 0, NULL, NULL),
		     0);
	for (int i = 0; i < 40; i++) {
		char p[32];

		snprintf(p, sizeof(p), "/w/f%02d", i);
		cr_assert_eq(
		    tree_mknode(t, p, S_IFREG | 0644, 0, 0, 0, NULL, NULL), 0);
	}
}

/* A child process opens store @u with @o and renames /w to /w2, killed
 * by the crash hook after 2 batches (10 keys each). */
static void rename_killed(const char *u, const struct store_options *o)
{
	struct store *s = NULL;
	struct tree *t;
	int status;
	pid_t pid = fork();

	cr_assert_neq(pid, -1);
	if (pid == 0) {
		setenv("PATHFS_CRASH_AFTER_BATCHES", "2", 1);
		if (store_open(&s, u, o) || store_drive(s, "main", &t))
			_exit(10);
		tree_rename(t, "/w", "/w2", 0, NULL);
		_exit(11);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "the rename was not killed (status %#x)", status);
}

/*
 * A sole writer killed in the middle of a folder rename, then shared
 * writers: none serves the half-moved branch (its changes there would be
 * lost to the replay that finishes the rename later); a sole writer's open
 * finishes it, and shared writers come back. The test's own store, with a
 * 2 s lease, so that the killed writer's lease expires soon.
 */
Test(shared, shared_writers_refuse_an_unfinished_rename)
{
	struct store_options ex = {.create = true, .rename_batch = 10};
	struct store_options sh = {.shared = true};
	char u[PATH_MAX];
	struct store *s = NULL;
	struct tree *t;
	struct tree_attr at;

	store_url(u, sizeof(u), "ren", short_ttl(2));
	cr_assert_eq(store_open(&s, u, &ex), 0);
	cr_assert_eq(store_drive_create(s, "main", getuid(), getgid()), 0);
	cr_assert_eq(store_drive(s, "main", &t), 0);
	make_w(t);
	store_close(s);
	s = NULL;

	rename_killed(u, &ex);
	sleep(short_ttl(2) + 1); /* its lease expires */

	cr_expect_eq(store_open(&s, u, &sh), -ENOTRECOVERABLE);
	cr_assert_eq(store_open(&s, u, &ex), 0, "a sole writer's open");
	cr_assert_eq(store_drive(s, "main", &t), 0);
	cr_expect_eq(tree_lookup(t, "/w", &at), -ENOENT);
	cr_expect_eq(tree_lookup(t, "/w2/f39", &at), 0, "the rename finished");
	store_close(s);
	s = NULL;
	cr_expect_eq(store_open(&s, u, &sh), 0, "shared writers again");
	store_close(s);
}

/* A store of its own for a test of a writer that stops: URL @u (@tag in its
 * name, a 4 s lease), its drive "main" on *s. */
static struct tree *short_lease_drive(const char *tag, char *u, size_t len,
				      struct store **s)
{
	struct store_options sh = {.create = true, .shared = true};
	struct tree *t;

	store_url(u, len, tag, short_ttl(4));
	cr_assert_eq(store_open(s, u, &sh), 0);
	cr_assert_eq(store_drive_create(*s, "main", getuid(), getgid()), 0);
	cr_assert_eq(store_drive(*s, "main", &t), 0);
	return t;
}

/* Runs @op(drive, @arg, &out) in a child that opens @u as a shared writer
 * and stops without closing it (its lease runs out); returns out. */
static uint64_t stopped_writer(const char *u,
			       int (*op)(struct tree *, uint64_t, uint64_t *),
			       uint64_t arg)
{
	struct store_options sh = {.shared = true};
	uint64_t out = 0;
	int fds[2], status;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		struct store *c;
		struct tree *ct;

		if (store_open(&c, u, &sh) || store_drive(c, "main", &ct) ||
		    op(ct, arg, &out) ||
		    write(fds[1], &out, sizeof(out)) != sizeof(out))
			_exit(10);
		_exit(0); /* stops: no close, its lease runs out */
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert_eq(read(fds[0], &out, sizeof(out)), sizeof(out));
	close(fds[0]);
	close(fds[1]);
	return out;
}

static int unlink_f_kept(struct tree *t, uint64_t unused, uint64_t *ino)
{
	return tree_unlink(t, "/f", TREE_KEEP_ORPHAN, ino);
}

/*
 * A shared writer that stops with an orphan (a file unlinked while open
 * there) and never comes back: once its lease expired, another writer
 * frees the orphan (tree_reclaim_dead, which the daemon runs every few
 * seconds); a live writer's orphans, its own or the other's, stay.
 */
Test(shared, a_stopped_writers_orphans_are_freed_by_another)
{
	char u[PATH_MAX];
	uint64_t gone = 0, mine = 0;
	struct store *s = NULL;
	struct tree *t = short_lease_drive("dead", u, sizeof(u), &s);
	struct node n = {0};
	size_t freed = 9;

	for (const char *p = "/f"; p; p = strcmp(p, "/f") ? NULL : "/g") {
		cr_assert_eq(
		    tree_mknode(t, p, S_IFREG | 0644, 0, 0, 0, NULL, NULL), 0);
		cr_assert_eq(tree_write(t, p, 0, 0, "bytes", 5, false, NULL),
			     0);
	}
	gone = stopped_writer(u, unlink_f_kept, 0);
	cr_assert_eq(tree_unlink(t, "/g", TREE_KEEP_ORPHAN, &mine), 0);
	cr_assert(gone && mine);

	cr_assert_eq(tree_reclaim_dead(t, &freed), 0);
	cr_expect_eq(freed, 0, "the stopped writer's lease still runs");
	sleep(short_ttl(4) + 2);
	cr_assert_eq(tree_reclaim_dead(t, &freed), 0);
	cr_expect_eq(freed, 1);
	cr_expect_eq(tree_get_inode(t, gone, &n), -ENOENT,
		     "the stopped writer's orphan is freed");
	node_release(&n);
	cr_expect_eq(tree_get_inode(t, mine, &n), 0, "this writer's stays");
	node_release(&n);
	store_close(s);
}

static int make_link(struct tree *t, const char *from, const char *to)
{
	return tree_link(t, from, to, NULL);
}

static int remove_file(struct tree *t, const char *path, const char *unused)
{
	return tree_unlink(t, path, 0, NULL);
}

static void make_files(const char *fmt)
{
	make_nodes(fmt, S_IFREG | 0644);
}

/* A hard link to a name the other writer creates: one wins, the other
 * gets EEXIST. */
Test(shared, link_to_a_name_created_meanwhile)
{
	struct racer x = {.op = make_link, .fmt1 = "/f-%d", .fmt2 = "/n-%d"};
	struct racer y = {.op = make_file, .fmt1 = "/n-%d"};

	make_files("/f-%d");
	run_race(&x, &y);
	expect_one_wins(&x, &y);
}

/*
 * A hard link of a file the other writer unlinks: either the link came
 * first and survives, the inode's one name (nlink 1), or it fails with
 * ENOENT; the unlinked name never comes back, and no name points to an
 * inode whose record is gone.
 */
Test(shared, link_of_a_file_unlinked_meanwhile)
{
	struct racer x = {.op = make_link, .fmt1 = "/f-%d", .fmt2 = "/l-%d"};
	struct racer y = {.op = remove_file, .fmt1 = "/f-%d"};
	struct tree *t = drive_of(b);
	struct tree_attr at;

	make_files("/f-%d");
	run_race(&x, &y);
	for (int i = 0; i < ROUNDS; i++) {
		char f[32], l[32];

		snprintf(f, sizeof(f), "/f-%d", i);
		snprintf(l, sizeof(l), "/l-%d", i);
		cr_expect_eq(y.rc[i], 0, "round %d: unlink %d", i, y.rc[i]);
		cr_expect_eq(tree_lookup(t, f, &at), -ENOENT,
			     "round %d: the unlinked name is back", i);
		if (x.rc[i] == 0) {
			cr_expect_eq(tree_getattr(t, l, 0, &at), 0,
				     "round %d: the link's inode", i);
			cr_expect_eq(at.nlink, 1, "round %d: nlink", i);
		} else {
			cr_expect_eq(x.rc[i], -ENOENT, "round %d", i);
			cr_expect_eq(tree_lookup(t, l, &at), -ENOENT);
		}
	}
}

/* O_TMPFILE files of writer a, one per round, to be named by linkat. */
static uint64_t tmp_ino[ROUNDS];

static int name_tmp(struct tree *t, const char *path, const char *unused)
{
	int i;

	cr_assert_eq(sscanf(path, "/d-%d/", &i), 1);
	return tree_link_tmp(t, tmp_ino[i], path, NULL);
}

/* linkat of an O_TMPFILE file into a folder the other writer removes:
 * the folder stays with the file, or it is gone and the link failed. */
Test(shared, tmpfile_named_in_a_folder_removed_meanwhile)
{
	/* rmdir is the quicker: staggered finely (the window is the link's
	 * commit in flight), some round lands its commit between the link's
	 * reads and its commit */
	struct racer x = {.op = remove_dir, .fmt1 = "/d-%d", .stagger_us = 15};
	struct racer y = {.op = name_tmp, .fmt1 = "/d-%d/t"};
	struct tree *t = drive_of(b);
	struct tree_attr at;

	make_dirs("/d-%d");
	for (int i = 0; i < ROUNDS; i++) {
		cr_assert_eq(tree_mktmp(t, "/", 0600, 0, 0, 0, &at), 0);
		tmp_ino[i] = at.ino;
	}
	run_race(&x, &y);
	for (int i = 0; i < ROUNDS; i++) {
		char dir[32], file[32];

		snprintf(dir, sizeof(dir), "/d-%d", i);
		snprintf(file, sizeof(file), "/d-%d/t", i);
		if (x.rc[i] == 0) {
			cr_expect_eq(y.rc[i], -ENOENT, "round %d", i);
			cr_expect_eq(tree_lookup(t, dir, &at), -ENOENT,
				     "round %d: a removed folder is back", i);
			cr_expect_eq(tree_lookup(t, file, &at), -ENOENT);
		} else {
			cr_expect_eq(x.rc[i], -ENOTEMPTY, "round %d", i);
			cr_expect_eq(y.rc[i], 0, "round %d", i);
			cr_expect_eq(tree_lookup(t, file, &at), 0);
		}
	}
}

static int chmod_path(struct tree *t, const char *path, const char *unused)
{
	struct tree_attr in = {.mode = 0600};

	return tree_setattr(t, path, 0, &in, TREE_SET_MODE, NULL);
}

/* chmod by path racing the other writer's rename of the file: the file
 * has its new name only (never back at the old one), chmod's or not. */
Test(shared, setattr_races_a_rename)
{
	/* chmod is the quicker: staggered as above */
	struct racer x = {.op = chmod_path, .fmt1 = "/f-%d", .stagger_us = 500};
	struct racer y = {.op = move, .fmt1 = "/f-%d", .fmt2 = "/g-%d"};
	struct tree *t = drive_of(b);
	struct tree_attr at;

	make_files("/f-%d");
	run_race(&x, &y);
	for (int i = 0; i < ROUNDS; i++) {
		char f[32], g[32];

		snprintf(f, sizeof(f), "/f-%d", i);
		snprintf(g, sizeof(g), "/g-%d", i);
		cr_expect_eq(y.rc[i], 0, "round %d: rename %d", i, y.rc[i]);
		cr_expect(x.rc[i] == 0 || x.rc[i] == -ENOENT, "round %d: %d", i,
			  x.rc[i]);
		cr_expect_eq(tree_lookup(t, f, &at), -ENOENT,
			     "round %d: the old name is back", i);
		cr_expect_eq(tree_lookup(t, g, &at), 0, "round %d", i);
	}
}

/* Makes @path (a folder) holding the file @path/f, on writer a. */
static void make_branch(const char *path)
{
	char f[64];

	snprintf(f, sizeof(f), "%s/f", path);
	cr_assert_eq(
	    tree_mknode(drive_of(a), path, S_IFDIR | 0755, 0, 0, 0, NULL, NULL),
	    0);
	cr_assert_eq(make_file(drive_of(a), f, NULL), 0);
}

/* Whether drive @t has no branch lock left (branch_lock.c). */
static void expect_no_locks(struct tree *t)
{
	struct branch_lock *l = NULL;
	size_t n = 9;

	cr_assert_eq(lock_list(t, &l, &n), 0);
	cr_expect_eq(n, 0, "%zu branch locks left", n);
	lock_list_free(l, n);
}

/*
 * A non-empty folder moves among shared writers (the journaled rewrite,
 * its branches held by a lock), as does an exchange and a whiteout rename
 * of one; the other writer sees the result, nothing is left locked, and
 * fsck finds the drive clean.
 */
Test(shared, non_empty_folder_moves_among_shared_writers)
{
	struct tree *t = drive_of(b);
	struct tree_attr at;

	make_branch("/src");
	make_branch("/other");
	cr_expect_eq(tree_rename(t, "/src", "/dst", 0, NULL), 0);
	cr_expect_eq(tree_lookup(drive_of(a), "/dst/f", &at), 0);
	cr_expect_eq(tree_lookup(drive_of(a), "/src", &at), -ENOENT);
	cr_expect_eq(
	    tree_rename(t, "/dst", "/other", TREE_RENAME_EXCHANGE, NULL), 0);
	cr_expect_eq(tree_rename_whiteout(t, "/dst", "/wo", 0, 0, 0, NULL), 0);
	cr_expect_eq(tree_lookup(drive_of(a), "/wo/f", &at), 0);
	cr_expect_eq(tree_lookup(drive_of(a), "/other/f", &at), 0);
	expect_no_locks(drive_of(a));
	assert_fsck_clean(drive_of(a));
}

/*
 * An uncontended folder rename takes its branch lock in its batch 0 and
 * drops it in its final batch: a one-file folder's commits are a sole
 * writer's (batch 0, one copy, the final batch), none for LOCKS alone (5
 * when the lock took and dropped in commits of its own).
 */
Test(shared, an_uncontended_folder_rename_locks_in_its_own_batches)
{
	struct tree *t = drive_of(b);
	struct store_kv_counts before, after;
	struct tree_attr at;

	make_branch("/src");
	make_branch("/warm");
	/* b's first range of inode numbers is a commit of its own */
	cr_assert_eq(tree_rename(t, "/warm", "/warmed", 0, NULL), 0);
	store_kv_counts(b, &before);
	cr_assert_eq(tree_rename(t, "/src", "/dst", 0, NULL), 0);
	store_kv_counts(b, &after);
	cr_expect_eq(after.commits - before.commits, 3, "%llu commits",
		     (unsigned long long)(after.commits - before.commits));
	cr_expect_eq(tree_lookup(drive_of(a), "/dst/f", &at), 0);
	expect_no_locks(t);
	assert_fsck_clean(t);
}

static int make_inside(struct tree *t, const char *dir, const char *unused)
{
	char f[32];

	snprintf(f, sizeof(f), "%s/f", dir);
	return make_file(t, f, NULL);
}

/* A create inside an empty folder that the other writer renames: the
 * rename lands first and the create says ENOENT, or the create first and
 * the rename moves the folder with the file in it: the file is never left
 * under a name that is gone. */
Test(shared, rename_of_a_folder_filled_meanwhile)
{
	struct racer x = {.op = move, .fmt1 = "/d-%d", .fmt2 = "/e-%d"};
	struct racer y = {.op = make_inside, .fmt1 = "/d-%d"};
	struct tree *t = drive_of(b);
	struct tree_attr at;

	make_dirs("/d-%d");
	run_race(&x, &y);
	for (int i = 0; i < ROUNDS; i++) {
		char d[32], e[32];

		snprintf(d, sizeof(d), "/d-%d", i);
		snprintf(e, sizeof(e), "/e-%d/f", i);
		cr_expect_eq(x.rc[i], 0, "round %d: %d", i, x.rc[i]);
		cr_expect_eq(tree_lookup(t, d, &at), -ENOENT);
		if (y.rc[i] == 0)
			cr_expect_eq(tree_lookup(t, e, &at), 0, "round %d", i);
		else
			cr_expect_eq(y.rc[i], -ENOENT, "round %d", i);
	}
	expect_no_locks(t);
}

/* The writer of a slow folder rename (10 keys a batch), for a thread. */
struct mover {
	struct store *s;
	const char *src, *dst;
	int rc;
	volatile bool done;
};

static void *run_mover(void *arg)
{
	struct mover *m = arg;
	struct tree *t;

	m->rc = store_drive(m->s, "main", &t);
	if (m->rc == 0)
		m->rc = tree_rename(t, m->src, m->dst, 0, NULL);
	m->done = true;
	return NULL;
}

static void no_change(void *ctx, const struct tree_change *c)
{
	(void)ctx;
	(void)c;
}

/*
 * Files created by one writer inside a folder that another writer is
 * moving (a journaled rewrite of many batches): each create lands before
 * the move and moves with it, or waits for it and finds the folder gone
 * (ENOENT); none is lost and none is left under the old path. Without the
 * branch lock, a create after the copy passed its place is dropped with
 * the source. @watching: the creating writer watches the drive, as a
 * daemon does, so its checks take LOCKS as last read (branch_lock.c), read
 * before the move took its lock.
 */
static void creates_during_a_move(bool watching)
{
	struct store_options o = {.shared = true, .rename_batch = 10};
	struct mover m = {.src = "/big", .dst = "/moved"};
	struct tree *t = drive_of(b), *ta = drive_of(a);
	struct tree_watch *w = NULL;
	enum { MAX = 4000 };
	static int rc[MAX];
	struct tree_attr at;
	pthread_t th;
	int n = 0, made = 0;

	if (watching) {
		cr_assert_eq(tree_watch(t, no_change, NULL, &w), 0);
		/* LOCKS as read before the move: what the checks start from */
		cr_assert_eq(make_file(t, "/before", NULL), 0);
	}
	cr_assert_eq(store_open(&m.s, url, &o), 0);
	cr_assert_eq(
	    tree_mknode(ta, "/big", S_IFDIR | 0755, 0, 0, 0, NULL, NULL), 0);
	for (int i = 0; i < 300; i++) {
		char p[32];

		snprintf(p, sizeof(p), "/big/f%03d", i);
		cr_assert_eq(make_file(ta, p, NULL), 0);
	}
	cr_assert_eq(pthread_create(&th, NULL, run_mover, &m), 0);
	while (!m.done && n < MAX) {
		char p[32];

		snprintf(p, sizeof(p), "/big/n%04d", n);
		rc[n] = make_file(t, p, NULL);
		n++;
	}
	pthread_join(th, NULL);
	cr_assert_eq(m.rc, 0, "the rename: %s", strerror(-m.rc));
	for (int i = 0; i < n; i++) {
		char p[32];

		snprintf(p, sizeof(p), "/moved/n%04d", i);
		if (rc[i] == 0) {
			made++;
			cr_expect_eq(tree_lookup(t, p, &at), 0,
				     "created, then lost: %s", p);
		} else {
			cr_expect_eq(rc[i], -ENOENT, "%s: %d", p, rc[i]);
		}
	}
	cr_expect_eq(tree_lookup(t, "/big", &at), -ENOENT);
	cr_expect_eq(tree_lookup(t, "/moved/f299", &at), 0);
	cr_log_info("%d creates during the move, %d landed", n, made);
	expect_no_locks(t);
	assert_fsck_clean(t);
	tree_watch_stop(w);
	store_close(m.s);
}

Test(shared, creates_inside_a_moving_folder_are_never_lost)
{
	creates_during_a_move(false);
}

Test(shared, a_watching_writers_creates_inside_a_moving_folder_too)
{
	creates_during_a_move(true);
}

/* Makes files /x<i> on @t, a watching writer's drive, until it keeps a
 * copy of LOCKS (the watch's start may drop the first). */
static void keep_locks_seen(struct tree *t)
{
	for (int i = 0; i < 100 && !t->seen.valid; i++) {
		char p[32];

		snprintf(p, sizeof(p), "/x%d", i);
		cr_assert_eq(make_file(t, p, NULL), 0);
		usleep(10000);
	}
	cr_assert(t->seen.valid, "no copy of LOCKS kept");
}

struct maker {
	struct tree *t;
	const char *path;
	int rc;
	volatile bool done;
};

static void *make_one(void *arg)
{
	struct maker *m = arg;

	m->rc = make_file(m->t, m->path, NULL);
	m->done = true;
	return NULL;
}

/*
 * A watching writer whose copy of LOCKS is older than a lock another
 * writer holds (its watch has not told it yet: made here by putting the
 * old copy back) lets its create inside the held branch through the check,
 * but the commit is conditioned on the copy's version: it fails, and the
 * create reads LOCKS, waits for the lock, and lands once it is dropped.
 */
Test(shared, a_stale_copy_of_locks_fails_the_commit)
{
	struct tree *ta = drive_of(a), *tb = drive_of(b);
	struct maker m = {.t = tb, .path = "/lk/f"};
	struct tree_watch *w = NULL;
	struct locks_seen old;
	struct tree_attr at;
	pthread_t th;

	cr_assert_eq(
	    tree_mknode(ta, "/lk", S_IFDIR | 0755, 0, 0, 0, NULL, NULL), 0);
	cr_assert_eq(tree_watch(tb, no_change, NULL, &w), 0);
	keep_locks_seen(tb);
	pthread_mutex_lock(&tb->seen_lock);
	old = tb->seen;
	cr_assert(old.valid && old.len == 0, "no copy of an empty LOCKS");
	pthread_mutex_unlock(&tb->seen_lock);
	cr_assert_eq(lock_take(ta, 777, "/lk", "/lk2"), 0);
	for (int i = 0; i < 500 && tb->seen.valid; i++)
		usleep(10000); /* the watch drops the copy */
	pthread_mutex_lock(&tb->seen_lock);
	cr_assert(!tb->seen.valid, "the watch kept a copy of an old LOCKS");
	tb->seen = old; /* as if the watch had not told it yet */
	pthread_mutex_unlock(&tb->seen_lock);

	cr_assert_eq(pthread_create(&th, NULL, make_one, &m), 0);
	usleep(1000 * 1000);
	cr_expect(!m.done, "a create inside a held branch went through: %d",
		  m.rc);
	cr_assert_eq(lock_release(ta, 777), 0);
	pthread_join(th, NULL);
	cr_expect_eq(m.rc, 0, "%s", strerror(-m.rc));
	cr_expect_eq(tree_lookup(ta, "/lk/f", &at), 0);
	expect_no_locks(ta);
	tree_watch_stop(w);
}

/* The reads of @n creates in /w on writer b. */
static uint64_t gets_of_creates(int n, const char *tag)
{
	struct store_kv_counts c0, c1;

	store_kv_counts(b, &c0);
	for (int i = 0; i < n; i++) {
		char p[32];

		snprintf(p, sizeof(p), "/w/%s%d", tag, i);
		cr_assert_eq(make_file(drive_of(b), p, NULL), 0);
	}
	store_kv_counts(b, &c1);
	return c1.gets - c0.gets;
}

/* A writer that watches the drive checks the branch locks of its changes
 * against LOCKS as last read: a create reads LOCKS only after another
 * writer changed it, not each time. */
Test(shared, a_watching_writer_checks_locks_without_reading_them)
{
	struct tree_watch *w = NULL;
	uint64_t plain, watched;

	cr_assert_eq(
	    tree_mknode(drive_of(a), "/w", S_IFDIR | 0755, 0, 0, 0, NULL, NULL),
	    0);
	plain = gets_of_creates(20, "p");
	cr_assert_eq(tree_watch(drive_of(b), no_change, NULL, &w), 0);
	keep_locks_seen(drive_of(b));
	watched = gets_of_creates(20, "w");
	cr_expect_leq(watched + 20, plain,
		      "20 creates read %llu keys watching, %llu not",
		      (unsigned long long)watched, (unsigned long long)plain);
	/* another writer's rename: its lock comes and goes; the checks see
	 * it (a create in its branch waits, tested above) and read again */
	make_branch("/m1");
	cr_assert_eq(tree_rename(drive_of(a), "/m1", "/m2", 0, NULL), 0);
	cr_assert_eq(make_file(drive_of(b), "/m2/g", NULL), 0);
	expect_no_locks(drive_of(b));
	tree_watch_stop(w);
}

/* Creates the file m->dst on m->s, for a thread. */
static void *make_late(void *arg)
{
	struct mover *m = arg;
	struct tree *t;

	m->rc = store_drive(m->s, "main", &t);
	if (m->rc == 0)
		m->rc = make_file(t, m->dst, NULL);
	m->done = true;
	return NULL;
}

/*
 * A shared writer killed in the middle of a folder rename: its branches
 * stay held (a create in the destination waits), another writer's open is
 * not refused, and once the killed writer's lease expired the other takes
 * the rename over and finishes it (tree_journal_takeover, which the daemon
 * runs every few seconds); the waiting create then lands in the moved
 * folder. The test's own store, with a 2 s lease.
 */
Test(shared, a_stopped_writers_rename_is_finished_by_another)
{
	struct store_options sh = {
	    .create = true, .shared = true, .rename_batch = 10};
	struct mover late = {.dst = "/w2/late"};
	char u[PATH_MAX];
	struct store *s = NULL, *s2 = NULL;
	struct tree *t;
	struct tree_attr at;
	size_t done = 9;
	pthread_t th;

	store_url(u, sizeof(u), "take", short_ttl(2));
	cr_assert_eq(store_open(&s, u, &sh), 0);
	cr_assert_eq(store_drive_create(s, "main", getuid(), getgid()), 0);
	cr_assert_eq(store_drive(s, "main", &t), 0);
	make_w(t);
	rename_killed(u, &sh);
	cr_expect_eq(store_open(&s2, u, &sh), 0, "a shared open meanwhile");
	store_close(s2);
	late.s = s;
	cr_assert_eq(pthread_create(&th, NULL, make_late, &late), 0);
	usleep(300 * 1000);
	cr_expect(!late.done, "a create in the held branch waits");
	cr_assert_eq(tree_journal_takeover(t, &done), 0);
	cr_expect_eq(done, 0, "the killed writer's lease still runs");
	sleep(short_ttl(2) + 1);
	cr_assert_eq(tree_journal_takeover(t, &done), 0);
	cr_expect_eq(done, 1, "taken over");
	pthread_join(th, NULL);
	cr_expect_eq(late.rc, 0, "the waiting create: %s", strerror(-late.rc));
	cr_expect_eq(tree_lookup(t, "/w", &at), -ENOENT);
	cr_expect_eq(tree_lookup(t, "/w2/f39", &at), 0, "the rename finished");
	cr_expect_eq(tree_lookup(t, "/w2/late", &at), 0);
	expect_no_locks(t);
	assert_fsck_clean(t);
	store_close(s);
}

/* Inode of @path on @t, and whether its ORPHAN mark and HOLD# are there. */
static uint64_t ino_of(struct tree *t, const char *path)
{
	struct tree_attr at;

	cr_assert_eq(tree_lookup(t, path, &at), 0, "%s", path);
	return at.ino;
}

static bool has_key(struct tree *t,
		    void (*key)(struct sbuf *, const char *, uint64_t),
		    uint64_t ino)
{
	struct sbuf k = {0};
	char *v = NULL;
	size_t len;
	int rc;

	key(&k, t->name, ino);
	rc = kv_get(t->store->kv, k.buf, k.len, &v, &len);
	free(v);
	sbuf_release(&k);
	cr_assert(rc == 0 || rc == -ENOENT, "kv_get: %d", rc);
	return rc == 0;
}

/* Whether inode @ino is an orphan: its record is there, by number. */
static bool kept(struct tree *t, uint64_t ino)
{
	struct node n = {0};
	int rc = tree_get_inode(t, ino, &n);

	node_release(&n);
	return rc == 0 && has_key(t, key_orphan, ino);
}

/* Whether inode @ino is gone without a trace: no record, mark or hold. */
static bool freed(struct tree *t, uint64_t ino)
{
	struct node n = {0};
	int rc = tree_get_inode(t, ino, &n);

	node_release(&n);
	return rc == -ENOENT && !has_key(t, key_orphan, ino) &&
	       !has_key(t, key_hold, ino);
}

static void expect_bytes(struct tree *t, uint64_t ino, const char *want)
{
	char buf[64] = "";
	size_t n = 0;

	cr_assert_eq(tree_read(t, NULL, ino, 0, sizeof(buf), buf, &n), 0);
	cr_expect(n == strlen(want) && !memcmp(buf, want, n),
		  "read %zu bytes: %.*s", n, (int)n, buf);
}

/*
 * A file open on one writer (its hold, as the daemon takes at the first
 * open) whose last name the other writer removes stays readable and
 * writable there, as on one machine (POSIX), and is freed, content and
 * all, when that writer closes it. Without holds the remover freed it at
 * once and the reader's bytes were gone.
 */
Test(shared, a_file_open_on_one_writer_outlives_its_unlink_by_another)
{
	struct tree *ta = drive_of(a), *tb = drive_of(b);
	uint64_t ino, orphan = 9;

	cr_assert_eq(make_file(ta, "/f", NULL), 0);
	cr_assert_eq(tree_write(ta, "/f", 0, 0, "bytes", 5, false, NULL), 0);
	ino = ino_of(tb, "/f");
	cr_assert_eq(tree_hold(tb, ino), 0);
	cr_assert_eq(tree_hold(tb, ino), 0, "a second hold is the same");

	cr_assert_eq(tree_unlink(ta, "/f", 0, &orphan), 0);
	cr_expect_eq(orphan, 0, "kept for b, not a's to reclaim");
	cr_expect_eq(tree_lookup(ta, "/f", &(struct tree_attr){0}), -ENOENT);
	expect_bytes(tb, ino, "bytes");
	cr_assert_eq(tree_write(tb, NULL, ino, 5, "+more", 5, false, NULL), 0);
	expect_bytes(tb, ino, "bytes+more");
	cr_expect(kept(ta, ino));

	cr_assert_eq(tree_unhold(tb, ino), 0);
	cr_expect(freed(ta, ino), "the last close frees it");
}

/*
 * A file one writer makes for an open (tree_mkfile_held, the daemon's
 * CREATE) is held from the commit that makes it, with no commit of its
 * own: the other writer's unlink right after keeps it, and the maker's
 * close frees it. A sole writer's holds nothing.
 */
Test(shared, a_file_made_held_is_held_from_its_first_commit)
{
	struct tree *ta = drive_of(a), *tb = drive_of(b);
	struct store_kv_counts before, after;
	struct tree_attr at;
	uint64_t orphan = 9;

	/* b's first range of inode numbers is a commit of its own */
	cr_assert_eq(make_file(tb, "/first", NULL), 0);
	store_kv_counts(b, &before);
	cr_assert_eq(tree_mkfile_held(tb, "/f", 0644, 022, 0, 0, &at), 0);
	store_kv_counts(b, &after);
	cr_expect_eq(after.commits - before.commits, 1, "%llu commits",
		     (unsigned long long)(after.commits - before.commits));
	cr_expect(has_key(ta, key_hold, at.ino), "held");
	cr_assert_eq(tree_write(tb, "/f", at.ino, 0, "bytes", 5, false, NULL),
		     0);

	cr_assert_eq(tree_unlink(ta, "/f", 0, &orphan), 0);
	cr_expect_eq(orphan, 0, "kept for b, not a's to reclaim");
	expect_bytes(tb, at.ino, "bytes");
	cr_expect(kept(ta, at.ino));
	cr_assert_eq(tree_unhold(tb, at.ino), 0);
	cr_expect(freed(ta, at.ino), "the maker's close frees it");
}

/* A writer's unlink of a file it has closed but whose hold its last close
 * has not dropped yet (the daemon drops holds a while later, off the
 * close's path) frees the file and drops the hold in the same commit:
 * nothing is left to drop, and the drop after it commits nothing. */
Test(shared, an_unlink_drops_the_removers_own_closed_hold)
{
	struct tree *ta = drive_of(a), *tb = drive_of(b);
	struct store_kv_counts before, after;
	struct tree_attr at;
	uint64_t orphan = 9;

	cr_assert_eq(tree_mkfile_held(tb, "/f", 0644, 022, 0, 0, &at), 0);
	cr_assert(has_key(ta, key_hold, at.ino), "held");
	cr_assert_eq(tree_unlink(tb, "/f", 0, &orphan), 0);
	cr_expect_eq(orphan, 0, "freed at once, not an orphan");
	cr_expect(freed(ta, at.ino));
	cr_expect(!has_key(ta, key_hold, at.ino), "its hold outlived it");
	store_kv_counts(b, &before);
	cr_expect_eq(tree_unhold(tb, at.ino), 0);
	store_kv_counts(b, &after);
	cr_expect_eq(after.commits, before.commits, "the drop committed");
}

/* The daemon's reclaim of an orphan it made, closed and forgotten, whose
 * hold its last close has not dropped yet: one commit frees the orphan and
 * drops the hold (not the hold kept it for this writer, for good). */
Test(shared, a_reclaim_drops_the_writers_own_closed_hold)
{
	struct tree *ta = drive_of(a);
	struct store_kv_counts before, after;
	uint64_t ino, orphan = 0;
	size_t n = 0;

	cr_assert_eq(make_file(ta, "/f", NULL), 0);
	ino = ino_of(ta, "/f");
	cr_assert_eq(tree_hold(ta, ino), 0);
	cr_assert_eq(tree_unlink(ta, "/f", TREE_KEEP_ORPHAN, &orphan), 0);
	cr_assert_eq(orphan, ino);
	store_kv_counts(a, &before);
	cr_expect_eq(tree_reclaim_many(ta, &ino, 1, &n), 0);
	store_kv_counts(a, &after);
	cr_expect_eq(n, 1, "kept for its own closed hold");
	cr_expect(freed(ta, ino));
	cr_expect(!has_key(ta, key_hold, ino), "its hold outlived it");
	cr_expect_eq(after.commits - before.commits, 1);
}

/* The holds of many files closed here go in one commit (as many as one
 * takes: 20, or fewer on an engine of smaller batches, DynamoDB's 16), and
 * only this writer's: one the other writer holds too stays held by it. */
Test(shared, closed_holds_drop_many_to_a_commit)
{
	struct tree *ta = drive_of(a), *tb = drive_of(b);
	struct store_kv_counts before, after;
	size_t max = tree_batch_max_ops(ta) / 3; /* tree_unhold_many's */
	const int N = max < 20 ? (int)max : 20;
	uint64_t inos[20];

	for (int i = 0; i < N; i++) {
		char p[32];
		struct tree_attr at;

		snprintf(p, sizeof(p), "/h%d", i);
		cr_assert_eq(tree_mkfile_held(ta, p, 0644, 022, 0, 0, &at), 0);
		inos[i] = at.ino;
	}
	cr_assert_eq(tree_hold(tb, inos[0]), 0);
	store_kv_counts(a, &before);
	cr_expect_eq(tree_unhold_many(ta, inos, N), 0);
	store_kv_counts(a, &after);
	cr_expect_eq(after.commits - before.commits, 1, "%llu commits",
		     (unsigned long long)(after.commits - before.commits));
	for (int i = 1; i < N; i++)
		cr_expect(!has_key(ta, key_hold, inos[i]), "h%d still held", i);
	cr_expect(has_key(ta, key_hold, inos[0]), "b's hold went too");
	cr_assert_eq(tree_unlink(ta, "/h0", 0, NULL), 0);
	cr_expect(kept(ta, inos[0]), "b has it open");
	cr_assert_eq(tree_unhold(tb, inos[0]), 0);
	cr_expect(freed(ta, inos[0]));
}

/* The holder's own sweep of stopped writers' orphans (tree_reclaim_dead,
 * every 5 s in a shared daemon) meets the orphan it holds open, marked
 * for its holders: not its to free while it holds it (it freed it: an
 * editor's save on one machine made the old version's reads on the other
 * answer ESTALE, etcd_shared in 1 of 3 runs). */
Test(shared, the_holders_own_sweep_leaves_the_orphan_it_holds)
{
	struct tree *ta = drive_of(a), *tb = drive_of(b);
	uint64_t ino, orphan = 9;
	size_t n = 9;

	cr_assert_eq(make_file(ta, "/f", NULL), 0);
	cr_assert_eq(tree_write(ta, "/f", 0, 0, "bytes", 5, false, NULL), 0);
	ino = ino_of(tb, "/f");
	cr_assert_eq(tree_hold(tb, ino), 0);
	cr_assert_eq(tree_unlink(ta, "/f", 0, &orphan), 0);
	cr_expect_eq(orphan, 0, "kept for b");
	cr_expect_eq(tree_reclaim_dead(tb, &n), 0);
	cr_expect_eq(n, 0, "b's sweep frees nothing b holds");
	cr_expect_eq(tree_reclaim_dead(ta, &n), 0);
	cr_expect_eq(n, 0, "nor a's");
	expect_bytes(tb, ino, "bytes");
	cr_expect(kept(ta, ino));
	cr_assert_eq(tree_unhold(tb, ino), 0);
	cr_expect(freed(ta, ino), "b's last close frees it");
}

/* Both writers have the file open and one of them removes it: its own
 * reclaim (at its last close and forget) hands it over to the other
 * (-EBUSY, kept), whose close frees it; and a hold after the removal
 * committed finds no inode. */
Test(shared, the_removers_reclaim_leaves_it_to_the_other_holder)
{
	struct tree *ta = drive_of(a), *tb = drive_of(b);
	uint64_t ino, orphan = 0;
	size_t n = 9;

	cr_assert_eq(make_file(ta, "/f", NULL), 0);
	cr_assert_eq(tree_write(ta, "/f", 0, 0, "bytes", 5, false, NULL), 0);
	ino = ino_of(ta, "/f");
	cr_assert_eq(tree_hold(ta, ino), 0);
	cr_assert_eq(tree_hold(tb, ino), 0);
	cr_assert_eq(tree_unlink(ta, "/f", TREE_KEEP_ORPHAN, &orphan), 0);
	cr_assert_eq(orphan, ino, "a uses it: a's orphan");
	cr_assert_eq(tree_unhold(ta, ino), 0);
	/* the daemon's reclaim, at a's last FORGET */
	cr_expect_eq(tree_reclaim_many(ta, &ino, 1, &n), 0);
	cr_expect_eq(n, 0, "b still has it open");
	cr_expect_eq(tree_reclaim(ta, ino), -EBUSY);
	cr_expect_eq(tree_reclaim_dead(ta, NULL), 0);
	expect_bytes(tb, ino, "bytes");
	cr_assert_eq(tree_unhold(tb, ino), 0);
	cr_expect(freed(ta, ino));

	/* removed, then opened: the open finds nothing */
	cr_assert_eq(make_file(ta, "/g", NULL), 0);
	ino = ino_of(tb, "/g");
	cr_assert_eq(tree_unlink(ta, "/g", 0, NULL), 0);
	cr_expect_eq(tree_hold(tb, ino), -ENOENT);
	cr_expect(freed(ta, ino));
}

static uint64_t held_ino[ROUNDS];

/* The daemon's open of @path: its inode, then the hold. */
static int open_path(struct tree *t, const char *path, const char *unused)
{
	struct tree_attr at;
	int rc = tree_lookup(t, path, &at);

	if (rc)
		return rc;
	held_ino[atoi(path + 3)] = at.ino;
	return tree_hold(t, at.ino);
}

/* An open on one writer racing the unlink on the other: either the open
 * came first and the file stays until its close, or the unlink did and
 * the open fails (ENOENT); never an open of a freed file. */
Test(shared, an_open_racing_an_unlink_holds_or_fails)
{
	struct racer x = {.op = open_path, .fmt1 = "/f-%d", .stagger_us = 300};
	struct racer y = {.op = remove_file, .fmt1 = "/f-%d"};
	struct tree *ta;
	int first = 0;

	make_files("/f-%d");
	run_race(&x, &y);
	ta = x.t;
	for (int i = 0; i < ROUNDS; i++) {
		cr_assert_eq(y.rc[i], 0, "round %d: unlink %d", i, y.rc[i]);
		if (x.rc[i] == 0) {
			first++;
			cr_expect(kept(ta, held_ino[i]), "round %d", i);
			cr_assert_eq(tree_unhold(ta, held_ino[i]), 0);
		} else {
			cr_expect(x.rc[i] == -ENOENT, "round %d: open %d", i,
				  x.rc[i]);
		}
		cr_expect(freed(ta, held_ino[i]) || !held_ino[i], "round %d",
			  i);
	}
	cr_log_info("opens that came first: %d of %d", first, ROUNDS);
}

static int hold_of(struct tree *t, uint64_t ino, uint64_t *unused)
{
	return tree_hold(t, ino);
}

/*
 * A writer that stops (killed, cut off) with a file open, removed by the
 * other meanwhile: its hold keeps the file while its lease runs; once it
 * expired, the other's periodic reclaim drops the hold and frees the file.
 */
Test(shared, a_stopped_writers_hold_is_dropped_by_another)
{
	char u[PATH_MAX];
	struct store *s = NULL;
	struct tree *t = short_lease_drive("hold", u, sizeof(u), &s);
	uint64_t ino;
	size_t n = 9;

	cr_assert_eq(make_file(t, "/f", NULL), 0);
	ino = ino_of(t, "/f");
	stopped_writer(u, hold_of, ino);
	cr_assert_eq(tree_unlink(t, "/f", 0, NULL), 0);
	cr_assert_eq(tree_reclaim_dead(t, &n), 0);
	cr_expect_eq(n, 0, "the stopped writer's lease still runs");
	cr_expect(kept(t, ino));
	sleep(short_ttl(4) + 2);
	cr_assert_eq(tree_reclaim_dead(t, &n), 0);
	cr_expect_eq(n, 1);
	cr_expect(freed(t, ino), "its hold dropped, the file freed");
	store_close(s);
}

/* pathfsctl rm -r on one writer of a branch in which the other has a file
 * open: that file stays for the other (an orphan it reads on), everything
 * else goes, and fsck is clean. Before, rm -r's batches freed it. */
Test(shared, rm_r_keeps_a_file_the_other_writer_has_open)
{
	struct tree *ta = drive_of(a), *tb = drive_of(b);
	struct tree_op_result r = {0};
	uint64_t ino;

	make_branch("/br");
	cr_assert_eq(make_file(ta, "/br/open", NULL), 0);
	cr_assert_eq(tree_write(ta, "/br/open", 0, 0, "bytes", 5, false, NULL),
		     0);
	ino = ino_of(tb, "/br/open");
	cr_assert_eq(tree_hold(tb, ino), 0);
	cr_assert_eq(tree_rm_r(ta, "/br", 0, NULL, 0, &r), 0);
	cr_expect_eq(r.failed, 0);
	cr_expect_eq(tree_lookup(tb, "/br", &(struct tree_attr){0}), -ENOENT);
	tree_op_result_release(&r);
	cr_expect(kept(ta, ino));
	expect_bytes(tb, ino, "bytes");
	cr_assert_eq(tree_unhold(tb, ino), 0);
	cr_expect(freed(ta, ino));
	assert_fsck_clean(ta);
}

static void *rm_r_branch(void *arg)
{
	struct tree_op_result *r = arg;

	cr_assert_eq(tree_rm_r(drive_of(a), "/br", 0, NULL, 0, r), 0);
	return NULL;
}

/* rm -r on one writer while the other creates files in the branch: each
 * create either lands or fails ENOENT (its folder gone); a folder that
 * gained a file stays with it (rm says so: ENOTEMPTY); no file is ever
 * left under a removed folder, and fsck is clean. */
Test(shared, rm_r_racing_creates_inside_leaves_no_file_cut_off)
{
	struct tree *ta = drive_of(a), *tb = drive_of(b);
	struct tree_op_result r = {0};
	int made[40], kept_n = 0;
	pthread_t th;

	make_branch("/br");
	cr_assert_eq(
	    tree_mknode(ta, "/br/sub", S_IFDIR | 0755, 0, 0, 0, NULL, NULL), 0);
	for (int i = 0; i < 60; i++) {
		char p[64];

		snprintf(p, sizeof(p), "/br/sub/old-%d", i);
		cr_assert_eq(make_file(ta, p, NULL), 0);
	}
	cr_assert_eq(pthread_create(&th, NULL, rm_r_branch, &r), 0);
	for (int i = 0; i < 40; i++) {
		char p[64];

		snprintf(p, sizeof(p), "/br/sub/new-%d", i);
		made[i] = make_file(tb, p, NULL);
		cr_expect(made[i] == 0 || made[i] == -ENOENT, "%s: %d", p,
			  made[i]);
	}
	pthread_join(th, NULL);
	for (int i = 0; i < 40; i++) {
		char p[64];
		struct tree_attr at;

		snprintf(p, sizeof(p), "/br/sub/new-%d", i);
		if (tree_lookup(ta, p, &at) == 0) {
			kept_n++;
			cr_expect_eq(reachable(ta, "/br/sub"), 0, "%s cut off",
				     p);
			cr_expect_eq(made[i], 0);
		}
	}
	cr_log_info("creates: %d kept of 40; rm -r: %llu removed, %llu failed",
		    kept_n, (unsigned long long)r.processed,
		    (unsigned long long)r.failed);
	cr_expect(kept_n == 0 || r.failed > 0, "a kept file's folder is "
					       "reported");
	tree_op_result_release(&r);
	assert_fsck_clean(ta);
}

static void *cp_r_branch(void *arg)
{
	struct tree_op_result *r = arg;
	struct tree *t = drive_of(a);

	cr_assert_eq(tree_cp_r(t, "/br", t, "/cp", 0, NULL, r), 0);
	return NULL;
}

/* pathfsctl cp -r on one writer while the other creates beside the copy
 * and inside it: the copy is whole, the creates beside it all land (the
 * folder's node, which the copy's root rewrites, loses none of them), those
 * inside land or fail ENOENT (before the copy began), and fsck is clean.
 * Before, the copy's batches were not conditioned (fsck: the root's link
 * count short of its entries). */
Test(shared, cp_r_racing_creates_beside_and_inside)
{
	struct tree *ta = drive_of(a), *tb = drive_of(b);
	struct tree_op_result r = {0};
	int side = 0, inside = 0;
	pthread_t th;

	make_branch("/br");
	for (int i = 0; i < 60; i++) {
		char p[64];

		snprintf(p, sizeof(p), "/br/f-%d", i);
		cr_assert_eq(make_file(ta, p, NULL), 0);
	}
	cr_assert_eq(pthread_create(&th, NULL, cp_r_branch, &r), 0);
	for (int i = 0; i < 30; i++) {
		char p[64];
		int rc;

		snprintf(p, sizeof(p), "/side-%d", i);
		cr_expect_eq(make_file(tb, p, NULL), 0, "%s", p);
		snprintf(p, sizeof(p), "/cp/b-%d", i);
		rc = make_file(tb, p, NULL);
		cr_expect(rc == 0 || rc == -ENOENT, "%s: %d", p, rc);
		inside += rc == 0;
	}
	pthread_join(th, NULL);
	cr_expect_eq(r.failed, 0);
	cr_expect_eq(r.processed, 62, "the copy: /br, f and 60 files");
	tree_op_result_release(&r);
	for (int i = 0; i < 30; i++) {
		char p[64];

		snprintf(p, sizeof(p), "/side-%d", i);
		side += tree_lookup(ta, p, &(struct tree_attr){0}) == 0;
	}
	cr_expect_eq(side, 30);
	cr_expect_eq(tree_lookup(ta, "/cp/f-59", &(struct tree_attr){0}), 0);
	cr_log_info("creates inside the copy: %d of 30 landed", inside);
	expect_no_locks(ta);
	assert_fsck_clean(ta);
}

/* ---- a writer alone (store/lone.c) ------------------------------------- */

static volatile bool share_asked;

static int paths_heard; /* node changes a lone writer's watch handed out */

static void on_share(void *ctx, const struct tree_change *c)
{
	(void)ctx;
	if (c && c->share)
		share_asked = true;
	if (c && c->path)
		__atomic_add_fetch(&paths_heard, 1, __ATOMIC_SEQ_CST);
}

/* Opens @u as a shared writer whose watch stands and which went alone:
 * its drive in *t, its watch in *w. */
static struct store *lone_writer(const char *u, struct tree **t,
				 struct tree_watch **w)
{
	struct store_options sh = {.create = true, .shared = true};
	struct store *s = NULL;
	int rc = -EAGAIN;

	cr_assert_eq(store_open(&s, u, &sh), 0);
	if (store_drive(s, "main", t) == -ENOENT)
		cr_assert_eq(store_drive_create(s, "main", getuid(), getgid()),
			     0);
	cr_assert_eq(store_drive(s, "main", t), 0);
	cr_assert_eq(tree_lone_try(*t), -EAGAIN, "no watch stands yet");
	cr_assert_eq(tree_watch(*t, on_share, NULL, w), 0);
	for (int i = 0; i < 500 && rc == -EAGAIN; i++) {
		rc = tree_lone_try(*t);
		if (rc == -EAGAIN)
			usleep(10000);
	}
	cr_assert_eq(rc, 0, "tree_lone_try: %s", strerror(-rc));
	cr_assert((*t)->lone, "the only writer goes alone");
	cr_assert_eq(tree_share(*t), 0); /* as the daemon: its watch narrows */
	return s;
}

/* Whether inode @ino has a HOLD# key, read through store @s. */
static bool has_hold(struct store *s, uint64_t ino)
{
	struct tree *t = drive_of(s);
	struct sbuf k = {0};
	char *v = NULL;
	size_t len;
	int rc;

	key_hold(&k, t->name, ino);
	rc = kv_get(s->kv, k.buf, k.len, &v, &len);
	free(v);
	sbuf_release(&k);
	cr_assert(rc == 0 || rc == -ENOENT, "%s", strerror(-rc));
	return rc == 0;
}

struct joiner {
	const char *u;
	struct store *s;
	int rc;
	volatile bool done;
};

/* Opens j->u as one more shared writer and loads its drive (the join). */
static void *join(void *arg)
{
	struct store_options sh = {.shared = true};
	struct joiner *j = arg;
	struct tree *t;

	j->rc = store_open(&j->s, j->u, &sh);
	if (j->rc == 0)
		j->rc = store_drive(j->s, "main", &t);
	j->done = true;
	return NULL;
}

/*
 * The only writer takes no holds (an open is no commit, HOLD# stays
 * absent); a writer that joins waits until it published them: asked
 * through its watch, it holds what it has open, then the joiner goes on,
 * and a removal there keeps the file for the lone writer's open.
 */
Test(shared, a_lone_writer_publishes_its_opens_before_another_joins)
{
	struct store_kv_counts c0, c1;
	struct joiner j = {0};
	struct tree_watch *w = NULL;
	struct tree *t, *jt;
	struct tree_attr at;
	struct store *x;
	char u[PATH_MAX];
	uint64_t ino = 0;
	pthread_t th;

	store_url(u, sizeof(u), "lone", 60);
	x = lone_writer(u, &t, &w);
	cr_assert_eq(make_file(t, "/f", NULL), 0);
	cr_assert_eq(tree_lookup(t, "/f", &at), 0);
	ino = at.ino;
	store_kv_counts(x, &c0);
	cr_assert_eq(tree_hold(t, ino), 0);
	store_kv_counts(x, &c1);
	cr_expect_eq(c1.commits, c0.commits, "an open alone commits nothing");
	cr_expect_eq(c1.gets, c0.gets, "... and reads nothing");
	cr_expect_not(has_hold(x, ino), "no HOLD# while alone");

	share_asked = false;
	j.u = u;
	cr_assert_eq(pthread_create(&th, NULL, join, &j), 0);
	for (int i = 0; i < 1000 && !share_asked; i++)
		usleep(10000);
	cr_assert(share_asked, "the joiner asked through the watch");
	usleep(300 * 1000);
	cr_expect_not(j.done, "the joiner waits for the publish");
	cr_assert_eq(tree_share(t), 0);
	cr_expect_not(t->lone, "alone no more");
	pthread_join(th, NULL);
	cr_assert_eq(j.rc, 0, "join: %s", strerror(-j.rc));
	cr_expect(has_hold(x, ino), "the open file is held once published");
	cr_assert_eq(store_drive(j.s, "main", &jt), 0);
	cr_assert_eq(tree_unlink(jt, "/f", 0, NULL), 0);
	cr_expect_eq(tree_getattr(t, NULL, ino, &at), 0,
		     "removed by the joiner, the file stays for the open");
	cr_assert_eq(tree_unhold(t, ino), 0);
	cr_expect_eq(tree_getattr(t, NULL, ino, &at), -ENOENT,
		     "... and goes at its last close");
	cr_expect_eq(tree_lone_try(t), 0);
	cr_expect_not(t->lone, "two writers: neither goes alone");
	tree_watch_stop(w);
	store_close(j.s);
	store_close(x);
}

/*
 * A lone writer's watch reads none of its own changes (it covers LOCKS and
 * LONE only: nobody else changes the drive; on an engine whose watches
 * start at a revision), and hears a joiner's once it published its holds
 * (its watch covers the drive again from the ask on).
 */
Test(shared, a_lone_writers_watch_hears_only_a_joiners_changes)
{
	struct joiner j = {0};
	struct tree_watch *w = NULL;
	struct tree *t, *jt;
	struct store *x;
	char u[PATH_MAX], p[32];
	const char *q = strchr(url, '?');
	pthread_t th;

	snprintf(u, sizeof(u), "%.*s-narrow%s", (int)(q - url), url, q);
	x = lone_writer(u, &t, &w);
	__atomic_store_n(&paths_heard, 0, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 20; i++) {
		snprintf(p, sizeof(p), "/mine%d", i);
		cr_assert_eq(make_file(t, p, NULL), 0);
	}
	usleep(500 * 1000);
	if (kv_watch_revs(x->kv)) /* else its watch cannot narrow (lone_i.h) */
		cr_expect_eq(__atomic_load_n(&paths_heard, __ATOMIC_SEQ_CST), 0,
			     "alone, its watch reads back its own changes");

	share_asked = false;
	j.u = u;
	cr_assert_eq(pthread_create(&th, NULL, join, &j), 0);
	for (int i = 0; i < 1000 && !share_asked; i++)
		usleep(10000);
	cr_assert(share_asked, "the joiner asked through the narrowed watch");
	cr_assert_eq(tree_share(t), 0);
	pthread_join(th, NULL);
	cr_assert_eq(j.rc, 0, "join: %s", strerror(-j.rc));
	cr_assert_eq(store_drive(j.s, "main", &jt), 0);
	__atomic_store_n(&paths_heard, 0, __ATOMIC_SEQ_CST);
	cr_assert_eq(make_file(jt, "/theirs", NULL), 0);
	for (int i = 0;
	     i < 500 && !__atomic_load_n(&paths_heard, __ATOMIC_SEQ_CST); i++)
		usleep(10000);
	cr_expect_gt(__atomic_load_n(&paths_heard, __ATOMIC_SEQ_CST), 0,
		     "the joiner's create is heard");
	tree_watch_stop(w);
	store_close(j.s);
	store_close(x);
}

/* A writer that joins while the lone one is gone (its lease ended) does
 * not wait for it; a live one that never publishes fails the join. */
Test(shared, a_join_waits_for_a_lone_writer_only_while_it_lives)
{
	struct joiner j = {0};
	struct tree_watch *w = NULL;
	struct tree *t;
	struct store *x;
	char u[PATH_MAX];
	struct timespec t0, t1;
	pthread_t th;

	store_url(u, sizeof(u), "gone", short_ttl(2));
	x = lone_writer(u, &t, &w);
	tree_watch_stop(w); /* it hears no ask: it never publishes */
	j.u = u;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(pthread_create(&th, NULL, join, &j), 0);
	pthread_join(th, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_expect_eq(j.rc, -EBUSY,
		     "a live lone writer that never publishes: "
		     "%s",
		     strerror(-j.rc));
	cr_expect_geq(t1.tv_sec - t0.tv_sec, 29, "after the join's wait");
	store_close(j.s);
	j = (struct joiner){.u = u};
	store_close(x); /* its writer key goes: as a lease that ended */
	cr_assert_eq(pthread_create(&th, NULL, join, &j), 0);
	pthread_join(th, NULL);
	cr_expect_eq(j.rc, 0, "the lone writer gone: %s", strerror(-j.rc));
	store_close(j.s);
}

#define LISTED 150 /* more than DynamoDB's first Query page (100) */

/* Lists "/d" on @t with tree_dir_open_checked(): marks in @seen[i] each
 * "f%03d" name listed, and in *zzz "zzz"; after @mid names, runs @between
 * (NULL: nothing). Returns tree_dir_check()'s answer. */
static int list_checked(struct tree *t, bool *seen, bool *zzz, int mid,
			void (*between)(void))
{
	struct tree_dir *d = NULL;
	struct tree_attr at;
	const char *n;
	size_t len;
	int rc, i = 0, k;

	memset(seen, 0, LISTED * sizeof(*seen));
	*zzz = false;
	cr_assert_eq(tree_dir_open_checked(&d, t, "/d", NULL), 0);
	while ((rc = tree_dir_next(d, &n, &len, &at)) == 1) {
		if (!strcmp(n, "zzz"))
			*zzz = true;
		else if (sscanf(n, "f%03d", &k) == 1 && k >= 0 && k < LISTED)
			seen[k] = true;
		if (++i == mid && between)
			between();
	}
	cr_assert_eq(rc, 0);
	rc = tree_dir_check(d);
	tree_dir_free(d);
	return rc;
}

static void rename_f000(void)
{
	cr_assert_eq(tree_rename(drive_of(a), "/d/f000", "/d/zzz", 0, NULL), 0);
}

/*
 * A readdir page is of one moment (tree_dir_open_checked): writer b lists
 * a folder of LISTED files in pages (DynamoDB's first Query page holds
 * 100, etcd's listing reads one revision) while writer a renames its first
 * file to a name listed last. Either the check says the listing is stale
 * (DynamoDB: the rename rewrote the folder's record), or the listing shows
 * the file once; listed again, it shows the file once, by its new name.
 * Before the check, DynamoDB listed it twice.
 */
Test(shared, a_listing_page_is_of_one_moment)
{
	struct tree *t = drive_of(b);
	bool seen[LISTED], zzz;
	int rc;

	cr_assert_eq(
	    tree_mknode(drive_of(a), "/d", S_IFDIR | 0755, 0, 0, 0, NULL, NULL),
	    0);
	for (int i = 0; i < LISTED; i++) {
		char p[16];

		snprintf(p, sizeof(p), "/d/f%03d", i);
		cr_assert_eq(make_file(drive_of(a), p, NULL), 0, "%s", p);
	}
	rc = list_checked(t, seen, &zzz, 50, rename_f000);
	if (on_dynamodb())
		cr_expect_eq(rc, -ESTALE, "%s", strerror(-rc));
	else
		cr_expect_eq(rc, 0, "%s", strerror(-rc));
	if (rc == 0) {
		cr_expect(seen[0] != zzz, "f000 %d, zzz %d", seen[0], zzz);
		for (int i = 1; i < LISTED; i++)
			cr_expect(seen[i], "f%03d not listed", i);
	}
	cr_assert_eq(list_checked(t, seen, &zzz, 0, NULL), 0);
	cr_expect(!seen[0] && zzz, "f000 %d, zzz %d", seen[0], zzz);
	for (int i = 1; i < LISTED; i++)
		cr_expect(seen[i], "f%03d not listed", i);
}
