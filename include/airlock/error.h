/* airlock — errors shared by every module.
 *
 * A function that can fail returns 0 (or a count) on success and a negative
 * AL_E* code on failure, and fills the struct al_error passed last.  The
 * struct needs no heap, so it works out of memory and in a forked child.
 * Codes map one-to-one to CLI exit codes and HTTP statuses (docs/cli.md). */
#ifndef AIRLOCK_ERROR_H
#define AIRLOCK_ERROR_H

enum al_code {
	AL_OK = 0,
	AL_EIO = -1,       /* system or I/O failure (sys_errno says which) */
	AL_EUSAGE = -2,    /* the caller used the interface wrongly */
	AL_ENOTFOUND = -3, /* no such object, for this tenant */
	AL_ECORRUPT = -4,  /* stored bytes do not match their digest */
	AL_ECONFLICT = -5, /* a head moved: VolumeConflictError */
	AL_EINVAL = -6,    /* input refused: hostile path, unsupported type, bad encoding */
	AL_EEXIST = -7,    /* the target already exists or is not empty */
	AL_ENOMEM = -8,    /* out of memory */
	AL_ELIMIT = -9,    /* a cap was exceeded */
	AL_ESTATE = -10,   /* not allowed in the object's state (draft already applied) */
	AL_ESANDBOX = -11, /* a sandbox could not be set up (the step is in the message) */
	AL_EAUTH = -12,    /* no valid credentials (never says which part was wrong) */
	AL_EDENIED = -13,  /* authenticated, but the principal's roles do not allow it */
	AL_EUNAVAIL = -14, /* the service is shutting down or over capacity */
};

struct al_error {
	int code;
	int sys_errno;
	char msg[256];
};

/* Fill err (may be NULL) and return code.  The message is formatted; when
 * sys_errno is non-zero ": strerror(sys_errno)" is appended. */
int al_fail(struct al_error *err, int code, int sys_errno, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Prefix an existing message with context ("import: " + msg). Returns code. */
int al_error_prefix(struct al_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Stable name of a code ("VolumeConflictError", "NotFound", …). */
const char *al_code_name(int code);

/* Process exit code for a library code (docs/cli.md). */
int al_code_exit(int code);

/* HTTP status for a library code (docs/api.md). */
int al_code_http(int code);

/* The code named by al_code_name (AL_EIO for an unknown name). */
int al_code_from_name(const char *name);

#endif
