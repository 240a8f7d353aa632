/* Helpers shared by the subcommands: errors, JSON, progress, options,
 * dispatch.  Beneath it only term.c (terminal) and ids.c (names). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <getopt.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "airlock/manifest.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "cli.h"
#include "airlock/util.h"

int cli_error(struct cli *cli, const struct al_error *err)
{
	fprintf(stderr, "%s: %s\n", cli->prog, err->msg);
	if (cli->json) {
		json_t *e = json_pack("{s:{s:s,s:s}}", "error", "code", al_code_name(err->code),
				      "message", err->msg);
		cli_json_print(e);
	}
	return al_code_exit(err->code);
}

int cli_usage(struct cli *cli, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", cli->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see %s --help)\n", cli->prog);
	return 2;
}

int cli_open(struct cli *cli, struct al_store **out, struct al_error *err)
{
	*out = NULL;
	if (cli->server)
		return al_fail(err, AL_EUSAGE, 0,
			       "not available with --server (it works on a local home only)");
	return al_store_open(cli->home, cli->tenant, out, err);
}

int cli_json_print(json_t *v)
{
	if (!v)
		return 1;
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(v);
	if (!s)
		return 1;
	puts(s);
	free(s);
	return 0;
}

/* A run's output on the operator's terminal: the command is hostile, so on
 * a TTY only text, tabs, line ends and colour (SGR: ESC [ digits ; m) pass;
 * every other control (ESC sequences that set titles, write the clipboard,
 * move the cursor or query the terminal; C0, DEL, C1 encoded in UTF-8) is
 * shown as \xNN, as git shows a remote's sideband.  A sequence split
 * across writes is held (stream state, at most 32 bytes).  Not a TTY: the
 * bytes as they are. */
struct out_state {
	char held[32];
	size_t nheld;
};

static void esc_byte(FILE *f, unsigned char c)
{
	fprintf(f, "\\x%02x", c);
}

static bool sgr(const char *p, size_t n, size_t *len, bool *partial)
{
	/* p[0] is ESC */
	*partial = false;
	if (n < 2) {
		*partial = true;
		return false;
	}
	if (p[1] != '[')
		return false;
	for (size_t i = 2; i < n && i < 32; i++) {
		if (p[i] == 'm') {
			*len = i + 1;
			return true;
		}
		if (!((p[i] >= '0' && p[i] <= '9') || p[i] == ';'))
			return false;
	}
	*partial = n < 32;
	return false;
}

