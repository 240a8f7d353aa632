/* net: allow entries (what parses, what covers what, special addresses
 * covered only by themselves) and the proxy's reading of hostile
 * ClientHellos, on loopback: a tunnel forwards only a well-formed
 * ClientHello in one record whose SNI is the allowed name. */
#include <arpa/inet.h>
#include <netinet/in.h>
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

#include "airlock/net.h"
#include "net_private.h"

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
		{ "example.com", "example.com:80", true },
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

/* ---- the proxy on loopback ------------------------------------------------------- */

static int listener(uint16_t *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr = { htonl(INADDR_LOOPBACK) } };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 64), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static int dial(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr = { htonl(INADDR_LOOPBACK) } };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allow_check),
		cmocka_unit_test(test_covers),
		cmocka_unit_test(test_proxy_hello),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
