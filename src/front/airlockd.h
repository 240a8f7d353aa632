/* airlockd's one entry point: what the CLI's `serve` command calls.  The
 * daemon (src/server/) is linked into the airlock binary; this declaration
 * is all the CLI knows of it. */
#ifndef AL_AIRLOCKD_H
#define AL_AIRLOCKD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct srv_config {
	const char *home;
	const char *listen;        /* "127.0.0.1:8700"; port 0: any */
	size_t body_max;           /* JSON bodies */
	size_t upload_max;         /* bundle uploads */
	unsigned threads;          /* request threads */
	unsigned max_runs;         /* runs in flight; beyond: 503 */
	unsigned grace_s;          /* SIGTERM: wait this long for runs, then cancel them */
	unsigned conn_timeout_s;   /* idle or slow connections are closed */
	unsigned header_timeout_s; /* a request's headers must be complete within this (absolute) */
	/* bytes/s: a body must be complete within header_timeout_s + size / body_rate */
	uint64_t body_rate;
	const char *tls_cert; /* PEM files: HTTPS (TLS 1.2+); NULL: plain HTTP */
	const char *tls_key;
	bool insecure; /* plain HTTP on an address other than loopback */
	/* refusals recorded: at most AL_REFUSALS_PER_MIN per tenant per window */
	unsigned refusal_window_s;
	unsigned gc_interval_s; /* the collector's period (gc.c); 0: off */
	uint64_t lower_budget;  /* its lower-layer budget (0: gc.h's default) */
	unsigned session_ttl_s; /* the web UI's sessions (POST /api/session) */
};

/* Serve until SIGTERM or SIGINT: 0, else the exit code after a message on
 * stderr. */
int srv_main(const struct srv_config *cfg);

#endif
