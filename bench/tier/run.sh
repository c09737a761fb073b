#!/bin/bash
# The restore benchmark (bench/tier/README.md): boots the VM twice, the benchmark NVMe
# namespace unthrottled and throttled to a cloud-disk profile, runs guest.sh in each,
# and prints a table of median restore times.
#
#   bench/tier/run.sh [KERNEL_VERSION]        (default: the last of build/kernels.txt)
# Environment: RUNS (3), MIB (256), THROTTLE (iops-total=3000,bps-total=125000000),
# FRAG (3: also (b) and (c) with the container offloaded interleaved with 3 others;
# 0 = not), PT_KO (the pagetier.ko to load, default build/kmod/KV/pagetier.ko), OUT
# (results under build/vm/bench-tier-$OUT-{unthrottled,throttled}, default none), PROFILES
# ("unthrottled throttled"; the table has the rows of those run).
set -u
. "$(dirname "$0")/../../tests/vm/lib.sh"
kv=${1:-$(tail -1 "$PT_TOP/build/kernels.txt")}
runs=${RUNS:-3}
mib=${MIB:-256}
throttle=${THROTTLE:-iops-total=3000,bps-total=125000000}
bin=$PT_TOP/build/bench-tier/tier_bench

mkdir -p "$(dirname "$bin")"
gcc -O2 -g -Wall -Wextra -Werror -std=gnu11 -I"$PT_TOP/kmod/uapi" -I"$PT_TOP/tests/kselftest" \
	-o "$bin" \
	"$PT_TOP/bench/tier/tier_bench.c" || pt_die "cannot build tier_bench"

profiles=${PROFILES:-unthrottled throttled}
for profile in $profiles; do
	out=$PT_TOP/build/vm/bench-tier-${OUT:+$OUT-}$profile
	imgdir=$out.img
	mkdir -p "$imgdir"
	pt_new_image "$imgdir/bench.img" 4G 4G	# the benchmark may fill it
	opts=
	[ $profile = throttled ] && opts=$(echo ",$throttle" | sed 's/,\([a-z]\)/,throttling.\1/g')
	echo "==== $profile: -drive ...$opts"
	PT_VM_TIMEOUT=${PT_VM_TIMEOUT:-2400} pt_vm_run "$kv" "$out" \
		"${PT_KO:+PT_KO=$PT_KO }FRAG=${FRAG:-3} bench/tier/guest.sh $profile $runs $bin $mib" \
		"-drive file=$imgdir/bench.img,if=none,id=nvb,format=raw,cache=none,aio=threads,$PT_DRIVE_OPTS$opts -device nvme,serial=pagetier-bench,drive=nvb" >/dev/null
	rm -f "$imgdir/bench.img"
	[ "$(cat "$out/guest.rc" 2>/dev/null)" = 0 ] || pt_die "$profile run failed: $out/console.log"
	grep '^RESULT' "$out/results.txt"
done

python3 - "$kv" "$mib" $(for p in $profiles; do echo "$p=$PT_TOP/build/vm/bench-tier-${OUT:+$OUT-}$p/results.txt"; done) <<'PY'
import statistics, sys
def load(path):
    r = {}
    for line in open(path):
        if line.startswith('RESULT'):
            kv = dict(x.split('=', 1) for x in line.split()[1:])
            r.setdefault(kv['mode'], []).append(kv)
    return r
res = {p: load(f) for p, f in (a.split('=', 1) for a in sys.argv[3:])}
mib = int(sys.argv[2])
def median_secs(r, m):
    return statistics.median(float(x['secs']) for x in r[m])
def restore_cell(r, m):
    secs = median_secs(r, m)
    reads = int(statistics.median(int(x['dev_reads']) for x in r[m]))
    return f"{secs:.2f} s, {mib * 1.048576 / secs:.0f} MB/s, {reads} reads"
print(f"\nRestore of {mib} MiB after offload, Linux {sys.argv[1]}, QEMU TCG; median of "
      f"{len(next(iter(res.values()))['fault'])} runs")
print("| profile | raw seq read | (a) demand faults, swap | (b) MADV_WILLNEED, swap | "
      "(c) tier PREFETCH + WILLNEED | (c) vs seq bw | (c) vs (a) |")
print("|---|---|---|---|---|---|---|")
for p, r in res.items():
    med = lambda m: median_secs(r, m)
    raw = float(r['rawseq'][0]['mbps'])
    cells = [restore_cell(r, m) for m in ('fault', 'willneed', 'prefetch')]
    c = mib * 1.048576 / med('prefetch')
    print(f"| {p} | {raw:.0f} MB/s | " + " | ".join(cells) +
          f" | {100 * c / raw:.0f}% | {med('fault') / med('prefetch'):.1f}x |")
if all('ramswap' in r for r in res.values()):
    print(f"\nNo drive, the guest CPU's cost alone: the same restore (MADV_WILLNEED, then "
          f"touch) from swap on a RAM disk (brd); median")
    print("| profile | ramswap | of the drive's raw seq read | (c) tier, against it |")
    print("|---|---|---|---|")
    for p, r in res.items():
        ceil = mib * 1.048576 / median_secs(r, 'ramswap')
        raw = float(r['rawseq'][0]['mbps'])
        print(f"| {p} | {median_secs(r, 'ramswap'):.2f} s, {ceil:.0f} MB/s | "
              f"{100 * ceil / raw:.0f}% | "
              f"{100 * median_secs(r, 'ramswap') / median_secs(r, 'prefetch'):.0f}% |")
print(f"\nOffload of {mib} MiB (MADV_PAGEOUT until on swap; then memory.reclaim until "
      f"memory.current < 4 MiB), the same runs; median")
print("| profile | plain swap: MADV_PAGEOUT | memory left | until freed | "
      "tier: MADV_PAGEOUT | memory left | until freed |")
print("|---|---|---|---|---|---|---|")
for p, r in res.items():
    def off(ms):
        rows = [x for m in ms for x in r.get(m, []) if 'po_secs' in x]
        if not rows:
            return "- | - | -"
        po = statistics.median(float(x['po_secs']) for x in rows)
        of = statistics.median(float(x['off_secs']) for x in rows)
        cur = statistics.median(int(x['po_cur_mib']) for x in rows)
        return (f"{po:.2f} s, {mib * 1.048576 / po:.0f} MB/s | {cur:.0f} MiB | "
                f"{of:.2f} s, {mib * 1.048576 / of:.0f} MB/s")
    print(f"| {p} | {off(('fault', 'willneed'))} | {off(('prefetch',))} |")
if all('prefetch-frag' in r for r in res.values()):
    print(f"\nThe same container offloaded interleaved with 3 others (runs of 4 pages); "
          f"median of {len(next(iter(res.values()))['prefetch-frag'])} runs")
    print("| profile | (b) MADV_WILLNEED, swap | (c) tier PREFETCH + WILLNEED | (c) vs (b) |")
    print("|---|---|---|---|")
    for p, r in res.items():
        cells = [restore_cell(r, m) for m in ('willneed-frag', 'prefetch-frag')]
        print(f"| {p} | " + " | ".join(cells) +
              f" | {median_secs(r, 'willneed-frag') / median_secs(r, 'prefetch-frag'):.1f}x |")
PY
