/* Small objects in the metadata database (include/airlock/odb_backend.h,
 * al_odb_pg_open).
 *
 * A node on PostgreSQL with its objects on S3 would pay a bucket request
 * for each small object a run or a commit makes (its output, its record,
 * the tree nodes of the paths it touched): 20 ms a PUT on this machine's
 * Swift, more than the run itself.  So objects up to a threshold are rows
 * of blobs_inline (tenant, id, bytes, stored) in the database every node
 * already shares (docs/architecture.md, "Small objects in the database"),
 * and the tier (src/lib/backend/tier.c) sends the others to the bucket.
 *
 * The rules are the bucket's: a write pulls exactly the announced bytes,
 * which must hash to the id, and stores them with the database's clock
 * (stored, the bucket's LastModified); writing an object again rewrites
 * its bytes and its time, as a PUT does, so a re-upload both repairs a row
 * and makes it young again for the sweep.  A read hashes the row before
 * any byte reaches the sink.  Every statement runs on its own (the
 * driver's implicit transaction, tenant set, row-level security on the
 * table): none takes the tenant's write lock, which the store's own
 * metadata transaction may hold while its objects are written. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/odb_backend.h"
#include "airlock/store.h"
#include "backend/odb_common.h"
#include "db.h"
#include "util.h"

/* rows one statement inserts or deletes (two or one placeholders each) */
#define ROWS_PER_INSERT (AL_DB_MAX_PARAMS / 2)
#define ROWS_PER_DELETE (AL_DB_MAX_PARAMS - 1) /* and the sweep's time */
#define PAGE 1000                              /* rows a listing reads at once */
#define MAX_ROWS 10000000ull                   /* rows a listing may report, as the bucket's keys */
#define NOW_S "CAST(extract(epoch FROM clock_timestamp()) AS BIGINT)"

struct pg_odb {
	struct al_odb_backend base;
	struct al_db *db; /* opened at the first statement: most stores never ask */
	char *url;
	char tenant[64];
	uint64_t max;
	uint64_t max_rows; /* rows a listing may report */
};

static struct pg_odb *po(struct al_odb_backend *b)
{
	return (struct pg_odb *)b;
}

static int failed(struct al_error *err)
{
	return al_error_prefix(err, "inline objects: ");
}

/* A statement on the backend's connection, taken from the driver's pool
 * at the first one (a daemon opens a store per request, and most never
 * reach past their local objects). */
static int prepare(struct pg_odb *s, const char *sql, struct al_db_stmt **out, struct al_error *err)
{
	int r = s->db ? 0 : al_db_open_postgres(s->url, s->tenant, &s->db, err);
	return r < 0 ? r : al_db_prepare(s->db, sql, out, err);
}

static int corrupt(struct al_error *err, const struct al_oid *id, const char *why)
{
	char hex[AL_OID_STRLEN + 1];
	al_oid_fmt(id, hex);
	return al_fail(err, AL_ECORRUPT, 0, "object %s is corrupt in the database: %s", hex, why);
}

static int not_found(struct al_error *err, const struct al_oid *id)
{
	char hex[AL_OID_STRLEN + 1];
	al_oid_fmt(id, hex);
	return al_fail(err, AL_ENOTFOUND, 0, "object %s not found in the database", hex);
}

/* One object's row: its bytes (verified) to sink, or only its size. */
static int lookup(struct pg_odb *s, const struct al_oid *id, al_cas_sink sink, void *ctx,
		  uint64_t *size, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	/* without the bytes, the server hashes them: a row that is not its
	 * object is no copy of it (the tier then asks the bucket, and a
	 * re-upload, admin blobs sync's, writes it again) */
	int r = prepare(s,
			sink ? "SELECT bytes FROM blobs_inline WHERE id = ?1"
			     : "SELECT CAST(octet_length(bytes) AS BIGINT), "
			       "CAST(sha256(bytes) = id AS INT) FROM blobs_inline WHERE id = ?1",
			&q, err);
	if (r < 0)
		return failed(err);
	al_db_bind_blob(q, 1, id->b, AL_OID_LEN);
	if ((r = al_db_step(q, err)) < 0)
		return failed(err);
	if (r == AL_DB_DONE)
		return not_found(err, id);
	if (!sink) {
		int64_t n = al_db_column_int64(q, 0);
		if (n < 0 || n > AL_ODB_INLINE_CAP)
			return corrupt(err, id,
				       "larger than an object kept in the database can be");
		if (al_db_column_int64(q, 1) != 1)
			return corrupt(err, id, "digest mismatch");
		*size = (uint64_t)n;
		return 0;
	}
	size_t n = al_db_column_bytes(q, 0);
	const void *p = al_db_column_blob(q, 0);
	if (n > AL_ODB_INLINE_CAP)
		return corrupt(err, id, "larger than an object kept in the database can be");
	struct al_oid got;
	al_sha256(n ? p : "", n, got.b);
	if (!al_oid_eq(&got, id))
		return corrupt(err, id, "digest mismatch");
	return n ? sink(ctx, p, n, err) : 0;
}

