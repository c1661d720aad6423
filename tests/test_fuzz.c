/*
 * test_fuzz.c - bounded random-input tests of every decoder of store/: node,
 * META and journal values, node/data/inode keys, path_check; and, through
 * the tree API, listing and looking up nodes whose values are random.
 *
 * Each test runs a few hundred thousand inputs from a fixed seed (override
 * with PATHFS_FUZZ_SEED; the seed is printed on failure): fully random bytes,
 * and valid encodings that are mutated (bytes flipped, cut short, extended).
 * Besides "no crash" (the ASan build catches reads past the buffer), results
 * must be consistent: whatever decodes re-encodes to something that decodes
 * the same, a decoded key rebuilds to the same key, and path_check agrees
 * with an independent reference of the path rules in tree.h.
 *
 * Limits: random, not coverage-guided (no libFuzzer in the suite); inputs are
 * short (up to 300 bytes, 5000 for paths) so the suite stays fast.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_i.h"
#include "journal_i.h"
#include "testutil.h"

#define ROUNDS 200000

static uint64_t seed_state;

static uint64_t rnd(void)
{
	uint64_t x = seed_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	seed_state = x;
	return x;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static uint64_t fuzz_seed(void)
{
	const char *s = getenv("PATHFS_FUZZ_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 0x5eed2026ULL;

	seed_state = seed | 1;
	return seed;
}

/* Random bytes, biased to small numbers and to values that matter. */
static void random_bytes(char *buf, size_t n)
{
	static const unsigned char special[] = {0x00, 0x01, 0x7f, 0x80, 0xff,
						'/',  '#',  '|',  '.',	0xEE};
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = (char)(below(4) ? (unsigned char)rnd()
					 : special[below(sizeof(special))]);
}

/* A valid attribute set, with edge values now and then. */
static void random_attr(struct tree_attr *a)
{
	static const mode_t types[] = {S_IFREG,	 S_IFDIR, S_IFLNK, S_IFIFO,
				       S_IFSOCK, S_IFCHR, S_IFBLK};

	memset(a, 0, sizeof(*a));
	a->ino = below(3) ? 1 + below(1000000) : rnd() | 1;
	a->mode = types[below(7)] | (mode_t)below(07777 + 1);
	a->uid = (uid_t)(below(2) ? below(70000) : rnd());
	a->gid = (gid_t)(below(2) ? below(70000) : rnd());
	a->size = below(2) ? below(1 << 20) : rnd();
	a->nlink = (uint32_t)(below(2) ? below(10) : rnd());
	a->rdev = below(4) ? 0 : rnd();
	a->atime_ns = (int64_t)rnd();
	a->mtime_ns = below(2) ? -(int64_t)below(1000000000) : (int64_t)rnd();
	a->ctime_ns = (int64_t)below(1ULL << 62);
	a->flags = below(4) ? 0 : TREE_F_LINKED;
}

/* Mutates @b in place: flips, cuts or extends it. */
static void mutate(struct sbuf *b)
{
	size_t k, n = 1 + below(4);

	for (k = 0; k < n; k++) {
		switch (below(4)) {
		case 0:
			if (b->len)
				b->buf[below(b->len)] ^= (char)(1 << below(8));
			break;
		case 1:
			if (b->len)
				b->buf[below(b->len)] = (char)rnd();
			break;
		case 2:
			b->len = below(b->len + 1);
			break;
		default: {
			char extra[8];
			size_t m = 1 + below(sizeof(extra));

			random_bytes(extra, m);
			sbuf_add(b, extra, m);
			break;
		}
		}
	}
}

static void expect_same_attr(const struct tree_attr *x,
			     const struct tree_attr *y, uint64_t seed,
			     unsigned long round)
{
	cr_assert(x->ino == y->ino && x->mode == y->mode && x->uid == y->uid &&
		      x->gid == y->gid && x->size == y->size &&
		      x->nlink == y->nlink && x->rdev == y->rdev &&
		      x->atime_ns == y->atime_ns &&
		      x->mtime_ns == y->mtime_ns &&
		      x->ctime_ns == y->ctime_ns && x->flags == y->flags,
		  "re-encoded node decodes differently (seed %llu round %lu): "
		  "ino %llu/%llu mode %o/%o size %llu/%llu flags %x/%x",
		  (unsigned long long)seed, round, (unsigned long long)x->ino,
		  (unsigned long long)y->ino, (unsigned)x->mode,
		  (unsigned)y->mode, (unsigned long long)x->size,
		  (unsigned long long)y->size, x->flags, y->flags);
}

