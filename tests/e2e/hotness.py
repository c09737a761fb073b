#!/usr/bin/env python3
"""End-to-end: the hotness model and planner (issue 4). Runs as root inside the test VM with
pagetier.ko loaded; prints TAP.

  1. hot/cold: a 256 MiB container keeps 10% of its memory hot and leaves the rest: within
     two scan intervals of the rest turning cold (cold_after), >= 90% of the cold part is
     on the tier, and refaults stay under 1% of the hot chunks per minute. (It was 1 GiB:
     the figures are relative, the 3 GiB guest's kernel reclaim does even less of the
     daemon's work with less, and reading 921 MiB back from the tier at the end took 90 s
     of TCG.)
  2. sleep/wake: a container sleeps and wakes with its working set: the prefetch's
     precision and recall, measured by pagetierd over the 10 s after the wake, are both
     >= 90%. (Its wake latency against demand paging is a benchmark: bench/wake/.)
  3. critical: while its neighbours are squeezed (their parent's memory.max), a critical
     container loses nothing: no swap, all its memory resident, every byte intact.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import e2elib
from e2elib import BIN, MIB, Tap, run, status_json, wait_for

PARENT = "pt-hot"
SCAN_MS = 1000
COLD_AFTER_MS = 2000
CHUNK = 64 << 10
NAMES = ["hc", "sleeper", "crit", "n1", "n2"]


def write_config(d):
    os.makedirs(os.path.join(d, "containers.d"))
    with open(os.path.join(d, "pagetierd.conf"), "w") as f:
        f.write(f"[daemon]\nruntime_dir = {d}/run\npoll_interval = 200ms\n"
                f"scan_interval = {SCAN_MS}ms\nchunk_size = 64K\noffload_rate = 2G\n")
    with open(os.path.join(d, "containers.d", "hot.conf"), "w") as f:
        f.write(f"[hc]\nmatch_cgroup = /{PARENT}/hc\ncold_after = {COLD_AFTER_MS}ms\n"
                "idle_threshold = 1h\n\n"
                f"[sleeper]\nmatch_cgroup = /{PARENT}/sleeper\nidle_threshold = 2s\n\n"
                f"[crit]\nmatch_cgroup = /{PARENT}/crit\nclass = critical\n\n"
                f"[neighbours]\nmatch_cgroup = /{PARENT}/n*\ncold_after = {COLD_AFTER_MS}ms\n"
                "idle_threshold = 1h\n")
    e2elib.fix_perms(d)


def cgu(name, f):
    return e2elib.cg_u64(name, f, PARENT)


def cgk(name, key):
    return e2elib.cg_key(name, "memory.stat", key, PARENT)


def stop_and_verify(tap, items):
    """items: (name, proc, report, size) each; all are told to verify at once (their
    swap-ins overlap), then each report is judged in order."""
    for _, proc, _, _ in items:
        proc.send_signal(signal.SIGTERM)
    for name, proc, report, size in items:
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
        try:
            with open(report) as f:
                r = json.loads(f.read())
        except (OSError, ValueError) as e:
            r = {"error": str(e)}
        tap.ok(r.get("mismatches") == 0 and r.get("verified") == size,
               f"{name}: every byte verified ({size // MIB} MiB)", json.dumps(r))


def hot_cold(tap, work, runtime, ids):
    size = 256 * MIB
    ready, report = os.path.join(work, "hc.ready"), os.path.join(work, "hc.report")
    p = e2elib.start_in_cgroup(PARENT, "hc", f"--size {size // MIB}M --hot-pct 10 "
                               f"--ready {ready} --report {report}")
    if not wait_for(lambda: os.path.exists(ready), 180, step=0.1):
        tap.bail(f"hc: the {size // MIB} MiB workload did not become ready in 180 s")
    t_ready = time.monotonic()
    scans0 = (status_json(runtime) or {}).get("hc", {}).get("scans", 0)
    addr, _, hot = e2elib.read_ready(ready)
    cold_pages = (size - hot) // 4096

    def cold_swapped():
        return e2elib.pagemap_counts(p.pid, addr + hot, addr + size)[1]
    # Exact: the swap bit of every page of the cold range (the tier is the only swap).
    wait_for(lambda: cold_swapped() >= 0.9 * cold_pages, 120, step=0.25)
    st = (status_json(runtime) or {}).get("hc", {})
    swapped = cold_swapped()
    scans = st.get("scans", 0) - scans0
    secs = time.monotonic() - t_ready
    cold_epochs = COLD_AFTER_MS // SCAN_MS
    # The memory turns cold when the fill ends; the model needs one epoch to see it, then
    # cold_after; "within two scan intervals" of that is what the issue asks.
    limit = 1 + cold_epochs + 2
    tap.ok(swapped >= 0.9 * cold_pages and scans <= limit,
           f"hc: {swapped * 4096 // MIB} of the {cold_pages * 4096 // MIB} MiB cold part on "
           f"the tier after {scans} scans (limit {limit}: 1 to see it, {cold_epochs} of "
           f"cold_after, 2 more), {secs:.1f} s", json.dumps(st))
    hot_chunks = size // 10 // CHUNK
    r0 = st.get("refaults", 0)
    # A quarter of a minute: the hot set's refaults come at each scan (1 s), so 15 s holds
    # fifteen chances to see one. 256 MiB make 409 hot chunks: under 1% of them a minute
    # is at most one refault in the 15 s.
    time.sleep(15)
    st = (status_json(runtime) or {}).get("hc", {})
    per_min = (st.get("refaults", 0) - r0) * 4
    tap.ok(per_min < 0.01 * hot_chunks,
           f"hc: {per_min} refaults/min of {hot_chunks} hot chunks (limit 1%)", json.dumps(st))
    hot_present = e2elib.pagemap_counts(p.pid, addr, addr + hot)[0]
    tap.ok(hot_present >= 0.9 * hot // 4096,
           f"hc: the hot 10% stays resident ({hot_present * 4096 // MIB} of {hot // MIB} MiB)")
    stop_and_verify(tap, [("hc", p, report, size)])


def sleep_wake(tap, work, runtime):
    size = 128 * MIB
    ready, report = os.path.join(work, "s.ready"), os.path.join(work, "s.report")
    p = e2elib.start_in_cgroup(PARENT, "sleeper", f"--size 128M --work-ms 3000 "
                               f"--ready {ready} --report {report}")
    if not wait_for(lambda: os.path.exists(ready), 120, step=0.1):
        tap.bail("sleeper did not become ready")
    idle = wait_for(lambda: (status_json(runtime) or {}).get("sleeper", {}).get("state") == "idle"
                    and cgu("sleeper", "memory.current") < 0.1 * size, 60, step=0.25)
    tap.ok(bool(idle), "sleeper: idle and offloaded",
           json.dumps((status_json(runtime) or {}).get("sleeper")))
    st = (status_json(runtime) or {}).get("sleeper", {})
    tap.diag(f"sleeper: wake set {st.get('wake_set_chunks')} chunks")
    wakes0 = st.get("wakes", 0)
    p.send_signal(signal.SIGUSR1)
    wait_for(lambda: os.path.exists(report) and os.path.getsize(report) > 0, 120)
    with open(report) as f:
        r = json.loads(f.read())
    tap.ok(r.get("mismatches") == 0 and r.get("verified") == size,
           f"sleeper: all {size // MIB} MiB verified after wake ({r.get('wake_ms')} ms)",
           json.dumps(r))
    # pagetierd measures over 10 scan intervals after the prefetch, and the status keeps
    # the last finished window's figures until then: in a make test on 6.12 those of a
    # spurious wake just after the first offload (precision 0.07), read before this wake
    # was even counted. So: this wake counted and its prefetch applied (a new window
    # begins, no older one can end after it), then the figures that window leaves.
    sleeper = (lambda: (status_json(runtime) or {}).get("sleeper", {}))
    e2elib.wait_wake_applied(sleeper, wakes0, 40, step=0.25)
    st = sleeper()
    before = (st.get("prefetch_precision", -1), st.get("prefetch_recall", -1))
    # Figures equal to the older ones after the wait are judged as they are.
    def this_window():
        s = sleeper()
        now = (s.get("prefetch_precision", -1), s.get("prefetch_recall", -1))
        return now[0] >= 0 and now != before
    q = wait_for(this_window, 40, step=0.5) or sleeper().get("prefetch_precision", -1) >= 0
    st = sleeper()
    prec, rec = st.get("prefetch_precision", -1), st.get("prefetch_recall", -1)
    tap.ok(bool(q) and prec >= 0.9 and rec >= 0.9,
           f"sleeper: prefetch precision {prec:.2f}, recall {rec:.2f} (both >= 0.90)",
           json.dumps(st))
    p.send_signal(signal.SIGTERM)
    p.wait(30)


def critical(tap, work, runtime):
    crit_size, n_size = 192 * MIB, 256 * MIB
    procs = {}
    for name, size in (("crit", crit_size), ("n1", n_size), ("n2", n_size)):
        ready = os.path.join(work, f"{name}.ready")
        report = os.path.join(work, f"{name}.report")
        extra = "--hot-pct 50" if name != "crit" else "--work-ms 500"
        procs[name] = (e2elib.start_in_cgroup(PARENT, name, f"--size {size // MIB}M {extra} "
                                              f"--ready {ready} --report {report}"),
                       ready, report, size)
    if not wait_for(lambda: all(os.path.exists(v[1]) for v in procs.values()), 180, step=0.1):
        tap.bail("critical scenario: workloads did not become ready")
    st = (status_json(runtime) or {}).get("crit", {})
    def crit_low():
        with open(os.path.join(e2elib.CG, PARENT, "crit", "memory.low")) as f:
            return f.read().strip()
    # Set at the first scan interval that has sampled it.
    wait_for(lambda: crit_low() == "max", 10, step=0.1)
    low = crit_low()
    tap.ok(low == "max", f"crit: pagetierd set memory.low ({low})", json.dumps(st))
    # Squeeze: the parent's limit is 200 MiB below what the three use.
    total = sum(cgu(n, "memory.current") for n in ("crit", "n1", "n2", "hc", "sleeper")
                if os.path.isdir(os.path.join(e2elib.CG, PARENT, n)))
    limit = total - 200 * MIB
    with open(os.path.join(e2elib.CG, PARENT, "memory.max"), "w") as f:
        f.write(str(limit))
    time.sleep(5)
    crit_swap = cgu("crit", "memory.swap.current")
    n_swap = cgu("n1", "memory.swap.current") + cgu("n2", "memory.swap.current")
    tap.ok(crit_swap == 0 and cgk("crit", "anon") >= 0.99 * crit_size,
           f"crit: nothing offloaded while its neighbours are squeezed (crit swap "
           f"{crit_swap // MIB} MiB, anon {cgk('crit', 'anon') // MIB} MiB; "
           f"neighbours swap {n_swap // MIB} MiB)")
    tap.ok(n_swap > 0, f"the neighbours took the squeeze ({n_swap // MIB} MiB swapped)")
    with open(os.path.join(e2elib.CG, PARENT, "memory.max"), "w") as f:
        f.write("max")
    procs["crit"][0].send_signal(signal.SIGUSR1)
    wait_for(lambda: os.path.exists(procs["crit"][2]) and os.path.getsize(procs["crit"][2]), 60)
    with open(procs["crit"][2]) as f:
        r = json.loads(f.read())
    tap.ok(r.get("mismatches") == 0 and r.get("verified") == crit_size,
           f"crit: every byte intact ({r.get('wake_ms')} ms to check, never left RAM)",
           json.dumps(r))
    stop_and_verify(tap, [(name, procs[name][0], procs[name][2], procs[name][3])
                          for name in ("n1", "n2")])
    procs["crit"][0].send_signal(signal.SIGTERM)
    procs["crit"][0].wait(30)


def main():
    tap = Tap()
    work = tempfile.mkdtemp(prefix="pt-hot-")
    daemon = None
    tier = None
    print("TAP version 13", flush=True)
    try:
        if not os.path.exists("/dev/pagetier"):
            tap.bail("/dev/pagetier missing: pagetier.ko is not loaded")
        tier = e2elib.create_tier(tap, "/dev/nvme0n1")
        ids = e2elib.setup_cgroups(PARENT, NAMES)
        conf = os.path.join(work, "etc")
        write_config(conf)
        runtime = os.path.join(conf, "run")
        log = open(os.path.join(work, "pagetierd.log"), "w")
        daemon = subprocess.Popen([os.path.join(BIN, "pagetierd"), "--config-dir", conf],
                                  stdout=log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: status_json(runtime) is not None, 10):
            tap.bail("pagetierd did not start")
        with open(os.path.join(work, "pagetierd.log")) as f:
            dlog = f.read()
        tap.ok("pagetier.ko accessed-bit scanner" in dlog,
               "pagetierd uses the module's accessed-bit scanner", dlog)
        hot_cold(tap, work, runtime, ids)
        sleep_wake(tap, work, runtime)
        critical(tap, work, runtime)
    finally:
        if daemon:
            daemon.terminate()
            rc = daemon.wait(20)
            tap.ok(rc == 0, "pagetierd stops cleanly", f"exit {rc}")
            with open(os.path.join(work, "pagetierd.log")) as f:
                tap.diag("pagetierd log:\n" + f.read())
        for n in NAMES:
            run(["sh", "-c", f"cat {e2elib.CG}/{PARENT}/{n}/cgroup.procs 2>/dev/null | "
                 "xargs -r kill -9"])
        time.sleep(1)
        if tier:
            e2elib.destroy_tier(tap, tier)
        e2elib.remove_cgroups(PARENT, NAMES)
    print(f"1..{tap.n}")
    print(f"# hotness: {tap.n - tap.failed} passed, {tap.failed} failed", flush=True)
    sys.exit(1 if tap.failed else 0)


if __name__ == "__main__":
    main()
