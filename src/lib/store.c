/* store: the home directory layout and one tenant's opened storage. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "airlock/cas.h"
#include "airlock/odb_backend.h"
#include "airlock/pg.h"
#include "airlock/store.h"
#include "backend/sqlite/db_sqlite.h"
#include "cas_private.h"
#include "gc_private.h"
#include "group.h"
#include "ledger_private.h"
#include "sqlite_util.h"
#include "store_private.h"
#include "util.h"

struct al_store {
	char dir[4096];
	char home[4096];
	char tenant[64];
	EVP_PKEY *ledger_key;
	struct al_cas *cas;
	struct al_db *meta_db;      /* the tenant's metadata (db.h): meta.db, or PostgreSQL */
	struct al_db *statcache;    /* node-local SQLite on every deployment (import.c's) */
	struct al_group_map *group; /* meta.db's group commit queue, mapped (group.h) */
};

/* airlock.db: the directory of the deployment (auth.c).  A token is kept
 * only as the sha256 of its text. */
/* Each database's schema by version (sqlite_util.h: a released migration is
 * never edited; a change is a new one).  Version 1 is everything made before
 * versions existed (no release had shipped), policy, draft_paths,
 * runs_without_draft and gc's settings included. */
static const char *const global_migrations[] = {
	/* 1 */
	"CREATE TABLE IF NOT EXISTS tenants("
	"  name TEXT PRIMARY KEY, created INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS principals("
	"  tenant TEXT NOT NULL, name TEXT NOT NULL, roles INTEGER NOT NULL,"
	"  created INTEGER NOT NULL, PRIMARY KEY(tenant, name));"
	"CREATE TABLE IF NOT EXISTS grants("
	"  tenant TEXT NOT NULL, principal TEXT NOT NULL, project TEXT NOT NULL,"
	"  PRIMARY KEY(tenant, principal, project));"
	"CREATE TABLE IF NOT EXISTS tokens("
	"  id TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE, tenant TEXT NOT NULL,"
	"  principal TEXT NOT NULL, created INTEGER NOT NULL, expires INTEGER NOT NULL,"
	"  revoked INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX IF NOT EXISTS tokens_principal ON tokens(tenant, principal);"
	"CREATE TABLE IF NOT EXISTS policy(id INTEGER PRIMARY KEY CHECK(id = 1), doc TEXT NOT "
	"NULL);",
	/* 2: the web UI's sessions (auth.c), each the sha256 of its text,
	 * bound to the token it was exchanged for */
	"CREATE TABLE IF NOT EXISTS sessions("
	"  hash TEXT PRIMARY KEY, token TEXT NOT NULL, created INTEGER NOT NULL,"
	"  expires INTEGER NOT NULL);"
	"CREATE INDEX IF NOT EXISTS sessions_expires ON sessions(expires);",
};
static const struct al_sqlite_schema global_schema = AL_SQLITE_SCHEMA(global_migrations);

