/* timeit: the wall time of one command, from its fork to its exit, in
 * microseconds: what bench/lib.sh's time_us and time_ms measure.  Timing a
 * command between two `date +%s%N` in the shell added date's own start
 * (about 1 ms here) to every figure, a fifth of a 5 ms goal.
 *   timeit CMD [ARG...]   (the command's output goes to /dev/null) */
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: timeit CMD [ARG...]\n");
		return 2;
	}
	long long t0 = now_ns();
	pid_t pid = fork();
	if (pid < 0) {
		perror("timeit: fork");
		return 1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		;
	long long t1 = now_ns();
	printf("%lld\n", (t1 - t0) / 1000);
	return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? 1 : 0;
}
