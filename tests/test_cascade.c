/*
 * test_cascade.c - whole-branch operations (store/branch_i.h: token.c,
 * walk.c, rm.c, rm_batch.c, clone.c, move.c): rm -r, cp -r and mv, in one go and in budgeted slices (which must end equal to one go),
 * across drives, after a crash in the middle (fork + PATHFS_CRASH_AFTER_BATCHES
 * then resume), and resume tokens that are truncated, forged or meant for
 * another operation, path or drive (rejected, nothing changed).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "drive_i.h"
#include "branchutil.h"
#include "testutil.h"

#define T tu_tree

/* ---- helpers ------------------------------------------------------------ */
/* ---- helpers of this file ---------------------------------------------- */

static long ceil_div(size_t a, size_t b)
{
	return (long)((a + b - 1) / b);
}

static void release(struct tree_op_result *r)
{
	for (size_t i = 0; i < r->nfailures; i++)
		cr_log_info("failure: %s", r->failures[i]);
	tree_op_result_release(r);
}

/* Fresh store with small batches, neighbours and the branch /docs. Returns
 * the number of nodes of the branch, /docs included. */
static size_t setup_branch(size_t batch, size_t bytes, int n)
{
	reopen_opts(batch, bytes);
	make_neighbours(T);
	tu_mkdir(T, "/dest");
	return build(T, "/docs", n) + 1;
}

/* All inode numbers under @root of @t. */
static size_t inos_of(struct tree *t, const char *root, uint64_t *out,
		      size_t max)
{
	struct tree_scan *sc;
	struct tree_attr a;
	const char *p;
	size_t n = 0;

	cr_assert_eq(tree_lookup(t, root, &a), 0);
	out[n++] = a.ino;
	cr_assert_eq(tree_scan_open(&sc, t, root), 0);
	while (tree_scan_next(sc, &p, &a) == 1 && n < max)
		out[n++] = a.ino;
	tree_scan_free(sc);
	return n;
}

/* Runs @op in slices of @max until it finishes; returns the number of calls
 * and adds up processed. */
enum op { RM, CP, MV };

static int run_op(enum op op, struct tree *t, const char *src, struct tree *dt,
		  const char *dst, uint64_t max, const char *resume,
		  struct tree_op_result *r)
{
	switch (op) {
	case RM:
		return tree_rm_r(t, src, max, resume, 0, r);
	case CP:
		return tree_cp_r(t, src, dt, dst, max, resume, r);
	case MV:
		return tree_mv(t, src, dt, dst, max, resume, r);
	}
	return -EINVAL;
}

static int slices(enum op op, struct tree *t, const char *src, struct tree *dt,
		  const char *dst, uint64_t max, uint64_t *processed,
		  bool fsck_between)
{
	struct tree_op_result r;
	char *token = NULL;
	int calls = 0, rc;

	*processed = 0;
	do {
		rc = run_op(op, t, src, dt, dst, max, token, &r);
		if (rc || r.failed)
			release(&r);
		cr_assert_eq(rc, 0, "call %d: %s", calls, strerror(-rc));
		cr_assert_eq(r.failed, 0);
		cr_assert_leq(r.processed, max);
		*processed += r.processed;
		free(token);
		token = r.token ? strdup(r.token) : NULL;
		if (token) {
			cr_assert_eq(r.processed, max, "stopped early");
			for (const char *c = token; *c; c++)
				cr_assert(*c > ' ' && *c < 0x7f,
					  "token not printable");
		}
		release(&r);
		calls++;
		if (fsck_between)
			assert_fsck_clean(t);
		cr_assert_lt(calls, 100000);
	} while (token);
	return calls;
}

/* ---- rm -r ------------------------------------------------------------- */

Test(cascade, rm_r_one_shot, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_op_result r;
	struct tree_attr a;
	char *outside, *outside2;
	size_t nodes = setup_branch(8, 0, 30);

	/* a hard link from outside into the branch keeps its inode alive */
	cr_assert_eq(tree_link(T, "/docs/f000", "/outside-link", NULL), 0);
	outside = snap_outside(T, "/docs", "/outside-link");
	cr_assert_eq(tree_rm_r(T, "/docs", 0, NULL, 0, &r), 0);
	cr_assert_eq(r.processed, nodes, "%llu of %zu",
		     (unsigned long long)r.processed, nodes);
	cr_assert_eq(r.failed, 0);
	cr_assert_null(r.token);
	release(&r);
	assert_gone(T, "/docs");
	outside2 = snap_outside(T, "/docs", "/outside-link");
	cr_assert_str_eq(outside2, outside);
	cr_assert_eq(tree_lookup(T, "/outside-link", &a), 0);
	cr_assert_eq(a.nlink, 1);
	assert_no_journal(T);
	assert_fsck_clean(T);
	free(outside);
	free(outside2);
}

Test(cascade, rm_r_errors_file_and_root, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_op_result r;

	tu_mkfile(T, "/f", "x", 1);
	cr_assert_eq(tree_rm_r(T, "/", 0, NULL, 0, &r), -EINVAL);
	release(&r);
	cr_assert_eq(tree_rm_r(T, "/missing", 0, NULL, 0, &r), -ENOENT);
	release(&r);
	cr_assert_eq(tree_rm_r(T, "bad", 0, NULL, 0, &r), -EINVAL);
	release(&r);
	cr_assert_eq(tree_rm_r(T, "/f", 0, NULL, 0, &r), 0);
	cr_assert_eq(r.processed, 1);
	release(&r);
	assert_gone(T, "/f");
	assert_fsck_clean(T);
}

/*
 * In a child: runs @op once with budget @first (its token goes to the parent
 * through a pipe), then resumes it with PATHFS_CRASH_AFTER_BATCHES=@n until
 * the hook kills it. The parent reopens the store and resumes from the token
 * it got, which is older than what the child did.
 */
