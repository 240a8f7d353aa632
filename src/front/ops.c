/* ops: operations shared by the CLI and the daemon (ops.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "airlock/cas.h"
#include "airlock/delta.h"
#include "airlock/image.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "ops.h"
#include "airlock/util.h"

const char *ops_init_path(char *buf, size_t n)
{
	const char *env = getenv("AIRLOCK_INIT");
	if (env && *env)
		return env;
	ssize_t len = readlink("/proc/self/exe", buf, n - 20);
	if (len > 0) {
		buf[len] = 0;
		char *slash = strrchr(buf, '/');
		if (slash) {
			size_t room = n - (size_t)(slash + 1 - buf);
			if ((size_t)snprintf(slash + 1, room, "airlock-init") < room &&
			    access(buf, X_OK) == 0)
				return buf;
		}
	}
	return "/usr/libexec/airlock/airlock-init";
}

static char guest_dir[4200];

static void guest_dir_init(void)
{
	const char *env = getenv("AIRLOCK_GUEST_DIR");
	if (env && *env) {
		snprintf(guest_dir, sizeof(guest_dir), "%s", env);
		return;
	}
	ssize_t len = readlink("/proc/self/exe", guest_dir, sizeof(guest_dir) - 20);
	char *slash = len > 0 ? (guest_dir[len] = 0, strrchr(guest_dir, '/')) : NULL;
	if (slash) {
		snprintf(slash + 1, sizeof(guest_dir) - (size_t)(slash + 1 - guest_dir), "guest");
		if (access(guest_dir, F_OK) == 0)
			return;
	}
	snprintf(guest_dir, sizeof(guest_dir), "/usr/libexec/airlock/guest");
}

const char *ops_guest_dir(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, guest_dir_init);
	return guest_dir;
}

int ops_default_image(struct al_store *st, struct al_oid *id_out, struct al_error *err)
{
	struct al_oid id;
	int r = al_image_resolve(st, OPS_DEFAULT_IMAGE, &id, err);
	if (r == 0 && id_out)
		*id_out = id;
	if (r != AL_ENOTFOUND)
		return r;
	char dir[4200];
	ssize_t len = readlink("/proc/self/exe", dir, sizeof(dir) - 40);
	char *slash = len > 0 ? (dir[len] = 0, strrchr(dir, '/')) : NULL;
	struct stat s;
	if (!slash ||
	    (snprintf(slash + 1, sizeof(dir) - (size_t)(slash + 1 - dir), "image/busybox"),
	     stat(dir, &s)) < 0 ||
	    !S_ISDIR(s.st_mode))
		return al_fail(err, AL_ENOTFOUND, 0,
			       "no image '" OPS_DEFAULT_IMAGE
			       "': import one (airlock image import DIR --name " OPS_DEFAULT_IMAGE
			       ") or pass --image");
	fprintf(stderr, "airlock: importing the built-in busybox image from %s\n", dir);
	struct al_import_result res;
	if ((r = al_image_import(st, dir, OPS_DEFAULT_IMAGE, &res, err)) == 0 && id_out)
		*id_out = res.id;
	return r;
}

int ops_bundle_commit(struct al_store *st, const char *project, int fd, const struct al_oid *base,
		      const struct al_commit_opts *opts, struct al_commit_result *res,
		      struct al_oid *bundle_id, struct al_error *err)
{
	struct al_cas *cas = al_store_cas(st);
	struct al_bundle bd = { 0 };
	struct al_project_info p;
	struct al_oid snap;
	int r = al_project_get(st, project, &p, err);
	if (r == 0 && (r = al_manifest_stat(cas, base, NULL, NULL, err)) == 0 &&
	    (r = al_cas_begin(cas, err)) == 0) {
		/* everything verified and the tree built before one byte is kept */
		r = al_bundle_read_fd(cas, fd, &bd, err);
		if (r == 0)
			r = al_bundle_apply_tree(cas, &bd, base, &snap, err);
		r = r < 0 ? (al_cas_abort(cas), r) : al_cas_commit(cas, err);
	}
	if (r == 0) {
		*bundle_id = bd.id;
		char message[128], bid[80];
		al_oid_fmt(&bd.id, bid);
		snprintf(message, sizeof(message), "bundle %s", bid);
		struct al_commit_opts o = *opts;
		if (!o.message || !*o.message)
			o.message = message;
		r = al_project_commit(st, project, base, &snap, &o, res, err);
	}
	al_bundle_release(&bd);
	return r;
}
