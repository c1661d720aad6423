/*
 * kv_ddb_lease.c - one writer per DynamoDB table: the lease item and the
 * keeper that renews it (see kv_ddb.c).
 *
 * A read-write open puts the lease item {pk KVD_META_PK, sk "lease"}: o,
 * this open's id; h, who holds it (program, pid, host); e, its expiry
 * (Unix ms, now + lease-ttl), on condition that there is none or that it
 * expired: a second read-write open finds it held and fails with -EBUSY
 * (kv_holder() says who). A keeper thread (kv_keeper.c) pushes the expiry
 * on every third of the TTL, on condition that o is still this open's.
 * Every commit carries a ConditionCheck that o is this open's and e not
 * past: once the keeper could not renew for the TTL (the writer stopped,
 * hung or lost the network) or another writer took the expired lease, the
 * check fails and this open is fenced: its commits fail with -EROFS, logged
 * once. A writer that died (kill -9) frees the table when its lease
 * expires. Close removes o, h, e if still this open's; the item stays
 * with its g, the count of shared writers' joins, which only grows.
 *
 * Shared writers (kv_ddb_writer.c) hold no lease: each adds 1 to g when
 * it joins, on condition that no live lease exists (removing an expired
 * one's o: its writer is fenced); a sole writer's open puts the lease on
 * condition that g is still what it read before it found no live shared
 * writer (kvd_writers_gone). Either way one of two racing opens fails.
 *
 * Limits: expiry is judged by the clocks of the writers (DynamoDB has no
 * time of its own in a condition): clocks apart by more than the TTL let a
 * new writer in early. The owner check (o) still fences the old one: its
 * commits fail from the moment the new writer holds the item.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kv_ddb_i.h"
#include "log.h"

uint64_t kvd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The key of the backend's own item @sk (a string) in KVD_META_PK. */
static struct json_object *kvd_meta_key(const char *sk)
{
	struct json_object *k = json_object_new_object();

	if (ddb_add(k, "pk", ddb_s(KVD_META_PK)) ||
	    ddb_add(k, "sk", ddb_b(sk, strlen(sk)))) {
		json_object_put(k);
		return NULL;
	}
	return k;
}

/* The names #o, #e, #h, #g (which of them the expression uses: @which, a
 * string of those letters). */
static struct json_object *kvd_lease_names(const char *which)
{
	struct json_object *n = json_object_new_object();
	char name[3] = "#?", attr[2] = "?";

	for (; n && *which; which++) {
		name[1] = attr[0] = *which;
		if (ddb_add(n, name, json_object_new_string(attr))) {
			json_object_put(n);
			return NULL;
		}
	}
	return n;
}

struct json_object *kvd_meta_req(const char *table, const char *sk,
				 const char *ename, const char *expr,
				 const char *which)
{
	struct json_object *req = json_object_new_object();

	if (ddb_add(req, "TableName", json_object_new_string(table)) ||
	    ddb_add(req, "Key", kvd_meta_key(sk)) ||
	    (expr && (ddb_add(req, ename, json_object_new_string(expr)) ||
		      ddb_add(req, "ExpressionAttributeNames",
			      kvd_lease_names(which))))) {
		json_object_put(req);
		return NULL;
	}
	return req;
}

/* A request on the lease item of @table (kvd_meta_req). */
static struct json_object *kvd_lease_req(const char *table, const char *ename,
					 const char *expr, const char *which)
{
	return kvd_meta_req(table, KVD_LEASE_SK, ename, expr, which);
}

/* The lease item (consistent read) in *item, NULL if none. Errors: as
 * ddb_call. */
int kvd_lease_read(struct ddb *d, const char *table, struct json_object **item)
{
	struct json_object *req = kvd_lease_req(table, NULL, NULL, NULL);
	struct json_object *resp = NULL, *it;
	int rc =
	    req && !ddb_add(req, "ConsistentRead", json_object_new_boolean(1))
		? ddb_call(d, "GetItem", req, &resp)
		: -ENOMEM;

	json_object_put(req);
	*item = NULL;
	if (!rc && json_object_object_get_ex(resp, "Item", &it))
		*item = json_object_get(it);
	json_object_put(resp);
	return rc;
}

