/* The microVM relay's multiplexer (docs/formats.md, "microVM relay"): the
 * connections a guest's command makes to 127.0.0.1:AL_NET_PROXY_PORT and
 * :AL_INTEG_PORT, carried over one virtio-serial port to the host, which
 * hands each to the same proxy and relay a namespace run uses.  The same
 * code runs at both ends (the guest agent links it, libc only); the host's
 * end (host = true) trusts nothing the guest sends: any frame outside the
 * protocol ends the channel, and with it only that run's relay.
 *
 * A frame: type (1 byte), stream id (4, big-endian), length (4), payload.
 *   OPEN   id, 1 byte: target (0 proxy, 1 integrations); guest to host only,
 *          ids strictly increasing from 1, at most AL_MUX_STREAMS_MAX open
 *   DATA   id, 1..AL_MUX_FRAME_MAX bytes, never more than the receiver's
 *          window has left (AL_MUX_WINDOW at the open, then what CREDIT gave)
 *   EOF    id, empty: the sender sends no more on it
 *   RESET  id, empty: the stream is over, both ways
 *   CREDIT id, 4 bytes: the receiver consumed that many more bytes
 * A stream is over for an end once it sent a RESET or both EOFs crossed;
 * frames for an id that is over are ignored (they were in flight). */
#ifndef AL_VM_MUX_H
#define AL_VM_MUX_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AL_MUX_HDR 9
#define AL_MUX_FRAME_MAX 16384
#define AL_MUX_WINDOW (128u << 10)
#define AL_MUX_STREAMS_MAX 64
/* streams over, still handing their last bytes to their socket */
#define AL_MUX_SLOTS (2 * AL_MUX_STREAMS_MAX)
#define AL_MUX_OUT_MAX (4 * (AL_MUX_HDR + AL_MUX_FRAME_MAX) + 8192)
#define AL_MUX_POLLFDS (1 + AL_MUX_SLOTS)

enum { AL_MUX_OPEN = 1, AL_MUX_DATA, AL_MUX_EOF, AL_MUX_RESET, AL_MUX_CREDIT };
enum { AL_MUX_TO_PROXY = 0, AL_MUX_TO_INTEG = 1, AL_MUX_TARGETS };

struct al_vm_mux_stream {
	uint32_t id;
	int fd; /* the local end (nonblocking); -1: a free slot */
	uint8_t target;
	bool counted;                      /* among the open (not over for us) */
	bool local_eof, eof_sent, eof_got; /* EOF read locally; sent; received */
	bool reset_pending, wr_shut;
	uint32_t credit; /* bytes we may still send */
	uint32_t room;   /* bytes the peer may still send */
	uint32_t owed;   /* consumed, not yet credited back */
	uint8_t *buf;    /* the peer's bytes for fd (AL_MUX_WINDOW) */
	size_t boff, blen;
};

struct al_vm_mux {
	int chan;
	bool chan_sock; /* send(MSG_NOSIGNAL) rather than write */
	bool host;
	uint32_t last_id;
	unsigned nopen;
	/* host: a connected socket to target's server, or -1 */
	int (*connect)(void *ctx, uint8_t target);
	void *ctx;
	struct al_vm_mux_stream st[AL_MUX_SLOTS];
	uint8_t in[AL_MUX_HDR + AL_MUX_FRAME_MAX];
	size_t inlen;
	uint8_t out[AL_MUX_OUT_MAX];
	size_t outoff, outlen;
	bool chan_eof;
	char error[128]; /* set: the channel is over */
	uint64_t opened, refused;
};

/* chan: the channel (made nonblocking here). */
void al_vm__mux_init(struct al_vm_mux *m, int chan, bool host, int (*connect)(void *, uint8_t),
		     void *ctx);
/* Guest: carry the accepted connection fd (owned from here) to target: 0,
 * or -1 when every stream is in use (fd closed). */
int al_vm__mux_add(struct al_vm_mux *m, int fd, uint8_t target);
/* Bytes read from the channel, split anyhow: 0, or -1 once the peer broke
 * the protocol (m->error says how; the channel is over). */
int al_vm__mux_feed(struct al_vm_mux *m, const uint8_t *p, size_t n);
/* What to poll: pf[0] the channel, then the streams; returns the count. */
size_t al_vm__mux_pollfds(struct al_vm_mux *m, struct pollfd *pf);
/* After poll on what al_vm__mux_pollfds gave: move what can move.  0 while the
 * channel lives, -1 once it is over (the peer closed it or broke the
 * protocol, or it failed). */
int al_vm__mux_step(struct al_vm_mux *m, const struct pollfd *pf, size_t n);
/* Close every stream's socket and free the buffers. */
void al_vm__mux_release(struct al_vm_mux *m);

#endif