void cli_write_output(FILE *f, int stream, const void *data, size_t n)
{
	static struct out_state st[3];
	if (!isatty(fileno(f))) {
		fwrite(data, 1, n, f);
		return;
	}
	struct out_state *o = &st[stream & 1 ? 1 : 2];
	char buf[32 + 65536];
	const char *p = data;
	while (n || o->nheld) {
		size_t take = n < 65536 ? n : 65536;
		memcpy(buf, o->held, o->nheld);
		memcpy(buf + o->nheld, p, take);
		size_t len = o->nheld + take, i = 0;
		o->nheld = 0;
		p += take;
		n -= take;
		while (i < len) {
			unsigned char c = (unsigned char)buf[i];
			if (c == 0x1b) {
				size_t l;
				bool partial;
				if (sgr(buf + i, len - i, &l, &partial)) {
					fwrite(buf + i, 1, l, f);
					i += l;
					continue;
				}
				if (partial && !n) { /* the rest may come with the next write */
					o->nheld = len - i;
					memcpy(o->held, buf + i, o->nheld);
					break;
				}
				esc_byte(f, c);
				i++;
			} else if (c == 0xc2 && i + 1 == len && !n) {
				o->held[0] = (char)c; /* perhaps the start of a C1 control */
				o->nheld = 1;
				break;
			} else if (c == 0xc2 && i + 1 < len && (unsigned char)buf[i + 1] >= 0x80 &&
				   (unsigned char)buf[i + 1] <= 0x9f) {
				esc_byte(f, c);
				esc_byte(f, (unsigned char)buf[i + 1]);
				i += 2;
			} else if ((c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f) {
				esc_byte(f, c);
				i++;
			} else {
				fputc(c, f);
				i++;
			}
		}
		if (!n)
			break;
	}
}

static bool progress_off;

void cli_progress_init(struct cli_progress *p, const char *what, uint64_t total_bytes)
{
	memset(p, 0, sizeof(*p));
	p->what = what;
	p->start_ns = p->last_ns = al_now_ns();
	p->total_bytes = total_bytes;
	p->enabled = isatty(2) && !progress_off;
	const char *d = getenv("AIRLOCK_PROGRESS_DELAY_MS");
	char *end;
	unsigned long long ms = d && *d ? strtoull(d, &end, 10) : 1000;
	p->delay_ns = d && *d && !*end && ms <= 3600000ull ? ms * 1000000ull : 1000000000ull;
}

void cli_progress_quiet(bool quiet)
{
	progress_off = quiet;
}

static void human(uint64_t b, char *out, size_t n)
{
	const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int i = 0;
	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(out, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

void cli_progress_cb(void *ctx, uint64_t files, uint64_t bytes)
{
	struct cli_progress *p = ctx;
	if (!p->enabled)
		return;
	uint64_t now = al_now_ns();
	/* after the delay, then at most every 100 ms */
	if (now - p->start_ns < p->delay_ns || (p->shown && now - p->last_ns < 100000000ull))
		return;
	p->last_ns = now;
	p->shown = true;
	char hb[32], tb[32], nf[40] = "";
	human(bytes, hb, sizeof(hb));
	if (files)
		snprintf(nf, sizeof(nf), "%llu files, ", (unsigned long long)files);
	double secs = (double)(now - p->start_ns) / 1e9;
	if (p->total_bytes) {
		human(p->total_bytes, tb, sizeof(tb));
		fprintf(stderr, "\r%s: %s%s of %s (%.0f%%), %.0f MiB/s   ", p->what, nf, hb, tb,
			100.0 * (double)bytes / (double)p->total_bytes,
			(double)bytes / 1048576.0 / secs);
	} else if (p->time_only) {
		fprintf(stderr, "\r%s: %.1f s   ", p->what, secs);
	} else {
		fprintf(stderr, "\r%s: %s%s, %.0f MiB/s   ", p->what, nf, hb,
			(double)bytes / 1048576.0 / secs);
	}
}

static void *watch_main(void *arg)
{
	struct cli_watch *w = arg;
	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		off_t at = w->fd >= 0 ? lseek(w->fd, 0, SEEK_CUR) : 0;
		cli_progress_cb(&w->p, 0, at > 0 ? (uint64_t)at : 0);
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 100000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&w->cond, &w->lock, &until);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

void cli_watch_start(struct cli_watch *w, const char *what, int fd, uint64_t total)
{
	memset(w, 0, sizeof(*w));
	cli_progress_init(&w->p, what, total);
	w->fd = fd;
	w->p.time_only = fd < 0;
	if (!w->p.enabled)
		return;
	cli_progress_cb(&w->p, 0, 0); /* at once when there is no delay */
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->running = pthread_create(&w->thread, NULL, watch_main, w) == 0;
	if (!w->running) {
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
	}
}

void cli_watch_stop(struct cli_watch *w)
{
	if (!w->running)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	w->running = false;
	cli_progress_done(&w->p);
}

void cli_progress_done(struct cli_progress *p)
{
	if (p->shown)
		fprintf(stderr, "\r\033[K");
}

int cli_simple_opts(struct cli *cli, int argc, char **argv, const char *help, int nargs)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(help, stdout);
			return 0;
		}
		if (c != 'j')
			return cli_usage(cli, "bad option");
		cli->json = true;
	}
	if (argc - optind != nargs)
		return cli_usage(cli, "expected %d argument%s", nargs, nargs == 1 ? "" : "s");
	return -1;
}

