/* ledger: append-only Merkle log per tenant with signed checkpoints
 * (include/airlock/ledger.h, docs/formats.md "Audit ledger"): storage of
 * the entries and the tree, appending, signing checkpoints, reading,
 * proofs and export.  The hashing is merkle.c; the offline verifier of an
 * export is ledger_verify.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "airlock/cas.h"
#include "airlock/ledger.h"
#include "airlock/store.h"
#include "ledger_export.h"
#include "ledger_private.h"
#include "merkle.h"
#include "sqlite_util.h"
#include "store_private.h"
#include "util.h"

#define JSON_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)

/* ---- the stored tree --------------------------------------------------------
 * ledger_tree(level, idx, hash): the hash of every complete, aligned subtree
 * [idx*2^level, (idx+1)*2^level).  A root or a proof needs O(log n) of them
 * (merkle.c computes them from these). */

static int tree_get(struct al_db *db, unsigned level, uint64_t idx, uint8_t out[AL_DIGEST_LEN],
		    struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *st = NULL;
	int r = al_db_prepare(db, "SELECT hash FROM ledger_tree WHERE level = ?1 AND idx = ?2", &st,
			      err);
	if (r < 0)
		return r;
	al_db_bind_int64(st, 1, level);
	al_db_bind_int64(st, 2, (int64_t)idx);
	if ((r = al_db_step(st, err)) < 0)
		return al_error_prefix(err, "ledger tree: ");
	if (r != AL_DB_ROW || al_db_column_bytes(st, 0) != AL_DIGEST_LEN)
		return al_fail(err, AL_ECORRUPT, 0, "ledger: tree node %u/%llu missing", level,
			       (unsigned long long)idx);
	memcpy(out, al_db_column_blob(st, 0), AL_DIGEST_LEN);
	return 0;
}

static int tree_put(struct al_db *db, unsigned level, uint64_t idx, const uint8_t h[AL_DIGEST_LEN],
		    struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *st = NULL;
	int r = al_db_prepare(db, "INSERT INTO ledger_tree(level, idx, hash) VALUES (?1, ?2, ?3)",
			      &st, err);
	if (r < 0)
		return r;
	al_db_bind_int64(st, 1, level);
	al_db_bind_int64(st, 2, (int64_t)idx);
	al_db_bind_blob(st, 3, h, AL_DIGEST_LEN);
	r = al_db_step(st, err);
	return r < 0 ? al_error_prefix(err, "ledger tree: ") : 0;
}

static int tree_subtree(void *db, unsigned level, uint64_t idx, uint8_t out[AL_DIGEST_LEN],
			struct al_error *err)
{
	return tree_get(db, level, idx, out, err);
}

/* MTH(D[lo:hi]) from the stored complete subtrees */
static int mth_db(struct al_db *db, uint64_t lo, uint64_t hi, uint8_t out[AL_DIGEST_LEN],
		  struct al_error *err)
{
	struct al_merkle_store t = { tree_subtree, db };
	return al_merkle__mth(&t, lo, hi, out, err);
}

static int ledger_size(struct al_db *db, uint64_t *n, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *st = NULL;
	int r = al_db_prepare(db, "SELECT COALESCE(MAX(seq) + 1, 0) FROM ledger", &st, err);
	if (r < 0)
		return r;
	if ((r = al_db_step(st, err)) != AL_DB_ROW)
		return r < 0 ? al_error_prefix(err, "ledger: ")
			     : al_fail(err, AL_EIO, 0, "ledger: no size");
	*n = (uint64_t)al_db_column_int64(st, 0);
	return 0;
}

/* ---- appending ------------------------------------------------------------- */

void al_ledger__new_group(char out[17])
{
	uint8_t r[8];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		memset(r, 0, sizeof(r));
	char hex[17];
	al_hex(r, sizeof(r), hex);
	snprintf(out, 17, "g%.15s", hex);
}

