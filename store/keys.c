/*
 * keys.c - building and decoding the keys of a drive (layout in keys_i.h),
 * checking paths and drive names, and the small growable buffer every
 * builder appends to.
 *
 * The one rule everything rests on: a node key is the parent path, "//", then
 * the name, so the children of P are the run PATH#P// and the whole branch
 * below P is the run PATH#P/ — with the trailing slash, or /docs would also
 * match /docs-archive. Nothing here escapes bytes: names never hold '/' or NUL.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys_i.h"
#include "kv_i.h"
#include "tree.h"

/* ---- sbuf ---------------------------------------------------------------- */

static void sbuf_grow(struct sbuf *b, size_t n)
{
	size_t want = b->len + n + 1;

	if (want <= b->cap)
		return;
	if (b->cap * 2 > want)
		want = b->cap * 2;
	if (want < 64)
		want = 64;
	b->buf = realloc(b->buf, want);
	if (!b->buf)
		abort();
	b->cap = want;
}

void sbuf_reset(struct sbuf *b)
{
	b->len = 0;
	if (b->buf)
		b->buf[0] = '\0';
}

void sbuf_add(struct sbuf *b, const void *p, size_t n)
{
	sbuf_grow(b, n);
	memcpy(b->buf + b->len, p, n);
	b->len += n;
	b->buf[b->len] = '\0';
}

void sbuf_adds(struct sbuf *b, const char *s)
{
	sbuf_add(b, s, strlen(s));
}

void sbuf_addc(struct sbuf *b, char c)
{
	sbuf_add(b, &c, 1);
}

void sbuf_nul(struct sbuf *b)
{
	sbuf_grow(b, 0);
	b->buf[b->len] = '\0';
}

void sbuf_release(struct sbuf *b)
{
	free(b->buf);
	b->buf = NULL;
	b->len = b->cap = 0;
}

void key_list_add(struct key_list *l, const char *key, size_t len)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->end = realloc(l->end, l->cap * sizeof(*l->end));
		if (!l->end)
			abort();
	}
	sbuf_add(&l->keys, key, len);
	l->end[l->n++] = l->keys.len;
}

const char *key_list_key(const struct key_list *l, size_t i, size_t *len)
{
	size_t at = i ? l->end[i - 1] : 0;

	*len = l->end[i] - at;
	return l->keys.buf + at;
}

void key_list_reset(struct key_list *l)
{
	sbuf_reset(&l->keys);
	l->n = 0;
}

void key_list_release(struct key_list *l)
{
	sbuf_release(&l->keys);
	free(l->end);
	l->end = NULL;
	l->n = l->cap = 0;
}

/* ---- paths and drive names ----------------------------------------------- */

int store_drive_name_check(const char *name)
{
	size_t n;

	if (!name)
		return -EINVAL;
	n = strlen(name);
	if (n < 1 || n > TREE_DRIVE_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '-'))
			return -EINVAL;
	}
	return 0;
}

int tree_path_check(const char *path)
{
	size_t total = 0;
	const char *p = path;

	if (!path || path[0] != '/')
		return -EINVAL;
	if (path[1] == '\0')
		return 0;
	while (*p == '/') {
		const char *name = p + 1;
		const char *end = strchr(name, '/');
		size_t n = end ? (size_t)(end - name) : strlen(name);

		if (n == 0)
			return -EINVAL; /* "//" or a trailing "/" */
		if (n > TREE_NAME_MAX)
			return -ENAMETOOLONG;
		if ((n == 1 && name[0] == '.') ||
		    (n == 2 && name[0] == '.' && name[1] == '.'))
			return -EINVAL;
		total += n + 1;
		if (total > TREE_PATH_MAX)
			return -ENAMETOOLONG;
		p = name + n;
	}
	return 0;
}

char *tree_escape(const char *p, size_t n, unsigned flags)
{
	bool name = flags & TREE_ESC_NAME;
	struct sbuf o = {0};

	sbuf_nul(&o);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		char hex[8];

		if (name && c == '\\') {
			sbuf_adds(&o, "\\\\");
		} else if (c < 0x20 || c == 0x7f || c == '\\' ||
			   (!name && c > 0x7e)) {
			snprintf(hex, sizeof(hex), "\\x%02x", c);
			sbuf_adds(&o, hex);
		} else {
			sbuf_addc(&o, (char)c);
		}
	}
	return o.buf;
}

char *path_parent(const char *path)
{
	size_t n = path_parent_len(path);
	struct sbuf b = {0};

	sbuf_add(&b, path, n ? n : 1);
	return b.buf;
}

size_t path_parent_len(const char *path)
{
	const char *slash = strrchr(path, '/');
	return (size_t)(slash - path);
}

const char *path_name(const char *path)
{
	return strrchr(path, '/') + 1;
}

bool tree_path_is_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1) /* "/" holds everything */
		return true;
	return strncmp(path, dir, n) == 0 &&
	       (path[n] == '\0' || path[n] == '/');
}

/* ---- keys ---------------------------------------------------------------- */

