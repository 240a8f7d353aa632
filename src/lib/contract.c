/* contract: a run's contract, parsed and checked (contract.h).
 *
 * Patterns are gitignore's globs, without its file-relative parts: a
 * pattern is matched against the path from the workspace's root; one
 * without a slash (but a trailing one) matches at any depth ("*.tmp"); a
 * leading slash anchors it; "**" as a whole segment matches any number of
 * segments (a trailing one at least one: what is inside a directory,
 * as in gitignore); "*", "?", "[...]" and backslash escapes within a segment are
 * fnmatch(3)'s, read by code point (segment_match), and "*" never crosses a slash; a pattern that
 * matches a directory matches everything beneath it; a trailing slash is dropped. In writable, "!"
 * negates and the last matching pattern decides. */
#include <errno.h>
#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/contract.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "jsonschema.h"
#include "ledger_private.h"
#include "run_contract.h"
#include "db.h"
#include "store_private.h"
#include "util.h"

#define PATTERNS_MAX 1000
#define PATTERN_LEN_MAX 4096
#define OUTPUTS_MAX 100
#define VIOLATIONS_MAX 1000
#define SCHEMA_ERRORS_MAX 20
#define OUTPUT_MAX AL_JSONSCHEMA_DOC_MAX

struct glob {
	char *text; /* as given */
	char **seg; /* "**" stays as is; segments point into buf */
	bool *lit;  /* the segment has no wildcard: strcmp */
	size_t n;
	bool neg;
	char *buf;
};

struct globs {
	struct glob *v;
	size_t n;
};

struct output {
	enum al_output_stream stream;
	char *path; /* AL_OUT_FILE */
	struct al_jsonschema *schema;
	regex_t re;
	bool has_re;
	char *re_text;
};

struct al_contract {
	json_t *json;
	struct globs writable, must, must_not;
	bool has_writable;
	struct output *out;
	size_t nout;
	int exit_code;
	enum al_contract_action action;
};

static const char *const action_names[] = { "record", "drop", "block_apply" };

const char *al_contract_action_name(enum al_contract_action a)
{
	return (unsigned)a < ARRAY_SIZE(action_names) ? action_names[a] : "record";
}

int al_contract_action_parse(const char *s, enum al_contract_action *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(action_names); i++)
		if (strcmp(s, action_names[i]) == 0) {
			*out = (enum al_contract_action)i;
			return 0;
		}
	return AL_EINVAL;
}

/* ---- globs ----------------------------------------------------------------- */

static void glob_release(struct glob *g)
{
	free(g->text);
	free(g->seg);
	free(g->lit);
	free(g->buf);
}

static void globs_release(struct globs *gs)
{
	for (size_t i = 0; i < gs->n; i++)
		glob_release(&gs->v[i]);
	free(gs->v);
	memset(gs, 0, sizeof(*gs));
}

/* ---- one segment's glob, by code point ------------------------------------
 *
 * fnmatch(3) in the C locale reads bytes: "?" would not match "é" and a
 * bracket would hold half of a character. Patterns and paths are UTF-8, so
 * a segment is matched here by code point: "*" (any run, never a slash:
 * segments hold none), "?" (one character), "[...]" ("!" or "^" negates, a
 * leading "]" is literal, ranges by code point, the ASCII classes
 * "[:alpha:]" and kin) and "\" (the next character literally). A path that
 * is not UTF-8 is read a byte at a time. */

static uint32_t next_cp(const char **sp)
{
	const unsigned char *s = (const unsigned char *)*sp;
	uint32_t c = s[0];
	int n = c < 0x80 ? 0 : c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : -1;
	if (n > 0) {
		uint32_t v = c & (0x3f >> n);
		int i = 1;
		for (; i <= n && (s[i] & 0xc0) == 0x80; i++)
			v = v << 6 | (s[i] & 0x3f);
		if (i > n) {
			*sp += n + 1;
			return v;
		}
	}
	*sp += 1;
	return n ? 0x80000000u | c : c; /* a stray byte stands for itself */
}

