/* cas: the tenant's content-addressed blob store (see include/airlock/cas.h).
 *
 * Why SQLite for small objects: one file per object costs ~0.45 ms of
 * creation here (what makes `git add` slow); a row in one transaction costs
 * microseconds and gets one fsync per batch.  Large objects stay files so
 * SQLite never holds hundreds of MiB in its WAL. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <sqlite3.h>
#include <zstd.h>

#include "airlock/cas.h"
#include "airlock/odb_backend.h"
#include "idset.h"
#include "cas_private.h"
#include "sqlite_util.h"
#include "store_private.h"
#include "util.h"

#define IOBUF (1u << 20)
#define ZLEVEL 1
#define ZWINDOW_LOG 17

/* ENC_LOOSE_RAW: a large object that did not compress (sampled) is stored
 * as is, so random data costs no compression time. */
enum { ENC_RAW = 0, ENC_ZSTD = 1, ENC_LOOSE = 2, ENC_LOOSE_RAW = 3 };
#define SAMPLE (128u * 1024)

static bool is_loose(int enc)
{
	return enc == ENC_LOOSE || enc == ENC_LOOSE_RAW;
}

struct pending {
	char tmp[32];
	struct al_oid digest;
};

/* An object of a group's batch not yet in objects.db: its row's fields */
struct held {
	struct al_oid id;
	uint64_t size;
	int enc;
	uint8_t *data;
	size_t len;
};
/* Past this many, a group's objects go to objects.db as any batch's
 * (a lookup here is a scan): a large merge's */
#define HELD_MAX 512
#define HELD_BYTES (8u << 20)

struct node_slot;
static void node_cache_clear(struct al_cas *c);
static void reads_refresh(struct al_cas *c);

struct al_cas {
	int dirfd, objfd, tmpfd, batchfd;
	int pinfd; /* gc.lock held shared: this handle may hold unrecorded objects (gc.c) */
	char batchname[64];
	sqlite3 *db;
	sqlite3_stmt *st_has, *st_get, *st_put;
	bool in_batch;
	bool txn;        /* the batch's objects.db transaction, begun at its first row */
	bool grouped;    /* batches begun inside the open one join it (al_cas__group) */
	unsigned joined; /* how many of them are open */
	/* a group's small objects, kept here until its commit (hold_row) */
	struct held *held;
	size_t nheld, capheld, heldbytes;
	bool holding;
	const struct held *found; /* what lookup_local found held, for decode_packed */
	/* a joined batch's failure to publish its files: the group's, which
	 * then fails whole with it (its list may be left part renamed) */
	struct al_error gerr;
	struct pending *pend;
	size_t npend, cappend;
	unsigned tmpseq;
	ZSTD_CCtx *cctx;
	ZSTD_CCtx *cctx_mt; /* streaming large objects on every core */
	ZSTD_DCtx *dctx;
	struct al_sha *sha;
	uint8_t *iobuf;
	struct al_buf zbuf;
	/* the remote tier (odb_backend.h): what this batch inserted, pushed
	 * before it commits; hydrating: an insert that came from the remote */
	struct al_odb_backend *remote;
	struct al_oid *wr;
	size_t nwr, capwr;
	bool hydrating;
	bool no_fetch; /* reading to upload: what the local store lacks is not fetched */
	/* what this batch fetched from the remote, and bucket.gen's serial
	 * before the first of those fetches began (al_cas__gen_read) */
	struct al_oid *hyd;
	size_t nhyd, caphyd;
	int64_t hyd_serial;
	bool sweeping;            /* this handle's collector holds gc.lock exclusively */
	bool mapped;              /* objects.db is read through a map (al_store_map_reads) */
	sqlite3_stmt *st_version; /* PRAGMA data_version: moves at others' commits */
	int64_t map_version;      /* what it said at the map's last check (-1: never) */
	/* this batch found an object already stored, which may be another
	 * writer's not yet synced (al_sqlite_wal_synced tells) */
	bool found_stored;
	/* tree nodes read while pinned (al_cas__node): NODE_SLOTS slots and
	 * their bytes' sum */
	struct node_slot *nodes;
	size_t nodebytes;
	/* al_cas__reads_begin's read transaction is open; the lookups made in
	 * it since it began (or last began again) */
	bool reading;
	unsigned reads;
};

/* objects.db, by version (sqlite_util.h: never edit a released one) */
static const char *const migrations[] = {
	/* 1 */
	"CREATE TABLE IF NOT EXISTS objects("
	"  n INTEGER PRIMARY KEY,"
	"  id BLOB NOT NULL UNIQUE,"
	"  size INTEGER NOT NULL,"
	"  enc INTEGER NOT NULL,"
	"  data BLOB);",
	/* 2: no table changes.  Writers count their commits in the wake page
	 * (sqlite_util.c, BEGUN_BYTE), which a batch that finds objects
	 * stored trusts to skip its sync: an airlock that does not count
	 * (knows version 1 only) must not write here any more. */
	"-- commits counted in objects.db-wake",
};
/* 16 KiB pages: most rows (tree nodes, small files: a few KiB) fit one,
 * and a commit writes each page it changes whole into the WAL and syncs
 * it.  With 64 KiB pages a writer's commit of one file and two tree nodes
 * wrote 512 KiB (8 pages), and the 1 MiB WAL bound came every two
 * commits; 16 KiB pages write a quarter of it (8 writers: 0.20x -> 0.26x of
 * the bare SQLite peer).  A database made with 64 KiB pages keeps them. */
static const struct al_sqlite_schema schema = AL_SQLITE_SCHEMA_PAGES(migrations, 16384);

/* al_store_map_reads: objects.db read through a map of up to 2 GiB (SQLite
 * clamps it to its build's SQLITE_MAX_MMAP_SIZE; past it, pread) */
#define MAP_SIZE "2147418112"
static bool map_reads = true;

void al_cas__map_reads(bool on)
{
	map_reads = on;
}

static int push_batch(struct al_cas *c, struct al_error *err);
static int commit_txn(struct al_cas *c, struct al_error *err);
static void unmap_if_shared(struct al_cas *c);
static int held_flush(struct al_cas *c, struct al_error *err);
static void held_release(struct al_cas *c);
static const struct held *held_find(const struct al_cas *c, const struct al_oid *d);
static int land_fetched(struct al_cas *c, const struct al_oid *ids, size_t n, int64_t since,
			struct al_error *err);

static void sweep_stale_batches(int tmpfd)
{
	/* A batch directory whose lock can be taken belongs to a dead writer. */
	DIR *d = al_opendir_fd(tmpfd);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		/* "b-" batches, and "nb-" ones not yet renamed into view: unlocked,
		 * either is a dead writer's (a live creator that loses an "nb-"
		 * directory to us retries) */
		if (strncmp(de->d_name, "b-", 2) != 0 && strncmp(de->d_name, "nb-", 3) != 0)
			continue;
		_cleanup_close_ int bfd =
			openat(tmpfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (bfd < 0 || flock(bfd, LOCK_EX | LOCK_NB) < 0)
			continue;
		DIR *bd = al_opendir_fd(bfd);
		if (!bd)
			continue;
		struct dirent *e;
		while ((e = readdir(bd)))
			if (e->d_name[0] != '.')
				unlinkat(bfd, e->d_name, 0);
		closedir(bd);
		unlinkat(tmpfd, de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

/* The object digest context, made at first use: making it loads libcrypto's
 * provider (about 5 M instructions), which a command that reads no object's
 * bytes (project list, runs) never needs. */
static struct al_sha *cas_sha(struct al_cas *c)
{
	if (!c->sha)
		c->sha = al_sha_new();
	return c->sha;
}

/* (Re)make the compression and decompression contexts: new, they hold no
 * workspace until used.  0, or -1 (out of memory: the old ones kept). */
static int zstd_contexts(struct al_cas *c)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx(), *mt = ZSTD_createCCtx();
	ZSTD_DCtx *dc = ZSTD_createDCtx();
	if (!cc || !mt || !dc) {
		ZSTD_freeCCtx(cc);
		ZSTD_freeCCtx(mt);
		ZSTD_freeDCtx(dc);
		return -1;
	}
	ZSTD_freeCCtx(c->cctx);
	ZSTD_freeCCtx(c->cctx_mt);
	ZSTD_freeDCtx(c->dctx);
	c->cctx = cc;
	c->cctx_mt = mt;
	c->dctx = dc;
	ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_compressionLevel, ZLEVEL);
	ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_checksumFlag, 0);
	ZSTD_CCtx_setParameter(c->cctx_mt, ZSTD_c_compressionLevel, ZLEVEL);
	/* a 128 KiB window (level 1 would take 512 KiB): what a streaming
	 * reader holds per open object (al_cas_reader, the daemon's outputs
	 * and blobs) is about the window, so 16 readers stay within a few MiB;
	 * the ratio cost at level 1 is about 1% */
	ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_windowLog, ZWINDOW_LOG);
	ZSTD_CCtx_setParameter(c->cctx_mt, ZSTD_c_windowLog, ZWINDOW_LOG);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	/* fails harmlessly (stays single-threaded) where libzstd has no MT */
	ZSTD_CCtx_setParameter(c->cctx_mt, ZSTD_c_nbWorkers,
			       cores > 1 ? (int)(cores > 8 ? 8 : cores) : 0);
	return 0;
}

/* Durability of objects.db.  A batch's commit used to sync inside
 * objects.db's write lock, so concurrent writers (a project's group
 * commit, several runs ending) queued behind each other's syncs.  Now
 * objects.db commits without a sync (synchronous=NORMAL; a WAL restart and
 * a checkpoint still sync) and commit_txn syncs the WAL after the COMMIT,
 * outside the lock; al_cas_commit returns as before only once the batch's
 * objects are durable, and the sync covers every commit written before it.
 * What a writer can now see that is not yet durable: another writer's
 * objects between its COMMIT and its sync.  A batch that finds an object
 * already stored (and so does not write it) syncs at its commit too unless
 * every commit it can see is durable already, by whichever connection
 * synced (al_sqlite_wal_synced: counters in objects.db's wake page), so
 * nothing it names is short of durable once it returns.
 * A sync that fails is handled in al_sqlite_sync_wal.  Where SQLite
 * cannot keep a WAL, or the wake page cannot be mapped, commits sync as
 * they go (synchronous=FULL) and that call does nothing. */
/* PRAGMA data_version: moves when another connection commits (-1: not
 * known) */
static int64_t data_version(struct al_cas *c)
{
	int64_t v = -1;
	if (sqlite3_step(c->st_version) == SQLITE_ROW)
		v = sqlite3_column_int64(c->st_version, 0);
	sqlite3_reset(c->st_version);
	return v;
}

/* Sync the WAL (al_sqlite_sync_wal).  found: for a batch that wrote
 * nothing but found objects stored, which need no sync when every commit
 * this connection can see is durable already (al_sqlite_wal_synced; a
 * run whose changed files were all stored before, a replay). */
static int sync_wal(struct al_cas *c, bool found, struct al_error *err)
{
	if (found && al_sqlite_wal_synced(c->db))
		return 0;
	return al_sqlite_sync_wal(c->db, err);
}

