/* delta: DeltaBundle write, read and verify (include/airlock/delta.h).
 * libarchive writes and reads the tar.zst, but for a plain bundle of this
 * library's own (written and read here); jansson the canonical index. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wctype.h>

#include <jansson.h>
#include <zstd.h>

#include "airlock/dl_archive.h"
#include "airlock/cas.h"
#include "airlock/delta.h"
#include "delta_private.h"
#include "util.h"

#define INDEX_NAME ".airlock/bundle.json"
#define FILES_PREFIX "files/"
#define JSON_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)

void al_bundle_release(struct al_bundle *b)
{
	for (size_t i = 0; b->entries && i < b->n; i++)
		free(b->entries[i].path);
	free(b->entries);
	memset(b, 0, sizeof(*b));
}

/* ---- index ------------------------------------------------------------------ */

static const char *op_name(char op)
{
	return op == 'A' ? "add" : op == 'M' ? "modify" : "delete";
}

static json_t *entry_json(bool has, const struct al_entry *e)
{
	if (!has)
		return json_null();
	char mode[8];
	snprintf(mode, sizeof(mode), "%04o", e->mode);
	json_t *o = json_pack("{s:s,s:s}", "type", al_entry_type_name(e->type), "mode", mode);
	if (e->type != AL_T_DIR) {
		char id[AL_OID_STRLEN + 1];
		al_oid_fmt(&e->digest, id);
		json_object_set_new(o, "size", json_integer((json_int_t)e->size));
		json_object_set_new(o, "sha256", json_string(id));
	}
	return o;
}

static char *index_dump(const struct al_oid *base, const struct al_oid *head,
			const struct al_changes *ch)
{
	char b[AL_OID_STRLEN + 1], h[AL_OID_STRLEN + 1];
	al_oid_fmt(base, b);
	al_oid_fmt(head, h);
	json_t *arr = json_array();
	for (size_t i = 0; i < ch->n; i++) {
		const struct al_change_rec *c = &ch->v[i];
		json_t *o = json_pack("{s:s,s:s}", "op", op_name(c->op), "path", c->path);
		json_object_set_new(o, "old", entry_json(c->has_old, &c->old));
		json_object_set_new(o, "new", entry_json(c->has_new, &c->new));
		json_array_append_new(arr, o);
	}
	json_t *idx = json_pack("{s:s,s:i,s:s,s:s,s:o}", "format", "airlock-bundle", "version", 1,
				"base", b, "head", h, "entries", arr);
	char *s = json_dumps(idx, JSON_FLAGS);
	json_decref(idx);
	return s;
}

/* A stricter path rule for bundles than for snapshots: no backslash, and
 * the reserved top-level name .airlock (any case) is refused. */
static int bundle_path_check(const char *p, struct al_error *err)
{
	const char *why;
	char q[300];
	al_quote(p, strnlen(p, 200), q, sizeof(q));
	if (p[0] == '/')
		return al_fail(err, AL_EINVAL, 0, "bundle refused: absolute path '%s'", q);
	if (!al_path_valid(p, &why))
		return al_fail(err, AL_EINVAL, 0, "bundle refused: path '%s': %s", q, why);
	if (strchr(p, '\\'))
		return al_fail(err, AL_EINVAL, 0, "bundle refused: backslash in path '%s'", q);
	if (strncasecmp(p, ".airlock", 8) == 0 && (p[8] == 0 || p[8] == '/'))
		return al_fail(err, AL_EINVAL, 0, "bundle refused: reserved name in path '%s'", q);
	return 0;
}

static int parse_entry_side(json_t *o, bool *has, struct al_entry *e, const char *path,
			    struct al_error *err)
{
	memset(e, 0, sizeof(*e));
	*has = !json_is_null(o);
	if (!*has)
		return 0;
	const char *type = NULL, *mode = NULL, *sha = NULL;
	json_int_t size = 0;
	json_error_t je;
	if (!json_is_object(o) ||
	    json_unpack_ex(o, &je, JSON_STRICT, "{s:s,s:s,s?I,s?s}", "type", &type, "mode", &mode,
			   "size", &size, "sha256", &sha) < 0)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: malformed entry for %s", path);
	e->type = !strcmp(type, "file")      ? AL_T_FILE
		  : !strcmp(type, "symlink") ? AL_T_SYMLINK
		  : !strcmp(type, "dir")     ? AL_T_DIR
					     : 0;
	char *end = NULL;
	unsigned long m = strlen(mode) == 4 ? strtoul(mode, &end, 8) : 010000;
	if (!e->type || !end || *end || m > 07777)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: bad type or mode for %s", path);
	if (m & 06000)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: setuid/setgid bits on %s", path);
	e->mode = (unsigned)m;
	if (e->type == AL_T_DIR) {
		if (sha || size)
			return al_fail(err, AL_EINVAL, 0,
				       "bundle refused: directory %s with content", path);
		return 0;
	}
	if (!sha || size < 0 || al_oid_parse(sha, &e->digest, err) < 0)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: bad digest or size for %s",
			       path);
	e->size = (uint64_t)size;
	if (e->type == AL_T_SYMLINK &&
	    (e->mode != 0777 || e->size == 0 || e->size > AL_SYMLINK_MAX))
		return al_fail(err, AL_EINVAL, 0, "bundle refused: bad symlink %s", path);
	return 0;
}

