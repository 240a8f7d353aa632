/* The CLI as a client of airlockd (--server URL or AIRLOCK_URL, with
 * AIRLOCK_TOKEN): one HTTP request per verb through libcurl; the answer is
 * the same JSON document the embedded verb builds (src/front/view.c), so
 * the output is the same. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "airlock/dl_archive.h"
#include "airlock/manifest.h"
#include "cli.h"
#include "dl_curl.h"
#include "airlock/util.h"
#include "view.h"

#define RESPONSE_MAX (512u << 20)

struct buf {
	char *p;
	size_t n, cap;
	FILE *file; /* a download goes here instead */
	bool too_big;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct buf *b = ud;
	size_t n = size * nmemb;
	if (b->file)
		return fwrite(ptr, 1, n, b->file);
	if (b->n + n > RESPONSE_MAX) {
		b->too_big = true;
		return 0;
	}
	if (b->n + n + 1 > b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 8192;
		while (nc < b->n + n + 1)
			nc *= 2;
		char *q = realloc(b->p, nc);
		if (!q)
			return 0;
		b->p = q;
		b->cap = nc;
	}
	memcpy(b->p + b->n, ptr, n);
	b->n += n;
	b->p[b->n] = 0;
	return n;
}

/* What a raw GET gives back instead of a JSON document. */
struct raw {
	char *data;
	size_t len;
	char state[16]; /* X-Airlock-Run-State */
};

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct raw *raw = ud;
	size_t len = size * n;
	static const char h[] = "x-airlock-run-state:";
	if (len > sizeof(h) - 1 && strncasecmp(p, h, sizeof(h) - 1) == 0) {
		const char *v = p + sizeof(h) - 1;
		size_t vl = len - (sizeof(h) - 1);
		while (vl && (*v == ' ')) {
			v++;
			vl--;
		}
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
			vl--;
		snprintf(raw->state, sizeof(raw->state), "%.*s", (int)vl, v);
	}
	return len;
}

/* libcurl's transfer callback: an upload's or a download's progress */
static int on_xfer(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		   curl_off_t ulnow)
{
	struct cli_progress *p = ctx;
	bool up = p->what[0] == 'u';
	curl_off_t total = up ? ultotal : dltotal, now = up ? ulnow : dlnow;
	if (total > 0)
		p->total_bytes = (uint64_t)total;
	cli_progress_cb(p, 0, now > 0 ? (uint64_t)now : 0);
	return 0;
}

static int http_raw(struct cli *cli, const char *method, const char *path, json_t *body,
		    const char *upload, const char *upload_type, const char *download, json_t **out,
		    struct raw *raw, struct al_error *err);

static int http(struct cli *cli, const char *method, const char *path, json_t *body,
		const char *upload, const char *upload_type, const char *download, json_t **out,
		struct al_error *err)
{
	return http_raw(cli, method, path, body, upload, upload_type, download, out, NULL, err);
}

int cli_http_get_raw(struct cli *cli, const char *path, char **data, size_t *len, char state[16],
		     struct al_error *err)
{
	struct raw raw = { 0 };
	json_t *doc = NULL;
	int r = http_raw(cli, "GET", path, NULL, NULL, NULL, NULL, &doc, &raw, err);
	json_decref(doc);
	*data = raw.data;
	*len = raw.len;
	snprintf(state, 16, "%s", raw.state);
	return r;
}

