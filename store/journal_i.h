/*
 * journal_i.h - the journal: the rename of a non-empty folder (journal.c),
 * the records of unfinished subtree operations and the commits of their
 * batches (journal_rec.c; shared with clone.c and fsck), and their replay
 * (journal_replay.c).
 *
 * Internal to store/. fs/ and tools/ use tree.h only.
 */
#ifndef PATHFS_JOURNAL_I_H
#define PATHFS_JOURNAL_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crash_hook_i.h"
#include "drive_i.h"

/* journal.c: rewrites a non-empty folder; called by tree_rename() with the
 * namespace checks done. tree_rename() calls it with t->ns_lock held and no
 * stripe held, and unlocks ns_lock after it returns (it may drop and retake
 * ns_lock meanwhile). @flags are tree_rename()'s (TREE_RENAME_EXCHANGE: both
 * exist, at least one is a non-empty folder; otherwise @dst is absent or an
 * empty folder, which it replaces). @wo (not NULL, not with an exchange):
 * the final batch leaves this whiteout at @src (tree_batch_whiteout()).
 * @seq: the record's number that journal_hold() gave; 0: allocated here,
 * and a shared writer's (in a conditioned change, tree_track) takes the
 * branch lock in batch 0 (lock_take_in). The final batch drops a shared
 * writer's lock (lock_drop_in). */
struct whiteout; /* batch_i.h */
int journal_rename_dir(struct tree *t, const char *src, const char *dst,
		       unsigned flags, const struct whiteout *wo, uint64_t seq,
		       uint64_t *orphan);
/* journal.c: a shared writer's folder rename whose batch 0 another
 * writer's change failed, before it reads what it moves again, and a
 * clone: *seq gets its record's number, claimed (journal_claim), and the
 * branch lock of @src and @dst is taken for it (lock_take). After the
 * rename, journal_unhold() drops the lock unless the record is left, and
 * the claim. Errors: as tree_alloc_ino, lock_take. */
int journal_hold(struct tree *t, const char *src, const char *dst,
		 uint64_t *seq);
void journal_unhold(struct tree *t, uint64_t seq);

/* The operations a record's put adds to a batch (journal_rec_put). */
#define JOURNAL_REC_OPS 1

/* journal_rec.c: commits @b (then empties it for reuse) and counts it for
 * the batch hook @h (may be NULL); the ENOSPC hook refuses it unsent.
 * Errors: as tree_commit. */
int journal_commit(struct tree *t, struct kv_batch *b, struct crash_hook *h);

/*
 * journal_rec.c: drops the keys of [lo, hi) in slices, one commit each
 * (counted as batches of @h, may be NULL), until at most kv_range_keys()
 * are left for the caller's batch, which drops the rest atomically with its
 * other changes; nothing on an engine that keeps one range delete
 * (RocksDB). A slice drops as many keys as its batch has room for
 * (kv_batch_range_room: kv_range_keys() on etcd, 99 less what the batch
 * holds on DynamoDB), the last one every key left when they fit. The first
 * slice goes in @b, which may hold other deletes to go with it; @b is left
 * empty after a slice, else as it came.
 * *sliced (may be NULL) is set true before the first slice is sent. Each
 * slice must leave the store consistent: the caller's to ensure. Errors: as
 * kv_iter_open, tree_commit.
 */
int tree_drop_slices(struct tree *t, struct kv_batch *b, const char *lo,
		     size_t lolen, const char *hi, size_t hilen,
		     struct crash_hook *h, bool *sliced);

/* ---- journal records ---------------------------------------------------
 * JOURNAL#<seq> values: version byte 1, then varints op, flags, phase, then
 * put_bytes src, dst, cursor, sdrive, then varints ino, blk, aux. Version 2
 * is the same for a record with JOURNAL_F_UNDO, which a program that reads
 * version 1 only must not replay (it would copy where it must undo).
 * Temporary keys of record seq: key_xtmp_range() (keys_i.h). */
#define JOURNAL_REC_VERSION	 1
#define JOURNAL_REC_VERSION_UNDO 2
#define JOP_RENAME		 1 /* folder rename; phase 1 copies src/ -> dst/ */
#define JOP_EXCHANGE		 2 /* phases 1 A/->tmp, 2 B/->A/, 3 tmp->B/ */
#define JOP_CLONE                                                              \
	3 /* cascade clone (cp -r / cross-drive mv), budgeted:
			  never replayed at open, resumed by its token; but
			  in CLONE_PHASE_DROP, finished by replay too */
