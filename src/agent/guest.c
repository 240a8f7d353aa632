/* airlock-guest: PID 1 of a microVM run, the guest agent (the "vm"
 * sandbox backend, src/lib/sandbox/vm.c; docs/architecture.md, "Sandbox
 * (microVM backend)"; the streams: docs/formats.md, "microVM streams").
 *
 * It is /init of the guest's initramfs.  It loads the modules the guest
 * needs, finds its devices by serial and port name, reads the run from the
 * control disk, unpacks the image and the workspace (raw tar streams on
 * read-only disks) into tmpfs lower layers, mounts the same overlays as the
 * namespace backend (the upper layers and /tmp on one tmpfs capped by the
 * disk and file limits), confines memory, processes and CPU with a cgroup
 * of the guest, and runs the command as the image's root with every
 * capability dropped and no_new_privs.  The command's stdout and stderr
 * are virtio-serial ports.  When it ends (or on the host's cancel, or at
 * its wall-clock limit) everything else is killed, the workspace's upper
 * layer is written as a tar stream to the result disk, one status line
 * goes to the control port, and the guest powers off.
 *
 * The host trusts nothing this program writes: the status line and the
 * result stream are parsed strictly there.  Linked statically, no
 * allocation of note after start: it must work in a bare initramfs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "vm_mux.h"

#define CONTROL_MAX (8u << 20)
#define NSTR_MAX 8192

extern char **environ;

static int ctl = -1; /* the control port: status out, cancel in */

static void status_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void status_line(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	if (ctl >= 0) {
		const char *p = buf;
		while (n > 0) {
			ssize_t w = write(ctl, p, (size_t)n);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			p += w;
			n -= (int)w;
		}
	} else {
		fputs(buf, stderr);
	}
}

static _Noreturn void power_off(void)
{
	if (ctl >= 0)
		fsync(ctl);
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

/* A failure of the agent itself: the host records "failed: sandbox". */
static _Noreturn void die(const char *stage)
{
	status_line("airlock-status 1 error stage=%s errno=%d\n", stage, errno);
	power_off();
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = strlen(val);
	int r = write(fd, val, n) == (ssize_t)n ? 0 : -1;
	close(fd);
	return r;
}

static int read_small(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t r = read(fd, buf, n - 1);
	close(fd);
	if (r < 0)
		return -1;
	buf[r] = 0;
	while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == ' '))
		buf[--r] = 0;
	return 0;
}

static void load_modules(void)
{
	char order[512], path[128];
	if (read_small("/lib/modules/order", order, sizeof(order)) < 0)
		die("modules");
	for (char *save = NULL, *m = strtok_r(order, "\n", &save); m;
	     m = strtok_r(NULL, "\n", &save)) {
		snprintf(path, sizeof(path), "/lib/modules/%s.ko", m);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST))
			die("modules");
		close(fd);
	}
}

/* /dev/vdX by its virtio-blk serial; ports by name: they appear once
 * virtio-mmio has probed, asynchronously. */
struct devs {
	char image[32], workspace[32], control[32], result[32];
	char out[32], err[32], ctl[32];
	char relay[32]; /* only when the run has egress or integrations */
};

