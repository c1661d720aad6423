/*
 * kv_ddb_batch.c - batches of the DynamoDB backend, each committed as one
 * TransactWriteItems (see kv_ddb.c).
 *
 * A batch is recorded as added and planned at commit: the last operation
 * on a key wins (DynamoDB refuses two actions on one item in a
 * transaction), and a delete-range becomes a Delete of each key it covers
 * then (a keys-only read of the range, and the keys the batch itself put
 * before it), since DynamoDB has no range delete. A condition
 * (kv_batch_expect) on a key the batch writes goes into that action's
 * ConditionExpression, else into a ConditionCheck of its own: the key's ver
 * must still be the version read, or the item must be absent (version 0).
 * Every put writes a new ver, drawn from this open's id and a counter. The
 * last action checks that this open still holds the lease (kv_ddb_lease.c)
 * or, a shared writer, its writer item (kv_ddb_writer.c).
 *
 * Exactly once: the transaction carries a ClientRequestToken (this open's
 * id and the commit's number), so a send that ddb.c repeats after a lost
 * answer, a conflict or throttling is applied once: DynamoDB answers a
 * repeat of an applied transaction with success, for ten minutes.
 *
 * When it fails: the lease's check -> fenced, -EROFS; another condition ->
 * -EAGAIN; nothing was written either way.
 *
 * Limits: kv.c counted the batch's actions as it was built (the keys a
 * range covered then, kv_limits.range_per_key) and sends none past 99; a
 * plan of more than 99 actions all the same (a range that gained keys
 * since) is refused here with -E2BIG, nothing written; a key longer than
 * a sort key can be, put, is refused with -ENAMETOOLONG.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_ddb_i.h"
#include "log.h"

struct kv_batch *kvd_batch_new(struct kv *kv)
{
	struct kvd_batch *b = calloc(1, sizeof(*b));

	return b ? &b->base : NULL;
}

static void kvd_batch_add(struct kv_batch *b_, int type, const char *k,
			  size_t klen, const char *v, size_t vlen)
{
	struct kvd_batch *b = (struct kvd_batch *)b_;
	struct kvd_op *op;

	if (b->oom)
		return;
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;
		struct kvd_op *ops = realloc(b->ops, cap * sizeof(*ops));

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

void kvd_batch_put(struct kv_batch *b, const char *key, size_t klen,
		   const char *val, size_t vlen)
{
	kvd_batch_add(b, KVD_PUT, key, klen, val, vlen);
}

void kvd_batch_delete(struct kv_batch *b, const char *key, size_t klen)
{
	kvd_batch_add(b, KVD_DEL, key, klen, NULL, 0);
}

void kvd_batch_delete_range(struct kv_batch *b, const char *lo, size_t lolen,
			    const char *hi, size_t hilen)
{
	kvd_batch_add(b, KVD_RANGE, lo, lolen, hi, hilen);
}

void kvd_batch_clear(struct kv_batch *b_)
{
	struct kvd_batch *b = (struct kvd_batch *)b_;

	for (size_t i = 0; i < b->n; i++) {
		free(b->ops[i].k);
		free(b->ops[i].v);
	}
	b->n = 0;
	b->oom = false;
}

void kvd_batch_free(struct kv_batch *b_)
{
	struct kvd_batch *b = (struct kvd_batch *)b_;

	kvd_batch_clear(b_);
	free(b->ops);
	free(b);
}

/* ---- the plan: one action per key ---------------------------------------- */

enum { KVD_CHECK = KVD_RANGE + 1 };

struct kvd_act {
	int type; /* KVD_PUT, KVD_DEL, KVD_CHECK */
	char *k;  /* owned */
	size_t klen;
	const char *v; /* borrowed from the batch */
	size_t vlen;
	bool cond;
	uint64_t ver; /* cond: the version the key must have */
};

struct kvd_plan {
	struct kvd_act *a;
	size_t n, cap;
};

static void kvd_plan_release(struct kvd_plan *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->a[i].k);
	free(p->a);
}

static struct kvd_act *kvd_plan_find(struct kvd_plan *p, const char *k,
				     size_t klen)
{
	for (size_t i = 0; i < p->n; i++)
		if (!kvd_cmp(p->a[i].k, p->a[i].klen, k, klen))
			return &p->a[i];
	return NULL;
}

