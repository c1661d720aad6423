/*
 * acl.c - POSIX ACLs: the xattrs system.posix_acl_access and
 * system.posix_acl_default checked (acl_check), kept in step with the mode
 * (acl_to_mode when an access ACL is set, acl_batch_chmod on a chmod) and
 * inherited by what is made in a folder with a default ACL
 * (acl_batch_inherit), as ext4 does (the kernel's posix_acl.c). The kernel
 * enforces them (FUSE_POSIX_ACL); the store keeps them as xattrs of their
 * inode (xattr.c), so renames, hard links, clones and fsck treat them as
 * any other xattr.
 *
 * The stored form is the xattr's, as the kernel hands it over: a 4-byte
 * version (2), then 8-byte entries of tag, perm (rwx) and id, all little
 * endian. An access ACL that the mode says all of (USER_OBJ, GROUP_OBJ and
 * OTHER only) is not stored: the mode is.
 *
 * Limits: ids are stored as given (the kernel's, in its initial user
 * namespace); at most TREE_XATTR_SIZE_MAX bytes (8,191 entries), the kernel
 * sends no more than a page.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acl_i.h"
#include "batch_i.h"

#define ACL_VERSION 2
#define ACL_HDR	    4 /* version */
#define ACL_ENT	    8 /* tag, perm, id */
#define ACL_NOID    0xffffffffu

enum acl_tag {
	T_USER_OBJ = 0x01,
	T_USER = 0x02,
	T_GROUP_OBJ = 0x04,
	T_GROUP = 0x08,
	T_MASK = 0x10,
	T_OTHER = 0x20,
};

struct ent {
	uint16_t tag, perm;
	uint32_t id;
};

int acl_kind(const char *name)
{
	if (!strcmp(name, ACL_ACCESS))
		return 1;
	if (!strcmp(name, ACL_DEFAULT))
		return 2;
	return 0;
}

static size_t ent_count(size_t len)
{
	return (len - ACL_HDR) / ACL_ENT;
}

static void ent_get(const void *val, size_t i, struct ent *e)
{
	const char *p = (const char *)val + ACL_HDR + i * ACL_ENT;

	memcpy(&e->tag, p, 2);
	memcpy(&e->perm, p + 2, 2);
	memcpy(&e->id, p + 4, 4);
	e->tag = le16toh(e->tag);
	e->perm = le16toh(e->perm);
	e->id = le32toh(e->id);
}

static void ent_set_perm(void *val, size_t i, unsigned perm)
{
	uint16_t v = htole16((uint16_t)(perm & 7));

	memcpy((char *)val + ACL_HDR + i * ACL_ENT + 2, &v, 2);
}

/* The entries' order, as the kernel's posix_acl_valid(): what may come
 * next. */
enum { S_UOBJ, S_USERS, S_GROUPS, S_OTHER, S_END };

int acl_check(const void *val, size_t len)
{
	uint32_t ver;
	size_t i, n;
	int state = S_UOBJ;
	bool named = false, have_id = false;
	uint32_t last = 0;
	struct ent e;

	if (len < ACL_HDR + ACL_ENT || (len - ACL_HDR) % ACL_ENT)
		return -EINVAL;
	memcpy(&ver, val, 4);
	if (le32toh(ver) != ACL_VERSION)
		return -EINVAL;
	n = ent_count(len);
	for (i = 0; i < n; i++) {
		ent_get(val, i, &e);
		if (e.perm & ~7u)
			return -EINVAL;
		switch (e.tag) {
		case T_USER_OBJ:
			if (state != S_UOBJ)
				return -EINVAL;
			state = S_USERS;
			have_id = false;
			break;
		case T_USER:
		case T_GROUP:
			if (state != (e.tag == T_USER ? S_USERS : S_GROUPS) ||
			    e.id == ACL_NOID || (have_id && e.id <= last))
				return -EINVAL;
			last = e.id;
			have_id = named = true;
			break;
		case T_GROUP_OBJ:
			if (state != S_USERS)
				return -EINVAL;
			state = S_GROUPS;
			have_id = false;
			break;
		case T_MASK:
			if (state != S_GROUPS)
				return -EINVAL;
			state = S_OTHER;
			break;
		case T_OTHER:
			if (state != S_OTHER && !(state == S_GROUPS && !named))
				return -EINVAL;
			state = S_END;
			break;
		default:
			return -EINVAL;
		}
	}
	return state == S_END ? 0 : -EINVAL;
}

/* 1 if checked ACL @val has a MASK entry. */
static bool has_mask(const void *val, size_t len)
{
	struct ent e;

	for (size_t i = 0; i < ent_count(len); i++) {
		ent_get(val, i, &e);
		if (e.tag == T_MASK)
			return true;
	}
	return false;
}

int acl_to_mode(const void *val, size_t len, mode_t *mode)
{
	bool mask = has_mask(val, len);
	mode_t m = *mode & ~(mode_t)0777;
	int more = mask;
	struct ent e;

	for (size_t i = 0; i < ent_count(len); i++) {
		ent_get(val, i, &e);
		if (e.tag == T_USER_OBJ)
			m |= (mode_t)e.perm << 6;
		else if (e.tag == T_MASK || (e.tag == T_GROUP_OBJ && !mask))
			m |= (mode_t)e.perm << 3;
		else if (e.tag == T_OTHER)
			m |= e.perm;
		else if (e.tag == T_USER || e.tag == T_GROUP)
			more = 1;
	}
	*mode = m;
	return more;
}