/* UTF-8 lower-casing for the case-folding duplicate check. */
static char *casefold(const char *s)
{
	static locale_t loc;
	if (!loc)
		loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	size_t n = strlen(s);
	char *out = malloc(4 * n + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		uint32_t cp;
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;
		cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
		for (size_t k = 1; k < len && i + k < n; k++)
			cp = cp << 6 | ((unsigned char)s[i + k] & 0x3f);
		i += len;
		if (loc)
			cp = (uint32_t)towlower_l((wint_t)cp, loc);
		else if (cp < 0x80)
			cp = (uint32_t)tolower((int)cp);
		if (cp < 0x80) {
			out[o++] = (char)cp;
		} else if (cp < 0x800) {
			out[o++] = (char)(0xc0 | cp >> 6);
			out[o++] = (char)(0x80 | (cp & 0x3f));
		} else if (cp < 0x10000) {
			out[o++] = (char)(0xe0 | cp >> 12);
			out[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
			out[o++] = (char)(0x80 | (cp & 0x3f));
		} else {
			out[o++] = (char)(0xf0 | cp >> 18);
			out[o++] = (char)(0x80 | ((cp >> 12) & 0x3f));
			out[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
			out[o++] = (char)(0x80 | (cp & 0x3f));
		}
	}
	out[o] = 0;
	return out;
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int index_parse(const char *buf, size_t len, struct al_bundle *b, struct al_error *err)
{
	json_error_t je;
	json_t *idx = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!idx)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: index is not JSON (%s)",
			       je.text);
	int r = 0;
	char *canon = json_dumps(idx, JSON_FLAGS);
	if (!canon || strlen(canon) != len || memcmp(canon, buf, len) != 0)
		r = al_fail(err, AL_EINVAL, 0, "bundle refused: index is not in canonical form");
	free(canon);
	const char *format = NULL, *base = NULL, *head = NULL;
	json_int_t version = 0;
	json_t *entries = NULL;
	if (r == 0 &&
	    (json_unpack_ex(idx, &je, JSON_STRICT, "{s:s,s:I,s:s,s:s,s:o}", "format", &format,
			    "version", &version, "base", &base, "head", &head, "entries",
			    &entries) < 0 ||
	     strcmp(format, "airlock-bundle") != 0 || version != 1 || !json_is_array(entries)))
		r = al_fail(err, AL_EINVAL, 0,
			    "bundle refused: not an airlock bundle index (version 1)");
	if (r == 0 &&
	    (al_oid_parse(base, &b->base, err) < 0 || al_oid_parse(head, &b->head, err) < 0))
		r = AL_EINVAL;
	size_t n = r == 0 ? json_array_size(entries) : 0;
	if (r == 0 && n > AL_BUNDLE_MAX_ENTRIES)
		r = al_fail(err, AL_ELIMIT, 0, "bundle refused: more than %u entries",
			    AL_BUNDLE_MAX_ENTRIES);
	if (r == 0 && !(b->entries = calloc(n ? n : 1, sizeof(*b->entries))))
		r = al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
	for (size_t i = 0; r == 0 && i < n; i++) {
		const char *op = NULL, *path = NULL;
		json_t *old = NULL, *new = NULL;
		struct al_bundle_entry *e = &b->entries[i];
		if (json_unpack_ex(json_array_get(entries, i), &je, JSON_STRICT,
				   "{s:s,s:s,s:o,s:o}", "op", &op, "path", &path, "old", &old,
				   "new", &new) < 0) {
			r = al_fail(err, AL_EINVAL, 0, "bundle refused: malformed entry %zu", i);
			break;
		}
		if ((r = bundle_path_check(path, err)) < 0)
			break;
		if (!(e->path = strdup(path))) {
			r = al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
			break;
		}
		b->n++;
		e->op = !strcmp(op, "add")      ? 'A'
			: !strcmp(op, "modify") ? 'M'
			: !strcmp(op, "delete") ? 'D'
						: 0;
		if ((r = parse_entry_side(old, &e->has_old, &e->old, path, err)) < 0 ||
		    (r = parse_entry_side(new, &e->has_new, &e->new, path, err)) < 0)
			break;
		bool shape = (e->op == 'A' && !e->has_old && e->has_new) ||
			     (e->op == 'D' && e->has_old && !e->has_new) ||
			     (e->op == 'M' && e->has_old && e->has_new);
		if (!shape) {
			r = al_fail(err, AL_EINVAL, 0,
				    "bundle refused: entry %s: bad op for its old/new", path);
			break;
		}
		if (i && al_path_cmp(b->entries[i - 1].path, path) >= 0) {
			r = al_fail(err, AL_EINVAL, 0,
				    "bundle refused: entries not sorted or duplicated at %s", path);
			break;
		}
		if (e->has_new && e->new.type == AL_T_FILE)
			b->content_bytes += e->new.size;
	}
	json_decref(idx);
	if (r == 0 && b->content_bytes > AL_BUNDLE_MAX_BYTES)
		r = al_fail(err, AL_ELIMIT, 0, "bundle refused: more than %llu bytes",
			    (unsigned long long)AL_BUNDLE_MAX_BYTES);
	if (r == 0 && b->n > 1) {
		/* two paths that differ only in case would collide on a
		 * case-insensitive filesystem: refuse */
		char **f = calloc(b->n, sizeof(char *));
		for (size_t i = 0; f && i < b->n; i++)
			f[i] = casefold(b->entries[i].path);
		if (!f)
			return al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
		qsort(f, b->n, sizeof(char *), cmp_strp);
		for (size_t i = 1; i < b->n && r == 0; i++)
			if (f[i] && f[i - 1] && strcmp(f[i], f[i - 1]) == 0)
				r = al_fail(err, AL_EINVAL, 0,
					    "bundle refused: paths differ only in case: %s", f[i]);
		for (size_t i = 0; i < b->n; i++)
			free(f[i]);
		free(f);
	}
	return r;
}

/* ---- write ------------------------------------------------------------------ */

static int archive_sink(void *ctx, const void *p, size_t n, struct al_error *err)
{
	struct archive *a = ctx;
	if (dl_archive.write_data(a, p, n) != (la_ssize_t)n)
		return al_fail(err, AL_EIO, 0, "bundle: write: %s", dl_archive.error_string(a));
	return 0;
}

static struct archive_entry *member(const char *name, mode_t type, unsigned perm, int64_t size)
{
	struct archive_entry *e = dl_archive_entry_new();
	dl_archive.entry_set_pathname(e, name);
	dl_archive.entry_set_filetype(e, type);
	dl_archive.entry_set_perm(e, perm);
	dl_archive.entry_set_size(e, size);
	dl_archive.entry_set_mtime(e, 0, 0); /* deterministic: same change, same bytes */
	dl_archive.entry_set_uid(e, 0);
	dl_archive.entry_set_gid(e, 0);
	return e;
}

/* "files/<path>", a directory's with its "/" */
static void member_name(const struct al_change_rec *c, char *buf, size_t size)
{
	snprintf(buf, size, FILES_PREFIX "%s%s", c->path, c->new.type == AL_T_DIR ? "/" : "");
}

static int write_members(struct archive *a, struct al_cas *cas, const char *index,
			 const struct al_changes *ch, struct al_error *err)
{
	struct archive_entry *e = member(INDEX_NAME, AE_IFREG, 0644, (int64_t)strlen(index));
	int rc = dl_archive.write_header(a, e);
	dl_archive.entry_free(e);
	if (!al_archive_written_ok(a, rc) ||
	    dl_archive.write_data(a, index, strlen(index)) != (la_ssize_t)strlen(index))
		return al_fail(err, AL_EIO, 0, "bundle: write index: %s",
			       dl_archive.error_string(a));
	for (size_t i = 0; i < ch->n; i++) {
		const struct al_change_rec *c = &ch->v[i];
		if (!c->has_new)
			continue;
		char name[AL_PATH_MAX + 16];
		member_name(c, name, sizeof(name));
		int r = 0;
		bool written; /* judged at once: writing data clears the archive's error */
		if (c->new.type == AL_T_DIR) {
			e = member(name, AE_IFDIR, c->new.mode, 0);
			written = al_archive_written_ok(a, dl_archive.write_header(a, e));
		} else if (c->new.type == AL_T_SYMLINK) {
			uint8_t *t = NULL;
			size_t tl;
			if ((r = al_cas_get(cas, &c->new.digest, &t, &tl, err)) < 0)
				return r;
			e = member(name, AE_IFLNK, 0777, 0);
			dl_archive.entry_set_symlink(e, (char *)t);
			written = al_archive_written_ok(a, dl_archive.write_header(a, e));
			free(t);
		} else {
			e = member(name, AE_IFREG, c->new.mode, (int64_t)c->new.size);
			written = al_archive_written_ok(a, dl_archive.write_header(a, e));
			if (written)
				r = al_cas_stream(cas, &c->new.digest, archive_sink, a, err);
		}
		dl_archive.entry_free(e);
		if (r < 0)
			return r;
		if (!written)
			return al_fail(err, AL_EIO, 0, "bundle: write %s: %s", c->path,
				       dl_archive.error_string(a));
	}
	return 0;
}

/* ---- the plain tar: written and read without libarchive ------------------ */

/* libarchive (11 shared libraries, dl_archive.h) costs about 5 ms to load:
 * more than the rest of a small run's bundle.  A bundle whose members all
 * fit a plain ustar header is written here, as the very bytes libarchive's
 * pax writer gives them (it adds an extended header only for what a ustar
 * header cannot hold), and read back here; test_delta holds the two to
 * the same tar.  Anything else (a name that is not printable ASCII or is
 * 100 bytes or longer, a symlink target alike, a file of 8 GiB or more)
 * goes through libarchive, as every bundle from outside does. */
enum { BLOCK = 512, USTAR_NAME = 100 };

static bool plain_bytes(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

bool al_bundle__plain_name(const char *path, bool dir)
{
	size_t n = strlen(path);
	return strlen(FILES_PREFIX) + n + dir < USTAR_NAME && plain_bytes(path, n);
}

/* An octal field of a ustar header, as libarchive writes it: zero-padded
 * digits, then what the field's template ends with. */
static void ustar_octal(char *field, size_t digits, uint64_t v)
{
	for (size_t i = digits; i-- > 0; v >>= 3)
		field[i] = (char)('0' + (v & 7));
}

/* libarchive's ustar header: its template (mode, uid, gid, size, mtime,
 * checksum, type, magic, version, device numbers), no user or group name,
 * uid, gid and mtime 0 (member()) */
static void ustar_header(char *h, const char *name, char type, unsigned perm, uint64_t size,
			 const char *link)
{
	static const char zero8[8] = "000000 ", zero12[12] = "00000000000 ";
	memset(h, 0, BLOCK);
	memcpy(h, name, strlen(name));
	memcpy(h + 100, zero8, 8);
	ustar_octal(h + 100, 6, perm & 07777);
	memcpy(h + 108, zero8, 8);
	memcpy(h + 116, zero8, 8);
	memcpy(h + 124, zero12, 12);
	ustar_octal(h + 124, 11, size);
	memcpy(h + 136, zero12, 12);
	memset(h + 148, ' ', 8);
	h[156] = type;
	if (link)
		memcpy(h + 157, link, strlen(link));
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memcpy(h + 329, zero8, 8);
	memcpy(h + 337, zero8, 8);
	unsigned sum = 0;
	for (int i = 0; i < BLOCK; i++)
		sum += (unsigned char)h[i];
	ustar_octal(h + 148, 6, sum);
	h[154] = 0;
}

static uint64_t padded(uint64_t n)
{
	return (n + BLOCK - 1) / BLOCK * BLOCK;
}

/* Whether every member the changes give fits a plain header, and the
 * size of the tar they make. */
static int plain_changes(struct al_cas *cas, const struct al_changes *ch, size_t ilen, bool *plain,
			 uint64_t *tlen, struct al_error *err)
{
	*plain = true;
	*tlen = BLOCK + padded(ilen) + 2 * BLOCK;
	for (size_t i = 0; *plain && i < ch->n; i++) {
		const struct al_change_rec *c = &ch->v[i];
		if (!c->has_new)
			continue;
		*plain = al_bundle__plain_name(c->path, c->new.type == AL_T_DIR);
		*tlen += BLOCK;
		if (c->new.type == AL_T_FILE) {
			*plain = *plain && c->new.size < (1ull << 33);
			*tlen += padded(c->new.size);
		} else if (c->new.type == AL_T_SYMLINK &&*plain) {
			uint8_t *t = NULL;
			size_t tl;
			int r = al_cas_get(cas, &c->new.digest, &t, &tl, err);
			if (r < 0)
				return r;
			*plain = tl < USTAR_NAME && plain_bytes((char *)t, tl);
			free(t);
		}
	}
	return 0;
}

struct zout {
	ZSTD_CCtx *z;
	int fd;
	uint64_t fed; /* bytes of the current member's data */
	char buf[65536];
};

static int zput(struct zout *o, const void *p, size_t n, ZSTD_EndDirective end,
		struct al_error *err)
{
	ZSTD_inBuffer in = { p, n, 0 };
	for (;;) {
		ZSTD_outBuffer out = { o->buf, sizeof(o->buf), 0 };
		size_t left = ZSTD_compressStream2(o->z, &out, &in, end);
		if (ZSTD_isError(left))
			return al_fail(err, AL_EIO, 0, "bundle: zstd: %s", ZSTD_getErrorName(left));
		if (out.pos && al_write_full(o->fd, o->buf, out.pos) < 0)
			return al_fail(err, AL_EIO, errno, "bundle: write");
		if (end == ZSTD_e_end ? left == 0 : in.pos == in.size)
			return 0;
	}
}

static int zsink(void *ctx, const void *p, size_t n, struct al_error *err)
{
	struct zout *o = ctx;
	o->fed += n;
	return zput(o, p, n, ZSTD_e_continue, err);
}

static int zpad(struct zout *o, uint64_t n, struct al_error *err)
{
	static const char zeros[BLOCK];
	return n % BLOCK ? zput(o, zeros, BLOCK - n % BLOCK, ZSTD_e_continue, err) : 0;
}

static int plain_members(struct zout *o, struct al_cas *cas, const char *index,
			 const struct al_changes *ch, struct al_error *err)
{
	char h[BLOCK];
	size_t ilen = strlen(index);
	ustar_header(h, INDEX_NAME, '0', 0644, ilen, NULL);
	int r = zput(o, h, BLOCK, ZSTD_e_continue, err);
	if (r == 0 && (r = zput(o, index, ilen, ZSTD_e_continue, err)) == 0)
		r = zpad(o, ilen, err);
	for (size_t i = 0; r == 0 && i < ch->n; i++) {
		const struct al_change_rec *c = &ch->v[i];
		if (!c->has_new)
			continue;
		char name[USTAR_NAME];
		member_name(c, name, sizeof(name)); /* plain_changes: it fits */
		if (c->new.type == AL_T_DIR) {
			ustar_header(h, name, '5', c->new.mode, 0, NULL);
			r = zput(o, h, BLOCK, ZSTD_e_continue, err);
		} else if (c->new.type == AL_T_SYMLINK) {
			uint8_t *t = NULL;
			size_t tl;
			if ((r = al_cas_get(cas, &c->new.digest, &t, &tl, err)) < 0)
				return r;
			char link[USTAR_NAME] = "";
			if (tl < USTAR_NAME) /* plain_changes saw it so */
				memcpy(link, t, tl);
			else
				r = al_fail(err, AL_ECORRUPT, 0, "bundle: %s: its target changed",
					    c->path);
			free(t);
			ustar_header(h, name, '2', 0777, 0, link);
			if (r == 0)
				r = zput(o, h, BLOCK, ZSTD_e_continue, err);
		} else {
			ustar_header(h, name, '0', c->new.mode, c->new.size, NULL);
			o->fed = 0;
			if ((r = zput(o, h, BLOCK, ZSTD_e_continue, err)) == 0 &&
			    (r = al_cas_stream(cas, &c->new.digest, zsink, o, err)) == 0 &&
			    o->fed != c->new.size)
				r = al_fail(err, AL_ECORRUPT, 0,
					    "bundle: %s: the store holds %llu bytes, not %llu",
					    c->path, (unsigned long long)o->fed,
					    (unsigned long long)c->new.size);
			if (r == 0)
				r = zpad(o, c->new.size, err);
		}
	}
	return r;
}

/* The plain bundle: the tar (the two end-of-archive blocks and no padding
 * to a record size, as libarchive writes into a compressing filter) at
 * libarchive's zstd level (3), in one frame that declares its size where
 * libarchive's stream leaves it undeclared (zstd then sizes its tables for
 * the tar: an undeclared frame made it allocate and clear about 1 MiB,
 * 0.2-0.3 ms of page faults and memset for a small bundle). */
static int write_plain(int fd, struct al_cas *cas, const char *index, const struct al_changes *ch,
		       uint64_t tlen, struct al_error *err)
{
	static const char end[2 * BLOCK];
	struct zout *o = malloc(sizeof(*o));
	ZSTD_CCtx *z = ZSTD_createCCtx();
	if (!o || !z) {
		free(o);
		ZSTD_freeCCtx(z);
		return al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
	}
	o->z = z;
	o->fd = fd;
	size_t zr = ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, 3);
	if (!ZSTD_isError(zr)) /* a damaged byte of content is refused, as libarchive's */
		zr = ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1);
	if (!ZSTD_isError(zr))
		zr = ZSTD_CCtx_setPledgedSrcSize(z, tlen);
	int r = ZSTD_isError(zr)
			? al_fail(err, AL_EIO, 0, "bundle: zstd: %s", ZSTD_getErrorName(zr))
			: plain_members(o, cas, index, ch, err);
	if (r == 0)
		r = zput(o, end, sizeof(end), ZSTD_e_end, err);
	ZSTD_freeCCtx(z);
	free(o);
	return r;
}