static int pg_read(struct al_odb_backend *b, const struct al_oid *id, al_cas_sink sink, void *ctx,
		   struct al_error *err)
{
	return lookup(po(b), id, sink, ctx, NULL, err);
}

static int pg_read_header(struct al_odb_backend *b, const struct al_oid *id, uint64_t *size,
			  struct al_error *err)
{
	return lookup(po(b), id, NULL, NULL, size, err);
}

/* a corrupt row is no copy: absent (the error says why) */
static int pg_exists(struct al_odb_backend *b, const struct al_oid *id, struct al_error *err)
{
	uint64_t size;
	int r = lookup(po(b), id, NULL, NULL, &size, err);
	return r == AL_ENOTFOUND || r == AL_ECORRUPT ? 0 : r < 0 ? r : 1;
}

/* ---- writing -------------------------------------------------------------------- */

/* Exactly size bytes of src into a new buffer, which must hash to id. */
static int pull(struct pg_odb *s, const struct al_oid *id, uint64_t size, al_odb_source src,
		void *ctx, uint8_t **out, struct al_error *err)
{
	if (size > s->max)
		return al_fail(err, AL_EINVAL, 0,
			       "inline objects: %llu bytes is more than the %llu kept in the "
			       "database",
			       (unsigned long long)size, (unsigned long long)s->max);
	uint8_t *p = NULL;
	int r = al_odb__read_exact(src, ctx, size, &p, err);
	if (r < 0)
		return r;
	struct al_oid h;
	al_sha256(p, size, h.b);
	if (!al_oid_eq(&h, id)) {
		char hex[AL_OID_STRLEN + 1];
		al_oid_fmt(id, hex);
		free(p);
		return al_fail(err, AL_ECORRUPT, 0,
			       "odb: the bytes written as %s hash to another id", hex);
	}
	*out = p;
	return 0;
}

struct row {
	const struct al_oid *id;
	uint8_t *bytes;
	size_t len;
};

static int row_cmp(const void *a, const void *b)
{
	return memcmp(((const struct row *)a)->id->b, ((const struct row *)b)->id->b, AL_OID_LEN);
}

static int insert_once(struct pg_odb *s, const struct row *rows, size_t n, struct al_error *err)
{
	char sql[160 + ROWS_PER_INSERT * 80];
	size_t l = (size_t)snprintf(sql, sizeof(sql),
				    "INSERT INTO blobs_inline(id, bytes, stored) VALUES ");
	for (size_t i = 0; i < n; i++)
		l += (size_t)snprintf(sql + l, sizeof(sql) - l, "%s(?%zu, ?%zu, " NOW_S ")",
				      i ? ", " : "", 2 * i + 1, 2 * i + 2);
	snprintf(sql + l, sizeof(sql) - l,
		 " ON CONFLICT (tenant, id) DO UPDATE SET bytes = EXCLUDED.bytes,"
		 " stored = EXCLUDED.stored");
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = prepare(s, sql, &q, err);
	if (r < 0)
		return failed(err);
	for (size_t i = 0; i < n; i++) {
		al_db_bind_blob(q, (int)(2 * i + 1), rows[i].id->b, AL_OID_LEN);
		al_db_bind_blob(q, (int)(2 * i + 2), rows[i].bytes, rows[i].len);
	}
	return al_db_step(q, err) < 0 ? failed(err) : 0;
}

/* rows (at most ROWS_PER_INSERT, ids distinct) in one statement, so one
 * commit: written again, a row takes the new bytes and the new time.  In
 * id order, as a sweep deletes, so two statements on the same rows take
 * their locks in one order; one that still meets a deadlock or a lost
 * connection (AL_EUNAVAIL) is sent once more (writes are idempotent). */
