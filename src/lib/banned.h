/* airlock — functions that may not be used (as git's banned.h).
 *
 * Force-included first in every airlock source (-include in the Makefile's
 * CFLAGS).  A banned call expands to an undeclared identifier naming the
 * ban, a compile error under -Werror.  Because it comes before a file's own
 * includes, it first includes the system headers that declare these
 * functions: their include guards then keep any later #include from
 * meeting the macros with a declaration.  (Nothing in airlock defines
 * feature macros in a source file; _GNU_SOURCE comes from the command line.)
 *
 * Use instead: snprintf / asprintf (sprintf, vsprintf, strcpy, strcat,
 * strncpy, strncat), strtok_r, gmtime_r / localtime_r (not thread-safe:
 * gmtime in the daemon's log was a data race in libmicrohttpd's pool),
 * strftime (ctime, asctime). */
#ifndef AIRLOCK_BANNED_H
#define AIRLOCK_BANNED_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define AL_BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) AL_BANNED(strcpy)
#undef strcat
#define strcat(x, y) AL_BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) AL_BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) AL_BANNED(strncat)
#undef strtok
#define strtok(x, y) AL_BANNED(strtok)
#undef sprintf
#define sprintf(...) AL_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) AL_BANNED(vsprintf)
#undef gmtime
#define gmtime(t) AL_BANNED(gmtime)
#undef localtime
#define localtime(t) AL_BANNED(localtime)
#undef ctime
#define ctime(t) AL_BANNED(ctime)
#undef asctime
#define asctime(t) AL_BANNED(asctime)

#endif
