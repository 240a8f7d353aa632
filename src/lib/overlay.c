/* overlay: a run's upper layer applied to its base snapshot (overlay.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "airlock/overlay.h"
#include "airlock/store.h"
#include "delta_private.h"
#include "util.h"

void al_overlay_report_release(struct al_overlay_report *r)
{
	for (size_t i = 0; i < r->nnotes; i++)
		free(r->notes[i]);
	free(r->notes);
	for (size_t i = 0; i < r->ndropped_paths; i++)
		free(r->dropped_paths[i]);
	free(r->dropped_paths);
	free(r->newest);
	memset(r, 0, sizeof(*r));
}

struct ov {
	struct al_cas *cas;
	const struct al_oid *base;
	struct al_oid empty;
	struct al_edit *ed;
	char **paths;
	size_t n, cap;
	struct al_overlay_report *rep;
	uint64_t max_bytes;         /* 0: none */
	void (*unplain)(void *ctx); /* al_overlay_apply_within */
	void *ctx;
};

static int vnote(struct al_overlay_report *rep, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
static int vnote(struct al_overlay_report *rep, const char *fmt, va_list ap)
{
	char buf[AL_PATH_MAX + 128];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	char **v = realloc(rep->notes, (rep->nnotes + 1) * sizeof(char *));
	if (!v || !(v[rep->nnotes] = strdup(buf))) {
		if (v)
			rep->notes = v;
		return -1;
	}
	rep->notes = v;
	rep->nnotes++;
	rep->neutralised++;
	return 0;
}

int al_overlay_report_note(struct al_overlay_report *rep, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vnote(rep, fmt, ap);
	va_end(ap);
	return r;
}

static int note(struct ov *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int note(struct ov *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vnote(o->rep, fmt, ap);
	va_end(ap);
	return r;
}

static int add_edit(struct ov *o, const char *path, enum al_edit_op op, const struct al_entry *e,
		    struct al_error *err)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		struct al_edit *ed = realloc(o->ed, cap * sizeof(*ed));
		char **p = ed ? realloc(o->paths, cap * sizeof(char *)) : NULL;
		if (ed)
			o->ed = ed;
		if (!ed || !p)
			return al_fail(err, AL_ENOMEM, ENOMEM, "overlay");
		o->paths = p;
		o->cap = cap;
	}
	if (!(o->paths[o->n] = strdup(path)))
		return al_fail(err, AL_ENOMEM, ENOMEM, "overlay");
	o->ed[o->n] = (struct al_edit){ .path = o->paths[o->n], .op = op };
	if (e)
		o->ed[o->n].entry = *e;
	o->n++;
	if (op == AL_EDIT_DELETE)
		o->rep->deleted++;
	else
		o->rep->set++;
	if (o->unplain && op != AL_EDIT_DELETE &&
	    !al_bundle__plain_name(path, e && e->type == AL_T_DIR)) {
		o->unplain(o->ctx);
		o->unplain = NULL;
	}
	return 0;
}

static bool opaque(int fd)
{
	char v[4];
	ssize_t n = fgetxattr(fd, "trusted.overlay.opaque", v, sizeof(v));
	if (n < 0)
		n = fgetxattr(fd, "user.overlay.opaque", v, sizeof(v));
	return n == 1 && v[0] == 'y';
}

static int walk(struct ov *o, int dfd, char *path, size_t plen, bool parent_replaced,
		unsigned depth, struct al_error *err);

