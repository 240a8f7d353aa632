/* airlock — an object store backend (as libgit2's git2/sys/odb_backend.h).
 *
 * A backend keeps whole objects, each named by the sha256 of its bytes, for
 * one tenant.  The tenant's content-addressed store (cas.h) is the local
 * one ("sqlite": packed rows and loose files, src/lib/backend/sqlite/); a
 * remote backend ("s3", src/lib/backend/s3/) sits behind it as the
 * deployment's shared copy: every batch the local store commits is written
 * to the remote first, and an object the local store lacks is read from the
 * remote, verified and kept locally (docs/architecture.md, "Object
 * backends").
 *
 * Every backend keeps these rules, checked by one conformance suite
 * (tests/unit/test_odb.c) against each:
 *  - read verifies: bytes that do not hash to the id end in AL_ECORRUPT
 *    (the sink may have seen some of them and must discard them), never in
 *    success; an absent object is AL_ENOTFOUND.
 *  - write is idempotent and write-once in effect: the name is the content,
 *    so writing an object again stores the same bytes; a source whose bytes
 *    do not hash to the id (or are not exactly size bytes) is refused with
 *    AL_ECORRUPT / AL_EINVAL and nothing readable is stored under the id.
 *    No backend relies on conditional writes.
 *  - foreach reports every stored object once (for the collector).
 *  - write_many stores every object of a batch or fails: 0 only once each
 *    is stored (some may be stored when it fails, which is harmless: they
 *    are write-once and named by their content).  A remote backend may run
 *    the uploads concurrently and retry the transient failures of each.
 * A backend handle is used by one thread at a time. */
#ifndef AIRLOCK_ODB_BACKEND_H
#define AIRLOCK_ODB_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/cas.h"
#include "airlock/error.h"
#include "airlock/oid.h"

#define AL_ODB_BACKEND_VERSION 1

/* Up to n bytes of the object being written (0 at its end), or an error. */
typedef int64_t (*al_odb_source)(void *ctx, void *buf, size_t n, struct al_error *err);
typedef int (*al_odb_foreach_fn)(void *ctx, const struct al_oid *id, uint64_t size,
				 struct al_error *err);

/* Where write_many's objects' bytes come from.  open makes a source over an
 * object's bytes from its first one and gives its size; it is called again
 * for each retried upload, after close (which always follows a successful
 * open), and may be called more than once for an object (the tier opens
 * each to learn its size).  Its id equals one of write_many's ids but may
 * be a copy.  At most a backend's own bound of sources are open at once. */
struct al_odb_objects {
	int (*open)(void *ctx, const struct al_oid *id, uint64_t *size, void **src,
		    struct al_error *err);
	al_odb_source read; /* called with *src as its ctx */
	void (*close)(void *src);
	void *ctx;
};

/* What a sweep deleted (would delete, dry) and what it left for being young. */
struct al_odb_sweep {
	uint64_t objects, bytes;
	uint64_t young; /* claimed by nothing, but stored at or after `before`: kept */
};
typedef bool (*al_odb_keep_fn)(void *ctx, const struct al_oid *id);
/* What a sweep is about to delete, all of it, before its first DELETE: a
 * failure stops the sweep with nothing deleted. */
typedef int (*al_odb_doomed_fn)(void *ctx, const struct al_oid *ids, size_t n,
				struct al_error *err);

struct al_odb_backend {
	unsigned version; /* AL_ODB_BACKEND_VERSION */
	const char *name; /* "sqlite", "s3" */
	/* Stream the object to sink, verifying it (al_cas_stream's contract). */
	int (*read)(struct al_odb_backend *b, const struct al_oid *id, al_cas_sink sink, void *ctx,
		    struct al_error *err);
	/* The object's size without its bytes (AL_ENOTFOUND if absent). */
	int (*read_header)(struct al_odb_backend *b, const struct al_oid *id, uint64_t *size,
			   struct al_error *err);
	/* Store exactly size bytes pulled from src, which must hash to id. */
	int (*write)(struct al_odb_backend *b, const struct al_oid *id, uint64_t size,
		     al_odb_source src, void *ctx, struct al_error *err);
	/* 1 if stored, 0 if not, negative on error (the bytes are not read). */
	int (*exists)(struct al_odb_backend *b, const struct al_oid *id, struct al_error *err);
	/* Every stored object, in no particular order; a non-zero return of fn
	 * stops the walk and is returned. */
	int (*foreach)(struct al_odb_backend *b, al_odb_foreach_fn fn, void *ctx,
		       struct al_error *err);
	void (*free)(struct al_odb_backend *b);
	/* Store the n objects ids names, their bytes from objs (NULL: one
	 * write after another, al_odb_write_many). */
	int (*write_many)(struct al_odb_backend *b, const struct al_oid *ids, size_t n,
			  const struct al_odb_objects *objs, struct al_error *err);
	/* Delete every stored object keep() does not claim and that was stored
	 * before `before` (unix seconds, by the store's own record of when:
	 * S3's LastModified); dry: count only.  NULL for the local store,
	 * whose sweep is the collector's own (gc.c).  doomed (not when dry)
	 * is told what goes first.  Both get ctx.  The rule and why it is
	 * safe: docs/architecture.md, "Garbage collection in the bucket". */
	int (*sweep)(struct al_odb_backend *b, al_odb_keep_fn keep, al_odb_doomed_fn doomed,
		     void *ctx, int64_t before, bool dry, struct al_odb_sweep *out,
		     struct al_error *err);
};

