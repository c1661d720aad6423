/*
 * test_slices.c - big drops in slices (kv_range_keys(): etcd, and RocksDB in
 * strict mode, the slices_strict suite, which refuses a batch whose range
 * deletes cover more than a slice; without the bound, the slices suite, the
 * same calls end the same way in one batch each): a big file's blocks (unlink,
 * truncate, reclaim of an orphan, rm -r, a rename over it), rmdrive, a cp -r's
 * map of hard-linked inodes, and fsck's repairs; each with a crash between
 * slices (fork + PATHFS_CRASH_AFTER_BATCHES) that leaves the store
 * consistent, and the next open (or the token) finishing the job.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drive_i.h"
#include "journal_i.h"
#include "branchutil.h"
#include "testutil.h"

#define T tu_tree

/* ---- a big file's blocks in slices --------------------------------------- */

/*
 * On an engine that wants big range deletes sliced (kv_range_keys(): etcd,
 * and RocksDB in strict mode, which refuses a batch whose range deletes
 * cover more than a slice: the cascade_strict suite), a file's blocks go in
 * slices (content_i.h): the unlink parks the file as an orphan and drops it
 * from the end, as does a truncate and the reclaim of an orphan; rm -r
 * removes a big file that way, and sends no batch whose files' blocks pass
 * a slice. Without the bound (cascade) the same calls end the same way.
 */
#define BIG_BLOCKS 1300 /* past a slice (1,016 keys in strict mode) */

/* A file at @path of @n blocks, fallocated (stored empty). */
static uint64_t mkfalloc(const char *path, uint64_t n)
{
	struct tree_attr a;

	tu_mkfile(T, path, "", 0);
	a = tu_stat(T, path);
	cr_assert_eq(
	    tree_fallocate(T, path, a.ino, 0, 0, n * tree_block_size(T), NULL),
	    0);
	return a.ino;
}

/* A file at @path of BIG_BLOCKS stored blocks: fallocated (stored empty)
 * with @step 1, else one byte written every @step-th block (holes between);
 * its last byte written, and an xattr. Returns its inode. */
static uint64_t mkbig(const char *path, unsigned step)
{
	uint64_t bs = tree_block_size(T);
	struct tree_attr a;

	tu_mkfile(T, path, "", 0);
	a = tu_stat(T, path);
	if (step == 1)
		cr_assert_eq(tree_fallocate(T, path, a.ino, 0, 0,
					    BIG_BLOCKS * bs - 1, NULL),
			     0);
	for (uint64_t i = 0; step > 1 && i < BIG_BLOCKS; i++)
		cr_assert_eq(tree_write(T, path, a.ino, i * step * bs + 7, "x",
					1, false, NULL),
			     0);
	cr_assert_eq(tree_write(T, path, a.ino, tu_stat(T, path).size, "!", 1,
				false, NULL),
		     0);
	cr_assert_eq(tree_setxattr(T, path, a.ino, "user.big", "v", 1, 0), 0);
	a = tu_stat(T, path);
	cr_assert_eq(a.blocks, BIG_BLOCKS, "%llu blocks",
		     (unsigned long long)a.blocks);
	return a.ino;
}

/* The DATA keys of inode @ino. */
static size_t data_keys(uint64_t ino)
{
	struct sbuf lo = {0}, hi = {0};
	size_t n;

	key_data_range(&lo, &hi, T->name, ino, 0);
	n = count_keys(&lo, &hi);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return n;
}

/* Inode @ino and everything of it is gone, and nothing else is left. */
static void assert_freed(uint64_t ino)
{
	cr_assert_eq(data_keys(ino), 0);
	cr_assert_eq(kind_keys(T, KEY_XATTR), 0);
	cr_assert_eq(kind_keys(T, KEY_ORPHAN), 0);
	cr_assert_eq(kind_keys(T, KEY_INODE), 0);
	assert_fsck_clean(T);
}

/* A call crash_child() runs: 0 or a negative errno. */
typedef int crash_op(struct store *s, struct tree *t, void *arg);

