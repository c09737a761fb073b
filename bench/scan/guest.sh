#!/bin/bash
# Runs in the VM (bench/scan/run.sh): load pagetier.ko, run scan_bench with 4 KiB pages and
# with THPs, write $PT_OUT/result.txt.
#   guest.sh PAGETIER_KO SCAN_BENCH [ARGS...]
set -u
ko=$1 bench=$2
shift 2
out=${PT_OUT:?}
insmod "$ko" || exit 1
{
	echo "# Linux $(uname -r), $(nproc) vCPUs (QEMU TCG), $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) MiB"
	"$bench" "$@"
	echo
	"$bench" -t "$@"
} 2>&1 | cat >"$out/result.txt"
cat "$out/result.txt"
rmmod pagetier
