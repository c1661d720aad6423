/*
 * files.c - the operations on open files: OPEN, CREATE, READ, WRITE,
 * RELEASE, FSYNC, FALLOCATE and LSEEK (SEEK_DATA, SEEK_HOLE).
 *
 * Page cache: file pages are kept across opens (keep_cache). keep_cache
 * promises that the cached pages are still the file's: a write the kernel
 * sends past its page cache (an O_DIRECT write, synchronous or asynchronous,
 * from any open) marks the inode INODE_PAGES_STALE, so the next open answers
 * without keep_cache and the kernel drops the pages; the written range is
 * also invalidated at once for opens that stay open (the invalidation may
 * wait for a READ: the request loop hands reading to another thread first,
 * and -s skips it). Buffered writes, truncates and fallocate go through (or
 * are applied to) the page cache by the kernel itself.
 *
 * Every write is committed to the store before it is answered; FSYNC syncs
 * the store's write-ahead log.
 *
 * Inode flags (chattr, ioctl.c): OPEN for writing reads the inode's flags
 * (unless the inode table knows the record has none: INODE_NO_FLAGS, no
 * store read, which on etcd is a round trip) and refuses an immutable file,
 * and an append-only one without O_APPEND or with O_TRUNC (EPERM, as the
 * VFS's may_open()); writes, truncates and fallocate are refused by the
 * store. A descriptor that clears O_APPEND with fcntl(F_SETFL) keeps
 * writing at the end: the kernel does not tell the daemon (ext4 refuses the
 * fcntl).
 *
 * Limits: fallocate: allocate, KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE (not
 * COLLAPSE/INSERT_RANGE, EOPNOTSUPP); no copy_file_range.
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
#include <sys/file.h>

/*
 * What the inode flags say of an open with @flags of @ino (the VFS's
 * may_open() does it for a file system whose flags it knows): an immutable
 * file opens for reading only, an append-only one for writing only with
 * O_APPEND, and neither with O_TRUNC. A read-only open reads nothing, nor
 * does one of an inode whose record had neither flag when the kernel was
 * told of it (INODE_NO_FLAGS: setting flags clears it, see ioctl.c).
 * Errors: -EPERM, those of fs_do_getattr().
 */
static int open_flags_allow(struct fs *fs, uint64_t ino, int flags)
{
	bool write = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
	struct tree_attr a;
	int rc;

	if (!write || itab_has_flag(fs, ino, INODE_NO_FLAGS))
		return 0;
	rc = fs_do_getattr(fs, ino, &a);
	if (rc)
		return rc;
	if (a.flags & TREE_F_IMMUTABLE)
		return -EPERM;
	if ((a.flags & TREE_F_APPEND) &&
	    (!(flags & O_APPEND) || (flags & O_TRUNC)))
		return -EPERM;
	return 0;
}

int fs_do_open(struct fs *fs, const struct fs_who *w, uint64_t ino, int flags,
	       struct fh **out, bool *keep_cache)
{
	int rc;

	if (fs->ro && ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)))
		return -EROFS;
	rc = open_flags_allow(fs, ino, flags);
	if (rc)
		return rc;
	return fs_do_open_new(fs, w, ino, flags, false, out, keep_cache);
}

/*
 * Counts one open of @ino. A shared writer's first open of it here also
 * tells the other writers (tree_hold, store/hold.c), before the open
 * answers: if one of them removes its last name, it stays for the opens
 * here; @held: the commit that made it did (tree_mkfile_held), or the hold
 * of an earlier open is still there, its drop not due (fs_unhold_cancel).
 * Errors: -ESTALE (the inode was removed meanwhile: another writer
 * replaced or removed its name; the kernel, which may still cache the
 * name, looks it up again, LOOKUP_REVAL, rather than say ENOENT for a
 * name that holds another file now), tree_hold()'s.
 */
