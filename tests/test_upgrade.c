/*
 * test_upgrade.c - a store of a previous format (1: every key in one kv
 * family; 2: no patched blocks; 3: no reverse index PARENT#) opens with
 * this one: read as it is when read-only, upgraded on the first read-write
 * open (1: content blocks moved to their own family; 2: the marker only,
 * after which partial writes patch blocks; 3: the index built), also when
 * an upgrade is killed midway, and nothing is lost.
 *
 * The old stores are built here, not kept as binary fixtures: a store
 * opened with store_options.format = 1 writes the format-1 layout (the marker
 * says format 1, kv keeps one column family), which the test checks from the
 * outside (marker text, RocksDB's OPTIONS file) before upgrading; with
 * format = 2 the marker says 2 and no block is ever patched.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "parent_i.h"
#include "branchutil.h"
#include "testutil.h"

#define T     tu_tree
#define BATCH 4 /* keys per upgrade batch in the kill tests */

/* The format number in the store's marker file. */
static int marker_format(void)
{
	char path[4200];
	int format = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/PATHFS", tu_dir);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "pathfs store\nformat %d", &format), 1);
	fclose(f);
	return format;
}

/* true if RocksDB's newest OPTIONS file lists a column family "content". */
static bool has_content_family(void)
{
	char cmd[4400];
	int rc;

	snprintf(cmd, sizeof(cmd),
		 "grep -q 'CFOptions \"content\"' \"$(ls -t '%s'/OPTIONS-* | "
		 "head -n 1)\"",
		 tu_dir);
	rc = system(cmd);
	cr_assert(WIFEXITED(rc));
	return WEXITSTATUS(rc) == 0;
}

/* Content keys of drive "main" left in the tree family (the default column
 * family, where format 1 kept them): an iterator over every key reads it. */
static size_t data_keys_in_tree_family(void)
{
	struct kv_iter *it;
	size_t n = 0;

	cr_assert_eq(kv_iter_open(&it, tu_store->kv, "", 0, NULL, 0), 0);
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen;
		const char *k = kv_iter_key(it, &klen);
		if (memmem(k, klen, "|DATA#", 6))
			n++;
	}
	cr_assert_eq(kv_iter_status(it), 0);
	kv_iter_free(it);
	return n;
}

static void open_with(const struct store_options *o)
{
	int rc;

	store_close(tu_store);
	tu_store = NULL;
	tu_tree = NULL;
	rc = store_open(&tu_store, tu_dir, o);
	cr_assert_eq(rc, 0, "store_open: %s", strerror(-rc));
	cr_assert_eq(store_drive(tu_store, "main", &tu_tree), 0);
}

/*
 * Replaces the fixture's store by a store of @format holding a branch of every
 * kind of node (build()), files of many blocks, a sparse file and a second
 * drive; returns the snapshot of both drives (caller frees).
 */
static char *make_old_store(int format, int files)
{
	struct store_options o = {.create = true, .format = format};
	struct tree *t2;
	struct tree_attr a;
	char p[64], *s1, *s2, *all;

	store_close(tu_store);
	tu_store = NULL;
	tu_rmrf(tu_dir);
	cr_assert_eq(store_open(&tu_store, tu_dir, &o), 0);
	cr_assert_eq(store_drive_create(tu_store, "main", getuid(), getgid()),
		     0);
	cr_assert_eq(store_drive_create(tu_store, "main0", getuid(), getgid()),
		     0);
	cr_assert_eq(store_drive(tu_store, "main", &tu_tree), 0);
	cr_assert_eq(store_drive(tu_store, "main0", &t2), 0);
	build(T, "/b", 40);
	tu_mkdir(T, "/many");
	for (int i = 0; i < files; i++) {
		snprintf(p, sizeof(p), "/many/f%02d", i);
		mkfile_n(T, p, (size_t)(i + 1) * 70000, i);
	}
	/* sparse: one block at 10 MiB, nothing before it */
	tu_mkfile(T, "/sparse", "", 0);
	cr_assert_eq(tree_lookup(T, "/sparse", &a), 0);
	cr_assert_eq(
	    tree_write(T, "/sparse", a.ino, 10 << 20, "tail", 4, false, NULL),
	    0);
	mkfile_n(t2, "/other", 300000, 9);
	s1 = snap(T, "/", true);
	s2 = snap(t2, "/", true);
	cr_assert(asprintf(&all, "%s--\n%s", s1, s2) > 0);
	free(s1);
	free(s2);
	return all;
}

