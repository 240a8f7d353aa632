/* dl: libmicrohttpd and libcurl, loaded on first use (dl.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "dl.h"

struct dl_mhd dl_mhd;
struct dl_curl dl_curl;

struct sym {
	const char *name;
	void **slot;
};

/* Open lib (by its soname) and fill every slot; nothing half-filled. */
static int load(const char *lib, const char *package, const struct sym *syms, size_t n, struct al_error *err)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return al_fail(err, AL_EIO, 0, "cannot load %s (Debian package %s): %s", lib, package, dlerror());
	for (size_t i = 0; i < n; i++) {
		void *p = dlsym(h, syms[i].name);
		if (!p) {
			for (size_t j = 0; j < i; j++)
				*syms[j].slot = NULL;
			dlclose(h);
			return al_fail(err, AL_EIO, 0, "%s has no %s", lib, syms[i].name);
		}
		*syms[i].slot = p;
	}
	return 0; /* the handle stays open for the process's life */
}

/* The table's members in the order of the names (each a function pointer). */
#define SLOT(t, m) ((void **)(void *)&(t).m)

int dl_load_mhd(struct al_error *err)
{
	if (dl_mhd.is_feature_supported)
		return 0;
	const struct sym syms[] = {
		{ "MHD_start_daemon", SLOT(dl_mhd, start_daemon) },
		{ "MHD_get_daemon_info", SLOT(dl_mhd, get_daemon_info) },
		{ "MHD_quiesce_daemon", SLOT(dl_mhd, quiesce_daemon) },
		{ "MHD_stop_daemon", SLOT(dl_mhd, stop_daemon) },
		{ "MHD_queue_response", SLOT(dl_mhd, queue_response) },
		{ "MHD_create_response_from_buffer", SLOT(dl_mhd, create_response_from_buffer) },
		{ "MHD_create_response_from_fd64", SLOT(dl_mhd, create_response_from_fd64) },
		{ "MHD_add_response_header", SLOT(dl_mhd, add_response_header) },
		{ "MHD_destroy_response", SLOT(dl_mhd, destroy_response) },
		{ "MHD_lookup_connection_value", SLOT(dl_mhd, lookup_connection_value) },
		{ "MHD_suspend_connection", SLOT(dl_mhd, suspend_connection) },
		{ "MHD_resume_connection", SLOT(dl_mhd, resume_connection) },
		{ "MHD_get_connection_info", SLOT(dl_mhd, get_connection_info) },
		{ "MHD_create_response_from_callback", SLOT(dl_mhd, create_response_from_callback) },
		{ "MHD_is_feature_supported", SLOT(dl_mhd, is_feature_supported) },
	};
	return load("libmicrohttpd.so.12", "libmicrohttpd12", syms, sizeof(syms) / sizeof(syms[0]), err);
}

int dl_load_curl(struct al_error *err)
{
	if (dl_curl.slist_free_all)
		return 0;
	const struct sym syms[] = {
		{ "curl_global_init", SLOT(dl_curl, global_init) },
		{ "curl_easy_init", SLOT(dl_curl, easy_init) },
		{ "curl_easy_setopt", SLOT(dl_curl, easy_setopt) },
		{ "curl_easy_perform", SLOT(dl_curl, easy_perform) },
		{ "curl_easy_getinfo", SLOT(dl_curl, easy_getinfo) },
		{ "curl_easy_cleanup", SLOT(dl_curl, easy_cleanup) },
		{ "curl_easy_strerror", SLOT(dl_curl, easy_strerror) },
		{ "curl_slist_append", SLOT(dl_curl, slist_append) },
		{ "curl_slist_free_all", SLOT(dl_curl, slist_free_all) },
	};
	int r = load("libcurl.so.4", "libcurl4", syms, sizeof(syms) / sizeof(syms[0]), err);
	if (r == 0 && dl_curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		r = al_fail(err, AL_EIO, 0, "curl_global_init failed");
	return r;
}
