/* projects: projects, commits (DeltaBundle uploads), drafts, review and
 * apply, snapshots, blobs and images. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/cas.h"
#include "airlock/contract.h"
#include "airlock/image.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "decode.h"
#include "ops.h"
#include "server.h"
#include "airlock/util.h"
#include "view.h"

#define BLOB_MAX (256u << 20) /* a blob answered in one response */
#define SNAPSHOT_ENTRIES_MAX 100000

static int list_projects(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	json_t *all = *out = json_array();
	int rc = view_projects(st, all, err);
	if (rc == 0 && !srv_role(rq, AL_ROLE_ADMIN | AL_ROLE_AUTHOR | AL_ROLE_REVIEWER)) {
		json_t *mine = json_array(), *v;
		size_t i;
		json_array_foreach(all, i, v)
			if (srv_project_visible(rq, json_string_value(json_object_get(v, "name"))))
				json_array_append(mine, v);
		json_decref(all);
		*out = mine;
	}
	return rc;
}

int h_projects(struct req *rq)
{
	return srv_serve(rq, 200, list_projects);
}

static int get_project(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	struct al_project_info p;
	int rc = al_project_get(st, rq->seg[1], &p, err);
	if (rc == 0)
		*out = view_project(&p);
	return rc;
}

int h_project(struct req *rq)
{
	if (!srv_project_visible(rq, rq->seg[1]))
		return srv_no_project(rq, rq->seg[1]);
	return srv_serve(rq, 200, get_project);
}

static int create_project(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	json_t *body = NULL;
	const char *name;
	struct al_project_info p;
	int rc = decode_body(rq->len ? rq->body : "{}", rq->len ? rq->len : 2, &body, err);
	if (rc == 0)
		rc = decode_project(body, &name, err);
	if (rc == 0)
		rc = al_project_create(st, name, NULL, rq->who.name, &p, err);
	if (rc == 0)
		*out = view_project(&p);
	json_decref(body);
	return rc;
}

int h_project_create(struct req *rq)
{
	return srv_serve(rq, 201, create_project);
}

/* POST /projects/{name}, the body a tar archive of the tree (Content-Type
 * application/x-tar): the project, its head that tree, in one step.  The
 * tree is imported before the project exists and the project is created
 * with that head in one transaction, so a failed or cut-off upload leaves
 * no project behind (an upload that does not arrive whole never reaches
 * this handler). */
int h_project_create_tree(struct req *rq)
{
	struct al_error err = { 0 };
	const char *type = dl_mhd.lookup_connection_value(rq->conn, MHD_HEADER_KIND,
							  MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!type || strncmp(type, "application/x-tar", 17) != 0)
		return srv_fail(rq, AL_EINVAL,
				"the body is the project's tree as a tar archive (Content-Type "
				"application/x-tar)");
	if (al_project_name_check(rq->seg[1], &err) < 0)
		return srv_error(rq, &err);
	struct al_store *st = NULL;
	struct al_project_info p;
	struct al_import_result ir;
	int rc = srv_store(rq, &st, &err);
	if (rc == 0) {
		/* a name already taken is refused before the upload is unpacked */
		struct al_error e2 = { 0 };
		int gr = al_project_get(st, rq->seg[1], &p, &e2);
		if (gr == 0)
			rc = al_fail(&err, AL_EEXIST, 0, "project %s already exists", rq->seg[1]);
		else if (gr != AL_ENOTFOUND) {
			err = e2;
			rc = gr;
		}
	}
	if (rc == 0) {
		char src[64];
		snprintf(src, sizeof(src), "/proc/self/fd/%d", rq->upload_fd);
		rc = al_tar_import(st, src, &ir, &err);
	}
	if (rc == 0)
		rc = al_project_create(st, rq->seg[1], &ir.id, rq->who.name, &p, &err);
	srv_stores_give(st);
	if (rc < 0)
		return srv_error(rq, &err);
	json_t *out = view_project(&p);
	json_object_set_new(out, "tree", view_id(&ir.id));
	return srv_json(rq, 201, out);
}

static int project_log(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	*out = json_array();
	return view_log(st, rq->seg[1], *out, err);
}

int h_project_log(struct req *rq)
{
	return srv_serve(rq, 200, project_log);
}

static int project_drafts(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	*out = json_array();
	return view_drafts(st, rq->seg[1], *out, err);
}

int h_project_drafts(struct req *rq)
{
	return srv_serve(rq, 200, project_drafts);
}

/* POST /projects/{name}/commits?base=ID[&strategy=S][&message=M]: the body a
 * DeltaBundle (the change from base), or with Content-Type
 * application/x-tar the whole new tree (committed as the change from base
 * to it, like `airlock commit NAME DIR --base ID`) */
