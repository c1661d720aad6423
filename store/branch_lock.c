/*
 * branch_lock.c - the branch locks of shared writers' folder renames.
 *
 * A folder rename rewrites its branch in many batches (journal.c). Among
 * several writers of one drive (store_options.shared) another writer must
 * not change that branch meanwhile: a create, unlink, write or rename in it
 * after the copy passed it would be lost when the final batch drops the
 * source. So a writer's rename holds both branches, @src and @dst, from
 * before its batch 0 to the end, in one key of the drive, LOCKS: a list of
 * (journal record, writer, src, dst). The rename takes its lock in its
 * batch 0, which writes the record and is conditioned on what it read
 * (lock_take_in). If another writer's change failed that, it takes the
 * lock in a commit of its own, conditioned on LOCKS alone, before it reads
 * what it moves again (tree_rename -> journal_hold): then the changes
 * inside the branches, which rewrite the folder's node, cannot keep
 * failing its batch 0. The final batch, which deletes the record, drops
 * it (lock_drop_in); journal_rollback, journal_unhold (a rename that did
 * not journal, a clone) and a sole writer's replay drop it in a commit of
 * its own once the record is gone.
 *
 * Every conditioned change of a shared writer (TREE_TRACKED) reads LOCKS at
 * its first node read by path, tracked, so a lock taken after that fails
 * its commit and it starts again. Each node path it reads is checked: one
 * in a held branch (at or below src or dst) spoils the change: it commits
 * nothing, waits until LOCKS changes (tree_retry -> lock_section_end), and
 * starts again, so it ends in the new place or fails cleanly (ENOENT) there.
 * A folder that is removed, replaced or moved must not hold a held branch
 * below it (lock_check_below): two renames' branches never nest, and a
 * rename's destination folder stays until its final batch.
 *
 * A writer that stops while it holds a lock (killed, cut off: its lease
 * expires) leaves the lock and maybe the record; another writer's takeover
 * (tree_journal_takeover) makes itself the holder in a conditioned commit,
 * so one writer does it, and finishes the record, or drops a lock whose
 * record never came.
 *
 * A sole writer takes no lock (nobody else writes), but drops the locks of
 * the records it replays that shared writers left.
 *
 * Value: version byte 1, then per lock varints seq, writer, then put_bytes
 * src, dst.
 *
 * LOCKS changes only when a folder rename starts or ends, so a shared writer
 * whose watch runs (tree_watch) keeps it as last read (t->seen) and its
 * changes condition their commits on that version without reading it
 * (kv_track_known): the watch drops it when another writer changes LOCKS,
 * this writer's own commits of LOCKS drop it, and so does a change that it
 * failed (a conflict or a lock that kept it out: the retry reads LOCKS).
 * A copy older than LOCKS costs one failed commit, never a change let
 * through: the commit's condition is on the version the check used.
 *
 * Limits: a change waits for a lock at most LOCK_WAIT_S seconds, then fails
 * with -EAGAIN; without a watch, each check costs a shared writer's change
 * one read of LOCKS.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "branch_lock_i.h"
#include "codec_i.h"
#include "keys_i.h"
#include "log.h"

#define LOCKS_VERSION 1
#define LOCK_WAIT_S   120

/* This thread's conditioned change: the locks it read (t NULL: none yet),
 * LOCKS's value as read, and whether a lock kept it out. */
static __thread struct {
	const struct tree *t;
	struct branch_lock *l;
	size_t n;
	char *raw;
	size_t rawlen;
	bool blocked;
} sect;

static __thread uint64_t own;

void lock_list_free(struct branch_lock *l, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(l[i].src);
		free(l[i].dst);
	}
	free(l);
}