static int find_devs(struct devs *d)
{
	DIR *b = opendir("/sys/block");
	if (b) {
		struct dirent *e;
		while ((e = readdir(b))) {
			char p[300], s[64];
			if (strncmp(e->d_name, "vd", 2))
				continue;
			snprintf(p, sizeof(p), "/sys/block/%s/serial", e->d_name);
			if (read_small(p, s, sizeof(s)) < 0)
				continue;
			char *dst = !strcmp(s, "image")       ? d->image
				    : !strcmp(s, "workspace") ? d->workspace
				    : !strcmp(s, "control")   ? d->control
				    : !strcmp(s, "result")    ? d->result
							      : NULL;
			if (dst)
				snprintf(dst, 32, "/dev/%.20s", e->d_name);
		}
		closedir(b);
	}
	DIR *v = opendir("/sys/class/virtio-ports");
	if (v) {
		struct dirent *e;
		while ((e = readdir(v))) {
			char p[300], s[64];
			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/name", e->d_name);
			if (read_small(p, s, sizeof(s)) < 0)
				continue;
			char *dst = !strcmp(s, "stdout")   ? d->out
				    : !strcmp(s, "stderr") ? d->err
				    : !strcmp(s, "ctl")    ? d->ctl
				    : !strcmp(s, "relay")  ? d->relay
							   : NULL;
			if (dst)
				snprintf(dst, 32, "/dev/%.20s", e->d_name);
		}
		closedir(v);
	}
	struct stat st;
	const char *all[] = {
		d->image, d->workspace, d->control, d->result, d->out, d->err, d->ctl
	};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!all[i][0] || stat(all[i], &st) < 0)
			return -1;
	return 0;
}

/* ---- the control disk --------------------------------------------------------- */

struct run {
	char *argv[NSTR_MAX + 1];
	char *envp[NSTR_MAX + 1];
	struct {
		char *name, *data;
		size_t len;
	} files[64];
	size_t nfiles;
	unsigned long long timeout_ms, disk, files_max, pids, memory, cpus_milli;
	unsigned long long relay; /* 1: the egress proxy, 2: integrations (bits) */
};

static char *ctl_buf;
static size_t ctl_len, ctl_off;

static char *next_str(void)
{
	char *s = ctl_buf + ctl_off;
	char *z = memchr(s, 0, ctl_len - ctl_off);
	if (!z)
		die("control");
	ctl_off = (size_t)(z - ctl_buf) + 1;
	return s;
}

static unsigned long long next_num(void)
{
	char *s = next_str(), *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno)
		die("control");
	return v;
}

static void read_control(const char *dev, struct run *r)
{
	int fd = open(dev, O_RDONLY | O_CLOEXEC);
	uint64_t size = 0;
	if (fd < 0 || ioctl(fd, BLKGETSIZE64, &size) < 0 || size > CONTROL_MAX)
		die("control");
	ctl_buf = malloc(size + 1);
	if (!ctl_buf)
		die("control");
	while (ctl_len < size) {
		ssize_t n = read(fd, ctl_buf + ctl_len, size - ctl_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		ctl_len += (size_t)n;
	}
	close(fd);
	ctl_buf[ctl_len] = 0;
	if (strcmp(next_str(), "airlock-vm-control 1"))
		die("control");
	size_t nargv = 0, nenv = 0;
	for (;;) {
		char *tag = next_str();
		if (!strcmp(tag, "end"))
			break;
		if (!strcmp(tag, "arg") && nargv < NSTR_MAX)
			r->argv[nargv++] = next_str();
		else if (!strcmp(tag, "env") && nenv < NSTR_MAX)
			r->envp[nenv++] = next_str();
		else if (!strcmp(tag, "file") && r->nfiles < 64) {
			r->files[r->nfiles].name = next_str();
			size_t len = (size_t)next_num();
			if (len > ctl_len - ctl_off)
				die("control");
			r->files[r->nfiles].data = ctl_buf + ctl_off;
			r->files[r->nfiles].len = len;
			ctl_off += len;
			r->nfiles++;
		} else if (!strcmp(tag, "timeout_ms"))
			r->timeout_ms = next_num();
		else if (!strcmp(tag, "disk"))
			r->disk = next_num();
		else if (!strcmp(tag, "files"))
			r->files_max = next_num();
		else if (!strcmp(tag, "pids"))
			r->pids = next_num();
		else if (!strcmp(tag, "memory"))
			r->memory = next_num();
		else if (!strcmp(tag, "cpus_milli"))
			r->cpus_milli = next_num();
		else if (!strcmp(tag, "relay") && (r->relay = next_num()) < 4)
			;
		else
			die("control");
	}
	if (!nargv)
		die("control");
}

/* ---- setting up ------------------------------------------------------------------ */

static void mkdirs(const char *path, mode_t mode)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		die("mkdir");
}

