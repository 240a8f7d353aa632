/* Fuzz the tree-node decoder: it must never crash, and whatever it accepts
 * must be canonical (re-encoding gives back exactly the input), or two byte
 * strings could name one tree. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct al_node *node = NULL;
	if (al_node_decode(data, size, &node, NULL) != 0)
		return 0;
	uint8_t *enc = NULL;
	size_t len = 0;
	if (al_node_encode(node->entries, node->n, &enc, &len, NULL) != 0 || len != size ||
	    memcmp(enc, data, size) != 0)
		abort();
	free(enc);
	al_node_free(node);
	return 0;
}
