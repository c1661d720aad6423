/*
 * test_fs_ops.c - the daemon's FUSE operations through their fs_do_*()
 * halves (fs/ops_i.h), on a struct fs over a fresh store, without a mount:
 * what the mount suites see only end to end. CREATE of a name another
 * creator made meanwhile (opened, or EEXIST with O_EXCL, EISDIR on a
 * folder; with O_TRUNC it truncates and clears set-user-ID as a truncate
 * does), ext4's rule for the set-user-ID/set-group-ID bits on a change of
 * content (write, truncate, fallocate) by root, the group's member, others;
 * SEEK_DATA/SEEK_HOLE answers; xattr sizes and refusals; O_TMPFILE in a
 * set-group-ID folder; the page-cache promise after a direct write; who
 * may set inode flags (chattr) and what they refuse of opens and times; a
 * listing resumed after a name removed meanwhile, and the lookups
 * READDIRPLUS counts. Built from fs/meson.build (it links the daemon's
 * code).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "ops_i.h"
#include "testutil.h"

TestSuite(fs_ops, .init = tu_fs_setup, .fini = tu_fs_teardown);

static const struct fs_who root = {0, 0, NULL, 0};
static const struct fs_who user = {1000, 1000, NULL, 0};
static const struct fs_who member = {1001, 50, NULL, 0};

/* Creates @name in the root by @w with @mode and writes @data; returns
 * its inode (the open is released, the lookup kept). */
static uint64_t mkfile(const struct fs_who *w, const char *name, mode_t mode,
		       const char *data)
{
	struct fuse_entry_param e;
	struct tree_attr a;
	struct fh *fh = NULL;

	cr_assert_eq(fs_do_create(&tu_fs, w, TREE_ROOT_INO, name, mode,
				  O_CREAT | O_WRONLY, &e, &fh),
		     0);
	cr_assert_neq(e.ino, 0);
	if (data)
		cr_assert_eq(fs_do_write(&tu_fs, w, e.ino, data, strlen(data),
					 0, false, false, &a),
			     0);
	fs_do_release(&tu_fs, e.ino, fh);
	return e.ino;
}

static mode_t mode_of(uint64_t ino)
{
	struct tree_attr a;

	cr_assert_eq(fs_do_getattr(&tu_fs, ino, &a), 0);
	return a.mode & 07777;
}

/* Makes @ino set-user-ID and set-group-ID of group 50, as root would. */
static void make_privileged(uint64_t ino, mode_t mode)
{
	struct stat st = {0};
	struct tree_attr a;

	st.st_gid = 50;
	st.st_mode = mode;
	cr_assert_eq(fs_do_setattr(&tu_fs, &root, ino, &st,
				   FUSE_SET_ATTR_GID | FUSE_SET_ATTR_MODE, &a),
		     0);
	cr_assert_eq(mode_of(ino), mode);
}

Test(fs_ops, create_of_an_existing_name_opens_it_or_refuses)
{
	struct fuse_entry_param e;
	struct tree_attr a;
	struct fh *fh = NULL;
	char buf[16];
	size_t n = 0;
	uint64_t ino = mkfile(&user, "f", 0644, "hello");

	/* another creator was first: no O_EXCL opens the same inode */
	cr_assert_eq(fs_do_create(&tu_fs, &user, TREE_ROOT_INO, "f", 0600,
				  O_CREAT | O_RDWR, &e, &fh),
		     0);
	cr_expect_eq(e.ino, ino);
	cr_expect_eq(mode_of(ino), 0644, "the first creator's mode stays");
	cr_assert_eq(fs_do_read(&tu_fs, ino, sizeof(buf), 0, buf, &n), 0);
	cr_expect_eq(n, 5, "no O_TRUNC: the content stays");
	fs_do_release(&tu_fs, ino, fh);

	fh = NULL;
	cr_expect_eq(fs_do_create(&tu_fs, &user, TREE_ROOT_INO, "f", 0600,
				  O_CREAT | O_EXCL | O_RDWR, &e, &fh),
		     -EEXIST);
	cr_expect_null(fh);

	cr_assert_eq(fs_do_mknode(&tu_fs, &(struct fuse_ctx){.uid = 1000},
				  TREE_ROOT_INO, "d", S_IFDIR | 0755, 0, NULL,
				  false, &a),
		     0);
	cr_expect_eq(fs_do_create(&tu_fs, &user, TREE_ROOT_INO, "d", 0600,
				  O_CREAT | O_RDWR, &e, &fh),
		     -EISDIR);
	cr_expect_eq(itab_nopen(&tu_fs, a.ino), 0,
		     "the folder is not left open");
}

