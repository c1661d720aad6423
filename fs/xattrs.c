/*
 * xattrs.c - extended attributes: SETXATTR, GETXATTR, LISTXATTR,
 * REMOVEXATTR.
 *
 * POSIX ACLs (system.posix_acl_access and _default) are xattrs the store
 * checks and keeps in step with the mode (store/acl.c); the kernel enforces
 * them and caches them (FUSE_POSIX_ACL, devio.c). Setting an access ACL by a
 * caller neither in the file's group nor root clears set-group-ID, as ext4
 * does: the daemon decides that (libfuse 3.14 passes no
 * FUSE_SETXATTR_ACL_KILL_SGID, so the kernel sends none). ls -l asks every
 * file for its access ACL once: a file whose record had none when the kernel
 * was told of it is answered ENODATA from the inode table (INODE_NO_ACL),
 * without a store read (a point read on RocksDB, a round trip on etcd).
 * So is the security.capability the kernel asks for before the first write
 * to a file, of a file this daemon created and set none on since
 * (INODE_NO_CAPS): a create and write on etcd saves a round trip.
 *
 * Namespaces as ext4 (namespace_check()): user., trusted., security. and the
 * POSIX ACLs; trusted.* names are listed only to a caller with
 * CAP_SYS_ADMIN (the kernel checks it for getting and setting them).
 *
 * Limits: no SELinux labels (EOPNOTSUPP, see unsupported_xattr()); sizes as
 * the store allows (tree.h); a LISTXATTR of a file with trusted.* names
 * reads its caller's /proc status for its capabilities (a caller whose
 * process is gone counts as root or not by its uid).
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
#include <sys/xattr.h>

/*
 * An attribute pathfs does not keep, answered EOPNOTSUPP as by a filesystem
 * without it: SELinux labels. FUSE mounts are labelled by policy (genfscon
 * or the context= mount option), never from xattrs. ls -l asks for the label
 * of every file it lists, a round trip each, until one answer is EOPNOTSUPP:
 * then it stops asking for that filesystem.
 */
static bool unsupported_xattr(const char *name)
{
	return !strcmp(name, "security.selinux");
}

/*
 * The namespaces ext4 keeps (fs/xattr.c's handlers): user., trusted. and
 * security. with a name after the prefix (an empty one is -EINVAL), and of
 * system. the POSIX ACLs only. Anything else is -EOPNOTSUPP, as ext4
 * answers it (system.foo, foo.x).
 */
static int namespace_check(const char *name)
{
	static const char *const prefixes[] = {"user.", "trusted.",
					       "security."};
	size_t i, n;

	if (!strcmp(name, "system.posix_acl_access") ||
	    !strcmp(name, "system.posix_acl_default"))
		return 0;
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		n = strlen(prefixes[i]);
		if (!strncmp(name, prefixes[i], n))
			return name[n] ? 0 : -EINVAL;
	}
	return -EOPNOTSUPP;
}

/* File capabilities (setcap(8)), which a write drops: the kernel asks for
 * them before the first write to a file. */
static bool is_caps(const char *name)
{
	return !strcmp(name, "security.capability");
}

static bool is_acl(const char *name)
{
	return !strcmp(name, "system.posix_acl_access") ||
	       !strcmp(name, "system.posix_acl_default");
}

int fs_do_setxattr(struct fs *fs, uint64_t ino, const char *name,
		   const char *value, size_t size, int flags)
{
	struct fs_path p = {0};
	int rc;

	if (unsupported_xattr(name))
		return -EOPNOTSUPP;
	rc = namespace_check(name);
	if (rc)
		return rc;
	if (fs->ro)
		return -EROFS;
	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = value ? tree_setxattr(fs->tree, p.path, ino, name, value,
					   size, flags)
			   : tree_removexattr(fs->tree, p.path, ino, name);
	while (fs_retry(fs, &rc, ino, NULL, &p));
	fs_leave(fs);
	if (is_acl(name))
		itab_record_gained(fs, ino, INODE_NO_ACL);
	else if (is_caps(name))
		itab_record_gained(fs, ino, INODE_NO_CAPS);
out:
	fs_path_release(&p);
	return rc;
}

/* The store's flag for setting xattr @name of @ino by @w: whether it
 * clears set-group-ID (an access ACL set by one neither in the file's group
 * nor root, as the kernel's posix_acl_update_mode()). */
