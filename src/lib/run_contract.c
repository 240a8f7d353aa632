/* run_contract: a run's contracts checked against its collected changes
 * (run_contract.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "airlock/cas.h"
#include "airlock/store.h"
#include "run_contract.h"
#include "util.h"

int al_run__contracts_load(struct al_store *st, const char *project,
			   const struct al_contract *request, uint8_t policy_floor,
			   struct run_contracts *rc, struct al_error *err)
{
	memset(rc, 0, sizeof(*rc));
	rc->request = request;
	rc->floor = policy_floor ? (enum al_contract_action)(policy_floor - 1) : AL_CONTRACT_RECORD;
	json_t *j = NULL;
	int r = al_project__contract_load(st, project, &j, err);
	if (r == 0 && j && (r = al_contract_parse(j, &rc->project, err)) < 0)
		al_error_prefix(err, "the project's stored contract: ");
	json_decref(j);
	return r;
}

void al_run__contracts_release(struct run_contracts *rc)
{
	al_contract_free(rc->project);
	rc->project = NULL;
}

struct reader {
	struct al_cas *cas;
	const struct al_oid *result;
	int fd[3];
};

static int read_output(void *ctx, enum al_output_stream stream, const char *path, size_t max,
		       char **buf, size_t *len, struct al_error *err)
{
	struct reader *rd = ctx;
	*buf = NULL;
	*len = 0;
	if (stream == AL_OUT_FILE) {
		struct al_entry e;
		int r = al_manifest_lookup(rd->cas, rd->result, path, &e, err);
		if (r < 0)
			return r;
		if (e.type != AL_T_FILE)
			return AL_ENOTFOUND;
		if (e.size > max)
			return AL_ELIMIT;
		uint8_t *b = NULL;
		if ((r = al_cas_get(rd->cas, &e.digest, &b, len, err)) < 0)
			return r;
		*buf = (char *)b;
		return 0;
	}
	int fd = rd->fd[stream == AL_OUT_STDOUT ? 1 : 2];
	struct stat s;
	if (fd < 0 || fstat(fd, &s) < 0)
		return al_fail(err, AL_EIO, errno, "contract: the run's output");
	if ((uint64_t)s.st_size > max)
		return AL_ELIMIT;
	*buf = malloc((size_t)s.st_size + 1);
	if (!*buf)
		return al_fail(err, AL_ENOMEM, ENOMEM, "contract");
	ssize_t n = pread(fd, *buf, (size_t)s.st_size, 0);
	if (n != s.st_size) {
		free(*buf);
		*buf = NULL;
		return al_fail(err, AL_EIO, n < 0 ? errno : EIO, "contract: read the run's output");
	}
	*len = (size_t)n;
	return 0;
}

/* One contract's verdict, its violations tagged with their source. */
static int check_one(const struct al_contract *c, const char *source,
		     const struct al_contract_input *in, json_t *all, size_t *more,
		     enum al_contract_action *action, bool *violated, struct al_error *err)
{
	json_t *v = NULL;
	int r = al_contract_check(c, in, &v, err);
	if (r < 0)
		return r;
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(v, "violations"), i, x) {
		json_object_set_new(x, "source", json_string(source));
		json_array_append(all, x);
	}
	*more += (size_t)json_integer_value(json_object_get(v, "more"));
	if (json_array_size(json_object_get(v, "violations"))) {
		*violated = true;
		if (al_contract_action(c) > *action)
			*action = al_contract_action(c);
	}
	json_decref(v);
	return 0;
}

/* base plus the changes every contract lets the run make */
static int drop_tree(struct al_cas *cas, const struct run_contracts *rc, const struct al_oid *base,
		     const struct al_changes *cs, struct al_oid *result, json_t *dropped,
		     struct al_error *err)
{
	struct al_edit *ed = NULL;
	int r = al_changes_edits(cs, &ed, err);
	if (r < 0)
		return r;
	size_t k = 0;
	for (size_t i = 0; i < cs->n; i++) {
		const struct al_change_rec *x = &cs->v[i];
		bool dir = (!x->has_old || x->old.type == AL_T_DIR) &&
			   (!x->has_new || x->new.type == AL_T_DIR);
		if (dir || (al_contract_writable(rc->project, x->path) &&
			    al_contract_writable(rc->request, x->path)))
			ed[k++] = ed[i];
		else
			json_array_append_new(dropped, json_string(x->path));
	}
	if ((r = al_cas_begin(cas, err)) == 0) {
		r = al_manifest_edit(cas, base, ed, k, result, err);
		r = r < 0 ? (al_cas_abort(cas), r) : al_cas_commit(cas, err);
	}
	free(ed);
	return r;
}

int al_run__contracts_check(struct al_store *st, const struct run_contracts *rc,
			    const struct al_oid *base, struct al_oid *result, int exit_code,
			    int stdout_fd, int stderr_fd, json_t **verdict, bool *blocked,
			    struct al_error *err)
{
	*verdict = NULL;
	*blocked = false;
	if (!rc->project && !rc->request)
		return 0;
	struct al_cas *cas = al_store_cas(st);
	struct al_changes cs;
	int r = al_manifest_changes(cas, base, result, &cs, err);
	if (r < 0)
		return r;
	struct reader rd = { cas, result, { -1, stdout_fd, stderr_fd } };
	struct al_contract_input in = { &cs, exit_code, read_output, &rd };
	json_t *all = json_array(), *dropped = json_array();
	size_t more = 0;
	enum al_contract_action action = rc->floor;
	bool violated = false;
	if (!all || !dropped)
		r = al_fail(err, AL_ENOMEM, ENOMEM, "contract");
	if (r == 0 && rc->project)
		r = check_one(rc->project, "project", &in, all, &more, &action, &violated, err);
	if (r == 0 && rc->request)
		r = check_one(rc->request, "request", &in, all, &more, &action, &violated, err);
	if (rc->request && al_contract_action(rc->request) > action)
		action = al_contract_action(rc->request);
	if (rc->project && al_contract_action(rc->project) > action)
		action = al_contract_action(rc->project);
	if (r == 0 && violated && action == AL_CONTRACT_DROP)
		r = drop_tree(cas, rc, base, &cs, result, dropped, err);
	al_changes_release(&cs);
	if (r == 0) {
		json_t *spec = json_object();
		if (spec && rc->project)
			json_object_set(spec, "project", (json_t *)al_contract_json(rc->project));
		if (spec && rc->request)
			json_object_set(spec, "request", (json_t *)al_contract_json(rc->request));
		*verdict = json_pack("{s:s,s:s,s:O,s:I,s:O,s:o}", "verdict",
				     violated ? "violated" : "satisfied", "on_violation",
				     al_contract_action_name(action), "violations", all, "more",
				     (json_int_t)more, "dropped", dropped, "contracts", spec);
		if (!*verdict)
			r = al_fail(err, AL_ENOMEM, ENOMEM, "contract");
		*blocked = violated && action == AL_CONTRACT_BLOCK_APPLY;
	}
	json_decref(all);
	json_decref(dropped);
	return r;
}
