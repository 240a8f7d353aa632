/* integ: integrations (integ.h, integ_private.h).
 *
 * Stored in the tenant's meta.db (integrations, integration_grants); the
 * secret sealed with AES-256-GCM under a key derived from the deployment's
 * secrets key (HMAC-SHA256(key, "airlock integration v1")), the
 * integration's name as associated data, so a sealed secret moved to
 * another row does not open.
 *
 * The relay: the namespace backend hands us a listening socket in the
 * sandbox's network namespace (127.0.0.1:AL_INTEG_PORT there).  Each
 * connection carries one request in origin form, "METHOD /NAME/PATH
 * HTTP/1.1" with a Content-Length body or none; it is parsed strictly
 * here, NAME must be an integration the run was granted, PATH must stay
 * below the base URL (no "." or ".." segment, encoded or not, no
 * backslash, no encoded slash), and the request is sent from the host with
 * libcurl to BASE_URL/PATH, the credential header added, redirects not
 * followed, no proxy.  The answer goes back with its status, its
 * Content-Type and its body only.  Every call, refused ones too, is in
 * the run's record. */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "airlock/auth.h"
#include "airlock/integ.h"
#include "airlock/volume.h"
#include "curl_private.h"
#include "db.h"
#include "integ_private.h"
#include "ledger_private.h"
#include "serve_private.h"
#include "store_private.h"
#include "util.h"

/* ---- checks ------------------------------------------------------------------------ */

int al_integ_name_check(const char *name, struct al_error *err)
{
	size_t n = name ? strlen(name) : 0;
	bool ok = n >= 1 && n <= 63 &&
		  ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9'));
	for (size_t i = 1; ok && i < n; i++)
		ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
		     name[i] == '_' || name[i] == '-';
	if (ok)
		return 0;
	char q[4 * 64 + 1];
	al_quote(name ? name : "", n < 64 ? n : 64, q, sizeof(q));
	return al_fail(err, AL_EINVAL, 0,
		       "invalid integration name '%s' (expected [a-z0-9][a-z0-9_-]{0,62})", q);
}

static bool url_path_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("-._~!$&'()*+,;=:@", c);
}

/* A base URL: https://HOST[:PORT][/PATH], HOST a name, an IPv4 or a
 * bracketed IPv6 literal, PATH plain segments (no ".", "..", '%', '?',
 * '#'); http:// only when insecure and HOST is a loopback address. */
static int base_url_check(const char *url, bool insecure, struct al_error *err)
{
	char q[4 * 80 + 1];
	size_t n = url ? strlen(url) : 0;
	al_quote(url ? url : "", n < 80 ? n : 80, q, sizeof(q));
	bool https = !strncmp(url ? url : "", "https://", 8);
	bool http = !https && !strncmp(url ? url : "", "http://", 7);
	if (!https && !http)
		return al_fail(err, AL_EINVAL, 0,
			       "integration: base URL '%s' is not https://HOST[:PORT][/PATH]", q);
	if (n > 2048)
		return al_fail(err, AL_EINVAL, 0, "integration: base URL longer than 2048 bytes");
	const char *a = url + (https ? 8 : 7);
	size_t al = strcspn(a, "/");
	if (!al)
		return al_fail(err, AL_EINVAL, 0, "integration: base URL '%s' has no host", q);
	for (size_t i = 0; i < al; i++) {
		char c = a[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("-._:[]", c)))
			return al_fail(err, AL_EINVAL, 0,
				       "integration: base URL '%s': bad host (no user, query or "
				       "fragment)",
				       q);
	}
	const char *p = a + al;
	while (*p) {
		const char *seg = ++p; /* after '/' */
		size_t sl = strcspn(seg, "/");
		for (size_t i = 0; i < sl; i++)
			if (!url_path_char(seg[i]))
				return al_fail(err, AL_EINVAL, 0,
					       "integration: base URL '%s': bad path character", q);
		if ((sl == 1 && seg[0] == '.') || (sl == 2 && !strncmp(seg, "..", 2)))
			return al_fail(err, AL_EINVAL, 0,
				       "integration: base URL '%s': a '.' or '..' segment", q);
		p = seg + sl;
	}
	if (http) {
		bool loop = !strncmp(a, "127.", 4) || !strncmp(a, "[::1]", 5) ||
			    !strncmp(a, "localhost", 9);
		size_t hl = a[0] == '[' ? (size_t)(strchr(a, ']') ? strchr(a, ']') - a + 1 : 0)
					: strcspn(a, ":/");
		loop = loop && (hl == 5 || hl == 9 || a[0] == '1') && hl <= al;
		if (a[0] == 'l' && hl != 9)
			loop = false;
		if (!insecure)
			return al_fail(err, AL_EINVAL, 0,
				       "integration: base URL '%s' is not https (http:// only with "
				       "--insecure, to a loopback address)",
				       q);
		if (!loop)
			return al_fail(
				err, AL_EINVAL, 0,
				"integration: --insecure allows http:// to a loopback address "
				"only, not '%s'",
				q);
	}
	return 0;
}

static bool token_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("!#$%&'*+-.^_`|~", c);
}

/* "Name: value with @secret": name's length in *nl */
static int header_check(const char *h, size_t *nl, struct al_error *err)
{
	size_t n = h ? strlen(h) : 0, k = 0;
	while (k < n && token_char(h[k]))
		k++;
	if (!k || k >= n || h[k] != ':' || k > 64)
		return al_fail(err, AL_EINVAL, 0,
			       "integration: --header takes \"Name: value\" (for example "
			       "\"Authorization: Bearer @secret\")");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)h[i] < 0x20 || h[i] == 0x7f)
			return al_fail(err, AL_EINVAL, 0,
				       "integration: --header has a control character");
	static const char *const reserved[] = {
		"host",    "content-length", "transfer-encoding", "connection",         "te",
		"upgrade", "expect",         "keep-alive",        "proxy-authorization"
	};
	for (size_t i = 0; i < ARRAY_SIZE(reserved); i++)
		if (strlen(reserved[i]) == k && !strncasecmp(h, reserved[i], k))
			return al_fail(err, AL_EINVAL, 0, "integration: --header cannot set %.*s",
				       (int)k, h);
	const char *s = strstr(h + k, "@secret");
	if (!s || strstr(s + 7, "@secret"))
		return al_fail(
			err, AL_EINVAL, 0,
			"integration: --header's value must hold @secret exactly once (where "
			"the credential goes)");
	*nl = k;
	return 0;
}

