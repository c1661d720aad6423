/*
 * kv_ddb_writer.c - several writers of one DynamoDB table
 * (kv_options.shared, issue 24's writers on DynamoDB): each holds a writer
 * item of its own, kept by the keeper and fencing its commits, and a
 * writer that stopped is fenced by whoever finds it stopped, before
 * anything it left is taken over (see kv_ddb.c).
 *
 * Taking (kvd_writer_take): a shared read-write open puts its writer item
 * {pk KVD_META_PK, sk "writer#<its id, 16 hex digits>"}: o, h, e as the
 * lease item's (kv_ddb_lease.c), in one transaction with an update of the
 * lease item that adds 1 to its g (the joins of shared writers) and
 * removes the o, h, e of a sole writer whose lease expired (which fences
 * it: its commits check o), on condition that no live sole writer holds
 * the lease: then it fails, -EBUSY. A sole writer's open the other way
 * round (kvd_writers_gone, then kvd_lease_take): it reads g, finds no live
 * writer item (else -EBUSY), deletes the stopped ones (fencing them), and
 * puts the lease on condition that g is still the one read: a writer that
 * joined since changed g, and the put fails (-EBUSY). Both sides write the
 * lease item, so DynamoDB orders them: never a sole writer and shared ones
 * together. g only grows (a sole writer's close removes its attributes,
 * not the item), so no join goes unseen.
 *
 * Keeping: the keeper (kv_keeper.c) pushes e every third of the TTL on
 * condition that o is this open's (its item still exists); every commit
 * carries a ConditionCheck that it is and that e is not past
 * (kvd_writer_check): a writer that could not renew for the TTL, or whose
 * item another deleted, is fenced: its commits fail with -EROFS.
 *
 * Stopped (kvd_writers, kv_writers()): the live writers are the items
 * whose e is not past by this process's clock. An item past its e is
 * deleted, on condition that its e is still the one read, before its
 * writer is left out of the list: from then on that writer's commits and
 * renewals fail, so whatever a caller takes over from a writer not listed
 * (its folder renames, holds, orphans: journal_replay.c, hold.c,
 * tree_remove.c) it can no longer change. This is what etcd's lease
 * gives, whose expiry deletes the writer's key. A writer that renewed
 * meanwhile (the delete's condition fails) is listed: it lives.
 *
 * Limits: as the lease's, expiry is judged by the writers' clocks (a
 * condition has no time of DynamoDB's own): a writer whose clock runs
 * behind the others' by more than the time it has left is judged stopped
 * early, and fenced (safe; it must mount again). Joins write the lease
 * item, one hot item while writers join; renewals and commits do not.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_ddb_i.h"
#include "log.h"

#define KVD_WRITER_SK_LEN (sizeof(KVD_WRITER_SK) - 1 + 16)

static void kvd_writer_sk(uint64_t id, char sk[KVD_WRITER_SK_LEN + 1])
{
	snprintf(sk, KVD_WRITER_SK_LEN + 1, KVD_WRITER_SK "%016llx",
		 (unsigned long long)id);
}

/* A request on this open's writer item (kvd_meta_req). */
static struct json_object *kvd_writer_req(struct kvd *kv, const char *ename,
					  const char *expr, const char *which)
{
	char sk[KVD_WRITER_SK_LEN + 1];

	kvd_writer_sk(kv->client, sk);
	return kvd_meta_req(kv->table, sk, ename, expr, which);
}

/* Adds ExpressionAttributeValues :o (this open's id), and :n (@n) unless
 * @nname is NULL, to @req. Errors: -ENOMEM. */
static int kvd_writer_vals(struct kvd *kv, struct json_object *req,
			   const char *nname, uint64_t n)
{
	struct json_object *vals = json_object_new_object();

	if (!req || ddb_add(vals, ":o", ddb_s(kv->owner)) ||
	    (nname && ddb_add(vals, nname, ddb_n(n)))) {
		json_object_put(vals);
		return -ENOMEM;
	}
	return ddb_add(req, "ExpressionAttributeValues", vals);
}

/* ---- this open's item ---------------------------------------------------- */

/* The keeper's renewal (kv_keeper_i.h): e pushed, on condition that the
 * item is still this open's. */
