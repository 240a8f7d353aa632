/* replay: a recorded run executed again from its record, and the verdict
 * on whether it did the same (replay.h, docs/determinism.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "airlock/cas.h"
#include "airlock/contract.h"
#include "airlock/manifest.h"
#include "airlock/policy.h"
#include "airlock/replay.h"
#include "airlock/review.h"
#include "airlock/store.h"
#include "replay_private.h"
#include "run_private.h"
#include "db.h"
#include "store_private.h"
#include "util.h"

#define JSON_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)
#define LINE_SHOWN 512         /* bytes of a differing output line in the verdict */
#define SAMPLE_MAX (64u << 10) /* bytes of two binary versions compared for a hint */
#define HINT_LINES 200         /* lines of a diff scanned for a hint */
#define TIME_SLACK 2           /* seconds around a run's start and end */

static json_t *jid(const struct al_oid *d)
{
	char s[AL_OID_STRLEN + 1];
	al_oid_fmt(d, s);
	return json_string(s);
}

/* Text that may not be UTF-8: as is when it is, else escaped (\xNN). */
static json_t *jbytes(const char *s, size_t n)
{
	if (al_utf8_valid((const uint8_t *)s, n))
		return json_stringn(s, n);
	size_t cap = 4 * n + 1;
	char *q = malloc(cap);
	if (!q)
		return NULL;
	al_quote(s, n, q, cap);
	json_t *j = json_string(q);
	free(q);
	return j;
}

static const char *jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static int oid_of(json_t *o, const char *k, struct al_oid *out)
{
	const char *s = jstr(o, k);
	struct al_error e;
	return s && al_oid_parse(s, out, &e) == 0 ? 0 : -1;
}

/* ---- SOURCE_DATE_EPOCH ---------------------------------------------------------- */

int al_run__source_date(struct al_store *st, const char *project, const struct al_oid *head,
			int64_t *out, struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	/* the newest first: the commit that made head the head (UNIQUE(volume, seq)) */
	if ((r = al_db_prepare(
		     db,
		     "SELECT c.time FROM commits c JOIN projects p ON c.volume = p.volume "
		     "WHERE p.name = ?1 AND c.result = ?2 ORDER BY c.seq DESC LIMIT 1",
		     &q, err)) < 0)
		return r;
	al_db_bind_text(q, 1, project, -1);
	al_db_bind_blob(q, 2, head->b, AL_OID_LEN);
	if ((r = al_db_step(q, err)) == AL_DB_ROW) {
		*out = al_db_column_int64(q, 0);
		return 0;
	}
	if (r < 0)
		return al_error_prefix(err, "the base's commit time: ");
	struct al_project_info p;
	if ((r = al_project_get(st, project, &p, err)) < 0)
		return r;
	*out = p.created;
	return 0;
}

/* ---- wall-clock times in text ----------------------------------------------------- */

static bool digit(char c)
{
	return c >= '0' && c <= '9';
}

static int num(const char *s, size_t n)
{
	int v = 0;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!digit(s[i]))
			return false;
	return true;
}

/* days since 1970-01-01 of a civil date (proleptic Gregorian) */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static bool civil(int y, int mo, int d, int h, int mi, int s, int64_t *out)
{
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
		return false;
	*out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
	return true;
}

/* "HH:MM:SS" at s (n bytes left) */
static bool hms(const char *s, size_t n, int *h, int *m, int *sec)
{
	if (n < 8 || !digits(s, 2) || s[2] != ':' || !digits(s + 3, 2) || s[5] != ':' ||
	    !digits(s + 6, 2))
		return false;
	*h = num(s, 2);
	*m = num(s + 3, 2);
	*sec = num(s + 6, 2);
	return true;
}

size_t al_replay__times(const char *s, size_t n, int64_t *out, size_t max)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	size_t k = 0;
	for (size_t i = 0; i < n && k < max; i++) {
		bool start = i == 0 || !digit(s[i - 1]);
		if (digit(s[i]) && start) {
			size_t run = 0;
			while (i + run < n && digit(s[i + run]))
				run++;
			int h, mi, sec;
			if (run == 10) { /* unix seconds */
				int64_t v = 0;
				for (size_t j = 0; j < 10; j++)
					v = v * 10 + (s[i + j] - '0');
				out[k++] = v;
			} else if (run == 4 && n - i >= 19 && s[i + 4] == '-' &&
				   digits(s + i + 5, 2) && s[i + 7] == '-' &&
				   digits(s + i + 8, 2) && (s[i + 10] == 'T' || s[i + 10] == ' ') &&
				   hms(s + i + 11, n - i - 11, &h, &mi, &sec) &&
				   civil(num(s + i, 4), num(s + i + 5, 2), num(s + i + 8, 2), h, mi,
					 sec, &out[k])) { /* ISO 8601 */
				k++;
			}
			i += run - 1;
			continue;
		}
		/* date(1): "Mmm dd HH:MM:SS ZONE YYYY" (the day padded with a space) */
		if (i + 3 < n && (i == 0 || s[i - 1] == ' ')) {
			const char *m = NULL;
			for (int mo = 0; mo < 12 && !m; mo++)
				if (!memcmp(s + i, months + 3 * mo, 3))
					m = months + 3 * mo;
			if (!m || s[i + 3] != ' ')
				continue;
			size_t j = i + 4;
			if (j < n && s[j] == ' ')
				j++;
			size_t dl = 0;
			while (j + dl < n && digit(s[j + dl]) && dl < 3)
				dl++;
			int h, mi, sec;
			if (dl < 1 || dl > 2 || j + dl >= n || s[j + dl] != ' ' ||
			    !hms(s + j + dl + 1, n - j - dl - 1, &h, &mi, &sec))
				continue;
			size_t z = j + dl + 1 + 8;
			if (z >= n || s[z] != ' ')
				continue;
			size_t zl = 0;
			while (z + 1 + zl < n && s[z + 1 + zl] >= 'A' && s[z + 1 + zl] <= 'Z')
				zl++;
			/* only UTC is a known offset (runs have TZ=UTC) */
			bool utc = (zl == 3 && !memcmp(s + z + 1, "UTC", 3)) ||
				   (zl == 3 && !memcmp(s + z + 1, "GMT", 3));
			size_t y = z + 1 + zl + 1;
			if (!utc || y + 4 > n || s[y - 1] != ' ' || !digits(s + y, 4) ||
			    (y + 4 < n && digit(s[y + 4])))
				continue;
			if (civil(num(s + y, 4), (int)((m - months) / 3) + 1, num(s + j, dl), h, mi,
				  sec, &out[k]))
				k++;
		}
	}
	return k;
}