/* Input for round @i: random bytes, or a mutated valid node value. */
static void node_input(struct sbuf *in, unsigned long i)
{
	sbuf_reset(in);
	if (i % 3 == 0) {
		char buf[300];
		size_t n = below(i % 2 ? 40 : sizeof(buf));

		random_bytes(buf, n);
		if (n && below(2))
			buf[0] = NODE_VERSION;
		sbuf_add(in, buf, n);
	} else {
		struct tree_attr a;
		char target[64];

		random_attr(&a);
		if (S_ISLNK(a.mode)) {
			size_t n = 1 + below(sizeof(target) - 1);

			random_bytes(target, n - 1);
			target[n - 1] = '\0';
			for (size_t k = 0; k + 1 < n; k++)
				if (!target[k])
					target[k] = 'x';
			if (!target[0])
				strcpy(target, "t");
		}
		if (below(5) == 0)
			node_encode_stub(in, a.ino, a.mode);
		else
			node_encode(in, &a, S_ISLNK(a.mode) ? target : NULL);
		if (i % 3 == 2)
			mutate(in);
	}
}

Test(fuzz, node_decode)
{
	uint64_t seed = fuzz_seed();
	struct sbuf in = {0}, re = {0};
	unsigned long i, ok = 0;

	for (i = 0; i < ROUNDS; i++) {
		struct node n, m;
		char *copy;
		int rc;

		node_input(&in, i);
		/* an exact-size heap copy, so ASan sees any read past it */
		copy = malloc(in.len ? in.len : 1);
		memcpy(copy, in.buf, in.len);
		rc = node_decode(copy, in.len, &n, true);
		cr_assert(rc == 0 || rc == -EIO,
			  "node_decode: %d (seed %llu round %lu)", rc,
			  (unsigned long long)seed, i);
		if (rc == 0) {
			ok++;
			cr_assert(n.a.ino != 0 && (n.a.mode & S_IFMT) != 0);
			cr_assert(!S_ISLNK(n.a.mode) ||
				      (n.a.flags & TREE_F_LINKED) ||
				      (n.target && n.target[0]),
				  "symlink without a target (round %lu)", i);
			/* a stub re-encodes as a stub, anything else whole */
			uint32_t flags = n.a.flags;

			sbuf_reset(&re);
			if ((n.a.flags & TREE_F_LINKED) && !n.target &&
			    !n.a.uid && !n.a.gid && !n.a.size && !n.a.nlink &&
			    !n.a.rdev && !n.a.atime_ns && !n.a.mtime_ns &&
			    !n.a.ctime_ns) {
				/* a stub keeps only the LINKED flag */
				node_encode_stub(&re, n.a.ino, n.a.mode);
				n.a.flags = TREE_F_LINKED;
			} else
				node_encode(&re, &n.a, n.target);
			rc = node_decode(re.buf, re.len, &m, true);
			cr_assert_eq(rc, 0,
				     "re-encoded node does not decode (seed "
				     "%llu round %lu)",
				     (unsigned long long)seed, i);
			expect_same_attr(&n.a, &m.a, seed, i);
			cr_assert((!n.target && !m.target) ||
				  (n.target && m.target &&
				   !strcmp(n.target, m.target)));
			node_release(&m);
			n.a.flags = flags;
			/* without the target, the same attributes */
			rc = node_decode(copy, in.len, &m, false);
			cr_assert(rc == 0 && !m.target);
			expect_same_attr(&n.a, &m.a, seed, i);
		}
		node_release(&n);
		free(copy);
	}
	cr_log_info("node_decode: %lu of %d inputs decoded", ok, ROUNDS);
	cr_expect(ok > ROUNDS / 10, "too few valid inputs: the test is weak");
	sbuf_release(&in);
	sbuf_release(&re);
}

