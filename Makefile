# pagetier: kernel module, daemon, preload library, BPF programs, tests.
#
#   make deps    install what the build and the tests need (Debian packages, PyPI)
#   make         build pagetier.ko for every target kernel, pagetierd, pagetierctl, ...
#   make test    unit tests (ASan+UBSan), then the VM suite on the 6.1 and 6.12 kernels
#   make test-debug  the VM suite and fault injection on a KASAN/lockdep/kmemleak 6.12 kernel
#   make demo    the end-to-end scenario in a VM, with a report
#   make bench-density  the density benchmark (bench/density/README.md; hours: QUICK=1)
#   make bench-scale    pagetierd at 10..3,000 containers (bench/scale/README.md; hours: QUICK=1)
#   make lint    checkpatch.pl --strict on the module
#   make install the daemon, pagetierctl, libpagetier.so, systemd unit, man pages (DESTDIR=...)
#
# Everything is built under build/; the source tree stays clean.

SHELL      := /bin/bash
B          := build
CC         ?= cc
# Target kernels: the Debian 6.1 and 6.12 lines whose headers make deps installed.
KERNELS    ?= $(shell cat $(B)/kernels.txt 2>/dev/null)
WARN       := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-format-nonliteral -Wno-format-truncation
CFLAGS     ?= -O2 -g
# include/pagetier: the ABIs userspace shares (daemon, libpreload, bpf, tests).
USER_CFLAGS = -std=gnu11 $(WARN) -D_GNU_SOURCE -Iinclude -Ikmod/uapi -Idaemon $(CFLAGS)
SAN        := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

# Every daemon source but the two programs' mains, the BPF loader (which needs the
# generated skeleton), the metrics HTTP server (libmicrohttpd) and the NVMe reader (libnvme)
# is library code, archived twice: plain and sanitized for unit tests.
DAEMON_MAIN_SRC := daemon/pagetierd.c daemon/pagetierctl.c daemon/bpf_loader.c daemon/metrics_http.c \
		   daemon/nvme.c
