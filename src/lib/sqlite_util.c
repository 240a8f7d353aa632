#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "sqlite_util.h"
#include "util.h"

int al_sqlite_fail(sqlite3 *db, struct al_error *err, const char *what)
{
	int rc = sqlite3_errcode(db);
	int code = AL_EIO;
	if (rc == SQLITE_FULL)
		code = AL_ELIMIT;
	else if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB)
		code = AL_ECORRUPT;
	else if (rc == SQLITE_NOMEM)
		code = AL_ENOMEM;
	return al_fail(err, code, 0, "%s: %s", what, sqlite3_errmsg(db));
}

int al_sqlite_exec(sqlite3 *db, const char *sql, struct al_error *err)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return al_sqlite_fail(db, err, "database");
	return 0;
}

int al_sqlite_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **out, struct al_error *err)
{
	if (sqlite3_prepare_v2(db, sql, -1, out, NULL) != SQLITE_OK)
		return al_sqlite_fail(db, err, "database");
	return 0;
}

/* Lock hand-over.  A write transaction waits for the one before it in
 * SQLite's busy handler, which can only sleep and try again: in 1 ms
 * steps here (SQLite's own busy timeout backs off to 100 ms sleeps, so
 * under many concurrent writers, the daemon's runs, a waiter slept long
 * after the lock was free: a p99 of seconds for commits that take
 * milliseconds).  Even 1 ms steps left a released lock idle for half a
 * step on average, twice per commit (meta.db's lock, then objects.db's for
 * a rebase's nodes): most of the gap between 8 committing processes and 8
 * processes of bare SQLite transactions.
 *
 * So each database has a wake word beside it (<db>-wake, one page, mapped
 * shared by every connection to it): a commit that released the write lock
 * adds one to it and wakes whoever waits on it (futex), and a waiter
 * sleeps on the value it read before its last try, for 1 ms at most.  A
 * release after that read changes the value, so the waiter never sleeps
 * through it; a release the word is not told of (a rollback, a holder
 * killed mid-transaction: the kernel drops its fcntl locks) is found by
 * the 1 ms step, as before.  The word is only a hint: SQLite's own locks
 * still decide who writes, so nothing about the word (missing, unmapped,
 * a stale value, another user's file) can let two writers in or lose a
 * commit; without it (it cannot be opened or is not a regular file) the
 * handler polls as before.  A wait gives up after two minutes. */
#define BUSY_STEP_NS 1000000L
#define BUSY_GIVE_UP_NS (120ull * 1000000000ull)
#define WAKE_SIZE 4096

/* Per connection (the busy handler's and the WAL hook's context): the WAL
 * bound's state (wal_bound) and the hand-over's. */
struct wal_state {
	int bound;      /* frames */
	int page;       /* the database's page size */
	int next;       /* the frame count of the next attempt */
	int frames;     /* at the last commit: fewer now means the WAL restarted */
	uint32_t *wake; /* the mapped wake word, or NULL: poll */
	uint32_t seen;  /* its value before the last try */
	uint64_t since; /* when this wait began (al_now_ns) */
	int64_t woken;  /* waits ended by a release the word told of */
	bool hold;      /* no checkpoint now (al_sqlite_hold_checkpoints) */
	bool after;     /* commits do not sync: al_sqlite_sync_wal does, after */
	uint64_t begun; /* this connection's last commit's number (BEGUN_BYTE) */
};

