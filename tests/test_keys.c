/*
 * test_keys.c - store/keys.c: the path rules (tree_path_check,
 * tree_path_is_within, the parent/name split), the key layout's ordering
 * traps (a folder's children and its subtree are one contiguous range that
 * holds no sibling such as "docs-archive", "docs.txt", "docs 2", "docs!" or
 * "docs0"; drive "d1" holds no key of "d10"), and keys that decode back to
 * what built them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keys_i.h"
#include "kv_i.h"
/* Whether @k is in [lo, hi), bytewise as the kv engine orders keys. */
static bool in_range(const struct sbuf *k, const struct sbuf *lo,
		     const struct sbuf *hi)
{
	size_t n = k->len < lo->len ? k->len : lo->len;
	int d = memcmp(k->buf, lo->buf, n);

	if (d < 0 || (d == 0 && k->len < lo->len))
		return false;
	n = k->len < hi->len ? k->len : hi->len;
	d = memcmp(k->buf, hi->buf, n);
	return d < 0 || (d == 0 && k->len < hi->len);
}

static bool node_in(const char *drive, const char *path, const struct sbuf *lo,
		    const struct sbuf *hi)
{
	struct sbuf k = {0};
	bool in;

	key_node(&k, drive, path);
	in = in_range(&k, lo, hi);
	sbuf_release(&k);
	return in;
}

Test(keys, path_check_rules)
{
	static char name[258], path[TREE_PATH_MAX + 2];

	cr_expect_eq(tree_path_check("/"), 0);
	cr_expect_eq(tree_path_check("/a"), 0);
	cr_expect_eq(tree_path_check("/a/b c/.d/..e/..."), 0);
	cr_expect_eq(tree_path_check("/\x01/\xc3\xa9"), 0);
	cr_expect_eq(tree_path_check(""), -EINVAL);
	cr_expect_eq(tree_path_check("a"), -EINVAL);
	cr_expect_eq(tree_path_check("//"), -EINVAL);
	cr_expect_eq(tree_path_check("/a/"), -EINVAL);
	cr_expect_eq(tree_path_check("/a//b"), -EINVAL);
	cr_expect_eq(tree_path_check("/."), -EINVAL);
	cr_expect_eq(tree_path_check("/a/.."), -EINVAL);
	cr_expect_eq(tree_path_check("/a/./b"), -EINVAL);
	name[0] = '/';
	memset(name + 1, 'n', 255);
	name[256] = '\0';
	cr_expect_eq(tree_path_check(name), 0, "a 255-byte name");
	name[256] = 'n';
	name[257] = '\0';
	cr_expect_eq(tree_path_check(name), -ENAMETOOLONG, "a 256-byte name");
	/* "/x/x/.../x" of exactly TREE_PATH_MAX bytes, then one more */
	for (size_t i = 0; i < TREE_PATH_MAX; i += 2) {
		path[i] = '/';
		path[i + 1] = 'x';
	}
	path[TREE_PATH_MAX - 1] = 'y'; /* odd length: ends on a name */
	path[TREE_PATH_MAX] = '\0';
	cr_expect_eq(tree_path_check(path), 0);
	path[TREE_PATH_MAX] = 'z';
	path[TREE_PATH_MAX + 1] = '\0';
	cr_expect_eq(tree_path_check(path), -ENAMETOOLONG);
}

Test(keys, is_within_needs_the_separator)
{
	cr_expect(tree_path_is_within("/docs", "/docs"));
	cr_expect(tree_path_is_within("/docs/a", "/docs"));
	cr_expect(tree_path_is_within("/docs/a/b", "/docs/a"));
	cr_expect(tree_path_is_within("/docs", "/"));
	cr_expect(tree_path_is_within("/", "/"));
	cr_expect_not(tree_path_is_within("/docs-archive", "/docs"));
	cr_expect_not(tree_path_is_within("/docs0", "/docs"));
	cr_expect_not(tree_path_is_within("/docsx/a", "/docs"));
	cr_expect_not(tree_path_is_within("/doc", "/docs"));
	cr_expect_not(tree_path_is_within("/docs", "/docs/a"));
	cr_expect_not(tree_path_is_within("/", "/docs"));
}

Test(keys, parent_and_name)
{
	cr_expect_eq(path_parent_len("/a"), 0);
	cr_expect_eq(path_parent_len("/a/b"), 2);
	cr_expect_eq(path_parent_len("/ab/cd/e"), 6);
	cr_expect_str_eq(path_name("/a"), "a");
	cr_expect_str_eq(path_name("/ab/cd/e"), "e");
}

