/* airlock admin integration: credentials bound to a base URL, used on the
 * host on a run's behalf (include/airlock/integ.h).  On the local home, or
 * with --server through the API's /integrations routes (docs/api.md): the
 * same checks, outputs and exit codes. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "airlock/integ.h"
#include "airlock/store.h"
#include "cli.h"

static const char create_help[] =
	"usage: airlock admin integration create NAME --base-url URL --header \"NAME: VALUE\"\n"
	"                [--secret-file FILE] [--ca-file FILE] [--keep-bodies] [--insecure]\n"
	"                [--json]\n"
	"\n"
	"Bind a credential to an https base URL.  A run granted the integration that\n"
	"asks for it (airlock run --integration NAME) reaches\n"
	"$AIRLOCK_INTEGRATIONS/NAME/PATH; airlock sends the request to URL/PATH from the\n"
	"host with the header added, @secret in its value replaced by the secret.  The\n"
	"secret is read once (from --secret-file, else standard input; on a terminal,\n"
	"without echo), stored encrypted under the deployment's secrets key and never\n"
	"shown again.\n"
	"\n"
	"  --base-url URL      https://HOST[:PORT][/PATH] (no user, query or fragment)\n"
	"  --header \"N: V\"     the credential's header; V holds @secret exactly once\n"
	"                      (for example \"Authorization: Bearer @secret\")\n"
	"  --secret-file FILE  read the secret from FILE (one line; - for standard input)\n"
	"  --ca-file FILE      trust these PEM CA certificates for URL (default: the\n"
	"                      system's)\n"
	"  --keep-bodies       keep each call's request and response bodies in the run's\n"
	"                      record (default: their sha256 only)\n"
	"  --insecure          allow an http:// URL to a loopback address (tests; a local\n"
	"                      home only: the daemon refuses it)\n";

static const char grant_help[] =
	"usage: airlock admin integration grant NAME PROJECT|--principal P [--json]\n"
	"\n"
	"Let runs of PROJECT, or runs started by the principal P, use the integration.\n";

static const char list_help[] =
	"usage: airlock admin integration list [--json]\n"
	"\n"
	"The tenant's integrations: name base_url header-name projects principals\n"
	"(never the secret).\n";

static const char show_help[] = "usage: airlock admin integration show NAME [--json]\n"
				"\n"
				"One integration (never its secret).\n";

static const char delete_help[] = "usage: airlock admin integration delete NAME [--json]\n"
				  "\n"
				  "Delete the integration, its secret and its grants.\n";

static const char rotate_help[] =
	"usage: airlock admin integration rotate NAME [--header \"NAME: VALUE\"]\n"
	"                [--secret-file FILE] [--json]\n"
	"\n"
	"Replace the integration's secret (and, with --header, its header), keeping its\n"
	"base URL and grants.  The new secret is read as create reads it and never shown\n"
	"again; runs that already started keep the secret they loaded.\n"
	"\n"
	"  --header \"N: V\"     a new header; V holds @secret exactly once\n"
	"  --secret-file FILE  read the secret from FILE (one line; - for standard input)\n";

/* the secret: one line of path ("-": stdin), or stdin, or a prompt */
static int read_secret(const char *path, char *out, size_t n, struct al_error *err)
{
	FILE *f = stdin;
	bool tty = false;
	struct termios old, quiet;
	if (path && strcmp(path, "-")) {
		f = fopen(path, "re");
		if (!f)
			return al_fail(err, AL_EIO, errno, "integration: open %s", path);
	} else if (isatty(0) && tcgetattr(0, &old) == 0) {
		tty = true;
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		fputs("secret: ", stderr);
		tcsetattr(0, TCSAFLUSH, &quiet);
	}
	size_t k = 0;
	int c;
	bool over = false;
	while ((c = getc(f)) != EOF && c != '\n') {
		if (k + 1 < n)
			out[k++] = (char)c;
		else
			over = true;
	}
	out[k] = 0;
	if (k && out[k - 1] == '\r')
		out[--k] = 0;
	if (tty) {
		tcsetattr(0, TCSAFLUSH, &old);
		fputc('\n', stderr);
	}
	if (f != stdin)
		fclose(f);
	if (over)
		return al_fail(err, AL_ELIMIT, 0, "integration: a secret longer than %d bytes",
			       AL_INTEG_SECRET_MAX);
	if (!k)
		return al_fail(err, AL_EINVAL, 0,
			       "integration: no secret given (standard input "
			       "or --secret-file)");
	return 0;
}

