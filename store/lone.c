/*
 * lone.c - a shared writer alone on its drive takes no holds, as the sole
 * writer takes none, until another writer joins.
 *
 * Holds (hold.c) exist for the other writers: so that another writer's
 * removal of a last name keeps an inode this one has open. With no other
 * writer there is nobody to tell, and a first open that commits its hold
 * is a commit the sole writer does not make (reading many files once costs
 * a commit each). So a shared writer that knows it is alone says so in the
 * drive's LONE key and keeps its opens in memory (t->lone_inos); a writer
 * that joins asks it to publish them, and waits until it has, before it
 * changes anything.
 *
 * LONE holds "-" (nobody is alone), a writer's id (kv_writer_id, 16 hex
 * digits: that writer is alone) or "?" and an id (a joiner asked that
 * writer to publish its holds). The protocol, every step a conditioned
 * change (TREE_TRACKED):
 *  - Going alone (tree_lone_try, the daemon's sweep every few seconds):
 *    only a writer whose watch of the drive stands (tree_watch, confirmed
 *    by the engine: it hears every ask from then on),
 *    reads LONE, then lists the live writers (kv_writers); if it is the
 *    only one and LONE names no other live writer, it puts its id in LONE,
 *    conditioned on LONE as read. Only then are its opens kept in memory.
 *  - Joining (lone_join, at the drive's open by a shared writer, before
 *    anything else): the joiner, registered already (its writer key),
 *    reads LONE; if it names a live writer alone, it puts "?" and that id
 *    and waits until LONE names that writer no more, or the writer's lease
 *    ends; it then puts "-", conditioned on LONE as read. A writer going
 *    alone listed the writers after its read of LONE, so if it missed the
 *    joiner, the joiner's put comes after that read and one of the two
 *    conditioned puts fails: never a lone writer and a joiner at work.
 *  - Publishing (tree_share, hold.c, on the reclaim thread once the watch
 *    hears LONE change, lone_heard): under lone_lock, so no open or close
 *    of this writer passes meanwhile, it holds every inode it has open,
 *    puts "-" in LONE (lone_unlone), and stops keeping opens.
 * The opens kept in memory, and the publishing, are hold.c's; this file
 * is the LONE key's protocol.
 * A writer whose watch restarts asks itself (it may have missed the ask
 * meanwhile).
 * A joiner waits LONE_WAIT_S at most for a writer that is alive and does
 * not publish (its daemon stuck): its open fails, -EBUSY, and says why.
 *
 * Costs: a join is a read of LONE and one or two commits, and, when a lone
 * writer must publish, the wait for its watch (ms) and its commits (one
 * per inode open there). Going alone is a read, a list and a
 * commit. Limits: the engines whose writers share (etcd, DynamoDB) only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "drive_i.h"
#include "keys_i.h"
#include "log.h"
#include "lone_i.h"

#define LONE_ID_HEX  KEY_ID_HEX
#define LONE_WAIT_S  30 /* a join's wait for a live lone writer to publish */
#define LONE_POLL_MS 50

/* What LONE says: nobody alone (0), @id alone (1), @id asked (2). */
enum lone_state { LONE_NONE, LONE_ALONE, LONE_ASKED };

/* Decodes LONE's value @v (@len bytes, NULL: missing) into *id. */
static enum lone_state lone_parse(const char *v, size_t len, uint64_t *id)
{
	char buf[LONE_ID_HEX + 1], *end;
	bool asked = len == LONE_ID_HEX + 1 && v[0] == '?';

	*id = 0;
	if (!v || (len != LONE_ID_HEX && !asked))
		return LONE_NONE;
	memcpy(buf, v + asked, LONE_ID_HEX);
	buf[LONE_ID_HEX] = '\0';
	*id = strtoull(buf, &end, 16);
	if (*end)
		return LONE_NONE;
	return asked ? LONE_ASKED : LONE_ALONE;
}

/* Reads LONE (tracked inside a conditioned change) into *state, *id. */
static int lone_read(struct tree *t, enum lone_state *state, uint64_t *id)
{
	struct sbuf k = {0};
	char *v = NULL;
	size_t len = 0;
	int rc;

	key_lone(&k, t->name);
	rc = kv_get(t->store->kv, k.buf, k.len, &v, &len);
	sbuf_release(&k);
	if (rc == -ENOENT)
		rc = 0;
	*state = rc ? LONE_NONE : lone_parse(v, len, id);
	free(v);
	return rc;
}

/* Commits LONE := @state with @id (conditioned on the tracked reads). */
static int lone_put(struct tree *t, enum lone_state state, uint64_t id)
{
	struct kv_batch *b = kv_batch_new(t->store->kv);
	struct sbuf k = {0};
	char v[LONE_ID_HEX + 1];
	size_t len = 1;
	int rc;

	v[0] = state == LONE_ASKED ? '?' : '-';
	if (state != LONE_NONE) {
		key_id_hex(v + (state == LONE_ASKED), id);
		len = LONE_ID_HEX + (state == LONE_ASKED);
	}
	key_lone(&k, t->name);
	kv_batch_put(b, k.buf, k.len, v, len);
	rc = tree_commit(t, b);
	kv_batch_free(b);
	sbuf_release(&k);
	return rc;
}

/* Whether writer @id holds the store now: *alive; and whether any writer
 * but this one does: *others (may be NULL). */