/* The children of /docs: one run that holds no node of a sibling whose
 * name starts "docs", and no grandchild. */
Test(keys, children_range_is_exact)
{
	struct sbuf lo = {0}, hi = {0}, k = {0};
	static const char *out[] = {"/docs",	 "/docs-archive", "/docs.txt",
				    "/docs 2",	 "/docs!",	  "/docs0",
				    "/docs/a/b", "/doc",	  "/"};

	key_children_range(&lo, &hi, "d", "/docs");
	cr_expect(node_in("d", "/docs/a", &lo, &hi));
	cr_expect(node_in("d", "/docs/\x01", &lo, &hi));
	cr_expect(node_in("d", "/docs/\xff\xff", &lo, &hi));
	for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++)
		cr_expect_not(node_in("d", out[i], &lo, &hi), "%s", out[i]);
	/* key_child builds the same key as key_node of the joined path */
	key_child(&k, "d", "/docs", "a", 1);
	cr_expect(in_range(&k, &lo, &hi));
	{
		struct sbuf n = {0};

		key_node(&n, "d", "/docs/a");
		cr_expect_eq(k.len, n.len);
		cr_expect_arr_eq(k.buf, n.buf, n.len);
		sbuf_release(&n);
	}
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&k);
	/* the root's children: "/a" but not "/a/b" */
	key_children_range(&lo, &hi, "d", "/");
	cr_expect(node_in("d", "/a", &lo, &hi));
	cr_expect_not(node_in("d", "/a/b", &lo, &hi));
	cr_expect_not(node_in("d", "/", &lo, &hi));
	sbuf_release(&lo);
	sbuf_release(&hi);
}

/* The subtree of /docs: every descendant at any depth, nothing else. */
Test(keys, subtree_range_is_exact)
{
	struct sbuf lo = {0}, hi = {0};
	static const char *in[] = {"/docs/a", "/docs/a/b/c", "/docs/\x01",
				   "/docs/\xff"};
	static const char *out[] = {
	    "/docs",  "/docs-archive", "/docs.txt", "/docs 2", "/docs!",
	    "/docs0", "/doc",	       "/",	    "/e"};

	key_subtree_range(&lo, &hi, "d", "/docs");
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		cr_expect(node_in("d", in[i], &lo, &hi), "%s", in[i]);
	for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++)
		cr_expect_not(node_in("d", out[i], &lo, &hi), "%s", out[i]);
	sbuf_release(&lo);
	sbuf_release(&hi);
	/* the root's subtree holds every node (lo is the root key itself) */
	key_subtree_range(&lo, &hi, "d", "/");
	cr_expect(node_in("d", "/", &lo, &hi));
	cr_expect(node_in("d", "/docs-archive/x", &lo, &hi));
	cr_expect(node_in("d", "/\xff", &lo, &hi));
	sbuf_release(&lo);
	sbuf_release(&hi);
}

/* Drive "d1" holds no key of drive "d10" (nor "d1x"). */
Test(keys, drives_are_disjoint)
{
	struct sbuf lo = {0}, hi = {0}, k = {0};

	key_drive_range(&lo, &hi, "d1");
	cr_expect(node_in("d1", "/a", &lo, &hi));
	cr_expect_not(node_in("d10", "/a", &lo, &hi));
	cr_expect_not(node_in("d1x", "/", &lo, &hi));
	key_data(&k, "d10", 5, 0);
	cr_expect_not(in_range(&k, &lo, &hi));
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&k);
}

Test(keys, node_keys_decode_to_their_path)
{
	static const char *paths[] = {"/", "/a", "/docs/a b/\x01\x7f",
				      "/\xc3\xa9t\xc3\xa9/x"};
	struct sbuf pre = {0}, k = {0}, p = {0};

	key_drive_prefix(&pre, "drive-1");
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		sbuf_reset(&k);
		sbuf_reset(&p);
		key_node(&k, "drive-1", paths[i]);
		cr_assert_eq(key_node_decode(k.buf, k.len, pre.len, &p), 0);
		cr_expect_str_eq(p.buf, paths[i]);
	}
	/* not a node key */
	sbuf_reset(&k);
	key_inode(&k, "drive-1", 7);
	sbuf_reset(&p);
	cr_expect_eq(key_node_decode(k.buf, k.len, pre.len, &p), -EINVAL);
	sbuf_release(&pre);
	sbuf_release(&k);
	sbuf_release(&p);
}

/* The numbers in keys are 16 lowercase hex digits, byte for byte what the
 * stores on disk hold ("%016llx"): a key built differently would miss
 * every existing record. */
