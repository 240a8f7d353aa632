/* probe: tries one thing a sandboxed command must not be able to do and
 * prints "ok" (it worked) or "denied <errno name>" — run inside airlock's
 * sandbox by tests/security.  Static: it runs in the busybox image. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <linux/keyctl.h>

static int report(long rc)
{
	if (rc >= 0) {
		puts("ok");
		return 0;
	}
	printf("denied %s\n", strerrorname_np(errno) ? strerrorname_np(errno) : "?");
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs("usage: probe mount|unshare|userns|setns|keyctl|bpf|perf|ptrace|uffd|io_uring|tiocsti|"
		      "i386|x32|kexec|module|reboot|clone-ns\n", stderr);
		return 2;
	}
	const char *w = argv[1];
	if (!strcmp(w, "mount"))
		return report(mount("none", "/tmp", "tmpfs", 0, NULL));
	if (!strcmp(w, "unshare"))
		return report(unshare(CLONE_NEWNS));
	if (!strcmp(w, "userns"))
		return report(unshare(CLONE_NEWUSER));
	if (!strcmp(w, "setns"))
		return report(setns(open("/proc/1/ns/mnt", O_RDONLY), 0));
	if (!strcmp(w, "keyctl"))
		return report(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
	if (!strcmp(w, "bpf"))
		return report(syscall(SYS_bpf, 0, NULL, 0));
	if (!strcmp(w, "perf"))
		return report(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
	if (!strcmp(w, "ptrace")) {
		pid_t c = fork();
		if (c == 0) {
			pause();
			_exit(0);
		}
		long rc = ptrace(PTRACE_ATTACH, c, NULL, NULL);
		int e = errno;
		kill(c, 9);
		waitpid(c, NULL, 0);
		errno = e;
		return report(rc);
	}
	if (!strcmp(w, "uffd"))
		return report(syscall(SYS_userfaultfd, 0));
	if (!strcmp(w, "io_uring"))
		return report(syscall(SYS_io_uring_setup, 1, NULL));
	if (!strcmp(w, "tiocsti")) {
		char c = 'x';
		int fd = open("/dev/tty", O_RDWR);
		return report(ioctl(fd >= 0 ? fd : 0, TIOCSTI, &c));
	}
	if (!strcmp(w, "i386")) {
		/* getpid through the 32-bit entry point (int 0x80, eax = 20) */
		long rc;
		__asm__ volatile("int $0x80" : "=a"(rc) : "a"(20) : "memory");
		if (rc < 0) {
			errno = (int)-rc;
			return report(-1);
		}
		return report(rc);
	}
	if (!strcmp(w, "x32"))
		return report(syscall(0x40000000 | 39 /* x32 getpid */));
	if (!strcmp(w, "kexec"))
		return report(syscall(SYS_kexec_load, 0, 0, NULL, 0));
	if (!strcmp(w, "module"))
		return report(syscall(SYS_finit_module, -1, "", 0));
	if (!strcmp(w, "reboot"))
		return report(syscall(SYS_reboot, 0xfee1dead, 672274793, 0x1234567, NULL));
	if (!strcmp(w, "clone-ns"))
		return report(syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, NULL, NULL, NULL, NULL) == 0 ? (_exit(0), 0) : -1);
	fprintf(stderr, "probe: unknown probe %s\n", w);
	return 2;
}
