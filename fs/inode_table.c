/*
 * inode_table.c - the daemon's inode table: every inode the kernel knows by
 * its node id, its place {parent, name}, its lookup and open counts, and
 * the path of a request rebuilt from it.
 *
 * The table maps every inode the kernel holds a lookup on (and every folder
 * above one) to {parent, name}; a request's path is rebuilt by walking up
 * under fs->lock. An entry lives while the kernel holds lookups on it, while
 * it is open, or while it is the parent of another entry.
 *
 * A node id is valid until the kernel FORGETs it: an inode whose last name
 * goes while the kernel still knows it or has it open (itab_in_use()) is
 * kept by the store as an orphan (INODE_ORPHAN, addressed by number, nlink
 * 0) and reclaimed once it is neither (unused()).
 *
 * Requests reach the table through the subtree lock (subtree_lock.c), which
 * builds their paths here; the table only reads the renames in flight it
 * keeps (fs->ns_gen, for itab_lookup_read()) and takes fs->sublock for
 * itab_record_gained().
 *
 * Limits: a path is at most TREE_PATH_MAX bytes, so at most MAX_DEPTH levels
 * (a deeper walk up means a loop in the table: -ENOENT).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

/* levels of a path of TREE_PATH_MAX bytes of 1-byte names */
#define MAX_DEPTH ((TREE_PATH_MAX + 1) / 2)

static size_t hash_ino(uint64_t ino, size_t nbuckets)
{
	ino *= 0x9E3779B97F4A7C15ULL;
	return (size_t)(ino >> 32) & (nbuckets - 1);
}

/* Caller holds fs->lock. */
static struct inode *find(struct fs *fs, uint64_t ino)
{
	struct inode *e;

	for (e = fs->buckets[hash_ino(ino, fs->nbuckets)]; e; e = e->next)
		if (e->ino == ino)
			return e;
	return NULL;
}

/* Caller holds fs->lock. Doubles the bucket array; on ENOMEM keeps going
 * with longer chains. */
static void grow(struct fs *fs)
{
	size_t n = fs->nbuckets * 2, i;
	struct inode **nb = calloc(n, sizeof(*nb));
	struct inode *e, *next;

	if (!nb)
		return;
	for (i = 0; i < fs->nbuckets; i++) {
		for (e = fs->buckets[i]; e; e = next) {
			next = e->next;
			e->next = nb[hash_ino(e->ino, n)];
			nb[hash_ino(e->ino, n)] = e;
		}
	}
	free(fs->buckets);
	fs->buckets = nb;
	fs->nbuckets = n;
}

/* Caller holds fs->lock. A new detached entry, or NULL (ENOMEM). */
static struct inode *add(struct fs *fs, uint64_t ino)
{
	struct inode *e = calloc(1, sizeof(*e));
	size_t h;

	if (!e)
		return NULL;
	e->ino = ino;
	if (fs->count + 1 > fs->nbuckets)
		grow(fs);
	h = hash_ino(ino, fs->nbuckets);
	e->next = fs->buckets[h];
	fs->buckets[h] = e;
	fs->count++;
	return e;
}

static bool same_place(uint64_t p1, const char *n1, uint64_t p2, const char *n2)
{
	return p1 == p2 && n1 && n2 && !strcmp(n1, n2);
}

/* Caller holds fs->lock. Unlinks and frees @e, then its parent if that is
 * now unused, and so on up. */
static void gc(struct fs *fs, struct inode *e)
{
	while (e && e->ino != TREE_ROOT_INO && !e->nlookup && !e->nopen &&
	       !e->nchildren) {
		struct inode **pp =
		    &fs->buckets[hash_ino(e->ino, fs->nbuckets)];
		struct inode *parent = NULL;

		while (*pp != e)
			pp = &(*pp)->next;
		*pp = e->next;
		fs->count--;
		if (e->parent) {
			parent = find(fs, e->parent);
			if (parent)
				parent->nchildren--;
		}
		free(e->name);
		free(e);
		e = parent;
	}
}

/* Caller holds fs->lock. Detaches @e from its parent (which may then be
 * freed); @e itself is not freed. */
