/* s3: objects on an S3-compatible store (include/airlock/odb_backend.h).
 *
 * Plain HTTP requests through libcurl, signed by libcurl's own AWS SigV4
 * (CURLOPT_AWS_SIGV4), path-style (<endpoint>/<bucket>/<key>).  A key is
 * <prefix>/<tenant>/<sha256 hex>: the name is the content, so a PUT is
 * idempotent and needs no conditional write (which Swift's s3api lacks).
 * Every PUT carries the object's sha256 as x-amz-content-sha256, which the
 * server checks against the body, and the body is hashed as it is sent: a
 * source whose bytes do not match its id is cut short, so the PUT fails.
 * Every GET is hashed as it arrives and fails with AL_ECORRUPT unless it
 * matches.  The listing (ListObjectsV2) is read with a few string searches:
 * only <Key>, <Size>, <IsTruncated> and <NextContinuationToken> matter, and
 * a key that is not ours (not <prefix>/<tenant>/<64 hex>) is skipped.  A
 * library for that much XML (libxml2) was not worth a dependency.
 *
 * libcurl is loaded on first use (include/airlock/dl.h), as for the CLI's
 * client; the table is this file's own because the CLI's (src/cli/dl_curl.h)
 * is in a layer the library cannot see. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "airlock/odb_backend.h"
#include "airlock/store.h"
#include "backend/odb_common.h"
#include "backend/s3/s3_private.h"
#include "curl_private.h"
#include "util.h"

/* what a hostile or broken server can make us hold or fetch */
#define S3_MAX_OBJECT (64ull << 30)
#define S3_MAX_BODY (8u << 20)   /* a listing page or an error document */
#define HEX_LEN (2 * AL_OID_LEN) /* a key's last segment */
/* keys one listing may report: what the collector and the sync hold in
 * memory (about 100 bytes each) against a server that never ends its list */
#define S3_MAX_KEYS 10000000ull
#define S3_EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* ---- configuration ------------------------------------------------------------- */

static bool safe_value(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

static int set_field(char *dst, size_t dstsz, const char *src, size_t n, const char *what,
		     struct al_error *err)
{
	if (n == 0 || n >= dstsz || !safe_value(src, n))
		return al_fail(err, AL_EINVAL, 0,
			       "s3: %s is empty, too long or has spaces or control characters",
			       what);
	memcpy(dst, src, n);
	dst[n] = 0;
	return 0;
}

static bool bucket_ok(const char *b)
{
	size_t n = strlen(b);
	if (n < 3 || n > 63 || b[0] == '.' || b[0] == '-' || b[n - 1] == '.' || b[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '.' ||
		      b[i] == '-'))
			return false;
	return true;
}

/* segments of [A-Za-z0-9._-], none "." or "..", joined by single '/' */
static bool prefix_ok(const char *p)
{
	size_t seg = 0;
	const char *start = p;
	for (;; p++) {
		if (*p == '/' || *p == 0) {
			if (seg == 0 || (seg == 1 && start[0] == '.') ||
			    (seg == 2 && start[0] == '.' && start[1] == '.'))
				return false;
			if (*p == 0)
				return true;
			seg = 0;
			start = p + 1;
			continue;
		}
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
		seg++;
	}
}

static bool region_ok(const char *r)
{
	size_t n = strlen(r);
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((r[i] >= 'a' && r[i] <= 'z') || (r[i] >= '0' && r[i] <= '9') || r[i] == '-'))
			return false;
	return true;
}

static int endpoint_set(struct al_s3_config *c, const char *v, size_t n, struct al_error *err)
{
	int r = set_field(c->endpoint, sizeof(c->endpoint), v, n, "endpoint", err);
	if (r < 0)
		return r;
	size_t len = strlen(c->endpoint);
	while (len > 0 && c->endpoint[len - 1] == '/')
		c->endpoint[--len] = 0;
	const char *host = NULL;
	if (!strncmp(c->endpoint, "http://", 7))
		host = c->endpoint + 7;
	else if (!strncmp(c->endpoint, "https://", 8))
		host = c->endpoint + 8;
	if (!host || !*host || strpbrk(host, "/?#@\\"))
		return al_fail(err, AL_EINVAL, 0,
			       "s3: the endpoint must be http(s)://HOST[:PORT] (no path, no user)");
	return 0;
}

/* FILE: the access key on its first line, the secret on its second; the
 * caller's own, readable by nobody else. */
static int credentials_file(struct al_s3_config *c, const char *path, struct al_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return al_fail(err, AL_EINVAL, errno, "s3: credentials file");
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_uid != geteuid())
		return al_fail(err, AL_EINVAL, 0,
			       "s3: the credentials file must be a regular file of yours with "
			       "mode 0600 or stricter");
	char buf[1024];
	ssize_t n = al_read_full(fd, buf, sizeof(buf) - 1);
	if (n < 0 || n == (ssize_t)sizeof(buf) - 1)
		return al_fail(err, AL_EINVAL, n < 0 ? errno : 0,
			       "s3: credentials file unreadable or too long");
	buf[n] = 0;
	char *nl = strchr(buf, '\n');
	if (!nl)
		return al_fail(err, AL_EINVAL, 0,
			       "s3: the credentials file needs the access key and the secret on "
			       "two lines");
	char *secret = nl + 1;
	size_t slen = strcspn(secret, "\n");
	int r = set_field(c->access_key, sizeof(c->access_key), buf, (size_t)(nl - buf),
			  "the access key", err);
	if (r == 0)
		r = set_field(c->secret_key, sizeof(c->secret_key), secret, slen, "the secret",
			      err);
	explicit_bzero(buf, sizeof(buf));
	return r;
}

