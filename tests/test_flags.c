/*
 * test_flags.c - the user flags of chattr (store/flags.c): set and kept
 * across a reopen, and the rules the store enforces with -EPERM for an
 * immutable or append-only file or folder (every call that changes a
 * node, its content or its folder), noatime, inheritance, hard links (the
 * flags live in the INODE record), and the branch operations (rm -r keeps
 * what it may not remove, as rm -rf on ext4; cp -r keeps the flags; nothing
 * goes into an immutable folder).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "testutil.h"

#define T tu_tree

static uint64_t ino_of(const char *path)
{
	return tu_stat(T, path).ino;
}

static void set_flags(const char *path, uint32_t flags)
{
	int rc = tree_setflags(T, path, ino_of(path), flags, NULL);

	cr_assert_eq(rc, 0, "setflags %s: %s", path, strerror(-rc));
}

static bool exists(const char *path)
{
	struct tree_attr a;

	return tree_lookup(T, path, &a) == 0;
}

Test(flags, set_kept_and_checked, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a, b;

	tu_mkfile(T, "/f", "x", 1);
	tu_mkdir(T, "/d");
	a = tu_stat(T, "/f");
	cr_expect_eq(a.flags & TREE_F_USER, 0, "a new node has no flags");
	cr_expect_eq(tree_setflags(T, "/f", a.ino, 0x8000, NULL), -EINVAL);
	cr_expect_eq(tree_setflags(T, "/f", a.ino, TREE_F_LINKED, NULL),
		     -EINVAL, "the store's own bits are not the user's");
	cr_assert_eq(
	    tree_setflags(T, "/f", a.ino, TREE_F_NODUMP | TREE_F_DIRSYNC, &b),
	    0);
	cr_expect_eq(b.flags & TREE_F_USER, TREE_F_NODUMP,
		     "DIRSYNC is dropped on a file, as ext4 drops it");
	cr_expect_geq(b.ctime_ns, a.ctime_ns);
	set_flags("/d", TREE_F_DIRSYNC | TREE_F_NOATIME);
	tu_reopen();
	cr_expect_eq(tu_stat(T, "/f").flags & TREE_F_USER, TREE_F_NODUMP);
	cr_expect_eq(tu_stat(T, "/d").flags & TREE_F_USER,
		     TREE_F_DIRSYNC | TREE_F_NOATIME);
	cr_expect_eq(tree_setflags(T, "/nope", 0, 0, NULL), -ENOENT);
}

Test(flags, immutable_file, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr in = {0}, a;
	uint64_t ino, orphan;
	char *buf;
	size_t len;

	tu_mkfile(T, "/f", "hello", 5);
	tu_mkfile(T, "/g", "g", 1);
	ino = ino_of("/f");
	cr_assert_eq(tree_setxattr(T, "/f", ino, "user.k", "v", 1, 0), 0);
	set_flags("/f", TREE_F_IMMUTABLE);
	cr_expect_eq(tree_write(T, "/f", ino, 0, "x", 1, false, NULL), -EPERM);
	cr_expect_eq(tree_write(T, "/f", ino, 0, "x", 1, true, NULL), -EPERM);
	in.size = 0;
	cr_expect_eq(tree_setattr(T, "/f", ino, &in, TREE_SET_SIZE, NULL),
		     -EPERM);
	in.mode = 0600;
	cr_expect_eq(tree_setattr(T, "/f", ino, &in, TREE_SET_MODE, NULL),
		     -EPERM);
	cr_expect_eq(tree_setattr(T, "/f", ino, &in, TREE_SET_UID, NULL),
		     -EPERM);
	cr_expect_eq(
	    tree_setattr(T, "/f", ino, &in,
			 TREE_SET_ATIME | TREE_SET_MTIME | TREE_SET_TOUCH,
			 NULL),
	    -EPERM, "not even touch");
	in.atime_ns = 123;
	cr_expect_eq(tree_setattr(T, "/f", ino, &in,
				  TREE_SET_ATIME | TREE_SET_ACCESS, &a),
		     0, "a read's atime is set");
	cr_expect_eq(a.atime_ns, 123);
	cr_expect_eq(tree_fallocate(T, "/f", ino, 0, 0, 4096, NULL), -EPERM);
	cr_expect_eq(tree_setxattr(T, "/f", ino, "user.k", "w", 1, 0), -EPERM);
	cr_expect_eq(tree_removexattr(T, "/f", ino, "user.k"), -EPERM);
	cr_expect_eq(tree_removexattr(T, "/f", ino, "user.none"), -EPERM);
	cr_expect_eq(tree_link(T, "/f", "/f2", NULL), -EPERM);
	cr_expect_eq(tree_unlink(T, "/f", 0, &orphan), -EPERM);
	cr_expect_eq(tree_rename(T, "/f", "/f3", 0, NULL), -EPERM);
	cr_expect_eq(tree_rename(T, "/g", "/f", 0, NULL), -EPERM);
	cr_expect_eq(tree_rename(T, "/g", "/f", TREE_RENAME_EXCHANGE, NULL),
		     -EPERM);
	cr_expect(exists("/f") && exists("/g") && !exists("/f2"));
	buf = tu_read(T, "/f", ino, &len);
	cr_expect(len == 5 && memcmp(buf, "hello", 5) == 0);
	/* cleared, everything works again */
	set_flags("/f", 0);
	cr_expect_eq(tree_write(T, "/f", ino, 5, "!", 1, false, NULL), 0);
	cr_expect_eq(tree_rename(T, "/f", "/f3", 0, NULL), 0);
	cr_expect_eq(tree_unlink(T, "/f3", 0, NULL), 0);
}

