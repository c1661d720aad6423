/*
 * test_fsck.c - tree_fsck (store/fsck.c): a clean drive has no findings; each
 * kind of damage planted straight into the store is found, named, and, where
 * it is safe, repaired so a second run is clean.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "batch_i.h"
#include "codec_i.h"
#include "drive_i.h"
#include "journal_i.h"
#include "testutil.h"

#define T tu_tree

struct found {
	char text[16384];
	size_t n;
};

static void collect(void *ctx, const char *msg)
{
	struct found *f = ctx;

	cr_log_info("fsck: %s", msg);
	strncat(f->text, msg, sizeof(f->text) - strlen(f->text) - 2);
	strcat(f->text, "\n");
	f->n++;
}

/* Runs fsck and returns its findings (static buffer). */
static struct found *fsck(bool repair)
{
	static struct found f;
	size_t n = 999;

	memset(&f, 0, sizeof(f));
	cr_assert_eq(tree_fsck(T, repair, collect, &f, &n), 0);
	cr_assert_eq(n, f.n);
	return &f;
}

static void put_raw(const struct sbuf *k, const void *v, size_t vlen)
{
	struct kv_batch *b = kv_batch_new(T->store->kv);

	kv_batch_put(b, k->buf, k->len, v, vlen);
	cr_assert_eq(tree_commit(T, b), 0);
	kv_batch_free(b);
}

static bool key_exists(const struct sbuf *k)
{
	char *v = NULL;
	size_t vl;
	int rc = kv_get(tu_store->kv, k->buf, k->len, &v, &vl);

	free(v);
	cr_assert(rc == 0 || rc == -ENOENT);
	return rc == 0;
}

/* A small tree of every kind, hard links included. */
static void populate(void)
{
	struct tree_attr a;

	tu_mkdir(T, "/d");
	tu_mkdir(T, "/d/sub");
	tu_mkdir(T, "/d/sub 2");
	tu_mkfile(T, "/d/f", "hello", 5);
	tu_mkfile(T, "/d/sub/g", "world", 5);
	cr_assert_eq(tree_link(T, "/d/f", "/d/sub/f-link", NULL), 0);
	cr_assert_eq(
	    tree_mknode(T, "/d/ln", S_IFLNK | 0777, 0, 0, 0, "f", NULL), 0);
	cr_assert_eq(tree_lookup(T, "/d/sub", &a), 0);
	cr_assert_eq(tree_setxattr(T, "/d/sub", a.ino, "user.x", "1", 1, 0), 0);
}

Test(fsck, clean_drive_has_no_findings, .init = tu_setup, .fini = tu_teardown)
{
	populate();
	cr_assert_eq(fsck(false)->n, 0, "%s", fsck(false)->text);
	tu_reopen();
	cr_assert_eq(fsck(true)->n, 0);
}

Test(fsck, bad_node_value, .init = tu_setup, .fini = tu_teardown)
{
	struct sbuf k = {0};
	struct found *f;

	populate();
	key_node(&k, "main", "/d/sub/g");
	put_raw(&k, "\xff\x01garbage", 9);
	f = fsck(false);
	/* the node, and the content nothing decodable points to any more */
	cr_assert_eq(f->n, 2, "%s", f->text);
	cr_assert(strstr(f->text, "/d/sub/g: value does not decode"), "%s",
		  f->text);
	cr_assert(strstr(f->text, "DATA#"), "%s", f->text);
	/* not repairable; and the content is kept, it may be that node's */
	f = fsck(true);
	cr_assert_eq(f->n, 2);
	cr_assert(strstr(f->text, "not repaired"), "%s", f->text);
	cr_assert_eq(fsck(false)->n, 2);
	sbuf_release(&k);
}

