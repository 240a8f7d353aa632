/* http: what a handler answers with (server.h): JSON, errors, bytes and
 * ranges, stored objects streamed, the request body, the tenant's store,
 * roles and project visibility, and a request suspended while it waits.
 * Below the route table (server.c) and the handlers; calls neither. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "airlock/cas.h"
#include "airlock/store.h"
#include "airlock/util.h"
#include "server.h"
#include "view.h"

/* ---- answers -------------------------------------------------------------------- */

static int answer(struct req *rq, int status, struct MHD_Response *r, const char *type)
{
	if (!r)
		return -1;
	if (type)
		dl_mhd.add_response_header(r, "Content-Type", type);
	dl_mhd.add_response_header(r, "Cache-Control", "no-store");
	dl_mhd.add_response_header(r, "X-Content-Type-Options", "nosniff");
	dl_mhd.add_response_header(r, "Content-Security-Policy", SRV_API_CSP);
	if (rq->resp)
		dl_mhd.destroy_response(rq->resp);
	rq->resp = r;
	rq->status = status;
	return 0;
}

int srv_bytes(struct req *rq, int status, const char *type, const void *p, size_t n)
{
	return answer(rq, status,
		      dl_mhd.create_response_from_buffer(n, (void *)p, MHD_RESPMEM_MUST_COPY),
		      type);
}

int srv_json(struct req *rq, int status, json_t *body)
{
	char *s = body ? json_dumps(body, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(body);
	if (!s) {
		static const char oom[] =
			"{\"error\":{\"code\":\"OutOfMemory\",\"message\":\"out of memory\"}}";
		return srv_bytes(rq, 503, "application/json", oom, sizeof(oom) - 1);
	}
	size_t n = strlen(s);
	s[n] = '\n'; /* one line, like the CLI's --json; the NUL is not sent */
	return answer(rq, status,
		      dl_mhd.create_response_from_buffer(n + 1, s, MHD_RESPMEM_MUST_FREE),
		      "application/json");
}

int srv_error(struct req *rq, const struct al_error *err)
{
	return srv_json(rq, al_code_http(err->code), view_error(err, NULL));
}

int srv_fail(struct req *rq, int code, const char *fmt, ...)
{
	struct al_error err = { .code = code };
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err.msg, sizeof(err.msg), fmt, ap);
	va_end(ap);
	return srv_error(rq, &err);
}

int srv_method_not_allowed(struct req *rq, const char *allow)
{
	char msg[128];
	snprintf(msg, sizeof(msg), "method %s not allowed here (allowed: %s)", rq->method, allow);
	int r = srv_json(
		rq, 405,
		json_pack("{s:{s:s,s:s}}", "error", "code", "MethodNotAllowed", "message", msg));
	if (rq->resp)
		dl_mhd.add_response_header(rq->resp, "Allow", allow);
	return r;
}

int srv_fd(struct req *rq, int status, const char *type, int fd, uint64_t size)
{
	struct MHD_Response *r = dl_mhd.create_response_from_fd64(size, fd);
	if (!r) {
		close(fd);
		return srv_fail(rq, AL_EIO, "response");
	}
	return answer(rq, status, r, type);
}

const char *srv_query(struct req *rq, const char *key)
{
	return dl_mhd.lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, key);
}

/* RFC 9110 14.1.2: bytes=A-B, A-, -N; anything else is ignored (200). */
int srv_range(struct req *rq, uint64_t len, uint64_t *from, uint64_t *n)
{
	const char *h =
		dl_mhd.lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_RANGE);
	if (!h || strncmp(h, "bytes=", 6) != 0 || strchr(h, ','))
		return 0;
	const char *p = h + 6;
	char *end;
	uint64_t a, b;
	if (*p == '-') { /* the last N bytes */
		if (p[1] < '0' || p[1] > '9')
			return 0;
		errno = 0;
		uint64_t k = strtoull(p + 1, &end, 10);
		if (*end || errno)
			return 0;
		a = k == 0 ? len : k >= len ? 0 : len - k; /* bytes=-0 is not satisfiable */
		b = len ? len - 1 : 0;
	} else {
		if (*p < '0' || *p > '9')
			return 0;
		errno = 0;
		a = strtoull(p, &end, 10);
		if (errno || *end != '-')
			return 0;
		if (end[1] == 0) {
			b = len ? len - 1 : 0;
		} else {
			if (end[1] < '0' || end[1] > '9')
				return 0;
			b = strtoull(end + 1, &end, 10);
			if (errno || *end || b < a)
				return 0;
			if (b >= len)
				b = len ? len - 1 : 0;
		}
	}
	if (a >= len) {
		srv_fail(rq, AL_EUSAGE, "range not satisfiable: the body has %llu bytes",
			 (unsigned long long)len);
		rq->status = 416;
		char cr[64];
		snprintf(cr, sizeof(cr), "bytes */%llu", (unsigned long long)len);
		dl_mhd.add_response_header(rq->resp, "Content-Range", cr);
		return -1;
	}
	*from = a;
	*n = b - a + 1;
	return 1;
}

static void ranged_headers(struct req *rq, int ranged, uint64_t from, uint64_t n, uint64_t len)
{
	dl_mhd.add_response_header(rq->resp, "Accept-Ranges", "bytes");
	if (ranged == 1) {
		char cr[96];
		snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)from,
			 (unsigned long long)(from + n - 1), (unsigned long long)len);
		dl_mhd.add_response_header(rq->resp, "Content-Range", cr);
	}
}

