/*
 * etcd.c - HTTP transport to etcd's v3 JSON gateway (see etcd_i.h): the only
 * file that uses libcurl (with etcd_watch.c).
 *
 * Connections: a free list of curl easy handles, each keeping its HTTP
 * connection to one member alive between calls; a call takes one (or makes
 * one), so threads never share a handle. A handle whose member failed moves
 * on to the next member. Requests are JSON over http or https.
 *
 * Security: with https, libcurl verifies each member's certificate against
 * cacert (or the system's CAs) and its name against the member's host (an
 * IP address needs an IP SAN), and presents cert/key when given. With a
 * user, /v3/auth/authenticate gives a token that every request carries as
 * its Authorization header; one token serves every thread and member. etcd
 * drops a simple token idle for --auth-token-ttl on a member (and every
 * token when its auth store changes): the request it refused is sent again,
 * once, after a new authentication (one thread authenticates, the others
 * wait for its token). The password stays in this file's memory (wiped at
 * close) and is never logged; a request's body is never logged either.
 *
 * Retries: a member that cannot be reached, or answers that there is no
 * leader, that the leader changed or that the request timed out, is passed
 * over for the next, after a pause growing from 20 ms to 500 ms, for at most
 * ETCD_RETRY_S seconds; a leader election after a kill -9 takes ~1-2 s.
 * Until a member has answered once, though, a member that cannot be reached
 * is tried once only: an open names the cause (connection refused, timeout,
 * certificate verification failed, TLS or not) within seconds instead of
 * retrying for 30.
 *
 * Limits: each attempt is bounded by 10 s (2 s to connect; the first
 * contact 4 s and 1.5 s); answers are held in memory whole (callers page
 * their reads).
 *
 * Tests: etcd_test_lose_answer (etcd_i.h) makes an answer look lost after
 * etcd applied the request, the case that the retries make dangerous.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "etcd_i.h"
#include "log.h"

#define ETCD_EP_MAX   16
#define ETCD_AUTH_OFF 3 /* etcd_errno: the cluster has no authentication */

struct etcd_conn {
	CURL *h;
	int ep; /* the member it talks to */
	struct etcd_conn *next;
};

