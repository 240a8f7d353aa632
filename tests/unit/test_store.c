/* store: the home layout keeps tenants in separate files; one tenant's
 * objects and snapshots do not exist for another. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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
 * map (and an object read that way is intact); with it off, as the daemon
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tenants_are_separate),
		cmocka_unit_test(test_ledger_key_layouts),
		cmocka_unit_test(test_wal_bounded),
		cmocka_unit_test(test_wal_checkpoint_rate),
		cmocka_unit_test(test_map_reads),
		cmocka_unit_test(test_release_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
