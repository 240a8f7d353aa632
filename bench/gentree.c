/* Generate the benchmark workspace, deterministically:
 *   gentree DIR [FILES] [LARGE]
 * FILES text files of 1-8 KiB (default 100000) spread over three levels of
 * directories (10 x 10 x N), plus LARGE files of 1-10 MiB (default 100),
 * half of them random bytes, half text.  With LARGE=0 and TINY=1 in the
 * environment the files are tiny (for the 1M-entry tree). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static const char *words[] = {
	"ledger",  "account", "balance", "invoice", "total",    "period", "close", "journal",
	"entry",   "debit",   "credit",  "vendor",  "customer", "amount", "tax",   "region",
	"quarter", "report",  "the",     "of",      "and",      "to",     "in",    "for",
	"on",      "with",    "by",      "from",    "2026",     "EUR",    "USD",
};

static size_t text(char *buf, size_t n)
{
	size_t o = 0;
	while (o < n) {
		const char *w = words[next() % (sizeof(words) / sizeof(words[0]))];
		size_t l = strlen(w);
		if (o + l + 1 > n)
			break;
		memcpy(buf + o, w, l);
		o += l;
		buf[o++] = (next() % 12 == 0) ? '\n' : (next() % 5 == 0 ? ',' : ' ');
	}
	while (o < n)
		buf[o++] = '\n';
	return n;
}

static void writefile(const char *path, const char *buf, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, buf, n) != (ssize_t)n) {
		perror(path);
		exit(1);
	}
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: gentree DIR [FILES] [LARGE]\n");
		return 2;
	}
	const char *root = argv[1];
	long files = argc > 2 ? atol(argv[2]) : 100000;
	long large = argc > 3 ? atol(argv[3]) : 100;
	int tiny = getenv("TINY") != NULL;
	if (mkdir(root, 0755) < 0 && errno != EEXIST) {
		perror(root);
		return 1;
	}
	long per_leaf = (files + 999) / 1000;
	char *buf = malloc(10 << 20);
	char path[4096];
	long made = 0;
	for (int a = 0; a < 10 && made < files; a++) {
		snprintf(path, sizeof(path), "%s/dept%d", root, a);
		mkdir(path, 0755);
		for (int b = 0; b < 10 && made < files; b++) {
			snprintf(path, sizeof(path), "%s/dept%d/year%d", root, a, 2016 + b);
			mkdir(path, 0755);
			for (int c = 0; c < 10 && made < files; c++) {
				snprintf(path, sizeof(path), "%s/dept%d/year%d/batch%d", root, a,
					 2016 + b, c);
				mkdir(path, 0755);
				for (long f = 0; f < per_leaf && made < files; f++, made++) {
					size_t n = tiny ? (size_t)(next() % 32)
							: 1024 + (size_t)(next() % (7 * 1024));
					if (tiny)
						n = (size_t)snprintf(buf, 64, "entry %ld\n", made);
					else
						text(buf, n);
					snprintf(path, sizeof(path),
						 "%s/dept%d/year%d/batch%d/doc%05ld.csv", root, a,
						 2016 + b, c, f);
					writefile(path, buf, n);
				}
			}
		}
	}
	snprintf(path, sizeof(path), "%s/large", root);
	mkdir(path, 0755);
	for (long i = 0; i < large; i++) {
		size_t n = (1u << 20) + (size_t)(next() % (9u << 20));
		if (i % 2) {
			for (size_t k = 0; k + 8 <= n; k += 8) {
				uint64_t v = next();
				memcpy(buf + k, &v, 8);
			}
		} else {
			text(buf, n);
		}
		snprintf(path, sizeof(path), "%s/large/blob%03ld.%s", root, i,
			 i % 2 ? "bin" : "txt");
		writefile(path, buf, n);
	}
	free(buf);
	return 0;
}
