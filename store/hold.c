/*
 * hold.c - the inodes shared writers have open, so that a file one of them
 * has open outlives its last name removed by another (POSIX: an unlinked
 * file stays readable and writable through the descriptors open on it).
 *
 * A writer knows its own opens (the daemon's inode table, TREE_KEEP_ORPHAN),
 * not another machine's. So each shared writer records its opens in the
 * drive: HOLD#<ino> lists the writers (kv_writer_id, 16 hex digits each)
 * that have @ino open, taken at the inode's first open there and dropped at
 * its last close (tree_hold; hold_drop, which tree_unhold calls), as an
 * NFSv4 server keeps a client's open state. The removal of a last name
 * (tree_batch_remove) and the reclaim of an orphan (tree_reclaim) read the
 * list, tracked, so a hold and a removal that race are ordered by their
 * conditioned commits: the open then either sees no inode (-ENOENT, the
 * removal came first) or is seen (the orphan stays). A reclaim counts
 * every holder, this writer too (its sweep of stopped writers' orphans
 * meets those it holds itself); a removal counts the others (its own
 * opens keep the orphan for it: TREE_KEEP_ORPHAN).
 *
 * An orphan kept only for other writers has the mark HOLD_ORPHAN_MARK ("*"):
 * the last holder's close frees it. One its maker keeps for its own use
 * names the maker, which at its reclaim hands it over ("*") if others still
 * hold it. A writer that stops with holds (killed, cut off) leaves them;
 * the others' periodic reclaim (tree_reclaim_dead) drops the holds of
 * writers that no longer hold the store, then frees the orphans nobody
 * holds. A sole writer's open drops every hold (no shared writer is left)
 * and frees every orphan.
 *
 * Costs: a shared writer's first open of an inode is a commit (etcd: a
 * read and a txn), and so is its last close's drop, which the daemon makes
 * off the RELEASE's path, a second later, many to a commit (hold_drop of
 * many); a file made for an open (tree_mkfile_held) is held by the commit
 * that makes it (hold_batch_new), and one freed by this writer's unlink or
 * reclaim is dropped in the batch that frees it (hold_batch_drop,
 * hold_batch_unhold), at no cost of their own. A sole writer pays nothing,
 * not even a read, and neither does a shared writer alone on its drive
 * (LONE, lone.c): it keeps its opens in memory (t->lone_inos) and holds
 * them when another writer joins (tree_share, here; the joiner waits).
 * Limits: only opens hold: a file known to another
 * writer's kernel but not open there (an O_PATH descriptor, a cached
 * entry) is freed by the remover, and that writer's later requests on it
 * are ESTALE. -o ro
 * followers of a sole writer hold nothing (they write nothing): a file open
 * on a follower whose name the writer removes is freed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "batch_i.h"
#include "hold_i.h"
#include "keys_i.h"
#include "lone_i.h"
#include "log.h"
#include "tree_i.h"

#define ID_HEX KEY_ID_HEX

/* Whether the list @v (@len bytes) names writer @hex; its offset in *at. */
static bool names(const char *v, size_t len, const char hex[ID_HEX], size_t *at)
{
	for (size_t i = 0; i + ID_HEX <= len; i += ID_HEX)
		if (!memcmp(v + i, hex, ID_HEX)) {
			if (at)
				*at = i;
			return true;
		}
	return false;
}

/* This writer alone on the drive (lone.c): no other live writer holds
 * anything (a joiner waits for tree_share() first). */
static bool alone(struct tree *t)
{
	bool lone;

	pthread_mutex_lock(&t->lone_lock);
	lone = t->lone;
	pthread_mutex_unlock(&t->lone_lock);
	return lone;
}

/* If this writer is alone: keeps @ino, open here, in memory (once) and
 * returns true; else false (its hold is for HOLD#). */
static bool keep_alone(struct tree *t, uint64_t ino)
{
	bool lone;

	pthread_mutex_lock(&t->lone_lock);
	lone = t->lone;
	for (size_t i = 0; lone && i < t->lone_n; i++)
		if (t->lone_inos[i] == ino)
			goto out; /* kept already */
	if (lone && t->lone_n == t->lone_cap) {
		size_t cap = t->lone_cap ? 2 * t->lone_cap : 64;
		uint64_t *v = realloc(t->lone_inos, cap * sizeof(*v));

		if (!v)
			abort(); /* as adding to a batch does */
		t->lone_inos = v;
		t->lone_cap = cap;
	}
	if (lone)
		t->lone_inos[t->lone_n++] = ino;
out:
	pthread_mutex_unlock(&t->lone_lock);
	return lone;
}