Test(fsck, missing_parent_and_parent_not_a_folder, .init = tu_setup,
     .fini = tu_teardown)
{
	struct sbuf k = {0}, v = {0};
	struct tree_attr a;
	struct found *f;

	populate();
	cr_assert_eq(tree_lookup(T, "/d/sub/g", &a), 0);
	a.ino = 5000;
	node_encode(&v, &a, NULL);
	key_node(&k, "main", "/nodir/x");
	put_raw(&k, v.buf, v.len);
	sbuf_reset(&k);
	key_node(&k, "main", "/d/f/under-a-file");
	a.ino = 5001;
	sbuf_reset(&v);
	node_encode(&v, &a, NULL);
	put_raw(&k, v.buf, v.len);
	f = fsck(false);
	cr_assert(strstr(f->text, "/nodir/x: parent /nodir is missing"), "%s",
		  f->text);
	cr_assert(
	    strstr(f->text, "/d/f/under-a-file: parent /d/f is not a folder"),
	    "%s", f->text);
	sbuf_release(&k);
	sbuf_release(&v);
}

Test(fsck, folder_nlink_repaired, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a;
	struct found *f;

	populate();
	cr_assert_eq(tree_lookup(T, "/d", &a), 0);
	cr_assert_eq(a.nlink, 4);
	{
		struct kv_batch *b = kv_batch_new(T->store->kv);
		a.nlink = 9;
		tree_batch_put_node(T, b, "/d", &a, NULL);
		cr_assert_eq(tree_commit(T, b), 0);
		kv_batch_free(b);
	}
	f = fsck(false);
	cr_assert_eq(f->n, 1, "%s", f->text);
	cr_assert(strstr(f->text, "/d: folder nlink 9, expected 4"), "%s",
		  f->text);
	f = fsck(true);
	cr_assert(strstr(f->text, "(repaired)"));
	cr_assert_eq(fsck(false)->n, 0);
	cr_assert_eq(tree_lookup(T, "/d", &a), 0);
	cr_assert_eq(a.nlink, 4);
}

Test(fsck, hard_link_count_repaired, .init = tu_setup, .fini = tu_teardown)
{
	struct attr_ref r = {0};
	struct kv_batch *b = kv_batch_new(T->store->kv);
	struct tree_attr a;
	struct found *f;
	char want[64];

	populate();
	cr_assert_eq(tree_lookup(T, "/d/f", &a), 0);
	cr_assert_eq(a.nlink, 2);
	cr_assert_eq(tree_attr_load(T, NULL, a.ino, &r), 0);
	r.n.a.nlink = 5;
	tree_attr_store(T, b, &r);
	cr_assert_eq(tree_commit(T, b), 0);
	f = fsck(false);
	snprintf(want, sizeof(want), "INODE#%016llx: nlink 5 but 2 links",
		 (unsigned long long)a.ino);
	cr_assert_eq(f->n, 1, "%s", f->text);
	cr_assert(strstr(f->text, want), "%s", f->text);
	fsck(true);
	cr_assert_eq(fsck(false)->n, 0);
	cr_assert_eq(tree_lookup(T, "/d/f", &a), 0);
	cr_assert_eq(a.nlink, 2);
	attr_ref_release(&r);
	kv_batch_free(b);
}

Test(fsck, unreferenced_data_xattr_inode_and_orphan_keys, .init = tu_setup,
     .fini = tu_teardown)
{
	struct sbuf k1 = {0}, k2 = {0}, k3 = {0}, k4 = {0}, v = {0};
	struct tree_attr a;
	struct found *f;

	populate();
	key_data(&k1, "main", 900, 0);
	put_raw(&k1, "abc", 3);
	key_xattr(&k2, "main", 901, "user.lost");
	put_raw(&k2, "v", 1);
	cr_assert_eq(tree_lookup(T, "/d/sub/g", &a), 0);
	a.ino = 902;
	a.flags = TREE_F_LINKED;
	node_encode(&v, &a, NULL);
	key_inode(&k3, "main", 902);
	put_raw(&k3, v.buf, v.len);
	key_orphan(&k4, "main", 903);
	put_raw(&k4, "", 0);
	f = fsck(false);
	cr_assert_eq(f->n, 4, "%s", f->text);
	cr_assert(strstr(f->text, "DATA#0000000000000384: 1 key"), "%s",
		  f->text);
	cr_assert(strstr(f->text, "XATTR#0000000000000385: 1 key"), "%s",
		  f->text);
	cr_assert(strstr(f->text, "INODE#0000000000000386: no link"), "%s",
		  f->text);
	cr_assert(strstr(f->text, "ORPHAN#0000000000000387"), "%s", f->text);
	f = fsck(true);
	cr_assert_eq(f->n, 4);
	cr_assert(!key_exists(&k1));
	cr_assert(!key_exists(&k2));
	cr_assert(!key_exists(&k3));
	cr_assert(!key_exists(&k4));
	cr_assert_eq(fsck(false)->n, 0, "%s", fsck(false)->text);
	/* the live files kept their content */
	{
		char buf[8];
		size_t got;
		cr_assert_eq(tree_lookup(T, "/d/f", &a), 0);
		cr_assert_eq(tree_read(T, "/d/f", a.ino, 0, 8, buf, &got), 0);
		cr_assert_eq(got, 5);
		cr_assert_eq(memcmp(buf, "hello", 5), 0);
	}
	sbuf_release(&k1);
	sbuf_release(&k2);
	sbuf_release(&k3);
	sbuf_release(&k4);
	sbuf_release(&v);
}