static int bundle_write_fd(struct al_cas *cas, const struct al_oid *base, const struct al_oid *head,
			   int fd, bool archive, struct al_oid *id_out, struct al_error *err)
{
	_cleanup_locale_ locale_t prev = al_c_locale_enter(); /* names as bytes (util.h) */
	struct al_changes ch;
	int r = al_manifest_changes(cas, base, head, &ch, err);
	if (r < 0)
		return r;
	char *index = index_dump(base, head, &ch);
	struct archive *a = NULL;
	bool plain = false;
	uint64_t tlen = 0;
	if (!index)
		r = al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
	else
		al_sha256(index, strlen(index), id_out->b);
	if (r == 0 && !archive)
		r = plain_changes(cas, &ch, strlen(index), &plain, &tlen, err);
	if (r == 0 && plain)
		r = write_plain(fd, cas, index, &ch, tlen, err);
	else if (r == 0)
		r = dl_load_archive(err);
	if (r == 0 && !plain) {
		a = dl_archive_write_new();
		if (!a || dl_archive.write_add_filter_zstd(a) != ARCHIVE_OK ||
		    dl_archive.write_set_format_pax_restricted(a) != ARCHIVE_OK ||
		    dl_archive.write_open_fd(a, fd) != ARCHIVE_OK)
			r = al_fail(err, AL_EIO, 0, "bundle: %s",
				    a ? dl_archive.error_string(a) : "libarchive");
	}
	if (r == 0 && !plain)
		r = write_members(a, cas, index, &ch, err);
	if (a) {
		if (dl_archive.write_close(a) != ARCHIVE_OK && r == 0)
			r = al_fail(err, AL_EIO, 0, "bundle: close: %s",
				    dl_archive.error_string(a));
		dl_archive.write_free(a);
	}
	free(index);
	al_changes_release(&ch);
	return r;
}

