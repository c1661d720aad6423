/*
 * kv_etcd_i.h - what the files of the etcd kv backend share: the store
 * handle, its iterators and batches, and the calls one file makes of
 * another. kv_etcd.c's overview says what the backend does and which file
 * does what.
 *
 * Internal to the kv_etcd*.c files.
 */
#ifndef PATHFS_KV_ETCD_I_H
#define PATHFS_KV_ETCD_I_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etcd_i.h"
#include "kv_backend_i.h"

#define KVE_SLOTS      8
#define KVE_PAGE_MIN   256
#define KVE_PAGE_MAX   4096
#define KVE_PAGE_BYTES (4u << 20)
#define KVE_NAME_MAX   64
#define KVE_TTL	       5 /* the owner's lease, seconds (?lease-ttl=N) */

struct kve_slot {
	bool busy;
	long long rev; /* mod revision its last commit left; -1: unknown */
};

struct kve {
	struct kv base;
	struct etcd *e;
	char *pfx; /* NAME/k/ */
	size_t plen;
	char *meta; /* NAME/m/ */
	size_t mlen;
	uint64_t client; /* this open's id, in its slot keys and txn ids */
	size_t txn_ops;	 /* the cluster's --max-txn-ops */
	uint64_t quota;	 /* its --quota-backend-bytes */
	pthread_mutex_t lock;
	pthread_cond_t slot_free;
	struct kve_slot slots[KVE_SLOTS]; /* protected by lock */
	uint64_t seq;			  /* protected by lock */
	/* ownership (read-write opens): see kv_etcd_owner.c */
	bool shared; /* kv_options.shared: one writer of several */
	char *owner; /* NAME/m/owner, shared: NAME/m/writer/<client> */
	size_t olen;
	char *holder;	     /* the value this open put there */
	long long lease;     /* its lease; 0: none */
	long long owner_rev; /* the owner key's create revision; 0: none */
	int ttl;	     /* the lease's TTL, seconds */
	bool fenced;	     /* protected by lock: lost the owner key */
	bool stop;	     /* protected by lock: the keeper must end */
	pthread_cond_t wake; /* the keeper waits on it */
	pthread_t keeper;
	bool keeper_running;
};

enum { KVE_PUT, KVE_DEL, KVE_RANGE };

struct kve_op {
	int type;
	char *k, *v; /* v: value (put) or range end (delete-range) */
	size_t klen, vlen;
	bool dead;   /* normalised away */
	char **cuts; /* delete-range: keys of later puts inside it */
	size_t *cutlens;
	size_t ncuts;
};

struct kve_batch {
	struct kv_batch base;
	struct kve_op *ops;
	size_t n, cap;
	bool oom; /* an operation was lost to ENOMEM: commit refuses it */
};

struct kve_ent {
	const char *k, *v; /* k past the prefix */
	size_t klen, vlen;
};

struct kve_iter {
	struct kv_iter base;
	struct kve *kv;
	char *lo, *hi; /* full etcd keys */
	size_t lolen, hilen;
	long long rev; /* pinned by the first page; 0 before it */
	struct json_object *page;
	struct kve_ent *ents;
	size_t n, pos;
	bool more;
	size_t limit;
	int status;
	bool keys_only; /* Range keys_only: no values (KV_ITER_KEYS_ONLY) */
};

extern const struct kv_ops kve_ops;

/* The store's NAME, for log lines: kv->meta without its "/m/". */
#define KVE_NAME(kv) (int)((kv)->mlen - 3), (kv)->meta

/* kv_etcd_json.c: keys, and the pieces of requests and answers */
char *kve_key(const struct kve *kv, const char *key, size_t klen, size_t *len);
int kve_cmp(const char *a, size_t alen, const char *b, size_t blen);
int kve_add_b64(struct json_object *o, const char *name, const char *s,
		size_t len);
char *kve_get_b64(struct json_object *o, const char *name, size_t *len);
int kve_attach(struct json_object *req, const char *name,
	       struct json_object **v);
int kve_add_op(struct json_object *arr, const char *name,
	       struct json_object *v);
int kve_add_range(struct json_object *arr, const char *k, size_t klen);
int kve_add_cmp(struct json_object *arr, const char *target, const char *k,
		size_t klen, long long rev);
int kve_add_cmp_none(struct json_object *arr, const char *lo, size_t lolen,
		     const char *hi, size_t hilen);
struct json_object *kve_failure_kv(struct json_object *resp, size_t i);
bool kve_succeeded(struct json_object *resp, long long *rev);
/*
 * Sends the txn of compares @cmps and branches @succ and @fail (arrays,
 * taken: put also on an error) to /v3/kv/txn; *resp gets the answer (the
 * caller puts it). @built is what building them returned: unless 0, nothing
 * is sent and @built is returned. Errors: @built, -ENOMEM, as etcd_call.
 */
int kve_send_txn(struct kve *kv, int built, struct json_object *cmps,
		 struct json_object *succ, struct json_object *fail,
		 struct json_object **resp);

/* kv_etcd_owner.c: the owner key (or a shared writer's key) and its lease
 * keeper */
int kve_own(struct kve *kv);
/* kv_writer_id(), kv_writers() (kv_i.h) */
uint64_t kve_writer_id(const struct kv *kv);
int kve_writers(struct kv *kv, uint64_t **ids, size_t *n);
void kve_revoke(struct kve *kv);
void kve_fence(struct kve *kv, const char *by);
bool kve_is_fenced(struct kve *kv);

/* kv_etcd_iter.c: reads */
int kve_get(struct kv *kv, const char *key, size_t klen, long long *rev,
	    char **val, size_t *vlen, uint64_t *ver);
int kve_iter_open(struct kv_iter **out, struct kv *kv, const char *lo,
		  size_t lolen, const char *hi, size_t hilen, unsigned flags,
		  long long *rev);
void kve_iter_seek(struct kv_iter *it, const char *key, size_t klen);
bool kve_iter_valid(struct kv_iter *it);
const char *kve_iter_key(struct kv_iter *it, size_t *len);
const char *kve_iter_value(struct kv_iter *it, size_t *len);
void kve_iter_next(struct kv_iter *it);
int kve_iter_status(struct kv_iter *it);
void kve_iter_free(struct kv_iter *it);

/* kv_etcd_batch.c: batches, normalised into the operations of one txn */
struct kv_batch *kve_batch_new(struct kv *kv);
void kve_batch_put(struct kv_batch *b, const char *key, size_t klen,
		   const char *val, size_t vlen);
void kve_batch_delete(struct kv_batch *b, const char *key, size_t klen);
void kve_batch_delete_range(struct kv_batch *b, const char *lo, size_t lolen,
			    const char *hi, size_t hilen);
void kve_batch_clear(struct kv_batch *b);
void kve_batch_free(struct kv_batch *b);
size_t kve_normalise(struct kve_batch *b);
int kve_txn_ops(struct kve *kv, struct kve_batch *b, struct json_object *arr);

/* kv_etcd_commit.c: commits, exactly once */
int kve_batch_commit(struct kv *kv, struct kv_batch *b, bool sync,
		     long long *rev);

#endif
