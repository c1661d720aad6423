/*
 * journal_rec.c - the records of journaled operations, JOURNAL#<seq> (their
 * layout: journal_i.h), and what every user of them shares: which records
 * this process is running, the commit of one of their batches (counted for
 * the crash hooks, crash_hook.c), and range drops in slices.
 *
 * Users: journal.c (a folder's rename or exchange), journal_replay.c
 * (listing and replay at open), clone.c (cp -r's paused records) and
 * fsck.
 *
 * Limits: a record is read and written whole; nothing here locks the
 * namespace (the callers hold what they need).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec_i.h"
#include "crash_hook_i.h"
#include "drive_i.h"
#include "journal_i.h"
#include "log.h"

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

int journal_seqs(struct tree *t, uint64_t **seqs, size_t *count)
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

/* ---- records being run in this process ---------------------------------- */

/*
 * A record is run by one thread at a time: tree_journal_replay() (pathfsctl
 * recover on a mounted store) skips the records a rename of this process is
 * still running, or it would apply their final batch twice. The records
 * being run are listed in the drive's struct tree (t->running, run_lock).
 */

/* Marks @seq of @t as being run; false if it already is. */
bool journal_claim(struct tree *t, uint64_t seq)
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

void journal_unclaim(struct tree *t, uint64_t seq)
{
	pthread_mutex_lock(&t->run_lock);
	for (size_t i = 0; i < t->nrunning; i++)
		if (t->running[i] == seq) {
			t->running[i] = t->running[--t->nrunning];
			break;
		}
	pthread_mutex_unlock(&t->run_lock);
}

/* ---- commits ------------------------------------------------------------ */

int journal_commit(struct tree *t, struct kv_batch *b, struct crash_hook *h)
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
		crash_hook_batch(h);
	return rc;
}

int tree_drop_slices(struct tree *t, struct kv_batch *b, const char *lo,
		     size_t lolen, const char *hi, size_t hilen,
		     struct crash_hook *h, bool *sliced)
{
	size_t leave = kv_range_keys(t->store->kv);
	struct sbuf end = {0};
	int rc = 0;

	if (leave == SIZE_MAX)
		return 0;
	for (;;) {
		/* the keys this slice may drop, its batch still fitting */
		size_t max = kv_batch_range_room(b), n = 0;
		struct kv_iter *it = NULL;

		if (!max) {
			rc = -E2BIG; /* @b came full: the caller's bug */
			break;
		}
		rc = kv_iter_open_keys(&it, t->store->kv, lo, lolen, hi, hilen);
		if (rc)
			break;
		sbuf_reset(&end);
		for (; kv_iter_valid(it) && (n <= max || n <= leave);
		     kv_iter_next(it)) {
			if (n == max) { /* the first key of the next slice */
				size_t klen;
				const char *key = kv_iter_key(it, &klen);

				sbuf_add(&end, key, klen);
			}
			n++;
		}
		rc = kv_iter_status(it);
		kv_iter_free(it);
		if (rc || n <= leave)
			break; /* at most leave keys left: the caller's batch */
		if (sliced)
			*sliced = true;
		if (end.len) /* more than a slice left */
			kv_batch_delete_range(b, lo, lolen, end.buf, end.len);
		else
			kv_batch_delete_range(b, lo, lolen, hi, hilen);
		rc = journal_commit(t, b, h);
		if (rc || !end.len)
			break;
	}
	sbuf_release(&end);
	return rc;
}