static int entry(struct ov *o, int dfd, const char *name, char *path, size_t plen,
		 bool parent_replaced, unsigned depth, struct al_error *err)
{
	size_t nlen = strlen(name);
	const char *why;
	if (plen + 1 + nlen > AL_PATH_MAX)
		return note(o, "%.200s/…: path too long, not kept", path) < 0
			       ? al_fail(err, AL_ENOMEM, ENOMEM, "overlay")
			       : 0;
	size_t np = plen;
	if (plen)
		path[np++] = '/';
	memcpy(path + np, name, nlen + 1);
	np += nlen;
	char q[512];
	al_quote(path, np, q, sizeof(q));
	if (!al_name_valid(name, nlen, &why))
		return note(o, "%s: %s, not kept", q, why) < 0
			       ? al_fail(err, AL_ENOMEM, ENOMEM, "overlay")
			       : 0;
	struct stat s;
	if (fstatat(dfd, name, &s, AT_SYMLINK_NOFOLLOW) < 0)
		return al_fail(err, AL_EIO, errno, "overlay: stat %s", q);
	struct al_entry base;
	bool in_base =
		!parent_replaced && al_manifest_lookup(o->cas, o->base, path, &base, NULL) == 0;
	int r = 0;
	if (S_ISCHR(s.st_mode) && major(s.st_rdev) == 0 && minor(s.st_rdev) == 0) {
		/* a whiteout: the run deleted it */
		if (in_base)
			r = add_edit(o, path, AL_EDIT_DELETE, NULL, err);
	} else if (S_ISDIR(s.st_mode)) {
		if (depth + 1 > AL_DEPTH_MAX)
			return note(o, "%s: deeper than %d levels, not kept", q, AL_DEPTH_MAX) < 0
				       ? AL_ENOMEM
				       : 0;
		int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return al_fail(err, AL_EIO, errno, "overlay: open %s", q);
		bool replace = opaque(fd) || (in_base && base.type != AL_T_DIR);
		unsigned mode = s.st_mode & 07777 & ~06000u;
		struct al_entry d = { .type = AL_T_DIR, .mode = mode };
		if (replace && (in_base || parent_replaced))
			d.digest = o->empty; /* graft an empty directory, then its upper contents */
		if (replace || !in_base || base.mode != mode)
			r = add_edit(o, path, AL_EDIT_SET, &d, err);
		if (r == 0)
			r = walk(o, fd, path, np, parent_replaced || replace, depth + 1, err);
		close(fd);
	} else if (S_ISREG(s.st_mode)) {
		/* the budget is decided on lstat's apparent size, before a byte
		 * is read; once it is reached no later file is read either */
		uint64_t size = s.st_size > 0 ? (uint64_t)s.st_size : 0;
		struct al_overlay_report *rp = o->rep;
		bool newest =
			!rp->newest || s.st_mtim.tv_sec > rp->newest_sec ||
			(s.st_mtim.tv_sec == rp->newest_sec && s.st_mtim.tv_nsec > rp->newest_nsec);
		if (newest) {
			char *n = strdup(path);
			if (!n)
				return al_fail(err, AL_ENOMEM, ENOMEM, "overlay");
			free(rp->newest);
			rp->newest = n;
			rp->newest_sec = s.st_mtim.tv_sec;
			rp->newest_nsec = s.st_mtim.tv_nsec;
			rp->newest_kept = false; /* until it is */
		}
		if (o->max_bytes && (rp->limit_hit || size > o->max_bytes - rp->bytes_taken)) {
			rp->limit_hit = true;
			if (++rp->dropped <= AL_OVERLAY_DROPPED_NAMED) {
				char **v = realloc(rp->dropped_paths,
						   (rp->ndropped_paths + 1) * sizeof(char *));
				if (v)
					rp->dropped_paths = v;
				if (!v || !(v[rp->ndropped_paths] = strdup(path)))
					return al_fail(err, AL_ENOMEM, ENOMEM, "overlay");
				rp->ndropped_paths++;
				if (note(o, "%s: not kept: over the disk limit (%llu bytes)", q,
					 (unsigned long long)size) < 0)
					return al_fail(err, AL_ENOMEM, ENOMEM, "overlay");
			}
			return 0;
		}
		rp->newest_kept |= newest;
		unsigned mode = s.st_mode & 07777;
		if (mode & 06000) {
			mode &= ~06000u;
			if (note(o, "%s: setuid/setgid bits removed", q) < 0)
				return al_fail(err, AL_ENOMEM, ENOMEM, "overlay");
		}
		if (s.st_nlink > 1 && note(o, "%s: hardlink kept as an independent file", q) < 0)
			return al_fail(err, AL_ENOMEM, ENOMEM, "overlay");
		int fd = openat(dfd, name,
				O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		struct stat s2;
		if (fd < 0 || fstat(fd, &s2) < 0 || s2.st_ino != s.st_ino || !S_ISREG(s2.st_mode)) {
			if (fd >= 0)
				close(fd);
			return al_fail(err, AL_EIO, errno, "overlay: %s changed while being read",
				       q);
		}
		if (s2.st_size != s.st_size) {
			close(fd);
			return al_fail(err, AL_EIO, 0, "overlay: %s changed while being read", q);
		}
		o->rep->bytes_taken += size;
		struct al_entry f = { .type = AL_T_FILE,
				      .mode = mode,
				      .size = (uint64_t)s2.st_size };
		r = al_cas_put_fd(o->cas, fd, f.size, &f.digest, err);
		close(fd);
		if (r == 0) {
			if (in_base && base.type == AL_T_FILE && base.mode == mode &&
			    al_oid_eq(&base.digest, &f.digest))
				o->rep->unchanged_copyups++;
			else
				r = add_edit(o, path, AL_EDIT_SET, &f, err);
		}
	} else if (S_ISLNK(s.st_mode)) {
		char t[AL_SYMLINK_MAX + 2];
		ssize_t n = readlinkat(dfd, name, t, sizeof(t));
		bool ok = n > 0 && n <= AL_SYMLINK_MAX && al_utf8_valid((uint8_t *)t, (size_t)n);
		for (ssize_t i = 0; ok && i < n; i++)
			ok = (uint8_t)t[i] >= 0x20 && t[i] != 0x7f;
		if (!ok)
			return note(o, "%s: symlink target empty, too long or not text, not kept",
				    q) < 0
				       ? AL_ENOMEM
				       : 0;
		struct al_entry l = { .type = AL_T_SYMLINK, .mode = 0777, .size = (uint64_t)n };
		if ((r = al_cas_put(o->cas, t, (size_t)n, &l.digest, err)) == 0 &&
		    !(in_base && base.type == AL_T_SYMLINK && al_oid_eq(&base.digest, &l.digest)))
			r = add_edit(o, path, AL_EDIT_SET, &l, err);
	} else {
		const char *kind = S_ISFIFO(s.st_mode)   ? "FIFO"
				   : S_ISSOCK(s.st_mode) ? "socket"
							 : "device file";
		if (note(o, "%s: %s not kept", q, kind) < 0)
			return al_fail(err, AL_ENOMEM, ENOMEM, "overlay");
	}
	return r;
}

static int walk(struct ov *o, int dfd, char *path, size_t plen, bool parent_replaced,
		unsigned depth, struct al_error *err)
{
	DIR *d = al_opendir_fd(dfd);
	if (!d)
		return al_fail(err, AL_EIO, errno, "overlay: read directory");
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		r = entry(o, dfd, de->d_name, path, plen, parent_replaced, depth, err);
		path[plen] = 0;
	}
	closedir(d);
	return r;
}

