/* walk: reading a snapshot's tree: visit every entry, its size, and the
 * diff of two trees, which reads only the subtrees whose ids differ. */
#include <string.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "manifest_private.h"
#include "util.h"

/* ---- the path buffer import, export, walk and diff share ------------------ */

int al_manifest__path_push(struct al_manifest_path *pb, const char *name, size_t n, size_t *saved,
			   struct al_error *err)
{
	*saved = pb->len;
	size_t need = pb->len + (pb->len ? 1 : 0) + n;
	if (need > AL_PATH_MAX)
		return al_fail(err, AL_ELIMIT, 0, "path longer than %d bytes under %.*s",
			       AL_PATH_MAX, (int)(pb->len > 100 ? 100 : pb->len), pb->p);
	if (pb->len)
		pb->p[pb->len++] = '/';
	memcpy(pb->p + pb->len, name, n);
	pb->len += n;
	pb->p[pb->len] = 0;
	return 0;
}

void al_manifest__path_pop(struct al_manifest_path *pb, size_t saved)
{
	pb->len = saved;
	pb->p[saved] = 0;
}

const char *al_manifest__path_show(struct al_manifest_path *pb, char *out, size_t n)
{
	al_quote(pb->p, pb->len, out, n);
	return pb->len ? out : ".";
}

/* ---- walk ------------------------------------------------------------------ */

struct walker {
	struct al_cas *cas;
	struct al_manifest_path path;
	al_walk_fn fn;
	void *ctx;
};

static int walk_node(struct walker *w, const struct al_oid *id, unsigned depth,
		     struct al_error *err)
{
	if (depth > AL_DEPTH_MAX)
		return al_fail(err, AL_ELIMIT, 0, "snapshot deeper than %d levels", AL_DEPTH_MAX);
	struct al_node *node = NULL;
	int r = al_node_load(w->cas, id, &node, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < node->n && r == 0; i++) {
		const struct al_entry *e = &node->entries[i];
		size_t saved;
		if ((r = al_manifest__path_push(&w->path, e->name, e->namelen, &saved, err)) < 0)
			break;
		r = w->fn(w->ctx, w->path.p, e, err);
		if (r == 0 && e->type == AL_T_DIR)
			r = walk_node(w, &e->digest, depth + 1, err);
		al_manifest__path_pop(&w->path, saved);
	}
	al_node_free(node);
	return r;
}

int al_manifest_walk(struct al_cas *cas, const struct al_oid *id, al_walk_fn fn, void *ctx,
		     struct al_error *err)
{
	struct walker *w = calloc(1, sizeof(*w));
	if (!w)
		return al_fail(err, AL_ENOMEM, ENOMEM, "walk");
	w->cas = cas;
	w->fn = fn;
	w->ctx = ctx;
	int r = walk_node(w, id, 0, err);
	free(w);
	return r;
}

int al_manifest_stat(struct al_cas *cas, const struct al_oid *id, uint64_t *bytes, size_t *entries,
		     struct al_error *err)
{
	struct al_node *node = NULL;
	int r = al_node_load(cas, id, &node, err);
	if (r < 0)
		return r;
	uint64_t total = 0;
	for (size_t i = 0; i < node->n; i++)
		if (node->entries[i].type != AL_T_SYMLINK)
			total += node->entries[i].size;
	if (bytes)
		*bytes = total;
	if (entries)
		*entries = node->n;
	al_node_free(node);
	return 0;
}

/* ---- diff ------------------------------------------------------------------ */

struct differ {
	struct al_cas *cas;
	struct al_manifest_path path;
	al_diff_fn fn;
	void *ctx;
};

/* Emit op for every entry beneath directory id (all 'A' or all 'D'). */
static int diff_subtree(struct differ *d, const struct al_oid *id, char op, unsigned depth,
			struct al_error *err)
{
	if (depth > AL_DEPTH_MAX)
		return al_fail(err, AL_ELIMIT, 0, "snapshot deeper than %d levels", AL_DEPTH_MAX);
	struct al_node *node = NULL;
	int r = al_node_load(d->cas, id, &node, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < node->n && r == 0; i++) {
		const struct al_entry *e = &node->entries[i];
		size_t saved;
		if ((r = al_manifest__path_push(&d->path, e->name, e->namelen, &saved, err)) < 0)
			break;
		struct al_change c = { op, d->path.p, op == 'D' ? e : NULL, op == 'A' ? e : NULL };
		r = d->fn(d->ctx, &c, err);
		if (r == 0 && e->type == AL_T_DIR)
			r = diff_subtree(d, &e->digest, op, depth + 1, err);
		al_manifest__path_pop(&d->path, saved);
	}
	al_node_free(node);
	return r;
}

