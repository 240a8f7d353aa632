/* auth: principals, roles, grants and tokens; a token is stored only as a
 * hash, every failure is the same AL_EAUTH, tenants do not see each
 * other's principals or tokens. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "airlock/auth.h"
#include "airlock/store.h"
#include "util.h"

static char home[64];

static int setup(void **state)
{
	(void)state;
	snprintf(home, sizeof(home), "/tmp/airlock-auth-XXXXXX");
	assert_non_null(mkdtemp(home));
	struct al_error err = { 0 };
	assert_int_equal(al_home_init(home, &err), 0);
	assert_int_equal(al_home_tenant_create(home, "acme", "test", &err), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	al_rm_tree(home);
	return 0;
}

static void test_roles(void **state)
{
	(void)state;
	unsigned r = 0;
	char buf[64];
	struct al_error err = { 0 };
	assert_int_equal(al_roles_parse("author,agent", &r, &err), 0);
	assert_int_equal(r, AL_ROLE_AUTHOR | AL_ROLE_AGENT);
	al_roles_format(r, buf, sizeof(buf));
	assert_string_equal(buf, "author,agent");
	assert_int_equal(al_roles_parse("root", &r, &err), AL_EINVAL);
	assert_non_null(strstr(err.msg, "root"));
	assert_int_equal(al_roles_parse("", &r, &err), AL_EINVAL);
	assert_int_equal(al_roles_parse("admin,", &r, &err), 0);
	assert_int_equal(r, AL_ROLE_ADMIN);
}

static void test_names(void **state)
{
	(void)state;
	assert_int_equal(al_principal_name_check("alice@acme.example", NULL), 0);
	assert_int_equal(al_principal_name_check("../x", NULL), AL_EINVAL);
	assert_int_equal(al_principal_name_check("", NULL), AL_EINVAL);
	assert_int_equal(al_principal_name_check("a b", NULL), AL_EINVAL);
	char long_name[80];
	memset(long_name, 'a', 65);
	long_name[65] = 0;
	assert_int_equal(al_principal_name_check(long_name, NULL), AL_EINVAL);
}

static int count_tokens(void *ctx, const struct al_token_info *t, struct al_error *err)
{
	(void)t;
	(void)err;
	(*(int *)ctx)++;
	return 0;
}

static void test_tokens(void **state)
{
	(void)state;
	struct al_auth *a = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_auth_open(home, &a, &err), 0);
	assert_int_equal(
		al_auth_principal_create(a, "default", "alice", AL_ROLE_AUTHOR, "test", &err), 0);
	assert_int_equal(
		al_auth_principal_create(a, "default", "alice", AL_ROLE_AUTHOR, "test", &err),
		AL_EEXIST);
	assert_int_equal(al_auth_principal_create(a, "nosuch", "bob", AL_ROLE_AUTHOR, "test", &err),
			 AL_ENOTFOUND);
	assert_int_equal(al_auth_principal_create(a, "acme", "alice", AL_ROLE_AGENT, "test", &err),
			 0); /* another tenant's alice */

	char tok[AL_TOKEN_LEN + 1], tok2[AL_TOKEN_LEN + 1];
	struct al_token_info t, t2;
	assert_int_equal(al_auth_token_create(a, "default", "alice", 0, tok, &t, "test", &err), 0);
	assert_int_equal(strlen(tok), AL_TOKEN_LEN);
	assert_memory_equal(tok, "alk_", 4);
	assert_int_equal(t.expires, 0);
	assert_int_equal(al_auth_token_create(a, "default", "nobody", 0, tok2, &t2, "test", &err),
			 AL_ENOTFOUND);
	assert_int_equal(al_auth_token_create(a, "default", "alice", -1, tok2, &t2, "test", &err),
			 AL_EINVAL);

	struct al_principal p;
	assert_int_equal(al_auth_check(a, tok, &p, &err), 0);
	assert_string_equal(p.tenant, "default");
	assert_string_equal(p.name, "alice");
	assert_int_equal(p.roles, AL_ROLE_AUTHOR);
	assert_string_equal(p.token_id, t.id);

	/* every failure is one answer */
	struct al_error e1 = { 0 }, e2 = { 0 }, e3 = { 0 }, e4 = { 0 };
	char wrong[AL_TOKEN_LEN + 1];
	snprintf(wrong, sizeof(wrong), "%s", tok);
	wrong[10] = wrong[10] == 'a' ? 'b' : 'a';
	assert_int_equal(al_auth_check(a, wrong, &p, &e1), AL_EAUTH);
	assert_int_equal(p.name[0], 0);
	assert_int_equal(al_auth_check(a, "alk_short", &p, &e2), AL_EAUTH);
	assert_int_equal(al_auth_check(a, NULL, &p, &e3), AL_EAUTH);
	assert_string_equal(e1.msg, e2.msg);
	assert_string_equal(e1.msg, e3.msg);

	/* revoke: by id, only within the tenant */
	assert_int_equal(al_auth_token_revoke(a, "acme", t.id, "test", &err), AL_ENOTFOUND);
	assert_int_equal(al_auth_check(a, tok, &p, &err), 0);
	assert_int_equal(al_auth_token_revoke(a, "default", t.id, "test", &err), 0);
	assert_int_equal(al_auth_check(a, tok, &p, &e4), AL_EAUTH);
	assert_string_equal(e1.msg, e4.msg);

	/* expiry */
	assert_int_equal(al_auth_token_create(a, "acme", "alice", 1, tok2, &t2, "test", &err), 0);
	assert_int_equal(t2.expires, t2.created + 1);
	sleep(2);
	assert_int_equal(al_auth_check(a, tok2, &p, &err), AL_EAUTH);

	/* listings are per tenant and never hold the token's text */
	int n = 0;
	assert_int_equal(al_auth_token_foreach(a, "default", NULL, count_tokens, &n, &err), 0);
	assert_int_equal(n, 1);
	n = 0;
	assert_int_equal(al_auth_token_foreach(a, "acme", "alice", count_tokens, &n, &err), 0);
	assert_int_equal(n, 1);
	al_auth_close(a);

	/* the database holds the hash, not the text */
	char path[128];
	snprintf(path, sizeof(path), "%s/airlock.db", home);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	static char buf[1 << 20];
	size_t len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_null(memmem(buf, len, tok + 4, 64));
	assert_null(memmem(buf, len, tok2 + 4, 64));
}

static void test_grants(void **state)
{
	(void)state;
	struct al_auth *a = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_auth_open(home, &a, &err), 0);
	assert_int_equal(al_auth_principal_create(a, "default", "bot", AL_ROLE_AGENT, "test", &err),
			 0);
	assert_int_equal(al_auth_grant(a, "default", "bot", "books", "test", &err), 0);
	assert_int_equal(al_auth_grant(a, "default", "bot", "books", "test", &err),
			 0); /* idempotent */
	assert_int_equal(al_auth_grant(a, "acme", "bot", "books", "test", &err), AL_ENOTFOUND);
	struct al_principal p;
	assert_int_equal(al_auth_principal_get(a, "default", "bot", &p, &err), 0);
	assert_true(al_auth_granted(a, &p, "books"));
	assert_false(al_auth_granted(a, &p, "payroll"));
	struct al_principal other = p;
	snprintf(other.tenant, sizeof(other.tenant), "acme");
	assert_false(al_auth_granted(a, &other, "books"));
	al_auth_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_names),
		cmocka_unit_test_setup_teardown(test_tokens, setup, teardown),
		cmocka_unit_test_setup_teardown(test_grants, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