/* Sets the action on @k. Errors: -ENOMEM, -E2BIG (more actions than a
 * transaction holds). */
static int kvd_plan_set(struct kvd_plan *p, int type, const char *k,
			size_t klen, const char *v, size_t vlen)
{
	struct kvd_act *a = kvd_plan_find(p, k, klen);

	if (!a) {
		if (p->n >= KVD_TXN_ITEMS - 1) /* and the lease's check */
			return -E2BIG;
		if (p->n == p->cap) {
			size_t cap = p->cap ? 2 * p->cap : 32;
			struct kvd_act *na = realloc(p->a, cap * sizeof(*na));

			if (!na)
				return -ENOMEM;
			p->a = na;
			p->cap = cap;
		}
		a = &p->a[p->n];
		memset(a, 0, sizeof(*a));
		a->k = malloc(klen + 1);
		if (!a->k)
			return -ENOMEM;
		memcpy(a->k, k, klen);
		a->klen = klen;
		p->n++;
	}
	a->type = type;
	a->v = v;
	a->vlen = vlen;
	return 0;
}

/* Deletes in @p every key of [lo, hi): the plan's own, and the table's.
 * Errors: as kvd_plan_set, as the iterator's. */
static int kvd_plan_range(struct kvd *kv, struct kvd_plan *p,
			  const struct kvd_op *op)
{
	struct kv_iter *it = NULL;
	int rc = 0;

	if (kvd_cmp(op->k, op->klen, op->v, op->vlen) >= 0)
		return 0; /* empty */
	for (size_t i = 0; i < p->n; i++)
		if (kvd_cmp(p->a[i].k, p->a[i].klen, op->k, op->klen) >= 0 &&
		    kvd_cmp(p->a[i].k, p->a[i].klen, op->v, op->vlen) < 0) {
			p->a[i].type = KVD_DEL;
			p->a[i].v = NULL;
			p->a[i].vlen = 0;
		}
	rc = kvd_iter_open(&it, &kv->base, op->k, op->klen, op->v, op->vlen,
			   KV_ITER_KEYS_ONLY, NULL);
	if (rc)
		return rc;
	for (; !rc && kvd_iter_valid(it); kvd_iter_next(it)) {
		size_t klen;
		const char *k = kvd_iter_key(it, &klen);

		rc = kvd_plan_set(p, KVD_DEL, k, klen, NULL, 0);
	}
	if (!rc)
		rc = kvd_iter_status(it);
	kvd_iter_free(it);
	return rc;
}

/* Adds the conditions of @b to @p. Errors: -ENOMEM, -E2BIG, -EAGAIN (two
 * versions asked of one key: one of them fails). */
static int kvd_plan_conds(struct kvd_plan *p, const struct kv_batch *b)
{
	int rc = 0;

	for (size_t i = 0; i < b->nconds && !rc; i++) {
		const struct kv_cond *c = &b->conds[i];
		struct kvd_act *a = kvd_plan_find(p, c->key, c->klen);

		if (!a) {
			rc = kvd_plan_set(p, KVD_CHECK, c->key, c->klen, NULL,
					  0);
			a = rc ? NULL : &p->a[p->n - 1];
		} else if (a->cond && a->ver != c->ver) {
			rc = -EAGAIN;
		}
		if (a) {
			a->cond = true;
			a->ver = c->ver;
		}
	}
	return rc;
}

/* Plans @b (see the overview). Errors: as the calls above, -ENOMEM. */
static int kvd_plan(struct kvd *kv, struct kvd_batch *b, struct kvd_plan *p)
{
	int rc = 0;

	for (size_t i = 0; i < b->n && !rc; i++) {
		const struct kvd_op *op = &b->ops[i];

		if (op->type == KVD_RANGE)
			rc = kvd_plan_range(kv, p, op);
		else
			rc = kvd_plan_set(p, op->type, op->k, op->klen,
					  op->type == KVD_PUT ? op->v : NULL,
					  op->vlen);
	}
	if (!rc)
		rc = kvd_plan_conds(p, &b->base);
	return rc;
}

