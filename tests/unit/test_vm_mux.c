/* vm_mux: the microVM relay's multiplexer, the host's end facing a hostile
 * guest (vm_mux.h).  A well-formed exchange carries bytes both ways, in any
 * split; every frame outside the protocol ends the channel with a reason
 * and closes every stream's socket; a guest that never reads gets at most
 * a window's worth of bytes queued per stream. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "vm_mux.h"

/* the servers' ends of the streams the host opened */
struct servers {
	int fd[512];
	size_t n;
	int fail_target; /* connect refuses this target */
};

static int test_connect(void *ctx, uint8_t target)
{
	struct servers *s = ctx;
	int sv[2];
	if (target == s->fail_target || s->n == 512 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	s->fd[s->n++] = sv[1];
	return sv[0];
}

static void servers_close(struct servers *s)
{
	for (size_t i = 0; i < s->n; i++)
		close(s->fd[i]);
	s->n = 0;
}

static size_t frame(uint8_t *out, uint8_t type, uint32_t id, const void *p, uint32_t len)
{
	out[0] = type;
	out[1] = (uint8_t)(id >> 24);
	out[2] = (uint8_t)(id >> 16);
	out[3] = (uint8_t)(id >> 8);
	out[4] = (uint8_t)id;
	out[5] = (uint8_t)(len >> 24);
	out[6] = (uint8_t)(len >> 16);
	out[7] = (uint8_t)(len >> 8);
	out[8] = (uint8_t)len;
	if (len && p)
		memcpy(out + AL_MUX_HDR, p, len);
	return AL_MUX_HDR + len;
}

struct rig {
	struct al_vm_mux *m;
	struct servers srv;
	int guest; /* the test's end of the channel */
};

static void rig_up(struct rig *r)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	r->m = malloc(sizeof(*r->m));
	assert_non_null(r->m);
	memset(&r->srv, 0, sizeof(r->srv));
	r->srv.fail_target = -1;
	al_vm__mux_init(r->m, sv[0], true, test_connect, &r->srv);
	r->guest = sv[1];
}

static void rig_down(struct rig *r)
{
	al_vm__mux_release(r->m);
	close(r->m->chan);
	close(r->guest);
	servers_close(&r->srv);
	free(r->m);
}

/* a few rounds of poll and step, without blocking */
static int pump(struct rig *r, int rounds)
{
	struct pollfd pf[AL_MUX_POLLFDS];
	for (int i = 0; i < rounds; i++) {
		size_t n = al_vm__mux_pollfds(r->m, pf);
		poll(pf, n, 0);
		if (al_vm__mux_step(r->m, pf, n) < 0)
			return -1;
	}
	return 0;
}

static void send_all(int fd, const void *p, size_t n)
{
	assert_int_equal(write(fd, p, n), (ssize_t)n);
}

/* what the host sent the guest, parsed (the test trusts it) */
struct got {
	uint8_t type;
	uint32_t id, len;
	uint8_t data[AL_MUX_FRAME_MAX];
};

static size_t read_frames(int fd, struct got *g, size_t max)
{
	static uint8_t buf[1 << 20];
	size_t n = 0, k = 0;
	ssize_t r;
	while (n < sizeof(buf) && (r = recv(fd, buf + n, sizeof(buf) - n, MSG_DONTWAIT)) > 0)
		n += (size_t)r;
	for (size_t off = 0; off + AL_MUX_HDR <= n && k < max;) {
		g[k].type = buf[off];
		g[k].id = (uint32_t)buf[off + 1] << 24 | (uint32_t)buf[off + 2] << 16 |
			  (uint32_t)buf[off + 3] << 8 | buf[off + 4];
		g[k].len = (uint32_t)buf[off + 5] << 24 | (uint32_t)buf[off + 6] << 16 |
			   (uint32_t)buf[off + 7] << 8 | buf[off + 8];
		assert_true(g[k].len <= AL_MUX_FRAME_MAX && off + AL_MUX_HDR + g[k].len <= n);
		memcpy(g[k].data, buf + off + AL_MUX_HDR, g[k].len);
		off += AL_MUX_HDR + g[k].len;
		k++;
	}
	return k;
}

