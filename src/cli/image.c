/* airlock image import|list */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "airlock/image.h"
#include "airlock/store.h"
#include "cli.h"
#include "util.h"

static int image_import(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' }, { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
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
			       "Store a root filesystem (a directory, or a tar archive in any compression)\n"
			       "as an image and print its id. Device files, FIFOs and sockets are skipped\n"
			       "and counted (the sandbox provides /dev). --name gives it a name runs can use\n"
			       "(importing again under the same name moves the name).\n");
			return 0;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (argc - optind != 1)
		return cli_usage(cli, "expected DIR or TARBALL");
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	struct al_import_result res;
	int r = al_image_import(st, argv[optind], name, &res, &err);
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	if (cli->json) {
		json_t *o = json_pack("{s:I,s:I,s:I}", "files", (json_int_t)res.files, "bytes", (json_int_t)res.bytes,
				      "skipped", (json_int_t)res.skipped);
		json_object_set_new(o, "id", view_id(res.id));
		json_object_set_new(o, "name", name ? json_string(name) : json_null());
		return cli_json_print(o);
	}
	char id[AL_ID_STRLEN + 1];
	al_id_fmt(res.id, id);
	printf("%s\n", id);
	if (res.skipped)
		fprintf(stderr, "%s: skipped %llu device files, FIFOs or sockets\n", cli->prog,
			(unsigned long long)res.skipped);
	return 0;
}

static void image_text(json_t *im)
{
	const char *name = json_string_value(json_object_get(im, "name"));
	const char *source = json_string_value(json_object_get(im, "source"));
	printf("%s %s %s\n", name ? name : "-", json_string_value(json_object_get(im, "id")), source ? source : "-");
}

static int run_list(struct al_store *st, const char *arg, json_t *arr, struct al_error *err)
{
	(void)arg;
	return view_images(st, arr, err);
}

static int image_list(struct cli *cli, int argc, char **argv)
{
	return cli_list(cli, argc, argv, "usage: airlock image list [--json]\n\nOne line per image: name id source.\n", 0,
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
