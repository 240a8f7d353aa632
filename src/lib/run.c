/* run: a command in a sandbox, its changes as a draft (run.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "airlock/cas.h"
#include "airlock/delta.h"
#include "airlock/dl_archive.h"
#include "airlock/gc.h"
#include "airlock/image.h"
#include "airlock/manifest.h"
#include "airlock/overlay.h"
#include "airlock/policy.h"
#include "airlock/run.h"
#include "run_contract.h"
#include "airlock/store.h"
#include "cas_private.h"
#include "delta_private.h"
#include "gc_private.h"
#include "integ_private.h"
#include "ledger_private.h"
#include "net_private.h"
#include "run_private.h"
#include "db.h"
#include "store_private.h"
#include "util.h"
#include "volume_private.h"

#define JSON_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)
#define ARGV_MAX 4096
#define ENV_MAX 1024
#define ARGS_BYTES_MAX (256u << 10)

void al_run_info_release(struct al_run_info *r)
{
	if (r) {
		free(r->record);
		r->record = NULL;
	}
}

static json_t *jid(const struct al_oid *d)
{
	char s[AL_OID_STRLEN + 1];
	al_oid_fmt(d, s);
	return json_string(s);
}

/* ---- lower layers: a snapshot materialised once, owned by the sandbox ------- */

/* <tenant>/lower/<hex>-<uid>: complete when it has its name (exported under
 * a temporary name, synced, renamed); never written after.  *lock holds it
 * in use for the run (the collector skips it, gc.c). */
static int lower_ensure(struct al_store *st, int lowers, const struct al_oid *id, uint32_t uid,
			uint32_t gid, char name[96], int *lock, struct al_error *err)
{
	char hex[65];
	al_hex(id->b, AL_OID_LEN, hex);
	snprintf(name, 96, "%s-%u", hex, uid);
	if ((*lock = al_gc__layer_use(lowers, name, err)) < 0)
		return *lock;
	struct stat s;
	if (fstatat(lowers, name, &s, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(s.st_mode))
		return 0;
	uint8_t rnd[6];
	char rhex[13], tmp[128], path[4400];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return al_fail(err, AL_EIO, errno, "run: random");
	al_hex(rnd, sizeof(rnd), rhex);
	snprintf(tmp, sizeof(tmp), ".tmp-%s", rhex);
	snprintf(path, sizeof(path), "%s/lower/%s", al_store_dir(st), tmp);
	/* held while the temporary directory exists: lower_sweep removes only
	 * what no live process is writing */
	char tlock[160];
	snprintf(tlock, sizeof(tlock), "%s.lock", tmp);
	_cleanup_close_ int lk =
		openat(lowers, tlock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lk < 0 || flock(lk, LOCK_EX) < 0)
		return al_fail(err, AL_EIO, errno, "run: lock %s", tlock);
	struct al_export_opts eo = { .chown = geteuid() == 0, .uid = uid, .gid = gid };
	int r = al_manifest_export(al_store_cas(st), id, path, &eo, err);
	if (r == 0 && syncfs(lowers) < 0)
		r = al_fail(err, AL_EIO, errno, "run: sync the materialised snapshot");
	if (r == 0 && renameat(lowers, tmp, lowers, name) < 0 && errno != EEXIST &&
	    errno != ENOTEMPTY)
		r = al_fail(err, AL_EIO, errno, "run: publish the materialised snapshot");
	if (r < 0 || fstatat(lowers, tmp, &s, AT_SYMLINK_NOFOLLOW) == 0)
		al_rm_tree(path); /* failed, or another run published it first */
	unlinkat(lowers, tlock, 0);
	return r < 0 ? al_error_prefix(err, "run: materialise %s: ", hex) : 0;
}

/* Temporary layers of a materialisation that was killed (kill -9, a power
 * cut): a .tmp-X whose X.lock no process holds. */
static void lower_sweep(struct al_store *st, int lowers)
{
	int fd = dup(lowers);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (strncmp(e->d_name, ".tmp-", 5) ||
		    (n > 5 && !strcmp(e->d_name + n - 5, ".lock")) || n > 100)
			continue;
		char path[4400];
		snprintf(path, sizeof(path), "%s/lower/%s", al_store_dir(st), e->d_name);
		if (al_gc__staging_dead(lowers, e->d_name))
			al_rm_tree(path);
	}
	closedir(d);
}

/* ---- environment -------------------------------------------------------------- */

static bool env_name_ok(const char *kv, size_t *namelen)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv)
		return false;
	for (const char *p = kv; p < eq; p++)
		if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (p > kv && *p >= '0' && *p <= '9')))
			return false;
	*namelen = (size_t)(eq - kv);
	return true;
}

struct env {
	const char *v[ENV_MAX + 8];
	size_t n;
};

static int env_set(struct env *e, const char *kv, struct al_error *err)
{
	size_t nl;
	if (!env_name_ok(kv, &nl))
		return al_fail(err, AL_EUSAGE, 0,
			       "bad environment variable name '%.*s' (NAME=VALUE)",
			       (int)strcspn(kv, "=") < 64 ? (int)strcspn(kv, "=") : 64,
			       kv); /* never the value: it may be a secret */
	for (size_t i = 0; i < e->n; i++)
		if (!strncmp(e->v[i], kv, nl + 1)) {
			e->v[i] = kv;
			return 0;
		}
	if (e->n >= ENV_MAX)
		return al_fail(err, AL_ELIMIT, 0, "more than %d environment variables", ENV_MAX);
	e->v[e->n++] = kv;
	return 0;
}

/* Variables in the order of their names (as the record lists them), so a
 * replay, built from the record, gives the command the same environ. */
static int env_cmp(const void *pa, const void *pb)
{
	const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
	size_t la = strcspn(a, "="), lb = strcspn(b, "=");
	int c = memcmp(a, b, la < lb ? la : lb);
	return c ? c : (la > lb) - (la < lb);
}

static bool env_has(const struct env *e, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < e->n; i++)
		if (!strncmp(e->v[i], name, n) && e->v[i][n] == '=')
			return true;
	return false;
}

static int count_args(const char *const *v, size_t max, size_t *bytes, const char *what,
		      struct al_error *err)
{
	size_t n = 0;
	for (; v && v[n]; n++) {
		*bytes += strlen(v[n]) + 1;
		if (n >= max || *bytes > ARGS_BYTES_MAX)
			return al_fail(err, AL_ELIMIT, 0, "%s too long", what);
	}
	return (int)n;
}

/* ---- secret masking -------------------------------------------------------------- */

/* What the command prints of a secret is stored as "***", the way CI
 * systems mask logs: the value (4 bytes or more) and, for values of 8 or
 * more, its base64 (without padding) and URL-encoded forms.  A form split
 * across two reads is still found: what could be the start of one is held
 * back until the next read (or the end). */
#define MASK_MIN 4
#define MASK_FORMS_MIN 8
struct masker {
	char **pat;
	size_t *len, n, maxlen;
	bool first[256];
	char *pend[3];
	size_t npend[3];
};

static void masker_release(struct masker *m)
{
	for (size_t i = 0; i < m->n; i++) {
		explicit_bzero(m->pat[i], m->len[i]);
		free(m->pat[i]);
	}
	for (int i = 0; i < 3; i++) {
		if (m->pend[i])
			explicit_bzero(m->pend[i], m->npend[i]);
		free(m->pend[i]);
	}
	free(m->pat);
	free(m->len);
	memset(m, 0, sizeof(*m));
}

static int masker_add(struct masker *m, char *p, size_t n)
{
	if (!p)
		return -1;
	for (size_t i = 0; i < m->n; i++)
		if (m->len[i] == n && !memcmp(m->pat[i], p, n)) {
			free(p);
			return 0;
		}
	char **np = realloc(m->pat, (m->n + 1) * sizeof(char *));
	if (np)
		m->pat = np;
	size_t *nl = np ? realloc(m->len, (m->n + 1) * sizeof(size_t)) : NULL;
	if (!nl) {
		free(p);
		return -1;
	}
	m->len = nl;
	/* longest first: a value and its longer encoding, the longer wins */
	size_t at = 0;
	while (at < m->n && m->len[at] >= n)
		at++;
	memmove(m->pat + at + 1, m->pat + at, (m->n - at) * sizeof(char *));
	memmove(m->len + at + 1, m->len + at, (m->n - at) * sizeof(size_t));
	m->pat[at] = p;
	m->len[at] = n;
	m->n++;
	m->first[(unsigned char)p[0]] = true;
	if (n > m->maxlen)
		m->maxlen = n;
	return 0;
}

static char *b64(const char *v, size_t n)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *o = malloc(4 * (n / 3 + 1) + 1), *q = o;
	if (!o)
		return NULL;
	const unsigned char *u = (const unsigned char *)v;
	size_t i = 0;
	for (; i + 2 < n; i += 3) {
		*q++ = t[u[i] >> 2];
		*q++ = t[((u[i] & 3) << 4) | (u[i + 1] >> 4)];
		*q++ = t[((u[i + 1] & 15) << 2) | (u[i + 2] >> 6)];
		*q++ = t[u[i + 2] & 63];
	}
	if (i < n) {
		*q++ = t[u[i] >> 2];
		*q++ = t[((u[i] & 3) << 4) | (i + 1 < n ? u[i + 1] >> 4 : 0)];
		if (i + 1 < n)
			*q++ = t[(u[i + 1] & 15) << 2];
	}
	*q = 0;
	return o;
}

