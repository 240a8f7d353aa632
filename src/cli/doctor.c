/* airlock doctor: can the sandbox run here, and what does it enforce. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "airlock/sandbox.h"
#include "cli.h"
#include "ops.h"

static const char help[] =
	"usage: airlock doctor [--vm-boot] [--json]\n\n"
	"Check what this host gives airlock's sandbox: user namespaces, overlayfs with\n"
	"userxattr, /proc in a new PID namespace, the seccomp filter, each cgroup\n"
	"controller (memory, pids, cpu) and whether airlock may use it, IA32 emulation\n"
	"and vsock.  One line per check: ok, FAIL (a run cannot work) or WARN (a limit\n"
	"is not enforced), what it means and what to change.  Exit 0 when runs can\n"
	"work here (every required check passes), 1 otherwise.\n"
	"\n"
	"Then the microVM backend (--backend vm): QEMU, the guest kernel and initramfs\n"
	"built by make, and KVM or only TCG emulation (~2 s a run: for development and\n"
	"CI, not a production boundary's speed).  --vm-boot also boots one guest (a few\n"
	"seconds under TCG).  The vm checks do not change the exit status.\n";

static json_t *checks(const struct al_doctor_item *items, int n, bool *runs)
{
	json_t *arr = json_array();
	*runs = true;
	for (int i = 0; i < n; i++) {
		*runs &= items[i].ok || !items[i].required;
		json_array_append_new(arr,
				      json_pack("{s:s,s:b,s:b,s:s,s:s}", "check", items[i].check,
						"ok", items[i].ok, "required", items[i].required,
						"detail", items[i].detail, "fix", items[i].fix));
	}
	return arr;
}

static void print_items(const struct al_doctor_item *items, int n)
{
	for (int i = 0; i < n; i++) {
		printf("%-4s  %-28s %s\n",
		       items[i].ok         ? "ok"
		       : items[i].required ? "FAIL"
					   : "WARN",
		       items[i].check, items[i].detail);
		if (!items[i].ok)
			printf("      %-28s fix: %s\n", "", items[i].fix);
	}
}

int cmd_doctor(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "json", no_argument, NULL, 'j' },
					      { "vm-boot", no_argument, NULL, 'b' },
					      { "help", no_argument, NULL, 'h' },
					      { 0 } };
	int c;
	bool boot = false;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'j')
			cli->json = true;
		else if (c == 'b')
			boot = true;
		else if (c == 'h')
			return printf("%s", help), 0;
		else
			return cli_usage(cli, "bad option");
	}
	if (optind != argc)
		return cli_usage(cli, "unexpected argument '%s'", argv[optind]);
	if (cli->server)
		return cli_local_only(cli);
	struct al_doctor_item items[AL_DOCTOR_MAX], vm[AL_DOCTOR_MAX];
	int n = al_sandbox_doctor(items);
	int nvm = al_sandbox_doctor_vm(ops_guest_dir(), boot, vm);
	bool runs, vm_runs;
	json_t *arr = checks(items, n, &runs), *varr = checks(vm, nvm, &vm_runs);
	if (cli->json) {
		cli_json_print(json_pack("{s:b,s:o,s:{s:b,s:o}}", "runs", runs, "checks", arr, "vm",
					 "runs", vm_runs, "checks", varr));
		return runs ? 0 : 1;
	}
	print_items(items, n);
	printf("%s\n", runs ? "runs can work on this host"
			    : "runs cannot work on this host: fix the FAIL lines");
	print_items(vm, nvm);
	printf("%s\n", vm_runs ? "vm runs (--backend vm) can work on this host"
			       : "vm runs (--backend vm) cannot work on this host: fix the FAIL "
				 "lines above");
	json_decref(arr);
	json_decref(varr);
	return runs ? 0 : 1;
}
