# airlock — one non-recursive GNU Makefile.
#   make              build (installs missing Debian packages via scripts/deps.sh)
#   make check        build with -Werror, run unit, integration, security and fuzz-corpus tests under prove
#   make demo         the quick start
#   make bench        benchmarks (print figures and ratios; never fail on time)
#   make SANITIZE=address,undefined check    the same suite under ASan/UBSan (in build-san/)

SANITIZE ?=
ifeq ($(SANITIZE),)
BUILD ?= build
else
BUILD ?= build-san
endif

CC ?= cc
PKGS := libcrypto sqlite3 libzstd libarchive libseccomp libcap
# libgit2: headers only; dlopen'ed when a review first needs a text diff (src/lib/dl_git.h)
GIT_CFLAGS = $(shell pkg-config --cflags libgit2)
# libpq: headers only; dlopen'ed when PostgreSQL metadata is used (src/lib/backend/postgres)
PQ_CFLAGS = $(shell pkg-config --cflags libpq)
# Recursive (=), not simple (:=): evaluated when a recipe runs, i.e. after
# scripts/deps.sh has installed pkg-config and the libraries on a new machine.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
# libarchive is loaded on first use (include/airlock/dl_archive.h), not linked;
# a test or tool that calls it itself links it (ARCHIVE_LIBS)
PKG_LIBS = $(shell pkg-config --libs $(filter-out libarchive,$(PKGS)))
ARCHIVE_LIBS = $(shell pkg-config --libs libarchive)
JANSSON_CFLAGS = $(shell pkg-config --cflags jansson)
JANSSON_LIBS = $(shell pkg-config --libs jansson)
CMOCKA_LIBS = $(shell pkg-config --libs cmocka)
# the daemon (src/server) and the CLI's HTTP client: headers at build time;
# the libraries are dlopen'ed when `serve` or `--server` needs them (include/airlock/dl.h)
MHD_CFLAGS = $(shell pkg-config --cflags libmicrohttpd)
CURL_CFLAGS = $(shell pkg-config --cflags libcurl)

WARN := -Wall -Wextra -Wshadow -Wformat=2 -Wvla -Wmissing-prototypes -Werror
CFLAGS ?= -O2 -g
# Layers (docs/architecture.md, "Layers as built"): each directory sees only
# the headers below it, so including another layer's private header is a
# compile error ("util.h: No such file or directory"), not a convention.
#   src/lib, src/lib/sandbox   libairlock: its private headers
#   src/front                  JSON views, request decoders, shared ops: include/airlock only
#   src/cli                    airlock: src/front and include/airlock (+ libcurl's headers)
#   src/server                 airlockd: src/front and include/airlock (+ libmicrohttpd's headers)
# The tests, fuzz targets and benchmarks test internals: they see src/lib too.
LIB_INC := -Isrc/lib -Isrc/lib/sandbox
FRONT_INC := -Isrc/front
CLI_INC = -Isrc/front -Isrc/cli $(CURL_CFLAGS)
SERVER_INC = -Isrc/front -Isrc/server $(MHD_CFLAGS)
INTERNAL_INC := $(LIB_INC) -Isrc/front
LAYER_INC = $(LIB_INC)
$(BUILD)/src/front/%.o: LAYER_INC = $(FRONT_INC)
$(BUILD)/src/cli/%.o: LAYER_INC = $(CLI_INC)
$(BUILD)/src/server/%.o: LAYER_INC = $(SERVER_INC)
BASE_CFLAGS = -pthread -std=gnu11 -D_GNU_SOURCE -Iinclude $(WARN) $(CFLAGS) $(PKG_CFLAGS) $(JANSSON_CFLAGS) $(GIT_CFLAGS) $(PQ_CFLAGS)
ALL_CFLAGS = $(BASE_CFLAGS) $(LAYER_INC)
# banned.h (git's): the unsafe classics are a compile error in every airlock source
BASE_CFLAGS += -include src/lib/banned.h
ALL_LDFLAGS = -pthread $(LDFLAGS)
# libstdc++ (only src/lib/jsonschema.cc needs it) is linked statically: the
# shared library's relocations and constructors cost 1.6 M instructions at
# every start. Sanitizer builds keep it shared (their runtime replaces
# operator new).
ifeq ($(SANITIZE),)
LDLIBS_EXTRA = -lm -Wl,-Bstatic -lstdc++ -Wl,-Bdynamic
else
LDLIBS_EXTRA = -lm -lstdc++
endif
CXX ?= g++
CXXFLAGS ?= -O2 -g
ALL_CXXFLAGS = -pthread -std=c++17 -D_GNU_SOURCE -Iinclude $(LIB_INC) -Wall -Wextra -Werror $(CXXFLAGS) $(JANSSON_CFLAGS)
ifneq ($(SANITIZE),)
BASE_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
ALL_CXXFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
ALL_LDFLAGS += -fsanitize=$(SANITIZE)
endif

