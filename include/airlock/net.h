/* airlock — network egress: the allowlist a run's proxy enforces.
 *
 * A run with network "egress" keeps a network namespace with only its own
 * loopback.  Its only way out is an HTTP proxy that airlock serves on the
 * host for the run's lifetime (the listening socket lives in the sandbox's
 * namespace, at 127.0.0.1:AL_NET_PROXY_PORT, and is accepted from on the
 * host side), which enforces the run's allowlist (docs/threat-model.md).
 *
 * An allow entry is HOST[:PORT]:
 *   HOST  a DNS name ("api.example.com"), "*.suffix" (any name below
 *         suffix), "*" (any name or public address), an IPv4 literal, or an
 *         IPv6 literal in brackets;
 *   PORT  a port, or "*" (any); left out: 80 and 443.
 * Loopback, private, link-local, metadata and other special addresses are
 * reached only through an entry that is that address literally, whatever
 * name resolved to it. */
#ifndef AIRLOCK_NET_H
#define AIRLOCK_NET_H

#include <stdbool.h>
#include <stddef.h>

#include "airlock/error.h"

#define AL_NET_PROXY_PORT 3128
#define AL_NET_PROXY_URL "http://127.0.0.1:3128" /* HTTP(S)_PROXY in the run */
#define AL_NET_ALLOW_MAX 32                      /* entries in an allowlist */
#define AL_NET_ENTRY_MAX 263                     /* bytes of one entry, its NUL included */

/* Is entry a well-formed allow entry?  AL_EINVAL saying why if not. */
int al_net_allow_check(const char *entry, struct al_error *err);

/* Does the ceiling's entry allow everything entry allows?  (Both
 * well-formed; a special address literal is covered only by itself.) */
bool al_net_allow_covers(const char *ceiling, const char *entry);

/* Is every one of the n entries covered by one of the nceil ceiling
 * entries?  AL_EDENIED naming the first that is not. */
int al_net_allow_within(const char *const *entries, size_t n, const char *const *ceil, size_t nceil,
			struct al_error *err);

#endif
