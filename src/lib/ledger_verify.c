/* ledger_verify: the offline verifier of a ledger export, what an auditor
 * runs (`airlock audit verify`).  It trusts nothing in the file: it reads
 * the export line by line (format: ledger_export.h), recomputes every leaf
 * and the tree's roots (merkle.c), checks each signed checkpoint against
 * the key (given, or the export's own), the entries' order and their
 * references, and the content blobs' digests, in O(log n) memory.
 * Depends on merkle.c, ledger_entry.c, idset.c, OpenSSL and jansson only:
 * no store, no SQLite. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "airlock/ledger.h"
#include "idset.h"
#include "ledger_export.h"
#include "merkle.h"
#include "util.h"

/* ---- checkpoints: the signed note and the one-line form ---------------------- */

int al_checkpoint_note(const struct al_checkpoint *c, char *out, size_t outsz)
{
	char root[65];
	al_hex(c->root, AL_DIGEST_LEN, root);
	int n = snprintf(out, outsz,
			 "airlock-ledger checkpoint v1\norigin %s\nsize %llu\nroot %s\ntime %lld\n",
			 c->origin, (unsigned long long)c->size, root, (long long)c->time);
	return n < 0 || (size_t)n >= outsz ? -1 : n;
}

int al_checkpoint_format(const struct al_checkpoint *c, char *out, size_t outsz)
{
	char root[65], sig[129];
	al_hex(c->root, AL_DIGEST_LEN, root);
	al_hex(c->sig, AL_ED25519_SIG_LEN, sig);
	int n = snprintf(out, outsz, "%s %llu %s %lld %s", c->origin, (unsigned long long)c->size,
			 root, (long long)c->time, sig);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

int al_checkpoint_parse(const char *line, struct al_checkpoint *c, struct al_error *err)
{
	memset(c, 0, sizeof(*c));
	char origin[80], root[80], sig[160];
	unsigned long long size;
	long long t;
	if (sscanf(line, "%79s %llu %79s %lld %159s", origin, &size, root, &t, sig) != 5 ||
	    strlen(root) != 64 || strlen(sig) != 128 ||
	    al_unhex(root, AL_DIGEST_LEN, c->root) < 0 ||
	    al_unhex(sig, AL_ED25519_SIG_LEN, c->sig) < 0)
		return al_fail(err, AL_EINVAL, 0,
			       "not a checkpoint line (origin size root time signature)");
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
		  EVP_DigestVerify(ctx, c->sig, AL_ED25519_SIG_LEN, (const uint8_t *)note,
				   (size_t)n) == 1;
	EVP_MD_CTX_free(ctx);
	return ok;
}

/* ---- the export ---------------------------------------------------------------- */

struct verifier {
	struct al_merkle_range g;
	EVP_PKEY *key;
	const struct al_checkpoint *trusted;
	bool trusted_checked;
	uint64_t first, count, last_cp, line;
	struct al_idset drafts, commits; /* drafts by sha256 of their id; commits by seq */
	char origin[80];
	struct al_verify_report *rep;
};

static int check_trusted(struct verifier *v, struct al_error *err)
{
	if (!v->trusted || v->trusted_checked || v->g.size != v->trusted->size)
		return 0;
	uint8_t root[AL_DIGEST_LEN];
	al_merkle__range_root(&v->g, root);
	v->trusted_checked = true;
	if (memcmp(root, v->trusted->root, AL_DIGEST_LEN) != 0)
		return al_fail(err, AL_ECORRUPT, 0,
			       "not consistent with the trusted checkpoint: the first %llu entries "
			       "have another root",
			       (unsigned long long)v->trusted->size);
	return 0;
}

/* The keys of the two sets: a draft by the digest of its id, a commit
 * entry by its sequence number (uniform enough for the set's slots). */
static struct al_oid draft_key(const char *draft)
{
	struct al_oid k;
	al_sha256(draft, strlen(draft), k.b);
	return k;
}

static struct al_oid seq_key(long long seq)
{
	struct al_oid k = { 0 };
	uint64_t s = (uint64_t)seq * 0x9e3779b97f4a7c15ull; /* spread for the slots */
	memcpy(k.b, &s, sizeof(s));
	memcpy(k.b + 8, &seq, sizeof(seq));
	return k;
}

static int verify_entry(struct verifier *v, const char *p, size_t len, struct al_error *err)
{
	struct al_entry_fields f;
	int r = 0;
	if (al_ledger__entry_fields(p, len, &f) < 0 || !f.has_v || !f.has_seq || !f.has_kind ||
	    !f.has_data || f.v != 1)
		r = al_fail(err, AL_ECORRUPT, 0,
			    "line %llu: entry %llu is not a valid ledger entry",
			    (unsigned long long)v->line, (unsigned long long)(v->first + v->count));
	else if ((uint64_t)f.seq != v->first + v->count)
		r = al_fail(
			err, AL_ECORRUPT, 0,
			"line %llu: expected entry %llu, found entry %lld (missing or reordered)",
			(unsigned long long)v->line, (unsigned long long)(v->first + v->count),
			f.seq);
	if (r == 0) {
		const char *kind = f.kind, *draft = f.has_draft ? f.draft : NULL;
		struct al_oid k;
		if (!strcmp(kind, "draft_create") && draft) {
			k = draft_key(draft);
			if (al_idset_add(&v->drafts, &k) < 0)
				r = al_fail(err, AL_ENOMEM, ENOMEM, "verify");
		} else if ((!strcmp(kind, "apply") || !strcmp(kind, "reject")) && draft &&
			   v->first == 0 && !al_idset_has(&v->drafts, (k = draft_key(draft), &k))) {
			char q[4 * sizeof(f.draft) + 1]; /* the export's bytes, never raw */
			al_quote(draft, strlen(draft), q, sizeof(q));
			r = al_fail(
				err, AL_ECORRUPT, 0,
				"entry %lld: %s refers to draft %s, which no earlier entry created",
				f.seq, kind, q);
		}
		if (r == 0 && (!strcmp(kind, "commit") || !strcmp(kind, "apply"))) {
			k = seq_key(f.seq);
			if (al_idset_add(&v->commits, &k) < 0)
				r = al_fail(err, AL_ENOMEM, ENOMEM, "verify");
		}
		if (r == 0 && !strcmp(kind, "conflict") && f.has_commit_seq && f.commit_seq >= 0 &&
		    (uint64_t)f.commit_seq >= v->first &&
		    !al_idset_has(&v->commits, (k = seq_key(f.commit_seq), &k)))
			r = al_fail(err, AL_ECORRUPT, 0,
				    "entry %lld: conflict refers to commit entry %lld, not found",
				    f.seq, f.commit_seq);
	}
	if (r < 0)
		return r;
	uint8_t leaf[AL_DIGEST_LEN];
	al_merkle_leaf(p, len, leaf);
	al_merkle__range_push(&v->g, leaf, 0);
	v->count++;
	return check_trusted(v, err);
}

static int verify_checkpoint(struct verifier *v, const char *p, struct al_error *err)
{
	struct al_checkpoint c = { 0 };
	char root[80], sig[160];
	unsigned long long size;
	long long t;
	if (sscanf(p, "%llu %79s %lld %159s", &size, root, &t, sig) != 4 || strlen(root) != 64 ||
	    strlen(sig) != 128 || al_unhex(root, AL_DIGEST_LEN, c.root) < 0 ||
	    al_unhex(sig, AL_ED25519_SIG_LEN, c.sig) < 0)
		return al_fail(err, AL_ECORRUPT, 0, "line %llu: malformed checkpoint",
			       (unsigned long long)v->line);
	c.size = size;
	c.time = t;
	snprintf(c.origin, sizeof(c.origin), "%s", v->origin);
	if (c.size > v->g.size)
		return al_fail(
			err, AL_ECORRUPT, 0,
			"entry %llu is missing (deleted): checkpoint %llu follows entry %llu",
			(unsigned long long)v->g.size, size, (unsigned long long)v->g.size - 1);
	if (c.size < v->g.size)
		return al_fail(err, AL_ECORRUPT, 0,
			       "line %llu: checkpoint %llu is out of place (after entry %llu)",
			       (unsigned long long)v->line, size,
			       (unsigned long long)v->g.size - 1);
	uint8_t got[AL_DIGEST_LEN];
	al_merkle__range_root(&v->g, got);
	if (memcmp(got, c.root, AL_DIGEST_LEN) != 0)
		return al_fail(err, AL_ECORRUPT, 0,
			       "checkpoint %llu: the entries %llu..%llu do not hash to its root "
			       "(an entry in that range was changed)",
			       size,
			       (unsigned long long)(v->last_cp > v->first ? v->last_cp : v->first),
			       (unsigned long long)(size - 1));
	if (!sig_ok(v->key, &c))
		return al_fail(err, AL_ECORRUPT, 0,
			       "checkpoint %llu: bad signature (forged, or signed by another key)",
			       size);
	v->last_cp = size;
	v->rep->checkpoints++;
	memcpy(v->rep->root, c.root, AL_DIGEST_LEN);
	return 0;
}

static int verify_blob(struct verifier *v, char *p, struct al_error *err)
{
	char *sp = strchr(p, ' ');
	uint8_t want[AL_DIGEST_LEN], got[AL_DIGEST_LEN];
	if (!sp || sp - p != 64 || al_unhex(p, AL_DIGEST_LEN, want) < 0)
		return al_fail(err, AL_ECORRUPT, 0, "line %llu: malformed content line",
			       (unsigned long long)v->line);
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
		r = al_fail(err, AL_ECORRUPT, 0, "line %llu: content is not base64",
			    (unsigned long long)v->line);
	else {
		al_sha256(raw, (size_t)len, got);
		if (memcmp(got, want, AL_DIGEST_LEN) != 0)
			r = al_fail(err, AL_ECORRUPT, 0,
				    "line %llu: content sha256:%.64s does not match its bytes",
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
		return al_fail(err, errno == ENOENT ? AL_ENOTFOUND : AL_EIO, errno, "open %s",
			       path);
	struct verifier *v = calloc(1, sizeof(*v));
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = v ? 0 : al_fail(err, AL_ENOMEM, ENOMEM, "verify");
	bool header = false, ended = false, seen_entry = false;
	uint8_t export_key[AL_ED25519_KEY_LEN];
	if (v) {
		v->trusted = trusted;
		v->rep = rep;
	}
	while (r == 0 && (n = getline(&line, &cap, f)) > 0) {
		v->line++;
		if (line[n - 1] == '\n')
			line[--n] = 0;
		if (ended) {
			r = al_fail(err, AL_ECORRUPT, 0, "line %llu: data after the end",
				    (unsigned long long)v->line);
		} else if (v->line == 1) {
			header = strcmp(line, AL_LEDGER_EXPORT_MAGIC) == 0;
			if (!header)
				r = al_fail(err, AL_EINVAL, 0, "%s is not an airlock ledger export",
					    path);
		} else if (!strncmp(line, "origin ", 7)) {
			/* header lines come once, before any entry: a second key
			 * would let a forger switch keys half-way */
			if (v->origin[0] || v->key)
				r = al_fail(err, AL_ECORRUPT, 0,
					    "line %llu: origin repeated or late",
					    (unsigned long long)v->line);
			snprintf(v->origin, sizeof(v->origin), "%s", line + 7);
		} else if (!strncmp(line, "pubkey ", 7)) {
			if (v->key)
				r = al_fail(err, AL_ECORRUPT, 0, "line %llu: a second public key",
					    (unsigned long long)v->line);
			else if (strlen(line + 7) != 64 ||
				 al_unhex(line + 7, AL_ED25519_KEY_LEN, export_key) < 0)
				r = al_fail(err, AL_ECORRUPT, 0, "line %llu: malformed public key",
					    (unsigned long long)v->line);
			if (r == 0) {
				rep->key_from_export = !key;
				v->key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL,
								     key ? key : export_key,
								     AL_ED25519_KEY_LEN);
				if (!v->key)
					r = al_fail(err, AL_EINVAL, 0, "bad Ed25519 public key");
			}
		} else if (!strncmp(line, "R ", 2)) {
			unsigned level;
			char hex[80];
			uint8_t h[AL_DIGEST_LEN];
			if (seen_entry || sscanf(line + 2, "%u %79s", &level, hex) != 2 ||
			    level > 62 || strlen(hex) != 64 || al_unhex(hex, AL_DIGEST_LEN, h) < 0)
				r = al_fail(err, AL_ECORRUPT, 0, "line %llu: malformed prefix",
					    (unsigned long long)v->line);
			else {
				memcpy(v->g.h[v->g.n], h, AL_DIGEST_LEN);
				v->g.level[v->g.n++] = level;
				v->g.size += 1ull << level;
				v->first = v->g.size;
				rep->first_seq = v->first;
			}
		} else if (!strncmp(line, "E ", 2)) {
			if (!v->key)
				r = al_fail(err, AL_ECORRUPT, 0,
					    "line %llu: entry before the public key",
					    (unsigned long long)v->line);
			else {
				seen_entry = true;
				r = verify_entry(v, line + 2, (size_t)n - 2, err);
			}
		} else if (!strncmp(line, "C ", 2)) {
			r = v->key ? verify_checkpoint(v, line + 2, err)
				   : al_fail(err, AL_ECORRUPT, 0,
					     "checkpoint before the public key");
		} else if (!strncmp(line, "B ", 2)) {
			r = verify_blob(v, line + 2, err);
		} else if (!strncmp(line, "end ", 4)) {
			ended = true;
			if (strtoull(line + 4, NULL, 10) != v->count)
				r = al_fail(err, AL_ECORRUPT, 0,
					    "the export says %s entries, it holds %llu", line + 4,
					    (unsigned long long)v->count);
		} else {
			r = al_fail(err, AL_ECORRUPT, 0, "line %llu: unknown line",
				    (unsigned long long)v->line);
		}
	}
	if (r == 0 && !header)
		r = al_fail(err, AL_EINVAL, 0, "%s is empty", path);
	if (r == 0 && !ended)
		r = al_fail(err, AL_ECORRUPT, 0, "the export is truncated (no end line)");
	if (r == 0 && v->g.size && v->last_cp != v->g.size)
		r = al_fail(err, AL_ECORRUPT, 0,
			    "entries %llu..%llu are not covered by a signed checkpoint",
			    (unsigned long long)(v->last_cp > v->first ? v->last_cp : v->first),
			    (unsigned long long)(v->g.size - 1));
	if (r == 0 && trusted && !v->trusted_checked)
		r = al_fail(err, AL_ECORRUPT, 0,
			    "the export does not reach the trusted checkpoint's size %llu (it ends "
			    "at %llu)",
			    (unsigned long long)trusted->size, (unsigned long long)v->g.size);
	if (r == 0)
		rep->entries = v->count;
	free(line);
	fclose(f);
	if (v) {
		EVP_PKEY_free(v->key);
		al_idset_release(&v->drafts);
		al_idset_release(&v->commits);
		free(v);
	}
	return r;
}
