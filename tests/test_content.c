/*
 * test_content.c - file content in blocks (store/content.c): random writes
 * and truncates against an in-memory model, holes, block boundaries, append,
 * SEEK_DATA/SEEK_HOLE, size limits and persistence.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "content_i.h"
#include "drive_i.h"
#include "branchutil.h"
#include "testutil.h"

#define T tu_tree

static uint64_t mkf(const char *path)
{
	struct tree_attr a;

	cr_assert_eq(tree_mknode(T, path, S_IFREG | 0644, 0, 0, 0, NULL, &a),
		     0);
	return a.ino;
}

static void wr(const char *path, uint64_t ino, uint64_t off, const void *buf,
	       size_t len)
{
	int rc = tree_write(T, path, ino, off, buf, len, false, NULL);

	cr_assert_eq(rc, 0, "write %zu at %llu: %s", len,
		     (unsigned long long)off, strerror(-rc));
}

static void trunc_to(const char *path, uint64_t ino, uint64_t size)
{
	struct tree_attr in = {.size = size};
	int rc = tree_setattr(T, path, ino, &in, TREE_SET_SIZE, NULL);

	cr_assert_eq(rc, 0, "truncate to %llu: %s", (unsigned long long)size,
		     strerror(-rc));
}

static uint64_t size_of(const char *path)
{
	struct tree_attr a;

	cr_assert_eq(tree_lookup(T, path, &a), 0);
	return a.size;
}

/* Compares the whole file with @model (@len bytes), reading in @chunk. */
static void check_model(const char *path, uint64_t ino, const char *model,
			size_t len, size_t chunk)
{
	char *buf = malloc(chunk + 16);
	size_t off = 0, n;

	cr_assert_eq(size_of(path), len);
	while (off < len) {
		cr_assert_eq(tree_read(T, path, ino, off, chunk, buf, &n), 0);
		cr_assert_eq(n, len - off < chunk ? len - off : chunk);
		cr_assert(memcmp(buf, model + off, n) == 0,
			  "content differs in [%zu, %zu)", off, off + n);
		off += n;
	}
	cr_assert_eq(tree_read(T, path, ino, len, chunk, buf, &n), 0);
	cr_assert_eq(n, 0);
	free(buf);
}

/* The block count the store keeps for @path. */
static uint64_t blocks_of(const char *path)
{
	struct tree_attr a;

	cr_assert_eq(tree_lookup(T, path, &a), 0);
	return a.blocks;
}

/* st_blocks of @path. */
static uint64_t st_blocks_of(const char *path)
{
	struct tree_attr a;
	struct stat st;

	cr_assert_eq(tree_lookup(T, path, &a), 0);
	tree_attr_to_stat(T, &a, &st);
	cr_assert_eq((uint64_t)st.st_blocks, tree_attr_blocks(T, &a));
	return (uint64_t)st.st_blocks;
}

/* Number of DATA keys of @ino. */
static size_t count_blocks(uint64_t ino)
{
	struct sbuf lo = {0}, hi = {0};
	struct kv_iter *it;
	size_t n = 0;

	key_data_range(&lo, &hi, T->name, ino, 0);
	cr_assert_eq(
	    kv_iter_open(&it, tu_store->kv, lo.buf, lo.len, hi.buf, hi.len), 0);
	for (; kv_iter_valid(it); kv_iter_next(it))
		n++;
	kv_iter_free(it);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return n;
}

Test(content, block_size_default, .init = tu_setup, .fini = tu_teardown)
{
	cr_expect_eq(tree_block_size(T), 65536);
}

Test(content, block_boundaries, .init = tu_setup, .fini = tu_teardown)
{
	size_t bs = tree_block_size(T);
	size_t sizes[] = {0,	      1,      bs - 1,	  bs,	      bs + 1,
			  2 * bs - 1, 2 * bs, 2 * bs + 1, 3 * bs + 17};
	char *data = malloc(4 * bs);

	for (size_t i = 0; i < 4 * bs; i++)
		data[i] = (char)(i * 7 + i / 251);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char path[32];
		uint64_t ino;

		snprintf(path, sizeof(path), "/f%zu", i);
		ino = mkf(path);
		wr(path, ino, 0, data, sizes[i]);
		check_model(path, ino, data, sizes[i], bs);
		check_model(path, ino, data, sizes[i], 4096);
		check_model(path, ino, data, sizes[i], 3 * bs);
		/* blocks stored: ceil(size / bs) */
		cr_expect_eq(count_blocks(ino), (sizes[i] + bs - 1) / bs,
			     "size %zu", sizes[i]);
	}
	/* a write straddling a boundary into an existing file */
	{
		uint64_t ino = mkf("/s");
		char *model = calloc(1, 3 * bs);

		wr("/s", ino, 0, data, 3 * bs);
		memcpy(model, data, 3 * bs);
		wr("/s", ino, bs - 3, "XXXXXX", 6);
		memcpy(model + bs - 3, "XXXXXX", 6);
		wr("/s", ino, 2 * bs - 1, "Y", 1);
		model[2 * bs - 1] = 'Y';
		check_model("/s", ino, model, 3 * bs, 1000);
		free(model);
	}
	free(data);
}