static int unlink_big(struct store *s, struct tree *t, void *arg)
{
	return tree_unlink(t, "/big", 0, NULL);
}

static int rename_new_over_big(struct store *s, struct tree *t, void *arg)
{
	return tree_rename(t, "/new", "/big", 0, NULL);
}

static int rmdrive_other(struct store *s, struct tree *t, void *arg)
{
	return store_drive_delete(s, "other");
}

/* The cp -r of /docs to /copy that token @arg resumes, to its end. */
static int cp_r_resume(struct store *s, struct tree *t, void *arg)
{
	struct tree_op_result r;
	int rc;

	rc = tree_cp_r(t, "/docs", t, "/copy", 0, arg, &r);
	if (rc)
		return rc;
	rc = r.token ? -EAGAIN : 0;
	tree_op_result_release(&r);
	return rc;
}

/*
 * What a crash between slices does in the tests below: closes the store,
 * runs @op on it (reopened, with drive "main") in a child with a crash point
 * after @n batches (PATHFS_CRASH_AFTER_BATCHES), and asserts that the crash
 * point killed the child (@killed) or that @op returned 0 before it. Then
 * opens the store read-only in tu_store and tu_tree, as the child left it.
 */
static void crash_child(long n, crash_op *op, void *arg, bool killed)
{
	struct store_options ro = {.read_only = true};
	int status;
	pid_t pid;

	store_close(tu_store);
	tu_store = NULL;
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		struct store_options o = {0};
		struct store *s;
		struct tree *t;
		char v[32];

		if (store_open(&s, tu_dir, &o) || store_drive(s, "main", &t))
			_exit(10);
		snprintf(v, sizeof(v), "%ld", n);
		setenv("PATHFS_CRASH_AFTER_BATCHES", v, 1);
		if (op(s, t, arg))
			_exit(11);
		store_close(s);
		_exit(13);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (killed)
		cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			  "n=%ld: status %#x", n, status);
	else
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 13,
			  "n=%ld: status %#x", n, status);
	cr_assert_eq(store_open(&tu_store, tu_dir, &ro), 0);
	cr_assert_eq(store_drive(tu_store, "main", &tu_tree), 0);
}

Test(cascade, big_file_unlink_in_slices, .init = tu_setup, .fini = tu_teardown)
{
	for (unsigned step = 1; step <= 2; step++) {
		uint64_t ino = mkbig("/big", step);

		cr_assert_eq(tree_unlink(T, "/big", 0, NULL), 0);
		assert_gone(T, "/big");
		assert_freed(ino);
	}
}

Test(cascade, big_file_truncate_in_slices, .init = tu_setup,
     .fini = tu_teardown)
{
	uint64_t bs = tree_block_size(T);

	for (unsigned step = 1; step <= 2; step++) {
		uint64_t ino = mkbig("/big", step);
		struct tree_attr in = {.size = bs + 8}, a;
		size_t len;
		char *p;

		cr_assert_eq(
		    tree_setattr(T, "/big", ino, &in, TREE_SET_SIZE, &a), 0);
		cr_assert_eq(a.size, bs + 8);
		/* block 0 and block 1 (dense), or block 0 only */
		cr_assert_eq(a.blocks, step == 1 ? 2 : 1);
		cr_assert_eq(data_keys(ino), a.blocks);
		p = tu_read(T, "/big", ino, &len);
		cr_assert_eq(len, bs);
		cr_assert_eq(p[7], step == 1 ? 0 : 'x');
		assert_fsck_clean(T);
		cr_assert_eq(tree_unlink(T, "/big", 0, NULL), 0);
		assert_freed(ino);
	}
}

