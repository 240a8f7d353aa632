/* import: a directory into a snapshot (al_manifest_import), per directory
 * on the worker pool, with the tenant's stat cache (docs/architecture.md,
 * "Import pipeline"). */
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
#include "cas_private.h"
#include "manifest_private.h"
#include "pool.h"
#include "db.h"
#include "store_private.h"
#include "util.h"

/* ---- import ------------------------------------------------------------- */

struct cached {
	const char *name; /* into the directory's cache blob */
	size_t namelen;
	int64_t dev, ino, size, mtime, ctime, mode;
	struct al_oid digest;
	bool used;
};

struct imp {
	struct al_store *st;
	struct al_cas *cas;
	struct al_db *sc;        /* the stat cache (the store's, node-local SQLite) */
	struct al_db_txn sc_txn; /* the import's write transaction of it */
	struct al_db_stmt *sc_sel, *sc_put, *sc_del, *seen_put;
	int64_t root_id;
	int64_t start_s;
	const struct al_import_opts *opts;
	struct al_import_result *res;
	struct al_manifest_path path;
	struct al_pool *pool;
	void **zctx;    /* per worker: compression context */
	uint8_t **rbuf; /* per worker: read buffer for small files */
	int dfd;        /* directory of the current batch */
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

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static int cmp_ient(const void *a, const void *b)
{
	const struct ient *x = a, *y = b;
	return al_manifest__name_cmp(x->e.name, x->e.namelen, y->e.name, y->e.namelen);
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
 * host order: the cache never leaves this machine), digest (AL_OID_LEN bytes). */
#define SC_MAGIC "ALSC1"
#define SC_FIXED (2 + 6 * 8 + AL_OID_LEN)

static int load_cache(struct imp *im, struct al_buf *blob, struct cached **out, size_t *nout,
		      struct al_error *err)
{
	*out = NULL;
	*nout = 0;
	blob->len = 0;
	if (!im->sc)
		return 0;
	struct al_db_stmt *st = im->sc_sel;
	al_db_reset(st);
	al_db_bind_int64(st, 1, im->root_id);
	al_db_bind_blob(st, 2, im->path.p, im->path.len);
	int rc = al_db_step(st, err);
	int r = 0;
	if (rc == AL_DB_ROW) {
		if (al_buf_put(blob, al_db_column_blob(st, 0), al_db_column_bytes(st, 0)) < 0)
			r = al_fail(err, AL_ENOMEM, ENOMEM, "import");
	} else if (rc < 0) {
		r = al_error_prefix(err, "stat cache: ");
	}
	al_db_reset(st);
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
		c->dev = f[0], c->ino = f[1], c->size = f[2], c->mtime = f[3], c->ctime = f[4],
		c->mode = f[5];
		memcpy(c->digest.b, q + 48, AL_OID_LEN);
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
	if (al_buf_put(b, &nl, 2) < 0 || al_buf_put(b, it->e.name, nl) < 0 ||
	    al_buf_put(b, f, sizeof(f)) < 0 || al_buf_put(b, it->e.digest.b, AL_OID_LEN) < 0)
		return -1;
	return 0;
}

/* Write this directory's cache row if it differs from what was loaded. */
static int cache_store(struct imp *im, const struct al_buf *old, const struct al_buf *new,
		       struct al_error *err)
{
	if (!im->sc ||
	    (old->len == new->len && (!new->len || memcmp(old->p, new->p, new->len) == 0)))
		return 0;
	struct al_db_stmt *st = new->len ? im->sc_put : im->sc_del;
	al_db_reset(st);
	al_db_bind_int64(st, 1, im->root_id);
	al_db_bind_blob(st, 2, im->path.p, im->path.len);
	if (new->len)
		al_db_bind_blob(st, 3, new->p, new->len);
	int rc = al_db_step(st, err);
	al_db_reset(st);
	return rc < 0 ? al_error_prefix(err, "stat cache: ") : 0;
}

static int read_names(struct imp *im, int dfd, struct ient **out, size_t *nout,
		      struct al_error *err)
{
	char q[512];
	DIR *d = al_opendir_fd(dfd);
	if (!d)
		return al_fail(err, AL_EIO, errno, "read directory %s",
			       al_manifest__path_show(&im->path, q, sizeof(q)));
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
			struct ient *nv = cap > AL_NODE_MAX_ENTRIES + 32
						  ? NULL
						  : realloc(v, cap * sizeof(*v));
			if (!nv) {
				r = cap > AL_NODE_MAX_ENTRIES + 32
					    ? al_fail(err, AL_ELIMIT, 0,
						      "directory %s has more than %u entries",
						      al_manifest__path_show(&im->path, q,
									     sizeof(q)),
						      AL_NODE_MAX_ENTRIES)
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
		r = al_fail(err, AL_EIO, errno, "read directory %s",
			    al_manifest__path_show(&im->path, q, sizeof(q)));
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
	al_quote(raw,
		 len < 0                      ? 0
		 : (size_t)len >= sizeof(raw) ? sizeof(raw) - 1
					      : (size_t)len,
		 out, n);
	return out;
}

static int import_file(struct imp *im, int dfd, struct ient *it, const struct stat *ls,
		       struct al_error *err)
{
	char q[512];
	_cleanup_close_ int fd =
		openat(dfd, it->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return al_fail(err, AL_EIO, errno, "open %s", child_show(im, it, q, sizeof(q)));
	struct stat s;
	if (fstat(fd, &s) < 0)
		return al_fail(err, AL_EIO, errno, "stat %s", child_show(im, it, q, sizeof(q)));
	if (!S_ISREG(s.st_mode) || s.st_ino != ls->st_ino || s.st_dev != ls->st_dev)
		return al_fail(err, AL_EINVAL, 0, "%s changed while being imported",
			       child_show(im, it, q, sizeof(q)));
	int r = al_cas_put_fd(im->cas, fd, (uint64_t)s.st_size, &it->e.digest, err);
	if (r < 0)
		return al_error_prefix(err, "%s: ", child_show(im, it, q, sizeof(q)));
	it->e.size = (uint64_t)s.st_size;
	im->res->bytes_read += (uint64_t)s.st_size;
	return 0;
}

static int import_dir(struct imp *im, int dfd, unsigned depth, struct al_oid *out,
		      uint64_t *bytes_out, struct al_error *err);

static struct cached *cache_find(struct cached *cv, size_t ncv, size_t *ci, const struct ient *it)
{
	while (*ci < ncv &&
	       al_manifest__name_cmp(cv[*ci].name, cv[*ci].namelen, it->e.name, it->e.namelen) < 0)
		(*ci)++;
	if (*ci < ncv &&
	    al_manifest__name_cmp(cv[*ci].name, cv[*ci].namelen, it->e.name, it->e.namelen) == 0)
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
		it->e.digest = c->digest;
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
		it->jrc = al_fail(&it->jerr, AL_EIO, errno, "open %s",
				  child_show(im, it, q, sizeof(q)));
		return;
	}
	struct stat s;
	ssize_t n = -1;
	if (fstat(fd, &s) < 0) {
		it->jrc = al_fail(&it->jerr, AL_EIO, errno, "stat %s",
				  child_show(im, it, q, sizeof(q)));
	} else if (!S_ISREG(s.st_mode) || s.st_ino != it->st.st_ino || s.st_dev != it->st.st_dev) {
		it->jrc = al_fail(&it->jerr, AL_EINVAL, 0, "%s changed while being imported",
				  child_show(im, it, q, sizeof(q)));
	} else if ((n = al_read_full(fd, im->rbuf[w], (size_t)it->st.st_size + 1)) < 0) {
		it->jrc = al_fail(&it->jerr, AL_EIO, errno, "read %s",
				  child_show(im, it, q, sizeof(q)));
	} else if (n != it->st.st_size) {
		it->jrc = al_fail(&it->jerr, AL_EINVAL, 0, "%s changed while being imported",
				  child_show(im, it, q, sizeof(q)));
	}
	close(fd);
	if (it->jrc == 0)
		it->jrc =
			al_cas_prepare(&im->zctx[w], im->rbuf[w], (size_t)n, &it->prep, &it->jerr);
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
	it->e.digest = it->prep.digest;
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
		return al_fail(err, AL_EINVAL, 0,
			       "cannot import %s: symlink target is empty or too long",
			       child_show(im, it, q, sizeof(q)));
	bool ok = al_utf8_valid((const uint8_t *)target, (size_t)n);
	for (ssize_t i = 0; ok && i < n; i++)
		ok = (uint8_t)target[i] >= 0x20 && target[i] != 0x7f;
	if (!ok)
		return al_fail(err, AL_EINVAL, 0,
			       "cannot import %s: symlink target is not UTF-8 text without control "
			       "characters",
			       child_show(im, it, q, sizeof(q)));
	it->e.type = AL_T_SYMLINK;
	it->e.mode = 0777;
	it->e.size = (uint64_t)n;
	im->res->symlinks++;
	return al_cas_put(im->cas, target, (size_t)n, &it->e.digest, err);
}

static int import_subdir(struct imp *im, int dfd, unsigned depth, struct ient *it,
			 struct al_error *err)
{
	char q[512];
	if (depth + 1 > AL_DEPTH_MAX)
		return al_fail(err, AL_ELIMIT, 0, "cannot import: tree deeper than %d levels at %s",
			       AL_DEPTH_MAX, child_show(im, it, q, sizeof(q)));
	_cleanup_close_ int sub =
		openat(dfd, it->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return al_fail(err, AL_EIO, errno, "open %s", child_show(im, it, q, sizeof(q)));
	it->e.type = AL_T_DIR;
	im->res->dirs++;
	size_t saved;
	int r = al_manifest__path_push(&im->path, it->e.name, it->e.namelen, &saved, err);
	if (r < 0)
		return r;
	r = import_dir(im, sub, depth + 1, &it->e.digest, &it->e.size, err);
	al_manifest__path_pop(&im->path, saved);
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

static int import_entry(struct imp *im, int dfd, struct ient *it, struct cached *c,
			struct al_error *err)
{
	char q[512];
	const char *why;
	if (!al_name_valid(it->e.name, it->e.namelen, &why))
		return al_fail(err, AL_EINVAL, 0, "cannot import %s: %s",
			       child_show(im, it, q, sizeof(q)), why);
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
			   : S_ISFIFO(s.st_mode)                    ? "a FIFO"
			   : S_ISSOCK(s.st_mode)                    ? "a socket"
								    : "of an unknown type";
	return al_fail(
		err, AL_EINVAL, 0,
		"cannot import %s: it is %s (a snapshot holds files, symlinks and directories)",
		child_show(im, it, q, sizeof(q)), kind);
}

/* The node is new: every file taken from the stat cache must really be in
 * the store (it could have been lost with a deleted store); re-read any that
 * is not. */
static int ensure_cached_blobs(struct imp *im, int dfd, struct ient *v, size_t n,
			       struct al_error *err)
{
	for (size_t i = 0; i < n; i++) {
		if (!v[i].from_cache)
			continue;
		int has = al_cas__has_local(im->cas, &v[i].e.digest, err);
		if (has < 0)
			return has;
		if (has)
			continue;
		struct stat s;
		if (fstatat(dfd, v[i].name, &s, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(s.st_mode))
			return al_fail(err, AL_EINVAL, errno, "%s changed while being imported",
				       v[i].name);
		struct al_oid d;
		d = v[i].e.digest;
		int r = import_file(im, dfd, &v[i], &s, err);
		if (r < 0)
			return r;
		if (!al_oid_eq(&d, &v[i].e.digest))
			return al_fail(err, AL_EINVAL, 0, "%s changed while being imported",
				       v[i].name);
	}
	return 0;
}

static int import_dir(struct imp *im, int dfd, unsigned depth, struct al_oid *out,
		      uint64_t *bytes_out, struct al_error *err)
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
		al_db_reset(im->seen_put);
		al_db_bind_blob(im->seen_put, 1, im->path.p, im->path.len);
		int rc = al_db_step(im->seen_put, err);
		al_db_reset(im->seen_put);
		if (rc < 0) {
			r = al_error_prefix(err, "stat cache: ");
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
		if (v[i].e.type != AL_T_SYMLINK &&
		    __builtin_add_overflow(total, v[i].e.size, &total)) {
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
	al_sha256(enc, enclen, out->b);
	int has = al_cas__has_local(im->cas, out, err);
	if (has < 0) {
		r = has;
		goto out;
	}
	if (!has) {
		if ((r = ensure_cached_blobs(im, dfd, v, n, err)) < 0)
			goto out;
		struct al_oid d;
		if ((r = al_cas_put(im->cas, enc, enclen, &d, err)) < 0)
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

/* The stat cache is SQLite on every deployment (a cache of this node's
 * files, never shared): its SQL may be SQLite's own. */
static int imp_prepare(struct imp *im, const char *root, struct al_error *err)
{
	int r = al_store__statcache(im->st, &im->sc, err);
	if (r < 0 || (r = al_db_begin(im->sc, AL_DB_WRITE, &im->sc_txn, err)) < 0)
		return r;
	if ((r = al_db_exec(
		     im->sc,
		     "CREATE TEMP TABLE IF NOT EXISTS seen(dir BLOB PRIMARY KEY) WITHOUT ROWID;"
		     "DELETE FROM temp.seen;",
		     err)) < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *st = NULL;
	if ((r = al_db_prepare(im->sc, "INSERT INTO roots(path) VALUES (?1) ON CONFLICT DO NOTHING",
			       &st, err)) < 0)
		return r;
	al_db_bind_blob(st, 1, root, strlen(root));
	if (al_db_step(st, err) < 0)
		return al_error_prefix(err, "stat cache: ");
	al_db_finalize(st);
	st = NULL;
	if ((r = al_db_prepare(im->sc, "SELECT id FROM roots WHERE path = ?1", &st, err)) < 0)
		return r;
	al_db_bind_blob(st, 1, root, strlen(root));
	if ((r = al_db_step(st, err)) != AL_DB_ROW)
		return r < 0 ? al_error_prefix(err, "stat cache: ")
			     : al_fail(err, AL_EIO, 0, "stat cache: the root's row is missing");
	im->root_id = al_db_column_int64(st, 0);
	if ((r = al_db_prepare(im->sc, "SELECT data FROM scdir WHERE root = ?1 AND dir = ?2",
			       &im->sc_sel, err)) < 0 ||
	    (r = al_db_prepare(im->sc,
			       "INSERT OR REPLACE INTO scdir(root, dir, data) VALUES (?1, ?2, ?3)",
			       &im->sc_put, err)) < 0 ||
	    (r = al_db_prepare(im->sc, "DELETE FROM scdir WHERE root = ?1 AND dir = ?2",
			       &im->sc_del, err)) < 0 ||
	    (r = al_db_prepare(im->sc,
			       "INSERT INTO temp.seen(dir) VALUES (?1) ON CONFLICT DO NOTHING",
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
	al_db_finalize(im->sc_sel);
	al_db_finalize(im->sc_put);
	al_db_finalize(im->sc_del);
	al_db_finalize(im->seen_put);
	im->sc_sel = im->sc_put = im->sc_del = im->seen_put = NULL;
}

static int imp_finish_cache(struct imp *im)
{
	_cleanup_db_stmt_ struct al_db_stmt *st = NULL;
	if (al_db_prepare(
		    im->sc,
		    "DELETE FROM scdir WHERE root = ?1 AND dir NOT IN (SELECT dir FROM temp.seen)",
		    &st, NULL) < 0)
		return -1;
	al_db_bind_int64(st, 1, im->root_id);
	if (al_db_step(st, NULL) < 0)
		return -1;
	return al_db_commit(&im->sc_txn, NULL);
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
		return al_fail(err, errno == ENOENT ? AL_ENOTFOUND : AL_EIO, errno, "import %s",
			       dir);
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
	if ((r = import_dir(&im, dfd, 0, &res->id, &bytes, err)) < 0) {
		al_cas_abort(im.cas);
		goto fail_cache;
	}
	if ((r = al_cas_commit(im.cas, err)) < 0)
		goto fail_cache;
	/* the cache is advisory: failing to save it does not fail the import */
	if (im.sc && imp_finish_cache(&im) < 0)
		al_db_rollback(&im.sc_txn);
	imp_release(&im);
	struct al_snapshot_info info = {
		.created = al_wall_s(),
		.files = res->files,
		.bytes = res->bytes,
		.source = root,
	};
	info.id = res->id;
	return al_store_snapshot_add(st, &info, err);
fail_cache:
	al_db_rollback(&im.sc_txn); /* none begun: nothing */
	imp_release(&im);
	return r;
}
