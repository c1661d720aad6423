/*
 * watch.c - what another process's changes to a drive mean to a mount that
 * caches it (tree_watch(), tree.h): the drive's keys are watched through
 * kv_watch(), and each changed key becomes a tree_change:
 *  - a node (PATH#): its path, and the inode its new value names (0 for a
 *    deleted node or one that does not decode);
 *  - a content block (DATA#), an extended attribute (XATTR#) or an INODE
 *    record: the inode, no path;
 *  - LOCKS (another writer's folder rename started or ended): nothing, but
 *    the copy of it the branch lock checks use is dropped (branch_lock.c);
 *  - LONE (a writer joins the drive): if this writer was alone on it, a
 *    change that says so (share: lone.c), no path, no inode;
 *  - anything else (META, PARENT#, ORPHAN#, the journal and its temporary
 *    keys): nothing; the node changes a journaled operation ends with are
 *    reported when they land.
 * When the watch (re)starts the caller is told everything may have changed
 * (a NULL change); at a restart, a writer alone that it must share (it
 * may have missed a join).
 *
 * A shared writer alone on the drive (lone.c) has nobody else's changes to
 * hear, and reading its own back costs it as much CPU again as making
 * them (JSON of every key it writes): once its watch heard LONE name it
 * (every change before is heard), the watch goes on from that revision
 * over LOCKS and LONE only (lone_narrow). When a joiner asks, before this
 * writer publishes, it covers the drive again from the ask's revision
 * (lone_widen): the joiner changes nothing before the publish. Only on an
 * engine whose watches start at a revision (etcd). A restart of ours is
 * no reset; limit: if etcd compacted the revision it starts from in the
 * second between, what it missed (an ask: the joiner fails after 30 s) is
 * not said.
 *
 * Limits: only engines other processes write can watch (etcd, DynamoDB
 * through its table's stream); others answer -EOPNOTSUPP. A change is
 * reported once committed, in commit order, on the watch's thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "branch_lock_i.h"
#include "drive_i.h"
#include "keys_i.h"
#include "log.h"
#include "lone_i.h"
#include "node_i.h"

struct tree_watch {
	struct tree *t;
	tree_change_fn fn;
	void *ctx;
	size_t plen;	   /* the drive's key prefix */
	struct sbuf locks; /* the drive's LOCKS key */
	struct sbuf lone;  /* the drive's LONE key */
	bool stands;	   /* the engine confirmed it (its first reset) */
	struct sbuf path;  /* on the watch thread only */
	struct kv_watch *w;
	bool narrow; /* LOCKS and LONE only (lone_narrow) */
	/* what lone_narrow and lone_widen wait for, under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool switching;	      /* a restart of ours from a revision */
	unsigned resets;      /* resets met */
	unsigned resets_then; /* ... when lone_widen restarted it */
	long long alone_rev;  /* LONE named this writer at it (0: not yet) */
	long long ask_rev;    /* a joiner asked this writer at it */
};

/* Notes revision @rev at which LONE became @v (@len bytes; NULL: deleted)
 * if it names this writer, alone or asked. */
static void note_lone(struct tree_watch *tw, long long rev, const char *v,
		      size_t len)
{
	char me[KEY_ID_HEX];

	key_id_hex(me, kv_writer_id(tw->t->store->kv));
	pthread_mutex_lock(&tw->lock);
	if (v && len == KEY_ID_HEX && !memcmp(v, me, KEY_ID_HEX))
		tw->alone_rev = rev;
	else if (v && len == KEY_ID_HEX + 1 && v[0] == '?' &&
		 !memcmp(v + 1, me, KEY_ID_HEX))
		tw->ask_rev = rev;
	pthread_cond_broadcast(&tw->cond);
	pthread_mutex_unlock(&tw->lock);
}

