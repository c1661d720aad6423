/*
 * kv_ddb_watch.c - the reader of a DynamoDB table's stream (DynamoDB
 * Streams, new and old images, which the first open turned on) under the
 * backend's watches of a key range (kv_watch(), kv_i.h; kv_ddb.c's
 * kvd_watch): the followers' way of learning what the writer committed.
 * It calls ddb.c only, so that kv_ddb.c, which starts it, is not called
 * back (no call circle).
 *
 * One thread per watch polls the stream with GetRecords, one request per
 * open shard every KVD_POLL_MS (250 ms: 4 requests a second per shard per
 * watch, ~345,600 a day, whether anything changed or not; a full page of
 * KVD_PAGE records is followed at once by the next), and hands out each
 * record to kv_ddb.c's callback, which makes it the change of a store key
 * in the watched range (pk and sk joined back, kvd_store_key): INSERT and
 * MODIFY with the new image's value, REMOVE as a delete; the backend's own
 * items (the lease, the registry of drives) are no store keys, skipped. A change reaches
 * the watcher within KVD_POLL_MS plus the stream's own delay (DynamoDB
 * says records appear in near real time; DynamoDB Local within a poll)
 * plus a round trip.
 *
 * Shards: the stream is a set of shards, each a run of records with a
 * parent (a shard splits or is closed and replaced every few hours, and
 * a closed one's successors have it as their parent). The watch lists
 * them (DescribeStream, paged) when it starts, when a shard it read came
 * to its end (GetRecords without NextShardIterator), while it has no open
 * shard, and every KVD_LIST_S anyway. A shard open when the watch starts
 * is read from LATEST; a shard the watch saw closed then is not read (its
 * records are older than the watch); a shard that appears later is read
 * from TRIM_HORIZON (every record it has is newer than the watch), but
 * only once its parent, if the watch reads that, came to its end: a key's
 * records are handed out in order across a split, as the Streams docs ask.
 *
 * Revisions: DynamoDB has none (no global order of commits, nor a number a
 * read could name). A watch numbers the pages it reads instead: every
 * change of one GetRecords answer gets the same rev, 1, 2, ... for the
 * watch's pages, one after the other. So a rev says "read together", not
 * "committed together": every change of a page was committed before the
 * page was read, so something looked up on meeting a page's first change
 * is as new as every change of the page (what fs/watch.c's folder cache
 * needs of a rev); a batch's changes may straddle two pages, and one page
 * may hold several commits. A rev means nothing to another watch: a
 * start revision (@rev) is not kept, the watch starts from now and says so
 * with its reset(), as a watch does when it starts, after which the caller
 * reads again. kv.c's quiet commits (kv_quiet) are matched by revision and
 * this engine's commits make none: a watch of an open that also writes
 * (a -o shared writer's: kv_ddb_writer.c) hands its own quiet commits
 * back, which costs its caches a read again, no more.
 *
 * Nothing missed between a follower's reads and its watch: reset() is
 * called once the iterators of every open shard are taken, so whatever the
 * caller reads after its reset() is at least as new as the iterators'
 * positions, and every commit after those positions is handed out (a
 * commit before them whose record came late is handed out too: a harmless
 * repeat of what the read saw).
 *
 * Starting over: a shard iterator unused for 15 minutes expires (the
 * thread was stopped that long): the shard is read again after the last
 * record handed out (AFTER_SEQUENCE_NUMBER), or, when none was, the watch
 * starts over. It starts over also when records were trimmed (over 24 h
 * old), when the stream or a shard is gone (ResourceNotFound: streams
 * turned off and on again), when a record does not decode, or when a
 * request fails: after a pause (20 ms growing to 1 s) it takes the latest
 * stream's iterators again and calls reset() (the caller drops what it
 * derived: a gap). Throttling (5 GetRecords a second per shard, shared by
 * every reader of the table; the Streams docs advise two readers a shard
 * at most) is retried inside ddb.c with backoff, a delay, not a gap.
 *
 * Limits: kvd_follow_stop() waits for the request in flight, which ddb.c
 * retries for up to DDB_RETRY_S when DynamoDB does not answer. Order
 * across shards (a drive's items spread over several partitions) is per
 * key only. Each watch reads the whole table's stream and filters: the
 * changes of the other drives of a table cost their records' bytes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kv_ddb_i.h" /* of it, the stream reader's part: ddb.c only */
#include "log.h"

#define KVD_POLL_MS 250	 /* between two reads of a shard */
#define KVD_PAGE    1000 /* records a GetRecords asks for (its most) */
#define KVD_LIST_S  60	 /* the shards listed again at least this often */

