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
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <linux/keyctl.h>
#include <linux/netlink.h>
#include <signal.h>
#include <stdlib.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

/* a pty pair of the sandbox's own devpts: the terminal ioctls are tried on
 * its slave, so the answer is the filter's, not "no terminal here" */
static int own_pty(void)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
		return -1;
	return open(ptsname(m), O_RDWR | O_NOCTTY);
}

static void segv(int sig)
{
	(void)sig;
	/* int 0x80 without IA32 emulation: the kernel has no such entry point */
	static const char msg[] = "unavailable SIGSEGV\n";
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

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
		fputs("usage: probe "
		      "mount|unshare|userns|setns|keyctl|bpf|perf|ptrace|uffd|io_uring|tiocsti|"
		      "i386|x32|kexec|module|reboot|clone-ns|vsock|packet|netlink-audit|netlink-"
		      "route|unix|bind-unix PATH|inet6|"
		      "tiocsetd|tioccons|tty|tty-attack|personality-rie|personality-query|proc1-"
		      "mem|groups\n",
		      stderr);
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
		return report(
			syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
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
		signal(SIGSEGV, segv);
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
		return report(syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, NULL, NULL, NULL, NULL) ==
					      0
				      ? (_exit(0), 0)
				      : -1);
	if (!strcmp(w, "vsock"))
		return report(socket(AF_VSOCK, SOCK_STREAM, 0));
	if (!strcmp(w, "packet"))
		return report(socket(AF_PACKET, SOCK_RAW, 0));
	if (!strcmp(w, "netlink-audit"))
		return report(socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT));
	if (!strcmp(w, "netlink-route"))
		return report(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
	if (!strcmp(w, "unix")) {
		int sv[2];
		return report(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	}
	if (!strcmp(w, "bind-unix") && argc > 2) { /* a socket file at argv[2] */
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", argv[2]);
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		return report(s < 0 ? s : bind(s, (struct sockaddr *)&a, sizeof(a)));
	}
	if (!strcmp(w, "inet6"))
		return report(socket(AF_INET6, SOCK_STREAM, 0));
	if (!strcmp(w, "tiocsetd")) {
		int s = own_pty(), ldisc = 0; /* N_TTY: a no-op, if it were allowed */
		if (s < 0)
			return report(-1);
		return report(ioctl(s, TIOCSETD, &ldisc));
	}
	if (!strcmp(w, "tioccons")) {
		int s = own_pty();
		if (s < 0)
			return report(-1);
		return report(ioctl(s, TIOCCONS));
	}
	if (!strcmp(w, "tty"))
		return report(open("/dev/tty", O_RDWR));
	if (!strcmp(w, "tty-attack")) {
		/* what a command that reached the operator's terminal would do:
		 * take the foreground, read what is typed, write escapes, and
		 * switch the line discipline so the shell prints nothing */
		int fd = open("/dev/tty", O_RDWR);
		if (fd < 0)
			return report(-1);
		signal(SIGTTOU, SIG_IGN);
		signal(SIGTTIN, SIG_IGN);
		tcsetpgrp(fd, getpgrp());
		char line[256] = "";
		struct timeval tv = { 2, 0 };
		fd_set rs;
		FD_ZERO(&rs);
		FD_SET(fd, &rs);
		if (select(fd + 1, &rs, NULL, NULL, &tv) > 0) {
			ssize_t n = read(fd, line, sizeof(line) - 1);
			line[n > 0 ? n : 0] = 0;
		}
		printf("read: %s\n", line);
		if (write(fd, "\033[2Jpwned", 10) < 0)
			perror("write");
		int ldisc = 2; /* N_MOUSE: nothing reaches the shell any more */
		ioctl(fd, TIOCSETD, &ldisc);
		return 0;
	}
	if (!strcmp(w, "personality-rie"))
		return report(personality(READ_IMPLIES_EXEC));
	if (!strcmp(w, "personality-query"))
		return report(personality(0xffffffff));
	if (!strcmp(w, "proc1-mem"))
		return report(open("/proc/1/mem", O_RDWR));
	if (!strcmp(w, "groups")) {
		gid_t g[64];
		int n = getgroups(64, g);
		printf("%d\n", n);
		return n == 0 ? 0 : 1;
	}
	fprintf(stderr, "probe: unknown probe %s\n", w);
	return 2;
}
