/*
 * kv_ddb_iter.c - reads of the DynamoDB backend: kv_get and iterators (see
 * kv_ddb.c).
 *
 * kv_get is a GetItem with ConsistentRead; a key's version (kv_get_ver) is
 * its ver attribute.
 *
 * An iterator over [lo, hi) reads paged Queries (ConsistentRead, sk
 * BETWEEN the bounds, ExclusiveStartKey for the next page; keys only:
 * ProjectionExpression of the key). A range within one drive's keys
 * (DRIVE#<id>|... up to DRIVE#<id>}) is one partition: one stream of pages.
 * A wider range merges two streams: the keys that name no drive
 * (KVD_OTHER_PK), and the drives of the range one after the other, in key
 * order, as the registry lists them (read again at each such open). No
 * key of one drive's run sorts between two keys of another's, nor any
 * KVD_OTHER_PK key, so a drive's stream is read whole before the next.
 *
 * Limits: no snapshot (DynamoDB has none): each page reads the table as it
 * is then (the first page is read at open). Pages hold up to 1000 items
 * (DynamoDB stops a page at 1 MB). A seek outside the page in hand reads
 * again from the key sought.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_ddb_i.h"

int kvd_get(struct kv *kv_, const char *key, size_t klen, long long *rev,
	    char **val, size_t *vlen, uint64_t *ver)
{
	struct kvd *kv = (struct kvd *)kv_;
	struct json_object *req = json_object_new_object(), *resp = NULL, *item;
	struct kvd_where w;
	int rc;

	if (ver)
		*ver = 0;
	kvd_locate(key, klen, &w);
	if (klen == w.plen || klen - w.plen > KVD_SK_MAX) {
		json_object_put(req);
		return -ENOENT; /* no such item can be */
	}
	rc = ddb_add(req, "TableName", json_object_new_string(kv->table));
	if (!rc)
		rc = ddb_add(req, "Key", kvd_item_key(key, klen));
	if (!rc)
		rc = ddb_add(req, "ConsistentRead", json_object_new_boolean(1));
	if (!rc)
		rc = ddb_call(kv->d, "GetItem", req, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	if (!json_object_object_get_ex(resp, "Item", &item)) {
		rc = -ENOENT;
	} else {
		*val = ddb_get_b(item, "v", vlen);
		if (!*val) { /* an empty value has no v */
			*val = calloc(1, 1);
			*vlen = 0;
		}
		rc = *val ? 0 : -ENOMEM;
		if (ver)
			*ver = ddb_get_n(item, "ver");
	}
	json_object_put(resp);
	return rc;
}

/* ---- streams ------------------------------------------------------------- */

static void kvd_stream_drop_page(struct kvd_stream *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->ents[i].k);
		free(s->ents[i].v);
	}
	free(s->ents);
	s->ents = NULL;
	s->n = s->pos = 0;
}

static void kvd_stream_release(struct kvd_stream *s)
{
	kvd_stream_drop_page(s);
	json_object_put(s->next);
	free(s->lo);
	free(s->hi);
	memset(s, 0, sizeof(*s));
}

/* Sets @s up to read [lo, hi) (copied; @hi NULL: to its partition's end)
 * of the partition of @lo, or with @other of KVD_OTHER_PK. Errors:
 * -ENOMEM. */
static int kvd_stream_init(struct kvd_stream *s, bool other, const char *lo,
			   size_t lolen, const char *hi, size_t hilen)
{
	kvd_stream_release(s);
	if (other)
		kvd_locate("", 0, &s->w);
	else
		kvd_locate(lo, lolen, &s->w);
	s->limit = 100;
	s->lo = malloc(lolen + 1);
	s->hi = hi ? malloc(hilen + 1) : NULL;
	if (!s->lo || (hi && !s->hi))
		return -ENOMEM;
	memcpy(s->lo, lo, lolen);
	s->lolen = lolen;
	if (hi)
		memcpy(s->hi, hi, hilen);
	s->hilen = hilen;
	return 0;
}

static bool kvd_stream_done(const struct kvd_stream *s)
{
	return s->pos >= s->n && s->started && !s->next;
}

/* Adds the sort key bound @name (":a", ":b") of store key @k to @vals, and
 * its clause to @expr; a bound longer than a sort key can be is left to
 * the filter (a lower one cut short, an upper one left out). */
static int kvd_bound(struct json_object *vals, char *expr, size_t elen,
		     const struct kvd_stream *s, const char *k, size_t klen,
		     bool upper)
{
	size_t n = klen - s->w.plen;

	if (n == 0 || (upper && n > KVD_SK_MAX))
		return 0;
	if (n > KVD_SK_MAX)
		n = KVD_SK_MAX;
	strncat(expr, upper ? " :b" : " :a", elen - strlen(expr) - 1);
	return ddb_add(vals, upper ? ":b" : ":a", ddb_b(k + s->w.plen, n));
}

