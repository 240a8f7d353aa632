/* cgroups for one run: memory, pids and CPU limits, on cgroup v2 where the
 * controller is there, else on the v1 hierarchy that has it (hybrid hosts).
 *
 * v2: runs go under airlock's own cgroup, <own>/airlock-runs/<run>
 * (v2_setup).  v1: under the creating process's own cgroup of that
 * hierarchy, as <own>/airlock-<run>. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sandbox_private.h"
#include "util.h"

static int write_file(const char *dir, const char *file, const char *val)
{
	char p[1200];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	return al_write_string(p, val);
}

static int read_file(const char *dir, const char *file, char *buf, size_t n)
{
	char p[1200];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t got = al_read_full(fd, buf, n - 1);
	if (got < 0)
		return -1;
	buf[got] = 0;
	return 0;
}

static bool has_word(const char *list, const char *word, const char *seps)
{
	size_t n = strlen(word);
	for (const char *p = list; (p = strstr(p, word)); p += n) {
		bool start = p == list || strchr(seps, p[-1]);
		bool end = !p[n] || strchr(seps, p[n]);
		if (start && end)
			return true;
	}
	return false;
}

/* Mount points of the cgroup2 hierarchy and of the v1 hierarchies with the
 * memory, pids and cpu controllers. */
struct mounts {
	char v2[256], memory[256], pids[256], cpu[256];
};

static void find_mounts(struct mounts *m)
{
	memset(m, 0, sizeof(*m));
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	char line[1024];
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");
		if (!sep)
			continue;
		char mp[256], fstype[32], src[64], opts[512] = "";
		if (sscanf(line, "%*s %*s %*s %*s %255s", mp) != 1 ||
		    sscanf(sep + 3, "%31s %63s %511s", fstype, src, opts) < 2)
			continue;
		if (!strcmp(fstype, "cgroup2") && !m->v2[0])
			snprintf(m->v2, sizeof(m->v2), "%s", mp);
		else if (!strcmp(fstype, "cgroup")) {
			if (has_word(opts, "memory", ",") && !m->memory[0])
				snprintf(m->memory, sizeof(m->memory), "%s", mp);
			if (has_word(opts, "pids", ",") && !m->pids[0])
				snprintf(m->pids, sizeof(m->pids), "%s", mp);
			if (has_word(opts, "cpu", ",") && !m->cpu[0])
				snprintf(m->cpu, sizeof(m->cpu), "%s", mp);
		}
	}
	fclose(f);
}

/* This process's cgroup in the v1 hierarchy of controller. */
static int own_v1_path(const char *controller, char *out, size_t n)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -1;
	char line[1024];
	int r = -1;
	while (r < 0 && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = 0;
		if (!has_word(c1 + 1, controller, ","))
			continue;
		c2[1 + strcspn(c2 + 1, "\n")] = 0;
		snprintf(out, n, "%s", strcmp(c2 + 1, "/") ? c2 + 1 : "");
		r = 0;
	}
	fclose(f);
	return r;
}

/* Runs' cgroups left behind by an airlock that was killed (its sandbox
 * died with it: PR_SET_PDEATHSIG): under dir, the entries named prefix*
 * that are older than a minute (a run's cgroup holds its processes within
 * milliseconds of its creation) and empty (rmdir refuses a cgroup with
 * processes or children). */
