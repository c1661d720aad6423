/*
 * content.c - file content in fixed-size blocks keyed DATA#<ino>#<block>.
 *
 * A block is stored only as far as it holds bytes: the last block of a file
 * is cut at the end of file, and blocks that were never written (holes) do not
 * exist and read as zeros. Invariant: no stored byte lies at or past the
 * file's size, so extending a file (truncate up, a write past the end) never
 * needs to zero anything. Truncating down deletes the blocks wholly past the
 * new end and cuts the last kept one. No block lies wholly past the end
 * either, except empty ones fallocate(FALLOC_FL_KEEP_SIZE) allocated there:
 * the record's flag TREE_F_PREALLOC says there may be some (below).
 *
 * A write is one atomic batch: the blocks it touches and the inode's new size
 * and times. Whole blocks are put. A partial block (at most two: the first
 * and the last) is patched when the file has no holes (tree_attr.blocks ==
 * ceil(old size / block size), so the block is known to exist) and the
 * store can (format 3, a kv backend with patches, store->patch): the batch
 * carries only the written bytes and their offset (kv_batch_patch), folded
 * into the block when it is read or compacted. Otherwise (a sparse file, a
 * format-2 store, a backend without patches) the block is read, modified and
 * put whole. A 4 KiB pwrite into a 256 MiB file through the mount took
 * 460 us with the read-modify-write of its 64 KiB block (34x ext4) and took
 * 76 us patched (5.8x), mostly two FUSE round trips; with the GETXATTR gone
 * (fs/devio.c) it is one round trip and ~4x ext4 (BENCHMARKS.md). Writes and
 * truncates of one inode serialise on its stripe; reads take no lock and
 * read blocks from one iterator snapshot. A read reads the record and then
 * the blocks under one kv_pin(): on etcd both at one revision, so a reader
 * that another process's truncate or removal races (a -o ro mount following
 * its writer) gets the file before it or after it, never the old size with
 * the dropped blocks read as zeros (a revision compacted in between: the
 * read starts again). The embedded RocksDB store ignores the pin.
 *
 * Several writers of one drive (etcd, store_options.shared): a write's
 * commit is conditioned on the node and the blocks it read (TREE_TRACKED)
 * and the write runs again when another writer changed one first, so a
 * block merged by read-modify-write keeps the other writer's bytes, and
 * appends land one after the other, none over another. Limits: fallocate,
 * and a truncate big enough to drop in slices, condition their first
 * commit only.
 *
 * Block count (st_blocks). A regular file's record holds how many DATA keys
 * it has (tree_attr.blocks), kept in the same batch as the blocks, under the
 * inode's stripe. Every change of DATA keys must keep it true, so whoever
 * puts or deletes a block must know whether that block existed before:
 *  - a block at or past ceil(old size / block size) never exists (the
 *    invariant above) unless the file has TREE_F_PREALLOC: putting one
 *    adds 1 without a read (appends); with the flag such blocks are read
 *    or counted as the ones below the end;
 *  - a partial block below the old end of a file without holes exists (the
 *    count says every block below the end does): patching it adds nothing;
 *  - any other partial block below the old end is read (read-modify-write):
 *    it existed iff the read found it;
 *  - whole blocks below the old end (overwrites) are counted with one key
 *    iteration over their range (count_blocks()) before the puts, unless
 *    the file has no holes;
 *  - deletes count the keys they drop (drop_counted()); a truncate to 0 or
 *    an unlink needs no count.
 * A record written before the count existed says TREE_BLOCKS_UNKNOWN; the
 * first change under the stripe counts its keys once (blocks_known()).
 * A block may be stored empty (0 bytes): allocated by fallocate, reads as
 * zeros, counts as a block, and SEEK_DATA/SEEK_HOLE see it as a hole.
 * fsck checks the count against the keys and repairs it. A patch is never
 * written where the block might be missing (it would create the block behind
 * the count's back), and since a patch never reaches past the block size or
 * the new end of file, the invariant above holds for patched blocks too:
 * truncate, fallocate, SEEK_DATA/SEEK_HOLE and fsck read blocks through kv,
 * which hands them out patched.
 *
 * fallocate (tree_fallocate) allocates by storing empty blocks, and punches
 * by deleting whole blocks and zeroing the parts of the two end blocks. An
 * LSM store cannot pin disk space for later writes: allocation checks up
 * front that the free space (less the store's reserve) holds every block it
 * allocates, else fails with -ENOSPC having changed nothing; a write into the
 * range later may still meet a disk filled meanwhile. st_blocks counts the
 * allocated blocks, as it counts the written ones.
 *
 * Blocks past the end (FALLOC_FL_KEEP_SIZE, as ext4 preallocates): the
 * empty blocks allocated past the end of file are kept like any other, and
 * the batch that puts the first of them sets TREE_F_PREALLOC in the record.
 * While it is set, writes count or read the blocks they put at any offset
 * (no "append" shortcut, no patches), st_blocks counts every block whole
 * (tree_attr_blocks()), and removing the file drops its blocks with one
 * range delete (tree_content_end()). Any size change (truncate, up, down or
 * to the same size, as ext4 frees preallocation) drops the blocks past the
 * new end and clears the flag. A punch stops at the end of file, as ext4's,
 * so it leaves them. fsck accepts empty blocks past the end only with the
 * flag; a clone copies them with it.
 *
 * Limits: files up to TREE_FILE_MAX (2^50) bytes; a single write is one batch,
 * so its size is bounded by memory (the daemon's writes are at most 1 MiB);
 * a fallocate commits one batch per FALLOC_CHUNK blocks (fewer if the kv
 * engine limits a batch's operations), each consistent on
 * its own (a crash keeps the chunks done: allocation and zeroing are
 * idempotent); SEEK_DATA/SEEK_HOLE work at block granularity.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch_i.h"
#include "content_i.h"
#include "crash_hook_i.h"
#include "drive_i.h"
#include "flags_i.h"
#include "log.h"

/* Point deletes up to this many keys (and a quarter of a batch's operations,
 * kv_limits), then one range delete for the rest. */
