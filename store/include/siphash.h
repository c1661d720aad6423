/*
 * siphash.h - SipHash-2-4, the keyed 64-bit hash of the store's resume
 * tokens (token.c), the daemon's folder listing offsets (fs/dircookie.c)
 * and the RocksDB engine's versions of keys (kv_get_ver).
 *
 * A keyed hash: without the 16-byte key nobody can make two inputs collide
 * on purpose, nor forge a tag.
 */
#ifndef PATHFS_SIPHASH_H
#define PATHFS_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define SIPHASH_KEY_LEN 16

/* SipHash-2-4 of @len bytes at @data under the 16-byte @key. */
uint64_t siphash24(const uint8_t key[SIPHASH_KEY_LEN], const void *data,
		   size_t len);

#endif
