/* group: commits of several processes in one transaction (group commit).
 *
 * Beside a database (<db>-group, mapped shared by every process that
 * commits through it) is a queue of slots.  A committer claims a slot (an
 * OFD lock on its byte: dropped by the kernel when the process dies),
 * posts its request there under a random token, and either finds it done
 * by another process or takes the leader's lock and does every posted
 * request in one transaction of its own.  What a request came to is a row
 * of the transaction (the caller's table, by token), so it is read back
 * whatever happens to the leader after its commit; the slot's "done" word
 * only says that it is there.  See volume.c (al_project_commit) for the
 * rows and the recovery, and docs/architecture.md, "Group commit".
 *
 * The queue decides nothing about the data: SQLite's own locks still
 * decide who writes.  A request is done at most once: a leader does only
 * requests whose token has no row, inside the transaction that would write
 * one; and it reads a request's bytes between two reads of its token
 * (torn bytes are skipped, not guessed). */
#ifndef AIRLOCK_GROUP_H
#define AIRLOCK_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"

#define AL_GROUP_SLOTS 64
#define AL_GROUP_SLOT_SIZE 4096
#define AL_GROUP_MAX_REQ (AL_GROUP_SLOT_SIZE - 32) /* a request's bytes, at most */

struct al_group;
struct al_group_map; /* the queue's file mapped: kept by a store */

void al_group_map_free(struct al_group_map *m);

/* Post req (len bytes) in the queue beside dbpath.  0 and *out; 1: no
 * queue for it (no slot free, too large, the file unusable): the caller
 * commits alone, as without a queue.  Never fails otherwise.  *cache: the
 * file's mapping, made at the first join (NULL before) and kept for the
 * next; al_group_map_free frees it, once no request of it is open. */
int al_group_join(struct al_group_map **cache, const char *dbpath, const void *req, size_t len,
		  struct al_group **out);

uint64_t al_group_token(const struct al_group *g);

/* Wait for the request: 1 when another process did it (its row is
 * there), 0 when this process now leads (al_group_end ends that). */
int al_group_wait(struct al_group *g, struct al_error *err);

/* The leader's view of the others' requests, in slot order: each posted
 * by a process still alive, not done yet, read whole.  fn's return: 0 go
 * on, else stop and return it. */
typedef int (*al_group_fn)(void *ctx, uint64_t token, const void *req, size_t len);
int al_group_foreach(struct al_group *g, al_group_fn fn, void *ctx);

/* Whether token is posted in a slot whose process is alive (its row is
 * still to be read), this process's own excluded. */
bool al_group_waiting(struct al_group *g, uint64_t token);

/* After the leader's commit: token's row is there. */
void al_group_done(struct al_group *g, uint64_t token);

/* The leader's turn ends (its lock released, the waiters woken). */
void al_group_end(struct al_group *g);

/* The slot given back; g freed.  NULL is a no-op. */
void al_group_leave(struct al_group *g);

/* Tests: called by the leader after its commit, before any done word. */
extern void (*al_group__after_commit)(void);
/* Tests: the leader's lock taken (waiting for it), its fd (close to
 * release) or -1; how many requests wait (posted, alive, not done). */
int al_group__hold(const char *dbpath);
int al_group__posted(const char *dbpath);
/* Tests: a slot claimed (its fd returned: close to release) with req
 * posted under a token of its own, live (its process waits) or not (a
 * dead owner's request, as the slot's new owner finds it), listed in
 * the busy word or not (as a process of the version before posts). */
int al_group__post(const char *dbpath, const void *req, size_t len, bool live, bool listed);

#endif