int al_bundle_write_fd(struct al_cas *cas, const struct al_oid *base, const struct al_oid *head,
		       int fd, struct al_oid *id_out, struct al_error *err)
{
	return bundle_write_fd(cas, base, head, fd, false, id_out, err);
}

int al_bundle__write_fd_archive(struct al_cas *cas, const struct al_oid *base,
				const struct al_oid *head, int fd, struct al_oid *id_out,
				struct al_error *err)
{
	return bundle_write_fd(cas, base, head, fd, true, id_out, err);
}

int al_bundle_write(struct al_cas *cas, const struct al_oid *base, const struct al_oid *head,
		    const char *path, struct al_oid *id_out, struct al_error *err)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", path);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return al_fail(err, AL_EIO, errno, "create %s", tmp);
	int r = al_bundle_write_fd(cas, base, head, fd, id_out, err);
	if (r == 0 && fsync(fd) < 0)
		r = al_fail(err, AL_EIO, errno, "fsync %s", tmp);
	close(fd);
	if (r == 0 && rename(tmp, path) < 0)
		r = al_fail(err, AL_EIO, errno, "rename to %s", path);
	if (r < 0)
		unlink(tmp);
	return r;
}

/* ---- read ------------------------------------------------------------------- */

static struct al_bundle_entry *find_entry(struct al_bundle *b, const char *path)
{
	size_t lo = 0, hi = b->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = al_path_cmp(b->entries[mid].path, path);
		if (c == 0)
			return &b->entries[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* A member as either reader sees it (libarchive's or the plain one's). */
struct member {
	const char *name;
	mode_t type; /* AE_IFREG, AE_IFDIR, AE_IFLNK, or another */
	unsigned mode;
	int64_t size;
	const char *link; /* a symlink's target */
	bool hardlink;
};

/* A tar being read: its next member (1, or 0 at its end, or an error),
 * that member's data (bytes, 0 at its end, -1 with why() saying why), and
 * the compressed bytes consumed so far. */
struct src {
	int (*next)(struct src *s, struct member *m, struct al_error *err);
	ssize_t (*read)(struct src *s, void *buf, size_t n);
	int64_t (*consumed)(struct src *s);
	const char *(*why)(struct src *s);
};

static int read_content(struct src *s, struct al_cas *cas, struct al_bundle_entry *e,
			uint64_t *total, bool outsider, struct al_error *err)
{
	struct al_cas_writer *w = NULL;
	struct al_sha *sha = al_sha_new();
	if (!sha)
		return al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
	int r = cas ? al_cas_write_begin(cas, e->new.size, &w, err) : 0;
	uint64_t got = 0;
	char buf[65536];
	while (r == 0) {
		ssize_t n = s->read(s, buf, sizeof(buf));
		if (n < 0) {
			r = al_fail(err, AL_EINVAL, 0, "bundle refused: %s: %s", e->path,
				    s->why(s));
			break;
		}
		if (n == 0)
			break;
		got += (uint64_t)n;
		*total += (uint64_t)n;
		if (got > e->new.size || *total > AL_BUNDLE_MAX_BYTES) {
			r = al_fail(err, AL_EINVAL, 0,
				    "bundle refused: %s is larger than its index says", e->path);
			break;
		}
		/* compressed bytes consumed so far against bytes produced */
		int64_t in = s->consumed(s);
		if (outsider && *total > AL_BUNDLE_RATIO_GRACE &&
		    *total / AL_BUNDLE_MAX_RATIO > (uint64_t)(in > 0 ? in : 0)) {
			r = al_fail(err, AL_ELIMIT, 0,
				    "bundle refused: it expands more than %u times (%llu bytes "
				    "from %lld)",
				    AL_BUNDLE_MAX_RATIO, (unsigned long long)*total, (long long)in);
			break;
		}
		al_sha_update(sha, buf, (size_t)n);
		if (w)
			r = al_cas_write(w, buf, (size_t)n, err);
	}
	struct al_oid d;
	al_sha_final(sha, d.b);
	al_sha_free(sha);
	if (r == 0 && got != e->new.size)
		r = al_fail(err, AL_EINVAL, 0, "bundle refused: %s is shorter than its index says",
			    e->path);
	if (r == 0 && !al_oid_eq(&d, &e->new.digest))
		r = al_fail(err, AL_EINVAL, 0, "bundle refused: %s does not match its digest",
			    e->path);
	if (r == 0 && w) {
		r = al_cas_write_end(w, &d, err);
		w = NULL;
	}
	al_cas_write_abort(w);
	return r;
}

static int read_member(struct src *s, const struct member *m, struct al_cas *cas,
		       struct al_bundle *b, bool *seen, uint64_t *total, bool outsider,
		       struct al_error *err)
{
	const char *name = m->name;
	char q[300];
	al_quote(name ? name : "", name ? strnlen(name, 200) : 0, q, sizeof(q));
	if (!name || strncmp(name, FILES_PREFIX, strlen(FILES_PREFIX)) != 0)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: unexpected member '%s'", q);
	if (m->hardlink)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: member '%s' is a hardlink", q);
	mode_t type = m->type;
	if (type != AE_IFREG && type != AE_IFLNK && type != AE_IFDIR)
		return al_fail(err, AL_EINVAL, 0,
			       "bundle refused: member '%s' is a device, FIFO or socket", q);
	unsigned perm = m->mode & 07777;
	if (m->mode & 06000)
		return al_fail(err, AL_EINVAL, 0,
			       "bundle refused: member '%s' has setuid/setgid bits", q);
	char path[AL_PATH_MAX + 2];
	size_t len = strlen(name + strlen(FILES_PREFIX));
	if (len == 0 || len > AL_PATH_MAX)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: bad member name '%s'", q);
	memcpy(path, name + strlen(FILES_PREFIX), len + 1);
	if (type == AE_IFDIR && path[len - 1] == '/')
		path[--len] = 0;
	int r = bundle_path_check(path, err);
	if (r < 0)
		return r;
	struct al_bundle_entry *e = find_entry(b, path);
	if (!e || !e->has_new)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: member '%s' is not in the index",
			       q);
	size_t k = (size_t)(e - b->entries);
	if (seen[k])
		return al_fail(err, AL_EINVAL, 0, "bundle refused: duplicate member '%s'", q);
	seen[k] = true;
	mode_t want = e->new.type == AL_T_FILE      ? AE_IFREG
		      : e->new.type == AL_T_SYMLINK ? AE_IFLNK
						    : AE_IFDIR;
	if (type != want)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: member '%s' is not a %s", q,
			       al_entry_type_name(e->new.type));
	if (type != AE_IFLNK && perm != e->new.mode)
		return al_fail(err, AL_EINVAL, 0,
			       "bundle refused: member '%s' mode differs from the index", q);
	if (type == AE_IFREG) {
		if (m->size != (int64_t)e->new.size)
			return al_fail(err, AL_EINVAL, 0,
				       "bundle refused: member '%s' size differs from the index",
				       q);
		return read_content(s, cas, e, total, outsider, err);
	}
	if (type == AE_IFLNK) {
		const char *t = m->link;
		struct al_oid d;
		if (!t || strlen(t) != e->new.size)
			return al_fail(err, AL_EINVAL, 0,
				       "bundle refused: symlink '%s' differs from the index", q);
		al_sha256(t, strlen(t), d.b);
		if (!al_oid_eq(&d, &e->new.digest))
			return al_fail(err, AL_EINVAL, 0,
				       "bundle refused: symlink '%s' does not match its digest", q);
		if (cas)
			return al_cas_put(cas, t, strlen(t), &d, err);
	}
	return 0;
}

