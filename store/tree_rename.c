/*
 * tree_rename.c - tree_rename(): rename, RENAME_NOREPLACE and
 * RENAME_EXCHANGE; tree_rename_whiteout(): RENAME_WHITEOUT.
 *
 * Anything but a non-empty folder moves in one batch (rename_simple()); a
 * non-empty folder is rewritten key by key by journal.c, crash-safe through
 * its journal record. A replaced file whose blocks do not fit one batch's
 * drop (etcd: content_i.h) is parked as an orphan by that batch, as by the
 * last unlink (TREE_PARK_BIG), and reclaimed in slices once ns_lock is
 * released (tree_reclaim; a crash before that leaves an orphan that the
 * next open frees). A whiteout is put at the old path in the batch that
 * deletes the node there: the one batch, or the journal's final batch (its
 * number and owner are in the record, so a replay makes the same one).
 *
 * Several writers of one drive (store_options.shared): the one batch, and
 * a journaled rewrite's batch 0, are conditioned on every node the rename
 * read (tree_track) and the rename starts again if one changed, so two
 * writers' renames serialize (the rename-cycle race ends with one ENOENT);
 * a folder that a create inside made non-empty meanwhile fails the
 * condition on its node, and the retry finds it non-empty. A journaled
 * rewrite holds both branches until its end (branch_lock.c): another
 * writer's change in them waits, and a folder moved or replaced must hold
 * no such branch below it.
 *
 * Limits: a folder cannot move into itself (-EINVAL); a move that would
 * make a descendant's path longer than TREE_PATH_MAX is refused before
 * anything is written (-ENAMETOOLONG).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "batch_i.h"
#include "branch_lock_i.h"
#include "drive_i.h"
#include "flags_i.h"
#include "journal_i.h"
#include "log.h"
#include "parent_i.h"
#include "tree_i.h"

/* The one-batch rename of nodes that are not non-empty folders; ns_lock held,
 * every check done. @sn/@dn are the nodes at @src/@dst (@dn NULL if none);
 * @wo (not NULL) the whiteout to leave at @src. A replaced file too big for
 * the batch's drop (its blocks, or its xattrs: kv_batch_over) is parked:
 * *park = its number (else 0), for the caller to reclaim once ns_lock is
 * released. */
