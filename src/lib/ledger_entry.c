/* ledger_entry: the members of a ledger entry that the offline verifier
 * reads (ledger_export.h), from one exported line.
 *
 * jansson took 50,000 instructions for a 265-byte entry, most of a
 * verify. The scanner here reads the common entry in one pass and is
 * sound, not complete: it answers "a JSON object with these members" only
 * for text jansson accepts with the same members (RFC 8259 grammar, UTF-8,
 * no duplicate key, nothing after the value), and "undecided" for anything
 * it does not handle (a \u escape, a real number, an escape in a key or in
 * a member it returns, deep nesting, many keys), which jansson then
 * reads. tests/unit/test_ledger.c holds the two to the same answers. */
#include <string.h>

#include <jansson.h>

#include "ledger_export.h"
#include "util.h"

#define SCAN_DEPTH_MAX 16
#define SCAN_KEYS_MAX 32

struct scan {
	const unsigned char *p, *e;
	struct al_entry_fields *out;
};

enum role { R_OTHER, R_TOP, R_DATA };

static void ws(struct scan *s)
{
	while (s->p < s->e && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* A string at s->p (its opening quote): the span between the quotes, and
 * whether it holds escapes. false: undecided. */
static bool string(struct scan *s, const unsigned char **a, size_t *len, bool *esc)
{
	const unsigned char *start = ++s->p;
	bool high = false;
	*esc = false;
	for (;;) {
		if (s->p >= s->e)
			return false;
		unsigned char c = *s->p;
		if (c == '"')
			break;
		if (c < 0x20)
			return false;
		high |= c >= 0x80;
		if (c == '\\') {
			if (s->p + 1 >= s->e || !s->p[1] || !strchr("\"\\/bfnrt", s->p[1]))
				return false; /* \u and the rest: jansson's to judge */
			*esc = true;
			s->p += 2;
			continue;
		}
		s->p++;
	}
	*a = start;
	*len = (size_t)(s->p - start);
	s->p++;
	return !high || al_utf8_valid(start, *len);
}

/* An integer of at most 18 digits (a long long either way). false:
 * undecided (a real, a leading zero, a longer one). */
static bool integer(struct scan *s, long long *out)
{
	const unsigned char *q = s->p;
	bool neg = q < s->e && *q == '-';
	q += neg;
	if (q >= s->e || *q < '0' || *q > '9' ||
	    (*q == '0' && q + 1 < s->e && q[1] >= '0' && q[1] <= '9'))
		return false;
	long long v = 0;
	int digits = 0;
	for (; q < s->e && *q >= '0' && *q <= '9'; q++) {
		if (++digits > 18)
			return false;
		v = v * 10 + (*q - '0');
	}
	if (q < s->e && (*q == '.' || *q == 'e' || *q == 'E'))
		return false;
	s->p = q;
	*out = neg ? -v : v;
	return true;
}

static bool literal(struct scan *s, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(s->e - s->p) < n || memcmp(s->p, w, n) != 0)
		return false;
	s->p += n;
	return true;
}

/* A short string member without escapes, copied (NUL-terminated). */
static bool copy(const unsigned char *a, size_t len, bool esc, char *dst, size_t cap)
{
	if (esc || len >= cap)
		return false;
	memcpy(dst, a, len);
	dst[len] = 0;
	return true;
}

static bool value(struct scan *s, int depth, enum role role, const unsigned char *key, size_t klen);

static bool is_key(const unsigned char *key, size_t klen, const char *name)
{
	return key && klen == strlen(name) && memcmp(key, name, klen) == 0;
}

static bool object(struct scan *s, int depth, enum role role)
{
	const unsigned char *keys[SCAN_KEYS_MAX];
	size_t klens[SCAN_KEYS_MAX], nk = 0;
	s->p++;
	ws(s);
	if (s->p < s->e && *s->p == '}') {
		s->p++;
		return true;
	}
	for (;;) {
		const unsigned char *k;
		size_t kl;
		bool esc;
		if (s->p >= s->e || *s->p != '"' || !string(s, &k, &kl, &esc) || esc ||
		    nk == SCAN_KEYS_MAX)
			return false;
		for (size_t i = 0; i < nk; i++)
			if (klens[i] == kl && memcmp(keys[i], k, kl) == 0)
				return false; /* a duplicate: jansson refuses it, with its words */
		keys[nk] = k;
		klens[nk++] = kl;
		ws(s);
		if (s->p >= s->e || *s->p != ':')
			return false;
		s->p++;
		ws(s);
		if (!value(s, depth + 1, role, k, kl))
			return false;
		ws(s);
		if (s->p < s->e && *s->p == ',') {
			s->p++;
			ws(s);
			continue;
		}
		if (s->p < s->e && *s->p == '}') {
			s->p++;
			return true;
		}
		return false;
	}
}

static bool array(struct scan *s, int depth)
{
	s->p++;
	ws(s);
	if (s->p < s->e && *s->p == ']') {
		s->p++;
		return true;
	}
	for (;;) {
		if (!value(s, depth + 1, R_OTHER, NULL, 0))
			return false;
		ws(s);
		if (s->p < s->e && *s->p == ',') {
			s->p++;
			ws(s);
			continue;
		}
		if (s->p < s->e && *s->p == ']') {
			s->p++;
			return true;
		}
		return false;
	}
}

/* A value at s->p; role is the object holding it (key its name), whose
 * members of note are recorded. */
static bool value(struct scan *s, int depth, enum role role, const unsigned char *key, size_t klen)
{
	struct al_entry_fields *f = s->out;
	if (depth > SCAN_DEPTH_MAX || s->p >= s->e)
		return false;
	const unsigned char *a;
	size_t len;
	bool esc;
	long long n;
	switch (*s->p) {
	case '{':
		if (role == R_TOP && is_key(key, klen, "data")) {
			f->has_data = true;
			return object(s, depth, R_DATA);
		}
		return object(s, depth, R_OTHER);
	case '[': f->has_data |= role == R_TOP && is_key(key, klen, "data"); return array(s, depth);
	case '"':
		if (!string(s, &a, &len, &esc))
			return false;
		if (role == R_TOP && is_key(key, klen, "kind")) {
			if (!copy(a, len, esc, f->kind, sizeof(f->kind)))
				return false;
			f->has_kind = true;
		} else if (role == R_DATA && is_key(key, klen, "draft")) {
			if (!copy(a, len, esc, f->draft, sizeof(f->draft)))
				return false;
			f->has_draft = true;
		}
		f->has_data |= role == R_TOP && is_key(key, klen, "data");
		return true;
	case 't':
	case 'f':
	case 'n':
		f->has_data |= role == R_TOP && is_key(key, klen, "data");
		return literal(s, "true") || literal(s, "false") || literal(s, "null");
	default:
		if (!integer(s, &n))
			return false;
		if (role == R_TOP && is_key(key, klen, "v")) {
			f->v = n;
			f->has_v = true;
		} else if (role == R_TOP && is_key(key, klen, "seq")) {
			f->seq = n;
			f->has_seq = true;
		} else if (role == R_DATA && is_key(key, klen, "commit_seq")) {
			f->commit_seq = n;
			f->has_commit_seq = true;
		}
		f->has_data |= role == R_TOP && is_key(key, klen, "data");
		return true;
	}
}

int al_ledger__entry_scan(const char *p, size_t n, struct al_entry_fields *out)
{
	memset(out, 0, sizeof(*out));
	struct scan s = { (const unsigned char *)p, (const unsigned char *)p + n, out };
	ws(&s);
	if (s.p >= s.e || *s.p != '{' || !object(&s, 1, R_TOP))
		return 0;
	ws(&s);
	return s.p == s.e;
}

/* A string member into its buffer; false if it does not fit. */
static bool copy_member(const char *v, char *dst, size_t cap, bool *has)
{
	if (!v)
		return true;
	if (strlen(v) >= cap)
		return false;
	snprintf(dst, cap, "%s", v);
	*has = true;
	return true;
}

int al_ledger__entry_parse(const char *p, size_t n, struct al_entry_fields *out)
{
	memset(out, 0, sizeof(*out));
	json_error_t je;
	json_t *e = json_loadb(p, n, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(e)) {
		json_decref(e);
		return -1;
	}
	json_t *v = json_object_get(e, "v"), *seq = json_object_get(e, "seq"),
	       *data = json_object_get(e, "data");
	if ((out->has_v = json_is_integer(v)))
		out->v = json_integer_value(v);
	if ((out->has_seq = json_is_integer(seq)))
		out->seq = json_integer_value(seq);
	out->has_data = data != NULL;
	json_t *cs = json_object_get(data, "commit_seq");
	if ((out->has_commit_seq = json_is_integer(cs)))
		out->commit_seq = json_integer_value(cs);
	bool fit = copy_member(json_string_value(json_object_get(e, "kind")), out->kind,
			       sizeof(out->kind), &out->has_kind) &&
		   copy_member(json_string_value(json_object_get(data, "draft")), out->draft,
			       sizeof(out->draft), &out->has_draft);
	json_decref(e);
	return fit ? 0 : -1;
}

int al_ledger__entry_fields(const char *p, size_t n, struct al_entry_fields *out)
{
	return al_ledger__entry_scan(p, n, out) ? 0 : al_ledger__entry_parse(p, n, out);
}
