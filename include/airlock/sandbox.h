/* airlock — sandboxes: run one command isolated from the host.
 *
 * The sandbox's root filesystem is a writable overlay over a read-only
 * image directory; /workspace is a writable overlay over a read-only
 * snapshot directory.  Nothing else of the host is reachable: no host path,
 * no host process, no network unless the policy grants it.  The run's
 * writes land in upper layers on a size-capped tmpfs; after every process
 * of the sandbox is dead, the caller reads the workspace's upper layer
 * (overlay.h) through res->upper_fd.
 *
 * Backends sit behind this header: "ns" (Linux namespaces, seccomp,
 * cgroups), the default, and "vm" (a microVM on its own kernel: QEMU's
 * microvm machine, KVM or TCG, the VMM itself jailed), which hands back
 * the same result: its guest's upper layer, parsed strictly from a stream
 * into a directory of the same form. */
#ifndef AIRLOCK_SANDBOX_H
#define AIRLOCK_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"

struct al_net_proxy;
struct al_integ_relay;

enum al_network { AL_NET_NONE = 0, AL_NET_EGRESS = 1 };
const char *al_network_name(enum al_network net);
int al_network_parse(const char *s, enum al_network *out, struct al_error *err);

/* Here 0 is "none"; a run never gets 0 (policy.h decides every limit). */
struct al_limits {
	uint64_t memory;       /* bytes of memory (cgroup), 0: none */
	uint64_t pids;         /* processes and threads (cgroup; RLIMIT_NPROC without one) */
	uint64_t cpus_milli;   /* CPU bandwidth, 1000 = one CPU; 0: none */
	uint64_t timeout_ms;   /* wall clock; then the whole sandbox is killed */
	uint64_t output;       /* bytes kept of each of stdout and stderr */
	uint64_t disk;         /* bytes the run may write (its upper layers and /tmp) */
	uint64_t files;        /* files and directories the run may create */
	uint64_t connections;  /* egress connections per run (the proxy's), refused past it */
	uint64_t egress_bytes; /* egress bytes per run, both ways, all connections */
};
/* The built-in defaults (policy.h; docs/operations.md). */
void al_limits_default(struct al_limits *l);

/* Called with the command's output as it arrives; stream is 1 or 2. */
typedef void (*al_sandbox_output_fn)(void *ctx, int stream, const void *p, size_t n);

/* A file the sandbox finds in /run/airlock/secrets (a tmpfs of this run
 * only, read-only, mode 0400): name is [A-Za-z_][A-Za-z0-9_]*. */
struct al_sandbox_file {
	const char *name;
	const void *data;
	size_t len;
};
#define AL_SECRET_FILES_MAX 64
/* What CLOCK_MONOTONIC and CLOCK_BOOTTIME (and /proc/uptime) read when a
 * sandbox starts, in seconds: each sandbox has a time namespace whose
 * offsets make them start there (docs/determinism.md). */
#define AL_SANDBOX_BOOT_S 1000
#define AL_SECRET_BYTES_MAX (1u << 20)

struct al_sandbox_spec {
	const char *backend; /* "ns" or "vm"; NULL: the default ("ns") */
	/* The read-only lower layers: two directories in lowers_fd, named
	 * without '/' (the namespace backend resolves them in the sandbox's
	 * own mount namespace; lowers_fd must be searchable by host_uid). */
	int lowers_fd;
	const char *image_dir;     /* lower layer of / */
	const char *workspace_dir; /* lower layer of /workspace */
	int init_fd;               /* airlock-init, executable */
	const char *const *argv;   /* the command (run by airlock-init) */
	const char *const *envp;   /* its whole environment */
	enum al_network network;
	struct al_limits limits;
	/* the operator's opt-in: a limit no cgroup can enforce is skipped */
	bool best_effort_limits;
	uint32_t host_uid, host_gid; /* who the sandbox's root is on the host */
	al_sandbox_output_fn output;
	void *output_ctx;
	const struct al_sandbox_file *secret_files;
	size_t nsecret_files;
	int cancel_fd; /* > 0: once readable, the sandbox is killed (res.cancelled) */
	/* "vm": the directory of the guest (vmlinux, initramfs.cpio: built by
	 * make, scripts/mkguest.sh) */
	const char *guest_dir;
	/* network egress: the proxy (net_private.h) that serves the run's
	 * 127.0.0.1:AL_NET_PROXY_PORT, started once the sandbox is set up
	 * and stopped when every process in it is dead */
	struct al_net_proxy *egress;
	/* integrations: the relay (integ_private.h) that serves the run's
	 * 127.0.0.1:AL_INTEG_PORT, started and stopped as the proxy is; NULL:
	 * none ("ns" only) */
	struct al_integ_relay *integ;
	/* Work the caller will need after the command, called at most once in
	 * this thread once the command is under way, where this thread would
	 * otherwise only wait ("ns"; "vm" does not call it: its boot takes
	 * far longer than such work).  The command's output waits in its
	 * pipes; its timeout counts from before the call and its cancel is
	 * looked at after it, and a command that ended meanwhile is neither
	 * (wall_ms then includes the call).  It cannot fail the run; NULL:
	 * none. */
	void (*meanwhile)(void *ctx);
	void *meanwhile_ctx;
};

