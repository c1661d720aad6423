/*
 * test_journal.c - the journaled subtree rewrite (store/journal.c): folder
 * renames of many sizes and batch counts, names that sort before '/',
 * neighbours that must not move, exchange, replacing an empty folder, and
 * crash safety: a child process renames with PATHFS_CRASH_AFTER_BATCHES=N and
 * is killed; reopening the store must finish the rename exactly.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "batch_i.h"
#include "drive_i.h"
#include "journal_i.h"
#include "parent_i.h"
#include "branchutil.h"
#include "testutil.h"

#define T tu_tree

/* ---- helpers ------------------------------------------------------------ */
/* ---- renames ------------------------------------------------------------ */

static void rename_case(int n, size_t batch)
{
	char *before, *after, *outside, *outside2;
	struct tree_attr root0, root1;

	reopen_opts(batch, 0);
	make_neighbours(T);
	tu_mkdir(T, "/dest");
	build(T, "/docs", n);
	before = snap(T, "/docs", true);
	outside = snap_outside(T, "/docs", "/dest");
	cr_assert_eq(tree_lookup(T, "/", &root0), 0);
	cr_assert_eq(tree_rename(T, "/docs", "/dest/moved", 0, NULL), 0);
	after = snap(T, "/dest/moved", true);
	cr_assert_str_eq(after, before);
	assert_gone(T, "/docs");
	outside2 = snap_outside(T, "/docs", "/dest");
	cr_assert_str_eq(outside2, outside, "a neighbour changed");
	cr_assert_eq(tree_lookup(T, "/", &root1), 0);
	cr_assert_eq(root1.nlink, root0.nlink - 1, "root nlink");
	assert_no_journal(T);
	assert_fsck_clean(T);
	/* and it survives a reopen */
	reopen_opts(batch, 0);
	free(after);
	after = snap(T, "/dest/moved", true);
	cr_assert_str_eq(after, before);
	free(before);
	free(after);
	free(outside);
	free(outside2);
}

Test(journal, rename_small_branch_many_batches, .init = tu_setup,
     .fini = tu_teardown)
{
	rename_case(20, 4);
}

Test(journal, rename_branch_sizes_around_chunk, .init = tu_setup,
     .fini = tu_teardown)
{
	/* entries below /docs: build() adds 6 folders + big + hardlink */
	for (int n = 7; n <= 10; n++) {
		size_t nodes;
		char *before, *after;

		tu_teardown();
		tu_setup();
		reopen_opts(16, 0);
		nodes = build(T, "/docs", n);
		before = snap(T, "/docs", true);
		cr_assert_eq(tree_rename(T, "/docs", "/x", 0, NULL), 0);
		after = snap(T, "/x", true);
		cr_assert_str_eq(after, before, "%zu nodes", nodes);
		assert_gone(T, "/docs");
		assert_no_journal(T);
		free(before);
		free(after);
	}
}

Test(journal, rename_chunk_plus_one_default_batch, .init = tu_setup,
     .fini = tu_teardown)
{
	char p[64];
	struct tree_dir *d;
	const char *name;
	size_t nl, count = 0;
	struct tree_attr a;
	int rc;

	/* 1,025 children with the default chunk of 1,024 */
	tu_mkdir(T, "/big");
	for (int i = 0; i < 1025; i++) {
		snprintf(p, sizeof(p), "/big/e%04d", i);
		cr_assert_eq(
		    tree_mknode(T, p, S_IFREG | 0644, 0, 0, 0, NULL, NULL), 0);
	}
	cr_assert_eq(tree_rename(T, "/big", "/moved", 0, NULL), 0);
	cr_assert_eq(tree_dir_open(&d, T, "/moved", NULL), 0);
	while ((rc = tree_dir_next(d, &name, &nl, &a)) == 1) {
		snprintf(p, sizeof(p), "e%04zu", count);
		cr_assert_str_eq(name, p);
		count++;
	}
	tree_dir_free(d);
	cr_assert_eq(rc, 0);
	cr_assert_eq(count, 1025);
	assert_gone(T, "/big");
	assert_no_journal(T);
	assert_fsck_clean(T);
}

Test(journal, rename_across_folders_and_nlink, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_attr a, b;

	reopen_opts(8, 0);
	tu_mkdir(T, "/p");
	tu_mkdir(T, "/q");
	build(T, "/p/src", 12);
	cr_assert_eq(tree_rename(T, "/p/src", "/q/dst", 0, NULL), 0);
	cr_assert_eq(tree_lookup(T, "/p", &a), 0);
	cr_assert_eq(tree_lookup(T, "/q", &b), 0);
	cr_assert_eq(a.nlink, 2);
	cr_assert_eq(b.nlink, 3);
	assert_fsck_clean(T);
}

