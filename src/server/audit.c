/* audit: the tenant's ledger over HTTP: entries by group, project, kind or
 * time; one entry with its inclusion proof; the signed checkpoint; the
 * offline-verifiable export. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "airlock/ledger.h"
#include "airlock/store.h"
#include "server.h"
#include "airlock/util.h"
#include "view.h"

static int audit_list(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	struct al_ledger_query q = { .group = srv_query(rq, "group"),
				     .project = srv_query(rq, "project"),
				     .kind = srv_query(rq, "kind") };
	const char *since = srv_query(rq, "since");
	if (since) {
		char *end;
		q.since = strtoll(since, &end, 10);
		if (!*since || *end)
			return al_fail(err, AL_EINVAL, 0, "since takes unix seconds");
	}
	*out = json_array();
	return view_ledger(st, &q, *out, err);
}

int h_audit(struct req *rq)
{
	return srv_serve(rq, 200, audit_list);
}

static int audit_entry(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	char *end;
	unsigned long long seq = strtoull(rq->seg[1], &end, 10);
	if (!*rq->seg[1] || *end || rq->seg[1][0] == '-')
		return al_fail(err, AL_ENOTFOUND, 0, "no ledger entry %s", rq->seg[1]);
	return view_ledger_entry(st, seq, out, err);
}

int h_audit_entry(struct req *rq)
{
	return srv_serve(rq, 200, audit_entry);
}

static int audit_checkpoint(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	(void)rq;
	return view_checkpoint(st, out, err);
}

int h_audit_checkpoint(struct req *rq)
{
	return srv_serve(rq, 200, audit_checkpoint);
}

/* The export is written to the tenant's tmp/, opened, unlinked, and sent
 * from the open file. */
int h_audit_export(struct req *rq)
{
	const char *from = srv_query(rq, "from");
	uint64_t start = 0;
	if (from) {
		char *end;
		start = strtoull(from, &end, 10);
		if (!*from || *end)
			return srv_fail(rq, AL_EINVAL, "from takes a ledger size");
	}
	struct al_store *st = NULL;
	struct al_error err = { 0 };
	int rc = srv_store(rq, &st, &err), fd = -1;
	uint8_t rnd[8];
	char hex[17], path[4400];
	uint64_t n = 0;
	if (rc == 0 && getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		rc = al_fail(&err, AL_EIO, errno, "export");
	if (rc == 0) {
		al_hex(rnd, sizeof(rnd), hex);
		snprintf(path, sizeof(path), "%s/tmp/export-%s.ledger", al_store_dir(st), hex);
		rc = al_ledger_export(st, start, path, &n, &err);
		if (rc == 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			rc = al_fail(&err, AL_EIO, errno, "export");
		unlink(path);
	}
	srv_stores_give(st);
	struct stat sb;
	if (rc == 0 && fstat(fd, &sb) < 0)
		rc = al_fail(&err, AL_EIO, errno, "export");
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		return srv_error(rq, &err);
	}
	return srv_fd(rq, 200, "application/octet-stream", fd, (uint64_t)sb.st_size);
}