/* inline=BYTES: decimal, 0 (every object in the bucket) to AL_ODB_INLINE_CAP */
static int inline_set(struct al_s3_config *out, const char *v, size_t n, struct al_error *err)
{
	uint64_t x = 0;
	bool ok = n > 0 && n <= 8;
	for (size_t i = 0; ok && i < n; i++) {
		ok = v[i] >= '0' && v[i] <= '9';
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	if (!ok || x > AL_ODB_INLINE_CAP)
		return al_fail(err, AL_EINVAL, 0,
			       "s3: inline= takes a size in bytes, 0 to %u (objects up to it are "
			       "kept in the metadata database)",
			       AL_ODB_INLINE_CAP);
	out->inline_max = x;
	out->inline_set = true;
	return 0;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

int al_s3_config_parse(const char *url, struct al_s3_config *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	if (strncmp(url, "s3://", 5) != 0)
		return al_fail(err, AL_EINVAL, 0, "blobs: expected s3://BUCKET[/PREFIX][?...]");
	const char *p = url + 5;
	size_t blen = strcspn(p, "/?");
	if (blen >= sizeof(out->bucket))
		blen = sizeof(out->bucket) - 1;
	memcpy(out->bucket, p, blen);
	if (!bucket_ok(out->bucket)) {
		char q[80];
		al_quote(p, strcspn(p, "/?"), q, sizeof(q));
		return al_fail(err, AL_EINVAL, 0,
			       "s3: invalid bucket name '%s' (3-63 of [a-z0-9.-])", q);
	}
	p += strcspn(p, "/?");
	if (*p == '/') {
		p++;
		size_t plen = strcspn(p, "?");
		while (plen > 0 && p[plen - 1] == '/')
			plen--;
		if (plen >= sizeof(out->prefix))
			return al_fail(err, AL_EINVAL, 0, "s3: prefix too long");
		memcpy(out->prefix, p, plen);
		if (plen && !prefix_ok(out->prefix))
			return al_fail(
				err, AL_EINVAL, 0,
				"s3: invalid prefix (segments of [A-Za-z0-9._-], no . or ..)");
		p += strcspn(p, "?");
	}
	int r = 0;
	char cred_path[1024] = "";
	if (*p == '?') {
		p++;
		while (*p && r == 0) {
			size_t n = strcspn(p, "&");
			const char *eq = memchr(p, '=', n);
			if (!eq) {
				r = al_fail(err, AL_EINVAL, 0,
					    "s3: expected KEY=VALUE in the query");
				break;
			}
			size_t kl = (size_t)(eq - p), vl = n - kl - 1;
			const char *v = eq + 1;
			if (kl == 8 && !memcmp(p, "endpoint", 8)) {
				r = endpoint_set(out, v, vl, err);
			} else if (kl == 6 && !memcmp(p, "region", 6)) {
				r = set_field(out->region, sizeof(out->region), v, vl, "region",
					      err);
			} else if (kl == 11 && !memcmp(p, "credentials", 11)) {
				r = set_field(cred_path, sizeof(cred_path), v, vl,
					      "the credentials path", err);
			} else if (kl == 6 && !memcmp(p, "inline", 6)) {
				r = inline_set(out, v, vl, err);
			} else {
				char q[64];
				al_quote(p, kl, q, sizeof(q));
				r = al_fail(
					err, AL_EINVAL, 0,
					"s3: unknown setting '%s' (endpoint, region, credentials, "
					"inline)",
					q);
			}
			p += n;
			if (*p == '&')
				p++;
		}
		if (r < 0)
			return r;
	}
	const char *v;
	if (!out->region[0]) {
		v = env("AWS_REGION") ? env("AWS_REGION") : env("AWS_DEFAULT_REGION");
		snprintf(out->region, sizeof(out->region), "%s", v ? v : "us-east-1");
	}
	if (!region_ok(out->region))
		return al_fail(err, AL_EINVAL, 0, "s3: invalid region (1-63 of [a-z0-9-])");
	if (!out->endpoint[0]) {
		if ((v = env("AWS_ENDPOINT_URL")))
			r = endpoint_set(out, v, strlen(v), err);
		else
			snprintf(out->endpoint, sizeof(out->endpoint),
				 "https://s3.%s.amazonaws.com", out->region);
		if (r < 0)
			return r;
	}
	if (cred_path[0]) {
		r = credentials_file(out, cred_path, err);
	} else {
		const char *id = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
		if (!id || !secret)
			return al_fail(err, AL_EINVAL, 0,
				       "s3: no credentials (set AWS_ACCESS_KEY_ID and "
				       "AWS_SECRET_ACCESS_KEY, or credentials=FILE in the URL)");
		r = set_field(out->access_key, sizeof(out->access_key), id, strlen(id),
			      "AWS_ACCESS_KEY_ID", err);
		if (r == 0)
			r = set_field(out->secret_key, sizeof(out->secret_key), secret,
				      strlen(secret), "AWS_SECRET_ACCESS_KEY", err);
	}
	if (r == 0 && (v = env("AWS_SESSION_TOKEN")))
		r = set_field(out->session_token, sizeof(out->session_token), v, strlen(v),
			      "AWS_SESSION_TOKEN", err);
	return r;
}

/* ---- requests ------------------------------------------------------------------ */

/* Every request runs through one curl multi handle: write_many's uploads at
 * once (cfg.parallel, 8 by default), anything else alone.  A request that
 * fails transiently (no connection, a connection reset or timed out, HTTP
 * 500, 502, 503 (S3's SlowDown) or 504) is tried again after a wait that
 * doubles from cfg.backoff_ms (to 5 s), of which a random half is taken
 * (jitter: nodes that failed together do not retry together); at most
 * cfg.attempts tries, and none starts later than cfg.retry_s after the
 * first.  Nothing else is retried: a 4xx answer (credentials, a missing
 * bucket) would fail the same way again.  An upload is retried only from a
 * source that can start again (write_many's open, or one nothing was read
 * from yet); a download only while nothing reached its sink. */
#define S3_PARALLEL_MAX 32
#define S3_BACKOFF_CAP_MS 5000u

struct s3 {
	struct al_odb_backend base;
	struct al_s3_config cfg;
	char tenant[64];
	char sigv4[96];
	CURLM *m;
	CURL *h[S3_PARALLEL_MAX]; /* made at first use, kept with their connections */
	bool busy[S3_PARALLEL_MAX];
	uint64_t rng;
	uint64_t connects; /* connections its requests opened (s3_private.h) */
};

enum req_state { Q_PENDING, Q_ACTIVE, Q_DONE };

struct req {
	struct s3 *s;
	const char *method; /* "GET", "HEAD", "PUT", "DELETE" */
	const char *url;
	const struct al_oid *id; /* the object (GET and PUT verify against it) */
	/* PUT: the source, hashed as it is sent; objs: write_many's, opened at
	 * each attempt */
	al_odb_source src;
	void *src_ctx;
	const struct al_odb_objects *objs;
	void *opened;
	uint64_t size, sent;
	/* GET of an object: the sink, after the status said 200 */
	al_cas_sink sink;
	void *sink_ctx;
	uint64_t got;
	struct al_sha *sha;
	/* any other body (a listing, an error document), capped */
	struct al_buf body;
	struct al_error *err; /* the request's own: &e */
	struct al_error e;
	int cb_rc; /* a callback's failure, already in err */
	/* the engine's */
	enum req_state state;
	int slot;
	bool added; /* its handle is in the multi handle */
	struct curl_slist *hdr;
	unsigned attempt;
	uint64_t first_ns, not_before_ns;
	int rc;
	long status;
	curl_off_t length; /* HEAD: Content-Length */
};

static size_t on_body(char *p, size_t one, size_t n, void *ctx)
{
	(void)one;
	struct req *q = ctx;
	long status = 0;
	al__curl.easy_getinfo(q->s->h[q->slot], CURLINFO_RESPONSE_CODE, &status);
	if (q->sink && status == 200) {
		al_sha_update(q->sha, p, n);
		q->got += n;
		int r = q->sink(q->sink_ctx, p, n, q->err);
		if (r < 0) {
			q->cb_rc = r;
			return 0;
		}
		return n;
	}
	if (q->body.len + n > S3_MAX_BODY) {
		q->cb_rc = al_fail(q->err, AL_ELIMIT, 0, "s3: answer larger than %u bytes",
				   S3_MAX_BODY);
		return 0;
	}
	if (al_buf_put(&q->body, p, n) < 0) {
		q->cb_rc = al_fail(q->err, AL_ENOMEM, ENOMEM, "s3");
		return 0;
	}
	return n;
}

static int corrupt(struct al_error *err, const struct al_oid *id, const char *why)
{
	char hex[AL_OID_STRLEN + 1];
	al_oid_fmt(id, hex);
	return al_fail(err, AL_ECORRUPT, 0, "object %s is corrupt in the object store: %s", hex,
		       why);
}

/* The last bytes are withheld unless everything sent hashes to the id. */
static size_t on_send(char *p, size_t one, size_t n, void *ctx)
{
	(void)one;
	struct req *q = ctx;
	uint64_t left = q->size - q->sent;
	if (n > left)
		n = (size_t)left;
	if (n == 0)
		return 0;
	int64_t k = q->src(q->src_ctx, p, n, q->err);
	if (k < 0) {
		q->cb_rc = (int)k;
		return CURL_READFUNC_ABORT;
	}
	if (k == 0) {
		q->cb_rc = al_fail(q->err, AL_EINVAL, 0, "s3: the object ended before its size");
		return CURL_READFUNC_ABORT;
	}
	al_sha_update(q->sha, p, (size_t)k);
	q->sent += (uint64_t)k;
	if (q->sent == q->size) {
		struct al_oid got;
		al_sha_final(q->sha, got.b);
		if (!al_oid_eq(&got, q->id)) {
			char hex[AL_OID_STRLEN + 1];
			al_oid_fmt(q->id, hex);
			q->cb_rc = al_fail(q->err, AL_ECORRUPT, 0,
					   "s3: the bytes written as %s hash to another id", hex);
			return CURL_READFUNC_ABORT;
		}
	}
	return (size_t)k;
}

static void key_url(struct s3 *s, const struct al_oid *id, char *url, size_t n)
{
	char hex[HEX_LEN + 1];
	al_hex(id->b, AL_OID_LEN, hex);
	snprintf(url, n, "%s/%s/%s%s%s/%s", s->cfg.endpoint, s->cfg.bucket, s->cfg.prefix,
		 s->cfg.prefix[0] ? "/" : "", s->tenant, hex);
}

/* "<Code>X</Code>" of an error document, quoted, or "" */
static void error_code(const struct al_buf *b, char *out, size_t n)
{
	out[0] = 0;
	if (!b->p)
		return;
	const char *s = memmem(b->p, b->len, "<Code>", 6), *e;
	if (!s)
		return;
	s += 6;
	e = memmem(s, b->len - (size_t)(s - (const char *)b->p), "</Code>", 7);
	if (e && e - s < 64)
		al_quote(s, (size_t)(e - s), out, n);
}

static unsigned cfg_or(unsigned v, unsigned dflt)
{
	return v ? v : dflt;
}

/* An attempt of q on a free handle of the pool. */
static int start(struct req *q)
{
	struct s3 *s = q->s;
	int slot = 0;
	while (slot < S3_PARALLEL_MAX && s->busy[slot])
		slot++;
	if (slot == S3_PARALLEL_MAX)
		return al_fail(q->err, AL_EIO, 0, "s3: no free request handle");
	if (!s->h[slot] && !(s->h[slot] = al__curl.easy_init()))
		return al_fail(q->err, AL_ENOMEM, ENOMEM, "s3: curl");
	CURL *h = s->h[slot];
	q->slot = slot;
	q->cb_rc = 0;
	q->sent = 0;
	q->body.len = 0;
	if (q->sha) {
		struct al_oid junk; /* a retry hashes from the start */
		al_sha_final(q->sha, junk.b);
	}
	bool put = !strcmp(q->method, "PUT");
	if (q->objs) {
		uint64_t size = 0;
		int r = q->objs->open(q->objs->ctx, q->id, &size, &q->opened, q->err);
		if (r < 0)
			return r;
		q->src = q->objs->read;
		q->src_ctx = q->opened;
		q->size = size;
		if (size > S3_MAX_OBJECT)
			return al_fail(q->err, AL_ELIMIT, 0, "s3: object larger than %llu bytes",
				       (unsigned long long)S3_MAX_OBJECT);
	}
	if (put && q->size == 0) {
		struct al_oid got;
		al_sha_final(q->sha, got.b);
		if (!al_oid_eq(&got, q->id))
			return al_fail(q->err, AL_ECORRUPT, 0,
				       "s3: the empty object does not hash to its id");
	}
	al__curl.easy_reset(h);
	char line[2200];
	char hex[HEX_LEN + 1];
	if (put)
		al_hex(q->id->b, AL_OID_LEN, hex);
	snprintf(line, sizeof(line), "x-amz-content-sha256: %s", put ? hex : S3_EMPTY_SHA);
	struct curl_slist *hdr = al__curl.slist_append(NULL, line);
	if (hdr && s->cfg.session_token[0]) {
		snprintf(line, sizeof(line), "x-amz-security-token: %s", s->cfg.session_token);
		hdr = al__curl.slist_append(hdr, line);
	}
	if (hdr && put)
		hdr = al__curl.slist_append(hdr, "Content-Type: application/octet-stream");
	q->hdr = hdr;
	if (!hdr)
		return al_fail(q->err, AL_ENOMEM, ENOMEM, "s3");
	al__curl.easy_setopt(h, CURLOPT_URL, q->url);
	al__curl.easy_setopt(h, CURLOPT_PRIVATE, q);
	al__curl.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	al__curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	al__curl.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	al__curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
	al__curl.easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	al__curl.easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
	al__curl.easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)S3_MAX_OBJECT);
	al__curl.easy_setopt(h, CURLOPT_USERNAME, s->cfg.access_key);
	al__curl.easy_setopt(h, CURLOPT_PASSWORD, s->cfg.secret_key);
	al__curl.easy_setopt(h, CURLOPT_AWS_SIGV4, s->sigv4);
	al__curl.easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	al__curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	al__curl.easy_setopt(h, CURLOPT_WRITEDATA, q);
	if (!strcmp(q->method, "HEAD")) {
		al__curl.easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (put) {
		al__curl.easy_setopt(h, CURLOPT_UPLOAD, 1L);
		al__curl.easy_setopt(h, CURLOPT_READFUNCTION, on_send);
		al__curl.easy_setopt(h, CURLOPT_READDATA, q);
		al__curl.easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)q->size);
	} else if (strcmp(q->method, "GET") != 0) {
		al__curl.easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
	}
	if (al__curl.multi_add_handle(s->m, h) != CURLM_OK)
		return al_fail(q->err, AL_EIO, 0, "s3: curl refused a request");
	s->busy[slot] = true;
	q->added = true;
	return 0;
}