Test(journal, rename_small_byte_budget, .init = tu_setup, .fini = tu_teardown)
{
	char *before, *after;

	/* a byte bound of 1 makes every key its own batch */
	reopen_opts(1000, 1);
	build(T, "/docs", 15);
	before = snap(T, "/docs", true);
	cr_assert_eq(tree_rename(T, "/docs", "/d2", 0, NULL), 0);
	after = snap(T, "/d2", true);
	cr_assert_str_eq(after, before);
	assert_gone(T, "/docs");
	assert_fsck_clean(T);
	free(before);
	free(after);
}

Test(journal, rename_replaces_empty_folder, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_attr a, root0, root1;
	char *before, *after;

	reopen_opts(8, 0);
	build(T, "/src", 10);
	tu_mkdir(T, "/target");
	cr_assert_eq(tree_lookup(T, "/target", &a), 0);
	cr_assert_eq(tree_setxattr(T, "/target", a.ino, "user.gone", "1", 1, 0),
		     0);
	cr_assert_eq(tree_lookup(T, "/", &root0), 0);
	before = snap(T, "/src", true);
	cr_assert_eq(tree_rename(T, "/src", "/target", 0, NULL), 0);
	after = snap(T, "/target", true);
	cr_assert_str_eq(after, before);
	assert_gone(T, "/src");
	cr_assert_eq(tree_lookup(T, "/", &root1), 0);
	cr_assert_eq(root1.nlink, root0.nlink - 1);
	/* the replaced folder's xattrs went with it */
	{
		void *v = NULL;
		size_t vs;
		cr_assert_eq(tree_getxattr(T, a.ino, "user.gone", &v, &vs),
			     -ENODATA);
	}
	/* a non-empty target is refused and nothing moves */
	build(T, "/other", 3);
	cr_assert_eq(tree_rename(T, "/target", "/other", 0, NULL), -ENOTEMPTY);
	assert_no_journal(T);
	assert_fsck_clean(T);
	free(before);
	free(after);
}

Test(journal, exchange_two_folders, .init = tu_setup, .fini = tu_teardown)
{
	char *a0, *b0, *a1, *b1;

	reopen_opts(8, 0);
	tu_mkdir(T, "/x");
	build(T, "/x/A", 14);
	build(T, "/B", 5);
	a0 = snap(T, "/x/A", true);
	b0 = snap(T, "/B", true);
	cr_assert_eq(tree_rename(T, "/x/A", "/B", TREE_RENAME_EXCHANGE, NULL),
		     0);
	a1 = snap(T, "/x/A", true);
	b1 = snap(T, "/B", true);
	cr_assert_str_eq(a1, b0);
	cr_assert_str_eq(b1, a0);
	assert_no_journal(T);
	assert_fsck_clean(T);
	free(a0);
	free(b0);
	free(a1);
	free(b1);
}

Test(journal, exchange_folder_with_file_and_empty_folder, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_attr p0, q0, p1, q1;
	char *a0, *f0, *a1, *f1;

	reopen_opts(8, 0);
	tu_mkdir(T, "/p");
	tu_mkdir(T, "/q");
	build(T, "/p/A", 9);
	mkfile_n(T, "/q/file", 1234, 9);
	cr_assert_eq(tree_lookup(T, "/p", &p0), 0);
	cr_assert_eq(tree_lookup(T, "/q", &q0), 0);
	a0 = snap(T, "/p/A", true);
	f0 = snap(T, "/q/file", true);
	cr_assert_eq(
	    tree_rename(T, "/p/A", "/q/file", TREE_RENAME_EXCHANGE, NULL), 0);
	a1 = snap(T, "/q/file", true);
	f1 = snap(T, "/p/A", true);
	cr_assert_str_eq(a1, a0);
	cr_assert_str_eq(f1, f0);
	cr_assert_eq(tree_lookup(T, "/p", &p1), 0);
	cr_assert_eq(tree_lookup(T, "/q", &q1), 0);
	cr_assert_eq(p1.nlink, p0.nlink - 1, "the folder left /p");
	cr_assert_eq(q1.nlink, q0.nlink + 1, "the folder arrived in /q");
	assert_fsck_clean(T);
	/* with an empty folder: the other way round */
	tu_mkdir(T, "/empty");
	cr_assert_eq(
	    tree_rename(T, "/empty", "/q/file", TREE_RENAME_EXCHANGE, NULL), 0);
	free(a1);
	a1 = snap(T, "/empty", true);
	cr_assert_str_eq(a1, a0);
	assert_no_journal(T);
	assert_fsck_clean(T);
	free(a0);
	free(f0);
	free(a1);
	free(f1);
}