Test(cascade, big_orphan_reclaim_in_slices, .init = tu_setup,
     .fini = tu_teardown)
{
	uint64_t ino = mkbig("/big", 1), orphan = 0;

	cr_assert_eq(tree_unlink(T, "/big", TREE_KEEP_ORPHAN, &orphan), 0);
	cr_assert_eq(orphan, ino);
	cr_assert_eq(data_keys(ino), BIG_BLOCKS);
	cr_assert_eq(tree_reclaim(T, ino), 0);
	assert_freed(ino);
	/* and several in one call, each alone past half a slice */
	ino = mkbig("/big", 2);
	{
		uint64_t inos[2] = {ino, 0};
		size_t n = 0;

		cr_assert_eq(tree_unlink(T, "/big", TREE_KEEP_ORPHAN, NULL), 0);
		inos[1] = mkfalloc("/small", 600);
		cr_assert_eq(tree_unlink(T, "/small", TREE_KEEP_ORPHAN, NULL),
			     0);
		cr_assert_eq(tree_reclaim_many(T, inos, 2, &n), 0);
		cr_assert_eq(n, 2);
		assert_freed(ino);
		assert_freed(inos[1]);
	}
}

Test(cascade, rm_r_of_big_files_in_slices, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_op_result r;
	uint64_t big;

	/* few nodes (the walk) and many (one batch): both */
	for (int many = 0; many < 2; many++) {
		char p[64];

		tu_mkdir(T, "/docs");
		big = mkbig("/docs/big", 1);
		for (int i = 0; i < 3; i++) {
			snprintf(p, sizeof(p), "/docs/mid%d", i);
			mkfalloc(p, 400);
		}
		for (int i = 0; many && i < 100; i++) {
			snprintf(p, sizeof(p), "/docs/small%03d", i);
			mkfile_n(T, p, 10, i);
		}
		cr_assert_eq(tree_rm_r(T, "/docs", 0, NULL, 0, &r), 0);
		cr_assert_eq(r.failed, 0);
		cr_assert_null(r.token);
		tree_op_result_release(&r);
		assert_gone(T, "/docs");
		assert_freed(big);
		cr_assert_eq(kind_keys(T, KEY_DATA), 0);
	}
}

/*
 * A crash after the first slice of an unlink's drop, or the second: the
 * name is gone, an orphan is left whose size and count are right (fsck,
 * opened read-only, is clean), and the next open frees it. Without slices
 * (cascade) the child finishes.
 */
Test(cascade, big_file_unlink_crash_between_slices, .init = tu_setup,
     .fini = tu_teardown)
{
	for (long n = 0; n < 2; n++) {
		bool sliced = kv_range_keys(tu_store->kv) != SIZE_MAX;
		uint64_t ino = mkbig("/big", 1 + (unsigned)n);

		crash_child(n, unlink_big, NULL, sliced);
		assert_gone(T, "/big");
		assert_fsck_clean(T);
		if (sliced) {
			cr_assert_eq(kind_keys(T, KEY_ORPHAN), 1);
			cr_assert_lt(data_keys(ino), BIG_BLOCKS);
			cr_assert_gt(data_keys(ino), 0);
		}
		reopen_opts(0, 0);
		assert_freed(ino);
	}
}

/*
 * A rename over a big file parks the replaced file as an orphan in the
 * rename's batch and drops its blocks in slices after (strict: no batch of
 * the rename passes a slice); with TREE_KEEP_ORPHAN (the file is open) the
 * orphan is handed back and still reads whole until tree_reclaim().
 */
