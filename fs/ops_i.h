/*
 * ops_i.h - what the FUSE operation files of the daemon (ops.c, names.c,
 * attrs.c, files.c, tmpfile.c, dirs.c, xattrs.c) share: the open-file
 * handle, the reply helpers, the fs_do_<op>() halves one file calls in
 * another, and the request handlers the table in ops.c lists.
 *
 * Every fs_do_*() returns 0 or -errno and never replies; every fs_<op>()
 * handler replies exactly once (an error through reply_err()).
 */
#ifndef PATHFS_OPS_I_H
#define PATHFS_OPS_I_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fs_i.h"

/* One open file: fuse_file_info.fh, malloc'd at OPEN/CREATE, freed at
 * RELEASE. */
struct fh {
	uint64_t ino;
	bool append;	 /* O_APPEND without writeback cache */
	bool atime_done; /* atime considered once per open (relatime) */
};

static inline struct fs *req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* The one error reply: @rc is -errno; anything not an errno is EIO. */
static inline void reply_err(fuse_req_t req, int rc)
{
	fuse_reply_err(req, rc < 0 && rc > -4096 ? -rc : EIO);
}

/* The stripe that orders open against unlink/rename-over of @ino. */
static inline pthread_mutex_t *open_stripe(struct fs *fs, uint64_t ino)
{
	return &fs->open_stripe[ino % FS_STRIPES];
}

/* ---- shared helpers (ops.c) -------------------------------------------- */

/* The entry of node @a as the kernel gets it (timeouts, generation). */
void fill_entry(struct fs *fs, const struct tree_attr *a,
		struct fuse_entry_param *e);
/* Tells the table what the store said about @a (hard-linked or not). */
void note_attr(struct fs *fs, const struct tree_attr *a);
/* Frees orphan @ino in the store (0: nothing to do); a failure is logged. */
void reclaim(struct fs *fs, uint64_t ino);

/* ---- attributes (attrs.c) ---------------------------------------------- */

/* Attributes of @ino. Errors: those of fs_enter() and tree_getattr(). */
int fs_do_getattr(struct fs *fs, uint64_t ino, struct tree_attr *a);
/* The set-user-ID/set-group-ID bits of @a a change of content by the
 * caller of @req clears (ext4's rule). */
mode_t privs_to_clear(fuse_req_t req, const struct tree_attr *a);
/* Clears bits @kill of @ino; *a gets the result. Failures are logged. */
void clear_privs(struct fs *fs, uint64_t ino, mode_t kill,
		 struct tree_attr *a);
/* Sets @ino's access time by the mount's atime rule (after a read). */
void touch_atime(struct fs *fs, uint64_t ino);

/* ---- names (names.c) --------------------------------------------------- */

/* LOOKUP of @name in @parent; a miss is e->ino 0 (a cached negative
 * entry), not an error. Counts one lookup on success. */
int fs_do_lookup(struct fs *fs, uint64_t parent, const char *name,
		 struct fuse_entry_param *e);
/* Creates @name in @parent (any node type); counts one lookup. */
int fs_do_mknode(struct fs *fs, const struct fuse_ctx *ctx, uint64_t parent,
		 const char *name, mode_t mode, uint64_t rdev,
		 const char *target, struct tree_attr *a);

/* ---- files (files.c) --------------------------------------------------- */

/* Opens @ino (counted; O_TRUNC truncates); *out is the handle, the
 * caller's until RELEASE. */
int fs_do_open(struct fs *fs, uint64_t ino, int flags, struct fh **out);

/* ---- request handlers (the table in ops.c) ----------------------------- */

void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fs_forget_multi(fuse_req_t req, size_t count,
		     struct fuse_forget_data *forgets);
void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		int to_set, struct fuse_file_info *fi);
void fs_readlink(fuse_req_t req, fuse_ino_t ino);
void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
	      mode_t mode, dev_t rdev);
void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
	      mode_t mode);
void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		const char *name);
void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
	       fuse_ino_t newparent, const char *newname, unsigned int flags);
void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
	     const char *newname);
void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode, struct fuse_file_info *fi);
void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi);
void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
	      off_t off, struct fuse_file_info *fi);
void fs_release_file(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi);
void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
	      struct fuse_file_info *fi);
void fs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
		  off_t len, struct fuse_file_info *fi);
void fs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
	      struct fuse_file_info *fi);
void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi);
void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 const char *value, size_t size, int flags);
void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 size_t size);
void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

#endif