static void sweep_leftovers(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	time_t now = time(NULL);
	size_t pl = strlen(prefix);
	while ((e = readdir(d))) {
		struct stat st;
		if (strncmp(e->d_name, prefix, pl) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || now - st.st_mtime < 60)
			continue;
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

static int v1_dir(const char *mount, const char *controller, const char *name, char *out, size_t n)
{
	char own[512];
	if (!mount[0] || own_v1_path(controller, own, sizeof(own)) < 0)
		return -1;
	char parent[1024];
	snprintf(parent, sizeof(parent), "%s%s", mount, own);
	sweep_leftovers(parent, "airlock-run-");
	sweep_leftovers(parent, "airlock-doctor-");
	if ((size_t)snprintf(out, n, "%s%s/airlock-%s", mount, own, name) >= n ||
	    mkdir(out, 0755) < 0) {
		out[0] = 0;
		return -1;
	}
	return 0;
}

/* This process's cgroup v2 path ("0::/path" in /proc/self/cgroup). */
static int own_v2_path(char *out, size_t n)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -1;
	char line[1024];
	int r = -1;
	while (r < 0 && fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			const char *p = strcmp(line + 3, "/") ? line + 3 : "";
			r = strlen(p) < n ? (memcpy(out, p, strlen(p) + 1), 0) : -1;
			break;
		}
	fclose(f);
	return r;
}

/* Is pid the only process in the cgroup dir? */
static bool only_member(const char *dir, pid_t pid)
{
	char buf[256];
	if (read_file(dir, "cgroup.procs", buf, sizeof(buf)) < 0)
		return false;
	char *end;
	long first = strtol(buf, &end, 10);
	return first == pid && (*end == '\n' || !*end) && (!*end || !end[1]);
}

/* cgroup v2: runs live in airlock's own subtree, never at the root:
 * <own>/airlock-runs/<run>, the subtree a service manager delegates to
 * the service (systemd's Delegate=yes).  A cgroup holding processes
 * cannot hand controllers to children, so when airlock is the only
 * process of its cgroup it first moves itself into <own>/airlock-service
 * (as crun and systemd do in a delegated subtree); when others share it,
 * the subtree is not airlock's to divide and v2 is not used.  At the root
 * cgroup (no such rule, e.g. a container's namespace) runs go under
 * /airlock-runs.  want[i] is cleared for each controller v2 enforces. */
static bool v2_setup(const struct mounts *m, const char *name, char *out, size_t n, bool want[3])
{
	static const char *ctl[3] = { "memory", "pids", "cpu" };
	char own[512], base[800], have[256] = "";
	if (!m->v2[0] || own_v2_path(own, sizeof(own)) < 0)
		return false;
	if ((size_t)snprintf(base, sizeof(base), "%s%s", m->v2, own) >= sizeof(base) ||
	    read_file(base, "cgroup.controllers", have, sizeof(have)) < 0)
		return false;
	bool any = false;
	for (int i = 0; i < 3; i++)
		any |= want[i] && has_word(have, ctl[i], " \n");
	/* a testing aid (operations.md): the v2 cgroup for membership alone,
	 * so that a hybrid host exercises the v2 path (clone3 into it) */
	const char *aid = getenv("AIRLOCK_CGROUP2_MEMBERSHIP");
	if (!any && !(aid && !strcmp(aid, "1")))
		return false;
	if (own[0]) {
		char sub[900], pid[24];
		char cur[256] = "";
		read_file(base, "cgroup.subtree_control", cur, sizeof(cur));
		bool enabled = false;
		for (int i = 0; i < 3; i++)
			enabled |= want[i] && has_word(cur, ctl[i], " \n");
		if (!enabled) {
			if (!only_member(base, getpid()))
				return false;
			snprintf(sub, sizeof(sub), "%s/airlock-service", base);
			snprintf(pid, sizeof(pid), "%d", (int)getpid());
			if ((mkdir(sub, 0755) < 0 && errno != EEXIST) ||
			    write_file(sub, "cgroup.procs", pid) < 0)
				return false;
		}
	}
	for (int i = 0; i < 3; i++)
		if (want[i] && has_word(have, ctl[i], " \n")) {
			char v[16];
			snprintf(v, sizeof(v), "+%s", ctl[i]);
			write_file(base, "cgroup.subtree_control", v);
		}
	char parent[900];
	snprintf(parent, sizeof(parent), "%s/airlock-runs", base);
	if (mkdir(parent, 0755) < 0 && errno != EEXIST)
		return false;
	sweep_leftovers(parent, "run-");
	sweep_leftovers(parent, "doctor-");
	for (int i = 0; i < 3; i++)
		if (want[i] && has_word(have, ctl[i], " \n")) {
			char v[16];
			snprintf(v, sizeof(v), "+%s", ctl[i]);
			write_file(parent, "cgroup.subtree_control", v);
		}
	if ((size_t)snprintf(out, n, "%s/%s", parent, name) >= n || mkdir(out, 0755) < 0) {
		out[0] = 0;
		return false;
	}
	/* what is enabled is what the new cgroup's interface files show */
	char probe[1200];
	for (int i = 0; i < 3; i++) {
		static const char *file[3] = { "memory.max", "pids.max", "cpu.max" };
		snprintf(probe, sizeof(probe), "%s/%s", out, file[i]);
		if (want[i] && access(probe, W_OK) == 0)
			want[i] = false; /* enforced on v2 */
	}
	return true;
}

int al_cgroup__create(const struct al_limits *l, const char *name, bool best_effort,
		      struct al_cgroup *cg, struct al_error *err)
{
	memset(cg, 0, sizeof(*cg));
	struct mounts m;
	find_mounts(&m);
	bool want[3] = { l->memory > 0, l->pids > 0, l->cpus_milli > 0 };
	bool v2want[3] = { want[0], want[1], want[2] };
	if (want[0] || want[1] || want[2])
		v2_setup(&m, name, cg->v2, sizeof(cg->v2), v2want);
	/* v2want now holds what v2 could not take */
	char v[64];
	int bad = 0;
	if (want[0] && !v2want[0]) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory);
		bad |= write_file(cg->v2, "memory.max", v) < 0;
		write_file(cg->v2, "memory.swap.max", "0");
		cg->memory = true;
	} else if (want[0] &&
		   v1_dir(m.memory, "memory", name, cg->v1_memory, sizeof(cg->v1_memory)) == 0) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory);
		bad |= write_file(cg->v1_memory, "memory.limit_in_bytes", v) < 0;
		write_file(cg->v1_memory, "memory.memsw.limit_in_bytes",
			   v); /* absent without swap accounting */
		cg->memory = true;
	}
	if (want[1] && !v2want[1]) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->pids);
		bad |= write_file(cg->v2, "pids.max", v) < 0;
		cg->pids = true;
	} else if (want[1] && v1_dir(m.pids, "pids", name, cg->v1_pids, sizeof(cg->v1_pids)) == 0) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->pids);
		bad |= write_file(cg->v1_pids, "pids.max", v) < 0;
		cg->pids = true;
	}
	if (want[2] && !v2want[2]) {
		snprintf(v, sizeof(v), "%llu 100000", (unsigned long long)l->cpus_milli * 100);
		bad |= write_file(cg->v2, "cpu.max", v) < 0;
		cg->cpu = true;
	} else if (want[2] && v1_dir(m.cpu, "cpu", name, cg->v1_cpu, sizeof(cg->v1_cpu)) == 0) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->cpus_milli * 100);
		bad |= write_file(cg->v1_cpu, "cpu.cfs_period_us", "100000") < 0;
		bad |= write_file(cg->v1_cpu, "cpu.cfs_quota_us", v) < 0;
		cg->cpu = true;
	}
	if (bad) {
		int e = errno;
		al_cgroup__destroy(cg);
		return al_fail(err, AL_EIO, e, "sandbox: cannot set the run's cgroup limits");
	}
	const char *missing = want[0] && !cg->memory ? "memory"
			      : want[1] && !cg->pids ? "pids"
			      : want[2] && !cg->cpu  ? "cpu"
						     : NULL;
	if (missing && !best_effort) {
		al_cgroup__destroy(cg);
		return al_fail(err, AL_EINVAL, 0,
			       "sandbox: cannot enforce the %s limit: no %s cgroup controller "
			       "airlock may write (see 'airlock "
			       "doctor'; or the operator accepts it: airlock admin policy set "
			       "--deployment "
			       "--best-effort-limits on)",
			       missing, missing);
	}
	return 0;
}

