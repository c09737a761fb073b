# pagetier: kernel module, daemon, preload library, BPF programs, tests.
#
#   make deps    install what the build and the tests need (Debian packages, PyPI)
#   make         build pagetier.ko for every target kernel, pagetierd, pagetierctl, ...
#   make test    unit tests (ASan+UBSan), then the VM suite on the 6.1 and 6.12 kernels
#   make demo    the end-to-end scenario in a VM, with a report
#   make lint    checkpatch.pl --strict on the module
#
# Everything is built under build/; the source tree stays clean.

SHELL      := /bin/bash
B          := build
CC         ?= cc
# Target kernels: the Debian 6.1 and 6.12 lines whose headers make deps installed.
KERNELS    ?= $(shell cat $(B)/kernels.txt 2>/dev/null)
WARN       := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-format-nonliteral -Wno-format-truncation
CFLAGS     ?= -O2 -g
USER_CFLAGS = -std=gnu11 $(WARN) -D_GNU_SOURCE -Ikmod/uapi -Idaemon $(CFLAGS)
SAN        := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

DAEMON_LIB_SRC := daemon/log.c daemon/config.c daemon/cgroup.c daemon/idle.c daemon/maps.c \
                  daemon/actuator.c daemon/context.c daemon/status.c daemon/kmod_client.c \
                  daemon/worker.c
DAEMON_HDR     := $(wildcard daemon/*.h) kmod/uapi/pagetier.h
UNIT_TESTS     := $(patsubst tests/unit/%.c,$(B)/unit/%,$(wildcard tests/unit/test_*.c))

.PHONY: all deps kmod daemon tools kselftest test unit vm-test demo lint clean help
all: kmod daemon tools kselftest

help:
	@sed -n '2,10p' Makefile | sed 's/^# \{0,1\}//'

deps:
	@scripts/deps.sh

$(B)/kernels.txt:
	@echo "no target kernels recorded: run 'make deps' first" >&2; exit 1

# --- pagetier.ko, once per target kernel (one output directory each) ------------------
kmod: $(B)/kernels.txt
	@set -e; for kv in $(KERNELS); do \
	  kdir=/lib/modules/$$kv/build; \
	  [ -d $$kdir ] || { echo "kmod: headers for $$kv missing ($$kdir): run make deps" >&2; exit 1; }; \
	  out=$(B)/kmod/$$kv; mkdir -p $$out; \
	  mkdir -p $$out/src; cp -r kmod/. $$out/src/; \
	  $(MAKE) -s -C $$kdir M=$(CURDIR)/$$out/src modules >$$out/build.log 2>&1 || \
	    { cat $$out/build.log >&2; echo "kmod: build for $$kv failed" >&2; exit 1; }; \
	  cp $$out/src/pagetier.ko $$out/pagetier.ko; echo "  KMOD  $$out/pagetier.ko"; \
	done

# --- userspace -------------------------------------------------------------------------
daemon: $(B)/bin/pagetierd $(B)/bin/pagetierctl

$(B)/bin/pagetierd: daemon/pagetierd.c $(DAEMON_LIB_SRC) $(DAEMON_HDR)
	@mkdir -p $(@D); echo "  CC    $@"
	@$(CC) $(USER_CFLAGS) -o $@ daemon/pagetierd.c $(DAEMON_LIB_SRC) -linih -lpthread

$(B)/bin/pagetierctl: daemon/pagetierctl.c $(DAEMON_LIB_SRC) $(DAEMON_HDR)
	@mkdir -p $(@D); echo "  CC    $@"
	@$(CC) $(USER_CFLAGS) -o $@ daemon/pagetierctl.c $(DAEMON_LIB_SRC) -linih -lpthread

tools: $(B)/bin/ptwork

$(B)/bin/ptwork: tests/e2e/ptwork.c
	@mkdir -p $(@D); echo "  CC    $@"
	@$(CC) $(USER_CFLAGS) -o $@ $<

kselftest:
	@$(MAKE) -s -C tests/kselftest O=$(CURDIR)/$(B)/kselftest

# --- tests -----------------------------------------------------------------------------
$(B)/unit/%: tests/unit/%.c $(DAEMON_LIB_SRC) $(DAEMON_HDR)
	@mkdir -p $(@D); echo "  CC    $@ (asan,ubsan)"
	@$(CC) $(USER_CFLAGS) $(SAN) -o $@ $< $(DAEMON_LIB_SRC) -linih -lcmocka -lpthread

unit: $(UNIT_TESTS)
	@set -e; fail=0; for t in $(UNIT_TESTS); do \
	  echo "== $$t"; \
	  ( cd tests/unit && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(CURDIR)/$$t ) || fail=1; \
	done; [ $$fail = 0 ] || { echo "unit tests failed" >&2; exit 1; }

vm-test: all
	@tests/vm/run-suite.sh $(KERNELS)

test: deps
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory vm-test

demo: deps
	@$(MAKE) --no-print-directory all
	@tests/vm/demo.sh $(lastword $(KERNELS))

lint:
	@perl $(B)/linux-src/scripts/checkpatch.pl --no-tree --strict --terse -f kmod/*.c kmod/*.h kmod/uapi/*.h

clean:
	rm -rf $(B)/bin $(B)/unit $(B)/kmod $(B)/kselftest $(B)/vm
