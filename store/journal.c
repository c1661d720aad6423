/*
 * journal.c - renaming a non-empty folder (and RENAME_EXCHANGE involving one)
 * as a journaled, resumable rewrite of every key below it.
 *
 * A node's key is its full path, so moving a folder moves one key per
 * descendant. That cannot be one atomic batch for a big branch (memory, and
 * RocksDB's write stalls), so it runs as a sequence of batches, each atomic,
 * driven by a record JOURNAL#<seq> that says how far it got:
 *
 *   batch 0      puts JOURNAL#<seq> = {op, src, dst, flags, phase, cursor ""}
 *                and drops a replaced empty target folder (parent nlink - 1);
 *   batch 1..k   each copies the next chunk of [src/, src0) to the same
 *                suffixes under dst/ AND rewrites the record's cursor (the
 *                suffix of the last key copied): after a crash every key up
 *                to the cursor is copied and none after it is (the copy is
 *                constructive; nothing is destroyed until the end);
 *   batch k+1    puts the dst node (ctime now), deletes the src node (or,
 *                RENAME_WHITEOUT, puts the whiteout the record names there)
 *                and the range [src/, src0), updates both parents (mtime,
 *                ctime, nlink) and deletes the record.
 *
 * On an engine where a range delete of many keys stalls (etcd:
 * kv_range_keys()), the copied range is dropped in slices before the final
 * (or phase-change) batch, one commit of at most kv_range_keys() keys each;
 * the record stays until the final batch, so a crash between slices is
 * replayed like one after the copy (drop_slices()).
 *
 * A chunk holds at most store_options.rename_batch keys (default 1024) and
 * about rename_bytes bytes (default 4 MiB), so memory is bounded whatever the
 * branch size, and as many keys as its batch takes with the record
 * (kv_batch_room): on DynamoDB 98 puts and the record, the 99 actions of a
 * transaction besides the lease's check, and slices of 99 deletes, so a
 * rename of N entries is about 2N/99 transactions. Values are copied verbatim: content, xattrs and hard-link
 * records are keyed by inode number and do not move.
 *
 * RENAME_EXCHANGE of A and B (either may be a folder, empty or not, or a
 * non-folder) goes through a temporary area DRIVE#d|XTMP#<seq>/..., outside
 * PATH# so no listing sees it: phase 1 copies A/ to the area; one batch drops
 * A/ and enters phase 2, which copies B/ to A/; one batch drops B/ and enters
 * phase 3, which copies the area to B/; the final batch drops the area, swaps
 * the two nodes (ctime now), fixes the parents and deletes the record. Each
 * copy batch advances the cursor as for a rename. fsck knows the area: XTMP
 * keys without their record are leftovers.
 *
 * store_open() replays what a crash left (journal_replay.c): each record
 * goes on from its phase and cursor, every batch being idempotent given the
 * record it starts from. The records themselves, and the commit every batch
 * here goes through (counted for the crash hooks: crash_hook.c), are
 * journal_rec.c's.
 *
 * Locking: journal_rename_dir() is entered with t->ns_lock held (tree_rename)
 * and holds it for batch 0 and the final batch; it drops it while copying.
 * The caller keeps every request off both branches meanwhile (the daemon's
 * subtree lock); the parents may change, the final batch reads them fresh.
 * Among shared writers the rename holds the branch lock (branch_lock.c),
 * which keeps the other writers' changes off both branches: taken in
 * batch 0 (conditioned on every key it read, LOCKS among them), or, once
 * another writer's change failed that, from before it reads again
 * (journal_hold, tree_rename.c); the final batch is conditioned on what it
 * reads and drops the lock (a takeover's too).
 *
 * Errors in the middle: a rename that replaced nothing is undone (the copies
 * and the record are dropped by batches of deletes only, which a full disk
 * or etcd's NOSPACE alarm still takes) and the error returned, so a failed
 * rename(2) changed nothing. The copies go in slices where the engine wants
 * them (etcd), and a crash between slices must not let replay resume the
 * copy (its cursor would claim copies that are gone, and the final batch
 * would drop the source): batch 0 of such a rename also puts a go-ahead key
 * XTMP#<seq> (record flag JOURNAL_F_UNDO, record version 2), and the undo's
 * first batch deletes it, so the undo is recorded by a delete. Replay undoes
 * a record whose go-ahead is gone and finishes any other; a record without
 * the flag (older programs) is replayed as before. An exchange, or a rename that
 * replaced an empty folder, returns the error and keeps its record: the next
 * store_open() (or tree_journal_replay) finishes it; until then the copies
 * under the destination are not reachable by path. A record whose replay
 * fails is logged and kept (fsck lists it); replay still returns 0 so that a
 * full disk does not keep the store from opening.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch_i.h"
#include "branch_lock_i.h"
#include "content_i.h"
#include "crash_hook_i.h"
#include "drive_i.h"
#include "journal_i.h"
#include "log.h"

/* ---- the rewrite -------------------------------------------------------- */