static int open_count(struct fs *fs, uint64_t ino, bool held)
{
	pthread_mutex_t *m = open_stripe(fs, ino);
	int rc;

	/* counted before any unlink can look: see fs_do_remove() */
	pthread_mutex_lock(m);
	rc = itab_open(fs, ino);
	if (!tree_shared(fs->tree)) {
		/* nobody to tell */
	} else if (rc == 0 && !held && itab_nopen(fs, ino) == 1 &&
		   !fs_unhold_cancel(fs, ino)) {
		rc = tree_hold(fs->tree, ino);
		if (rc)
			fs_reclaim(fs, itab_close(fs, ino));
		if (rc == -ENOENT)
			rc = -ESTALE;
	} else if (rc && held) {
		fs_unhold(fs, ino); /* made held, but not opened */
	}
	pthread_mutex_unlock(m);
	return rc;
}

/*
 * Counts one release of @ino; then reclaims what is due (itab_close). A
 * shared writer's last one drops its hold: soon, on the reclaim thread
 * (fs_unhold_later), or at once when it leaves an orphan of this writer's
 * to free (its reclaim would find the hold and keep it).
 */
static void close_count(struct fs *fs, uint64_t ino)
{
	pthread_mutex_t *m = open_stripe(fs, ino);
	uint64_t due;

	if (!tree_shared(fs->tree)) {
		fs_reclaim(fs, itab_close(fs, ino));
		return;
	}
	pthread_mutex_lock(m);
	due = itab_close(fs, ino);
	if (!itab_nopen(fs, ino) && (due || !fs_unhold_later(fs, ino)))
		fs_unhold(fs, ino);
	pthread_mutex_unlock(m);
	fs_reclaim(fs, due);
}

int fs_do_open_new(struct fs *fs, const struct fs_who *w, uint64_t ino,
		   int flags, bool held, struct fh **out, bool *keep_cache)
{
	struct tree_attr in, a;
	struct fh *fh;
	struct fs_path p = {0};
	int rc;

	if (fs->ro && ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)))
		return -EROFS;
	fh = calloc(1, sizeof(*fh));
	if (!fh)
		return -ENOMEM;
	fh->ino = ino;
	fh->append = (flags & O_APPEND) && !fs->writeback;
	rc = open_count(fs, ino, held);
	if (rc)
		goto out;
	if (flags & O_TRUNC) {
		memset(&in, 0, sizeof(in));
		rc = fs_enter(fs, ino, NULL, &p);
		if (!rc) {
			do
				rc = tree_setattr(fs->tree, p.path, ino, &in,
						  TREE_SET_SIZE, &a);
			while (fs_retry(fs, &rc, ino, NULL, &p));
			fs_leave(fs);
		}
		fs_path_release(&p);
		if (rc) {
			close_count(fs, ino);
			goto out;
		}
		/* a truncate by open(O_TRUNC): a change of content too */
		fs_content_changed(fs, w, ino, &a);
	}
	/* pages a direct write went past are dropped by this open; with
	 * strictatime every read must reach us to be an access */
	if (keep_cache)
		*keep_cache = !itab_take_flag(fs, ino, INODE_PAGES_STALE) &&
			      !fs->strictatime;
	pthread_mutex_lock(&fs->lock);
	fh->next = fs->fhs;
	if (fh->next)
		fh->next->prev = fh;
	fs->fhs = fh;
	pthread_mutex_unlock(&fs->lock);
	*out = fh;
	fh = NULL;
out:
	free(fh);
	return rc;
}

/* Takes @fh off fs->fhs and frees it. */
static void fh_free(struct fs *fs, struct fh *fh)
{
	pthread_mutex_lock(&fs->lock);
	if (fh->prev)
		fh->prev->next = fh->next;
	else
		fs->fhs = fh->next;
	if (fh->next)
		fh->next->prev = fh->prev;
	pthread_mutex_unlock(&fs->lock);
	free(fh);
}

void fs_do_release(struct fs *fs, uint64_t ino, struct fh *fh)
{
	close_count(fs, ino);
	fh_free(fs, fh);
}

void fs_close_all(struct fs *fs)
{
	while (fs->fhs)
		fh_free(fs, fs->fhs);
}