int al_integ_header_check(const char *header, struct al_error *err)
{
	size_t nl;
	return header_check(header, &nl, err);
}

static int secret_check(const char *s, struct al_error *err)
{
	size_t n = s ? strlen(s) : 0;
	if (!n)
		return al_fail(err, AL_EINVAL, 0, "integration: an empty secret");
	if (n > AL_INTEG_SECRET_MAX)
		return al_fail(err, AL_ELIMIT, 0, "integration: a secret longer than %d bytes",
			       AL_INTEG_SECRET_MAX);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return al_fail(err, AL_EINVAL, 0,
				       "integration: the secret has a control character (it goes "
				       "into a header)");
	return 0;
}

/* ---- sealing ----------------------------------------------------------------------- */

#define SEAL_NONCE 12
#define SEAL_TAG 16

static int seal_key(struct al_store *st, uint8_t out[32], struct al_error *err)
{
	uint8_t key[AL_SECRET_KEY_LEN];
	int r = al_store__secret_key(st, key, err);
	if (r < 0)
		return r;
	static const char label[] = "airlock integration v1";
	unsigned len = 32;
	bool ok = HMAC(EVP_sha256(), key, sizeof(key), (const uint8_t *)label, sizeof(label) - 1,
		       out, &len) != NULL;
	explicit_bzero(key, sizeof(key));
	return ok ? 0 : al_fail(err, AL_EIO, 0, "integration: derive the key");
}

/* nonce | ciphertext | tag, in a malloc'd *out */
static int seal(struct al_store *st, const char *name, const char *secret, uint8_t **out,
		size_t *outlen, struct al_error *err)
{
	uint8_t key[32];
	int r = seal_key(st, key, err);
	if (r < 0)
		return r;
	size_t n = strlen(secret);
	uint8_t *b = malloc(SEAL_NONCE + n + SEAL_TAG);
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int l1 = 0, l2 = 0;
	bool ok = b && c && getrandom(b, SEAL_NONCE, 0) == SEAL_NONCE &&
		  EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, b) == 1 &&
		  EVP_EncryptUpdate(c, NULL, &l1, (const uint8_t *)name, (int)strlen(name)) == 1 &&
		  EVP_EncryptUpdate(c, b + SEAL_NONCE, &l1, (const uint8_t *)secret, (int)n) == 1 &&
		  EVP_EncryptFinal_ex(c, b + SEAL_NONCE + l1, &l2) == 1 &&
		  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, SEAL_TAG, b + SEAL_NONCE + n) == 1;
	explicit_bzero(key, sizeof(key));
	EVP_CIPHER_CTX_free(c);
	if (!ok) {
		free(b);
		return al_fail(err, AL_EIO, 0, "integration: seal the secret");
	}
	*out = b;
	*outlen = SEAL_NONCE + n + SEAL_TAG;
	return 0;
}

static int unseal(struct al_store *st, const char *name, const uint8_t *b, size_t len, char **out,
		  struct al_error *err)
{
	if (len < SEAL_NONCE + SEAL_TAG || len > SEAL_NONCE + SEAL_TAG + AL_INTEG_SECRET_MAX)
		return al_fail(err, AL_ECORRUPT, 0, "integration %s: a damaged secret", name);
	uint8_t key[32];
	int r = seal_key(st, key, err);
	if (r < 0)
		return r;
	size_t n = len - SEAL_NONCE - SEAL_TAG;
	char *s = malloc(n + 1);
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int l1 = 0, l2 = 0;
	bool ok = s && c && EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, b) == 1 &&
		  EVP_DecryptUpdate(c, NULL, &l1, (const uint8_t *)name, (int)strlen(name)) == 1 &&
		  EVP_DecryptUpdate(c, (uint8_t *)s, &l1, b + SEAL_NONCE, (int)n) == 1 &&
		  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, SEAL_TAG,
				      (void *)(b + SEAL_NONCE + n)) == 1 &&
		  EVP_DecryptFinal_ex(c, (uint8_t *)s + l1, &l2) == 1;
	explicit_bzero(key, sizeof(key));
	EVP_CIPHER_CTX_free(c);
	if (!ok) {
		if (s)
			explicit_bzero(s, n);
		free(s);
		return al_fail(err, AL_ECORRUPT, 0,
			       "integration %s: its secret does not open under this deployment's "
			       "secrets key",
			       name);
	}
	s[n] = 0;
	*out = s;
	return 0;
}

/* ---- the catalogue ----------------------------------------------------------------- */

/* An admin act in a write transaction of meta.db with its ledger entry
 * (data stolen). */
static int begin(struct al_store *st, struct al_db_txn *txn, struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	return r < 0 ? r : al_db_begin(db, AL_DB_WRITE, txn, err);
}

static int entry(struct al_store *st, struct al_db_txn *txn, const char *kind, const char *actor,
		 json_t *data, struct al_error *err)
{
	char group[17];
	al_ledger__new_group(group);
	struct al_ledger_rec lr = {
		.kind = kind, .group = group, .actor = actor ? actor : "", .data = data
	};
	int r = data ? al_ledger__append_txn(st, txn, &lr, NULL, err)
		     : al_fail(err, AL_ENOMEM, ENOMEM, "ledger");
	json_decref(data);
	return r;
}

static int exists(struct al_db *db, const char *name, bool *out, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(db, "SELECT 1 FROM integrations WHERE name = ?1", &q, err);
	if (r < 0)
		return r;
	al_db_bind_text(q, 1, name, -1);
	if ((r = al_db_step(q, err)) < 0)
		return r;
	*out = r == AL_DB_ROW;
	return 0;
}