/* meta.db: every snapshot a head ever named is in snapshots (fsck walks it) */
static const char *const meta_migrations[] = {
	/* 1 */
	"CREATE TABLE IF NOT EXISTS settings(name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS policy(id INTEGER PRIMARY KEY CHECK(id = 1), doc TEXT NOT "
	"NULL);"
	"CREATE TABLE IF NOT EXISTS snapshots("
	"  id BLOB PRIMARY KEY, created INTEGER NOT NULL,"
	"  files INTEGER NOT NULL, bytes INTEGER NOT NULL, source TEXT);"
	"CREATE TABLE IF NOT EXISTS projects("
	"  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, volume INTEGER NOT NULL,"
	"  created INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS volumes("
	"  id INTEGER PRIMARY KEY, project INTEGER NOT NULL, kind TEXT NOT NULL,"
	"  head BLOB NOT NULL, base BLOB, public_id TEXT UNIQUE,"
	"  state TEXT NOT NULL DEFAULT 'open', seq INTEGER NOT NULL DEFAULT 0,"
	"  created INTEGER NOT NULL, grp TEXT);"
	"CREATE INDEX IF NOT EXISTS volumes_project ON volumes(project, kind);"
	/* a decided draft's changes, each applied or discarded (written in the
	 * apply's transaction; absent for drafts decided before it existed) */
	"CREATE TABLE IF NOT EXISTS draft_paths("
	"  volume INTEGER NOT NULL, path TEXT NOT NULL, op TEXT NOT NULL, outcome TEXT NOT NULL,"
	"  PRIMARY KEY(volume, path)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS commits("
	"  id INTEGER PRIMARY KEY, volume INTEGER NOT NULL, seq INTEGER NOT NULL,"
	"  parent BLOB NOT NULL, base BLOB NOT NULL, result BLOB NOT NULL,"
	"  author TEXT, message TEXT, strategy TEXT NOT NULL, kind TEXT NOT NULL,"
	"  draft TEXT, time INTEGER NOT NULL, UNIQUE(volume, seq));"
	"CREATE TABLE IF NOT EXISTS conflicts("
	"  commit_id INTEGER NOT NULL, path TEXT NOT NULL, copy_path TEXT,"
	"  base_type INTEGER, base_mode INTEGER, base_size INTEGER, base_digest BLOB,"
	"  theirs_type INTEGER, theirs_mode INTEGER, theirs_size INTEGER, theirs_digest BLOB,"
	"  ours_type INTEGER, ours_mode INTEGER, ours_size INTEGER, ours_digest BLOB);"
	"CREATE INDEX IF NOT EXISTS conflicts_commit ON conflicts(commit_id);"
	"CREATE TABLE IF NOT EXISTS ledger("
	"  seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, grp TEXT NOT NULL, project TEXT,"
	"  time INTEGER NOT NULL, entry BLOB NOT NULL, leaf BLOB NOT NULL);"
	"CREATE INDEX IF NOT EXISTS ledger_grp ON ledger(grp);"
	"CREATE TABLE IF NOT EXISTS ledger_tree("
	"  level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL,"
	"  PRIMARY KEY(level, idx)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS images("
	"  name TEXT UNIQUE, snapshot BLOB NOT NULL, created INTEGER NOT NULL, source TEXT);"
	"CREATE TABLE IF NOT EXISTS runs("
	"  id TEXT PRIMARY KEY, project TEXT NOT NULL, grp TEXT NOT NULL, draft TEXT,"
	"  created INTEGER NOT NULL, record TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS runs_project ON runs(project, created);"
	/* attempts without a draft (running, failed): what a run's start scans */
	"CREATE INDEX IF NOT EXISTS runs_without_draft ON runs(id) WHERE draft IS NULL;"
	"CREATE TABLE IF NOT EXISTS checkpoints("
	"  size INTEGER PRIMARY KEY, root BLOB NOT NULL, time INTEGER NOT NULL,"
	"  origin TEXT NOT NULL, signature BLOB NOT NULL);",
	/* 2: a project's default run contract (contract.h) */
	"CREATE TABLE IF NOT EXISTS project_contracts("
	"  project TEXT PRIMARY KEY, doc TEXT NOT NULL, set_by TEXT, time INTEGER NOT NULL);",
	/* 3: a path accepted by hunks keeps their numbers ("1,3"), and its
	 * outcome may be 'partially_applied' */
	"ALTER TABLE draft_paths ADD COLUMN hunks TEXT;",
	/* 4: integrations (integ.h): the secret sealed (AES-256-GCM under the
	 * secrets key), never in clear; grants to projects and principals */
	"CREATE TABLE IF NOT EXISTS integrations("
	"  name TEXT PRIMARY KEY, base_url TEXT NOT NULL, header TEXT NOT NULL,"
	"  secret BLOB NOT NULL, ca TEXT, keep_bodies INTEGER NOT NULL,"
	"  insecure INTEGER NOT NULL, created INTEGER NOT NULL, created_by TEXT);"
	"CREATE TABLE IF NOT EXISTS integration_grants("
	"  integration TEXT NOT NULL, kind TEXT NOT NULL, who TEXT NOT NULL,"
	"  PRIMARY KEY(integration, kind, who)) WITHOUT ROWID;",
	/* 5: runs and images are listed in the order they were recorded by a
	 * column both engines have (the metadata seam has no rowid): seq, one
	 * past the greatest at each insert, the old rows numbered as their
	 * rowid */
	"ALTER TABLE runs ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;"
	"UPDATE runs SET seq = rowid;"
	"CREATE INDEX IF NOT EXISTS runs_seq ON runs(seq);"
	"ALTER TABLE images ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;"
	"UPDATE images SET seq = rowid;"
	"CREATE INDEX IF NOT EXISTS images_seq ON images(seq);",
	/* 6: snapshots likewise (gc's second mark takes those recorded since
	 * its first by seq), and a commit's conflicts in the order they were
	 * found (seq, their place in the commit; the old rows by rowid) */
	"ALTER TABLE snapshots ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;"
	"UPDATE snapshots SET seq = rowid;"
	"CREATE INDEX IF NOT EXISTS snapshots_seq ON snapshots(seq);"
	"ALTER TABLE conflicts ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;"
	"UPDATE conflicts SET seq = rowid;",
	/* 7: what each pass deleted from the bucket, by sweep generation
	 * (gc_sweeps.c; the generation is settings' blobs_gen) */
	"CREATE TABLE IF NOT EXISTS blobs_swept("
	"  gen INTEGER NOT NULL, id BLOB NOT NULL, time INTEGER NOT NULL,"
	"  PRIMARY KEY(gen, id)) WITHOUT ROWID;",
	/* 8: a draft's run, looked up by its draft each time a volume is read
	 * (volume.c VOL_COLS), and the running attempts, which every run's
	 * start looks for (run.c RUNNING_ATTEMPT; PostgreSQL's runs_running):
	 * without them a commit, a draft and a run each read the whole runs
	 * table, or every failed attempt, each row with its record (a run
	 * took 152 ms instead of 34 at 20,000 runs) */
	"CREATE INDEX IF NOT EXISTS runs_draft ON runs(draft) WHERE draft IS NOT NULL;"
	"CREATE INDEX IF NOT EXISTS runs_running ON runs(id)"
	"  WHERE draft IS NULL AND record LIKE '%\"outcome\":\"running\"%';",
	/* 9: what a group commit's leader did with another process's request
	 * (volume.c, "group commit"), kept while that process may still read
	 * it: a few rows at any time */
	"CREATE TABLE IF NOT EXISTS grouped(token INTEGER PRIMARY KEY, result TEXT NOT NULL);",
};
static const struct al_sqlite_schema meta_schema = AL_SQLITE_SCHEMA(meta_migrations);

