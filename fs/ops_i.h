/*
 * ops_i.h - what the FUSE operation files of the daemon (ops.c, names.c,
 * attrs.c, files.c, tmpfile.c, dirs.c, xattrs.c) share: the open-file
 * handle, the reply helpers, the fs_do_<op>() halves one file calls in
 * another, and the request handlers the table in ops.c lists.
 *
 * Every fs_do_*() does an operation's work, returns 0 or -errno, never
 * replies and takes no request, so a unit test calls it on a struct fs with
 * no mount (tests/test_fs_ops.c; fs_do_readdir() packs its entries with the
 * packer it is given, the test's own there); every fs_<op>() handler
 * unpacks the request and replies exactly once, an error through
 * reply_err() or reply_status() (the one place an error code is clamped to
 * an errno).
 */
#ifndef PATHFS_OPS_I_H
#define PATHFS_OPS_I_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fs_i.h"

/* One open file: fuse_file_info.fh, malloc'd at OPEN/CREATE, freed at
 * RELEASE. */
struct fh {
	uint64_t ino;
	bool append;		/* O_APPEND without writeback cache */
	bool atime_done;	/* atime considered once per open (relatime) */
	struct fh *prev, *next; /* fs->fhs, under fs->lock */
};

/*
 * Who asks: the caller's ids, and its request for its supplementary groups
 * (asked only when a rule needs them; NULL in unit tests: then only @gid is
 * the caller's group); the umask of a create (the kernel leaves it to the
 * daemon: FUSE_DONT_MASK, devio.c).
 */
struct fs_who {
	uid_t uid;
	gid_t gid;
	fuse_req_t req;
	mode_t umask;
};

static inline struct fs *req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static inline struct fs_who req_who(fuse_req_t req)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct fs_who w = {c->uid, c->gid, req, c->umask};

	return w;
}

/* The errno an error @rc (-errno) is answered with: anything that is not a
 * negative errno is EIO. */
static inline int reply_errno(int rc)
{
	return rc < 0 && rc > -4096 ? -rc : EIO;
}

/* The one error reply. */
static inline void reply_err(fuse_req_t req, int rc)
{
	fuse_reply_err(req, reply_errno(rc));
}

/* The reply of an operation that answers only a status: 0 or reply_err(). */
static inline void reply_status(fuse_req_t req, int rc)
{
	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_err(req, 0);
}

/* The stripe that orders open against unlink/rename-over of @ino. */
static inline pthread_mutex_t *open_stripe(struct fs *fs, uint64_t ino)
{
	return &fs->open_stripe[ino % FS_STRIPES];
}

/* ---- attributes (attrs.c) ---------------------------------------------- */

/* The entry of node @a as the kernel gets it (timeouts, generation). */
void fill_entry(struct fs *fs, const struct tree_attr *a,
		struct fuse_entry_param *e);

/* Attributes of @ino. Errors: those of fs_enter() and tree_getattr(). */
int fs_do_getattr(struct fs *fs, uint64_t ino, struct tree_attr *a);
/*
 * SETATTR of the FUSE_SET_ATTR_* fields @to_set of @st on @ino, by @w (a
 * truncate by an unprivileged @w clears set-user-ID and set-group-ID); *out
 * gets the result. Errors: -EROFS, those of fs_enter() and tree_setattr().
 */
int fs_do_setattr(struct fs *fs, const struct fs_who *w, uint64_t ino,
		  const struct stat *st, int to_set, struct tree_attr *out);
/* Whether @w is root or in group @gid (its own or a supplementary one). */
bool fs_in_group(const struct fs_who *w, gid_t gid);
/*
 * After a change of content of @ino (write, truncate, fallocate) by @w,
 * whose result *a is: clears the set-user-ID and set-group-ID bits ext4's
 * rule clears for @w, updating *a. A failure is logged (the change stands).
 */
void fs_content_changed(struct fs *fs, const struct fs_who *w, uint64_t ino,
			struct tree_attr *a);
/* Sets @ino's access time by the mount's atime rule (after a read). */
void touch_atime(struct fs *fs, uint64_t ino);

/* ---- names (names.c) --------------------------------------------------- */

/* LOOKUP of @name in @parent; a miss is e->ino 0 (a cached negative
 * entry), not an error. Counts one lookup on success. */
int fs_do_lookup(struct fs *fs, uint64_t parent, const char *name,
		 struct fuse_entry_param *e);
/* The target of symlink @ino into *target (malloc'd, the caller's).
 * Errors: those of fs_enter() and tree_readlink(). */
int fs_do_readlink(struct fs *fs, uint64_t ino, char **target);
/* Creates @name in @parent (any node type); counts one lookup. */
int fs_do_mknode(struct fs *fs, const struct fuse_ctx *ctx, uint64_t parent,
		 const char *name, mode_t mode, uint64_t rdev,
		 const char *target, bool opened, struct tree_attr *a);