Test(content, sparse_files, .init = tu_setup, .fini = tu_teardown)
{
	size_t bs = tree_block_size(T);
	uint64_t ino = mkf("/sp");
	char buf[100];
	size_t n;

	/* a write far away leaves a hole that reads as zeros and is not
	 * stored */
	wr("/sp", ino, 10 * bs + 5, "end", 3);
	cr_expect_eq(size_of("/sp"), 10 * bs + 8);
	cr_expect_eq(count_blocks(ino), 1);
	cr_assert_eq(tree_read(T, "/sp", ino, 3 * bs, sizeof(buf), buf, &n), 0);
	cr_expect_eq(n, sizeof(buf));
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(buf[i], 0);
	cr_assert_eq(tree_read(T, "/sp", ino, 10 * bs, sizeof(buf), buf, &n),
		     0);
	cr_expect_eq(n, 8);
	cr_expect(memcmp(buf, "\0\0\0\0\0end", 8) == 0);
	/* truncate up: a hole too */
	trunc_to("/sp", ino, 100 * bs);
	cr_expect_eq(count_blocks(ino), 1);
	cr_assert_eq(tree_read(T, "/sp", ino, 100 * bs - 10, 100, buf, &n), 0);
	cr_expect_eq(n, 10);
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(buf[i], 0);
	/* a huge sparse file costs nothing */
	trunc_to("/sp", ino, (uint64_t)1 << 40);
	cr_expect_eq(size_of("/sp"), (uint64_t)1 << 40);
	cr_expect_eq(count_blocks(ino), 1);
}

Test(content, truncate_both_ways, .init = tu_setup, .fini = tu_teardown)
{
	size_t bs = tree_block_size(T);
	uint64_t ino = mkf("/t");
	char *data = malloc(5 * bs), *model = calloc(1, 5 * bs);

	memset(data, 'a', 5 * bs);
	wr("/t", ino, 0, data, 5 * bs);
	cr_expect_eq(count_blocks(ino), 5);
	/* down into the middle of a block: the tail reads as zeros after
	 * growing again */
	trunc_to("/t", ino, 2 * bs + 10);
	cr_expect_eq(count_blocks(ino), 3);
	trunc_to("/t", ino, 4 * bs);
	memset(model, 'a', 2 * bs + 10);
	check_model("/t", ino, model, 4 * bs, 7777);
	/* down to a block boundary, then to 0 */
	trunc_to("/t", ino, bs);
	cr_expect_eq(count_blocks(ino), 1);
	check_model("/t", ino, model, bs, bs);
	trunc_to("/t", ino, 0);
	cr_expect_eq(count_blocks(ino), 0);
	check_model("/t", ino, model, 0, 10);
	/* up from 0, then write in the middle */
	trunc_to("/t", ino, 3 * bs);
	memset(model, 0, 5 * bs);
	wr("/t", ino, bs + 1, "mid", 3);
	memcpy(model + bs + 1, "mid", 3);
	check_model("/t", ino, model, 3 * bs, 5000);
	cr_expect_eq(count_blocks(ino), 1);
	/* a big file dropped past the point-delete limit (range delete) */
	{
		uint64_t big = mkf("/big");
		for (int i = 0; i < 300; i++)
			wr("/big", big, (uint64_t)i * bs, "b", 1);
		cr_expect_eq(count_blocks(big), 300);
		trunc_to("/big", big, 5);
		cr_expect_eq(count_blocks(big), 1);
		cr_expect_eq(size_of("/big"), 5);
		for (int i = 0; i < 300; i++)
			wr("/big", big, (uint64_t)i * bs + 1, "c", 1);
		cr_assert_eq(tree_unlink(T, "/big", 0, NULL), 0);
		cr_expect_eq(count_blocks(big), 0);
	}
	free(data);
	free(model);
}

Test(content, random_ops_against_model, .init = tu_setup, .fini = tu_teardown,
     .timeout = 300)
{
	size_t bs = tree_block_size(T);
	size_t cap = 6 * bs, len = 0;
	char *model = calloc(1, cap), *buf = malloc(cap);
	bool alloc[6] = {0}; /* model: which blocks are stored */
	unsigned seed = 12345;
	uint64_t ino = mkf("/r");

	for (int op = 0; op < 3000; op++) {
		unsigned r = rand_r(&seed) % 100;

		if (r < 70) {
			/* write: offsets near boundaries half the time */
			size_t off, n;
			if (rand_r(&seed) % 2)
				off = (rand_r(&seed) % 6) * bs +
				      (rand_r(&seed) % 5) - 2;
			else
				off = rand_r(&seed) % cap;
			if (off >= cap)
				off = rand_r(&seed) % cap;
			n = rand_r(&seed) % 4 == 0 ? rand_r(&seed) % (2 * bs)
						   : rand_r(&seed) % 300u;
			if (off + n > cap)
				n = cap - off;
			for (size_t i = 0; i < n; i++)
				buf[i] = (char)rand_r(&seed);
			wr("/r", ino, off, buf, n);
			memcpy(model + off, buf, n);
			for (size_t b = off / bs; n && b <= (off + n - 1) / bs;
			     b++)
				alloc[b] = true;
			if (n && off + n > len)
				len = off + n;
		} else if (r < 80) {
			size_t ns = rand_r(&seed) % cap;
			trunc_to("/r", ino, ns);
			if (ns < len)
				memset(model + ns, 0, len - ns);
			for (size_t b = (ns + bs - 1) / bs; b < 6 && ns < len;
			     b++)
				alloc[b] = false;
			len = ns;
		} else if (r < 85) {
			/* append */
			struct tree_attr out;
			size_t n = rand_r(&seed) % 1000;
			if (len + n > cap)
				continue;
			for (size_t i = 0; i < n; i++)
				buf[i] = (char)rand_r(&seed);
			cr_assert_eq(
			    tree_write(T, "/r", ino, 0, buf, n, true, &out), 0);
			memcpy(model + len, buf, n);
			for (size_t b = len / bs; n && b <= (len + n - 1) / bs;
			     b++)
				alloc[b] = true;
			len += n;
			cr_assert_eq(out.size, len);
			cr_assert_eq(out.blocks, blocks_of("/r"));
		} else {
			/* random read */
			size_t off = rand_r(&seed) % (cap + 10), n, got;
			size_t want = rand_r(&seed) % (2 * bs);
			cr_assert_eq(
			    tree_read(T, "/r", ino, off, want, buf, &got), 0);
			n = off >= len ? 0
				       : (len - off < want ? len - off : want);
			cr_assert_eq(got, n, "op %d: read %zu at %zu", op, want,
				     off);
			cr_assert(got == 0 ||
				      memcmp(buf, model + off, got) == 0,
				  "op %d: read at %zu", op, off);
		}
		if (op % 500 == 0)
			check_model("/r", ino, model, len, 10000);
		{
			/* the count follows the model and the keys */
			uint64_t want = 0;
			for (int b = 0; b < 6; b++)
				want += alloc[b];
			cr_assert_eq(blocks_of("/r"), want,
				     "op %d: count %llu, model %llu", op,
				     (unsigned long long)blocks_of("/r"),
				     (unsigned long long)want);
			cr_assert_eq(count_blocks(ino), want, "op %d", op);
		}
	}
	check_model("/r", ino, model, len, 65536);
	/* no block stored past the end */
	cr_expect_leq(count_blocks(ino), (len + bs - 1) / bs);
	tu_reopen();
	check_model("/r", ino, model, len, 123456);
	free(model);
	free(buf);
}