/* The race of the last session: two creators with O_TRUNC, the second one
 * finding the first's file. Its truncate is a change of content by a
 * caller outside the file's group: set-user-ID and set-group-ID go. */
Test(fs_ops, create_o_trunc_of_an_existing_file_clears_set_user_id)
{
	struct fuse_entry_param e;
	struct fh *fh = NULL;
	uint64_t ino = mkfile(&root, "f", 0666, "content");

	make_privileged(ino, 06666);
	cr_assert_eq(fs_do_create(&tu_fs, &user, TREE_ROOT_INO, "f", 0644,
				  O_CREAT | O_TRUNC | O_WRONLY, &e, &fh),
		     0);
	cr_expect_eq(e.ino, ino);
	cr_expect_eq(e.attr.st_size, 0, "truncated");
	cr_expect_eq(e.attr.st_mode & 07777, 0666,
		     "the entry shows the cleared mode (got %o)",
		     e.attr.st_mode & 07777);
	cr_expect_eq(mode_of(ino), 0666, "stored mode %o", mode_of(ino));
	fs_do_release(&tu_fs, ino, fh);
}

Test(fs_ops, change_of_content_clears_privileges_by_ext4_rule)
{
	struct tree_attr a;
	struct stat st = {0};
	struct fh *fh = NULL;
	uint64_t ino = mkfile(&root, "f", 0666, NULL);

	/* root keeps both */
	make_privileged(ino, 06666);
	cr_assert_eq(
	    fs_do_write(&tu_fs, &root, ino, "x", 1, 0, false, false, &a), 0);
	cr_expect_eq(mode_of(ino), 06666);
	/* a member of the file's group: set-user-ID goes, set-group-ID
	 * (without group execute: mandatory locking's mark) stays */
	cr_assert_eq(
	    fs_do_write(&tu_fs, &member, ino, "x", 1, 0, false, false, &a), 0);
	cr_expect_eq(mode_of(ino), 02666, "got %o", mode_of(ino));
	cr_expect_eq(a.mode & 07777, 02666, "the answer shows it");
	/* anyone else: both go, by truncate */
	make_privileged(ino, 06666);
	st.st_size = 0;
	cr_assert_eq(
	    fs_do_setattr(&tu_fs, &user, ino, &st, FUSE_SET_ATTR_SIZE, &a), 0);
	cr_expect_eq(mode_of(ino), 0666, "got %o", mode_of(ino));
	/* group-executable set-group-ID goes for a member too */
	make_privileged(ino, 06676);
	cr_assert_eq(fs_do_fallocate(&tu_fs, &member, ino, 0, 0, 4096, &a), 0);
	cr_expect_eq(mode_of(ino), 0676, "got %o", mode_of(ino));
	/* open(O_TRUNC) by anyone else */
	make_privileged(ino, 06666);
	cr_assert_eq(
	    fs_do_open(&tu_fs, &user, ino, O_WRONLY | O_TRUNC, &fh, NULL), 0);
	cr_expect_eq(mode_of(ino), 0666, "got %o", mode_of(ino));
	fs_do_release(&tu_fs, ino, fh);
	/* a chmod with the truncate says the mode itself */
	st.st_mode = 06666;
	cr_assert_eq(fs_do_setattr(&tu_fs, &user, ino, &st,
				   FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MODE, &a),
		     0);
	cr_expect_eq(mode_of(ino), 06666);
}

