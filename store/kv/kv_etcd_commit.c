/*
 * kv_etcd_commit.c - commits of the etcd backend: a batch becomes one
 * txn, applied exactly once, fenced by the owner key (see kv_etcd.c).
 *
 * Commits are exactly once though the transport retries (etcd_i.h): each
 * open holds a few commit slots, keys under NAME/m/txn/; a Txn that puts
 * anything compares its slot's mod revision with the one its last commit
 * left and puts its own id there. If an answer is lost and the Txn is sent
 * again after it was applied, the compare fails, the failure branch reads the
 * slot, and finding its own id there the commit knows it was applied. Such
 * slots cost one operation of a Txn (kv_limits says one less). Batches that
 * only delete use their slot too (a delete sent twice would take a key
 * recreated in between). An answer NOSPACE may follow a send that was
 * applied (the one that filled the quota): the slot is read then, and
 * holding the commit's id it says the commit was applied. Only when etcd's quota is full (NOSPACE: it refuses
 * any Txn that puts, the slot's too) is a delete-only batch sent again
 * without its slot, so that deletes pass and free space; no key can be
 * recreated while the alarm stands, every put being refused.
 *
 * Conditions (kv_batch_expect) are compares of the keys' mod revisions in
 * the same txn: when it fails, the slot as this commit expected it and the
 * owner key this open's, it was a condition (-EAGAIN).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#include "kv_etcd_i.h"

static int kve_take_slot(struct kve *kv)
{
	int s = -1;

	pthread_mutex_lock(&kv->lock);
	for (;;) {
		for (int i = 0; i < KVE_SLOTS; i++)
			if (!kv->slots[i].busy) {
				s = i;
				break;
			}
		if (s >= 0)
			break;
		pthread_cond_wait(&kv->slot_free, &kv->lock);
	}
	kv->slots[s].busy = true;
	pthread_mutex_unlock(&kv->lock);
	return s;
}

static void kve_give_slot(struct kve *kv, int s, long long rev)
{
	pthread_mutex_lock(&kv->lock);
	kv->slots[s].busy = false;
	kv->slots[s].rev = rev;
	pthread_cond_signal(&kv->slot_free);
	pthread_mutex_unlock(&kv->lock);
}

/*
 * Whether slot @k holds @id, i.e. a send of the commit that put @id there
 * was applied; *rev gets the slot's mod revision then.
 */
static bool kve_slot_holds(struct kve *kv, const char *k, size_t klen,
			   const char *id, long long *rev)
{
	struct json_object *req = json_object_new_object(), *resp = NULL, *kvs;
	bool held = false;

	if (kve_add_b64(req, "key", k, klen) == 0 &&
	    etcd_call(kv->e, "/v3/kv/range", req, &resp) == 0 &&
	    json_object_object_get_ex(resp, "kvs", &kvs) &&
	    json_object_array_length(kvs) > 0) {
		struct json_object *e = json_object_array_get_idx(kvs, 0);
		size_t vlen = 0;
		char *v = kve_get_b64(e, "value", &vlen);

		held = v && vlen == strlen(id) && !memcmp(v, id, vlen);
		if (held)
			*rev = etcd_int(e, "mod_revision");
		free(v);
	}
	json_object_put(req);
	json_object_put(resp);
	return held;
}

