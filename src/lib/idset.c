/* idset: a set of digests (idset.h). */
#include <stdlib.h>
#include <string.h>

#include "idset.h"

static size_t slot_of(const struct al_oid *d, size_t cap)
{
	uint64_t h;
	memcpy(&h, d->b, sizeof(h)); /* digests are uniformly distributed */
	return (size_t)(h & (cap - 1));
}

bool al_idset_has(const struct al_idset *s, const struct al_oid *d)
{
	if (!s->cap)
		return false;
	for (size_t j = slot_of(d, s->cap); s->used[j]; j = (j + 1) & (s->cap - 1))
		if (al_oid_eq(&s->slot[j], d))
			return true;
	return false;
}

int al_idset_add(struct al_idset *s, const struct al_oid *d)
{
	if (2 * (s->n + 1) > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		struct al_oid *slot = calloc(cap, sizeof(*slot));
		bool *used = calloc(cap, 1);
		if (!slot || !used) {
			free(slot);
			free(used);
			return -1;
		}
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->used[i])
				continue;
			size_t j = slot_of(&s->slot[i], cap);
			while (used[j])
				j = (j + 1) & (cap - 1);
			used[j] = true;
			slot[j] = s->slot[i];
		}
		free(s->slot);
		free(s->used);
		s->slot = slot;
		s->used = used;
		s->cap = cap;
	}
	size_t j = slot_of(d, s->cap);
	for (; s->used[j]; j = (j + 1) & (s->cap - 1))
		if (al_oid_eq(&s->slot[j], d))
			return 0;
	s->used[j] = true;
	s->slot[j] = *d;
	s->n++;
	return 1;
}

void al_idset_release(struct al_idset *s)
{
	free(s->slot);
	free(s->used);
	memset(s, 0, sizeof(*s));
}