int al_cas_open(const char *dir, struct al_cas **out, struct al_error *err)
{
	struct al_cas *c = calloc(1, sizeof(*c));
	if (!c)
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	c->dirfd = c->objfd = c->tmpfd = c->batchfd = c->pinfd = -1;
	int r;
	c->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->dirfd < 0) {
		r = al_fail(err, errno == ENOENT ? AL_ENOTFOUND : AL_EIO, errno, "open store %s",
			    dir);
		goto fail;
	}
	if ((mkdirat(c->dirfd, "objects", 0700) < 0 && errno != EEXIST) ||
	    (mkdirat(c->dirfd, "tmp", 0700) < 0 && errno != EEXIST)) {
		r = al_fail(err, AL_EIO, errno, "create store directories in %s", dir);
		goto fail;
	}
	c->objfd = openat(c->dirfd, "objects", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	c->tmpfd = openat(c->dirfd, "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->objfd < 0 || c->tmpfd < 0) {
		r = al_fail(err, AL_EIO, errno, "open store directories in %s", dir);
		goto fail;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/objects.db", dir);
	r = al_sqlite_open_sync(path, &schema, AL_SYNC_NORMAL, &c->db, err);
	if (r < 0)
		goto fail;
	c->map_version = -1;
	if ((r = al_sqlite_prepare(c->db, "PRAGMA data_version", &c->st_version, err)) < 0)
		goto fail;
	/* best effort: without it, reads are SQLite's pread copies */
	if (map_reads &&
	    sqlite3_exec(c->db, "PRAGMA mmap_size=" MAP_SIZE, NULL, NULL, NULL) == SQLITE_OK) {
		c->mapped = true;
		unmap_if_shared(c); /* where it stands now */
	}
	if ((r = al_sqlite_prepare(c->db, "SELECT 1 FROM objects WHERE id = ?", &c->st_has, err)) <
		    0 ||
	    (r = al_sqlite_prepare(c->db, "SELECT size, enc, data FROM objects WHERE id = ?",
				   &c->st_get, err)) < 0 ||
	    (r = al_sqlite_prepare(
		     c->db, "INSERT OR IGNORE INTO objects(id, size, enc, data) VALUES (?,?,?,?)",
		     &c->st_put, err)) < 0)
		goto fail;
	c->iobuf = malloc(IOBUF);
	if (!c->iobuf || zstd_contexts(c) < 0) {
		r = al_fail(err, AL_ENOMEM, ENOMEM, "cas");
		goto fail;
	}
	sweep_stale_batches(c->tmpfd);
	*out = c;
	return 0;
fail:
	al_cas_close(c);
	return r;
}

void al_cas_close(struct al_cas *c)
{
	if (!c)
		return;
	if (c->in_batch)
		al_cas_abort(c);
	sqlite3_finalize(c->st_has);
	sqlite3_finalize(c->st_get);
	sqlite3_finalize(c->st_put);
	sqlite3_finalize(c->st_version);
	sqlite3_close(c->db);
	ZSTD_freeCCtx(c->cctx);
	ZSTD_freeCCtx(c->cctx_mt);
	ZSTD_freeDCtx(c->dctx);
	al_sha_free(c->sha);
	free(c->iobuf);
	al_buf_release(&c->zbuf);
	free(c->pend);
	free(c->wr);
	free(c->hyd);
	al_odb_backend_free(c->remote);
	node_cache_clear(c);
	free(c->nodes);
	if (c->pinfd >= 0)
		close(c->pinfd);
	if (c->objfd >= 0)
		close(c->objfd);
	if (c->tmpfd >= 0)
		close(c->tmpfd);
	if (c->dirfd >= 0)
		close(c->dirfd);
	free(c);
}

static void remove_batch_dir(struct al_cas *c)
{
	if (c->batchfd < 0)
		return;
	for (size_t i = 0; i < c->npend; i++)
		unlinkat(c->batchfd, c->pend[i].tmp, 0);
	/* files of puts that turned out to be duplicates are already gone */
	unlinkat(c->tmpfd, c->batchname, AT_REMOVEDIR);
	close(c->batchfd);
	c->batchfd = -1;
	c->npend = 0;
}

/* From its first batch until it is idle again (al_store_release_memory,
 * close) a handle holds gc.lock shared: objects it stored or found present
 * may not be recorded in meta.db yet, and the collector's sweep, which takes
 * the lock exclusively, must not run meanwhile (docs/architecture.md). */
static int pin(struct al_cas *c, struct al_error *err)
{
	if (c->pinfd >= 0 || c->sweeping)
		return 0;
	int fd = openat(c->dirfd, AL_CAS_GC_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return al_fail(err, AL_EIO, errno, "cas: open %s", AL_CAS_GC_LOCK);
	int rc;
	while ((rc = flock(fd, LOCK_SH)) < 0 && errno == EINTR)
		;
	if (rc < 0) {
		int e = errno;
		close(fd);
		return al_fail(err, AL_EIO, e, "cas: lock %s", AL_CAS_GC_LOCK);
	}
	c->pinfd = fd;
	/* a read snapshot begun before the pin could still show an object
	 * swept meanwhile, and al_cas__node would keep it: begin it again */
	if (c->reading)
		reads_refresh(c);
	return 0;
}

int al_cas__pin(struct al_cas *c, struct al_error *err)
{
	return pin(c, err);
}

void al_cas__sweeping(struct al_cas *c, bool on)
{
	c->sweeping = on;
	node_cache_clear(c);
}

/* SQLite drops its whole map of objects.db at every read transaction
 * after another connection's commit, and maps it again page fault by page
 * fault: with concurrent writers that costs more than the copies it saves
 * (8 writers: about 5% of their CPU in munmap, 7% in faults).  So a handle
 * that begins a batch after another connection has committed since it
 * last looked reads through pread from then on; one alone with the
 * database keeps the map (a run's delta of 10 files in 100k: 7 ms mapped,
 * 9 ms through pread), and so does a command that only reads.  Best
 * effort: SQLite keeps the map while a read holds pages of it. */
static void unmap_if_shared(struct al_cas *c)
{
	if (!c->mapped)
		return;
	int64_t v = data_version(c);
	if (v == c->map_version)
		return;
	if (c->map_version >= 0 &&
	    sqlite3_exec(c->db, "PRAGMA mmap_size=0", NULL, NULL, NULL) == SQLITE_OK)
		c->mapped = false;
	c->map_version = v;
}

int al_cas_begin(struct al_cas *c, struct al_error *err)
{
	if (c->in_batch && c->grouped) {
		c->joined++;
		return 0;
	}
	if (c->in_batch)
		return al_fail(err, AL_EUSAGE, 0, "cas: batch already open");
	int r = pin(c, err);
	if (r < 0)
		return r;
	unmap_if_shared(c);
	/* objects.db's write transaction begins with the batch's first new row
	 * (batch_txn): a batch whose objects are all stored already (a merge
	 * whose nodes exist, a re-import) neither takes the write lock from
	 * other writers nor commits; at most it syncs the WAL, outside any
	 * lock (sync_wal).  What it found present stays: rows are only ever
	 * deleted by the sweep, which the pin excludes. */
	c->in_batch = true;
	c->txn = c->found_stored = false;
	c->holding = c->grouped;
	c->npend = 0;
	c->nwr = c->nhyd = 0;
	return 0;
}

/* A write of the handle's own ends al_cas__reads_begin's transaction
 * first: SQLite cannot begin one inside it, and a read snapshot older than
 * another writer's commit cannot be made a write. */
static void reads_stop(struct al_cas *c)
{
	if (!c->reading)
		return;
	/* a read transaction's COMMIT fails only with a statement still
	 * running; then ROLLBACK, else the handle kept an old snapshot and
	 * could never write or go idle */
	if (sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	c->reading = !sqlite3_get_autocommit(c->db);
}

static int batch_txn(struct al_cas *c, struct al_error *err)
{
	if (!c->in_batch || c->txn)
		return 0;
	reads_stop(c);
	int r = al_sqlite_exec(c->db, "BEGIN IMMEDIATE", err);
	if (r == 0)
		c->txn = true;
	return r;
}

static int ensure_batch_dir(struct al_cas *c, struct al_error *err)
{
	if (c->batchfd >= 0)
		return 0;
	uint8_t rnd[4] = { 0 };
	if (getrandom(rnd, sizeof(rnd), 0) < 0)
		memset(rnd, 0, sizeof(rnd)); /* the pid and time are unique enough */
	char tmpname[80];
	snprintf(c->batchname, sizeof(c->batchname), "b-%d-%llx-%02x%02x%02x%02x", (int)getpid(),
		 (unsigned long long)al_now_ns(), rnd[0], rnd[1], rnd[2], rnd[3]);
	/* made under a name the sweeper ignores, locked, then renamed into
	 * view: a batch is never visible unlocked */
	snprintf(tmpname, sizeof(tmpname), "n%s", c->batchname);
	for (int attempt = 0;; attempt++) {
		if (mkdirat(c->tmpfd, tmpname, 0700) < 0)
			return al_fail(err, AL_EIO, errno, "cas: create temp directory");
		c->batchfd =
			openat(c->tmpfd, tmpname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (c->batchfd >= 0 && flock(c->batchfd, LOCK_EX) == 0 &&
		    renameat(c->tmpfd, tmpname, c->tmpfd, c->batchname) == 0)
			return 0;
		int e = errno;
		if (c->batchfd >= 0)
			close(c->batchfd);
		c->batchfd = -1;
		unlinkat(c->tmpfd, tmpname, AT_REMOVEDIR);
		/* swept between mkdir and lock by another opener: once more */
		if (e != ENOENT || attempt >= 3)
			return al_fail(err, AL_EIO, e, "cas: lock temp directory");
	}
}

static int fsync_named(int dirfd, const char *name, struct al_error *err)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fdatasync(fd) < 0)
		return al_fail(err, AL_EIO, errno, "cas: fsync object");
	return 0;
}

static void loose_name(const struct al_oid *d, char sub[3], char file[63])
{
	char hex[65];
	al_hex(d->b, AL_OID_LEN, hex);
	memcpy(sub, hex, 2);
	sub[2] = 0;
	memcpy(file, hex + 2, 63);
}

/* The batch's loose objects into objects/ (each file synced, renamed
 * into place, its directory synced): before any row names them, and
 * readable from there */
static int publish_pending(struct al_cas *c, struct al_error *err)
{
	int r = 0;
	bool touched[256] = { 0 }, newsub = false;
	for (size_t i = 0; i < c->npend; i++) {
		struct pending *p = &c->pend[i];
		if ((r = fsync_named(c->batchfd, p->tmp, err)) < 0)
			return r;
		char sub[3], file[63];
		loose_name(&p->digest, sub, file);
		if (mkdirat(c->objfd, sub, 0700) == 0)
			newsub = true;
		else if (errno != EEXIST)
			return al_fail(err, AL_EIO, errno, "cas: create objects/%s", sub);
		_cleanup_close_ int sfd =
			openat(c->objfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sfd < 0 || renameat(c->batchfd, p->tmp, sfd, file) < 0)
			return al_fail(err, AL_EIO, errno, "cas: publish object");
		touched[p->digest.b[0]] = true;
	}
	for (int i = 0; i < 256; i++) {
		if (!touched[i])
			continue;
		char sub[3];
		snprintf(sub, sizeof(sub), "%02x", i);
		if ((r = al_fsync_dir(c->objfd, sub, err)) < 0)
			return r;
	}
	if (newsub && (r = al_fsync_dir(c->objfd, ".", err)) < 0)
		return r;
	c->npend = 0;
	return 0;
}

int al_cas_commit(struct al_cas *c, struct al_error *err)
{
	if (!c->in_batch)
		return al_fail(err, AL_EUSAGE, 0, "cas: no batch open");
	if (c->joined) {
		/* its loose objects where the group's later reads find them */
		c->joined--;
		int r = c->gerr.code < 0 ? al_fail(err, c->gerr.code, 0, "%s", c->gerr.msg)
			: c->npend       ? publish_pending(c, &c->gerr)
					 : 0;
		if (r < 0 && err)
			*err = c->gerr;
		return r;
	}
	int r = c->gerr.code < 0 ? al_fail(err, c->gerr.code, 0, "%s", c->gerr.msg) : 0;
	if (r == 0 && c->nheld)
		r = held_flush(c, err);
	if (r < 0 || (r = publish_pending(c, err)) < 0)
		goto fail;
	c->holding = false;
	/* the remote has every object before the local store names any: a
	 * batch another node can see through the metadata is readable there */
	if (c->remote && (r = push_batch(c, err)) < 0)
		goto fail;
	if (c->nhyd)
		r = land_fetched(c, c->hyd, c->nhyd, c->hyd_serial, err);
	else if (c->txn)
		r = commit_txn(c, err);
	else if (c->found_stored)
		r = sync_wal(c, true, err);
	if (r < 0)
		goto fail;
	c->in_batch = c->txn = false;
	c->nhyd = 0;
	remove_batch_dir(c);
	return 0;
fail:
	al_cas_abort(c);
	return r;
}

void al_cas_abort(struct al_cas *c)
{
	if (!c->in_batch)
		return;
	if (c->joined) { /* what it wrote stays in the outer batch, unnamed */
		c->joined--;
		return;
	}
	held_release(c);
	c->gerr = (struct al_error){ 0 };
	if (c->txn)
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	c->in_batch = c->txn = false;
	c->nwr = c->nhyd = 0;
	remove_batch_dir(c);
}

int al_cas_has(struct al_cas *c, const struct al_oid *d, struct al_error *err)
{
	int r = al_cas__has_local(c, d, err);
	if (r != 0 || !c->remote)
		return r;
	return c->remote->exists(c->remote, d, err);
}

int al_cas__has_local(struct al_cas *c, const struct al_oid *d, struct al_error *err)
{
	if (c->nheld && held_find(c, d))
		return 1;
	sqlite3_stmt *st = c->st_has;
	sqlite3_bind_blob(st, 1, d->b, AL_OID_LEN, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW) {
		c->found_stored |= c->in_batch;
		return 1;
	}
	if (rc == SQLITE_DONE)
		return 0;
	return al_fail(err, AL_EIO, 0, "cas: lookup: %s", sqlite3_errmsg(c->db));
}

static int oid_push(struct al_oid **v, size_t *n, size_t *cap, const struct al_oid *d,
		    struct al_error *err)
{
	if (*n == *cap) {
		size_t k = *cap ? *cap * 2 : 64;
		struct al_oid *w = realloc(*v, k * sizeof(*w));
		if (!w)
			return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
		*v = w;
		*cap = k;
	}
	(*v)[(*n)++] = *d;
	return 0;
}

static int insert_row(struct al_cas *c, const struct al_oid *d, uint64_t size, int enc,
		      const void *data, size_t dlen, struct al_error *err)
{
	int r = batch_txn(c, err);
	if (r < 0)
		return r;
	sqlite3_stmt *st = c->st_put;
	sqlite3_bind_blob(st, 1, d->b, AL_OID_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)size);
	sqlite3_bind_int(st, 3, enc);
	if (data)
		sqlite3_bind_blob(st, 4, data, (int)dlen, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 4);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return al_fail(err, rc == SQLITE_FULL ? AL_ELIMIT : AL_EIO, 0,
			       "cas: store object: %s", sqlite3_errmsg(c->db));
	if (c->remote && !c->hydrating && sqlite3_changes(c->db) == 1)
		return oid_push(&c->wr, &c->nwr, &c->capwr, d, err);
	return 0;
}

static int add_pending(struct al_cas *c, const char *tmp, const struct al_oid *d,
		       struct al_error *err)
{
	if (c->npend == c->cappend) {
		size_t n = c->cappend ? c->cappend * 2 : 16;
		struct pending *p = realloc(c->pend, n * sizeof(*p));
		if (!p)
			return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
		c->pend = p;
		c->cappend = n;
	}
	struct pending *p = &c->pend[c->npend++];
	snprintf(p->tmp, sizeof(p->tmp), "%s", tmp);
	p->digest = *d;
	return 0;
}

static const struct held *held_find(const struct al_cas *c, const struct al_oid *d)
{
	for (size_t i = 0; i < c->nheld; i++)
		if (al_oid_eq(&c->held[i].id, d))
			return &c->held[i];
	return NULL;
}

static void held_release(struct al_cas *c)
{
	for (size_t i = 0; i < c->nheld; i++)
		free(c->held[i].data);
	free(c->held);
	c->held = NULL;
	c->found = NULL;
	c->nheld = c->capheld = c->heldbytes = 0;
	c->holding = false;
}

/* The held objects into objects.db, in the batch's transaction (taken
 * now: the write lock is held from here to the commit) */
static int held_flush(struct al_cas *c, struct al_error *err)
{
	int r = 0;
	c->holding = false;
	for (size_t i = 0; i < c->nheld && r == 0; i++) {
		const struct held *h = &c->held[i];
		r = insert_row(c, &h->id, h->size, h->enc, h->data, h->len, err);
	}
	if (r == 0)
		held_release(c);
	return r;
}

/* A group's object kept until its commit: objects.db's write lock is
 * not taken for each request's merge, so other writers' batches go on
 * meanwhile; reads find it here (held_find) */
static int hold_row(struct al_cas *c, const struct al_oid *d, uint64_t size, int enc,
		    const void *data, size_t dlen, struct al_error *err)
{
	if (c->nheld == HELD_MAX || c->heldbytes + dlen > HELD_BYTES) {
		int r = held_flush(c, err);
		return r < 0 ? r : insert_row(c, d, size, enc, data, dlen, err);
	}
	if (c->nheld == c->capheld) {
		size_t n = c->capheld ? c->capheld * 2 : 16;
		struct held *v = realloc(c->held, n * sizeof(*v));
		if (!v)
			return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
		c->held = v;
		c->capheld = n;
	}
	uint8_t *copy = malloc(dlen ? dlen : 1);
	if (!copy)
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	if (dlen)
		memcpy(copy, data, dlen);
	c->held[c->nheld++] = (struct held){ *d, size, enc, copy, dlen };
	c->heldbytes += dlen;
	return 0;
}

static int put_row(struct al_cas *c, const struct al_oid *d, uint64_t size, int enc,
		   const void *data, size_t dlen, struct al_error *err)
{
	/* an object fetched from the remote is stored as any read's is */
	return c->holding && !c->hydrating ? hold_row(c, d, size, enc, data, dlen, err)
					   : insert_row(c, d, size, enc, data, dlen, err);
}

static int put_packed(struct al_cas *c, const void *data, size_t len, const struct al_oid *d,
		      struct al_error *err)
{
	size_t bound = ZSTD_compressBound(len);
	c->zbuf.len = 0;
	if (al_buf_reserve(&c->zbuf, bound) < 0)
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	size_t z = ZSTD_compressCCtx(c->cctx, c->zbuf.p, bound, data, len, ZLEVEL);
	if (!ZSTD_isError(z) && z < len - len / 16)
		return put_row(c, d, len, ENC_ZSTD, c->zbuf.p, z, err);
	return put_row(c, d, len, ENC_RAW, data, len, err);
}

/* Loose object: a zstd frame in the batch directory until commit. */
struct loose_writer {
	int fd;
	char tmp[32];
	ZSTD_outBuffer out;
	bool decided, raw;
};

static int loose_begin(struct al_cas *c, struct loose_writer *w, struct al_error *err)
{
	int r = ensure_batch_dir(c, err);
	if (r < 0)
		return r;
	snprintf(w->tmp, sizeof(w->tmp), "o%u", c->tmpseq++);
	w->fd = openat(c->batchfd, w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		       0400);
	if (w->fd < 0)
		return al_fail(err, AL_EIO, errno, "cas: create temp object");
	ZSTD_CCtx_reset(c->cctx_mt, ZSTD_reset_session_only);
	w->decided = w->raw = false;
	c->zbuf.len = 0;
	if (al_buf_reserve(&c->zbuf, ZSTD_compressBound(SAMPLE) + ZSTD_CStreamOutSize()) < 0)
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	w->out = (ZSTD_outBuffer){ c->zbuf.p, ZSTD_CStreamOutSize(), 0 };
	return 0;
}

static int loose_feed(struct al_cas *c, struct loose_writer *w, const void *p, size_t n, bool last,
		      struct al_error *err)
{
	if (!w->decided && (n || last)) {
		/* compress a sample of the first bytes: store raw what will not shrink */
		size_t sn = n < SAMPLE ? n : SAMPLE;
		size_t z = ZSTD_compressCCtx(c->cctx, c->zbuf.p + ZSTD_CStreamOutSize(),
					     ZSTD_compressBound(SAMPLE), p, sn, ZLEVEL);
		w->raw = ZSTD_isError(z) || z > sn - sn / 20;
		w->decided = true;
	}
	if (w->raw) {
		if (al_write_full(w->fd, p, n) < 0)
			return al_fail(err, errno == ENOSPC ? AL_ELIMIT : AL_EIO, errno,
				       "cas: write object");
		return 0;
	}
	ZSTD_inBuffer in = { p, n, 0 };
	for (;;) {
		size_t rem = ZSTD_compressStream2(c->cctx_mt, &w->out, &in,
						  last ? ZSTD_e_end : ZSTD_e_continue);
		if (ZSTD_isError(rem))
			return al_fail(err, AL_EIO, 0, "cas: zstd: %s", ZSTD_getErrorName(rem));
		if (w->out.pos == w->out.size || (last && rem == 0) ||
		    (!last && in.pos == in.size)) {
			if (al_write_full(w->fd, w->out.dst, w->out.pos) < 0)
				return al_fail(err, errno == ENOSPC ? AL_ELIMIT : AL_EIO, errno,
					       "cas: write object");
			w->out.pos = 0;
		}
		if (last ? rem == 0 : in.pos == in.size)
			return 0;
	}
}

static int loose_finish(struct al_cas *c, struct loose_writer *w, const struct al_oid *d,
			uint64_t size, struct al_error *err)
{
	/* start writeback now so the fsync at commit has little left to do */
	sync_file_range(w->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	close(w->fd);
	w->fd = -1;
	int has = al_cas__has_local(c, d, err);
	if (has != 0) {
		unlinkat(c->batchfd, w->tmp, 0);
		return has < 0 ? has : 0;
	}
	int r = insert_row(c, d, size, w->raw ? ENC_LOOSE_RAW : ENC_LOOSE, NULL, 0, err);
	if (r == 0)
		r = add_pending(c, w->tmp, d, err);
	if (r < 0)
		unlinkat(c->batchfd, w->tmp, 0);
	return r;
}

static void loose_cancel(struct al_cas *c, struct loose_writer *w)
{
	if (w->fd >= 0) {
		close(w->fd);
		w->fd = -1;
		unlinkat(c->batchfd, w->tmp, 0);
	}
}

int al_cas_prepare(void **ctx, const void *data, size_t len, struct al_cas_prep *out,
		   struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	if (len >= AL_CAS_LOOSE_MIN)
		return al_fail(err, AL_EUSAGE, 0, "cas: prepare is for small objects");
	if (!*ctx && !(*ctx = ZSTD_createCCtx()))
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	al_sha256(data, len, out->digest.b);
	out->size = len;
	size_t bound = ZSTD_compressBound(len);
	out->data = malloc(bound ? bound : 1);
	if (!out->data)
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	size_t z = ZSTD_compressCCtx(*ctx, out->data, bound, data, len, ZLEVEL);
	if (!ZSTD_isError(z) && z < len - len / 16) {
		out->enc = ENC_ZSTD;
		out->len = z;
	} else {
		out->enc = ENC_RAW;
		if (len)
			memcpy(out->data, data, len);
		out->len = len;
	}
	return 0;
}

void al_cas_prep_ctx_free(void *ctx)
{
	ZSTD_freeCCtx(ctx);
}

void al_cas_prep_release(struct al_cas_prep *p)
{
	free(p->data);
	p->data = NULL;
}

int al_cas_put_prepared(struct al_cas *c, const struct al_cas_prep *p, struct al_error *err)
{
	if (!c->in_batch)
		return al_fail(err, AL_EUSAGE, 0, "cas: put outside a batch");
	int has = al_cas__has_local(c, &p->digest, err);
	if (has != 0)
		return has < 0 ? has : 0;
	return put_row(c, &p->digest, p->size, p->enc, p->data, p->len, err);
}

int al_cas_put(struct al_cas *c, const void *data, size_t len, struct al_oid *d,
	       struct al_error *err)
{
	if (!c->in_batch)
		return al_fail(err, AL_EUSAGE, 0, "cas: put outside a batch");
	al_sha256(data, len, d->b);
	int has = al_cas__has_local(c, d, err);
	if (has != 0)
		return has < 0 ? has : 0;
	if (len < AL_CAS_LOOSE_MIN)
		return put_packed(c, data, len, d, err);
	struct loose_writer w = { .fd = -1 };
	int r = loose_begin(c, &w, err);
	if (r == 0)
		r = loose_feed(c, &w, data, len, true, err);
	if (r == 0)
		return loose_finish(c, &w, d, len, err);
	loose_cancel(c, &w);
	return r;
}

int al_cas_put_fd(struct al_cas *c, int fd, uint64_t size, struct al_oid *d, struct al_error *err)
{
	if (!c->in_batch)
		return al_fail(err, AL_EUSAGE, 0, "cas: put outside a batch");
	if (size < AL_CAS_LOOSE_MIN) {
		uint8_t *buf = c->iobuf;
		ssize_t n = al_read_full(fd, buf, (size_t)size + 1);
		if (n < 0)
			return al_fail(err, AL_EIO, errno, "read");
		if ((uint64_t)n != size)
			return al_fail(err, AL_EINVAL, 0, "file changed while being read");
		return al_cas_put(c, buf, (size_t)size, d, err);
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	if (!cas_sha(c))
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	struct loose_writer w = { .fd = -1 };
	int r = loose_begin(c, &w, err);
	uint64_t total = 0;
	while (r == 0) {
		ssize_t n = read(fd, c->iobuf, IOBUF);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = al_fail(err, AL_EIO, errno, "read");
			break;
		}
		total += (uint64_t)n;
		if (total > size) {
			r = al_fail(err, AL_EINVAL, 0, "file changed while being read");
			break;
		}
		al_sha_update(c->sha, c->iobuf, (size_t)n);
		r = loose_feed(c, &w, c->iobuf, (size_t)n, n == 0, err);
		if (n == 0)
			break;
	}
	al_sha_final(c->sha, d->b);
	if (r == 0 && total != size)
		r = al_fail(err, AL_EINVAL, 0, "file changed while being read");
	if (r == 0)
		return loose_finish(c, &w, d, size, err);
	loose_cancel(c, &w);
	return r;
}

static int corrupt(struct al_error *err, const struct al_oid *d, const char *why)
{
	char id[AL_OID_STRLEN + 1];
	al_oid_fmt(d, id);
	return al_fail(err, AL_ECORRUPT, 0, "object %s is corrupt: %s", id, why);
}

/* Stream a loose object's decompressed bytes to sink, verifying. */
static int stream_loose(struct al_cas *c, const struct al_oid *d, uint64_t size, bool raw,
			al_cas_sink sink, void *ctx, struct al_error *err)
{
	char sub[3], file[63], path[67];
	loose_name(d, sub, file);
	snprintf(path, sizeof(path), "%s/%s", sub, file);
	_cleanup_close_ int fd = openat(c->objfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return corrupt(err, d, "its file is missing");
		return al_fail(err, AL_EIO, errno, "cas: open object");
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	ZSTD_DCtx_reset(c->dctx, ZSTD_reset_session_only);
	size_t outsz = ZSTD_DStreamOutSize();
	_cleanup_free_ uint8_t *out = malloc(outsz);
	if (!out)
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	struct al_sha *sha = cas_sha(c);
	if (!sha)
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	uint64_t total = 0;
	size_t last = 1;
	for (;;) {
		ssize_t n = read(fd, c->iobuf, IOBUF);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return al_fail(err, AL_EIO, errno, "cas: read object");
		}
		if (n == 0)
			break;
		if (raw) {
			total += (uint64_t)n;
			if (total > size) {
				al_sha_final(sha, out);
				return corrupt(err, d, "longer than recorded");
			}
			al_sha_update(sha, c->iobuf, (size_t)n);
			int r = sink ? sink(ctx, c->iobuf, (size_t)n, err) : 0;
			if (r) {
				al_sha_final(sha, out);
				return r;
			}
			last = 0;
			continue;
		}
		ZSTD_inBuffer in = { c->iobuf, (size_t)n, 0 };
		while (in.pos < in.size) {
			ZSTD_outBuffer ob = { out, outsz, 0 };
			last = ZSTD_decompressStream(c->dctx, &ob, &in);
			if (ZSTD_isError(last)) {
				al_sha_final(sha, out);
				return corrupt(err, d, ZSTD_getErrorName(last));
			}
			total += ob.pos;
			if (total > size) {
				al_sha_final(sha, out);
				return corrupt(err, d, "longer than recorded");
			}
			al_sha_update(sha, out, ob.pos);
			if (ob.pos && sink) {
				int r = sink(ctx, out, ob.pos, err);
				if (r) {
					al_sha_final(sha, out);
					return r;
				}
			}
		}
	}
	struct al_oid got;
	al_sha_final(sha, got.b);
	if (last != 0 || total != size)
		return corrupt(err, d, "truncated");
	if (!al_oid_eq(&got, d))
		return corrupt(err, d, "digest mismatch");
	return 0;
}

/* ---- reads in one transaction (al_cas__reads_begin) ------------------------------ */

/* SQLite empties a connection's page cache at every read transaction that
 * begins after another connection's commit, and outside a transaction
 * each lookup is one: with 8 writers committing, a diff's every lookup
 * read objects.db's index pages back from the file.  A diff reads in one
 * transaction instead, begun again every READS_SPAN lookups so that a long
 * one does not hold an old snapshot (and the WAL's checkpoint) for long. */
#define READS_SPAN 256u

static void reads_refresh(struct al_cas *c)
{
	reads_stop(c);
	if (!c->reading) /* failing, the lookups go on outside one, as before */
		c->reading = sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
}

bool al_cas__reads_begin(struct al_cas *c)
{
	if (c->reading || !sqlite3_get_autocommit(c->db) ||
	    sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return false; /* inside a transaction already, or reads as before */
	c->reading = true;
	c->reads = 0;
	return true;
}

void al_cas__reads_end(struct al_cas *c, bool began)
{
	if (began)
		reads_stop(c);
}

/* Look up a row; on success enc and size are set and, for packed objects, the
 * statement is left on the row (caller resets). */
static int lookup_local(struct al_cas *c, const struct al_oid *d, int *enc, uint64_t *size,
			struct al_error *err)
{
	/* a group's object not yet in objects.db (hold_row) is found first */
	if ((c->found = c->nheld ? held_find(c, d) : NULL)) {
		*enc = c->found->enc;
		*size = c->found->size;
		return 0;
	}
	if (c->reading && ++c->reads % READS_SPAN == 0)
		reads_refresh(c);
	sqlite3_stmt *st = c->st_get;
	sqlite3_bind_blob(st, 1, d->b, AL_OID_LEN, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		sqlite3_reset(st);
		char id[AL_OID_STRLEN + 1];
		al_oid_fmt(d, id);
		return al_fail(err, AL_ENOTFOUND, 0, "object %s not found", id);
	}
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		return al_fail(err, AL_EIO, 0, "cas: read: %s", sqlite3_errmsg(c->db));
	}
	*size = (uint64_t)sqlite3_column_int64(st, 0);
	*enc = sqlite3_column_int(st, 1);
	return 0;
}

/* ---- the remote tier (odb_backend.h) ------------------------------------------ */

void al_cas__set_remote(struct al_cas *c, struct al_odb_backend *remote)
{
	al_odb_backend_free(c->remote);
	c->remote = remote;
}

static int64_t reader_source(void *ctx, void *buf, size_t n, struct al_error *err)
{
	return al_cas_reader_read(ctx, buf, n, err);
}

static int reader_open(void *ctx, const struct al_oid *id, uint64_t *size, void **src,
		       struct al_error *err)
{
	struct al_cas_reader *rd = NULL;
	int r = al_cas_reader_open(ctx, id, &rd, err);
	if (r < 0)
		return r;
	*size = al_cas_reader_size(rd);
	*src = rd;
	return 0;
}

static void reader_close(void *src)
{
	al_cas_reader_close(src);
}

/* ids (all in the local store) to the remote, read back verified */
static int push_ids(struct al_cas *c, const struct al_oid *ids, size_t n, struct al_error *err)
{
	const struct al_odb_objects objs = { reader_open, reader_source, reader_close, c };
	return al_odb_write_many(c->remote, ids, n, &objs, err);
}

/* ---- this node's sweep generation (gc_sweeps.c) -------------------------------- */

#define GEN_FILE "bucket.gen"  /* "GEN SERIAL\n" */
#define GEN_LOCK "bucket.lock" /* exclusive: a catch-up; shared: a fetch lands */

int al_cas__gen_read(struct al_cas *c, int64_t *gen, int64_t *serial, struct al_error *err)
{
	*gen = -1;
	*serial = -1;
	char buf[64];
	_cleanup_close_ int fd = openat(c->dirfd, GEN_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : al_fail(err, AL_EIO, errno, "open " GEN_FILE);
	ssize_t k = read(fd, buf, sizeof(buf) - 1);
	if (k < 0)
		return al_fail(err, AL_EIO, errno, "read " GEN_FILE);
	buf[k] = 0;
	char *end, *end2;
	errno = 0;
	long long v = strtoll(buf, &end, 10), sn = 0;
	if (errno || end == buf || v < -1)
		return 0; /* damaged: a generation of none, the caller distrusts it all */
	if (*end == ' ') {
		sn = strtoll(end + 1, &end2, 10);
		if (errno || end2 == end + 1 || sn < 0)
			return 0;
		end = end2;
	}
	if (*end != '\n')
		return 0;
	*gen = v;
	*serial = sn;
	return 0;
}

/* Written whole and renamed into place; not synced: a generation lost in a
 * crash is an older one, whose catch-up is done again, and a serial lost
 * with it was never compared against (only a fetch that began before the
 * crash, in a process now gone, read it). */
int al_cas__gen_write(struct al_cas *c, int64_t gen, int64_t serial, struct al_error *err)
{
	char tmp[64], buf[64];
	snprintf(tmp, sizeof(tmp), GEN_FILE ".%d.%d.tmp", (int)getpid(), (int)gettid());
	int n = snprintf(buf, sizeof(buf), "%lld %lld\n", (long long)gen, (long long)serial);
	_cleanup_close_ int fd =
		openat(c->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || al_write_full(fd, buf, (size_t)n) < 0 ||
	    renameat(c->dirfd, tmp, c->dirfd, GEN_FILE) < 0) {
		int e = errno;
		unlinkat(c->dirfd, tmp, 0);
		return al_fail(err, AL_EIO, e, "write " GEN_FILE);
	}
	return 0;
}

int al_cas__gen_lock(struct al_cas *c, bool exclusive, struct al_error *err)
{
	int fd = openat(c->dirfd, GEN_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return al_fail(err, AL_EIO, errno, "open " GEN_LOCK);
	while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) < 0) {
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return al_fail(err, AL_EIO, e, "lock " GEN_LOCK);
		}
	}
	return fd;
}

/* objects.db's transaction committed and made durable (sync_wal): when
 * this fails, the rows may be there (not durable, named by nothing). */
static int commit_txn(struct al_cas *c, struct al_error *err)
{
	int r = al_sqlite_exec(c->db, "COMMIT", err);
	if (r == 0) {
		c->txn = false;
		r = sync_wal(c, false, err);
	}
	return r;
}

int al_cas__gen_bump(struct al_cas *c, int64_t *gen, int64_t *serial, struct al_error *err)
{
	int lk = al_cas__gen_lock(c, true, err);
	if (lk < 0)
		return lk;
	int64_t s;
	int r = al_cas__gen_read(c, gen, &s, err);
	if (r == 0) {
		/* after a file lost or damaged, a serial no fetch can have read */
		if (s < 0 && getrandom(&s, sizeof(s), 0) == (ssize_t)sizeof(s))
			s &= INT64_MAX >> 1;
		*serial = s < 0 ? 1 : s + 1;
		r = al_cas__gen_write(c, *gen, *serial, err);
	}
	close(lk);
	return r;
}

/* The landing of what was fetched from the remote (ids, fetched since
 * bucket.gen's serial was `since`): the commit of objects.db's
 * transaction, which makes them visible.  A catch-up (gc_sweeps.c) that ran while
 * they were on the way did not see them in the local store, so did not
 * upload them again if another node's pass swept them meanwhile: when the
 * serial moved, they go to the remote again first.  Under the lock a
 * catch-up takes exclusively, so none runs between this check and their
 * landing; one that runs after it sees them. */
static int land_fetched(struct al_cas *c, const struct al_oid *ids, size_t n, int64_t since,
			struct al_error *err)
{
	int lk = al_cas__gen_lock(c, false, err);
	if (lk < 0)
		return lk;
	int64_t gen, serial;
	int r = al_cas__gen_read(c, &gen, &serial, err);
	if (r == 0 && serial != since)
		r = push_ids(c, ids, n, err);
	if (r == 0)
		r = commit_txn(c, err);
	close(lk);
	return r;
}

struct fetch {
	int fd;
	uint64_t n;
};

static int fetch_sink(void *ctx, const void *p, size_t n, struct al_error *err)
{
	struct fetch *f = ctx;
	if (al_write_full(f->fd, p, n) < 0)
		return al_fail(err, errno == ENOSPC ? AL_ELIMIT : AL_EIO, errno,
			       "cas: write fetched object");
	f->n += n;
	return 0;
}

/* An object the local store lacks, read (verified) from the remote and kept:
 * a small one packed, a large one as a raw loose file published at once (a
 * batch that aborts leaves it an orphan file, which the collector removes).
 * Inside a batch the row joins the batch's transaction; outside, a
 * transaction of its own.  Nothing is stored when the remote's bytes do not
 * match the id. */
static int hydrate(struct al_cas *c, const struct al_oid *d, struct al_error *err)
{
	int r = pin(c, err);
	bool had_batch_dir = c->batchfd >= 0;
	if (r < 0 || (r = ensure_batch_dir(c, err)) < 0)
		return r;
	char tmp[32];
	snprintf(tmp, sizeof(tmp), "h%u", c->tmpseq++);
	_cleanup_close_ int fd =
		openat(c->batchfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
	bool own_txn = false, published = false;
	if (fd < 0) {
		r = al_fail(err, AL_EIO, errno, "cas: create temp object");
		goto out;
	}
	/* the serial before the bytes leave the remote (land_fetched) */
	int64_t gen, serial;
	if ((r = al_cas__gen_read(c, &gen, &serial, err)) < 0)
		goto out;
	struct fetch f = { .fd = fd };
	r = c->remote->read(c->remote, d, fetch_sink, &f, err);
	/* bytes that do not match the id are read once more (a fault on the
	 * way, not in the bucket, passes), verified again, and otherwise the
	 * integrity error stands: never a third try, never the bytes kept */
	if (r == AL_ECORRUPT) {
		if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
			r = al_fail(err, AL_EIO, errno, "cas: fetch object again");
			goto out;
		}
		f.n = 0;
		r = c->remote->read(c->remote, d, fetch_sink, &f, err);
		if (r == AL_ECORRUPT && err) {
			size_t l = strlen(err->msg);
			snprintf(err->msg + l, sizeof(err->msg) - l, " (read twice)");
		}
	}
	if (r < 0)
		goto out;
	own_txn = !c->in_batch;
	if (own_txn)
		reads_stop(c);
	if (own_txn && (r = al_sqlite_exec(c->db, "BEGIN IMMEDIATE", err)) < 0) {
		own_txn = false;
		goto out;
	}
	/* a fetch inside a batch lands with it (al_cas_commit): its place
	 * in the batch's list is taken before its row exists */
	if (!own_txn) {
		if (!c->nhyd)
			c->hyd_serial = serial;
		if ((r = oid_push(&c->hyd, &c->nhyd, &c->caphyd, d, err)) < 0)
			goto out;
	}
	c->hydrating = true;
	if (f.n < AL_CAS_LOOSE_MIN) {
		uint8_t *buf = c->iobuf;
		if (pread(fd, buf, (size_t)f.n, 0) != (ssize_t)f.n)
			r = al_fail(err, AL_EIO, errno, "cas: read fetched object");
		else
			r = put_packed(c, buf, (size_t)f.n, d, err);
	} else {
		char sub[3], file[63];
		loose_name(d, sub, file);
		bool newsub = false;
		if (fdatasync(fd) < 0 ||
		    (!(newsub = mkdirat(c->objfd, sub, 0700) == 0) && errno != EEXIST)) {
			r = al_fail(err, AL_EIO, errno, "cas: store fetched object");
		} else {
			_cleanup_close_ int sfd = openat(
				c->objfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sfd < 0 || renameat(c->batchfd, tmp, sfd, file) < 0)
				r = al_fail(err, AL_EIO, errno, "cas: publish fetched object");
			else
				published = true;
			/* the new objects/xx too, as publish_pending does: else
			 * after a power loss the row could name a file gone */
			if (r == 0 && (r = al_fsync_dir(c->objfd, sub, err)) == 0 &&
			    (!newsub || (r = al_fsync_dir(c->objfd, ".", err)) == 0))
				r = insert_row(c, d, f.n, ENC_LOOSE_RAW, NULL, 0, err);
		}
	}
	c->hydrating = false;
	if (r < 0 && !own_txn)
		c->nhyd--;
out:
	if (own_txn) {
		if (r == 0)
			r = land_fetched(c, d, 1, serial, err);
		if (r < 0)
			sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	}
	if (!published)
		unlinkat(c->batchfd, tmp, 0);
	if (!c->in_batch && !had_batch_dir)
		remove_batch_dir(c);
	return r;
}

/* lookup_local, and on a miss the remote's copy fetched first. */
static int lookup(struct al_cas *c, const struct al_oid *d, int *enc, uint64_t *size,
		  struct al_error *err)
{
	int r = lookup_local(c, d, enc, size, err);
	if (r != AL_ENOTFOUND || !c->remote || c->no_fetch)
		return r;
	if ((r = hydrate(c, d, err)) < 0)
		return r;
	return lookup_local(c, d, enc, size, err);
}

/* Every object the batch inserted, to the remote (read back verified), at
 * once: the batch commits only when all of them are there. */
static int push_batch(struct al_cas *c, struct al_error *err)
{
	int r = push_ids(c, c->wr, c->nwr, err);
	if (r < 0)
		return r;
	c->nwr = 0;
	return 0;
}

/* ---- uploading what the local store held before its remote ------------------- */

static int sync_listed(void *ctx, const struct al_oid *id, uint64_t size, struct al_error *err)
{
	(void)size;
	return al_idset_add(ctx, id) < 0 ? al_fail(err, AL_ENOMEM, ENOMEM, "cas") : 0;
}

struct sync_missing {
	const struct al_idset *remote;
	struct al_cas_sync_stats *st;
	struct al_oid *ids;
	uint64_t *sizes;
	size_t n, cap;
};

static int sync_local(void *ctx, const struct al_cas__object *o, struct al_error *err)
{
	struct sync_missing *m = ctx;
	m->st->objects++;
	if (al_idset_has(m->remote, &o->id)) {
		m->st->present++;
		return 0;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct al_oid *ids = realloc(m->ids, cap * sizeof(*ids));
		if (ids)
			m->ids = ids;
		uint64_t *sizes = ids ? realloc(m->sizes, cap * sizeof(*sizes)) : NULL;
		if (!sizes)
			return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
		m->sizes = sizes;
		m->cap = cap;
	}
	m->ids[m->n] = o->id;
	m->sizes[m->n++] = o->size;
	return 0;
}

struct remote_sweep {
	const struct al_idset *keep;
	int (*doomed)(void *ctx, const struct al_oid *ids, size_t n, struct al_error *err);
	void *ctx;
};

static bool remote_keep(void *ctx, const struct al_oid *id)
{
	return al_idset_has(((struct remote_sweep *)ctx)->keep, id);
}

static int remote_doomed(void *ctx, const struct al_oid *ids, size_t n, struct al_error *err)
{
	struct remote_sweep *x = ctx;
	return x->doomed ? x->doomed(x->ctx, ids, n, err) : 0;
}

int al_cas__remote_sweep(struct al_cas *c, const struct al_idset *keep,
			 int (*doomed)(void *ctx, const struct al_oid *ids, size_t n,
				       struct al_error *err),
			 void *ctx, int64_t before, bool dry, struct al_odb_sweep *out,
			 struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!c->remote || !c->remote->sweep)
		return 0;
	struct remote_sweep x = { keep, doomed, ctx };
	return c->remote->sweep(c->remote, remote_keep, remote_doomed, &x, before, dry, out, err);
}

