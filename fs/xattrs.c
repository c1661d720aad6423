/*
 * xattrs.c - extended attributes: SETXATTR, GETXATTR, LISTXATTR,
 * REMOVEXATTR.
 *
 * Limits: no POSIX ACLs and no SELinux labels (EOPNOTSUPP, see
 * unsupported_xattr()); sizes as the store allows (tree.h).
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
 * Attributes pathfs does not keep, answered EOPNOTSUPP as by a filesystem
 * without them:
 * - POSIX ACLs: the kernel would hand their xattrs to us raw and never
 *   enforce them, and a stored trivial ACL would shadow the mode (cp -a sets
 *   one instead of chmod); tools fall back to chmod.
 * - SELinux labels: FUSE mounts are labelled by policy (genfscon or the
 *   context= mount option), never from xattrs. ls -l asks for the label of
 *   every file it lists, a round trip each, until one answer is EOPNOTSUPP:
 *   then it stops asking for that filesystem.
 */
static bool unsupported_xattr(const char *name)
{
	return !strcmp(name, "system.posix_acl_access") ||
	       !strcmp(name, "system.posix_acl_default") ||
	       !strcmp(name, "security.selinux");
}

/* Sets xattr @name of @ino to @value (@size bytes), or removes it when
 * @value is NULL. */
static int fs_do_setxattr(struct fs *fs, uint64_t ino, const char *name,
			  const char *value, size_t size, int flags)
{
	struct fs_path p = {0};
	int rc;

	if (unsupported_xattr(name))
		return -EOPNOTSUPP;
	if (fs->ro)
		return -EROFS;
	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = value ? tree_setxattr(fs->tree, p.path, ino, name, value,
					   size, flags)
			   : tree_removexattr(fs->tree, p.path, ino, name);
	while (fs_retry(fs, rc, ino, NULL, &p));
	fs_leave(fs);
out:
	fs_path_release(&p);
	return rc;
}

void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	int rc = fs_do_setxattr(req_fs(req), ino, name, value, size, flags);

	fuse_reply_err(req, rc < 0 ? -rc : 0);
}

/* Replies with @val (@len bytes) to a request for @size bytes (0: the size
 * only). */
static void reply_xattr_value(fuse_req_t req, const void *val, size_t len,
			      size_t size)
{
	if (!size)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, val, len);
}

void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	void *val = NULL;
	size_t len = 0;
	int rc = unsupported_xattr(name)
		     ? -EOPNOTSUPP
		     : tree_getxattr(req_fs(req)->tree, ino, name, &val, &len);

	if (rc)
		reply_err(req, rc);
	else
		reply_xattr_value(req, val, len, size);
	free(val);
}

void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *list = NULL;
	size_t len = 0;
	int rc = tree_listxattr(req_fs(req)->tree, ino, &list, &len);

	if (rc)
		reply_err(req, rc);
	else
		reply_xattr_value(req, list, len, size);
	free(list);
}

void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	int rc = fs_do_setxattr(req_fs(req), ino, name, NULL, 0, 0);

	fuse_reply_err(req, rc < 0 ? -rc : 0);
}