static int append(struct al_store *st, struct al_db *db, const struct al_ledger_rec *rec,
		  uint64_t *seq_out, struct al_error *err)
{
	/* what `airlock audit` prints: never a terminal control or bidi override */
	if ((rec->group && al_text_check("group", rec->group, 64, err) < 0) ||
	    (rec->actor && *rec->actor && al_text_check("author", rec->actor, 255, err) < 0))
		return err->code;
	uint64_t seq;
	int r = ledger_size(db, &seq, err);
	if (r < 0)
		return r;
	int64_t now = al_wall_s();
	json_t *e = json_pack("{s:i,s:I,s:s,s:s,s:I,s:s,s:s,s:O}", "v", 1, "seq", (json_int_t)seq,
			      "kind", rec->kind, "group", rec->group, "time", (json_int_t)now,
			      "tenant", al_store_tenant(st), "actor", rec->actor ? rec->actor : "",
			      "data", rec->data ? rec->data : json_object());
	if (!e)
		return al_fail(err, AL_ENOMEM, ENOMEM, "ledger");
	json_object_set_new(e, "project", rec->project ? json_string(rec->project) : json_null());
	char *enc = json_dumps(e, JSON_FLAGS);
	json_decref(e);
	if (!enc)
		return al_fail(err, AL_ENOMEM, ENOMEM, "ledger");
	uint8_t leaf[AL_DIGEST_LEN];
	al_merkle_leaf(enc, strlen(enc), leaf);
	_cleanup_db_stmt_ struct al_db_stmt *ins = NULL;
	r = al_db_prepare(db,
			  "INSERT INTO ledger(seq, kind, grp, project, time, entry, leaf) "
			  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
			  &ins, err);
	if (r == 0) {
		al_db_bind_int64(ins, 1, (int64_t)seq);
		al_db_bind_text(ins, 2, rec->kind, -1);
		al_db_bind_text(ins, 3, rec->group, -1);
		al_db_bind_text(ins, 4, rec->project, -1); /* NULL binds NULL */
		al_db_bind_int64(ins, 5, now);
		al_db_bind_blob(ins, 6, enc, strlen(enc));
		al_db_bind_blob(ins, 7, leaf, AL_DIGEST_LEN);
		if ((r = al_db_step(ins, err)) < 0)
			al_error_prefix(err, "ledger append: ");
	}
	free(enc);
	/* complete the subtrees this leaf closes */
	uint8_t h[AL_DIGEST_LEN];
	memcpy(h, leaf, AL_DIGEST_LEN);
	if (r == 0)
		r = tree_put(db, 0, seq, h, err);
	for (unsigned level = 1; r == 0 && ((seq + 1) & ((1ull << level) - 1)) == 0; level++) {
		uint8_t left[AL_DIGEST_LEN];
		if ((r = tree_get(db, level - 1, (seq >> (level - 1)) - 1, left, err)) < 0)
			break;
		al_merkle_node(left, h, h);
		r = tree_put(db, level, seq >> level, h, err);
	}
	if (r == 0 && seq_out)
		*seq_out = seq;
	return r;
}

/* ---- checkpoints ------------------------------------------------------------ */

static void origin_of(struct al_store *st, char *out, size_t n)
{
	snprintf(out, n, "airlock/%s", al_store_tenant(st));
}