static char *crash_mid_op(enum op op, const char *src, const char *ddrive,
			  const char *dst, uint64_t first, long n, size_t batch,
			  size_t bytes)
{
	int fds[2], status;
	char buf[8192];
	ssize_t got, len = 0;
	pid_t pid;

	store_close(tu_store);
	tu_store = NULL;
	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		struct store_options o = {.rename_batch = batch,
					  .rename_bytes = bytes};
		struct tree_op_result r;
		struct store *s;
		struct tree *t, *dt = NULL;
		char v[32];

		close(fds[0]);
		if (store_open(&s, tu_dir, &o) || store_drive(s, "main", &t))
			_exit(10);
		if (ddrive && store_drive(s, ddrive, &dt))
			_exit(10);
		if (run_op(op, t, src, dt, dst, first, NULL, &r) || !r.token)
			_exit(11);
		if (write(fds[1], r.token, strlen(r.token)) < 0)
			_exit(12);
		close(fds[1]);
		snprintf(v, sizeof(v), "%ld", n);
		setenv("PATHFS_CRASH_AFTER_BATCHES", v, 1);
		run_op(op, t, src, dt, dst, 0, r.token, &r);
		_exit(13); /* not killed */
	}
	close(fds[1]);
	while ((got = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += got;
	close(fds[0]);
	buf[len] = '\0';
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	/* killed, or (N past its last batch) finished: exit 13 */
	cr_assert((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
		      (WIFEXITED(status) && WEXITSTATUS(status) == 13),
		  "child status %#x", status);
	cr_assert_gt(len, 0);
	reopen_opts(batch, bytes);
	return strdup(buf);
}

/* Resumes @op from @token until done. */
static void finish_op(enum op op, struct tree *t, const char *src,
		      struct tree *dt, const char *dst, const char *token,
		      uint64_t max)
{
	struct tree_op_result r;
	char *tok = strdup(token);
	int rc;

	while (tok) {
		rc = run_op(op, t, src, dt, dst, max, tok, &r);
		if (rc || r.failed)
			release(&r);
		cr_assert_eq(rc, 0, "resume: %s", strerror(-rc));
		cr_assert_eq(r.failed, 0);
		free(tok);
		tok = r.token ? strdup(r.token) : NULL;
		release(&r);
	}
}

Test(cascade, rm_r_crash_then_resume, .init = tu_setup, .fini = tu_teardown)
{
	for (long n = 0; n < 6; n++) {
		char *outside, *outside2, *token;

		tu_teardown();
		tu_setup();
		setup_branch(4, 0, 30);
		outside = snap_outside(T, "/docs", NULL);
		token = crash_mid_op(RM, "/docs", NULL, NULL, 7, n, 4, 0);
		assert_fsck_clean(T);
		finish_op(RM, T, "/docs", NULL, NULL, token, 5);
		assert_gone(T, "/docs");
		outside2 = snap_outside(T, "/docs", NULL);
		cr_assert_str_eq(outside2, outside, "N=%ld", n);
		assert_fsck_clean(T);
		free(outside);
		free(outside2);
		free(token);
	}
}

/* ---- rm -r of a large branch: one scan, one batch ----------------------- */

/*
 * A branch past the walk's threshold (64 descendants) whose inodes are not
 * one run: build() (one run, with a hard-link pair inside and xattrs on a
 * folder) and then files of the branch created in alternation with files
 * outside it (their inode numbers sit between the branch's), plus a link
 * from outside into the branch. Returns the nodes of the branch.
 */
static size_t setup_big_branch(size_t batch)
{
	char p[64];
	size_t nodes = setup_branch(batch, 0, 90);
	struct tree_attr a;

	tu_mkdir(T, "/mid");
	for (int i = 0; i < 40; i++) {
		snprintf(p, sizeof(p), "/docs/sub/m%03d", i);
		mkfile_n(T, p, (size_t)(i * 997) % 70000, i);
		nodes++;
		if (i % 4 == 0) {
			snprintf(p, sizeof(p), "/mid/o%03d", i);
			mkfile_n(T, p, 100 + (size_t)i, i);
			cr_assert_eq(tree_lookup(T, p, &a), 0);
			cr_assert_eq(
			    tree_setxattr(T, p, a.ino, "user.o", "v", 1, 0), 0);
		}
	}
	cr_assert_eq(tree_link(T, "/docs/f000", "/outside-link", NULL), 0);
	return nodes;
}

/* Runs tree_rm_r in a child that the crash hook kills after @n batches;
 * returns true if it was killed (false: it finished first). */
static bool rm_crash_child_bytes(const char *path, long n, size_t batch,
				 size_t bytes)
{
	int status;
	pid_t pid;

	store_close(tu_store);
	tu_store = NULL;
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		struct store_options o = {.rename_batch = batch,
					  .rename_bytes = bytes};
		struct tree_op_result r;
		struct store *s;
		struct tree *t;
		char v[32];

		if (store_open(&s, tu_dir, &o) || store_drive(s, "main", &t))
			_exit(10);
		snprintf(v, sizeof(v), "%ld", n);
		setenv("PATHFS_CRASH_AFTER_BATCHES", v, 1);
		if (tree_rm_r(t, path, 0, NULL, 0, &r))
			_exit(11);
		_exit(13);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
		      (WIFEXITED(status) && WEXITSTATUS(status) == 13),
		  "child status %#x", status);
	reopen_opts(batch, bytes);
	return WIFSIGNALED(status);
}

static bool rm_crash_child(const char *path, long n, size_t batch)
{
	return rm_crash_child_bytes(path, n, batch, 0);
}

/*
 * rm -r sizes its batches by what they hold, not by their nodes' paths: 40
 * files with 40 xattrs of 255-byte names each (~11 KiB of keys to delete per
 * file, for a path of 6 bytes) under a byte bound of 32 KiB take one batch per
 * three files, far below the entry bound; a crash among them leaves a branch
 * that a second rm -r finishes.
 */
Test(cascade, rm_r_batches_are_sized_by_bytes, .init = tu_setup,
     .fini = tu_teardown)
{
	const size_t bytes = 32 << 10;
	char p[32], xn[TREE_XATTR_NAME_MAX + 1];
	struct tree_op_result r;
	struct tree_attr a;
	char *outside, *outside2;

	reopen_opts(1000, bytes);
	cr_assert_eq(
	    tree_mknode(T, "/keep", S_IFREG | 0644, 0, 0, 0, NULL, NULL), 0);
	tu_mkdir(T, "/x");
	memset(xn, 'n', sizeof(xn) - 1);
	xn[sizeof(xn) - 1] = '\0';
	memcpy(xn, "user.", 5);
	for (int f = 0; f < 40; f++) {
		snprintf(p, sizeof(p), "/x/f%02d", f);
		tu_mkfile(T, p, "data", 4);
		cr_assert_eq(tree_lookup(T, p, &a), 0);
		for (int i = 0; i < 40; i++) {
			xn[5] = (char)('0' + i / 10);
			xn[6] = (char)('0' + i % 10);
			cr_assert_eq(tree_setxattr(T, p, a.ino, xn, "v", 1, 0),
				     0);
		}
	}
	outside = snap_outside(T, "/x", "/keep");
	/* 1,600 xattr keys of ~290 bytes: 14 batches of 32 KiB, then /x;
	 * counting paths alone gives one batch and /x */
	cr_assert(rm_crash_child_bytes("/x", 8, 1000, bytes),
		  "rm -r of the files took fewer than 9 batches");
	cr_assert_eq(tree_lookup(T, "/x", &a), 0, "the crash left the top");
	cr_assert_eq(tree_rm_r(T, "/x", 0, NULL, 0, &r), 0);
	cr_assert_eq(r.failed, 0);
	release(&r);
	assert_gone(T, "/x");
	outside2 = snap_outside(T, "/x", "/keep");
	cr_assert_str_eq(outside2, outside);
	cr_assert_eq(kind_keys(T, KEY_XATTR), 0);
	assert_no_journal(T);
	assert_fsck_clean(T);
	free(outside);
	free(outside2);
}

/*
 * rm -r of /docs in one call, which must process @nodes nodes: the branch is
 * gone; files outside, whose inodes lie between the branch's, keep their
 * content and xattrs; /outside-link, a hard link into the branch, keeps its
 * inode with one link; no orphan or journal record is left, and fsck (no
 * content, xattr or INODE key of a freed inode) is clean.
 */
static void rm_r_whole(size_t nodes)
{
	struct tree_op_result r;
	struct tree_attr a;
	char *outside = snap_outside(T, "/docs", "/outside-link"), *outside2;

	cr_assert_eq(tree_rm_r(T, "/docs", 0, NULL, 0, &r), 0);
	cr_assert_eq(r.processed, nodes, "%llu of %zu",
		     (unsigned long long)r.processed, nodes);
	cr_assert_eq(r.failed, 0);
	cr_assert_null(r.token);
	release(&r);
	assert_gone(T, "/docs");
	outside2 = snap_outside(T, "/docs", "/outside-link");
	cr_assert_str_eq(outside2, outside);
	cr_assert_eq(tree_lookup(T, "/outside-link", &a), 0);
	cr_assert_eq(a.nlink, 1);
	cr_assert_eq(kind_keys(T, KEY_ORPHAN), 0);
	assert_no_journal(T);
	assert_fsck_clean(T);
	free(outside);
	free(outside2);
}

Test(cascade, rm_r_large_branch_one_shot, .init = tu_setup, .fini = tu_teardown)
{
	rm_r_whole(setup_big_branch(8));
	cr_assert_eq(kind_keys(T, KEY_INODE), 1); /* /outside-link's */
}

/*
 * rm -r of a branch past one slice of range deletes on an engine that wants
 * them sliced (kv_range_keys(): etcd, and RocksDB in strict mode, the
 * rm_strict... cascade_strict suite; unbounded RocksDB keeps one batch):
 * nested folders, names that sort before '/', files with content and
 * xattrs, symlinks, FIFOs, hard links inside and from outside. Each slice
 * leaves the drive whole, so the end is the same as one batch: every node
 * processed once, the branch gone, nothing outside changed, fsck clean.
 */
Test(cascade, rm_r_past_a_range_slice, .init = tu_setup, .fini = tu_teardown)
{
	size_t nodes = build(T, "/docs", 1400);

	cr_assert_gt(nodes, KV_ETCD_TXN_OPS * KV_RANGE_SLICE_OPS / 2,
		     "the branch must not fit one slice: %zu nodes", nodes);
	cr_assert_eq(tree_link(T, "/docs/f000", "/outside-link", NULL), 0);
	rm_r_whole(nodes + 1);
}

/*
 * rm -r of /docs in slices of each budget of @maxes[0..2], each on a fresh
 * store with the small (setup_branch) or the large (setup_big_branch, which
 * has a hard link from /outside-link) branch: every node processed once, one
 * call per slice, the branch gone and nothing outside it changed.
 */
static void rm_in_slices(bool big, const uint64_t maxes[3])
{
	const char *link = big ? "/outside-link" : NULL;

	for (int i = 0; i < 3; i++) {
		char *outside, *outside2;
		uint64_t processed;
		size_t nodes;
		int calls;

		tu_teardown();
		tu_setup();
		nodes = big ? setup_big_branch(4) : setup_branch(4, 0, 25);
		outside = snap_outside(T, "/docs", link);
		calls = slices(RM, T, "/docs", NULL, NULL, maxes[i], &processed,
			       true);
		cr_assert_eq(processed, nodes);
		cr_assert_eq(calls, ceil_div(nodes, maxes[i]));
		assert_gone(T, "/docs");
		outside2 = snap_outside(T, "/docs", link);
		cr_assert_str_eq(outside2, outside, "max %llu",
				 (unsigned long long)maxes[i]);
		free(outside);
		free(outside2);
	}
}

Test(cascade, rm_r_in_slices_equals_one_shot, .init = tu_setup,
     .fini = tu_teardown)
{
	static const uint64_t maxes[] = {1, 5, 13};

	rm_in_slices(false, maxes);
}

Test(cascade, rm_r_large_branch_in_slices_equals_one_shot, .init = tu_setup,
     .fini = tu_teardown)
{
	/* the last slices fit and go in one batch, the first ones walk */
	static const uint64_t maxes[] = {50, 100, 170};

	rm_in_slices(true, maxes);
}

/*
 * A crash in the middle of an rm -r of a large branch: the nodes removed one
 * by one (the two links of hard-linked inodes) may be gone, everything else
 * is all there or all gone, never half: the rest is one atomic batch. The
 * store is clean and a second run finishes.
 */
Test(cascade, rm_r_large_branch_crash_is_all_or_nothing, .init = tu_setup,
     .fini = tu_teardown)
{
	bool killed = true;

	for (long n = 0; killed; n++) {
		char *outside, *outside2, *before, *after;
		struct tree_op_result r;
		size_t len = 0;

		cr_assert_lt(n, 10);
		tu_teardown();
		tu_setup();
		setup_big_branch(4);
		outside = snap_outside(T, "/docs", "/outside-link");
		/* the branch without its hard-linked nodes */
		cr_assert_eq(tree_unlink(T, "/outside-link", 0, NULL), 0);
		before = snap(T, "/docs", true);
		cr_assert_eq(tree_link(T, "/docs/f000", "/outside-link", NULL),
			     0);
		killed = rm_crash_child("/docs", n, 4);
		assert_fsck_clean(T);
		if (tree_lookup(T, "/docs", &(struct tree_attr){0}) == 0) {
			cr_assert(killed);
			/* drop what the one-by-one removals may have left */
			tree_unlink(T, "/outside-link", 0, NULL);
			tree_unlink(T, "/docs/f000", 0, NULL);
			tree_unlink(T, "/docs/sub/big", 0, NULL);
			tree_unlink(T, "/docs/s p/hardlink", 0, NULL);
			after = snap(T, "/docs", true);
			/* every other node is still there, unchanged (the
			 * folders that held a removed link have new times) */
			for (char *line = strtok(before, "\n"); line;
			     line = strtok(NULL, "\n")) {
				static const char *skip[] = {
				    "||",      "|/sub|",     "|/s p|",
				    "|/f000|", "|/sub/big|", "|/s p/hardlink|"};
				bool skipped = false;

				for (size_t i = 0; i < 6; i++)
					if (strstr(line, skip[i]))
						skipped = true;
				if (!skipped)
					cr_assert(strstr(after, line),
						  "N=%ld: lost %s", n, line);
			}
			len = strlen(after);
			free(after);
			cr_assert_gt(len, 0);
			cr_assert_eq(tree_rm_r(T, "/docs", 0, NULL, 0, &r), 0);
			release(&r);
		}
		assert_gone(T, "/docs");
		outside2 = snap_outside(T, "/docs", "/outside-link");
		cr_assert_str_eq(outside2, outside, "N=%ld", n);
		assert_fsck_clean(T);
		free(before);
		free(outside);
		free(outside2);
	}
}

/* The open check of the tests: one inode is open. */
static uint64_t open_ino;
static int open_calls;

static bool test_is_open(void *ctx, uint64_t ino)
{
	cr_assert_eq(ctx, &open_ino);
	open_calls++;
	return ino == open_ino;
}

/*
 * With TREE_KEEP_ORPHAN and an open check (the daemon's way), only the open
 * file becomes an orphan and stays readable; the others are freed at once,
 * in the walk (a small branch) and in the one batch (a large one).
 */
Test(cascade, rm_r_keep_orphan_frees_unopened_files_with_an_open_check,
     .init = tu_setup, .fini = tu_teardown)
{
	for (int big = 0; big < 2; big++) {
		struct tree_op_result r;
		struct tree_attr a, b;
		char buf[16], *outside, *outside2;
		size_t got;

		tu_teardown();
		tu_setup();
		if (big)
			setup_big_branch(8);
		else
			setup_branch(8, 0, 12);
		outside = snap_outside(T, "/docs", "/outside-link");
		cr_assert_eq(tree_lookup(T, "/docs/sub/f-001", &a), 0);
		cr_assert_eq(tree_lookup(T, "/docs/f.007", &b), 0);
		open_ino = a.ino;
		open_calls = 0;
		tree_set_open_check(T, test_is_open, &open_ino);
		cr_assert_eq(
		    tree_rm_r(T, "/docs", 0, NULL, TREE_KEEP_ORPHAN, &r), 0);
		tree_set_open_check(T, NULL, NULL);
		cr_assert_eq(r.failed, 0);
		cr_assert_null(r.token);
		release(&r);
		cr_assert_gt(open_calls, 0);
		assert_gone(T, "/docs");
		/* the open one: an orphan, readable by its number */
		cr_assert_eq(kind_keys(T, KEY_ORPHAN), 1, "big %d", big);
		cr_assert_eq(tree_getattr(T, NULL, a.ino, &a), 0);
		cr_assert_eq(
		    tree_read(T, NULL, a.ino, 0, sizeof(buf), buf, &got), 0);
		cr_assert_eq(got, a.size < sizeof(buf) ? a.size : sizeof(buf));
		/* another one: freed */
		cr_assert_eq(tree_getattr(T, NULL, b.ino, &b), -ENOENT);
		outside2 = snap_outside(T, "/docs", "/outside-link");
		cr_assert_str_eq(outside2, outside);
		assert_fsck_clean(T);
		cr_assert_eq(tree_reclaim(T, a.ino), 0);
		cr_assert_eq(kind_keys(T, KEY_ORPHAN), 0);
		assert_fsck_clean(T);
		free(outside);
		free(outside2);
	}
}

/*
 * Every drive of a process keeps its own open check (it lives in the drive's
 * handle): the 20th drive with one frees its unopened files just as the
 * first does (a table of 16 slots once left it without a check, so every
 * removed file became an orphan).
 */
Test(cascade, open_check_of_each_of_many_drives, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree *d[20];
	struct tree_op_result r;
	struct tree_attr a, b;
	char name[16];

	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "d%02d", i);
		cr_assert_eq(store_drive_create(tu_store, name, 0, 0), 0);
		cr_assert_eq(store_drive(tu_store, name, &d[i]), 0);
		tree_set_open_check(d[i], test_is_open, &open_ino);
	}
	for (int i = 0; i < 20; i += 19) {
		tu_mkdir(d[i], "/docs");
		tu_mkfile(d[i], "/docs/open", "held", 4);
		tu_mkfile(d[i], "/docs/shut", "free", 4);
		cr_assert_eq(tree_lookup(d[i], "/docs/open", &a), 0);
		cr_assert_eq(tree_lookup(d[i], "/docs/shut", &b), 0);
		open_ino = a.ino;
		cr_assert_eq(
		    tree_rm_r(d[i], "/docs", 0, NULL, TREE_KEEP_ORPHAN, &r), 0);
		cr_assert_eq(r.failed, 0);
		release(&r);
		assert_gone(d[i], "/docs");
		cr_assert_eq(kind_keys(d[i], KEY_ORPHAN), 1, "drive %d", i);
		cr_assert_eq(tree_getattr(d[i], NULL, a.ino, &a), 0);
		cr_assert_eq(tree_getattr(d[i], NULL, b.ino, &b), -ENOENT,
			     "drive %d", i);
	}
	for (int i = 0; i < 20; i++)
		tree_set_open_check(d[i], NULL, NULL);
}