/* What an attempt held, let go (its handle stays in the pool). */
static void attempt_end(struct req *q)
{
	struct s3 *s = q->s;
	if (q->added) {
		al__curl.multi_remove_handle(s->m, s->h[q->slot]);
		s->busy[q->slot] = false;
		q->added = false;
	}
	al__curl.slist_free_all(q->hdr);
	q->hdr = NULL;
	if (q->opened) {
		q->objs->close(q->opened);
		q->opened = NULL;
	}
}

static bool transient_curl(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM: return true;
	default: return false;
	}
}

static bool transient_status(long status)
{
	return status == 500 || status == 502 || status == 503 || status == 504;
}

/* The wait before attempt q->attempt + 1 (0-based attempt just failed), in
 * ns: a random point in the upper half of the doubled backoff. */
static uint64_t backoff_ns(struct s3 *s, unsigned attempt)
{
	uint64_t ms = cfg_or(s->cfg.backoff_ms, 200);
	for (unsigned i = 0; i < attempt && ms < S3_BACKOFF_CAP_MS; i++)
		ms *= 2;
	if (ms > S3_BACKOFF_CAP_MS)
		ms = S3_BACKOFF_CAP_MS;
	s->rng ^= s->rng << 13; /* xorshift64: jitter, not secrecy */
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	uint64_t half = ms * 1000000ull / 2;
	return half + s->rng % (half + 1);
}

