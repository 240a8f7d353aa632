/* Private helpers of libairlock: fs, sha256, names, buffers (the shared
 * part, cleanup attributes, hex, ids, text, is airlock/util.h). */
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
#include "airlock/util.h" /* the part the front-ends share */

/* sha256 through libcrypto's SHA-256 functions (util.c: not EVP) */
struct al_sha;
struct al_sha *al_sha_new(void);
void al_sha_free(struct al_sha *s);
void al_sha_update(struct al_sha *s, const void *p, size_t n);
void al_sha_final(struct al_sha *s, uint8_t out[AL_DIGEST_LEN]); /* and reset */
void al_sha256(const void *p, size_t n, uint8_t out[AL_DIGEST_LEN]);
/* sha256 of a then b, as if one buffer */
void al_sha256_2(const void *a, size_t an, const void *b, size_t bn, uint8_t out[AL_DIGEST_LEN]);
static inline void al__sha_freep(struct al_sha **s)
{
	al_sha_free(*s);
}
#define _cleanup_sha_ _cleanup_(al__sha_freep)

/* fds handed over a Unix socket (SCM_RIGHTS) by a process we do not trust
 * more than the sandbox: al_fd_recv takes exactly one fd with a one-byte
 * message, waiting at most timeout_ms (errno ETIMEDOUT); anything else (no
 * fd, two, two messages, a truncated control message) is refused with
 * EBADMSG and every fd that arrived is closed.  The fd is O_CLOEXEC. */
int al_fd_recv(int sock, int timeout_ms);
/* Send fd with the one byte 'u'; 0, or -1 with errno. */
int al_fd_send(int sock, int fd);
/* Is fd a listening TCP socket of family (AF_INET, AF_INET6)?  0, or -1
 * with errno ENOTSOCK (not a socket: a pipe, a FIFO, a file) or EPROTOTYPE
 * (another family or type, or not listening). */
int al_fd_is_listener(int fd, int family);

/* files */
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
/* A single path component a snapshot can hold. */
bool al_name_valid(const char *s, size_t n, const char **why);

/* growable buffer */
struct al_buf {
	uint8_t *p;
	size_t len, cap;
};
int al_buf_reserve(struct al_buf *b, size_t extra);
int al_buf_put(struct al_buf *b, const void *p, size_t n);
void al_buf_release(struct al_buf *b);

#endif
