#!/bin/bash
# Demand-read priority (bench/tier/README.md): boots the VM three times, the benchmark
# NVMe namespace unthrottled and throttled to a cloud-disk profile; in each, prio_bench
# measures 4 KiB read latency alone and under a flood of 1 MiB writes, on the raw
# namespace and on a tier over it; then the same on a throttled null_blk. Prints a table.
#
#   bench/tier/prio.sh [KERNEL_VERSION]      (default: the last of build/kernels.txt)
# Environment: FLOOD_MIB (512), THROTTLE (iops-total=3000,bps-total=125000000),
# NULLB_MBPS (120: the third profile, a memory-backed null_blk in the guest with one
# bandwidth bucket for reads and writes, i.e. a FIFO disk), PROFILES (all three; the
# table shows every profile with results in build/vm/bench-prio-*)
set -u
. "$(dirname "$0")/../../tests/vm/lib.sh"
kv=${1:-$(tail -1 "$PT_TOP/build/kernels.txt")}
mib=${FLOOD_MIB:-512}
throttle=${THROTTLE:-iops-total=3000,bps-total=125000000}
bin=$PT_TOP/build/bench-tier/prio_bench

mkdir -p "$(dirname "$bin")"
gcc -O2 -g -Wall -Wextra -Werror -std=gnu11 -pthread -o "$bin" \
	"$PT_TOP/bench/tier/prio_bench.c" || pt_die "cannot build prio_bench"
[ -x "$PT_TOP/build/bin/pagetierctl" ] || pt_die "build first: make"

for profile in ${PROFILES:-unthrottled throttled nullb}; do
	out=$PT_TOP/build/vm/bench-prio-$profile
	imgdir=$out.img
	drive=
	if [ $profile != nullb ]; then
		mkdir -p "$imgdir"
		pt_new_image "$imgdir/bench.img" 4G 4G	# the benchmark may fill it
		opts=
		[ $profile = throttled ] &&
			opts=$(echo ",$throttle" | sed 's/,\([a-z]\)/,throttling.\1/g')
		drive="-drive file=$imgdir/bench.img,if=none,id=nvb,format=raw,cache=none,aio=threads,$PT_DRIVE_OPTS$opts -device nvme,serial=pagetier-bench,drive=nvb"
	fi
	echo "==== $profile: ${drive:-null_blk in the guest}"
	PT_VM_TIMEOUT=${PT_VM_TIMEOUT:-1800} pt_vm_run "$kv" "$out" \
		"bench/tier/prio-guest.sh $profile $bin $mib" "$drive" >/dev/null
	rm -f "$imgdir/bench.img"
	[ "$(cat "$out/guest.rc" 2>/dev/null)" = 0 ] || pt_die "$profile run failed: $out/console.log"
	grep '^RESULT' "$out/results.txt"
done

python3 - "$PT_TOP/build/vm/bench-prio-unthrottled/results.txt" \
	"$PT_TOP/build/vm/bench-prio-throttled/results.txt" \
	"$PT_TOP/build/vm/bench-prio-nullb/results.txt" "$kv" "$mib" <<'PY'
import sys
print(f"\n4 KiB read latency, alone and during {sys.argv[5]} MiB of 1 MiB writes "
      f"(8 writers), Linux {sys.argv[4]}, QEMU TCG")
print("| profile | device | alone p50 / p99 | under the write flood p50 / p99 / max | "
      "flood p99 vs alone p99 | writes |")
print("|---|---|---|---|---|---|")
for prof, path in (("unthrottled", sys.argv[1]), ("throttled", sys.argv[2]),
                   ("null_blk FIFO", sys.argv[3])):
    r = {}
    try:
        lines = open(path).readlines()
    except OSError:
        continue
    for line in lines:
        if line.startswith("RESULT"):
            kv = dict(x.split("=", 1) for x in line.split()[1:])
            r[(kv["what"], kv["phase"])] = kv
    for what in ("raw", "tier"):
        a, f, w = r[(what, "alone")], r[(what, "flood")], r[(what, "writes")]
        ms = lambda k, d: f"{int(d[k]) / 1000:.1f}"
        print(f"| {prof} | {what} | {ms('p50_us', a)} / {ms('p99_us', a)} ms | "
              f"{ms('p50_us', f)} / {ms('p99_us', f)} / {ms('max_us', f)} ms | "
              f"{int(f['p99_us']) / max(1, int(a['p99_us'])):.1f}x | "
              f"{w['mbps']} MB/s |")
PY