static int read_tar(struct src *s, struct al_cas *cas, struct al_bundle *b, bool outsider,
		    struct al_error *err)
{
	struct member m;
	int r = s->next(s, &m, err);
	if (r == 0)
		r = al_fail(err, AL_EINVAL, 0, "bundle refused: the archive is empty");
	if (r < 0)
		return r;
	if (!m.name || strcmp(m.name, INDEX_NAME) != 0 || m.type != AE_IFREG)
		return al_fail(err, AL_EINVAL, 0,
			       "bundle refused: the first member is not " INDEX_NAME);
	if (m.size < 0 || m.size > (int64_t)AL_BUNDLE_MAX_INDEX)
		return al_fail(err, AL_ELIMIT, 0, "bundle refused: index too large");
	char *idx = malloc((size_t)m.size + 1);
	if (!idx)
		return al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
	int64_t got = 0;
	ssize_t n;
	while (got < m.size && (n = s->read(s, idx + got, (size_t)(m.size - got))) > 0)
		got += n;
	r = got == m.size ? 0 : al_fail(err, AL_EINVAL, 0, "bundle refused: truncated index");
	if (r == 0) {
		al_sha256(idx, (size_t)m.size, b->id.b);
		r = index_parse(idx, (size_t)m.size, b, err);
	}
	free(idx);
	if (r < 0)
		return r;
	bool *seen = calloc(b->n ? b->n : 1, sizeof(bool));
	if (!seen)
		return al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
	uint64_t total = 0;
	size_t members = 0;
	int more;
	while (r == 0 && (more = s->next(s, &m, err)) != 0) {
		if (more < 0)
			r = more;
		else if (++members > b->n)
			r = al_fail(err, AL_EINVAL, 0,
				    "bundle refused: more members than index entries");
		else
			r = read_member(s, &m, cas, b, seen, &total, outsider, err);
	}
	for (size_t i = 0; r == 0 && i < b->n; i++)
		if (b->entries[i].has_new && !seen[i])
			r = al_fail(err, AL_EINVAL, 0, "bundle refused: no member for %s",
				    b->entries[i].path);
	free(seen);
	return r;
}

