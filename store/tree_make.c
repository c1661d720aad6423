/*
 * tree_make.c - creating nodes: tree_mknode() (files, folders, symlinks,
 * devices, FIFOs, sockets), tree_mktmp() (an O_TMPFILE file: an orphan from
 * birth), hard links (tree_link*()) and the whiteout a RENAME_WHITEOUT
 * leaves (tree_batch_whiteout(): tree_rename.c's one batch, or journal.c's
 * final one).
 *
 * A new node is one batch: its key, its PARENT record, the parent
 * folder's mtime/ctime/nlink, and the ACLs it inherits from a folder with a
 * default ACL (acl.c; without one the creator's umask applies). A file's
 * first hard link moves its attributes to INODE#ino and leaves stubs at
 * both names (tree.c's overview). For several writers of one drive each
 * of these commits is conditioned on what it read and runs again on a
 * conflict (tree_track): a link of a name another writer unlinks fails
 * with ENOENT, never names an inode whose record is gone.
 *
 * Limits: a hard-linked inode has at most TREE_LINK_MAX names; folders are
 * never hard-linked; an orphan other than tree_mktmp()'s never gets a name
 * back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acl_i.h"
#include "batch_i.h"
#include "branch_lock_i.h"
#include "drive_i.h"
#include "flags_i.h"
#include "hold_i.h"
#include "parent_i.h"
#include "tree_i.h"

/* 1 if a key exists at @path, 0 if not, or -EIO. */
static int node_exists(struct tree *t, const char *path)
{
	struct sbuf k = {0};
	char *val = NULL;
	size_t vlen;
	int rc;

	rc = lock_check_path(t, path);
	if (rc)
		return rc;
	key_node(&k, t->name, path);
	rc = kv_get(t->store->kv, k.buf, k.len, &val, &vlen);
	free(val);
	sbuf_release(&k);
	if (rc == -ENOENT)
		return 0;
	return rc ? rc : 1;
}

/* Checks @mode/@target of a new node; sets *type. */
static int check_new_node(mode_t mode, const char *target, mode_t *type)
{
	mode_t ty = mode & S_IFMT;

	if (target) {
		if (ty && ty != S_IFLNK)
			return -EINVAL;
		if (!target[0])
			return -ENOENT;
		if (strlen(target) > TREE_SYMLINK_MAX)
			return -ENAMETOOLONG;
		*type = S_IFLNK;
		return 0;
	}
	if (ty == 0)
		ty = S_IFREG;
	switch (ty) {
	case S_IFDIR:
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
	case S_IFCHR:
	case S_IFBLK:
		*type = ty;
		return 0;
	default:
		return -EINVAL; /* including a symlink without a target */
	}
}

void tree_inherit_group(const struct tree_attr *dir, struct tree_attr *a)
{
	if (!(dir->mode & S_ISGID))
		return;
	a->gid = dir->gid;
	if (S_ISDIR(a->mode))
		a->mode |= S_ISGID;
}

int tree_batch_whiteout(struct tree *t, struct kv_batch *b, const char *path,
			const struct whiteout *w, int64_t now)
{
	char *pp = path_parent(path);
	struct node pn = {0};
	struct tree_attr a = {0};
	int rc;

	rc = tree_get_node(t, pp, &pn, false);
	if (rc == 0 && !S_ISDIR(pn.a.mode))
		rc = -ENOTDIR;
	if (rc)
		goto out;
	a.ino = w->ino;
	a.mode = S_IFCHR; /* the kernel's WHITEOUT_MODE, WHITEOUT_DEV 0 */
	a.uid = w->uid;
	a.gid = w->gid;
	tree_inherit_group(&pn.a, &a);
	a.nlink = 1;
	a.atime_ns = a.mtime_ns = a.ctime_ns = now;
	tree_batch_put_node(t, b, path, &a, NULL);
	parent_batch_put(t, b, a.ino, pn.a.ino, path);
out:
	node_release(&pn);
	free(pp);
	return rc;
}

