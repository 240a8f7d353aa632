/* delta: DeltaBundle write, read and verify (include/airlock/delta.h).
 * libarchive writes and reads the tar.zst; jansson the canonical index. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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
		snprintf(name, sizeof(name), FILES_PREFIX "%s%s", c->path,
			 c->new.type == AL_T_DIR ? "/" : "");
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

/* An octal field of a ustar header, as libarchive writes it: zero-padded
 * digits, then what the field's template ends with. */
static void ustar_octal(char *field, size_t digits, uint64_t v)
{
	for (size_t i = digits; i-- > 0; v >>= 3)
		field[i] = (char)('0' + (v & 7));
}

/* The bundle of no change, its index alone, written without libarchive
 * (which loads 11 shared libraries, dl_archive.h: most of what an empty
 * run's collection cost).  The tar is libarchive's, byte for byte: one
 * ustar member (its pax writer adds no extended header for this ASCII
 * name), then the two end-of-archive blocks (a compressing filter gets no
 * padding to the record size); test_delta holds the two to the same tar.
 * Compressed at libarchive's zstd level (3) in one frame that declares
 * its size, where libarchive's stream leaves it undeclared. */
static int write_index_only(int fd, const char *index, struct al_error *err)
{
	enum { BLOCK = 512 };
	size_t ilen = strlen(index);
	size_t tlen = BLOCK + (ilen + BLOCK - 1) / BLOCK * BLOCK + 2 * BLOCK;
	char *tar = calloc(1, tlen);
	size_t cap = ZSTD_compressBound(tlen);
	char *out = malloc(cap);
	ZSTD_CCtx *z = ZSTD_createCCtx();
	int r = 0;
	if (!tar || !out || !z) {
		r = al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
		goto done;
	}
	/* libarchive's ustar template: mode, uid, gid, size, mtime, checksum,
	 * type, magic, version, device numbers */
	static const char zero8[8] = "000000 ", zero12[12] = "00000000000 ";
	memcpy(tar, INDEX_NAME, sizeof(INDEX_NAME) - 1);
	memcpy(tar + 100, zero8, 8);
	memcpy(tar + 103, "644", 3);
	memcpy(tar + 108, zero8, 8);
	memcpy(tar + 116, zero8, 8);
	memcpy(tar + 124, zero12, 12);
	ustar_octal(tar + 124, 11, ilen);
	memcpy(tar + 136, zero12, 12);
	memset(tar + 148, ' ', 8);
	tar[156] = '0';
	memcpy(tar + 257, "ustar", 6);
	memcpy(tar + 263, "00", 2);
	memcpy(tar + 329, zero8, 8);
	memcpy(tar + 337, zero8, 8);
	unsigned sum = 0;
	for (int i = 0; i < BLOCK; i++)
		sum += (unsigned char)tar[i];
	ustar_octal(tar + 148, 6, sum);
	tar[154] = 0;
	memcpy(tar + BLOCK, index, ilen);
	/* one frame that declares its size: zstd then sizes its tables for a
	 * few KiB (a frame of undeclared size, as libarchive's stream writes,
	 * made it allocate and clear about 1 MiB for each bundle: 0.2-0.3 ms
	 * of page faults and memset per run) */
	ZSTD_inBuffer in = { tar, tlen, 0 };
	ZSTD_outBuffer o = { out, cap, 0 };
	size_t left = ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, 3);
	if (!ZSTD_isError(left))
		left = ZSTD_CCtx_setPledgedSrcSize(z, tlen);
	while (!ZSTD_isError(left) && (left = ZSTD_compressStream2(z, &o, &in, ZSTD_e_end)) > 0)
		;
	if (ZSTD_isError(left))
		r = al_fail(err, AL_EIO, 0, "bundle: zstd: %s", ZSTD_getErrorName(left));
	else if (al_write_full(fd, out, o.pos) < 0)
		r = al_fail(err, AL_EIO, errno, "bundle: write");
done:
	ZSTD_freeCCtx(z);
	free(out);
	free(tar);
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
	if (!index)
		r = al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
	else
		al_sha256(index, strlen(index), id_out->b);
	bool alone = !ch.n && !archive; /* the index alone */
	if (r == 0 && alone)
		r = write_index_only(fd, index, err);
	else if (r == 0)
		r = dl_load_archive(err);
	if (r == 0 && !alone) {
		a = dl_archive_write_new();
		if (!a || dl_archive.write_add_filter_zstd(a) != ARCHIVE_OK ||
		    dl_archive.write_set_format_pax_restricted(a) != ARCHIVE_OK ||
		    dl_archive.write_open_fd(a, fd) != ARCHIVE_OK)
			r = al_fail(err, AL_EIO, 0, "bundle: %s",
				    a ? dl_archive.error_string(a) : "libarchive");
	}
	if (r == 0 && !alone)
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

