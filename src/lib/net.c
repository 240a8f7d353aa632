/* net: a run's egress proxy (net.h, net_private.h).
 *
 * The namespace backend hands us a listening socket that lives in the
 * sandbox's network namespace (127.0.0.1:3128 there); the sandbox has no
 * other interface than its loopback, so this proxy is its only way out.
 * One thread accepts; each connection gets a thread that reads the
 * request head and decides:
 *
 *   CONNECT host:port      a TLS tunnel: the first bytes must be a TLS
 *                          ClientHello whose SNI is host (no SNI when host
 *                          is an address literal)
 *   GET http://host/path   plain HTTP: one request, its Host equal to
 *                          host, forwarded in origin form with
 *                          "Connection: close"
 *
 * host:port must match an allow entry; the name is resolved here
 * (getaddrinfo on the host), special addresses (loopback, private,
 * link-local, metadata, ...) are dropped unless an entry names that
 * address literally, and the proxy connects to the address it kept: the
 * sandbox never resolves a name and never picks an address.  Bytes then
 * move with splice(2) (a second thread for the upload direction).  Every
 * connection, allowed or refused, is recorded (al_net__proxy_json).
 *
 * Rejected libraries: libmicrohttpd and libcurl are server and client
 * libraries, not proxies; what a forward proxy needs from HTTP is the
 * request head only, parsed strictly here. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "net_private.h"
#include "serve_private.h"
#include "util.h"

/* ---- allow entries ---------------------------------------------------------------- */

enum { PORT_ANY = -1, PORT_WEB = 0 }; /* "*"; none given: 80 and 443 */

struct rule {
	char host[256]; /* lower case; for a wildcard the suffix */
	bool any, wildcard, ip;
	struct in6_addr addr; /* ip: IPv4 as ::ffff:a.b.c.d */
	int port;
};

static bool name_ok(const char *s)
{
	size_t n = strlen(s), label = 0;
	if (!n || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '.') {
			if (!label || s[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return false;
		if ((c == '-' && !label) || ++label > 63)
			return false; /* a label neither starts nor ends with '-' */
	}
	return label > 0 && s[n - 1] != '-';
}

/* text as an error message may show it: its first 64 bytes, control
 * characters escaped (an entry comes from the requester) */
#define SHOWN_MAX (4 * 64 + 1)
static const char *shown(const char *text, char *out)
{
	size_t n = strlen(text);
	al_quote(text, n < 64 ? n : 64, out, SHOWN_MAX);
	return out;
}

/* host (and port, when want_port) from text: [v6]:port, v4:port, name:port */
static int parse_hostport(const char *text, struct rule *r, bool entry, int dflt_port,
			  struct al_error *err)
{
	memset(r, 0, sizeof(*r));
	char buf[AL_NET_ENTRY_MAX], q[SHOWN_MAX];
	size_t n = strlen(text);
	if (!n || n >= sizeof(buf))
		return al_fail(err, AL_EINVAL, 0, "egress: '%s' is not HOST[:PORT]",
			       shown(text, q));
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)(text[i] >= 'A' && text[i] <= 'Z' ? text[i] + 32 : text[i]);
	buf[n] = 0;
	char *host = buf, *port = NULL;
	if (buf[0] == '[') {
		char *end = strchr(buf, ']');
		if (!end || (end[1] && end[1] != ':'))
			return al_fail(err, AL_EINVAL, 0, "egress: bad IPv6 literal in '%s'",
				       shown(text, q));
		*end = 0;
		host = buf + 1;
		port = end[1] ? end + 2 : NULL;
		if (inet_pton(AF_INET6, host, &r->addr) != 1)
			return al_fail(err, AL_EINVAL, 0, "egress: bad IPv6 literal in '%s'",
				       shown(text, q));
		r->ip = true;
	} else {
		char *colon = strrchr(buf, ':');
		if (colon) {
			*colon = 0;
			port = colon + 1;
		}
		struct in_addr v4;
		if (inet_pton(AF_INET, host, &v4) == 1) {
			r->ip = true;
			r->addr.s6_addr[10] = r->addr.s6_addr[11] = 0xff;
			memcpy(r->addr.s6_addr + 12, &v4, 4);
		} else if (entry && !strcmp(host, "*")) {
			r->any = true;
		} else if (entry && !strncmp(host, "*.", 2)) {
			r->wildcard = true;
			host += 2;
		}
		if (!r->ip && !r->any) {
			size_t hl = strlen(host);
			if (hl && host[hl - 1] == '.' && !r->wildcard)
				host[hl - 1] = 0; /* the absolute form of the same name */
			if (!name_ok(host))
				return al_fail(err, AL_EINVAL, 0,
					       "egress: '%s' is not a host name (letters, digits, "
					       "'-', '_' and dots)",
					       shown(text, q));
			/* all digits and dots but not an address: getaddrinfo would
			 * read it as one (127.1) */
			if (strspn(host, "0123456789.") == strlen(host))
				return al_fail(err, AL_EINVAL, 0,
					       "egress: '%s' is neither a name nor an IPv4 "
					       "address",
					       shown(text, q));
		}
	}
	snprintf(r->host, sizeof(r->host), "%.255s", host);
	r->port = dflt_port;
	if (port) {
		char *end;
		if (entry && !strcmp(port, "*"))
			r->port = PORT_ANY;
		else {
			errno = 0;
			long v = *port >= '0' && *port <= '9' ? strtol(port, &end, 10) : 0;
			if (!v || *end || v > 65535 || errno)
				return al_fail(err, AL_EINVAL, 0, "egress: bad port in '%s'",
					       shown(text, q));
			r->port = (int)v;
		}
	}
	return 0;
}

int al_net_allow_check(const char *entry, struct al_error *err)
{
	struct rule r;
	return entry ? parse_hostport(entry, &r, true, PORT_WEB, err)
		     : al_fail(err, AL_EINVAL, 0, "egress: no entry");
}

/* the first 12 bytes of an IPv4-mapped address (::ffff:a.b.c.d) */
static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

static bool v4_special(const uint8_t *a)
{
	return a[0] == 0 || a[0] == 10 || a[0] == 127 || a[0] >= 224 ||
	       (a[0] == 192 && a[1] == 88 && a[2] == 99) || /* 6to4 relay anycast */
	       (a[0] == 100 && (a[1] & 0xc0) == 64) || (a[0] == 169 && a[1] == 254) ||
	       (a[0] == 172 && (a[1] & 0xf0) == 16) || (a[0] == 192 && a[1] == 168) ||
	       (a[0] == 192 && a[1] == 0 && (a[2] == 0 || a[2] == 2)) ||
	       (a[0] == 198 && (a[1] & 0xfe) == 18) || (a[0] == 198 && a[1] == 51 && a[2] == 100) ||
	       (a[0] == 203 && a[1] == 0 && a[2] == 113);
}

/* Not a public unicast address: loopback, unspecified, private, shared,
 * link-local (169.254.169.254 included), documentation, benchmark,
 * multicast, reserved; IPv6's loopback, ULA (fd00:ec2::254), link- and
 * site-local, multicast, documentation, and every form that embeds an
 * IPv4 address (mapped, translated, compatible, NAT64, 6to4, Teredo),
 * ORCHID, the 3fff::/20 documentation block and 5f00::/16 (SRv6). */
static bool addr_special(const struct in6_addr *x)
{
	const uint8_t *a = x->s6_addr;
	static const uint8_t translated[12] = { [8] = 0xff, [9] = 0xff }; /* ::ffff:0:0/96 */
	if (!memcmp(a, mapped, 12))
		return v4_special(a + 12);
	if (!memcmp(a, translated, 12))
		return true;
	if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x00 &&
	    ((a[3] & 0xf0) == 0x10 || (a[3] & 0xf0) == 0x20))
		return true; /* 2001:10::/28, 2001:20::/28 (ORCHID) */
	if ((a[0] == 0x3f && a[1] == 0xff && (a[2] & 0xf0) == 0x00) ||
	    (a[0] == 0x5f && a[1] == 0x00))
		return true; /* 3fff::/20, 5f00::/16 */
	static const uint8_t zero12[12];
	if (!memcmp(a, zero12, 12))
		return true; /* ::, ::1, IPv4-compatible */
	if ((a[0] & 0xfe) == 0xfc || a[0] == 0xff || (a[0] == 0xfe && (a[1] & 0x80) == 0x80))
		return true;
	if (a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b)
		return true; /* 64:ff9b::/96 and /48 */
	if (a[0] == 0x20 && a[1] == 0x02)
		return true; /* 6to4 */
	if (a[0] == 0x20 && a[1] == 0x01 &&
	    ((a[2] == 0 && a[3] == 0) || (a[2] == 0x0d && a[3] == 0xb8)))
		return true; /* Teredo, documentation */
	return false;
}