static int kill_sgid(struct fs *fs, const struct fs_who *w, uint64_t ino,
		     const char *name)
{
	struct tree_attr a;

	if (strcmp(name, "system.posix_acl_access") ||
	    fs_do_getattr(fs, ino, &a) || !(a.mode & S_ISGID) ||
	    fs_in_group(w, a.gid))
		return 0;
	return TREE_XATTR_KILL_SGID;
}

void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 const char *value, size_t size, int flags)
{
	struct fs *fs = req_fs(req);
	struct fs_who w = req_who(req);

	flags &= ~TREE_XATTR_KILL_SGID; /* the store's, not the caller's */
	flags |= kill_sgid(fs, &w, ino, name);
	reply_status(req, fs_do_setxattr(fs, ino, name, value, size, flags));
}

/* A value of @len bytes asked for with a buffer of @size (0: the size
 * only): -ERANGE if it does not fit. */
static int fits(size_t len, size_t size)
{
	return size && len > size ? -ERANGE : 0;
}

int fs_do_getxattr(struct fs *fs, uint64_t ino, const char *name, size_t size,
		   void **val, size_t *len)
{
	int rc;

	*val = NULL;
	*len = 0;
	if (unsupported_xattr(name))
		return -EOPNOTSUPP;
	rc = namespace_check(name);
	if (rc)
		return rc;
	if (is_acl(name) && itab_has_flag(fs, ino, INODE_NO_ACL))
		return -ENODATA; /* its record says it has none */
	if (is_caps(name) && itab_has_flag(fs, ino, INODE_NO_CAPS))
		return -ENODATA; /* made here, and none set since */
	rc = tree_getxattr(fs->tree, ino, name, val, len);
	if (!rc)
		rc = fits(*len, size);
	return rc;
}

/*
 * Whether the caller of @req may see trusted.* names: it has CAP_SYS_ADMIN
 * (ext4's trusted_xattr_list()), read from its /proc status; root when its
 * process cannot be read (gone, or in another PID namespace: pid 0).
 */
static bool may_see_trusted(fuse_req_t req)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	unsigned long long caps;
	char path[64], line[256];
	bool found = false, admin = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)c->pid);
	f = c->pid > 0 ? fopen(path, "re") : NULL;
	if (!f)
		return c->uid == 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			found = true;
			admin = caps & (1ULL << 21); /* CAP_SYS_ADMIN */
			break;
		}
	}
	fclose(f);
	return found ? admin : c->uid == 0;
}

/* Whether the list of @len bytes at @list (names each ended by a NUL) has
 * a trusted.* name. */
static bool has_trusted(const char *list, size_t len)
{
	for (size_t in = 0; in < len; in += strnlen(list + in, len - in) + 1)
		if (!strncmp(list + in, "trusted.", 8))
			return true;
	return false;
}

/* Drops the trusted.* names from the list of @len bytes at @list (names
 * each ended by a NUL); returns the length left. */
static size_t drop_trusted(char *list, size_t len)
{
	size_t in = 0, out = 0, n;

	while (in < len) {
		n = strnlen(list + in, len - in) + 1;
		if (strncmp(list + in, "trusted.", 8)) {
			memmove(list + out, list + in, n);
			out += n;
		}
		in += n;
	}
	return out;
}

int fs_do_listxattr(struct fs *fs, fuse_req_t req, uint64_t ino, size_t size,
		    char **list, size_t *len)
{
	int rc;

	*list = NULL;
	*len = 0;
	rc = tree_listxattr(fs->tree, ino, list, len);
	/* the caller's capabilities are read only for a list that has
	 * trusted.* names (a read of /proc: 15 us) */
	if (!rc && req && has_trusted(*list, *len) && !may_see_trusted(req))
		*len = drop_trusted(*list, *len);
	if (!rc)
		rc = fits(*len, size);
	return rc;
}

/* Replies with @val (@len bytes, fitting) to a request for @size bytes (0:
 * the size only), or with the error @rc. */
static void reply_xattr(fuse_req_t req, int rc, const void *val, size_t len,
			size_t size)
{
	if (rc)
		reply_err(req, rc);
	else if (!size)
		fuse_reply_xattr(req, len);
	else
		fuse_reply_buf(req, val, len);
}

void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	void *val;
	size_t len;
	int rc = fs_do_getxattr(req_fs(req), ino, name, size, &val, &len);

	reply_xattr(req, rc, val, len, size);
	free(val);
}

void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *list;
	size_t len;
	int rc = fs_do_listxattr(req_fs(req), req, ino, size, &list, &len);

	reply_xattr(req, rc, list, len, size);
	free(list);
}

void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	reply_status(req, fs_do_setxattr(req_fs(req), ino, name, NULL, 0, 0));
}
