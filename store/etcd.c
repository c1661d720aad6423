/*
 * etcd.c - HTTP transport to etcd's v3 JSON gateway (see etcd_i.h): the only
 * file that uses libcurl.
 *
 * Connections: a free list of curl easy handles, each keeping its HTTP
 * connection to one member alive between calls; a call takes one (or makes
 * one), so threads never share a handle. A handle whose member failed moves
 * on to the next member. Requests are JSON over plain HTTP (no TLS, no auth:
 * the cluster is reached on a trusted network, as its loopback tests do).
 *
 * Retries: a member that cannot be reached, or answers that there is no
 * leader, that the leader changed or that the request timed out, is passed
 * over for the next, after a pause growing from 20 ms to 500 ms, for at most
 * ETCD_RETRY_S seconds; a leader election after a kill -9 takes ~1-2 s.
 *
 * Limits: each attempt is bounded by 10 s (2 s to connect); answers are
 * held in memory whole (callers page their reads).
 *
 * Tests: etcd_test_lose_answer (etcd_i.h) makes an answer look lost after
 * etcd applied the request, the case that the retries make dangerous.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "etcd_i.h"
#include "log.h"

#define ETCD_EP_MAX 16

struct etcd_conn {
	CURL *h;
	int ep; /* the member it talks to */
	struct etcd_conn *next;
};

struct etcd {
	char *eps[ETCD_EP_MAX];
	int neps;
	pthread_mutex_t lock;
	struct etcd_conn *free; /* protected by lock */
	int next_ep;		/* protected by lock: where a new handle goes */
};

/* A growing response body. */
struct etcd_buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static pthread_once_t etcd_curl_once = PTHREAD_ONCE_INIT;

static void etcd_curl_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

int etcd_open(struct etcd **out, const char *endpoints)
{
	struct etcd *e = calloc(1, sizeof(*e));
	const char *s = endpoints;

	if (!e)
		return -ENOMEM;
	pthread_once(&etcd_curl_once, etcd_curl_init);
	pthread_mutex_init(&e->lock, NULL);
	while (*s) {
		size_t n = strcspn(s, ",");
		if (n && e->neps < ETCD_EP_MAX && n < 256) {
			e->eps[e->neps] = strndup(s, n);
			if (!e->eps[e->neps]) {
				etcd_close(e);
				return -ENOMEM;
			}
			e->neps++;
		} else if (n) {
			etcd_close(e);
			return -EINVAL;
		}
		s += n;
		if (*s == ',')
			s++;
	}
	if (!e->neps) {
		etcd_close(e);
		return -EINVAL;
	}
	*out = e;
	return 0;
}