int tree_mknode(struct tree *t, const char *path, mode_t mode, uid_t uid,
		gid_t gid, uint64_t rdev, const char *target,
		struct tree_attr *out)
{
	return tree_mknode_umask(t, path, mode, 0, uid, gid, rdev, target, out);
}

/* tree_mknode_umask() once: its reads and its one commit. */
static int mknode_once(struct tree *t, const char *path, mode_t mode,
		       mode_t umask, uid_t uid, gid_t gid, uint64_t rdev,
		       const char *target, bool held, struct tree_attr *out)
{
	char *parent = NULL;
	struct node pn = {0};
	struct kv_batch *b = NULL;
	struct tree_attr a = {0};
	bool ns = false, st = false;
	mode_t type;
	int64_t now;
	int rc;

	rc = path_check(path);
	if (rc)
		goto out;
	if (is_root(path)) {
		rc = -EEXIST;
		goto out;
	}
	rc = check_new_node(mode, target, &type);
	if (rc)
		goto out;
	parent = path_parent(path);
	pthread_mutex_lock(&t->ns_lock);
	ns = true;
	/* the parent is read once, under its stripe (it is rewritten) */
	rc = tree_lock_nodes(t, parent, &pn, false,
			     tree_dir_hint_get(t, parent), NULL, NULL, 0);
	if (rc)
		goto out;
	st = true;
	if (!S_ISDIR(pn.a.mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	tree_dir_hint_set(t, parent, pn.a.ino);
	rc = node_exists(t, path);
	if (rc) {
		rc = rc > 0 ? -EEXIST : rc;
		goto out;
	}
	rc = flags_may_add(&pn.a);
	if (rc)
		goto out;
	rc = tree_alloc_ino(t, &a.ino);
	if (rc)
		goto out;
	now = tree_now_ns();
	a.mode = type == S_IFLNK ? (S_IFLNK | 0777) : (type | (mode & 07777));
	a.uid = uid;
	a.gid = gid;
	tree_inherit_group(&pn.a, &a);
	flags_inherit(&pn.a, &a);
	a.size = target ? strlen(target) : 0;
	a.nlink = S_ISDIR(type) ? 2 : 1;
	a.rdev = (S_ISCHR(type) || S_ISBLK(type)) ? rdev : 0;
	a.atime_ns = a.mtime_ns = a.ctime_ns = now;
	b = kv_batch_new(t->store->kv);
	rc = acl_batch_inherit(t, b, &pn.a, &a, umask);
	if (rc)
		goto out;
	rc = tree_dir_touch_node(t, b, parent, &pn, S_ISDIR(type) ? 1 : 0, now);
	if (rc)
		goto out;
	tree_batch_put_node(t, b, path, &a, target);
	parent_batch_put(t, b, a.ino, pn.a.ino, path);
	if (held)
		hold_batch_new(t, b, a.ino);
	rc = tree_commit(t, b);
	if (rc == 0)
		rc = flags_sync(t, pn.a.flags);
	if (rc == 0 && out)
		*out = a;
out:
	if (st)
		tree_unlock_inodes(t, pn.a.ino, 0, 0, 0);
	if (ns)
		pthread_mutex_unlock(&t->ns_lock);
	kv_batch_free(b);
	node_release(&pn);
	free(parent);
	return rc;
}

int tree_mknode_umask(struct tree *t, const char *path, mode_t mode,
		      mode_t umask, uid_t uid, gid_t gid, uint64_t rdev,
		      const char *target, struct tree_attr *out)
{
	return TREE_TRACKED(t, mknode_once(t, path, mode, umask, uid, gid, rdev,
					   target, false, out));
}

int tree_mkfile_held(struct tree *t, const char *path, mode_t mode,
		     mode_t umask, uid_t uid, gid_t gid, struct tree_attr *out)
{
	return TREE_TRACKED(t,
			    mknode_once(t, path, S_IFREG | (mode & 07777),
					umask, uid, gid, 0, NULL, true, out));
}

/* tree_mktmp() once: its reads and its one commit. */
static int mktmp_once(struct tree *t, const char *dir, mode_t mode,
		      mode_t umask, uid_t uid, gid_t gid, struct tree_attr *out)
{
	struct node pn = {0};
	struct kv_batch *b = NULL;
	struct tree_attr a = {0};
	struct sbuf k = {0}, v = {0};
	int rc;

	rc = path_check(dir);
	if (rc)
		return rc;
	rc = tree_get_node(t, dir, &pn, false);
	if (rc == 0 && !S_ISDIR(pn.a.mode))
		rc = -ENOTDIR;
	if (rc == 0)
		rc = flags_may_add(&pn.a);
	if (rc == 0)
		rc = tree_alloc_ino(t, &a.ino);
	/* an orphan from the start: INODE record (nlink 0) and ORPHAN key in
	 * one batch, as tree_batch_remove() leaves a file unlinked while open */
	a.flags = TREE_F_LINKED;
	a.mode = S_IFREG | (mode & 07777);
	a.uid = uid;
	a.gid = gid;
	if (rc == 0) {
		tree_inherit_group(&pn.a, &a);
		flags_inherit(&pn.a, &a);
	}
	if (rc) {
		node_release(&pn);
		return rc;
	}
	a.atime_ns = a.mtime_ns = a.ctime_ns = tree_now_ns();
	b = kv_batch_new(t->store->kv);
	rc = acl_batch_inherit(t, b, &pn.a, &a, umask);
	node_release(&pn);
	if (rc)
		goto out;
	key_inode(&k, t->name, a.ino);
	node_encode(&v, &a, NULL);
	kv_batch_put(b, k.buf, k.len, v.buf, v.len);
	tree_batch_put_orphan(t, b, a.ino, false);
	rc = tree_commit(t, b);
	if (rc == 0 && out)
		*out = a;
out:
	kv_batch_free(b);
	sbuf_release(&k);
	sbuf_release(&v);
	return rc;
}

int tree_mktmp(struct tree *t, const char *dir, mode_t mode, mode_t umask,
	       uid_t uid, gid_t gid, struct tree_attr *out)
{
	return TREE_TRACKED(t, mktmp_once(t, dir, mode, umask, uid, gid, out));
}

/* tree_link() (@oldpath), tree_link_ino() (@oldpath NULL, inode @ino) and
 * tree_link_tmp() (@tmp: an orphan of tree_mktmp() may get a name), once. */
static int link_once(struct tree *t, const char *oldpath, uint64_t ino,
		     bool tmp, const char *newpath, struct tree_attr *out)
{
	char *parent = NULL;
	struct node on = {0}, pn = {0};
	struct attr_ref r = {0};
	struct kv_batch *b = NULL;
	struct tree_attr stub = {0};
	bool ns = false, st = false;
	int64_t now;
	int rc;

	rc = oldpath ? path_check(oldpath) : 0;
	if (rc == 0)
		rc = path_check(newpath);
	if (rc)
		goto out;
	if (oldpath && is_root(oldpath)) {
		rc = -EPERM;
		goto out;
	}
	if (is_root(newpath)) {
		rc = -EEXIST;
		goto out;
	}
	parent = path_parent(newpath);
	pthread_mutex_lock(&t->ns_lock);
	ns = true;
	if (oldpath) {
		rc = tree_get_node(t, oldpath, &on, false);
		if (rc)
			goto out;
		if (S_ISDIR(on.a.mode)) {
			rc = -EPERM;
			goto out;
		}
		ino = on.a.ino;
	}
	rc = tree_get_node(t, parent, &pn, false);
	if (rc)
		goto out;
	if (!S_ISDIR(pn.a.mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	rc = node_exists(t, newpath);
	if (rc) {
		rc = rc > 0 ? -EEXIST : rc;
		goto out;
	}
	rc = flags_may_add(&pn.a);
	if (rc)
		goto out;
	tree_lock_inodes(t, ino, pn.a.ino, 0, 0);
	st = true;
	rc = tree_attr_load(t, oldpath, ino, &r);
	if (rc == 0)
		rc = flags_may_alter(&r.n.a);
	if (rc)
		goto out;
	if (!oldpath && r.n.a.nlink == 0 && !tmp) {
		rc = -ENOENT; /* an orphan cannot get a name back */
		goto out;
	}
	now = tree_now_ns();
	b = kv_batch_new(t->store->kv);
	if (r.n.a.nlink == 0) {
		/* an O_TMPFILE file's first name: no longer an orphan */
		struct sbuf ok = {0};
		char *val = NULL;
		size_t vlen;

		key_orphan(&ok, t->name, ino);
		rc = kv_get(t->store->kv, ok.buf, ok.len, &val, &vlen);
		free(val);
		if (rc == 0)
			kv_batch_delete(b, ok.buf, ok.len);
		sbuf_release(&ok);
		if (rc)
			goto out; /* -ENOENT: reclaimed meanwhile */
	}
	if (!(r.n.a.flags & TREE_F_LINKED)) {
		/* first link: the attributes move to INODE#ino, which finds
		 * the inode by number from now on */
		parent_batch_delete(t, b, r.n.a.ino);
		r.n.a.flags |= TREE_F_LINKED;
		r.n.a.nlink = 2;
		sbuf_reset(&r.key);
		key_inode(&r.key, t->name, r.n.a.ino);
	} else {
		if (r.n.a.nlink >= TREE_LINK_MAX) {
			rc = -EMLINK;
			goto out;
		}
		r.n.a.nlink++;
	}
	r.n.a.ctime_ns = now;
	tree_attr_store(t, b, &r);
	stub.flags = TREE_F_LINKED;
	stub.ino = r.n.a.ino;
	stub.mode = r.n.a.mode;
	if (oldpath)
		tree_batch_put_node(t, b, oldpath, &stub, NULL);
	tree_batch_put_node(t, b, newpath, &stub, NULL);
	rc = tree_batch_dir_touch(t, b, parent, 0, now);
	if (rc)
		goto out;
	rc = tree_commit(t, b);
	if (rc == 0)
		rc = flags_sync(t, pn.a.flags | r.n.a.flags);
	if (rc == 0 && out)
		*out = r.n.a;
out:
	if (st)
		tree_unlock_inodes(t, ino, pn.a.ino, 0, 0);
	if (ns)
		pthread_mutex_unlock(&t->ns_lock);
	kv_batch_free(b);
	attr_ref_release(&r);
	node_release(&on);
	node_release(&pn);
	free(parent);
	return rc;
}

/* link_once(), again while a key it read changed before its commit
 * (tree_track): the name it links, the inode's record, the new name's
 * absence and its folder. */
static int link_common(struct tree *t, const char *oldpath, uint64_t ino,
		       bool tmp, const char *newpath, struct tree_attr *out)
{
	return TREE_TRACKED(t, link_once(t, oldpath, ino, tmp, newpath, out));
}

int tree_link(struct tree *t, const char *oldpath, const char *newpath,
	      struct tree_attr *out)
{
	return link_common(t, oldpath, 0, false, newpath, out);
}

int tree_link_ino(struct tree *t, uint64_t ino, const char *newpath,
		  struct tree_attr *out)
{
	return link_common(t, NULL, ino, false, newpath, out);
}

int tree_link_tmp(struct tree *t, uint64_t ino, const char *newpath,
		  struct tree_attr *out)
{
	return link_common(t, NULL, ino, true, newpath, out);
}
