/* ledger: append-only Merkle log per tenant with signed checkpoints
 * (include/airlock/ledger.h, docs/formats.md "Audit ledger"). */
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
#include "ledger_private.h"
#include "sqlite_util.h"
#include "store_private.h"
#include "util.h"

#define JSON_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)
#define EXPORT_MAGIC "airlock-ledger-export 1"

/* ---- RFC 6962 hashing ------------------------------------------------------ */

void al_merkle_leaf(const void *entry, size_t len, uint8_t out[32])
{
	struct al_sha *s = al_sha_new();
	uint8_t z = 0;
	al_sha_update(s, &z, 1);
	al_sha_update(s, entry, len);
	al_sha_final(s, out);
	al_sha_free(s);
}

void al_merkle_node(const uint8_t l[32], const uint8_t r[32], uint8_t out[32])
{
	uint8_t buf[65];
	buf[0] = 1;
	memcpy(buf + 1, l, 32);
	memcpy(buf + 33, r, 32);
	al_sha256(buf, sizeof(buf), out);
}

static uint64_t split(uint64_t n) /* largest power of two < n (n >= 2) */
{
	uint64_t k = 1;
	while (k << 1 < n)
		k <<= 1;
	return k;
}

static void mth_mem(const uint8_t (*l)[32], size_t n, uint8_t out[32])
{
	if (n == 1) {
		memcpy(out, l[0], 32);
		return;
	}
	uint64_t k = split(n);
	uint8_t a[32], b[32];
	mth_mem(l, k, a);
	mth_mem(l + k, n - k, b);
	al_merkle_node(a, b, out);
}

void al_merkle_root(const uint8_t (*leaves)[32], size_t n, uint8_t out[32])
{
	if (n == 0) {
		al_sha256("", 0, out);
		return;
	}
	mth_mem(leaves, n, out);
}

bool al_merkle_verify_inclusion(uint64_t index, uint64_t size, const uint8_t leaf[32], const uint8_t (*proof)[32],
				size_t nproof, const uint8_t root[32])
{
	if (index >= size)
		return false;
	uint64_t fn = index, sn = size - 1;
	uint8_t r[32];
	memcpy(r, leaf, 32);
	for (size_t i = 0; i < nproof; i++) {
		if (sn == 0)
			return false;
		if ((fn & 1) || fn == sn) {
			al_merkle_node(proof[i], r, r);
			while (!(fn & 1) && fn != 0) {
				fn >>= 1;
				sn >>= 1;
			}
		} else {
			al_merkle_node(r, proof[i], r);
		}
		fn >>= 1;
		sn >>= 1;
	}
	return sn == 0 && memcmp(r, root, 32) == 0;
}

bool al_merkle_verify_consistency(uint64_t size1, uint64_t size2, const uint8_t root1[32], const uint8_t root2[32],
				  const uint8_t (*proof)[32], size_t nproof)
{
	if (size1 == 0 || size1 > size2)
		return false;
	if (size1 == size2)
		return nproof == 0 && memcmp(root1, root2, 32) == 0;
	bool pow2 = (size1 & (size1 - 1)) == 0;
	size_t n = nproof + (pow2 ? 1 : 0);
	if (n == 0)
		return false;
	const uint8_t(*p)[32] = proof;
	uint8_t fr[32], sr[32];
	size_t i = 0;
	if (pow2) {
		memcpy(fr, root1, 32);
	} else {
		memcpy(fr, p[0], 32);
		i = 1;
	}
	memcpy(sr, fr, 32);
	uint64_t fn = size1 - 1, sn = size2 - 1;
	while (fn & 1) {
		fn >>= 1;
		sn >>= 1;
	}
	for (; i < nproof; i++) {
		if (sn == 0)
			return false;
		if ((fn & 1) || fn == sn) {
			al_merkle_node(p[i], fr, fr);
			al_merkle_node(p[i], sr, sr);
			while (!(fn & 1) && fn != 0) {
				fn >>= 1;
				sn >>= 1;
			}
		} else {
			al_merkle_node(sr, p[i], sr);
		}
		fn >>= 1;
		sn >>= 1;
	}
	return sn == 0 && memcmp(fr, root1, 32) == 0 && memcmp(sr, root2, 32) == 0;
}

/* ---- the stored tree --------------------------------------------------------
 * ledger_tree(level, idx, hash): the hash of every complete, aligned subtree
 * [idx*2^level, (idx+1)*2^level).  A root or a proof needs O(log n) of them. */

static int tree_get(sqlite3 *db, unsigned level, uint64_t idx, uint8_t out[32], struct al_error *err)
{
	_cleanup_sqlite_stmt_ sqlite3_stmt *st = NULL;
	int r = al_sqlite_prepare(db, "SELECT hash FROM ledger_tree WHERE level = ? AND idx = ?", &st, err);
	if (r < 0)
		return r;
	sqlite3_bind_int(st, 1, (int)level);
	sqlite3_bind_int64(st, 2, (int64_t)idx);
	if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_bytes(st, 0) != 32)
		return al_fail(err, AL_ECORRUPT, 0, "ledger: tree node %u/%llu missing", level, (unsigned long long)idx);
	memcpy(out, sqlite3_column_blob(st, 0), 32);
	return 0;
}

