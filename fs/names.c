/*
 * names.c - the operations on names: LOOKUP (with "." and ".." for file
 * handles), FORGET, MKNOD, MKDIR, SYMLINK, READLINK, LINK, UNLINK, RMDIR
 * and RENAME.
 *
 * Races with unlink and rename: a node id is valid until the kernel FORGETs
 * it, so an inode the kernel still knows or has open is never freed under it:
 * losing its last name (unlink, rmdir, rename over it) it becomes an orphan,
 * addressed by number with nlink 0, reclaimed at its last FORGET and release
 * (open and unlink/rename-over are ordered on fs->open_stripe[]);
 * a request that fails with ENOENT because a rename or unlink moved its node
 * waits for the table update and retries with the new path (fs_retry). A
 * folder rename may rewrite a whole branch: it holds the two branches busy
 * (requests inside them wait) and runs with no lock held.
 *
 * RENAME_WHITEOUT (overlayfs's upper layers) leaves a 0:0 character device
 * at the old name in the rename's own batch (tree_rename_whiteout()).
 *
 * Limits: a name is at most TREE_NAME_MAX bytes (ENAMETOOLONG), a symlink
 * target TREE_SYMLINK_MAX.
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

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef RENAME_WHITEOUT
#define RENAME_WHITEOUT (1 << 2)
#endif

/*
 * fs_enter() for child @name of @parent, and its attributes in *a (looked up
 * again if a concurrent rename moved it). On 0 the caller is inside and
 * calls fs_leave(); on an error it is not.
 */
static int enter_child(struct fs *fs, uint64_t parent, const char *name,
		       struct fs_path *p, struct tree_attr *a)
{
	int rc;

	rc = fs_enter(fs, parent, name, p);
	if (rc)
		return rc;
	do
		rc = tree_lookup(fs->tree, p->path, a);
	while (fs_retry(fs, &rc, parent, name, p));
	if (rc)
		fs_leave(fs);
	return rc;
}

/*
 * LOOKUP of "." in node @ino: the kernel asks for a node id it holds no
 * inode for (a file handle: open_by_handle_at, an NFS export), so the table
 * may not know it either: the store finds it by number (tree_find_ino) and
 * the table learns its path (itab_lookup_path; a hard-linked inode is
 * addressed by number). Counts one lookup. A number that leads nowhere (the
 * node was removed) is -ESTALE, never another node.
 */
static int lookup_dot(struct fs *fs, uint64_t ino, struct tree_attr *a)
{
	struct fs_path p = {0};
	char *path = NULL;
	uint64_t got = 0;
	int rc, tries = 0;

	rc = fs_do_getattr(fs, ino, a);
	if (rc == 0 && itab_ref(fs, ino) == 0)
		return 0; /* known: counted where it is */
	do {
		free(path);
		path = NULL;
		rc = fs_enter(fs, TREE_ROOT_INO, NULL, &p);
		if (rc)
			break;
		rc = tree_find_ino(fs->tree, ino, &path, a);
		if (rc == 0 && path) {
			rc = itab_lookup_path(fs, path, &got, &p);
			if (rc == 0 && got != ino) {
				/* renamed over meanwhile: not ours to count */
				uint64_t r = itab_forget(fs, got, 1);

				if (r)
					plog(LOG_WARNING,
					     "lookup by number: "
					     "inode %llu left an orphan",
					     (unsigned long long)r);
				rc = -ENOENT;
			}
		} else if (rc == 0) {
			rc = itab_lookup(fs, ino, 0, "", a->flags);
		}
		fs_leave(fs);
		/* an ancestor renamed in the same moment: once more; a file
		 * rename moved what we read (-EAGAIN): read again */
	} while ((rc == -ENOENT && ++tries < 2) || rc == -EAGAIN);
	free(path);
	fs_path_release(&p);
	return rc == -ENOENT || rc == -EOPNOTSUPP ? -ESTALE : rc;
}

/*
 * LOOKUP of ".." in folder @ino: its parent folder (file handles: the
 * kernel reconnects a folder found by number to the tree). Counts one
 * lookup of the parent.
 */
