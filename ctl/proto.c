/*
 * proto.c - the control socket's framing and address, shared by the server
 * (fs/control.c) and the client (client.c); the protocol is in proto.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proto.h"
#include "tree.h"

static uint64_t fnv(uint64_t h, const char *p, size_t n)
{
	while (n--) {
		h ^= (unsigned char)*p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The abstract socket name of the etcd store at @url: its NAME, then a hash
 * of its identity (store_identity(): members in one spelling and order), so
 * every spelling of one store finds one daemon and stores of two NAMEs
 * never share a socket. */
static int remote_name(struct sockaddr_un *sa, const char *url)
{
	char *id = NULL;
	int rc = store_identity(url, &id), n;

	if (rc)
		return rc;
	n = snprintf(
	    sa->sun_path + 1, sizeof(sa->sun_path) - 1,
	    CONTROL_SOCKET_REMOTE "%s/%016llx", strrchr(id, '/') + 1,
	    (unsigned long long)fnv(0xcbf29ce484222325ull, id, strlen(id)));
	free(id);
	return n > 0 && (size_t)n < sizeof(sa->sun_path) - 1 ? 0
							     : -ENAMETOOLONG;
}

int proto_sock_addr(struct sockaddr_un *sa, const char *dir, int dirfd)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (store_is_remote(dir))
		return remote_name(sa, dir);
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", dir,
		     CONTROL_SOCKET_NAME);
	if (n > 0 && (size_t)n < sizeof(sa->sun_path))
		return 0;
	if (dirfd < 0)
		return -ENAMETOOLONG;
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s",
		     dirfd, CONTROL_SOCKET_NAME);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

void proto_put_u32(unsigned char *p, uint32_t v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
	p[2] = (v >> 16) & 0xff;
	p[3] = (v >> 24) & 0xff;
}

uint32_t proto_get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

int proto_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int proto_recv_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int proto_send_frame(int fd, char type, const void *buf, size_t len)
{
	unsigned char hdr[5];
	int rc;

	hdr[0] = (unsigned char)type;
	proto_put_u32(hdr + 1, (uint32_t)len);
	rc = proto_send_all(fd, hdr, sizeof(hdr));
	if (!rc && len)
		rc = proto_send_all(fd, buf, len);
	return rc;
}