/* ---- through libarchive: any tar.zst ---- */

struct la_src {
	struct src s;
	struct archive *a;
	bool first;
};

static int la_next(struct src *s, struct member *m, struct al_error *err)
{
	struct la_src *l = (struct la_src *)s;
	struct archive_entry *ae;
	int rc = dl_archive.read_next_header(l->a, &ae);
	bool first = l->first;
	l->first = false;
	if (rc == ARCHIVE_EOF && !first)
		return 0;
	if (!al_archive_header_ok(l->a, rc))
		return first ? al_fail(err, AL_EINVAL, 0,
				       "bundle refused: not a tar.zst archive (%s)",
				       dl_archive.error_string(l->a))
			     : al_fail(err, AL_EINVAL, 0, "bundle refused: %s",
				       dl_archive.error_string(l->a));
	if (first && dl_archive.filter_code(l->a, 0) != ARCHIVE_FILTER_ZSTD)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: not zstd-compressed");
	*m = (struct member){
		.name = dl_archive.entry_pathname(ae),
		.type = dl_archive.entry_filetype(ae),
		.mode = dl_archive.entry_mode(ae),
		.size = dl_archive.entry_size(ae),
		.link = dl_archive.entry_symlink(ae),
		.hardlink = dl_archive.entry_hardlink(ae) != NULL,
	};
	return 1;
}