Test(journal, failed_rename_is_undone, .init = tu_setup, .fini = tu_teardown)
{
	struct sbuf k = {0};
	struct kv_batch *b;
	char *before, *after;

	/* the source's parent does not decode: the final batch fails after
	 * every copy was made, and the rename must leave no trace */
	reopen_opts(4, 0);
	b = kv_batch_new(T->store->kv);
	tu_mkdir(T, "/p");
	tu_mkdir(T, "/q");
	build(T, "/p/src", 10);
	before = snap(T, "/p/src", true);
	key_node(&k, "main", "/p");
	kv_batch_put(b, k.buf, k.len,
		     "\x7f"
		     "bad",
		     4);
	cr_assert_eq(tree_commit(T, b), 0);
	cr_assert_eq(tree_rename(T, "/p/src", "/q/dst", 0, NULL), -EIO);
	after = snap(T, "/p/src", true);
	cr_assert_str_eq(after, before);
	cr_assert_eq(subtree_keys(T, "/q/dst"), 0, "copies left");
	assert_no_journal(T);
	{
		struct tree_attr a;
		cr_assert_eq(tree_lookup(T, "/q/dst", &a), -ENOENT);
	}
	kv_batch_free(b);
	sbuf_release(&k);
	free(before);
	free(after);
}

static volatile int replay_stop;

static void *replayer(void *arg)
{
	size_t n, total = 0;

	while (!replay_stop) {
		cr_assert_eq(tree_journal_replay(T, &n), 0);
		total += n;
	}
	return (void *)total;
}

Test(journal, replay_while_a_rename_runs_leaves_it_alone, .init = tu_setup,
     .fini = tu_teardown)
{
	char *before, *after;
	pthread_t th;
	void *replayed;

	/* pathfsctl recover on a mounted store: a running rewrite's record
	 * must not be replayed by another thread (an exchange's phases would
	 * interleave; a rename would end in ENOENT for its caller) */
	reopen_opts(2, 0);
	tu_mkdir(T, "/p");
	build(T, "/p/src", 40);
	build(T, "/other", 10);
	before = snap(T, "/p/src", true);
	replay_stop = 0;
	cr_assert_eq(pthread_create(&th, NULL, replayer, NULL), 0);
	for (int i = 0; i < 6; i++) {
		cr_assert_eq(tree_rename(T, i % 2 ? "/dst" : "/p/src",
					 i % 2 ? "/p/src" : "/dst", 0, NULL),
			     0);
		cr_assert_eq(tree_rename(T, "/other", i % 2 ? "/p/src" : "/dst",
					 TREE_RENAME_EXCHANGE, NULL),
			     0);
	}
	replay_stop = 1;
	cr_assert_eq(pthread_join(th, &replayed), 0);
	cr_assert_eq((size_t)replayed, 0, "a running rename was replayed");
	after = snap(T, "/p/src", true);
	cr_assert_str_eq(after, before);
	assert_no_journal(T);
	assert_fsck_clean(T);
	free(before);
	free(after);
}

/* ---- crash safety ------------------------------------------------------- */

/*
 * Closes tu_store, runs tree_rename(@src, @dst, @flags) in a child process
 * with PATHFS_CRASH_AFTER_BATCHES=@n and rewrite batches of @batch, and
 * checks it was killed (or, if !@killed, finished). Reopens tu_store, which
 * replays the journal.
 */
static void crash_rename_bytes(const char *src, const char *dst, unsigned flags,
			       long n, size_t batch, size_t bytes, bool killed)
{
	pid_t pid;
	int status;

	store_close(tu_store);
	tu_store = NULL;
	tu_tree = NULL;
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		struct store_options o = {.rename_batch = batch,
					  .rename_bytes = bytes};
		struct store *s;
		struct tree *t;
		char v[32];

		snprintf(v, sizeof(v), "%ld", n);
		setenv("PATHFS_CRASH_AFTER_BATCHES", v, 1);
		if (store_open(&s, tu_dir, &o) || store_drive(s, "main", &t))
			_exit(10);
		if (tree_rename(t, src, dst, flags, NULL))
			_exit(11);
		store_close(s);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (killed)
		cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			  "N=%ld: child not killed (status %#x)", n, status);
	else
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "N=%ld: child status %#x", n, status);
	reopen_opts(batch, bytes);
}

/* crash_rename_bytes() with the default byte bound */
static void crash_rename(const char *src, const char *dst, unsigned flags,
			 long n, size_t batch, bool killed)
{
	crash_rename_bytes(src, dst, flags, n, batch, 0, killed);
}

