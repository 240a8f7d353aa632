/* net: allow entries (what parses, what covers what, special addresses
 * covered only by themselves) and the proxy's reading of hostile
 * ClientHellos, on loopback: a tunnel forwards only a well-formed
 * ClientHello in one record whose SNI is the allowed name.  And the
 * hand-over of the proxy's listening socket from the sandbox's setup
 * (al_fd_recv, al_fd_is_listener): a hostile sender's pipe, FIFO, Unix or
 * UDP socket, connected socket, extra fds, truncated control message or
 * silence is refused, and nothing it sent stays open. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "airlock/net.h"
#include "net_private.h"
#include "util.h"

static void test_allow_check(void **state)
{
	(void)state;
	static const char *const good[] = {
		"example.com",   "EXAMPLE.com:443", "*.example.com", "*",
		"*:*",           "10.0.0.1",        "10.0.0.1:8080", "[::1]:80",
		"[2001:db8::1]", "a_b.example:1",   "example.com.",  "*.com:*",
	};
	static const char *const bad[] = {
		"",
		"a b",
		"example.com:0",
		"example.com:65536",
		"example.com:x",
		"ex\x1b[31m.com",
		"*.",
		"a..b",
		"[::1",
		"[zz::1]:80",
		"127.1",
		"a-.example",
		".example",
		"-:80",
		"a/b",
		"http://a",
		"a:80:80",
		"*example.com",
	};
	struct al_error err = { 0 };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(al_net_allow_check(good[i], &err), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.msg[0] = 0;
		assert_int_equal(al_net_allow_check(bad[i], &err), AL_EINVAL);
		assert_true(err.msg[0]);
		assert_null(strchr(err.msg, '\x1b') ? err.msg : NULL);
	}
	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	assert_int_equal(al_net_allow_check(longname, &err), AL_EINVAL);
}

static void test_covers(void **state)
{
	(void)state;
	/* ceiling, entry, covered */
	static const struct {
		const char *c, *e;
		bool ok;
	} cases[] = {
		{ "example.com", "example.com", true },
		{ "example.com", "example.com:443", true },
		{ "example.com", "example.com:80", false }, /* a tunnel to 80: named */
		{ "example.com:80", "example.com:80", true },
		{ "*", "example.com:80", false },
		{ "*.example.com", "api.example.com:80", false },
		{ "example.com", "example.com:8080", false },
		{ "example.com", "example.com:*", false },
		{ "example.com:*", "example.com:8080", true },
		{ "example.com:443", "example.com", false },
		{ "example.com", "api.example.com", false },
		{ "*.example.com", "api.example.com", true },
		{ "*.example.com", "a.b.example.com", true },
		{ "*.example.com", "example.com", false },
		{ "*.example.com", "*.api.example.com", true },
		{ "*.example.com", "*.example.com", true },
		{ "*.api.example.com", "*.example.com", false },
		{ "*.example.com", "evilexample.com", false },
		{ "*", "anything.test", true },
		{ "*", "*.test", true },
		{ "*", "8.8.8.8", true },
		/* special addresses: only an entry that is the address */
		{ "*", "127.0.0.1", false },
		{ "*:*", "10.1.2.3:22", false },
		{ "*", "169.254.169.254", false },
		{ "*", "[::1]", false },
		{ "*", "[::ffff:127.0.0.1]", false },
		{ "*", "[fd00:ec2::254]", false },
		{ "*", "[::ffff:0:169.254.169.254]", false }, /* IPv4-translated */
		{ "*", "[::ffff:0:8.8.8.8]", false },
		{ "*", "192.88.99.1", false },
		{ "*", "[2001:10::1]", false },
		{ "*", "[2001:20::1]", false },
		{ "*", "[3fff::1]", false },
		{ "*", "[5f00::1]", false },
		{ "*", "[2a00:1450::1]", true },
		{ "127.0.0.1", "127.0.0.1", true },
		{ "127.0.0.1:*", "127.0.0.1:5432", true },
		{ "127.0.0.1", "127.0.0.1:5432", false },
		{ "127.0.0.1", "[::ffff:127.0.0.1]", true },
		{ "10.0.0.1", "10.0.0.2", false },
		{ "8.8.8.8", "example.com", false },
		{ "example.com", "93.184.216.34", false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (al_net_allow_covers(cases[i].c, cases[i].e) != cases[i].ok)
			fail_msg("covers(%s, %s) should be %d", cases[i].c, cases[i].e,
				 cases[i].ok);
	}
	const char *ceil[] = { "*.example.com", "10.0.0.1" };
	const char *ok[] = { "a.example.com", "10.0.0.1" }, *no[] = { "a.example.com", "10.0.0.2" };
	struct al_error err = { 0 };
	assert_int_equal(al_net_allow_within(ok, 2, ceil, 2, &err), 0);
	assert_int_equal(al_net_allow_within(no, 2, ceil, 2, &err), AL_EDENIED);
	assert_non_null(strstr(err.msg, "10.0.0.2"));
	assert_int_equal(al_net_allow_within(ok, 1, ceil, 0, &err), AL_EDENIED);
}