struct kvd_shard {
	char *id;
	char *parent; /* NULL: none */
	char *iter;   /* the next read's; NULL: not read (yet, or ended) */
	char *last;   /* the sequence number of the last record read */
	bool ended;   /* read to its end, or closed before the watch */
	bool listed;  /* in the last listing */
};

struct kvd_follow {
	struct ddb *d;
	char *table;
	kvd_record_fn record;
	void (*reset)(void *ctx);
	void *ctx;
	pthread_t thread;
	atomic_bool stop;
	/* on the watch thread only */
	char *arn; /* the stream being read; NULL: start over */
	struct kvd_shard *shards;
	size_t n, cap;
	long long rev; /* the last page's (see Revisions) */
	time_t listed; /* CLOCK_MONOTONIC s of the last listing */
};

static time_t watch_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* Sleeps @ms milliseconds, or less if the watch is stopped meanwhile. */
static void watch_pause(struct kvd_follow *w, int ms)
{
	for (int t = 0; t < ms && !atomic_load(&w->stop); t += 10)
		nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
}

static void shard_release(struct kvd_shard *s)
{
	free(s->id);
	free(s->parent);
	free(s->iter);
	free(s->last);
}

/* Forgets the stream and its shards: the next round starts over. */
static void watch_forget(struct kvd_follow *w)
{
	for (size_t i = 0; i < w->n; i++)
		shard_release(&w->shards[i]);
	w->n = 0;
	free(w->arn);
	w->arn = NULL;
}

static struct kvd_shard *watch_shard(struct kvd_follow *w, const char *id)
{
	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(w->shards[i].id, id))
			return &w->shards[i];
	return NULL;
}

/* A string member @name of @o, or NULL. */
static const char *json_str(struct json_object *o, const char *name)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, name, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/*
 * Takes a new iterator of shard @s of type @type ("LATEST", "TRIM_HORIZON",
 * "AFTER_SEQUENCE_NUMBER" after s->last). Errors: as ddb_streams_call,
 * -EIO (an answer without one), -ENOMEM.
 */