static char *dup_bytes(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (!d)
		abort();
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

/* Decodes a LOCKS value. Errors: -EIO. */
static int decode(const char *v, size_t len, struct branch_lock **out,
		  size_t *count)
{
	const char *p = v, *end = v + len;
	struct branch_lock *l = NULL;
	size_t n = 0, cap = 0;

	*out = NULL;
	*count = 0;
	if (len == 0)
		return 0;
	if ((unsigned char)*p++ != LOCKS_VERSION)
		return -EIO;
	while (p < end) {
		struct branch_lock e = {0};
		const char *s, *d;
		size_t sn, dn;

		if (get_varint(&p, end, &e.seq) ||
		    get_varint(&p, end, &e.writer) ||
		    get_bytes(&p, end, &s, &sn) ||
		    get_bytes(&p, end, &d, &dn)) {
			lock_list_free(l, n);
			return -EIO;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 4;
			l = realloc(l, cap * sizeof(*l));
			if (!l)
				abort();
		}
		e.src = dup_bytes(s, sn);
		e.dst = dup_bytes(d, dn);
		l[n++] = e;
	}
	*out = l;
	*count = n;
	return 0;
}

static void encode_one(struct sbuf *v, const struct branch_lock *e)
{
	if (v->len == 0)
		sbuf_addc(v, LOCKS_VERSION);
	put_varint(v, e->seq);
	put_varint(v, e->writer);
	put_bytes(v, e->src, strlen(e->src));
	put_bytes(v, e->dst, strlen(e->dst));
}

/* Reads LOCKS: tracked in a conditioned change, and with *ver if @ver. */
static int read_locks(struct tree *t, char **val, size_t *len, uint64_t *ver)
{
	struct sbuf k = {0};
	int rc;

	key_locks(&k, t->name);
	rc = ver ? kv_get_ver(t->store->kv, k.buf, k.len, val, len, ver)
		 : kv_get(t->store->kv, k.buf, k.len, val, len);
	sbuf_release(&k);
	if (rc == -ENOENT) {
		*val = NULL;
		*len = 0;
		rc = 0;
	}
	return rc;
}

/* decode(), logging a value that does not decode. */
static int decode_logged(struct tree *t, const char *raw, size_t len,
			 struct branch_lock **l, size_t *n)
{
	int rc = decode(raw, len, l, n);

	if (rc == -EIO)
		plog(LOG_ERR, "drive %s: LOCKS does not decode (%zu bytes)",
		     t->name, len);
	return rc;
}

/* Reads LOCKS (*raw, malloc'd, NULL if it is absent; *ver if @ver) and
 * decodes it. Errors: as kv_get, -EIO (logged). */
static int load(struct tree *t, char **raw, size_t *len, uint64_t *ver,
		struct branch_lock **l, size_t *n)
{
	int rc = read_locks(t, raw, len, ver);

	return rc ? rc : decode_logged(t, *raw, *len, l, n);
}

int lock_list(struct tree *t, struct branch_lock **out, size_t *n)
{
	char *v = NULL;
	size_t len = 0;
	int rc = load(t, &v, &len, NULL, out, n);

	free(v);
	return rc;
}

void lock_seen_drop(struct tree *t)
{
	pthread_mutex_lock(&t->seen_lock);
	t->seen.gen++;
	t->seen.valid = false;
	free(t->seen.raw);
	t->seen.raw = NULL;
	t->seen.len = 0;
	pthread_mutex_unlock(&t->seen_lock);
}

void lock_seen_watch(struct tree *t, bool on)
{
	pthread_mutex_lock(&t->seen_lock);
	t->seen.watches += on ? 1 : -1;
	pthread_mutex_unlock(&t->seen_lock);
	lock_seen_drop(t);
}

/* A copy of LOCKS as last read into *raw (malloc'd, NULL if absent), *len,
 * *ver: true if there is one to trust; else false, and *gen is the
 * generation a read now may keep (seen_keep). */
static bool seen_get(struct tree *t, char **raw, size_t *len, uint64_t *ver,
		     uint64_t *gen)
{
	bool hit;

	pthread_mutex_lock(&t->seen_lock);
	hit = t->seen.watches > 0 && t->seen.valid;
	if (hit) {
		*raw = t->seen.len ? dup_bytes(t->seen.raw, t->seen.len) : NULL;
		*len = t->seen.len;
		*ver = t->seen.ver;
	}
	*gen = t->seen.gen;
	pthread_mutex_unlock(&t->seen_lock);
	return hit;
}

/* Keeps LOCKS as read (@raw, @len, @ver) unless it was dropped since
 * generation @gen (the read may be older than the change that dropped it).
 */
static void seen_keep(struct tree *t, uint64_t gen, const char *raw, size_t len,
		      uint64_t ver)
{
	pthread_mutex_lock(&t->seen_lock);
	if (t->seen.watches > 0 && t->seen.gen == gen) {
		free(t->seen.raw);
		t->seen.raw = len ? dup_bytes(raw, len) : NULL;
		t->seen.len = len;
		t->seen.ver = ver;
		t->seen.valid = true;
	}
	pthread_mutex_unlock(&t->seen_lock);
}

static void sect_clear(void)
{
	lock_list_free(sect.l, sect.n);
	free(sect.raw);
	memset(&sect, 0, sizeof(sect));
}

void lock_section_start(struct tree *t)
{
	(void)t;
	sect_clear();
}

/* Whether this thread checks locks now: a shared writer's conditioned
 * change, before its commit. */
static bool checking(struct tree *t)
{
	return tree_shared(t) && kv_tracking(t->store->kv);
}

/* The locks as this change sees them, once: as last read (t->seen) or
 * read now; the commit is conditioned on their version. */
static int sect_load(struct tree *t)
{
	struct sbuf k = {0};
	uint64_t ver = 0, gen;
	int rc = 0;

	if (sect.t == t)
		return 0;
	sect_clear();
	if (!seen_get(t, &sect.raw, &sect.rawlen, &ver, &gen)) {
		rc = read_locks(t, &sect.raw, &sect.rawlen, &ver);
		if (rc == 0)
			seen_keep(t, gen, sect.raw, sect.rawlen, ver);
	}
	if (rc == 0) {
		key_locks(&k, t->name);
		kv_track_known(t->store->kv, k.buf, k.len, ver);
		sbuf_release(&k);
		rc = decode_logged(t, sect.raw, sect.rawlen, &sect.l, &sect.n);
	}
	if (rc == 0)
		sect.t = t;
	return rc;
}

static int blocked(struct tree *t)
{
	sect.blocked = true;
	kv_track_spoil(t->store->kv);
	return -EAGAIN;
}

/* -EAGAIN (spoiled) if a lock not this thread's own holds @path: @below
 * false, @path lies in one of its branches; true, one of them lies at or
 * below @path. */
static int check(struct tree *t, const char *path, bool below)
{
	int rc;

	if (!checking(t))
		return 0;
	rc = sect_load(t);
	for (size_t i = 0; rc == 0 && i < sect.n; i++) {
		const struct branch_lock *e = &sect.l[i];
		bool hit = below ? path_is_within(e->src, path) ||
				       path_is_within(e->dst, path)
				 : path_is_within(path, e->src) ||
				       path_is_within(path, e->dst);

		if (hit && e->seq != own)
			rc = blocked(t);
	}
	return rc;
}

int lock_check_path(struct tree *t, const char *path)
{
	return check(t, path, false);
}

int lock_check_below(struct tree *t, const char *path)
{
	return check(t, path, true);
}

/* Adds to @b the put of LOCKS as @v, or its delete if @v is empty. */
static void put_locks(struct tree *t, struct kv_batch *b, const struct sbuf *v)
{
	struct sbuf k = {0};

	key_locks(&k, t->name);
	if (v->len)
		kv_batch_put(b, k.buf, k.len, v->buf, v->len);
	else
		kv_batch_delete(b, k.buf, k.len);
	sbuf_release(&k);
}

int lock_take_in(struct tree *t, struct kv_batch *b, uint64_t seq,
		 const char *src, const char *dst)
{
	struct branch_lock e = {seq, kv_writer_id(t->store->kv), (char *)src,
				(char *)dst};
	struct sbuf v = {0};
	int rc;

	if (!tree_shared(t))
		return 0;
	if (!checking(t)) {
		plog(LOG_ERR,
		     "drive %s: a lock of %s -> %s outside a "
		     "conditioned change",
		     t->name, src, dst);
		return -EIO; /* unconditioned, it could cross another's */
	}
	rc = lock_check_below(t, src);
	if (rc == 0)
		rc = lock_check_below(t, dst);
	if (rc == 0)
		rc = lock_check_path(t, src);
	if (rc == 0)
		rc = lock_check_path(t, dst);
	if (rc)
		return rc;
	if (sect.rawlen) /* else the first lock */
		sbuf_add(&v, sect.raw, sect.rawlen);
	encode_one(&v, &e);
	put_locks(t, b, &v);
	sbuf_release(&v);
	return 0;
}

int lock_drop_in(struct tree *t, struct kv_batch *b, uint64_t seq)
{
	struct sbuf v = {0};
	bool found = false;
	int rc;

	if (!checking(t))
		return 0;
	rc = sect_load(t);
	for (size_t i = 0; rc == 0 && i < sect.n; i++) {
		if (sect.l[i].seq == seq)
			found = true;
		else
			encode_one(&v, &sect.l[i]);
	}
	if (rc == 0 && found)
		put_locks(t, b, &v);
	sbuf_release(&v);
	return rc ? rc : found;
}

/* lock_take(), once: the lock added to LOCKS as read, unless a held
 * branch and one of the two nest. */
static int take_once(struct tree *t, uint64_t seq, const char *src,
		     const char *dst)
{
	struct kv_batch *b = kv_batch_new(t->store->kv);
	int rc = lock_take_in(t, b, seq, src, dst);

	if (rc == 0)
		rc = tree_commit(t, b); /* conditioned on LOCKS as read */
	lock_seen_drop(t); /* our own change: the watch is quiet on it */
	kv_batch_free(b);
	return rc;
}

int lock_take(struct tree *t, uint64_t seq, const char *src, const char *dst)
{
	if (!tree_shared(t))
		return 0;
	return TREE_TRACKED(t, take_once(t, seq, src, dst));
}

/*
 * Rewrites LOCKS without record @seq's lock (@drop), or with @to as its
 * writer if @from holds it, conditioned on LOCKS as read, again while
 * another writer changes it. 1 if it changed LOCKS, 0 if there was nothing
 * to change. Errors: as kv_get, tree_commit, -EIO.
 */
static int rewrite(struct tree *t, uint64_t seq, bool drop, uint64_t from,
		   uint64_t to)
{
	for (;;) {
		struct branch_lock *l = NULL;
		struct kv_batch *b;
		struct sbuf k = {0}, v = {0};
		char *raw = NULL;
		size_t rawlen = 0, n = 0;
		uint64_t ver = 0;
		bool found = false;
		int rc;

		rc = load(t, &raw, &rawlen, &ver, &l, &n);
		free(raw);
		if (rc)
			return rc;
		for (size_t i = 0; i < n; i++) {
			if (l[i].seq == seq && (drop || l[i].writer == from)) {
				found = true;
				if (drop)
					continue;
				l[i].writer = to;
			}
			encode_one(&v, &l[i]);
		}
		lock_list_free(l, n);
		if (!found) {
			sbuf_release(&v);
			return 0;
		}
		key_locks(&k, t->name);
		b = kv_batch_new(t->store->kv);
		kv_batch_expect(b, k.buf, k.len, ver);
		put_locks(t, b, &v);
		rc = tree_commit(t, b);
		lock_seen_drop(t);
		kv_batch_free(b);
		sbuf_release(&k);
		sbuf_release(&v);
		if (rc != -EAGAIN)
			return rc ? rc : 1;
	}
}

int lock_release(struct tree *t, uint64_t seq)
{
	int rc = rewrite(t, seq, true, 0, 0);

	return rc < 0 ? rc : 0;
}

int lock_claim(struct tree *t, uint64_t seq, uint64_t from)
{
	return rewrite(t, seq, false, from, kv_writer_id(t->store->kv));
}

uint64_t lock_own(uint64_t seq)
{
	uint64_t was = own;

	own = seq;
	return was;
}

/* Waits until LOCKS differs from @seen (@len bytes): true then, or on an
 * error reading it (the retry meets the error); false after LOCK_WAIT_S. */
static bool wait_change(struct tree *t, const char *seen, size_t seenlen)
{
	struct timespec nap = {0, 20 * 1000 * 1000};
	time_t until = time(NULL) + LOCK_WAIT_S;

	for (;;) {
		char *v = NULL;
		size_t len = 0;
		bool same;

		if (read_locks(t, &v, &len, NULL))
			return true;
		same = len == seenlen && (len == 0 || !memcmp(v, seen, len));
		free(v);
		if (!same)
			return true;
		if (time(NULL) >= until) {
			plog(LOG_WARNING,
			     "drive %s: a folder rename held a branch for "
			     "%d s: the change waiting for it fails (EAGAIN)",
			     t->name, LOCK_WAIT_S);
			return false;
		}
		nanosleep(&nap, NULL);
	}
}

bool lock_section_end(struct tree *t, bool conflict)
{
	bool again;

	/* LOCKS as last read may be what failed the change */
	if (sect.t == t && (conflict || sect.blocked))
		lock_seen_drop(t);
	/* a lock kept the change out: again once LOCKS changed */
	again = sect.blocked && wait_change(t, sect.raw, sect.rawlen);

	sect_clear();
	return again;
}
