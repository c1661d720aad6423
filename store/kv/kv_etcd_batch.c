/*
 * kv_etcd_batch.c - batches of the etcd backend, normalised into the
 * operations of one txn (see kv_etcd.c).
 *
 * Batches become one Txn, normalised first, since etcd refuses two
 * operations on one key in a Txn and a put inside a delete-range of the same
 * Txn: of the operations on one key only the last stays, a point delete
 * inside a delete-range goes, a put that follows a delete-range covering it
 * splits the range around the key, a put or delete that a later delete-range
 * covers goes. A batch that still exceeds the limits is refused with -E2BIG
 * (never split: that would lose its atomicity).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kv_etcd_i.h"

struct kv_batch *kve_batch_new(struct kv *kv)
{
	struct kve_batch *b = calloc(1, sizeof(*b));

	return b ? &b->base : NULL;
}

static void kve_batch_add(struct kv_batch *b_, int type, const char *k,
			  size_t klen, const char *v, size_t vlen)
{
	struct kve_batch *b = (struct kve_batch *)b_;
	struct kve_op *op;

	if (b->oom)
		return;
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;
		struct kve_op *ops = realloc(b->ops, cap * sizeof(*ops));

		if (!ops) {
			b->oom = true;
			return;
		}
		b->ops = ops;
		b->cap = cap;
	}
	op = &b->ops[b->n++];
	memset(op, 0, sizeof(*op));
	op->type = type;
	op->k = malloc(klen + 1);
	op->v = malloc(vlen + 1);
	if (!op->k || !op->v) {
		b->oom = true;
		return; /* freed with the batch */
	}
	memcpy(op->k, k, klen);
	if (vlen)
		memcpy(op->v, v, vlen);
	op->klen = klen;
	op->vlen = vlen;
}

void kve_batch_put(struct kv_batch *b, const char *key, size_t klen,
		   const char *val, size_t vlen)
{
	kve_batch_add(b, KVE_PUT, key, klen, val, vlen);
}

void kve_batch_delete(struct kv_batch *b, const char *key, size_t klen)
{
	kve_batch_add(b, KVE_DEL, key, klen, NULL, 0);
}

void kve_batch_delete_range(struct kv_batch *b, const char *lo, size_t lolen,
			    const char *hi, size_t hilen)
{
	kve_batch_add(b, KVE_RANGE, lo, lolen, hi, hilen);
}

void kve_batch_clear(struct kv_batch *b_)
{
	struct kve_batch *b = (struct kve_batch *)b_;

	for (size_t i = 0; i < b->n; i++) {
		free(b->ops[i].k);
		free(b->ops[i].v);
		free(b->ops[i].cuts);
		free(b->ops[i].cutlens);
	}
	b->n = 0;
	b->oom = false;
}

void kve_batch_free(struct kv_batch *b_)
{
	struct kve_batch *b = (struct kve_batch *)b_;

	kve_batch_clear(b_);
	free(b->ops);
	free(b);
}

static bool kve_in_range(const struct kve_op *r, const char *k, size_t klen)
{
	return kve_cmp(k, klen, r->k, r->klen) >= 0 &&
	       kve_cmp(k, klen, r->v, r->vlen) < 0;
}

/* Records cut @k of delete-range @r; out of memory marks @b. */
static void kve_cut(struct kve_batch *b, struct kve_op *r, const char *k,
		    size_t klen)
{
	char **cuts = realloc(r->cuts, (r->ncuts + 1) * sizeof(*cuts));
	size_t *lens;

	if (cuts)
		r->cuts = cuts;
	lens =
	    cuts ? realloc(r->cutlens, (r->ncuts + 1) * sizeof(*lens)) : NULL;
	if (!lens) {
		b->oom = true;
		return;
	}
	r->cutlens = lens;
	r->cuts[r->ncuts] = (char *)k;
	r->cutlens[r->ncuts++] = klen;
}

/*
 * Normalises @b in place (see the overview): marks operations dead, records
 * the cuts of delete-ranges. Returns the number of etcd operations left.
 * O(n^2) in the operations, which a batch's limit keeps small.
 */
