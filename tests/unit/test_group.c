/* group commit (volume.c, group.h): commits of several processes made by
 * one leader in one transaction, each with its own outcome; a leader
 * killed after its commit (no request done twice), a requester killed
 * before its turn (its request not done), requests that are not ones, and
 * a queue that cannot be used (each commit alone, as before). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "airlock/cas.h"
#include "airlock/ledger.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "fixture.h"
#include "group.h"
#include "util.h"

static char home[64], meta[128], flag[128];

struct job {
	const char *path, *data;
	enum al_strategy strategy;
	int want;            /* al_project_commit's return */
	bool copy;           /* a conflict copy made */
	const char *merged;  /* the one file merge_lines merged */
	const char *message; /* NULL: the path */
};

/* A commit made in this process, straight onto the head. */
static struct al_oid commit_file(struct al_store *st, const char *path, const char *data)
{
	struct al_error err = { 0 };
	struct al_project_info p;
	struct al_commit_result res = { 0 };
	assert_int_equal(al_project_get(st, "p", &p, &err), 0);
	struct al_oid snap = put_file(st, &p.head, path, data);
	struct al_commit_opts o = { .strategy = AL_STRICT, .author = "t", .message = path };
	if (al_project_commit(st, "p", &p.head, &snap, &o, &res, &err) < 0)
		fail_msg("commit %s: %s", path, err.msg);
	al_commit_result_release(&res);
	return snap;
}

static void die_once(void)
{
	int fd = open(flag, O_CREAT | O_EXCL | O_WRONLY, 0600);
	if (fd >= 0)
		_exit(77); /* the first leader, after its commit, before any done word */
}

/* The child's commit of j onto base; its exit says whether the outcome
 * was j's: 0 as wanted, 1 not, 2 could not try. */
static int child(const struct al_oid *base, const struct job *j, bool die)
{
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (die)
		al_group__after_commit = die_once;
	if (al_store_open(home, "default", &st, &err) < 0)
		return 2;
	struct al_cas *cas = al_store_cas(st);
	struct al_edit ed = { .path = j->path,
			      .op = AL_EDIT_SET,
			      .entry = {
				      .type = AL_T_FILE, .mode = 0644, .size = strlen(j->data) } };
	struct al_oid snap;
	if (al_cas_begin(cas, &err) < 0 ||
	    al_cas_put(cas, j->data, strlen(j->data), &ed.entry.digest, &err) < 0 ||
	    al_manifest_edit(cas, base, &ed, 1, &snap, &err) < 0 || al_cas_commit(cas, &err) < 0)
		return 2;
	struct al_commit_opts o = { .strategy = j->strategy,
				    .author = "t",
				    .message = j->message ? j->message : j->path };
	struct al_commit_result res = { 0 };
	int r = al_project_commit(st, "p", base, &snap, &o, &res, &err);
	bool ok = r == j->want;
	if (!ok)
		fprintf(stderr, "%s: %d (%s), wanted %d\n", j->path, r, err.msg, j->want);
	if (r == AL_ECONFLICT)
		ok = ok && res.nconflicts == 1 && strcmp(res.conflicts[0].path, j->path) == 0 &&
		     res.conflicts[0].has_theirs &&
		     al_oid_eq(&res.conflicts[0].theirs.digest, &ed.entry.digest) &&
		     al_utf8_valid((const uint8_t *)err.msg, strlen(err.msg)) &&
		     (strlen(j->path) > 100 || strstr(err.msg, j->path));
	if (r == 0) {
		struct al_entry e;
		const char *where = j->path;
		ok = ok && res.seq > 1 && res.rebased;
		if (j->copy) {
			ok = ok && res.nconflicts == 1 && res.conflicts[0].copy_path;
			where = ok ? res.conflicts[0].copy_path : j->path;
		}
		ok = ok && al_manifest_lookup(cas, &res.head, where, &e, &err) == 0;
		if (!j->merged)
			ok = ok && res.nmerged == 0 && al_oid_eq(&e.digest, &ed.entry.digest);
		else
			ok = ok && res.nmerged == 1 && strcmp(res.merged[0], j->merged) == 0;
	}
	al_commit_result_release(&res);
	al_store_close(st);
	return ok ? 0 : 1;
}

