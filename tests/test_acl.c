/*
 * test_acl.c - POSIX ACLs (store/acl.c through xattr.c, tree.c and
 * tree_make.c): the xattr form checked, an access ACL setting the mode (and
 * not stored when the mode says it all), chmod rewriting it, set-group-ID
 * cleared on request, a default ACL on folders only, and what a new node
 * inherits (the default masked by the create mode) or, without a default
 * ACL, the umask; persistence across a reopen.
 */
#include <criterion/criterion.h>
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acl_i.h"
#include "testutil.h"

#define T tu_tree

#define UO   0x01 /* USER_OBJ */
#define US   0x02 /* USER */
#define GO   0x04 /* GROUP_OBJ */
#define GR   0x08 /* GROUP */
#define MA   0x10 /* MASK */
#define OT   0x20 /* OTHER */
#define NOID 0xffffffffu

/* An ACL in xattr form, from @n entries of tag, perm, id (ints). */
struct acl {
	char b[4 + 8 * 16];
	size_t len;
};

static struct acl mk(int n, ...)
{
	struct acl a;
	uint32_t v = htole32(2);
	va_list ap;

	memset(&a, 0, sizeof(a));
	memcpy(a.b, &v, 4);
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		uint16_t tag = htole16((uint16_t)va_arg(ap, int));
		uint16_t perm = htole16((uint16_t)va_arg(ap, int));
		uint32_t id = htole32(va_arg(ap, unsigned));

		memcpy(a.b + 4 + 8 * i, &tag, 2);
		memcpy(a.b + 4 + 8 * i + 2, &perm, 2);
		memcpy(a.b + 4 + 8 * i + 4, &id, 4);
	}
	va_end(ap);
	a.len = 4 + 8 * (size_t)n;
	return a;
}

/* The perm of the entry with @tag (and @id for named ones) in @v, or -1. */
static int perm_of(const void *v, size_t len, int tag, unsigned id)
{
	for (size_t i = 0; 4 + 8 * i < len; i++) {
		uint16_t t, p;
		uint32_t d;

		memcpy(&t, (const char *)v + 4 + 8 * i, 2);
		memcpy(&p, (const char *)v + 4 + 8 * i + 2, 2);
		memcpy(&d, (const char *)v + 4 + 8 * i + 4, 4);
		if (le16toh(t) == tag &&
		    ((tag != US && tag != GR) || le32toh(d) == id))
			return le16toh(p);
	}
	return -1;
}

/* The perm of entry @tag/@id of inode @ino's ACL @name; -1 if no entry,
 * -2 if no ACL. */
static int stored_perm(uint64_t ino, const char *name, int tag, unsigned id)
{
	void *v;
	size_t len;
	int p;

	if (tree_getxattr(T, ino, name, &v, &len))
		return -2;
	cr_assert_eq(acl_check(v, len), 0, "stored %s checks", name);
	p = perm_of(v, len, tag, id);
	free(v);
	return p;
}

