/*
 * rel_plant.c - plants damage in an unmounted store, and looks inside one,
 * for the reliability mount tests (rel_corrupt.sh, rel_open_errors.sh,
 * rel_kill9.sh, rel_ctl_args.sh). Uses the store internals on purpose.
 *
 *   rel_plant node STORE DRIVE PATH        garbage as PATH's node value
 *   rel_plant block STORE DRIVE PATH BLK   garbage as content block BLK
 *   rel_plant meta STORE DRIVE FORMAT      META with format version FORMAT
 *   rel_plant journal STORE DRIVE          prints the number of JOURNAL keys
 *   rel_plant dump STORE                   prints every key (escaped) and a
 *                                          hash of its value, in key order,
 *                                          each drive's blocks after the rest
 *   rel_plant many STORE DRIVE DIR N       makes folder DIR holding N empty
 *                                          files f0000000.. in batches as
 *                                          big as the kv engine takes (a
 *                                          big folder in seconds, on etcd)
 *
 * node, block and meta write with one batch through kv (no store_open, which
 * would validate or replay first; block looks the inode up with store_open
 * and closes it before planting). journal and dump open RocksDB read-only
 * and change nothing. Exit status 0 on success; errors are printed.
 *
 * Limits: the garbage is fixed (version byte 0xEE then 0xEE bytes): a node
 * value no decoder may accept, a block value longer than two blocks.
 */
#include "batch_i.h"
#include "codec_i.h"
#include "drive_i.h"
#include "parent_i.h"
#include "rel_common.h"

static int open_kv(struct kv **kv, const char *dir, bool ro)
{
	struct kv_options o = {.read_only = ro, .family = key_family};
	int rc = kv_open(kv, dir, &o);

	if (rc)
		fprintf(stderr, "rel_plant: open %s: %s\n", dir, strerror(-rc));
	return rc;
}

static int put(const char *dir, struct sbuf *key, const char *val, size_t vlen)
{
	struct kv *kv = NULL;
	struct kv_batch *b = NULL;
	int rc = open_kv(&kv, dir, false);

	if (rc)
		goto out;
	b = kv_batch_new(kv);
	kv_batch_put(b, key->buf, key->len, val, vlen);
	rc = kv_batch_commit(kv, b, true);
	if (rc)
		fprintf(stderr, "rel_plant: commit: %s\n", strerror(-rc));
out:
	kv_batch_free(b);
	kv_close(kv);
	return rc;
}

static int plant_node(const char *dir, const char *drive, const char *path)
{
	struct sbuf key = {0};
	char val[40];
	int rc = path_check(path);

	if (rc) {
		fprintf(stderr, "rel_plant: bad path %s\n", path);
		return rc;
	}
	memset(val, 0xEE, sizeof(val));
	key_node(&key, drive, path);
	rc = put(dir, &key, val, sizeof(val));
	sbuf_release(&key);
	return rc;
}

static int plant_block(const char *dir, const char *drive, const char *path,
		       uint64_t blk)
{
	struct store_options o = {0};
	struct store *s = NULL;
	struct tree *t;
	struct tree_attr a;
	struct sbuf key = {0};
	char *val = NULL;
	size_t bs, vlen;
	int rc = store_open(&s, dir, &o);

	if (rc) {
		fprintf(stderr, "rel_plant: store_open: %s\n", strerror(-rc));
		goto out;
	}
	rc = store_drive(s, drive, &t);
	if (!rc)
		rc = tree_lookup(t, path, &a);
	if (rc) {
		fprintf(stderr, "rel_plant: %s: %s\n", path, strerror(-rc));
		goto out;
	}
	bs = tree_block_size(t);
	store_close(s);
	s = NULL;
	vlen = 2 * bs + 7;
	val = malloc(vlen);
	memset(val, 0xEE, vlen);
	key_data(&key, drive, a.ino, blk);
	rc = put(dir, &key, val, vlen);
	if (!rc)
		printf("ino %llu %016llx\n", (unsigned long long)a.ino,
		       (unsigned long long)a.ino);
out:
	store_close(s);
	free(val);
	sbuf_release(&key);
	return rc;
}

static int plant_meta(const char *dir, const char *drive, uint32_t format)
{
	struct kv *kv = NULL;
	struct sbuf key = {0}, val = {0};
	struct meta m;
	char *old = NULL;
	size_t olen;
	int rc = open_kv(&kv, dir, false);

	if (rc)
		goto out;
	key_meta(&key, drive);
	rc = kv_get(kv, key.buf, key.len, &old, &olen);
	if (!rc)
		rc = meta_decode(old, olen, &m);
	if (rc) {
		fprintf(stderr, "rel_plant: META of %s: %s\n", drive,
			strerror(-rc));
		goto out;
	}
	kv_close(kv);
	kv = NULL;
	m.format = format;
	meta_encode(&val, &m);
	rc = put(dir, &key, val.buf, val.len);
out:
	kv_close(kv);
	free(old);
	sbuf_release(&key);
	sbuf_release(&val);
	return rc;
}