/* A clone record's phases: 0 started, 1 copying (cursor: the last node
 * copied), CLONE_PHASE_DROP everything copied, its map being dropped in
 * slices (clone.c). */
#define CLONE_PHASE_DROP 2
/* In a JOP_RENAME record's flags (beside tree_rename()'s): leave a whiteout
 * at src (RENAME_WHITEOUT). */
#define JOURNAL_F_WHITEOUT 0x100
/* In a JOP_RENAME record's flags: batch 0 put the record's go-ahead key
 * (key_xtmp_mark()) with it; once that is gone the rename is being undone
 * (journal.c, rollback()), and replay goes on undoing it. */
#define JOURNAL_F_UNDO 0x200
struct journal_rec {
	uint64_t seq;
	uint32_t op, flags, phase;
	struct sbuf src, dst; /* paths */
	struct sbuf cursor;   /* last item done (key suffix or relative path) */
	struct sbuf sdrive;   /* JOP_CLONE: the source drive */
	uint64_t ino, blk, aux; /* JOP_CLONE: file in progress;
				 * JOP_RENAME with JOURNAL_F_WHITEOUT: the
				 * whiteout's ino, uid, gid */
	bool dropping; /* in memory: drop_slices() began (no undo now) */
	bool unlocked; /* in memory: the final batch dropped its lock */
};
/* journal_rec.c: the records. */
void journal_rec_release(struct journal_rec *r);
/* Errors: -EIO (does not decode). */
int journal_rec_decode(const char *buf, size_t len, struct journal_rec *r);
/* Adds to @b the put of @r at JOURNAL#<r->seq> of drive @t. */
void journal_rec_put(struct tree *t, struct kv_batch *b,
		     const struct journal_rec *r);
/* Reads JOURNAL#<seq>. Errors: -ENOENT, -EIO. */
int journal_rec_get(struct tree *t, uint64_t seq, struct journal_rec *r);
/* The sequence numbers of every record of @t, in order, in a malloc'd
 * array (caller frees). Errors: as kv_iter_open. */
int journal_seqs(struct tree *t, uint64_t **seqs, size_t *count);
/*
 * Marks record @seq of @t as being run by this thread; false if another
 * already runs it. A record is run by one thread at a time:
 * tree_journal_replay() (pathfsctl recover on a mounted store) skips the
 * records a rename of this process is still running, or it would apply
 * their final batch twice. journal_unclaim() when done.
 */
bool journal_claim(struct tree *t, uint64_t seq);
void journal_unclaim(struct tree *t, uint64_t seq);
/* journal.c: runs record @rec (a rename or exchange) from its phase and
 * cursor to the end; the copies run without ns_lock, the final batch holds
 * it. @ns_held: the caller holds ns_lock on entry and wants it held on
 * return. Commits count as batches of @h (may be NULL). Errors: as
 * tree_commit, kv_iter_open. */
int journal_run(struct tree *t, struct journal_rec *rec, struct crash_hook *h,
		bool ns_held);
/* journal.c: undoes a rename record that failed before its final batch, or
 * goes on undoing one (journal_undoing()). Caller holds ns_lock. Errors: as
 * tree_commit. */
int journal_rollback(struct tree *t, struct journal_rec *rec,
		     struct crash_hook *h);
/* journal.c: 1 if rename record @rec is being undone (its go-ahead key is
 * gone), 0 if not. Errors: as kv_get. */
int journal_undoing(struct tree *t, const struct journal_rec *rec);

/*
 * clone.c: the end of clone record @rec of drive @dt (everything copied):
 * drops its map XTMP#<seq>/ and the record, with the pending changes in @b,
 * in one commit; a map past a slice first goes in slices (tree_drop_slices)
 * after a commit of @b that moves the record to CLONE_PHASE_DROP. Commits
 * count as batches of @h (may be NULL). @b is left empty. Errors: as
 * tree_commit.
 */
int clone_finish(struct tree *dt, struct journal_rec *rec, struct kv_batch *b,
		 struct crash_hook *h);

#endif
