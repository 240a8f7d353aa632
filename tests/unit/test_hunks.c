/* Hunk-level accept and merge_lines: a file built from some hunks of a
 * change (first, middle, last, adjacent hunks, no newline at the end, CRLF;
 * the numbers review shows), every refusal with nothing changed, the
 * draft's outcomes and ledger entry; the three-way line merge (disjoint
 * lands, overlapping and binary do not) as a function and as a commit
 * strategy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture.h"

#include "airlock/cas.h"
#include "airlock/ledger.h"
#include "airlock/manifest.h"
#include "airlock/review.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "util.h"

/* "1\n2\n...\nn\n" with line k replaced by repl[k] where given */
static char *numbered(int n, const char *const *repl, int nrepl)
{
	size_t cap = (size_t)n * 16 + 256, o = 0;
	char *s = malloc(cap);
	assert_non_null(s);
	for (int k = 1; k <= n; k++) {
		const char *r = NULL;
		for (int i = 0; i + 1 < nrepl; i += 2)
			if (atoi(repl[i]) == k)
				r = repl[i + 1];
		if (r)
			o += (size_t)snprintf(s + o, cap - o, "%s\n", r);
		else
			o += (size_t)snprintf(s + o, cap - o, "%d\n", k);
	}
	s[o] = 0;
	return s;
}

/* take hunks of a -> b; the result as a string (the caller frees) */
static char *take(const char *a, const char *b, const unsigned *h, size_t n, size_t *nh)
{
	struct al_error err = { 0 };
	uint8_t *out = NULL;
	size_t len = 0, dummy;
	int r = al_review_take_hunks((const uint8_t *)a, strlen(a), (const uint8_t *)b, strlen(b),
				     "f", h, n, &out, &len, nh ? nh : &dummy, &err);
	if (r < 0)
		fail_msg("take hunks: %s", err.msg);
	char *s = malloc(len + 1);
	assert_non_null(s);
	if (len)
		memcpy(s, out, len);
	s[len] = 0;
	free(out);
	return s;
}

#define TAKE(a, b, ...)                                   \
	take((a), (b), (const unsigned[]){ __VA_ARGS__ }, \
	     sizeof((const unsigned[]){ __VA_ARGS__ }) / sizeof(unsigned), NULL)

static void test_first_middle_last(void **state)
{
	(void)state;
	char *a = numbered(30, NULL, 0);
	const char *rb[] = { "2", "TWO", "15", "FIFTEEN", "29", "TWENTY-NINE" };
	char *b = numbered(30, rb, 6);
	size_t nh;
	char *s = take(a, b, NULL, 0, &nh);
	assert_int_equal(nh, 3);
	assert_string_equal(s, a); /* no hunk: the base */
	free(s);
	const char *r1[] = { "2", "TWO" }, *r2[] = { "15", "FIFTEEN" },
		   *r3[] = { "29", "TWENTY-NINE" }, *r13[] = { "2", "TWO", "29", "TWENTY-NINE" };
	struct {
		const char *const *repl;
		int n;
		char *got;
	} c[] = {
		{ r1, 2, TAKE(a, b, 1) },        { r2, 2, TAKE(a, b, 2) },
		{ r3, 2, TAKE(a, b, 3) },        { r13, 4, TAKE(a, b, 1, 3) },
		{ r13, 4, TAKE(a, b, 3, 1, 3) }, /* any order, repeats */
		{ rb, 6, TAKE(a, b, 1, 2, 3) },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char *want = numbered(30, c[i].repl, c[i].n);
		assert_string_equal(c[i].got, want);
		free(want);
		free(c[i].got);
	}
	free(a);
	free(b);
}

/* Two changes 7 lines apart are two hunks whose contexts meet (6 apart
 * would be one); a hunk that only adds and one that only removes. */