struct al_sandbox_result {
	int exit_code; /* the command's: 0..255, 128+signal if killed */
	bool timed_out, oom, cancelled;
	uint64_t stdout_bytes, stderr_bytes;
	uint64_t wall_ms, cpu_user_ms, cpu_sys_ms;
	uint64_t max_rss_kb;  /* largest process */
	uint64_t peak_memory; /* the sandbox's peak (cgroup), 0 if unknown */
	const char *cgroup;   /* "v2", "v1", "none", or "vm": where the limits were enforced */
	bool memory_enforced, pids_enforced,
		cpu_enforced;       /* by a cgroup (the other limits always are) */
	bool disk_full, files_full; /* the run's tmpfs had no byte or no inode left at the end */
	unsigned cpus;              /* CPUs the command could run on (its affinity: nproc) */
	bool time_namespace;        /* its monotonic and boot clocks started at AL_SANDBOX_BOOT_S */
	int upper_fd;               /* the workspace's upper layer (O_PATH dir); caller closes */
	/* "vm" only: the VM's size and acceleration, and the guest's own
	 * times (from its kernel's start to its agent, the agent's setup
	 * until the command, the result's writing after it) */
	struct {
		bool used, kvm;
		unsigned vcpus;
		uint64_t memory_mib, boot_ms, setup_ms, collect_ms;
		/* VMs started: 2 when the first did not come up in time
		 * (AIRLOCK_VM_BOOT_TIMEOUT) and the run booted another */
		unsigned boots;
		/* what the guest's result stream left out, by count (a
		 * namespace run's collection notes each by path): sockets,
		 * entries too deep or too long, linked files past its 4,096th
		 * (sent as independent files) */
		uint64_t left_sockets, left_deep, left_links;
		/* the relay's channel ended early: how the guest broke its
		 * protocol (empty: it did not) */
		char relay_error[128];
	} vm;
};

/* Can backend (NULL: the default) enforce this network policy?  AL_EINVAL
 * with the reason if not. */
int al_sandbox_check(const char *backend, enum al_network network, struct al_error *err);

/* Run spec->argv in a new sandbox and wait for every process in it to end.
 * A failure to set the sandbox up is an error naming the step ("sandbox:
 * mount /proc: Operation not permitted"), never a hang; the command's own
 * failure is in res.  AL_EINVAL for a policy the backend cannot enforce
 * (network egress on "vm"). */
int al_sandbox_run(const struct al_sandbox_spec *spec, struct al_sandbox_result *res,
		   struct al_error *err);

/* What this host gives the sandbox (airlock doctor): one finding per check,
 * in a fixed order.  ok: the feature works; enforced: what a run gets
 * from it; fix: what to change when it does not ("" when ok). */
struct al_doctor_item {
	const char *check; /* "user namespaces", "cgroup memory", … */
	bool ok;
	bool required; /* a run cannot work without it */
	char detail[160];
	char fix[200];
};
#define AL_DOCTOR_MAX 16
/* Probe the host (in forked children: nothing of this process changes but
 * a cgroup created and removed).  Returns the number of items. */
int al_sandbox_doctor(struct al_doctor_item items[AL_DOCTOR_MAX]);
/* The same for the "vm" backend: the VMM's binary, the guest built in
 * guest_dir, KVM or only TCG (emulation), and whether a VM boots here (a
 * guest started with an empty command when boot is true: about 2 s under
 * TCG).  Returns the number of items. */
int al_sandbox_doctor_vm(const char *guest_dir, bool boot,
			 struct al_doctor_item items[AL_DOCTOR_MAX]);
/* Is name a sandbox backend ("ns", "vm")? */
bool al_sandbox_backend_known(const char *name);

#endif
