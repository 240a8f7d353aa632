/* Private: the ledger export's text format (docs/formats.md), written by
 * al_ledger_export (ledger.c) and read by al_ledger_verify_file
 * (ledger_verify.c).  One item per line:
 *   airlock-ledger-export 1 | origin O | pubkey HEX | R LEVEL HEX (the prefix
 *   before the first entry, as complete subtrees) | E <entry> | B <sha256
 *   hex> <base64> | C SIZE ROOT TIME SIG | end N */
#ifndef AL_LEDGER_EXPORT_H
#define AL_LEDGER_EXPORT_H

#define AL_LEDGER_EXPORT_MAGIC "airlock-ledger-export 1"

#include <stdbool.h>
#include <stddef.h>

/* The members of an entry the verifier reads; has_* says a member is there
 * with the type the verifier needs (integers, strings; data: any value).
 * An entry whose kind or draft is too long for its buffer is not one. */
struct al_entry_fields {
	long long v, seq, commit_seq;
	char kind[64], draft[128];
	bool has_v, has_seq, has_kind, has_data, has_draft, has_commit_seq;
};

/* Read the line p[0..n) as a JSON object (jansson's rules, duplicates
 * refused): 0 and *out, or -1 if it is not one. */
int al_ledger__entry_fields(const char *p, size_t n, struct al_entry_fields *out);
/* Its two halves, for the tests: the fast scanner (1: read, 0: undecided)
 * and jansson (0 or -1). */
int al_ledger__entry_scan(const char *p, size_t n, struct al_entry_fields *out);
int al_ledger__entry_parse(const char *p, size_t n, struct al_entry_fields *out);

#endif