static void untar(const char *dev, const char *dir)
{
	mkdirs(dir, 0755);
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		die("mount lower");
	pid_t p = fork();
	if (p < 0)
		die("fork");
	if (p == 0) {
		execl("/bin/busybox", "tar", "-x", "-f", dev, "-C", dir, (char *)NULL);
		_exit(127);
	}
	int st;
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("unpack");
	/* the lower layers are never written (overlayfs wants them still) */
	if (mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		die("mount lower");
}

static void dev_nodes(void)
{
	static const struct {
		const char *name;
		unsigned maj, min;
	} nodes[] = { { "null", 1, 3 },
		      { "zero", 1, 5 },
		      { "full", 1, 7 },
		      { "random", 1, 8 },
		      { "urandom", 1, 9 } };
	const char *dev = "/run/disk/new/dev";
	mkdirs(dev, 0755);
	if (mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") < 0)
		die("dev");
	char p[128];
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dev, nodes[i].name);
		if (mknod(p, S_IFCHR | 0666, makedev(nodes[i].maj, nodes[i].min)) < 0)
			die("dev");
	}
	snprintf(p, sizeof(p), "%s/pts", dev);
	mkdirs(p, 0755);
	if (mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=620") < 0)
		die("dev");
	static const char *const links[][2] = { { "pts/ptmx", "ptmx" },
						{ "/proc/self/fd", "fd" },
						{ "/proc/self/fd/0", "stdin" },
						{ "/proc/self/fd/1", "stdout" },
						{ "/proc/self/fd/2", "stderr" } };
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dev, links[i][1]);
		if (symlink(links[i][0], p) < 0)
			die("dev");
	}
	snprintf(p, sizeof(p), "%s/shm", dev);
	mkdirs(p, 01777);
}

