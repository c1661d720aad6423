/*
 * kv_keeper_i.h - a thread that renews a writer's lease every period until
 * stopped or until the lease is lost: the keeper of the DynamoDB backend's
 * lease item (kv_ddb_lease.c) and shared writer items (kv_ddb_writer.c).
 * What renewing means is the caller's.
 *
 * Internal to store/kv/.
 */
#ifndef PATHFS_KV_KEEPER_I_H
#define PATHFS_KV_KEEPER_I_H

struct kv_keeper;

/*
 * Starts a thread that calls @renew(@ctx) every @period_ms: 0 renewed, 1
 * lost (the thread ends: the caller fenced itself), a negative errno a
 * failure to try again at the next period (the caller logs it). Errors:
 * -ENOMEM, -EAGAIN (no thread).
 */
int kv_keeper_start(struct kv_keeper **out, long period_ms,
		    int (*renew)(void *ctx), void *ctx);
/* Stops the thread and waits for it (a renewal under way ends first);
 * NULL is fine. */
void kv_keeper_stop(struct kv_keeper *k);

#endif