bool al_cas__has_remote(const struct al_cas *c)
{
	return c->remote != NULL;
}

int al_cas__empty(struct al_cas *c, struct al_error *err)
{
	_cleanup_sqlite_stmt_ sqlite3_stmt *st = NULL;
	int r = al_sqlite_prepare(c->db, "SELECT 1 FROM objects LIMIT 1", &st, err);
	if (r < 0)
		return r;
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		return rc == SQLITE_DONE;
	return al_fail(err, AL_EIO, 0, "cas: lookup: %s", sqlite3_errmsg(c->db));
}

#define SYNC_BATCH 64

/* ids (their sizes in sizes, or NULL) to the remote, SYNC_BATCH at a time */
static int upload(struct al_cas *c, const struct al_oid *ids, const uint64_t *sizes, size_t n,
		  void (*progress)(void *ctx, uint64_t n, uint64_t bytes), void *ctx,
		  struct al_cas_sync_stats *out, struct al_error *err)
{
	for (size_t i = 0; i < n; i += SYNC_BATCH) {
		size_t k = n - i < SYNC_BATCH ? n - i : SYNC_BATCH;
		/* from the local store only: one the collector removed since it
		 * was listed fails the upload, never comes from the remote (a
		 * catch-up would wait on its own bucket.lock for its landing) */
		c->no_fetch = true;
		int r = push_ids(c, ids + i, k, err);
		c->no_fetch = false;
		if (r < 0)
			return r;
		out->uploaded += k;
		for (size_t j = i; sizes && j < i + k; j++)
			out->bytes += sizes[j];
		if (progress)
			progress(ctx, out->uploaded, out->bytes);
	}
	return 0;
}