static const char *const statcache_migrations[] = {
	/* 1 */
	"CREATE TABLE IF NOT EXISTS roots(id INTEGER PRIMARY KEY, path BLOB NOT NULL UNIQUE);"
	"CREATE TABLE IF NOT EXISTS scdir("
	"  root INTEGER NOT NULL, dir BLOB NOT NULL, data BLOB NOT NULL,"
	"  UNIQUE(root, dir));",
};
static const struct al_sqlite_schema statcache_schema = AL_SQLITE_SCHEMA(statcache_migrations);

int al_tenant_name_check(const char *name, struct al_error *err)
{
	size_t n = strlen(name);
	bool ok = n >= 1 && n <= 63;
	for (size_t i = 0; ok && i < n; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		ok = alnum || (i > 0 && (c == '-' || c == '_'));
	}
	if (!ok) {
		char q[80];
		al_quote(name, strnlen(name, 64), q, sizeof(q));
		return al_fail(err, AL_EINVAL, 0,
			       "invalid tenant name '%s' (expected [a-z0-9][a-z0-9_-]{0,62})", q);
	}
	return 0;
}

int al_store__global_db(const char *home, struct al_db **db, struct al_error *err)
{
	char path[4096];
	if ((size_t)snprintf(path, sizeof(path), "%s/airlock.db", home) >= sizeof(path))
		return al_fail(err, AL_EINVAL, 0, "home path too long");
	return al_db_open_sqlite(path, &global_schema, AL_SYNC_FULL, db, err);
}

/* ---- metadata on PostgreSQL (al_store_metadata) */

/* set once at start, read by every store and directory opened after */
static char *metadata;
static bool metadata_checked; /* the schema's version seen once by this process */

/* Tenants this process has seen in the metadata database: a tenant's row
 * is never deleted there, so one seen is not asked for again (a read
 * transaction less per store open; the daemon opens one per request and
 * per run).  A database restored to before a tenant existed is a restart
 * of every node (docs/operations.md). */
#define KNOWN_MAX 256
static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;
static char known[KNOWN_MAX][64];
static size_t nknown;

static bool tenant_seen(const char *tenant)
{
	bool seen = false;
	pthread_mutex_lock(&known_lock);
	for (size_t i = 0; i < nknown && !seen; i++)
		seen = !strcmp(known[i], tenant);
	pthread_mutex_unlock(&known_lock);
	return seen;
}

static void tenant_saw(const char *tenant)
{
	pthread_mutex_lock(&known_lock);
	if (nknown < KNOWN_MAX)
		snprintf(known[nknown++], sizeof(known[0]), "%s", tenant);
	pthread_mutex_unlock(&known_lock);
}

int al_store_metadata(const char *url, struct al_error *err)
{
	free(metadata);
	metadata = NULL;
	metadata_checked = false;
	pthread_mutex_lock(&known_lock);
	nknown = 0;
	pthread_mutex_unlock(&known_lock);
	if (!url || !*url)
		return 0;
	if (strncmp(url, "postgres://", 11) && strncmp(url, "postgresql://", 13))
		return al_fail(err, AL_EINVAL, 0,
			       "--metadata: expected postgres://USER@HOST/DB (libpq's URI)");
	if (!(metadata = strdup(url)))
		return al_fail(err, AL_ENOMEM, ENOMEM, "metadata");
	return 0;
}

/* A connection for tenant (NULL: none, for the owner's lookups), the
 * schema checked on the first: a database without airlock's schema, or at
 * another version, is refused before anything is read or written.  The
 * URL is never quoted (it may hold a password). */
