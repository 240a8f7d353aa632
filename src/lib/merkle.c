/* merkle: RFC 6962/9162 Merkle tree hashing, the whole of the ledger's
 * mathematics: leaf and node hashes, roots, inclusion and consistency
 * proofs and their verification, and the compact range a verifier keeps.
 * No storage and no I/O: the ledger (ledger.c) lends its stored subtrees
 * through struct al_merkle_store; the verifier (ledger_verify.c) needs
 * nothing but this file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/ledger.h"
#include "merkle.h"
#include "util.h"

/* ---- RFC 6962 hashing ------------------------------------------------------ */

void al_merkle_leaf(const void *entry, size_t len, uint8_t out[AL_DIGEST_LEN])
{
	static const uint8_t z = 0;
	al_sha256_2(&z, 1, entry, len, out);
}

void al_merkle_node(const uint8_t l[AL_DIGEST_LEN], const uint8_t r[AL_DIGEST_LEN],
		    uint8_t out[AL_DIGEST_LEN])
{
	uint8_t buf[65];
	buf[0] = 1;
	memcpy(buf + 1, l, AL_DIGEST_LEN);
	memcpy(buf + 33, r, AL_DIGEST_LEN);
	al_sha256(buf, sizeof(buf), out);
}

static uint64_t split(uint64_t n) /* largest power of two < n (n >= 2) */
{
	uint64_t k = 1;
	while (k << 1 < n)
		k <<= 1;
	return k;
}

static void mth_mem(const uint8_t (*l)[AL_DIGEST_LEN], size_t n, uint8_t out[AL_DIGEST_LEN])
{
	if (n == 1) {
		memcpy(out, l[0], AL_DIGEST_LEN);
		return;
	}
	uint64_t k = split(n);
	uint8_t a[AL_DIGEST_LEN], b[AL_DIGEST_LEN];
	mth_mem(l, k, a);
	mth_mem(l + k, n - k, b);
	al_merkle_node(a, b, out);
}

void al_merkle_root(const uint8_t (*leaves)[AL_DIGEST_LEN], size_t n, uint8_t out[AL_DIGEST_LEN])
{
	if (n == 0) {
		al_sha256("", 0, out);
		return;
	}
	mth_mem(leaves, n, out);
}

bool al_merkle_verify_inclusion(uint64_t index, uint64_t size, const uint8_t leaf[AL_DIGEST_LEN],
				const uint8_t (*proof)[AL_DIGEST_LEN], size_t nproof,
				const uint8_t root[AL_DIGEST_LEN])
{
	if (index >= size)
		return false;
	uint64_t fn = index, sn = size - 1;
	uint8_t r[AL_DIGEST_LEN];
	memcpy(r, leaf, AL_DIGEST_LEN);
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
	return sn == 0 && memcmp(r, root, AL_DIGEST_LEN) == 0;
}

bool al_merkle_verify_consistency(uint64_t size1, uint64_t size2,
				  const uint8_t root1[AL_DIGEST_LEN],
				  const uint8_t root2[AL_DIGEST_LEN],
				  const uint8_t (*proof)[AL_DIGEST_LEN], size_t nproof)
{
	if (size1 == 0 || size1 > size2)
		return false;
	if (size1 == size2)
		return nproof == 0 && memcmp(root1, root2, AL_DIGEST_LEN) == 0;
	bool pow2 = (size1 & (size1 - 1)) == 0;
	size_t n = nproof + (pow2 ? 1 : 0);
	if (n == 0)
		return false;
	const uint8_t(*p)[AL_DIGEST_LEN] = proof;
	uint8_t fr[AL_DIGEST_LEN], sr[AL_DIGEST_LEN];
	size_t i = 0;
	if (pow2) {
		memcpy(fr, root1, AL_DIGEST_LEN);
	} else {
		memcpy(fr, p[0], AL_DIGEST_LEN);
		i = 1;
	}
	memcpy(sr, fr, AL_DIGEST_LEN);
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
	return sn == 0 && memcmp(fr, root1, AL_DIGEST_LEN) == 0 &&
	       memcmp(sr, root2, AL_DIGEST_LEN) == 0;
}

/* ---- over a stored tree ------------------------------------------------------
 * Stored: the hash of every complete, aligned subtree.  A root or a proof
 * needs O(log n) of them. */