/* The attempt of q ended with rc: q is Q_DONE with its result, or
 * Q_PENDING again with its next attempt's time. */
static void finish(struct req *q, CURLcode rc)
{
	struct s3 *s = q->s;
	CURL *h = s->h[q->slot];
	q->status = 0;
	al__curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &q->status);
	long connects = 0;
	if (al__curl.easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK && connects > 0)
		s->connects += (uint64_t)connects;
	if (!strcmp(q->method, "HEAD")) {
		q->length = -1;
		al__curl.easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &q->length);
	}
	attempt_end(q);
	q->attempt++;
	const char *ep = s->cfg.endpoint, *bucket = s->cfg.bucket;
	if (q->cb_rc < 0) {
		q->rc = q->cb_rc;
		q->state = Q_DONE;
		return;
	}
	bool transient = rc != CURLE_OK ? transient_curl(rc) : transient_status(q->status);
	uint64_t now = al_now_ns();
	bool again = q->attempt < cfg_or(s->cfg.attempts, 5) &&
		     now - q->first_ns < cfg_or(s->cfg.retry_s, 60) * 1000000000ull &&
		     (strcmp(q->method, "PUT") != 0 || q->objs || q->sent == 0) &&
		     (!q->sink || q->got == 0);
	if (transient && again) {
		q->not_before_ns = now + backoff_ns(s, q->attempt);
		q->state = Q_PENDING;
		return;
	}
	q->state = Q_DONE;
	q->rc = 0;
	if (rc == CURLE_OK && (q->status < 300 || q->status == 404))
		return; /* done: no error to word (its body may be a whole listing) */
	char tries[48] = "";
	if (q->attempt > 1)
		snprintf(tries, sizeof(tries), " (after %u attempts)", q->attempt);
	char code[80];
	error_code(&q->body, code, sizeof(code));
	if (rc != CURLE_OK)
		q->rc = al_fail(q->err, rc == CURLE_FILESIZE_EXCEEDED ? AL_ELIMIT : AL_EIO, 0,
				"s3: %s %s/%s: %s%s", q->method, ep, bucket,
				al__curl.easy_strerror(rc), tries);
	else if (q->status == 401 || q->status == 403)
		q->rc = al_fail(q->err, AL_EAUTH, 0,
				"s3: %s refused (HTTP %ld%s%s): check the credentials", q->method,
				q->status, code[0] ? " " : "", code);
	else if (q->status >= 300 && q->status != 404)
		q->rc = al_fail(q->err, AL_EIO, 0, "s3: %s failed: HTTP %ld%s%s%s", q->method,
				q->status, code[0] ? " " : "", code, tries);
}

