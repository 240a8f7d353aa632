/* The host side of a run's egress (net.h): the proxy that serves the
 * run's only way out, and its record of every connection. */
#ifndef AL_NET_PRIVATE_H
#define AL_NET_PRIVATE_H

#include <stdint.h>

#include <jansson.h>

#include "airlock/net.h"

struct al_net_proxy;

/* A proxy for one run: the allowlist (well-formed entries, copied), at
 * most max_connections connections and max_bytes bytes (both ways, all
 * connections together). */
int al_net__proxy_new(const char *const *allow, size_t nallow, uint64_t max_connections,
		      uint64_t max_bytes, struct al_net_proxy **out, struct al_error *err);
/* Serve connections accepted from listen_fd (a listening TCP socket; the
 * proxy owns it from here, even on failure; -1: none) until al_net__proxy_stop. */
int al_net__proxy_start(struct al_net_proxy *p, int listen_fd, struct al_error *err);
/* Or: serve a connected socket (owned from here) from elsewhere (the
 * microVM relay; listen_fd was -1): 0, or -1 when refused and closed (the
 * run's connection cap, counted as over it; or stopped). */
int al_net__proxy_admit(struct al_net_proxy *p, int fd);
/* Stop accepting, end every connection, wait for them.  Idempotent. */
void al_net__proxy_stop(struct al_net_proxy *p);
/* The record (docs/formats.md, "egress"): {"allow":[...],"connections":
 * [...],"connections_over_limit":N,"bytes":N,"limits":{...}}. */
json_t *al_net__proxy_json(struct al_net_proxy *p);
void al_net__proxy_free(struct al_net_proxy *p);
/* Tests: the deadline of a connection's request head and ClientHello, in
 * ms from its accept (30 s by default); before al_net__proxy_start. */
void al_net__proxy_head_deadline(struct al_net_proxy *p, int ms);

/* The TLS ClientHello's host_name (RFC 6066) into sni (sn bytes), "" if it
 * has none: 0, or -1 when b is not exactly one ClientHello in one record
 * (a tunnel's first bytes; fuzz/fuzz_proxy.c). */
int al_net__hello_sni(const uint8_t *b, size_t n, char *sni, size_t sn);

#endif