static int kvd_writer_renew(void *ctx)
{
	struct kvd *kv = ctx;
	struct json_object *req, *resp = NULL;
	int rc;

	if (kvd_fenced(kv)) /* a commit found it lost: keep it no more */
		return 1;
	req = kvd_writer_req(kv, "ConditionExpression", "#o = :o", "oe");
	rc = req && !ddb_add(req, "UpdateExpression",
			     json_object_new_string("SET #e = :e"))
		 ? kvd_writer_vals(kv, req, ":e",
				   kvd_now_ms() + 1000ull * kv->ttl)
		 : -ENOMEM;
	if (!rc)
		rc = ddb_call(kv->d, "UpdateItem", req, &resp);
	json_object_put(req);
	json_object_put(resp);
	if (rc == -ECANCELED) {
		kvd_fence(kv, "another writer found it stopped: its writer "
			      "item is gone");
		return 1;
	}
	if (rc)
		plog(LOG_WARNING,
		     "dynamodb: table %s: cannot renew its writer item: %s "
		     "(trying again)",
		     kv->table, strerror(-rc));
	return rc;
}

/* The Put of this open's writer item, if missing. */
static struct json_object *kvd_writer_put(struct kvd *kv)
{
	struct json_object *req = kvd_writer_req(
	    kv, "ConditionExpression", "attribute_not_exists(#o)", "o");
	struct json_object *item = json_object_new_object();
	char sk[KVD_WRITER_SK_LEN + 1];

	kvd_writer_sk(kv->client, sk);
	if (req) /* Put: the item says its key */
		json_object_object_del(req, "Key");
	if (!req || ddb_add(item, "pk", ddb_s(KVD_META_PK)) ||
	    ddb_add(item, "sk", ddb_b(sk, strlen(sk))) ||
	    ddb_add(item, "o", ddb_s(kv->owner)) ||
	    ddb_add(item, "h", ddb_s(kv->holder)) ||
	    ddb_add(item, "e", ddb_n(kvd_now_ms() + 1000ull * kv->ttl)) ||
	    ddb_add(req, "Item", json_object_get(item))) {
		json_object_put(req);
		req = NULL;
	}
	json_object_put(item);
	return req;
}

/* The Update of the lease item that counts a join (g) and fences a sole
 * writer whose lease expired, on condition that none holds it. */
static struct json_object *kvd_writer_join(struct kvd *kv)
{
	struct json_object *req =
	    kvd_meta_req(kv->table, KVD_LEASE_SK, "ConditionExpression",
			 "attribute_not_exists(#o) OR #e < :now", "oehg");
	struct json_object *vals = json_object_new_object();

	if (!req ||
	    ddb_add(req, "UpdateExpression",
		    json_object_new_string("ADD #g :one REMOVE #o, #e, #h")) ||
	    ddb_add(vals, ":now", ddb_n(kvd_now_ms())) ||
	    ddb_add(vals, ":one", ddb_n(1)) ||
	    ddb_add(req, "ExpressionAttributeValues", json_object_get(vals))) {
		json_object_put(req);
		req = NULL;
	}
	json_object_put(vals);
	return req;
}

/* Adds {@kind: @body} (taken) to @items. Errors: -ENOMEM. */
static int kvd_add_action(struct json_object *items, const char *kind,
			  struct json_object *body)
{
	struct json_object *wrap = json_object_new_object();

	if (!body || ddb_add(wrap, kind, body) ||
	    json_object_array_add(items, wrap)) {
		json_object_put(wrap);
		return -ENOMEM;
	}
	return 0;
}

int kvd_writer_take(struct kvd *kv)
{
	struct json_object *items = json_object_new_array(), *resp = NULL;
	int rc = kvd_holder_init(kv);

	if (!rc && !items)
		rc = -ENOMEM;
	if (!rc)
		rc = kvd_add_action(items, "Put", kvd_writer_put(kv));
	if (!rc)
		rc = kvd_add_action(items, "Update", kvd_writer_join(kv));
	/* commits number their tokens from 1 (kv_ddb_batch.c): 0 is this */
	if (rc)
		json_object_put(items);
	else
		rc = ddb_transact(kv->d, items, kv->client, 0, &resp);
	json_object_put(resp);
	if (rc == -ECANCELED) {
		plog(LOG_DEBUG,
		     "dynamodb: table %s is open read-write by a sole writer",
		     kv->table);
		rc = -EBUSY;
	}
	if (rc)
		return rc;
	kv->writing = true;
	return kv_keeper_start(&kv->keeper, 1000L * kv->ttl / 3,
			       kvd_writer_renew, kv);
}

