/*
 * branchutil.h - helpers shared by the unit tests of whole-branch work
 * (test_journal.c, test_cascade.c, ...): building branches with every kind of
 * node and awkward names, snapshots of a branch to compare before and after,
 * key counts, and fsck, journal and reverse index (test_parent.c,
 * test_upgrade.c) assertions. All act on the fresh store of testutil.h.
 */
#ifndef PATHFS_BRANCHUTIL_H
#define PATHFS_BRANCHUTIL_H

#include <stdbool.h>
#include <stdio.h>

#include "drive_i.h"

void reopen_opts(size_t batch, size_t bytes);
void describe(struct tree *t, FILE *f, const char *rel, const char *path,
	      struct tree_attr a, bool with_ino);
char *snap(struct tree *t, const char *root, bool with_ino);
size_t count_keys(const struct sbuf *lo, const struct sbuf *hi);
/* META's inode high-water mark of drive @drive of @s, as the store holds
 * it (asserts it reads and decodes). */
uint64_t meta_hwm(struct store *s, const char *drive);
size_t subtree_keys(struct tree *t, const char *dir);
size_t kind_keys(struct tree *t, enum key_kind kind);
void print_finding(void *ctx, const char *msg);
void assert_fsck_clean(struct tree *t);
void assert_no_journal(struct tree *t);
void assert_gone(struct tree *t, const char *path);
/* Every node below @dir (at least one) is found by its inode number at its
 * path (tree_find_ino; a hard link by number alone). */
void assert_found_by_number(struct tree *t, const char *dir);
void mkfile_n(struct tree *t, const char *path, size_t len, int seed);
size_t build(struct tree *t, const char *root, int n);
void make_neighbours(struct tree *t);
char *snap_outside(struct tree *t, const char *a, const char *b);

#endif
