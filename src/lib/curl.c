/* curl: libcurl's functions, loaded on first use (curl_private.h). */
#include <pthread.h>

#include "airlock/dl.h"
#include "curl_private.h"
#include "util.h"

struct al_curl al__curl;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct al_error load_err;
static int load_rc;

static void load(void)
{
	const struct dl_sym syms[] = {
		{ "curl_global_init", DL_SLOT(al__curl, global_init) },
		{ "curl_easy_init", DL_SLOT(al__curl, easy_init) },
		{ "curl_easy_setopt", DL_SLOT(al__curl, easy_setopt) },
		{ "curl_easy_perform", DL_SLOT(al__curl, easy_perform) },
		{ "curl_easy_getinfo", DL_SLOT(al__curl, easy_getinfo) },
		{ "curl_easy_reset", DL_SLOT(al__curl, easy_reset) },
		{ "curl_easy_cleanup", DL_SLOT(al__curl, easy_cleanup) },
		{ "curl_easy_strerror", DL_SLOT(al__curl, easy_strerror) },
		{ "curl_slist_append", DL_SLOT(al__curl, slist_append) },
		{ "curl_slist_free_all", DL_SLOT(al__curl, slist_free_all) },
		{ "curl_multi_init", DL_SLOT(al__curl, multi_init) },
		{ "curl_multi_add_handle", DL_SLOT(al__curl, multi_add_handle) },
		{ "curl_multi_remove_handle", DL_SLOT(al__curl, multi_remove_handle) },
		{ "curl_multi_perform", DL_SLOT(al__curl, multi_perform) },
		{ "curl_multi_poll", DL_SLOT(al__curl, multi_poll) },
		{ "curl_multi_info_read", DL_SLOT(al__curl, multi_info_read) },
		{ "curl_multi_cleanup", DL_SLOT(al__curl, multi_cleanup) },
	};
	load_rc = dl_load("libcurl.so.4", "libcurl4", syms, ARRAY_SIZE(syms), &load_err);
	if (load_rc == 0 && al__curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		load_rc = al_fail(&load_err, AL_EIO, 0, "curl_global_init failed");
}

int al_curl__ready(struct al_error *err)
{
	pthread_once(&once, load);
	if (load_rc < 0 && err)
		*err = load_err;
	return load_rc;
}