/* The mod revision of key @k now (0 if missing), or -errno. */
static long long kve_mod_rev(struct kve *kv, const char *k, size_t klen)
{
	struct json_object *req = json_object_new_object(), *resp = NULL, *kvs;
	long long rev = 0;
	int rc;

	rc = kve_add_b64(req, "key", k, klen);
	if (!rc)
		rc = etcd_call(kv->e, "/v3/kv/range", req, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	if (json_object_object_get_ex(resp, "kvs", &kvs) &&
	    json_object_array_length(kvs) > 0)
		rev =
		    etcd_int(json_object_array_get_idx(kvs, 0), "mod_revision");
	json_object_put(resp);
	return rev;
}

/* True if @b (normalised) puts anything. */
static bool kve_has_puts(const struct kve_batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (!b->ops[i].dead && b->ops[i].type == KVE_PUT)
			return true;
	return false;
}

/*
 * Logs a commit whose delete-ranges took more keys than a slice holds
 * (kv_range_keys): the store should have dropped that range in
 * slices, since etcd applies a big delete-range while reads wait. The
 * tests look for this line.
 */
static void kve_check_deleted(struct kve *kv, struct json_object *resp)
{
	struct json_object *rs, *dr;
	long long n = 0;

	if (!json_object_object_get_ex(resp, "responses", &rs))
		return;
	for (size_t i = 0; i < json_object_array_length(rs); i++)
		if (json_object_object_get_ex(json_object_array_get_idx(rs, i),
					      "response_delete_range", &dr))
			n += etcd_int(dr, "deleted");
	if (n > (long long)kv_limits_range_keys(&kv->base.limits))
		plog(LOG_WARNING,
		     "etcd: store %.*s: a commit deleted %lld keys, more than "
		     "a slice of %zu",
		     KVE_NAME(kv), n, kv_limits_range_keys(&kv->base.limits));
}

/* The mod revision of a failure branch's slot @se (0: missing). */
static long long kve_slot_rev(struct json_object *se)
{
	return se ? etcd_int(se, "mod_revision") : 0;
}

/* Adds a compare of each condition of @b (kv_batch_expect) to @cmps: the
 * key's mod revision, 0 for a key that must be absent (etcd compares a
 * missing key's as 0). Errors: -ENOMEM. */
static int kve_add_conds(struct kve *kv, const struct kv_batch *b,
			 struct json_object *cmps)
{
	int rc = 0;

	for (size_t i = 0; i < b->nconds && !rc; i++) {
		size_t len;
		char *k = kve_key(kv, b->conds[i].key, b->conds[i].klen, &len);

		rc = k ? kve_add_cmp(cmps, "MOD", k, len,
				     (long long)b->conds[i].ver)
		       : -ENOMEM;
		free(k);
	}
	return rc;
}

/*
 * Sends @b (normalised) as one txn. With @slot_key, the txn compares the
 * slot's mod revision with @slot_rev and puts @id there; a failed compare
 * whose slot holds @id means an earlier send was applied. A read-write open
 * also compares the owner key's create revision with its own: a failed
 * compare there fences this open. The batch's conditions are compares too:
 * none of the above failing, one of them did. *rev: the revision the commit
 * made (-1 if unknown). Errors: as etcd_call, -EROFS (fenced: the owner key
 * is not ours), -EAGAIN (a condition failed), -EIO (the slot changed under
 * this process), -ENOMEM (nothing sent).
 */
static int kve_txn(struct kve *kv, struct kve_batch *b, const char *slot_key,
		   size_t slot_klen, long long slot_rev, const char *id,
		   long long *rev)
{
	struct json_object *resp = NULL;
	struct json_object *succ = json_object_new_array();
	struct json_object *cmps = json_object_new_array();
	struct json_object *fail = json_object_new_array();
	struct json_object *e, *se;
	size_t vlen = 0;
	char *v;
	int rc;

	*rev = -1;
	/* the request whole or not at all: a txn missing its compares must
	 * never go */
	rc = kve_txn_ops(kv, b, succ);
	if (!rc && slot_key) {
		struct json_object *r = json_object_new_object();

		rc = kve_add_b64(r, "key", slot_key, slot_klen);
		if (!rc)
			rc = kve_add_b64(r, "value", id, strlen(id));
		if (rc)
			json_object_put(r);
		else
			rc = kve_add_op(succ, "request_put", r);
		if (!rc)
			rc = kve_add_cmp(cmps, "MOD", slot_key, slot_klen,
					 slot_rev);
		if (!rc)
			rc = kve_add_range(fail, slot_key, slot_klen);
	}
	if (!rc && kv->owner_rev > 0) {
		rc = kve_add_cmp(cmps, "CREATE", kv->owner, kv->olen,
				 kv->owner_rev);
		if (!rc)
			rc = kve_add_range(fail, kv->owner, kv->olen);
	}
	if (!rc)
		rc = kve_add_conds(kv, &b->base, cmps);
	rc = kve_send_txn(kv, rc, cmps, succ, fail, &resp);
	if (rc)
		return rc;
	if (kve_succeeded(resp, rev)) {
		kve_check_deleted(kv, resp);
		json_object_put(resp);
		return 0;
	}
	/* applied by an earlier send whose answer was lost? */
	se = slot_key ? kve_failure_kv(resp, 0) : NULL;
	v = se ? kve_get_b64(se, "value", &vlen) : NULL;
	if (v && vlen == strlen(id) && !memcmp(v, id, vlen)) {
		*rev = etcd_int(se, "mod_revision");
		goto out;
	}
	free(v);
	v = NULL;
	/* still the writer? */
	e = kv->owner_rev > 0 ? kve_failure_kv(resp, slot_key ? 1 : 0) : NULL;
	if (kv->owner_rev > 0 &&
	    (!e || etcd_int(e, "create_revision") != kv->owner_rev)) {
		v = e ? kve_get_b64(e, "value", &vlen) : NULL;
		kve_fence(kv, v);
		rc = -EROFS;
		goto out;
	}
	/* the slot as this commit expected it, the writer ours: a condition */
	if (b->base.nconds && (!slot_key || kve_slot_rev(se) == slot_rev)) {
		rc = -EAGAIN;
		goto out;
	}
	plog(LOG_ERR, "etcd: commit slot %s changed under this process",
	     slot_key ? slot_key : "?");
	rc = -EIO;
out:
	free(v);
	json_object_put(resp);
	return rc;
}

int kve_batch_commit(struct kv *kv_, struct kv_batch *b_, bool sync,
		     long long *made)
{
	struct kve *kv = (struct kve *)kv_;
	struct kve_batch *b = (struct kve_batch *)b_;
	char slot_key[KVE_NAME_MAX + 64], id[64];
	long long rev = -1;
	size_t nops;
	int s, rc, klen;

	(void)sync; /* every commit is durable on a quorum when answered */
	*made = -1;
	if (kv->base.read_only || kve_is_fenced(kv))
		return -EROFS;
	nops = kve_normalise(b);
	if (b->oom) /* an operation was lost: the batch is not whole */
		return -ENOMEM;
	if (nops == 0 && b->base.nconds == 0)
		return 0;
	if (nops + 1 > kv->txn_ops || b->base.nconds + 2 > kv->txn_ops) {
		plog(
		    LOG_ERR,
		    "etcd: a batch of %zu operations (%zu normalised) does not "
		    "fit one txn (--max-txn-ops %zu)",
		    b->n, nops, kv->txn_ops);
		return -E2BIG;
	}
	s = kve_take_slot(kv);
	klen = snprintf(slot_key, sizeof(slot_key), "%stxn/%016llx/%d",
			kv->meta, (unsigned long long)kv->client, s);
	if (kv->slots[s].rev < 0) {
		/* its last commit's fate was unknown: ask */
		long long r = kve_mod_rev(kv, slot_key, (size_t)klen);
		if (r < 0) {
			rc = (int)r;
			goto out;
		}
		kv->slots[s].rev = r;
	}
	pthread_mutex_lock(&kv->lock);
	snprintf(id, sizeof(id), "%016llx.%llu", (unsigned long long)kv->client,
		 (unsigned long long)++kv->seq);
	pthread_mutex_unlock(&kv->lock);
	rc = kve_txn(kv, b, slot_key, (size_t)klen, kv->slots[s].rev, id, &rev);
	if (rc == -ENOSPC &&
	    kve_slot_holds(kv, slot_key, (size_t)klen, id, &rev))
		/* a send whose answer was lost was applied, and filled the
		 * quota: the transport's next send found it full */
		rc = 0;
	if (rc == -ENOSPC && !kve_has_puts(b)) {
		/*
		 * etcd's quota is full and refuses any txn that puts, the
		 * slot's too; deletes must pass to free space. Sent without
		 * the slot, a retried delete is not guarded, but no key can
		 * be recreated meanwhile: every put is refused until an
		 * operator disarms the alarm. The slot's fate (an earlier
		 * send may have been applied) is asked at its next use.
		 */
		rc = kve_txn(kv, b, NULL, 0, 0, NULL, &rev);
		rev = -1;
	}
out:
	kve_give_slot(kv, s, rc ? -1 : rev);
	*made = rc ? -1 : rev;
	return rc;
}