static void expect_key(struct sbuf *k, const char *want)
{
	cr_expect_eq(k->len, strlen(want), "%.*s: length", (int)k->len, k->buf);
	cr_expect(k->len == strlen(want) && memcmp(k->buf, want, k->len) == 0,
		  "%.*s, want %s", (int)k->len, k->buf, want);
	sbuf_reset(k);
}

Test(keys, number_bytes)
{
	struct sbuf k = {0};

	key_data(&k, "d", 0x1234abcd, 10);
	expect_key(&k, "DRIVE#d|DATA#000000001234abcd#000000000000000a");
	key_data(&k, "d", UINT64_MAX, 0);
	expect_key(&k, "DRIVE#d|DATA#ffffffffffffffff#0000000000000000");
	key_inode(&k, "main", 0xfedcba9876543210ull);
	expect_key(&k, "DRIVE#main|INODE#fedcba9876543210");
	key_parent(&k, "main", 1);
	expect_key(&k, "DRIVE#main|PARENT#0000000000000001");
	key_orphan(&k, "main", 0);
	expect_key(&k, "DRIVE#main|ORPHAN#0000000000000000");
	key_xtmp_map(&k, "x", 7, 0xa0b0c0d0e0f00102ull);
	expect_key(&k, "DRIVE#x|XTMP#0000000000000007/a0b0c0d0e0f00102");
	sbuf_release(&k);
}

/* Content keys sort by inode, then by block number (fixed-width hex, so
 * block 2 sorts before block 10), decode back, and a range from block N
 * holds exactly the blocks >= N of that inode. */
Test(keys, data_keys_order_and_decode)
{
	struct sbuf pre = {0}, a = {0}, b = {0}, lo = {0}, hi = {0};
	uint64_t ino, blk;

	key_drive_prefix(&pre, "d");
	key_data(&a, "d", 0x1234, 2);
	key_data(&b, "d", 0x1234, 10);
	cr_expect_lt(memcmp(a.buf, b.buf, a.len), 0);
	cr_assert_eq(key_data_decode(b.buf, b.len, pre.len, &ino, &blk), 0);
	cr_expect_eq(ino, 0x1234);
	cr_expect_eq(blk, 10);
	key_data_range(&lo, &hi, "d", 0x1234, 5);
	cr_expect_not(in_range(&a, &lo, &hi));
	cr_expect(in_range(&b, &lo, &hi));
	sbuf_reset(&a);
	key_data(&a, "d", 0x1235, 0);
	cr_expect_not(in_range(&a, &lo, &hi), "the next inode's block 0");
	sbuf_reset(&a);
	key_data(&a, "d", UINT64_MAX, UINT64_MAX);
	cr_assert_eq(key_data_decode(a.buf, a.len, pre.len, &ino, &blk), 0);
	cr_expect_eq(ino, UINT64_MAX);
	cr_expect_eq(blk, UINT64_MAX);
	/* a node key is not a data key */
	sbuf_reset(&a);
	key_node(&a, "d", "/x");
	cr_expect_eq(key_data_decode(a.buf, a.len, pre.len, &ino, &blk),
		     -EINVAL);
	sbuf_release(&pre);
	sbuf_release(&a);
	sbuf_release(&b);
	sbuf_release(&lo);
	sbuf_release(&hi);
}

Test(keys, inode_numbers_decode_per_kind)
{
	struct sbuf pre = {0}, k = {0};
	uint64_t ino;

	key_drive_prefix(&pre, "d");
	key_inode(&k, "d", 0xabcdef);
	cr_assert_eq(key_ino_decode(k.buf, k.len, pre.len, KEY_INODE, &ino), 0);
	cr_expect_eq(ino, 0xabcdef);
	cr_expect_eq(key_ino_decode(k.buf, k.len, pre.len, KEY_ORPHAN, &ino),
		     -EINVAL);
	sbuf_reset(&k);
	key_orphan(&k, "d", 42);
	cr_assert_eq(key_ino_decode(k.buf, k.len, pre.len, KEY_ORPHAN, &ino),
		     0);
	cr_expect_eq(ino, 42);
	sbuf_reset(&k);
	key_journal(&k, "d", 9);
	cr_assert_eq(key_ino_decode(k.buf, k.len, pre.len, KEY_JOURNAL, &ino),
		     0);
	cr_expect_eq(ino, 9);
	sbuf_release(&pre);
	sbuf_release(&k);
}

/* Content blocks go to their own kv family, everything else of a drive to
 * the tree's; a bound naming no kind to any. */
