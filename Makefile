# cgperf: container- and cgroup-aware profiling agent and exporter.
#
#   make            build cgperf-agent and cgperf-exporter (into build/)
#   make run        install what is missing, build, start cgperf-exporter (data in
#                   run-data/, http://127.0.0.1:9464/) and `cgperf-agent run` pushing
#                   to it (packaging/run-default.yaml); Ctrl-C stops both
#   make run-stat   build, run `cgperf-agent stat -a -I 1000` (RUN_ARGS appended)
#   make test       install what is missing, build, run every test
#   make check-asan the same suite under ASan+UBSan (into build-asan/)
#   make bench      benchmarks under bench/, printed figures
#   make fuzz       libFuzzer targets (clang), FUZZ_TIME seconds each
#   make deb        Debian packages cgperf-agent, cgperf-exporter (into build/deb/)
#   make image      OCI images of both (podman) from those packages
#
# Variables: O=DIR (object dir), SAN=1 (sanitizers), V=1 (verbose).

# `make` alone builds the two programs, whatever rule comes first below.
.DEFAULT_GOAL := all

O ?= build
CC ?= gcc
ifeq ($(origin CC),default)
CC = gcc
endif

PKGS := libelf libdw libunwind libtraceevent libtracefs libcurl json-c libprotobuf-c libmicrohttpd sqlite3 yaml-0.1 zlib
# libtracefs (finding and mounting tracefs, reading event ids and formats):
# its header lives in its own include directory, so ask pkg-config.
TRACEFS_CFLAGS := $(shell pkg-config --cflags libtracefs 2>/dev/null || echo -I/usr/include/tracefs -I/usr/include/traceevent)
TRACEFS_LIBS := $(shell pkg-config --libs libtracefs 2>/dev/null || echo -ltracefs -ltraceevent)

CFLAGS ?= -O2 -g
WARNFLAGS := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wformat-security -Wvla \
	-Wmissing-prototypes -Wstrict-prototypes -Wno-unused-parameter
override CPPFLAGS += -I. -I$(O)/gen -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 $(TRACEFS_CFLAGS)
override CFLAGS += -std=gnu11 $(WARNFLAGS) -fno-omit-frame-pointer
LDLIBS_AGENT := -liberty $(TRACEFS_LIBS) -ltraceevent -lelf -ldw -lunwind-x86_64 -lunwind -ljson-c -lyaml -lprotobuf-c -lz -lm -lpthread
# The exporter links no perf, ELF, DWARF or unwinding library.
# remote_write: libcurl and libsnappy. The exporter links libcurl (its ClickHouse
# store calls it); the agent loads libcurl and libmicrohttpd on first use (lib/dynlib.h).
# libbpf (Debian's libbpf-dev) reads the kernel's BTF: kernel probe arguments
# by parameter name (agent/perf/probe_btf.c). Optional: without it, by register only.
ifeq ($(shell pkg-config --exists libbpf 2>/dev/null && echo y),y)
override CPPFLAGS += -DCGPERF_HAVE_LIBBPF
LDLIBS_AGENT += $(shell pkg-config --libs libbpf)
endif
LDLIBS_EXPORTER := -lsqlite3 -lmicrohttpd -lyaml -lprotobuf-c -lcurl -lsnappy -lz -lm -lpthread

ifeq ($(SAN),1)
override CFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=undefined -O1
override LDFLAGS += -fsanitize=address,undefined
endif