static long ceil_div(size_t a, size_t b)
{
	return (long)((a + b - 1) / b);
}

Test(journal, crash_at_every_kind_of_batch_then_replay, .init = tu_setup,
     .fini = tu_teardown)
{
	const size_t batch = 16;
	char *before, *after, *outside, *outside2;
	size_t keys;
	long k, ns[5];
	const char *a = "/docs", *b = "/dest/moved";

	reopen_opts(batch, 0);
	make_neighbours(T);
	tu_mkdir(T, "/dest");
	build(T, "/docs", 60);
	keys = subtree_keys(T, "/docs");
	k = ceil_div(keys, batch); /* copy batches 1..k, final k+1 */
	cr_assert_gt(k, 3);
	ns[0] = 0;
	ns[1] = 1;
	ns[2] = k / 2 + 1;
	ns[3] = k + 1;
	ns[4] = k + 10;
	before = snap(T, a, true);
	outside = snap_outside(T, "/docs", "/dest");
	for (int i = 0; i < 5; i++) {
		crash_rename(a, b, 0, ns[i], batch, i < 4);
		after = snap(T, b, true);
		cr_assert_str_eq(after, before, "N=%ld", ns[i]);
		assert_gone(T, a);
		assert_no_journal(T);
		assert_fsck_clean(T);
		outside2 = snap_outside(T, "/docs", "/dest");
		cr_assert_str_eq(outside2, outside, "N=%ld: neighbours", ns[i]);
		free(after);
		free(outside2);
		/* and back, for the next round */
		const char *tmp = a;
		a = b;
		b = tmp;
	}
	free(before);
	free(outside);
}

/*
 * On an engine that wants big range deletes sliced (kv_range_keys(): the
 * journal_strict suite), the source's copied keys are dropped in slices
 * before the final batch, which the crash hook counts: a crash right after
 * the first slice, and after the next batch, replays to the whole branch
 * at its new name (without slices these are the final batch and past it).
 */
Test(journal, crash_between_drop_slices_then_replay, .init = tu_setup,
     .fini = tu_teardown)
{
	const size_t batch = 64;
	char *before, *after;
	const char *a = "/docs", *b = "/moved";
	size_t keys;
	long k;

	reopen_opts(batch, 0);
	build(T, "/docs", 1400);
	keys = subtree_keys(T, "/docs");
	cr_assert_gt(keys, KV_ETCD_TXN_OPS * KV_RANGE_SLICE_OPS);
	k = ceil_div(keys, batch); /* copy batches 1..k */
	before = snap(T, a, true);
	for (long n = k + 1; n <= k + 2; n++) {
		crash_rename(a, b, 0, n, batch,
			     kv_range_keys(tu_store->kv) != SIZE_MAX ||
				 n == k + 1);
		after = snap(T, b, true);
		cr_assert_str_eq(after, before, "N=%ld", n);
		assert_gone(T, a);
		assert_no_journal(T);
		assert_fsck_clean(T);
		free(after);
		a = b;
		b = n == k + 1 ? "/docs" : "/moved";
	}
	free(before);
}

/*
 * A rename that fails with ENOSPC in the middle of its copy (the test-only
 * hook PATHFS_ENOSPC_AT_BATCH refuses copy batch N) is undone by deletes
 * only; past a slice of copies (journal_strict) in slices, the first of
 * which deletes the record's go-ahead key. Killed after the undo's first or
 * second batch, the store keeps the record without its go-ahead and some of
 * the copies; the next open goes on undoing (never copying): the source
 * whole, no copy, no record, fsck clean.
 */
static void undo_child(long fail, long crash)
{
	struct store_options o = {.rename_batch = 64};
	struct store *s;
	struct tree *t;
	char v[32];
	int rc;

	snprintf(v, sizeof(v), "%ld", fail);
	setenv("PATHFS_ENOSPC_AT_BATCH", v, 1);
	snprintf(v, sizeof(v), "%ld", crash);
	setenv("PATHFS_CRASH_AFTER_BATCHES", v, 1);
	if (store_open(&s, tu_dir, &o) || store_drive(s, "main", &t))
		_exit(10);
	rc = tree_rename(t, "/docs", "/moved", 0, NULL);
	store_close(s);
	_exit(rc == -ENOSPC ? 12 : 11);
}