static int count_journal(const char *dir, const char *drive)
{
	struct kv *kv = NULL;
	struct kv_iter *it = NULL;
	struct sbuf lo = {0}, hi = {0};
	unsigned long n = 0;
	int rc = open_kv(&kv, dir, true);

	if (rc)
		goto out;
	key_kind_range(&lo, &hi, drive, KEY_JOURNAL);
	rc = kv_iter_open(&it, kv, lo.buf, lo.len, hi.buf, hi.len);
	if (rc)
		goto out;
	for (; kv_iter_valid(it); kv_iter_next(it))
		n++;
	rc = kv_iter_status(it);
	printf("%lu\n", n);
out:
	kv_iter_free(it);
	kv_close(kv);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

/* Adds the drive of key @k to @drives (names, each ended by '|') unless it is
 * the last one there: keys come sorted, a drive's keys in one run. */
static void note_drive(struct sbuf *drives, const char *k, size_t klen)
{
	const char *bar = klen > 6 && memcmp(k, "DRIVE#", 6) == 0
			      ? memchr(k + 6, '|', klen - 6)
			      : NULL;
	size_t dl = bar ? (size_t)(bar - k) - 5 : 0; /* name and its '|' */

	if (!bar ||
	    (drives->len >= dl &&
	     memcmp(drives->buf + drives->len - dl, k + 6, dl) == 0 &&
	     (drives->len == dl || drives->buf[drives->len - dl - 1] == '|')))
		return;
	sbuf_add(drives, k + 6, dl);
}

/* Prints every key of [lo, hi) (one kv family) as dump() does; adds the
 * drives met to @drives (see note_drive) if not NULL. */
static int dump_range(struct kv *kv, const char *lo, size_t lolen,
		      const char *hi, size_t hilen, struct sbuf *drives)
{
	struct kv_iter *it = NULL;
	int rc = kv_iter_open(&it, kv, lo, lolen, hi, hilen);

	if (rc)
		goto out;
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen, vlen;
		const char *k = kv_iter_key(it, &klen);
		const char *v = kv_iter_value(it, &vlen);
		char line[8192] = "", *kc = malloc(klen + 1);

		memcpy(kc, k, klen);
		kc[klen] = '\0';
		if (drives)
			note_drive(drives, k, klen);
		rel_escape(line, sizeof(line), kc);
		printf("%s %zu %016llx\n", line, vlen,
		       (unsigned long long)rel_fnv(REL_FNV_INIT, v, vlen));
		free(kc);
	}
	rc = kv_iter_status(it);
out:
	kv_iter_free(it);
	return rc;
}

static int dump(const char *dir)
{
	struct kv *kv = NULL;
	struct sbuf drives = {0};
	int rc = open_kv(&kv, dir, true);

	if (rc == 0)
		rc = dump_range(kv, "", 0, NULL, 0, &drives);
	/* then each drive's blocks, kept in their own kv family */
	for (char *d = drives.buf, *bar; rc == 0 && d && (bar = strchr(d, '|'));
	     d = bar + 1) {
		struct sbuf lo = {0}, hi = {0};

		*bar = '\0';
		key_kind_range(&lo, &hi, d, KEY_DATA);
		rc = dump_range(kv, lo.buf, lo.len, hi.buf, hi.len, NULL);
		sbuf_release(&lo);
		sbuf_release(&hi);
	}
	sbuf_release(&drives);
	kv_close(kv);
	return rc;
}

static int many(const char *dir, const char *drive, const char *path, size_t n)
{
	struct store_options o = {0};
	struct store *s = NULL;
	struct tree *t;
	struct kv_batch *b = NULL;
	struct tree_attr a = {0}, d;
	char p[4200];
	int rc = store_open(&s, dir, &o);

	if (rc == 0)
		rc = store_drive(s, drive, &t);
	if (rc == 0)
		rc = tree_mknode(t, path, S_IFDIR | 0755, getuid(), getgid(), 0,
				 NULL, &d);
	if (rc) {
		fprintf(stderr, "rel_plant: %s %s: %s\n", dir, path,
			strerror(-rc));
		goto out;
	}
	b = kv_batch_new(s->kv);
	a.mode = S_IFREG | 0644;
	a.nlink = 1;
	a.uid = getuid();
	a.gid = getgid();
	a.atime_ns = a.mtime_ns = a.ctime_ns = tree_now_ns();
	for (size_t i = 0; i < n && rc == 0; i++) {
		snprintf(p, sizeof(p), "%s/f%07zu", path, i);
		rc = tree_alloc_ino(t, &a.ino);
		if (rc)
			break;
		tree_batch_put_node(t, b, p, &a, NULL);
		parent_batch_put(t, b, a.ino, d.ino, p);
		if (kv_batch_count(b) + 2 >= tree_batch_max_ops(t) ||
		    kv_batch_count(b) >= 1000) {
			rc = tree_commit(t, b);
			kv_batch_clear(b);
		}
	}
	if (rc == 0)
		rc = tree_commit(t, b);
	if (rc)
		fprintf(stderr, "rel_plant: many: %s\n", strerror(-rc));
out:
	kv_batch_free(b);
	store_close(s);
	return rc;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc == 5 && !strcmp(argv[1], "node"))
		rc = plant_node(argv[2], argv[3], argv[4]);
	else if (argc == 6 && !strcmp(argv[1], "block"))
		rc = plant_block(argv[2], argv[3], argv[4],
				 strtoull(argv[5], NULL, 0));
	else if (argc == 5 && !strcmp(argv[1], "meta"))
		rc = plant_meta(argv[2], argv[3],
				(uint32_t)strtoul(argv[4], NULL, 0));
	else if (argc == 4 && !strcmp(argv[1], "journal"))
		rc = count_journal(argv[2], argv[3]);
	else if (argc == 3 && !strcmp(argv[1], "dump"))
		rc = dump(argv[2]);
	else if (argc == 6 && !strcmp(argv[1], "many"))
		rc =
		    many(argv[2], argv[3], argv[4], strtoull(argv[5], NULL, 0));
	else {
		fprintf(stderr, "usage: rel_plant node STORE DRIVE PATH\n"
				"       rel_plant block STORE DRIVE PATH BLK\n"
				"       rel_plant meta STORE DRIVE FORMAT\n"
				"       rel_plant journal STORE DRIVE\n"
				"       rel_plant dump STORE\n"
				"       rel_plant many STORE DRIVE DIR N\n");
		return 2;
	}
	return rc ? 1 : 0;
}