Test(fs_ops, seek_data_and_hole)
{
	struct tree_attr a;
	uint64_t res = 0;
	uint64_t ino = mkfile(&user, "f", 0644, NULL);
	static char block[65536];

	memset(block, 'x', sizeof(block));
	/* a hole of 1 MiB, then 64 KiB of data */
	cr_assert_eq(fs_do_write(&tu_fs, &user, ino, block, sizeof(block),
				 1 << 20, false, false, &a),
		     0);
	cr_expect_eq(fs_do_lseek(&tu_fs, ino, 0, SEEK_DATA, &res), 0);
	cr_expect_eq(res, 1 << 20);
	cr_expect_eq(fs_do_lseek(&tu_fs, ino, 0, SEEK_HOLE, &res), 0);
	cr_expect_eq(res, 0);
	cr_expect_eq(fs_do_lseek(&tu_fs, ino, 1 << 20, SEEK_HOLE, &res), 0);
	cr_expect_eq(res, (1 << 20) + sizeof(block), "the end is a hole");
	cr_expect_eq(fs_do_lseek(&tu_fs, ino, (1 << 20) + sizeof(block),
				 SEEK_DATA, &res),
		     -ENXIO);
	cr_expect_eq(fs_do_lseek(&tu_fs, ino, -1, SEEK_DATA, &res), -ENXIO,
		     "a negative offset is ENXIO, as ext4");
	cr_expect_eq(fs_do_lseek(&tu_fs, ino, 0, SEEK_SET, &res), -EINVAL);
	/* a punched block is a hole again */
	cr_assert_eq(fs_do_fallocate(&tu_fs, &user, ino,
				     FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				     1 << 20, sizeof(block), &a),
		     0);
	cr_expect_eq(fs_do_lseek(&tu_fs, ino, 0, SEEK_DATA, &res), -ENXIO);
	cr_expect_eq(fs_do_fallocate(&tu_fs, &user, ino,
				     FALLOC_FL_COLLAPSE_RANGE, 0, 65536, &a),
		     -EOPNOTSUPP);
}

Test(fs_ops, xattr_sizes_and_refusals)
{
	void *val = NULL;
	char *list = NULL;
	size_t len = 0;
	uint64_t ino = mkfile(&user, "f", 0644, NULL);

	cr_assert_eq(fs_do_setxattr(&tu_fs, ino, "user.k", "value", 5, 0), 0);
	cr_expect_eq(fs_do_getxattr(&tu_fs, ino, "user.k", 0, &val, &len), 0);
	cr_expect_eq(len, 5, "size 0 asks for the size");
	free(val);
	cr_expect_eq(fs_do_getxattr(&tu_fs, ino, "user.k", 4, &val, &len),
		     -ERANGE);
	free(val);
	cr_assert_eq(fs_do_getxattr(&tu_fs, ino, "user.k", 5, &val, &len), 0);
	cr_expect_eq(memcmp(val, "value", 5), 0);
	free(val);
	cr_expect_eq(fs_do_listxattr(&tu_fs, NULL, ino, 3, &list, &len),
		     -ERANGE);
	free(list);
	cr_assert_eq(fs_do_listxattr(&tu_fs, NULL, ino, 64, &list, &len), 0);
	cr_expect_eq(len, 7);
	cr_expect_str_eq(list, "user.k");
	free(list);
	/* POSIX ACLs are kept (store/acl.c): none yet, and junk is refused */
	cr_expect_eq(fs_do_getxattr(&tu_fs, ino, "system.posix_acl_access", 64,
				    &val, &len),
		     -ENODATA);
	free(val);
	cr_expect_eq(fs_do_setxattr(&tu_fs, ino, "system.posix_acl_access",
				    "junk", 4, 0),
		     -EINVAL);
	cr_expect_eq(fs_do_setxattr(&tu_fs, ino, "security.selinux", "x", 1, 0),
		     -EOPNOTSUPP);
	cr_assert_eq(fs_do_setxattr(&tu_fs, ino, "user.k", NULL, 0, 0), 0);
	cr_expect_eq(fs_do_getxattr(&tu_fs, ino, "user.k", 64, &val, &len),
		     -ENODATA);
	free(val);
}

/* system.posix_acl_access's value: owner rw-, user 1001 r--, group r--,
 * mask r--, other r-- (little-endian, as the kernel sends it) */
static const unsigned char named_user_acl[] = {
    2,	  0, 0, 0,			   /* version */
    1,	  0, 6, 0, 0xff, 0xff, 0xff, 0xff, /* USER_OBJ */
    2,	  0, 4, 0, 0xe9, 0x03, 0,    0,	   /* USER 1001 */
    4,	  0, 4, 0, 0xff, 0xff, 0xff, 0xff, /* GROUP_OBJ */
    0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff, /* MASK */
    0x20, 0, 4, 0, 0xff, 0xff, 0xff, 0xff, /* OTHER */
};

/* A GETXATTR of an ACL, as ls -l sends for every file; the store's reads
 * it made. */