static void detach(struct fs *fs, struct inode *e)
{
	struct inode *parent;

	if (!e->parent)
		return;
	parent = find(fs, e->parent);
	e->parent = 0;
	free(e->name);
	e->name = NULL;
	if (parent) {
		parent->nchildren--;
		gc(fs, parent);
	}
}

/* Caller holds fs->lock. Sets @e's place; -ENOMEM leaves it detached. */
static int attach(struct fs *fs, struct inode *e, struct inode *parent,
		  const char *name)
{
	char *dup;

	if (e->parent == parent->ino && e->name && !strcmp(e->name, name))
		return 0;
	dup = strdup(name);
	if (e->name)
		fs->ns_gen++; /* a path built to its old place is stale */
	parent->nchildren++;  /* before detach: keeps parent alive */
	detach(fs, e);
	if (!dup) {
		parent->nchildren--;
		gc(fs, parent);
		return -ENOMEM;
	}
	e->parent = parent->ino;
	e->name = dup;
	return 0;
}

int itab_init(struct fs *fs)
{
	struct inode *root;

	fs->nbuckets = 1024;
	fs->buckets = calloc(fs->nbuckets, sizeof(*fs->buckets));
	if (!fs->buckets)
		return -ENOMEM;
	root = add(fs, TREE_ROOT_INO);
	if (!root) {
		free(fs->buckets);
		fs->buckets = NULL;
		return -ENOMEM;
	}
	root->nlookup = 1; /* the kernel's implicit reference */
	return 0;
}

void itab_release(struct fs *fs)
{
	struct inode *e, *next;
	size_t i;

	for (i = 0; fs->buckets && i < fs->nbuckets; i++) {
		for (e = fs->buckets[i]; e; e = next) {
			next = e->next;
			free(e->name);
			free(e);
		}
	}
	free(fs->buckets);
	fs->buckets = NULL;
}

/* Whether a place changed in the table since @read was built (ns_gen moved)
 * and entry @e is no longer at @name in @parent: then a store read made
 * with @read may be older than @e's place and must not be put back
 * (itab_lookup_read). ns_gen, not the count of finished renames: a rename
 * moves the table (itab_move) before fs_rename_done() counts it, and a
 * LOOKUP in between put the old place back (rel_revalidate's move, once
 * under ASan in CI). A hard-linked inode keeps its place (it is addressed
 * by number). Caller holds fs->lock. */
static bool moved_since(struct fs *fs, const struct inode *e, uint64_t parent,
			const char *name, const struct fs_path *read)
{
	return e && read && fs->ns_gen != read->gen &&
	       e->ino != TREE_ROOT_INO && !(e->flags & INODE_LINKED) &&
	       !same_place(e->parent, e->name, parent, name);
}

/* Whether lookup() may set INODE_NO_ACL and INODE_NO_FLAGS from a record
 * read with @read (NULL: read at no known moment). The store's one writer
 * (nobody else changes records: itab_record_gained() orders its own
 * changes), or a mount the watch tells of the others' changes when none
 * came since @read was built. A -o ro mount of a RocksDB store, or one
 * whose watch could not start, trusts nothing. Caller holds fs->lock. */
static bool flags_trusted(struct fs *fs, const struct fs_path *read)
{
	if (!fs->ro && !fs->shared)
		return true;
	return fs->watch && read && read->gained == fs->gained_gen;
}