Test(content, seek_data_hole, .init = tu_setup, .fini = tu_teardown)
{
	size_t bs = tree_block_size(T);
	uint64_t ino = mkf("/h"), r, size;

	wr("/h", ino, 2 * bs, "x", 1);
	wr("/h", ino, 3 * bs, "y", 1);
	wr("/h", ino, 6 * bs + 100, "z", 1);
	trunc_to("/h", ino, 10 * bs);
	size = 10 * bs;
	cr_assert_eq(tree_seek(T, ino, size, 0, SEEK_DATA, &r), 0);
	cr_expect_eq(r, 2 * bs);
	cr_assert_eq(tree_seek(T, ino, size, 2 * bs + 5, SEEK_DATA, &r), 0);
	cr_expect_eq(r, 2 * bs + 5);
	cr_assert_eq(tree_seek(T, ino, size, 4 * bs, SEEK_DATA, &r), 0);
	cr_expect_eq(r, 6 * bs);
	cr_expect_eq(tree_seek(T, ino, size, 7 * bs, SEEK_DATA, &r), -ENXIO);
	cr_assert_eq(tree_seek(T, ino, size, 0, SEEK_HOLE, &r), 0);
	cr_expect_eq(r, 0);
	cr_assert_eq(tree_seek(T, ino, size, 2 * bs, SEEK_HOLE, &r), 0);
	cr_expect_eq(r, 4 * bs);
	cr_assert_eq(tree_seek(T, ino, size, 6 * bs + 1, SEEK_HOLE, &r), 0);
	cr_expect_eq(r, 7 * bs);
	cr_expect_eq(tree_seek(T, ino, size, size, SEEK_HOLE, &r), -ENXIO);
	cr_expect_eq(tree_seek(T, ino, size, 0, 99, &r), -EINVAL);
	/* the end of a file is a hole */
	trunc_to("/h", ino, 6 * bs + 200);
	cr_assert_eq(tree_seek(T, ino, 6 * bs + 200, 6 * bs, SEEK_HOLE, &r), 0);
	cr_expect_eq(r, 6 * bs + 200);
}

Test(content, errnos_and_limits, .init = tu_setup, .fini = tu_teardown)
{
	uint64_t ino = mkf("/f");
	struct tree_attr d, out;
	char buf[8];
	size_t n;

	tu_mkdir(T, "/d");
	cr_assert_eq(tree_lookup(T, "/d", &d), 0);
	cr_expect_eq(
	    tree_write(T, "/f", ino, TREE_FILE_MAX, "x", 1, false, NULL),
	    -EFBIG);
	cr_expect_eq(
	    tree_write(T, "/f", ino, TREE_FILE_MAX - 1, "x", 1, false, &out),
	    0);
	cr_expect_eq(out.size, TREE_FILE_MAX);
	cr_expect_eq(count_blocks(ino), 1);
	cr_expect_eq(tree_write(T, "/d", d.ino, 0, "x", 1, false, NULL),
		     -EISDIR);
	cr_expect_eq(tree_write(T, "/nope", ino, 0, "x", 1, false, NULL),
		     -ENOENT);
	cr_expect_eq(tree_write(T, "/f", ino + 99, 0, "x", 1, false, NULL),
		     -ENOENT);
	cr_expect_eq(tree_read(T, "/nope", 0, 0, 8, buf, &n), -ENOENT);
	cr_expect_eq(tree_read(T, NULL, ino, 0, 8, buf, &n), -ENOENT);
	/* a zero-length write changes nothing */
	cr_assert_eq(tree_lookup(T, "/f", &d), 0);
	cr_assert_eq(tree_write(T, "/f", ino, 5, "", 0, false, &out), 0);
	cr_expect_eq(out.size, d.size);
	cr_expect_eq(out.mtime_ns, d.mtime_ns);
}

Test(content, write_updates_times, .init = tu_setup, .fini = tu_teardown)
{
	uint64_t ino = mkf("/f");
	struct tree_attr a, b;

	cr_assert_eq(tree_lookup(T, "/f", &a), 0);
	usleep(2000);
	wr("/f", ino, 0, "abc", 3);
	cr_assert_eq(tree_lookup(T, "/f", &b), 0);
	cr_expect_gt(b.mtime_ns, a.mtime_ns);
	cr_expect_gt(b.ctime_ns, a.ctime_ns);
	cr_expect_eq(b.atime_ns, a.atime_ns);
	cr_expect_eq(b.size, 3);
}