static int acl_get(uint64_t ino, const char *name, uint64_t *reads)
{
	struct store_kv_counts k0, k1;
	void *val = NULL;
	size_t len = 0;
	int rc;

	store_kv_counts(tu_store, &k0);
	rc = fs_do_getxattr(&tu_fs, ino, name, 256, &val, &len);
	store_kv_counts(tu_store, &k1);
	free(val);
	*reads = k1.gets - k0.gets;
	return rc ? rc : (int)len;
}

Test(fs_ops, no_acl_is_answered_without_a_store_read)
{
	const char *acc = "system.posix_acl_access";
	struct fuse_entry_param e;
	uint64_t ino = mkfile(&user, "f", 0644, NULL), reads;

	cr_expect_eq(acl_get(ino, acc, &reads), -ENODATA);
	cr_expect_eq(reads, 0, "the record just read had no ACL");
	cr_expect_eq(acl_get(ino, "system.posix_acl_default", &reads),
		     -ENODATA);
	cr_expect_eq(reads, 0);
	cr_assert_eq(fs_do_setxattr(&tu_fs, ino, acc,
				    (const char *)named_user_acl,
				    sizeof(named_user_acl), 0),
		     0);
	cr_expect_eq(acl_get(ino, acc, &reads), (int)sizeof(named_user_acl),
		     "an ACL set is seen at once");
	cr_assert_eq(fs_do_lookup(&tu_fs, TREE_ROOT_INO, "f", &e), 0);
	cr_expect_eq(acl_get(ino, acc, &reads), (int)sizeof(named_user_acl),
		     "a lookup that sees the ACL keeps it seen");
	cr_assert_eq(fs_do_setxattr(&tu_fs, ino, acc, NULL, 0, 0), 0);
	cr_expect_eq(acl_get(ino, acc, &reads), -ENODATA);
	cr_expect_eq(reads, 1, "after a change the store answers");
	cr_assert_eq(fs_do_lookup(&tu_fs, TREE_ROOT_INO, "f", &e), 0);
	cr_expect_eq(acl_get(ino, acc, &reads), -ENODATA);
	cr_expect_eq(reads, 0);
}

/* UNLINK and RMDIR read the node at the name twice (the lookup that
 * learns its inode, then under that inode's stripe) and the folder once,
 * and commit once (rm -rf sends one of these per entry). */
Test(fs_ops, unlink_and_rmdir_read_the_node_twice_and_commit_once)
{
	struct store_kv_counts k0, k1;
	struct tree_attr d;
	uint64_t ino = mkfile(&user, "f", 0644, "x");

	store_kv_counts(tu_store, &k0);
	cr_assert_eq(fs_do_remove(&tu_fs, TREE_ROOT_INO, "f", false), 0);
	store_kv_counts(tu_store, &k1);
	cr_expect_eq(k1.gets - k0.gets, 3, "%llu reads",
		     (unsigned long long)(k1.gets - k0.gets));
	cr_expect_eq(k1.commits - k0.commits, 1);
	cr_expect_eq(fs_do_getattr(&tu_fs, ino, &d), 0,
		     "still known to the kernel: an orphan");
	cr_expect_eq(d.nlink, 0);

	cr_assert_eq(fs_do_mknode(&tu_fs, &(struct fuse_ctx){.uid = 1000},
				  TREE_ROOT_INO, "d", S_IFDIR | 0755, 0, NULL,
				  false, &d),
		     0);
	store_kv_counts(tu_store, &k0);
	cr_assert_eq(fs_do_remove(&tu_fs, TREE_ROOT_INO, "d", true), 0);
	store_kv_counts(tu_store, &k1);
	cr_expect_eq(k1.gets - k0.gets, 3, "%llu reads",
		     (unsigned long long)(k1.gets - k0.gets));
	cr_expect_eq(k1.iters - k0.iters, 1, "one listing: is it empty");
	cr_expect_eq(k1.commits - k0.commits, 1);
}

