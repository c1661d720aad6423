/*
 * subtree_lock.c - how a request enters the drive and retries: the subtree
 * lock with its busy branches, and the renames in flight a request that
 * missed waits for (see "One place per request" in fs_i.h).
 *
 * The subtree lock keeps requests out of a branch whose keys a folder rename
 * (or a pathfsctl command) is rewriting, without stopping the rest of the
 * drive: a writer-preferring rwlock that every path request holds for read,
 * plus a list of busy branches. Registering a branch takes the rwlock for
 * write, which waits for the requests in flight to leave; then the long store
 * work runs with no lock held, and requests whose path falls inside a busy
 * branch sleep on a condition variable until it is released, then rebuild
 * their path (which the rename has changed meanwhile).
 *
 * A file rename, exchange or unlink brackets its store call and table update
 * with fs_rename_start() and fs_rename_done() instead; a request whose store
 * call missed waits for those that overlapped it and retries at the path the
 * table (inode_table.c) gives then (fs_retry()).
 *
 * Limits: the busy list is scanned linearly (it holds one entry per rename
 * in flight).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

/* Caller holds fs->sublock. */
static bool busy_hit(struct fs *fs, const char *path)
{
	struct busy *b;

	if (!path)
		return false;
	for (b = fs->busy; b; b = b->next)
		if (tree_path_is_within(path, b->src) ||
		    (b->dst && tree_path_is_within(path, b->dst)))
			return true;
	return false;
}

/* Caller holds fs->sublock. Does @path overlap a busy branch either way? */
static bool busy_overlap(struct fs *fs, const char *path)
{
	struct busy *b;

	for (b = fs->busy; b; b = b->next) {
		if (tree_path_is_within(path, b->src) ||
		    tree_path_is_within(b->src, path))
			return true;
		if (b->dst && (tree_path_is_within(path, b->dst) ||
			       tree_path_is_within(b->dst, path)))
			return true;
	}
	return false;
}

/* Caller holds fs->sublock (any mode); releases it and sleeps until the busy
 * list changes. Returns with nothing held. */
static void wait_busy(struct fs *fs)
{
	uint64_t gen = fs->busy_gen;

	pthread_rwlock_unlock(&fs->sublock);
	if (fs->blocking)
		fs->blocking();
	pthread_mutex_lock(&fs->busy_mutex);
	while (fs->busy_gen == gen)
		pthread_cond_wait(&fs->busy_cond, &fs->busy_mutex);
	pthread_mutex_unlock(&fs->busy_mutex);
}

/* Takes fs->sublock for read, telling the request loop first if that
 * waits (a rename or pathfsctl command holds or wants it for write). */
static void read_lock(struct fs *fs)
{
	if (pthread_rwlock_tryrdlock(&fs->sublock) == 0)
		return;
	if (fs->blocking)
		fs->blocking();
	pthread_rwlock_rdlock(&fs->sublock);
}

static int enter(struct fs *fs, uint64_t ino, const char *name, bool need_path,
		 struct fs_path *p)
{
	int rc;

	for (;;) {
		read_lock(fs);
		rc = itab_path(fs, ino, name, need_path, p);
		if (rc) {
			pthread_rwlock_unlock(&fs->sublock);
			return rc;
		}
		if (!busy_hit(fs, p->path)) {
			fs_step(fs, FS_STEP_BUILT);
			return 0;
		}
		wait_busy(fs);
	}
}

int fs_enter(struct fs *fs, uint64_t ino, const char *name, struct fs_path *p)
{
	return enter(fs, ino, name, false, p);
}

int fs_enter_path(struct fs *fs, uint64_t ino, struct fs_path *p)
{
	return enter(fs, ino, NULL, true, p);
}

int fs_enter2(struct fs *fs, uint64_t ino1, const char *name1,
	      struct fs_path *p1, uint64_t ino2, const char *name2,
	      struct fs_path *p2)
{
	int rc;

	for (;;) {
		read_lock(fs);
		rc = itab_path(fs, ino1, name1, true, p1);
		if (!rc)
			rc = itab_path(fs, ino2, name2, true, p2);
		if (rc) {
			pthread_rwlock_unlock(&fs->sublock);
			return rc;
		}
		if (!busy_hit(fs, p1->path) && !busy_hit(fs, p2->path)) {
			fs_step(fs, FS_STEP_BUILT);
			return 0;
		}
		wait_busy(fs);
	}
}

void fs_leave(struct fs *fs)
{
	pthread_rwlock_unlock(&fs->sublock);
}

/*
 * A follower's request on inode @ino (@name NULL) failed with nothing here
 * in flight: the writer moved or removed the node before the watch told the
 * table. The store's reverse index says where it is now (tree_find_ino);
 * the retry goes there (the watch moves the table soon). @p gets that path,
 * or NULL when the inode is addressed by number (a hard link, or an
 * orphan that a shared writer's opens hold: tree_hold). Errors: those of
 * tree_find_ino(): -ENOENT when it has no name left (an orphan the writer
 * keeps for its own opens: a -o ro mount cannot keep it from being
 * reclaimed at any moment) or the writer moved it between the index's reads.
 */
static int follow_store(struct fs *fs, uint64_t ino, struct fs_path *p)
{
	struct tree_attr a;
	char *path = NULL;
	size_t len;
	int rc;

	rc = tree_find_ino(fs->tree, ino, &path, &a);
	if (rc == -ENOENT && tree_shared(fs->tree) && itab_nopen(fs, ino) &&
	    tree_getattr(fs->tree, NULL, ino, &a) == 0)
		rc = 0; /* an orphan kept for the opens here (tree_hold) */
	if (rc == 0 && !path) {
		itab_flags(fs, ino, INODE_LINKED, 0);
		p->path = NULL;
		return 0;
	}
	if (rc)
		return rc;
	len = strlen(path) + 1;
	if (len > p->cap) {
		char *nb = realloc(p->buf, len);

		if (!nb) {
			free(path);
			return -ENOMEM;
		}
		p->buf = nb;
		p->cap = len;
	}
	memcpy(p->buf, path, len);
	p->path = p->buf;
	free(path);
	return 0;
}