static char *snap_both(void)
{
	struct tree *t2;
	char *s1, *s2, *all;

	cr_assert_eq(store_drive(tu_store, "main0", &t2), 0);
	s1 = snap(T, "/", true);
	s2 = snap(t2, "/", true);
	cr_assert(asprintf(&all, "%s--\n%s", s1, s2) > 0);
	free(s1);
	free(s2);
	return all;
}

static void assert_upgraded(const char *before)
{
	struct tree *t2;
	char *after = snap_both();

	cr_assert_eq(marker_format(), TREE_FORMAT_VERSION);
	cr_assert(has_content_family());
	cr_assert_eq(data_keys_in_tree_family(), 0,
		     "content blocks left in the tree family");
	cr_assert_str_eq(after, before, "the upgrade changed the drives");
	assert_fsck_clean(T);
	cr_assert_eq(store_drive(tu_store, "main0", &t2), 0);
	assert_fsck_clean(t2);
	free(after);
}

Test(upgrade, format1_store_opens_and_is_upgraded, .init = tu_setup,
     .fini = tu_teardown)
{
	struct store_options ro = {.read_only = true}, rw = {0};
	char *before = make_old_store(1, 6), *now;

	/* the previous layout: marker 1, one column family, blocks there */
	store_close(tu_store);
	tu_store = NULL;
	cr_assert_eq(marker_format(), 1);
	cr_assert(!has_content_family());
	/* read-only: read as it is, nothing written */
	open_with(&ro);
	cr_assert(data_keys_in_tree_family() > 6 * 10);
	now = snap_both();
	cr_assert_str_eq(now, before);
	free(now);
	cr_assert_eq(marker_format(), 1);
	cr_assert(!has_content_family());
	/* read-write: upgraded */
	open_with(&rw);
	assert_upgraded(before);
	/* and it stays so, also through a write and a reopen */
	mkfile_n(T, "/many/new", 100000, 77);
	free(before);
	before = snap_both();
	tu_reopen();
	assert_upgraded(before);
	free(before);
}

Test(upgrade, an_upgraded_store_refuses_format1, .init = tu_setup,
     .fini = tu_teardown)
{
	struct store_options o = {.format = 1};
	struct store *s = NULL;

	store_close(tu_store);
	tu_store = NULL;
	cr_assert_eq(store_open(&s, tu_dir, &o), -EINVAL,
		     "no way back to format 1");
	tu_store = tu_open(tu_dir);
}

/*
 * The child of upgrade_killed_after(): a fresh process (exec'd, as a fork of
 * a process with RocksDB's threads may deadlock) that opens the store in
 * $UPGRADE_CHILD_STORE read-write, before Criterion starts, and exits 0 if
 * the open succeeded, 1 if not.
 */
__attribute__((constructor)) static void upgrade_child(void)
{
	const char *dir = getenv("UPGRADE_CHILD_STORE");
	struct store_options o = {.rename_batch = BATCH};
	struct store *s = NULL;

	if (!dir)
		return;
	_exit(store_open(&s, dir, &o) == 0 ? 0 : 1);
}

/*
 * Opens the store read-write in a child with the crash hook set to kill it
 * after @after batches; true if the child was killed (the upgrade was then
 * midway), false if it finished.
 */
static bool upgrade_killed_after(int after)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char v[16];

		snprintf(v, sizeof(v), "%d", after);
		setenv("PATHFS_CRASH_AFTER_BATCHES", v, 1);
		setenv("UPGRADE_CHILD_STORE", tu_dir, 1);
		execl("/proc/self/exe", "test_upgrade", (char *)NULL);
		_exit(2);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status)) {
		cr_assert_eq(WTERMSIG(status), SIGKILL);
		return true;
	}
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the upgrade failed (%d)", status);
	return false;
}