/* ---- the transaction ----------------------------------------------------- */

/* A new version: this open's id and @seq mixed (splitmix64), never 0. */
static uint64_t kvd_new_ver(uint64_t client, uint64_t seq)
{
	uint64_t z = client + seq * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 1;
}

/* The action of @a as a TransactItems element; NULL when out of memory. */
static struct json_object *kvd_action(struct kvd *kv, const struct kvd_act *a,
				      uint64_t ver)
{
	static const char *const kinds[] = {"Put", "Delete", "",
					    "ConditionCheck"};
	struct json_object *body = json_object_new_object(),
			   *wrap = json_object_new_object();
	int rc = ddb_add(body, "TableName", json_object_new_string(kv->table));

	if (!rc && a->type == KVD_PUT) {
		struct json_object *item = kvd_item_key(a->k, a->klen);

		if (item && a->vlen)
			rc = ddb_add(item, "v", ddb_b(a->v, a->vlen));
		if (!rc)
			rc = ddb_add(item, "ver", ddb_n(ver));
		if (!rc)
			rc = ddb_add(body, "Item", item);
		else
			json_object_put(item);
	} else if (!rc) {
		rc = ddb_add(body, "Key", kvd_item_key(a->k, a->klen));
	}
	if (!rc && a->cond) {
		struct json_object *names = json_object_new_object();

		if (a->ver == 0) {
			rc = ddb_add(names, "#s", json_object_new_string("sk"));
			if (!rc)
				rc = ddb_add(body, "ConditionExpression",
					     json_object_new_string(
						 "attribute_not_exists(#s)"));
		} else {
			struct json_object *vals = json_object_new_object();

			rc = ddb_add(names, "#ver",
				     json_object_new_string("ver"));
			if (!rc)
				rc = ddb_add(vals, ":ver", ddb_n(a->ver));
			if (!rc)
				rc = ddb_add(body, "ExpressionAttributeValues",
					     vals);
			else
				json_object_put(vals);
			if (!rc)
				rc = ddb_add(
				    body, "ConditionExpression",
				    json_object_new_string("#ver = :ver"));
		}
		if (!rc)
			rc = ddb_add(body, "ExpressionAttributeNames", names);
		else
			json_object_put(names);
	}
	if (!rc)
		return ddb_add(wrap, kinds[a->type], body) ? NULL : wrap;
	json_object_put(body);
	json_object_put(wrap);
	return NULL;
}

/* The codes of a cancelled transaction's actions, in order, in @codes (up
 * to @max; "None" for an action that was fine): from CancellationReasons,
 * or from the message's "[None, ConditionalCheckFailed, ...]". Returns how
 * many. */
static size_t kvd_cancel_codes(struct json_object *err, char codes[][32],
			       size_t max)
{
	struct json_object *rs, *m;
	size_t n = 0;

	if (json_object_object_get_ex(err, "CancellationReasons", &rs)) {
		for (size_t i = 0; i < json_object_array_length(rs) && n < max;
		     i++) {
			struct json_object *c;

			snprintf(
			    codes[n++], 32, "%s",
			    json_object_object_get_ex(
				json_object_array_get_idx(rs, i), "Code", &c)
				? json_object_get_string(c)
				: "None");
		}
		return n;
	}
	if ((json_object_object_get_ex(err, "Message", &m) ||
	     json_object_object_get_ex(err, "message", &m))) {
		const char *s = strrchr(json_object_get_string(m), '[');

		while (s && *s && *s != ']' && n < max) {
			size_t len;

			s += strspn(s, "[, ");
			len = strcspn(s, ",]");
			snprintf(codes[n++], 32, "%.*s", (int)len, s);
			s += len;
		}
	}
	return n;
}

