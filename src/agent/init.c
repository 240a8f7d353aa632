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
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

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
		execvp(argv[first], argv + first);
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
