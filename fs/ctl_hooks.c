/*
 * ctl_hooks.c - pathfsctl commands run by the daemon on its mounted drive
 * (ctl_env.begin/end, see control.c): requests are held off the branch a
 * command changes, then the inode table and the kernel's caches are fixed
 * (the daemon is otherwise the only writer of the drive, so the kernel
 * caches entries and attributes for fs->timeout seconds).
 *
 * fs_inval_path() is also how a -o ro mount forgets a path another process
 * changed (watch.c).
 *
 * Limits: one command at a time (fs->ctl_mutex); an open file of a removed
 * branch closed while the command ran stays an orphan until the next mount.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_i.h"
#include "log.h"
#include "ops_i.h"

/* Splits @path into its folder (*dir, malloc'd: caller frees) and last name
 * (returned, borrowed from @path). NULL for "/" and when out of memory. */
static const char *split(const char *path, char **dir)
{
	const char *slash = strrchr(path, '/');

	*dir = NULL;
	if (!slash || !slash[1])
		return NULL;
	*dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
	return *dir ? slash + 1 : NULL;
}

static uint64_t ino_at(struct fs *fs, const char *path)
{
	struct tree_attr a;

	if (!path || tree_lookup(fs->tree, path, &a))
		return 0;
	return a.ino;
}

void fs_inval_name(struct fs *fs, uint64_t parent, const char *name)
{
	if (!fs->se || !parent)
		return;
	fuse_lowlevel_notify_inval_entry(fs->se, parent, name, strlen(name));
	/* attributes and the cached listing (offset 0, length 0: all) */
	fuse_lowlevel_notify_inval_inode(fs->se, parent, 0, 0);
}

void fs_inval_path(struct fs *fs, const char *path)
{
	char *dir = NULL;
	const char *name;

	if (path && fs->se && (name = split(path, &dir)))
		fs_inval_name(fs, ino_at(fs, dir), name);
	free(dir);
}

/*
 * Tells the kernel to forget the attributes of every hard-linked inode it
 * knows: a branch command that removed or cloned one of its names changed its
 * link count, also as seen through names outside the branch.
 */
static void inval_linked(struct fs *fs)
{
	uint64_t *v = NULL;
	size_t i, n = 0;

	if (!fs->se || itab_flagged(fs, INODE_LINKED, &v, &n))
		return;
	for (i = 0; i < n; i++)
		fuse_lowlevel_notify_inval_inode(fs->se, v[i], -1, 0);
	free(v);
}

void fs_ctl_begin(void *ctx, struct tree *t, const char *path,
		  const char *newpath)
{
	struct fs *fs = ctx;

	pthread_mutex_lock(&fs->ctl_mutex);
	fs->ctl_busy = NULL;
	fs->ctl_ino[0] = fs->ctl_ino[1] = 0;
	if (t != fs->tree || !path)
		return;
	if (fs_busy_begin_paths(fs, path, newpath, &fs->ctl_busy)) {
		plog(LOG_ERR, "cannot hold requests off %s: out of memory",
		     path);
		fs->ctl_busy = NULL;
		return;
	}
	fs->ctl_ino[0] = ino_at(fs, path);
	fs->ctl_ino[1] = ino_at(fs, newpath);
	/* fs_ctl_end tells the kernel: the watch need not (a shared writer) */
	tree_watch_quiet(fs->tree, true);
}

void fs_ctl_end(void *ctx, struct tree *t, const char *path,
		const char *newpath)
{
	char *dir = NULL;
	struct fs *fs = ctx;
	uint64_t after0, after1, parent;
	const char *name;

	tree_watch_quiet(fs->tree, false);
	if (!fs->ctl_busy)
		goto inval;
	after0 = ino_at(fs, path);
	after1 = ino_at(fs, newpath);
	fs_busy_lock(fs);
	if (newpath && fs->ctl_ino[0] && after1 == fs->ctl_ino[0] &&
	    (name = split(newpath, &dir)) &&
	    itab_attach_path(fs, dir, &parent) == 0) {
		itab_move(fs, fs->ctl_ino[0], parent, name);
	} else if (fs->ctl_ino[0] && after0 != fs->ctl_ino[0]) {
		/*
		 * The store kept the branch's open files as orphans (the open
		 * check, see main.c) and freed the rest; the open ones are
		 * freed at their last close from now on. One closed while the
		 * command ran stays an orphan until the next mount reclaims it.
		 */
		itab_orphan_open_below(fs, fs->ctl_ino[0]);
		itab_flags(fs, fs->ctl_ino[0], INODE_STALE, 0);
	}
	if (fs->ctl_ino[1] && after1 != fs->ctl_ino[1]) {
		itab_orphan_open_below(fs, fs->ctl_ino[1]);
		itab_flags(fs, fs->ctl_ino[1], INODE_STALE, 0);
	}
	fs_busy_end(fs, fs->ctl_busy);
	fs->ctl_busy = NULL;
inval:
	if (t == fs->tree || newpath) {
		fs_inval_path(fs, path);
		fs_inval_path(fs, newpath);
		inval_linked(fs);
	}
	pthread_mutex_unlock(&fs->ctl_mutex);
	free(dir);
}