static int rename_simple(struct tree *t, const char *src, const char *dst,
			 unsigned flags, const struct whiteout *wo,
			 const struct node *sn0, const struct node *dn0,
			 uint64_t *orphan, uint64_t *park)
{
	char *sp = NULL, *dp = NULL;
	struct node spn = {0}, dpn = {0}, sn = {0}, dn = {0};
	struct kv_batch *b = NULL;
	uint64_t dino = dn0 ? dn0->a.ino : 0, left = 0;
	unsigned dflags = (flags & TREE_KEEP_ORPHAN) | TREE_PARK_BIG;
	int sdelta = 0, ddelta = 0, sd, dd;
	bool st = false;
	struct sbuf k = {0};
	int64_t now;
	int rc;

	sp = path_parent(src);
	dp = path_parent(dst);
	rc = tree_get_node(t, sp, &spn, false);
	if (rc == 0)
		rc = tree_get_node(t, dp, &dpn, false);
	if (rc)
		goto out;
	tree_lock_inodes(t, spn.a.ino, dpn.a.ino, sn0->a.ino, dino);
	st = true;
	/* fresh values under the stripes */
	rc = tree_get_node(t, src, &sn, true);
	if (rc == 0 && dn0)
		rc = tree_get_node(t, dst, &dn, true);
	if (rc)
		goto out;
	sd = S_ISDIR(sn.a.mode);
	dd = dn0 ? S_ISDIR(dn.a.mode) : 0;
	now = tree_now_ns();
	b = kv_batch_new(t->store->kv);
again:
	if (flags & TREE_RENAME_EXCHANGE) {
		rc = tree_batch_moved(t, b, src, spn.a.ino, &dn, now);
		if (rc == 0)
			rc = tree_batch_moved(t, b, dst, dpn.a.ino, &sn, now);
		sdelta = dd - sd;
		ddelta = sd - dd;
	} else {
		if (dn0) {
			rc = tree_batch_remove(t, b, dst, &dn, dflags, &left,
					       now);
			if (rc)
				goto out;
		}
		if (wo) {
			rc = tree_batch_whiteout(t, b, src, wo, now);
			if (rc)
				goto out;
		} else {
			key_node(&k, t->name, src);
			kv_batch_delete(b, k.buf, k.len);
		}
		rc = tree_batch_moved(t, b, dst, dpn.a.ino, &sn, now);
		sdelta = -sd;
		ddelta = sd - dd;
	}
	if (rc)
		goto out;
	if (strcmp(sp, dp) == 0) {
		rc = tree_batch_dir_touch(t, b, sp, sdelta + ddelta, now);
	} else {
		rc = tree_batch_dir_touch(t, b, sp, sdelta, now);
		if (rc == 0)
			rc = tree_batch_dir_touch(t, b, dp, ddelta, now);
	}
	if (rc == 0 && dn0 && !(dflags & TREE_KEEP_ORPHAN) &&
	    kv_batch_over(b)) {
		/* the replaced inode's drop does not fit one commit (many
		 * xattrs where a range delete is an action a key): parked */
		kv_batch_clear(b);
		dflags |= TREE_KEEP_ORPHAN;
		goto again;
	}
	if (rc == 0)
		rc = tree_commit(t, b);
	if (rc == 0 && (flags & TREE_KEEP_ORPHAN)) {
		if (orphan)
			*orphan = left;
	} else if (rc == 0) {
		*park = left; /* parked: too big to drop in one batch */
	}
out:
	if (rc && orphan)
		*orphan = 0;
	if (st)
		tree_unlock_inodes(t, spn.a.ino, dpn.a.ino, sn0->a.ino, dino);
	kv_batch_free(b);
	sbuf_release(&k);
	node_release(&spn);
	node_release(&dpn);
	node_release(&sn);
	node_release(&dn);
	free(sp);
	free(dp);
	return rc;
}

/*
 * -ENAMETOOLONG if moving the branch below folder @from to a folder whose
 * path is @newlen bytes long would make a descendant's path longer than
 * TREE_PATH_MAX. Scans the branch only when the new path is longer.
 */
static int branch_fits(struct tree *t, const char *from, size_t newlen)
{
	size_t oldlen = strlen(from), longest = 0;
	struct tree_scan *sc = NULL;
	struct tree_attr a;
	const char *p;
	int rc;

	if (newlen <= oldlen)
		return 0;
	rc = tree_scan_open(&sc, t, from);
	while (rc == 0 && (rc = tree_scan_next(sc, &p, &a)) == 1) {
		size_t n = strlen(p);
		rc = 0;
		if (n > longest)
			longest = n;
	}
	tree_scan_free(sc);
	if (rc < 0)
		return rc;
	return longest - oldlen + newlen > TREE_PATH_MAX ? -ENAMETOOLONG : 0;
}

/*
 * The user flags' rule for moving node @sn out of its folder (@src's) and
 * into folder @dpn (@dp), over node @dn if not NULL (an exchange moves @dn
 * back, which the same checks cover): -EPERM when either node or the
 * folder it leaves is immutable or append-only, or the folder it enters is
 * immutable, as the VFS's may_delete() and may_create() say. *@dirs gets
 * the flags of both folders (flags_sync()). ns_lock held.
 */
