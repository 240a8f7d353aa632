/* manifest: the canonical node encoding, its golden vectors (docs/formats.md)
 * and the decoder's refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "airlock/manifest.h"
#include "util.h"

/* Golden vectors: computed by tests/golden/tree_id.py, an independent
 * implementation, for the tree of docs/formats.md. */
static const char golden_empty_hex[] = "414c54524545000100000000";
static const char golden_empty_id[] =
	"2282b519a87eaede30921968a436260db9e894efea28c223375a300434fbc761";
static const char golden_sub_id[] =
	"5dcd69f475997df032d5a57be1b0cd6d420dd9081a462095c77916c9081cbb95";
static const char golden_root_hex[] =
	"414c545245450001000000046401ed00000000000000002282b519a87eaede30921968a436260db9e894efea28"
	"c223375a300434fbc7610005656d7074796601a400000000000000065891b5b522d5df086d0ff0b110fbd9d21b"
	"b4fc7163af34d08286a2e846f6be03000968656c6c6f2e7478746c01ff0000000000000009734cad14909bedfa"
	"fb5b273b6b0eb01fbfa639587d217f78ce9639bba41f441500046c696e6b6401ed000000000000000a5dcd69f4"
	"75997df032d5a57be1b0cd6d420dd9081a462095c77916c9081cbb950003737562";
static const char golden_root_id[] =
	"2efc21337a65ac60f64e531b7ada70809c1b37e2f25d1c4ddcefe78d7ed9677c";

static void unhex(const char *h, uint8_t *out, size_t *n)
{
	*n = strlen(h) / 2;
	assert_int_equal(al_unhex(h, *n, out), 0);
}

static struct al_entry ent(int type, unsigned mode, uint64_t size, const char *digest_hex,
			   const char *name)
{
	struct al_entry e = {
		.type = type, .mode = mode, .size = size, .name = name, .namelen = strlen(name)
	};
	assert_int_equal(al_unhex(digest_hex, AL_OID_LEN, e.digest.b), 0);
	return e;
}

static void hex_of_sha(const uint8_t *p, size_t n, char out[65])
{
	struct al_oid d;
	al_sha256(p, n, d.b);
	al_hex(d.b, AL_OID_LEN, out);
}

static void test_golden_encoding(void **state)
{
	(void)state;
	uint8_t *enc = NULL;
	size_t len = 0;
	char hex[2048], id[65];
	assert_int_equal(al_node_encode(NULL, 0, &enc, &len, NULL), 0);
	al_hex(enc, len, hex);
	assert_string_equal(hex, golden_empty_hex);
	hex_of_sha(enc, len, id);
	assert_string_equal(id, golden_empty_id);
	free(enc);

	struct al_oid hello, link;
	al_sha256("hello\n", 6, hello.b);
	al_sha256("hello.txt", 9, link.b);
	char hh[65], lh[65];
	al_hex(hello.b, AL_OID_LEN, hh);
	al_hex(link.b, AL_OID_LEN, lh);
	struct al_entry e[4] = {
		ent(AL_T_DIR, 0755, 0, golden_empty_id, "empty"),
		ent(AL_T_FILE, 0644, 6, hh, "hello.txt"),
		ent(AL_T_SYMLINK, 0777, 9, lh, "link"),
		ent(AL_T_DIR, 0755, 10, golden_sub_id, "sub"),
	};
	assert_int_equal(al_node_encode(e, 4, &enc, &len, NULL), 0);
	al_hex(enc, len, hex);
	assert_string_equal(hex, golden_root_hex);
	hex_of_sha(enc, len, id);
	assert_string_equal(id, golden_root_id);

	/* decode gives back the same entries and re-encodes byte for byte */
	struct al_node *node = NULL;
	assert_int_equal(al_node_decode(enc, len, &node, NULL), 0);
	assert_int_equal(node->n, 4);
	assert_int_equal(node->entries[1].type, AL_T_FILE);
	assert_int_equal(node->entries[1].mode, 0644);
	assert_memory_equal(node->entries[3].name, "sub", 3);
	uint8_t *enc2 = NULL;
	size_t len2 = 0;
	assert_int_equal(al_node_encode(node->entries, node->n, &enc2, &len2, NULL), 0);
	assert_int_equal(len2, len);
	assert_memory_equal(enc2, enc, len);
	al_node_free(node);
	free(enc);
	free(enc2);
}

/* Decode golden_root_hex with one change applied; expect a refusal. */
static void expect_refused(size_t off, uint8_t val, const char *why)
{
	uint8_t buf[1024];
	size_t n;
	unhex(golden_root_hex, buf, &n);
	buf[off] = val;
	struct al_node *node = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_node_decode(buf, n, &node, &err), AL_EINVAL);
	assert_null(node);
	if (!strstr(err.msg, why))
		fail_msg("decode refused with '%s', expected '%s'", err.msg, why);
}

/* entry k of the golden root starts at these offsets: 12, 12+50, … */
#define E0 12
#define E1 (E0 + 45 + 5)
#define E2 (E1 + 45 + 9)