static int seal(struct al_store *st, struct al_db *db, struct al_error *err)
{
	struct al_checkpoint c = { .time = al_wall_s() };
	int r = ledger_size(db, &c.size, err);
	if (r < 0 || c.size == 0)
		return r;
	if ((r = mth_db(db, 0, c.size, c.root, err)) < 0)
		return r;
	origin_of(st, c.origin, sizeof(c.origin));
	char note[512];
	int nl = al_checkpoint_note(&c, note, sizeof(note));
	EVP_PKEY *key = NULL;
	if ((r = al_store__ledger_key(st, &key, err)) < 0)
		return r;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t siglen = sizeof(c.sig);
	if (!ctx || EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) <= 0 ||
	    EVP_DigestSign(ctx, c.sig, &siglen, (const uint8_t *)note, (size_t)nl) <= 0 ||
	    siglen != AL_ED25519_SIG_LEN)
		r = al_fail(err, AL_EIO, 0, "ledger: signing failed");
	EVP_MD_CTX_free(ctx);
	if (r < 0)
		return r;
	/* the checkpoint of this size replaced (a second seal in the same
	 * second's transaction): DELETE and INSERT, alike on both engines */
	_cleanup_db_stmt_ struct al_db_stmt *del = NULL, *ins = NULL;
	if ((r = al_db_prepare(db, "DELETE FROM checkpoints WHERE size = ?1", &del, err)) < 0 ||
	    (r = al_db_prepare(db,
			       "INSERT INTO checkpoints(size, root, time, origin, signature) "
			       "VALUES (?1, ?2, ?3, ?4, ?5)",
			       &ins, err)) < 0)
		return r;
	al_db_bind_int64(del, 1, (int64_t)c.size);
	al_db_bind_int64(ins, 1, (int64_t)c.size);
	al_db_bind_blob(ins, 2, c.root, AL_DIGEST_LEN);
	al_db_bind_int64(ins, 3, c.time);
	al_db_bind_text(ins, 4, c.origin, -1);
	al_db_bind_blob(ins, 5, c.sig, AL_ED25519_SIG_LEN);
	if ((r = al_db_step(del, err)) < 0 || (r = al_db_step(ins, err)) < 0)
		return al_error_prefix(err, "checkpoint: ");
	return 0;
}

static int read_checkpoint(struct al_db_stmt *q, struct al_checkpoint *c)
{
	memset(c, 0, sizeof(*c));
	c->size = (uint64_t)al_db_column_int64(q, 0);
	if (al_db_column_bytes(q, 1) != AL_DIGEST_LEN ||
	    al_db_column_bytes(q, 4) != AL_ED25519_SIG_LEN)
		return -1;
	memcpy(c->root, al_db_column_blob(q, 1), AL_DIGEST_LEN);
	c->time = al_db_column_int64(q, 2);
	const char *o = al_db_column_text(q, 3);
	snprintf(c->origin, sizeof(c->origin), "%s", o ? o : "");
	memcpy(c->sig, al_db_column_blob(q, 4), AL_ED25519_SIG_LEN);
	return 0;
}

int al_ledger_checkpoint(struct al_store *st, struct al_checkpoint *out, struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	if ((r = al_db_prepare(db,
			       "SELECT size, root, time, origin, signature FROM checkpoints "
			       "ORDER BY size DESC LIMIT 1",
			       &q, err)) < 0)
		return r;
	if ((r = al_db_step(q, err)) < 0)
		return al_error_prefix(err, "checkpoint: ");
	if (r != AL_DB_ROW)
		return al_fail(err, AL_ENOTFOUND, 0, "the ledger is empty: no checkpoint yet");
	if (read_checkpoint(q, out) < 0)
		return al_fail(err, AL_ECORRUPT, 0, "checkpoint %lld is malformed",
			       (long long)al_db_column_int64(q, 0));
	return 0;
}

/* ---- reading ---------------------------------------------------------------- */

static int run_query(struct al_db_stmt *q, al_ledger_fn fn, void *ctx, struct al_error *err)
{
	int r;
	while ((r = al_db_step(q, err)) == AL_DB_ROW) {
		struct al_ledger_entry e = {
			.seq = (uint64_t)al_db_column_int64(q, 0),
			.kind = al_db_column_text(q, 1),
			.group = al_db_column_text(q, 2),
			.project = al_db_column_text(q, 3),
			.time = al_db_column_int64(q, 4),
			.json = al_db_column_blob(q, 5),
			.len = al_db_column_bytes(q, 5),
		};
		if ((r = fn(ctx, &e, err)) != 0)
			return r;
	}
	return r < 0 ? al_error_prefix(err, "ledger: ") : 0;
}

