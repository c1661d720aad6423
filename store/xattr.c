/*
 * xattr.c - extended attributes, one key each: XATTR#<ino>#<name> = value.
 *
 * Keyed by inode number, so they follow the inode through renames and hard
 * links and are dropped with its content. Setting or removing one also sets
 * the inode's ctime, in the same batch, under the inode's stripe. Reads take
 * no lock.
 *
 * The two POSIX ACLs are xattrs too, with acl.c's rules: a value that is no
 * ACL is -EINVAL, a default ACL only on a folder (-EACCES), an access ACL
 * sets the mode's rwx bits in the same batch (and is not stored when the
 * mode says it all), removing one that is not there is no error (as ext4).
 *
 * Limits: names 1..TREE_XATTR_NAME_MAX bytes, values up to
 * TREE_XATTR_SIZE_MAX bytes; no namespace policy (user./trusted./security.
 * are the caller's business); listing reads every name of the inode at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "acl_i.h"
#include "batch_i.h"
#include "drive_i.h"
#include "flags_i.h"

static int check_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0)
		return -EINVAL;
	if (n > TREE_XATTR_NAME_MAX)
		return -ERANGE;
	return 0;
}

/*
 * What setting ACL @name (acl_kind() @kind) to @value (NULL: removing it)
 * does to the inode's attributes *a, with tree_setxattr()'s @flags; *put
 * false when the value is not stored (an access ACL the mode says all of).
 */
static int acl_change(int kind, const void *value, size_t size, int flags,
		      struct tree_attr *a, bool *put)
{
	int rc;

	*put = value != NULL;
	if (!value) {
		a->flags &= ~(uint32_t)(kind == 2 ? TREE_F_DEFACL : TREE_F_ACL);
		return 0;
	}
	rc = acl_check(value, size);
	if (rc)
		return rc;
	if (kind == 2) {
		if (!S_ISDIR(a->mode))
			return -EACCES;
		a->flags |= TREE_F_DEFACL; /* makes tree_mknode() read it */
		return 0;
	}
	*put = acl_to_mode(value, size, &a->mode) > 0;
	if (*put)
		a->flags |= TREE_F_ACL; /* makes a chmod rewrite it */
	else
		a->flags &= ~(uint32_t)TREE_F_ACL;
	if (flags & TREE_XATTR_KILL_SGID)
		a->mode &= ~(mode_t)S_ISGID;
	return 0;
}

/* xattr_change(), once. */
static int change_once(struct tree *t, const char *path, uint64_t ino,
		       const char *name, const void *value, size_t size,
		       int flags)
{
	struct attr_ref r = {0};
	struct sbuf k = {0};
	struct kv_batch *b = NULL;
	char *old = NULL;
	size_t olen;
	bool exists, put, st = false;
	int kind = acl_kind(name);
	int rc;

	rc = tree_attr_lock(t, path, &ino, &r);
	if (rc)
		goto out;
	st = true;
	rc = flags_may_alter(&r.n.a);
	if (rc)
		goto out;
	key_xattr(&k, t->name, ino, name);
	rc = kv_get(t->store->kv, k.buf, k.len, &old, &olen);
	if (rc && rc != -ENOENT)
		goto out;
	exists = rc == 0;
	rc = 0;
	if (value && exists && (flags & XATTR_CREATE)) {
		rc = -EEXIST;
		goto out;
	}
	if ((!value || (flags & XATTR_REPLACE)) && !exists) {
		/* no ACL to remove: done, as ext4 */
		rc = !value && kind ? 0 : -ENODATA;
		goto out;
	}
	put = value != NULL;
	if (kind) {
		rc = acl_change(kind, value, size, flags, &r.n.a, &put);
		if (rc)
			goto out;
	}
	b = kv_batch_new(t->store->kv);
	if (put)
		kv_batch_put(b, k.buf, k.len, value, size);
	else if (exists)
		kv_batch_delete(b, k.buf, k.len);
	r.n.a.ctime_ns = tree_now_ns();
	rc = tree_attr_commit(t, b, &r);
out:
	if (st)
		tree_unlock_inodes(t, ino, 0, 0, 0);
	kv_batch_free(b);
	attr_ref_release(&r);
	sbuf_release(&k);
	free(old);
	return rc;
}

/* Sets (@value) or removes (@value NULL) xattr @name of inode @ino. */
static int xattr_change(struct tree *t, const char *path, uint64_t ino,
			const char *name, const void *value, size_t size,
			int flags)
{
	return TREE_TRACKED(
	    t, change_once(t, path, ino, name, value, size, flags));
}

int tree_setxattr(struct tree *t, const char *path, uint64_t ino,
		  const char *name, const void *value, size_t size, int flags)
{
	int rc = check_name(name);

	if (rc)
		return rc;
	if (size > TREE_XATTR_SIZE_MAX)
		return -ERANGE;
	if (flags & ~(XATTR_CREATE | XATTR_REPLACE | TREE_XATTR_KILL_SGID) ||
	    (flags & XATTR_CREATE && flags & XATTR_REPLACE))
		return -EINVAL;
	return xattr_change(t, path, ino, name, value ? value : "", size,
			    flags);
}

int tree_getxattr(struct tree *t, uint64_t ino, const char *name, void **value,
		  size_t *size)
{
	struct sbuf k = {0};
	char *val = NULL;
	size_t vlen = 0;
	int rc;

	*value = NULL;
	*size = 0;
	rc = check_name(name);
	if (rc)
		goto out;
	key_xattr(&k, t->name, ino, name);
	rc = kv_get(t->store->kv, k.buf, k.len, &val, &vlen);
	if (rc == -ENOENT)
		rc = -ENODATA;
	if (rc)
		goto out;
	*value = val;
	*size = vlen;
out:
	sbuf_release(&k);
	return rc;
}

int tree_listxattr(struct tree *t, uint64_t ino, char **list, size_t *size)
{
	struct sbuf lo = {0}, hi = {0}, res = {0};
	struct kv_iter *it = NULL;
	int rc;

	*list = NULL;
	*size = 0;
	key_xattr_range(&lo, &hi, t->name, ino);
	rc = kv_iter_open(&it, t->store->kv, lo.buf, lo.len, hi.buf, hi.len);
	if (rc)
		goto out;
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen;
		const char *key = kv_iter_key(it, &klen);

		if (klen <= lo.len)
			continue;
		sbuf_add(&res, key + lo.len, klen - lo.len);
		sbuf_addc(&res, '\0');
	}
	rc = kv_iter_status(it);
	if (rc || res.len == 0)
		goto out;
	*list = res.buf;
	*size = res.len;
	res.buf = NULL;
out:
	kv_iter_free(it);
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&res);
	return rc;
}

int tree_removexattr(struct tree *t, const char *path, uint64_t ino,
		     const char *name)
{
	int rc = check_name(name);

	if (rc)
		return rc;
	return xattr_change(t, path, ino, name, NULL, 0, 0);
}
