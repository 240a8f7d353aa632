/* airlock audit [list] | show | checkpoint | export | verify | pubkey | prove */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "airlock/cas.h"
#include "airlock/ledger.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "cli.h"
#include "airlock/util.h"

static int open_store(struct cli *cli, struct al_store **st)
{
	struct al_error err = { 0 };
	return cli_open(cli, st, &err) < 0 ? cli_error(cli, &err) : 0;
}

static void entry_text(json_t *e)
{
	char when[32];
	time_t t = (time_t)json_integer_value(json_object_get(e, "time"));
	struct tm tm;
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	const char *project = json_string_value(json_object_get(e, "project"));
	/* the canonical encoding (ledger.c): compact, sorted keys, ASCII */
	char *canon = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
	printf("%lld %s %s %s %s %s\n", (long long)json_integer_value(json_object_get(e, "seq")),
	       when, cli_esc(json_string_value(json_object_get(e, "kind")), "-"),
	       cli_esc(json_string_value(json_object_get(e, "group")), "-"), cli_esc(project, "-"),
	       canon ? canon : "");
	free(canon);
}

static int ledger_local(struct al_store *st, const void *q, json_t **out, struct al_error *err)
{
	*out = json_array();
	return view_ledger(st, q, *out, err);
}

static int entry_local(struct al_store *st, const void *seq, json_t **out, struct al_error *err)
{
	return view_ledger_entry(st, *(const unsigned long long *)seq, out, err);
}

static int checkpoint_local(struct al_store *st, const void *arg, json_t **out,
			    struct al_error *err)
{
	(void)arg;
	return view_checkpoint(st, out, err);
}

/* name=value&… of the given query (values percent-encoded) */
static void query_add(char *q, size_t n, const char *name, const char *value)
{
	if (!value)
		return;
	char esc[600];
	size_t len = strlen(q);
	snprintf(q + len, n - len, "%c%s=%s", len ? '&' : '?', name,
		 cli_path_escape(value, esc, sizeof(esc)));
}

/* every kind of ledger entry (docs/formats.md, "Ledger") */
#define KINDS                                                                         \
	"project_create, draft_create, commit, apply, reject, conflict, run,\n  gc, " \
	"gc_retention, project_contract, tenant_create, principal_create, grant,\n  " \
	"token_create, token_revoke, image_import, policy, refused,\n  "              \
	"integration_create, integration_grant, integration_rotate, integration_delete"

static bool known_kind(const char *k)
{
	static const char *const kinds[] = {
		"project_create",
		"draft_create",
		"commit",
		"apply",
		"reject",
		"conflict",
		"run",
		"gc",
		"gc_retention",
		"project_contract",
		"tenant_create",
		"principal_create",
		"grant",
		"token_create",
		"token_revoke",
		"image_import",
		"policy",
		"refused",
		"integration_create",
		"integration_grant",
		"integration_rotate",
		"integration_delete",
	};
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (!strcmp(k, kinds[i]))
			return true;
	return false;
}

static int audit_list(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "group", required_argument, NULL, 'g' },
		{ "project", required_argument, NULL, 'p' },
		{ "kind", required_argument, NULL, 'k' },
		{ "since", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct al_ledger_query q = { 0 };
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'g': q.group = optarg; break;
		case 'p': q.project = optarg; break;
		case 'k':
			if (!known_kind(optarg))
				return cli_usage(cli, "unknown --kind '%s' (one of %s)",
						 cli_esc(optarg, ""), KINDS);
			q.kind = optarg;
			break;
		case 'j': cli->json = true; break;
		case 's':
			if (al_parse_time(optarg, &q.since, NULL) < 0)
				return cli_usage(
					cli,
					"--since takes unix seconds or YYYY-MM-DD[THH:MM:SSZ]");
			break;
		case 'h':
			printf("usage: airlock audit [--group G] [--project P] [--kind K] [--since "
			       "T] [--json]\n"
			       "       airlock audit show ENTRY | checkpoint | export FILE | "
			       "verify [FILE] | pubkey | prove ENTRY\n\n"
			       "List the tenant's ledger entries, oldest first: seq time kind "
			       "group project\n"
			       "and the entry itself (its canonical JSON). --kind K, one of:\n"
			       "  " KINDS "\n"
			       "--since: unix seconds or an ISO date (UTC). On a terminal the list "
			       "goes\n"
			       "through the pager ($AIRLOCK_PAGER, $PAGER or less -FRX).\n");
			return 0;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (optind != argc)
		return cli_usage(cli, "unexpected argument '%s'", argv[optind]);
	char query[2048] = "", since[32], path[2100];
	query_add(query, sizeof(query), "group", q.group);
	query_add(query, sizeof(query), "project", q.project);
	query_add(query, sizeof(query), "kind", q.kind);
	snprintf(since, sizeof(since), "%lld", (long long)q.since);
	query_add(query, sizeof(query), "since", q.since ? since : NULL);
	snprintf(path, sizeof(path), "/audit%s", query);
	json_t *arr;
	int rc = cli_fetch(cli, path, ledger_local, &q, &arr);
	cli->page = true;
	return rc >= 0 ? rc : cli_print_list(cli, arr, entry_text);
}

