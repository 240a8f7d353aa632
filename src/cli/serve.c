/* airlock serve: the daemon (src/server/). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "airlock/store.h"
#include "cli.h"
#include "airlockd.h"

static const char serve_help[] =
	"usage: airlock serve [--listen HOST:PORT] [--threads N] [--max-runs N] [--body-max "
	"BYTES]\n"
	"                     [--upload-max BYTES] [--grace SEC] [--conn-timeout SEC]\n"
	"                     [--header-timeout SEC] [--body-rate BYTES]\n"
	"                     [--tls-cert PEM --tls-key PEM] [--insecure] [--refusal-window SEC]\n"
	"                     [--gc-interval SEC] [--lower-budget BYTES] [--session-ttl SEC]\n"
	"                     [--metadata postgres://…]\n"
	"\n"
	"Serve the home's tenants over HTTP: the JSON API of docs/api.md (OpenAPI at\n"
	"/api/openapi.json) and the web UI at /. Every request but /api/health and "
	"/api/openapi.json needs\n"
	"'Authorization: Bearer TOKEN' (airlock admin token create). Prints the URL it\n"
	"listens on; logs one line per request on stderr (principal, route, status,\n"
	"time; never a token, a body or a secret).\n"
	"\n"
	"  --listen HOST:PORT  IPv4 address and port (default 127.0.0.1:8700; port 0:\n"
	"                      any free port, printed)\n"
	"  --threads N         request threads (default 8)\n"
	"  --max-runs N        runs in flight; more are refused with 503 (default 32)\n"
	"  --body-max BYTES    JSON request bodies (default 1M)\n"
	"  --upload-max BYTES  bundle uploads (default 1G)\n"
	"  --grace SEC         on SIGTERM, wait this long for runs in flight, then\n"
	"                      cancel them (recorded as cancelled) (default 30)\n"
	"  --conn-timeout SEC  close idle or slow connections (default 30)\n"
	"  --header-timeout SEC  a request's headers must be complete within SEC of\n"
	"                      the connection (or its previous answer), however they\n"
	"                      trickle in (default 20)\n"
	"  --body-rate BYTES   a body must be complete within --header-timeout plus\n"
	"                      its size at this many bytes/s (default 64K)\n"
	"  --tls-cert PEM, --tls-key PEM  serve HTTPS (TLS 1.2 and 1.3) with this\n"
	"                      certificate (chain) and private key (mode 0600)\n"
	"  --insecure          allow plain HTTP on an address other than loopback\n"
	"                      (refused without it: tokens and secrets would cross the\n"
	"                      network in clear; use it only behind a TLS proxy)\n"
	"  --refusal-window SEC  refused requests (403) are ledger entries, at most 20\n"
	"                      per tenant in each window of SEC seconds; the rest are\n"
	"                      counted in one entry (default 60)\n"
	"  --gc-interval SEC   collect garbage (airlock gc) in every tenant, one after\n"
	"                      the other, every SEC seconds (default 3600; 0: never)\n"
	"  --lower-budget BYTES  the collector's budget of lower layers per tenant\n"
	"                      (default 10G)\n"
	"  --session-ttl SEC   the web UI's sessions (a token exchanged at\n"
	"                      POST /api/session) end after SEC, or when their token\n"
	"                      does if sooner (default 8h)\n"
	"  --metadata URL      the metadata in PostgreSQL, as the service role (as\n"
	"                      airlock --metadata; env AIRLOCK_METADATA): the home keeps\n"
	"                      the keys and the objects (docs/operations.md)\n"
	"BYTES take K, M, G or T; SEC may also be 30s, 5m, 2h or 1d (docs/cli.md,\n"
	"Numbers). SIGTERM or SIGINT stop it: no new connections, runs\n"
	"finish or are cancelled, every answer in flight is sent.\n";

/* a size (bytes), a count, or seconds (a duration: 30, 30s, 5m, 2h, 1d; whole
 * seconds; as before, a count's K/M/G is taken too) */
enum serve_kind { BYTES, COUNT, SECONDS };
static int serve_value(const char *s, enum serve_kind kind, uint64_t *out, struct al_error *err)
{
	if (kind == BYTES)
		return al_parse_size(s, 1ull << 40, out, err);
	if (kind == COUNT || al_parse_duration(s, 1000000ull * 1000, out, NULL) < 0)
		return al_parse_count(s, 1000000, out, err);
	*out = (*out + 999) / 1000;
	return 0;
}