static int tree_put(sqlite3 *db, unsigned level, uint64_t idx, const uint8_t h[32], struct al_error *err)
{
	_cleanup_sqlite_stmt_ sqlite3_stmt *st = NULL;
	int r = al_sqlite_prepare(db, "INSERT INTO ledger_tree(level, idx, hash) VALUES (?,?,?)", &st, err);
	if (r < 0)
		return r;
	sqlite3_bind_int(st, 1, (int)level);
	sqlite3_bind_int64(st, 2, (int64_t)idx);
	sqlite3_bind_blob(st, 3, h, 32, SQLITE_STATIC);
	return sqlite3_step(st) == SQLITE_DONE ? 0 : al_sqlite_fail(db, err, "ledger tree");
}

/* MTH(D[lo:hi]) from stored complete subtrees */
static int mth_db(sqlite3 *db, uint64_t lo, uint64_t hi, uint8_t out[32], struct al_error *err)
{
	uint64_t n = hi - lo;
	if ((n & (n - 1)) == 0 && lo % n == 0) {
		unsigned level = 0;
		while ((1ull << level) < n)
			level++;
		return tree_get(db, level, lo >> level, out, err);
	}
	uint64_t k = split(n);
	uint8_t a[32], b[32];
	int r = mth_db(db, lo, lo + k, a, err);
	if (r == 0)
		r = mth_db(db, lo + k, hi, b, err);
	if (r == 0)
		al_merkle_node(a, b, out);
	return r;
}

