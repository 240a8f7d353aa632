/* store: the home layout keeps tenants in separate files; one tenant's
 * objects and snapshots do not exist for another. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "sqlite_util.h"
#include "store_private.h"
#include "util.h"

#include <openssl/pem.h>

static int count_snapshots(void *ctx, const struct al_snapshot_info *info, struct al_error *err)
{
	(void)info;
	(void)err;
	(*(int *)ctx)++;
	return 0;
}

static void test_tenants_are_separate(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-store-XXXXXX";
	assert_non_null(mkdtemp(home));
	struct al_error err = { 0 };
	assert_int_equal(al_home_init(home, &err), 0);
	assert_int_equal(al_home_tenant_create(home, "acme", "test", &err), 0);
	assert_int_equal(al_home_tenant_create(home, "acme", "test", &err), AL_EEXIST);
	assert_int_equal(al_home_tenant_create(home, "../evil", "test", &err), AL_EINVAL);
	assert_int_equal(al_home_tenant_create(home, "UPPER", "test", &err), AL_EINVAL);

	char src[600];
	snprintf(src, sizeof(src), "%s/src", home);
	mkdir(src, 0755);
	char f[700];
	snprintf(f, sizeof(f), "%s/secret.txt", src);
	FILE *fp = fopen(f, "w");
	fputs("acme's secret\n", fp);
	fclose(fp);

	struct al_store *a = NULL, *d = NULL, *x = NULL;
	assert_int_equal(al_store_open(home, "acme", &a, &err), 0);
	assert_int_equal(al_store_open(home, "default", &d, &err), 0);
	assert_int_equal(al_store_open(home, "nobody", &x, &err), AL_ENOTFOUND);
	assert_int_equal(al_store_open(home, "../default", &x, &err), AL_EINVAL);

	struct al_import_result res;
	assert_int_equal(al_manifest_import(a, src, NULL, &res, &err), 0);
	struct al_oid blob;
	al_sha256("acme's secret\n", 14, blob.b);

	/* acme has it; default does not, neither the snapshot nor the blob */
	assert_int_equal(al_cas_has(al_store_cas(a), &blob, &err), 1);
	assert_int_equal(al_cas_has(al_store_cas(d), &blob, &err), 0);
	struct al_node *node = NULL;
	assert_int_equal(al_node_load(al_store_cas(d), &res.id, &node, &err), AL_ENOTFOUND);
	int na = 0, nd = 0;
	assert_int_equal(al_store_snapshot_foreach(a, count_snapshots, &na, &err), 0);
	assert_int_equal(al_store_snapshot_foreach(d, count_snapshots, &nd, &err), 0);
	assert_int_equal(na, 1);
	assert_int_equal(nd, 0);
	/* and the tenants' stores are different files */
	assert_string_not_equal(al_store_dir(a), al_store_dir(d));
	al_store_close(a);
	al_store_close(d);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "grep -rqa \"acme's secret\" %s/tenants/default", home);
	assert_int_not_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", home);
	assert_int_equal(system(cmd), 0);
}

/* The ledger key as its public half (raw), through a fresh store. */
static void ledger_pub(const char *home, uint8_t pub[32], int want)
{
	struct al_error err = { 0 };
	struct al_store *s = NULL;
	assert_int_equal(al_store_open(home, "default", &s, &err), 0);
	EVP_PKEY *k = NULL;
	assert_int_equal(al_store__ledger_key(s, &k, &err), want);
	if (want == 0) {
		size_t n = 32;
		assert_int_equal(EVP_PKEY_get_raw_public_key(k, pub, &n), 1);
		assert_int_equal(n, 32);
	}
	al_store_close(s);
}

/* The ledger key is read without OpenSSL's decoders when it has the
 * layout airlock writes, and through PEM_read_PrivateKey otherwise: both
 * give the same key; a key of another type is refused. */
static void test_ledger_key_layouts(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-store-XXXXXX", path[100], cmd[400];
	assert_non_null(mkdtemp(home));
	struct al_error err = { 0 };
	assert_int_equal(al_home_init(home, &err), 0);
	uint8_t a[32], b[32];
	ledger_pub(home, a, 0); /* created, then read back (the fast path) */
	snprintf(path, sizeof(path), "%s/ledger.key", home);
	FILE *f = fopen(path, "r");
	EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	size_t n = 32;
	assert_int_equal(EVP_PKEY_get_raw_public_key(k, b, &n), 1);
	assert_memory_equal(a, b, 32);
	/* the same key with CRLF line ends: not the fast layout, still read */
	snprintf(cmd, sizeof(cmd), "sed -i 's/$/\\r/' %s", path);
	assert_int_equal(system(cmd), 0);
	memset(b, 0, 32);
	ledger_pub(home, b, 0);
	assert_memory_equal(a, b, 32);
	/* a key of another type (X25519, PKCS #8 as well): refused */
	EVP_PKEY *x = EVP_PKEY_Q_keygen(NULL, NULL, "X25519");
	f = fopen(path, "w");
	assert_int_equal(PEM_write_PrivateKey(f, x, NULL, NULL, 0, NULL, NULL), 1);
	fclose(f);
	ledger_pub(home, b, AL_ECORRUPT);
	EVP_PKEY_free(x);
	EVP_PKEY_free(k);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", home);
	assert_int_equal(system(cmd), 0);
}