/* The delete half of a move across drives keeps open files as orphans too
 * (it used to free their content while they were open). */
Test(cascade, mv_across_drives_keeps_open_files_of_the_source, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_op_result r;
	struct tree_attr a, b;
	struct tree *o;
	char *src0, *d;
	char buf[16];
	size_t got;

	cr_assert_eq(store_drive_create(tu_store, "other", 0, 0), 0);
	setup_big_branch(8);
	cr_assert_eq(store_drive(tu_store, "other", &o), 0);
	src0 = snap(T, "/docs", false);
	cr_assert_eq(tree_lookup(T, "/docs/sub/m007", &a), 0);
	cr_assert_eq(tree_lookup(T, "/docs/sub/m008", &b), 0);
	open_ino = a.ino;
	tree_set_open_check(T, test_is_open, &open_ino);
	cr_assert_eq(tree_mv(T, "/docs", o, "/m", 0, NULL, &r), 0);
	tree_set_open_check(T, NULL, NULL);
	cr_assert_eq(r.failed, 0);
	cr_assert_null(r.token);
	release(&r);
	assert_gone(T, "/docs");
	d = snap(o, "/m", false);
	/* the link from outside makes f000's nlink differ: compare the rest */
	cr_assert_eq(strlen(d), strlen(src0));
	cr_assert_eq(kind_keys(T, KEY_ORPHAN), 1);
	cr_assert_eq(tree_read(T, NULL, a.ino, 0, sizeof(buf), buf, &got), 0);
	cr_assert_eq(got, sizeof(buf));
	cr_assert_eq(tree_getattr(T, NULL, b.ino, &b), -ENOENT);
	assert_fsck_clean(T);
	assert_fsck_clean(o);
	free(src0);
	free(d);
}