static void test_adjacent_hunks(void **state)
{
	(void)state;
	const char *a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n20\n";
	const char *b =
		"1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\neleven\n12\n13\n14\n15\n16\n17\n18\n19\n20\n";
	size_t nh;
	char *s = take(a, b, NULL, 0, &nh);
	assert_int_equal(nh, 2);
	free(s);
	s = TAKE(a, b, 2);
	assert_string_equal(
		s, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\neleven\n12\n13\n14\n15\n16\n17\n18\n19\n20\n");
	free(s);
	s = TAKE(a, b, 1);
	assert_string_equal(
		s, "1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n20\n");
	free(s);
	/* an insertion and a deletion, adjacent too */
	const char *c = "1\n2\n3\nnew\n4\n5\n6\n7\n8\n9\n10\n12\n13\n14\n15\n16\n17\n18\n19\n20\n";
	s = take(a, c, NULL, 0, &nh);
	assert_int_equal(nh, 2);
	free(s);
	s = TAKE(a, c, 1);
	assert_string_equal(
		s, "1\n2\n3\nnew\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n20\n");
	free(s);
	s = TAKE(a, c, 2);
	assert_string_equal(s,
			    "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n12\n13\n14\n15\n16\n17\n18\n19\n20\n");
	free(s);
	/* an added file's lines from nothing, a removed file's to nothing */
	s = TAKE("", "x\ny\n", 1);
	assert_string_equal(s, "x\ny\n");
	free(s);
	s = TAKE("x\ny\n", "", 1);
	assert_string_equal(s, "");
	free(s);
}

static void test_no_newline_at_eof(void **state)
{
	(void)state;
	/* the last line gains its newline and a line */
	char *s = TAKE("1\n2\n3", "1\n2\n3\n4\n", 1);
	assert_string_equal(s, "1\n2\n3\n4\n");
	free(s);
	/* a base without the final newline: the other hunk keeps it so */
	const char *a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n20";
	const char *b = "1\ntwo\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n"
			"20\n21";
	size_t nh;
	s = take(a, b, NULL, 0, &nh);
	assert_int_equal(nh, 2);
	free(s);
	s = TAKE(a, b, 1);
	assert_string_equal(s, "1\ntwo\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n"
			       "19\n20");
	free(s);
	s = TAKE(a, b, 2);
	assert_string_equal(s, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n"
			       "20\n21");
	free(s);
	/* the change drops the final newline; the first hunk alone keeps it */
	const char *c = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n20\n";
	const char *d = "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n20";
	s = TAKE(c, d, 1);
	assert_string_equal(s, "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n"
			       "19\n20\n");
	free(s);
	s = TAKE(c, d, 2);
	assert_string_equal(s, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n"
			       "20");
	free(s);
}

static void test_crlf(void **state)
{
	(void)state;
	const char *a = "a\r\nb\r\nc\r\nd\r\ne\r\nf\r\ng\r\nh\r\ni\r\nj\r\nk\r\nl\r\n";
	const char *b = "A\r\nb\r\nc\r\nd\r\ne\r\nf\r\ng\r\nh\r\ni\r\nj\r\nk\r\nl\n";
	size_t nh;
	char *s = take(a, b, NULL, 0, &nh);
	assert_int_equal(nh, 2); /* CR is part of a line: l\r\n -> l\n is a change */
	free(s);
	s = TAKE(a, b, 1);
	assert_string_equal(s, "A\r\nb\r\nc\r\nd\r\ne\r\nf\r\ng\r\nh\r\ni\r\nj\r\nk\r\nl\r\n");
	free(s);
	s = TAKE(a, b, 2);
	assert_string_equal(s, "a\r\nb\r\nc\r\nd\r\ne\r\nf\r\ng\r\nh\r\ni\r\nj\r\nk\r\nl\n");
	free(s);
}

static void test_take_refusals(void **state)
{
	(void)state;
	struct al_error err = { 0 };
	uint8_t *out = (uint8_t *)"x";
	size_t len = 1, nh = 9;
	const char *a = "1\n2\n3\n", *b = "1\nTWO\n3\n";
	unsigned h[] = { 2 }, z[] = { 0 };
	assert_int_equal(al_review_take_hunks((const uint8_t *)a, strlen(a), (const uint8_t *)b,
					      strlen(b), "f.txt", h, 1, &out, &len, &nh, &err),
			 AL_EINVAL);
	assert_string_equal(err.msg, "f.txt has 1 hunk: no hunk 2");
	assert_null(out);
	assert_int_equal(len, 0);
	assert_int_equal(al_review_take_hunks((const uint8_t *)a, strlen(a), (const uint8_t *)b,
					      strlen(b), "f.txt", z, 1, &out, &len, &nh, &err),
			 AL_EINVAL);
	assert_string_equal(err.msg, "f.txt has 1 hunk: no hunk 0");
	const uint8_t bin[] = { 'x', 0, 'y', '\n' };
	unsigned one[] = { 1 };
	assert_int_equal(al_review_take_hunks((const uint8_t *)a, strlen(a), bin, sizeof(bin),
					      "b.bin", one, 1, &out, &len, &nh, &err),
			 AL_EINVAL);
	assert_non_null(strstr(err.msg, "b.bin is binary"));
	size_t big = AL_REVIEW_TEXT_MAX + 2;
	uint8_t *huge = malloc(big);
	assert_non_null(huge);
	memset(huge, 'a', big);
	huge[big - 1] = '\n';
	assert_int_equal(al_review_take_hunks((const uint8_t *)a, strlen(a), huge, big, "h", one, 1,
					      &out, &len, &nh, &err),
			 AL_EINVAL);
	assert_true(al_review_is_text(huge, big - 2) && !al_review_is_text(huge, big));
	free(huge);
}

/* ---- the line merge -------------------------------------------------------- */

static int merge(const char *base, const char *ours, const char *theirs, char **got)
{
	struct al_error err = { 0 };
	uint8_t *out = NULL;
	size_t len = 0;
	int r = al_review_merge_lines((const uint8_t *)base, strlen(base), (const uint8_t *)ours,
				      strlen(ours), (const uint8_t *)theirs, strlen(theirs), &out,
				      &len, &err);
	if (r < 0)
		fail_msg("merge: %s", err.msg);
	*got = NULL;
	if (r == 1) {
		*got = calloc(1, len + 1);
		if (len)
			memcpy(*got, out, len);
	} else
		assert_null(out);
	free(out);
	return r;
}

static void test_merge_lines(void **state)
{
	(void)state;
	const char *csv = "id,amount\n1,10\n2,20\n3,30\n4,40\n5,50\n6,60\n7,70\n8,80\n";
	const char *ours = "id,amount\n1,10\n2,20\n2b,25\n3,30\n4,40\n5,50\n6,60\n7,70\n8,80\n";
	const char *theirs = "id,amount\n1,10\n2,20\n3,30\n4,40\n5,50\n6,60\n7,70\n8,80\n9,90\n";
	char *got;
	assert_int_equal(merge(csv, ours, theirs, &got), 1); /* both rows land */
	assert_string_equal(
		got, "id,amount\n1,10\n2,20\n2b,25\n3,30\n4,40\n5,50\n6,60\n7,70\n8,80\n9,90\n");
	free(got);
	/* the same line changed two ways: an overlap */
	assert_int_equal(merge(csv, "id,amount\n1,11\n2,20\n3,30\n4,40\n5,50\n6,60\n7,70\n8,80\n",
			       "id,amount\n1,12\n2,20\n3,30\n4,40\n5,50\n6,60\n7,70\n8,80\n", &got),
			 0);
	/* both appending at the same place: an overlap */
	assert_int_equal(merge(csv,
			       "id,amount\n1,10\n2,20\n3,30\n4,40\n5,50\n6,60\n7,70\n8,80\nx\n",
			       theirs, &got),
			 0);
	/* the same change on both sides merges */
	assert_int_equal(merge(csv, theirs, theirs, &got), 1);
	assert_string_equal(got, theirs);
	free(got);
	/* binary: never merged */
	const char bin[] = "id\0x\n1\n";
	struct al_error err = { 0 };
	uint8_t *out = NULL;
	size_t len = 0;
	assert_int_equal(al_review_merge_lines((const uint8_t *)bin, sizeof(bin),
					       (const uint8_t *)bin, sizeof(bin) - 1,
					       (const uint8_t *)csv, strlen(csv), &out, &len, &err),
			 0);
	assert_null(out);
}

/* ---- through a draft ----------------------------------------------------------- */

struct file {
	const char *path;
	const char *data;
	size_t len; /* 0: strlen */
	unsigned mode;
};

static struct al_oid tree(struct al_store *st, const struct file *f, size_t n)
{
	struct al_error err = { 0 };
	struct al_cas *cas = al_store_cas(st);
	struct al_edit ed[16];
	uint8_t *enc = NULL;
	size_t enclen = 0;
	struct al_oid empty, out;
	assert_true(n <= 16);
	assert_int_equal(al_node_encode(NULL, 0, &enc, &enclen, &err), 0);
	assert_int_equal(al_cas_begin(cas, &err), 0);
	assert_int_equal(al_cas_put(cas, enc, enclen, &empty, &err), 0);
	free(enc);
	for (size_t i = 0; i < n; i++) {
		size_t len = f[i].len ? f[i].len : f[i].data ? strlen(f[i].data) : 0;
		/* mode 0777: a symlink to data */
		enum al_entry_type type = !f[i].data          ? AL_T_DIR
					  : f[i].mode == 0777 ? AL_T_SYMLINK
							      : AL_T_FILE;
		ed[i] = (struct al_edit){ .path = f[i].path,
					  .op = AL_EDIT_SET,
					  .entry = { .type = type,
						     .mode = f[i].mode ? f[i].mode : 0644,
						     .size = f[i].data ? len : 0 } };
		if (f[i].data)
			assert_int_equal(al_cas_put(cas, f[i].data, len, &ed[i].entry.digest, &err),
					 0);
	}
	if (al_manifest_edit(cas, &empty, ed, n, &out, &err) < 0)
		fail_msg("tree: %s", err.msg);
	assert_int_equal(al_cas_commit(cas, &err), 0);
	return out;
}

static char *file_at(struct al_store *st, const struct al_oid *snap, const char *path,
		     unsigned *mode)
{
	struct al_error err = { 0 };
	struct al_entry e;
	if (al_manifest_lookup(al_store_cas(st), snap, path, &e, &err) < 0)
		return NULL;
	uint8_t *p = NULL;
	size_t len = 0;
	assert_int_equal(al_cas_get(al_store_cas(st), &e.digest, &p, &len, &err), 0);
	if (mode)
		*mode = e.mode;
	return (char *)p; /* NUL-terminated by al_cas_get */
}

static int count_entry(void *ctx, const struct al_ledger_entry *e, struct al_error *err)
{
	(void)err;
	char **last = ctx;
	free(*last);
	*last = strndup(e->json, e->len);
	return 0;
}

/* the ledger's size, and its last entry (the caller frees) */
static uint64_t ledger(struct al_store *st, char **last)
{
	struct al_error err = { 0 };
	struct al_checkpoint cp;
	char *l = NULL;
	assert_int_equal(al_ledger_checkpoint(st, &cp, &err), 0);
	assert_int_equal(al_ledger_get(st, cp.size - 1, count_entry, &l, &err), 0);
	if (last)
		*last = l;
	else
		free(l);
	return cp.size;
}

struct outcomes {
	char text[512];
};

static int on_outcome(void *ctx, const struct al_path_outcome *o, struct al_error *err)
{
	(void)err;
	struct outcomes *oc = ctx;
	size_t n = strlen(oc->text);
	n += (size_t)snprintf(oc->text + n, sizeof(oc->text) - n, "%s=%s", o->path, o->outcome);
	for (size_t i = 0; i < o->nhunks; i++)
		n += (size_t)snprintf(oc->text + n, sizeof(oc->text) - n, "%s%u", i ? "," : ":",
				      o->hunks[i]);
	snprintf(oc->text + n, sizeof(oc->text) - n, " ");
	return 0;
}

static int sel(struct al_store *st, const char *draft, const struct al_apply_path *p, size_t n,
	       struct al_commit_result *res, struct al_error *err)
{
	struct al_commit_opts o = { .strategy = AL_REBASE_IF_DISJOINT,
				    .author = "t",
				    .message = "hunks" };
	return al_draft_apply_sel(st, draft, AL_ACCEPT_SELECTED, p, n, &o, res, err);
}

/* the numbers an apply names are review's, for the same draft */
struct hunk_seen {
	unsigned numbers[8];
	int old_start[8];
	size_t n;
	bool selectable;
};

static int on_review(void *ctx, const struct al_review_file *f, struct al_error *err)
{
	(void)err;
	struct hunk_seen *h = ctx;
	if (strcmp(f->path, "n.txt"))
		return 0;
	h->selectable = f->hunks_selectable;
	for (size_t i = 0; i < f->nhunks && i < 8; i++) {
		h->numbers[h->n] = f->hunks[i].number;
		h->old_start[h->n++] = f->hunks[i].old_start;
	}
	return 0;
}

static void test_apply_hunks(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-hunks-XXXXXX";
	struct al_store *st = home_store(home);
	struct al_error err = { 0 };
	char *n30 = numbered(30, NULL, 0);
	const char *rn[] = { "2", "TWO", "15", "FIFTEEN", "29", "TWENTY-NINE" };
	char *n30b = numbered(30, rn, 6);
	struct file base[] = {
		{ "ln", "n.txt", 0, 0777 },    { "bin", "a\0b", 3, 0 },
		{ "gone.txt", "bye\n", 0, 0 }, { "mode.sh", "echo 1\n", 0, 0 },
		{ "n.txt", n30, 0, 0 },
	};
	struct file next[] = {
		{ "bin", "a\0c", 3, 0 },
		{ "ln", "x\n", 0, 0 },
		{ "mode.sh", "echo 2\n", 0, 0755 },
		{ "n.txt", n30b, 0, 0 },
		{ "new.txt", "hello\n", 0, 0 },
		{ "sub", NULL, 0, 0755 },
		{ "sub/s.txt", "s\n", 0, 0 },
	};
	struct al_oid b0 = tree(st, base, 5), b1 = tree(st, next, 7);
	struct al_project_info p;
	struct al_draft_info d;
	assert_int_equal(al_project_create(st, "p", &b0, "t", &p, &err), 0);
	assert_int_equal(al_draft_create(st, "p", &b1, "t", &d, &err), 0);

	struct hunk_seen hs = { 0 };
	assert_int_equal(al_review(al_store_cas(st), &d.base, &d.head, true, on_review, &hs, &err),
			 0);
	assert_true(hs.selectable);
	assert_int_equal(hs.n, 3);
	assert_int_equal(hs.numbers[0], 1);
	assert_int_equal(hs.numbers[2], 3);
	assert_int_equal(hs.old_start[2], 26); /* hunk 3 is line 29's */

	/* refusals: each is AL_EINVAL, and nothing moves */
	uint64_t size0 = ledger(st, NULL);
	unsigned h4[] = { 4 }, h1[] = { 1 }, h13[] = { 3, 1 };
	struct {
		struct al_apply_path p[2];
		size_t n;
		const char *msg;
	} bad[] = {
		{ { { "n.txt", h4, 1 } }, 1, "n.txt has 3 hunks: no hunk 4" },
		{ { { "new.txt", h1, 1 } }, 1, "new.txt is added in draft" },
		{ { { "gone.txt", h1, 1 } }, 1, "gone.txt is deleted in draft" },
		{ { { "bin", h1, 1 } }, 1, "bin is binary" },
		{ { { "ln", h1, 1 } }, 1, "ln is of another type than in the base in draft" },
		{ { { "sub", h1, 1 } }, 1, "sub is added in draft" },
		{ { { "nosuch", h1, 1 } }, 1, "nosuch is not changed by draft" },
		{ { { "n.txt", h1, 0 } }, 1, "n.txt: an empty list of hunks" },
		{ { { "n.txt", NULL, 0 }, { "n.txt", h1, 1 } }, 2, "both whole and by hunks" },
		{ { { "new.txt", NULL, 0 }, { "n.txt", h4, 1 } }, 2, "no hunk 4" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct al_commit_result res = { 0 };
		if (sel(st, d.id, bad[i].p, bad[i].n, &res, &err) != AL_EINVAL)
			fail_msg("refusal %zu was not refused", i);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("refusal %zu: '%s' lacks '%s'", i, err.msg, bad[i].msg);
		struct al_project_info now;
		struct al_draft_info dn;
		assert_int_equal(al_project_get(st, "p", &now, &err), 0);
		assert_true(al_oid_eq(&now.head, &p.head));
		assert_int_equal(al_draft_get(st, d.id, &dn, &err), 0);
		assert_string_equal(dn.state, AL_DRAFT_OPEN);
		assert_int_equal(ledger(st, NULL), size0);
		al_commit_result_release(&res);
	}
	/* hunks 3 and 1 of n.txt, and mode.sh's one hunk (not its mode change) */
	struct al_commit_result res = { 0 };
	struct al_apply_path ok[] = { { "n.txt", h13, 2 }, { "mode.sh", h1, 1 } };
	if (sel(st, d.id, ok, 2, &res, &err) < 0)
		fail_msg("apply: %s", err.msg);
	assert_int_equal(res.applied, 2);
	assert_int_equal(res.partial, 2); /* n.txt: a hunk left; mode.sh: its mode change left */
	assert_int_equal(res.discarded, 6);
	struct al_project_info now;
	assert_int_equal(al_project_get(st, "p", &now, &err), 0);
	unsigned mode = 0;
	const char *rw[] = { "2", "TWO", "29", "TWENTY-NINE" };
	char *want = numbered(30, rw, 4), *got = file_at(st, &now.head, "n.txt", NULL);
	assert_string_equal(got, want);
	free(got);
	free(want);
	got = file_at(st, &now.head, "mode.sh", &mode);
	assert_string_equal(got, "echo 2\n");
	assert_int_equal(mode, 0644); /* hunks take lines, not the mode */
	free(got);
	assert_null(file_at(st, &now.head, "new.txt", NULL));
	struct al_draft_info dn;
	assert_int_equal(al_draft_get(st, d.id, &dn, &err), 0);
	assert_string_equal(dn.state, AL_DRAFT_PARTIAL);
	assert_true(d.created > 0); /* the creation time, as created and as read back */
	assert_int_equal(dn.created, d.created);
	assert_int_equal(dn.partial, 2);
	assert_int_equal(dn.applied, 2);
	struct outcomes oc = { "" };
	assert_int_equal(al_draft_path_outcomes(st, d.id, on_outcome, &oc, &err), 0);
	assert_string_equal(oc.text, "bin=discarded gone.txt=discarded ln=discarded "
				     "mode.sh=partially_applied:1 "
				     "n.txt=partially_applied:1,3 new.txt=discarded sub=discarded "
				     "sub/s.txt=discarded ");
	char *last = NULL;
	assert_int_equal(ledger(st, &last), size0 + 1);
	assert_non_null(strstr(last, "\"hunks\":{\"mode.sh\":[1],\"n.txt\":[1,3]}"));
	assert_non_null(strstr(last, "\"kind\":\"apply\""));
	assert_non_null(strstr(last, "\"partial\":2"));
	free(last);
	al_commit_result_release(&res);

	/* every hunk of a file whose mode did not change is the whole change:
	 * "applied" (a draft from the new head whose n.txt is n30b: one hunk) */
	struct al_draft_info d2;
	assert_int_equal(al_project_get(st, "p", &now, &err), 0);
	struct al_oid h2;
	{
		struct al_edit ed = { .path = "n.txt", .op = AL_EDIT_SET };
		assert_int_equal(
			al_manifest_lookup(al_store_cas(st), &b1, "n.txt", &ed.entry, &err), 0);
		assert_int_equal(al_cas_begin(al_store_cas(st), &err), 0);
		assert_int_equal(al_manifest_edit(al_store_cas(st), &now.head, &ed, 1, &h2, &err),
				 0);
		assert_int_equal(al_cas_commit(al_store_cas(st), &err), 0);
	}
	assert_int_equal(al_draft_create(st, "p", &h2, "t", &d2, &err), 0);
	unsigned h1only[] = { 1 };
	struct al_apply_path all[] = { { "n.txt", h1only, 1 } };
	if (sel(st, d2.id, all, 1, &res, &err) < 0)
		fail_msg("apply 2: %s", err.msg);
	assert_int_equal(res.partial, 0);
	assert_int_equal(al_draft_get(st, d2.id, &dn, &err), 0);
	assert_string_equal(dn.state, AL_DRAFT_APPLIED);
	memset(&oc, 0, sizeof(oc));
	assert_int_equal(al_draft_path_outcomes(st, d2.id, on_outcome, &oc, &err), 0);
	assert_string_equal(oc.text, "n.txt=applied:1 ");
	al_commit_result_release(&res);
	assert_int_equal(al_project_get(st, "p", &now, &err), 0);
	got = file_at(st, &now.head, "n.txt", NULL);
	assert_string_equal(got, n30b);
	free(got);
	free(n30);
	free(n30b);
	home_remove(home, st);
}

/* Hunks taken on a head that moved since the draft's base: replayed. */
static void test_hunks_on_moved_head(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-hunks-XXXXXX";
	struct al_store *st = home_store(home);
	struct al_error err = { 0 };
	char *a = numbered(30, NULL, 0);
	const char *r[] = { "2", "TWO", "29", "TWENTY-NINE" };
	char *b = numbered(30, r, 4);
	struct file f0[] = { { "n.txt", a, 0, 0 }, { "o.txt", "o\n", 0, 0 } };
	struct file f1[] = { { "n.txt", b, 0, 0 }, { "o.txt", "o\n", 0, 0 } };
	struct file f2[] = { { "n.txt", a, 0, 0 }, { "o.txt", "other\n", 0, 0 } };
	struct al_oid t0 = tree(st, f0, 2), t1 = tree(st, f1, 2), t2 = tree(st, f2, 2);
	struct al_project_info p;
	struct al_draft_info d;
	struct al_commit_result res = { 0 };
	struct al_commit_opts o = { .strategy = AL_STRICT, .author = "t" };
	assert_int_equal(al_project_create(st, "p", &t0, "t", &p, &err), 0);
	assert_int_equal(al_draft_create(st, "p", &t1, "t", &d, &err), 0);
	assert_int_equal(al_project_commit(st, "p", &t0, &t2, &o, &res, &err), 0);
	al_commit_result_release(&res);
	unsigned h2[] = { 2 };
	struct al_apply_path ap = { "n.txt", h2, 1 };
	if (sel(st, d.id, &ap, 1, &res, &err) < 0)
		fail_msg("apply: %s", err.msg);
	assert_true(res.rebased);
	al_commit_result_release(&res);
	assert_int_equal(al_project_get(st, "p", &p, &err), 0);
	const char *r2[] = { "29", "TWENTY-NINE" };
	char *want = numbered(30, r2, 2), *got = file_at(st, &p.head, "n.txt", NULL);
	assert_string_equal(got, want);
	free(got);
	got = file_at(st, &p.head, "o.txt", NULL);
	assert_string_equal(got, "other\n");
	free(got);
	free(want);
	free(a);
	free(b);
	home_remove(home, st);
}

/* ---- merge_lines as a commit strategy ------------------------------------------- */

static void test_merge_lines_commit(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-hunks-XXXXXX";
	struct al_store *st = home_store(home);
	struct al_error err = { 0 };
	const char *csv = "id,amount\n1,10\n2,20\n3,30\n4,40\n5,50\n6,60\n7,70\n8,80\n";
	struct file f0[] = { { "data.csv", csv, 0, 0 }, { "bin", "a\0b", 3, 0 } };
	struct file ours[] = { { "data.csv",
				 "id,amount\n1,10\n2,20\n2b,25\n3,30\n4,40\n5,50\n6,"
				 "60\n7,70\n8,80\n",
				 0, 0755 },
			       { "bin", "a\0o", 3, 0 } };
	struct file theirs[] = { { "data.csv",
				   "id,amount\n1,10\n2,20\n3,30\n4,40\n5,50\n6,60\n7,"
				   "70\n8,80\n9,90\n",
				   0, 0 },
				 { "bin", "a\0b", 3, 0 },
				 { "x.txt", "x\n", 0, 0 } };
	struct file clash[] = { { "data.csv",
				  "id,amount\n1,10\n2,20\n2c,26\n3,30\n4,40\n5,50\n6,"
				  "60\n7,70\n8,80\n",
				  0, 0 },
				{ "bin", "a\0b", 3, 0 } };
	struct file binclash[] = { { "data.csv", csv, 0, 0 }, { "bin", "a\0t", 3, 0 } };
	struct file modeclash[] = { { "data.csv",
				      "id,amount\n1,10\n2,20\n3,30\n4,40\n5,50\n6,60\n"
				      "7,70\n8,80\n9,90\n",
				      0, 0600 },
				    { "bin", "a\0b", 3, 0 } };
	struct al_oid t0 = tree(st, f0, 2), to = tree(st, ours, 2), tt = tree(st, theirs, 3),
		      tc = tree(st, clash, 2), tb = tree(st, binclash, 2),
		      tm = tree(st, modeclash, 2);
	struct al_project_info p;
	struct al_commit_result res = { 0 };
	struct al_commit_opts o = { .strategy = AL_STRICT, .author = "t", .message = "m" };
	assert_int_equal(al_project_create(st, "p", &t0, "t", &p, &err), 0);
	assert_int_equal(al_project_commit(st, "p", &t0, &to, &o, &res, &err), 0); /* ours */
	al_commit_result_release(&res);
	assert_int_equal(al_project_get(st, "p", &p, &err), 0);
	struct al_oid head = p.head;

	/* the same file changed on both sides: rebase_if_disjoint refuses; so
	 * does merge_lines when the lines overlap, for a binary file, or when
	 * both sides changed the mode differently (ours 0755, theirs 0600);
	 * nothing moves */
	struct {
		enum al_strategy s;
		const struct al_oid *in;
		const char *path;
	} refused[] = {
		{ AL_REBASE_IF_DISJOINT, &tt, "data.csv" },
		{ AL_MERGE_LINES, &tc, "data.csv" },
		{ AL_MERGE_LINES, &tb, "bin" },
		{ AL_MERGE_LINES, &tm, "data.csv" },
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		o.strategy = refused[i].s;
		uint64_t size0 = ledger(st, NULL);
		int r = al_project_commit(st, "p", &t0, refused[i].in, &o, &res, &err);
		if (r != AL_ECONFLICT)
			fail_msg("refusal %zu: %d %s", i, r, err.msg);
		assert_int_equal(res.nconflicts, 1);
		assert_string_equal(res.conflicts[0].path, refused[i].path);
		assert_int_equal(res.nmerged, 0);
		al_commit_result_release(&res);
		assert_int_equal(al_project_get(st, "p", &p, &err), 0);
		assert_true(al_oid_eq(&p.head, &head));
		char *last = NULL;
		assert_int_equal(ledger(st, &last), size0 + 1); /* the refusal's record */
		assert_non_null(strstr(last, "\"outcome\":\"refused\""));
		assert_non_null(strstr(last, al_strategy_name(refused[i].s)));
		free(last);
	}
	/* merge_lines: the rows both land, and the disjoint new file */
	o.strategy = AL_MERGE_LINES;
	if (al_project_commit(st, "p", &t0, &tt, &o, &res, &err) < 0)
		fail_msg("merge_lines: %s", err.msg);
	assert_true(res.rebased);
	assert_int_equal(res.nmerged, 1);
	assert_string_equal(res.merged[0], "data.csv");
	assert_int_equal(res.nconflicts, 0);
	al_commit_result_release(&res);
	assert_int_equal(al_project_get(st, "p", &p, &err), 0);
	unsigned mode = 0;
	char *got = file_at(st, &p.head, "data.csv", &mode);
	assert_string_equal(
		got, "id,amount\n1,10\n2,20\n2b,25\n3,30\n4,40\n5,50\n6,60\n7,70\n8,80\n9,90\n");
	assert_int_equal(mode, 0755); /* the mode only ours changed */
	free(got);
	got = file_at(st, &p.head, "x.txt", NULL);
	assert_string_equal(got, "x\n");
	free(got);
	got = file_at(st, &p.head, "bin", NULL);
	assert_memory_equal(got, "a\0o", 3); /* ours: theirs did not change it */
	free(got);
	char *last = NULL;
	ledger(st, &last);
	assert_non_null(strstr(last, "\"merged\":[\"data.csv\"]"));
	assert_non_null(strstr(last, "\"strategy\":\"merge_lines\""));
	free(last);
	assert_int_equal(al_strategy_parse("merge_lines", &o.strategy, &err), 0);
	assert_int_equal(o.strategy, AL_MERGE_LINES);
	home_remove(home, st);
}

/* A file over 8 MiB is shown as binary: its hunks cannot be taken, and
 * merge_lines does not merge it. */
static void test_too_large(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-hunks-XXXXXX";
	struct al_store *st = home_store(home);
	struct al_error err = { 0 };
	size_t n = AL_REVIEW_TEXT_MAX + 4096;
	char *a = malloc(n + 1), *b = malloc(n + 1), *c = malloc(n + 1);
	assert_true(a && b && c);
	for (size_t i = 0; i < n; i++)
		a[i] = i % 64 == 63 ? '\n' : 'a';
	a[n] = 0;
	memcpy(b, a, n + 1);
	memcpy(c, a, n + 1);
	b[0] = 'B';     /* the first line */
	c[n - 2] = 'C'; /* the last: disjoint */
	struct file f0[] = { { "big.txt", a, n, 0 } }, f1[] = { { "big.txt", b, n, 0 } },
		    f2[] = { { "big.txt", c, n, 0 } };
	struct al_oid t0 = tree(st, f0, 1), t1 = tree(st, f1, 1), t2 = tree(st, f2, 1);
	struct al_project_info p;
	struct al_draft_info d;
	assert_int_equal(al_project_create(st, "p", &t0, "t", &p, &err), 0);
	assert_int_equal(al_draft_create(st, "p", &t1, "t", &d, &err), 0);
	uint64_t size0 = ledger(st, NULL);
	unsigned h1[] = { 1 };
	struct al_apply_path ap = { "big.txt", h1, 1 };
	struct al_commit_result res = { 0 };
	assert_int_equal(sel(st, d.id, &ap, 1, &res, &err), AL_EINVAL);
	assert_non_null(strstr(err.msg, "big.txt is over 8 MiB (shown as binary)"));
	assert_int_equal(ledger(st, NULL), size0);
	al_commit_result_release(&res);
	struct al_commit_opts o = { .strategy = AL_MERGE_LINES, .author = "t" };
	assert_int_equal(al_project_commit(st, "p", &t0, &t1, &o, &res, &err), 0);
	al_commit_result_release(&res);
	assert_int_equal(al_project_commit(st, "p", &t0, &t2, &o, &res, &err), AL_ECONFLICT);
	assert_int_equal(res.nmerged, 0);
	al_commit_result_release(&res);
	free(a);
	free(b);
	free(c);
	home_remove(home, st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_middle_last),
		cmocka_unit_test(test_adjacent_hunks),
		cmocka_unit_test(test_no_newline_at_eof),
		cmocka_unit_test(test_crlf),
		cmocka_unit_test(test_take_refusals),
		cmocka_unit_test(test_merge_lines),
		cmocka_unit_test(test_apply_hunks),
		cmocka_unit_test(test_hunks_on_moved_head),
		cmocka_unit_test(test_merge_lines_commit),
		cmocka_unit_test(test_too_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
