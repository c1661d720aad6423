/*
 * drive.c - the drives of a store (listing, creating, deleting, loading one
 * at its first use), inode allocation and the helpers the other store files
 * share (stripes, node reads, commits, stat conversion).
 *
 * Drives are found without a registry: every key of drive d lies in
 * [DRIVE#d|, DRIVE#d}), so listing drives is one seek per drive, skipping
 * over each drive's range.
 *
 * Inode numbers come from a per-drive counter persisted in META in ranges of
 * INO_RANGE: META's high-water mark is committed before any number of a new
 * range is handed out, and a reopened store starts at the mark, so a number
 * is never reused, even after a crash (a crash only skips the rest of a
 * range). The WAL keeps META's write before any node written with it.
 * Several writers of one drive (store_options.shared) each take their
 * ranges from the mark by a commit conditioned on META as read, so no two
 * of them ever hold one range; a writer's numbers then grow in jumps.
 *
 * Deleting a drive drops its META first, one commit (the drive is gone:
 * not listed, not opened), then the rest of its keys (drive_drop_keys():
 * one range delete, or slices of kv_range_keys() keys on etcd). Keys of a
 * drive without META are what a crash in between left: the next read-write
 * store_open() (store_drive_finish_deletes) or a drive created with the name
 * drops them first.
 *
 * Limits: a loaded drive stays loaded until store_close(), also once deleted
 * (handles to it may still be in use). On etcd, the slices of a drive's
 * deletion read its keys once (keys only: kv_iter_open_keys()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "branch_lock_i.h"
#include "codec_i.h"
#include "crash_hook_i.h"
#include "drive_i.h"
#include "log.h"
#include "lone_i.h"

void tree_free(struct tree *t)
{
	pthread_mutex_destroy(&t->alloc_lock);
	pthread_mutex_destroy(&t->ns_lock);
	for (int i = 0; i < TREE_STRIPES; i++)
		pthread_mutex_destroy(&t->stripe[i]);
	pthread_mutex_destroy(&t->check_lock);
	pthread_mutex_destroy(&t->secret_lock);
	pthread_mutex_destroy(&t->run_lock);
	pthread_mutex_destroy(&t->seen_lock);
	pthread_mutex_destroy(&t->lone_lock);
	pthread_mutex_destroy(&t->watch_lock);
	free(t->lone_inos);
	free(t->seen.raw);
	free(t->running);
	free(t);
}

/* Reads drive @name's META into a new struct tree. Caller holds s->lock. */
static int tree_load(struct store *s, const char *name, struct tree **out)
{
	struct sbuf key = {0};
	struct meta m;
	struct tree *t;
	char *val = NULL;
	size_t vlen;
	int rc;

	key_meta(&key, name);
	rc = kv_get(s->kv, key.buf, key.len, &val, &vlen);
	if (rc)
		goto out;
	rc = meta_decode(val, vlen, &m);
	if (rc) {
		/* a newer format is the caller's one line to say */
		plog(rc == -EPROTONOSUPPORT ? LOG_DEBUG : LOG_ERR,
		     "drive %s: META record %s", name,
		     rc == -EPROTONOSUPPORT ? "is of a newer format"
					    : "does not decode");
		goto out;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		rc = -ENOMEM;
		goto out;
	}
	t->store = s;
	strcpy(t->name, name);
	t->block_size = m.block_size;
	t->created_ns = m.created_ns;
	t->ino_next = m.ino_hwm;
	t->ino_limit = m.ino_hwm;
	pthread_mutex_init(&t->alloc_lock, NULL);
	pthread_mutex_init(&t->ns_lock, NULL);
	for (int i = 0; i < TREE_STRIPES; i++)
		pthread_mutex_init(&t->stripe[i], NULL);
	pthread_mutex_init(&t->check_lock, NULL);
	pthread_mutex_init(&t->secret_lock, NULL);
	pthread_mutex_init(&t->run_lock, NULL);
	pthread_mutex_init(&t->seen_lock, NULL);
	pthread_mutex_init(&t->lone_lock, NULL);
	pthread_mutex_init(&t->watch_lock, NULL);
	/* a writer alone on it so far publishes its holds first */
	rc = lone_join(t);
	if (rc) {
		tree_free(t);
		goto out;
	}
	t->next = s->drives;
	s->drives = t;
	*out = t;
out:
	free(val);
	sbuf_release(&key);
	return rc;
}

