/* volume HOME: figures of the volume layer through the real store.
 *  - commit of 10 changed files on a 1M-file snapshot (head == base, and a
 *    rebase of 10 other changes), and their diff;
 *  - accept_selected of 10 paths out of a 1,000-change draft, 100k files;
 *  - a hunk-level accept: 10 of the 1,000 hunks of a 100,000-line file (and
 *    its review, which diffs the same file), then merge_lines of another
 *    draft's 1,000 hunks of it onto the head that accept moved;
 *  - 8 writer processes committing disjoint paths with rebase_if_disjoint:
 *    commits/s, then the log replayed to prove no update was lost; in
 *    ROUNDS rounds, each beside its peer (8 processes of bare SQLite
 *    transactions), so each round's ratio is of two runs side by side: the
 *    shared disk's speed swings 2-5x between runs minutes apart.  The two
 *    take turns going first, each after a syncfs of the home. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "airlock/review.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "util.h"

#include "synth.h"

static int changed(int a, int b, long f, int variant)
{
	if (variant == 1)
		return f == 7 && b == 3 && a % 10 == 0; /* 10 files */
	if (variant == 2)
		return f == 8 && b == 4 && a % 10 == 1; /* 10 other files */
	return f == 7 && (a * 100 + b) % 10 == 0;       /* 1,000 files */
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double s[16];
	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static double lowest(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

static double highest(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

/* CPU time (user and system) of the children waited for so far: the
 * writers' own, a steadier figure than their wall time on a shared disk */
static double children_cpu_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static double ms_since(uint64_t t0)
{
	return (double)(al_now_ns() - t0) / 1e6;
}

static void die(const char *what, const struct al_error *err)
{
	fprintf(stderr, "%s: %s\n", what, err ? err->msg : "failed");
	exit(1);
}

static void build(struct al_store *st, long per_dir, int variant, struct al_oid *out)
{
	struct al_error err = { 0 };
	struct al_cas *cas = al_store_cas(st);
	if (al_cas_begin(cas, &err) < 0 || synth_build(cas, per_dir, variant, changed, out) < 0 ||
	    al_cas_commit(cas, &err) < 0)
		die("build", &err);
}

static int count_changes(void *ctx, const struct al_change *c, struct al_error *err)
{
	(void)c;
	(void)err;
	(*(long *)ctx)++;
	return 0;
}

struct chain {
	struct al_oid prev;
	long n, broken;
};

static int check_chain(void *ctx, const struct al_commit_info *c, struct al_error *err)
{
	(void)err;
	struct chain *ch = ctx;
	if (ch->n && !al_oid_eq(&c->parent, &ch->prev))
		ch->broken++;
	ch->prev = c->result;
	ch->n++;
	return 0;
}

/* n commits to project, each of a file of its own; *first_ms: how long
 * the process's first al_project_commit took (NULL: not told) */
static int writer(const char *home, const char *project, int round, int id, int n, double *first_ms)
{
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	prctl(PR_SET_NAME, "writer"); /* for a profile: perf script --comms writer */
	if (al_store_open(home, "default", &st, &err) < 0)
		die("open", &err);
	struct al_cas *cas = al_store_cas(st);
	int failed = 0;
	for (int k = 0; k < n; k++) {
		struct al_project_info p;
		if (al_project_get(st, project, &p, &err) < 0)
			die("head", &err);
		char path[64], data[64], dir[16];
		snprintf(dir, sizeof(dir), "r%dw%d", round, id);
		snprintf(path, sizeof(path), "r%dw%d/%04d.txt", round, id, k);
		int len = snprintf(data, sizeof(data), "writer %d commit %d\n", id, k);
		struct al_entry f = { .type = AL_T_FILE, .mode = 0644, .size = (uint64_t)len };
		struct al_entry d = { .type = AL_T_DIR, .mode = 0755 };
		struct al_edit ed[2] = { { .path = dir, .op = AL_EDIT_SET, .entry = d },
					 { .path = path, .op = AL_EDIT_SET, .entry = f } };
		struct al_oid snap;
		if (al_cas_begin(cas, &err) < 0 ||
		    al_cas_put(cas, data, (size_t)len, &ed[1].entry.digest, &err) < 0 ||
		    al_manifest_edit(cas, &p.head, ed, 2, &snap, &err) < 0 ||
		    al_cas_commit(cas, &err) < 0)
			die("edit", &err);
		struct al_commit_opts o = { .strategy = AL_REBASE_IF_DISJOINT,
					    .author = "bench",
					    .message = path };
		struct al_commit_result res = { 0 };
		uint64_t t0 = al_now_ns();
		if (al_project_commit(st, project, &p.head, &snap, &o, &res, &err) < 0) {
			fprintf(stderr, "writer %d: %s\n", id, err.msg);
			failed++;
		}
		if (k == 0 && first_ms)
			*first_ms = ms_since(t0);
		al_commit_result_release(&res);
	}
	al_store_close(st);
	return failed;
}

/* The peer of the writers: the same number of processes, each doing n
 * one-row transactions on one SQLite database in WAL mode with
 * synchronous=FULL, on the same disk, waiting on its busy timeout. */
static int sqlite_writer(const char *path, int id, int n)
{
	sqlite3 *db;
	prctl(PR_SET_NAME, "peer");
	if (sqlite3_open(path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", NULL, NULL,
			 NULL) != SQLITE_OK)
		return 1;
	sqlite3_busy_timeout(db, 120000);
	int failed = 0;
	for (int k = 0; k < n; k++) {
		char sql[128];
		snprintf(sql, sizeof(sql),
			 "INSERT INTO t(w, k, v) VALUES (%d, %d, 'writer commit')", id, k);
		failed += sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK;
	}
	sqlite3_close(db);
	return failed;
}

static double sqlite_writers(const char *home, int nw, int nc)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/peer.db", home);
	unlink(path);
	sqlite3 *db;
	if (sqlite3_open(path, &db) != SQLITE_OK ||
	    sqlite3_exec(db,
			 "PRAGMA journal_mode=WAL; CREATE TABLE t(w INTEGER, k INTEGER, v TEXT, "
			 "PRIMARY KEY (w, k))",
			 NULL, NULL, NULL) != SQLITE_OK)
		die("peer", &(struct al_error){ .msg = "sqlite" });
	sqlite3_close(db);
	uint64_t t0 = al_now_ns();
	for (int i = 0; i < nw; i++) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(sqlite_writer(path, i, nc) ? 1 : 0);
	}
	int status, failed = 0;
	while (wait(&status) > 0)
		failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	if (failed)
		die("peer", &(struct al_error){ .msg = "a writer failed" });
	return nw * nc / ((double)(al_now_ns() - t0) / 1e9);
}

