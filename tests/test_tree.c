/*
 * test_tree.c - the namespace of a drive (store/tree.c): create, lookup,
 * link, unlink, rmdir, rename, setattr, orphans, persistence, corrupt values
 * and every errno of those paths, on real stores.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch_i.h"
#include "content_i.h"
#include "drive_i.h"
#include "testutil.h"

#define T tu_tree

static int mk(const char *path, mode_t mode)
{
	return tree_mknode(T, path, mode, 0, 0, 0, NULL, NULL);
}

static struct tree_attr st(const char *path)
{
	return tu_stat(T, path);
}

static int lk(const char *path)
{
	struct tree_attr a;
	return tree_lookup(T, path, &a);
}

static char *readall(const char *path, uint64_t ino, size_t *len)
{
	return tu_read(T, path, ino, len);
}

/* Writes @val at @key of the store, bypassing every check. */
static void plant(const char *key, size_t klen, const char *val, size_t vlen)
{
	struct kv_batch *b = kv_batch_new(tu_store->kv);

	kv_batch_put(b, key, klen, val, vlen);
	cr_assert_eq(kv_batch_commit(tu_store->kv, b, false), 0);
	kv_batch_free(b);
}

static bool key_exists(const struct sbuf *k)
{
	char *v = NULL;
	size_t n;
	int rc = kv_get(tu_store->kv, k->buf, k->len, &v, &n);

	free(v);
	cr_assert(rc == 0 || rc == -ENOENT);
	return rc == 0;
}

static void fsck_report(void *ctx, const char *msg)
{
	printf("fsck: %s\n", msg);
}

/* The drive passes fsck: every invariant the operations keep holds. */
static void fsck_clean(void)
{
	size_t findings = 99;

	cr_assert_eq(tree_fsck(T, false, fsck_report, NULL, &findings), 0);
	cr_expect_eq(findings, 0, "fsck findings");
}

Test(tree, root_exists, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a = st("/");

	cr_expect_eq(a.ino, TREE_ROOT_INO);
	cr_expect(S_ISDIR(a.mode));
	cr_expect_eq(a.nlink, 2);
}

Test(tree, mknode_kinds_and_attrs, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a, b;
	char *target;

	cr_assert_eq(tree_mknode(T, "/f", S_IFREG | 0640, 12, 34, 0, NULL, &a),
		     0);
	b = st("/f");
	cr_expect_eq(a.ino, b.ino);
	cr_expect_eq(b.mode, S_IFREG | 0640);
	cr_expect_eq(b.uid, 12);
	cr_expect_eq(b.gid, 34);
	cr_expect_eq(b.nlink, 1);
	cr_expect_eq(b.size, 0);
	cr_expect_gt(b.mtime_ns, 0);

	cr_assert_eq(
	    tree_mknode(T, "/l", S_IFLNK | 0777, 0, 0, 0, "../x/y", NULL), 0);
	b = st("/l");
	cr_expect(S_ISLNK(b.mode));
	cr_expect_eq(b.size, 6);
	cr_assert_eq(tree_readlink(T, "/l", &target), 0);
	cr_expect_str_eq(target, "../x/y");
	free(target);
	cr_expect_eq(tree_readlink(T, "/f", &target), -EINVAL);
	cr_expect_eq(tree_readlink(T, "/nope", &target), -ENOENT);

	cr_assert_eq(mk("/fifo", S_IFIFO | 0600), 0);
	cr_expect(S_ISFIFO(st("/fifo").mode));
	cr_assert_eq(
	    tree_mknode(T, "/dev", S_IFCHR | 0600, 0, 0, 0x0103, NULL, NULL),
	    0);
	cr_expect_eq(st("/dev").rdev, 0x0103);
	cr_assert_eq(mk("/sock", S_IFSOCK | 0600), 0);

	/* inode numbers are distinct */
	cr_expect_neq(st("/f").ino, st("/l").ino);
	cr_expect_neq(st("/fifo").ino, st("/sock").ino);
}

Test(tree, setgid_folder_gives_its_group, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a;

	cr_assert_eq(tree_mknode(T, "/g", S_IFDIR | S_ISGID | 0775, 1, 1234, 0,
				 NULL, NULL),
		     0);
	cr_assert_eq(tree_mknode(T, "/g/f", S_IFREG | 0644, 7, 99, 0, NULL, &a),
		     0);
	cr_expect(a.gid == 1234 && a.uid == 7 && !(a.mode & S_ISGID));
	cr_assert_eq(tree_mknode(T, "/g/d", S_IFDIR | 0755, 7, 99, 0, NULL, &a),
		     0);
	cr_expect(a.gid == 1234 && (a.mode & S_ISGID));
	cr_assert_eq(
	    tree_mknode(T, "/g/d/l", S_IFLNK | 0777, 7, 99, 0, "t", &a), 0);
	cr_expect_eq(a.gid, 1234);
	/* an O_TMPFILE file too, and it keeps the group when named */
	cr_assert_eq(tree_mktmp(T, "/g", 0640, 0, 7, 99, &a), 0);
	cr_expect(a.gid == 1234 && a.uid == 7 && !(a.mode & S_ISGID));
	cr_assert_eq(tree_link_tmp(T, a.ino, "/g/t", &a), 0);
	cr_expect_eq(st("/g/t").gid, 1234);
	/* stored so, and not outside */
	cr_assert_eq(tree_lookup(T, "/g/d", &a), 0);
	cr_expect(a.gid == 1234 && (a.mode & S_ISGID));
	cr_assert_eq(tree_mknode(T, "/h", S_IFREG | 0644, 7, 99, 0, NULL, &a),
		     0);
	cr_expect_eq(a.gid, 99);
}

