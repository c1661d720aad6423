/*
 * watch.c - a -o ro mount of a store on etcd or DynamoDB follows the
 * writer's changes (a -o shared one the other writers'):
 * it watches its drive (tree_watch(), store/watch.c) and, for each change,
 * makes the kernel forget what it cached (it otherwise keeps entries and
 * attributes for fs->timeout seconds, listings and file pages until told)
 * and keeps the inode table's places right:
 *  - a node put or deleted at PATH: the entry of its name in its folder and
 *    the folder's attributes and listing (fs_inval_path's work, ctl_hooks.c);
 *    for a node put, its inode's attributes and pages, and, if the table
 *    knows that inode under another place (a rename), it moves there, so
 *    requests on it (an open file, a shell's current folder) build the new
 *    path;
 *  - an inode's content, extended attributes or INODE record: its
 *    attributes and pages;
 *  - a writer joins the drive while this one was alone on it: the reclaim
 *    thread publishes this one's holds (fs_reclaim_share);
 *  - everything may have changed (the watch started, or restarted after it
 *    lost track: a dropped stream, a compacted revision): every entry and
 *    inode the table knows, and the negative entries of the root folder.
 *    Invalidating a folder's entry drops the kernel's unused dentries below
 *    it, negative ones too (d_invalidate), so the root's are the only
 *    negative entries that need their names: a lookup that finds nothing in
 *    the root tells fs_watch_negative() (names.c), which keeps the name
 *    while the kernel may cache the miss (-o timeout), up to NEG_MAX names;
 *    past that, a miss in the root is cached for NEG_FULL_TIMEOUT only.
 * The daemon's other cache, the listing cookies (dircookie.h), needs
 * nothing: a cookie stands for a name, and a listing resumed after a name
 * the writer removed or added meanwhile is still right.
 * A -o shared mount (one writer of several) watches the same way, for the
 * other writers' changes. Its own are not handed back when its request
 * threads made them (tree_watch_quiet: the replies told the kernel, as the
 * sole writer's do), nor a pathfsctl branch command's through the daemon
 * (its end tells the kernel, ctl_hooks.c); those of its other threads are
 * (the takeover of a dead writer's rename): applied already,
 * such a change costs the kernel a forgotten entry or page cache, and a
 * node put that names a place the table does not have for it moves the
 * inode only if the store still has it there (a quick second rename of its
 * own has moved it on since: the table is right). The sole writer, and a
 * mount of a RocksDB store, do not watch: nobody else writes their drive.
 *
 * Costs: the watch thread looks the folder of each changed path up in the
 * store once per run of changes in one folder within one commit (a rename
 * of a 10,000-entry folder costs a look-up per batch, not 10,000). Not
 * across commits: a request's change that the watch was not handed may
 * have put another folder at that path in between.
 *
 * Limits: a deleted node's inode is not known (the
 * event has no value): a file open here whose name the writer removed keeps
 * its table place, its requests find no node there and answer ESTALE
 * (fs_retry(): by number instead if a hard link of it is left), and the
 * kernel keeps its attributes until they time out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_i.h"
#include "log.h"

/* names of root misses remembered at most; past that, how long (s) the
 * kernel may cache a miss in the root */
#define NEG_MAX		 4096
#define NEG_FULL_TIMEOUT 1.0

/* A miss in the root folder the kernel may cache until @until. */
struct neg {
	char *name;
	time_t until; /* CLOCK_MONOTONIC seconds */
};

struct fs_watch {
	struct fs *fs;
	struct tree_watch *tw;
	/* the root's misses, oldest first (a ring); protected by neg_lock */
	pthread_mutex_t neg_lock;
	struct neg neg[NEG_MAX];
	size_t neg_first, neg_count;
	/* on the watch thread only: the folder of the last change, and its
	 * inode then (0: not found), valid while the changes stay in it and
	 * in its commit, of revision dir_rev */
	char *dir;
	uint64_t dir_ino;
	long long dir_rev;
};

static time_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* Caller holds w->neg_lock. Drops the oldest remembered miss. */
static void neg_drop_first(struct fs_watch *w)
{
	free(w->neg[w->neg_first].name);
	w->neg[w->neg_first].name = NULL;
	w->neg_first = (w->neg_first + 1) % NEG_MAX;
	w->neg_count--;
}

double fs_watch_negative(struct fs *fs, uint64_t parent, const char *name)
{
	struct fs_watch *w = fs->watch;
	double timeout = fs->timeout;
	time_t now;
	char *copy;

	if (!w || parent != TREE_ROOT_INO)
		return timeout;
	copy = strdup(name);
	now = now_s();
	pthread_mutex_lock(&w->neg_lock);
	while (w->neg_count && w->neg[w->neg_first].until < now)
		neg_drop_first(w);
	if (copy && w->neg_count < NEG_MAX) {
		struct neg *n =
		    &w->neg[(w->neg_first + w->neg_count) % NEG_MAX];

		n->name = copy;
		n->until =
		    now + 1 + (time_t)(fs->timeout < 1e9 ? fs->timeout : 1e9);
		w->neg_count++;
		copy = NULL;
	} else if (timeout > NEG_FULL_TIMEOUT) {
		timeout = NEG_FULL_TIMEOUT;
	}
	pthread_mutex_unlock(&w->neg_lock);
	free(copy);
	return timeout;
}

