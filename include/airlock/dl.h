/* airlock: a shared library's functions, loaded on first use into a table.
 *
 * Only `airlock serve` needs libmicrohttpd, only `--server` needs libcurl,
 * only a review's text diff needs libgit2 and only tar work libarchive
 * (include/airlock/dl_archive.h: 11 libraries of its own); linked, they made every
 * command load 33 more shared libraries (GnuTLS, LDAP, Kerberos, mbedTLS,
 * libssh2, …: +1.3 ms of CPU for libgit2's alone, on each start, `airlock
 * run` included).  So each user keeps a table of the functions it uses,
 * under names of its own (src/server/dl_mhd.h: dl_mhd.start_daemon(…);
 * src/cli/dl_curl.h: dl_curl.easy_perform(…); src/lib/dl_git.h:
 * dl_git.patch_from_buffers(…)), and fills it with dl_load before the
 * first call.  The libraries' own names are never redefined. */
#ifndef AL_DL_H
#define AL_DL_H

#include <stddef.h>

#include "airlock/error.h"

struct dl_sym {
	const char *name; /* the library's symbol */
	void **slot;      /* the table's member (a function pointer) */
};
/* The table's member m of t as a slot. */
#define DL_SLOT(t, m) ((void **)(void *)&(t).m)

/* Open lib (by its soname) and fill every slot, or none: an error naming
 * the library (and the Debian package) or the missing symbol.  The library
 * stays loaded for the process's life. */
int dl_load(const char *lib, const char *package, const struct dl_sym *syms, size_t n,
	    struct al_error *err);

#endif