/* POST /integrations: the secret leaves in this request's body only */
static int create_remote(struct cli *cli, const struct al_integ_spec *spec)
{
	json_t *body = json_pack("{s:s,s:s,s:s,s:s,s:b}", "name", spec->name, "base_url",
				 spec->base_url, "header", spec->header, "secret", spec->secret,
				 "keep_bodies", spec->keep_bodies);
	struct al_error err = { 0 };
	if (!body)
		return al_fail(&err, AL_ENOMEM, ENOMEM, "out of memory"), cli_error(cli, &err);
	if (spec->ca_pem)
		json_object_set_new(body, "ca_pem", json_string(spec->ca_pem));
	if (spec->insecure)
		json_object_set_new(body, "insecure", json_true());
	json_t *doc = NULL;
	int r = cli_http(cli, "POST", "/integrations", body, NULL, NULL, &doc, &err);
	json_t *sv = json_object_get(body, "secret");
	OPENSSL_cleanse((char *)json_string_value(sv), json_string_length(sv));
	json_decref(body);
	if (r < 0)
		return cli_remote_error(cli, &err, doc);
	json_decref(doc);
	return 0;
}

static int create(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "base-url", required_argument, NULL, 'u' },
		{ "header", required_argument, NULL, 'H' },
		{ "secret-file", required_argument, NULL, 's' },
		{ "ca-file", required_argument, NULL, 'c' },
		{ "keep-bodies", no_argument, NULL, 'k' },
		{ "insecure", no_argument, NULL, 'i' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct al_integ_spec spec = { 0 };
	const char *secret_file = NULL, *ca_file = NULL;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'u': spec.base_url = optarg; break;
		case 'H': spec.header = optarg; break;
		case 's': secret_file = optarg; break;
		case 'c': ca_file = optarg; break;
		case 'k': spec.keep_bodies = true; break;
		case 'i': spec.insecure = true; break;
		case 'j': cli->json = true; break;
		case 'h': fputs(create_help, stdout); return 0;
		default: fputs(create_help, stderr); return 2;
		}
	}
	if (optind + 1 != argc)
		return cli_usage(cli, "expected one integration NAME");
	if (!spec.base_url || !spec.header)
		return cli_usage(cli, "expected --base-url URL and --header \"NAME: VALUE\"");
	spec.name = argv[optind];
	spec.actor = cli_author(NULL);
	struct al_error err = { 0 };
	char *ca = NULL, secret[AL_INTEG_SECRET_MAX + 2];
	size_t n;
	if (ca_file && cli_read_small(ca_file, 1u << 20, &ca, &n, &err) < 0)
		return cli_error(cli, &err);
	spec.ca_pem = ca;
	/* every check but the secret's before the secret is asked for */
	if (al_integ_check(&spec, &err) < 0) {
		free(ca);
		return cli_error(cli, &err);
	}
	struct al_store *st = NULL;
	int rc = 0;
	if (read_secret(secret_file, secret, sizeof(secret), &err) < 0 ||
	    (!cli->server && cli_open(cli, &st, &err) < 0))
		rc = cli_error(cli, &err);
	spec.secret = secret;
	if (!rc && cli->server)
		rc = create_remote(cli, &spec);
	else if (!rc && al_integ_create(st, &spec, &err) < 0)
		rc = cli_error(cli, &err);
	OPENSSL_cleanse(secret, sizeof(secret));
	free(ca);
	al_store_close(st);
	if (rc)
		return rc;
	if (cli->json)
		return cli_json_print(json_pack("{s:s,s:s,s:s%}", "name", spec.name, "base_url",
						spec.base_url, "header", spec.header,
						strcspn(spec.header, ":")));
	printf("%s\n", spec.name);
	return 0;
}