/* ---- cp -r -------------------------------------------------------------- */

static void assert_disjoint_inos(struct tree *t, const char *a, struct tree *dt,
				 const char *b)
{
	static uint64_t x[4096], y[4096];
	size_t nx = inos_of(t, a, x, 4096), ny = inos_of(dt, b, y, 4096);

	for (size_t i = 0; i < nx; i++)
		for (size_t j = 0; j < ny; j++)
			if (t == dt)
				cr_assert_neq(x[i], y[j], "inode %llu shared",
					      (unsigned long long)x[i]);
}

Test(cascade, cp_r_one_shot_same_drive, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_op_result r;
	struct tree_attr a, b;
	char *src0, *src1, *dst;
	size_t nodes = setup_branch(8, 0, 30);

	src0 = snap(T, "/docs", false);
	cr_assert_eq(tree_cp_r(T, "/docs", T, "/dest/copy", 0, NULL, &r), 0);
	cr_assert_eq(r.processed, nodes);
	cr_assert_null(r.token);
	release(&r);
	dst = snap(T, "/dest/copy", false);
	src1 = snap(T, "/docs", false);
	cr_assert_str_eq(dst, src0);
	cr_assert_str_eq(src1, src0);
	assert_disjoint_inos(T, "/docs", T, "/dest/copy");
	/* the hard link inside the branch is a hard link in the clone */
	cr_assert_eq(tree_lookup(T, "/dest/copy/sub/big", &a), 0);
	cr_assert_eq(tree_lookup(T, "/dest/copy/s p/hardlink", &b), 0);
	cr_assert_eq(a.ino, b.ino);
	cr_assert_eq(a.nlink, 2);
	/* the clone's content is its own */
	cr_assert_eq(
	    tree_write(T, "/dest/copy/sub/big", a.ino, 0, "ZZ", 2, false, NULL),
	    0);
	free(src1);
	src1 = snap(T, "/docs", false);
	cr_assert_str_eq(src1, src0);
	/* errors */
	cr_assert_eq(tree_cp_r(T, "/docs", T, "/dest/copy", 0, NULL, &r),
		     -EEXIST);
	release(&r);
	cr_assert_eq(tree_cp_r(T, "/docs", T, "/docs/sub/in", 0, NULL, &r),
		     -EINVAL);
	release(&r);
	cr_assert_eq(tree_cp_r(T, "/nope", T, "/x", 0, NULL, &r), -ENOENT);
	release(&r);
	cr_assert_eq(tree_cp_r(T, "/docs", T, "/nope/x", 0, NULL, &r), -ENOENT);
	release(&r);
	assert_no_journal(T);
	assert_fsck_clean(T);
	free(src0);
	free(src1);
	free(dst);
}

