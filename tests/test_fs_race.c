/*
 * test_fs_race.c - a model check of "one place per request" (fs/fs_i.h):
 * every request on a node id the kernel holds, run against the changes of
 * place a user makes of that node (a move to another folder and back, an
 * exchange save, a rename over it, an unlink of it while open), at every
 * interleaving of their step boundaries. A deterministic scheduler stops the
 * request's thread and the renamer's at each boundary (fs->step, enum
 * fs_step) and lets one go at a time: the request's path build and its store
 * call are placed at every pair of points among the renamer's steps; once
 * the store call has returned, both run freely (the request may have to wait
 * for the renamer, which the scheduler cannot see). Every request must
 * succeed on the inode it was given: never -ENOENT or -ESTALE for a node
 * that exists (a node renamed over or unlinked while the kernel holds it
 * lives on as an orphan). Built from fs/meson.build (it links the daemon).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fsutil.h"
#include "ops_i.h"
#include "testutil.h"

TestSuite(fs_race, .init = tu_fs_setup, .fini = tu_fs_teardown);

#define RENAME_EXCHANGE (1 << 1)

static const struct fs_who root = {0, 0, NULL, 0};
static const struct fuse_ctx ctx0;

/* ---- the scheduler ------------------------------------------------------ */

enum { REQ, REN, NTHREADS };

/* how long a thread let go may take to reach its next boundary before the
 * scheduler takes it as blocked by the other */
#define BLOCKED_NS (50 * 1000000L)

static pthread_mutex_t sched_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sched_cond = PTHREAD_COND_INITIALIZER;
static __thread int self = -1;	/* which thread this is, -1: not scheduled */
static bool waiting[NTHREADS];	/* stopped at a boundary */
static bool go[NTHREADS];	/* let it run to its next boundary */
static bool finished[NTHREADS]; /* its work is over */
static bool free_run;		/* no more stops */

/* fs->step: stop here until the scheduler lets this thread go. */
static void stop(struct fs *fs, enum fs_step s)
{
	(void)fs;
	(void)s;
	if (self < 0)
		return;
	pthread_mutex_lock(&sched_lock);
	waiting[self] = true;
	pthread_cond_broadcast(&sched_cond);
	while (!go[self] && !free_run)
		pthread_cond_wait(&sched_cond, &sched_lock);
	go[self] = false;
	waiting[self] = false;
	pthread_cond_broadcast(&sched_cond); /* the scheduler: it left */
	pthread_mutex_unlock(&sched_lock);
}

static void finish(void)
{
	pthread_mutex_lock(&sched_lock);
	finished[self] = true;
	pthread_cond_broadcast(&sched_cond);
	pthread_mutex_unlock(&sched_lock);
}

/* Waits up to BLOCKED_NS for thread @t to stop at a boundary or end.
 * Caller holds sched_lock. */
static void await_stop(int t)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += BLOCKED_NS;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (!waiting[t] && !finished[t] &&
	       pthread_cond_timedwait(&sched_cond, &sched_lock, &until) == 0)
		;
}

/*
 * Lets thread @t run to its next boundary or to its end. It may be blocked
 * on what the other thread holds (a lock, or the request's wait for a
 * rename in flight), before or after: then the other one goes next, and
 * this one stops when it can.
 */
static void step(int t)
{
	pthread_mutex_lock(&sched_lock);
	await_stop(t);
	if (waiting[t]) {
		go[t] = true;
		pthread_cond_broadcast(&sched_cond);
		while (go[t])
			pthread_cond_wait(&sched_cond, &sched_lock);
		await_stop(t);
	}
	pthread_mutex_unlock(&sched_lock);
}

static void run_free(void)
{
	pthread_mutex_lock(&sched_lock);
	free_run = true;
	pthread_cond_broadcast(&sched_cond);
	pthread_mutex_unlock(&sched_lock);
}

/* ---- the workloads ------------------------------------------------------ */

/* The fixture: folders a and b; the node the requests are on, at a/<f>
 * (one lookup held, as the kernel holds a node a process has open), and a
 * saved version at a/<g>. The names change per run where a change leaves
 * the node without its name (rename over, unlink). */
static uint64_t dir_a, dir_b, node;
static char f[32] = "f", g[32] = "g";

/* A change of place of @node, in steps the scheduler stops. */
typedef void (*change_fn)(void);

