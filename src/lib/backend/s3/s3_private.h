/* Private to libairlock and its tests: what the S3 backend (s3.c) shows of
 * itself beyond odb_backend.h. */
#ifndef AL_S3_PRIVATE_H
#define AL_S3_PRIVATE_H

#include <stdint.h>

#include "airlock/odb_backend.h"

/* The connections the backend's requests opened, over its life (a parked
 * backend taken back keeps counting): what a request on a kept connection
 * does not add to. */
uint64_t al_odb_s3__connects(const struct al_odb_backend *b);

#endif
