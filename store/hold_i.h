/*
 * hold_i.h - which shared writers have an inode open (hold.c): what the
 * removal of a last name and the reclaim of an orphan ask.
 *
 * Internal to store/.
 */
#ifndef PATHFS_HOLD_I_H
#define PATHFS_HOLD_I_H

#include <stdbool.h>
#include <stdint.h>

#include "drive_i.h"

/* The ORPHAN mark of an orphan that no writer made for its own use: it
 * stays while writers hold it open (HOLD#), and the last one to close it
 * frees it (tree_unhold) */
#define HOLD_ORPHAN_MARK "*"

/*
 * Whether a shared writer other than this one has @ino open: *others; and
 * whether this one holds it (*mine: may be a hold its last close has not
 * dropped yet). A read of HOLD#ino, tracked inside a conditioned change
 * (TREE_TRACKED), so a hold taken after the read fails the change's
 * commit. Not a shared writer: both false, nothing read. Errors: -EIO,
 * -ENOMEM.
 */
int hold_by_others(struct tree *t, uint64_t ino, bool *others, bool *mine);
/* As hold_by_others(), this writer counted too: what an orphan's reclaim
 * asks, whoever runs it (a writer's sweep of stopped writers' orphans,
 * tree_reclaim_dead, meets those it holds open itself). */
int hold_by_any(struct tree *t, uint64_t ino, bool *held);

/* Adds to @b this writer's hold of @ino, an inode @b makes (nobody else can
 * hold it yet: no read needed). A sole writer: nothing; one alone keeps it in memory (lone.c). */
void hold_batch_new(struct tree *t, struct kv_batch *b, uint64_t ino);
/* Adds to @b the delete of HOLD#@ino, which names this writer only (the
 * batch frees @ino: a hold left to drop later would outlive it). */
void hold_batch_drop(struct tree *t, struct kv_batch *b, uint64_t ino);
/* Adds to @b this writer's drop from HOLD#@ino, others' holds kept (a
 * tracked read of it). Errors: -EIO, -ENOMEM. */
int hold_batch_unhold(struct tree *t, struct kv_batch *b, uint64_t ino);

/*
 * Drops this writer from HOLD#<ino> of each of the @n @inos (their last
 * close here; one it does not hold is skipped), in one conditioned change
 * (at most tree_batch_max_ops() / 3 of them: each adds a write and up to
 * two tracked reads, conditions of the commit); last[i]: nobody holds @inos[i] now and it is an
 * orphan kept for its holders only (HOLD_ORPHAN_MARK), for the caller to
 * free (tree_unhold, tree_remove.c: the freeing is removal's job). Not a
 * shared writer: nothing, all false. Errors: -EIO, -ENOMEM, as tree_commit.
 */
int hold_drop(struct tree *t, const uint64_t *inos, size_t n, bool *last);

/*
 * Drops from every HOLD# of drive @t the writers that are not among the
 * @nlive writers @live (stopped: their lease expired), each rewrite
 * conditioned on what it read. Errors: -EIO, -ENOMEM, as tree_commit.
 */
int hold_prune(struct tree *t, const uint64_t *live, size_t nlive);

#endif