struct etcd {
	char *eps[ETCD_EP_MAX];
	int neps;
	bool https;
	char *cacert, *cert, *key, *user; /* NULL: none */
	char *password;			  /* the user's; wiped at close */
	pthread_mutex_t lock;
	pthread_mutex_t login_lock; /* one authentication at a time */
	struct etcd_conn *free;	    /* protected by lock */
	int next_ep;   /* protected by lock: where a new handle goes */
	char *token;   /* protected by lock: NULL: none */
	unsigned gen;  /* protected by lock: the token's; 0: none yet */
	bool reached;  /* protected by lock: a member answered */
	bool opened;   /* protected by lock: errors are logged */
	char why[768]; /* protected by lock: the last failure */
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

/* Keeps the cause of a failure for etcd_why() and logs it: at @level once
 * the open is done, at LOG_DEBUG before (the opener says it in one line). */
static void etcd_fail(struct etcd *e, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void etcd_fail(struct etcd *e, int level, const char *fmt, ...)
{
	char line[sizeof(e->why)];
	va_list ap;
	bool opened;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&e->lock);
	memcpy(e->why, line, sizeof(line));
	opened = e->opened;
	pthread_mutex_unlock(&e->lock);
	plog(opened ? level : LOG_DEBUG, "%s", line);
}

void etcd_why(struct etcd *e, char *buf, size_t size)
{
	pthread_mutex_lock(&e->lock);
	snprintf(buf, size, "%s", e->why);
	pthread_mutex_unlock(&e->lock);
}

void etcd_opened(struct etcd *e)
{
	pthread_mutex_lock(&e->lock);
	e->opened = true;
	pthread_mutex_unlock(&e->lock);
}

/* Reads the user's password: the first line of @file, or the environment's
 * ETCD_PASSWORD_ENV. Errors: -EINVAL (none, empty, or the file cannot be
 * read: said in e->why), -ENOMEM. */
static int etcd_password(struct etcd *e, const char *file)
{
	const char *env = getenv(ETCD_PASSWORD_ENV);
	size_t cap = 0;
	ssize_t n = 0;
	FILE *f;
	int rc = 0;

	if (!file) {
		if (!env || !*env) {
			etcd_fail(e, LOG_ERR,
				  "etcd user %s has no password: give "
				  "password-file=FILE in the URL, or set "
				  "$" ETCD_PASSWORD_ENV,
				  e->user);
			return -EINVAL;
		}
		e->password = strdup(env);
		return e->password ? 0 : -ENOMEM;
	}
	f = fopen(file, "re");
	if (!f) {
		etcd_fail(e, LOG_ERR, "etcd password-file %s: %s", file,
			  strerror(errno));
		return -EINVAL;
	}
	n = getline(&e->password, &cap, f);
	if (n < 0 && ferror(f))
		rc = -errno;
	while (n > 0 &&
	       (e->password[n - 1] == '\n' || e->password[n - 1] == '\r'))
		e->password[--n] = '\0';
	if (!rc && n <= 0) {
		rc = -EINVAL;
		etcd_fail(e, LOG_ERR, "etcd password-file %s: %s", file,
			  "no password on its first line");
	} else if (rc) {
		etcd_fail(e, LOG_ERR, "etcd password-file %s: %s", file,
			  strerror(-rc));
		rc = rc == -ENOMEM ? rc : -EINVAL;
	}
	fclose(f);
	return rc;
}

/* Copies @cfg's settings into @e. Errors: -ENOMEM, etcd_password's. */
static int etcd_configure(struct etcd *e, const struct etcd_config *cfg)
{
	e->https = cfg->https;
	if ((cfg->cacert && !(e->cacert = strdup(cfg->cacert))) ||
	    (cfg->cert && !(e->cert = strdup(cfg->cert))) ||
	    (cfg->key && !(e->key = strdup(cfg->key))) ||
	    (cfg->user && !(e->user = strdup(cfg->user))))
		return -ENOMEM;
	return e->user ? etcd_password(e, cfg->password_file) : 0;
}

int etcd_open(struct etcd **out, const char *endpoints,
	      const struct etcd_config *cfg)
{
	struct etcd *e = calloc(1, sizeof(*e));
	const char *s = endpoints;
	int rc = 0;

	*out = e;
	if (!e)
		return -ENOMEM;
	pthread_once(&etcd_curl_once, etcd_curl_init);
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->login_lock, NULL);
	while (*s && !rc) {
		size_t n = strcspn(s, ",");
		if (n && e->neps < ETCD_EP_MAX && n < 256) {
			e->eps[e->neps] = strndup(s, n);
			if (!e->eps[e->neps])
				rc = -ENOMEM;
			else
				e->neps++;
		} else if (n) {
			rc = -EINVAL;
		}
		s += n;
		if (*s == ',')
			s++;
	}
	if (!rc && !e->neps)
		rc = -EINVAL;
	if (!rc && cfg)
		rc = etcd_configure(e, cfg);
	return rc;
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
	if (e->password)
		explicit_bzero(e->password, strlen(e->password));
	free(e->password);
	free(e->token);
	free(e->cacert);
	free(e->cert);
	free(e->key);
	free(e->user);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->login_lock);
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
	/* nothing of the call may outlive it in the handle */
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, NULL);
	curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, NULL);
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

int etcd_errno(struct etcd *e, const char *msg, const char **why)
{
	static const struct {
		const char *text;
		int rc;
		const char *why;
	} map[] = {
	    {"database space exceeded", -ENOSPC, NULL},
	    {"too many operations", -E2BIG, NULL},
	    {"request is too large", -E2BIG, NULL},
	    {"duplicate key", -E2BIG, NULL},
	    {"has been compacted", -ESTALE, NULL},
	    {"lease not found", -ENOENT, NULL},
	    {"invalid auth token", ETCD_RELOGIN, NULL},
	    {"auth store is old", ETCD_RELOGIN, NULL},
	    {"authentication is not enabled", ETCD_AUTH_OFF, NULL},
	    {"authentication failed", -EACCES,
	     "authentication failed: wrong user name or password"},
	    {"permission denied", -EACCES, "permission denied"},
	    {"user name is empty", -EACCES,
	     "the cluster wants authentication: give user=NAME in the URL "
	     "and its password in password-file=FILE or "
	     "$" ETCD_PASSWORD_ENV},
	    {"CommonName of client", -EACCES,
	     "with auth on, etcd's JSON gateway refuses a client "
	     "certificate whose subject has a CommonName: use one without "
	     "CN (the user is the password's)"},
	    {"HTTP request to an HTTPS server", -EPROTO,
	     "the member speaks TLS: use etcd+https://"},
	    {"leader changed", ETCD_TRY_NEXT, NULL},
	    {"no leader", ETCD_TRY_NEXT, NULL},
	    {"timed out", ETCD_TRY_NEXT, NULL},
	    {"not capable", ETCD_TRY_NEXT, NULL},
	    {"too many requests", ETCD_TRY_NEXT, NULL},
	    {"unhealthy cluster", ETCD_TRY_NEXT, NULL},
	    {"stopped", ETCD_TRY_NEXT, NULL},
	    {"Unavailable", ETCD_TRY_NEXT, NULL},
	    {"transport is closing", ETCD_TRY_NEXT, NULL},
	    {"connection", ETCD_TRY_NEXT, NULL},
	};
	*why = NULL;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strstr(msg, map[i].text)) {
			*why = map[i].why;
			/* a token etcd forgot, or auth turned on since */
			if (map[i].rc == -EACCES && e->user &&
			    !strcmp(map[i].text, "user name is empty"))
				return ETCD_RELOGIN;
			return map[i].rc;
		}
	return -EIO;
}