Test(upgrade, killed_midway_resumes_and_loses_nothing, .init = tu_setup,
     .fini = tu_teardown)
{
	struct store_options ro = {.read_only = true}, rw = {0};
	struct store *s = NULL;
	char *before = make_old_store(1, 6);
	int kills = 0;

	store_close(tu_store);
	tu_store = NULL;
	/* BATCH keys a batch: kill it after 3 batches, then again 4 batches
	 * into what is left, and so on, until an open finishes it */
	for (int after = 2; upgrade_killed_after(after); after++) {
		int format = marker_format();

		kills++;
		cr_assert(format == 1 || format == 3,
			  "marked done while midway (%d)", format);
		cr_assert(has_content_family());
		/* midway a read-only open cannot see every block: refused;
		 * once they moved (format 3, the index not yet built) it
		 * reads them */
		if (format == 1) {
			cr_assert_eq(store_open(&s, tu_dir, &ro), -EUCLEAN);
			cr_assert_null(s);
		} else {
			cr_assert_eq(store_open(&s, tu_dir, &ro), 0);
			store_close(s);
			s = NULL;
		}
		cr_assert_lt(kills, 100);
	}
	cr_assert_geq(kills, 3, "the upgrade was not killed midway");
	open_with(&rw);
	assert_upgraded(before);
	free(before);
}

Test(upgrade, killed_after_the_last_batch, .init = tu_setup,
     .fini = tu_teardown)
{
	struct store_options ro = {.read_only = true}, rw = {0};
	char *before = make_old_store(1, 2);
	size_t keys;

	/* every block moved, the marker not yet rewritten */
	open_with(&ro);
	keys = data_keys_in_tree_family();
	store_close(tu_store);
	tu_store = NULL;
	cr_assert(upgrade_killed_after((int)((keys + BATCH - 1) / BATCH) - 1));
	cr_assert_eq(marker_format(), 1);
	open_with(&rw);
	assert_upgraded(before);
	free(before);
}

/* A partial write into every file of /many (they have no holes). */
static void scribble(const char *tag)
{
	for (int i = 0; i < 4; i++) {
		char p[64];
		struct tree_attr a;

		snprintf(p, sizeof(p), "/many/f%02d", i);
		cr_assert_eq(tree_lookup(T, p, &a), 0);
		cr_assert_eq(tree_write(T, p, a.ino, 1000 + (uint64_t)i * 3,
					tag, strlen(tag), false, NULL),
			     0);
	}
}

Test(upgrade, format2_store_opens_and_is_upgraded, .init = tu_setup,
     .fini = tu_teardown)
{
	struct store_options ro = {.read_only = true}, rw = {0};
	struct store_options o2 = {.format = 2};
	char *before = make_old_store(2, 4), *now;

	/* a format-2 store never patches, also when written */
	cr_assert(!tu_store->patch);
	scribble("format-2 write");
	free(before);
	before = snap_both();
	store_close(tu_store);
	tu_store = NULL;
	cr_assert_eq(marker_format(), 2);
	cr_assert(has_content_family());
	/* opened as format 2 again, or read-only: left as it is */
	open_with(&o2);
	cr_assert(!tu_store->patch);
	open_with(&ro);
	now = snap_both();
	cr_assert_str_eq(now, before);
	free(now);
	store_close(tu_store);
	tu_store = NULL;
	cr_assert_eq(marker_format(), 2);
	/* read-write: format 3, and partial writes patch from now on */
	open_with(&rw);
	assert_upgraded(before);
	cr_assert(tu_store->patch);
	scribble("format-3 patch");
	free(before);
	before = snap_both();
	assert_fsck_clean(T);
	tu_reopen();
	assert_upgraded(before);
	/* and no way back to format 2 */
	store_close(tu_store);
	tu_store = NULL;
	{
		struct store *s = NULL;
		cr_assert_eq(store_open(&s, tu_dir, &o2), -EINVAL);
	}
	tu_store = tu_open(tu_dir);
	free(before);
}

