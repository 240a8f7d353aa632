/* airlock image import|list */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "airlock/image.h"
#include "airlock/store.h"
#include "cli.h"
#include "airlock/util.h"

static int image_import(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *name = NULL;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': name = optarg; break;
		case 'j': cli->json = true; break;
		case 'h':
			printf("usage: airlock image import DIR|TARBALL [--name N] [--json]\n\n"
			       "Store a root filesystem (a directory, or a tar archive in any "
			       "compression)\n"
			       "as an image and print its id. Device files, FIFOs and sockets are "
			       "skipped\n"
			       "and counted (the sandbox provides /dev). --name gives it a name "
			       "runs can use\n"
			       "(importing again under the same name moves the name).\n");
			return 0;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (argc - optind != 1)
		return cli_usage(cli, "expected DIR or TARBALL");
	struct al_error err = { 0 };
	json_t *doc = NULL;
	if (cli->server) {
		/* a tarball is uploaded; a directory needs the local home */
		struct stat sb;
		if (stat(argv[optind], &sb) == 0 && S_ISDIR(sb.st_mode))
			return cli_local_only(cli);
		char path[256] = "/images", esc[200];
		if (name)
			snprintf(path, sizeof(path), "/images?name=%s",
				 cli_path_escape(name, esc, sizeof(esc)));
		if (cli_http(cli, "POST", path, NULL, argv[optind], NULL, &doc, &err) < 0)
			return cli_remote_error(cli, &err, doc);
	} else {
		struct al_store *st = NULL;
		if (cli_open(cli, &st, &err) < 0)
			return cli_error(cli, &err);
		struct al_import_result res;
		int r = al_image_import_as(st, argv[optind], name, argv[optind], cli_author(NULL),
					   &res, &err);
		al_store_close(st);
		if (r < 0)
			return cli_error(cli, &err);
		doc = view_image_import(&res, name);
	}
	if (cli->json)
		return cli_json_print(doc);
	printf("%s\n", json_string_value(json_object_get(doc, "id")));
	long long skipped = (long long)json_integer_value(json_object_get(doc, "skipped"));
	if (skipped)
		fprintf(stderr, "%s: skipped %lld device files, FIFOs or sockets\n", cli->prog,
			skipped);
	json_decref(doc);
	return 0;
}

static void image_text(json_t *im)
{
	const char *name = json_string_value(json_object_get(im, "name"));
	const char *source = json_string_value(json_object_get(im, "source"));
	printf("%s %s %s\n", cli_esc(name, "-"),
	       cli_esc(json_string_value(json_object_get(im, "id")), "-"), cli_esc(source, "-"));
}

static int run_list(struct al_store *st, const char *arg, json_t *arr, struct al_error *err)
{
	(void)arg;
	return view_images(st, arr, err);
}

static int image_list(struct cli *cli, int argc, char **argv)
{
	return cli_list(
		cli, argc, argv,
		"usage: airlock image list [--json]\n\nOne line per image: name id source.\n", 0,
		"/images", run_list, image_text);
}

int cmd_image(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "import", image_import, "store a root filesystem (dir or tarball) as an image" },
		{ "list", image_list, "list images" },
		{ 0 },
	};
	return cli_dispatch(cli, "image", cmds, argc - 1, argv + 1);
}