static void test_exchange(void **state)
{
	(void)state;
	struct rig r;
	rig_up(&r);
	uint8_t in[256];
	size_t n = frame(in, AL_MUX_OPEN, 1, "\0", 1);
	n += frame(in + n, AL_MUX_DATA, 1, "GET / HTTP/1.1\r\n", 16);
	n += frame(in + n, AL_MUX_EOF, 1, NULL, 0);
	/* one byte at a time: any split is the same */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(al_vm__mux_feed(r.m, in + i, 1), 0);
	assert_int_equal(r.srv.n, 1);
	assert_int_equal(r.m->nopen, 1);
	assert_int_equal(pump(&r, 3), 0);
	char buf[64];
	assert_int_equal(read(r.srv.fd[0], buf, sizeof(buf)), 16);
	assert_memory_equal(buf, "GET / HTTP/1.1\r\n", 16);
	assert_int_equal(read(r.srv.fd[0], buf, sizeof(buf)), 0); /* the guest's EOF */
	send_all(r.srv.fd[0], "HTTP/1.1 200 OK\r\n", 17);
	shutdown(r.srv.fd[0], SHUT_WR);
	assert_int_equal(pump(&r, 4), 0);
	static struct got g[16];
	size_t k = read_frames(r.guest, g, 16);
	/* a CREDIT for what the server took, the answer, its EOF */
	bool data = false, eof = false, credit = false;
	for (size_t i = 0; i < k; i++) {
		assert_int_equal(g[i].id, 1);
		if (g[i].type == AL_MUX_DATA) {
			assert_int_equal(g[i].len, 17);
			assert_memory_equal(g[i].data, "HTTP/1.1 200 OK\r\n", 17);
			data = true;
		}
		eof |= g[i].type == AL_MUX_EOF;
		credit |= g[i].type == AL_MUX_CREDIT;
	}
	assert_true(data && eof && credit);
	/* both EOFs crossed: the stream is over and its slot free */
	assert_int_equal(r.m->nopen, 0);
	assert_int_equal(pump(&r, 1), 0);
	for (size_t i = 0; i < AL_MUX_SLOTS; i++)
		assert_int_equal(r.m->st[i].fd, -1);
	rig_down(&r);
}

/* each of these ends the channel, naming why */
static void test_hostile_frames(void **state)
{
	(void)state;
	static uint8_t big[AL_MUX_HDR + AL_MUX_FRAME_MAX + 16];
	struct {
		const char *why;
		uint8_t bytes[64];
		size_t n;
	} cases[16];
	size_t nc = 0;
	uint8_t four[4] = { 0, 0, 0, 1 };
#define CASE(w, ...)                          \
	do {                                  \
		cases[nc].why = w;            \
		size_t off = 0;               \
		uint8_t *b = cases[nc].bytes; \
		(void)b;                      \
		__VA_ARGS__;                  \
		cases[nc++].n = off;          \
	} while (0)
	CASE("an unknown frame type", off += frame(b, 9, 1, NULL, 0));
	CASE("an unknown frame type", off += frame(b, 0, 1, NULL, 0));
	CASE("a malformed OPEN", off += frame(b, AL_MUX_OPEN, 1, "\2", 1));
	CASE("a malformed OPEN", off += frame(b, AL_MUX_OPEN, 1, "\0\0", 2));
	CASE("a frame for a stream never opened", off += frame(b, AL_MUX_DATA, 7, "x", 1));
	CASE("a frame for a stream never opened", off += frame(b, AL_MUX_EOF, 0, NULL, 0));
	CASE("an OPEN reusing an id", off += frame(b, AL_MUX_OPEN, 1, "\0", 1);
	     off += frame(b + off, AL_MUX_OPEN, 1, "\0", 1));
	CASE("an OPEN reusing an id", off += frame(b, AL_MUX_OPEN, 5, "\0", 1);
	     off += frame(b + off, AL_MUX_OPEN, 2, "\0", 1));
	CASE("an empty DATA", off += frame(b, AL_MUX_OPEN, 1, "\0", 1);
	     off += frame(b + off, AL_MUX_DATA, 1, NULL, 0));
	CASE("a second EOF", off += frame(b, AL_MUX_OPEN, 1, "\0", 1);
	     off += frame(b + off, AL_MUX_EOF, 1, NULL, 0);
	     off += frame(b + off, AL_MUX_EOF, 1, NULL, 0));
	CASE("DATA after EOF", off += frame(b, AL_MUX_OPEN, 1, "\0", 1);
	     off += frame(b + off, AL_MUX_EOF, 1, NULL, 0);
	     off += frame(b + off, AL_MUX_DATA, 1, "x", 1));
	CASE("CREDIT beyond the window", off += frame(b, AL_MUX_OPEN, 1, "\0", 1);
	     off += frame(b + off, AL_MUX_CREDIT, 1, four, 4));
	CASE("a malformed CREDIT", off += frame(b, AL_MUX_OPEN, 1, "\0", 1);
	     off += frame(b + off, AL_MUX_CREDIT, 1, four, 3));
	CASE("a malformed RESET", off += frame(b, AL_MUX_OPEN, 1, "\0", 1);
	     off += frame(b + off, AL_MUX_RESET, 1, "x", 1));
	/* a header claiming 4 GiB: refused at the header, nothing allocated */
	CASE("a frame over the size limit", b[0] = AL_MUX_DATA; b[1] = 0; b[2] = 0; b[3] = 0;
	     b[4] = 1; b[5] = 0xff; b[6] = 0xff; b[7] = 0xff; b[8] = 0xff; off = AL_MUX_HDR);
	for (size_t i = 0; i < nc; i++) {
		struct rig r;
		rig_up(&r);
		int rc = al_vm__mux_feed(r.m, cases[i].bytes, cases[i].n);
		if (rc != -1 || !strstr(r.m->error, cases[i].why))
			fail_msg("case %zu (%s): rc %d, error '%s'", i, cases[i].why, rc,
				 r.m->error);
		/* over: nothing more is taken, the step says so */
		assert_int_equal(al_vm__mux_feed(r.m, (const uint8_t *)"", 0), -1);
		assert_int_equal(pump(&r, 1), -1);
		/* every stream's socket closed: its server sees the end */
		al_vm__mux_release(r.m);
		for (size_t s = 0; s < r.srv.n; s++) {
			char c;
			assert_int_equal(read(r.srv.fd[s], &c, 1), 0);
		}
		rig_down(&r);
	}
	/* one byte over the frame size */
	struct rig r;
	rig_up(&r);
	size_t n = frame(big, AL_MUX_OPEN, 1, "\0", 1);
	n += frame(big + n, AL_MUX_DATA, 1, NULL, AL_MUX_FRAME_MAX + 1);
	assert_int_equal(al_vm__mux_feed(r.m, big, n), -1);
	assert_non_null(strstr(r.m->error, "over the size limit"));
	rig_down(&r);
}