/* Gives @path @n xattrs user.kNNN. */
static void many_xattrs(const char *path, int n)
{
	struct tree_attr a;
	char k[32], v[16];

	cr_assert_eq(tree_lookup(T, path, &a), 0);
	for (int i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "user.k%03d", i);
		snprintf(v, sizeof(v), "v%d", i);
		cr_assert_eq(tree_setxattr(T, path, a.ino, k, v, strlen(v), 0),
			     0);
	}
}

/* cp -r of @from to @to copies its @n nodes, the copy equal to the source,
 * no journal record left, fsck clean. */
static void cp_r_equal(const char *from, const char *to, uint64_t n)
{
	struct tree_op_result r;
	char *src = snap(T, from, false), *dst;

	cr_assert_eq(tree_cp_r(T, from, T, to, 0, NULL, &r), 0);
	cr_assert_eq(r.processed, n);
	cr_assert_eq(r.failed, 0);
	release(&r);
	dst = snap(T, to, false);
	cr_assert_str_eq(dst, src);
	assert_no_journal(T);
	assert_fsck_clean(T);
	free(src);
	free(dst);
}

/*
 * Each file copied puts its node and its PARENT record (two operations) and
 * its blocks: a batch counted one operation a node passed etcd's 128
 * (strict mode: E2BIG) once ~40 files with content were in it.
 */
