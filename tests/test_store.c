/*
 * test_store.c - the store itself: opening (and refusing to open), drives,
 * the key layout, the value codecs and inode numbers that are never reused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "branchutil.h"
#include "codec_i.h"
#include "drive_i.h"
#include "keys_i.h"
#include "testutil.h"

/* "ls -la --time-style=full-iso" + sizes of @dir, to prove nothing changed */
static char *listing(const char *dir)
{
	char cmd[4200];
	char *buf = calloc(1, 1 << 16);
	FILE *f;
	size_t n;

	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && find . -printf '%%p %%s %%T@\\n' | sort", dir);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	n = fread(buf, 1, (1 << 16) - 1, f);
	buf[n] = '\0';
	pclose(f);
	return buf;
}

Test(store, refuses_a_second_open, .init = tu_setup, .fini = tu_teardown)
{
	struct store_options o = {.create = true};
	struct store *s2 = NULL;

	cr_assert_eq(store_open(&s2, tu_dir, &o), -EBUSY);
	cr_assert_null(s2);
}

/* Child: opens the store at tu_dir, serves it if @serve, says 'o' on @up
 * and closes it when @down is closed. */
static pid_t holder(bool serve, int *down_w)
{
	int up[2], down[2];
	char c;
	pid_t pid;

	cr_assert_eq(pipe(up), 0);
	cr_assert_eq(pipe(down), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct store_options o = {0};
		struct store *s = NULL;

		close(up[0]);
		close(down[1]);
		if (store_open(&s, tu_dir, &o) || (serve && store_serve(s)))
			_exit(1);
		if (write(up[1], "o", 1) != 1)
			_exit(1);
		while (read(down[0], &c, 1) > 0)
			;
		store_close(s);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	cr_assert_eq(read(up[0], &c, 1), 1, "the holder could not open");
	close(up[0]);
	*down_w = down[1];
	return pid;
}

Test(store, tells_who_serves_it, .init = tu_setup, .fini = tu_teardown)
{
	struct store_options o = {0};
	struct store *s = NULL;
	int down, status;
	pid_t pid, who = -1;

	store_close(tu_store);
	tu_store = NULL;
	tu_tree = NULL;
	cr_assert_eq(store_server(tu_dir, &who), -ENOENT, "free: nobody");

	/* held by a process that does not serve it (pathfsctl) */
	pid = holder(false, &down);
	cr_assert_eq(store_open(&s, tu_dir, &o), -EBUSY);
	cr_assert_eq(store_server(tu_dir, &who), -ENOENT);
	close(down);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(status, 0);

	/* held by a serving daemon */
	pid = holder(true, &down);
	cr_assert_eq(store_open(&s, tu_dir, &o), -EBUSY);
	cr_assert_eq(store_server(tu_dir, &who), 0);
	cr_assert_eq(who, pid);
	close(down);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(status, 0);
	cr_assert_eq(store_server(tu_dir, &who), -ENOENT, "closed: nobody");
	cr_assert_eq(store_open(&s, tu_dir, &o), 0);
	store_close(s);
}

Test(store, refuses_a_foreign_directory, .init = tu_setup, .fini = tu_teardown)
{
	char dir[4200], file[4300];
	struct store_options o = {.create = true};
	struct store *s = NULL;
	char *before, *after;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s.foreign", tu_dir);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(file, sizeof(file), "%s/notes.txt", dir);
	f = fopen(file, "w");
	fputs("not a store\n", f);
	fclose(f);
	before = listing(dir);
	cr_assert_eq(store_open(&s, dir, &o), -EMEDIUMTYPE);
	after = listing(dir);
	cr_assert_str_eq(before, after, "a refused open wrote something");
	/* in the store's words, not the C library's ("Wrong medium type") */
	cr_expect_str_eq(store_strerror(-EMEDIUMTYPE), "not a pathfs store");
	free(before);
	free(after);
}

/* The errors that mean more than their errno are worded as the store
 * means them (tree.h's table); any other is strerror's. */
Test(store, strerror_words_what_the_store_means)
{
	cr_expect(strstr(store_strerror(-EUCLEAN), "read-write once"), "%s",
		  store_strerror(-EUCLEAN));
	cr_expect(strstr(store_strerror(-EPROTONOSUPPORT), "newer pathfs"));
	cr_expect(strstr(store_strerror(-EBADMSG), "write-ahead log"));
	cr_expect(strstr(store_strerror(-EHOSTUNREACH), "etcd"));
	cr_expect(strstr(store_strerror(-EPROTO), "etcd"));
	cr_expect_str_eq(store_strerror(-ENOENT), strerror(ENOENT));
	cr_expect_str_eq(store_strerror(-ENOSPC), strerror(ENOSPC));
}

Test(store, refuses_a_newer_format, .init = tu_setup, .fini = tu_teardown)
{
	char file[4300];
	struct store *s = NULL;
	char *before, *after;
	FILE *f;

	store_close(tu_store);
	tu_store = NULL;
	snprintf(file, sizeof(file), "%s/PATHFS", tu_dir);
	f = fopen(file, "w");
	fprintf(f, "pathfs store\nformat %d\n", TREE_FORMAT_VERSION + 1);
	fclose(f);
	before = listing(tu_dir);
	struct store_options o = {.create = true};
	cr_assert_eq(store_open(&s, tu_dir, &o), -EPROTONOSUPPORT);
	after = listing(tu_dir);
	cr_assert_str_eq(before, after, "a refused open wrote something");
	free(before);
	free(after);
	/* put it back so teardown's close has something to close */
	f = fopen(file, "w");
	fprintf(f, "pathfs store\nformat %d\n", TREE_FORMAT_VERSION);
	fclose(f);
	tu_store = tu_open(tu_dir);
}

Test(store, missing_store_without_create)
{
	struct store_options o = {0};
	struct store *s = NULL;

	cr_assert_eq(store_open(&s, "/nonexistent/pathfs/store", &o), -ENOENT);
	o.create = true;
	cr_assert_eq(store_open(&s, "/nonexistent/pathfs/store", &o), -ENOENT,
		     "a missing parent is not created");
}

Test(store, drives_create_list_delete, .init = tu_setup, .fini = tu_teardown)
{
	char **names;
	size_t n;
	struct tree *t;

	cr_assert_eq(store_drive_create(tu_store, "d1", 0, 0), 0);
	cr_assert_eq(store_drive_create(tu_store, "d10", 0, 0), 0);
	cr_assert_eq(store_drive_create(tu_store, "d1", 0, 0), -EEXIST);
	cr_assert_eq(store_drive_create(tu_store, "bad|name", 0, 0), -EINVAL);
	cr_assert_eq(store_drive_create(tu_store, "", 0, 0), -EINVAL);
	char longname[80];
	memset(longname, 'a', 65);
	longname[65] = '\0';
	cr_assert_eq(store_drive_create(tu_store, longname, 0, 0), -EINVAL);
	longname[64] = '\0';
	cr_assert_eq(store_drive_create(tu_store, longname, 0, 0), 0);

	cr_assert_eq(store_drive_list(tu_store, &names, &n), 0);
	cr_assert_eq(n, 4);
	cr_expect_str_eq(names[0], longname);
	cr_expect_str_eq(names[1], "d1");
	cr_expect_str_eq(names[2], "d10");
	cr_expect_str_eq(names[3], "main");
	store_drive_list_free(names, n);

	cr_assert_eq(store_drive(tu_store, "d1", &t), 0);
	struct tree_attr a;
	cr_assert_eq(tree_lookup(t, "/", &a), 0);
	cr_expect_eq(a.ino, TREE_ROOT_INO);
	cr_expect_eq(a.mode, S_IFDIR | 0755);

	cr_assert_eq(store_drive_delete(tu_store, "d1"), 0);
	cr_assert_eq(store_drive_delete(tu_store, "d1"), -ENOENT);
	cr_assert_eq(store_drive(tu_store, "d1", &t), -ENOENT);
	cr_assert_eq(store_drive(tu_store, "d10", &t), 0, "d10 survives d1");
	cr_assert_eq(tree_lookup(t, "/", &a), 0);
	tu_reopen();
	cr_assert_eq(store_drive_list(tu_store, &names, &n), 0);
	cr_assert_eq(n, 3);
	store_drive_list_free(names, n);
}

Test(store, keys_keep_branches_apart)
{
	struct sbuf lo = {0}, hi = {0}, k = {0}, p = {0};
	const char *inside[] = {"/docs/a", "/docs/a/b", "/docs/ x/y",
				"/docs/\x01", "/docs/-/-"};
	const char *outside[] = {"/docs",     "/docs-archive", "/docs.txt",
				 "/docs 2/x", "/docs!",	       "/doc",
				 "/"};

	key_subtree_range(&lo, &hi, "d", "/docs");
	for (size_t i = 0; i < sizeof(inside) / sizeof(*inside); i++) {
		sbuf_reset(&k);
		key_node(&k, "d", inside[i]);
		cr_expect(strcmp(k.buf, lo.buf) >= 0 &&
			      strcmp(k.buf, hi.buf) < 0,
			  "%s should be in the subtree of /docs", inside[i]);
		sbuf_reset(&p);
		cr_assert_eq(key_node_decode(k.buf, k.len, 2 + 6, &p), 0);
		cr_expect_str_eq(p.buf, inside[i]);
	}
	for (size_t i = 0; i < sizeof(outside) / sizeof(*outside); i++) {
		sbuf_reset(&k);
		key_node(&k, "d", outside[i]);
		cr_expect(strcmp(k.buf, lo.buf) < 0 ||
			      strcmp(k.buf, hi.buf) >= 0,
			  "%s must not be in the subtree of /docs", outside[i]);
	}
	sbuf_reset(&lo);
	sbuf_reset(&hi);
	key_children_range(&lo, &hi, "d", "/docs");
	sbuf_reset(&k);
	key_node(&k, "d", "/docs/a");
	cr_expect(strcmp(k.buf, lo.buf) >= 0 && strcmp(k.buf, hi.buf) < 0);
	sbuf_reset(&k);
	key_node(&k, "d", "/docs/a/b");
	cr_expect(strcmp(k.buf, hi.buf) >= 0 || strcmp(k.buf, lo.buf) < 0,
		  "a grandchild is not a child");
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&k);
	sbuf_release(&p);
}