/* A 100,000-line ledger (about 5 MB); variant v rewrites every 100th line
 * from line v (1,000 hunks), 0 none. */
static struct al_oid ledger_tree(struct al_cas *cas, int v)
{
	struct al_error err = { 0 };
	size_t cap = 100000 * 64, len = 0;
	char *buf = malloc(cap);
	if (!buf)
		die("ledger", &(struct al_error){ .msg = "out of memory" });
	for (int i = 0; i < 100000; i++)
		len += (size_t)snprintf(buf + len, cap - len,
					"%06d,2026-11-%02d,ledger entry %06d,%s,%d.%02d\n", i,
					1 + i % 28, i, v && i % 100 == v ? "REVISED" : "posted",
					i * 7 % 1000, i % 100);
	struct al_edit ed = { .path = "ledger.csv",
			      .op = AL_EDIT_SET,
			      .entry = { .type = AL_T_FILE, .mode = 0644, .size = len } };
	struct al_oid empty, out;
	uint8_t *enc = NULL;
	size_t enclen = 0;
	if (al_node_encode(NULL, 0, &enc, &enclen, &err) < 0 || al_cas_begin(cas, &err) < 0 ||
	    al_cas_put(cas, enc, enclen, &empty, &err) < 0 ||
	    al_cas_put(cas, buf, len, &ed.entry.digest, &err) < 0 ||
	    al_manifest_edit(cas, &empty, &ed, 1, &out, &err) < 0 || al_cas_commit(cas, &err) < 0)
		die("ledger", &err);
	free(enc);
	free(buf);
	return out;
}

static int count_hunks(void *ctx, const struct al_review_file *f, struct al_error *err)
{
	(void)err;
	*(size_t *)ctx += f->nhunks;
	return 0;
}

