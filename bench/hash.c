/* hash FILE: sha256 throughput of the store's hashing path (best of 3). */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "airlock/cas.h"
#include "util.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: hash FILE\n");
		return 2;
	}
	double best = 0;
	for (int i = 0; i < 3; i++) {
		int fd = open(argv[1], O_RDONLY);
		if (fd < 0) {
			perror(argv[1]);
			return 1;
		}
		struct al_oid d;
		uint64_t size = 0;
		uint64_t t0 = al_now_ns();
		if (al_cas_hash_fd(fd, &d, &size, NULL) < 0)
			return 1;
		double mbs = (double)size / 1e6 / ((double)(al_now_ns() - t0) / 1e9);
		if (mbs > best)
			best = mbs;
		close(fd);
	}
	printf("%.0f\n", best); /* MB/s */
	return 0;
}
