/* Standalone driver: run a libFuzzer target over files and directories of
 * inputs (the corpus), so `make check` replays it without libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(2);
	}
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	size_t r;
	while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 1;
}

int main(int argc, char **argv)
{
	long count = 0;
	for (int i = 1; i < argc; i++) {
		struct stat s;
		if (stat(argv[i], &s) < 0) {
			perror(argv[i]);
			return 2;
		}
		if (!S_ISDIR(s.st_mode)) {
			count += run_file(argv[i]);
			continue;
		}
		DIR *d = opendir(argv[i]);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			char p[4096];
			snprintf(p, sizeof(p), "%s/%s", argv[i], de->d_name);
			count += run_file(p);
		}
		if (d)
			closedir(d);
	}
	printf("%ld inputs replayed\n", count);
	return count > 0 ? 0 : 1;
}