Test(fuzz, meta_decode)
{
	uint64_t seed = fuzz_seed();
	struct sbuf in = {0}, re = {0};
	unsigned long i, ok = 0, newer = 0;

	for (i = 0; i < ROUNDS; i++) {
		struct meta m, m2;
		char *copy;
		int rc;

		sbuf_reset(&in);
		if (i % 3 == 0) {
			char buf[64];
			size_t n = below(sizeof(buf));

			random_bytes(buf, n);
			sbuf_add(&in, buf, n);
		} else {
			m.format = (uint32_t)(below(4) ? 1 : below(5));
			m.created_ns = (int64_t)rnd();
			m.block_size =
			    below(4) ? 1u << (9 + below(16)) : (uint32_t)rnd();
			m.ino_hwm = below(2) ? below(100000) : rnd();
			meta_encode(&in, &m);
			if (i % 3 == 2)
				mutate(&in);
		}
		copy = malloc(in.len ? in.len : 1);
		memcpy(copy, in.buf, in.len);
		rc = meta_decode(copy, in.len, &m);
		cr_assert(rc == 0 || rc == -EIO || rc == -EPROTONOSUPPORT,
			  "meta_decode: %d (seed %llu round %lu)", rc,
			  (unsigned long long)seed, i);
		if (rc == -EPROTONOSUPPORT)
			newer++;
		if (rc == 0) {
			ok++;
			cr_assert(m.format >= 1 &&
				  m.format <= TREE_FORMAT_VERSION);
			cr_assert(m.block_size >= 512 &&
				      !(m.block_size & (m.block_size - 1)),
				  "block size %u accepted", m.block_size);
			sbuf_reset(&re);
			meta_encode(&re, &m);
			cr_assert_eq(meta_decode(re.buf, re.len, &m2), 0);
			cr_assert(m.format == m2.format &&
				      m.created_ns == m2.created_ns &&
				      m.block_size == m2.block_size &&
				      m.ino_hwm == m2.ino_hwm,
				  "META re-encodes differently (round %lu)", i);
		}
		free(copy);
	}
	cr_expect(ok > ROUNDS / 10 && newer > 0, "weak test: %lu ok %lu newer",
		  ok, newer);
	sbuf_release(&in);
	sbuf_release(&re);
}

Test(fuzz, journal_rec_decode)
{
	uint64_t seed = fuzz_seed();
	struct sbuf in = {0};
	unsigned long i;

	for (i = 0; i < ROUNDS; i++) {
		struct journal_rec r;
		char *copy;
		int rc;

		sbuf_reset(&in);
		if (i % 2 == 0) {
			char buf[200];
			size_t n = below(sizeof(buf));

			random_bytes(buf, n);
			if (n)
				buf[0] = JOURNAL_REC_VERSION;
			sbuf_add(&in, buf, n);
		} else {
			/* the layout journal_i.h documents, then mutated */
			sbuf_addc(&in, JOURNAL_REC_VERSION);
			put_varint(&in, 1 + below(3));
			put_varint(&in, below(8));
			put_varint(&in, below(4));
			put_bytes(&in, "/src/a", 6);
			put_bytes(&in, "/dst/b b", 8);
			put_bytes(&in, "x//y", below(5));
			put_bytes(&in, "main", below(5));
			put_varint(&in, rnd());
			put_varint(&in, below(100));
			put_varint(&in, rnd());
			mutate(&in);
		}
		copy = malloc(in.len ? in.len : 1);
		memcpy(copy, in.buf, in.len);
		memset(&r, 0, sizeof(r));
		rc = journal_rec_decode(copy, in.len, &r);
		cr_assert(rc == 0 || rc == -EIO,
			  "journal_rec_decode: %d (seed %llu round %lu)", rc,
			  (unsigned long long)seed, i);
		journal_rec_release(&r);
		free(copy);
	}
	sbuf_release(&in);
}

/* ---- keys ------------------------------------------------------------------ */

#define DRIVE  "main"
#define PREFIX "DRIVE#main|"

/* A random path that passes the rules: 1..6 names of random bytes. */
static void random_valid_path(struct sbuf *p)
{
	size_t depth = 1 + below(6), k;

	sbuf_reset(p);
	for (k = 0; k < depth; k++) {
		char name[TREE_NAME_MAX];
		size_t n = 1 + below(below(8) ? 12 : TREE_NAME_MAX), j;

		for (j = 0; j < n; j++) {
			do
				name[j] = (char)rnd();
			while (name[j] == '\0' || name[j] == '/');
		}
		if ((n == 1 && name[0] == '.') ||
		    (n == 2 && name[0] == '.' && name[1] == '.'))
			name[0] = 'x';
		if (p->len + 1 + n > TREE_PATH_MAX)
			break;
		sbuf_addc(p, '/');
		sbuf_add(p, name, n);
	}
	if (!p->len)
		sbuf_addc(p, '/');
}