/* Whether @ino was kept in memory (keep_alone); it is no more. */
static bool forget_kept(struct tree *t, uint64_t ino)
{
	bool found = false;

	pthread_mutex_lock(&t->lone_lock);
	for (size_t i = 0; i < t->lone_n && !found; i++) {
		if (t->lone_inos[i] != ino)
			continue;
		t->lone_inos[i] = t->lone_inos[--t->lone_n];
		found = true;
	}
	pthread_mutex_unlock(&t->lone_lock);
	return found;
}

/* Reads HOLD#@ino into *v (NULL and 0 when there is none). */
static int read_holds(struct tree *t, uint64_t ino, char **v, size_t *len)
{
	struct sbuf k = {0};
	int rc;

	key_hold(&k, t->name, ino);
	rc = kv_get(t->store->kv, k.buf, k.len, v, len);
	sbuf_release(&k);
	if (rc == -ENOENT) {
		*v = NULL;
		*len = 0;
		rc = 0;
	}
	if (rc == 0 && *len % ID_HEX) {
		plog(LOG_ERR, "drive %s: inode %llu: malformed hold list",
		     t->name, (unsigned long long)ino);
		*len -= *len % ID_HEX; /* whole ids only */
	}
	return rc;
}

/* Adds to @b HOLD#@ino set to the @len bytes @v (none: deleted). */
static void put_holds(struct tree *t, struct kv_batch *b, uint64_t ino,
		      const char *v, size_t len)
{
	struct sbuf k = {0};

	key_hold(&k, t->name, ino);
	if (len)
		kv_batch_put(b, k.buf, k.len, v, len);
	else
		kv_batch_delete(b, k.buf, k.len);
	sbuf_release(&k);
}

/* Whether a writer other than this one (@self false), or any (@self
 * true), holds @ino open: *held; and this one (*mine, may be NULL). */
static int held_by(struct tree *t, uint64_t ino, bool self, bool *held,
		   bool *mine)
{
	char hex[ID_HEX], *v = NULL;
	size_t len, at = 0;
	bool own;
	int rc;

	*held = false;
	if (mine)
		*mine = false;
	/* alone, a removal has no other writer's opens to keep; its own
	 * are the caller's (TREE_KEEP_ORPHAN), and a hold of its own left
	 * from before goes with its queued drop. A reclaim reads on: it
	 * must not free a file this writer holds open */
	if (!tree_shared(t) || (!self && alone(t)))
		return 0;
	rc = read_holds(t, ino, &v, &len);
	if (rc)
		return rc;
	key_id_hex(hex, kv_writer_id(t->store->kv));
	own = names(v, len, hex, &at);
	/* this writer is named once at most */
	*held = len > (!self && own ? ID_HEX : 0);
	if (mine)
		*mine = own;
	free(v);
	return 0;
}

int hold_by_others(struct tree *t, uint64_t ino, bool *others, bool *mine)
{
	return held_by(t, ino, false, others, mine);
}

int hold_by_any(struct tree *t, uint64_t ino, bool *held)
{
	return held_by(t, ino, true, held, NULL);
}

void hold_batch_drop(struct tree *t, struct kv_batch *b, uint64_t ino)
{
	put_holds(t, b, ino, NULL, 0);
}

/* Whether inode @ino still exists: a name (its PARENT# record, for a node
 * of one name) or an INODE# record (hard-linked, or an orphan). Tracked
 * reads, so its removal after them fails the caller's commit. */
static int inode_exists(struct tree *t, uint64_t ino)
{
	struct sbuf k = {0};
	char *v = NULL;
	size_t len;
	int rc;

	key_parent(&k, t->name, ino);
	rc = kv_get(t->store->kv, k.buf, k.len, &v, &len);
	if (rc == -ENOENT) {
		sbuf_reset(&k);
		key_inode(&k, t->name, ino);
		rc = kv_get(t->store->kv, k.buf, k.len, &v, &len);
	}
	free(v);
	sbuf_release(&k);
	return rc;
}

