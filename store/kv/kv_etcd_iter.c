/*
 * kv_etcd_iter.c - reads of the etcd backend: kv_get and iterators,
 * paged ranges at a pinned revision (see kv_etcd.c).
 *
 * Reads: kv_get is a linearizable Range. An iterator reads pages of keys at
 * one revision, pinned by its first page (or by the thread's kv_pin()), so it sees a consistent snapshot
 * as RocksDB's do; pages grow from KVE_PAGE_MIN to KVE_PAGE_MAX keys (a Range
 * with a limit costs time in proportion to the keys left after it, etcd
 * #11057, so no page reads further than needed) and shrink when a page's
 * values pass 4 MiB (KV_ITER_KEYS_ONLY: Range keys_only, no values). If etcd
 * compacted that revision meanwhile, the iterator
 * stops with -ESTALE: the caller opens a new one at the last key it saw.
 * Under a kv_pin(), kv_get reads the pinned revision too (a Range with
 * "revision", linearizable all the same): -ESTALE once compacted. A key's
 * version (kv_get_ver) is its mod revision.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kv_etcd_i.h"

/* The revision an answer was read at (its header's); 0 if it says none. */
static long long kve_answer_rev(struct json_object *resp)
{
	struct json_object *h;

	return json_object_object_get_ex(resp, "header", &h)
		   ? etcd_int(h, "revision")
		   : 0;
}

