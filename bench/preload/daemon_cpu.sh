#!/bin/bash
# pagetierd's CPU with 20 preloaded processes (bench/preload/README.md): boots the VM once
# and runs daemon_cpu-guest.py: pagetierd with 4 opted-in cgroups, 60 s with no process in
# them, then twice in turn 60 s with 20 malloc-busy processes (churn) without the library
# and 60 s with the same 20 under LD_PRELOAD=libpagetier.so; the daemon's utime+stime as %
# of one CPU (all threads; main thread), and records taken and dropped.
#
#   bench/preload/daemon_cpu.sh [KERNEL_VERSION] [NPROC] [WINDOW_S] [NCGROUPS] [PHASES]
#     (default: the last of build/kernels.txt, 20, 60, 4, idle,plain,preload,plain,preload)
# Output: build/vm/bench-daemon-cpu/{console.log,results.txt,results.json,pagetierd.log}
# (OUT=dir to write elsewhere)
set -u
. "$(dirname "$0")/../../tests/vm/lib.sh"
kv=${1:-$(tail -1 "$PT_TOP/build/kernels.txt")}
nproc=${2:-20}
window=${3:-60}
ncg=${4:-4}
phases=${5:-idle,plain,preload,plain,preload}
bin=$PT_TOP/build/bench-preload/churn
out=${OUT:-$PT_TOP/build/vm/bench-daemon-cpu}

mkdir -p "$(dirname "$bin")"
gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -o "$bin" \
	"$PT_TOP/bench/preload/churn.c" || pt_die "cannot build churn"
for f in build/bin/pagetierd build/bin/pagetierctl build/lib/libpagetier.so; do
	[ -e "$PT_TOP/$f" ] || pt_die "$f missing: make first"
done
# Guest CPU times include host time stolen from the vCPUs (no steal-time accounting under
# TCG): note what else ran on the host.
hostload() { echo "# host $1: load $(cut -d' ' -f1-3 /proc/loadavg), $(pgrep -c qemu-system) QEMU processes"; }
before=$(hostload before)
PT_VM_TIMEOUT=${PT_VM_TIMEOUT:-1800} pt_vm_run "$kv" "$out" \
	"python3 bench/preload/daemon_cpu-guest.py $bin $nproc $window $ncg 10 $phases" >/dev/null
[ "$(cat "$out/guest.rc" 2>/dev/null)" = 0 ] || pt_die "guest run failed: $out/console.log"
echo "$before" >>"$out/results.txt"
hostload after >>"$out/results.txt"
cat "$out/results.txt"