int kvd_lease_holder(struct ddb *d, const char *table, char *buf, size_t size)
{
	struct json_object *item;
	int rc = kvd_lease_read(d, table, &item);

	if (!rc && (!item || ddb_get_n(item, "e") < kvd_now_ms()))
		rc = -ENOENT;
	if (!rc)
		snprintf(buf, size, "%s",
			 ddb_get_s(item, "h") ? ddb_get_s(item, "h") : "?");
	json_object_put(item);
	return rc;
}

bool kvd_fenced(struct kvd *kv)
{
	bool f;

	pthread_mutex_lock(&kv->lock);
	f = kv->fenced;
	pthread_mutex_unlock(&kv->lock);
	return f;
}

bool kvd_sole_writer(const struct kv *kv_)
{
	struct kvd *kv = (struct kvd *)kv_;
	bool sole;

	pthread_mutex_lock(&kv->lock);
	sole = kv->leased && !kv->fenced;
	pthread_mutex_unlock(&kv->lock);
	return sole;
}

void kvd_fence(struct kvd *kv, const char *why)
{
	bool first;

	pthread_mutex_lock(&kv->lock);
	first = !kv->fenced;
	kv->fenced = true;
	pthread_mutex_unlock(&kv->lock);
	if (first)
		plog(LOG_ERR,
		     "dynamodb: table %s: this process is no longer its "
		     "writer (%s); its writes fail with EROFS from now on: "
		     "unmount, and mount again to write",
		     kv->table, why);
}

/* The keeper's renewal (kv_keeper_i.h): the expiry pushed, on condition
 * that the lease is still this open's. */
static int kvd_renew(void *ctx)
{
	struct kvd *kv = ctx;
	struct json_object *req =
	    kvd_lease_req(kv->table, "UpdateExpression", "SET #e = :e", "oe");
	struct json_object *vals = json_object_new_object(), *resp = NULL;
	int rc = 0;

	if (kvd_fenced(kv)) { /* a commit found it lost: keep it no more */
		json_object_put(req);
		json_object_put(vals);
		return 1;
	}
	if (!req ||
	    ddb_add(req, "ConditionExpression",
		    json_object_new_string("#o = :o")) ||
	    ddb_add(vals, ":e", ddb_n(kvd_now_ms() + 1000ull * kv->ttl)) ||
	    ddb_add(vals, ":o", ddb_s(kv->owner)))
		rc = -ENOMEM;
	if (!rc) {
		rc = ddb_add(req, "ExpressionAttributeValues", vals);
		vals = NULL;
	}
	if (!rc)
		rc = ddb_call(kv->d, "UpdateItem", req, &resp);
	json_object_put(vals);
	json_object_put(req);
	json_object_put(resp);
	if (rc == -ECANCELED) {
		kvd_fence(kv, "another writer took its lease");
		return 1;
	}
	if (rc)
		plog(LOG_WARNING,
		     "dynamodb: table %s: cannot renew its lease: %s (trying "
		     "again)",
		     kv->table, strerror(-rc));
	return rc;
}

