/* ledger HOME: append rate batched (one transaction and one signed
 * checkpoint per batch, full sync) and one entry per transaction; offline
 * verify rate of a 100k-entry export; proof sizes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/ledger.h"
#include "airlock/store.h"
#include "util.h"

static void die(const char *what, const struct al_error *err)
{
	fprintf(stderr, "%s: %s\n", what, err->msg);
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: ledger HOME [ENTRIES]\n");
		return 2;
	}
	long total = argc > 2 ? atol(argv[2]) : 100000;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (al_home_init(argv[1], &err) < 0 || al_store_open(argv[1], "default", &st, &err) < 0)
		die("open", &err);
	enum { BATCH = 1000 };
	static char buf[BATCH][160];
	const char *data[BATCH];
	for (int i = 0; i < BATCH; i++) {
		snprintf(buf[i], sizeof(buf[i]),
			 "{\"project\":\"fin\",\"result\":\"sha256:%064d\",\"strategy\":\"rebase_"
			 "if_disjoint\",\"i\":%d}",
			 i, i);
		data[i] = buf[i];
	}
	uint64_t t0 = al_now_ns();
	int nb = 20;
	for (int b = 0; b < nb; b++)
		if (al_ledger_append_batch(st, "commit", "gbench", data, BATCH, &err) < 0)
			die("append", &err);
	double batched = nb * BATCH / ((double)(al_now_ns() - t0) / 1e9);
	t0 = al_now_ns();
	int ns = 300;
	for (int i = 0; i < ns; i++)
		if (al_ledger_append_batch(st, "commit", "gbench", data + (i % BATCH), 1, &err) < 0)
			die("append", &err);
	double single = ns / ((double)(al_now_ns() - t0) / 1e9);
	long have = nb * BATCH + ns;
	while (have < total) {
		long n = total - have < BATCH ? total - have : BATCH;
		if (al_ledger_append_batch(st, "commit", "gbench", data, (size_t)n, &err) < 0)
			die("append", &err);
		have += n;
	}
	char path[4200];
	snprintf(path, sizeof(path), "%s/export.ledger", argv[1]);
	uint64_t n = 0;
	t0 = al_now_ns();
	if (al_ledger_export(st, 0, path, &n, &err) < 0)
		die("export", &err);
	double export_s = (double)(al_now_ns() - t0) / 1e9;
	uint8_t key[AL_ED25519_KEY_LEN];
	if (al_ledger_pubkey(st, key, NULL, 0, &err) < 0)
		die("key", &err);
	struct al_verify_report rep;
	t0 = al_now_ns();
	if (al_ledger_verify_file(path, key, NULL, &rep, &err) < 0)
		die("verify", &err);
	double verify_s = (double)(al_now_ns() - t0) / 1e9;
	uint8_t(*p)[AL_DIGEST_LEN] = NULL;
	size_t np = 0, nc = 0;
	if (al_ledger_inclusion(st, n / 3, n, &p, &np, &err) < 0)
		die("proof", &err);
	free(p);
	if (al_ledger_consistency(st, n / 3, n, &p, &nc, &err) < 0)
		die("proof", &err);
	free(p);
	printf("appends_batched_per_s %.0f (batches of %d, one checkpoint each)\n", batched, BATCH);
	printf("appends_single_per_s %.0f (one entry and one checkpoint per transaction)\n",
	       single);
	printf("export_entries %llu in %.2f s\n", (unsigned long long)n, export_s);
	printf("verify_entries_per_s %.0f (%llu entries, %llu checkpoints)\n",
	       (double)rep.entries / verify_s, (unsigned long long)rep.entries,
	       (unsigned long long)rep.checkpoints);
	int log2n = 0;
	while ((1ull << log2n) < n)
		log2n++;
	printf("proof_hashes inclusion %zu consistency %zu for n=%llu (ceil log2 n = %d)\n", np, nc,
	       (unsigned long long)n, log2n);
	al_store_close(st);
	return 0;
}
