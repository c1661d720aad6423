/*
 * test_fs_inodes.c - the daemon's inode table and subtree lock
 * (fs/inode_table.c, fs/subtree_lock.c), without a mount: paths rebuilt from the table, renames touching one entry,
 * lookup counts and forget, stale and hard-linked inodes, orphans reclaimed
 * at the last close, and requests waiting on a busy branch while requests
 * elsewhere go on. Built from fs/meson.build (it links the daemon's code).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "testutil.h"

TestSuite(fs_inodes, .init = tu_fs_setup, .fini = tu_fs_teardown);

static const char *path_of(uint64_t ino, const char *name)
{
	static struct fs_path p;
	int rc = itab_path(&tu_fs, ino, name, false, &p);

	if (rc)
		return rc == -ENOENT ? "ENOENT" : "ERR";
	return p.path ? p.path : "BYNUM";
}

Test(fs_inodes, paths_are_rebuilt_from_the_table)
{
	cr_expect_str_eq(path_of(1, NULL), "/");
	cr_expect_str_eq(path_of(1, "x"), "/x");
	cr_assert_eq(itab_lookup(&tu_fs, 10, 1, "a", 0), 0);
	cr_assert_eq(itab_lookup(&tu_fs, 11, 10, "b c", 0), 0);
	cr_assert_eq(itab_lookup(&tu_fs, 12, 11, "-.d", 0), 0);
	cr_expect_str_eq(path_of(12, NULL), "/a/b c/-.d");
	cr_expect_str_eq(path_of(11, "new"), "/a/b c/new");
	cr_expect_str_eq(path_of(99, NULL), "ENOENT");
}

Test(fs_inodes, a_rename_moves_the_whole_branch)
{
	itab_lookup(&tu_fs, 10, 1, "a", 0);
	itab_lookup(&tu_fs, 11, 10, "b", 0);
	itab_lookup(&tu_fs, 12, 11, "f", 0);
	itab_lookup(&tu_fs, 20, 1, "other", 0);
	itab_move(&tu_fs, 10, 20, "renamed");
	cr_expect_str_eq(path_of(12, NULL), "/other/renamed/b/f");
	itab_move(&tu_fs, 12, 1, "top");
	cr_expect_str_eq(path_of(12, NULL), "/top");
	cr_expect_str_eq(path_of(11, NULL), "/other/renamed/b");
}

Test(fs_inodes, forget_frees_unused_entries_but_keeps_parents_of_live_ones)
{
	itab_lookup(&tu_fs, 10, 1, "a", 0);
	itab_lookup(&tu_fs, 11, 10, "b", 0);
	itab_lookup(&tu_fs, 11, 10, "b", 0); /* two lookups */
	cr_expect_eq(itab_forget(&tu_fs, 10, 1), 0);
	/* 10 has no lookups left but 11 lives below it */
	cr_expect_str_eq(path_of(11, NULL), "/a/b");
	itab_forget(&tu_fs, 11, 1);
	cr_expect_str_eq(path_of(11, NULL), "/a/b");
	itab_forget(&tu_fs, 11, 1);
	cr_expect_str_eq(path_of(11, NULL), "ENOENT");
	cr_expect_str_eq(path_of(10, NULL), "ENOENT");
	cr_expect_eq(tu_fs.count, 1); /* only the root is left */
	/* the root is never forgotten */
	itab_forget(&tu_fs, 1, 1000);
	cr_expect_str_eq(path_of(1, NULL), "/");
}

Test(fs_inodes, stale_and_hard_linked_inodes)
{
	struct fs_path p = {0};

	itab_lookup(&tu_fs, 10, 1, "dir", 0);
	itab_lookup(&tu_fs, 11, 10, "f", 0);
	itab_flags(&tu_fs, 10, INODE_STALE, 0);
	cr_expect_str_eq(path_of(11, NULL), "ENOENT");

	itab_lookup(&tu_fs, 12, 1, "linked", TREE_F_LINKED);
	cr_expect_str_eq(path_of(12, NULL), "BYNUM");
	cr_assert_eq(itab_path(&tu_fs, 12, NULL, true, &p), 0);
	cr_expect_str_eq(p.path, "/linked");
	/* seen under another name: still known by its first one */
	itab_lookup(&tu_fs, 12, 1, "second", TREE_F_LINKED);
	cr_assert_eq(itab_path(&tu_fs, 12, NULL, true, &p), 0);
	cr_expect_str_eq(p.path, "/linked");
	fs_path_release(&p);
}