/* Reads the next page of @s into it (at least one entry unless done).
 * Errors: as ddb_call, -ENOMEM, -EIO (an answer without its keys). */
static int kvd_stream_fill(struct kvd *kv, struct kvd_stream *s, bool keys_only)
{
	while (s->pos >= s->n && !kvd_stream_done(s)) {
		struct json_object *req = json_object_new_object(),
				   *resp = NULL;
		struct json_object *vals = json_object_new_object(), *items,
				   *lek;
		struct json_object *names = json_object_new_object();
		char lo[8] = "", hi[8] = "", expr[96];
		bool has_a, has_b;
		size_t cnt;
		int rc;

		kvd_stream_drop_page(s);
		rc = ddb_add(vals, ":p", ddb_s(s->w.pk));
		if (!rc)
			rc = kvd_bound(vals, lo, sizeof(lo), s, s->lo, s->lolen,
				       false);
		if (!rc && s->hi)
			rc = kvd_bound(vals, hi, sizeof(hi), s, s->hi, s->hilen,
				       true);
		has_a = lo[0];
		has_b = hi[0];
		if (has_a && has_b &&
		    kvd_cmp(s->lo + s->w.plen, s->lolen - s->w.plen,
			    s->hi + s->w.plen, s->hilen - s->w.plen) >= 0) {
			/* an empty range: BETWEEN would refuse it */
			json_object_put(req);
			json_object_put(vals);
			json_object_put(names);
			s->started = true;
			return 0;
		}
		snprintf(expr, sizeof(expr), "#p = :p%s%s%s%s",
			 has_a && has_b ? " AND #s BETWEEN"
			 : has_a	? " AND #s >="
			 : has_b	? " AND #s <="
					: "",
			 lo, has_a && has_b ? " AND" : "", hi);
		if (!rc)
			rc = ddb_add(names, "#p", json_object_new_string("pk"));
		if (!rc && (has_a || has_b || keys_only))
			rc = ddb_add(names, "#s", json_object_new_string("sk"));
		if (!rc)
			rc = ddb_add(req, "TableName",
				     json_object_new_string(kv->table));
		if (!rc)
			rc = ddb_add(req, "KeyConditionExpression",
				     json_object_new_string(expr));
		if (!rc && keys_only)
			rc = ddb_add(req, "ProjectionExpression",
				     json_object_new_string("#p, #s"));
		if (!rc) {
			rc = ddb_add(req, "ExpressionAttributeNames", names);
			names = NULL;
		}
		if (!rc) {
			rc = ddb_add(req, "ExpressionAttributeValues", vals);
			vals = NULL;
		}
		if (!rc)
			rc = ddb_add(req, "ConsistentRead",
				     json_object_new_boolean(1));
		if (!rc)
			rc = ddb_add(req, "Limit",
				     json_object_new_int(s->limit));
		if (!rc && s->next) {
			rc = ddb_add(req, "ExclusiveStartKey", s->next);
			s->next = NULL;
		}
		json_object_put(names);
		json_object_put(vals);
		if (!rc)
			rc = ddb_call(kv->d, "Query", req, &resp);
		json_object_put(req);
		if (rc)
			return rc;
		s->started = true;
		if (s->limit < 1000)
			s->limit *= 2;
		cnt = json_object_object_get_ex(resp, "Items", &items)
			  ? json_object_array_length(items)
			  : 0;
		s->ents = calloc(cnt ? cnt : 1, sizeof(*s->ents));
		if (!s->ents)
			rc = -ENOMEM;
		for (size_t i = 0; !rc && i < cnt; i++) {
			struct json_object *item =
			    json_object_array_get_idx(items, i);
			struct kvd_ent *e = &s->ents[s->n];
			size_t sklen;
			char *sk = ddb_get_b(item, "sk", &sklen);

			if (!sk) {
				rc = -EIO;
				break;
			}
			e->klen = s->w.plen + sklen;
			e->k = malloc(e->klen + 1);
			if (e->k) {
				memcpy(e->k, s->w.pk, s->w.plen);
				memcpy(e->k + s->w.plen, sk, sklen);
			}
			free(sk);
			if (!e->k) {
				rc = -ENOMEM;
				break;
			}
			if (s->hi &&
			    kvd_cmp(e->k, e->klen, s->hi, s->hilen) >= 0) {
				/* past the range: nothing after it either */
				free(e->k);
				json_object_put(s->next);
				s->next = NULL;
				json_object_put(resp);
				return 0;
			}
			if (kvd_cmp(e->k, e->klen, s->lo, s->lolen) < 0) {
				free(e->k); /* below a bound cut short */
				continue;
			}
			if (!keys_only) {
				e->v = ddb_get_b(item, "v", &e->vlen);
				if (!e->v) {
					e->v = calloc(1, 1);
					e->vlen = 0;
				}
				if (!e->v) {
					free(e->k);
					rc = -ENOMEM;
					break;
				}
			}
			s->n++;
		}
		if (!rc &&
		    json_object_object_get_ex(resp, "LastEvaluatedKey", &lek))
			s->next = json_object_get(lek);
		json_object_put(resp);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- iterators ----------------------------------------------------------- */

/* The run of drive @id: [DRIVE#<id>|, DRIVE#<id>}) in @lo and @hi (room
 * for 80 bytes each); their length. */
static size_t kvd_run(const char *id, char *lo, char *hi)
{
	size_t n = (size_t)snprintf(lo, 80, "DRIVE#%s|", id);

	memcpy(hi, lo, n);
	hi[n - 1] = '|' + 1;
	return n;
}

/* Starts drv on drive it->cur from @from (at least its run's start). */
static int kvd_iter_drive(struct kvd_iter *it, const char *from, size_t flen)
{
	char lo[80], hi[80];
	size_t n = kvd_run(it->drives[it->cur], lo, hi);
	bool in_run = kvd_cmp(from, flen, lo, n) > 0;
	bool hi_in = it->hi && kvd_cmp(it->hi, it->hilen, hi, n) < 0;

	return kvd_stream_init(&it->drv, false, in_run ? from : lo,
			       in_run ? flen : n, hi_in ? it->hi : NULL,
			       it->hilen);
}

/* Reads until the current entry is known (it->at, NULL at the end). */
static void kvd_iter_settle(struct kvd_iter *it)
{
	struct kvd_stream *o = it->whole ? &it->other : NULL, *d = NULL;
	int rc = 0;

	it->at = NULL;
	if (o)
		rc = kvd_stream_fill(it->kv, o, it->keys_only);
	while (!rc && it->cur < it->ndrives) {
		rc = kvd_stream_fill(it->kv, &it->drv, it->keys_only);
		if (rc || !kvd_stream_done(&it->drv)) {
			d = &it->drv;
			break;
		}
		if (++it->cur < it->ndrives)
			rc = kvd_iter_drive(it, "", 0);
	}
	if (rc) {
		it->status = rc;
		return;
	}
	if (o && o->pos >= o->n)
		o = NULL;
	if (d && d->pos >= d->n)
		d = NULL;
	if (o && d)
		it->at = kvd_cmp(o->ents[o->pos].k, o->ents[o->pos].klen,
				 d->ents[d->pos].k, d->ents[d->pos].klen) < 0
			     ? o
			     : d;
	else
		it->at = o ? o : d;
}

/* Positions @it at the first key >= @from (>= it->lo). */
static void kvd_iter_position(struct kvd_iter *it, const char *from,
			      size_t flen)
{
	int rc = 0;

	if (it->whole)
		rc = kvd_stream_init(&it->other, true, from, flen, it->hi,
				     it->hilen);
	/* the first drive whose run ends past @from */
	for (it->cur = 0; it->cur < it->ndrives; it->cur++) {
		char lo[80], hi[80];
		size_t n = kvd_run(it->drives[it->cur], lo, hi);

		if (kvd_cmp(hi, n, from, flen) > 0)
			break;
	}
	if (!rc && it->cur < it->ndrives)
		rc = kvd_iter_drive(it, from, flen);
	if (rc)
		it->status = rc;
	else
		kvd_iter_settle(it);
}

/* The drives of [it->lo, it->hi): one when the range lies in one drive's
 * run, else those of the registry whose run meets it. Errors: -ENOMEM, as
 * kvd_load_drives. */
static int kvd_iter_drives(struct kvd_iter *it)
{
	struct kvd *kv = it->kv;
	struct kvd_where w;
	char lo[80], hi[80];
	int rc;

	kvd_locate(it->lo, it->lolen, &w);
	if (w.plen && it->hi) {
		size_t n = kvd_run(w.pk + 6, lo, hi);

		if (kvd_cmp(it->hi, it->hilen, hi, n) <= 0) {
			it->drives = calloc(1, sizeof(*it->drives));
			if (!it->drives || !(it->drives[0] = strdup(w.pk + 6)))
				return -ENOMEM;
			it->ndrives = 1;
			return 0;
		}
	}
	it->whole = true;
	rc = kvd_load_drives(kv);
	if (rc)
		return rc;
	pthread_mutex_lock(&kv->lock);
	it->drives = calloc(kv->ndrives + 1, sizeof(*it->drives));
	for (size_t i = 0; it->drives && i < kv->ndrives; i++) {
		size_t n = kvd_run(kv->drives[i], lo, hi);

		if (kvd_cmp(hi, n, it->lo, it->lolen) <= 0 ||
		    (it->hi && kvd_cmp(lo, n, it->hi, it->hilen) >= 0))
			continue;
		it->drives[it->ndrives] = strdup(kv->drives[i]);
		if (!it->drives[it->ndrives]) {
			rc = -ENOMEM;
			break;
		}
		it->ndrives++;
	}
	if (!it->drives)
		rc = -ENOMEM;
	pthread_mutex_unlock(&kv->lock);
	return rc;
}

int kvd_iter_open(struct kv_iter **out, struct kv *kv_, const char *lo,
		  size_t lolen, const char *hi, size_t hilen, unsigned flags,
		  long long *rev)
{
	struct kvd_iter *it = calloc(1, sizeof(*it));
	int rc;

	if (!it)
		return -ENOMEM;
	it->base.ops = &kvd_ops;
	it->kv = (struct kvd *)kv_;
	it->keys_only = flags & KV_ITER_KEYS_ONLY;
	it->lo = malloc(lolen + 1);
	it->hi = hi ? malloc(hilen + 1) : NULL;
	if (!it->lo || (hi && !it->hi)) {
		kvd_iter_free(&it->base);
		return -ENOMEM;
	}
	memcpy(it->lo, lo, lolen);
	it->lolen = lolen;
	if (hi)
		memcpy(it->hi, hi, hilen);
	it->hilen = hilen;
	rc = kvd_iter_drives(it);
	if (rc == -ENOMEM) {
		kvd_iter_free(&it->base);
		return rc;
	}
	it->status = rc;
	if (!rc)
		kvd_iter_position(it, it->lo, it->lolen);
	*out = &it->base;
	return 0;
}

void kvd_iter_seek(struct kv_iter *it_, const char *key, size_t klen)
{
	struct kvd_iter *it = (struct kvd_iter *)it_;
	struct kvd_stream *s = it->at;

	if (it->status)
		return;
	if (kvd_cmp(key, klen, it->lo, it->lolen) < 0) {
		key = it->lo;
		klen = it->lolen;
	}
	/* within the one stream's page in hand: no round trip */
	if (s && !it->whole && s->n &&
	    kvd_cmp(key, klen, s->ents[0].k, s->ents[0].klen) >= 0 &&
	    kvd_cmp(key, klen, s->ents[s->n - 1].k, s->ents[s->n - 1].klen) <=
		0) {
		size_t a = 0, b = s->n - 1;

		while (a < b) {
			size_t m = (a + b) / 2;

			if (kvd_cmp(s->ents[m].k, s->ents[m].klen, key, klen) <
			    0)
				a = m + 1;
			else
				b = m;
		}
		s->pos = a;
		return;
	}
	kvd_iter_position(it, key, klen);
}

bool kvd_iter_valid(struct kv_iter *it_)
{
	struct kvd_iter *it = (struct kvd_iter *)it_;

	return !it->status && it->at;
}

const char *kvd_iter_key(struct kv_iter *it_, size_t *len)
{
	struct kvd_iter *it = (struct kvd_iter *)it_;
	const struct kvd_ent *e = &it->at->ents[it->at->pos];

	*len = e->klen;
	return e->k;
}

const char *kvd_iter_value(struct kv_iter *it_, size_t *len)
{
	struct kvd_iter *it = (struct kvd_iter *)it_;
	const struct kvd_ent *e = &it->at->ents[it->at->pos];

	*len = e->vlen;
	return e->v ? e->v : "";
}

void kvd_iter_next(struct kv_iter *it_)
{
	struct kvd_iter *it = (struct kvd_iter *)it_;

	if (it->status || !it->at)
		return;
	it->at->pos++;
	kvd_iter_settle(it);
}

int kvd_iter_status(struct kv_iter *it_)
{
	return ((struct kvd_iter *)it_)->status;
}

void kvd_iter_free(struct kv_iter *it_)
{
	struct kvd_iter *it = (struct kvd_iter *)it_;

	kvd_stream_release(&it->other);
	kvd_stream_release(&it->drv);
	for (size_t i = 0; i < it->ndrives; i++)
		free(it->drives[i]);
	free(it->drives);
	free(it->lo);
	free(it->hi);
	free(it);
}