static uint64_t lookup(uint64_t parent, const char *name)
{
	struct fuse_entry_param e;

	cr_assert_eq(fs_do_lookup(&tu_fs, parent, name, &e), 0);
	return e.ino;
}

static uint64_t mkfile(uint64_t parent, const char *name, const char *data)
{
	struct fuse_entry_param e;
	struct tree_attr a;
	struct fh *fh = NULL;

	cr_assert_eq(fs_do_create(&tu_fs, &root, parent, name, 0644,
				  O_CREAT | O_WRONLY, &e, &fh),
		     0);
	cr_assert_eq(fs_do_write(&tu_fs, &root, e.ino, data, strlen(data), 0,
				 false, false, &a),
		     0);
	cr_assert_eq(fs_do_setxattr(&tu_fs, e.ino, "user.k", "v", 1, 0), 0);
	fs_do_release(&tu_fs, e.ino, fh);
	return e.ino;
}

static void expect_ok(int rc, const char *what)
{
	cr_expect_eq(rc, 0, "%s answered %d (%s) on a node that exists", what,
		     rc, strerror(-rc));
}

static void move_away_and_back(void)
{
	expect_ok(fs_do_rename(&tu_fs, &ctx0, dir_a, f, dir_b, f, 0),
		  "rename a/f b/f");
	expect_ok(fs_do_rename(&tu_fs, &ctx0, dir_b, f, dir_a, f, 0),
		  "rename b/f a/f");
}

/* The save by RENAME_EXCHANGE, twice (the node ends where it began). */
static void exchange_twice(void)
{
	expect_ok(
	    fs_do_rename(&tu_fs, &ctx0, dir_a, f, dir_a, g, RENAME_EXCHANGE),
	    "exchange f g");
	expect_ok(
	    fs_do_rename(&tu_fs, &ctx0, dir_a, g, dir_a, f, RENAME_EXCHANGE),
	    "exchange g f");
}

/* The save by rename(2): g replaces f; the node, held by the kernel, lives
 * on as an orphan. */
static void rename_over(void)
{
	expect_ok(fs_do_rename(&tu_fs, &ctx0, dir_a, g, dir_a, f, 0),
		  "rename g over f");
}

static void unlink_it(void)
{
	expect_ok(fs_do_remove(&tu_fs, dir_a, f, false), "unlink f");
}

/*
 * On a follower (-o ro on etcd) the writer is another process: it moves the
 * node in the store with nothing bracketed here, and the watch moves the
 * table later, as a rename here (fs_watch_moved). The writer's commit is a
 * boundary of the change too.
 */
static void writer_moves(const char *from, const char *to, const char *dir)
{
	expect_ok(tree_rename(tu_tree, from, to, 0, NULL), "writer's rename");
	fs_step(&tu_fs, FS_STEP_COMMITTED);
	fs_watch_moved(&tu_fs, node, dir, f);
}

static void writer_moves_away_and_back(void)
{
	char a[48], b[48];

	snprintf(a, sizeof(a), "/a/%s", f);
	snprintf(b, sizeof(b), "/b/%s", f);
	writer_moves(a, b, "/b");
	writer_moves(b, a, "/a");
}

/*
 * pathfsctl mv of the node's folder, run by the daemon on its mounted
 * drive: the command holds the branches busy (fs_ctl_begin), moves them in
 * the store (the journaled rename), and fixes the table (fs_ctl_end). The
 * command's own steps are boundaries too. Away to c and back.
 */
static void ctl_moves(const char *from, const char *to)
{
	fs_ctl_begin(&tu_fs, tu_tree, from, to);
	fs_step(&tu_fs, FS_STEP_STARTED);
	expect_ok(tree_rename(tu_tree, from, to, 0, NULL), "pathfsctl mv");
	fs_step(&tu_fs, FS_STEP_COMMITTED);
	fs_ctl_end(&tu_fs, tu_tree, from, to);
}

static void ctl_moves_folder_away_and_back(void)
{
	ctl_moves("/a", "/c");
	ctl_moves("/c", "/a");
}

/* A request on @node; 0 or its error. */
typedef int (*request_fn)(void);

static int req_getattr(void)
{
	struct tree_attr a;
	int rc = fs_do_getattr(&tu_fs, node, &a);

	if (!rc && a.ino != node)
		rc = -EXDEV; /* another node's attributes */
	return rc;
}

