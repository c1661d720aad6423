/*
 * codec_i.h - the pieces every value codec of store/ is built from (varints,
 * length-prefixed bytes: journal records, tokens, the reverse index) and the
 * drive's META value (codec.c). Node values: node_i.h.
 *
 * Internal to store/. fs/ and tools/ use tree.h only.
 */
#ifndef PATHFS_CODEC_I_H
#define PATHFS_CODEC_I_H

#include <stddef.h>
#include <stdint.h>

#include "keys_i.h"

/* ---- META value ----------------------------------------------------------
 * Version byte, then varints: format version, created ns (zigzag), block size,
 * inode high-water mark. */
struct meta {
	uint32_t format;
	int64_t created_ns;
	uint32_t block_size;
	uint64_t ino_hwm; /* every inode number in use is below this */
};
void meta_encode(struct sbuf *out, const struct meta *m);
/* Errors: -EIO (does not decode), -EPROTONOSUPPORT (format too new). */
int meta_decode(const char *buf, size_t len, struct meta *m);

/* varint helpers shared by the codecs (journal records, tokens) */
void put_varint(struct sbuf *b, uint64_t v);
/* Reads a varint at *p (< end), advancing *p. Errors: -EIO. */
int get_varint(const char **p, const char *end, uint64_t *v);
void put_bytes(struct sbuf *b, const void *p,
	       size_t n); /* varint length + bytes */
/* Borrowed pointer into the buffer. Errors: -EIO. */
int get_bytes(const char **p, const char *end, const char **s, size_t *n);

#endif
