/*
 * etcd_watch.c - watches of a key range on etcd through its JSON gateway
 * (see etcd_i.h): the gateway turns the Watch stream into a streaming POST
 * to /v3/watch whose answer is one JSON object per message ({"result":
 * {"created": true}}, then {"result": {"events": [...]}} per revision), which
 * this file reads as it comes and hands out event by event.
 *
 * One thread per watch, with its own curl handle on one member. When the
 * stream ends (the member went away, an error message, a cancel because the
 * revision asked for was compacted) the thread waits as etcd_call() does
 * (20 ms growing to 500 ms), watches again from now on the next member, and
 * calls reset() once etcd confirms the new watch: the caller drops what it
 * derived from the events it may have missed. A silent member is found out
 * by TCP keep-alive (idle 5 s, then every 2 s).
 *
 * With a user (etcd.c), the stream carries the token; a watch etcd cancels
 * because it no longer knows the token authenticates again before the next
 * one; one it refuses (permission denied) is logged, once until a watch
 * stands again, and tried again after the pause as any other. A watch that
 * stands goes on when its token expires (etcd checks it at the start).
 *
 * Out of memory (a request, a handle, a message), the stream ends as if
 * its member went away: the thread watches again after its pause, and
 * reset() follows once a watch is confirmed; a change it cannot decode ends
 * the stream the same way. Nothing here aborts on an allocation failure.
 *
 * Limits: etcd_watch_stop() waits up to a second for libcurl to notice (its
 * progress callback runs about once a second while the stream is idle),
 * or, when it comes during an authentication, for that to end (at most
 * ETCD_RETRY_S with no member answering). A password changed under a
 * mounted store leaves the watch failing, logged at each try (every 0.5 s)
 * until it is unmounted.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "etcd_i.h"
#include "log.h"

struct etcd_watch {
	struct etcd *e;
	char *key, *end; /* base64, as the request wants them */
	size_t strip;	 /* bytes of each key not handed out */
	long long rev;	 /* where the first watch starts; 0: now */
	etcd_change_fn change;
	void (*reset)(void *ctx);
	void *ctx;
	pthread_t thread;
	atomic_bool stop;
	/* the current stream, on the watch thread only */
	json_tokener *tok;
	bool created; /* etcd confirmed it */
	bool broken;  /* it must end: an error or a cancel came */
	bool relogin; /* it ended on a token etcd no longer knows */
	unsigned gen; /* the token's generation */
	bool refused; /* the last one was refused: said once */
};

/* The bytes of base64 string @s (malloc'd, *len long), or NULL: not a
 * string, bad base64, or no memory. */
static char *watch_unb64(struct json_object *s, size_t *len)
{
	if (!json_object_is_type(s, json_type_string))
		return NULL;
	return etcd_unb64(json_object_get_string(s), len);
}

/*
 * Whether @reason (an error or a cancel's) is about who the watch is: it
 * asks for a new token (w->relogin), or says why etcd refused it, once.
 */
static bool watch_refused(struct etcd_watch *w, const char *reason)
{
	const char *why = NULL;
	int rc = etcd_errno(w->e, reason, &why);

	if (rc == ETCD_RELOGIN)
		w->relogin = true;
	else if (rc == -EACCES && !w->refused)
		plog(LOG_ERR, "etcd watch: %s: watching again", why);
	if (rc == -EACCES)
		w->refused = true;
	return rc == ETCD_RELOGIN || rc == -EACCES;
}

/* Hands out the events of one message; marks the stream broken on an error
 * or a cancel (compacted revision, or a refused identity). */
static void watch_message(struct etcd_watch *w, struct json_object *m)
{
	struct json_object *res, *evs, *v, *r;
	size_t i, n;

	if (json_object_object_get_ex(m, "error", &v) ||
	    !json_object_object_get_ex(m, "result", &res)) {
		const char *text = json_object_to_json_string(m);

		if (!v || !json_object_object_get_ex(v, "message", &r) ||
		    !watch_refused(w, json_object_get_string(r)))
			plog(LOG_WARNING, "etcd watch: %s", text ? text : "?");
		w->broken = true;
		return;
	}
	if (json_object_object_get_ex(res, "canceled", &v) &&
	    json_object_get_boolean(v)) {
		if (!json_object_object_get_ex(res, "cancel_reason", &r) ||
		    !watch_refused(w, json_object_get_string(r)))
			plog(LOG_NOTICE,
			     "etcd watch: canceled (compacted at %lld): "
			     "watching again from now",
			     etcd_int(res, "compact_revision"));
		w->broken = true;
		return;
	}
	if (json_object_object_get_ex(res, "created", &v) &&
	    json_object_get_boolean(v) && !w->created) {
		w->created = true;
		w->refused = false;
		w->reset(w->ctx);
	}
	if (!json_object_object_get_ex(res, "events", &evs))
		return;
	n = json_object_array_length(evs);
	for (i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(evs, i);
		struct json_object *kv, *t, *k, *val;
		bool del;
		char *key, *value = NULL;
		size_t klen, vlen = 0;

		if (!json_object_object_get_ex(ev, "kv", &kv) ||
		    !json_object_object_get_ex(kv, "key", &k))
			continue;
		del = json_object_object_get_ex(ev, "type", &t) &&
		      json_object_is_type(t, json_type_string) &&
		      !strcmp(json_object_get_string(t), "DELETE");
		key = watch_unb64(k, &klen);
		if (!del)
			value = json_object_object_get_ex(kv, "value", &val)
				    ? watch_unb64(val, &vlen)
				    : strdup("");
		if (!key || klen < w->strip || (!del && !value)) {
			/* a change we cannot tell: start over from now */
			w->broken = true;
			free(key);
			free(value);
			return;
		}
		w->change(w->ctx, etcd_int(kv, "mod_revision"), key + w->strip,
			  klen - w->strip, value, vlen);
		free(key);
		free(value);
	}
}