static int hold_once(struct tree *t, uint64_t ino)
{
	struct kv_batch *b = NULL;
	struct sbuf nv = {0};
	char hex[ID_HEX], *v = NULL;
	size_t len;
	int rc;

	rc = read_holds(t, ino, &v, &len);
	if (rc == 0)
		rc = inode_exists(t, ino);
	if (rc)
		goto out;
	key_id_hex(hex, kv_writer_id(t->store->kv));
	if (names(v, len, hex, NULL))
		goto out; /* already (an unhold of ours that failed) */
	if (len)	  /* (none: v is NULL, no memcpy from it) */
		sbuf_add(&nv, v, len);
	sbuf_add(&nv, hex, ID_HEX);
	b = kv_batch_new(t->store->kv);
	put_holds(t, b, ino, nv.buf, nv.len);
	rc = tree_commit(t, b);
out:
	kv_batch_free(b);
	sbuf_release(&nv);
	free(v);
	return rc;
}

void hold_batch_new(struct tree *t, struct kv_batch *b, uint64_t ino)
{
	char hex[ID_HEX];

	if (!tree_shared(t) || keep_alone(t, ino))
		return;
	key_id_hex(hex, kv_writer_id(t->store->kv));
	put_holds(t, b, ino, hex, ID_HEX);
}

/* tree_hold() of a writer not alone, or publishing what it kept alone. */
static int hold_publish(struct tree *t, uint64_t ino)
{
	return TREE_TRACKED(t, hold_once(t, ino));
}

int tree_hold(struct tree *t, uint64_t ino)
{
	if (!tree_shared(t) || keep_alone(t, ino))
		return 0;
	return hold_publish(t, ino);
}

/* Whether orphan @ino's mark is HOLD_ORPHAN_MARK (tracked read). */
static int marked_held(struct tree *t, uint64_t ino, bool *held)
{
	struct sbuf k = {0};
	char *v = NULL;
	size_t len;
	int rc;

	key_orphan(&k, t->name, ino);
	rc = kv_get(t->store->kv, k.buf, k.len, &v, &len);
	*held = rc == 0 && len == strlen(HOLD_ORPHAN_MARK) &&
		!memcmp(v, HOLD_ORPHAN_MARK, len);
	free(v);
	sbuf_release(&k);
	return rc == -ENOENT ? 0 : rc;
}

/* Adds to @b this writer's drop from HOLD#@ino, if it holds it; *last:
 * nobody holds it then and it is an orphan kept for its holders only, for
 * the caller to free. */
static int unhold_add(struct tree *t, struct kv_batch *b, uint64_t ino,
		      bool *last)
{
	char hex[ID_HEX], *v = NULL;
	size_t len, at;
	int rc;

	*last = false;
	rc = read_holds(t, ino, &v, &len);
	if (rc)
		goto out;
	key_id_hex(hex, kv_writer_id(t->store->kv));
	if (!names(v, len, hex, &at))
		goto out;
	memmove(v + at, v + at + ID_HEX, len - at - ID_HEX);
	len -= ID_HEX;
	if (len == 0)
		rc = marked_held(t, ino, last);
	if (rc == 0)
		put_holds(t, b, ino, v, len);
out:
	free(v);
	return rc;
}

int hold_batch_unhold(struct tree *t, struct kv_batch *b, uint64_t ino)
{
	bool last;

	return unhold_add(t, b, ino, &last);
}

/* unhold_add() of each of the @n @inos, one commit for all. */
static int unhold_once(struct tree *t, const uint64_t *inos, size_t n,
		       bool *last)
{
	struct kv_batch *b = kv_batch_new(t->store->kv);
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		last[i] = false;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = unhold_add(t, b, inos[i], &last[i]);
	if (rc == 0 && kv_batch_count(b))
		rc = tree_commit(t, b);
	if (rc)
		for (size_t i = 0; i < n; i++)
			last[i] = false;
	kv_batch_free(b);
	return rc;
}