static int ensure_multi(struct s3 *s, struct al_error *err)
{
	if (!s->m && !(s->m = al__curl.multi_init()))
		return al_fail(err, AL_ENOMEM, ENOMEM, "s3: curl");
	return 0;
}

/* Start an attempt of q (run below): 0 and one more active, or the failure
 * (q done with it, err set). */
static int launch(struct req *q, size_t *active, struct al_error *err)
{
	int r = start(q);
	if (r < 0) {
		attempt_end(q);
		q->state = Q_DONE;
		q->rc = r;
		*err = q->e;
		return r;
	}
	q->state = Q_ACTIVE;
	(*active)++;
	return 0;
}

/* Every request of qs to its end, at most cfg.parallel at once, each
 * retried as the top of this section says.  0 once all succeeded (each
 * q->status says how: a 404 is the caller's to judge); else the first
 * failure, in err, the others abandoned. */
static int run(struct s3 *s, struct req *qs, size_t n, struct al_error *err)
{
	int r = ensure_multi(s, err);
	if (r < 0)
		return r;
	size_t par = cfg_or(s->cfg.parallel, 8);
	if (par > S3_PARALLEL_MAX)
		par = S3_PARALLEL_MAX;
	size_t done = 0, active = 0, next = 0;
	/* the requests waiting for a retry, by index */
	_cleanup_free_ size_t *wait = NULL;
	size_t nwait = 0;
	int first = 0;
	for (size_t i = 0; i < n; i++) {
		qs[i].s = s;
		qs[i].err = &qs[i].e;
		qs[i].state = Q_PENDING;
		qs[i].attempt = 0;
	}
	while (done < n && first == 0) {
		uint64_t now = al_now_ns(), wake = UINT64_MAX;
		/* retries whose time has come first, then requests not yet tried */
		for (size_t w = 0; w < nwait && active < par && first == 0;) {
			struct req *q = &qs[wait[w]];
			if (q->not_before_ns > now) {
				if (q->not_before_ns < wake)
					wake = q->not_before_ns;
				w++;
				continue;
			}
			wait[w] = wait[--nwait];
			if ((first = launch(q, &active, err)) < 0)
				break;
		}
		while (next < n && active < par && first == 0) {
			struct req *q = &qs[next++];
			q->first_ns = now;
			if ((first = launch(q, &active, err)) < 0)
				break;
		}
		if (first)
			break;
		if (active == 0) {
			/* only retries are left, all waiting */
			if (wake != UINT64_MAX && wake > now) {
				uint64_t d = wake - now;
				struct timespec ts = { (time_t)(d / 1000000000ull),
						       (long)(d % 1000000000ull) };
				nanosleep(&ts, NULL);
			}
			continue;
		}
		int running = 0;
		if (al__curl.multi_perform(s->m, &running) != CURLM_OK) {
			first = al_fail(err, AL_EIO, 0, "s3: curl multi failed");
			break;
		}
		CURLMsg *msg;
		int left;
		while ((msg = al__curl.multi_info_read(s->m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			CURLcode cc = msg->data.result;
			struct req *q = NULL;
			al__curl.easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&q);
			active--;
			finish(q, cc);
			if (q->state == Q_PENDING) {
				if (!wait && !(wait = calloc(n, sizeof(*wait)))) {
					q->state = Q_DONE;
					q->rc = al_fail(&q->e, AL_ENOMEM, ENOMEM, "s3");
				} else {
					wait[nwait++] = (size_t)(q - qs);
					continue;
				}
			}
			done++;
			if (q->rc < 0 && first == 0) {
				first = q->rc;
				*err = q->e;
			}
		}
		if (first || done == n)
			break;
		int timeout = 1000;
		now = al_now_ns();
		for (size_t w = 0; w < nwait; w++)
			if (qs[wait[w]].not_before_ns < now + 1000000000ull) {
				uint64_t d = qs[wait[w]].not_before_ns > now
						     ? qs[wait[w]].not_before_ns - now
						     : 0;
				if ((int)(d / 1000000) < timeout)
					timeout = (int)(d / 1000000);
			}
		al__curl.multi_poll(s->m, NULL, 0, timeout, NULL);
	}
	/* a failure abandons what is still running */
	for (size_t i = 0; i < n; i++)
		if (qs[i].state == Q_ACTIVE) {
			attempt_end(&qs[i]);
			qs[i].state = Q_DONE;
		}
	return first;
}

/* One request, retried as run does; 0 with *status, or its failure. */
static int perform(struct req *q, struct al_error *err)
{
	return run(q->s, q, 1, err);
}

static struct s3 *s3_of(struct al_odb_backend *b)
{
	return (struct s3 *)b;
}

static int not_found(struct al_error *err, const struct al_oid *id)
{
	char hex[AL_OID_STRLEN + 1];
	al_oid_fmt(id, hex);
	return al_fail(err, AL_ENOTFOUND, 0, "object %s not found in the object store", hex);
}

static int s3_read(struct al_odb_backend *b, const struct al_oid *id, al_cas_sink sink, void *ctx,
		   struct al_error *err)
{
	struct s3 *s = s3_of(b);
	char url[1200];
	key_url(s, id, url, sizeof(url));
	_cleanup_sha_ struct al_sha *sha = al_sha_new();
	if (!sha)
		return al_fail(err, AL_ENOMEM, ENOMEM, "s3");
	struct req q = { .s = s,
			 .method = "GET",
			 .url = url,
			 .id = id,
			 .sink = sink,
			 .sink_ctx = ctx,
			 .sha = sha };
	int r = perform(&q, err);
	al_buf_release(&q.body);
	if (r < 0)
		return r;
	if (q.status == 404)
		return not_found(err, id);
	struct al_oid got;
	al_sha_final(sha, got.b);
	if (!al_oid_eq(&got, id))
		return corrupt(err, id, "digest mismatch");
	return 0;
}

static int head(struct s3 *s, const struct al_oid *id, uint64_t *size, struct al_error *err)
{
	char url[1200];
	key_url(s, id, url, sizeof(url));
	struct req q = { .s = s, .method = "HEAD", .url = url, .id = id };
	int r = perform(&q, err);
	al_buf_release(&q.body);
	if (r < 0)
		return r;
	if (q.status == 404)
		return 0;
	if (q.length < 0)
		return al_fail(err, AL_EIO, 0, "s3: HEAD answered without a length");
	*size = (uint64_t)q.length;
	return 1;
}

static int s3_read_header(struct al_odb_backend *b, const struct al_oid *id, uint64_t *size,
			  struct al_error *err)
{
	int r = head(s3_of(b), id, size, err);
	return r == 0 ? not_found(err, id) : r < 0 ? r : 0;
}

static int s3_exists(struct al_odb_backend *b, const struct al_oid *id, struct al_error *err)
{
	uint64_t size;
	return head(s3_of(b), id, &size, err);
}

/* What a PUT's answer means once run has taken it. */
static int put_result(struct s3 *s, struct req *q, struct al_error *err)
{
	if (q->status == 404)
		return al_fail(err, AL_ENOTFOUND, 0, "s3: no bucket %s at %s", s->cfg.bucket,
			       s->cfg.endpoint);
	if (q->sent != q->size)
		return al_fail(err, AL_EIO, 0, "s3: PUT ended after %llu of %llu bytes",
			       (unsigned long long)q->sent, (unsigned long long)q->size);
	return 0;
}

static int s3_write(struct al_odb_backend *b, const struct al_oid *id, uint64_t size,
		    al_odb_source src, void *ctx, struct al_error *err)
{
	struct s3 *s = s3_of(b);
	if (size > S3_MAX_OBJECT)
		return al_fail(err, AL_ELIMIT, 0, "s3: object larger than %llu bytes",
			       (unsigned long long)S3_MAX_OBJECT);
	char url[1200];
	key_url(s, id, url, sizeof(url));
	_cleanup_sha_ struct al_sha *sha = al_sha_new();
	if (!sha)
		return al_fail(err, AL_ENOMEM, ENOMEM, "s3");
	struct req q = { .s = s,
			 .method = "PUT",
			 .url = url,
			 .id = id,
			 .src = src,
			 .src_ctx = ctx,
			 .size = size,
			 .sha = sha };
	int r = perform(&q, err);
	al_buf_release(&q.body);
	return r < 0 ? r : put_result(s, &q, err);
}

/* The batch's uploads at once, each from a source opened per attempt. */
/* One request of method for each of the n (> 0) ids, with its key's URL:
 * *qs and *urls (the URLs' storage) the caller's to free. */
static int requests(struct s3 *s, const char *method, const struct al_oid *ids, size_t n,
		    struct req **qs, char **urls, struct al_error *err)
{
	char probe[1200];
	key_url(s, &ids[0], probe, sizeof(probe));
	size_t ulen = strlen(probe) + 1; /* every key's URL has the same length */
	*qs = calloc(n, sizeof(**qs));
	*urls = calloc(n, ulen);
	if (!*qs || !*urls)
		return al_fail(err, AL_ENOMEM, ENOMEM, "s3");
	for (size_t i = 0; i < n; i++) {
		key_url(s, &ids[i], *urls + i * ulen, ulen);
		(*qs)[i] = (struct req){
			.s = s, .method = method, .url = *urls + i * ulen, .id = &ids[i]
		};
	}
	return 0;
}

static int s3_write_many(struct al_odb_backend *b, const struct al_oid *ids, size_t n,
			 const struct al_odb_objects *objs, struct al_error *err)
{
	struct s3 *s = s3_of(b);
	if (n == 0)
		return 0;
	_cleanup_free_ struct req *qs = NULL;
	_cleanup_free_ char *urls = NULL;
	int r = requests(s, "PUT", ids, n, &qs, &urls, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		qs[i].objs = objs;
		if (!(qs[i].sha = al_sha_new()))
			r = al_fail(err, AL_ENOMEM, ENOMEM, "s3");
	}
	if (r == 0)
		r = run(s, qs, n, err);
	for (size_t i = 0; i < n; i++) {
		if (r == 0)
			r = put_result(s, &qs[i], err);
		al_buf_release(&qs[i].body);
		al_sha_free(qs[i].sha);
	}
	return r;
}

/* RFC 3986 unreserved stays, everything else %XX (SigV4's canonical query) */
static void uri_encode(const char *in, char *out, size_t n)
{
	size_t o = 0;
	for (; *in && o + 4 < n; in++) {
		unsigned char c = (unsigned char)*in;
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, n - o, "%%%02X", c);
	}
	out[o] = 0;
}

