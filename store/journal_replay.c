/*
 * journal_replay.c - what is left of journaled operations when a store
 * opens: tree_journal_replay() finishes them, tree_journal_list() lists
 * them (pathfsctl recover, fsck).
 *
 * store_open() calls tree_journal_replay() for every drive before anything
 * is served; it continues each rename/exchange record from its phase and
 * cursor (journal.c's journal_run()), or goes on undoing one whose undo had
 * begun (journal_rollback()). Every batch is idempotent given the record it
 * starts from, so replaying twice, or crashing during a replay, is
 * harmless. Clone records (JOP_CLONE, clone.c) are budgeted operations
 * paused on purpose: replay leaves them for their resume token and only
 * logs them, but for one that copied everything and was dropping its map
 * (CLONE_PHASE_DROP), which replay finishes (clone_finish()).
 *
 * Limits: a record that a rename of this process is still running is left
 * to it (journal_claim()); a record whose replay fails is logged and kept
 * (fsck lists it), and replay still returns 0, so that a full disk does not
 * keep the store from opening.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "branch_lock_i.h"
#include "drive_i.h"
#include "journal_i.h"
#include "log.h"

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
			e[m].src = tree_escape(src.buf, src.len, 0);
			e[m].dst = tree_escape(rec.dst.buf, rec.dst.len, 0);
			e[m].cursor =
			    tree_escape(rec.cursor.buf, rec.cursor.len, 0);
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

/* Finishes rename or exchange record @rec (claimed): goes on with it, or
 * with its undo. A failure is logged and the record left for the next open
 * (and fsck): failing the open would keep a full disk's store closed. */
static int replay_move(struct tree *t, struct journal_rec *rec)
{
	char *cur = tree_escape(rec->cursor.buf, rec->cursor.len, 0);
	int rc = journal_undoing(t, rec);

	if (rc == 1) {
		plog(LOG_NOTICE,
		     "drive %s: undoing rename %s -> %s (its copies go)",
		     t->name, rec->src.buf, rec->dst.buf);
		pthread_mutex_lock(&t->ns_lock);
		rc = journal_rollback(t, rec, NULL);
		pthread_mutex_unlock(&t->ns_lock);
	} else if (rc == 0) {
		plog(LOG_NOTICE,
		     "drive %s: replaying %s %s -> %s from phase %u cursor "
		     "'%s'",
		     t->name, op_name(rec->op), rec->src.buf, rec->dst.buf,
		     rec->phase, cur);
		rc = journal_run(t, rec, NULL, false);
	}
	if (rc)
		plog(LOG_ERR,
		     "drive %s: replay of %s %s -> %s: %s; left for the next "
		     "open",
		     t->name, op_name(rec->op), rec->src.buf, rec->dst.buf,
		     strerror(-rc));
	free(cur);
	return rc;
}

/* Whether @id is among the @n writers @live. */
static bool is_live(uint64_t id, const uint64_t *live, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (live[i] == id)
			return true;
	return false;
}

/* Finishes the rename record @seq whose branch lock this writer holds,
 * unless a thread of this process runs it; one gone already only leaves
 * its lock. 1 if it finished one, 0 if not. */
static int take_over(struct tree *t, uint64_t seq)
{
	struct journal_rec rec = {0};
	int rc;

	if (!journal_claim(t, seq))
		return 0; /* running here */
	rc = journal_rec_get(t, seq, &rec);
	if (rc == -ENOENT)
		rc = lock_release(t, seq); /* finished; its lock not yet */
	else if (rc == 0 && rec.op != JOP_CLONE)
		rc = replay_move(t, &rec) ? 0 : 1;
	journal_unclaim(t, seq);
	journal_rec_release(&rec);
	return rc;
}

int tree_journal_takeover(struct tree *t, size_t *count)
{
	struct branch_lock *l = NULL;
	uint64_t *live = NULL, me = kv_writer_id(t->store->kv);
	size_t n = 0, nlive = 0, done = 0;
	int rc;

	if (count)
		*count = 0;
	if (!me)
		return 0; /* a sole writer replays at open */
	rc = lock_list(t, &l, &n);
	/* the writers after the locks were read: a lock's writer that still
	 * holds the store is among them */
	if (rc == 0 && n)
		rc = kv_writers(t->store->kv, &live, &nlive);
	if (rc == 0 && n && !is_live(me, live, nlive))
		rc = -EIO; /* this writer is fenced: leave them */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (l[i].writer != me) {
			if (is_live(l[i].writer, live, nlive))
				continue; /* its writer runs it */
			rc = lock_claim(t, l[i].seq, l[i].writer);
			if (rc <= 0)
				continue; /* another writer took it */
			plog(LOG_NOTICE,
			     "drive %s: taking over %s -> %s from writer "
			     "%016llx, which stopped",
			     t->name, l[i].src, l[i].dst,
			     (unsigned long long)l[i].writer);
		}
		rc = take_over(t, l[i].seq);
		if (rc > 0)
			done++;
		rc = rc < 0 ? rc : 0;
	}
	lock_list_free(l, n);
	free(live);
	if (count)
		*count = done;
	return rc;
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
	if (kv_writer_id(t->store->kv))
		/* a shared writer: the records are their writers' */
		return tree_journal_takeover(t, replayed);
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
		if (!journal_claim(t, seqs[i])) {
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
			journal_unclaim(t, seqs[i]);
			journal_rec_release(&rec);
			continue;
		}
		cur = tree_escape(rec.cursor.buf, rec.cursor.len, 0);
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
		} else if (replay_move(t, &rec) == 0) {
			done++;
		}
		free(cur);
		journal_unclaim(t, seqs[i]);
		journal_rec_release(&rec);
	}
	rc = 0;
out:
	free(seqs);
	if (replayed)
		*replayed = done;
	return rc;
}