Test(fsck, orphan_is_not_a_finding, .init = tu_setup, .fini = tu_teardown)
{
	uint64_t orphan = 0;

	populate();
	tu_mkfile(T, "/open", "data", 4);
	cr_assert_eq(tree_unlink(T, "/open", TREE_KEEP_ORPHAN, &orphan), 0);
	cr_assert_neq(orphan, 0);
	cr_assert_eq(fsck(false)->n, 0, "%s", fsck(false)->text);
}

/* A finding's report that reclaims the orphan *ctx once: the daemon's
 * reclaim thread freeing an orphan while an online fsck runs. */
static uint64_t to_reclaim;

static void collect_and_reclaim(void *ctx, const char *msg)
{
	size_t n = 0;

	collect(ctx, msg);
	if (to_reclaim) {
		cr_assert_eq(tree_reclaim_many(T, &to_reclaim, 1, &n), 0);
		cr_assert_eq(n, 1);
		to_reclaim = 0;
	}
}

Test(fsck, orphan_reclaimed_during_the_check_is_not_a_finding, .init = tu_setup,
     .fini = tu_teardown)
{
	struct sbuf k = {0}, v = {0};
	struct tree_attr a;
	static struct found f;
	size_t n = 0;

	populate();
	tu_mkfile(T, "/open", "data", 4);
	cr_assert_eq(tree_unlink(T, "/open", TREE_KEEP_ORPHAN, &to_reclaim), 0);
	cr_assert_neq(to_reclaim, 0);
	/* a node without a parent: its finding comes after the orphans were
	 * listed and before the INODE records are, and reclaims the orphan */
	cr_assert_eq(tree_lookup(T, "/d/sub/g", &a), 0);
	a.ino = 5000;
	node_encode(&v, &a, NULL);
	key_node(&k, "main", "/nodir/x");
	put_raw(&k, v.buf, v.len);
	cr_assert_eq(tree_fsck(T, false, collect_and_reclaim, &f, &n), 0);
	cr_assert_eq(to_reclaim, 0, "the orphan was not reclaimed mid-check");
	cr_assert(strstr(f.text, "/nodir/x: parent /nodir is missing"), "%s",
		  f.text);
	cr_assert_null(strstr(f.text, "ORPHAN#"), "%s", f.text);
	sbuf_release(&k);
	sbuf_release(&v);
}

Test(fsck, inode_counter_below_an_inode_in_use, .init = tu_setup,
     .fini = tu_teardown)
{
	struct sbuf k = {0}, v = {0};
	struct meta m;
	char *val;
	size_t vlen;
	struct tree_attr a, b;
	struct found *f;

	populate();
	key_meta(&k, "main");
	cr_assert_eq(kv_get(tu_store->kv, k.buf, k.len, &val, &vlen), 0);
	cr_assert_eq(meta_decode(val, vlen, &m), 0);
	free(val);
	m.ino_hwm = 2;
	meta_encode(&v, &m);
	put_raw(&k, v.buf, v.len);
	f = fsck(false);
	cr_assert_eq(f->n, 1, "%s", f->text);
	cr_assert(strstr(f->text, "META: inode counter 2 is not above inode"),
		  "%s", f->text);
	fsck(true);
	cr_assert_eq(fsck(false)->n, 0);
	/* a reopened store hands out numbers above every one in use */
	tu_reopen();
	cr_assert_eq(tree_lookup(T, "/d/sub/f-link", &a), 0);
	tu_mkfile(T, "/new", "", 0);
	cr_assert_eq(tree_lookup(T, "/new", &b), 0);
	cr_assert_gt(b.ino, a.ino);
	cr_assert_eq(fsck(false)->n, 0);
	sbuf_release(&k);
	sbuf_release(&v);
}

