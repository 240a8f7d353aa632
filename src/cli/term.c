/* Output for people on a terminal: untrusted text made safe, colour (on a
 * TTY, off when piped or with NO_COLOR, forced with --color=always), the
 * pager for long output and times a person reads.  The bottom of the CLI:
 * uses no other file of src/cli. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "airlock/util.h"

static bool colour;
static pid_t pager_pid;

const char *cli_esc(const char *s, const char *dflt)
{
	static __thread char *ring[16];
	static __thread unsigned next;
	if (!s)
		return dflt;
	size_t n = strlen(s);
	if (al_text_safe(s, n) && !strchr(s, '\\'))
		return s;
	char **slot = &ring[next++ % ARRAY_SIZE(ring)];
	free(*slot);
	size_t cap = n > (SIZE_MAX - 1) / 4 ? 0 : n * 4 + 1;
	*slot = cap ? malloc(cap) : NULL;
	if (!*slot)
		return "?";
	al_quote(s, n, *slot, cap);
	return *slot;
}

int cli_color_setup(const char *when)
{
	if (!when || !strcmp(when, "auto")) {
		const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
		colour = isatty(1) && !(nc && *nc) && !(term && !strcmp(term, "dumb"));
	} else if (!strcmp(when, "always")) {
		colour = true;
	} else if (!strcmp(when, "never")) {
		colour = false;
	} else {
		return -1;
	}
	return 0;
}

const char *cli_color(const char *sgr)
{
	return colour ? sgr : "";
}

const char *cli_state_color(const char *state)
{
	if (!colour || !state)
		return "";
	if (!strcmp(state, "open"))
		return CLI_YELLOW;
	if (!strcmp(state, "applied") || !strcmp(state, "ok") || !strcmp(state, "A"))
		return CLI_GREEN;
	if (!strcmp(state, "rejected") || !strcmp(state, "blocked") || !strcmp(state, "D") ||
	    !strcmp(state, "failed") || !strcmp(state, "violated"))
		return CLI_RED;
	if (!strcmp(state, "M") || !strcmp(state, "partially_applied"))
		return CLI_YELLOW;
	return "";
}

static void pager_wait(void)
{
	if (pager_pid <= 0)
		return;
	fflush(stdout);
	fclose(stdout);
	int status;
	while (waitpid(pager_pid, &status, 0) < 0 && errno == EINTR)
		;
	pager_pid = 0;
}

void cli_pager(struct cli *cli)
{
	if (cli->json || pager_pid || !isatty(1))
		return;
	const char *cmd = getenv("AIRLOCK_PAGER");
	if (!cmd)
		cmd = cli->pager;
	if (!cmd)
		cmd = getenv("PAGER");
	if (!cmd)
		cmd = "less -FRX";
	if (!*cmd || !strcmp(cmd, "cat"))
		return;
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return;
	}
	if (pid == 0) {
		dup2(fds[0], 0);
		if (!getenv("LESS"))
			setenv("LESS", "FRX", 1);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		fprintf(stderr, "%s: cannot run the pager '%s'\n", cli->prog, cmd);
		_exit(127);
	}
	dup2(fds[1], 1);
	close(fds[0]);
	close(fds[1]);
	signal(SIGPIPE, SIG_IGN); /* a pager quit early: writes fail, we finish */
	pager_pid = pid;
	atexit(pager_wait);
}

const char *cli_when(int64_t secs, int64_t now)
{
	static __thread char ring[4][80];
	static __thread unsigned next;
	char *out = ring[next++ % 4];
	if (secs <= 0)
		return "-";
	time_t t = (time_t)secs;
	struct tm tm;
	char day[40];
	if (!gmtime_r(&t, &tm) || !strftime(day, sizeof(day), "%Y-%m-%d %H:%M UTC", &tm))
		return "-";
	if (now <= 0)
		now = (int64_t)time(NULL);
	int64_t d = now - secs;
	const char *unit = "s";
	int64_t v = d < 0 ? -d : d;
	if (v >= 2 * 86400) {
		v /= 86400;
		unit = " days";
	} else if (v >= 2 * 3600) {
		v /= 3600;
		unit = " h";
	} else if (v >= 60) {
		v /= 60;
		unit = " min";
	}
	if (d < 0)
		snprintf(out, 80, "%s, in %lld%s", day, (long long)v, unit);
	else if (d < 60)
		snprintf(out, 80, "%s, less than a minute ago", day);
	else
		snprintf(out, 80, "%s, %lld%s ago", day, (long long)v, unit);
	return out;
}
