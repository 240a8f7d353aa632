/* airlock CLI: libcurl, loaded on first use (include/airlock/dl.h).  Include this
 * instead of <curl/curl.h> and call the library through the table
 * (dl_curl.easy_perform(…)), filled by dl_load_curl(), which must succeed
 * before the first call.  Types and constants are the library's own. */
#ifndef AL_DL_CURL_H
#define AL_DL_CURL_H

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include "airlock/error.h"

struct dl_curl {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *c);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
	void (*slist_free_all)(struct curl_slist *list);
};
extern struct dl_curl dl_curl;
int dl_load_curl(struct al_error *err);

#endif