/* A value of an entry's data on one line: strings as they are, the rest as
 * compact JSON; long ones cut (--json has them whole) */
static void value_text(json_t *v)
{
	char *s = json_is_string(v) ? NULL : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	const char *t = cli_esc(json_is_string(v) ? json_string_value(v) : s, "?");
	size_t n = strlen(t);
	printf("%.*s%s\n", n > 160 ? 160 : (int)n, t, n > 160 ? "…" : "");
	free(s);
}

/* audit show for people: who did what when, the data key by key, the
 * delta, the proof's verdict, the content */
static void show_text(json_t *out)
{
	json_t *e = json_object_get(out, "entry");
	const char *project = json_string_value(json_object_get(e, "project"));
	printf("entry     %lld %s by %s, %s\n",
	       (long long)json_integer_value(json_object_get(e, "seq")),
	       cli_esc(json_string_value(json_object_get(e, "kind")), "-"),
	       cli_esc(json_string_value(json_object_get(e, "actor")), "-"),
	       cli_when(json_integer_value(json_object_get(e, "time")), 0));
	printf("tenant    %s\n", cli_esc(json_string_value(json_object_get(e, "tenant")), "-"));
	if (project)
		printf("project   %s\n", cli_esc(project, "-"));
	printf("group     %s\n", cli_esc(json_string_value(json_object_get(e, "group")), "-"));
	json_t *data = json_object_get(e, "data");
	const char *k;
	json_t *v;
	size_t width = 4, i;
	json_object_foreach(data, k, v)
		if (strlen(k) > width)
			width = strlen(k);
	if (width > 24)
		width = 24;
	bool first = true;
	/* jansson keeps insertion order; the ledger's is sorted */
	json_object_foreach(data, k, v) {
		printf("%s%-*s ", first ? "data      " : "          ", (int)width, cli_esc(k, "?"));
		value_text(v);
		first = false;
	}
	json_t *d = json_object_get(out, "delta");
	if (json_is_object(d)) {
		printf("delta     +%lld ~%lld -%lld\n",
		       (long long)json_integer_value(json_object_get(d, "added")),
		       (long long)json_integer_value(json_object_get(d, "modified")),
		       (long long)json_integer_value(json_object_get(d, "deleted")));
		json_array_foreach(json_object_get(d, "paths"), i, v)
			printf("          %s\n", cli_esc(json_string_value(v), "?"));
	}
	printf("leaf      %s\n", cli_esc(json_string_value(json_object_get(out, "leaf")), "-"));
	json_t *cp = json_object_get(out, "checkpoint");
	if (json_is_object(cp))
		printf("proof     %s in the checkpoint of size %lld (root %.12s…, %zu hashes)\n",
		       json_is_true(json_object_get(out, "included")) ? "included" : "NOT included",
		       (long long)json_integer_value(json_object_get(cp, "size")),
		       cli_esc(json_string_value(json_object_get(cp, "root")), "-"),
		       json_array_size(json_object_get(out, "inclusion_proof")));
	json_object_foreach(json_object_get(out, "content"), k, v) {
		const char *text = json_string_value(v);
		size_t n = text ? strlen(text) : 0;
		printf("--- %s (%zu bytes)\n", cli_esc(k, "?"), n);
		if (n) {
			fflush(stdout);
			cli_write_output(stdout, 1, text, n);
			if (text[n - 1] != '\n')
				putchar('\n');
		}
	}
}

