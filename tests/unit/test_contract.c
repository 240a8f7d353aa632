/* contract: gitignore-style globs, parsing refusals, and the verdict on a
 * run's changes and outputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "airlock/contract.h"

static struct al_contract *parse(const char *text)
{
	struct al_contract *c = NULL;
	struct al_error err = { 0 };
	int r = al_contract_parse_text(text, strlen(text), &c, &err);
	if (r < 0)
		fail_msg("parse %s: %s", text, err.msg);
	return c;
}

static void refused(const char *text, const char *msg_part)
{
	struct al_contract *c = NULL;
	struct al_error err = { 0 };
	int r = al_contract_parse_text(text, strlen(text), &c, &err);
	if (r != AL_EINVAL || !strstr(err.msg, msg_part))
		fail_msg("%s: expected AL_EINVAL with \"%s\", got %d \"%s\"", text, msg_part, r,
			 err.msg);
	assert_null(c);
}

static void test_globs(void **state)
{
	(void)state;
	struct al_contract *c = parse("{\"writable\": [\"src/**\", \"!src/secret/**\", \"*.md\", "
				      "\"reports/\", \"/top.txt\", \"a/*/c\", \"data/[ab]?.csv\", "
				      "\"build\"]}");
	static const struct {
		const char *path;
		bool w;
	} cases[] = {
		{ "src/a.c", true },
		{ "src/deep/er/a.c", true },
		{ "src/secret/key", false },
		{ "src/secret", true }, /* the directory itself is not beneath it */
		{ "README.md", true },
		{ "docs/x/y.md", true },
		{ "docs/x/y.mdx", false },
		{ "reports/q3.csv", true },
		{ "reports", true },
		{ "top.txt", true },
		{ "sub/top.txt", false },
		{ "a/b/c", true },
		{ "a/b/d/c", false },
		{ "a/b/c/d", true }, /* beneath a matching directory */
		{ "data/a1.csv", true },
		{ "data/c1.csv", false },
		{ "data/a12.csv", false },
		{ "x/build/y", true }, /* no slash: at any depth, and what is beneath */
		{ "other/file", false },
		{ "srcx/a", false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (al_contract_writable(c, cases[i].path) != cases[i].w)
			fail_msg("%s: writable should be %d", cases[i].path, cases[i].w);
	al_contract_free(c);
	/* UTF-8: "?" and brackets take a character, not a byte */
	c = parse("{\"writable\": [\"données/?.txt\", \"報告/[文字]?.csv\", \"/[!é]x\", "
		  "\"r/[à-ü]\", \"k/[[:digit:]]*[[:alpha:]]\", \"e/\\\\*\", \"m/*é*é\"]}");
	static const struct {
		const char *path;
		bool w;
	} utf8[] = {
		{ "données/é.txt", true },
		{ "données/ab.txt", false },
		{ "données/.txt", false },
		{ "報告/文件.csv", true },
		{ "報告/字x.csv", true },
		{ "報告/告件.csv", false },
		{ "ax", true },
		{ "éx", false },
		{ "r/ö", true },
		{ "r/a", false },
		{ "k/1é2b", true },
		{ "k/x1b", false },
		{ "e/*", true },
		{ "e/x", false },
		{ "m/ééé", true },
		{ "m/éxe", false },
		{ "m/\xc3", false }, /* half a character: read as a byte, matches nothing here */
	};
	for (size_t i = 0; i < sizeof(utf8) / sizeof(utf8[0]); i++)
		if (al_contract_writable(c, utf8[i].path) != utf8[i].w)
			fail_msg("%s: writable should be %d", utf8[i].path, utf8[i].w);
	al_contract_free(c);
	/* a long run of stars against a long name does not take exponential time */
	char pat[300] = "{\"writable\": [\"", name[5000];
	size_t pn = strlen(pat);
	for (int i = 0; i < 100; i++)
		pat[pn++] = i % 2 ? 'a' : '*';
	memcpy(pat + pn, "b\"]}", 5);
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	c = parse(pat);
	assert_false(al_contract_writable(c, name));
	al_contract_free(c);
	/* no writable list: everything */
	c = parse("{\"exit\": 0}");
	assert_true(al_contract_writable(c, "any/where"));
	assert_true(al_contract_writable(NULL, "any/where"));
	al_contract_free(c);
}

static void test_refusals(void **state)
{
	(void)state;
	refused("[1]", "not a JSON object");
	refused("{\"writable\": [\"a\"], \"writeable\": []}", "unknown key \"writeable\"");
	refused("{\"writable\": \"src\"}", "writable must be an array");
	refused("{\"writable\": [\"a/../b\"]}", "bad pattern");
	refused("{\"writable\": [\"a//b\"]}", "bad pattern");
	refused("{\"writable\": [\"[abc\"]}", "bad pattern");
	refused("{\"writable\": [\"\"]}", "1 to 4096 bytes");
	refused("{\"writable\": [\"a\\u0001b\"]}", "control character");
	refused("{\"writable\": [\"/\"]}", "names nothing");
	refused("{\"writable\": [\"[[:word:]]\"]}", "bad pattern");
	refused("{\"writable\": [\"[[:alpha:]\"]}", "bad pattern");
	refused("{\"writable\": [\"\xff\"]}", "not JSON"); /* jansson reads UTF-8 only */
	refused("{\"must_change\": [\"!a\"]}", "for writable only");
	refused("{\"writable\": [3]}", "writable[0] is not a string");
	refused("{\"exit\": 256}", "exit must be an integer");
	refused("{\"exit\": \"0\"}", "exit must be an integer");
	refused("{\"on_violation\": \"ignore\"}", "on_violation must be");
	refused("{\"outputs\": [{\"path\": \"a\"}]}", "exactly one of json_schema and regex");
	refused("{\"outputs\": [{\"path\": \"a\", \"stream\": \"stdout\", \"regex\": \"x\"}]}",
		"exactly one of path and stream");
	refused("{\"outputs\": [{\"stream\": \"stdin\", \"regex\": \"x\"}]}", "stdout");
	refused("{\"outputs\": [{\"path\": \"../etc/passwd\", \"regex\": \"x\"}]}",
		"outputs[0].path");
	refused("{\"outputs\": [{\"path\": \"a\", \"regex\": \"(\"}]}", "outputs[0].regex");
	refused("{\"outputs\": [{\"path\": \"a\", \"json_schema\": {\"type\": 5}}]}",
		"outputs[0].json_schema");
	refused("{\"outputs\": [{\"path\": \"a\", \"json_schema\": {\"$ref\": "
		"\"http://example.com/s.json\"}}]}",
		"outputs[0].json_schema");
	refused("{\"outputs\": [{\"path\": \"a\", \"regex\": \"x\", \"schema\": {}}]}",
		"unknown key \"schema\"");
	refused("{\"exit\": 0, \"exit\": 1}", "not JSON");
	/* a schema nested past the cap */
	char deep[4000] = "{\"outputs\": [{\"path\": \"a\", \"json_schema\": ";
	size_t n = strlen(deep);
	for (int i = 0; i < 600; i++)
		deep[n++] = '[';
	for (int i = 0; i < 600; i++)
		deep[n++] = ']';
	memcpy(deep + n, "}]}", 4);
	refused(deep, "outputs[0].json_schema");
}

/* ---- the verdict ------------------------------------------------------------ */

struct file {
	enum al_output_stream stream;
	const char *path, *text;
};

static int read_files(void *ctx, enum al_output_stream stream, const char *path, size_t max,
		      char **buf, size_t *len, struct al_error *err)
{
	(void)err;
	for (const struct file *f = ctx; f->text; f++)
		if (f->stream == stream && (stream != AL_OUT_FILE || strcmp(f->path, path) == 0)) {
			*len = strlen(f->text);
			if (*len > max)
				return AL_ELIMIT;
			*buf = strdup(f->text);
			return 0;
		}
	return AL_ENOTFOUND;
}

static void change(struct al_changes *cs, char op, const char *path)
{
	cs->v = realloc(cs->v, (cs->n + 1) * sizeof(*cs->v));
	struct al_change_rec *x = &cs->v[cs->n++];
	memset(x, 0, sizeof(*x));
	x->op = op;
	x->path = strdup(path);
	x->has_old = op != 'A';
	x->has_new = op != 'D';
	x->old.type = x->new.type = AL_T_FILE;
}

static json_t *check(const char *contract, struct al_changes *cs, const struct file *files,
		     int exit_code)
{
	struct al_contract *c = parse(contract);
	json_t *v = NULL;
	struct al_error err = { 0 };
	struct al_contract_input in = { cs, exit_code, read_files, (void *)files };
	assert_int_equal(al_contract_check(c, &in, &v, &err), 0);
	al_contract_free(c);
	return v;
}

static const char *dump(json_t *v)
{
	static char buf[8192];
	char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	snprintf(buf, sizeof(buf), "%s", s);
	free(s);
	return buf;
}

static void test_verdict(void **state)
{
	(void)state;
	struct al_changes cs = { 0 };
	change(&cs, 'M', "src/a.c");
	change(&cs, 'A', "etc/passwd");
	change(&cs, 'D', "config/prod.yml");
	change(&cs, 'A', "reports/out.json");
	change(&cs, 'A', "reports/bad.json");
	change(&cs, 'A', "reports/notjson.json");
	cs.v[cs.n - 1].new.type = AL_T_FILE;
	/* a directory added outside writable is judged by what is beneath it */
	change(&cs, 'A', "newdir");
	cs.v[cs.n - 1].new.type = AL_T_DIR;
	static const struct file files[] = {
		{ AL_OUT_FILE, "reports/out.json", "{\"total\": 3, \"rows\": [1, 2, 3]}" },
		{ AL_OUT_FILE, "reports/bad.json", "{\"total\": \"three\", \"rows\": [1, \"x\"]}" },
		{ AL_OUT_FILE, "reports/notjson.json", "{\"total\": 3," },
		{ AL_OUT_STDOUT, NULL, "line one\nTOTAL: 3\n" },
		{ AL_OUT_STDERR, NULL, "" },
		{ 0, NULL, NULL },
	};
	const char *schema = "{\"type\": \"object\", \"required\": [\"total\"], \"properties\": "
			     "{\"total\": {\"type\": \"integer\"}, \"rows\": {\"type\": \"array\", "
			     "\"items\": {\"type\": \"integer\"}}}}";
	char contract[2048];
	snprintf(contract, sizeof(contract),
		 "{\"writable\": [\"src/**\", \"reports/**\", \"config/**\"], "
		 "\"must_change\": [\"reports/out.json\", \"docs/**\"], "
		 "\"must_not_change\": [\"config/prod.yml\"], \"outputs\": ["
		 "{\"path\": \"reports/out.json\", \"json_schema\": %s}, "
		 "{\"path\": \"reports/bad.json\", \"json_schema\": %s}, "
		 "{\"path\": \"reports/notjson.json\", \"json_schema\": %s}, "
		 "{\"path\": \"reports/missing.json\", \"json_schema\": %s}, "
		 "{\"stream\": \"stdout\", \"regex\": \"^TOTAL: [0-9]+$\"}, "
		 "{\"stream\": \"stdout\", \"regex\": \"^GRAND TOTAL\"}], "
		 "\"on_violation\": \"block_apply\"}",
		 schema, schema, schema, schema);
	json_t *v = check(contract, &cs, files, 1);
	const char *s = dump(v);
	assert_string_equal(json_string_value(json_object_get(v, "verdict")), "violated");
	assert_string_equal(json_string_value(json_object_get(v, "on_violation")), "block_apply");
	json_t *vs = json_object_get(v, "violations");
	/* each violation, named */
	static const char *const want[] = {
		"{\"kind\":\"outside_writable\",\"op\":\"A\",\"path\":\"etc/passwd\"}",
		"{\"kind\":\"must_not_change\",\"op\":\"D\",\"path\":\"config/prod.yml\","
		"\"pattern\":\"config/prod.yml\"}",
		"{\"kind\":\"must_change\",\"pattern\":\"docs/**\"}",
		"{\"kind\":\"output_missing\",\"path\":\"reports/missing.json\"}",
		"{\"kind\":\"output_regex\",\"regex\":\"^GRAND TOTAL\",\"stream\":\"stdout\"}",
		"{\"actual\":1,\"expected\":0,\"kind\":\"exit\"}",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(s, want[i]))
			fail_msg("%s not in %s", want[i], s);
	assert_null(strstr(s, "src/a.c"));
	assert_null(strstr(s, "newdir"));
	assert_null(strstr(s, "\"path\":\"reports/out.json\",\"kind\""));
	/* the schema's failures: the file and where in it */
	bool schema_seen = false, notjson_seen = false;
	size_t i;
	json_t *x;
	json_array_foreach(vs, i, x) {
		const char *kind = json_string_value(json_object_get(x, "kind"));
		const char *path = json_string_value(json_object_get(x, "path"));
		if (strcmp(kind, "output_schema") == 0) {
			assert_string_equal(path, "reports/bad.json");
			const char *errs = dump(json_object_get(x, "errors"));
			assert_non_null(strstr(errs, "\"at\":\"/total\""));
			assert_non_null(strstr(errs, "\"at\":\"/rows/1\""));
			schema_seen = true;
		}
		if (strcmp(kind, "output_not_json") == 0) {
			assert_string_equal(path, "reports/notjson.json");
			assert_non_null(strstr(json_string_value(json_object_get(x, "message")),
					       "not JSON"));
			notjson_seen = true;
		}
	}
	assert_true(schema_seen && notjson_seen);
	assert_int_equal(json_array_size(vs), 8);
	json_decref(v);

	/* the same run against a contract it keeps */
	v = check("{\"writable\": [\"**\"], \"must_change\": [\"*.json\"], \"outputs\": ["
		  "{\"stream\": \"stdout\", \"regex\": \"^TOTAL: 3$\"}], \"exit\": 1}",
		  &cs, files, 1);
	assert_string_equal(dump(v), "{\"on_violation\":\"record\",\"verdict\":\"satisfied\","
				     "\"violations\":[]}");
	json_decref(v);
	al_changes_release(&cs);
}

static void test_caps(void **state)
{
	(void)state;
	/* 1,500 paths outside writable: 1,000 named, the rest counted */
	struct al_changes cs = { 0 };
	char p[32];
	for (int i = 0; i < 1500; i++) {
		snprintf(p, sizeof(p), "out/%04d", i);
		change(&cs, 'A', p);
	}
	static const struct file none[] = { { 0, NULL, NULL } };
	json_t *v = check("{\"writable\": [\"src/**\"]}", &cs, none, 0);
	assert_int_equal(json_array_size(json_object_get(v, "violations")), 1000);
	assert_int_equal(json_integer_value(json_object_get(v, "more")), 500);
	json_decref(v);
	al_changes_release(&cs);
	/* a hostile output: nested past the cap, or over the size the reader allows */
	char *deep = malloc(200002);
	memset(deep, '[', 100000);
	memset(deep + 100000, ']', 100000);
	deep[200000] = 0;
	const struct file f[] = { { AL_OUT_FILE, "o.json", deep }, { 0, NULL, NULL } };
	v = check("{\"outputs\": [{\"path\": \"o.json\", \"json_schema\": {}}]}", &cs, f, 0);
	assert_non_null(strstr(dump(v), "\"kind\":\"output_not_json\""));
	json_decref(v);
	free(deep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_globs),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_verdict),
		cmocka_unit_test(test_caps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
