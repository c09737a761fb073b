#!/usr/bin/env python3
"""What DAMON_RECLAIM sees of a guest's memory: a diagnosis, run inside the VM.

The density benchmark's DAMON_RECLAIM scheme (damon_reclaim.py: a paddr context over the
biggest System RAM range, PAGEOUT of regions with no access for min_age, the module's
quota, weights and watermarks), run through DAMON's sysfs interface beside a STAT scheme
over every region, on a known workload. Every 5 s it prints what the monitor holds (the
number of regions, how many MiB have had no access for how long) and what the PAGEOUT
scheme tried and applied, with the free-memory metric of the watermarks and kdamond's
CPU.

The workload is synthetic and known: COLD_MB of anonymous memory written once, then
HOT_MB touched in a loop, allocated either one after the other (LAYOUT=sequential) or in
alternating 64 KiB pieces (LAYOUT=interleaved, as pages of several containers that fault
at the same time end up in physical memory).

    damon_probe.py     env: LAYOUT, COLD_MB (300), HOT_MB (300), SECONDS (150),
                       TIME_SCALE (4), DAMON_PARAMS (damon_reclaim.parameters())
"""
import mmap
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import damon_reclaim  # noqa: E402
from guest import meminfo, nvme_by_serial  # noqa: E402

PAGE = damon_reclaim.PAGE


def env_int(name, default):
    return int(os.environ.get(name, default))


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def workload(layout, cold_mb, hot_mb, ready_w):
    """The child: fault COLD_MB and HOT_MB in, in @layout's order, then keep HOT_MB hot."""
    cold = mmap.mmap(-1, cold_mb << 20)
    hot = mmap.mmap(-1, hot_mb << 20)
    piece = 64 << 10
    if layout == "interleaved":
        for off in range(0, max(cold_mb, hot_mb) << 20, piece):
            for m in (cold, hot):
                for p in range(off, min(off + piece, len(m)), PAGE):
                    m[p] = 1
    else:
        for m in (cold, hot):
            for p in range(0, len(m), PAGE):
                m[p] = 1
    os.write(ready_w, b"r")
    while True:
        for p in range(0, len(hot), PAGE):
            hot[p] = (hot[p] + 1) & 0xff


def main():
    layout = os.environ.get("LAYOUT", "sequential")
    cold_mb, hot_mb = env_int("COLD_MB", 300), env_int("HOT_MB", 300)
    seconds = env_int("SECONDS", 150)
    # DAMON_RECLAIM's parameters as the benchmark sets them, time-scaled like it
    # (TIME_SCALE, 4), and DAMON_PARAMS over them ("min_age=5000000 quota_ms=100").
    params = damon_reclaim.parameters(env_int("TIME_SCALE", 4),
                                      os.environ.get("DAMON_PARAMS", ""))
    min_age_s = params["min_age"] / 1e6
    aggr_s = params["aggr_interval"] / 1e6
    swap = os.environ.get("DENSITY_SWAP_DEV") or nvme_by_serial("pagetier-nvme")
    with open("/proc/swaps") as f:
        swapping = swap in f.read()
    if not swapping:		# a second probe in the same guest finds it on
        subprocess.run(["mkswap", swap], check=True, capture_output=True)
        subprocess.run(["swapon", swap], check=True)
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(r)
        workload(layout, cold_mb, hot_mb, w)
        os._exit(0)
    os.close(w)
    os.read(r, 1)
    reclaim = damon_reclaim.SysfsReclaim(params, stat_scheme=True)
    lo, hi = reclaim.region
    print(f"# damon_probe: {layout}, cold {cold_mb} MiB, hot {hot_mb} MiB,"
          f" region {lo:#x}-{hi:#x} ({(hi - lo) >> 20} MiB), {params}", flush=True)
    print("t_s free_permille swap_MiB kdamond_cpu_s nr_regions"
          f" idle_MiB(age<5s,5-{min_age_s:g}s,>={min_age_s:g}s) max_idle_age_s tried_MiB"
          " applied_MiB qt_exceeds", flush=True)
    t0 = time.time()
    while time.time() - t0 < seconds:
        time.sleep(5)
        st, regions = reclaim.stats(), reclaim.tried_regions()
        mi = meminfo()
        buckets = [0, 0, 0]
        max_age = 0
        for s, e, acc, age in regions:
            if acc:
                continue
            age_s = age * aggr_s
            buckets[0 if age_s < 5 else 1 if age_s < min_age_s else 2] += e - s
            max_age = max(max_age, age_s)
        print(f"{time.time() - t0:5.0f} {mi['MemFree'] * 1000 // mi['MemTotal']:4d}"
              f" {(mi['SwapTotal'] - mi['SwapFree']) >> 20:5d} {cpu_s(reclaim.pid):6.2f}"
              f" {len(regions):4d} {buckets[0] >> 20:4d},{buckets[1] >> 20:4d},"
              f"{buckets[2] >> 20:4d} {max_age:6.1f}"
              f" {st['bytes_reclaim_tried_regions'] >> 20:5d}"
              f" {st['bytes_reclaimed_regions'] >> 20:5d} {st['nr_quota_exceeds']}", flush=True)
    reclaim.stop()
    os.kill(child, 9)
    os.waitpid(child, 0)


if __name__ == "__main__":
    main()
