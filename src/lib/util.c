/* libairlock utilities: errors, hex, sha256, file helpers, name checks. */
#include <errno.h>
#include <ftw.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <linux/openat2.h>

/* SHA256_Init and the rest (below) */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "airlock/dl_archive.h"
#include "util.h"

int al_fail(struct al_error *err, int code, int sys_errno, const char *fmt, ...)
{
	if (!err)
		return code;
	err->code = code;
	err->sys_errno = sys_errno;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	if (sys_errno && n >= 0 && (size_t)n < sizeof(err->msg))
		snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", strerror(sys_errno));
	al_utf8_cut(err->msg); /* a path cut at the buffer's end */
	return code;
}

void al_utf8_cut(char *s)
{
	size_t n = strlen(s), i = n, k = 0;
	while (i > 0 && k < 3 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
		i--;
		k++;
	}
	if (i == 0)
		return;
	unsigned char c = (unsigned char)s[i - 1];
	size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
	if (need > 1 && k + 1 < need)
		s[i - 1] = 0;
}

int al_error_prefix(struct al_error *err, const char *fmt, ...)
{
	if (!err)
		return AL_EIO;
	char pre[128], old[sizeof(err->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	size_t pl = strnlen(pre, sizeof(pre) - 1);
	if (pl >= sizeof(err->msg))
		pl = sizeof(err->msg) - 1;
	memcpy(err->msg, pre, pl);
	size_t ol = strnlen(old, sizeof(old));
	if (ol > sizeof(err->msg) - 1 - pl)
		ol = sizeof(err->msg) - 1 - pl;
	memcpy(err->msg + pl, old, ol);
	err->msg[pl + ol] = 0;
	al_utf8_cut(err->msg);
	return err->code;
}

static const struct {
	int code;
	const char *name;
	int exit, http;
} codes[] = {
	{ AL_OK, "OK", 0, 200 },
	{ AL_EIO, "IOError", 1, 500 },
	{ AL_EUSAGE, "UsageError", 2, 400 },
	{ AL_ENOTFOUND, "NotFound", 3, 404 },
	{ AL_ECORRUPT, "CorruptObject", 4, 500 },
	{ AL_ECONFLICT, "VolumeConflictError", 5, 409 },
	{ AL_EINVAL, "InvalidInput", 6, 422 },
	{ AL_EEXIST, "AlreadyExists", 7, 409 },
	{ AL_ENOMEM, "OutOfMemory", 1, 503 },
	{ AL_ELIMIT, "LimitExceeded", 8, 413 },
	{ AL_ESTATE, "InvalidState", 9, 409 },
	{ AL_ESANDBOX, "SandboxError", 125, 500 },
	{ AL_EAUTH, "Unauthorized", 10, 401 },
	{ AL_EDENIED, "Forbidden", 11, 403 },
	{ AL_EUNAVAIL, "Unavailable", 12, 503 },
};

const char *al_code_name(int code)
{
	for (size_t i = 0; i < ARRAY_SIZE(codes); i++)
		if (codes[i].code == code)
			return codes[i].name;
	return "IOError";
}

int al_code_exit(int code)
{
	for (size_t i = 0; i < ARRAY_SIZE(codes); i++)
		if (codes[i].code == code)
			return codes[i].exit;
	return 1;
}

int al_code_http(int code)
{
	for (size_t i = 0; i < ARRAY_SIZE(codes); i++)
		if (codes[i].code == code)
			return codes[i].http;
	return 500;
}

int al_code_from_name(const char *name)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(codes); i++)
		if (strcmp(codes[i].name, name) == 0)
			return codes[i].code;
	return AL_EIO;
}

void al_hex(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1; /* uppercase is not canonical */
}