static int read_content(struct archive *a, struct al_cas *cas, struct al_bundle_entry *e,
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
		la_ssize_t n = dl_archive.read_data(a, buf, sizeof(buf));
		if (n < 0) {
			r = al_fail(err, AL_EINVAL, 0, "bundle refused: %s: %s", e->path,
				    dl_archive.error_string(a));
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
		la_int64_t in = dl_archive.filter_bytes(a, -1);
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

static int read_member(struct archive *a, struct archive_entry *ae, struct al_cas *cas,
		       struct al_bundle *b, bool *seen, uint64_t *total, bool outsider,
		       struct al_error *err)
{
	const char *name = dl_archive.entry_pathname(ae);
	char q[300];
	al_quote(name ? name : "", name ? strnlen(name, 200) : 0, q, sizeof(q));
	if (!name || strncmp(name, FILES_PREFIX, strlen(FILES_PREFIX)) != 0)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: unexpected member '%s'", q);
	if (dl_archive.entry_hardlink(ae))
		return al_fail(err, AL_EINVAL, 0, "bundle refused: member '%s' is a hardlink", q);
	mode_t type = dl_archive.entry_filetype(ae);
	if (type != AE_IFREG && type != AE_IFLNK && type != AE_IFDIR)
		return al_fail(err, AL_EINVAL, 0,
			       "bundle refused: member '%s' is a device, FIFO or socket", q);
	unsigned perm = dl_archive.entry_perm(ae) & 07777;
	if (dl_archive.entry_mode(ae) & 06000)
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
	int want = e->new.type == AL_T_FILE      ? AE_IFREG
		   : e->new.type == AL_T_SYMLINK ? AE_IFLNK
						 : AE_IFDIR;
	if ((int)type != want)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: member '%s' is not a %s", q,
			       al_entry_type_name(e->new.type));
	if (type != AE_IFLNK && perm != e->new.mode)
		return al_fail(err, AL_EINVAL, 0,
			       "bundle refused: member '%s' mode differs from the index", q);
	if (type == AE_IFREG) {
		if (dl_archive.entry_size(ae) != (la_int64_t)e->new.size)
			return al_fail(err, AL_EINVAL, 0,
				       "bundle refused: member '%s' size differs from the index",
				       q);
		return read_content(a, cas, e, total, outsider, err);
	}
	if (type == AE_IFLNK) {
		const char *t = dl_archive.entry_symlink(ae);
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

static int read_archive(struct archive *a, struct al_cas *cas, struct al_bundle *b, bool outsider,
			struct al_error *err)
{
	struct archive_entry *ae;
	int rc = dl_archive.read_next_header(a, &ae);
	if (!al_archive_header_ok(a, rc))
		return al_fail(err, AL_EINVAL, 0, "bundle refused: not a tar.zst archive (%s)",
			       dl_archive.error_string(a));
	if (dl_archive.filter_code(a, 0) != ARCHIVE_FILTER_ZSTD)
		return al_fail(err, AL_EINVAL, 0, "bundle refused: not zstd-compressed");
	const char *name = dl_archive.entry_pathname(ae);
	la_int64_t isz = dl_archive.entry_size(ae);
	if (!name || strcmp(name, INDEX_NAME) != 0 || dl_archive.entry_filetype(ae) != AE_IFREG)
		return al_fail(err, AL_EINVAL, 0,
			       "bundle refused: the first member is not " INDEX_NAME);
	if (isz < 0 || isz > (la_int64_t)AL_BUNDLE_MAX_INDEX)
		return al_fail(err, AL_ELIMIT, 0, "bundle refused: index too large");
	char *idx = malloc((size_t)isz + 1);
	if (!idx)
		return al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
	la_ssize_t got = 0, n;
	while (got < isz && (n = dl_archive.read_data(a, idx + got, (size_t)(isz - got))) > 0)
		got += n;
	int r = got == isz ? 0 : al_fail(err, AL_EINVAL, 0, "bundle refused: truncated index");
	if (r == 0) {
		al_sha256(idx, (size_t)isz, b->id.b);
		r = index_parse(idx, (size_t)isz, b, err);
	}
	free(idx);
	if (r < 0)
		return r;
	bool *seen = calloc(b->n ? b->n : 1, sizeof(bool));
	if (!seen)
		return al_fail(err, AL_ENOMEM, ENOMEM, "bundle");
	uint64_t total = 0;
	size_t members = 0;
	while (r == 0 && al_archive_header_ok(a, rc = dl_archive.read_next_header(a, &ae))) {
		if (++members > b->n) {
			r = al_fail(err, AL_EINVAL, 0,
				    "bundle refused: more members than index entries");
			break;
		}
		r = read_member(a, ae, cas, b, seen, &total, outsider, err);
	}
	if (r == 0 && rc != ARCHIVE_EOF)
		r = al_fail(err, AL_EINVAL, 0, "bundle refused: %s", dl_archive.error_string(a));
	for (size_t i = 0; r == 0 && i < b->n; i++)
		if (b->entries[i].has_new && !seen[i])
			r = al_fail(err, AL_EINVAL, 0, "bundle refused: no member for %s",
				    b->entries[i].path);
	free(seen);
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
