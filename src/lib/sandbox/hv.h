/* Hypervisor drivers of the microVM backend (vm.c).  A driver turns one
 * VM's description into the VMM's command line; vm.c runs that command in
 * its jail (namespaces, no capabilities, seccomp, a cgroup) with the
 * descriptors the description names kept at those numbers.  One driver
 * today: QEMU's microvm machine (qemu.c).  A driver for a VMM configured
 * through an API socket (Firecracker) would add a hook that talks to it
 * after the start; none ships until a test can run it. */
#ifndef AL_HV_H
#define AL_HV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"

struct al_hv_disk {
	int fd;             /* in the VMM's process */
	const char *serial; /* how the guest finds it */
	bool readonly;
};
struct al_hv_port {
	int fd; /* a connected stream socket, in the VMM's process */
	const char *name;
};
struct al_hv_vm {
	int kernel_fd, initrd_fd;
	const char *cmdline;
	unsigned vcpus;
	uint64_t memory_mib;
	bool kvm;
	struct al_hv_disk disks[4];
	size_t ndisks;
	struct al_hv_port ports[4];
	size_t nports;
};

/* What the host offers: the VMM's binary, and whether KVM can be used. */
struct al_hv_probe {
	bool binary_ok;
	char binary[256];
	bool kvm;
	char kvm_detail[160]; /* why KVM is or is not used */
};

struct al_hv_driver {
	const char *name;
	/* uid, gid: who the VMM runs as (its jail's host ids) */
	void (*probe)(struct al_hv_probe *p, uint32_t uid, uint32_t gid);
	/* The VMM's argv (argv[0] is the binary's path), NULL-terminated; one
	 * allocation, freed with free(). */
	int (*argv)(const struct al_hv_vm *vm, const char *binary, char ***out,
		    struct al_error *err);
};
extern const struct al_hv_driver al_hv__qemu;

#endif