Test(cascade, rename_over_a_big_file_in_slices, .init = tu_setup,
     .fini = tu_teardown)
{
	uint64_t bs = tree_block_size(T);

	for (unsigned step = 1; step <= 2; step++) {
		uint64_t ino = mkbig("/big", step), orphan = 9;
		size_t len;
		char *p;

		tu_mkfile(T, "/new", "fresh", 5);
		cr_assert_eq(tree_rename(T, "/new", "/big", 0, &orphan), 0);
		cr_assert_eq(orphan, 0);
		assert_gone(T, "/new");
		p = tu_read(T, "/big", tu_stat(T, "/big").ino, &len);
		cr_assert_eq(len, 5);
		cr_assert_eq(memcmp(p, "fresh", 5), 0);
		cr_assert_eq(tree_unlink(T, "/big", 0, NULL), 0);
		assert_freed(ino);
	}
	for (unsigned step = 1; step <= 2; step++) {
		uint64_t ino = mkbig("/big", step), orphan = 0;
		uint64_t size = tu_stat(T, "/big").size;
		size_t len;
		char c[8];

		tu_mkfile(T, "/new", "fresh", 5);
		cr_assert_eq(
		    tree_rename(T, "/new", "/big", TREE_KEEP_ORPHAN, &orphan),
		    0);
		cr_assert_eq(orphan, ino);
		cr_assert_eq(kind_keys(T, KEY_ORPHAN), 1);
		cr_assert_eq(data_keys(ino), BIG_BLOCKS);
		/* the orphan reads whole, by number: its last byte and a
		 * byte of its first blocks */
		cr_assert_eq(tree_read(T, NULL, ino, size - 1, 8, c, &len), 0);
		cr_assert_eq(len, 1);
		cr_assert_eq(c[0], '!');
		cr_assert_eq(tree_read(T, NULL, ino, step * bs + 7, 1, c, &len),
			     0);
		cr_assert_eq(len, 1);
		cr_assert_eq(c[0], step == 1 ? 0 : 'x');
		assert_fsck_clean(T);
		cr_assert_eq(tree_reclaim(T, ino), 0);
		cr_assert_eq(tree_unlink(T, "/big", 0, NULL), 0);
		assert_freed(ino);
	}
}

/*
 * A crash after the first or second slice of the drop that follows a
 * rename over a big file: the new file is in place, the old one is an
 * orphan with some of its blocks (fsck clean, opened read-only), and the
 * next open frees it. Without slices (cascade) the child finishes.
 */
Test(cascade, rename_over_a_big_file_crash_between_slices, .init = tu_setup,
     .fini = tu_teardown)
{
	for (long n = 0; n < 2; n++) {
		bool sliced = kv_range_keys(tu_store->kv) != SIZE_MAX;
		uint64_t ino = mkbig("/big", 1 + (unsigned)n);
		size_t len;
		char *p;

		tu_mkfile(T, "/new", "fresh", 5);
		crash_child(n, rename_new_over_big, NULL, sliced);
		assert_gone(T, "/new");
		p = tu_read(T, "/big", tu_stat(T, "/big").ino, &len);
		cr_assert_eq(len, 5);
		cr_assert_eq(memcmp(p, "fresh", 5), 0);
		assert_fsck_clean(T);
		if (sliced) {
			cr_assert_eq(kind_keys(T, KEY_ORPHAN), 1);
			cr_assert_lt(data_keys(ino), BIG_BLOCKS);
			cr_assert_gt(data_keys(ino), 0);
		}
		reopen_opts(0, 0);
		cr_assert_eq(tree_unlink(T, "/big", 0, NULL), 0);
		assert_freed(ino);
	}
}

/* A file of 10 bytes with BIG_BLOCKS blocks preallocated past its end
 * (FALLOC_FL_KEEP_SIZE): its unlink and a truncate drop them in slices. */
Test(cascade, big_preallocation_past_the_end_in_slices, .init = tu_setup,
     .fini = tu_teardown)
{
	uint64_t bs = tree_block_size(T);

	for (int trunc = 0; trunc < 2; trunc++) {
		struct tree_attr in = {.size = 5};
		uint64_t ino;

		tu_mkfile(T, "/pre", "0123456789", 10);
		ino = tu_stat(T, "/pre").ino;
		cr_assert_eq(tree_fallocate(T, "/pre", ino,
					    TREE_FALLOC_KEEP_SIZE, 0,
					    BIG_BLOCKS * bs, NULL),
			     0);
		cr_assert_eq(tu_stat(T, "/pre").size, 10);
		cr_assert_eq(data_keys(ino), BIG_BLOCKS);
		if (trunc) {
			cr_assert_eq(tree_setattr(T, "/pre", ino, &in,
						  TREE_SET_SIZE, NULL),
				     0);
			cr_assert_eq(tu_stat(T, "/pre").size, 5);
			cr_assert_eq(data_keys(ino), 1);
			assert_fsck_clean(T);
		}
		cr_assert_eq(tree_unlink(T, "/pre", 0, NULL), 0);
		cr_assert_eq(data_keys(ino), 0);
		cr_assert_eq(kind_keys(T, KEY_ORPHAN), 0);
		assert_fsck_clean(T);
	}
}