/* MTH(D[lo:hi]) from the stored complete subtrees */
int al_merkle__mth(const struct al_merkle_store *t, uint64_t lo, uint64_t hi,
		   uint8_t out[AL_DIGEST_LEN], struct al_error *err)
{
	uint64_t n = hi - lo;
	if ((n & (n - 1)) == 0 && lo % n == 0) {
		unsigned level = 0;
		while ((1ull << level) < n)
			level++;
		return t->subtree(t->ctx, level, lo >> level, out, err);
	}
	uint64_t k = split(n);
	uint8_t a[AL_DIGEST_LEN], b[AL_DIGEST_LEN];
	int r = al_merkle__mth(t, lo, lo + k, a, err);
	if (r == 0)
		r = al_merkle__mth(t, lo + k, hi, b, err);
	if (r == 0)
		al_merkle_node(a, b, out);
	return r;
}

struct proof {
	uint8_t (*v)[AL_DIGEST_LEN];
	size_t n, cap;
};

static int proof_add(struct proof *p, const uint8_t h[AL_DIGEST_LEN], struct al_error *err)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		uint8_t(*v)[AL_DIGEST_LEN] = realloc(p->v, cap * AL_DIGEST_LEN);
		if (!v)
			return al_fail(err, AL_ENOMEM, ENOMEM, "proof");
		p->v = v;
		p->cap = cap;
	}
	memcpy(p->v[p->n++], h, AL_DIGEST_LEN);
	return 0;
}

/* RFC 6962 PATH(m, D[lo:hi]) */
static int path(const struct al_merkle_store *t, uint64_t m, uint64_t lo, uint64_t hi,
		struct proof *p, struct al_error *err)
{
	uint64_t n = hi - lo;
	if (n <= 1)
		return 0;
	uint64_t k = split(n);
	uint8_t h[AL_DIGEST_LEN];
	int r;
	if (m < k) {
		if ((r = path(t, m, lo, lo + k, p, err)) < 0 ||
		    (r = al_merkle__mth(t, lo + k, hi, h, err)) < 0)
			return r;
	} else {
		if ((r = path(t, m - k, lo + k, hi, p, err)) < 0 ||
		    (r = al_merkle__mth(t, lo, lo + k, h, err)) < 0)
			return r;
	}
	return proof_add(p, h, err);
}

/* RFC 6962 SUBPROOF(m, D[lo:hi], b) */
static int subproof(const struct al_merkle_store *t, uint64_t m, uint64_t lo, uint64_t hi, bool b,
		    struct proof *p, struct al_error *err)
{
	uint64_t n = hi - lo;
	uint8_t h[AL_DIGEST_LEN];
	int r;
	if (m == n) {
		if (b)
			return 0;
		return (r = al_merkle__mth(t, lo, hi, h, err)) < 0 ? r : proof_add(p, h, err);
	}
	uint64_t k = split(n);
	if (m <= k) {
		if ((r = subproof(t, m, lo, lo + k, b, p, err)) < 0 ||
		    (r = al_merkle__mth(t, lo + k, hi, h, err)) < 0)
			return r;
	} else {
		if ((r = subproof(t, m - k, lo + k, hi, false, p, err)) < 0 ||
		    (r = al_merkle__mth(t, lo, lo + k, h, err)) < 0)
			return r;
	}
	return proof_add(p, h, err);
}

int al_merkle__inclusion(const struct al_merkle_store *t, uint64_t index, uint64_t size,
			 uint8_t (**out)[AL_DIGEST_LEN], size_t *nout, struct al_error *err)
{
	struct proof p = { 0 };
	int r;
	if ((r = path(t, index, 0, size, &p, err)) < 0) {
		free(p.v);
		return r;
	}
	*out = p.v;
	*nout = p.n;
	return 0;
}

int al_merkle__consistency(const struct al_merkle_store *t, uint64_t size1, uint64_t size2,
			   uint8_t (**out)[AL_DIGEST_LEN], size_t *nout, struct al_error *err)
{
	struct proof p = { 0 };
	int r;
	if (size1 < size2 && (r = subproof(t, size1, 0, size2, true, &p, err)) < 0) {
		free(p.v);
		return r;
	}
	*out = p.v;
	*nout = p.n;
	return 0;
}

/* ---- the compact range ---------------------------------------------------------- */

void al_merkle__range_push(struct al_merkle_range *g, const uint8_t h[AL_DIGEST_LEN],
			   unsigned level)
{
	memcpy(g->h[g->n], h, AL_DIGEST_LEN);
	g->level[g->n++] = level;
	g->size += 1ull << level;
	while (g->n >= 2 && g->level[g->n - 1] == g->level[g->n - 2]) {
		al_merkle_node(g->h[g->n - 2], g->h[g->n - 1], g->h[g->n - 2]);
		g->level[g->n - 2]++;
		g->n--;
	}
}

void al_merkle__range_root(const struct al_merkle_range *g, uint8_t out[AL_DIGEST_LEN])
{
	memcpy(out, g->h[g->n - 1], AL_DIGEST_LEN);
	for (int i = g->n - 2; i >= 0; i--)
		al_merkle_node(g->h[i], out, out);
}