Test(tree, errnos, .init = tu_setup, .fini = tu_teardown)
{
	char name[300];

	cr_assert_eq(mk("/d", S_IFDIR | 0755), 0);
	cr_assert_eq(mk("/d/f", S_IFREG | 0644), 0);
	cr_expect_eq(mk("/d", S_IFDIR | 0755), -EEXIST);
	cr_expect_eq(mk("/d/f", S_IFREG | 0644), -EEXIST);
	cr_expect_eq(mk("/", S_IFDIR | 0755), -EEXIST);
	cr_expect_eq(mk("/missing/f", S_IFREG | 0644), -ENOENT);
	cr_expect_eq(mk("/d/f/x", S_IFREG | 0644), -ENOTDIR);
	cr_expect_eq(mk("d/f", S_IFREG | 0644), -EINVAL);
	cr_expect_eq(mk("/d//f", S_IFREG | 0644), -EINVAL);
	cr_expect_eq(mk("/d/.", S_IFREG | 0644), -EINVAL);
	cr_expect_eq(mk("/d/..", S_IFREG | 0644), -EINVAL);
	cr_expect_eq(mk("/d/", S_IFREG | 0644), -EINVAL);
	cr_expect_eq(mk("/lnk", S_IFLNK | 0777), -EINVAL); /* no target */

	memset(name, 'n', sizeof(name));
	name[0] = '/';
	name[256] = '\0'; /* 255-byte name: fine */
	cr_expect_eq(mk(name, S_IFREG | 0644), 0);
	cr_expect_eq(st(name).nlink, 1);
	name[256] = 'n';
	name[257] = '\0'; /* 256-byte name */
	cr_expect_eq(mk(name, S_IFREG | 0644), -ENAMETOOLONG);
	cr_expect_eq(lk(name), -ENAMETOOLONG);

	cr_expect_eq(lk("/nope"), -ENOENT);
	cr_expect_eq(lk("/d/nope"), -ENOENT);
	cr_expect_eq(tree_unlink(T, "/d", 0, NULL), -EISDIR);
	cr_expect_eq(tree_unlink(T, "/nope", 0, NULL), -ENOENT);
	cr_expect_eq(tree_unlink(T, "/", 0, NULL), -EISDIR);
	cr_expect_eq(tree_rmdir(T, "/d"), -ENOTEMPTY);
	cr_expect_eq(tree_rmdir(T, "/d/f"), -ENOTDIR);
	cr_expect_eq(tree_rmdir(T, "/nope"), -ENOENT);
	cr_expect_eq(tree_rmdir(T, "/"), -EBUSY);
	cr_expect_eq(tree_link(T, "/d", "/d2", NULL), -EPERM);
	cr_expect_eq(tree_link(T, "/nope", "/x", NULL), -ENOENT);
	cr_expect_eq(tree_link(T, "/d/f", "/d", NULL), -EEXIST);
	cr_expect_eq(tree_link(T, "/d/f", "/nope/x", NULL), -ENOENT);
	cr_expect_eq(tree_link(T, "/d/f", "/d/f/x", NULL), -ENOTDIR);
	/* nothing above changed the tree */
	cr_expect_eq(st("/d").nlink, 2);
	cr_expect_eq(st("/").nlink, 3);
}

Test(tree, mkdir_rmdir_nlink_and_parent_times, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_attr r0, r1, d;

	r0 = st("/");
	usleep(2000);
	cr_assert_eq(mk("/a", S_IFDIR | 0755), 0);
	cr_assert_eq(mk("/b", S_IFDIR | 0755), 0);
	cr_assert_eq(mk("/f", S_IFREG | 0644), 0);
	r1 = st("/");
	cr_expect_eq(r1.nlink, 4);
	cr_expect_gt(r1.mtime_ns, r0.mtime_ns);
	cr_expect_gt(r1.ctime_ns, r0.ctime_ns);
	cr_assert_eq(mk("/a/x", S_IFDIR | 0755), 0);
	d = st("/a");
	cr_expect_eq(d.nlink, 3);
	cr_expect_eq(st("/").nlink, 4);
	usleep(2000);
	cr_assert_eq(tree_rmdir(T, "/a/x"), 0);
	cr_expect_eq(st("/a").nlink, 2);
	cr_expect_gt(st("/a").mtime_ns, d.mtime_ns);
	cr_expect_eq(lk("/a/x"), -ENOENT);
	cr_assert_eq(tree_rmdir(T, "/a"), 0);
	cr_expect_eq(st("/").nlink, 3);
	cr_assert_eq(tree_unlink(T, "/f", 0, NULL), 0);
	cr_expect_eq(st("/").nlink, 3);
	cr_expect_eq(lk("/f"), -ENOENT);
	fsck_clean();
}

/*
 * Creates and unlinks guess the parent folder's inode from the last folder
 * the thread used (tree.c's dir_hint): a folder replaced under the same name
 * (new inode), by a file, or the same path on another drive must still get
 * its own update, and the old folder none.
 */
Test(tree, parent_updates_follow_a_folder_replaced_under_its_name,
     .init = tu_setup, .fini = tu_teardown)
{
	struct tree *t2;
	struct tree_attr p0, q0, p1, a;

	tu_mkdir(T, "/p");
	cr_assert_eq(mk("/p/a", S_IFREG | 0644), 0);
	cr_assert_eq(tree_rename(T, "/p", "/q", 0, NULL), 0);
	tu_mkdir(T, "/p");
	p0 = st("/p");
	q0 = st("/q");
	cr_assert_neq(p0.ino, q0.ino);
	usleep(2000);
	cr_assert_eq(mk("/p/b", S_IFDIR | 0755), 0);
	p1 = st("/p");
	cr_expect_gt(p1.mtime_ns, p0.mtime_ns);
	cr_expect_eq(p1.nlink, 3);
	cr_expect_eq(st("/q").mtime_ns, q0.mtime_ns);
	cr_expect_eq(st("/q").nlink, 2);
	/* unlink in the old folder, then in the new one */
	cr_assert_eq(tree_unlink(T, "/q/a", 0, NULL), 0);
	cr_expect_eq(st("/p").mtime_ns, p1.mtime_ns);
	cr_assert_eq(tree_rmdir(T, "/p/b"), 0);
	cr_expect_eq(st("/p").nlink, 2);
	cr_expect_eq(st("/q").nlink, 2);
	/* the same path on another drive is another folder */
	cr_assert_eq(store_drive_create(tu_store, "other", 0, 0), 0);
	cr_assert_eq(store_drive(tu_store, "other", &t2), 0);
	cr_assert_eq(tree_mknode(t2, "/p", S_IFDIR | 0755, 0, 0, 0, NULL, &a),
		     0);
	cr_assert_eq(
	    tree_mknode(t2, "/p/x", S_IFDIR | 0755, 0, 0, 0, NULL, NULL), 0);
	cr_assert_eq(mk("/p/y", S_IFDIR | 0755), 0);
	cr_assert_eq(tree_lookup(t2, "/p", &a), 0);
	cr_expect_eq(a.nlink, 3);
	cr_expect_eq(st("/p").nlink, 3);
	cr_assert_eq(tree_rmdir(T, "/p/y"), 0);
	/* the folder replaced by a file */
	cr_assert_eq(tree_rmdir(T, "/p"), 0);
	cr_assert_eq(mk("/p", S_IFREG | 0644), 0);
	cr_expect_eq(mk("/p/z", S_IFREG | 0644), -ENOTDIR);
	cr_expect_eq(tree_unlink(T, "/p/z", 0, NULL), -ENOENT);
	cr_expect_eq(st("/p").size, 0);
	fsck_clean();
}

/*
 * tree_remove() takes the inode number its caller read at the path as a
 * guess: a right guess, a wrong one (another file's, one that no longer
 * exists: the name was replaced since) and none remove the node at the path,
 * and only it; the kind is checked as by unlink and rmdir.
 */