/* A hard link @newname in @newparent to @ino (an O_TMPFILE file's first
 * name: no longer an orphan); *a its attributes; counts one lookup.
 * Errors: -EROFS, -ENAMETOOLONG, -ENOMEM, those of fs_enter() and
 * tree_link(). */
int fs_do_link(struct fs *fs, uint64_t ino, uint64_t newparent,
	       const char *newname, struct tree_attr *a);
/* unlink (@dir false) or rmdir (@dir true) of @name in @parent; a node
 * still in use becomes an orphan. */
int fs_do_remove(struct fs *fs, uint64_t parent, const char *name, bool dir);
/* rename(2)/renameat2(2) of @name in @parent to @newname in @newparent,
 * @flags RENAME_*; a whiteout is owned by @ctx's caller. */
int fs_do_rename(struct fs *fs, const struct fuse_ctx *ctx, uint64_t parent,
		 const char *name, uint64_t newparent, const char *newname,
		 unsigned int flags);

/* ---- files (files.c) --------------------------------------------------- */

/*
 * Opens @ino for @w (counted: fs_do_release() ends it; O_TRUNC truncates, a
 * change of content); *out is the handle, the caller's until then, and
 * *keep_cache (if not NULL) whether the kernel may keep the file's pages.
 * An open for writing reads the inode's flags first (chattr): immutable
 * opens for reading only, append-only for writing with O_APPEND only.
 * Errors: -EROFS, -ENOMEM, -ENOENT, -EPERM (the flags), those of
 * tree_setattr().
 */
int fs_do_open(struct fs *fs, const struct fs_who *w, uint64_t ino, int flags,
	       struct fh **out, bool *keep_cache);
/* As fs_do_open(), for a node just made (create, O_TMPFILE): it has no
 * immutable or append-only flag (never inherited), so none is read. */
int fs_do_open_new(struct fs *fs, const struct fs_who *w, uint64_t ino,
		   int flags, bool held, struct fh **out, bool *keep_cache);
/* Ends an open of @ino made by fs_do_open() and frees @fh (may be NULL). */
void fs_do_release(struct fs *fs, uint64_t ino, struct fh *fh);
/*
 * CREATE of @name in @parent by @w with open @flags: a new regular file, or,
 * without O_EXCL, the one another creator made meanwhile, opened as
 * fs_do_open() opens (O_TRUNC truncates it, clearing set-user-ID as a
 * truncate does). *e is its entry (one lookup counted), *fh the open.
 * Errors: those of fs_do_mknode(), fs_do_lookup() and fs_do_open(), -EISDIR.
 */
int fs_do_create(struct fs *fs, const struct fs_who *w, uint64_t parent,
		 const char *name, mode_t mode, int flags,
		 struct fuse_entry_param *e, struct fh **fh);
/* Reads up to @size bytes at @off of @ino into @buf; *nread is how many.
 * Errors: -EINVAL, those of fs_enter() and tree_read(). */
int fs_do_read(struct fs *fs, uint64_t ino, size_t size, off_t off, char *buf,
	       size_t *nread);
/*
 * Writes @size bytes of @buf at @off of @ino (at its end if @append) for @w
 * (clearing set-user-ID as fs_content_changed() says); @direct: the write
 * went past the kernel's page cache (INODE_PAGES_STALE). *out is the
 * result. Errors: -EROFS, -EINVAL, those of fs_enter() and tree_write().
 */
int fs_do_write(struct fs *fs, const struct fs_who *w, uint64_t ino,
		const char *buf, size_t size, off_t off, bool append,
		bool direct, struct tree_attr *out);
/* FSYNC (of a file or folder): syncs the store's write-ahead log. */
int fs_do_fsync(struct fs *fs);
/* At unmount: frees every open file's handle whose RELEASE never came (the
 * kernel sends it after the last close, so an unmount can overtake it). */
void fs_close_all(struct fs *fs);
/*
 * FALLOCATE with @mode (KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE) of @len bytes
 * at @off of @ino for @w, a change of content. Errors: -EOPNOTSUPP (other
 * modes), -EROFS, -EINVAL, those of fs_enter() and tree_fallocate().
 */
int fs_do_fallocate(struct fs *fs, const struct fs_who *w, uint64_t ino,
		    int mode, off_t off, off_t len, struct tree_attr *out);
/* LSEEK SEEK_DATA/SEEK_HOLE from @off in @ino: *res the offset found.
 * Errors: -EINVAL (other whence), -ENXIO (none there, or @off < 0), those of
 * fs_do_getattr() and tree_seek(). */
int fs_do_lseek(struct fs *fs, uint64_t ino, off_t off, int whence,
		uint64_t *res);

/* ---- listings (dirs.c) ------------------------------------------------- */

/*
 * Packs one entry of a listing into @buf of @room bytes as
 * fuse_add_direntry() (READDIR: @e's attributes) or fuse_add_direntry_plus()
 * (READDIRPLUS: all of @e) does, @next the offset that resumes after it:
 * returns the bytes the entry takes, written only if that is at most @room.
 * @ctx is fs_do_readdir()'s (the daemon's: the request).
 */