/* chmod: the class entries of checked ACL @val take @mode's rwx bits. */
static void set_mode(void *val, size_t len, mode_t mode)
{
	bool mask = has_mask(val, len);
	struct ent e;

	for (size_t i = 0; i < ent_count(len); i++) {
		ent_get(val, i, &e);
		if (e.tag == T_USER_OBJ)
			ent_set_perm(val, i, mode >> 6);
		else if (e.tag == T_MASK || (e.tag == T_GROUP_OBJ && !mask))
			ent_set_perm(val, i, mode >> 3);
		else if (e.tag == T_OTHER)
			ent_set_perm(val, i, mode);
	}
}

/*
 * A new node's access ACL from a copy of its folder's default ACL @val
 * (checked), in place, and its mode *mode (posix_acl_create_masq()): the
 * owner, other and mask (or group) entries keep only what the create mode
 * grants, and the mode only what they grant. Returns 1 if the ACL says more
 * than the mode, 0 if not.
 */
static int create_masq(void *val, size_t len, mode_t *mode)
{
	mode_t m = *mode;
	size_t n = ent_count(len), group = n, mask = n;
	int more = 0;
	struct ent e;

	for (size_t i = 0; i < n; i++) {
		ent_get(val, i, &e);
		switch (e.tag) {
		case T_USER_OBJ:
			e.perm &= (m >> 6) & 7;
			ent_set_perm(val, i, e.perm);
			m &= ((mode_t)e.perm << 6) | ~(mode_t)S_IRWXU;
			break;
		case T_OTHER:
			e.perm &= m & 7;
			ent_set_perm(val, i, e.perm);
			m &= e.perm | ~(mode_t)S_IRWXO;
			break;
		case T_GROUP_OBJ:
			group = i;
			break;
		case T_MASK:
			mask = i;
			more = 1;
			break;
		default: /* USER, GROUP */
			more = 1;
			break;
		}
	}
	if (mask == n)
		mask = group; /* acl_check() made sure there is one */
	ent_get(val, mask, &e);
	e.perm &= (m >> 3) & 7;
	ent_set_perm(val, mask, e.perm);
	m &= ((mode_t)e.perm << 3) | ~(mode_t)S_IRWXG;
	*mode = (*mode & ~(mode_t)0777) | (m & 0777);
	return more;
}

/* Reads xattr @name of inode @ino: 0 (*val malloc'd), -ENOENT, -EIO; a
 * stored ACL that does not check is -EIO. */
static int acl_get(struct tree *t, uint64_t ino, const char *name,
		   struct sbuf *k, char **val, size_t *len)
{
	int rc;

	*val = NULL;
	key_xattr(k, t->name, ino, name);
	rc = kv_get(t->store->kv, k->buf, k->len, val, len);
	if (rc == 0 && acl_check(*val, *len)) {
		free(*val);
		*val = NULL;
		rc = -EIO;
	}
	return rc;
}

int acl_batch_chmod(struct tree *t, struct kv_batch *b,
		    const struct tree_attr *a)
{
	struct sbuf k = {0};
	char *val;
	size_t len;
	int rc;

	if (!(a->flags & TREE_F_ACL)) /* no read where there is none */
		return 0;
	rc = acl_get(t, a->ino, ACL_ACCESS, &k, &val, &len);
	if (rc == 0) {
		set_mode(val, len, a->mode);
		kv_batch_put(b, k.buf, k.len, val, len);
	} else if (rc == -ENOENT) {
		rc = 0;
	}
	free(val);
	sbuf_release(&k);
	return rc;
}

int acl_batch_inherit(struct tree *t, struct kv_batch *b,
		      const struct tree_attr *dir, struct tree_attr *a,
		      mode_t umask)
{
	struct sbuf k = {0};
	char *val = NULL;
	size_t len;
	int rc = -ENOENT;

	/* a symlink is always rwxrwxrwx, never with an ACL */
	if (S_ISLNK(a->mode))
		return 0;
	if (dir->flags & TREE_F_DEFACL) /* no read where there is none */
		rc = acl_get(t, dir->ino, ACL_DEFAULT, &k, &val, &len);
	if (rc == -ENOENT) {
		a->mode &= ~(umask & 0777);
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;
	if (S_ISDIR(a->mode)) {
		a->flags |= TREE_F_DEFACL;
		sbuf_reset(&k);
		key_xattr(&k, t->name, a->ino, ACL_DEFAULT);
		kv_batch_put(b, k.buf, k.len, val, len);
	}
	if (create_masq(val, len, &a->mode)) {
		a->flags |= TREE_F_ACL;
		sbuf_reset(&k);
		key_xattr(&k, t->name, a->ino, ACL_ACCESS);
		kv_batch_put(b, k.buf, k.len, val, len);
	}
out:
	free(val);
	sbuf_release(&k);
	return rc;
}