int kvd_holder_init(struct kvd *kv)
{
	char host[256] = "?";

	gethostname(host, sizeof(host) - 1);
	snprintf(kv->owner, sizeof(kv->owner), "%016llx",
		 (unsigned long long)kv->client);
	if (asprintf(&kv->holder, "%s (pid %d on %s, open %s)",
		     program_invocation_short_name, (int)getpid(), host,
		     kv->owner) < 0) {
		kv->holder = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* The lease item this open puts: o, h, e from now, and g (the shared
 * writers' joins, kv_ddb_writer.c) as read, @gen (0: none). */
static struct json_object *kvd_lease_item(struct kvd *kv, uint64_t now,
					  uint64_t gen)
{
	struct json_object *item = json_object_new_object();

	if (ddb_add(item, "pk", ddb_s(KVD_META_PK)) ||
	    ddb_add(item, "sk", ddb_b(KVD_LEASE_SK, strlen(KVD_LEASE_SK))) ||
	    ddb_add(item, "o", ddb_s(kv->owner)) ||
	    ddb_add(item, "h", ddb_s(kv->holder)) ||
	    ddb_add(item, "e", ddb_n(now + 1000ull * kv->ttl)) ||
	    (gen && ddb_add(item, "g", ddb_n(gen)))) {
		json_object_put(item);
		return NULL;
	}
	return item;
}

/* Puts the lease item if no live writer holds it and g is still @gen.
 * Errors: -ECANCELED (it is held, or g changed), as ddb_call. */
static int kvd_lease_put(struct kvd *kv, uint64_t gen)
{
	uint64_t now = kvd_now_ms();
	struct json_object *req = kvd_lease_req(
	    kv->table, "ConditionExpression",
	    gen ? "(attribute_not_exists(#o) OR #e < :now) AND #g = :g"
		: "(attribute_not_exists(#o) OR #e < :now) AND "
		  "attribute_not_exists(#g)",
	    "oeg");
	struct json_object *vals = json_object_new_object(), *resp = NULL;
	int rc = req ? 0 : -ENOMEM;

	if (req) /* PutItem: the item says its key */
		json_object_object_del(req, "Key");
	if (!rc)
		rc = ddb_add(req, "Item", kvd_lease_item(kv, now, gen));
	if (!rc)
		rc = ddb_add(vals, ":now", ddb_n(now));
	if (!rc && gen)
		rc = ddb_add(vals, ":g", ddb_n(gen));
	if (!rc) {
		rc = ddb_add(req, "ExpressionAttributeValues", vals);
		vals = NULL;
	}
	if (!rc)
		rc = ddb_call(kv->d, "PutItem", req, &resp);
	json_object_put(vals);
	json_object_put(req);
	json_object_put(resp);
	return rc;
}

int kvd_lease_take(struct kvd *kv, uint64_t gen)
{
	struct json_object *cur = NULL;
	int rc = kvd_holder_init(kv);

	if (!rc)
		rc = kvd_lease_put(kv, gen);
	if (rc == -ECANCELED) {
		/* held, or a shared writer joined; or ours, from an earlier
		 * send whose answer was lost */
		rc = kvd_lease_read(kv->d, kv->table, &cur);
		if (!rc && !(cur && ddb_get_s(cur, "o") &&
			     !strcmp(ddb_get_s(cur, "o"), kv->owner))) {
			plog(LOG_DEBUG,
			     "dynamodb: table %s is open read-write by %s",
			     kv->table,
			     cur && ddb_get_s(cur, "h") ? ddb_get_s(cur, "h")
							: "shared writers");
			rc = -EBUSY;
		}
		json_object_put(cur);
	}
	if (rc)
		return rc;
	kv->leased = true;
	return kv_keeper_start(&kv->keeper, 1000L * kv->ttl / 3, kvd_renew, kv);
}

void kvd_lease_drop(struct kvd *kv)
{
	struct json_object *req, *vals, *resp = NULL;

	if (!kv->leased)
		return;
	kv_keeper_stop(kv->keeper);
	kv->keeper = NULL;
	if (kvd_fenced(kv))
		return;
	kv->leased = false;
	/* the owner's attributes go, g stays (it only grows: a sole open
	 * that read it before a shared writer joined never meets it again);
	 * out of memory or no answer: the lease expires by itself */
	req = kvd_lease_req(kv->table, "ConditionExpression", "#o = :o", "oeh");
	vals = json_object_new_object();
	if (req &&
	    !ddb_add(req, "UpdateExpression",
		     json_object_new_string("REMOVE #o, #e, #h")) &&
	    !ddb_add(vals, ":o", ddb_s(kv->owner)) &&
	    !ddb_add(req, "ExpressionAttributeValues", json_object_get(vals)))
		ddb_call(kv->d, "UpdateItem", req, &resp);
	json_object_put(vals);
	json_object_put(req);
	json_object_put(resp);
}

int kvd_lease_check(struct kvd *kv, struct json_object *items)
{
	struct json_object *cc = kvd_lease_req(kv->table, "ConditionExpression",
					       "#o = :o AND #e > :now", "oe");
	struct json_object *vals = json_object_new_object(),
			   *wrap = json_object_new_object();
	int rc = cc ? 0 : -ENOMEM;

	if (!rc)
		rc = ddb_add(vals, ":o", ddb_s(kv->owner));
	if (!rc)
		rc = ddb_add(vals, ":now", ddb_n(kvd_now_ms()));
	if (!rc) {
		rc = ddb_add(cc, "ExpressionAttributeValues", vals);
		vals = NULL;
	}
	if (!rc) {
		rc = ddb_add(wrap, "ConditionCheck", cc);
		cc = NULL;
	}
	if (!rc && json_object_array_add(items, wrap) == 0)
		wrap = NULL;
	else if (!rc)
		rc = -ENOMEM;
	json_object_put(vals);
	json_object_put(cc);
	json_object_put(wrap);
	return rc;
}