/* ---- rmdrive in slices ---------------------------------------------------- */

/* The keys of drive @name (every family: kind by kind). */
static size_t drive_keys(const char *name)
{
	size_t n = 0;

	for (int kind = 0; kind < KEY_KINDS; kind++) {
		struct sbuf lo = {0}, hi = {0};

		key_kind_range(&lo, &hi, name, (enum key_kind)kind);
		n += count_keys(&lo, &hi);
		sbuf_release(&lo);
		sbuf_release(&hi);
	}
	return n;
}

/* Whether @name is among the store's drives. */
static bool drive_listed(const char *name)
{
	char **names;
	size_t n;
	bool found = false;

	cr_assert_eq(store_drive_list(tu_store, &names, &n), 0);
	for (size_t i = 0; i < n; i++)
		found = found || !strcmp(names[i], name);
	store_drive_list_free(names, n);
	return found;
}

/* Drive "other" with a branch past a slice of keys and a big file. */
static void mkother(void)
{
	struct tree *o, *keep = T;

	cr_assert_eq(store_drive_create(tu_store, "other", 0, 0), 0);
	cr_assert_eq(store_drive(tu_store, "other", &o), 0);
	build(o, "/docs", 700);
	tu_tree = o;
	mkfalloc("/big", BIG_BLOCKS);
	tu_tree = keep;
	cr_assert_gt(drive_keys("other"),
		     2 * KV_ETCD_TXN_OPS * KV_RANGE_SLICE_OPS);
}

/*
 * rmdrive of a drive past a slice of keys (strict: in slices, each within
 * one; unbounded: one range delete): nothing of it is left, the other
 * drive is untouched, and a drive of the same name starts empty.
 */
Test(cascade, rmdrive_in_slices, .init = tu_setup, .fini = tu_teardown)
{
	char *main0, *main1;
	struct tree *o;

	build(T, "/docs", 50);
	main0 = snap(T, "/", true);
	mkother();
	cr_assert_eq(store_drive_delete(tu_store, "other"), 0);
	cr_assert_eq(drive_keys("other"), 0);
	cr_assert_not(drive_listed("other"));
	cr_assert_eq(store_drive(tu_store, "other", &o), -ENOENT);
	main1 = snap(T, "/", true);
	cr_assert_str_eq(main1, main0);
	assert_fsck_clean(T);
	cr_assert_eq(store_drive_create(tu_store, "other", 0, 0), 0);
	cr_assert_eq(store_drive(tu_store, "other", &o), 0);
	assert_gone(o, "/docs");
	assert_fsck_clean(o);
	free(main0);
	free(main1);
}

/*
 * A crash right after an rmdrive's META went, or after its first slice
 * (strict; unbounded, the rest is one commit): the
 * drive is gone at once (not listed) and the next read-write open drops
 * the rest. A drive made with the name of such leftovers starts empty.
 */