Test(content, corrupt_block_is_eio_for_that_file_only, .init = tu_setup,
     .fini = tu_teardown)
{
	size_t bs = tree_block_size(T);
	uint64_t bad = mkf("/bad"), good = mkf("/good");
	struct sbuf k = {0};
	struct kv_batch *b;
	char *big = calloc(1, bs + 1), buf[16];
	size_t n;

	wr("/bad", bad, 0, "0123456789", 10);
	wr("/good", good, 0, "abcdefghij", 10);
	/* a block longer than the block size cannot be valid */
	key_data(&k, T->name, bad, 0);
	b = kv_batch_new(tu_store->kv);
	kv_batch_put(b, k.buf, k.len, big, bs + 1);
	cr_assert_eq(kv_batch_commit(tu_store->kv, b, false), 0);
	kv_batch_free(b);
	cr_expect_eq(tree_read(T, "/bad", bad, 0, sizeof(buf), buf, &n), -EIO);
	/* a write patches the block without reading it: it succeeds (with
	 * patches) or finds the corruption, and the block stays unreadable */
	n = (size_t)tree_write(T, "/bad", bad, 3, "x", 1, false, NULL);
	cr_expect((int)n == (tu_store->patch ? 0 : -EIO));
	cr_expect_eq(tree_read(T, "/bad", bad, 0, sizeof(buf), buf, &n), -EIO);
	cr_assert_eq(tree_read(T, "/good", good, 0, sizeof(buf), buf, &n), 0);
	cr_expect(n == 10 && memcmp(buf, "abcdefghij", 10) == 0);
	/* and the bad file can still be truncated away and rewritten */
	trunc_to("/bad", bad, 0);
	wr("/bad", bad, 0, "ok", 2);
	cr_assert_eq(tree_read(T, "/bad", bad, 0, sizeof(buf), buf, &n), 0);
	cr_expect(n == 2 && memcmp(buf, "ok", 2) == 0);
	/* symlinks have no content to read */
	cr_assert_eq(tree_mknode(T, "/s", S_IFLNK | 0777, 0, 0, 0, "tgt", NULL),
		     0);
	cr_expect_eq(tree_read(T, "/s", 0, 0, sizeof(buf), buf, &n), -EINVAL);
	sbuf_release(&k);
	free(big);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(content, throughput_printout, .init = tu_setup, .fini = tu_teardown,
     .timeout = 300)
{
	enum { CHUNK = 128 << 10, TOTAL = 64 << 20 };
	char *buf = malloc(CHUNK), *rb = malloc(CHUNK);
	uint64_t ino = mkf("/seq");
	double t0, t1;
	size_t n;

	for (size_t i = 0; i < CHUNK; i++)
		buf[i] = (char)(i * 31 + 7);
	t0 = now_s();
	for (size_t off = 0; off < TOTAL; off += CHUNK)
		wr("/seq", ino, off, buf, CHUNK);
	t1 = now_s();
	printf("content: sequential write %d MiB in 128 KiB: %.0f MiB/s\n",
	       TOTAL >> 20, (TOTAL >> 20) / (t1 - t0));
	t0 = now_s();
	for (size_t off = 0; off < TOTAL; off += CHUNK) {
		cr_assert_eq(tree_read(T, "/seq", ino, off, CHUNK, rb, &n), 0);
		cr_assert_eq(n, CHUNK);
	}
	t1 = now_s();
	cr_expect(memcmp(rb, buf, CHUNK) == 0);
	printf("content: sequential read %d MiB in 128 KiB: %.0f MiB/s\n",
	       TOTAL >> 20, (TOTAL >> 20) / (t1 - t0));
	/* small appends: read-modify-write of the last block each time */
	ino = mkf("/app");
	t0 = now_s();
	for (int i = 0; i < 10000; i++)
		cr_assert_eq(
		    tree_write(T, "/app", ino, 0, buf, 4096, true, NULL), 0);
	t1 = now_s();
	printf("content: 4 KiB appends: %.0f appends/s\n", 10000 / (t1 - t0));
	fflush(stdout);
	free(buf);
	free(rb);
}

struct region_writer {
	uint64_t ino;
	int id;
	size_t base, span;
};

/* Writes byte 'A'+id at every offset base + i with i % 4 == id, one byte
 * per write, so that the blocks around the boundary inside the region are
 * read-modified-written by all four writers at once: a lost update would
 * leave a zero or a wrong byte. */
static void *region_worker(void *arg)
{
	struct region_writer *w = arg;
	char c = (char)('A' + w->id);

	for (size_t i = (size_t)w->id; i < w->span; i += 4)
		if (tree_write(T, "/race", w->ino, w->base + i, &c, 1, false,
			       NULL))
			return (void *)1;
	return NULL;
}

Test(content, concurrent_writers_share_blocks, .init = tu_setup,
     .fini = tu_teardown, .timeout = 300)
{
	size_t bs = tree_block_size(T), base = bs - 1000, span = 2000;
	struct region_writer w[4];
	pthread_t th[4];
	char *buf = malloc(base + span);
	uint64_t ino = mkf("/race");
	void *res;
	size_t n;

	for (int i = 0; i < 4; i++) {
		w[i] = (struct region_writer){ino, i, base, span};
		cr_assert_eq(pthread_create(&th[i], NULL, region_worker, &w[i]),
			     0);
	}
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(pthread_join(th[i], &res), 0);
		cr_expect_null(res);
	}
	cr_assert_eq(tree_read(T, "/race", ino, 0, base + span, buf, &n), 0);
	cr_assert_eq(n, base + span);
	for (size_t i = 0; i < base; i++)
		cr_assert_eq(buf[i], 0, "hole byte %zu is %d", i, buf[i]);
	for (size_t i = 0; i < span; i++)
		cr_assert_eq(buf[base + i], 'A' + (int)(i % 4),
			     "byte %zu is %d", base + i, buf[base + i]);
	/* the count survived four writers creating the same blocks */
	cr_expect_eq(blocks_of("/race"), 2);
	cr_expect_eq(count_blocks(ino), 2);
	free(buf);
}