int srv_bytes_ranged(struct req *rq, const char *type, const void *p, size_t len, uint64_t offset)
{
	size_t base = offset < len ? (size_t)offset : len;
	uint64_t visible = len - base, from = 0, n = visible;
	int ranged = srv_range(rq, visible, &from, &n);
	if (ranged < 0)
		return 0;
	if (srv_bytes(rq, ranged ? 206 : 200, type, (const char *)p + base + from, (size_t)n) < 0)
		return -1;
	ranged_headers(rq, ranged, from, n, visible);
	return 0;
}

struct object_stream {
	struct al_cas_reader *r;
	uint64_t left; /* bytes of the answer still to send */
	bool to_end;   /* the answer ends where the object does */
	char route[64];
};

static ssize_t object_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos; /* sequential: libmicrohttpd asks for each piece once, in order */
	struct object_stream *os = cls;
	struct al_error err = { 0 };
	size_t want = max < os->left ? max : (size_t)os->left;
	int64_t n = want ? al_cas_reader_read(os->r, buf, want, &err) : 0;
	if (n >= 0 && (uint64_t)n == os->left && !os->to_end)
		/* a range short of the end: verify the rest before its last piece goes */
		if (al_cas_reader_skip(os->r, al_cas_reader_size(os->r), &err) < 0)
			n = -1;
	if (n <= 0) {
		fprintf(stderr, "airlock serve: /api/%s: %s: connection aborted\n", os->route,
			n < 0 ? err.msg : "object ended early");
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	os->left -= (uint64_t)n;
	return (ssize_t)n;
}

static void object_free(void *cls)
{
	struct object_stream *os = cls;
	al_cas_reader_close(os->r);
	free(os);
}

int srv_object(struct req *rq, struct al_cas *cas, const struct al_oid *id, uint64_t offset,
	       const char *type)
{
	struct al_error err = { 0 };
	struct al_cas_reader *r = NULL;
	if (al_cas_reader_open(cas, id, &r, &err) < 0)
		return srv_error(rq, &err);
	uint64_t size = al_cas_reader_size(r);
	uint64_t base = offset < size ? offset : size, visible = size - base, from = 0, n = visible;
	int ranged = srv_range(rq, visible, &from, &n);
	if (ranged < 0) {
		al_cas_reader_close(r);
		return 0;
	}
	struct object_stream *os = calloc(1, sizeof(*os));
	if (!os) {
		al_cas_reader_close(r);
		return srv_fail(rq, AL_ENOMEM, "out of memory");
	}
	os->r = r;
	os->left = n;
	os->to_end = base + from + n == size;
	snprintf(os->route, sizeof(os->route), "%s", rq->route);
	if (al_cas_reader_skip(r, base + from, &err) < 0) {
		object_free(os);
		return srv_error(rq, &err);
	}
	struct MHD_Response *resp;
	if (n == 0) { /* nothing to send; an empty object is verified now */
		int64_t v = al_cas_reader_read(r, NULL, 0, &err);
		object_free(os);
		if (v < 0)
			return srv_error(rq, &err);
		resp = dl_mhd.create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	} else {
		resp = dl_mhd.create_response_from_callback(n, 32 * 1024, object_read, os,
							    object_free);
		if (!resp)
			object_free(os);
	}
	if (!resp)
		return srv_fail(rq, AL_ENOMEM, "response");
	if (answer(rq, ranged ? 206 : 200, resp, type) < 0)
		return -1;
	ranged_headers(rq, ranged, from, n, visible);
	return 0;
}

int srv_body_json(struct req *rq, json_t **out)
{
	struct al_error err = { 0 };
	*out = NULL;
	if (!rq->len) {
		*out = json_object();
		return 0;
	}
	if (decode_body(rq->body, rq->len, out, &err) < 0)
		return srv_error(rq, &err), -1;
	return 0;
}

int srv_store(struct req *rq, struct al_store **out, struct al_error *err)
{
	*out = NULL;
	if (!rq->authed || !rq->who.tenant[0])
		return al_fail(err, AL_EAUTH, 0, "not authenticated");
	return srv_stores_take(rq->srv->cfg.home, rq->who.tenant, out, err);
}

int srv_serve(struct req *rq, int status, srv_view_fn fn)
{
	struct al_store *st = NULL;
	struct al_error err = { 0 };
	json_t *out = NULL;
	int rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = fn(rq, st, &out, &err);
	srv_stores_give(st);
	if (rc < 0) {
		json_decref(out);
		return srv_error(rq, &err);
	}
	return srv_json(rq, status, out);
}

int srv_no_project(struct req *rq, const char *name)
{
	return srv_fail(rq, AL_ENOTFOUND, "no project %s", name); /* al_project_get's words */
}

bool srv_role(struct req *rq, unsigned roles)
{
	return (rq->who.roles & roles) != 0;
}

bool srv_project_visible(struct req *rq, const char *project)
{
	if (srv_role(rq, AL_ROLE_ADMIN | AL_ROLE_AUTHOR | AL_ROLE_REVIEWER)) /* server.c's READ */
		return true;
	return al_auth_granted(rq->srv->auth, &rq->who, project);
}

/* ---- waiting ---------------------------------------------------------------- */

void srv_suspend(void *ctx)
{
	struct req *rq = ctx;
	rq->suspended = true;
	dl_mhd.suspend_connection(rq->conn);
}

void srv_resume(void *ctx)
{
	struct req *rq = ctx;
	if (rq->suspended) {
		rq->suspended = false;
		dl_mhd.resume_connection(rq->conn);
	}
}