/* What follows "DRIVE#<d>|" in a key of each kind (keys_i.h). */
static const char *const kind_names[KEY_KINDS] = {
    [KEY_META] = "META",      [KEY_PATH] = "PATH#",
    [KEY_DATA] = "DATA#",     [KEY_XATTR] = "XATTR#",
    [KEY_INODE] = "INODE#",   [KEY_ORPHAN] = "ORPHAN#",
    [KEY_PARENT] = "PARENT#", [KEY_JOURNAL] = "JOURNAL#",
    [KEY_XTMP] = "XTMP#",     [KEY_SECRET] = "SECRET",
    [KEY_LOCKS] = "LOCKS",    [KEY_HOLD] = "HOLD#",
    [KEY_LONE] = "LONE",
};

const char *key_kind_name(enum key_kind kind)
{
	return kind_names[kind];
}

void key_drive_prefix(struct sbuf *b, const char *drive)
{
	sbuf_adds(b, "DRIVE#");
	sbuf_adds(b, drive);
	sbuf_addc(b, '|');
}

void key_drive_range(struct sbuf *lo, struct sbuf *hi, const char *drive)
{
	key_drive_prefix(lo, drive);
	key_drive_prefix(hi, drive);
	hi->buf[hi->len - 1] = '|' + 1;
}

void key_meta(struct sbuf *b, const char *drive)
{
	key_drive_prefix(b, drive);
	sbuf_adds(b, kind_names[KEY_META]);
}

/* Appends PATH# and @dir's part of a key: "" for the root, else the path. */
static void key_dir_part(struct sbuf *b, const char *drive, const char *dir)
{
	key_drive_prefix(b, drive);
	sbuf_adds(b, kind_names[KEY_PATH]);
	if (strcmp(dir, "/") != 0)
		sbuf_adds(b, dir);
}

void key_node(struct sbuf *b, const char *drive, const char *path)
{
	size_t plen;

	if (strcmp(path, "/") == 0) {
		key_drive_prefix(b, drive);
		sbuf_adds(b, "PATH#/");
		return;
	}
	plen = path_parent_len(path);
	key_drive_prefix(b, drive);
	sbuf_adds(b, kind_names[KEY_PATH]);
	sbuf_add(b, path, plen);
	sbuf_adds(b, "//");
	sbuf_adds(b, path + plen + 1);
}

void key_child(struct sbuf *b, const char *drive, const char *dir,
	       const char *name, size_t nlen)
{
	key_dir_part(b, drive, dir);
	sbuf_adds(b, "//");
	sbuf_add(b, name, nlen);
}

void key_children_range(struct sbuf *lo, struct sbuf *hi, const char *drive,
			const char *dir)
{
	key_dir_part(lo, drive, dir);
	sbuf_adds(lo, "//");
	key_dir_part(hi, drive, dir);
	sbuf_adds(hi, "/0"); /* '0' is the byte after '/' */
}

void key_subtree_range(struct sbuf *lo, struct sbuf *hi, const char *drive,
		       const char *dir)
{
	key_dir_part(lo, drive, dir);
	sbuf_addc(lo, '/');
	key_dir_part(hi, drive, dir);
	sbuf_addc(hi, '0');
}

int key_node_decode(const char *key, size_t len, size_t plen, struct sbuf *path)
{
	const char *p, *end = key + len, *dd;

	if (len < plen + 6 || memcmp(key + plen, "PATH#", 5) != 0)
		return -EINVAL;
	p = key + plen + 5;
	if (end - p == 1 && *p == '/') {
		sbuf_addc(path, '/');
		return 0;
	}
	/* the one "//" separates parent and name */
	dd = memmem(p, (size_t)(end - p), "//", 2);
	if (!dd || dd + 2 >= end || memchr(p, '\0', (size_t)(end - p)))
		return -EINVAL;
	if (dd != p && *p != '/')
		return -EINVAL;
	if (memchr(dd + 2, '/', (size_t)(end - dd - 2)))
		return -EINVAL;
	sbuf_add(path, p, (size_t)(dd - p));
	sbuf_add(path, dd + 1, (size_t)(end - dd - 1));
	return 0;
}

/* Appends @sep (if not NUL) and @v as 16 lowercase hex digits: what
 * "%016llx" gives, without snprintf's ~900 instructions on every request's
 * key (kept apart from hex16() below, its inverse). */
static void add_hex16(struct sbuf *b, char sep, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char hex[17];
	size_t n = 0;

	if (sep)
		hex[n++] = sep;
	for (int shift = 60; shift >= 0; shift -= 4)
		hex[n++] = digits[(v >> shift) & 0xf];
	sbuf_add(b, hex, n);
}

static void key_kind_ino(struct sbuf *b, const char *drive, enum key_kind kind,
			 uint64_t ino)
{
	key_drive_prefix(b, drive);
	sbuf_adds(b, kind_names[kind]);
	add_hex16(b, '\0', ino);
}

void key_data(struct sbuf *b, const char *drive, uint64_t ino, uint64_t blk)
{
	key_kind_ino(b, drive, KEY_DATA, ino);
	add_hex16(b, '#', blk);
}

