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
#include "ledger_export.h"
#include "fixture.h"
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

/* ---- the verifier's entry reader: the fast scanner answers as jansson ------ */

static void same_fields(const char *in, size_t n, const struct al_entry_fields *a,
			const struct al_entry_fields *b)
{
	if (a->has_v != b->has_v || (a->has_v && a->v != b->v) || a->has_seq != b->has_seq ||
	    (a->has_seq && a->seq != b->seq) || a->has_kind != b->has_kind ||
	    (a->has_kind && strcmp(a->kind, b->kind)) || a->has_data != b->has_data ||
	    a->has_draft != b->has_draft || (a->has_draft && strcmp(a->draft, b->draft)) ||
	    a->has_commit_seq != b->has_commit_seq ||
	    (a->has_commit_seq && a->commit_seq != b->commit_seq))
		fail_msg("scanner and jansson read %.*s differently", (int)n, in);
}

/* The scanner is sound: what it reads, jansson reads the same. Returns
 * whether the scanner decided. */
static bool agree(const char *in, size_t n)
{
	struct al_entry_fields a, b;
	int fast = al_ledger__entry_scan(in, n, &a);
	int slow = al_ledger__entry_parse(in, n, &b);
	if (!fast)
		return false;
	if (slow < 0)
		fail_msg("the scanner read %.*s, which jansson refuses", (int)n, in);
	same_fields(in, n, &a, &b);
	return true;
}

static void test_entry_reader(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		int fast; /* 1: the scanner reads it; 0: it leaves it to jansson */
		int ok;   /* al_ledger__entry_fields: 0 or -1 */
	} cases[] = {
		{ "{\"v\":1,\"seq\":7,\"kind\":\"apply\",\"data\":{\"draft\":\"d1\",\"commit_seq\":"
		  "3}}",
		  1, 0 },
		{ " {\"v\" : 1 , \"data\" : [ 1 , { } , [ ] , null , true , false , -0 ] }\r\n", 1,
		  0 },
		{ "{\"data\":{\"path\":\"données/文件\",\"x\":{\"draft\":\"inner\"}}}", 1, 0 },
		{ "{\"kind\":\"a\\\"b\\\\c\\/\"}", 0, 0 },   /* an escape in kind */
		{ "{\"kind\":\"\\u0061pply\"}", 0, 0 },      /* \\u: jansson decides */
		{ "{\"v\":1.0}", 0, 0 },                     /* a real */
		{ "{\"seq\":12345678901234567890}", 0, -1 }, /* too big for jansson */
		{ "{\"v\":1,\"v\":1}", 0, -1 },              /* a duplicate */
		{ "{\"v\":1,\"\\u0076\":1}", 0, -1 },        /* the same, escaped */
		{ "{\"data\":{\"draft\":\"a\",\"draft\":\"b\"}}", 0, -1 }, /* one level down */
		{ "{\"v\":01}", 0, -1 },
		{ "{\"v\":1}x", 0, -1 },
		{ "{\"v\":1}{}", 0, -1 },
		{ "[1]", 0, -1 },
		{ "{\"s\":\"\xc3\"}", 0, -1 },         /* half a character */
		{ "{\"s\":\"\xed\xa0\x80\"}", 0, -1 }, /* a surrogate in UTF-8 */
		{ "{\"s\":\"a\tb\"}", 0, -1 },         /* a raw control character */
		{ "{\"s\":\"\\u0000\"}", 0, -1 },      /* NUL: jansson refuses it */
		{ "{\"v\":1,}", 0, -1 },
		{ "{\"v\":tru}", 0, -1 },
		{ "", 0, -1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *in = cases[i].in;
		struct al_entry_fields f;
		if (agree(in, strlen(in)) != (cases[i].fast == 1))
			fail_msg("case %zu (%s): the scanner should %s it", i, in,
				 cases[i].fast ? "read" : "leave");
		if (al_ledger__entry_fields(in, strlen(in), &f) != cases[i].ok)
			fail_msg("case %zu (%s): expected %d", i, in, cases[i].ok);
	}
	/* every one-byte change of a full entry: deleted, or replaced by a
	 * character that matters to JSON */
	static const char base[] =
		"{\"actor\":\"ann\",\"data\":{\"commit_seq\":12,\"draft\":\"d4cd35252717\","
		"\"paths\":[\"a/é.txt\",\"b\"],\"n\":-3,\"ok\":true,\"x\":null},\"group\":\"g1\","
		"\"kind\":\"apply\",\"project\":null,\"seq\":42,\"time\":1796068579,\"v\":1}";
	static const char subst[] = "\"\\{}[],: 0-e.utn\x01\x80\xc3\xff";
	char buf[sizeof(base) + 1];
	size_t n = sizeof(base) - 1, read = 0, left = 0;
	assert_true(agree(base, n));
	for (size_t i = 0; i < n; i++) {
		memcpy(buf, base, i);
		memcpy(buf + i, base + i + 1, n - i - 1);
		read += agree(buf, n - 1);
		for (size_t k = 0; k < sizeof(subst) - 1; k++) {
			memcpy(buf, base, n);
			buf[i] = subst[k];
			if (agree(buf, n))
				read++;
			else
				left++;
		}
	}
	/* both paths taken many times: the sweep tests something */
	assert_true(read > 500);
	assert_true(left > 1000);
}