/* An address of this host's own interfaces is as special as loopback: the
 * proxy would reach it over lo, past whatever guards the host's services
 * from outside.  In a network namespace of our own, 11.22.33.44 on lo. */
static void test_host_addresses_special(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (unshare(geteuid() ? CLONE_NEWUSER | CLONE_NEWNET : CLONE_NEWNET) < 0 ||
		    system("ip addr add 11.22.33.44/32 dev lo && ip -6 addr add 2a00:1450::44/128 "
			   "dev lo"
			   " && ip link set lo up") != 0)
			_exit(2);
		_exit(al_net_allow_covers("*", "11.22.33.44")              ? 3
		      : al_net_allow_covers("*:*", "[2a00:1450::44]:22")   ? 4
		      : !al_net_allow_covers("*", "11.22.33.45")           ? 5
		      : !al_net_allow_covers("11.22.33.44", "11.22.33.44") ? 6
									   : 0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- the proxy on loopback ------------------------------------------------------- */

static int dial(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr = { htonl(INADDR_LOOPBACK) } };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static int listen_at(int family, const char *addr, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		inet_pton(AF_INET, addr, &in->sin_addr);
		sl = sizeof(*in);
	} else {
		struct sockaddr_in6 *in = (struct sockaddr_in6 *)&ss;
		in->sin6_family = AF_INET6;
		in->sin6_port = htons(port);
		inet_pton(AF_INET6, addr, &in->sin6_addr);
		sl = sizeof(*in);
	}
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
			bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 64) < 0)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* A plain request sent through the proxy: the head the upstream got
 * (into got), or what the proxy answered when nothing went up. */
static void plain(uint16_t proxy, int up, const char *req, char *got, size_t max)
{
	int c = dial(proxy);
	struct pollfd pf[2] = { { up, POLLIN, 0 }, { c, POLLIN, 0 } };
	ssize_t k = -1;
	bool sent = send(c, req, strlen(req), 0) == (ssize_t)strlen(req);
	if (sent && poll(pf, 2, 5000) > 0) {
		int u = pf[0].revents ? accept(up, NULL, NULL) : -1;
		k = recv(u >= 0 ? u : c, got, max - 1, 0);
		if (u >= 0)
			close(u);
	}
	got[k > 0 ? k : 0] = 0;
	close(c);
}

