/* manifest: snapshots as Merkle trees of directory nodes (manifest.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "pool.h"
#include "sqlite_util.h"
#include "store_private.h"
#include "util.h"

static const uint8_t node_magic[8] = { 'A', 'L', 'T', 'R', 'E', 'E', 0x00, 0x01 };
#define ENTRY_FIXED (1 + 2 + 8 + 32 + 2)
#define NODE_MAX_BYTES (8 + 4 + (size_t)AL_NODE_MAX_ENTRIES * (ENTRY_FIXED + 255))

const char *al_entry_type_name(int type)
{
	switch (type) {
	case AL_T_DIR: return "dir";
	case AL_T_FILE: return "file";
	case AL_T_SYMLINK: return "symlink";
	}
	return "?";
}

static int name_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	if (c)
		return c;
	return an < bn ? -1 : an > bn;
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)(v >> 32)); put32(p + 4, (uint32_t)v); }

static int check_entry(const struct al_entry *e, const struct al_entry *prev, struct al_error *err)
{
	const char *why;
	if (e->type != AL_T_DIR && e->type != AL_T_FILE && e->type != AL_T_SYMLINK)
		return al_fail(err, AL_EINVAL, 0, "node: unknown entry type 0x%02x", e->type & 0xff);
	if (e->mode & ~07777u)
		return al_fail(err, AL_EINVAL, 0, "node: mode %o has bits beyond 07777", e->mode);
	if (e->type == AL_T_SYMLINK && (e->mode != 0777 || e->size == 0 || e->size > AL_SYMLINK_MAX))
		return al_fail(err, AL_EINVAL, 0, "node: bad symlink entry");
	if (!al_name_valid(e->name, e->namelen, &why))
		return al_fail(err, AL_EINVAL, 0, "node: %s", why);
	if (prev && name_cmp(prev->name, prev->namelen, e->name, e->namelen) >= 0)
		return al_fail(err, AL_EINVAL, 0, "node: entries not strictly sorted");
	return 0;
}

int al_node_decode(const uint8_t *p, size_t n, struct al_node **out, struct al_error *err)
{
	if (n < 12 || memcmp(p, node_magic, 8) != 0)
		return al_fail(err, AL_EINVAL, 0, "node: bad header");
	uint32_t count = get32(p + 8);
	if (count > AL_NODE_MAX_ENTRIES || (size_t)count * ENTRY_FIXED > n - 12)
		return al_fail(err, AL_EINVAL, 0, "node: bad entry count");
	struct al_node *node = calloc(1, sizeof(*node));
	if (!node)
		return al_fail(err, AL_ENOMEM, ENOMEM, "node");
	node->buf = malloc(n);
	node->entries = calloc(count ? count : 1, sizeof(struct al_entry));
	if (!node->buf || !node->entries) {
		al_node_free(node);
		return al_fail(err, AL_ENOMEM, ENOMEM, "node");
	}
	memcpy(node->buf, p, n);
	size_t off = 12;
	int r = 0;
	for (uint32_t i = 0; i < count; i++) {
		if (n - off < ENTRY_FIXED) {
			r = al_fail(err, AL_EINVAL, 0, "node: truncated entry");
			break;
		}
		const uint8_t *q = node->buf + off;
		struct al_entry *e = &node->entries[i];
		e->type = q[0];
		e->mode = get16(q + 1);
		e->size = get64(q + 3);
		memcpy(e->digest, q + 11, 32);
		e->namelen = get16(q + 43);
		off += ENTRY_FIXED;
		if (n - off < e->namelen) {
			r = al_fail(err, AL_EINVAL, 0, "node: truncated name");
			break;
		}
		e->name = (const char *)node->buf + off;
		off += e->namelen;
		if ((r = check_entry(e, i ? &node->entries[i - 1] : NULL, err)) < 0)
			break;
		node->n++;
	}
	if (r == 0 && off != n)
		r = al_fail(err, AL_EINVAL, 0, "node: trailing bytes");
	if (r < 0) {
		al_node_free(node);
		return r;
	}
	node->len = n;
	*out = node;
	return 0;
}

void al_node_free(struct al_node *node)
{
	if (!node)
		return;
	free(node->buf);
	free(node->entries);
	free(node);
}

int al_node_encode(const struct al_entry *e, size_t n, uint8_t **out, size_t *outlen,
		   struct al_error *err)
{
	if (n > AL_NODE_MAX_ENTRIES)
		return al_fail(err, AL_ELIMIT, 0, "directory has more than %u entries", AL_NODE_MAX_ENTRIES);
	size_t len = 12;
	for (size_t i = 0; i < n; i++) {
		int r = check_entry(&e[i], i ? &e[i - 1] : NULL, err);
		if (r < 0)
			return r;
		len += ENTRY_FIXED + e[i].namelen;
	}
	uint8_t *buf = malloc(len);
	if (!buf)
		return al_fail(err, AL_ENOMEM, ENOMEM, "node");
	memcpy(buf, node_magic, 8);
	put32(buf + 8, (uint32_t)n);
	size_t off = 12;
	for (size_t i = 0; i < n; i++) {
		uint8_t *q = buf + off;
		q[0] = (uint8_t)e[i].type;
		put16(q + 1, (uint16_t)e[i].mode);
		put64(q + 3, e[i].size);
		memcpy(q + 11, e[i].digest, 32);
		put16(q + 43, (uint16_t)e[i].namelen);
		memcpy(q + ENTRY_FIXED, e[i].name, e[i].namelen);
		off += ENTRY_FIXED + e[i].namelen;
	}
	*out = buf;
	*outlen = len;
	return 0;
}

int al_node_load(struct al_cas *cas, const uint8_t id[32], struct al_node **out, struct al_error *err)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len = 0;
	int r = al_cas_get(cas, id, &buf, &len, err);
	if (r < 0)
		return r;
	r = al_node_decode(buf, len, out, err);
	if (r == AL_EINVAL && err) {
		char s[AL_ID_STRLEN + 1], why[sizeof(err->msg)];
		al_id_fmt(id, s);
		snprintf(why, sizeof(why), "%s", err->msg);
		return al_fail(err, AL_EINVAL, 0, "%s is not a snapshot tree node (%s)", s, why);
	}
	return r;
}

/* ---- path buffer shared by import, export, walk and diff ------------------ */

struct pathbuf {
	char p[AL_PATH_MAX + 1];
	size_t len;
};

static int path_push(struct pathbuf *pb, const char *name, size_t n, size_t *saved, struct al_error *err)
{
	*saved = pb->len;
	size_t need = pb->len + (pb->len ? 1 : 0) + n;
	if (need > AL_PATH_MAX)
		return al_fail(err, AL_ELIMIT, 0, "path longer than %d bytes under %.*s", AL_PATH_MAX,
			       (int)(pb->len > 100 ? 100 : pb->len), pb->p);
	if (pb->len)
		pb->p[pb->len++] = '/';
	memcpy(pb->p + pb->len, name, n);
	pb->len += n;
	pb->p[pb->len] = 0;
	return 0;
}