static int ledger_size(sqlite3 *db, uint64_t *n, struct al_error *err)
{
	_cleanup_sqlite_stmt_ sqlite3_stmt *st = NULL;
	int r = al_sqlite_prepare(db, "SELECT COALESCE(MAX(seq) + 1, 0) FROM ledger", &st, err);
	if (r < 0)
		return r;
	if (sqlite3_step(st) != SQLITE_ROW)
		return al_sqlite_fail(db, err, "ledger");
	*n = (uint64_t)sqlite3_column_int64(st, 0);
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

int al_ledger__append(struct al_store *st, sqlite3 *db, const struct al_ledger_rec *rec, uint64_t *seq_out,
		      struct al_error *err)
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
	json_t *e = json_pack("{s:i,s:I,s:s,s:s,s:I,s:s,s:s,s:O}", "v", 1, "seq", (json_int_t)seq, "kind", rec->kind,
			      "group", rec->group, "time", (json_int_t)now, "tenant", al_store_tenant(st), "actor",
			      rec->actor ? rec->actor : "", "data", rec->data ? rec->data : json_object());
	if (!e)
		return al_fail(err, AL_ENOMEM, ENOMEM, "ledger");
	json_object_set_new(e, "project", rec->project ? json_string(rec->project) : json_null());
	char *enc = json_dumps(e, JSON_FLAGS);
	json_decref(e);
	if (!enc)
		return al_fail(err, AL_ENOMEM, ENOMEM, "ledger");
	uint8_t leaf[32];
	al_merkle_leaf(enc, strlen(enc), leaf);
	_cleanup_sqlite_stmt_ sqlite3_stmt *ins = NULL;
	r = al_sqlite_prepare(db, "INSERT INTO ledger(seq, kind, grp, project, time, entry, leaf) VALUES (?,?,?,?,?,?,?)",
			      &ins, err);
	if (r == 0) {
		sqlite3_bind_int64(ins, 1, (int64_t)seq);
		sqlite3_bind_text(ins, 2, rec->kind, -1, SQLITE_STATIC);
		sqlite3_bind_text(ins, 3, rec->group, -1, SQLITE_STATIC);
		if (rec->project)
			sqlite3_bind_text(ins, 4, rec->project, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(ins, 4);
		sqlite3_bind_int64(ins, 5, now);
		sqlite3_bind_blob(ins, 6, enc, (int)strlen(enc), SQLITE_STATIC);
		sqlite3_bind_blob(ins, 7, leaf, 32, SQLITE_STATIC);
		if (sqlite3_step(ins) != SQLITE_DONE)
			r = al_sqlite_fail(db, err, "ledger append");
	}
	free(enc);
	/* complete the subtrees this leaf closes */
	uint8_t h[32];
	memcpy(h, leaf, 32);
	if (r == 0)
		r = tree_put(db, 0, seq, h, err);
	for (unsigned level = 1; r == 0 && ((seq + 1) & ((1ull << level) - 1)) == 0; level++) {
		uint8_t left[32];
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

int al_checkpoint_note(const struct al_checkpoint *c, char *out, size_t outsz)
{
	char root[65];
	al_hex(c->root, 32, root);
	int n = snprintf(out, outsz, "airlock-ledger checkpoint v1\norigin %s\nsize %llu\nroot %s\ntime %lld\n",
			 c->origin, (unsigned long long)c->size, root, (long long)c->time);
	return n < 0 || (size_t)n >= outsz ? -1 : n;
}

static void origin_of(struct al_store *st, char *out, size_t n)
{
	snprintf(out, n, "airlock/%s", al_store_tenant(st));
}

int al_ledger__seal(struct al_store *st, sqlite3 *db, struct al_error *err)
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
	    EVP_DigestSign(ctx, c.sig, &siglen, (const uint8_t *)note, (size_t)nl) <= 0 || siglen != 64)
		r = al_fail(err, AL_EIO, 0, "ledger: signing failed");
	EVP_MD_CTX_free(ctx);
	if (r < 0)
		return r;
	_cleanup_sqlite_stmt_ sqlite3_stmt *ins = NULL;
	if ((r = al_sqlite_prepare(db, "INSERT OR REPLACE INTO checkpoints(size, root, time, origin, signature) "
				       "VALUES (?,?,?,?,?)", &ins, err)) < 0)
		return r;
	sqlite3_bind_int64(ins, 1, (int64_t)c.size);
	sqlite3_bind_blob(ins, 2, c.root, 32, SQLITE_STATIC);
	sqlite3_bind_int64(ins, 3, c.time);
	sqlite3_bind_text(ins, 4, c.origin, -1, SQLITE_STATIC);
	sqlite3_bind_blob(ins, 5, c.sig, 64, SQLITE_STATIC);
	return sqlite3_step(ins) == SQLITE_DONE ? 0 : al_sqlite_fail(db, err, "checkpoint");
}

static int read_checkpoint(sqlite3_stmt *q, struct al_checkpoint *c)
{
	memset(c, 0, sizeof(*c));
	c->size = (uint64_t)sqlite3_column_int64(q, 0);
	if (sqlite3_column_bytes(q, 1) != 32 || sqlite3_column_bytes(q, 4) != 64)
		return -1;
	memcpy(c->root, sqlite3_column_blob(q, 1), 32);
	c->time = sqlite3_column_int64(q, 2);
	const unsigned char *o = sqlite3_column_text(q, 3);
	snprintf(c->origin, sizeof(c->origin), "%s", o ? (const char *)o : "");
	memcpy(c->sig, sqlite3_column_blob(q, 4), 64);
	return 0;
}

int al_ledger_checkpoint(struct al_store *st, struct al_checkpoint *out, struct al_error *err)
{
	sqlite3 *db;
	int r = al_store__meta(st, &db, err);
	if (r < 0)
		return r;
	_cleanup_sqlite_stmt_ sqlite3_stmt *q = NULL;
	if ((r = al_sqlite_prepare(db, "SELECT size, root, time, origin, signature FROM checkpoints ORDER BY size DESC LIMIT 1",
				   &q, err)) < 0)
		return r;
	if (sqlite3_step(q) != SQLITE_ROW)
		return al_fail(err, AL_ENOTFOUND, 0, "the ledger is empty: no checkpoint yet");
	if (read_checkpoint(q, out) < 0)
		return al_fail(err, AL_ECORRUPT, 0, "checkpoint %lld is malformed", (long long)sqlite3_column_int64(q, 0));
	return 0;
}

int al_checkpoint_format(const struct al_checkpoint *c, char *out, size_t outsz)
{
	char root[65], sig[129];
	al_hex(c->root, 32, root);
	al_hex(c->sig, 64, sig);
	int n = snprintf(out, outsz, "%s %llu %s %lld %s", c->origin, (unsigned long long)c->size, root, (long long)c->time, sig);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

int al_checkpoint_parse(const char *line, struct al_checkpoint *c, struct al_error *err)
{
	memset(c, 0, sizeof(*c));
	char origin[80], root[80], sig[160];
	unsigned long long size;
	long long t;
	if (sscanf(line, "%79s %llu %79s %lld %159s", origin, &size, root, &t, sig) != 5 || strlen(root) != 64 ||
	    strlen(sig) != 128 || al_unhex(root, 32, c->root) < 0 || al_unhex(sig, 64, c->sig) < 0)
		return al_fail(err, AL_EINVAL, 0, "not a checkpoint line (origin size root time signature)");
	snprintf(c->origin, sizeof(c->origin), "%s", origin);
	c->size = size;
	c->time = t;
	return 0;
}

static bool sig_ok(EVP_PKEY *key, const struct al_checkpoint *c)
{
	char note[512];
	int n = al_checkpoint_note(c, note, sizeof(note));
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	bool ok = ctx && n > 0 && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key) > 0 &&
		  EVP_DigestVerify(ctx, c->sig, 64, (const uint8_t *)note, (size_t)n) == 1;
	EVP_MD_CTX_free(ctx);
	return ok;
}

/* ---- reading ---------------------------------------------------------------- */

static int run_query(sqlite3 *db, sqlite3_stmt *q, al_ledger_fn fn, void *ctx, struct al_error *err)
{
	int rc, r;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct al_ledger_entry e = {
			.seq = (uint64_t)sqlite3_column_int64(q, 0),
			.kind = (const char *)sqlite3_column_text(q, 1),
			.group = (const char *)sqlite3_column_text(q, 2),
			.project = (const char *)sqlite3_column_text(q, 3),
			.time = sqlite3_column_int64(q, 4),
			.json = sqlite3_column_blob(q, 5),
			.len = (size_t)sqlite3_column_bytes(q, 5),
		};
		if ((r = fn(ctx, &e, err)) != 0)
			return r;
	}
	return rc == SQLITE_DONE ? 0 : al_sqlite_fail(db, err, "ledger");
}

