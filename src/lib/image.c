/* image: named snapshots for sandbox root filesystems (image.h). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "airlock/dl_archive.h"
#include "airlock/image.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "ledger_private.h"
#include "db.h"
#include "store_private.h"
#include "util.h"

/* The decompressors an outsider's archive may use: libarchive's built-in
 * ones only.  archive_read_support_filter_*() answers ARCHIVE_WARN when
 * the library lacks one and would run an external program instead (gzip,
 * xz, zstd, bzip2 from PATH): such a filter is not enabled, so an archive
 * compressed with it is refused as not a tar archive. */
static struct archive *reader_new(struct al_error *err)
{
	if (dl_load_archive(err) < 0)
		return NULL;
	int (*const filters[])(struct archive *) = {
		dl_archive.read_support_filter_gzip,
		dl_archive.read_support_filter_xz,
		dl_archive.read_support_filter_zstd,
		dl_archive.read_support_filter_bzip2,
	};
	unsigned external = 0;
	for (;;) {
		struct archive *a = dl_archive_read_new();
		if (!a) {
			al_fail(err, AL_ENOMEM, ENOMEM, "image");
			return NULL;
		}
		bool retry = false;
		for (unsigned i = 0; i < ARRAY_SIZE(filters) && !retry; i++) {
			if (external & (1u << i))
				continue;
			int rc = filters[i](a);
			if (rc == ARCHIVE_WARN) {
				external |= 1u << i;
				retry = true;
			} else if (rc != ARCHIVE_OK) {
				al_fail(err, AL_EIO, 0, "image: libarchive: %s",
					dl_archive.error_string(a));
				dl_archive.read_free(a);
				return NULL;
			}
		}
		if (!retry) {
			dl_archive.read_support_format_tar(a);
			return a;
		}
		dl_archive.read_free(a);
	}
}

/* What an archive may unpack into (image.h): each refusal is AL_ELIMIT. */
struct budget {
	struct archive *a;
	uint64_t bytes, entries;
};

static int budget_check(struct budget *b, uint64_t bytes, struct al_error *err)
{
	if (bytes > AL_TAR_MAX_BYTES)
		return al_fail(err, AL_ELIMIT, 0,
			       "archive refused: it unpacks to more than %llu bytes (the cap)",
			       (unsigned long long)AL_TAR_MAX_BYTES);
	/* bytes read from the source so far: libarchive reads ahead, so this
	 * is at least what produced the bytes unpacked */
	la_int64_t in = dl_archive.filter_bytes(b->a, -1);
	uint64_t packed = in > 0 ? (uint64_t)in : 0;
	if (bytes > AL_TAR_RATIO_GRACE && bytes / AL_TAR_MAX_RATIO > packed)
		return al_fail(err, AL_ELIMIT, 0,
			       "archive refused: it expands more than %u times (%llu bytes "
			       "unpacked from %llu read)",
			       AL_TAR_MAX_RATIO, (unsigned long long)bytes,
			       (unsigned long long)packed);
	return 0;
}