int h_project_commit(struct req *rq)
{
	struct al_error err = { 0 };
	struct al_oid base, made;
	const char *b = srv_query(rq, "base"), *strategy = srv_query(rq, "strategy");
	const char *type = dl_mhd.lookup_connection_value(rq->conn, MHD_HEADER_KIND,
							  MHD_HTTP_HEADER_CONTENT_TYPE);
	bool tree = type && strncmp(type, "application/x-tar", 17) == 0;
	struct al_commit_opts o = { .strategy = AL_STRICT,
				    .author = rq->who.name,
				    .message = srv_query(rq, "message") };
	if (!b)
		return srv_fail(rq, AL_EINVAL,
				"the query needs base=ID (the snapshot the change was made from)");
	if (al_oid_parse(b, &base, &err) < 0 ||
	    (strategy && al_strategy_parse(strategy, &o.strategy, &err) < 0))
		return srv_error(rq, &err);
	struct al_store *st = NULL;
	struct al_commit_result res = { 0 };
	struct al_project_info p;
	int rc = srv_store(rq, &st, &err);
	if (rc == 0 && !tree)
		rc = ops_bundle_commit(st, rq->seg[1], rq->upload_fd, &base, &o, &res, &made, &err);
	if (rc == 0 && tree && (rc = al_project_get(st, rq->seg[1], &p, &err)) == 0) {
		char src[64];
		struct al_import_result ir;
		snprintf(src, sizeof(src), "/proc/self/fd/%d", rq->upload_fd);
		if ((rc = al_tar_import(st, src, &ir, &err)) == 0) {
			made = ir.id;
			rc = al_project_commit(st, rq->seg[1], &base, &ir.id, &o, &res, &err);
		}
	}
	srv_stores_give(st);
	if (rc == AL_ECONFLICT)
		srv_json(rq, 409, view_error(&err, &res));
	else if (rc < 0)
		srv_error(rq, &err);
	else {
		json_t *out = view_commit_result(&res);
		json_object_set_new(out, tree ? "tree" : "bundle", view_id(&made));
		srv_json(rq, 201, out);
	}
	al_commit_result_release(&res);
	return 0;
}

static int get_draft(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	struct al_draft_info d;
	int rc = al_draft_get(st, rq->seg[1], &d, err);
	if (rc == 0)
		*out = view_draft(st, &d);
	return rc;
}

int h_draft(struct req *rq)
{
	return srv_serve(rq, 200, get_draft);
}

static int review(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	const char *stat = srv_query(rq, "stat");
	const char *path = srv_query(rq, "path");
	if (path)
		return view_review_path(st, rq->seg[1], path, out, err);
	return view_review(st, rq->seg[1], stat && strcmp(stat, "0") && strcmp(stat, "false"), out,
			   err);
}

int h_draft_review(struct req *rq)
{
	return srv_serve(rq, 200, review);
}

int h_draft_apply(struct req *rq)
{
	json_t *body;
	if (srv_body_json(rq, &body) < 0)
		return 0;
	struct apply_request a;
	struct al_error err = { 0 };
	if (decode_apply(body, &a, &err) < 0) {
		json_decref(body);
		return srv_error(rq, &err);
	}
	struct al_store *st = NULL;
	struct al_commit_result res = { 0 };
	struct al_draft_info d;
	int rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = al_draft_get(st, rq->seg[1], &d, &err);
	const char *mode = a.mode == AL_ACCEPT_ALL        ? "accept_all"
			   : a.mode == AL_ACCEPT_SELECTED ? "accept_selected"
							  : "reject_all";
	char message[256];
	if (rc == 0) {
		snprintf(message, sizeof(message), "%s draft %s", mode,
			 d.id); /* the draft's id, also when named by its run's */
		struct al_commit_opts o = { .strategy = a.strategy,
					    .author = rq->who.name,
					    .message = a.message ? a.message : message };
		rc = al_draft_apply_sel(st, rq->seg[1], a.mode, a.paths, a.npaths, &o, &res, &err);
	}
	json_t *out = NULL;
	if (rc == 0) {
		out = view_apply(d.id, mode, al_strategy_name(a.strategy), a.paths, a.npaths);
		json_t *c = view_commit_result(&res);
		json_object_update(out, c);
		json_decref(c);
		view_apply_result(st, d.id, out, &res);
	}
	srv_stores_give(st);
	if (rc == AL_ECONFLICT)
		srv_json(rq, 409, view_error(&err, &res));
	else if (rc < 0)
		srv_error(rq, &err);
	else
		srv_json(rq, 200, out);
	al_commit_result_release(&res);
	apply_request_release(&a);
	json_decref(body);
	return 0;
}

struct walk_ctx {
	json_t *entries;
	size_t n, limit;
	bool truncated;
};