static int pg_open(const char *tenant, struct al_db **out, struct al_error *err)
{
	struct al_db *db = NULL;
	int r = al_db_open_postgres(metadata, tenant, &db, err);
	if (r < 0)
		return al_error_prefix(err, "the metadata database: ");
	if (!metadata_checked) {
		struct al_db_stmt *q = NULL;
		int64_t v = -1;
		struct al_error e = { 0 };
		if (al_db_prepare(db, "SELECT airlock_schema_version()", &q, &e) == 0 &&
		    al_db_step(q, &e) == AL_DB_ROW)
			v = al_db_column_int64(q, 0);
		al_db_finalize(q);
		if (v != AL_PG_SCHEMA) {
			al_db_close(db);
			if (e.code == AL_EUNAVAIL)
				return al_fail(err, AL_EUNAVAIL, 0, "the metadata database: %s",
					       e.msg);
			if (v > AL_PG_SCHEMA)
				return al_fail(
					err, AL_ESTATE, 0,
					"the metadata database is at schema %lld, newer than "
					"this airlock's %d (upgrade airlock)",
					(long long)v, AL_PG_SCHEMA);
			if (v >= 0)
				return al_fail(
					err, AL_ESTATE, 0,
					"the metadata database is at schema %lld, this "
					"airlock writes %d (run: airlock --metadata URL admin "
					"metadata migrate)",
					(long long)v, AL_PG_SCHEMA);
			return al_fail(err, AL_ESTATE, 0,
				       "the metadata database has no airlock schema for this role "
				       "(run: airlock --metadata URL admin metadata migrate "
				       "--service-role ROLE, as the owner)");
		}
		metadata_checked = true;
	}
	*out = db;
	return 0;
}

bool al_store__on_postgres(void)
{
	return metadata != NULL;
}

int al_store__dir_db(const char *home, const char *tenant, struct al_db **db, struct al_error *err)
{
	return metadata ? pg_open(tenant, db, err) : al_store__global_db(home, db, err);
}

int al_store__tenants(const char *home,
		      int (*fn)(void *ctx, const char *name, struct al_error *err), void *ctx,
		      struct al_error *err)
{
	struct al_db *db = NULL;
	int r = al_store__dir_db(home, NULL, &db, err);
	if (r < 0)
		return r;
	struct al_db_stmt *q = NULL;
	/* on PostgreSQL the service role sees one tenant's rows at a time: the
	 * names come from the owner's function (pg.c, schema 5) */
	if ((r = al_db_prepare(db,
			       metadata ? "SELECT t FROM airlock_tenants() AS t"
					: "SELECT name FROM tenants ORDER BY name",
			       &q, err)) == 0) {
		int rc;
		while ((rc = al_db_step(q, err)) == AL_DB_ROW)
			if ((r = fn(ctx, al_db_column_text(q, 0), err)) != 0)
				break;
		if (r == 0 && rc < 0)
			r = al_error_prefix(err, "list tenants: ");
	}
	al_db_finalize(q);
	al_db_close(db);
	return r;
}

static int tenant_dir(const char *home, const char *tenant, char *out, size_t n,
		      struct al_error *err)
{
	if ((size_t)snprintf(out, n, "%s/tenants/%s", home, tenant) >= n)
		return al_fail(err, AL_EINVAL, 0, "home path too long");
	return 0;
}

static int tenant_create(const char *home, const char *tenant, bool exist_ok, struct al_error *err)
{
	int r = al_tenant_name_check(tenant, err);
	if (r < 0)
		return r;
	struct al_db *db = NULL;
	if ((r = al_store__dir_db(home, tenant, &db, err)) < 0)
		return r;
	char dir[4096];
	if ((r = tenant_dir(home, tenant, dir, sizeof(dir), err)) < 0)
		goto out;
	if ((r = al_mkdir_p(dir, 0700, err)) < 0)
		goto out;
	{
		/* create the tenant's stores before it is listed */
		struct al_cas *cas = NULL;
		if ((r = al_cas_open(dir, &cas, err)) < 0)
			goto out;
		al_cas_close(cas);
		char path[4200];
		snprintf(path, sizeof(path), "%s/meta.db", dir);
		struct al_db *meta = NULL;
		if (!metadata &&
		    (r = al_db_open_sqlite(path, &meta_schema, AL_SYNC_FULL, &meta, err)) < 0)
			goto out;
		al_db_close(meta);
	}
	if ((r = al_fsync_dir(-1, dir, err)) < 0)
		goto out;
	{
		_cleanup_db_stmt_ struct al_db_stmt *st = NULL;
		/* PostgreSQL's row is the tenant's own (its key column is the
		 * tenant, as in every table there): its transaction may write it */
		if ((r = al_db_prepare(
			     db,
			     metadata ? "INSERT INTO tenants(tenant, created) VALUES (?1, ?2)"
				      : "INSERT INTO tenants(name, created) VALUES (?1, ?2)",
			     &st, err)) < 0)
			goto out;
		al_db_bind_text(st, 1, tenant, -1);
		al_db_bind_int64(st, 2, al_wall_s());
		r = al_db_step(st, err);
		if (r == AL_EEXIST)
			r = exist_ok ? 0
				     : al_fail(err, AL_EEXIST, 0, "tenant %s already exists",
					       tenant);
		else if (r < 0)
			al_error_prefix(err, "create tenant: ");
		else
			r = 0;
	}
out:
	al_db_close(db);
	return r;
}

/* The deployment's ledger signing key: Ed25519, PEM, 0600.  Created with
 * link() so two processes racing to create it agree on one key. */
/* The key as PEM_write_PrivateKey writes an Ed25519 key (RFC 8410's
 * PKCS #8: a fixed 16-byte prefix, then the 32-byte seed), read without
 * OpenSSL's decoder framework, which costs ~5 M instructions (1.5 ms) on
 * each process's first use: a quarter of a whole `airlock run`.  Anything
 * else (another layout, whitespace, a wrong length) returns NULL and the
 * caller reads it with PEM_read_PrivateKey. */