/* libcurl's write callback: parses the stream's messages as they come. */
static size_t watch_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct etcd_watch *w = arg;
	size_t len = size * nmemb, off = 0;

	while (off < len && !w->broken) {
		struct json_object *m =
		    json_tokener_parse_ex(w->tok, data + off, (int)(len - off));

		if (!m) {
			if (json_tokener_get_error(w->tok) ==
			    json_tokener_continue)
				return len; /* the rest comes in the next call */
			plog(LOG_WARNING, "etcd watch: unparsable message");
			w->broken = true;
			return 0;
		}
		off += json_tokener_get_parse_end(w->tok);
		json_tokener_reset(w->tok);
		watch_message(w, m);
		json_object_put(m);
	}
	return w->broken || atomic_load(&w->stop) ? 0 : len;
}

/* libcurl's progress callback: a non-zero answer ends the transfer. */
static int watch_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c,
			  curl_off_t d)
{
	struct etcd_watch *w = arg;

	return atomic_load(&w->stop);
}

/* The body of the request that watches @w's keys from @rev (0: now),
 * malloc'd (caller frees); NULL when out of memory. */
static char *watch_request(const struct etcd_watch *w, long long rev)
{
	struct json_object *req = json_object_new_object();
	struct json_object *cr = json_object_new_object();
	const char *s;
	char *body = NULL;

	if (!req || !cr ||
	    etcd_add_json(cr, "key", json_object_new_string(w->key)) ||
	    etcd_add_json(cr, "range_end", json_object_new_string(w->end)) ||
	    (rev > 0 && etcd_add_int(cr, "start_revision", rev))) {
		json_object_put(cr);
		goto out;
	}
	if (etcd_add_json(req, "create_request", cr))
		goto out;
	s = json_object_to_json_string_ext(
	    req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	body = s ? strdup(s) : NULL;
out:
	json_object_put(req);
	return body;
}

/*
 * One watch stream on member @ep from @rev (0: now), until it ends. Out of
 * memory, it ends at once, saying so: the caller watches again after its
 * pause.
 */
static void watch_stream(struct etcd_watch *w, CURL *h, unsigned ep,
			 long long rev)
{
	char *body = watch_request(w, rev);
	struct curl_slist *hdrs = NULL;
	char errbuf[CURL_ERROR_SIZE];
	CURLcode cc;
	int rc;

	w->tok = json_tokener_new();
	w->created = w->broken = w->relogin = false;
	if (!body || !w->tok) {
		plog(LOG_WARNING, "etcd watch: out of memory: watching again");
		goto out;
	}
	curl_easy_reset(h);
	rc = etcd_prepare(w->e, h, ep, "/v3/watch", &hdrs, errbuf, &w->gen);
	if (rc) {
		/* etcd.c logged why an authentication failed */
		if (rc == -ENOMEM)
			plog(LOG_WARNING,
			     "etcd watch: out of memory: watching again");
		goto out;
	}
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, watch_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, watch_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, w);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 5L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 2L);
	cc = curl_easy_perform(h);
	if (!atomic_load(&w->stop) && !w->broken) /* else said already */
		plog(LOG_NOTICE, "etcd watch on %s ended: %s",
		     etcd_endpoint(w->e, ep),
		     cc ? (errbuf[0] ? errbuf : curl_easy_strerror(cc))
			: "closed by the member");
out:
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	if (w->tok)
		json_tokener_free(w->tok);
	w->tok = NULL;
	curl_slist_free_all(hdrs);
	free(body);
}

static void *watch_main(void *arg)
{
	struct etcd_watch *w = arg;
	CURL *h = NULL;
	long long rev = w->rev;
	unsigned ep = 0;
	int pause_ms = 20;

	while (!atomic_load(&w->stop)) {
		if (!h)
			h = curl_easy_init();
		if (h)
			watch_stream(w, h, ep++, rev);
		if (h && w->relogin)
			etcd_login(w->e,
				   w->gen); /* failed: logged, next time */
		else if (!h)
			plog(LOG_WARNING,
			     "etcd watch: out of memory: watching again");
		rev = 0; /* whatever was missed, reset() covers it */
		if (w->created)
			pause_ms = 20;
		for (int t = 0; t < pause_ms && !atomic_load(&w->stop); t += 10)
			nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
		if (pause_ms < 500)
			pause_ms *= 2;
	}
	curl_easy_cleanup(h);
	return NULL;
}

int etcd_watch_start(struct etcd_watch **out, struct etcd *e, const char *key,
		     size_t klen, const char *end, size_t elen, size_t strip,
		     long long rev, etcd_change_fn change,
		     void (*reset)(void *ctx), void *ctx)
{
	struct etcd_watch *w = calloc(1, sizeof(*w));
	int rc;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->e = e;
	w->key = etcd_b64(key, klen);
	w->end = etcd_b64(end, elen);
	w->strip = strip;
	w->rev = rev;
	w->change = change;
	w->reset = reset;
	w->ctx = ctx;
	atomic_init(&w->stop, false);
	if (!w->key || !w->end) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = -pthread_create(&w->thread, NULL, watch_main, w);
	if (rc) {
		rc = -EAGAIN;
		goto fail;
	}
	*out = w;
	return 0;
fail:
	free(w->key);
	free(w->end);
	free(w);
	return rc;
}

void etcd_watch_stop(struct etcd_watch *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, true);
	pthread_join(w->thread, NULL);
	free(w->key);
	free(w->end);
	free(w);
}
