/*
 * tree_remove.c - removing names: tree_unlink(), tree_rmdir(),
 * tree_remove() and the reclaiming of orphans (tree_reclaim(),
 * tree_reclaim_many() for the daemon's batches, tree_reclaim_orphans() at
 * store_open()), and tree_unhold(), which frees an orphan at its last
 * holder's close.
 *
 * A removal is one batch: the name, the parent folder's update and either the
 * inode's content (the last link of an inode nobody uses) or its orphan
 * records (TREE_KEEP_ORPHAN), built by tree_batch_remove() (tree.c). A file
 * whose blocks do not fit one batch's drop (etcd: content_i.h) is parked as
 * an orphan by that batch and reclaimed right after, in slices.
 *
 * On a full store (-ENOSPC) an unlink is sent again without the folder's
 * update, so that it only deletes: deletes are what frees space, and etcd's
 * NOSPACE alarm refuses any batch that puts. The folder then keeps its
 * times; an unlink that puts anyway (another link's count, an orphan's
 * records: TREE_KEEP_ORPHAN) and rmdir (the parent's link count) still fail
 * with -ENOSPC.
 *
 * Limits: rmdir removes an empty folder only (a branch: rm.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "batch_i.h"
#include "branch_lock_i.h"
#include "content_i.h"
#include "crash_hook_i.h"
#include "drive_i.h"
#include "flags_i.h"
#include "hold_i.h"
#include "log.h"
#include "tree_i.h"

/* unlink and rmdir: removes @path (a folder iff @dir), once; @ino as in
 * tree_remove(). */