bool fs_retry(struct fs *fs, int *rc, uint64_t ino, const char *name,
	      struct fs_path *p)
{
	struct fs_path np = {0};
	bool again = false;
	uint64_t upto;
	int frc;

	fs_step(fs, FS_STEP_CALLED);
	if (*rc != -ENOENT)
		return false;
	pthread_mutex_lock(&fs->lock);
	/* every place change that started before the failure ends with its
	 * table update (they never wait for requests meanwhile) */
	upto = fs->rename_seq;
	while (fs->renaming && fs->renaming->seq <= upto)
		pthread_cond_wait(&fs->renamed, &fs->lock);
	/* none ended since @p was built: the table and the store agreed on
	 * the node's place all along, and the miss is the node's own. One
	 * did: rebuild and retry, even to the same path (moved there and
	 * back: the miss was in between) */
	if (fs->ns_gen != p->gen &&
	    itab_path_locked(fs, ino, name, false, &np) == 0) {
		struct fs_path old = *p;

		*p = np;
		np = old;
		again = true;
	}
	pthread_mutex_unlock(&fs->lock);
	fs_path_release(&np);
	if (again || !fs->watch || name)
		return again;
	if (!p->path) {
		*rc = -ESTALE;
		return false;
	}
	/* the reverse index misses too while the writer moves the node
	 * between its reads: ask again, a bounded number of times */
	do
		frc = follow_store(fs, ino, p);
	while (frc == -ENOENT && ++p->follows < FS_FOLLOW_MAX);
	if (!frc && ++p->follows <= FS_FOLLOW_MAX)
		return true;
	*rc = frc && frc != -ENOENT ? frc : -ESTALE;
	return false;
}

static struct busy *busy_new(const char *src, const char *dst)
{
	struct busy *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->src = strdup(src);
	b->dst = dst ? strdup(dst) : NULL;
	if (!b->src || (dst && !b->dst)) {
		free(b->src);
		free(b->dst);
		free(b);
		return NULL;
	}
	return b;
}

void fs_rename_start(struct fs *fs, struct fs_renaming *r)
{
	pthread_mutex_lock(&fs->lock);
	r->seq = ++fs->rename_seq;
	r->next = NULL;
	r->prev = fs->renaming_last;
	if (r->prev)
		r->prev->next = r;
	else
		fs->renaming = r;
	fs->renaming_last = r;
	pthread_mutex_unlock(&fs->lock);
	fs_step(fs, FS_STEP_STARTED);
}

void fs_rename_done(struct fs *fs, struct fs_renaming *r)
{
	pthread_mutex_lock(&fs->lock);
	if (r->prev)
		r->prev->next = r->next;
	else
		fs->renaming = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		fs->renaming_last = r->prev;
	fs->ns_gen++;
	pthread_cond_broadcast(&fs->renamed);
	pthread_mutex_unlock(&fs->lock);
}

int fs_busy_begin(struct fs *fs, uint64_t ino1, const char *name1,
		  struct fs_path *p1, uint64_t ino2, const char *name2,
		  struct fs_path *p2, struct busy **out)
{
	struct busy *b;
	int rc;

	for (;;) {
		pthread_rwlock_wrlock(&fs->sublock);
		rc = itab_path(fs, ino1, name1, true, p1);
		if (!rc && p2)
			rc = itab_path(fs, ino2, name2, true, p2);
		if (rc)
			goto out;
		if (!busy_overlap(fs, p1->path) &&
		    !(p2 && busy_overlap(fs, p2->path)))
			break;
		wait_busy(fs);
	}
	b = busy_new(p1->path, p2 ? p2->path : NULL);
	if (!b) {
		rc = -ENOMEM;
		goto out;
	}
	b->next = fs->busy;
	fs->busy = b;
	*out = b;
out:
	pthread_rwlock_unlock(&fs->sublock);
	return rc;
}

int fs_busy_begin_paths(struct fs *fs, const char *src, const char *dst,
			struct busy **out)
{
	struct busy *b = busy_new(src, dst);

	if (!b)
		return -ENOMEM;
	for (;;) {
		pthread_rwlock_wrlock(&fs->sublock);
		if (!busy_overlap(fs, src) && !(dst && busy_overlap(fs, dst)))
			break;
		wait_busy(fs);
	}
	b->next = fs->busy;
	fs->busy = b;
	pthread_rwlock_unlock(&fs->sublock);
	*out = b;
	return 0;
}

void fs_busy_lock(struct fs *fs)
{
	pthread_rwlock_wrlock(&fs->sublock);
}

void fs_busy_end(struct fs *fs, struct busy *b)
{
	struct busy **pp;

	for (pp = &fs->busy; *pp; pp = &(*pp)->next) {
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	}
	pthread_mutex_lock(&fs->busy_mutex);
	fs->busy_gen++;
	pthread_cond_broadcast(&fs->busy_cond);
	pthread_mutex_unlock(&fs->busy_mutex);
	pthread_rwlock_unlock(&fs->sublock);
	free(b->src);
	free(b->dst);
	free(b);
}

void fs_busy_release(struct fs *fs)
{
	struct busy *b, *bn;

	for (b = fs->busy; b; b = bn) {
		bn = b->next;
		free(b->src);
		free(b->dst);
		free(b);
	}
	fs->busy = NULL;
}