/* 0 if the tenant has the integration name, else AL_ENOTFOUND */
static int found(struct al_db *db, const char *name, struct al_error *err)
{
	bool had = false;
	int r = exists(db, name, &had, err);
	return r < 0 ? r : had ? 0 : al_fail(err, AL_ENOTFOUND, 0, "no integration %s", name);
}

int al_integ_check(const struct al_integ_spec *spec, struct al_error *err)
{
	size_t nl = 0;
	int r;
	if ((r = al_integ_name_check(spec->name, err)) < 0 ||
	    (r = base_url_check(spec->base_url, spec->insecure, err)) < 0 ||
	    (r = header_check(spec->header, &nl, err)) < 0 ||
	    (spec->secret && (r = secret_check(spec->secret, err)) < 0))
		return r;
	if (spec->ca_pem && (!strstr(spec->ca_pem, "-----BEGIN CERTIFICATE-----") ||
			     strlen(spec->ca_pem) > (1u << 20)))
		return al_fail(err, AL_EINVAL, 0,
			       "integration: the CA file holds no PEM certificate");
	return 0;
}

int al_integ_create(struct al_store *st, const struct al_integ_spec *spec, struct al_error *err)
{
	int r = spec->secret ? al_integ_check(spec, err)
			     : al_fail(err, AL_EINVAL, 0, "integration: no secret");
	if (r < 0)
		return r;
	size_t nl = strcspn(spec->header, ":");
	char base[2100];
	snprintf(base, sizeof(base), "%s", spec->base_url);
	size_t bl = strlen(base);
	while (bl > 8 && base[bl - 1] == '/')
		base[--bl] = 0;
	uint8_t *sealed = NULL;
	size_t slen = 0;
	if ((r = seal(st, spec->name, spec->secret, &sealed, &slen, err)) < 0)
		return r;
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	if ((r = begin(st, &txn, err)) < 0) {
		free(sealed);
		return r;
	}
	bool had = false;
	if ((r = exists(txn.db, spec->name, &had, err)) == 0 && had)
		r = al_fail(err, AL_EEXIST, 0, "integration %s exists", spec->name);
	if (r == 0) {
		_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
		r = al_db_prepare(txn.db,
				  "INSERT INTO integrations(name, base_url, header, secret, ca, "
				  "keep_bodies, insecure, created, created_by) VALUES "
				  "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
				  &q, err);
		if (r == 0) {
			al_db_bind_text(q, 1, spec->name, -1);
			al_db_bind_text(q, 2, base, -1);
			al_db_bind_text(q, 3, spec->header, -1);
			al_db_bind_blob(q, 4, sealed, slen);
			if (spec->ca_pem)
				al_db_bind_text(q, 5, spec->ca_pem, -1);
			else
				al_db_bind_null(q, 5);
			al_db_bind_int64(q, 6, spec->keep_bodies);
			al_db_bind_int64(q, 7, spec->insecure);
			al_db_bind_int64(q, 8, al_wall_s());
			al_db_bind_text(q, 9, spec->actor ? spec->actor : "", -1);
			if ((r = al_db_step(q, err)) > 0)
				r = 0;
		}
	}
	free(sealed);
	if (r == 0)
		r = entry(st, &txn, "integration_create", spec->actor,
			  json_pack("{s:s,s:s,s:s%,s:b,s:b,s:b}", "integration", spec->name,
				    "base_url", base, "header", spec->header, nl, "keep_bodies",
				    spec->keep_bodies, "insecure", spec->insecure, "ca",
				    spec->ca_pem != NULL),
			  err);
	return al_ledger__commit(st, &txn, r, err);
}

int al_integ_grant(struct al_store *st, const char *name, const char *project,
		   const char *principal, const char *actor, struct al_error *err)
{
	int r = al_integ_name_check(name, err);
	if (r < 0)
		return r;
	const char *kind = project ? "project" : "principal", *who = project ? project : principal;
	if (!who || (project && principal))
		return al_fail(err, AL_EUSAGE, 0, "integration grant: a project or a principal");
	if ((r = project ? al_project_name_check(project, err)
			 : al_principal_name_check(principal, err)) < 0)
		return r;
	if (project) {
		struct al_project_info pi;
		if ((r = al_project_get(st, project, &pi, err)) < 0)
			return r;
	}
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	if ((r = begin(st, &txn, err)) < 0)
		return r;
	r = found(txn.db, name, err);
	if (r == 0) {
		_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
		r = al_db_prepare(txn.db,
				  "INSERT INTO integration_grants(integration, kind, who) "
				  "VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
				  &q, err);
		if (r == 0) {
			al_db_bind_text(q, 1, name, -1);
			al_db_bind_text(q, 2, kind, -1);
			al_db_bind_text(q, 3, who, -1);
			if ((r = al_db_step(q, err)) > 0)
				r = 0;
		}
	}
	if (r == 0)
		r = entry(st, &txn, "integration_grant", actor,
			  json_pack("{s:s,s:s}", "integration", name, kind, who), err);
	return al_ledger__commit(st, &txn, r, err);
}

int al_integ_rotate(struct al_store *st, const char *name, const char *header, const char *secret,
		    const char *actor, struct al_error *err)
{
	size_t nl = 0;
	int r = al_integ_name_check(name, err);
	if (r == 0 && header)
		r = header_check(header, &nl, err);
	if (r == 0)
		r = secret_check(secret, err);
	if (r < 0)
		return r;
	uint8_t *sealed = NULL;
	size_t slen = 0;
	if ((r = seal(st, name, secret, &sealed, &slen, err)) < 0)
		return r;
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	if ((r = begin(st, &txn, err)) < 0) {
		free(sealed);
		return r;
	}
	r = found(txn.db, name, err);
	if (r == 0) {
		_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
		r = al_db_prepare(txn.db,
				  "UPDATE integrations SET secret = ?2, header = COALESCE(CAST(?3 "
				  "AS TEXT), header) "
				  "WHERE name = ?1",
				  &q, err);
		if (r == 0) {
			al_db_bind_text(q, 1, name, -1);
			al_db_bind_blob(q, 2, sealed, slen);
			if (header)
				al_db_bind_text(q, 3, header, -1);
			else
				al_db_bind_null(q, 3);
			if ((r = al_db_step(q, err)) > 0)
				r = 0;
		}
	}
	free(sealed);
	json_t *data = json_pack("{s:s}", "integration", name);
	if (data && header)
		json_object_set_new(data, "header", json_stringn(header, nl));
	if (r == 0)
		r = entry(st, &txn, "integration_rotate", actor, data, err);
	else
		json_decref(data);
	return al_ledger__commit(st, &txn, r, err);
}