int al_ledger_foreach(struct al_store *st, const struct al_ledger_query *qy, al_ledger_fn fn, void *ctx,
		      struct al_error *err)
{
	sqlite3 *db;
	int r = al_store__meta(st, &db, err);
	if (r < 0)
		return r;
	_cleanup_sqlite_stmt_ sqlite3_stmt *q = NULL;
	if ((r = al_sqlite_prepare(db, "SELECT seq, kind, grp, project, time, entry FROM ledger WHERE "
				       "(?1 IS NULL OR grp = ?1) AND (?2 IS NULL OR project = ?2) AND "
				       "(?3 IS NULL OR kind = ?3) AND time >= ?4 ORDER BY seq", &q, err)) < 0)
		return r;
	if (qy && qy->group)
		sqlite3_bind_text(q, 1, qy->group, -1, SQLITE_STATIC);
	if (qy && qy->project)
		sqlite3_bind_text(q, 2, qy->project, -1, SQLITE_STATIC);
	if (qy && qy->kind)
		sqlite3_bind_text(q, 3, qy->kind, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 4, qy ? qy->since : 0);
	return run_query(db, q, fn, ctx, err);
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

int al_ledger_get(struct al_store *st, uint64_t seq, al_ledger_fn fn, void *ctx, struct al_error *err)
{
	sqlite3 *db;
	int r = al_store__meta(st, &db, err);
	if (r < 0)
		return r;
	_cleanup_sqlite_stmt_ sqlite3_stmt *q = NULL;
	if ((r = al_sqlite_prepare(db, "SELECT seq, kind, grp, project, time, entry FROM ledger WHERE seq = ?", &q, err)) < 0)
		return r;
	sqlite3_bind_int64(q, 1, (int64_t)seq);
	struct get_ctx g = { fn, ctx, 0 };
	if ((r = run_query(db, q, get_one, &g, err)) < 0)
		return r;
	return g.n ? 0 : al_fail(err, AL_ENOTFOUND, 0, "no ledger entry %llu", (unsigned long long)seq);
}

int al_ledger_root(struct al_store *st, uint64_t size, uint8_t out[32], struct al_error *err)
{
	sqlite3 *db;
	uint64_t n;
	int r = al_store__meta(st, &db, err);
	if (r < 0 || (r = ledger_size(db, &n, err)) < 0)
		return r;
	if (size == 0 || size > n)
		return al_fail(err, AL_EINVAL, 0, "tree size %llu outside 1..%llu", (unsigned long long)size,
			       (unsigned long long)n);
	return mth_db(db, 0, size, out, err);
}

struct proof {
	uint8_t (*v)[32];
	size_t n, cap;
};

static int proof_add(struct proof *p, const uint8_t h[32], struct al_error *err)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		uint8_t(*v)[32] = realloc(p->v, cap * 32);
		if (!v)
			return al_fail(err, AL_ENOMEM, ENOMEM, "proof");
		p->v = v;
		p->cap = cap;
	}
	memcpy(p->v[p->n++], h, 32);
	return 0;
}

/* RFC 6962 PATH(m, D[lo:hi]) */
static int path(sqlite3 *db, uint64_t m, uint64_t lo, uint64_t hi, struct proof *p, struct al_error *err)
{
	uint64_t n = hi - lo;
	if (n <= 1)
		return 0;
	uint64_t k = split(n);
	uint8_t h[32];
	int r;
	if (m < k) {
		if ((r = path(db, m, lo, lo + k, p, err)) < 0 || (r = mth_db(db, lo + k, hi, h, err)) < 0)
			return r;
	} else {
		if ((r = path(db, m - k, lo + k, hi, p, err)) < 0 || (r = mth_db(db, lo, lo + k, h, err)) < 0)
			return r;
	}
	return proof_add(p, h, err);
}

/* RFC 6962 SUBPROOF(m, D[lo:hi], b) */
static int subproof(sqlite3 *db, uint64_t m, uint64_t lo, uint64_t hi, bool b, struct proof *p, struct al_error *err)
{
	uint64_t n = hi - lo;
	uint8_t h[32];
	int r;
	if (m == n) {
		if (b)
			return 0;
		return (r = mth_db(db, lo, hi, h, err)) < 0 ? r : proof_add(p, h, err);
	}
	uint64_t k = split(n);
	if (m <= k) {
		if ((r = subproof(db, m, lo, lo + k, b, p, err)) < 0 || (r = mth_db(db, lo + k, hi, h, err)) < 0)
			return r;
	} else {
		if ((r = subproof(db, m - k, lo + k, hi, false, p, err)) < 0 || (r = mth_db(db, lo, lo + k, h, err)) < 0)
			return r;
	}
	return proof_add(p, h, err);
}

