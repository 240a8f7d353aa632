/* The user's config file, $XDG_CONFIG_HOME/airlock/config (else
 * ~/.config/airlock/config): defaults below the flags and the environment.
 * A line is "key = value", "#" starts a comment line; keys: home, server,
 * color, pager, token_file.  A token is read only from token_file, and only
 * when that file is a regular file of the user readable by no one else.
 * The config file itself is read only when the user (or root) owns it and
 * no one else may write it: whoever writes it chooses where a token goes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "airlock/util.h"

#define CONFIG_MAX (64 * 1024)
#define TOKEN_MAX 512

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = 0;
	return s;
}

int cli_config_path(char *out, size_t n)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	int len;
	if (xdg && *xdg)
		len = snprintf(out, n, "%s/airlock/config", xdg);
	else if (home && *home)
		len = snprintf(out, n, "%s/.config/airlock/config", home);
	else
		return -1;
	return len < 0 || (size_t)len >= n ? -1 : 0;
}

static int bad(const char *path, unsigned line, const char *what, const char *s)
{
	fprintf(stderr, "airlock: %s:%u: %s%s%s%s\n", cli_esc(path, "?"), line, what, s ? " '" : "",
		s ? cli_esc(s, "?") : "", s ? "'" : "");
	return 2;
}

int cli_config_load(struct cli_config *c)
{
	memset(c, 0, sizeof(*c));
	if (cli_config_path(c->path, sizeof(c->path)) < 0)
		return 0;
	int fd = open(c->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat sb;
	/* none, or out of reach (as git does: another user's HOME, e.g. after
	 * sudo -u): no config; a config that cannot be read is no token either */
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR || errno == EACCES))
		return 0;
	if (fd < 0 || fstat(fd, &sb) < 0) {
		fprintf(stderr, "airlock: the config file %s: %s\n", cli_esc(c->path, "?"),
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return 2;
	}
	/* who may write it chooses the server a token is sent to */
	const char *why = !S_ISREG(sb.st_mode)                      ? "not a regular file"
			  : sb.st_uid != getuid() && sb.st_uid != 0 ? "owned by another user"
			  : sb.st_mode & 022                        ? "writable by others"
			  : sb.st_size > CONFIG_MAX                 ? "over 64 KiB"
								    : NULL;
	if (why) {
		fprintf(stderr, "airlock: the config file %s is %s (mode %04o): not read; %s\n",
			cli_esc(c->path, "?"), why, (unsigned)(sb.st_mode & 07777),
			sb.st_mode & 022 ? "chmod go-w it" : "fix or remove it");
		close(fd);
		return 2;
	}
	char *text = malloc((size_t)sb.st_size + 1);
	ssize_t n = text ? read(fd, text, (size_t)sb.st_size) : -1;
	close(fd);
	if (n < 0) {
		fprintf(stderr, "airlock: the config file %s: %s\n", cli_esc(c->path, "?"),
			strerror(text ? errno : ENOMEM));
		free(text);
		return 2;
	}
	text[n] = 0;
	c->text = text;
	if (memchr(text, 0, (size_t)n))
		return bad(c->path, 1, "a NUL byte in the config file", NULL);
	unsigned line = 0;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		line++;
		l = trim(l);
		if (!*l || *l == '#')
			continue;
		char *eq = strchr(l, '=');
		if (!eq)
			return bad(c->path, line, "expected key = value, not", l);
		*eq = 0;
		char *k = trim(l), *v = trim(eq + 1);
		const char **slot = !strcmp(k, "home")         ? &c->home
				    : !strcmp(k, "server")     ? &c->server
				    : !strcmp(k, "color")      ? &c->color
				    : !strcmp(k, "pager")      ? &c->pager
				    : !strcmp(k, "token_file") ? &c->token_file
							       : NULL;
		if (!slot) {
			if (!strcmp(k, "token"))
				return bad(
					c->path, line,
					"a token is not kept in the config file: put it in a file "
					"only you can read (chmod 600) and name it with token_file",
					NULL);
			return bad(c->path, line,
				   "unknown key (one of home, server, color, pager, token_file)",
				   k);
		}
		*slot = v;
	}
	return 0;
}

int cli_token_file(const char *path, char **out)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0) {
		fprintf(stderr, "airlock: token_file %s: %s\n", cli_esc(path, "?"),
			errno == ELOOP ? "a symbolic link (name the file itself)"
				       : strerror(errno));
		if (fd >= 0)
			close(fd);
		return 2;
	}
	const char *why = !S_ISREG(sb.st_mode)    ? "not a regular file"
			  : sb.st_uid != getuid() ? "not owned by you"
			  : sb.st_mode & 077      ? "readable or writable by others"
						  : NULL;
	if (why) {
		fprintf(stderr,
			"airlock: token_file %s is %s (mode %04o): refusing to read a token from "
			"it; make it yours and private (chmod 600 %s)\n",
			cli_esc(path, "?"), why, (unsigned)(sb.st_mode & 07777),
			cli_esc(path, "?"));
		close(fd);
		return 2;
	}
	char buf[TOKEN_MAX + 2];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0 || n > TOKEN_MAX) {
		fprintf(stderr, "airlock: token_file %s: %s\n", cli_esc(path, "?"),
			n < 0 ? strerror(errno) : "too long for a token");
		return 2;
	}
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	char *t = trim(buf);
	if (!*t) {
		fprintf(stderr, "airlock: token_file %s is empty\n", cli_esc(path, "?"));
		return 2;
	}
	*out = strdup(t);
	return *out ? 0 : 1;
}