/* Sends @p as one transaction. Errors: see the overview, as ddb_call. */
static int kvd_transact(struct kvd *kv, const struct kvd_plan *p)
{
	struct json_object *items = json_object_new_array(), *resp = NULL;
	char codes[KVD_TXN_ITEMS + 1][32];
	uint64_t seq;
	size_t n;
	int rc = items ? 0 : -ENOMEM;

	pthread_mutex_lock(&kv->lock);
	seq = ++kv->seq;
	kv->seq += p->n; /* the versions of its puts */
	pthread_mutex_unlock(&kv->lock);
	for (size_t i = 0; i < p->n && !rc; i++) {
		struct json_object *a = kvd_action(
		    kv, &p->a[i], kvd_new_ver(kv->client, seq + 1 + i));

		if (!a || json_object_array_add(items, a)) {
			json_object_put(a);
			rc = -ENOMEM;
		}
	}
	if (!rc)
		rc = kv->shared ? kvd_writer_check(kv, items)
				: kvd_lease_check(kv, items);
	if (rc)
		json_object_put(items);
	else
		rc = ddb_transact(kv->d, items, kv->client, seq, &resp);
	if (rc != -ECANCELED) {
		json_object_put(resp);
		return rc;
	}
	n = kvd_cancel_codes(resp, codes, KVD_TXN_ITEMS + 1);
	json_object_put(resp);
	if (n == p->n + 1 && !strcmp(codes[p->n], "ConditionalCheckFailed")) {
		kvd_fence(kv, kv->shared
				  ? "its writer item expired, or another "
				    "writer found it stopped"
				  : "its lease expired or another "
				    "writer took it");
		return -EROFS;
	}
	for (size_t i = 0; i < n && i < p->n; i++)
		if (!strcmp(codes[i], "ConditionalCheckFailed"))
			return -EAGAIN;
	plog(LOG_ERR,
	     "dynamodb: table %s: a transaction was cancelled (%zu "
	     "reasons, none a condition)",
	     kv->table, n);
	return -EIO;
}

/* Checks the keys of @p, and registers the drives it puts keys in.
 * Errors: -ENAMETOOLONG, -EAGAIN (a condition on a key that cannot
 * exist), as kvd_note_drives. */
static int kvd_prepare(struct kvd *kv, struct kvd_plan *p)
{
	const char *ids[KVD_TXN_ITEMS];
	char idbuf[KVD_TXN_ITEMS][80];
	size_t nids = 0, o = 0;

	for (size_t i = 0; i < p->n; i++) {
		struct kvd_act *a = &p->a[i];
		struct kvd_where w;
		size_t sk;

		kvd_locate(a->k, a->klen, &w);
		sk = a->klen - w.plen;
		if (sk == 0 || sk > KVD_SK_MAX) {
			if (a->type == KVD_PUT)
				return -ENAMETOOLONG;
			if (a->cond && a->ver)
				return -EAGAIN;
			free(a->k); /* a key that cannot be: nothing to do */
			continue;
		}
		p->a[o++] = *a;
		if (a->type != KVD_PUT || !w.plen)
			continue;
		snprintf(idbuf[nids], sizeof(idbuf[nids]), "%.72s", w.pk + 6);
		ids[nids] = idbuf[nids];
		for (size_t j = 0; j < nids; j++)
			if (!strcmp(ids[j], idbuf[nids])) {
				nids--;
				break;
			}
		nids++;
	}
	p->n = o;
	return kvd_note_drives(kv, ids, nids);
}

int kvd_batch_commit(struct kv *kv_, struct kv_batch *b_, bool sync,
		     long long *rev)
{
	struct kvd *kv = (struct kvd *)kv_;
	struct kvd_batch *b = (struct kvd_batch *)b_;
	struct kvd_plan p = {0};
	int rc;

	(void)sync; /* a transaction is durable when answered */
	*rev = -1;  /* no watches (yet): no revisions */
	if (kv->base.read_only || kvd_fenced(kv))
		return -EROFS;
	if (b->oom) /* an operation was lost: the batch is not whole */
		return -ENOMEM;
	rc = kvd_plan(kv, b, &p);
	if (rc == -E2BIG)
		plog(LOG_ERR,
		     "dynamodb: table %s: a batch of %zu operations is more "
		     "than the %d actions of one transaction (its range "
		     "deletes covered more keys than when added)",
		     kv->table, b->n, KVD_TXN_ITEMS - 1);
	if (!rc)
		rc = kvd_prepare(kv, &p);
	if (!rc && p.n)
		rc = kvd_transact(kv, &p);
	kvd_plan_release(&p);
	return rc;
}