bool (*etcd_test_lose_answer)(const char *path);

static int64_t etcd_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether a member answered yet: until then, one try per member. */
static bool etcd_first_contact(struct etcd *e)
{
	bool first;

	pthread_mutex_lock(&e->lock);
	first = !e->reached;
	pthread_mutex_unlock(&e->lock);
	return first;
}

static void etcd_reached(struct etcd *e)
{
	pthread_mutex_lock(&e->lock);
	e->reached = true;
	pthread_mutex_unlock(&e->lock);
}

/* "Authorization: TOKEN", malloc'd in *hdr (NULL: no user, or auth is off
 * on the cluster), authenticating first when there is no token yet; *gen is
 * its generation. Errors: -ENOMEM, etcd_login's. */
static int etcd_auth_header(struct etcd *e, char **hdr, unsigned *gen)
{
	int rc = 0;

	*hdr = NULL;
	pthread_mutex_lock(&e->lock);
	*gen = e->gen;
	pthread_mutex_unlock(&e->lock);
	if (!e->user)
		return 0;
	if (!*gen)
		rc = etcd_login(e, 0);
	if (rc)
		return rc;
	pthread_mutex_lock(&e->lock);
	*gen = e->gen;
	if (e->token && asprintf(hdr, "Authorization: %s", e->token) < 0) {
		*hdr = NULL;
		rc = -ENOMEM;
	}
	pthread_mutex_unlock(&e->lock);
	return rc;
}

int etcd_prepare(struct etcd *e, CURL *h, unsigned ep, const char *path,
		 struct curl_slist **hdrs, char *errbuf, unsigned *gen)
{
	struct curl_slist *l;
	char url[320], *auth = NULL;
	int rc = 0;

	snprintf(url, sizeof(url), "%s://%s%s", e->https ? "https" : "http",
		 etcd_endpoint(e, ep), path);
	errbuf[0] = '\0';
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	if (e->cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, e->cacert);
	if (e->cert)
		curl_easy_setopt(h, CURLOPT_SSLCERT, e->cert);
	if (e->key)
		curl_easy_setopt(h, CURLOPT_SSLKEY, e->key);
	if (gen)
		rc = etcd_auth_header(e, &auth, gen);
	l = rc ? NULL
	       : curl_slist_append(*hdrs, "Content-Type: application/json");
	if (l)
		*hdrs = l;
	if (l && auth)
		l = curl_slist_append(*hdrs, auth);
	if (l)
		*hdrs = l;
	else if (!rc)
		rc = -ENOMEM;
	if (auth)
		explicit_bzero(auth, strlen(auth));
	free(auth);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
	return rc;
}

/* What went wrong with transfer @cc on @h, in @buf: curl's own words (its
 * error buffer @errbuf), and what it likely means. */
static void etcd_cause(struct etcd *e, CURL *h, CURLcode cc, const char *errbuf,
		       char *buf, size_t size)
{
	const char *text = errbuf[0] ? errbuf : curl_easy_strerror(cc);
	const char *hint = "";
	long oserr = 0;

	curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &oserr);
	if (cc == CURLE_COULDNT_CONNECT && oserr) {
		text = strerror((int)oserr);
		if (oserr == ECONNREFUSED)
			hint = " (nothing listens there?)";
	} else if (!e->https &&
		   (cc == CURLE_GOT_NOTHING || cc == CURLE_RECV_ERROR)) {
		hint = " (does the member speak TLS? use etcd+https://)";
	} else if (e->https && cc == CURLE_SSL_CONNECT_ERROR &&
		   strstr(text, "wrong version number")) {
		hint = " (does the member speak plain http? use etcd://)";
	} else if (cc == CURLE_PEER_FAILED_VERIFICATION) {
		hint = " (cacert= must be the CA that signed the members' "
		       "certificates, which must name their address)";
	} else if (e->https && !e->cert &&
		   (cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR ||
		    cc == CURLE_SSL_CONNECT_ERROR)) {
		hint = " (does the cluster want a client certificate? give "
		       "cert= and key=)";
	}
	snprintf(buf, size, "%s%s", text, hint);
}