static void path_pop(struct pathbuf *pb, size_t saved)
{
	pb->len = saved;
	pb->p[saved] = 0;
}

static const char *path_show(struct pathbuf *pb, char *out, size_t n)
{
	al_quote(pb->p, pb->len, out, n);
	return pb->len ? out : ".";
}

/* ---- import ------------------------------------------------------------- */

struct cached {
	const char *name; /* into the directory's cache blob */
	size_t namelen;
	int64_t dev, ino, size, mtime, ctime, mode;
	uint8_t digest[32];
	bool used;
};

struct imp {
	struct al_store *st;
	struct al_cas *cas;
	sqlite3 *sc;
	sqlite3_stmt *sc_sel, *sc_put, *sc_del, *seen_put;
	int64_t root_id;
	int64_t start_s;
	const struct al_import_opts *opts;
	struct al_import_result *res;
	struct pathbuf path;
	struct al_pool *pool;
	void **zctx;      /* per worker: compression context */
	uint8_t **rbuf;   /* per worker: read buffer for small files */
	int dfd;          /* directory of the current batch */
	struct ient *batch;
};

struct ient {
	struct al_entry e;
	bool from_cache;
	char *name;
	/* a small file read, hashed and compressed by the pool */
	bool pending;
	struct stat st;
	struct cached *c;
	struct al_cas_prep prep;
	struct al_error jerr;
	int jrc;
	bool cacheable;
};

static int64_t ts_ns(const struct timespec *t) { return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec; }

static int cmp_ient(const void *a, const void *b)
{
	const struct ient *x = a, *y = b;
	return name_cmp(x->e.name, x->e.namelen, y->e.name, y->e.namelen);
}

static void free_ients(struct ient *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		al_cas_prep_release(&v[i].prep);
	}
	free(v);
}

/* The stat cache keeps one row per directory: a packed array of its
 * regular files, sorted by name (one query per directory, no per-file row).
 * Entry: u16 namelen, name, then dev ino size mtime ctime mode (i64 each,
 * host order: the cache never leaves this machine), digest[32]. */
#define SC_MAGIC "ALSC1"
#define SC_FIXED (2 + 6 * 8 + 32)

static int load_cache(struct imp *im, struct al_buf *blob, struct cached **out, size_t *nout,
		      struct al_error *err)
{
	*out = NULL;
	*nout = 0;
	blob->len = 0;
	if (!im->sc)
		return 0;
	sqlite3_stmt *st = im->sc_sel;
	sqlite3_bind_int64(st, 1, im->root_id);
	sqlite3_bind_blob(st, 2, im->path.p, (int)im->path.len, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	int r = 0;
	if (rc == SQLITE_ROW) {
		if (al_buf_put(blob, sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0)) < 0)
			r = al_fail(err, AL_ENOMEM, ENOMEM, "import");
	} else if (rc != SQLITE_DONE) {
		r = al_sqlite_fail(im->sc, err, "stat cache");
	}
	sqlite3_reset(st);
	if (r < 0 || blob->len < 5 || memcmp(blob->p, SC_MAGIC, 5) != 0)
		return r; /* nothing cached (or an unknown format: ignored) */
	size_t cap = 0, n = 0, off = 5;
	struct cached *v = NULL;
	while (off + SC_FIXED <= blob->len) {
		uint16_t nl;
		memcpy(&nl, blob->p + off, 2);
		if (off + SC_FIXED + nl > blob->len)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			struct cached *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return al_fail(err, AL_ENOMEM, ENOMEM, "import");
			}
			v = nv;
		}
		struct cached *c = &v[n++];
		c->namelen = nl;
		c->name = (const char *)blob->p + off + 2;
		const uint8_t *q = blob->p + off + 2 + nl;
		int64_t f[6];
		memcpy(f, q, sizeof(f));
		c->dev = f[0], c->ino = f[1], c->size = f[2], c->mtime = f[3], c->ctime = f[4], c->mode = f[5];
		memcpy(c->digest, q + 48, 32);
		c->used = false;
		off += SC_FIXED + nl;
	}
	*out = v;
	*nout = n;
	return 0;
}

static int cache_append(struct al_buf *b, const struct ient *it)
{
	if (b->len == 0 && al_buf_put(b, SC_MAGIC, 5) < 0)
		return -1;
	uint16_t nl = (uint16_t)it->e.namelen;
	int64_t f[6] = { (int64_t)it->st.st_dev, (int64_t)it->st.st_ino, (int64_t)it->st.st_size,
			 ts_ns(&it->st.st_mtim), ts_ns(&it->st.st_ctim), (int64_t)it->st.st_mode };
	if (al_buf_put(b, &nl, 2) < 0 || al_buf_put(b, it->e.name, nl) < 0 || al_buf_put(b, f, sizeof(f)) < 0 ||
	    al_buf_put(b, it->e.digest, 32) < 0)
		return -1;
	return 0;
}

/* Write this directory's cache row if it differs from what was loaded. */
static int cache_store(struct imp *im, const struct al_buf *old, const struct al_buf *new,
		       struct al_error *err)
{
	if (!im->sc || (old->len == new->len && (!new->len || memcmp(old->p, new->p, new->len) == 0)))
		return 0;
	sqlite3_stmt *st = new->len ? im->sc_put : im->sc_del;
	sqlite3_bind_int64(st, 1, im->root_id);
	sqlite3_bind_blob(st, 2, im->path.p, (int)im->path.len, SQLITE_STATIC);
	if (new->len)
		sqlite3_bind_blob(st, 3, new->p, (int)new->len, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : al_sqlite_fail(im->sc, err, "stat cache");
}

static int read_names(struct imp *im, int dfd, struct ient **out, size_t *nout, struct al_error *err)
{
	char q[512];
	DIR *d = al_opendir_fd(dfd);
	if (!d)
		return al_fail(err, AL_EIO, errno, "read directory %s", path_show(&im->path, q, sizeof(q)));
	struct ient *v = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			struct ient *nv = cap > AL_NODE_MAX_ENTRIES + 32 ? NULL : realloc(v, cap * sizeof(*v));
			if (!nv) {
				r = cap > AL_NODE_MAX_ENTRIES + 32
					    ? al_fail(err, AL_ELIMIT, 0, "directory %s has more than %u entries",
						      path_show(&im->path, q, sizeof(q)), AL_NODE_MAX_ENTRIES)
					    : al_fail(err, AL_ENOMEM, ENOMEM, "import");
				break;
			}
			v = nv;
		}
		memset(&v[n], 0, sizeof(v[n]));
		v[n].name = strdup(de->d_name);
		if (!v[n].name) {
			r = al_fail(err, AL_ENOMEM, ENOMEM, "import");
			break;
		}
		v[n].e.name = v[n].name;
		v[n].e.namelen = strlen(de->d_name);
		n++;
		errno = 0;
	}
	if (r == 0 && errno)
		r = al_fail(err, AL_EIO, errno, "read directory %s", path_show(&im->path, q, sizeof(q)));
	closedir(d);
	if (r < 0) {
		free_ients(v, n);
		return r;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_ient);
	*out = v;
	*nout = n;
	return 0;
}