static int audit_show(struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(
		cli, argc, argv,
		"usage: airlock audit show ENTRY [--json]\n\n"
		"One ledger entry: the entry, its leaf hash, its inclusion proof in the latest\n"
		"checkpoint, the delta summary of a commit or apply (added/modified/deleted,\n"
		"first 50 paths) and the text of any content it names (stdout, stderr).\n"
		"Text: a line per field (the data's values cut at 160 characters; a run's\n"
		"output shown as run show shows it). --json: the whole answer, as the API\n"
		"gives it (GET /api/audit/SEQ).\n",
		1);
	if (rc >= 0)
		return rc;
	char *end;
	unsigned long long seq = strtoull(argv[optind], &end, 10);
	if (!*argv[optind] || *end)
		return cli_usage(cli, "ENTRY is a sequence number");
	json_t *out;
	char path[64];
	snprintf(path, sizeof(path), "/audit/%llu", seq);
	if ((rc = cli_fetch(cli, path, entry_local, &seq, &out)) >= 0)
		return rc;
	if (cli->json)
		return cli_json_print(out);
	show_text(out);
	json_decref(out);
	return 0;
}

static int audit_checkpoint(struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(
		cli, argc, argv,
		"usage: airlock audit checkpoint [--json]\n\n"
		"The latest signed checkpoint as one line: origin size root time signature.\n"
		"Save it: `airlock audit verify --trusted-checkpoint FILE` later proves that\n"
		"the ledger still extends exactly this tree.\n",
		0);
	if (rc >= 0)
		return rc;
	json_t *out;
	if ((rc = cli_fetch(cli, "/audit/checkpoint", checkpoint_local, NULL, &out)) >= 0)
		return rc;
	if (cli->json)
		return cli_json_print(out);
	puts(json_string_value(json_object_get(out, "line")));
	json_decref(out);
	return 0;
}

/* a checkpoint given as a line, or a file holding one */
static int load_checkpoint(struct cli *cli, const char *arg, struct al_checkpoint *cp)
{
	struct al_error err = { 0 };
	char buf[600];
	const char *line = arg;
	FILE *f = strchr(arg, ' ') ? NULL : fopen(arg, "re");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
		line = buf;
	}
	return al_checkpoint_parse(line, cp, &err) < 0 ? cli_error(cli, &err) : 0;
}

static int audit_export(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "since-checkpoint", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *since = NULL;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': since = optarg; break;
		case 'j': cli->json = true; break;
		case 'h':
			printf("usage: airlock audit export FILE [--since-checkpoint C] "
			       "[--json]\n\n"
			       "Write the ledger for offline verification: every entry, every "
			       "signed\n"
			       "checkpoint, the public key and the content blobs entries name. "
			       "With\n"
			       "--since-checkpoint (a size, or a saved checkpoint line or file) "
			       "only the\n"
			       "entries after it, plus the hashes needed to continue the tree.\n");
			return 0;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (argc - optind != 1)
		return cli_usage(cli, "expected FILE");
	uint64_t from = 0;
	if (since) {
		char *end;
		unsigned long long v = strtoull(since, &end, 10);
		if (*since && !*end) {
			from = v;
		} else {
			struct al_checkpoint cp;
			int rc = load_checkpoint(cli, since, &cp);
			if (rc)
				return rc;
			from = cp.size;
		}
	}
	struct al_error err = { 0 };
	uint64_t n = 0;
	int r, rc;
	if (cli->server) {
		/* downloaded, then verified here: what arrived is what the server holds */
		char path[64];
		json_t *doc = NULL;
		struct al_verify_report rep;
		snprintf(path, sizeof(path), "/audit/export?from=%llu", (unsigned long long)from);
		if ((r = cli_http(cli, "GET", path, NULL, NULL, argv[optind], &doc, &err)) < 0)
			return cli_remote_error(cli, &err, doc);
		if ((r = al_ledger_verify_file(argv[optind], NULL, NULL, &rep, &err)) < 0) {
			unlink(argv[optind]);
			return cli_error(cli, &err);
		}
		n = rep.entries;
	} else {
		struct al_store *st = NULL;
		if ((rc = open_store(cli, &st)))
			return rc;
		r = al_ledger_export(st, from, argv[optind], &n, &err);
		al_store_close(st);
		if (r < 0)
			return cli_error(cli, &err);
	}
	if (cli->json)
		return cli_json_print(json_pack("{s:s,s:I,s:I}", "file", argv[optind], "from",
						(json_int_t)from, "entries", (json_int_t)n));
	if (!cli->quiet)
		fprintf(stderr, "exported %llu entries to %s\n", (unsigned long long)n,
			cli_esc(argv[optind], "?"));
	return 0;
}