void key_data_range(struct sbuf *lo, struct sbuf *hi, const char *drive,
		    uint64_t ino, uint64_t from)
{
	key_data(lo, drive, ino, from);
	key_kind_ino(hi, drive, KEY_DATA, ino);
	sbuf_addc(hi, '#' + 1);
}

static int hex16(const char *p, uint64_t *v)
{
	uint64_t x = 0;

	for (int i = 0; i < 16; i++) {
		char c = p[i];
		int d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else
			return -EINVAL;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return 0;
}

int key_ino_decode(const char *key, size_t len, size_t plen, enum key_kind kind,
		   uint64_t *ino)
{
	size_t kl = strlen(kind_names[kind]);

	if (len < plen + kl + 16 ||
	    memcmp(key + plen, kind_names[kind], kl) != 0)
		return -EINVAL;
	return hex16(key + plen + kl, ino);
}

int key_data_decode(const char *key, size_t len, size_t plen, uint64_t *ino,
		    uint64_t *blk)
{
	int rc = key_ino_decode(key, len, plen, KEY_DATA, ino);

	if (rc)
		return rc;
	if (len != plen + 5 + 16 + 17 || key[plen + 21] != '#')
		return -EINVAL;
	return hex16(key + plen + 22, blk);
}

void key_xattr(struct sbuf *b, const char *drive, uint64_t ino,
	       const char *name)
{
	key_kind_ino(b, drive, KEY_XATTR, ino);
	sbuf_addc(b, '#');
	sbuf_adds(b, name);
}

void key_xattr_range(struct sbuf *lo, struct sbuf *hi, const char *drive,
		     uint64_t ino)
{
	key_kind_ino(lo, drive, KEY_XATTR, ino);
	sbuf_addc(lo, '#');
	key_kind_ino(hi, drive, KEY_XATTR, ino);
	sbuf_addc(hi, '#' + 1);
}

void key_kind_range(struct sbuf *lo, struct sbuf *hi, const char *drive,
		    enum key_kind kind_)
{
	const char *kind = kind_names[kind_];
	size_t n = strlen(kind);

	key_drive_prefix(lo, drive);
	sbuf_adds(lo, kind);
	key_drive_prefix(hi, drive);
	sbuf_add(hi, kind, n - 1);
	sbuf_addc(hi, (char)(kind[n - 1] + 1));
}

void key_inode(struct sbuf *b, const char *drive, uint64_t ino)
{
	key_kind_ino(b, drive, KEY_INODE, ino);
}

void key_orphan(struct sbuf *b, const char *drive, uint64_t ino)
{
	key_kind_ino(b, drive, KEY_ORPHAN, ino);
}

void key_hold(struct sbuf *b, const char *drive, uint64_t ino)
{
	key_kind_ino(b, drive, KEY_HOLD, ino);
}

void key_parent(struct sbuf *b, const char *drive, uint64_t ino)
{
	key_kind_ino(b, drive, KEY_PARENT, ino);
}

void key_journal(struct sbuf *b, const char *drive, uint64_t seq)
{
	key_kind_ino(b, drive, KEY_JOURNAL, seq);
}

void key_xtmp_range(struct sbuf *lo, struct sbuf *hi, const char *drive,
		    uint64_t seq)
{
	key_kind_ino(lo, drive, KEY_XTMP, seq);
	sbuf_addc(lo, '/');
	key_kind_ino(hi, drive, KEY_XTMP, seq);
	sbuf_addc(hi, '/' + 1);
}

void key_xtmp_map(struct sbuf *b, const char *drive, uint64_t seq, uint64_t ino)
{
	key_kind_ino(b, drive, KEY_XTMP, seq);
	add_hex16(b, '/', ino);
}

void key_xtmp_mark(struct sbuf *b, const char *drive, uint64_t seq)
{
	key_kind_ino(b, drive, KEY_XTMP, seq);
}

void key_secret(struct sbuf *b, const char *drive)
{
	key_drive_prefix(b, drive);
	sbuf_adds(b, kind_names[KEY_SECRET]);
}

void key_locks(struct sbuf *b, const char *drive)
{
	key_drive_prefix(b, drive);
	sbuf_adds(b, kind_names[KEY_LOCKS]);
}

void key_id_hex(char hex[KEY_ID_HEX], uint64_t id)
{
	static const char digits[] = "0123456789abcdef";

	for (int i = KEY_ID_HEX - 1; i >= 0; i--, id >>= 4)
		hex[i] = digits[id & 0xf];
}

void key_lone(struct sbuf *b, const char *drive)
{
	key_drive_prefix(b, drive);
	sbuf_adds(b, kind_names[KEY_LONE]);
}

int key_family(const char *key, size_t len)
{
	const char *bar, *kind;

	if (len < 6 || memcmp(key, "DRIVE#", 6) != 0)
		return KV_ANY;
	bar = memchr(key + 6, '|', len - 6);
	if (!bar || bar + 1 == key + len)
		return KV_ANY;
	kind = bar + 1;
	/* "DATA" and not "DATA#": the upper bound of all blocks is DATA$ */
	if (key + len - kind >= 4 && memcmp(kind, "DATA", 4) == 0)
		return KV_CONTENT;
	return KV_TREE;
}