static int upload_missing(struct al_cas *c, void (*progress)(void *ctx, uint64_t n, uint64_t bytes),
			  void *ctx, struct al_cas_sync_stats *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	struct al_idset remote = { 0 };
	struct sync_missing m = { .remote = &remote, .st = out };
	int r = c->remote->foreach(c->remote, sync_listed, &remote, err);
	if (r == 0)
		r = al_cas__foreach(c, 0, sync_local, &m, err);
	if (r == 0)
		r = upload(c, m.ids, m.sizes, m.n, progress, ctx, out, err);
	al_idset_release(&remote);
	free(m.ids);
	free(m.sizes);
	return r;
}

int al_cas_remote_sync(struct al_cas *c, void (*progress)(void *ctx, uint64_t n, uint64_t bytes),
		       void *ctx, struct al_cas_sync_stats *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!c->remote)
		return al_fail(err, AL_EUSAGE, 0,
			       "no object store to upload to: pass --blobs s3://… (or set "
			       "AIRLOCK_BLOBS)");
	if (c->in_batch)
		return al_fail(err, AL_EUSAGE, 0, "cas: a batch is open");
	/* the collector must not sweep what is about to be read */
	int r = pin(c, err);
	if (r == 0)
		r = upload_missing(c, progress, ctx, out, err);
	al_cas__release_memory(c); /* unpins: nothing of a batch is open */
	return r;
}