# Three archives (docs/architecture.md):
#   libcglib.a    lib/ (shared helpers) and wire/ (the batch format, with the
#                 protobuf code protoc-c generates into $(O)/gen:
#                 #include "proto/cgperf.pb-c.h"); both binaries link it
#   libagent.a    agent/<stage>/ and cgroup/, all but main()
#   libexporter.a exporter/ and its store/ and render/, all but main()
CGLIB_SRC := $(wildcard lib/*.c) $(wildcard wire/*.c)
PROTO_C := $(O)/gen/proto/cgperf.pb-c.c
PROTO_H := $(O)/gen/proto/cgperf.pb-c.h
PROTO_OBJ := $(O)/gen/proto/cgperf.pb-c.o
CGLIB_OBJ := $(patsubst %.c,$(O)/%.o,$(CGLIB_SRC)) $(PROTO_OBJ)
AGENT_LIB_SRC := $(filter-out agent/cmd/main.c,$(wildcard agent/*/*.c)) $(wildcard cgroup/*.c)
AGENT_LIB_OBJ := $(patsubst %.c,$(O)/%.o,$(AGENT_LIB_SRC))
AGENT_OBJ := $(O)/agent/cmd/main.o
EXPORTER_SRC := $(wildcard exporter/*.c) $(wildcard exporter/*/*.c)
EXPORTER_OBJ := $(patsubst %.c,$(O)/%.o,$(EXPORTER_SRC))
# Everything of the exporter but main(): linked into the unit tests and tools
# that exercise it.
# The remote_write schema (proto/remote_write.proto) is the exporter's alone.
RW_PROTO_H := $(O)/gen/proto/remote_write.pb-c.h
RW_PROTO_OBJ := $(O)/gen/proto/remote_write.pb-c.o
# The explorer page (web/, docs/ui.md): its files gzip'd into a C table by
# web/build.mjs (node), uPlot from web/node_modules (npm ci, pinned by
# web/package-lock.json; packaging/install-deps.sh runs it too).
WEB_SRC := $(sort $(wildcard web/src/*.html web/src/*.js web/src/*.css web/src/*.svg))
WEB_NPM := web/node_modules/.package-lock.json
WEB_UPLOT := web/node_modules/uplot/dist/uPlot.esm.js web/node_modules/uplot/dist/uPlot.min.css
UI_ASSETS_C := $(O)/gen/exporter/ui_assets.c
UI_ASSETS_OBJ := $(O)/gen/exporter/ui_assets.o
EXPORTER_LIB_OBJ := $(filter-out $(O)/exporter/main.o,$(EXPORTER_OBJ)) $(RW_PROTO_OBJ) $(UI_ASSETS_OBJ)
# pprof's profile.proto (proto/profile.proto) only for tests/tools/pprof_bench.c,
# which measures protobuf-c against the hand-written encoder.
PPROF_PROTO_H := $(O)/gen/proto/profile.pb-c.h
PPROF_PROTO_OBJ := $(O)/gen/proto/profile.pb-c.o
# What the unit tests and tools link: every archive, users first.
ALL_LIBS := $(O)/libexporter.a $(O)/libagent.a $(O)/libcglib.a

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(O)/tests/%,$(UNIT_SRC))
# Shared test helpers (tests/unit/testlib.h, testfix.h), linked into every unit test;
# the failing-allocation injector (testalloc.h) replaces malloc, so only the
# tests named here link it.
TESTLIB_OBJ := $(O)/tests/unit/testlib.o $(O)/tests/unit/testfix.o
TESTALLOC_OBJ := $(O)/tests/unit/testalloc.o
TESTALLOC_BIN := $(addprefix $(O)/tests/,test_render test_fold test_counters test_cgwatch test_strv test_config_errors \
	test_hashmap test_grow test_wire test_idtab)
$(TESTALLOC_BIN): $(TESTALLOC_OBJ)
$(TESTALLOC_BIN): TEST_EXTRA_OBJ += $(TESTALLOC_OBJ)
# A test split by subject (test_NAME.c, test_NAME_SUBJECT.c) shares its
# helpers through tests/unit/NAME_fixture.[ch], linked into each of them.
UNIT_FIXTURES := $(patsubst tests/unit/%_fixture.c,%,$(wildcard tests/unit/*_fixture.c))
define unit_fixture
$(filter $(O)/tests/test_$(1) $(O)/tests/test_$(1)_%,$(UNIT_BIN)): $(O)/tests/unit/$(1)_fixture.o
$(filter $(O)/tests/test_$(1) $(O)/tests/test_$(1)_%,$(UNIT_BIN)): TEST_EXTRA_OBJ += $(O)/tests/unit/$(1)_fixture.o
endef
$(foreach f,$(UNIT_FIXTURES),$(eval $(call unit_fixture,$(f))))
# Unit tests of exporter modules (by name) link the exporter's objects too.
UNIT_EXPORTER_BIN := $(filter $(O)/tests/test_render% $(O)/tests/test_store% \
	$(O)/tests/test_totals% $(O)/tests/test_http% $(O)/tests/test_rw%,$(UNIT_BIN))
# Test-only helper programs (batch generators, renderers, push loops): one
# .c each, linked with everything but the two main()s.
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BIN := $(patsubst tests/tools/%.c,$(O)/tools/%,$(TOOL_SRC))
WORKLOAD_SRC := $(wildcard tests/workloads/*.c)
WORKLOAD_BIN := $(patsubst tests/workloads/%.c,$(O)/workloads/%,$(filter-out tests/workloads/chain.c tests/workloads/deepstack.c,$(WORKLOAD_SRC))) \
	$(O)/workloads/chain-fp $(O)/workloads/chain-nofp $(O)/workloads/cxx \
	$(O)/workloads/deepstack-fp $(O)/workloads/deepstack-nofp

ifneq ($(V),1)
Q := @
endif

.PHONY: deb image all deps run run-stat test check check-asan bench clean distclean build-tests fuzz fuzz-parsers
all: $(O)/cgperf-agent $(O)/cgperf-exporter

deps:
	$(Q)packaging/install-deps.sh

$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# Both files come from one protoc-c run (a pattern rule with two targets).
$(O)/gen/proto/%.pb-c.c $(O)/gen/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(O)/gen
	@$(if $(Q),echo "  PROTOC  $<")
	$(Q)protoc-c --proto_path=. --c_out=$(O)/gen $<

$(PROTO_OBJ) $(RW_PROTO_OBJ) $(PPROF_PROTO_OBJ): $(O)/gen/proto/%.pb-c.o: $(O)/gen/proto/%.pb-c.c $(O)/gen/proto/%.pb-c.h
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(WEB_NPM): web/package.json web/package-lock.json
	@command -v npm >/dev/null || { echo "npm missing: run packaging/install-deps.sh" >&2; exit 1; }
	@$(if $(Q),echo "  NPM     web/ (npm ci)")
	$(Q)cd web && npm ci --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error
	$(Q)touch $@

$(WEB_UPLOT): $(WEB_NPM)

$(UI_ASSETS_C): web/build.mjs $(WEB_SRC) $(WEB_UPLOT)
	@command -v node >/dev/null || { echo "node missing: run packaging/install-deps.sh" >&2; exit 1; }
	$(Q)node web/build.mjs $@ $(WEB_SRC) $(WEB_UPLOT)

$(UI_ASSETS_OBJ): $(UI_ASSETS_C)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# Anything may include wire/wire.h: generate before compiling.
$(CGLIB_OBJ) $(AGENT_LIB_OBJ) $(AGENT_OBJ) $(EXPORTER_OBJ) $(UNIT_BIN) $(TOOL_BIN) $(TESTLIB_OBJ) \
	$(patsubst %,$(O)/tests/unit/%_fixture.o,$(UNIT_FIXTURES)): | $(PROTO_H) $(RW_PROTO_H)

$(O)/libcglib.a: $(CGLIB_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(O)/libagent.a: $(AGENT_LIB_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(O)/cgperf-agent: $(AGENT_OBJ) $(O)/libagent.a $(O)/libcglib.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_AGENT)

$(O)/cgperf-exporter: $(O)/exporter/main.o $(O)/libexporter.a $(O)/libcglib.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_EXPORTER)

$(O)/tests/%: tests/unit/%.c $(TESTLIB_OBJ) $(O)/libagent.a $(O)/libcglib.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(TESTLIB_OBJ) $(TEST_EXTRA_OBJ) \
		$(O)/libagent.a $(O)/libcglib.a -lcmocka $(LDLIBS_AGENT)

# test_unwind unwinds through a frame with a cleanup: its CFI then has a
# personality and an LSDA (CIE augmentation "zPLR"), as C++ code has.
$(O)/tests/test_unwind: override CFLAGS += -fexceptions

# An archive, so a test or tool pulls in only the exporter modules it uses.
$(O)/libexporter.a: $(EXPORTER_LIB_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(UNIT_EXPORTER_BIN): $(O)/tests/%: tests/unit/%.c $(TESTLIB_OBJ) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(TESTLIB_OBJ) $(TEST_EXTRA_OBJ) \
		$(ALL_LIBS) -lcmocka -lsqlite3 -lsnappy -lcurl -lmicrohttpd $(LDLIBS_AGENT)

$(O)/tools/pprof_bench: $(PPROF_PROTO_OBJ)
$(O)/tools/pprof_bench: TOOL_EXTRA_OBJ += $(PPROF_PROTO_OBJ)
$(O)/tools/pprof_bench: | $(PPROF_PROTO_H)

$(O)/tools/%: tests/tools/%.c $(ALL_LIBS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -MMD -MP -MF $@.d -o $@ $< $(TOOL_EXTRA_OBJ) $(ALL_LIBS) \
		-lsqlite3 -lsnappy -lcurl -lmicrohttpd $(LDLIBS_AGENT)

# Workloads keep their own flags: a known call chain must survive -O2.
$(O)/workloads/%: tests/workloads/%.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -O1 -g -o $@ $< -lm

# Frame pointers or none, and no sibling calls so every level keeps its
# frame: NAME-fp and NAME-nofp from NAME.c (the known call chain; stacks too
# deep to unwind completely), and the fork-storm workload, which its test
# unwinds both ways, with frame pointers.
WL_FP := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls
WL_NOFP := -fomit-frame-pointer -fno-optimize-sibling-calls
$(O)/workloads/%-fp: tests/workloads/%.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -O1 -g $(WL_FP) -o $@ $<

$(O)/workloads/%-nofp: tests/workloads/%.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -O1 -g $(WL_NOFP) -o $@ $<

$(O)/workloads/forkstorm: tests/workloads/forkstorm.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -O1 -g $(WL_FP) -o $@ $<

# The C++ workload: -fwhole-program makes every function local, so GCC
# clones some (.constprop); frame pointers for -g, CFI with personality and
# LSDA for --call-graph dwarf.
CXX ?= g++
$(O)/workloads/cxx: tests/workloads/cxx.cpp
	@mkdir -p $(dir $@)
	$(Q)$(CXX) -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fwhole-program -o $@ $<

build-tests: $(O)/cgperf-agent $(O)/cgperf-exporter $(UNIT_BIN) $(WORKLOAD_BIN) $(TOOL_BIN)

# The exporter and the agent together on this host; RUN_DIR holds the store,
# the agent id and the spool; RUN_LISTEN is the exporter's address.
RUN_DIR ?= run-data
RUN_LISTEN ?= 127.0.0.1:9464
run: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)O=$(O) RUN_DIR=$(RUN_DIR) RUN_LISTEN=$(RUN_LISTEN) packaging/run-local.sh

run-stat: deps
	$(Q)$(MAKE) --no-print-directory all
	$(O)/cgperf-agent stat -a -I 1000 $(RUN_ARGS)

test: deps
	$(Q)$(MAKE) --no-print-directory build-tests
	$(Q)BUILD=$(O) tests/run.sh

check: test

check-asan:
	$(Q)$(MAKE) --no-print-directory O=build-asan SAN=1 test

bench: deps
	$(Q)$(MAKE) --no-print-directory build-tests
	$(Q)BUILD=$(O) bench/run.sh

# libFuzzer targets need clang (clang, libclang-rt-14-dev). A seed corpus is
# written by the same source built as a plain program; crashes land in
# $(O)/fuzz/ as crash-* files.
FUZZ_CC ?= clang
FUZZ_TIME ?= 20
FUZZ_FLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined
FUZZ_WIRE_SRC := tests/fuzz/fuzz_wire.c $(wildcard wire/*.c) lib/hist.c lib/utf8.c lib/gzip.c lib/hashmap.c \
	$(PROTO_C)

$(O)/fuzz/fuzz_wire: $(FUZZ_WIRE_SRC) wire/wire.h lib/hist.h $(PROTO_H)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $@")
	$(Q)$(FUZZ_CC) $(CPPFLAGS) -std=gnu11 $(WARNFLAGS) $(FUZZ_FLAGS) -o $@ $(FUZZ_WIRE_SRC) -lprotobuf-c -lz

$(O)/fuzz/fuzz_wire-seeds: $(FUZZ_WIRE_SRC) wire/wire.h lib/hist.h $(PROTO_H)
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(CPPFLAGS) -std=gnu11 $(WARNFLAGS) -g -O1 -DFUZZ_WIRE_SEEDS -o $@ $(FUZZ_WIRE_SRC) -lprotobuf-c -lz

# What the exporter does with a decoded batch (totals, /metrics text,
# stack renderers); the store is linked for its helpers, not driven.
FUZZ_INGEST_SRC := tests/fuzz/fuzz_ingest.c $(wildcard wire/*.c) lib/hist.c lib/utf8.c lib/json.c \
	lib/prom.c lib/gzip.c lib/grow.c $(PROTO_C) exporter/totals.c exporter/totals_expo.c exporter/page.c \
	$(wildcard exporter/render/*.c) $(wildcard exporter/store/*.c) lib/httpc.c lib/curlapi.c lib/dynlib.c lib/strv.c lib/hashmap.c lib/clock.c
$(O)/fuzz/fuzz_ingest: $(FUZZ_INGEST_SRC) $(wildcard exporter/*.h exporter/*/*.h) wire/wire.h lib/hist.h $(PROTO_H)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $@")
	$(Q)$(FUZZ_CC) $(CPPFLAGS) -std=gnu11 $(WARNFLAGS) $(FUZZ_FLAGS) -o $@ $(FUZZ_INGEST_SRC) \
		-lsqlite3 -lprotobuf-c -lcurl -lz -lm

# The .eh_frame scan of the DWARF unwinder (personality and LSDA words).
# The unwinder's and the symbol tables' sources (each split in a few files).
# lib/fusemnt and what it uses, for the targets that open files in a root.
FUZZ_FUSEMNT_SRC := lib/fusemnt.c lib/mountinfo.c lib/strv.c
FUZZ_UNWIND_SRC := $(wildcard agent/stacks/unwind*.c) agent/symbols/dso.c agent/symbols/elfobj.c lib/fdio.c lib/rootfs.c $(FUZZ_FUSEMNT_SRC) lib/grow.c
FUZZ_SYMTAB_LIB_SRC := $(wildcard agent/symbols/symtab*.c) agent/symbols/dso.c agent/symbols/elfobj.c lib/fdio.c \
	agent/symbols/symcache.c lib/rootfs.c $(FUZZ_FUSEMNT_SRC) lib/grow.c
FUZZ_CFI_SRC := tests/fuzz/fuzz_cfi.c $(FUZZ_UNWIND_SRC)
$(O)/fuzz/fuzz_cfi: $(FUZZ_CFI_SRC) agent/stacks/unwind.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $@")
	$(Q)$(FUZZ_CC) $(CPPFLAGS) -std=gnu11 $(WARNFLAGS) $(FUZZ_FLAGS) -o $@ $(FUZZ_CFI_SRC) \
		-lelf -lunwind-x86_64 -lunwind

# Parsers of files a container may hand the agent, and the YAML config:
# ELF symbols (and symtab's .eh_frame_hdr), USDT notes, the unwinder's
# .eh_frame_hdr load, config_parse(), JIT perf maps (perfmap). Seeds and a
# short run of each:
# tests/integration/fuzz_parsers.sh.
FUZZ_SYMTAB_SRC := tests/fuzz/fuzz_symtab.c $(FUZZ_SYMTAB_LIB_SRC)
FUZZ_USDT_SRC := tests/fuzz/fuzz_usdt.c agent/perf/usdt.c agent/symbols/dso.c agent/symbols/elfobj.c lib/fdio.c lib/rootfs.c $(FUZZ_FUSEMNT_SRC) lib/grow.c
FUZZ_EHHDR_SRC := tests/fuzz/fuzz_ehhdr.c $(FUZZ_UNWIND_SRC)
FUZZ_CONFIG_SRC := tests/fuzz/fuzz_config.c agent/cmd/config.c agent/cmd/config_glob.c agent/perf/events.c agent/symbols/demangle.c agent/stacks/fold.c \
	cgroup/identity.c lib/suggest.c lib/units.c lib/ydoc.c agent/perf/probe_spec.c agent/perf/usdt.c \
	agent/symbols/dso.c agent/symbols/elfobj.c lib/fdio.c lib/rootfs.c $(FUZZ_FUSEMNT_SRC) lib/hashmap.c lib/grow.c lib/slurp.c \
	agent/cmd/config_identity.c
FUZZ_PERFMAP_SRC := tests/fuzz/fuzz_perfmap.c agent/symbols/perfmap.c lib/rootfs.c $(FUZZ_FUSEMNT_SRC) lib/grow.c
FUZZ_RUNTIME_SRC := tests/fuzz/fuzz_runtime.c cgroup/runtime.c cgroup/runtime_engine.c cgroup/runtime_oci.c \
	cgroup/runtime_systemd.c cgroup/runtime_kubelet.c cgroup/identity.c lib/rootfs.c $(FUZZ_FUSEMNT_SRC) lib/slurp.c \
	lib/utf8.c lib/grow.c lib/clock.c lib/curlapi.c lib/dynlib.c
FUZZ_PARSERS := $(addprefix $(O)/fuzz/,fuzz_symtab fuzz_usdt fuzz_ehhdr fuzz_config fuzz_perfmap fuzz_runtime)

$(O)/fuzz/fuzz_symtab: $(FUZZ_SYMTAB_SRC) agent/symbols/symtab.h agent/symbols/symcache.h tests/fuzz/fuzz_file.h
$(O)/fuzz/fuzz_symtab: FUZZ_SRC := $(FUZZ_SYMTAB_SRC)
$(O)/fuzz/fuzz_symtab: FUZZ_LIBS := -ldw -lelf -lz
$(O)/fuzz/fuzz_usdt: $(FUZZ_USDT_SRC) agent/perf/usdt.h tests/fuzz/fuzz_file.h
$(O)/fuzz/fuzz_usdt: FUZZ_SRC := $(FUZZ_USDT_SRC)
$(O)/fuzz/fuzz_usdt: FUZZ_LIBS := -lelf
$(O)/fuzz/fuzz_ehhdr: $(FUZZ_EHHDR_SRC) agent/stacks/unwind.h tests/fuzz/fuzz_file.h
$(O)/fuzz/fuzz_ehhdr: FUZZ_SRC := $(FUZZ_EHHDR_SRC)
$(O)/fuzz/fuzz_ehhdr: FUZZ_LIBS := -lelf -lunwind-x86_64 -lunwind
$(O)/fuzz/fuzz_config: $(FUZZ_CONFIG_SRC) agent/cmd/config.h agent/perf/events.h cgroup/identity.h lib/strv.h lib/suggest.h lib/units.h lib/ydoc.h
$(O)/fuzz/fuzz_config: FUZZ_SRC := $(FUZZ_CONFIG_SRC)
$(O)/fuzz/fuzz_config: FUZZ_LIBS := -lyaml $(TRACEFS_LIBS) -liberty -lelf
$(O)/fuzz/fuzz_perfmap: $(FUZZ_PERFMAP_SRC) agent/symbols/perfmap.h lib/rootfs.h tests/fuzz/fuzz_file.h
$(O)/fuzz/fuzz_perfmap: FUZZ_SRC := $(FUZZ_PERFMAP_SRC)
$(O)/fuzz/fuzz_perfmap: FUZZ_LIBS :=
$(O)/fuzz/fuzz_runtime: $(FUZZ_RUNTIME_SRC) cgroup/runtime.h cgroup/runtime_internal.h cgroup/identity.h
$(O)/fuzz/fuzz_runtime: FUZZ_SRC := $(FUZZ_RUNTIME_SRC)
$(O)/fuzz/fuzz_runtime: FUZZ_LIBS := -ljson-c

$(FUZZ_PARSERS):
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $@")
	$(Q)$(FUZZ_CC) $(CPPFLAGS) -std=gnu11 $(WARNFLAGS) $(FUZZ_FLAGS) -o $@ $(FUZZ_SRC) $(FUZZ_LIBS)

fuzz-parsers: $(FUZZ_PARSERS) $(O)/workloads/sdtprobe
	$(Q)BUILD=$(O) FUZZ_PARSERS_TIME=$(FUZZ_TIME) tests/integration/fuzz_parsers.sh

fuzz: $(O)/fuzz/fuzz_wire $(O)/fuzz/fuzz_wire-seeds $(O)/fuzz/fuzz_ingest $(O)/fuzz/fuzz_cfi fuzz-parsers
	@mkdir -p $(O)/fuzz/corpus/wire
	$(Q)$(O)/fuzz/fuzz_wire-seeds $(O)/fuzz/corpus/wire
	$(Q)$(O)/fuzz/fuzz_wire -max_total_time=$(FUZZ_TIME) -max_len=65536 -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$(O)/fuzz/ \
		$(O)/fuzz/corpus/wire
	$(Q)$(O)/fuzz/fuzz_ingest -max_total_time=$(FUZZ_TIME) -max_len=65536 -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$(O)/fuzz/ingest- \
		$(O)/fuzz/corpus/wire
	@mkdir -p $(O)/fuzz/corpus/cfi
	$(Q)for b in /bin/true $(O)/workloads/cxx; do [ -f $$b ] || continue; \
		objcopy -O binary --only-section=.eh_frame $$b $(O)/fuzz/cfi.tmp && \
		{ printf '\000'; cat $(O)/fuzz/cfi.tmp; } >$(O)/fuzz/corpus/cfi/$$(basename $$b); done
	$(Q)$(O)/fuzz/fuzz_cfi -max_total_time=$(FUZZ_TIME) -max_len=65536 -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$(O)/fuzz/cfi- \
		$(O)/fuzz/corpus/cfi


# Debian packages cgperf-agent and cgperf-exporter (dpkg-buildpackage on a
# copy of the tree with packaging/debian/ as debian/), into $(O)/deb/.
deb:
	$(Q)packaging/install-deps.sh --deb
	$(Q)packaging/build-deb.sh $(O)/deb

# OCI images of the agent and the exporter (podman, FROM scratch) from the
# packages of `make deb`, and the agent's seccomp profile, into $(O)/deb/image/.
image: deb
	$(Q)packaging/image/build-image.sh $(O)/deb

clean:
	rm -rf build build-asan

distclean: clean
	rm -rf $(RUN_DIR)

# (not the Debian build's copy of the tree under $(O)/deb)
-include $(shell find $(O) -path $(O)/deb -prune -o -name '*.d' -type f -print 2>/dev/null)
