/* airlock whoami: who the CLI acts as.  Locally the OS user (the author of
 * commits and runs), the home and the tenant; with --server the daemon's
 * answer for the token (GET /api/whoami). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_whoami(struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(
		cli, argc, argv,
		"usage: airlock whoami [--json]\n\n"
		"Local: the user commits and runs are recorded as (AIRLOCK_AUTHOR, else the\n"
		"OS user), the home and the tenant. --json: "
		"{\"user\",\"uid\",\"home\",\"tenant\"}.\n"
		"With --server: the token's principal, tenant, roles, project grants, token\n"
		"id and when the token expires (GET /api/whoami; --json prints that answer\n"
		"as it is).\n",
		0);
	if (rc >= 0)
		return rc;
	if (!cli->server) {
		const char *user = cli_author(NULL);
		if (cli->json)
			return cli_json_print(json_pack("{s:s,s:I,s:s,s:s}", "user", user, "uid",
							(json_int_t)getuid(), "home", cli->home,
							"tenant", cli->tenant));
		printf("user    %s\nhome    %s\ntenant  %s\n", cli_esc(user, "?"),
		       cli_esc(cli->home, "?"), cli_esc(cli->tenant, "?"));
		return 0;
	}
	json_t *doc;
	if ((rc = cli_remote_get(cli, "/whoami", &doc)) >= 0)
		return rc;
	if (cli->json)
		return cli_json_print(doc);
	printf("principal  %s\ntenant     %s\nroles      ",
	       cli_esc(json_string_value(json_object_get(doc, "name")), "?"),
	       cli_esc(json_string_value(json_object_get(doc, "tenant")), "?"));
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(doc, "roles"), i, v)
		printf("%s%s", i ? "," : "", cli_esc(json_string_value(v), "?"));
	printf("\ncreated    %s\ntoken      %s\n",
	       cli_when(json_integer_value(json_object_get(doc, "created")), 0),
	       cli_esc(json_string_value(json_object_get(doc, "token")), "-"));
	json_t *exp = json_object_get(doc, "token_expires");
	printf("expires    %s\n",
	       json_is_integer(exp) ? cli_when(json_integer_value(exp), 0) : "never");
	json_array_foreach(json_object_get(doc, "projects"), i, v) {
		char *s = json_dumps(v, JSON_COMPACT);
		printf("grant      %s\n", cli_esc(s, "?"));
		free(s);
	}
	json_decref(doc);
	return 0;
}