static int req_read(void)
{
	char buf[16] = "";
	size_t n = 0;
	int rc = fs_do_read(&tu_fs, node, sizeof(buf), 0, buf, &n);

	if (!rc && (n != 4 || memcmp(buf, "node", 4)))
		rc = -EXDEV; /* another node's bytes */
	return rc;
}

static int req_write(void)
{
	struct tree_attr a;

	return fs_do_write(&tu_fs, &root, node, "node", 4, 0, false, false, &a);
}

static int req_chmod(void)
{
	struct stat st = {.st_mode = 0640};
	struct tree_attr a;

	return fs_do_setattr(&tu_fs, &root, node, &st, FUSE_SET_ATTR_MODE, &a);
}

static int req_getxattr(void)
{
	void *val = NULL;
	size_t len = 0;
	int rc = fs_do_getxattr(&tu_fs, node, "user.k", 16, &val, &len);

	free(val);
	return rc;
}

static int req_listxattr(void)
{
	char *list = NULL;
	size_t len = 0;
	int rc = fs_do_listxattr(&tu_fs, NULL, node, 64, &list, &len);

	free(list);
	return rc;
}

static int req_setxattr(void)
{
	return fs_do_setxattr(&tu_fs, node, "user.k", "w", 1, 0);
}

/* open(O_TRUNC), a change of content by path, then the bytes back */
static int req_open(void)
{
	struct fh *fh = NULL;
	int rc = fs_do_open(&tu_fs, &root, node, O_RDWR | O_TRUNC, &fh, NULL);

	if (!rc) {
		fs_do_release(&tu_fs, node, fh);
		rc = req_write();
	}
	return rc;
}

static int req_lookup_dot(void)
{
	struct fuse_entry_param e;
	int rc = fs_do_lookup(&tu_fs, node, ".", &e);

	if (!rc && e.ino != node)
		rc = -EXDEV;
	if (!rc)
		itab_forget(&tu_fs, node, 1);
	return rc;
}

static int req_open_ro(void)
{
	struct fh *fh = NULL;
	int rc = fs_do_open(&tu_fs, &root, node, O_RDONLY, &fh, NULL);

	if (!rc)
		fs_do_release(&tu_fs, node, fh);
	return rc;
}

struct request {
	const char *name;
	request_fn fn;
};

/* What a read-write mount serves. */
static const struct request requests[] = {
    {"GETATTR", req_getattr},	  {"READ", req_read},
    {"WRITE", req_write},	  {"SETATTR", req_chmod},
    {"GETXATTR", req_getxattr},	  {"LISTXATTR", req_listxattr},
    {"SETXATTR", req_setxattr},	  {"OPEN", req_open},
    {"LOOKUP .", req_lookup_dot},
};

/* What a follower (read-only) serves. */
static const struct request reads[] = {
    {"GETATTR", req_getattr},	{"READ", req_read},
    {"GETXATTR", req_getxattr}, {"LISTXATTR", req_listxattr},
    {"OPEN", req_open_ro},	{"LOOKUP .", req_lookup_dot},
};

static request_fn req_now;
static change_fn change_now;
static int req_rc;

static void *req_thread(void *arg)
{
	(void)arg;
	self = REQ;
	stop(&tu_fs, FS_STEP_BUILT); /* wait for the first turn */
	req_rc = req_now();
	finish();
	return NULL;
}

static void *ren_thread(void *arg)
{
	(void)arg;
	self = REN;
	stop(&tu_fs, FS_STEP_BUILT);
	change_now();
	finish();
	return NULL;
}

/* One run: the renamer takes @at1 steps, the request one (to its path
 * built), the renamer @at2 - @at1 more, the request one more (its store
 * call made), then both run free. */
static int run_once(request_fn req, change_fn change, int at1, int at2)
{
	pthread_t tq, tr;
	int i;

	memset(waiting, 0, sizeof(waiting));
	memset(go, 0, sizeof(go));
	memset(finished, 0, sizeof(finished));
	free_run = false;
	req_now = req;
	change_now = change;
	tu_fs.step = stop;
	pthread_create(&tq, NULL, req_thread, NULL);
	pthread_create(&tr, NULL, ren_thread, NULL);
	for (i = 0; i < at1; i++)
		step(REN);
	step(REQ); /* start -> path built */
	for (; i < at2; i++)
		step(REN);
	step(REQ); /* path built -> store call returned */
	run_free();
	pthread_join(tq, NULL);
	pthread_join(tr, NULL);
	tu_fs.step = NULL;
	return req_rc;
}