Test(fuzz, node_key_roundtrip)
{
	uint64_t seed = fuzz_seed();
	struct sbuf path = {0}, key = {0}, back = {0};
	unsigned long i;

	for (i = 0; i < ROUNDS; i++) {
		random_valid_path(&path);
		cr_assert_eq(path_check(path.buf), 0, "round %lu", i);
		sbuf_reset(&key);
		key_node(&key, DRIVE, path.buf);
		sbuf_reset(&back);
		cr_assert_eq(
		    key_node_decode(key.buf, key.len, strlen(PREFIX), &back), 0,
		    "valid node key does not decode (seed %llu "
		    "round %lu)",
		    (unsigned long long)seed, i);
		cr_assert(back.len == path.len &&
			      !memcmp(back.buf, path.buf, path.len),
			  "node key round trip changed the path (round %lu)",
			  i);
	}
	sbuf_release(&path);
	sbuf_release(&key);
	sbuf_release(&back);
}

Test(fuzz, key_decoders)
{
	uint64_t seed = fuzz_seed();
	static const enum key_kind kinds[] = {KEY_INODE, KEY_ORPHAN,
					      KEY_JOURNAL};
	struct sbuf key = {0}, back = {0}, re = {0};
	unsigned long i, nodes = 0, datas = 0;
	size_t plen = strlen(PREFIX);

	for (i = 0; i < ROUNDS; i++) {
		uint64_t ino, blk;
		char *copy;
		int rc;

		sbuf_reset(&key);
		sbuf_adds(&key, PREFIX);
		switch (i % 4) {
		case 0: {
			char buf[80];
			size_t n = below(sizeof(buf));

			sbuf_adds(&key, "PATH#");
			random_bytes(buf, n);
			sbuf_add(&key, buf, n);
			break;
		}
		case 1: {
			struct sbuf p = {0};

			random_valid_path(&p);
			sbuf_reset(&key);
			key_node(&key, DRIVE, p.buf);
			sbuf_release(&p);
			mutate(&key);
			break;
		}
		case 2:
			sbuf_reset(&key);
			key_data(&key, DRIVE, rnd(), rnd());
			mutate(&key);
			break;
		default:
			sbuf_reset(&key);
			key_inode(&key, DRIVE, rnd());
			if (below(2))
				mutate(&key);
			break;
		}
		if (key.len < plen) /* decoders get keys of their drive only */
			continue;
		memcpy(key.buf, PREFIX, plen);
		copy = malloc(key.len);
		memcpy(copy, key.buf, key.len);

		sbuf_reset(&back);
		rc = key_node_decode(copy, key.len, plen, &back);
		cr_assert(rc == 0 || rc == -EINVAL, "key_node_decode: %d", rc);
		if (rc == 0) {
			nodes++;
			cr_assert(back.len > 0 && back.buf[0] == '/' &&
				      !memchr(back.buf, '\0', back.len),
				  "decoded path is not a path (round %lu)", i);
			sbuf_reset(&re);
			key_node(&re, DRIVE, back.buf);
			cr_assert(re.len == key.len &&
				      !memcmp(re.buf, key.buf, key.len),
				  "key -> path -> key differs (seed %llu round "
				  "%lu)",
				  (unsigned long long)seed, i);
		}

		rc = key_data_decode(copy, key.len, plen, &ino, &blk);
		cr_assert(rc == 0 || rc == -EINVAL, "key_data_decode: %d", rc);
		if (rc == 0) {
			datas++;
			sbuf_reset(&re);
			key_data(&re, DRIVE, ino, blk);
			cr_assert(re.len == key.len &&
				      !memcmp(re.buf, key.buf, key.len),
				  "data key -> (ino, blk) -> key differs "
				  "(round %lu)",
				  i);
		}

		for (size_t k = 0; k < 3; k++) {
			rc =
			    key_ino_decode(copy, key.len, plen, kinds[k], &ino);
			cr_assert(rc == 0 || rc == -EINVAL);
			if (rc == 0 &&
			    key.len ==
				plen + strlen(key_kind_name(kinds[k])) + 16) {
				sbuf_reset(&re);
				if (k == 0)
					key_inode(&re, DRIVE, ino);
				else if (k == 1)
					key_orphan(&re, DRIVE, ino);
				else
					key_journal(&re, DRIVE, ino);
				cr_assert(
				    re.len == key.len &&
					!memcmp(re.buf, key.buf, key.len),
				    "%s key round trip differs (round %lu)",
				    key_kind_name(kinds[k]), i);
			}
		}
		free(copy);
	}
	cr_expect(nodes > 1000 && datas > 1000, "weak: %lu nodes %lu datas",
		  nodes, datas);
	sbuf_release(&key);
	sbuf_release(&back);
	sbuf_release(&re);
}