static int listener(uint16_t *port)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int fd = listen_at(AF_INET, "127.0.0.1", 0);
	assert_true(fd >= 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* A ClientHello record: SNI name (NULL: none), then the bytes as given */
static size_t hello(uint8_t *b, const char *sni)
{
	uint8_t ext[300];
	size_t el = 0;
	if (sni) {
		size_t n = strlen(sni);
		uint8_t e[] = { 0, 0, 0, (uint8_t)(n + 5), 0, (uint8_t)(n + 3), 0, 0, (uint8_t)n };
		memcpy(ext, e, sizeof(e));
		memcpy(ext + sizeof(e), sni, n);
		el = sizeof(e) + n;
	}
	uint8_t body[512];
	size_t k = 0;
	body[k++] = 3;
	body[k++] = 3;
	memset(body + k, 7, 32);
	k += 32;
	body[k++] = 0; /* session id */
	body[k++] = 0; /* cipher suites: 2 bytes */
	body[k++] = 2;
	body[k++] = 0x13;
	body[k++] = 0x01;
	body[k++] = 1; /* compression */
	body[k++] = 0;
	body[k++] = (uint8_t)(el >> 8);
	body[k++] = (uint8_t)el;
	memcpy(body + k, ext, el);
	k += el;
	size_t hs = k + 4;
	b[0] = 0x16;
	b[1] = 3;
	b[2] = 1;
	b[3] = (uint8_t)(hs >> 8);
	b[4] = (uint8_t)hs;
	b[5] = 1;
	b[6] = 0;
	b[7] = (uint8_t)(k >> 8);
	b[8] = (uint8_t)k;
	memcpy(b + 9, body, k);
	return 9 + k;
}

/* CONNECT to target through the proxy, send bytes, and read what comes
 * back until the proxy closes: returns the bytes the upstream got */
static size_t attempt(uint16_t proxy, int up_listen, const char *target, const void *bytes,
		      size_t n, char *got, size_t gotmax)
{
	int c = dial(proxy);
	char req[300], buf[4096];
	int rl = snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target,
			  target);
	assert_int_equal(send(c, req, (size_t)rl, 0), rl);
	ssize_t r = recv(c, buf, sizeof(buf), 0);
	assert_true(r > 0);
	size_t upn = 0;
	if (!strncmp(buf, "HTTP/1.1 200", 12)) {
		assert_int_equal(send(c, bytes, n, MSG_NOSIGNAL), (ssize_t)n);
		shutdown(c, SHUT_WR);
		/* either the proxy connects upstream, or it closes on us */
		struct pollfd pf[2] = { { up_listen, POLLIN, 0 }, { c, POLLIN, 0 } };
		if (poll(pf, 2, 10000) > 0 && pf[0].revents) {
			int u = accept(up_listen, NULL, NULL);
			ssize_t k;
			while (upn < gotmax && (k = recv(u, got + upn, gotmax - upn, 0)) > 0)
				upn += (size_t)k;
			close(u);
		}
	}
	while (recv(c, buf, sizeof(buf), 0) > 0)
		;
	close(c);
	return upn;
}

static void test_proxy_hello(void **state)
{
	(void)state;
	uint16_t pport, uport;
	int pl = listener(&pport), ul = listener(&uport);
	char entry[64], target[64];
	snprintf(entry, sizeof(entry), "127.0.0.1:%u", uport);
	snprintf(target, sizeof(target), "127.0.0.1:%u", uport);
	const char *allow[] = { entry };
	struct al_net_proxy *p = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_net__proxy_new(allow, 1, 64, 1 << 20, &p, &err), 0);
	assert_int_equal(al_net__proxy_start(p, pl, &err), 0);

	uint8_t h[600], bad[600];
	char got[2048];
	size_t n = hello(h, NULL);
	/* no SNI to an address: forwarded, byte for byte */
	assert_int_equal(attempt(pport, ul, target, h, n, got, sizeof(got)), n);
	assert_memory_equal(got, h, n);
	/* an SNI in a tunnel to an address: refused, nothing forwarded */
	size_t m = hello(bad, "evil.example");
	assert_int_equal(attempt(pport, ul, target, bad, m, got, sizeof(got)), 0);
	/* lengths that lie, each: nothing forwarded, no crash */
	for (size_t cut = 1; cut < n; cut += 3) {
		memcpy(bad, h, n);
		assert_int_equal(attempt(pport, ul, target, bad, cut, got, sizeof(got)), 0);
	}
	static const size_t offs[] = { 3, 4, 6, 7, 8, 43, 44, 48 };
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		memcpy(bad, h, n);
		bad[offs[i]] = 0xff;
		(void)attempt(pport, ul, target, bad, n, got, sizeof(got));
	}
	/* not TLS at all */
	assert_int_equal(attempt(pport, ul, target, "GET / HTTP/1.1\r\n\r\n", 18, got, sizeof(got)),
			 0);
	/* another port than the allowed one: refused before any tunnel */
	char other[64];
	snprintf(other, sizeof(other), "127.0.0.1:%u", (unsigned)(uport == 65535 ? 1 : uport + 1));
	assert_int_equal(attempt(pport, ul, other, h, n, got, sizeof(got)), 0);

	al_net__proxy_stop(p);
	json_t *j = al_net__proxy_json(p);
	json_t *conns = json_object_get(j, "connections");
	size_t i;
	json_t *c;
	size_t allowed = 0;
	json_array_foreach(conns, i, c) {
		const char *v = json_string_value(json_object_get(c, "verdict"));
		if (!strcmp(v, "allowed") && !*json_string_value(json_object_get(c, "reason")))
			allowed++;
	}
	assert_int_equal(allowed, 1); /* the one good ClientHello */
	assert_int_equal(json_array_size(conns), 2 + (n + 1) / 3 + 8 + 2);
	json_decref(j);
	al_net__proxy_free(p);
	close(ul);
}

