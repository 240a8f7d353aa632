/* airlock-init: PID 1 of a sandbox.
 *
 *   airlock-init [--] CMD [ARG...]
 *
 * Starts CMD, forwards SIGTERM/SIGINT/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 to it,
 * reaps every orphan, and when CMD exits kills everything else left in the
 * sandbox (as PID 1 of its PID namespace: kill(-1)) and exits with CMD's
 * status (128 + signal if it was killed; 127 if it could not be started).
 * Linked statically: it runs inside images
 * that have no C library of ours.  Outside a PID namespace (tests) it is a
 * child subreaper and kills CMD's process group instead of everything. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

/* file run, and when the kernel will not (ENOEXEC: a script without a #!
 * line) run by /bin/sh, as POSIX's execvp does (glibc's does; musl's,
 * which this is linked with, does not).  Returns on failure. */
static void exec_one(const char *file, char **argv)
{
	execve(file, argv, environ);
	if (errno != ENOEXEC)
		return;
	size_t n = 0;
	while (argv[n])
		n++;
	char **sh = calloc(n + 2, sizeof(*sh));
	if (!sh)
		return;
	sh[0] = "sh";
	sh[1] = (char *)file;
	memcpy(sh + 2, argv + 1, n * sizeof(*sh)); /* argv[1..n-1] and the NULL */
	execve("/bin/sh", sh, environ);
	free(sh);
	errno = ENOEXEC;
}

/* execvp: a name without '/' is looked up in PATH (unset: /bin:/usr/bin;
 * an empty element is the working directory); EACCES is reported if some
 * candidate had it and none ran, as glibc does. */
static void exec_cmd(char **argv)
{
	const char *file = argv[0];
	if (!*file) {
		errno = ENOENT;
		return;
	}
	if (strchr(file, '/')) {
		exec_one(file, argv);
		return;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	int eacces = 0;
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		int dlen = (int)(end - p);
		char buf[PATH_MAX];
		/* an empty element is "." */
		int n = snprintf(buf, sizeof(buf), "%.*s/%s", dlen ? dlen : 1, dlen ? p : ".",
				 file);
		if (n > 0 && (size_t)n < sizeof(buf)) {
			exec_one(buf, argv);
			if (errno == EACCES)
				eacces = 1;
			else if (errno != ENOENT && errno != ENOTDIR && errno != ENAMETOOLONG)
				return; /* found, but it cannot run: say why */
		}
		if (!*end)
			break;
		p = end;
	}
	errno = eacces ? EACCES : ENOENT;
}

static int usage(void)
{
	fputs("usage: airlock-init [--] CMD [ARG...]\n\n"
	      "PID 1 of an airlock sandbox: runs CMD, forwards signals to it, reaps\n"
	      "orphans, kills what is left when CMD exits, and exits with its status.\n",
	      stderr);
	return 2;
}

int main(int argc, char **argv)
{
	/* First: the command runs as the same uid, and /proc/1/mem of a
	 * dumpable PID 1 would open read-write for it (it could patch init).
	 * The command itself, once exec'ed, is dumpable again. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	int first = 1;
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--"))
		first = 2;
	if (first >= argc)
		return usage();
	int pid1 = getpid() == 1;
	if (!pid1)
		prctl(PR_SET_CHILD_SUBREAPER, 1);
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&set, forwarded[i]);
	sigprocmask(SIG_BLOCK, &set, &old);

	pid_t child = fork();
	if (child < 0) {
		perror("airlock-init: fork");
		return 127;
	}
	if (child == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		setpgid(0, 0);
		exec_cmd(argv + first);
		int e = errno;
		fprintf(stderr, "airlock-init: %s: %s\n", argv[first], strerror(e));
		_exit(e == ENOENT ? 127 : 126);
	}
	setpgid(child, child);

	int status = 0;
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);
		if (sig < 0)
			continue;
		if (sig != SIGCHLD) {
			kill(child, sig);
			continue;
		}
		int done = 0, st;
		pid_t p;
		while ((p = waitpid(-1, &st, WNOHANG)) > 0)
			if (p == child) {
				status = st;
				done = 1;
			}
		if (done)
			break;
	}
	/* CMD is gone: nothing it started may outlive it */
	if (pid1)
		kill(-1, SIGKILL);
	else
		kill(-child, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
