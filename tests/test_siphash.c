/*
 * test_siphash.c - store/siphash.c against the reference test vectors of
 * SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF",
 * appendix A, and the reference implementation's vectors.h): key 00 01 ..
 * 0f, message 00 01 .. (n-1). Lengths cover the empty message, every tail
 * length of the last 8-byte word, and several whole words.
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "siphash.h"

static const struct {
	size_t len;
	uint64_t hash;
} vectors[] = {
    {0, 0x726fdb47dd0e0e31ULL},	 {1, 0x74f839c593dc67fdULL},
    {2, 0x0d6c8009d9a94f5aULL},	 {3, 0x85676696d7fb7e2dULL},
    {7, 0xab0200f58b01d137ULL},	 {8, 0x93f5f5799a932462ULL},
    {15, 0xa129ca6149be45e5ULL}, {16, 0x3f2acc7f57c29bdbULL},
    {63, 0x958a324ceb064572ULL},
};

Test(siphash, reference_vectors)
{
	uint8_t key[SIPHASH_KEY_LEN], msg[64];

	for (int i = 0; i < SIPHASH_KEY_LEN; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++)
		cr_expect_eq(
		    siphash24(key, msg, vectors[i].len), vectors[i].hash,
		    "length %zu: %016llx", vectors[i].len,
		    (unsigned long long)siphash24(key, msg, vectors[i].len));
}

/* The key matters: one bit of it changes the hash (a token MAC'd with one
 * drive's secret does not check under another's). */
Test(siphash, another_key_another_hash)
{
	uint8_t key[SIPHASH_KEY_LEN] = {0}, msg[15] = {0};
	uint64_t h = siphash24(key, msg, sizeof(msg));

	for (int bit = 0; bit < 8 * SIPHASH_KEY_LEN; bit++) {
		key[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		cr_expect_neq(siphash24(key, msg, sizeof(msg)), h, "bit %d",
			      bit);
		key[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
}