Test(content, st_blocks_count_what_is_stored, .init = tu_setup,
     .fini = tu_teardown)
{
	size_t bs = tree_block_size(T), per = bs / 512;
	uint64_t ino = mkf("/s");
	char *data = malloc(3 * bs);

	memset(data, 'x', 3 * bs);
	cr_expect_eq(st_blocks_of("/s"), 0);
	/* a small file is not a whole block */
	wr("/s", ino, 0, "hello", 5);
	cr_expect_eq(blocks_of("/s"), 1);
	cr_expect_eq(st_blocks_of("/s"), 1);
	/* truncated up: a hole, nothing more stored (ext4: 0 for 1 GiB) */
	trunc_to("/s", ino, 1ull << 30);
	cr_expect_eq(blocks_of("/s"), 1);
	cr_expect_eq(st_blocks_of("/s"), per);
	/* written sparse: one block far away */
	wr("/s", ino, 100 * bs + 7, "far", 3);
	cr_expect_eq(blocks_of("/s"), 2);
	cr_expect_eq(st_blocks_of("/s"), 2 * per);
	/* whole blocks over a hole, then over themselves: counted once */
	wr("/s", ino, 10 * bs, data, 3 * bs);
	cr_expect_eq(blocks_of("/s"), 5);
	wr("/s", ino, 10 * bs, data, 3 * bs);
	wr("/s", ino, 9 * bs, data, 3 * bs);
	cr_expect_eq(blocks_of("/s"), 6);
	cr_expect_eq(count_blocks(ino), 6);
	/* a truncate down drops what lay past the end */
	trunc_to("/s", ino, 11 * bs + 1);
	cr_expect_eq(blocks_of("/s"), 4);
	cr_expect_eq(count_blocks(ino), 4);
	cr_expect_eq(st_blocks_of("/s"), 4 * per);
	/* a dense file: its size, rounded to 512 */
	trunc_to("/s", ino, 0);
	cr_expect_eq(blocks_of("/s"), 0);
	wr("/s", ino, 0, data, 2 * bs + 700);
	cr_expect_eq(blocks_of("/s"), 3);
	cr_expect_eq(st_blocks_of("/s"), 2 * per + 2);
	/* kept over a reopen, and in a clone (cp -r) */
	tu_reopen();
	cr_expect_eq(blocks_of("/s"), 3);
	{
		struct tree_op_result r = {0};
		cr_assert_eq(tree_cp_r(T, "/s", T, "/copy", 0, NULL, &r), 0);
		tree_op_result_release(&r);
		cr_expect_eq(blocks_of("/copy"), 3);
	}
	free(data);
}

Test(content, record_without_count_is_counted_at_its_next_change,
     .init = tu_setup, .fini = tu_teardown)
{
	size_t bs = tree_block_size(T);
	struct sbuf k = {0}, v = {0};
	struct node n;
	uint64_t ino = mkf("/old");

	wr("/old", ino, 0, "a", 1);
	wr("/old", ino, 5 * bs, "b", 1);
	/* rewrite the node as a store from before the count has it */
	cr_assert_eq(tree_get_node(T, "/old", &n, false), 0);
	n.a.blocks = TREE_BLOCKS_UNKNOWN;
	key_node(&k, T->name, "/old");
	node_encode(&v, &n.a, NULL);
	cr_assert_eq(v.buf[0], 1, "an unknown count encodes as version 1");
	{
		struct kv_batch *b = kv_batch_new(T->store->kv);
		kv_batch_put(b, k.buf, k.len, v.buf, v.len);
		cr_assert_eq(tree_commit(T, b), 0);
		kv_batch_free(b);
	}
	tu_reopen();
	cr_expect_eq(blocks_of("/old"), TREE_BLOCKS_UNKNOWN);
	/* shown as before: the size */
	cr_expect_eq(st_blocks_of("/old"), (5 * bs + 1 + 511) / 512);
	/* the next write counts the keys once, then keeps the count */
	wr("/old", ino, 2 * bs, "c", 1);
	cr_expect_eq(blocks_of("/old"), 3);
	cr_expect_eq(st_blocks_of("/old"), 3 * (bs / 512));
	sbuf_release(&k);
	sbuf_release(&v);
}

static void falloc(const char *path, uint64_t ino, unsigned mode, uint64_t off,
		   uint64_t len)
{
	int rc = tree_fallocate(T, path, ino, mode, off, len, NULL);

	cr_assert_eq(rc, 0, "fallocate %x [%llu, +%llu): %s", mode,
		     (unsigned long long)off, (unsigned long long)len,
		     strerror(-rc));
}

/* tree_seek() on /h (inode @ino): the offset, or the negative errno. */
static uint64_t seek_of(uint64_t ino, uint64_t off, int whence)
{
	struct tree_attr a;
	uint64_t res = 0;
	int rc;

	cr_assert_eq(tree_lookup(T, "/h", &a), 0);
	rc = tree_seek(T, ino, a.size, off, whence, &res);
	return rc ? (uint64_t)rc : res;
}