static int rename_flags(struct tree *t, const char *src, const struct node *sn,
			const char *dp, const struct node *dpn,
			const struct node *dn, uint32_t *dirs)
{
	char *sp = path_parent(src);
	struct node spn = {0};
	uint32_t sf = 0, df = 0;
	bool same = strcmp(sp, dp) == 0;
	int rc;

	rc = same ? 0 : tree_get_node(t, sp, &spn, false);
	if (rc == 0)
		rc = flags_of_node(t, sn, &sf);
	if (rc == 0 && dn)
		rc = flags_of_node(t, dn, &df);
	if (rc == 0)
		rc = flags_may_remove(same ? &dpn->a : &spn.a, sf);
	if (rc == 0)
		rc =
		    dn ? flags_may_remove(&dpn->a, df) : flags_may_add(&dpn->a);
	*dirs = dpn->a.flags | spn.a.flags;
	node_release(&spn);
	free(sp);
	return rc;
}

/* rename_once()'s answer when a shared writer's rename must journal, holds
 * no branch lock yet and is to take it first (@hold): take it
 * (journal_hold), then run again. */
#define RENAME_HOLD 1

/* tree_rename(), and with @wo tree_rename_whiteout() (its number not yet
 * allocated), once; @seq: the held lock's record (journal_hold), or 0: a
 * shared writer's that journals takes it in its batch 0 (journal.c), or
 * with @hold answers RENAME_HOLD. */
