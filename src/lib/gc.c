/* gc: garbage collection of a tenant's lower layers and objects (gc.h).
 * The protocol and why it is safe: docs/architecture.md, "Garbage
 * collection". */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "airlock/cas.h"
#include "airlock/gc.h"
#include "airlock/manifest.h"
#include "airlock/odb_backend.h"
#include "airlock/store.h"
#include "cas_private.h"
#include "gc_private.h"
#include "idset.h"
#include "ledger_private.h"
#include "db.h"
#include "store_private.h"
#include "util.h"

#define WAIT_DEFAULT_MS 30000

/* ---- retention ------------------------------------------------------------- */

/* settings is in meta.db since its migration 1 (and in PostgreSQL's schema) */
static int retention_read(struct al_db *db, int64_t *days, struct al_error *err)
{
	*days = AL_GC_FOREVER;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(db, "SELECT value FROM settings WHERE name = 'retention_days'", &q,
			      err);
	if (r < 0)
		return r;
	int rc = al_db_step(q, err);
	if (rc == AL_DB_ROW)
		*days = al_db_column_int64(q, 0);
	return rc < 0 ? al_error_prefix(err, "settings: ") : 0;
}

int al_gc_retention_get(struct al_store *st, int64_t *days, struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	return r < 0 ? r : retention_read(db, days, err);
}

static json_t *days_json(int64_t d)
{
	return d == AL_GC_FOREVER ? json_null() : json_integer((json_int_t)d);
}

int al_gc_retention_set(struct al_store *st, int64_t days, const char *actor, struct al_error *err)
{
	if (days != AL_GC_FOREVER && (days < 0 || days > AL_GC_RETENTION_MAX_DAYS))
		return al_fail(err, AL_EINVAL, 0,
			       "retention: %lld days is out of range (0..%d, or forever)",
			       (long long)days, AL_GC_RETENTION_MAX_DAYS);
	struct al_db *db;
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	int r = al_store__meta_db(st, &db, err);
	if (r < 0 || (r = al_db_begin(db, AL_DB_WRITE, &txn, err)) < 0)
		return r;
	int64_t before = AL_GC_FOREVER;
	r = retention_read(db, &before, err);
	/* replaced by DELETE + INSERT in the transaction (db.h's subset) */
	_cleanup_db_stmt_ struct al_db_stmt *del = NULL, *ins = NULL;
	if (r == 0 &&
	    (r = al_db_prepare(db, "DELETE FROM settings WHERE name = 'retention_days'", &del,
			       err)) == 0 &&
	    (r = al_db_step(del, err)) == 0 &&
	    (r = al_db_prepare(db,
			       "INSERT INTO settings(name, value) VALUES ('retention_days', ?1)",
			       &ins, err)) == 0) {
		al_db_bind_int64(ins, 1, days);
		if ((r = al_db_step(ins, err)) < 0)
			al_error_prefix(err, "settings: ");
	}
	if (r == 0) {
		char group[17];
		al_ledger__new_group(group);
		json_t *data = json_pack("{s:o,s:o}", "before", days_json(before), "after",
					 days_json(days));
		struct al_ledger_rec lr = { .kind = "gc_retention",
					    .group = group,
					    .actor = actor ? actor : "",
					    .data = data };
		r = data ? al_ledger__append_txn(st, &txn, &lr, NULL, err)
			 : al_fail(err, AL_ENOMEM, ENOMEM, "retention");
		json_decref(data);
	}
	return al_ledger__commit(st, &txn, r, err);
}

/* ---- reachability -------------------------------------------------------------- */

struct gc {
	struct al_store *st;
	struct al_cas *cas;
	struct al_db *db;
	struct al_db_txn txn; /* the pause: the tenant's metadata write lock */
	int64_t cutoff;       /* records at or after this time are retained */
	struct al_idset kept;
	/* what mark 1 covered: rows beyond these are marked again under the lock
	 * (each table's order column: snapshots.seq, commits.id, runs.seq,
	 * ledger.seq, alike on both engines) */
	int64_t snap_seq, commit_id, run_seq, ledger_seq, nmax;
	/* what the bucket's sweep is deleting (gc_sweeps.c), recorded in txn
	 * up to the savepoint "swept"; committed: txn's commit went through */
	struct al_oid *swept;
	size_t nswept;
	bool committed;
};

