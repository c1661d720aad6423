/*
 * test_xattr.c - extended attributes (store/xattr.c): create/replace
 * semantics, ENODATA, listing, limits, ctime, hard links and persistence.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "testutil.h"

#define T tu_tree

static uint64_t ino_of(const char *path)
{
	struct tree_attr a;

	cr_assert_eq(tree_lookup(T, path, &a), 0);
	return a.ino;
}

static void expect_value(uint64_t ino, const char *name, const void *v,
			 size_t n)
{
	void *got;
	size_t len;
	int rc = tree_getxattr(T, ino, name, &got, &len);

	cr_assert_eq(rc, 0, "get %s: %s", name, strerror(-rc));
	cr_expect_eq(len, n);
	cr_expect(n == 0 || memcmp(got, v, n) == 0);
	free(got);
}

Test(xattr, create_replace_semantics, .init = tu_setup, .fini = tu_teardown)
{
	uint64_t ino;
	void *v;
	size_t n;

	tu_mkfile(T, "/f", "", 0);
	ino = ino_of("/f");
	cr_expect_eq(tree_getxattr(T, ino, "user.a", &v, &n), -ENODATA);
	cr_expect_eq(
	    tree_setxattr(T, "/f", ino, "user.a", "1", 1, XATTR_REPLACE),
	    -ENODATA);
	cr_assert_eq(
	    tree_setxattr(T, "/f", ino, "user.a", "1", 1, XATTR_CREATE), 0);
	expect_value(ino, "user.a", "1", 1);
	cr_expect_eq(
	    tree_setxattr(T, "/f", ino, "user.a", "2", 1, XATTR_CREATE),
	    -EEXIST);
	expect_value(ino, "user.a", "1", 1);
	cr_assert_eq(
	    tree_setxattr(T, "/f", ino, "user.a", "22", 2, XATTR_REPLACE), 0);
	expect_value(ino, "user.a", "22", 2);
	cr_assert_eq(tree_setxattr(T, "/f", ino, "user.a", "333", 3, 0), 0);
	expect_value(ino, "user.a", "333", 3);
	/* empty value is a value */
	cr_assert_eq(tree_setxattr(T, "/f", ino, "user.empty", "", 0, 0), 0);
	expect_value(ino, "user.empty", "", 0);
	cr_assert_eq(tree_removexattr(T, "/f", ino, "user.a"), 0);
	cr_expect_eq(tree_getxattr(T, ino, "user.a", &v, &n), -ENODATA);
	cr_expect_eq(tree_removexattr(T, "/f", ino, "user.a"), -ENODATA);
	cr_expect_eq(tree_setxattr(T, "/nope", ino, "user.a", "1", 1, 0),
		     -ENOENT);
	cr_expect_eq(tree_removexattr(T, "/nope", ino, "user.empty"), -ENOENT);
}

Test(xattr, list, .init = tu_setup, .fini = tu_teardown)
{
	const char *names[] = {"user.b", "security.x", "user.a", "trusted.zz",
			       "user.a.b"};
	uint64_t ino, other;
	char *list;
	size_t size, want = 0, count = 0;

	tu_mkfile(T, "/f", "", 0);
	tu_mkfile(T, "/g", "", 0);
	ino = ino_of("/f");
	other = ino_of("/g");
	cr_assert_eq(tree_listxattr(T, ino, &list, &size), 0);
	cr_expect_null(list);
	cr_expect_eq(size, 0);
	for (size_t i = 0; i < 5; i++) {
		cr_assert_eq(tree_setxattr(T, "/f", ino, names[i], "v", 1, 0),
			     0);
		want += strlen(names[i]) + 1;
	}
	cr_assert_eq(tree_setxattr(T, "/g", other, "user.other", "v", 1, 0), 0);
	cr_assert_eq(tree_listxattr(T, ino, &list, &size), 0);
	cr_expect_eq(size, want);
	for (char *p = list; p < list + size; p += strlen(p) + 1) {
		bool found = false;
		for (size_t i = 0; i < 5; i++)
			found = found || strcmp(p, names[i]) == 0;
		cr_expect(found, "unexpected %s", p);
		count++;
	}
	cr_expect_eq(count, 5);
	free(list);
}