/* Release a backend (accepts NULL). */
void al_odb_backend_free(struct al_odb_backend *b);

/* Conveniences over any backend. */
/* Read a whole object, verified; *out is malloc'ed (one NUL byte beyond len). */
int al_odb_read_all(struct al_odb_backend *b, const struct al_oid *id, uint8_t **out, size_t *len,
		    struct al_error *err);
/* b->write_many, or each object written in turn where a backend has none. */
int al_odb_write_many(struct al_odb_backend *b, const struct al_oid *ids, size_t n,
		      const struct al_odb_objects *objs, struct al_error *err);
/* Store len bytes; their id goes to id_out. */
int al_odb_write_buf(struct al_odb_backend *b, const void *data, size_t len, struct al_oid *id_out,
		     struct al_error *err);

/* The local store as a backend: the tenant store in dir (al_cas_open).
 * Each write is a batch of its own. */
int al_odb_sqlite_open(const char *dir, struct al_odb_backend **out, struct al_error *err);

/* The S3 backend (src/lib/backend/s3/): objects at
 * <endpoint>/<bucket>/<prefix>/<tenant>/<sha256 hex>, path-style, signed
 * with AWS SigV4 by libcurl (loaded on first use). */
struct al_s3_config {
	char bucket[64];
	char prefix[256];   /* without leading or trailing '/'; may be empty */
	char endpoint[512]; /* http(s)://host[:port], no path */
	char region[64];
	char access_key[128];
	char secret_key[256];
	char session_token[2048]; /* may be empty */
	unsigned list_page;       /* keys per listing page; 0: the server's (1000) */
	/* retries of a transient failure (docs/architecture.md, "Object
	 * backends"); 0: the defaults (5 attempts, 200 ms doubling, 60 s) */
	unsigned attempts;   /* in all, the first included */
	unsigned backoff_ms; /* the first wait; each later one doubles, to 5 s */
	unsigned retry_s;    /* no attempt starts later than this after the first */
	unsigned parallel;   /* concurrent requests of write_many; 0: 8 */
	uint64_t max_keys;   /* keys one listing may report; 0: 10 million */
	/* inline=BYTES: objects up to this size are kept in the PostgreSQL
	 * metadata database instead (al_odb_pg_open); inline_set: the URL
	 * said so (else the store's default, AL_ODB_INLINE_DEFAULT) */
	uint64_t inline_max;
	bool inline_set;
};
/* Parse "s3://bucket[/prefix][?endpoint=URL&region=R&credentials=FILE&inline=BYTES]";
 * what the URL leaves out comes from the environment: AWS_ENDPOINT_URL,
 * AWS_REGION (or AWS_DEFAULT_REGION, else us-east-1), AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN.  A credentials FILE (mode 0600
 * or stricter, owned by the caller) holds the access key on its first line
 * and the secret on its second. AL_EINVAL on anything malformed or
 * missing. */
int al_s3_config_parse(const char *url, struct al_s3_config *out, struct al_error *err);
int al_odb_s3_open(const struct al_s3_config *cfg, const char *tenant, struct al_odb_backend **out,
		   struct al_error *err);

/* Small objects in the metadata database (src/lib/backend/postgres/odb.c):
 * rows of blobs_inline (tenant, id, bytes, stored), the tenant's by
 * row-level security as every tenant table, on a connection of url's for
 * tenant.  Objects up to max bytes (at most AL_ODB_INLINE_CAP); a larger
 * write is AL_EINVAL.  No statement takes the tenant's write lock: the
 * store writes its objects while its own transaction may hold it. */
#define AL_ODB_INLINE_DEFAULT (16u * 1024)
#define AL_ODB_INLINE_CAP (1u << 20)
/* max_rows: rows one listing may report (foreach, sweep; past it AL_ELIMIT,
 * as the bucket's max_keys); 0: 10 million */
int al_odb_pg_open(const char *url, const char *tenant, uint64_t max, uint64_t max_rows,
		   struct al_odb_backend **out, struct al_error *err);

/* Two backends as one (src/lib/backend/tier.c): objects up to max bytes
 * written to small (none when max is 0), the others to large.  A read or
 * a check asks small first, then large (also when small's copy is
 * corrupt); foreach reports an object once even if both hold it (a
 * threshold changed); a sweep tells doomed the whole list of both, each
 * id once, before either deletes (its counts are of copies).  Owns both
 * from the call on (freed on failure too). */
int al_odb_tier_open(struct al_odb_backend *small, struct al_odb_backend *large, uint64_t max,
		     struct al_odb_backend **out, struct al_error *err);

#endif