static int shard_iterate(struct kvd_follow *w, struct kvd_shard *s,
			 const char *type)
{
	struct json_object *req = json_object_new_object(), *resp = NULL;
	const char *it;
	int rc;

	rc = ddb_add(req, "StreamArn", json_object_new_string(w->arn));
	if (!rc)
		rc = ddb_add(req, "ShardId", json_object_new_string(s->id));
	if (!rc)
		rc = ddb_add(req, "ShardIteratorType",
			     json_object_new_string(type));
	if (!rc && s->last && !strcmp(type, "AFTER_SEQUENCE_NUMBER"))
		rc = ddb_add(req, "SequenceNumber",
			     json_object_new_string(s->last));
	if (!rc)
		rc = ddb_streams_call(w->d, "GetShardIterator", req, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	it = json_str(resp, "ShardIterator");
	free(s->iter);
	s->iter = it ? strdup(it) : NULL;
	rc = !it ? -EIO : s->iter ? 0 : -ENOMEM;
	json_object_put(resp);
	return rc;
}

/* Adds shard @sh (a DescribeStream entry) if new: @first, the listing the
 * watch starts with. Errors: -EIO (no id), -ENOMEM. */
static int watch_add_shard(struct kvd_follow *w, struct json_object *sh,
			   bool first)
{
	const char *id = json_str(sh, "ShardId");
	const char *parent = json_str(sh, "ParentShardId");
	struct json_object *range;
	struct kvd_shard *s;

	if (!id)
		return -EIO;
	s = watch_shard(w, id);
	if (s) {
		s->listed = true;
		return 0;
	}
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 8;
		struct kvd_shard *v = realloc(w->shards, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->shards = v;
		w->cap = cap;
	}
	s = &w->shards[w->n];
	memset(s, 0, sizeof(*s));
	s->id = strdup(id);
	s->parent = parent ? strdup(parent) : NULL;
	if (!s->id || (parent && !s->parent)) {
		shard_release(s);
		return -ENOMEM;
	}
	s->listed = true;
	/* closed before the watch: all of it is older */
	s->ended =
	    first &&
	    json_object_object_get_ex(sh, "SequenceNumberRange", &range) &&
	    json_str(range, "EndingSequenceNumber");
	w->n++;
	return 0;
}

/*
 * Lists the stream's shards (DescribeStream, every page), adding the new
 * ones, and drops the ended ones no longer listed (trimmed). Errors: as
 * ddb_streams_call, -EIO, -ENOMEM.
 */
static int watch_list(struct kvd_follow *w, bool first)
{
	char *after = NULL;
	size_t i, kept;
	int rc = 0;

	for (i = 0; i < w->n; i++)
		w->shards[i].listed = false;
	do {
		struct json_object *req = json_object_new_object();
		struct json_object *resp = NULL, *desc, *shards;
		const char *last;

		rc = ddb_add(req, "StreamArn", json_object_new_string(w->arn));
		if (!rc && after)
			rc = ddb_add(req, "ExclusiveStartShardId",
				     json_object_new_string(after));
		if (!rc)
			rc = ddb_streams_call(w->d, "DescribeStream", req,
					      &resp);
		json_object_put(req);
		free(after);
		after = NULL;
		if (rc)
			break;
		if (!json_object_object_get_ex(resp, "StreamDescription",
					       &desc) ||
		    !json_object_object_get_ex(desc, "Shards", &shards)) {
			rc = -EIO;
		} else {
			size_t n = json_object_array_length(shards);

			for (i = 0; !rc && i < n; i++)
				rc = watch_add_shard(
				    w, json_object_array_get_idx(shards, i),
				    first);
			last = json_str(desc, "LastEvaluatedShardId");
			if (!rc && last && !(after = strdup(last)))
				rc = -ENOMEM;
		}
		json_object_put(resp);
	} while (!rc && after);
	if (rc)
		return rc;
	for (i = kept = 0; i < w->n; i++) {
		if (w->shards[i].ended && !w->shards[i].listed)
			shard_release(&w->shards[i]);
		else
			w->shards[kept++] = w->shards[i];
	}
	w->n = kept;
	w->listed = watch_now_s();
	return 0;
}

/*
 * Starts the shards that may be read now and were not: at the watch's
 * start (@first) the open ones from LATEST; later, each new one whose
 * parent the watch does not read or read to its end, from TRIM_HORIZON.
 * Errors: as shard_iterate.
 */
static int watch_start_shards(struct kvd_follow *w, bool first)
{
	for (size_t i = 0; i < w->n; i++) {
		struct kvd_shard *s = &w->shards[i], *p;
		int rc;

		if (s->iter || s->ended)
			continue;
		p = s->parent ? watch_shard(w, s->parent) : NULL;
		if (!first && p && !p->ended)
			continue; /* its parent's records first */
		rc = shard_iterate(w, s, first ? "LATEST" : "TRIM_HORIZON");
		if (rc)
			return rc;
	}
	return 0;
}

/* Begins (again): the table's latest stream, its shards, their iterators;
 * reset() follows. Errors: -EOPNOTSUPP (the table has no stream), as
 * ddb_call. */
static int watch_begin(struct kvd_follow *w)
{
	struct json_object *req = json_object_new_object(), *resp = NULL, *t;
	const char *arn;
	int rc;

	watch_forget(w);
	rc = ddb_add(req, "TableName", json_object_new_string(w->table));
	if (!rc)
		rc = ddb_call(w->d, "DescribeTable", req, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	if (!json_object_object_get_ex(resp, "Table", &t))
		t = NULL;
	arn = json_str(t, "LatestStreamArn");
	if (!arn) {
		plog(LOG_ERR,
		     "dynamodb watch: table %s has no stream (Streams must "
		     "be on, with new images): no changes are followed",
		     w->table);
		rc = -EOPNOTSUPP;
	} else if (!(w->arn = strdup(arn))) {
		rc = -ENOMEM;
	}
	json_object_put(resp);
	if (!rc)
		rc = watch_list(w, true);
	if (!rc)
		rc = watch_start_shards(w, true);
	if (rc)
		watch_forget(w);
	return rc;
}

/* Hands out record @r (of a page of revision @rev). Errors: -EIO (a record
 * that does not decode), the callback's. */
static int watch_record(struct kvd_follow *w, struct json_object *r,
			long long rev)
{
	struct json_object *ddb, *keys, *img = NULL;
	const char *ev = json_str(r, "eventName");

	if (!ev || !json_object_object_get_ex(r, "dynamodb", &ddb) ||
	    !json_object_object_get_ex(ddb, "Keys", &keys))
		return -EIO;
	if (strcmp(ev, "REMOVE") &&
	    !json_object_object_get_ex(ddb, "NewImage", &img))
		return -EIO; /* a stream without new images */
	return w->record(w->ctx, rev, keys, img);
}

/*
 * Reads the next page of shard @s and hands out its records. *@full: the
 * page was full (more may be waiting); *@ended: the shard came to its end.
 * Errors: -ETIME (its iterator expired), as ddb_streams_call, -EIO, -ENOMEM.
 */
static int shard_read(struct kvd_follow *w, struct kvd_shard *s, bool *full,
		      bool *ended)
{
	struct json_object *req = json_object_new_object(), *resp = NULL, *rs;
	const char *next;
	size_t i, n = 0;
	int rc;

	*full = *ended = false;
	rc = ddb_add(req, "ShardIterator", json_object_new_string(s->iter));
	if (!rc)
		rc = ddb_add(req, "Limit", json_object_new_int(KVD_PAGE));
	if (!rc)
		rc = ddb_streams_call(w->d, "GetRecords", req, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	if (json_object_object_get_ex(resp, "Records", &rs))
		n = json_object_array_length(rs);
	if (n)
		w->rev++;
	for (i = 0; !rc && i < n && !atomic_load(&w->stop); i++) {
		struct json_object *r = json_object_array_get_idx(rs, i), *d;
		const char *seq;

		rc = watch_record(w, r, w->rev);
		seq = json_object_object_get_ex(r, "dynamodb", &d)
			  ? json_str(d, "SequenceNumber")
			  : NULL;
		if (!rc && seq) {
			free(s->last);
			s->last = strdup(seq);
		}
	}
	next = json_str(resp, "NextShardIterator");
	free(s->iter);
	s->iter = next ? strdup(next) : NULL;
	if (!rc && next && !s->iter)
		rc = -ENOMEM;
	if (!rc && !next)
		*ended = s->ended = true;
	*full = n >= KVD_PAGE;
	json_object_put(resp);
	return rc;
}

/*
 * One round: a page of every shard being read, new shards looked for when
 * needed. *@more: a page was full (the next round comes at once). Errors:
 * those after which the watch starts over.
 */
static int watch_round(struct kvd_follow *w, bool *more)
{
	bool list = watch_now_s() - w->listed >= KVD_LIST_S, open = false;
	int rc = 0;

	*more = false;
	for (size_t i = 0; i < w->n && !rc && !atomic_load(&w->stop); i++) {
		struct kvd_shard *s = &w->shards[i];
		bool full, ended;

		if (!s->iter)
			continue;
		rc = shard_read(w, s, &full, &ended);
		if (rc == -ETIME && s->last) {
			/* expired: on from the last record read */
			rc = shard_iterate(w, s, "AFTER_SEQUENCE_NUMBER");
			full = true;
			ended = false;
		}
		*more |= full;
		list |= ended;
		open |= !ended;
	}
	if (!rc && (list || !open))
		rc = watch_list(w, false);
	if (!rc)
		rc = watch_start_shards(w, false);
	return rc;
}

static void *watch_main(void *arg)
{
	struct kvd_follow *w = arg;
	int pause_ms = 20;

	while (!atomic_load(&w->stop)) {
		bool more = false;
		int rc = 0;

		if (!w->arn) {
			rc = watch_begin(w);
			if (!rc)
				w->reset(w->ctx);
		} else {
			rc = watch_round(w, &more);
		}
		if (rc) {
			if (!atomic_load(&w->stop))
				plog(LOG_NOTICE,
				     "dynamodb watch of %s: %s: starting over",
				     w->table, strerror(-rc));
			watch_forget(w);
			watch_pause(w, pause_ms);
			if (pause_ms < 1000)
				pause_ms *= 2;
			continue;
		}
		pause_ms = 20;
		if (!more)
			watch_pause(w, KVD_POLL_MS);
	}
	watch_forget(w);
	return NULL;
}

int kvd_follow_start(struct kvd_follow **out, struct ddb *d, const char *table,
		     kvd_record_fn record, void (*reset)(void *ctx), void *ctx)
{
	struct kvd_follow *w = calloc(1, sizeof(*w));
	int rc;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->d = d;
	w->table = strdup(table);
	w->record = record;
	w->reset = reset;
	w->ctx = ctx;
	atomic_init(&w->stop, false);
	if (!w->table) {
		free(w);
		return -ENOMEM;
	}
	rc = -pthread_create(&w->thread, NULL, watch_main, w);
	if (rc) {
		free(w->table);
		free(w);
		return -EAGAIN;
	}
	*out = w;
	return 0;
}

void kvd_follow_stop(struct kvd_follow *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, true);
	pthread_join(w->thread, NULL);
	free(w->shards);
	free(w->table);
	free(w);
}
