#!/usr/bin/env python3
"""In the guest of bench/preload/trim.sh: malloc_trim at idle. One pagetierd, a tier over
/dev/nvme0n1 as the only swap, and one opted-in cgroup per case (fresh tier counters each),
run one after the other. In each, trim_bench (under libpagetier.so, registered with
pagetierd) fills MIB MiB of heap in 4-60 KiB blocks, frees 9 in 10, and goes idle; pagetierd
sees it idle (idle_threshold 2s), asks it to malloc_trim(0) and offloads it. Once the offload
has settled (swap and tier counters unchanged for SETTLE s): bytes written to the tier for
the cgroup, pages on the tier, memory.swap.current, what is resident, and the ring's request
counters (did the daemon send the trim; did the library run it). Then, for the sleeping
cases, the process makes one allocator call (SIGUSR1) and the same figures again.

Cases:
  ignored   sleep,    PAGETIER_PRELOAD_NO_TRIM=1 (the request is acknowledged, not run)
  honoured  sleep,    the library's default
  selftrim  trim_bench calls malloc_trim(0) itself before idling, NO_TRIM=1 (the saving a
            trim served before the offload would bring)
  timer     a malloc/free every second while idle (a server's timer), the library's default

Results: $PT_OUT/results.json, RESULT lines in $PT_OUT/results.txt.
    trim-guest.py TRIM_BENCH [MIB] [CASES]
"""
import json
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

PARENT = "pt-trim"
CASES = {  # name: (trim_bench mode, library env)
    "ignored": ("sleep", {"PAGETIER_PRELOAD_NO_TRIM": 1}),
    "honoured": ("sleep", {}),
    "selftrim": ("selftrim", {"PAGETIER_PRELOAD_NO_TRIM": 1}),
    "timer": ("timer", {}),
}
SETTLE = 4.0
OFFLOAD_TIMEOUT = 240


def snapshot(runtime, name, cgid, pid, ring=True):
    """The cgroup's figures. @ring: also the process's ring header, read from its memory
    (which swaps those pages in: not while waiting for the offload)."""
    st = (B.status_json(runtime) or {}).get(name, {})
    t = B.tier_stats(cgid)
    return {
        "t": time.monotonic(),
        "tier_bytes_written": t.get("bytes_written", 0),
        "tier_pages_stored": t.get("pages_stored", 0),
        "tier_write_ios": t.get("write_ios", 0),
        "swap_current": int(B.cg_file(PARENT, name, "memory.swap.current")),
        "memory_current": int(B.cg_file(PARENT, name, "memory.current")),
        "anon": B.cg_stat(PARENT, name, "anon"),
        "proc": B.proc_status(pid),
        "ring": B.ring_state(pid) if ring else None,
        "state": st.get("state"),
        "offloads": st.get("offloads", 0),
        "wakes": st.get("wakes", 0),
        "wake_source": st.get("wake_source"),
        "preload_records": st.get("preload_records", 0),
        "offload_requested_bytes": st.get("offload_requested_bytes", 0),
    }


def wait_settled(runtime, name, cgid, pid, timeout):
    """Until the cgroup has been offloaded at least once and swap and tier writes have not
    moved for SETTLE seconds; returns the last snapshot (and whether it settled)."""
    end = time.monotonic() + timeout
    last = snapshot(runtime, name, cgid, pid, False)
    since = time.monotonic()
    while time.monotonic() < end:
        time.sleep(0.5)
        s = snapshot(runtime, name, cgid, pid, False)
        key = lambda x: (x["swap_current"], x["tier_bytes_written"])  # noqa: E731
        if key(s) != key(last):
            since = time.monotonic()
        last = s
        if s["offloads"] >= 1 and s["tier_bytes_written"] > 0 and \
                time.monotonic() - since >= SETTLE:
            return snapshot(runtime, name, cgid, pid), True
    return snapshot(runtime, name, cgid, pid), False


def mib(x):
    return f"{x / (1 << 20):.1f} MiB"