Test(journal, enospc_mid_rename_is_undone_in_slices, .init = tu_setup,
     .fini = tu_teardown)
{
	const size_t batch = 64;
	bool sliced = kv_range_keys(tu_store->kv) != SIZE_MAX;
	char *before, *after;
	size_t keys, copied;
	long k, fail;

	reopen_opts(batch, 0);
	make_neighbours(T);
	build(T, "/docs", 2200);
	keys = subtree_keys(T, "/docs");
	k = ceil_div(keys, batch); /* copy batches 1..k */
	fail = k - 1;		   /* copies of batches 1..k-2 are made */
	copied = (size_t)(fail - 1) * batch;
	cr_assert_gt(copied, 2 * kv_range_keys(tu_store->kv) * sliced);
	before = snap(T, "/", true);
	/* in this process: undone, nothing left */
	{
		char v[32];

		snprintf(v, sizeof(v), "%ld", fail);
		setenv("PATHFS_ENOSPC_AT_BATCH", v, 1);
		cr_assert_eq(tree_rename(T, "/docs", "/moved", 0, NULL),
			     -ENOSPC);
		unsetenv("PATHFS_ENOSPC_AT_BATCH");
		after = snap(T, "/", true);
		cr_assert_str_eq(after, before);
		free(after);
		cr_assert_eq(subtree_keys(T, "/moved"), 0, "copies left");
		cr_assert_eq(kind_keys(T, KEY_XTMP), 0);
		assert_no_journal(T);
		assert_fsck_clean(T);
	}
	/* killed after the undo's first batch, and its second */
	for (long crash = fail; crash <= fail + 1; crash++) {
		struct store_options ro = {.read_only = true};
		bool killed = sliced || crash == fail;
		struct tree_journal_entry *e;
		struct store *keep;
		size_t n, left;
		int status;
		pid_t pid;

		store_close(tu_store);
		tu_store = NULL;
		tu_tree = NULL;
		pid = fork();
		cr_assert_neq(pid, -1);
		if (pid == 0)
			undo_child(fail, crash);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		if (killed)
			cr_assert(WIFSIGNALED(status) &&
				      WTERMSIG(status) == SIGKILL,
				  "crash %ld: status %#x", crash, status);
		else
			cr_assert(WIFEXITED(status) &&
				      WEXITSTATUS(status) == 12,
				  "crash %ld: status %#x", crash, status);
		/* as the kill left it */
		cr_assert_eq(store_open(&tu_store, tu_dir, &ro), 0);
		cr_assert_eq(store_drive(tu_store, "main", &tu_tree), 0);
		cr_assert_eq(tree_journal_list(T, &e, &n), 0);
		tree_journal_list_free(e, n);
		left = subtree_keys(T, "/moved");
		if (sliced) {
			cr_assert_eq(n, 1, "crash %ld: the record", crash);
			cr_assert_eq(kind_keys(T, KEY_XTMP), 0, "go-ahead");
			cr_assert_gt(left, 0);
			cr_assert_lt(left, copied);
		} else {
			cr_assert_eq(n, 0);
			cr_assert_eq(left, 0);
		}
		keep = tu_store;
		tu_store = NULL;
		store_close(keep);
		/* the next open undoes the rest */
		reopen_opts(batch, 0);
		after = snap(T, "/", true);
		cr_assert_str_eq(after, before, "crash %ld", crash);
		free(after);
		cr_assert_eq(subtree_keys(T, "/moved"), 0, "copies left");
		cr_assert_eq(kind_keys(T, KEY_XTMP), 0);
		assert_no_journal(T);
		assert_fsck_clean(T);
	}
	/* and the rename still goes through */
	cr_assert_eq(tree_rename(T, "/docs", "/moved", 0, NULL), 0);
	assert_gone(T, "/docs");
	cr_assert_eq(kind_keys(T, KEY_XTMP), 0);
	assert_no_journal(T);
	assert_fsck_clean(T);
	free(before);
}

/*
 * Copy batches hold at most rename_bytes (plus one entry): a branch of ~10 KiB
 * paths (30 levels of 255-byte names, a file at each) is far fewer keys than
 * the entry bound, yet its rename takes one batch per 32 KiB of keys; a crash
 * in the middle of them replays to the whole branch.
 */
