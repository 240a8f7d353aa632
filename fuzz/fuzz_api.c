/* Fuzz the daemon's request decoders (src/front/decode.c): hostile JSON
 * bodies must never crash, leak or be half-accepted.  The first byte picks
 * the decoder; the rest is the body.  Whatever a decoder accepts must hold
 * its promises: a run request has a non-empty command and no variable
 * without '=', an apply request has paths exactly when it selects (each a
 * path, with a non-empty list of hunk numbers from 1 or none), a
 * principal has a valid name and at least one role; a replay request has
 * well-formed secrets, each once; an integration passes al_integ_check
 * with its secret, a grant names exactly one project or principal. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/auth.h"
#include "airlock/integ.h"
#include "airlock/volume.h"
#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	json_t *body = NULL;
	struct al_error err;
	if (decode_body((const char *)data + 1, size - 1, &body, &err) != 0)
		return 0;
	switch (data[0] % 5) {
	case 0: {
		struct run_request r;
		if (decode_run(body, &r, &err) == 0) {
			if (!r.o.argv || !r.o.argv[0] || !r.o.argv[0][0])
				abort();
			for (const char *const *v = r.o.env; v && *v; v++)
				if (!strchr(*v, '='))
					abort();
			for (const char *const *v = r.o.secrets; v && *v; v++)
				if (!strchr(*v, '='))
					abort();
			run_request_release(&r);
		}
		/* the same body as a replay request: each secret NAME=VALUE, NAME a
		 * valid name, given once; nothing else of a run */
		if (decode_replay(body, &r, &err) == 0) {
			for (size_t i = 0; r.o.secrets && r.o.secrets[i]; i++) {
				const char *eq = strchr(r.o.secrets[i], '=');
				if (!eq || eq == r.o.secrets[i] ||
				    (r.o.secrets[i][0] >= '0' && r.o.secrets[i][0] <= '9'))
					abort();
				for (size_t j = 0; j < i; j++)
					if (!strncmp(r.o.secrets[j], r.o.secrets[i],
						     (size_t)(eq - r.o.secrets[i]) + 1))
						abort();
			}
			if (r.o.argv || r.o.env || r.o.image)
				abort();
			run_request_release(&r);
		}
		break;
	}
	case 1: {
		struct apply_request a;
		if (decode_apply(body, &a, &err) == 0) {
			if ((a.mode == AL_ACCEPT_SELECTED) != (a.npaths > 0) ||
			    a.mode < AL_ACCEPT_ALL || a.mode > AL_REJECT_ALL)
				abort();
			/* a path each; a hunk list is never empty, its numbers from 1 */
			for (size_t i = 0; i < a.npaths; i++) {
				if (!a.paths[i].path || (a.paths[i].hunks && !a.paths[i].nhunks) ||
				    (!a.paths[i].hunks && a.paths[i].nhunks))
					abort();
				for (size_t k = 0; k < a.paths[i].nhunks; k++)
					if (a.paths[i].hunks[k] < 1)
						abort();
			}
			apply_request_release(&a);
		}
		break;
	}
	case 2: {
		struct principal_request p;
		if (decode_principal(body, &p, &err) == 0) {
			if (!p.roles || p.roles > 15 || al_principal_name_check(p.name, NULL) != 0)
				abort();
			principal_request_release(&p);
		}
		break;
	}
	case 3: {
		int64_t ttl;
		if (decode_token(body, &ttl, &err) == 0 && ttl < 0)
			abort();
		break;
	}
	default: {
		const char *name;
		if (decode_project(body, &name, &err) == 0 &&
		    al_project_name_check(name, NULL) != 0)
			abort();
		/* the same body as an integration: what is accepted passes the
		 * library's own check, with its secret, and is never insecure */
		struct al_integ_spec spec;
		if (decode_integration(body, &spec, &err) == 0 &&
		    (!spec.secret || spec.insecure || al_integ_check(&spec, &err) != 0))
			abort();
		const char *header, *secret;
		if (decode_integration_secret(body, &header, &secret, &err) == 0 &&
		    (!secret || (header && al_integ_header_check(header, NULL) != 0)))
			abort();
		const char *project, *principal;
		if (decode_integration_grant(body, &project, &principal, &err) == 0 &&
		    (!project == !principal ||
		     (project ? al_project_name_check(project, NULL)
			      : al_principal_name_check(principal, NULL)) != 0))
			abort();
		break;
	}
	}
	json_decref(body);
	return 0;
}