Test(tree, remove_guesses_the_inode, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a, b, old;

	tu_mkdir(T, "/d");
	tu_mkfile(T, "/d/a", "aaa", 3);
	tu_mkfile(T, "/d/b", "bbb", 3);
	tu_mkdir(T, "/d/s");
	a = st("/d/a");
	b = st("/d/b");
	cr_expect_eq(tree_remove(T, "/d/a", b.ino, false, 0, NULL), 0);
	cr_expect_eq(lk("/d/a"), -ENOENT);
	cr_expect_eq(st("/d/b").ino, b.ino);
	cr_expect_eq(st("/d/b").size, 3);
	cr_expect_eq(tree_remove(T, "/d/b", b.ino, true, 0, NULL), -ENOTDIR);
	cr_expect_eq(tree_remove(T, "/d/s", st("/d/s").ino, false, 0, NULL),
		     -EISDIR);
	/* the name replaced since the caller read it */
	old = st("/d/b");
	cr_assert_eq(tree_unlink(T, "/d/b", 0, NULL), 0);
	tu_mkfile(T, "/d/b", "new", 3);
	cr_assert_neq(st("/d/b").ino, old.ino);
	cr_expect_eq(tree_remove(T, "/d/b", old.ino, false, 0, NULL), 0);
	cr_expect_eq(lk("/d/b"), -ENOENT);
	cr_expect_eq(tree_remove(T, "/d/b", old.ino, false, 0, NULL), -ENOENT);
	cr_expect_eq(tree_remove(T, "/d/s", a.ino, true, 0, NULL), 0);
	cr_expect_eq(lk("/d/s"), -ENOENT);
	cr_expect_eq(st("/d").nlink, 2);
	cr_expect_eq(tree_remove(T, "/d", 0, true, 0, NULL), 0);
	cr_expect_eq(lk("/d"), -ENOENT);
	fsck_clean();
}

struct chmod_worker {
	int rounds;
	mode_t last;
};

static void *chmod_worker(void *arg)
{
	struct chmod_worker *w = arg;
	struct tree_attr in = {0};

	for (int i = 0; i < w->rounds; i++) {
		in.mode = 0700 | (mode_t)(i % 64);
		if (tree_setattr(T, "/p", 0, &in, TREE_SET_MODE, NULL))
			return (void *)1;
		w->last = in.mode;
	}
	return NULL;
}

/*
 * A folder's node is rewritten by every create and unlink in it (times,
 * nlink) and by setattr under its inode's stripe alone: a create must read
 * the folder under that stripe, or a chmod racing with it is lost.
 */
Test(tree, creates_do_not_lose_a_racing_chmod_of_the_folder, .init = tu_setup,
     .fini = tu_teardown)
{
	struct chmod_worker w = {.rounds = 8000};
	pthread_t th;
	void *res;
	char path[64];

	tu_mkdir(T, "/p");
	tu_mkdir(T, "/other");
	cr_assert_eq(pthread_create(&th, NULL, chmod_worker, &w), 0);
	for (int i = 0; i < 1500; i++) {
		snprintf(path, sizeof(path), "/p/d%04d", i);
		cr_assert_eq(mk(path, S_IFDIR | 0755), 0);
		snprintf(path, sizeof(path), "/other/f%04d", i);
		cr_assert_eq(mk(path, S_IFREG | 0644), 0);
		if (i % 3 == 0) {
			snprintf(path, sizeof(path), "/p/d%04d", i);
			cr_assert_eq(tree_rmdir(T, path), 0);
		}
	}
	cr_assert_eq(pthread_join(th, &res), 0);
	cr_assert_null(res);
	cr_expect_eq(st("/p").mode & 07777, w.last);
	cr_expect_eq(st("/p").nlink, 2 + 1000);
	fsck_clean();
}

Test(tree, unlink_drops_content, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a;
	struct sbuf k = {0};
	uint64_t orphan = 99;
	char big[200000];

	memset(big, 'x', sizeof(big));
	tu_mkfile(T, "/f", big, sizeof(big));
	a = st("/f");
	cr_assert_eq(tree_setxattr(T, "/f", a.ino, "user.a", "v", 1, 0), 0);
	cr_assert_eq(tree_unlink(T, "/f", 0, &orphan), 0);
	cr_expect_eq(orphan, 0);
	key_data(&k, T->name, a.ino, 0);
	cr_expect_not(key_exists(&k));
	sbuf_reset(&k);
	key_data(&k, T->name, a.ino, 2);
	cr_expect_not(key_exists(&k));
	sbuf_reset(&k);
	key_xattr(&k, T->name, a.ino, "user.a");
	cr_expect_not(key_exists(&k));
	sbuf_release(&k);
	fsck_clean();
}

Test(tree, hard_links, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a, b, out;
	size_t n;
	char *p;

	tu_mkdir(T, "/d");
	tu_mkfile(T, "/f", "hello", 5);
	a = st("/f");
	cr_assert_eq(tree_link(T, "/f", "/d/g", &out), 0);
	cr_expect_eq(out.nlink, 2);
	cr_expect_eq(out.ino, a.ino);
	b = st("/d/g");
	cr_expect_eq(b.ino, a.ino);
	cr_expect_eq(b.nlink, 2);
	cr_expect_eq(b.size, 5);
	cr_expect(b.flags & TREE_F_LINKED);
	cr_expect_eq(st("/f").nlink, 2);

	/* shared content: write through one, read through the other */
	cr_assert_eq(tree_write(T, "/d/g", a.ino, 5, " world", 6, false, NULL),
		     0);
	p = readall("/f", a.ino, &n);
	cr_expect_eq(n, 11);
	cr_expect(memcmp(p, "hello world", 11) == 0);
	cr_expect_eq(st("/f").size, 11);
	/* attributes are shared too */
	out.mode = 0600;
	cr_assert_eq(tree_setattr(T, "/f", a.ino, &out, TREE_SET_MODE, NULL),
		     0);
	cr_expect_eq(st("/d/g").mode, S_IFREG | 0600);
	/* by inode number alone */
	cr_assert_eq(tree_getattr(T, NULL, a.ino, &out), 0);
	cr_expect_eq(out.size, 11);

	cr_assert_eq(tree_link(T, "/f", "/h", NULL), 0);
	cr_expect_eq(st("/h").nlink, 3);
	cr_assert_eq(tree_unlink(T, "/f", 0, NULL), 0);
	cr_expect_eq(st("/h").nlink, 2);
	cr_assert_eq(tree_unlink(T, "/h", 0, NULL), 0);
	b = st("/d/g");
	cr_expect_eq(b.nlink, 1);
	p = readall("/d/g", a.ino, &n);
	cr_expect_eq(n, 11);
	cr_expect(memcmp(p, "hello world", 11) == 0);
	cr_assert_eq(tree_unlink(T, "/d/g", 0, NULL), 0);
	cr_expect_eq(tree_getattr(T, NULL, a.ino, &out), -ENOENT);

	/* a symlink can be hard linked and still reads its target */
	cr_assert_eq(tree_mknode(T, "/s", S_IFLNK | 0777, 0, 0, 0, "tgt", NULL),
		     0);
	cr_assert_eq(tree_link(T, "/s", "/s2", NULL), 0);
	cr_assert_eq(tree_readlink(T, "/s2", &p), 0);
	cr_expect_str_eq(p, "tgt");
	free(p);
	cr_expect_eq(st("/s").size, 3);
	/* ... also by number, whichever names are left */
	cr_assert_eq(tree_unlink(T, "/s", 0, NULL), 0);
	cr_assert_eq(tree_readlink_ino(T, st("/s2").ino, &p), 0);
	cr_expect_str_eq(p, "tgt");
	free(p);
	cr_assert_eq(tree_mknode(T, "/s3", S_IFLNK | 0777, 0, 0, 0, "x", &out),
		     0);
	cr_expect_eq(tree_readlink_ino(T, out.ino, &p), -ENOENT,
		     "a symlink with one name has no INODE record");
	cr_expect_eq(tree_readlink_ino(T, a.ino, &p), -ENOENT, "freed inode");
	fsck_clean();
}