/* Commits @b, the final batch of record @rec (which deletes it), with the
 * drop of its branch lock if a shared writer holds one (rec->unlocked). */
static int commit_final(struct tree *t, struct journal_rec *rec,
			struct kv_batch *b, struct crash_hook *h)
{
	int rc = lock_drop_in(t, b, rec->seq);
	bool dropped = rc == 1;

	if (rc >= 0)
		rc = journal_commit(t, b, h);
	if (dropped) {
		lock_seen_drop(t); /* ours: the watch is quiet on it */
		rec->unlocked = rc == 0;
	}
	return rc;
}

/*
 * Copies every key of [lo, hi) after the record's cursor to the same suffix
 * after @to, in chunks, each chunk committed with the record's new cursor.
 * A chunk fills its batch: as many puts as leave room for the record's
 * (kv_batch_room: 98 on DynamoDB, 126 on etcd), rename_batch at most.
 */
static int copy_range(struct tree *t, struct journal_rec *rec,
		      const struct sbuf *lo, const struct sbuf *hi,
		      const struct sbuf *to, struct crash_hook *h)
{
	size_t max_n = t->store->rename_copy ? t->store->rename_copy : 1024;
	size_t max_b =
	    t->store->opt.rename_bytes ? t->store->opt.rename_bytes : 4 << 20;
	struct kv_iter *it = NULL;
	struct kv_batch *b = kv_batch_new(t->store->kv);
	struct sbuf k = {0};
	size_t n = 0, bytes = 0;
	int rc;

	rc =
	    kv_iter_open(&it, t->store->kv, lo->buf, lo->len, hi->buf, hi->len);
	if (rc)
		goto out;
	if (rec->cursor.len) {
		const char *key;
		size_t klen;

		sbuf_add(&k, lo->buf, lo->len);
		sbuf_add(&k, rec->cursor.buf, rec->cursor.len);
		kv_iter_seek(it, k.buf, k.len);
		if (kv_iter_valid(it)) {
			key = kv_iter_key(it, &klen);
			if (klen == k.len && memcmp(key, k.buf, klen) == 0)
				kv_iter_next(it);
		}
	}
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen, vlen;
		const char *key = kv_iter_key(it, &klen);
		const char *val = kv_iter_value(it, &vlen);

		sbuf_reset(&k);
		sbuf_add(&k, to->buf, to->len);
		sbuf_add(&k, key + lo->len, klen - lo->len);
		kv_batch_put(b, k.buf, k.len, val, vlen);
		n++;
		bytes += k.len + vlen;
		if (n >= max_n || bytes >= max_b ||
		    kv_batch_room(b) <= JOURNAL_REC_OPS) {
			sbuf_reset(&rec->cursor);
			sbuf_add(&rec->cursor, key + lo->len, klen - lo->len);
			journal_rec_put(t, b, rec);
			rc = journal_commit(t, b, h);
			if (rc)
				goto out;
			n = bytes = 0;
		}
	}
	rc = kv_iter_status(it);
	if (rc || n == 0)
		goto out;
	/* the cursor of the last partial chunk: the last key copied */
	{
		size_t klen = k.len - to->len;

		sbuf_reset(&rec->cursor);
		sbuf_add(&rec->cursor, k.buf + to->len, klen);
	}
	journal_rec_put(t, b, rec);
	rc = journal_commit(t, b, h);
out:
	kv_iter_free(it);
	kv_batch_free(b);
	sbuf_release(&k);
	return rc;
}

/*
 * tree_drop_slices() of the copied range [lo, hi), called once every key of
 * it is copied (the record's cursor is past them): a crash between slices
 * leaves the record, and replay, which copies nothing more, drops the rest.
 * Sets rec->dropping: from the first slice on the rename cannot be undone.
 */