int al_unhex(const char *in, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(in[2 * i]), lo = hexval(in[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

void al_oid_fmt(const struct al_oid *id, char out[AL_OID_STRLEN + 1])
{
	memcpy(out, "sha256:", 7);
	al_hex(id->b, AL_OID_LEN, out + 7);
}

int al_oid_parse(const char *s, struct al_oid *id, struct al_error *err)
{
	if (strncmp(s, "sha256:", 7) == 0)
		s += 7;
	if (strlen(s) != 2 * AL_OID_LEN || al_unhex(s, AL_OID_LEN, id->b) < 0) {
		char q[96];
		al_quote(s, strnlen(s, 80), q, sizeof(q));
		return al_fail(err, AL_EINVAL, 0,
			       "not an object id: '%s' (expected sha256:<64 lowercase hex>)", q);
	}
	return 0;
}

/* SHA-256 through libcrypto's SHA-256 functions themselves (SHA256_Init
 * and the rest), not through EVP: the default provider's SHA-256 is these
 * same functions, but the first EVP digest of a process loads OpenSSL's
 * configuration and provider first, 0.8 ms against 8 us here: a fifth of
 * a whole-CLI `snapshot diff` at 1M entries, which verifies each node it
 * reads and signs nothing.  Deprecated since OpenSSL 3.0, and kept in
 * every 3.x; a libcrypto without them fails the build, not a digest.
 * (OpenSSL's one-shot SHA256() is not one of them: it goes through EVP.)
 * Nothing here fails but al_sha_new's allocation: a digest is never
 * skipped. */
struct al_sha {
	SHA256_CTX ctx;
};

struct al_sha *al_sha_new(void)
{
	struct al_sha *s = malloc(sizeof(*s));
	if (s)
		SHA256_Init(&s->ctx);
	return s;
}

void al_sha_free(struct al_sha *s)
{
	if (s)
		OPENSSL_cleanse(s, sizeof(*s));
	free(s);
}

void al_sha_update(struct al_sha *s, const void *p, size_t n)
{
	SHA256_Update(&s->ctx, p, n);
}

void al_sha_final(struct al_sha *s, uint8_t out[AL_DIGEST_LEN])
{
	SHA256_Final(out, &s->ctx);
	SHA256_Init(&s->ctx);
}

void al_sha256_2(const void *a, size_t an, const void *b, size_t bn, uint8_t out[AL_DIGEST_LEN])
{
	SHA256_CTX c;
	SHA256_Init(&c);
	SHA256_Update(&c, a, an);
	SHA256_Update(&c, b, bn);
	SHA256_Final(out, &c);
}

void al_sha256(const void *p, size_t n, uint8_t out[AL_DIGEST_LEN])
{
	al_sha256_2(p, n, "", 0, out);
}

/* The first EVP use (the ledger's Ed25519 signature, an HMAC, the secrets'
 * AES-GCM) loads OpenSSL's configuration and default provider; a fetch
 * of the signature loads them now.  The reference is dropped: the
 * provider keeps what it fetched for the next. */
static void crypto_setup(void)
{
	EVP_SIGNATURE_free(EVP_SIGNATURE_fetch(NULL, "ED25519", NULL));
}

void al_crypto_ready(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, crypto_setup);
}

ssize_t al_read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

int al_write_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int al_mkdir_p(const char *path, mode_t mode, struct al_error *err)
{
	char buf[4096];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof(buf))
		return al_fail(err, AL_EINVAL, 0, "bad directory path");
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != 0)
			continue;
		char c = buf[i];
		buf[i] = 0;
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return al_fail(err, AL_EIO, errno, "mkdir %s", buf);
		buf[i] = c;
	}
	return 0;
}

int al_fsync_dir(int dirfd, const char *path, struct al_error *err)
{
	_cleanup_close_ int fd =
		openat(dirfd < 0 ? AT_FDCWD : dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return al_fail(err, AL_EIO, errno, "open directory %s", path);
	if (fsync(fd) < 0)
		return al_fail(err, AL_EIO, errno, "fsync directory %s", path);
	return 0;
}

DIR *al_opendir_fd(int dirfd)
{
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	rewinddir(d);
	return d;
}

int al_open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	for (;;) {
		long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			return (int)fd;
	}
}