/* The path rules of tree.h, written independently of keys.c. */
static int ref_path_check(const char *p)
{
	size_t len = strlen(p), i = 1, start;
	int rc = 0;

	if (p[0] != '/')
		return -EINVAL;
	if (len == 1)
		return 0;
	while (i <= len) {
		start = i;
		while (i < len && p[i] != '/')
			i++;
		if (i == start)
			return -EINVAL; /* empty name: "//" or trailing "/" */
		if (i - start > TREE_NAME_MAX)
			rc = rc ? rc : -ENAMETOOLONG;
		if ((i - start == 1 && p[start] == '.') ||
		    (i - start == 2 && p[start] == '.' && p[start + 1] == '.'))
			return -EINVAL;
		i++;
	}
	if (!rc && len > TREE_PATH_MAX)
		rc = -ENAMETOOLONG;
	return rc;
}

Test(fuzz, path_check)
{
	uint64_t seed = fuzz_seed();
	static const char *const parts[] = {"/",  "a",	".",   "..",   "...",
					    "//", "/.", "b c", "\x01", "\xff"};
	char *buf = malloc(6000);
	unsigned long i, valid = 0;

	for (i = 0; i < ROUNDS; i++) {
		size_t n = 0;
		int rc, want;

		if (i % 2) {
			size_t k = below(12);

			while (k--) {
				const char *s = parts[below(10)];

				memcpy(buf + n, s, strlen(s));
				n += strlen(s);
			}
		} else if (i % 4 == 0) {
			/* long names and long paths around the limits */
			size_t names = 1 + below(20), k;

			for (k = 0; k < names && n < 5000; k++) {
				size_t m =
				    below(4) ? 250 + below(10) : 1 + below(300);

				buf[n++] = '/';
				memset(buf + n, 'a' + (int)below(26), m);
				n += m;
				if (n > 5000)
					n = 5000;
			}
		} else {
			n = below(40);
			random_bytes(buf, n);
		}
		buf[n] = '\0';
		/* strings stop at the first NUL, as C callers pass them */
		rc = path_check(buf);
		want = ref_path_check(buf);
		cr_assert(rc == 0 || rc == -EINVAL || rc == -ENAMETOOLONG);
		/* which of two errors a doubly bad path gets is free */
		cr_assert((rc == 0) == (want == 0),
			  "path_check(\"%.80s\") = %d, reference %d (seed %llu "
			  "round %lu)",
			  buf, rc, want, (unsigned long long)seed, i);
		if (rc == 0)
			valid++;
	}
	cr_expect(valid > 1000, "weak: %lu valid", valid);
	cr_assert_eq(path_check("/"), 0);
	cr_assert_eq(path_check(""), -EINVAL);
	cr_assert_eq(path_check("a/b"), -EINVAL);
	cr_assert_eq(path_check("/a/"), -EINVAL);
	cr_assert_eq(path_check("/a//b"), -EINVAL);
	cr_assert_eq(path_check("/a/./b"), -EINVAL);
	cr_assert_eq(path_check("/a/.."), -EINVAL);
	cr_assert_eq(path_check("/..."), 0);
	cr_assert_eq(path_check("/.a./..b/a.."), 0);
	free(buf);
}

/* ---- through the tree API: random values planted under PATH# keys ---------- */

TestSuite(fuzz_tree, .init = tu_setup, .fini = tu_teardown);

static void plant(const char *dir, const char *name, const struct sbuf *val)
{
	struct sbuf key = {0};
	struct kv_batch *b = kv_batch_new(tu_store->kv);

	key_child(&key, tu_tree->name, dir, name, strlen(name));
	kv_batch_put(b, key.buf, key.len, val->buf, val->len);
	cr_assert_eq(kv_batch_commit(tu_store->kv, b, false), 0);
	kv_batch_free(b);
	sbuf_release(&key);
}

