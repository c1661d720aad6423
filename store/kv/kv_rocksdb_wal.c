/*
 * kv_rocksdb_wal.c - reads RocksDB's write-ahead logs (the NNNNNN.log files)
 * on its own, to say what a damaged one would lose, and keeps a copy of
 * them before a repair (see kv_rocksdb_open.c for when).
 *
 * RocksDB opens a store with WAL recovery mode kTolerateCorruptedTailRecords
 * here: a log whose last record was cut short (a kill -9 or a power loss
 * during a write) replays up to that record, as it always did, while damage
 * anywhere before the end fails the open with a bare "Corruption: checksum
 * mismatch" that names neither the file nor what follows it. This file reads
 * the logs as RocksDB's log reader does (db/log_reader.cc, 7.8) to say which
 * file, at which offset, and how many records and writes RocksDB's
 * point-in-time recovery would drop from there on (the rest of that file
 * and every later log).
 *
 * The format: 32 KiB blocks of physical records, each a 7-byte header
 * (masked CRC32C of type and payload, 16-bit length, type; 11 bytes with
 * the 4-byte log number of a recycled log) and its payload; a record never
 * crosses a block, and a block's last bytes, fewer than a header, are
 * zeros. A logical record (one write batch: 8-byte sequence number, 4-byte
 * count of writes, the writes) is one FULL record or FIRST, MIDDLE..., LAST.
 * A record cut short by the end of the file is the torn tail the recovery
 * tolerates; a record that fails its checksum, a bad length inside the
 * file, an unknown type or a fragment out of order is damage.
 *
 * Limits: the reader tells damage in a log only; a damaged MANIFEST or table
 * file is RocksDB's to report. A damaged byte that turns a header into
 * zeros (type 0, length 0) makes RocksDB skip the rest of that block without
 * a word, as it does for preallocated space: this reader skips it too. The
 * counts after the damage are of the records whose checksums still hold,
 * read from the next block on (where RocksDB's reader would resynchronise).
 * Compressed logs (wal_compression) are not read: the store never turns it
 * on.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kv_rocksdb_i.h"
#include "log.h"

#define WAL_BLOCK    32768
#define WAL_HEADER   7
#define WAL_RHEADER  11 /* a recycled log's header */
#define WAL_MAX_LOGS 4096
#define LOST_DIR     "lost+found"

enum wal_type {
	WAL_ZERO = 0,
	WAL_FULL = 1,
	WAL_FIRST = 2,
	WAL_MIDDLE = 3,
	WAL_LAST = 4,
	/* 5-8: the same in a recycled log */
	WAL_COMPRESSION = 9, /* kSetCompressionType */
};

