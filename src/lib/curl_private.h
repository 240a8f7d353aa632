/* Private: libcurl, loaded on first use (dl.h), for the library's HTTP
 * clients (the S3 backend, integrations' calls). */
#ifndef AL_CURL_PRIVATE_H
#define AL_CURL_PRIVATE_H

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include "airlock/error.h"

struct al_curl {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	void (*easy_reset)(CURL *c);
	void (*easy_cleanup)(CURL *c);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
	void (*slist_free_all)(struct curl_slist *list);
	/* the multi interface (the S3 backend's concurrent requests) */
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_add_handle)(CURLM *m, CURL *c);
	CURLMcode (*multi_remove_handle)(CURLM *m, CURL *c);
	CURLMcode (*multi_perform)(CURLM *m, int *running);
	CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd extra[], unsigned n, int timeout_ms,
				int *numfds);
	CURLMsg *(*multi_info_read)(CURLM *m, int *left);
	CURLMcode (*multi_cleanup)(CURLM *m);
};
/* The table: filled once al_curl__ready has returned 0. */
extern struct al_curl al__curl;
/* Load libcurl and initialise it, once per process; its error if not. */
int al_curl__ready(struct al_error *err);

#endif