int al_integ_delete(struct al_store *st, const char *name, const char *actor, struct al_error *err)
{
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	int r = al_integ_name_check(name, err);
	if (r < 0 || (r = begin(st, &txn, err)) < 0)
		return r;
	r = found(txn.db, name, err);
	for (int i = 0; r == 0 && i < 2; i++) {
		_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
		r = al_db_prepare(txn.db,
				  i ? "DELETE FROM integrations WHERE name = ?1"
				    : "DELETE FROM integration_grants WHERE integration = ?1",
				  &q, err);
		if (r == 0) {
			al_db_bind_text(q, 1, name, -1);
			if ((r = al_db_step(q, err)) > 0)
				r = 0;
		}
	}
	if (r == 0)
		r = entry(st, &txn, "integration_delete", actor,
			  json_pack("{s:s}", "integration", name), err);
	return al_ledger__commit(st, &txn, r, err);
}

int al_integ_list(struct al_store *st, json_t **out, struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL, *g = NULL;
	if ((r = al_db_prepare(db,
			       "SELECT name, base_url, header, keep_bodies, insecure, CASE WHEN ca "
			       "IS NULL THEN 0 ELSE 1 END, created FROM integrations ORDER BY name",
			       &q, err)) < 0 ||
	    (r = al_db_prepare(db,
			       "SELECT kind, who FROM integration_grants WHERE integration = ?1 "
			       "ORDER BY kind, who",
			       &g, err)) < 0)
		return r;
	json_t *arr = json_array();
	while ((r = al_db_step(q, err)) == AL_DB_ROW) {
		const char *name = al_db_column_text(q, 0);
		const char *hdr = al_db_column_text(q, 2);
		json_t *projects = json_array(), *principals = json_array();
		al_db_reset(g);
		al_db_bind_text(g, 1, name, -1);
		int s;
		while ((s = al_db_step(g, err)) == AL_DB_ROW)
			json_array_append_new(
				!strcmp(al_db_column_text(g, 0), "project") ? projects : principals,
				json_string(al_db_column_text(g, 1)));
		json_array_append_new(
			arr,
			json_pack("{s:s,s:s,s:s%,s:b,s:b,s:b,s:o,s:o,s:I}", "name", name,
				  "base_url", al_db_column_text(q, 1), "header", hdr,
				  strcspn(hdr, ":"), "keep_bodies", (int)al_db_column_int64(q, 3),
				  "insecure", (int)al_db_column_int64(q, 4), "ca",
				  (int)al_db_column_int64(q, 5), "projects", projects, "principals",
				  principals, "created", (json_int_t)al_db_column_int64(q, 6)));
		if (s < 0) {
			r = s;
			break;
		}
	}
	if (r < 0) {
		json_decref(arr);
		return r;
	}
	*out = arr;
	return 0;
}

/* ---- the relay --------------------------------------------------------------------- */

#define HEAD_MAX 16384
#define HEADERS_MAX 64
#define IO_TIMEOUT_S 30
#define CALL_TIMEOUT_S 120

struct integ {
	char name[64];
	char *base;   /* no trailing '/' */
	char *header; /* "Name: value" with the secret: host memory only */
	size_t hname; /* the header name's length */
	char *ca;     /* PEM, or NULL */
	bool keep_bodies, insecure;
};

struct call_rec {
	char integration[4 * 63 + 1]; /* quoted: the sandbox's bytes */
	char method[16];
	char path[4 * 512 + 1]; /* quoted */
	const char *verdict;    /* "done", "refused", "failed" */
	char reason[200];
	long status;
	uint64_t up, down;
	uint8_t req_sha[AL_DIGEST_LEN], resp_sha[AL_DIGEST_LEN];
	bool digests;
	char *req_body, *resp_body; /* base64, keep_bodies only */
	int64_t started;
	uint64_t t0, ms;
};

struct al_integ_relay {
	struct integ *in;
	size_t nin;
	uint64_t max_calls, max_bytes;
	struct al_serve srv;

	pthread_mutex_t mu;
	struct call_rec **recs;
	size_t nrecs, caprecs;
	uint64_t over_limit, bytes;
};

struct conn {
	struct al_integ_relay *r;
	struct call_rec *rec;
	int fd;
	char head[HEAD_MAX + 1];
	size_t nhead, used;
};

static void integ_release(struct integ *x)
{
	free(x->base);
	if (x->header)
		explicit_bzero(x->header, strlen(x->header));
	free(x->header);
	free(x->ca);
}

/* Is the integration granted to project or principal? */
static int granted(struct al_db *db, const char *name, const char *project, const char *principal,
		   bool *out, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(
		db,
		"SELECT 1 FROM integration_grants WHERE integration = ?1 AND "
		"((kind = 'project' AND who = ?2) OR (kind = 'principal' AND who = ?3))",
		&q, err);
	if (r < 0)
		return r;
	al_db_bind_text(q, 1, name, -1);
	al_db_bind_text(q, 2, project, -1);
	if (principal)
		al_db_bind_text(q, 3, principal, -1);
	else
		al_db_bind_null(q, 3);
	if ((r = al_db_step(q, err)) < 0)
		return r;
	*out = r == AL_DB_ROW;
	return 0;
}

