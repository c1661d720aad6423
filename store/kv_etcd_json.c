/*
 * kv_etcd_json.c - the etcd backend's keys, and the pieces of the JSON
 * requests it sends and answers it reads (see kv_etcd.c).
 *
 * The gateway writes bytes as base64 and int64 as strings (etcd.c decodes
 * both). A store key becomes the etcd key NAME/k/<key>; the backend's own
 * keys (owner, commit slots) live under NAME/m/. Nothing here does I/O; out
 * of memory aborts, as everywhere in the backend.
 */
#include <stdlib.h>
#include <string.h>

#include "kv_etcd_i.h"

/* The etcd key of store key @key: a malloc'd prefix + key. */
char *kve_key(const struct kve *kv, const char *key, size_t klen, size_t *len)
{
	char *k = malloc(kv->plen + klen + 1);

	if (!k)
		abort();
	memcpy(k, kv->pfx, kv->plen);
	memcpy(k + kv->plen, key, klen);
	k[kv->plen + klen] = '\0';
	*len = kv->plen + klen;
	return k;
}

int kve_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

/* Adds the base64 of @s to @o as @name. */
void kve_add_b64(struct json_object *o, const char *name, const char *s,
		 size_t len)
{
	char *b = etcd_b64(s, len);

	if (!b)
		abort();
	json_object_object_add(o, name, json_object_new_string(b));
	free(b);
}

void kve_add_int(struct json_object *o, const char *name, long long v)
{
	json_object_object_add(o, name, json_object_new_int64(v));
}

/* The bytes of base64 field @name of @o, malloc'd; empty if absent. */
char *kve_get_b64(struct json_object *o, const char *name, size_t *len)
{
	struct json_object *f;
	char *s;

	if (!json_object_object_get_ex(o, name, &f)) {
		s = calloc(1, 1);
		*len = 0;
		return s;
	}
	return etcd_unb64(json_object_get_string(f), len);
}

/* Appends to @arr a request_range of key @k (for a failure branch). */
void kve_add_range(struct json_object *arr, const char *k, size_t klen)
{
	struct json_object *o = json_object_new_object();
	struct json_object *r = json_object_new_object();

	kve_add_b64(r, "key", k, klen);
	json_object_object_add(o, "request_range", r);
	json_object_array_add(arr, o);
}

/* Appends to @arr a compare of @target ("MOD", ...) of key @k with @rev. */
void kve_add_cmp(struct json_object *arr, const char *target, const char *k,
		 size_t klen, long long rev)
{
	struct json_object *c = json_object_new_object();

	json_object_object_add(c, "target", json_object_new_string(target));
	kve_add_b64(c, "key", k, klen);
	kve_add_int(c, target[0] == 'M' ? "mod_revision" : "create_revision",
		    rev);
	json_object_array_add(arr, c);
}

/*
 * The kv of the response to request_range number @i of a failed txn's
 * failure branch, or NULL if that key is missing. Borrowed from @resp.
 */
struct json_object *kve_failure_kv(struct json_object *resp, size_t i)
{
	struct json_object *rs, *rr, *kvs;

	if (json_object_object_get_ex(resp, "responses", &rs) &&
	    json_object_array_length(rs) > i &&
	    json_object_object_get_ex(json_object_array_get_idx(rs, i),
				      "response_range", &rr) &&
	    json_object_object_get_ex(rr, "kvs", &kvs) &&
	    json_object_array_length(kvs) > 0)
		return json_object_array_get_idx(kvs, 0);
	return NULL;
}

/*
 * Whether a txn's compare held (its success branch ran); if so, @rev gets
 * the revision it made (left as it is when the answer carries none).
 */
bool kve_succeeded(struct json_object *resp, long long *rev)
{
	struct json_object *ok, *h;

	if (!json_object_object_get_ex(resp, "succeeded", &ok) ||
	    !json_object_get_boolean(ok))
		return false;
	if (json_object_object_get_ex(resp, "header", &h))
		*rev = etcd_int(h, "revision");
	return true;
}