static const struct {
	const char *name;
	int (*is)(int);
} cp_classes[] = {
	{ "alnum", isalnum }, { "alpha", isalpha }, { "blank", isblank }, { "cntrl", iscntrl },
	{ "digit", isdigit }, { "graph", isgraph }, { "lower", islower }, { "print", isprint },
	{ "punct", ispunct }, { "space", isspace }, { "upper", isupper }, { "xdigit", isxdigit },
};

/* "[:name:]" at p: its class's index, and *end past it; -1 if none. */
static int named_class(const char *p, const char **end)
{
	if (p[0] != '[' || p[1] != ':')
		return -1;
	const char *e = strstr(p + 2, ":]");
	if (!e)
		return -1;
	for (size_t i = 0; i < sizeof(cp_classes) / sizeof(cp_classes[0]); i++)
		if ((size_t)(e - p - 2) == strlen(cp_classes[i].name) &&
		    memcmp(p + 2, cp_classes[i].name, (size_t)(e - p - 2)) == 0) {
			*end = e + 2;
			return (int)i;
		}
	return -1;
}

/* The bracket expression after its "[" at p: whether c is in it (when in
 * is not NULL), and a pointer past its "]"; NULL if it is not closed or
 * names an unknown class. */
static const char *bracket(const char *p, uint32_t c, bool *in)
{
	bool neg = *p == '!' || *p == '^', hit = false;
	if (neg)
		p++;
	for (bool first = true; first || *p != ']'; first = false) {
		if (!*p)
			return NULL;
		const char *e;
		int k = named_class(p, &e);
		if (k >= 0) {
			hit |= c < 0x80 && cp_classes[k].is((int)c);
			p = e;
			continue;
		}
		if (p[0] == '[' && p[1] == ':')
			return NULL; /* "[:" opens a class this matcher does not know */
		if (*p == '\\' && !*++p)
			return NULL;
		uint32_t lo = next_cp(&p), hi = lo;
		if (p[0] == '-' && p[1] && p[1] != ']') {
			p++;
			if (*p == '\\' && !*++p)
				return NULL;
			hi = next_cp(&p);
		}
		hit |= lo <= c && c <= hi;
	}
	if (in)
		*in = hit != neg;
	return p + 1;
}

/* A segment's brackets are closed and name known classes, and it does not
 * end in a lone backslash. */
static bool segment_ok(const char *s)
{
	for (const char *p = s; *p;) {
		if (*p == '\\') {
			if (!*++p)
				return false;
			next_cp(&p);
		} else if (*p == '[') {
			if (!(p = bracket(p + 1, 0, NULL)))
				return false;
		} else {
			p++;
		}
	}
	return true;
}

/* Does pattern p (checked by segment_ok) match all of segment s? "*" keeps
 * the last place it could resume: linear in practice, never exponential. */
static bool segment_match(const char *p, const char *s)
{
	const char *star_p = NULL, *star_s = NULL;
	while (*s) {
		if (*p == '*') {
			while (*p == '*')
				p++;
			star_p = p;
			star_s = s;
			continue;
		}
		const char *q = p, *t = s;
		bool ok = false;
		if (*q == '?') {
			q++;
			next_cp(&t);
			ok = true;
		} else if (*q == '[') {
			q = bracket(q + 1, next_cp(&t), &ok);
		} else if (*q) {
			if (*q == '\\')
				q++;
			ok = next_cp(&q) == next_cp(&t);
		}
		if (ok) {
			p = q;
			s = t;
			continue;
		}
		if (!star_p)
			return false;
		next_cp(&star_s);
		p = star_p;
		s = star_s;
	}
	while (*p == '*')
		p++;
	return !*p;
}

