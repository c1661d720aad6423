/*
 * inodes.c - the daemon's inode table and subtree lock.
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
 * The subtree lock keeps requests out of a branch whose keys a folder rename
 * (or a pathfsctl command) is rewriting, without stopping the rest of the
 * drive: a writer-preferring rwlock that every path request holds for read,
 * plus a list of busy branches. Registering a branch takes the rwlock for
 * write, which waits for the requests in flight to leave; then the long store
 * work runs with no lock held, and requests whose path falls inside a busy
 * branch sleep on a condition variable until it is released, then rebuild
 * their path (which the rename has changed meanwhile).
 *
 * Limits: a path is at most TREE_PATH_MAX bytes, so at most MAX_DEPTH levels
 * (a deeper walk up means a loop in the table: -ENOENT); the busy list is
 * scanned linearly (it holds one entry per rename in flight).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dircookie.h"
#include "fs_i.h"
#include "log.h"

/* levels of a path of TREE_PATH_MAX bytes of 1-byte names */
#define MAX_DEPTH ((TREE_PATH_MAX + 1) / 2)

static int build_path(struct fs *fs, uint64_t ino, const char *name,
		      bool need_path, struct fs_path *p);

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

int fs_init(struct fs *fs, struct store *s, struct tree *t)
{
	pthread_rwlockattr_t ra;
	struct inode *root;
	int i, rc = 0;

	memset(fs, 0, sizeof(*fs));
	fs->store = s;
	fs->tree = t;
	fs->timeout = 3600.0;
	fs->nbuckets = 1024;
	fs->buckets = calloc(fs->nbuckets, sizeof(*fs->buckets));
	if (!fs->buckets) {
		rc = -ENOMEM;
		goto out;
	}
	pthread_mutex_init(&fs->lock, NULL);
	pthread_cond_init(&fs->renamed, NULL);
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(
	    &ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&fs->sublock, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&fs->busy_mutex, NULL);
	pthread_cond_init(&fs->busy_cond, NULL);
	pthread_mutex_init(&fs->ctl_mutex, NULL);
	for (i = 0; i < FS_STRIPES; i++)
		pthread_mutex_init(&fs->open_stripe[i], NULL);
	fs_reclaim_init(fs);
	root = add(fs, TREE_ROOT_INO);
	if (!root) {
		rc = -ENOMEM;
		goto out;
	}
	root->nlookup = 1; /* the kernel's implicit reference */
	rc = dircookies_new(&fs->cookies);
out:
	return rc;
}

void fs_release(struct fs *fs)
{
	struct inode *e, *next;
	struct busy *b, *bn;
	size_t i;

	if (!fs->buckets)
		return;
	for (i = 0; i < fs->nbuckets; i++) {
		for (e = fs->buckets[i]; e; e = next) {
			next = e->next;
			free(e->name);
			free(e);
		}
	}
	free(fs->buckets);
	fs->buckets = NULL;
	fs_reclaim_release(fs);
	dircookies_free(fs->cookies);
	fs->cookies = NULL;
	for (b = fs->busy; b; b = bn) {
		bn = b->next;
		free(b->src);
		free(b->dst);
		free(b);
	}
	fs->busy = NULL;
}

/* Whether a rename finished since @read was built and moved entry @e away
 * from @name in @parent: then a store read made with @read may be older than
 * @e's place and must not be put back (itab_lookup_read). A hard-linked
 * inode keeps its place (it is addressed by number). Caller holds fs->lock. */