static void xml_unescape(char *s)
{
	static const struct {
		const char *ent;
		char c;
	} ents[] = { { "&amp;", '&' },
		     { "&lt;", '<' },
		     { "&gt;", '>' },
		     { "&quot;", '"' },
		     { "&apos;", '\'' } };
	char *w = s;
	for (const char *r = s; *r;) {
		size_t i;
		for (i = 0; i < ARRAY_SIZE(ents); i++)
			if (!strncmp(r, ents[i].ent, strlen(ents[i].ent)))
				break;
		if (i < ARRAY_SIZE(ents)) {
			*w++ = ents[i].c;
			r += strlen(ents[i].ent);
		} else {
			*w++ = *r++;
		}
	}
	*w = 0;
}

/* the text of <tag>…</tag> starting at or after p, before end; NULL if none */
static const char *xml_elem(const char *p, const char *end, const char *tag, size_t *len)
{
	char open[64], close[64];
	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	const char *s = memmem(p, (size_t)(end - p), open, strlen(open));
	if (!s)
		return NULL;
	s += strlen(open);
	const char *e = memmem(s, (size_t)(end - s), close, strlen(close));
	if (!e)
		return NULL;
	*len = (size_t)(e - s);
	return s;
}

/* "2026-11-30T12:34:56.000Z" (ListObjectsV2's LastModified) as unix
 * seconds; INT64_MAX when it is anything else (such an object never counts
 * as old). */