static void watch_change(void *arg, long long rev, const char *key, size_t klen,
			 const char *value, size_t vlen)
{
	struct tree_watch *tw = arg;
	struct tree_change c = {.rev = rev};
	uint64_t blk;

	if (klen == tw->locks.len && !memcmp(key, tw->locks.buf, klen)) {
		lock_seen_drop(tw->t); /* another writer's rename */
		return;
	}
	if (klen == tw->lone.len && !memcmp(key, tw->lone.buf, klen)) {
		note_lone(tw, rev, value, vlen);
		c.share = lone_heard(tw->t, value, vlen);
		if (c.share)
			tw->fn(tw->ctx, &c);
		return;
	}
	sbuf_reset(&tw->path);
	if (key_node_decode(key, klen, tw->plen, &tw->path) == 0) {
		struct node n = {0};

		sbuf_nul(&tw->path);
		c.path = tw->path.buf;
		if (value && node_decode(value, vlen, &n, false) == 0)
			c.ino = n.a.ino;
		node_release(&n);
	} else if (key_data_decode(key, klen, tw->plen, &c.ino, &blk) &&
		   key_ino_decode(key, klen, tw->plen, KEY_XATTR, &c.ino) &&
		   key_ino_decode(key, klen, tw->plen, KEY_INODE, &c.ino)) {
		return;
	}
	tw->fn(tw->ctx, &c);
}

static void watch_reset(void *arg)
{
	struct tree_watch *tw = arg;
	struct tree_change c = {.share = true};
	bool ours;

	lock_seen_drop(tw->t);
	pthread_mutex_lock(&tw->lock);
	ours = tw->switching; /* from a revision: nothing was missed */
	tw->switching = false;
	tw->resets++;
	pthread_cond_broadcast(&tw->cond);
	pthread_mutex_unlock(&tw->lock);
	if (ours)
		return;
	if (!tw->stands) {
		tw->stands = true; /* every change from now on is heard */
		lone_watching(tw->t, true);
	} else if (lone_heard(tw->t, NULL, 0)) {
		tw->fn(tw->ctx, &c); /* restarted: an ask may be lost */
	}
	tw->fn(tw->ctx, NULL);
}

/* Starts @tw's engine watch over the drive, or (@narrow) over LOCKS and
 * LONE, which sort next to each other (keys.c), from revision @rev (0:
 * now). Errors: as kv_watch. */