/* A database's WAL stays within AL_SQLITE_WAL_BOUND (and a commit): every
 * command's first open reads it all back, since the last close keeps it.
 * Before the bound, 64 KiB pages let meta.db's WAL reach 64 MiB, read
 * whole by every run.  A database made with 64 KiB pages keeps them and is
 * bounded all the same. */
static const char *const wal_migrations[] = {
	"CREATE TABLE t(n INTEGER PRIMARY KEY, v BLOB NOT NULL);",
};

static long wal_after_commits(const char *path, const struct al_sqlite_schema *schema,
			      int *page_size)
{
	sqlite3 *db = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_sqlite_open(path, schema, &db, &err), 0);
	char v[3000];
	memset(v, 'x', sizeof(v));
	long most = 0;
	char wal[600];
	snprintf(wal, sizeof(wal), "%s-wal", path);
	for (int i = 0; i < 400; i++) {
		sqlite3_stmt *q = NULL;
		assert_int_equal(al_sqlite_prepare(db, "INSERT INTO t(v) VALUES (?)", &q, &err), 0);
		sqlite3_bind_blob(q, 1, v, sizeof(v), SQLITE_STATIC);
		assert_int_equal(sqlite3_step(q), SQLITE_DONE);
		sqlite3_finalize(q);
		struct stat sb;
		assert_int_equal(stat(wal, &sb), 0);
		most = sb.st_size > most ? sb.st_size : most;
	}
	sqlite3_stmt *q = NULL;
	assert_int_equal(al_sqlite_prepare(db, "PRAGMA page_size", &q, &err), 0);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	*page_size = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(db);
	return most;
}