static int drop_slices(struct tree *t, struct journal_rec *rec,
		       const struct sbuf *lo, const struct sbuf *hi,
		       struct crash_hook *h)
{
	struct kv_batch *b = kv_batch_new(t->store->kv);
	int rc = tree_drop_slices(t, b, lo->buf, lo->len, hi->buf, hi->len, h,
				  &rec->dropping);

	kv_batch_free(b);
	return rc;
}

/* A phase-change batch: drops [lo, hi) and moves the record to @phase. */
static int next_phase(struct tree *t, struct journal_rec *rec,
		      const struct sbuf *lo, const struct sbuf *hi,
		      uint32_t phase, struct crash_hook *h)
{
	struct kv_batch *b = kv_batch_new(t->store->kv);
	int rc;

	rc = tree_batch_drop_range(t, b, lo->buf, lo->len, hi->buf, hi->len);
	if (rc)
		goto out;
	rec->phase = phase;
	sbuf_reset(&rec->cursor);
	journal_rec_put(t, b, rec);
	rc = journal_commit(t, b, h);
out:
	kv_batch_free(b);
	return rc;
}

/* Inode number of the node at @path (0 if missing), for stripe locking. */
static uint64_t node_ino(struct tree *t, const char *path)
{
	struct node n = {0};
	uint64_t ino = 0;

	if (tree_get_node(t, path, &n, false) == 0)
		ino = n.a.ino;
	node_release(&n);
	return ino;
}

/* Adds the parents' updates: @p1 nlink += @d1, @p2 nlink += @d2, both
 * mtime = ctime = @now; once when they are the same folder. */
static int touch_parents(struct tree *t, struct kv_batch *b, const char *p1,
			 int d1, const char *p2, int d2, int64_t now)
{
	int rc;

	if (strcmp(p1, p2) == 0)
		return tree_batch_dir_touch(t, b, p1, d1 + d2, now);
	rc = tree_batch_dir_touch(t, b, p1, d1, now);
	if (rc == 0)
		rc = tree_batch_dir_touch(t, b, p2, d2, now);
	return rc;
}

/* The final batch of a rename. Caller holds ns_lock. */
static int finish_rename(struct tree *t, struct journal_rec *rec,
			 struct crash_hook *h)
{
	const char *src = rec->src.buf, *dst = rec->dst.buf;
	char *ps = path_parent(src), *pd = path_parent(dst);
	uint64_t ino_s = node_ino(t, ps), ino_d = node_ino(t, pd);
	struct kv_batch *b = kv_batch_new(t->store->kv);
	struct sbuf k = {0}, lo = {0}, hi = {0};
	struct node n = {0};
	int64_t now = tree_now_ns();
	uint64_t ino;
	int rc;

	ino = node_ino(t, src);
	tree_lock_inodes(t, ino_s, ino_d, ino, 0);
	rc = tree_get_node(t, src, &n, true);
	if (rc) {
		plog(LOG_ERR, "drive %s: journal %016llx: source %s: %s",
		     t->name, (unsigned long long)rec->seq, src, strerror(-rc));
		goto unlock;
	}
	rc = tree_batch_moved(t, b, dst, ino_d, &n, now);
	if (rc == 0 && (rec->flags & JOURNAL_F_WHITEOUT)) {
		struct whiteout w = {rec->ino, (uid_t)rec->blk,
				     (gid_t)rec->aux};

		rc = tree_batch_whiteout(t, b, src, &w, now);
	} else {
		key_node(&k, t->name, src);
		kv_batch_delete(b, k.buf, k.len);
	}
	if (rc)
		goto unlock;
	key_subtree_range(&lo, &hi, t->name, src);
	rc = tree_batch_drop_range(t, b, lo.buf, lo.len, hi.buf, hi.len);
	if (rc)
		goto unlock;
	rc = touch_parents(t, b, ps, S_ISDIR(n.a.mode) ? -1 : 0, pd,
			   S_ISDIR(n.a.mode) ? 1 : 0, now);
	if (rc)
		goto unlock;
	sbuf_reset(&k);
	key_journal(&k, t->name, rec->seq);
	kv_batch_delete(b, k.buf, k.len);
	if (rec->flags & JOURNAL_F_UNDO) {
		sbuf_reset(&k);
		key_xtmp_mark(&k, t->name, rec->seq);
		kv_batch_delete(b, k.buf, k.len);
	}
	rc = commit_final(t, rec, b, h);
unlock:
	tree_unlock_inodes(t, ino_s, ino_d, ino, 0);
	node_release(&n);
	kv_batch_free(b);
	sbuf_release(&k);
	sbuf_release(&lo);
	sbuf_release(&hi);
	free(ps);
	free(pd);
	return rc;
}