int store_drive(struct store *s, const char *name, struct tree **out)
{
	struct tree *t;
	int rc;

	rc = store_drive_name_check(name);
	if (rc)
		return rc;
	pthread_mutex_lock(&s->lock);
	for (t = s->drives; t; t = t->next)
		if (strcmp(t->name, name) == 0)
			break;
	rc = t ? 0 : tree_load(s, name, &t);
	pthread_mutex_unlock(&s->lock);
	if (!rc)
		*out = t;
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 0 if drive @name has its META record, -ENOENT if not, -EIO. (To act on
 * the answer, hold s->lock.) */
static int drive_meta_exists(struct store *s, const char *name)
{
	struct sbuf key = {0};
	char *val = NULL;
	size_t vlen;
	int rc;

	key_meta(&key, name);
	rc = kv_get(s->kv, key.buf, key.len, &val, &vlen);
	free(val);
	sbuf_release(&key);
	return rc;
}

/*
 * The drives of @s, or with @dead the leftovers of drive deletes that a
 * crash interrupted (keys without their META: drive_drop_keys()'s to
 * finish). Errors: -ENOMEM, -EIO.
 */
static int drive_names(struct store *s, bool dead, char ***names, size_t *count)
{
	struct kv_iter *it = NULL;
	struct sbuf seek = {0};
	char **v = NULL;
	size_t n = 0;
	int rc;

	rc = kv_iter_open(&it, s->kv, "DRIVE#", 6, "DRIVE$", 6);
	if (rc)
		return rc;
	while (kv_iter_valid(it)) {
		size_t klen;
		const char *k = kv_iter_key(it, &klen);
		const char *bar = memchr(k + 6, '|', klen - 6);
		char **nv;

		if (!bar)
			break; /* not a drive key: nothing of ours follows */
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			rc = -ENOMEM;
			goto out;
		}
		v = nv;
		v[n] = strndup(k + 6, (size_t)(bar - k - 6));
		if (!v[n]) {
			rc = -ENOMEM;
			goto out;
		}
		/* skip the whole drive: its keys end before DRIVE#<d>} */
		sbuf_reset(&seek);
		sbuf_adds(&seek, "DRIVE#");
		sbuf_adds(&seek, v[n]);
		sbuf_addc(&seek, '|' + 1);
		rc = drive_meta_exists(s, v[n]);
		if (rc && rc != -ENOENT)
			goto out;
		if ((rc == -ENOENT) == dead)
			n++;
		else
			free(v[n]);
		rc = 0;
		kv_iter_seek(it, seek.buf, seek.len);
	}
	rc = kv_iter_status(it);
out:
	kv_iter_free(it);
	sbuf_release(&seek);
	if (rc) {
		store_drive_list_free(v, n);
		return rc;
	}
	/* key order puts "d10" before "d1" ('0' < '|'): sort by name */
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_names);
	*names = v;
	*count = n;
	return 0;
}

int store_drive_list(struct store *s, char ***names, size_t *count)
{
	return drive_names(s, false, names, count);
}

void store_drive_list_free(char **names, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(names[i]);
	free(names);
}

/* 1 if drive @name has any key a scan of its range sees, 0 if none, or
 * -EIO. */