static int watch_start(struct tree_watch *tw, bool narrow, long long rev)
{
	struct tree *t = tw->t;
	struct sbuf lo = {0}, hi = {0};
	int rc;

	if (narrow) {
		sbuf_add(&lo, tw->locks.buf, tw->locks.len);
		sbuf_add(&hi, tw->lone.buf, tw->lone.len);
		sbuf_addc(&hi, 0); /* LONE itself */
	} else {
		key_drive_range(&lo, &hi, t->name);
	}
	rc = kv_watch(&tw->w, t->store->kv, lo.buf, lo.len, hi.buf, hi.len, rev,
		      watch_change, watch_reset, tw);
	if (rc == 0)
		tw->narrow = narrow;
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

static void watch_free(struct tree_watch *tw)
{
	pthread_mutex_destroy(&tw->lock);
	pthread_cond_destroy(&tw->cond);
	sbuf_release(&tw->locks);
	sbuf_release(&tw->lone);
	sbuf_release(&tw->path);
	free(tw);
}

int tree_watch(struct tree *t, tree_change_fn fn, void *ctx,
	       struct tree_watch **out)
{
	struct tree_watch *tw = calloc(1, sizeof(*tw));
	struct sbuf pre = {0};
	int rc;

	*out = NULL;
	if (!tw)
		return -ENOMEM;
	tw->t = t;
	tw->fn = fn;
	tw->ctx = ctx;
	pthread_mutex_init(&tw->lock, NULL);
	pthread_cond_init(&tw->cond, NULL);
	key_locks(&tw->locks, t->name);
	key_lone(&tw->lone, t->name);
	key_drive_prefix(&pre, t->name);
	tw->plen = pre.len;
	sbuf_release(&pre);
	rc = watch_start(tw, false, 0);
	if (rc) {
		watch_free(tw);
		return rc;
	}
	lock_seen_watch(t, true);
	pthread_mutex_lock(&t->watch_lock);
	if (!t->watch)
		t->watch = tw; /* the one a lone writer narrows */
	pthread_mutex_unlock(&t->watch_lock);
	*out = tw;
	return 0;
}

/* Waits (tw->lock held) until @done(tw) or @ms pass: whether it is done. */
static bool watch_wait(struct tree_watch *tw, bool (*done)(struct tree_watch *),
		       int ms)
{
	struct timespec end;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	while (!done(tw))
		if (pthread_cond_timedwait(&tw->cond, &tw->lock, &end))
			return done(tw);
	return true;
}

static bool heard_alone(struct tree_watch *tw)
{
	return tw->alone_rev > 0;
}

static bool stood(struct tree_watch *tw)
{
	return tw->resets != tw->resets_then;
}

/* Restarts @tw's engine watch over the drive or (@narrow) the two keys,
 * from revision @rev (0: now, a restart as the engine's own). Caller holds
 * t->watch_lock. Errors: as kv_watch (then the drive is watched from now,
 * if that starts). */
static int watch_switch(struct tree_watch *tw, bool narrow, long long rev)
{
	int rc;

	kv_watch_stop(tw->w);
	tw->w = NULL;
	pthread_mutex_lock(&tw->lock);
	tw->switching = rev > 0;
	tw->alone_rev = tw->ask_rev = 0;
	pthread_mutex_unlock(&tw->lock);
	rc = watch_start(tw, narrow, rev);
	if (rc) {
		plog(LOG_ERR, "drive %s: watch from revision %lld: %s",
		     tw->t->name, rev, strerror(-rc));
		pthread_mutex_lock(&tw->lock);
		tw->switching = false;
		pthread_mutex_unlock(&tw->lock);
		if (watch_start(tw, false, 0))
			plog(LOG_ERR,
			     "drive %s: no watch: the other writers' "
			     "changes are not heard",
			     tw->t->name);
	}
	return rc;
}

void lone_narrow(struct tree *t)
{
	struct tree_watch *tw;
	long long rev = 0;

	pthread_mutex_lock(&t->watch_lock);
	tw = t->watch;
	if (tw && !tw->narrow && kv_watch_revs(t->store->kv)) {
		pthread_mutex_lock(&tw->lock);
		if (watch_wait(tw, heard_alone, 2000))
			rev = tw->alone_rev;
		pthread_mutex_unlock(&tw->lock);
	}
	if (rev > 0 && watch_switch(tw, true, rev + 1) == 0)
		plog(LOG_NOTICE,
		     "drive %s: alone, this writer watches LOCKS and LONE only",
		     t->name);
	pthread_mutex_unlock(&t->watch_lock);
}

int lone_widen(struct tree *t)
{
	struct tree_watch *tw;
	long long rev;
	int rc = 0;

	pthread_mutex_lock(&t->watch_lock);
	tw = t->watch;
	if (tw && tw->narrow) {
		pthread_mutex_lock(&tw->lock);
		rev = tw->ask_rev;
		tw->resets_then = tw->resets;
		pthread_mutex_unlock(&tw->lock);
		rc = watch_switch(tw, false, rev);
		/* from now: what the joiner changes must come after it stands */
		pthread_mutex_lock(&tw->lock);
		if (!rc && !rev && !watch_wait(tw, stood, 10000))
			rc = -ETIMEDOUT;
		pthread_mutex_unlock(&tw->lock);
	}
	pthread_mutex_unlock(&t->watch_lock);
	return rc;
}

void tree_watch_quiet(struct tree *t, bool on)
{
	kv_quiet(on ? t->store->kv : NULL);
}

void tree_watch_stop(struct tree_watch *tw)
{
	if (!tw)
		return;
	pthread_mutex_lock(&tw->t->watch_lock);
	if (tw->t->watch == tw)
		tw->t->watch = NULL;
	kv_watch_stop(tw->w);
	pthread_mutex_unlock(&tw->t->watch_lock);
	lock_seen_watch(tw->t, false);
	if (tw->stands)
		lone_watching(tw->t, false);
	watch_free(tw);
}