int al_ledger_inclusion(struct al_store *st, uint64_t index, uint64_t size, uint8_t (**out)[32], size_t *nout,
			struct al_error *err)
{
	sqlite3 *db;
	uint64_t n;
	int r = al_store__meta(st, &db, err);
	if (r < 0 || (r = ledger_size(db, &n, err)) < 0)
		return r;
	if (size == 0 || size > n || index >= size)
		return al_fail(err, AL_EINVAL, 0, "no entry %llu in a tree of size %llu", (unsigned long long)index,
			       (unsigned long long)size);
	struct proof p = { 0 };
	if ((r = path(db, index, 0, size, &p, err)) < 0) {
		free(p.v);
		return r;
	}
	*out = p.v;
	*nout = p.n;
	return 0;
}

int al_ledger_consistency(struct al_store *st, uint64_t size1, uint64_t size2, uint8_t (**out)[32], size_t *nout,
			  struct al_error *err)
{
	sqlite3 *db;
	uint64_t n;
	int r = al_store__meta(st, &db, err);
	if (r < 0 || (r = ledger_size(db, &n, err)) < 0)
		return r;
	if (size1 == 0 || size1 > size2 || size2 > n)
		return al_fail(err, AL_EINVAL, 0, "bad sizes %llu, %llu for a tree of %llu", (unsigned long long)size1,
			       (unsigned long long)size2, (unsigned long long)n);
	struct proof p = { 0 };
	if (size1 < size2 && (r = subproof(db, size1, 0, size2, true, &p, err)) < 0) {
		free(p.v);
		return r;
	}
	*out = p.v;
	*nout = p.n;
	return 0;
}

int al_ledger_append_batch(struct al_store *st, const char *kind, const char *group, const char *const *data_json,
			   size_t n, struct al_error *err)
{
	sqlite3 *db;
	int r = al_store__meta(st, &db, err);
	if (r < 0 || (r = al_sqlite_exec(db, "BEGIN IMMEDIATE", err)) < 0)
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
		r = al_ledger__append(st, db, &rec, NULL, err);
		json_decref(d);
	}
	return al_ledger__finish(st, db, r, err);
}

int al_ledger__finish(struct al_store *st, sqlite3 *db, int r, struct al_error *err)
{
	if (r == 0)
		r = al_ledger__seal(st, db, err);
	if (r < 0) {
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return r;
	}
	return al_sqlite_exec(db, "COMMIT", err);
}