/* After the proxy's answer, a client that goes on sending a byte every
 * 100 ms: how long (ms) until the proxy closed its connection whole (its
 * end of the answer alone is not that: the bytes must stop going), or -1
 * not within 5 s */
static long closed_after(int c)
{
	uint64_t t0 = al_now_ns();
	char buf[512];
	while (al_now_ns() - t0 < 5000000000ull) {
		struct timespec ts = { 0, 100000000 };
		nanosleep(&ts, NULL);
		ssize_t k = recv(c, buf, sizeof(buf), MSG_DONTWAIT);
		if ((k < 0 && errno != EAGAIN) || send(c, "a", 1, MSG_NOSIGNAL) != 1)
			return (long)((al_now_ns() - t0) / 1000000);
	}
	return -1;
}

/* A client that trickles its bytes, each well within the 30 s limit of a
 * read: what the proxy answers and after how long (ms), or "" and -1 if
 * it never did while all of bytes went (a byte every 40 ms); *closed:
 * closed_after the answer. */
static long trickle(uint16_t proxy, const char *bytes, char *answer, size_t amax, long *closed)
{
	int c = dial(proxy);
	uint64_t t0 = al_now_ns();
	answer[0] = 0;
	*closed = -1;
	for (size_t i = 0; bytes[i]; i++) {
		struct pollfd pf = { c, POLLIN, 0 };
		if (poll(&pf, 1, 40) > 0) {
			long ms = (long)((al_now_ns() - t0) / 1000000);
			ssize_t k = recv(c, answer, amax - 1, 0);
			answer[k > 0 ? k : 0] = 0;
			*closed = closed_after(c);
			close(c);
			return ms;
		}
		if (send(c, bytes + i, 1, MSG_NOSIGNAL) != 1)
			break;
	}
	close(c);
	return -1;
}

/* The request head, and a tunnel's ClientHello, must be whole within the
 * deadline of the connection, however steadily a client trickles them;
 * a client that is quick enough is served. */