static int load_one(struct al_store *st, struct al_db *db, const char *name, const char *project,
		    const char *principal, struct integ *x, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_integ_name_check(name, err);
	if (r < 0 || (r = al_db_prepare(db,
					"SELECT base_url, header, secret, ca, keep_bodies, "
					"insecure FROM integrations WHERE name = ?1",
					&q, err)) < 0)
		return r;
	al_db_bind_text(q, 1, name, -1);
	if ((r = al_db_step(q, err)) < 0)
		return r;
	if (r == AL_DB_DONE)
		return al_fail(err, AL_ENOTFOUND, 0, "run: no integration %s", name);
	bool ok = false;
	if ((r = granted(db, name, project, principal, &ok, err)) < 0)
		return r;
	if (!ok)
		return al_fail(
			err, AL_EDENIED, 0,
			"run: integration %s is not granted to project %s%s%s (airlock admin "
			"integration grant)",
			name, project, principal ? " or principal " : "",
			principal ? principal : "");
	snprintf(x->name, sizeof(x->name), "%s", name);
	const char *tmpl = al_db_column_text(q, 1);
	char *secret = NULL;
	if ((r = unseal(st, name, al_db_column_blob(q, 2), al_db_column_bytes(q, 2), &secret,
			err)) < 0)
		return r;
	const char *at = strstr(tmpl, "@secret");
	size_t hl = strlen(tmpl) - 7 + strlen(secret) + 1;
	x->header = at ? malloc(hl) : NULL;
	if (x->header)
		snprintf(x->header, hl, "%.*s%s%s", (int)(at - tmpl), tmpl, secret, at + 7);
	explicit_bzero(secret, strlen(secret));
	free(secret);
	x->hname = strcspn(tmpl, ":");
	x->base = strdup(al_db_column_text(q, 0));
	bool has_ca = al_db_column_type(q, 3) != AL_DB_NULL;
	if (has_ca)
		x->ca = strdup(al_db_column_text(q, 3));
	x->keep_bodies = al_db_column_int64(q, 4) != 0;
	x->insecure = al_db_column_int64(q, 5) != 0;
	if (!x->header || !x->base || (has_ca && !x->ca))
		return al_fail(err, at ? AL_ENOMEM : AL_ECORRUPT, 0, "integration %s", name);
	return 0;
}

static const struct al_serve_ops relay_ops;