static EVP_PKEY *ed25519_pem_fast(FILE *f)
{
	static const char head[] = "-----BEGIN PRIVATE KEY-----\n",
			  tail[] = "\n-----END PRIVATE KEY-----\n";
	static const uint8_t prefix[16] = { 0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06,
					    0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20 };
	char text[sizeof(head) - 1 + 64 + sizeof(tail) - 1 + 1];
	size_t n = fread(text, 1, sizeof(text), f);
	if (n != sizeof(text) - 1 || memcmp(text, head, sizeof(head) - 1) ||
	    memcmp(text + sizeof(head) - 1 + 64, tail, sizeof(tail) - 1))
		return NULL;
	uint8_t der[48 + 2];
	if (EVP_DecodeBlock(der, (const unsigned char *)text + sizeof(head) - 1, 64) != 48 ||
	    memcmp(der, prefix, sizeof(prefix)))
		return NULL;
	EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, der + 16, 32);
	OPENSSL_cleanse(der, sizeof(der));
	OPENSSL_cleanse(text, sizeof(text));
	return k;
}

static int ledger_key_load(const char *home, EVP_PKEY **out, struct al_error *err)
{
	char path[4200], tmp[4300];
	snprintf(path, sizeof(path), "%s/ledger.key", home);
	FILE *f = fopen(path, "re");
	if (!f && errno == ENOENT) {
		EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
		snprintf(tmp, sizeof(tmp), "%s/ledger.key.tmp-%d", home, (int)getpid());
		int fd = k ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
		FILE *w = fd >= 0 ? fdopen(fd, "w") : NULL;
		bool ok = w && PEM_write_PrivateKey(w, k, NULL, NULL, 0, NULL, NULL) &&
			  fflush(w) == 0 && fsync(fd) == 0;
		if (w)
			fclose(w);
		else if (fd >= 0)
			close(fd);
		EVP_PKEY_free(k);
		if (!ok) {
			unlink(tmp);
			return al_fail(err, AL_EIO, errno, "create the ledger key %s", path);
		}
		if (link(tmp, path) < 0 && errno != EEXIST) {
			unlink(tmp);
			return al_fail(err, AL_EIO, errno, "create the ledger key %s", path);
		}
		unlink(tmp);
		al_fsync_dir(-1, home, NULL);
		f = fopen(path, "re");
	}
	if (!f)
		return al_fail(err, AL_EIO, errno, "open the ledger key %s", path);
	EVP_PKEY *k = ed25519_pem_fast(f);
	if (!k) {
		rewind(f);
		k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	}
	fclose(f);
	if (!k || EVP_PKEY_get_id(k) != EVP_PKEY_ED25519) {
		EVP_PKEY_free(k);
		return al_fail(err, AL_ECORRUPT, 0, "%s is not an Ed25519 private key", path);
	}
	*out = k;
	return 0;
}

int al_store__ledger_key(struct al_store *s, EVP_PKEY **out, struct al_error *err)
{
	if (!s->ledger_key) {
		int r = ledger_key_load(s->home, &s->ledger_key, err);
		if (r < 0)
			return r;
	}
	*out = s->ledger_key;
	return 0;
}

void al_store__ledger_key_ready(struct al_store *s)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/ledger.key", s->home);
	struct al_error e = { 0 };
	if (!s->ledger_key && access(path, F_OK) == 0)
		ledger_key_load(s->home, &s->ledger_key, &e);
}

/* The deployment's key for secrets' digests: 32 random bytes, 0600, never
 * exported; created with link() as the ledger key is. */
static int secret_key_load(const char *home, uint8_t key[AL_SECRET_KEY_LEN], struct al_error *err)
{
	char path[4200], tmp[4300];
	snprintf(path, sizeof(path), "%s/secrets.key", home);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) {
		uint8_t k[AL_SECRET_KEY_LEN];
		snprintf(tmp, sizeof(tmp), "%s/secrets.key.tmp-%d", home, (int)getpid());
		int w = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		bool ok = w >= 0 && getrandom(k, sizeof(k), 0) == (ssize_t)sizeof(k) &&
			  al_write_full(w, k, sizeof(k)) == 0 && fsync(w) == 0;
		explicit_bzero(k, sizeof(k));
		if (w >= 0)
			close(w);
		if (!ok || (link(tmp, path) < 0 && errno != EEXIST)) {
			int e = errno;
			unlink(tmp);
			return al_fail(err, AL_EIO, e, "create the secrets key %s", path);
		}
		unlink(tmp);
		al_fsync_dir(-1, home, NULL);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0)
		return al_fail(err, AL_EIO, errno, "open the secrets key %s", path);
	ssize_t n = al_read_full(fd, key, AL_SECRET_KEY_LEN);
	close(fd);
	return n == AL_SECRET_KEY_LEN ? 0
				      : al_fail(err, AL_ECORRUPT, 0, "%s is not a %d-byte key",
						path, AL_SECRET_KEY_LEN);
}