static int remove_once(struct tree *t, const char *path, uint64_t ino, bool dir,
		       unsigned flags, uint64_t *orphan)
{
	char *parent = NULL;
	struct node n = {0}, pn = {0};
	struct kv_batch *b = NULL;
	bool ns = false, st = false;
	uint64_t nino = 0, left = 0, park = 0;
	uint32_t nflags;
	int64_t now;
	int rc;

	if (orphan)
		*orphan = 0;
	rc = path_check(path);
	if (rc)
		goto out;
	if (is_root(path)) {
		rc = dir ? -EBUSY : -EISDIR;
		goto out;
	}
	parent = path_parent(path);
	pthread_mutex_lock(&t->ns_lock);
	ns = true;
	/* both nodes are rewritten: read them under their stripes */
	rc = tree_lock_nodes(t, path, &n, true, ino, parent, &pn,
			     tree_dir_hint_get(t, parent));
	if (rc)
		goto out;
	st = true;
	nino = n.a.ino;
	tree_dir_hint_set(t, parent, pn.a.ino);
	if (!dir && S_ISDIR(n.a.mode)) {
		rc = -EISDIR;
		goto out;
	}
	if (dir && !S_ISDIR(n.a.mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	rc = flags_of_node(t, &n, &nflags);
	if (rc == 0)
		rc = flags_may_remove(&pn.a, nflags);
	if (rc)
		goto out;
	if (dir) {
		/* no rename's branch below it: it holds its destination */
		rc = lock_check_below(t, path);
		if (rc)
			goto out;
		rc = tree_dir_is_empty(t, path);
		if (rc <= 0) {
			rc = rc ? rc : -ENOTEMPTY;
			goto out;
		}
	}
	now = tree_now_ns();
	b = kv_batch_new(t->store->kv);
	rc = tree_batch_remove(t, b, path, &n, flags | TREE_PARK_BIG, &left,
			       now);
	if (rc == 0)
		rc = tree_dir_touch_node(t, b, parent, &pn, dir ? -1 : 0, now);
	if (rc == 0 && kv_batch_over(b) && !(flags & TREE_KEEP_ORPHAN)) {
		/*
		 * More keys than one commit takes (an inode's many xattrs
		 * where a range delete is an action a key: DynamoDB): the
		 * name goes with the inode parked as an orphan, reclaimed
		 * right after in slices (tree_reclaim).
		 */
		kv_batch_clear(b);
		rc = tree_batch_remove(t, b, path, &n, flags | TREE_KEEP_ORPHAN,
				       &left, now);
		if (rc == 0)
			rc = tree_dir_touch_node(t, b, parent, &pn,
						 dir ? -1 : 0, now);
	}
	if (rc == 0)
		rc = tree_commit(t, b);
	if (rc == -ENOSPC && !dir) {
		/*
		 * A full store takes deletes only (etcd's NOSPACE alarm
		 * refuses every batch that puts): the unlink goes again
		 * without the folder's new times, and a big file's blocks
		 * in the same batch rather than parked as an orphan, so
		 * that removing a file's last link, which frees its
		 * content, only deletes.
		 */
		kv_batch_clear(b);
		rc = tree_batch_remove(t, b, path, &n, flags, &left, now);
		if (rc == 0)
			rc = tree_commit(t, b);
	}
	if (rc)
		left = 0;
	if (!(flags & TREE_KEEP_ORPHAN))
		park = left; /* parked: too big to drop in one batch */
	else if (orphan)
		*orphan = left;
	if (rc == 0)
		rc = flags_sync(t, pn.a.flags); /* done, if not yet durable */
out:
	if (st)
		tree_unlock_inodes(t, nino, pn.a.ino, 0, 0);
	if (ns)
		pthread_mutex_unlock(&t->ns_lock);
	kv_batch_free(b);
	node_release(&n);
	node_release(&pn);
	free(parent);
	if (park && tree_reclaim(t, park))
		plog(LOG_WARNING,
		     "drive %s: %s: inode %llu not freed yet: the next open "
		     "frees it",
		     t->name, path, (unsigned long long)park);
	return rc;
}

/* remove_once(), again while a key it read changed before its commit
 * (tree_track). */
static int remove_node(struct tree *t, const char *path, uint64_t ino, bool dir,
		       unsigned flags, uint64_t *orphan)
{
	return TREE_TRACKED(t, remove_once(t, path, ino, dir, flags, orphan));
}

int tree_unlink(struct tree *t, const char *path, unsigned flags,
		uint64_t *orphan)
{
	return remove_node(t, path, 0, false, flags, orphan);
}

int tree_rmdir(struct tree *t, const char *path)
{
	return remove_node(t, path, 0, true, 0, NULL);
}

int tree_remove(struct tree *t, const char *path, uint64_t ino, bool dir,
		unsigned flags, uint64_t *orphan)
{
	return remove_node(t, path, ino, dir, flags, orphan);
}

/* An orphan a shared writer holds open (hold.c), this one included, is
 * its holders' to free (the last one's close: tree_unhold): adds to @b its
 * mark's hand-over to them (HOLD_ORPHAN_MARK), if not yet, and says
 * -EBUSY; 0 if nobody holds it. This writer's own hold counts (its
 * periodic sweep, tree_reclaim_dead, meets the orphans it holds too),
 * unless @closed (the caller has it neither open nor known: a hold of
 * its last close that is still to drop), which @b then drops. */
static int hand_over(struct tree *t, struct kv_batch *b, uint64_t ino,
		     bool closed)
{
	struct sbuf k = {0};
	char *v = NULL;
	size_t len = 0;
	bool held, mine = false;
	int rc;

	rc = closed ? hold_by_others(t, ino, &held, &mine)
		    : hold_by_any(t, ino, &held);
	if (rc == 0 && mine && !held)
		hold_batch_drop(t, b,
				ino); /* its list is this writer: no read */
	else if (rc == 0 && mine)
		rc = hold_batch_unhold(t, b, ino);
	if (rc || !held)
		return rc;
	key_orphan(&k, t->name, ino);
	rc = kv_get(t->store->kv, k.buf, k.len, &v, &len);
	if (rc == 0 && (len != strlen(HOLD_ORPHAN_MARK) ||
			memcmp(v, HOLD_ORPHAN_MARK, len)))
		tree_batch_put_orphan(t, b, ino, true);
	free(v);
	sbuf_release(&k);
	return rc ? rc : -EBUSY;
}

/* Adds to @b the deletes that free orphan @ino: its ORPHAN mark, INODE
 * record, content and xattrs; a file too big for one batch's drop is first
 * shrunk in slices, commits of their own that count as batches of @h
 * (tree_shrink_in_slices); *blocks (may be NULL) += the blocks @b drops.
 * Caller holds @ino's stripe. One another shared writer holds open:
 * -EBUSY, @b hands it over (hand_over; @closed: as there).
 * Errors: -ENOENT (not an orphan), -EBUSY, -EIO, and a slice's commit's. */
static int reclaim_add(struct tree *t, struct kv_batch *b, uint64_t ino,
		       struct crash_hook *h, uint64_t *blocks, bool closed)
{
	struct attr_ref r = {0};
	struct sbuf k = {0};
	char *val = NULL;
	size_t vlen;
	int rc;

	/* the batch that makes an orphan writes its mark and its INODE record
	 * with nlink 0 (tree_batch_remove, tree_mktmp), and the one that ends
	 * it (a reclaim, tree_link_tmp) drops the mark or both: an INODE
	 * record with nlink 0 is an orphan's, and its mark needs no read */
	rc = tree_attr_load(t, NULL, ino, &r);
	if (rc != 0 || r.n.a.nlink != 0) {
		int mrc;

		key_orphan(&k, t->name, ino);
		mrc = kv_get(t->store->kv, k.buf, k.len, &val, &vlen);
		sbuf_reset(&k);
		if (mrc) {
			rc = mrc;
			goto out;
		}
	}
	if (tree_shared(t)) {
		int hrc = hand_over(t, b, ino, closed);

		if (hrc) {
			rc = hrc;
			goto out;
		}
	}
	key_orphan(&k, t->name, ino);
	kv_batch_delete(b, k.buf, k.len);
	sbuf_reset(&k);
	key_inode(&k, t->name, ino);
	kv_batch_delete(b, k.buf, k.len);
	/* a file's blocks are known from its size (as when an unlink frees
	 * it at once): point deletes, no scan; anything else is scanned */
	if (rc == 0 && S_ISREG(r.n.a.mode)) {
		rc = tree_shrink_in_slices(t, &r, 0, h);
		if (rc == -ENOSPC)
			rc = 0; /* a full store: the rest in one batch of
				   deletes, which pass */
		if (rc == 0)
			rc = tree_drop_orphan_content(t, b, &r.n.a, ino, h);
		if (rc == 0 && blocks)
			*blocks += tree_drop_keys(t, &r.n.a);
	} else if (rc == 0 || rc == -ENOENT || rc == -EIO) {
		rc = tree_drop_orphan_content(t, b, NULL, ino, h);
	}
out:
	attr_ref_release(&r);
	free(val);
	sbuf_release(&k);
	return rc;
}

int tree_reclaim(struct tree *t, uint64_t ino)
{
	struct kv_batch *b = NULL;
	struct crash_hook h;
	int rc;

	crash_hook_init(&h);
	tree_lock_inodes(t, ino, 0, 0, 0);
	b = kv_batch_new(t->store->kv);
	rc = reclaim_add(t, b, ino, &h, NULL, false);
	if ((rc == 0 || rc == -EBUSY) && kv_batch_count(b)) {
		int crc = tree_commit(t, b);

		rc = crc ? crc : rc;
	}
	tree_unlock_inodes(t, ino, 0, 0, 0);
	kv_batch_free(b);
	return rc;
}

int tree_unhold_many(struct tree *t, const uint64_t *inos, size_t n)
{
	size_t max = tree_batch_max_ops(t) / 3; /* hold_drop()'s limit */
	bool last[64];
	int rc = 0;

	if (max > sizeof(last) / sizeof(*last))
		max = sizeof(last) / sizeof(*last);
	for (size_t i = 0; i < n && rc == 0; i += max) {
		size_t m = n - i < max ? n - i : max;

		rc = hold_drop(t, inos + i, m, last);
		for (size_t j = 0; j < m && rc == 0; j++) {
			if (!last[j])
				continue;
			/* a crash before this leaves it to tree_reclaim_dead */
			rc = TREE_TRACKED(t, tree_reclaim(t, inos[i + j]));
			if (rc == -ENOENT || rc == -EBUSY)
				rc = 0; /* freed by another, or held again */
		}
	}
	return rc;
}

int tree_unhold(struct tree *t, uint64_t ino)
{
	return tree_unhold_many(t, &ino, 1);
}

int tree_reclaim_many(struct tree *t, const uint64_t *inos, size_t n,
		      size_t *count)
{
	size_t max = tree_batch_max_ops(t) / 2, i, done = 0, in_b = 0;
	struct kv_batch *b = kv_batch_new(t->store->kv);
	uint64_t blocks = 0;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		/* each orphan's deletes in one batch: a batch near the
		 * engine's limit, or past half a slice of blocks (each
		 * orphan's drop is at most the other half), is committed
		 * before the next one starts */
		if (kv_batch_count(b) &&
		    (kv_batch_count(b) >= max || blocks > tree_drop_slice(t))) {
			rc = tree_commit(t, b);
			if (rc)
				break;
			done += in_b;
			in_b = blocks = 0;
			kv_batch_free(b);
			b = kv_batch_new(t->store->kv);
		}
		/* the stripe only for the read: no one else writes an orphan
		 * the kernel has let go of (the caller's promise) */
		tree_lock_inodes(t, inos[i], 0, 0, 0);
		rc = reclaim_add(t, b, inos[i], NULL, &blocks, true);
		tree_unlock_inodes(t, inos[i], 0, 0, 0);
		if (rc == 0)
			in_b++;
		else if (rc == -ENOENT || rc == -EBUSY)
			rc = 0; /* not (or no longer) an orphan, or held by
				   another writer (its hand-over is in b) */
	}
	if (rc == 0 && kv_batch_count(b)) { /* (hand-overs count none) */
		rc = tree_commit(t, b);
		if (rc == 0)
			done += in_b;
	}
	kv_batch_free(b);
	if (count)
		*count = done;
	return rc;
}

/* Whether the ORPHAN mark's value @v (@vlen bytes) names one of the @n
 * shared writers @live: "" is a sole writer's, gone once shared writers
 * hold the store. */
static bool kept_by(const char *v, size_t vlen, const uint64_t *live, size_t n)
{
	char hex[17];
	uint64_t id;

	if (vlen != 16)
		return false;
	memcpy(hex, v, 16);
	hex[16] = '\0';
	id = strtoull(hex, NULL, 16);
	for (size_t i = 0; i < n; i++)
		if (live[i] == id)
			return true;
	return false;
}

/* Reclaims the orphans of drive @t: every one, or (@dead) those whose mark
 * names no writer holding the store; *count (may be NULL) gets how many. */
static int reclaim_marks(struct tree *t, bool dead, size_t *count)
{
	struct sbuf lo = {0}, hi = {0}, pre = {0};
	struct kv_iter *it = NULL;
	uint64_t *live = NULL;
	size_t n = 0, nlive = 0;
	int rc;

	key_drive_prefix(&pre, t->name);
	key_kind_range(&lo, &hi, t->name, KEY_ORPHAN);
	/* the iterator reads a snapshot: reclaiming meanwhile is safe */
	rc = kv_iter_open(&it, t->store->kv, lo.buf, lo.len, hi.buf, hi.len);
	/* the writers now, after the marks' moment: a writer that made one
	 * of them and still holds the store is among them */
	if (rc == 0 && dead)
		rc = kv_writers(t->store->kv, &live, &nlive);
	if (rc == 0 && dead && nlive == 0)
		rc = -EIO; /* not even this writer: fenced, leave them */
	/* the holds of stopped writers go first: an orphan only they held
	 * open is then free to go (hold.c) */
	if (rc == 0 && dead)
		rc = hold_prune(t, live, nlive);
	if (rc)
		goto out;
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen, vlen;
		const char *key = kv_iter_key(it, &klen);
		const char *v = kv_iter_value(it, &vlen);
		uint64_t ino;

		if (key_ino_decode(key, klen, pre.len, KEY_ORPHAN, &ino)) {
			plog(LOG_ERR, "drive %s: malformed orphan key %.*s",
			     t->name, (int)klen, key);
			continue;
		}
		if (dead && kept_by(v, vlen, live, nlive))
			continue;
		/* several writers may free one: its reads condition it */
		rc = TREE_TRACKED(t, tree_reclaim(t, ino));
		if (rc == -ENOENT || rc == -EBUSY) {
			rc = 0; /* freed by another, or held open by one */
			continue;
		}
		if (rc && !dead) {
			/* at open: one orphan that cannot go now must not
			 * keep the drive from mounting (fsck lists it) */
			plog(LOG_WARNING,
			     "drive %s: orphan inode %llu not freed (%s): "
			     "the next open tries again",
			     t->name, (unsigned long long)ino, strerror(-rc));
			rc = 0;
			continue;
		}
		if (rc)
			goto out;
		n++;
	}
	rc = kv_iter_status(it);
out:
	if (count)
		*count = n;
	kv_iter_free(it);
	free(live);
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&pre);
	return rc;
}

int tree_reclaim_orphans(struct tree *t, size_t *count)
{
	/* a sole writer: the shared writers' holds are all stale */
	int rc = hold_prune(t, NULL, 0);

	return rc ? rc : reclaim_marks(t, false, count);
}

int tree_reclaim_dead(struct tree *t, size_t *count)
{
	if (count)
		*count = 0;
	if (!kv_writer_id(t->store->kv))
		return 0; /* a sole writer's orphans are its own */
	return reclaim_marks(t, true, count);
}