/* itab_lookup(), and itab_lookup_read() with @read. */
static int lookup(struct fs *fs, uint64_t ino, uint64_t parent,
		  const char *name, uint32_t attr_flags,
		  const struct fs_path *read)
{
	struct inode *e, *p;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	if (moved_since(fs, e, parent, name, read)) {
		rc = -EAGAIN;
		goto out;
	}
	if (!e) {
		e = add(fs, ino);
		if (!e) {
			rc = -ENOMEM;
			goto out;
		}
	}
	e->nlookup++;
	if (attr_flags & TREE_F_LINKED)
		e->flags |= INODE_LINKED;
	/*
	 * @attr_flags were read under fs->sublock, which the caller still
	 * holds, so an ACL or inode flags committed after that read are
	 * followed by itab_record_gained(), which waits for this request and
	 * clears the flag after it. Another writer's are heard of by the
	 * watch (itab_changed_elsewhere: before this, flags_trusted fails;
	 * after, it clears them). A hard-linked inode's flags are not
	 * trusted here (its name's record is not its INODE record).
	 */
	e->flags &= ~(unsigned)(INODE_NO_ACL | INODE_NO_FLAGS);
	if (!(attr_flags & TREE_F_LINKED) && flags_trusted(fs, read)) {
		if (!(attr_flags & (TREE_F_ACL | TREE_F_DEFACL)))
			e->flags |= INODE_NO_ACL;
		if (!(attr_flags & (TREE_F_IMMUTABLE | TREE_F_APPEND)))
			e->flags |= INODE_NO_FLAGS;
	}
	if (ino == TREE_ROOT_INO)
		goto out;
	/*
	 * A hard-linked inode keeps the place it has (it is addressed by
	 * number); anything else lives where the store found it.
	 */
	if ((e->flags & INODE_LINKED) && e->parent)
		goto out;
	p = find(fs, parent);
	if (!p)
		goto out; /* the kernel never sends an unknown parent */
	if (attach(fs, e, p, name) == 0)
		e->flags &= ~INODE_STALE;
out:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int itab_lookup(struct fs *fs, uint64_t ino, uint64_t parent, const char *name,
		uint32_t attr_flags)
{
	return lookup(fs, ino, parent, name, attr_flags, NULL);
}

int itab_lookup_read(struct fs *fs, uint64_t ino, uint64_t parent,
		     const char *name, uint32_t attr_flags,
		     const struct fs_path *p)
{
	return lookup(fs, ino, parent, name, attr_flags, p);
}

/*
 * After @e lost a lookup or an open: once it is neither open nor known to
 * the kernel, an orphan is due for reclaim (its number is returned, once:
 * the kernel may send OPEN or GETATTR for a node id until it FORGETs it, so
 * not before), and an entry no child needs leaves the table. Returns 0 if
 * nothing is due. Caller holds fs->lock.
 */
static uint64_t unused(struct fs *fs, struct inode *e)
{
	uint64_t reclaim = 0;

	if (e->nopen || e->nlookup)
		return 0;
	if ((e->flags & (INODE_ORPHAN | INODE_RECLAIMED)) == INODE_ORPHAN) {
		e->flags |= INODE_RECLAIMED;
		reclaim = e->ino;
	}
	if (!e->nchildren) {
		detach(fs, e);
		gc(fs, e);
	}
	return reclaim;
}

uint64_t itab_forget(struct fs *fs, uint64_t ino, uint64_t n)
{
	struct inode *e;
	uint64_t reclaim = 0;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	if (!e || ino == TREE_ROOT_INO)
		goto out;
	e->nlookup = n > e->nlookup ? 0 : e->nlookup - n;
	reclaim = unused(fs, e);
out:
	pthread_mutex_unlock(&fs->lock);
	return reclaim;
}

int itab_open(struct fs *fs, uint64_t ino)
{
	struct inode *e;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	if (!e || (e->flags & (INODE_STALE | INODE_RECLAIMED)))
		rc = -ENOENT;
	else
		e->nopen++;
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

uint64_t itab_close(struct fs *fs, uint64_t ino)
{
	struct inode *e;
	uint64_t reclaim = 0;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	if (!e || !e->nopen)
		goto out;
	e->nopen--;
	reclaim = unused(fs, e);
out:
	pthread_mutex_unlock(&fs->lock);
	return reclaim;
}

uint32_t itab_nopen(struct fs *fs, uint64_t ino)
{
	struct inode *e;
	uint32_t n = 0;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	if (e)
		n = e->nopen;
	pthread_mutex_unlock(&fs->lock);
	return n;
}

bool itab_opendir(struct fs *fs, uint64_t ino, uint32_t *others)
{
	struct inode *e;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	if (e)
		*others = e->ndiropen++;
	pthread_mutex_unlock(&fs->lock);
	return e != NULL;
}

void itab_releasedir(struct fs *fs, uint64_t ino)
{
	struct inode *e;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	if (e && e->ndiropen)
		e->ndiropen--;
	pthread_mutex_unlock(&fs->lock);
}

bool itab_is_open(void *fs, uint64_t ino)
{
	return itab_nopen(fs, ino) > 0;
}

bool itab_in_use(struct fs *fs, uint64_t ino)
{
	struct inode *e;
	bool used;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	used = e && (e->nopen || e->nlookup);
	pthread_mutex_unlock(&fs->lock);
	return used;
}

uint64_t itab_orphaned(struct fs *fs, uint64_t ino)
{
	struct inode *e;
	uint64_t reclaim = ino;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	if (e) {
		e->flags |= INODE_ORPHAN;
		fs->ns_gen++;
		reclaim = unused(fs, e);
	}
	pthread_mutex_unlock(&fs->lock);
	return reclaim;
}

void itab_flags(struct fs *fs, uint64_t ino, unsigned set, unsigned clear)
{
	struct inode *e;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	if (e) {
		e->flags = (e->flags | set) & ~clear;
		if (set & (INODE_STALE | INODE_ORPHAN))
			fs->ns_gen++;
	}
	pthread_mutex_unlock(&fs->lock);
}

void itab_record_gained(struct fs *fs, uint64_t ino, unsigned flag)
{
	struct inode *e;

	pthread_rwlock_wrlock(&fs->sublock);
	pthread_mutex_lock(&fs->lock);
	fs->gained_gen++;
	e = find(fs, ino);
	if (e)
		e->flags &= ~flag;
	pthread_mutex_unlock(&fs->lock);
	pthread_rwlock_unlock(&fs->sublock);
}

void itab_changed_elsewhere(struct fs *fs, uint64_t ino)
{
	const unsigned no = INODE_NO_ACL | INODE_NO_FLAGS | INODE_NO_CAPS;
	struct inode *e;
	size_t i;

	pthread_mutex_lock(&fs->lock);
	fs->gained_gen++;
	if (ino) {
		e = find(fs, ino);
		if (e)
			e->flags &= ~no;
	} else {
		for (i = 0; i < fs->nbuckets; i++)
			for (e = fs->buckets[i]; e; e = e->next)
				e->flags &= ~no;
	}
	pthread_mutex_unlock(&fs->lock);
}

uint64_t itab_gained_gen(struct fs *fs)
{
	uint64_t gen;

	pthread_mutex_lock(&fs->lock);
	gen = fs->gained_gen;
	pthread_mutex_unlock(&fs->lock);
	return gen;
}

void itab_flag_unless_gained(struct fs *fs, uint64_t ino, unsigned flag,
			     uint64_t gen)
{
	struct inode *e;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	if (e && fs->gained_gen == gen)
		e->flags |= flag;
	pthread_mutex_unlock(&fs->lock);
}

bool itab_knows(struct fs *fs, uint64_t ino)
{
	bool is;

	pthread_mutex_lock(&fs->lock);
	is = find(fs, ino) != NULL;
	pthread_mutex_unlock(&fs->lock);
	return is;
}

bool itab_has_flag(struct fs *fs, uint64_t ino, unsigned flag)
{
	struct inode *e;
	bool is;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	is = e && (e->flags & flag);
	pthread_mutex_unlock(&fs->lock);
	return is;
}

bool itab_take_flag(struct fs *fs, uint64_t ino, unsigned flag)
{
	struct inode *e;
	bool was = false;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	if (e) {
		was = e->flags & flag;
		e->flags &= ~flag;
	}
	pthread_mutex_unlock(&fs->lock);
	return was;
}

void itab_move(struct fs *fs, uint64_t ino, uint64_t parent, const char *name)
{
	struct inode *e, *p;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	if (!e || ino == TREE_ROOT_INO ||
	    (!(e->flags & INODE_STALE) &&
	     same_place(e->parent, e->name, parent, name)))
		goto out;
	p = find(fs, parent);
	if (!p || attach(fs, e, p, name)) {
		e->flags |= INODE_STALE;
		detach(fs, e);
	} else {
		e->flags &= ~INODE_STALE;
	}
	fs->ns_gen++;
	gc(fs, e);
out:
	pthread_mutex_unlock(&fs->lock);
}

void itab_unplace(struct fs *fs, uint64_t ino, uint64_t parent,
		  const char *name)
{
	struct inode *e;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	if (e && same_place(e->parent, e->name, parent, name))
		detach(fs, e);
	pthread_mutex_unlock(&fs->lock);
}

void itab_replace_place(struct fs *fs, uint64_t ino, uint64_t parent,
			const char *name, uint64_t newparent,
			const char *newname)
{
	struct inode *e, *p;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	p = find(fs, newparent);
	if (e && p &&
	    (!e->parent || same_place(e->parent, e->name, parent, name)))
		attach(fs, e, p, newname);
	pthread_mutex_unlock(&fs->lock);
}

/* itab_attach_path(), and with @ref one more kernel lookup of the inode at
 * @path (a node found by number: fs_do_lookup of "." and ".."), counted in
 * the same hold of fs->lock as its entry is made; with @read, the check of
 * itab_lookup_read() for each node. */
static int attach_path(struct fs *fs, const char *path, bool ref,
		       const struct fs_path *read, uint64_t *ino)
{
	char *prefix = strdup(path);
	struct tree_attr a;
	uint64_t cur = TREE_ROOT_INO;
	const char *s = path, *slash;
	struct inode *e, *p;
	int rc = 0;

	if (!prefix)
		return -ENOMEM;
	while (*s == '/')
		s++;
	while (*s) {
		slash = strchr(s, '/');
		size_t end = slash ? (size_t)(slash - path) : strlen(path);
		char name[TREE_NAME_MAX + 1];
		size_t nlen = end - (size_t)(s - path);

		if (end > TREE_PATH_MAX || nlen > TREE_NAME_MAX) {
			rc = -ENAMETOOLONG;
			goto out;
		}
		memcpy(prefix, path, end);
		prefix[end] = '\0';
		memcpy(name, s, nlen);
		name[nlen] = '\0';
		rc = tree_lookup(fs->tree, prefix, &a);
		if (rc)
			goto out;
		pthread_mutex_lock(&fs->lock);
		e = find(fs, a.ino);
		p = find(fs, cur);
		if (moved_since(fs, e, cur, name, read)) {
			/* a file rename moved it after our read (a folder
			 * rename cannot: it waits for fs->sublock) */
			rc = -EAGAIN;
		} else if (!e && p) {
			e = add(fs, a.ino);
			if (e && attach(fs, e, p, name)) {
				gc(fs, e);
				e = NULL;
			}
			if (!e)
				rc = -ENOMEM;
		} else if (e && p && !(e->flags & INODE_LINKED)) {
			attach(fs, e, p, name);
			e->flags &= ~INODE_STALE;
		} else if (!p) {
			rc = -ENOENT;
		}
		s = slash ? slash + 1 : s + nlen;
		if (rc == 0 && ref && !*s) {
			e->nlookup++;
			if (a.flags & TREE_F_LINKED)
				e->flags |= INODE_LINKED;
		}
		pthread_mutex_unlock(&fs->lock);
		if (rc)
			goto out;
		cur = a.ino;
	}
	*ino = cur;
out:
	free(prefix);
	return rc;
}

int itab_attach_path(struct fs *fs, const char *path, uint64_t *ino)
{
	return attach_path(fs, path, false, NULL, ino);
}

int itab_lookup_path(struct fs *fs, const char *path, uint64_t *ino,
		     const struct fs_path *read)
{
	return attach_path(fs, path, true, read, ino);
}

int itab_ref(struct fs *fs, uint64_t ino)
{
	struct inode *e;
	int rc = -ENOENT;

	pthread_mutex_lock(&fs->lock);
	e = find(fs, ino);
	if (e && !(e->flags & (INODE_STALE | INODE_RECLAIMED))) {
		if (ino != TREE_ROOT_INO)
			e->nlookup++;
		rc = 0;
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

void itab_orphan_open_below(struct fs *fs, uint64_t top)
{
	struct inode *e, *up;
	size_t i;
	int depth;

	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < fs->nbuckets; i++) {
		for (e = fs->buckets[i]; e; e = e->next) {
			if (!e->nopen || e->ino == top)
				continue;
			depth = 0;
			up = e;
			while (up && up->ino != top && up->parent &&
			       ++depth < MAX_DEPTH)
				up = find(fs, up->parent);
			if (up && up->ino == top) {
				e->flags |= INODE_ORPHAN;
				fs->ns_gen++;
			}
		}
	}
	pthread_mutex_unlock(&fs->lock);
}

int itab_places(struct fs *fs, struct itab_place **out, size_t *n)
{
	struct itab_place *v;
	struct inode *e;
	size_t i, cnt = 0;
	int rc = 0;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&fs->lock);
	v = calloc(fs->count ? fs->count : 1, sizeof(*v));
	for (i = 0; v && i < fs->nbuckets && !rc; i++) {
		for (e = fs->buckets[i]; e && cnt < fs->count; e = e->next) {
			v[cnt].ino = e->ino;
			if (e->name && !(v[cnt].name = strdup(e->name))) {
				rc = -ENOMEM;
				break;
			}
			v[cnt++].parent = e->name ? e->parent : 0;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	if (!v || rc) {
		itab_places_free(v, cnt);
		return -ENOMEM;
	}
	*out = v;
	*n = cnt;
	return 0;
}

void itab_places_free(struct itab_place *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		free(v[i].name);
	free(v);
}

int itab_flagged(struct fs *fs, unsigned flag, uint64_t **out, size_t *n)
{
	struct inode *e;
	uint64_t *v = NULL, *nv;
	size_t i, cnt = 0, cap = 0;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < fs->nbuckets && !rc; i++) {
		for (e = fs->buckets[i]; e && !rc; e = e->next) {
			if (!(e->flags & flag))
				continue;
			if (cnt == cap) {
				cap = cap ? cap * 2 : 64;
				nv = realloc(v, cap * sizeof(*v));
				if (!nv) {
					rc = -ENOMEM;
					break;
				}
				v = nv;
			}
			v[cnt++] = e->ino;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	if (rc) {
		free(v);
		v = NULL;
		cnt = 0;
	}
	*out = v;
	*n = cnt;
	return rc;
}

/* Two walks up: the length, then the bytes. */
int itab_path_locked(struct fs *fs, uint64_t ino, const char *name,
		     bool need_path, struct fs_path *p)
{
	struct inode *top = find(fs, ino), *e;
	size_t len = 0, pos, n;
	int depth = 0;

	p->gen = fs->ns_gen;
	p->gained = fs->gained_gen;
	p->path = NULL;
	if (!top || (top->flags & INODE_STALE))
		return -ENOENT;
	if (!name && !need_path && (top->flags & (INODE_LINKED | INODE_ORPHAN)))
		return 0;
	if (name)
		len = strlen(name) + 1;
	for (e = top; e->ino != TREE_ROOT_INO; e = find(fs, e->parent)) {
		if ((e->flags & INODE_STALE) || !e->parent || !e->name ||
		    ++depth > MAX_DEPTH)
			return -ENOENT;
		len += strlen(e->name) + 1;
		if (!find(fs, e->parent))
			return -ENOENT;
	}
	if (len > TREE_PATH_MAX)
		return -ENAMETOOLONG;
	if (len == 0)
		len = 1; /* the root: "/" */
	if (p->cap < len + 1) {
		char *nb = realloc(p->buf, len + 1);

		if (!nb)
			return -ENOMEM;
		p->buf = nb;
		p->cap = len + 1;
	}
	pos = len;
	p->buf[pos] = '\0';
	p->buf[0] = '/';
	if (name) {
		n = strlen(name);
		pos -= n;
		memcpy(p->buf + pos, name, n);
		p->buf[--pos] = '/';
	}
	for (e = top; e->ino != TREE_ROOT_INO; e = find(fs, e->parent)) {
		n = strlen(e->name);
		pos -= n;
		memcpy(p->buf + pos, e->name, n);
		p->buf[--pos] = '/';
	}
	p->path = p->buf;
	return 0;
}

void fs_path_release(struct fs_path *p)
{
	if (!p)
		return;
	free(p->buf);
	memset(p, 0, sizeof(*p));
}

int itab_path(struct fs *fs, uint64_t ino, const char *name, bool need_path,
	      struct fs_path *p)
{
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = itab_path_locked(fs, ino, name, need_path, p);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}
