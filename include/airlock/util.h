/* airlock — small helpers the library shares with its front-ends (the CLI,
 * the daemon): cleanup attributes, ids as text, untrusted text made safe to
 * print, whole reads and writes, clocks, and the locale rule for tar names.
 *
 * Everything else the library uses internally stays private (src/lib/util.h,
 * which includes this header). */
#ifndef AIRLOCK_UTIL_H
#define AIRLOCK_UTIL_H

#include <errno.h>
#include <locale.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/types.h>

#include "airlock/error.h"
#include "airlock/oid.h"

/* Loads what the first EVP use needs (OpenSSL's configuration and default
 * provider: about 0.8 ms and 2 MiB, for the ledger's signature, an HMAC,
 * AES-GCM) now rather than at that use; for a process that will sign.
 * A digest needs neither. */
void al_crypto_ready(void);

/* Cleanup attributes (as in crun and systemd): an owning local is released
 * when it goes out of scope; ownership leaves only through steal_ptr() and
 * take_fd(). */
static inline void al__freep(void *p)
{
	free(*(void **)p);
}
static inline void al__closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(al__freep)
#define _cleanup_close_ _cleanup_(al__closep)

#define steal_ptr(p)                    \
	({                              \
		__typeof__(p) _t = (p); \
		(p) = NULL;             \
		_t;                     \
	})
#define take_fd(fd)            \
	({                     \
		int _t = (fd); \
		(fd) = -1;     \
		_t;            \
	})

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Give back the pages of the calling thread's stack below its current
 * frame (MADV_DONTNEED; the guard page and 16 KiB under the frame kept):
 * they hold nothing live.  A thread about to end calls it, as glibc keeps
 * an ended thread's stack, with every page it touched, for the next. */
void al_stack_release(void);

/* hex */
void al_hex(const uint8_t *in, size_t n, char *out);  /* out gets 2n+1 */
int al_unhex(const char *in, size_t n, uint8_t *out); /* 0 or -1 */

/* whole reads and writes */
ssize_t al_read_full(int fd, void *buf, size_t n);    /* short only at EOF */
int al_write_full(int fd, const void *buf, size_t n); /* 0 or -1 */

/* untrusted text */
bool al_utf8_valid(const uint8_t *s, size_t n);
/* A string cut at a buffer's end may end inside a UTF-8 sequence: that
 * sequence is cut off (nothing else is changed). */
void al_utf8_cut(char *s);
/* Valid UTF-8 with no Unicode Cc (C0, DEL, C1) or Cf (bidi overrides,
 * zero-width, soft hyphen, BOM …) character: safe to print or log. */
bool al_text_safe(const char *s, size_t n);
/* al_text_safe and 1..max bytes, else AL_EINVAL naming what (quoted). */
int al_text_check(const char *what, const char *s, size_t max, struct al_error *err);
/* Render bytes for a message: printable ASCII as is, everything else \xNN. */
void al_quote(const char *s, size_t n, char *out, size_t outsz);

/* tar member names travel as their exact bytes.  libarchive (3.6) converts
 * pax header names between UTF-8 and the thread's locale: to or from a
 * UTF-8 locale it normalises them to NFC (a name with a combining mark comes
 * back as other bytes), and in the C locale an entry set only through
 * archive_entry_set_pathname_utf8() makes the pax writer dereference NULL.
 * So archive work runs in the C locale (al_c_locale_enter, per thread, never
 * setlocale: the daemon is multithreaded), names are set and read as bytes
 * (archive_entry_copy_pathname, archive_entry_pathname), and the one warning
 * the C locale gives for a non-ASCII name is accepted: the writer then
 * stores that member's names as bytes (pax hdrcharset=BINARY), the reader
 * keeps the bytes of a UTF-8 pax name.  Callers check names themselves. */
struct archive;
locale_t al_c_locale_enter(void); /* the previous locale, for uselocale() */
static inline void al__localep(locale_t *prev)
{
	if (*prev)
		uselocale(*prev);
}
#define _cleanup_locale_ _cleanup_(al__localep)
/* rc of archive_read_next_header: a header to use */
bool al_archive_header_ok(struct archive *a, int rc);
/* rc of archive_write_header: the member was written */
bool al_archive_written_ok(struct archive *w, int rc);

/* time */
uint64_t al_now_ns(void); /* CLOCK_MONOTONIC */
int64_t al_wall_s(void);  /* CLOCK_REALTIME seconds, or AIRLOCK_NOW when set (tests) */

#endif