static int writers_alive(struct tree *t, uint64_t id, bool *alive, bool *others)
{
	uint64_t *ids = NULL, me = kv_writer_id(t->store->kv);
	size_t n = 0;
	int rc = kv_writers(t->store->kv, &ids, &n);

	*alive = false;
	if (others)
		*others = false;
	for (size_t i = 0; i < n && !rc; i++) {
		*alive |= ids[i] == id;
		if (others)
			*others |= ids[i] != me;
	}
	free(ids);
	return rc;
}

/* One step of a join: puts "?" and the lone writer's id (*wait its id) or
 * "-" (*wait 0: joined). */
static int join_once(struct tree *t, uint64_t *wait)
{
	enum lone_state state;
	uint64_t id;
	bool alive = false;
	int rc;

	*wait = 0;
	rc = lone_read(t, &state, &id);
	if (!rc && state != LONE_NONE && id != kv_writer_id(t->store->kv))
		rc = writers_alive(t, id, &alive, NULL);
	if (rc)
		return rc;
	if (alive) {
		*wait = id;
		if (state == LONE_ASKED)
			return 0; /* another joiner asked: wait with it */
		return lone_put(t, LONE_ASKED, id);
	}
	return lone_put(t, LONE_NONE, 0);
}

/* Waits until LONE names writer @id no more or @id stops, by @deadline
 * (CLOCK_MONOTONIC s): -EBUSY past it. */
static int join_wait(struct tree *t, uint64_t id, time_t deadline)
{
	for (;;) {
		struct timespec now;
		enum lone_state state;
		uint64_t at;
		bool alive;
		int rc = lone_read(t, &state, &at);

		if (!rc && state != LONE_NONE && at == id)
			rc = writers_alive(t, id, &alive, NULL);
		else
			return rc;
		if (rc || !alive)
			return rc;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec >= deadline) {
			plog(
			    LOG_ERR,
			    "drive %s: writer %016llx, alone on it so far, did "
			    "not publish its open files in %d s: not joining",
			    t->name, (unsigned long long)id, LONE_WAIT_S);
			return -EBUSY;
		}
		nanosleep(&(struct timespec){0, LONE_POLL_MS * 1000000L}, NULL);
	}
}

int lone_join(struct tree *t)
{
	struct timespec now;
	int rc;

	if (!tree_shared(t))
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	for (;;) {
		uint64_t wait;

		rc = TREE_TRACKED(t, join_once(t, &wait));
		if (rc || !wait)
			return rc;
		rc = join_wait(t, wait, now.tv_sec + LONE_WAIT_S);
		if (rc)
			return rc;
	}
}

/* tree_lone_try() once: 1 if this writer is alone now. */
static int try_once(struct tree *t)
{
	uint64_t id, me = kv_writer_id(t->store->kv);
	enum lone_state state;
	bool alive = false, others;
	int rc;

	rc = lone_read(t, &state, &id);
	if (!rc && state != LONE_NONE && id != me)
		rc = writers_alive(t, id, &alive, NULL);
	if (rc || alive)
		return rc; /* another is alone, or asked to publish */
	rc = writers_alive(t, me, &alive, &others);
	if (rc || others || !alive)
		return rc;
	if (state == LONE_ALONE && id == me)
		return 1; /* (a failed publish's: it is still so) */
	rc = lone_put(t, LONE_ALONE, me);
	return rc ? rc : 1;
}

int tree_lone_try(struct tree *t)
{
	int rc;

	if (!tree_shared(t))
		return 0;
	pthread_mutex_lock(&t->lone_lock);
	rc = !t->lone_watches ? -EAGAIN : t->lone ? 0 : 1;
	t->lone_asked = false; /* an ask from here on is heard */
	pthread_mutex_unlock(&t->lone_lock);
	if (rc < 1)
		return rc;
	rc = TREE_TRACKED(t, try_once(t));
	if (rc != 1)
		return rc;
	pthread_mutex_lock(&t->lone_lock);
	t->lone = true;
	pthread_mutex_unlock(&t->lone_lock);
	plog(LOG_NOTICE,
	     "drive %s: this writer is alone on it: its opens take no holds "
	     "until another writer joins",
	     t->name);
	return 0; /* asked meanwhile: the caller's tree_share() publishes */
}

void lone_watching(struct tree *t, bool on)
{
	pthread_mutex_lock(&t->lone_lock);
	t->lone_watches += on ? 1 : -1;
	pthread_mutex_unlock(&t->lone_lock);
}

bool lone_heard(struct tree *t, const char *v, size_t len)
{
	char me[LONE_ID_HEX];
	bool ask;

	/* a joiner asks a live lone writer by name; anything else (another
	 * writer's "-", its own put seen late) is no ask */
	key_id_hex(me, kv_writer_id(t->store->kv));
	ask = !v || (len == LONE_ID_HEX + 1 && v[0] == '?' &&
		     !memcmp(v + 1, me, LONE_ID_HEX));
	pthread_mutex_lock(&t->lone_lock);
	if (ask)
		t->lone_asked = true;
	ask = ask && t->lone;
	pthread_mutex_unlock(&t->lone_lock);
	return ask;
}

/* Puts "-" in LONE if it still names this writer. */
static int unlone_once(struct tree *t)
{
	enum lone_state state;
	uint64_t id;
	int rc = lone_read(t, &state, &id);

	if (rc || state == LONE_NONE || id != kv_writer_id(t->store->kv))
		return rc;
	return lone_put(t, LONE_NONE, 0);
}

int lone_unlone(struct tree *t)
{
	return TREE_TRACKED(t, unlone_once(t));
}