Test(fsck, leftover_journal_replayed_by_repair, .init = tu_setup,
     .fini = tu_teardown)
{
	struct store_options o = {.rename_batch = 2};
	pid_t pid;
	int status;
	struct found *f;
	struct tree_attr a;

	populate();
	for (int i = 0; i < 10; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/d/sub/n%d", i);
		tu_mkfile(T, p, "x", 1);
	}
	store_close(tu_store);
	tu_store = NULL;
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		struct store *s;
		struct tree *t;
		setenv("PATHFS_CRASH_AFTER_BATCHES", "3", 1);
		if (store_open(&s, tu_dir, &o) || store_drive(s, "main", &t))
			_exit(10);
		tree_rename(t, "/d", "/e", 0, NULL);
		_exit(11);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status));
	/* read-only open: no replay; fsck names the record */
	{
		struct store_options ro = {.read_only = true};
		cr_assert_eq(store_open(&tu_store, tu_dir, &ro), 0);
		cr_assert_eq(store_drive(tu_store, "main", &tu_tree), 0);
	}
	f = fsck(false);
	cr_assert_eq(f->n, 1, "%s", f->text);
	cr_assert(strstr(f->text, "unfinished rename /d -> /e"), "%s", f->text);
	store_close(tu_store);
	tu_store = NULL;
	/* a read-write open replays it */
	tu_store = tu_open(tu_dir);
	cr_assert_eq(store_drive(tu_store, "main", &tu_tree), 0);
	cr_assert_eq(tree_lookup(T, "/e/sub/n9", &a), 0);
	cr_assert_eq(fsck(false)->n, 0);
	/* a record planted in an open store: fsck --repair replays it */
	{
		struct journal_rec rec = {0};
		struct kv_batch *b = kv_batch_new(T->store->kv);

		cr_assert_eq(tree_alloc_ino(T, &rec.seq), 0);
		rec.op = JOP_RENAME;
		rec.phase = 1;
		sbuf_adds(&rec.src, "/e");
		sbuf_adds(&rec.dst, "/g");
		sbuf_nul(&rec.cursor);
		sbuf_nul(&rec.sdrive);
		journal_rec_put(T, b, &rec);
		cr_assert_eq(tree_commit(T, b), 0);
		kv_batch_free(b);
		journal_rec_release(&rec);
	}
	f = fsck(false);
	cr_assert_eq(f->n, 1, "%s", f->text);
	f = fsck(true);
	cr_assert(strstr(f->text, "unfinished rename /e -> /g (replayed)"),
		  "%s", f->text);
	cr_assert_eq(tree_lookup(T, "/g/sub/n9", &a), 0);
	cr_assert_eq(tree_lookup(T, "/e", &a), -ENOENT);
	cr_assert_eq(fsck(false)->n, 0);
}

Test(fsck, leftover_temporary_keys, .init = tu_setup, .fini = tu_teardown)
{
	struct sbuf lo = {0}, hi = {0};
	struct found *f;

	populate();
	key_xtmp_range(&lo, &hi, "main", 4242);
	sbuf_adds(&lo, "a//b");
	put_raw(&lo, "zz", 2);
	f = fsck(false);
	cr_assert_eq(f->n, 1, "%s", f->text);
	cr_assert(strstr(f->text, "XTMP#0000000000001092: 1 temporary key"),
		  "%s", f->text);
	fsck(true);
	cr_assert(!key_exists(&lo));
	cr_assert_eq(fsck(false)->n, 0);
	sbuf_release(&lo);
	sbuf_release(&hi);
}

Test(fsck, names_with_control_bytes_stay_one_line, .init = tu_setup,
     .fini = tu_teardown)
{
	struct sbuf k = {0};
	struct found *f;

	tu_mkfile(T, "/a\nb", "x", 1);
	key_node(&k, "main", "/a\nb");
	put_raw(&k, "\x07", 1);
	f = fsck(false);
	cr_assert_eq(f->n, 2, "%s", f->text); /* and its content */
	cr_assert(strstr(f->text, "/a\\x0ab: value does not decode"), "%s",
		  f->text);
	sbuf_release(&k);
}