static int load_key(struct cli *cli, const char *arg, uint8_t raw[AL_ED25519_KEY_LEN])
{
	struct al_error err = { 0 };
	if (strlen(arg) == 64 && al_unhex(arg, AL_ED25519_KEY_LEN, raw) == 0)
		return 0;
	FILE *f = fopen(arg, "re");
	EVP_PKEY *k = f ? PEM_read_PUBKEY(f, NULL, NULL, NULL) : NULL;
	if (f)
		fclose(f);
	size_t len = AL_ED25519_KEY_LEN;
	int ok = k && EVP_PKEY_get_id(k) == EVP_PKEY_ED25519 &&
		 EVP_PKEY_get_raw_public_key(k, raw, &len) > 0 && len == AL_ED25519_KEY_LEN;
	EVP_PKEY_free(k);
	if (!ok) {
		al_fail(&err, AL_EINVAL, 0,
			"--key: %s is not an Ed25519 public key (PEM file or 64 hex digits)", arg);
		return cli_error(cli, &err);
	}
	return 0;
}

static int audit_verify(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "key", required_argument, NULL, 'k' },
		{ "trusted-checkpoint", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *keyarg = NULL, *trusted = NULL;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'k': keyarg = optarg; break;
		case 't': trusted = optarg; break;
		case 'j': cli->json = true; break;
		case 'h':
			printf("usage: airlock audit verify [FILE] [--key PUBKEY] "
			       "[--trusted-checkpoint C]\n\n"
			       "Verify an export offline (or, without FILE, this tenant's live "
			       "ledger):\n"
			       "every entry in sequence with no gap, every checkpoint's root and "
			       "Ed25519\n"
			       "signature, references (apply -> draft, conflict -> commit), "
			       "included content\n"
			       "against its digest, and consistency with a checkpoint saved "
			       "earlier.\n"
			       "--key: the public key to trust (PEM from `airlock audit pubkey`, "
			       "or hex);\n"
			       "without it the key inside the export is used, and the report says "
			       "so.\n"
			       "Exit 0 if all holds, 4 naming the first bad entry otherwise.\n");
			return 0;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (argc - optind > 1)
		return cli_usage(cli, "expected at most one FILE");
	uint8_t key[AL_ED25519_KEY_LEN];
	struct al_checkpoint tcp;
	int rc;
	if (keyarg && (rc = load_key(cli, keyarg, key)))
		return rc;
	if (trusted && (rc = load_checkpoint(cli, trusted, &tcp)))
		return rc;
	struct al_error err = { 0 };
	char tmp[4200] = "";
	const char *file = argc - optind == 1 ? argv[optind] : NULL;
	int r = 0;
	if (!file) {
		/* the live ledger: export it whole, then verify that */
		struct al_store *st = NULL;
		if ((rc = open_store(cli, &st)))
			return rc;
		snprintf(tmp, sizeof(tmp), "%s/tmp/verify-%d.ledger", al_store_dir(st),
			 (int)getpid());
		r = al_ledger_export(st, 0, tmp, NULL, &err);
		if (r == 0 && !keyarg)
			r = al_ledger_pubkey(st, key, NULL, 0, &err),
			keyarg = "(this deployment's key)";
		al_store_close(st);
		file = tmp;
	}
	struct al_verify_report rep;
	if (r == 0)
		r = al_ledger_verify_file(file, keyarg ? key : NULL, trusted ? &tcp : NULL, &rep,
					  &err);
	if (tmp[0])
		unlink(tmp);
	if (r < 0) {
		fprintf(stderr, "%s: FAILED: %s\n", cli->prog, err.msg);
		if (cli->json)
			cli_json_print(json_pack("{s:b,s:s,s:s}", "ok", 0, "code", al_code_name(r),
						 "error", err.msg));
		return al_code_exit(r);
	}
	char root[65];
	al_hex(rep.root, AL_DIGEST_LEN, root);
	if (cli->json)
		return cli_json_print(
			json_pack("{s:b,s:I,s:I,s:I,s:I,s:s,s:b,s:b}", "ok", 1, "entries",
				  (json_int_t)rep.entries, "first", (json_int_t)rep.first_seq,
				  "checkpoints", (json_int_t)rep.checkpoints, "content",
				  (json_int_t)rep.blobs, "root", root, "key_from_export",
				  rep.key_from_export, "trusted_checkpoint", trusted != NULL));
	printf("ok: %llu entries from %llu, %llu checkpoints, %llu content blobs, root %s\n",
	       (unsigned long long)rep.entries, (unsigned long long)rep.first_seq,
	       (unsigned long long)rep.checkpoints, (unsigned long long)rep.blobs, root);
	if (rep.key_from_export)
		printf("warning: signatures checked with the key inside the export; pass --key to "
		       "trust a key you hold\n");
	if (trusted)
		printf("consistent with the trusted checkpoint of size %llu\n",
		       (unsigned long long)tcp.size);
	return 0;
}