static void test_head_deadline(void **state)
{
	(void)state;
	uint16_t pport, uport;
	int pl = listener(&pport), ul = listener(&uport);
	char entry[64];
	snprintf(entry, sizeof(entry), "127.0.0.1:%u", uport);
	const char *allow[] = { entry };
	struct al_net_proxy *p = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_net__proxy_new(allow, 1, 64, 1 << 20, &p, &err), 0);
	al_net__proxy_head_deadline(p, 600);
	assert_int_equal(al_net__proxy_start(p, pl, &err), 0);

	/* a head of 75 bytes at 40 ms each (3 s): answered 408 at 0.6 s */
	char head[256], answer[512];
	snprintf(head, sizeof(head), "GET http://%s/ HTTP/1.1\r\nX-Slow: %s", entry,
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	long closed, ms = trickle(pport, head, answer, sizeof(answer), &closed);
	assert_true(ms >= 500 && ms < 2500);
	assert_non_null(strstr(answer, "HTTP/1.1 408 Request Timeout"));
	assert_non_null(strstr(answer, "not whole within 600 ms"));
	/* and closed within its second of draining, however the client goes on */
	assert_true(closed >= 0 && closed < 2500);

	/* a tunnel: the head at once, then a ClientHello trickled */
	int c = dial(pport);
	char req[200], buf[512];
	int rl =
		snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", entry, entry);
	assert_int_equal(send(c, req, (size_t)rl, 0), rl);
	assert_true(recv(c, buf, sizeof(buf), 0) > 0);
	uint8_t h[600];
	size_t n = hello(h, NULL);
	uint64_t t0 = al_now_ns();
	size_t sent = 0;
	struct pollfd pf = { c, POLLIN, 0 };
	while (sent < n && poll(&pf, 1, 40) == 0 && send(c, h + sent, 1, MSG_NOSIGNAL) == 1)
		sent++;
	assert_true(sent < n); /* closed before the whole ClientHello went */
	ms = (long)((al_now_ns() - t0) / 1000000);
	assert_true(ms < 2500);
	while (recv(c, buf, sizeof(buf), 0) > 0)
		;
	close(c);
	pf = (struct pollfd){ ul, POLLIN, 0 };
	assert_int_equal(poll(&pf, 1, 0), 0); /* nothing went upstream */

	/* in time: the same head at once is served (a plain request goes up) */
	snprintf(req, sizeof(req), "GET http://%s/x HTTP/1.1\r\nHost: %s\r\n\r\n", entry, entry);
	plain(pport, ul, req, buf, sizeof(buf));
	assert_non_null(strstr(buf, "GET /x HTTP/1.1"));

	al_net__proxy_stop(p);
	json_t *j = al_net__proxy_json(p);
	json_t *conns = json_object_get(j, "connections");
	assert_int_equal(json_array_size(conns), 3);
	const char *r1 = json_string_value(json_object_get(json_array_get(conns, 0), "reason"));
	const char *r2 = json_string_value(json_object_get(json_array_get(conns, 1), "reason"));
	assert_non_null(strstr(r1, "request head was not whole within 600 ms"));
	assert_non_null(strstr(r2, "ClientHello was not whole within 600 ms"));
	json_decref(j);
	al_net__proxy_free(p);
	close(ul);
}

/* In a network namespace of its own (ports 80 and 443 on its loopback):
 * 0, or the number of the check that failed. */