static void report_count(void *ctx, const char *msg)
{
	(void)msg;
	(*(size_t *)ctx)++;
}

Test(fuzz_tree, planted_values)
{
	uint64_t seed = fuzz_seed();
	struct sbuf val = {0};
	unsigned long round;

	tu_mkdir(tu_tree, "/d");
	tu_mkfile(tu_tree, "/d/good", "hello", 5);
	for (round = 0; round < 40; round++) {
		struct tree_dir *d = NULL;
		struct tree_scan *sc = NULL;
		const char *name, *path;
		size_t namelen, seen = 0, k, findings = 0, reports = 0;
		unsigned long bad_planted = 0;
		struct tree_attr a, listed[50];
		char pname[32], ppath[64];
		int rc;

		/* 50 random values under /d, replacing the last round's */
		for (k = 0; k < 50; k++) {
			struct node n;

			node_input(&val, round * 50 + k);
			if (node_decode(val.buf, val.len, &n, false))
				bad_planted++;
			node_release(&n);
			snprintf(pname, sizeof(pname), "f%02zu", k);
			plant("/d", pname, &val);
		}
		rc = tree_dir_open(&d, tu_tree, "/d", NULL);
		cr_assert_eq(rc, 0, "dir_open: %d", rc);
		memset(listed, 0, sizeof(listed));
		while ((rc = tree_dir_next(d, &name, &namelen, &a)) == 1) {
			seen++;
			cr_assert_eq(strlen(name), namelen);
			cr_assert(a.ino != 0 || a.mode == 0,
				  "bad entry %s not marked (seed %llu)", name,
				  (unsigned long long)seed);
			if (name[0] == 'f')
				listed[atoi(name + 1) % 50] = a;
		}
		cr_assert(rc == 0 || rc == -EIO, "dir_next: %d", rc);
		tree_dir_free(d);
		cr_assert(rc != 0 || seen == 51, "listed %zu of 51", seen);

		for (k = 0; k < 50; k++) {
			snprintf(ppath, sizeof(ppath), "/d/f%02zu", k);
			rc = tree_lookup(tu_tree, ppath, &a);
			cr_assert(rc == 0 || rc == -EIO, "lookup %s: %d", ppath,
				  rc);
			/* the listing and a lookup agree on every entry */
			cr_assert(rc == 0 ? listed[k].ino == a.ino &&
						listed[k].mode == a.mode
					  : listed[k].ino == 0,
				  "%s: listed as ino %llu mode %o, lookup %d "
				  "ino %llu mode %o",
				  ppath, (unsigned long long)listed[k].ino,
				  (unsigned)listed[k].mode, rc,
				  (unsigned long long)(rc ? 0 : a.ino),
				  (unsigned)(rc ? 0 : a.mode));
			if (rc == 0) {
				char buf[64];
				size_t nread;

				cr_assert(a.ino != 0 && (a.mode & S_IFMT));
				/* reading must not crash either */
				rc = tree_read(tu_tree, ppath, a.ino, 0,
					       sizeof(buf), buf, &nread);
				cr_assert(rc <= 0);
			}
			/* creating below a planted node: no crash */
			snprintf(ppath, sizeof(ppath), "/d/f%02zu/x", k);
			rc = tree_mknode(tu_tree, ppath, S_IFREG | 0644, 0, 0,
					 0, NULL, NULL);
			cr_assert(rc <= 0);
		}
		rc = tree_lookup(tu_tree, "/d/good", &a);
		cr_assert_eq(rc, 0, "the good file is hurt: %d", rc);

		rc = tree_scan_open(&sc, tu_tree, "/");
		cr_assert_eq(rc, 0);
		while ((rc = tree_scan_next(sc, &path, &a)) == 1)
			cr_assert(path[0] == '/');
		cr_assert(rc == 0 || rc == -EIO);
		tree_scan_free(sc);

		rc = tree_fsck(tu_tree, false, report_count, &reports,
			       &findings);
		cr_assert_eq(rc, 0, "fsck: %d", rc);
		cr_assert_eq(findings, reports);
		if (bad_planted)
			cr_assert(findings > 0,
				  "fsck found nothing after %lu bad values",
				  bad_planted);
	}
	sbuf_release(&val);
}