Test(xattr, limits, .init = tu_setup, .fini = tu_teardown)
{
	char name[TREE_XATTR_NAME_MAX + 2];
	char *big = malloc(TREE_XATTR_SIZE_MAX + 1);
	uint64_t ino;

	tu_mkfile(T, "/f", "", 0);
	ino = ino_of("/f");
	memset(big, 0xab, TREE_XATTR_SIZE_MAX + 1);
	memset(name, 'n', sizeof(name));
	memcpy(name, "user.", 5);
	name[TREE_XATTR_NAME_MAX] = '\0';
	cr_expect_eq(
	    tree_setxattr(T, "/f", ino, name, big, TREE_XATTR_SIZE_MAX, 0), 0);
	expect_value(ino, name, big, TREE_XATTR_SIZE_MAX);
	cr_expect_eq(tree_setxattr(T, "/f", ino, "user.x", big,
				   TREE_XATTR_SIZE_MAX + 1, 0),
		     -ERANGE);
	name[TREE_XATTR_NAME_MAX] = 'n';
	name[TREE_XATTR_NAME_MAX + 1] = '\0';
	cr_expect_eq(tree_setxattr(T, "/f", ino, name, "v", 1, 0), -ERANGE);
	cr_expect_eq(tree_setxattr(T, "/f", ino, "", "v", 1, 0), -EINVAL);
	/* every byte but NUL in a name */
	{
		char odd[256];
		for (int i = 1; i < 256; i++)
			odd[i - 1] = (char)i;
		odd[255] = '\0';
		cr_assert_eq(tree_setxattr(T, "/f", ino, odd, "o", 1, 0), 0);
		expect_value(ino, odd, "o", 1);
	}
	free(big);
}

Test(xattr, ctime_links_folders_persistence, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_attr a, b;
	uint64_t ino, dino;

	tu_mkfile(T, "/f", "", 0);
	tu_mkdir(T, "/d");
	cr_assert_eq(tree_lookup(T, "/f", &a), 0);
	ino = a.ino;
	usleep(2000);
	cr_assert_eq(tree_setxattr(T, "/f", ino, "user.k", "v", 1, 0), 0);
	cr_assert_eq(tree_lookup(T, "/f", &b), 0);
	cr_expect_gt(b.ctime_ns, a.ctime_ns);
	cr_expect_eq(b.mtime_ns, a.mtime_ns);
	/* through a hard link, and by inode number */
	cr_assert_eq(tree_link(T, "/f", "/g", NULL), 0);
	cr_assert_eq(tree_setxattr(T, "/g", ino, "user.l", "w", 1, 0), 0);
	cr_assert_eq(tree_setxattr(T, NULL, ino, "user.m", "x", 1, 0), 0);
	expect_value(ino, "user.k", "v", 1);
	expect_value(ino, "user.l", "w", 1);
	expect_value(ino, "user.m", "x", 1);
	/* folders have xattrs too; rmdir drops them */
	dino = ino_of("/d");
	cr_assert_eq(tree_setxattr(T, "/d", dino, "user.dir", "1", 1, 0), 0);
	tu_reopen();
	expect_value(ino, "user.k", "v", 1);
	expect_value(dino, "user.dir", "1", 1);
	/* a rename keeps them */
	cr_assert_eq(tree_rename(T, "/g", "/h", 0, NULL), 0);
	expect_value(ino_of("/h"), "user.l", "w", 1);
	cr_assert_eq(tree_rmdir(T, "/d"), 0);
	{
		void *v;
		size_t n;
		cr_expect_eq(tree_getxattr(T, dino, "user.dir", &v, &n),
			     -ENODATA);
	}
}
