/* airlock — the audit ledger: every action of a tenant, append-only, as the
 * leaves of a Merkle tree with RFC 6962/9162 hashing (leaf H(0x00||entry),
 * node H(0x01||l||r)), with Ed25519-signed checkpoints.  An entry is written
 * in the same transaction as its effect.  Formats: docs/formats.md. */
#ifndef AIRLOCK_LEDGER_H
#define AIRLOCK_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"
#include "airlock/oid.h" /* AL_DIGEST_LEN: Merkle hashes are raw sha256 digests */

#define AL_ED25519_KEY_LEN 32
#define AL_ED25519_SIG_LEN 64

struct al_store;

/* RFC 6962 hashing, exposed for tests and verifiers */
void al_merkle_leaf(const void *entry, size_t len, uint8_t out[AL_DIGEST_LEN]);
void al_merkle_node(const uint8_t l[AL_DIGEST_LEN], const uint8_t r[AL_DIGEST_LEN],
		    uint8_t out[AL_DIGEST_LEN]);
/* The root of n leaf hashes (n > 0), computed in memory. */
void al_merkle_root(const uint8_t (*leaves)[AL_DIGEST_LEN], size_t n, uint8_t out[AL_DIGEST_LEN]);
bool al_merkle_verify_inclusion(uint64_t index, uint64_t size, const uint8_t leaf[AL_DIGEST_LEN],
				const uint8_t (*proof)[AL_DIGEST_LEN], size_t nproof,
				const uint8_t root[AL_DIGEST_LEN]);
bool al_merkle_verify_consistency(uint64_t size1, uint64_t size2,
				  const uint8_t root1[AL_DIGEST_LEN],
				  const uint8_t root2[AL_DIGEST_LEN],
				  const uint8_t (*proof)[AL_DIGEST_LEN], size_t nproof);

struct al_ledger_entry {
	uint64_t seq;
	const char *kind, *group, *project;
	int64_t time;
	const char *json; /* the canonical encoding (the leaf's bytes) */
	size_t len;
};

struct al_ledger_query {
	const char *group, *project, *kind;
	int64_t since; /* unix time; 0: all */
};
typedef int (*al_ledger_fn)(void *ctx, const struct al_ledger_entry *e, struct al_error *err);
int al_ledger_foreach(struct al_store *st, const struct al_ledger_query *q, al_ledger_fn fn,
		      void *ctx, struct al_error *err);
int al_ledger_get(struct al_store *st, uint64_t seq, al_ledger_fn fn, void *ctx,
		  struct al_error *err);

struct al_checkpoint {
	uint64_t size;
	uint8_t root[AL_DIGEST_LEN];
	int64_t time;
	char origin[80];
	uint8_t sig[AL_ED25519_SIG_LEN];
};
/* The latest signed checkpoint (AL_ENOTFOUND on an empty ledger). */
int al_ledger_checkpoint(struct al_store *st, struct al_checkpoint *out, struct al_error *err);
/* The exact bytes a checkpoint's signature covers. */
int al_checkpoint_note(const struct al_checkpoint *c, char *out, size_t outsz);

/* The root of the first size leaves, and proofs, from the stored tree in
 * O(log n) hashes.  *proof is malloc'ed. */
int al_ledger_root(struct al_store *st, uint64_t size, uint8_t out[AL_DIGEST_LEN],
		   struct al_error *err);
int al_ledger_inclusion(struct al_store *st, uint64_t index, uint64_t size,
			uint8_t (**proof)[AL_DIGEST_LEN], size_t *n, struct al_error *err);
int al_ledger_consistency(struct al_store *st, uint64_t size1, uint64_t size2,
			  uint8_t (**proof)[AL_DIGEST_LEN], size_t *n, struct al_error *err);

/* Append n entries of a kind in one transaction with one checkpoint (the
 * bulk path; the volume layer appends inside its own transactions).
 * data_json: a JSON object per entry. */
int al_ledger_append_batch(struct al_store *st, const char *kind, const char *group,
			   const char *const *data_json, size_t n, struct al_error *err);

/* The deployment's public key (raw Ed25519) and as PEM. */
int al_ledger_pubkey(struct al_store *st, uint8_t raw[AL_ED25519_KEY_LEN], char *pem, size_t pemsz,
		     struct al_error *err);

/* Export the ledger (entries from the checkpoint of size `from`, 0: all,
 * with every checkpoint and the content blobs entries name) to path. */
int al_ledger_export(struct al_store *st, uint64_t from, const char *path, uint64_t *entries_out,
		     struct al_error *err);

/* Verify an export offline.  key: a raw Ed25519 public key to trust, or
 * NULL to use the one in the export (reported as such).  trusted: a
 * checkpoint saved earlier that the export must be consistent with, or
 * NULL.  On failure err names the first bad line/entry. */
struct al_verify_report {
	uint64_t entries, checkpoints, blobs, first_seq;
	bool key_from_export;
	uint8_t root[AL_DIGEST_LEN];
};
int al_ledger_verify_file(const char *path, const uint8_t *key, const struct al_checkpoint *trusted,
			  struct al_verify_report *rep, struct al_error *err);

/* Parse a checkpoint line as printed by `airlock audit checkpoint`. */
int al_checkpoint_parse(const char *line, struct al_checkpoint *out, struct al_error *err);
int al_checkpoint_format(const struct al_checkpoint *c, char *out, size_t outsz);

#endif
