/* What comes back from a microVM guest, parsed strictly (vm_private.h):
 * the result stream into an upper-layer directory, and the status line.
 * The guest is hostile: every member is checked before anything of it is
 * made, and everything is made relative to directory fds that were
 * themselves opened beneath the target without following a symlink. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "airlock/dl_archive.h"
#include "airlock/manifest.h"
#include "util.h"
#include "vm_private.h"

struct src {
	int fd;
	uint64_t off, max;
	char buf[65536];
};

static la_ssize_t src_read(struct archive *a, void *ctx, const void **out)
{
	struct src *s = ctx;
	(void)a;
	uint64_t left = s->max - s->off;
	size_t want = left < sizeof(s->buf) ? (size_t)left : sizeof(s->buf);
	if (!want)
		return 0;
	ssize_t n;
	do
		n = pread(s->fd, s->buf, want, (off_t)s->off);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		dl_archive.set_error(a, errno, "read");
		return -1;
	}
	s->off += (uint64_t)n;
	*out = s->buf;
	return n;
}

static void archive_freep(struct archive **a)
{
	if (*a)
		dl_archive.read_free(*a);
}

/* Split a member's path into its directory and its last name, checking
 * every component.  A directory's trailing '/' is dropped. */
static int split(char *path, bool dir, const char **parent, const char **name, struct al_error *err)
{
	size_t n = strlen(path);
	char q[256];
	al_quote(path, n < 200 ? n : 200, q, sizeof(q));
	if (dir && n > 1 && path[n - 1] == '/')
		path[--n] = 0;
	if (!n || n > AL_PATH_MAX || path[0] == '/')
		return al_fail(err, AL_EINVAL, 0, "member '%s': not a relative path", q);
	unsigned depth = 0;
	for (char *c = path; *c;) {
		char *slash = strchr(c, '/');
		size_t len = slash ? (size_t)(slash - c) : strlen(c);
		const char *why;
		if (!al_name_valid(c, len, &why))
			return al_fail(err, AL_EINVAL, 0, "member '%s': %s", q, why);
		if (++depth > AL_DEPTH_MAX)
			return al_fail(err, AL_EINVAL, 0, "member '%s': deeper than %d levels", q,
				       AL_DEPTH_MAX);
		c += len + (slash ? 1 : 0);
		if (slash && !*c)
			return al_fail(err, AL_EINVAL, 0, "member '%s': not a canonical path", q);
	}
	char *last = strrchr(path, '/');
	if (last) {
		*last = 0;
		*parent = path;
		*name = last + 1;
	} else {
		*parent = ".";
		*name = path;
	}
	return 0;
}