static int web_ports(void)
{
	if (unshare(geteuid() ? CLONE_NEWUSER | CLONE_NEWNET : CLONE_NEWNET) < 0 ||
	    system("ip link set lo up") != 0)
		return 100;
	int l80 = listen_at(AF_INET, "127.0.0.1", 80), l443 = listen_at(AF_INET, "127.0.0.1", 443),
	    l6 = listen_at(AF_INET6, "::1", 8080);
	uint16_t pport;
	int pl = listener(&pport);
	if (l80 < 0 || l443 < 0 || l6 < 0)
		return 101;
	const char *allow[] = { "127.0.0.1", "[::1]:8080" };
	struct al_net_proxy *p = NULL;
	struct al_error err = { 0 };
	if (al_net__proxy_new(allow, 2, 64, 1 << 20, &p, &err) < 0 ||
	    al_net__proxy_start(p, pl, &err) < 0)
		return 102;
	uint8_t h[600];
	char got[2048];
	size_t n = hello(h, NULL);
	/* an entry without a port: a tunnel to 443, not to 80 (a ClientHello
	 * and then anything would reach the plain-HTTP server there) */
	if (attempt(pport, l443, "127.0.0.1:443", h, n, got, sizeof(got)) != n)
		return 1;
	if (attempt(pport, l80, "127.0.0.1:80", h, n, got, sizeof(got)) != 0)
		return 2;
	/* and plain HTTP to 80, not to 443 */
	plain(pport, l80, "GET http://127.0.0.1/x HTTP/1.1\r\n\r\n", got, sizeof(got));
	if (!strstr(got, "GET /x HTTP/1.1\r\n") || !strstr(got, "Host: 127.0.0.1\r\n"))
		return 3;
	plain(pport, l443, "GET http://127.0.0.1:443/x HTTP/1.1\r\n\r\n", got, sizeof(got));
	if (!strstr(got, "HTTP/1.1 403") || !strstr(got, "127.0.0.1:443"))
		return 4;
	/* an IPv6 literal: its Host header in brackets; a Host of the same
	 * address written otherwise is the same host */
	plain(pport, l6, "GET http://[::1]:8080/v6 HTTP/1.1\r\n\r\n", got, sizeof(got));
	if (!strstr(got, "GET /v6 HTTP/1.1\r\n") || !strstr(got, "Host: [::1]:8080\r\n"))
		return 5;
	plain(pport, l6, "GET http://[::1]:8080/v6 HTTP/1.1\r\nHost: [0:0::1]:8080\r\n\r\n", got,
	      sizeof(got));
	if (!strstr(got, "GET /v6 HTTP/1.1\r\n"))
		return 6;
	plain(pport, l6, "GET http://[::1]:8080/v6 HTTP/1.1\r\nHost: [::2]:8080\r\n\r\n", got,
	      sizeof(got));
	if (!strstr(got, "HTTP/1.1 400"))
		return 7;
	al_net__proxy_stop(p);
	json_t *j = al_net__proxy_json(p);
	json_t *conns = json_object_get(j, "connections");
	const char *r2 = json_string_value(json_object_get(json_array_get(conns, 1), "reason"));
	const char *r4 = json_string_value(json_object_get(json_array_get(conns, 3), "reason"));
	int bad = json_array_size(conns) != 7                                                ? 8
		  : !strstr(r2, "an entry without a port allows plain HTTP (http://) there") ? 9
		  : !strstr(r2, "(127.0.0.1:80)")                                            ? 10
		  : !strstr(r4, "allows a TLS tunnel (CONNECT) there")                       ? 11
											     : 0;
	json_decref(j);
	al_net__proxy_free(p);
	if (bad)
		return bad;
	/* the port named: a tunnel to 80 is what the entry says */
	const char *allow80[] = { "127.0.0.1:80" };
	pl = listener(&pport);
	if (al_net__proxy_new(allow80, 1, 64, 1 << 20, &p, &err) < 0 ||
	    al_net__proxy_start(p, pl, &err) < 0)
		return 12;
	bad = attempt(pport, l80, "127.0.0.1:80", h, n, got, sizeof(got)) != n ? 13 : 0;
	al_net__proxy_stop(p);
	al_net__proxy_free(p);
	return bad;
}

/* An entry without a port is the web's: plain HTTP to 80, a TLS tunnel
 * to 443; a Host header names an IPv6 literal in brackets. */
static void test_web_ports(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(web_ports());
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- the listening socket's hand-over ---------------------------------------------- */

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* one byte with nfds fds, in ncmsg control messages (the fds split evenly) */
static void send_fds(int sock, const int *fds, int nfds, int ncmsg)
{
	char byte = 'x';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	char buf[CMSG_SPACE(32 * sizeof(int)) * 2];
	memset(buf, 0, sizeof(buf));
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds) {
		int per = nfds / ncmsg;
		msg.msg_control = buf;
		msg.msg_controllen = (size_t)ncmsg * CMSG_SPACE((size_t)per * sizeof(int));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		for (int i = 0; i < ncmsg; i++, cm = CMSG_NXTHDR(&msg, cm)) {
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN((size_t)per * sizeof(int));
			memcpy(CMSG_DATA(cm), fds + i * per, (size_t)per * sizeof(int));
		}
	}
	assert_int_equal(sendmsg(sock, &msg, MSG_NOSIGNAL), 1);
}

static int tcp_listener(struct sockaddr_in *sa)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	socklen_t sl = sizeof(*sa);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)sa, sizeof(*sa)), 0);
	assert_int_equal(listen(l, 4), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)sa, &sl), 0);
	return l;
}

/* What the receiver makes of one fd sent alone: the errno of the check,
 * 0 if it is accepted. */