Test(cascade, rmdrive_crash_between_slices, .init = tu_setup,
     .fini = tu_teardown)
{
	struct sbuf k = {0};
	struct kv_batch *b;
	struct tree *o;

	/* (a child that is not killed would hang in RocksDB's compaction:
	 * its background threads stay in the parent) */
	long rounds = kv_range_keys(tu_store->kv) != SIZE_MAX ? 2 : 1;

	for (long n = 0; n < rounds; n++) {
		mkother();
		crash_child(n, rmdrive_other, NULL, true);
		cr_assert_not(drive_listed("other"));
		cr_assert_gt(drive_keys("other"), 0);
		reopen_opts(0, 0);
		cr_assert_eq(drive_keys("other"), 0);
		cr_assert_not(drive_listed("other"));
		assert_fsck_clean(T);
	}
	/* leftovers (the META deleted by hand, no handle of the drive
	 * loaded), then a drive of the name */
	mkother();
	reopen_opts(0, 0);
	key_meta(&k, "other");
	b = kv_batch_new(tu_store->kv);
	kv_batch_delete(b, k.buf, k.len);
	cr_assert_eq(kv_batch_commit(tu_store->kv, b, true), 0);
	kv_batch_free(b);
	sbuf_release(&k);
	cr_assert_gt(drive_keys("other"), 0);
	cr_assert_not(drive_listed("other"));
	cr_assert_eq(store_drive_create(tu_store, "other", 0, 0), 0);
	cr_assert_eq(store_drive(tu_store, "other", &o), 0);
	assert_gone(o, "/docs");
	cr_assert_eq(drive_keys("other"), 2); /* META and the root */
	assert_fsck_clean(o);
}

/* ---- a cp -r's map of hard-linked inodes -------------------------------- */

#define MAP_LINKS 1100 /* past a slice (1,016 keys in strict mode) */

/*
 * /docs/a holding MAP_LINKS files, each with a second link outside the
 * branch (/out/...: a hard-linked inode, one map key each in a clone of
 * /docs), and /docs/zzz, a plain file the walk copies last. Returns the
 * number of nodes of /docs.
 */
static size_t mklinked(void)
{
	char p[64], q[64];

	tu_mkdir(T, "/docs");
	tu_mkdir(T, "/docs/a");
	tu_mkdir(T, "/out");
	for (int i = 0; i < MAP_LINKS; i++) {
		snprintf(p, sizeof(p), "/docs/a/f%04d", i);
		snprintf(q, sizeof(q), "/out/f%04d", i);
		mkfile_n(T, p, 10, i);
		cr_assert_eq(tree_link(T, p, q, NULL), 0);
	}
	mkfile_n(T, "/docs/zzz", 10, 7);
	return MAP_LINKS + 3;
}

/* /copy is a whole copy of /docs: its last file and a linked one read the
 * same, no record or temporary key is left, fsck is clean. */
static void assert_copied(void)
{
	char *a, *b;
	size_t la, lb;

	a = strdup(tu_read(T, "/docs/zzz", tu_stat(T, "/docs/zzz").ino, &la));
	b = tu_read(T, "/copy/zzz", tu_stat(T, "/copy/zzz").ino, &lb);
	cr_assert_eq(la, lb);
	cr_assert_eq(memcmp(a, b, la), 0);
	free(a);
	cr_assert_eq(tu_stat(T, "/copy/a/f0999").nlink, 1);
	cr_assert_eq(tu_stat(T, "/docs/a/f0999").nlink, 2);
	assert_no_journal(T);
	assert_fsck_clean(T);
}

/*
 * A cp -r of a branch with more hard-linked inodes than a slice: its map
 * (one key each) is dropped in slices at the end (strict: no batch past a
 * slice; the old last batch dropped it in one range).
 */
Test(slices, cp_r_drops_a_big_map_in_slices, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_op_result r;
	size_t nodes = mklinked();

	cr_assert_eq(tree_cp_r(T, "/docs", T, "/copy", 0, NULL, &r), 0);
	cr_assert_eq(r.failed, 0);
	cr_assert_null(r.token);
	cr_assert_eq(r.processed, nodes);
	tree_op_result_release(&r);
	assert_copied();
}

/*
 * A cp -r killed right after its record moved to "everything copied"
 * (CLONE_PHASE_DROP), or after the map's first slice: the copy is whole,
 * the record and part of the map are left (fsck names the record), and
 * the token (first round) or the next open (second) finishes it. The
 * calls before the kill stop short of the last node, so that the killed
 * call's batches are counted from its end: the phase commit, a slice, the
 * last batch (without slices the last batch only).
 */