static int nsteps;

static void count(struct fs *fs, enum fs_step s)
{
	(void)fs;
	(void)s;
	nsteps++;
}

/* How many boundaries the renamer passes in @change, counted by one run. */
static int count_steps(change_fn change)
{
	nsteps = 0;
	tu_fs.step = count;
	change();
	tu_fs.step = NULL;
	return nsteps + 1; /* and the end */
}

/* Folders a and b, and a new node at a/<f> with a version at a/<g>; with
 * @fresh, under names no run used yet. */
static void put_node(bool fresh)
{
	static unsigned n;

	if (fresh) {
		n++;
		snprintf(f, sizeof(f), "f%u", n);
		snprintf(g, sizeof(g), "g%u", n);
	}
	node = mkfile(dir_a, f, "node");
	cr_assert_eq(lookup(dir_a, f), node);
	mkfile(dir_a, g, "save");
}

static void fixture(void)
{
	struct fuse_ctx c = {0};
	struct tree_attr a;

	cr_assert_eq(fs_do_mknode(&tu_fs, &c, TREE_ROOT_INO, "a",
				  S_IFDIR | 0755, 0, NULL, false, &a),
		     0);
	dir_a = a.ino;
	cr_assert_eq(fs_do_mknode(&tu_fs, &c, TREE_ROOT_INO, "b",
				  S_IFDIR | 0755, 0, NULL, false, &a),
		     0);
	dir_b = a.ino;
	put_node(false);
}

static void put_fresh_node(void)
{
	put_node(true);
}

#define ALL(v) v, sizeof(v) / sizeof(v[0])

/*
 * Every request of @reqs at every interleaving with @change. A change that ends with
 * the node where it began leaves @reset NULL; one that takes its name gets a
 * fresh node and names from @reset before each run. Returns how many runs
 * were made.
 */
static int check_all(change_fn change, void (*reset)(void),
		     const struct request *reqs, size_t nreq)
{
	size_t r;
	int n, at1, at2, runs = 0, rc;

	n = count_steps(change);
	if (reset)
		reset();
	for (r = 0; r < nreq; r++) {
		for (at1 = 0; at1 <= n; at1++) {
			for (at2 = at1; at2 <= n; at2++) {
				rc = run_once(reqs[r].fn, change, at1, at2);
				cr_expect_eq(rc, 0,
					     "%s with the path built after %d "
					     "and the store read after %d of "
					     "the change's %d steps: %s",
					     reqs[r].name, at1, at2, n,
					     rc == -EXDEV ? "another node"
							  : strerror(-rc));
				if (reset)
					reset();
				runs++;
			}
		}
	}
	return runs;
}

Test(fs_race, requests_never_miss_a_node_moved_away_and_back)
{
	fixture();
	cr_expect_gt(check_all(move_away_and_back, NULL, ALL(requests)), 0);
}

Test(fs_race, requests_never_miss_a_node_saved_by_exchange)
{
	fixture();
	cr_expect_gt(check_all(exchange_twice, NULL, ALL(requests)), 0);
}

/* The node, renamed over while the kernel holds it, is an orphan from then
 * on, which requests reach by number. */
Test(fs_race, requests_never_miss_a_node_renamed_over)
{
	fixture();
	cr_expect_gt(check_all(rename_over, put_fresh_node, ALL(requests)), 0);
}

Test(fs_race, requests_never_miss_a_node_unlinked_while_held)
{
	fixture();
	cr_expect_gt(check_all(unlink_it, put_fresh_node, ALL(requests)), 0);
}

Test(fs_race, requests_never_miss_a_node_whose_folder_pathfsctl_moves)
{
	fixture();
	cr_expect_gt(
	    check_all(ctl_moves_folder_away_and_back, NULL, ALL(requests)), 0);
}

/* A follower's requests while the writer moves the node away and back;
 * the watch follows each move after it. */
Test(fs_race, a_followers_requests_never_miss_a_node_the_writer_moves)
{
	static char watching; /* fs_retry() only asks whether there is one */

	fixture();
	tu_fs.ro = true;
	tu_fs.watch = (struct fs_watch *)&watching;
	cr_expect_gt(check_all(writer_moves_away_and_back, NULL, ALL(reads)),
		     0);
	tu_fs.watch = NULL;
}
