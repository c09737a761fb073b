#!/bin/bash
# Scanner micro-benchmark: PAGETIER_IOC_SCAN against the /proc fallback (clear_refs +
# smaps + pagemap) on 1 GiB of resident, touched memory of another process, in the test VM
# (QEMU TCG: absolute numbers are those of an emulated CPU; compare the rows, not the host).
#
#   bench/scan/run.sh [KERNEL_VERSION...]     default: every kernel in build/kernels.txt
#
# Environment: SCAN_BENCH_ARGS (default "-m 1024 -n 5"), PT_KMOD_DIR (default build/kmod:
# <dir>/<KV>/pagetier.ko, as "make kmod" leaves it). Results: build/bench/scan-<KV>.txt.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/build
KMOD=${PT_KMOD_DIR:-$B/kmod}
ARGS=${SCAN_BENCH_ARGS:--m 1024 -n 5}
cd "$ROOT"
mkdir -p "$B/bench"
cc -std=gnu11 -O2 -g -Wall -Wextra -Werror -Ikmod/uapi -o "$B/bench/scan_bench" \
	bench/scan/scan_bench.c
# shellcheck source=../../tests/vm/lib.sh
. tests/vm/lib.sh
[ $# -gt 0 ] || set -- $(cat "$B/kernels.txt")
for kv in "$@"; do
	ko=$KMOD/$kv/pagetier.ko
	[ -f "$ko" ] || pt_die "$ko missing: run make kmod"
	out=$B/vm/bench-scan-$kv
	PT_VM_MEM=${PT_VM_MEM:-2G} pt_vm_run "$kv" "$out" \
		"bash $ROOT/bench/scan/guest.sh $ko $B/bench/scan_bench $ARGS" >/dev/null || true
	if [ -s "$out/result.txt" ]; then
		cp "$out/result.txt" "$B/bench/scan-$kv.txt"
		echo "== $kv"
		cat "$B/bench/scan-$kv.txt"
	else
		echo "== $kv: no result; see $out/console.log" >&2
	fi
done