int al_ledger_foreach(struct al_store *st, const struct al_ledger_query *qy, al_ledger_fn fn,
		      void *ctx, struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	if ((r = al_db_prepare(
		     db,
		     "SELECT seq, kind, grp, project, time, entry FROM ledger WHERE "
		     "(CAST(?1 AS TEXT) IS NULL OR grp = ?1) AND "
		     "(CAST(?2 AS TEXT) IS NULL OR project = ?2) AND "
		     "(CAST(?3 AS TEXT) IS NULL OR kind = ?3) AND time >= ?4 ORDER BY seq",
		     &q, err)) < 0)
		return r;
	al_db_bind_text(q, 1, qy ? qy->group : NULL, -1);
	al_db_bind_text(q, 2, qy ? qy->project : NULL, -1);
	al_db_bind_text(q, 3, qy ? qy->kind : NULL, -1);
	al_db_bind_int64(q, 4, qy ? qy->since : 0);
	return run_query(q, fn, ctx, err);
}

struct get_ctx {
	al_ledger_fn fn;
	void *ctx;
	int n;
};

static int get_one(void *ctx, const struct al_ledger_entry *e, struct al_error *err)
{
	struct get_ctx *g = ctx;
	g->n++;
	return g->fn(g->ctx, e, err);
}

int al_ledger_get(struct al_store *st, uint64_t seq, al_ledger_fn fn, void *ctx,
		  struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	if ((r = al_db_prepare(
		     db, "SELECT seq, kind, grp, project, time, entry FROM ledger WHERE seq = ?1",
		     &q, err)) < 0)
		return r;
	al_db_bind_int64(q, 1, (int64_t)seq);
	struct get_ctx g = { fn, ctx, 0 };
	if ((r = run_query(q, get_one, &g, err)) < 0)
		return r;
	return g.n ? 0
		   : al_fail(err, AL_ENOTFOUND, 0, "no ledger entry %llu", (unsigned long long)seq);
}

int al_ledger_root(struct al_store *st, uint64_t size, uint8_t out[AL_DIGEST_LEN],
		   struct al_error *err)
{
	struct al_db *db;
	uint64_t n;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0 || (r = ledger_size(db, &n, err)) < 0)
		return r;
	if (size == 0 || size > n)
		return al_fail(err, AL_EINVAL, 0, "tree size %llu outside 1..%llu",
			       (unsigned long long)size, (unsigned long long)n);
	return mth_db(db, 0, size, out, err);
}

int al_ledger_inclusion(struct al_store *st, uint64_t index, uint64_t size,
			uint8_t (**out)[AL_DIGEST_LEN], size_t *nout, struct al_error *err)
{
	struct al_db *db;
	uint64_t n;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0 || (r = ledger_size(db, &n, err)) < 0)
		return r;
	if (size == 0 || size > n || index >= size)
		return al_fail(err, AL_EINVAL, 0, "no entry %llu in a tree of size %llu",
			       (unsigned long long)index, (unsigned long long)size);
	struct al_merkle_store t = { tree_subtree, db };
	return al_merkle__inclusion(&t, index, size, out, nout, err);
}

int al_ledger_consistency(struct al_store *st, uint64_t size1, uint64_t size2,
			  uint8_t (**out)[AL_DIGEST_LEN], size_t *nout, struct al_error *err)
{
	struct al_db *db;
	uint64_t n;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0 || (r = ledger_size(db, &n, err)) < 0)
		return r;
	if (size1 == 0 || size1 > size2 || size2 > n)
		return al_fail(err, AL_EINVAL, 0, "bad sizes %llu, %llu for a tree of %llu",
			       (unsigned long long)size1, (unsigned long long)size2,
			       (unsigned long long)n);
	struct al_merkle_store t = { tree_subtree, db };
	return al_merkle__consistency(&t, size1, size2, out, nout, err);
}

int al_ledger_append_batch(struct al_store *st, const char *kind, const char *group,
			   const char *const *data_json, size_t n, struct al_error *err)
{
	struct al_db *db;
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	int r = al_store__meta_db(st, &db, err);
	if (r < 0 || (r = al_db_begin(db, AL_DB_WRITE, &txn, err)) < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		json_error_t je;
		json_t *d = json_loads(data_json[i], 0, &je);
		if (!json_is_object(d)) {
			json_decref(d);
			r = al_fail(err, AL_EINVAL, 0, "entry %zu: data is not a JSON object", i);
			break;
		}
		struct al_ledger_rec rec = { .kind = kind, .group = group, .data = d };
		r = append(st, db, &rec, NULL, err);
		json_decref(d);
	}
	return al_ledger__commit(st, &txn, r, err);
}