static int diff_nodes(struct differ *d, const struct al_oid *a, const struct al_oid *b,
		      unsigned depth, struct al_error *err);

static int diff_pair(struct differ *d, const struct al_entry *x, const struct al_entry *y,
		     unsigned depth, struct al_error *err)
{
	int r = 0;
	if (!y) {
		struct al_change c = { 'D', d->path.p, x, NULL };
		if ((r = d->fn(d->ctx, &c, err)) == 0 && x->type == AL_T_DIR)
			r = diff_subtree(d, &x->digest, 'D', depth + 1, err);
		return r;
	}
	if (!x) {
		struct al_change c = { 'A', d->path.p, NULL, y };
		if ((r = d->fn(d->ctx, &c, err)) == 0 && y->type == AL_T_DIR)
			r = diff_subtree(d, &y->digest, 'A', depth + 1, err);
		return r;
	}
	bool same_digest = al_oid_eq(&x->digest, &y->digest);
	if (x->type == y->type) {
		bool changed = x->mode != y->mode || (x->type != AL_T_DIR && !same_digest);
		if (changed) {
			struct al_change c = { 'M', d->path.p, x, y };
			if ((r = d->fn(d->ctx, &c, err)) < 0)
				return r;
		}
		if (x->type == AL_T_DIR && !same_digest)
			r = diff_nodes(d, &x->digest, &y->digest, depth + 1, err);
		return r;
	}
	struct al_change c = { 'M', d->path.p, x, y };
	if ((r = d->fn(d->ctx, &c, err)) < 0)
		return r;
	if (x->type == AL_T_DIR && (r = diff_subtree(d, &x->digest, 'D', depth + 1, err)) < 0)
		return r;
	if (y->type == AL_T_DIR)
		r = diff_subtree(d, &y->digest, 'A', depth + 1, err);
	return r;
}

static int diff_nodes(struct differ *d, const struct al_oid *a, const struct al_oid *b,
		      unsigned depth, struct al_error *err)
{
	if (depth > AL_DEPTH_MAX)
		return al_fail(err, AL_ELIMIT, 0, "snapshot deeper than %d levels", AL_DEPTH_MAX);
	struct al_node *na = NULL, *nb = NULL;
	int r = al_node_load(d->cas, a, &na, err);
	if (r < 0)
		return r;
	if ((r = al_node_load(d->cas, b, &nb, err)) < 0) {
		al_node_free(na);
		return r;
	}
	size_t i = 0, j = 0;
	while (r == 0 && (i < na->n || j < nb->n)) {
		const struct al_entry *x = i < na->n ? &na->entries[i] : NULL;
		const struct al_entry *y = j < nb->n ? &nb->entries[j] : NULL;
		int c = !x   ? 1
			: !y ? -1
			     : al_manifest__name_cmp(x->name, x->namelen, y->name, y->namelen);
		if (c < 0)
			y = NULL, i++;
		else if (c > 0)
			x = NULL, j++;
		else
			i++, j++;
		const struct al_entry *named = x ? x : y;
		size_t saved;
		if ((r = al_manifest__path_push(&d->path, named->name, named->namelen, &saved,
						err)) < 0)
			break;
		r = diff_pair(d, x, y, depth, err);
		al_manifest__path_pop(&d->path, saved);
	}
	al_node_free(na);
	al_node_free(nb);
	return r;
}

int al_manifest_diff(struct al_cas *cas, const struct al_oid *a, const struct al_oid *b,
		     al_diff_fn fn, void *ctx, struct al_error *err)
{
	struct differ *d = calloc(1, sizeof(*d));
	if (!d)
		return al_fail(err, AL_ENOMEM, ENOMEM, "diff");
	d->cas = cas;
	d->fn = fn;
	d->ctx = ctx;
	int r;
	if (al_oid_eq(a, b)) {
		/* still check that the snapshot exists */
		struct al_node *n = NULL;
		r = al_node_load(cas, a, &n, err);
		al_node_free(n);
	} else {
		r = diff_nodes(d, a, b, 0, err);
	}
	free(d);
	return r;
}
