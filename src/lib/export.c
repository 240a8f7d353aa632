/* export: a snapshot into a directory (al_manifest_export), never writing
 * outside it: names checked by the decoder, files created relative to
 * directory fds with O_NOFOLLOW|O_EXCL, symlinks in the way removed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "manifest_private.h"
#include "util.h"

/* ---- export ---------------------------------------------------------------- */

struct exporter {
	struct al_cas *cas;
	const struct al_export_opts *opts;
	struct al_manifest_path path;
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
static int make_room(struct exporter *ex, int dfd, const char *name, bool want_dir,
		     struct al_error *err)
{
	char q[512];
	struct stat s;
	if (fstatat(dfd, name, &s, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0
				       : al_fail(err, AL_EIO, errno, "stat %s",
						 al_manifest__path_show(&ex->path, q, sizeof(q)));
	if (!ex->opts || !ex->opts->force)
		return al_fail(err, AL_EEXIST, 0, "%s already exists in the target",
			       al_manifest__path_show(&ex->path, q, sizeof(q)));
	if (S_ISDIR(s.st_mode)) {
		if (want_dir)
			return 1;
		return al_fail(err, AL_EEXIST, 0,
			       "refusing to replace directory %s with a non-directory",
			       al_manifest__path_show(&ex->path, q, sizeof(q)));
	}
	if (unlinkat(dfd, name, 0) < 0)
		return al_fail(err, AL_EIO, errno, "remove %s",
			       al_manifest__path_show(&ex->path, q, sizeof(q)));
	return 0;
}

static int export_dir(struct exporter *ex, const struct al_oid *id, int dfd, unsigned depth,
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
		_cleanup_close_ int fd = openat(
			dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return al_fail(err, AL_EIO, errno, "create %s",
				       al_manifest__path_show(&ex->path, q, sizeof(q)));
		r = al_cas_stream(ex->cas, &e->digest, fd_sink, &fd, err);
		if (r == 0 && ex->opts && ex->opts->chown &&
		    fchown(fd, ex->opts->uid, ex->opts->gid) < 0)
			r = al_fail(err, AL_EIO, errno, "chown %s",
				    al_manifest__path_show(&ex->path, q, sizeof(q)));
		if (r == 0 && fchmod(fd, e->mode) < 0)
			r = al_fail(err, AL_EIO, errno, "chmod %s",
				    al_manifest__path_show(&ex->path, q, sizeof(q)));
		if (r < 0) {
			unlinkat(dfd, name, 0);
			return al_error_prefix(err, "export %s: ",
					       al_manifest__path_show(&ex->path, q, sizeof(q)));
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
		if ((r = al_cas_get(ex->cas, &e->digest, &t, &tlen, err)) < 0)
			return al_error_prefix(err, "export %s: ",
					       al_manifest__path_show(&ex->path, q, sizeof(q)));
		if (tlen != e->size || tlen == 0 || memchr(t, 0, tlen))
			return al_fail(err, AL_ECORRUPT, 0, "symlink %s has a bad target",
				       al_manifest__path_show(&ex->path, q, sizeof(q)));
		char target[AL_SYMLINK_MAX + 1];
		memcpy(target, t, tlen);
		target[tlen] = 0;
		/* the link is written, never followed: later entries are created
		 * with O_NOFOLLOW relative to directory fds */
		if (symlinkat(target, dfd, name) < 0)
			return al_fail(err, AL_EIO, errno, "symlink %s",
				       al_manifest__path_show(&ex->path, q, sizeof(q)));
		if (ex->opts && ex->opts->chown &&
		    fchownat(dfd, name, ex->opts->uid, ex->opts->gid, AT_SYMLINK_NOFOLLOW) < 0)
			return al_fail(err, AL_EIO, errno, "chown %s",
				       al_manifest__path_show(&ex->path, q, sizeof(q)));
		return 0;
	}
	if (!room && mkdirat(dfd, name, 0700) < 0)
		return al_fail(err, AL_EIO, errno, "mkdir %s",
			       al_manifest__path_show(&ex->path, q, sizeof(q)));
	_cleanup_close_ int sub =
		openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return al_fail(err, AL_EIO, errno, "open %s",
			       al_manifest__path_show(&ex->path, q, sizeof(q)));
	if (room && fchmod(sub, 0700) < 0)
		return al_fail(err, AL_EIO, errno, "chmod %s",
			       al_manifest__path_show(&ex->path, q, sizeof(q)));
	if (ex->opts && ex->opts->chown && fchown(sub, ex->opts->uid, ex->opts->gid) < 0)
		return al_fail(err, AL_EIO, errno, "chown %s",
			       al_manifest__path_show(&ex->path, q, sizeof(q)));
	if ((r = export_dir(ex, &e->digest, sub, depth + 1, err)) < 0)
		return r;
	/* last, so a read-only directory could still be filled */
	if (fchmod(sub, e->mode) < 0)
		return al_fail(err, AL_EIO, errno, "chmod %s",
			       al_manifest__path_show(&ex->path, q, sizeof(q)));
	return 0;
}

static int export_dir(struct exporter *ex, const struct al_oid *id, int dfd, unsigned depth,
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
		if ((r = al_manifest__path_push(&ex->path, node->entries[i].name,
						node->entries[i].namelen, &saved, err)) < 0)
			break;
		r = export_entry(ex, dfd, &node->entries[i], depth, err);
		al_manifest__path_pop(&ex->path, saved);
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

int al_manifest_export(struct al_cas *cas, const struct al_oid *id, const char *dir,
		       const struct al_export_opts *opts, struct al_error *err)
{
	/* check the snapshot before touching the target */
	struct al_node *root = NULL;
	int r = al_node_load(cas, id, &root, err);
	if (r < 0)
		return r;
	al_node_free(root);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return al_fail(err, errno == ENOENT ? AL_ENOTFOUND : AL_EIO, errno, "create %s",
			       dir);
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return al_fail(err, errno == ENOTDIR ? AL_EEXIST : AL_EIO, errno, "open %s", dir);
	int empty = dir_is_empty(dfd);
	if (empty < 0)
		return al_fail(err, AL_EIO, errno, "read %s", dir);
	if (!empty && !(opts && opts->force))
		return al_fail(err, AL_EEXIST, 0,
			       "target %s is not empty (use --force to write into it)", dir);
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