/* The members a first contact could not reach, and why. */
struct etcd_unreached {
	int n;
	bool same;			   /* every cause is the first */
	char first[CURL_ERROR_SIZE + 128]; /* the first one's cause */
	char hosts[512];		   /* "h:p, h:p" */
	char each[768];			   /* "h:p: cause; h:p: cause" */
};

/* Counts member @ep unreachable for @cause; once each member was, says why
 * (etcd_fail: one line, the members that failed alike together) and
 * returns true. */
static bool etcd_unreached(struct etcd *e, struct etcd_unreached *u,
			   const char *ep, const char *cause)
{
	size_t h = strlen(u->hosts), c = strlen(u->each);

	if (!u->n++) {
		snprintf(u->first, sizeof(u->first), "%s", cause);
		u->same = true;
	}
	u->same = u->same && !strcmp(u->first, cause);
	snprintf(u->hosts + h, sizeof(u->hosts) - h, "%s%s", h ? ", " : "", ep);
	snprintf(u->each + c, sizeof(u->each) - c, "%s%s: %s", c ? "; " : "",
		 ep, cause);
	if (u->n < e->neps)
		return false;
	if (u->same)
		etcd_fail(e, LOG_ERR, "cannot reach etcd at %s: %s", u->hosts,
			  u->first);
	else
		etcd_fail(e, LOG_ERR, "cannot reach etcd: %s", u->each);
	return true;
}

/* The message of etcd's error answer @body (its JSON "message", or the
 * first line of a text answer), in @buf. */
static void etcd_message(const char *body, char *buf, size_t size)
{
	struct json_object *err = json_tokener_parse(body ? body : "");
	struct json_object *m = NULL;

	if (err && json_object_object_get_ex(err, "message", &m))
		snprintf(buf, size, "%s", json_object_get_string(m));
	else
		snprintf(buf, size, "%.*s",
			 (int)strcspn(body ? body : "?", "\r\n"),
			 body ? body : "?");
	json_object_put(err);
}

/*
 * etcd_call on connection @c; with @auth (and a user), the request carries
 * the token. Returns what etcd_call does, or ETCD_AUTH_OFF (an
 * authentication the cluster does not do).
 */
