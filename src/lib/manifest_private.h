/* Private to the manifest module (node.c, import.c, walk.c, export.c,
 * edit.c): the entry order and the path buffer they share; and a bounded
 * al_manifest_changes for volume.c. */
#ifndef AL_MANIFEST_PRIVATE_H
#define AL_MANIFEST_PRIVATE_H

#include <stddef.h>

#include "airlock/error.h"
#include "airlock/manifest.h"

/* The order of names in a node: bytewise, a prefix first (node.c). */
int al_manifest__name_cmp(const char *a, size_t an, const char *b, size_t bn);

/* The path of the entry being visited, built as a walk descends (walk.c). */
struct al_manifest_path {
	char p[AL_PATH_MAX + 1];
	size_t len;
};
/* Append "/name" (or "name" at the top); *saved restores it.  AL_ELIMIT
 * beyond AL_PATH_MAX. */
int al_manifest__path_push(struct al_manifest_path *pb, const char *name, size_t n, size_t *saved,
			   struct al_error *err);
void al_manifest__path_pop(struct al_manifest_path *pb, size_t saved);
/* The path quoted for a message into out ("." at the top). */
const char *al_manifest__path_show(struct al_manifest_path *pb, char *out, size_t n);

/* al_manifest_changes, or AL_ELIMIT (nothing kept) once a and b differ in
 * more than max changes: for work worth doing only when it is small. */
int al_manifest__changes_max(struct al_cas *cas, const struct al_oid *a, const struct al_oid *b,
			     size_t max, struct al_changes *out, struct al_error *err);

#endif