Test(flags, append_only_file, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr in = {0}, a;
	uint64_t ino;

	tu_mkfile(T, "/f", "start", 5);
	ino = ino_of("/f");
	set_flags("/f", TREE_F_APPEND);
	cr_expect_eq(tree_write(T, "/f", ino, 0, "+", 1, true, &a), 0);
	cr_expect_eq(a.size, 6);
	cr_expect_eq(tree_setattr(T, "/f", ino, &in, TREE_SET_SIZE, NULL),
		     -EPERM);
	cr_expect_eq(tree_setattr(T, "/f", ino, &in, TREE_SET_MODE, NULL),
		     -EPERM);
	cr_expect_eq(tree_setattr(T, "/f", ino, &in, TREE_SET_GID, NULL),
		     -EPERM);
	cr_expect_eq(tree_setattr(T, "/f", ino, &in, TREE_SET_MTIME, NULL),
		     -EPERM, "explicit times");
	in.mtime_ns = in.atime_ns = tree_now_ns();
	cr_expect_eq(
	    tree_setattr(T, "/f", ino, &in,
			 TREE_SET_ATIME | TREE_SET_MTIME | TREE_SET_TOUCH,
			 NULL),
	    0, "touch");
	cr_expect_eq(tree_fallocate(T, "/f", ino, 0, 0, 8192, NULL), 0);
	cr_expect_eq(tree_fallocate(T, "/f", ino, TREE_FALLOC_KEEP_SIZE, 0,
				    65536 * 2, NULL),
		     0);
	cr_expect_eq(
	    tree_fallocate(T, "/f", ino,
			   TREE_FALLOC_PUNCH_HOLE | TREE_FALLOC_KEEP_SIZE, 0, 1,
			   NULL),
	    -EPERM);
	cr_expect_eq(
	    tree_fallocate(T, "/f", ino, TREE_FALLOC_ZERO_RANGE, 0, 1, NULL),
	    -EPERM);
	cr_expect_eq(tree_setxattr(T, "/f", ino, "user.k", "w", 1, 0), -EPERM);
	cr_expect_eq(tree_link(T, "/f", "/f2", NULL), -EPERM);
	cr_expect_eq(tree_unlink(T, "/f", 0, NULL), -EPERM);
	cr_expect_eq(tree_rename(T, "/f", "/f3", 0, NULL), -EPERM);
}

