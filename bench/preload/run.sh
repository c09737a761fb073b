#!/bin/bash
# libpagetier.so overhead on a malloc-heavy program: malloc_bench run plain, with the library
# and no daemon (pass-through), and with the library registered with pt_testd (records
# flowing), interleaved REPEAT times; reports the median wall time and the median CPU time of
# each and their difference to plain. The CPU time is the steadier figure on a shared machine.
# Each run is pinned to one CPU (PIN, default the last one; PIN= to not pin).
#
#   bench/preload/run.sh [BUILD_DIR] [OPS] [THREADS] [REPEAT]
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$ROOT/build}; OPS=${2:-20000000}; THREADS=${3:-1}; REPEAT=${4:-7}
B=$(mkdir -p "$B" && cd "$B" && pwd)
TMP=$(mktemp -d /tmp/pagetier-bench-XXXXXX)
TESTD_PID=
trap '[ -n "$TESTD_PID" ] && kill $TESTD_PID 2>/dev/null; rm -rf "$TMP"' EXIT
PIN=${PIN-$(($(nproc) - 1))}
TASKSET=; [ -n "$PIN" ] && TASKSET="taskset -c $PIN"
cd "$ROOT"
make -s -C libpreload O="$B/lib"
mkdir -p "$B/preload"
cc -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -pthread -o "$B/preload/malloc_bench" \
	bench/preload/malloc_bench.c
cc -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Idaemon -Ikmod/uapi \
	-o "$B/preload/pt_testd" tests/preload/testd.c daemon/preload_server.c \
	daemon/preload_decode.c daemon/preload_maps.c daemon/log.c
"$B/preload/pt_testd" --sock "$TMP/d.sock" --report "$TMP/report" 2>/dev/null &
TESTD_PID=$!
sleep 0.3

one() {
	case $1 in
	plain)       env -u LD_PRELOAD $TASKSET "$B/preload/malloc_bench" "$OPS" "$THREADS" ;;
	passthrough) LD_PRELOAD="$B/lib/libpagetier.so" PAGETIER_PRELOAD_SOCK="$TMP/none.sock" \
	             $TASKSET "$B/preload/malloc_bench" "$OPS" "$THREADS" ;;
	daemon)      LD_PRELOAD="$B/lib/libpagetier.so" PAGETIER_PRELOAD_SOCK="$TMP/d.sock" \
	             $TASKSET "$B/preload/malloc_bench" "$OPS" "$THREADS" ;;
	esac
}
for i in $(seq "$REPEAT"); do
	for m in plain passthrough daemon; do
		one $m | awk -v w="$TMP/$m" -v c="$TMP/$m.cpu" '{ print $1 >>w; print $5 >>c }'
	done
done
kill -TERM $TESTD_PID; wait $TESTD_PID || true; TESTD_PID=
median() { sort -n "$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "malloc_bench: $OPS ops x $THREADS thread(s), median of $REPEAT runs${PIN:+, on CPU $PIN}"
for k in "wall:" "cpu:.cpu"; do
	P=$(median "$TMP/plain${k#*:}")
	echo " ${k%:*} time"
	for m in plain passthrough daemon; do
		M=$(median "$TMP/$m${k#*:}")
		printf "  %-12s %8.3f s  %+6.2f %%   (runs: %s)\n" $m "$M" \
			"$(echo "($M - $P) * 100 / $P" | bc -l)" "$(tr '\n' ' ' <"$TMP/$m${k#*:}")"
	done
done
echo "  daemon saw: $(grep -E '^(records|producer_dropped|peers_registered) ' "$TMP/report" | tr '\n' ' ')"