static int glob_compile(const char *field, const char *text, bool allow_neg, struct glob *g,
			struct al_error *err)
{
	memset(g, 0, sizeof(*g));
	size_t len = strlen(text);
	const char *p = text;
	if (len == 0 || len > PATTERN_LEN_MAX || !al_utf8_valid((const uint8_t *)text, len))
		return al_fail(err, AL_EINVAL, 0,
			       "contract: %s: a pattern must be 1 to %d bytes of UTF-8", field,
			       PATTERN_LEN_MAX);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
			return al_fail(err, AL_EINVAL, 0,
				       "contract: %s: a pattern has a control character", field);
	if (*p == '!') {
		if (!allow_neg)
			return al_fail(err, AL_EINVAL, 0,
				       "contract: %s: \"!\" (negation) is for writable only",
				       field);
		g->neg = true;
		p++;
	}
	bool anchored = *p == '/';
	if (anchored)
		p++;
	size_t n = strlen(p);
	while (n && p[n - 1] == '/')
		n--; /* a trailing slash: a directory, which matches what is beneath */
	if (!n)
		return al_fail(err, AL_EINVAL, 0, "contract: %s: pattern \"%s\" names nothing",
			       field, text);
	bool has_slash = memchr(p, '/', n) != NULL;
	/* "name" (no slash) matches at any depth: "**" then the name */
	size_t extra = !anchored && !has_slash;
	g->buf = malloc(n + 4);
	g->text = strdup(text);
	size_t cap = extra + 1;
	for (size_t i = 0; i < n; i++)
		cap += p[i] == '/';
	g->seg = calloc(cap, sizeof(char *));
	g->lit = calloc(cap, sizeof(bool));
	if (!g->buf || !g->text || !g->seg || !g->lit) {
		glob_release(g);
		return al_fail(err, AL_ENOMEM, ENOMEM, "contract");
	}
	memcpy(g->buf, "**", 3);
	memcpy(g->buf + 3, p, n);
	g->buf[3 + n] = 0;
	if (extra)
		g->seg[g->n++] = g->buf;
	for (char *s = g->buf + 3, *e; s; s = e) {
		e = strchr(s, '/');
		if (e)
			*e++ = 0;
		if (!*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || !segment_ok(s)) {
			int r = al_fail(
				err, AL_EINVAL, 0,
				"contract: %s: bad pattern \"%s\" (an empty, \".\" or \"..\" "
				"segment, an unclosed \"[\" or a trailing \"\\\")",
				field, text);
			glob_release(g);
			return r;
		}
		g->lit[g->n] = strpbrk(s, "*?[\\") == NULL;
		g->seg[g->n++] = s;
	}
	return 0;
}

/* Do segments seg[0..np) match the glob's segments from gi on? */
static bool match_from(const struct glob *g, size_t gi, char *const *seg, size_t np)
{
	for (; gi < g->n; gi++) {
		if (strcmp(g->seg[gi], "**") == 0) {
			/* "**" takes 0..np segments (at the end 1..np, as in gitignore):
			 * try every split (patterns are short) */
			for (size_t k = gi + 1 == g->n; k <= np; k++)
				if (match_from(g, gi + 1, seg + k, np - k))
					return true;
			return false;
		}
		if (!np)
			return false;
		if (g->lit[gi] ? strcmp(g->seg[gi], seg[0]) != 0
			       : !segment_match(g->seg[gi], seg[0]))
			return false;
		seg++;
		np--;
	}
	return np == 0;
}

/* The path or one of its directories matches g. */
static bool glob_match(const struct glob *g, char *const *seg, size_t np)
{
	for (size_t k = 1; k <= np; k++)
		if (match_from(g, 0, seg, k))
			return true;
	return false;
}

#define SEGS_MAX 1024
struct split {
	char *buf;
	char *seg[SEGS_MAX];
	size_t n;
};

static bool split_path(const char *path, struct split *sp)
{
	sp->n = 0;
	sp->buf = strdup(path);
	if (!sp->buf)
		return false;
	for (char *s = sp->buf, *e; s && *s; s = e) {
		e = strchr(s, '/');
		if (e)
			*e++ = 0;
		if (sp->n == SEGS_MAX) {
			free(sp->buf);
			return false;
		}
		sp->seg[sp->n++] = s;
	}
	return true;
}

