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
/*
 * watch.c: a lone writer's watch covers LOCKS and LONE only (the others'
 * changes it watches for do not exist while it is alone; its own cost it
 * the reading). lone_narrow(), once this writer went alone (tree_share
 * after tree_lone_try, hold.c): the drive's
 * watch, once it heard LONE name this writer (so it missed nothing
 * before), goes on from there over the two keys; kept as it is where the
 * engine's watch cannot start at a revision. lone_widen(), when a joiner
 * asked, before this writer publishes: over the whole drive again from
 * the ask on (from now, once it stands, if the ask's revision is not
 * known). Errors of lone_widen: as kv_watch, -ETIMEDOUT (the new watch
 * did not stand).
 */
void lone_narrow(struct tree *t);
int lone_widen(struct tree *t);

/* Puts "-" in LONE if it names this writer (it published its holds:
 * tree_share, hold.c), in a conditioned change. Errors: as tree_commit. */
int lone_unlone(struct tree *t);

#endif
