/* Names a person types where an id is asked: unique prefixes of run, draft
 * and snapshot ids, PROJECT (its head), PROJECT~N (N commits back) and @
 * (the current user's last run), and the short forms shown back.  Beneath
 * common.c: uses no other file of src/cli. */
#include <ctype.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "airlock/run.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "cli.h"
#include "airlock/util.h"

#define MAX_SHOWN 10

const char *cli_author(const char *given)
{
	if (given && *given)
		return given;
	const char *e = getenv("AIRLOCK_AUTHOR");
	if (e && *e)
		return e;
	struct passwd *pw = getpwuid(getuid());
	return pw ? pw->pw_name : "unknown";
}

static bool abbrev;

void cli_abbrev_setup(bool on)
{
	abbrev = on;
}

const char *cli_id_text(const char *id)
{
	return abbrev ? cli_short(id) : cli_esc(id, "-");
}

const char *cli_short(const char *id)
{
	static __thread char ring[8][16];
	static __thread unsigned next;
	if (!id)
		return "-";
	const char *hex = strncmp(id, "sha256:", 7) == 0 ? id + 7 : id;
	if (strlen(hex) <= 12)
		return hex;
	char *s = ring[next++ % 8];
	memcpy(s, hex, 12);
	s[12] = 0;
	return s;
}

static bool all_hex(const char *s)
{
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s) || isupper((unsigned char)*s))
			return false;
	return true;
}

struct found {
	const char *prefix; /* compared with the id, or (snapshots) its hex */
	size_t n;
	const char *author; /* for @ */
	int64_t best_created;
	char candidates[MAX_SHOWN][AL_OID_STRLEN + AL_NAME_MAX + 16];
	size_t count;
	char match[AL_OID_STRLEN + 1];
	struct al_store *st;
	unsigned kinds;
};

static void add(struct found *f, const char *id, const char *what)
{
	if (f->count < MAX_SHOWN)
		snprintf(f->candidates[f->count], sizeof(f->candidates[0]), "%s%s", id, what);
	if (!f->count)
		snprintf(f->match, sizeof(f->match), "%s", id);
	f->count++;
}

static int on_run(void *ctx, const struct al_run_info *r, struct al_error *err)
{
	(void)err;
	struct found *f = ctx;
	if (f->author) {
		json_error_t je;
		json_t *rec = r->record ? json_loads(r->record, 0, &je) : NULL;
		const char *a = json_string_value(json_object_get(rec, "author"));
		if (a && !strcmp(a, f->author) && r->created >= f->best_created) {
			f->best_created = r->created;
			snprintf(f->match, sizeof(f->match), "%s", r->id);
			f->count = 1;
		}
		json_decref(rec);
		return 0;
	}
	if (!strncmp(r->id, f->prefix, f->n)) {
		char what[AL_NAME_MAX + 16];
		snprintf(what, sizeof(what), " (run of %s)", r->project);
		add(f, r->id, what);
	}
	return 0;
}

static int on_draft(void *ctx, const struct al_draft_info *d, struct al_error *err)
{
	(void)err;
	struct found *f = ctx;
	if (!strncmp(d->id, f->prefix, f->n)) {
		char what[AL_NAME_MAX + 40];
		snprintf(what, sizeof(what), " (draft of %s, %s)", d->project, d->state);
		add(f, d->id, what);
	}
	return 0;
}

static int on_project(void *ctx, const struct al_project_info *p, struct al_error *err)
{
	struct found *f = ctx;
	struct al_error ignored = { 0 };
	(void)err;
	if (f->kinds & CLI_ID_RUN)
		al_run_foreach(f->st, p->name, on_run, f, &ignored);
	if ((f->kinds & CLI_ID_DRAFT) && !f->author)
		al_draft_foreach(f->st, p->name, on_draft, f, &ignored);
	return 0;
}

