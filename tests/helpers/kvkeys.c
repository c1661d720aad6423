/*
 * kvkeys.c - mount-test helper: counts (and optionally lists) the raw keys of
 * a store that start with a prefix, e.g. "DRIVE#main|JOURNAL#".
 *
 *   kvkeys [-l] STORE PREFIX
 *
 * It goes through store/kv/kv.c only (never RocksDB itself) and opens the
 * database read-only WITHOUT store_open(), so unlike pathfsctl it does not
 * replay journal records or reclaim orphans first: it shows the store exactly
 * as a crash left it. That is what the crash tests need to prove a crash
 * really happened mid-rename (a journal record is there) and that a remount
 * finished the work (none is left).
 *
 * Prints the count on stdout (and with -l each key first, bytes outside
 * printable ASCII as \xNN). Exit 0 on success, 1 if the store cannot be opened
 * or read (message on stderr), 2 on usage errors.
 *
 * Limits: whether a read-only open works while a daemon holds the store
 * depends on kv.c; the tests call it on unmounted stores.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "keys_i.h"
#include "kv_i.h"

static void print_key(const char *k, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)k[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			putchar(c);
		else
			printf("\\x%02x", c);
	}
	putchar('\n');
}

int main(int argc, char **argv)
{
	struct kv_options opt = {.read_only = true, .family = key_family};
	struct kv *kv = NULL;
	struct kv_iter *it = NULL;
	const char *dir, *prefix;
	char hi[4096];
	size_t plen, klen;
	unsigned long long count = 0;
	int list = 0, rc, status = 1;
	const char *k;

	if (argc == 4 && !strcmp(argv[1], "-l")) {
		list = 1;
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: kvkeys [-l] STORE PREFIX\n");
		return 2;
	}
	dir = argv[1];
	prefix = argv[2];
	plen = strlen(prefix);
	if (plen == 0 || plen >= sizeof(hi)) {
		fprintf(stderr, "kvkeys: bad prefix\n");
		return 2;
	}

	rc = kv_open(&kv, dir, &opt);
	if (rc) {
		fprintf(stderr, "kvkeys: cannot open %s: %s\n", dir,
			strerror(-rc));
		goto out;
	}
	/*
	 * Upper bound: the prefix with its last byte incremented. Prefixes the
	 * tests use end in '#' or '|', never in 0xff.
	 */
	memcpy(hi, prefix, plen);
	hi[plen - 1]++;
	rc = kv_iter_open(&it, kv, prefix, plen, hi, plen);
	if (rc) {
		fprintf(stderr, "kvkeys: iterator: %s\n", strerror(-rc));
		goto out;
	}
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		k = kv_iter_key(it, &klen);
		if (klen < plen || memcmp(k, prefix, plen))
			break;
		if (list)
			print_key(k, klen);
		count++;
	}
	rc = kv_iter_status(it);
	if (rc) {
		fprintf(stderr, "kvkeys: scan: %s\n", strerror(-rc));
		goto out;
	}
	printf("%llu\n", count);
	status = 0;
out:
	kv_iter_free(it);
	kv_close(kv);
	return status;
}