/*
 * Replaces the fixture's store by a format-3 store as a format-3 program
 * left it: a branch of every kind of node and no PARENT# key (this program
 * writes them in any format: they are deleted), plus a stray PARENT record
 * naming the wrong place (what an interrupted build followed by a format-3
 * program's changes could leave). Returns the snapshot of "main".
 */
static char *make_format3_store(void)
{
	struct store_options o = {.create = true, .format = 3};
	struct sbuf lo = {0}, hi = {0};
	struct kv_batch *b;
	struct tree_attr a;

	store_close(tu_store);
	tu_store = NULL;
	tu_rmrf(tu_dir);
	cr_assert_eq(store_open(&tu_store, tu_dir, &o), 0);
	cr_assert_eq(store_drive_create(tu_store, "main", getuid(), getgid()),
		     0);
	cr_assert_eq(store_drive(tu_store, "main", &tu_tree), 0);
	build(T, "/b", 40);
	tu_mkdir(T, "/b/deep");
	tu_mkdir(T, "/b/deep/er");
	tu_mkfile(T, "/b/deep/er/f", "x", 1);
	cr_assert_gt(kind_keys(T, KEY_PARENT), 40);
	b = kv_batch_new(tu_store->kv);
	key_kind_range(&lo, &hi, "main", KEY_PARENT);
	kv_batch_delete_range(b, lo.buf, lo.len, hi.buf, hi.len);
	cr_assert_eq(tree_lookup(T, "/b/deep/er/f", &a), 0);
	parent_batch_put(T, b, a.ino, TREE_ROOT_INO, "/elsewhere");
	cr_assert_eq(kv_batch_commit(tu_store->kv, b, true), 0);
	kv_batch_free(b);
	sbuf_release(&lo);
	sbuf_release(&hi);
	cr_assert_eq(kind_keys(T, KEY_PARENT), 1);
	return snap(T, "/", true);
}

Test(upgrade, format3_store_gets_its_index, .init = tu_setup,
     .fini = tu_teardown)
{
	struct store_options ro = {.read_only = true}, rw = {0};
	struct tree_attr a;
	char *before = make_format3_store(), *now, *path = NULL;

	store_close(tu_store);
	tu_store = NULL;
	cr_assert_eq(marker_format(), 3);
	/* read-only: read as it is; no index, so no finding by number */
	open_with(&ro);
	cr_assert_eq(tree_lookup(T, "/b/deep/er/f", &a), 0);
	cr_assert_eq(tree_find_ino(T, a.ino, &path, &a), -EOPNOTSUPP);
	assert_fsck_clean(T);
	cr_assert_eq(marker_format(), 3);
	/* read-write: the index is built, the stray record replaced */
	open_with(&rw);
	cr_assert_eq(marker_format(), 4);
	now = snap(T, "/", true);
	cr_assert_str_eq(now, before);
	assert_fsck_clean(T);
	assert_found_by_number(T, "/");
	free(now);
	free(before);
}

Test(upgrade, format3_index_build_killed_midway, .init = tu_setup,
     .fini = tu_teardown)
{
	struct store_options rw = {0};
	char *before = make_format3_store(), *now;
	int kills = 0;

	store_close(tu_store);
	tu_store = NULL;
	for (int after = 1; upgrade_killed_after(after); after += 3) {
		kills++;
		cr_assert_eq(marker_format(), 3, "marked done while midway");
		cr_assert_lt(kills, 100);
	}
	cr_assert_geq(kills, 3, "the build was not killed midway");
	cr_assert_eq(marker_format(), 4);
	open_with(&rw);
	now = snap(T, "/", true);
	cr_assert_str_eq(now, before);
	assert_fsck_clean(T);
	assert_found_by_number(T, "/");
	free(now);
	free(before);
}