int al_store__secret_key(struct al_store *s, uint8_t key[AL_SECRET_KEY_LEN], struct al_error *err)
{
	return secret_key_load(s->home, key, err);
}

const char *al_store_tenant(struct al_store *s)
{
	return s->tenant;
}

int al_home_init(const char *home, struct al_error *err)
{
	/* the database first: one unreachable, or without the schema, leaves
	 * no home half made */
	struct al_db *db = NULL;
	int r = metadata ? pg_open(NULL, &db, err) : 0;
	al_db_close(db);
	if (r < 0 || (r = al_mkdir_p(home, 0700, err)) < 0)
		return r;
	EVP_PKEY *k = NULL;
	if ((r = ledger_key_load(home, &k, err)) < 0)
		return r;
	EVP_PKEY_free(k);
	/* both keys now, not at their first use: a deployment's nodes get
	 * copies of them from the first home (operations.md) */
	uint8_t sk[AL_SECRET_KEY_LEN];
	r = secret_key_load(home, sk, err);
	explicit_bzero(sk, sizeof(sk));
	if (r < 0)
		return r;
	char t[4096];
	if ((r = tenant_dir(home, "", t, sizeof(t), err)) < 0)
		return r;
	if ((r = al_mkdir_p(t, 0700, err)) < 0)
		return r;
	return tenant_create(home, AL_DEFAULT_TENANT, true, err);
}

int al_home_tenant_create(const char *home, const char *tenant, const char *actor,
			  struct al_error *err)
{
	int r = tenant_create(home, tenant, false, err);
	if (r < 0)
		return r;
	/* the new tenant's ledger begins with its creation */
	struct al_store *st = NULL;
	struct al_db *db;
	struct al_db_txn txn = { 0 };
	if ((r = al_store_open(home, tenant, &st, err)) == 0 &&
	    (r = al_store__meta_db(st, &db, err)) == 0 &&
	    (r = al_db_begin(db, AL_DB_WRITE, &txn, err)) == 0) {
		char group[17];
		al_ledger__new_group(group);
		json_t *data = json_pack("{s:s}", "tenant", tenant);
		struct al_ledger_rec lr = { .kind = "tenant_create",
					    .group = group,
					    .actor = actor ? actor : "",
					    .data = data };
		r = data ? al_ledger__append_txn(st, &txn, &lr, NULL, err)
			 : al_fail(err, AL_ENOMEM, ENOMEM, "ledger");
		json_decref(data);
		r = al_ledger__commit(st, &txn, r, err);
	}
	al_store_close(st);
	return r;
}

/* The tenant's directory (created before the tenant is listed) is what
 * makes it exist for the CLI; this avoids opening the registry on every
 * command. */