/* The final batch of an exchange. Caller holds ns_lock. */
static int finish_exchange(struct tree *t, struct journal_rec *rec,
			   struct crash_hook *h)
{
	const char *pa = rec->src.buf, *pb = rec->dst.buf;
	char *qa = path_parent(pa), *qb = path_parent(pb);
	uint64_t ino_qa = node_ino(t, qa), ino_qb = node_ino(t, qb);
	uint64_t ino_a = node_ino(t, pa), ino_b = node_ino(t, pb);
	struct kv_batch *b = kv_batch_new(t->store->kv);
	struct sbuf k = {0}, lo = {0}, hi = {0};
	struct node na = {0}, nb = {0};
	int64_t now = tree_now_ns();
	int da, rc;

	tree_lock_inodes(t, ino_qa, ino_qb, ino_a, ino_b);
	rc = tree_get_node(t, pa, &na, true);
	if (rc == 0)
		rc = tree_get_node(t, pb, &nb, true);
	if (rc) {
		plog(LOG_ERR, "drive %s: journal %016llx: exchange %s, %s: %s",
		     t->name, (unsigned long long)rec->seq, pa, pb,
		     strerror(-rc));
		goto unlock;
	}
	key_xtmp_range(&lo, &hi, t->name, rec->seq);
	rc = tree_batch_drop_range(t, b, lo.buf, lo.len, hi.buf, hi.len);
	if (rc)
		goto unlock;
	rc = tree_batch_moved(t, b, pa, ino_qa, &nb, now);
	if (rc == 0)
		rc = tree_batch_moved(t, b, pb, ino_qb, &na, now);
	if (rc)
		goto unlock;
	/* a's parent now holds b's node and the other way round */
	da = (S_ISDIR(nb.a.mode) ? 1 : 0) - (S_ISDIR(na.a.mode) ? 1 : 0);
	rc = touch_parents(t, b, qa, da, qb, -da, now);
	if (rc)
		goto unlock;
	key_journal(&k, t->name, rec->seq);
	kv_batch_delete(b, k.buf, k.len);
	rc = commit_final(t, rec, b, h);
unlock:
	tree_unlock_inodes(t, ino_qa, ino_qb, ino_a, ino_b);
	node_release(&na);
	node_release(&nb);
	kv_batch_free(b);
	sbuf_release(&k);
	sbuf_release(&lo);
	sbuf_release(&hi);
	free(qa);
	free(qb);
	return rc;
}

/*
 * Runs record @rec from its phase and cursor to the end. The copies run
 * without ns_lock; the final batch holds it. @ns_held: the caller holds
 * ns_lock on entry and wants it held on return.
 */
int journal_run(struct tree *t, struct journal_rec *rec, struct crash_hook *h,
		bool ns_held)
{
	struct sbuf alo = {0}, ahi = {0}, blo = {0}, bhi = {0};
	struct sbuf tlo = {0}, thi = {0};
	uint64_t was = lock_own(rec->seq); /* its branches are its own */
	int rc = 0;

	if (ns_held)
		pthread_mutex_unlock(&t->ns_lock);
	key_subtree_range(&alo, &ahi, t->name, rec->src.buf);
	key_subtree_range(&blo, &bhi, t->name, rec->dst.buf);
	if (rec->op == JOP_RENAME) {
		rc = copy_range(t, rec, &alo, &ahi, &blo, h);
		if (rc == 0)
			rc = drop_slices(t, rec, &alo, &ahi, h);
		if (rc)
			goto relock;
		pthread_mutex_lock(&t->ns_lock);
		/* the parents change under other writers: conditioned */
		rc = TREE_TRACKED(t, finish_rename(t, rec, h));
		goto done;
	}
	key_xtmp_range(&tlo, &thi, t->name, rec->seq);
	if (rec->phase <= 1) {
		rc = copy_range(t, rec, &alo, &ahi, &tlo, h);
		if (rc == 0)
			rc = drop_slices(t, rec, &alo, &ahi, h);
		if (rc == 0)
			rc = next_phase(t, rec, &alo, &ahi, 2, h);
	}
	if (rc == 0 && rec->phase == 2) {
		rc = copy_range(t, rec, &blo, &bhi, &alo, h);
		if (rc == 0)
			rc = drop_slices(t, rec, &blo, &bhi, h);
		if (rc == 0)
			rc = next_phase(t, rec, &blo, &bhi, 3, h);
	}
	if (rc == 0 && rec->phase == 3)
		rc = copy_range(t, rec, &tlo, &thi, &blo, h);
	if (rc == 0)
		rc = drop_slices(t, rec, &tlo, &thi, h);
	if (rc)
		goto relock;
	pthread_mutex_lock(&t->ns_lock);
	rc = TREE_TRACKED(t, finish_exchange(t, rec, h));
	goto done;
relock:
	pthread_mutex_lock(&t->ns_lock);
done:
	if (rc == 0 && !rec->unlocked)
		rc = lock_release(t, rec->seq);
	lock_own(was);
	if (!ns_held)
		pthread_mutex_unlock(&t->ns_lock);
	sbuf_release(&alo);
	sbuf_release(&ahi);
	sbuf_release(&blo);
	sbuf_release(&bhi);
	sbuf_release(&tlo);
	sbuf_release(&thi);
	return rc;
}

