/* The microVM relay's multiplexer (vm_mux.h).  libc only: the guest agent
 * links this file too. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vm_mux.h"

/* room kept in the output queue for control frames: DATA never takes it */
#define CTRL_RESERVE (AL_MUX_OUT_MAX - 4 * (AL_MUX_HDR + AL_MUX_FRAME_MAX))
#define CREDIT_BATCH (AL_MUX_WINDOW / 4)

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void al_vm__mux_init(struct al_vm_mux *m, int chan, bool host, int (*connect)(void *, uint8_t),
		     void *ctx)
{
	memset(m, 0, sizeof(*m));
	m->chan = chan;
	m->host = host;
	m->connect = connect;
	m->ctx = ctx;
	for (size_t i = 0; i < AL_MUX_SLOTS; i++)
		m->st[i].fd = -1;
	struct stat st;
	m->chan_sock = fstat(chan, &st) == 0 && S_ISSOCK(st.st_mode);
	set_nonblock(chan);
}

static int violation(struct al_vm_mux *m, const char *what, uint32_t id)
{
	if (!m->error[0])
		snprintf(m->error, sizeof(m->error), "%s (stream %u)", what, (unsigned)id);
	return -1;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static size_t out_room(const struct al_vm_mux *m)
{
	return AL_MUX_OUT_MAX - m->outoff - m->outlen;
}

/* Make room at the queue's end (moving what is queued to its start). */
static bool out_reserve(struct al_vm_mux *m, size_t n)
{
	if (out_room(m) < n && m->outoff) {
		memmove(m->out, m->out + m->outoff, m->outlen);
		m->outoff = 0;
	}
	return out_room(m) >= n;
}

/* Queue a frame's header (the payload follows, written by the caller). */
static uint8_t *out_frame(struct al_vm_mux *m, uint8_t type, uint32_t id, uint32_t len)
{
	if (!out_reserve(m, AL_MUX_HDR + len))
		return NULL;
	uint8_t *h = m->out + m->outoff + m->outlen;
	h[0] = type;
	put32(h + 1, id);
	put32(h + 5, len);
	m->outlen += AL_MUX_HDR + len;
	return h + AL_MUX_HDR;
}

static struct al_vm_mux_stream *find(struct al_vm_mux *m, uint32_t id)
{
	for (size_t i = 0; i < AL_MUX_SLOTS; i++)
		if (m->st[i].fd >= 0 && m->st[i].id == id)
			return &m->st[i];
	return NULL;
}

static void slot_free(struct al_vm_mux *m, struct al_vm_mux_stream *s)
{
	if (s->counted)
		m->nopen--;
	close(s->fd);
	free(s->buf);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

/* Over for us: no longer counted; the slot goes once its bytes are out. */
static void over(struct al_vm_mux *m, struct al_vm_mux_stream *s)
{
	if (s->counted) {
		s->counted = false;
		m->nopen--;
	}
}

static struct al_vm_mux_stream *slot_new(struct al_vm_mux *m, int fd, uint32_t id, uint8_t target)
{
	for (size_t i = 0; i < AL_MUX_SLOTS; i++) {
		struct al_vm_mux_stream *s = &m->st[i];
		if (s->fd >= 0)
			continue;
		if (!(s->buf = malloc(AL_MUX_WINDOW)))
			return NULL;
		s->fd = fd;
		s->id = id;
		s->target = target;
		s->counted = true;
		s->credit = s->room = AL_MUX_WINDOW;
		m->nopen++;
		set_nonblock(fd);
		return s;
	}
	return NULL;
}

int al_vm__mux_add(struct al_vm_mux *m, int fd, uint8_t target)
{
	struct al_vm_mux_stream *s = NULL;
	uint8_t *p = NULL;
	/* the OPEN is queued now: the ids go out in order */
	if (!m->error[0] && !m->host && m->nopen < AL_MUX_STREAMS_MAX && m->last_id < UINT32_MAX &&
	    out_reserve(m, AL_MUX_HDR + 1))
		s = slot_new(m, fd, m->last_id + 1, target);
	if (s)
		p = out_frame(m, AL_MUX_OPEN, s->id, 1);
	if (!p) {
		if (s)
			slot_free(m, s);
		else
			close(fd);
		m->refused++;
		return -1;
	}
	*p = target;
	m->last_id++;
	m->opened++;
	return 0;
}

/* The host's answer to an OPEN: a connection to the target's server. */
static int on_open(struct al_vm_mux *m, uint32_t id, const uint8_t *p, uint32_t len)
{
	if (!m->host)
		return violation(m, "an OPEN from the host", id);
	if (len != 1 || p[0] >= AL_MUX_TARGETS)
		return violation(m, "a malformed OPEN", id);
	if (id <= m->last_id)
		return violation(m, "an OPEN reusing an id", id);
	if (m->nopen >= AL_MUX_STREAMS_MAX)
		return violation(m, "too many streams", id);
	m->last_id = id;
	m->opened++;
	int fd = m->connect ? m->connect(m->ctx, p[0]) : -1;
	struct al_vm_mux_stream *s = fd >= 0 ? slot_new(m, fd, id, p[0]) : NULL;
	if (!s) {
		/* refused at once: its RESET goes out ahead of any DATA */
		if (fd >= 0)
			close(fd);
		m->refused++;
		if (!out_frame(m, AL_MUX_RESET, id, 0))
			return violation(m, "opens faster than the channel is read", id);
	}
	return 0;
}

static int on_frame(struct al_vm_mux *m, uint8_t type, uint32_t id, const uint8_t *p, uint32_t len)
{
	if (type < AL_MUX_OPEN || type > AL_MUX_CREDIT)
		return violation(m, "an unknown frame type", id);
	if (type == AL_MUX_OPEN)
		return on_open(m, id, p, len);
	if (id == 0 || id > m->last_id)
		return violation(m, "a frame for a stream never opened", id);
	struct al_vm_mux_stream *s = find(m, id);
	switch (type) {
	case AL_MUX_DATA:
		if (len == 0)
			return violation(m, "an empty DATA", id);
		if (!s || s->reset_pending)
			return 0; /* over for us: in flight */
		if (s->eof_got)
			return violation(m, "DATA after EOF", id);
		if (len > s->room)
			return violation(m, "DATA beyond the window", id);
		s->room -= len;
		if (s->boff + s->blen + len > AL_MUX_WINDOW) {
			memmove(s->buf, s->buf + s->boff, s->blen);
			s->boff = 0;
		}
		memcpy(s->buf + s->boff + s->blen, p, len);
		s->blen += len;
		return 0;
	case AL_MUX_EOF:
		if (len)
			return violation(m, "a malformed EOF", id);
		if (!s || s->reset_pending)
			return 0;
		if (s->eof_got)
			return violation(m, "a second EOF", id);
		s->eof_got = true;
		if (s->eof_sent)
			over(m, s);
		return 0;
	case AL_MUX_RESET:
		if (len)
			return violation(m, "a malformed RESET", id);
		if (s)
			slot_free(m, s);
		return 0;
	case AL_MUX_CREDIT: {
		if (len != 4)
			return violation(m, "a malformed CREDIT", id);
		uint32_t c = get32(p);
		if (!s || s->reset_pending)
			return 0;
		if (c == 0 || c > AL_MUX_WINDOW - s->credit)
			return violation(m, "CREDIT beyond the window", id);
		s->credit += c;
		return 0;
	}
	default: return violation(m, "an unknown frame type", id);
	}
}

int al_vm__mux_feed(struct al_vm_mux *m, const uint8_t *p, size_t n)
{
	if (m->error[0])
		return -1;
	while (n) {
		size_t want = AL_MUX_HDR;
		if (m->inlen >= AL_MUX_HDR) {
			uint32_t len = get32(m->in + 5);
			if (len > AL_MUX_FRAME_MAX)
				return violation(m, "a frame over the size limit",
						 get32(m->in + 1));
			want += len;
		}
		size_t k = want - m->inlen < n ? want - m->inlen : n;
		memcpy(m->in + m->inlen, p, k);
		m->inlen += k;
		p += k;
		n -= k;
		if (m->inlen == AL_MUX_HDR && get32(m->in + 5) > AL_MUX_FRAME_MAX)
			return violation(m, "a frame over the size limit", get32(m->in + 1));
		if (m->inlen < AL_MUX_HDR || m->inlen < AL_MUX_HDR + get32(m->in + 5))
			continue;
		m->inlen = 0;
		if (on_frame(m, m->in[0], get32(m->in + 1), m->in + AL_MUX_HDR, get32(m->in + 5)) <
		    0)
			return -1;
	}
	return 0;
}

/* Frames a stream owes the peer, while the queue has room for them. */
static void stream_out(struct al_vm_mux *m, struct al_vm_mux_stream *s)
{
	if (s->reset_pending) {
		if (out_frame(m, AL_MUX_RESET, s->id, 0))
			slot_free(m, s);
		return;
	}
	if (s->owed && (s->owed >= CREDIT_BATCH || !s->blen)) {
		uint8_t *p = out_frame(m, AL_MUX_CREDIT, s->id, 4);
		if (!p)
			return;
		put32(p, s->owed);
		s->room += s->owed;
		s->owed = 0;
	}
	if (s->local_eof && !s->eof_sent) {
		if (!out_frame(m, AL_MUX_EOF, s->id, 0))
			return;
		s->eof_sent = true;
		if (s->eof_got)
			over(m, s);
	}
}

size_t al_vm__mux_pollfds(struct al_vm_mux *m, struct pollfd *pf)
{
	size_t n = 0;
	pf[n++] = (struct pollfd){ m->error[0] ? -1 : m->chan,
				   (short)((m->chan_eof ? 0 : POLLIN) | (m->outlen ? POLLOUT : 0)),
				   0 };
	bool data_room = out_room(m) + m->outoff >= AL_MUX_HDR + AL_MUX_FRAME_MAX + CTRL_RESERVE;
	for (size_t i = 0; i < AL_MUX_SLOTS; i++) {
		struct al_vm_mux_stream *s = &m->st[i];
		short ev = 0;
		if (s->fd >= 0 && !m->error[0]) {
			if (data_room && s->credit && !s->local_eof && !s->reset_pending &&
			    s->counted)
				ev |= POLLIN;
			if (s->blen || (s->eof_got && !s->wr_shut))
				ev |= POLLOUT;
		}
		pf[n++] = (struct pollfd){ ev ? s->fd : -1, ev, 0 };
	}
	return n;
}

static void stream_read(struct al_vm_mux *m, struct al_vm_mux_stream *s)
{
	size_t k = s->credit < AL_MUX_FRAME_MAX ? s->credit : AL_MUX_FRAME_MAX;
	if (!out_reserve(m, AL_MUX_HDR + k + CTRL_RESERVE))
		return;
	uint8_t *h = m->out + m->outoff + m->outlen;
	ssize_t r = read(s->fd, h + AL_MUX_HDR, k);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r < 0) {
		s->reset_pending = true; /* counted until its RESET is queued */
		s->blen = 0;
		return;
	}
	if (r == 0) {
		s->local_eof = true;
		return;
	}
	h[0] = AL_MUX_DATA;
	put32(h + 1, s->id);
	put32(h + 5, (uint32_t)r);
	m->outlen += AL_MUX_HDR + (size_t)r;
	s->credit -= (uint32_t)r;
}

static void stream_write(struct al_vm_mux_stream *s)
{
	while (s->blen) {
		ssize_t w = send(s->fd, s->buf + s->boff, s->blen, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return;
		if (w <= 0) {
			s->reset_pending = true;
			s->blen = 0;
			return;
		}
		s->boff += (size_t)w;
		s->blen -= (size_t)w;
		s->owed += (uint32_t)w;
	}
	s->boff = 0;
	if (s->eof_got && !s->wr_shut) {
		shutdown(s->fd, SHUT_WR);
		s->wr_shut = true;
	}
}

int al_vm__mux_step(struct al_vm_mux *m, const struct pollfd *pf, size_t n)
{
	if (m->error[0])
		return -1;
	if (n && pf[0].fd >= 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
		uint8_t buf[65536];
		ssize_t r = m->chan_eof ? 0 : read(m->chan, buf, sizeof(buf));
		if (r > 0 && al_vm__mux_feed(m, buf, (size_t)r) < 0)
			return -1;
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
			m->chan_eof = true;
			snprintf(m->error, sizeof(m->error), "the channel closed");
			return -1;
		}
	}
	for (size_t i = 1; i < n && i <= AL_MUX_SLOTS; i++) {
		struct al_vm_mux_stream *s = &m->st[i - 1];
		if (pf[i].fd < 0 || s->fd != pf[i].fd || !pf[i].revents)
			continue;
		if (pf[i].revents & (POLLOUT | POLLERR | POLLHUP))
			stream_write(s);
		if (s->fd >= 0 && (pf[i].revents & (POLLIN | POLLERR | POLLHUP)) && s->counted &&
		    !s->local_eof && !s->reset_pending && s->credit)
			stream_read(m, s);
	}
	for (size_t i = 0; i < AL_MUX_SLOTS; i++) {
		struct al_vm_mux_stream *s = &m->st[i];
		if (s->fd < 0)
			continue;
		stream_out(m, s);
		/* over for both ends and every byte handed on: gone */
		if (s->fd >= 0 && !s->counted && !s->reset_pending && !s->blen && s->wr_shut &&
		    !s->owed)
			slot_free(m, s);
	}
	while (m->outlen) {
		ssize_t w = m->chan_sock
				    ? send(m->chan, m->out + m->outoff, m->outlen, MSG_NOSIGNAL)
				    : write(m->chan, m->out + m->outoff, m->outlen);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w <= 0) {
			snprintf(m->error, sizeof(m->error), "the channel failed: %s",
				 strerror(errno));
			return -1;
		}
		m->outoff += (size_t)w;
		m->outlen -= (size_t)w;
	}
	if (!m->outlen)
		m->outoff = 0;
	return 0;
}

void al_vm__mux_release(struct al_vm_mux *m)
{
	for (size_t i = 0; i < AL_MUX_SLOTS; i++)
		if (m->st[i].fd >= 0)
			slot_free(m, &m->st[i]);
}