static int tenant_known(const char *home, const char *tenant, struct al_error *err)
{
	char path[4200];
	if (metadata) {
		/* the home holds the keys and the objects; the tenants are the
		 * database's */
		if ((size_t)snprintf(path, sizeof(path), "%s/ledger.key", home) >= sizeof(path))
			return al_fail(err, AL_EINVAL, 0, "home path too long");
		if (access(path, F_OK) < 0)
			return al_fail(
				err, AL_ENOTFOUND, 0,
				"no airlock home at %s (run: airlock --home %s --metadata URL "
				"init)",
				home, home);
		return 0;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/airlock.db", home) >= sizeof(path))
		return al_fail(err, AL_EINVAL, 0, "home path too long");
	if (access(path, F_OK) < 0)
		return al_fail(err, AL_ENOTFOUND, 0,
			       "no airlock home at %s (run: airlock --home %s init)", home, home);
	snprintf(path, sizeof(path), "%s/tenants/%s/objects.db", home, tenant);
	if (access(path, F_OK) < 0)
		return al_fail(err, AL_ENOTFOUND, 0, "no tenant %s in %s", tenant, home);
	return 0;
}

/* set once at start (al_store_blobs), read by every al_store_open after */
static struct al_s3_config *blobs;

int al_store_blobs(const char *url, struct al_error *err)
{
	if (blobs) {
		explicit_bzero(blobs, sizeof(*blobs));
		free(blobs);
		blobs = NULL;
	}
	if (!url || !*url)
		return 0;
	struct al_s3_config *c = calloc(1, sizeof(*c));
	if (!c)
		return al_fail(err, AL_ENOMEM, ENOMEM, "blobs");
	int r = al_s3_config_parse(url, c, err);
	if (r < 0) {
		explicit_bzero(c, sizeof(*c));
		free(c);
		return al_error_prefix(err, "--blobs: ");
	}
	blobs = c;
	return 0;
}

int al_home_check(const char *home, struct al_error *err)
{
	int r = tenant_known(home, AL_DEFAULT_TENANT, err);
	if (r == AL_ENOTFOUND && !metadata) {
		/* the default tenant may have been removed; the home is airlock.db */
		char path[4200];
		snprintf(path, sizeof(path), "%s/airlock.db", home);
		r = access(path, F_OK) == 0 ? 0 : r;
	}
	struct al_db *db = NULL;
	if (r == 0 && metadata && (r = pg_open(NULL, &db, err)) == 0)
		al_db_close(db);
	return r;
}

/* On PostgreSQL: the tenant's connection, once its row is there (seen
 * under row-level security: the transaction's tenant's row only). */
static int pg_tenant(const char *tenant, struct al_db **out, struct al_error *err)
{
	struct al_db *db = NULL;
	int r = pg_open(tenant, &db, err);
	if (r < 0)
		return r;
	if (tenant_seen(tenant)) {
		*out = db;
		return 0;
	}
	struct al_db_stmt *q = NULL;
	int64_t n = 0;
	if ((r = al_db_prepare(db, "SELECT count(*) FROM tenants", &q, err)) == 0 &&
	    (r = al_db_step(q, err)) == AL_DB_ROW) {
		n = al_db_column_int64(q, 0);
		r = 0;
	}
	al_db_finalize(q);
	if (r == 0 && n == 0)
		r = al_fail(err, AL_ENOTFOUND, 0, "no tenant %s in the metadata database", tenant);
	if (r == 0)
		tenant_saw(tenant);
	if (r < 0) {
		al_db_close(db);
		return r;
	}
	*out = db;
	return 0;
}

/* The store's remote tier: the bucket, and with PostgreSQL metadata the
 * small objects in the database (inline=, AL_ODB_INLINE_DEFAULT unless the
 * URL says otherwise; docs/architecture.md, "Small objects in the
 * database"; inline=0: none written there, those there still read).  A
 * home's metadata is its own node's: there every object goes to the
 * bucket. */
static int blobs_open(const char *tenant, struct al_odb_backend **out, struct al_error *err)
{
	uint64_t max = blobs->inline_set ? blobs->inline_max : metadata ? AL_ODB_INLINE_DEFAULT : 0;
	if (max && !metadata)
		return al_fail(err, AL_EINVAL, 0,
			       "--blobs: inline= keeps small objects in the PostgreSQL metadata "
			       "database (--metadata); this home's metadata is its own, so every "
			       "object goes to the bucket (inline=0, or leave it out)");
	struct al_odb_backend *s3 = NULL, *small = NULL;
	int r = al_odb_s3_open(blobs, tenant, &s3, err);
	/* with inline=0 the rows another node (or an earlier threshold) wrote
	 * are still read, listed and swept: only new writes skip them */
	if (r < 0 || !metadata) {
		*out = s3;
		return r;
	}
	if ((r = al_odb_pg_open(metadata, tenant, max, blobs->max_keys, &small, err)) < 0) {
		al_odb_backend_free(s3);
		return r;
	}
	return al_odb_tier_open(small, s3, max, out, err);
}

int al_store_open(const char *home, const char *tenant, struct al_store **out, struct al_error *err)
{
	int r = al_tenant_name_check(tenant, err);
	if (r < 0 || (r = tenant_known(home, tenant, err)) < 0)
		return r;
	struct al_store *s = calloc(1, sizeof(*s));
	if (!s)
		return al_fail(err, AL_ENOMEM, ENOMEM, "store");
	if ((r = tenant_dir(home, tenant, s->dir, sizeof(s->dir), err)) < 0)
		goto fail;
	/* the tenant's objects and caches are this node's: made on its first
	 * use here */
	if (metadata && ((r = pg_tenant(tenant, &s->meta_db, err)) < 0 ||
			 (r = al_mkdir_p(s->dir, 0700, err)) < 0))
		goto fail;
	snprintf(s->home, sizeof(s->home), "%s", home);
	snprintf(s->tenant, sizeof(s->tenant), "%s", tenant);
	if ((r = al_cas_open(s->dir, &s->cas, err)) < 0)
		goto fail;
	if (blobs) {
		struct al_odb_backend *remote = NULL;
		if ((r = blobs_open(tenant, &remote, err)) < 0)
			goto fail;
		al_cas__set_remote(s->cas, remote);
		/* another node's pass may sweep the bucket: each write
		 * transaction first catches up with what it swept */
		if (s->meta_db)
			al_db__on_write(s->meta_db, al_gc__catch_up, s);
	}
	*out = s;
	return 0;
fail:
	al_store_close(s);
	return r;
}

void al_store_close(struct al_store *s)
{
	if (!s)
		return;
	al_cas_close(s->cas);
	EVP_PKEY_free(s->ledger_key);
	al_db_close(s->meta_db);
	al_db_close(s->statcache);
	al_group_map_free(s->group);
	free(s);
}

/* No transaction open and, on SQLite, no statement mid-step (absent: idle) */
static bool db_idle(struct al_db *db)
{
	return !db || (!al_db_in_txn(db) &&
		       (al_db_engine(db) != AL_DB_SQLITE || al_sqlite_quiet(al_db__sqlite(db))));
}

bool al_store_idle(struct al_store *s)
{
	return al_cas__idle(s->cas) && db_idle(s->meta_db) && db_idle(s->statcache);
}

void al_store_map_reads(bool on)
{
	al_cas__map_reads(on);
}

void al_store_release_memory(struct al_store *s)
{
	al_cas__release_memory(s->cas);
	if (s->meta_db && al_db_engine(s->meta_db) == AL_DB_SQLITE)
		sqlite3_db_release_memory(al_db__sqlite(s->meta_db));
	if (s->statcache)
		sqlite3_db_release_memory(al_db__sqlite(s->statcache));
}

struct al_cas *al_store_cas(struct al_store *s)
{
	return s->cas;
}
const char *al_store_dir(struct al_store *s)
{
	return s->dir;
}
const char *al_store__home(struct al_store *s)
{
	return s->home;
}
/* meta.db is opened on first use: reading a snapshot needs only the cas */
int al_store__meta_db(struct al_store *s, struct al_db **out, struct al_error *err)
{
	if (!s->meta_db) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/meta.db", s->dir);
		int r = al_db_open_sqlite(path, &meta_schema, AL_SYNC_FULL, &s->meta_db, err);
		if (r < 0)
			return r;
		if (al_cas__has_remote(s->cas))
			al_db__on_write(s->meta_db, al_gc__catch_up, s);
	}
	*out = s->meta_db;
	return 0;
}

