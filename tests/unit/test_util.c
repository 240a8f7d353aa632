/* util: SHA-256 (known answers, split and streamed input, and no OpenSSL
 * configuration or provider loaded for a digest); al_stack_release gives
 * back the pages a thread's stack touched below its current frame, and
 * leaves the frame itself intact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "airlock/util.h"
#include "util.h"

static void hex_of(const uint8_t d[AL_DIGEST_LEN], char out[2 * AL_DIGEST_LEN + 1])
{
	for (int i = 0; i < AL_DIGEST_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_sha256(void **state)
{
	(void)state;
	uint8_t d[AL_DIGEST_LEN], e[AL_DIGEST_LEN];
	char h[2 * AL_DIGEST_LEN + 1];
	al_sha256("", 0, d); /* FIPS 180-2's examples and the empty string */
	hex_of(d, h);
	assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	al_sha256("abc", 3, d);
	hex_of(d, h);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	al_sha256_2(two, 20, two + 20, strlen(two) - 20, d);
	hex_of(d, h);
	assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* a million 'a', streamed in uneven pieces, twice through one context
	 * (final resets it) */
	static char a[1000000];
	memset(a, 'a', sizeof(a));
	struct al_sha *s = al_sha_new();
	assert_non_null(s);
	for (int round = 0; round < 2; round++) {
		for (size_t off = 0, n = 1; off < sizeof(a); off += n, n = n * 3 + 1)
			al_sha_update(s, a + off, n < sizeof(a) - off ? n : sizeof(a) - off);
		al_sha_final(s, e);
		hex_of(e, h);
		assert_string_equal(
			h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	}
	al_sha_free(s);
	al_sha256(a, sizeof(a), d);
	assert_memory_equal(d, e, AL_DIGEST_LEN);
}

/* Whether fn, in a child whose OpenSSL configuration file is the FIFO,
 * opens it to read it.  Seen from here at once: a writer's non-blocking
 * open fails (ENXIO) until a reader has the FIFO open, and the reader's
 * open blocks until then, so a child that reads it cannot end first.
 * The writer closes at once: the child reads an empty file. */
static bool reads_config(void (*fn)(void), const char *fifo)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("OPENSSL_CONF", fifo, 1);
		alarm(60); /* a backstop: the parent decides long before */
		fn();
		_exit(0);
	}
	bool opened = false;
	int status = 0;
	for (int ms = 0; ms < 30000; ms++) {
		int fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			opened = true;
			break;
		}
		assert_int_equal(errno, ENXIO);
		if (waitpid(pid, &status, WNOHANG) == pid) {
			assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
			return false;
		}
		usleep(1000);
	}
	assert_true(opened); /* neither read it nor ended within 30 s */
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return true;
}

static void digest(void)
{
	uint8_t d[AL_DIGEST_LEN];
	al_sha256("abc", 3, d);
	struct al_sha *s = al_sha_new();
	al_sha_update(s, "abc", 3);
	al_sha_final(s, d);
	al_sha_free(s);
}

/* A digest loads neither OpenSSL's configuration nor its provider (0.8 ms
 * of a command's start, the first EVP digest's); al_crypto_ready, for
 * what does need them (the ledger's signature), loads both.  Runs first:
 * a parent that loaded them already would hand them to its children. */
static void test_digest_without_provider(void **state)
{
	(void)state;
	char dir[] = "/tmp/airlock-conf-XXXXXX", fifo[64];
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/openssl.cnf", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_false(reads_config(digest, fifo));
	assert_true(reads_config(al_crypto_ready, fifo));
	unlink(fifo);
	rmdir(dir);
}

/* pages of the calling thread's stack, below its frame, that are resident */
static size_t resident_below(void)
{
	pthread_attr_t a;
	void *addr;
	size_t size;
	assert_int_equal(pthread_getattr_np(pthread_self(), &a), 0);
	assert_int_equal(pthread_attr_getstack(&a, &addr, &size), 0);
	pthread_attr_destroy(&a);
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)addr;
	uintptr_t hi = ((uintptr_t)__builtin_frame_address(0) - 65536) & ~((uintptr_t)page - 1);
	static unsigned char vec[(8u << 20) / 4096];
	size_t n = (hi - lo) / (size_t)page, count = 0;
	assert_true(n <= sizeof(vec));
	assert_int_equal(mincore((void *)lo, hi - lo, vec), 0);
	for (size_t i = 0; i < n; i++)
		count += vec[i] & 1;
	return count;
}

/* touch about depth * 4 KiB of stack */
static __attribute__((noinline)) int deep(int depth)
{
	volatile char buf[4096];
	memset((char *)buf, depth, sizeof(buf));
	return depth ? deep(depth - 1) + buf[100] : buf[0];
}

static void *thread_main(void *arg)
{
	size_t *out = arg;
	volatile char frame[64] = "this frame stays intact";
	deep(300); /* ~1.2 MiB */
	out[0] = resident_below();
	al_stack_release();
	out[1] = resident_below();
	out[2] = strcmp((const char *)frame, "this frame stays intact") == 0;
	return NULL;
}

static void test_stack_release(void **state)
{
	(void)state;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 4u << 20);
	size_t out[3] = { 0 };
	pthread_t t;
	assert_int_equal(pthread_create(&t, &a, thread_main, out), 0);
	pthread_join(t, NULL);
	pthread_attr_destroy(&a);
	assert_true(out[0] >= 250); /* touched */
	assert_true(out[1] <= 2);   /* given back */
	assert_true(out[2]);        /* the live frame untouched */
}

/* A message cut inside a UTF-8 sequence loses that sequence only; an
 * error's message is never left so (al_fail). */
static void test_utf8_cut(void **state)
{
	(void)state;
	struct {
		const char *in, *want;
	} cases[] = {
		{ "abc", "abc" },
		{ "ab\xc3\xa9", "ab\xc3\xa9" },         /* whole */
		{ "ab\xc3", "ab" },                     /* a lead byte alone */
		{ "ab\xe2\x82", "ab" },                 /* 2 of 3 */
		{ "ab\xe2\x82\xac", "ab\xe2\x82\xac" }, /* whole */
		{ "ab\xf0\x9f\x98", "ab" },             /* 3 of 4 */
		{ "", "" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char b[16];
		snprintf(b, sizeof(b), "%s", cases[i].in);
		al_utf8_cut(b);
		assert_string_equal(b, cases[i].want);
	}
	char path[400] = "a";
	for (int i = 0; i < 150; i++)
		memcpy(path + 1 + 2 * i, "\xc3\xa9", 3);
	struct al_error err;
	for (int pre = 0; pre < 4; pre++) {
		al_fail(&err, AL_EINVAL, 0, "%.*s%s", pre, "xyz", path);
		assert_true(al_utf8_valid((const uint8_t *)err.msg, strlen(err.msg)));
		assert_true(strlen(err.msg) >= sizeof(err.msg) - 2);
		al_error_prefix(&err, "%.*s", pre, "xyz");
		assert_true(al_utf8_valid((const uint8_t *)err.msg, strlen(err.msg)));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_digest_without_provider),
		cmocka_unit_test(test_sha256),
		cmocka_unit_test(test_stack_release),
		cmocka_unit_test(test_utf8_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