static void test_window_and_streams(void **state)
{
	(void)state;
	static uint8_t buf[AL_MUX_HDR + AL_MUX_FRAME_MAX];
	static uint8_t payload[AL_MUX_FRAME_MAX];
	/* DATA past the window without a CREDIT: refused */
	struct rig r;
	rig_up(&r);
	size_t n = frame(buf, AL_MUX_OPEN, 1, "\0", 1);
	assert_int_equal(al_vm__mux_feed(r.m, buf, n), 0);
	for (uint32_t sent = 0; sent < AL_MUX_WINDOW; sent += AL_MUX_FRAME_MAX) {
		n = frame(buf, AL_MUX_DATA, 1, payload, AL_MUX_FRAME_MAX);
		assert_int_equal(al_vm__mux_feed(r.m, buf, n), 0);
	}
	n = frame(buf, AL_MUX_DATA, 1, "x", 1);
	assert_int_equal(al_vm__mux_feed(r.m, buf, n), -1);
	assert_non_null(strstr(r.m->error, "beyond the window"));
	rig_down(&r);

	/* more than AL_MUX_STREAMS_MAX open at once: refused */
	rig_up(&r);
	for (uint32_t id = 1; id <= AL_MUX_STREAMS_MAX; id++) {
		n = frame(buf, AL_MUX_OPEN, id, "\1", 1);
		assert_int_equal(al_vm__mux_feed(r.m, buf, n), 0);
	}
	assert_int_equal(r.srv.n, AL_MUX_STREAMS_MAX);
	n = frame(buf, AL_MUX_OPEN, AL_MUX_STREAMS_MAX + 1, "\1", 1);
	assert_int_equal(al_vm__mux_feed(r.m, buf, n), -1);
	assert_non_null(strstr(r.m->error, "too many streams"));
	rig_down(&r);

	/* ...but streams that are over make room: 1000 in turn, each
	 * reset by the guest */
	rig_up(&r);
	for (uint32_t id = 1; id <= 1000; id++) {
		n = frame(buf, AL_MUX_OPEN, id, "\0", 1);
		n += frame(buf + n, AL_MUX_RESET, id, NULL, 0);
		assert_int_equal(al_vm__mux_feed(r.m, buf, n), 0);
		/* and frames still in flight for it are ignored */
		n = frame(buf, AL_MUX_DATA, id, "late", 4);
		assert_int_equal(al_vm__mux_feed(r.m, buf, n), 0);
		servers_close(&r.srv);
	}
	assert_int_equal(r.m->nopen, 0);
	rig_down(&r);
}