int cli_create_opts(struct cli *cli, int argc, char **argv, const char *help, const char **from,
		    const char **author)
{
	static const struct option opts[] = {
		{ "from", required_argument, NULL, 'f' },
		{ "author", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	*from = *author = NULL;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': *from = optarg; break;
		case 'a': *author = optarg; break;
		case 'j': cli->json = true; break;
		case 'h': fputs(help, stdout); return 0;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (argc - optind != 1)
		return cli_usage(cli, "expected the project name");
	return -1;
}

int cli_commit_opts(struct cli *cli, int argc, char **argv, const char *help, int nargs,
		    struct cli_commit_flags *f)
{
	static const struct option opts[] = {
		{ "base", required_argument, NULL, 'b' },
		{ "strategy", required_argument, NULL, 's' },
		{ "message", required_argument, NULL, 'm' },
		{ "author", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *author = NULL;
	struct al_error err = { 0 };
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "hm:", opts, NULL)) != -1) {
		switch (c) {
		case 'b': f->base = optarg; break;
		case 'm': f->message = optarg; break;
		case 'a': author = optarg; break;
		case 'j': cli->json = true; break;
		case 's':
			if (al_strategy_parse(optarg, &f->strategy, &err) < 0)
				return cli_usage(cli, "%s", err.msg);
			break;
		case 'h': fputs(help, stdout); return 0;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (argc - optind != nargs)
		return cli_usage(cli, "expected %d arguments", nargs);
	if (!f->base)
		return cli_usage(cli,
				 "--base ID is required (the snapshot the change was made from)");
	static char base[AL_OID_STRLEN + 1];
	int rc = cli_id(cli, CLI_ID_SNAPSHOT, f->base, base, sizeof(base));
	if (rc)
		return rc;
	f->base = base;
	snprintf(cli->change_base, sizeof(cli->change_base), "%s", base);
	if (al_oid_parse(f->base, &f->base_id, &err) < 0)
		return cli_error(cli, &err);
	f->author = cli_author(author);
	return -1;
}

int cli_dispatch(struct cli *cli, const char *group, const struct cli_cmd *cmds, int argc,
		 char **argv)
{
	size_t n = 0;
	while (cmds[n].name)
		n++;
	if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
		FILE *f = argc < 1 ? stderr : stdout;
		fprintf(f, "usage: airlock %s SUBCOMMAND [ARGS]\n\nsubcommands:\n", group);
		for (size_t i = 0; i < n; i++)
			fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
		return argc < 1 ? 2 : 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(argv[0], cmds[i].name) == 0) {
			static char prog[64];
			snprintf(prog, sizeof(prog), "airlock %s %s", group, cmds[i].name);
			cli->prog = prog;
			return cmds[i].run(cli, argc, argv);
		}
	}
	return cli_usage(cli, "unknown %s subcommand '%s'", group, argv[0]);
}

int cli_import(struct al_store *st, const char *dir, struct al_oid *id, struct al_error *err)
{
	struct cli_progress prog;
	cli_progress_init(&prog, "import", 0);
	struct al_import_opts o = { .progress = cli_progress_cb, .progress_ctx = &prog };
	struct al_import_result res;
	int r = al_manifest_import(st, dir, &o, &res, err);
	cli_progress_done(&prog);
	if (r == 0)
		*id = res.id;
	return r;
}

int cli_local_only(struct cli *cli)
{
	fprintf(stderr, "%s: not available with --server (it works on a local home only)\n",
		cli->prog);
	return 2;
}

const char *cli_path_escape(const char *s, char *out, size_t n)
{
	size_t j = 0;
	static const char hex[] = "0123456789ABCDEF";
	for (; *s && j + 4 < n; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-._~:", c)) {
			out[j++] = (char)c;
		} else {
			out[j++] = '%';
			out[j++] = hex[c >> 4];
			out[j++] = hex[c & 15];
		}
	}
	out[j] = 0;
	return out;
}

int cli_read_small(const char *path, size_t max, char **out, size_t *n, struct al_error *err)
{
	*out = NULL;
	*n = 0;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return al_fail(err, errno == ENOENT ? AL_ENOTFOUND : AL_EIO, errno, "%s", path);
	char *buf = malloc(max + 2);
	if (!buf)
		return al_fail(err, AL_ENOMEM, ENOMEM, "%s", path);
	ssize_t got = al_read_full(fd, buf, max + 1);
	if (got < 0 || (size_t)got > max) {
		free(buf);
		return got < 0 ? al_fail(err, AL_EIO, errno, "%s", path)
			       : al_fail(err, AL_ELIMIT, 0, "%s: larger than %zu bytes", path, max);
	}
	buf[got] = 0;
	*out = buf;
	*n = (size_t)got;
	return 0;
}