DAEMON_LIB_SRC  := $(filter-out $(DAEMON_MAIN_SRC),$(wildcard daemon/*.c))
DAEMON_HDR      := $(wildcard daemon/*.h include/pagetier/*.h) kmod/uapi/pagetier.h
LIBPTD          := $(B)/obj/libptd.a
LIBPTD_SAN      := $(B)/obj-san/libptd.a
USER_LIBS       := -linih -luring -lpthread
UNIT_TESTS     := $(patsubst tests/unit/%.c,$(B)/unit/%,$(wildcard tests/unit/test_*.c))
# Man pages: docs/man/NAME.SECTION.scd -> build/man/manSECTION/NAME.SECTION (scdoc).
MAN_SRC        := $(wildcard docs/man/*.scd)
MAN_PAGES      := $(foreach s,$(MAN_SRC),$(B)/man/man$(subst .,,$(suffix $(basename $(s))))/$(notdir $(basename $(s))))

.PHONY: all deps kmod daemon tools kselftest bpf libpreload man test test-debug unit unit-packaging host-test vm-test faults demo lint install install-dkms fuzz clean help bench-density density-smoke bench-scale bench-scale-micro bench-scale-reader bench-scale-readers scale-smoke
all: kmod bpf libpreload daemon tools kselftest man

help:
	@sed -n '2,12p' Makefile | sed 's/^# \{0,1\}//'

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

$(B)/obj/%.o: daemon/%.c $(DAEMON_HDR)
	@mkdir -p $(@D); echo "  CC    $@"
	@$(CC) $(USER_CFLAGS) -c -o $@ $<

$(B)/obj-san/%.o: daemon/%.c $(DAEMON_HDR)
	@mkdir -p $(@D); echo "  CC    $@ (asan,ubsan)"
	@$(CC) $(USER_CFLAGS) $(SAN) -c -o $@ $<

$(LIBPTD): $(patsubst daemon/%.c,$(B)/obj/%.o,$(DAEMON_LIB_SRC))
	@rm -f $@; ar rcs $@ $^

$(LIBPTD_SAN): $(patsubst daemon/%.c,$(B)/obj-san/%.o,$(DAEMON_LIB_SRC))
	@rm -f $@; ar rcs $@ $^

# pagetierd embeds the BPF programs as a libbpf skeleton.
$(B)/bin/pagetierd: daemon/pagetierd.c daemon/bpf_loader.c daemon/metrics_http.c daemon/nvme.c $(B)/bpf/pagetier.skel.h $(LIBPTD) $(DAEMON_HDR)
	@mkdir -p $(@D); echo "  CC    $@"
	@$(CC) $(USER_CFLAGS) -I$(B)/bpf -o $@ daemon/pagetierd.c daemon/bpf_loader.c \
		daemon/metrics_http.c daemon/nvme.c $(LIBPTD) -lbpf -lelf -lz -lmicrohttpd -lnvme \
		$(USER_LIBS)

$(B)/bin/pagetierctl: daemon/pagetierctl.c $(LIBPTD) $(DAEMON_HDR)
	@mkdir -p $(@D); echo "  CC    $@"
	@$(CC) $(USER_CFLAGS) -o $@ daemon/pagetierctl.c $(LIBPTD) $(USER_LIBS)

# --- BPF programs (CO-RE object + skeleton) and the preload library ---------------------
bpf: $(B)/bpf/pagetier.skel.h

$(B)/bpf/pagetier.skel.h: bpf/pagetier.bpf.c include/pagetier/bpf_events.h bpf/vmlinux.h bpf/Makefile
	@$(MAKE) -s -C bpf O=$(CURDIR)/$(B)/bpf

libpreload:
	@$(MAKE) -s -C libpreload O=$(CURDIR)/$(B)/lib

tools: $(B)/bin/ptwork $(B)/pgdata.tar.zst

# The PostgreSQL data directory the e2e scenarios and benchmarks unpack in their guests.
$(B)/pgdata.tar.zst: tests/e2e/pg_template.sh
	@tests/e2e/pg_template.sh $(CURDIR)/$@

$(B)/bin/ptwork: tests/e2e/ptwork.c
	@mkdir -p $(@D); echo "  CC    $@"
	@$(CC) $(USER_CFLAGS) -o $@ $<

kselftest:
	@$(MAKE) -s -C tests/kselftest O=$(CURDIR)/$(B)/kselftest

# --- man pages ---------------------------------------------------------------------------
# The date in a page is its source's last commit (reproducible), or its mtime if uncommitted.
man: $(MAN_PAGES)

define scdoc_rule
$(B)/man/man$(1)/%.$(1): docs/man/%.$(1).scd
	@mkdir -p $$(@D); echo "  MAN   $$@"
	@t=$$$$(git log -1 --format=%ct -- $$< 2>/dev/null); \
	 SOURCE_DATE_EPOCH=$$$${t:-$$$$(stat -c %Y $$<)} scdoc <$$< >$$@.tmp && mv $$@.tmp $$@ || \
	 { rm -f $$@.tmp; echo "man: scdoc failed on $$< (is scdoc installed? make deps)" >&2; exit 1; }
endef
$(foreach sec,5 8,$(eval $(call scdoc_rule,$(sec))))

# --- tests -----------------------------------------------------------------------------
$(B)/unit/%: tests/unit/%.c $(LIBPTD_SAN) $(DAEMON_HDR)
	@mkdir -p $(@D); echo "  CC    $@ (asan,ubsan)"
	@$(CC) $(USER_CFLAGS) $(SAN) -o $@ $< $(LIBPTD_SAN) -lcmocka $(USER_LIBS)

# The man pages against the code (keys, defaults, options: tests/man/check_man.py).
$(B)/man-test/config_default: tests/man/config_default.c $(LIBPTD) $(DAEMON_HDR)
	@mkdir -p $(@D); echo "  CC    $@"
	@$(CC) $(USER_CFLAGS) -o $@ $< $(LIBPTD) $(USER_LIBS)

# What make unit runs, besides the daemon and the man pages (make test builds it first).
UNIT_BUILD := $(UNIT_TESTS) $(B)/man-test/config_default $(B)/bench/density/loadgen
unit: $(UNIT_BUILD) daemon man
	@set -e; fail=0; for t in $(UNIT_TESTS); do \
	  echo "== $$t"; \
	  ( cd tests/unit && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    timeout -k 5 300 $(CURDIR)/$$t ) || fail=1; \
	done; \
	echo "== bench/density/test_density.py"; python3 bench/density/test_density.py || fail=1; \
	echo "== bench/scale/test_scale.py"; python3 bench/scale/test_scale.py || fail=1; \
	echo "== bench/wake/test_host_cpu.py"; python3 bench/wake/test_host_cpu.py || fail=1; \
	echo "== tests/vm/test_console_crash.py"; python3 tests/vm/test_console_crash.py || fail=1; \
	echo "== tests/vm/test_kernel_log.sh"; tests/vm/test_kernel_log.sh || fail=1; \
	echo "== tests/man/check_man.py"; python3 tests/man/check_man.py --bin $(B)/bin \
	  --config-default $(B)/man-test/config_default || fail=1; \
	echo "== tests/metrics/check_scrape.py"; timeout -k 5 300 python3 tests/metrics/check_scrape.py \
	  --bin $(B)/bin --unit $(B)/unit/test_metrics || fail=1; \
	echo "== tests/kmod: stat columns and layers"; python3 tests/kmod/check_stat_columns.py && \
	  python3 tests/kmod/check_layers.py || fail=1; \
	$(MAKE) --no-print-directory unit-packaging || fail=1; \
	[ $$fail = 0 ] || { echo "unit tests failed" >&2; exit 1; }

# systemd-analyze verify on the unit, and the limits and sandboxing the daemon needs
# (offline: no running systemd needed).
# The Kubernetes manifest and its opt-in loop, offline (packaging/kubernetes/README.md).
unit-packaging: daemon man
	@rc=0; echo "== tests/packaging/verify_unit.sh"; tests/packaging/verify_unit.sh $(CURDIR)/$(B) || rc=1; \
	 echo "== tests/packaging/check_kubernetes.py"; \
	 python3 tests/packaging/check_kubernetes.py --bin $(B)/bin || rc=1; exit $$rc

# libFuzzer on the preload decoder (not part of make test: run it for as long as you like).
fuzz: $(B)/fuzz/fuzz_preload_decode
$(B)/fuzz/fuzz_preload_decode: tests/fuzz/fuzz_preload_decode.c daemon/preload_decode.c daemon/log.c $(DAEMON_HDR)
	@mkdir -p $(@D)/corpus; echo "  CC    $@ (libFuzzer, asan, ubsan)"
	@clang $(filter-out -Wno-format-truncation,$(USER_CFLAGS)) -fsanitize=fuzzer,address,undefined \
		-o $@ $< daemon/preload_decode.c daemon/log.c

# The harness's own guards against a silent hang, the VM suite, then fault injection (QEMU
# blkdebug under the tier): all run, any fails it.
vm-test: all
	@rc=0; tests/vm/harness_check.sh $(lastword $(KERNELS)) || rc=1; \
	 tests/vm/run-suite.sh $(KERNELS) || rc=1; \
	 tests/vm/faults/run.sh $(KERNELS) || rc=1; \
	 $(MAKE) --no-print-directory density-smoke || rc=1; exit $$rc

# The density benchmark's harness end to end (pagetier, N = 0 and 2, tiny data
# sets), so that it cannot rot; its figures are not a result.
density-smoke: all $(B)/bench/density/loadgen
	@echo "==== density benchmark: smoke run (harness only) ===="; \
	 SMOKE=1 bench/density/run.sh && \
	 python3 bench/density/report.py build/bench/density-smoke --check >/dev/null && \
	 echo "==== density smoke: ok"

bench-density: all $(B)/bench/density/loadgen
	@bench/density/run.sh

# The density benchmark's load clients (guest.py runs them in the guest: the critical
# service's open-loop client and the noise client), in C so that they cost the emulated
# CPUs a few seconds per window rather than a quarter of them.
$(B)/bench/density/loadgen: bench/density/loadgen.c
	@mkdir -p $(@D); echo "  CC    $@"
	@$(CC) $(USER_CFLAGS) -pthread -o $@ $< -lm

# The scale benchmark (bench/scale/README.md): its host part, the daemon's policy code over
# 300 to 3,000 synthetic contexts at native speed (a minute), and the VM runs (hours).
$(B)/bench/scale/micro: bench/scale/micro.c $(LIBPTD) $(DAEMON_HDR)
	@mkdir -p $(@D); echo "  CC    $@"
	@$(CC) $(USER_CFLAGS) -o $@ $< $(LIBPTD) $(USER_LIBS) -lm

bench-scale-micro: $(B)/bench/scale/micro
	@$(B)/bench/scale/micro

# A wake's file reader forked from a daemon of 8 to 180 MiB, against one from the readahead
# spawner (daemon/advise_spawner.h), at native speed (seconds; root for mlockall).
$(B)/bench/scale/reader_fork: bench/scale/reader_fork.c $(LIBPTD) $(DAEMON_HDR)
	@mkdir -p $(@D); echo "  CC    $@"
	@$(CC) $(USER_CFLAGS) -o $@ $< $(LIBPTD) $(USER_LIBS)

bench-scale-reader: $(B)/bench/scale/reader_fork
	@$(B)/bench/scale/reader_fork

# Reading N cgroups' files each tick: open/read/close, kept open (pread), one io_uring
# submission (liburing), on a real cgroup v2 tree (seconds; root).
$(B)/bench/scale/readers: bench/scale/readers.c
	@mkdir -p $(@D); echo "  CC    $@"
	@$(CC) $(USER_CFLAGS) -o $@ $< -luring

bench-scale-readers: $(B)/bench/scale/readers
	@bench/scale/readers.sh $(B)/bench/scale/readers

bench-scale: all $(B)/bench/scale/micro
	@bench/scale/run.sh

# Its harness end to end (N = 10, both scanners, short windows): not in make test yet.
scale-smoke: all $(B)/bench/scale/micro
	@SMOKE=1 bench/scale/run.sh && python3 bench/scale/report.py build/bench/scale-smoke --check

faults: all
	@tests/vm/faults/run.sh $(KERNELS)

# The module under the kernel's checkers (issue 12): a 6.12 kernel built from Debian's
# source with KASAN, lockdep, DEBUG_ATOMIC_SLEEP, kmemleak and fault injection
# (tests/vm/debug-kernel.sh, cached under build/debug-kernel: about 40 minutes the first
# time), then the kselftests, the module-heavy scenarios (tests/vm/guest-suite.sh:
# debug_e2es), the debug_faults scenario, a kmemleak scan and the blkdebug fault injection
# on it. Too long for make test: run it before every change to kmod/.
test-debug: deps all
	@set -e; kv=$$(tests/vm/debug-kernel.sh) || { echo "test-debug: the debug kernel did not build" >&2; exit 1; }; \
	 kv=$$(tail -n 1 <<<"$$kv"); [ -n "$$kv" ] || { echo "test-debug: no debug kernel release" >&2; exit 1; }; rc=0; \
	 PT_VM_TIMEOUT=$${PT_VM_TIMEOUT:-7200} PT_STEP_SCALE=$${PT_STEP_SCALE:-4} \
	   tests/vm/run-suite.sh $$kv || rc=1; \
	 PT_FAULTS_TIMEOUT=$${PT_FAULTS_TIMEOUT:-1200} tests/vm/faults/run.sh $$kv || rc=1; \
	 [ $$rc = 0 ] && echo "test-debug: green on $$kv" || { echo "test-debug: FAILED on $$kv" >&2; exit 1; }

# Host checks that need root and the running kernel: the BPF programs load, attach and
# filter by cgroup on the host's kernel too; real programs (python3, sqlite3, redis) give
# the same output under libpagetier.so, with and without a preload server; the DKMS
# package builds for every target kernel (in a temporary dkms tree, nothing loaded).
host-test: bpf libpreload $(B)/kernels.txt
	@rc=0; tests/preload/bpf_host.sh $(CURDIR)/$(B) || rc=1; \
	 echo "== tests/packaging/dkms_build.sh"; tests/packaging/dkms_build.sh $(CURDIR)/$(B) || rc=1; \
	 echo "== libpagetier.so on the host: real programs"; \
	 PT_STRICT=1 tests/preload/run.sh $(CURDIR)/$(B) || rc=1; exit $$rc

# What the tests run is built first, on every CPU (the tests themselves then run one at a
# time: the VM guests take both CPUs, and each unit test's output stays whole).
JOBS ?= $(shell nproc)
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(UNIT_BUILD)
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory host-test
	@$(MAKE) --no-print-directory vm-test

demo: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@tests/vm/demo.sh $(lastword $(KERNELS))

# Installs the userspace and the configuration examples (never over an existing config).
# The module is installed with DKMS (packaging/dkms.conf) for the kernels of the host:
# install-dkms puts its source in /usr/src/pagetier-VERSION; then, on the host,
# dkms add/build/install -m pagetier -v VERSION (tests/packaging/dkms_build.sh builds it).
DESTDIR ?=
DKMS_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"$$/\1/p' packaging/dkms.conf)
DKMS_DIR      = $(DESTDIR)/usr/src/pagetier-$(DKMS_VERSION)
install-dkms:
	install -D -m 0644 packaging/dkms.conf $(DKMS_DIR)/dkms.conf
	install -D -m 0644 -t $(DKMS_DIR)/kmod kmod/Kbuild kmod/Makefile $(wildcard kmod/*.c kmod/*.h)
	install -D -m 0644 -t $(DKMS_DIR)/kmod/uapi kmod/uapi/pagetier.h

install: daemon libpreload man install-dkms
	install -D -m 0755 $(B)/bin/pagetierd $(DESTDIR)/usr/sbin/pagetierd
	install -D -m 0755 $(B)/bin/pagetierctl $(DESTDIR)/usr/sbin/pagetierctl
	install -D -m 0644 $(B)/lib/libpagetier.so $(DESTDIR)/usr/lib/pagetier/libpagetier.so
	install -D -m 0755 packaging/kubernetes/pagetier-k8s-optin $(DESTDIR)/usr/lib/pagetier/pagetier-k8s-optin
	install -D -m 0644 packaging/pagetierd.service $(DESTDIR)/lib/systemd/system/pagetierd.service
	install -D -m 0644 -t $(DESTDIR)/usr/share/man/man5 $(filter $(B)/man/man5/%,$(MAN_PAGES))
	install -D -m 0644 -t $(DESTDIR)/usr/share/man/man8 $(filter $(B)/man/man8/%,$(MAN_PAGES))
	install -d -m 0755 $(DESTDIR)/etc/pagetier/containers.d
	[ -e $(DESTDIR)/etc/pagetier/pagetierd.conf ] || \
		install -m 0644 packaging/etc/pagetier/pagetierd.conf $(DESTDIR)/etc/pagetier/
	install -D -m 0644 packaging/etc/pagetier/containers.d/example.conf \
		$(DESTDIR)/usr/share/doc/pagetier/examples/containers.d/example.conf
	install -D -m 0644 packaging/etc/pagetier/pagetierd.conf \
		$(DESTDIR)/usr/share/doc/pagetier/examples/pagetierd.conf
	install -D -m 0644 README.md $(DESTDIR)/usr/share/doc/pagetier/README.md

lint:
	@perl $(B)/linux-src/scripts/checkpatch.pl --no-tree --strict --terse -f kmod/*.c kmod/*.h kmod/uapi/*.h

clean:
	rm -rf $(B)/bin $(B)/bpf $(B)/lib $(B)/obj $(B)/obj-san $(B)/unit $(B)/kmod $(B)/kselftest $(B)/vm \
		$(B)/man $(B)/man-test
