/* Fuzz the ledger export reader and entry decoder (al_ledger_verify_file):
 * never crash, whatever the bytes. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "airlock/ledger.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("ledger", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		struct al_verify_report rep;
		al_ledger_verify_file(path, NULL, NULL, &rep, NULL);
	}
	close(fd);
	return 0;
}