/*
 * Undoes a rename that failed before its final batch (ENOSPC, EIO), or
 * goes on undoing one (replay): drops the copies under dst/ and the record,
 * by batches of deletes only (which a full disk still accepts): in slices
 * where the engine wants them (tree_drop_slices), the first of them deleting
 * the go-ahead key, so that a crash in between replays as an undo; the
 * last one deletes the record. Only for a rename that replaced nothing (a
 * dropped target cannot come back) and put its go-ahead (JOURNAL_F_UNDO).
 * Caller holds ns_lock.
 */
int journal_rollback(struct tree *t, struct journal_rec *rec,
		     struct crash_hook *h)
{
	struct kv_batch *b = kv_batch_new(t->store->kv);
	struct sbuf lo = {0}, hi = {0}, k = {0};
	int rc;

	key_xtmp_mark(&k, t->name, rec->seq);
	kv_batch_delete(b, k.buf, k.len);
	key_subtree_range(&lo, &hi, t->name, rec->dst.buf);
	rc = tree_drop_slices(t, b, lo.buf, lo.len, hi.buf, hi.len, h, NULL);
	if (rc == 0)
		rc =
		    tree_batch_drop_range(t, b, lo.buf, lo.len, hi.buf, hi.len);
	sbuf_reset(&k);
	key_journal(&k, t->name, rec->seq);
	kv_batch_delete(b, k.buf, k.len);
	if (rc == 0)
		rc = journal_commit(t, b, h);
	if (rc == 0)
		rc = lock_release(t, rec->seq);
	kv_batch_free(b);
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&k);
	return rc;
}

/* Whether rename record @rec is being undone: it has a go-ahead key
 * (JOURNAL_F_UNDO) and that is gone. Errors: as kv_get. */
int journal_undoing(struct tree *t, const struct journal_rec *rec)
{
	struct sbuf k = {0};
	char *val = NULL;
	size_t vlen;
	int rc;

	if (rec->op != JOP_RENAME || !(rec->flags & JOURNAL_F_UNDO))
		return 0;
	key_xtmp_mark(&k, t->name, rec->seq);
	rc = kv_get(t->store->kv, k.buf, k.len, &val, &vlen);
	free(val);
	sbuf_release(&k);
	return rc == -ENOENT ? 1 : rc;
}

int journal_hold(struct tree *t, const char *src, const char *dst,
		 uint64_t *seq)
{
	int rc = tree_alloc_ino(t, seq);

	if (rc)
		return rc;
	journal_claim(t, *seq); /* new: cannot be taken */
	rc = lock_take(t, *seq, src, dst);
	if (rc) {
		journal_unclaim(t, *seq);
		*seq = 0;
	}
	return rc;
}

void journal_unhold(struct tree *t, uint64_t seq)
{
	struct journal_rec rec = {0};
	int rc = journal_rec_get(t, seq, &rec);

	/* a record left (an exchange that stopped) keeps its lock */
	if (rc == -ENOENT)
		rc = lock_release(t, seq);
	if (rc && rc != -ENOENT)
		plog(LOG_ERR,
		     "drive %s: branch lock %016llx not dropped: %s; its "
		     "writer's takeover drops it",
		     t->name, (unsigned long long)seq, strerror(-rc));
	journal_unclaim(t, seq);
	journal_rec_release(&rec);
}