static void test_decoder_refusals(void **state)
{
	(void)state;
	expect_refused(0, 'X', "bad header");
	expect_refused(7, 0x02, "bad header"); /* unknown version */
	expect_refused(11, 5, "count");        /* count says 5, 4 present */
	expect_refused(E0, 'x', "unknown entry type");
	expect_refused(E0 + 1, 0x10, "beyond 07777");        /* mode 0x10ed */
	expect_refused(E2 + 2, 0xfe, "bad symlink");         /* symlink mode 0776 */
	expect_refused(E0 + 45, '/', "'/' inside a name");   /* "/mpty" */
	expect_refused(E1 + 45, 'a', "not strictly sorted"); /* "aello.txt" < "empty" */
	expect_refused(E0 + 45, 0xff, "UTF-8");
	expect_refused(E0 + 45, '\n', "control character");

	/* duplicate names, a '..' name, trailing and truncated bytes */
	uint8_t *enc = NULL;
	size_t len = 0;
	struct al_entry dup[2] = { ent(AL_T_FILE, 0644, 1, golden_empty_id, "a"),
				   ent(AL_T_FILE, 0644, 1, golden_empty_id, "a") };
	struct al_error err = { 0 };
	assert_int_equal(al_node_encode(dup, 2, &enc, &len, &err), AL_EINVAL);
	assert_non_null(strstr(err.msg, "sorted"));
	struct al_entry dots = ent(AL_T_DIR, 0755, 0, golden_empty_id, "..");
	assert_int_equal(al_node_encode(&dots, 1, &enc, &len, &err), AL_EINVAL);
	struct al_entry dot = ent(AL_T_DIR, 0755, 0, golden_empty_id, ".");
	assert_int_equal(al_node_encode(&dot, 1, &enc, &len, &err), AL_EINVAL);

	uint8_t buf[1024];
	size_t n;
	unhex(golden_root_hex, buf, &n);
	struct al_node *node = NULL;
	buf[n] = 0;
	assert_int_equal(al_node_decode(buf, n + 1, &node, &err), AL_EINVAL);
	assert_non_null(strstr(err.msg, "trailing"));
	for (size_t cut = 0; cut < n; cut += 7)
		assert_int_equal(al_node_decode(buf, cut, &node, NULL), AL_EINVAL);
	assert_null(node);
}

static void test_names(void **state)
{
	(void)state;
	const char *why;
	assert_true(al_name_valid("a", 1, &why));
	assert_true(al_name_valid("日本.txt", strlen("日本.txt"), &why));
	assert_true(al_name_valid("back\\slash", 10, &why)); /* allowed in snapshots */
	assert_false(al_name_valid("", 0, &why));
	assert_false(al_name_valid(".", 1, &why));
	assert_false(al_name_valid("..", 2, &why));
	assert_true(al_name_valid("...", 3, &why));
	assert_false(al_name_valid("a/b", 3, &why));
	assert_false(al_name_valid("a\0b", 3, &why));
	assert_false(al_name_valid("\xc0\xaf", 2, &why));         /* overlong '/' */
	assert_false(al_name_valid("\xed\xa0\x80", 3, &why));     /* surrogate */
	assert_false(al_name_valid("\xf4\x90\x80\x80", 4, &why)); /* > U+10FFFF */
	assert_false(al_name_valid("\xe6\x97", 2, &why));         /* truncated */
	assert_false(al_name_valid("tab\t", 4, &why));
	assert_false(al_name_valid("del\x7f", 4, &why));
	char longname[257];
	memset(longname, 'a', 256);
	assert_true(al_name_valid(longname, 255, &why));
	assert_false(al_name_valid(longname, 256, &why));
}

static void test_ids(void **state)
{
	(void)state;
	struct al_oid d;
	struct al_error err = { 0 };
	assert_int_equal(
		al_oid_parse(
			"sha256:2282b519a87eaede30921968a436260db9e894efea28c223375a300434fbc761",
			&d, &err),
		0);
	assert_int_equal(d.b[0], 0x22);
	assert_int_equal(
		al_oid_parse("2282b519a87eaede30921968a436260db9e894efea28c223375a300434fbc761", &d,
			     &err),
		0);
	assert_int_equal(
		al_oid_parse(
			"sha256:2282B519a87eaede30921968a436260db9e894efea28c223375a300434fbc761",
			&d, &err),
		AL_EINVAL);
	assert_int_equal(al_oid_parse("sha256:2282b5", &d, &err), AL_EINVAL);
	assert_int_equal(
		al_oid_parse(
			"sha256:2282b519a87eaede30921968a436260db9e894efea28c223375a300434fbc7610",
			&d, &err),
		AL_EINVAL);
	char out[AL_OID_STRLEN + 1];
	al_oid_fmt(&d, out);
	assert_string_equal(
		out, "sha256:2282b519a87eaede30921968a436260db9e894efea28c223375a300434fbc761");
	char q[64];
	al_quote("a\nb\x1b", 4, q, sizeof(q));
	assert_string_equal(q, "a\\x0ab\\x1b");
	al_quote("日本", strlen("日本"), q, sizeof(q));
	assert_string_equal(q, "日本");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_encoding),
		cmocka_unit_test(test_decoder_refusals),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_ids),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