static int unpack(const char *tarball, const char *dest, uint64_t *skipped, struct al_error *err)
{
	_cleanup_locale_ locale_t prev = al_c_locale_enter(); /* names as bytes (util.h) */
	struct archive *a = reader_new(err), *w = a ? dl_archive_write_disk_new() : NULL;
	if (!a)
		return err->code;
	if (!w) {
		dl_archive.read_free(a);
		return al_fail(err, AL_ENOMEM, ENOMEM, "image");
	}
	/* members are placed under dest by prefixing it, so absolute member
	 * names are refused here; ".." and writing through symlinks by
	 * libarchive's guards */
	dl_archive.write_disk_set_options(w, ARCHIVE_EXTRACT_PERM |
						     ARCHIVE_EXTRACT_SECURE_SYMLINKS |
						     ARCHIVE_EXTRACT_SECURE_NODOTDOT);
	struct budget bud = { .a = a };
	int r = 0;
	if (dl_archive.read_open_filename(a, tarball, 65536) != ARCHIVE_OK)
		r = al_fail(err, AL_EINVAL, 0, "image: %s is not a tar archive (%s)", tarball,
			    dl_archive.error_string(a));
	struct archive_entry *e;
	int rc = ARCHIVE_OK;
	while (r == 0 && al_archive_header_ok(a, rc = dl_archive.read_next_header(a, &e))) {
		/* every member counts, the skipped ones too: each costs a header's work */
		if (++bud.entries > AL_TAR_MAX_ENTRIES) {
			r = al_fail(err, AL_ELIMIT, 0,
				    "archive refused: more than %u members (the cap)",
				    AL_TAR_MAX_ENTRIES);
			break;
		}
		mode_t t = dl_archive.entry_filetype(e);
		if (t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK) {
			(*skipped)++;
			continue;
		}
		char path[4200], name[4096];
		/* a copy: setting the pathname below frees libarchive's string */
		const char *orig = dl_archive.entry_pathname(e);
		snprintf(name, sizeof(name), "%s", orig ? orig : "");
		if (!orig || name[0] == '/' ||
		    snprintf(path, sizeof(path), "%s/%s", dest, name) >= (int)sizeof(path)) {
			r = al_fail(err, AL_EINVAL, 0,
				    "image: refused member %s: absolute or too long", name);
			break;
		}
		if (!al_utf8_valid((const uint8_t *)name, strlen(name))) {
			char q[300];
			al_quote(name, strnlen(name, 200), q, sizeof(q));
			r = al_fail(err, AL_EINVAL, 0,
				    "image: refused member '%s': its name is not valid UTF-8", q);
			break;
		}
		dl_archive.entry_set_pathname(e, path);
		/* the apparent size is what the import reads and hashes: a
		 * sparse member's holes and a hardlink's target count in full */
		uint64_t declared = dl_archive.entry_size_is_set(e) && dl_archive.entry_size(e) > 0
					    ? (uint64_t)dl_archive.entry_size(e)
					    : 0;
		const char *hl = dl_archive.entry_hardlink(e);
		if (hl) {
			char hpath[4200];
			struct stat hs;
			if (hl[0] == '/' || snprintf(hpath, sizeof(hpath), "%s/%s", dest, hl) >=
						    (int)sizeof(hpath)) {
				r = al_fail(err, AL_EINVAL, 0, "image: bad hardlink target");
				break;
			}
			if (lstat(hpath, &hs) == 0 && S_ISREG(hs.st_mode) &&
			    (uint64_t)hs.st_size > declared)
				declared = (uint64_t)hs.st_size;
			dl_archive.entry_set_hardlink(e, hpath);
		}
		/* the total is checked on the declared size, before a byte is
		 * written; the ratio only on bytes as they are produced (a
		 * large member's header comes before its compressed data) */
		if (declared > AL_TAR_MAX_BYTES - bud.bytes) {
			r = budget_check(&bud, AL_TAR_MAX_BYTES + 1, err);
			break;
		}
		if (dl_archive.write_header(w, e) != ARCHIVE_OK) {
			r = al_fail(err, AL_EINVAL, 0, "image: refused member %s: %s", name,
				    dl_archive.error_string(w));
			break;
		}
		const void *buf;
		size_t size;
		la_int64_t off;
		uint64_t end = 0;
		while ((rc = dl_archive.read_data_block(a, &buf, &size, &off)) == ARCHIVE_OK) {
			if (off >= 0 && (uint64_t)off + size > end)
				end = (uint64_t)off + size;
			if ((r = budget_check(&bud, bud.bytes + end, err)) < 0)
				break;
			if (dl_archive.write_data_block(w, buf, size, off) != ARCHIVE_OK) {
				r = al_fail(err, AL_EIO, 0, "image: write %s: %s", name,
					    dl_archive.error_string(w));
				break;
			}
		}
		if (r == 0 && rc != ARCHIVE_EOF)
			r = al_fail(err, AL_EINVAL, 0, "image: read %s: %s", name,
				    dl_archive.error_string(a));
		/* a trailing hole is made when the entry is finished: counted before */
		bud.bytes += end > declared ? end : declared;
		if (r == 0)
			r = budget_check(&bud, bud.bytes, err);
		if (r == 0 && dl_archive.write_finish_entry(w) != ARCHIVE_OK)
			r = al_fail(err, AL_EIO, 0, "image: %s: %s", name,
				    dl_archive.error_string(w));
	}
	if (r == 0 && rc != ARCHIVE_EOF)
		r = al_fail(err, AL_EINVAL, 0, "image: %s", dl_archive.error_string(a));
	dl_archive.write_close(w);
	dl_archive.write_free(w);
	dl_archive.read_free(a);
	return r;
}

/* The image's row and its image_import ledger entry, in one transaction.
 * A named image imported again replaces its row (DELETE + INSERT, alike
 * on both engines) and keeps its place in listing order (seq). */