Test(flags, immutable_folder, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr a;
	uint64_t x;

	tu_mkdir(T, "/d");
	tu_mkdir(T, "/d/sub");
	tu_mkfile(T, "/d/x", "in", 2);
	tu_mkfile(T, "/y", "y", 1);
	tu_mkdir(T, "/e");
	x = ino_of("/d/x");
	set_flags("/d", TREE_F_IMMUTABLE);
	cr_expect_eq(
	    tree_mknode(T, "/d/n", S_IFREG | 0644, 0, 0, 0, NULL, NULL),
	    -EPERM);
	cr_expect_eq(
	    tree_mknode(T, "/d/x", S_IFREG | 0644, 0, 0, 0, NULL, NULL),
	    -EEXIST, "EEXIST comes first, as may_create() says");
	cr_expect_eq(tree_mknode(T, "/d/l", S_IFLNK | 0777, 0, 0, 0, "x", NULL),
		     -EPERM);
	cr_expect_eq(tree_mktmp(T, "/d", 0600, 0, 0, 0, &a), -EPERM);
	cr_expect_eq(tree_link(T, "/y", "/d/y", NULL), -EPERM);
	cr_expect_eq(tree_rename(T, "/y", "/d/y", 0, NULL), -EPERM);
	cr_expect_eq(tree_unlink(T, "/d/x", 0, NULL), -EPERM);
	cr_expect_eq(tree_rmdir(T, "/d/sub"), -EPERM);
	cr_expect_eq(tree_rename(T, "/d/x", "/d/x2", 0, NULL), -EPERM);
	cr_expect_eq(tree_rename(T, "/d/x", "/x", 0, NULL), -EPERM);
	cr_expect_eq(tree_rename(T, "/d", "/e/d", 0, NULL), -EPERM,
		     "a non-empty folder (the journal's rename) too");
	cr_expect_eq(tree_rmdir(T, "/d"), -EPERM, "before ENOTEMPTY");
	cr_expect_eq(tree_write(T, "/d/x", x, 2, "+", 1, false, NULL), 0,
		     "its files stay writable");
	cr_expect(exists("/d/x") && exists("/d/sub") && exists("/y"));
}

Test(flags, append_only_folder, .init = tu_setup, .fini = tu_teardown)
{
	tu_mkdir(T, "/d");
	tu_mkdir(T, "/d/sub");
	tu_mkfile(T, "/d/x", "in", 2);
	tu_mkfile(T, "/y", "y", 1);
	set_flags("/d", TREE_F_APPEND);
	cr_expect_eq(
	    tree_mknode(T, "/d/n", S_IFREG | 0644, 0, 0, 0, NULL, NULL), 0);
	cr_expect_eq(tree_rename(T, "/y", "/d/y", 0, NULL), 0);
	cr_expect_eq(tree_link(T, "/d/y", "/d/y2", NULL), 0);
	cr_expect_eq(tree_unlink(T, "/d/x", 0, NULL), -EPERM);
	cr_expect_eq(tree_unlink(T, "/d/y2", 0, NULL), -EPERM);
	cr_expect_eq(tree_rmdir(T, "/d/sub"), -EPERM);
	cr_expect_eq(tree_rename(T, "/d/x", "/x", 0, NULL), -EPERM);
	cr_expect_eq(tree_rename(T, "/d/n", "/d/x", 0, NULL), -EPERM);
	cr_expect_eq(tu_stat(T, "/d/n").flags & TREE_F_USER, 0,
		     "APPEND is not inherited");
}

Test(flags, hard_links_keep_flags_in_the_inode, .init = tu_setup,
     .fini = tu_teardown)
{
	uint64_t ino;

	tu_mkfile(T, "/f", "x", 1);
	cr_assert_eq(tree_link(T, "/f", "/g", NULL), 0);
	ino = ino_of("/f");
	cr_assert_eq(tree_setflags(T, NULL, ino, TREE_F_IMMUTABLE, NULL), 0);
	cr_expect_eq(tu_stat(T, "/g").flags & TREE_F_USER, TREE_F_IMMUTABLE);
	cr_expect_eq(tree_unlink(T, "/g", 0, NULL), -EPERM,
		     "the stub's inode is immutable");
	cr_expect_eq(tree_rename(T, "/g", "/h", 0, NULL), -EPERM);
	cr_expect_eq(tree_write(T, NULL, ino, 0, "y", 1, false, NULL), -EPERM);
	cr_expect_eq(tree_link_ino(T, ino, "/h", NULL), -EPERM);
}