static int globs_parse(const json_t *j, const char *field, bool allow_neg, struct globs *gs,
		       struct al_error *err)
{
	memset(gs, 0, sizeof(*gs));
	if (!j)
		return 0;
	if (!json_is_array(j) || json_array_size(j) > PATTERNS_MAX)
		return al_fail(err, AL_EINVAL, 0,
			       "contract: %s must be an array of at most %d patterns", field,
			       PATTERNS_MAX);
	gs->v = calloc(json_array_size(j) + 1, sizeof(*gs->v));
	if (!gs->v)
		return al_fail(err, AL_ENOMEM, ENOMEM, "contract");
	size_t i;
	json_t *e;
	json_array_foreach(j, i, e) {
		if (!json_is_string(e)) {
			globs_release(gs);
			return al_fail(err, AL_EINVAL, 0, "contract: %s[%zu] is not a string",
				       field, i);
		}
		int r = glob_compile(field, json_string_value(e), allow_neg, &gs->v[gs->n], err);
		if (r < 0) {
			globs_release(gs);
			return r;
		}
		gs->n++;
	}
	return 0;
}

/* ---- parse ----------------------------------------------------------------- */

static void output_release(struct output *o)
{
	free(o->path);
	free(o->re_text);
	al_jsonschema_free(o->schema);
	if (o->has_re)
		regfree(&o->re);
}

void al_contract_free(struct al_contract *c)
{
	if (!c)
		return;
	json_decref(c->json);
	globs_release(&c->writable);
	globs_release(&c->must);
	globs_release(&c->must_not);
	for (size_t i = 0; i < c->nout; i++)
		output_release(&c->out[i]);
	free(c->out);
	free(c);
}

static int output_parse(const json_t *j, size_t i, struct output *o, struct al_error *err)
{
	memset(o, 0, sizeof(*o));
	const char *k;
	json_t *v;
	if (!json_is_object(j))
		return al_fail(err, AL_EINVAL, 0, "contract: outputs[%zu] is not an object", i);
	json_object_foreach((json_t *)j, k, v)
		if (strcmp(k, "path") && strcmp(k, "stream") && strcmp(k, "json_schema") &&
		    strcmp(k, "regex"))
			return al_fail(err, AL_EINVAL, 0,
				       "contract: outputs[%zu]: unknown key \"%s\"", i, k);
	const json_t *path = json_object_get(j, "path"), *stream = json_object_get(j, "stream"),
		     *schema = json_object_get(j, "json_schema"), *re = json_object_get(j, "regex");
	if (!path == !stream)
		return al_fail(err, AL_EINVAL, 0,
			       "contract: outputs[%zu] needs exactly one of path and stream", i);
	if (!schema == !re)
		return al_fail(err, AL_EINVAL, 0,
			       "contract: outputs[%zu] needs exactly one of json_schema and regex",
			       i);
	const char *why = NULL;
	if (path) {
		if (!json_is_string(path) || !al_path_valid(json_string_value(path), &why))
			return al_fail(err, AL_EINVAL, 0, "contract: outputs[%zu].path: %s", i,
				       why ? why : "not a string");
		if (!(o->path = strdup(json_string_value(path))))
			return al_fail(err, AL_ENOMEM, ENOMEM, "contract");
		o->stream = AL_OUT_FILE;
	} else if (json_is_string(stream) && strcmp(json_string_value(stream), "stdout") == 0) {
		o->stream = AL_OUT_STDOUT;
	} else if (json_is_string(stream) && strcmp(json_string_value(stream), "stderr") == 0) {
		o->stream = AL_OUT_STDERR;
	} else {
		return al_fail(err, AL_EINVAL, 0,
			       "contract: outputs[%zu].stream must be \"stdout\" or \"stderr\"", i);
	}
	if (schema) {
		char *text = json_dumps(schema, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!text)
			return al_fail(err, AL_ENOMEM, ENOMEM, "contract");
		struct al_error e2 = { 0 };
		int r = al_jsonschema_compile(text, strlen(text), &o->schema, &e2);
		free(text);
		if (r < 0)
			return al_fail(err, r, 0, "contract: outputs[%zu].json_schema: %s", i,
				       e2.msg);
		return 0;
	}
	if (!json_is_string(re) || json_string_length(re) == 0 ||
	    json_string_length(re) > PATTERN_LEN_MAX)
		return al_fail(err, AL_EINVAL, 0,
			       "contract: outputs[%zu].regex must be 1 to %d bytes of text", i,
			       PATTERN_LEN_MAX);
	int rc = regcomp(&o->re, json_string_value(re), REG_EXTENDED | REG_NOSUB | REG_NEWLINE);
	if (rc != 0) {
		char msg[128];
		regerror(rc, &o->re, msg, sizeof(msg));
		return al_fail(err, AL_EINVAL, 0, "contract: outputs[%zu].regex: %s", i, msg);
	}
	o->has_re = true;
	if (!(o->re_text = strdup(json_string_value(re))))
		return al_fail(err, AL_ENOMEM, ENOMEM, "contract");
	return 0;
}

