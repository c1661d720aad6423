/*
 * devio.c - what the daemon asks of the kernel at INIT (fs_conn_want(): its
 * capabilities and request sizes, shared with tools/pathfs-floor.c so that
 * the floor daemon gets the requests pathfs gets), and the daemon's reads
 * and writes of /dev/fuse, under libfuse (its custom I/O hooks,
 * fuse_session_custom_io()): they negotiate in INIT what libfuse 3.14 does
 * not know, and leave every other request and reply as they are. Both
 * session loops (fs/loop.c and libfuse's own, -s) read and write through
 * them.
 *
 * FUSE_HANDLE_KILLPRIV_V2 (protocol 7.33). Without it the kernel asks for
 * security.capability (a GETXATTR round trip) before every write(2),
 * truncate and fallocate, to know whether the write must drop it: on this
 * machine that doubled the round trips of a small pwrite (2,000 pwrites,
 * 2,000 WRITEs and 2,000 GETXATTRs). With it the kernel marks the
 * superblock SB_NOSEC: an inode found without set-user-ID, set-group-ID and
 * security.capability is marked S_NOSEC and its later writes ask nothing,
 * until its attributes are fetched again (a GETATTR, LOOKUP or a reply with
 * attributes clears the mark) or a security.* xattr is set through the
 * mount. The first write of each inode still asks. In return the daemon
 * promises to clear set-user-ID and set-group-ID itself: on a write, a
 * truncate, an open(O_TRUNC) and a fallocate (attrs.c does that for every
 * caller but root, by ext4's rule, with or without this flag: see
 * privs_to_clear()), and on a chown (the kernel sends FATTR_KILL_SUIDGID
 * with the new owner instead of the cleared mode: fs_setattr()). The kernel
 * still drops security.capability itself (REMOVEXATTR) when its check finds
 * one, as before.
 *
 * How: the read hook notes the INIT request (its unique id, whether the
 * kernel offers the flag); the write hook adds the flag to libfuse's INIT
 * reply to that request. The kernel sends nothing else before that reply,
 * so the two hooks run in one thread, one after the other; what they note
 * is one static record (one session per process).
 *
 * Limits: no splice (libfuse gives a session with custom I/O none unless
 * hooks for it are given; the daemon asked for none). Errors are those of
 * read(2) and writev(2), returned as they are for libfuse to handle.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "devio.h"
#include "log.h"

/* INIT as the kernel sent it, until it is answered (the hooks' thread) */
static uint64_t init_unique;
static bool init_killpriv_v2; /* it offers FUSE_HANDLE_KILLPRIV_V2 */

void fs_conn_want(struct fuse_conn_info *conn, bool writeback)
{
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/* always plus: one scan gives names and attributes alike */
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* lsattr/chattr of a folder (ioctl.c) */
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR;
	/* file handles (open_by_handle_at, NFS export): the kernel asks for
	 * nodes it no longer caches by LOOKUP of "." and ".." (lookup_dot) */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	/* not the first version (the daemon would have to drop
	 * security.capability on every write); HANDLE_KILLPRIV_V2, which
	 * libfuse 3.14 does not know, is negotiated by the hooks below */
	conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
	/* POSIX ACLs: the kernel enforces and caches them, the store keeps
	 * them (xattrs.c); with DONT_MASK the umask comes with the request,
	 * for the store to apply unless a default ACL does (names.c) */
	if ((conn->capable & FUSE_CAP_POSIX_ACL) &&
	    (conn->capable & FUSE_CAP_DONT_MASK))
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
	if (writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* fewer, larger requests: 1 MiB is 16 content blocks */
	conn->max_write = 1024 * 1024;
	conn->max_readahead = 1024 * 1024;
	conn->time_gran = 1;
}

static ssize_t dev_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *in = buf;
	const struct fuse_init_in *init = (const void *)(in + 1);

	if (n >= (ssize_t)(sizeof(*in) + offsetof(struct fuse_init_in, flags) +
			   sizeof(init->flags)) &&
	    in->opcode == FUSE_INIT) {
		init_unique = in->unique;
		init_killpriv_v2 = init->major == 7 && init->minor >= 33 &&
				   (init->flags & FUSE_HANDLE_KILLPRIV_V2);
	}
	return n;
}

static ssize_t dev_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct fuse_out_header *out = iov[0].iov_base;
	struct fuse_init_out init;
	struct iovec v[2];
	ssize_t n;

	if (!init_killpriv_v2 || count != 2 || iov[0].iov_len < sizeof(*out) ||
	    out->unique != init_unique || out->error ||
	    iov[1].iov_len <
		offsetof(struct fuse_init_out, flags) + sizeof(init.flags) ||
	    iov[1].iov_len > sizeof(init))
		return writev(fd, iov, count);
	/* libfuse's INIT reply: the same with one flag more */
	memcpy(&init, iov[1].iov_base, iov[1].iov_len);
	if (init.major != 7) /* libfuse asks for another INIT */
		return writev(fd, iov, count);
	init.flags |= FUSE_HANDLE_KILLPRIV_V2;
	v[0] = iov[0];
	v[1].iov_base = &init;
	v[1].iov_len = iov[1].iov_len;
	n = writev(fd, v, 2);
	if (n == (ssize_t)(iov[0].iov_len + iov[1].iov_len)) {
		init_killpriv_v2 = false;
		plog(LOG_DEBUG, "kernel: HANDLE_KILLPRIV_V2 negotiated");
	}
	return n;
}

int fs_devio_install(struct fuse_session *se)
{
	static const struct fuse_custom_io io = {.read = dev_read,
						 .writev = dev_writev};

	return fuse_session_custom_io(se, &io, fuse_session_fd(se));
}