void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_who w = req_who(req);
	struct fh *fh = NULL;
	bool keep = false;
	int rc = fs_do_open(fs, &w, ino, fi->flags, &fh, &keep);

	if (rc) {
		reply_err(req, rc);
		return;
	}
	fi->fh = (uintptr_t)fh;
	fi->keep_cache = keep;
	if (fuse_reply_open(req, fi) == -ENOENT) {
		/* interrupted: the kernel will not release it */
		fs_do_release(fs, ino, fh);
	}
}

int fs_do_create(struct fs *fs, const struct fs_who *w, uint64_t parent,
		 const char *name, mode_t mode, int flags,
		 struct fuse_entry_param *e, struct fh **fh)
{
	struct fuse_ctx ctx = {.uid = w->uid, .gid = w->gid, .umask = w->umask};
	uint64_t gen = itab_gained_gen(fs);
	struct tree_attr a;
	int rc;

	rc = fs_do_mknode(fs, &ctx, parent, name, (mode & 07777) | S_IFREG, 0,
			  NULL, true, &a);
	if (rc == -EEXIST && !(flags & O_EXCL)) {
		/* created meanwhile by someone else: open it (and truncate it
		 * as an open would, clearing set-user-ID as a truncate does) */
		rc = fs_do_lookup(fs, parent, name, e);
		if (!rc && !e->ino)
			rc = -ENOENT;
		if (!rc && S_ISDIR(e->attr.st_mode)) {
			fs_reclaim(fs, itab_forget(fs, e->ino, 1));
			rc = -EISDIR;
		}
		if (!rc) {
			rc = fs_do_open(fs, w, e->ino, flags, fh, NULL);
			if (rc)
				fs_reclaim(fs, itab_forget(fs, e->ino, 1));
		}
		if (rc || !(flags & O_TRUNC))
			return rc;
		rc = fs_do_getattr(fs, e->ino, &a);
		if (rc) {
			fs_do_release(fs, e->ino, *fh);
			fs_reclaim(fs, itab_forget(fs, e->ino, 1));
			*fh = NULL;
			return rc;
		}
	} else if (!rc) {
		/* made now: no security.capability, unless one was set since
		 * (by a lookup of the name and a SETXATTR meanwhile) */
		if (!fs->ro)
			itab_flag_unless_gained(fs, a.ino, INODE_NO_CAPS, gen);
		rc = fs_do_open_new(fs, w, a.ino, flags & ~O_TRUNC, true, fh,
				    NULL);
		if (rc)
			fs_reclaim(fs, itab_forget(fs, a.ino, 1));
	}
	if (!rc)
		fill_entry(fs, &a, e);
	return rc;
}

void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_who w = req_who(req);
	struct fuse_entry_param e;
	struct fh *fh = NULL;
	int rc = fs_do_create(fs, &w, parent, name, mode, fi->flags, &e, &fh);

	if (rc) {
		reply_err(req, rc);
		return;
	}
	fi->fh = (uintptr_t)fh;
	fi->keep_cache = 1;
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		fs_do_release(fs, e.ino, fh);
		fs_reclaim(fs, itab_forget(fs, e.ino, 1));
	}
}

int fs_do_read(struct fs *fs, uint64_t ino, size_t size, off_t off, char *buf,
	       size_t *nread)
{
	struct fs_path p = {0};
	int rc;

	if (off < 0)
		return -EINVAL;
	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = tree_read(fs->tree, p.path, ino, off, size, buf, nread);
	while (fs_retry(fs, &rc, ino, NULL, &p));
	fs_leave(fs);
out:
	fs_path_release(&p);
	return rc;
}

void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fh *fh = (struct fh *)(uintptr_t)fi->fh;
	size_t n = 0;
	char *buf = malloc(size ? size : 1);
	bool atime = false;
	int rc;

	if (!buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	rc = fs_do_read(fs, ino, size, off, buf, &n);
	/* decided now: once replied to, the file may be released (fh freed) */
	if (!rc && fh && (!fh->atime_done || fs->strictatime)) {
		fh->atime_done = true;
		atime = !fs->ro && !fs->noatime;
	}
	/* before the reply: a stat(2) right after the read(2) must see the
	 * access (after it, the stat could win the race and cache the old
	 * atime: posix_mountopts' strictatime check failed so under load) */
	if (atime)
		touch_atime(fs, ino);
	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_buf(req, buf, n);
	free(buf);
}