Test(fsck, paused_clone_keeps_its_file_in_progress, .init = tu_setup,
     .fini = tu_teardown)
{
	struct journal_rec rec = {0};
	struct kv_batch *b = kv_batch_new(T->store->kv);
	struct sbuf k = {0};
	struct found *f;

	populate();
	/* a clone of /d to /c stopped in the middle of a file: the record
	 * names the new inode, whose first block is already written */
	cr_assert_eq(tree_alloc_ino(T, &rec.seq), 0);
	cr_assert_eq(tree_alloc_ino(T, &rec.ino), 0);
	rec.op = JOP_CLONE;
	rec.phase = 1;
	rec.blk = 1;
	sbuf_adds(&rec.src, "/d");
	sbuf_adds(&rec.dst, "/c");
	sbuf_adds(&rec.cursor, "/sub");
	sbuf_adds(&rec.sdrive, "main");
	journal_rec_put(T, b, &rec);
	key_data(&k, "main", rec.ino, 0);
	kv_batch_put(b, k.buf, k.len, "block", 5);
	cr_assert_eq(tree_commit(T, b), 0);
	f = fsck(false);
	cr_assert_eq(f->n, 1, "%s", f->text);
	cr_assert(strstr(f->text, "paused clone /d -> /c"), "%s", f->text);
	f = fsck(true);
	cr_assert_eq(f->n, 1, "%s", f->text);
	cr_assert(key_exists(&k), "repair dropped the clone's blocks");
	journal_rec_release(&rec);
	kv_batch_free(b);
	sbuf_release(&k);
}

/* Reads the whole of @path (up to 64 bytes) into @buf; returns its length. */
static size_t read_all(const char *path, char *buf)
{
	struct tree_attr a;
	size_t got = 0;

	cr_assert_eq(tree_lookup(T, path, &a), 0);
	cr_assert_eq(tree_read(T, path, a.ino, 0, 64, buf, &got), 0);
	return got;
}

static size_t value_len(const struct sbuf *k)
{
	char *v = NULL;
	size_t vl = 0;

	cr_assert_eq(kv_get(tu_store->kv, k->buf, k->len, &v, &vl), 0);
	free(v);
	return vl;
}

Test(fsck, block_longer_than_the_block_size_is_reported_not_cut,
     .init = tu_setup, .fini = tu_teardown)
{
	size_t bs = tree_block_size(T);
	char *junk = malloc(bs + 10);
	struct sbuf k = {0};
	struct tree_attr a;
	struct found *f;
	char want[64];

	populate();
	tu_mkfile(T, "/d/long", "0123456789", 10);
	cr_assert_eq(tree_lookup(T, "/d/long", &a), 0);
	/* the file's size covers the block, so only its length is wrong */
	cr_assert_eq(tree_setattr(T, "/d/long", a.ino,
				  &(struct tree_attr){.size = 2 * bs},
				  TREE_SET_SIZE, NULL),
		     0);
	memset(junk, 'j', bs + 10);
	key_data(&k, "main", a.ino, 0);
	put_raw(&k, junk, bs + 10);
	f = fsck(false);
	cr_assert_eq(f->n, 1, "%s", f->text);
	snprintf(want, sizeof(want), "DATA#%016llx#0000000000000000",
		 (unsigned long long)a.ino);
	cr_assert(strstr(f->text, want), "%s", f->text);
	snprintf(want, sizeof(want), "inode %llu, /d/long",
		 (unsigned long long)a.ino);
	cr_assert(strstr(f->text, want), "%s", f->text);
	cr_assert(strstr(f->text, "longer than the block size"), "%s", f->text);
	/* reported only: cutting it would serve junk as content */
	f = fsck(true);
	cr_assert_eq(f->n, 1, "%s", f->text);
	cr_assert(strstr(f->text, "not repaired"), "%s", f->text);
	cr_assert_eq(value_len(&k), bs + 10);
	free(junk);
	sbuf_release(&k);
}