/* A removed folder still in use (rmdir, or an empty folder renamed over,
 * also by a journaled rename of a non-empty folder) is an orphan as a file
 * is: stat-able and changeable by number with nlink 0, reclaimed whole. */
Test(tree, folder_orphans, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a, in = {0}, out;
	uint64_t orphan = 0;
	char *v = NULL;
	size_t n;

	tu_mkdir(T, "/p");
	tu_mkdir(T, "/p/d");
	a = st("/p/d");
	cr_assert_eq(tree_setxattr(T, "/p/d", a.ino, "user.x", "1", 1, 0), 0);
	cr_assert_eq(tree_remove(T, "/p/d", 0, true, TREE_KEEP_ORPHAN, &orphan),
		     0);
	cr_expect_eq(orphan, a.ino);
	cr_expect_eq(lk("/p/d"), -ENOENT);
	cr_expect_eq(st("/p").nlink, 2);
	cr_assert_eq(tree_getattr(T, NULL, a.ino, &out), 0);
	cr_expect(S_ISDIR(out.mode));
	cr_expect_eq(out.nlink, 0);
	in.mode = 0700;
	cr_assert_eq(tree_setattr(T, NULL, a.ino, &in, TREE_SET_MODE, &out), 0);
	cr_expect_eq(out.mode, S_IFDIR | 0700);
	cr_assert_eq(tree_getxattr(T, a.ino, "user.x", (void **)&v, &n), 0);
	free(v);
	fsck_clean();
	cr_assert_eq(tree_reclaim(T, a.ino), 0);
	cr_expect_eq(tree_getattr(T, NULL, a.ino, &out), -ENOENT);
	cr_expect_eq(tree_getxattr(T, a.ino, "user.x", (void **)&v, &n),
		     -ENODATA);
	fsck_clean();

	/* renamed over, by an empty folder and by a non-empty one */
	tu_mkdir(T, "/e");
	tu_mkdir(T, "/t1");
	a = st("/t1");
	cr_assert_eq(tree_rename(T, "/e", "/t1", TREE_KEEP_ORPHAN, &orphan), 0);
	cr_expect_eq(orphan, a.ino);
	cr_assert_eq(tree_getattr(T, NULL, a.ino, &out), 0);
	cr_expect_eq(out.nlink, 0);
	tu_mkdir(T, "/full");
	tu_mkfile(T, "/full/f", "x", 1);
	tu_mkdir(T, "/t2");
	a = st("/t2");
	cr_assert_eq(tree_rename(T, "/full", "/t2", TREE_KEEP_ORPHAN, &orphan),
		     0);
	cr_expect_eq(orphan, a.ino);
	cr_assert_eq(tree_getattr(T, NULL, a.ino, &out), 0);
	cr_expect_eq(out.nlink, 0);
	fsck_clean();
	/* the next open of the store reclaims what was left */
	tu_reopen();
	cr_expect_eq(tree_getattr(T, NULL, a.ino, &out), -ENOENT);
	cr_expect_eq(tree_getattr(T, NULL, orphan, &out), -ENOENT);
	fsck_clean();
}

Test(tree, orphans, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a, out;
	struct sbuf k = {0};
	uint64_t orphan = 0, ino;
	size_t n;
	char *p;

	tu_mkfile(T, "/f", "content", 7);
	a = st("/f");
	cr_assert_eq(tree_setxattr(T, "/f", a.ino, "user.x", "1", 1, 0), 0);
	cr_assert_eq(tree_unlink(T, "/f", TREE_KEEP_ORPHAN, &orphan), 0);
	cr_expect_eq(orphan, a.ino);
	cr_expect_eq(lk("/f"), -ENOENT);
	/* still readable, writable and stat-able by number */
	p = readall(NULL, a.ino, &n);
	cr_expect_eq(n, 7);
	cr_expect(memcmp(p, "content", 7) == 0);
	cr_assert_eq(tree_write(T, NULL, a.ino, 7, "!", 1, false, &out), 0);
	cr_expect_eq(out.size, 8);
	cr_assert_eq(tree_getattr(T, NULL, a.ino, &out), 0);
	cr_expect_eq(out.nlink, 0);
	cr_expect_eq(out.size, 8);
	cr_assert_eq(tree_reclaim(T, a.ino), 0);
	cr_expect_eq(tree_getattr(T, NULL, a.ino, &out), -ENOENT);
	cr_expect_eq(tree_reclaim(T, a.ino), -ENOENT);
	key_data(&k, T->name, a.ino, 0);
	cr_expect_not(key_exists(&k));
	sbuf_reset(&k);
	key_xattr(&k, T->name, a.ino, "user.x");
	cr_expect_not(key_exists(&k));

	/* not reclaimed: the next open does it */
	tu_mkfile(T, "/g", "zzz", 3);
	ino = st("/g").ino;
	cr_assert_eq(tree_link(T, "/g", "/g2", NULL), 0);
	cr_assert_eq(tree_unlink(T, "/g", TREE_KEEP_ORPHAN, &orphan), 0);
	cr_expect_eq(orphan, 0); /* not the last link */
	cr_assert_eq(tree_unlink(T, "/g2", TREE_KEEP_ORPHAN, &orphan), 0);
	cr_expect_eq(orphan, ino);
	cr_assert_eq(tree_getattr(T, NULL, ino, &out), 0);
	tu_reopen();
	cr_expect_eq(tree_getattr(T, NULL, ino, &out), -ENOENT);
	sbuf_reset(&k);
	key_data(&k, T->name, ino, 0);
	cr_expect_not(key_exists(&k));
	sbuf_reset(&k);
	key_orphan(&k, T->name, ino);
	cr_expect_not(key_exists(&k));
	sbuf_release(&k);
	fsck_clean();
}

/* Many orphans freed in few commits: each one whole (mark, record, blocks,
 * xattrs), a number that is no orphan skipped (a plain file, a hard-linked
 * one: an INODE record, nlink 2), and under tree_strict the batches stay
 * within etcd's 128 operations (one batch for all is -E2BIG); numbers
 * already freed free nothing. */