static int http_raw(struct cli *cli, const char *method, const char *path, json_t *body,
		    const char *upload, const char *upload_type, const char *download, json_t **out,
		    struct raw *raw, struct al_error *err)
{
	*out = NULL;
	int lr = dl_load_curl(err);
	if (lr < 0)
		return lr;
	if (!cli->token || !*cli->token)
		return al_fail(err, AL_EAUTH, 0, "--server needs a token: set AIRLOCK_TOKEN");
	CURL *c = dl_curl.easy_init();
	if (!c)
		return al_fail(err, AL_ENOMEM, ENOMEM, "curl");
	char url[8192], auth[AL_TOKEN_LEN + 64];
	size_t bl = strlen(cli->server);
	while (bl && cli->server[bl - 1] == '/')
		bl--;
	snprintf(url, sizeof(url), "%.*s/api%s", (int)bl, cli->server, path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", cli->token);
	struct curl_slist *h = dl_curl.slist_append(NULL, auth);
	struct buf b = { 0 };
	char *payload = NULL;
	FILE *up = NULL;
	int rc = 0;
	if (download && !(b.file = fopen(download, "wbe")))
		rc = al_fail(err, AL_EIO, errno, "%s", download);
	if (rc == 0 && upload) {
		struct stat sb;
		if (!(up = fopen(upload, "rbe")) || fstat(fileno(up), &sb) < 0)
			rc = al_fail(err, AL_EIO, errno, "%s", upload);
		else {
			char ct[128];
			snprintf(ct, sizeof(ct), "Content-Type: %s", upload_type);
			h = dl_curl.slist_append(h, ct);
			dl_curl.easy_setopt(c, CURLOPT_UPLOAD, 1L);
			dl_curl.easy_setopt(c, CURLOPT_READDATA, up);
			dl_curl.easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)sb.st_size);
		}
	} else if (rc == 0 && body) {
		payload = json_dumps(body, JSON_COMPACT);
		h = dl_curl.slist_append(h, "Content-Type: application/json");
		dl_curl.easy_setopt(c, CURLOPT_POSTFIELDS, payload ? payload : "{}");
	}
	dl_curl.easy_setopt(c, CURLOPT_URL, url);
	dl_curl.easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	dl_curl.easy_setopt(c, CURLOPT_HTTPHEADER, h);
	dl_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	dl_curl.easy_setopt(c, CURLOPT_WRITEDATA, &b);
	if (raw) {
		dl_curl.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
		dl_curl.easy_setopt(c, CURLOPT_HEADERDATA, raw);
	}
	dl_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	dl_curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	dl_curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (cli->ca_cert && *cli->ca_cert)
		dl_curl.easy_setopt(c, CURLOPT_CAINFO, cli->ca_cert);
	char cerr[CURL_ERROR_SIZE] = "";
	dl_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	struct cli_progress prog;
	cli_progress_init(&prog, upload ? "upload" : "download", 0);
	if (upload || download) {
		dl_curl.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_xfer);
		dl_curl.easy_setopt(c, CURLOPT_XFERINFODATA, &prog);
		dl_curl.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	}
	long status = 0;
	if (rc == 0) {
		CURLcode cc = dl_curl.easy_perform(c);
		dl_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		if (cc != CURLE_OK && !(b.file && status >= 400))
			rc = al_fail(err, b.too_big ? AL_ELIMIT : AL_EIO, 0, "%s %s: %s", method,
				     url,
				     b.too_big ? "answer too large"
				     : cerr[0] ? cerr
					       : dl_curl.easy_strerror(cc));
	}
	cli_progress_done(&prog);
	if (b.file && fclose(b.file) != 0 && rc == 0)
		rc = al_fail(err, AL_EIO, errno, "%s", download);
	if (up)
		fclose(up);
	if (rc == 0 && status >= 400 && download) {
		/* the error document went to the file: read it back */
		FILE *f = fopen(download, "re");
		json_t *doc = f ? json_loadf(f, 0, NULL) : NULL;
		if (f)
			fclose(f);
		unlink(download);
		const char *code =
			json_string_value(json_object_get(json_object_get(doc, "error"), "code"));
		const char *msg = json_string_value(
			json_object_get(json_object_get(doc, "error"), "message"));
		rc = al_fail(err, code ? al_code_from_name(code) : AL_EIO, 0, "%s",
			     msg ? msg : "server error");
		*out = doc;
	} else if (rc == 0 && !download) {
		json_t *doc = b.n ? json_loadb(b.p, b.n, 0, NULL) : NULL;
		if (status >= 400) {
			const char *code = json_string_value(
				json_object_get(json_object_get(doc, "error"), "code"));
			const char *msg = json_string_value(
				json_object_get(json_object_get(doc, "error"), "message"));
			rc = al_fail(err, code ? al_code_from_name(code) : AL_EIO, 0, "%s",
				     msg ? msg : "server error");
			if (!code)
				al_fail(err, AL_EIO, 0, "%s %s: HTTP %ld", method, url, status);
		} else if (raw) {
			json_decref(doc);
			doc = NULL;
			raw->data = b.p;
			raw->len = b.n;
			b.p = NULL;
		} else if (!doc) {
			rc = al_fail(err, AL_ECORRUPT, 0, "%s %s: the answer is not JSON", method,
				     url);
		}
		*out = doc;
	}
	if (payload)
		explicit_bzero(payload, strlen(payload)); /* a run request holds its secrets */
	free(payload);
	free(b.p);
	dl_curl.slist_free_all(h);
	dl_curl.easy_cleanup(c);
	explicit_bzero(auth, sizeof(auth));
	return rc;
}