static ssize_t la_read(struct src *s, void *buf, size_t n)
{
	return dl_archive.read_data(((struct la_src *)s)->a, buf, n);
}

static int64_t la_consumed(struct src *s)
{
	return dl_archive.filter_bytes(((struct la_src *)s)->a, -1);
}

static const char *la_why(struct src *s)
{
	return dl_archive.error_string(((struct la_src *)s)->a);
}

static int read_archive(struct archive *a, struct al_cas *cas, struct al_bundle *b, bool outsider,
			struct al_error *err)
{
	struct la_src l = { { la_next, la_read, la_consumed, la_why }, a, true };
	return read_tar(&l.s, cas, b, outsider, err);
}

/* ---- the plain reader: a bundle this library wrote plain ---- */

struct plain_src {
	struct src s;
	int fd;
	ZSTD_DCtx *z;
	ZSTD_inBuffer ib;
	bool in_end;    /* the file is read to its end */
	bool frame_end; /* the last step ended a frame: zstd holds nothing back */
	bool unplain;   /* a member that is not plain: libarchive's to read */
	int64_t consumed;
	uint64_t left; /* of the current member's data, then its padding */
	uint64_t pad;
	const char *why;
	char name[USTAR_NAME + 1], link[USTAR_NAME + 1];
	char in[65536];
};

/* Up to n bytes of the tar: fewer only at its end, -1 with why set. */
static ssize_t plain_raw(struct plain_src *p, void *buf, size_t n)
{
	ZSTD_outBuffer out = { buf, n, 0 };
	while (out.pos < out.size) {
		size_t opos = out.pos, ipos = p->ib.pos;
		size_t rc = ZSTD_decompressStream(p->z, &out, &p->ib);
		if (ZSTD_isError(rc)) {
			p->why = ZSTD_getErrorName(rc);
			return -1;
		}
		if (out.pos > opos || p->ib.pos > ipos) {
			p->frame_end = rc == 0;
			continue;
		}
		if (p->in_end)
			break;
		ssize_t k = read(p->fd, p->in, sizeof(p->in));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			p->why = strerror(errno);
			return -1;
		}
		p->in_end = k == 0;
		p->ib = (ZSTD_inBuffer){ p->in, (size_t)k, 0 };
		p->consumed += k;
	}
	return (ssize_t)out.pos;
}

/* The value of an octal field: digits, then NUL or space to its end. */
static bool plain_octal(const char *f, size_t len, uint64_t *v)
{
	size_t i = 0;
	*v = 0;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++)
		*v = *v << 3 | (uint64_t)(f[i] - '0');
	if (i == 0) /* (a field is at most 12 bytes: no overflow) */
		return false;
	for (; i < len; i++)
		if (f[i] != 0 && f[i] != ' ')
			return false;
	return true;
}

static int plain_next(struct src *s, struct member *m, struct al_error *err)
{
	struct plain_src *p = (struct plain_src *)s;
	char h[BLOCK];
	/* what is left of the member before: its data, its padding */
	for (uint64_t skip = p->left + p->pad; skip > 0;) {
		ssize_t n = plain_raw(p, h, skip < BLOCK ? skip : BLOCK);
		if (n <= 0)
			return al_fail(err, AL_EINVAL, 0, "bundle refused: %s",
				       n < 0 ? p->why : "truncated");
		skip -= (uint64_t)n;
	}
	p->left = p->pad = 0;
	ssize_t n = plain_raw(p, h, BLOCK);
	if (n != BLOCK)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: %s",
			       n < 0 ? p->why : "truncated");
	static const char zeros[BLOCK];
	if (memcmp(h, zeros, BLOCK) == 0) {
		/* the end: a second zero block, then nothing */
		char extra;
		if (plain_raw(p, h, BLOCK) != BLOCK || memcmp(h, zeros, BLOCK) != 0 ||
		    plain_raw(p, &extra, 1) != 0 || !p->frame_end || p->ib.pos != p->ib.size)
			return al_fail(err, AL_EINVAL, 0, "bundle refused: damaged end of archive");
		return 0;
	}
	uint64_t sum = 0, want, mode, size;
	for (int i = 0; i < BLOCK; i++)
		sum += i >= 148 && i < 156 ? ' ' : (unsigned char)h[i];
	if (!plain_octal(h + 148, 8, &want) || want != sum || !plain_octal(h + 100, 8, &mode) ||
	    !plain_octal(h + 124, 12, &size))
		return al_fail(err, AL_EINVAL, 0, "bundle refused: damaged tar header");
	char type = h[156];
	/* what the plain writer never writes: an extended header, a name
	 * split with a prefix, another tar dialect */
	if (memcmp(h + 257,
		   "ustar\0"
		   "00",
		   8) != 0 ||
	    h[345] != 0 || (type != '0' && type != '2' && type != '5') ||
	    (type != '0' && size != 0)) {
		p->unplain = true;
		return al_fail(err, AL_EINVAL, 0, "bundle refused: not a plain ustar member");
	}
	memcpy(p->name, h, USTAR_NAME);
	p->name[USTAR_NAME] = 0;
	memcpy(p->link, h + 157, USTAR_NAME);
	p->link[USTAR_NAME] = 0;
	*m = (struct member){
		.name = p->name,
		.type = type == '0'   ? AE_IFREG
			: type == '2' ? AE_IFLNK
				      : AE_IFDIR,
		.mode = (unsigned)mode,
		.size = (int64_t)size,
		.link = type == '2' ? p->link : NULL,
	};
	p->left = size;
	p->pad = (BLOCK - size % BLOCK) % BLOCK;
	return 1;
}

static ssize_t plain_read(struct src *s, void *buf, size_t n)
{
	struct plain_src *p = (struct plain_src *)s;
	if (n > p->left)
		n = p->left;
	if (n == 0)
		return 0;
	ssize_t got = plain_raw(p, buf, n);
	if (got >= 0 && (size_t)got < n) {
		p->why = "truncated";
		return -1;
	}
	if (got > 0)
		p->left -= (uint64_t)got;
	return got;
}

