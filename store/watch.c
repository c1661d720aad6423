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
 * Limits: only engines other processes write can watch (etcd, DynamoDB
 * through its table's stream); others answer -EOPNOTSUPP. A change is
 * reported once committed, in commit order, on the watch's thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "branch_lock_i.h"
#include "drive_i.h"
#include "keys_i.h"
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
};

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

	lock_seen_drop(tw->t);
	if (!tw->stands) {
		tw->stands = true; /* every change from now on is heard */
		lone_watching(tw->t, true);
	} else if (lone_heard(tw->t, NULL, 0)) {
		tw->fn(tw->ctx, &c); /* restarted: an ask may be lost */
	}
	tw->fn(tw->ctx, NULL);
}

int tree_watch(struct tree *t, tree_change_fn fn, void *ctx,
	       struct tree_watch **out)
{
	struct tree_watch *tw = calloc(1, sizeof(*tw));
	struct sbuf lo = {0}, hi = {0};
	int rc;

	*out = NULL;
	if (!tw)
		return -ENOMEM;
	tw->t = t;
	tw->fn = fn;
	tw->ctx = ctx;
	key_locks(&tw->locks, t->name);
	key_lone(&tw->lone, t->name);
	key_drive_prefix(&lo, t->name);
	tw->plen = lo.len;
	sbuf_reset(&lo);
	key_drive_range(&lo, &hi, t->name);
	rc = kv_watch(&tw->w, t->store->kv, lo.buf, lo.len, hi.buf, hi.len, 0,
		      watch_change, watch_reset, tw);
	sbuf_release(&lo);
	sbuf_release(&hi);
	if (rc) {
		sbuf_release(&tw->locks);
		sbuf_release(&tw->lone);
		free(tw);
		return rc;
	}
	lock_seen_watch(t, true);
	*out = tw;
	return 0;
}

void tree_watch_quiet(struct tree *t, bool on)
{
	kv_quiet(on ? t->store->kv : NULL);
}

void tree_watch_stop(struct tree_watch *tw)
{
	if (!tw)
		return;
	kv_watch_stop(tw->w);
	lock_seen_watch(tw->t, false);
	if (tw->stands)
		lone_watching(tw->t, false);
	sbuf_release(&tw->locks);
	sbuf_release(&tw->lone);
	sbuf_release(&tw->path);
	free(tw);
}