/* Does text hold a time within the run's [started, finished]? */
static bool has_run_time(const char *s, size_t n, json_t *rec)
{
	int64_t t[16];
	json_int_t from = json_integer_value(json_object_get(rec, "started"));
	json_t *f = json_object_get(rec, "finished");
	json_int_t to = json_is_integer(f) ? json_integer_value(f) : from;
	size_t k = al_replay__times(s, n, t, 16);
	for (size_t i = 0; i < k; i++)
		if (from && t[i] >= from - TIME_SLACK && t[i] <= to + TIME_SLACK)
			return true;
	return false;
}

/* Two versions of the same length that differ in most places: random
 * bytes (/dev/urandom, a random seed, a fresh id), not an edit. */
static bool looks_random(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	if (an != bn || an < 8)
		return false;
	size_t d = 0;
	for (size_t i = 0; i < an; i++)
		d += a[i] != b[i];
	return d * 4 >= an * 3;
}

/* ---- hints ---------------------------------------------------------------------- */

struct hints {
	json_t *orig, *rep;
	bool on_head;
	bool secrets_differ;
};

static void hint(json_t *d, const char *code, const char *text)
{
	json_object_set_new(d, "hint", json_string(code));
	json_object_set_new(d, "hint_text", json_string(text));
}

/* The fallback hint, when nothing in the bytes says more. */
static void hint_inputs(json_t *d, const struct hints *h)
{
	if (json_object_get(d, "hint"))
		return;
	if (h->on_head)
		hint(d, "head",
		     "the replay ran on the project's head, whose files differ from the original's "
		     "base");
	else if (h->secrets_differ)
		hint(d, "secret", "a secret supplied to the replay differs from the original's");
}

/* Lines a (the original's) and b (the replay's): whose likely cause? */
static void hint_lines(json_t *d, const struct hints *h, const char *a, size_t an, const char *b,
		       size_t bn)
{
	if (a && b && has_run_time(a, an, h->orig) && has_run_time(b, bn, h->rep))
		hint(d, "wall_clock",
		     "each version holds the wall-clock time of its own run (not pinned)");
	else if (a && b && looks_random((const uint8_t *)a, an, (const uint8_t *)b, bn))
		hint(d, "random",
		     "the versions differ in most bytes at the same length: random data "
		     "(/dev/urandom, a random seed; not pinned)");
}

/* ---- outputs ------------------------------------------------------------------ */

struct stream {
	struct al_cas_reader *r;
	uint8_t buf[32768];
	size_t len, pos;
	bool eof;
};

/* The next byte, -1 at the end, -2 on error. */
static int next_byte(struct stream *s, struct al_error *err)
{
	if (s->pos == s->len) {
		if (s->eof || !s->r)
			return -1;
		int64_t n = al_cas_reader_read(s->r, s->buf, sizeof(s->buf), err);
		if (n < 0)
			return -2;
		if (n == 0) {
			s->eof = true;
			return -1;
		}
		s->len = (size_t)n;
		s->pos = 0;
	}
	return s->buf[s->pos++];
}

/* The rest of the current line (up to LINE_SHOWN bytes kept). */
static int rest_of_line(struct stream *s, char *line, size_t *len, struct al_error *err)
{
	int c;
	while ((c = next_byte(s, err)) >= 0 && c != '\n')
		if (*len < LINE_SHOWN)
			line[(*len)++] = (char)c;
	return c == -2 ? -1 : 0;
}

/* The first line where two outputs differ: d gets line, original, replay
 * (null: that output has no such line). */
static int first_differing_line(struct al_cas *cas, const struct al_oid *a, const struct al_oid *b,
				json_t *d, const struct hints *h, struct al_error *err)
{
	struct stream *sa = calloc(1, sizeof(*sa)), *sb = calloc(1, sizeof(*sb));
	char *la = malloc(LINE_SHOWN), *lb = malloc(LINE_SHOWN);
	int r = !sa || !sb || !la || !lb ? al_fail(err, AL_ENOMEM, ENOMEM, "verdict") : 0;
	if (r == 0 && (r = al_cas_reader_open(cas, a, &sa->r, err)) == 0)
		r = al_cas_reader_open(cas, b, &sb->r, err);
	size_t na = 0, nb = 0;
	int64_t line = 1;
	bool found = false;
	while (r == 0 && !found) {
		int ca = next_byte(sa, err), cb = ca == -2 ? -2 : next_byte(sb, err);
		if (ca == -2 || cb == -2) {
			r = err->code ? err->code : AL_EIO;
			break;
		}
		if (ca == cb) {
			if (ca < 0)
				break; /* the same bytes after all */
			if (ca == '\n') {
				line++;
				na = nb = 0;
			} else if (na < LINE_SHOWN) {
				la[na++] = (char)ca;
				lb[nb++] = (char)cb;
			}
			continue;
		}
		found = true;
		bool a_line = ca >= 0 || na > 0, b_line = cb >= 0 || nb > 0;
		if (ca >= 0 && ca != '\n' && na < LINE_SHOWN)
			la[na++] = (char)ca;
		if (cb >= 0 && cb != '\n' && nb < LINE_SHOWN)
			lb[nb++] = (char)cb;
		if ((ca >= 0 && ca != '\n' && rest_of_line(sa, la, &na, err) < 0) ||
		    (cb >= 0 && cb != '\n' && rest_of_line(sb, lb, &nb, err) < 0)) {
			r = err->code ? err->code : AL_EIO;
			break;
		}
		json_object_set_new(d, "line", json_integer(line));
		json_object_set_new(d, "original", a_line ? jbytes(la, na) : json_null());
		json_object_set_new(d, "replay", b_line ? jbytes(lb, nb) : json_null());
		hint_lines(d, h, a_line ? la : NULL, na, b_line ? lb : NULL, nb);
	}
	if (sa)
		al_cas_reader_close(sa->r);
	if (sb)
		al_cas_reader_close(sb->r);
	free(sa);
	free(sb);
	free(la);
	free(lb);
	return r;
}

