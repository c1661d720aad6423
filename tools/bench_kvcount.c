/*
 * bench_kvcount.c - counts the calls store/ makes into its kv seam, so that
 * `pathfs-bench subtree` can say how many store round trips each way of
 * reading a branch costs (what matters once the kv engine is remote).
 *
 * The bench is linked with -Wl,--wrap=kv_get,... (tools/meson.build): every
 * call to kv_get() from store/ lands in __wrap_kv_get(), which counts and
 * forwards to the real one. store/ itself is unchanged; calls that the kv backends make
 * to its own functions are not counted (none are round trips). This file
 * never looks inside a key or value: it only counts.
 *
 * Limits: counters are plain relaxed atomics; the bench reads them from one
 * thread between workloads.
 */
#include <stddef.h>
#include <stdint.h>

#include "bench.h"

struct kv;
struct kv_iter;

/* The wrapped functions, as kv_i.h declares them (redeclared here because
 * tools/ does not include store internals). */
int __real_kv_get(struct kv *kv, const char *key, size_t klen, char **val,
		  size_t *vlen);
int __real_kv_iter_open(struct kv_iter **out, struct kv *kv, const char *lo,
			size_t lolen, const char *hi, size_t hilen);
void __real_kv_iter_seek(struct kv_iter *it, const char *key, size_t klen);
void __real_kv_iter_next(struct kv_iter *it);
int __wrap_kv_get(struct kv *kv, const char *key, size_t klen, char **val,
		  size_t *vlen);
int __wrap_kv_iter_open(struct kv_iter **out, struct kv *kv, const char *lo,
			size_t lolen, const char *hi, size_t hilen);
void __wrap_kv_iter_seek(struct kv_iter *it, const char *key, size_t klen);
void __wrap_kv_iter_next(struct kv_iter *it);

static struct kv_counts counts;

#define BUMP(x) __atomic_add_fetch(&(x), 1, __ATOMIC_RELAXED)

int __wrap_kv_get(struct kv *kv, const char *key, size_t klen, char **val,
		  size_t *vlen)
{
	BUMP(counts.gets);
	return __real_kv_get(kv, key, klen, val, vlen);
}

int __wrap_kv_iter_open(struct kv_iter **out, struct kv *kv, const char *lo,
			size_t lolen, const char *hi, size_t hilen)
{
	BUMP(counts.iters);
	return __real_kv_iter_open(out, kv, lo, lolen, hi, hilen);
}

void __wrap_kv_iter_seek(struct kv_iter *it, const char *key, size_t klen)
{
	BUMP(counts.seeks);
	__real_kv_iter_seek(it, key, klen);
}

void __wrap_kv_iter_next(struct kv_iter *it)
{
	BUMP(counts.nexts);
	__real_kv_iter_next(it);
}

void kvc_reset(void)
{
	__atomic_store_n(&counts.gets, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&counts.iters, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&counts.seeks, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&counts.nexts, 0, __ATOMIC_RELAXED);
}

void kvc_get(struct kv_counts *c)
{
	c->gets = __atomic_load_n(&counts.gets, __ATOMIC_RELAXED);
	c->iters = __atomic_load_n(&counts.iters, __ATOMIC_RELAXED);
	c->seeks = __atomic_load_n(&counts.seeks, __ATOMIC_RELAXED);
	c->nexts = __atomic_load_n(&counts.nexts, __ATOMIC_RELAXED);
}
