/*
 * dircookie.c - stable folder listing offsets: the cookie of a name, and a
 * bounded table from (folder, cookie) back to the name (see dircookie.h).
 *
 * The table is a chained hash of DIRCOOKIE_CAP buckets plus a ring of its
 * entries in insertion order: when the ring is full the oldest entry is
 * unlinked from its chain and freed. One mutex guards both; it is held only
 * for the table work, never across a store call.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "dircookie.h"
#include "siphash.h"

struct dcent {
	struct dcent *next; /* hash chain */
	uint64_t dir;
	uint64_t cookie;
	size_t len;
	char name[];
};

struct dircookies {
	uint8_t key[SIPHASH_KEY_LEN];
	pthread_mutex_t lock;
	struct dcent **buckets; /* DIRCOOKIE_CAP of them */
	struct dcent **ring;	/* DIRCOOKIE_CAP slots, oldest at head */
	size_t head, count;
};

int dircookies_new(struct dircookies **out)
{
	struct dircookies *dc = calloc(1, sizeof(*dc));
	size_t got = 0;
	ssize_t n;

	*out = NULL;
	if (!dc)
		return -ENOMEM;
	dc->buckets = calloc(DIRCOOKIE_CAP, sizeof(*dc->buckets));
	dc->ring = calloc(DIRCOOKIE_CAP, sizeof(*dc->ring));
	if (!dc->buckets || !dc->ring) {
		free(dc->buckets);
		free(dc->ring);
		free(dc);
		return -ENOMEM;
	}
	/* a key from the kernel's pool; a fixed key only weakens collisions */
	while (got < sizeof(dc->key)) {
		n = getrandom(dc->key + got, sizeof(dc->key) - got, 0);
		if (n <= 0 && errno != EINTR)
			break;
		if (n > 0)
			got += (size_t)n;
	}
	pthread_mutex_init(&dc->lock, NULL);
	*out = dc;
	return 0;
}

void dircookies_free(struct dircookies *dc)
{
	size_t i;

	if (!dc)
		return;
	for (i = 0; i < dc->count; i++)
		free(dc->ring[(dc->head + i) % DIRCOOKIE_CAP]);
	free(dc->ring);
	free(dc->buckets);
	pthread_mutex_destroy(&dc->lock);
	free(dc);
}

uint64_t dircookie_of(const struct dircookies *dc, const char *name, size_t len)
{
	return 3 + (siphash24(dc->key, name, len) >> 2);
}

static struct dcent **bucket(struct dircookies *dc, uint64_t dir,
			     uint64_t cookie)
{
	uint64_t h = (cookie ^ (dir * 0x9e3779b97f4a7c15ULL)) >> 7;

	return &dc->buckets[h % DIRCOOKIE_CAP];
}

/* The entry for (@dir, @cookie), or NULL. Under dc->lock. */
static struct dcent *find(struct dircookies *dc, uint64_t dir, uint64_t cookie)
{
	struct dcent *e;

	for (e = *bucket(dc, dir, cookie); e; e = e->next)
		if (e->dir == dir && e->cookie == cookie)
			return e;
	return NULL;
}

/* Unlinks and frees the oldest entry. Under dc->lock, count > 0. */
static void forget_oldest(struct dircookies *dc)
{
	struct dcent *old = dc->ring[dc->head], **pp;

	for (pp = bucket(dc, old->dir, old->cookie); *pp != old;
	     pp = &(*pp)->next)
		;
	*pp = old->next;
	free(old);
	dc->ring[dc->head] = NULL;
	dc->head = (dc->head + 1) % DIRCOOKIE_CAP;
	dc->count--;
}

void dircookies_put(struct dircookies *dc, uint64_t dir, uint64_t cookie,
		    const char *name, size_t len)
{
	struct dcent *e, **b;

	pthread_mutex_lock(&dc->lock);
	/*
	 * Already there, or (2^-62 odds) another name of the folder with the
	 * same cookie, which keeps it: the scan resumes the other.
	 */
	if (find(dc, dir, cookie))
		goto out;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		goto out;
	e->dir = dir;
	e->cookie = cookie;
	e->len = len;
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	if (dc->count == DIRCOOKIE_CAP)
		forget_oldest(dc);
	b = bucket(dc, dir, cookie);
	e->next = *b;
	*b = e;
	dc->ring[(dc->head + dc->count) % DIRCOOKIE_CAP] = e;
	dc->count++;
out:
	pthread_mutex_unlock(&dc->lock);
}

char *dircookies_get(struct dircookies *dc, uint64_t dir, uint64_t cookie)
{
	struct dcent *e;
	char *name = NULL;

	pthread_mutex_lock(&dc->lock);
	e = find(dc, dir, cookie);
	if (e)
		name = strdup(e->name);
	pthread_mutex_unlock(&dc->lock);
	return name;
}