Test(fs_ops, tmpfile_in_a_set_group_id_folder_takes_its_group)
{
	struct tree_attr d, a;
	struct stat st = {0};
	struct fh *fh = NULL;

	cr_assert_eq(fs_do_mknode(&tu_fs, &(struct fuse_ctx){.uid = 0},
				  TREE_ROOT_INO, "shared", S_IFDIR | 02777, 0,
				  NULL, false, &d),
		     0);
	st.st_gid = 50;
	st.st_mode = 02777;
	cr_assert_eq(fs_do_setattr(&tu_fs, &root, d.ino, &st,
				   FUSE_SET_ATTR_GID | FUSE_SET_ATTR_MODE, &d),
		     0);
	cr_assert_eq(fs_do_tmpfile(&tu_fs, &user, d.ino, 0600, O_RDWR, &a, &fh),
		     0);
	cr_expect_eq(a.uid, 1000);
	cr_expect_eq(a.gid, 50, "the folder's group, not the caller's (%u)",
		     (unsigned)a.gid);
	cr_expect_eq(a.nlink, 0, "an orphan from birth");
	fs_do_release(&tu_fs, a.ino, fh);
	cr_expect_eq(
	    fs_do_tmpfile(&tu_fs, &user, TREE_ROOT_INO, 0600, O_RDWR, &a, &fh),
	    0);
	cr_expect_eq(a.gid, 1000, "a plain folder: the caller's group");
	fs_do_release(&tu_fs, a.ino, fh);
}

/* keep_cache: a direct write went past the kernel's pages, so the next
 * open drops them; the one after may keep them again. */
Test(fs_ops, a_direct_write_drops_the_pages_at_the_next_open)
{
	struct tree_attr a;
	struct fh *fh = NULL;
	bool keep = false;
	uint64_t ino = mkfile(&user, "f", 0644, "old");

	cr_assert_eq(fs_do_open(&tu_fs, &user, ino, O_RDWR, &fh, &keep), 0);
	cr_expect(keep);
	cr_assert_eq(
	    fs_do_write(&tu_fs, &user, ino, "new", 3, 0, false, true, &a), 0);
	fs_do_release(&tu_fs, ino, fh);
	cr_assert_eq(fs_do_open(&tu_fs, &user, ino, O_RDONLY, &fh, &keep), 0);
	cr_expect_not(keep, "stale pages must be dropped");
	fs_do_release(&tu_fs, ino, fh);
	cr_assert_eq(fs_do_open(&tu_fs, &user, ino, O_RDONLY, &fh, &keep), 0);
	cr_expect(keep);
	fs_do_release(&tu_fs, ino, fh);
}

Test(fs_ops, inode_flags_who_may_and_mapping)
{
	const struct fs_who other = {1002, 1002, NULL, 0};
	uint64_t ino = mkfile(&user, "f", 0644, "x");
	uint32_t t;

	cr_expect_eq(fs_flags_from_fl(FS_IMMUTABLE_FL | FS_NODUMP_FL, &t), 0);
	cr_expect_eq(t, TREE_F_IMMUTABLE | TREE_F_NODUMP);
	cr_expect_eq(fs_flags_to_fl(t), FS_IMMUTABLE_FL | FS_NODUMP_FL);
	cr_expect_eq(fs_flags_from_fl(FS_NOCOW_FL, &t), -EOPNOTSUPP,
		     "a flag pathfs does not keep, as ext4 answers");
	cr_expect_eq(fs_do_setflags(&tu_fs, &other, ino, TREE_F_NODUMP), -EPERM,
		     "not the owner");
	cr_expect_eq(fs_do_setflags(&tu_fs, &user, ino, TREE_F_NODUMP), 0);
	cr_expect_eq(fs_do_setflags(&tu_fs, &user, ino,
				    TREE_F_NODUMP | TREE_F_IMMUTABLE),
		     -EPERM, "i is root's (CAP_LINUX_IMMUTABLE)");
	cr_expect_eq(fs_do_setflags(&tu_fs, &root, ino, TREE_F_APPEND), 0);
	cr_expect_eq(fs_do_setflags(&tu_fs, &user, ino, 0), -EPERM,
		     "nor may the owner clear a");
	cr_assert_eq(fs_do_getflags(&tu_fs, ino, &t), 0);
	cr_expect_eq(t, TREE_F_APPEND);
}