static char *urlenc(const char *v, size_t n)
{
	char *o = malloc(3 * n + 1), *q = o;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    strchr("-._~", c))
			*q++ = (char)c;
		else
			q += snprintf(q, 4, "%%%02X", c);
	}
	*q = 0;
	return o;
}

static int masker_secret(struct masker *m, const char *v)
{
	size_t n = strlen(v);
	if (n < MASK_MIN)
		return 0;
	char *raw = strdup(v);
	if (masker_add(m, raw, n) < 0)
		return -1;
	if (n < MASK_FORMS_MIN)
		return 0;
	char *e = b64(v, n), *u = urlenc(v, n);
	/* with its padding too, so no '=' of it is left beside the mask */
	char *padded = e && n % 3 ? malloc(strlen(e) + 3) : NULL;
	if (padded)
		snprintf(padded, strlen(e) + 3, "%s%s", e, n % 3 == 1 ? "==" : "=");
	int r = e ? masker_add(m, e, strlen(e)) : -1;
	if (r == 0 && padded)
		r = masker_add(m, padded, strlen(padded));
	if (r == 0 && u && strcmp(u, v))
		r = masker_add(m, u, strlen(u));
	else
		free(u);
	return u ? r : -1;
}

typedef void (*emit_fn)(void *ctx, int stream, const void *p, size_t n);

/* Feed n bytes of stream through the masker to emit; final: nothing more
 * comes (no form can continue). */
static void masker_feed(struct masker *m, int stream, const char *p, size_t n, bool final,
			emit_fn emit, void *ctx)
{
	size_t len = m->npend[stream] + n;
	char *buf = malloc(len ? len : 1);
	if (!buf) { /* out of memory: nothing is emitted unmasked */
		emit(ctx, stream, "***", 3);
		return;
	}
	if (m->npend[stream])
		memcpy(buf, m->pend[stream], m->npend[stream]);
	if (n)
		memcpy(buf + m->npend[stream], p, n);
	if (m->pend[stream])
		explicit_bzero(m->pend[stream], m->npend[stream]);
	free(m->pend[stream]);
	m->pend[stream] = NULL;
	m->npend[stream] = 0;
	size_t start = 0, i = 0, hold = len;
	while (i < len) {
		size_t matched = 0;
		bool partial = false;
		if (m->first[(unsigned char)buf[i]])
			for (size_t k = 0; k < m->n && !matched; k++) {
				size_t left = len - i;
				if (left >= m->len[k]) {
					if (!memcmp(buf + i, m->pat[k], m->len[k]))
						matched = m->len[k];
				} else if (!final && !memcmp(buf + i, m->pat[k], left))
					partial = true;
			}
		if (matched) {
			if (i > start)
				emit(ctx, stream, buf + start, i - start);
			emit(ctx, stream, "***", 3);
			i += matched;
			start = i;
		} else if (partial) {
			hold = i;
			break;
		} else
			i++;
	}
	size_t end = hold < len ? hold : len;
	if (end > start)
		emit(ctx, stream, buf + start, end - start);
	if (hold < len && (m->pend[stream] = malloc(len - hold))) {
		memcpy(m->pend[stream], buf + hold, len - hold);
		m->npend[stream] = len - hold;
	}
	explicit_bzero(buf, len);
	free(buf);
}

/* ---- output capture ------------------------------------------------------------- */

struct capture {
	int fd[3];
	uint64_t kept[3];
	bool truncated[3];
	int write_errno;
	uint64_t limit;
	al_sandbox_output_fn live;
	void *live_ctx;
	struct masker mask;
};

static void keep_output(void *ctx, int stream, const void *p, size_t n)
{
	struct capture *c = ctx;
	uint64_t room = c->limit > c->kept[stream] ? c->limit - c->kept[stream] : 0;
	size_t keep = n < room ? n : (size_t)room;
	if (keep < n)
		c->truncated[stream] = true;
	if (!keep)
		return;
	if (al_write_full(c->fd[stream], p, keep) < 0 && !c->write_errno)
		c->write_errno = errno;
	c->kept[stream] += keep;
	if (c->live)
		c->live(c->live_ctx, stream, p, keep);
}

static void on_output(void *ctx, int stream, const void *p, size_t n)
{
	struct capture *c = ctx;
	if (c->mask.n)
		masker_feed(&c->mask, stream, p, n, false, keep_output, c);
	else
		keep_output(c, stream, p, n);
}

/* ---- the record ----------------------------------------------------------------- */

/* A new row's place in listing order (runs.seq, meta.db migration 5): one
 * past the greatest, as SQLite's rowid was, written in the row's statement
 * (its write transaction, or alone: atomic on either engine). */
#define RUN_SEQ "(SELECT COALESCE(MAX(seq), 0) + 1 FROM runs)"
/* a running attempt's row: no draft, its provisional record's outcome
 * (the partial index runs_running has this very condition: keep them the
 * same, or the index is not used) */
#define RUNNING_ATTEMPT "draft IS NULL AND record LIKE '%\"outcome\":\"running\"%'"

struct rec_ctx {
	struct al_store *st;
	const char *id, *project;
	json_t *record; /* completed with the draft id inside the transaction */
	char *text;
};

/* In the draft's transaction, through the metadata seam (db.h): the row
 * replaced by DELETE and INSERT, alike on both engines. */
static int record_hook(void *ctx, struct al_db *db, const struct al_draft_info *d,
		       struct al_error *err)
{
	struct rec_ctx *c = ctx;
	json_object_set_new(c->record, "draft", json_string(d->id));
	json_object_set_new(c->record, "group", json_string(d->group));
	if (!(c->text = json_dumps(c->record, JSON_FLAGS)))
		return al_fail(err, AL_ENOMEM, ENOMEM, "run record");
	_cleanup_db_stmt_ struct al_db_stmt *del = NULL, *ins = NULL;
	int r = al_db_prepare(db, "DELETE FROM runs WHERE id = ?1", &del, err);
	if (r == 0)
		r = al_db_prepare(db,
				  "INSERT INTO runs(id, project, grp, draft, created, record, seq) "
				  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, " RUN_SEQ ")",
				  &ins, err);
	if (r < 0)
		return r;
	al_db_bind_text(del, 1, c->id, -1);
	al_db_bind_text(ins, 1, c->id, -1);
	al_db_bind_text(ins, 2, c->project, -1);
	al_db_bind_text(ins, 3, d->group, -1);
	al_db_bind_text(ins, 4, d->id, -1);
	al_db_bind_int64(ins, 5, json_integer_value(json_object_get(c->record, "started")));
	al_db_bind_text(ins, 6, c->text, -1);
	if ((r = al_db_step(del, err)) < 0 || (r = al_db_step(ins, err)) < 0)
		return al_error_prefix(err, "record run: ");
	/* the ledger keeps the record itself: the command, its policy and
	 * limits, its status, the digests of its outputs, bundle and draft */
	struct al_ledger_rec lr = { .kind = "run",
				    .group = d->group,
				    .project = c->project,
				    .actor =
					    json_string_value(json_object_get(c->record, "author")),
				    .data = c->record };
	return al_ledger__append_db(c->st, db, &lr, NULL, err);
}

static json_t *limits_json(const struct al_limits *l)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "memory", (json_int_t)l->memory,
			 "pids", (json_int_t)l->pids, "cpus_milli", (json_int_t)l->cpus_milli,
			 "timeout_ms", (json_int_t)l->timeout_ms, "output", (json_int_t)l->output,
			 "disk", (json_int_t)l->disk, "files", (json_int_t)l->files,
			 "egress_connections", (json_int_t)l->connections, "egress_bytes",
			 (json_int_t)l->egress_bytes);
}

/* Text that may not be UTF-8: as is when it is, else escaped (\xNN). */
static json_t *jtext(const char *s)
{
	json_t *j = json_string(s);
	if (j)
		return j;
	size_t n = strlen(s), cap = 4 * n + 1;
	char *q = malloc(cap);
	if (!q)
		return NULL;
	al_quote(s, n, q, cap);
	j = json_string(q);
	free(q);
	return j;
}

static json_t *strings_json(const char *const *v)
{
	json_t *a = json_array();
	for (size_t i = 0; v && v[i]; i++)
		json_array_append_new(a, jtext(v[i]));
	return a;
}

/* ---- the run ---------------------------------------------------------------------- */