Test(journal, long_paths_are_batched_by_bytes, .init = tu_setup,
     .fini = tu_teardown)
{
	const size_t bytes = 32 << 10;
	char *p = malloc(TREE_PATH_MAX + 1), *before, *after;
	struct tree_scan *sc;
	struct tree_attr a;
	const char *sp;
	size_t len = 5, keys = 0, total = 0;
	long k;

	cr_assert(p);
	reopen_opts(1000, bytes);
	make_neighbours(T);
	strcpy(p, "/docs");
	tu_mkdir(T, p);
	for (int i = 0; i < 30; i++) {
		p[len] = '/';
		memset(p + len + 1, 'a' + i % 26, TREE_NAME_MAX);
		len += 1 + TREE_NAME_MAX;
		p[len] = '\0';
		tu_mkdir(T, p);
		strcpy(p + len, "/f");
		tu_mkfile(T, p, "level", 5);
		p[len] = '\0';
	}
	cr_assert_eq(tree_scan_open(&sc, T, "/docs"), 0);
	while (tree_scan_next(sc, &sp, &a) == 1) {
		keys++;
		total += strlen(sp);
	}
	tree_scan_free(sc);
	cr_assert_eq(keys, 60);
	/* at least k full batches of keys alone; the entry bound gives 1 */
	k = (long)(total / (bytes + len + 64));
	cr_assert_geq(k, 4, "%zu bytes of paths", total);
	before = snap(T, "/docs", true);
	/* batch k is the k-th copy batch (0 is the record): it exists */
	crash_rename_bytes("/docs", "/moved", 0, k, 1000, bytes, true);
	after = snap(T, "/moved", true);
	cr_assert_str_eq(after, before);
	assert_gone(T, "/docs");
	assert_no_journal(T);
	assert_fsck_clean(T);
	free(before);
	free(after);
	free(p);
}

/* Batches of an exchange of /x/A and /B as they are now: the record,
 * A->tmp, a phase change, B->A, a phase change, tmp->B, the final one. */
static long exchange_batches(size_t batch)
{
	long ca = ceil_div(subtree_keys(T, "/x/A"), batch);
	long cb = ceil_div(subtree_keys(T, "/B"), batch);

	return 1 + ca + 1 + cb + 1 + ca + 1;
}

Test(journal, crash_exchange_at_every_batch, .init = tu_setup,
     .fini = tu_teardown)
{
	const size_t batch = 8;
	char *a0, *b0, *a1, *b1;
	long total, max = 0;

	reopen_opts(batch, 0);
	tu_mkdir(T, "/x");
	build(T, "/x/A", 10);
	build(T, "/B", 3);
	a0 = snap(T, "/x/A", true);
	b0 = snap(T, "/B", true);
	total = exchange_batches(batch);
	for (long n = 0; n <= total || n <= max; n++) {
		total = exchange_batches(batch);
		if (total > max)
			max = total;
		crash_rename("/x/A", "/B", TREE_RENAME_EXCHANGE, n, batch,
			     n < total);
		a1 = snap(T, "/x/A", true);
		b1 = snap(T, "/B", true);
		/* each round swaps them */
		cr_assert_str_eq(a1, n % 2 ? a0 : b0, "N=%ld", n);
		cr_assert_str_eq(b1, n % 2 ? b0 : a0, "N=%ld", n);
		assert_no_journal(T);
		assert_fsck_clean(T);
		free(a1);
		free(b1);
	}
	free(a0);
	free(b0);
}