Test(fs_ops, opens_and_times_honour_the_inode_flags)
{
	struct fuse_entry_param e;
	struct stat st = {0};
	struct tree_attr a;
	struct fh *fh = NULL;
	uint64_t im = mkfile(&root, "im", 0644, "x");
	uint64_t ap = mkfile(&root, "ap", 0644, "x");

	cr_assert_eq(fs_do_setflags(&tu_fs, &root, im, TREE_F_IMMUTABLE), 0);
	cr_assert_eq(fs_do_setflags(&tu_fs, &root, ap, TREE_F_APPEND), 0);
	cr_expect_eq(fs_do_open(&tu_fs, &root, im, O_WRONLY, &fh, NULL),
		     -EPERM);
	cr_expect_eq(
	    fs_do_open(&tu_fs, &root, im, O_RDONLY | O_TRUNC, &fh, NULL),
	    -EPERM);
	cr_expect_eq(fs_do_create(&tu_fs, &root, TREE_ROOT_INO, "im", 0644,
				  O_CREAT | O_WRONLY, &e, &fh),
		     -EPERM, "a create that finds it opens it so");
	cr_assert_eq(fs_do_open(&tu_fs, &root, im, O_RDONLY, &fh, NULL), 0);
	fs_do_release(&tu_fs, im, fh);
	cr_expect_eq(fs_do_open(&tu_fs, &root, ap, O_RDWR, &fh, NULL), -EPERM);
	cr_expect_eq(fs_do_open(&tu_fs, &root, ap,
				O_WRONLY | O_APPEND | O_TRUNC, &fh, NULL),
		     -EPERM);
	cr_assert_eq(
	    fs_do_open(&tu_fs, &root, ap, O_WRONLY | O_APPEND, &fh, NULL), 0);
	fs_do_release(&tu_fs, ap, fh);
	/* touch (times now) is what an append-only file allows */
	cr_expect_eq(fs_do_setattr(&tu_fs, &root, ap, &st,
				   FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
				       FUSE_SET_ATTR_ATIME_NOW |
				       FUSE_SET_ATTR_MTIME_NOW,
				   &a),
		     0);
	cr_expect_eq(
	    fs_do_setattr(&tu_fs, &root, ap, &st, FUSE_SET_ATTR_MTIME, &a),
	    -EPERM, "explicit times");
	cr_expect_eq(
	    fs_do_setattr(&tu_fs, &root, im, &st,
			  FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW, &a),
	    -EPERM, "nothing on an immutable one");
}

/* An OPEN for writing of a file whose record had no immutable or
 * append-only flag when the kernel was told of it reads nothing (the inode
 * table remembers: INODE_NO_FLAGS); SETFLAGS makes it read again. Shown by
 * setting a flag in the store behind the daemon's back (which nothing
 * does on a mounted drive): the open still passes, so it read nothing. */
Test(fs_ops, open_for_writing_reads_no_flags_the_table_rules_out)
{
	struct fuse_entry_param e;
	struct fh *fh = NULL;
	uint64_t f = mkfile(&root, "f", 0644, "x");
	uint64_t ap = mkfile(&root, "ap", 0644, "x");

	cr_expect(itab_has_flag(&tu_fs, f, INODE_NO_FLAGS),
		  "a created file has none");
	cr_assert_eq(tree_setflags(tu_fs.tree, "/f", f, TREE_F_IMMUTABLE, NULL),
		     0);
	cr_assert_eq(fs_do_open(&tu_fs, &root, f, O_WRONLY, &fh, NULL), 0,
		     "the table answered, not the store");
	fs_do_release(&tu_fs, f, fh);
	cr_assert_eq(tree_setflags(tu_fs.tree, "/f", f, 0, NULL), 0);

	/* through the daemon: the table forgets, the store is asked */
	cr_assert_eq(fs_do_setflags(&tu_fs, &root, f, TREE_F_IMMUTABLE), 0);
	cr_expect_not(itab_has_flag(&tu_fs, f, INODE_NO_FLAGS));
	cr_expect_eq(fs_do_open(&tu_fs, &root, f, O_WRONLY, &fh, NULL), -EPERM);
	cr_assert_eq(fs_do_setflags(&tu_fs, &root, f, 0), 0);
	cr_assert_eq(fs_do_open(&tu_fs, &root, f, O_WRONLY, &fh, NULL), 0);
	fs_do_release(&tu_fs, f, fh);

	/* a lookup tells it again from the record: flags it must not trust
	 * away (a, i), and a flag no open checks (d) */
	cr_assert_eq(fs_do_setflags(&tu_fs, &root, ap, TREE_F_APPEND), 0);
	cr_assert_eq(fs_do_lookup(&tu_fs, TREE_ROOT_INO, "ap", &e), 0);
	cr_expect_not(itab_has_flag(&tu_fs, ap, INODE_NO_FLAGS));
	cr_expect_eq(fs_do_open(&tu_fs, &root, ap, O_WRONLY, &fh, NULL),
		     -EPERM);
	cr_assert_eq(fs_do_setflags(&tu_fs, &root, f, TREE_F_NODUMP), 0);
	cr_assert_eq(fs_do_lookup(&tu_fs, TREE_ROOT_INO, "f", &e), 0);
	cr_expect(itab_has_flag(&tu_fs, f, INODE_NO_FLAGS));
}