static int on_snapshot(void *ctx, const struct al_snapshot_info *s, struct al_error *err)
{
	(void)err;
	struct found *f = ctx;
	char id[AL_OID_STRLEN + 1];
	al_oid_fmt(&s->id, id);
	if (!strncmp(id + 7, f->prefix, f->n)) {
		for (size_t i = 0; i < f->count && i < MAX_SHOWN; i++)
			if (!strncmp(f->candidates[i], id, AL_OID_STRLEN))
				return 0; /* listed twice */
		add(f, id, " (snapshot)");
	}
	return 0;
}

struct back {
	int64_t want; /* entries from the end */
	struct al_oid ids[1024];
	size_t n;
};

static int on_commit(void *ctx, const struct al_commit_info *c, struct al_error *err)
{
	(void)err;
	struct back *b = ctx;
	b->ids[b->n++ % ARRAY_SIZE(b->ids)] = c->result;
	return 0;
}

/* PROJECT or PROJECT~N: 1 resolved (out), 0 not a project, <0 an error */
static int project_ref(struct cli *cli, struct al_store *st, const char *in, char *out,
		       size_t outsz)
{
	char name[AL_NAME_MAX + 1];
	const char *tilde = strrchr(in, '~');
	size_t len = tilde ? (size_t)(tilde - in) : strlen(in);
	if (len == 0 || len > AL_NAME_MAX)
		return 0;
	memcpy(name, in, len);
	name[len] = 0;
	struct al_project_info p;
	struct al_error err = { 0 };
	if (al_project_get(st, name, &p, &err) < 0)
		return 0;
	uint64_t back = 0;
	if (tilde && (al_parse_count(tilde + 1, 1000, &back, NULL) < 0 || !tilde[1])) {
		fprintf(stderr, "%s: '%s': expected PROJECT~N with N a count of commits (0-1000)\n",
			cli->prog, cli_esc(in, ""));
		return -2;
	}
	struct back *b = calloc(1, sizeof(*b));
	if (!b)
		return -1;
	int r = al_project_log(st, name, on_commit, b, &err);
	if (r == 0 && back >= b->n) {
		fprintf(stderr, "%s: %s has %zu commit%s; %s~%llu is before its first\n", cli->prog,
			name, b->n, b->n == 1 ? "" : "s", name, (unsigned long long)back);
		free(b);
		return -3;
	}
	if (r == 0) {
		char id[AL_OID_STRLEN + 1];
		al_oid_fmt(&b->ids[(b->n - 1 - back) % ARRAY_SIZE(b->ids)], id);
		snprintf(out, outsz, "%s", id);
	}
	free(b);
	return r < 0 ? -1 : 1;
}