static int handed(int fd)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	send_fds(sv[1], &fd, 1, 1);
	int got = al_fd_recv(sv[0], 1000);
	assert_true(got >= 0);
	assert_true(fcntl(got, F_GETFD) & FD_CLOEXEC);
	errno = 0;
	int r = al_fd_is_listener(got, AF_INET) < 0 ? errno : 0;
	close(got);
	close(sv[0]);
	close(sv[1]);
	return r;
}

static void test_fd_handover(void **state)
{
	(void)state;
	struct sockaddr_in sa;
	int l = tcp_listener(&sa);
	assert_int_equal(handed(l), 0); /* the one thing accepted */

	int pp[2];
	assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
	assert_int_equal(handed(pp[0]), ENOTSOCK);
	char fifo[] = "/tmp/al-test-fifo-XXXXXX";
	int tf = mkstemp(fifo);
	assert_true(tf >= 0);
	assert_int_equal(handed(tf), ENOTSOCK); /* a file */
	close(tf);
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	int ff = open(fifo, O_RDWR | O_CLOEXEC);
	assert_true(ff >= 0);
	assert_int_equal(handed(ff), ENOTSOCK);
	close(ff);
	unlink(fifo);

	int ul = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un su = { .sun_family = AF_UNIX };
	snprintf(su.sun_path + 1, sizeof(su.sun_path) - 1, "al-test-%d", (int)getpid());
	assert_int_equal(bind(ul, (struct sockaddr *)&su, sizeof(su)), 0);
	assert_int_equal(listen(ul, 1), 0);
	assert_int_equal(handed(ul), EPROTOTYPE); /* a listening Unix socket */
	close(ul);
	int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_int_equal(handed(udp), EPROTOTYPE);
	close(udp);
	int cs = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(cs, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(handed(cs), EPROTOTYPE); /* connected, not listening */
	int as = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	assert_int_equal(handed(as), EPROTOTYPE); /* an accepted one */
	close(as);
	close(cs);

	/* the message itself: no fd, two in one, two messages, more than
	 * fit (MSG_CTRUNC), silence; nothing that arrived stays open */
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	int before = open_fds();
	send_fds(sv[1], NULL, 0, 0);
	errno = 0;
	assert_int_equal(al_fd_recv(sv[0], 1000), -1);
	assert_int_equal(errno, EBADMSG);
	int two[2] = { l, pp[0] };
	send_fds(sv[1], two, 2, 1);
	errno = 0;
	assert_int_equal(al_fd_recv(sv[0], 1000), -1);
	assert_int_equal(errno, EBADMSG);
	assert_int_equal(open_fds(), before);
	send_fds(sv[1], two, 2, 2);
	errno = 0;
	assert_int_equal(al_fd_recv(sv[0], 1000), -1);
	assert_int_equal(errno, EBADMSG);
	assert_int_equal(open_fds(), before);
	int many[32];
	for (int i = 0; i < 32; i++)
		many[i] = l;
	send_fds(sv[1], many, 32, 1);
	errno = 0;
	assert_int_equal(al_fd_recv(sv[0], 1000), -1);
	assert_int_equal(errno, EBADMSG); /* 32 fds: the control message is cut */
	assert_int_equal(open_fds(), before);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	errno = 0;
	assert_int_equal(al_fd_recv(sv[0], 200), -1);
	assert_int_equal(errno, ETIMEDOUT); /* a sender that sends nothing */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 5);
	close(sv[1]);
	errno = 0;
	assert_int_equal(al_fd_recv(sv[0], 1000), -1); /* the sender left */
	assert_int_equal(open_fds(), before - 1);
	close(sv[0]);
	close(pp[0]);
	close(pp[1]);
	close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allow_check),
		cmocka_unit_test(test_covers),
		cmocka_unit_test(test_host_addresses_special),
		cmocka_unit_test(test_proxy_hello),
		cmocka_unit_test(test_head_deadline),
		cmocka_unit_test(test_web_ports),
		cmocka_unit_test(test_fd_handover),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
