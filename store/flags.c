/*
 * flags.c - the user flags of an inode (chattr(1): immutable, append-only,
 * noatime, nodump, sync, dirsync; TREE_F_USER in tree.h): setting them
 * (tree_setflags) and the rules they impose (flags_i.h), which the calls
 * that change nodes check, so every way in (the daemon, pathfsctl, the
 * tests) meets the same rules in one place.
 *
 * The rules are the VFS's and ext4's: may_setattr() and ext4_setattr()
 * (no attribute change of an immutable inode; no chmod, chown or explicit
 * times of an append-only one), xattr_permission(), vfs_link(),
 * may_delete() and may_create() (immutable and append-only nodes are
 * neither removed nor renamed nor linked; an immutable folder takes no
 * change of entries, an append-only one takes new entries only),
 * vfs_fallocate() and do_truncate(). Opening for writing is the daemon's to
 * refuse (files.c): the store has no opens.
 *
 * The flags live in the inode's record (tree_attr.flags beside the store's
 * own TREE_F_* bits), so records written before them read as no flags, and
 * a record holding them costs nothing more (the flags varint was there).
 *
 * Limits: who may set a flag (the owner; IMMUTABLE and APPEND only a
 * privileged process) is the caller's to check: the store does not know
 * who asks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "batch_i.h"
#include "flags_i.h"

int flags_may_setattr(const struct tree_attr *a, unsigned mask)
{
	if (mask & TREE_SET_ACCESS)
		return 0;
	if (a->flags & TREE_F_IMMUTABLE)
		return -EPERM;
	if (!(a->flags & TREE_F_APPEND))
		return 0;
	if (mask &
	    (TREE_SET_MODE | TREE_SET_UID | TREE_SET_GID | TREE_SET_SIZE))
		return -EPERM;
	if ((mask & (TREE_SET_ATIME | TREE_SET_MTIME)) &&
	    !(mask & TREE_SET_TOUCH))
		return -EPERM;
	return 0;
}

int flags_may_write(const struct tree_attr *a)
{
	return (a->flags & TREE_F_IMMUTABLE) ? -EPERM : 0;
}

int flags_may_fallocate(const struct tree_attr *a, unsigned mode)
{
	if (a->flags & TREE_F_IMMUTABLE)
		return -EPERM;
	if ((a->flags & TREE_F_APPEND) && (mode & ~TREE_FALLOC_KEEP_SIZE))
		return -EPERM;
	return 0;
}

int flags_may_alter(const struct tree_attr *a)
{
	return (a->flags & TREE_F_PROTECT) ? -EPERM : 0;
}

int flags_may_add(const struct tree_attr *dir)
{
	return (dir->flags & TREE_F_IMMUTABLE) ? -EPERM : 0;
}

int flags_may_add_at(struct tree *t, const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
	struct node n = {0};
	int rc;

	if (!dir)
		return -ENOMEM;
	rc = tree_get_node(t, dir, &n, false);
	if (rc == 0)
		rc = flags_may_add(&n.a);
	else if (rc == -ENOENT || rc == -ENOTDIR)
		rc = 0;
	node_release(&n);
	free(dir);
	return rc;
}

int flags_may_remove(const struct tree_attr *dir, uint32_t nflags)
{
	return ((dir->flags | nflags) & TREE_F_PROTECT) ? -EPERM : 0;
}

int flags_of_node(struct tree *t, const struct node *n, uint32_t *out)
{
	struct node in = {0};
	int rc;

	if (!(n->a.flags & TREE_F_LINKED)) {
		*out = n->a.flags & TREE_F_USER;
		return 0;
	}
	rc = tree_get_inode(t, n->a.ino, &in);
	if (rc == -ENOENT)
		rc = -EIO;
	if (rc == 0)
		*out = in.a.flags & TREE_F_USER;
	node_release(&in);
	return rc;
}

void flags_inherit(const struct tree_attr *dir, struct tree_attr *a)
{
	uint32_t keep = TREE_F_NODUMP | TREE_F_NOATIME;

	if (S_ISDIR(a->mode))
		keep |= TREE_F_SYNC | TREE_F_DIRSYNC;
	else if (S_ISREG(a->mode))
		keep |= TREE_F_SYNC;
	a->flags |= dir->flags & keep;
}

int flags_dir_keeps(struct tree *t, const char *path, struct flags_dir_cache *c,
		    bool *keeps)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash == path ? 1 : (size_t)(slash - path);
	struct node n = {0};
	int rc;

	if (!c->dir.buf || c->dir.len != len || memcmp(c->dir.buf, path, len)) {
		sbuf_reset(&c->dir);
		sbuf_add(&c->dir, path, len);
		sbuf_nul(&c->dir);
		rc = tree_get_node(t, c->dir.buf, &n, false);
		c->flags = rc == 0 ? n.a.flags : 0;
		node_release(&n);
		if (rc) {
			sbuf_reset(&c->dir); /* asked again next time */
			return rc;
		}
	}
	*keeps = (c->flags & TREE_F_PROTECT) != 0;
	return 0;
}

void flags_dir_cache_release(struct flags_dir_cache *c)
{
	sbuf_release(&c->dir);
}

int flags_sync(struct tree *t, uint32_t flags)
{
	if (!(flags & (TREE_F_SYNC | TREE_F_DIRSYNC)))
		return 0;
	return kv_sync(t->store->kv);
}

/* tree_setflags(), once. */
static int setflags_once(struct tree *t, const char *path, uint64_t ino,
			 uint32_t flags, struct tree_attr *out)
{
	struct attr_ref r = {0};
	struct kv_batch *b = NULL;
	struct tree_attr *a = &r.n.a;
	bool st = false;
	int rc;

	if (flags & ~(uint32_t)TREE_F_USER)
		return -EINVAL;
	/* a namespace change checks the flags under ns_lock: none is half
	 * done while they change */
	pthread_mutex_lock(&t->ns_lock);
	rc = tree_attr_lock(t, path, &ino, &r);
	if (rc)
		goto out;
	st = true;
	if (!S_ISDIR(a->mode))
		flags &= ~(uint32_t)TREE_F_DIRSYNC;
	a->flags = (a->flags & ~(uint32_t)TREE_F_USER) | flags;
	a->ctime_ns = tree_now_ns();
	b = kv_batch_new(t->store->kv);
	rc = tree_attr_commit(t, b, &r);
	if (rc == 0 && out)
		*out = *a;
out:
	if (st)
		tree_unlock_inodes(t, ino, 0, 0, 0);
	pthread_mutex_unlock(&t->ns_lock);
	kv_batch_free(b);
	attr_ref_release(&r);
	return rc;
}

int tree_setflags(struct tree *t, const char *path, uint64_t ino,
		  uint32_t flags, struct tree_attr *out)
{
	return TREE_TRACKED(t, setflags_once(t, path, ino, flags, out));
}