Test(cascade, cp_r_of_files_with_content_fits_the_engine, .init = tu_setup,
     .fini = tu_teardown)
{
	char p[64];

	tu_mkdir(T, "/w");
	for (int i = 0; i < 150; i++) {
		snprintf(p, sizeof(p), "/w/f%03d", i);
		tu_mkfile(T, p, "0123456789abcdef", 16);
	}
	cp_r_equal("/w", "/w2", 151);
}

/*
 * A file's blocks and xattrs go into the batch the nodes before it filled:
 * a batch was committed by its count after a node, and by bytes only
 * within a file, so 59 empty files (118 operations) and then a file of 11
 * blocks passed etcd's 128 (strict mode: E2BIG, the copy stopped half
 * made), and so did any file of 200 xattrs. The batch now fills to the
 * room the kv seam counts, a file's keys one at a time.
 */
Test(cascade, cp_r_fills_batches_to_the_engine_limit, .init = tu_setup,
     .fini = tu_teardown)
{
	static char blob[20 << 16];
	char p[64];
	int i;

	for (i = 0; i < (int)sizeof(blob); i++)
		blob[i] = (char)(i * 7 + i / 251);
	tu_mkdir(T, "/w");
	for (i = 0; i < 59; i++) {
		snprintf(p, sizeof(p), "/w/a%02d", i);
		tu_mkfile(T, p, "", 0);
	}
	tu_mkfile(T, "/w/b", blob, sizeof(blob));
	tu_mkfile(T, "/w/c", "x", 1);
	many_xattrs("/w/c", 200);
	for (i = 0; i < 59; i++) {
		snprintf(p, sizeof(p), "/w/d%02d", i);
		tu_mkfile(T, p, "0123456789abcdef", 16);
	}
	cp_r_equal("/w", "/w2", 121);
}

/*
 * rm -r took each file's xattrs into its batch of files, however many
 * (strict mode: a file of 200 xattrs, E2BIG, nothing removed); an unlink
 * and an orphan's reclaim drop them with the inode, which must fit one
 * commit: every one of these ends with nothing left and fsck clean.
 */
Test(cascade, files_with_many_xattrs_go_whole, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_op_result r;
	struct tree_attr a;
	uint64_t orphan = 0;
	char p[64];

	tu_mkdir(T, "/x");
	for (int i = 0; i < 10; i++) {
		snprintf(p, sizeof(p), "/x/f%d", i);
		tu_mkfile(T, p, "data", 4);
	}
	many_xattrs("/x/f3", 200);
	many_xattrs("/x/f7", 17);
	cr_assert_eq(tree_rm_r(T, "/x", 0, NULL, 0, &r), 0);
	cr_assert_eq(r.failed, 0);
	cr_assert_eq(r.processed, 11);
	release(&r);
	cr_assert_eq(tree_lookup(T, "/x", &a), -ENOENT);

	tu_mkfile(T, "/u", "data", 4);
	many_xattrs("/u", 300);
	cr_assert_eq(tree_unlink(T, "/u", 0, NULL), 0);
	tu_mkfile(T, "/o", "data", 4);
	many_xattrs("/o", 300);
	cr_assert_eq(tree_unlink(T, "/o", TREE_KEEP_ORPHAN, &orphan), 0);
	cr_assert_neq(orphan, 0);
	cr_assert_eq(tree_reclaim(T, orphan), 0);
	tu_mkfile(T, "/r1", "new", 3);
	tu_mkfile(T, "/r2", "old", 3);
	many_xattrs("/r2", 300);
	cr_assert_eq(tree_rename(T, "/r1", "/r2", 0, NULL), 0);
	cr_assert_eq(tree_unlink(T, "/r2", 0, NULL), 0);
	assert_no_journal(T);
	assert_fsck_clean(T);
	cr_assert_eq(kind_keys(T, KEY_XATTR), 0, "xattrs left");
	cr_assert_eq(kind_keys(T, KEY_ORPHAN), 0, "orphans left");
}

Test(cascade, cp_r_link_to_outside_gets_one_link, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_op_result r;
	struct tree_attr a;

	tu_mkdir(T, "/b");
	tu_mkfile(T, "/out", "shared", 6);
	cr_assert_eq(tree_link(T, "/out", "/b/l", NULL), 0);
	cr_assert_eq(tree_cp_r(T, "/b", T, "/c", 0, NULL, &r), 0);
	release(&r);
	cr_assert_eq(tree_lookup(T, "/c/l", &a), 0);
	cr_assert_eq(a.nlink, 1);
	cr_assert_eq(a.size, 6);
	cr_assert_eq(tree_lookup(T, "/out", &a), 0);
	cr_assert_eq(a.nlink, 2);
	assert_fsck_clean(T);
}

Test(cascade, cp_r_in_slices_and_across_drives, .init = tu_setup,
     .fini = tu_teardown)
{
	static const uint64_t maxes[] = {1, 4, 9};
	struct tree *o;
	char *src0;
	size_t nodes = setup_branch(4, 70000, 20);

	cr_assert_eq(store_drive_create(tu_store, "other", 0, 0), 0);
	cr_assert_eq(store_drive(tu_store, "other", &o), 0);
	src0 = snap(T, "/docs", false);
	for (int i = 0; i < 3; i++) {
		char dst[32], *d;
		uint64_t processed;
		int calls;

		snprintf(dst, sizeof(dst), "/copy%d", i);
		calls = slices(CP, T, "/docs", i == 2 ? o : T, dst, maxes[i],
			       &processed, false);
		cr_assert_eq(processed, nodes);
		cr_assert_geq(calls, ceil_div(nodes, maxes[i]));
		d = snap(i == 2 ? o : T, dst, false);
		cr_assert_str_eq(d, src0, "max %llu",
				 (unsigned long long)maxes[i]);
		free(d);
	}
	assert_no_journal(T);
	assert_no_journal(o);
	assert_fsck_clean(T);
	assert_fsck_clean(o);
	free(src0);
}

