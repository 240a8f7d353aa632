/* airlock: operations the CLI and the daemon both perform, beyond one
 * library call. */
#ifndef AL_OPS_H
#define AL_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"

struct al_store;
struct al_commit_opts;
struct al_commit_result;

#define OPS_DEFAULT_IMAGE "busybox"

/* airlock-init: $AIRLOCK_INIT, beside this binary, or the installed one. */
const char *ops_init_path(char *buf, size_t n);
/* The microVM backend's guest (vmlinux, initramfs.cpio): $AIRLOCK_GUEST_DIR,
 * guest/ beside this binary (the build), or the installed one.  Computed
 * once; the string lives as long as the process. */
const char *ops_guest_dir(void);
/* The default image, imported on first use from image/busybox beside this
 * binary (the build's); its id in *id (may be NULL). */
int ops_default_image(struct al_store *st, struct al_oid *id, struct al_error *err);
/* Verify the bundle in fd, apply it to base and commit the result to the
 * project; bundle_id gets the bundle's id.  A refused bundle keeps nothing. */
int ops_bundle_commit(struct al_store *st, const char *project, int fd, const struct al_oid *base,
		      const struct al_commit_opts *opts, struct al_commit_result *res,
		      struct al_oid *bundle_id, struct al_error *err);

#endif