/* a target the run does not have: that stream is reset, the channel lives */
static void test_refused_target(void **state)
{
	(void)state;
	struct rig r;
	rig_up(&r);
	r.srv.fail_target = AL_MUX_TO_INTEG;
	uint8_t buf[64];
	size_t n = frame(buf, AL_MUX_OPEN, 1, "\1", 1);
	n += frame(buf + n, AL_MUX_DATA, 1, "x", 1); /* in flight: ignored */
	n += frame(buf + n, AL_MUX_OPEN, 2, "\0", 1);
	assert_int_equal(al_vm__mux_feed(r.m, buf, n), 0);
	assert_int_equal(r.srv.n, 1);
	assert_int_equal(r.m->nopen, 1);
	assert_int_equal(r.m->refused, 1);
	assert_int_equal(pump(&r, 2), 0);
	static struct got g[8];
	size_t k = read_frames(r.guest, g, 8);
	assert_true(k >= 1);
	assert_int_equal(g[0].type, AL_MUX_RESET);
	assert_int_equal(g[0].id, 1);
	rig_down(&r);
}

/* a guest that never reads: the server's bytes stop at the window */
static void test_guest_never_reads(void **state)
{
	(void)state;
	struct rig r;
	rig_up(&r);
	int small = 4096;
	setsockopt(r.guest, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	setsockopt(r.m->chan, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	uint8_t buf[64];
	size_t n = frame(buf, AL_MUX_OPEN, 1, "\0", 1);
	assert_int_equal(al_vm__mux_feed(r.m, buf, n), 0);
	int fl = fcntl(r.srv.fd[0], F_GETFL);
	fcntl(r.srv.fd[0], F_SETFL, fl | O_NONBLOCK);
	static uint8_t chunk[65536];
	size_t written = 0;
	for (int round = 0; round < 200; round++) {
		ssize_t w = write(r.srv.fd[0], chunk, sizeof(chunk));
		if (w > 0)
			written += (size_t)w;
		assert_int_equal(pump(&r, 1), 0);
		assert_true(r.m->outlen <= AL_MUX_OUT_MAX);
	}
	/* the host took what its output queue holds (a window at most) and
	 * then stopped: the server's bytes wait in its socket */
	size_t taken = AL_MUX_WINDOW - r.m->st[0].credit;
	assert_true(taken > 0 && taken <= AL_MUX_WINDOW);
	assert_true(written > taken + 65536);
	assert_true(r.m->outlen <= AL_MUX_OUT_MAX);
	assert_int_equal(pump(&r, 5), 0);
	assert_int_equal(AL_MUX_WINDOW - r.m->st[0].credit, taken);
	rig_down(&r);
}

/* a guest that reads but never credits: a window's worth, then nothing */
static void test_guest_never_credits(void **state)
{
	(void)state;
	struct rig r;
	rig_up(&r);
	uint8_t buf[64];
	size_t n = frame(buf, AL_MUX_OPEN, 1, "\0", 1);
	assert_int_equal(al_vm__mux_feed(r.m, buf, n), 0);
	int fl = fcntl(r.srv.fd[0], F_GETFL);
	fcntl(r.srv.fd[0], F_SETFL, fl | O_NONBLOCK);
	static uint8_t chunk[65536];
	static struct got g[64];
	size_t got = 0;
	for (int round = 0; round < 100; round++) {
		(void)!write(r.srv.fd[0], chunk, sizeof(chunk));
		assert_int_equal(pump(&r, 1), 0);
		size_t k = read_frames(r.guest, g, 64);
		for (size_t i = 0; i < k; i++)
			if (g[i].type == AL_MUX_DATA)
				got += g[i].len;
	}
	assert_int_equal(got, AL_MUX_WINDOW);
	assert_int_equal(r.m->st[0].credit, 0);
	/* a CREDIT lets the next bytes through */
	uint8_t c[4] = { 0, 0, 0x40, 0 };
	n = frame(buf, AL_MUX_CREDIT, 1, c, 4);
	assert_int_equal(al_vm__mux_feed(r.m, buf, n), 0);
	assert_int_equal(pump(&r, 2), 0);
	size_t k = read_frames(r.guest, g, 64);
	size_t more = 0;
	for (size_t i = 0; i < k; i++)
		if (g[i].type == AL_MUX_DATA)
			more += g[i].len;
	assert_int_equal(more, 0x4000);
	rig_down(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exchange),
		cmocka_unit_test(test_hostile_frames),
		cmocka_unit_test(test_window_and_streams),
		cmocka_unit_test(test_refused_target),
		cmocka_unit_test(test_guest_never_reads),
		cmocka_unit_test(test_guest_never_credits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
