#!/bin/bash
# banned.h (force-included in every airlock source): a banned call does not
# compile, naming the ban; the system headers still compile after it.
. "$(dirname "$0")/../lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
command -v cc >/dev/null || skip_all "needs a C compiler"
cc_banned() { cc -std=gnu11 -D_GNU_SOURCE -Wall -Werror -include "$SRC/src/lib/banned.h" -c -o /dev/null -x c - 2>&1; }
for call in 'strcpy(b, "x")' 'strcat(b, "x")' 'strncpy(b, "x", 1)' 'sprintf(b, "x")' 'strtok(b, ",")' \
	'gmtime(&t)' 'localtime(&t)' 'vsprintf(b, "x", ap)'; do
	fn=${call%%(*}
	out=$(printf '#include <string.h>\n#include <time.h>\n#include <stdarg.h>\nvoid f(va_list ap);\nvoid f(va_list ap) { char b[8] = ""; time_t t = 0; (void)t; (void)ap; (void)%s; }\n' "$call" | cc_banned)
	like "$out" "sorry_${fn}_is_a_banned_function" "$fn does not compile"
done
ok "the system headers, the libraries' and the allowed forms compile after it" -- bash -c "printf '%s\n' \
	'#include <stdio.h>' '#include <stdlib.h>' '#include <string.h>' '#include <time.h>' '#include <wchar.h>' \
	'#include <sqlite3.h>' '#include <jansson.h>' '#include <openssl/evp.h>' '#include <archive.h>' '#include <zstd.h>' \
	'int f(char *b, size_t n);' \
	'int f(char *b, size_t n) { struct tm tm; time_t t = 0; char *s; gmtime_r(&t, &tm); localtime_r(&t, &tm); return snprintf(b, n, \"%s\", strtok_r(b, \",\", &s)); }' \
	| cc -std=gnu11 -D_GNU_SOURCE -Wall -Werror -include '$SRC/src/lib/banned.h' -c -o /dev/null -x c -"
done_testing