/* The export's references: an apply or reject names a draft an earlier
 * entry created; a conflict names a commit entry. Signed ledgers that break
 * them are refused, with many entries (the verifier's sets, not scans). */
static void append(struct al_store *st, const char *kind, const char *data)
{
	struct al_error err = { 0 };
	if (al_ledger_append_batch(st, kind, "g", &data, 1, &err) < 0)
		fail_msg("append %s: %s", kind, err.msg);
}

static int verify(struct al_store *st, const char *dir, char *msg, size_t msz)
{
	char path[4200];
	struct al_error err = { 0 };
	snprintf(path, sizeof(path), "%s/x.ledger", dir);
	assert_int_equal(al_ledger_export(st, 0, path, NULL, &err), 0);
	struct al_verify_report rep;
	int r = al_ledger_verify_file(path, NULL, NULL, &rep, &err);
	snprintf(msg, msz, "%s", err.msg);
	return r;
}

static void test_verify_references(void **state)
{
	(void)state;
	char h1[] = "/tmp/airlock-ledref-XXXXXX", msg[512], d[200];
	struct al_store *st = home_store(h1);
	/* 2,000 drafts created, each applied: fine */
	enum { ND = 2000 };
	static char buf[ND][64];
	const char *data[ND];
	struct al_error err = { 0 };
	for (int i = 0; i < ND; i++) {
		snprintf(buf[i], sizeof(buf[i]), "{\"draft\":\"d%05d\"}", i);
		data[i] = buf[i];
	}
	assert_int_equal(al_ledger_append_batch(st, "draft_create", "g", data, ND, &err), 0);
	assert_int_equal(al_ledger_append_batch(st, "apply", "g", data, ND, &err), 0);
	append(st, "conflict", "{\"commit_seq\":2001}"); /* entry 2001: an apply */
	if (verify(st, h1, msg, sizeof(msg)) != 0)
		fail_msg("a sound ledger refused: %s", msg);
	/* a conflict naming an entry that is not a commit */
	append(st, "conflict", "{\"commit_seq\":5}");
	assert_int_equal(verify(st, h1, msg, sizeof(msg)), AL_ECORRUPT);
	assert_non_null(strstr(msg, "conflict refers to commit entry 5, not found"));
	home_remove(h1, st);

	char home2[] = "/tmp/airlock-ledref-XXXXXX";
	st = home_store(home2);
	append(st, "draft_create", "{\"draft\":\"dA\"}");
	append(st, "reject", "{\"draft\":\"dA\"}");
	assert_int_equal(verify(st, home2, msg, sizeof(msg)), 0);
	snprintf(d, sizeof(d), "{\"draft\":\"dB\"}");
	append(st, "apply", d);
	assert_int_equal(verify(st, home2, msg, sizeof(msg)), AL_ECORRUPT);
	assert_non_null(strstr(msg, "apply refers to draft dB, which no earlier entry created"));

	home_remove(home2, st);

	/* a draft id with a terminal escape (JSON \u001b) is named quoted, never raw */
	char home3[] = "/tmp/airlock-ledref-XXXXXX";
	st = home_store(home3);
	append(st, "reject", "{\"draft\":\"d\\u001b[31m\"}");
	assert_int_equal(verify(st, home3, msg, sizeof(msg)), AL_ECORRUPT);
	assert_non_null(strstr(msg, "reject refers to draft d\\x1b[31m, which"));
	assert_null(strchr(msg, '\033'));
	home_remove(home3, st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc6962_vectors),
		cmocka_unit_test(test_stored_tree_and_proofs),
		cmocka_unit_test(test_entry_reader),
		cmocka_unit_test(test_verify_references),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