static void hunks_bench(struct al_store *st)
{
	struct al_error err = { 0 };
	struct al_cas *cas = al_store_cas(st);
	struct al_oid base = ledger_tree(cas, 0), mine = ledger_tree(cas, 10),
		      other = ledger_tree(cas, 60);
	struct al_draft_info d, d2;
	if (al_project_create(st, "ledger", &base, "bench", NULL, &err) < 0 ||
	    al_draft_create(st, "ledger", &mine, "bench", &d, &err) < 0 ||
	    al_draft_create(st, "ledger", &other, "bench", &d2, &err) < 0)
		die("ledger draft", &err);
	size_t nh = 0;
	uint64_t t0 = al_now_ns();
	if (al_review(cas, &d.base, &d.head, true, count_hunks, &nh, &err) < 0)
		die("review", &err);
	double review_ms = ms_since(t0);
	unsigned take[10];
	for (unsigned i = 0; i < 10; i++)
		take[i] = 1 + i * 100;
	struct al_apply_path ap = { "ledger.csv", take, 10 };
	struct al_commit_opts o = { .strategy = AL_REBASE_IF_DISJOINT,
				    .author = "bench",
				    .message = "10 hunks" };
	struct al_commit_result res = { 0 };
	t0 = al_now_ns();
	if (al_draft_apply_sel(st, d.id, AL_ACCEPT_SELECTED, &ap, 1, &o, &res, &err) < 0 ||
	    res.partial != 1)
		die("hunk accept", &err);
	double hunk_ms = ms_since(t0);
	al_commit_result_release(&res);
	o.strategy = AL_MERGE_LINES;
	t0 = al_now_ns();
	if (al_draft_apply(st, d2.id, AL_ACCEPT_ALL, NULL, 0, &o, &res, &err) < 0 ||
	    res.nmerged != 1)
		die("merge_lines", &err);
	double merge_ms = ms_since(t0);
	al_commit_result_release(&res);
	printf("review_100000_line_file_%zu_hunks_ms %.3f\n", nh, review_ms);
	printf("accept_10_of_%zu_hunks_100000_line_file_ms %.3f\n", nh, hunk_ms);
	printf("merge_lines_1000_hunks_onto_10_100000_line_file_ms %.3f\n", merge_ms);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: volume HOME [FILES] [WRITERS] [COMMITS_EACH] [ROUNDS]\n");
		return 2;
	}
	const char *home = argv[1];
	long files = argc > 2 ? atol(argv[2]) : 1000000;
	int nw = argc > 3 ? atoi(argv[3]) : 8, nc = argc > 4 ? atoi(argv[4]) : 50;
	int rounds = argc > 5 ? atoi(argv[5]) : 3;
	if (rounds < 1 || rounds > 16 || nw < 1 || nc < 1) {
		fprintf(stderr, "volume: 1-16 rounds, at least one writer and one commit\n");
		return 2;
	}
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (al_home_init(home, &err) < 0 || al_store_open(home, "default", &st, &err) < 0)
		die("open", &err);
	struct al_cas *cas = al_store_cas(st);

	/* 1. commit and diff on the large snapshot */
	struct al_oid a, b, c;
	build(st, files / 10000, 0, &a);
	build(st, files / 10000, 1, &b);
	build(st, files / 10000, 2, &c);
	if (al_project_create(st, "big", &a, "bench", NULL, &err) < 0)
		die("create", &err);
	struct al_commit_opts o = { .strategy = AL_STRICT,
				    .author = "bench",
				    .message = "10 files" };
	struct al_commit_result res = { 0 };
	uint64_t t0 = al_now_ns();
	if (al_project_commit(st, "big", &a, &b, &o, &res, &err) < 0)
		die("commit", &err);
	double commit_ms = ms_since(t0);
	long nchanges = 0;
	t0 = al_now_ns();
	if (al_manifest_diff(cas, &a, &b, count_changes, &nchanges, &err) < 0)
		die("diff", &err);
	double diff_ms = ms_since(t0);
	o.strategy = AL_REBASE_IF_DISJOINT;
	t0 = al_now_ns();
	if (al_project_commit(st, "big", &a, &c, &o, &res, &err) < 0 || !res.rebased)
		die("rebase", &err);
	double rebase_ms = ms_since(t0);
	printf("commit_10_of_%ld_ms %.3f\n", files, commit_ms);
	printf("diff_10_of_%ld_ms %.3f (%ld changes)\n", files, diff_ms, nchanges);
	printf("rebase_commit_10_of_%ld_ms %.3f\n", files, rebase_ms);

	/* 2. accept_selected: 10 of 1,000 changes on a 100k-file project */
	struct al_oid p0, p1;
	build(st, 10, 0, &p0);
	build(st, 10, 3, &p1);
	struct al_draft_info d;
	if (al_project_create(st, "mid", &p0, "bench", NULL, &err) < 0 ||
	    al_draft_create(st, "mid", &p1, "bench", &d, &err) < 0)
		die("draft", &err);
	long dchanges = 0;
	al_manifest_diff(cas, &p0, &p1, count_changes, &dchanges, &err);
	char sel[10][64];
	const char *paths[10];
	for (int i = 0; i < 10; i++) {
		snprintf(sel[i], sizeof(sel[i]), "d%03d/s%03d/f000007.txt", i * 7,
			 (i * 30) % 100 / 10 * 10);
		paths[i] = sel[i];
	}
	t0 = al_now_ns();
	if (al_draft_apply(st, d.id, AL_ACCEPT_SELECTED, paths, 10, &o, &res, &err) < 0)
		die("accept_selected", &err);
	double sel_ms = ms_since(t0);
	printf("accept_selected_10_of_%ld_changes_100k_ms %.3f\n", dchanges, sel_ms);
	hunks_bench(st);

	/* a process's first commit (a CLI commit's), with the store open:
	 * what its first use of the group commit's queue costs */
	if (al_project_create(st, "lone", &p0, "bench", NULL, &err) < 0)
		die("create", &err);
	al_store_close(st);
	double *first = mmap(NULL, 16 * sizeof(double), PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (first == MAP_FAILED)
		die("mmap", NULL);
	for (int i = 0; i < 11; i++) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(writer(home, "lone", 0, i, 1, &first[i]) ? 1 : 0);
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			die("first commit", NULL);
	}
	printf("first_commit_of_a_process_ms %.3f (median of 11; lowest %.3f)\n", median(first, 11),
	       lowest(first, 11));

	/* 3. concurrent writers, each round beside its peer.  Each starts on
	 * a settled disk (syncfs: what the steps before wrote, `git add`'s
	 * gigabyte among them in bench/run.sh, is not still being written back
	 * under the one that runs first), and the two take turns going first,
	 * so neither is the one that always meets what the other left. */
	double wr[16], pr[16], rr[16], cpu[16], pcpu[16];
	int failed = 0;
	int homefd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (homefd < 0)
		die("open the home", NULL);
	for (int round = 0; round < rounds; round++) {
		bool peer_first = round % 2 == 1;
		for (int turn = 0; turn < 2; turn++) {
			syncfs(homefd);
			double c0 = children_cpu_ms();
			if (peer_first == (turn == 0)) { /* the peer's turn */
				pr[round] = sqlite_writers(home, nw, nc);
				pcpu[round] = (children_cpu_ms() - c0) / (nw * nc);
				continue;
			}
			t0 = al_now_ns();
			for (int i = 0; i < nw; i++) {
				pid_t pid = fork();
				if (pid == 0)
					_exit(writer(home, "mid", round, i, nc, NULL) ? 1 : 0);
			}
			int status;
			while (wait(&status) > 0)
				failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
			wr[round] = nw * nc / ((double)(al_now_ns() - t0) / 1e9);
			cpu[round] = (children_cpu_ms() - c0) / (nw * nc);
		}
		rr[round] = wr[round] / pr[round];
		printf("round %d: writers %.1f commits/s (%.3f ms of CPU each), peer %.1f tx/s, "
		       "ratio %.3f\n",
		       round + 1, wr[round], cpu[round], pr[round], rr[round]);
	}
	close(homefd);
	printf("writers %d x %d commits: %.1f commits/s (median of %d rounds), %d writers failed\n",
	       nw, nc, median(wr, rounds), rounds, failed);
	printf("sqlite_writers %d x %d transactions: %.1f tx/s (the peer, median)\n", nw, nc,
	       median(pr, rounds));
	printf("writers_ratio %.3f (median of %d rounds; min %.3f, max %.3f)\n", median(rr, rounds),
	       rounds, lowest(rr, rounds), highest(rr, rounds));
	printf("writers_cpu_per_commit_ms %.3f (median of %d rounds; the peer %.3f per "
	       "transaction)\n",
	       median(cpu, rounds), rounds, median(pcpu, rounds));

	/* replay the log: an unbroken chain, every commit present, every file in the head */
	if (al_store_open(home, "default", &st, &err) < 0)
		die("open", &err);
	struct chain ch = { 0 };
	struct al_project_info p;
	if (al_project_log(st, "mid", check_chain, &ch, &err) < 0 ||
	    al_project_get(st, "mid", &p, &err) < 0)
		die("log", &err);
	long found = 0;
	for (int round = 0; round < rounds; round++)
		for (int i = 0; i < nw; i++)
			for (int k = 0; k < nc; k++) {
				char path[64];
				struct al_entry e;
				snprintf(path, sizeof(path), "r%dw%d/%04d.txt", round, i, k);
				found += al_manifest_lookup(al_store_cas(st), &p.head, path, &e,
							    NULL) == 0;
			}
	printf("log replay: %ld commits (expected %d), %ld chain breaks, last result %s head; %ld "
	       "of %d files in head\n",
	       ch.n, 2 + rounds * nw * nc, ch.broken,
	       al_oid_eq(&ch.prev, &p.head) ? "==" : "!=", found, rounds * nw * nc);
	al_store_close(st);
	return failed || ch.broken || found != rounds * nw * nc;
}