Test(fsck, blocks_past_the_end_of_file_dropped_by_repair, .init = tu_setup,
     .fini = tu_teardown)
{
	size_t bs = tree_block_size(T);
	struct sbuf k1 = {0}, k2 = {0}, k3 = {0};
	struct tree_attr g, fl;
	struct found *f;
	char buf[64], want[160];

	populate();
	cr_assert_eq(tree_lookup(T, "/d/sub/g", &g), 0);
	cr_assert_eq(tree_lookup(T, "/d/f", &fl), 0); /* hard-linked */
	/* /d/sub/g (5 bytes): a block wholly past its end */
	key_data(&k1, "main", g.ino, 3);
	put_raw(&k1, "stale", 5);
	/* /d/f (5 bytes, INODE record): its only block holds 11 bytes */
	key_data(&k2, "main", fl.ino, 0);
	put_raw(&k2, "hello world", 11);
	/* a block both too long and past the end: past the end wins */
	{
		char *junk = calloc(1, bs + 1);
		key_data(&k3, "main", fl.ino, 1);
		put_raw(&k3, junk, bs + 1);
		free(junk);
	}
	f = fsck(false);
	/* three blocks, and two files with more blocks than counted */
	cr_assert_eq(f->n, 5, "%s", f->text);
	cr_assert(strstr(f->text, "/d/sub/g: block count 1, but 2 blocks "
				  "stored (st_blocks is wrong)"),
		  "%s", f->text);
	snprintf(want, sizeof(want),
		 "DATA#%016llx#0000000000000003 (inode %llu, /d/sub/g): block "
		 "lies wholly past the end of file (size 5)",
		 (unsigned long long)g.ino, (unsigned long long)g.ino);
	cr_assert(strstr(f->text, want), "%s", f->text);
	snprintf(want, sizeof(want), "DATA#%016llx#0000000000000000",
		 (unsigned long long)fl.ino);
	cr_assert(strstr(f->text, want), "%s", f->text);
	cr_assert(strstr(f->text, "6 bytes lie past the end of file (size 5)"),
		  "%s", f->text);
	snprintf(want, sizeof(want), "DATA#%016llx#0000000000000001",
		 (unsigned long long)fl.ino);
	cr_assert(strstr(f->text, want), "%s", f->text);
	/* a hard-linked inode is named by one of its links */
	cr_assert(strstr(f->text, "/d/f)") || strstr(f->text, "f-link)"), "%s",
		  f->text);

	/* the repaired blocks make the counts right again: not findings */
	f = fsck(true);
	cr_assert_eq(f->n, 3, "%s", f->text);
	cr_assert(!strstr(f->text, "not repaired"), "%s", f->text);
	cr_assert(!key_exists(&k1));
	cr_assert(!key_exists(&k3));
	cr_assert_eq(value_len(&k2), 5);
	cr_assert_eq(fsck(false)->n, 0, "%s", fsck(false)->text);
	/* the files read as before, and an extension reads zeros */
	cr_assert_eq(read_all("/d/sub/g", buf), 5);
	cr_assert_eq(memcmp(buf, "world", 5), 0);
	cr_assert_eq(tree_setattr(T, "/d/f", fl.ino,
				  &(struct tree_attr){.size = 11},
				  TREE_SET_SIZE, NULL),
		     0);
	cr_assert_eq(read_all("/d/f", buf), 11);
	cr_assert_eq(memcmp(buf, "hello\0\0\0\0\0\0", 11), 0);
	sbuf_release(&k1);
	sbuf_release(&k2);
	sbuf_release(&k3);
}

