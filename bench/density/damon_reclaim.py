"""The density benchmark's DAMON_RECLAIM configuration, and what it did.

DAMON_RECLAIM is a scheme of DAMON (Documentation/admin-guide/mm/damon/reclaim.rst): a
kdamond monitors the biggest System RAM range of physical memory and pages out (DAMOS
PAGEOUT) the regions it found not accessed for min_age, oldest first, within a quota of
10 ms of CPU and 128 MiB a second, while free memory is between its watermarks.

Two ways to run it (DAMON_INTERFACE):
  sysfs   (default) the same scheme, built through DAMON's sysfs interface
          (/sys/kernel/mm/damon/admin), with the module's defaults written out;
  module  the built-in module (/sys/module/damon_reclaim/parameters).
Debian's 6.12.117 module applies nothing on the benchmark's guest: in every window of
every run its scheme tried no region and its damos_before_apply tracepoint never fired,
while its monitor held hundreds of MiB of regions idle for longer than min_age, and its
kdamond kept monitoring at 65% free memory, where its watermarks should have put it to
sleep (bench/density/README.md, 2026-12-01). Built through sysfs, the same scheme acts
(damon_probe.py). So the benchmark runs the scheme, not the module, and says so.

Both are watched the same way: the scheme's stats, the free-memory metric of its
watermarks, and the monitor's regions from the damon_aggregated tracepoint.
"""
import os
import subprocess
import time

MODULE = "/sys/module/damon_reclaim/parameters"
ADMIN = "/sys/kernel/mm/damon/admin/kdamonds"
TRACEFS = "/sys/kernel/tracing"
PAGE = 4096

# The module's defaults (mm/damon/reclaim.c), which the sysfs scheme writes out.
DEFAULTS = {"min_age": 120_000_000, "quota_ms": 10, "quota_sz": 128 << 20,
            "quota_reset_interval_ms": 1000, "wmarks_interval": 5_000_000,
            "wmarks_high": 500, "wmarks_mid": 400, "wmarks_low": 200,
            "sample_interval": 5000, "aggr_interval": 100_000,
            "min_nr_regions": 10, "max_nr_regions": 1000}

# As a careful operator of this host would set it (bench/density/README.md): the defaults,
# but min_age scaled like every policy's time constants, and watermarks that keep it
# working on a host that is full: the defaults (per mille of free memory: high 500, mid
# 400, low 200) turn it off below 20% free, which a dense host always is.
OPERATOR = {"wmarks_high": 300, "wmarks_mid": 200, "wmarks_low": 5}