struct run {
	struct al_store *st;
	const struct al_run_opts *o;
	const struct al_run__ext *x; /* a replay's (may be NULL) */
	int64_t source_date;         /* SOURCE_DATE_EPOCH (0: not set by airlock) */
	char id[AL_RUN_ID_LEN + 1];
	struct al_oid base, image, result, bundle_id, bundle_blob, out_blob, err_blob;
	int lowers, init, lock_img, lock_ws;
	char lower_img[96], lower_ws[96];
	struct capture cap;
	struct al_limits limits; /* the run's, by policy */
	struct al_sandbox_result sres;
	struct al_overlay_report rep;
	uint64_t added, modified, deleted;
	int64_t started, finished;
	uint64_t materialise_ms, delta_ms;
	bool throttled;
	const char *phase; /* where an attempt is: its failure's outcome names it */
	bool ran;          /* the sandbox ran (its output is there to keep) */
	int lock;          /* runs/<id>.lock, held while the attempt lasts */
	bool disk_full;    /* the run's disk tmpfs had no block left */
	struct run_contracts contracts;
	json_t *verdict; /* the record's "contract", or NULL */
	bool blocked;    /* its draft is made blocked */
	uint64_t contract_ms;
	const char *backend;          /* the sandbox's ("ns", "vm") */
	struct al_net_proxy *proxy;   /* network egress */
	struct al_integ_relay *integ; /* integrations */
	pthread_t preload;            /* libarchive, loaded while the changes are collected */
	bool preloading;
	bool grouped; /* the store's batch of the collection is open (collect_begin) */
};

static void set_phase(struct run *r, const char *phase)
{
	r->phase = phase;
	if (r->o->phase)
		r->o->phase(r->o->phase_ctx, phase);
}

static void throttle(struct run *r, bool enter)
{
	if (r->o->throttle && r->throttled != enter)
		r->o->throttle(r->o->throttle_ctx, enter);
	r->throttled = enter;
}

static void run_release(struct run *r)
{
	if (r->preloading)
		pthread_join(r->preload, NULL);
	if (r->lowers >= 0)
		close(r->lowers);
	if (r->init >= 0)
		close(r->init);
	if (r->lock_img >= 0)
		close(r->lock_img);
	if (r->lock_ws >= 0)
		close(r->lock_ws);
	for (int i = 1; i < 3; i++)
		if (r->cap.fd[i] >= 0)
			close(r->cap.fd[i]);
	if (r->sres.upper_fd >= 0)
		close(r->sres.upper_fd);
	masker_release(&r->cap.mask);
	al_run__contracts_release(&r->contracts);
	json_decref(r->verdict);
	if (r->lock >= 0) {
		char p[4200];
		snprintf(p, sizeof(p), "%s/runs/%s.lock", al_store_dir(r->st), r->id);
		unlink(p); /* before the lock goes: a recovery never sees it free and present */
		close(r->lock);
	}
	al_overlay_report_release(&r->rep);
	al_net__proxy_free(r->proxy);
	al_integ__relay_free(r->integ);
}

static int put_capture(struct al_cas *cas, int fd, uint64_t size, struct al_oid *out,
		       struct al_error *err)
{
	if (lseek(fd, 0, SEEK_SET) < 0)
		return al_fail(err, AL_EIO, errno, "run: rewind output");
	return al_cas_put_fd(cas, fd, size, out, err);
}

/* The changes as a DeltaBundle, stored, read back and verified, and the
 * snapshot it gives on the base: the draft's content. */
static int open_capture(const char *dir, int *fd, struct al_error *err)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	*fd = open(tmp, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	return *fd < 0 ? al_fail(err, AL_EIO, errno, "run: output file in %s", tmp) : 0;
}

static void *load_archive(void *arg)
{
	(void)arg;
	dl_load_archive(NULL); /* its error, if any, is the bundle's to report */
	return NULL;
}

/* The collection met a path only libarchive writes into the bundle:
 * libarchive (11 shared libraries, about 5 ms) loads on another thread
 * while the rest is collected.  Every other bundle is written without it
 * (delta.c). */
static void preload_archive(void *ctx)
{
	struct run *r = ctx;
	if (!r->preloading)
		r->preloading = pthread_create(&r->preload, NULL, load_archive, NULL) == 0;
}

/* While the command runs this thread only waits: it loads what the
 * record needs first, so it does not load it after: OpenSSL's
 * configuration and provider for the ledger entry's signature (about
 * 0.8 ms), and the signing key (read if it exists: a missing one is made
 * where it is needed).  What fails here fails again, and is reported,
 * where it is needed. */
static void meanwhile(void *ctx)
{
	struct run *r = ctx;
	al_crypto_ready();
	al_store__ledger_key_ready(r->st);
}

/* The collection, the contracts' edits, the bundle and the outputs go
 * into one batch of the store (al_cas__group: their own batches join
 * it): their objects become durable together, in one sync of objects.db
 * instead of one for the collection and one for the bundle, before the
 * record names any.  Small objects are held in memory meanwhile, so
 * objects.db's write lock is taken at the end, not for the contracts or
 * the bundle; a collection that took it already (a large file, more
 * than the held objects' bound) is committed at once instead, as before
 * (collect_split). */
static int collect_begin(struct run *r, struct al_error *err)
{
	struct al_cas *cas = al_store_cas(r->st);
	int rc = al_cas__group(cas, true, err);
	if (rc == 0 && (rc = al_cas_begin(cas, err)) < 0)
		al_cas__group(cas, false, NULL);
	r->grouped = rc == 0;
	return rc;
}

/* The batch made durable (keep), or dropped. */
static int collect_end(struct run *r, bool keep, struct al_error *err)
{
	if (!r->grouped)
		return 0;
	struct al_cas *cas = al_store_cas(r->st);
	/* the group ended first: should an inner batch be left open, the
	 * commit below is still the outer one's */
	al_cas__group(cas, false, NULL);
	r->grouped = false;
	if (!keep) {
		al_cas_abort(cas);
		return 0;
	}
	return al_cas_commit(cas, err); /* a failed commit drops the batch */
}

/* A collection that holds objects.db's write lock commits now, and the
 * rest goes into a batch of its own: other writers do not wait on the
 * contracts and the bundle. */
static int collect_split(struct run *r, struct al_error *err)
{
	if (!r->grouped || !al_cas__locked(al_store_cas(r->st)))
		return 0;
	int rc = collect_end(r, true, err);
	return rc < 0 ? rc : collect_begin(r, err);
}

