/*
 * token.c - what a whole-branch operation reports (struct tree_op_result) and
 * the resume token of one that stopped early.
 *
 * Tokens: base64url (A-Z a-z 0-9 - _) of {version, op, phase, seq, source
 * drive, source path, destination drive, destination path, cursor, flags}
 * followed by a SipHash-2-4 tag keyed by a 128-bit secret kept in the source
 * drive (DRIVE#<d>|SECRET, created when the drive issues its first token,
 * under the drive's secret_lock). A token that is truncated, edited, forged,
 * or issued for another operation, path or drive is -EINVAL before anything
 * changes (checking one writes nothing, not even a secret).
 *
 * Limits: a token holds two paths and a cursor, at most ~88 KiB of base64
 * (see TREE_PATH_MAX in tree.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "branch_i.h"
#include "codec_i.h"
#include "drive_i.h"
#include "log.h"
#include "siphash.h"

#define TOKEN_VERSION 1
#define SECRET_LEN    SIPHASH_KEY_LEN

/* ---- results ------------------------------------------------------------ */

void tree_op_result_release(struct tree_op_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nfailures; i++)
		free(r->failures[i]);
	free(r->failures);
	free(r->token);
	memset(r, 0, sizeof(*r));
}

void op_fail(struct tree_op_result *r, const char *path, const char *fmt, ...)
{
	char reason[256], *line;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	r->failed++;
	if (asprintf(&line, "%s: %s", path, reason) < 0)
		abort();
	r->failures =
	    realloc(r->failures, (r->nfailures + 1) * sizeof(*r->failures));
	if (!r->failures)
		abort();
	r->failures[r->nfailures++] = line;
}

/* ---- tokens ------------------------------------------------------------- */

/*
 * The drive's token secret, created on first use when @create. Without
 * @create a drive with no (good) secret has issued no token that is still
 * valid: -EINVAL, and nothing is written. Errors: -EIO, -ENOSPC, -EROFS.
 */
static int drive_secret(struct tree *t, uint8_t key[SECRET_LEN], bool create)
{
	struct sbuf k = {0};
	struct kv_batch *b = NULL;
	char *val = NULL;
	size_t vlen;
	int rc;

	key_secret(&k, t->name);
	pthread_mutex_lock(&t->secret_lock);
	rc = kv_get(t->store->kv, k.buf, k.len, &val, &vlen);
	if (rc == 0 && vlen == SECRET_LEN) {
		memcpy(key, val, SECRET_LEN);
		goto out;
	}
	if ((rc == 0 || rc == -ENOENT) && !create) {
		rc = -EINVAL;
		goto out;
	}
	if (rc == 0 || rc == -ENOENT) {
		if (rc == 0)
			plog(LOG_WARNING, "drive %s: bad SECRET, replaced",
			     t->name);
		if (getrandom(key, SECRET_LEN, 0) != SECRET_LEN) {
			rc = -EIO;
			goto out;
		}
		b = kv_batch_new(t->store->kv);
		kv_batch_put(b, k.buf, k.len, (const char *)key, SECRET_LEN);
		rc = tree_commit(t, b);
	}
out:
	pthread_mutex_unlock(&t->secret_lock);
	kv_batch_free(b);
	free(val);
	sbuf_release(&k);
	return rc;
}

void token_release(struct token *k)
{
	sbuf_release(&k->sdrive);
	sbuf_release(&k->src);
	sbuf_release(&k->ddrive);
	sbuf_release(&k->dst);
	sbuf_release(&k->cursor);
}

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void b64_encode(struct sbuf *out, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		size_t left = n - i;

		if (left > 1)
			v |= (uint32_t)p[i + 1] << 8;
		if (left > 2)
			v |= p[i + 2];
		sbuf_addc(out, b64[v >> 18 & 63]);
		sbuf_addc(out, b64[v >> 12 & 63]);
		if (left > 1)
			sbuf_addc(out, b64[v >> 6 & 63]);
		if (left > 2)
			sbuf_addc(out, b64[v & 63]);
	}
}

static int b64_decode(struct sbuf *out, const char *s)
{
	uint32_t v = 0;
	int bits = 0;

	for (; *s; s++) {
		const char *c = strchr(b64, *s);

		if (!c)
			return -EINVAL;
		v = v << 6 | (uint32_t)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			sbuf_addc(out, (char)(v >> bits & 0xff));
		}
	}
	/* leftover bits must be padding zeros of a well-formed encoding */
	if (bits >= 6 || (v & ((1u << bits) - 1)))
		return -EINVAL;
	return 0;
}