LIB_SRC := $(wildcard src/lib/*.c src/lib/sandbox/*.c src/lib/backend/*.c src/lib/backend/*/*.c)
# C++ only where the maintained library is C++: JSON Schema (valijson), jsonschema.h
LIB_CXX_SRC := $(wildcard src/lib/*.cc)
CLI_SRC := $(wildcard src/cli/*.c src/front/*.c src/server/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
# + the seccomp filter, compiled by libseccomp at build time (tools/seccomp_gen.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o) $(LIB_CXX_SRC:%.cc=$(BUILD)/%.o) $(BUILD)/gen/seccomp_bpf.o
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
# + the web UI's built files (web/dist), embedded (scripts/web-embed.sh)
SERVE_OBJ := $(BUILD)/gen/web_assets.o
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_TARGETS := $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_REPLAY := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/replay_%)
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/*.c))

.PHONY: all deps check check-layers check-format check-api unit demo bench fuzz clean screenshots install
all: $(BUILD)/airlock $(BUILD)/airlock-init $(BUILD)/image/busybox/bin/busybox $(BUILD)/guest/vmlinux \
	$(BUILD)/man/airlock.1 $(BUILD)/completions/airlock $(BUILD)/completions/_airlock

# shell completion: one candidates function (completions/airlock-candidates.sh)
# joined to the bash and the zsh wrapper
$(BUILD)/completions/airlock: completions/airlock-candidates.sh completions/airlock.bash
	@mkdir -p $(@D)
	cat $^ > $@
$(BUILD)/completions/_airlock: completions/airlock-candidates.sh completions/_airlock.zsh
	@mkdir -p $(@D)
	{ echo '#compdef airlock'; cat $^; } > $@

# the man page, from its source docs/man/airlock.1.scd (scdoc); a test keeps
# it in step with every --help (tests/integration/t0126-install.sh)
$(BUILD)/man/airlock.1: docs/man/airlock.1.scd | deps
	@mkdir -p $(@D)
	scdoc < $< > $@.tmp && mv $@.tmp $@

# make install [PREFIX=/usr/local] [DESTDIR=]: the programs in
# PREFIX/lib/airlock (airlock finds airlock-init, the busybox image and the
# microVM guest beside itself), PREFIX/bin/airlock a link to it, the man
# page, the bash and zsh completions, and the web UI's files (the same the
# binary embeds and serves) in PREFIX/share/airlock/web.  Builds nothing
# that is up to date.
PREFIX ?= /usr/local
DESTDIR ?=
INSTALL_LIB = $(DESTDIR)$(PREFIX)/lib/airlock
INSTALL_SHARE = $(DESTDIR)$(PREFIX)/share
install: all
	install -d $(INSTALL_LIB)/guest $(DESTDIR)$(PREFIX)/bin $(INSTALL_SHARE)/man/man1 \
	  $(INSTALL_SHARE)/bash-completion/completions $(INSTALL_SHARE)/zsh/site-functions \
	  $(INSTALL_SHARE)/airlock/web
	install -m 0755 $(BUILD)/airlock $(BUILD)/airlock-init $(INSTALL_LIB)/
	rm -rf $(INSTALL_LIB)/image && mkdir -p $(INSTALL_LIB)/image && \
	  cp -a $(BUILD)/image/busybox $(INSTALL_LIB)/image/
	install -m 0644 $(BUILD)/guest/vmlinux $(BUILD)/guest/initramfs.cpio $(INSTALL_LIB)/guest/
	ln -sfn ../lib/airlock/airlock $(DESTDIR)$(PREFIX)/bin/airlock
	install -m 0644 $(BUILD)/man/airlock.1 $(INSTALL_SHARE)/man/man1/airlock.1
	install -m 0644 $(BUILD)/completions/airlock $(INSTALL_SHARE)/bash-completion/completions/airlock
	install -m 0644 $(BUILD)/completions/_airlock $(INSTALL_SHARE)/zsh/site-functions/_airlock
	cp -R web/dist/. $(INSTALL_SHARE)/airlock/web/
	@echo "installed into $(DESTDIR)$(PREFIX)"

# the default sandbox image's root filesystem, from Debian's busybox-static
$(BUILD)/image/busybox/bin/busybox: scripts/mkimage-busybox.sh | deps
	@mkdir -p $(BUILD)/image
	scripts/mkimage-busybox.sh $(BUILD)/image/busybox

deps:
	@scripts/deps.sh

$(BUILD)/%.o: %.c | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/%.o: %.cc | deps
	@mkdir -p $(@D)
	$(CXX) $(ALL_CXXFLAGS) -MMD -MP -c $< -o $@

# the in-sandbox init: static, without sanitizers (it runs inside images),
# against musl (Debian's musl-tools): glibc's static start-up sizes the CPU
# caches with CPUID, one VM exit each on a virtual machine, which made
# airlock-init's exec cost ~0.5 ms of every sandbox; musl's does nothing of
# the kind, and the binary is 59 KB instead of 777 KB (the sealed copy)
MUSL_CC ?= musl-gcc
$(BUILD)/airlock-init: src/agent/init.c Makefile | deps
	@mkdir -p $(@D)
	$(MUSL_CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -static -o $@ src/agent/init.c

# the microVM backend's guest agent: /init of the guest (static, no sanitizers)
# (with the relay's multiplexer, the host's own: src/lib/sandbox/vm_mux.c)
$(BUILD)/airlock-guest: src/agent/guest.c src/lib/sandbox/vm_mux.c src/lib/sandbox/vm_mux.h | deps
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -static -Isrc/lib/sandbox -o $@ $(filter %.c,$^)

# the bzImage's kernel as an ELF, for QEMU's direct boot (tools/vmlinux_extract.c)
$(BUILD)/tools/vmlinux-extract: tools/vmlinux_extract.c | deps
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -o $@ $< $(ALL_LDFLAGS) $(PKG_LIBS) $(ARCHIVE_LIBS)

# the microVM guest: Debian's kernel and an initramfs (scripts/mkguest.sh)
$(BUILD)/guest/vmlinux: scripts/mkguest.sh $(BUILD)/airlock-guest $(BUILD)/tools/vmlinux-extract | deps
	scripts/mkguest.sh $(BUILD)/guest $(BUILD)/airlock-guest $(BUILD)/tools/vmlinux-extract

# what the security tests run inside sandboxes: static, like airlock-init
$(BUILD)/tests/probe: tests/helpers/probe.c | deps
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -static -o $@ $<

# the OpenAPI document is built into the daemon (.incbin)
$(BUILD)/src/server/server.o: docs/openapi.json

# the sandbox's seccomp filter as BPF: compiling it at each run cost ~5 M
# instructions (src/lib/sandbox/sandbox_private.h); test_seccomp checks it
$(BUILD)/tools/seccomp-gen: tools/seccomp_gen.c $(BUILD)/src/lib/sandbox/seccomp.o $(BUILD)/src/lib/util.o \
		$(BUILD)/src/lib/dl_archive.o $(BUILD)/src/lib/dl.o | deps
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(LIB_INC) -o $@ $^ $(ALL_LDFLAGS) $(PKG_LIBS) $(LDLIBS_EXTRA)
$(BUILD)/gen/seccomp_bpf.c: $(BUILD)/tools/seccomp-gen
	@mkdir -p $(@D)
	$< >$@.tmp && mv $@.tmp $@
$(BUILD)/gen/seccomp_bpf.o: $(BUILD)/gen/seccomp_bpf.c
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libairlock.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/airlock: $(CLI_OBJ) $(SERVE_OBJ) $(BUILD)/libairlock.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJ) $(SERVE_OBJ) $(BUILD)/libairlock.a $(PKG_LIBS) $(JANSSON_LIBS) $(LDLIBS_EXTRA)

# The web UI (web/, docs/architecture.md "The web UI"): its npm packages at
# the versions web/package-lock.json pins, installed again only when it
# changes; the build (types generated from docs/openapi.json, tsc --strict,
# Vite) again only when one of its inputs changes; the result embedded.
WEB_NPM := web/node_modules/.installed
WEB_INPUTS := $(shell find web/src web/public -type f -not -path 'web/src/gen/*' 2>/dev/null) \
	web/index.html web/tsconfig.json web/vite.config.ts docs/openapi.json
$(WEB_NPM): web/package.json web/package-lock.json | deps
	cd web && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@
web/.built: $(WEB_NPM) $(WEB_INPUTS)
	cd web && npm run --silent build
	@touch $@
$(BUILD)/gen/web_assets.c: web/.built scripts/web-embed.sh
	@mkdir -p $(@D)
	scripts/web-embed.sh web/dist $(BUILD)/gen/web-gz $@
$(BUILD)/gen/web_assets.o: $(BUILD)/gen/web_assets.c src/server/web_assets.h
	$(CC) $(BASE_CFLAGS) $(SERVER_INC) -c $< -o $@

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libairlock.a | deps
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(INTERNAL_INC) -o $@ $< $(BUILD)/libairlock.a $(ALL_LDFLAGS) $(PKG_LIBS) $(ARCHIVE_LIBS) $(JANSSON_LIBS) $(CMOCKA_LIBS) $(LDLIBS_EXTRA)
# test_stores compiles the daemon's src/server/stores.c in
$(BUILD)/tests/test_stores: src/server/stores.c src/server/stores.h
$(BUILD)/tests/test_stores: INTERNAL_INC += -Isrc/server
# the sandbox's unit test runs airlock-init and the busybox image
$(BUILD)/tests/test_sandbox: | $(BUILD)/airlock-init $(BUILD)/image/busybox/bin/busybox

# Each fuzz target is built twice: with the standalone driver that replays
# its corpus (make check) and, with clang, as a libFuzzer binary (make fuzz).
# (the daemon's request decoders are linked into every target: fuzz_api uses them)
FUZZ_EXTRA := src/front/decode.c
$(BUILD)/fuzz/replay_%: fuzz/fuzz_%.c fuzz/replay.c $(FUZZ_EXTRA) $(BUILD)/libairlock.a | deps
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(INTERNAL_INC) -o $@ $< fuzz/replay.c $(FUZZ_EXTRA) $(BUILD)/libairlock.a $(ALL_LDFLAGS) $(PKG_LIBS) $(JANSSON_LIBS) $(LDLIBS_EXTRA)

$(BUILD)/bench/%: bench/%.c $(BUILD)/libairlock.a | deps
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(INTERNAL_INC) -o $@ $< $(BUILD)/libairlock.a $(ALL_LDFLAGS) $(PKG_LIBS) $(JANSSON_LIBS) $(LDLIBS_EXTRA)

fuzz: $(BUILD)/gen/seccomp_bpf.c $(LIB_CXX_SRC:%.cc=$(BUILD)/%.o) | deps
	@mkdir -p build-fuzz
	for t in $(FUZZ_TARGETS); do \
	  clang -std=gnu11 -D_GNU_SOURCE -Iinclude $(INTERNAL_INC) -g -O1 -fsanitize=fuzzer,address,undefined \
	    -o build-fuzz/fuzz_$$t fuzz/fuzz_$$t.c $(LIB_SRC) $(BUILD)/gen/seccomp_bpf.c $(LIB_CXX_SRC:%.cc=$(BUILD)/%.o) $(FUZZ_EXTRA) $(PKG_CFLAGS) $(PKG_LIBS) $(JANSSON_LIBS) -lm -lstdc++ || exit 1; \
	done
	@echo "run e.g.: build-fuzz/fuzz_node fuzz/corpus/node -max_total_time=60"

unit: $(UNIT_BIN)

# the front-ends' files depend on each other downward only (scripts/layers.sh)
check-layers: $(CLI_OBJ)
	@scripts/layers.sh $(BUILD)

# every C file as .clang-format says (clang-format 14, Debian 12's)
check-format: | deps
	@scripts/format.sh --check

# The API contract (docs/api.md): docs/openapi.json is a valid OpenAPI
# document (a standard validator, @apidevtools/swagger-parser) that keeps the
# project's rules, and its routes are the daemon's route table, both ways.
# The API tests check every answer against it (tests/lib.sh, curl).  The
# tools come from npm at the versions tests/api/package-lock.json pins,
# installed again only when it changes.
API_NPM := tests/api/node_modules/.installed
$(API_NPM): tests/api/package.json tests/api/package-lock.json | deps
	cd tests/api && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

check-api: $(API_NPM)
	@node tests/api/check.mjs lint docs/openapi.json
	@node tests/api/check.mjs routes docs/openapi.json src/server/server.c src/server/web.c
	@echo "docs/openapi.json: a valid OpenAPI document, with every route the daemon serves and no other"

# each test file within 15 minutes (timeout signals its whole process
# group): one that hangs fails alone instead of holding the suite.  No
# terminal reaches a test: in its own process group it would stop on it
check: all check-layers check-format check-api $(UNIT_BIN) $(FUZZ_REPLAY) $(BUILD)/tests/probe
	@AIRLOCK_BUILD=$(CURDIR)/$(BUILD) CMOCKA_MESSAGE_OUTPUT=TAP prove -f --timer \
	  --exec 'timeout -k 15 900' \
	  $(UNIT_BIN) tests/fuzz-replay.sh tests/integration/*.sh tests/security/*.sh </dev/null

# the README's pictures of the web UI (review in both modes, audit), taken by
# the browser suite (tests/integration/t0101-web-browser.sh) as it runs
screenshots: all
	@AIRLOCK_BUILD=$(CURDIR)/$(BUILD) SCREENSHOTS=$(CURDIR)/docs/screenshots \
	  bash tests/integration/t0101-web-browser.sh | tail -3
	@ls docs/screenshots

demo: all
	@AIRLOCK_BUILD=$(CURDIR)/$(BUILD) scripts/demo.sh

bench: $(BUILD)/airlock $(BENCH_BIN)
	@AIRLOCK_BUILD=$(CURDIR)/$(BUILD) bench/run.sh

clean:
	rm -rf build build-san build-fuzz tests/api/node_modules web/node_modules web/dist web/.built web/src/gen

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
