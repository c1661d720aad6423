/*
 * dirs.c - listing folders: OPENDIR, READDIR, READDIRPLUS, FSYNCDIR,
 * RELEASEDIR.
 *
 * Folder listings are kept by the kernel across opens (cache_readdir) for
 * an open that is the folder's only one (fs_opendir() says why): listing
 * offsets are name cookies (dircookie.h), so a reader resuming from another
 * open's cached offset resumes at the right name; readdirplus
 * answers listings with attributes from the same scan (each entry counts as
 * a lookup).
 *
 * Limits: "." and ".." are offsets 1 and 2 and carry no attributes.
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

#include "dircookie.h"

void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	uint32_t others = 0;
	bool counted = itab_opendir(fs, ino, &others);

	/*
	 * The kernel keeps one listing of the folder for the opens that ask
	 * for it: it drops it itself when it changes the folder, and
	 * fs_ctl_end() when a pathfsctl command does. Offsets are name
	 * cookies (dircookie.h), so a reader resuming from another open's
	 * cached offset resumes at the right name.
	 *
	 * Only an open with no other open of the folder beside it asks for
	 * the listing. An open that starts listing from offset 0 refills a
	 * listing the folder's changes made stale, and a reader of another
	 * open then looks its offset up in the new listing; if its last name
	 * is gone and the listing ends exactly at a page's end, the kernel
	 * (fs/fuse/readdir.c, 6.18: the "EOF?" test that comes before the
	 * "position not in the cache" fallback) ends that reader's listing
	 * there, missing every name after. An open alone cannot meet a
	 * listing another refilled (tests/helpers/rel_readdir.c, pagecache).
	 */
	fi->fh = counted; /* for fs_releasedir(): a count to give back */
	fi->cache_readdir = counted && others == 0;
	fi->keep_cache = 1;
	if (fuse_reply_open(req, fi) == -ENOENT && counted)
		itab_releasedir(fs, ino); /* interrupted: no RELEASEDIR comes */
}

void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (fi->fh)
		itab_releasedir(req_fs(req), ino);
	fuse_reply_err(req, 0);
}

/*
 * The child name a request at offset @off (> 2) of folder @ino at @path
 * resumes after: the name the cookie stands for, remembered or found by a
 * scan of the folder; *after is malloc'd, or NULL (list from the first
 * child) if no child has that cookie any more and the table forgot it.
 * Errors: those of tree_dir_open() and tree_dir_next().
 */
static int resume_after(struct fs *fs, uint64_t ino, const char *path,
			off_t off, char **after)
{
	struct tree_dir *it = NULL;
	struct tree_attr a;
	const char *name;
	size_t len;
	int rc;

	*after = dircookies_get(fs->cookies, ino, (uint64_t)off);
	if (*after)
		return 0;
	rc = tree_dir_open(&it, fs->tree, path, NULL);
	while (rc == 0 && (rc = tree_dir_next(it, &name, &len, &a)) > 0) {
		if (dircookie_of(fs->cookies, name, len) == (uint64_t)off) {
			*after = strndup(name, len);
			rc = *after ? 0 : -ENOMEM;
			break;
		}
	}
	tree_dir_free(it);
	return rc < 0 ? rc : 0;
}

/* A child packed into a reply, whose lookup and cookie wait for the
 * listing's check (list_page). */
struct listed {
	size_t at; /* where in the reply */
	uint64_t cookie;
	struct tree_attr a;
	char *name;
	size_t namelen;
};

static void listed_free(struct listed *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l[i].name);
	free(l);
}

/*
 * Packs the children of folder @path after @after into @buf from *pos on,
 * as many as fit in @size, read at one moment (tree_dir_open_checked: on
 * DynamoDB the listing is read again while a commit changes the folder
 * among its reads, tree_read_again); *list gets them, *n how many, for
 * the caller's lookups and cookies. An error after some were packed keeps
 * them (it comes back next time). Errors: those of tree_dir_open() and
 * tree_dir_next() (nothing packed), -ENOMEM.
 */
