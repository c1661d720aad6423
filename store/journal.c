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
 * branch size. Values are copied verbatim: content, xattrs and hard-link
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
 * store_open() calls tree_journal_replay() for every drive before anything is
 * served; it continues each rename/exchange record from its phase and cursor.
 * Every batch is idempotent given the record it starts from, so replaying
 * twice, or crashing during a replay, is harmless. Clone records (JOP_CLONE,
 * clone.c) are budgeted operations paused on purpose: replay leaves them for
 * their resume token and only logs them, but for one that copied everything
 * and was dropping its map (CLONE_PHASE_DROP), which replay finishes.
 *
 * Locking: journal_rename_dir() is entered with t->ns_lock held (tree_rename)
 * and holds it for batch 0 and the final batch; it drops it while copying.
 * The caller keeps every request off both branches meanwhile (the daemon's
 * subtree lock); the parents may change, the final batch reads them fresh.
 *
 * Test-only crash hook: with PATHFS_CRASH_AFTER_BATCHES=N in the environment,
 * the process kills itself with SIGKILL (no cleanup, like kill -9) right after
 * committing batch number N of a subtree rewrite started in this process:
 * batch 0 is the journal-record batch, 1..k the copy batches (for an exchange
 * also the two phase-change batches, in order), k+1 the final batch. N past
 * the end means no crash. The budgeted cascade operations (cascade.c) count
 * their batches the same way. Replay never crashes, so a store always opens.
 * PATHFS_CRASH_AFTER_COMMITS=N is the same for every commit of the process
 * (tree_commit(): creates, writes, unlinks, renames, reclaims, every batch
 * of every operation; store_open()'s recovery counts too): the process
 * dies right after its Nth commit, so a test that picks N at random under
 * load stops the daemon between any two commits of any operation.
 * PATHFS_ENOSPC_AT_BATCH=N (test-only too) refuses batch number N of a
 * rename with -ENOSPC, once, without sending it: the undo that follows is
 * counted from N on, so both hooks together stop an undo between slices.
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
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch_i.h"
#include "codec_i.h"
#include "content_i.h"
#include "drive_i.h"
#include "journal_i.h"
#include "log.h"

/* ---- records ------------------------------------------------------------ */

void journal_rec_release(struct journal_rec *r)
{
	sbuf_release(&r->src);
	sbuf_release(&r->dst);
	sbuf_release(&r->cursor);
	sbuf_release(&r->sdrive);
}

static void rec_encode(struct sbuf *out, const struct journal_rec *r)
{
	sbuf_addc(out, (r->flags & JOURNAL_F_UNDO) ? JOURNAL_REC_VERSION_UNDO
						   : JOURNAL_REC_VERSION);
	put_varint(out, r->op);
	put_varint(out, r->flags);
	put_varint(out, r->phase);
	put_bytes(out, r->src.buf, r->src.len);
	put_bytes(out, r->dst.buf, r->dst.len);
	put_bytes(out, r->cursor.buf, r->cursor.len);
	put_bytes(out, r->sdrive.buf, r->sdrive.len);
	put_varint(out, r->ino);
	put_varint(out, r->blk);
	put_varint(out, r->aux);
}

/* Decodes a bytes field into @s as a NUL-terminated string. */
static int get_sbuf(const char **p, const char *end, struct sbuf *s)
{
	const char *v;
	size_t n;
	int rc = get_bytes(p, end, &v, &n);

	if (rc)
		return rc;
	sbuf_reset(s);
	sbuf_add(s, v, n);
	sbuf_nul(s);
	return 0;
}

int journal_rec_decode(const char *buf, size_t len, struct journal_rec *r)
{
	const char *p = buf, *end = buf + len;
	uint64_t op, flags, phase;
	int rc;

	if (len < 1 || ((unsigned char)buf[0] != JOURNAL_REC_VERSION &&
			(unsigned char)buf[0] != JOURNAL_REC_VERSION_UNDO))
		return -EIO;
	p++;
	rc = get_varint(&p, end, &op);
	if (!rc)
		rc = get_varint(&p, end, &flags);
	if (!rc)
		rc = get_varint(&p, end, &phase);
	if (!rc)
		rc = get_sbuf(&p, end, &r->src);
	if (!rc)
		rc = get_sbuf(&p, end, &r->dst);
	if (!rc)
		rc = get_sbuf(&p, end, &r->cursor);
	if (!rc)
		rc = get_sbuf(&p, end, &r->sdrive);
	if (!rc)
		rc = get_varint(&p, end, &r->ino);
	if (!rc)
		rc = get_varint(&p, end, &r->blk);
	if (!rc)
		rc = get_varint(&p, end, &r->aux);
	if (rc)
		return -EIO;
	if (op < JOP_RENAME || op > JOP_CLONE || phase > 3 ||
	    path_check(r->src.buf) || path_check(r->dst.buf) ||
	    ((unsigned char)buf[0] == JOURNAL_REC_VERSION_UNDO) !=
		((flags & JOURNAL_F_UNDO) != 0))
		return -EIO;
	r->op = (uint32_t)op;
	r->flags = (uint32_t)flags;
	r->phase = (uint32_t)phase;
	return 0;
}

void journal_rec_put(struct tree *t, struct kv_batch *b,
		     const struct journal_rec *r)
{
	struct sbuf k = {0}, v = {0};

	key_journal(&k, t->name, r->seq);
	rec_encode(&v, r);
	kv_batch_put(b, k.buf, k.len, v.buf, v.len);
	sbuf_release(&k);
	sbuf_release(&v);
}

int journal_rec_get(struct tree *t, uint64_t seq, struct journal_rec *r)
{
	struct sbuf k = {0};
	char *val = NULL;
	size_t vlen;
	int rc;

	key_journal(&k, t->name, seq);
	rc = kv_get(t->store->kv, k.buf, k.len, &val, &vlen);
	if (rc)
		goto out;
	r->seq = seq;
	rc = journal_rec_decode(val, vlen, r);
	if (rc)
		plog(LOG_ERR, "drive %s: JOURNAL#%016llx does not decode",
		     t->name, (unsigned long long)seq);
out:
	free(val);
	sbuf_release(&k);
	return rc;
}

/* ---- crash hook --------------------------------------------------------- */

void journal_hook_init(struct journal_hook *h)
{
	const char *e = getenv("PATHFS_CRASH_AFTER_BATCHES");
	char *end;
	long v;

	h->limit = h->fail = -1;
	h->done = 0;
	if (e && *e) {
		v = strtol(e, &end, 10);
		if (*end == '\0' && v >= 0)
			h->limit = v;
	}
	e = getenv("PATHFS_ENOSPC_AT_BATCH");
	if (e && *e) {
		v = strtol(e, &end, 10);
		if (*end == '\0' && v >= 0)
			h->fail = v;
	}
}

void journal_hook_batch(struct journal_hook *h)
{
	if (!h)
		return;
	if (h->limit >= 0 && h->done == h->limit) {
		plog(LOG_WARNING, "PATHFS_CRASH_AFTER_BATCHES=%ld: crashing",
		     h->limit);
		kill(getpid(), SIGKILL);
	}
	h->done++;
}

static long commit_limit = -2; /* -2: not read yet; -1: off */
static long commits_done;      /* atomic */
static pthread_once_t commit_once = PTHREAD_ONCE_INIT;

static void commit_hook_read(void)
{
	const char *e = getenv("PATHFS_CRASH_AFTER_COMMITS");
	char *end;
	long v;

	commit_limit = -1;
	if (!e || !*e)
		return;
	v = strtol(e, &end, 10);
	if (*end == '\0' && v > 0)
		commit_limit = v;
}

void journal_hook_commit(void)
{
	pthread_once(&commit_once, commit_hook_read);
	if (commit_limit < 0)
		return;
	if (__atomic_add_fetch(&commits_done, 1, __ATOMIC_SEQ_CST) ==
	    commit_limit) {
		plog(LOG_WARNING, "PATHFS_CRASH_AFTER_COMMITS=%ld: crashing",
		     commit_limit);
		kill(getpid(), SIGKILL);
	}
}

/* ---- records being run in this process ---------------------------------- */

/*
 * A record is run by one thread at a time: tree_journal_replay() (pathfsctl
 * recover on a mounted store) skips the records a rename of this process is
 * still running, or it would apply their final batch twice. The records
 * being run are listed in the drive's struct tree (t->running, run_lock).
 */

/* Marks @seq of @t as being run; false if it already is. */
static bool run_claim(struct tree *t, uint64_t seq)
{
	bool ok = true;

	pthread_mutex_lock(&t->run_lock);
	for (size_t i = 0; i < t->nrunning; i++)
		if (t->running[i] == seq)
			ok = false;
	if (ok) {
		if (t->nrunning == t->caprunning) {
			t->caprunning = t->caprunning ? 2 * t->caprunning : 16;
			t->running = realloc(
			    t->running, t->caprunning * sizeof(*t->running));
			if (!t->running)
				abort();
		}
		t->running[t->nrunning++] = seq;
	}
	pthread_mutex_unlock(&t->run_lock);
	return ok;
}

static void run_release(struct tree *t, uint64_t seq)
{
	pthread_mutex_lock(&t->run_lock);
	for (size_t i = 0; i < t->nrunning; i++)
		if (t->running[i] == seq) {
			t->running[i] = t->running[--t->nrunning];
			break;
		}
	pthread_mutex_unlock(&t->run_lock);
}

/* ---- the rewrite -------------------------------------------------------- */

/* Parent folder of a checked non-root path, malloc'd. */
static char *parent_of(const char *path)
{
	size_t n = path_parent_len(path);

	return n ? strndup(path, n) : strdup("/");
}

/* Commits @b (then empties it for reuse) and counts it for the hook. */
static int commit(struct tree *t, struct kv_batch *b, struct journal_hook *h)
{
	int rc;

	if (h && h->fail >= 0 && h->done == h->fail) {
		h->fail = -1; /* the test-only failure hook: not sent */
		kv_batch_clear(b);
		return -ENOSPC;
	}
	rc = tree_commit(t, b);

	kv_batch_clear(b);
	if (rc == 0)
		journal_hook_batch(h);
	return rc;
}

/*
 * Copies every key of [lo, hi) after the record's cursor to the same suffix
 * after @to, in chunks, each chunk committed with the record's new cursor.
 */
static int copy_range(struct tree *t, struct journal_rec *rec,
		      const struct sbuf *lo, const struct sbuf *hi,
		      const struct sbuf *to, struct journal_hook *h)
{
	size_t max_n =
	    t->store->opt.rename_batch ? t->store->opt.rename_batch : 1024;
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
		if (n >= max_n || bytes >= max_b) {
			sbuf_reset(&rec->cursor);
			sbuf_add(&rec->cursor, key + lo->len, klen - lo->len);
			journal_rec_put(t, b, rec);
			rc = commit(t, b, h);
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
	rc = commit(t, b, h);
out:
	kv_iter_free(it);
	kv_batch_free(b);
	sbuf_release(&k);
	return rc;
}

int tree_drop_slices(struct tree *t, struct kv_batch *b, const char *lo,
		     size_t lolen, const char *hi, size_t hilen,
		     struct journal_hook *h, bool *sliced)
{
	size_t max = kv_range_keys(t->store->kv);
	struct sbuf end = {0};
	int rc = 0;

	if (max == SIZE_MAX)
		return 0;
	for (;;) {
		struct kv_iter *it = NULL;
		size_t n = 0;

		rc = kv_iter_open_keys(&it, t->store->kv, lo, lolen, hi, hilen);
		if (rc)
			break;
		for (; kv_iter_valid(it) && n < max; kv_iter_next(it))
			n++;
		sbuf_reset(&end);
		if (kv_iter_valid(it)) { /* the first key of the next slice */
			size_t klen;
			const char *key = kv_iter_key(it, &klen);

			sbuf_add(&end, key, klen);
		}
		rc = kv_iter_status(it);
		kv_iter_free(it);
		if (rc || !end.len)
			break; /* at most max keys left: the caller's batch */
		if (sliced)
			*sliced = true;
		kv_batch_delete_range(b, lo, lolen, end.buf, end.len);
		rc = commit(t, b, h);
		if (rc)
			break;
	}
	sbuf_release(&end);
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
		       struct journal_hook *h)
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
		      uint32_t phase, struct journal_hook *h)
{
	struct kv_batch *b = kv_batch_new(t->store->kv);
	int rc;

	rc = tree_batch_drop_range(t, b, lo->buf, lo->len, hi->buf, hi->len);
	if (rc)
		goto out;
	rec->phase = phase;
	sbuf_reset(&rec->cursor);
	journal_rec_put(t, b, rec);
	rc = commit(t, b, h);
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
			 struct journal_hook *h)
{
	const char *src = rec->src.buf, *dst = rec->dst.buf;
	char *ps = parent_of(src), *pd = parent_of(dst);
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
	rc = commit(t, b, h);
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
			   struct journal_hook *h)
{
	const char *pa = rec->src.buf, *pb = rec->dst.buf;
	char *qa = parent_of(pa), *qb = parent_of(pb);
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
	rc = commit(t, b, h);
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
static int journal_run(struct tree *t, struct journal_rec *rec,
		       struct journal_hook *h, bool ns_held)
{
	struct sbuf alo = {0}, ahi = {0}, blo = {0}, bhi = {0};
	struct sbuf tlo = {0}, thi = {0};
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
		rc = finish_rename(t, rec, h);
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
	rc = finish_exchange(t, rec, h);
	goto done;
relock:
	pthread_mutex_lock(&t->ns_lock);
done:
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
static int rollback(struct tree *t, struct journal_rec *rec,
		    struct journal_hook *h)
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
		rc = commit(t, b, h);
	kv_batch_free(b);
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&k);
	return rc;
}

/* Whether rename record @rec is being undone: it has a go-ahead key
 * (JOURNAL_F_UNDO) and that is gone. Errors: as kv_get. */
static int undoing(struct tree *t, const struct journal_rec *rec)
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

int journal_rename_dir(struct tree *t, const char *src, const char *dst,
		       unsigned flags, const struct whiteout *wo,
		       uint64_t *orphan)
{
	struct journal_rec rec = {0};
	struct journal_hook h;
	struct kv_batch *b = kv_batch_new(t->store->kv);
	struct node dn = {0};
	char *pd = NULL;
	uint64_t ino_pd = 0, ino_dn = 0;
	bool claimed = false;
	int rc;

	journal_hook_init(&h);
	if (orphan)
		*orphan = 0;
	rc = tree_alloc_ino(t, &rec.seq);
	if (rc)
		goto out;
	run_claim(t, rec.seq); /* new: cannot be taken */
	claimed = true;
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

			pd = parent_of(dst);
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
	journal_rec_put(t, b, &rec);
	rc = commit(t, b, &h);
	if (rc && orphan)
		*orphan = 0;
unlock:
	if (ino_pd || ino_dn)
		tree_unlock_inodes(t, ino_pd, ino_dn, 0, 0);
	if (rc)
		goto out;
	rc = journal_run(t, &rec, &h, true);
	if (rc && (rec.flags & JOURNAL_F_UNDO) && !rec.dropping) {
		int rb = rollback(t, &rec, &h);

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
		run_release(t, rec.seq);
	kv_batch_free(b);
	node_release(&dn);
	journal_rec_release(&rec);
	free(pd);
	return rc;
}

/* ---- listing and replay ------------------------------------------------- */

static const char *op_name(uint32_t op)
{
	switch (op) {
	case JOP_RENAME:
		return "rename";
	case JOP_EXCHANGE:
		return "exchange";
	case JOP_CLONE:
		return "clone";
	}
	return "?";
}

/* @s with bytes outside printable ASCII as \xNN, malloc'd. */
static char *printable(const struct sbuf *s)
{
	struct sbuf o = {0};

	sbuf_nul(&o);
	for (size_t i = 0; i < s->len; i++) {
		unsigned char c = (unsigned char)s->buf[i];
		char hex[8];

		if (c < 0x20 || c > 0x7e || c == '\\') {
			snprintf(hex, sizeof(hex), "\\x%02x", c);
			sbuf_adds(&o, hex);
		} else {
			sbuf_addc(&o, (char)c);
		}
	}
	return o.buf;
}

/* Collects the sequence numbers of every record of @t (malloc'd array). */
static int journal_seqs(struct tree *t, uint64_t **seqs, size_t *count)
{
	struct sbuf lo = {0}, hi = {0};
	struct kv_iter *it = NULL;
	size_t plen, n = 0, cap = 0;
	uint64_t *v = NULL;
	int rc;

	key_kind_range(&lo, &hi, t->name, KEY_JOURNAL);
	plen = lo.len - strlen("JOURNAL#"); /* the drive prefix */
	rc = kv_iter_open(&it, t->store->kv, lo.buf, lo.len, hi.buf, hi.len);
	if (rc)
		goto out;
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen;
		const char *key = kv_iter_key(it, &klen);
		uint64_t seq;

		if (key_ino_decode(key, klen, plen, KEY_JOURNAL, &seq)) {
			plog(LOG_ERR, "drive %s: malformed journal key",
			     t->name);
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				abort();
		}
		v[n++] = seq;
	}
	rc = kv_iter_status(it);
out:
	kv_iter_free(it);
	sbuf_release(&lo);
	sbuf_release(&hi);
	if (rc) {
		free(v);
		v = NULL;
		n = 0;
	}
	*seqs = v;
	*count = n;
	return rc;
}

int tree_journal_list(struct tree *t, struct tree_journal_entry **out,
		      size_t *count)
{
	struct tree_journal_entry *e = NULL;
	uint64_t *seqs = NULL;
	size_t n = 0, m = 0;
	int rc;

	*out = NULL;
	*count = 0;
	rc = journal_seqs(t, &seqs, &n);
	if (rc)
		goto out;
	e = calloc(n ? n : 1, sizeof(*e));
	if (!e) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct journal_rec rec = {0};

		e[m].seq = seqs[i];
		if (journal_rec_get(t, seqs[i], &rec) == 0) {
			struct sbuf src = {0};

			if (rec.op == JOP_CLONE &&
			    strcmp(rec.sdrive.buf, t->name) != 0) {
				sbuf_adds(&src, rec.sdrive.buf);
				sbuf_addc(&src, ':');
			}
			sbuf_add(&src, rec.src.buf, rec.src.len);
			e[m].op = strdup(op_name(rec.op));
			e[m].src = printable(&src);
			e[m].dst = printable(&rec.dst);
			e[m].cursor = printable(&rec.cursor);
			sbuf_release(&src);
		} else {
			e[m].op = strdup("undecodable");
			e[m].src = strdup("");
			e[m].dst = strdup("");
			e[m].cursor = strdup("");
		}
		journal_rec_release(&rec);
		m++;
	}
	*out = e;
	*count = m;
	e = NULL;
out:
	free(e);
	free(seqs);
	return rc;
}