static const uint8_t node_magic[8] = { 'A', 'L', 'T', 'R', 'E', 'E', 0x00, 0x01 }; /* formats.md */

/* Might object id be a tree node?  Cheap: its size and first bytes. */
static bool maybe_node(struct al_cas *cas, const struct al_oid *id)
{
	uint64_t size;
	struct al_error e = { 0 };
	if (al_cas_size(cas, id, &size, &e) < 0 || size < 12)
		return false;
	struct al_cas_reader *rd = NULL;
	if (al_cas_reader_open(cas, id, &rd, &e) < 0)
		return false;
	uint8_t head[8];
	int64_t n = al_cas_reader_read(rd, head, sizeof(head), &e);
	al_cas_reader_close(rd);
	return n == (int64_t)sizeof(head) && memcmp(head, node_magic, 8) == 0;
}

/* Keep id and, if it is a node, everything beneath.  A node already kept
 * has its subtree kept: the walk stops there, so marking again costs what
 * is new.  Missing or undecodable objects are fsck's business. */
static int keep(struct gc *g, const struct al_oid *id, bool is_node, unsigned depth,
		struct al_error *err)
{
	int added = al_idset_add(&g->kept, id);
	if (added < 0)
		return al_fail(err, AL_ENOMEM, ENOMEM, "gc");
	if (added == 0 || depth > AL_DEPTH_MAX || (!is_node && !maybe_node(g->cas, id)))
		return 0;
	struct al_node *node = NULL;
	struct al_error e = { 0 };
	int r = al_node_load(g->cas, id, &node, &e);
	if (r == AL_ENOMEM) {
		*err = e;
		return r;
	}
	if (r < 0)
		return 0;
	for (size_t i = 0; r == 0 && i < node->n; i++) {
		const struct al_entry *en = &node->entries[i];
		if (en->type == AL_T_DIR)
			r = keep(g, &en->digest, true, depth + 1, err);
		else if (al_idset_add(&g->kept, &en->digest) < 0)
			r = al_fail(err, AL_ENOMEM, ENOMEM, "gc");
	}
	al_node_free(node);
	return r;
}

/* Every "sha256:<64 hex>" in a record or a ledger entry is retained: the
 * formats name objects only that way, whatever the kind of entry. */