static int64_t plain_consumed(struct src *s)
{
	return ((struct plain_src *)s)->consumed;
}

static const char *plain_why(struct src *s)
{
	return ((struct plain_src *)s)->why;
}

/* A bundle this library has just written, read without libarchive when
 * every member is plain: 1 (and nothing kept) when one is not. */
static int read_plain(struct al_cas *cas, int fd, struct al_bundle *out, struct al_error *err)
{
	struct plain_src *p = calloc(1, sizeof(*p));
	ZSTD_DCtx *z = ZSTD_createDCtx();
	int r;
	if (!p || !z) {
		r = al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
	} else {
		p->s = (struct src){ plain_next, plain_read, plain_consumed, plain_why };
		p->fd = fd;
		p->z = z;
		p->ib = (ZSTD_inBuffer){ p->in, 0, 0 };
		r = read_tar(&p->s, cas, out, false, err);
		if (r < 0 && p->unplain)
			r = 1;
	}
	if (r != 0)
		al_bundle_release(out);
	ZSTD_freeDCtx(z);
	free(p);
	return r;
}

static struct archive *reader(void)
{
	struct archive *a = dl_archive_read_new();
	if (!a)
		return NULL;
	dl_archive.read_support_filter_zstd(a);
	dl_archive.read_support_format_tar(a);
	return a;
}

static int read_fd(struct al_cas *cas, int fd, bool outsider, struct al_bundle *out,
		   struct al_error *err)
{
	_cleanup_locale_ locale_t prev = al_c_locale_enter(); /* names as bytes (util.h) */
	memset(out, 0, sizeof(*out));
	if (dl_load_archive(err) < 0)
		return err->code;
	struct archive *a = reader();
	if (!a)
		return al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
	int r = dl_archive.read_open_fd(a, fd, 65536) == ARCHIVE_OK
			? read_archive(a, cas, out, outsider, err)
			: al_fail(err, AL_EINVAL, 0, "bundle refused: %s",
				  dl_archive.error_string(a));
	dl_archive.read_free(a);
	if (r < 0)
		al_bundle_release(out);
	return r;
}

int al_bundle_read_fd(struct al_cas *cas, int fd, struct al_bundle *out, struct al_error *err)
{
	return read_fd(cas, fd, true, out, err);
}

int al_bundle__read_own_fd(struct al_cas *cas, int fd, struct al_bundle *out, struct al_error *err)
{
	_cleanup_locale_ locale_t prev = al_c_locale_enter(); /* names as bytes (util.h) */
	memset(out, 0, sizeof(*out));
	/* the plain writer's frame declares its size, libarchive's never:
	 * a bundle libarchive wrote is not read twice */
	off_t at = lseek(fd, 0, SEEK_CUR);
	char fh[18]; /* a frame header's largest size (zstd.h's static-only API) */
	ssize_t n = at < 0 ? -1 : pread(fd, fh, sizeof(fh), at);
	unsigned long long size =
		n > 0 ? ZSTD_getFrameContentSize(fh, (size_t)n) : ZSTD_CONTENTSIZE_ERROR;
	if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR)
		return read_fd(cas, fd, false, out, err);
	struct al_error plain_err = { 0 };
	int r = read_plain(cas, fd, out, &plain_err);
	if (r <= 0) {
		if (r < 0)
			*err = plain_err;
		return r;
	}
	if (lseek(fd, at, SEEK_SET) != at)
		return al_fail(err, AL_EIO, errno, "bundle: rewind");
	return read_fd(cas, fd, false, out, err);
}

int al_bundle_read_mem(struct al_cas *cas, const void *data, size_t len, struct al_bundle *out,
		       struct al_error *err)
{
	_cleanup_locale_ locale_t prev = al_c_locale_enter(); /* names as bytes (util.h) */
	memset(out, 0, sizeof(*out));
	if (dl_load_archive(err) < 0)
		return err->code;
	struct archive *a = reader();
	if (!a)
		return al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
	int r = dl_archive.read_open_memory(a, data, len) == ARCHIVE_OK
			? read_archive(a, cas, out, true, err)
			: al_fail(err, AL_EINVAL, 0, "bundle refused: %s",
				  dl_archive.error_string(a));
	dl_archive.read_free(a);
	if (r < 0)
		al_bundle_release(out);
	return r;
}

/* ---- apply -------------------------------------------------------------------- */

int al_bundle_apply_tree(struct al_cas *cas, const struct al_bundle *b, const struct al_oid *onto,
			 struct al_oid *out, struct al_error *err)
{
	struct al_edit *ed = calloc(b->n ? b->n : 1, sizeof(*ed));
	if (!ed)
		return al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
	char id[AL_OID_STRLEN + 1];
	al_oid_fmt(onto, id);
	int r = 0;
	for (size_t i = 0; i < b->n && r == 0; i++) {
		const struct al_bundle_entry *e = &b->entries[i];
		struct al_entry cur;
		struct al_error e2 = { 0 };
		int lr = al_manifest_lookup(cas, onto, e->path, &cur, &e2);
		if (lr < 0 && lr != AL_ENOTFOUND) {
			*err = e2;
			r = lr;
			break;
		}
		if (e->has_old &&
		    (lr == AL_ENOTFOUND || cur.type != e->old.type ||
		     (cur.type != AL_T_DIR && !al_oid_eq(&cur.digest, &e->old.digest))))
			r = al_fail(
				err, AL_EINVAL, 0,
				"bundle does not apply to %s: %s differs from the bundle's base",
				id, e->path);
		else if (!e->has_old && lr == 0)
			r = al_fail(err, AL_EINVAL, 0,
				    "bundle does not apply to %s: %s already exists", id, e->path);
		ed[i].path = e->path;
		ed[i].op = e->has_new ? AL_EDIT_SET : AL_EDIT_DELETE;
		if (e->has_new)
			ed[i].entry = e->new; /* a directory's digest is zero: keep/create */
	}
	if (r == 0)
		r = al_manifest_edit(cas, onto, ed, b->n, out, err);
	free(ed);
	return r;
}
