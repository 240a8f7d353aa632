/* airlock — object ids.
 *
 * An object id is the sha256 of an object's bytes (a blob, a directory node,
 * a bundle index): 32 bytes, written as "sha256:" and 64 lowercase hex
 * digits.  It is a struct so that an id cannot be confused with another
 * buffer, and so that it is copied by assignment.  On disk and on the wire an
 * id is exactly its AL_OID_LEN bytes (or its text form); the struct has no
 * padding. */
#ifndef AIRLOCK_OID_H
#define AIRLOCK_OID_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "airlock/error.h"

/* a raw sha256 digest that is not an object id (HMACs, Merkle hashes) */
#define AL_DIGEST_LEN 32
#define AL_OID_LEN AL_DIGEST_LEN           /* an id is a sha256 */
#define AL_OID_STRLEN (7 + 2 * AL_OID_LEN) /* "sha256:" + hex */

struct al_oid {
	uint8_t b[AL_OID_LEN];
};

_Static_assert(sizeof(struct al_oid) == AL_OID_LEN, "struct al_oid has no padding");

#define AL_OID_ZERO ((struct al_oid){ { 0 } })

/* "sha256:<hex>", NUL-terminated */
void al_oid_fmt(const struct al_oid *id, char out[AL_OID_STRLEN + 1]);
/* "sha256:<64 lowercase hex>" or the bare hex; AL_EINVAL otherwise. */
int al_oid_parse(const char *s, struct al_oid *id, struct al_error *err);

static inline bool al_oid_eq(const struct al_oid *a, const struct al_oid *b)
{
	return memcmp(a->b, b->b, AL_OID_LEN) == 0;
}
static inline int al_oid_cmp(const struct al_oid *a, const struct al_oid *b)
{
	return memcmp(a->b, b->b, AL_OID_LEN);
}
static inline bool al_oid_is_zero(const struct al_oid *id)
{
	static const struct al_oid zero;
	return al_oid_eq(id, &zero);
}

#endif