int cli_http(struct cli *cli, const char *method, const char *path, json_t *body,
	     const char *upload, const char *download, json_t **out, struct al_error *err)
{
	return http(cli, method, path, body, upload, "application/octet-stream", download, out,
		    err);
}

/* A directory as a tar archive in a temporary file, then POSTed. */
static int tar_dir(const char *dir, int fd, struct al_error *err);

int cli_http_tree(struct cli *cli, const char *path, const char *dir, json_t **out,
		  struct al_error *err)
{
	*out = NULL;
	char tmp[4096];
	const char *td = getenv("TMPDIR");
	snprintf(tmp, sizeof(tmp), "%s/airlock-upload-XXXXXX", td && *td ? td : "/tmp");
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return al_fail(err, AL_EIO, errno, "temporary file in %s", td && *td ? td : "/tmp");
	int r = tar_dir(dir, fd, err);
	close(fd);
	if (r == 0)
		r = http(cli, "POST", path, NULL, tmp, "application/x-tar", NULL, out, err);
	unlink(tmp);
	return r;
}

static int tar_dir(const char *dir, int fd, struct al_error *err)
{
	_cleanup_locale_ locale_t prev = al_c_locale_enter(); /* names as bytes (util.h) */
	if (dl_load_archive(err) < 0)
		return err->code;
	struct archive *disk = dl_archive_read_disk_new(), *w = dl_archive_write_new();
	struct archive_entry *e = dl_archive_entry_new();
	int r = 0;
	if (!disk || !w || !e)
		r = al_fail(err, AL_ENOMEM, ENOMEM, "tar");
	if (r == 0) {
		dl_archive.write_set_format_pax_restricted(w);
		dl_archive.read_disk_set_symlink_physical(disk);
		dl_archive.read_disk_set_standard_lookup(disk);
		if (dl_archive.write_open_fd(w, fd) != ARCHIVE_OK ||
		    dl_archive.read_disk_open(disk, dir) != ARCHIVE_OK)
			r = al_fail(err, AL_EIO, 0, "%s: %s", dir, dl_archive.error_string(disk));
	}
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	while (r == 0) {
		dl_archive.entry_clear(e);
		int rc = dl_archive.read_next_header2(disk, e);
		if (rc == ARCHIVE_EOF)
			break;
		if (rc != ARCHIVE_OK) {
			r = al_fail(err, AL_EIO, 0, "%s: %s", dir, dl_archive.error_string(disk));
			break;
		}
		dl_archive.read_disk_descend(disk);
		const char *p = dl_archive.entry_pathname(e);
		if (!p || strncmp(p, dir, dl) != 0 || (p[dl] != '/' && p[dl] != 0))
			continue;
		if (!p[dl] || !p[dl + 1])
			continue; /* the directory itself */
		mode_t t = dl_archive.entry_filetype(e);
		if (t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK) {
			/* as the local import: a special file is refused, not skipped */
			r = al_fail(err, AL_EINVAL, 0,
				    "%s: unsupported file type (not a file, directory or symlink)",
				    p);
			break;
		}
		char rel[4096];
		snprintf(rel, sizeof(rel), "%s", p + dl + 1);
		const char *why;
		if (!al_path_valid(rel, &why)) {
			/* refused here as the local import refuses it */
			char q[300];
			al_quote(rel, strnlen(rel, 200), q, sizeof(q));
			r = al_fail(err, AL_EINVAL, 0, "cannot import %s: %s", q, why);
			break;
		}
		dl_archive.entry_set_pathname(e, rel);
		dl_archive.entry_set_uid(e, 0);
		dl_archive.entry_set_gid(e, 0);
		dl_archive.entry_set_uname(e, NULL);
		dl_archive.entry_set_gname(e, NULL);
		if (!al_archive_written_ok(w, dl_archive.write_header(w, e))) {
			r = al_fail(err, AL_EIO, 0, "%s: %s", p, dl_archive.error_string(w));
			break;
		}
		if (t == AE_IFREG && dl_archive.entry_size(e) > 0) {
			char full[8192];
			snprintf(full, sizeof(full), "%s",
				 dl_archive.entry_sourcepath(e) ? dl_archive.entry_sourcepath(e)
								: p);
			int in = open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (in < 0) {
				r = al_fail(err, AL_EIO, errno, "%s", full);
				break;
			}
			static char buf[1 << 16];
			ssize_t n;
			while ((n = read(in, buf, sizeof(buf))) > 0)
				if (dl_archive.write_data(w, buf, (size_t)n) != n) {
					r = al_fail(err, AL_EIO, 0, "tar: %s",
						    dl_archive.error_string(w));
					break;
				}
			if (n < 0 && r == 0)
				r = al_fail(err, AL_EIO, errno, "%s", full);
			close(in);
		}
	}
	if (w && dl_archive.write_close(w) != ARCHIVE_OK && r == 0)
		r = al_fail(err, AL_EIO, 0, "tar: %s", dl_archive.error_string(w));
	dl_archive.entry_free(e);
	dl_archive.read_free(disk);
	dl_archive.write_free(w);
	return r;
}

