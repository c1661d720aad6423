/*
 * kv_etcd_json.c - the etcd backend's keys, and the pieces of the JSON
 * requests it sends and answers it reads (see kv_etcd.c).
 *
 * The gateway writes bytes as base64 and int64 as strings (etcd.c decodes
 * both). A store key becomes the etcd key NAME/k/<key>; the backend's own
 * keys (owner, commit slots) live under NAME/m/. Nothing here does I/O
 * but kve_send_txn(), which sends the txn the others built. Out of memory:
 * each builder says so (NULL or -ENOMEM), and its caller sends nothing (a
 * request missing a piece, a compare say, must never go).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kv_etcd_i.h"

/* The etcd key of store key @key: a malloc'd prefix + key; NULL when out of
 * memory. */
char *kve_key(const struct kve *kv, const char *key, size_t klen, size_t *len)
{
	char *k = malloc(kv->plen + klen + 1);

	if (!k)
		return NULL;
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

/* Adds the base64 of @s to @o as @name. Errors: -ENOMEM (@o NULL, or out of
 * memory). */
int kve_add_b64(struct json_object *o, const char *name, const char *s,
		size_t len)
{
	char *b = o && s ? etcd_b64(s, len) : NULL;
	struct json_object *v = b ? json_object_new_string(b) : NULL;

	free(b);
	if (!v || json_object_object_add(o, name, v)) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
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

/* Adds *@v to @req as @name; then *@v is NULL (@req owns it). Errors:
 * -ENOMEM (*@v NULL, or out of memory: *@v stays the caller's). */
int kve_attach(struct json_object *req, const char *name,
	       struct json_object **v)
{
	if (!*v || json_object_object_add(req, name, *v))
		return -ENOMEM;
	*v = NULL;
	return 0;
}

/* Appends @o, an object with @name: @v, to @arr; takes @o and @v, also on
 * an error. Errors: -ENOMEM. */
int kve_add_op(struct json_object *arr, const char *name, struct json_object *v)
{
	struct json_object *o = json_object_new_object();

	if (!o || !v || !arr || json_object_object_add(o, name, v)) {
		json_object_put(o);
		json_object_put(v);
		return -ENOMEM;
	}
	if (json_object_array_add(arr, o)) {
		json_object_put(o);
		return -ENOMEM;
	}
	return 0;
}

/* Appends to @arr a request_range of key @k (for a failure branch).
 * Errors: -ENOMEM. */
int kve_add_range(struct json_object *arr, const char *k, size_t klen)
{
	struct json_object *r = json_object_new_object();

	if (kve_add_b64(r, "key", k, klen)) {
		json_object_put(r);
		return -ENOMEM;
	}
	return kve_add_op(arr, "request_range", r);
}

/* Appends to @arr a compare of @target ("MOD", ...) of key @k with @rev.
 * Errors: -ENOMEM. */
int kve_add_cmp(struct json_object *arr, const char *target, const char *k,
		size_t klen, long long rev)
{
	struct json_object *c = json_object_new_object();
	struct json_object *t = json_object_new_string(target);
	struct json_object *r = json_object_new_int64(rev);

	if (!c || !t || json_object_object_add(c, "target", t)) {
		json_object_put(t);
		goto fail;
	}
	if (kve_add_b64(c, "key", k, klen) || !r ||
	    json_object_object_add(
		c, target[0] == 'M' ? "mod_revision" : "create_revision", r))
		goto fail;
	if (json_object_array_add(arr, c)) {
		json_object_put(c);
		return -ENOMEM;
	}
	return 0;
fail:
	json_object_put(r);
	json_object_put(c);
	return -ENOMEM;
}

/* Appends to @arr a compare that no key lies in [@lo, @hi): every key of
 * the range has version 0, true of none. Errors: -ENOMEM. */
int kve_add_cmp_none(struct json_object *arr, const char *lo, size_t lolen,
		     const char *hi, size_t hilen)
{
	struct json_object *c = json_object_new_object();
	struct json_object *t = json_object_new_string("VERSION");

	if (!c || !t || json_object_object_add(c, "target", t)) {
		json_object_put(t);
		goto fail;
	}
	if (kve_add_b64(c, "key", lo, lolen) ||
	    kve_add_b64(c, "range_end", hi, hilen) ||
	    etcd_add_int(c, "version", 0))
		goto fail;
	if (json_object_array_add(arr, c))
		goto fail;
	return 0;
fail:
	json_object_put(c);
	return -ENOMEM;
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

int kve_send_txn(struct kve *kv, int built, struct json_object *cmps,
		 struct json_object *succ, struct json_object *fail,
		 struct json_object **resp)
{
	struct json_object *req = json_object_new_object();
	int rc = built;

	if (!rc && !req)
		rc = -ENOMEM;
	if (!rc)
		rc = kve_attach(req, "compare", &cmps);
	if (!rc)
		rc = kve_attach(req, "success", &succ);
	if (!rc)
		rc = kve_attach(req, "failure", &fail);
	if (!rc)
		rc = etcd_call(kv->e, "/v3/kv/txn", req, resp);
	json_object_put(req);
	json_object_put(cmps);
	json_object_put(succ);
	json_object_put(fail);
	return rc;
}