bool al_utf8_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint8_t c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t len;
		uint32_t cp;
		if ((c & 0xe0) == 0xc0) {
			len = 2;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			len = 3;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			len = 4;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (i + len > n)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		/* overlong, surrogate, out of range */
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
		    (len == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

bool al_name_valid(const char *s, size_t n, const char **why)
{
	const char *w = NULL;
	if (n == 0)
		w = "empty name";
	else if (n > 255)
		w = "name longer than 255 bytes";
	else if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		w = "'.' and '..' are not names";
	else if (memchr(s, '/', n))
		w = "'/' inside a name";
	else if (!al_utf8_valid((const uint8_t *)s, n))
		w = "name is not valid UTF-8";
	else {
		for (size_t i = 0; i < n; i++) {
			uint8_t c = (uint8_t)s[i];
			if (c < 0x20 || c == 0x7f) {
				w = c == 0 ? "NUL inside a name" : "control character in a name";
				break;
			}
		}
	}
	if (why)
		*why = w;
	return w == NULL;
}

/* Unicode's Cf (format) characters: invisible, and the bidi ones reorder
 * what a terminal shows (Trojan Source, CVE-2021-42574). */
static bool is_format_cp(uint32_t cp)
{
	static const uint32_t ranges[][2] = {
		{ 0x00ad, 0x00ad },   { 0x0600, 0x0605 },   { 0x061c, 0x061c },
		{ 0x06dd, 0x06dd },   { 0x070f, 0x070f },   { 0x0890, 0x0891 },
		{ 0x08e2, 0x08e2 },   { 0x180e, 0x180e },   { 0x200b, 0x200f },
		{ 0x202a, 0x202e },   { 0x2060, 0x2064 },   { 0x2066, 0x206f },
		{ 0xfeff, 0xfeff },   { 0xfff9, 0xfffb },   { 0x110bd, 0x110bd },
		{ 0x110cd, 0x110cd }, { 0x13430, 0x1343f }, { 0x1bca0, 0x1bca3 },
		{ 0x1d173, 0x1d17a }, { 0xe0001, 0xe0001 }, { 0xe0020, 0xe007f },
	};
	for (size_t i = 0; i < ARRAY_SIZE(ranges); i++)
		if (cp >= ranges[i][0] && cp <= ranges[i][1])
			return true;
	return false;
}

bool al_text_safe(const char *s, size_t n)
{
	if (!al_utf8_valid((const uint8_t *)s, n))
		return false;
	const uint8_t *p = (const uint8_t *)s;
	for (size_t i = 0; i < n;) {
		uint32_t cp = p[i];
		size_t len = 1;
		if (cp >= 0xf0)
			len = 4, cp &= 0x07;
		else if (cp >= 0xe0)
			len = 3, cp &= 0x0f;
		else if (cp >= 0xc0)
			len = 2, cp &= 0x1f;
		for (size_t k = 1; k < len; k++)
			cp = cp << 6 | (p[i + k] & 0x3f);
		/* Cc: C0, DEL, C1 */
		if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || is_format_cp(cp))
			return false;
		i += len;
	}
	return true;
}

int al_text_check(const char *what, const char *s, size_t max, struct al_error *err)
{
	size_t n = strlen(s);
	if (n >= 1 && n <= max && al_text_safe(s, n))
		return 0;
	char q[100];
	al_quote(s, strnlen(s, 80), q, sizeof(q));
	if (n < 1 || n > max)
		return al_fail(err, AL_EINVAL, 0, "%s '%s': 1 to %zu bytes", what, q, max);
	return al_fail(
		err, AL_EINVAL, 0,
		"%s '%s' is not UTF-8 text without control or format characters (Unicode Cc, Cf)",
		what, q);
}

void al_quote(const char *s, size_t n, char *out, size_t outsz)
{
	/* Valid UTF-8 without control or format characters is shown as is;
	 * anything else byte by byte with \xNN, so a hostile name cannot drive
	 * a terminal (C0, C1 controls) or reorder what it shows (bidi). */
	bool plain = al_text_safe(s, n);
	for (size_t i = 0; plain && i < n; i++)
		if (s[i] == '\\')
			plain = false;
	size_t o = 0;
	for (size_t i = 0; i < n && o + 5 < outsz; i++) {
		uint8_t c = (uint8_t)s[i];
		if (plain || (c >= 0x20 && c < 0x7f && c != '\\'))
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, outsz - o, "\\x%02x", c);
	}
	if (outsz)
		out[o < outsz ? o : outsz - 1] = 0;
}

uint64_t al_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* AIRLOCK_NOW=SECONDS (a testing aid, docs/operations.md): the wall clock of
 * every decision that reads the time (token expiry, gc ages, the stat cache's
 * racy rule, recorded times), so that tests never sleep for time to pass.
 * Read on each call: nothing in airlock sets the environment. */
