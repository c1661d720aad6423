/*
 * lone_i.h - a shared writer alone on its drive (lone.c): its opens kept in
 * memory instead of HOLD#, and the join that makes it publish them.
 *
 * Internal to store/.
 */
#ifndef PATHFS_LONE_I_H
#define PATHFS_LONE_I_H

#include <stdbool.h>
#include <stdint.h>

#include "drive_i.h"

/*
 * Joins drive @t as one more shared writer, at its open, before anything
 * else: a writer alone on it so far publishes its holds first (waited for,
 * LONE_WAIT_S at most). Not a shared writer: nothing. Errors: -EBUSY (a
 * live lone writer did not publish in time), -EIO, as tree_commit.
 */
int lone_join(struct tree *t);
/* A watch of the drive stands (the engine confirmed it: every change from
 * now on is heard), or stopped: a writer goes alone only while one does. */
void lone_watching(struct tree *t, bool on);
/* The watch heard LONE change to @v (@len bytes; NULL: deleted, or the
 * watch restarted): true if a joiner asks this writer, alone, to publish
 * its holds (tree_share). */
bool lone_heard(struct tree *t, const char *v, size_t len);
/* Whether this writer is alone on the drive now: no other live writer
 * holds anything (a joiner waits for it first). */
bool lone_now(struct tree *t);
/* If this writer is alone: keeps @ino open in memory and returns true
 * (no HOLD# to write); else false. */
bool lone_keep(struct tree *t, uint64_t ino);
/* Whether @ino was kept in memory (lone_keep); it is no more. */
bool lone_forget(struct tree *t, uint64_t ino);

#endif