struct al_group_map **al_store__group_map(struct al_store *s)
{
	return &s->group;
}

const char *al_store__meta_file(struct al_store *s)
{
	if (!s->meta_db || al_db_engine(s->meta_db) != AL_DB_SQLITE)
		return NULL;
	const char *f = sqlite3_db_filename(al_db__sqlite(s->meta_db), "main");
	return f && *f ? f : NULL;
}

void al_store__use_meta_db(struct al_store *s, struct al_db *db)
{
	al_db_close(s->meta_db);
	s->meta_db = db;
}

int al_store__statcache(struct al_store *s, struct al_db **out, struct al_error *err)
{
	if (!s->statcache) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/statcache.db", s->dir);
		/* a cache: NORMAL sync is enough, WAL keeps it consistent */
		int r = al_db_open_sqlite(path, &statcache_schema, AL_SYNC_NORMAL, &s->statcache,
					  err);
		if (r < 0)
			return r;
	}
	*out = s->statcache;
	return 0;
}

int al_store_snapshot_add(struct al_store *s, const struct al_snapshot_info *info,
			  struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *st = NULL;
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	struct al_db *db;
	int r = al_store__meta_db(s, &db, err);
	if (r < 0)
		return r;
	/* under the tenant's write lock (the caller's transaction, or one of
	 * its own): on PostgreSQL a lone statement takes no lock, and a seq
	 * computed before gc's first mark but committed after it could be at
	 * or below what the second mark starts from */
	bool own = !al_db_in_txn(db);
	if (own && (r = al_db_begin(db, AL_DB_WRITE, &txn, err)) < 0)
		return r;
	r = al_db_prepare(db,
			  "INSERT INTO snapshots(id, created, files, bytes, source, seq) "
			  "VALUES (?1, ?2, ?3, ?4, ?5, " AL_SNAPSHOT_SEQ ") ON CONFLICT DO NOTHING",
			  &st, err);
	if (r < 0)
		return r;
	al_db_bind_blob(st, 1, info->id.b, AL_OID_LEN);
	al_db_bind_int64(st, 2, info->created);
	al_db_bind_int64(st, 3, (int64_t)info->files);
	al_db_bind_int64(st, 4, (int64_t)info->bytes);
	if (info->source)
		al_db_bind_text(st, 5, info->source, -1);
	else
		al_db_bind_null(st, 5);
	if ((r = al_db_step(st, err)) < 0)
		return al_error_prefix(err, "record snapshot: ");
	return own ? al_db_commit(&txn, err) : 0;
}

int al_store_snapshot_foreach(struct al_store *s, al_snapshot_fn fn, void *ctx,
			      struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *st = NULL;
	struct al_db *db;
	int r = al_store__meta_db(s, &db, err);
	if (r < 0)
		return r;
	r = al_db_prepare(
		db, "SELECT id, created, files, bytes, source FROM snapshots ORDER BY created, id",
		&st, err);
	if (r < 0)
		return r;
	int rc;
	while ((rc = al_db_step(st, err)) == AL_DB_ROW) {
		struct al_snapshot_info info = { 0 };
		if (al_db_column_bytes(st, 0) != AL_OID_LEN)
			return al_fail(err, AL_ECORRUPT, 0, "snapshot table holds a malformed id");
		memcpy(info.id.b, al_db_column_blob(st, 0), AL_OID_LEN);
		info.created = al_db_column_int64(st, 1);
		info.files = (uint64_t)al_db_column_int64(st, 2);
		info.bytes = (uint64_t)al_db_column_int64(st, 3);
		info.source = al_db_column_text(st, 4);
		if ((r = fn(ctx, &info, err)) != 0)
			return r;
	}
	if (rc < 0)
		return al_error_prefix(err, "list snapshots: ");
	return 0;
}