static int walk_one(void *ctx, const char *path, const struct al_entry *e, struct al_error *err)
{
	(void)err;
	struct walk_ctx *w = ctx;
	if (w->n++ >= w->limit) {
		w->truncated = true;
		return 0;
	}
	json_t *o = view_entry(e, NULL);
	json_object_set_new(o, "path", view_bytes(path, strlen(path)));
	json_array_append_new(w->entries, o);
	return 0;
}

static int snapshot(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	struct al_oid id;
	struct walk_ctx w = { .entries = json_array(), .limit = SNAPSHOT_ENTRIES_MAX };
	const char *limit = srv_query(rq, "limit");
	if (limit)
		w.limit = strtoul(limit, NULL, 10) < SNAPSHOT_ENTRIES_MAX ? strtoul(limit, NULL, 10)
									  : SNAPSHOT_ENTRIES_MAX;
	int rc = al_oid_parse(rq->seg[1], &id, err);
	if (rc == 0)
		rc = al_manifest_walk(al_store_cas(st), &id, walk_one, &w, err);
	if (rc < 0) {
		json_decref(w.entries);
		return rc;
	}
	*out = json_pack("{s:s,s:I,s:b,s:o}", "id", rq->seg[1], "entries_total", (json_int_t)w.n,
			 "truncated", w.truncated, "entries", w.entries);
	return 0;
}

int h_snapshot(struct req *rq)
{
	return srv_serve(rq, 200, snapshot);
}

int h_blob(struct req *rq)
{
	struct al_oid id;
	uint64_t size = 0;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	int rc = al_oid_parse(rq->seg[1], &id, &err);
	if (rc == 0)
		rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = al_cas_size(al_store_cas(st), &id, &size, &err);
	if (rc == 0 && size > BLOB_MAX)
		rc = al_fail(&err, AL_ELIMIT, 0,
			     "blob of %llu bytes: over the %u bytes one response carries",
			     (unsigned long long)size, BLOB_MAX);
	if (rc < 0) {
		srv_stores_give(st);
		return srv_error(rq, &err);
	}
	srv_object(rq, al_store_cas(st), &id, 0,
		   "application/octet-stream"); /* streamed, Range honoured */
	srv_stores_give(st);
	return 0;
}

static int images(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	(void)rq;
	*out = json_array();
	return view_images(st, *out, err);
}

int h_images(struct req *rq)
{
	return srv_serve(rq, 200, images);
}

/* POST /images[?name=N], the body a tar archive (any compression) */
int h_image_import(struct req *rq)
{
	const char *name = srv_query(rq, "name");
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	struct al_import_result res;
	char src[64];
	snprintf(src, sizeof(src), "/proc/self/fd/%d", rq->upload_fd);
	int rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = al_image_import_as(st, src, name, "upload", rq->who.name, &res, &err);
	srv_stores_give(st);
	return rc < 0 ? srv_error(rq, &err) : srv_json(rq, 201, view_image_import(&res, name));
}

/* ---- a project's default contract (contract.h) ------------------------------- */

static int contract_doc(struct al_store *st, const char *project, json_t **out,
			struct al_error *err)
{
	json_t *c = NULL;
	int rc = al_project_contract_get(st, project, &c, err);
	if (rc == 0 && !(*out = json_pack("{s:s,s:o?}", "project", project, "contract", c)))
		rc = al_fail(err, AL_ENOMEM, 0, "contract");
	if (rc == 0 && !json_object_get(*out, "contract"))
		json_object_set_new(*out, "contract", json_null());
	return rc;
}

static int get_contract(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	return contract_doc(st, rq->seg[1], out, err);
}

static int put_contract(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	json_t *body = NULL;
	int rc = decode_body(rq->body, rq->len, &body, err);
	if (rc == 0)
		rc = al_project_contract_set(st, rq->seg[1], body, rq->who.name, err);
	json_decref(body);
	return rc < 0 ? rc : contract_doc(st, rq->seg[1], out, err);
}

static int delete_contract(struct req *rq, struct al_store *st, json_t **out, struct al_error *err)
{
	int rc = al_project_contract_set(st, rq->seg[1], NULL, rq->who.name, err);
	return rc < 0 ? rc : contract_doc(st, rq->seg[1], out, err);
}

int h_project_contract(struct req *rq)
{
	if (!srv_project_visible(rq, rq->seg[1]))
		return srv_no_project(rq, rq->seg[1]);
	return srv_serve(rq, 200, get_contract);
}

int h_project_contract_set(struct req *rq)
{
	if (!srv_project_visible(rq, rq->seg[1]))
		return srv_no_project(rq, rq->seg[1]);
	return srv_serve(rq, 200,
			 strcmp(rq->method, "DELETE") == 0 ? delete_contract : put_contract);
}