Test(acl, check_refuses_malformed_acls)
{
	struct acl ok = mk(3, UO, 6, NOID, GO, 4, NOID, OT, 4, NOID);
	struct acl named = mk(6, UO, 6, NOID, US, 6, 1000, US, 4, 1001, GO, 4,
			      NOID, MA, 6, NOID, OT, 0, NOID);
	struct acl a;
	uint32_t v3 = htole32(3);

	cr_expect_eq(acl_check(ok.b, ok.len), 0);
	cr_expect_eq(acl_check(named.b, named.len), 0);
	a = mk(4, UO, 6, NOID, GO, 4, NOID, MA, 4, NOID, OT, 4, NOID);
	cr_expect_eq(acl_check(a.b, a.len), 0, "a mask without named entries");
	a = ok;
	memcpy(a.b, &v3, 4);
	cr_expect_eq(acl_check(a.b, a.len), -EINVAL, "version 3");
	cr_expect_eq(acl_check(ok.b, ok.len - 1), -EINVAL, "a cut entry");
	cr_expect_eq(acl_check(ok.b, 4), -EINVAL, "no entries");
	cr_expect_eq(acl_check(ok.b, 2), -EINVAL, "no header");
	a = mk(3, UO, 8, NOID, GO, 4, NOID, OT, 4, NOID);
	cr_expect_eq(acl_check(a.b, a.len), -EINVAL, "perm beyond rwx");
	a = mk(2, UO, 6, NOID, OT, 4, NOID);
	cr_expect_eq(acl_check(a.b, a.len), -EINVAL, "no GROUP_OBJ");
	a = mk(2, UO, 6, NOID, GO, 4, NOID);
	cr_expect_eq(acl_check(a.b, a.len), -EINVAL, "no OTHER");
	a = mk(4, UO, 6, NOID, UO, 6, NOID, GO, 4, NOID, OT, 4, NOID);
	cr_expect_eq(acl_check(a.b, a.len), -EINVAL, "two USER_OBJ");
	a = mk(4, UO, 6, NOID, US, 6, 1000, GO, 4, NOID, OT, 4, NOID);
	cr_expect_eq(acl_check(a.b, a.len), -EINVAL, "named without a mask");
	a = mk(6, UO, 6, NOID, US, 6, 1001, US, 4, 1000, GO, 4, NOID, MA, 6,
	       NOID, OT, 0, NOID);
	cr_expect_eq(acl_check(a.b, a.len), -EINVAL, "users out of order");
	a = mk(6, UO, 6, NOID, GO, 4, NOID, GR, 6, 7, GR, 4, 7, MA, 6, NOID, OT,
	       0, NOID);
	cr_expect_eq(acl_check(a.b, a.len), -EINVAL, "a group twice");
	a = mk(3, GO, 4, NOID, UO, 6, NOID, OT, 4, NOID);
	cr_expect_eq(acl_check(a.b, a.len), -EINVAL, "GROUP_OBJ first");
	a = mk(4, UO, 6, NOID, GO, 4, NOID, OT, 4, NOID, MA, 4, NOID);
	cr_expect_eq(acl_check(a.b, a.len), -EINVAL, "MASK after OTHER");
	a = mk(3, UO, 6, NOID, GO, 4, NOID, 0x40, 4, NOID);
	cr_expect_eq(acl_check(a.b, a.len), -EINVAL, "unknown tag");
}

Test(acl, mode_from_an_access_acl)
{
	struct acl plain = mk(3, UO, 7, NOID, GO, 5, NOID, OT, 1, NOID);
	struct acl named = mk(5, UO, 6, NOID, US, 7, 1000, GO, 4, NOID, MA, 6,
			      NOID, OT, 0, NOID);
	mode_t m = S_IFREG | S_ISGID | 0644;

	cr_expect_eq(acl_to_mode(plain.b, plain.len, &m), 0);
	cr_expect_eq(m, S_IFREG | S_ISGID | 0751, "got %o", m);
	cr_expect_eq(acl_to_mode(named.b, named.len, &m), 1);
	cr_expect_eq(m, S_IFREG | S_ISGID | 0660, "the mask is the group: %o",
		     m);
}

