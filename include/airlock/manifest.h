/* airlock — snapshots as a Merkle tree of directory nodes.
 *
 * A node lists one directory's entries, sorted by the raw bytes of their
 * names, in the canonical encoding of docs/formats.md; a directory entry's
 * digest is the id of its child node, a file's the sha256 of its bytes, a
 * symlink's the sha256 of its target.  A snapshot id is the id of the root
 * node.  The decoder accepts only canonical nodes, so one tree has one id. */
#ifndef AIRLOCK_MANIFEST_H
#define AIRLOCK_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"
#include "airlock/oid.h"

struct al_cas;
struct al_store;

enum al_entry_type { AL_T_DIR = 'd', AL_T_FILE = 'f', AL_T_SYMLINK = 'l' };

#define AL_NODE_MAX_ENTRIES (1u << 20)
#define AL_SYMLINK_MAX 4095
#define AL_PATH_MAX 4095
#define AL_DEPTH_MAX 256

struct al_entry {
	enum al_entry_type type;
	unsigned mode; /* permission bits, & 07777; symlinks are 0777 */
	uint64_t size; /* file: bytes; symlink: target length; dir: bytes of files beneath */
	struct al_oid digest;
	const char *name; /* not NUL-terminated */
	size_t namelen;
};

struct al_node {
	uint8_t *buf; /* the encoding; names point into it */
	size_t len;
	struct al_entry *entries;
	size_t n;
};

/* Decode and validate a node (canonical form only). */
int al_node_decode(const uint8_t *p, size_t n, struct al_node **out, struct al_error *err);
void al_node_free(struct al_node *node);
/* Encode entries (must be sorted, names valid) into a freshly malloc'ed buffer. */
int al_node_encode(const struct al_entry *e, size_t n, uint8_t **out, size_t *outlen,
		   struct al_error *err);
/* Read and decode the node with this id from the store. */
int al_node_load(struct al_cas *cas, const struct al_oid *id, struct al_node **out,
		 struct al_error *err);

typedef void (*al_progress_fn)(void *ctx, uint64_t files, uint64_t bytes);

struct al_import_opts {
	bool no_cache; /* ignore and do not update the stat cache */
	/* skip device files, FIFOs, sockets (images: the sandbox provides /dev) */
	bool skip_special;
	al_progress_fn progress;
	void *progress_ctx;
};

struct al_import_result {
	struct al_oid id;
	uint64_t files, dirs, symlinks, bytes;
	uint64_t bytes_read; /* file bytes actually read (cache misses) */
	uint64_t cache_hits;
	uint64_t skipped; /* special files skipped (skip_special) */
};

/* Import directory dir as a snapshot of the store's tenant.  All or nothing:
 * a refusal (device file, FIFO, socket, invalid name, …) names the path and
 * leaves the store unchanged. */
int al_manifest_import(struct al_store *st, const char *dir, const struct al_import_opts *opts,
		       struct al_import_result *res, struct al_error *err);

struct al_export_opts {
	bool force; /* write into a non-empty directory */
	bool chown; /* give every entry (and dir itself) to uid:gid */
	uint32_t uid, gid;
	al_progress_fn progress;
	void *progress_ctx;
};
/* Write snapshot id into dir (created if missing). Never writes outside dir. */
int al_manifest_export(struct al_cas *cas, const struct al_oid *id, const char *dir,
		       const struct al_export_opts *opts, struct al_error *err);

/* Visit every entry in pre-order (a directory before its contents). */
typedef int (*al_walk_fn)(void *ctx, const char *path, const struct al_entry *e,
			  struct al_error *err);
int al_manifest_walk(struct al_cas *cas, const struct al_oid *id, al_walk_fn fn, void *ctx,
		     struct al_error *err);

/* One change between two snapshots.  op 'A' (old NULL), 'D' (new NULL) or
 * 'M' (content, mode or type differ).  Changes come in pre-order of paths;
 * a type change to or from a directory is an 'M' of the path followed by
 * 'D' of the old children / 'A' of the new ones. */
struct al_change {
	char op;
	const char *path;
	const struct al_entry *old, *new;
};
typedef int (*al_diff_fn)(void *ctx, const struct al_change *c, struct al_error *err);
/* Only subtrees whose digests differ are read. */
int al_manifest_diff(struct al_cas *cas, const struct al_oid *a, const struct al_oid *b,
		     al_diff_fn fn, void *ctx, struct al_error *err);

/* Total file bytes and the root node's entry count of a snapshot. */
int al_manifest_stat(struct al_cas *cas, const struct al_oid *id, uint64_t *bytes, size_t *entries,
		     struct al_error *err);

const char *al_entry_type_name(enum al_entry_type type);

/* Look up one path ('/'-separated). AL_ENOTFOUND if absent. out->name is
 * not set. */
int al_manifest_lookup(struct al_cas *cas, const struct al_oid *root, const char *path,
		       struct al_entry *out, struct al_error *err);

/* Edits of a tree.  SET puts entry at path, replacing what is there.  For a
 * directory entry, an all-zero digest means "this directory with this mode,
 * keeping its contents (empty if it did not exist or was not a directory)";
 * a non-zero digest grafts that subtree.  DELETE removes the path and
 * everything beneath; edits beneath a deleted or replaced path must be
 * deletions (ignored).  The parent of a SET must exist or be set in the same
 * call.  Cost: the nodes on the edited paths, not the tree.  Needs an open
 * cas batch (new nodes are put in it). */
enum al_edit_op { AL_EDIT_SET = 1, AL_EDIT_DELETE = 2 };
struct al_edit {
	const char *path;
	enum al_edit_op op;
	struct al_entry entry; /* SET: type, mode, size, digest (name unused) */
};
int al_manifest_edit(struct al_cas *cas, const struct al_oid *base, struct al_edit *edits, size_t n,
		     struct al_oid *out, struct al_error *err);

/* A diff materialised: every change owned (paths, entries). */
struct al_change_rec {
	char op; /* 'A', 'M', 'D' */
	char *path;
	bool has_old, has_new;
	struct al_entry old, new; /* names unset */
};
struct al_changes {
	struct al_change_rec *v;
	size_t n, cap;
};
int al_manifest_changes(struct al_cas *cas, const struct al_oid *a, const struct al_oid *b,
			struct al_changes *out, struct al_error *err);
void al_changes_release(struct al_changes *c);
/* The edits that turn a into b (paths borrowed from c). Caller frees *out. */
int al_changes_edits(const struct al_changes *c, struct al_edit **out, struct al_error *err);

/* Validate a relative path: components are valid names, no empty ones,
 * at most AL_PATH_MAX bytes.  Reason in *why. */
bool al_path_valid(const char *path, const char **why);
/* Order of paths in a tree walk ('/' sorts before every other byte). */
int al_path_cmp(const char *a, const char *b); /* "file", "symlink", "dir" */

#endif