Test(store, path_check_limits)
{
	char name[300], path[TREE_PATH_MAX + 200];

	cr_expect_eq(path_check("/"), 0);
	cr_expect_eq(path_check("/a/b c/..."), 0);
	cr_expect_eq(path_check(""), -EINVAL);
	cr_expect_eq(path_check("a"), -EINVAL);
	cr_expect_eq(path_check("/a//b"), -EINVAL);
	cr_expect_eq(path_check("/a/"), -EINVAL);
	cr_expect_eq(path_check("/a/./b"), -EINVAL);
	cr_expect_eq(path_check("/a/.."), -EINVAL);
	memset(name, 'n', 255);
	name[255] = '\0';
	snprintf(path, sizeof(path), "/%s", name);
	cr_expect_eq(path_check(path), 0);
	strcat(path, "x");
	cr_expect_eq(path_check(path), -ENAMETOOLONG);
	path[0] = '\0';
	while (strlen(path) + 100 < TREE_PATH_MAX)
		strcat(path, "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	cr_expect_eq(path_check(path), 0);
	strcat(path, "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	cr_expect_eq(path_check(path), -ENAMETOOLONG);
}

Test(store, node_values_round_trip)
{
	struct tree_attr a = {
	    .ino = 123456789012ull,
	    .mode = S_IFLNK | 0777,
	    .uid = 4000000000u,
	    .gid = 7,
	    .size = 5,
	    .nlink = 1,
	    .rdev = 0,
	    .atime_ns = -1500000000123ll,
	    .mtime_ns = 4102444800123456789ll,
	    .ctime_ns = 1,
	};
	struct sbuf v = {0};
	struct node n;

	node_encode(&v, &a, "a/b/c");
	cr_assert_eq(node_decode(v.buf, v.len, &n, true), 0);
	cr_expect_eq(memcmp(&n.a, &a, sizeof(a)), 0);
	cr_expect_str_eq(n.target, "a/b/c");
	node_release(&n);
	/* every truncation fails cleanly, never reads past the end */
	for (size_t i = 0; i < v.len; i++)
		cr_expect_eq(node_decode(v.buf, i, &n, true), -EIO,
			     "truncated to %zu", i);
	sbuf_addc(&v, 0);
	cr_expect_eq(node_decode(v.buf, v.len, &n, true), -EIO, "trailing");
	sbuf_reset(&v);
	node_encode_stub(&v, 42, S_IFREG | 0644);
	cr_assert_eq(node_decode(v.buf, v.len, &n, false), 0);
	cr_expect_eq(n.a.ino, 42);
	cr_expect(n.a.flags & TREE_F_LINKED);
	sbuf_release(&v);
}

/* Child: allocate @count inode numbers, print the last, die without closing. */
static void alloc_and_die(const char *dir, int count, int fd)
{
	struct store *s = tu_open(dir);
	struct tree *t;
	uint64_t ino = 0;

	cr_assert_eq(store_drive(s, "main", &t), 0);
	for (int i = 0; i < count; i++)
		cr_assert_eq(tree_alloc_ino(t, &ino), 0);
	cr_assert_eq(write(fd, &ino, sizeof(ino)), (ssize_t)sizeof(ino));
	kill(getpid(), SIGKILL);
}

Test(store, inode_numbers_survive_a_crash, .init = tu_setup,
     .fini = tu_teardown)
{
	uint64_t used = 0, ino;
	int fds[2], status;
	pid_t pid;

	store_close(tu_store);
	tu_store = NULL;
	for (int round = 0; round < 3; round++) {
		cr_assert_eq(pipe(fds), 0);
		pid = fork();
		if (pid == 0)
			alloc_and_die(tu_dir, 1500 + round * 7, fds[1]);
		cr_assert_eq(read(fds[0], &used, sizeof(used)),
			     (ssize_t)sizeof(used));
		waitpid(pid, &status, 0);
		cr_assert(WIFSIGNALED(status));
		close(fds[0]);
		close(fds[1]);
		tu_store = tu_open(tu_dir);
		cr_assert_eq(store_drive(tu_store, "main", &tu_tree), 0);
		cr_assert_eq(tree_alloc_ino(tu_tree, &ino), 0);
		cr_expect_gt(ino, used, "round %d: %llu handed out again",
			     round, (unsigned long long)ino);
		store_close(tu_store);
		tu_store = NULL;
	}
	tu_store = tu_open(tu_dir);
}

/*
 * Another writer of the drive took ranges of inode numbers (on etcd:
 * store_options.shared; here its commit of META is made by hand): this
 * open's next range starts above the mark it left, never below, and the
 * mark only grows. (test_shared runs two writers for real on etcd.)
 */
Test(store, inode_ranges_start_above_another_writers, .init = tu_setup,
     .fini = tu_teardown)
{
	struct sbuf k = {0}, v = {0};
	struct kv_batch *b;
	uint64_t ino, first, hwm;
	struct meta m = {.format = TREE_FORMAT_VERSION,
			 .created_ns = 1,
			 .block_size = DEFAULT_BLOCK_SIZE};

	cr_assert_eq(tree_alloc_ino(tu_tree, &first), 0);
	hwm = meta_hwm(tu_store, "main");
	m.ino_hwm = hwm + 5 * INO_RANGE; /* the other writer's ranges */
	key_meta(&k, "main");
	meta_encode(&v, &m);
	b = kv_batch_new(tu_store->kv);
	kv_batch_put(b, k.buf, k.len, v.buf, v.len);
	cr_assert_eq(kv_batch_commit(tu_store->kv, b, false), 0);
	kv_batch_free(b);
	/* this open's range runs out, then one is taken above the mark */
	do
		cr_assert_eq(tree_alloc_ino(tu_tree, &ino), 0);
	while (ino < hwm - 1);
	cr_assert_eq(tree_alloc_ino(tu_tree, &ino), 0);
	cr_expect_eq(ino, m.ino_hwm, "the range after %llu starts at %llu",
		     (unsigned long long)m.ino_hwm, (unsigned long long)ino);
	cr_expect_eq(meta_hwm(tu_store, "main"), m.ino_hwm + INO_RANGE);
	cr_expect_lt(first, hwm);
	sbuf_release(&k);
	sbuf_release(&v);
}

/*
 * The store counts the calls it makes into its kv engine (store_kv_counts):
 * a create is one commit, a one-block read one content get, a lookup point
 * gets of the tree only, a listing one iterator and its steps.
 */
Test(store, counts_its_kv_calls, .init = tu_setup, .fini = tu_teardown)
{
	struct store_kv_counts a, b;
	struct tree_attr at;
	struct tree_dir *d;
	const char *name;
	size_t namelen, n;
	char buf[8];

	store_kv_counts(tu_store, &a);
	cr_assert_eq(
	    tree_mknode(tu_tree, "/f", S_IFREG | 0644, 0, 0, 0, NULL, &at), 0);
	cr_assert_eq(
	    tree_write(tu_tree, "/f", at.ino, 0, "hello", 5, false, NULL), 0);
	store_kv_counts(tu_store, &b);
	cr_expect_eq(b.commits - a.commits, 2);
	cr_expect_gt(b.gets, a.gets);

	a = b;
	cr_assert_eq(tree_read(tu_tree, "/f", at.ino, 0, 5, buf, &n), 0);
	cr_assert_eq(n, 5);
	store_kv_counts(tu_store, &b);
	cr_expect_eq(b.content_gets - a.content_gets, 1);
	cr_expect_eq(b.commits, a.commits, "a read commits nothing");

	a = b;
	cr_assert_eq(tree_lookup(tu_tree, "/f", &at), 0);
	store_kv_counts(tu_store, &b);
	cr_expect_gt(b.gets, a.gets);
	cr_expect_eq(b.content_gets, a.content_gets);
	cr_expect_eq(b.iters, a.iters);

	a = b;
	cr_assert_eq(tree_dir_open(&d, tu_tree, "/", NULL), 0);
	cr_expect_eq(tree_dir_next(d, &name, &namelen, &at), 1);
	cr_expect_eq(tree_dir_next(d, &name, &namelen, &at), 0);
	tree_dir_free(d);
	store_kv_counts(tu_store, &b);
	cr_expect_eq(b.iters - a.iters, 1);
	cr_expect_geq(b.nexts - a.nexts, 1);
	cr_expect_eq(b.content_gets, a.content_gets);
}
