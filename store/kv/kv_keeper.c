/*
 * kv_keeper.c - the lease keeper thread (see kv_keeper_i.h): sleeps a
 * period on a condition variable (so that a stop wakes it at once), renews,
 * and ends when told to or when the renewal says the lease is lost.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "kv_keeper_i.h"

struct kv_keeper {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop; /* protected by lock */
	long period_ms;
	int (*renew)(void *ctx);
	void *ctx;
	pthread_t th;
};

static void *kv_keeper_main(void *arg)
{
	struct kv_keeper *k = arg;

	pthread_mutex_lock(&k->lock);
	while (!k->stop) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += k->period_ms / 1000;
		ts.tv_nsec += (k->period_ms % 1000) * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&k->wake, &k->lock, &ts);
		if (k->stop)
			break;
		pthread_mutex_unlock(&k->lock);
		if (k->renew(k->ctx) == 1) /* lost: nothing left to keep */
			return NULL;
		pthread_mutex_lock(&k->lock);
	}
	pthread_mutex_unlock(&k->lock);
	return NULL;
}

int kv_keeper_start(struct kv_keeper **out, long period_ms,
		    int (*renew)(void *ctx), void *ctx)
{
	struct kv_keeper *k = calloc(1, sizeof(*k));
	pthread_condattr_t ca;

	*out = NULL;
	if (!k)
		return -ENOMEM;
	pthread_mutex_init(&k->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->wake, &ca);
	pthread_condattr_destroy(&ca);
	k->period_ms = period_ms > 0 ? period_ms : 1;
	k->renew = renew;
	k->ctx = ctx;
	if (pthread_create(&k->th, NULL, kv_keeper_main, k)) {
		pthread_cond_destroy(&k->wake);
		pthread_mutex_destroy(&k->lock);
		free(k);
		return -EAGAIN;
	}
	*out = k;
	return 0;
}

void kv_keeper_stop(struct kv_keeper *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	k->stop = true;
	pthread_cond_signal(&k->wake);
	pthread_mutex_unlock(&k->lock);
	pthread_join(k->th, NULL);
	pthread_cond_destroy(&k->wake);
	pthread_mutex_destroy(&k->lock);
	free(k);
}