static int compare_output(struct al_cas *cas, const char *name, const struct hints *h,
			  json_t *diffs, struct al_error *err)
{
	json_t *oa = json_object_get(h->orig, name), *ob = json_object_get(h->rep, name);
	struct al_oid a, b;
	bool has_a = json_is_object(oa) && oid_of(oa, "blob", &a) == 0,
	     has_b = json_is_object(ob) && oid_of(ob, "blob", &b) == 0;
	if (has_a && has_b && al_oid_eq(&a, &b))
		return 0;
	if (!has_a && !has_b)
		return 0;
	json_t *d = json_pack("{s:s,s:I,s:I}", "what", name, "original_bytes",
			      (json_int_t)json_integer_value(json_object_get(oa, "bytes")),
			      "replay_bytes",
			      (json_int_t)json_integer_value(json_object_get(ob, "bytes")));
	json_object_set(d, "original_sha256", has_a ? json_object_get(oa, "blob") : json_null());
	json_object_set(d, "replay_sha256", has_b ? json_object_get(ob, "blob") : json_null());
	int r = 0;
	if (has_a && has_b)
		r = first_differing_line(cas, &a, &b, d, h, err);
	if (r == 0)
		hint_inputs(d, h);
	json_array_append_new(diffs, d);
	return r;
}

/* ---- paths ---------------------------------------------------------------------- */

static json_t *side_json(const struct al_change_rec *c, const struct al_entry *e)
{
	if (!c && !e)
		return json_null();
	char mode[8];
	json_t *j = json_object();
	if (c)
		json_object_set_new(j, "op", json_stringn(&c->op, 1));
	if (!e)
		return j; /* a deletion */
	snprintf(mode, sizeof(mode), "%04o", e->mode);
	json_object_set_new(j, "type", json_string(al_entry_type_name(e->type)));
	json_object_set_new(j, "mode", json_string(mode));
	if (e->type != AL_T_DIR) {
		json_object_set_new(j, "size", json_integer((json_int_t)e->size));
		json_object_set_new(j, "sha256", jid(&e->digest));
	}
	return j;
}

static const struct al_entry *change_new(const struct al_change_rec *c)
{
	return c && c->has_new ? &c->new : NULL;
}

/* The same change: kind, and the new type, mode and content (a
 * directory's content is its paths, compared one by one). */
static bool same_change(const struct al_change_rec *a, const struct al_change_rec *b)
{
	if (a->op != b->op || a->has_new != b->has_new)
		return false;
	if (!a->has_new)
		return true;
	return a->new.type == b->new.type && a->new.mode == b->new.mode &&
	       (a->new.type == AL_T_DIR || al_oid_eq(&a->new.digest, &b->new.digest));
}

static bool same_entry(const struct al_entry *a, const struct al_entry *b)
{
	if (!a || !b)
		return !a && !b;
	return a->type == b->type && a->mode == b->mode &&
	       (a->type == AL_T_DIR || al_oid_eq(&a->digest, &b->digest));
}

struct detail {
	json_t *d;
	const struct hints *h;
	struct al_cas *cas;
};