/* "dir/name" of the entry being imported, quoted for a message. */
static const char *child_show(struct imp *im, const struct ient *it, char *out, size_t n)
{
	char raw[AL_PATH_MAX + 300];
	int len = snprintf(raw, sizeof(raw), "%.*s%s%.*s", (int)im->path.len, im->path.p,
			   im->path.len ? "/" : "", (int)it->e.namelen, it->e.name);
	al_quote(raw, len < 0 ? 0 : (size_t)len >= sizeof(raw) ? sizeof(raw) - 1 : (size_t)len, out, n);
	return out;
}

static int import_file(struct imp *im, int dfd, struct ient *it, const struct stat *ls,
		       struct al_error *err)
{
	char q[512];
	_cleanup_close_ int fd = openat(dfd, it->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return al_fail(err, AL_EIO, errno, "open %s", child_show(im, it, q, sizeof(q)));
	struct stat s;
	if (fstat(fd, &s) < 0)
		return al_fail(err, AL_EIO, errno, "stat %s", child_show(im, it, q, sizeof(q)));
	if (!S_ISREG(s.st_mode) || s.st_ino != ls->st_ino || s.st_dev != ls->st_dev)
		return al_fail(err, AL_EINVAL, 0, "%s changed while being imported",
			       child_show(im, it, q, sizeof(q)));
	int r = al_cas_put_fd(im->cas, fd, (uint64_t)s.st_size, it->e.digest, err);
	if (r < 0)
		return al_error_prefix(err, "%s: ", child_show(im, it, q, sizeof(q)));
	it->e.size = (uint64_t)s.st_size;
	im->res->bytes_read += (uint64_t)s.st_size;
	return 0;
}

static int import_dir(struct imp *im, int dfd, unsigned depth, uint8_t out[32], uint64_t *bytes_out,
		      struct al_error *err);

static struct cached *cache_find(struct cached *cv, size_t ncv, size_t *ci, const struct ient *it)
{
	while (*ci < ncv && name_cmp(cv[*ci].name, cv[*ci].namelen, it->e.name, it->e.namelen) < 0)
		(*ci)++;
	if (*ci < ncv && name_cmp(cv[*ci].name, cv[*ci].namelen, it->e.name, it->e.namelen) == 0)
		return &cv[*ci];
	return NULL;
}

/* After a regular file's digest is known: stat cache, counts, progress. */
static int finish_regular(struct imp *im, struct ient *it, const struct stat *s, struct cached *c,
			  struct al_error *err)
{
	(void)c;
	(void)err;
	/* a file changed within the current second could change again without
	 * its mtime moving: never cache it (git's "racy" rule) */
	it->st = *s;
	it->cacheable = s->st_mtim.tv_sec < im->start_s && s->st_ctim.tv_sec < im->start_s;
	im->res->files++;
	im->res->bytes += it->e.size;
	if (im->opts && im->opts->progress)
		im->opts->progress(im->opts->progress_ctx, im->res->files, im->res->bytes);
	return 0;
}

static int import_regular(struct imp *im, int dfd, struct ient *it, const struct stat *s,
			  struct cached *c, struct al_error *err)
{
	it->e.type = AL_T_FILE;
	it->e.size = (uint64_t)s->st_size;
	it->c = c;
	if (c)
		c->used = true;
	bool hit = c && c->dev == (int64_t)s->st_dev && c->ino == (int64_t)s->st_ino &&
		   c->size == (int64_t)s->st_size && c->mtime == ts_ns(&s->st_mtim) &&
		   c->ctime == ts_ns(&s->st_ctim) && c->mode == (int64_t)s->st_mode;
	if (hit) {
		memcpy(it->e.digest, c->digest, 32);
		it->from_cache = true;
		im->res->cache_hits++;
		return finish_regular(im, it, s, c, err);
	}
	if ((uint64_t)s->st_size < AL_CAS_LOOSE_MIN) {
		it->pending = true; /* read by the pool, stored in pass two */
		it->st = *s;
		return 0;
	}
	int r = import_file(im, dfd, it, s, err);
	return r < 0 ? r : finish_regular(im, it, s, c, err);
}

/* Pool job: read, hash and compress one small file. No store access. */
static void read_small(void *ctx, size_t i, unsigned w)
{
	struct imp *im = ctx;
	struct ient *it = &im->batch[i];
	char q[512];
	it->jrc = 0;
	int fd = openat(im->dfd, it->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		it->jrc = al_fail(&it->jerr, AL_EIO, errno, "open %s", child_show(im, it, q, sizeof(q)));
		return;
	}
	struct stat s;
	ssize_t n = -1;
	if (fstat(fd, &s) < 0) {
		it->jrc = al_fail(&it->jerr, AL_EIO, errno, "stat %s", child_show(im, it, q, sizeof(q)));
	} else if (!S_ISREG(s.st_mode) || s.st_ino != it->st.st_ino || s.st_dev != it->st.st_dev) {
		it->jrc = al_fail(&it->jerr, AL_EINVAL, 0, "%s changed while being imported",
				  child_show(im, it, q, sizeof(q)));
	} else if ((n = al_read_full(fd, im->rbuf[w], (size_t)it->st.st_size + 1)) < 0) {
		it->jrc = al_fail(&it->jerr, AL_EIO, errno, "read %s", child_show(im, it, q, sizeof(q)));
	} else if (n != it->st.st_size) {
		it->jrc = al_fail(&it->jerr, AL_EINVAL, 0, "%s changed while being imported",
				  child_show(im, it, q, sizeof(q)));
	}
	close(fd);
	if (it->jrc == 0)
		it->jrc = al_cas_prepare(&im->zctx[w], im->rbuf[w], (size_t)n, &it->prep, &it->jerr);
}

/* Pass two for a file the pool read: store it. */
static int store_pending(struct imp *im, struct ient *it, struct al_error *err)
{
	if (it->jrc < 0) {
		if (err)
			*err = it->jerr;
		return it->jrc;
	}
	int r = al_cas_put_prepared(im->cas, &it->prep, err);
	if (r < 0)
		return r;
	memcpy(it->e.digest, it->prep.digest, 32);
	im->res->bytes_read += it->e.size;
	al_cas_prep_release(&it->prep);
	it->pending = false;
	return finish_regular(im, it, &it->st, it->c, err);
}

static int import_symlink(struct imp *im, int dfd, struct ient *it, struct al_error *err)
{
	char q[512], target[AL_SYMLINK_MAX + 2];
	ssize_t n = readlinkat(dfd, it->name, target, sizeof(target));
	if (n < 0)
		return al_fail(err, AL_EIO, errno, "readlink %s", child_show(im, it, q, sizeof(q)));
	if (n == 0 || n > AL_SYMLINK_MAX)
		return al_fail(err, AL_EINVAL, 0, "cannot import %s: symlink target is empty or too long",
			       child_show(im, it, q, sizeof(q)));
	bool ok = al_utf8_valid((const uint8_t *)target, (size_t)n);
	for (ssize_t i = 0; ok && i < n; i++)
		ok = (uint8_t)target[i] >= 0x20 && target[i] != 0x7f;
	if (!ok)
		return al_fail(err, AL_EINVAL, 0,
			       "cannot import %s: symlink target is not UTF-8 text without control characters",
			       child_show(im, it, q, sizeof(q)));
	it->e.type = AL_T_SYMLINK;
	it->e.mode = 0777;
	it->e.size = (uint64_t)n;
	im->res->symlinks++;
	return al_cas_put(im->cas, target, (size_t)n, it->e.digest, err);
}

static int import_subdir(struct imp *im, int dfd, unsigned depth, struct ient *it, struct al_error *err)
{
	char q[512];
	if (depth + 1 > AL_DEPTH_MAX)
		return al_fail(err, AL_ELIMIT, 0, "cannot import: tree deeper than %d levels at %s",
			       AL_DEPTH_MAX, child_show(im, it, q, sizeof(q)));
	_cleanup_close_ int sub = openat(dfd, it->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return al_fail(err, AL_EIO, errno, "open %s", child_show(im, it, q, sizeof(q)));
	it->e.type = AL_T_DIR;
	im->res->dirs++;
	size_t saved;
	int r = path_push(&im->path, it->e.name, it->e.namelen, &saved, err);
	if (r < 0)
		return r;
	r = import_dir(im, sub, depth + 1, it->e.digest, &it->e.size, err);
	path_pop(&im->path, saved);
	return r;
}

/* Pool job: lstat one entry of the directory (like git's preloaded index,
 * the stat calls of a large tree go faster on every core). */
static void stat_one(void *ctx, size_t i, unsigned w)
{
	(void)w;
	struct imp *im = ctx;
	struct ient *it = &im->batch[i];
	it->jrc = fstatat(im->dfd, it->name, &it->st, AT_SYMLINK_NOFOLLOW) < 0 ? errno : 0;
}

static int import_entry(struct imp *im, int dfd, struct ient *it, struct cached *c, struct al_error *err)
{
	char q[512];
	const char *why;
	if (!al_name_valid(it->e.name, it->e.namelen, &why))
		return al_fail(err, AL_EINVAL, 0, "cannot import %s: %s", child_show(im, it, q, sizeof(q)), why);
	if (it->jrc)
		return al_fail(err, AL_EIO, it->jrc, "stat %s", child_show(im, it, q, sizeof(q)));
	struct stat s = it->st;
	it->e.mode = s.st_mode & 07777;
	if (S_ISREG(s.st_mode))
		return import_regular(im, dfd, it, &s, c, err);
	if (S_ISLNK(s.st_mode))
		return import_symlink(im, dfd, it, err);
	if (S_ISDIR(s.st_mode)) {
		it->e.type = AL_T_DIR; /* descended into in pass two */
		return 0;
	}
	if (im->opts && im->opts->skip_special) {
		im->res->skipped++;
		it->e.type = 0; /* dropped from the node */
		return 0;
	}
	const char *kind = S_ISCHR(s.st_mode) || S_ISBLK(s.st_mode) ? "a device file"
			   : S_ISFIFO(s.st_mode)			   ? "a FIFO"
			   : S_ISSOCK(s.st_mode)			   ? "a socket"
								   : "of an unknown type";
	return al_fail(err, AL_EINVAL, 0,
		       "cannot import %s: it is %s (a snapshot holds files, symlinks and directories)",
		       child_show(im, it, q, sizeof(q)), kind);
}

/* The node is new: every file taken from the stat cache must really be in
 * the store (it could have been lost with a deleted store); re-read any that
 * is not. */
static int ensure_cached_blobs(struct imp *im, int dfd, struct ient *v, size_t n, struct al_error *err)
{
	for (size_t i = 0; i < n; i++) {
		if (!v[i].from_cache)
			continue;
		int has = al_cas_has(im->cas, v[i].e.digest, err);
		if (has < 0)
			return has;
		if (has)
			continue;
		struct stat s;
		if (fstatat(dfd, v[i].name, &s, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(s.st_mode))
			return al_fail(err, AL_EINVAL, errno, "%s changed while being imported", v[i].name);
		uint8_t d[32];
		memcpy(d, v[i].e.digest, 32);
		int r = import_file(im, dfd, &v[i], &s, err);
		if (r < 0)
			return r;
		if (memcmp(d, v[i].e.digest, 32) != 0)
			return al_fail(err, AL_EINVAL, 0, "%s changed while being imported", v[i].name);
	}
	return 0;
}

static int import_dir(struct imp *im, int dfd, unsigned depth, uint8_t out[32], uint64_t *bytes_out,
		      struct al_error *err)
{
	struct ient *v = NULL;
	size_t n = 0, ncv = 0, ci = 0;
	struct cached *cv = NULL;
	struct al_buf oldc = { 0 }, newc = { 0 };
	_cleanup_free_ uint8_t *enc = NULL;
	_cleanup_free_ struct al_entry *ents = NULL;
	size_t enclen = 0;
	uint64_t total = 0;
	int r = read_names(im, dfd, &v, &n, err);
	if (r < 0)
		return r;
	if ((r = load_cache(im, &oldc, &cv, &ncv, err)) < 0)
		goto out;
	if (im->seen_put) {
		sqlite3_bind_blob(im->seen_put, 1, im->path.p, (int)im->path.len, SQLITE_TRANSIENT);
		int rc = sqlite3_step(im->seen_put);
		sqlite3_reset(im->seen_put);
		if (rc != SQLITE_DONE) {
			r = al_sqlite_fail(im->sc, err, "stat cache");
			goto out;
		}
	}
	/* pass one: stat (on the pool) and classify; small files needing a
	 * read are batched */
	im->dfd = dfd;
	im->batch = v;
	if (n >= 16)
		al_pool_run(im->pool, n, stat_one, im);
	else
		for (size_t i = 0; i < n; i++)
			stat_one(im, i, 0);
	size_t npending = 0;
	for (size_t i = 0; i < n; i++) {
		struct cached *c = cache_find(cv, ncv, &ci, &v[i]);
		if ((r = import_entry(im, dfd, &v[i], c, err)) < 0)
			goto out;
		npending += v[i].pending;
	}
	if (npending) {
		/* pending entries first, in order, so the pool sees a dense array */
		struct ient *batch = malloc(npending * sizeof(*batch));
		size_t *where = malloc(npending * sizeof(*where));
		if (!batch || !where) {
			free(batch);
			free(where);
			r = al_fail(err, AL_ENOMEM, ENOMEM, "import");
			goto out;
		}
		for (size_t i = 0, k = 0; i < n; i++)
			if (v[i].pending) {
				where[k] = i;
				batch[k++] = v[i];
			}
		im->dfd = dfd;
		im->batch = batch;
		al_pool_run(im->pool, npending, read_small, im);
		for (size_t k = 0; k < npending; k++)
			v[where[k]] = batch[k];
		free(batch);
		free(where);
	}
	/* pass two, in name order: store what the pool read, descend */
	for (size_t i = 0; i < n; i++) {
		if (v[i].pending && (r = store_pending(im, &v[i], err)) < 0)
			goto out;
		if (v[i].e.type == AL_T_DIR && (r = import_subdir(im, dfd, depth, &v[i], err)) < 0)
			goto out;
		if (v[i].e.type != AL_T_SYMLINK && __builtin_add_overflow(total, v[i].e.size, &total)) {
			r = al_fail(err, AL_ELIMIT, 0, "size overflow");
			goto out;
		}
	}
	for (size_t i = 0; im->sc && i < n; i++)
		if (v[i].e.type == AL_T_FILE && v[i].cacheable && cache_append(&newc, &v[i]) < 0) {
			r = al_fail(err, AL_ENOMEM, ENOMEM, "import");
			goto out;
		}
	if ((r = cache_store(im, &oldc, &newc, err)) < 0)
		goto out;
	ents = malloc((n ? n : 1) * sizeof(*ents));
	if (!ents) {
		r = al_fail(err, AL_ENOMEM, ENOMEM, "import");
		goto out;
	}
	size_t kept = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].e.type)
			ents[kept++] = v[i].e;
	if ((r = al_node_encode(ents, kept, &enc, &enclen, err)) < 0)
		goto out;
	al_sha256(enc, enclen, out);
	int has = al_cas_has(im->cas, out, err);
	if (has < 0) {
		r = has;
		goto out;
	}
	if (!has) {
		if ((r = ensure_cached_blobs(im, dfd, v, n, err)) < 0)
			goto out;
		uint8_t d[32];
		if ((r = al_cas_put(im->cas, enc, enclen, d, err)) < 0)
			goto out;
	}
	*bytes_out = total;
out:
	free(cv);
	al_buf_release(&oldc);
	al_buf_release(&newc);
	free_ients(v, n);
	return r;
}

static int imp_prepare(struct imp *im, const char *root, struct al_error *err)
{
	int r = al_store__statcache(im->st, &im->sc, err);
	if (r < 0)
		return r;
	if ((r = al_sqlite_exec(im->sc,
				"BEGIN IMMEDIATE;"
				"CREATE TEMP TABLE IF NOT EXISTS seen(dir BLOB PRIMARY KEY) WITHOUT ROWID;"
				"DELETE FROM temp.seen;", err)) < 0)
		return r;
	_cleanup_sqlite_stmt_ sqlite3_stmt *st = NULL;
	if ((r = al_sqlite_prepare(im->sc, "INSERT OR IGNORE INTO roots(path) VALUES (?)", &st, err)) < 0)
		return r;
	sqlite3_bind_blob(st, 1, root, (int)strlen(root), SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		return al_sqlite_fail(im->sc, err, "stat cache");
	sqlite3_finalize(st);
	st = NULL;
	if ((r = al_sqlite_prepare(im->sc, "SELECT id FROM roots WHERE path = ?", &st, err)) < 0)
		return r;
	sqlite3_bind_blob(st, 1, root, (int)strlen(root), SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		return al_sqlite_fail(im->sc, err, "stat cache");
	im->root_id = sqlite3_column_int64(st, 0);
	if ((r = al_sqlite_prepare(im->sc,
				   "SELECT data FROM scdir WHERE root = ? AND dir = ?", &im->sc_sel, err)) < 0 ||
	    (r = al_sqlite_prepare(im->sc, "INSERT OR REPLACE INTO scdir(root, dir, data) VALUES (?,?,?)",
				   &im->sc_put, err)) < 0 ||
	    (r = al_sqlite_prepare(im->sc, "DELETE FROM scdir WHERE root = ? AND dir = ?",
				   &im->sc_del, err)) < 0 ||
	    (r = al_sqlite_prepare(im->sc, "INSERT OR IGNORE INTO temp.seen(dir) VALUES (?)",
				   &im->seen_put, err)) < 0)
		return r;
	return 0;
}

static void imp_release(struct imp *im)
{
	unsigned nw = im->pool ? al_pool_size(im->pool) : 0;
	al_pool_free(im->pool);
	im->pool = NULL;
	for (unsigned w = 0; w < nw; w++) {
		if (im->zctx)
			al_cas_prep_ctx_free(im->zctx[w]);
		if (im->rbuf)
			free(im->rbuf[w]);
	}
	free(im->zctx);
	free(im->rbuf);
	im->zctx = NULL;
	im->rbuf = NULL;
	sqlite3_finalize(im->sc_sel);
	sqlite3_finalize(im->sc_put);
	sqlite3_finalize(im->sc_del);
	sqlite3_finalize(im->seen_put);
	im->sc_sel = im->sc_put = im->sc_del = im->seen_put = NULL;
}

static int imp_finish_cache(struct imp *im)
{
	_cleanup_sqlite_stmt_ sqlite3_stmt *st = NULL;
	if (al_sqlite_prepare(im->sc,
			      "DELETE FROM scdir WHERE root = ? AND dir NOT IN (SELECT dir FROM temp.seen)",
			      &st, NULL) < 0)
		return -1;
	sqlite3_bind_int64(st, 1, im->root_id);
	if (sqlite3_step(st) != SQLITE_DONE)
		return -1;
	return al_sqlite_exec(im->sc, "COMMIT", NULL);
}

int al_manifest_import(struct al_store *st, const char *dir, const struct al_import_opts *opts,
		       struct al_import_result *res, struct al_error *err)
{
	struct al_import_result dummy;
	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	_cleanup_free_ char *root = realpath(dir, NULL);
	if (!root)
		return al_fail(err, errno == ENOENT ? AL_ENOTFOUND : AL_EIO, errno, "import %s", dir);
	_cleanup_close_ int dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return al_fail(err, errno == ENOTDIR ? AL_EINVAL : AL_EIO, errno, "import %s", dir);
	struct imp im = {
		.st = st,
		.cas = al_store_cas(st),
		.start_s = al_wall_s(),
		.opts = opts,
		.res = res,
	};
	int r = 0;
	bool cache = !(opts && opts->no_cache);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned extra = cores > 1 ? (unsigned)(cores > 8 ? 7 : cores - 1) : 0;
	if (al_pool_new(extra, &im.pool) < 0)
		return al_fail(err, AL_ENOMEM, ENOMEM, "import");
	unsigned nw = al_pool_size(im.pool);
	im.zctx = calloc(nw, sizeof(void *));
	im.rbuf = calloc(nw, sizeof(uint8_t *));
	for (unsigned w = 0; im.rbuf && w < nw; w++)
		if (!(im.rbuf[w] = malloc(AL_CAS_LOOSE_MIN + 1)))
			break;
	if (!im.zctx || !im.rbuf || !im.rbuf[nw - 1]) {
		r = al_fail(err, AL_ENOMEM, ENOMEM, "import");
		goto fail_cache;
	}
	if (cache && (r = imp_prepare(&im, root, err)) < 0)
		goto fail_cache;
	if ((r = al_cas_begin(im.cas, err)) < 0)
		goto fail_cache;
	uint64_t bytes = 0;
	if ((r = import_dir(&im, dfd, 0, res->id, &bytes, err)) < 0) {
		al_cas_abort(im.cas);
		goto fail_cache;
	}
	if ((r = al_cas_commit(im.cas, err)) < 0)
		goto fail_cache;
	/* the cache is advisory: failing to save it does not fail the import */
	if (im.sc && imp_finish_cache(&im) < 0)
		sqlite3_exec(im.sc, "ROLLBACK", NULL, NULL, NULL);
	imp_release(&im);
	struct al_snapshot_info info = {
		.created = al_wall_s(), .files = res->files, .bytes = res->bytes, .source = root,
	};
	memcpy(info.id, res->id, 32);
	return al_store_snapshot_add(st, &info, err);
fail_cache:
	if (im.sc)
		sqlite3_exec(im.sc, "ROLLBACK", NULL, NULL, NULL);
	imp_release(&im);
	return r;
}

/* ---- walk ------------------------------------------------------------------ */

struct walker {
	struct al_cas *cas;
	struct pathbuf path;
	al_walk_fn fn;
	void *ctx;
};

static int walk_node(struct walker *w, const uint8_t id[32], unsigned depth, struct al_error *err)
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
		if ((r = path_push(&w->path, e->name, e->namelen, &saved, err)) < 0)
			break;
		r = w->fn(w->ctx, w->path.p, e, err);
		if (r == 0 && e->type == AL_T_DIR)
			r = walk_node(w, e->digest, depth + 1, err);
		path_pop(&w->path, saved);
	}
	al_node_free(node);
	return r;
}

int al_manifest_walk(struct al_cas *cas, const uint8_t id[32], al_walk_fn fn, void *ctx,
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

int al_manifest_stat(struct al_cas *cas, const uint8_t id[32], uint64_t *bytes, size_t *entries,
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
	struct pathbuf path;
	al_diff_fn fn;
	void *ctx;
};

/* Emit op for every entry beneath directory id (all 'A' or all 'D'). */
static int diff_subtree(struct differ *d, const uint8_t id[32], char op, unsigned depth,
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
		if ((r = path_push(&d->path, e->name, e->namelen, &saved, err)) < 0)
			break;
		struct al_change c = { op, d->path.p, op == 'D' ? e : NULL, op == 'A' ? e : NULL };
		r = d->fn(d->ctx, &c, err);
		if (r == 0 && e->type == AL_T_DIR)
			r = diff_subtree(d, e->digest, op, depth + 1, err);
		path_pop(&d->path, saved);
	}
	al_node_free(node);
	return r;
}

static int diff_nodes(struct differ *d, const uint8_t a[32], const uint8_t b[32], unsigned depth,
		      struct al_error *err);

static int diff_pair(struct differ *d, const struct al_entry *x, const struct al_entry *y,
		     unsigned depth, struct al_error *err)
{
	int r = 0;
	if (!y) {
		struct al_change c = { 'D', d->path.p, x, NULL };
		if ((r = d->fn(d->ctx, &c, err)) == 0 && x->type == AL_T_DIR)
			r = diff_subtree(d, x->digest, 'D', depth + 1, err);
		return r;
	}
	if (!x) {
		struct al_change c = { 'A', d->path.p, NULL, y };
		if ((r = d->fn(d->ctx, &c, err)) == 0 && y->type == AL_T_DIR)
			r = diff_subtree(d, y->digest, 'A', depth + 1, err);
		return r;
	}
	bool same_digest = memcmp(x->digest, y->digest, 32) == 0;
	if (x->type == y->type) {
		bool changed = x->mode != y->mode || (x->type != AL_T_DIR && !same_digest);
		if (changed) {
			struct al_change c = { 'M', d->path.p, x, y };
			if ((r = d->fn(d->ctx, &c, err)) < 0)
				return r;
		}
		if (x->type == AL_T_DIR && !same_digest)
			r = diff_nodes(d, x->digest, y->digest, depth + 1, err);
		return r;
	}
	struct al_change c = { 'M', d->path.p, x, y };
	if ((r = d->fn(d->ctx, &c, err)) < 0)
		return r;
	if (x->type == AL_T_DIR && (r = diff_subtree(d, x->digest, 'D', depth + 1, err)) < 0)
		return r;
	if (y->type == AL_T_DIR)
		r = diff_subtree(d, y->digest, 'A', depth + 1, err);
	return r;
}

static int diff_nodes(struct differ *d, const uint8_t a[32], const uint8_t b[32], unsigned depth,
		      struct al_error *err)
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
		int c = !x ? 1 : !y ? -1 : name_cmp(x->name, x->namelen, y->name, y->namelen);
		if (c < 0)
			y = NULL, i++;
		else if (c > 0)
			x = NULL, j++;
		else
			i++, j++;
		const struct al_entry *named = x ? x : y;
		size_t saved;
		if ((r = path_push(&d->path, named->name, named->namelen, &saved, err)) < 0)
			break;
		r = diff_pair(d, x, y, depth, err);
		path_pop(&d->path, saved);
	}
	al_node_free(na);
	al_node_free(nb);
	return r;
}