def put(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def get(path):
    with open(path) as f:
        return f.read().strip()


def parameters(scale, overrides=""):
    """The parameters the benchmark runs with: DEFAULTS, OPERATOR, min_age / @scale, then
    @overrides ("min_age=5000000 quota_ms=100", DAMON_PARAMS: for a diagnosis)."""
    params = dict(DEFAULTS, **OPERATOR)
    params["min_age"] = DEFAULTS["min_age"] // scale
    for kv in overrides.split():
        k, v = kv.split("=", 1)
        if k not in params:
            raise ValueError(f"DAMON_PARAMS: no parameter {k!r} (one of {', '.join(params)})")
        params[k] = int(v)
    return params


def biggest_system_ram():
    """[start, end) of the largest top-level System RAM range of /proc/iomem: the range
    DAMON_RECLAIM monitors by default."""
    best = (0, 0)
    with open("/proc/iomem") as f:
        for line in f:
            if line.startswith(" ") or "System RAM" not in line:
                continue
            lo, hi = (int(x, 16) for x in line.split(":")[0].strip().split("-"))
            if hi + 1 - lo > best[1] - best[0]:
                best = (lo, hi + 1)
    return best


class SysfsReclaim:
    """DAMON_RECLAIM's scheme on kdamond 0 of DAMON's sysfs interface."""

    def __init__(self, params, stat_scheme=False):
        """Starts it. @stat_scheme adds a STAT scheme over every region, under the same
        watermarks, whose tried regions are the monitor's view (damon_probe.py)."""
        if not os.path.isdir(ADMIN):
            raise RuntimeError("this kernel has no DAMON sysfs interface")
        p = params
        self.aggr_s = p["aggr_interval"] / 1e6
        put(f"{ADMIN}/nr_kdamonds", 1)
        put(f"{ADMIN}/0/contexts/nr_contexts", 1)
        ctx = self.ctx = f"{ADMIN}/0/contexts/0"
        put(f"{ctx}/operations", "paddr")
        put(f"{ctx}/monitoring_attrs/intervals/sample_us", p["sample_interval"])
        put(f"{ctx}/monitoring_attrs/intervals/aggr_us", p["aggr_interval"])
        put(f"{ctx}/monitoring_attrs/nr_regions/min", p["min_nr_regions"])
        put(f"{ctx}/monitoring_attrs/nr_regions/max", p["max_nr_regions"])
        put(f"{ctx}/targets/nr_targets", 1)
        put(f"{ctx}/targets/0/regions/nr_regions", 1)
        self.region = biggest_system_ram()
        put(f"{ctx}/targets/0/regions/0/start", self.region[0])
        put(f"{ctx}/targets/0/regions/0/end", self.region[1])
        put(f"{ctx}/schemes/nr_schemes", 2 if stat_scheme else 1)
        for i in range(2 if stat_scheme else 1):
            s = f"{ctx}/schemes/{i}"
            put(f"{s}/action", "pageout" if i == 0 else "stat")
            # Every range of a sysfs access pattern starts as [0, 0]: set each, or the
            # scheme matches nothing.
            a = f"{s}/access_pattern"
            put(f"{a}/sz/min", PAGE if i == 0 else 0)
            put(f"{a}/sz/max", 2**64 - 1)
            put(f"{a}/nr_accesses/min", 0)
            put(f"{a}/nr_accesses/max", 0 if i == 0 else 2**32 - 1)
            put(f"{a}/age/min", p["min_age"] // p["aggr_interval"] if i == 0 else 0)
            put(f"{a}/age/max", 2**32 - 1)
            w = f"{s}/watermarks"
            put(f"{w}/metric", "free_mem_rate")
            put(f"{w}/interval_us", p["wmarks_interval"])
            put(f"{w}/high", p["wmarks_high"])
            put(f"{w}/mid", p["wmarks_mid"])
            put(f"{w}/low", p["wmarks_low"])
        q = f"{ctx}/schemes/0/quotas"
        put(f"{q}/ms", p["quota_ms"])
        put(f"{q}/bytes", p["quota_sz"])
        put(f"{q}/reset_interval_ms", p["quota_reset_interval_ms"])
        # Within the quota, the oldest regions first (the module's weights).
        put(f"{q}/weights/sz_permil", 0)
        put(f"{q}/weights/nr_accesses_permil", 0)
        put(f"{q}/weights/age_permil", 1)
        put(f"{ADMIN}/0/state", "on")
        self.pid = int(get(f"{ADMIN}/0/pid"))

    def stats(self):
        """The PAGEOUT scheme's stats, named as the module names them."""
        put(f"{ADMIN}/0/state", "update_schemes_stats")
        s = f"{self.ctx}/schemes/0/stats"
        return {"kdamond_pid": self.pid,
                "nr_reclaim_tried_regions": int(get(f"{s}/nr_tried")),
                "bytes_reclaim_tried_regions": int(get(f"{s}/sz_tried")),
                "nr_reclaimed_regions": int(get(f"{s}/nr_applied")),
                "bytes_reclaimed_regions": int(get(f"{s}/sz_applied")),
                "nr_quota_exceeds": int(get(f"{s}/qt_exceeds"))}

    def tried_regions(self):
        """The STAT scheme's regions: [(start, end, nr_accesses, age)]."""
        put(f"{ADMIN}/0/state", "update_schemes_tried_regions")
        d = f"{self.ctx}/schemes/1/tried_regions"
        out = []
        for r in os.listdir(d):
            if r.isdigit():
                out.append(tuple(int(get(f"{d}/{r}/{k}"))
                                 for k in ("start", "end", "nr_accesses", "age")))
        return out

    def stop(self):
        put(f"{ADMIN}/0/state", "off")


class ModuleReclaim:
    """The built-in DAMON_RECLAIM module."""

    def __init__(self, params):
        if not os.path.isdir(MODULE):
            raise RuntimeError("this kernel has no DAMON_RECLAIM")
        self.aggr_s = params["aggr_interval"] / 1e6
        for k, v in params.items():
            put(os.path.join(MODULE, k), v)
        put(os.path.join(MODULE, "enabled"), "Y")
        self.pid = int(get(os.path.join(MODULE, "kdamond_pid")))

    def held(self):
        """Every parameter the module holds."""
        out = {}
        for k in sorted(os.listdir(MODULE)):
            try:
                out[k] = get(os.path.join(MODULE, k))
            except OSError:
                pass
        return out

    def stats(self):
        return {k: int(get(os.path.join(MODULE, k)))
                for k in ("kdamond_pid", "nr_reclaim_tried_regions",
                          "bytes_reclaim_tried_regions", "nr_reclaimed_regions",
                          "bytes_reclaimed_regions", "nr_quota_exceeds")}

    def stop(self):
        put(os.path.join(MODULE, "enabled"), "N")


def start(scale, interface=None, overrides=None):
    """Starts DAMON_RECLAIM (DAMON_INTERFACE, DAMON_PARAMS); returns it and a record of
    what it runs with, for the JSON."""
    interface = interface or os.environ.get("DAMON_INTERFACE", "sysfs")
    params = parameters(scale, os.environ.get("DAMON_PARAMS", "")
                        if overrides is None else overrides)
    # DAMON core's word on its watermarks ("activate a scheme", "deactivate a scheme
    # (2) for high wmark"): pr_debug, to the kernel log, which each window counts.
    try:
        put("/proc/dynamic_debug/control", "file mm/damon/core.c +p")
    except OSError:
        pass
    if interface == "module":
        r = ModuleReclaim(params)
        return r, dict(params, interface="module", held=r.held())
    if interface != "sysfs":
        raise ValueError(f"DAMON_INTERFACE: {interface!r} is neither sysfs nor module")
    r = SysfsReclaim(params)
    return r, dict(params, interface="sysfs", region=list(r.region))


def window_stats(reclaim, meminfo):
    """At a window's end: the scheme's stats; the metric of its watermarks (free memory
    per mille of RAM); the monitor's regions (damon_regions); how often its watermarks
    turned it on and off so far."""
    out = reclaim.stats()
    out["free_permille"] = meminfo["MemFree"] * 1000 // meminfo["MemTotal"]
    out["regions"] = damon_regions(aggr_s=reclaim.aggr_s)
    log = subprocess.run(["dmesg"], capture_output=True, text=True).stdout
    out["wmark_deactivations"] = log.count("deactivate a scheme")
    out["wmark_activations"] = log.count("activate a scheme") - out["wmark_deactivations"]
    return out


def damon_regions(aggr_s, seconds=2):
    """What the monitor holds, from the damon_aggregated tracepoint ("target_id=0
    nr_regions=N START-END: NR_ACCESSES AGE", AGE in aggregation intervals) over
    @seconds, and how many regions the scheme acted on meanwhile (damos_before_apply,
    6.7 and later). Taken after a measured window, so that the tracing costs it nothing.
    None where the kernel has no such tracepoint, or kdamond slept (its watermarks)."""
    evs = [os.path.join(TRACEFS, "events", "damon", e, "enable")
           for e in ("damon_aggregated", "damos_before_apply")]
    if not os.path.exists(evs[0]):
        if not os.path.isdir(os.path.join(TRACEFS, "events")):
            subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS])
        if not os.path.exists(evs[0]):
            return None
    evs = [e for e in evs if os.path.exists(e)]
    put(os.path.join(TRACEFS, "trace"), "")
    for e in evs:
        put(e, 1)
    time.sleep(seconds)
    for e in evs:
        put(e, 0)
    with open(os.path.join(TRACEFS, "trace")) as f:
        lines = f.readlines()
    out = summarize_regions([x for x in lines if "damon_aggregated:" in x], aggr_s)
    if out is not None:
        out["traced_s"] = seconds
        out["before_apply"] = sum(1 for x in lines if "damos_before_apply:" in x)
    return out