Test(slices, cp_r_crash_between_map_slices, .init = tu_setup,
     .fini = tu_teardown)
{
	bool sliced = kv_range_keys(tu_store->kv) != SIZE_MAX;
	size_t nodes = mklinked();

	for (long n = 0; n < 2; n++) {
		struct tree_journal_entry *e;
		struct tree_op_result r;
		char *token;
		size_t nrec;

		cr_assert_eq(
		    tree_cp_r(T, "/docs", T, "/copy", nodes - 1, NULL, &r), 0);
		cr_assert_not_null(r.token);
		token = strdup(r.token);
		tree_op_result_release(&r);
		cr_assert_eq(kind_keys(T, KEY_XTMP), MAP_LINKS);
		crash_child(n, cp_r_resume, token, sliced || n == 0);
		/* as the kill left it */
		cr_assert_eq(tu_stat(T, "/copy/zzz").size, 10);
		cr_assert_eq(tree_journal_list(T, &e, &nrec), 0);
		tree_journal_list_free(e, nrec);
		cr_assert_eq(nrec, sliced ? 1 : 0, "n=%ld", n);
		if (sliced && n == 0)
			cr_assert_eq(kind_keys(T, KEY_XTMP), MAP_LINKS);
		if (sliced && n == 1) {
			cr_assert_gt(kind_keys(T, KEY_XTMP), 0);
			cr_assert_lt(kind_keys(T, KEY_XTMP), MAP_LINKS);
		}
		reopen_opts(0, 0); /* the second round: this finishes it */
		if (n == 0) {
			cr_assert_eq(
			    tree_cp_r(T, "/docs", T, "/copy", 0, token, &r), 0);
			cr_assert_null(r.token);
			tree_op_result_release(&r);
		}
		free(token);
		assert_copied();
		cr_assert_eq(tree_rm_r(T, "/copy", 0, NULL, 0, &r), 0);
		tree_op_result_release(&r);
	}
}

/* ---- fsck's repairs ----------------------------------------------------- */

/*
 * fsck's repairs of leftovers past a slice drop them in slices (strict: no
 * batch past one): the blocks of a file whose name and PARENT record are
 * gone, and the temporary keys of a journal record that is not there.
 */
Test(slices, fsck_repairs_big_leftovers_in_slices, .init = tu_setup,
     .fini = tu_teardown)
{
	uint64_t ino = mkfalloc("/big", BIG_BLOCKS), seq = 0x7777777;
	struct kv_batch *b = kv_batch_new(tu_store->kv);
	struct sbuf k = {0};
	size_t n = 0;

	key_node(&k, "main", "/big");
	kv_batch_delete(b, k.buf, k.len);
	sbuf_reset(&k);
	key_parent(&k, "main", ino);
	kv_batch_delete(b, k.buf, k.len);
	cr_assert_eq(tree_commit(T, b), 0);
	kv_batch_clear(b);
	for (uint64_t i = 0; i < MAP_LINKS; i++) {
		sbuf_reset(&k);
		key_xtmp_map(&k, "main", seq, i);
		kv_batch_put(b, k.buf, k.len, "12345678", 8);
		if (kv_batch_count(b) >= 100) {
			cr_assert_eq(tree_commit(T, b), 0);
			kv_batch_clear(b);
		}
	}
	cr_assert_eq(tree_commit(T, b), 0);
	cr_assert_eq(data_keys(ino), BIG_BLOCKS);
	cr_assert_eq(kind_keys(T, KEY_XTMP), MAP_LINKS);
	cr_assert_eq(tree_fsck(T, true, print_finding, NULL, &n), 0);
	cr_assert_eq(n, 2, "%zu findings", n);
	cr_assert_eq(data_keys(ino), 0);
	cr_assert_eq(kind_keys(T, KEY_XTMP), 0);
	assert_fsck_clean(T);
	kv_batch_free(b);
	sbuf_release(&k);
}
