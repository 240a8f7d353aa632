/* seccomp: the filter compiled at build time is the one libseccomp
 * compiles now from the rules (a stale or wrong build fails here); and the
 * sealed copy of airlock-init every sandbox executes. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "sandbox_private.h"

static void test_build_time_filter_is_current(void **state)
{
	(void)state;
	struct al_error err = { 0 };
	struct sock_fprog built, now;
	assert_int_equal(al_seccomp__build(&built, &err), 0);
	assert_int_equal(al_seccomp__compile(&now, &err), 0);
	assert_true(now.len > 20); /* the deny list, clone flags, ioctls, families */
	assert_int_equal(built.len, now.len);
	assert_memory_equal(built.filter, now.filter, now.len * sizeof(struct sock_filter));
	/* the copy is the caller's: changing it leaves the next one intact */
	built.filter[0].k ^= 1;
	struct sock_fprog again;
	assert_int_equal(al_seccomp__build(&again, &err), 0);
	assert_memory_equal(again.filter, now.filter, now.len * sizeof(struct sock_filter));
	free(built.filter);
	free(again.filter);
	free(now.filter);
}

static void write_file(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(s, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void assert_content(int fd, const char *want)
{
	char buf[64] = { 0 };
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	assert_int_equal(n, (ssize_t)strlen(want));
	assert_string_equal(buf, want);
}

/* A stand-in for airlock-init at path (a mkstemp template): "version one",
 * opened for reading. */
static int source_file(char *path)
{
	int tmp = mkstemp(path);
	assert_true(tmp >= 0);
	close(tmp);
	write_file(path, "version one");
	int src = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(src >= 0);
	return src;
}

/* The copy is sealed (nothing can write, grow or shrink it), mode 0555,
 * close-on-exec, and each call's own (runs never share one). */
static void test_sealed_init(void **state)
{
	(void)state;
	struct al_error err = { 0 };
	char path[] = "/tmp/airlock-init-XXXXXX";
	int src = source_file(path);
	int a = al_sandbox__sealed_init(src, &err), b = al_sandbox__sealed_init(src, &err);
	assert_true(a >= 0 && b >= 0);
	assert_content(a, "version one");
	assert_content(b, "version one");
	struct stat sa, sb;
	assert_int_equal(fstat(a, &sa), 0);
	assert_int_equal(fstat(b, &sb), 0);
	assert_true(sa.st_ino != sb.st_ino); /* a copy each */
	assert_int_equal(sa.st_mode & 07777, 0555);
	assert_true(fcntl(a, F_GETFD) & FD_CLOEXEC);
	int seals = fcntl(a, F_GET_SEALS);
	assert_true(seals >= 0);
	assert_int_equal(seals & (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE),
			 F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
	/* not writable, even through a descriptor reopened for writing */
	assert_int_equal(pwrite(a, "X", 1, 0), -1);
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", a);
	int w = open(proc, O_WRONLY);
	if (w >= 0) { /* root may open it: the seal still refuses the write */
		assert_int_equal(write(w, "X", 1), -1);
		assert_int_equal(errno, EPERM);
		close(w);
	}
	assert_int_equal(ftruncate(a, 1), -1);
	assert_content(a, "version one");
	/* Linux 6.3 and later: the execute bits cannot be changed either */
	if (seals & 0x0020 /* F_SEAL_EXEC */)
		assert_int_equal(fchmod(a, 0444), -1);
	/* what one copy's holder does to its metadata does not reach another's */
	if (fchmod(a, 0) == 0) {
		assert_int_equal(fstat(b, &sb), 0);
		assert_int_equal(sb.st_mode & 07777, 0555);
	}
	/* the file changed: the next copy has the new bytes */
	write_file(path, "version two!");
	int c = al_sandbox__sealed_init(src, &err);
	assert_true(c >= 0);
	assert_content(c, "version two!");
	/* not a regular file */
	int dir = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(al_sandbox__sealed_init(dir, &err), AL_EINVAL);
	close(dir);
	close(a);
	close(b);
	close(c);
	close(src);
	unlink(path);
}

/* In the caller's new PID namespace: vm.memfd_noexec at level, then a
 * sealed copy.  0: made, 0555, its bytes; 10+: refused as the sandbox's
 * error naming the setting; other: what went wrong. */
static int noexec_case(int src, const char *level)
{
	FILE *f = fopen("/proc/sys/vm/memfd_noexec", "w");
	if (!f || fputs(level, f) < 0 || fclose(f) != 0)
		return 2;
	struct al_error err = { 0 };
	int m = al_sandbox__sealed_init(src, &err);
	if (m < 0)
		return m == AL_ESANDBOX && strstr(err.msg, "vm.memfd_noexec") ? 10 : 3;
	struct stat sb;
	char buf[16] = { 0 };
	if (fstat(m, &sb) < 0 || (sb.st_mode & 07777) != 0555)
		return 4;
	if (pread(m, buf, sizeof(buf) - 1, 0) != 11 || strcmp(buf, "version one"))
		return 5;
	return 0;
}

static int in_new_pidns(int src, const char *level)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* not root: a user namespace of our own makes us its */
		if (unshare(geteuid() ? CLONE_NEWUSER | CLONE_NEWPID : CLONE_NEWPID) < 0)
			_exit(1);
		pid_t inner = fork();
		if (inner == 0)
			_exit(noexec_case(src, level));
		int st;
		_exit(inner > 0 && waitpid(inner, &st, 0) == inner && WIFEXITED(st)
			      ? WEXITSTATUS(st)
			      : 1);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* vm.memfd_noexec (Linux 6.3, per PID namespace: a container runtime or a
 * hardened host sets it): at 1 a memory file not asked to be executable
 * comes 0666 with its execute bits sealed, and every run failed "seal
 * airlock-init"; the copy asks to be executable.  At 2 an executable
 * memory file is refused: the run fails saying which setting. */
static void test_sealed_init_memfd_noexec(void **state)
{
	(void)state;
	if (access("/proc/sys/vm/memfd_noexec", F_OK) < 0) {
		print_message("no vm.memfd_noexec on this kernel (before 6.3): nothing to set\n");
		return;
	}
	char path[] = "/tmp/airlock-init-XXXXXX";
	int src = source_file(path);
	assert_int_equal(in_new_pidns(src, "1"), 0);
	assert_int_equal(in_new_pidns(src, "2"), 10);
	close(src);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_time_filter_is_current),
		cmocka_unit_test(test_sealed_init),
		cmocka_unit_test(test_sealed_init_memfd_noexec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