static void token_payload(struct sbuf *p, const struct token *k)
{
	sbuf_addc(p, TOKEN_VERSION);
	put_varint(p, k->op);
	put_varint(p, k->phase);
	put_varint(p, k->seq);
	put_varint(p, k->flags);
	put_bytes(p, k->sdrive.buf, k->sdrive.len);
	put_bytes(p, k->src.buf, k->src.len);
	put_bytes(p, k->ddrive.buf, k->ddrive.len);
	put_bytes(p, k->dst.buf, k->dst.len);
	put_bytes(p, k->cursor.buf, k->cursor.len);
}

int token_issue(struct tree *t, const struct token *k, struct tree_op_result *r)
{
	uint8_t key[SECRET_LEN], tag[8];
	struct sbuf p = {0}, o = {0};
	uint64_t mac;
	int rc;

	rc = drive_secret(t, key, true);
	if (rc)
		goto out;
	token_payload(&p, k);
	mac = siphash24(key, p.buf, p.len);
	for (int i = 0; i < 8; i++)
		tag[i] = (uint8_t)(mac >> (8 * i));
	sbuf_add(&p, tag, 8);
	sbuf_nul(&o);
	b64_encode(&o, (const uint8_t *)p.buf, p.len);
	free(r->token);
	r->token = o.buf;
	o.buf = NULL;
out:
	sbuf_release(&p);
	sbuf_release(&o);
	return rc;
}

static int get_tok_sbuf(const char **p, const char *end, struct sbuf *s)
{
	const char *v;
	size_t n;

	if (get_bytes(p, end, &v, &n))
		return -EINVAL;
	sbuf_reset(s);
	sbuf_add(s, v, n);
	sbuf_nul(s);
	return 0;
}

int token_check(struct tree *t, const char *s, uint32_t op, const char *src,
		const char *ddrive, const char *dst, struct token *k)
{
	uint8_t key[SECRET_LEN];
	struct sbuf raw = {0};
	const char *p, *end;
	uint64_t mac = 0, v[4];
	int rc;

	rc = drive_secret(t, key, false);
	if (rc)
		goto out;
	rc = -EINVAL;
	if (b64_decode(&raw, s) || raw.len < 9)
		goto out;
	for (int i = 0; i < 8; i++)
		mac |= (uint64_t)(uint8_t)raw.buf[raw.len - 8 + i] << (8 * i);
	if (siphash24(key, raw.buf, raw.len - 8) != mac)
		goto out;
	p = raw.buf;
	end = raw.buf + raw.len - 8;
	if (*p++ != TOKEN_VERSION)
		goto out;
	for (int i = 0; i < 4; i++)
		if (get_varint(&p, end, &v[i]))
			goto out;
	if (get_tok_sbuf(&p, end, &k->sdrive) ||
	    get_tok_sbuf(&p, end, &k->src) ||
	    get_tok_sbuf(&p, end, &k->ddrive) ||
	    get_tok_sbuf(&p, end, &k->dst) ||
	    get_tok_sbuf(&p, end, &k->cursor) || p != end)
		goto out;
	k->op = (uint32_t)v[0];
	k->phase = (uint32_t)v[1];
	k->seq = v[2];
	k->flags = (unsigned)v[3];
	if (k->op != op || strcmp(k->sdrive.buf, t->name) ||
	    strcmp(k->src.buf, src) ||
	    strcmp(k->ddrive.buf, ddrive ? ddrive : "") ||
	    strcmp(k->dst.buf, dst ? dst : ""))
		goto out;
	rc = 0;
out:
	if (rc == -EINVAL)
		plog(LOG_NOTICE, "drive %s: resume token rejected", t->name);
	sbuf_release(&raw);
	return rc;
}

void token_fill(struct token *k, uint32_t op, struct tree *t, const char *src,
		struct tree *dt, const char *dst)
{
	k->op = op;
	sbuf_reset(&k->sdrive);
	sbuf_adds(&k->sdrive, t->name);
	sbuf_reset(&k->src);
	sbuf_adds(&k->src, src);
	sbuf_reset(&k->ddrive);
	sbuf_adds(&k->ddrive, dt->name);
	sbuf_reset(&k->dst);
	sbuf_adds(&k->dst, dst);
	sbuf_reset(&k->cursor);
	sbuf_nul(&k->cursor);
}