static int bundle_changes(struct run *r, struct al_error *err)
{
	struct al_cas *cas = al_store_cas(r->st);
	_cleanup_close_ int fd = -1;
	int rc = open_capture(al_store_dir(r->st), &fd,
			      err); /* an unnamed temp file: never left behind */
	if (rc < 0 ||
	    (rc = al_bundle_write_fd(cas, &r->base, &r->result, fd, &r->bundle_id, err)) < 0)
		return rc;
	off_t size = lseek(fd, 0, SEEK_CUR);
	if (size < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return al_fail(err, AL_EIO, errno, "run: bundle");
	if ((rc = al_cas_begin(cas, err)) < 0)
		return rc;
	struct al_bundle b = { 0 };
	struct al_oid content;
	/* read back: it must reproduce the run's snapshot (a bundle of no
	 * change is its index alone, written without libarchive: reading it
	 * would load the library for nothing) */
	bool none = al_oid_eq(&r->base, &r->result);
	if ((rc = al_cas_put_fd(cas, fd, (uint64_t)size, &r->bundle_blob, err)) == 0 && !none &&
	    lseek(fd, 0, SEEK_SET) == 0 && (rc = al_bundle__read_own_fd(cas, fd, &b, err)) == 0 &&
	    (rc = al_bundle_apply_tree(cas, &b, &r->base, &content, err)) == 0 &&
	    !al_oid_eq(&content, &r->result))
		rc = al_fail(err, AL_ECORRUPT, 0,
			     "run: the bundle does not reproduce the run's snapshot");
	for (size_t i = 0; rc == 0 && i < b.n; i++)
		*(b.entries[i].op == 'A'   ? &r->added
		  : b.entries[i].op == 'M' ? &r->modified
					   : &r->deleted) += 1;
	if (rc == 0 &&
	    (rc = put_capture(cas, r->cap.fd[1], r->cap.kept[1], &r->out_blob, err)) == 0)
		rc = put_capture(cas, r->cap.fd[2], r->cap.kept[2], &r->err_blob, err);
	al_bundle_release(&b);
	return rc < 0 ? (al_cas_abort(cas), rc) : al_cas_commit(cas, err);
}

/* One word for what became of a run that ended (docs/formats.md): the
 * first that applies of cancelled, timeout, oom, limit: disk|files|output,
 * ok. */
static const char *outcome(const struct run *r)
{
	const struct al_sandbox_result *s = &r->sres;
	if (s->cancelled)
		return "cancelled";
	if (s->timed_out)
		return "timeout";
	if (s->oom)
		return "oom";
	if (r->rep.limit_hit || s->disk_full)
		return "limit: disk";
	if (s->files_full)
		return "limit: files";
	if (r->cap.truncated[1] || r->cap.truncated[2])
		return "limit: output";
	return "ok";
}

static json_t *record_json(struct run *r, const char *const *envv, size_t nenv,
			   const uint8_t key[AL_SECRET_KEY_LEN])
{
	const struct al_run_opts *o = r->o;
	json_t *env = json_object();
	for (size_t i = 0; i < nenv; i++) {
		const char *eq = strchr(envv[i], '=');
		char k[256];
		snprintf(k, sizeof(k), "%.*s", (int)(eq - envv[i]), envv[i]);
		json_object_set_new(env, k, jtext(eq + 1));
	}
	/* a secret's name and digest are recorded, its value never: the
	 * variable leaves the recorded environment (it may have replaced a
	 * plain one) */
	json_t *secrets = json_array();
	for (int file = 0; file < 2; file++) {
		const char *const *v = file ? o->secret_files : o->secrets;
		for (size_t i = 0; v && v[i]; i++) {
			const char *eq = strchr(v[i], '=');
			char k[256];
			uint8_t d[AL_DIGEST_LEN];
			unsigned dl = sizeof(d);
			char hex[65], tagged[80];
			snprintf(k, sizeof(k), "%.*s", (int)(eq - v[i]), v[i]);
			/* keyed: a short secret's plain digest would be brute-forced from
			 * an export; the key never leaves the deployment */
			if (!HMAC(EVP_sha256(), key, AL_SECRET_KEY_LEN,
				  (const unsigned char *)eq + 1, strlen(eq + 1), d, &dl))
				memset(d, 0, sizeof(d));
			al_hex(d, sizeof(d), hex);
			snprintf(tagged, sizeof(tagged), "hmac-sha256:%s", hex);
			if (!file)
				json_object_del(env, k);
			json_array_append_new(secrets,
					      json_pack("{s:s,s:s,s:s}", "name", k, "as",
							file ? "file" : "env", "hmac", tagged));
		}
	}
	json_t *notes = json_array();
	for (size_t i = 0; i < r->rep.nnotes; i++)
		json_array_append_new(notes, jtext(r->rep.notes[i]));
	const struct al_sandbox_result *s = &r->sres;
	json_t *rec = json_pack(
		"{s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:s,s:o,s:s,s:s,s:i,s:b,s:b,"
		"s:{s:o,s:I,s:I,s:b},s:{s:o,s:I,s:I,s:b},"
		"s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I},s:o,s:{s:I,s:I,s:I},s:o,s:o,s:I,s:I}",
		"id", r->id, "project", o->project, "author", o->author ? o->author : "", "base",
		jid(&r->base), "image", jid(&r->image), "argv", strings_json(o->argv), "env", env,
		"secrets", secrets, "network", al_network_name(o->network), "limits",
		limits_json(&r->limits), "backend", r->backend, "cgroup", s->cgroup, "exit_code",
		s->exit_code, "timed_out", s->timed_out, "oom", s->oom, "stdout", "blob",
		jid(&r->out_blob), "bytes", (json_int_t)s->stdout_bytes, "kept",
		(json_int_t)r->cap.kept[1], "truncated", r->cap.truncated[1], "stderr", "blob",
		jid(&r->err_blob), "bytes", (json_int_t)s->stderr_bytes, "kept",
		(json_int_t)r->cap.kept[2], "truncated", r->cap.truncated[2], "usage", "wall_ms",
		(json_int_t)s->wall_ms, "cpu_user_ms", (json_int_t)s->cpu_user_ms, "cpu_sys_ms",
		(json_int_t)s->cpu_sys_ms, "max_rss_kb", (json_int_t)s->max_rss_kb, "peak_memory",
		(json_int_t)s->peak_memory, "materialise_ms", (json_int_t)r->materialise_ms,
		"delta_ms", (json_int_t)r->delta_ms, "result", jid(&r->result), "changes", "added",
		(json_int_t)r->added, "modified", (json_int_t)r->modified, "deleted",
		(json_int_t)r->deleted, "neutralised", notes, "bundle",
		json_pack("{s:o,s:o}", "id", jid(&r->bundle_id), "blob", jid(&r->bundle_blob)),
		"started", (json_int_t)r->started, "finished", (json_int_t)r->finished);
	/* the outputs travel with the ledger's export (audit export) */
	if (rec)
		json_object_set_new(rec, "content",
				    json_pack("[{s:s,s:o},{s:s,s:o}]", "name", "stdout", "sha256",
					      jid(&r->out_blob), "name", "stderr", "sha256",
					      jid(&r->err_blob)));
	if (rec)
		json_object_set_new(rec, "enforced",
				    json_pack("{s:b,s:b,s:b,s:b,s:b,s:b,s:b}", "memory",
					      s->memory_enforced, "pids", s->pids_enforced, "cpus",
					      s->cpu_enforced, "timeout", 1, "output", 1, "disk", 1,
					      "files", 1));
	if (rec) {
		json_object_set_new(rec, "cancelled", json_boolean(s->cancelled));
		json_object_set_new(rec, "principal",
				    o->principal ? json_string(o->principal) : json_null());
	}
	/* what the run left past its disk limit (apparent sizes): the dropped
	 * paths are in "neutralised" too; a full disk names the file written
	 * last as possibly truncated (docs/formats.md, "disk_limit") */
	if (rec) {
		bool hit = r->rep.limit_hit || r->disk_full;
		json_object_set_new(rec, "disk_limit_hit", json_boolean(hit));
		json_object_set_new(rec, "dropped", json_integer((json_int_t)r->rep.dropped));
		json_t *cut = json_array(), *dropped = json_array();
		if (r->disk_full && r->rep.newest && r->rep.newest_kept)
			json_array_append_new(cut, jtext(r->rep.newest));
		for (size_t i = 0; i < r->rep.ndropped_paths; i++)
			json_array_append_new(dropped, jtext(r->rep.dropped_paths[i]));
		if (hit)
			json_object_set_new(rec, "disk_limit",
					    json_pack("{s:I,s:b,s:o,s:o,s:I}", "limit",
						      (json_int_t)r->limits.disk, "full",
						      r->disk_full, "truncated", cut, "dropped",
						      dropped, "dropped_count",
						      (json_int_t)r->rep.dropped));
		else {
			json_decref(cut);
			json_decref(dropped);
		}
	}
	/* a vm run: the VM's size and acceleration, the guest's own times */
	if (rec && s->vm.used)
		json_object_set_new(
			rec, "vm",
			json_pack("{s:s,s:I,s:I,s:I,s:I,s:I}", "accel", s->vm.kvm ? "kvm" : "tcg",
				  "vcpus", (json_int_t)s->vm.vcpus, "memory_mib",
				  (json_int_t)s->vm.memory_mib, "boot_ms",
				  (json_int_t)s->vm.boot_ms, "setup_ms", (json_int_t)s->vm.setup_ms,
				  "collect_ms", (json_int_t)s->vm.collect_ms));
	if (rec && s->vm.used && s->vm.boots > 1)
		json_object_set_new(json_object_get(rec, "vm"), "boots",
				    json_integer((json_int_t)s->vm.boots));
	if (rec && s->vm.used && s->vm.relay_error[0])
		json_object_set_new(json_object_get(rec, "vm"), "relay_error",
				    json_string(s->vm.relay_error));
	if (rec && s->exit_code > 128)
		json_object_set_new(rec, "signal", json_integer(s->exit_code - 128));
	/* what was held fixed for this run (docs/determinism.md) */
	if (rec) {
		json_t *pin = json_pack("{s:I,s:b}", "cpus", (json_int_t)s->cpus, "time_namespace",
					s->time_namespace);
		if (r->source_date)
			json_object_set_new(pin, "source_date_epoch", json_integer(r->source_date));
		json_object_set_new(rec, "pinned", pin);
	}
	/* every connection the run's proxy saw, allowed or refused */
	if (rec && r->proxy)
		json_object_set_new(rec, "egress", al_net__proxy_json(r->proxy));
	else if (rec && o->network == AL_NET_EGRESS)
		json_object_set_new(rec, "egress",
				    json_pack("{s:o}", "allow", strings_json(o->egress_allow)));
	/* every call through the run's integrations, refused ones too */
	if (rec && r->integ)
		json_object_set_new(rec, "integrations", al_integ__relay_json(r->integ));
	if (rec)
		json_object_set_new(rec, "outcome", json_string(outcome(r)));
	return rec;
}

static int fill_info(struct al_run_info *out, const char *text, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	if (!j)
		return al_fail(err, AL_ECORRUPT, 0, "run record: %s", je.text);
	const char *id = NULL, *group = NULL, *project = NULL;
	json_int_t started = 0;
	/* a failed attempt has no draft, exit status or changes */
	int rc = json_unpack(j, "{s:s,s:s,s:s,s:I}", "id", &id, "group", &group, "project",
			     &project, "started", &started);
	if (rc == 0) {
		json_t *c = json_object_get(j, "changes"), *x = json_object_get(j, "exit_code");
		snprintf(out->id, sizeof(out->id), "%s", id);
		snprintf(out->draft, sizeof(out->draft), "%s",
			 json_is_string(json_object_get(j, "draft"))
				 ? json_string_value(json_object_get(j, "draft"))
				 : "");
		snprintf(out->group, sizeof(out->group), "%s", group);
		snprintf(out->project, sizeof(out->project), "%s", project);
		out->exit_code = json_is_integer(x) ? (int)json_integer_value(x) : -1;
		out->timed_out = json_is_true(json_object_get(j, "timed_out"));
		out->oom = json_is_true(json_object_get(j, "oom"));
		out->cancelled = json_is_true(json_object_get(j, "cancelled"));
		out->added = (uint64_t)json_integer_value(json_object_get(c, "added"));
		out->modified = (uint64_t)json_integer_value(json_object_get(c, "modified"));
		out->deleted = (uint64_t)json_integer_value(json_object_get(c, "deleted"));
		out->created = started;
	}
	json_decref(j);
	if (rc < 0)
		return al_fail(err, AL_ECORRUPT, 0, "run record: missing fields");
	if (!(out->record = strdup(text)))
		return al_fail(err, AL_ENOMEM, ENOMEM, "run record");
	return 0;
}

/* Is run id's row (no draft) still a running attempt's?  In the caller's
 * transaction. */
static int still_running(struct al_db *db, const char *id, bool *out, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int rc = al_db_prepare(db, "SELECT count(*) FROM runs WHERE id = ?1 AND " RUNNING_ATTEMPT,
			       &q, err);
	if (rc < 0)
		return rc;
	al_db_bind_text(q, 1, id, -1);
	if ((rc = al_db_step(q, err)) != AL_DB_ROW)
		return rc < 0 ? rc : al_fail(err, AL_EIO, 0, "runs: no count");
	*out = al_db_column_int64(q, 0) > 0;
	return 0;
}

/* A run record without a draft (an attempt that failed or was
 * interrupted) and its `run` ledger entry, in one transaction; its group
 * is the record's, else a new one.  rec is completed, not stolen. */
static int record_draftless_if(struct al_store *st, const char *id, json_t *rec, bool if_running,
			       struct al_error *err)
{
	char group[17];
	const char *g = json_string_value(json_object_get(rec, "group"));
	if (g && *g)
		snprintf(group, sizeof(group), "%s", g);
	else
		al_ledger__new_group(group);
	json_object_set_new(rec, "group", json_string(group));
	json_object_set_new(rec, "draft", json_null());
	json_int_t started = json_integer_value(json_object_get(rec, "started"));
	const char *project = json_string_value(json_object_get(rec, "project"));
	const char *actor = json_string_value(json_object_get(rec, "author"));
	_cleanup_free_ char *text = json_dumps(rec, JSON_FLAGS);
	struct al_db *db;
	int rc = text ? al_store__meta_db(st, &db, err)
		      : al_fail(err, AL_ENOMEM, ENOMEM, "run record");
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	if (rc < 0 || (rc = al_db_begin(db, AL_DB_WRITE, &txn, err)) < 0)
		return rc;
	if (if_running) {
		/* under the tenant's write lock: another node (or process) that
		 * recorded it first wins, and this one records nothing */
		bool running = false;
		if ((rc = still_running(db, id, &running, err)) < 0)
			return al_error_prefix(err, "record run: ");
		if (!running)
			return 1; /* the transaction, which wrote nothing, rolls back */
	}
	/* the attempt's row replaced: DELETE + INSERT in the transaction */
	_cleanup_db_stmt_ struct al_db_stmt *del = NULL, *ins = NULL;
	if ((rc = al_db_prepare(db, "DELETE FROM runs WHERE id = ?1", &del, err)) == 0)
		rc = al_db_prepare(
			db,
			"INSERT INTO runs(id, project, grp, draft, created, record, seq) "
			"VALUES (?1, ?2, ?3, NULL, ?4, ?5, " RUN_SEQ ")",
			&ins, err);
	if (rc == 0) {
		al_db_bind_text(del, 1, id, -1);
		al_db_bind_text(ins, 1, id, -1);
		al_db_bind_text(ins, 2, project ? project : "", -1);
		al_db_bind_text(ins, 3, group, -1);
		al_db_bind_int64(ins, 4, started ? started : al_wall_s());
		al_db_bind_text(ins, 5, text, -1);
		if ((rc = al_db_step(del, err)) < 0 || (rc = al_db_step(ins, err)) < 0)
			al_error_prefix(err, "record run: ");
		else
			rc = 0;
	}
	struct al_ledger_rec lr = { .kind = "run",
				    .group = group,
				    .project = project,
				    .actor = actor ? actor : "",
				    .data = rec };
	if (rc == 0)
		rc = al_ledger__append_txn(st, &txn, &lr, NULL, err);
	return al_ledger__commit(st, &txn, rc, err);
}

static int record_draftless(struct al_store *st, const char *id, json_t *rec, struct al_error *err)
{
	return record_draftless_if(st, id, rec, false, err);
}

/* An attempt that failed after it began (materialising, setting up the
 * sandbox, keeping its output, collecting its changes, recording): its
 * record says where, with the error and whatever output it produced, and
 * is a ledger entry; no draft.  Best effort: if this fails too, the
 * caller still reports the first error. */
static int record_failure(struct run *r, const char *const *envv, size_t nenv,
			  const struct al_error *why)
{
	struct al_error e2 = { 0 };
	struct al_cas *cas = al_store_cas(r->st);
	bool outputs = false;
	if (r->ran && r->cap.fd[1] >= 0 && r->cap.fd[2] >= 0 && al_cas_begin(cas, &e2) == 0) {
		outputs = put_capture(cas, r->cap.fd[1], r->cap.kept[1], &r->out_blob, &e2) == 0 &&
			  put_capture(cas, r->cap.fd[2], r->cap.kept[2], &r->err_blob, &e2) == 0;
		if (outputs)
			outputs = al_cas_commit(cas, &e2) == 0;
		else
			al_cas_abort(cas);
	}
	uint8_t key[AL_SECRET_KEY_LEN];
	if (al_store__secret_key(r->st, key, &e2) < 0)
		return -1;
	json_t *rec = record_json(r, envv, nenv, key);
	explicit_bzero(key, sizeof(key));
	if (!rec)
		return -1;
	char out[48], msg[sizeof(why->msg) * 4 + 1];
	snprintf(out, sizeof(out), "failed: %s", r->phase);
	al_quote(why->msg, strlen(why->msg), msg, sizeof(msg));
	json_object_set_new(rec, "outcome", json_string(out));
	json_object_set_new(
		rec, "error",
		json_pack("{s:s,s:s}", "code", al_code_name(why->code), "message", msg));
	json_object_del(rec, "bundle");
	json_object_del(rec, "result");
	json_object_del(rec, "changes");
	if (!r->ran) {
		json_object_del(rec, "exit_code");
		json_object_del(rec, "usage");
	}
	if (!outputs) {
		json_object_set_new(rec, "stdout", json_null());
		json_object_set_new(rec, "stderr", json_null());
		json_object_del(rec, "content");
	}
	if (!r->finished)
		json_object_set_new(rec, "finished", json_integer(al_wall_s()));
	if (r->o->group)
		json_object_set_new(rec, "group", json_string(r->o->group));
	if (r->x && r->x->record)
		r->x->record(r->x->ctx, r->st, rec, &e2); /* best effort, as this whole record */
	int rc = record_draftless(r->st, r->id, rec, &e2);
	json_decref(rec);
	return rc;
}

/* What a microVM guest's result stream left out, noted by count where a
 * namespace run's collection notes each by path (sandbox.h). */
static int vm_left_out(const struct al_sandbox_result *sr, struct al_overlay_report *rep,
		       struct al_error *err)
{
	const struct {
		uint64_t n;
		const char *what;
	} left[] = {
		{ sr->vm.left_sockets, "socket(s) not kept (a socket has no form in the result)" },
		{ sr->vm.left_deep, "entr(y|ies) deeper than 256 levels or with a path near 4096 "
				    "bytes not kept, with "
				    "what is beneath them" },
		{ sr->vm.left_links, "hardlinked file(s) kept as independent files" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(left); i++)
		if (left[i].n &&
		    al_overlay_report_note(rep, "%llu %s (the microVM names no paths)",
					   (unsigned long long)left[i].n, left[i].what) < 0)
			return al_fail(err, AL_ENOMEM, ENOMEM, "run: notes");
	return 0;
}

/* On PostgreSQL, in the attempt's write transaction (the tenant's lock):
 * the policy's runs in flight, counted across nodes from the running
 * records (run.h runs_per_tenant, runs_per_principal). */
static int in_flight_check(struct al_db *db, const struct al_run_opts *o, struct al_error *err)
{
	if (!o->runs_per_tenant && !o->runs_per_principal)
		return 0;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int rc = al_db_prepare(db, "SELECT record FROM runs WHERE " RUNNING_ATTEMPT, &q, err);
	if (rc < 0)
		return rc;
	unsigned tenant = 0, mine = 0;
	while ((rc = al_db_step(q, err)) == AL_DB_ROW) {
		json_t *rec = json_loads(al_db_column_text(q, 0), 0, NULL);
		const char *p = json_string_value(json_object_get(rec, "principal"));
		tenant++;
		mine += o->principal && p && !strcmp(p, o->principal);
		json_decref(rec);
	}
	if (rc < 0)
		return al_error_prefix(err, "runs in flight: ");
	if (o->runs_per_principal && mine >= o->runs_per_principal)
		return al_fail(err, AL_EUNAVAIL, 0,
			       "%u runs of yours in flight across the nodes (the policy's "
			       "runs_per_principal): try again later",
			       mine);
	if (o->runs_per_tenant && tenant >= o->runs_per_tenant)
		return al_fail(err, AL_EUNAVAIL, 0,
			       "%u runs of the tenant in flight across the nodes (the policy's "
			       "runs_per_tenant): try again later",
			       tenant);
	return 0;
}

/* An attempt's provisional record (outcome "running"), and the lock its
 * process holds (tenants/<t>/runs/<id>.lock) until the final record is
 * written: if airlock is killed (its sandbox dies with it), the next run
 * in the tenant finds the record with its lock free and records the
 * attempt as "failed: interrupted" in the ledger. */
static int attempt_begin(struct run *r, struct al_error *err)
{
	char dir[4200], path[4300];
	snprintf(dir, sizeof(dir), "%s/runs", al_store_dir(r->st));
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return al_fail(err, AL_EIO, errno, "run: %s", dir);
	snprintf(path, sizeof(path), "%s/%s.lock", dir, r->id);
	r->lock = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (r->lock < 0 || flock(r->lock, LOCK_EX) < 0)
		return al_fail(err, AL_EIO, errno, "run: lock %s", path);
	json_t *rec = json_pack("{s:s,s:s,s:s,s:s,s:o,s:I,s:i}", "id", r->id, "project",
				r->o->project, "group", r->o->group ? r->o->group : "", "outcome",
				"running", "argv", strings_json(r->o->argv), "started",
				(json_int_t)r->started, "pid", (int)getpid());
	if (rec && r->o->principal) /* whose it is, for another node's GET /runs/{id} */
		json_object_set_new(rec, "principal", json_string(r->o->principal));
	struct al_db *db;
	int rc = rec ? al_store__meta_db(r->st, &db, err) : al_fail(err, AL_ENOMEM, ENOMEM, "run");
	/* on PostgreSQL other nodes see the attempt: it names its node, which
	 * beats (liveness.c) from before the record exists */
	if (rc == 0 && al_db_engine(db) == AL_DB_POSTGRES && (rc = al_node__join(err)) == 0)
		json_object_set_new(rec, "node", json_string(al_node__id()));
	char *text = rc == 0 ? json_dumps(rec, JSON_FLAGS) : NULL;
	json_decref(rec);
	if (rc == 0 && !text)
		rc = al_fail(err, AL_ENOMEM, ENOMEM, "run");
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	if (rc == 0)
		rc = al_db_begin(db, AL_DB_WRITE, &txn, err);
	if (rc == 0 && al_db_engine(db) == AL_DB_POSTGRES)
		rc = in_flight_check(db, r->o, err);
	_cleanup_db_stmt_ struct al_db_stmt *ins = NULL;
	if (rc == 0 &&
	    (rc = al_db_prepare(db,
				"INSERT INTO runs(id, project, grp, draft, created, record, seq) "
				"VALUES (?1, ?2, ?3, NULL, ?4, ?5, " RUN_SEQ ")",
				&ins, err)) == 0) {
		al_db_bind_text(ins, 1, r->id, -1);
		al_db_bind_text(ins, 2, r->o->project, -1);
		al_db_bind_text(ins, 3, r->o->group ? r->o->group : "", -1);
		al_db_bind_int64(ins, 4, r->started);
		al_db_bind_text(ins, 5, text, -1);
		if ((rc = al_db_step(ins, err)) < 0)
			al_error_prefix(err, "record the run's start: ");
		else
			rc = al_db_commit(&txn, err);
	}
	free(text);
	return rc;
}

/* Is the attempt (its running record) gone with its process?  The lock
 * file in this home decides when it is here: held, it runs; free, its
 * process (on this machine) is gone.  Without one, on PostgreSQL, the
 * attempt is another node's (or this one's lost): gone once its node's
 * heartbeat is older than the lease.  On the embedded home a missing lock
 * file is a process gone before it removed it. */
static int attempt_gone(struct al_db *db, json_t *rec, const char *lock, bool *gone,
			struct al_error *err)
{
	_cleanup_close_ int lk = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (lk >= 0) {
		*gone = flock(lk, LOCK_EX | LOCK_NB) == 0;
		return 0;
	}
	*gone = true;
	const char *node = json_string_value(json_object_get(rec, "node"));
	if (al_db_engine(db) != AL_DB_POSTGRES || !node || !strcmp(node, al_node__id()))
		return 0;
	bool alive = false;
	int r = al_node__alive(db, node, &alive, err);
	*gone = r == 0 && !alive;
	return r;
}

/* Attempts whose process is gone: recorded as "failed: interrupted" with a
 * ledger entry (run.h).  Their output is lost (it was in unnamed temporary
 * files); their sandbox died with them. */
int al_run_recover(struct al_store *st, struct al_error *err)
{
	struct al_db *db;
	if (al_store__meta_db(st, &db, err) < 0)
		return -1;
	struct gone {
		char id[AL_RUN_ID_LEN + 1];
		json_t *rec;
	} *v = NULL;
	size_t n = 0;
	int r = 0;
	{
		_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
		if (al_db_prepare(db, "SELECT id, record FROM runs WHERE " RUNNING_ATTEMPT, &q,
				  err) < 0)
			return -1;
		int s;
		while ((s = al_db_step(q, err)) == AL_DB_ROW) {
			char id[AL_RUN_ID_LEN + 1], path[4300];
			snprintf(id, sizeof(id), "%s", al_db_column_text(q, 0));
			if (!al_run_id_valid(id))
				continue;
			json_t *rec = json_loads(al_db_column_text(q, 1), 0, NULL);
			if (!rec)
				continue;
			snprintf(path, sizeof(path), "%s/runs/%s.lock", al_store_dir(st), id);
			bool gone = false;
			struct gone *nv = NULL;
			if ((r = attempt_gone(db, rec, path, &gone, err)) < 0 || !gone ||
			    !(nv = realloc(v, (n + 1) * sizeof(*v)))) {
				json_decref(rec);
				if (r == 0 && gone)
					r = al_fail(err, AL_ENOMEM, ENOMEM, "recover runs");
				if (r < 0)
					break;
				continue;
			}
			v = nv;
			snprintf(v[n].id, sizeof(v[n].id), "%s", id);
			v[n++].rec = rec;
		}
		if (r == 0 && s < 0)
			r = -1;
	}
	int recorded = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *rec = v[i].rec;
		if (r == 0) {
			json_object_set_new(rec, "outcome", json_string("failed: interrupted"));
			json_object_set_new(
				rec, "error",
				json_pack("{s:s,s:s}", "code", "IOError", "message",
					  "airlock was killed during the run; its sandbox died "
					  "with it and its output is lost"));
			json_object_set_new(rec, "stdout", json_null());
			json_object_set_new(rec, "stderr", json_null());
			json_object_set_new(rec, "finished", json_null());
			int rc = record_draftless_if(st, v[i].id, rec, true, err);
			if (rc < 0) {
				r = -1;
			} else {
				char path[4300];
				snprintf(path, sizeof(path), "%s/runs/%s.lock", al_store_dir(st),
					 v[i].id);
				unlink(path);
				recorded += rc == 0;
			}
		}
		json_decref(rec);
	}
	free(v);
	return r < 0 ? r : recorded;
}

int al_run_cancel_request(struct al_store *st, const char *id, struct al_error *err)
{
	struct al_db *db;
	int rc = al_store__meta_db(st, &db, err);
	if (rc < 0)
		return rc;
	if (al_db_engine(db) != AL_DB_POSTGRES)
		return al_fail(err, AL_ESTATE, 0,
			       "run %s is in flight in another process: cancel it there", id);
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	if ((rc = al_db_begin(db, AL_DB_WRITE, &txn, err)) < 0)
		return rc;
	_cleanup_db_stmt_ struct al_db_stmt *ins = NULL;
	bool running = false;
	if ((rc = still_running(db, id, &running, err)) < 0)
		return al_error_prefix(err, "cancel: ");
	if (!running)
		return al_fail(err, AL_ESTATE, 0, "run %s has already ended", id);
	if ((rc = al_db_prepare(db,
				"INSERT INTO run_cancels(id, requested) VALUES (?1, ?2) "
				"ON CONFLICT DO NOTHING",
				&ins, err)) < 0)
		return rc;
	al_db_bind_text(ins, 1, id, -1);
	al_db_bind_int64(ins, 2, al_wall_s());
	if (al_db_step(ins, err) < 0)
		return al_error_prefix(err, "cancel: ");
	return al_db_commit(&txn, err);
}

int al_run(struct al_store *st, const struct al_run_opts *o, struct al_run_info *out,
	   struct al_error *err)
{
	return al_run__exec(st, o, NULL, out, err);
}

int al_run__exec(struct al_store *st, const struct al_run_opts *o, const struct al_run__ext *x,
		 struct al_run_info *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	size_t bytes = 0;
	int argc = count_args(o->argv, ARGV_MAX, &bytes, "command", err);
	if (argc < 0)
		return argc;
	if (argc == 0 || !o->argv[0][0])
		return al_fail(err, AL_EUSAGE, 0, "run: no command");
	int nuser = count_args(o->env, ENV_MAX, &bytes, "environment", err), nsec;
	if (nuser < 0 || (nsec = count_args(o->secrets, ENV_MAX, &bytes, "secrets", err)) < 0)
		return nuser < 0 ? nuser : nsec;
	int r = o->backend && !al_sandbox_backend_known(o->backend)
			? al_fail(err, AL_EUSAGE, 0,
				  "run: unknown sandbox backend '%.16s' (ns, vm)", o->backend)
			: 0;
	if (r < 0)
		return r;
	static const char *const defaults[] = {
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
		"TZ=UTC", "LANG=C.UTF-8"
	};
	struct env *env = calloc(1, sizeof(*env));
	if (!env)
		return al_fail(err, AL_ENOMEM, ENOMEM, "run");
	for (size_t i = 0; i < 4 && !(x && x->env_exact); i++)
		env_set(env, defaults[i], err);
	/* the run's only way out (net.h); the command's own --env may say otherwise */
	static const char *const proxy_env[] = { "HTTP_PROXY=" AL_NET_PROXY_URL,
						 "HTTPS_PROXY=" AL_NET_PROXY_URL,
						 "http_proxy=" AL_NET_PROXY_URL,
						 "https_proxy=" AL_NET_PROXY_URL };
	for (size_t i = 0; i < 4 && o->network == AL_NET_EGRESS && !(x && x->env_exact); i++)
		env_set(env, proxy_env[i], err);
	if (o->integrations && o->integrations[0] && !(x && x->env_exact))
		env_set(env, "AIRLOCK_INTEGRATIONS=" AL_INTEG_URL, err);
	for (int i = 0; r == 0 && i < nuser; i++)
		r = env_set(env, o->env[i], err);
	for (int i = 0; r == 0 && i < nsec; i++)
		r = env_set(env, o->secrets[i], err);
	if (r < 0) {
		free(env);
		return r;
	}
	env->v[env->n] = NULL;
	/* secret files: NAME=VALUE, the name copied out */
	struct al_sandbox_file files[AL_SECRET_FILES_MAX];
	char file_names[AL_SECRET_FILES_MAX][64];
	size_t nfiles = 0;
	for (; o->secret_files && o->secret_files[nfiles]; nfiles++) {
		const char *kv = o->secret_files[nfiles], *eq = strchr(kv, '=');
		size_t nl;
		if (nfiles >= AL_SECRET_FILES_MAX) {
			free(env);
			return al_fail(err, AL_ELIMIT, 0, "run: more than %d secret files",
				       AL_SECRET_FILES_MAX);
		}
		if (!env_name_ok(kv, &nl) || nl >= 64) {
			free(env);
			return al_fail(err, AL_EUSAGE, 0,
				       "run: bad secret file name '%.*s' (NAME=VALUE)",
				       (int)strcspn(kv, "=") < 64 ? (int)strcspn(kv, "=") : 64, kv);
		}
		snprintf(file_names[nfiles], 64, "%.*s", (int)nl, kv);
		files[nfiles] = (struct al_sandbox_file){ .name = file_names[nfiles],
							  .data = eq + 1,
							  .len = strlen(eq + 1) };
	}
	if (o->id && !al_run_id_valid(o->id)) {
		free(env);
		return al_fail(err, AL_EINVAL, 0, "run: bad run id '%.20s'", o->id);
	}
	/* refused before the run, not when the ledger refuses it after */
	if ((o->group && al_text_check("run: group", o->group, 16, err) < 0) ||
	    (o->author && al_text_check("run: author", o->author, 255, err) < 0)) {
		free(env);
		return err->code;
	}

	struct run run = { .st = st,
			   .o = o,
			   .x = x,
			   .lowers = -1,
			   .init = -1,
			   .lock_img = -1,
			   .lock_ws = -1,
			   .cap = { .fd = { -1, -1, -1 } },
			   .lock = -1 };
	run.sres.upper_fd = -1;
	run.sres.cgroup = "none";
	struct al_project_info proj;
	uint8_t rnd[7];
	char hex[15];
	struct al_policy pol;
	if (x && x->policy)
		pol = *x->policy; /* the replay looked it up already */
	else if (o->policy)
		pol = *o->policy; /* as was the accepted run's */
	else if ((r = al_policy_effective(st, &pol, err)) < 0)
		goto out;
	if ((r = al_policy_backend(&pol, o->backend, &run.backend, err)) < 0 ||
	    (r = al_sandbox_check(run.backend, o->network, err)) < 0 ||
	    (r = o->network == AL_NET_EGRESS ? al_policy_egress(&pol, o->egress_allow, err)
		 : o->egress_allow && o->egress_allow[0]
			 ? al_fail(err, AL_EUSAGE, 0, "run: allow entries need --network egress")
			 : 0) < 0 ||
	    (r = al_policy_limits(&pol, &o->limits, &run.limits, err)) < 0 ||
	    (r = al_project_get(st, o->project, &proj, err)) < 0 ||
	    (!(x && x->image) && !o->image_id &&
	     (r = al_image_resolve(st, o->image, &run.image, err)) < 0) ||
	    (r = al_run__contracts_load(st, o->project, o->contract, pol.contract_floor,
					&run.contracts, err)) < 0)
		goto out;
	/* the integrations asked for: each granted, its secret opened here */
	if (o->integrations && o->integrations[0] &&
	    (r = al_integ__relay_new(st, o->integrations, o->project, o->principal,
				     run.limits.connections, run.limits.egress_bytes, &run.integ,
				     err)) < 0)
		goto out;
	if (x && x->image)
		run.image = *x->image;
	else if (o->image_id)
		run.image = *o->image_id;
	run.base = x && x->base ? *x->base : proj.head;
	/* pinned: the base's commit time (reproducible builds' convention),
	 * unless the command's environment sets it */
	char sde[48];
	if (x && x->env_exact)
		run.source_date = x->source_date;
	else if (!env_has(env, "SOURCE_DATE_EPOCH")) {
		if ((r = al_run__source_date(st, o->project, &run.base, &run.source_date, err)) < 0)
			goto out;
		snprintf(sde, sizeof(sde), "SOURCE_DATE_EPOCH=%lld", (long long)run.source_date);
		if ((r = env_set(env, sde, err)) < 0)
			goto out;
		env->v[env->n] = NULL;
	}
	qsort(env->v, env->n, sizeof(env->v[0]), env_cmp);
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		r = al_fail(err, AL_EIO, errno, "run id");
		goto out;
	}
	al_hex(rnd, sizeof(rnd), hex);
	snprintf(run.id, sizeof(run.id), "r%.13s", o->id ? o->id + 1 : hex);

	uint32_t uid = o->host_uid, gid = o->host_gid;
	if (!uid) {
		uid = geteuid() == 0 ? AL_SANDBOX_UID : geteuid();
		gid = geteuid() == 0 ? AL_SANDBOX_UID : getegid();
	}
	char lowers[4200];
	snprintf(lowers, sizeof(lowers), "%s/lower", al_store_dir(st));
	/* searchable, not listable, by the sandbox's uid (ns.c resolves the
	 * layers by name from here) */
	if ((mkdir(lowers, 0711) < 0 && errno != EEXIST) || chmod(lowers, 0711) < 0 ||
	    (run.lowers = open(lowers, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = al_fail(err, AL_EIO, errno, "run: %s", lowers);
		goto out;
	}
	lower_sweep(st, run.lowers);
	{
		struct al_error e = { 0 }; /* best effort: the run goes on */
		al_run_recover(st, &e);
	}
	uint64_t t0 = al_now_ns();
	run.started = al_wall_s();
	if ((r = attempt_begin(&run, err)) < 0)
		goto out;
	set_phase(&run, "materialise"); /* from here on, an attempt: a failure is recorded */
	throttle(&run, true);
	if ((r = lower_ensure(st, run.lowers, &run.image, uid, gid, run.lower_img, &run.lock_img,
			      err)) < 0 ||
	    (r = lower_ensure(st, run.lowers, &run.base, uid, gid, run.lower_ws, &run.lock_ws,
			      err)) < 0)
		goto out;
	throttle(&run, false);
	run.materialise_ms = (al_now_ns() - t0) / 1000000;
	set_phase(&run, "sandbox");
	run.init = open(o->init_path ? o->init_path : "airlock-init", O_RDONLY | O_CLOEXEC);
	if (run.init < 0) {
		r = al_fail(err, AL_ESANDBOX, errno, "run: airlock-init (%s)",
			    o->init_path ? o->init_path : "?");
		goto out;
	}
	if ((r = open_capture(al_store_dir(st), &run.cap.fd[1], err)) < 0 ||
	    (r = open_capture(al_store_dir(st), &run.cap.fd[2], err)) < 0)
		goto out;
	run.cap.limit = run.limits.output;
	for (int file = 0; file < 2; file++)
		for (size_t i = 0; (file ? o->secret_files : o->secrets) &&
				   (file ? o->secret_files : o->secrets)[i];
		     i++)
			if (masker_secret(&run.cap.mask,
					  strchr((file ? o->secret_files : o->secrets)[i], '=') +
						  1) < 0) {
				r = al_fail(err, AL_ENOMEM, ENOMEM, "run: secrets");
				goto out;
			}
	run.cap.live = o->output;
	run.cap.live_ctx = o->output_ctx;

	if (o->network == AL_NET_EGRESS) {
		size_t na = 0;
		while (o->egress_allow && o->egress_allow[na])
			na++;
		if ((r = al_net__proxy_new(o->egress_allow, na, run.limits.connections,
					   run.limits.egress_bytes, &run.proxy, err)) < 0)
			goto out;
	}
	struct al_sandbox_spec spec = {
		.egress = run.proxy,
		.integ = run.integ,
		.lowers_fd = run.lowers,
		.image_dir = run.lower_img,
		.workspace_dir = run.lower_ws,
		.init_fd = run.init,
		.argv = o->argv,
		.envp = env->v,
		.network = o->network,
		.limits = run.limits,
		.best_effort_limits = pol.best_effort,
		.host_uid = uid,
		.host_gid = gid,
		.output = on_output,
		.output_ctx = &run.cap,
		.secret_files = files,
		.nsecret_files = nfiles,
		.cancel_fd = o->cancel_fd,
		.backend = run.backend,
		.guest_dir = o->guest_dir,
		.meanwhile = meanwhile,
		.meanwhile_ctx = &run,
	};
	al_store_release_memory(st);
	run.started = al_wall_s();
	if ((r = al_sandbox_run(&spec, &run.sres, err)) < 0)
		goto out;
	run.ran = true;
	set_phase(&run, "output");
	run.finished = al_wall_s();
	/* a write refused for want of space left a cut file */
	run.disk_full = run.sres.disk_full;
	for (int i = 1; i < 3 && run.cap.mask.n; i++)
		masker_feed(&run.cap.mask, i, NULL, 0, true, keep_output, &run.cap);
	if (run.cap.write_errno) {
		r = al_fail(err, AL_EIO, run.cap.write_errno, "run: keep the command's output");
		goto out;
	}
	char upper[64];
	snprintf(upper, sizeof(upper), "/proc/self/fd/%d", run.sres.upper_fd);
	t0 = al_now_ns();
	set_phase(&run, "collect");
	throttle(&run, true);
	if ((r = collect_begin(&run, err)) < 0 ||
	    (r = al_overlay_apply_within(st, &run.base, upper, run.limits.disk,
					 dl_archive_tried() ? NULL : preload_archive, &run,
					 &run.result, &run.rep, err)) < 0 ||
	    (r = vm_left_out(&run.sres, &run.rep, err)) < 0 || (r = collect_split(&run, err)) < 0)
		goto out;
	run.delta_ms = (al_now_ns() - t0) / 1000000;
	/* the contracts see what was collected; drop may narrow the result */
	uint64_t tc = al_now_ns();
	set_phase(&run, "contract");
	if ((r = al_run__contracts_check(st, &run.contracts, &run.base, &run.result,
					 run.sres.exit_code, run.cap.fd[1], run.cap.fd[2],
					 &run.verdict, &run.blocked, err)) < 0)
		goto out;
	run.contract_ms = (al_now_ns() - tc) / 1000000;
	t0 = al_now_ns();
	set_phase(&run, "collect");
	if ((r = bundle_changes(&run, err)) < 0 || (r = collect_end(&run, true, err)) < 0)
		goto out;
	run.delta_ms += (al_now_ns() - t0) / 1000000;

	set_phase(&run, "record");
	uint8_t skey[AL_SECRET_KEY_LEN];
	if ((r = al_store__secret_key(st, skey, err)) < 0)
		goto out;
	json_t *rec = record_json(&run, env->v, env->n, skey);
	explicit_bzero(skey, sizeof(skey));
	if (rec && run.verdict) {
		json_object_set(rec, "contract", run.verdict);
		json_object_set_new(json_object_get(rec, "usage"), "contract_ms",
				    json_integer((json_int_t)run.contract_ms));
	}
	if (!rec) {
		r = al_fail(err, AL_ENOMEM, ENOMEM, "run record");
		goto out;
	}
	if (x && x->record && (r = x->record(x->ctx, st, rec, err)) < 0) {
		json_decref(rec);
		goto out;
	}
	struct rec_ctx rc = { .st = st, .id = run.id, .project = o->project, .record = rec };
	/* a run that changed nothing leaves its draft closed, "empty" */
	struct al_draft_opts dopts = { .base = &run.base,
				       .content = &run.result,
				       .author = o->author,
				       .group = o->group,
				       .close_empty = true,
				       .blocked = run.blocked };
	struct al_draft_info d;
	r = al_volume__draft_create(st, o->project, &dopts, record_hook, &rc, &d, err);
	if (r == 0) {
		/* recorded: a failure from here on (reading the record back)
		 * must not record a failed attempt over the committed one */
		run.phase = NULL;
		r = fill_info(out, rc.text, err);
	}
	free(rc.text);
	json_decref(rec);
out:
	collect_end(&run, false, NULL);
	if (run.throttled)
		throttle(&run, false);
	if (r < 0 && run.phase && record_failure(&run, env->v, env->n, err) == 0) {
		snprintf(out->id, sizeof(out->id), "%s", run.id);
		size_t n = strlen(err->msg);
		snprintf(err->msg + n, sizeof(err->msg) - n, " (recorded: run %s)", run.id);
	}
	run_release(&run);
	free(env);
	return r;
}

/* ---- reading records ---------------------------------------------------------- */

bool al_run_id_valid(const char *id)
{
	if (!id || strlen(id) != AL_RUN_ID_LEN || id[0] != 'r')
		return false;
	for (size_t i = 1; i < AL_RUN_ID_LEN; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

int al_run_get(struct al_store *st, const char *id, struct al_run_info *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	if ((r = al_db_prepare(db, "SELECT record FROM runs WHERE id = ?1", &q, err)) < 0)
		return r;
	al_db_bind_text(q, 1, id, -1);
	if ((r = al_db_step(q, err)) < 0)
		return al_error_prefix(err, "run: ");
	if (r == AL_DB_DONE)
		return al_fail(err, AL_ENOTFOUND, 0, "no run %s", id);
	return fill_info(out, al_db_column_text(q, 0), err);
}

int al_run_foreach(struct al_store *st, const char *project, al_run_fn fn, void *ctx,
		   struct al_error *err)
{
	struct al_project_info p;
	int r = al_project_get(st, project, &p, err);
	if (r < 0)
		return r;
	struct al_db *db;
	if ((r = al_store__meta_db(st, &db, err)) < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	if ((r = al_db_prepare(db,
			       "SELECT record FROM runs WHERE project = ?1 ORDER BY created, seq",
			       &q, err)) < 0)
		return r;
	al_db_bind_text(q, 1, project, -1);
	int rc;
	while ((rc = al_db_step(q, err)) == AL_DB_ROW) {
		struct al_run_info info;
		if ((r = fill_info(&info, al_db_column_text(q, 0), err)) < 0)
			return r;
		r = fn(ctx, &info, err);
		al_run_info_release(&info);
		if (r < 0)
			return r;
	}
	return rc < 0 ? al_error_prefix(err, "runs: ") : 0;
}

/* ---- replay's precondition -------------------------------------------------- */

int al_run_inputs_present(struct al_store *st, const char *id, struct al_error *err)
{
	struct al_run_info info;
	int r = al_run_get(st, id, &info, err);
	if (r < 0)
		return r;
	json_t *j = json_loads(info.record, 0, NULL);
	al_run_info_release(&info);
	static const char *const inputs[][2] = { { "base", "base snapshot" },
						 { "image", "image" } };
	for (size_t i = 0; r == 0 && i < 2; i++) {
		const char *s = json_string_value(json_object_get(j, inputs[i][0]));
		struct al_oid d;
		struct al_error e = { 0 };
		if (!s || al_oid_parse(s, &d, &e) < 0) {
			r = al_fail(err, AL_ECORRUPT, 0, "run %s: its record names no %s", id,
				    inputs[i][1]);
		} else if ((r = al_gc_snapshot_complete(st, &d, &e)) == AL_ENOTFOUND) {
			r = al_fail(
				err, AL_ENOTFOUND, 0,
				"run %s cannot be replayed: its %s %s was garbage-collected (%s)",
				id, inputs[i][1], s, e.msg);
		} else if (r < 0) {
			*err = e;
		}
	}
	json_decref(j);
	return r;
}

int al_run__record_draftless(struct al_store *st, const char *id, json_t *rec, struct al_error *err)
{
	return record_draftless(st, id, rec, err);
}