static int open_parent(int root, const char *parent, const char *q, struct al_error *err)
{
	int fd = strcmp(parent, ".") ? al_open_beneath(root, parent, O_PATH | O_DIRECTORY, 0)
				     : fcntl(root, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return al_fail(err, AL_EINVAL, errno,
			       "member '%s': its directory is not an earlier directory member", q);
	return fd;
}

/* The one xattr a member may carry: a directory's opaque mark. */
static int xattrs(struct archive_entry *e, bool dir, bool *opaque, const char *q,
		  struct al_error *err)
{
	*opaque = false;
	if (dl_archive.entry_xattr_reset(e) == 0)
		return 0;
	const char *name;
	const void *val;
	size_t len;
	while (dl_archive.entry_xattr_next(e, &name, &val, &len) == ARCHIVE_OK) {
		if (!dir || strcmp(name, "trusted.overlay.opaque") || len != 1 ||
		    *(const char *)val != 'y')
			return al_fail(err, AL_EINVAL, 0, "member '%s': an extended attribute", q);
		*opaque = true;
	}
	return 0;
}

static int make_file(struct archive *a, int pfd, const char *name, mode_t mode, uint64_t size,
		     uint64_t *budget, const char *q, struct al_error *err)
{
	if (size > *budget)
		return al_fail(err, AL_ELIMIT, 0,
			       "member '%s': the stream holds more bytes than the run's disk limit",
			       q);
	_cleanup_close_ int fd =
		openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return al_fail(err, errno == EEXIST ? AL_EINVAL : AL_EIO, errno,
			       "member '%s': cannot be made", q);
	uint64_t got = 0;
	const void *p;
	size_t n;
	la_int64_t off;
	int rc;
	while ((rc = dl_archive.read_data_block(a, &p, &n, &off)) == ARCHIVE_OK) {
		if (off < 0 || (uint64_t)off != got || n > size - got)
			return al_fail(err, AL_EINVAL, 0, "member '%s': data out of place", q);
		if (al_write_full(fd, p, n) < 0)
			return al_fail(err, errno == ENOSPC ? AL_ELIMIT : AL_EIO, errno,
				       "member '%s': write", q);
		got += n;
	}
	if (rc != ARCHIVE_EOF || got != size)
		return al_fail(err, AL_EINVAL, 0, "member '%s': truncated (%s)", q,
			       rc == ARCHIVE_EOF ? "short" : dl_archive.error_string(a));
	*budget -= size;
	if (fchmod(fd, mode & 07777) < 0)
		return al_fail(err, AL_EIO, errno, "member '%s': chmod", q);
	return 0;
}

static int member(struct archive *a, struct archive_entry *e, int root, uint64_t *budget,
		  struct al_error *err)
{
	mode_t type = dl_archive.entry_filetype(e);
	const char *hard = dl_archive.entry_hardlink(e);
	_cleanup_free_ char *path =
		strdup(dl_archive.entry_pathname(e) ? dl_archive.entry_pathname(e) : "");
	if (!path)
		return al_fail(err, AL_ENOMEM, ENOMEM, "vm result");
	char q[256];
	al_quote(path, strlen(path) < 200 ? strlen(path) : 200, q, sizeof(q));
	const char *parent, *name;
	int r = split(path, type == AE_IFDIR, &parent, &name, err);
	if (r < 0)
		return r;
	bool opaque;
	if ((r = xattrs(e, type == AE_IFDIR && !hard, &opaque, q, err)) < 0)
		return r;
	if (dl_archive.entry_sparse_count(e) > 0)
		return al_fail(err, AL_EINVAL, 0, "member '%s': sparse", q);
	_cleanup_close_ int pfd = open_parent(root, parent, q, err);
	if (pfd < 0)
		return pfd;
	mode_t mode = dl_archive.entry_perm(e);
	if (hard) {
		_cleanup_free_ char *t = strdup(hard);
		const char *tparent, *tname;
		if (!t)
			return al_fail(err, AL_ENOMEM, ENOMEM, "vm result");
		if ((r = split(t, false, &tparent, &tname, err)) < 0)
			return r;
		_cleanup_close_ int tfd = open_parent(root, tparent, q, err);
		struct stat s;
		if (tfd < 0)
			return tfd;
		if (fstatat(tfd, tname, &s, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(s.st_mode))
			return al_fail(err, AL_EINVAL, errno,
				       "member '%s': a hardlink to no earlier regular file", q);
		if (linkat(tfd, tname, pfd, name, 0) < 0)
			return al_fail(err, errno == EEXIST ? AL_EINVAL : AL_EIO, errno,
				       "member '%s': cannot be made", q);
		return 0;
	}
	switch (type) {
	case AE_IFDIR: {
		if (mkdirat(pfd, name, 0700) < 0)
			return al_fail(err, errno == EEXIST ? AL_EINVAL : AL_EIO, errno,
				       "member '%s': cannot be made", q);
		_cleanup_close_ int d =
			openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (d < 0 || fchmod(d, mode & 07777) < 0)
			return al_fail(err, AL_EIO, errno, "member '%s': chmod", q);
		if (opaque && fsetxattr(d, "user.overlay.opaque", "y", 1, 0) < 0 &&
		    fsetxattr(d, "trusted.overlay.opaque", "y", 1, 0) < 0)
			return al_fail(err, AL_EIO, errno,
				       "member '%s': cannot mark it opaque (user xattrs on tmpfs "
				       "need Linux 6.6)",
				       q);
		return 0;
	}
	case AE_IFREG:
		if (!dl_archive.entry_size_is_set(e) || dl_archive.entry_size(e) < 0)
			return al_fail(err, AL_EINVAL, 0, "member '%s': no size", q);
		return make_file(a, pfd, name, mode, (uint64_t)dl_archive.entry_size(e), budget, q,
				 err);
	case AE_IFLNK: {
		const char *target = dl_archive.entry_symlink(e);
		if (!target || !*target || strlen(target) > AL_SYMLINK_MAX)
			return al_fail(err, AL_EINVAL, 0, "member '%s': a bad symlink target", q);
		if (symlinkat(target, pfd, name) < 0)
			return al_fail(err, errno == EEXIST ? AL_EINVAL : AL_EIO, errno,
				       "member '%s': cannot be made", q);
		return 0;
	}
	case AE_IFCHR:
		if (dl_archive.entry_rdevmajor(e) != 0 || dl_archive.entry_rdevminor(e) != 0)
			break;
		/* a whiteout: the run deleted it (overlayfs's own form; mknod of
		 * 0:0 needs no privilege since Linux 5.8) */
		if (mknodat(pfd, name, S_IFCHR, makedev(0, 0)) < 0)
			return al_fail(err, errno == EEXIST ? AL_EINVAL : AL_EIO, errno,
				       "member '%s': cannot be made", q);
		return 0;
	case AE_IFIFO:
		/* kept so the reader names it, as it does a FIFO a namespace run
		 * leaves; never opened */
		if (mkfifoat(pfd, name, 0600) < 0)
			return al_fail(err, errno == EEXIST ? AL_EINVAL : AL_EIO, errno,
				       "member '%s': cannot be made", q);
		return 0;
	default: break;
	}
	return al_fail(err, AL_EINVAL, 0, "member '%s': a device or unknown type", q);
}

int al_vm__result_unpack(int fd, uint64_t max_stream, int dirfd, const struct al_vm_caps *caps,
			 struct al_error *err)
{
	_cleanup_locale_ locale_t prev = al_c_locale_enter();
	if (dl_load_archive(err) < 0)
		return err->code;
	struct src *s = calloc(1, sizeof(*s));
	if (!s)
		return al_fail(err, AL_ENOMEM, ENOMEM, "vm result");
	s->fd = fd;
	s->max = max_stream;
	_cleanup_(archive_freep) struct archive *a = dl_archive_read_new();
	int r = 0;
	/* tar only, no decompression filter: nothing in it expands */
	if (!a || dl_archive.read_support_format_tar(a) != ARCHIVE_OK ||
	    dl_archive.read_open(a, s, NULL, src_read, NULL) != ARCHIVE_OK)
		r = al_fail(err, AL_EINVAL, 0, "the result stream is not a tar stream (%s)",
			    a ? dl_archive.error_string(a) : "libarchive");
	uint64_t budget = caps->bytes, entries = 0;
	struct archive_entry *e;
	int rc = ARCHIVE_OK;
	while (r == 0 && al_archive_header_ok(a, rc = dl_archive.read_next_header(a, &e))) {
		if (++entries > caps->entries)
			r = al_fail(err, AL_ELIMIT, 0,
				    "the result stream has more than %llu members (the run's file "
				    "limit)",
				    (unsigned long long)caps->entries);
		else
			r = member(a, e, dirfd, &budget, err);
	}
	if (r == 0 && rc != ARCHIVE_EOF)
		r = al_fail(err, AL_EINVAL, 0, "the result stream is malformed (%s)",
			    dl_archive.error_string(a) ? dl_archive.error_string(a) : "truncated");
	free(s);
	return r;
}

/* ---- the status line ---------------------------------------------------------- */

static bool num(const char **p, const char *key, uint64_t max, uint64_t *out)
{
	size_t kl = strlen(key);
	if (strncmp(*p, key, kl) || (*p)[kl] != '=')
		return false;
	const char *c = *p + kl + 1;
	if (*c < '0' || *c > '9' || (c[0] == '0' && c[1] >= '0' && c[1] <= '9'))
		return false;
	uint64_t v = 0;
	for (; *c >= '0' && *c <= '9'; c++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*c - '0');
	}
	if (v > max || (*c != ' ' && *c != '\n'))
		return false;
	*out = v;
	*p = *c == ' ' ? c + 1 : c;
	return true;
}

int al_vm__status_parse(const char *line, size_t n, struct al_vm_status *st, struct al_error *err)
{
	memset(st, 0, sizeof(*st));
	static const char magic[] = "airlock-status 1 ";
	if (n < sizeof(magic) || memchr(line, 0, n) || memchr(line, '\n', n) != line + n - 1 ||
	    strncmp(line, magic, sizeof(magic) - 1))
		return al_fail(err, AL_EINVAL, 0, "the guest's status line is malformed");
	char buf[512];
	if (n >= sizeof(buf))
		return al_fail(err, AL_EINVAL, 0, "the guest's status line is too long");
	memcpy(buf, line, n);
	buf[n] = 0;
	const char *p = buf + sizeof(magic) - 1;
	uint64_t v;
	if (!strncmp(p, "error stage=", 12)) {
		p += 12;
		size_t len = strcspn(p, " \n");
		if (!len || len >= sizeof(st->stage))
			return al_fail(err, AL_EINVAL, 0, "the guest's status line is malformed");
		for (size_t i = 0; i < len; i++)
			if (!((p[i] >= 'a' && p[i] <= 'z') || p[i] == '_' || p[i] == ':'))
				return al_fail(err, AL_EINVAL, 0,
					       "the guest's status line is malformed");
		memcpy(st->stage, p, len);
		p += len;
		if (*p++ != ' ' || !num(&p, "errno", 4095, &v) || *p != '\n')
			return al_fail(err, AL_EINVAL, 0, "the guest's status line is malformed");
		st->error = true;
		st->sys_errno = (int)v;
		return 0;
	}
	bool *flags[] = { &st->timed_out, &st->cancelled, &st->oom };
	static const char *const fnames[] = { "timed_out", "cancelled", "oom" };
	if (!num(&p, "exit", 255, &v))
		goto bad;
	st->exit_code = (int)v;
	for (size_t i = 0; i < 3; i++) {
		if (!num(&p, fnames[i], 1, &v))
			goto bad;
		*flags[i] = v;
	}
	if (!num(&p, "peak", UINT64_MAX, &st->peak) || !num(&p, "disk_full", 1, &v))
		goto bad;
	st->disk_full = v;
	if (!num(&p, "files_full", 1, &v))
		goto bad;
	st->files_full = v;
	if (!num(&p, "user_ms", UINT64_MAX, &st->user_ms) ||
	    !num(&p, "sys_ms", UINT64_MAX, &st->sys_ms) ||
	    !num(&p, "max_rss_kb", UINT64_MAX, &st->max_rss_kb) ||
	    !num(&p, "wall_ms", UINT64_MAX, &st->wall_ms) ||
	    !num(&p, "boot_ms", UINT64_MAX, &st->boot_ms) ||
	    !num(&p, "setup_ms", UINT64_MAX, &st->setup_ms) ||
	    !num(&p, "collect_ms", UINT64_MAX, &st->collect_ms) ||
	    !num(&p, "result", UINT64_MAX, &st->result) ||
	    !num(&p, "left_sockets", UINT32_MAX, &st->left_sockets) ||
	    !num(&p, "left_deep", UINT32_MAX, &st->left_deep) ||
	    !num(&p, "left_links", UINT32_MAX, &st->left_links) || *p != '\n')
		goto bad;
	return 0;
bad:
	return al_fail(err, AL_EINVAL, 0, "the guest's status line is malformed");
}
