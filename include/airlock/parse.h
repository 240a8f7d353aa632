/* airlock — the numbers people type: sizes, counts, durations, times.
 *
 * One syntax for every command and option (docs/cli.md, "Numbers").  Each
 * parser takes the largest value its caller allows; a value above it, or
 * past what 64 bits hold, is an error (AL_EUSAGE, exit 2), never wrapped or
 * clamped.  A '-' anywhere in a number is refused (strtoull would negate). */
#ifndef AIRLOCK_PARSE_H
#define AIRLOCK_PARSE_H

#include <stdint.h>

#include <airlock/error.h>

/* SIZE: a number (decimals allowed, "1.5G") and an optional unit K, M, G or
 * T in either case, 1024-based, optionally followed by "i", "B" or "iB"
 * ("64K", "64KiB", "2g", "100B").  In bytes, rounded to the nearest. */
int al_parse_size(const char *s, uint64_t max, uint64_t *out, struct al_error *err);

/* COUNT: a whole number, with the same optional K/M/G/T multipliers as a
 * size (1024-based; no "B"). */
int al_parse_count(const char *s, uint64_t max, uint64_t *out, struct al_error *err);

/* DECIMAL: a non-negative finite number ("0.5", "2", "1e3") up to max. */
int al_parse_decimal(const char *s, double max, double *out, struct al_error *err);

/* DURATION: seconds ("90", "1.5") or a number followed by s, m, h or d
 * ("30s", "5m", "2h", "7d", "1.5h").  In milliseconds, rounded. */
int al_parse_duration(const char *s, uint64_t max_ms, uint64_t *out_ms, struct al_error *err);

/* TIME: unix seconds, or an ISO date in UTC ("2026-01-31", "2026-01-31T12:00:00",
 * with or without a trailing Z, or a space for the T). */
int al_parse_time(const char *s, int64_t *out, struct al_error *err);

#endif
