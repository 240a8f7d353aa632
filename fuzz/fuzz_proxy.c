/* Fuzz the egress proxy's parsers (net.c): the TLS ClientHello's SNI
 * (al_net__hello_sni) directly, and whole sessions: the input sent as a
 * sandbox's connection (a request head, a CONNECT and its ClientHello),
 * served by a proxy whose only allow entry is the loopback address on port
 * 1, so no name is ever resolved.  Never crash; the SNI is a bounded,
 * lower-case host name; every connection is in the record, once. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "net_private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void sni_only(const uint8_t *p, size_t n)
{
	char sni[256];
	memset(sni, 'x', sizeof(sni));
	if (al_net__hello_sni(p, n, sni, sizeof(sni)) == 0) {
		size_t l = strnlen(sni, sizeof(sni));
		if (l == sizeof(sni))
			abort();
		for (size_t i = 0; i < l; i++)
			if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789-_.?", sni[i]))
				abort();
	}
	/* a small buffer: a long name is refused, never overrun */
	char tiny[8];
	if (al_net__hello_sni(p, n, tiny, sizeof(tiny)) == 0 && strnlen(tiny, 8) == 8)
		abort();
}

static void session(const uint8_t *p, size_t n)
{
	static const char *const allow[] = { "127.0.0.1:1" };
	struct al_net_proxy *px = NULL;
	if (al_net__proxy_new(allow, 1, 4, 1 << 20, &px, NULL) < 0)
		abort();
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    al_net__proxy_start(px, -1, NULL) < 0)
		abort();
	struct timeval tv = { 5, 0 };
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (al_net__proxy_admit(px, sv[1]) < 0)
		abort();
	size_t off = 0;
	while (off < n) {
		ssize_t w = send(sv[0], p + off, n - off, MSG_NOSIGNAL);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	shutdown(sv[0], SHUT_WR);
	char buf[4096];
	ssize_t r, total = 0;
	char first[9] = "";
	while ((r = recv(sv[0], buf, sizeof(buf), 0)) > 0) {
		if (!total)
			memcpy(first, buf, r < 8 ? (size_t)r : 8);
		total += r;
	}
	/* an answer, if any, is the proxy's HTTP status line */
	if (total && strncmp(first, "HTTP/1.1", 8))
		abort();
	close(sv[0]);
	al_net__proxy_stop(px);
	json_t *rec = al_net__proxy_json(px);
	if (!rec || json_array_size(json_object_get(rec, "connections")) != 1)
		abort();
	json_decref(rec);
	al_net__proxy_free(px);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	/* the first byte: 's' a session, anything else the SNI parser */
	if (data[0] == 's')
		session(data + 1, size - 1);
	else
		sni_only(data + 1, size - 1);
	return 0;
}