Test(cascade, cp_r_crash_then_resume, .init = tu_setup, .fini = tu_teardown)
{
	/* small byte batches: the 200,000-byte file spans several batches,
	 * so some crashes land in the middle of its content */
	for (long n = 0; n < 12; n++) {
		char *src0, *dst, *token;
		struct tree *o;

		tu_teardown();
		tu_setup();
		cr_assert_eq(store_drive_create(tu_store, "other", 0, 0), 0);
		setup_branch(4, 70000, 12);
		src0 = snap(T, "/docs", false);
		token = crash_mid_op(CP, "/docs", n % 2 ? "other" : "main",
				     "/copy", 5, n, 4, 70000);
		cr_assert_eq(store_drive(tu_store, "other", &o), 0);
		finish_op(CP, T, "/docs", n % 2 ? o : T, "/copy", token, 3);
		dst = snap(n % 2 ? o : T, "/copy", false);
		cr_assert_str_eq(dst, src0, "N=%ld", n);
		assert_no_journal(n % 2 ? o : T);
		assert_fsck_clean(T);
		assert_fsck_clean(o);
		free(src0);
		free(dst);
		free(token);
	}
}

/* ---- mv ----------------------------------------------------------------- */

Test(cascade, mv_within_and_across_drives, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_op_result r;
	struct tree *o;
	char *src0, *d;
	uint64_t processed;
	size_t nodes = setup_branch(4, 0, 20);

	cr_assert_eq(store_drive_create(tu_store, "other", 0, 0), 0);
	cr_assert_eq(store_drive(tu_store, "other", &o), 0);
	src0 = snap(T, "/docs", true);
	/* within a drive: the rename, inode numbers kept */
	cr_assert_eq(tree_mv(T, "/docs", T, "/dest/m", 0, NULL, &r), 0);
	cr_assert_null(r.token);
	release(&r);
	d = snap(T, "/dest/m", true);
	cr_assert_str_eq(d, src0);
	free(d);
	free(src0);
	assert_gone(T, "/docs");
	/* across drives, in slices: copied then deleted */
	src0 = snap(T, "/dest/m", false);
	slices(MV, T, "/dest/m", o, "/m", 3, &processed, false);
	cr_assert_eq(processed, 2 * nodes, "copied and removed");
	d = snap(o, "/m", false);
	cr_assert_str_eq(d, src0);
	free(d);
	assert_gone(T, "/dest/m");
	/* and back in one go */
	cr_assert_eq(tree_mv(o, "/m", T, "/back", 0, NULL, &r), 0);
	cr_assert_null(r.token);
	release(&r);
	d = snap(T, "/back", false);
	cr_assert_str_eq(d, src0);
	assert_gone(o, "/m");
	assert_no_journal(T);
	assert_no_journal(o);
	assert_fsck_clean(T);
	assert_fsck_clean(o);
	free(d);
	free(src0);
}

Test(cascade, mv_across_drives_crash_then_resume, .init = tu_setup,
     .fini = tu_teardown)
{
	for (long n = 0; n < 10; n++) {
		char *src0, *d, *token;
		struct tree *o;

		tu_teardown();
		tu_setup();
		cr_assert_eq(store_drive_create(tu_store, "other", 0, 0), 0);
		setup_branch(4, 0, 12);
		src0 = snap(T, "/docs", false);
		/* the first slice stops in the clone or (large) in the delete */
		token = crash_mid_op(MV, "/docs", "other", "/m", n < 5 ? 4 : 25,
				     n % 5, 4, 0);
		cr_assert_eq(store_drive(tu_store, "other", &o), 0);
		finish_op(MV, T, "/docs", o, "/m", token, 4);
		d = snap(o, "/m", false);
		cr_assert_str_eq(d, src0, "N=%ld", n);
		assert_gone(T, "/docs");
		assert_no_journal(T);
		assert_no_journal(o);
		assert_fsck_clean(T);
		assert_fsck_clean(o);
		free(src0);
		free(d);
		free(token);
	}
}

Test(cascade, mv_keeps_the_source_when_a_node_cannot_be_copied,
     .init = tu_setup, .fini = tu_teardown)
{
	struct tree_op_result r;
	struct sbuf k = {0};
	struct kv_batch *b = kv_batch_new(T->store->kv);
	struct tree *o;
	struct tree_attr a;

	cr_assert_eq(store_drive_create(tu_store, "other", 0, 0), 0);
	cr_assert_eq(store_drive(tu_store, "other", &o), 0);
	build(T, "/docs", 6);
	key_node(&k, "main", "/docs/sub/bad");
	kv_batch_put(b, k.buf, k.len, "\x09junk", 5);
	cr_assert_eq(tree_commit(T, b), 0);
	cr_assert_eq(tree_mv(T, "/docs", o, "/m", 0, NULL, &r), 0);
	cr_assert_eq(r.failed, 1);
	cr_assert_eq(r.nfailures, 1);
	cr_assert(strstr(r.failures[0], "/docs/sub/bad"), "%s", r.failures[0]);
	cr_assert_not_null(r.token, "stopped with a token to retry");
	release(&r);
	cr_assert_eq(tree_lookup(T, "/docs/sub/big", &a), 0, "source kept");
	kv_batch_free(b);
	sbuf_release(&k);
}

/* ---- tokens ------------------------------------------------------------- */

/*
 * Checking a token writes nothing: a token given to a drive that never
 * issued one is refused without making the drive a secret (pathfsctl's
 * refusals leave the store byte for byte as it was).
 */
Test(cascade, token_check_on_a_drive_without_a_secret_writes_nothing,
     .init = tu_setup, .fini = tu_teardown)
{
	struct tree_op_result r;
	struct tree *o;
	char *tok;

	setup_branch(4, 0, 20);
	cr_assert_eq(tree_cp_r(T, "/docs-archive", T, "/dest2", 1, NULL, &r),
		     0);
	cr_assert_not_null(r.token);
	tok = strdup(r.token);
	release(&r);
	cr_assert_eq(store_drive_create(tu_store, "other", 0, 0), 0);
	cr_assert_eq(store_drive(tu_store, "other", &o), 0);
	build(o, "/docs", 3);
	cr_assert_eq(kind_keys(o, KEY_SECRET), 0);
	cr_assert_eq(tree_cp_r(o, "/docs", o, "/dest", 0, tok, &r), -EINVAL);
	release(&r);
	cr_assert_eq(tree_rm_r(o, "/docs", 0, tok, 0, &r), -EINVAL);
	release(&r);
	cr_assert_eq(kind_keys(o, KEY_SECRET), 0, "checking made a secret");
	/* issuing one makes it */
	cr_assert_eq(tree_rm_r(o, "/docs", 1, NULL, 0, &r), 0);
	cr_assert_not_null(r.token);
	release(&r);
	cr_assert_eq(kind_keys(o, KEY_SECRET), 1);
	free(tok);
}