int al_cas__reupload_missing(struct al_cas *c, struct al_cas_sync_stats *out, struct al_error *err)
{
	return upload_missing(c, NULL, NULL, out, err);
}

int al_cas__reupload(struct al_cas *c, const struct al_oid *ids, size_t n, uint64_t *n_out,
		     struct al_error *err)
{
	struct al_oid *held = malloc((n ? n : 1) * sizeof(*held));
	if (!held)
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	size_t k = 0;
	int r = 0;
	for (size_t i = 0; i < n && r >= 0; i++)
		if ((r = al_cas__has_local(c, &ids[i], err)) == 1)
			held[k++] = ids[i];
	struct al_cas_sync_stats st = { 0 };
	if (r >= 0)
		r = upload(c, held, NULL, k, NULL, NULL, &st, err);
	free(held);
	if (n_out)
		*n_out = st.uploaded;
	return r < 0 ? r : 0;
}

static int decode_bytes(struct al_cas *c, const struct al_oid *d, int enc, uint64_t size,
			const void *data, size_t dlen, uint8_t **out, struct al_error *err)
{
	if (size >= AL_CAS_LOOSE_MIN * 64ull)
		return corrupt(err, d, "implausible size");
	uint8_t *buf = malloc((size_t)size + 1);
	if (!buf)
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	buf[size] = 0; /* callers may treat small objects as strings */
	int r = 0;
	if (enc == ENC_RAW) {
		if (dlen != size)
			r = corrupt(err, d, "size mismatch");
		else if (size)
			memcpy(buf, data, dlen);
	} else if (enc == ENC_ZSTD) {
		size_t n = ZSTD_decompressDCtx(c->dctx, buf, (size_t)size, data, dlen);
		if (ZSTD_isError(n) || n != size)
			r = corrupt(err, d,
				    ZSTD_isError(n) ? ZSTD_getErrorName(n) : "size mismatch");
	} else {
		r = corrupt(err, d, "unknown encoding");
	}
	if (r == 0) {
		struct al_oid got;
		al_sha256(buf, (size_t)size, got.b);
		if (!al_oid_eq(&got, d))
			r = corrupt(err, d, "digest mismatch");
	}
	if (r < 0) {
		free(buf);
		return r;
	}
	*out = buf;
	return 0;
}

