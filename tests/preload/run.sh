#!/bin/bash
# Host tests of libpagetier.so: real programs, unmodified, run three ways and their output
# compared:
#   plain        without the library
#   passthrough  LD_PRELOAD, no daemon listening (the library must be a pass-through)
#   daemon       LD_PRELOAD, registered with pt_testd (daemon/preload_server.c standalone),
#                which also asks for malloc_trim and wake signals while they run
# Workloads: lib_check (every wrapper's semantics, threads, fork), python3, lua5.4 (every
# object allocated through realloc), sqlite3, redis-server driven by redis-benchmark and redis-cli (loopback only, bounded). Also
# wake_check: the wake signal of a process that sleeps, from one allocation.
#
#   tests/preload/run.sh [BUILD_DIR]      (default: build/ of this tree)
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$ROOT/build}
B=$(mkdir -p "$B" && cd "$B" && pwd)
LIB=$B/lib/libpagetier.so
TESTD=$B/preload/pt_testd
LIBCHECK=$B/preload/lib_check
WAKECHECK=$B/preload/wake_check
SIGCHECK=$B/preload/signal_check
CFLAGS_T="-std=gnu11 -O2 -g -Wall -Wextra -Werror -Wshadow -D_GNU_SOURCE"
TMP=$(mktemp -d /tmp/pagetier-preload-XXXXXX)
PASS=0
FAIL=0
SKIP=0
TESTD_PID=
REDIS_PID=