void tree_journal_list_free(struct tree_journal_entry *e, size_t count)
{
	if (!e)
		return;
	for (size_t i = 0; i < count; i++) {
		free(e[i].op);
		free(e[i].src);
		free(e[i].dst);
		free(e[i].cursor);
	}
	free(e);
}

int tree_journal_replay(struct tree *t, size_t *replayed)
{
	uint64_t *seqs = NULL;
	size_t n = 0, done = 0;
	int rc;

	if (replayed)
		*replayed = 0;
	if (kv_read_only(t->store->kv))
		return 0;
	rc = journal_seqs(t, &seqs, &n);
	if (rc)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct journal_rec rec = {0};
		char *cur;

		/* a record may be gone: finished by a concurrent call */
		rc = journal_rec_get(t, seqs[i], &rec);
		if (rc) {
			journal_rec_release(&rec);
			/* gone (finished meanwhile) or undecodable
			 * (logged; fsck reports it): skip */
			continue;
		}
		if (!run_claim(t, seqs[i])) {
			plog(LOG_NOTICE,
			     "drive %s: %s %s -> %s is running; not replayed",
			     t->name, op_name(rec.op), rec.src.buf,
			     rec.dst.buf);
			journal_rec_release(&rec);
			continue;
		}
		/* read again now that it is ours: it may have finished */
		journal_rec_release(&rec);
		memset(&rec, 0, sizeof(rec));
		if (journal_rec_get(t, seqs[i], &rec)) {
			run_release(t, seqs[i]);
			journal_rec_release(&rec);
			continue;
		}
		cur = printable(&rec.cursor);
		if (rec.op == JOP_CLONE && rec.phase == CLONE_PHASE_DROP) {
			/* everything copied: only its map is left to drop */
			struct kv_batch *b = kv_batch_new(t->store->kv);

			plog(LOG_NOTICE,
			     "drive %s: finishing clone %s:%s -> %s (copied; "
			     "dropping its map)",
			     t->name, rec.sdrive.buf, rec.src.buf, rec.dst.buf);
			rc = clone_finish(t, &rec, b, NULL);
			kv_batch_free(b);
			if (rc)
				plog(LOG_ERR,
				     "drive %s: finishing clone %s -> %s: %s; "
				     "left for the next open",
				     t->name, rec.src.buf, rec.dst.buf,
				     strerror(-rc));
			else
				done++;
		} else if (rec.op == JOP_CLONE) {
			plog(LOG_NOTICE,
			     "drive %s: clone %s:%s -> %s is paused at '%s'; "
			     "resume it with its token",
			     t->name, rec.sdrive.buf, rec.src.buf, rec.dst.buf,
			     cur);
		} else {
			rc = undoing(t, &rec);
			if (rc == 1) {
				plog(LOG_NOTICE,
				     "drive %s: undoing rename %s -> %s (its "
				     "copies go)",
				     t->name, rec.src.buf, rec.dst.buf);
				pthread_mutex_lock(&t->ns_lock);
				rc = rollback(t, &rec, NULL);
				pthread_mutex_unlock(&t->ns_lock);
			} else if (rc == 0) {
				plog(LOG_NOTICE,
				     "drive %s: replaying %s %s -> %s from "
				     "phase %u cursor '%s'",
				     t->name, op_name(rec.op), rec.src.buf,
				     rec.dst.buf, rec.phase, cur);
				rc = journal_run(t, &rec, NULL, false);
			}
			if (rc) {
				/* logged and left for the next open (and
				 * fsck): failing here would keep the store
				 * from opening, e.g. on a full disk */
				plog(LOG_ERR,
				     "drive %s: replay of %s %s -> %s: %s; "
				     "left for the next open",
				     t->name, op_name(rec.op), rec.src.buf,
				     rec.dst.buf, strerror(-rc));
			} else {
				done++;
			}
		}
		free(cur);
		run_release(t, seqs[i]);
		journal_rec_release(&rec);
	}
	rc = 0;
out:
	free(seqs);
	if (replayed)
		*replayed = done;
	return rc;
}
