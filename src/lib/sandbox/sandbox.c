/* The sandbox's entry points (sandbox.h), whatever the backend: the
 * backend table, the checks every backend shares, the default limits and
 * the network policy's names.  A backend is a struct al_sandbox_backend
 * (sandbox_private.h) in its own file, listed in backends[] below. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sandbox_private.h"
#include "util.h"

static const struct al_sandbox_backend *const backends[] = {
	&al_sandbox__ns, /* the default: first */
	&al_sandbox__vm,
};
#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

static const struct al_sandbox_backend *backend_find(const char *name)
{
	if (!name)
		return backends[0];
	for (size_t i = 0; i < NBACKENDS; i++)
		if (!strcmp(backends[i]->name, name))
			return backends[i];
	return NULL;
}

bool al_sandbox_backend_known(const char *name)
{
	return name && backend_find(name) != NULL;
}

const char *al_network_name(enum al_network net)
{
	return net == AL_NET_EGRESS ? "egress" : "none";
}

int al_network_parse(const char *s, enum al_network *out, struct al_error *err)
{
	if (!strcmp(s, "none"))
		*out = AL_NET_NONE;
	else if (!strcmp(s, "egress"))
		*out = AL_NET_EGRESS;
	else
		return al_fail(err, AL_EUSAGE, 0, "unknown network policy '%s' (none, egress)", s);
	return 0;
}

void al_limits_default(struct al_limits *l)
{
	l->memory = 2ull << 30;
	l->pids = 1024;
	l->cpus_milli = 1000;
	l->timeout_ms = 3600 * 1000;
	l->output = 16ull << 20;
	l->disk = 1ull << 30;
	l->files = 100000;
	l->connections = 256;
	l->egress_bytes = 1ull << 30;
}

int al_sandbox__read_report(int fd, const char *const *names, int n, const char *prefix,
			    struct al_error *err)
{
	struct al_sandbox__report rep;
	ssize_t k;
	do
		k = read(fd, &rep, sizeof(rep));
	while (k < 0 && errno == EINTR);
	if (k == (ssize_t)sizeof(rep) && rep.stage >= 0 && rep.stage < n)
		return al_fail(err, AL_ESANDBOX, rep.err, "%s%s failed (see 'airlock doctor')",
			       prefix, names[rep.stage]);
	return k != 0;
}

int al_sandbox_check(const char *backend, enum al_network network, struct al_error *err)
{
	const struct al_sandbox_backend *b = backend_find(backend);
	if (!b) {
		char names[128] = "";
		size_t n = 0;
		for (size_t i = 0; i < NBACKENDS && n < sizeof(names); i++)
			n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
					      backends[i]->name);
		return al_fail(err, AL_EINVAL, 0, "sandbox: unknown backend '%s' (%s)", backend,
			       names);
	}
	if (network != AL_NET_NONE && network != AL_NET_EGRESS)
		return al_fail(err, AL_EINVAL, 0, "sandbox: unknown network policy %d", network);
	return b->check(network, err);
}

int al_sandbox_run(const struct al_sandbox_spec *spec, struct al_sandbox_result *res,
		   struct al_error *err)
{
	memset(res, 0, sizeof(*res));
	res->upper_fd = -1;
	res->cgroup = "none";
	const char *layers[2] = { spec->image_dir, spec->workspace_dir };
	for (int i = 0; i < 2; i++)
		if (!layers[i] || !layers[i][0] || strpbrk(layers[i], "/,:\\") ||
		    !strcmp(layers[i], ".") || !strcmp(layers[i], ".."))
			return al_fail(err, AL_EINVAL, 0, "sandbox: bad lower layer name");
	int r = al_sandbox_check(spec->backend, spec->network, err);
	return r < 0 ? r : backend_find(spec->backend)->run(spec, res, err);
}
