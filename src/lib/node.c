/* node: the canonical encoding of a snapshot's directory nodes (manifest.h,
 * docs/formats.md): decode with every rule checked, encode, load by id. */
#include <stdio.h>
#include <string.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "cas_private.h"
#include "manifest_private.h"
#include "util.h"

static const uint8_t node_magic[8] = { 'A', 'L', 'T', 'R', 'E', 'E', 0x00, 0x01 };
#define ENTRY_FIXED (1 + 2 + 8 + AL_OID_LEN + 2)
#define NODE_MAX_BYTES (8 + 4 + (size_t)AL_NODE_MAX_ENTRIES * (ENTRY_FIXED + 255))

const char *al_entry_type_name(enum al_entry_type type)
{
	switch (type) {
	case AL_T_DIR: return "dir";
	case AL_T_FILE: return "file";
	case AL_T_SYMLINK: return "symlink";
	}
	return "?";
}

int al_manifest__name_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	if (c)
		return c;
	return an < bn ? -1 : an > bn;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}
static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}
static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static int check_entry(const struct al_entry *e, const struct al_entry *prev, struct al_error *err)
{
	const char *why;
	if (e->type != AL_T_DIR && e->type != AL_T_FILE && e->type != AL_T_SYMLINK)
		return al_fail(err, AL_EINVAL, 0, "node: unknown entry type 0x%02x",
			       e->type & 0xff);
	if (e->mode & ~07777u)
		return al_fail(err, AL_EINVAL, 0, "node: mode %o has bits beyond 07777", e->mode);
	if (e->type == AL_T_SYMLINK &&
	    (e->mode != 0777 || e->size == 0 || e->size > AL_SYMLINK_MAX))
		return al_fail(err, AL_EINVAL, 0, "node: bad symlink entry");
	if (!al_name_valid(e->name, e->namelen, &why))
		return al_fail(err, AL_EINVAL, 0, "node: %s", why);
	if (prev && al_manifest__name_cmp(prev->name, prev->namelen, e->name, e->namelen) >= 0)
		return al_fail(err, AL_EINVAL, 0, "node: entries not strictly sorted");
	return 0;
}

int al_node_decode(const uint8_t *p, size_t n, struct al_node **out, struct al_error *err)
{
	if (n < 12 || memcmp(p, node_magic, 8) != 0)
		return al_fail(err, AL_EINVAL, 0, "node: bad header");
	uint32_t count = get32(p + 8);
	if (count > AL_NODE_MAX_ENTRIES || (size_t)count * ENTRY_FIXED > n - 12)
		return al_fail(err, AL_EINVAL, 0, "node: bad entry count");
	struct al_node *node = calloc(1, sizeof(*node));
	if (!node)
		return al_fail(err, AL_ENOMEM, ENOMEM, "node");
	node->buf = malloc(n);
	node->entries = calloc(count ? count : 1, sizeof(struct al_entry));
	if (!node->buf || !node->entries) {
		al_node_free(node);
		return al_fail(err, AL_ENOMEM, ENOMEM, "node");
	}
	memcpy(node->buf, p, n);
	size_t off = 12;
	int r = 0;
	for (uint32_t i = 0; i < count; i++) {
		if (n - off < ENTRY_FIXED) {
			r = al_fail(err, AL_EINVAL, 0, "node: truncated entry");
			break;
		}
		const uint8_t *q = node->buf + off;
		struct al_entry *e = &node->entries[i];
		e->type = q[0];
		e->mode = get16(q + 1);
		e->size = get64(q + 3);
		memcpy(e->digest.b, q + 11, AL_OID_LEN);
		e->namelen = get16(q + 43);
		off += ENTRY_FIXED;
		if (n - off < e->namelen) {
			r = al_fail(err, AL_EINVAL, 0, "node: truncated name");
			break;
		}
		e->name = (const char *)node->buf + off;
		off += e->namelen;
		if ((r = check_entry(e, i ? &node->entries[i - 1] : NULL, err)) < 0)
			break;
		node->n++;
	}
	if (r == 0 && off != n)
		r = al_fail(err, AL_EINVAL, 0, "node: trailing bytes");
	if (r < 0) {
		al_node_free(node);
		return r;
	}
	node->len = n;
	*out = node;
	return 0;
}

void al_node_free(struct al_node *node)
{
	if (!node)
		return;
	free(node->buf);
	free(node->entries);
	free(node);
}

int al_node_encode(const struct al_entry *e, size_t n, uint8_t **out, size_t *outlen,
		   struct al_error *err)
{
	if (n > AL_NODE_MAX_ENTRIES)
		return al_fail(err, AL_ELIMIT, 0, "directory has more than %u entries",
			       AL_NODE_MAX_ENTRIES);
	size_t len = 12;
	for (size_t i = 0; i < n; i++) {
		int r = check_entry(&e[i], i ? &e[i - 1] : NULL, err);
		if (r < 0)
			return r;
		len += ENTRY_FIXED + e[i].namelen;
	}
	uint8_t *buf = malloc(len);
	if (!buf)
		return al_fail(err, AL_ENOMEM, ENOMEM, "node");
	memcpy(buf, node_magic, 8);
	put32(buf + 8, (uint32_t)n);
	size_t off = 12;
	for (size_t i = 0; i < n; i++) {
		uint8_t *q = buf + off;
		q[0] = (uint8_t)e[i].type;
		put16(q + 1, (uint16_t)e[i].mode);
		put64(q + 3, e[i].size);
		memcpy(q + 11, e[i].digest.b, AL_OID_LEN);
		put16(q + 43, (uint16_t)e[i].namelen);
		memcpy(q + ENTRY_FIXED, e[i].name, e[i].namelen);
		off += ENTRY_FIXED + e[i].namelen;
	}
	*out = buf;
	*outlen = len;
	return 0;
}

int al_node_load(struct al_cas *cas, const struct al_oid *id, struct al_node **out,
		 struct al_error *err)
{
	const uint8_t *buf;
	_cleanup_free_ uint8_t *owned = NULL;
	size_t len = 0;
	int r = al_cas__node(cas, id, &buf, &len, &owned, err);
	if (r < 0)
		return r;
	r = al_node_decode(buf, len, out, err);
	if (r == AL_EINVAL && err) {
		char s[AL_OID_STRLEN + 1], why[sizeof(err->msg)];
		al_oid_fmt(id, s);
		snprintf(why, sizeof(why), "%s", err->msg);
		return al_fail(err, AL_EINVAL, 0, "%s is not a snapshot tree node (%s)", s, why);
	}
	return r;
}