int kve_get(struct kv *kv_, const char *key, size_t klen, long long *rev,
	    char **val, size_t *vlen, uint64_t *ver)
{
	struct kve *kv = (struct kve *)kv_;
	struct json_object *req = json_object_new_object(), *resp = NULL, *kvs;
	size_t len;
	char *k = kve_key(kv, key, klen, &len);
	int rc = kve_add_b64(req, "key", k, len);

	free(k);
	if (!rc && rev && *rev) /* pinned (kv_pin) */
		rc = etcd_add_int(req, "revision", *rev);
	if (!rc)
		rc = etcd_call(kv->e, "/v3/kv/range", req, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	if (rev && !*rev)
		*rev = kve_answer_rev(resp);
	if (ver)
		*ver = 0;
	if (!json_object_object_get_ex(resp, "kvs", &kvs) ||
	    json_object_array_length(kvs) == 0) {
		rc = -ENOENT;
	} else {
		struct json_object *e = json_object_array_get_idx(kvs, 0);

		*val = kve_get_b64(e, "value", vlen);
		rc = *val ? 0 : -EIO;
		if (ver)
			*ver = (uint64_t)etcd_int(e, "mod_revision");
	}
	json_object_put(resp);
	return rc;
}

static void kve_iter_drop_page(struct kve_iter *it)
{
	for (size_t i = 0; i < it->n; i++) {
		free((char *)it->ents[i].k - it->kv->plen);
		free((char *)it->ents[i].v);
	}
	free(it->ents);
	it->ents = NULL;
	it->n = it->pos = 0;
}

/* Reads the page of keys from @from (a full key, inclusive) to it->hi. */
static void kve_iter_fetch(struct kve_iter *it, const char *from, size_t len)
{
	struct json_object *req = json_object_new_object(), *resp = NULL, *kvs;
	size_t bytes = 0, n;
	int rc;

	rc = kve_add_b64(req, "key", from, len);
	if (!rc)
		rc = kve_add_b64(req, "range_end", it->hi, it->hilen);
	if (!rc)
		rc = etcd_add_int(req, "limit", (long long)it->limit);
	if (!rc && it->keys_only)
		rc =
		    etcd_add_json(req, "keys_only", json_object_new_boolean(1));
	if (!rc && it->rev) /* a page of another revision must never come */
		rc = etcd_add_int(req, "revision", it->rev);
	if (!rc)
		rc = etcd_call(it->kv->e, "/v3/kv/range", req, &resp);
	json_object_put(req);
	kve_iter_drop_page(it);
	it->more = false;
	if (rc) {
		it->status = rc;
		return;
	}
	if (!it->rev)
		it->rev = kve_answer_rev(resp);
	n = json_object_object_get_ex(resp, "kvs", &kvs)
		? json_object_array_length(kvs)
		: 0;
	it->ents = calloc(n ? n : 1, sizeof(*it->ents));
	if (!it->ents) {
		it->status = -ENOMEM;
		n = 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(kvs, i);
		size_t kl, vl;
		char *k = kve_get_b64(e, "key", &kl);
		char *v = it->keys_only ? NULL : kve_get_b64(e, "value", &vl);

		if (it->keys_only)
			vl = 0;
		if (!k || (!v && !it->keys_only) || kl < it->kv->plen) {
			free(k);
			free(v);
			it->status = -EIO;
			break;
		}
		it->ents[it->n++] = (struct kve_ent){k + it->kv->plen, v,
						     kl - it->kv->plen, vl};
		bytes += kl + vl;
	}
	{
		struct json_object *m;
		it->more = json_object_object_get_ex(resp, "more", &m) &&
			   json_object_get_boolean(m);
	}
	json_object_put(resp);
	/* grow the pages, unless this one was already big in bytes */
	if (bytes > KVE_PAGE_BYTES && it->limit > 16)
		it->limit /= 2;
	else if (bytes < KVE_PAGE_BYTES / 2 && it->limit < KVE_PAGE_MAX)
		it->limit *= 2;
}

int kve_iter_open(struct kv_iter **out, struct kv *kv_, const char *lo,
		  size_t lolen, const char *hi, size_t hilen, unsigned flags,
		  long long *rev)
{
	struct kve *kv = (struct kve *)kv_;
	struct kve_iter *it = calloc(1, sizeof(*it));

	if (!it)
		return -ENOMEM;
	it->base.ops = &kve_ops;
	it->kv = kv;
	it->limit = KVE_PAGE_MIN;
	it->keys_only = flags & KV_ITER_KEYS_ONLY;
	it->lo = kve_key(kv, lo, lolen, &it->lolen);
	it->hi = hi ? kve_key(kv, hi, hilen, &it->hilen)
		    : kve_key(kv, "", 0, &it->hilen);
	if (!it->lo || !it->hi) {
		free(it->lo);
		free(it->hi);
		free(it);
		return -ENOMEM;
	}
	if (!hi) /* the end of the prefix: NAME/k0 */
		it->hi[it->hilen - 1]++;
	if (rev) /* pinned (kv_pin): that revision, or pin this one's */
		it->rev = *rev;
	kve_iter_fetch(it, it->lo, it->lolen);
	if (rev && !*rev)
		*rev = it->rev;
	*out = &it->base;
	return 0;
}

void kve_iter_seek(struct kv_iter *it_, const char *key, size_t klen)
{
	struct kve_iter *it = (struct kve_iter *)it_;
	size_t len;
	char *k;

	if (it->status)
		return;
	if (kve_cmp(key, klen, it->lo + it->kv->plen,
		    it->lolen - it->kv->plen) < 0) {
		key = it->lo + it->kv->plen;
		klen = it->lolen - it->kv->plen;
	}
	/* within the page in hand: no round trip */
	if (it->n && kve_cmp(key, klen, it->ents[0].k, it->ents[0].klen) >= 0 &&
	    kve_cmp(key, klen, it->ents[it->n - 1].k,
		    it->ents[it->n - 1].klen) <= 0) {
		size_t a = 0, b = it->n - 1;
		while (a < b) {
			size_t m = (a + b) / 2;
			if (kve_cmp(it->ents[m].k, it->ents[m].klen, key,
				    klen) < 0)
				a = m + 1;
			else
				b = m;
		}
		it->pos = a;
		return;
	}
	k = kve_key(it->kv, key, klen, &len);
	if (k)
		kve_iter_fetch(it, k, len);
	else
		it->status = -ENOMEM;
	free(k);
}

bool kve_iter_valid(struct kv_iter *it_)
{
	struct kve_iter *it = (struct kve_iter *)it_;

	return !it->status && it->pos < it->n;
}

const char *kve_iter_key(struct kv_iter *it_, size_t *len)
{
	struct kve_iter *it = (struct kve_iter *)it_;

	*len = it->ents[it->pos].klen;
	return it->ents[it->pos].k;
}

const char *kve_iter_value(struct kv_iter *it_, size_t *len)
{
	struct kve_iter *it = (struct kve_iter *)it_;

	*len = it->ents[it->pos].vlen;
	return it->ents[it->pos].v ? it->ents[it->pos].v : "";
}

void kve_iter_next(struct kv_iter *it_)
{
	struct kve_iter *it = (struct kve_iter *)it_;

	if (it->status || it->pos >= it->n)
		return;
	if (++it->pos < it->n || !it->more)
		return;
	{
		/* the next page starts just past the last key: key + "\0" */
		const struct kve_ent *l = &it->ents[it->n - 1];
		size_t len = it->kv->plen + l->klen + 1;
		char *k = malloc(len);
		if (!k) {
			it->status = -ENOMEM;
			return;
		}
		memcpy(k, l->k - it->kv->plen, len - 1);
		k[len - 1] = '\0';
		kve_iter_fetch(it, k, len);
		free(k);
	}
}

int kve_iter_status(struct kv_iter *it_)
{
	return ((struct kve_iter *)it_)->status;
}

void kve_iter_free(struct kv_iter *it_)
{
	struct kve_iter *it = (struct kve_iter *)it_;

	kve_iter_drop_page(it);
	free(it->lo);
	free(it->hi);
	free(it);
}
