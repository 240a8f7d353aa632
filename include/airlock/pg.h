/* airlock — the metadata schema on PostgreSQL (src/lib/backend/postgres/).
 *
 * The scale-out metadata store: every tenant table carries the tenant in
 * its primary key and has ENABLE and FORCE ROW LEVEL SECURITY with one
 * policy, tenant = current_setting('airlock.tenant', true), for reading and
 * writing; unset ('' after a SET LOCAL expires, NULL before) matches no
 * row.  The schema belongs to the role that migrates it (the owner); the
 * service connects as another role that owns nothing, is no superuser and
 * has no BYPASSRLS, with SELECT/INSERT/UPDATE/DELETE granted, and sets the
 * tenant in each transaction with SET LOCAL (docs/architecture.md,
 * "Metadata on PostgreSQL").  What a request needs before it knows its
 * tenant (a bearer token's or a session's tenant) it asks through two
 * SECURITY DEFINER functions that return only that.
 *
 * The modules reach it through the metadata seam (src/lib/db.h, the
 * driver src/lib/backend/postgres/db.c); no command or daemon opens it yet
 * (the embedded SQLite home is still the only one the commands use).
 * libpq is loaded on first use (include/airlock/dl.h). */
#ifndef AIRLOCK_PG_H
#define AIRLOCK_PG_H

#include "airlock/error.h"

/* The schema version this build writes (its migrations: 1..AL_PG_SCHEMA). */
#define AL_PG_SCHEMA 9

/* Bring the database at url (postgres:// or postgresql://, libpq's URI)
 * to AL_PG_SCHEMA, each migration in its own transaction, recorded in
 * airlock_schema, as the connecting role (which owns what it creates), and
 * grant service_role what the service needs.  service_role must exist,
 * must not be a superuser, have BYPASSRLS, own anything in the database
 * or be a member of the owner; AL_EINVAL otherwise (nothing changed).  A
 * database at a newer version than this build knows is refused
 * (AL_ESTATE).  *from and *to get the versions before and after. */
int al_pg_migrate(const char *url, const char *service_role, int *from, int *to,
		  struct al_error *err);

#endif