static int lookup_dotdot(struct fs *fs, uint64_t ino, struct tree_attr *a)
{
	struct fs_path p = {0};
	uint64_t got;
	char *slash;
	int rc;

	rc = fs_enter_path(fs, ino, &p);
	if (rc)
		goto out;
	slash = strrchr(p.buf, '/');
	if (slash == p.buf)
		slash[1] = '\0'; /* a folder of the root, or the root itself */
	else
		*slash = '\0';
	rc = tree_lookup(fs->tree, p.buf, a);
	if (rc == 0 && a->ino != TREE_ROOT_INO) {
		/* folders only: a folder rename waits for fs->sublock */
		rc = itab_lookup_path(fs, p.buf, &got, NULL);
		if (rc == 0 && got != a->ino) {
			itab_forget(fs, got, 1);
			rc = -ENOENT;
		}
	}
	fs_leave(fs);
out:
	fs_path_release(&p);
	return rc == -ENOENT ? -ESTALE : rc;
}

int fs_do_lookup(struct fs *fs, uint64_t parent, const char *name,
		 struct fuse_entry_param *e)
{
	struct tree_attr a;
	struct fs_path p = {0};
	int rc;

	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		rc = name[1] ? lookup_dotdot(fs, parent, &a)
			     : lookup_dot(fs, parent, &a);
		if (rc == 0)
			fill_entry(fs, &a, e);
		return rc;
	}
	if (strlen(name) > TREE_NAME_MAX)
		return -ENAMETOOLONG;
	do {
		rc = enter_child(fs, parent, name, &p, &a);
		if (rc)
			break;
		rc = itab_lookup_read(fs, a.ino, parent, name, a.flags, &p);
		fs_leave(fs);
	} while (rc == -EAGAIN);
	fs_path_release(&p);
	/* the name is not over-long, so the path is: nothing can be there */
	if (rc == -ENAMETOOLONG)
		rc = -ENOENT;
	if (rc == -ENOENT) {
		/* cached negative entry: the kernel remembers the miss */
		memset(e, 0, sizeof(*e));
		e->entry_timeout = fs_watch_negative(fs, parent, name);
		rc = 0;
		goto out;
	}
	if (!rc)
		fill_entry(fs, &a, e);
out:
	return rc;
}

void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	int rc = fs_do_lookup(req_fs(req), parent, name, &e);

	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_entry(req, &e);
}

void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fs *fs = req_fs(req);

	fs_reclaim(fs, itab_forget(fs, ino, nlookup));
	fuse_reply_none(req);
}

void fs_forget_multi(fuse_req_t req, size_t count,
		     struct fuse_forget_data *forgets)
{
	struct fs *fs = req_fs(req);
	size_t i;

	for (i = 0; i < count; i++)
		fs_reclaim(fs,
			   itab_forget(fs, forgets[i].ino, forgets[i].nlookup));
	fuse_reply_none(req);
}

/*
 * Checks that @p, the path of @ino built from the table's place (an inode
 * with one name), still leads to @ino. Errors: -ENOENT, and those of
 * tree_lookup().
 */
static int place_check(struct fs *fs, uint64_t ino, const struct fs_path *p)
{
	struct tree_attr a;
	int rc;

	rc = tree_lookup(fs->tree, p->path, &a);
	if (!rc && a.ino != ino)
		rc = -ENOENT;
	return rc == -ENOTDIR ? -ENOENT : rc;
}

int fs_do_readlink(struct fs *fs, uint64_t ino, char **target)
{
	struct fs_path p = {0};
	int rc;

	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	if (p.path) {
		do
			rc = tree_readlink(fs->tree, p.path, target);
		while (fs_retry(fs, &rc, ino, NULL, &p));
	} else {
		/* a hard-linked symlink: its INODE record holds the target */
		rc = tree_readlink_ino(fs->tree, ino, target);
	}
	fs_leave(fs);
out:
	fs_path_release(&p);
	return rc;
}

void fs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char *target = NULL;
	int rc = fs_do_readlink(req_fs(req), ino, &target);

	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_readlink(req, target);
	free(target);
}

/* ---- creating nodes ----------------------------------------------------- */

/*
 * Creates @name in @parent. Owner from the request; in a set-group-ID folder
 * the group is the folder's and a new folder inherits the bit. The mode is
 * the request's less its umask, or what the folder's default ACL gives
 * (tree_mknode_umask). @opened: a regular file the caller opens at once
 * (CREATE), which a shared writer holds from the commit that makes it
 * (tree_mkfile_held: fs_do_open_new(..., held) then).
 */