static int etcd_do(struct etcd *e, struct etcd_conn *c, const char *path,
		   struct json_object *req, bool auth,
		   struct json_object **resp)
{
	const char *body = json_object_to_json_string_ext(
	    req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	int64_t give_up = etcd_now_ms() + ETCD_RETRY_S * 1000;
	char errbuf[CURL_ERROR_SIZE], cause[CURL_ERROR_SIZE + 128];
	struct etcd_unreached un = {.n = 0};
	struct etcd_buf b = {0};
	int pause_ms = 20, rc;
	bool relogged = false;

	for (;;) {
		struct curl_slist *hdrs = NULL;
		bool first = etcd_first_contact(e);
		const char *ep = e->eps[c->ep], *why = NULL;
		unsigned gen = 0;
		long status = 0;
		CURLcode cc;

		b.len = 0;
		rc = etcd_prepare(e, c->h, (unsigned)c->ep, path, &hdrs, errbuf,
				  auth ? &gen : NULL);
		if (rc) {
			curl_slist_free_all(hdrs);
			goto out;
		}
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE,
				 (long)strlen(body));
		curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, etcd_write);
		curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &b);
		curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS,
				 first ? 1500L : 2000L);
		curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS,
				 first ? 4000L : 10000L);
		cc = curl_easy_perform(c->h);
		curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, NULL);
		curl_slist_free_all(hdrs);
		if (b.oom) {
			rc = -ENOMEM;
			goto out;
		}
		if (cc == CURLE_OK) {
			curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE,
					  &status);
			etcd_reached(e);
		}
		if (cc == CURLE_OK && status == 200) {
			*resp = json_tokener_parse(b.p ? b.p : "");
			if (!*resp) {
				etcd_fail(e, LOG_ERR,
					  "etcd %s: %s: unparsable answer", ep,
					  path);
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
		rc = ETCD_TRY_NEXT; /* transport errors and 5xx */
		if (cc == CURLE_OK && status < 500 && status != 200) {
			etcd_message(b.p, cause, sizeof(cause));
			rc = etcd_errno(e, cause, &why);
			if (rc == ETCD_RELOGIN && auth && !relogged) {
				relogged = true; /* once: then it is refused */
				rc = etcd_login(e, gen);
				if (rc)
					goto out;
				continue;
			}
			if (rc == ETCD_RELOGIN) {
				rc = -EACCES;
				why =
				    "etcd refused the token it had just given";
			}
			if (rc < 0)
				etcd_fail(
				    e,
				    rc == -EIO || rc == -EACCES || rc == -EPROTO
					? LOG_ERR
					: LOG_DEBUG,
				    "etcd %s: %s: %s%s%s%s", ep, path,
				    why ? why : cause,
				    why && rc == -EACCES && e->user ? " (user "
								    : "",
				    why && rc == -EACCES && e->user ? e->user
								    : "",
				    why && rc == -EACCES && e->user ? ")" : "");
			if (rc < 0 || rc == ETCD_AUTH_OFF)
				goto out;
		}
		if (cc != CURLE_OK)
			etcd_cause(e, c->h, cc, errbuf, cause, sizeof(cause));
		if (first && cc != CURLE_OK &&
		    etcd_unreached(e, &un, ep, cause)) {
			rc = -EHOSTUNREACH;
			goto out;
		}
		if (etcd_now_ms() > give_up) {
			etcd_fail(e, LOG_ERR,
				  "etcd %s: %s: no member answered within "
				  "%d s: %s",
				  ep, path, ETCD_RETRY_S,
				  cc ? cause : "unavailable");
			rc = -ETIMEDOUT;
			goto out;
		}
		plog(LOG_DEBUG, "etcd %s: %s: %s, trying the next member", ep,
		     path, cc ? cause : (b.p ? b.p : "?"));
		c->ep = (c->ep + 1) % e->neps;
		nanosleep(&(struct timespec){0, pause_ms * 1000000L}, NULL);
		if (pause_ms < 500)
			pause_ms *= 2;
	}
out:
	free(b.p);
	return rc;
}

int etcd_login(struct etcd *e, unsigned gen)
{
	struct json_object *req = NULL, *resp = NULL, *t;
	struct etcd_conn *c = NULL;
	char *token = NULL;
	bool current;
	int rc = 0;

	pthread_mutex_lock(&e->login_lock);
	pthread_mutex_lock(&e->lock);
	current = e->gen == gen;
	pthread_mutex_unlock(&e->lock);
	if (!current)
		goto out; /* another thread authenticated meanwhile */
	req = json_object_new_object();
	c = etcd_get_conn(e);
	if (!c || !req ||
	    etcd_add_json(req, "name", json_object_new_string(e->user)) ||
	    etcd_add_json(req, "password",
			  json_object_new_string(e->password))) {
		rc = -ENOMEM;
		goto out;
	}
	rc = etcd_do(e, c, "/v3/auth/authenticate", req, false, &resp);
	if (rc == ETCD_AUTH_OFF) {
		plog(LOG_NOTICE,
		     "etcd: the cluster has authentication off: requests go "
		     "without user %s's token",
		     e->user);
		rc = 0;
	} else if (!rc) {
		token = json_object_object_get_ex(resp, "token", &t)
			    ? strdup(json_object_get_string(t))
			    : NULL;
		if (!token)
			rc = -ENOMEM;
	}
	if (!rc) {
		pthread_mutex_lock(&e->lock);
		free(e->token);
		e->token = token;
		e->gen++;
		pthread_mutex_unlock(&e->lock);
		plog(LOG_DEBUG, "etcd: authenticated as user %s%s", e->user,
		     gen ? " again (etcd forgot the token)" : "");
	}
out:
	if (c)
		etcd_put_conn(e, c);
	json_object_put(req);
	json_object_put(resp);
	pthread_mutex_unlock(&e->login_lock);
	return rc;
}

int etcd_call(struct etcd *e, const char *path, struct json_object *req,
	      struct json_object **resp)
{
	struct etcd_conn *c = etcd_get_conn(e);
	int rc;

	if (!c)
		return -ENOMEM;
	rc = etcd_do(e, c, path, req, true, resp);
	if (rc == ETCD_AUTH_OFF)
		rc = -EIO; /* not an authentication: etcd said nonsense */
	etcd_put_conn(e, c);
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
