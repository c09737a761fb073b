#!/usr/bin/env python3
"""Where the host's two cores went while a guest woke: a diagnosis of the emulator itself.

  host_cpu.py record OUT   samples the CPU of every thread of the guest whose run
                           directory is OUT (its drive OUT/nvme.img) until it exits,
                           into OUT/host-cpu.jsonl
  host_cpu.py report OUT   for each wake the guest marked (OUT/mark-WORKLOAD-MODE, written
                           by apps.py at the wake's start; the file's time is the host's),
                           over the first request and the first 5 s: the vCPU threads' time
                           on a host CPU and their time runnable but not running (the
                           guest's stolen time, which TCG does not tell the guest), and the
                           CPU of QEMU's other threads (its main loop, the drive's and 9p's
                           worker threads)

Why: under TCG a guest's task "on a CPU" is on a vCPU thread, which the host can deschedule
for QEMU's own I/O work (the emulated NVMe's reads with aio=threads, the 9p root file
system) on a 2-core host. The guest counts that time as the task's own. bench/wake's
README (2026-11-29, night) found PostgreSQL's backend on a CPU as long with the prefetch as
without it, yet its first request twice as slow; this says how much of the difference is
the emulator's I/O taking the vCPUs' host cores. Per-thread times from
/proc/PID/task/TID/schedstat (ns on a CPU, ns waiting on a run queue); the vCPU threads'
ids from QMP (query-cpus-fast).
"""
import glob
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "vm"))
from qmp_diag import qmp_connect  # noqa: E402

PERIOD_S = 0.05


def find_qemu(out):
    """The pid of the qemu whose drive is OUT/nvme.img, once it runs (the guest may wait
    for another's VM lock first: the caller stops this once its guest has ended)."""
    needle = f"file={out}/nvme.img,".encode()
    while True:
        for p in glob.glob("/proc/[0-9]*/cmdline"):
            try:
                with open(p, "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if needle in cmd and cmd.split(b"\0", 1)[0].endswith(b"qemu-system-x86_64"):
                return int(p.split("/")[2])
        time.sleep(0.2)


def vcpu_threads(qmp_path, wait_s=60):
    """The vCPU thread ids, asked of QEMU through QMP (its socket may not be up yet)."""
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        try:
            r = qmp_connect(qmp_path)("query-cpus-fast")
            return [c["thread-id"] for c in r.get("return", [])]
        except (OSError, ValueError):
            time.sleep(0.5)
    return []


def read_threads(pid):
    """{tid: [ns on a CPU, ns runnable and waiting]} of every thread of @pid."""
    t = {}
    for d in glob.glob(f"/proc/{pid}/task/[0-9]*"):
        try:
            with open(d + "/schedstat") as f:
                on, wait, _ = f.read().split()
        except (OSError, ValueError):
            continue
        t[int(d.rsplit("/", 1)[1])] = [int(on), int(wait)]
    return t


def record(out):
    pid = find_qemu(out)
    vcpus = vcpu_threads(os.path.join(out, "qmp.sock"))
    with open(os.path.join(out, "host-cpu.jsonl"), "w") as f:
        f.write(json.dumps({"pid": pid, "vcpus": vcpus}) + "\n")
        while os.path.exists(f"/proc/{pid}"):
            f.write(json.dumps([round(time.time(), 4), read_threads(pid)]) + "\n")
            time.sleep(PERIOD_S)
    return 0


def at(samples, t, tid, k):
    """Thread @tid's counter @k at host time @t, linear between the samples around it."""
    prev = None
    for ts, th in samples:
        v = th.get(str(tid), [0, 0])[k]
        if ts >= t:
            if prev is None or ts == prev[0]:
                return v
            return prev[1] + (v - prev[1]) * (t - prev[0]) / (ts - prev[0])
        prev = (ts, v)
    return prev[1] if prev else 0


def window(samples, vcpus, main_tid, t0, t1):
    tids = set()
    for _, th in samples:
        tids.update(int(x) for x in th)
    d = {tid: [at(samples, t1, tid, k) - at(samples, t0, tid, k) for k in (0, 1)]
         for tid in tids}
    span = t1 - t0
    vc_on = sum(d[t][0] for t in vcpus if t in d) / 1e9
    vc_wait = sum(d[t][1] for t in vcpus if t in d) / 1e9
    main = d.get(main_tid, [0, 0])[0] / 1e9
    others = sum(v[0] for t, v in d.items() if t not in vcpus and t != main_tid) / 1e9
    return {"s": round(span, 3), "vcpu_on_s": round(vc_on, 3),
            "vcpu_stolen_s": round(vc_wait, 3), "qemu_main_s": round(main, 3),
            "qemu_workers_s": round(others, 3),
            "stolen_pct": round(100 * vc_wait / max(1e-9, vc_on + vc_wait), 1)}


def report(out):
    path = os.path.join(out, "host-cpu.jsonl")
    if not os.path.exists(path):
        print(f"host_cpu: no samples ({path}): the guest's QEMU was not found", file=sys.stderr)
        return 1
    samples = []
    with open(path) as f:
        head = json.loads(f.readline())
        for line in f:
            try:
                samples.append(json.loads(line))
            except ValueError:
                pass	# the last line, cut when the sampler was stopped
    res = {}
    wake = os.path.join(out, "wake-apps.json")
    figs = {}
    if os.path.exists(wake):
        with open(wake) as f:
            for w, modes in json.load(f).get("workloads", {}).items():
                for m, fig in modes.items():
                    if isinstance(fig, dict):
                        figs[(w, m)] = fig
    for mark in sorted(glob.glob(os.path.join(out, "mark-*"))):
        w, m = os.path.basename(mark)[5:].rsplit("-", 1)
        t0 = os.stat(mark).st_mtime_ns / 1e9
        first = figs.get((w, m), {}).get("first_ms")
        r = {"5s": window(samples, head["vcpus"], head["pid"], t0, t0 + 5)}
        if first:
            r["first_request"] = window(samples, head["vcpus"], head["pid"], t0,
                                        t0 + first / 1000)
            r["first_ms"] = first
        res[f"{w} {m}"] = r
        for k in ("first_request", "5s"):
            if k in r:
                x = r[k]
                print(f"{w:8} {m:9} {k:13} {x['s']:6.2f} s: vCPUs on a host CPU "
                      f"{x['vcpu_on_s']:.2f} s, stolen {x['vcpu_stolen_s']:.2f} s "
                      f"({x['stolen_pct']}%); QEMU main {x['qemu_main_s']:.2f} s, "
                      f"workers {x['qemu_workers_s']:.2f} s")
    with open(os.path.join(out, "host-cpu.json"), "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("record", "report"):
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(record(sys.argv[2]) if sys.argv[1] == "record" else report(sys.argv[2]))
