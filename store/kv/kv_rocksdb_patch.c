/*
 * kv_rocksdb_patch.c - patches on the RocksDB backend: kv_batch_patch() puts
 * a merge operand, and the merge operator folds operands into blocks (see
 * kv_rocksdb_i.h for the backend's other files).
 *
 * Patches (kv_batch_patch, a RocksDB merge operator, "pathfs.patch.1"): a
 * partial write of a content block is a merge operand holding only the
 * written bytes and their offset, folded into the block by reads and by
 * compaction, so a 4 KiB write into a 64 KiB block writes ~4 KiB to the WAL
 * and the memtable and reads nothing (a 4 KiB pwrite into a 256 MiB file
 * through the mount, median: 460 us with the read-modify-write, 76 us with
 * patches; BENCHMARKS.md). Chosen over smaller content blocks, measured side by side
 * (4 KiB pwrites into a 256 MiB file, BENCHMARKS.md): 4 KiB blocks write
 * as fast, but multiply the content keys (and their index) by 16 and the
 * per-key cost of every sequential write and read, and still read-modify-
 * write any write smaller than a block. The operator also does the partial
 * merge (a flush or compaction of patches with no block under them folds
 * them into one list of disjoint byte runs, never longer than the bytes
 * they cover). max_successive_merges stays 0 (a key's patches pile up in
 * the memtable until its flush folds them): measured in-process, gets of a
 * block after 2,000 patches in the memtable cost 12 us of CPU unbounded
 * against 7 us with a bound of 16, and after 6,000 (flushed meanwhile) 5.3
 * against 4.8 us, while the bound's check on every patch
 * (CountSuccessiveMergeEntries) was 5% of the daemon's CPU in the pwrite
 * loop.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kv_rocksdb_i.h"

/* ---- patches: the merge operator ------------------------------------------
 *
 * An operand is a list of records [u32 LE offset][u32 LE length][bytes]. A
 * value folds the records in order: each writes its bytes at its offset,
 * the value growing to the record's end with zeros before the offset if it
 * was shorter (as a write past a file's end). The partial merge (of
 * operands with no value under them yet) folds a run of operands into one
 * list of disjoint records, so a chain of patches never holds more than the
 * patched span. A record that does not decode (or reaches past
 * KV_PATCH_SPAN) is skipped, not failed: a failed merge would stop
 * compaction and turn the whole store read-only over one bad operand.
 */
#define KV_PATCH_SPAN (16u << 20) /* no patched value is longer */

struct kv_patch_rec {
	uint32_t off, len;
	const char *p;
};

static uint32_t kv_get32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;

	return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 |
	       (uint32_t)u[3] << 24;
}

static void kv_put32(char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (char)(v >> (8 * i));
}

/* The record at *pos of operand @op (@n bytes); false at its end. */
static bool kv_patch_next(const char *op, size_t n, size_t *pos,
			  struct kv_patch_rec *r)
{
	while (n - *pos >= 8) {
		r->off = kv_get32(op + *pos);
		r->len = kv_get32(op + *pos + 4);
		r->p = op + *pos + 8;
		if (r->len > n - *pos - 8)
			break; /* cut short: nothing more decodes */
		*pos += 8 + r->len;
		if (r->off <= KV_PATCH_SPAN && r->len <= KV_PATCH_SPAN - r->off)
			return true;
	}
	*pos = n;
	return false;
}

/* Length of @base (@blen) after the records of @ops. */
static size_t kv_patch_len(size_t blen, const char *const *ops,
			   const size_t *lens, int nops)
{
	size_t end = blen;

	for (int i = 0; i < nops; i++) {
		struct kv_patch_rec r;
		size_t pos = 0;

		while (kv_patch_next(ops[i], lens[i], &pos, &r))
			if ((size_t)r.off + r.len > end)
				end = (size_t)r.off + r.len;
	}
	return end;
}

/* Folds the records of @ops into @out (@end bytes, *have of them valid,
 * the rest to be zeroed when reached); marks written bytes in @mask if not
 * NULL. */