int fs_do_mknode(struct fs *fs, const struct fuse_ctx *ctx, uint64_t parent,
		 const char *name, mode_t mode, uint64_t rdev,
		 const char *target, bool opened, struct tree_attr *a)
{
	struct fs_path p = {0};
	int rc;

	if (fs->ro)
		return -EROFS;
	if (strlen(name) > TREE_NAME_MAX)
		return -ENAMETOOLONG;
	rc = fs_enter(fs, parent, name, &p);
	if (rc)
		goto out;
	/* the store gives a set-group-ID folder's group (and bit) */
	do
		rc = opened
			 ? tree_mkfile_held(fs->tree, p.path, mode, ctx->umask,
					    ctx->uid, ctx->gid, a)
			 : tree_mknode_umask(fs->tree, p.path, mode, ctx->umask,
					     ctx->uid, ctx->gid, rdev, target,
					     a);
	while (fs_retry(fs, &rc, parent, name, &p));
	if (!rc)
		rc = itab_lookup(fs, a->ino, parent, name, a->flags);
	fs_leave(fs);
out:
	fs_path_release(&p);
	return rc;
}

static void reply_made(fuse_req_t req, int rc, const struct tree_attr *a)
{
	struct fuse_entry_param e;

	if (rc) {
		reply_err(req, rc);
		return;
	}
	fill_entry(req_fs(req), a, &e);
	fuse_reply_entry(req, &e);
}

void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	      dev_t rdev)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct tree_attr a;
	int rc;

	if ((S_ISCHR(mode) || S_ISBLK(mode)) && ctx->uid != 0)
		rc = -EPERM;
	else if (!S_ISREG(mode) && !S_ISFIFO(mode) && !S_ISSOCK(mode) &&
		 !S_ISCHR(mode) && !S_ISBLK(mode))
		rc = -EINVAL;
	else
		rc = fs_do_mknode(req_fs(req), ctx, parent, name, mode,
				  (S_ISCHR(mode) || S_ISBLK(mode)) ? rdev : 0,
				  NULL, false, &a);
	reply_made(req, rc, &a);
}

void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct tree_attr a;
	int rc = fs_do_mknode(req_fs(req), fuse_req_ctx(req), parent, name,
			      (mode & 07777) | S_IFDIR, 0, NULL, false, &a);

	reply_made(req, rc, &a);
}

void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		const char *name)
{
	struct tree_attr a;
	int rc;

	if (strlen(link) > TREE_SYMLINK_MAX)
		rc = -ENAMETOOLONG;
	else
		rc = fs_do_mknode(req_fs(req), fuse_req_ctx(req), parent, name,
				  S_IFLNK | 0777, 0, link, false, &a);
	reply_made(req, rc, &a);
}

int fs_do_link(struct fs *fs, uint64_t ino, uint64_t newparent,
	       const char *newname, struct tree_attr *a)
{
	struct fs_path *p1 = NULL, *p2 = NULL;
	int rc;

	if (fs->ro)
		return -EROFS;
	if (strlen(newname) > TREE_NAME_MAX)
		return -ENAMETOOLONG;
	p1 = calloc(1, sizeof(*p1));
	p2 = calloc(1, sizeof(*p2));
	if (!p1 || !p2) {
		rc = -ENOMEM;
		goto out;
	}
	rc = fs_enter(fs, newparent, newname, p2);
	if (rc)
		goto out;
	/* an O_TMPFILE file gets its first name (the kernel let it: not
	 * opened O_EXCL) and is no longer an orphan */
	if (itab_has_flag(fs, ino, INODE_TMPFILE)) {
		rc = tree_link_tmp(fs->tree, ino, p2->path, a);
		if (!rc)
			itab_flags(fs, ino, 0, INODE_ORPHAN | INODE_TMPFILE);
		goto counted;
	}
	/*
	 * An inode linked already is found by number, whichever of its names
	 * remain; one with a single name (-ENOENT: no INODE record) by that.
	 * That name must not be inside a branch a folder rename is copying:
	 * a copy made before the link would keep the node as it was (not a
	 * hard-link stub) while the INODE record counts it as a link. So the
	 * subtree lock is taken again for both paths.
	 */
	rc = tree_link_ino(fs->tree, ino, p2->path, a);
	if (rc == -ENOENT) {
		fs_leave(fs);
		rc = fs_enter2(fs, ino, NULL, p1, newparent, newname, p2);
		if (rc)
			goto out;
		rc = place_check(fs, ino, p1);
		if (!rc)
			rc = tree_link(fs->tree, p1->path, p2->path, a);
	}
counted:
	if (!rc)
		rc = itab_lookup(fs, a->ino, newparent, newname, a->flags);
	fs_leave(fs);
out:
	fs_path_release(p1);
	fs_path_release(p2);
	free(p1);
	free(p2);
	return rc;
}