/* Makes the kernel forget the root's misses it may still cache. */
static void forget_negative(struct fs_watch *w)
{
	struct fs *fs = w->fs;

	pthread_mutex_lock(&w->neg_lock);
	while (w->neg_count) {
		const char *name = w->neg[w->neg_first].name;

		fuse_lowlevel_notify_inval_entry(fs->se, TREE_ROOT_INO, name,
						 strlen(name));
		neg_drop_first(w);
	}
	pthread_mutex_unlock(&w->neg_lock);
}

/* Makes the kernel forget every entry and inode the table knows. */
static void forget_all(struct fs *fs)
{
	struct itab_place *v = NULL;
	size_t i, n = 0;

	if (itab_places(fs, &v, &n)) {
		plog(LOG_ERR, "watch: out of memory: the kernel keeps what it "
			      "cached until it times out");
		return;
	}
	for (i = 0; i < n; i++) {
		if (v[i].parent)
			fuse_lowlevel_notify_inval_entry(
			    fs->se, v[i].parent, v[i].name, strlen(v[i].name));
		fuse_lowlevel_notify_inval_inode(fs->se, v[i].ino, 0, 0);
	}
	itab_places_free(v, n);
}

/* Inode of folder @dir (@len bytes of a path) as a change of commit @rev
 * found it, through the one-folder cache. */
static uint64_t dir_ino(struct fs_watch *w, const char *dir, size_t len,
			long long rev)
{
	struct tree_attr a;
	char *d;

	if (w->dir && w->dir_rev == rev && strlen(w->dir) == len &&
	    !memcmp(w->dir, dir, len))
		return w->dir_ino;
	d = strndup(dir, len);
	if (!d)
		return 0;
	free(w->dir);
	w->dir = d;
	w->dir_rev = rev;
	w->dir_ino = tree_lookup(w->fs->tree, d, &a) ? 0 : a.ino;
	return w->dir_ino;
}

void fs_watch_moved(struct fs *fs, uint64_t ino, const char *dir,
		    const char *name)
{
	struct fs_renaming r;
	uint64_t parent;

	/* as a rename here: a LOOKUP that read the node at its old place
	 * before the writer moved it does not put that place back after
	 * this (itab_lookup_read), it reads again */
	fs_rename_start(fs, &r);
	if (itab_attach_path(fs, dir, &parent) == 0)
		itab_move(fs, ino, parent, name);
	fs_rename_done(fs, &r);
}

/* A shared writer's check of a node put before it moves an inode: the
 * change may be its own, older than a rename it made since. */
static bool still_there(struct fs *fs, const struct tree_change *c)
{
	struct tree_attr a;

	return tree_lookup(fs->tree, c->path, &a) == 0 && a.ino == c->ino;
}

static void on_change(void *ctx, const struct tree_change *c)
{
	struct fs_watch *w = ctx;
	struct fs *fs = w->fs;
	const char *slash, *name;
	uint64_t parent;

	if (!c) {
		free(w->dir);
		w->dir = NULL;
		itab_changed_elsewhere(fs, 0);
		forget_negative(w);
		forget_all(fs);
		return;
	}
	if (c->share) { /* a writer joins, this one alone so far */
		fs_reclaim_share(fs);
		return;
	}
	if (!c->path) {
		itab_changed_elsewhere(fs, c->ino);
		fuse_lowlevel_notify_inval_inode(fs->se, c->ino, 0, 0);
		return;
	}
	slash = strrchr(c->path, '/');
	if (!slash || !slash[1]) { /* the root: its attributes */
		itab_changed_elsewhere(fs, TREE_ROOT_INO);
		fuse_lowlevel_notify_inval_inode(fs->se, TREE_ROOT_INO, 0, 0);
		return;
	}
	name = slash + 1;
	parent =
	    dir_ino(w, c->path, slash == c->path ? 1 : slash - c->path, c->rev);
	fs_inval_name(fs, parent, name);
	if (!c->ino)
		return;
	itab_changed_elsewhere(fs, c->ino);
	fuse_lowlevel_notify_inval_inode(fs->se, c->ino, 0, 0);
	if (parent && itab_knows(fs, c->ino) &&
	    !itab_has_flag(fs, c->ino, INODE_LINKED) &&
	    (!fs->shared || still_there(fs, c)))
		fs_watch_moved(fs, c->ino, w->dir, name);
}

int fs_watch_start(struct fs *fs)
{
	struct fs_watch *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	w->fs = fs;
	pthread_mutex_init(&w->neg_lock, NULL);
	rc = tree_watch(fs->tree, on_change, w, &w->tw);
	if (rc) {
		pthread_mutex_destroy(&w->neg_lock);
		free(w);
		return rc;
	}
	fs->watch = w;
	return 0;
}

void fs_watch_stop(struct fs *fs)
{
	struct fs_watch *w = fs->watch;

	if (!w)
		return;
	tree_watch_stop(w->tw);
	while (w->neg_count)
		neg_drop_first(w);
	pthread_mutex_destroy(&w->neg_lock);
	free(w->dir);
	free(w);
	fs->watch = NULL;
}
