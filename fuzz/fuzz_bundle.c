/* Fuzz the DeltaBundle reader (archive, index, members): never crash, and
 * whatever verifies has a sorted, valid index. */
#include <stdint.h>
#include <stdlib.h>

#include "airlock/delta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct al_bundle b;
	if (al_bundle_read_mem(NULL, data, size, &b, NULL) == 0) {
		for (size_t i = 1; i < b.n; i++)
			if (al_path_cmp(b.entries[i - 1].path, b.entries[i].path) >= 0)
				abort();
		al_bundle_release(&b);
	}
	return 0;
}
