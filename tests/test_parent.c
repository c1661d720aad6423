/*
 * test_parent.c - the reverse index (store/parent.c): every node is found by
 * its inode number (tree_find_ino) after each namespace change that can move
 * or remove it (create, rename of itself or of a folder above it, exchange,
 * hard links, unlink, orphans, rm -r both ways, cp -r, a crash midway through
 * a folder rename), a removed node's number never leads to another node, and
 * fsck finds and repairs a damaged index.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drive_i.h"
#include "parent_i.h"
#include "branchutil.h"
#include "testutil.h"

#define T tu_tree

static uint64_t ino_of(const char *path)
{
	struct tree_attr a;
	int rc = tree_lookup(T, path, &a);

	cr_assert_eq(rc, 0, "lookup %s: %s", path, strerror(-rc));
	return a.ino;
}

/* @ino is found at @path (NULL: a hard-linked inode, by number). */
static void assert_at(uint64_t ino, const char *path)
{
	struct tree_attr a;
	char *found = NULL;
	int rc = tree_find_ino(T, ino, &found, &a);

	cr_assert_eq(rc, 0, "find %llu (%s): %s", (unsigned long long)ino,
		     path ? path : "by number", strerror(-rc));
	cr_assert_eq(a.ino, ino);
	if (path)
		cr_assert_str_eq(found ? found : "(null)", path);
	else
		cr_assert_null(found, "%s", found);
	free(found);
}

static void assert_gone_ino(uint64_t ino)
{
	struct tree_attr a;
	char *found = NULL;

	cr_assert_eq(tree_find_ino(T, ino, &found, &a), -ENOENT,
		     "inode %llu still found at %s", (unsigned long long)ino,
		     found ? found : "(by number)");
	cr_assert_null(found);
}

Test(parent, found_at_depth_and_after_renames, .init = tu_setup,
     .fini = tu_teardown)
{
	uint64_t a, b, f, g, r;

	tu_mkdir(T, "/a");
	tu_mkdir(T, "/a/b");
	tu_mkdir(T, "/a/b/c d");
	tu_mkfile(T, "/a/b/c d/f", "x", 1);
	tu_mkfile(T, "/a/b/g", "y", 1);
	a = ino_of("/a");
	b = ino_of("/a/b");
	f = ino_of("/a/b/c d/f");
	g = ino_of("/a/b/g");
	r = TREE_ROOT_INO;
	assert_at(r, "/");
	assert_at(a, "/a");
	assert_at(f, "/a/b/c d/f");
	/* a non-empty folder above: the journaled rewrite */
	cr_assert_eq(tree_rename(T, "/a/b", "/z", 0, NULL), 0);
	assert_at(b, "/z");
	assert_at(f, "/z/c d/f");
	assert_at(g, "/z/g");
	/* a file, into another folder */
	cr_assert_eq(tree_rename(T, "/z/g", "/a/g2", 0, NULL), 0);
	assert_at(g, "/a/g2");
	/* exchange of a folder and a file */
	cr_assert_eq(tree_rename(T, "/z", "/a/g2", TREE_RENAME_EXCHANGE, NULL),
		     0);
	assert_at(b, "/a/g2");
	assert_at(g, "/z");
	assert_at(f, "/a/g2/c d/f");
	/* replaced by a rename: gone, the mover found */
	tu_mkfile(T, "/victim", "v", 1);
	{
		uint64_t v = ino_of("/victim");

		cr_assert_eq(tree_rename(T, "/z", "/victim", 0, NULL), 0);
		assert_gone_ino(v);
		assert_at(g, "/victim");
	}
	assert_fsck_clean(T);
	tu_reopen();
	assert_at(f, "/a/g2/c d/f");
	assert_fsck_clean(T);
}

Test(parent, removed_and_orphaned_numbers_lead_nowhere, .init = tu_setup,
     .fini = tu_teardown)
{
	uint64_t f, d, o, orphan = 0;

	tu_mkdir(T, "/d");
	tu_mkfile(T, "/d/f", "x", 1);
	tu_mkfile(T, "/o", "o", 1);
	f = ino_of("/d/f");
	d = ino_of("/d");
	o = ino_of("/o");
	cr_assert_eq(tree_unlink(T, "/d/f", 0, NULL), 0);
	assert_gone_ino(f);
	/* a new file at the same name has a new number; the old one stays
	 * gone */
	tu_mkfile(T, "/d/f", "new", 3);
	cr_assert_neq(ino_of("/d/f"), f);
	assert_gone_ino(f);
	cr_assert_eq(tree_unlink(T, "/d/f", 0, NULL), 0);
	cr_assert_eq(tree_rmdir(T, "/d"), 0);
	assert_gone_ino(d);
	/* an orphan (open while unlinked) has no name to be found at */
	cr_assert_eq(tree_unlink(T, "/o", TREE_KEEP_ORPHAN, &orphan), 0);
	cr_assert_eq(orphan, o);
	assert_gone_ino(o);
	assert_gone_ino(0);
	assert_gone_ino(999999);
	assert_fsck_clean(T);
}

