/*
 * testutil.c - fresh-store fixtures for the unit tests (see testutil.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

struct store *tu_store;
struct tree *tu_tree;
char tu_dir[PATH_MAX];

struct store *tu_open(const char *dir)
{
	struct store_options o = {.create = true};
	struct store *s = NULL;
	int rc = store_open(&s, dir, &o);
	cr_assert_eq(rc, 0, "store_open(%s): %s", dir, strerror(-rc));
	return s;
}

void tu_setup(void)
{
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(tu_dir, sizeof(tu_dir), "%s/pathfs-test-XXXXXX", base);
	cr_assert_not_null(mkdtemp(tu_dir));
	strcat(tu_dir, "/store");
	tu_store = tu_open(tu_dir);
	cr_assert_eq(store_drive_create(tu_store, "main", getuid(), getgid()),
		     0);
	cr_assert_eq(store_drive(tu_store, "main", &tu_tree), 0);
}

void tu_reopen(void)
{
	store_close(tu_store);
	tu_store = tu_open(tu_dir);
	cr_assert_eq(store_drive(tu_store, "main", &tu_tree), 0);
}

void tu_rmrf(const char *dir)
{
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

void tu_teardown(void)
{
	char *slash;

	store_close(tu_store);
	tu_store = NULL;
	tu_tree = NULL;
	slash = strrchr(tu_dir, '/');
	*slash = '\0'; /* remove the mkdtemp directory, not just the store */
	tu_rmrf(tu_dir);
}

void tu_mkdir(struct tree *t, const char *path)
{
	int rc = tree_mknode(t, path, S_IFDIR | 0755, getuid(), getgid(), 0,
			     NULL, NULL);
	cr_assert_eq(rc, 0, "mkdir %s: %s", path, strerror(-rc));
}

struct tree_attr tu_stat(struct tree *t, const char *path)
{
	struct tree_attr a;
	int rc = tree_lookup(t, path, &a);

	cr_assert_eq(rc, 0, "lookup %s: %s", path, strerror(-rc));
	return a;
}

char *tu_read(struct tree *t, const char *path, uint64_t ino, size_t *len)
{
	static char buf[1 << 16];
	int rc = tree_read(t, path, ino, 0, sizeof(buf), buf, len);

	cr_assert_eq(rc, 0, "read %s: %s", path ? path : "(ino)",
		     strerror(-rc));
	return buf;
}

void tu_mkfile(struct tree *t, const char *path, const char *content,
	       size_t len)
{
	struct tree_attr a;
	int rc = tree_mknode(t, path, S_IFREG | 0644, getuid(), getgid(), 0,
			     NULL, &a);
	cr_assert_eq(rc, 0, "create %s: %s", path, strerror(-rc));
	if (len) {
		rc = tree_write(t, path, a.ino, 0, content, len, false, NULL);
		cr_assert_eq(rc, 0, "write %s: %s", path, strerror(-rc));
	}
}