static int insert(struct pg_odb *s, struct row *rows, size_t n, struct al_error *err)
{
	qsort(rows, n, sizeof(*rows), row_cmp);
	int r = insert_once(s, rows, n, err);
	return r == AL_EUNAVAIL ? insert_once(s, rows, n, err) : r;
}

static int pg_write(struct al_odb_backend *b, const struct al_oid *id, uint64_t size,
		    al_odb_source src, void *ctx, struct al_error *err)
{
	struct pg_odb *s = po(b);
	struct row row = { .id = id, .len = (size_t)size };
	int r = pull(s, id, size, src, ctx, &row.bytes, err);
	if (r == 0)
		r = insert(s, &row, 1, err);
	free(row.bytes);
	return r;
}

static int pg_write_many(struct al_odb_backend *b, const struct al_oid *ids, size_t n,
			 const struct al_odb_objects *objs, struct al_error *err)
{
	struct pg_odb *s = po(b);
	struct row rows[ROWS_PER_INSERT];
	size_t k = 0;
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		bool dup = false; /* one statement may not touch a row twice */
		for (size_t j = 0; j < k && !dup; j++)
			dup = al_oid_eq(rows[j].id, &ids[i]);
		if (dup)
			continue;
		uint64_t size = 0;
		void *src = NULL;
		if ((r = objs->open(objs->ctx, &ids[i], &size, &src, err)) < 0)
			break;
		rows[k] = (struct row){ .id = &ids[i], .len = (size_t)size };
		r = pull(s, &ids[i], size, objs->read, src, &rows[k].bytes, err);
		objs->close(src);
		if (r < 0)
			break;
		if (++k == ROWS_PER_INSERT) {
			r = insert(s, rows, k, err);
			while (k)
				free(rows[--k].bytes);
		}
	}
	if (r == 0 && k)
		r = insert(s, rows, k, err);
	while (k)
		free(rows[--k].bytes);
	return r;
}

/* ---- listing and sweeping ---------------------------------------------------------- */

/* Every row's id, size and time, a page at a time in id order (the primary
 * key's), to fn; a non-zero return of fn stops the walk.  verified: only
 * rows whose bytes are their object (hashed by the server), for foreach:
 * what it lists is what a sync leaves alone, so a corrupt row must not be
 * among it.  The sweep lists every row (a corrupt one is garbage too). */
static int walk(struct pg_odb *s, bool verified, al_odb__listed_fn fn, void *ctx,
		struct al_error *err)
{
	struct al_oid after = { 0 };
	bool have = false; /* after is a row's: the next page starts past it */
	uint64_t seen = 0;
	char sql[200];
	for (;;) {
		snprintf(sql, sizeof(sql),
			 "SELECT id, CAST(octet_length(bytes) AS BIGINT), stored, %s FROM "
			 "blobs_inline%s "
			 "ORDER BY id LIMIT %d",
			 verified ? "CAST(sha256(bytes) = id AS INT)" : "1",
			 have ? " WHERE id > ?1" : "", PAGE);
		_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
		int r = prepare(s, sql, &q, err);
		if (r < 0)
			return failed(err);
		if (have)
			al_db_bind_blob(q, 1, after.b, AL_OID_LEN);
		size_t rows = 0;
		while ((r = al_db_step(q, err)) == AL_DB_ROW) {
			rows++;
			const uint8_t *id = al_db_column_blob(q, 0);
			/* the table's CHECK, and the order asked for: a database
			 * that answers otherwise could keep the walk going forever */
			if (al_db_column_bytes(q, 0) != AL_OID_LEN ||
			    (have && memcmp(id, after.b, AL_OID_LEN) <= 0))
				return al_fail(
					err, AL_ECORRUPT, 0,
					"inline objects: the listing is not of ids in order");
			/* ids ever higher, page after page, would never end either */
			if (++seen > s->max_rows)
				return al_fail(
					err, AL_ELIMIT, 0,
					"inline objects: the listing has more than %llu rows",
					(unsigned long long)s->max_rows);
			memcpy(after.b, id, AL_OID_LEN);
			have = true;
			if (al_db_column_int64(q, 3) == 1 &&
			    (r = fn(ctx, &after, (uint64_t)al_db_column_int64(q, 1),
				    al_db_column_int64(q, 2), err)) != 0)
				return r;
		}
		if (r < 0)
			return failed(err);
		if (rows < PAGE)
			return 0;
	}
}