void kvd_writer_drop(struct kvd *kv)
{
	struct json_object *req, *resp = NULL;

	if (!kv->writing)
		return;
	kv_keeper_stop(kv->keeper);
	kv->keeper = NULL;
	kv->writing = false;
	if (kvd_fenced(kv))
		return;
	/* out of memory or no answer: the item expires, the others delete
	 * it (kvd_writers) */
	req = kvd_writer_req(kv, "ConditionExpression", "#o = :o", "o");
	if (!kvd_writer_vals(kv, req, NULL, 0))
		ddb_call(kv->d, "DeleteItem", req, &resp);
	json_object_put(req);
	json_object_put(resp);
}

int kvd_writer_check(struct kvd *kv, struct json_object *items)
{
	struct json_object *cc = kvd_writer_req(kv, "ConditionExpression",
						"#o = :o AND #e > :now", "oe");
	int rc = kvd_writer_vals(kv, cc, ":now", kvd_now_ms());

	if (rc) {
		json_object_put(cc);
		return rc;
	}
	return kvd_add_action(items, "ConditionCheck", cc);
}

/* ---- the writers --------------------------------------------------------- */

/* One page of the writer items after @start (taken; NULL: the first) in
 * *@resp. Errors: -ENOMEM, as ddb_call. */
static int kvd_writer_page(struct ddb *d, const char *table,
			   struct json_object *start, struct json_object **resp)
{
	struct json_object *req = json_object_new_object();
	struct json_object *vals = json_object_new_object();
	struct json_object *names = json_object_new_object();
	int rc = 0;

	if (ddb_add(req, "TableName", json_object_new_string(table)) ||
	    ddb_add(
		req, "KeyConditionExpression",
		json_object_new_string("#p = :p AND begins_with(#s, :w)")) ||
	    ddb_add(names, "#p", json_object_new_string("pk")) ||
	    ddb_add(names, "#s", json_object_new_string("sk")) ||
	    ddb_add(req, "ExpressionAttributeNames", json_object_get(names)) ||
	    ddb_add(vals, ":p", ddb_s(KVD_META_PK)) ||
	    ddb_add(vals, ":w", ddb_b(KVD_WRITER_SK, strlen(KVD_WRITER_SK))) ||
	    ddb_add(req, "ExpressionAttributeValues", json_object_get(vals)) ||
	    ddb_add(req, "ConsistentRead", json_object_new_boolean(1)) ||
	    (start &&
	     ddb_add(req, "ExclusiveStartKey", json_object_get(start))))
		rc = -ENOMEM;
	if (!rc)
		rc = ddb_call(d, "Query", req, resp);
	json_object_put(start);
	json_object_put(names);
	json_object_put(vals);
	json_object_put(req);
	return rc;
}

/* Every writer item (a consistent, paged Query) in *@out, an array.
 * Errors: -ENOMEM, as ddb_call. */
static int kvd_writer_items(struct ddb *d, const char *table,
			    struct json_object **out)
{
	struct json_object *next = NULL, *all = json_object_new_array();
	int rc = all ? 0 : -ENOMEM;

	do {
		struct json_object *resp = NULL, *got;

		if (!rc)
			rc = kvd_writer_page(d, table, next, &resp);
		next = NULL;
		if (!rc && json_object_object_get_ex(resp, "Items", &got))
			for (size_t i = 0; i < json_object_array_length(got);
			     i++)
				if (json_object_array_add(
					all,
					json_object_get(
					    json_object_array_get_idx(got, i))))
					rc = -ENOMEM;
		if (!rc &&
		    json_object_object_get_ex(resp, "LastEvaluatedKey", &got))
			next = json_object_get(got);
		json_object_put(resp);
	} while (!rc && next);
	if (rc)
		json_object_put(all);
	*out = rc ? NULL : all;
	return rc;
}

/*
 * Writer item @item, read: its writer's id in *id, and whether it lives:
 * 1 if its e is not past; else it is deleted on condition that e is still
 * the one read (its writer fenced) and 0, or 1 if that fails (it renewed,
 * or another deleted it: the caller may wait for the next look).
 * Errors: -EIO (not a writer item), -ENOMEM, as ddb_call.
 */