static int64_t iso_time(const char *p, size_t n)
{
	char buf[40];
	if (n < 20 || n >= sizeof(buf))
		return INT64_MAX;
	memcpy(buf, p, n);
	buf[n] = 0;
	struct tm tm = { 0 };
	const char *e = strptime(buf, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!e)
		return INT64_MAX;
	if (*e == '.')
		for (e++; *e >= '0' && *e <= '9'; e++)
			;
	if (strcmp(e, "Z") != 0)
		return INT64_MAX;
	time_t t = timegm(&tm);
	return t == (time_t)-1 ? INT64_MAX : (int64_t)t;
}

/* Every key of this tenant, with its size and LastModified, page by page. */
static int list(struct s3 *s, al_odb__listed_fn fn, void *ctx, struct al_error *err)
{
	char keyprefix[400], encprefix[1200], token[1024] = "", enctoken[3100];
	snprintf(keyprefix, sizeof(keyprefix), "%s%s%s/", s->cfg.prefix,
		 s->cfg.prefix[0] ? "/" : "", s->tenant);
	uri_encode(keyprefix, encprefix, sizeof(encprefix));
	size_t kplen = strlen(keyprefix);
	uint64_t keys = 0, max_keys = s->cfg.max_keys ? s->cfg.max_keys : S3_MAX_KEYS;
	for (;;) {
		/* the parameters in SigV4's canonical (sorted) order, encoded */
		_cleanup_free_ char *url = NULL;
		uri_encode(token, enctoken, sizeof(enctoken));
		char maxkeys[32] = "";
		if (s->cfg.list_page)
			snprintf(maxkeys, sizeof(maxkeys), "&max-keys=%u", s->cfg.list_page);
		if (asprintf(&url, "%s/%s?%s%s%slist-type=2%s&prefix=%s", s->cfg.endpoint,
			     s->cfg.bucket, token[0] ? "continuation-token=" : "", enctoken,
			     token[0] ? "&" : "", maxkeys, encprefix) < 0)
			return al_fail(err, AL_ENOMEM, ENOMEM, "s3");
		struct req q = { .s = s, .method = "GET", .url = url };
		int r = perform(&q, err);
		if (r == 0 && q.status == 404)
			r = al_fail(err, AL_ENOTFOUND, 0, "s3: no bucket %s at %s", s->cfg.bucket,
				    s->cfg.endpoint);
		if (r == 0 && al_buf_reserve(&q.body, 1) < 0)
			r = al_fail(err, AL_ENOMEM, ENOMEM, "s3");
		if (r < 0) {
			al_buf_release(&q.body);
			return r;
		}
		const char *p = (const char *)q.body.p, *end = p + q.body.len;
		const char *c;
		uint64_t page_keys = 0;
		while (r == 0 && (c = memmem(p, (size_t)(end - p), "<Contents>", 10))) {
			const char *ce = memmem(c, (size_t)(end - c), "</Contents>", 11);
			if (!ce)
				break;
			size_t kl = 0, sl = 0, ml = 0;
			const char *k = xml_elem(c, ce, "Key", &kl),
				   *sz = xml_elem(c, ce, "Size", &sl),
				   *mt = xml_elem(c, ce, "LastModified", &ml);
			struct al_oid id;
			if (k && kl > kplen && !memcmp(k, keyprefix, kplen))
				page_keys++; /* under the prefix: the listing moves on */
			if (k && sz && kl == kplen + HEX_LEN && !memcmp(k, keyprefix, kplen) &&
			    al_unhex(k + kplen, AL_OID_LEN, id.b) == 0 && sl > 0 && sl < 21) {
				char num[24];
				memcpy(num, sz, sl);
				num[sl] = 0;
				char *ep;
				unsigned long long size = strtoull(num, &ep, 10);
				if (*ep == 0 && ++keys > max_keys)
					r = al_fail(err, AL_ELIMIT, 0,
						    "s3: the listing has more than %llu keys",
						    (unsigned long long)max_keys);
				else if (*ep == 0)
					r = fn(ctx, &id, size, mt ? iso_time(mt, ml) : INT64_MAX,
					       err);
			}
			p = ce + 11;
		}
		size_t tl = 0, tokl = 0;
		const char *trunc = xml_elem((const char *)q.body.p, end, "IsTruncated", &tl);
		const char *tok =
			xml_elem((const char *)q.body.p, end, "NextContinuationToken", &tokl);
		bool more = trunc && tl == 4 && !memcmp(trunc, "true", 4);
		if (r == 0 && more && (!tok || tokl == 0 || tokl >= sizeof(token)))
			r = al_fail(err, AL_EIO, 0,
				    "s3: a truncated listing without a usable token");
		/* a server that would keep us listing forever: every truncated
		 * page must move on (a new token) and bring keys of ours */
		if (r == 0 && more && page_keys == 0)
			r = al_fail(err, AL_EIO, 0,
				    "s3: a truncated listing page without keys under the prefix");
		if (r == 0 && more) {
			char prev[sizeof(token)];
			memcpy(prev, token, sizeof(prev));
			memcpy(token, tok, tokl);
			token[tokl] = 0;
			xml_unescape(token);
			if (!strcmp(prev, token))
				r = al_fail(err, AL_EIO, 0,
					    "s3: the listing repeats its continuation token");
		}
		al_buf_release(&q.body);
		if (r != 0 || !more)
			return r;
	}
}

static int s3_list(struct al_odb_backend *b, al_odb__listed_fn fn, void *ctx, struct al_error *err)
{
	return list(s3_of(b), fn, ctx, err);
}

