/* fsck: verify everything stored and everything reachable (fsck.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "airlock/cas.h"
#include "airlock/fsck.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "fsck_private.h"
#include "idset.h"
#include "util.h"

struct fsck {
	struct al_store *st;
	struct al_cas *cas;
	struct al_idset seen;
	struct al_idset bad; /* objects verify_all found corrupt */
	al_fsck_report_fn report;
	void *ctx;
	struct al_fsck_summary *sum;
	char path[AL_PATH_MAX + 1];
	size_t pathlen;
	char snap[AL_OID_STRLEN + 1];
};

static void problem(void *ctx, const char *kind, const struct al_oid *id, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void problem(void *ctx, const char *kind, const struct al_oid *id, const char *fmt, ...)
{
	struct fsck *f = ctx;
	char why[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (!strcmp(kind, "missing"))
		f->sum->missing++;
	else if (!strcmp(kind, "ledger"))
		f->sum->ledger++;
	else
		f->sum->corrupt++;
	if (f->report)
		f->report(f->ctx, kind, id, why);
}

static const char *where(struct fsck *f)
{
	return f->pathlen ? f->path : "(root)";
}

static int check_node(struct fsck *f, const struct al_oid *id, unsigned depth, struct al_error *err)
{
	int added = al_idset_add(&f->seen, id);
	if (added < 0)
		return al_fail(err, AL_ENOMEM, ENOMEM, "fsck");
	if (added == 0)
		return 0;
	if (depth > AL_DEPTH_MAX) {
		problem(f, "corrupt", id, "tree deeper than %d levels at %s in snapshot %s",
			AL_DEPTH_MAX, where(f), f->snap);
		return 0;
	}
	struct al_node *node = NULL;
	struct al_error e = { 0 };
	int r = al_node_load(f->cas, id, &node, &e);
	if (r == AL_ENOTFOUND) {
		problem(f, "missing", id, "directory %s of snapshot %s", where(f), f->snap);
		return 0;
	}
	if (r == AL_ECORRUPT || r == AL_EINVAL) {
		problem(f, "corrupt", id, "directory %s of snapshot %s: %s", where(f), f->snap,
			e.msg);
		return 0;
	}
	if (r < 0) {
		*err = e;
		return r;
	}
	f->sum->nodes++;
	for (size_t i = 0; i < node->n && r == 0; i++) {
		const struct al_entry *en = &node->entries[i];
		f->sum->entries++;
		size_t saved = f->pathlen;
		if (saved + 1 + en->namelen > AL_PATH_MAX) {
			problem(f, "corrupt", id, "path too long under %s in snapshot %s", where(f),
				f->snap);
			continue;
		}
		if (saved)
			f->path[f->pathlen++] = '/';
		memcpy(f->path + f->pathlen, en->name, en->namelen);
		f->pathlen += en->namelen;
		f->path[f->pathlen] = 0;
		if (en->type == AL_T_DIR) {
			r = check_node(f, &en->digest, depth + 1, err);
		} else {
			uint64_t size;
			struct al_error e2 = { 0 };
			int s = al_cas_size(f->cas, &en->digest, &size, &e2);
			if (s == 0 && al_idset_has(&f->bad, &en->digest))
				problem(f, "corrupt", &en->digest, "%s %s of snapshot %s",
					al_entry_type_name(en->type), f->path, f->snap);
			else if (s == AL_ENOTFOUND)
				problem(f, "missing", &en->digest, "%s %s of snapshot %s",
					al_entry_type_name(en->type), f->path, f->snap);
			else if (s < 0) {
				*err = e2;
				r = s;
			} else if (size != en->size)
				problem(f, "corrupt", &en->digest,
					"%s %s of snapshot %s: size %llu, stored %llu",
					al_entry_type_name(en->type), f->path, f->snap,
					(unsigned long long)en->size, (unsigned long long)size);
		}
		f->pathlen = saved;
		f->path[saved] = 0;
	}
	al_node_free(node);
	return r;
}

static int check_snapshot(void *ctx, const struct al_snapshot_info *info, struct al_error *err)
{
	struct fsck *f = ctx;
	f->sum->snapshots++;
	al_oid_fmt(&info->id, f->snap);
	f->pathlen = 0;
	f->path[0] = 0;
	return check_node(f, &info->id, 0, err);
}

static void bad_object(void *ctx, const struct al_oid *d, const char *why)
{
	struct fsck *f = ctx;
	problem(f, strstr(why, "missing") ? "missing" : "corrupt", d, "%s", why);
	al_idset_add(&f->bad, d);
}

int al_fsck(struct al_store *st, al_fsck_report_fn report, void *ctx,
	    struct al_fsck_summary *summary, struct al_error *err)
{
	struct al_fsck_summary sum = { 0 };
	struct fsck *f = calloc(1, sizeof(*f));
	if (!f)
		return al_fail(err, AL_ENOMEM, ENOMEM, "fsck");
	f->st = st;
	f->cas = al_store_cas(st);
	f->report = report;
	f->ctx = ctx;
	f->sum = &sum;
	struct al_cas_stats cs = { 0 };
	int r = al_cas_verify_all(f->cas, bad_object, f, &cs, err);
	if (r >= 0) {
		sum.packed = cs.packed;
		sum.loose = cs.loose;
		sum.objects = cs.packed + cs.loose;
		sum.bytes = cs.bytes;
		sum.unreferenced_files = cs.unreferenced_files;
		r = al_store_snapshot_foreach(st, check_snapshot, f, err);
	}
	if (r >= 0)
		r = al_fsck__ledger(st, problem, f, err);
	al_idset_release(&f->bad);
	al_idset_release(&f->seen);
	free(f);
	if (summary)
		*summary = sum;
	if (r < 0)
		return r;
	uint64_t n = sum.corrupt + sum.missing + sum.ledger;
	return (int)(n > 0x7fffffff ? 0x7fffffff : n);
}

int al_fsck_ledger(struct al_store *st, al_fsck_report_fn report, void *ctx, struct al_error *err)
{
	struct al_fsck_summary sum = { 0 };
	struct fsck f = { .st = st, .report = report, .ctx = ctx, .sum = &sum };
	int r = al_fsck__ledger(st, problem, &f, err);
	return r < 0 ? r : (int)(sum.ledger > 0x7fffffff ? 0x7fffffff : sum.ledger);
}