/* ids' rows, unless written again since `before` (another node's upload
 * after the listing: kept, as the listing would have kept it) */
static int delete_rows(struct pg_odb *s, const struct al_oid *ids, size_t n, int64_t before,
		       struct al_error *err)
{
	char sql[96 + ROWS_PER_DELETE * 8];
	size_t l = (size_t)snprintf(sql, sizeof(sql), "DELETE FROM blobs_inline WHERE id IN (");
	for (size_t i = 0; i < n; i++)
		l += (size_t)snprintf(sql + l, sizeof(sql) - l, "%s?%zu", i ? ", " : "", i + 1);
	snprintf(sql + l, sizeof(sql) - l, ") AND stored < ?%zu", n + 1);
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = prepare(s, sql, &q, err);
	if (r < 0)
		return failed(err);
	for (size_t i = 0; i < n; i++)
		al_db_bind_blob(q, (int)i + 1, ids[i].b, AL_OID_LEN);
	al_db_bind_int64(q, (int)n + 1, before);
	return al_db_step(q, err) < 0 ? failed(err) : 0;
}

static int pg_delete(struct al_odb_backend *b, const struct al_oid *ids, size_t n, int64_t before,
		     struct al_error *err)
{
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i += ROWS_PER_DELETE)
		r = delete_rows(po(b), ids + i, n - i < ROWS_PER_DELETE ? n - i : ROWS_PER_DELETE,
				before, err);
	return r;
}

static int pg_list(struct al_odb_backend *b, al_odb__listed_fn fn, void *ctx, struct al_error *err)
{
	return walk(po(b), false, fn, ctx, err);
}

static int pg_list_verified(struct al_odb_backend *b, al_odb__listed_fn fn, void *ctx,
			    struct al_error *err)
{
	return walk(po(b), true, fn, ctx, err);
}

static int pg_foreach(struct al_odb_backend *b, al_odb_foreach_fn fn, void *ctx,
		      struct al_error *err)
{
	return al_odb__foreach_listed(b, pg_list_verified, fn, ctx, err);
}

/* The bucket's rule (odb_backend.h) on the rows: what keep does not claim
 * and was stored before `before`, by the database's clock. */
static int pg_sweep(struct al_odb_backend *b, al_odb_keep_fn keep, al_odb_doomed_fn doomed,
		    void *ctx, int64_t before, bool dry, struct al_odb_sweep *out,
		    struct al_error *err)
{
	return al_odb__sweep_listed(b, pg_list, pg_delete, keep, doomed, ctx, before, dry, out,
				    err);
}

static void pg_free(struct al_odb_backend *b)
{
	al_db_close(po(b)->db);
	free(po(b)->url);
	free(b);
}

int al_odb_pg_open(const char *url, const char *tenant, uint64_t max, uint64_t max_rows,
		   struct al_odb_backend **out, struct al_error *err)
{
	if (max > AL_ODB_INLINE_CAP)
		return al_fail(err, AL_EINVAL, 0, "inline objects: at most %u bytes",
			       AL_ODB_INLINE_CAP);
	if (strncmp(url, "postgres://", 11) && strncmp(url, "postgresql://", 13))
		return al_fail(err, AL_EINVAL, 0,
			       "inline objects: expected postgres://USER@HOST/DB (libpq's URI)");
	int r = al_tenant_name_check(tenant, err);
	if (r < 0)
		return r;
	struct pg_odb *s = calloc(1, sizeof(*s));
	if (!s || !(s->url = strdup(url))) {
		free(s);
		return al_fail(err, AL_ENOMEM, ENOMEM, "inline objects");
	}
	snprintf(s->tenant, sizeof(s->tenant), "%s", tenant);
	s->max = max;
	s->max_rows = max_rows ? max_rows : MAX_ROWS;
	s->base = (struct al_odb_backend){
		.version = AL_ODB_BACKEND_VERSION,
		.name = "postgres",
		.read = pg_read,
		.read_header = pg_read_header,
		.write = pg_write,
		.exists = pg_exists,
		.foreach = pg_foreach,
		.free = pg_free,
		.write_many = pg_write_many,
		.sweep = pg_sweep,
	};
	*out = &s->base;
	return 0;
}
