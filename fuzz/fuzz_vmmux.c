/* Fuzz the host's end of the microVM relay (vm_mux.h): whatever a hostile
 * guest writes on the relay port, in two splits.  Never crash, never hold
 * more than the protocol allows (the output queue within its size, every
 * stream within its window, at most AL_MUX_STREAMS_MAX open), and leave no
 * descriptor behind. */
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vm_mux.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int servers[AL_MUX_SLOTS * 4];
static size_t nservers;

static int fuzz_connect(void *ctx, uint8_t target)
{
	(void)ctx;
	int sv[2];
	if (target == AL_MUX_TO_INTEG || nservers == sizeof(servers) / sizeof(servers[0]) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		return -1;
	servers[nservers++] = sv[1];
	/* the server answers something at once */
	(void)!write(sv[1], "HTTP/1.1 200 OK\r\n\r\n", 19);
	return sv[0];
}

static void check(const struct al_vm_mux *m)
{
	if (m->outoff + m->outlen > AL_MUX_OUT_MAX || m->nopen > AL_MUX_STREAMS_MAX)
		abort();
	for (size_t i = 0; i < AL_MUX_SLOTS; i++) {
		const struct al_vm_mux_stream *s = &m->st[i];
		if (s->fd >= 0 && (s->boff + s->blen > AL_MUX_WINDOW || s->room > AL_MUX_WINDOW ||
				   s->credit > AL_MUX_WINDOW))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	struct al_vm_mux *m = malloc(sizeof(*m));
	if (!m)
		abort();
	nservers = 0;
	al_vm__mux_init(m, sv[0], true, fuzz_connect, NULL);
	/* the first byte says where to split the rest */
	size_t cut = size ? data[0] * size / 256 : 0;
	const uint8_t *p = size ? data + 1 : data;
	size_t n = size ? size - 1 : 0;
	if (cut > n)
		cut = n;
	if (al_vm__mux_feed(m, p, cut) == 0) {
		check(m);
		struct pollfd pf[AL_MUX_POLLFDS];
		size_t k = al_vm__mux_pollfds(m, pf);
		poll(pf, k, 0);
		al_vm__mux_step(m, pf, k);
		check(m);
		if (al_vm__mux_feed(m, p + cut, n - cut) == 0) {
			check(m);
			k = al_vm__mux_pollfds(m, pf);
			poll(pf, k, 0);
			al_vm__mux_step(m, pf, k);
			check(m);
		}
	}
	al_vm__mux_release(m);
	for (size_t i = 0; i < AL_MUX_SLOTS; i++)
		if (m->st[i].fd != -1)
			abort();
	close(m->chan);
	close(sv[1]);
	for (size_t i = 0; i < nservers; i++)
		close(servers[i]);
	free(m);
	return 0;
}