int al_manifest_diff(struct al_cas *cas, const uint8_t a[32], const uint8_t b[32], al_diff_fn fn,
		     void *ctx, struct al_error *err)
{
	struct differ *d = calloc(1, sizeof(*d));
	if (!d)
		return al_fail(err, AL_ENOMEM, ENOMEM, "diff");
	d->cas = cas;
	d->fn = fn;
	d->ctx = ctx;
	int r;
	if (memcmp(a, b, 32) == 0) {
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

/* ---- export ---------------------------------------------------------------- */

struct exporter {
	struct al_cas *cas;
	const struct al_export_opts *opts;
	struct pathbuf path;
	uint64_t files, bytes;
};

static int fd_sink(void *ctx, const void *p, size_t n, struct al_error *err)
{
	int fd = *(int *)ctx;
	if (al_write_full(fd, p, n) < 0)
		return al_fail(err, errno == ENOSPC ? AL_ELIMIT : AL_EIO, errno, "write");
	return 0;
}

/* With --force, make room for name: remove a non-directory in the way.
 * Returns 1 if a directory is there (kept), 0 if the name is free. */
static int make_room(struct exporter *ex, int dfd, const char *name, bool want_dir, struct al_error *err)
{
	char q[512];
	struct stat s;
	if (fstatat(dfd, name, &s, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : al_fail(err, AL_EIO, errno, "stat %s", path_show(&ex->path, q, sizeof(q)));
	if (!ex->opts || !ex->opts->force)
		return al_fail(err, AL_EEXIST, 0, "%s already exists in the target",
			       path_show(&ex->path, q, sizeof(q)));
	if (S_ISDIR(s.st_mode)) {
		if (want_dir)
			return 1;
		return al_fail(err, AL_EEXIST, 0, "refusing to replace directory %s with a non-directory",
			       path_show(&ex->path, q, sizeof(q)));
	}
	if (unlinkat(dfd, name, 0) < 0)
		return al_fail(err, AL_EIO, errno, "remove %s", path_show(&ex->path, q, sizeof(q)));
	return 0;
}

static int export_dir(struct exporter *ex, const uint8_t id[32], int dfd, unsigned depth,
		      struct al_error *err);

static int export_entry(struct exporter *ex, int dfd, const struct al_entry *e, unsigned depth,
			struct al_error *err)
{
	char q[512], name[256];
	memcpy(name, e->name, e->namelen);
	name[e->namelen] = 0;
	int room = make_room(ex, dfd, name, e->type == AL_T_DIR, err);
	if (room < 0)
		return room;
	int r = 0;
	if (e->type == AL_T_FILE) {
		_cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return al_fail(err, AL_EIO, errno, "create %s", path_show(&ex->path, q, sizeof(q)));
		r = al_cas_stream(ex->cas, e->digest, fd_sink, &fd, err);
		if (r == 0 && ex->opts && ex->opts->chown && fchown(fd, ex->opts->uid, ex->opts->gid) < 0)
			r = al_fail(err, AL_EIO, errno, "chown %s", path_show(&ex->path, q, sizeof(q)));
		if (r == 0 && fchmod(fd, e->mode) < 0)
			r = al_fail(err, AL_EIO, errno, "chmod %s", path_show(&ex->path, q, sizeof(q)));
		if (r < 0) {
			unlinkat(dfd, name, 0);
			return al_error_prefix(err, "export %s: ", path_show(&ex->path, q, sizeof(q)));
		}
		ex->files++;
		ex->bytes += e->size;
		if (ex->opts && ex->opts->progress)
			ex->opts->progress(ex->opts->progress_ctx, ex->files, ex->bytes);
		return 0;
	}
	if (e->type == AL_T_SYMLINK) {
		_cleanup_free_ uint8_t *t = NULL;
		size_t tlen = 0;
		if ((r = al_cas_get(ex->cas, e->digest, &t, &tlen, err)) < 0)
			return al_error_prefix(err, "export %s: ", path_show(&ex->path, q, sizeof(q)));
		if (tlen != e->size || tlen == 0 || memchr(t, 0, tlen))
			return al_fail(err, AL_ECORRUPT, 0, "symlink %s has a bad target",
				       path_show(&ex->path, q, sizeof(q)));
		char target[AL_SYMLINK_MAX + 1];
		memcpy(target, t, tlen);
		target[tlen] = 0;
		/* the link is written, never followed: later entries are created
		 * with O_NOFOLLOW relative to directory fds */
		if (symlinkat(target, dfd, name) < 0)
			return al_fail(err, AL_EIO, errno, "symlink %s", path_show(&ex->path, q, sizeof(q)));
		if (ex->opts && ex->opts->chown &&
		    fchownat(dfd, name, ex->opts->uid, ex->opts->gid, AT_SYMLINK_NOFOLLOW) < 0)
			return al_fail(err, AL_EIO, errno, "chown %s", path_show(&ex->path, q, sizeof(q)));
		return 0;
	}
	if (!room && mkdirat(dfd, name, 0700) < 0)
		return al_fail(err, AL_EIO, errno, "mkdir %s", path_show(&ex->path, q, sizeof(q)));
	_cleanup_close_ int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return al_fail(err, AL_EIO, errno, "open %s", path_show(&ex->path, q, sizeof(q)));
	if (room && fchmod(sub, 0700) < 0)
		return al_fail(err, AL_EIO, errno, "chmod %s", path_show(&ex->path, q, sizeof(q)));
	if (ex->opts && ex->opts->chown && fchown(sub, ex->opts->uid, ex->opts->gid) < 0)
		return al_fail(err, AL_EIO, errno, "chown %s", path_show(&ex->path, q, sizeof(q)));
	if ((r = export_dir(ex, e->digest, sub, depth + 1, err)) < 0)
		return r;
	/* last, so a read-only directory could still be filled */
	if (fchmod(sub, e->mode) < 0)
		return al_fail(err, AL_EIO, errno, "chmod %s", path_show(&ex->path, q, sizeof(q)));
	return 0;
}

static int export_dir(struct exporter *ex, const uint8_t id[32], int dfd, unsigned depth,
		      struct al_error *err)
{
	if (depth > AL_DEPTH_MAX)
		return al_fail(err, AL_ELIMIT, 0, "snapshot deeper than %d levels", AL_DEPTH_MAX);
	struct al_node *node = NULL;
	int r = al_node_load(ex->cas, id, &node, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < node->n && r == 0; i++) {
		size_t saved;
		if ((r = path_push(&ex->path, node->entries[i].name, node->entries[i].namelen, &saved, err)) < 0)
			break;
		r = export_entry(ex, dfd, &node->entries[i], depth, err);
		path_pop(&ex->path, saved);
	}
	al_node_free(node);
	return r;
}

static int dir_is_empty(int dfd)
{
	DIR *d = al_opendir_fd(dfd);
	if (!d)
		return -1;
	struct dirent *de;
	int empty = 1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			empty = 0;
			break;
		}
	closedir(d);
	return empty;
}

int al_manifest_export(struct al_cas *cas, const uint8_t id[32], const char *dir,
		       const struct al_export_opts *opts, struct al_error *err)
{
	/* check the snapshot before touching the target */
	struct al_node *root = NULL;
	int r = al_node_load(cas, id, &root, err);
	if (r < 0)
		return r;
	al_node_free(root);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return al_fail(err, errno == ENOENT ? AL_ENOTFOUND : AL_EIO, errno, "create %s", dir);
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return al_fail(err, errno == ENOTDIR ? AL_EEXIST : AL_EIO, errno, "open %s", dir);
	int empty = dir_is_empty(dfd);
	if (empty < 0)
		return al_fail(err, AL_EIO, errno, "read %s", dir);
	if (!empty && !(opts && opts->force))
		return al_fail(err, AL_EEXIST, 0, "target %s is not empty (use --force to write into it)", dir);
	struct exporter *ex = calloc(1, sizeof(*ex));
	if (!ex)
		return al_fail(err, AL_ENOMEM, ENOMEM, "export");
	ex->cas = cas;
	ex->opts = opts;
	r = export_dir(ex, id, dfd, 0, err);
	free(ex);
	if (r == 0 && opts && opts->chown && fchown(dfd, opts->uid, opts->gid) < 0)
		r = al_fail(err, AL_EIO, errno, "chown %s", dir);
	return r;
}

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
		int c = name_cmp(node->entries[mid].name, node->entries[mid].namelen, name, len);
		if (c == 0)
			return &node->entries[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int al_manifest_lookup(struct al_cas *cas, const uint8_t root[32], const char *path, struct al_entry *out,
		       struct al_error *err)
{
	const char *why;
	if (!al_path_valid(path, &why))
		return al_fail(err, AL_EINVAL, 0, "bad path: %s", why);
	uint8_t cur[32];
	memcpy(cur, root, 32);
	const char *p = path;
	for (unsigned depth = 0;; depth++) {
		struct al_node *node = NULL;
		int r = al_node_load(cas, cur, &node, err);
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
		memcpy(cur, e->digest, 32);
		al_node_free(node);
		p = slash + 1;
	}
}

static bool zero_digest(const uint8_t d[32])
{
	for (int i = 0; i < 32; i++)
		if (d[i])
			return false;
	return true;
}

static int cmp_edit_ptr(const void *a, const void *b)
{
	return al_path_cmp((*(struct al_edit *const *)a)->path, (*(struct al_edit *const *)b)->path);
}

static int edit_node(struct al_cas *cas, const uint8_t *id, struct al_edit **e, size_t n, size_t off,
		     unsigned depth, uint8_t out[32], uint64_t *size, struct al_error *err);

/* One group of edits for one child name: compute the child's new entry. */
static int edit_child(struct al_cas *cas, const struct al_entry *existing, struct al_edit **g, size_t gn,
		      size_t off, size_t complen, unsigned depth, struct al_entry *res, bool *present,
		      struct al_error *err)
{
	struct al_edit *self = g[0]->path[off + complen] == 0 ? g[0] : NULL;
	struct al_edit **sub = self ? g + 1 : g;
	size_t subn = self ? gn - 1 : gn;
	size_t suboff = off + complen + 1;
	bool replaced = self && (self->op == AL_EDIT_DELETE || self->entry.type != AL_T_DIR);
	if (replaced) {
		for (size_t i = 0; i < subn; i++)
			if (sub[i]->op != AL_EDIT_DELETE)
				return al_fail(err, AL_EINVAL, 0, "cannot set %s: %.*s is %s", sub[i]->path,
					       (int)(off + complen), self->path,
					       self->op == AL_EDIT_DELETE ? "deleted" : "not a directory");
		if (self->op == AL_EDIT_DELETE) {
			if (!existing)
				return al_fail(err, AL_ENOTFOUND, 0, "cannot delete %s: no such path", self->path);
			*present = false;
			return 0;
		}
		*res = self->entry;
		*present = true;
		return 0;
	}
	const uint8_t *base = NULL;
	unsigned mode;
	if (self) {
		mode = self->entry.mode;
		if (!zero_digest(self->entry.digest))
			base = self->entry.digest; /* graft */
		else if (existing && existing->type == AL_T_DIR)
			base = existing->digest;
	} else {
		if (!existing || existing->type != AL_T_DIR)
			return al_fail(err, AL_ENOTFOUND, 0, "cannot edit %s: %.*s is not a directory",
				       sub[0]->path, (int)(off + complen), sub[0]->path);
		mode = existing->mode;
		base = existing->digest;
	}
	memset(res, 0, sizeof(*res));
	res->type = AL_T_DIR;
	res->mode = mode;
	if (subn == 0 && base && self && !zero_digest(self->entry.digest)) {
		*res = self->entry; /* a pure graft: size comes with it */
		*present = true;
		return 0;
	}
	int r = edit_node(cas, base, sub, subn, suboff, depth + 1, res->digest, &res->size, err);
	*present = r == 0;
	return r;
}

static int edit_node(struct al_cas *cas, const uint8_t *id, struct al_edit **e, size_t n, size_t off,
		     unsigned depth, uint8_t out[32], uint64_t *size, struct al_error *err)
{
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
		       (!comp || name_cmp(node->entries[ni].name, node->entries[ni].namelen, comp, complen) < 0))
			res[nres++] = node->entries[ni++];
		if (!comp)
			break;
		size_t gn = 1;
		while (i + gn < n && strncmp(e[i + gn]->path + off, comp, complen) == 0 &&
		       (e[i + gn]->path[off + complen] == '/' || e[i + gn]->path[off + complen] == 0))
			gn++;
		const struct al_entry *existing = NULL;
		if (node && ni < node->n &&
		    name_cmp(node->entries[ni].name, node->entries[ni].namelen, comp, complen) == 0)
			existing = &node->entries[ni++];
		struct al_entry child;
		bool present = false;
		if (gn > 1 && e[i]->path[off + complen] == 0 && e[i + 1]->path[off + complen] == 0) {
			r = al_fail(err, AL_EINVAL, 0, "path %s edited twice", e[i]->path);
			goto out;
		}
		if ((r = edit_child(cas, existing, e + i, gn, off, complen, depth, &child, &present, err)) < 0)
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

int al_manifest_edit(struct al_cas *cas, const uint8_t base[32], struct al_edit *edits, size_t n,
		     uint8_t out[32], struct al_error *err)
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
		r = edit_node(cas, base, sorted, n, 0, 0, out, &size, err);
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

int al_manifest_changes(struct al_cas *cas, const uint8_t a[32], const uint8_t b[32], struct al_changes *out,
			struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	int r = al_manifest_diff(cas, a, b, collect_change, out, err);
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
			memset(e[i].entry.digest, 0, 32);
			e[i].entry.size = 0;
		}
	}
	*out = e;
	return 0;
}