int al_contract_parse(const json_t *j, struct al_contract **out, struct al_error *err)
{
	*out = NULL;
	if (!json_is_object(j))
		return al_fail(err, AL_EINVAL, 0, "contract: not a JSON object");
	static const char *const keys[] = { "writable", "must_change", "must_not_change",
					    "outputs",  "exit",        "on_violation" };
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)j, k, v) {
		size_t i = 0;
		while (i < ARRAY_SIZE(keys) && strcmp(k, keys[i]))
			i++;
		if (i == ARRAY_SIZE(keys))
			return al_fail(err, AL_EINVAL, 0,
				       "contract: unknown key \"%s\" (writable, must_change, "
				       "must_not_change, outputs, exit, on_violation)",
				       k);
	}
	struct al_contract *c = calloc(1, sizeof(*c));
	if (!c)
		return al_fail(err, AL_ENOMEM, ENOMEM, "contract");
	c->json = json_deep_copy(j);
	int r = c->json ? 0 : al_fail(err, AL_ENOMEM, ENOMEM, "contract");
	c->has_writable = json_object_get(j, "writable") != NULL;
	if (r == 0)
		r = globs_parse(json_object_get(j, "writable"), "writable", true, &c->writable,
				err);
	if (r == 0)
		r = globs_parse(json_object_get(j, "must_change"), "must_change", false, &c->must,
				err);
	if (r == 0)
		r = globs_parse(json_object_get(j, "must_not_change"), "must_not_change", false,
				&c->must_not, err);
	const json_t *outs = json_object_get(j, "outputs");
	if (r == 0 && outs && (!json_is_array(outs) || json_array_size(outs) > OUTPUTS_MAX))
		r = al_fail(err, AL_EINVAL, 0, "contract: outputs must be an array of at most %d",
			    OUTPUTS_MAX);
	if (r == 0 && outs && !(c->out = calloc(json_array_size(outs) + 1, sizeof(*c->out))))
		r = al_fail(err, AL_ENOMEM, ENOMEM, "contract");
	for (size_t i = 0; r == 0 && outs && i < json_array_size(outs); i++) {
		r = output_parse(json_array_get(outs, i), i, &c->out[i], err);
		if (r < 0)
			output_release(&c->out[i]);
		else
			c->nout++;
	}
	const json_t *ex = json_object_get(j, "exit");
	if (r == 0 && ex &&
	    (!json_is_integer(ex) || json_integer_value(ex) < 0 || json_integer_value(ex) > 255))
		r = al_fail(err, AL_EINVAL, 0, "contract: exit must be an integer from 0 to 255");
	c->exit_code = ex ? (int)json_integer_value(ex) : 0;
	const json_t *act = json_object_get(j, "on_violation");
	if (r == 0 && act &&
	    (!json_is_string(act) || al_contract_action_parse(json_string_value(act), &c->action)))
		r = al_fail(err, AL_EINVAL, 0,
			    "contract: on_violation must be record, drop or block_apply");
	if (r < 0) {
		al_contract_free(c);
		return r;
	}
	*out = c;
	return 0;
}