static void kv_patch_fold(char *out, size_t *have, unsigned char *mask,
			  const char *const *ops, const size_t *lens, int nops)
{
	for (int i = 0; i < nops; i++) {
		struct kv_patch_rec r;
		size_t pos = 0;

		while (kv_patch_next(ops[i], lens[i], &pos, &r)) {
			if (r.off > *have)
				memset(out + *have, 0, r.off - *have);
			memcpy(out + r.off, r.p, r.len);
			if (mask)
				memset(mask + r.off, 1, r.len);
			if ((size_t)r.off + r.len > *have)
				*have = (size_t)r.off + r.len;
		}
	}
}

static char *kv_patch_full(void *state, const char *key, size_t klen,
			   const char *base, size_t blen,
			   const char *const *ops, const size_t *lens, int nops,
			   unsigned char *success, size_t *outlen)
{
	size_t end = kv_patch_len(base ? blen : 0, ops, lens, nops), have;
	char *out = malloc(end ? end : 1);

	(void)state;
	(void)key;
	(void)klen;
	*success = out != NULL;
	*outlen = 0;
	if (!out)
		return NULL;
	have = base ? blen : 0;
	if (have)
		memcpy(out, base, have);
	kv_patch_fold(out, &have, NULL, ops, lens, nops);
	if (have < end) /* cannot be: every record was counted */
		memset(out + have, 0, end - have);
	*outlen = end;
	return out;
}

static char *kv_patch_partial(void *state, const char *key, size_t klen,
			      const char *const *ops, const size_t *lens,
			      int nops, unsigned char *success, size_t *outlen)
{
	size_t end = kv_patch_len(0, ops, lens, nops), have = 0, n = 0;
	char *buf = malloc(end ? end : 1), *out = NULL;
	unsigned char *mask = calloc(end ? end : 1, 1);
	size_t cap = 0;

	(void)state;
	(void)key;
	(void)klen;
	*success = 0;
	*outlen = 0;
	if (!buf || !mask)
		goto out;
	kv_patch_fold(buf, &have, mask, ops, lens, nops);
	/* the written runs, in order, and a record of length 0 at the end
	 * if no run reaches it (a record that grew the value without data) */
	for (size_t i = 0; i < end; i++)
		if (mask[i] && (i == 0 || !mask[i - 1]))
			cap += 8;
	cap += end + 8;
	out = malloc(cap);
	if (!out)
		goto out;
	for (size_t i = 0; i < end;) {
		size_t j = i;

		if (!mask[i]) {
			i++;
			continue;
		}
		while (j < end && mask[j])
			j++;
		kv_put32(out + n, (uint32_t)i);
		kv_put32(out + n + 4, (uint32_t)(j - i));
		memcpy(out + n + 8, buf + i, j - i);
		n += 8 + (j - i);
		i = j;
	}
	if (end && !mask[end - 1]) {
		kv_put32(out + n, (uint32_t)end);
		kv_put32(out + n + 4, 0);
		n += 8;
	}
	*success = 1;
	*outlen = n;
out:
	free(buf);
	free(mask);
	return out;
}

static void kv_patch_free(void *state, const char *value, size_t len)
{
	(void)state;
	(void)len;
	free((char *)value);
}

static const char *kv_patch_name(void *state)
{
	(void)state;
	return "pathfs.patch.1";
}

static void kv_patch_destroy(void *state)
{
	(void)state;
}
void kvr_batch_patch(struct kv_batch *b_, const char *key, size_t klen,
		     uint32_t off, const char *data, size_t len)
{
	struct kvr_batch *b = (struct kvr_batch *)b_;
	struct kvr *kv = (struct kvr *)b->base.kv;
	char stack[8 + 4096], *op = len <= 4096 ? stack : malloc(8 + len);

	if (!op)
		abort();
	kv_put32(op, off);
	kv_put32(op + 4, (uint32_t)len);
	memcpy(op + 8, data, len);
	rocksdb_writebatch_merge_cf(b->wb,
				    kv->fam[kvr_key_fam(kv, key, klen)].h, key,
				    klen, op, 8 + len);
	if (op != stack)
		free(op);
}
rocksdb_mergeoperator_t *kvr_patch_operator(void)
{
	return rocksdb_mergeoperator_create(NULL, kv_patch_destroy,
					    kv_patch_full, kv_patch_partial,
					    kv_patch_free, kv_patch_name);
}
