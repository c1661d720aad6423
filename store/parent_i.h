/*
 * parent_i.h - the reverse index (parent.c): PARENT#<ino> = parent inode +
 * name of every singly-named node but the root; kept in the batches of every
 * namespace change (see parent.c).
 *
 * Internal to store/. fs/ and tools/ use tree.h only.
 */
#ifndef PATHFS_PARENT_I_H
#define PATHFS_PARENT_I_H

#include <stdint.h>

#include "drive_i.h"

#define PARENT_FORMAT 4 /* the store format that has the index */
/* Adds the put of @ino's record: child of folder inode @parent, named as
 * the last name of @path. */
void parent_batch_put(struct tree *t, struct kv_batch *b, uint64_t ino,
		      uint64_t parent, const char *path);
void parent_batch_delete(struct tree *t, struct kv_batch *b, uint64_t ino);
/* Decodes a record's value (*name NUL-terminated). Errors: -EIO. */
int parent_decode(const char *val, size_t vlen, uint64_t *parent,
		  struct sbuf *name);
/* Reads @ino's record. Errors: -ENOENT, -EIO. */
int parent_get(struct tree *t, uint64_t ino, uint64_t *parent,
	       struct sbuf *name);
/* Builds drive @t's index from scratch (format 3 -> 4: store.c), in atomic
 * batches, the last synced; *count gets the records written. Caller holds
 * the store alone. Errors: -EIO, -ENOSPC. */
int parent_index_build(struct tree *t, uint64_t *count);

#endif
