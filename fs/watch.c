/*
 * watch.c - a -o ro mount of a store on etcd follows the writer's changes:
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
 *  - everything may have changed (the watch started, or restarted after it
 *    lost track: a dropped stream, a compacted revision): every entry and
 *    inode the table knows (all the kernel can have cached but negative
 *    entries, below).
 * The daemon's other cache, the listing cookies (dircookie.h), needs
 * nothing: a cookie stands for a name, and a listing resumed after a name
 * the writer removed or added meanwhile is still right.
 * The writer, and a mount of a RocksDB store, do not watch: nobody else
 * writes their drive.
 *
 * Costs: the watch thread looks the folder of each changed path up in the
 * store once per run of changes in one folder (a rename of a 10,000-entry
 * folder costs a few look-ups, not 10,000).
 *
 * Limits: a name this mount looked up and did not find, that the writer
 * created while the watch had lost track, stays unseen until its negative
 * entry times out (-o timeout); a deleted node's inode is not known (the
 * event has no value): a file open here whose name the writer removed keeps
 * its table place, its requests find no node there and answer ESTALE
 * (fs_retry(): by number instead if a hard link of it is left), and the
 * kernel keeps its attributes until they time out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"
#include "log.h"

struct fs_watch {
	struct fs *fs;
	struct tree_watch *tw;
	/* on the watch thread only: the folder of the last change, and its
	 * inode then (0: not found); valid while the changes stay in it */
	char *dir;
	uint64_t dir_ino;
};

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

/* Inode of folder @dir (@len bytes of a path), through the one-folder
 * cache. */
static uint64_t dir_ino(struct fs_watch *w, const char *dir, size_t len)
{
	struct tree_attr a;
	char *d;

	if (w->dir && strlen(w->dir) == len && !memcmp(w->dir, dir, len))
		return w->dir_ino;
	d = strndup(dir, len);
	if (!d)
		return 0;
	free(w->dir);
	w->dir = d;
	w->dir_ino = tree_lookup(w->fs->tree, d, &a) ? 0 : a.ino;
	return w->dir_ino;
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
		forget_all(fs);
		return;
	}
	if (!c->path) {
		fuse_lowlevel_notify_inval_inode(fs->se, c->ino, 0, 0);
		return;
	}
	slash = strrchr(c->path, '/');
	if (!slash || !slash[1]) { /* the root: its attributes */
		fuse_lowlevel_notify_inval_inode(fs->se, TREE_ROOT_INO, 0, 0);
		return;
	}
	name = slash + 1;
	parent = dir_ino(w, c->path, slash == c->path ? 1 : slash - c->path);
	fs_inval_name(fs, parent, name);
	if (!c->ino)
		return;
	fuse_lowlevel_notify_inval_inode(fs->se, c->ino, 0, 0);
	if (parent && itab_knows(fs, c->ino) &&
	    !itab_has_flag(fs, c->ino, INODE_LINKED) &&
	    itab_attach_path(fs, w->dir, &parent) == 0)
		itab_move(fs, c->ino, parent, name);
}

int fs_watch_start(struct fs *fs)
{
	struct fs_watch *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	w->fs = fs;
	rc = tree_watch(fs->tree, on_change, w, &w->tw);
	if (rc) {
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
	free(w->dir);
	free(w);
	fs->watch = NULL;
}
