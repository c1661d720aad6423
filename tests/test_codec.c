/*
 * test_codec.c - store/codec.c: varints at their boundaries, node values
 * (every attribute and a symlink target round-trip; a hard-link stub; a
 * version-1 record without a block count), META values, and what a decoder
 * must refuse with -EIO: a value cut short at any length, trailing bytes, an
 * unknown version, a varint past 64 bits. A META of a newer format is
 * -EPROTONOSUPPORT.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "codec_i.h"
#include "node_i.h"

Test(codec, varints_round_trip_at_their_boundaries)
{
	static const uint64_t vals[] = {
	    0, 1, 127, 128, 16383, 16384, 1ULL << 35, 1ULL << 63, UINT64_MAX};
	struct sbuf b = {0};
	const char *p, *end;
	uint64_t v;

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		put_varint(&b, vals[i]);
	cr_expect_eq(b.len, 1 + 1 + 1 + 2 + 2 + 3 + 6 + 10 + 10);
	p = b.buf;
	end = b.buf + b.len;
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		cr_assert_eq(get_varint(&p, end, &v), 0);
		cr_expect_eq(v, vals[i]);
	}
	cr_expect_eq(p, end);
	cr_expect_eq(get_varint(&p, end, &v), -EIO, "nothing left");
	sbuf_release(&b);
}

Test(codec, varint_past_64_bits_or_cut_is_refused)
{
	const char over[] = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02";
	const char cut[] = "\x80\x80";
	const char *p = over;
	uint64_t v;

	cr_expect_eq(get_varint(&p, over + 10, &v), -EIO);
	p = cut;
	cr_expect_eq(get_varint(&p, cut + 2, &v), -EIO);
}

Test(codec, bytes_round_trip)
{
	struct sbuf b = {0};
	const char *p, *s;
	size_t n;

	put_bytes(&b, "a\0b", 3);
	put_bytes(&b, "", 0);
	p = b.buf;
	cr_assert_eq(get_bytes(&p, b.buf + b.len, &s, &n), 0);
	cr_expect_eq(n, 3);
	cr_expect_arr_eq(s, "a\0b", 3);
	cr_assert_eq(get_bytes(&p, b.buf + b.len, &s, &n), 0);
	cr_expect_eq(n, 0);
	cr_expect_eq(p, b.buf + b.len);
	/* a length past the end */
	p = b.buf;
	cr_expect_eq(get_bytes(&p, b.buf + 2, &s, &n), -EIO);
	sbuf_release(&b);
}

static struct tree_attr sample(mode_t mode)
{
	struct tree_attr a = {.ino = 0x123456789aULL,
			      .mode = mode,
			      .uid = 4000000000u,
			      .gid = 7,
			      .size = 1ULL << 40,
			      .nlink = 3,
			      .rdev = 0x0801,
			      .atime_ns = -1,
			      .mtime_ns = INT64_MIN + 1,
			      .ctime_ns = INT64_MAX,
			      .flags = 0,
			      .blocks = 17};

	return a;
}

/* node_decode()'s answer for the @len bytes at @buf (the node released). */
static int decode_rc(const char *buf, size_t len)
{
	struct node n;
	int rc = node_decode(buf, len, &n, true);

	node_release(&n);
	return rc;
}

/* node_decode()'s answer for @a encoded with symlink @target (or NULL). */
static int encoded_rc(const struct tree_attr *a, const char *target)
{
	struct sbuf b = {0};
	int rc;

	node_encode(&b, a, target);
	rc = decode_rc(b.buf, b.len);
	sbuf_release(&b);
	return rc;
}

Test(codec, node_round_trips_every_attribute)
{
	struct tree_attr a = sample(S_IFREG | 04755);
	struct sbuf b = {0};
	struct node n;

	node_encode(&b, &a, NULL);
	cr_assert_eq(node_decode(b.buf, b.len, &n, true), 0);
	cr_expect_eq(n.a.ino, a.ino);
	cr_expect_eq(n.a.mode, a.mode);
	cr_expect_eq(n.a.uid, a.uid);
	cr_expect_eq(n.a.gid, a.gid);
	cr_expect_eq(n.a.size, a.size);
	cr_expect_eq(n.a.nlink, a.nlink);
	cr_expect_eq(n.a.rdev, a.rdev);
	cr_expect_eq(n.a.atime_ns, a.atime_ns);
	cr_expect_eq(n.a.mtime_ns, a.mtime_ns);
	cr_expect_eq(n.a.ctime_ns, a.ctime_ns);
	cr_expect_eq(n.a.flags, a.flags);
	cr_expect_eq(n.a.blocks, a.blocks);
	cr_expect_null(n.target);
	node_release(&n);
	sbuf_release(&b);
}