Test(content, fallocate_modes_and_holes, .init = tu_setup, .fini = tu_teardown)
{
	size_t bs = tree_block_size(T), per = bs / 512;
	uint64_t ino = mkf("/h");
	char *data = malloc(4 * bs), *model = calloc(1, 8 * bs);
	struct tree_attr a;

	memset(data, 'd', 4 * bs);
	/* allocate 4 blocks: size grows, blocks counted, reads zeros, holes */
	falloc("/h", ino, 0, 0, 4 * bs);
	cr_expect_eq(size_of("/h"), 4 * bs);
	cr_expect_eq(blocks_of("/h"), 4);
	cr_expect_eq(st_blocks_of("/h"), 4 * per);
	check_model("/h", ino, model, 4 * bs, 5000);
	cr_expect_eq(seek_of(ino, 0, SEEK_DATA), (uint64_t)-ENXIO);
	cr_expect_eq(seek_of(ino, 0, SEEK_HOLE), 0);
	/* writing into allocated blocks adds none */
	wr("/h", ino, bs + 10, "abc", 3);
	memcpy(model + bs + 10, "abc", 3);
	wr("/h", ino, 2 * bs, data, bs);
	memcpy(model + 2 * bs, data, bs);
	cr_expect_eq(blocks_of("/h"), 4);
	cr_expect_eq(seek_of(ino, 0, SEEK_DATA), bs);
	cr_expect_eq(seek_of(ino, bs, SEEK_HOLE), 3 * bs);
	/* keep size past the end: blocks 4..6 allocated, size kept; st_blocks
	 * counts them whole; a truncate to the same size frees them */
	falloc("/h", ino, TREE_FALLOC_KEEP_SIZE, 3 * bs, 4 * bs);
	cr_expect_eq(size_of("/h"), 4 * bs);
	cr_expect_eq(blocks_of("/h"), 7);
	cr_expect_eq(count_blocks(ino), 7);
	cr_expect_eq(st_blocks_of("/h"), 7 * per);
	check_model("/h", ino, model, 4 * bs, 5000);
	cr_expect_eq(seek_of(ino, 3 * bs, SEEK_HOLE), 3 * bs);
	trunc_to("/h", ino, 4 * bs);
	cr_expect_eq(blocks_of("/h"), 4);
	cr_expect_eq(count_blocks(ino), 4);
	cr_assert_eq(tree_lookup(T, "/h", &a), 0);
	cr_expect_eq(a.flags & TREE_F_PREALLOC, 0);
	/* punch: whole block 2 freed, block 1 zeroed in part */
	falloc("/h", ino, TREE_FALLOC_PUNCH_HOLE | TREE_FALLOC_KEEP_SIZE,
	       bs + 11, 2 * bs - 11);
	memset(model + bs + 11, 0, 2 * bs - 11);
	cr_expect_eq(blocks_of("/h"), 3);
	cr_expect_eq(count_blocks(ino), 3);
	check_model("/h", ino, model, 4 * bs, 7000);
	cr_expect_eq(seek_of(ino, bs, SEEK_HOLE), 2 * bs);
	/* zero range past the end: zeroed, allocated, grown */
	wr("/h", ino, 3 * bs, data, bs);
	memcpy(model + 3 * bs, data, bs);
	falloc("/h", ino, TREE_FALLOC_ZERO_RANGE, 3 * bs + 5, 2 * bs);
	memset(model + 3 * bs + 5, 0, 2 * bs);
	check_model("/h", ino, model, 5 * bs + 5, 9000);
	cr_expect_eq(blocks_of("/h"), 5);
	cr_expect_eq(count_blocks(ino), 5);
	/* modes Linux refuses too */
	cr_expect_eq(
	    tree_fallocate(T, "/h", ino, TREE_FALLOC_PUNCH_HOLE, 0, 1, NULL),
	    -EOPNOTSUPP);
	cr_expect_eq(tree_fallocate(T, "/h", ino, 0x8, 0, 1, NULL),
		     -EOPNOTSUPP);
	cr_expect_eq(tree_fallocate(T, "/h", ino, 0, 0, 0, NULL), -EINVAL);
	cr_expect_eq(tree_fallocate(T, "/h", ino, 0, TREE_FILE_MAX, 1, NULL),
		     -EFBIG);
	/* more than the disk holds: ENOSPC, nothing changed */
	cr_expect_eq(tree_fallocate(T, "/h", ino, 0, 0, TREE_FILE_MAX, NULL),
		     -ENOSPC);
	cr_assert_eq(tree_lookup(T, "/h", &a), 0);
	cr_expect_eq(a.size, 5 * bs + 5);
	cr_expect_eq(a.blocks, 5);
	free(data);
	free(model);
}

Test(content, fallocate_random_against_model, .init = tu_setup,
     .fini = tu_teardown, .timeout = 300)
{
	size_t bs = tree_block_size(T);
	size_t cap = 8 * bs, len = 0;
	char *model = calloc(1, cap + bs), *buf = malloc(cap);
	bool alloc[9] = {0};
	bool past = false; /* TREE_F_PREALLOC: blocks may lie past len */
	unsigned seed = 777;
	uint64_t ino = mkf("/m");

	for (int op = 0; op < 1500; op++) {
		unsigned r = rand_r(&seed) % 100;
		size_t off = rand_r(&seed) % 2 ? (rand_r(&seed) % 7) * bs +
						     (rand_r(&seed) % 5) - 2
					       : rand_r(&seed) % (6 * bs);
		size_t n = rand_r(&seed) % 2 ? rand_r(&seed) % (2 * bs) + 1
					     : rand_r(&seed) % 300u + 1;

		if (off >= 6 * bs)
			off = rand_r(&seed) % (6 * bs);
		if (r < 40) {
			for (size_t i = 0; i < n; i++)
				buf[i] = (char)(rand_r(&seed) | 1);
			wr("/m", ino, off, buf, n);
			memcpy(model + off, buf, n);
			for (size_t b = off / bs; b <= (off + n - 1) / bs; b++)
				alloc[b] = true;
			if (off + n > len)
				len = off + n;
		} else if (r < 50) {
			size_t ns = rand_r(&seed) % cap;
			trunc_to("/m", ino, ns);
			if (ns < len)
				memset(model + ns, 0, len - ns);
			/* any size change drops blocks allocated past the
			 * end; shrinking drops those past the new end */
			for (size_t b = (ns + bs - 1) / bs;
			     b < 9 && (ns < len || past); b++)
				alloc[b] = false;
			past = false;
			len = ns;
		} else {
			/* allocate, keep size, punch or zero [off, off+n) */
			unsigned kind = rand_r(&seed) % 4, mode;
			bool keep = kind == 1 || kind == 2 || rand_r(&seed) % 2;
			size_t end = off + n, newsize, stop;

			mode = kind == 0   ? 0
			       : kind == 1 ? TREE_FALLOC_KEEP_SIZE
			       : kind == 2 ? TREE_FALLOC_PUNCH_HOLE
					   : TREE_FALLOC_ZERO_RANGE;
			if (keep)
				mode |= TREE_FALLOC_KEEP_SIZE;
			falloc("/m", ino, mode, off, n);
			newsize = keep || end <= len ? len : end;
			/* a punch stops at the end, allocation does not */
			stop = kind == 2 && end > newsize ? newsize : end;
			if (kind != 2 && off < stop &&
			    (stop + bs - 1) / bs > (newsize + bs - 1) / bs)
				past = true;
			for (size_t b = off / bs; off < stop && b * bs < stop;
			     b++) {
				size_t bstart = b * bs;
				size_t from = off > bstart ? off - bstart : 0;
				size_t to =
				    stop - bstart < bs ? stop - bstart : bs;
				if (kind != 2)
					alloc[b] = true;
				else if (from == 0 &&
					 (to == bs || bstart + to >= len))
					alloc[b] = false;
			}
			if ((kind == 2 || kind == 3) && off < stop)
				memset(model + off, 0, stop - off);
			len = newsize;
		}
		{
			uint64_t want = 0;
			for (int b = 0; b < 9; b++)
				want += alloc[b];
			cr_assert_eq(blocks_of("/m"), want,
				     "op %d (%u): count %llu, model %llu", op,
				     r, (unsigned long long)blocks_of("/m"),
				     (unsigned long long)want);
			cr_assert_eq(count_blocks(ino), want, "op %d", op);
		}
		if (op % 100 == 0)
			check_model("/m", ino, model, len, 10000);
	}
	check_model("/m", ino, model, len, 65536);
	tu_reopen();
	check_model("/m", ino, model, len, 77777);
	free(model);
	free(buf);
}

