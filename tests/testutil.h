/*
 * testutil.h - fixtures shared by the Criterion unit tests: each test gets a
 * fresh store in a new mkdtemp directory, removed afterwards.
 */
#ifndef PATHFS_TESTUTIL_H
#define PATHFS_TESTUTIL_H

#include "tree.h"

/* Set by tu_setup(): a fresh store in tu_dir with drive "main" in tu_tree. */
extern struct store *tu_store;
extern struct tree *tu_tree;
extern char tu_dir[];

/* Criterion .init/.fini: fresh store with drive "main" / close and rm -rf. */
void tu_setup(void);
void tu_teardown(void);

/* Closes and reopens tu_store (and tu_tree) on the same directory. */
void tu_reopen(void);

/* Opens a store at @dir with default options; asserts success. */
struct store *tu_open(const char *dir);

/* Creates a folder / a file with @len bytes of @content at @path; asserts. */
void tu_mkdir(struct tree *t, const char *path);
void tu_mkfile(struct tree *t, const char *path, const char *content,
	       size_t len);

/* The attributes of @path (asserts it exists) / the first 64 KiB of the
 * file at @path or inode @ino (asserts the read succeeds; the buffer is
 * static, overwritten by the next call), its length in *len. */
struct tree_attr tu_stat(struct tree *t, const char *path);
char *tu_read(struct tree *t, const char *path, uint64_t ino, size_t *len);

/* rm -rf of @dir. */
void tu_rmrf(const char *dir);

#endif
