#!/bin/bash
# malloc_trim at idle (bench/preload/README.md): boots the VM once and runs trim-guest.py:
# a preloaded process with a heap of MIB MiB, 90% of it freed, goes idle in an opted-in
# cgroup; pagetierd asks it to malloc_trim(0) and offloads it to a tier over the guest's
# NVMe drive. Bytes written to the tier, swap and resident memory, with the request run and
# ignored (PAGETIER_PRELOAD_NO_TRIM=1), and two more cases (see trim-guest.py).
#
#   bench/preload/trim.sh [KERNEL_VERSION] [MIB] [CASES]
#     (default: the last of build/kernels.txt, 256, ignored,honoured,selftrim,timer)
# Output: build/vm/bench-trim/{console.log,results.txt,results.json,pagetierd.log}
set -u
. "$(dirname "$0")/../../tests/vm/lib.sh"
kv=${1:-$(tail -1 "$PT_TOP/build/kernels.txt")}
mib=${2:-256}
cases=${3:-}
bin=$PT_TOP/build/bench-preload/trim_bench
out=$PT_TOP/build/vm/bench-trim

mkdir -p "$(dirname "$bin")"
gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -o "$bin" \
	"$PT_TOP/bench/preload/trim_bench.c" || pt_die "cannot build trim_bench"
for f in build/bin/pagetierd build/bin/pagetierctl build/lib/libpagetier.so; do
	[ -e "$PT_TOP/$f" ] || pt_die "$f missing: make first"
done
PT_VM_TIMEOUT=${PT_VM_TIMEOUT:-2400} pt_vm_run "$kv" "$out" \
	"python3 bench/preload/trim-guest.py $bin $mib '$cases'" >/dev/null
[ "$(cat "$out/guest.rc" 2>/dev/null)" = 0 ] || pt_die "guest run failed: $out/console.log"
grep -v '^# log' "$out/results.txt"
