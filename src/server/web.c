/* web: the UI's pages and assets, same origin as the API (docs/api.md,
 * "The web UI").  Every page path answers the one index.html (the
 * script routes on the client), never cached; assets have content-hashed
 * names and are cached for a year.  Every answer carries a strict
 * Content-Security-Policy: scripts and styles from this origin only, no
 * inline script, no framing, no plugins, and Trusted Types (one policy: the
 * worker script of the page's own origin), so no script of
 * the page can hand a string to an HTML sink.  The files are built into the
 * binary (web_assets.h), so nothing is read from disk or fetched. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "airlock/cas.h"
#include "airlock/store.h"
#include "airlock/util.h"
#include "server.h"
#include "web_assets.h"

/* Each page, one a line (tests/api/check.mjs reads this table like the API's). */
struct page {
	const char *method, *pattern;
};
static const struct page pages[] = {
	{ "GET", "/" },
	{ "GET", "/login" },
	{ "GET", "/projects/{name}" },
	{ "GET", "/drafts/{id}" },
	{ "GET", "/runs/{id}" },
	{ "GET", "/audit" },
	{ "GET", "/assets/{file}" },
};

#define CSP                                                                         \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " \
	"connect-src 'self'; worker-src 'self'; font-src 'self'; base-uri 'none'; " \
	"form-action 'self'; frame-ancestors 'none'; object-src 'none'; "           \
	"require-trusted-types-for 'script'; trusted-types airlock-worker"