Test(cascade, tokens_truncated_forged_or_foreign_are_rejected, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_op_result r;
	struct tree *o;
	char *rm_tok, *cp_tok, *before, *after, *bad;
	size_t len;

	setup_branch(4, 0, 20);
	cr_assert_eq(store_drive_create(tu_store, "other", 0, 0), 0);
	cr_assert_eq(store_drive(tu_store, "other", &o), 0);
	build(o, "/docs", 3);
	cr_assert_eq(tree_rm_r(T, "/docs", 3, NULL, 0, &r), 0);
	rm_tok = strdup(r.token);
	release(&r);
	cr_assert_eq(tree_cp_r(T, "/docs-archive", T, "/dest2", 1, NULL, &r),
		     0);
	cr_assert_not_null(r.token);
	cp_tok = strdup(r.token);
	release(&r);
	before = snap(T, "/", true);
	len = strlen(rm_tok);
	bad = strdup(rm_tok);

	/* truncated, at every length */
	for (size_t cut = 0; cut < len; cut++) {
		bad[cut] = '\0';
		cr_assert_eq(tree_rm_r(T, "/docs", 0, bad, 0, &r), -EINVAL,
			     "cut at %zu", cut);
		cr_assert_eq(r.processed, 0);
		release(&r);
		bad[cut] = rm_tok[cut];
	}
	/* one character changed, anywhere */
	for (size_t i = 0; i < len; i++) {
		bad[i] = bad[i] == 'A' ? 'B' : 'A';
		cr_assert_eq(tree_rm_r(T, "/docs", 0, bad, 0, &r), -EINVAL,
			     "edit at %zu", i);
		release(&r);
		bad[i] = rm_tok[i];
	}
	/* not base64url, or a character appended */
	cr_assert_eq(tree_rm_r(T, "/docs", 0, "a b!", 0, &r), -EINVAL);
	release(&r);
	free(bad);
	if (asprintf(&bad, "%sA", rm_tok) < 0)
		cr_assert_fail();
	cr_assert_eq(tree_rm_r(T, "/docs", 0, bad, 0, &r), -EINVAL);
	release(&r);
	free(bad);
	/* another path, another drive, another operation */
	cr_assert_eq(tree_rm_r(T, "/dest", 0, rm_tok, 0, &r), -EINVAL);
	release(&r);
	cr_assert_eq(tree_rm_r(o, "/docs", 0, rm_tok, 0, &r), -EINVAL);
	release(&r);
	cr_assert_eq(tree_cp_r(T, "/docs", T, "/x", 0, rm_tok, &r), -EINVAL);
	release(&r);
	cr_assert_eq(tree_mv(T, "/dest", o, "/dest2", 0, cp_tok, &r), -EINVAL);
	release(&r);
	cr_assert_eq(tree_cp_r(T, "/docs-archive", T, "/dest3", 0, cp_tok, &r),
		     -EINVAL);
	release(&r);
	cr_assert_eq(tree_rm_r(T, "/dest", 0, cp_tok, 0, &r), -EINVAL);
	release(&r);
	after = snap(T, "/", true);
	cr_assert_str_eq(after, before, "a rejected token changed something");

	/* the genuine tokens still work */
	finish_op(RM, T, "/docs", NULL, NULL, rm_tok, 0);
	assert_gone(T, "/docs");
	finish_op(CP, T, "/docs-archive", T, "/dest2", cp_tok, 0);
	free(after);
	after = snap(T, "/dest2", false);
	free(before);
	before = snap(T, "/docs-archive", false);
	cr_assert_str_eq(after, before);
	assert_fsck_clean(T);
	free(before);
	free(after);
	free(rm_tok);
	free(cp_tok);
}

Test(cascade, rm_r_keep_orphan_then_reclaim_at_open, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_op_result r;
	struct tree_attr a;
	char buf[8];
	size_t got;

	build(T, "/docs", 12);
	cr_assert_eq(tree_lookup(T, "/docs/f000", &a), 0);
	/* the daemon's way: last links become orphans, content kept */
	cr_assert_eq(tree_rm_r(T, "/docs", 0, NULL, TREE_KEEP_ORPHAN, &r), 0);
	cr_assert_null(r.token);
	release(&r);
	assert_gone(T, "/docs");
	cr_assert_eq(tree_getattr(T, NULL, a.ino, &a), 0);
	cr_assert_eq(tree_read(T, NULL, a.ino, 0, sizeof(buf), buf, &got), 0);
	cr_assert_gt(kind_keys(T, KEY_ORPHAN), 0);
	assert_fsck_clean(T);
	/* the next open reclaims them */
	tu_reopen();
	cr_assert_eq(kind_keys(T, KEY_ORPHAN), 0);
	cr_assert_eq(tree_getattr(T, NULL, a.ino, &a), -ENOENT);
	assert_fsck_clean(T);
}

Test(cascade, cp_r_and_mv_of_a_single_file, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_op_result r;
	struct tree *o;
	char *s0, *s1;
	struct tree_attr a;

	cr_assert_eq(store_drive_create(tu_store, "other", 0, 0), 0);
	cr_assert_eq(store_drive(tu_store, "other", &o), 0);
	mkfile_n(T, "/f", 300000, 7);
	cr_assert_eq(tree_lookup(T, "/f", &a), 0);
	cr_assert_eq(tree_setxattr(T, "/f", a.ino, "user.a", "b", 1, 0), 0);
	s0 = snap(T, "/f", false);
	cr_assert_eq(tree_cp_r(T, "/f", T, "/g", 0, NULL, &r), 0);
	cr_assert_eq(r.processed, 1);
	release(&r);
	s1 = snap(T, "/g", false);
	cr_assert_str_eq(s1, s0);
	free(s1);
	cr_assert_eq(tree_mv(T, "/g", o, "/h", 0, NULL, &r), 0);
	release(&r);
	s1 = snap(o, "/h", false);
	cr_assert_str_eq(s1, s0);
	assert_gone(T, "/g");
	assert_fsck_clean(T);
	assert_fsck_clean(o);
	free(s0);
	free(s1);
}