Test(journal, pending_record_listed_and_replay_twice_harmless, .init = tu_setup,
     .fini = tu_teardown)
{
	struct store_options ro = {.read_only = true};
	struct tree_journal_entry *e;
	struct store *s;
	struct tree *t;
	size_t n, replayed = 9;
	char *before, *after;

	reopen_opts(8, 0);
	build(T, "/src", 20);
	before = snap(T, "/src", true);
	store_close(tu_store);
	tu_store = NULL;
	{
		pid_t pid = fork();
		int status;

		cr_assert_neq(pid, -1);
		if (pid == 0) {
			struct store_options o = {.rename_batch = 8};
			setenv("PATHFS_CRASH_AFTER_BATCHES", "2", 1);
			if (store_open(&s, tu_dir, &o) ||
			    store_drive(s, "main", &t))
				_exit(10);
			tree_rename(t, "/src", "/dst", 0, NULL);
			_exit(11);
		}
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFSIGNALED(status));
	}
	/* read-only: nothing is replayed, the record is there */
	cr_assert_eq(store_open(&s, tu_dir, &ro), 0);
	cr_assert_eq(store_drive(s, "main", &t), 0);
	cr_assert_eq(tree_journal_list(t, &e, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(e[0].op, "rename");
	cr_assert_str_eq(e[0].src, "/src");
	cr_assert_str_eq(e[0].dst, "/dst");
	cr_assert_neq(e[0].cursor[0], '\0', "cursor after two copy batches");
	tree_journal_list_free(e, n);
	{
		size_t findings = 0;
		cr_assert_eq(tree_fsck(t, false, NULL, NULL, &findings), 0);
		cr_assert_geq(findings, 1, "fsck reports the record");
	}
	store_close(s);
	reopen_opts(8, 0); /* replays */
	cr_assert_eq(tree_journal_replay(T, &replayed), 0);
	cr_assert_eq(replayed, 0);
	after = snap(T, "/dst", true);
	cr_assert_str_eq(after, before);
	assert_gone(T, "/src");
	assert_no_journal(T);
	assert_fsck_clean(T);
	free(before);
	free(after);
}

Test(journal, replay_of_a_planted_record, .init = tu_setup, .fini = tu_teardown)
{
	struct journal_rec rec = {0};
	struct kv_batch *b;
	char *before, *after;
	size_t replayed = 0;

	/* the state right after batch 0: a record, nothing copied */
	reopen_opts(4, 0);
	build(T, "/src", 10);
	before = snap(T, "/src", true);
	rec.seq = 777777;
	rec.op = JOP_RENAME;
	rec.phase = 1;
	sbuf_adds(&rec.src, "/src");
	sbuf_adds(&rec.dst, "/dst");
	sbuf_nul(&rec.cursor);
	sbuf_nul(&rec.sdrive);
	b = kv_batch_new(T->store->kv);
	journal_rec_put(T, b, &rec);
	cr_assert_eq(tree_commit(T, b), 0);
	kv_batch_free(b);
	cr_assert_eq(tree_journal_replay(T, &replayed), 0);
	cr_assert_eq(replayed, 1);
	after = snap(T, "/dst", true);
	cr_assert_str_eq(after, before);
	assert_gone(T, "/src");
	journal_rec_release(&rec);
	free(before);
	free(after);
	assert_no_journal(T);
	assert_fsck_clean(T);
}

/*
 * A planted rename record with a go-ahead flag (JOURNAL_F_UNDO, version 2):
 * with its go-ahead key it replays forward; without it, as an undo (copies
 * under the target dropped, the source kept). A version-1 record with the
 * flag, or version 2 without it, does not decode.
 */
Test(journal, replay_of_a_planted_undo, .init = tu_setup, .fini = tu_teardown)
{
	struct journal_rec rec = {0}, got = {0};
	struct sbuf k = {0}, c = {0};
	struct kv_batch *b;
	char *before, *after, *val;
	size_t replayed = 0, vlen;

	reopen_opts(4, 0);
	build(T, "/src", 10);
	before = snap(T, "/src", true);
	rec.seq = 777777;
	rec.op = JOP_RENAME;
	rec.flags = JOURNAL_F_UNDO;
	rec.phase = 1;
	sbuf_adds(&rec.src, "/src");
	sbuf_adds(&rec.dst, "/dst");
	sbuf_nul(&rec.cursor);
	sbuf_nul(&rec.sdrive);
	for (int go = 1; go >= 0; go--) {
		b = kv_batch_new(T->store->kv);
		if (go) { /* the state right after batch 0 */
			key_xtmp_mark(&k, "main", rec.seq);
			kv_batch_put(b, k.buf, k.len, "", 0);
		} else { /* a copy made, then the go-ahead deleted */
			sbuf_reset(&k);
			key_node(&k, "main", "/src");
			cr_assert_eq(
			    kv_get(T->store->kv, k.buf, k.len, &val, &vlen), 0);
			sbuf_reset(&c);
			key_node(&c, "main", "/dst/x");
			kv_batch_put(b, c.buf, c.len, val, vlen);
			free(val);
			sbuf_reset(&rec.cursor);
			sbuf_adds(&rec.cursor, "/x");
		}
		sbuf_reset(&k);
		journal_rec_put(T, b, &rec);
		cr_assert_eq(tree_commit(T, b), 0);
		kv_batch_free(b);
		cr_assert_eq(tree_journal_replay(T, &replayed), 0);
		cr_assert_eq(replayed, 1);
		assert_no_journal(T);
		cr_assert_eq(kind_keys(T, KEY_XTMP), 0);
		if (go) {
			after = snap(T, "/dst", true);
			assert_gone(T, "/src");
			assert_fsck_clean(T);
			cr_assert_eq(tree_rename(T, "/dst", "/src", 0, NULL),
				     0);
		} else {
			after = snap(T, "/src", true);
			assert_gone(T, "/dst");
			cr_assert_eq(subtree_keys(T, "/dst"), 0);
		}
		cr_assert_str_eq(after, before, "go %d", go);
		free(after);
		assert_fsck_clean(T);
	}
	/* the version byte and the flag agree, or it does not decode */
	for (int undo = 0; undo < 2; undo++) {
		rec.flags = undo ? JOURNAL_F_UNDO : 0;
		b = kv_batch_new(T->store->kv);
		journal_rec_put(T, b, &rec);
		cr_assert_eq(tree_commit(T, b), 0);
		kv_batch_free(b);
		sbuf_reset(&k);
		key_journal(&k, "main", rec.seq);
		cr_assert_eq(kv_get(T->store->kv, k.buf, k.len, &val, &vlen),
			     0);
		cr_assert_eq(val[0], undo ? JOURNAL_REC_VERSION_UNDO
					  : JOURNAL_REC_VERSION);
		cr_assert_eq(journal_rec_decode(val, vlen, &got), 0);
		cr_assert_eq(got.flags, rec.flags);
		journal_rec_release(&got);
		memset(&got, 0, sizeof(got));
		val[0] = undo ? JOURNAL_REC_VERSION : JOURNAL_REC_VERSION_UNDO;
		cr_assert_eq(journal_rec_decode(val, vlen, &got), -EIO);
		journal_rec_release(&got);
		memset(&got, 0, sizeof(got));
		free(val);
		b = kv_batch_new(T->store->kv);
		kv_batch_delete(b, k.buf, k.len);
		cr_assert_eq(tree_commit(T, b), 0);
		kv_batch_free(b);
	}
	journal_rec_release(&rec);
	sbuf_release(&k);
	sbuf_release(&c);
	free(before);
}

/* ---- rate (a printout, not a timed assertion) --------------------------- */

/* Writes a branch of @n files in folders of 1,000 straight into the store. */
static void raw_branch(struct tree *t, const char *root, size_t n)
{
	struct kv_batch *b = kv_batch_new(t->store->kv);
	struct sbuf k = {0}, v = {0};
	struct tree_attr a = {0};
	size_t ndirs = (n + 999) / 1000;
	char p[128];

	a.mode = S_IFDIR | 0755;
	a.nlink = 2 + (uint32_t)ndirs;
	uint64_t rino, dino = 0;

	cr_assert_eq(tree_alloc_ino(t, &a.ino), 0);
	rino = a.ino;
	tree_batch_put_node(t, b, root, &a, NULL);
	parent_batch_put(t, b, a.ino, TREE_ROOT_INO, root);
	cr_assert_eq(tree_batch_dir_touch(t, b, "/", 1, tree_now_ns()), 0);
	for (size_t i = 0; i < n; i++) {
		if (i % 1000 == 0) {
			a.mode = S_IFDIR | 0755;
			a.nlink = 2;
			cr_assert_eq(tree_alloc_ino(t, &a.ino), 0);
			dino = a.ino;
			snprintf(p, sizeof(p), "%s/d%04zu", root, i / 1000);
			tree_batch_put_node(t, b, p, &a, NULL);
			parent_batch_put(t, b, a.ino, rino, p);
		}
		a.mode = S_IFREG | 0644;
		a.nlink = 1;
		a.size = 0;
		cr_assert_eq(tree_alloc_ino(t, &a.ino), 0);
		snprintf(p, sizeof(p), "%s/d%04zu/file-%07zu", root, i / 1000,
			 i);
		tree_batch_put_node(t, b, p, &a, NULL);
		parent_batch_put(t, b, a.ino, dino, p);
		if (kv_batch_count(b) + 3 >
			kv_limits(t->store->kv)->batch_ops ||
		    kv_batch_count(b) >= 10000) {
			cr_assert_eq(tree_commit(t, b), 0);
			kv_batch_clear(b);
		}
	}
	cr_assert_eq(tree_commit(t, b), 0);
	kv_batch_free(b);
	sbuf_release(&k);
	sbuf_release(&v);
}

Test(journal, rewrite_rate_printout, .init = tu_setup, .fini = tu_teardown,
     .timeout = 300)
{
	static const size_t sizes[] = {1000, 10000, 100000};
	char src[32], dst[32];

	for (size_t i = 0; i < 3; i++) {
		struct timespec t0, t1;
		size_t keys;
		double s;

		snprintf(src, sizeof(src), "/r%zu", sizes[i]);
		snprintf(dst, sizeof(dst), "/m%zu", sizes[i]);
		raw_branch(T, src, sizes[i]);
		keys = subtree_keys(T, src);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		cr_assert_eq(tree_rename(T, src, dst, 0, NULL), 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		s = (double)(t1.tv_sec - t0.tv_sec) +
		    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		cr_assert_eq(subtree_keys(T, dst), keys);
		cr_assert_eq(subtree_keys(T, src), 0);
		fprintf(stderr,
			"journal rewrite: %7zu entries in %.3f s = %.0f "
			"entries/s\n",
			keys, s, (double)keys / s);
	}
	assert_fsck_clean(T);
}