int al_contract_parse_text(const char *text, size_t len, struct al_contract **out,
			   struct al_error *err)
{
	*out = NULL;
	if (len > AL_CONTRACT_MAX)
		return al_fail(err, AL_ELIMIT, 0, "contract: larger than %u bytes",
			       AL_CONTRACT_MAX);
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return al_fail(err, AL_EINVAL, 0, "contract: not JSON: %s (line %d)", je.text,
			       je.line);
	int r = al_contract_parse(j, out, err);
	json_decref(j);
	return r;
}

const json_t *al_contract_json(const struct al_contract *c)
{
	return c->json;
}

enum al_contract_action al_contract_action(const struct al_contract *c)
{
	return c->action;
}

/* ---- check ----------------------------------------------------------------- */

static bool writable_split(const struct al_contract *c, char *const *seg, size_t n)
{
	if (!c->has_writable)
		return true;
	bool w = false;
	for (size_t i = 0; i < c->writable.n; i++)
		if (glob_match(&c->writable.v[i], seg, n))
			w = !c->writable.v[i].neg;
	return w;
}

bool al_contract_writable(const struct al_contract *c, const char *path)
{
	if (!c || !c->has_writable)
		return true;
	struct split sp;
	if (!split_path(path, &sp))
		return false;
	bool w = writable_split(c, sp.seg, sp.n);
	free(sp.buf);
	return w;
}

struct verdict {
	json_t *list;
	size_t more;
};

static int add(struct verdict *vd, json_t *v, struct al_error *err)
{
	if (!v)
		return al_fail(err, AL_ENOMEM, ENOMEM, "contract");
	if (json_array_size(vd->list) >= VIOLATIONS_MAX) {
		json_decref(v);
		vd->more++;
		return 0;
	}
	return json_array_append_new(vd->list, v) == 0
		       ? 0
		       : al_fail(err, AL_ENOMEM, ENOMEM, "contract");
}

/* Directories are judged by the files and links beneath them. */
static bool is_dir_change(const struct al_change_rec *x)
{
	return (!x->has_old || x->old.type == AL_T_DIR) && (!x->has_new || x->new.type == AL_T_DIR);
}

static int check_paths(const struct al_contract *c, const struct al_changes *cs, struct verdict *vd,
		       struct al_error *err)
{
	bool *hit = calloc(c->must.n + 1, sizeof(bool));
	if (!hit)
		return al_fail(err, AL_ENOMEM, ENOMEM, "contract");
	int r = 0;
	for (size_t i = 0; r == 0 && cs && i < cs->n; i++) {
		const struct al_change_rec *x = &cs->v[i];
		if (is_dir_change(x))
			continue;
		struct split sp;
		if (!split_path(x->path, &sp)) {
			r = al_fail(err, AL_ENOMEM, ENOMEM, "contract");
			break;
		}
		char op[2] = { x->op, 0 };
		if (!writable_split(c, sp.seg, sp.n))
			r = add(vd,
				json_pack("{s:s,s:s,s:s}", "kind", "outside_writable", "path",
					  x->path, "op", op),
				err);
		for (size_t g = 0; r == 0 && g < c->must_not.n; g++)
			if (glob_match(&c->must_not.v[g], sp.seg, sp.n)) {
				r = add(vd,
					json_pack("{s:s,s:s,s:s,s:s}", "kind", "must_not_change",
						  "path", x->path, "op", op, "pattern",
						  c->must_not.v[g].text),
					err);
				break;
			}
		for (size_t g = 0; g < c->must.n; g++)
			if (!hit[g] && glob_match(&c->must.v[g], sp.seg, sp.n))
				hit[g] = true;
		free(sp.buf);
	}
	for (size_t g = 0; r == 0 && g < c->must.n; g++)
		if (!hit[g])
			r = add(vd,
				json_pack("{s:s,s:s}", "kind", "must_change", "pattern",
					  c->must.v[g].text),
				err);
	free(hit);
	return r;
}