Test(keys, family_of_each_kind)
{
	struct sbuf k = {0}, lo = {0}, hi = {0};

	key_data(&k, "d", 1, 0);
	cr_expect_eq(key_family(k.buf, k.len), KV_CONTENT);
	sbuf_reset(&k);
	key_node(&k, "d", "/a");
	cr_expect_eq(key_family(k.buf, k.len), KV_TREE);
	sbuf_reset(&k);
	key_xattr(&k, "d", 1, "user.x");
	cr_expect_eq(key_family(k.buf, k.len), KV_TREE);
	sbuf_reset(&k);
	key_meta(&k, "d");
	cr_expect_eq(key_family(k.buf, k.len), KV_TREE);
	key_data_range(&lo, &hi, "d", 1, 0);
	cr_expect_eq(key_family(lo.buf, lo.len), KV_CONTENT);
	cr_expect_eq(key_family(hi.buf, hi.len), KV_CONTENT);
	sbuf_reset(&lo);
	sbuf_reset(&hi);
	key_drive_range(&lo, &hi, "d");
	cr_expect_eq(key_family(lo.buf, lo.len), KV_ANY);
	sbuf_release(&k);
	sbuf_release(&lo);
	sbuf_release(&hi);
}

/* Each kind's keys lie in its key_kind_range() and in no other kind's, the
 * journal's temporary keys (an exchange's parked keys, a clone's map) in
 * their record's range and not the next record's, and the secret is a key of
 * its own: the layout keys_i.h documents. */
Test(keys, every_kind_in_its_own_range)
{
	struct sbuf k[KEY_KINDS] = {{0}}, lo = {0}, hi = {0}, x = {0};

	key_meta(&k[KEY_META], "d");
	key_node(&k[KEY_PATH], "d", "/a");
	key_data(&k[KEY_DATA], "d", 7, 3);
	key_xattr(&k[KEY_XATTR], "d", 7, "user.a");
	key_inode(&k[KEY_INODE], "d", 7);
	key_orphan(&k[KEY_ORPHAN], "d", 7);
	key_parent(&k[KEY_PARENT], "d", 7);
	key_journal(&k[KEY_JOURNAL], "d", 7);
	key_xtmp_map(&k[KEY_XTMP], "d", 7, 9);
	key_secret(&k[KEY_SECRET], "d");
	key_locks(&k[KEY_LOCKS], "d");
	key_hold(&k[KEY_HOLD], "d", 7);
	key_lone(&k[KEY_LONE], "d");
	for (int r = 0; r < KEY_KINDS; r++) {
		sbuf_reset(&lo);
		sbuf_reset(&hi);
		key_kind_range(&lo, &hi, "d", (enum key_kind)r);
		for (int i = 0; i < KEY_KINDS; i++)
			cr_expect_eq(in_range(&k[i], &lo, &hi), i == r,
				     "key of kind %s in range of %s: %d",
				     key_kind_name((enum key_kind)i),
				     key_kind_name((enum key_kind)r), i == r);
	}
	sbuf_reset(&lo);
	sbuf_reset(&hi);
	key_xtmp_range(&lo, &hi, "d", 7);
	cr_expect(in_range(&k[KEY_XTMP], &lo, &hi));
	key_xtmp_map(&x, "d", 8, 0);
	cr_expect(!in_range(&x, &lo, &hi), "record 8's map in record 7's");
	sbuf_reset(&x);
	key_xtmp_map(&x, "d", 6, UINT64_MAX);
	cr_expect(!in_range(&x, &lo, &hi), "record 6's map in record 7's");
	for (int i = 0; i < KEY_KINDS; i++)
		sbuf_release(&k[i]);
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&x);
}

/* tree_escape(): a name stays one line whatever it holds; a report is
 * ASCII, a listing keeps UTF-8 readable; a NUL inside is escaped too. */
Test(keys, escape_keeps_a_name_on_one_line)
{
	const char in[] = "a\nb\\c\x7f\xc3\xa9\0d";
	char *report = tree_escape(in, sizeof(in) - 1, 0);
	char *name = tree_escape(in, sizeof(in) - 1, TREE_ESC_NAME);

	cr_expect_str_eq(report, "a\\x0ab\\x5cc\\x7f\\xc3\\xa9\\x00d");
	cr_expect_str_eq(name, "a\\x0ab\\\\c\\x7f\xc3\xa9\\x00d");
	free(report);
	free(name);
	report = tree_escape("", 0, 0);
	cr_expect_str_eq(report, "");
	free(report);
}
