/* airlock — content-addressed blob store of one tenant.
 *
 * Objects are addressed by the sha256 of their bytes.  Small objects are
 * packed (zstd-compressed) in the tenant's objects.db; objects of at least
 * AL_CAS_LOOSE_MIN bytes are zstd files under objects/xx/.  Writes happen in
 * a batch: nothing written in a batch is visible to other handles until
 * al_cas_commit() has made every byte durable (fsync of each loose file,
 * rename, fsync of the directories, then the SQLite commit).  A crash leaves
 * either the whole batch or none of it.  Every read verifies the digest; an
 * object whose bytes do not match is reported as AL_ECORRUPT, never returned.
 */
#ifndef AIRLOCK_CAS_H
#define AIRLOCK_CAS_H

#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"
#include "airlock/oid.h"

#define AL_CAS_LOOSE_MIN (256 * 1024)

struct al_cas;

/* Open (creating if missing) the store in directory dir. */
int al_cas_open(const char *dir, struct al_cas **out, struct al_error *err);
void al_cas_close(struct al_cas *cas);

/* Batches.  Puts outside a batch fail with AL_EUSAGE. */
int al_cas_begin(struct al_cas *cas, struct al_error *err);
int al_cas_commit(struct al_cas *cas, struct al_error *err);
void al_cas_abort(struct al_cas *cas);

/* Store bytes; the digest goes to digest_out. Storing an object that exists
 * is a no-op. */
int al_cas_put(struct al_cas *cas, const void *data, size_t len, struct al_oid *digest_out,
	       struct al_error *err);
/* Store exactly size bytes read from fd (streamed; fd's offset advances).
 * AL_EINVAL if fd does not hold exactly size bytes (it changed under us). */
int al_cas_put_fd(struct al_cas *cas, int fd, uint64_t size, struct al_oid *digest_out,
		  struct al_error *err);

/* Hash and compress an object without touching the store, so several
 * threads can prepare while one thread stores.  ctx is per thread: start it
 * NULL, free it with al_cas_prep_ctx_free().  Only for len < AL_CAS_LOOSE_MIN. */
struct al_cas_prep {
	struct al_oid digest;
	uint64_t size;
	int enc;
	uint8_t *data; /* malloc'ed, owned by the prep */
	size_t len;
};
int al_cas_prepare(void **ctx, const void *data, size_t len, struct al_cas_prep *out,
		   struct al_error *err);
void al_cas_prep_ctx_free(void *ctx);
void al_cas_prep_release(struct al_cas_prep *p);
/* Store a prepared object (inside a batch); no-op if present. */
int al_cas_put_prepared(struct al_cas *cas, const struct al_cas_prep *p, struct al_error *err);

/* Store an object arriving as a stream of exactly size bytes (inside a
 * batch).  end verifies the length and stores it (no-op if present). */
struct al_cas_writer;
int al_cas_write_begin(struct al_cas *cas, uint64_t size, struct al_cas_writer **out,
		       struct al_error *err);
int al_cas_write(struct al_cas_writer *w, const void *p, size_t n, struct al_error *err);
int al_cas_write_end(struct al_cas_writer *w, struct al_oid *digest_out, struct al_error *err);
void al_cas_write_abort(struct al_cas_writer *w); /* accepts NULL */

/* 1 if present (in the local store, or else in its remote: cas_private.h),
 * 0 if not, negative on error. Does not verify the bytes. */
int al_cas_has(struct al_cas *cas, const struct al_oid *digest, struct al_error *err);

/* Read a whole object, verified.  *out is malloc'ed, caller frees; it has
 * one byte beyond len, set to NUL. */
int al_cas_get(struct al_cas *cas, const struct al_oid *digest, uint8_t **out, size_t *len,
	       struct al_error *err);

/* Stream an object to sink in chunks, verifying as it goes.  On AL_ECORRUPT
 * the sink has seen bytes that must be discarded.  A non-zero return of the
 * sink stops the stream and is returned. */
typedef int (*al_cas_sink)(void *ctx, const void *p, size_t n, struct al_error *err);
int al_cas_stream(struct al_cas *cas, const struct al_oid *digest, al_cas_sink sink, void *ctx,
		  struct al_error *err);

/* Read an object piece by piece in bounded memory (a file descriptor, a
 * zstd stream with its window -- at most 8 MiB, 512 KiB for what the store
 * writes -- and 32 KiB of input), hashing as it goes.  The reader owns its
 * resources: it outlives the al_cas it came from.  Small (packed) objects
 * are decoded and verified at open.
 *
 * al_cas_reader_read gives up to n bytes (0 at the end).  The call that
 * would return an object's last bytes first checks that the stream ends
 * there and that the digest matches, and fails with AL_ECORRUPT instead:
 * a corrupt object is never delivered complete.  Bytes delivered before
 * were unverified; a consumer that forwards them must abort on an error
 * (airlockd closes the connection short of its Content-Length). */
struct al_cas_reader;
int al_cas_reader_open(struct al_cas *cas, const struct al_oid *digest, struct al_cas_reader **out,
		       struct al_error *err);
uint64_t al_cas_reader_size(const struct al_cas_reader *r);
int64_t al_cas_reader_read(struct al_cas_reader *r, void *buf, size_t n, struct al_error *err);
/* Consume n bytes (decompressed and hashed, not returned); skipping to the
 * end verifies the object like a read would. */
int al_cas_reader_skip(struct al_cas_reader *r, uint64_t n, struct al_error *err);
void al_cas_reader_close(struct al_cas_reader *r); /* accepts NULL */

/* Size of an object without reading it. */
int al_cas_size(struct al_cas *cas, const struct al_oid *digest, uint64_t *size,
		struct al_error *err);

/* Verify every stored object.  bad() is called for each corrupt or missing
 * one (with a message); returns the number of bad objects or a negative code. */
struct al_cas_stats {
	uint64_t packed, loose, bytes, unreferenced_files;
};
typedef void (*al_cas_bad_fn)(void *ctx, const struct al_oid *digest, const char *why);
int al_cas_verify_all(struct al_cas *cas, al_cas_bad_fn bad, void *ctx, struct al_cas_stats *stats,
		      struct al_error *err);

/* Upload to the store's remote (--blobs) every object the local store
 * holds that the remote lacks: the remote is listed first, then the missing
 * objects go up a batch of 64 at a time (odb_backend.h's write_many, with
 * its retries); progress(ctx, objects, bytes) after each batch.  Idempotent,
 * and resumable: a run cut short leaves whole batches uploaded, and the
 * next lists them.  The collector waits meanwhile (gc.lock shared).
 * AL_EUSAGE without a remote. */
struct al_cas_sync_stats {
	uint64_t objects;  /* in the local store */
	uint64_t present;  /* of those, in the remote already */
	uint64_t uploaded; /* uploaded now */
	uint64_t bytes;    /* their sizes */
};
int al_cas_remote_sync(struct al_cas *cas, void (*progress)(void *ctx, uint64_t n, uint64_t bytes),
		       void *ctx, struct al_cas_sync_stats *out, struct al_error *err);

/* Hash bytes / a file the way the store does (sha256). */
int al_cas_hash_fd(int fd, struct al_oid *digest_out, uint64_t *size_out, struct al_error *err);

#endif