int al_ledger__append_txn(struct al_store *st, struct al_db_txn *txn,
			  const struct al_ledger_rec *rec, uint64_t *seq, struct al_error *err)
{
	if (!txn->open)
		return al_fail(err, AL_EUSAGE, 0, "ledger: not in a write transaction");
	return append(st, txn->db, rec, seq, err);
}

int al_ledger__append_db(struct al_store *st, struct al_db *db, const struct al_ledger_rec *rec,
			 uint64_t *seq, struct al_error *err)
{
	return append(st, db, rec, seq, err);
}

int al_ledger__commit(struct al_store *st, struct al_db_txn *txn, int r, struct al_error *err)
{
	if (r == 0)
		r = txn->open ? seal(st, txn->db, err)
			      : al_fail(err, AL_EUSAGE, 0, "ledger: not in a write transaction");
	if (r < 0) {
		al_db_rollback(txn);
		return r;
	}
	return al_db_commit(txn, err);
}

int al_ledger_pubkey(struct al_store *st, uint8_t raw[AL_ED25519_KEY_LEN], char *pem, size_t pemsz,
		     struct al_error *err)
{
	EVP_PKEY *key = NULL;
	int r = al_store__ledger_key(st, &key, err);
	if (r < 0)
		return r;
	size_t len = AL_ED25519_KEY_LEN;
	if (EVP_PKEY_get_raw_public_key(key, raw, &len) <= 0 || len != AL_ED25519_KEY_LEN)
		return al_fail(err, AL_EIO, 0, "ledger: cannot read the public key");
	if (pem) {
		BIO *b = BIO_new(BIO_s_mem());
		char *p = NULL;
		long n = b && PEM_write_bio_PUBKEY(b, key) ? BIO_get_mem_data(b, &p) : -1;
		if (n < 0 || (size_t)n >= pemsz)
			r = al_fail(err, AL_EIO, 0, "ledger: cannot write the public key");
		else {
			memcpy(pem, p, (size_t)n);
			pem[n] = 0;
		}
		BIO_free(b);
	}
	return r;
}

/* ---- export (the format: ledger_export.h) -------------------------------------- */

static int write_blob(FILE *f, struct al_cas *cas, const char *id, struct al_error *err)
{
	struct al_oid d;
	if (al_oid_parse(id, &d, err) < 0)
		return AL_EINVAL;
	uint8_t *data = NULL;
	size_t len = 0;
	int r = al_cas_get(cas, &d, &data, &len, err);
	if (r == AL_ENOTFOUND)
		return 0; /* named but not stored: the verifier reports it as not included */
	if (r < 0)
		return r;
	char *b64 = malloc(4 * ((len + 2) / 3) + 1);
	if (!b64) {
		free(data);
		return al_fail(err, AL_ENOMEM, ENOMEM, "export");
	}
	EVP_EncodeBlock((unsigned char *)b64, data, (int)len);
	char hex[65];
	al_hex(d.b, AL_OID_LEN, hex);
	fprintf(f, "B %s %s\n", hex, b64);
	free(b64);
	free(data);
	return 0;
}

struct exp_ctx {
	FILE *f;
	struct al_cas *cas;
	struct al_db_stmt *cp;
	int r;
};