static int decode_packed(struct al_cas *c, const struct al_oid *d, int enc, uint64_t size,
			 uint8_t **out, struct al_error *err)
{
	if (c->found) /* lookup_local's answer: held, or st_get's row */
		return decode_bytes(c, d, enc, size, c->found->data, c->found->len, out, err);
	sqlite3_stmt *st = c->st_get;
	return decode_bytes(c, d, enc, size, sqlite3_column_blob(st, 2),
			    (size_t)sqlite3_column_bytes(st, 2), out, err);
}

static int append_sink(void *ctx, const void *p, size_t n, struct al_error *err)
{
	if (al_buf_put(ctx, p, n) < 0)
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	return 0;
}

/* al_cas_get; *committed: the object came from a row this handle read
 * outside any transaction of its own, so another connection's commit or
 * this handle's own put that is still to be rolled back cannot have made
 * it (a held object, a row of an open batch: false) */
static int get(struct al_cas *c, const struct al_oid *d, uint8_t **out, size_t *len,
	       bool *committed, struct al_error *err)
{
	int enc;
	uint64_t size;
	int r = lookup(c, d, &enc, &size, err);
	if (r < 0)
		return r;
	*committed = !c->found && (sqlite3_get_autocommit(c->db) || c->reading);
	if (!is_loose(enc)) {
		r = decode_packed(c, d, enc, size, out, err);
		sqlite3_reset(c->st_get);
		if (r == 0)
			*len = (size_t)size;
		return r;
	}
	*committed = false;
	sqlite3_reset(c->st_get);
	if (size > SIZE_MAX / 2)
		return al_fail(err, AL_ELIMIT, 0, "object too large to load");
	struct al_buf b = { 0 };
	if (al_buf_reserve(&b, (size_t)size + 1) < 0)
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	r = stream_loose(c, d, size, enc == ENC_LOOSE_RAW, append_sink, &b, err);
	if (r < 0) {
		al_buf_release(&b);
		return r;
	}
	b.p[b.len] = 0; /* reserved above */
	*out = b.p;
	*len = b.len;
	return 0;
}

int al_cas_get(struct al_cas *c, const struct al_oid *d, uint8_t **out, size_t *len,
	       struct al_error *err)
{
	bool committed;
	return get(c, d, out, len, &committed, err);
}

/* ---- tree nodes read again (al_cas__node) ---------------------------------------- */

/* A commit reads the same few tree nodes again and again: the base's and
 * the head's root and the directories it edits, in its own edit, in the
 * changes on either side and in the merge (8 writers: 26 loads a commit,
 * 7 of 10 of them of a node this process had read before).  Each load
 * was a lookup in objects.db, whose page cache SQLite empties at every
 * read after another connection's commit, then its decompression and
 * digest.  So a pinned handle keeps the nodes it read, verified: an
 * object's bytes never change, and while the pin is held the collector
 * cannot delete one (docs/architecture.md, "Garbage collection"); the
 * pin's release empties the cache.  Direct-mapped by the digest's first
 * bytes; at most NODE_BUDGET bytes. */
#define NODE_SLOTS 128u
#define NODE_MAX (64u * 1024)
#define NODE_BUDGET (1u << 20)

struct node_slot {
	struct al_oid id;
	uint8_t *p; /* NULL: empty */
	size_t len;
};

static void node_cache_clear(struct al_cas *c)
{
	if (c->nodes)
		for (size_t i = 0; i < NODE_SLOTS; i++) {
			free(c->nodes[i].p);
			c->nodes[i].p = NULL;
		}
	c->nodebytes = 0;
}

static struct node_slot *node_slot(struct al_cas *c, const struct al_oid *d)
{
	if (c->pinfd < 0 || c->sweeping)
		return NULL;
	if (!c->nodes && !(c->nodes = calloc(NODE_SLOTS, sizeof(*c->nodes))))
		return NULL; /* out of memory: no cache, reads as before */
	return &c->nodes[((size_t)d->b[0] << 8 | d->b[1]) % NODE_SLOTS];
}

int al_cas__node(struct al_cas *c, const struct al_oid *d, const uint8_t **p, size_t *len,
		 uint8_t **owned, struct al_error *err)
{
	*owned = NULL;
	struct node_slot *s = node_slot(c, d);
	if (s && s->p && al_oid_eq(&s->id, d)) {
		*p = s->p;
		*len = s->len;
		return 0;
	}
	uint8_t *buf;
	size_t n;
	bool committed;
	int r = get(c, d, &buf, &n, &committed, err);
	if (r < 0)
		return r;
	*p = buf;
	*len = n;
	if (s && committed && n <= NODE_MAX) {
		c->nodebytes -= s->p ? s->len : 0;
		free(s->p);
		s->p = NULL;
		if (c->nodebytes + n <= NODE_BUDGET) {
			*s = (struct node_slot){ .id = *d, .p = buf, .len = n };
			c->nodebytes += n;
			return 0;
		}
	}
	*owned = buf;
	return 0;
}

int al_cas_stream(struct al_cas *c, const struct al_oid *d, al_cas_sink sink, void *ctx,
		  struct al_error *err)
{
	int enc;
	uint64_t size;
	int r = lookup(c, d, &enc, &size, err);
	if (r < 0)
		return r;
	if (is_loose(enc)) {
		sqlite3_reset(c->st_get);
		return stream_loose(c, d, size, enc == ENC_LOOSE_RAW, sink, ctx, err);
	}
	_cleanup_free_ uint8_t *buf = NULL;
	r = decode_packed(c, d, enc, size, &buf, err);
	sqlite3_reset(c->st_get);
	if (r < 0)
		return r;
	return size ? sink(ctx, buf, (size_t)size, err) : 0;
}