int al_cgroup__attach(const struct al_cgroup *cg, pid_t pid, bool v1, struct al_error *err)
{
	char v[32];
	snprintf(v, sizeof(v), "%d", (int)pid);
	const char *dirs[4] = { cg->v2, cg->v1_memory, cg->v1_pids, cg->v1_cpu };
	for (int i = 0; i < (v1 ? 4 : 1); i++)
		if (dirs[i][0] && write_file(dirs[i], "cgroup.procs", v) < 0)
			return al_fail(err, AL_EIO, errno, "sandbox: join cgroup %s", dirs[i]);
	return 0;
}

int al_cgroup__v1_tasks(const struct al_cgroup *cg, int fds[3], struct al_error *err)
{
	const char *dirs[3] = { cg->v1_memory, cg->v1_pids, cg->v1_cpu };
	for (int i = 0; i < 3; i++)
		fds[i] = -1;
	for (int i = 0; i < 3; i++) {
		if (!dirs[i][0])
			continue;
		char p[1200];
		snprintf(p, sizeof(p), "%s/tasks", dirs[i]);
		if ((fds[i] = open(p, O_WRONLY | O_CLOEXEC)) < 0) {
			int e = errno;
			for (int j = 0; j < i; j++)
				if (fds[j] >= 0) {
					close(fds[j]);
					fds[j] = -1;
				}
			return al_fail(err, AL_EIO, e, "sandbox: join cgroup %s", dirs[i]);
		}
	}
	return 0;
}

static uint64_t keyed(const char *text, const char *key)
{
	const char *p = text;
	size_t n = strlen(key);
	while ((p = strstr(p, key))) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
		p += n;
	}
	return 0;
}

void al_cgroup__stats(const struct al_cgroup *cg, bool *oom, uint64_t *peak)
{
	char buf[1024];
	*oom = false;
	*peak = 0;
	if (cg->memory && cg->v2[0] && !cg->v1_memory[0]) {
		if (read_file(cg->v2, "memory.events", buf, sizeof(buf)) == 0)
			*oom = keyed(buf, "oom_kill") > 0;
		if (read_file(cg->v2, "memory.peak", buf, sizeof(buf)) == 0)
			*peak = strtoull(buf, NULL, 10);
	} else if (cg->v1_memory[0]) {
		if (read_file(cg->v1_memory, "memory.oom_control", buf, sizeof(buf)) == 0)
			*oom = keyed(buf, "oom_kill") > 0;
		if (read_file(cg->v1_memory, "memory.max_usage_in_bytes", buf, sizeof(buf)) == 0)
			*peak = strtoull(buf, NULL, 10);
	}
}

static void remove_dir(char *dir)
{
	if (!dir[0])
		return;
	/* the last exits may still be settling in the controller */
	for (int i = 0; i < 200 && rmdir(dir) < 0 && errno == EBUSY; i++)
		usleep(1000);
	dir[0] = 0;
}

void al_cgroup__destroy(struct al_cgroup *cg)
{
	remove_dir(cg->v2);
	remove_dir(cg->v1_memory);
	remove_dir(cg->v1_pids);
	remove_dir(cg->v1_cpu);
}

const char *al_cgroup__kind(const struct al_cgroup *cg)
{
	if (cg->v1_memory[0] || cg->v1_pids[0] || cg->v1_cpu[0])
		return cg->v2[0] ? "v1+v2" : "v1";
	return cg->v2[0] ? "v2" : "none";
}
