/* airlockd: libmicrohttpd, loaded on first use (include/airlock/dl.h).  Include
 * this instead of <microhttpd.h> and call the library through the table
 * (dl_mhd.start_daemon(…)), filled by dl_load_mhd(), which must succeed
 * before the first call.  Types and constants are the library's own. */
#ifndef AL_DL_MHD_H
#define AL_DL_MHD_H

#include <stdint.h>
#include <microhttpd.h>

#include "airlock/error.h"

struct dl_mhd {
	struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port,
					   MHD_AcceptPolicyCallback apc, void *apc_cls,
					   MHD_AccessHandlerCallback dh, void *dh_cls, ...);
	const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *d,
						       enum MHD_DaemonInfoType type, ...);
	void (*stop_daemon)(struct MHD_Daemon *d);
	enum MHD_Result (*add_connection)(struct MHD_Daemon *d, MHD_socket fd,
					  const struct sockaddr *addr, socklen_t addrlen);
	enum MHD_Result (*queue_response)(struct MHD_Connection *c, unsigned int status,
					  struct MHD_Response *r);
	struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer,
							    enum MHD_ResponseMemoryMode mode);
	struct MHD_Response *(*create_response_from_fd64)(uint64_t size, int fd);
	enum MHD_Result (*add_response_header)(struct MHD_Response *r, const char *header,
					       const char *content);
	enum MHD_Result (*del_response_header)(struct MHD_Response *r, const char *header,
					       const char *content);
	void (*destroy_response)(struct MHD_Response *r);
	const char *(*lookup_connection_value)(struct MHD_Connection *c, enum MHD_ValueKind kind,
					       const char *key);
	void (*suspend_connection)(struct MHD_Connection *c);
	void (*resume_connection)(struct MHD_Connection *c);
	const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *c,
							       enum MHD_ConnectionInfoType type,
							       ...);
	struct MHD_Response *(*create_response_from_callback)(uint64_t size, size_t block_size,
							      MHD_ContentReaderCallback crc,
							      void *crc_cls,
							      MHD_ContentReaderFreeCallback crfc);
	enum MHD_Result (*is_feature_supported)(enum MHD_FEATURE feature);
};
extern struct dl_mhd dl_mhd;
int dl_load_mhd(struct al_error *err);

#endif