/* ---- the piecewise reader (cas.h) ---------------------------------------------- */

#define READER_IN (32u * 1024)

struct al_cas_reader {
	struct al_oid digest;
	uint64_t size, pos;
	bool raw, verified;
	uint8_t *packed; /* a packed object, decoded and verified at open */
	int fd;
	ZSTD_DCtx *dctx;
	struct al_sha *sha;
	uint8_t *in;
	ZSTD_inBuffer zin;
	bool in_eof;
	size_t zlast; /* ZSTD_decompressStream's last hint: 0 at a frame's end */
};

void al_cas_reader_close(struct al_cas_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	ZSTD_freeDCtx(r->dctx);
	al_sha_free(r->sha);
	free(r->in);
	free(r->packed);
	free(r);
}

uint64_t al_cas_reader_size(const struct al_cas_reader *r)
{
	return r->size;
}

int al_cas_reader_open(struct al_cas *c, const struct al_oid *d, struct al_cas_reader **out,
		       struct al_error *err)
{
	*out = NULL;
	int enc;
	uint64_t size;
	int rc = lookup(c, d, &enc, &size, err);
	if (rc < 0)
		return rc;
	struct al_cas_reader *r = calloc(1, sizeof(*r));
	if (!r) {
		sqlite3_reset(c->st_get);
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	}
	r->fd = -1;
	r->size = size;
	r->digest = *d;
	if (!is_loose(enc)) {
		rc = decode_packed(c, d, enc, size, &r->packed, err);
		sqlite3_reset(c->st_get);
		r->verified = true;
		if (rc < 0) {
			al_cas_reader_close(r);
			return rc;
		}
		*out = r;
		return 0;
	}
	sqlite3_reset(c->st_get);
	r->raw = enc == ENC_LOOSE_RAW;
	char sub[3], file[63], path[67];
	loose_name(d, sub, file);
	snprintf(path, sizeof(path), "%s/%s", sub, file);
	r->fd = openat(c->objfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (r->fd < 0) {
		rc = errno == ENOENT ? corrupt(err, d, "its file is missing")
				     : al_fail(err, AL_EIO, errno, "cas: open object");
		al_cas_reader_close(r);
		return rc;
	}
	posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	r->sha = al_sha_new();
	r->in = malloc(READER_IN);
	r->dctx = r->raw ? NULL : ZSTD_createDCtx();
	r->zlast = 1;
	if (!r->sha || !r->in || (!r->raw && !r->dctx)) {
		al_cas_reader_close(r);
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	}
	/* what the store writes uses a 512 KiB window; a forged frame cannot
	 * ask for more than 8 MiB */
	if (r->dctx)
		ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, 23);
	*out = r;
	return 0;
}

/* Input for the decompressor (or raw bytes): 0, or -1 at EOF, or an error. */
static int reader_fill(struct al_cas_reader *r, struct al_error *err)
{
	if (r->zin.pos < r->zin.size)
		return 0;
	if (r->in_eof)
		return -1;
	ssize_t n;
	do
		n = read(r->fd, r->in, READER_IN);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return al_fail(err, AL_EIO, errno, "cas: read object");
	if (n == 0) {
		r->in_eof = true;
		return -1;
	}
	r->zin = (ZSTD_inBuffer){ r->in, (size_t)n, 0 };
	return 0;
}

/* Up to n decompressed bytes into buf (n > 0); 0 only at the stream's end. */
static int64_t reader_produce(struct al_cas_reader *r, uint8_t *buf, size_t n, struct al_error *err)
{
	size_t got = 0;
	while (got < n) {
		int f = reader_fill(r, err);
		if (f < -1)
			return f;
		if (f == -1)
			break;
		if (r->raw) {
			size_t k = r->zin.size - r->zin.pos < n - got ? r->zin.size - r->zin.pos
								      : n - got;
			memcpy(buf + got, (const uint8_t *)r->zin.src + r->zin.pos, k);
			r->zin.pos += k;
			got += k;
			continue;
		}
		ZSTD_outBuffer ob = { buf + got, n - got, 0 };
		r->zlast = ZSTD_decompressStream(r->dctx, &ob, &r->zin);
		if (ZSTD_isError(r->zlast))
			return corrupt(err, &r->digest, ZSTD_getErrorName(r->zlast));
		got += ob.pos;
		if (got && r->zin.pos == r->zin.size && ob.pos < ob.size)
			break; /* deliver what there is before blocking on more input */
	}
	return (int64_t)got;
}

/* At the recorded size: the stream must end here and the digest match. */
static int reader_verify(struct al_cas_reader *r, struct al_error *err)
{
	if (r->verified)
		return 0;
	uint8_t extra[512];
	int64_t n = reader_produce(r, extra, sizeof(extra), err);
	if (n < 0)
		return (int)n;
	struct al_oid got;
	al_sha_final(r->sha, got.b);
	if (n > 0)
		return corrupt(err, &r->digest, "longer than recorded");
	if (!r->raw && r->zlast != 0)
		return corrupt(err, &r->digest, "truncated");
	if (!al_oid_eq(&got, &r->digest))
		return corrupt(err, &r->digest, "digest mismatch");
	r->verified = true;
	return 0;
}

int64_t al_cas_reader_read(struct al_cas_reader *r, void *buf, size_t n, struct al_error *err)
{
	uint64_t left = r->size - r->pos;
	if (n > left)
		n = (size_t)left;
	if (n == 0)
		return r->verified ? 0 : reader_verify(r, err);
	if (r->packed) {
		memcpy(buf, r->packed + r->pos, n);
		r->pos += n;
		return (int64_t)n;
	}
	int64_t got = reader_produce(r, buf, n, err);
	if (got < 0)
		return got;
	if (got == 0)
		return corrupt(err, &r->digest, "truncated");
	al_sha_update(r->sha, buf, (size_t)got);
	r->pos += (uint64_t)got;
	if (r->pos == r->size) {
		int v = reader_verify(r, err);
		if (v < 0)
			return v; /* the last bytes are withheld */
	}
	return got;
}

int al_cas_reader_skip(struct al_cas_reader *r, uint64_t n, struct al_error *err)
{
	if (r->packed) {
		r->pos += n < r->size - r->pos ? n : r->size - r->pos;
		return 0;
	}
	_cleanup_free_ uint8_t *scratch = n ? malloc(READER_IN) : NULL;
	if (n && !scratch)
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	while (n && r->pos < r->size) {
		int64_t k =
			al_cas_reader_read(r, scratch, n < READER_IN ? (size_t)n : READER_IN, err);
		if (k < 0)
			return (int)k;
		n -= (uint64_t)k;
	}
	return 0;
}

int al_cas_size(struct al_cas *c, const struct al_oid *d, uint64_t *size, struct al_error *err)
{
	int enc;
	int r = lookup_local(c, d, &enc, size, err);
	sqlite3_reset(c->st_get);
	if (r == AL_ENOTFOUND && c->remote)
		r = c->remote->read_header(c->remote, d, size, err);
	return r;
}

int al_cas_verify_all(struct al_cas *c, al_cas_bad_fn bad, void *ctx, struct al_cas_stats *stats,
		      struct al_error *err)
{
	struct al_cas_stats s = { 0 };
	_cleanup_sqlite_stmt_ sqlite3_stmt *st = NULL;
	int r = al_sqlite_prepare(c->db, "SELECT id, size, enc FROM objects ORDER BY n", &st, err);
	if (r < 0)
		return r;
	int nbad = 0, rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct al_oid d = { 0 };
		if (sqlite3_column_bytes(st, 0) != AL_OID_LEN) {
			nbad++;
			if (bad)
				bad(ctx, &d, "malformed object id in index");
			continue;
		}
		memcpy(d.b, sqlite3_column_blob(st, 0), AL_OID_LEN);
		uint64_t size = (uint64_t)sqlite3_column_int64(st, 1);
		int enc = sqlite3_column_int(st, 2);
		struct al_error e = { 0 };
		if (is_loose(enc)) {
			s.loose++;
			r = stream_loose(c, &d, size, enc == ENC_LOOSE_RAW, NULL, NULL, &e);
		} else {
			s.packed++;
			int enc2;
			uint64_t size2;
			_cleanup_free_ uint8_t *buf = NULL;
			r = lookup(c, &d, &enc2, &size2, &e);
			if (r == 0)
				r = decode_packed(c, &d, enc2, size2, &buf, &e);
			sqlite3_reset(c->st_get);
		}
		s.bytes += size;
		if (r == AL_ECORRUPT || r == AL_ENOTFOUND) {
			nbad++;
			if (bad)
				bad(ctx, &d, e.msg);
		} else if (r < 0) {
			*err = e;
			return r;
		}
	}
	if (rc != SQLITE_DONE)
		return al_fail(err, AL_EIO, 0, "cas: scan: %s", sqlite3_errmsg(c->db));
	/* loose files the index does not know: left by a crash between publish
	 * and commit; harmless, counted. */
	for (int i = 0; i < 256; i++) {
		char sub[3];
		snprintf(sub, sizeof(sub), "%02x", i);
		_cleanup_close_ int sfd =
			openat(c->objfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *dir = sfd >= 0 ? al_opendir_fd(sfd) : NULL;
		if (!dir)
			continue;
		struct dirent *de;
		while ((de = readdir(dir))) {
			if (de->d_name[0] == '.')
				continue;
			char hex[65];
			struct al_oid d;
			if (strlen(de->d_name) != 62) {
				s.unreferenced_files++;
				continue;
			}
			memcpy(hex, sub, 2);
			memcpy(hex + 2, de->d_name, 63);
			if (al_unhex(hex, AL_OID_LEN, d.b) < 0 || al_cas_has(c, &d, NULL) != 1)
				s.unreferenced_files++;
		}
		closedir(dir);
	}
	if (stats)
		*stats = s;
	return nbad;
}

int al_cas_hash_fd(int fd, struct al_oid *d, uint64_t *size_out, struct al_error *err)
{
	_cleanup_sha_ struct al_sha *sha = al_sha_new();
	_cleanup_free_ uint8_t *buf = malloc(IOBUF);
	if (!sha || !buf)
		return al_fail(err, AL_ENOMEM, ENOMEM, "hash");
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	uint64_t total = 0;
	for (;;) {
		ssize_t n = read(fd, buf, IOBUF);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return al_fail(err, AL_EIO, errno, "read");
		}
		if (n == 0)
			break;
		al_sha_update(sha, buf, (size_t)n);
		total += (uint64_t)n;
	}
	al_sha_final(sha, d->b);
	if (size_out)
		*size_out = total;
	return 0;
}

/* ---- streaming writer ----------------------------------------------------- */

struct al_cas_writer {
	struct al_cas *cas;
	uint64_t size, got;
	struct al_sha *sha;
	struct al_buf small;    /* objects below AL_CAS_LOOSE_MIN */
	struct loose_writer lw; /* larger ones */
	bool loose;
};