static int record_row(struct al_db *db, const struct al_oid *id, const char *name,
		      const char *source, struct al_error *err)
{
	int r;
	_cleanup_db_stmt_ struct al_db_stmt *old = NULL, *del = NULL, *ins = NULL;
	if ((r = al_db_prepare(db, "SELECT seq FROM images WHERE name = ?1", &old, err)) < 0 ||
	    (r = al_db_prepare(db, "DELETE FROM images WHERE name = ?1", &del, err)) < 0 ||
	    (r = al_db_prepare(db,
			       "INSERT INTO images(name, snapshot, created, source, seq) VALUES "
			       "(?1, ?2, ?3, ?4, COALESCE(?5, (SELECT COALESCE(MAX(seq), 0) + 1 "
			       "FROM images)))",
			       &ins, err)) < 0)
		return r;
	if (name) {
		al_db_bind_text(old, 1, name, -1);
		al_db_bind_text(del, 1, name, -1);
		al_db_bind_text(ins, 1, name, -1);
	} else {
		al_db_bind_null(old, 1);
		al_db_bind_null(del, 1);
		al_db_bind_null(ins, 1);
	}
	al_db_bind_blob(ins, 2, id->b, AL_OID_LEN);
	al_db_bind_int64(ins, 3, al_wall_s());
	al_db_bind_text(ins, 4, source, -1);
	if ((r = al_db_step(old, err)) < 0)
		return al_error_prefix(err, "record image: ");
	if (r == AL_DB_ROW)
		al_db_bind_int64(ins, 5, al_db_column_int64(old, 0));
	else
		al_db_bind_null(ins, 5);
	if ((r = al_db_step(del, err)) < 0 || (r = al_db_step(ins, err)) < 0)
		return al_error_prefix(err, "record image: ");
	return 0;
}

static int record(struct al_store *st, const struct al_oid *id, const char *name,
		  const char *source, const char *actor, struct al_error *err)
{
	struct al_db *db;
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	int r = al_store__meta_db(st, &db, err);
	if (r < 0 || (r = al_db_begin(db, AL_DB_WRITE, &txn, err)) < 0)
		return r;
	r = record_row(db, id, name, source, err);
	char hex[AL_OID_STRLEN + 1], group[17];
	al_oid_fmt(id, hex);
	al_ledger__new_group(group);
	json_t *data = json_pack("{s:s?,s:s,s:s}", "name", name, "snapshot", hex, "source", source);
	struct al_ledger_rec lr = {
		.kind = "image_import", .group = group, .actor = actor ? actor : "", .data = data
	};
	if (r == 0)
		r = data ? al_ledger__append_txn(st, &txn, &lr, NULL, err)
			 : al_fail(err, AL_ENOMEM, ENOMEM, "ledger");
	json_decref(data);
	return al_ledger__commit(st, &txn, r, err);
}

int al_tar_import(struct al_store *st, const char *tarball, struct al_import_result *res,
		  struct al_error *err)
{
	struct al_import_opts o = { .no_cache = true, .skip_special = true };
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s/tmp/image-XXXXXX", al_store_dir(st));
	if (!mkdtemp(tmp))
		return al_fail(err, AL_EIO, errno, "image: temp directory");
	uint64_t skipped = 0;
	int r = unpack(tarball, tmp, &skipped, err);
	if (r == 0)
		r = al_manifest_import(st, tmp, &o, res, err);
	if (r == 0)
		res->skipped += skipped;
	al_rm_tree(tmp);
	return r;
}

int al_image_import(struct al_store *st, const char *src, const char *name,
		    struct al_import_result *res, struct al_error *err)
{
	return al_image_import_as(st, src, name, src, NULL, res, err);
}

int al_image_import_as(struct al_store *st, const char *src, const char *name, const char *source,
		       const char *actor, struct al_import_result *res, struct al_error *err)
{
	int r;
	if (name && (r = al_project_name_check(name, err)) < 0)
		return al_error_prefix(err, "image: ");
	struct stat s;
	if (stat(src, &s) < 0)
		return al_fail(err, errno == ENOENT ? AL_ENOTFOUND : AL_EIO, errno, "image %s",
			       src);
	struct al_import_opts o = { .no_cache = true, .skip_special = true };
	if (S_ISDIR(s.st_mode)) {
		r = al_manifest_import(st, src, &o, res, err);
	} else if (S_ISREG(s.st_mode)) {
		r = al_tar_import(st, src, res, err);
	} else {
		return al_fail(err, AL_EINVAL, 0,
			       "image: %s is neither a directory nor a tar archive", src);
	}
	if (r == 0)
		r = record(st, &res->id, name, source, actor, err);
	return r;
}

