/*
 * branch_lock_i.h - the branch locks of shared writers' folder renames
 * (branch_lock.c): which branches a journaled rewrite holds, the check every
 * conditioned change of another writer makes, and the takeover of a lock
 * whose writer stopped.
 *
 * Internal to store/.
 */
#ifndef PATHFS_BRANCH_LOCK_I_H
#define PATHFS_BRANCH_LOCK_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drive_i.h"

/* A held branch pair: journal record @seq of writer @writer
 * (kv_writer_id) moves @src to @dst (or exchanges them). */
struct branch_lock {
	uint64_t seq, writer;
	char *src, *dst;
};

/* Called by tree_track(): a conditioned change of @t starts on this thread.
 * lock_section_end(), from tree_retry(), ends it (@conflict: its commit
 * failed on a condition): true if the change met a lock (lock_check_path,
 * lock_check_below) and waited until LOCKS changed, so it starts again;
 * false if it did not, or waited too long. */
void lock_section_start(struct tree *t);
bool lock_section_end(struct tree *t, bool conflict);

/* For the watch of @t (tree_watch): it runs (@on) or stops, and LOCKS
 * changed (lock_seen_drop: the copy of it the checks use is dropped). */
void lock_seen_watch(struct tree *t, bool on);
void lock_seen_drop(struct tree *t);

/*
 * In a conditioned change of a shared writer (nothing otherwise): -EAGAIN,
 * and the change spoiled (kv_track_spoil: its commit fails), if @path lies
 * in a branch another rename holds (lock_check_path), or if a held branch
 * lies at or below folder @path (lock_check_below: before @path is removed,
 * replaced or moved). The first check of a change reads LOCKS (or takes
 * it as last read, while a watch keeps that up to date), its version
 * tracked: a lock taken after it fails the change's commit. Errors: as kv_get, -EIO.
 */
int lock_check_path(struct tree *t, const char *path);
int lock_check_below(struct tree *t, const char *path);

/* Takes the lock of @src and @dst for rename record @seq (yet to be
 * written), in a conditioned commit of LOCKS, once no held branch and one
 * of the two nest (waiting for them). Nothing for a sole writer. Errors: as
 * kv_get, tree_commit, -EIO. */
int lock_take(struct tree *t, uint64_t seq, const char *src, const char *dst);

/*
 * The same in a conditioned change's own batch @b, whose commit writes the
 * record: the lock's put added to @b, LOCKS as the change read it (the
 * commit is conditioned on its version: a lock taken since fails it).
 * Nothing for a sole writer. Errors: as lock_check_below (-EAGAIN, the
 * change spoiled, if a held branch and one of the two nest).
 */
int lock_take_in(struct tree *t, struct kv_batch *b, uint64_t seq,
		 const char *src, const char *dst);

/* In a conditioned change of a shared writer that deletes record @seq: its
 * lock's drop added to @b (LOCKS as the change read it). 1 if it had one, 0
 * if not (or a sole writer: nothing added). After the commit, the writer's
 * copy of LOCKS must go (lock_seen_drop). Errors: as kv_get, -EIO. */
int lock_drop_in(struct tree *t, struct kv_batch *b, uint64_t seq);

/* Drops record @seq's lock, if it has one, once the record is gone (a
 * commit of its own, again while another writer changes LOCKS). Errors: as
 * kv_get, tree_commit. */
int lock_release(struct tree *t, uint64_t seq);

/* The record this thread runs (journal_run, journal_rollback): its own lock
 * does not keep it out. 0: none. Returns the one it replaces. */
uint64_t lock_own(uint64_t seq);

/* Every lock of @t (a malloc'd array, free with lock_list_free). Errors: as
 * kv_get, -EIO. */
int lock_list(struct tree *t, struct branch_lock **out, size_t *n);
void lock_list_free(struct branch_lock *l, size_t n);

/* Makes this writer the holder of record @seq's lock if writer @from still
 * holds it: 1 if so, 0 if another did first or the lock is gone. Errors: as
 * kv_get, tree_commit. */
int lock_claim(struct tree *t, uint64_t seq, uint64_t from);

#endif