Test(fs_inodes, an_orphan_lives_until_its_last_forget_and_close)
{
	itab_lookup(&tu_fs, 10, 1, "f", 0);
	cr_assert_eq(itab_open(&tu_fs, 10), 0);
	cr_assert_eq(itab_open(&tu_fs, 10), 0);
	cr_expect_eq(itab_nopen(&tu_fs, 10), 2);
	cr_expect(itab_in_use(&tu_fs, 10));
	cr_expect_eq(itab_orphaned(&tu_fs, 10), 0); /* in use: kept */
	cr_expect_str_eq(path_of(10, NULL), "BYNUM");
	cr_expect_eq(itab_close(&tu_fs, 10), 0);
	cr_expect_eq(itab_close(&tu_fs, 10), 0); /* the kernel still knows it */
	/* a node id is valid until FORGET: it may be opened again */
	cr_expect_eq(itab_open(&tu_fs, 10), 0);
	cr_expect_eq(itab_close(&tu_fs, 10), 0);
	cr_expect_eq(itab_forget(&tu_fs, 10, 1), 10);
	cr_expect_eq(itab_forget(&tu_fs, 10, 1), 0); /* once */
	cr_expect_eq(itab_open(&tu_fs, 99), -ENOENT);
}

Test(fs_inodes, an_orphan_forgotten_first_is_reclaimed_at_its_last_close)
{
	itab_lookup(&tu_fs, 10, 1, "f", 0);
	itab_open(&tu_fs, 10);
	itab_lookup(&tu_fs, 10, 1, "f", 0);
	cr_expect_eq(itab_orphaned(&tu_fs, 10), 0);
	cr_expect_eq(itab_forget(&tu_fs, 10, 2), 0); /* still open */
	cr_expect(itab_in_use(&tu_fs, 10));
	cr_expect_eq(itab_close(&tu_fs, 10), 10);
	cr_expect(!itab_in_use(&tu_fs, 10));
}

Test(fs_inodes, an_orphan_the_kernel_let_go_of_is_reclaimed_at_once)
{
	itab_lookup(&tu_fs, 10, 1, "f", 0);
	cr_expect_eq(itab_forget(&tu_fs, 10, 1), 0); /* not an orphan: freed */
	cr_expect(!itab_in_use(&tu_fs, 10));
	cr_expect_eq(itab_orphaned(&tu_fs, 10), 10); /* not in the table */
	itab_lookup(&tu_fs, 11, 1, "d", 0);
	itab_lookup(&tu_fs, 12, 11, "child", 0); /* keeps 11 in the table */
	cr_expect_eq(itab_forget(&tu_fs, 11, 1), 0);
	cr_expect_eq(itab_orphaned(&tu_fs, 11), 11);
}

Test(fs_inodes, attach_path_reads_the_store)
{
	struct tree_attr a;
	uint64_t ino = 0;

	tu_mkdir(tu_tree, "/x");
	tu_mkdir(tu_tree, "/x/y");
	tu_mkfile(tu_tree, "/x/y/z", "hello", 5);
	cr_assert_eq(itab_attach_path(&tu_fs, "/x/y/z", &ino), 0);
	cr_assert_eq(tree_lookup(tu_tree, "/x/y/z", &a), 0);
	cr_expect_eq(ino, a.ino);
	cr_expect_str_eq(path_of(ino, NULL), "/x/y/z");
	cr_expect_eq(itab_attach_path(&tu_fs, "/x/nope", &ino), -ENOENT);
}

/* ---- subtree lock ------------------------------------------------------- */

struct waiter {
	uint64_t ino;
	volatile int done;
	int rc;
	char path[64];
};

