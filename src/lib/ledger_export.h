/* Private: the ledger export's text format (docs/formats.md), written by
 * al_ledger_export (ledger.c) and read by al_ledger_verify_file
 * (ledger_verify.c).  One item per line:
 *   airlock-ledger-export 1 | origin O | pubkey HEX | R LEVEL HEX (the prefix
 *   before the first entry, as complete subtrees) | E <entry> | B <sha256
 *   hex> <base64> | C SIZE ROOT TIME SIG | end N */
#ifndef AL_LEDGER_EXPORT_H
#define AL_LEDGER_EXPORT_H

#define AL_LEDGER_EXPORT_MAGIC "airlock-ledger-export 1"

#endif