int al_ledger_pubkey(struct al_store *st, uint8_t raw[32], char *pem, size_t pemsz, struct al_error *err)
{
	EVP_PKEY *key = NULL;
	int r = al_store__ledger_key(st, &key, err);
	if (r < 0)
		return r;
	size_t len = 32;
	if (EVP_PKEY_get_raw_public_key(key, raw, &len) <= 0 || len != 32)
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

/* ---- export -------------------------------------------------------------------
 * A line-oriented text file (docs/formats.md):
 *   airlock-ledger-export 1 | origin O | pubkey HEX | R LEVEL HEX (the prefix
 *   before the first entry, as complete subtrees) | E <entry> | B <sha256
 *   hex> <base64> | C SIZE ROOT TIME SIG | end N */

static int write_blob(FILE *f, struct al_cas *cas, const char *id, struct al_error *err)
{
	uint8_t d[32];
	if (al_id_parse(id, d, err) < 0)
		return AL_EINVAL;
	uint8_t *data = NULL;
	size_t len = 0;
	int r = al_cas_get(cas, d, &data, &len, err);
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
	al_hex(d, 32, hex);
	fprintf(f, "B %s %s\n", hex, b64);
	free(b64);
	free(data);
	return 0;
}

struct exp_ctx {
	FILE *f;
	sqlite3 *db;
	struct al_cas *cas;
	sqlite3_stmt *cp;
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
	json_array_foreach(content, i, c)
	{
		const char *id = json_string_value(json_object_get(c, "sha256"));
		if (id && (r = write_blob(x->f, x->cas, id, err)) < 0)
			break;
	}
	json_decref(j);
	if (r < 0)
		return r;
	sqlite3_reset(x->cp);
	sqlite3_bind_int64(x->cp, 1, (int64_t)e->seq + 1);
	if (sqlite3_step(x->cp) == SQLITE_ROW) {
		struct al_checkpoint cp;
		char line[400];
		if (read_checkpoint(x->cp, &cp) < 0)
			return al_fail(err, AL_ECORRUPT, 0, "checkpoint %llu is malformed", (unsigned long long)e->seq + 1);
		char root[65], sig[129];
		al_hex(cp.root, 32, root);
		al_hex(cp.sig, 64, sig);
		snprintf(line, sizeof(line), "C %llu %s %lld %s\n", (unsigned long long)cp.size, root, (long long)cp.time, sig);
		fputs(line, x->f);
	}
	return 0;
}

int al_ledger_export(struct al_store *st, uint64_t from, const char *path, uint64_t *entries_out, struct al_error *err)
{
	sqlite3 *db;
	uint64_t n;
	int r = al_store__meta(st, &db, err);
	if (r < 0 || (r = ledger_size(db, &n, err)) < 0)
		return r;
	if (from > n)
		return al_fail(err, AL_EINVAL, 0, "no checkpoint at size %llu (the ledger has %llu entries)",
			       (unsigned long long)from, (unsigned long long)n);
	uint8_t raw[32];
	if ((r = al_ledger_pubkey(st, raw, NULL, 0, err)) < 0)
		return r;
	/* a consistent view: one read transaction for the whole export */
	if ((r = al_sqlite_exec(db, "BEGIN", err)) < 0)
		return r;
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", path);
	int fd = mkostemp(tmp, O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return al_fail(err, AL_EIO, errno, "create %s", tmp);
	}
	char origin[80], hex[65];
	origin_of(st, origin, sizeof(origin));
	al_hex(raw, 32, hex);
	fprintf(f, EXPORT_MAGIC "\norigin %s\npubkey %s\n", origin, hex);
	/* the prefix as complete subtrees, largest first */
	uint64_t lo = 0;
	for (int level = 63; level >= 0 && r == 0; level--) {
		if (!(from & (1ull << level)))
			continue;
		uint8_t h[32];
		if ((r = tree_get(db, (unsigned)level, lo >> level, h, err)) == 0) {
			al_hex(h, 32, hex);
			fprintf(f, "R %d %s\n", level, hex);
		}
		lo += 1ull << level;
	}
	struct exp_ctx x = { .f = f, .db = db, .cas = al_store_cas(st) };
	_cleanup_sqlite_stmt_ sqlite3_stmt *q = NULL;
	if (r == 0)
		r = al_sqlite_prepare(db, "SELECT size, root, time, origin, signature FROM checkpoints WHERE size = ?", &x.cp, err);
	if (r == 0)
		r = al_sqlite_prepare(db, "SELECT seq, kind, grp, project, time, entry FROM ledger WHERE seq >= ? ORDER BY seq",
				      &q, err);
	if (r == 0) {
		sqlite3_bind_int64(q, 1, (int64_t)from);
		r = run_query(db, q, export_one, &x, err);
	}
	sqlite3_finalize(x.cp);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
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

/* ---- offline verification ------------------------------------------------------ */

struct range { /* complete subtrees of the prefix read so far, left to right */
	uint8_t h[64][32];
	unsigned level[64];
	int n;
	uint64_t size;
};

static void range_push(struct range *g, const uint8_t h[32], unsigned level)
{
	memcpy(g->h[g->n], h, 32);
	g->level[g->n++] = level;
	g->size += 1ull << level;
	while (g->n >= 2 && g->level[g->n - 1] == g->level[g->n - 2]) {
		al_merkle_node(g->h[g->n - 2], g->h[g->n - 1], g->h[g->n - 2]);
		g->level[g->n - 2]++;
		g->n--;
	}
}

static void range_root(const struct range *g, uint8_t out[32])
{
	memcpy(out, g->h[g->n - 1], 32);
	for (int i = g->n - 2; i >= 0; i--)
		al_merkle_node(g->h[i], out, out);
}

struct strset {
	char **v;
	size_t n, cap;
};

static bool set_has(const struct strset *s, const char *x)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], x) == 0)
			return true;
	return false;
}

static void set_add(struct strset *s, const char *x)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		char **v = realloc(s->v, cap * sizeof(char *));
		if (!v)
			return;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n] = strdup(x);
	if (s->v[s->n])
		s->n++;
}

static void set_release(struct strset *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

struct verifier {
	struct range g;
	EVP_PKEY *key;
	const struct al_checkpoint *trusted;
	bool trusted_checked;
	uint64_t first, count, last_cp, line;
	struct strset drafts, commits;
	char origin[80];
	struct al_verify_report *rep;
};

static int check_trusted(struct verifier *v, struct al_error *err)
{
	if (!v->trusted || v->trusted_checked || v->g.size != v->trusted->size)
		return 0;
	uint8_t root[32];
	range_root(&v->g, root);
	v->trusted_checked = true;
	if (memcmp(root, v->trusted->root, 32) != 0)
		return al_fail(err, AL_ECORRUPT, 0,
			       "not consistent with the trusted checkpoint: the first %llu entries have another root",
			       (unsigned long long)v->trusted->size);
	return 0;
}

static int verify_entry(struct verifier *v, const char *p, size_t len, struct al_error *err)
{
	json_error_t je;
	json_t *e = json_loadb(p, len, JSON_REJECT_DUPLICATES, &je);
	json_int_t seq = -1, ver = 0;
	const char *kind = NULL;
	json_t *data = NULL;
	int r = 0;
	if (!e || json_unpack(e, "{s:I,s:I,s:s,s:o}", "v", &ver, "seq", &seq, "kind", &kind, "data", &data) < 0 || ver != 1)
		r = al_fail(err, AL_ECORRUPT, 0, "line %llu: entry %llu is not a valid ledger entry",
			    (unsigned long long)v->line, (unsigned long long)(v->first + v->count));
	else if ((uint64_t)seq != v->first + v->count)
		r = al_fail(err, AL_ECORRUPT, 0, "line %llu: expected entry %llu, found entry %lld (missing or reordered)",
			    (unsigned long long)v->line, (unsigned long long)(v->first + v->count), (long long)seq);
	if (r == 0) {
		const char *draft = json_string_value(json_object_get(data, "draft"));
		json_t *cs = json_object_get(data, "commit_seq");
		char key[32];
		if (!strcmp(kind, "draft_create") && draft)
			set_add(&v->drafts, draft);
		else if ((!strcmp(kind, "apply") || !strcmp(kind, "reject")) && draft && v->first == 0 &&
			 !set_has(&v->drafts, draft))
			r = al_fail(err, AL_ECORRUPT, 0, "entry %lld: %s refers to draft %s, which no earlier entry created",
				    (long long)seq, kind, draft);
		if (!strcmp(kind, "commit") || !strcmp(kind, "apply")) {
			snprintf(key, sizeof(key), "%lld", (long long)seq);
			set_add(&v->commits, key);
		}
		if (r == 0 && !strcmp(kind, "conflict") && json_is_integer(cs) && (uint64_t)json_integer_value(cs) >= v->first) {
			snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(cs));
			if (!set_has(&v->commits, key))
				r = al_fail(err, AL_ECORRUPT, 0, "entry %lld: conflict refers to commit entry %s, not found",
					    (long long)seq, key);
		}
	}
	json_decref(e);
	if (r < 0)
		return r;
	uint8_t leaf[32];
	al_merkle_leaf(p, len, leaf);
	range_push(&v->g, leaf, 0);
	v->count++;
	return check_trusted(v, err);
}