static int kvd_writer_judge(struct kvd *kv, struct json_object *item,
			    uint64_t *id)
{
	struct json_object *req, *vals, *resp = NULL;
	uint64_t e = ddb_get_n(item, "e");
	size_t len = 0;
	char *sk = ddb_get_b(item, "sk", &len);
	int rc;

	if (!sk || len != KVD_WRITER_SK_LEN) {
		free(sk);
		return -EIO;
	}
	*id = strtoull(sk + strlen(KVD_WRITER_SK), NULL, 16);
	if (e > kvd_now_ms()) {
		free(sk);
		return 1;
	}
	req =
	    kvd_meta_req(kv->table, sk, "ConditionExpression", "#e = :e", "e");
	vals = json_object_new_object();
	rc = req && !ddb_add(vals, ":e", ddb_n(e)) &&
		     !ddb_add(req, "ExpressionAttributeValues",
			      json_object_get(vals))
		 ? ddb_call(kv->d, "DeleteItem", req, &resp)
		 : -ENOMEM;
	if (!rc)
		plog(LOG_NOTICE,
		     "dynamodb: table %s: writer %016llx (%s) stopped (its "
		     "item expired): fenced, its work taken over",
		     kv->table, (unsigned long long)*id,
		     ddb_get_s(item, "h") ? ddb_get_s(item, "h") : "?");
	free(sk);
	json_object_put(vals);
	json_object_put(req);
	json_object_put(resp);
	return rc == -ECANCELED ? 1 : rc;
}

uint64_t kvd_writer_id(const struct kv *kv_)
{
	const struct kvd *kv = (const struct kvd *)kv_;

	return kv->shared && !kv->base.read_only ? kv->client : 0;
}

int kvd_writers(struct kv *kv_, uint64_t **ids, size_t *n)
{
	struct kvd *kv = (struct kvd *)kv_;
	struct json_object *items = NULL;
	size_t cnt;
	int rc = kvd_writer_items(kv->d, kv->table, &items);

	cnt = rc ? 0 : json_object_array_length(items);
	if (cnt && !(*ids = calloc(cnt, sizeof(**ids))))
		rc = -ENOMEM;
	for (size_t i = 0; i < cnt && rc >= 0; i++) {
		uint64_t id = 0;

		rc = kvd_writer_judge(kv, json_object_array_get_idx(items, i),
				      &id);
		if (rc == 1)
			(*ids)[(*n)++] = id;
	}
	json_object_put(items);
	if (rc < 0) {
		free(*ids);
		*ids = NULL;
		*n = 0;
		return rc;
	}
	return 0;
}

int kvd_writers_gone(struct kvd *kv, uint64_t *gen)
{
	struct json_object *lease = NULL, *items = NULL;
	int rc = kvd_lease_read(kv->d, kv->table, &lease);

	*gen = lease ? ddb_get_n(lease, "g") : 0;
	json_object_put(lease);
	/* the items after g: a writer that joins later changes g */
	if (!rc)
		rc = kvd_writer_items(kv->d, kv->table, &items);
	for (size_t i = 0; !rc && i < json_object_array_length(items); i++) {
		uint64_t id = 0;

		rc = kvd_writer_judge(kv, json_object_array_get_idx(items, i),
				      &id);
		if (rc == 1) {
			plog(LOG_DEBUG,
			     "dynamodb: table %s is open by shared writers",
			     kv->table);
			rc = -EBUSY;
		}
	}
	json_object_put(items);
	return rc;
}

int kvd_writer_holders(struct ddb *d, const char *table, char *buf, size_t size)
{
	struct json_object *items = NULL;
	uint64_t now = kvd_now_ms();
	size_t n = 0, len = 0;
	int rc = kvd_writer_items(d, table, &items);

	for (size_t i = 0; !rc && i < json_object_array_length(items); i++) {
		struct json_object *it = json_object_array_get_idx(items, i);
		const char *h = ddb_get_s(it, "h");

		if (ddb_get_n(it, "e") < now)
			continue; /* stopped: not a holder */
		snprintf(buf + len, size - len, "%s%s", n++ ? "; " : "",
			 h ? h : "?");
		len += strlen(buf + len);
	}
	json_object_put(items);
	if (!rc && !n)
		rc = -ENOENT;
	return rc;
}
