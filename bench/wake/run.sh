#!/bin/bash
# Wake latency with pagetierd's prefetch against demand paging, on the tier, in one VM run.
# Emulated (QEMU TCG) figures: compare the two rows, not the absolute times.
#
#   bench/wake/run.sh [KERNEL_VERSION]     (env: SIZE_MB=256 ROUNDS=3)
set -u
. "$(dirname "$0")/../../tests/vm/lib.sh"
kv=${1:-$(tail -1 "$PT_TOP/build/kernels.txt")}
out=$PT_TOP/build/bench/wake-$kv
PT_VM_TIMEOUT=1800 pt_vm_run "$kv" "$out" \
	"insmod build/kmod/$kv/pagetier.ko && SIZE_MB=${SIZE_MB:-256} ROUNDS=${ROUNDS:-3} python3 bench/wake/guest.py 2>&1 | tee \$PT_OUT/result.txt" >/dev/null
grep -E '^\||^demand|^# round' "$out/result.txt" || { tail -20 "$out/console.log"; exit 1; }
