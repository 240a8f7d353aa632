/* edit: paths in a tree (lookup, validity, order), edits of a tree that
 * rebuild only the nodes on the edited paths, and change lists (a diff
 * materialised, and the edits that replay it). */
#include <string.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "cas_private.h"
#include "manifest_private.h"
#include "util.h"

/* ---- lookup and edit -------------------------------------------------------- */

bool al_path_valid(const char *path, const char **why)
{
	size_t n = strlen(path);
	if (n == 0 || n > AL_PATH_MAX) {
		*why = n ? "path too long" : "empty path";
		return false;
	}
	const char *p = path;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (!al_name_valid(p, len, why))
			return false;
		if (!slash)
			return true;
		p = slash + 1;
	}
}

int al_path_cmp(const char *a, const char *b)
{
	size_t i = 0;
	while (a[i] && a[i] == b[i])
		i++;
	if (a[i] == b[i])
		return 0;
	if (!a[i])
		return -1;
	if (!b[i])
		return 1;
	if (a[i] == '/')
		return -1;
	if (b[i] == '/')
		return 1;
	return (uint8_t)a[i] < (uint8_t)b[i] ? -1 : 1;
}

static const struct al_entry *node_find(const struct al_node *node, const char *name, size_t len)
{
	size_t lo = 0, hi = node ? node->n : 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = al_manifest__name_cmp(node->entries[mid].name, node->entries[mid].namelen,
					      name, len);
		if (c == 0)
			return &node->entries[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int al_manifest_lookup(struct al_cas *cas, const struct al_oid *root, const char *path,
		       struct al_entry *out, struct al_error *err)
{
	const char *why;
	if (!al_path_valid(path, &why))
		return al_fail(err, AL_EINVAL, 0, "bad path: %s", why);
	struct al_oid cur;
	cur = *root;
	const char *p = path;
	for (unsigned depth = 0;; depth++) {
		struct al_node *node = NULL;
		int r = al_node_load(cas, &cur, &node, err);
		if (r < 0)
			return r;
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		const struct al_entry *e = node_find(node, p, len);
		if (!e || (slash && e->type != AL_T_DIR) || depth > AL_DEPTH_MAX) {
			al_node_free(node);
			return al_fail(err, AL_ENOTFOUND, 0, "no %s in snapshot", path);
		}
		if (!slash) {
			*out = *e;
			out->name = NULL;
			out->namelen = 0;
			al_node_free(node);
			return 0;
		}
		cur = e->digest;
		al_node_free(node);
		p = slash + 1;
	}
}

static int cmp_edit_ptr(const void *a, const void *b)
{
	return al_path_cmp((*(struct al_edit *const *)a)->path,
			   (*(struct al_edit *const *)b)->path);
}

/* Edits e[0..n), sorted by path, of the directory at depth whose entries'
 * names start at byte off of each path. */
struct edit_group {
	struct al_edit **e;
	size_t n;
	size_t off;
	unsigned depth;
};

static int edit_node(struct al_cas *cas, const struct al_oid *id, const struct edit_group *grp,
		     struct al_oid *out, uint64_t *size, struct al_error *err);

/* One group of edits for one child name (its complen bytes at off):
 * compute the child's new entry. */
static int edit_child(struct al_cas *cas, const struct al_entry *existing,
		      const struct edit_group *grp, size_t complen, struct al_entry *res,
		      bool *present, struct al_error *err)
{
	struct al_edit **g = grp->e;
	size_t gn = grp->n, off = grp->off;
	unsigned depth = grp->depth;
	struct al_edit *self = g[0]->path[off + complen] == 0 ? g[0] : NULL;
	struct al_edit **sub = self ? g + 1 : g;
	size_t subn = self ? gn - 1 : gn;
	size_t suboff = off + complen + 1;
	bool replaced = self && (self->op == AL_EDIT_DELETE || self->entry.type != AL_T_DIR);
	if (replaced) {
		for (size_t i = 0; i < subn; i++)
			if (sub[i]->op != AL_EDIT_DELETE)
				return al_fail(err, AL_EINVAL, 0, "cannot set %s: %.*s is %s",
					       sub[i]->path, (int)(off + complen), self->path,
					       self->op == AL_EDIT_DELETE ? "deleted"
									  : "not a directory");
		if (self->op == AL_EDIT_DELETE) {
			if (!existing)
				return al_fail(err, AL_ENOTFOUND, 0,
					       "cannot delete %s: no such path", self->path);
			*present = false;
			return 0;
		}
		*res = self->entry;
		*present = true;
		return 0;
	}
	const struct al_oid *base = NULL;
	unsigned mode;
	if (self) {
		mode = self->entry.mode;
		if (!al_oid_is_zero(&self->entry.digest))
			base = &self->entry.digest; /* graft */
		else if (existing && existing->type == AL_T_DIR)
			base = &existing->digest;
	} else {
		if (!existing || existing->type != AL_T_DIR)
			return al_fail(err, AL_ENOTFOUND, 0,
				       "cannot edit %s: %.*s is not a directory", sub[0]->path,
				       (int)(off + complen), sub[0]->path);
		mode = existing->mode;
		base = &existing->digest;
	}
	memset(res, 0, sizeof(*res));
	res->type = AL_T_DIR;
	res->mode = mode;
	if (subn == 0 && base && self && !al_oid_is_zero(&self->entry.digest)) {
		*res = self->entry; /* a pure graft: size comes with it */
		*present = true;
		return 0;
	}
	int r = edit_node(cas, base, &(struct edit_group){ sub, subn, suboff, depth + 1 },
			  &res->digest, &res->size, err);
	*present = r == 0;
	return r;
}

static int edit_node(struct al_cas *cas, const struct al_oid *id, const struct edit_group *grp,
		     struct al_oid *out, uint64_t *size, struct al_error *err)
{
	struct al_edit **e = grp->e;
	size_t n = grp->n, off = grp->off;
	unsigned depth = grp->depth;
	if (depth > AL_DEPTH_MAX)
		return al_fail(err, AL_ELIMIT, 0, "tree deeper than %d levels", AL_DEPTH_MAX);
	struct al_node *node = NULL;
	uint8_t *enc = NULL;
	int r = 0;
	if (id && (r = al_node_load(cas, id, &node, err)) < 0)
		return r;
	size_t cap = (node ? node->n : 0) + n;
	struct al_entry *res = malloc((cap ? cap : 1) * sizeof(*res));
	char **names = calloc(n ? n : 1, sizeof(char *));
	size_t nres = 0, ni = 0, nnames = 0;
	if (!res || !names) {
		r = al_fail(err, AL_ENOMEM, ENOMEM, "edit");
		goto out;
	}
	size_t i = 0;
	while (i < n || (node && ni < node->n)) {
		const char *comp = NULL;
		size_t complen = 0;
		if (i < n) {
			comp = e[i]->path + off;
			const char *slash = strchr(comp, '/');
			complen = slash ? (size_t)(slash - comp) : strlen(comp);
		}
		/* copy existing entries that sort before the next edited name */
		while (node && ni < node->n &&
		       (!comp ||
			al_manifest__name_cmp(node->entries[ni].name, node->entries[ni].namelen,
					      comp, complen) < 0))
			res[nres++] = node->entries[ni++];
		if (!comp)
			break;
		size_t gn = 1;
		while (i + gn < n && strncmp(e[i + gn]->path + off, comp, complen) == 0 &&
		       (e[i + gn]->path[off + complen] == '/' ||
			e[i + gn]->path[off + complen] == 0))
			gn++;
		const struct al_entry *existing = NULL;
		if (node && ni < node->n &&
		    al_manifest__name_cmp(node->entries[ni].name, node->entries[ni].namelen, comp,
					  complen) == 0)
			existing = &node->entries[ni++];
		struct al_entry child;
		bool present = false;
		if (gn > 1 && e[i]->path[off + complen] == 0 &&
		    e[i + 1]->path[off + complen] == 0) {
			r = al_fail(err, AL_EINVAL, 0, "path %s edited twice", e[i]->path);
			goto out;
		}
		if ((r = edit_child(cas, existing, &(struct edit_group){ e + i, gn, off, depth },
				    complen, &child, &present, err)) < 0)
			goto out;
		if (present) {
			if (!(names[nnames] = strndup(comp, complen))) {
				r = al_fail(err, AL_ENOMEM, ENOMEM, "edit");
				goto out;
			}
			child.name = names[nnames++];
			child.namelen = complen;
			res[nres++] = child;
		}
		i += gn;
	}
	uint64_t total = 0;
	for (size_t k = 0; k < nres; k++)
		if (res[k].type != AL_T_SYMLINK)
			total += res[k].size;
	size_t enclen = 0;
	if ((r = al_node_encode(res, nres, &enc, &enclen, err)) < 0)
		goto out;
	if ((r = al_cas_put(cas, enc, enclen, out, err)) < 0)
		goto out;
	*size = total;
out:
	free(enc);
	for (size_t k = 0; k < nnames; k++)
		free(names[k]);
	free(names);
	free(res);
	al_node_free(node);
	return r;
}

int al_manifest_edit(struct al_cas *cas, const struct al_oid *base, struct al_edit *edits, size_t n,
		     struct al_oid *out, struct al_error *err)
{
	const char *why;
	for (size_t i = 0; i < n; i++) {
		if (!al_path_valid(edits[i].path, &why)) {
			char q[300];
			al_quote(edits[i].path, strnlen(edits[i].path, 200), q, sizeof(q));
			return al_fail(err, AL_EINVAL, 0, "bad path '%s': %s", q, why);
		}
		if (edits[i].op != AL_EDIT_SET && edits[i].op != AL_EDIT_DELETE)
			return al_fail(err, AL_EUSAGE, 0, "edit: bad op");
	}
	struct al_edit **sorted = malloc((n ? n : 1) * sizeof(*sorted));
	if (!sorted)
		return al_fail(err, AL_ENOMEM, ENOMEM, "edit");
	for (size_t i = 0; i < n; i++)
		sorted[i] = &edits[i];
	qsort(sorted, n, sizeof(*sorted), cmp_edit_ptr);
	int r = 0;
	for (size_t i = 1; i < n && r == 0; i++)
		if (al_path_cmp(sorted[i - 1]->path, sorted[i]->path) == 0)
			r = al_fail(err, AL_EINVAL, 0, "path %s edited twice", sorted[i]->path);
	uint64_t size;
	if (r == 0)
		r = edit_node(cas, base, &(struct edit_group){ sorted, n, 0, 0 }, out, &size, err);
	free(sorted);
	return r;
}

/* ---- change lists ------------------------------------------------------------ */

static int collect_change(void *ctx, const struct al_change *c, struct al_error *err)
{
	struct al_changes *cs = ctx;
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? cs->cap * 2 : 64;
		struct al_change_rec *v = realloc(cs->v, cap * sizeof(*v));
		if (!v)
			return al_fail(err, AL_ENOMEM, ENOMEM, "changes");
		cs->v = v;
		cs->cap = cap;
	}
	struct al_change_rec *r = &cs->v[cs->n];
	memset(r, 0, sizeof(*r));
	if (!(r->path = strdup(c->path)))
		return al_fail(err, AL_ENOMEM, ENOMEM, "changes");
	r->op = c->op;
	if ((r->has_old = c->old != NULL)) {
		r->old = *c->old;
		r->old.name = NULL;
		r->old.namelen = 0;
	}
	if ((r->has_new = c->new != NULL)) {
		r->new = *c->new;
		r->new.name = NULL;
		r->new.namelen = 0;
	}
	cs->n++;
	return 0;
}

struct collect_max {
	struct al_changes *cs;
	size_t max;
};

static int collect_change_max(void *ctx, const struct al_change *c, struct al_error *err)
{
	struct collect_max *m = ctx;
	if (m->cs->n >= m->max)
		return al_fail(err, AL_ELIMIT, 0, "changes: more than %zu", m->max);
	return collect_change(m->cs, c, err);
}

int al_manifest__changes_max(struct al_cas *cas, const struct al_oid *a, const struct al_oid *b,
			     size_t max, struct al_changes *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	struct collect_max m = { out, max };
	bool reads = al_cas__reads_begin(cas); /* the callback only collects */
	int r = al_manifest_diff(cas, a, b, collect_change_max, &m, err);
	al_cas__reads_end(cas, reads);
	if (r < 0)
		al_changes_release(out);
	return r;
}

int al_manifest_changes(struct al_cas *cas, const struct al_oid *a, const struct al_oid *b,
			struct al_changes *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	bool reads = al_cas__reads_begin(cas); /* the callback only collects */
	int r = al_manifest_diff(cas, a, b, collect_change, out, err);
	al_cas__reads_end(cas, reads);
	if (r < 0)
		al_changes_release(out);
	return r;
}

void al_changes_release(struct al_changes *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].path);
	free(c->v);
	memset(c, 0, sizeof(*c));
}

int al_changes_edits(const struct al_changes *c, struct al_edit **out, struct al_error *err)
{
	struct al_edit *e = calloc(c->n ? c->n : 1, sizeof(*e));
	if (!e)
		return al_fail(err, AL_ENOMEM, ENOMEM, "changes");
	for (size_t i = 0; i < c->n; i++) {
		const struct al_change_rec *r = &c->v[i];
		e[i].path = r->path;
		if (!r->has_new) {
			e[i].op = AL_EDIT_DELETE;
			continue;
		}
		e[i].op = AL_EDIT_SET;
		e[i].entry = r->new;
		if (r->new.type == AL_T_DIR) {
			/* contents come from the changes beneath it */
			e[i].entry.digest = AL_OID_ZERO;
			e[i].entry.size = 0;
		}
	}
	*out = e;
	return 0;
}