int64_t al_wall_s(void)
{
	const char *fake = getenv("AIRLOCK_NOW");
	if (fake && *fake) {
		char *end;
		errno = 0;
		long long v = strtoll(fake, &end, 10);
		if (!*end && !errno && v >= 0)
			return v;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec;
}

int al_buf_reserve(struct al_buf *b, size_t extra)
{
	if (extra > SIZE_MAX - b->len)
		return -1;
	size_t need = b->len + extra;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need) {
		if (cap > SIZE_MAX / 2)
			return -1;
		cap *= 2;
	}
	uint8_t *p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

int al_buf_put(struct al_buf *b, const void *p, size_t n)
{
	if (al_buf_reserve(b, n) < 0)
		return -1;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

void al_buf_release(struct al_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

static int rm_unlock(const char *path, const struct stat *s, int flag, struct FTW *f)
{
	(void)f;
	if ((flag == FTW_D || flag == FTW_DNR) && (s->st_mode & 0700) != 0700)
		chmod(path, 0700); /* a read-only directory must still be emptied */
	return 0;
}

static int rm_one(const char *path, const struct stat *s, int flag, struct FTW *f)
{
	(void)s;
	(void)flag;
	(void)f;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

void al_stack_release(void)
{
	pthread_attr_t a;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return;
	void *addr = NULL;
	size_t size = 0, guard = 0;
	long page = sysconf(_SC_PAGESIZE);
	if (pthread_attr_getstack(&a, &addr, &size) == 0 &&
	    pthread_attr_getguardsize(&a, &guard) == 0 && page > 0) {
		uintptr_t lo =
			((uintptr_t)addr + guard + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
		uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
		uintptr_t hi = sp > 16384 ? (sp - 16384) & ~((uintptr_t)page - 1) : 0;
		if (hi > lo && sp < (uintptr_t)addr + size)
			madvise((void *)lo, hi - lo, MADV_DONTNEED);
	}
	pthread_attr_destroy(&a);
}

void al_rm_tree(const char *dir)
{
	nftw(dir, rm_unlock, 16, FTW_PHYS);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int al_write_string(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = al_write_full(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

static locale_t c_locale;

static void c_locale_init(void)
{
	c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

locale_t al_c_locale_enter(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, c_locale_init);
	return c_locale ? uselocale(c_locale) : (locale_t)0;
}

bool al_archive_header_ok(struct archive *a, int rc)
{
	if (rc == ARCHIVE_OK)
		return true;
	/* archive_read_support_format_tar.c: "Pathname can't be converted
	 * from UTF-8 to current locale." (Linkname, Uname, Gname alike) */
	const char *m = rc == ARCHIVE_WARN ? dl_archive.error_string(a) : NULL;
	return m && strstr(m, " can't be converted from ") != NULL;
}

bool al_archive_written_ok(struct archive *w, int rc)
{
	if (rc == ARCHIVE_OK)
		return true;
	/* archive_write_set_format_pax.c: "Can't translate pathname '%s' to
	 * UTF-8" (linkname, uname, gname alike): the member is written, its
	 * names as bytes */
	const char *m = rc == ARCHIVE_WARN ? dl_archive.error_string(w) : NULL;
	return m && strncmp(m, "Can't translate ", 16) == 0;
}

/* ---- fds over a Unix socket -------------------------------------------------------- */

#define FD_RECV_MAX 16 /* room for a hostile sender's extra fds, all closed */

/* a message of one byte with room for ctl bytes of control data */
union fd_ctl {
	char buf[CMSG_SPACE(FD_RECV_MAX * sizeof(int))];
	struct cmsghdr align;
};

static struct msghdr fd_msg(struct iovec *iov, char *byte, union fd_ctl *u, size_t ctl)
{
	*iov = (struct iovec){ .iov_base = byte, .iov_len = 1 };
	memset(u, 0, sizeof(*u));
	return (struct msghdr){
		.msg_iov = iov, .msg_iovlen = 1, .msg_control = u->buf, .msg_controllen = ctl
	};
}

int al_fd_send(int sock, int fd)
{
	char byte = 'u';
	struct iovec iov;
	union fd_ctl u;
	struct msghdr msg = fd_msg(&iov, &byte, &u, CMSG_SPACE(sizeof(int)));
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

int al_fd_recv(int sock, int timeout_ms)
{
	struct pollfd pf = { sock, POLLIN, 0 };
	int pr;
	do
		pr = poll(&pf, 1, timeout_ms);
	while (pr < 0 && errno == EINTR);
	if (pr == 0)
		errno = ETIMEDOUT;
	if (pr <= 0)
		return -1;
	char byte;
	struct iovec iov;
	union fd_ctl u;
	struct msghdr msg = fd_msg(&iov, &byte, &u, sizeof(u.buf));
	ssize_t n;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	int fd = -1, got = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
		    cm->cmsg_len < CMSG_LEN(0))
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int f;
			memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (got++ == 0)
				fd = f;
			else
				close(f);
		}
	}
	if (n == 1 && got == 1 && !(msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)))
		return fd;
	if (fd >= 0)
		close(fd);
	errno = EBADMSG;
	return -1;
}

int al_fd_is_listener(int fd, int family)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		errno = ENOTSOCK;
		return -1;
	}
	int dom = -1, type = -1, proto = -1, acc = 0;
	socklen_t l1 = sizeof(dom), l2 = sizeof(type), l3 = sizeof(proto), l4 = sizeof(acc);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l1) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l2) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l3) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l4) < 0)
		return -1;
	if (dom != family || type != SOCK_STREAM || proto != IPPROTO_TCP || !acc) {
		errno = EPROTOTYPE;
		return -1;
	}
	return 0;
}