/* ---- patches (format 3): partial writes without reading the block ------ */

/* The kv gets of content blocks (DATA keys) the store has made so far, as
 * the store counts them. */
static uint64_t block_reads(void)
{
	struct store_kv_counts c;

	store_kv_counts(tu_store, &c);
	return c.content_gets;
}

/* Compacts @ino's blocks (flush and full merges of their patches). */
static void compact_blocks(uint64_t ino)
{
	struct sbuf lo = {0}, hi = {0};

	key_data_range(&lo, &hi, T->name, ino, 0);
	cr_assert_eq(
	    kv_compact_range(tu_store->kv, lo.buf, lo.len, hi.buf, hi.len), 0);
	sbuf_release(&lo);
	sbuf_release(&hi);
}

Test(content, partial_write_of_a_file_without_holes_reads_no_block,
     .init = tu_setup, .fini = tu_teardown)
{
	size_t bs = tree_block_size(T);
	uint64_t ino = mkf("/f"), sp = mkf("/sparse"), reads;
	char *data = malloc(4 * bs), *model = malloc(4 * bs);

	cr_assert(tu_store->patch, "a new store patches blocks");
	for (size_t i = 0; i < 4 * bs; i++)
		data[i] = (char)(i * 13 + i / 509);
	wr("/f", ino, 0, data, 3 * bs + 100);
	memcpy(model, data, 3 * bs + 100);
	reads = block_reads();
	/* inside a block, straddling two, into the last (partial) block and
	 * past the end, and an append */
	wr("/f", ino, 4096, "abcd", 4);
	memcpy(model + 4096, "abcd", 4);
	wr("/f", ino, bs - 2, "0123", 4);
	memcpy(model + bs - 2, "0123", 4);
	wr("/f", ino, 3 * bs + 95, "tail-grows", 10);
	memcpy(model + 3 * bs + 95, "tail-grows", 10);
	cr_assert_eq(tree_write(T, "/f", ino, 0, "app", 3, true, NULL), 0);
	memcpy(model + 3 * bs + 105, "app", 3);
	reads = block_reads() - reads;
	cr_expect_eq(reads, 0, "%llu block reads for partial writes",
		     (unsigned long long)reads);
	check_model("/f", ino, model, 3 * bs + 108, 1000);
	cr_expect_eq(blocks_of("/f"), 4);
	cr_expect_eq(count_blocks(ino), 4);
	/* a file with a hole reads the block it writes into (it may not
	 * exist, and the count must stay exact) */
	wr("/sparse", sp, 2 * bs, "x", 1);
	reads = block_reads();
	wr("/sparse", sp, 2, "y", 1);
	cr_expect_eq(block_reads() - reads, 1);
	cr_expect_eq(blocks_of("/sparse"), 2);
	assert_fsck_clean(T);
	free(data);
	free(model);
}

