/* The host's end of a microVM run's relay (vm_mux.h): a thread that
 * carries each stream the guest opens to the run's egress proxy or
 * integrations' relay, handed over as one end of a socket pair exactly as
 * a namespace run's accepted connection is: the same checks, caps and
 * records.  Nothing else is reachable through the channel: a stream names
 * one of those two targets, and a target the run does not have is
 * refused.  A guest that breaks the protocol ends its own relay, never
 * more. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "integ_private.h"
#include "net_private.h"
#include "util.h"
#include "vm_mux.h"
#include "vm_private.h"

struct al_vm_relay {
	struct al_vm_mux mux;
	struct al_net_proxy *proxy;
	struct al_integ_relay *integ;
	int wake[2];
	pthread_t thread;
	bool started;
};

static int relay_connect(void *ctx, uint8_t target)
{
	struct al_vm_relay *r = ctx;
	if ((target == AL_MUX_TO_PROXY && !r->proxy) || (target == AL_MUX_TO_INTEG && !r->integ))
		return -1; /* not this run's: refused */
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	/* refused (over the run's cap, counted there, or stopped): sv[1] is
	 * closed, and the stream ends as a refused connection does */
	if (target == AL_MUX_TO_PROXY)
		al_net__proxy_admit(r->proxy, sv[1]);
	else
		al_integ__relay_admit(r->integ, sv[1]);
	return sv[0];
}

static void *relay_main(void *arg)
{
	struct al_vm_relay *r = arg;
	struct pollfd pf[1 + AL_MUX_POLLFDS];
	bool live = true;
	for (;;) {
		size_t n = live ? al_vm__mux_pollfds(&r->mux, pf + 1) : 0;
		pf[0] = (struct pollfd){ r->wake[0], POLLIN, 0 };
		if (poll(pf, 1 + n, -1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			break;
		if (live && al_vm__mux_step(&r->mux, pf + 1, n) < 0) {
			/* over: every stream ends now; the run goes on */
			al_vm__mux_release(&r->mux);
			live = false;
		}
	}
	al_vm__mux_release(&r->mux);
	return NULL;
}

int al_vm__relay_start(int chan, struct al_net_proxy *proxy, struct al_integ_relay *integ,
		       struct al_vm_relay **out, struct al_error *err)
{
	struct al_vm_relay *r = calloc(1, sizeof(*r));
	if (!r) {
		close(chan);
		return al_fail(err, AL_ENOMEM, ENOMEM, "vm: the relay");
	}
	r->proxy = proxy;
	r->integ = integ;
	al_vm__mux_init(&r->mux, chan, true, relay_connect, r);
	if (pipe2(r->wake, O_CLOEXEC) < 0) {
		int e = errno;
		close(chan);
		free(r);
		return al_fail(err, AL_ESANDBOX, e, "vm: the relay");
	}
	int rc = pthread_create(&r->thread, NULL, relay_main, r);
	if (rc != 0) {
		al_vm__relay_stop(r, NULL, 0);
		return al_fail(err, AL_ESANDBOX, rc, "vm: the relay's thread");
	}
	r->started = true;
	*out = r;
	return 0;
}

const char *al_vm__relay_stop(struct al_vm_relay *r, char *why, size_t n)
{
	if (!r)
		return NULL;
	if (r->started) {
		(void)!write(r->wake[1], "x", 1);
		pthread_join(r->thread, NULL);
	}
	al_vm__mux_release(&r->mux);
	close(r->mux.chan);
	close(r->wake[0]);
	close(r->wake[1]);
	const char *out = NULL;
	/* the channel closing as the VM ends is no fault */
	if (r->mux.error[0] && !r->mux.chan_eof && why && n) {
		snprintf(why, n, "%s", r->mux.error);
		out = why;
	}
	free(r);
	return out;
}