def summarize_regions(lines, aggr_s):
    """The last aggregation of damon_aggregated trace @lines: the number of regions, the
    MiB accessed, the MiB with no access by age, the oldest such age."""
    regions = []
    for line in lines:
        tail = line.partition("damon_aggregated:")[2]
        try:
            nr = int(tail.split("nr_regions=")[1].split()[0])
            rng, acc, age = tail.split()[2:5]
            lo, hi = (int(x) for x in rng.rstrip(":").split("-"))
            regions.append((nr, lo, hi, int(acc), int(age)))
        except (IndexError, ValueError):
            continue
    if not regions:
        return None
    # kdamond emits an aggregation's regions in one go, between two sleeps: the last
    # nr_regions lines are the last aggregation.
    last = regions[-regions[-1][0]:]
    idle = {"lt_5s": 0, "5_30s": 0, "ge_30s": 0}
    oldest = 0.0
    for _, lo, hi, acc, age in last:
        if acc:
            continue
        age_s = age * aggr_s
        idle["lt_5s" if age_s < 5 else "5_30s" if age_s < 30 else "ge_30s"] += (hi - lo) >> 20
        oldest = max(oldest, age_s)
    return {"nr_regions": len(last),
            "accessed_MiB": sum((hi - lo) >> 20 for _, lo, hi, acc, _ in last if acc),
            "idle_MiB_by_age": idle, "oldest_idle_s": round(oldest, 1)}
