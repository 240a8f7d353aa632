/* group: the queue of a group commit (group.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "group.h"
#include "util.h"

/* The file: a header page, then one page per slot (its locks below).
 * The header's "busy" word has a bit per slot whose owner has posted:
 * a leader reads only those slots' pages, not all 64 (the first commit
 * of a process faulted in every one).  It is a hint for finding
 * requests, never a decision: the token and the live lock decide, and a
 * process of the version before, which posts without it, is left to
 * lead its own request. */
#define GROUP_MAGIC 0x414c4731u /* "ALG1" */
#define GROUP_SIZE ((size_t)AL_GROUP_SLOT_SIZE * (AL_GROUP_SLOTS + 1))
/* a leader killed leaves no wake: its lock is found free within a step */
#define WAIT_STEP_NS 5000000L
/* longer than any leader's turn (each of its transactions gives up
 * waiting for SQLite's lock after two minutes) */
#define WAIT_GIVE_UP_NS (600ull * 1000000000ull)

struct header {
	uint32_t magic;
	uint32_t released; /* one more at each leader's end (futex word) */
	uint64_t busy;     /* bit i: slot i's owner has posted */
};

struct slot {
	uint64_t posted; /* the owner's token, 0 while it writes */
	uint64_t done;   /* the token whose row a leader committed */
	uint32_t len;
	uint32_t unused[3];
	unsigned char req[AL_GROUP_MAX_REQ];
};
_Static_assert(sizeof(struct slot) == AL_GROUP_SLOT_SIZE, "slot size");

struct al_group {
	int fd;
	unsigned char *map;
	unsigned own;
	uint64_t token;
	bool leading;
	unsigned char buf[AL_GROUP_MAX_REQ];
};

void (*al_group__after_commit)(void);

static struct header *hdr(const struct al_group *g)
{
	return (struct header *)g->map;
}

static struct slot *slot_at(const struct al_group *g, unsigned i)
{
	return (struct slot *)(g->map + (size_t)AL_GROUP_SLOT_SIZE * (i + 1));
}

/* Byte 0 is the leader's lock.  A slot has two: its first byte claims
 * it, its second says its request is live, taken only once the token a
 * dead owner left is cleared (a leader that saw that token and then a
 * live lock would otherwise take the dead request for the new owner's). */
#define LEADER UINT_MAX
enum { CLAIM, LIVE };

static off_t lock_byte(unsigned i, int which)
{
	return i == LEADER ? 0 : (off_t)AL_GROUP_SLOT_SIZE * (i + 1) + which;
}

/* OFD locks: per open file, so threads each with their own join are as
 * separate as processes; dropped when the process dies. */
static struct flock one_byte(short type, unsigned i, int which)
{
	return (struct flock){
		.l_type = type, .l_whence = SEEK_SET, .l_start = lock_byte(i, which), .l_len = 1
	};
}

static int lock(int fd, int cmd, short type, unsigned i, int which)
{
	struct flock l = one_byte(type, i, which);
	return fcntl(fd, cmd, &l);
}

/* Whether slot i's request is its live owner's */
static bool alive(const struct al_group *g, unsigned i)
{
	struct flock l = one_byte(F_WRLCK, i, LIVE);
	return fcntl(g->fd, F_OFD_GETLK, &l) == 0 && l.l_type != F_UNLCK;
}

/* A slot claimed (from start on, in turn): its index, or AL_GROUP_SLOTS */
static unsigned claim(int fd, unsigned start)
{
	for (unsigned i = 0; i < AL_GROUP_SLOTS; i++)
		if (lock(fd, F_OFD_SETLK, F_WRLCK, (start + i) % AL_GROUP_SLOTS, CLAIM) == 0)
			return (start + i) % AL_GROUP_SLOTS;
	return AL_GROUP_SLOTS;
}

static uint64_t busy(const struct al_group *g)
{
	return __atomic_load_n(&hdr(g)->busy, __ATOMIC_ACQUIRE);
}

/* The slot other than this process's own where token is posted, or
 * AL_GROUP_SLOTS; among the slots of mask only */
static unsigned posted_at(const struct al_group *g, uint64_t mask, uint64_t token)
{
	for (unsigned i = 0; i < AL_GROUP_SLOTS; i++)
		if ((mask >> i & 1) && i != g->own &&
		    __atomic_load_n(&slot_at(g, i)->posted, __ATOMIC_ACQUIRE) == token)
			return i;
	return AL_GROUP_SLOTS;
}

/* Slot i's token when its request waits for a leader (posted by a live
 * owner, not done), else 0 */
static uint64_t waiting_at(const struct al_group *g, unsigned i)
{
	const struct slot *s = slot_at(g, i);
	uint64_t t = __atomic_load_n(&s->posted, __ATOMIC_ACQUIRE);
	return t && __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) != t && alive(g, i) ? t : 0;
}

/* The queue's file opened (fd) and checked: a regular file of this user,
 * never followed through a symlink, of the queue's size. */
