/*
 * parent.c - the reverse index: an inode number leads to its parent folder
 * and name, so a node is found by number alone (file handles:
 * open_by_handle_at(2), an NFS export of a mount) in a store keyed by path.
 *
 * PARENT#<ino> exists for every node with exactly one name other than the
 * root: folders, and files, symlinks and special files never hard-linked. It
 * holds the parent's inode number and the name, not the path, so moving a
 * folder rewrites the record of that folder only: its descendants keep their
 * parent (the subtree rewrite of journal.c copies their nodes and leaves
 * their records alone). A hard-linked inode (TREE_F_LINKED) has none: its
 * INODE record finds it by number (an orphan is there too, with nlink 0).
 *
 * Every namespace change keeps the index in the batch that changes the name:
 * tree_mknode() puts; the first tree_link() deletes (the inode is found by
 * INODE# from then on); tree_batch_remove() and the cascade's deletes drop
 * it; tree_batch_moved() (rename, exchange, the end of a folder rewrite)
 * puts the new place; a clone puts its new inodes. A store of format 3 has
 * no index: parent_index_build() builds it at the first read-write open
 * (store.c), from scratch each time it runs, so a crash midway is repaired
 * by running it again.
 *
 * tree_find_ino() walks the records up to the root (one point read per
 * level), then reads the node at the path built: it must carry the number
 * asked for, so a record left wrong (a crash, a bug) can only give -ENOENT,
 * never another file. fsck checks every record against the tree.
 *
 * Value: version byte 1, varint parent inode, then the name (the rest).
 *
 * Limits: a walk reads as many records as the node is deep; it reads
 * without locks, so a rename of an ancestor in the same moment may make it
 * fail (-ENOENT: the caller may retry).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec_i.h"
#include "crash_hook_i.h"
#include "drive_i.h"
#include "log.h"
#include "parent_i.h"

#define PARENT_VERSION 1

void parent_batch_put(struct tree *t, struct kv_batch *b, uint64_t ino,
		      uint64_t parent, const char *path)
{
	struct sbuf k = {0}, v = {0};

	key_parent(&k, t->name, ino);
	sbuf_addc(&v, PARENT_VERSION);
	put_varint(&v, parent);
	sbuf_adds(&v, path_name(path));
	kv_batch_put(b, k.buf, k.len, v.buf, v.len);
	sbuf_release(&k);
	sbuf_release(&v);
}

void parent_batch_delete(struct tree *t, struct kv_batch *b, uint64_t ino)
{
	struct sbuf k = {0};

	key_parent(&k, t->name, ino);
	kv_batch_delete(b, k.buf, k.len);
	sbuf_release(&k);
}

int parent_decode(const char *val, size_t vlen, uint64_t *parent,
		  struct sbuf *name)
{
	const char *p = val, *end = val + vlen;

	if (vlen < 1 || val[0] != PARENT_VERSION)
		return -EIO;
	p++;
	if (get_varint(&p, end, parent))
		return -EIO;
	if (p == end || end - p > TREE_NAME_MAX || memchr(p, '/', end - p) ||
	    memchr(p, '\0', end - p))
		return -EIO;
	sbuf_reset(name);
	sbuf_add(name, p, (size_t)(end - p));
	sbuf_nul(name);
	return 0;
}

int parent_get(struct tree *t, uint64_t ino, uint64_t *parent,
	       struct sbuf *name)
{
	struct sbuf k = {0};
	char *val = NULL;
	size_t vlen;
	int rc;

	key_parent(&k, t->name, ino);
	rc = kv_get(t->store->kv, k.buf, k.len, &val, &vlen);
	if (rc == 0) {
		rc = parent_decode(val, vlen, parent, name);
		if (rc)
			plog(LOG_ERR,
			     "drive %s: PARENT#%016llx: value does "
			     "not decode",
			     t->name, (unsigned long long)ino);
	}
	free(val);
	sbuf_release(&k);
	return rc;
}

/*
 * The path of @ino from its records, into @path (NUL-terminated).
 * Errors: -ENOENT (a record is missing, or the walk does not reach the root
 * within TREE_PATH_MAX bytes: a loop), -EIO.
 */