static int64_t read_upto(struct al_cas_reader *r, uint8_t *buf, size_t n, struct al_error *err)
{
	size_t got = 0;
	while (got < n) {
		int64_t k = al_cas_reader_read(r, buf + got, n - got, err);
		if (k < 0)
			return k;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (int64_t)got;
}

/* Two binary versions: random if they differ in most of their first bytes. */
static int sample_random(struct al_cas *cas, const struct al_review_file *f, bool *random,
			 struct al_error *err)
{
	*random = false;
	if (!f->has_old || !f->has_new || f->old.type != AL_T_FILE || f->new.type != AL_T_FILE ||
	    f->old.size != f->new.size)
		return 0;
	uint8_t *a = malloc(SAMPLE_MAX), *b = malloc(SAMPLE_MAX);
	struct al_cas_reader *ra = NULL, *rb = NULL;
	int r = !a || !b ? al_fail(err, AL_ENOMEM, ENOMEM, "verdict") : 0;
	int64_t na = 0, nb = 0;
	if (r == 0 && (r = al_cas_reader_open(cas, &f->old.digest, &ra, err)) == 0 &&
	    (r = al_cas_reader_open(cas, &f->new.digest, &rb, err)) == 0) {
		if ((na = read_upto(ra, a, SAMPLE_MAX, err)) < 0 ||
		    (nb = read_upto(rb, b, SAMPLE_MAX, err)) < 0)
			r = err->code ? err->code : AL_EIO;
		else
			*random = looks_random(a, (size_t)na, b, (size_t)nb);
	}
	al_cas_reader_close(ra);
	al_cas_reader_close(rb);
	free(a);
	free(b);
	return r;
}

static int detail_fn(void *ctx, const struct al_review_file *f, struct al_error *err)
{
	struct detail *dt = ctx;
	json_t *d = dt->d;
	if (f->symlink_old || f->symlink_new) {
		json_object_set_new(d, "original_target",
				    f->symlink_old ? jbytes(f->symlink_old, strlen(f->symlink_old))
						   : json_null());
		json_object_set_new(d, "replay_target",
				    f->symlink_new ? jbytes(f->symlink_new, strlen(f->symlink_new))
						   : json_null());
	}
	bool files = (f->has_old && f->old.type == AL_T_FILE) ||
		     (f->has_new && f->new.type == AL_T_FILE);
	if (!files || !f->content_changed)
		return 0;
	/* text that is not UTF-8 is shown as binary is: sizes and digests */
	bool binary = f->binary || (f->unified && !al_utf8_valid((const uint8_t *)f->unified,
								 strlen(f->unified)));
	json_object_set_new(d, "binary", json_boolean(binary));
	if (binary) {
		bool random;
		int r = sample_random(dt->cas, f, &random, err);
		if (r < 0)
			return r;
		if (random)
			hint(d, "random",
			     "the versions differ in most bytes at the same size: random data "
			     "(/dev/urandom, a random seed; not pinned)");
		return 0;
	}
	if (f->unified) {
		size_t n = strlen(f->unified);
		bool cut = n > AL_REPLAY_UNIFIED_MAX;
		if (cut) { /* at a line's end: what is kept stays whole lines */
			n = AL_REPLAY_UNIFIED_MAX;
			while (n && f->unified[n - 1] != '\n')
				n--;
		}
		json_object_set_new(d, "unified", jbytes(f->unified, n));
		if (cut)
			json_object_set_new(d, "unified_truncated", json_true());
	}
	json_object_set_new(d, "additions", json_integer(f->additions));
	json_object_set_new(d, "deletions", json_integer(f->deletions));
	/* the removed lines are the original's, the added ones the replay's */
	const struct al_review_line *first_del = NULL, *first_add = NULL;
	bool time_a = false, time_b = false;
	size_t seen = 0;
	for (size_t i = 0; i < f->nhunks && seen < HINT_LINES; i++)
		for (size_t j = 0; j < f->hunks[i].nlines && seen < HINT_LINES; j++, seen++) {
			const struct al_review_line *l = &f->hunks[i].lines[j];
			if (l->origin == '-') {
				first_del = first_del ? first_del : l;
				time_a = time_a || has_run_time(l->text, l->len, dt->h->orig);
			} else if (l->origin == '+') {
				first_add = first_add ? first_add : l;
				time_b = time_b || has_run_time(l->text, l->len, dt->h->rep);
			}
		}
	if (time_a && time_b)
		hint(d, "wall_clock",
		     "each version holds the wall-clock time of its own run (not pinned)");
	else if (first_del && first_add)
		hint_lines(d, dt->h, first_del->text, first_del->len, first_add->text,
			   first_add->len);
	return 0;
}

/* The path's entry in a snapshot, NULL if absent. */
static int lookup(struct al_cas *cas, const struct al_oid *root, const char *path,
		  struct al_entry *e, const struct al_entry **out, struct al_error *err)
{
	*out = NULL;
	int r = al_manifest_lookup(cas, root, path, e, err);
	if (r == AL_ENOTFOUND)
		return 0;
	if (r == 0)
		*out = e;
	return r;
}

struct sides {
	struct al_oid base_a, result_a, base_b, result_b;
};

/* One differing path: what differs, both changes, and (detailed) the diff
 * of its two versions and a hint. */
static int path_difference(struct al_cas *cas, const struct sides *sd, const char *path,
			   const struct al_change_rec *a, const struct al_change_rec *b,
			   bool detailed, const struct hints *h, json_t *diffs,
			   struct al_error *err)
{
	json_t *d = json_pack("{s:s}", "what", "path");
	json_object_set_new(d, "path", jbytes(path, strlen(path)));
	json_t *what = json_array();
	if (!a || !b) {
		json_array_append_new(what, json_string("present"));
	} else if (a->op != b->op || a->has_new != b->has_new) {
		json_array_append_new(what, json_string("kind"));
	}
	const struct al_entry *na = change_new(a), *nb = change_new(b);
	if (a && b && na && nb) {
		if (na->type != nb->type)
			json_array_append_new(what, json_string("type"));
		if (na->mode != nb->mode)
			json_array_append_new(what, json_string("mode"));
		if (na->type == nb->type && na->type != AL_T_DIR &&
		    !al_oid_eq(&na->digest, &nb->digest))
			json_array_append_new(what, json_string("content"));
	}
	json_object_set_new(d, "differs", what);
	int r = 0;
	/* each side's version: what its change made, or (not changed there)
	 * what its result has */
	struct al_entry ea, eb;
	const struct al_entry *va = na, *vb = nb;
	if (!a)
		r = lookup(cas, &sd->result_a, path, &ea, &va, err);
	if (r == 0 && !b)
		r = lookup(cas, &sd->result_b, path, &eb, &vb, err);
	json_object_set_new(d, "original", a ? side_json(a, na) : side_json(NULL, va));
	json_object_set_new(d, "replay", b ? side_json(b, nb) : side_json(NULL, vb));
	if (r == 0 && detailed) {
		struct detail dt = { d, h, cas };
		r = al_review_pair(cas, path, va, vb, true, detail_fn, &dt, err);
	}
	/* on the head: was the path's input itself different? */
	if (r == 0 && detailed && h->on_head && !json_object_get(d, "hint")) {
		struct al_entry ba, bb;
		const struct al_entry *pa, *pb;
		if ((r = lookup(cas, &sd->base_a, path, &ba, &pa, err)) == 0 &&
		    (r = lookup(cas, &sd->base_b, path, &bb, &pb, err)) == 0 && !same_entry(pa, pb))
			hint(d, "base",
			     "the path was already different on the head before the replay ran");
	}
	if (r == 0)
		hint_inputs(d, h);
	json_array_append_new(diffs, d);
	return r;
}

static int compare_paths(struct al_cas *cas, const struct hints *h, json_t *v, json_t *diffs,
			 struct al_error *err)
{
	struct sides sd;
	bool a_ok = oid_of(h->orig, "base", &sd.base_a) == 0 &&
		    oid_of(h->orig, "result", &sd.result_a) == 0;
	bool b_ok = oid_of(h->rep, "base", &sd.base_b) == 0 &&
		    oid_of(h->rep, "result", &sd.result_b) == 0;
	if (!a_ok || !b_ok) {
		if (a_ok != b_ok)
			json_array_append_new(
				diffs, json_pack("{s:s,s:s,s:s}", "what", "changes", "original",
						 a_ok ? "collected" : "none (the attempt failed)",
						 "replay",
						 b_ok ? "collected" : "none (the attempt failed)"));
		json_object_set_new(v, "paths_differing", json_integer(0));
		return 0;
	}
	/* the same base and the same result: the same changes, nothing to read */
	if (al_oid_eq(&sd.base_a, &sd.base_b) && al_oid_eq(&sd.result_a, &sd.result_b)) {
		json_object_set_new(v, "paths_differing", json_integer(0));
		return 0;
	}
	struct al_changes ca = { 0 }, cb = { 0 };
	int r = al_manifest_changes(cas, &sd.base_a, &sd.result_a, &ca, err);
	if (r == 0)
		r = al_manifest_changes(cas, &sd.base_b, &sd.result_b, &cb, err);
	size_t i = 0, j = 0, n = 0;
	while (r == 0 && (i < ca.n || j < cb.n)) {
		const struct al_change_rec *a = i < ca.n ? &ca.v[i] : NULL;
		const struct al_change_rec *b = j < cb.n ? &cb.v[j] : NULL;
		int c = !a ? 1 : !b ? -1 : al_path_cmp(a->path, b->path);
		if (c < 0)
			b = NULL, i++;
		else if (c > 0)
			a = NULL, j++;
		else
			i++, j++;
		if (a && b && same_change(a, b))
			continue;
		if (n < AL_REPLAY_PATHS_LISTED)
			r = path_difference(cas, &sd, a ? a->path : b->path, a, b,
					    n < AL_REPLAY_PATHS_DETAILED, h, diffs, err);
		n++;
	}
	json_object_set_new(v, "paths_differing", json_integer((json_int_t)n));
	if (n > AL_REPLAY_PATHS_LISTED)
		json_object_set_new(v, "paths_unlisted",
				    json_integer((json_int_t)(n - AL_REPLAY_PATHS_LISTED)));
	al_changes_release(&ca);
	al_changes_release(&cb);
	return r;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A record's contract verdict as one line: "satisfied", or "violated: "
 * and each violation ("kind where (source)"), sorted; NULL without one. */
static char *contract_summary(json_t *rec)
{
	json_t *ct = json_object_get(rec, "contract"), *vs = json_object_get(ct, "violations"), *x;
	if (!json_is_object(ct))
		return NULL;
	size_t n = json_array_size(vs), i;
	char **items = calloc(n + 1, sizeof(char *));
	struct al_buf b = { 0 };
	if (!items)
		return NULL;
	json_array_foreach(vs, i, x) {
		const char *where = jstr(x, "path")      ? jstr(x, "path")
				    : jstr(x, "pattern") ? jstr(x, "pattern")
							 : jstr(x, "stream");
		if (asprintf(&items[i], "%s %s(%s)", jstr(x, "kind") ? jstr(x, "kind") : "?",
			     where ? where : "", jstr(x, "source") ? jstr(x, "source") : "?") < 0)
			items[i] = NULL;
	}
	qsort(items, n, sizeof(char *), str_cmp);
	const char *verdict = jstr(ct, "verdict") ? jstr(ct, "verdict") : "?";
	al_buf_put(&b, verdict, strlen(verdict));
	for (i = 0; i < n; i++) {
		al_buf_put(&b, i ? "; " : ": ", 2);
		if (items[i])
			al_buf_put(&b, items[i], strlen(items[i]));
		free(items[i]);
	}
	free(items);
	al_buf_put(&b, "", 1);
	return (char *)b.p;
}

int al_replay__verdict(struct al_store *st, json_t *orig, json_t *rep, bool on_head,
		       json_t *secrets, json_t **out, struct al_error *err)
{
	*out = NULL;
	struct al_cas *cas = al_store_cas(st);
	struct hints h = { .orig = orig, .rep = rep, .on_head = on_head };
	size_t i;
	json_t *s;
	json_array_foreach(secrets, i, s)
		h.secrets_differ = h.secrets_differ || !json_is_true(json_object_get(s, "same"));
	json_t *v = json_pack("{s:s,s:b}", "original", jstr(orig, "id") ? jstr(orig, "id") : "",
			      "on_head", on_head);
	json_t *diffs = json_array();
	if (!v || !diffs) {
		json_decref(v);
		json_decref(diffs);
		return al_fail(err, AL_ENOMEM, ENOMEM, "verdict");
	}
	/* what became of the run, then its exit status, outputs and changes */
	const char *oa = jstr(orig, "outcome"), *ob = jstr(rep, "outcome");
	if (strcmp(oa ? oa : "ok", ob ? ob : "ok")) {
		json_t *d = json_pack("{s:s,s:s,s:s}", "what", "outcome", "original",
				      oa ? oa : "ok", "replay", ob ? ob : "ok");
		hint_inputs(d, &h);
		json_array_append_new(diffs, d);
	}
	json_t *xa = json_object_get(orig, "exit_code"), *xb = json_object_get(rep, "exit_code");
	if (!json_equal(xa, xb) && (xa || xb)) {
		json_t *d = json_pack("{s:s,s:O,s:O}", "what", "exit_code", "original",
				      xa ? xa : json_null(), "replay", xb ? xb : json_null());
		hint_inputs(d, &h);
		json_array_append_new(diffs, d);
	}
	/* the contracts' verdicts: "satisfied", or each violation as kind
	 * where (source), sorted; absent without a contract */
	char *ca = contract_summary(orig), *cb = contract_summary(rep);
	if ((ca || cb) && (!ca || !cb || strcmp(ca, cb))) {
		json_t *d = json_pack("{s:s,s:s,s:s}", "what", "contract", "original",
				      ca ? ca : "no contract", "replay", cb ? cb : "no contract");
		hint_inputs(d, &h);
		json_array_append_new(diffs, d);
	}
	free(ca);
	free(cb);
	int r = compare_output(cas, "stdout", &h, diffs, err);
	if (r == 0)
		r = compare_output(cas, "stderr", &h, diffs, err);
	if (r == 0)
		r = compare_paths(cas, &h, v, diffs, err);
	if (r < 0) {
		json_decref(v);
		json_decref(diffs);
		return al_error_prefix(err, "replay verdict: ");
	}
	json_object_set_new(v, "result",
			    json_string(json_array_size(diffs) ? "divergent" : "identical"));
	json_object_set_new(v, "differences", diffs);
	json_object_set_new(v, "secrets", secrets ? json_incref(secrets) : json_array());
	*out = v;
	return 0;
}

/* ---- the replay ---------------------------------------------------------------- */

struct replay {
	const char *of;
	bool on_head;
	json_t *orig;
	json_t *secrets; /* [{name, as, same}] */
	uint64_t verdict_ms;
};

/* The replay's record gets its link and its verdict before it is
 * written (run.c calls this for a failed attempt too). */
static int verdict_hook(void *ctx, struct al_store *st, json_t *rec, struct al_error *err)
{
	struct replay *rp = ctx;
	json_object_set_new(rec, "replay_of", json_string(rp->of));
	uint64_t t0 = al_now_ns();
	json_t *v = NULL;
	int r = al_replay__verdict(st, rp->orig, rec, rp->on_head, rp->secrets, &v, err);
	if (r < 0)
		return r;
	json_object_set_new(v, "ms", json_integer((json_int_t)((al_now_ns() - t0) / 1000000)));
	json_object_set_new(rec, "verdict", v);
	return 0;
}

static bool name_ok(const char *s, size_t n)
{
	if (!n || n > 255 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* The supplied secret named name ("NAME=VALUE"), or NULL. */
static const char *supplied(const char *const *v, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; v && v[i]; i++)
		if (!strncmp(v[i], name, n) && v[i][n] == '=')
			return v[i];
	return NULL;
}

/* Check the supplied secrets against the original's: each well formed,
 * once, and one the original had.  out: [{name, as, same}] for the
 * original's secrets supplied; *missing gets the names not supplied. */
static int check_secrets(struct al_store *st, const struct al_replay_opts *ro, json_t *orig,
			 json_t **out, char *missing, size_t missing_sz, struct al_error *err)
{
	*out = NULL;
	missing[0] = 0;
	json_t *had = json_object_get(orig, "secrets");
	for (size_t i = 0; ro->secrets && ro->secrets[i]; i++) {
		const char *kv = ro->secrets[i], *eq = strchr(kv, '=');
		size_t nl = eq ? (size_t)(eq - kv) : strlen(kv);
		if (!eq || !name_ok(kv, nl))
			return al_fail(err, AL_EUSAGE, 0, "replay: bad secret '%.*s' (NAME=VALUE)",
				       (int)(nl < 64 ? nl : 64), kv); /* never the value */
		for (size_t j = 0; j < i; j++)
			if (!strncmp(ro->secrets[j], kv, nl + 1))
				return al_fail(err, AL_EUSAGE, 0,
					       "replay: secret %.*s is given twice", (int)nl, kv);
		bool known = false;
		size_t k;
		json_t *s;
		json_array_foreach(had, k, s) {
			const char *name = jstr(s, "name");
			known = known || (name && strlen(name) == nl && !strncmp(name, kv, nl));
		}
		if (!known)
			return al_fail(err, AL_EINVAL, 0, "replay: run %s had no secret %.*s",
				       ro->of, (int)(nl < 64 ? nl : 64), kv);
	}
	uint8_t key[AL_SECRET_KEY_LEN];
	int r = al_store__secret_key(st, key, err);
	if (r < 0)
		return r;
	json_t *cmp = json_array();
	size_t k;
	json_t *s;
	json_array_foreach(had, k, s) {
		const char *name = jstr(s, "name");
		const char *kv = name ? supplied(ro->secrets, name) : NULL;
		if (!kv) {
			size_t used = strlen(missing);
			snprintf(missing + used, missing_sz - used, "%s%s", used ? ", " : "",
				 name ? name : "?");
			continue;
		}
		const char *val = strchr(kv, '=') + 1;
		uint8_t d[AL_DIGEST_LEN];
		unsigned dl = sizeof(d);
		char hex[65], tagged[80];
		bool same = false;
		/* the record's keyed digest (hmac); a plain sha256 in older records */
		if (jstr(s, "hmac") && HMAC(EVP_sha256(), key, AL_SECRET_KEY_LEN,
					    (const unsigned char *)val, strlen(val), d, &dl)) {
			al_hex(d, sizeof(d), hex);
			snprintf(tagged, sizeof(tagged), "hmac-sha256:%s", hex);
			same = !strcmp(tagged, jstr(s, "hmac"));
		} else if (jstr(s, "sha256")) {
			al_sha256(val, strlen(val), d);
			al_hex(d, sizeof(d), hex);
			snprintf(tagged, sizeof(tagged), "sha256:%s", hex);
			same = !strcmp(tagged, jstr(s, "sha256"));
		}
		explicit_bzero(d, sizeof(d));
		json_array_append_new(cmp, json_pack("{s:s,s:s,s:b}", "name", name, "as",
						     jstr(s, "as") ? jstr(s, "as") : "env", "same",
						     same));
	}
	explicit_bzero(key, sizeof(key));
	*out = cmp;
	return 0;
}

/* Is object id of the record still stored?  "" if so, else why not. */
static void gone(struct al_store *st, json_t *rec, const char *field, const char *what, bool tree,
		 char *why, size_t whysz)
{
	struct al_oid id;
	struct al_error e = { 0 };
	if (why[0])
		return;
	if (oid_of(rec, field, &id) < 0) {
		snprintf(why, whysz, "its record does not name its %s (outcome: %s)", what,
			 jstr(rec, "outcome") ? jstr(rec, "outcome") : "?");
		return;
	}
	/* a stored tree node means its whole subtree is stored: objects come
	 * in whole batches and the collector keeps or deletes what a node
	 * reaches together (docs/architecture.md, "Garbage collection") */
	int has = al_cas_has(al_store_cas(st), &id, &e);
	if (has == 1 && tree) {
		struct al_node *n = NULL;
		has = al_node_load(al_store_cas(st), &id, &n, &e) == 0;
		al_node_free(n);
	}
	if (has != 1)
		snprintf(why, whysz, "its %s %s is no longer stored (garbage-collected)", what,
			 jstr(rec, field));
}

/* A replay that cannot run: recorded, with the reason, and no sandbox. */
static int record_not_replayable(struct al_store *st, const struct al_replay_opts *ro,
				 const struct al_run_opts *o, json_t *orig, json_t *secrets,
				 const char *why, struct al_run_info *out, struct al_error *err)
{
	char id[AL_RUN_ID_LEN + 1];
	if (o->id) {
		if (!al_run_id_valid(o->id))
			return al_fail(err, AL_EINVAL, 0, "replay: bad run id '%.20s'", o->id);
		snprintf(id, sizeof(id), "%s", o->id);
	} else {
		uint8_t rnd[7];
		char hex[15];
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return al_fail(err, AL_EIO, errno, "run id");
		al_hex(rnd, sizeof(rnd), hex);
		snprintf(id, sizeof(id), "r%.13s", hex);
	}
	int64_t now = al_wall_s();
	json_t *v = json_pack("{s:s,s:s,s:b,s:s,s:o}", "result", "not_replayable", "original",
			      ro->of, "on_head", ro->on_head, "reason", why, "secrets",
			      secrets ? json_incref(secrets) : json_array());
	json_t *rec = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:I,s:I,s:n,s:n}", "id", id, "project",
				jstr(orig, "project") ? jstr(orig, "project") : "", "group",
				jstr(orig, "group") ? jstr(orig, "group") : "", "author",
				o->author ? o->author : "", "outcome", "not_replayable", "verdict",
				v, "started", (json_int_t)now, "finished", (json_int_t)now,
				"stdout", "stderr");
	if (!rec)
		return al_fail(err, AL_ENOMEM, ENOMEM, "replay record");
	json_object_set_new(rec, "replay_of", json_string(ro->of));
	json_object_set_new(rec, "principal",
			    o->principal ? json_string(o->principal) : json_null());
	/* what it would have run, as the original recorded it */
	static const char *const inputs[] = { "base", "image", "argv", "env", "network", "limits" };
	for (size_t i = 0; i < ARRAY_SIZE(inputs); i++)
		if (json_object_get(orig, inputs[i]))
			json_object_set(rec, inputs[i], json_object_get(orig, inputs[i]));
	int r = al_run__record_draftless(st, id, rec, err);
	json_decref(rec);
	return r < 0 ? r : al_run_get(st, id, out, err);
}

/* "K=V" strings for an object of strings, kept in bufs */
static int kv_strings(json_t *obj, const char ***out, char ***bufs, size_t *nbufs,
		      struct al_error *err)
{
	size_t n = json_object_size(obj), k = 0;
	const char **v = calloc(n + 1, sizeof(char *));
	char **nb = realloc(*bufs, (*nbufs + n + 1) * sizeof(char *));
	if (nb)
		*bufs = nb;
	if (!v || !nb) {
		free(v);
		return al_fail(err, AL_ENOMEM, ENOMEM, "replay");
	}
	const char *key;
	json_t *val;
	json_object_foreach(obj, key, val) {
		if (!json_is_string(val)) {
			free(v);
			return al_fail(err, AL_ECORRUPT, 0,
				       "replay: the record's env.%.64s is not text", key);
		}
		char *b;
		if (asprintf(&b, "%s=%s", key, json_string_value(val)) < 0) {
			free(v);
			return al_fail(err, AL_ENOMEM, ENOMEM, "replay");
		}
		(*bufs)[(*nbufs)++] = b;
		v[k++] = b;
	}
	*out = v;
	return 0;
}

int al_replay(struct al_store *st, const struct al_replay_opts *ro, const struct al_run_opts *o,
	      struct al_run_info *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!ro->of || !al_run_id_valid(ro->of))
		return al_fail(err, AL_ENOTFOUND, 0, "no run %.20s", ro->of ? ro->of : "");
	struct al_run_info info;
	int r = al_run_get(st, ro->of, &info, err);
	if (r < 0)
		return r;
	json_t *orig = json_loads(info.record, 0, NULL);
	al_run_info_release(&info);
	if (!orig)
		return al_fail(err, AL_ECORRUPT, 0, "run %s: its record is not readable", ro->of);
	const char *was = jstr(orig, "outcome") ? jstr(orig, "outcome") : "";
	if (!strcmp(was, "running")) {
		json_decref(orig);
		return al_fail(err, AL_ESTATE, 0, "run %s has not ended", ro->of);
	}
	/* it never ran: what would it be compared with? */
	if (!strcmp(was, "not_replayable")) {
		r = al_fail(err, AL_EINVAL, 0,
			    "run %s is a replay that did not run (not_replayable): replay %.20s, "
			    "its original",
			    ro->of, jstr(orig, "replay_of") ? jstr(orig, "replay_of") : "?");
		json_decref(orig);
		return r;
	}
	json_t *secrets = NULL;
	char missing[1024], why[1200] = "";
	if ((r = check_secrets(st, ro, orig, &secrets, missing, sizeof(missing), err)) < 0) {
		json_decref(orig);
		return r;
	}
	struct replay rp = {
		.of = ro->of, .on_head = ro->on_head, .orig = orig, .secrets = secrets
	};
	const char *project = jstr(orig, "project");
	json_t *argv = json_object_get(orig, "argv"), *env = json_object_get(orig, "env");
	json_t *lim = json_object_get(orig, "limits");
	struct al_limits limits = { 0 };
	enum al_network net = AL_NET_NONE;
	struct al_error e = { 0 };
	if (!project || !json_is_array(argv) || !json_array_size(argv) || !json_is_object(env) ||
	    !json_is_object(lim) || !jstr(orig, "network"))
		snprintf(why, sizeof(why), "its record does not hold its inputs (outcome: %s)",
			 jstr(orig, "outcome") ? jstr(orig, "outcome") : "?");
	else if (json_unpack(lim, "{s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "memory", &limits.memory, "pids",
			     &limits.pids, "cpus_milli", &limits.cpus_milli, "timeout_ms",
			     &limits.timeout_ms, "output", &limits.output, "disk", &limits.disk,
			     "files", &limits.files) < 0)
		snprintf(why, sizeof(why), "its record's limits are not readable");
	else {
		/* recorded since egress: absent in older records (the default) */
		json_t *ec = json_object_get(lim, "egress_connections"),
		       *eb = json_object_get(lim, "egress_bytes");
		limits.connections = json_is_integer(ec) ? (uint64_t)json_integer_value(ec) : 0;
		limits.egress_bytes = json_is_integer(eb) ? (uint64_t)json_integer_value(eb) : 0;
	}
	/* the inputs, and what the verdict compares with */
	gone(st, orig, "image", "image", true, why, sizeof(why));
	if (!ro->on_head)
		gone(st, orig, "base", "base snapshot", true, why, sizeof(why));
	if (!why[0] && json_object_get(orig, "result")) {
		gone(st, orig, "base", "base snapshot (the verdict compares its changes)", true,
		     why, sizeof(why));
		gone(st, orig, "result", "result snapshot (the verdict compares with it)", true,
		     why, sizeof(why));
	}
	struct al_project_info proj = { 0 };
	if (!why[0] && al_project_get(st, project, &proj, &e) < 0)
		snprintf(why, sizeof(why), "its project %s is not there", project);
	if (!why[0] && missing[0])
		snprintf(why, sizeof(why),
			 "the original had secret%s %s, not supplied to the replay (secrets are "
			 "never recorded: supply each one again)",
			 strchr(missing, ',') ? "s" : "", missing);
	struct al_policy pol;
	struct al_limits eff;
	if (!why[0] && (al_policy_effective(st, &pol, &e) < 0 ||
			al_policy_limits(&pol, &limits, &eff, &e) < 0))
		snprintf(why, sizeof(why), "the tenant's policy now refuses its limits: %s", e.msg);
	/* the backend it ran on (records from before the vm backend: ns) */
	const char *backend = jstr(orig, "backend") ? jstr(orig, "backend") : "ns";
	if (!why[0] && al_policy_backend(&pol, backend, &backend, &e) < 0)
		snprintf(why, sizeof(why), "its sandbox backend cannot be had now: %s", e.msg);
	if (!why[0] && (al_network_parse(jstr(orig, "network"), &net, &e) < 0 ||
			al_sandbox_check(backend, net, &e) < 0))
		snprintf(why, sizeof(why), "its network policy cannot be had now: %s", e.msg);
	/* egress: the same allowlist, if the policy still allows it */
	const char *allow[AL_NET_ALLOW_MAX + 1] = { 0 };
	json_t *jallow = json_object_get(json_object_get(orig, "egress"), "allow");
	if (!why[0] && net == AL_NET_EGRESS) {
		size_t i;
		json_t *a;
		if (json_array_size(jallow) > AL_NET_ALLOW_MAX)
			snprintf(why, sizeof(why), "its record's egress allowlist is not readable");
		json_array_foreach(jallow, i, a) {
			if (why[0])
				break;
			if (!json_is_string(a))
				snprintf(why, sizeof(why),
					 "its record's egress allowlist is not readable");
			allow[i] = json_string_value(a);
		}
		if (!why[0] && al_policy_egress(&pol, allow, &e) < 0)
			snprintf(why, sizeof(why), "the tenant's policy now refuses its egress: %s",
				 e.msg);
	}
	/* the request's contract is an input too (the project's default is
	 * the project's now, as the policy is the tenant's now) */
	struct al_contract *contract = NULL;
	json_t *req_contract = json_object_get(
		json_object_get(json_object_get(orig, "contract"), "contracts"), "request");
	if (!why[0] && req_contract && al_contract_parse(req_contract, &contract, &e) < 0)
		snprintf(why, sizeof(why), "its contract is refused now: %s", e.msg);
	if (why[0]) {
		r = record_not_replayable(st, ro, o, orig, secrets, why, out, err);
		al_contract_free(contract);
		json_decref(secrets);
		json_decref(orig);
		return r;
	}

	/* the original's inputs: argv, environment (exactly, SOURCE_DATE_EPOCH
	 * following the head on the head), secrets as they were delivered */
	struct al_oid base, image;
	char **bufs = NULL;
	size_t nbufs = 0;
	const char **av = calloc(json_array_size(argv) + 1, sizeof(char *)), **ev = NULL;
	size_t nsec = json_array_size(json_object_get(orig, "secrets"));
	const char **sv = calloc(nsec + 1, sizeof(char *)), **sf = calloc(nsec + 1, sizeof(char *));
	int64_t sde = 0;
	json_t *pinned_sde = json_object_get(json_object_get(orig, "pinned"), "source_date_epoch");
	json_t *env2 = json_deep_copy(env);
	if (!av || !sv || !sf || !env2)
		r = al_fail(err, AL_ENOMEM, ENOMEM, "replay");
	size_t k;
	json_t *a;
	json_array_foreach(argv, k, a) {
		if (r == 0 && !json_is_string(a))
			r = al_fail(err, AL_ECORRUPT, 0, "replay: the record's argv is not text");
		else if (r == 0)
			av[k] = json_string_value(a);
	}
	oid_of(orig, "image", &image);
	if (ro->on_head) {
		base = proj.head;
		/* the pinned default follows the base; a value the command set stays */
		const char *cur = jstr(env2, "SOURCE_DATE_EPOCH");
		char pinned_s[32];
		snprintf(pinned_s, sizeof(pinned_s), "%lld",
			 (long long)json_integer_value(pinned_sde));
		if (r == 0 && json_is_integer(pinned_sde) && cur && !strcmp(cur, pinned_s) &&
		    (r = al_run__source_date(st, project, &base, &sde, err)) == 0) {
			char now[32];
			snprintf(now, sizeof(now), "%lld", (long long)sde);
			json_object_set_new(env2, "SOURCE_DATE_EPOCH", json_string(now));
		}
	} else {
		oid_of(orig, "base", &base);
		sde = json_integer_value(pinned_sde);
	}
	if (r == 0)
		r = kv_strings(env2, &ev, &bufs, &nbufs, err);
	size_t ns = 0, nf = 0;
	json_t *s;
	json_array_foreach(json_object_get(orig, "secrets"), k, s) {
		const char *kv = r == 0 ? supplied(ro->secrets, jstr(s, "name")) : NULL;
		if (kv && jstr(s, "as") && !strcmp(jstr(s, "as"), "file"))
			sf[nf++] = kv;
		else if (kv)
			sv[ns++] = kv;
	}
	if (r == 0) {
		char img[AL_OID_STRLEN + 1];
		al_oid_fmt(&image, img);
		struct al_run_opts o2 = *o;
		o2.project = project;
		o2.image = img;
		o2.argv = av;
		o2.env = ev;
		o2.secrets = sv;
		o2.secret_files = sf;
		o2.network = net;
		o2.egress_allow = allow;
		o2.backend = backend;
		o2.limits = limits;
		o2.group = jstr(orig, "group") && *jstr(orig, "group") ? jstr(orig, "group") : NULL;
		o2.contract = contract;
		struct al_run__ext x = { .base = &base,
					 .image = &image,
					 .env_exact = true,
					 .source_date = sde,
					 .policy = &pol,
					 .record = verdict_hook,
					 .ctx = &rp };
		r = al_run__exec(st, &o2, &x, out, err);
	}
	for (size_t i = 0; i < nbufs; i++)
		free(bufs[i]);
	free(bufs);
	free(av);
	free(ev);
	free(sv);
	free(sf);
	json_decref(env2);
	al_contract_free(contract);
	json_decref(secrets);
	json_decref(orig);
	return r;
}