/* An address of one of this host's own interfaces (ifs, getifaddrs'): the
 * proxy reaches it over loopback, past whatever guards the host's services
 * from outside (its SSH, its admin ports, anything bound to 0.0.0.0).
 * Listed at each check: interfaces come and go. */
static bool addr_local(const struct in6_addr *x, const struct ifaddrs *ifs)
{
	bool v4 = !memcmp(x->s6_addr, mapped, 12);
	for (const struct ifaddrs *i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (v4 && i->ifa_addr->sa_family == AF_INET &&
		    !memcmp(&((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, x->s6_addr + 12,
			    4))
			return true;
		if (!v4 && i->ifa_addr->sa_family == AF_INET6 &&
		    !memcmp(&((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr, x,
			    sizeof(*x)))
			return true;
	}
	return false;
}

/* this host's addresses, listed once per check when an address needs them */
struct host_addrs {
	struct ifaddrs *ifs;
	int state; /* 0: not yet listed; 1: listed; -1: cannot be */
};

static void host_addrs_release(struct host_addrs *h)
{
	if (h->state > 0)
		freeifaddrs(h->ifs);
}

/* reached only through an entry that names it (and in the policy too):
 * special, or this host's own (a host whose interfaces cannot be listed
 * counts every address as its own) */
static bool addr_guarded(const struct in6_addr *x, struct host_addrs *h)
{
	if (addr_special(x))
		return true;
	if (!h->state)
		h->state = getifaddrs(&h->ifs) == 0 ? 1 : -1;
	return h->state < 0 || addr_local(x, h->ifs);
}

static bool port_covers(int ceil, int port)
{
	return ceil == PORT_ANY || ceil == port ||
	       (ceil == PORT_WEB && (port == 80 || port == 443));
}

static bool suffix_of(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);
	return n > s + 1 && name[n - s - 1] == '.' && !strcmp(name + n - s, suffix);
}

/* Whether ceiling c covers entry e.  A ceiling without a port covers an
 * entry without one and the entry's port 443, not its port 80: an entry
 * HOST:80 allows a tunnel there, which the port-less ceiling does not
 * (rule_matches) */
static bool rule_covers(const struct rule *c, const struct rule *e)
{
	bool port = c->port == PORT_ANY || c->port == e->port ||
		    (c->port == PORT_WEB && e->port == 443);
	if (!port)
		return false;
	if (e->ip) {
		struct host_addrs h = { 0 };
		bool guarded = addr_guarded(&e->addr, &h);
		host_addrs_release(&h);
		if (guarded)
			return c->ip && !memcmp(&c->addr, &e->addr, sizeof(c->addr));
	}
	if (c->any)
		return true;
	if (c->ip)
		return e->ip && !memcmp(&c->addr, &e->addr, sizeof(c->addr));
	if (e->ip || e->any)
		return false;
	if (c->wildcard)
		return e->wildcard ? !strcmp(c->host, e->host) || suffix_of(e->host, c->host)
				   : suffix_of(e->host, c->host);
	return !e->wildcard && !strcmp(c->host, e->host);
}

bool al_net_allow_covers(const char *ceiling, const char *entry)
{
	struct rule c, e;
	return parse_hostport(ceiling, &c, true, PORT_WEB, NULL) == 0 &&
	       parse_hostport(entry, &e, true, PORT_WEB, NULL) == 0 && rule_covers(&c, &e);
}

int al_net_allow_within(const char *const *entries, size_t n, const char *const *ceil, size_t nceil,
			struct al_error *err)
{
	for (size_t i = 0; i < n; i++) {
		int r = al_net_allow_check(entries[i], err);
		if (r < 0)
			return r;
		bool ok = false;
		for (size_t j = 0; j < nceil && !ok; j++)
			ok = al_net_allow_covers(ceil[j], entries[i]);
		if (ok)
			continue;
		char q[SHOWN_MAX];
		struct rule e;
		bool port80 =
			parse_hostport(entries[i], &e, true, PORT_WEB, NULL) == 0 && e.port == 80;
		return al_fail(err, AL_EDENIED, 0,
			       "egress to '%s' is not allowed by the policy (its "
			       "egress_allow: airlock admin policy show)%s",
			       shown(entries[i], q),
			       port80 ? "; for plain HTTP to port 80 give the entry without "
					"a port: HOST:80 also allows a tunnel there, which "
					"a policy entry without a port does not"
				      : "");
	}
	return 0;
}

/* ---- the proxy --------------------------------------------------------------------- */

#define HEAD_MAX 8192
#define HELLO_MAX (16384 + 5)
#define IO_TIMEOUT_S 30
/* the request head (and a tunnel's ClientHello) whole within this: a
 * limit per read let a client trickle a byte every 29 s and hold its
 * connection for ever */
#define HEAD_DEADLINE_MS (IO_TIMEOUT_S * 1000)
#define CHUNK (1u << 20)

struct conn_rec {
	const char *kind; /* "connect", "http" */
	char host[256];
	int port;
	char addr[INET6_ADDRSTRLEN];
	const char *verdict; /* "allowed", "refused", "failed" */
	char reason[200];
	uint64_t up, down; /* bytes from the sandbox, to the sandbox */
	int64_t started;   /* wall clock, s */
	uint64_t t0, ms;
};

struct al_net_proxy {
	struct rule *rules;
	char (*allow)[AL_NET_ENTRY_MAX];
	size_t nrules;
	uint64_t max_conns, max_bytes;
	int head_ms; /* HEAD_DEADLINE_MS; tests: al_net__proxy_head_deadline */
	struct al_serve srv;

	pthread_mutex_t mu;
	struct conn_rec **recs;
	size_t nrecs, caprecs;
	uint64_t over_limit;
	uint64_t bytes; /* reserved and moved, all connections (atomic) */
	bool bytes_hit;
};

struct conn {
	struct al_net_proxy *p;
	struct conn_rec *rec;
	int client, up;
	bool answered;     /* a refusal was sent: let the client read it before the close */
	uint64_t deadline; /* monotonic ns: the head and the ClientHello read by then */
	char head[HEAD_MAX + 1];
	size_t nhead, used; /* bytes read; bytes of the head proper */
};

static const struct al_serve_ops proxy_ops;

int al_net__proxy_new(const char *const *allow, size_t nallow, uint64_t max_connections,
		      uint64_t max_bytes, struct al_net_proxy **out, struct al_error *err)
{
	if (nallow > AL_NET_ALLOW_MAX)
		return al_fail(err, AL_ELIMIT, 0, "egress: more than %d allow entries",
			       AL_NET_ALLOW_MAX);
	struct al_net_proxy *p = calloc(1, sizeof(*p));
	if (p) {
		pthread_mutex_init(&p->mu, NULL);
		al_serve__init(&p->srv, &p->mu, &proxy_ops, p, 256 * 1024);
	}
	if (!p || !(p->rules = calloc(nallow + 1, sizeof(*p->rules))) ||
	    !(p->allow = calloc(nallow + 1, sizeof(*p->allow)))) {
		al_net__proxy_free(p);
		return al_fail(err, AL_ENOMEM, ENOMEM, "egress");
	}
	for (size_t i = 0; i < nallow; i++) {
		int r = parse_hostport(allow[i], &p->rules[i], true, PORT_WEB, err);
		if (r < 0) {
			al_net__proxy_free(p);
			return r;
		}
		snprintf(p->allow[i], sizeof(p->allow[i]), "%s", allow[i]);
	}
	p->nrules = nallow;
	p->max_conns = max_connections;
	p->max_bytes = max_bytes;
	p->head_ms = HEAD_DEADLINE_MS;
	*out = p;
	return 0;
}

static void set_reason(struct conn_rec *r, const char *verdict, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_reason(struct conn_rec *r, const char *verdict, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
	r->verdict = verdict;
}

/* The refusal the sandbox's client sees, and the record's. */
static void refuse(struct conn *c, int status, const char *verdict, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void refuse(struct conn *c, int status, const char *verdict, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->rec->reason, sizeof(c->rec->reason), fmt, ap);
	va_end(ap);
	c->rec->verdict = verdict;
	if (status) {
		char msg[512];
		const char *text = status == 403   ? "Forbidden"
				   : status == 400 ? "Bad Request"
				   : status == 411 ? "Length Required"
				   : status == 408 ? "Request Timeout"
				   : status == 431 ? "Request Header Fields Too Large"
				   : status == 504 ? "Gateway Timeout"
						   : "Bad Gateway";
		int n = snprintf(msg, sizeof(msg),
				 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: "
				 "close\r\nContent-Length: %zu\r\n\r\nairlock egress: %s\n",
				 status, text, strlen(c->rec->reason) + 17, c->rec->reason);
		if (n > 0)
			(void)!send(c->client, msg,
				    (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg),
				    MSG_NOSIGNAL);
		c->answered = true;
	}
}

/* t's host as a URL or a Host header writes it: an IPv6 literal in
 * brackets */
static const char *url_host(const struct rule *t, char *buf, size_t n)
{
	if (!t->ip || !strchr(t->host, ':'))
		return t->host;
	snprintf(buf, n, "[%s]", t->host);
	return buf;
}

/* Whether rule r lets through a request to t: a tunnel (CONNECT) or
 * plain HTTP.  An entry without a port is the web's: plain HTTP to 80,
 * TLS to 443; a tunnel to its port 80 would carry any bytes after a
 * ClientHello to a plain-HTTP server, past the Host check. */
static bool rule_matches(const struct rule *r, const struct rule *t, bool tunnel)
{
	if (!port_covers(r->port, t->port) ||
	    (r->port == PORT_WEB && t->port != (tunnel ? 443 : 80)))
		return false;
	if (r->any)
		return true;
	if (r->ip || t->ip)
		return r->ip && t->ip && !memcmp(&r->addr, &t->addr, sizeof(r->addr));
	return r->wildcard ? suffix_of(t->host, r->host) : !strcmp(r->host, t->host);
}

/* an entry names this special address (and port) literally */
static bool addr_named(const struct al_net_proxy *p, const struct in6_addr *a, int port)
{
	for (size_t i = 0; i < p->nrules; i++)
		if (p->rules[i].ip && !memcmp(&p->rules[i].addr, a, sizeof(*a)) &&
		    port_covers(p->rules[i].port, port))
			return true;
	return false;
}

static void addr_text(const struct in6_addr *a, char *out)
{
	if (!memcmp(a->s6_addr, mapped, 12))
		inet_ntop(AF_INET, a->s6_addr + 12, out, INET6_ADDRSTRLEN);
	else
		inet_ntop(AF_INET6, a, out, INET6_ADDRSTRLEN);
}

static int set_timeouts(int fd, int s)
{
	struct timeval tv = { .tv_sec = s };
	return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) |
	       setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* The addresses a connection may go to, in the resolver's order */
struct addrs {
	struct in6_addr a[16];
	size_t n;
};

/* Resolve t (a name, or an address literal) and keep the addresses that
 * may be reached: 0 with them in *out (the first in the record), or a
 * refusal already sent. */
static int resolve(struct conn *c, const struct rule *t, struct addrs *out)
{
	struct al_net_proxy *p = c->p;
	struct in6_addr cand[16];
	size_t n = 0;
	if (t->ip)
		cand[n++] = t->addr;
	else {
		struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
		struct addrinfo *res = NULL;
		int e = getaddrinfo(t->host, NULL, &hints, &res);
		if (e) {
			refuse(c, 502, "failed", "%s does not resolve (%s)", t->host,
			       gai_strerror(e));
			return -1;
		}
		for (struct addrinfo *ai = res; ai && n < 16; ai = ai->ai_next) {
			struct in6_addr a;
			memset(&a, 0, sizeof(a));
			if (ai->ai_family == AF_INET) {
				a.s6_addr[10] = a.s6_addr[11] = 0xff;
				memcpy(a.s6_addr + 12,
				       &((struct sockaddr_in *)(void *)ai->ai_addr)->sin_addr, 4);
			} else if (ai->ai_family == AF_INET6)
				a = ((struct sockaddr_in6 *)(void *)ai->ai_addr)->sin6_addr;
			else
				continue;
			cand[n++] = a;
		}
		freeaddrinfo(res);
	}
	out->n = 0;
	struct host_addrs h = { 0 };
	for (size_t i = 0; i < n; i++)
		if (!addr_guarded(&cand[i], &h) || addr_named(p, &cand[i], t->port))
			out->a[out->n++] = cand[i];
	host_addrs_release(&h);
	if (out->n) {
		addr_text(&out->a[0], c->rec->addr);
		return 0;
	}
	if (!n) {
		refuse(c, 502, "failed", "%s has no address", t->host);
		return -1;
	}
	addr_text(&cand[0], c->rec->addr);
	refuse(c, 403, "refused",
	       "%s resolves to %s, a loopback, private, link-local, this host's own or other "
	       "special address that no allow entry names",
	       t->host, c->rec->addr);
	return -1;
}

static socklen_t sockaddr_of(const struct in6_addr *a, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (!memcmp(a->s6_addr, mapped, 12)) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		memcpy(&s4->sin_addr, a->s6_addr + 12, 4);
		return sizeof(*s4);
	}
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons((uint16_t)port);
	s6->sin6_addr = *a;
	return sizeof(*s6);
}

/* One connect with the proxy's timeout: 0, or -1 with errno */
static int dial_one(struct conn *c, const struct in6_addr *a, int port)
{
	struct al_net_proxy *p = c->p;
	struct sockaddr_storage ss;
	socklen_t sl = sockaddr_of(a, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	pthread_mutex_lock(&p->mu);
	c->up = fd;
	bool stop = p->srv.stopping;
	pthread_mutex_unlock(&p->mu);
	int rc = stop ? -1 : connect(fd, (const struct sockaddr *)&ss, sl);
	if (stop)
		errno = ECANCELED;
	if (rc < 0 && errno == EINPROGRESS) {
		struct pollfd pf = { fd, POLLOUT, 0 };
		int soerr = 0;
		socklen_t el = sizeof(soerr);
		rc = poll(&pf, 1, IO_TIMEOUT_S * 1000);
		if (rc == 0)
			errno = ETIMEDOUT;
		if (rc > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &el) == 0 && soerr)
			errno = soerr;
		rc = rc > 0 && !soerr ? 0 : -1;
	}
	int fl = rc == 0 ? fcntl(fd, F_GETFL) : -1, one = 1;
	if (fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		return 0;
	}
	int e = errno;
	pthread_mutex_lock(&p->mu);
	close(fd);
	c->up = -1;
	pthread_mutex_unlock(&p->mu);
	errno = e;
	return -1;
}

/* Connect to the addresses resolve() kept, in turn, until one answers: 0
 * (the record names it), or -1 with the record saying why (and, when
 * answer, the answer sent). */
static int dial(struct conn *c, const struct rule *t, const struct addrs *to, bool answer)
{
	int e = 0;
	for (size_t i = 0; i < to->n; i++) {
		addr_text(&to->a[i], c->rec->addr);
		if (dial_one(c, &to->a[i], t->port) == 0)
			return 0;
		e = errno;
		if (e == ECANCELED)
			break;
	}
	refuse(c,
	       !answer          ? 0
	       : e == ETIMEDOUT ? 504
				: 502,
	       "failed", "connect %s port %d: %s", c->rec->addr, t->port,
	       e == ECANCELED ? "the run ended" : strerror(e));
	return -1;
}

/* Take up to n bytes of the run's budget (bytes already read, about to be
 * forwarded): how many fit; fewer than n when the budget is spent. */
static size_t take(struct al_net_proxy *p, size_t n)
{
	uint64_t cur = __atomic_load_n(&p->bytes, __ATOMIC_RELAXED);
	for (;;) {
		uint64_t room = cur < p->max_bytes ? p->max_bytes - cur : 0;
		uint64_t k = room < n ? room : n;
		if (__atomic_compare_exchange_n(&p->bytes, &cur, cur + k, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return (size_t)k;
	}
}

/* 0, -1 (the write failed), -2 (the byte limit: nothing was sent) */
static int send_counted(struct conn *c, int fd, const void *buf, size_t n, uint64_t *count)
{
	size_t got = take(c->p, n);
	if (got < n) {
		__atomic_fetch_sub(&c->p->bytes, (uint64_t)got, __ATOMIC_RELAXED);
		return -2;
	}
	if (al_write_full(fd, buf, n) < 0)
		return -1;
	__atomic_fetch_add(count, (uint64_t)n, __ATOMIC_RELAXED);
	return 0;
}

static void byte_limit(struct conn *c)
{
	/* both directions may get here at once: the record under the lock */
	pthread_mutex_lock(&c->p->mu);
	c->p->bytes_hit = true;
	snprintf(c->rec->reason, sizeof(c->rec->reason),
		 "the run's egress byte limit (%llu) was reached",
		 (unsigned long long)c->p->max_bytes);
	pthread_mutex_unlock(&c->p->mu);
	shutdown(c->client, SHUT_RDWR);
	if (c->up >= 0)
		shutdown(c->up, SHUT_RDWR);
}

/* Move bytes from -> to until EOF, an error or the byte limit; then the
 * write side of to is shut (a half-close passes through).  What was read
 * past the limit is not forwarded. */
static void pump(struct conn *c, int from, int to, uint64_t *count)
{
	int pp[2];
	bool use_splice = pipe2(pp, O_CLOEXEC) == 0;
	if (use_splice)
		(void)fcntl(pp[1], F_SETPIPE_SZ, CHUNK);
	char *buf = use_splice ? NULL : malloc(65536);
	for (;;) {
		ssize_t n;
		if (use_splice)
			n = splice(from, NULL, pp[1], NULL, CHUNK, SPLICE_F_MOVE);
		else
			n = buf ? read(from, buf, 65536) : -1;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		size_t fit = take(c->p, (size_t)n);
		ssize_t left = (ssize_t)fit;
		bool ok = true;
		while (left > 0 && ok) {
			ssize_t w =
				use_splice
					? splice(pp[0], NULL, to, NULL, (size_t)left, SPLICE_F_MOVE)
					: write(to, buf + (fit - (size_t)left), (size_t)left);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				ok = false;
			else {
				left -= w;
				__atomic_fetch_add(count, (uint64_t)w, __ATOMIC_RELAXED);
			}
		}
		if (!ok)
			break;
		if (fit < (size_t)n) {
			byte_limit(c);
			break;
		}
	}
	shutdown(to, SHUT_WR);
	if (use_splice) {
		close(pp[0]);
		close(pp[1]);
	}
	free(buf);
}

static void *upload_main(void *arg)
{
	struct conn *c = arg;
	pump(c, c->client, c->up, &c->rec->up);
	return NULL;
}

/* Both directions until both end; the upload in a thread of its own. */
static void relay(struct conn *c)
{
	set_timeouts(c->client, 0); /* from here on a connection may idle */
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	bool two = pthread_create(&t, &attr, upload_main, c) == 0;
	pthread_attr_destroy(&attr);
	if (!two) {
		set_reason(c->rec, "failed", "no thread for the upload: %s", strerror(errno));
		return;
	}
	pump(c, c->up, c->client, &c->rec->down);
	pthread_join(t, NULL);
}

/* recv from the client before the connection's deadline: as recv, or -1
 * with ETIMEDOUT once it has passed */
static ssize_t recv_by(struct conn *c, void *buf, size_t n)
{
	for (;;) {
		uint64_t now = al_now_ns();
		if (now >= c->deadline) {
			errno = ETIMEDOUT;
			return -1;
		}
		struct pollfd pf = { .fd = c->client, .events = POLLIN };
		int r = poll(&pf, 1, (int)((c->deadline - now + 999999) / 1000000));
		if (r < 0 && errno != EINTR)
			return -1;
		if (r <= 0)
			continue;
		ssize_t k = recv(c->client, buf, n, MSG_DONTWAIT);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		return k;
	}
}

/* Read until the head's blank line: 0, or a refusal already sent. */
static int read_head(struct conn *c)
{
	while (c->nhead < HEAD_MAX) {
		ssize_t n = recv_by(c, c->head + c->nhead, HEAD_MAX - c->nhead);
		if (n < 0 && errno == ETIMEDOUT) {
			refuse(c, 408, "refused", "the request head was not whole within %d ms",
			       c->p->head_ms);
			return -1;
		}
		if (n <= 0) {
			refuse(c, 0, "refused", "the connection ended before a request");
			return -1;
		}
		c->nhead += (size_t)n;
		c->head[c->nhead] = 0;
		char *end = memmem(c->head, c->nhead, "\r\n\r\n", 4);
		if (end) {
			c->used = (size_t)(end - c->head) + 4;
			return 0;
		}
	}
	refuse(c, 431, "refused", "request head larger than %d bytes", HEAD_MAX);
	return -1;
}

static bool token_char(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '_';
}

/* The TLS ClientHello's host_name (RFC 6066), "" if it has none: 0, or -1
 * when the bytes are not one ClientHello in one record. */
int al_net__hello_sni(const uint8_t *b, size_t n, char *sni, size_t sn)
{
	sni[0] = 0;
	if (n < 9 || b[0] != 0x16 || b[5] != 0x01)
		return -1;
	size_t rec = (size_t)b[3] << 8 | b[4];
	size_t hs = (size_t)b[6] << 16 | (size_t)b[7] << 8 | b[8];
	if (rec + 5 > n || hs + 4 > rec)
		return -1;
	const uint8_t *p = b + 9, *end = b + 9 + hs;
#define NEED(k)                              \
	do {                                 \
		if ((size_t)(end - p) < (k)) \
			return -1;           \
	} while (0)
	NEED(2 + 32 + 1);
	p += 34;
	size_t l = *p++;
	NEED(l + 2);
	p += l;
	l = (size_t)p[0] << 8 | p[1];
	p += 2;
	NEED(l + 1);
	p += l;
	l = *p++;
	NEED(l);
	p += l;
	if (p == end)
		return 0; /* no extensions */
	NEED(2);
	l = (size_t)p[0] << 8 | p[1];
	p += 2;
	NEED(l);
	end = p + l;
	while (p < end) {
		NEED(4);
		unsigned type = (unsigned)p[0] << 8 | p[1];
		size_t el = (size_t)p[2] << 8 | p[3];
		p += 4;
		NEED(el);
		if (type == 0) {
			const uint8_t *q = p, *qe = p + el;
			if (qe - q < 2)
				return -1;
			size_t ll = (size_t)q[0] << 8 | q[1];
			q += 2;
			if ((size_t)(qe - q) < ll)
				return -1;
			qe = q + ll;
			while (q < qe) {
				if (qe - q < 3)
					return -1;
				unsigned nt = q[0];
				size_t nl = (size_t)q[1] << 8 | q[2];
				q += 3;
				if ((size_t)(qe - q) < nl)
					return -1;
				if (nt == 0) {
					if (sni[0] || !nl || nl >= sn)
						return -1; /* two names, or one out of bounds */
					for (size_t i = 0; i < nl; i++) {
						char ch = (char)q[i];
						if (ch >= 'A' && ch <= 'Z')
							ch = (char)(ch + 32);
						if (!((ch >= 'a' && ch <= 'z') ||
						      (ch >= '0' && ch <= '9') || ch == '-' ||
						      ch == '_' || ch == '.'))
							ch = '?';
						sni[i] = ch;
					}
					sni[nl] = 0;
				}
				q += nl;
			}
		}
		p += el;
	}
#undef NEED
	return 0;
}

static void tunnel_to(struct conn *c, const struct rule *t)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	struct addrs to;
	if (resolve(c, t, &to) < 0)
		return;
	if (al_write_full(c->client, ok, sizeof(ok) - 1) < 0) {
		set_reason(c->rec, "failed", "the sandbox's client left");
		return;
	}
	/* the ClientHello: what followed the head, and more until one record */
	uint8_t *hello = malloc(HELLO_MAX);
	if (!hello) {
		set_reason(c->rec, "failed", "out of memory");
		return;
	}
	size_t n = c->nhead - c->used;
	memcpy(hello, c->head + c->used, n);
	size_t want = 5;
	bool late = false;
	for (;;) {
		if (n >= 5) {
			if (hello[0] != 0x16)
				break;
			want = 5 + ((size_t)hello[3] << 8 | hello[4]);
			if (want > HELLO_MAX)
				break;
		}
		if (n >= want)
			break;
		ssize_t r = recv_by(c, hello + n, want - n);
		if (r <= 0) {
			late = r < 0 && errno == ETIMEDOUT;
			break;
		}
		n += (size_t)r;
	}
	char sni[256];
	if (late)
		set_reason(c->rec, "refused",
			   "the TLS ClientHello was not whole within %d ms of the connection",
			   c->p->head_ms);
	else if (n < 5 || hello[0] != 0x16)
		set_reason(c->rec, "refused",
			   "a tunnel carries TLS only (plain HTTP goes through the proxy as "
			   "http://)");
	else if (n < want || al_net__hello_sni(hello, n, sni, sizeof(sni)) < 0)
		set_reason(c->rec, "refused", "not a TLS ClientHello in one record");
	else if (t->ip && sni[0])
		set_reason(c->rec, "refused", "TLS SNI '%s' in a tunnel to the address %s", sni,
			   t->host);
	else if (!t->ip && strcmp(sni, t->host))
		set_reason(c->rec, "refused", "TLS SNI '%s' is not the name allowed (%s)",
			   sni[0] ? sni : "(none)", t->host);
	else if (dial(c, t, &to, false) == 0) {
		/* nothing has reached the destination before this */
		int r = send_counted(c, c->up, hello, n, &c->rec->up);
		if (r == -2)
			byte_limit(c);
		else if (r < 0)
			set_reason(c->rec, "failed", "send to %s: %s", c->rec->addr,
				   strerror(errno));
		else
			relay(c);
	}
	free(hello);
}

/* name ":" value, the name an RFC 9110 token right before the colon (no
 * "Host :", which some servers take for Host and others skip), the value
 * without control bytes but a tab */
static bool header_ok(const char *line, size_t len)
{
	static const char tchar[] = "!#$%&'*+-.^_`|~";
	size_t i = 0;
	while (i < len && (isalnum((unsigned char)line[i]) || (line[i] && strchr(tchar, line[i]))))
		i++;
	if (i == 0 || i == len || line[i] != ':')
		return false;
	for (i++; i < len; i++)
		if (((unsigned char)line[i] < 0x20 && line[i] != '\t') || line[i] == 0x7f)
			return false;
	return true;
}

static bool header_is(const char *line, size_t len, const char *name)
{
	size_t n = strlen(name);
	return len > n && line[n] == ':' && !strncasecmp(line, name, n);
}

/* One plain HTTP request, absolute-form, forwarded in origin form. */
static void forward_http(struct conn *c, const struct rule *t, const char *method, const char *path,
			 const char *version)
{
	char *out = malloc(HEAD_MAX + 512);
	if (!out) {
		set_reason(c->rec, "failed", "out of memory");
		return;
	}
	size_t o = (size_t)snprintf(out, HEAD_MAX + 512, "%s %s %s\r\n", method, path, version);
	const char *line = strstr(c->head, "\r\n") + 2, *end = c->head + c->used - 2;
	bool host_seen = false;
	long long length = -1;
	const char *bad = NULL;
	int status = 400;
	while (line < end && !bad) {
		const char *eol = strstr(line, "\r\n");
		size_t len = (size_t)(eol - line);
		if (!header_ok(line, len))
			bad = "a malformed header line";
		else if (header_is(line, len, "Transfer-Encoding")) {
			bad = "a request body with Transfer-Encoding (send Content-Length)";
			status = 411;
		} else if (header_is(line, len, "Host")) {
			char v[AL_NET_ENTRY_MAX];
			const char *s = line + 5;
			while (*s == ' ' || *s == '\t')
				s++;
			size_t vl = (size_t)(eol - s);
			while (vl && (s[vl - 1] == ' ' || s[vl - 1] == '\t'))
				vl--;
			struct rule h;
			snprintf(v, sizeof(v), "%.*s", (int)(vl < sizeof(v) ? vl : 0), s);
			if (host_seen || parse_hostport(v, &h, false, 80, NULL) < 0 ||
			    h.ip != t->ip || h.port != t->port ||
			    (h.ip ? memcmp(&h.addr, &t->addr, sizeof(h.addr))
				  : strcmp(h.host, t->host)))
				bad = "a Host header that is not the request's host";
			host_seen = true;
		} else if (header_is(line, len, "Content-Length")) {
			const char *s = line + 15;
			while (*s == ' ')
				s++;
			char *e;
			errno = 0;
			long long v = *s >= '0' && *s <= '9' ? strtoll(s, &e, 10) : -1;
			while (v >= 0 && (*e == ' ' || *e == '\t'))
				e++;
			if (length >= 0 || v < 0 || errno || e != eol)
				bad = "a bad Content-Length";
			length = v;
		}
		bool drop = header_is(line, len, "Connection") ||
			    header_is(line, len, "Keep-Alive") ||
			    header_is(line, len, "Proxy-Connection") ||
			    header_is(line, len, "Proxy-Authorization") ||
			    header_is(line, len, "Upgrade") || header_is(line, len, "TE");
		if (!bad && !drop) {
			memcpy(out + o, line, len + 2);
			o += len + 2;
		}
		line = eol + 2;
	}
	char hb[300];
	const char *hn = url_host(t, hb, sizeof(hb));
	if (!bad && !host_seen)
		o += (size_t)(t->port == 80
				      ? snprintf(out + o, 300, "Host: %s\r\n", hn)
				      : snprintf(out + o, 300, "Host: %s:%d\r\n", hn, t->port));
	if (bad) {
		free(out);
		refuse(c, status, "refused", "%s", bad);
		return;
	}
	memcpy(out + o, "Connection: close\r\n\r\n", 21);
	o += 21;
	struct addrs to;
	if (resolve(c, t, &to) < 0 || dial(c, t, &to, true) < 0) {
		free(out);
		return;
	}
	int r = send_counted(c, c->up, out, o, &c->rec->up);
	free(out);
	/* the body: what came with the head, then the rest from the client */
	uint64_t left = length > 0 ? (uint64_t)length : 0;
	size_t extra = c->nhead - c->used;
	if (r == 0 && left) {
		size_t k = extra < left ? extra : (size_t)left;
		r = send_counted(c, c->up, c->head + c->used, k, &c->rec->up);
		left -= k;
	}
	char buf[16384];
	while (r == 0 && left) {
		ssize_t n = recv(c->client, buf, left < sizeof(buf) ? left : sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = -1;
			break;
		}
		r = send_counted(c, c->up, buf, (size_t)n, &c->rec->up);
		left -= (uint64_t)n;
	}
	if (r == -2) {
		byte_limit(c);
		return;
	}
	if (r < 0) {
		set_reason(c->rec, "failed", "the request did not reach %s", c->rec->addr);
		return;
	}
	/* one request: what the client sends after it is not forwarded */
	set_timeouts(c->client, 0);
	pump(c, c->up, c->client, &c->rec->down);
}

static void serve(struct conn *c)
{
	struct conn_rec *rec = c->rec;
	c->deadline = al_now_ns() + (uint64_t)c->p->head_ms * 1000000u;
	if (set_timeouts(c->client, IO_TIMEOUT_S) < 0 || read_head(c) < 0)
		return;
	if (memchr(c->head, 0, c->used)) {
		refuse(c, 400, "refused", "a NUL byte in the request head");
		return;
	}
	/* request line: METHOD SP TARGET SP HTTP/1.x */
	char *eol = strstr(c->head, "\r\n");
	*eol = 0;
	char *sp1 = strchr(c->head, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	char method[16], target[2048], version[16];
	if (!sp1 || !sp2 || sp1 - c->head >= (long)sizeof(method) || sp1 == c->head ||
	    sp2 - sp1 - 1 >= (long)sizeof(target) || strchr(sp2 + 1, ' ') ||
	    (strcmp(sp2 + 1, "HTTP/1.1") && strcmp(sp2 + 1, "HTTP/1.0"))) {
		*eol = '\r';
		refuse(c, 400, "refused", "not an HTTP/1.x proxy request");
		return;
	}
	snprintf(method, sizeof(method), "%.*s", (int)(sp1 - c->head), c->head);
	snprintf(target, sizeof(target), "%.*s", (int)(sp2 - sp1 - 1), sp1 + 1);
	snprintf(version, sizeof(version), "%s", sp2 + 1);
	*eol = '\r';
	for (const char *m = method; *m; m++)
		if (!token_char(*m)) {
			refuse(c, 400, "refused", "not an HTTP/1.x proxy request");
			return;
		}
	for (const char *q = target; *q; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f) {
			refuse(c, 400, "refused", "a request target with control characters");
			return;
		}
	struct rule t;
	const char *path = "/";
	char authority[AL_NET_ENTRY_MAX];
	if (!strcmp(method, "CONNECT")) {
		rec->kind = "connect";
		snprintf(authority, sizeof(authority), "%.*s",
			 strlen(target) < sizeof(authority) ? (int)strlen(target) : 0, target);
		if (parse_hostport(authority, &t, false, -2, NULL) < 0 || t.port < 0) {
			refuse(c, 400, "refused", "CONNECT takes host:port");
			return;
		}
	} else {
		rec->kind = "http";
		if (strncasecmp(target, "http://", 7)) {
			refuse(c, 400, "refused",
			       "a proxy request names http://host/...; https goes through CONNECT");
			return;
		}
		const char *a = target + 7;
		size_t al = strcspn(a, "/?#");
		path = a[al] == '/' ? a + al : a[al] ? NULL : "/";
		snprintf(authority, sizeof(authority), "%.*s", al < sizeof(authority) ? (int)al : 0,
			 a);
		if (!path || memchr(a, '@', al) ||
		    parse_hostport(authority, &t, false, 80, NULL) < 0) {
			refuse(c, 400, "refused", "a bad request target");
			return;
		}
	}
	snprintf(rec->host, sizeof(rec->host), "%s", t.host);
	rec->port = t.port;
	bool tunnel = !strcmp(method, "CONNECT"), allowed = false, other = false;
	for (size_t i = 0; i < c->p->nrules && !allowed; i++) {
		allowed = rule_matches(&c->p->rules[i], &t, tunnel);
		other = other || rule_matches(&c->p->rules[i], &t, !tunnel);
	}
	if (!allowed) {
		char hb[300];
		if (other)
			refuse(c, 403, "refused",
			       "%s port %d: an entry without a port allows %s; name the port to "
			       "allow this (%s:%d)",
			       t.host, t.port,
			       tunnel ? "plain HTTP (http://) there, not a tunnel"
				      : "a TLS tunnel (CONNECT) there, not plain HTTP",
			       url_host(&t, hb, sizeof(hb)), t.port);
		else
			refuse(c, 403, "refused", "%s port %d is not in the run's allowlist",
			       t.host, t.port);
		return;
	}
	rec->verdict = "allowed";
	if (tunnel)
		tunnel_to(c, &t);
	else
		forward_http(c, &t, method, path, version);
}

/* Under the lock: a connection from the sandbox, within the run's cap. */
static void *conn_admit(void *owner, int fd)
{
	struct al_net_proxy *p = owner;
	if (p->nrecs >= p->max_conns) {
		p->over_limit++;
		return NULL;
	}
	struct conn *c = calloc(1, sizeof(*c));
	struct conn_rec *r = calloc(1, sizeof(*r));
	if (p->nrecs == p->caprecs) {
		size_t cap = p->caprecs ? 2 * p->caprecs : 16;
		struct conn_rec **v = realloc(p->recs, cap * sizeof(*v));
		if (v) {
			p->recs = v;
			p->caprecs = cap;
		}
	}
	if (!c || !r || p->nrecs == p->caprecs) {
		free(c);
		free(r);
		return NULL;
	}
	p->recs[p->nrecs++] = r;
	r->kind = "?";
	r->verdict = "refused";
	r->t0 = al_now_ns();
	r->started = al_wall_s();
	r->port = 0;
	c->p = p;
	c->rec = r;
	c->client = fd;
	c->up = -1;
	return c;
}

static void conn_serve(void *arg)
{
	struct conn *c = arg;
	serve(c);
	if (c->answered) {
		/* closing with unread input would reset the connection and
		 * could lose the answer: end ours, read a little of theirs */
		char sink[4096];
		size_t drained = 0;
		ssize_t n;
		shutdown(c->client, SHUT_WR);
		/* for a second in all, however the client trickles */
		c->deadline = al_now_ns() + 1000000000u;
		while (drained < 65536 && (n = recv_by(c, sink, sizeof(sink))) > 0)
			drained += (size_t)n;
	}
}

static void conn_done(void *arg, bool ran)
{
	struct conn *c = arg;
	if (!ran)
		snprintf(c->rec->reason, sizeof(c->rec->reason), "no thread for the connection");
	if (c->up >= 0)
		close(c->up);
	c->up = c->client = -1;
	c->rec->ms = (al_now_ns() - c->rec->t0) / 1000000;
	free(c);
}

static void conn_end(void *arg)
{
	struct conn *c = arg;
	if (c->up >= 0)
		shutdown(c->up, SHUT_RDWR);
}

static const struct al_serve_ops proxy_ops = {
	.admit = conn_admit,
	.serve = conn_serve,
	.done = conn_done,
	.end = conn_end,
};

int al_net__proxy_start(struct al_net_proxy *p, int listen_fd, struct al_error *err)
{
	if (al_serve__start(&p->srv, listen_fd) < 0)
		return al_fail(err, AL_EIO, errno, "egress: the proxy's thread");
	return 0;
}

int al_net__proxy_admit(struct al_net_proxy *p, int fd)
{
	return al_serve__admit(&p->srv, fd);
}

void al_net__proxy_stop(struct al_net_proxy *p)
{
	if (p)
		al_serve__stop(&p->srv);
}

json_t *al_net__proxy_json(struct al_net_proxy *p)
{
	json_t *allow = json_array(), *conns = json_array();
	for (size_t i = 0; i < p->nrules; i++)
		json_array_append_new(allow, json_string(p->allow[i]));
	pthread_mutex_lock(&p->mu);
	uint64_t moved = 0;
	for (size_t i = 0; i < p->nrecs; i++) {
		const struct conn_rec *r = p->recs[i];
		moved += r->up + r->down;
		json_t *o = json_pack("{s:s,s:s,s:i,s:s,s:s,s:s,s:I,s:I,s:I,s:I}", "kind", r->kind,
				      "host", r->host, "port", r->port, "address", r->addr,
				      "verdict", r->verdict, "reason", r->reason, "bytes_up",
				      (json_int_t)r->up, "bytes_down", (json_int_t)r->down, "ms",
				      (json_int_t)r->ms, "started", (json_int_t)r->started);
		json_array_append_new(conns, o);
	}
	json_t *out = json_pack("{s:o,s:o,s:I,s:I,s:b,s:{s:I,s:I}}", "allow", allow, "connections",
				conns, "connections_over_limit", (json_int_t)p->over_limit, "bytes",
				(json_int_t)moved, "byte_limit_hit", p->bytes_hit, "limits",
				"connections", (json_int_t)p->max_conns, "bytes",
				(json_int_t)p->max_bytes);
	pthread_mutex_unlock(&p->mu);
	return out;
}

void al_net__proxy_head_deadline(struct al_net_proxy *p, int ms)
{
	p->head_ms = ms;
}

void al_net__proxy_free(struct al_net_proxy *p)
{
	if (!p)
		return;
	al_net__proxy_stop(p);
	for (size_t i = 0; i < p->nrecs; i++)
		free(p->recs[i]);
	free(p->recs);
	free(p->rules);
	free(p->allow);
	al_serve__release(&p->srv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