Test(fsck, empty_blocks_past_the_end_only_with_the_prealloc_flag,
     .init = tu_setup, .fini = tu_teardown)
{
	size_t bs = tree_block_size(T);
	struct sbuf k1 = {0}, k2 = {0}, k3 = {0};
	struct tree_attr g, fl;
	struct found *f;

	populate();
	cr_assert_eq(tree_lookup(T, "/d/sub/g", &g), 0);
	cr_assert_eq(tree_lookup(T, "/d/f", &fl), 0); /* hard-linked */
	/* fallocate(KEEP_SIZE) past the end of /d/sub/g: blocks 1, 2 */
	cr_assert_eq(tree_fallocate(T, "/d/sub/g", g.ino, TREE_FALLOC_KEEP_SIZE,
				    0, 3 * bs, NULL),
		     0);
	cr_assert_eq(tree_lookup(T, "/d/sub/g", &g), 0);
	cr_assert(g.flags & TREE_F_PREALLOC);
	cr_assert_eq(g.blocks, 3);
	cr_assert_eq(fsck(false)->n, 0, "%s", fsck(false)->text);
	/* with the flag, a block holding bytes past the end is still wrong */
	key_data(&k1, "main", g.ino, 4);
	put_raw(&k1, "stale", 5);
	/* without it, so is an empty one */
	key_data(&k2, "main", fl.ino, 2);
	put_raw(&k2, "", 0);
	f = fsck(false);
	/* two blocks, and two files with more blocks than counted */
	cr_assert_eq(f->n, 4, "%s", f->text);
	cr_assert(strstr(f->text, "/d/sub/g: block count 3, but 4 blocks"),
		  "%s", f->text);
	f = fsck(true);
	cr_assert_eq(f->n, 2, "%s", f->text);
	cr_assert(!key_exists(&k1));
	cr_assert(!key_exists(&k2));
	key_data(&k3, "main", g.ino, 2);
	cr_assert(key_exists(&k3)); /* the allocation stays */
	cr_assert_eq(fsck(false)->n, 0, "%s", fsck(false)->text);
	sbuf_release(&k1);
	sbuf_release(&k2);
	sbuf_release(&k3);
}

Test(fsck, malformed_data_key_is_a_finding, .init = tu_setup,
     .fini = tu_teardown)
{
	struct sbuf k = {0};
	struct tree_attr a;
	struct found *f;

	populate();
	cr_assert_eq(tree_lookup(T, "/d/sub/g", &a), 0);
	key_data(&k, "main", a.ino, 0);
	sbuf_adds(&k, "zz");
	put_raw(&k, "x", 1);
	f = fsck(false);
	cr_assert_eq(f->n, 1, "%s", f->text);
	cr_assert(strstr(f->text, "malformed key"), "%s", f->text);
	sbuf_release(&k);
}

/* Rewrites the node at @path with block count @blocks (raw, as damage). */
static void set_count(const char *path, uint64_t blocks)
{
	struct sbuf k = {0}, v = {0};
	struct node n;

	cr_assert_eq(tree_get_node(T, path, &n, false), 0);
	n.a.blocks = blocks;
	key_node(&k, "main", path);
	node_encode(&v, &n.a, NULL);
	put_raw(&k, v.buf, v.len);
	sbuf_release(&k);
	sbuf_release(&v);
}

Test(fsck, wrong_block_count_reported_and_repaired, .init = tu_setup,
     .fini = tu_teardown)
{
	size_t bs = tree_block_size(T);
	struct tree_attr a;
	struct found *f;

	populate();
	cr_assert_eq(tree_lookup(T, "/d/sub/g", &a), 0);
	cr_assert_eq(
	    tree_write(T, "/d/sub/g", a.ino, 3 * bs, "x", 1, false, &a), 0);
	cr_assert_eq(a.blocks, 2);
	cr_assert_eq(fsck(false)->n, 0, "%s", fsck(false)->text);
	set_count("/d/sub/g", 7);
	f = fsck(false);
	cr_assert_eq(f->n, 1, "%s", f->text);
	cr_assert(strstr(f->text, "/d/sub/g: block count 7, but 2 blocks "
				  "stored (st_blocks is wrong)"),
		  "%s", f->text);
	f = fsck(true);
	cr_assert_eq(f->n, 1, "%s", f->text);
	cr_assert(strstr(f->text, "(repaired)"), "%s", f->text);
	cr_assert_eq(fsck(false)->n, 0, "%s", fsck(false)->text);
	cr_assert_eq(tree_lookup(T, "/d/sub/g", &a), 0);
	cr_assert_eq(a.blocks, 2);
	/* a record from before the count (unknown) is not a finding */
	set_count("/d/sub/g", TREE_BLOCKS_UNKNOWN);
	cr_assert_eq(fsck(false)->n, 0, "%s", fsck(false)->text);
}