static int open_file(const char *dbpath, struct stat *sb)
{
	char name[4200];
	if (snprintf(name, sizeof(name), "%s-group", dbpath) >= (int)sizeof(name))
		return -1;
	int fd = open(name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	/* grown, never shrunk: a mapped page cut off would fault */
	if (fstat(fd, sb) == 0 && S_ISREG(sb->st_mode) && sb->st_uid == geteuid() &&
	    ((size_t)sb->st_size >= GROUP_SIZE || ftruncate(fd, (off_t)GROUP_SIZE) == 0))
		return fd;
	close(fd);
	return -1;
}

static unsigned char *map_file(int fd)
{
	void *p = mmap(NULL, GROUP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	struct header *h = p;
	uint32_t zero = 0;
	__atomic_compare_exchange_n(&h->magic, &zero, GROUP_MAGIC, false, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&h->magic, __ATOMIC_SEQ_CST) != GROUP_MAGIC) {
		munmap(p, GROUP_SIZE);
		return NULL;
	}
	return p;
}

static int open_map(const char *dbpath, int *fdp, unsigned char **mapp)
{
	struct stat sb;
	int fd = open_file(dbpath, &sb);
	unsigned char *p = fd >= 0 ? map_file(fd) : NULL;
	if (!p) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*fdp = fd;
	*mapp = p;
	return 0;
}

/* The mapping a store keeps (al_group_join's cache): mapped once, not at
 * each commit (a fresh mapping faulted in every slot's page the leader
 * read, and its unmapping flushed every core's TLB). */
struct al_group_map {
	unsigned char *map;
	dev_t dev;
	ino_t ino;
};

void al_group_map_free(struct al_group_map *m)
{
	if (m)
		munmap(m->map, GROUP_SIZE);
	free(m);
}

/* The file's own mapping: *mp kept if it maps this very file (not one
 * deleted and made again), else made anew. */
static unsigned char *cached_map(struct al_group_map **mp, int fd, const struct stat *sb)
{
	struct al_group_map *m = *mp;
	if (m && m->dev == sb->st_dev && m->ino == sb->st_ino)
		return m->map;
	al_group_map_free(steal_ptr(*mp));
	if (!(m = calloc(1, sizeof(*m))))
		return NULL;
	if (!(m->map = map_file(fd))) {
		free(m);
		return NULL;
	}
	m->dev = sb->st_dev;
	m->ino = sb->st_ino;
	*mp = m;
	return m->map;
}

int al_group_join(struct al_group_map **cache, const char *dbpath, const void *req, size_t len,
		  struct al_group **out)
{
	*out = NULL;
	if (len == 0 || len > AL_GROUP_MAX_REQ)
		return 1;
	struct al_group *g = calloc(1, sizeof(*g));
	if (!g)
		return 1;
	while (g->token == 0)
		if (getrandom(&g->token, sizeof(g->token), 0) != sizeof(g->token)) {
			free(g);
			return 1;
		}
	/* a file of its own per request: its locks are this open file's */
	struct stat sb;
	g->fd = open_file(dbpath, &sb);
	if (g->fd < 0 || !(g->map = cached_map(cache, g->fd, &sb))) {
		if (g->fd >= 0)
			close(g->fd);
		free(g);
		return 1;
	}
	/* start at a place of this process's own: claims rarely collide */
	if ((g->own = claim(g->fd, (unsigned)(g->token % AL_GROUP_SLOTS))) == AL_GROUP_SLOTS) {
		close(g->fd);
		free(g);
		return 1;
	}
	struct slot *s = slot_at(g, g->own);
	/* a leader reading the slot's old request sees its token change */
	__atomic_store_n(&s->posted, 0, __ATOMIC_SEQ_CST);
	if (lock(g->fd, F_OFD_SETLK, F_WRLCK, g->own, LIVE) < 0) {
		close(g->fd); /* its claim with it */
		free(g);
		return 1;
	}
	memcpy(s->req, req, len);
	__atomic_store_n(&s->len, (uint32_t)len, __ATOMIC_RELAXED);
	__atomic_store_n(&s->posted, g->token, __ATOMIC_RELEASE);
	__atomic_or_fetch(&hdr(g)->busy, 1ull << g->own, __ATOMIC_SEQ_CST);
	*out = g;
	return 0;
}

uint64_t al_group_token(const struct al_group *g)
{
	return g->token;
}

static bool is_done(const struct al_group *g)
{
	return __atomic_load_n(&slot_at(g, g->own)->done, __ATOMIC_ACQUIRE) == g->token;
}

static void wake_all(struct al_group *g)
{
	__atomic_add_fetch(&hdr(g)->released, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &hdr(g)->released, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int al_group_wait(struct al_group *g, struct al_error *err)
{
	uint64_t t0 = al_now_ns();
	for (;;) {
		if (is_done(g))
			return 1;
		uint32_t seen = __atomic_load_n(&hdr(g)->released, __ATOMIC_SEQ_CST);
		if (lock(g->fd, F_OFD_SETLK, F_WRLCK, LEADER, 0) == 0) {
			/* done words are written under this lock: now final */
			if (!is_done(g)) {
				g->leading = true;
				return 0;
			}
			lock(g->fd, F_OFD_SETLK, F_UNLCK, LEADER, 0);
			wake_all(g); /* a waiter that tried meanwhile */
			return 1;
		}
		if (al_now_ns() - t0 >= WAIT_GIVE_UP_NS)
			return al_fail(err, AL_EIO, 0,
				       "commit: no leader of the group commit finished within 10 "
				       "minutes; this commit may have landed or not: see the log");
		struct timespec ts = { 0, WAIT_STEP_NS };
		syscall(SYS_futex, &hdr(g)->released, FUTEX_WAIT, seen, &ts, NULL, 0);
	}
}

int al_group_foreach(struct al_group *g, al_group_fn fn, void *ctx)
{
	uint64_t mask = busy(g);
	for (unsigned i = 0; i < AL_GROUP_SLOTS; i++) {
		if (i == g->own || !(mask >> i & 1))
			continue;
		struct slot *s = slot_at(g, i);
		uint64_t t = waiting_at(g, i);
		if (t == 0)
			continue;
		uint32_t len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
		if (len == 0 || len > AL_GROUP_MAX_REQ)
			continue;
		memcpy(g->buf, s->req, len);
		/* the bytes are the token's only if it is still posted after */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&s->posted, __ATOMIC_RELAXED) != t)
			continue;
		int r = fn(ctx, t, g->buf, len);
		if (r != 0)
			return r;
	}
	return 0;
}

bool al_group_waiting(struct al_group *g, uint64_t token)
{
	/* every slot: a row must outlive its reader, of whatever version */
	unsigned i = posted_at(g, UINT64_MAX, token);
	return i < AL_GROUP_SLOTS && alive(g, i);
}

void al_group_done(struct al_group *g, uint64_t token)
{
	/* a request foreach gave: its slot's bit stays until its owner leaves */
	unsigned i = posted_at(g, busy(g), token);
	if (i < AL_GROUP_SLOTS)
		__atomic_store_n(&slot_at(g, i)->done, token, __ATOMIC_RELEASE);
}

void al_group_end(struct al_group *g)
{
	if (!g->leading)
		return;
	/* withdrawn before the lock goes: the next leader must not do it again
	 * (the leader keeps no row of its own request) */
	__atomic_store_n(&slot_at(g, g->own)->posted, 0, __ATOMIC_SEQ_CST);
	lock(g->fd, F_OFD_SETLK, F_UNLCK, LEADER, 0);
	g->leading = false;
	wake_all(g);
}

void al_group_leave(struct al_group *g)
{
	if (!g)
		return;
	al_group_end(g);
	__atomic_store_n(&slot_at(g, g->own)->posted, 0, __ATOMIC_SEQ_CST);
	/* before the claim goes: the next owner's bit is its own to set */
	__atomic_and_fetch(&hdr(g)->busy, ~(1ull << g->own), __ATOMIC_SEQ_CST);
	close(g->fd); /* the slot's lock with it; the mapping is the store's */
	free(g);
}

int al_group__hold(const char *dbpath)
{
	int fd;
	unsigned char *map;
	if (open_map(dbpath, &fd, &map) < 0)
		return -1;
	munmap(map, GROUP_SIZE);
	if (lock(fd, F_OFD_SETLKW, F_WRLCK, LEADER, 0) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int al_group__posted(const char *dbpath)
{
	struct al_group g = { .own = LEADER };
	if (open_map(dbpath, &g.fd, &g.map) < 0)
		return -1;
	int n = 0;
	for (unsigned i = 0; i < AL_GROUP_SLOTS; i++)
		n += waiting_at(&g, i) != 0;
	munmap(g.map, GROUP_SIZE);
	close(g.fd);
	return n;
}

int al_group__post(const char *dbpath, const void *req, size_t len, bool live, bool listed)
{
	int fd;
	unsigned char *map;
	if (len == 0 || len > AL_GROUP_MAX_REQ || open_map(dbpath, &fd, &map) < 0)
		return -1;
	struct al_group g = { .fd = fd, .map = map };
	unsigned i = claim(fd, 0);
	if (i < AL_GROUP_SLOTS && (!live || lock(fd, F_OFD_SETLK, F_WRLCK, i, LIVE) == 0)) {
		struct slot *s = slot_at(&g, i);
		memcpy(s->req, req, len);
		__atomic_store_n(&s->len, (uint32_t)len, __ATOMIC_RELAXED);
		__atomic_store_n(&s->posted, 0x5ea1ed5ea1edull, __ATOMIC_RELEASE);
		if (listed)
			__atomic_or_fetch(&hdr(&g)->busy, 1ull << i, __ATOMIC_SEQ_CST);
	} else {
		i = AL_GROUP_SLOTS;
	}
	munmap(map, GROUP_SIZE);
	if (i == AL_GROUP_SLOTS) {
		close(fd);
		return -1;
	}
	return fd;
}