int journal_rename_dir(struct tree *t, const char *src, const char *dst,
		       unsigned flags, const struct whiteout *wo, uint64_t seq,
		       uint64_t *orphan)
{
	struct journal_rec rec = {0};
	struct crash_hook h;
	struct kv_batch *b = kv_batch_new(t->store->kv);
	struct node dn = {0};
	char *pd = NULL;
	uint64_t ino_pd = 0, ino_dn = 0;
	bool claimed = false;
	int rc;

	crash_hook_init(&h);
	if (orphan)
		*orphan = 0;
	rec.seq = seq;
	if (!seq) {
		rc = tree_alloc_ino(t, &rec.seq);
		if (rc)
			goto out;
		journal_claim(t, rec.seq); /* new: cannot be taken */
		claimed = true;
	}
	rec.op = (flags & TREE_RENAME_EXCHANGE) ? JOP_EXCHANGE : JOP_RENAME;
	rec.flags = flags;
	if (wo) {
		rec.flags |= JOURNAL_F_WHITEOUT;
		rec.ino = wo->ino;
		rec.blk = wo->uid;
		rec.aux = wo->gid;
	}
	rec.phase = 1;
	sbuf_adds(&rec.src, src);
	sbuf_adds(&rec.dst, dst);
	sbuf_nul(&rec.cursor);
	sbuf_nul(&rec.sdrive);
	if (rec.op == JOP_RENAME) {
		/* a replaced target can only be an empty folder (tree_rename
		 * checked): it goes in batch 0; with none, the rename can be
		 * undone, and batch 0 puts its go-ahead */
		rc = tree_get_node(t, dst, &dn, false);
		if (rc == 0) {
			int64_t now = tree_now_ns();

			pd = path_parent(dst);
			ino_pd = node_ino(t, pd);
			ino_dn = dn.a.ino;
			tree_lock_inodes(t, ino_pd, ino_dn, 0, 0);
			rc = tree_batch_remove(t, b, dst, &dn,
					       flags & TREE_KEEP_ORPHAN, orphan,
					       now);
			if (rc == 0)
				rc = tree_batch_dir_touch(t, b, pd, -1, now);
		} else if (rc == -ENOENT) {
			struct sbuf k = {0};

			rec.flags |= JOURNAL_F_UNDO;
			key_xtmp_mark(&k, t->name, rec.seq);
			kv_batch_put(b, k.buf, k.len, "", 0);
			sbuf_release(&k);
			rc = 0;
		}
		if (rc)
			goto unlock;
	}
	/* a shared writer not holding the lock yet takes it in batch 0 */
	rc = seq ? 0 : lock_take_in(t, b, rec.seq, src, dst);
	if (rc)
		goto unlock;
	journal_rec_put(t, b, &rec);
	rc = journal_commit(t, b, &h);
	if (!seq && tree_shared(t))
		lock_seen_drop(t); /* ours: the watch is quiet on it */
	if (rc && orphan)
		*orphan = 0;
unlock:
	if (ino_pd || ino_dn)
		tree_unlock_inodes(t, ino_pd, ino_dn, 0, 0);
	if (rc)
		goto out;
	rc = journal_run(t, &rec, &h, true);
	if (rc && (rec.flags & JOURNAL_F_UNDO) && !rec.dropping) {
		int rb = journal_rollback(t, &rec, &h);

		if (rb == 0)
			plog(LOG_ERR,
			     "drive %s: rename %s -> %s failed: %s; undone",
			     t->name, src, dst, strerror(-rc));
		else
			plog(LOG_ERR,
			     "drive %s: rename %s -> %s failed: %s; its undo "
			     "stopped: %s; the next store open completes it",
			     t->name, src, dst, strerror(-rc), strerror(-rb));
	} else if (rc) {
		plog(LOG_ERR,
		     "drive %s: rename %s -> %s stopped: %s; the next store "
		     "open completes it",
		     t->name, src, dst, strerror(-rc));
	}
out:
	if (claimed)
		journal_unclaim(t, rec.seq);
	kv_batch_free(b);
	node_release(&dn);
	journal_rec_release(&rec);
	free(pd);
	return rc;
}