Test(tree, reclaim_many, .init = tu_setup, .fini = tu_teardown)
{
	enum { N = 300 };
	static uint64_t inos[N + 2];
	struct tree_attr out;
	struct sbuf k = {0};
	char path[32], body[32];
	uint64_t orphan = 0, live, linked;
	size_t done = 0, n;
	char *p;

	tu_mkdir(T, "/d");
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "/d/f%d", i);
		snprintf(body, sizeof(body), "file %d", i);
		tu_mkfile(T, path, body, strlen(body));
		inos[i] = st(path).ino;
		cr_assert_eq(
		    tree_setxattr(T, path, inos[i], "user.x", "1", 1, 0), 0);
		cr_assert_eq(tree_unlink(T, path, TREE_KEEP_ORPHAN, &orphan),
			     0);
		cr_assert_eq(orphan, inos[i]);
	}
	tu_mkfile(T, "/live", "alive", 5);
	live = st("/live").ino;
	inos[N] = live; /* has a name: not an orphan */
	tu_mkfile(T, "/linked", "links", 5);
	linked = st("/linked").ino;
	cr_assert_eq(tree_link(T, "/linked", "/linked2", NULL), 0);
	inos[N + 1] = linked; /* an INODE record, two names */
	cr_assert_eq(tree_reclaim_many(T, inos, N + 2, &done), 0);
	cr_expect_eq(done, N);
	for (int i = 0; i < N; i++) {
		cr_expect_eq(tree_getattr(T, NULL, inos[i], &out), -ENOENT,
			     "orphan %d still there", i);
		sbuf_reset(&k);
		key_orphan(&k, T->name, inos[i]);
		cr_expect_not(key_exists(&k));
		sbuf_reset(&k);
		key_data(&k, T->name, inos[i], 0);
		cr_expect_not(key_exists(&k));
		sbuf_reset(&k);
		key_xattr(&k, T->name, inos[i], "user.x");
		cr_expect_not(key_exists(&k));
	}
	p = readall("/live", live, &n);
	cr_expect(n == 5 && memcmp(p, "alive", 5) == 0);
	p = readall("/linked2", linked, &n);
	cr_expect(n == 5 && memcmp(p, "links", 5) == 0);
	cr_expect_eq(st("/linked").nlink, 2);
	cr_expect_eq(tree_reclaim(T, linked), -ENOENT);
	cr_expect_eq(st("/linked2").nlink, 2);
	cr_expect_eq(tree_reclaim_many(T, inos, N, &done), 0);
	cr_expect_eq(done, 0);
	sbuf_release(&k);
	fsck_clean();
}

Test(tree, rename_files, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a, b, r0;
	uint64_t orphan = 1;
	size_t n;
	char *p;

	tu_mkdir(T, "/a");
	tu_mkdir(T, "/b");
	tu_mkfile(T, "/a/f", "one", 3);
	a = st("/a/f");
	r0 = st("/b");
	usleep(2000);
	/* across folders */
	cr_assert_eq(tree_rename(T, "/a/f", "/b/g", 0, &orphan), 0);
	cr_expect_eq(orphan, 0);
	cr_expect_eq(lk("/a/f"), -ENOENT);
	b = st("/b/g");
	cr_expect_eq(b.ino, a.ino);
	cr_expect_gt(b.ctime_ns, a.ctime_ns);
	cr_expect_eq(b.mtime_ns, a.mtime_ns);
	cr_expect_gt(st("/b").mtime_ns, r0.mtime_ns);
	p = readall("/b/g", a.ino, &n);
	cr_expect(n == 3 && memcmp(p, "one", 3) == 0);
	/* replace a file: the old one's content goes */
	tu_mkfile(T, "/b/h", "two", 3);
	b = st("/b/h");
	cr_assert_eq(tree_rename(T, "/b/g", "/b/h", 0, &orphan), 0);
	cr_expect_eq(orphan, 0);
	cr_expect_eq(st("/b/h").ino, a.ino);
	cr_expect_eq(tree_getattr(T, NULL, b.ino, &r0), -ENOENT);
	/* replace an open file: it becomes an orphan */
	tu_mkfile(T, "/b/i", "three", 5);
	b = st("/b/i");
	cr_assert_eq(tree_rename(T, "/b/h", "/b/i", TREE_KEEP_ORPHAN, &orphan),
		     0);
	cr_expect_eq(orphan, b.ino);
	p = readall(NULL, b.ino, &n);
	cr_expect(n == 5 && memcmp(p, "three", 5) == 0);
	cr_assert_eq(tree_reclaim(T, b.ino), 0);
	/* same path, links of one inode: no-ops */
	cr_expect_eq(tree_rename(T, "/b/i", "/b/i", 0, NULL), 0);
	cr_assert_eq(tree_link(T, "/b/i", "/b/j", NULL), 0);
	cr_expect_eq(tree_rename(T, "/b/i", "/b/j", 0, NULL), 0);
	cr_expect_eq(st("/b/i").nlink, 2);
	cr_expect_eq(st("/b/j").nlink, 2);
	/* rename of a hard link keeps the link count */
	cr_assert_eq(tree_rename(T, "/b/j", "/a/k", 0, NULL), 0);
	cr_expect_eq(st("/a/k").nlink, 2);
	cr_expect_eq(st("/a/k").ino, a.ino);
	/* symlink */
	cr_assert_eq(tree_mknode(T, "/a/s", S_IFLNK | 0777, 0, 0, 0, "t", NULL),
		     0);
	cr_assert_eq(tree_rename(T, "/a/s", "/s", 0, NULL), 0);
	cr_assert_eq(tree_readlink(T, "/s", &p), 0);
	cr_expect_str_eq(p, "t");
	free(p);
	cr_expect_eq(st("/").nlink, 4);
	fsck_clean();
}

Test(tree, rename_dirs_and_errnos, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a;

	tu_mkdir(T, "/a");
	tu_mkdir(T, "/a/e");
	tu_mkdir(T, "/b");
	tu_mkdir(T, "/ab");
	tu_mkfile(T, "/f", "", 0);
	tu_mkfile(T, "/b/x", "", 0);
	a = st("/a/e");
	/* empty folder across folders: nlink of both parents */
	cr_assert_eq(tree_rename(T, "/a/e", "/b/e", 0, NULL), 0);
	cr_expect_eq(st("/b/e").ino, a.ino);
	cr_expect_eq(st("/a").nlink, 2);
	cr_expect_eq(st("/b").nlink, 3);
	/* over an empty folder */
	tu_mkdir(T, "/a/t");
	cr_assert_eq(tree_rename(T, "/b/e", "/a/t", 0, NULL), 0);
	cr_expect_eq(st("/a/t").ino, a.ino);
	cr_expect_eq(st("/a").nlink, 3);
	cr_expect_eq(st("/b").nlink, 2);
	cr_expect_eq(lk("/b/e"), -ENOENT);

	cr_expect_eq(tree_rename(T, "/a", "/a/t/z", 0, NULL), -EINVAL);
	cr_expect_eq(tree_rename(T, "/a", "/a/z", 0, NULL), -EINVAL);
	cr_expect_eq(tree_rename(T, "/nope", "/z", 0, NULL), -ENOENT);
	cr_expect_eq(tree_rename(T, "/f", "/nope/z", 0, NULL), -ENOENT);
	cr_expect_eq(tree_rename(T, "/f", "/f/z", 0, NULL), -ENOTDIR);
	cr_expect_eq(tree_rename(T, "/a", "/f", 0, NULL), -ENOTDIR);
	cr_expect_eq(tree_rename(T, "/f", "/a", 0, NULL), -EISDIR);
	cr_expect_eq(tree_rename(T, "/ab", "/b", 0, NULL), -ENOTEMPTY);
	cr_expect_eq(tree_rename(T, "/f", "/b/x", TREE_RENAME_NOREPLACE, NULL),
		     -EEXIST);
	cr_expect_eq(tree_rename(T, "/f", "/f", TREE_RENAME_NOREPLACE, NULL),
		     -EEXIST);
	cr_expect_eq(tree_rename(T, "/f", "/zz", TREE_RENAME_EXCHANGE, NULL),
		     -ENOENT);
	cr_expect_eq(tree_rename(T, "/f", "/b/x",
				 TREE_RENAME_EXCHANGE | TREE_RENAME_NOREPLACE,
				 NULL),
		     -EINVAL);
	cr_expect_eq(tree_rename(T, "/", "/z", 0, NULL), -EBUSY);
	cr_expect_eq(tree_rename(T, "/f", "/", 0, NULL), -EBUSY);
	/* "/ab" is not inside "/a" */
	cr_assert_eq(tree_rename(T, "/ab", "/a/ab", 0, NULL), 0);
	cr_expect_eq(st("/a").nlink, 4);
	/* nothing failed above changed anything */
	cr_expect(S_ISREG(st("/f").mode));
	cr_expect(S_ISREG(st("/b/x").mode));
	cr_expect_eq(st("/").nlink, 4);
	fsck_clean();
}