/* The security.capability the kernel asks for before the first write to a
 * file is answered ENODATA without a store read for a file this daemon
 * created (INODE_NO_CAPS); a SETXATTR of it makes the store answer again.
 * Shown by setting it in the store behind the daemon's back (which nothing
 * does on a mounted drive): the table's answer stands, so it read nothing. */
Test(fs_ops, capabilities_of_a_created_file_read_nothing)
{
	static const char cap[] = "\x01\x00\x00\x02\x00\x20\x00\x00\x00\x00"
				  "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00";
	const char *name = "security.capability";
	void *val = NULL;
	size_t len = 0;
	uint64_t f = mkfile(&root, "f", 0755, "x");

	cr_expect(itab_has_flag(&tu_fs, f, INODE_NO_CAPS));
	cr_assert_eq(
	    tree_setxattr(tu_fs.tree, "/f", f, name, cap, sizeof(cap) - 1, 0),
	    0);
	cr_expect_eq(fs_do_getxattr(&tu_fs, f, name, 64, &val, &len), -ENODATA,
		     "the table answered, not the store");
	free(val);
	cr_assert_eq(tree_removexattr(tu_fs.tree, "/f", f, name), 0);

	cr_assert_eq(fs_do_setxattr(&tu_fs, f, name, cap, sizeof(cap) - 1, 0),
		     0);
	cr_expect_not(itab_has_flag(&tu_fs, f, INODE_NO_CAPS));
	cr_assert_eq(fs_do_getxattr(&tu_fs, f, name, 64, &val, &len), 0);
	cr_expect_eq(len, sizeof(cap) - 1);
	free(val);
	val = NULL;
	cr_assert_eq(fs_do_setxattr(&tu_fs, f, name, NULL, 0, 0), 0);
	cr_expect_eq(fs_do_getxattr(&tu_fs, f, name, 64, &val, &len), -ENODATA);
	free(val);
}

/* A SETXATTR between a CREATE's store call and its table update (a lookup
 * of the new name by another process, then setcap) leaves no stale mark:
 * itab_flag_unless_gained() sees that one ran. */
Test(fs_ops, a_capability_set_while_created_is_not_hidden)
{
	uint64_t f = mkfile(&root, "f", 0755, "x");
	uint64_t gen;

	itab_flags(&tu_fs, f, 0, INODE_NO_CAPS);
	gen = itab_gained_gen(&tu_fs);
	itab_record_gained(&tu_fs, f, INODE_NO_CAPS);
	itab_flag_unless_gained(&tu_fs, f, INODE_NO_CAPS, gen);
	cr_expect_not(itab_has_flag(&tu_fs, f, INODE_NO_CAPS));
	itab_flag_unless_gained(&tu_fs, f, INODE_NO_CAPS,
				itab_gained_gen(&tu_fs));
	cr_expect(itab_has_flag(&tu_fs, f, INODE_NO_CAPS));
}

/* fs_do_readdir()'s packer here: records of {next offset, inode, name}. */
static size_t pack_record(void *ctx, char *buf, size_t room, const char *name,
			  const struct fuse_entry_param *e, off_t next)
{
	uint64_t ino = e->ino ? e->ino : (uint64_t)e->attr.st_ino;
	size_t len = sizeof(next) + sizeof(ino) + strlen(name) + 1;

	(void)ctx;
	if (len <= room) {
		memcpy(buf, &next, sizeof(next));
		memcpy(buf + sizeof(next), &ino, sizeof(ino));
		memcpy(buf + sizeof(next) + sizeof(ino), name,
		       strlen(name) + 1);
	}
	return len;
}

/* The record at @buf: its name, and its next offset in *next. */
static const char *record_at(const char *buf, off_t *next, size_t *len)
{
	const char *name = buf + sizeof(*next) + sizeof(uint64_t);

	memcpy(next, buf, sizeof(*next));
	*len = sizeof(*next) + sizeof(uint64_t) + strlen(name) + 1;
	return name;
}

/* A listing read a few entries at a time resumes after the last name it
 * gave, even when that name is removed in between: every other name comes
 * exactly once, "." and ".." first. Names that sort around '/' (' ', '-'
 * and '.' before it, '0' after it) sit beside each other. */