/* POST /integrations/NAME/secret: the secret leaves in this body only */
static int rotate_remote(struct cli *cli, const char *name, const char *header, const char *secret)
{
	struct al_error err = { 0 };
	json_t *body = json_pack("{s:s}", "secret", secret), *doc = NULL;
	if (body && header)
		json_object_set_new(body, "header", json_string(header));
	if (!body)
		return al_fail(&err, AL_ENOMEM, ENOMEM, "out of memory"), cli_error(cli, &err);
	char path[256], esc[200];
	snprintf(path, sizeof(path), "/integrations/%s/secret",
		 cli_path_escape(name, esc, sizeof(esc)));
	int r = cli_http(cli, "POST", path, body, NULL, NULL, &doc, &err);
	json_t *sv = json_object_get(body, "secret");
	OPENSSL_cleanse((char *)json_string_value(sv), json_string_length(sv));
	json_decref(body);
	if (r < 0)
		return cli_remote_error(cli, &err, doc);
	json_decref(doc);
	return 0;
}

static int rotate(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "header", required_argument, NULL, 'H' },
		{ "secret-file", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *header = NULL, *secret_file = NULL;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'H': header = optarg; break;
		case 's': secret_file = optarg; break;
		case 'j': cli->json = true; break;
		case 'h': fputs(rotate_help, stdout); return 0;
		default: fputs(rotate_help, stderr); return 2;
		}
	}
	if (optind + 1 != argc)
		return cli_usage(cli, "expected one integration NAME");
	const char *name = argv[optind];
	struct al_error err = { 0 };
	/* the name and header checked before the secret is asked for */
	if (al_integ_name_check(name, &err) < 0 ||
	    (header && al_integ_header_check(header, &err) < 0))
		return cli_error(cli, &err);
	char secret[AL_INTEG_SECRET_MAX + 2];
	struct al_store *st = NULL;
	int rc = 0;
	if (read_secret(secret_file, secret, sizeof(secret), &err) < 0 ||
	    (!cli->server && cli_open(cli, &st, &err) < 0))
		rc = cli_error(cli, &err);
	if (!rc && cli->server)
		rc = rotate_remote(cli, name, header, secret);
	else if (!rc && al_integ_rotate(st, name, header, secret, cli_author(NULL), &err) < 0)
		rc = cli_error(cli, &err);
	OPENSSL_cleanse(secret, sizeof(secret));
	al_store_close(st);
	if (rc)
		return rc;
	if (cli->json) {
		json_t *o = json_pack("{s:s,s:b}", "rotated", name, "header", header != NULL);
		return cli_json_print(o);
	}
	printf("rotated %s\n", name);
	return 0;
}

static int grant(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "principal", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *principal = NULL;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': principal = optarg; break;
		case 'j': cli->json = true; break;
		case 'h': fputs(grant_help, stdout); return 0;
		default: fputs(grant_help, stderr); return 2;
		}
	}
	if (optind + (principal ? 1 : 2) != argc)
		return cli_usage(cli, "expected NAME and a PROJECT or --principal P");
	const char *name = argv[optind], *project = principal ? NULL : argv[optind + 1];
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	int rc = 0;
	if (cli->server) {
		char path[256], esc[200];
		snprintf(path, sizeof(path), "/integrations/%s/grants",
			 cli_path_escape(name, esc, sizeof(esc)));
		json_t *body = json_pack("{s:s}", project ? "project" : "principal",
					 project ? project : principal),
		       *doc = NULL;
		int r = cli_http(cli, "POST", path, body, NULL, NULL, &doc, &err);
		json_decref(body);
		if (r < 0)
			return cli_remote_error(cli, &err, doc);
		json_decref(doc);
	} else if (cli_open(cli, &st, &err) < 0 ||
		   al_integ_grant(st, name, project, principal, cli_author(NULL), &err) < 0)
		rc = cli_error(cli, &err);
	al_store_close(st);
	if (rc)
		return rc;
	if (cli->json)
		return cli_json_print(json_pack("{s:s,s:s}", "integration", name,
						project ? "project" : "principal",
						project ? project : principal));
	printf("%s: %s %s\n", name, project ? "project" : "principal",
	       cli_esc(project ? project : principal, "-"));
	return 0;
}

static void join(json_t *arr, char *out, size_t n)
{
	size_t k = 0, i;
	json_t *v;
	out[0] = 0;
	json_array_foreach(arr, i, v)
		k += (size_t)snprintf(out + k, n > k ? n - k : 0, "%s%s", i ? "," : "",
				      json_string_value(v));
	if (!k)
		snprintf(out, n, "-");
}