int al_image_foreach(struct al_store *st, al_image_fn fn, void *ctx, struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	if ((r = al_db_prepare(
		     db, "SELECT name, snapshot, created, source FROM images ORDER BY created, seq",
		     &q, err)) < 0)
		return r;
	int rc;
	while ((rc = al_db_step(q, err)) == AL_DB_ROW) {
		struct al_image_info im = { 0 };
		const char *n = al_db_column_text(q, 0);
		snprintf(im.name, sizeof(im.name), "%s", n ? n : "");
		if (al_db_column_bytes(q, 1) != AL_OID_LEN)
			return al_fail(err, AL_ECORRUPT, 0, "image %s has a malformed id", im.name);
		memcpy(im.id.b, al_db_column_blob(q, 1), AL_OID_LEN);
		im.created = al_db_column_int64(q, 2);
		im.source = al_db_column_text(q, 3);
		if ((r = fn(ctx, &im, err)) != 0)
			return r;
	}
	return rc < 0 ? al_error_prefix(err, "images: ") : 0;
}

/* Is id a registered image, or in the history of a project the caller
 * may read (image.h)?  Only metadata is read, the same queries whatever
 * the answer. */
static int id_acceptable(struct al_db *db, const struct al_oid *id, al_project_read_fn may_read,
			 void *ctx, bool *ok, struct al_error *err)
{
	*ok = false;
	_cleanup_db_stmt_ struct al_db_stmt *img = NULL, *proj = NULL;
	int r = al_db_prepare(db, "SELECT 1 FROM images WHERE snapshot = ?1", &img, err);
	if (r < 0)
		return r;
	al_db_bind_blob(img, 1, id->b, AL_OID_LEN);
	int rc = al_db_step(img, err);
	if (rc == AL_DB_ROW) {
		*ok = true;
		return 0;
	}
	if (rc < 0)
		return al_error_prefix(err, "image: ");
	if ((r = al_db_prepare(
		     db,
		     "SELECT p.name FROM projects p JOIN volumes v ON v.id = p.volume WHERE v.head "
		     "= ?1 "
		     "UNION SELECT p.name FROM projects p JOIN commits c ON c.volume = p.volume "
		     "WHERE c.parent = ?1 OR c.result = ?1",
		     &proj, err)) < 0)
		return r;
	al_db_bind_blob(proj, 1, id->b, AL_OID_LEN);
	while ((rc = al_db_step(proj, err)) == AL_DB_ROW) {
		const char *name = al_db_column_text(proj, 0);
		if (name && (!may_read || may_read(ctx, name)))
			*ok = true;
	}
	return rc < 0 ? al_error_prefix(err, "image: ") : 0;
}

int al_image_resolve(struct al_store *st, const char *ref, struct al_oid *id, struct al_error *err)
{
	return al_image_resolve_as(st, ref, NULL, NULL, id, err);
}

int al_image_resolve_as(struct al_store *st, const char *ref, al_project_read_fn may_read,
			void *ctx, struct al_oid *id, struct al_error *err)
{
	struct al_db *db;
	int r;
	if (strncmp(ref, "sha256:", 7) == 0) {
		bool ok;
		if ((r = al_oid_parse(ref, id, err)) < 0 ||
		    (r = al_store__meta_db(st, &db, err)) < 0 ||
		    (r = id_acceptable(db, id, may_read, ctx, &ok, err)) < 0)
			return r;
		if (!ok)
			return al_fail(err, AL_ENOTFOUND, 0,
				       "no such image: an image is a registered image's name or "
				       "id, or a snapshot of a "
				       "project you may read");
		return al_manifest_stat(al_store_cas(st), id, NULL, NULL, err);
	}
	if ((r = al_store__meta_db(st, &db, err)) < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	if ((r = al_db_prepare(db, "SELECT snapshot FROM images WHERE name = ?1", &q, err)) < 0)
		return r;
	al_db_bind_text(q, 1, ref, -1);
	if (al_db_step(q, NULL) != AL_DB_ROW || al_db_column_bytes(q, 0) != AL_OID_LEN) {
		char s[100];
		al_quote(ref, strnlen(ref, 80), s, sizeof(s));
		return al_fail(err, AL_ENOTFOUND, 0, "no image %s", s);
	}
	memcpy(id->b, al_db_column_blob(q, 0), AL_OID_LEN);
	return 0;
}