static int verify_checkpoint(struct verifier *v, const char *p, struct al_error *err)
{
	struct al_checkpoint c = { 0 };
	char root[80], sig[160];
	unsigned long long size;
	long long t;
	if (sscanf(p, "%llu %79s %lld %159s", &size, root, &t, sig) != 4 || strlen(root) != 64 || strlen(sig) != 128 ||
	    al_unhex(root, 32, c.root) < 0 || al_unhex(sig, 64, c.sig) < 0)
		return al_fail(err, AL_ECORRUPT, 0, "line %llu: malformed checkpoint", (unsigned long long)v->line);
	c.size = size;
	c.time = t;
	snprintf(c.origin, sizeof(c.origin), "%s", v->origin);
	if (c.size > v->g.size)
		return al_fail(err, AL_ECORRUPT, 0, "entry %llu is missing (deleted): checkpoint %llu follows entry %llu",
			       (unsigned long long)v->g.size, size, (unsigned long long)v->g.size - 1);
	if (c.size < v->g.size)
		return al_fail(err, AL_ECORRUPT, 0, "line %llu: checkpoint %llu is out of place (after entry %llu)",
			       (unsigned long long)v->line, size, (unsigned long long)v->g.size - 1);
	uint8_t got[32];
	range_root(&v->g, got);
	if (memcmp(got, c.root, 32) != 0)
		return al_fail(err, AL_ECORRUPT, 0, "checkpoint %llu: the entries %llu..%llu do not hash to its root "
						    "(an entry in that range was changed)",
			       size, (unsigned long long)(v->last_cp > v->first ? v->last_cp : v->first),
			       (unsigned long long)(size - 1));
	if (!sig_ok(v->key, &c))
		return al_fail(err, AL_ECORRUPT, 0, "checkpoint %llu: bad signature (forged, or signed by another key)", size);
	v->last_cp = size;
	v->rep->checkpoints++;
	memcpy(v->rep->root, c.root, 32);
	return 0;
}

static int verify_blob(struct verifier *v, char *p, struct al_error *err)
{
	char *sp = strchr(p, ' ');
	uint8_t want[32], got[32];
	if (!sp || sp - p != 64 || al_unhex(p, 32, want) < 0)
		return al_fail(err, AL_ECORRUPT, 0, "line %llu: malformed content line", (unsigned long long)v->line);
	char *b64 = sp + 1;
	size_t n = strlen(b64);
	uint8_t *raw = malloc(n / 4 * 3 + 3);
	if (!raw)
		return al_fail(err, AL_ENOMEM, ENOMEM, "verify");
	int len = EVP_DecodeBlock(raw, (unsigned char *)b64, (int)n);
	while (len > 0 && n >= 1 && b64[n - 1] == '=') /* DecodeBlock counts padding */
		len--, n--;
	int r = 0;
	if (len < 0)
		r = al_fail(err, AL_ECORRUPT, 0, "line %llu: content is not base64", (unsigned long long)v->line);
	else {
		al_sha256(raw, (size_t)len, got);
		if (memcmp(got, want, 32) != 0)
			r = al_fail(err, AL_ECORRUPT, 0, "line %llu: content sha256:%.64s does not match its bytes",
				    (unsigned long long)v->line, p);
	}
	free(raw);
	v->rep->blobs += r == 0;
	return r;
}

