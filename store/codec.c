/*
 * codec.c - the binary encodings of node and META values, and the varints
 * they (and journal records and tokens) are made of.
 *
 * Every value starts with a version byte so the format can evolve; a decoder
 * meeting a version it does not know, a truncated value or trailing garbage
 * returns -EIO and never reads past the buffer. Integers are LEB128 varints
 * (signed ones zigzag-encoded), so a typical node value is about 30 bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec_i.h"
#include "drive_i.h"

void put_varint(struct sbuf *b, uint64_t v)
{
	char tmp[10];
	size_t n = 0;

	while (v >= 0x80) {
		tmp[n++] = (char)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (char)v;
	sbuf_add(b, tmp, n);
}

int get_varint(const char **p, const char *end, uint64_t *v)
{
	uint64_t x = 0;
	unsigned shift = 0;
	const unsigned char *q = (const unsigned char *)*p;

	while ((const char *)q < end) {
		unsigned char c = *q++;
		if (shift == 63 && c > 1)
			return -EIO; /* would overflow 64 bits */
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*p = (const char *)q;
			*v = x;
			return 0;
		}
		shift += 7;
		if (shift > 63)
			return -EIO;
	}
	return -EIO;
}

void put_bytes(struct sbuf *b, const void *p, size_t n)
{
	put_varint(b, n);
	sbuf_add(b, p, n);
}

int get_bytes(const char **p, const char *end, const char **s, size_t *n)
{
	uint64_t len;

	if (get_varint(p, end, &len))
		return -EIO;
	if (len > (uint64_t)(end - *p))
		return -EIO;
	*s = *p;
	*n = (size_t)len;
	*p += len;
	return 0;
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

void node_encode(struct sbuf *out, const struct tree_attr *a,
		 const char *target)
{
	bool counted = a->blocks != TREE_BLOCKS_UNKNOWN;

	sbuf_addc(out, counted ? NODE_VERSION : NODE_VERSION_1);
	put_varint(out, a->flags);
	put_varint(out, a->ino);
	put_varint(out, a->mode);
	put_varint(out, a->uid);
	put_varint(out, a->gid);
	put_varint(out, a->size);
	put_varint(out, a->nlink);
	put_varint(out, a->rdev);
	put_varint(out, zigzag(a->atime_ns));
	put_varint(out, zigzag(a->mtime_ns));
	put_varint(out, zigzag(a->ctime_ns));
	put_bytes(out, target ? target : "", target ? strlen(target) : 0);
	if (counted)
		put_varint(out, a->blocks);
}

void node_encode_stub(struct sbuf *out, uint64_t ino, mode_t mode)
{
	sbuf_addc(out, NODE_VERSION_1);
	put_varint(out, TREE_F_LINKED);
	put_varint(out, ino);
	put_varint(out, mode);
}

int node_decode(const char *buf, size_t len, struct node *n, bool want_target)
{
	const char *p = buf, *end = buf + len, *t;
	uint64_t v[11];
	size_t tlen;

	memset(n, 0, sizeof(*n));
	if (len < 1 || (buf[0] != NODE_VERSION && buf[0] != NODE_VERSION_1))
		return -EIO;
	p++;
	for (int i = 0; i < 3; i++)
		if (get_varint(&p, end, &v[i]))
			return -EIO;
	n->a.flags = (uint32_t)v[0];
	n->a.ino = v[1];
	n->a.mode = (mode_t)v[2];
	if (v[2] > 0xffffffffu || n->a.ino == 0 || (n->a.mode & S_IFMT) == 0)
		return -EIO;
	if (p == end) {
		if (!(n->a.flags & TREE_F_LINKED))
			return -EIO; /* only stubs stop here */
		return 0;
	}
	for (int i = 3; i < 11; i++)
		if (get_varint(&p, end, &v[i]))
			return -EIO;
	if (get_bytes(&p, end, &t, &tlen))
		return -EIO;
	if (buf[0] == NODE_VERSION_1)
		n->a.blocks = S_ISREG(n->a.mode) ? TREE_BLOCKS_UNKNOWN : 0;
	else if (get_varint(&p, end, &n->a.blocks) ||
		 n->a.blocks == TREE_BLOCKS_UNKNOWN)
		return -EIO;
	if (p != end)
		return -EIO;
	if (v[3] > 0xffffffffu || v[4] > 0xffffffffu || v[6] > 0xffffffffu)
		return -EIO;
	n->a.uid = (uid_t)v[3];
	n->a.gid = (gid_t)v[4];
	n->a.size = v[5];
	n->a.nlink = (uint32_t)v[6];
	n->a.rdev = v[7];
	n->a.atime_ns = unzigzag(v[8]);
	n->a.mtime_ns = unzigzag(v[9]);
	n->a.ctime_ns = unzigzag(v[10]);
	if (S_ISLNK(n->a.mode) ? tlen == 0 : tlen != 0)
		return -EIO;
	if (memchr(t, '\0', tlen))
		return -EIO;
	if (want_target && tlen) {
		n->target = malloc(tlen + 1);
		if (!n->target)
			return -ENOMEM;
		memcpy(n->target, t, tlen);
		n->target[tlen] = '\0';
	}
	return 0;
}

void node_release(struct node *n)
{
	free(n->target);
	n->target = NULL;
}

#define META_VERSION 1

void meta_encode(struct sbuf *out, const struct meta *m)
{
	sbuf_addc(out, META_VERSION);
	put_varint(out, m->format);
	put_varint(out, zigzag(m->created_ns));
	put_varint(out, m->block_size);
	put_varint(out, m->ino_hwm);
}

int meta_decode(const char *buf, size_t len, struct meta *m)
{
	const char *p = buf, *end = buf + len;
	uint64_t v[4];

	memset(m, 0, sizeof(*m));
	if (len < 1 || buf[0] != META_VERSION)
		return -EIO;
	p++;
	for (int i = 0; i < 4; i++)
		if (get_varint(&p, end, &v[i]))
			return -EIO;
	if (p != end)
		return -EIO;
	if (v[0] > TREE_FORMAT_VERSION)
		return -EPROTONOSUPPORT;
	if (v[0] == 0 || v[2] < 512 || v[2] > (16u << 20) ||
	    (v[2] & (v[2] - 1)))
		return -EIO;
	m->format = (uint32_t)v[0];
	m->created_ns = unzigzag(v[1]);
	m->block_size = (uint32_t)v[2];
	m->ino_hwm = v[3];
	return 0;
}