#define DROP_POINT_MAX 256

static uint64_t drop_point_max(const struct tree *t)
{
	size_t q = tree_batch_max_ops(t) / 4;

	return q < DROP_POINT_MAX ? q : DROP_POINT_MAX;
}

/* tree_batch_drop_range(); with @count (not NULL) it goes on iterating past
 * the range delete and sets *count to the number of keys dropped. */
static int drop_counted(struct tree *t, struct kv_batch *b, const char *lo,
			size_t lolen, const char *hi, size_t hilen,
			uint64_t *count)
{
	struct kv_iter *it = NULL;
	uint64_t n = 0, max = drop_point_max(t);
	int rc;

	rc = kv_iter_open_keys(&it, t->store->kv, lo, lolen, hi, hilen);
	if (rc)
		goto out;
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen;
		const char *key = kv_iter_key(it, &klen);

		if (n < max)
			kv_batch_delete(b, key, klen);
		else if (n == max)
			kv_batch_delete_range(b, key, klen, hi, hilen);
		if (n++ == max && !count)
			goto out;
	}
	rc = kv_iter_status(it);
	if (rc == 0 && count)
		*count = n;
out:
	kv_iter_free(it);
	return rc;
}

int tree_batch_drop_range(struct tree *t, struct kv_batch *b, const char *lo,
			  size_t lolen, const char *hi, size_t hilen)
{
	return drop_counted(t, b, lo, lolen, hi, hilen, NULL);
}

/* [lo, hi) of the DATA keys of blocks [from, to) of @ino; @to UINT64_MAX is
 * "to the last". */
static void block_range(struct tree *t, struct sbuf *lo, struct sbuf *hi,
			uint64_t ino, uint64_t from, uint64_t to)
{
	key_data_range(lo, hi, t->name, ino, from);
	if (to != UINT64_MAX) {
		sbuf_reset(hi);
		key_data(hi, t->name, ino, to);
	}
}