static void secrets(const struct run *r)
{
	if (!r->nfiles)
		return;
	const char *dir = "/run/disk/new/run/airlock/secrets";
	mkdirs("/run/disk/new/run", 0755);
	mkdirs("/run/disk/new/run/airlock", 0755);
	mkdirs(dir, 0700);
	size_t total = 0;
	for (size_t i = 0; i < r->nfiles; i++)
		total += r->files[i].len;
	char opts[96];
	snprintf(opts, sizeof(opts), "mode=0700,size=%zu,nr_inodes=%zu",
		 total + (r->nfiles + 1) * 4096, r->nfiles + 8);
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
		die("secrets");
	int d = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0)
		die("secrets");
	for (size_t i = 0; i < r->nfiles; i++) {
		int fd = openat(d, r->files[i].name,
				O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
		if (fd < 0 ||
		    write(fd, r->files[i].data, r->files[i].len) != (ssize_t)r->files[i].len)
			die("secrets");
		close(fd);
	}
	close(d);
	if (mount(NULL, dir, NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		die("secrets");
}

/* memory, processes and CPU of the command: a cgroup of the guest */
static void cgroup(const struct run *r)
{
	char v[64];
	mkdirs("/sys/fs/cgroup", 0755);
	if (mount("cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) <
		    0 ||
	    write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory +pids +cpu") < 0)
		die("cgroup");
	mkdirs("/sys/fs/cgroup/run", 0755);
	if (r->memory) {
		snprintf(v, sizeof(v), "%llu", r->memory);
		if (write_file("/sys/fs/cgroup/run/memory.max", v) < 0)
			die("cgroup memory");
	}
	if (r->pids) {
		snprintf(v, sizeof(v), "%llu", r->pids);
		if (write_file("/sys/fs/cgroup/run/pids.max", v) < 0)
			die("cgroup pids");
	}
	if (r->cpus_milli) {
		snprintf(v, sizeof(v), "%llu 100000", r->cpus_milli * 100);
		if (write_file("/sys/fs/cgroup/run/cpu.max", v) < 0)
			die("cgroup cpu");
	}
}

static void loopback(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		die("lo");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		die("lo");
	close(s);
}

/* ---- the relay: the host's proxy and integrations, over one port ---------------- */

/* Where a namespace run's sandbox finds them (AL_NET_PROXY_PORT,
 * AL_INTEG_PORT): each accepted connection becomes a stream of the relay's
 * port (vm_mux.h); the host hands it to the same proxy or relay. */
#define PROXY_PORT 3128
#define INTEG_PORT 3129

static struct al_vm_mux mux;
static int relay_listen[2] = { -1, -1 };
static bool relay_live;

static int listen_on(int port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 128) < 0)
		die("relay listen");
	return s;
}

static void relay_start(const struct run *r, struct devs *d)
{
	for (int i = 0; !d->relay[0]; i++) {
		if (i == 2000)
			die("relay port");
		usleep(1000);
		find_devs(d);
	}
	int chan = open(d->relay, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (chan < 0)
		die("relay port");
	al_vm__mux_init(&mux, chan, false, NULL, NULL);
	if (r->relay & 1)
		relay_listen[AL_MUX_TO_PROXY] = listen_on(PROXY_PORT);
	if (r->relay & 2)
		relay_listen[AL_MUX_TO_INTEG] = listen_on(INTEG_PORT);
	relay_live = true;
}

static void relay_end(void)
{
	al_vm__mux_release(&mux);
	for (int t = 0; t < 2; t++)
		if (relay_listen[t] >= 0) {
			close(relay_listen[t]);
			relay_listen[t] = -1;
		}
	relay_live = false;
}

/* ---- the command ------------------------------------------------------------------ */

static _Noreturn void command(struct run *r, int out, int err)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (setsid() < 0 || write_file("/sys/fs/cgroup/run/cgroup.procs", "0") < 0)
		_exit(125);
	if (chdir("/run/disk/new") < 0 || chroot(".") < 0 || chdir("/workspace") < 0)
		_exit(125);
	umask(022);
	struct rlimit core = { 0, 0 }, nofile = { 1024, 1024 };
	setrlimit(RLIMIT_CORE, &core);
	setrlimit(RLIMIT_NOFILE, &nofile);
	if (r->disk) {
		struct rlimit fs = { r->disk, r->disk };
		setrlimit(RLIMIT_FSIZE, &fs);
	}
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(125);
	syscall(SYS_close_range, 3, ~0u, 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(125);
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			_exit(125);
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct caps[2];
	memset(caps, 0, sizeof(caps));
	if (syscall(SYS_capset, &hdr, caps) < 0)
		_exit(125);
	environ = r->envp;
	execvp(r->argv[0], r->argv);
	int e = errno;
	dprintf(2, "airlock-init: %s: %s\n", r->argv[0], strerror(e));
	_exit(e == ENOENT ? 127 : 126);
}

/* ---- the result stream: the upper layer as a POSIX tar --------------------------- */

struct tw {
	int fd;
	uint64_t off, cap;
	char block[512];
	struct {
		dev_t dev;
		ino_t ino;
		char *path;
	} links[4096];
	size_t nlinks;
	/* what the stream leaves out, counted for the host's notes: sockets
	 * (no tar form), entries too deep or too long (with what is beneath
	 * them), linked files past links[] (sent as independent files) */
	unsigned long long left_sockets, left_deep, left_links;
};

static void tw_write(struct tw *t, const void *p, size_t n)
{
	if (n > t->cap - t->off) {
		errno = EFBIG;
		die("result: larger than the result disk");
	}
	const char *q = p;
	while (n) {
		ssize_t w = write(t->fd, q, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("result: write");
		q += w;
		n -= (size_t)w;
		t->off += (uint64_t)w;
	}
}

static void octal(char *dst, size_t n, unsigned long long v)
{
	snprintf(dst, n, "%0*llo", (int)n - 1, v);
}

static void pax_record(char *buf, size_t *len, size_t cap, const char *key, const char *val)
{
	size_t body = strlen(key) + strlen(val) + 3; /* ' ', '=', '\n' */
	size_t total = body + 1;
	while (total != body + (size_t)snprintf(NULL, 0, "%zu", total))
		total = body + (size_t)snprintf(NULL, 0, "%zu", total);
	if (*len + total >= cap)
		die("result: pax header");
	*len += (size_t)snprintf(buf + *len, cap - *len, "%zu %s=%s\n", total, key, val);
}

static void header(struct tw *t, const char *path, char type, unsigned mode, uint64_t size,
		   const char *link, bool opaque)
{
	char pax[9000];
	size_t plen = 0;
	size_t n = strlen(path);
	if (n > 100)
		pax_record(pax, &plen, sizeof(pax), "path", path);
	if (link && strlen(link) > 100)
		pax_record(pax, &plen, sizeof(pax), "linkpath", link);
	if (size > 077777777777ull) {
		char s[32];
		snprintf(s, sizeof(s), "%llu", (unsigned long long)size);
		pax_record(pax, &plen, sizeof(pax), "size", s);
	}
	if (opaque)
		pax_record(pax, &plen, sizeof(pax), "SCHILY.xattr.trusted.overlay.opaque", "y");
	if (plen) {
		char pname[100];
		snprintf(pname, sizeof(pname), "PaxHeaders/%.80s", path);
		header(t, pname, 'x', 0644, plen, NULL, false);
		tw_write(t, pax, plen);
		size_t pad = (512 - plen % 512) % 512;
		char zero[512] = { 0 };
		tw_write(t, zero, pad);
	}
	char *h = t->block;
	memset(h, 0, 512);
	memcpy(h, path, n > 100 ? 100 : n);
	octal(h + 100, 8, mode & 07777);
	octal(h + 108, 8, 0);
	octal(h + 116, 8, 0);
	octal(h + 124, 12, size > 077777777777ull ? 0 : size);
	octal(h + 136, 12, 0);
	h[156] = type;
	if (link)
		memcpy(h + 157, link, strlen(link) > 100 ? 100 : strlen(link));
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	octal(h + 329, 8, 0);
	octal(h + 337, 8, 0);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
	h[155] = ' ';
	tw_write(t, h, 512);
}

static void copy_data(struct tw *t, int fd, uint64_t size)
{
	char buf[65536];
	uint64_t left = size;
	while (left) {
		ssize_t n = read(fd, buf, left < sizeof(buf) ? left : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("result: read");
		tw_write(t, buf, (size_t)n);
		left -= (uint64_t)n;
	}
	char zero[512] = { 0 };
	tw_write(t, zero, (512 - size % 512) % 512);
}

/* The host keeps no path deeper than this (AL_DEPTH_MAX, manifest.h) and
 * refuses a stream that holds one: deeper entries are left out here. */
#define DEPTH_MAX 256

static void emit_dir(struct tw *t, int dfd, char *path, size_t plen, unsigned depth)
{
	DIR *d = fdopendir(dfd);
	if (!d)
		die("result: opendir");
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		size_t nl = strlen(e->d_name);
		if (plen + nl + 2 >= PATH_MAX || depth >= DEPTH_MAX) {
			t->left_deep++; /* the host would refuse the path: not kept, as on the host
					 */
			continue;
		}
		size_t np = plen;
		if (plen)
			path[np++] = '/';
		memcpy(path + np, e->d_name, nl + 1);
		np += nl;
		struct stat s;
		if (fstatat(dirfd(d), e->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0)
			die("result: stat");
		if (S_ISCHR(s.st_mode) && major(s.st_rdev) == 0 && minor(s.st_rdev) == 0) {
			header(t, path, '3', 0, 0, NULL, false); /* a whiteout */
		} else if (S_ISDIR(s.st_mode)) {
			int fd = openat(dirfd(d), e->d_name,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			char v[4];
			if (fd < 0)
				die("result: open");
			bool opq = fgetxattr(fd, "trusted.overlay.opaque", v, sizeof(v)) == 1 &&
				   v[0] == 'y';
			path[np] = '/';
			path[np + 1] = 0;
			header(t, path, '5', s.st_mode, 0, NULL, opq);
			path[np] = 0;
			emit_dir(t, fd, path, np, depth + 1);
		} else if (S_ISREG(s.st_mode)) {
			bool linked = false;
			if (s.st_nlink > 1) {
				for (size_t i = 0; i < t->nlinks && !linked; i++)
					if (t->links[i].dev == s.st_dev &&
					    t->links[i].ino == s.st_ino) {
						header(t, path, '1', s.st_mode, 0, t->links[i].path,
						       false);
						linked = true;
					}
				if (!linked && t->nlinks < sizeof(t->links) / sizeof(t->links[0])) {
					t->links[t->nlinks].dev = s.st_dev;
					t->links[t->nlinks].ino = s.st_ino;
					t->links[t->nlinks].path = strdup(path);
					if (t->links[t->nlinks].path)
						t->nlinks++;
				} else if (!linked) {
					t->left_links++;
				}
			}
			if (!linked) {
				int fd = openat(dirfd(d), e->d_name,
						O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
				if (fd < 0)
					die("result: open");
				header(t, path, '0', s.st_mode, (uint64_t)s.st_size, NULL, false);
				copy_data(t, fd, (uint64_t)s.st_size);
				close(fd);
			}
		} else if (S_ISLNK(s.st_mode)) {
			char target[PATH_MAX + 1];
			ssize_t n = readlinkat(dirfd(d), e->d_name, target, PATH_MAX);
			if (n < 0)
				die("result: readlink");
			target[n] = 0;
			header(t, path, '2', 0777, 0, target, false);
		} else if (S_ISFIFO(s.st_mode)) {
			header(t, path, '6', s.st_mode, 0, NULL, false); /* the host notes it */
		} else if (S_ISSOCK(s.st_mode)) {
			t->left_sockets++;
		}
		/* sockets have no tar form; devices cannot be made without
		 * CAP_MKNOD, which the command has not */
		path[plen] = 0;
	}
	closedir(d);
}

static struct tw t;

static uint64_t write_result(const char *dev)
{
	t.fd = open(dev, O_WRONLY | O_CLOEXEC);
	if (t.fd < 0 || ioctl(t.fd, BLKGETSIZE64, &t.cap) < 0)
		die("result: open");
	int up = open("/run/disk/ws/upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (up < 0)
		die("result: upper");
	static char path[PATH_MAX + 2];
	emit_dir(&t, up, path, 0, 0);
	char zero[1024] = { 0 };
	tw_write(&t, zero, sizeof(zero));
	if (fsync(t.fd) < 0)
		die("result: fsync");
	close(t.fd);
	return t.off;
}

/* ---- PID 1 ---------------------------------------------------------------------- */

static unsigned long long ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

static unsigned long long cg_value(const char *file, const char *key)
{
	char buf[1024];
	if (read_small(file, buf, sizeof(buf)) < 0)
		return 0;
	if (!key)
		return strtoull(buf, NULL, 10);
	size_t kl = strlen(key);
	for (char *line = buf; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, key, kl) && line[kl] == ' ')
			return strtoull(line + kl + 1, NULL, 10);
	return 0;
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	if (getpid() != 1) {
		fputs("airlock-guest: the guest agent of airlock's microVM backend: it runs as\n"
		      "/init of the guest's initramfs (PID 1), never on a host\n",
		      stderr);
		return 2;
	}
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	unsigned long long t_boot = ms_now(); /* the clock started with the kernel */
	mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755");
	mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	load_modules();
	struct devs d;
	memset(&d, 0, sizeof(d));
	for (int i = 0; find_devs(&d) < 0; i++) {
		if (i == 10000)
			die("devices");
		usleep(1000);
	}
	ctl = open(d.ctl, O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		die("control port");
	/* the host's boot watchdog: this guest came up (vm.c, UP_LINE); then
	 * nothing of the run starts before the host says go, which it does
	 * only within its boot timeout (past it, it kills this VM and boots
	 * another) */
	status_line("airlock-up 1\n");
	char go = 0;
	ssize_t gn;
	while ((gn = read(ctl, &go, 1)) < 0 && errno == EINTR)
		;
	if (gn != 1 || go != 'g')
		power_off(); /* cancelled, or the host is gone */
	static struct run r;
	read_control(d.control, &r);

	mkdirs("/run/lower", 0755);
	untar(d.image, "/run/lower/image");
	untar(d.workspace, "/run/lower/ws");
	char opts[128];
	mkdirs("/run/disk", 0700);
	snprintf(opts, sizeof(opts), "mode=0700,size=%llu,nr_inodes=%llu",
		 r.disk ? r.disk : 1ull << 40, r.files_max ? r.files_max + 16 : 1ull << 24);
	if (mount("tmpfs", "/run/disk", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		die("mount disk");
	const char *dirs[] = { "/run/disk/root", "/run/disk/root/upper", "/run/disk/root/work",
			       "/run/disk/ws",   "/run/disk/ws/upper",   "/run/disk/ws/work",
			       "/run/disk/tmp",  "/run/disk/new" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		mkdirs(dirs[i], 0755);
	chmod("/run/disk/tmp", 01777);
	if (mount("overlay", "/run/disk/new", "overlay", MS_NOSUID | MS_NODEV,
		  "lowerdir=/run/lower/image,upperdir=/run/disk/root/upper,workdir=/run/disk/root/"
		  "work") < 0)
		die("mount root overlay");
	mkdirs("/run/disk/new/workspace", 0755);
	if (mount("overlay", "/run/disk/new/workspace", "overlay", MS_NOSUID | MS_NODEV,
		  "lowerdir=/run/lower/ws,upperdir=/run/disk/ws/upper,workdir=/run/disk/ws/work") <
	    0)
		die("mount workspace overlay");
	mkdirs("/run/disk/new/proc", 0555);
	if (mount("proc", "/run/disk/new/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		die("mount proc");
	dev_nodes();
	mkdirs("/run/disk/new/tmp", 01777);
	if (mount("/run/disk/tmp", "/run/disk/new/tmp", NULL, MS_BIND, NULL) < 0)
		die("mount tmp");
	mkdirs("/run/disk/new/root", 0700);
	secrets(&r);
	if (sethostname("airlock", 7) < 0)
		die("hostname");
	loopback();
	if (r.relay)
		relay_start(&r, &d);
	cgroup(&r);

	int out = open(d.out, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	int err = open(d.err, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (out < 0 || err < 0)
		die("output ports");
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0)
		die("signalfd");
	/* the command's monotonic and boot clocks start at 1000 s, as in a
	 * namespace run (AL_SANDBOX_BOOT_S, docs/determinism.md): a time
	 * namespace its processes enter at fork */
	struct timespec mono, boot;
	char offs[128];
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	long long msec = 1000 - (long long)mono.tv_sec - (mono.tv_nsec ? 1 : 0),
		  mnsec = mono.tv_nsec ? 1000000000 - mono.tv_nsec : 0,
		  bsec = 1000 - (long long)boot.tv_sec - (boot.tv_nsec ? 1 : 0),
		  bnsec = boot.tv_nsec ? 1000000000 - boot.tv_nsec : 0;
	snprintf(offs, sizeof(offs), "monotonic %lld %lld\nboottime %lld %lld\n", msec, mnsec, bsec,
		 bnsec);
	if (unshare(CLONE_NEWTIME) < 0 || write_file("/proc/self/timens_offsets", offs) < 0)
		die("timens");
	unsigned long long start = ms_now();
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child == 0)
		command(&r, out, err);
	close(out);
	close(err);

	int status = 0, timed_out = 0, cancelled = 0, done = 0;
	unsigned long long deadline = r.timeout_ms ? start + r.timeout_ms : 0;
	while (!done) {
		int tmo = -1;
		if (deadline && !timed_out) {
			unsigned long long now = ms_now();
			if (now >= deadline) {
				kill(-1, SIGKILL);
				timed_out = 1;
			} else {
				tmo = (int)(deadline - now);
			}
		}
		static struct pollfd p[4 + AL_MUX_POLLFDS];
		p[0] = (struct pollfd){ sfd, POLLIN, 0 };
		p[1] = (struct pollfd){ cancelled ? -1 : ctl, POLLIN, 0 };
		for (int k = 0; k < 2; k++)
			p[2 + k] = (struct pollfd){ relay_live ? relay_listen[k] : -1, POLLIN, 0 };
		size_t nm = relay_live ? al_vm__mux_pollfds(&mux, p + 4) : 0;
		if (poll(p, 4 + nm, tmo) < 0 && errno != EINTR)
			die("poll");
		for (int k = 0; k < 2 && relay_live; k++) {
			int c;
			if (p[2 + k].fd >= 0 && (p[2 + k].revents & POLLIN) &&
			    (c = accept4(relay_listen[k], NULL, NULL,
					 SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0)
				al_vm__mux_add(&mux, c, (uint8_t)k);
		}
		if (relay_live && al_vm__mux_step(&mux, p + 4, nm) < 0)
			relay_end(); /* the channel is over: its clients see their end */
		if (p[1].revents & POLLIN) {
			char c;
			if (read(ctl, &c, 1) == 1 && c == 'c') {
				kill(-1, SIGKILL);
				cancelled = 1;
			}
		}
		if (p[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) < 0 && errno != EINTR)
				die("signalfd");
			int st;
			pid_t w;
			while ((w = waitpid(-1, &st, WNOHANG)) > 0)
				if (w == child) {
					status = st;
					done = 1;
				}
		}
	}
	/* the command is gone: nothing it started may outlive it */
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	unsigned long long end = ms_now(), wall = end - start;
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	unsigned long long oom = cg_value("/sys/fs/cgroup/run/memory.events", "oom_kill");
	unsigned long long peak = cg_value("/sys/fs/cgroup/run/memory.peak", NULL);
	struct statfs fs;
	int disk_full = 0, files_full = 0;
	if (statfs("/run/disk", &fs) == 0) {
		disk_full = fs.f_bavail <= 4;
		files_full = fs.f_ffree == 0;
	}
	umount2("/run/disk/new/workspace", MNT_DETACH);
	uint64_t result = write_result(d.result);
	status_line("airlock-status 1 exit=%d timed_out=%d cancelled=%d oom=%d peak=%llu "
		    "disk_full=%d files_full=%d user_ms=%llu sys_ms=%llu max_rss_kb=%llu "
		    "wall_ms=%llu boot_ms=%llu setup_ms=%llu collect_ms=%llu result=%llu "
		    "left_sockets=%llu left_deep=%llu left_links=%llu\n",
		    code, timed_out, cancelled, oom > 0, peak, disk_full, files_full,
		    (unsigned long long)ru.ru_utime.tv_sec * 1000 +
			    (unsigned long long)ru.ru_utime.tv_usec / 1000,
		    (unsigned long long)ru.ru_stime.tv_sec * 1000 +
			    (unsigned long long)ru.ru_stime.tv_usec / 1000,
		    (unsigned long long)ru.ru_maxrss, wall, t_boot, start - t_boot, ms_now() - end,
		    (unsigned long long)result, t.left_sockets, t.left_deep, t.left_links);
	power_off();
}