Test(fs_ops, readdir_resumes_after_the_last_name_it_gave)
{
	static const char *const names[] = {
	    "a", "docs", "docs 2", "docs-archive", "docs.txt", "docs0", "z",
	};
	const size_t nnames = sizeof(names) / sizeof(names[0]);
	int seen[sizeof(names) / sizeof(names[0])] = {0};
	char buf[80], last[64] = "", *removed = NULL;
	off_t off = 0, next;
	size_t used, pos, len, i;
	int entries = 0, calls = 0;

	for (i = 0; i < nnames; i++)
		mkfile(&root, names[i], 0644, NULL);
	do {
		/* a listing that starts over never ends */
		cr_assert_lt(++calls, 20, "the listing does not end");
		cr_assert_eq(fs_do_readdir(&tu_fs, TREE_ROOT_INO, sizeof(buf),
					   off, false, pack_record, NULL, buf,
					   &used),
			     0);
		for (pos = 0; pos < used; pos += len, entries++) {
			const char *name = record_at(buf + pos, &next, &len);

			if (entries < 2) {
				cr_assert_str_eq(name, entries ? ".." : ".");
				cr_assert_eq(next, entries + 1);
			} else {
				for (i = 0; i < nnames; i++)
					if (!strcmp(name, names[i]))
						seen[i]++;
				snprintf(last, sizeof(last), "%s", name);
			}
			off = next;
		}
		/* the name the next call resumes after goes */
		if (!removed && entries > 4) {
			cr_assert_eq(
			    fs_do_remove(&tu_fs, TREE_ROOT_INO, last, false),
			    0);
			removed = strdup(last);
		}
	} while (used);
	cr_assert_not_null(removed);
	for (i = 0; i < nnames; i++)
		cr_expect_eq(seen[i], 1, "%s listed %d times", names[i],
			     seen[i]);
	free(removed);
}

/* A page holds every child that fits: a folder of a few names is one
 * READDIR (then one that finds no more), listed and looked up whole by a
 * READDIRPLUS too. */
Test(fs_ops, readdir_fills_its_page)
{
	uint64_t ino[5];
	char buf[4096], name[8];
	size_t used, pos, len;
	off_t next;
	int n;

	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ino[i] = mkfile(&root, name, 0644, NULL);
		cr_assert_eq(itab_forget(&tu_fs, ino[i], 1), 0);
	}
	for (int plus = 0; plus < 2; plus++) {
		cr_assert_eq(fs_do_readdir(&tu_fs, TREE_ROOT_INO, sizeof(buf),
					   0, plus, pack_record, NULL, buf,
					   &used),
			     0);
		for (pos = 0, n = 0; pos < used; pos += len, n++)
			record_at(buf + pos, &next, &len);
		cr_expect_eq(n, 7, "%d entries in one page", n);
		cr_assert_eq(fs_do_readdir(&tu_fs, TREE_ROOT_INO, sizeof(buf),
					   next, plus, pack_record, NULL, buf,
					   &used),
			     0);
		cr_expect_eq(used, 0);
	}
	for (int i = 0; i < 5; i++)
		cr_expect(itab_knows(&tu_fs, ino[i]), "f%d not looked up", i);
}

/* READDIRPLUS gives the kernel an entry per child, which it counts as a
 * lookup: so does the table (a FORGET follows); READDIR counts none. */
Test(fs_ops, readdirplus_counts_a_lookup_of_each_child)
{
	uint64_t f = mkfile(&root, "f", 0644, NULL);
	char buf[4096];
	size_t used;

	cr_assert_eq(itab_forget(&tu_fs, f, 1), 0);
	cr_assert_not(itab_knows(&tu_fs, f));
	cr_assert_eq(fs_do_readdir(&tu_fs, TREE_ROOT_INO, sizeof(buf), 0, false,
				   pack_record, NULL, buf, &used),
		     0);
	cr_expect_not(itab_knows(&tu_fs, f));
	cr_assert_eq(fs_do_readdir(&tu_fs, TREE_ROOT_INO, sizeof(buf), 0, true,
				   pack_record, NULL, buf, &used),
		     0);
	cr_assert(itab_knows(&tu_fs, f));
	cr_assert_eq(itab_forget(&tu_fs, f, 1), 0);
	cr_expect_not(itab_knows(&tu_fs, f));
}