Test(tree, rename_noreplace_and_exchange, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr f, d, g;
	size_t n;
	char *p;

	tu_mkdir(T, "/p");
	tu_mkfile(T, "/f", "F", 1);
	tu_mkfile(T, "/p/g", "GG", 2);
	tu_mkdir(T, "/d");
	f = st("/f");
	g = st("/p/g");
	d = st("/d");
	cr_assert_eq(
	    tree_rename(T, "/f", "/p/new", TREE_RENAME_NOREPLACE, NULL), 0);
	cr_expect_eq(st("/p/new").ino, f.ino);
	/* exchange two files */
	cr_assert_eq(
	    tree_rename(T, "/p/new", "/p/g", TREE_RENAME_EXCHANGE, NULL), 0);
	cr_expect_eq(st("/p/g").ino, f.ino);
	cr_expect_eq(st("/p/new").ino, g.ino);
	p = readall("/p/g", f.ino, &n);
	cr_expect(n == 1 && p[0] == 'F');
	/* exchange a file and an empty folder in different parents */
	cr_assert_eq(tree_rename(T, "/d", "/p/g", TREE_RENAME_EXCHANGE, NULL),
		     0);
	cr_expect_eq(st("/p/g").ino, d.ino);
	cr_expect(S_ISDIR(st("/p/g").mode));
	cr_expect_eq(st("/d").ino, f.ino);
	cr_expect_eq(st("/p").nlink, 3);
	cr_expect_eq(st("/").nlink, 3); /* /p only */
	/* exchange with an ancestor is EINVAL */
	cr_expect_eq(tree_rename(T, "/p", "/p/g", TREE_RENAME_EXCHANGE, NULL),
		     -EINVAL);
	cr_expect_eq(tree_rename(T, "/p/g", "/p", TREE_RENAME_EXCHANGE, NULL),
		     -EINVAL);
	fsck_clean();
}

Test(tree, setattr_fields, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a, in = {0}, out;

	tu_mkfile(T, "/f", "abc", 3);
	tu_mkdir(T, "/d");
	a = st("/f");
	in.mode = S_IFDIR | 04751; /* the type is kept */
	in.uid = 7;
	in.gid = 8;
	in.atime_ns = 1000000001;
	in.mtime_ns = 2000000002;
	cr_assert_eq(tree_setattr(T, "/f", a.ino, &in,
				  TREE_SET_MODE | TREE_SET_UID | TREE_SET_GID |
				      TREE_SET_ATIME | TREE_SET_MTIME,
				  &out),
		     0);
	a = st("/f");
	cr_expect_eq(a.mode, S_IFREG | 04751);
	cr_expect_eq(a.uid, 7);
	cr_expect_eq(a.gid, 8);
	cr_expect_eq(a.atime_ns, 1000000001);
	cr_expect_eq(a.mtime_ns, 2000000002);
	cr_expect_gt(a.ctime_ns, 2000000002);
	cr_expect_eq(out.ctime_ns, a.ctime_ns);
	in.ctime_ns = 5;
	cr_assert_eq(tree_setattr(T, "/f", a.ino, &in, TREE_SET_CTIME, NULL),
		     0);
	cr_expect_eq(st("/f").ctime_ns, 5);
	/* a size change sets mtime */
	in.size = 1;
	cr_assert_eq(tree_setattr(T, "/f", a.ino, &in, TREE_SET_SIZE, &out), 0);
	cr_expect_eq(out.size, 1);
	cr_expect_gt(out.mtime_ns, 2000000002);
	/* errnos */
	cr_expect_eq(
	    tree_setattr(T, "/d", st("/d").ino, &in, TREE_SET_SIZE, NULL),
	    -EISDIR);
	cr_expect_eq(
	    tree_setattr(T, "/f", a.ino + 1000, &in, TREE_SET_UID, NULL),
	    -ENOENT);
	cr_expect_eq(tree_setattr(T, "/nope", a.ino, &in, TREE_SET_UID, NULL),
		     -ENOENT);
	in.size = TREE_FILE_MAX + 1;
	cr_expect_eq(tree_setattr(T, "/f", a.ino, &in, TREE_SET_SIZE, NULL),
		     -EFBIG);
	cr_expect_eq(tree_getattr(T, "/f", a.ino + 1000, &out), -ENOENT);
	cr_expect_eq(tree_getattr(T, "/f", a.ino, &out), 0);
	cr_expect_eq(out.size, 1);
	/* chmod of a folder keeps it a folder with its nlink */
	in.mode = 0700;
	cr_assert_eq(tree_setattr(T, "/d", 0, &in, TREE_SET_MODE, NULL), 0);
	cr_expect_eq(st("/d").mode, S_IFDIR | 0700);
	cr_expect_eq(st("/d").nlink, 2);
}

Test(tree, persistence, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a, b;
	uint64_t maxino = 0;
	char path[64], *p;
	size_t n;

	tu_mkdir(T, "/d");
	for (int i = 0; i < 50; i++) {
		snprintf(path, sizeof(path), "/d/f%d", i);
		tu_mkfile(T, path, path, strlen(path));
		if (st(path).ino > maxino)
			maxino = st(path).ino;
	}
	cr_assert_eq(
	    tree_mknode(T, "/d/s", S_IFLNK | 0777, 0, 0, 0, "/x", NULL), 0);
	cr_assert_eq(tree_link(T, "/d/f1", "/h", NULL), 0);
	cr_assert_eq(
	    tree_setxattr(T, "/d/f2", st("/d/f2").ino, "user.k", "v", 1, 0), 0);
	a = st("/d");
	tu_reopen();
	b = st("/d");
	cr_expect_eq(a.ino, b.ino);
	cr_expect_eq(a.nlink, b.nlink);
	cr_expect_eq(a.mtime_ns, b.mtime_ns);
	for (int i = 0; i < 50; i++) {
		snprintf(path, sizeof(path), "/d/f%d", i);
		p = readall(path, 0, &n);
		cr_expect(n == strlen(path) && memcmp(p, path, n) == 0, "%s",
			  path);
	}
	cr_assert_eq(tree_readlink(T, "/d/s", &p), 0);
	cr_expect_str_eq(p, "/x");
	free(p);
	cr_expect_eq(st("/h").nlink, 2);
	cr_expect_eq(st("/h").ino, st("/d/f1").ino);
	{
		void *v;
		size_t vl;
		cr_assert_eq(
		    tree_getxattr(T, st("/d/f2").ino, "user.k", &v, &vl), 0);
		cr_expect(vl == 1 && memcmp(v, "v", 1) == 0);
		free(v);
	}
	/* new inode numbers are above every one in use */
	tu_mkfile(T, "/new", "", 0);
	cr_expect_gt(st("/new").ino, maxino);
}

