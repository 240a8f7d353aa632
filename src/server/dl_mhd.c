/* dl_mhd: libmicrohttpd's functions, loaded on first use (dl_mhd.h). */
#include "airlock/util.h"
#include "airlock/dl.h"
#include "dl_mhd.h"

struct dl_mhd dl_mhd;

int dl_load_mhd(struct al_error *err)
{
	if (dl_mhd.is_feature_supported)
		return 0;
	const struct dl_sym syms[] = {
		{ "MHD_start_daemon", DL_SLOT(dl_mhd, start_daemon) },
		{ "MHD_get_daemon_info", DL_SLOT(dl_mhd, get_daemon_info) },
		{ "MHD_stop_daemon", DL_SLOT(dl_mhd, stop_daemon) },
		{ "MHD_add_connection", DL_SLOT(dl_mhd, add_connection) },
		{ "MHD_queue_response", DL_SLOT(dl_mhd, queue_response) },
		{ "MHD_create_response_from_buffer", DL_SLOT(dl_mhd, create_response_from_buffer) },
		{ "MHD_create_response_from_fd64", DL_SLOT(dl_mhd, create_response_from_fd64) },
		{ "MHD_add_response_header", DL_SLOT(dl_mhd, add_response_header) },
		{ "MHD_del_response_header", DL_SLOT(dl_mhd, del_response_header) },
		{ "MHD_destroy_response", DL_SLOT(dl_mhd, destroy_response) },
		{ "MHD_lookup_connection_value", DL_SLOT(dl_mhd, lookup_connection_value) },
		{ "MHD_suspend_connection", DL_SLOT(dl_mhd, suspend_connection) },
		{ "MHD_resume_connection", DL_SLOT(dl_mhd, resume_connection) },
		{ "MHD_get_connection_info", DL_SLOT(dl_mhd, get_connection_info) },
		{ "MHD_create_response_from_callback",
		  DL_SLOT(dl_mhd, create_response_from_callback) },
		{ "MHD_is_feature_supported", DL_SLOT(dl_mhd, is_feature_supported) },
	};
	return dl_load("libmicrohttpd.so.12", "libmicrohttpd12", syms, ARRAY_SIZE(syms), err);
}
