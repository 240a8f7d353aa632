/* airlock: libmicrohttpd and libcurl, loaded on first use.
 *
 * Only `airlock serve` needs libmicrohttpd and only `--server` needs
 * libcurl; linked, they made every command load 19 more shared libraries
 * (GnuTLS, LDAP, Kerberos, …: +2 ms to each start, `airlock run`
 * included).  Include this instead of <microhttpd.h> and <curl/curl.h>:
 * the libraries' function names are macros for the tables below, filled by
 * dl_load_mhd() / dl_load_curl(), which must succeed before the first call. */
#ifndef AL_DL_H
#define AL_DL_H

#include <stdint.h>
#include <microhttpd.h>
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include "airlock/error.h"

struct dl_mhd {
	struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
					   void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...);
	const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *d, enum MHD_DaemonInfoType type, ...);
	MHD_socket (*quiesce_daemon)(struct MHD_Daemon *d);
	void (*stop_daemon)(struct MHD_Daemon *d);
	enum MHD_Result (*queue_response)(struct MHD_Connection *c, unsigned int status, struct MHD_Response *r);
	struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer, enum MHD_ResponseMemoryMode mode);
	struct MHD_Response *(*create_response_from_fd64)(uint64_t size, int fd);
	enum MHD_Result (*add_response_header)(struct MHD_Response *r, const char *header, const char *content);
	void (*destroy_response)(struct MHD_Response *r);
	const char *(*lookup_connection_value)(struct MHD_Connection *c, enum MHD_ValueKind kind, const char *key);
	void (*suspend_connection)(struct MHD_Connection *c);
	void (*resume_connection)(struct MHD_Connection *c);
	const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *c,
								enum MHD_ConnectionInfoType type, ...);
	struct MHD_Response *(*create_response_from_callback)(uint64_t size, size_t block_size,
							      MHD_ContentReaderCallback crc, void *crc_cls,
							      MHD_ContentReaderFreeCallback crfc);
	enum MHD_Result (*is_feature_supported)(enum MHD_FEATURE feature);
};
extern struct dl_mhd dl_mhd;
int dl_load_mhd(struct al_error *err);

#define MHD_start_daemon dl_mhd.start_daemon
#define MHD_get_daemon_info dl_mhd.get_daemon_info
#define MHD_quiesce_daemon dl_mhd.quiesce_daemon
#define MHD_stop_daemon dl_mhd.stop_daemon
#define MHD_queue_response dl_mhd.queue_response
#define MHD_create_response_from_buffer dl_mhd.create_response_from_buffer
#define MHD_create_response_from_fd64 dl_mhd.create_response_from_fd64
#define MHD_add_response_header dl_mhd.add_response_header
#define MHD_destroy_response dl_mhd.destroy_response
#define MHD_lookup_connection_value dl_mhd.lookup_connection_value
#define MHD_suspend_connection dl_mhd.suspend_connection
#define MHD_resume_connection dl_mhd.resume_connection
#define MHD_get_connection_info dl_mhd.get_connection_info
#define MHD_create_response_from_callback dl_mhd.create_response_from_callback
#define MHD_is_feature_supported dl_mhd.is_feature_supported

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

#define curl_global_init dl_curl.global_init
#define curl_easy_init dl_curl.easy_init
#undef curl_easy_setopt /* curl.h's own three-argument checks */
#undef curl_easy_getinfo
#define curl_easy_setopt dl_curl.easy_setopt
#define curl_easy_perform dl_curl.easy_perform
#define curl_easy_getinfo dl_curl.easy_getinfo
#define curl_easy_cleanup dl_curl.easy_cleanup
#define curl_easy_strerror dl_curl.easy_strerror
#define curl_slist_append dl_curl.slist_append
#define curl_slist_free_all dl_curl.slist_free_all

#endif