Test(content, patched_blocks_against_model, .init = tu_setup,
     .fini = tu_teardown, .timeout = 300)
{
	size_t bs = tree_block_size(T);
	size_t cap = 6 * bs, len = 4 * bs + 333;
	char *model = malloc(cap), *buf = malloc(cap);
	unsigned seed = 777;
	uint64_t ino = mkf("/p"), res;

	for (size_t i = 0; i < len; i++)
		model[i] = (char)rand_r(&seed);
	wr("/p", ino, 0, model, len);
	for (int op = 0; op < 2000; op++) {
		unsigned r = rand_r(&seed) % 100;

		if (r < 80) {
			/* small writes, mostly inside the file */
			size_t off = rand_r(&seed) % (len + 100), n;

			n = 1 + rand_r(&seed) % (rand_r(&seed) % 8 ? 5000 : bs);
			if (off + n > cap)
				n = cap - off;
			for (size_t i = 0; i < n; i++)
				buf[i] = (char)rand_r(&seed);
			wr("/p", ino, off, buf, n);
			if (off > len)
				memset(model + len, 0, off - len);
			memcpy(model + off, buf, n);
			if (off + n > len)
				len = off + n;
		} else if (r < 84) {
			/* zero a range: stays dense */
			size_t off = rand_r(&seed) % len;
			size_t n = 1 + rand_r(&seed) % (len - off);
			cr_assert_eq(tree_fallocate(T, "/p", ino,
						    TREE_FALLOC_ZERO_RANGE, off,
						    n, NULL),
				     0);
			memset(model + off, 0, n);
		} else if (r < 87) {
			/* truncate down and up again: a hole, then no patch
			 * until the file is dense again */
			size_t ns = rand_r(&seed) % len;
			trunc_to("/p", ino, ns);
			memset(model + ns, 0, len - ns);
			len = ns;
		} else if (r < 89) {
			/* punch a hole inside: no longer dense */
			size_t off = rand_r(&seed) % len;
			size_t n = 1 + rand_r(&seed) % (len - off);
			cr_assert_eq(tree_fallocate(T, "/p", ino,
						    TREE_FALLOC_PUNCH_HOLE |
							TREE_FALLOC_KEEP_SIZE,
						    off, n, NULL),
				     0);
			memset(model + off, 0, n);
		} else if (r < 91) {
			/* fill it again from 0: dense */
			wr("/p", ino, 0, model, len);
		} else if (r < 93) {
			compact_blocks(ino);
		} else if (r < 95 && len) {
			/* SEEK_DATA finds the first block with bytes */
			size_t off = rand_r(&seed) % len;
			int rc = tree_seek(T, ino, len, off, SEEK_DATA, &res);
			cr_assert(rc == 0 || rc == -ENXIO);
			if (rc == 0)
				cr_assert(res >= off && res < len);
		} else {
			size_t off = rand_r(&seed) % (len + 10), got, n;
			size_t want = rand_r(&seed) % (2 * bs);
			cr_assert_eq(
			    tree_read(T, "/p", ino, off, want, buf, &got), 0);
			n = off >= len ? 0
				       : (len - off < want ? len - off : want);
			cr_assert_eq(got, n);
			cr_assert(got == 0 ||
				      memcmp(buf, model + off, got) == 0,
				  "op %d: read at %zu", op, off);
		}
		cr_assert_eq(blocks_of("/p"), count_blocks(ino), "op %d", op);
		if (op % 400 == 0) {
			check_model("/p", ino, model, len, 9999);
			assert_fsck_clean(T);
		}
	}
	check_model("/p", ino, model, len, bs);
	assert_fsck_clean(T);
	tu_reopen();
	check_model("/p", ino, model, len, 3 * bs);
	compact_blocks(ino);
	check_model("/p", ino, model, len, 77777);
	assert_fsck_clean(T);
	free(model);
	free(buf);
}

/* The kv seam's patches alone: folded when read, in a flush (the partial
 * merge of patches with no value under them in the memtable) and in a
 * compaction (the full merge), also past the value's end and on a key that
 * did not exist. */
Test(content, kv_patches_fold_in_flush_and_compaction, .init = tu_setup,
     .fini = tu_teardown)
{
	struct sbuf k = {0}, k2 = {0}, lo = {0}, hi = {0};
	char model[200], *v;
	size_t vlen;
	struct kv_batch *b;

	cr_assert(kv_can_patch(tu_store->kv));
	key_data(&k, T->name, 999, 0);
	key_data(&k2, T->name, 999, 1);
	key_data_range(&lo, &hi, T->name, 999, 0);
	memset(model, 'b', 50);
	b = kv_batch_new(tu_store->kv);
	kv_batch_put(b, k.buf, k.len, model, 50);
	cr_assert_eq(kv_batch_commit(tu_store->kv, b, false), 0);
	kv_batch_free(b);
	cr_assert_eq(
	    kv_compact_range(tu_store->kv, lo.buf, lo.len, hi.buf, hi.len), 0);
	for (int round = 0; round < 3; round++) {
		/* overlapping patches, one past the end with a gap */
		b = kv_batch_new(tu_store->kv);
		kv_batch_patch(b, k.buf, k.len, 10, "0123456789", 10);
		kv_batch_patch(b, k.buf, k.len, 15, "abc", 3);
		kv_batch_patch(b, k2.buf, k2.len, 5, "new", 3);
		cr_assert_eq(kv_batch_commit(tu_store->kv, b, false), 0);
		kv_batch_free(b);
		b = kv_batch_new(tu_store->kv);
		kv_batch_patch(b, k.buf, k.len, 60 + round * 20, "far", 3);
		cr_assert_eq(kv_batch_commit(tu_store->kv, b, false), 0);
		kv_batch_free(b);
		memcpy(model + 10, "01234abc89", 10);
		memset(model + 50 + round * 20, 0, 10);
		memcpy(model + 60 + round * 20, "far", 3);
		memset(model + 63 + round * 20, 0, 7);
		cr_assert_eq(kv_get(tu_store->kv, k.buf, k.len, &v, &vlen), 0);
		cr_assert_eq(vlen, 63 + (size_t)round * 20);
		cr_assert(memcmp(v, model, vlen) == 0, "round %d", round);
		free(v);
		cr_assert_eq(kv_get(tu_store->kv, k2.buf, k2.len, &v, &vlen),
			     0);
		cr_assert(vlen == 8 && memcmp(v, "\0\0\0\0\0new", 8) == 0);
		free(v);
		/* round 0: compacted (full merge); 1: folded in a flush of
		 * the memtable only; 2: read from the memtable */
		if (round == 0)
			cr_assert_eq(kv_compact_range(tu_store->kv, lo.buf,
						      lo.len, hi.buf, hi.len),
				     0);
		else if (round == 1)
			tu_reopen();
	}
	tu_reopen();
	cr_assert_eq(
	    kv_compact_range(tu_store->kv, lo.buf, lo.len, hi.buf, hi.len), 0);
	cr_assert_eq(kv_get(tu_store->kv, k.buf, k.len, &v, &vlen), 0);
	cr_assert(vlen == 103 && memcmp(v, model, vlen) == 0);
	free(v);
	sbuf_release(&k);
	sbuf_release(&k2);
	sbuf_release(&lo);
	sbuf_release(&hi);
}
