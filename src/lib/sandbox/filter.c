/* The seccomp filter a sandbox loads: the program compiled at build time
 * from seccomp.c's rules ($(BUILD)/gen/seccomp_bpf.c), copied for the
 * caller.  Kept apart from seccomp.c so that only the build tool and the
 * test that compares the two link libseccomp's compiler. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox_private.h"
#include "util.h"

int al_seccomp__build(struct sock_fprog *out, struct al_error *err)
{
	size_t n = al_seccomp__bpf_len * sizeof(struct sock_filter);
	out->filter = malloc(n);
	if (!out->filter)
		return al_fail(err, AL_ENOMEM, ENOMEM, "seccomp");
	memcpy(out->filter, al_seccomp__bpf, n);
	out->len = al_seccomp__bpf_len;
	return 0;
}