size_t kve_normalise(struct kve_batch *b)
{
	size_t n = 0;

	for (size_t i = 0; i < b->n; i++) {
		struct kve_op *op = &b->ops[i];
		op->dead = false;
		op->ncuts = 0;
	}
	for (size_t i = 0; i < b->n; i++) {
		struct kve_op *op = &b->ops[i];
		if (op->type == KVE_RANGE) {
			if (kve_cmp(op->k, op->klen, op->v, op->vlen) >= 0)
				op->dead = true; /* empty range */
			continue;
		}
		for (size_t j = i + 1; j < b->n && !op->dead; j++) {
			const struct kve_op *l = &b->ops[j];
			if (l->type == KVE_RANGE
				? kve_in_range(l, op->k, op->klen)
				: !kve_cmp(l->k, l->klen, op->k, op->klen))
				op->dead = true; /* overwritten later */
		}
		for (size_t j = 0; j < i && !op->dead; j++) {
			struct kve_op *r = &b->ops[j];
			if (r->type != KVE_RANGE ||
			    !kve_in_range(r, op->k, op->klen))
				continue;
			if (op->type == KVE_DEL)
				op->dead = true; /* already deleted */
			else
				kve_cut(b, r, op->k, op->klen);
		}
	}
	for (size_t i = 0; i < b->n; i++) {
		const struct kve_op *op = &b->ops[i];
		if (!op->dead)
			n += op->type == KVE_RANGE ? op->ncuts + 1 : 1;
	}
	return n;
}

/* Appends to @arr a request @name ("request_put", ...) of key @k (to @end
 * for a range, or with value @v when not NULL). Errors: -ENOMEM. */
static int kve_add_req(struct kve *kv, struct json_object *arr,
		       const char *name, const char *k, size_t klen,
		       const char *end, size_t elen, const char *v, size_t vlen)
{
	struct json_object *r = json_object_new_object();
	size_t len;
	char *ek = kve_key(kv, k, klen, &len);
	int rc = kve_add_b64(r, "key", ek, len);

	free(ek);
	if (!rc && end) {
		ek = kve_key(kv, end, elen, &len);
		rc = kve_add_b64(r, "range_end", ek, len);
		free(ek);
	}
	if (!rc && v)
		rc = kve_add_b64(r, "value", v, vlen);
	if (rc) {
		json_object_put(r);
		return rc;
	}
	return kve_add_op(arr, name, r);
}

/* Appends the etcd ops of @b (normalised) to @arr. Errors: -ENOMEM (@arr
 * then holds a part: not to be sent). */
int kve_txn_ops(struct kve *kv, struct kve_batch *b, struct json_object *arr)
{
	int rc = 0;

	for (size_t i = 0; i < b->n && !rc; i++) {
		struct kve_op *op = &b->ops[i];

		if (op->dead)
			continue;
		if (op->type == KVE_PUT || op->type == KVE_DEL) {
			rc = op->type == KVE_PUT
				 ? kve_add_req(kv, arr, "request_put", op->k,
					       op->klen, NULL, 0, op->v,
					       op->vlen)
				 : kve_add_req(kv, arr, "request_delete_range",
					       op->k, op->klen, NULL, 0, NULL,
					       0);
			continue;
		}
		/* a delete-range, in pieces around the keys put inside it */
		{
			const char *from = op->k;
			size_t fromlen = op->klen;
			char *owned = NULL;
			size_t c;

			/* the cuts in key order (few: insertion sort) */
			for (size_t x = 1; x < op->ncuts; x++)
				for (size_t y = x;
				     y > 0 &&
				     kve_cmp(op->cuts[y - 1],
					     op->cutlens[y - 1], op->cuts[y],
					     op->cutlens[y]) > 0;
				     y--) {
					char *t = op->cuts[y];
					size_t tl = op->cutlens[y];
					op->cuts[y] = op->cuts[y - 1];
					op->cutlens[y] = op->cutlens[y - 1];
					op->cuts[y - 1] = t;
					op->cutlens[y - 1] = tl;
				}
			for (c = 0; c <= op->ncuts && !rc; c++) {
				const char *to =
				    c < op->ncuts ? op->cuts[c] : op->v;
				size_t tolen =
				    c < op->ncuts ? op->cutlens[c] : op->vlen;

				if (kve_cmp(from, fromlen, to, tolen) < 0)
					rc = kve_add_req(
					    kv, arr, "request_delete_range",
					    from, fromlen, to, tolen, NULL, 0);
				if (rc || c == op->ncuts)
					break;
				/* the next piece starts just past the cut */
				free(owned);
				owned = malloc(tolen + 1);
				if (!owned) {
					rc = -ENOMEM;
					break;
				}
				memcpy(owned, to, tolen);
				owned[tolen] = '\0';
				from = owned;
				fromlen = tolen + 1;
			}
			free(owned);
		}
	}
	return rc;
}
