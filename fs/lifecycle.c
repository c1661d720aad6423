/*
 * lifecycle.c - the daemon's state from start to end: fs_init() sets up the
 * struct fs of a drive (the inode table with its root, the locks, the
 * reclaim queue, the listing cookies), the FUSE session's INIT says what the
 * daemon asks of the kernel (devio.c) and its DESTROY, at unmount, reclaims
 * the orphans the kernel still knew and closes the files it never released;
 * fs_release() frees it all (not the store).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dircookie.h"
#include "fs_i.h"
#include "ops_i.h"

int fs_init(struct fs *fs, struct store *s, struct tree *t)
{
	pthread_rwlockattr_t ra;
	int i, rc;

	memset(fs, 0, sizeof(*fs));
	fs->store = s;
	fs->tree = t;
	fs->timeout = 3600.0;
	rc = itab_init(fs);
	if (rc)
		return rc;
	pthread_mutex_init(&fs->lock, NULL);
	pthread_cond_init(&fs->renamed, NULL);
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(
	    &ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&fs->sublock, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&fs->busy_mutex, NULL);
	pthread_cond_init(&fs->busy_cond, NULL);
	pthread_mutex_init(&fs->ctl_mutex, NULL);
	for (i = 0; i < FS_STRIPES; i++)
		pthread_mutex_init(&fs->open_stripe[i], NULL);
	fs_reclaim_init(fs);
	return dircookies_new(&fs->cookies);
}

void fs_release(struct fs *fs)
{
	if (!fs->buckets)
		return;
	itab_release(fs);
	fs_reclaim_release(fs);
	dircookies_free(fs->cookies);
	fs->cookies = NULL;
	fs_busy_release(fs);
}

void fs_init_conn(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;

	fs_conn_want(conn, fs->writeback);
	/* one writer of several: stopped writers' orphans are ours to free */
	if (!fs->ro && fs->tree && tree_shared(fs->tree))
		fs_reclaim_dead(fs);
}

/*
 * The session ends (unmount): the kernel holds nothing any more, so the
 * orphans it still knew are reclaimed now rather than at the next mount,
 * with those queued (reclaim.c), before the store closes.
 */
void fs_destroy(void *userdata)
{
	struct fs *fs = userdata;
	uint64_t *v = NULL;
	size_t i, n = 0;

	if (!fs->ro && !itab_flagged(fs, INODE_ORPHAN, &v, &n)) {
		for (i = 0; i < n; i++)
			fs_reclaim(fs, v[i]);
		free(v);
	}
	fs_reclaim_stop(fs);
	fs_close_all(fs);
}