void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
	     const char *newname)
{
	struct tree_attr a;
	int rc = fs_do_link(req_fs(req), ino, newparent, newname, &a);

	reply_made(req, rc, &a);
}

/* ---- removing and renaming ---------------------------------------------- */

/*
 * After the node @a (before the change) lost its name @name in @parent: the
 * store kept it as orphan @orphan (it was in use), or a hard-linked inode
 * with links left lives on by number (and under its other names), or it is
 * gone and its entry is stale. An orphan the kernel let go of meanwhile is
 * reclaimed here.
 */
static void lost_name(struct fs *fs, const struct tree_attr *a, uint64_t parent,
		      const char *name, uint64_t orphan)
{
	if (orphan) {
		fs_reclaim(fs, itab_orphaned(fs, orphan));
	} else if ((a->flags & TREE_F_LINKED) && a->nlink > 1 &&
		   !S_ISDIR(a->mode)) {
		itab_flags(fs, a->ino, INODE_LINKED, 0);
		itab_unplace(fs, a->ino, parent, name);
	} else {
		itab_flags(fs, a->ino, INODE_STALE, 0);
	}
}

/*
 * unlink (@dir false) and rmdir (@dir true) of @name in @parent. A node the
 * kernel still knows or has open becomes an orphan: it keeps answering by
 * number until its last FORGET and release (a node id lives until FORGET).
 */
int fs_do_remove(struct fs *fs, uint64_t parent, const char *name, bool dir)
{
	uint64_t orphan = 0;
	struct tree_attr a;
	struct fs_path p = {0};
	struct fs_renaming r;
	pthread_mutex_t *m;
	unsigned flags;
	int rc;

	if (fs->ro)
		return -EROFS;
	rc = enter_child(fs, parent, name, &p, &a);
	if (rc)
		goto out;
	m = open_stripe(fs, a.ino);
	pthread_mutex_lock(m);
	/* a request on the inode that fails meanwhile waits to see it orphaned
	 * (fs_retry); it is marked before an open waiting on the stripe looks */
	fs_rename_start(fs, &r);
	flags = itab_in_use(fs, a.ino) ? TREE_KEEP_ORPHAN : 0;
	rc = tree_remove(fs->tree, p.path, a.ino, dir, flags, &orphan);
	if (rc == -ENOSPC && flags && !dir && !itab_is_open(fs, a.ino))
		/* a full store takes deletes only: a file the kernel knows
		 * but nobody has open is freed now, not kept as an orphan */
		rc = tree_remove(fs->tree, p.path, a.ino, false, 0, &orphan);
	fs_step(fs, FS_STEP_COMMITTED);
	if (!rc)
		lost_name(fs, &a, parent, name, orphan);
	fs_rename_done(fs, &r);
	pthread_mutex_unlock(m);
	fs_leave(fs);
out:
	fs_path_release(&p);
	return rc;
}

void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_status(req, fs_do_remove(req_fs(req), parent, name, false));
}

void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_status(req, fs_do_remove(req_fs(req), parent, name, true));
}

/* Moves the table's name of @a from parent/name to newparent/newname. */
static void moved(struct fs *fs, const struct tree_attr *a, uint64_t parent,
		  const char *name, uint64_t newparent, const char *newname)
{
	if ((a->flags & TREE_F_LINKED) && !S_ISDIR(a->mode))
		itab_replace_place(fs, a->ino, parent, name, newparent,
				   newname);
	else
		itab_move(fs, a->ino, newparent, newname);
}

/* The table after a successful rename of @sa (at parent/name) to
 * newparent/newname, which held @da (ino 0: nothing). */
static void renamed(struct fs *fs, const struct tree_attr *sa,
		    const struct tree_attr *da, unsigned flags, uint64_t parent,
		    const char *name, uint64_t newparent, const char *newname,
		    uint64_t orphan)
{
	if (da->ino == sa->ino)
		return; /* two links of one inode: nothing moved */
	if (da->ino && !(flags & TREE_RENAME_EXCHANGE))
		lost_name(fs, da, newparent, newname, orphan);
	moved(fs, sa, parent, name, newparent, newname);
	if (da->ino && (flags & TREE_RENAME_EXCHANGE))
		moved(fs, da, newparent, newname, parent, name);
}

/* tree_rename(), or with RENAME_WHITEOUT in @flags tree_rename_whiteout()
 * (the whiteout owned by @ctx's caller). */
