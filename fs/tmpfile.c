/*
 * tmpfile.c - open(O_TMPFILE): an orphan from birth (fs_do_tmpfile),
 * answered past libfuse (fs_raw_request, called by loop.c, since libfuse
 * 3.14 has no tmpfile operation), named by linkat (fs_do_link, names.c).
 *
 * Limits: not with -s (libfuse's own loop answers the request ENOSYS, and
 * the kernel then refuses O_TMPFILE with EOPNOTSUPP).
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
#include <linux/fuse.h>

/*
 * open(O_TMPFILE) in folder @parent: a new regular file that is an orphan
 * from birth (tree_mktmp: nlink 0, addressed by number, reclaimed at its
 * last close and FORGET, or at the next mount after a crash), opened, its
 * entry counted as one lookup. Owner, set-group-ID folders, umask
 * (w->umask) and default ACL as for fs_do_mknode() (the store applies them).
 * linkat(2) may name it later (fs_do_link, INODE_TMPFILE).
 */
int fs_do_tmpfile(struct fs *fs, const struct fs_who *w, uint64_t parent,
		  mode_t mode, int flags, struct tree_attr *a, struct fh **fh)
{
	struct fs_path p = {0};
	int rc;

	if (fs->ro)
		return -EROFS;
	rc = fs_enter(fs, parent, NULL, &p);
	if (rc)
		goto out;
	/* tree_mktmp gives a set-group-ID folder's group, as tree_mknode;
	 * a node addressed by number (no path) is no folder */
	do
		rc = p.path ? tree_mktmp(fs->tree, p.path, mode, w->umask,
					 w->uid, w->gid, a)
			    : -ENOTDIR;
	while (fs_retry(fs, &rc, parent, NULL, &p));
	if (!rc)
		rc = itab_lookup(fs, a->ino, 0, "", a->flags);
	if (!rc)
		itab_flags(fs, a->ino, INODE_ORPHAN | INODE_TMPFILE, 0);
	fs_leave(fs);
	if (rc)
		goto out;
	rc = fs_do_open_new(fs, w, a->ino, flags & ~O_TRUNC, false, fh, NULL);
	if (rc)
		fs_reclaim(fs, itab_forget(fs, a->ino, 1));
out:
	fs_path_release(&p);
	return rc;
}

static void attr_out(const struct stat *st, struct fuse_attr *o)
{
	memset(o, 0, sizeof(*o));
	o->ino = st->st_ino;
	o->mode = st->st_mode;
	o->nlink = (uint32_t)st->st_nlink;
	o->uid = st->st_uid;
	o->gid = st->st_gid;
	o->rdev = (uint32_t)st->st_rdev;
	o->size = (uint64_t)st->st_size;
	o->blocks = (uint64_t)st->st_blocks;
	o->blksize = (uint32_t)st->st_blksize;
	o->atime = (uint64_t)st->st_atim.tv_sec;
	o->atimensec = (uint32_t)st->st_atim.tv_nsec;
	o->mtime = (uint64_t)st->st_mtim.tv_sec;
	o->mtimensec = (uint32_t)st->st_mtim.tv_nsec;
	o->ctime = (uint64_t)st->st_ctim.tv_sec;
	o->ctimensec = (uint32_t)st->st_ctim.tv_nsec;
}

static void timeout_out(double t, uint64_t *sec, uint32_t *nsec)
{
	*sec = (uint64_t)t;
	*nsec = (uint32_t)((t - (double)*sec) * 1e9);
}

/*
 * FUSE_TMPFILE (kernel 6.x; libfuse 3.14 answers ENOSYS, and the kernel
 * then refuses O_TMPFILE with EOPNOTSUPP for good): the request is CREATE's
 * (fuse_create_in and a name, "/" from the VFS, ignored) and so is the
 * reply, an entry and an open. Written to the device here, past libfuse,
 * which never sees the request: it keeps no state for it (an INTERRUPT of
 * it finds nothing to interrupt; the request is answered at once anyway).
 * The entry says nlink 0, as the kernel takes it: linkat(2) may then name
 * the file only if it was not opened O_EXCL (the VFS's I_LINKABLE).
 */
bool fs_raw_request(struct fs *fs, struct fuse_session *se, const void *buf,
		    size_t len)
{
	const struct fuse_in_header *in = buf;
	const struct fuse_create_in *ci;
	struct {
		struct fuse_out_header h;
		struct fuse_entry_out e;
		struct fuse_open_out o;
	} out;
	struct fuse_entry_param e;
	struct tree_attr a;
	struct fh *fh = NULL;
	struct fs_who w;
	ssize_t n;
	int rc;

	if (len < sizeof(*in) || in->opcode != FUSE_TMPFILE)
		return false;
	memset(&out, 0, sizeof(out));
	out.h.unique = in->unique;
	ci = (const void *)(in + 1);
	w.uid = in->uid;
	w.gid = in->gid;
	w.req = NULL; /* no libfuse request: groups are not asked for */
	w.umask = len < sizeof(*in) + sizeof(*ci) ? 0 : ci->umask;
	if (len < sizeof(*in) + sizeof(*ci))
		rc = -EINVAL;
	else
		rc = fs_do_tmpfile(fs, &w, in->nodeid, ci->mode, (int)ci->flags,
				   &a, &fh);
	if (rc) {
		out.h.error = -reply_errno(rc);
		out.h.len = sizeof(out.h);
	} else {
		fill_entry(fs, &a, &e);
		out.e.nodeid = e.ino;
		out.e.generation = e.generation;
		timeout_out(e.entry_timeout, &out.e.entry_valid,
			    &out.e.entry_valid_nsec);
		timeout_out(e.attr_timeout, &out.e.attr_valid,
			    &out.e.attr_valid_nsec);
		attr_out(&e.attr, &out.e.attr); /* nlink 0: no name */
		out.o.fh = (uintptr_t)fh;
		out.h.len = sizeof(out);
	}
	n = write(fuse_session_fd(se), &out, out.h.len);
	if (n != (ssize_t)out.h.len && !rc) {
		/* not delivered (the caller was interrupted): undo */
		plog(LOG_DEBUG, "tmpfile reply not delivered: %s",
		     n < 0 ? strerror(errno) : "short write");
		fs_do_release(fs, a.ino, fh);
		fs_reclaim(fs, itab_forget(fs, a.ino, 1));
	}
	return true;
}
