/* Fuzz what a microVM guest hands back (vm_private.h): the result stream,
 * unpacked into a fresh directory, and the status line.  Never crash, and
 * never make anything outside the directory (its parent is checked empty
 * of anything else afterwards). */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vm_private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f)
{
	(void)s;
	(void)flag;
	(void)f;
	chmod(p, 0700);
	return remove(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct al_vm_status st;
	al_vm__status_parse((const char *)data, size, &st, NULL);
	char base[] = "/tmp/airlock-fuzz-vm-XXXXXX";
	if (!mkdtemp(base))
		return 0;
	char dir[64];
	snprintf(dir, sizeof(dir), "%s/t", base);
	int fd = memfd_create("stream", MFD_CLOEXEC);
	if (fd >= 0 && mkdir(dir, 0700) == 0 && write(fd, data, size) == (ssize_t)size) {
		int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct al_vm_caps caps = { .bytes = 1 << 20, .entries = 1000 };
		if (d >= 0) {
			al_vm__result_unpack(fd, size, d, &caps, NULL);
			close(d);
		}
	}
	if (fd >= 0)
		close(fd);
	/* only t/ beside it */
	int n = 0;
	DIR *b = opendir(base);
	struct dirent *e;
	while (b && (e = readdir(b)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (b)
		closedir(b);
	nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (n > 1)
		abort();
	return 0;
}