/* CRC32C (Castagnoli, reflected 0x82f63b78), as RocksDB's util/crc32c. */
static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc32c(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	while (n--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

static uint32_t crc_unmask(uint32_t m)
{
	uint32_t r = m - 0xa282ead8u;

	return (r >> 17) | (r << 15);
}

static uint32_t le32(const unsigned char *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* What one log holds, as far as it reads. */
struct wal_scan {
	uint64_t size;
	bool damaged;
	uint64_t offset; /* of the first damaged record */
	const char *why; /* static */
	/* logical records (write batches) and their writes: before the damage
	 * (or all, when none), and readable after it */
	uint64_t kept, kept_writes;
	uint64_t after, after_writes;
};

/* A logical record ends: count it with its writes. */
static void wal_count(struct wal_scan *w, uint64_t writes)
{
	if (w->damaged) {
		w->after++;
		w->after_writes += writes;
	} else {
		w->kept++;
		w->kept_writes += writes;
	}
}

static void wal_damage(struct wal_scan *w, uint64_t at, const char *why)
{
	if (!w->damaged) {
		w->damaged = true;
		w->offset = at;
		w->why = why;
	}
}

/*
 * Reads the physical records of one block @b of @n bytes at file offset
 * @base; *frag is true inside a fragmented record whose first fragment held
 * *fwrites writes. Returns false when the rest of the block cannot be read
 * (it is dropped, as RocksDB's reader drops it).
 */
static bool wal_block(struct wal_scan *w, const unsigned char *b, size_t n,
		      uint64_t base, bool *frag, uint64_t *fwrites)
{
	size_t pos = 0, hs, len;
	unsigned type;

	while (pos + WAL_HEADER <= n) {
		const unsigned char *h = b + pos;
		uint64_t at = base + pos;

		len = h[4] | (size_t)h[5] << 8;
		type = h[6];
		hs = type >= 5 && type <= 8 ? WAL_RHEADER : WAL_HEADER;
		if (type == WAL_ZERO && len == 0)
			return true; /* preallocated: skip the block */
		if (pos + hs + len > n) {
			if (n < WAL_BLOCK)
				return true; /* cut short at the end: a torn
						tail, not damage */
			wal_damage(w, at, "bad record length");
			return false;
		}
		if (crc_unmask(le32(h)) != crc32c(h + 6, hs - 6 + len)) {
			/* the length may still be right: the records after
			 * it in this block are counted if their checksums
			 * hold (garbage fails its own) */
			wal_damage(w, at, "checksum mismatch");
			*frag = false;
			pos += hs + len;
			continue;
		}
		if (type > 4 && type <= 8)
			type -= 4;
		if (type == WAL_COMPRESSION) {
			pos += hs + len;
			continue;
		}
		if (type < WAL_FULL || type > WAL_LAST) {
			wal_damage(w, at, "unknown record type");
			return false;
		}
		if ((type == WAL_FULL || type == WAL_FIRST) && *frag) {
			wal_damage(w, at, "partial record without end");
			*frag = false;
			return false;
		}
		if ((type == WAL_MIDDLE || type == WAL_LAST) && !*frag) {
			/* after damage: the tail of a record whose start was
			 * dropped; before it: damage */
			if (!w->damaged) {
				wal_damage(
				    w, at,
				    "missing start of fragmented record");
				return false;
			}
			pos += hs + len;
			continue;
		}
		if (type == WAL_FULL || type == WAL_FIRST) {
			*fwrites = len >= 12 ? le32(h + hs + 8) : 0;
			*frag = type == WAL_FIRST;
		}
		if (type == WAL_FULL || type == WAL_LAST) {
			*frag = false;
			wal_count(w, *fwrites);
		}
		pos += hs + len;
	}
	return true;
}

/* Reads log @path into @w. Errors: -errno of open or read. */
static int wal_scan_file(const char *path, struct wal_scan *w)
{
	unsigned char *b = malloc(WAL_BLOCK);
	uint64_t base = 0, fwrites = 0;
	bool frag = false;
	int fd, rc = 0;
	ssize_t n;

	memset(w, 0, sizeof(*w));
	if (!b)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	for (;;) {
		size_t got = 0;

		while (got < WAL_BLOCK) {
			n = pread(fd, b + got, WAL_BLOCK - got, base + got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				rc = -errno;
				goto out;
			}
			if (n == 0)
				break;
			got += n;
		}
		if (!got)
			break;
		if (!wal_block(w, b, got, base, &frag, &fwrites))
			frag = false; /* resynchronise at the next block */
		base += got;
		if (got < WAL_BLOCK)
			break;
	}
	w->size = base;
out:
	if (fd >= 0)
		close(fd);
	free(b);
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The numbers of the logs in @dir, ascending, in a malloc'd *out. */
static int wal_list(const char *dir, uint64_t **out, size_t *count)
{
	uint64_t *nums = NULL;
	size_t n = 0;
	struct dirent *e;
	DIR *d = opendir(dir);

	*out = NULL;
	*count = 0;
	if (!d)
		return -errno;
	nums = malloc(WAL_MAX_LOGS * sizeof(*nums));
	if (!nums) {
		closedir(d);
		return -ENOMEM;
	}
	while ((e = readdir(d)) && n < WAL_MAX_LOGS) {
		char *end;
		uint64_t v = strtoull(e->d_name, &end, 10);

		if (end != e->d_name && !strcmp(end, ".log"))
			nums[n++] = v;
	}
	closedir(d);
	qsort(nums, n, sizeof(*nums), cmp_u64);
	*out = nums;
	*count = n;
	return 0;
}

int kvr_wal_check(const char *dir, struct kvr_wal_damage *d)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	uint64_t *nums = NULL;
	size_t n = 0, i;
	char path[4096];
	int rc;

	pthread_once(&once, crc_init);
	memset(d, 0, sizeof(*d));
	rc = wal_list(dir, &nums, &n);
	for (i = 0; i < n && !rc; i++) {
		struct wal_scan w;

		snprintf(path, sizeof(path), "%s/%06" PRIu64 ".log", dir,
			 nums[i]);
		rc = wal_scan_file(path, &w);
		if (rc)
			break;
		if (d->damaged) { /* a later log: dropped whole */
			d->later_logs++;
			d->records += w.kept + w.after;
			d->writes += w.kept_writes + w.after_writes;
			continue;
		}
		if (!w.damaged)
			continue;
		d->damaged = true;
		d->log = nums[i];
		d->offset = w.offset;
		d->size = w.size;
		snprintf(d->why, sizeof(d->why), "%s", w.why);
		d->kept = w.kept;
		d->records = w.after;
		d->writes = w.after_writes;
	}
	free(nums);
	return rc ? rc : d->damaged;
}

void kvr_wal_describe(const struct kvr_wal_damage *d, char *buf, size_t size)
{
	char later[96] = "";

	if (d->later_logs)
		snprintf(later, sizeof(later), " and %" PRIu64 " later log%s",
			 d->later_logs, d->later_logs == 1 ? "" : "s");
	snprintf(
	    buf, size,
	    "write-ahead log %06" PRIu64 ".log is damaged at offset "
	    "%" PRIu64 " of %" PRIu64 " bytes (%s): the %" PRIu64
	    " record%s (%" PRIu64 " write%s) readable after that offset"
	    "%s would be dropped; the %" PRIu64 " record%s before it are kept",
	    d->log, d->offset, d->size, d->why, d->records,
	    d->records == 1 ? "" : "s", d->writes, d->writes == 1 ? "" : "s",
	    later, d->kept, d->kept == 1 ? "" : "s");
}

/* Copies @from to @to (created, 0600). Errors: -errno. */
static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		goto out;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out;
		}
		if (write(out, buf, n) != n) {
			rc = -EIO; /* a short write: the disk is full */
			goto out;
		}
	}
	if (fsync(out))
		rc = -errno;
out:
	if (out >= 0 && close(out) && !rc)
		rc = -errno;
	close(in);
	return rc;
}