int fs_do_write(struct fs *fs, const struct fs_who *w, uint64_t ino,
		const char *buf, size_t size, off_t off, bool append,
		bool direct, struct tree_attr *out)
{
	struct fs_path p = {0};
	int rc;

	if (fs->ro)
		return -EROFS;
	if (off < 0)
		return -EINVAL;
	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = tree_write(fs->tree, p.path, ino, off, buf, size, append,
				out);
	while (fs_retry(fs, &rc, ino, NULL, &p));
	fs_leave(fs);
	if (rc)
		goto out;
	fs_content_changed(fs, w, ino, out);
	/* before the reply: an open after the write must see it */
	if (direct)
		itab_flags(fs, ino, INODE_PAGES_STALE, 0);
out:
	fs_path_release(&p);
	return rc;
}

void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
	      off_t off, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fh *fh = (struct fh *)(uintptr_t)fi->fh;
	bool direct = (fi->flags & O_DIRECT) && !fi->writepage;
	struct fs_who w = req_who(req);
	struct tree_attr a;
	int rc = fs_do_write(fs, &w, ino, buf, size, off, fh && fh->append,
			     direct, &a);

	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_write(req, size);
	/* after it: the kernel may hold the pages' locks until it has it;
	 * the invalidation may wait for a READ, which another thread reads */
	if (!rc && direct && fs->se && !fs->single) {
		if (fs->blocking)
			fs->blocking();
		fuse_lowlevel_notify_inval_inode(fs->se, ino, off, (off_t)size);
	}
}

void fs_release_file(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_do_release(req_fs(req), ino, (struct fh *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

int fs_do_fsync(struct fs *fs)
{
	return fs->ro ? 0 : store_sync(fs->store);
}

void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
	      struct fuse_file_info *fi)
{
	reply_status(req, fs_do_fsync(req_fs(req)));
}

int fs_do_fallocate(struct fs *fs, const struct fs_who *w, uint64_t ino,
		    int mode, off_t off, off_t len, struct tree_attr *out)
{
	unsigned tmode = 0;
	struct fs_path p = {0};
	int rc;

	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE |
		     FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	if (fs->ro)
		return -EROFS;
	if (off < 0 || len <= 0)
		return -EINVAL;
	if (mode & FALLOC_FL_KEEP_SIZE)
		tmode |= TREE_FALLOC_KEEP_SIZE;
	if (mode & FALLOC_FL_PUNCH_HOLE)
		tmode |= TREE_FALLOC_PUNCH_HOLE;
	if (mode & FALLOC_FL_ZERO_RANGE)
		tmode |= TREE_FALLOC_ZERO_RANGE;
	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = tree_fallocate(fs->tree, p.path, ino, tmode, (uint64_t)off,
				    (uint64_t)len, out);
	while (fs_retry(fs, &rc, ino, NULL, &p));
	fs_leave(fs);
	if (rc)
		goto out;
	fs_content_changed(fs, w, ino, out);
	/* the kernel forgets only the size and times it expects to change */
	if (fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
out:
	fs_path_release(&p);
	return rc;
}

void fs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
		  off_t len, struct fuse_file_info *fi)
{
	struct fs_who w = req_who(req);
	struct tree_attr a;

	reply_status(req,
		     fs_do_fallocate(req_fs(req), &w, ino, mode, off, len, &a));
}

int fs_do_lseek(struct fs *fs, uint64_t ino, off_t off, int whence,
		uint64_t *res)
{
	struct tree_attr a;
	int rc;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (off < 0)
		return -ENXIO; /* as ext4: no data or hole there */
	rc = fs_do_getattr(fs, ino, &a);
	if (!rc)
		rc = tree_seek(fs->tree, ino, a.size, off, whence, res);
	return rc;
}

void fs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
	      struct fuse_file_info *fi)
{
	uint64_t res = 0;
	int rc = fs_do_lseek(req_fs(req), ino, off, whence, &res);

	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_lseek(req, (off_t)res);
}