void etcd_close(struct etcd *e)
{
	if (!e)
		return;
	while (e->free) {
		struct etcd_conn *c = e->free;
		e->free = c->next;
		curl_easy_cleanup(c->h);
		free(c);
	}
	for (int i = 0; i < e->neps; i++)
		free(e->eps[i]);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

const char *etcd_endpoint(const struct etcd *e, unsigned i)
{
	return e->eps[i % (unsigned)e->neps];
}

static struct etcd_conn *etcd_get_conn(struct etcd *e)
{
	struct etcd_conn *c;

	pthread_mutex_lock(&e->lock);
	c = e->free;
	if (c)
		e->free = c->next;
	pthread_mutex_unlock(&e->lock);
	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->h = curl_easy_init();
	if (!c->h) {
		free(c);
		return NULL;
	}
	pthread_mutex_lock(&e->lock);
	c->ep = e->next_ep++ % e->neps;
	pthread_mutex_unlock(&e->lock);
	return c;
}

static void etcd_put_conn(struct etcd *e, struct etcd_conn *c)
{
	pthread_mutex_lock(&e->lock);
	c->next = e->free;
	e->free = c;
	pthread_mutex_unlock(&e->lock);
}

static size_t etcd_write(char *data, size_t size, size_t n, void *ctx)
{
	struct etcd_buf *b = ctx;
	size_t len = size * n;

	if (b->len + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;
		while (cap < b->len + len + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return 0;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
	return len;
}

/* The errno of etcd's error @msg; 1 if the call should go to another member. */
static int etcd_errno(const char *msg)
{
	static const struct {
		const char *text;
		int rc;
	} map[] = {
	    {"database space exceeded", -ENOSPC},
	    {"too many operations", -E2BIG},
	    {"request is too large", -E2BIG},
	    {"duplicate key", -E2BIG},
	    {"has been compacted", -ESTALE},
	    {"lease not found", -ENOENT},
	    {"permission denied", -EACCES},
	    {"user name is empty", -EACCES},
	    {"leader changed", 1},
	    {"no leader", 1},
	    {"timed out", 1},
	    {"not capable", 1},
	    {"too many requests", 1},
	    {"unhealthy cluster", 1},
	    {"stopped", 1},
	    {"Unavailable", 1},
	    {"transport is closing", 1},
	    {"connection", 1},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strstr(msg, map[i].text))
			return map[i].rc;
	return -EIO;
}

bool (*etcd_test_lose_answer)(const char *path);

static int64_t etcd_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int etcd_call(struct etcd *e, const char *path, struct json_object *req,
	      struct json_object **resp)
{
	const char *body = json_object_to_json_string_ext(
	    req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	int64_t give_up = etcd_now_ms() + ETCD_RETRY_S * 1000;
	struct curl_slist *hdrs = NULL;
	struct etcd_conn *c = etcd_get_conn(e);
	struct etcd_buf b = {0};
	int pause_ms = 20, rc;

	if (!c)
		return -ENOMEM;
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	for (;;) {
		char url[320];
		long status = 0;
		CURLcode cc;

		b.len = 0;
		snprintf(url, sizeof(url), "http://%s%s", e->eps[c->ep], path);
		curl_easy_setopt(c->h, CURLOPT_URL, url);
		curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE,
				 (long)strlen(body));
		curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, etcd_write);
		curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &b);
		curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
		curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, 10000L);
		cc = curl_easy_perform(c->h);
		if (b.oom) {
			rc = -ENOMEM;
			goto out;
		}
		if (cc == CURLE_OK)
			curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE,
					  &status);
		if (cc == CURLE_OK && status == 200) {
			*resp = json_tokener_parse(b.p ? b.p : "");
			if (!*resp) {
				plog(LOG_ERR, "etcd %s: %s: unparsable answer",
				     e->eps[c->ep], path);
				rc = -EIO;
				goto out;
			}
			rc = 0;
			if (!etcd_test_lose_answer ||
			    !etcd_test_lose_answer(path))
				goto out;
			/* as if the connection broke after etcd applied it */
			json_object_put(*resp);
			*resp = NULL;
		}
		rc = 1; /* transport errors and 5xx: another member */
		if (cc == CURLE_OK && status < 500 && status != 200) {
			struct json_object *err =
			    json_tokener_parse(b.p ? b.p : "");
			struct json_object *m = NULL;
			const char *msg = "?";
			if (err &&
			    json_object_object_get_ex(err, "message", &m))
				msg = json_object_get_string(m);
			rc = etcd_errno(msg);
			if (rc < 0)
				plog(rc == -EIO ? LOG_ERR : LOG_DEBUG,
				     "etcd %s: %s: %ld %s", e->eps[c->ep], path,
				     status, msg);
			json_object_put(err);
			if (rc < 0)
				goto out;
		}
		if (etcd_now_ms() > give_up) {
			plog(LOG_ERR, "etcd %s: %s: no member answered: %s",
			     e->eps[c->ep], path,
			     cc ? curl_easy_strerror(cc) : "unavailable");
			rc = -ETIMEDOUT;
			goto out;
		}
		plog(LOG_DEBUG, "etcd %s: %s: %s, trying the next member",
		     e->eps[c->ep], path,
		     cc ? curl_easy_strerror(cc) : (b.p ? b.p : "?"));
		c->ep = (c->ep + 1) % e->neps;
		nanosleep(&(struct timespec){0, pause_ms * 1000000L}, NULL);
		if (pause_ms < 500)
			pause_ms *= 2;
	}
out:
	curl_slist_free_all(hdrs);
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, NULL);
	etcd_put_conn(e, c);
	free(b.p);
	return rc;
}

static const char b64chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *etcd_b64(const char *src, size_t len)
{
	const unsigned char *s = (const unsigned char *)src;
	char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < len)
			v |= s[i + 2];
		*o++ = b64chars[v >> 18 & 63];
		*o++ = b64chars[v >> 12 & 63];
		*o++ = i + 1 < len ? b64chars[v >> 6 & 63] : '=';
		*o++ = i + 2 < len ? b64chars[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

char *etcd_unb64(const char *src, size_t *len)
{
	size_t n = src ? strlen(src) : 0, o = 0;
	char *out = src ? malloc(n / 4 * 3 + 4) : NULL;
	uint32_t acc = 0;
	int bits = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n && src[i] != '='; i++) {
		int v = b64val(src[i]);
		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)(acc >> bits & 0xff);
		}
	}
	out[o] = '\0';
	*len = o;
	return out;
}

long long etcd_int(struct json_object *o, const char *name)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, name, &v))
		return 0;
	return json_object_get_int64(v); /* parses "123" too */
}

/* Adds @j (taken, also on an error) to @o as @name. Errors: -ENOMEM (@o or
 * @j NULL, or out of memory). */
int etcd_add_json(struct json_object *o, const char *name,
		  struct json_object *j)
{
	if (!o || !j || json_object_object_add(o, name, j)) {
		json_object_put(j);
		return -ENOMEM;
	}
	return 0;
}

/* Adds @v to @o as @name. Errors: -ENOMEM. */
int etcd_add_int(struct json_object *o, const char *name, long long v)
{
	return etcd_add_json(o, name, json_object_new_int64(v));
}