static uint32_t *wake_map(const char *path)
{
	char name[4200];
	if (snprintf(name, sizeof(name), "%s-wake", path) >= (int)sizeof(name))
		return NULL;
	int fd = open(name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	struct stat sb;
	void *p = MAP_FAILED;
	/* grown, never shrunk: a mapped page cut off would fault */
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    (sb.st_size >= WAKE_SIZE || ftruncate(fd, WAKE_SIZE) == 0))
		p = mmap(NULL, WAKE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* The wake page's second word (its own cache line): odd while a sync of
 * the WAL has failed (after a commit that readers could already see, in a
 * checkpoint, at an open) and no copy of the WAL into the database has
 * succeeded since; even otherwise.  Every mark and every clear
 * moves it on (odd to the next odd or even, even to odd), so it never
 * takes a value again (short of 2^32 moves): a copy clears it only if it
 * still holds the value read before the copy began (unsynced_clear), and
 * a failure marked since, by a commit the copy may not have covered,
 * stays.  A word that went back to 0 at each clear let an older copy's
 * clear erase a later failure of the same value.  An airlock before this
 * one wrote 1 and 0, which read the same. */
#define UNSYNCED_WORD 16

static uint32_t *unsynced_word(struct wal_state *w)
{
	return w && w->wake ? w->wake + UNSYNCED_WORD : NULL;
}

static bool unsynced_marked(uint32_t v)
{
	return v & 1;
}

static void unsynced_mark(uint32_t *u)
{
	if (!u)
		return;
	uint32_t v = __atomic_load_n(u, __ATOMIC_SEQ_CST);
	while (!__atomic_compare_exchange_n(u, &v, v + (unsynced_marked(v) ? 2 : 1), false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
}

/* seen: the word as it was read before the copy began */
static void unsynced_clear(uint32_t *u, uint32_t seen)
{
	if (u && unsynced_marked(seen))
		__atomic_compare_exchange_n(u, &seen, seen + 1, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
}

/* Three counters of the wake page, in its first sector (written back
 * together) and each on a cache line of its own, which tell any
 * connection whether every commit it can see is durable without a sync of
 * its own (al_sqlite_wal_synced):
 *  - begun: bumped by each commit under the write lock before it is
 *    written (its commit hook), so a connection that can see commit k
 *    reads begun >= k;
 *  - written: the highest commit whose frames are in the WAL (the WAL
 *    hook, after the commit): the lock orders commits, so every lower
 *    one's frames are there too;
 *  - synced: written as it was read just before a sync of the WAL that
 *    succeeded (al_sqlite_sync_wal), which covered those frames.
 * A commit that fails or writes nothing leaves written behind begun until
 * the next one: readers then sync, which is only slower.  After a power
 * loss the page may be older than the WAL, but everything the WAL shows
 * then is on disk. */
#define BEGUN_BYTE 128
#define WRITTEN_BYTE 192
#define SYNCED_BYTE 256

static uint64_t *counter(struct wal_state *w, size_t byte)
{
	return w && w->wake ? (uint64_t *)(void *)((char *)w->wake + byte) : NULL;
}

static void raise_to(uint64_t *c, uint64_t v)
{
	uint64_t cur = c ? __atomic_load_n(c, __ATOMIC_SEQ_CST) : v;
	while (cur < v &&
	       !__atomic_compare_exchange_n(c, &cur, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
}

/* sqlite3_commit_hook of a connection whose commits sync after (its wake
 * page mapped): under the write lock, before the commit is written */
static int commit_begun(void *ctx)
{
	struct wal_state *w = ctx;
	w->begun = __atomic_add_fetch(counter(w, BEGUN_BYTE), 1, __ATOMIC_SEQ_CST);
	return 0;
}

static void wake_waiters(struct wal_state *w)
{
	if (!w->wake)
		return;
	__atomic_add_fetch(w->wake, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, w->wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static int busy_wait(void *ctx, int n)
{
	struct wal_state *w = ctx;
	uint64_t now = al_now_ns();
	if (n == 0 && w)
		w->since = now;
	if (w ? now - w->since >= BUSY_GIVE_UP_NS : n >= 120000)
		return 0;
	if (!w || !w->wake) {
		struct timespec ts = { 0, BUSY_STEP_NS };
		nanosleep(&ts, NULL);
		return 1;
	}
	if (n > 0) { /* the first failure tries again at once, from a value read */
		struct timespec ts = { 0, BUSY_STEP_NS };
		long rc = syscall(SYS_futex, w->wake, FUTEX_WAIT, w->seen, &ts, NULL, 0);
		if (rc == 0 || errno == EAGAIN)
			w->woken++;
	}
	w->seen = __atomic_load_n(w->wake, __ATOMIC_SEQ_CST);
	return 1;
}

/* After a commit (sqlite3_wal_hook): once the WAL holds the bound's pages,
 * copy it into the database and, when no reader still needs it, empty it.
 * SQLite's own automatic checkpoint copies but leaves the WAL whole until
 * the next write: a large transaction's WAL (a 1M-entry import's: 140 MB)
 * then stayed at rest, and every process's first open read it all back.
 * No busy waiting here: with readers in the WAL the copy is partial
 * (PASSIVE) and a later commit empties it.
 *
 * A copy that could not empty the WAL (other processes reading it, as
 * concurrent committers do) is tried again only once the WAL has grown by
 * half the bound more: before, every later commit copied its few new
 * frames and synced the database file (two syncs per commit of objects.db,
 * whose 16-frame bound concurrent writers pass within a few commits).  A
 * checkpoint makes nothing durable (each commit synced the WAL, in the
 * commit or, for objects.db, just after it: al_sqlite_sync_wal), so when
 * it runs changes only the WAL's size at rest.
 *
 * How it empties the WAL: a WAL of the bound and a commit is restarted
 * (SQLITE_CHECKPOINT_RESTART: the next commit writes from its start,
 * over the blocks the file already has, which SQLite cuts back to
 * AL_SQLITE_WAL_KEEP at most); a larger one, a big transaction's, and one
 * found at open are truncated to nothing.  Truncating at every bound
 * freed the file's blocks and had the next commits allocate them again,
 * so their syncs wrote the file system's journal too (and the WAL's
 * header once more): under 8 concurrent writers, a third of their
 * throughput.  Recovery reads a WAL only up to its first frame of an
 * older generation (salt): a restarted WAL's old frames are read back
 * only until the next commit, so what an open reads stays within
 * AL_SQLITE_WAL_KEEP (the bound and a commit, as a rule).  at_open: the
 * open's cleanup of a WAL left past the bound (truncated). */
static int checkpoint(struct wal_state *w, sqlite3 *db, const char *name, int frames, bool at_open)
{
	int log = 0, mode = !at_open && (int64_t)frames * (w->page + 24) <= AL_SQLITE_WAL_KEEP
				    ? SQLITE_CHECKPOINT_RESTART
				    : SQLITE_CHECKPOINT_TRUNCATE;
	sqlite3_busy_handler(db, NULL, NULL);
	int rc = sqlite3_wal_checkpoint_v2(db, name, mode, &log, NULL);
	if (rc == SQLITE_BUSY)
		rc = sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, &log, NULL);
	else if (rc == SQLITE_OK)
		log = 0; /* restarted or truncated: the next commit writes from its start */
	/* A checkpoint syncs the WAL first, through this connection's file: a
	 * failure there is the write-back error this file will not report
	 * again, so the commit's own sync after (al_sqlite_sync_wal) would
	 * succeed, and so would every later one.  Marked as a failed sync of
	 * the WAL (unsynced_word), whatever the connection and when: the next
	 * sync of a commit then copies the WAL into the database, or fails.
	 * At an open too: a WAL left past the bound by a writer killed before
	 * its sync holds frames others may have found already. */
	if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
		unsynced_mark(unsynced_word(w));
	sqlite3_busy_handler(db, busy_wait, w);
	return log;
}

static int wal_bound(void *ctx, sqlite3 *db, const char *name, int frames)
{
	struct wal_state *w = ctx;
	raise_to(counter(w, WRITTEN_BYTE), w->begun); /* its frames are in the WAL */
	wake_waiters(w);                              /* the commit has released the write lock */
	if (frames < w->frames)
		w->next = w->bound; /* restarted by another connection */
	w->frames = frames;
	if (w->hold || frames < w->next)
		return SQLITE_OK;
	int log = checkpoint(w, db, name, frames, false);
	wake_waiters(w); /* the checkpoint held the lock too */
	/* emptied (log 0): the bound again; else half of it further on */
	w->next = log <= 0 ? w->bound : frames + (w->bound + 1) / 2;
	w->frames = log > 0 ? frames : 0;
	return SQLITE_OK;
}

static struct wal_state *state_of(sqlite3 *db);

void al_sqlite_hold_checkpoints(sqlite3 *db, bool hold)
{
	struct wal_state *w = state_of(db);
	if (!w)
		return;
	w->hold = hold;
	if (!hold && w->frames >= w->next)
		wal_bound(w, db, "main", w->frames);
}

/* The connection's state lives as long as it: SQLite frees it with the
 * connection (the destructor of a function registered on it).  The
 * function answers how many of its waits a release ended (the tests). */
static void wal_state_fn(sqlite3_context *c, int n, sqlite3_value **v)
{
	(void)n;
	(void)v;
	const struct wal_state *w = sqlite3_user_data(c);
	sqlite3_result_int64(c, w->woken);
}

static void wal_state_free(void *p)
{
	struct wal_state *w = p;
	if (w->wake)
		munmap(w->wake, WAKE_SIZE);
	free(w);
}

static int user_version(sqlite3 *db, int *v, struct al_error *err)
{
	sqlite3_stmt *st = NULL;
	int r = al_sqlite_prepare(db, "PRAGMA user_version", &st, err);
	if (r == 0 && sqlite3_step(st) != SQLITE_ROW)
		r = al_sqlite_fail(db, err, "user_version");
	if (r == 0)
		*v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return r;
}

static int too_new(const char *path, int v, const struct al_sqlite_schema *schema,
		   struct al_error *err)
{
	return al_fail(
		err, AL_EIO, 0,
		"database %s has schema version %d, this airlock knows up to %u: upgrade airlock",
		path, v, schema->count);
}

/* Bring db to schema->count, or refuse a newer one.  The version is read
 * again under the write lock: another process may have migrated meanwhile.
 * *io: its commit failed on an I/O error (its sync of the WAL, with
 * synchronous=FULL whatever the connection's setting). */
static int migrate(sqlite3 *db, const char *path, const struct al_sqlite_schema *schema, bool *io,
		   struct al_error *err)
{
	int v, r = user_version(db, &v, err);
	if (r < 0 || v == (int)schema->count)
		return r;
	if (v < 0 || v > (int)schema->count)
		return too_new(path, v, schema, err);
	if ((r = al_sqlite_exec(db, "BEGIN IMMEDIATE", err)) < 0)
		return r;
	r = user_version(db, &v, err);
	if (r == 0 && (v < 0 || v > (int)schema->count))
		r = too_new(path, v, schema, err);
	for (unsigned i = r == 0 ? (unsigned)v : schema->count; i < schema->count && r == 0; i++)
		r = al_sqlite_exec(db, schema->migrations[i], err);
	char set[48];
	snprintf(set, sizeof(set), "PRAGMA user_version=%u", schema->count);
	if (r == 0 && v != (int)schema->count)
		r = al_sqlite_exec(db, set, err);
	if (r == 0 && (r = al_sqlite_exec(db, "COMMIT", err)) == 0)
		return 0;
	*io = (sqlite3_errcode(db) & 0xff) == SQLITE_IOERR;
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return r;
}

static bool in_wal(sqlite3 *db)
{
	sqlite3_stmt *q = NULL;
	bool wal = sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &q, NULL) == SQLITE_OK &&
		   sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0) &&
		   !strcmp((const char *)sqlite3_column_text(q, 0), "wal");
	sqlite3_finalize(q);
	return wal;
}

static struct wal_state *state_of(sqlite3 *db)
{
	/* the hook's context is the connection's state: read by setting it again */
	struct wal_state *w = sqlite3_wal_hook(db, wal_bound, NULL);
	sqlite3_wal_hook(db, w ? wal_bound : NULL, w);
	return w;
}

/* Copy the whole WAL into the database, sync it and empty the WAL, waiting
 * for readers (the busy handler): true when done.  What a failed sync left
 * unwritten is still in the page cache, just written; the copy puts it in
 * the database file, whose sync then stands for it, and the WAL starts
 * again, so no later commit is appended after a frame that may be lost. */
static bool copy_into_database(sqlite3 *db)
{
	int log = -1, done = -1;
	return sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_TRUNCATE, &log, &done) ==
		       SQLITE_OK &&
	       log == 0;
}

int al_sqlite_sync_wal(sqlite3 *db, struct al_error *err)
{
	const char *name = sqlite3_db_filename(db, "main");
	struct wal_state *w = state_of(db);
	if (!w || !w->after)
		return 0; /* its commits synced themselves */
	uint32_t *unsynced = unsynced_word(w), seen = 0;
	uint64_t *written = counter(w, WRITTEN_BYTE);
	sqlite3_file *f = NULL;
	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &f) != SQLITE_OK || !f ||
	    !f->pMethods)
		return al_fail(err, AL_EIO, 0, "%s: no write-ahead log to sync", name);
	uint64_t covered = written ? __atomic_load_n(written, __ATOMIC_SEQ_CST) : 0;
	int rc = f->pMethods->xSync(f, SQLITE_SYNC_NORMAL);
	/* Unlike a commit that syncs (synchronous=FULL), which shows nothing
	 * of itself until its sync succeeded, this commit is visible already:
	 * others may find its objects and name them, and later commits follow
	 * its frames in the WAL.  And a failed sync may not fail again (the
	 * kernel reports a write-back error once per open file).  So the
	 * failure is told to every connection (the unsynced word), and until
	 * the WAL has been copied into the database and synced there, every
	 * sync here fails. */
	if (rc != SQLITE_OK)
		unsynced_mark(unsynced);
	if (unsynced)
		seen = __atomic_load_n(unsynced, __ATOMIC_SEQ_CST);
	if (rc == SQLITE_OK && !unsynced_marked(seen)) {
		raise_to(counter(w, SYNCED_BYTE), covered);
		return 0;
	}
	if (copy_into_database(db)) {
		unsynced_clear(unsynced, seen);
		if (rc == SQLITE_OK) {
			raise_to(counter(w, SYNCED_BYTE), covered);
			return 0; /* another's failure, mended now */
		}
	}
	if (rc != SQLITE_OK)
		return al_fail(err, AL_EIO, 0, "sync %s-wal: %s", name, sqlite3_errstr(rc));
	return al_fail(err, AL_EIO, 0,
		       "%s: a sync of its write-ahead log failed and the log could not be copied "
		       "into the database since (check the disk); nothing is committed until it "
		       "is",
		       name);
}

bool al_sqlite_quiet(sqlite3 *db)
{
	for (sqlite3_stmt *s = sqlite3_next_stmt(db, NULL); s; s = sqlite3_next_stmt(db, s))
		if (sqlite3_stmt_busy(s))
			return false;
	return true;
}

bool al_sqlite_wal_synced(sqlite3 *db)
{
	struct wal_state *w = state_of(db);
	if (!w || !w->after)
		return true; /* its commits synced before anyone could see them */
	uint64_t *begun = counter(w, BEGUN_BYTE), *synced = counter(w, SYNCED_BYTE);
	uint32_t *unsynced = unsynced_word(w);
	if (!begun || !synced || !unsynced ||
	    unsynced_marked(__atomic_load_n(unsynced, __ATOMIC_SEQ_CST)))
		return false;
	uint64_t b = __atomic_load_n(begun, __ATOMIC_SEQ_CST); /* >= every commit seen */
	return __atomic_load_n(synced, __ATOMIC_SEQ_CST) >= b;
}

int al_sqlite_open_sync(const char *path, const struct al_sqlite_schema *schema, enum al_sync sync,
			sqlite3 **out, struct al_error *err)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(path, &db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
					 SQLITE_OPEN_EXRESCODE,
				 NULL);
	if (rc != SQLITE_OK) {
		int r = al_fail(err, AL_EIO, 0, "open %s: %s", path,
				db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		sqlite3_close(db);
		return r;
	}
	sqlite3_busy_handler(db, busy_wait, NULL);
	/* The last connection to close would checkpoint the WAL into the
	 * database (two syncs) and delete it, and the next process to write
	 * would create it again (two more: its header and the directory):
	 * four of a CLI run's six syncs. The WAL stays; commits still sync it (in the commit, or
	 * after it: al_sqlite_sync_wal) (synchronous), and recovery reads it at the next open, as
	 * after a crash: the automatic checkpoint bounds it to AL_SQLITE_WAL_BOUND bytes and a
	 * commit, at most AL_SQLITE_WAL_KEEP, whatever the page size (a database made with 64 KiB
	 * pages before page sizes were per database checkpoints more often). */
	sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
	unsigned page = schema && schema->page_size ? schema->page_size : AL_SQLITE_PAGE;
	char pragmas[400];
	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA page_size=%u; PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA "
		 "foreign_keys=ON; PRAGMA cache_size=-16384; PRAGMA journal_size_limit=%u;",
		 page, AL_SQLITE_WAL_KEEP);
	int r = al_sqlite_exec(db, pragmas, err);
	int psize = 0;
	sqlite3_stmt *q = NULL;
	if (r == 0 && (r = al_sqlite_prepare(db, "PRAGMA page_size", &q, err)) == 0 &&
	    sqlite3_step(q) == SQLITE_ROW)
		psize = sqlite3_column_int(q, 0); /* the database's own, if it existed */
	sqlite3_finalize(q);
	struct wal_state *w = NULL;
	if (r == 0 && psize > 0) {
		int pages = (int)(AL_SQLITE_WAL_BOUND / (unsigned)psize);
		w = calloc(1, sizeof(*w));
		if (!w)
			r = al_fail(err, AL_ENOMEM, ENOMEM, "database");
		else if (sqlite3_create_function_v2(db, "airlock_wal_state", 0, SQLITE_UTF8, w,
						    wal_state_fn, NULL, NULL,
						    wal_state_free) != SQLITE_OK)
			r = al_sqlite_fail(db, err, "database"); /* w is freed by it */
		if (r == 0) {
			w->bound = w->next = pages > 1 ? pages : 1;
			w->page = psize;
			w->wake = wake_map(path);
			sqlite3_busy_handler(db, busy_wait, w);
			sqlite3_wal_hook(db, wal_bound, w);
			/* a WAL left past what a restart keeps (by a crash, a large
			 * transaction, or a version that bounded it less) is read back
			 * once more, then emptied; one restarted at the bound is
			 * larger than the bound, and is left as it is */
			char wal[4200];
			struct stat sb;
			snprintf(wal, sizeof(wal), "%s-wal", path);
			if (stat(wal, &sb) == 0 && sb.st_size > (off_t)AL_SQLITE_WAL_KEEP) {
				checkpoint(w, db, "main", 0, true);
				wake_waiters(w);
			}
		}
	}
	bool io = false;
	if (r == 0 && schema && (r = migrate(db, path, schema, &io, err)) < 0 && io)
		unsynced_mark(unsynced_word(w)); /* as a checkpoint's failed sync */
	/* A migration commits synced, whatever the connection's commits do.
	 * They sync after (al_sqlite_sync_wal) only in a WAL (where SQLite
	 * cannot keep one they stay synchronous=FULL) and with the wake page
	 * mapped: a commit shown before its sync is counted there, or another
	 * connection could take it for synced (al_sqlite_wal_synced).  A page
	 * new or zeroed (deleted, an older airlock's) knows of no sync:
	 * "commit 1", everything its WAL holds now, is written and not
	 * synced, so the next finder syncs. */
	if (r == 0 && sync == AL_SYNC_NORMAL && w && w->wake && in_wal(db) &&
	    (r = al_sqlite_exec(db, "PRAGMA synchronous=NORMAL", err)) == 0) {
		uint64_t none = 0, *begun = counter(w, BEGUN_BYTE);
		if (__atomic_compare_exchange_n(begun, &none, 1, false, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			raise_to(counter(w, WRITTEN_BYTE), 1);
		sqlite3_commit_hook(db, commit_begun, w);
		w->after = true;
	}
	if (r < 0) {
		al_error_prefix(err, "%s: ", path);
		sqlite3_close(db);
		return r;
	}
	*out = db;
	return 0;
}

int al_sqlite_open(const char *path, const struct al_sqlite_schema *schema, sqlite3 **out,
		   struct al_error *err)
{
	return al_sqlite_open_sync(path, schema, AL_SYNC_FULL, out, err);
}