static int64_t count(const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	int64_t n = -1;
	assert_int_equal(sqlite3_open_v2(meta, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	if (sqlite3_step(q) == SQLITE_ROW)
		n = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(db);
	return n;
}

static void exec_sql(const char *sql)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open(meta, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_close(db);
}

/* The children's requests posted while this process holds the leader's
 * lock, so that one leader takes them all; kill: the child killed before
 * the lock goes.  Each child's exit status in codes. */
static void held_batch(const struct al_oid *base, const struct job *jobs, size_t n, bool die,
		       int kill_one, int *codes)
{
	int hold = al_group__hold(meta);
	assert_true(hold >= 0);
	int before = al_group__posted(meta); /* a test's own, posted apart */
	pid_t pid[8];
	assert_true(n <= ARRAY_SIZE(pid));
	for (size_t i = 0; i < n; i++) {
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			close(hold); /* an OFD lock is the open file's: shared by a fork */
			_exit(child(base, &jobs[i], die));
		}
	}
	for (int tries = 0; al_group__posted(meta) < before + (int)n; tries++) {
		assert_true(tries < 20000); /* 20 s */
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	if (kill_one >= 0) {
		int status;
		kill(pid[kill_one], SIGKILL);
		assert_int_equal(waitpid(pid[kill_one], &status, 0), pid[kill_one]);
		codes[kill_one] = -1;
	}
	close(hold);
	for (size_t i = 0; i < n; i++) {
		int status;
		if ((int)i == kill_one)
			continue;
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
}

static int count_commit(void *ctx, const struct al_commit_info *c, struct al_error *err)
{
	(void)c;
	(void)err;
	(*(int *)ctx)++;
	return 0;
}

static int commits(struct al_store *st)
{
	struct al_error err = { 0 };
	int n = 0;
	assert_int_equal(al_project_log(st, "p", count_commit, &n, &err), 0);
	return n;
}

static bool in_head(struct al_store *st, const char *path)
{
	struct al_error err = { 0 };
	struct al_project_info p;
	struct al_entry e;
	assert_int_equal(al_project_get(st, "p", &p, &err), 0);
	return al_manifest_lookup(al_store_cas(st), &p.head, path, &e, &err) == 0;
}

static struct al_store *setup_home(const char *name)
{
	snprintf(home, sizeof(home), "/tmp/airlock-%s-XXXXXX", name);
	struct al_store *st = home_store(home);
	struct al_error err = { 0 };
	snprintf(meta, sizeof(meta), "%s/tenants/default/meta.db", home);
	snprintf(flag, sizeof(flag), "%s/died", home);
	assert_int_equal(al_project_create(st, "p", NULL, "t", NULL, &err), 0);
	return st;
}

static int refused(void *ctx, const struct al_ledger_entry *e, struct al_error *err)
{
	(void)err;
	if (memmem(e->json, e->len, "\"refused\"", 9) && memmem(e->json, e->len, "x.txt", 5))
		(*(int *)ctx)++;
	return 0;
}

/* One leader does four processes' commits in one transaction: each has
 * its own outcome (a rebase, a refusal, a conflict copy, a line merge),
 * and one checkpoint seals them.  The rows of the outcomes stay until a
 * later leader finds no process waiting for them. */
static void test_batch_outcomes(void **state)
{
	(void)state;
	struct al_error err = { 0 };
	struct al_store *st = setup_home("group");
	commit_file(st, "x.txt", "x0\n");
	struct al_oid base = commit_file(st, "m.txt", "1\n2\n3\n4\n5\n");
	commit_file(st, "x.txt", "parent\n");
	commit_file(st, "m.txt", "ONE\n2\n3\n4\n5\n");
	int before = commits(st);
	int64_t seals = count("SELECT count(*) FROM checkpoints");
	struct job jobs[] = {
		{ "a.txt", "a\n", AL_REBASE_IF_DISJOINT, 0, false, NULL, NULL },
		{ "x.txt", "b\n", AL_REBASE_IF_DISJOINT, AL_ECONFLICT, false, NULL, NULL },
		{ "x.txt", "c\n", AL_CONFLICT_COPY, 0, true, NULL, NULL },
		{ "m.txt", "1\n2\n3\n4\nFIVE\n", AL_MERGE_LINES, 0, false, "m.txt", NULL },
	};
	int codes[4];
	held_batch(&base, jobs, 4, false, -1, codes);
	for (size_t i = 0; i < 4; i++)
		if (codes[i] != 0)
			fail_msg("job %zu (%s): exit %d", i, jobs[i].path, codes[i]);
	assert_int_equal(commits(st), before + 3);
	assert_int_equal(count("SELECT count(*) FROM checkpoints"), seals + 1);
	int n = 0;
	assert_int_equal(al_ledger_foreach(st, &(struct al_ledger_query){ .kind = "conflict" },
					   refused, &n, &err),
			 0);
	assert_int_equal(n, 1); /* the refusal recorded, once */
	assert_true(in_head(st, "a.txt"));
	/* the three others' outcomes: rows until a leader finds them read */
	assert_int_equal(count("SELECT count(*) FROM grouped"), 3);
	commit_file(st, "z.txt", "z\n");
	assert_int_equal(count("SELECT count(*) FROM grouped"), 0);
	home_remove(home, st);
}

/* The leader killed after its commit, before any "done": the others'
 * outcomes are read from their rows by the next leader; nothing is done
 * twice.  n 2: the one left leads alone (no other request waits) and
 * must still find its own row. */
static void leader_killed(bool prune_fails, size_t n)
{
	struct al_store *st = setup_home("groupkill");
	struct al_oid base = commit_file(st, "0.txt", "0\n");
	commit_file(st, "1.txt", "1\n"); /* every request a rebase */
	int before = commits(st);
	struct job jobs[] = {
		{ "a.txt", "a\n", AL_REBASE_IF_DISJOINT, 0, false, NULL, NULL },
		{ "b.txt", "b\n", AL_REBASE_IF_DISJOINT, 0, false, NULL, NULL },
		{ "c.txt", "c\n", AL_REBASE_IF_DISJOINT, 0, false, NULL, NULL },
		{ "d.txt", "d\n", AL_REBASE_IF_DISJOINT, 0, false, NULL, NULL },
	};
	int codes[4], died = 0;
	assert_true(n <= 4);
	/* the next leader's batch fails after it found the rows (its prune):
	 * what the rows say still stands */
	if (prune_fails)
		exec_sql("CREATE TRIGGER nodel BEFORE DELETE ON grouped "
			 "BEGIN SELECT RAISE(ABORT, 'injected'); END");
	held_batch(&base, jobs, n, true, -1, codes);
	if (prune_fails)
		exec_sql("DROP TRIGGER nodel");
	for (size_t i = 0; i < n; i++) {
		if (codes[i] == 77)
			died++;
		else if (codes[i] != 0)
			fail_msg("job %zu (%s): exit %d", i, jobs[i].path, codes[i]);
	}
	assert_int_equal(died, 1);
	assert_int_equal(commits(st), before + (int)n); /* each once */
	for (size_t i = 0; i < n; i++)
		assert_true(in_head(st, jobs[i].path));
	commit_file(st, "z.txt", "z\n");
	assert_int_equal(count("SELECT count(*) FROM grouped"), 0);
	home_remove(home, st);
}

static void test_leader_killed_after_commit(void **state)
{
	(void)state;
	leader_killed(false, 4);
	leader_killed(true, 4);
	leader_killed(false, 2);
	leader_killed(true, 2);
}

/* A leader's own request whose error rolls the whole transaction back
 * (SQLite does so on a full disk, an I/O error; a trigger here): the
 * batch's objects go with it, and the next commit stores its own (a
 * batch left open, joined by the next group, stored nothing). */
static void test_own_request_breaks_batch(void **state)
{
	(void)state;
	struct al_error err = { 0 };
	struct al_store *st = setup_home("groupbreak");
	struct al_oid base = commit_file(st, "0.txt", "0\n");
	commit_file(st, "1.txt", "1\n");
	exec_sql("CREATE TRIGGER boom BEFORE INSERT ON commits WHEN NEW.message = 'boom' "
		 "BEGIN SELECT RAISE(ROLLBACK, 'injected'); END");
	struct al_oid snap = put_file(st, &base, "b.txt", "b\n");
	struct al_commit_opts o = { .strategy = AL_REBASE_IF_DISJOINT, .message = "boom" };
	struct al_commit_result res = { 0 };
	assert_true(al_project_commit(st, "p", &base, &snap, &o, &res, &err) < 0);
	if (!strstr(err.msg, "injected"))
		fail_msg("%s", err.msg);
	al_commit_result_release(&res);
	assert_true(al_store_idle(st));
	commit_file(st, "c.txt", "c\n");
	/* another handle reads the head whole */
	struct al_store *st2 = NULL;
	assert_int_equal(al_store_open(home, "default", &st2, &err), 0);
	assert_true(in_head(st2, "c.txt"));
	assert_false(in_head(st2, "b.txt"));
	al_store_close(st2);
	home_remove(home, st);
}

/* A long conflicting path of two-byte characters: its message is cut
 * at a character's end, and the batch's other commit lands. */
static void test_long_utf8_conflict(void **state)
{
	(void)state;
	struct al_store *st = setup_home("grouputf8");
	char path[256] = "a";
	for (int i = 0; i < 100; i++)
		memcpy(path + 1 + 2 * i, "\xc3\xa9", 3);
	struct al_oid base = commit_file(st, path, "0\n");
	commit_file(st, path, "head\n");
	struct job jobs[] = {
		{ path, "mine\n", AL_STRICT, AL_ECONFLICT, false, NULL, NULL },
		{ "y.txt", "y\n", AL_REBASE_IF_DISJOINT, 0, false, NULL, NULL },
	};
	int codes[2];
	held_batch(&base, jobs, 2, false, -1, codes);
	assert_int_equal(codes[0], 0);
	assert_int_equal(codes[1], 0);
	assert_true(in_head(st, "y.txt"));
	home_remove(home, st);
}

/* A request posted apart from the children (al_group__post): live or
 * not, listed in the queue's busy word or not.  Whether the children's
 * leader did it: 1, 0 not. */
static int posted_apart(bool live, bool listed)
{
	struct al_store *st = setup_home("groupapart");
	struct al_oid base = commit_file(st, "0.txt", "0\n");
	commit_file(st, "1.txt", "1\n");
	struct al_oid snap = put_file(st, &base, "apart.txt", "s\n");
	char b[AL_OID_STRLEN + 1], in[AL_OID_STRLEN + 1], req[512];
	al_oid_fmt(&base, b);
	al_oid_fmt(&snap, in);
	int n = snprintf(req, sizeof(req),
			 "{\"project\":\"p\",\"base\":\"%s\",\"incoming\":\"%s\","
			 "\"strategy\":\"rebase_if_disjoint\",\"group\":\"0123456789abcdef\","
			 "\"remote\":false}",
			 b, in);
	int fd = al_group__post(meta, req, (size_t)n, live, listed);
	assert_true(fd >= 0);
	struct job j = { "real.txt", "r\n", AL_REBASE_IF_DISJOINT, 0, false, NULL, NULL };
	int codes[1];
	held_batch(&base, &j, 1, false, -1, codes);
	assert_int_equal(codes[0], 0);
	assert_true(in_head(st, "real.txt"));
	int done = in_head(st, "apart.txt");
	assert_int_equal(count("SELECT count(*) FROM grouped"), done);
	close(fd);
	home_remove(home, st);
	return done;
}

/* A row whose request waits in a slot the busy word does not list (a
 * process of the version before, its row written by a leader of that
 * version) stays until its process is gone: rows are pruned by every
 * slot, not by the busy word's. */
static void test_row_of_unlisted_request(void **state)
{
	(void)state;
	struct al_store *st = setup_home("grouprow");
	commit_file(st, "0.txt", "0\n");
	const char req[] = "{\"not\":\"read\"}";
	int fd = al_group__post(meta, req, sizeof(req) - 1, true, false);
	assert_true(fd >= 0);
	char sql[128];
	snprintf(sql, sizeof(sql), "INSERT INTO grouped(token, result) VALUES (%lld, '{}')",
		 (long long)0x5ea1ed5ea1edll);
	exec_sql(sql);
	commit_file(st, "1.txt", "1\n"); /* a leader alone: it prunes */
	assert_int_equal(count("SELECT count(*) FROM grouped"), 1);
	close(fd); /* its process gone */
	commit_file(st, "2.txt", "2\n");
	assert_int_equal(count("SELECT count(*) FROM grouped"), 0);
	home_remove(home, st);
}

/* A slot's new owner has claimed it and not yet cleared the token a
 * dead owner left: the dead request is not done.  A request of a process
 * of the version before (live, not in the busy word) is left to it, to
 * lead itself; the same request listed is done, with its row. */
static void test_requests_posted_apart(void **state)
{
	(void)state;
	assert_int_equal(posted_apart(false, true), 0);
	assert_int_equal(posted_apart(true, false), 0);
	assert_int_equal(posted_apart(true, true), 1);
}

/* A commit made while the caller has an object batch open: refused, and
 * the caller's batch is left as it was (not ended by the leader). */
static void test_caller_batch_untouched(void **state)
{
	(void)state;
	struct al_error err = { 0 };
	struct al_store *st = setup_home("groupopen");
	struct al_oid base = commit_file(st, "0.txt", "0\n");
	commit_file(st, "1.txt", "1\n");
	struct al_oid snap = put_file(st, &base, "b.txt", "b\n"), mine;
	struct al_cas *cas = al_store_cas(st);
	assert_int_equal(al_cas_begin(cas, &err), 0);
	assert_int_equal(al_cas_put(cas, "mine", 4, &mine, &err), 0);
	struct al_commit_opts o = { .strategy = AL_REBASE_IF_DISJOINT };
	struct al_commit_result res = { 0 };
	assert_true(al_project_commit(st, "p", &base, &snap, &o, &res, &err) < 0);
	al_commit_result_release(&res);
	assert_int_equal(al_cas_commit(cas, &err), 0);
	assert_int_equal(al_cas_has(cas, &mine, &err), 1);
	assert_false(in_head(st, "b.txt"));
	home_remove(home, st);
}

/* A requester killed before any leader took its request: not done. */
static void test_requester_killed(void **state)
{
	(void)state;
	struct al_store *st = setup_home("groupreq");
	struct al_oid base = commit_file(st, "0.txt", "0\n");
	commit_file(st, "1.txt", "1\n");
	int before = commits(st);
	struct job jobs[] = {
		{ "gone.txt", "g\n", AL_REBASE_IF_DISJOINT, 0, false, NULL, NULL },
		{ "kept.txt", "k\n", AL_REBASE_IF_DISJOINT, 0, false, NULL, NULL },
	};
	int codes[2];
	held_batch(&base, jobs, 2, false, 0, codes);
	assert_int_equal(codes[1], 0);
	assert_int_equal(commits(st), before + 1);
	assert_false(in_head(st, "gone.txt"));
	assert_true(in_head(st, "kept.txt"));
	home_remove(home, st);
}

/* Posted bytes that are no request (not JSON, a bad id, an unknown
 * strategy): a leader leaves them to their process, which leads in turn;
 * the real commit beside them lands. */
static void test_not_requests(void **state)
{
	(void)state;
	struct al_error err = { 0 };
	struct al_store *st = setup_home("groupbad");
	struct al_oid base = commit_file(st, "0.txt", "0\n");
	commit_file(st, "1.txt", "1\n");
	int before = commits(st);
	static const char *bad[] = {
		"not json {",
		"{\"project\":\"p\",\"base\":\"sha256:zz\",\"incoming\":\"sha256:zz\","
		"\"strategy\":\"strict\",\"group\":\"g\"}",
		"{\"project\":\"p\",\"base\":\"x\",\"incoming\":\"y\",\"strategy\":\"yolo\","
		"\"group\":\"g\"}",
		"{\"project\":1}",
	};
	struct al_group *g[ARRAY_SIZE(bad)];
	struct al_group_map *map = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(al_group_join(&map, meta, bad[i], strlen(bad[i]), &g[i]), 0);
	struct job j = { "real.txt", "r\n", AL_REBASE_IF_DISJOINT, 0, false, NULL, NULL };
	int codes[1];
	held_batch(&base, &j, 1, false, -1, codes);
	assert_int_equal(codes[0], 0);
	assert_int_equal(commits(st), before + 1);
	assert_true(in_head(st, "real.txt"));
	/* still waiting, not done; each of them leads when its turn comes */
	assert_int_equal(al_group__posted(meta), (int)ARRAY_SIZE(bad));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(al_group_wait(g[i], &err), 0);
		al_group_leave(g[i]);
	}
	assert_int_equal(al_group__posted(meta), 0);
	assert_int_equal(count("SELECT count(*) FROM grouped"), 0);
	al_group_map_free(map);
	home_remove(home, st);
}

static int count_req(void *ctx, uint64_t token, const void *req, size_t len)
{
	(void)token;
	(void)req;
	(void)len;
	(*(int *)ctx)++;
	return 0;
}

/* A leader's own request is withdrawn when its turn ends, before it
 * leaves: the next leader, in the moment between, must not do it again
 * (a leader keeps no row of its own). */
static void test_leader_request_withdrawn(void **state)
{
	(void)state;
	struct al_error err = { 0 };
	struct al_store *st = setup_home("groupown");
	commit_file(st, "0.txt", "0\n"); /* meta.db made */
	struct al_group *a, *b;
	struct al_group_map *ma = NULL, *mb = NULL;
	assert_int_equal(al_group_join(&ma, meta, "{\"a\":1}", 7, &a), 0);
	assert_int_equal(al_group_wait(a, &err), 0); /* a leads */
	assert_int_equal(al_group_join(&mb, meta, "{\"b\":1}", 7, &b), 0);
	int n = 0;
	assert_int_equal(al_group_foreach(a, count_req, &n), 0);
	assert_int_equal(n, 1); /* b's */
	al_group_end(a);
	assert_int_equal(al_group_wait(b, &err), 0); /* b leads */
	n = 0;
	assert_int_equal(al_group_foreach(b, count_req, &n), 0);
	assert_int_equal(n, 0); /* a's is not there, though a has not left */
	al_group_leave(b);
	al_group_leave(a);
	assert_int_equal(al_group__posted(meta), 0);
	al_group_map_free(ma);
	al_group_map_free(mb);
	home_remove(home, st);
}

/* The queue's file deleted and made again while a store keeps its old
 * mapping: the next request is posted in the file others read. */
static void test_queue_file_replaced(void **state)
{
	(void)state;
	struct al_store *st = setup_home("groupnew");
	commit_file(st, "0.txt", "0\n");
	struct al_group *a;
	struct al_group_map *map = NULL;
	assert_int_equal(al_group_join(&map, meta, "{}", 2, &a), 0);
	assert_int_equal(al_group__posted(meta), 1);
	al_group_leave(a);
	sh("rm '%s-group'", meta);
	assert_int_equal(al_group_join(&map, meta, "{}", 2, &a), 0);
	assert_int_equal(al_group__posted(meta), 1); /* seen in the new file */
	al_group_leave(a);
	al_group_map_free(map);
	home_remove(home, st);
}

static int message_of(void *ctx, const struct al_commit_info *c, struct al_error *err)
{
	(void)err;
	if (c->message && strlen(c->message) == 6000)
		(*(int *)ctx)++;
	return 0;
}

/* No queue to use (the file a directory, a symlink; a request larger than
 * a slot): each commit is made alone, as before, and the symlink's target
 * is not touched. */
static void test_no_queue(void **state)
{
	(void)state;
	struct al_error err = { 0 };
	struct al_store *st = setup_home("groupnone");
	char path[200], target[200];
	snprintf(path, sizeof(path), "%s-group", meta);
	snprintf(target, sizeof(target), "%s/target", home);
	sh("rm -f '%s' && mkdir '%s'", path, path);
	commit_file(st, "a.txt", "a\n");
	sh("rmdir '%s' && echo keep > '%s' && ln -s '%s' '%s'", path, target, target, path);
	commit_file(st, "b.txt", "b\n");
	sh("test \"$(stat -c %%s '%s')\" = 5", target);
	sh("rm '%s'", path);
	/* too large for a slot */
	char *msg = malloc(6001);
	assert_non_null(msg);
	memset(msg, 'm', 6000);
	msg[6000] = 0;
	struct al_oid base = commit_file(st, "c.txt", "c\n");
	commit_file(st, "d.txt", "d\n");
	struct job j = { "e.txt", "e\n", AL_REBASE_IF_DISJOINT, 0, false, NULL, msg };
	assert_int_equal(child(&base, &j, false), 0);
	int n = 0;
	assert_int_equal(al_project_log(st, "p", message_of, &n, &err), 0);
	assert_int_equal(n, 1);
	free(msg);
	assert_true(in_head(st, "a.txt") && in_head(st, "b.txt") && in_head(st, "e.txt"));
	home_remove(home, st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_outcomes),
		cmocka_unit_test(test_leader_killed_after_commit),
		cmocka_unit_test(test_requester_killed),
		cmocka_unit_test(test_own_request_breaks_batch),
		cmocka_unit_test(test_caller_batch_untouched),
		cmocka_unit_test(test_long_utf8_conflict),
		cmocka_unit_test(test_requests_posted_apart),
		cmocka_unit_test(test_row_of_unlisted_request),
		cmocka_unit_test(test_not_requests),
		cmocka_unit_test(test_leader_request_withdrawn),
		cmocka_unit_test(test_queue_file_replaced),
		cmocka_unit_test(test_no_queue),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
