/*
 * client.c - the client half of the control socket (proto.h), the one
 * place that connects and frames a request: control_request() sends a
 * command line to the daemon serving a store and hands the response frames
 * to its caller; pathfsctl's control_call() copies them to its stdout and
 * stderr, the second mount (fs/second.c) reads the daemon's answer to
 * CONTROL_MOUNT_INFO from them.
 *
 * Limits: interrupting pathfsctl does not stop a command the daemon runs: it
 * goes on to its end (or its --max-items budget); only its output is lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto.h"

static int write_fd(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int send_string(int fd, const char *s)
{
	unsigned char len[4];
	size_t n = strlen(s);
	int rc;

	if (n > CONTROL_MAX_ARG)
		return -E2BIG;
	proto_put_u32(len, (uint32_t)n);
	rc = proto_send_all(fd, len, sizeof(len));
	if (!rc)
		rc = proto_send_all(fd, s, n);
	return rc;
}

/*
 * Connects to the control socket of the daemon serving @store_dir and checks
 * who listens there (@strict_peer: control_request()). Returns the socket,
 * -ENOENT (no daemon: no socket, nobody listens, a malformed URL), -EACCES
 * (a peer we do not talk to), -errno.
 */
static int connect_store(const char *store_dir, bool strict_peer)
{
	struct sockaddr_un sa;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fd = -1, dirfd = -1, rc;

	rc = proto_sock_addr(&sa, store_dir, -1);
	if (rc == -ENAMETOOLONG) {
		dirfd = open(store_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dirfd < 0) {
			rc = errno == ENOENT ? -ENOENT : -errno;
			goto out;
		}
		rc = proto_sock_addr(&sa, store_dir, dirfd);
	}
	if (rc == -EINVAL)
		rc = -ENOENT; /* a malformed URL: no daemon; opening says why */
	if (rc)
		goto out;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		/* No socket, or a stale one nobody listens on: no daemon. */
		if (errno == ENOENT || errno == ECONNREFUSED ||
		    errno == ENOTDIR)
			rc = -ENOENT;
		else
			rc = -errno;
		goto out;
	}
	/* An abstract name (a store on etcd) has no file mode: anyone may
	 * have bound it. Talk only to root or ourselves (root talks to any
	 * daemon, unless @strict_peer). */
	if (strict_peer || !sa.sun_path[0]) {
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen)) {
			rc = -errno;
			goto out;
		}
		if (strict_peer ? cred.uid != 0 && cred.uid != geteuid()
				: cred.uid != 0 && cred.uid != getuid() &&
				      getuid() != 0) {
			rc = -EACCES;
			goto out;
		}
	}
	rc = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	if (dirfd >= 0)
		close(dirfd);
	return rc;
}

int control_request(const struct control_req *req)
{
	unsigned char hdr[CONTROL_MAGIC_LEN + 8];
	struct timeval tv = {req->timeout_s, 0};
	char *buf = NULL;
	int fd, rc, i;

	if (req->argc < 1 || req->argc + 1 > CONTROL_MAX_ARGS)
		return -E2BIG;
	fd = connect_store(req->store, req->strict_peer);
	if (fd < 0)
		return fd;
	if (req->timeout_s > 0) {
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}

	memcpy(hdr, CONTROL_MAGIC, CONTROL_MAGIC_LEN);
	proto_put_u32(hdr + CONTROL_MAGIC_LEN, req->flags);
	proto_put_u32(hdr + CONTROL_MAGIC_LEN + 4, (uint32_t)req->argc + 1);
	rc = proto_send_all(fd, hdr, sizeof(hdr));
	if (!rc)
		rc = send_string(fd, req->drive ? req->drive : "");
	for (i = 0; !rc && i < req->argc; i++)
		rc = send_string(fd, req->argv[i]);
	/* A refusal is sent before the request is read: look for it. */
	if (rc && rc != -EPIPE && rc != -ECONNRESET)
		goto out;

	for (;;) {
		unsigned char fh[5];
		uint32_t len;

		rc = proto_recv_all(fd, fh, sizeof(fh));
		if (rc) {
			if (rc == -ECONNRESET)
				rc = -EPIPE; /* closed without a status */
			goto out;
		}
		len = proto_get_u32(fh + 1);
		if (len > CONTROL_MAX_FRAME) {
			rc = -EPROTO;
			goto out;
		}
		free(buf);
		buf = malloc(len + 1);
		if (!buf) {
			rc = -ENOMEM;
			goto out;
		}
		rc = proto_recv_all(fd, buf, len);
		if (rc) {
			if (rc == -ECONNRESET)
				rc = -EPIPE;
			goto out;
		}
		buf[len] = '\0';
		switch (fh[0]) {
		case CONTROL_FRAME_OUT:
		case CONTROL_FRAME_ERR:
			rc = req->frame(req->ctx, (char)fh[0], buf, len);
			if (rc)
				goto out;
			break;
		case CONTROL_FRAME_EXIT:
			if (len != 4) {
				rc = -EPROTO;
				goto out;
			}
			rc = (int)(proto_get_u32((unsigned char *)buf) & 0xff);
			goto out;
		case CONTROL_FRAME_REFUSED:
			req->frame(req->ctx, CONTROL_FRAME_REFUSED, buf, len);
			rc = -EACCES;
			goto out;
		default:
			rc = -EPROTO;
			goto out;
		}
	}
out:
	free(buf);
	close(fd);
	return rc;
}

/* pathfsctl's frames: to its stdout and stderr. */
static int print_frame(void *ctx, char type, const char *buf, size_t len)
{
	(void)ctx;
	if (type == CONTROL_FRAME_OUT)
		return write_fd(1, buf, len) == -EPIPE ? -EPIPE : 0;
	if (type == CONTROL_FRAME_ERR)
		write_fd(2, buf, len);
	else
		fprintf(stderr, "pathfsctl: the daemon refused: %s\n", buf);
	return 0;
}

int control_call(const char *store_dir, const char *drive, int argc,
		 char **argv)
{
	struct control_req req = {
	    .store = store_dir,
	    .drive = drive,
	    .argc = argc,
	    .argv = argv,
	    .flags = isatty(2) ? CONTROL_F_PROGRESS : 0,
	    .frame = print_frame,
	};

	return control_request(&req);
}