static int keep_text(struct gc *g, const char *s, size_t n, struct al_error *err)
{
	const char *end = s + n;
	for (const char *p = s; p && p + 7 + 64 <= end;
	     p = memmem(p + 1, (size_t)(end - p - 1), "sha256:", 7)) {
		if (memcmp(p, "sha256:", 7) != 0)
			continue;
		struct al_oid d;
		if (al_unhex(p + 7, AL_OID_LEN, d.b) < 0)
			continue;
		int r = keep(g, &d, false, 0, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int keep_column(struct gc *g, struct al_db_stmt *q, int col, bool text, struct al_error *err)
{
	enum al_db_type t = al_db_column_type(q, col);
	if (t == AL_DB_NULL)
		return 0;
	if (text && t == AL_DB_BLOB) /* a ledger entry: JSON bytes */
		return keep_text(g, al_db_column_blob(q, col), al_db_column_bytes(q, col), err);
	if (text) {
		const char *p = al_db_column_text(q, col);
		return keep_text(g, p, strlen(p), err);
	}
	return al_db_column_bytes(q, col) == AL_OID_LEN
		       ? keep(g, al_db_column_blob(q, col), true, 0, err)
		       : 0;
}

/* Run sql (binding cutoff as ?1 and, with nparams 2, after as ?2) and
 * keep its columns. */
static int keep_query(struct gc *g, const char *sql, int nparams, bool text, struct al_error *err,
		      int64_t after)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(g->db, sql, &q, err);
	if (r < 0)
		return r;
	if (nparams >= 1)
		al_db_bind_int64(q, 1, g->cutoff);
	if (nparams >= 2)
		al_db_bind_int64(q, 2, after);
	int rc;
	while ((rc = al_db_step(q, err)) == AL_DB_ROW)
		for (int c = 0; c < al_db_column_count(q); c++)
			if ((r = keep_column(g, q, c, text, err)) < 0)
				return r;
	return rc < 0 ? al_error_prefix(err, "gc: roots: ") : 0;
}

/* The greatest of a column (-1 for none). */
static int max_of(struct al_db *db, const char *sql, int64_t *out, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	*out = -1;
	int r = al_db_prepare(db, sql, &q, err);
	if (r < 0)
		return r;
	int rc = al_db_step(q, err);
	if (rc == AL_DB_ROW && al_db_column_type(q, 0) != AL_DB_NULL)
		*out = al_db_column_int64(q, 0);
	return rc < 0 ? al_error_prefix(err, "gc: ") : 0;
}

/* Mark from every root.  again: only what was recorded since the first
 * mark (and the heads, drafts and images, which are few). */
static int mark(struct gc *g, bool again, struct al_error *err)
{
	int r;
	if (!again &&
	    ((r = max_of(g->db, "SELECT MAX(seq) FROM snapshots", &g->snap_seq, err)) < 0 ||
	     (r = max_of(g->db, "SELECT MAX(id) FROM commits", &g->commit_id, err)) < 0 ||
	     (r = max_of(g->db, "SELECT MAX(seq) FROM runs", &g->run_seq, err)) < 0 ||
	     (r = max_of(g->db, "SELECT MAX(seq) FROM ledger", &g->ledger_seq, err)) < 0))
		return r;
	if ((r = keep_query(g,
			    "SELECT head, base FROM volumes WHERE kind = 'live' OR state = 'open'",
			    0, false, err, 0)) < 0 ||
	    (r = keep_query(g, "SELECT snapshot FROM images", 0, false, err, 0)) < 0 ||
	    (r = keep_query(g, "SELECT id FROM snapshots WHERE created >= ?1 AND seq > ?2", 2,
			    false, err, again ? g->snap_seq : -1)) < 0 ||
	    (r = keep_query(g,
			    "SELECT parent, base, result FROM commits WHERE time >= ?1 AND id > ?2",
			    2, false, err, again ? g->commit_id : -1)) < 0 ||
	    (r = keep_query(g, "SELECT record FROM runs WHERE created >= ?1 AND seq > ?2", 2, true,
			    err, again ? g->run_seq : -1)) < 0 ||
	    (r = keep_query(g, "SELECT entry FROM ledger WHERE time >= ?1 AND seq > ?2", 2, true,
			    err, again ? g->ledger_seq : -1)) < 0)
		return r;
	return 0;
}

/* ---- candidates --------------------------------------------------------------- */

struct cands {
	struct gc *g;
	struct al_oid *id;
	uint64_t *size;
	size_t n, cap;
	uint64_t bytes;
};

static int collect_cand(void *ctx, const struct al_cas__object *o, struct al_error *err)
{
	struct cands *c = ctx;
	if (o->n > c->g->nmax)
		return 1; /* newer than the mark: not a candidate */
	if (al_idset_has(&c->g->kept, &o->id))
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct al_oid *id = realloc(c->id, cap * sizeof(*id));
		if (id)
			c->id = id;
		uint64_t *size = id ? realloc(c->size, cap * sizeof(uint64_t)) : NULL;
		if (!size)
			return al_fail(err, AL_ENOMEM, ENOMEM, "gc");
		c->size = size;
		c->cap = cap;
	}
	c->id[c->n] = o->id;
	c->size[c->n++] = o->size;
	c->bytes += o->size;
	return 0;
}

/* Objects stored since the first mark are kept, with all they reach: an
 * object present must mean its subtree is present (import and apply rely
 * on it), even when its writer died before recording it. */
static int keep_new(void *ctx, const struct al_cas__object *o, struct al_error *err)
{
	return keep(ctx, &o->id, false, 0, err);
}

static int snapshots_to_forget(struct gc *g, uint64_t *n, struct al_db_stmt *del,
			       struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(g->db, "SELECT id FROM snapshots", &q, err);
	if (r < 0)
		return r;
	int rc;
	while ((rc = al_db_step(q, err)) == AL_DB_ROW) {
		if (al_db_column_bytes(q, 0) != AL_OID_LEN ||
		    al_idset_has(&g->kept, al_db_column_blob(q, 0)))
			continue;
		(*n)++;
		if (del) {
			al_db_reset(del);
			al_db_bind_blob(del, 1, al_db_column_blob(q, 0), AL_OID_LEN);
			if ((r = al_db_step(del, err)) < 0)
				return al_error_prefix(err, "gc: forget snapshot: ");
		}
	}
	return rc < 0 ? al_error_prefix(err, "gc: snapshots: ") : 0;
}

/* ---- lower layers --------------------------------------------------------------- */

static __thread uint64_t du_total;

static int du_one(const char *path, const struct stat *s, int flag, struct FTW *f)
{
	(void)path, (void)flag, (void)f;
	du_total += (uint64_t)s->st_blocks * 512;
	return 0;
}

static uint64_t du(const char *path)
{
	du_total = 0;
	nftw(path, du_one, 16, FTW_PHYS);
	return du_total;
}

static bool layer_name(const char *s)
{
	size_t n = strlen(s);
	if (n < 66 || n > 80 || s[64] != '-')
		return false;
	for (size_t i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	for (size_t i = 65; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

bool al_gc__staging_dead(int lowers, const char *name)
{
	char lock[300];
	if ((size_t)snprintf(lock, sizeof(lock), "%s.lock", name) >= sizeof(lock))
		return false;
	int lk = openat(lowers, lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (lk < 0)
		return errno == ENOENT;
	bool dead = flock(lk, LOCK_EX | LOCK_NB) == 0;
	if (dead)
		unlinkat(lowers, lock, 0);
	close(lk);
	return dead;
}

int al_gc__layer_use(int lowers, const char *name, struct al_error *err)
{
	char lock[128];
	snprintf(lock, sizeof(lock), "%s.lock", name);
	for (int attempt = 0; attempt < 100; attempt++) {
		int fd = openat(lowers, lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return al_fail(err, AL_EIO, errno, "run: lock the layer %s", name);
		int rc;
		while ((rc = flock(fd, LOCK_SH)) < 0 && errno == EINTR)
			;
		struct stat a, b;
		if (rc == 0 && fstat(fd, &a) == 0 &&
		    fstatat(lowers, lock, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino &&
		    a.st_dev == b.st_dev) {
			futimens(fd, NULL); /* the layer's last use */
			return fd;
		}
		close(fd); /* collected meanwhile: its lock file went with it */
	}
	return al_fail(err, AL_EIO, 0, "run: lock the layer %s: it keeps being removed", name);
}

struct layer {
	char name[96];
	uint64_t size;
	struct timespec used;
};

static int by_use(const void *a, const void *b)
{
	const struct layer *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int gc_layers(struct al_store *st, const struct al_gc_opts *o, int64_t now,
		     struct al_gc_report *rep, struct al_error *err)
{
	(void)now; /* staleness is a free lock now, not an age */
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/lower", al_store_dir(st));
	_cleanup_close_ int lowers = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lowers < 0)
		return errno == ENOENT ? 0 : al_fail(err, AL_EIO, errno, "gc: %s", dir);
	DIR *d = al_opendir_fd(lowers);
	if (!d)
		return al_fail(err, AL_EIO, errno, "gc: %s", dir);
	struct layer *v = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	struct dirent *de;
	char path[4600];
	while ((de = readdir(d))) {
		struct stat s;
		if (fstatat(lowers, de->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(s.st_mode))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		/* a removal cut short (.gc-), a materialisation of a dead run (.tmp-) */
		bool stale = !strncmp(de->d_name, ".gc-", 4) ||
			     (!strncmp(de->d_name, ".tmp-", 5) &&
			      al_gc__staging_dead(lowers, de->d_name));
		if (stale) {
			rep->staging++;
			if (!o->dry_run)
				al_rm_tree(path);
			continue;
		}
		if (!layer_name(de->d_name))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			struct layer *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				r = al_fail(err, AL_ENOMEM, ENOMEM, "gc");
				break;
			}
			v = nv;
		}
		struct layer *l = &v[n++];
		snprintf(l->name, sizeof(l->name), "%s", de->d_name);
		l->size = du(path);
		char lock[128];
		snprintf(lock, sizeof(lock), "%s.lock", de->d_name);
		struct stat ls;
		l->used = fstatat(lowers, lock, &ls, AT_SYMLINK_NOFOLLOW) == 0 ? ls.st_mtim
									       : s.st_mtim;
	}
	closedir(d);
	uint64_t budget = o->lower_budget ? o->lower_budget : AL_GC_LOWER_BUDGET_DEFAULT, total = 0;
	if (r == 0 && n)
		qsort(v, n, sizeof(*v), by_use);
	for (size_t i = 0; r == 0 && i < n; i++)
		total += v[i].size;
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct layer *l = &v[i];
		char lock[128], gone[128];
		snprintf(lock, sizeof(lock), "%s.lock", l->name);
		_cleanup_close_ int fd =
			openat(lowers, lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
			rep->layers_in_use++;
			rep->layers_kept++;
			rep->layer_bytes_kept += l->size;
			continue;
		}
		if (total <= budget) {
			rep->layers_kept++;
			rep->layer_bytes_kept += l->size;
			continue;
		}
		total -= l->size;
		rep->layers++;
		rep->layer_bytes += l->size;
		if (o->dry_run)
			continue;
		/* out of sight first (a run finds no layer and materialises it
		 * again), then away; the lock file last, while still held */
		snprintf(gone, sizeof(gone), ".gc-%s", l->name);
		if (renameat(lowers, l->name, lowers, gone) < 0) {
			r = al_fail(err, AL_EIO, errno, "gc: remove the layer %s", l->name);
			break;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, gone);
		al_rm_tree(path);
		unlinkat(lowers, lock, 0);
	}
	free(v);
	return r;
}

/* ---- the pass ---------------------------------------------------------------------- */

struct sweep_ctx {
	struct gc *g;
	const struct al_gc_opts *o;
	struct al_gc_report *rep;
	int64_t days;
	uint64_t seq;
};

static int append_entry(struct sweep_ctx *x, struct al_error *err)
{
	struct al_gc_report *p = x->rep;
	char group[17];
	al_ledger__new_group(group);
	json_t *data = json_pack(
		"{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:o,s:I}", "objects", (json_int_t)p->objects,
		"bytes", (json_int_t)p->bytes, "snapshots", (json_int_t)p->snapshots,
		"orphan_files", (json_int_t)p->orphan_files, "orphan_bytes",
		(json_int_t)p->orphan_bytes, "layers", (json_int_t)p->layers, "layer_bytes",
		(json_int_t)p->layer_bytes, "staging", (json_int_t)p->staging, "objects_skipped",
		p->objects_skipped, "retention_days", days_json(x->days), "lower_budget",
		(json_int_t)(x->o->lower_budget ? x->o->lower_budget : AL_GC_LOWER_BUDGET_DEFAULT));
	if (!data)
		return al_fail(err, AL_ENOMEM, ENOMEM, "gc");
	struct al_ledger_rec lr = {
		.kind = "gc", .group = group, .actor = x->o->actor ? x->o->actor : "", .data = data
	};
	int r = al_ledger__append_txn(x->g->st, &x->g->txn, &lr, &x->seq, err);
	json_decref(data);
	return r;
}

static void blobs_keep_record(struct gc *g, struct al_error *err);

/* Inside the object store's delete transaction: forget the snapshots whose
 * root goes, record the pass, commit meta.db (first: a crash after it leaves
 * objects nothing names, collected next time; never a name without its
 * object). */
static int before_commit(void *ctx, const struct al_cas__sweep_stats *s, struct al_error *err)
{
	struct sweep_ctx *x = ctx;
	x->rep->objects = s->objects;
	x->rep->bytes = s->bytes;
	x->rep->orphan_files = s->orphan_files;
	x->rep->orphan_bytes = s->orphan_bytes;
	_cleanup_db_stmt_ struct al_db_stmt *del = NULL;
	int r = al_db_prepare(x->g->db, "DELETE FROM snapshots WHERE id = ?1", &del, err);
	if (r == 0)
		r = snapshots_to_forget(x->g, &x->rep->snapshots, del, err);
	if (r == 0)
		r = append_entry(x, err);
	if (r < 0)
		blobs_keep_record(x->g, err);
	r = al_ledger__commit(x->g->st, &x->g->txn, r, err);
	x->g->committed = x->g->committed || r == 0;
	return r;
}

/* what the bucket's sweep is about to delete, recorded in the pause's
 * transaction before the first DELETE, and a savepoint after it */
static int blobs_doomed(void *ctx, const struct al_oid *ids, size_t n, struct al_error *err)
{
	struct gc *g = ctx;
	if (!(g->swept = malloc(n * sizeof(*ids))))
		return al_fail(err, AL_ENOMEM, ENOMEM, "gc");
	memcpy(g->swept, ids, n * sizeof(*ids));
	int r = al_gc__swept_record(g->db, ids, n, al_wall_s(), err);
	if (r == 0 && (r = al_db_exec(g->db, "SAVEPOINT swept", err)) == 0)
		g->nswept = n;
	return r;
}

/* The pass began deleting from the bucket and fails: what it deleted must
 * be recorded all the same, or another node could go on trusting its
 * local copies.  Its transaction, still open, commits the record alone
 * (back to the savepoint: the lock is held throughout, so no node writes
 * in between); one that is gone gives way to a transaction of its own.
 * If neither commits, err says what the operator must do. */
static void blobs_keep_record(struct gc *g, struct al_error *err)
{
	if (!g->nswept || g->committed)
		return;
	int r = -1;
	if (g->txn.open && al_db_exec(g->db, "ROLLBACK TO SAVEPOINT swept", NULL) == 0)
		r = al_db_commit(&g->txn, NULL);
	al_db_rollback(&g->txn);
	if (r < 0) {
		struct al_db_txn txn = { 0 };
		if (al_db_begin(g->db, AL_DB_WRITE, &txn, NULL) == 0 &&
		    al_gc__swept_record(g->db, g->swept, g->nswept, al_wall_s(), NULL) == 0)
			r = al_db_commit(&txn, NULL);
		al_db_rollback(&txn);
	}
	g->committed = r == 0;
	if (r < 0 && err) {
		size_t l = strlen(err->msg);
		snprintf(err->msg + l, sizeof(err->msg) - l,
			 "; what the pass deleted from the bucket is not recorded: run `airlock "
			 "admin blobs sync` on every node");
	}
}

/* --blobs: the bucket's copies nothing retains, past the grace period */
static int blobs_sweep(struct gc *g, const struct al_gc_opts *o, bool dry, struct al_gc_report *rep,
		       struct al_error *err)
{
	struct al_odb_sweep s;
	int64_t grace = o->blobs_grace ? o->blobs_grace : AL_GC_BLOBS_GRACE_DEFAULT;
	int r = al_cas__remote_sweep(g->cas, &g->kept, blobs_doomed, g, al_wall_s() - grace, dry,
				     &s, err);
	rep->blobs_objects = s.objects;
	rep->blobs_bytes = s.bytes;
	rep->blobs_young = s.young;
	return r < 0 ? al_error_prefix(err, "gc: the bucket: ") : 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

int al_gc_run(struct al_store *st, const struct al_gc_opts *o, struct al_gc_report *rep,
	      struct al_error *err)
{
	memset(rep, 0, sizeof(*rep));
	struct gc g = { .st = st, .cas = al_store_cas(st) };
	/* this handle's own pin on gc.lock would keep the sweep waiting on itself */
	if (!al_store_idle(st))
		return al_fail(err, AL_EUSAGE, 0, "gc: the store handle has a transaction open");
	al_store_release_memory(st);
	int64_t now = o->now ? o->now : al_wall_s();
	int r = al_store__meta_db(st, &g.db, err);
	if (r < 0 || (r = retention_read(g.db, &rep->retention_days, err)) < 0)
		return r;
	g.cutoff = rep->retention_days == AL_GC_FOREVER ? INT64_MIN
							: now - rep->retention_days * 86400;
	if ((r = gc_layers(st, o, now, rep, err)) < 0)
		return al_error_prefix(err, "gc: ");

	/* mark 1, without any lock: what is retained now */
	struct cands c = { .g = &g };
	struct sweep_ctx x = { .g = &g, .o = o, .rep = rep, .days = rep->retention_days };
	_cleanup_close_ int lockfd = -1;
	if ((r = al_cas__max_n(g.cas, &g.nmax, err)) < 0 || (r = mark(&g, false, err)) < 0 ||
	    (r = al_cas__foreach(g.cas, 0, collect_cand, &c, err)) < 0)
		goto out;
	r = 0;
	rep->retained = g.kept.n;
	if (o->dry_run) {
		struct al_cas__sweep_stats s = { 0 };
		rep->objects = c.n;
		rep->bytes = c.bytes;
		if ((r = al_cas__orphan_files(g.cas, &s, err)) < 0 ||
		    (r = snapshots_to_forget(&g, &rep->snapshots, NULL, err)) < 0)
			goto out;
		rep->orphan_files = s.orphan_files;
		rep->orphan_bytes = s.orphan_bytes;
		rep->retained = g.kept.n;
		r = blobs_sweep(&g, o, true, rep, err);
		goto out;
	}

	/* mark 1 may have fetched objects from the bucket (a node whose store
	 * is cold), which pinned this handle: let go, or the pause below would
	 * wait on itself.  What it fetched is past nmax, kept by mark 2. */
	al_cas__release_memory(g.cas);
	/* writers pause: meta.db's write lock, then gc.lock exclusively (no
	 * handle holds objects it has not recorded).  In that order, and the
	 * second without waiting: a writer holding gc.lock may be waiting for
	 * meta.db */
	char lockpath[4200];
	snprintf(lockpath, sizeof(lockpath), "%s/%s", al_store_dir(st), AL_CAS_GC_LOCK);
	lockfd = open(lockpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lockfd < 0) {
		r = al_fail(err, AL_EIO, errno, "gc: open %s", lockpath);
		goto out;
	}
	uint64_t deadline =
		al_now_ns() + (uint64_t)(o->wait_ms ? o->wait_ms : WAIT_DEFAULT_MS) * 1000000;
	for (;;) {
		if ((r = al_db_begin(g.db, AL_DB_WRITE, &g.txn, err)) < 0)
			goto out;
		if (flock(lockfd, LOCK_EX | LOCK_NB) == 0) {
			al_cas__sweeping(g.cas, true);
			break;
		}
		al_db_rollback(&g.txn);
		if (al_now_ns() > deadline) {
			rep->objects_skipped = true;
			break;
		}
		sleep_ms(10);
	}
	if (rep->objects_skipped) {
		/* only the record of what was done */
		if ((r = al_db_begin(g.db, AL_DB_WRITE, &g.txn, err)) < 0)
			goto out;
		r = al_ledger__commit(st, &g.txn, append_entry(&x, err), err);
		goto out;
	}
	/* mark 2, paused: what was recorded since mark 1, and what was stored */
	if ((r = mark(&g, true, err)) < 0 ||
	    (r = al_cas__foreach(g.cas, g.nmax, keep_new, &g, err)) < 0)
		goto out;
	size_t keepn = 0;
	for (size_t i = 0; i < c.n; i++)
		if (!al_idset_has(&g.kept, &c.id[i]))
			c.id[keepn++] = c.id[i];
	/* the bucket first, still paused: nothing this home stores meanwhile
	 * can be a copy the bucket is about to lose */
	if ((r = blobs_sweep(&g, o, false, rep, err)) < 0)
		goto out;
	struct al_cas__sweep_stats s;
	r = al_cas__sweep(g.cas, c.id, keepn, before_commit, &x, &s, err);
	rep->retained = g.kept.n;
out:
	if (r < 0)
		blobs_keep_record(&g, err);
	al_db_rollback(&g.txn); /* still open after a failure before the sweep's commit */
	al_cas__sweeping(g.cas, false);
	free(g.swept);
	rep->seq = x.seq;
	free(c.id);
	free(c.size);
	al_idset_release(&g.kept);
	return r < 0 ? r : 0;
}

struct names {
	char (**v)[64];
	size_t *n;
};

static int tenant_name(void *ctx, const char *name, struct al_error *err)
{
	struct names *c = ctx;
	char(*nv)[64] = realloc(*c->v, (*c->n + 1) * 64);
	if (!nv)
		return al_fail(err, AL_ENOMEM, ENOMEM, "gc");
	*c->v = nv;
	snprintf(nv[(*c->n)++], 64, "%s", name);
	return 0;
}

int al_gc_home(const char *home, const struct al_gc_opts *o, al_gc_done_fn done,
	       bool (*stop)(void *ctx), void *ctx, struct al_error *err)
{
	char(*names)[64] = NULL;
	size_t n = 0;
	int r = al_store__tenants(home, tenant_name, &(struct names){ &names, &n }, err);
	for (size_t i = 0; r == 0 && i < n && !(stop && stop(ctx)); i++) {
		struct al_store *st = NULL;
		struct al_gc_report rep = { 0 };
		struct al_error e = { 0 };
		int rc = al_store_open(home, names[i], &st, &e);
		if (rc == 0)
			rc = al_gc_run(st, o, &rep, &e);
		al_store_close(st);
		if (done)
			done(ctx, names[i], rc, &rep, &e);
	}
	free(names);
	return r;
}

/* ---- completeness (replay's check) ------------------------------------------------ */

static int complete(struct al_cas *cas, struct al_idset *seen, const struct al_oid *id,
		    unsigned depth, struct al_error *err)
{
	int added = al_idset_add(seen, id);
	if (added <= 0)
		return added < 0 ? al_fail(err, AL_ENOMEM, ENOMEM, "gc") : 0;
	struct al_node *node = NULL;
	int r = depth > AL_DEPTH_MAX ? al_fail(err, AL_ECORRUPT, 0, "tree too deep")
				     : al_node_load(cas, id, &node, err);
	for (size_t i = 0; r == 0 && i < node->n; i++) {
		const struct al_entry *en = &node->entries[i];
		if (en->type == AL_T_DIR) {
			r = complete(cas, seen, &en->digest, depth + 1, err);
		} else if (al_idset_add(seen, &en->digest) > 0) {
			int has = al_cas__has_local(cas, &en->digest, err);
			if (has == 0) {
				char s[AL_OID_STRLEN + 1];
				al_oid_fmt(&en->digest, s);
				r = al_fail(err, AL_ENOTFOUND, 0, "object %s is missing", s);
			} else if (has < 0)
				r = has;
		}
	}
	al_node_free(node);
	return r;
}

int al_gc_snapshot_complete(struct al_store *st, const struct al_oid *id, struct al_error *err)
{
	struct al_idset seen = { 0 };
	int r = complete(al_store_cas(st), &seen, id, 0, err);
	al_idset_release(&seen);
	return r;
}