int hold_drop(struct tree *t, const uint64_t *inos, size_t n, bool *last)
{
	uint64_t *held;
	bool *held_last;
	size_t m = 0;
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		last[i] = false;
	if (!tree_shared(t))
		return 0;
	/* those kept in memory while this writer was alone: no key to drop */
	held = malloc(n * sizeof(*held) + n * sizeof(*held_last) + 1);
	if (!held)
		return -ENOMEM;
	held_last = (bool *)(held + n);
	for (size_t i = 0; i < n; i++)
		if (!forget_kept(t, inos[i]))
			held[m++] = inos[i];
	if (m)
		rc = TREE_TRACKED(t, unhold_once(t, held, m, held_last));
	for (size_t i = 0, j = 0; i < n && j < m && !rc; i++)
		if (inos[i] == held[j])
			last[i] = held_last[j++];
	free(held);
	return rc;
}

/* Drops the writers not in @live from HOLD#@ino. */
static int prune_once(struct tree *t, uint64_t ino, const uint64_t *live,
		      size_t nlive)
{
	struct kv_batch *b = NULL;
	char *v = NULL;
	size_t len, kept = 0;
	int rc;

	rc = read_holds(t, ino, &v, &len);
	if (rc)
		goto out;
	for (size_t i = 0; i < len; i += ID_HEX) {
		bool alive = false;

		for (size_t j = 0; j < nlive && !alive; j++) {
			char hex[ID_HEX];

			key_id_hex(hex, live[j]);
			alive = !memcmp(v + i, hex, ID_HEX);
		}
		if (alive) {
			memmove(v + kept, v + i, ID_HEX);
			kept += ID_HEX;
		}
	}
	if (kept == len)
		goto out;
	b = kv_batch_new(t->store->kv);
	put_holds(t, b, ino, v, kept);
	rc = tree_commit(t, b);
out:
	kv_batch_free(b);
	free(v);
	return rc;
}

int hold_prune(struct tree *t, const uint64_t *live, size_t nlive)
{
	struct sbuf lo = {0}, hi = {0}, pre = {0};
	struct kv_iter *it = NULL;
	int rc;

	key_drive_prefix(&pre, t->name);
	key_kind_range(&lo, &hi, t->name, KEY_HOLD);
	rc = kv_iter_open(&it, t->store->kv, lo.buf, lo.len, hi.buf, hi.len);
	for (; rc == 0 && kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen;
		const char *key = kv_iter_key(it, &klen);
		uint64_t ino;

		if (key_ino_decode(key, klen, pre.len, KEY_HOLD, &ino)) {
			plog(LOG_ERR, "drive %s: malformed hold key %.*s",
			     t->name, (int)klen, key);
			continue;
		}
		rc = TREE_TRACKED(t, prune_once(t, ino, live, nlive));
	}
	if (rc == 0)
		rc = kv_iter_status(it);
	kv_iter_free(it);
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&pre);
	return rc;
}

int tree_share(struct tree *t)
{
	bool lone, asked;
	int rc = 0;

	pthread_mutex_lock(&t->lone_lock);
	lone = t->lone;
	asked = t->lone_asked;
	pthread_mutex_unlock(&t->lone_lock);
	/* the joiner's changes come once it published: heard from here on */
	if (lone && asked)
		rc = lone_widen(t);
	else if (lone)
		lone_narrow(t); /* nobody else changes the drive meanwhile */
	pthread_mutex_lock(&t->lone_lock);
	if (!rc && t->lone && t->lone_asked) {
		for (size_t i = 0; i < t->lone_n && !rc; i++) {
			rc = hold_publish(t, t->lone_inos[i]);
			if (rc == -ENOENT)
				rc = 0; /* removed since: nothing to keep */
		}
		if (!rc)
			rc = lone_unlone(t);
		if (!rc) {
			plog(LOG_NOTICE,
			     "drive %s: a writer joins: this one published the "
			     "holds of its %zu open files",
			     t->name, t->lone_n);
			t->lone = false;
			t->lone_n = 0;
		}
	}
	pthread_mutex_unlock(&t->lone_lock);
	if (rc)
		plog(LOG_WARNING,
		     "drive %s: publishing this writer's open files for a "
		     "joining writer: %s (tried again)",
		     t->name, strerror(-rc));
	return rc;
}