int al_ledger_verify_file(const char *path, const uint8_t *key, const struct al_checkpoint *trusted,
			  struct al_verify_report *rep, struct al_error *err)
{
	struct al_verify_report dummy;
	if (!rep)
		rep = &dummy;
	memset(rep, 0, sizeof(*rep));
	FILE *f = fopen(path, "re");
	if (!f)
		return al_fail(err, errno == ENOENT ? AL_ENOTFOUND : AL_EIO, errno, "open %s", path);
	struct verifier *v = calloc(1, sizeof(*v));
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = v ? 0 : al_fail(err, AL_ENOMEM, ENOMEM, "verify");
	bool header = false, ended = false, seen_entry = false;
	uint8_t export_key[32];
	if (v) {
		v->trusted = trusted;
		v->rep = rep;
	}
	while (r == 0 && (n = getline(&line, &cap, f)) > 0) {
		v->line++;
		if (line[n - 1] == '\n')
			line[--n] = 0;
		if (ended) {
			r = al_fail(err, AL_ECORRUPT, 0, "line %llu: data after the end", (unsigned long long)v->line);
		} else if (v->line == 1) {
			header = strcmp(line, EXPORT_MAGIC) == 0;
			if (!header)
				r = al_fail(err, AL_EINVAL, 0, "%s is not an airlock ledger export", path);
		} else if (!strncmp(line, "origin ", 7)) {
			/* header lines come once, before any entry: a second key
			 * would let a forger switch keys half-way */
			if (v->origin[0] || v->key)
				r = al_fail(err, AL_ECORRUPT, 0, "line %llu: origin repeated or late", (unsigned long long)v->line);
			snprintf(v->origin, sizeof(v->origin), "%s", line + 7);
		} else if (!strncmp(line, "pubkey ", 7)) {
			if (v->key)
				r = al_fail(err, AL_ECORRUPT, 0, "line %llu: a second public key", (unsigned long long)v->line);
			else if (strlen(line + 7) != 64 || al_unhex(line + 7, 32, export_key) < 0)
				r = al_fail(err, AL_ECORRUPT, 0, "line %llu: malformed public key", (unsigned long long)v->line);
			if (r == 0) {
				rep->key_from_export = !key;
				v->key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, key ? key : export_key, 32);
				if (!v->key)
					r = al_fail(err, AL_EINVAL, 0, "bad Ed25519 public key");
			}
		} else if (!strncmp(line, "R ", 2)) {
			unsigned level;
			char hex[80];
			uint8_t h[32];
			if (seen_entry || sscanf(line + 2, "%u %79s", &level, hex) != 2 || level > 62 || strlen(hex) != 64 ||
			    al_unhex(hex, 32, h) < 0)
				r = al_fail(err, AL_ECORRUPT, 0, "line %llu: malformed prefix", (unsigned long long)v->line);
			else {
				memcpy(v->g.h[v->g.n], h, 32);
				v->g.level[v->g.n++] = level;
				v->g.size += 1ull << level;
				v->first = v->g.size;
				rep->first_seq = v->first;
			}
		} else if (!strncmp(line, "E ", 2)) {
			if (!v->key)
				r = al_fail(err, AL_ECORRUPT, 0, "line %llu: entry before the public key", (unsigned long long)v->line);
			else {
				seen_entry = true;
				r = verify_entry(v, line + 2, (size_t)n - 2, err);
			}
		} else if (!strncmp(line, "C ", 2)) {
			r = v->key ? verify_checkpoint(v, line + 2, err)
				   : al_fail(err, AL_ECORRUPT, 0, "checkpoint before the public key");
		} else if (!strncmp(line, "B ", 2)) {
			r = verify_blob(v, line + 2, err);
		} else if (!strncmp(line, "end ", 4)) {
			ended = true;
			if (strtoull(line + 4, NULL, 10) != v->count)
				r = al_fail(err, AL_ECORRUPT, 0, "the export says %s entries, it holds %llu", line + 4,
					    (unsigned long long)v->count);
		} else {
			r = al_fail(err, AL_ECORRUPT, 0, "line %llu: unknown line", (unsigned long long)v->line);
		}
	}
	if (r == 0 && !header)
		r = al_fail(err, AL_EINVAL, 0, "%s is empty", path);
	if (r == 0 && !ended)
		r = al_fail(err, AL_ECORRUPT, 0, "the export is truncated (no end line)");
	if (r == 0 && v->g.size && v->last_cp != v->g.size)
		r = al_fail(err, AL_ECORRUPT, 0, "entries %llu..%llu are not covered by a signed checkpoint",
			    (unsigned long long)(v->last_cp > v->first ? v->last_cp : v->first),
			    (unsigned long long)(v->g.size - 1));
	if (r == 0 && trusted && !v->trusted_checked)
		r = al_fail(err, AL_ECORRUPT, 0, "the export does not reach the trusted checkpoint's size %llu (it ends at %llu)",
			    (unsigned long long)trusted->size, (unsigned long long)v->g.size);
	if (r == 0)
		rep->entries = v->count;
	free(line);
	fclose(f);
	if (v) {
		EVP_PKEY_free(v->key);
		set_release(&v->drafts);
		set_release(&v->commits);
		free(v);
	}
	return r;
}
