# cgperf: container- and cgroup-aware profiling agent and exporter.
#
#   make            build cgperf-agent (into build/)
#   make run        install what is missing, build, run `cgperf-agent stat -a -I 1000`
#   make test       install what is missing, build, run every test
#   make check-asan the same suite under ASan+UBSan (into build-asan/)
#   make bench      benchmarks under bench/, printed figures
#
# Variables: O=DIR (object dir), SAN=1 (sanitizers), V=1 (verbose).

O ?= build
CC ?= gcc
ifeq ($(origin CC),default)
CC = gcc
endif

PKGS := libelf libdw libunwind libtraceevent libcurl libprotobuf-c libmicrohttpd sqlite3 yaml-0.1 zlib

CFLAGS ?= -O2 -g
WARNFLAGS := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wformat-security -Wvla \
	-Wmissing-prototypes -Wstrict-prototypes -Wno-unused-parameter
override CPPFLAGS += -I. -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64
override CFLAGS += -std=gnu11 $(WARNFLAGS) -fno-omit-frame-pointer
LDLIBS_AGENT := -ltraceevent -lelf -ldw -lunwind-x86_64 -lunwind -lz -lm

ifeq ($(SAN),1)
override CFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=undefined -O1
override LDFLAGS += -fsanitize=address,undefined
endif

CGROUP_SRC := $(wildcard cgroup/*.c)
AGENT_LIB_SRC := $(filter-out agent/main.c,$(wildcard agent/*.c))
LIB_OBJ := $(patsubst %.c,$(O)/%.o,$(CGROUP_SRC) $(AGENT_LIB_SRC))
AGENT_OBJ := $(O)/agent/main.o

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(O)/tests/%,$(UNIT_SRC))
WORKLOAD_SRC := $(wildcard tests/workloads/*.c)
WORKLOAD_BIN := $(patsubst tests/workloads/%.c,$(O)/workloads/%,$(filter-out tests/workloads/chain.c,$(WORKLOAD_SRC))) \
	$(O)/workloads/chain-fp $(O)/workloads/chain-nofp

ifneq ($(V),1)
Q := @
endif

.PHONY: all deps run test check check-asan bench clean format build-tests
all: $(O)/cgperf-agent

deps:
	$(Q)packaging/install-deps.sh

$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(O)/libcgperf.a: $(LIB_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(O)/cgperf-agent: $(AGENT_OBJ) $(O)/libcgperf.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_AGENT)

$(O)/tests/%: tests/unit/%.c $(O)/libcgperf.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(O)/libcgperf.a -lcmocka $(LDLIBS_AGENT)

# Workloads keep their own flags: a known call chain must survive -O2.
$(O)/workloads/%: tests/workloads/%.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -O1 -g -o $@ $< -lm

# The known call chain, with and without frame pointers; no sibling calls so
# every level keeps its frame.
$(O)/workloads/chain-fp: tests/workloads/chain.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls -o $@ $<

$(O)/workloads/chain-nofp: tests/workloads/chain.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -O1 -g -fomit-frame-pointer -fno-optimize-sibling-calls -o $@ $<

build-tests: $(O)/cgperf-agent $(UNIT_BIN) $(WORKLOAD_BIN)

run: deps
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

format:
	clang-format -i cgroup/*.[ch] agent/*.[ch] tests/unit/*.c

clean:
	rm -rf build build-asan

-include $(shell find $(O) -name '*.d' 2>/dev/null)