int cli_id(struct cli *cli, unsigned kinds, const char *in, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s", in);
	if (cli->server || !in || !*in)
		return 0; /* the daemon takes full ids only */
	size_t len = strlen(in);
	bool at = !strcmp(in, "@");
	bool run_prefix = (kinds & CLI_ID_RUN) && in[0] == 'r' && len >= 4 && len < AL_RUN_ID_LEN &&
			  all_hex(in + 1);
	bool draft_prefix = (kinds & CLI_ID_DRAFT) && in[0] == 'd' && len >= 4 &&
			    len < AL_DRAFT_ID_LEN && all_hex(in + 1);
	const char *hex = !strncmp(in, "sha256:", 7) ? in + 7 : in;
	bool snap_prefix = (kinds & CLI_ID_SNAPSHOT) && strlen(hex) >= 4 && all_hex(hex);
	bool snap_ref = (kinds & CLI_ID_SNAPSHOT) && !snap_prefix && hex == in;
	if (!at && !run_prefix && !draft_prefix && !snap_prefix && !snap_ref)
		return 0;
	if (at && !(kinds & (CLI_ID_RUN | CLI_ID_DRAFT)))
		return 0;
	if (snap_prefix && strlen(hex) >= 64) {
		/* a whole id: nothing to look up (nor a store to open) */
		if (hex == in)
			snprintf(out, outsz, "sha256:%s", in);
		return 0;
	}
	struct al_store *st = NULL;
	struct al_error err = { 0 };
	if (al_store_open(cli->home, cli->tenant, &st, &err) < 0)
		return 0; /* the verb reports it */
	struct found *f = calloc(1, sizeof(*f));
	int rc = 0;
	if (!f) {
		al_store_close(st);
		return 1;
	}
	f->st = st;
	f->prefix = in;
	f->n = len;
	f->kinds = kinds;
	if (snap_ref) {
		int r = project_ref(cli, st, in, out, outsz);
		rc = r == -1 ? 1 : r < 0 ? 2 : 0;
		if (r != 0 || !(kinds & (CLI_ID_RUN | CLI_ID_DRAFT)))
			goto done;
	}
	if (at) {
		f->author = cli_author(NULL);
		f->best_created = INT64_MIN;
		f->kinds = CLI_ID_RUN;
		al_project_foreach(st, on_project, f, &err);
		if (!f->count) {
			fprintf(stderr, "%s: @ (the last run of %s): %s has no run\n", cli->prog,
				cli_esc(f->author, "?"), cli_esc(al_store_tenant(st), "?"));
			rc = al_code_exit(AL_ENOTFOUND);
			goto done;
		}
		if (kinds & CLI_ID_RUN) {
			snprintf(out, outsz, "%s", f->match);
		} else {
			struct al_run_info ri = { 0 };
			if (al_run_get(st, f->match, &ri, &err) == 0)
				snprintf(out, outsz, "%s", ri.draft);
			al_run_info_release(&ri);
		}
		goto done;
	}
	if (snap_prefix && strlen(hex) < 64) {
		f->prefix = hex;
		f->n = strlen(hex);
		al_store_snapshot_foreach(st, on_snapshot, f, &err);
	}
	if (run_prefix || draft_prefix)
		al_project_foreach(st, on_project, f, &err);
	if (!f->count && snap_prefix && hex == in && strlen(in) < 64 &&
	    project_ref(cli, st, in, out, outsz) == 1)
		goto done; /* a project whose name is hex */
	if (f->count == 1) {
		snprintf(out, outsz, "%s", f->match);
	} else if (f->count > 1) {
		fprintf(stderr, "%s: '%s' is ambiguous; it begins %zu ids:\n", cli->prog,
			cli_esc(in, ""), f->count);
		for (size_t i = 0; i < f->count && i < MAX_SHOWN; i++)
			fprintf(stderr, "  %s\n", cli_esc(f->candidates[i], "?"));
		if (f->count > MAX_SHOWN)
			fprintf(stderr, "  (and %zu more)\n", f->count - MAX_SHOWN);
		fprintf(stderr, "give more characters of the id\n");
		rc = 2;
	}
done:
	free(f);
	al_store_close(st);
	return rc;
}

int cli_id_check(struct cli *cli, unsigned kinds, const char *id)
{
	size_t n = strlen(id);
	if ((kinds & CLI_ID_RUN) && id[0] == 'r' && n == AL_RUN_ID_LEN && all_hex(id + 1))
		return 0;
	if ((kinds & CLI_ID_DRAFT) && id[0] == 'd' && n == AL_DRAFT_ID_LEN && all_hex(id + 1))
		return 0;
	char msg[300];
	snprintf(msg, sizeof(msg),
		 "not %s id: '%s' (expected %s, a unique prefix of one of at least 4 "
		 "characters, or @)",
		 kinds & CLI_ID_DRAFT ? "a draft or run" : "a run", cli_esc(id, ""),
		 kinds & CLI_ID_DRAFT ? "d… or r… with 13 lowercase hex digits"
				      : "r… with 13 lowercase hex digits");
	fprintf(stderr, "%s: %s\n", cli->prog, msg);
	if (cli->json) {
		json_t *e = json_pack("{s:{s:s,s:s}}", "error", "code", al_code_name(AL_EINVAL),
				      "message", msg);
		char *text = e ? json_dumps(e, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
		if (text)
			puts(text);
		free(text);
		json_decref(e);
	}
	return al_code_exit(AL_EINVAL);
}

char *cli_draft_path(char *path)
{
	char *p = path;
	while (p[0] == '.' && p[1] == '/')
		for (p += 2; *p == '/'; p++)
			;
	size_t n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = 0;
	return *p ? p : path;
}