int al_integ__relay_new(struct al_store *st, const char *const *names, const char *project,
			const char *principal, uint64_t max_calls, uint64_t max_bytes,
			struct al_integ_relay **out, struct al_error *err)
{
	size_t n = 0;
	while (names && names[n])
		n++;
	if (n > AL_INTEG_RUN_MAX)
		return al_fail(err, AL_ELIMIT, 0, "run: more than %d integrations",
			       AL_INTEG_RUN_MAX);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (!strcmp(names[i], names[j]))
				return al_fail(err, AL_EUSAGE, 0,
					       "run: integration %s is asked for twice", names[i]);
	struct al_integ_relay *r = calloc(1, sizeof(*r));
	if (!r || !(r->in = calloc(n + 1, sizeof(*r->in)))) {
		free(r);
		return al_fail(err, AL_ENOMEM, ENOMEM, "integrations");
	}
	pthread_mutex_init(&r->mu, NULL);
	al_serve__init(&r->srv, &r->mu, &relay_ops, r, 512 * 1024);
	r->max_calls = max_calls;
	r->max_bytes = max_bytes;
	struct al_db *db;
	int rc = al_store__meta_db(st, &db, err);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = load_one(st, db, names[i], project, principal, &r->in[i], err);
		r->nin = i + 1;
	}
	if (rc == 0)
		rc = al_curl__ready(err);
	if (rc < 0) {
		al_integ__relay_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int al_integ_usable(struct al_store *st, const char *const *names, const char *project,
		    const char *principal, struct al_error *err)
{
	struct al_integ_relay *r = NULL;
	int rc = al_integ__relay_new(st, names, project, principal, 1, 1, &r, err);
	al_integ__relay_free(r);
	return rc;
}

static void set_reason(struct call_rec *c, const char *verdict, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_reason(struct call_rec *c, const char *verdict, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
	va_end(ap);
	c->verdict = verdict;
}

static void answer(int fd, long status, const char *ctype, const void *body, size_t n)
{
	char head[512];
	int hl = snprintf(head, sizeof(head),
			  "HTTP/1.1 %ld %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			  "Connection: close\r\n\r\n",
			  status, status < 400 ? "OK" : "Error", ctype, n);
	if (hl > 0 && al_write_full(fd, head, (size_t)hl) == 0 && n)
		(void)al_write_full(fd, body, n);
}

static void refuse(struct conn *c, long status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void refuse(struct conn *c, long status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->rec->reason, sizeof(c->rec->reason), fmt, ap);
	va_end(ap);
	c->rec->verdict = "refused";
	c->rec->status = status;
	char msg[300];
	int n = snprintf(msg, sizeof(msg), "airlock integration: %s\n", c->rec->reason);
	answer(c->fd, status, "text/plain", msg, n > 0 ? (size_t)n : 0);
}

static int set_timeouts(int fd, int s)
{
	struct timeval tv = { .tv_sec = s };
	return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) |
	       setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int read_head(struct conn *c)
{
	for (;;) {
		char *end = c->nhead >= 4 ? memmem(c->head, c->nhead, "\r\n\r\n", 4) : NULL;
		if (end) {
			c->used = (size_t)(end - c->head) + 4;
			c->head[c->nhead] = 0;
			return 0;
		}
		if (c->nhead >= HEAD_MAX) {
			refuse(c, 431, "a request head over %d bytes", HEAD_MAX);
			return -1;
		}
		ssize_t n = recv(c->fd, c->head + c->nhead, HEAD_MAX - c->nhead, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			set_reason(c->rec, "refused",
				   "the client left before a whole request head");
			return -1;
		}
		c->nhead += (size_t)n;
	}
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* A path below the base: segments of URL characters; each, decoded, is
 * neither "." nor ".." and holds no '/', '\\' or NUL.  NULL or why not. */
static const char *path_refusal(const char *p, size_t n)
{
	size_t i = 0;
	while (i <= n) {
		size_t s = i;
		while (i < n && p[i] != '/')
			i++;
		char dec[8];
		size_t dl = 0;
		for (size_t k = s; k < i; k++) {
			char ch = p[k];
			if (ch == '%') {
				if (k + 2 >= i)
					return "a bad %-escape";
				int h = hexval(p[k + 1]), l = hexval(p[k + 2]);
				if (h < 0 || l < 0)
					return "a bad %-escape";
				ch = (char)(h << 4 | l);
				k += 2;
				if (ch == '/' || ch == '\\' || ch == 0)
					return "an encoded '/', '\\' or NUL";
			} else if (!url_path_char(ch)) {
				return "a character that is not a URL path's";
			}
			if (dl < sizeof(dec))
				dec[dl] = ch;
			dl++;
		}
		if ((dl == 1 && dec[0] == '.') || (dl == 2 && dec[0] == '.' && dec[1] == '.'))
			return "a '.' or '..' segment: the path must stay below the base URL";
		i++;
	}
	return NULL;
}

struct body {
	char *p;
	size_t n, max;
	bool over;
};

static size_t on_body(char *p, size_t sz, size_t nm, void *ctx)
{
	struct body *b = ctx;
	size_t n = sz * nm;
	if (b->n + n > b->max) {
		b->over = true;
		return 0;
	}
	char *q = realloc(b->p, b->n + n + 1);
	if (!q)
		return 0;
	memcpy(q + b->n, p, n);
	b->p = q;
	b->n += n;
	return n;
}

struct rhead {
	char ctype[128];
};

static size_t on_header(char *p, size_t sz, size_t nm, void *ctx)
{
	struct rhead *h = ctx;
	size_t n = sz * nm;
	if (n > 5 && !strncmp(p, "HTTP/", 5))
		h->ctype[0] = 0; /* a new answer (after a 100) */
	else if (n > 13 && !strncasecmp(p, "Content-Type:", 13)) {
		size_t s = 13, e = n;
		while (s < e && (p[s] == ' ' || p[s] == '\t'))
			s++;
		while (e > s && (p[e - 1] == '\r' || p[e - 1] == '\n' || p[e - 1] == ' '))
			e--;
		size_t k = 0;
		for (size_t i = s; i < e && k + 1 < sizeof(h->ctype); i++)
			if ((unsigned char)p[i] >= 0x20 && p[i] != 0x7f)
				h->ctype[k++] = p[i];
		h->ctype[k] = 0;
	}
	return n;
}

static char *b64(const void *p, size_t n)
{
	char *o = malloc(4 * ((n + 2) / 3) + 1);
	if (o)
		EVP_EncodeBlock((unsigned char *)o, p, (int)n);
	return o;
}

static bool header_is(const char *line, size_t len, const char *name, size_t nl)
{
	return len > nl && line[nl] == ':' && !strncasecmp(line, name, nl);
}

static bool reserve(struct al_integ_relay *r, uint64_t n)
{
	pthread_mutex_lock(&r->mu);
	bool ok = r->bytes + n <= r->max_bytes;
	if (ok)
		r->bytes += n;
	pthread_mutex_unlock(&r->mu);
	return ok;
}

static void call(struct conn *c, const struct integ *x, const char *method, const char *rest,
		 const char *body, size_t blen)
{
	struct call_rec *rec = c->rec;
	/* the headers that go on: the sandbox's, but not hop-by-hop ones nor
	 * the credential's own */
	struct curl_slist *hdrs = NULL;
	const char *line = strstr(c->head, "\r\n") + 2, *end = c->head + c->used - 2;
	while (line < end) {
		const char *eol = strstr(line, "\r\n");
		size_t len = (size_t)(eol - line);
		static const char *const drop[] = {
			"host",    "content-length", "connection",          "keep-alive",      "te",
			"upgrade", "expect",         "proxy-authorization", "proxy-connection"
		};
		bool skip = header_is(line, len, x->header, x->hname);
		for (size_t i = 0; i < ARRAY_SIZE(drop) && !skip; i++)
			skip = header_is(line, len, drop[i], strlen(drop[i]));
		if (!skip) {
			char h[HEAD_MAX + 1];
			snprintf(h, sizeof(h), "%.*s", (int)len, line);
			hdrs = al__curl.slist_append(hdrs, h);
		}
		line = eol + 2;
	}
	hdrs = al__curl.slist_append(hdrs, "Expect:");
	hdrs = al__curl.slist_append(hdrs, x->header);
	size_t ul = strlen(x->base) + strlen(rest) + 2;
	char *url = malloc(ul);
	CURL *h = al__curl.easy_init();
	if (!hdrs || !url || !h) {
		set_reason(rec, "failed", "out of memory");
		refuse(c, 502, "out of memory");
		rec->verdict = "failed";
		goto out;
	}
	snprintf(url, ul, "%s/%s", x->base, rest);
	struct body resp = { .max = AL_INTEG_RESPONSE_MAX };
	struct rhead rh = { "" };
	al__curl.easy_setopt(h, CURLOPT_URL, url);
	al__curl.easy_setopt(h, CURLOPT_PROTOCOLS_STR, x->insecure ? "http,https" : "https");
	al__curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	al__curl.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	al__curl.easy_setopt(h, CURLOPT_PROXY, "");
	al__curl.easy_setopt(h, CURLOPT_NOPROXY, "*");
	al__curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
	al__curl.easy_setopt(h, CURLOPT_TIMEOUT, (long)CALL_TIMEOUT_S);
	al__curl.easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)AL_INTEG_RESPONSE_MAX);
	al__curl.easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	al__curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	al__curl.easy_setopt(h, CURLOPT_WRITEDATA, &resp);
	al__curl.easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	al__curl.easy_setopt(h, CURLOPT_HEADERDATA, &rh);
	al__curl.easy_setopt(h, CURLOPT_ACCEPT_ENCODING, NULL);
	if (x->ca) {
		struct curl_blob ca = { .data = x->ca,
					.len = strlen(x->ca),
					.flags = CURL_BLOB_NOCOPY };
		al__curl.easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
	}
	if (!strcmp(method, "HEAD"))
		al__curl.easy_setopt(h, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") || blen) {
		al__curl.easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
		al__curl.easy_setopt(h, CURLOPT_POSTFIELDS, blen ? body : "");
		if (strcmp(method, "POST"))
			al__curl.easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}
	CURLcode rc = al__curl.easy_perform(h);
	al__curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &rec->status);
	if (rc != CURLE_OK || resp.over) {
		bool big = resp.over || rc == CURLE_FILESIZE_EXCEEDED;
		rec->status = big ? 502 : rc == CURLE_OPERATION_TIMEDOUT ? 504 : 502;
		char why[160];
		if (big)
			snprintf(why, sizeof(why), "the answer is over %u bytes",
				 AL_INTEG_RESPONSE_MAX);
		else
			snprintf(why, sizeof(why), "%s", al__curl.easy_strerror(rc));
		char msg[220];
		int n = snprintf(msg, sizeof(msg), "airlock integration: %s\n", why);
		answer(c->fd, rec->status, "text/plain", msg, n > 0 ? (size_t)n : 0);
		set_reason(rec, "failed", "%s", why);
	} else if (!reserve(c->r, resp.n)) {
		refuse(c, 502, "the run's byte limit: the answer is not returned");
	} else {
		rec->verdict = "done";
		rec->down = resp.n;
		al_sha256(resp.p ? resp.p : "", resp.n, rec->resp_sha);
		if (x->keep_bodies)
			rec->resp_body = b64(resp.p ? resp.p : "", resp.n);
		answer(c->fd, rec->status, rh.ctype[0] ? rh.ctype : "application/octet-stream",
		       resp.p, resp.n);
	}
	free(resp.p);
out:
	if (h)
		al__curl.easy_cleanup(h);
	al__curl.slist_free_all(hdrs); /* the credential's copy in it: freed with it */
	free(url);
}

