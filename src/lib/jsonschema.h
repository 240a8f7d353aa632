/* libairlock: JSON Schema (draft 7) validation behind a small C interface.
 * The engine is valijson (Debian's libvalijson-dev) over nlohmann::json,
 * in jsonschema.cc; no remote $ref is ever fetched. */
#ifndef AL_JSONSCHEMA_H
#define AL_JSONSCHEMA_H

#include <stddef.h>

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "airlock/error.h"

struct al_jsonschema;

/* Compile a schema (JSON text): AL_EINVAL naming what is wrong with it. */
int al_jsonschema_compile(const char *text, size_t len, struct al_jsonschema **out,
			  struct al_error *err);
void al_jsonschema_free(struct al_jsonschema *s);

/* Validate a document (JSON text, at most AL_JSONSCHEMA_DOC_MAX bytes):
 * 0 valid; 1 invalid, with up to max_errors objects {at, message} appended
 * to errors (at: the JSON pointer of the failing value); 2 not JSON, with
 * {at: "", message: the parser's} appended; < 0 an error (memory). */
#define AL_JSONSCHEMA_DOC_MAX (64u << 20)
int al_jsonschema_validate(const struct al_jsonschema *s, const char *doc, size_t len,
			   json_t *errors, size_t max_errors, struct al_error *err);

#ifdef __cplusplus
}
#endif

#endif
