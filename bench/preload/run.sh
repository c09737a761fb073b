#!/bin/bash
# libpagetier.so's overhead on malloc-heavy programs (bench/preload/README.md):
#   malloc_bench  nothing but malloc and free, ~28 ns an operation: the worst case
#   lua           lua5.4 running binary-trees (tests/preload/binary_trees.lua), an unmodified
#                 interpreter that spends about 30% of its instructions in the allocator
#                 (every object through realloc and free)
# each run four ways, interleaved REPEAT times, each run pinned to one CPU (PIN, default the
# last one; PIN= to not pin):
#   plain        no library
#   bare         bench/preload/bare_interposer.c: wrappers that only jump to glibc's, the
#                floor of any LD_PRELOAD interposer
#   passthrough  LD_PRELOAD=libpagetier.so, no daemon listening
#   daemon       the library registered with pt_testd (the real daemon/preload_server.c),
#                records flowing
# It prints the median CPU time (user+system: on a shared machine the steadier figure) of
# each and its difference to plain, then (CALLGRIND=0 to skip) the instructions each
# executes under callgrind, one run each at a smaller size: a count that does not depend on
# the machine's other load.
#
#   bench/preload/run.sh [BUILD_DIR] [REPEAT (default 11)]
# Environment: PROGRAMS ("malloc_bench lua"), OPS (20000000), DEPTH (16), PIN, CALLGRIND.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$ROOT/build}; REPEAT=${2:-11}
B=$(mkdir -p "$B" && cd "$B" && pwd)
PROGRAMS=${PROGRAMS:-malloc_bench lua}
OPS=${OPS:-20000000}; DEPTH=${DEPTH:-16}
MODES="plain bare passthrough daemon"
TMP=$(mktemp -d /tmp/pagetier-bench-XXXXXX)
TESTD_PID=
trap '[ -n "$TESTD_PID" ] && kill $TESTD_PID 2>/dev/null; rm -rf "$TMP"' EXIT
PIN=${PIN-$(($(nproc) - 1))}
TASKSET=; [ -n "$PIN" ] && TASKSET="taskset -c $PIN"
need() { command -v "$1" >/dev/null || { echo "bench/preload/run.sh: $1 missing: run make deps" >&2; exit 1; }; }
for p in $PROGRAMS; do [ "$p" = lua ] && need lua5.4; done
[ "${CALLGRIND:-1}" = 0 ] || need valgrind

cd "$ROOT"
CC="cc -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE"
make -s -C libpreload O="$B/lib"
mkdir -p "$B/preload"
$CC -pthread -o "$B/preload/malloc_bench" bench/preload/malloc_bench.c
$CC -o "$B/preload/cputime" bench/preload/cputime.c
$CC -fPIC -shared -o "$B/preload/bare_interposer.so" bench/preload/bare_interposer.c
$CC -Iinclude -Idaemon -Ikmod/uapi -o "$B/preload/pt_testd" tests/preload/testd.c \
	daemon/preload_server.c daemon/preload_decode.c daemon/preload_maps.c daemon/log.c
"$B/preload/pt_testd" --sock "$TMP/d.sock" --report "$TMP/report" 2>/dev/null &
TESTD_PID=$!
for _ in $(seq 50); do [ -S "$TMP/d.sock" ] && break; sleep 0.1; done

# cmd PROGRAM SIZE: the command line.
cmd() {
	case $1 in
	malloc_bench) echo "$B/preload/malloc_bench $2 1" ;;
	lua)          echo "lua5.4 $ROOT/tests/preload/binary_trees.lua $2" ;;
	esac
}
# with_mode MODE CMD...: CMD in the environment of MODE.
with_mode() {
	local mode=$1; shift
	case $mode in
	plain)       env -u LD_PRELOAD "$@" ;;
	bare)        LD_PRELOAD="$B/preload/bare_interposer.so" "$@" ;;
	passthrough) LD_PRELOAD="$B/lib/libpagetier.so" PAGETIER_PRELOAD_SOCK="$TMP/none.sock" "$@" ;;
	daemon)      LD_PRELOAD="$B/lib/libpagetier.so" PAGETIER_PRELOAD_SOCK="$TMP/d.sock" "$@" ;;
	esac
}
median() { sort -n "$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
pct() { echo "($1 - $2) * 100 / $2" | bc -l; }

for prog in $PROGRAMS; do
	size=$OPS; [ "$prog" = lua ] && size=$DEPTH
	for i in $(seq "$REPEAT"); do
		for m in $MODES; do
			# shellcheck disable=SC2046
			with_mode $m $TASKSET "$B/preload/cputime" $(cmd "$prog" "$size") \
				>>"$TMP/$prog.$m"
		done
		printf '\r%s: run %d/%d ' "$prog" "$i" "$REPEAT" >&2
	done
	echo >&2
	P=$(median "$TMP/$prog.plain")
	echo "$prog $size: CPU time (user+system), median of $REPEAT runs${PIN:+, on CPU $PIN}"
	for m in $MODES; do
		M=$(median "$TMP/$prog.$m")
		printf "  %-12s %8.3f s  %+6.2f %%   (runs: %s)\n" $m "$M" "$(pct "$M" "$P")" \
			"$(sort -n "$TMP/$prog.$m" | awk '{ printf "%.3f ", $1 }')"
	done
done

if [ "${CALLGRIND:-1}" != 0 ]; then
	for prog in $PROGRAMS; do
		size=$((OPS / 10)); [ "$prog" = lua ] && size=$((DEPTH - 4))
		echo "$prog $size: instructions (callgrind)"
		for m in $MODES; do
			# shellcheck disable=SC2046
			with_mode $m valgrind --tool=callgrind --callgrind-out-file=/dev/null \
				$(cmd "$prog" "$size") 2>"$TMP/cg" >/dev/null
			n=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$TMP/cg")
			[ -n "$n" ] || { echo "callgrind failed:" >&2; cat "$TMP/cg" >&2; exit 1; }
			[ $m = plain ] && NP=$n
			printf "  %-12s %14d  %+6.2f %%\n" $m "$n" "$(pct "$n" "$NP")"
		done
	done
fi
kill -TERM $TESTD_PID; wait $TESTD_PID || true; TESTD_PID=
echo "daemon mode, pt_testd saw: $(grep -E '^(records|producer_dropped|peers_registered) ' \
	"$TMP/report" | tr '\n' ' ')"