static void *enter_thread(void *arg)
{
	struct waiter *w = arg;
	struct fs_path p = {0};

	w->rc = fs_enter(&tu_fs, w->ino, NULL, &p);
	if (!w->rc) {
		strcpy(w->path, p.path ? p.path : "BYNUM");
		fs_leave(&tu_fs);
	}
	fs_path_release(&p);
	w->done = 1;
	return NULL;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

Test(fs_inodes, requests_inside_a_busy_branch_wait_and_see_the_new_path)
{
	struct waiter in = {.ino = 12}, out = {.ino = 20}, near = {.ino = 30};
	pthread_t t1, t2, t3;
	struct busy *b = NULL;

	itab_lookup(&tu_fs, 10, 1, "src", 0);
	itab_lookup(&tu_fs, 11, 10, "sub", 0);
	itab_lookup(&tu_fs, 12, 11, "f", 0);
	itab_lookup(&tu_fs, 20, 1, "elsewhere", 0);
	itab_lookup(&tu_fs, 30, 1, "src-not-inside",
		    0); /* prefix, not inside */
	cr_assert_eq(fs_busy_begin_paths(&tu_fs, "/src", "/dst", &b), 0);

	pthread_create(&t1, NULL, enter_thread, &in);
	pthread_create(&t2, NULL, enter_thread, &out);
	pthread_create(&t3, NULL, enter_thread, &near);
	pthread_join(t2, NULL);
	pthread_join(t3, NULL);
	cr_expect_eq(out.rc, 0);
	cr_expect_str_eq(out.path, "/elsewhere");
	cr_expect_eq(near.rc, 0);
	cr_expect_str_eq(near.path, "/src-not-inside");
	sleep_ms(100);
	cr_expect_eq(in.done, 0, "a request inside the busy branch went on");

	fs_busy_lock(&tu_fs);
	itab_move(&tu_fs, 10, 1, "dst");
	fs_busy_end(&tu_fs, b);
	pthread_join(t1, NULL);
	cr_expect_eq(in.rc, 0);
	cr_expect_str_eq(in.path, "/dst/sub/f");
}

struct taker {
	const char *src;
	struct busy *b;
	volatile int done;
};

static void *take_thread(void *arg)
{
	struct taker *k = arg;

	cr_assert_eq(fs_busy_begin_paths(&tu_fs, k->src, NULL, &k->b), 0);
	k->done = 1;
	return NULL;
}

Test(fs_inodes, overlapping_branches_are_taken_one_at_a_time)
{
	struct busy *b1 = NULL, *b2 = NULL;
	struct taker up = {.src = "/a"};
	pthread_t t;

	cr_assert_eq(fs_busy_begin_paths(&tu_fs, "/a/b", "/c", &b1), 0);
	/* disjoint ("/a/bb" is not inside "/a/b"): does not wait */
	cr_assert_eq(fs_busy_begin_paths(&tu_fs, "/a/bb", "/d", &b2), 0);
	fs_busy_lock(&tu_fs);
	fs_busy_end(&tu_fs, b2);
	/* an ancestor of a busy branch waits until it is released */
	pthread_create(&t, NULL, take_thread, &up);
	sleep_ms(100);
	cr_expect_eq(up.done, 0, "took /a while /a/b was busy");
	fs_busy_lock(&tu_fs);
	fs_busy_end(&tu_fs, b1);
	pthread_join(t, NULL);
	cr_expect_eq(up.done, 1);
	fs_busy_lock(&tu_fs);
	fs_busy_end(&tu_fs, up.b);
}

static struct fs_path retry_p;

Test(fs_inodes, retry_rebuilds_a_path_a_rename_changed)
{
	int enoent = -ENOENT, eio = -EIO;

	itab_lookup(&tu_fs, 10, 1, "old", 0);
	cr_assert_eq(itab_path(&tu_fs, 10, NULL, false, &retry_p), 0);
	cr_expect_not(fs_retry(&tu_fs, &enoent, 10, NULL, &retry_p),
		      "nothing changed: no retry");
	cr_expect_eq(enoent, -ENOENT, "not a follower: no ESTALE");
	itab_move(&tu_fs, 10, 1, "new");
	cr_expect_not(fs_retry(&tu_fs, &eio, 10, NULL, &retry_p));
	cr_assert(fs_retry(&tu_fs, &enoent, 10, NULL, &retry_p));
	cr_expect_str_eq(retry_p.path, "/new");
}

struct retrier {
	struct fs_path p;
	volatile int done;
	bool again;
};

static void *retry_thread(void *arg)
{
	struct retrier *r = arg;
	int rc = -ENOENT;

	r->again = fs_retry(&tu_fs, &rc, 10, NULL, &r->p);
	r->done = 1;
	return NULL;
}

/*
 * The save by RENAME_EXCHANGE (rel_replace): a READ built its path, then
 * something else moved in the table (here a LOOKUP of another file), then
 * a rename committed in the store and the READ failed before the rename
 * updated the table. The retry waits for that rename, however ns_gen moved.
 */
Test(fs_inodes, retry_waits_for_a_rename_in_flight_whatever_else_changed)
{
	struct retrier w = {0};
	struct fs_renaming r;
	pthread_t t;

	itab_lookup(&tu_fs, 10, 1, "f", 0);
	cr_assert_eq(itab_path(&tu_fs, 10, NULL, false, &w.p), 0);
	itab_lookup(&tu_fs, 11, 1, "f.tmp", 0); /* moves ns_gen */
	fs_rename_start(&tu_fs, &r); /* the store swaps f and f.tmp */
	pthread_create(&t, NULL, retry_thread, &w);
	sleep_ms(100);
	cr_expect_eq(w.done, 0, "the retry gave up with the rename in flight");
	itab_move(&tu_fs, 11, 1, "f");
	itab_move(&tu_fs, 10, 1, "f.tmp");
	fs_rename_done(&tu_fs, &r);
	pthread_join(t, NULL);
	cr_expect(w.again);
	cr_expect_str_eq(w.p.path, "/f.tmp");
	fs_path_release(&w.p);
}

/* A rename started after the failure does not hold the retry up. */
Test(fs_inodes, retry_does_not_wait_for_a_later_rename)
{
	struct retrier w = {0};
	struct fs_renaming r;

	itab_lookup(&tu_fs, 10, 1, "f", 0);
	cr_assert_eq(itab_path(&tu_fs, 10, NULL, false, &w.p), 0);
	fs_rename_start(&tu_fs, &r);
	fs_rename_done(&tu_fs, &r);
	itab_move(&tu_fs, 10, 1, "g");
	retry_thread(&w); /* no rename in flight: answers at once */
	cr_expect(w.again);
	cr_expect_str_eq(w.p.path, "/g");
	fs_path_release(&w.p);
}

/*
 * A LOOKUP (the kernel revalidating a cached name takes no folder lock) read
 * f -> inode 10 just before a rename moved 10 to f.tmp in the store and the
 * table: its read must not put 10 back at f, or 10's requests would find
 * another inode there (ENOENT) until the kernel forgot it.
 */
Test(fs_inodes, a_lookup_does_not_put_back_a_place_a_rename_changed)
{
	struct fs_path p = {0};
	struct fs_renaming r;

	itab_lookup(&tu_fs, 10, 1, "f", 0);
	cr_assert_eq(itab_path(&tu_fs, 1, "f", false, &p), 0);
	/* the LOOKUP reads 10 at /f; then the rename */
	fs_rename_start(&tu_fs, &r);
	itab_move(&tu_fs, 10, 1, "f.tmp");
	fs_rename_done(&tu_fs, &r);
	cr_expect_eq(itab_lookup_read(&tu_fs, 10, 1, "f", 0, &p), -EAGAIN);
	cr_expect_str_eq(path_of(10, NULL), "/f.tmp");
	/* read again: the store is the truth */
	cr_assert_eq(itab_path(&tu_fs, 1, "f.tmp", false, &p), 0);
	cr_expect_eq(itab_lookup_read(&tu_fs, 10, 1, "f.tmp", 0, &p), 0);
	/* no rename since the read: the read's place wins, as itab_lookup */
	itab_move(&tu_fs, 10, 1, "elsewhere");
	cr_assert_eq(itab_path(&tu_fs, 1, "f", false, &p), 0);
	cr_expect_eq(itab_lookup_read(&tu_fs, 10, 1, "f", 0, &p), 0);
	cr_expect_str_eq(path_of(10, NULL), "/f");
	fs_path_release(&p);
}

/*
 * The same while the rename is between its table update and its end
 * (fs_rename_done): the table has moved 10 already, nothing has counted
 * the rename yet. A LOOKUP that read f -> 10 before the rename's commit
 * must not put 10 back at f there either: once the rename ends nothing
 * moves 10 again, and its reads at f answer ENOENT (rel_revalidate's move,
 * a read of a descriptor opened at a/f, once in CI under ASan).
 */
Test(fs_inodes, a_lookup_does_not_put_back_a_place_a_rename_in_flight_moved)
{
	struct fs_path p = {0};
	struct fs_renaming r;

	itab_lookup(&tu_fs, 10, 1, "f", 0);
	cr_assert_eq(itab_path(&tu_fs, 1, "f", false, &p), 0);
	fs_rename_start(&tu_fs, &r);
	itab_move(&tu_fs, 10, 1, "g");
	cr_expect_eq(itab_lookup_read(&tu_fs, 10, 1, "f", 0, &p), -EAGAIN);
	fs_rename_done(&tu_fs, &r);
	cr_expect_str_eq(path_of(10, NULL), "/g");
	fs_path_release(&p);
}

/*
 * The same for a LOOKUP of "." (a file handle: open_by_handle_at, an NFS
 * export), which finds the inode's path in the store and then puts every
 * node of it in the table (itab_lookup_path): it read /f -> f's inode just
 * before a rename moved the file to /g in the store and the table. Putting
 * /f back would send the file's requests to a name that is no longer its.
 */
Test(fs_inodes, a_lookup_by_number_does_not_put_back_a_place_a_rename_changed)
{
	struct fs_path p = {0};
	struct fs_renaming r;
	struct tree_attr a;
	uint64_t got = 0;

	cr_assert_eq(tree_mknode_umask(tu_fs.tree, "/f", S_IFREG | 0644, 0, 0,
				       0, 0, NULL, &a),
		     0);
	itab_lookup(&tu_fs, a.ino, 1, "f", 0);
	/* the LOOKUP builds its path and reads f's inode at /f... */
	cr_assert_eq(itab_path(&tu_fs, 1, NULL, false, &p), 0);
	/* ...then the rename: the table moves (the store is left as the
	 * LOOKUP read it, so that its walk reads /f again) */
	fs_rename_start(&tu_fs, &r);
	itab_move(&tu_fs, a.ino, 1, "g");
	fs_rename_done(&tu_fs, &r);
	cr_expect_eq(itab_lookup_path(&tu_fs, "/f", &got, &p), -EAGAIN);
	cr_expect_str_eq(path_of(a.ino, NULL), "/g");
	/* read again, after the rename: the store is the truth */
	cr_assert_eq(tree_rename(tu_fs.tree, "/f", "/g", 0, NULL), 0);
	cr_assert_eq(itab_path(&tu_fs, 1, NULL, false, &p), 0);
	cr_expect_eq(itab_lookup_path(&tu_fs, "/g", &got, &p), 0);
	cr_expect_eq(got, a.ino);
	cr_expect_str_eq(path_of(a.ino, NULL), "/g");
	/* counted once: two lookups now, the first one's and this one */
	cr_expect_eq(itab_forget(&tu_fs, a.ino, 1), 0);
	cr_expect_str_eq(path_of(a.ino, NULL), "/g");
	itab_forget(&tu_fs, a.ino, 1);
	cr_expect_str_eq(path_of(a.ino, NULL), "ENOENT");
	fs_path_release(&p);
}

/*
 * A follower (-o ro on etcd): a LOOKUP read f's inode at /f just before the
 * writer moved it to /g, and the watch moved it in the table. The LOOKUP
 * must not put /f back: on a follower a request on the file would find no
 * node there and answer ESTALE (an open file's reads) until the next change.
 */
Test(fs_inodes, a_lookup_does_not_undo_what_the_watch_moved)
{
	struct fs_path p = {0};

	itab_lookup(&tu_fs, 10, 1, "f", 0);
	cr_assert_eq(itab_path(&tu_fs, 1, "f", false, &p), 0);
	/* the LOOKUP reads 10 at /f; the writer moves it; the watch sees it */
	fs_watch_moved(&tu_fs, 10, "/", "g");
	cr_expect_str_eq(path_of(10, NULL), "/g");
	cr_expect_eq(itab_lookup_read(&tu_fs, 10, 1, "f", 0, &p), -EAGAIN);
	cr_expect_str_eq(path_of(10, NULL), "/g");
	fs_path_release(&p);
}

/*
 * A mount that watches the other writers' changes (-o shared, -o ro on
 * etcd) answers "no ACL" and "no inode flags" from its table too, once a
 * LOOKUP read a record without them (ls -l asks every file for its ACL),
 * unless the watch heard of a change of any record after that LOOKUP
 * built its path (it may have been this one's); the watch's news of the
 * inode, or that it lost track, clears them.
 */
Test(fs_inodes, a_watching_mount_trusts_a_record_no_change_overtook)
{
	static char watch; /* stands for a watch: only its presence is read */
	struct fs_path p = {0};

	tu_fs.shared = true;
	cr_assert_eq(itab_path(&tu_fs, 1, "f", false, &p), 0);
	cr_assert_eq(itab_lookup_read(&tu_fs, 10, 1, "f", 0, &p), 0);
	cr_expect_not(itab_has_flag(&tu_fs, 10, INODE_NO_ACL),
		      "no watch: nothing is trusted");
	tu_fs.watch = (struct fs_watch *)&watch;
	cr_assert_eq(itab_path(&tu_fs, 1, "f", false, &p), 0);
	cr_assert_eq(itab_lookup_read(&tu_fs, 10, 1, "f", 0, &p), 0);
	cr_expect(itab_has_flag(&tu_fs, 10, INODE_NO_ACL));
	cr_expect(itab_has_flag(&tu_fs, 10, INODE_NO_FLAGS));
	itab_changed_elsewhere(&tu_fs, 10);
	cr_expect_not(itab_has_flag(&tu_fs, 10, INODE_NO_ACL));
	cr_expect_not(itab_has_flag(&tu_fs, 10, INODE_NO_FLAGS));
	/* built, then the watch heard of another inode's change, then read */
	cr_assert_eq(itab_path(&tu_fs, 1, "f", false, &p), 0);
	itab_changed_elsewhere(&tu_fs, 99);
	cr_assert_eq(itab_lookup_read(&tu_fs, 10, 1, "f", 0, &p), 0);
	cr_expect_not(itab_has_flag(&tu_fs, 10, INODE_NO_ACL),
		      "a read older than the watch's news sets nothing");
	/* a record with an ACL */
	cr_assert_eq(itab_path(&tu_fs, 1, "f", false, &p), 0);
	cr_assert_eq(itab_lookup_read(&tu_fs, 10, 1, "f", TREE_F_ACL, &p), 0);
	cr_expect_not(itab_has_flag(&tu_fs, 10, INODE_NO_ACL));
	cr_expect(itab_has_flag(&tu_fs, 10, INODE_NO_FLAGS));
	/* the watch lost track (restarted): every inode's flags go */
	itab_changed_elsewhere(&tu_fs, 0);
	cr_expect_not(itab_has_flag(&tu_fs, 10, INODE_NO_FLAGS));
	/* a create reads no record: trusted only by the store's one writer */
	cr_assert_eq(itab_lookup(&tu_fs, 11, 1, "g", 0), 0);
	cr_expect_not(itab_has_flag(&tu_fs, 11, INODE_NO_ACL));
	tu_fs.watch = NULL;
	fs_path_release(&p);
}

Test(fs_inodes, paths_up_to_the_limit_and_no_further)
{
	char name[TREE_NAME_MAX + 1];
	struct fs_path p = {0};
	uint64_t ino = 1;
	int i;

	memset(name, 'n', TREE_NAME_MAX);
	name[TREE_NAME_MAX] = '\0';
	/* 127 levels of "/" + 255 bytes: 32512 bytes */
	for (i = 0; i < 128; i++) {
		itab_lookup(&tu_fs, 100 + i, ino, name, 0);
		ino = 100 + i;
	}
	cr_assert_eq(itab_path(&tu_fs, 100 + 126, NULL, false, &p), 0);
	cr_expect_eq(strlen(p.path), 127 * 256);
	/* and a 254-byte name below: exactly TREE_PATH_MAX */
	name[254] = '\0';
	cr_assert_eq(itab_path(&tu_fs, 100 + 126, name, false, &p), 0);
	cr_expect_eq(strlen(p.path), TREE_PATH_MAX);
	name[254] = 'n';
	cr_expect_eq(itab_path(&tu_fs, 100 + 126, name, false, &p),
		     -ENAMETOOLONG);
	cr_expect_eq(itab_path(&tu_fs, ino, NULL, false, &p), -ENAMETOOLONG);
	fs_path_release(&p);
}

Test(fs_inodes, deep_paths_of_short_names)
{
	struct fs_path p = {0};
	uint64_t ino = 1;
	int i;

	/* 10000 levels of "/d": far deeper than the 2048 levels of old */
	for (i = 0; i < 10000; i++) {
		cr_assert_eq(itab_lookup(&tu_fs, 100 + i, ino, "d", 0), 0);
		ino = 100 + i;
	}
	cr_assert_eq(itab_path(&tu_fs, ino, "x", false, &p), 0);
	cr_expect_eq(strlen(p.path), 10001 * 2);
	cr_expect_eq(strncmp(p.path, "/d/d/d", 6), 0);
	cr_expect_str_eq(p.path + 20000, "/x");
	fs_path_release(&p);
}