static json_t *where(const struct output *o)
{
	return o->stream == AL_OUT_FILE
		       ? json_pack("{s:s}", "path", o->path)
		       : json_pack("{s:s}", "stream",
				   o->stream == AL_OUT_STDOUT ? "stdout" : "stderr");
}

static int with_kind(struct verdict *vd, const struct output *o, const char *kind, json_t *more,
		     struct al_error *err)
{
	json_t *v = where(o);
	if (v) {
		json_object_set_new(v, "kind", json_string(kind));
		if (more)
			json_object_update(v, more);
	}
	json_decref(more);
	return add(vd, v, err);
}

static int check_output(const struct output *o, const struct al_contract_input *in,
			struct verdict *vd, struct al_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	struct al_error e2 = { 0 };
	int r = in->read(in->ctx, o->stream, o->path, OUTPUT_MAX, &buf, &len, &e2);
	if (r == AL_ENOTFOUND)
		return with_kind(vd, o, "output_missing", NULL, err);
	if (r == AL_ELIMIT)
		return with_kind(vd, o, "output_too_large",
				 json_pack("{s:I}", "max", (json_int_t)OUTPUT_MAX), err);
	if (r < 0) {
		*err = e2;
		return r;
	}
	if (o->schema) {
		json_t *errs = json_array();
		r = errs ? al_jsonschema_validate(o->schema, buf, len, errs, SCHEMA_ERRORS_MAX, err)
			 : al_fail(err, AL_ENOMEM, ENOMEM, "contract");
		if (r == 1)
			r = with_kind(vd, o, "output_schema", json_pack("{s:O}", "errors", errs),
				      err);
		else if (r == 2)
			r = with_kind(
				vd, o, "output_not_json",
				json_pack("{s:O}", "message",
					  json_object_get(json_array_get(errs, 0), "message")),
				err);
		json_decref(errs);
	} else {
		/* the reader leaves a spare byte: a terminator, as regexec's
		 * interceptors (and some libcs) read to one despite REG_STARTEND */
		if (buf)
			buf[len] = 0;
		regmatch_t m = { .rm_so = 0, .rm_eo = (regoff_t)len };
		if (regexec(&o->re, buf ? buf : "", 1, &m, REG_STARTEND) != 0)
			r = with_kind(vd, o, "output_regex",
				      json_pack("{s:s}", "regex", o->re_text), err);
	}
	free(buf);
	return r < 0 ? r : 0;
}

int al_contract_check(const struct al_contract *c, const struct al_contract_input *in,
		      json_t **verdict, struct al_error *err)
{
	*verdict = NULL;
	struct verdict vd = { json_array(), 0 };
	if (!vd.list)
		return al_fail(err, AL_ENOMEM, ENOMEM, "contract");
	int r = check_paths(c, in->changes, &vd, err);
	for (size_t i = 0; r == 0 && i < c->nout; i++)
		r = check_output(&c->out[i], in, &vd, err);
	if (r == 0 && in->exit_code != c->exit_code)
		r = add(&vd,
			json_pack("{s:s,s:i,s:i}", "kind", "exit", "expected", c->exit_code,
				  "actual", in->exit_code),
			err);
	if (r < 0) {
		json_decref(vd.list);
		return r;
	}
	bool ok = json_array_size(vd.list) == 0;
	*verdict =
		json_pack("{s:s,s:s,s:o}", "verdict", ok ? "satisfied" : "violated", "on_violation",
			  al_contract_action_name(c->action), "violations", vd.list);
	if (*verdict && vd.more)
		json_object_set_new(*verdict, "more", json_integer((json_int_t)vd.more));
	return *verdict ? 0 : al_fail(err, AL_ENOMEM, ENOMEM, "contract");
}

/* ---- a project's default contract ------------------------------------------ */