static const struct integ *find(const struct al_integ_relay *r, const char *name, size_t n)
{
	for (size_t i = 0; i < r->nin; i++)
		if (strlen(r->in[i].name) == n && !strncmp(r->in[i].name, name, n))
			return &r->in[i];
	return NULL;
}

static void serve(struct conn *c)
{
	struct call_rec *rec = c->rec;
	if (set_timeouts(c->fd, IO_TIMEOUT_S) < 0 || read_head(c) < 0)
		return;
	if (memchr(c->head, 0, c->used)) {
		refuse(c, 400, "a NUL byte in the request head");
		return;
	}
	char *eol = strstr(c->head, "\r\n");
	*eol = 0;
	char *sp1 = strchr(c->head, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	bool ok = sp1 && sp2 && sp1 != c->head && sp1 - c->head < (long)sizeof(rec->method) &&
		  !strchr(sp2 + 1, ' ') &&
		  (!strcmp(sp2 + 1, "HTTP/1.1") || !strcmp(sp2 + 1, "HTTP/1.0"));
	for (const char *m = c->head; ok && m < sp1; m++)
		ok = *m >= 'A' && *m <= 'Z';
	if (ok)
		snprintf(rec->method, sizeof(rec->method), "%.*s", (int)(sp1 - c->head), c->head);
	size_t tl = ok ? (size_t)(sp2 - sp1 - 1) : 0;
	const char *target = sp1 ? sp1 + 1 : "";
	if (ok)
		al_quote(target, tl < 512 ? tl : 512, rec->path, sizeof(rec->path));
	*eol = '\r';
	if (!ok) {
		refuse(c, 400, "not an HTTP/1.x request");
		return;
	}
	static const char *const methods[] = { "GET",   "HEAD",   "POST",   "PUT",
					       "PATCH", "DELETE", "OPTIONS" };
	bool known = false;
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
		known = known || !strcmp(rec->method, methods[i]);
	if (!known) {
		refuse(c, 405, "method %s is refused (CONNECT and proxying are not served here)",
		       rec->method);
		return;
	}
	if (tl < 2 || target[0] != '/') {
		refuse(c, 400,
		       "a request target is /NAME/PATH (no absolute URL: the integration's base "
		       "URL is the only host)");
		return;
	}
	for (size_t i = 0; i < tl; i++)
		if ((unsigned char)target[i] <= ' ' || target[i] == 0x7f || target[i] == '#' ||
		    target[i] == '\\') {
			refuse(c, 400, "a request target with a control character, '#' or '\\'");
			return;
		}
	size_t nl = strcspn(target + 1, "/?");
	if (nl >= tl)
		nl = tl - 1;
	al_quote(target + 1, nl < 63 ? nl : 63, rec->integration, sizeof(rec->integration));
	const struct integ *x = find(c->r, target + 1, nl);
	if (!x) {
		refuse(c, 403, "integration '%s' is not one this run was granted",
		       rec->integration);
		return;
	}
	/* rest: what follows "/NAME/", up to the target's end */
	const char *rest = target + 1 + nl;
	size_t rl = tl - 1 - nl;
	if (rl && *rest == '/') {
		rest++;
		rl--;
	}
	size_t pl = 0;
	while (pl < rl && rest[pl] != '?')
		pl++;
	const char *why = path_refusal(rest, pl);
	if (why) {
		refuse(c, 403, "%s", why);
		return;
	}
	/* the body: Content-Length only */
	long long length = 0;
	int nh = 0;
	const char *line = eol + 2, *end = c->head + c->used - 2;
	while (line < end) {
		const char *e = strstr(line, "\r\n");
		size_t len = (size_t)(e - line);
		if (++nh > HEADERS_MAX || line[0] == ' ' || line[0] == '\t' ||
		    !memchr(line, ':', len)) {
			refuse(c, 400, "a malformed header line (or over %d)", HEADERS_MAX);
			return;
		}
		for (size_t i = 0; i < len; i++)
			if (((unsigned char)line[i] < 0x20 && line[i] != '\t') || line[i] == 0x7f) {
				refuse(c, 400, "a control character in a header");
				return;
			}
		if (header_is(line, len, "transfer-encoding", 17)) {
			refuse(c, 411, "a body with Transfer-Encoding (send Content-Length)");
			return;
		}
		if (header_is(line, len, "content-length", 14)) {
			const char *s = line + 15;
			while (*s == ' ')
				s++;
			char *ep;
			errno = 0;
			long long v = *s >= '0' && *s <= '9' ? strtoll(s, &ep, 10) : -1;
			if (v < 0 || errno || ep != e) {
				refuse(c, 400, "a bad Content-Length");
				return;
			}
			length = v;
		}
		line = e + 2;
	}
	if (length > AL_INTEG_REQUEST_MAX) {
		refuse(c, 413, "a request body over %u bytes", AL_INTEG_REQUEST_MAX);
		return;
	}
	if (!reserve(c->r, (uint64_t)length)) {
		refuse(c, 413, "the run's byte limit (egress_bytes) is reached");
		return;
	}
	char *body = malloc((size_t)length + 1);
	if (!body) {
		refuse(c, 502, "out of memory");
		return;
	}
	size_t have = c->nhead - c->used;
	if (have > (size_t)length)
		have = (size_t)length;
	memcpy(body, c->head + c->used, have);
	while (have < (size_t)length) {
		ssize_t n = recv(c->fd, body + have, (size_t)length - have, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	if (have < (size_t)length) {
		free(body);
		set_reason(rec, "refused", "the client left before its whole body");
		return;
	}
	rec->up = (uint64_t)length;
	al_sha256(body, (size_t)length, rec->req_sha);
	rec->digests = true;
	if (x->keep_bodies)
		rec->req_body = b64(body, (size_t)length);
	char *r2 = strndup(rest, rl);
	if (r2)
		call(c, x, rec->method, r2, body, (size_t)length);
	else
		refuse(c, 502, "out of memory");
	free(r2);
	free(body);
}

/* Under the lock: a call from the sandbox, within the run's cap. */
static void *conn_admit(void *owner, int fd)
{
	struct al_integ_relay *r = owner;
	if (r->nrecs >= r->max_calls) {
		r->over_limit++;
		static const char msg[] =
			"HTTP/1.1 429 Error\r\nContent-Type: text/plain\r\nContent-Length: "
			"52\r\nConnection: close\r\n\r\nairlock integration: the run's "
			"call "
			"limit is reached\n";
		(void)!send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		return NULL;
	}
	struct conn *c = calloc(1, sizeof(*c));
	struct call_rec *rec = calloc(1, sizeof(*rec));
	if (r->nrecs == r->caprecs) {
		size_t cap = r->caprecs ? 2 * r->caprecs : 16;
		struct call_rec **v = realloc(r->recs, cap * sizeof(*v));
		if (v) {
			r->recs = v;
			r->caprecs = cap;
		}
	}
	if (!c || !rec || r->nrecs == r->caprecs) {
		free(c);
		free(rec);
		return NULL;
	}
	r->recs[r->nrecs++] = rec;
	rec->verdict = "refused";
	rec->t0 = al_now_ns();
	rec->started = al_wall_s();
	c->r = r;
	c->rec = rec;
	c->fd = fd;
	return c;
}

static void conn_serve(void *arg)
{
	struct conn *c = arg;
	serve(c);
	shutdown(c->fd, SHUT_WR);
}

static void conn_done(void *arg, bool ran)
{
	struct conn *c = arg;
	if (!ran)
		snprintf(c->rec->reason, sizeof(c->rec->reason), "no thread for the call");
	c->rec->ms = (al_now_ns() - c->rec->t0) / 1000000;
	free(c);
}

static const struct al_serve_ops relay_ops = {
	.admit = conn_admit,
	.serve = conn_serve,
	.done = conn_done,
};

int al_integ__relay_start(struct al_integ_relay *r, int listen_fd, struct al_error *err)
{
	if (al_serve__start(&r->srv, listen_fd) < 0)
		return al_fail(err, AL_EIO, errno, "integrations: the relay's thread");
	return 0;
}

int al_integ__relay_admit(struct al_integ_relay *r, int fd)
{
	return al_serve__admit(&r->srv, fd);
}

void al_integ__relay_stop(struct al_integ_relay *r)
{
	if (r)
		al_serve__stop(&r->srv);
}

json_t *al_integ__relay_json(struct al_integ_relay *r)
{
	json_t *names = json_array(), *calls = json_array();
	for (size_t i = 0; i < r->nin; i++)
		json_array_append_new(names, json_string(r->in[i].name));
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->nrecs; i++) {
		const struct call_rec *c = r->recs[i];
		char a[65], b[65];
		al_hex(c->req_sha, 32, a);
		al_hex(c->resp_sha, 32, b);
		json_t *o =
			json_pack("{s:s,s:s,s:s,s:I,s:s,s:s,s:I,s:I,s:I,s:I}", "integration",
				  c->integration, "method", c->method, "path", c->path, "status",
				  (json_int_t)c->status, "verdict", c->verdict, "reason", c->reason,
				  "bytes_up", (json_int_t)c->up, "bytes_down", (json_int_t)c->down,
				  "ms", (json_int_t)c->ms, "started", (json_int_t)c->started);
		if (c->digests)
			json_object_set_new(o, "request_sha256", json_string(a));
		if (!strcmp(c->verdict, "done"))
			json_object_set_new(o, "response_sha256", json_string(b));
		if (c->req_body)
			json_object_set_new(o, "request_body_base64", json_string(c->req_body));
		if (c->resp_body)
			json_object_set_new(o, "response_body_base64", json_string(c->resp_body));
		json_array_append_new(calls, o);
	}
	json_t *out = json_pack("{s:o,s:o,s:I,s:I,s:{s:I,s:I,s:I,s:I}}", "names", names, "calls",
				calls, "calls_over_limit", (json_int_t)r->over_limit, "bytes",
				(json_int_t)r->bytes, "limits", "calls", (json_int_t)r->max_calls,
				"bytes", (json_int_t)r->max_bytes, "request_body",
				(json_int_t)AL_INTEG_REQUEST_MAX, "response_body",
				(json_int_t)AL_INTEG_RESPONSE_MAX);
	pthread_mutex_unlock(&r->mu);
	return out;
}

void al_integ__relay_free(struct al_integ_relay *r)
{
	if (!r)
		return;
	al_integ__relay_stop(r);
	for (size_t i = 0; i < r->nrecs; i++) {
		free(r->recs[i]->req_body);
		free(r->recs[i]->resp_body);
		free(r->recs[i]);
	}
	free(r->recs);
	for (size_t i = 0; i < r->nin; i++)
		integ_release(&r->in[i]);
	free(r->in);
	al_serve__release(&r->srv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
