#!/usr/bin/env python3
"""In the guest of bench/preload/daemon_cpu.sh: pagetierd's CPU with preloaded processes.
pagetierd runs with NCG opted-in cgroups; phases of WINDOW seconds each (after WARMUP
seconds), measuring the daemon's utime+stime (/proc/PID/stat: all threads, and its main
thread, which runs the event loop and drains the preload rings, apart from the worker
threads, which scan and move memory) as % of one CPU. PHASES (default
idle,plain,preload,plain,preload) of:

  idle      no process in the cgroups
  plain     NPROC churn processes spread over the cgroups, without the library
  preload   the same under LD_PRELOAD=libpagetier.so, registered with pagetierd

Also, summed over the containers from pagetierctl --json status: records pagetierd took
(preload_records), BPF events (fault, wakeup) and access scans; the CPU time the
workload got (cpu.stat of the cgroups); records produced and
dropped by the library (ring full) and allocation units, read from each process's ring header;
and pagetierd's own totals, logged when it stops (taken, rejected, throttled, dropped).

Results: $PT_OUT/results.json, RESULT lines in $PT_OUT/results.txt.
    daemon_cpu-guest.py CHURN [NPROC] [WINDOW] [NCG] [WARMUP] [PHASES]
"""
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

PARENT = "pt-cpu"


def counters(runtime, names):
    """Summed over the containers (pagetierctl --json status): preload records taken, BPF
    events by kind, access scans."""
    st = B.status_json(runtime) or {}
    out = {"records": 0, "scans": 0, "fault": 0, "swapin": 0, "wakeup": 0, "net": 0}
    for n in names:
        c = st.get(n, {})
        out["records"] += c.get("preload_records", 0)
        out["scans"] += c.get("scans", 0)
        for k, v in c.get("bpf_events", {}).items():
            out[k] = out.get(k, 0) + v
    # CPU the workload itself got (cpu.stat of the cgroups).
    out["usage_usec"] = sum(int(l.split()[1]) for n in names
                            for l in B.cg_file(PARENT, n, "cpu.stat").splitlines()
                            if l.startswith("usage_usec "))
    return out


def rings(pids):
    out = {"reserve": 0, "dropped": 0, "alloc_units": 0, "registered": 0}
    for pid in pids:
        r = B.ring_state(pid)
        if r:
            out["registered"] += 1
            for k in ("reserve", "dropped", "alloc_units"):
                out[k] += r[k]
    return out


def main():
    churn = sys.argv[1]
    nproc = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    window = float(sys.argv[3]) if len(sys.argv) > 3 else 60
    ncg = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    warmup = float(sys.argv[5]) if len(sys.argv) > 5 else 10
    kinds = (sys.argv[6] if len(sys.argv) > 6 else "idle,plain,preload,plain,preload").split(",")
    # Repeated kinds are numbered: plain, preload, plain-2, preload-2, ...
    phases = [k if kinds[:i].count(k) == 0 else f"{k}-{kinds[:i].count(k) + 1}"
              for i, k in enumerate(kinds)]
    out = os.environ.get("PT_OUT", "/tmp")
    names = [f"c{i}" for i in range(ncg)]
    work = tempfile.mkdtemp(prefix="pt-cpu-")
    hz = os.sysconf("SC_CLK_TCK")
    res = {"kernel": os.uname().release, "cpus": os.cpu_count(), "nproc": nproc,
           "window_s": window, "cgroups": ncg, "phases": {}}
    daemon = tier = None
    procs = []
    rc = 0
    try:
        B.insmod()
        tier = B.create_tier()
        B.e2elib.setup_cgroups(PARENT, names)
        # Idle threshold longer than the run: busy or empty, nothing is offloaded.
        daemon, runtime, logpath = B.start_daemon(work, PARENT, names, "10m")
        B.log(f"pagetierd {daemon.pid} up, {ncg} opted-in cgroups, tier {tier}")
        for n, phase in enumerate(phases):
            kind = phase.split("-")[0]
            if kind != "idle":
                env = B.preload_env(runtime) if kind == "preload" else \
                    {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
                procs = [B.start_in_cgroup(PARENT, names[i % ncg], [churn], env)
                         for i in range(nproc)]
            time.sleep(warmup)
            alive = sum(p.poll() is None for p in procs)
            pids = [p.pid for p in procs]
            t0, c0 = time.monotonic(), B.cpu_ticks(daemon.pid)
            m0 = B.cpu_ticks(daemon.pid, daemon.pid)
            r0, g0 = counters(runtime, names), rings(pids)
            time.sleep(window)
            t1, c1 = time.monotonic(), B.cpu_ticks(daemon.pid)
            m1 = B.cpu_ticks(daemon.pid, daemon.pid)
            r1, g1 = counters(runtime, names), rings(pids)
            secs = t1 - t0
            ph = {"procs_alive": alive, "seconds": secs, "daemon_cpu_s": (c1 - c0) / hz,
                  "daemon_cpu_pct": 100.0 * (c1 - c0) / hz / secs,
                  "main_thread_cpu_pct": 100.0 * (m1 - m0) / hz / secs,
                  "workers_cpu_pct": 100.0 * ((c1 - c0) - (m1 - m0)) / hz / secs,
                  "records_taken": r1["records"] - r0["records"],
                  "bpf_fault_events": r1["fault"] - r0["fault"],
                  "bpf_wakeup_events": r1["wakeup"] - r0["wakeup"],
                  "scans": r1["scans"] - r0["scans"],
                  "workload_cpu_s": (r1["usage_usec"] - r0["usage_usec"]) / 1e6,
                  "rings_registered": g1["registered"],
                  "records_produced": g1["reserve"] - g0["reserve"],
                  "records_dropped_by_lib": g1["dropped"] - g0["dropped"],
                  "alloc_units": g1["alloc_units"] - g0["alloc_units"]}
            with open("/proc/loadavg") as f:
                ph["loadavg"] = f.read().split()[0]
            res["phases"][phase] = ph
            B.log(f"{phase}: {json.dumps(ph)}")
            if n < len(phases) - 1:
                for p in procs:
                    p.terminate()
                for p in procs:
                    p.wait(30)
                procs = []
                time.sleep(2)
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)
        procs = []
        time.sleep(1)
        B.stop_daemon(daemon)
        daemon = None
        with open(logpath) as f:
            res["daemon_log_summary"] = [l for l in f.read().splitlines()
                                         if "records:" in l]
        shutil.copy(logpath, os.path.join(out, "pagetierd.log"))
    except Exception as e:  # noqa: BLE001
        B.log(f"FAILED: {e}")
        rc = 1
    finally:
        for p in procs:
            p.kill()
            p.wait()
        B.teardown(daemon, PARENT, names, tier, work)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(out, "results.txt"), "w") as f:
        for name, ph in res["phases"].items():
            print(f"RESULT phase={name} " + " ".join(f"{k}={v:.3f}" if isinstance(v, float)
                                                     else f"{k}={v}" for k, v in ph.items()),
                  file=f)
        for l in res.get("daemon_log_summary", []):
            print(f"# log {l}", file=f)
    with open(os.path.join(out, "guest.rc"), "w") as f:
        f.write(f"{rc}\n")
    sys.exit(rc)


if __name__ == "__main__":
    main()
