/* dl_curl: libcurl's functions, loaded on first use (dl_curl.h). */
#include "airlock/util.h"
#include "airlock/dl.h"
#include "dl_curl.h"

struct dl_curl dl_curl;

int dl_load_curl(struct al_error *err)
{
	if (dl_curl.slist_free_all)
		return 0;
	const struct dl_sym syms[] = {
		{ "curl_global_init", DL_SLOT(dl_curl, global_init) },
		{ "curl_easy_init", DL_SLOT(dl_curl, easy_init) },
		{ "curl_easy_setopt", DL_SLOT(dl_curl, easy_setopt) },
		{ "curl_easy_perform", DL_SLOT(dl_curl, easy_perform) },
		{ "curl_easy_getinfo", DL_SLOT(dl_curl, easy_getinfo) },
		{ "curl_easy_cleanup", DL_SLOT(dl_curl, easy_cleanup) },
		{ "curl_easy_strerror", DL_SLOT(dl_curl, easy_strerror) },
		{ "curl_slist_append", DL_SLOT(dl_curl, slist_append) },
		{ "curl_slist_free_all", DL_SLOT(dl_curl, slist_free_all) },
	};
	int r = dl_load("libcurl.so.4", "libcurl4", syms, ARRAY_SIZE(syms), err);
	if (r == 0 && dl_curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		r = al_fail(err, AL_EIO, 0, "curl_global_init failed");
	return r;
}