Test(acl, set_keeps_mode_in_step, .init = tu_setup, .fini = tu_teardown)
{
	struct acl named = mk(5, UO, 6, NOID, US, 7, 1000, GO, 4, NOID, MA, 6,
			      NOID, OT, 0, NOID);
	struct acl plain = mk(3, UO, 7, NOID, GO, 5, NOID, OT, 1, NOID);
	struct tree_attr a;
	uint64_t ino;

	tu_mkfile(T, "/f", "x", 1);
	ino = tu_stat(T, "/f").ino;
	cr_assert_eq(
	    tree_setxattr(T, "/f", ino, ACL_ACCESS, named.b, named.len, 0), 0);
	cr_expect_eq(tu_stat(T, "/f").mode & 07777, 0660);
	cr_expect_eq(stored_perm(ino, ACL_ACCESS, US, 1000), 7);

	/* chmod: owner, mask and other follow; the group entry stays */
	memset(&a, 0, sizeof(a));
	a.mode = 0751;
	cr_assert_eq(tree_setattr(T, "/f", ino, &a, TREE_SET_MODE, NULL), 0);
	cr_expect_eq(stored_perm(ino, ACL_ACCESS, UO, 0), 7);
	cr_expect_eq(stored_perm(ino, ACL_ACCESS, MA, 0), 5);
	cr_expect_eq(stored_perm(ino, ACL_ACCESS, GO, 0), 4);
	cr_expect_eq(stored_perm(ino, ACL_ACCESS, OT, 0), 1);
	cr_expect_eq(stored_perm(ino, ACL_ACCESS, US, 1000), 7);

	/* an ACL the mode says all of: the mode, and no ACL stored */
	cr_assert_eq(
	    tree_setxattr(T, "/f", ino, ACL_ACCESS, plain.b, plain.len, 0), 0);
	cr_expect_eq(tu_stat(T, "/f").mode & 07777, 0751);
	cr_expect_eq(stored_perm(ino, ACL_ACCESS, UO, 0), -2);
	/* a chmod then makes no ACL (the inode is no longer flagged) */
	a.mode = 0640;
	cr_assert_eq(tree_setattr(T, "/f", ino, &a, TREE_SET_MODE, NULL), 0);
	cr_expect_eq(stored_perm(ino, ACL_ACCESS, UO, 0), -2);
	/* removing one that is not there is no error (as ext4) */
	cr_expect_eq(tree_removexattr(T, "/f", ino, ACL_ACCESS), 0);
	cr_expect_eq(tree_removexattr(T, "/f", ino, "user.none"), -ENODATA);

	/* refused: not an ACL; a default ACL on a file */
	cr_expect_eq(tree_setxattr(T, "/f", ino, ACL_ACCESS, "junk", 4, 0),
		     -EINVAL);
	cr_expect_eq(
	    tree_setxattr(T, "/f", ino, ACL_DEFAULT, plain.b, plain.len, 0),
	    -EACCES);
	cr_expect_eq(tu_stat(T, "/f").mode & 07777, 0640, "unchanged");

	/* survives a reopen */
	cr_assert_eq(
	    tree_setxattr(T, "/f", ino, ACL_ACCESS, named.b, named.len, 0), 0);
	tu_reopen();
	cr_expect_eq(stored_perm(ino, ACL_ACCESS, US, 1000), 7);
	cr_expect_eq(tu_stat(T, "/f").mode & 07777, 0660);
	/* ... and a chmod still rewrites it */
	a.mode = 0600;
	cr_assert_eq(tree_setattr(T, "/f", ino, &a, TREE_SET_MODE, NULL), 0);
	cr_expect_eq(stored_perm(ino, ACL_ACCESS, MA, 0), 0);
	cr_expect_eq(stored_perm(ino, ACL_ACCESS, US, 1000), 7);
}

Test(acl, kill_sgid_on_request, .init = tu_setup, .fini = tu_teardown)
{
	struct acl named = mk(5, UO, 7, NOID, US, 7, 1000, GO, 5, NOID, MA, 7,
			      NOID, OT, 0, NOID);
	struct tree_attr a;
	uint64_t ino;

	tu_mkfile(T, "/f", "", 0);
	ino = tu_stat(T, "/f").ino;
	memset(&a, 0, sizeof(a));
	a.mode = 02770;
	cr_assert_eq(tree_setattr(T, "/f", ino, &a, TREE_SET_MODE, NULL), 0);
	cr_assert_eq(
	    tree_setxattr(T, "/f", ino, ACL_ACCESS, named.b, named.len, 0), 0);
	cr_expect_eq(tu_stat(T, "/f").mode & 07777, 02770, "kept");
	cr_assert_eq(tree_setxattr(T, "/f", ino, ACL_ACCESS, named.b, named.len,
				   TREE_XATTR_KILL_SGID),
		     0);
	cr_expect_eq(tu_stat(T, "/f").mode & 07777, 0770, "cleared");
	cr_expect_eq(tree_setxattr(T, "/f", ino, "user.a", "1", 1, 0x200),
		     -EINVAL, "other flags still refused");
}