typedef size_t fs_dirent_pack(void *ctx, char *buf, size_t room,
			      const char *name,
			      const struct fuse_entry_param *e, off_t next);
/*
 * Lists folder @ino from offset @off (0, or one a listing gave) into @buf of
 * @size bytes with @pack (and @ctx), as many entries as fit: "." and ".."
 * (offsets 1 and 2, no attributes), then the children in key order, each
 * with its name's cookie as the next offset; *used is the bytes packed.
 * @plus: every child packed counts one lookup (READDIRPLUS). An error after
 * the first entry ends the listing there (it comes back at the next call).
 * Errors: -ENOTDIR (an inode addressed by number), -ENOMEM, those of
 * fs_enter(), tree_dir_open() and tree_dir_next().
 */
int fs_do_readdir(struct fs *fs, uint64_t ino, size_t size, off_t off,
		  bool plus, fs_dirent_pack *pack, void *ctx, char *buf,
		  size_t *used);

/* ---- extended attributes (xattrs.c) ---------------------------------- */

/* Sets xattr @name of @ino to @value (@size bytes, setxattr(2) @flags), or
 * removes it when @value is NULL. Errors: -EOPNOTSUPP (SELinux, a namespace
 * ext4 has not: system.* but the ACLs, no known prefix), -EINVAL (nothing
 * after the prefix),
 * -EROFS, those of tree_setxattr() and tree_removexattr(). */
int fs_do_setxattr(struct fs *fs, uint64_t ino, const char *name,
		   const char *value, size_t size, int flags);
/* The value of xattr @name of @ino (*val malloc'd, the caller's, also on
 * error) for a buffer of @size bytes (0: the size only). Errors:
 * -EOPNOTSUPP, -EINVAL (as fs_do_setxattr()), -ERANGE (does not fit), those of tree_getxattr(). */
int fs_do_getxattr(struct fs *fs, uint64_t ino, const char *name, size_t size,
		   void **val, size_t *len);
/* The names of @ino's xattrs, as fs_do_getxattr() gives a value; trusted.*
 * ones only to a caller with CAP_SYS_ADMIN (@req NULL: shown), asked only
 * when there are some. Errors: -ERANGE, those of tree_listxattr(). */
int fs_do_listxattr(struct fs *fs, fuse_req_t req, uint64_t ino, size_t size,
		    char **list, size_t *len);

/* ---- O_TMPFILE (tmpfile.c) -------------------------------------------- */

/*
 * open(O_TMPFILE) by @w in folder @parent: *a the new orphan file's
 * attributes (one lookup counted), *fh its open. Errors: -EROFS, -ENOTDIR,
 * those of fs_enter(), tree_mktmp() and fs_do_open().
 */
int fs_do_tmpfile(struct fs *fs, const struct fs_who *w, uint64_t parent,
		  mode_t mode, int flags, struct tree_attr *a, struct fh **fh);

/* ---- request handlers (the table in ops.c) ----------------------------- */

void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fs_forget_multi(fuse_req_t req, size_t count,
		     struct fuse_forget_data *forgets);
void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		struct fuse_file_info *fi);
void fs_readlink(fuse_req_t req, fuse_ino_t ino);
void fs_statfs(fuse_req_t req, fuse_ino_t ino);
void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	      dev_t rdev);
void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		const char *name);
void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
	       fuse_ino_t newparent, const char *newname, unsigned int flags);
void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
	     const char *newname);
void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi);
void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi);
void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
	      off_t off, struct fuse_file_info *fi);
void fs_release_file(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
	      struct fuse_file_info *fi);
void fs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
		  off_t len, struct fuse_file_info *fi);
void fs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
	      struct fuse_file_info *fi);
void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi);
void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 const char *value, size_t size, int flags);
void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* ---- inode flags (ioctl.c) --------------------------------------------- */

/* FS_*_FL (chattr) of the store's user flags @tree. */
unsigned fs_flags_to_fl(uint32_t tree);
/* The store's flags of FS_*_FL @fl. Errors: -EOPNOTSUPP (a flag pathfs does
 * not keep). */
int fs_flags_from_fl(unsigned fl, uint32_t *tree);
/* The user flags (TREE_F_USER) of @ino. Errors: those of fs_do_getattr(). */
int fs_do_getflags(struct fs *fs, uint64_t ino, uint32_t *flags);
/* Sets the user flags of @ino to @flags for @w: its owner or root; changing
 * IMMUTABLE or APPEND root only. Errors: -EPERM, -EROFS, those of
 * fs_enter() and tree_setflags(). */
int fs_do_setflags(struct fs *fs, const struct fs_who *w, uint64_t ino,
		   uint32_t flags);
void fs_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
	      struct fuse_file_info *fi, unsigned flags, const void *in_buf,
	      size_t in_bufsz, size_t out_bufsz);

#endif