int al_overlay_apply(struct al_store *st, const struct al_oid *base, const char *upper,
		     struct al_oid *out, struct al_overlay_report *rep, struct al_error *err)
{
	return al_overlay_apply_within(st, base, upper, 0, NULL, NULL, out, rep, err);
}

int al_overlay_apply_within(struct al_store *st, const struct al_oid *base, const char *upper,
			    uint64_t max_bytes, void (*unplain)(void *ctx), void *ctx,
			    struct al_oid *out, struct al_overlay_report *rep, struct al_error *err)
{
	memset(rep, 0, sizeof(*rep));
	struct ov o = { .cas = al_store_cas(st),
			.base = base,
			.rep = rep,
			.max_bytes = max_bytes,
			.unplain = unplain,
			.ctx = ctx };
	int r = al_manifest_stat(o.cas, base, NULL, NULL, err);
	if (r < 0)
		return r;
	int fd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return al_fail(err, errno == ENOENT ? AL_ENOTFOUND : AL_EIO, errno,
			       "overlay: open %s", upper);
	char *path = calloc(1, AL_PATH_MAX + 300);
	uint8_t *enc = NULL;
	size_t len = 0;
	if (!path)
		r = al_fail(err, AL_ENOMEM, ENOMEM, "overlay");
	if (r == 0 && (r = al_cas_begin(o.cas, err)) == 0) {
		if ((r = al_node_encode(NULL, 0, &enc, &len, err)) == 0 &&
		    (r = al_cas_put(o.cas, enc, len, &o.empty, err)) == 0 &&
		    (r = walk(&o, fd, path, 0, false, 0, err)) == 0 &&
		    (rep->dropped <= AL_OVERLAY_DROPPED_NAMED ||
		     (r = note(&o, "… and %llu more files not kept: over the disk limit",
			       (unsigned long long)(rep->dropped - AL_OVERLAY_DROPPED_NAMED)) < 0
				  ? al_fail(err, AL_ENOMEM, ENOMEM, "overlay")
				  : 0) == 0))
			r = al_manifest_edit(o.cas, base, o.ed, o.n, out, err);
		r = r < 0 ? (al_cas_abort(o.cas), r) : al_cas_commit(o.cas, err);
	}
	free(enc);
	close(fd);
	free(path);
	for (size_t i = 0; i < o.n; i++)
		free(o.paths[i]);
	free(o.paths);
	free(o.ed);
	if (r < 0)
		al_overlay_report_release(rep);
	return r;
}