cleanup() {
	[ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null
	[ -n "$TESTD_PID" ] && kill "$TESTD_PID" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

ok()   { echo "ok - $*"; PASS=$((PASS + 1)); }
nok()  { echo "not ok - $*"; FAIL=$((FAIL + 1)); }
skip() { echo "ok - # SKIP $*"; SKIP=$((SKIP + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else nok "$what"; fi; }

# --- build -------------------------------------------------------------------------------
cd "$ROOT" || exit 1
make -s -C libpreload O="$B/lib" || { echo "building libpagetier.so failed" >&2; exit 1; }
mkdir -p "$B/preload"
cc $CFLAGS_T -Wformat=2 -Wno-format-nonliteral -Iinclude -Idaemon -Ikmod/uapi -o "$TESTD" \
	tests/preload/testd.c daemon/preload_server.c daemon/preload_decode.c \
	daemon/preload_maps.c daemon/log.c ||
	{ echo "building pt_testd failed" >&2; exit 1; }
# -fno-builtin: the compiler must not fold malloc/free pairs away.
cc $CFLAGS_T -fno-builtin -pthread -o "$LIBCHECK" tests/preload/lib_check.c ||
	{ echo "building lib_check failed" >&2; exit 1; }
cc $CFLAGS_T -fno-builtin -o "$WAKECHECK" tests/preload/wake_check.c ||
	{ echo "building wake_check failed" >&2; exit 1; }
cc $CFLAGS_T -fno-builtin -pthread -o "$SIGCHECK" tests/preload/signal_check.c ||
	{ echo "building signal_check failed" >&2; exit 1; }

# --- modes -------------------------------------------------------------------------------
# with_mode MODE CMD...: runs CMD with the environment of MODE. A run that deadlocks (the
# library under fork and threads, say) is killed, with its process group, after
# PT_RUN_LIMIT seconds and fails with status 124: each takes a few seconds. Its own process
# group (timeout's) is never the terminal's: stdin is /dev/null.
PT_RUN_LIMIT=${PT_RUN_LIMIT:-180}
with_mode() {
	local mode=$1; shift
	case $mode in
	plain)       timeout -k 5 "$PT_RUN_LIMIT" env -u LD_PRELOAD "$@" </dev/null ;;
	passthrough) timeout -k 5 "$PT_RUN_LIMIT" env LD_PRELOAD="$LIB" \
			PAGETIER_PRELOAD_SOCK="$TMP/nobody-listens.sock" "$@" </dev/null ;;
	daemon)      timeout -k 5 "$PT_RUN_LIMIT" env LD_PRELOAD="$LIB" \
			PAGETIER_PRELOAD_SOCK="$TMP/d.sock" "$@" </dev/null ;;
	esac
}

start_testd() {	# [TRIM_EVERY_MS]
	rm -f "$TMP/report" "$TMP/wakes"
	"$TESTD" --sock "$TMP/d.sock" --report "$TMP/report" --trim-every "${1:-200}" --wake-every 300 \
		--check-maps --wake-log "$TMP/wakes" 2>"$TMP/testd.err" &
	TESTD_PID=$!
	for _ in $(seq 50); do [ -S "$TMP/d.sock" ] && return 0; sleep 0.1; done
	return 1
}

stop_testd() {
	sleep 0.2	# one more drain
	kill -TERM "$TESTD_PID"; wait "$TESTD_PID"; TESTD_PID=
}

val() { awk -v k="$1" '$1 == k { print $2 }' "$TMP/report"; }

# Checks what the test daemon saw for workload $1.
check_report() {
	local name=$1 rej=0 k
	for k in size type flags range stalled; do rej=$((rej + $(val rejected_$k))); done
	echo "# $name daemon: peers=$(val peers_registered) records=$(val records)" \
	     "alloc=$(val rec_alloc) free=$(val rec_free) mmap=$(val rec_mmap)" \
	     "munmap=$(val rec_munmap) mremap=$(val rec_mremap) heartbeat=$(val rec_heartbeat)" \
	     "wakes=$(val wake_heartbeats)/$(val wake_requests) trims=$(val trims)/$(val trim_requests)" \
	     "dropped=$(val producer_dropped) rejected=$rej foreign=$(val rejected_foreign)" \
	     "bad_hellos=$(val bad_hellos)" \
	     "outside_maps=$(val outside_maps)/$(val maps_checked)"
	check "$name: registered with the daemon" [ "$(val peers_registered)" -ge 1 ]
	check "$name: records received" [ "$(val records)" -gt 0 ]
	check "$name: no record rejected by the decoder" [ "$rej" -eq 0 ]
}

timed() {	# timed OUTFILE CMD...: runs, stores stdout, prints wall seconds
	local out=$1; shift
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >"$out" 2>"$out.err"
	local rc=$?
	t1=$(date +%s.%N)
	echo "$rc $(echo "$t1 - $t0" | bc)"
}

# run_workload NAME CMD...: the three modes, outputs compared.
run_workload() {
	local name=$1; shift
	local mode r
	for mode in plain passthrough daemon; do
		[ $mode = daemon ] && { start_testd || { nok "$name: pt_testd did not start"; return; }; }
		r=$(timed "$TMP/$name.$mode.out" with_mode $mode "$@")
		[ $mode = daemon ] && stop_testd
		echo "# $name $mode: exit ${r% *}, ${r#* } s"
		check "$name $mode: exit status 0" [ "${r% *}" = 0 ]
		if [ $mode != plain ]; then
			check "$name $mode: output identical to plain" \
				cmp -s "$TMP/$name.plain.out" "$TMP/$name.$mode.out"
		fi
		[ $mode = daemon ] && check_report "$name"
	done
}

# --- lib_check: semantics of every wrapper -----------------------------------------------
run_workload lib_check "$LIBCHECK"
tail -1 "$TMP/lib_check.daemon.out" | sed 's/^/# lib_check daemon: /'
check "lib_check: parent and forked child both registered" [ "$(val peers_registered)" -ge 2 ]
# A big-alloc, mmap or mremap record whose memory is gone by the time the daemon reads it
# cannot be verified as the peer's own memory: it is counted as rejected_foreign instead.
# lib_check frees and unmaps at once, so many of its records end up there.
check "lib_check: big allocations, mmap, mremap reported (>= 100 each)" \
	[ $(($(val big_allocs) + $(val rec_mmap) + $(val rec_mremap) + $(val rejected_foreign))) \
	  -ge 300 ]
check "lib_check: munmap and big frees reported (>= 100 each)" \
	[ "$(val rec_munmap)" -ge 100 -a "$(val big_frees)" -ge 100 ]
check "lib_check: trim requests served" [ "$(val trims)" -ge 1 ]
check "lib_check: wake requests answered" [ "$(val wake_heartbeats)" -ge 1 ]

# --- wake_check: one allocation of a sleeping process answers the daemon --------------
# The daemon asks every 300 ms; the process sleeps 1.5 s, then allocates once. The library's
# fast path reads nothing of the daemon's: the answer comes from the slow path that its
# request thread forced by zeroing the budgets.
if start_testd; then
	with_mode daemon "$WAKECHECK" >"$TMP/wake_check.out" 2>"$TMP/wake_check.err"
	rc=$?
	stop_testd
	wc_val() { awk -v k="$1" '$1 == k { print $2 }' "$TMP/wake_check.out"; }
	quiet=$(wc_val quiet_from); at=$(wc_val malloc_at)
	check "wake_check: exit status 0" [ "$rc" = 0 ]
	check "wake_check: no request thread while it allocates at full speed" \
		[ "$(wc_val heavy_thread)" = 0 ]
	check "wake_check: the request thread (pagetier-req) runs once it calms down" \
		[ "$(wc_val req_thread)" = 1 ]
	if [ -n "$quiet" ] && [ -n "$at" ]; then
		# Wakes logged while it slept (after the last one its busy phase may have answered)
		# and within 250 ms of its one allocation.
		slept=$(awk -v q="$quiet" -v a="$at" '$1 > q + 100000000 && $1 < a' "$TMP/wakes" | wc -l)
		answered=$(awk -v a="$at" '$1 >= a && $1 <= a + 250000000 { print ($1 - a) / 1e6 }' \
			"$TMP/wakes" | head -1)
		echo "# wake_check: wakes while asleep: $slept; answer ${answered:-none} ms after the allocation"
		check "wake_check: no wake signal while the process sleeps" [ "$slept" = 0 ]
		check "wake_check: its one allocation answered within 250 ms" [ -n "$answered" ]
	else
		nok "wake_check: printed no timestamps"
	fi
else
	nok "wake_check: pt_testd did not start"
fi

# --- signal_check: the library in a signal handler, and across daemon restarts -------
# A timer's handler calls mmap/munmap while the main thread is in malloc, the daemon asking
# for a trim every few ms: a wrapper that trimmed there would deadlock on the arena lock.
if start_testd 1; then
	with_mode daemon "$SIGCHECK" signals 3 >"$TMP/sig.out" 2>"$TMP/sig.err"
	rc=$?
	stop_testd
	echo "# signal_check signals: exit $rc, $(tr '\n' ' ' <"$TMP/sig.out")trims $(val trims)/$(val trim_requests)"
	check "signal_check: mmap/munmap in a signal handler during malloc, trims requested: no deadlock" \
		[ "$rc" = 0 ]
	check "signal_check: the handler ran (>= 1000 signals) and trims were served" \
		[ "$(awk '$1 == "signals" { print $2 }' "$TMP/sig.out")" -ge 1000 -a "$(val trims)" -ge 1 ]
else
	nok "signal_check: pt_testd did not start"
fi
# The daemon restarts three times under a process that lives on: it registers again each
# time (retrying every 100 ms here), and keeps at most two rings mapped.
regs=0
if start_testd; then
	PAGETIER_PRELOAD_RETRY_MS=100 with_mode daemon "$SIGCHECK" rings 9 >"$TMP/rings.out" 2>&1 &
	rings_pid=$!
	for _ in 1 2 3; do
		sleep 2
		stop_testd
		[ "$(val peers_registered)" -ge 1 ] && regs=$((regs + 1))
		start_testd || break
	done
	wait "$rings_pid"; rc=$?
	stop_testd
	[ "$(val peers_registered)" -ge 1 ] && regs=$((regs + 1))
	max=$(awk '$1 == "max_rings" { print $2 }' "$TMP/rings.out")
	echo "# signal_check rings: exit $rc, registered with $regs of 4 daemons, at most ${max:-?} rings mapped"
	check "signal_check: registered again after each daemon restart" [ "$regs" = 4 ]
	check "signal_check: old rings unmapped on re-registration (at most 2 mapped)" \
		[ "$rc" = 0 -a "${max:-99}" -le 2 ]
else
	nok "signal_check: pt_testd did not start"
fi

# --- python3 -----------------------------------------------------------------------------
PY=/usr/bin/python3
[ -x $PY ] || PY=$(command -v python3)
run_workload python "$PY" "$ROOT/tests/preload/workload.py"

# --- lua: every object through realloc/free ------------------------------------------
if command -v lua5.4 >/dev/null; then
	run_workload lua lua5.4 "$ROOT/tests/preload/binary_trees.lua" 14
else
	skip "lua5.4 not installed (apt-get install lua5.4)"
fi

# --- sqlite3 -----------------------------------------------------------------------------
sqlite_run() { rm -f "$TMP/db"; sqlite3 "$TMP/db" <"$ROOT/tests/preload/workload.sql"; }
if command -v sqlite3 >/dev/null; then
	export -f sqlite_run; export TMP ROOT
	run_workload sqlite3 bash -c sqlite_run
else
	skip "sqlite3 not installed (apt-get install sqlite3)"
fi

# --- redis -------------------------------------------------------------------------------
# redis_run: a server on a loopback port, a bounded redis-benchmark, then fixed commands whose
# replies are the output, a BGSAVE (a fork of the server), shutdown. Every program of it runs
# in the mode's environment (with_mode wraps this whole function).
redis_run() {
	local port=$((20000 + RANDOM % 20000)) i
	local dir; dir=$(mktemp -d "$TMP/redis.XXXX")
	redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
		--dbfilename dump.rdb --daemonize no --loglevel warning >"$dir/log" 2>&1 &
	local pid=$!
	for i in $(seq 50); do redis-cli -p $port PING 2>/dev/null | grep -q PONG && break; sleep 0.1; done
	timeout 120 redis-benchmark -h 127.0.0.1 -p $port -n 20000 -c 8 -q \
		-t set,get,incr,lpush,lpop,lrange_100 >"$TMP/redis-bench.$$" 2>&1 ||
		echo "redis-benchmark failed"
	redis-cli -p $port <"$ROOT/tests/preload/redis.cmds"
	redis-cli -p $port BGSAVE >/dev/null
	for i in $(seq 100); do
		redis-cli -p $port INFO persistence | grep -q 'rdb_bgsave_in_progress:0' && break
		sleep 0.1
	done
	redis-cli -p $port INFO persistence | grep -o 'rdb_last_bgsave_status:ok'
	redis-cli -p $port SHUTDOWN NOSAVE >/dev/null 2>&1
	wait $pid
	sed 's/^/# redis-benchmark: /' "$TMP/redis-bench.$$" | tr '\r' '\n' | grep -v '^# redis-benchmark: *$' | grep 'requests per second' >&2
}
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	export -f redis_run; export TMP ROOT
	run_workload redis bash -c redis_run
	for m in plain passthrough daemon; do
		sed "s/^/# $m /" "$TMP/redis.$m.out.err" | tr -s ' ' | head -6
	done
	check "redis: BGSAVE (a forked server child) worked under the library" \
		grep -q 'rdb_last_bgsave_status:ok' "$TMP/redis.daemon.out"
else
	skip "redis not installed (apt-get install redis-server)"
fi

echo "$PASS passed, $FAIL failed, $SKIP skipped"
# make test sets PT_STRICT: make deps installed every program, so a skip there is a failure.
[ "$FAIL" = 0 ] && { [ -z "${PT_STRICT:-}" ] || [ "$SKIP" = 0 ]; }