static int drive_has_keys(struct store *s, const char *name)
{
	struct sbuf lo = {0}, hi = {0};
	struct kv_iter *it = NULL;
	int rc;

	key_drive_range(&lo, &hi, name);
	rc = kv_iter_open(&it, s->kv, lo.buf, lo.len, hi.buf, hi.len);
	if (rc == 0)
		rc = kv_iter_valid(it) ? 1 : kv_iter_status(it);
	kv_iter_free(it);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

static int drive_drop_keys(struct store *s, const char *name,
			   struct crash_hook *h);

int store_drive_create(struct store *s, const char *name, uid_t uid, gid_t gid)
{
	struct sbuf key = {0}, val = {0};
	struct kv_batch *b = NULL;
	struct tree_attr root = {0};
	struct meta m = {0};
	int rc;

	rc = store_drive_name_check(name);
	if (rc)
		return rc;
	if (kv_read_only(s->kv))
		return -EROFS;
	pthread_mutex_lock(&s->lock);
	rc = drive_meta_exists(s, name);
	if (rc == 0)
		rc = -EEXIST;
	if (rc != -ENOENT)
		goto out;
	/* what an interrupted delete of a drive of that name left */
	rc = drive_has_keys(s, name);
	if (rc == 1)
		rc = drive_drop_keys(s, name, NULL);
	if (rc)
		goto out;
	key_meta(&key, name);
	m.format = TREE_FORMAT_VERSION;
	m.created_ns = tree_now_ns();
	m.block_size = DEFAULT_BLOCK_SIZE;
	m.ino_hwm = INO_RANGE; /* hands out 2 .. INO_RANGE-1 first */
	b = kv_batch_new(s->kv);
	meta_encode(&val, &m);
	kv_batch_put(b, key.buf, key.len, val.buf, val.len);

	root.ino = TREE_ROOT_INO;
	root.mode = S_IFDIR | 0755;
	root.uid = uid;
	root.gid = gid;
	root.nlink = 2;
	root.atime_ns = root.mtime_ns = root.ctime_ns = m.created_ns;
	sbuf_reset(&key);
	sbuf_reset(&val);
	key_node(&key, name, "/");
	node_encode(&val, &root, NULL);
	kv_batch_put(b, key.buf, key.len, val.buf, val.len);
	rc = kv_batch_commit(s->kv, b, true);
	if (rc == 0) {
		/* the next drive handle starts past the root's number */
		struct tree *t;
		rc = tree_load(s, name, &t);
		if (rc == 0)
			t->ino_next = TREE_ROOT_INO + 1;
	}
out:
	pthread_mutex_unlock(&s->lock);
	kv_batch_free(b);
	sbuf_release(&key);
	sbuf_release(&val);
	return rc;
}

/*
 * Drops every key of drive @name whose META is gone, in slices of at most
 * kv_range_keys() keys, one commit each (counted as batches of @h), kind by
 * kind (each kind's range names its family: a scan sees its keys), and
 * last the drive's whole range (empty by then where slices are wanted;
 * else everything, in one commit). Caller holds s->lock. Errors: -EIO and
 * the commits'.
 */
static int drive_drop_keys(struct store *s, const char *name,
			   struct crash_hook *h)
{
	size_t max = kv_range_keys(s->kv);
	struct sbuf lo = {0}, hi = {0};
	struct kv_batch *b = kv_batch_new(s->kv);
	int rc = 0;

	for (int i = 0; max != SIZE_MAX && i < KEY_KINDS && !rc; i++) {
		/* the blocks first: then the rest, every key a scan of the
		 * drive's range sees (drive_names), goes last */
		int kind = i == 0 ? KEY_DATA : i <= KEY_DATA ? i - 1 : i;

		sbuf_reset(&lo);
		sbuf_reset(&hi);
		key_kind_range(&lo, &hi, name, (enum key_kind)kind);
		for (bool more = true; more && !rc;) {
			struct kv_iter *it = NULL;
			struct sbuf cut = {0};
			size_t n = 0;

			rc = kv_iter_open_keys(&it, s->kv, lo.buf, lo.len,
					       hi.buf, hi.len);
			for (; !rc && n < max && kv_iter_valid(it);
			     kv_iter_next(it))
				n++;
			more = !rc && kv_iter_valid(it);
			if (more) {
				size_t klen;
				const char *k = kv_iter_key(it, &klen);

				sbuf_add(&cut, k, klen);
			}
			if (!rc)
				rc = kv_iter_status(it);
			kv_iter_free(it);
			if (!rc && n) {
				kv_batch_clear(b);
				kv_batch_delete_range(b, lo.buf, lo.len,
						      more ? cut.buf : hi.buf,
						      more ? cut.len : hi.len);
				rc = kv_batch_commit(s->kv, b, true);
				if (!rc) {
					crash_hook_commit();
					crash_hook_batch(h);
				}
			}
			if (more) {
				sbuf_reset(&lo);
				sbuf_add(&lo, cut.buf, cut.len);
			}
			sbuf_release(&cut);
		}
	}
	if (!rc) {
		sbuf_reset(&lo);
		sbuf_reset(&hi);
		key_drive_range(&lo, &hi, name);
		kv_batch_clear(b);
		kv_batch_delete_range(b, lo.buf, lo.len, hi.buf, hi.len);
		rc = kv_batch_commit(s->kv, b, true);
	}
	if (!rc)
		kv_compact_range(s->kv, lo.buf, lo.len, hi.buf, hi.len);
	kv_batch_free(b);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

int store_drive_delete(struct store *s, const char *name)
{
	struct crash_hook h;
	struct sbuf key = {0};
	struct kv_batch *b = NULL;
	struct tree **pt;
	int rc;

	rc = store_drive_name_check(name);
	if (rc)
		return rc;
	crash_hook_init(&h);
	pthread_mutex_lock(&s->lock);
	rc = drive_meta_exists(s, name);
	if (rc)
		goto out;
	/* the drive goes with its META, at once; the rest of its keys are
	 * dropped next, in slices where the engine wants them: a crash
	 * between leaves keys without a drive, which the next open (or a
	 * drive made with the name) drops */
	key_meta(&key, name);
	b = kv_batch_new(s->kv);
	kv_batch_delete(b, key.buf, key.len);
	rc = kv_batch_commit(s->kv, b, true);
	if (rc)
		goto out;
	crash_hook_batch(&h);
	/* handles may still be referenced: park them until store_close */
	for (pt = &s->drives; *pt; pt = &(*pt)->next) {
		if (strcmp((*pt)->name, name) == 0) {
			struct tree *t = *pt;
			*pt = t->next;
			t->next = s->dead;
			s->dead = t;
			break;
		}
	}
	rc = drive_drop_keys(s, name, &h);
out:
	pthread_mutex_unlock(&s->lock);
	kv_batch_free(b);
	sbuf_release(&key);
	return rc;
}

int store_drive_finish_deletes(struct store *s, size_t *count)
{
	char **names = NULL;
	size_t n = 0;
	int rc;

	*count = 0;
	pthread_mutex_lock(&s->lock);
	rc = drive_names(s, true, &names, &n);
	for (size_t i = 0; i < n && rc == 0; i++) {
		rc = drive_drop_keys(s, names[i], NULL);
		if (rc == 0)
			plog(LOG_NOTICE,
			     "drive %s: the rest of its deletion is done",
			     names[i]);
	}
	if (rc == 0)
		*count = n;
	pthread_mutex_unlock(&s->lock);
	store_drive_list_free(names, n);
	return rc;
}

/* ---- drive helpers shared by the store files ----------------------------- */

int64_t tree_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

const char *tree_drive_name(const struct tree *t)
{
	return t->name;
}

struct store *tree_store(struct tree *t)
{
	return t->store;
}

size_t tree_block_size(const struct tree *t)
{
	return t->block_size;
}

/*
 * Takes the next range of inode numbers for this open: reads META's
 * high-water mark, raises it by INO_RANGE on condition that META is still
 * as read (kv_batch_expect), and hands out the numbers in between; another
 * writer of the drive that took a range meanwhile makes the commit fail
 * (-EAGAIN), and the range is taken again above its. The mark never goes
 * below this open's own (fsck may have raised it). Caller holds alloc_lock.
 * Errors: -ENOENT (the drive was deleted), as kv_get and kv_batch_commit.
 */
static int tree_take_ino_range(struct tree *t)
{
	struct kv *kv = t->store->kv;
	struct sbuf key = {0}, val = {0};
	int rc;

	key_meta(&key, t->name);
	do {
		struct meta cur;
		struct meta m = {
		    .format = TREE_FORMAT_VERSION,
		    .created_ns = t->created_ns,
		    .block_size = (uint32_t)t->block_size,
		};
		struct kv_batch *b;
		uint64_t ver, start;
		char *v = NULL;
		size_t vlen;

		rc = kv_get_ver(kv, key.buf, key.len, &v, &vlen, &ver);
		if (rc == 0)
			rc = meta_decode(v, vlen, &cur);
		free(v);
		if (rc)
			break;
		start = cur.ino_hwm > t->ino_limit ? cur.ino_hwm : t->ino_limit;
		m.ino_hwm = start + INO_RANGE;
		sbuf_reset(&val);
		meta_encode(&val, &m);
		b = kv_batch_new(kv);
		kv_batch_expect(b, key.buf, key.len, ver);
		kv_batch_put(b, key.buf, key.len, val.buf, val.len);
		rc = kv_batch_commit(kv, b, false);
		kv_batch_free(b);
		if (rc == 0) {
			t->ino_next = start;
			t->ino_limit = m.ino_hwm;
		}
	} while (rc == -EAGAIN);
	sbuf_release(&key);
	sbuf_release(&val);
	return rc;
}

int tree_alloc_ino(struct tree *t, uint64_t *ino)
{
	int rc = 0;

	pthread_mutex_lock(&t->alloc_lock);
	if (t->ino_next >= t->ino_limit)
		rc = tree_take_ino_range(t);
	if (rc == 0)
		*ino = t->ino_next++;
	pthread_mutex_unlock(&t->alloc_lock);
	return rc;
}

/* The distinct stripe indexes of up to four inodes, ascending. */
static int stripes_of(const uint64_t in[4], int out[4])
{
	int n = 0;

	for (int i = 0; i < 4; i++) {
		int s, j;
		if (!in[i])
			continue;
		s = (int)(in[i] % TREE_STRIPES);
		for (j = 0; j < n && out[j] != s; j++)
			;
		if (j < n)
			continue;
		for (j = n; j > 0 && out[j - 1] > s; j--)
			out[j] = out[j - 1];
		out[j] = s;
		n++;
	}
	return n;
}

void tree_lock_inodes(struct tree *t, uint64_t a, uint64_t b, uint64_t c,
		      uint64_t d)
{
	const uint64_t in[4] = {a, b, c, d};
	int s[4];
	int n = stripes_of(in, s);

	for (int i = 0; i < n; i++)
		pthread_mutex_lock(&t->stripe[s[i]]);
}

void tree_unlock_inodes(struct tree *t, uint64_t a, uint64_t b, uint64_t c,
			uint64_t d)
{
	const uint64_t in[4] = {a, b, c, d};
	int s[4];
	int n = stripes_of(in, s);

	for (int i = n - 1; i >= 0; i--)
		pthread_mutex_unlock(&t->stripe[s[i]]);
}

size_t tree_batch_max_ops(const struct tree *t)
{
	return kv_limits(t->store->kv)->batch_ops;
}

bool tree_shared(const struct tree *t)
{
	return t->store->opt.shared && !t->store->opt.read_only;
}

void tree_track(struct tree *t)
{
	if (tree_shared(t)) {
		kv_track(t->store->kv);
		lock_section_start(t);
	}
}

bool tree_retry(struct tree *t, int rc)
{
	bool conflict;

	if (!tree_shared(t))
		return false;
	conflict = kv_untrack(t->store->kv);
	if (lock_section_end(t, conflict))
		return true; /* it waited for a branch lock: again */
	return conflict && rc == -EAGAIN;
}

int tree_commit(struct tree *t, struct kv_batch *b)
{
	int rc = kv_batch_commit(t->store->kv, b, false);

	if (rc == 0)
		crash_hook_commit();
	return rc;
}

/* Reads and decodes one value at @key; logs a value that does not decode. */
static int get_decoded(struct tree *t, const struct sbuf *key, const char *what,
		       struct node *n, bool want_target)
{
	char *val = NULL;
	size_t vlen;
	int rc;

	rc = kv_get(t->store->kv, key->buf, key->len, &val, &vlen);
	if (rc)
		return rc;
	rc = node_decode(val, vlen, n, want_target);
	if (rc == -EIO)
		plog(LOG_ERR, "drive %s: %s: value does not decode (%zu bytes)",
		     t->name, what, vlen);
	free(val);
	return rc;
}

int tree_get_node(struct tree *t, const char *path, struct node *n,
		  bool want_target)
{
	struct sbuf key = {0};
	int rc;

	rc = lock_check_path(t, path);
	if (rc)
		return rc;
	key_node(&key, t->name, path);
	rc = get_decoded(t, &key, path, n, want_target);
	sbuf_release(&key);
	return rc;
}

int tree_get_inode(struct tree *t, uint64_t ino, struct node *n)
{
	struct sbuf key = {0};
	char what[40];
	int rc;

	key_inode(&key, t->name, ino);
	snprintf(what, sizeof(what), "inode %llu", (unsigned long long)ino);
	rc = get_decoded(t, &key, what, n, false);
	sbuf_release(&key);
	return rc;
}

uint64_t tree_attr_blocks(const struct tree *t, const struct tree_attr *a)
{
	uint64_t upto = a->size / 512 + (a->size % 512 != 0);
	uint64_t per = t->block_size / 512;

	if (!S_ISREG(a->mode) || a->blocks == TREE_BLOCKS_UNKNOWN)
		return upto;
	if (a->flags & TREE_F_PREALLOC)
		return a->blocks * per; /* some lie past the size */
	/* no stored byte lies at or past the size (content.c), so the size
	 * bounds what the blocks hold (and a bad count cannot overflow) */
	if (a->blocks >= upto / per + 1)
		return upto;
	return a->blocks * per < upto ? a->blocks * per : upto;
}

void tree_attr_to_stat(const struct tree *t, const struct tree_attr *a,
		       struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_rdev = a->rdev;
	st->st_size = (off_t)a->size;
	st->st_blksize = (blksize_t)t->block_size;
	st->st_blocks = (blkcnt_t)tree_attr_blocks(t, a);
	st->st_atim.tv_sec = a->atime_ns / 1000000000;
	st->st_atim.tv_nsec = a->atime_ns % 1000000000;
	st->st_mtim.tv_sec = a->mtime_ns / 1000000000;
	st->st_mtim.tv_nsec = a->mtime_ns % 1000000000;
	st->st_ctim.tv_sec = a->ctime_ns / 1000000000;
	st->st_ctim.tv_nsec = a->ctime_ns % 1000000000;
	/* keep nanoseconds in [0, 1e9) for times before 1970 */
	if (st->st_atim.tv_nsec < 0) {
		st->st_atim.tv_nsec += 1000000000;
		st->st_atim.tv_sec--;
	}
	if (st->st_mtim.tv_nsec < 0) {
		st->st_mtim.tv_nsec += 1000000000;
		st->st_mtim.tv_sec--;
	}
	if (st->st_ctim.tv_nsec < 0) {
		st->st_ctim.tv_nsec += 1000000000;
		st->st_ctim.tv_sec--;
	}
}

int tree_statfs(struct tree *t, struct statvfs *st)
{
	uint64_t reserve_blocks, keys;
	int rc = kv_space(t->store->kv, st);

	if (rc)
		return rc;
	reserve_blocks = kv_reserve_bytes(t->store->kv) / st->f_frsize;
	st->f_bfree =
	    st->f_bfree > reserve_blocks ? st->f_bfree - reserve_blocks : 0;
	st->f_bavail =
	    st->f_bavail > reserve_blocks ? st->f_bavail - reserve_blocks : 0;
	/* inodes are only bounded by space: report what the space could
	 * hold at ~1 KiB a node, plus what is in use */
	keys = kv_estimate_keys(t->store->kv);
	st->f_ffree = st->f_favail = st->f_bavail * st->f_frsize / 1024;
	st->f_files = st->f_ffree + keys;
	st->f_namemax = TREE_NAME_MAX;
	st->f_flag = kv_read_only(t->store->kv) ? ST_RDONLY : 0;
	return 0;
}