static int walk_up(struct tree *t, uint64_t ino, struct sbuf *path)
{
	struct sbuf name = {0}, rev = {0};
	uint64_t cur = ino, parent;
	int rc = 0;

	/* names from the node up, each preceded by "/", reversed at the end */
	while (cur != TREE_ROOT_INO) {
		rc = parent_get(t, cur, &parent, &name);
		if (rc)
			goto out;
		if (rev.len + name.len + 1 > TREE_PATH_MAX) {
			rc = -ENOENT;
			goto out;
		}
		for (size_t i = name.len; i > 0; i--)
			sbuf_addc(&rev, name.buf[i - 1]);
		sbuf_addc(&rev, '/');
		cur = parent;
	}
	sbuf_reset(path);
	if (!rev.len)
		sbuf_addc(path, '/');
	for (size_t i = rev.len; i > 0; i--)
		sbuf_addc(path, rev.buf[i - 1]);
	sbuf_nul(path);
out:
	sbuf_release(&name);
	sbuf_release(&rev);
	return rc;
}

uint32_t tree_generation(const struct tree *t)
{
	uint64_t c = (uint64_t)t->created_ns;
	uint32_t g = (uint32_t)(c ^ (c >> 32));

	return g ? g : 1;
}

int tree_find_ino(struct tree *t, uint64_t ino, char **path,
		  struct tree_attr *out)
{
	struct sbuf p = {0};
	struct node n = {0};
	int rc;

	*path = NULL;
	if (ino == 0)
		return -ENOENT;
	if (t->store->format < PARENT_FORMAT)
		return -EOPNOTSUPP;
	rc = walk_up(t, ino, &p);
	if (rc == -ENOENT) {
		/* no record: a hard-linked inode, found by number, if it still
		 * has a name (an orphan's number no longer leads anywhere) */
		rc = tree_get_inode(t, ino, &n);
		if (rc == 0 && n.a.nlink == 0)
			rc = -ENOENT;
		if (rc == 0)
			*out = n.a;
		goto out;
	}
	if (rc)
		goto out;
	rc = tree_get_node(t, p.buf, &n, false);
	if (rc == 0 && (n.a.ino != ino || (n.a.flags & TREE_F_LINKED)))
		rc = -ENOENT; /* not this inode's place (any more) */
	if (rc)
		goto out;
	*out = n.a;
	*path = p.buf;
	p.buf = NULL;
out:
	node_release(&n);
	sbuf_release(&p);
	return rc;
}

int parent_index_build(struct tree *t, uint64_t *count)
{
	struct sbuf lo = {0}, hi = {0}, path = {0}, last = {0};
	struct node_iter ni = {0};
	struct kv_batch *b = kv_batch_new(t->store->kv);
	struct crash_hook h;
	uint64_t last_ino = 0;
	size_t n = 0;
	int rc;

	*count = 0;
	crash_hook_init(&h);
	/* from scratch: whatever an interrupted run (or anything else) left */
	key_kind_range(&lo, &hi, t->name, KEY_PARENT);
	kv_batch_delete_range(b, lo.buf, lo.len, hi.buf, hi.len);
	rc = node_iter_open(&ni, t, NODES_ALL, NULL, NULL);
	while (rc == 0 && (rc = node_iter_next(&ni)) == 1) {
		size_t pl;
		struct node nd = {0};

		rc = 0;
		sbuf_reset(&path);
		if (node_iter_path(&ni, &path) || path_check(path.buf) ||
		    !strcmp(path.buf, "/") || node_iter_node(&ni, &nd, false))
			continue; /* fsck's to report */
		if (nd.a.flags & TREE_F_LINKED)
			continue; /* (no target read: nothing to release) */
		/* siblings come together in key order: one read per folder */
		pl = path_parent_len(path.buf);
		if (!last.buf || last.len != (pl ? pl : 1) ||
		    memcmp(last.buf, pl ? path.buf : "/", last.len)) {
			struct node pn = {0};

			sbuf_reset(&last);
			sbuf_add(&last, pl ? path.buf : "/", pl ? pl : 1);
			sbuf_nul(&last);
			last_ino = 0;
			if (tree_get_node(t, last.buf, &pn, false) == 0 &&
			    S_ISDIR(pn.a.mode))
				last_ino = pn.a.ino;
			node_release(&pn);
		}
		if (!last_ino)
			continue; /* no parent: fsck's to report */
		parent_batch_put(t, b, nd.a.ino, last_ino, path.buf);
		(*count)++;
		if (++n >= t->store->opt.rename_batch) {
			rc = kv_batch_commit(t->store->kv, b, false);
			kv_batch_clear(b);
			if (rc)
				goto out;
			crash_hook_batch(&h);
			n = 0;
		}
	}
	if (rc == 0)
		rc = kv_batch_commit(t->store->kv, b, true);
out:
	node_iter_close(&ni);
	kv_batch_free(b);
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&path);
	sbuf_release(&last);
	return rc;
}