static int list_page(struct fs *fs, const char *path, const char *after,
		     fs_dirent_pack *pack, void *ctx, char *buf, size_t size,
		     size_t *pos, struct listed **list, size_t *n)
{
	struct listed *l = NULL, *grown;
	struct tree_dir *it = NULL;
	struct fuse_entry_param e;
	struct tree_attr a;
	const char *name;
	size_t start = *pos, namelen, cap = 0, k = 0, m;
	uint64_t cookie;
	int rc, tries = 0;

	do {
		listed_free(l, k);
		l = NULL;
		k = cap = 0;
		*pos = start;
		rc = tree_dir_open_checked(&it, fs->tree, path, after);
		while (rc == 0 &&
		       (rc = tree_dir_next(it, &name, &namelen, &a)) > 0) {
			rc = 0;
			fill_entry(fs, &a, &e);
			if (!a.ino)
				e.ino = 0; /* bad record: lookup gives EIO */
			cookie = dircookie_of(fs->cookies, name, namelen);
			m = pack(ctx, buf + *pos, size - *pos, name, &e,
				 (off_t)cookie);
			if (m > size - *pos)
				break;
			if (k == cap) {
				cap = cap ? 2 * cap : 64;
				grown = realloc(l, cap * sizeof(*l));
				if (!grown) {
					rc = -ENOMEM;
					break;
				}
				l = grown;
			}
			l[k] = (struct listed){*pos, cookie, a,
					       strndup(name, namelen), namelen};
			if (!l[k].name) {
				rc = -ENOMEM;
				break;
			}
			k++;
			*pos += m;
		}
		if (rc < 0 && k)
			rc = 0; /* give what fitted */
		if (rc >= 0)
			rc = tree_dir_check(it);
		tree_dir_free(it);
		it = NULL;
	} while (tree_read_again(rc, &tries));
	/* a folder changed during every try: give the last read, as a
	 * listing unchecked (POSIX leaves a name added or removed meanwhile
	 * unspecified) rather than fail the listing of a busy folder */
	if (rc == -ESTALE)
		rc = 0;
	if (rc < 0) {
		listed_free(l, k);
		l = NULL;
		k = 0;
		*pos = start;
	}
	*list = l;
	*n = k;
	return rc < 0 ? rc : 0;
}

int fs_do_readdir(struct fs *fs, uint64_t ino, size_t size, off_t off,
		  bool plus, fs_dirent_pack *pack, void *ctx, char *buf,
		  size_t *used)
{
	char *after = NULL;
	size_t pos = 0, n, nlisted = 0;
	struct listed *list = NULL;
	struct fuse_entry_param e;
	struct fs_path p = {0};
	off_t cur = off < 0 ? 0 : off;
	int rc;

	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out_free;
	if (!p.path) {
		rc = -ENOTDIR;
		goto out;
	}
	/* "." and "..": offsets 1 and 2, no lookup counted (ino 0 in plus) */
	while (cur < 2) {
		const char *dot = cur == 0 ? "." : "..";

		memset(&e, 0, sizeof(e));
		e.attr.st_ino = cur == 0 ? ino : TREE_ROOT_INO;
		e.attr.st_mode = S_IFDIR;
		n = pack(ctx, buf + pos, size - pos, dot, &e, cur + 1);
		if (n > size - pos)
			goto out;
		pos += n;
		cur++;
	}
	if (cur > 2) {
		rc = resume_after(fs, ino, p.path, cur, &after);
		if (rc)
			goto out;
	}
	rc = list_page(fs, p.path, after, pack, ctx, buf, size, &pos, &list,
		       &nlisted);
	for (size_t i = 0; i < nlisted; i++) {
		struct listed *l = &list[i];

		/* readdirplus entries count as lookups in the kernel; one a
		 * rename moved in the table after this listing's read is
		 * sent without its node (ino 0: the kernel looks it up) */
		if (plus && l->a.ino) {
			int lrc = itab_lookup_read(fs, l->a.ino, ino, l->name,
						   l->a.flags, &p);

			if (lrc == -EAGAIN) {
				fill_entry(fs, &l->a, &e);
				e.ino = 0;
				pack(ctx, buf + l->at, size - l->at, l->name,
				     &e, (off_t)l->cookie);
			} else if (lrc < 0) {
				rc = -ENOMEM;
				pos = l->at; /* this one and the rest: later */
				break;
			}
		}
		dircookies_put(fs->cookies, ino, l->cookie, l->name,
			       l->namelen);
	}
	if (rc < 0 && pos)
		rc = 0; /* give what fitted; the error comes back next time */
out:
	fs_leave(fs);
out_free:
	fs_path_release(&p);
	listed_free(list, nlisted);
	free(after);
	*used = pos;
	return rc;
}

/* fs_do_readdir()'s packer of a READDIR (@ctx: the request). */
static size_t pack_dirent(void *ctx, char *buf, size_t room, const char *name,
			  const struct fuse_entry_param *e, off_t next)
{
	return fuse_add_direntry(ctx, buf, room, name, &e->attr, next);
}

/* ... and of a READDIRPLUS. */
static size_t pack_dirent_plus(void *ctx, char *buf, size_t room,
			       const char *name,
			       const struct fuse_entry_param *e, off_t next)
{
	return fuse_add_direntry_plus(ctx, buf, room, name, e, next);
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi, bool plus)
{
	struct fs *fs = req_fs(req);
	size_t used = 0;
	char *buf = malloc(size ? size : 1);
	int rc;

	(void)fi;
	if (!buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	rc = fs_do_readdir(fs, ino, size, off, plus,
			   plus ? pack_dirent_plus : pack_dirent, req, buf,
			   &used);
	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
	/* after the reply (unlike a read's): a listing from the start is an
	 * access (the kernel answers the listings it keeps itself), but the
	 * kernel holds the folder's lock during READDIR, and touch_atime may
	 * wait for a branch command whose invalidation needs that lock */
	if (!rc && off == 0 && !fs->ro && !fs->noatime && !fs->nodiratime)
		touch_atime(fs, ino);
}

void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, fi, false);
}

void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, fi, true);
}

void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi)
{
	reply_status(req, fs_do_fsync(req_fs(req)));
}