int al_cas_write_begin(struct al_cas *c, uint64_t size, struct al_cas_writer **out,
		       struct al_error *err)
{
	if (!c->in_batch)
		return al_fail(err, AL_EUSAGE, 0, "cas: write outside a batch");
	struct al_cas_writer *w = calloc(1, sizeof(*w));
	if (!w || !(w->sha = al_sha_new())) {
		free(w);
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	}
	w->cas = c;
	w->size = size;
	w->lw.fd = -1;
	w->loose = size >= AL_CAS_LOOSE_MIN;
	int r = w->loose ? loose_begin(c, &w->lw, err)
			 : (al_buf_reserve(&w->small, (size_t)size + 1) < 0
				    ? al_fail(err, AL_ENOMEM, ENOMEM, "cas")
				    : 0);
	if (r < 0) {
		al_cas_write_abort(w);
		return r;
	}
	*out = w;
	return 0;
}

int al_cas_write(struct al_cas_writer *w, const void *p, size_t n, struct al_error *err)
{
	if (n > w->size - w->got)
		return al_fail(err, AL_EINVAL, 0, "more bytes than declared");
	w->got += n;
	al_sha_update(w->sha, p, n);
	if (!w->loose)
		return al_buf_put(&w->small, p, n) < 0 ? al_fail(err, AL_ENOMEM, ENOMEM, "cas") : 0;
	return loose_feed(w->cas, &w->lw, p, n, false, err);
}

int al_cas_write_end(struct al_cas_writer *w, struct al_oid *d, struct al_error *err)
{
	int r = 0;
	if (w->got != w->size)
		r = al_fail(err, AL_EINVAL, 0, "fewer bytes than declared");
	else if (!w->loose)
		r = al_cas_put(w->cas, w->small.p ? w->small.p : (const uint8_t *)"", w->small.len,
			       d, err);
	else if ((r = loose_feed(w->cas, &w->lw, "", 0, true, err)) == 0) {
		al_sha_final(w->sha, d->b);
		r = loose_finish(w->cas, &w->lw, d, w->size, err);
	}
	if (r == 0)
		w->lw.fd = -1; /* handed over */
	al_cas_write_abort(w);
	return r;
}

void al_cas_write_abort(struct al_cas_writer *w)
{
	if (!w)
		return;
	if (w->loose)
		loose_cancel(w->cas, &w->lw);
	al_sha_free(w->sha);
	al_buf_release(&w->small);
	free(w);
}

struct sqlite3 *al_cas__sqlite(struct al_cas *c)
{
	return c->db;
}

int al_cas__synchronous(struct al_cas *c)
{
	sqlite3_stmt *q = NULL;
	int v = -1;
	if (sqlite3_prepare_v2(c->db, "PRAGMA synchronous", -1, &q, NULL) == SQLITE_OK &&
	    sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	return v;
}

bool al_cas__idle(struct al_cas *c)
{
	return !c->in_batch && !c->grouped && c->batchfd < 0 && sqlite3_get_autocommit(c->db) &&
	       al_sqlite_quiet(c->db);
}

bool al_cas__locked(struct al_cas *c)
{
	return c->in_batch && c->txn;
}

size_t al_cas__held(struct al_cas *c)
{
	return ZSTD_sizeof_CCtx(c->cctx) + ZSTD_sizeof_CCtx(c->cctx_mt) +
	       ZSTD_sizeof_DCtx(c->dctx) + c->zbuf.cap;
}

int al_cas__group(struct al_cas *c, bool on, struct al_error *err)
{
	/* a batch open before would be taken for the group's own: its
	 * commit would only leave it, and nothing would be stored */
	if (on && c->in_batch)
		return al_fail(err, AL_EUSAGE, 0, "cas: a batch is open");
	c->grouped = on;
	c->joined = 0;
	c->gerr = (struct al_error){ 0 };
	return 0;
}

void al_cas__hold_checkpoints(struct al_cas *c, bool hold)
{
	if (c && c->db)
		al_sqlite_hold_checkpoints(c->db, hold);
}

void al_cas__release_memory(struct al_cas *c)
{
	if (c && c->db)
		sqlite3_db_release_memory(c->db);
	if (!c || !al_cas__idle(c))
		return;
	/* idle: whatever it stored is recorded (or abandoned) by now; without
	 * the pin, a node kept could be swept */
	node_cache_clear(c);
	if (c->pinfd >= 0) {
		close(c->pinfd);
		c->pinfd = -1;
	}
	/* and no object is being read or written: the zstd workspaces and the
	 * compression buffer go back once they hold more than 1 MiB (a large
	 * object's, which a handle the daemon keeps would hold for good; a
	 * small object's stay, as remaking them at each request would cost
	 * more than they hold; out of memory, the old contexts stay), and the
	 * I/O buffer's pages */
	if (al_cas__held(c) > (1u << 20)) {
		al_buf_release(&c->zbuf);
		zstd_contexts(c);
	}
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)c->iobuf + (uintptr_t)page - 1) & ~((uintptr_t)page - 1),
		  hi = ((uintptr_t)c->iobuf + IOBUF) & ~((uintptr_t)page - 1);
	if (page > 0 && hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* ---- the collector's side (cas_private.h, gc.c) ------------------------------ */

int al_cas__foreach(struct al_cas *c, int64_t after_n, al_cas__object_fn fn, void *ctx,
		    struct al_error *err)
{
	_cleanup_sqlite_stmt_ sqlite3_stmt *st = NULL;
	int r = al_sqlite_prepare(
		c->db, "SELECT n, id, size, enc FROM objects WHERE n > ? ORDER BY n", &st, err);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, after_n);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_bytes(st, 1) != AL_OID_LEN)
			continue; /* fsck reports it */
		struct al_cas__object o = { .n = sqlite3_column_int64(st, 0),
					    .size = (uint64_t)sqlite3_column_int64(st, 2),
					    .loose = is_loose(sqlite3_column_int(st, 3)) };
		memcpy(o.id.b, sqlite3_column_blob(st, 1), AL_OID_LEN);
		if ((r = fn(ctx, &o, err)) != 0)
			return r;
	}
	return rc == SQLITE_DONE ? 0
				 : al_fail(err, AL_EIO, 0, "cas: scan: %s", sqlite3_errmsg(c->db));
}

int al_cas__max_n(struct al_cas *c, int64_t *out, struct al_error *err)
{
	_cleanup_sqlite_stmt_ sqlite3_stmt *st = NULL;
	int r = al_sqlite_prepare(c->db, "SELECT COALESCE(MAX(n), 0) FROM objects", &st, err);
	if (r < 0)
		return r;
	if (sqlite3_step(st) != SQLITE_ROW)
		return al_fail(err, AL_EIO, 0, "cas: scan: %s", sqlite3_errmsg(c->db));
	*out = sqlite3_column_int64(st, 0);
	return 0;
}

/* Files under objects/ the index does not name: a dead writer's published
 * but uncommitted batch (only safe to remove with no batch in progress). */
static int orphan_files(struct al_cas *c, bool unlink_them, struct al_cas__sweep_stats *s)
{
	for (int i = 0; i < 256; i++) {
		char sub[3];
		snprintf(sub, sizeof(sub), "%02x", i);
		_cleanup_close_ int sfd =
			openat(c->objfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *dir = sfd >= 0 ? al_opendir_fd(sfd) : NULL;
		if (!dir)
			continue;
		struct dirent *de;
		bool any = false;
		while ((de = readdir(dir))) {
			if (de->d_name[0] == '.')
				continue;
			char hex[65];
			struct al_oid d;
			bool known = false;
			if (strlen(de->d_name) == 62) {
				memcpy(hex, sub, 2);
				memcpy(hex + 2, de->d_name, 63);
				known = al_unhex(hex, AL_OID_LEN, d.b) == 0 &&
					al_cas_has(c, &d, NULL) == 1;
			}
			if (known)
				continue;
			struct stat stt;
			if (fstatat(sfd, de->d_name, &stt, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISREG(stt.st_mode))
				continue;
			s->orphan_files++;
			s->orphan_bytes += (uint64_t)stt.st_size;
			if (unlink_them && unlinkat(sfd, de->d_name, 0) == 0)
				any = true;
		}
		closedir(dir);
		if (any)
			fdatasync(sfd);
	}
	return 0;
}

int al_cas__orphan_files(struct al_cas *c, struct al_cas__sweep_stats *s, struct al_error *err)
{
	(void)err;
	return orphan_files(c, false, s);
}

int al_cas__sweep(struct al_cas *c, const struct al_oid *ids, size_t n,
		  int (*before_commit)(void *ctx, const struct al_cas__sweep_stats *s,
				       struct al_error *err),
		  void *ctx, struct al_cas__sweep_stats *out, struct al_error *err)
{
	struct al_cas__sweep_stats s = { 0 };
	if (c->in_batch)
		return al_fail(err, AL_EUSAGE, 0, "cas: sweep inside a batch");
	node_cache_clear(c);
	reads_stop(c);
	_cleanup_free_ struct al_oid *loose = n ? malloc(n * sizeof(*loose)) : NULL;
	if (n && !loose)
		return al_fail(err, AL_ENOMEM, ENOMEM, "cas");
	size_t nloose = 0;
	int r = al_sqlite_exec(c->db, "BEGIN IMMEDIATE", err);
	if (r < 0)
		return r;
	orphan_files(c, false, &s); /* counted now, for the record; removed after the commit */
	_cleanup_sqlite_stmt_ sqlite3_stmt *del = NULL;
	r = al_sqlite_prepare(c->db, "DELETE FROM objects WHERE id = ? RETURNING size, enc", &del,
			      err);
	for (size_t i = 0; r == 0 && i < n; i++) {
		sqlite3_bind_blob(del, 1, ids[i].b, AL_OID_LEN, SQLITE_STATIC);
		int rc = sqlite3_step(del);
		if (rc == SQLITE_ROW) {
			s.objects++;
			s.bytes += (uint64_t)sqlite3_column_int64(del, 0);
			if (is_loose(sqlite3_column_int(del, 1)))
				loose[nloose++] = ids[i];
			rc = sqlite3_step(del);
		}
		if (rc != SQLITE_DONE)
			r = al_fail(err, AL_EIO, 0, "cas: delete: %s", sqlite3_errmsg(c->db));
		sqlite3_reset(del);
	}
	if (r == 0 && before_commit)
		r = before_commit(ctx, &s, err);
	if (r < 0) {
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		return r;
	}
	if ((r = al_sqlite_exec(c->db, "COMMIT", err)) < 0) {
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		return r;
	}
	/* durably: a row back after a crash would name a file removed */
	if ((r = sync_wal(c, false, err)) < 0)
		return r;
	/* the rows are gone: now the files (the caller holds gc.lock, so no
	 * writer can be putting one of them back) */
	bool touched[256] = { 0 };
	for (size_t i = 0; i < nloose; i++) {
		char sub[3], file[63], path[67];
		loose_name(&loose[i], sub, file);
		snprintf(path, sizeof(path), "%s/%s", sub, file);
		if (unlinkat(c->objfd, path, 0) == 0)
			touched[loose[i].b[0]] = true;
	}
	for (int i = 0; i < 256; i++)
		if (touched[i]) {
			char sub[3];
			snprintf(sub, sizeof(sub), "%02x", i);
			al_fsync_dir(c->objfd, sub, NULL);
		}
	struct al_cas__sweep_stats again = { 0 };
	orphan_files(c, true, &again);
	if (out)
		*out = s;
	return 0;
}