static const char *type_of(const char *path)
{
	static const struct {
		const char *ext, *type;
	} types[] = {
		{ ".html", "text/html; charset=utf-8" },
		{ ".js", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" },
		{ ".svg", "image/svg+xml" },
		{ ".png", "image/png" },
		{ ".woff2", "font/woff2" },
		{ ".json", "application/json" },
	};
	const char *dot = strrchr(path, '.');
	for (size_t i = 0; dot && i < ARRAY_SIZE(types); i++)
		if (strcmp(dot, types[i].ext) == 0)
			return types[i].type;
	return "application/octet-stream";
}

static const struct web_asset *asset(const char *path)
{
	for (size_t i = 0; i < web_nassets; i++)
		if (strcmp(web_assets[i].path, path) == 0)
			return &web_assets[i];
	return NULL;
}

static bool accepts_gzip(struct req *rq)
{
	const char *ae =
		dl_mhd.lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Accept-Encoding");
	if (!ae)
		return false;
	/* "gzip" as a coding of the list, not refused with q=0 */
	for (const char *p = ae; (p = strcasestr(p, "gzip")) != NULL; p += 4) {
		bool start = p == ae || p[-1] == ' ' || p[-1] == ',';
		const char *q = p + 4 + strspn(p + 4, " ");
		if (!start || (*q && *q != ',' && *q != ';'))
			continue;
		return !(*q == ';' && strncmp(q + strspn(q, "; "), "q=0", 3) == 0 &&
			 strspn(q + strspn(q, "; ") + 3, ".0") == strlen(q + strspn(q, "; ") + 3));
	}
	return false;
}

static int send_asset(struct req *rq, const struct web_asset *a, bool immutable)
{
	bool gz = a->gz && accepts_gzip(rq);
	const unsigned char *p = gz ? a->gz : a->data, *end = gz ? a->gz_end : a->end;
	if (srv_bytes(rq, 200, type_of(a->path), p, (size_t)(end - p)) < 0)
		return -1;
	struct MHD_Response *r = rq->resp;
	/* srv_bytes set no-store; a page's HTML is revalidated, an asset kept */
	dl_mhd.del_response_header(r, "Cache-Control", "no-store");
	dl_mhd.del_response_header(r, "Content-Security-Policy", SRV_API_CSP);
	dl_mhd.add_response_header(r, "Cache-Control",
				   immutable ? "public, max-age=31536000, immutable" : "no-cache");
	if (gz)
		dl_mhd.add_response_header(r, "Content-Encoding", "gzip");
	if (a->gz)
		dl_mhd.add_response_header(r, "Vary", "Accept-Encoding");
	dl_mhd.add_response_header(r, "Content-Security-Policy", CSP);
	dl_mhd.add_response_header(r, "Referrer-Policy", "no-referrer");
	dl_mhd.add_response_header(r, "X-Frame-Options", "DENY");
	dl_mhd.add_response_header(r, "Cross-Origin-Opener-Policy", "same-origin");
	dl_mhd.add_response_header(r, "Cross-Origin-Resource-Policy", "same-origin");
	return 0;
}

/* Does url match pattern ("/drafts/{id}": one non-empty segment per wildcard)? */
static bool page_match(const char *pattern, const char *url)
{
	while (*pattern && *url) {
		if (*pattern == '{') {
			size_t n = strcspn(url, "/");
			if (!n)
				return false;
			url += n;
			pattern = strchr(pattern, '}');
			if (!pattern)
				return false;
			pattern++;
			continue;
		}
		if (*pattern++ != *url++)
			return false;
	}
	return !*pattern && !*url;
}

int srv_web(struct req *rq, const char *url)
{
	/* libmicrohttpd hands the path without its query */
	const struct page *pg = NULL;
	bool known = false;
	for (size_t i = 0; i < ARRAY_SIZE(pages) && !pg; i++)
		if (page_match(pages[i].pattern, url)) {
			known = true;
			if (strcmp(pages[i].method, rq->method) == 0)
				pg = &pages[i];
		}
	if (!pg) {
		rq->route = known ? "/(page)" : "/(none)";
		if (!known)
			return srv_fail(rq, AL_ENOTFOUND, "no page here");
		char allow[64] = "";
		size_t len = 0;
		for (size_t i = 0; i < ARRAY_SIZE(pages); i++)
			if (page_match(pages[i].pattern, url) && !strstr(allow, pages[i].method)) {
				int w = snprintf(allow + len, sizeof(allow) - len, "%s%s",
						 len ? ", " : "", pages[i].method);
				if (w < 0 || (size_t)w >= sizeof(allow) - len)
					break;
				len += (size_t)w;
			}
		srv_method_not_allowed(rq, allow);
		return 0;
	}
	rq->route = pg->pattern;
	bool is_asset = strncmp(pg->pattern, "/assets/", 8) == 0;
	const struct web_asset *a = asset(is_asset ? url : "/index.html");
	if (!a || (is_asset && strstr(url, "..")))
		return srv_fail(rq, AL_ENOTFOUND, "no page here");
	return send_asset(rq, a, is_asset);
}

/* ---- images -----------------------------------------------------------------------
 * GET /api/blobs/{id}/image?type=png|jpeg|gif|webp|svg: a blob as an image
 * for the review page's <img> (which never runs an image's scripts), with
 * the type the page asks for (from the file's name) -- a raster type only
 * if the bytes begin as that format does -- under the API's CSP sandbox,
 * so the same URL opened as a document runs and loads nothing either. */
#define IMAGE_MAX (32u << 20)

static const struct image_type {
	const char *name, *type;
	const char *magic;
	size_t magic_len, magic_at;
} image_types[] = {
	{ "png", "image/png", "\x89PNG\r\n\x1a\n", 8, 0 },
	{ "jpeg", "image/jpeg", "\xff\xd8\xff", 3, 0 },
	{ "gif", "image/gif", "GIF8", 4, 0 },
	{ "webp", "image/webp", "WEBP", 4, 8 },
	{ "svg", "image/svg+xml", NULL, 0, 0 },
};

int h_blob_image(struct req *rq)
{
	const char *want = srv_query(rq, "type");
	const struct image_type *it = NULL;
	for (size_t i = 0; want && i < ARRAY_SIZE(image_types); i++)
		if (strcmp(want, image_types[i].name) == 0)
			it = &image_types[i];
	struct al_oid id;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	uint64_t size = 0;
	int rc = al_oid_parse(rq->seg[1], &id, &err);
	if (rc == 0 && !it)
		rc = al_fail(&err, AL_EINVAL, 0, "type is one of png, jpeg, gif, webp, svg");
	if (rc == 0)
		rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = al_cas_size(al_store_cas(st), &id, &size, &err);
	if (rc == 0 && size > IMAGE_MAX)
		rc = al_fail(&err, AL_ELIMIT, 0, "an image of %llu bytes: over %u",
			     (unsigned long long)size, IMAGE_MAX);
	if (rc == 0 && it->magic) {
		unsigned char head[16] = { 0 };
		struct al_cas_reader *r = NULL;
		int64_t n = 0;
		rc = al_cas_reader_open(al_store_cas(st), &id, &r, &err);
		if (rc == 0 && (n = al_cas_reader_read(r, head, sizeof(head), &err)) < 0)
			rc = (int)n;
		al_cas_reader_close(r);
		if (rc == 0 && ((size_t)n < it->magic_at + it->magic_len ||
				memcmp(head + it->magic_at, it->magic, it->magic_len) != 0))
			rc = al_fail(&err, AL_EINVAL, 0, "the blob is not a %s image", it->name);
	}
	if (rc < 0) {
		srv_stores_give(st);
		return srv_error(rq, &err);
	}
	srv_object(rq, al_store_cas(st), &id, 0, it->type);
	srv_stores_give(st);
	return 0;
}