static int contract_load(struct al_db *db, const char *project, json_t **out, struct al_error *err)
{
	*out = NULL;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(db, "SELECT doc FROM project_contracts WHERE project = ?1", &q, err);
	if (r < 0)
		return r;
	al_db_bind_text(q, 1, project, -1);
	if ((r = al_db_step(q, err)) <= 0)
		return r == AL_DB_DONE ? 0 : al_error_prefix(err, "project contract: ");
	json_error_t je;
	*out = json_loads(al_db_column_text(q, 0), 0, &je);
	return *out ? 0
		    : al_fail(err, AL_ECORRUPT, 0, "project %s: stored contract: %s", project,
			      je.text);
}

int al_project__contract_load(struct al_store *st, const char *project, json_t **out,
			      struct al_error *err)
{
	*out = NULL;
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	return r < 0 ? r : contract_load(db, project, out, err);
}

int al_project_contract_get(struct al_store *st, const char *project, json_t **out,
			    struct al_error *err)
{
	*out = NULL;
	struct al_project_info p;
	struct al_db *db;
	int r = al_project_get(st, project, &p, err);
	if (r == 0)
		r = al_store__meta_db(st, &db, err);
	return r < 0 ? r : contract_load(db, project, out, err);
}

/* Replace the project's row: DELETE and INSERT in the transaction, which
 * both engines run alike (an upsert's conflict target would differ:
 * PostgreSQL's keys begin with the tenant). */
static int contract_store(struct al_db *db, const char *project, const char *doc, const char *actor,
			  struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *del = NULL, *ins = NULL;
	int r = al_db_prepare(db, "DELETE FROM project_contracts WHERE project = ?1", &del, err);
	if (r < 0)
		return r;
	al_db_bind_text(del, 1, project, -1);
	if ((r = al_db_step(del, err)) < 0 || !doc)
		return r < 0 ? al_error_prefix(err, "project contract: ") : 0;
	if ((r = al_db_prepare(db,
			       "INSERT INTO project_contracts(project, doc, set_by, time) "
			       "VALUES (?1, ?2, ?3, ?4)",
			       &ins, err)) < 0)
		return r;
	al_db_bind_text(ins, 1, project, -1);
	al_db_bind_text(ins, 2, doc, -1);
	al_db_bind_text(ins, 3, actor ? actor : "", -1);
	al_db_bind_int64(ins, 4, al_wall_s());
	r = al_db_step(ins, err);
	return r < 0 ? al_error_prefix(err, "project contract: ") : 0;
}

int al_project_contract_set(struct al_store *st, const char *project, const json_t *contract,
			    const char *actor, struct al_error *err)
{
	struct al_contract *c = NULL;
	struct al_project_info p;
	int r = al_project_get(st, project, &p, err);
	if (r == 0 && contract)
		r = al_contract_parse(contract, &c, err);
	al_contract_free(c);
	if (actor && *actor && r == 0)
		r = al_text_check("author", actor, 255, err);
	struct al_db *db;
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	if (r < 0 || (r = al_store__meta_db(st, &db, err)) < 0 ||
	    (r = al_db_begin(db, AL_DB_WRITE, &txn, err)) < 0)
		return r;
	json_t *before = NULL;
	_cleanup_free_ char *doc =
		contract ? json_dumps(contract, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if ((r = contract_load(db, project, &before, err)) == 0 && contract && !doc)
		r = al_fail(err, AL_ENOMEM, ENOMEM, "contract");
	if (r == 0)
		r = contract_store(db, project, doc, actor, err);
	if (r == 0) {
		char group[17];
		al_ledger__new_group(group);
		json_t *data = json_pack("{s:O?,s:O?}", "before", before, "after", contract);
		struct al_ledger_rec lr = { .kind = "project_contract",
					    .group = group,
					    .project = project,
					    .actor = actor ? actor : "",
					    .data = data };
		r = data ? al_ledger__append_txn(st, &txn, &lr, NULL, err)
			 : al_fail(err, AL_ENOMEM, ENOMEM, "contract");
		json_decref(data);
	}
	json_decref(before);
	return al_ledger__commit(st, &txn, r, err);
}