Test(acl, new_nodes_inherit_or_get_the_umask, .init = tu_setup,
     .fini = tu_teardown)
{
	/* default: u::rwx u:1000:rwx g::r-x m::rwx o::--- */
	struct acl def = mk(5, UO, 7, NOID, US, 7, 1000, GO, 5, NOID, MA, 7,
			    NOID, OT, 0, NOID);
	struct acl plain = mk(3, UO, 7, NOID, GO, 5, NOID, OT, 5, NOID);
	struct tree_attr a;
	uint64_t d;

	/* no default ACL: the umask */
	cr_assert_eq(
	    tree_mknode_umask(T, "/u", S_IFREG | 0666, 027, 0, 0, 0, NULL, &a),
	    0);
	cr_expect_eq(a.mode & 07777, 0640);
	cr_expect_eq(stored_perm(a.ino, ACL_ACCESS, UO, 0), -2);
	cr_assert_eq(tree_mktmp(T, "/", 0666, 077, 0, 0, &a), 0);
	cr_expect_eq(a.mode & 07777, 0600);

	tu_mkdir(T, "/d");
	d = tu_stat(T, "/d").ino;
	cr_assert_eq(tree_setxattr(T, "/d", d, ACL_DEFAULT, def.b, def.len, 0),
		     0);
	/* a file: the default masked by 0640, the umask ignored */
	cr_assert_eq(tree_mknode_umask(T, "/d/f", S_IFREG | 0640, 077, 0, 0, 0,
				       NULL, &a),
		     0);
	cr_expect_eq(a.mode & 07777, 0640, "got %o", a.mode & 07777);
	cr_expect_eq(tu_stat(T, "/d/f").mode & 07777, 0640);
	cr_expect_eq(stored_perm(a.ino, ACL_ACCESS, US, 1000), 7);
	cr_expect_eq(stored_perm(a.ino, ACL_ACCESS, MA, 0), 4);
	cr_expect_eq(stored_perm(a.ino, ACL_ACCESS, OT, 0), 0);
	cr_expect_eq(stored_perm(a.ino, ACL_DEFAULT, UO, 0), -2,
		     "a file gets no default ACL");
	/* a folder: the access ACL and the default too */
	cr_assert_eq(tree_mknode_umask(T, "/d/s", S_IFDIR | 0755, 077, 0, 0, 0,
				       NULL, &a),
		     0);
	cr_expect_eq(a.mode & 07777, 0750, "got %o", a.mode & 07777);
	cr_expect_eq(stored_perm(a.ino, ACL_ACCESS, MA, 0), 5);
	cr_expect_eq(stored_perm(a.ino, ACL_DEFAULT, US, 1000), 7);
	cr_expect_eq(stored_perm(a.ino, ACL_DEFAULT, MA, 0), 7);
	/* a symlink: neither */
	cr_assert_eq(tree_mknode_umask(T, "/d/l", 0, 077, 0, 0, 0, "f", &a), 0);
	cr_expect_eq(a.mode & 07777, 0777);
	cr_expect_eq(stored_perm(a.ino, ACL_ACCESS, UO, 0), -2);
	/* an O_TMPFILE file */
	cr_assert_eq(tree_mktmp(T, "/d", 0600, 077, 0, 0, &a), 0);
	cr_expect_eq(a.mode & 07777, 0600);
	cr_expect_eq(stored_perm(a.ino, ACL_ACCESS, MA, 0), 0);

	/* a default ACL the create mode says all of: no access ACL */
	cr_assert_eq(
	    tree_setxattr(T, "/d", d, ACL_DEFAULT, plain.b, plain.len, 0), 0);
	cr_assert_eq(tree_mknode_umask(T, "/d/p", S_IFREG | 0666, 077, 0, 0, 0,
				       NULL, &a),
		     0);
	cr_expect_eq(a.mode & 07777, 0644, "got %o", a.mode & 07777);
	cr_expect_eq(stored_perm(a.ino, ACL_ACCESS, UO, 0), -2);
	/* tree_mknode is umask 0, and inherits too */
	cr_assert_eq(tree_mknode(T, "/d/q", S_IFREG | 0622, 0, 0, 0, NULL, &a),
		     0);
	cr_expect_eq(a.mode & 07777, 0600, "got %o", a.mode & 07777);

	/* a renamed folder's default ACL still applies (the flag moves with
	 * its record); once removed, the umask again */
	cr_assert_eq(tree_rename(T, "/d/s", "/s2", 0, NULL), 0);
	cr_assert_eq(tree_mknode_umask(T, "/s2/f", S_IFREG | 0666, 077, 0, 0, 0,
				       NULL, &a),
		     0);
	cr_expect_eq(stored_perm(a.ino, ACL_ACCESS, US, 1000), 7);
	cr_expect_eq(a.mode & 07777, 0660, "got %o", a.mode & 07777);
	cr_assert_eq(tree_removexattr(T, "/d", d, ACL_DEFAULT), 0);
	cr_assert_eq(tree_mknode_umask(T, "/d/r", S_IFREG | 0666, 077, 0, 0, 0,
				       NULL, &a),
		     0);
	cr_expect_eq(a.mode & 07777, 0600, "got %o", a.mode & 07777);
	cr_expect_eq(stored_perm(a.ino, ACL_ACCESS, UO, 0), -2);
}