Test(tree, corrupt_value_is_eio_for_that_node_only, .init = tu_setup,
     .fini = tu_teardown)
{
	struct sbuf k = {0};
	struct tree_dir *d;
	struct tree_attr a;
	const char *name;
	size_t nl;
	int count = 0, bad = 0;

	tu_mkdir(T, "/d");
	tu_mkfile(T, "/d/a", "1", 1);
	tu_mkfile(T, "/d/b", "2", 2);
	tu_mkfile(T, "/d/c", "3", 1);
	key_node(&k, T->name, "/d/b");
	plant(k.buf, k.len, "\x01\xff\xff", 3);
	cr_expect_eq(lk("/d/b"), -EIO);
	cr_expect_eq(tree_getattr(T, "/d/b", 0, &a), -EIO);
	cr_expect_eq(lk("/d/a"), 0);
	cr_expect_eq(lk("/d/c"), 0);
	cr_assert_eq(tree_dir_open(&d, T, "/d", NULL), 0);
	while (tree_dir_next(d, &name, &nl, &a) == 1) {
		count++;
		if (strcmp(name, "b") == 0) {
			bad++;
			cr_expect_eq(a.mode, 0);
			cr_expect_eq(a.ino, 0);
		} else {
			cr_expect(S_ISREG(a.mode));
		}
	}
	tree_dir_free(d);
	cr_expect_eq(count, 3);
	cr_expect_eq(bad, 1);
	/* an empty value and a future version too */
	plant(k.buf, k.len, "", 0);
	cr_expect_eq(lk("/d/b"), -EIO);
	plant(k.buf, k.len, "\x09\x00\x01\x01", 4);
	cr_expect_eq(lk("/d/b"), -EIO);
	/* removing it needs its inode: EIO too (fsck repairs); siblings live */
	cr_expect_eq(tree_unlink(T, "/d/b", 0, NULL), -EIO);
	cr_expect_eq(lk("/d/c"), 0);
	sbuf_release(&k);
}

Test(tree, drive_isolation, .init = tu_setup, .fini = tu_teardown)
{
	struct tree *d1, *d10;
	struct tree_attr a;
	struct tree_scan *sc;
	const char *p;
	int n = 0;

	cr_assert_eq(store_drive_create(tu_store, "d1", 0, 0), 0);
	cr_assert_eq(store_drive_create(tu_store, "d10", 0, 0), 0);
	cr_assert_eq(store_drive(tu_store, "d1", &d1), 0);
	cr_assert_eq(store_drive(tu_store, "d10", &d10), 0);
	cr_assert_eq(tree_mknode(d1, "/x", S_IFDIR | 0755, 0, 0, 0, NULL, NULL),
		     0);
	cr_assert_eq(
	    tree_mknode(d10, "/y", S_IFREG | 0644, 0, 0, 0, NULL, NULL), 0);
	cr_assert_eq(
	    tree_mknode(d1, "/x/z", S_IFREG | 0644, 0, 0, 0, NULL, NULL), 0);
	cr_expect_eq(tree_lookup(d1, "/y", &a), -ENOENT);
	cr_expect_eq(tree_lookup(d10, "/x", &a), -ENOENT);
	cr_expect_eq(tree_lookup(d1, "/x/z", &a), 0);
	cr_assert_eq(tree_scan_open(&sc, d1, "/"), 0);
	while (tree_scan_next(sc, &p, &a) == 1) {
		cr_expect(strcmp(p, "/x") == 0 || strcmp(p, "/x/z") == 0, "%s",
			  p);
		n++;
	}
	tree_scan_free(sc);
	cr_expect_eq(n, 2);
	n = 0;
	cr_assert_eq(tree_scan_open(&sc, d10, "/"), 0);
	while (tree_scan_next(sc, &p, &a) == 1) {
		cr_expect_str_eq(p, "/y");
		n++;
	}
	tree_scan_free(sc);
	cr_expect_eq(n, 1);
	n = 0;
	cr_assert_eq(tree_scan_open(&sc, T, "/"), 0);
	while (tree_scan_next(sc, &p, &a) == 1)
		n++;
	tree_scan_free(sc);
	cr_expect_eq(n, 0);
}

Test(tree, emlink, .init = tu_setup, .fini = tu_teardown)
{
	struct sbuf k = {0}, v = {0};
	struct tree_attr a, out;

	tu_mkfile(T, "/f", "", 0);
	cr_assert_eq(tree_link(T, "/f", "/g", &a), 0);
	/* plant the inode at the link limit rather than making 65000 links */
	a.nlink = TREE_LINK_MAX;
	key_inode(&k, T->name, a.ino);
	node_encode(&v, &a, NULL);
	plant(k.buf, k.len, v.buf, v.len);
	cr_expect_eq(tree_link(T, "/f", "/h", NULL), -EMLINK);
	cr_expect_eq(lk("/h"), -ENOENT);
	cr_assert_eq(tree_unlink(T, "/g", 0, NULL), 0);
	cr_assert_eq(tree_link(T, "/f", "/h", &out), 0);
	cr_expect_eq(out.nlink, TREE_LINK_MAX);
	sbuf_release(&k);
	sbuf_release(&v);
}

