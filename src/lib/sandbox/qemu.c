/* The QEMU driver (hv.h): the microvm machine, no firmware option ROMs, no
 * PCI, no network device, no monitor, no default devices; KVM when usable,
 * else TCG.  docs/operations.md ("microVM") has what each choice costs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hv.h"
#include "util.h"

#define KVM_GET_API_VERSION 0xAE00
#define KVM_CREATE_VM 0xAE01

/* /dev/kvm usable for Debian's kernel as a guest: it opens, speaks API 12,
 * makes a VM, and the CPU has hardware virtualisation (vmx or svm).  The
 * last check matters: a paravirtual /dev/kvm (PVM inside another VM, as on
 * the machine this was written on) answers the ioctls, then fails the
 * guest's first privileged instruction and leaves QEMU stopped. */
/* Can uid/gid open /dev/kvm read-write (mode, group, ACLs: the kernel's
 * own check, in a child)? */
static bool kvm_open_as(uint32_t uid, uint32_t gid)
{
	if (geteuid() != 0 || uid == 0)
		return true; /* the jail runs as our own uid: the open above said so */
	fflush(NULL);
	pid_t c = fork();
	if (c < 0)
		return false;
	if (c == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(uid, uid, uid) < 0)
			_exit(1);
		_exit(open("/dev/kvm", O_RDWR | O_CLOEXEC) >= 0 ? 0 : 1);
	}
	int st;
	while (waitpid(c, &st, 0) < 0)
		if (errno != EINTR)
			return false;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void kvm_probe(struct al_hv_probe *p, uint32_t uid, uint32_t gid)
{
	const char *force = getenv("AIRLOCK_VM_ACCEL");
	if (force && !strcmp(force, "tcg")) {
		snprintf(p->kvm_detail, sizeof(p->kvm_detail), "TCG: AIRLOCK_VM_ACCEL=tcg");
		return;
	}
	_cleanup_close_ int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(p->kvm_detail, sizeof(p->kvm_detail), "TCG: /dev/kvm: %s",
			 strerror(errno));
		return;
	}
	if (ioctl(fd, KVM_GET_API_VERSION, 0) != 12) {
		snprintf(p->kvm_detail, sizeof(p->kvm_detail), "TCG: /dev/kvm: not KVM API 12");
		return;
	}
	int vm = ioctl(fd, KVM_CREATE_VM, 0);
	if (vm < 0) {
		snprintf(p->kvm_detail, sizeof(p->kvm_detail), "TCG: KVM_CREATE_VM: %s",
			 strerror(errno));
		return;
	}
	close(vm);
	bool hw = false;
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[4096];
	while (f && !hw && fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5))
			hw = strstr(line, " vmx") || strstr(line, " svm");
	if (f)
		fclose(f);
	if (!hw && !(force && !strcmp(force, "kvm"))) {
		snprintf(p->kvm_detail, sizeof(p->kvm_detail),
			 "TCG: /dev/kvm is there but the CPU has no vmx/svm (a paravirtual KVM "
			 "such as PVM cannot run Debian's kernel)");
		return;
	}
	if (!kvm_open_as(uid, gid)) {
		snprintf(p->kvm_detail, sizeof(p->kvm_detail),
			 "TCG: the VMM's uid %u may not open /dev/kvm (give it access: setfacl "
			 "-m u:%u:rw /dev/kvm)",
			 uid, uid);
		return;
	}
	p->kvm = true;
	snprintf(p->kvm_detail, sizeof(p->kvm_detail), "KVM: /dev/kvm usable");
}

static void qemu_probe(struct al_hv_probe *p, uint32_t uid, uint32_t gid)
{
	memset(p, 0, sizeof(*p));
	const char *bin = getenv("AIRLOCK_QEMU");
	snprintf(p->binary, sizeof(p->binary), "%s",
		 bin && *bin ? bin : "/usr/bin/qemu-system-x86_64");
	p->binary_ok = access(p->binary, X_OK) == 0;
	kvm_probe(p, uid, gid);
}

static int qemu_argv(const struct al_hv_vm *vm, const char *binary, char ***out,
		     struct al_error *err)
{
	enum { MAXARGS = 80, ARGLEN = 256 };
	char **v = calloc(1, (MAXARGS + 1) * sizeof(char *) + MAXARGS * ARGLEN);
	if (!v)
		return al_fail(err, AL_ENOMEM, ENOMEM, "vm: qemu argv");
	char *pool = (char *)(v + MAXARGS + 1);
	size_t n = 0;
#define ARG(...)                                                                   \
	do {                                                                       \
		char *slot = pool + n * ARGLEN;                                    \
		if (n >= MAXARGS || snprintf(slot, ARGLEN, __VA_ARGS__) >= ARGLEN) \
			goto too_long;                                             \
		v[n++] = slot;                                                     \
	} while (0)
	ARG("%s", binary);
	/* no firmware option ROMs, no PCI bus, no ISA devices the guest does
	 * not use (the serial console is off: the guest agent reports on its
	 * own port).  The RTC stays: without it the kernel's clock setup cost
	 * ~3 s more under TCG (bench/vm.sh) */
	ARG("-M");
	ARG("microvm,x-option-roms=off,pit=off,pic=off,isa-serial=off");
	ARG("-accel");
	/* a bounded translation cache: TCG's default reserves 1 GiB */
	ARG("%s", vm->kvm ? "kvm" : "tcg,tb-size=64");
	/* KVM: the host's CPU; TCG: QEMU's default model ("max" emulates
	 * more and boots ~1 s slower) */
	if (vm->kvm) {
		ARG("-cpu");
		ARG("host");
	}
	ARG("-m");
	ARG("%llu", (unsigned long long)vm->memory_mib);
	ARG("-smp");
	ARG("%u", vm->vcpus);
	ARG("-nodefaults");
	ARG("-no-user-config");
	ARG("-nographic");
	ARG("-no-reboot");
	ARG("-display");
	ARG("none");
	ARG("-serial");
	ARG("none");
	ARG("-monitor");
	ARG("none");
	ARG("-net");
	ARG("none");
	ARG("-sandbox");
	ARG("on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
	ARG("-kernel");
	ARG("/proc/self/fd/%d", vm->kernel_fd);
	ARG("-initrd");
	ARG("/proc/self/fd/%d", vm->initrd_fd);
	ARG("-append");
	ARG("%s", vm->cmdline);
	for (size_t i = 0; i < vm->ndisks; i++) {
		ARG("-drive");
		ARG("file=/proc/self/fd/%d,format=raw,if=none,id=d%zu,cache=unsafe%s",
		    vm->disks[i].fd, i, vm->disks[i].readonly ? ",readonly=on" : "");
		ARG("-device");
		ARG("virtio-blk-device,drive=d%zu,serial=%s", i, vm->disks[i].serial);
	}
	if (vm->nports) {
		ARG("-device");
		ARG("virtio-serial-device,max_ports=%zu", vm->nports + 1);
	}
	for (size_t i = 0; i < vm->nports; i++) {
		ARG("-chardev");
		ARG("socket,id=p%zu,fd=%d", i, vm->ports[i].fd);
		ARG("-device");
		ARG("virtserialport,chardev=p%zu,name=%s", i, vm->ports[i].name);
	}
#undef ARG
	v[n] = NULL;
	*out = v;
	return 0;
too_long:
	free(v);
	return al_fail(err, AL_EINVAL, 0, "vm: qemu command line too long");
}

const struct al_hv_driver al_hv__qemu = {
	.name = "qemu",
	.probe = qemu_probe,
	.argv = qemu_argv,
};