static int audit_pubkey(struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(
		cli, argc, argv,
		"usage: airlock audit pubkey [--json]\n\n"
		"The deployment's ledger public key (Ed25519) as PEM, for auditors:\n"
		"`airlock audit verify FILE --key pubkey.pem`.\n",
		0);
	if (rc >= 0)
		return rc;
	struct al_store *st = NULL;
	if ((rc = open_store(cli, &st)))
		return rc;
	struct al_error err = { 0 };
	uint8_t raw[AL_ED25519_KEY_LEN];
	char pem[512], hex[65];
	int r = al_ledger_pubkey(st, raw, pem, sizeof(pem), &err);
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	al_hex(raw, AL_ED25519_KEY_LEN, hex);
	if (cli->json)
		return cli_json_print(json_pack("{s:s,s:s}", "pem", pem, "raw", hex));
	fputs(pem, stdout);
	return 0;
}

static int audit_prove(struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(
		cli, argc, argv,
		"usage: airlock audit prove ENTRY|SIZE1..SIZE2 [--json]\n\n"
		"An inclusion proof of entry ENTRY in the latest checkpoint, or a\n"
		"consistency proof that the tree of SIZE1 is a prefix of the tree of SIZE2\n"
		"(RFC 9162), each checked before it is printed.\n",
		1);
	if (rc >= 0)
		return rc;
	struct al_store *st = NULL;
	if ((rc = open_store(cli, &st)))
		return rc;
	struct al_error err = { 0 };
	struct al_checkpoint cp;
	uint8_t(*p)[AL_DIGEST_LEN] = NULL;
	size_t n = 0;
	json_t *out = NULL;
	int r = al_ledger_checkpoint(st, &cp, &err); /* an empty ledger has none: said first */
	const char *dots = strstr(argv[optind], "..");
	if (r == 0 && dots) {
		uint64_t s1 = strtoull(argv[optind], NULL, 10), s2 = strtoull(dots + 2, NULL, 10);
		uint8_t r1[AL_DIGEST_LEN], r2[AL_DIGEST_LEN];
		if ((r = al_ledger_root(st, s1, r1, &err)) == 0 &&
		    (r = al_ledger_root(st, s2, r2, &err)) == 0 &&
		    (r = al_ledger_consistency(st, s1, s2, &p, &n, &err)) == 0) {
			char h1[65], h2[65];
			al_hex(r1, AL_DIGEST_LEN, h1);
			al_hex(r2, AL_DIGEST_LEN, h2);
			out = json_pack(
				"{s:I,s:I,s:s,s:s,s:o,s:b}", "size1", (json_int_t)s1, "size2",
				(json_int_t)s2, "root1", h1, "root2", h2, "proof", view_proof(p, n),
				"valid",
				al_merkle_verify_consistency(
					s1, s2, r1, r2, (const uint8_t(*)[AL_DIGEST_LEN])p, n));
		}
	} else if (r == 0) {
		r = view_inclusion(st, strtoull(argv[optind], NULL, 10), &out, &err);
	}
	free(p);
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	if (cli->json)
		return cli_json_print(out);
	char *pretty = json_dumps(out, JSON_INDENT(2));
	puts(pretty);
	free(pretty);
	json_decref(out);
	return 0;
}

int cmd_audit(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "show", audit_show, "one entry with its proof and delta summary" },
		{ "checkpoint", audit_checkpoint, "the latest signed checkpoint" },
		{ "export", audit_export, "write the ledger for offline verification" },
		{ "verify", audit_verify, "verify an export (or the live ledger) offline" },
		{ "pubkey", audit_pubkey, "the ledger's public key (PEM)" },
		{ "prove", audit_prove, "inclusion or consistency proof" },
		{ 0 },
	};
	for (size_t i = 0; argc > 1 && cmds[i].name; i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			return cli_dispatch(cli, "audit", cmds, argc - 1, argv + 1);
	return audit_list(cli, argc, argv);
}