static bool moved_since(struct fs *fs, const struct inode *e, uint64_t parent,
			const char *name, const struct fs_path *read)
{
	return e && read && fs->renames_done != read->done &&
	       e->ino != TREE_ROOT_INO && !(e->flags & INODE_LINKED) &&
	       !same_place(e->parent, e->name, parent, name);
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
	 * clears the flag after it. A hard-linked inode's flags are not
	 * trusted here (its name's record is not its INODE record).
	 */
	e->flags &= ~(unsigned)(INODE_NO_ACL | INODE_NO_FLAGS);
	if (!fs->ro && !(attr_flags & TREE_F_LINKED)) {
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

/* Caller holds fs->lock. Two walks up: the length, then the bytes. */
static int build_path(struct fs *fs, uint64_t ino, const char *name,
		      bool need_path, struct fs_path *p)
{
	struct inode *top = find(fs, ino), *e;
	size_t len = 0, pos, n;
	int depth = 0;

	p->gen = fs->ns_gen;
	p->done = fs->renames_done;
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
	rc = build_path(fs, ino, name, need_path, p);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

/* Caller holds fs->sublock. */
static bool busy_hit(struct fs *fs, const char *path)
{
	struct busy *b;

	if (!path)
		return false;
	for (b = fs->busy; b; b = b->next)
		if (tree_path_is_within(path, b->src) ||
		    (b->dst && tree_path_is_within(path, b->dst)))
			return true;
	return false;
}

/* Caller holds fs->sublock. Does @path overlap a busy branch either way? */
static bool busy_overlap(struct fs *fs, const char *path)
{
	struct busy *b;

	for (b = fs->busy; b; b = b->next) {
		if (tree_path_is_within(path, b->src) ||
		    tree_path_is_within(b->src, path))
			return true;
		if (b->dst && (tree_path_is_within(path, b->dst) ||
			       tree_path_is_within(b->dst, path)))
			return true;
	}
	return false;
}

/* Caller holds fs->sublock (any mode); releases it and sleeps until the busy
 * list changes. Returns with nothing held. */
static void wait_busy(struct fs *fs)
{
	uint64_t gen = fs->busy_gen;

	pthread_rwlock_unlock(&fs->sublock);
	if (fs->blocking)
		fs->blocking();
	pthread_mutex_lock(&fs->busy_mutex);
	while (fs->busy_gen == gen)
		pthread_cond_wait(&fs->busy_cond, &fs->busy_mutex);
	pthread_mutex_unlock(&fs->busy_mutex);
}

/* Takes fs->sublock for read, telling the request loop first if that
 * waits (a rename or pathfsctl command holds or wants it for write). */
static void read_lock(struct fs *fs)
{
	if (pthread_rwlock_tryrdlock(&fs->sublock) == 0)
		return;
	if (fs->blocking)
		fs->blocking();
	pthread_rwlock_rdlock(&fs->sublock);
}

static int enter(struct fs *fs, uint64_t ino, const char *name, bool need_path,
		 struct fs_path *p)
{
	int rc;

	for (;;) {
		read_lock(fs);
		rc = itab_path(fs, ino, name, need_path, p);
		if (rc) {
			pthread_rwlock_unlock(&fs->sublock);
			return rc;
		}
		if (!busy_hit(fs, p->path)) {
			fs_step(fs, FS_STEP_BUILT);
			return 0;
		}
		wait_busy(fs);
	}
}

int fs_enter(struct fs *fs, uint64_t ino, const char *name, struct fs_path *p)
{
	return enter(fs, ino, name, false, p);
}

int fs_enter_path(struct fs *fs, uint64_t ino, struct fs_path *p)
{
	return enter(fs, ino, NULL, true, p);
}

int fs_enter2(struct fs *fs, uint64_t ino1, const char *name1,
	      struct fs_path *p1, uint64_t ino2, const char *name2,
	      struct fs_path *p2)
{
	int rc;

	for (;;) {
		read_lock(fs);
		rc = itab_path(fs, ino1, name1, true, p1);
		if (!rc)
			rc = itab_path(fs, ino2, name2, true, p2);
		if (rc) {
			pthread_rwlock_unlock(&fs->sublock);
			return rc;
		}
		if (!busy_hit(fs, p1->path) && !busy_hit(fs, p2->path)) {
			fs_step(fs, FS_STEP_BUILT);
			return 0;
		}
		wait_busy(fs);
	}
}

void fs_leave(struct fs *fs)
{
	pthread_rwlock_unlock(&fs->sublock);
}

/*
 * A follower's request on inode @ino (@name NULL) failed with nothing here
 * in flight: the writer moved or removed the node before the watch told the
 * table. The store's reverse index says where it is now (tree_find_ino);
 * the retry goes there (the watch moves the table soon). @p gets that path,
 * or NULL when the inode is addressed by number (a hard link). Errors:
 * those of tree_find_ino(): -ENOENT when it has no name left (an orphan the
 * writer keeps for its own opens: this mount cannot keep it from being
 * reclaimed at any moment) or the writer moved it between the index's reads.
 */
static int follow_store(struct fs *fs, uint64_t ino, struct fs_path *p)
{
	struct tree_attr a;
	char *path = NULL;
	size_t len;
	int rc;

	rc = tree_find_ino(fs->tree, ino, &path, &a);
	if (rc == 0 && !path) {
		itab_flags(fs, ino, INODE_LINKED, 0);
		p->path = NULL;
		return 0;
	}
	if (rc)
		return rc;
	len = strlen(path) + 1;
	if (len > p->cap) {
		char *nb = realloc(p->buf, len);

		if (!nb) {
			free(path);
			return -ENOMEM;
		}
		p->buf = nb;
		p->cap = len;
	}
	memcpy(p->buf, path, len);
	p->path = p->buf;
	free(path);
	return 0;
}

bool fs_retry(struct fs *fs, int *rc, uint64_t ino, const char *name,
	      struct fs_path *p)
{
	struct fs_path np = {0};
	bool again = false;
	uint64_t upto;
	int frc;

	fs_step(fs, FS_STEP_CALLED);
	if (*rc != -ENOENT)
		return false;
	pthread_mutex_lock(&fs->lock);
	/* every place change that started before the failure ends with its
	 * table update (they never wait for requests meanwhile) */
	upto = fs->rename_seq;
	while (fs->renaming && fs->renaming->seq <= upto)
		pthread_cond_wait(&fs->renamed, &fs->lock);
	/* none ended since @p was built: the table and the store agreed on
	 * the node's place all along, and the miss is the node's own. One
	 * did: rebuild and retry, even to the same path (moved there and
	 * back: the miss was in between) */
	if (fs->ns_gen != p->gen &&
	    build_path(fs, ino, name, false, &np) == 0) {
		struct fs_path old = *p;

		*p = np;
		np = old;
		again = true;
	}
	pthread_mutex_unlock(&fs->lock);
	fs_path_release(&np);
	if (again || !fs->watch || name)
		return again;
	if (!p->path) {
		*rc = -ESTALE;
		return false;
	}
	/* the reverse index misses too while the writer moves the node
	 * between its reads: ask again, a bounded number of times */
	do
		frc = follow_store(fs, ino, p);
	while (frc == -ENOENT && ++p->follows < FS_FOLLOW_MAX);
	if (!frc && ++p->follows <= FS_FOLLOW_MAX)
		return true;
	*rc = frc && frc != -ENOENT ? frc : -ESTALE;
	return false;
}

static struct busy *busy_new(const char *src, const char *dst)
{
	struct busy *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->src = strdup(src);
	b->dst = dst ? strdup(dst) : NULL;
	if (!b->src || (dst && !b->dst)) {
		free(b->src);
		free(b->dst);
		free(b);
		return NULL;
	}
	return b;
}

void fs_rename_start(struct fs *fs, struct fs_renaming *r)
{
	pthread_mutex_lock(&fs->lock);
	r->seq = ++fs->rename_seq;
	r->next = NULL;
	r->prev = fs->renaming_last;
	if (r->prev)
		r->prev->next = r;
	else
		fs->renaming = r;
	fs->renaming_last = r;
	pthread_mutex_unlock(&fs->lock);
	fs_step(fs, FS_STEP_STARTED);
}

void fs_rename_done(struct fs *fs, struct fs_renaming *r)
{
	pthread_mutex_lock(&fs->lock);
	if (r->prev)
		r->prev->next = r->next;
	else
		fs->renaming = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		fs->renaming_last = r->prev;
	fs->renames_done++;
	fs->ns_gen++;
	pthread_cond_broadcast(&fs->renamed);
	pthread_mutex_unlock(&fs->lock);
}

int fs_busy_begin(struct fs *fs, uint64_t ino1, const char *name1,
		  struct fs_path *p1, uint64_t ino2, const char *name2,
		  struct fs_path *p2, struct busy **out)
{
	struct busy *b;
	int rc;

	for (;;) {
		pthread_rwlock_wrlock(&fs->sublock);
		rc = itab_path(fs, ino1, name1, true, p1);
		if (!rc && p2)
			rc = itab_path(fs, ino2, name2, true, p2);
		if (rc)
			goto out;
		if (!busy_overlap(fs, p1->path) &&
		    !(p2 && busy_overlap(fs, p2->path)))
			break;
		wait_busy(fs);
	}
	b = busy_new(p1->path, p2 ? p2->path : NULL);
	if (!b) {
		rc = -ENOMEM;
		goto out;
	}
	b->next = fs->busy;
	fs->busy = b;
	*out = b;
out:
	pthread_rwlock_unlock(&fs->sublock);
	return rc;
}

int fs_busy_begin_paths(struct fs *fs, const char *src, const char *dst,
			struct busy **out)
{
	struct busy *b = busy_new(src, dst);

	if (!b)
		return -ENOMEM;
	for (;;) {
		pthread_rwlock_wrlock(&fs->sublock);
		if (!busy_overlap(fs, src) && !(dst && busy_overlap(fs, dst)))
			break;
		wait_busy(fs);
	}
	b->next = fs->busy;
	fs->busy = b;
	pthread_rwlock_unlock(&fs->sublock);
	*out = b;
	return 0;
}

void fs_busy_lock(struct fs *fs)
{
	pthread_rwlock_wrlock(&fs->sublock);
}

void fs_busy_end(struct fs *fs, struct busy *b)
{
	struct busy **pp;

	for (pp = &fs->busy; *pp; pp = &(*pp)->next) {
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	}
	pthread_mutex_lock(&fs->busy_mutex);
	fs->busy_gen++;
	pthread_cond_broadcast(&fs->busy_cond);
	pthread_mutex_unlock(&fs->busy_mutex);
	pthread_rwlock_unlock(&fs->sublock);
	free(b->src);
	free(b->dst);
	free(b);
}