int tree_count_blocks(struct tree *t, uint64_t ino, uint64_t from, uint64_t to,
		      uint64_t *n)
{
	struct sbuf lo = {0}, hi = {0};
	struct kv_iter *it = NULL;
	int rc;

	*n = 0;
	if (from >= to)
		return 0;
	block_range(t, &lo, &hi, ino, from, to);
	rc = kv_iter_open_keys(&it, t->store->kv, lo.buf, lo.len, hi.buf,
			       hi.len);
	if (rc)
		goto out;
	for (; kv_iter_valid(it); kv_iter_next(it))
		(*n)++;
	rc = kv_iter_status(it);
out:
	kv_iter_free(it);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

/* Makes a->blocks known: a record from before the count gets its DATA keys
 * counted (once; the caller stores the record). Caller holds the stripe. */
static int blocks_known(struct tree *t, struct tree_attr *a)
{
	if (a->blocks != TREE_BLOCKS_UNKNOWN)
		return 0;
	return tree_count_blocks(t, a->ino, 0, UINT64_MAX, &a->blocks);
}

int tree_drop_inode_content(struct tree *t, struct kv_batch *b, uint64_t ino)
{
	struct sbuf lo = {0}, hi = {0};
	int rc;

	key_data_range(&lo, &hi, t->name, ino, 0);
	rc = tree_batch_drop_range(t, b, lo.buf, lo.len, hi.buf, hi.len);
	if (rc)
		goto out;
	sbuf_reset(&lo);
	sbuf_reset(&hi);
	key_xattr_range(&lo, &hi, t->name, ino);
	rc = tree_batch_drop_range(t, b, lo.buf, lo.len, hi.buf, hi.len);
out:
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

void tree_batch_drop_blocks(struct tree *t, struct kv_batch *b, uint64_t ino,
			    uint64_t size)
{
	struct sbuf lo = {0}, hi = {0};
	uint64_t bs = t->block_size, nblk = size / bs + (size % bs != 0);

	/* no stored byte lies at or past the size: the blocks are known */
	if (nblk > drop_point_max(t)) {
		key_data_range(&lo, &hi, t->name, ino, 0);
		kv_batch_delete_range(b, lo.buf, lo.len, hi.buf, hi.len);
	} else {
		for (uint64_t i = 0; i < nblk; i++) {
			sbuf_reset(&lo);
			key_data(&lo, t->name, ino, i);
			kv_batch_delete(b, lo.buf, lo.len);
		}
	}
	sbuf_release(&lo);
	sbuf_release(&hi);
}

/* ---- big drops in slices ------------------------------------------------ */

uint64_t tree_drop_slice(const struct tree *t)
{
	size_t k = kv_range_keys(t->store->kv);

	return k == SIZE_MAX ? UINT64_MAX : k / 2;
}

uint64_t tree_drop_keys(const struct tree *t, const struct tree_attr *a)
{
	uint64_t bs = t->block_size, end = tree_content_end(a);
	uint64_t n =
	    end == UINT64_MAX ? UINT64_MAX : end / bs + (end % bs != 0);

	if (!S_ISREG(a->mode))
		return 0;
	if (a->blocks < n) /* known (not TREE_BLOCKS_UNKNOWN) and lower */
		n = a->blocks;
	return n;
}

bool tree_content_fits(const struct tree *t, const struct tree_attr *a)
{
	return tree_drop_keys(t, a) <= tree_drop_slice(t);
}

/*
 * The slices of tree_shrink_in_slices(): the DATA keys of @ino at or past
 * block @keep, counted from there, the key at position j * @max (j >= 1)
 * starts slice j; *cuts (malloc'd) gets their block numbers in ascending
 * order, *total the keys. A file without holes (blocks == @nblk) needs no
 * read; any other is scanned once. Errors: -EIO, -ENOMEM.
 */
static int slice_cuts(struct tree *t, uint64_t ino, uint64_t keep,
		      uint64_t nblk, bool dense, uint64_t max, uint64_t **cuts,
		      size_t *ncuts, uint64_t *total)
{
	struct sbuf lo = {0}, hi = {0}, pre = {0};
	struct kv_iter *it = NULL;
	size_t n = 0, cap = 0;
	uint64_t pos = 0, *v = NULL;
	int rc = 0;

	*cuts = NULL;
	*ncuts = 0;
	if (dense) {
		*total = nblk - keep;
		cap = (size_t)(*total / max) + 1;
		v = malloc(cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (uint64_t c = keep + max; c < nblk; c += max)
			v[n++] = c;
		goto out;
	}
	key_drive_prefix(&pre, t->name);
	key_data_range(&lo, &hi, t->name, ino, keep);
	rc = kv_iter_open_keys(&it, t->store->kv, lo.buf, lo.len, hi.buf,
			       hi.len);
	for (; rc == 0 && kv_iter_valid(it); kv_iter_next(it), pos++) {
		size_t klen;
		const char *key = kv_iter_key(it, &klen);
		uint64_t kino, blk;

		if (pos == 0 || pos % max)
			continue;
		if (key_data_decode(key, klen, pre.len, &kino, &blk)) {
			rc = -EIO;
			break;
		}
		if (n == cap) {
			uint64_t *nv;

			cap = cap ? 2 * cap : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[n++] = blk;
	}
	if (rc == 0)
		rc = kv_iter_status(it);
	*total = pos;
	kv_iter_free(it);
out:
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&pre);
	if (rc) {
		free(v);
		return rc;
	}
	*cuts = v;
	*ncuts = n;
	return 0;
}

int tree_shrink_in_slices(struct tree *t, struct attr_ref *r, uint64_t new_size,
			  struct crash_hook *h)
{
	struct tree_attr *a = &r->n.a, prev;
	uint64_t bs = t->block_size, max = tree_drop_slice(t), total;
	uint64_t keep = new_size / bs + (new_size % bs != 0);
	uint64_t nblk = a->size / bs + (a->size % bs != 0), *cuts = NULL;
	bool past = a->flags & TREE_F_PREALLOC; /* blocks past the end */
	struct sbuf lo = {0}, hi = {0};
	struct kv_batch *b = NULL;
	size_t ncuts = 0;
	int rc;

	if (max == UINT64_MAX || !S_ISREG(a->mode) ||
	    (!past && (keep >= nblk || nblk - keep <= max)))
		return 0;
	rc = blocks_known(t, a);
	if (rc || a->blocks <= max)
		return rc;
	rc = slice_cuts(t, a->ino, keep, nblk, !past && a->blocks == nblk, max,
			&cuts, &ncuts, &total);
	if (rc)
		return rc;
	b = kv_batch_new(t->store->kv);
	/* from the end: each slice leaves a shorter file, its count right */
	for (size_t j = ncuts; j-- > 0;) {
		uint64_t from = (uint64_t)(j + 1) * max, gone = total - from;

		kv_batch_clear(b);
		sbuf_reset(&lo);
		sbuf_reset(&hi);
		key_data_range(&lo, &hi, t->name, a->ino, cuts[j]);
		kv_batch_delete_range(b, lo.buf, lo.len, hi.buf, hi.len);
		prev = *a;
		if (a->size > cuts[j] * bs) /* (not past the end) */
			a->size = cuts[j] * bs;
		a->blocks = a->blocks > gone ? a->blocks - gone : 0;
		tree_attr_store(t, b, r);
		rc = tree_commit(t, b);
		if (rc) {
			*a = prev;
			break;
		}
		total = from;
		crash_hook_batch(h);
	}
	kv_batch_free(b);
	free(cuts);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

int tree_drop_file_content(struct tree *t, struct kv_batch *b, uint64_t ino,
			   uint64_t size)
{
	struct sbuf lo = {0}, hi = {0};
	int rc;

	tree_batch_drop_blocks(t, b, ino, size);
	key_xattr_range(&lo, &hi, t->name, ino);
	rc = tree_batch_drop_range(t, b, lo.buf, lo.len, hi.buf, hi.len);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

/*
 * Where a range delete costs an action a key (DynamoDB: range_per_key), the
 * keys of [lo, hi) past the last drop_point_max() are dropped in commits
 * of their own, tree_drop_slice() keys each, first to last; the last ones
 * are added to @b as point deletes. Elsewhere the range is added to @b
 * (tree_batch_drop_range). For an orphan's xattrs, which may be more than
 * one commit holds: nobody reads them, and a crash in between leaves an
 * orphan with fewer. Each slice counts as a batch of @h. Errors: -EIO
 * and a slice's commit's (those committed stay).
 */
static int drop_range_sliced(struct tree *t, struct kv_batch *b,
			     const struct sbuf *lo, const struct sbuf *hi,
			     struct crash_hook *h)
{
	uint64_t keep = drop_point_max(t), slice = tree_drop_slice(t);
	struct kv_iter *it = NULL;
	struct kv_batch *sb = NULL;
	struct key_list l = {0};
	int rc;

	if (!kv_limits(t->store->kv)->range_per_key)
		return tree_batch_drop_range(t, b, lo->buf, lo->len, hi->buf,
					     hi->len);
	rc = kv_iter_open_keys(&it, t->store->kv, lo->buf, lo->len, hi->buf,
			       hi->len);
	for (; rc == 0 && kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen;
		const char *key = kv_iter_key(it, &klen);

		key_list_add(&l, key, klen);
	}
	if (rc == 0)
		rc = kv_iter_status(it);
	kv_iter_free(it);
	if (rc == 0 && l.n > keep)
		sb = kv_batch_new(t->store->kv);
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		bool last = l.n - i <= keep;
		size_t klen;
		const char *key = key_list_key(&l, i, &klen);

		kv_batch_delete(last ? b : sb, key, klen);
		if (!last &&
		    (kv_batch_count(sb) >= slice || l.n - i - 1 == keep)) {
			rc = tree_commit(t, sb);
			kv_batch_clear(sb);
			if (rc == 0)
				crash_hook_batch(h);
		}
	}
	kv_batch_free(sb);
	key_list_release(&l);
	return rc;
}

int tree_drop_orphan_content(struct tree *t, struct kv_batch *b,
			     const struct tree_attr *a, uint64_t ino,
			     struct crash_hook *h)
{
	struct sbuf lo = {0}, hi = {0};
	int rc = 0;

	if (a && S_ISREG(a->mode)) {
		tree_batch_drop_blocks(t, b, ino, tree_content_end(a));
	} else {
		key_data_range(&lo, &hi, t->name, ino, 0);
		rc =
		    tree_batch_drop_range(t, b, lo.buf, lo.len, hi.buf, hi.len);
		sbuf_reset(&lo);
		sbuf_reset(&hi);
	}
	key_xattr_range(&lo, &hi, t->name, ino);
	if (rc == 0)
		rc = drop_range_sliced(t, b, &lo, &hi, h);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

int tree_batch_truncate(struct tree *t, struct kv_batch *b, struct tree_attr *a,
			uint64_t new_size)
{
	struct sbuf lo = {0}, hi = {0};
	uint64_t bs = t->block_size, ino = a->ino, dropped;
	uint64_t keep = (new_size + bs - 1) / bs; /* blocks kept */
	size_t tail = (size_t)(new_size % bs);
	bool past = a->flags & TREE_F_PREALLOC; /* blocks past the end */
	char *val = NULL;
	size_t vlen;
	int rc = 0;

	if (new_size >= a->size && !past)
		goto out;
	a->flags &= ~TREE_F_PREALLOC; /* blocks past @new_size go now */
	if (keep == 0) {
		/* everything goes: no need to count */
		tree_batch_drop_blocks(t, b, ino, past ? UINT64_MAX : a->size);
		a->blocks = 0;
		goto out;
	}
	rc = blocks_known(t, a);
	if (rc)
		goto out;
	key_data_range(&lo, &hi, t->name, ino, keep);
	rc = drop_counted(t, b, lo.buf, lo.len, hi.buf, hi.len, &dropped);
	if (rc)
		goto out;
	a->blocks = a->blocks > dropped ? a->blocks - dropped : 0;
	if (tail == 0 || new_size >= a->size)
		goto out; /* no stored byte lies past the new end */
	/* cut the last kept block at the new end */
	sbuf_reset(&lo);
	key_data(&lo, t->name, ino, keep - 1);
	rc = kv_get(t->store->kv, lo.buf, lo.len, &val, &vlen);
	if (rc == -ENOENT) {
		rc = 0;
		goto out;
	}
	if (rc == 0 && vlen > tail)
		kv_batch_put(b, lo.buf, lo.len, val, tail);
out:
	free(val);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

/* Copies block @blk (@vlen stored bytes at @val) into the part of @buf
 * (file range [@off, @end)) it covers, zero-filling from *pos (everything
 * before *pos is filled) up to it; advances *pos. */
static void fill_block(char *buf, uint64_t off, uint64_t end, uint64_t *pos,
		       uint64_t bstart, const char *val, size_t vlen)
{
	uint64_t from = bstart > *pos ? bstart : *pos;
	uint64_t to = bstart + vlen < end ? bstart + vlen : end;

	if (from > *pos)
		memset(buf + (*pos - off), 0, (size_t)(from - *pos));
	if (to > from)
		memcpy(buf + (from - off), val + (from - bstart),
		       (size_t)(to - from));
	else
		to = from;
	*pos = to;
}

/* tree_read() once, under the caller's kv_pin(). */
static int read_pinned(struct tree *t, const char *path, uint64_t ino,
		       uint64_t off, size_t len, char *buf, size_t *nread)
{
	struct sbuf lo = {0}, hi = {0};
	struct kv_iter *it = NULL;
	struct tree_attr a;
	uint64_t bs = t->block_size, end, first, last, pos;
	char *val = NULL;
	size_t plen, vlen;
	int rc;

	*nread = 0;
	rc = tree_getattr(t, path, ino, &a);
	if (rc)
		goto out;
	if (S_ISDIR(a.mode)) {
		rc = -EISDIR;
		goto out;
	}
	if (!S_ISREG(a.mode)) {
		rc = -EINVAL; /* a symlink's size is its target's length */
		goto out;
	}
	if (off >= a.size || len == 0)
		goto out;
	crash_hook_read_pause();
	if (len > a.size - off)
		len = (size_t)(a.size - off);
	end = off + len;
	first = off / bs;
	last = (end - 1) / bs;
	pos = off;
	key_drive_prefix(&lo, t->name);
	plen = lo.len;
	sbuf_reset(&lo);
	key_data(&lo, t->name, a.ino, first);
	if (first == last) {
		/* one block: a point read is cheaper than an iterator */
		rc = kv_get(t->store->kv, lo.buf, lo.len, &val, &vlen);
		if (rc == -ENOENT) {
			rc = 0;
			vlen = 0;
		}
		if (rc)
			goto out;
		if (vlen > bs) {
			plog(LOG_ERR, "corrupt content block %.*s", (int)lo.len,
			     lo.buf);
			rc = -EIO;
			goto out;
		}
		fill_block(buf, off, end, &pos, first * bs, val, vlen);
		goto done;
	}
	key_data(&hi, t->name, a.ino, last + 1);
	rc = kv_iter_open(&it, t->store->kv, lo.buf, lo.len, hi.buf, hi.len);
	if (rc)
		goto out;
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen;
		const char *key = kv_iter_key(it, &klen);
		const char *v = kv_iter_value(it, &vlen);
		uint64_t kino, blk;

		if (key_data_decode(key, klen, plen, &kino, &blk) ||
		    kino != a.ino || vlen > bs) {
			plog(LOG_ERR, "corrupt content block %.*s", (int)klen,
			     key);
			rc = -EIO;
			goto out;
		}
		fill_block(buf, off, end, &pos, blk * bs, v, vlen);
	}
	rc = kv_iter_status(it);
	if (rc)
		goto out;
done:
	if (pos < end)
		memset(buf + (pos - off), 0, (size_t)(end - pos));
	*nread = len;
out:
	kv_iter_free(it);
	free(val);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

int tree_read(struct tree *t, const char *path, uint64_t ino, uint64_t off,
	      size_t len, char *buf, size_t *nread)
{
	struct kv *kv = t->store->kv;
	int rc, urc, tries = 0;

	for (;;) {
		kv_pin(kv);
		rc = read_pinned(t, path, ino, off, len, buf, nread);
		urc = kv_unpin(kv);
		if (!rc)
			rc = urc;
		if (!tree_read_again(rc, &tries))
			break;
	}
	if (rc)
		*nread = 0;
	return rc;
}

/* tree_attr_lock() of a regular file: a folder is -EISDIR, any other type
 * @notreg. On an error nothing is held (@r is still the caller's to
 * release). */
static int lock_file(struct tree *t, const char *path, uint64_t *ino,
		     struct attr_ref *r, int notreg)
{
	int rc = tree_attr_lock(t, path, ino, r);

	if (rc || S_ISREG(r->n.a.mode))
		return rc;
	tree_unlock_inodes(t, *ino, 0, 0, 0);
	return S_ISDIR(r->n.a.mode) ? -EISDIR : notreg;
}

/* tree_write(), once: its reads and its one commit. */
static int write_once(struct tree *t, const char *path, uint64_t ino,
		      uint64_t off, const char *buf, size_t len, bool append,
		      struct tree_attr *out)
{
	struct attr_ref r = {0};
	struct sbuf k = {0};
	struct kv_batch *b = NULL;
	struct tree_attr *a = &r.n.a;
	uint64_t bs = t->block_size, end, blk, old, limit, added = 0, n;
	uint64_t chk_lo = UINT64_MAX, chk_hi = 0; /* whole blocks to count */
	char *scratch = NULL, *val = NULL;
	bool st = false, dense, past;
	int64_t now;
	int rc;

	rc = lock_file(t, path, &ino, &r, -EINVAL);
	if (rc)
		goto out;
	st = true;
	rc = flags_may_write(a);
	if (rc)
		goto out;
	old = a->size;
	if (append)
		off = old;
	if (off > TREE_FILE_MAX || len > TREE_FILE_MAX - off) {
		rc = -EFBIG;
		goto out;
	}
	if (len == 0)
		goto done;
	rc = blocks_known(t, a);
	if (rc)
		goto out;
	end = off + len;
	/* no block at or past limit exists, unless fallocate put (empty)
	 * blocks past the end: then any block may exist */
	past = a->flags & TREE_F_PREALLOC;
	limit = past ? UINT64_MAX : old / bs + (old % bs != 0);
	/* no holes: every block below the old end exists */
	dense = !past && a->blocks == limit;
	b = kv_batch_new(t->store->kv);
	for (blk = off / bs; blk * bs < end; blk++) {
		uint64_t bstart = blk * bs;
		size_t from = off > bstart ? (size_t)(off - bstart) : 0;
		size_t to = end - bstart < bs ? (size_t)(end - bstart) : bs;
		const char *src = buf + (bstart + from - off);
		size_t vlen = 0, nlen;

		sbuf_reset(&k);
		key_data(&k, t->name, ino, blk);
		if (from == 0 && to == bs) {
			kv_batch_put(b, k.buf, k.len, src, bs);
			if (blk >= limit) {
				added++;
			} else {
				/* whole blocks are contiguous: one range */
				if (chk_lo == UINT64_MAX)
					chk_lo = blk;
				chk_hi = blk + 1;
			}
			continue;
		}
		if (blk < limit && dense && t->store->patch) {
			/* it exists: patch it without reading it */
			kv_batch_patch(b, k.buf, k.len, (uint32_t)from, src,
				       to - from);
			continue;
		}
		/* partial block: merge with what is stored (only blocks
		 * below the limit can exist) */
		free(val);
		val = NULL;
		if (blk < limit) {
			rc = kv_get(t->store->kv, k.buf, k.len, &val, &vlen);
			if (rc == -ENOENT) {
				rc = 0;
				added++;
			}
			if (rc)
				goto out;
			if (vlen > bs) {
				plog(LOG_ERR, "corrupt content block %.*s",
				     (int)k.len, k.buf);
				rc = -EIO;
				goto out;
			}
		} else {
			added++;
		}
		if (!scratch) {
			scratch = malloc(bs);
			if (!scratch) {
				rc = -ENOMEM;
				goto out;
			}
		}
		nlen = vlen > to ? vlen : to;
		if (vlen)
			memcpy(scratch, val, vlen);
		if (from > vlen)
			memset(scratch + vlen, 0, from - vlen);
		memcpy(scratch + from, src, to - from);
		kv_batch_put(b, k.buf, k.len, scratch, nlen);
	}
	if (chk_lo < chk_hi && !dense) {
		rc = tree_count_blocks(t, ino, chk_lo, chk_hi, &n);
		if (rc)
			goto out;
		added += chk_hi - chk_lo - n;
	}
	a->blocks += added;
	now = tree_now_ns();
	if (end > a->size)
		a->size = end;
	a->mtime_ns = now;
	a->ctime_ns = now;
	rc = tree_attr_commit(t, b, &r);
	if (rc)
		goto out;
done:
	if (out)
		*out = *a;
out:
	if (st)
		tree_unlock_inodes(t, ino, 0, 0, 0);
	kv_batch_free(b);
	attr_ref_release(&r);
	sbuf_release(&k);
	free(scratch);
	free(val);
	return rc;
}

int tree_write(struct tree *t, const char *path, uint64_t ino, uint64_t off,
	       const char *buf, size_t len, bool append, struct tree_attr *out)
{
	/* several writers: the node and the blocks it read are its
	 * conditions, so no other writer's bytes of a block it merges, and
	 * no other writer's size or times, are overwritten */
	return TREE_TRACKED(
	    t, write_once(t, path, ino, off, buf, len, append, out));
}

int tree_seek(struct tree *t, uint64_t ino, uint64_t size, uint64_t off,
	      int whence, uint64_t *result)
{
	struct sbuf lo = {0}, hi = {0};
	struct kv_iter *it = NULL;
	uint64_t bs = t->block_size, blk, next;
	size_t plen;
	int rc;

	if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		rc = -EINVAL;
		goto out;
	}
	if (off >= size) {
		rc = -ENXIO;
		goto out;
	}
	key_drive_prefix(&lo, t->name);
	plen = lo.len;
	sbuf_reset(&lo);
	key_data_range(&lo, &hi, t->name, ino, off / bs);
	rc = kv_iter_open(&it, t->store->kv, lo.buf, lo.len, hi.buf, hi.len);
	if (rc)
		goto out;
	next = off / bs; /* the first block not yet known to be data */
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen;
		const char *key = kv_iter_key(it, &klen);
		uint64_t kino;

		size_t vlen;

		if (key_data_decode(key, klen, plen, &kino, &blk)) {
			rc = -EIO;
			goto out;
		}
		if (blk * bs >= size)
			break;
		kv_iter_value(it, &vlen);
		if (vlen == 0)
			continue; /* allocated, never written: a hole */
		if (whence == SEEK_DATA) {
			*result = blk * bs > off ? blk * bs : off;
			goto out;
		}
		if (blk != next)
			break; /* a hole at block next */
		next = blk + 1;
	}
	rc = kv_iter_status(it);
	if (rc)
		goto out;
	if (whence == SEEK_DATA) {
		rc = -ENXIO;
		goto out;
	}
	*result = next * bs > off ? next * bs : off;
	if (*result > size)
		*result = size;
out:
	kv_iter_free(it);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

/* Blocks per batch of tree_fallocate(): 32 MiB of keys at most. */
#define FALLOC_CHUNK 8192

/* What tree_fallocate() does to block @blk ([from, to) of it in the range,
 * @whole: nothing stored in it lies outside the range), which exists iff
 * @exists (then @val/@vlen are its bytes). Updates a->blocks. */
static int falloc_block(struct tree *t, struct kv_batch *b, struct tree_attr *a,
			unsigned mode, uint64_t blk, size_t from, size_t to,
			bool whole, bool exists, const char *val, size_t vlen)
{
	struct sbuf k = {0};
	char *z = NULL;
	int rc = 0;

	key_data(&k, t->name, a->ino, blk);
	if (!(mode & (TREE_FALLOC_PUNCH_HOLE | TREE_FALLOC_ZERO_RANGE))) {
		if (!exists) {
			kv_batch_put(b, k.buf, k.len, "", 0);
			a->blocks++;
		}
		goto out;
	}
	if (whole && (mode & TREE_FALLOC_PUNCH_HOLE)) {
		if (exists) {
			kv_batch_delete(b, k.buf, k.len);
			a->blocks--;
		}
		goto out;
	}
	if (whole || !exists) {
		/* zero range: allocated, nothing stored */
		if (exists || (mode & TREE_FALLOC_ZERO_RANGE))
			kv_batch_put(b, k.buf, k.len, "", 0);
		if (!exists && (mode & TREE_FALLOC_ZERO_RANGE))
			a->blocks++;
		goto out;
	}
	if (vlen <= from)
		goto out; /* zeros there already */
	z = malloc(vlen);
	if (!z) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(z, val, vlen);
	memset(z + from, 0, (to < vlen ? to : vlen) - from);
	/* zeros up to the stored end need not be stored */
	kv_batch_put(b, k.buf, k.len, z, to < vlen ? vlen : from);
out:
	free(z);
	sbuf_release(&k);
	return rc;
}

/* The modes tree_fallocate() takes: allocation (with KEEP_SIZE or not),
 * ZERO_RANGE (with KEEP_SIZE or not), PUNCH_HOLE with KEEP_SIZE. */
static bool falloc_mode_ok(unsigned mode)
{
	if (mode & ~(TREE_FALLOC_KEEP_SIZE | TREE_FALLOC_PUNCH_HOLE |
		     TREE_FALLOC_ZERO_RANGE))
		return false;
	return !(mode & TREE_FALLOC_PUNCH_HOLE) ||
	       (mode & (TREE_FALLOC_ZERO_RANGE | TREE_FALLOC_KEEP_SIZE)) ==
		   TREE_FALLOC_KEEP_SIZE;
}

/* Whether there is room for every block of [first, lastp1) of inode @ino
 * not stored yet (only blocks below @limit can be): all of it must fit, or
 * nothing is done. Errors: -ENOSPC, as tree_count_blocks, tree_statfs. */
static int falloc_room(struct tree *t, uint64_t ino, uint64_t first,
		       uint64_t lastp1, uint64_t limit)
{
	struct statvfs vfs;
	uint64_t n, missing;
	int rc;

	rc = tree_count_blocks(t, ino, first, lastp1 < limit ? lastp1 : limit,
			       &n);
	if (rc)
		return rc;
	missing = lastp1 - first - n;
	rc = tree_statfs(t, &vfs);
	if (rc)
		return rc;
	if (missing > (uint64_t)vfs.f_bavail * vfs.f_frsize / t->block_size)
		return -ENOSPC;
	return 0;
}

/* One tree_fallocate() on inode @ino: what each of its batches needs. */
struct falloc {
	struct tree *t;
	struct tree_attr *a; /* the inode's, its block count kept up */
	uint64_t ino;
	unsigned mode;
	uint64_t off, stop; /* the bytes [off, stop) */
	uint64_t old;	    /* the size before the call */
	uint64_t limit;	    /* no block at or past it exists */
	size_t plen;	    /* the drive prefix's length */
};

/* Adds to @b what tree_fallocate() does to blocks [cb, ce): the stored ones
 * are read in one scan, each block goes to falloc_block(). Errors: -EIO (a
 * key or block that does not decode), -ENOMEM, as kv_iter_open. */
static int falloc_chunk(struct falloc *f, struct kv_batch *b, uint64_t cb,
			uint64_t ce)
{
	struct tree *t = f->t;
	uint64_t bs = t->block_size, nextblk = UINT64_MAX;
	struct sbuf lo = {0}, hi = {0};
	struct kv_iter *it = NULL;
	int rc = 0;

	if (cb < f->limit) {
		block_range(t, &lo, &hi, f->ino, cb,
			    ce < f->limit ? ce : f->limit);
		rc = kv_iter_open(&it, t->store->kv, lo.buf, lo.len, hi.buf,
				  hi.len);
		if (rc)
			goto out;
	}
	for (uint64_t blk = cb; blk < ce; blk++) {
		uint64_t bstart = blk * bs;
		size_t from = f->off > bstart ? (size_t)(f->off - bstart) : 0;
		size_t to =
		    f->stop - bstart < bs ? (size_t)(f->stop - bstart) : bs;
		bool whole = from == 0 && (to == bs || bstart + to >= f->old);
		const char *val = NULL;
		size_t vlen = 0;
		bool exists;

		if (it && nextblk == UINT64_MAX && kv_iter_valid(it)) {
			size_t klen;
			const char *key = kv_iter_key(it, &klen);
			uint64_t kino;

			if (key_data_decode(key, klen, f->plen, &kino,
					    &nextblk)) {
				rc = -EIO;
				goto out;
			}
		}
		exists = blk == nextblk;
		if (exists) {
			val = kv_iter_value(it, &vlen);
			if (vlen > bs) {
				plog(LOG_ERR,
				     "corrupt content block of inode %llu",
				     (unsigned long long)f->ino);
				rc = -EIO;
				goto out;
			}
		}
		rc = falloc_block(t, b, f->a, f->mode, blk, from, to, whole,
				  exists, val, vlen);
		if (rc)
			goto out;
		if (exists) {
			kv_iter_next(it);
			nextblk = UINT64_MAX;
		}
	}
	if (it)
		rc = kv_iter_status(it);
out:
	kv_iter_free(it);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

int tree_fallocate(struct tree *t, const char *path, uint64_t ino,
		   unsigned mode, uint64_t off, uint64_t len,
		   struct tree_attr *out)
{
	struct attr_ref r = {0};
	struct sbuf pre = {0};
	struct kv_batch *b = NULL;
	struct tree_attr *a = &r.n.a;
	struct falloc f = {.t = t, .a = a, .mode = mode, .off = off};
	uint64_t bs = t->block_size, end, newsize, first, lastp1;
	/* a block is at most one operation: half a batch's worth a chunk */
	uint64_t chunk = tree_batch_max_ops(t) / 2 < FALLOC_CHUNK
			     ? tree_batch_max_ops(t) / 2
			     : FALLOC_CHUNK;
	bool st = false;
	int64_t now;
	int rc;

	if (!falloc_mode_ok(mode))
		return -EOPNOTSUPP;
	if (len == 0)
		return -EINVAL;
	if (off > TREE_FILE_MAX || len > TREE_FILE_MAX - off)
		return -EFBIG;
	rc = lock_file(t, path, &ino, &r, -ENODEV);
	if (rc)
		goto out;
	st = true;
	rc = flags_may_fallocate(a, mode);
	if (rc)
		goto out;
	rc = blocks_known(t, a);
	if (rc)
		goto out;
	f.ino = ino;
	f.old = a->size;
	end = off + len;
	newsize = (mode & TREE_FALLOC_KEEP_SIZE) || end <= f.old ? f.old : end;
	/* a punch stops at the end of file (as ext4's); allocation with
	 * KEEP_SIZE reaches past it */
	f.stop =
	    (mode & TREE_FALLOC_PUNCH_HOLE) && end > newsize ? newsize : end;
	if (off >= f.stop)
		goto done; /* a punch past the end of file */
	first = off / bs;
	lastp1 = (f.stop + bs - 1) / bs;
	/* no block at or past limit exists, unless some lie past the end */
	f.limit =
	    a->flags & TREE_F_PREALLOC ? UINT64_MAX : (f.old + bs - 1) / bs;
	if (lastp1 > (newsize + bs - 1) / bs)
		a->flags |= TREE_F_PREALLOC; /* stored with the first batch */
	if (!(mode & TREE_FALLOC_PUNCH_HOLE)) {
		/* every block of the range not stored yet is allocated */
		rc = falloc_room(t, ino, first, lastp1, f.limit);
		if (rc)
			goto out;
	}
	key_drive_prefix(&pre, t->name);
	f.plen = pre.len;
	now = tree_now_ns();
	for (uint64_t cb = first, ce; cb < lastp1; cb = ce) {
		ce = lastp1 - cb > chunk ? cb + chunk : lastp1;
		b = kv_batch_new(t->store->kv);
		rc = falloc_chunk(&f, b, cb, ce);
		if (rc)
			goto out;
		/* every block of this batch lies below the size it stores,
		 * or the flag it stores says some lie past it */
		if (newsize > f.old) {
			a->size = ce * bs < newsize ? ce * bs : newsize;
			if (a->size < f.old)
				a->size = f.old;
			a->mtime_ns = now;
		}
		if (mode & (TREE_FALLOC_PUNCH_HOLE | TREE_FALLOC_ZERO_RANGE))
			a->mtime_ns = now;
		a->ctime_ns = now;
		tree_attr_store(t, b, &r);
		rc = tree_commit(t, b);
		if (rc)
			goto out;
		kv_batch_free(b);
		b = NULL;
	}
	rc = flags_sync(t, a->flags);
	if (rc)
		goto out;
done:
	if (out)
		*out = *a;
out:
	if (st)
		tree_unlock_inodes(t, ino, 0, 0, 0);
	kv_batch_free(b);
	attr_ref_release(&r);
	sbuf_release(&pre);
	return rc;
}