/* A refused commit in words: what happened, what to do next */
static void conflict_advice(struct cli *cli, json_t *e)
{
	const char *head = json_string_value(json_object_get(e, "head"));
	json_t *paths = json_object_get(e, "paths");
	if (*cli->change_base)
		fprintf(stderr,
			"\nThe project's head moved from %s (the base this change was made from)\n"
			"to %s, and the strategy refused to combine them.\n",
			cli_short(cli->change_base), cli_short(head));
	else
		fprintf(stderr,
			"\nThe project's head moved to %s since the snapshot this change was made\n"
			"from (its base), and the strategy refused to combine them.\n",
			cli_short(head));
	if (json_array_size(paths)) {
		fprintf(stderr, "Both changed %zu path%s:\n", json_array_size(paths),
			json_array_size(paths) == 1 ? "" : "s");
		size_t i;
		json_t *p;
		json_array_foreach(paths, i, p) {
			if (i == 20) {
				fprintf(stderr, "  (and %zu more)\n", json_array_size(paths) - 20);
				break;
			}
			fprintf(stderr, "  %s\n", cli_esc(json_string_value(p), "?"));
		}
	}
	fprintf(stderr,
		"What next: retry with --strategy conflict_copy (the head's version is kept and\n"
		"yours is written beside it as a conflict copy), or --strategy rebase_if_disjoint\n"
		"when no path overlaps; or make the change again on the new head (base %s).\n",
		cli_short(head));
}

int cli_remote_error(struct cli *cli, const struct al_error *err, json_t *doc)
{
	fprintf(stderr, "%s: %s\n", cli->prog, err->msg);
	if (err->code == AL_ECONFLICT && !cli->json) {
		json_t *e = json_object_get(doc, "error");
		if (json_is_object(e) && json_is_string(json_object_get(e, "head")))
			conflict_advice(cli, e);
	}
	if (cli->json)
		cli_json_print(doc && json_object_get(doc, "error") ? json_incref(doc)
								    : view_error(err, NULL));
	json_decref(doc);
	return al_code_exit(err->code);
}

int cli_remote_get(struct cli *cli, const char *path, json_t **out)
{
	struct al_error err = { 0 };
	json_t *doc = NULL;
	if (cli_http(cli, "GET", path, NULL, NULL, NULL, &doc, &err) < 0)
		return cli_remote_error(cli, &err, doc);
	*out = doc;
	return -1;
}