int kvr_wal_keep(const char *dir, const struct kvr_wal_damage *d, char *where,
		 size_t size)
{
	uint64_t *nums = NULL;
	size_t n = 0, i;
	char from[4096], to[4096];
	time_t now = time(NULL);
	struct tm tm;
	char stamp[32];
	int rc;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(where, size, "%s/%s/", dir, LOST_DIR);
	snprintf(to, sizeof(to), "%s/%s", dir, LOST_DIR);
	if (mkdir(to, 0700) && errno != EEXIST)
		return -errno;
	rc = wal_list(dir, &nums, &n);
	for (i = 0; i < n && !rc; i++) {
		if (nums[i] < d->log)
			continue;
		snprintf(from, sizeof(from), "%s/%06" PRIu64 ".log", dir,
			 nums[i]);
		snprintf(to, sizeof(to), "%s/%s/%06" PRIu64 ".log.%s", dir,
			 LOST_DIR, nums[i], stamp);
		rc = copy_file(from, to);
		if (rc == -EEXIST)
			rc = 0; /* a second run in the same second */
	}
	free(nums);
	return rc;
}

int kv_rocksdb_damage(const char *dir, char *buf, size_t size)
{
	struct kvr_wal_damage d;
	int rc = kvr_wal_check(dir, &d);

	if (rc == 1)
		kvr_wal_describe(&d, buf, size);
	return rc == 1 ? 0 : rc == 0 ? -ENOENT : rc;
}