Test(tree, rename_non_empty_folders, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a;
	char p[64];
	size_t n;
	char *c;

	tu_mkdir(T, "/src");
	tu_mkdir(T, "/src/sub");
	tu_mkdir(T, "/other");
	for (int i = 0; i < 30; i++) {
		snprintf(p, sizeof(p), "/src/sub/f%02d", i);
		tu_mkfile(T, p, p, strlen(p));
	}
	tu_mkfile(T, "/src/x", "x", 1);
	a = st("/src");
	/* over a non-empty folder: refused before anything moves */
	tu_mkfile(T, "/other/keep", "", 0);
	cr_expect_eq(tree_rename(T, "/src", "/other", 0, NULL), -ENOTEMPTY);
	cr_expect_eq(tree_rename(T, "/src", "/src/sub/in", 0, NULL), -EINVAL);
	cr_expect_eq(tree_rename(T, "/src", "/other/keep", 0, NULL), -ENOTDIR);
	/* into another folder */
	cr_assert_eq(tree_rename(T, "/src", "/other/moved", 0, NULL), 0);
	cr_expect_eq(lk("/src"), -ENOENT);
	cr_expect_eq(lk("/src/sub/f00"), -ENOENT);
	cr_expect_eq(st("/other/moved").ino, a.ino);
	cr_expect_eq(st("/other").nlink, 3);
	cr_expect_eq(st("/").nlink, 3);
	for (int i = 0; i < 30; i++) {
		char q[64];
		snprintf(p, sizeof(p), "/other/moved/sub/f%02d", i);
		snprintf(q, sizeof(q), "/src/sub/f%02d", i);
		c = readall(p, 0, &n);
		cr_expect(n == strlen(q) && memcmp(c, q, n) == 0, "%s", p);
	}
	/* over an empty folder */
	tu_mkdir(T, "/empty");
	cr_assert_eq(tree_rename(T, "/other/moved", "/empty", 0, NULL), 0);
	cr_expect_eq(st("/empty").ino, a.ino);
	cr_expect(S_ISREG(st("/empty/x").mode));
	cr_expect_eq(st("/other").nlink, 2);
	cr_expect_eq(st("/").nlink, 4);
	/* exchange with a file */
	tu_mkfile(T, "/file", "F", 1);
	cr_assert_eq(
	    tree_rename(T, "/empty", "/other/keep", TREE_RENAME_EXCHANGE, NULL),
	    0);
	cr_expect(S_ISDIR(st("/other/keep").mode));
	cr_expect(S_ISREG(st("/other/keep/sub/f07").mode));
	cr_expect(S_ISREG(st("/empty").mode));
	cr_expect_eq(st("/other").nlink, 3);
	cr_expect_eq(st("/").nlink, 3);
	fsck_clean();
}

struct worker {
	int id;
};

static void *mkdir_worker(void *arg)
{
	struct worker *w = arg;
	char p[64];

	for (int i = 0; i < 100; i++) {
		snprintf(p, sizeof(p), "/par/w%d-%d", w->id, i);
		if (tree_mknode(T, p, S_IFDIR | 0755, 0, 0, 0, NULL, NULL))
			return (void *)1;
		if (i % 3 == 0) {
			snprintf(p, sizeof(p), "/par/w%d-%d", w->id, i);
			if (tree_rmdir(T, p))
				return (void *)1;
		}
		if (tree_write(T, "/shared", 0, 0, "0123456789", 10, true,
			       NULL))
			return (void *)1;
	}
	return NULL;
}

Test(tree, concurrent_namespace_and_appends, .init = tu_setup,
     .fini = tu_teardown)
{
	pthread_t th[4];
	struct worker w[4];
	void *res;

	tu_mkdir(T, "/par");
	tu_mkfile(T, "/shared", "", 0);
	for (int i = 0; i < 4; i++) {
		w[i].id = i;
		cr_assert_eq(pthread_create(&th[i], NULL, mkdir_worker, &w[i]),
			     0);
	}
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(pthread_join(th[i], &res), 0);
		cr_expect_null(res);
	}
	/* 100 created, 34 removed per worker: no nlink or size update lost */
	cr_expect_eq(st("/par").nlink, 2 + 4 * 66);
	cr_expect_eq(st("/shared").size, 4 * 100 * 10);
	fsck_clean();
}

Test(tree, link_by_inode_number, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a, out;
	uint64_t orphan;
	size_t n;
	char *c;

	tu_mkdir(T, "/d");
	tu_mkfile(T, "/f", "data", 4);
	a = st("/f");
	/* not hard-linked yet: there is one path, tree_link() is the way */
	cr_expect_eq(tree_link_ino(T, a.ino, "/x", NULL), -ENOENT);
	cr_assert_eq(tree_link(T, "/f", "/g", NULL), 0);
	/* the path the inode was first known by goes away */
	cr_assert_eq(tree_unlink(T, "/f", 0, NULL), 0);
	cr_expect_eq(tree_link(T, "/f", "/h", NULL), -ENOENT);
	cr_assert_eq(tree_link_ino(T, a.ino, "/d/h", &out), 0);
	cr_expect_eq(out.nlink, 2);
	cr_expect_eq(st("/d/h").ino, a.ino);
	cr_expect_eq(st("/g").nlink, 2);
	c = readall("/d/h", a.ino, &n);
	cr_expect(n == 4 && memcmp(c, "data", 4) == 0);
	cr_expect_eq(tree_link_ino(T, a.ino, "/g", NULL), -EEXIST);
	cr_expect_eq(tree_link_ino(T, a.ino, "/nope/x", NULL), -ENOENT);
	cr_expect_eq(tree_link_ino(T, a.ino, "/g/x", NULL), -ENOTDIR);
	cr_expect_eq(tree_link_ino(T, 999999, "/y", NULL), -ENOENT);
	/* an orphan cannot be linked back */
	cr_assert_eq(tree_unlink(T, "/g", 0, NULL), 0);
	cr_assert_eq(tree_unlink(T, "/d/h", TREE_KEEP_ORPHAN, &orphan), 0);
	cr_expect_eq(orphan, a.ino);
	cr_expect_eq(tree_link_ino(T, a.ino, "/z", NULL), -ENOENT);
	cr_expect_eq(lk("/z"), -ENOENT);
	cr_assert_eq(tree_reclaim(T, a.ino), 0);
	fsck_clean();
}

/* open(O_TMPFILE): an orphan from birth, named by linkat (tree_link_tmp),
 * reclaimed at the next open when never named. */
Test(tree, tmpfile_orphan_named_or_reclaimed, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_attr a, b, c;
	char *path = NULL;
	size_t n = 0;

	cr_assert_eq(mk("/d", S_IFDIR | 0755), 0);
	cr_assert_eq(tree_mktmp(T, "/nope", 0600, 0, 0, 0, &a), -ENOENT);
	cr_assert_eq(tree_mktmp(T, "/d", 0640, 0, 0, 0, &a), 0);
	cr_assert_eq(a.nlink, 0);
	cr_assert(S_ISREG(a.mode));
	cr_assert_eq(tree_write(T, NULL, a.ino, 0, "hello", 5, false, NULL), 0);
	cr_assert_eq(tree_find_ino(T, a.ino, &path, &c), -ENOENT);
	/* an ordinary orphan may not get a name back; a tmpfile may */
	cr_assert_eq(tree_link_ino(T, a.ino, "/d/x", NULL), -ENOENT);
	cr_assert_eq(tree_link_tmp(T, a.ino, "/d/named", &b), 0);
	cr_assert_eq(b.nlink, 1);
	cr_assert_eq(st("/d/named").ino, a.ino);
	cr_assert_eq(tree_find_ino(T, a.ino, &path, &c), 0);
	cr_assert_null(path);
	/* a second one, never named: gone at the next open */
	cr_assert_eq(tree_mktmp(T, "/d", 0600, 0, 0, 0, &c), 0);
	cr_assert_eq(tree_write(T, NULL, c.ino, 0, "bye", 3, false, NULL), 0);
	tu_reopen();
	cr_assert_eq(tree_getattr(T, NULL, c.ino, &b), -ENOENT);
	cr_assert_eq(tree_getattr(T, "/d/named", a.ino, &b), 0);
	cr_assert_eq(b.size, 5);
	cr_assert_eq(tree_fsck(T, false, NULL, NULL, &n), 0);
	cr_assert_eq(n, 0);
}