static int do_rename(struct fs *fs, const struct fuse_ctx *ctx,
		     const struct fs_path *p1, const struct fs_path *p2,
		     unsigned tflags, unsigned flags, uint64_t *orphan)
{
	if (flags & RENAME_WHITEOUT)
		return tree_rename_whiteout(fs->tree, p1->path, p2->path,
					    tflags, ctx->uid, ctx->gid, orphan);
	return tree_rename(fs->tree, p1->path, p2->path, tflags, orphan);
}

/* rename(2) and renameat2(2); RENAME_WHITEOUT leaves a whiteout (a 0:0
 * character device) owned by @ctx's caller, privileged or not: Linux lets
 * anyone make whiteouts since 5.8 (ext4 does). */
int fs_do_rename(struct fs *fs, const struct fuse_ctx *ctx, uint64_t parent,
		 const char *name, uint64_t newparent, const char *newname,
		 unsigned int flags)
{
	struct fs_path *p1 = NULL, *p2 = NULL;
	struct tree_attr sa, da;
	struct fs_renaming r;
	unsigned tflags = 0;
	uint64_t orphan = 0;
	struct busy *b = NULL;
	pthread_mutex_t *m = NULL;
	bool entered = false;
	int rc;

	if (fs->ro)
		return -EROFS;
	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT))
		return -EINVAL;
	if ((flags & RENAME_EXCHANGE) &&
	    (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT)))
		return -EINVAL;
	if (strlen(newname) > TREE_NAME_MAX)
		return -ENAMETOOLONG;
	if (flags & RENAME_NOREPLACE)
		tflags |= TREE_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		tflags |= TREE_RENAME_EXCHANGE;
	p1 = calloc(1, sizeof(*p1));
	p2 = calloc(1, sizeof(*p2));
	if (!p1 || !p2) {
		rc = -ENOMEM;
		goto out;
	}
	rc = fs_enter2(fs, parent, name, p1, newparent, newname, p2);
	if (rc)
		goto out;
	entered = true;
	rc = tree_lookup(fs->tree, p1->path, &sa);
	if (rc)
		goto out;
	rc = tree_lookup(fs->tree, p2->path, &da);
	if (rc == -ENOENT)
		memset(&da, 0, sizeof(da));
	else if (rc)
		goto out;
	rc = 0;

	if (S_ISDIR(sa.mode) || (da.ino && S_ISDIR(da.mode))) {
		/*
		 * A folder: its rename may rewrite a whole branch. Hold the
		 * two branches busy (requests inside them wait) and run it
		 * with no lock held, so the rest of the drive keeps going.
		 */
		fs_leave(fs);
		entered = false;
		rc = fs_busy_begin(fs, parent, name, p1, newparent, newname, p2,
				   &b);
		if (rc)
			goto out;
		/* the branches are ours now: look again, things may have
		 * changed while we were not holding anything */
		rc = tree_lookup(fs->tree, p1->path, &sa);
		if (!rc) {
			rc = tree_lookup(fs->tree, p2->path, &da);
			if (rc == -ENOENT) {
				memset(&da, 0, sizeof(da));
				rc = 0;
			}
		}
		if (!rc) {
			if (da.ino && !(tflags & TREE_RENAME_EXCHANGE) &&
			    itab_in_use(fs, da.ino))
				tflags |= TREE_KEEP_ORPHAN;
			rc = do_rename(fs, ctx, p1, p2, tflags, flags, &orphan);
		}
		fs_busy_lock(fs);
		if (!rc)
			renamed(fs, &sa, &da, tflags, parent, name, newparent,
				newname, orphan);
		fs_busy_end(fs, b);
		goto out;
	}

	if (da.ino && !(tflags & TREE_RENAME_EXCHANGE)) {
		m = open_stripe(fs, da.ino);
		pthread_mutex_lock(m);
		if (itab_in_use(fs, da.ino))
			tflags |= TREE_KEEP_ORPHAN;
	}
	fs_rename_start(fs, &r);
	rc = do_rename(fs, ctx, p1, p2, tflags, flags, &orphan);
	fs_step(fs, FS_STEP_COMMITTED);
	if (!rc)
		renamed(fs, &sa, &da, tflags, parent, name, newparent, newname,
			orphan);
	if (m)
		pthread_mutex_unlock(m);
	fs_rename_done(fs, &r);
out:
	if (entered)
		fs_leave(fs);
	fs_path_release(p1);
	fs_path_release(p2);
	free(p1);
	free(p2);
	return rc;
}

void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
	       fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	reply_status(req, fs_do_rename(req_fs(req), fuse_req_ctx(req), parent,
				       name, newparent, newname, flags));
}
