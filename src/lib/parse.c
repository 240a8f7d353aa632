/* The numbers people type (include/airlock/parse.h).  Whole numbers are
 * parsed exactly (strtoull) and checked against max before any shift, so a
 * multiplier cannot wrap; decimals go through strtod and are checked as
 * doubles before the conversion. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <airlock/parse.h>

#include "util.h"

struct number {
	bool whole; /* exact in u */
	uint64_t u;
	double d; /* always set */
	const char *end;
};

/* The number at the start of s, either exactly (digits only) or as a
 * decimal; -1 for no number, a '-' or a non-finite value, -2 past 64 bits
 * (or a double's range). */
static int number(const char *s, struct number *n)
{
	if (strchr(s, '-'))
		return -1;
	char *end;
	errno = 0;
	unsigned long long u = strtoull(s, &end, 10);
	bool digits = end != s && !strchr(".eExXpP", *end ? *end : '?');
	if (digits) {
		if (errno == ERANGE)
			return -2;
		*n = (struct number){ .whole = true, .u = u, .d = (double)u, .end = end };
		return 0;
	}
	errno = 0;
	double d = strtod(s, &end);
	if (end == s || d < 0 || isnan(d))
		return -1;
	if (errno == ERANGE || !isfinite(d))
		return d == 0 ? -1 : -2;
	*n = (struct number){ .whole = false, .d = d, .end = end };
	return 0;
}

static int unit_shift(char c)
{
	switch (c) {
	case 'k':
	case 'K': return 10;
	case 'm':
	case 'M': return 20;
	case 'g':
	case 'G': return 30;
	case 't':
	case 'T': return 40;
	default: return -1;
	}
}

/* n times 2^shift into out, if it is at most max */
static int scaled(const struct number *n, unsigned shift, uint64_t max, uint64_t *out)
{
	if (n->whole) {
		if (n->u > (max >> shift))
			return -1;
		*out = n->u << shift;
		return 0;
	}
	double v = ldexp(n->d, (int)shift);
	if (!(v < 18446744073709551616.0) || llround(v) < 0 || (uint64_t)llround(v) > max)
		return -1;
	*out = (uint64_t)llround(v);
	return 0;
}

static int multiplied(const char *s, bool bytes, uint64_t max, uint64_t *out, struct al_error *err)
{
	const char *what = bytes ? "size" : "count";
	struct number n;
	int r = number(s, &n);
	if (r == -2)
		return al_fail(err, AL_EUSAGE, 0, "'%s' is too large (at most %llu)", s,
			       (unsigned long long)max);
	if (r < 0 || (!bytes && !n.whole))
		return al_fail(err, AL_EUSAGE, 0, "'%s' is not a %s", s, what);
	const char *p = n.end;
	int shift = 0;
	if (*p && unit_shift(*p) >= 0)
		shift = unit_shift(*p++);
	if (bytes) {
		if (*p == 'i')
			p++;
		if (*p == 'B')
			p++;
	}
	if (*p)
		return al_fail(err, AL_EUSAGE, 0, "'%s' is not a %s (units: K, M, G, T)", s, what);
	if (scaled(&n, (unsigned)shift, max, out) < 0)
		return al_fail(err, AL_EUSAGE, 0, "'%s' is too large (at most %llu)", s,
			       (unsigned long long)max);
	return 0;
}

int al_parse_size(const char *s, uint64_t max, uint64_t *out, struct al_error *err)
{
	return multiplied(s, true, max, out, err);
}

int al_parse_count(const char *s, uint64_t max, uint64_t *out, struct al_error *err)
{
	return multiplied(s, false, max, out, err);
}

int al_parse_decimal(const char *s, double max, double *out, struct al_error *err)
{
	struct number n;
	int r = number(s, &n);
	if (r == -1 || (r == 0 && *n.end))
		return al_fail(err, AL_EUSAGE, 0, "'%s' is not a number", s);
	if (r == -2 || n.d > max)
		return al_fail(err, AL_EUSAGE, 0, "'%s' is too large (at most %g)", s, max);
	*out = n.d;
	return 0;
}

int al_parse_duration(const char *s, uint64_t max_ms, uint64_t *out_ms, struct al_error *err)
{
	struct number n;
	int r = number(s, &n);
	if (r == -2)
		return al_fail(err, AL_EUSAGE, 0, "'%s' is too long", s);
	if (r < 0)
		return al_fail(err, AL_EUSAGE, 0,
			       "'%s' is not a duration (seconds, or N followed by s, m, h or d)",
			       s);
	uint64_t ms = 1000;
	switch (*n.end) {
	case 0: break;
	case 's':
		ms = 1000;
		n.end++;
		break;
	case 'm':
		ms = 60 * 1000;
		n.end++;
		break;
	case 'h':
		ms = 3600 * 1000;
		n.end++;
		break;
	case 'd':
		ms = 86400 * 1000;
		n.end++;
		break;
	default: n.end = "?";
	}
	if (*n.end)
		return al_fail(err, AL_EUSAGE, 0,
			       "'%s' is not a duration (seconds, or N followed by s, m, h or d)",
			       s);
	bool over;
	if (n.whole) {
		over = n.u > max_ms / ms;
		if (!over)
			*out_ms = n.u * ms;
	} else {
		double v = n.d * (double)ms;
		over = !(v < 18446744073709551616.0) || (uint64_t)llround(v) > max_ms;
		if (!over)
			*out_ms = (uint64_t)llround(v);
	}
	if (over)
		return al_fail(err, AL_EUSAGE, 0, "'%s' is too long (at most %llu s)", s,
			       (unsigned long long)(max_ms / 1000));
	return 0;
}

int al_parse_time(const char *s, int64_t *out, struct al_error *err)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (*s && !*end) {
		if (errno == ERANGE)
			return al_fail(err, AL_EUSAGE, 0, "'%s' is too large a time", s);
		*out = v;
		return 0;
	}
	static const char *const fmts[] = { "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S",
					    "%Y-%m-%d %H:%M:%S", "%Y-%m-%d" };
	for (size_t i = 0; i < ARRAY_SIZE(fmts); i++) {
		struct tm tm = { 0 };
		end = strptime(s, fmts[i], &tm);
		if (end && !*end) {
			*out = timegm(&tm);
			return 0;
		}
	}
	return al_fail(err, AL_EUSAGE, 0, "'%s' is not a time (unix seconds or an ISO date, UTC)",
		       s);
}
