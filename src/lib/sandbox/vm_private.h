/* Private to the microVM backend (vm.c): what crosses the guest's
 * boundary, parsed strictly on the host (docs/formats.md, "microVM
 * streams"), and the hypervisor drivers (hv.h). */
#ifndef AL_VM_PRIVATE_H
#define AL_VM_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"

/* What a result stream may hold: regular files' bytes (apparent sizes:
 * sparse members are refused) and members. */
struct al_vm_caps {
	uint64_t bytes;
	uint64_t entries;
};

/* Unpack the guest's result stream (a POSIX tar of the workspace's upper
 * layer, read from fd, at most max_stream bytes from offset 0) into the
 * empty directory dirfd, as an overlayfs upper layer that
 * al_overlay_apply_within reads: directories, regular files, symlinks,
 * hardlinks to an earlier member, FIFOs (kept for the reader to note and
 * drop), whiteouts (a char device 0:0 member: made as overlayfs makes
 * them) and opaque directories (the xattr trusted.overlay.opaque=y:
 * made as user.overlay.opaque).  Refused (AL_EINVAL, nothing kept that the
 * caller should read): any other type, an absolute or non-canonical path
 * ("", ".", "..", "//"), an invalid name, a member whose directory is not
 * an earlier member or is a symlink, a path given twice, a sparse member,
 * another xattr, a truncated stream; over a cap AL_ELIMIT. */
int al_vm__result_unpack(int fd, uint64_t max_stream, int dirfd, const struct al_vm_caps *caps,
			 struct al_error *err);

/* The guest's one status line (docs/formats.md): either
 *   airlock-status 1 exit=N timed_out=B cancelled=B oom=B peak=N disk_full=B
 *     files_full=B user_ms=N sys_ms=N max_rss_kb=N wall_ms=N boot_ms=N setup_ms=N
 *     collect_ms=N result=N
 * or
 *   airlock-status 1 error stage=WORD errno=N */
struct al_vm_status {
	bool error;
	char stage[32];
	int sys_errno;
	int exit_code;
	bool timed_out, cancelled, oom, disk_full, files_full;
	uint64_t peak, user_ms, sys_ms, max_rss_kb, wall_ms, boot_ms, setup_ms, collect_ms, result;
	uint64_t left_sockets, left_deep, left_links; /* what the stream left out */
};
/* AL_EINVAL unless the line is exactly one of those (fields in that order,
 * numbers in range, booleans 0 or 1, one '\n' at its end). */
int al_vm__status_parse(const char *line, size_t n, struct al_vm_status *st, struct al_error *err);

/* The host's end of the run's relay (vm_relay.c, vm_mux.h): a thread
 * reading chan (one end of the guest's relay port; owned from here, even
 * on failure) and handing each stream the guest opens to proxy (target 0)
 * or integ (target 1), either may be NULL: refused. */
struct al_net_proxy;
struct al_integ_relay;
struct al_vm_relay;
int al_vm__relay_start(int chan, struct al_net_proxy *proxy, struct al_integ_relay *integ,
		       struct al_vm_relay **out, struct al_error *err);
/* Stop the thread, end every stream, free.  Returns why (in why) when the
 * guest broke the protocol and the relay ended early, else NULL. */
const char *al_vm__relay_stop(struct al_vm_relay *r, char *why, size_t n);

#endif