Test(flags, noatime_and_inheritance, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_attr in = {0}, a;
	uint64_t ino;

	tu_mkfile(T, "/f", "x", 1);
	ino = ino_of("/f");
	set_flags("/f", TREE_F_NOATIME);
	a = tu_stat(T, "/f");
	in.atime_ns = a.atime_ns + 1000000000;
	cr_expect_eq(tree_setattr(T, "/f", ino, &in,
				  TREE_SET_ATIME | TREE_SET_ACCESS, NULL),
		     0);
	cr_expect_eq(tu_stat(T, "/f").atime_ns, a.atime_ns,
		     "an access leaves a noatime file's atime be");
	cr_expect_eq(tree_setattr(T, "/f", ino, &in, TREE_SET_ATIME, NULL), 0);
	cr_expect_eq(tu_stat(T, "/f").atime_ns, in.atime_ns,
		     "an explicit time is set");

	tu_mkdir(T, "/p");
	set_flags("/p", TREE_F_NODUMP | TREE_F_NOATIME | TREE_F_SYNC |
			    TREE_F_DIRSYNC);
	tu_mkdir(T, "/p/sub");
	tu_mkfile(T, "/p/file", "x", 1);
	cr_assert_eq(
	    tree_mknode(T, "/p/ln", S_IFLNK | 0777, 0, 0, 0, "x", NULL), 0);
	cr_assert_eq(tree_mktmp(T, "/p", 0600, 0, 0, 0, &a), 0);
	cr_expect_eq(a.flags & TREE_F_USER,
		     TREE_F_NODUMP | TREE_F_NOATIME | TREE_F_SYNC);
	cr_expect_eq(tu_stat(T, "/p/sub").flags & TREE_F_USER,
		     TREE_F_NODUMP | TREE_F_NOATIME | TREE_F_SYNC |
			 TREE_F_DIRSYNC);
	cr_expect_eq(tu_stat(T, "/p/file").flags & TREE_F_USER,
		     TREE_F_NODUMP | TREE_F_NOATIME | TREE_F_SYNC);
	cr_expect_eq(tu_stat(T, "/p/ln").flags & TREE_F_USER,
		     TREE_F_NODUMP | TREE_F_NOATIME);
	set_flags("/p", TREE_F_IMMUTABLE | TREE_F_APPEND);
	cr_expect_eq(tree_setflags(T, "/p", 0, TREE_F_APPEND, NULL), 0);
	tu_mkdir(T, "/p/sub2");
	cr_expect_eq(tu_stat(T, "/p/sub2").flags & TREE_F_USER, 0,
		     "i and a are never inherited");
}

Test(flags, branch_operations, .init = tu_setup, .fini = tu_teardown)
{
	struct tree_op_result r;
	char name[32];

	/* enough files for rm -r's one-batch path (rm_batch.c) */
	tu_mkdir(T, "/b");
	tu_mkdir(T, "/b/keep");
	tu_mkdir(T, "/b/app");
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "/b/f%03d", i);
		tu_mkfile(T, name, "x", 1);
	}
	tu_mkfile(T, "/b/keep/in", "x", 1);
	tu_mkfile(T, "/b/app/in", "x", 1);
	tu_mkfile(T, "/b/imm", "x", 1);
	set_flags("/b/keep", TREE_F_IMMUTABLE);
	set_flags("/b/app", TREE_F_APPEND);
	set_flags("/b/imm", TREE_F_IMMUTABLE);

	/* cp -r keeps the flags (a clone is the branch as it is) */
	cr_assert_eq(tree_cp_r(T, "/b", T, "/c", 0, NULL, &r), 0);
	cr_expect_eq(r.failed, 0);
	tree_op_result_release(&r);
	cr_expect_eq(tu_stat(T, "/c/keep").flags & TREE_F_USER,
		     TREE_F_IMMUTABLE);
	cr_expect_eq(tu_stat(T, "/c/imm").flags & TREE_F_USER,
		     TREE_F_IMMUTABLE);
	/* nothing goes into an immutable folder */
	cr_expect_eq(tree_cp_r(T, "/c/f000", T, "/b/keep/new", 0, NULL, &r),
		     -EPERM);
	tree_op_result_release(&r);
	cr_expect_eq(tree_mv(T, "/c/f000", T, "/b/keep/new", 0, NULL, &r),
		     -EPERM);
	tree_op_result_release(&r);

	/* rm -r removes what it may, as rm -rf on ext4 */
	cr_assert_eq(tree_rm_r(T, "/b", 0, NULL, 0, &r), 0);
	cr_expect_gt(r.failed, 0, "what stays is reported");
	tree_op_result_release(&r);
	cr_expect(exists("/b/keep/in") && exists("/b/keep"));
	cr_expect(exists("/b/app/in") && exists("/b/app"));
	cr_expect(exists("/b/imm") && exists("/b"));
	cr_expect(!exists("/b/f000") && !exists("/b/f099"));
	/* once cleared, it goes */
	set_flags("/b/keep", 0);
	set_flags("/b/app", 0);
	set_flags("/b/imm", 0);
	cr_assert_eq(tree_rm_r(T, "/b", 0, NULL, 0, &r), 0);
	cr_expect_eq(r.failed, 0);
	tree_op_result_release(&r);
	cr_expect(!exists("/b"));
}
