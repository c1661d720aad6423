/*
 * devio.c - the daemon's reads and writes of /dev/fuse, under libfuse (its
 * custom I/O hooks, fuse_session_custom_io()): they negotiate in INIT what
 * libfuse 3.14 does not know, and leave every other request and reply as
 * they are. Both session loops (fs/loop.c and libfuse's own, -s) read and
 * write through them.
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
 * truncate, an open(O_TRUNC) and a fallocate (ops.c does that for every
 * caller but root, by ext4's rule, with or without this flag: see
 * privs_to_clear()), and on a chown (the kernel sends FATTR_KILL_SUIDGID
 * with the new owner instead of the cleared mode: fs_setattr()). The kernel
 * still drops security.capability itself (REMOVEXATTR) when its check finds
 * one, as before.
 *
 * How: the read hook notes the INIT request (its unique id, whether the
 * kernel offers the flag); the write hook adds the flag to libfuse's INIT
 * reply to that request. The kernel sends nothing else before that reply,
 * so the two hooks run in one thread, one after the other.
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

#include "fs_i.h"
#include "log.h"

static ssize_t dev_read(int fd, void *buf, size_t len, void *userdata)
{
	struct fs *fs = userdata;
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *in = buf;
	const struct fuse_init_in *init = (const void *)(in + 1);

	if (n >= (ssize_t)(sizeof(*in) + offsetof(struct fuse_init_in, flags) +
			   sizeof(init->flags)) &&
	    in->opcode == FUSE_INIT) {
		fs->init_unique = in->unique;
		fs->init_killpriv_v2 = init->major == 7 && init->minor >= 33 &&
				       (init->flags & FUSE_HANDLE_KILLPRIV_V2);
	}
	return n;
}

static ssize_t dev_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct fs *fs = userdata;
	const struct fuse_out_header *out = iov[0].iov_base;
	struct fuse_init_out init;
	struct iovec v[2];
	ssize_t n;

	if (!fs->init_killpriv_v2 || count != 2 ||
	    iov[0].iov_len < sizeof(*out) || out->unique != fs->init_unique ||
	    out->error ||
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
		fs->init_killpriv_v2 = false;
		fs->killpriv_v2 = true;
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