def main():
    bench = sys.argv[1]
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    cases = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[3] else list(CASES)
    out = os.environ.get("PT_OUT", "/tmp")
    work = tempfile.mkdtemp(prefix="pt-trim-")
    results = {"kernel": os.uname().release, "cpus": os.cpu_count(), "mib": size,
               "cases": {}}
    daemon = tier = None
    rc = 0
    try:
        B.insmod()
        tier = B.create_tier()
        B.log(f"tier {tier} over /dev/nvme0n1, the only swap device")
        ids = B.e2elib.setup_cgroups(PARENT, cases)
        daemon, runtime, logpath = B.start_daemon(work, PARENT, cases, "2s",
                                                  log_level="debug")
        B.log("pagetierd up, tracking " + ", ".join(cases))
        for name in cases:
            mode, extra = CASES[name]
            ready = os.path.join(work, f"{name}.ready")
            env = B.preload_env(runtime, **extra)
            t0 = time.monotonic()
            p = B.start_in_cgroup(PARENT, name, [bench, ready, str(size), "10", mode, "1000"],
                                  env)
            if not B.wait_for(lambda: os.path.exists(ready) and
                              open(ready).read().endswith("\n"), 600, 0.5):
                raise RuntimeError(f"{name}: trim_bench did not get ready")
            f = open(ready).read().split()
            heap = dict(pid=int(f[0]), arena=int(f[1]), in_use=int(f[2]), free=int(f[3]),
                        blocks=int(f[4]), kept=int(f[5]), allocated=int(f[6]),
                        kept_bytes=int(f[7]))
            B.log(f"{name}: ready after {time.monotonic() - t0:.1f} s: heap {mib(heap['arena'])}"
                  f", in use {mib(heap['in_use'])}, free {mib(heap['free'])}")
            before = snapshot(runtime, name, ids[name], p.pid, False)
            after, settled = wait_settled(runtime, name, ids[name], p.pid,
                                          90 if mode == "timer" else OFFLOAD_TIMEOUT)
            B.log(f"{name}: {'settled' if settled else 'NOT settled'} "
                  f"{after['t'] - before['t']:.1f} s after ready: written "
                  f"{mib(after['tier_bytes_written'])}, on tier "
                  f"{mib(after['tier_pages_stored'] * 4096)}, swap {mib(after['swap_current'])},"
                  f" memory.current {mib(after['memory_current'])}, ring {after['ring']}")
            case = {"mode": mode, "env": extra, "heap": heap, "before": before,
                    "after": after, "settled": settled}
            if mode != "timer":
                os.kill(p.pid, signal.SIGUSR1)
                B.wait_for(lambda: os.path.exists(ready + ".poke"), 30, 0.2)
                time.sleep(5)
                case["after_call"] = snapshot(runtime, name, ids[name], p.pid)
                B.log(f"{name}: 5 s after one allocator call: ring "
                      f"{case['after_call']['ring']}, on tier "
                      f"{mib(case['after_call']['tier_pages_stored'] * 4096)}, state "
                      f"{case['after_call']['state']} (wakes {case['after_call']['wakes']}, "
                      f"{case['after_call']['wake_source']})")
            p.terminate()
            p.wait(30)
            results["cases"][name] = case
            time.sleep(1)
        time.sleep(0.5)
        B.stop_daemon(daemon)
        daemon = None
        with open(logpath) as fh:
            dlog = fh.read()
        results["daemon_log_trim_lines"] = [l for l in dlog.splitlines()
                                            if "malloc_trim" in l or "idle for" in l
                                            or "wake detected" in l]
        shutil.copy(logpath, os.path.join(out, "pagetierd.log"))
    except Exception as e:  # noqa: BLE001
        B.log(f"FAILED: {e}")
        rc = 1
    finally:
        B.teardown(daemon, PARENT, cases, tier, work)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(out, "results.txt"), "w") as f:
        for name, c in results["cases"].items():
            a, r = c["after"], c["after"]["ring"] or {}
            line = (f"RESULT case={name} settled={int(c['settled'])} "
                    f"heap_arena={c['heap']['arena']} heap_free={c['heap']['free']} "
                    f"written={a['tier_bytes_written']} pages_stored={a['tier_pages_stored']} "
                    f"swap_current={a['swap_current']} memory_current={a['memory_current']} "
                    f"rss_anon={a['proc'].get('RssAnon', -1)} "
                    f"offload_requested={a['offload_requested_bytes']} "
                    f"trim_seq={r.get('trim_seq', -1)} trim_done={r.get('trim_done', -1)} "
                    f"trims={r.get('trims', -1)} state={a['state']} offloads={a['offloads']} "
                    f"wakes={a['wakes'] - c['before']['wakes']}")
            if "after_call" in c:
                b, rb = c["after_call"], c["after_call"]["ring"] or {}
                line += (f" call_trims={rb.get('trims', -1)} "
                         f"call_trim_done={rb.get('trim_done', -1)} "
                         f"call_pages_stored={b['tier_pages_stored']} "
                         f"call_swap_current={b['swap_current']} "
                         f"call_rss_anon={b['proc'].get('RssAnon', -1)} "
                         f"call_state={b['state']} "
                         f"call_wakes={b['wakes'] - c['before']['wakes']} "
                         f"call_wake_source={(b['wake_source'] or '-').replace(' ', '_')}")
            print(line, file=f)
        for l in results.get("daemon_log_trim_lines", []):
            print(f"# log {l}", file=f)
    with open(os.path.join(out, "guest.rc"), "w") as f:
        f.write(f"{rc}\n")
    sys.exit(rc)


if __name__ == "__main__":
    main()