static int rename_once(struct tree *t, const char *src, const char *dst,
		       unsigned flags, struct whiteout *wo, uint64_t seq,
		       bool hold, uint64_t *orphan)
{
	char *dp = NULL;
	struct node sn = {0}, dn = {0}, dpn = {0};
	bool ns = false, dexists = false, big = false;
	uint64_t park = 0;
	uint32_t dirs = 0;
	int rc;

	if (orphan)
		*orphan = 0;
	rc = path_check(src);
	if (rc == 0)
		rc = path_check(dst);
	if (rc)
		goto out;
	if (flags & ~(unsigned)(TREE_KEEP_ORPHAN | TREE_RENAME_NOREPLACE |
				TREE_RENAME_EXCHANGE) ||
	    ((flags & TREE_RENAME_NOREPLACE) &&
	     (flags & TREE_RENAME_EXCHANGE)) ||
	    (wo && (flags & TREE_RENAME_EXCHANGE))) {
		rc = -EINVAL;
		goto out;
	}
	if (is_root(src) || is_root(dst)) {
		rc = -EBUSY;
		goto out;
	}
	dp = path_parent(dst);
	pthread_mutex_lock(&t->ns_lock);
	ns = true;
	rc = tree_get_node(t, src, &sn, false);
	if (rc)
		goto out;
	rc = tree_get_node(t, dp, &dpn, false);
	if (rc)
		goto out;
	if (!S_ISDIR(dpn.a.mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	rc = tree_get_node(t, dst, &dn, false);
	if (rc && rc != -ENOENT)
		goto out;
	dexists = rc == 0;
	rc = 0;
	if (strcmp(src, dst) == 0) {
		rc = (flags & TREE_RENAME_NOREPLACE) ? -EEXIST : 0;
		goto out;
	}
	if (path_is_within(dst, src)) {
		rc = -EINVAL;
		goto out;
	}
	if (flags & TREE_RENAME_EXCHANGE) {
		if (!dexists) {
			rc = -ENOENT;
			goto out;
		}
		if (path_is_within(src, dst)) {
			rc = -EINVAL;
			goto out;
		}
		if (sn.a.ino == dn.a.ino)
			goto out; /* two links of one inode */
		rc = rename_flags(t, src, &sn, dp, &dpn, &dn, &dirs);
		if (rc)
			goto out;
		if (S_ISDIR(dn.a.mode)) {
			rc = tree_dir_is_empty(t, dst);
			if (rc < 0)
				goto out;
			big = rc == 0;
		}
	} else if (dexists) {
		if (flags & TREE_RENAME_NOREPLACE) {
			rc = -EEXIST;
			goto out;
		}
		if (sn.a.ino == dn.a.ino)
			goto out; /* POSIX: links of one file, nothing to do */
		rc = rename_flags(t, src, &sn, dp, &dpn, &dn, &dirs);
		if (rc)
			goto out;
		if (S_ISDIR(sn.a.mode) && !S_ISDIR(dn.a.mode)) {
			rc = -ENOTDIR;
			goto out;
		}
		if (!S_ISDIR(sn.a.mode) && S_ISDIR(dn.a.mode)) {
			rc = -EISDIR;
			goto out;
		}
		if (S_ISDIR(dn.a.mode)) {
			rc = tree_dir_is_empty(t, dst);
			if (rc <= 0) {
				rc = rc ? rc : -ENOTEMPTY;
				goto out;
			}
		}
	} else {
		rc = rename_flags(t, src, &sn, dp, &dpn, NULL, &dirs);
		if (rc)
			goto out;
	}
	/* a folder moved or replaced holds no other rename's branch */
	rc = S_ISDIR(sn.a.mode) ? lock_check_below(t, src) : 0;
	if (rc == 0 && dexists && S_ISDIR(dn.a.mode))
		rc = lock_check_below(t, dst);
	if (rc)
		goto out;
	if (S_ISDIR(sn.a.mode)) {
		rc = tree_dir_is_empty(t, src);
		if (rc < 0)
			goto out;
		big = big || rc == 0;
	}
	if (big && hold && tree_shared(t) && !seq) {
		rc = RENAME_HOLD;
		goto out;
	}
	if (wo) {
		rc = tree_alloc_ino(t, &wo->ino);
		if (rc)
			goto out;
	}
	if (big) {
		rc = S_ISDIR(sn.a.mode) ? branch_fits(t, src, strlen(dst)) : 0;
		if (rc == 0 && (flags & TREE_RENAME_EXCHANGE) &&
		    S_ISDIR(dn.a.mode))
			rc = branch_fits(t, dst, strlen(src));
		if (rc)
			goto out;
		rc = journal_rename_dir(t, src, dst, flags, wo, seq, orphan);
	} else
		rc = rename_simple(t, src, dst, flags, wo, &sn,
				   dexists ? &dn : NULL, orphan, &park);
	if (rc == 0)
		rc = flags_sync(t, dirs); /* done, if not yet durable */
out:
	if (ns)
		pthread_mutex_unlock(&t->ns_lock);
	if (park && tree_reclaim(t, park))
		plog(LOG_WARNING,
		     "drive %s: %s: inode %llu not freed yet: the next open "
		     "frees it",
		     t->name, dst, (unsigned long long)park);
	node_release(&sn);
	node_release(&dn);
	node_release(&dpn);
	free(dp);
	return rc;
}

/*
 * rename_once(), again while a key it read changed before its commit (the
 * journal record's, for a folder's rewrite: tree_track). A shared writer's
 * that journals takes the branch lock in its batch 0 at first; once another
 * writer's change failed a try, it holds the lock from before its reads to
 * the end (the changes in the branches then cannot keep failing batch 0).
 */
static int rename_any(struct tree *t, const char *src, const char *dst,
		      unsigned flags, struct whiteout *wo, uint64_t *orphan)
{
	uint64_t seq = 0, was;
	bool hold = false;
	int rc;

	for (;;) {
		was = lock_own(seq); /* its own lock does not keep it out */
		tree_track(t);
		rc = rename_once(t, src, dst, flags, wo, seq, hold, orphan);
		lock_own(was);
		if (tree_retry(t, rc)) {
			hold = true;
			continue;
		}
		if (rc != RENAME_HOLD)
			break;
		rc = journal_hold(t, src, dst, &seq);
		if (rc)
			break;
	}
	if (seq)
		journal_unhold(t, seq);
	return rc;
}

int tree_rename(struct tree *t, const char *src, const char *dst,
		unsigned flags, uint64_t *orphan)
{
	return rename_any(t, src, dst, flags, NULL, orphan);
}

int tree_rename_whiteout(struct tree *t, const char *src, const char *dst,
			 unsigned flags, uid_t uid, gid_t gid, uint64_t *orphan)
{
	struct whiteout wo = {.uid = uid, .gid = gid};

	return rename_any(t, src, dst, flags, &wo, orphan);
}