static void test_wal_bounded(void **state)
{
	(void)state;
	char dir[] = "/tmp/airlock-wal-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[600];
	int page = 0;
	/* 400 commits of 3 KB: 1.2 MB of rows, more than the bound */
	const struct al_sqlite_schema small = AL_SQLITE_SCHEMA(wal_migrations);
	snprintf(path, sizeof(path), "%s/small.db", dir);
	long most = wal_after_commits(path, &small, &page);
	assert_int_equal(page, AL_SQLITE_PAGE);
	assert_true(most <= 2 * (long)AL_SQLITE_WAL_BOUND);

	const struct al_sqlite_schema big = AL_SQLITE_SCHEMA_PAGES(wal_migrations, 65536);
	snprintf(path, sizeof(path), "%s/big.db", dir);
	most = wal_after_commits(path, &big, &page);
	assert_int_equal(page, 65536);
	assert_true(most <= 2 * (long)AL_SQLITE_WAL_BOUND); /* 400 pages: 26 MB unbounded */

	/* made with 64 KiB pages, opened with the default: keeps its pages */
	snprintf(path, sizeof(path), "%s/big.db", dir);
	most = wal_after_commits(path, &small, &page);
	assert_int_equal(page, 65536);
	assert_true(most <= 2 * (long)AL_SQLITE_WAL_BOUND);
	/* one transaction far past the bound: the WAL does not stay at rest */
	sqlite3 *db = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_sqlite_open(path, &small, &db, &err), 0);
	assert_int_equal(al_sqlite_exec(db, "BEGIN IMMEDIATE", &err), 0);
	char v[3000];
	memset(v, 'y', sizeof(v));
	for (int i = 0; i < 2000; i++) {
		sqlite3_stmt *q = NULL;
		assert_int_equal(al_sqlite_prepare(db, "INSERT INTO t(v) VALUES (?)", &q, &err), 0);
		sqlite3_bind_blob(q, 1, v, sizeof(v), SQLITE_STATIC);
		assert_int_equal(sqlite3_step(q), SQLITE_DONE);
		sqlite3_finalize(q);
	}
	assert_int_equal(al_sqlite_exec(db, "COMMIT", &err), 0);
	sqlite3_close(db);
	char wal[700];
	snprintf(wal, sizeof(wal), "%s-wal", path);
	struct stat sb;
	assert_int_equal(stat(wal, &sb), 0);
	assert_true(sb.st_size <= (long)AL_SQLITE_WAL_BOUND);

	/* a WAL left past the bound (as a crash or an older airlock leaves
	 * it) is emptied by the next open */
	sqlite3 *raw = NULL;
	assert_int_equal(sqlite3_open(path, &raw), SQLITE_OK);
	sqlite3_db_config(raw, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
	assert_int_equal(sqlite3_exec(raw,
				      "PRAGMA wal_autocheckpoint=0; BEGIN; "
				      "INSERT INTO t(v) SELECT v FROM t LIMIT 1000; COMMIT",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(raw);
	assert_int_equal(stat(wal, &sb), 0);
	assert_true(sb.st_size > (long)AL_SQLITE_WAL_BOUND);
	assert_int_equal(al_sqlite_open(path, &small, &db, &err), 0);
	assert_int_equal(stat(wal, &sb), 0);
	assert_true(sb.st_size <= (long)AL_SQLITE_WAL_BOUND);
	sqlite3_close(db);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* A VFS over the default one that counts syncs (of the WAL and of the
 * database file). */
static sqlite3_vfs *base_vfs;
static int db_syncs;
struct counted_file {
	sqlite3_file base;
	sqlite3_file *real;
};
static struct sqlite3_io_methods counted_io;

static int c_close(sqlite3_file *f)
{
	struct counted_file *c = (struct counted_file *)f;
	int rc = c->real->pMethods ? c->real->pMethods->xClose(c->real) : SQLITE_OK;
	sqlite3_free(c->real);
	return rc;
}
static int c_sync(sqlite3_file *f, int flags)
{
	struct counted_file *c = (struct counted_file *)f;
	db_syncs++;
	return c->real->pMethods->xSync(c->real, flags);
}
#define FWD(name, sig, args)                                       \
	static int c_##name sig                                    \
	{                                                          \
		struct counted_file *c = (struct counted_file *)f; \
		return c->real->pMethods->x##name args;            \
	}
FWD(Read, (sqlite3_file * f, void *p, int n, sqlite3_int64 o), (c->real, p, n, o))
FWD(Write, (sqlite3_file * f, const void *p, int n, sqlite3_int64 o), (c->real, p, n, o))
FWD(Truncate, (sqlite3_file * f, sqlite3_int64 n), (c->real, n))
FWD(FileSize, (sqlite3_file * f, sqlite3_int64 *n), (c->real, n))
FWD(Lock, (sqlite3_file * f, int l), (c->real, l))
FWD(Unlock, (sqlite3_file * f, int l), (c->real, l))
FWD(CheckReservedLock, (sqlite3_file * f, int *o), (c->real, o))
FWD(FileControl, (sqlite3_file * f, int op, void *a), (c->real, op, a))
FWD(SectorSize, (sqlite3_file * f), (c->real))
FWD(DeviceCharacteristics, (sqlite3_file * f), (c->real))
FWD(ShmMap, (sqlite3_file * f, int i, int n, int w, void volatile **p), (c->real, i, n, w, p))
FWD(ShmLock, (sqlite3_file * f, int o, int n, int fl), (c->real, o, n, fl))
FWD(ShmUnmap, (sqlite3_file * f, int d), (c->real, d))
static void c_ShmBarrier(sqlite3_file *f)
{
	struct counted_file *c = (struct counted_file *)f;
	c->real->pMethods->xShmBarrier(c->real);
}

static int c_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out)
{
	(void)v;
	struct counted_file *c = (struct counted_file *)f;
	c->real = sqlite3_malloc(base_vfs->szOsFile);
	if (!c->real)
		return SQLITE_NOMEM;
	memset(c->real, 0, (size_t)base_vfs->szOsFile);
	int rc = base_vfs->xOpen(base_vfs, name, c->real, flags, out);
	if (rc != SQLITE_OK) {
		sqlite3_free(c->real);
		c->base.pMethods = NULL;
		return rc;
	}
	counted_io = (struct sqlite3_io_methods){ 2,
						  c_close,
						  c_Read,
						  c_Write,
						  c_Truncate,
						  c_sync,
						  c_FileSize,
						  c_Lock,
						  c_Unlock,
						  c_CheckReservedLock,
						  c_FileControl,
						  c_SectorSize,
						  c_DeviceCharacteristics,
						  c_ShmMap,
						  c_ShmLock,
						  c_ShmBarrier,
						  c_ShmUnmap,
						  NULL,
						  NULL };
	c->base.pMethods = &counted_io;
	return SQLITE_OK;
}

/* Committers with other processes' readers in the WAL (concurrent writers
 * reading a head, then committing) could not empty it: every commit past
 * the bound tried again, copying its frames and syncing the WAL (and the
 * database file when it copied them all).  A copy that could not empty the
 * WAL is tried again only half a bound later; once the readers go, the WAL
 * is emptied within that. */
static void test_wal_checkpoint_rate(void **state)
{
	(void)state;
	base_vfs = sqlite3_vfs_find(NULL);
	static sqlite3_vfs counted;
	counted = *base_vfs;
	counted.zName = "airlock-counted";
	counted.szOsFile = (int)sizeof(struct counted_file);
	counted.xOpen = c_open;
	assert_int_equal(sqlite3_vfs_register(&counted, 1), SQLITE_OK);

	char dir[] = "/tmp/airlock-walrate-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[600], wal[620];
	snprintf(path, sizeof(path), "%s/big.db", dir);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	const struct al_sqlite_schema big = AL_SQLITE_SCHEMA_PAGES(wal_migrations, 65536);
	sqlite3 *db = NULL, *reader = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_sqlite_open(path, &big, &db, &err), 0);
	assert_int_equal(sqlite3_open(path, &reader), SQLITE_OK);
	char v[3000];
	memset(v, 'x', sizeof(v));
	int commits = 300;
	db_syncs = 0;
	for (int i = 0; i < commits; i++) {
		/* the reader holds the latest snapshot while the next commit ends */
		assert_int_equal(
			sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM t", NULL, NULL, NULL),
			SQLITE_OK);
		sqlite3_stmt *q = NULL;
		assert_int_equal(al_sqlite_prepare(db, "INSERT INTO t(v) VALUES (?)", &q, &err), 0);
		sqlite3_bind_blob(q, 1, v, sizeof(v), SQLITE_STATIC);
		assert_int_equal(sqlite3_step(q), SQLITE_DONE);
		sqlite3_finalize(q);
		assert_int_equal(sqlite3_exec(reader, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	}
	/* each commit syncs the WAL; its 1-3 frames against a bound of 16
	 * make a copy per about 8 frames (one per commit before: 587 here) */
	print_message("syncs over %d commits with a reader: %d\n", commits, db_syncs);
	assert_true(db_syncs >= commits);
	assert_true(db_syncs <= commits + commits / 4);
	/* the reader gone, the WAL is emptied within half a bound of frames */
	sqlite3_close(reader);
	long least = -1;
	for (int i = 0; i < 12; i++) {
		assert_int_equal(al_sqlite_exec(db, "INSERT INTO t(v) VALUES (x'00')", &err), 0);
		struct stat sb;
		assert_int_equal(stat(wal, &sb), 0);
		if (least < 0 || sb.st_size < least)
			least = sb.st_size;
	}
	assert_true(least <= (long)AL_SQLITE_WAL_BOUND);
	sqlite3_close(db);
	sqlite3_vfs_unregister(&counted);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* Is objects.db of dir mapped into this process? */
static bool mapped(const char *dir)
{
	char want[700], line[1200]; /* the file, not its -shm */
	snprintf(want, sizeof(want), "%s/objects.db\n", dir);
	FILE *f = fopen("/proc/self/maps", "re");
	bool found = false;
	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, want) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* al_store_map_reads: a store opened with it on reads objects.db through a
 * map (and an object read that way is intact) until it begins an object
 * batch after another connection's commit; with it off, as the daemon
 * sets it, nothing of objects.db is mapped. */
static void test_map_reads(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-map-XXXXXX";
	assert_non_null(mkdtemp(home));
	struct al_error err = { 0 };
	assert_int_equal(al_home_init(home, &err), 0);
	static char blob[3000];
	for (size_t i = 0; i < sizeof(blob); i++)
		blob[i] = (char)(i * 7919 % 251);
	struct al_oid id;
	struct al_store *st = NULL;
	assert_int_equal(al_store_open(home, "default", &st, &err), 0);
	assert_int_equal(al_cas_begin(al_store_cas(st), &err), 0);
	assert_int_equal(al_cas_put(al_store_cas(st), blob, sizeof(blob), &id, &err), 0);
	assert_int_equal(al_cas_commit(al_store_cas(st), &err), 0);
	char db[700];
	snprintf(db, sizeof(db), "%s/objects.db", al_store_dir(st));
	al_store_close(st);
	/* into the database file: a page still in the WAL is read from there */
	sqlite3 *raw = NULL;
	assert_int_equal(sqlite3_open(db, &raw), SQLITE_OK);
	assert_int_equal(sqlite3_exec(raw, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL),
			 SQLITE_OK);
	/* a new objects.db has 16 KiB pages (cas.c: what a commit writes) */
	sqlite3_stmt *q = NULL;
	assert_int_equal(sqlite3_prepare_v2(raw, "PRAGMA page_size", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(q, 0), 16384);
	sqlite3_finalize(q);
	sqlite3_close(raw);
	for (int on = 1; on >= 0; on--) {
		al_store_map_reads(on);
		assert_int_equal(al_store_open(home, "default", &st, &err), 0);
		struct al_cas *cas = al_store_cas(st);
		uint8_t *back = NULL;
		size_t n = 0;
		assert_int_equal(al_cas_get(cas, &id, &back, &n, &err), 0);
		assert_int_equal(n, sizeof(blob));
		assert_memory_equal(back, blob, n);
		free(back);
		char dir[600];
		snprintf(dir, sizeof(dir), "%s", al_store_dir(st));
		assert_int_equal(mapped(dir), on);
		/* alone with the database, a batch keeps the map; one begun
		 * after another connection's commit reads through pread from
		 * then on */
		assert_int_equal(al_cas_begin(cas, &err), 0);
		assert_int_equal(al_cas_get(cas, &id, &back, &n, &err), 0);
		free(back);
		assert_int_equal(mapped(dir), on);
		al_cas_abort(cas);
		struct al_store *other = NULL;
		struct al_oid id2;
		assert_int_equal(al_store_open(home, "default", &other, &err), 0);
		assert_int_equal(al_cas_begin(al_store_cas(other), &err), 0);
		assert_int_equal(al_cas_put(al_store_cas(other), blob, on ? 100 : 200, &id2, &err),
				 0);
		assert_int_equal(al_cas_commit(al_store_cas(other), &err), 0);
		al_store_close(other);
		/* its pages into the database file, where a map would read them */
		assert_int_equal(sqlite3_open(db, &raw), SQLITE_OK);
		assert_int_equal(
			sqlite3_exec(raw, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL),
			SQLITE_OK);
		sqlite3_close(raw);
		assert_int_equal(al_cas_begin(cas, &err), 0);
		assert_false(mapped(dir));
		assert_int_equal(al_cas_get(cas, &id, &back, &n, &err), 0);
		assert_memory_equal(back, blob, n);
		free(back);
		assert_int_equal(al_cas_get(cas, &id2, &back, &n, &err), 0);
		assert_int_equal(n, on ? 100 : 200);
		free(back);
		assert_false(mapped(dir));
		al_cas_abort(cas);
		al_store_close(st);
	}
	al_store_map_reads(true);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", home);
	assert_int_equal(system(cmd), 0);
}

/* al_store_release_memory on an idle handle gives back what compressing
 * and reading objects made it hold (the daemon keeps handles for good). */
static void test_release_memory(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-rel-XXXXXX";
	assert_non_null(mkdtemp(home));
	struct al_error err = { 0 };
	assert_int_equal(al_home_init(home, &err), 0);
	struct al_store *st = NULL;
	assert_int_equal(al_store_open(home, "default", &st, &err), 0);
	struct al_cas *cas = al_store_cas(st);
	size_t fresh = al_cas__held(cas);
	/* a large object (streamed, compressed) and small ones (packed) */
	char path[600];
	snprintf(path, sizeof(path), "%s/big", home);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < (8 << 20) / 8; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t v = x & 0x0f0f0f0f0f0f0f0full; /* compressible, not trivially */
		fwrite(&v, 8, 1, f);
	}
	fclose(f);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct al_oid big, small;
	assert_int_equal(al_cas_begin(cas, &err), 0);
	assert_int_equal(al_cas_put_fd(cas, fd, 8 << 20, &big, &err), 0);
	assert_int_equal(al_cas_put(cas, "small object", 12, &small, &err), 0);
	assert_int_equal(al_cas_commit(cas, &err), 0);
	close(fd);
	uint8_t *back = NULL;
	size_t n = 0;
	assert_int_equal(al_cas_get(cas, &big, &back, &n, &err), 0);
	free(back);
	size_t used = al_cas__held(cas);
	assert_true(used > fresh + (1u << 20));
	al_store_release_memory(st);
	assert_true(al_cas__held(cas) <= fresh);
	/* and the handle still works */
	assert_int_equal(al_cas_get(cas, &big, &back, &n, &err), 0);
	assert_int_equal(n, (size_t)8 << 20);
	free(back);
	assert_int_equal(al_cas_begin(cas, &err), 0);
	assert_int_equal(al_cas_put(cas, "another one", 11, &small, &err), 0);
	assert_int_equal(al_cas_commit(cas, &err), 0);
	al_store_close(st);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", home);
	assert_int_equal(system(cmd), 0);
}

/* ---- lock hand-over (sqlite_util.c, the wake word) ---- */

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Poll (10 s deadline) until pid sleeps in the busy handler's wait: the
 * futex of the wake word, or nanosleep without one. */
static bool in_busy_wait(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	for (int i = 0; i < 10000; i++) {
		FILE *f = fopen(path, "r");
		long nr = -1;
		if (f) {
			if (fscanf(f, "%ld", &nr) != 1)
				nr = -1;
			fclose(f);
		}
		if (nr == SYS_futex || nr == SYS_nanosleep || nr == SYS_clock_nanosleep)
			return true;
		nap_ms(1);
	}
	return false;
}

static int64_t count_rows(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *q = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_sqlite_prepare(db, sql, &q, &err), 0);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	int64_t n = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return n;
}

/* A child holds the write lock (BEGIN IMMEDIATE, one row) and says so on
 * fd; then it commits once its parent waits for the lock (commit), or
 * waits to be killed. */
static pid_t hold_lock(const char *path, const char *value, bool commit, int fd)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid)
		return pid;
	sqlite3 *db = NULL;
	struct al_error err = { 0 };
	char sql[200];
	snprintf(sql, sizeof(sql), "BEGIN IMMEDIATE; INSERT INTO t(v) VALUES ('%s')", value);
	if (al_sqlite_open(path, NULL, &db, &err) < 0 || al_sqlite_exec(db, sql, &err) < 0 ||
	    write(fd, "h", 1) != 1)
		_exit(1);
	if (!commit)
		for (;;)
			pause();
	if (!in_busy_wait(getppid()))
		_exit(2);
	_exit(al_sqlite_exec(db, "COMMIT", &err) < 0);
}

/* A writer waiting for another process's write lock is woken by its commit
 * (the wake word), not by its next 1 ms poll: the waits a release ended
 * are counted by airlock_wal_state().  Fails with polling alone (0). */
static void test_wake_handover(void **state)
{
	(void)state;
	char dir[] = "/tmp/airlock-wake-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[600];
	snprintf(path, sizeof(path), "%s/h.db", dir);
	const struct al_sqlite_schema schema = AL_SQLITE_SCHEMA(wal_migrations);
	sqlite3 *db = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_sqlite_open(path, &schema, &db, &err), 0);
	int rounds = 10;
	for (int i = 0; i < rounds; i++) {
		int p[2];
		assert_int_equal(pipe(p), 0);
		pid_t pid = hold_lock(path, "held", true, p[1]);
		char c;
		assert_int_equal(read(p[0], &c, 1), 1);
		/* waits in the busy handler until the child commits */
		assert_int_equal(al_sqlite_exec(db, "INSERT INTO t(v) VALUES ('waited')", &err), 0);
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		close(p[0]);
		close(p[1]);
	}
	int64_t woken = count_rows(db, "SELECT airlock_wal_state()");
	print_message("%d hand-overs: %lld waits ended by the release\n", rounds, (long long)woken);
	/* a release between a 1 ms timeout and the word's update goes
	 * unnoticed by the word (microseconds of each millisecond) */
	assert_true(woken >= rounds / 2);
	assert_int_equal(count_rows(db, "SELECT count(*) FROM t WHERE v = 'held'"), rounds);
	assert_int_equal(count_rows(db, "SELECT count(*) FROM t WHERE v = 'waited'"), rounds);
	sqlite3_close(db);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* The holder of the write lock killed with SIGKILL mid-transaction: it never
 * updates the wake word, the kernel drops its locks, and the waiting writer
 * proceeds (its 1 ms step finds the lock free); the dead transaction left
 * nothing, every commit before it is there. */
static void test_wake_holder_killed(void **state)
{
	(void)state;
	char dir[] = "/tmp/airlock-wakekill-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[600];
	snprintf(path, sizeof(path), "%s/k.db", dir);
	const struct al_sqlite_schema schema = AL_SQLITE_SCHEMA(wal_migrations);
	sqlite3 *db = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_sqlite_open(path, &schema, &db, &err), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(al_sqlite_exec(db, "INSERT INTO t(v) VALUES ('before')", &err), 0);
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t holder = hold_lock(path, "lost", false, p[1]);
	char c;
	assert_int_equal(read(p[0], &c, 1), 1);
	pid_t waiter = fork();
	assert_true(waiter >= 0);
	if (waiter == 0) {
		sqlite3 *w = NULL;
		struct al_error e2 = { 0 };
		if (al_sqlite_open(path, NULL, &w, &e2) < 0 || write(p[1], "w", 1) != 1)
			_exit(1);
		_exit(al_sqlite_exec(w, "INSERT INTO t(v) VALUES ('next')", &e2) < 0);
	}
	assert_int_equal(read(p[0], &c, 1), 1);
	assert_true(in_busy_wait(waiter)); /* the waiter waits in its busy handler */
	assert_int_equal(count_rows(db, "SELECT count(*) FROM t WHERE v = 'next'"), 0);
	assert_int_equal(kill(holder, SIGKILL), 0);
	int status;
	assert_int_equal(waitpid(holder, &status, 0), holder);
	assert_true(WIFSIGNALED(status));
	alarm(60); /* a waiter that never proceeded fails the test, not hangs it */
	assert_int_equal(waitpid(waiter, &status, 0), waiter);
	alarm(0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(count_rows(db, "SELECT count(*) FROM t WHERE v = 'before'"), 5);
	assert_int_equal(count_rows(db, "SELECT count(*) FROM t WHERE v = 'next'"), 1);
	assert_int_equal(count_rows(db, "SELECT count(*) FROM t WHERE v = 'lost'"), 0);
	sqlite3_stmt *q = NULL;
	assert_int_equal(al_sqlite_prepare(db, "PRAGMA integrity_check", &q, &err), 0);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(q, 0), "ok");
	sqlite3_finalize(q);
	/* and the next hand-over uses the word again */
	assert_int_equal(al_sqlite_exec(db, "INSERT INTO t(v) VALUES ('after')", &err), 0);
	sqlite3_close(db);
	close(p[0]);
	close(p[1]);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* <db>-wake as something else than airlock's regular file: a symlink is not
 * followed (its target stays as it was), a FIFO or a directory is not
 * used; the database opens and commits all the same (polling). */
static void test_wake_file_hostile(void **state)
{
	(void)state;
	char dir[] = "/tmp/airlock-wakefile-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[600], wake[620], target[620];
	const struct al_sqlite_schema schema = AL_SQLITE_SCHEMA(wal_migrations);
	for (int kind = 0; kind < 3; kind++) {
		snprintf(path, sizeof(path), "%s/x%d.db", dir, kind);
		snprintf(wake, sizeof(wake), "%s-wake", path);
		snprintf(target, sizeof(target), "%s/target%d", dir, kind);
		if (kind == 0) {
			FILE *f = fopen(target, "w");
			assert_non_null(f);
			fputs("untouched\n", f);
			fclose(f);
			assert_int_equal(symlink(target, wake), 0);
		} else if (kind == 1)
			assert_int_equal(mkfifo(wake, 0600), 0);
		else
			assert_int_equal(mkdir(wake, 0700), 0);
		sqlite3 *db = NULL;
		struct al_error err = { 0 };
		assert_int_equal(al_sqlite_open(path, &schema, &db, &err), 0);
		for (int i = 0; i < 3; i++)
			assert_int_equal(al_sqlite_exec(db, "INSERT INTO t(v) VALUES ('x')", &err),
					 0);
		assert_int_equal(count_rows(db, "SELECT count(*) FROM t"), 3);
		sqlite3_close(db);
		struct stat sb;
		assert_int_equal(lstat(wake, &sb), 0);
		if (kind == 0) {
			assert_true(S_ISLNK(sb.st_mode));
			assert_int_equal(stat(target, &sb), 0);
			assert_int_equal(sb.st_size, 10); /* not grown to a page */
		} else
			assert_true(kind == 1 ? S_ISFIFO(sb.st_mode) : S_ISDIR(sb.st_mode));
	}
	/* a regular one is made a page long and mapped */
	snprintf(path, sizeof(path), "%s/ok.db", dir);
	snprintf(wake, sizeof(wake), "%s-wake", path);
	sqlite3 *db = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_sqlite_open(path, &schema, &db, &err), 0);
	sqlite3_close(db);
	struct stat sb;
	assert_int_equal(lstat(wake, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_equal(sb.st_size, 4096);
	assert_int_equal(sb.st_mode & 0777, 0600);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* The WAL's frames an open would read back (recovery): from its header on,
 * frames of the header's generation (salts), until the first of another. */
static long wal_live_bytes(const char *wal)
{
	int fd = open(wal, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	uint8_t h[32], f[24];
	long live = 0;
	if (pread(fd, h, sizeof(h), 0) == (ssize_t)sizeof(h)) {
		uint32_t page =
			(uint32_t)h[8] << 24 | (uint32_t)h[9] << 16 | (uint32_t)h[10] << 8 | h[11];
		off_t at = 32;
		while (pread(fd, f, sizeof(f), at) == (ssize_t)sizeof(f) &&
		       memcmp(f + 8, h + 16, 8) == 0)
			at += 24 + (off_t)page;
		live = (long)at;
	}
	close(fd);
	return live;
}

/* At the bound the WAL is restarted in place, not truncated: its file keeps
 * its size (and blocks), so the next commits write over them instead of
 * allocating again, and an open reads back only what came after the
 * restart.  A WAL past AL_SQLITE_WAL_KEEP (a big transaction) is still
 * truncated (test_wal_bounded).  Every row is there after all of it. */
static void test_wal_restarted_in_place(void **state)
{
	(void)state;
	char dir[] = "/tmp/airlock-walkeep-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[600], wal[620];
	snprintf(path, sizeof(path), "%s/t.db", dir);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	const struct al_sqlite_schema schema = AL_SQLITE_SCHEMA(wal_migrations);
	sqlite3 *db = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_sqlite_open(path, &schema, &db, &err), 0);
	char v[3000];
	memset(v, 'k', sizeof(v));
	struct stat sb;
	long before = 0;
	off_t size_before = 0;
	int restarts = 0, rows = 0;
	ino_t ino = 0;
	for (int i = 0; i < 1200; i++) { /* about 3.5 MB of rows: three bounds */
		sqlite3_stmt *q = NULL;
		assert_int_equal(al_sqlite_prepare(db, "INSERT INTO t(v) VALUES (?)", &q, &err), 0);
		sqlite3_bind_blob(q, 1, v, sizeof(v), SQLITE_STATIC);
		assert_int_equal(sqlite3_step(q), SQLITE_DONE);
		sqlite3_finalize(q);
		rows++;
		assert_int_equal(stat(wal, &sb), 0);
		long live = wal_live_bytes(wal);
		assert_true(sb.st_size > 0); /* never truncated at the bound */
		assert_true(sb.st_size <= (off_t)AL_SQLITE_WAL_KEEP);
		assert_true(live <= (long)AL_SQLITE_WAL_BOUND + 4 * 4120 + 32);
		if (ino)
			assert_true(sb.st_ino == ino); /* the same file, written over */
		ino = sb.st_ino;
		if (live < before) { /* restarted: the next commit wrote from the start */
			restarts++;
			assert_true(live <= 32 + 4 * (4096 + 24));
			/* over the old frames: the file not cut (journal_size_limit
			 * is AL_SQLITE_WAL_KEEP, past the bound and a commit) */
			assert_true(sb.st_size >= size_before);
		}
		before = live;
		size_before = sb.st_size;
	}
	assert_true(restarts >= 2);
	sqlite3_close(db);
	/* all there, read back through the WAL by a new connection, whose open
	 * leaves a WAL restarted at the bound as it is (only one past
	 * AL_SQLITE_WAL_KEEP is emptied at open) */
	assert_int_equal(al_sqlite_open(path, &schema, &db, &err), 0);
	assert_int_equal(stat(wal, &sb), 0);
	assert_true(sb.st_size == size_before);
	assert_int_equal(count_rows(db, "SELECT count(*) FROM t"), rows);
	sqlite3_close(db);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* A checkpoint held (al_sqlite_hold_checkpoints, as a rebase's object
 * batch inside meta.db's transaction holds objects.db's): commits past the
 * bound leave the WAL whole, every row there; the release runs the
 * checkpoint that came due and empties it.  Without the hold the WAL is
 * emptied at the bound. */
static void test_hold_checkpoints(void **state)
{
	(void)state;
	char dir[] = "/tmp/airlock-hold-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[600], wal[620];
	snprintf(path, sizeof(path), "%s/big.db", dir);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	const struct al_sqlite_schema big = AL_SQLITE_SCHEMA_PAGES(wal_migrations, 65536);
	sqlite3 *db = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_sqlite_open(path, &big, &db, &err), 0);
	char v[3000];
	memset(v, 'h', sizeof(v));
	struct stat sb;
	al_sqlite_hold_checkpoints(db, true);
	for (int i = 0; i < 40; i++) { /* 40+ frames of 64 KiB: 2.5 bounds */
		sqlite3_stmt *q = NULL;
		assert_int_equal(al_sqlite_prepare(db, "INSERT INTO t(v) VALUES (?)", &q, &err), 0);
		sqlite3_bind_blob(q, 1, v, sizeof(v), SQLITE_STATIC);
		assert_int_equal(sqlite3_step(q), SQLITE_DONE);
		sqlite3_finalize(q);
		assert_int_equal(stat(wal, &sb), 0);
		assert_true(i < 20 || sb.st_size > (off_t)AL_SQLITE_WAL_BOUND);
	}
	assert_int_equal(count_rows(db, "SELECT count(*) FROM t"), 40);
	al_sqlite_hold_checkpoints(db, false);
	assert_int_equal(stat(wal, &sb), 0);
	assert_int_equal(sb.st_size, 0); /* the due checkpoint ran: emptied */
	/* released: the bound holds again at the next commits */
	long most = 0;
	for (int i = 0; i < 40; i++) {
		assert_int_equal(al_sqlite_exec(db, "INSERT INTO t(v) VALUES (x'00')", &err), 0);
		assert_int_equal(stat(wal, &sb), 0);
		most = sb.st_size > most ? sb.st_size : most;
	}
	assert_true(most <= (long)AL_SQLITE_WAL_BOUND + 65536 + 32);
	sqlite3_close(db);
	/* nothing held back was lost: all there when opened again */
	assert_int_equal(al_sqlite_open(path, &big, &db, &err), 0);
	assert_int_equal(count_rows(db, "SELECT count(*) FROM t"), 80);
	sqlite3_close(db);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tenants_are_separate),
		cmocka_unit_test(test_ledger_key_layouts),
		cmocka_unit_test(test_wal_bounded),
		cmocka_unit_test(test_wal_restarted_in_place),
		cmocka_unit_test(test_wal_checkpoint_rate),
		cmocka_unit_test(test_map_reads),
		cmocka_unit_test(test_release_memory),
		cmocka_unit_test(test_wake_handover),
		cmocka_unit_test(test_wake_holder_killed),
		cmocka_unit_test(test_wake_file_hostile),
		cmocka_unit_test(test_hold_checkpoints),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