Test(codec, symlink_keeps_its_target)
{
	struct tree_attr a = sample(S_IFLNK | 0777);
	struct sbuf b = {0};
	struct node n;

	a.blocks = 0;
	a.size = 9;
	node_encode(&b, &a, "../t\xc3\xa9/x");
	cr_assert_eq(node_decode(b.buf, b.len, &n, true), 0);
	cr_expect_str_eq(n.target, "../t\xc3\xa9/x");
	node_release(&n);
	/* not wanted: not copied */
	cr_assert_eq(node_decode(b.buf, b.len, &n, false), 0);
	cr_expect_null(n.target);
	node_release(&n);
	sbuf_release(&b);
	/* a symlink without a target, or a file with one, does not decode */
	cr_expect_eq(encoded_rc(&a, NULL), -EIO);
	a.mode = S_IFREG | 0644;
	cr_expect_eq(encoded_rc(&a, "x"), -EIO);
}

Test(codec, stub_decodes_with_the_rest_zero)
{
	struct sbuf b = {0};
	struct node n;

	node_encode_stub(&b, 99, S_IFREG | 0600);
	cr_assert_eq(node_decode(b.buf, b.len, &n, true), 0);
	cr_expect_eq(n.a.flags, TREE_F_LINKED);
	cr_expect_eq(n.a.ino, 99);
	cr_expect_eq(n.a.mode, S_IFREG | 0600);
	cr_expect_eq(n.a.size, 0);
	cr_expect_eq(n.a.nlink, 0);
	cr_expect_eq(n.a.blocks, 0);
	node_release(&n);
	sbuf_release(&b);
}

/* A record written before the block count was kept (version 1) decodes
 * with the count unknown for a regular file, 0 for others, and encodes
 * back to version 1 while it is unknown. */
Test(codec, version_1_has_no_block_count)
{
	struct tree_attr a = sample(S_IFREG | 0644);
	struct sbuf b = {0};
	struct node n;

	a.blocks = TREE_BLOCKS_UNKNOWN;
	node_encode(&b, &a, NULL);
	cr_expect_eq(b.buf[0], NODE_VERSION_1);
	cr_assert_eq(node_decode(b.buf, b.len, &n, true), 0);
	cr_expect_eq(n.a.blocks, TREE_BLOCKS_UNKNOWN);
	node_release(&n);
	sbuf_reset(&b);
	a.mode = S_IFDIR | 0755;
	node_encode(&b, &a, NULL);
	cr_assert_eq(node_decode(b.buf, b.len, &n, true), 0);
	cr_expect_eq(n.a.blocks, 0);
	node_release(&n);
	sbuf_release(&b);
}

Test(codec, node_cut_extended_or_of_another_version_is_refused)
{
	struct tree_attr a = sample(S_IFLNK | 0777);
	struct sbuf b = {0};

	a.blocks = 0;
	node_encode(&b, &a, "target");
	for (size_t len = 0; len < b.len; len++)
		cr_expect_eq(decode_rc(b.buf, len), -EIO, "cut at %zu of %zu",
			     len, b.len);
	sbuf_addc(&b, 0);
	cr_expect_eq(decode_rc(b.buf, b.len), -EIO, "trailing");
	b.len--;
	b.buf[0] = NODE_VERSION + 1;
	cr_expect_eq(decode_rc(b.buf, b.len), -EIO, "version");
	sbuf_release(&b);
}

Test(codec, meta_round_trip_and_newer_format)
{
	struct meta m = {.format = TREE_FORMAT_VERSION,
			 .created_ns = -5,
			 .block_size = 65536,
			 .ino_hwm = 1ULL << 40},
		    d;
	struct sbuf b = {0};

	meta_encode(&b, &m);
	cr_assert_eq(meta_decode(b.buf, b.len, &d), 0);
	cr_expect_eq(d.format, m.format);
	cr_expect_eq(d.created_ns, m.created_ns);
	cr_expect_eq(d.block_size, m.block_size);
	cr_expect_eq(d.ino_hwm, m.ino_hwm);
	for (size_t len = 0; len < b.len; len++)
		cr_expect_eq(meta_decode(b.buf, len, &d), -EIO, "cut at %zu",
			     len);
	sbuf_reset(&b);
	m.format = TREE_FORMAT_VERSION + 1;
	meta_encode(&b, &m);
	cr_expect_eq(meta_decode(b.buf, b.len, &d), -EPROTONOSUPPORT);
	sbuf_reset(&b);
	m.format = TREE_FORMAT_VERSION;
	m.block_size = 1000; /* not a power of two */
	meta_encode(&b, &m);
	cr_expect_eq(meta_decode(b.buf, b.len, &d), -EIO);
	sbuf_release(&b);
}