static void one_text(json_t *o)
{
	char projects[1024], principals[1024];
	join(json_object_get(o, "projects"), projects, sizeof(projects));
	join(json_object_get(o, "principals"), principals, sizeof(principals));
	printf("%s %s %s projects=%s principals=%s%s\n",
	       cli_esc(json_string_value(json_object_get(o, "name")), "-"),
	       cli_esc(json_string_value(json_object_get(o, "base_url")), "-"),
	       cli_esc(json_string_value(json_object_get(o, "header")), "-"),
	       cli_esc(projects, "-"), cli_esc(principals, "-"),
	       json_is_true(json_object_get(o, "keep_bodies")) ? " keep-bodies" : "");
}

static int listing(struct cli *cli, int argc, char **argv, const char *help, int nargs,
		   json_t **out)
{
	int rc = cli_simple_opts(cli, argc, argv, help, nargs);
	if (rc >= 0)
		return rc;
	if (cli->server)
		return cli_remote_get(cli, "/integrations", out);
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	rc = -1;
	if (cli_open(cli, &st, &err) < 0 || al_integ_list(st, out, &err) < 0)
		rc = cli_error(cli, &err);
	al_store_close(st);
	return rc;
}

static int list(struct cli *cli, int argc, char **argv)
{
	json_t *arr = NULL;
	int rc = listing(cli, argc, argv, list_help, 0, &arr);
	if (rc >= 0)
		return rc;
	if (cli->json)
		return cli_json_print(arr);
	size_t i;
	json_t *o;
	json_array_foreach(arr, i, o)
		one_text(o);
	json_decref(arr);
	return 0;
}

static int show(struct cli *cli, int argc, char **argv)
{
	json_t *arr = NULL;
	if (cli->server) {
		int rc = cli_simple_opts(cli, argc, argv, show_help, 1);
		if (rc >= 0)
			return rc;
		char path[256], esc[200];
		snprintf(path, sizeof(path), "/integrations/%s",
			 cli_path_escape(argv[optind], esc, sizeof(esc)));
		json_t *doc = NULL;
		if ((rc = cli_remote_get(cli, path, &doc)) >= 0)
			return rc;
		arr = json_array();
		json_array_append_new(arr, doc);
	} else {
		int rc = listing(cli, argc, argv, show_help, 1, &arr);
		if (rc >= 0)
			return rc;
	}
	int rc;
	const char *name = argv[optind];
	size_t i;
	json_t *o, *found = NULL;
	json_array_foreach(arr, i, o)
		if (!strcmp(json_string_value(json_object_get(o, "name")), name))
			found = o;
	struct al_error err = { 0 };
	if (!found) {
		al_fail(&err, AL_ENOTFOUND, 0, "no integration %s", cli_esc(name, "-"));
		json_decref(arr);
		return cli_error(cli, &err);
	}
	if (cli->json)
		rc = cli_json_print(json_incref(found));
	else {
		one_text(found);
		rc = 0;
	}
	json_decref(arr);
	return rc;
}

static int delete (struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(cli, argc, argv, delete_help, 1);
	if (rc >= 0)
		return rc;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	rc = 0;
	if (cli->server) {
		char path[256], esc[200];
		snprintf(path, sizeof(path), "/integrations/%s",
			 cli_path_escape(argv[optind], esc, sizeof(esc)));
		json_t *doc = NULL;
		if (cli_http(cli, "DELETE", path, NULL, NULL, NULL, &doc, &err) < 0)
			return cli_remote_error(cli, &err, doc);
		json_decref(doc);
	} else if (cli_open(cli, &st, &err) < 0 ||
		   al_integ_delete(st, argv[optind], cli_author(NULL), &err) < 0)
		rc = cli_error(cli, &err);
	al_store_close(st);
	if (rc)
		return rc;
	if (cli->json)
		return cli_json_print(json_pack("{s:s}", "deleted", argv[optind]));
	printf("deleted %s\n", argv[optind]);
	return 0;
}

int cmd_admin_integration(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "create", create, "bind a credential to a base URL (the secret read once)" },
		{ "grant", grant, "let a project's or a principal's runs use one" },
		{ "rotate", rotate, "replace one's secret (read once), keeping its grants" },
		{ "list", list, "list the tenant's integrations (never a secret)" },
		{ "show", show, "one integration (never its secret)" },
		{ "delete", delete, "delete one, its secret and its grants" },
		{ 0 },
	};
	return cli_dispatch(cli, "admin integration", cmds, argc - 1, argv + 1);
}
