/* Private helpers of libairlock: cleanup attributes, hex, fs and sha256. */
#ifndef AL_UTIL_H
#define AL_UTIL_H

#include <dirent.h>
#include <locale.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/types.h>

#include "airlock/error.h"

#define AL_DIGEST_LEN 32
#define AL_ID_STRLEN (7 + 64) /* "sha256:" + hex */

static inline void al__freep(void *p) { free(*(void **)p); }
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

#define steal_ptr(p) ({ __typeof__(p) _t = (p); (p) = NULL; _t; })
#define take_fd(fd) ({ int _t = (fd); (fd) = -1; _t; })

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* hex */
void al_hex(const uint8_t *in, size_t n, char *out); /* out gets 2n+1 */
int al_unhex(const char *in, size_t n, uint8_t *out);  /* 0 or -1 */
/* "sha256:<hex>" <-> 32 bytes */
void al_id_fmt(const uint8_t d[AL_DIGEST_LEN], char out[AL_ID_STRLEN + 1]);
int al_id_parse(const char *s, uint8_t d[AL_DIGEST_LEN], struct al_error *err);

/* sha256 through OpenSSL EVP */
struct al_sha;
struct al_sha *al_sha_new(void);
void al_sha_free(struct al_sha *s);
void al_sha_update(struct al_sha *s, const void *p, size_t n);
void al_sha_final(struct al_sha *s, uint8_t out[AL_DIGEST_LEN]); /* and reset */
void al_sha256(const void *p, size_t n, uint8_t out[AL_DIGEST_LEN]);
static inline void al__sha_freep(struct al_sha **s) { al_sha_free(*s); }
#define _cleanup_sha_ _cleanup_(al__sha_freep)

/* files */
ssize_t al_read_full(int fd, void *buf, size_t n);   /* short only at EOF */
int al_write_full(int fd, const void *buf, size_t n); /* 0 or -1 */
int al_mkdir_p(const char *path, mode_t mode, struct al_error *err);
int al_fsync_dir(int dirfd_or_neg, const char *path, struct al_error *err);
/* Write a string to an existing file (procfs, cgroupfs): 0 or -1 (errno). */
int al_write_string(const char *path, const char *s);
/* Remove a tree (never following symlinks), read-only directories too. */
void al_rm_tree(const char *dir);
/* openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS); falls back to O_NOFOLLOW
 * component-by-component walking where openat2 is missing. */
int al_open_beneath(int dirfd, const char *path, int flags, mode_t mode);

/* opendir over a duplicate of dirfd (dirfd stays open and usable), rewound */
DIR *al_opendir_fd(int dirfd);

/* names */
bool al_utf8_valid(const uint8_t *s, size_t n);
/* A single path component a snapshot can hold. */
bool al_name_valid(const char *s, size_t n, const char **why);
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
uint64_t al_now_ns(void);      /* CLOCK_MONOTONIC */
int64_t al_wall_s(void);       /* CLOCK_REALTIME seconds, or AIRLOCK_NOW when set (tests) */

/* growable buffer */
struct al_buf {
	uint8_t *p;
	size_t len, cap;
};
int al_buf_reserve(struct al_buf *b, size_t extra);
int al_buf_put(struct al_buf *b, const void *p, size_t n);
void al_buf_release(struct al_buf *b);

#endif