Test(parent, hard_links_are_found_by_number, .init = tu_setup,
     .fini = tu_teardown)
{
	uint64_t f;

	tu_mkdir(T, "/d");
	tu_mkfile(T, "/d/f", "x", 1);
	f = ino_of("/d/f");
	cr_assert_eq(tree_link(T, "/d/f", "/l", NULL), 0);
	assert_at(f, NULL);
	cr_assert_eq(tree_unlink(T, "/d/f", 0, NULL), 0);
	assert_at(f, NULL); /* one link left */
	cr_assert_eq(tree_rename(T, "/l", "/d/m", 0, NULL), 0);
	assert_at(f, NULL);
	assert_fsck_clean(T);
	cr_assert_eq(tree_unlink(T, "/d/m", 0, NULL), 0);
	assert_gone_ino(f);
	assert_fsck_clean(T);
}

/* The inode numbers of every node below @dir, malloc'd, *n of them. */
static uint64_t *inos_below(const char *dir, size_t *n)
{
	struct tree_scan *sc;
	struct tree_attr a;
	const char *p;
	uint64_t *v = NULL;
	int rc;

	*n = 0;
	cr_assert_eq(tree_scan_open(&sc, T, dir), 0);
	while ((rc = tree_scan_next(sc, &p, &a)) == 1) {
		v = realloc(v, (*n + 1) * sizeof(*v));
		v[(*n)++] = a.ino;
	}
	cr_assert_eq(rc, 0);
	tree_scan_free(sc);
	return v;
}

Test(parent, branch_commands_keep_the_index, .init = tu_setup,
     .fini = tu_teardown)
{
	struct tree_op_result r = {0};
	uint64_t *v;
	size_t n;

	/* big enough for rm -r's one-batch way, and a small one for the
	 * walk */
	build(T, "/big", 200);
	build(T, "/small", 5);
	cr_assert_eq(tree_cp_r(T, "/big", T, "/copy", 0, NULL, &r), 0);
	tree_op_result_release(&r);
	assert_found_by_number(T, "/");
	/* a clone in small budgeted steps */
	memset(&r, 0, sizeof(r));
	cr_assert_eq(tree_cp_r(T, "/big", T, "/copy2", 7, NULL, &r), 0);
	while (r.token) {
		char *tok = strdup(r.token);

		tree_op_result_release(&r);
		cr_assert_eq(tree_cp_r(T, "/big", T, "/copy2", 7, tok, &r), 0);
		free(tok);
	}
	tree_op_result_release(&r);
	assert_found_by_number(T, "/");
	assert_fsck_clean(T);
	v = inos_below("/big", &n);
	cr_assert_gt(n, 64);
	cr_assert_eq(tree_rm_r(T, "/big", 0, NULL, 0, &r), 0);
	tree_op_result_release(&r);
	for (size_t i = 0; i < n; i++)
		assert_gone_ino(v[i]);
	free(v);
	v = inos_below("/small", &n);
	cr_assert_eq(tree_rm_r(T, "/small", 0, NULL, 0, &r), 0);
	tree_op_result_release(&r);
	for (size_t i = 0; i < n; i++)
		assert_gone_ino(v[i]);
	free(v);
	assert_found_by_number(T, "/");
	assert_fsck_clean(T);
}

Test(parent, fsck_finds_and_repairs_the_index, .init = tu_setup,
     .fini = tu_teardown)
{
	struct kv_batch *b = kv_batch_new(tu_store->kv);
	uint64_t f, g, d;
	size_t findings = 0;

	tu_mkdir(T, "/d");
	tu_mkfile(T, "/d/f", "x", 1);
	tu_mkfile(T, "/d/g", "x", 1);
	f = ino_of("/d/f");
	g = ino_of("/d/g");
	d = ino_of("/d");
	/* missing, wrong place, stray */
	parent_batch_delete(T, b, f);
	parent_batch_put(T, b, g, TREE_ROOT_INO, "/g");
	parent_batch_put(T, b, 4000, d, "/d/ghost");
	cr_assert_eq(kv_batch_commit(tu_store->kv, b, false), 0);
	kv_batch_free(b);
	assert_gone_ino(f);
	assert_gone_ino(g); /* "/g" is not it: never another node */
	assert_gone_ino(4000);
	cr_assert_eq(tree_fsck(T, false, print_finding, NULL, &findings), 0);
	cr_assert_eq(findings, 3);
	cr_assert_eq(tree_fsck(T, true, print_finding, NULL, &findings), 0);
	cr_assert_eq(findings, 3);
	assert_fsck_clean(T);
	assert_at(f, "/d/f");
	assert_at(g, "/d/g");
}