int cmd_serve(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "threads", required_argument, NULL, 't' },
		{ "max-runs", required_argument, NULL, 'r' },
		{ "body-max", required_argument, NULL, 'b' },
		{ "upload-max", required_argument, NULL, 'u' },
		{ "grace", required_argument, NULL, 'g' },
		{ "conn-timeout", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "header-timeout", required_argument, NULL, 'H' },
		{ "body-rate", required_argument, NULL, 'R' },
		{ "tls-cert", required_argument, NULL, 'C' },
		{ "tls-key", required_argument, NULL, 'K' },
		{ "insecure", no_argument, NULL, 'I' },
		{ "refusal-window", required_argument, NULL, 'W' },
		{ "gc-interval", required_argument, NULL, 'G' },
		{ "lower-budget", required_argument, NULL, 'L' },
		{ "session-ttl", required_argument, NULL, 'S' },
		{ "metadata", required_argument, NULL, 'M' },
		{ 0 },
	};
	struct srv_config cfg = { .home = cli->home,
				  .listen = "127.0.0.1:8700",
				  .body_max = 1 << 20,
				  .upload_max = 1u << 30,
				  .threads = 8,
				  .max_runs = 32,
				  .grace_s = 30,
				  .conn_timeout_s = 30,
				  .header_timeout_s = 20,
				  .body_rate = 64 << 10,
				  .refusal_window_s = 60,
				  .gc_interval_s = 3600,
				  .session_ttl_s = 8 * 3600 };
	uint64_t v = 0;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const char *name = c == 'h' ? "" : opts[0].name;
		for (size_t i = 0; opts[i].name; i++)
			if (opts[i].val == c)
				name = opts[i].name;
		enum serve_kind kind = c == 'b' || c == 'u' || c == 'R' || c == 'L' ? BYTES
				       : c == 't' || c == 'r'                       ? COUNT
										    : SECONDS;
		struct al_error err = { 0 };
		if (c != 'h' && c != 'l' && c != '?' && c != 'C' && c != 'K' && c != 'I' &&
		    c != 'M' && serve_value(optarg, kind, &v, &err) < 0)
			return cli_usage(cli, "bad --%s: %s", name, err.msg);
		switch (c) {
		case 'l': cfg.listen = optarg; break;
		case 't': cfg.threads = (unsigned)(v ? v : 1); break;
		case 'r': cfg.max_runs = (unsigned)v; break;
		case 'b': cfg.body_max = (size_t)v; break;
		case 'u': cfg.upload_max = (size_t)v; break;
		case 'g': cfg.grace_s = (unsigned)v; break;
		case 'c': cfg.conn_timeout_s = (unsigned)(v ? v : 1); break;
		case 'H': cfg.header_timeout_s = (unsigned)(v ? v : 1); break;
		case 'R': cfg.body_rate = v ? v : 1; break;
		case 'C': cfg.tls_cert = optarg; break;
		case 'K': cfg.tls_key = optarg; break;
		case 'I': cfg.insecure = true; break;
		case 'W': cfg.refusal_window_s = (unsigned)(v ? v : 1); break;
		case 'G': cfg.gc_interval_s = (unsigned)v; break;
		case 'S':
			if (!v || v > 366 * 86400)
				return cli_usage(cli, "bad --session-ttl '%s' (1s to 366d)",
						 optarg);
			cfg.session_ttl_s = (unsigned)v;
			break;
		case 'L':
			if (!v)
				return cli_usage(cli, "bad --lower-budget '%s' (not 0)", optarg);
			cfg.lower_budget = v;
			break;
		case 'M': {
			/* as the global --metadata, for the daemon and the
			 * processes it starts */
			struct al_error merr = { 0 };
			if (al_store_metadata(optarg, &merr) < 0)
				return cli_error(cli, &merr);
			setenv("AIRLOCK_METADATA", optarg, 1);
			break;
		}
		case 'h': fputs(serve_help, stdout); return 0;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (optind != argc)
		return cli_usage(cli, "unexpected argument '%s'", argv[optind]);
	if (!cfg.tls_cert != !cfg.tls_key)
		return cli_usage(cli, "--tls-cert and --tls-key go together");
	if (cli->server)
		return cli_local_only(cli);
	return srv_main(&cfg);
}