static int s3_foreach(struct al_odb_backend *b, al_odb_foreach_fn fn, void *ctx,
		      struct al_error *err)
{
	return al_odb__foreach_listed(b, s3_list, fn, ctx, err);
}

/* the DELETEs at once, as write_many's PUTs are; a 404 is an object
 * already gone (an object stored again since the listing goes too: the
 * sweep's record makes its writer upload it again, architecture.md) */
static int s3_delete(struct al_odb_backend *b, const struct al_oid *ids, size_t n, int64_t before,
		     struct al_error *err)
{
	(void)before;
	struct s3 *s = s3_of(b);
	_cleanup_free_ struct req *qs = NULL;
	_cleanup_free_ char *urls = NULL;
	int r = requests(s, "DELETE", ids, n, &qs, &urls, err);
	if (r < 0)
		return r;
	r = run(s, qs, n, err);
	for (size_t i = 0; i < n; i++)
		al_buf_release(&qs[i].body);
	return r;
}

static int s3_sweep(struct al_odb_backend *b, al_odb_keep_fn keep, al_odb_doomed_fn doomed,
		    void *ctx, int64_t before, bool dry, struct al_odb_sweep *out,
		    struct al_error *err)
{
	return al_odb__sweep_listed(b, s3_list, s3_delete, keep, doomed, ctx, before, dry, out,
				    err);
}

uint64_t al_odb_s3__connects(const struct al_odb_backend *b)
{
	return ((const struct s3 *)b)->connects;
}

/* ---- idle backends, kept with their connections ---------------------------------- */

/* The daemon opens a store, so a backend, per request and per run: a
 * backend freed is parked here, its easy handles gone but its multi
 * handle's connections open, and the next open with the same configuration
 * (any tenant: the keys are per tenant, the bucket and credentials are the
 * deployment's) takes it back.  A request on a new connection costs this
 * machine's Swift a third more than on one kept open.  Up to S3_POOL are
 * kept; parking one more frees the oldest. */
#define S3_POOL 4
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct s3 *pool[S3_POOL]; /* oldest first */
static size_t npool;

static bool cfg_same(const struct al_s3_config *a, const struct al_s3_config *b)
{
	return !strcmp(a->bucket, b->bucket) && !strcmp(a->prefix, b->prefix) &&
	       !strcmp(a->endpoint, b->endpoint) && !strcmp(a->region, b->region) &&
	       !strcmp(a->access_key, b->access_key) && !strcmp(a->secret_key, b->secret_key) &&
	       !strcmp(a->session_token, b->session_token) && a->list_page == b->list_page &&
	       a->attempts == b->attempts && a->backoff_ms == b->backoff_ms &&
	       a->retry_s == b->retry_s && a->parallel == b->parallel && a->max_keys == b->max_keys;
}

static void s3_destroy(struct s3 *s)
{
	for (int i = 0; i < S3_PARALLEL_MAX; i++)
		if (s->h[i])
			al__curl.easy_cleanup(s->h[i]);
	if (s->m)
		al__curl.multi_cleanup(s->m);
	explicit_bzero(&s->cfg, sizeof(s->cfg));
	free(s);
}

/* the newest parked backend with this configuration, taken out; NULL when none */
static struct s3 *pool_take(const struct al_s3_config *cfg)
{
	struct s3 *s = NULL;
	pthread_mutex_lock(&pool_lock);
	for (size_t i = npool; i-- > 0;) {
		if (!cfg_same(&pool[i]->cfg, cfg))
			continue;
		s = pool[i];
		memmove(&pool[i], &pool[i + 1], (npool - i - 1) * sizeof(pool[0]));
		npool--;
		break;
	}
	pthread_mutex_unlock(&pool_lock);
	return s;
}

static void s3_free(struct al_odb_backend *b)
{
	struct s3 *s = s3_of(b);
	/* the handles go (memory), the connections stay with the multi handle */
	for (int i = 0; i < S3_PARALLEL_MAX; i++) {
		if (s->h[i])
			al__curl.easy_cleanup(s->h[i]);
		s->h[i] = NULL;
		s->busy[i] = false;
	}
	if (!s->m) {
		s3_destroy(s);
		return;
	}
	struct s3 *evict = NULL;
	pthread_mutex_lock(&pool_lock);
	if (npool == S3_POOL) {
		evict = pool[0];
		memmove(&pool[0], &pool[1], (S3_POOL - 1) * sizeof(pool[0]));
		npool--;
	}
	pool[npool++] = s;
	pthread_mutex_unlock(&pool_lock);
	if (evict)
		s3_destroy(evict);
}

int al_odb_s3_open(const struct al_s3_config *cfg, const char *tenant, struct al_odb_backend **out,
		   struct al_error *err)
{
	int r = al_tenant_name_check(tenant, err);
	if (r < 0 || (r = al_curl__ready(err)) < 0)
		return r;
	struct s3 *s = pool_take(cfg);
	if (s) {
		snprintf(s->tenant, sizeof(s->tenant), "%s", tenant);
		*out = &s->base;
		return 0;
	}
	if (!(s = calloc(1, sizeof(*s))))
		return al_fail(err, AL_ENOMEM, ENOMEM, "s3");
	s->cfg = *cfg;
	snprintf(s->tenant, sizeof(s->tenant), "%s", tenant);
	snprintf(s->sigv4, sizeof(s->sigv4), "aws:amz:%s:s3", cfg->region);
	s->rng = al_now_ns() ^ (uint64_t)(uintptr_t)s ^ ((uint64_t)getpid() << 32);
	if (!s->rng)
		s->rng = 1;
	s->base = (struct al_odb_backend){
		.version = AL_ODB_BACKEND_VERSION,
		.name = "s3",
		.read = s3_read,
		.read_header = s3_read_header,
		.write = s3_write,
		.exists = s3_exists,
		.foreach = s3_foreach,
		.free = s3_free,
		.write_many = s3_write_many,
		.sweep = s3_sweep,
	};
	*out = &s->base;
	return 0;
}