static int export_one(void *ctx, const struct al_ledger_entry *e, struct al_error *err)
{
	struct exp_ctx *x = ctx;
	fputs("E ", x->f);
	fwrite(e->json, 1, e->len, x->f);
	fputc('\n', x->f);
	json_t *j = json_loadb(e->json, e->len, 0, NULL);
	json_t *content = json_object_get(json_object_get(j, "data"), "content");
	size_t i;
	json_t *c;
	int r = 0;
	json_array_foreach(content, i, c) {
		const char *id = json_string_value(json_object_get(c, "sha256"));
		if (id && (r = write_blob(x->f, x->cas, id, err)) < 0)
			break;
	}
	json_decref(j);
	if (r < 0)
		return r;
	al_db_reset(x->cp);
	al_db_bind_int64(x->cp, 1, (int64_t)e->seq + 1);
	if ((r = al_db_step(x->cp, err)) < 0)
		return al_error_prefix(err, "checkpoint: ");
	if (r == AL_DB_ROW) {
		struct al_checkpoint cp;
		char line[400];
		if (read_checkpoint(x->cp, &cp) < 0)
			return al_fail(err, AL_ECORRUPT, 0, "checkpoint %llu is malformed",
				       (unsigned long long)e->seq + 1);
		char root[65], sig[129];
		al_hex(cp.root, AL_DIGEST_LEN, root);
		al_hex(cp.sig, AL_ED25519_SIG_LEN, sig);
		snprintf(line, sizeof(line), "C %llu %s %lld %s\n", (unsigned long long)cp.size,
			 root, (long long)cp.time, sig);
		fputs(line, x->f);
	}
	return 0;
}

int al_ledger_export(struct al_store *st, uint64_t from, const char *path, uint64_t *entries_out,
		     struct al_error *err)
{
	struct al_db *db;
	uint64_t n;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0 || (r = ledger_size(db, &n, err)) < 0)
		return r;
	if (from > n)
		return al_fail(err, AL_EINVAL, 0,
			       "no checkpoint at size %llu (the ledger has %llu entries)",
			       (unsigned long long)from, (unsigned long long)n);
	uint8_t raw[AL_ED25519_KEY_LEN];
	if ((r = al_ledger_pubkey(st, raw, NULL, 0, err)) < 0)
		return r;
	/* a consistent view: one read transaction for the whole export */
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	if ((r = al_db_begin(db, AL_DB_READ, &txn, err)) < 0)
		return r;
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", path);
	int fd = mkostemp(tmp, O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return al_fail(err, AL_EIO, errno, "create %s", tmp);
	}
	char origin[80], hex[65];
	origin_of(st, origin, sizeof(origin));
	al_hex(raw, AL_ED25519_KEY_LEN, hex);
	fprintf(f, AL_LEDGER_EXPORT_MAGIC "\norigin %s\npubkey %s\n", origin, hex);
	/* the prefix as complete subtrees, largest first */
	uint64_t lo = 0;
	for (int level = 63; level >= 0 && r == 0; level--) {
		if (!(from & (1ull << level)))
			continue;
		uint8_t h[AL_DIGEST_LEN];
		if ((r = tree_get(db, (unsigned)level, lo >> level, h, err)) == 0) {
			al_hex(h, AL_DIGEST_LEN, hex);
			fprintf(f, "R %d %s\n", level, hex);
		}
		lo += 1ull << level;
	}
	struct exp_ctx x = { .f = f, .cas = al_store_cas(st) };
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	if (r == 0)
		r = al_db_prepare(db,
				  "SELECT size, root, time, origin, signature FROM checkpoints "
				  "WHERE size = ?1",
				  &x.cp, err);
	if (r == 0)
		r = al_db_prepare(db,
				  "SELECT seq, kind, grp, project, time, entry FROM ledger "
				  "WHERE seq >= ?1 ORDER BY seq",
				  &q, err);
	if (r == 0) {
		al_db_bind_int64(q, 1, (int64_t)from);
		r = run_query(q, export_one, &x, err);
	}
	al_db_finalize(x.cp);
	al_db_rollback(&txn); /* it read only */
	fprintf(f, "end %llu\n", (unsigned long long)(n - from));
	if (r == 0 && (fflush(f) != 0 || fsync(fileno(f)) < 0))
		r = al_fail(err, AL_EIO, errno, "write %s", tmp);
	fclose(f);
	if (r == 0 && rename(tmp, path) < 0)
		r = al_fail(err, AL_EIO, errno, "rename to %s", path);
	if (r < 0)
		unlink(tmp);
	else if (entries_out)
		*entries_out = n - from;
	return r;
}
