/* ledger: RFC 6962 hashing against the Certificate Transparency test
 * vectors; the stored tree against an in-memory computation for every size;
 * every inclusion and consistency proof verified, and broken ones refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "airlock/ledger.h"
#include "airlock/store.h"
#include "util.h"

/* RFC 6962 test leaves and the roots of their first n (CT's merkle test data) */
static const char *leaves_hex[8] = { "",
				     "00",
				     "10",
				     "2021",
				     "3031",
				     "40414243",
				     "5051525354555657",
				     "606162636465666768696a6b6c6d6e6f" };
static const char *roots_hex[8] = {
	"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
	"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
	"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
	"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
	"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
	"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
	"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
	"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
};

static void test_rfc6962_vectors(void **state)
{
	(void)state;
	uint8_t leaves[8][AL_DIGEST_LEN];
	for (int i = 0; i < 8; i++) {
		uint8_t raw[16];
		size_t n = strlen(leaves_hex[i]) / 2;
		assert_int_equal(al_unhex(leaves_hex[i], n, raw), 0);
		al_merkle_leaf(raw, n, leaves[i]);
	}
	for (int n = 1; n <= 8; n++) {
		uint8_t root[AL_DIGEST_LEN];
		char hex[65];
		al_merkle_root((const uint8_t(*)[AL_DIGEST_LEN])leaves, (size_t)n, root);
		al_hex(root, AL_DIGEST_LEN, hex);
		assert_string_equal(hex, roots_hex[n - 1]);
	}
}

static char home[64];

enum { N = 70 }; /* covers 2^k and 2^k+1 up to 65 */
struct leaves {
	uint8_t h[N][AL_DIGEST_LEN];
	int n;
};

static int collect(void *ctx, const struct al_ledger_entry *e, struct al_error *err)
{
	(void)err;
	struct leaves *lv = ctx;
	al_merkle_leaf(e->json, e->len, lv->h[lv->n++]);
	return 0;
}

static void test_stored_tree_and_proofs(void **state)
{
	(void)state;
	snprintf(home, sizeof(home), "/tmp/airlock-ledger-XXXXXX");
	assert_non_null(mkdtemp(home));
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	assert_int_equal(al_home_init(home, &err), 0);
	assert_int_equal(al_store_open(home, "default", &st, &err), 0);
	char buf[N][AL_DIGEST_LEN];
	const char *data[N];
	for (int i = 0; i < N; i++) {
		snprintf(buf[i], sizeof(buf[i]), "{\"i\":%d}", i);
		data[i] = buf[i];
	}
	/* in batches of uneven sizes, as real transactions come */
	for (int i = 0, b = 1; i < N; i += b, b = b % 7 + 1)
		assert_int_equal(al_ledger_append_batch(st, "test", "g0", data + i,
							(size_t)(i + b > N ? N - i : b), &err),
				 0);

	static struct leaves lv;
	assert_int_equal(al_ledger_foreach(st, NULL, collect, &lv, &err), 0);
	assert_int_equal(lv.n, N);

	for (uint64_t size = 1; size <= N; size++) {
		uint8_t want[AL_DIGEST_LEN], got[AL_DIGEST_LEN];
		al_merkle_root((const uint8_t(*)[AL_DIGEST_LEN])lv.h, size, want);
		assert_int_equal(al_ledger_root(st, size, got, &err), 0);
		assert_memory_equal(got, want, AL_DIGEST_LEN);
		for (uint64_t i = 0; i < size; i++) {
			uint8_t(*p)[AL_DIGEST_LEN] = NULL;
			size_t np = 0;
			assert_int_equal(al_ledger_inclusion(st, i, size, &p, &np, &err), 0);
			assert_true(np <= 7); /* O(log n) */
			assert_true(al_merkle_verify_inclusion(
				i, size, lv.h[i], (const uint8_t(*)[AL_DIGEST_LEN])p, np, want));
			if (np) { /* a flipped bit in the proof is refused */
				p[0][5] ^= 1;
				assert_false(al_merkle_verify_inclusion(
					i, size, lv.h[i], (const uint8_t(*)[AL_DIGEST_LEN])p, np,
					want));
			}
			if (size > 1) /* the same proof does not prove another leaf */
				assert_false(al_merkle_verify_inclusion(
					i, size, lv.h[(i + 1) % size],
					(const uint8_t(*)[AL_DIGEST_LEN])p, np, want));
			free(p);
		}
		for (uint64_t s1 = 1; s1 <= size; s1++) {
			uint8_t r1[AL_DIGEST_LEN];
			al_merkle_root((const uint8_t(*)[AL_DIGEST_LEN])lv.h, s1, r1);
			uint8_t(*p)[AL_DIGEST_LEN] = NULL;
			size_t np = 0;
			assert_int_equal(al_ledger_consistency(st, s1, size, &p, &np, &err), 0);
			assert_true(np <= 14);
			assert_true(al_merkle_verify_consistency(
				s1, size, r1, want, (const uint8_t(*)[AL_DIGEST_LEN])p, np));
			if (s1 < size) { /* against another old root it fails */
				uint8_t other[AL_DIGEST_LEN];
				memcpy(other, r1, AL_DIGEST_LEN);
				other[0] ^= 1;
				assert_false(al_merkle_verify_consistency(
					s1, size, other, want, (const uint8_t(*)[AL_DIGEST_LEN])p,
					np));
			}
			free(p);
		}
	}
	struct al_checkpoint cp;
	assert_int_equal(al_ledger_checkpoint(st, &cp, &err), 0);
	assert_int_equal(cp.size, N);
	char line[400];
	struct al_checkpoint back;
	assert_int_equal(al_checkpoint_format(&cp, line, sizeof(line)), 0);
	assert_int_equal(al_checkpoint_parse(line, &back, &err), 0);
	assert_memory_equal(back.root, cp.root, AL_DIGEST_LEN);
	assert_memory_equal(back.sig, cp.sig, AL_ED25519_SIG_LEN);
	al_store_close(st);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", home);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc6962_vectors),
		cmocka_unit_test(test_stored_tree_and_proofs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
