#!/usr/bin/env python3
"""Wake-latency benchmark, run inside the VM by bench/wake/run.sh (not a test).

Two containers with the same workload (SIZE of memory, all of it used before sleeping) go
idle and are offloaded to the tier by pagetierd; then each is woken and times how long it
takes to touch and check all its memory: one with prefetch (the daemon's wake set back
with MADV_WILLNEED as soon as the wake is seen), one with prefetch off (demand paging).
Rounds alternate the order. Prints a table of the medians and their ratio.
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "e2e"))
import e2elib  # noqa: E402
from e2elib import BIN, MIB, Tap, status_json, wait_for  # noqa: E402

PARENT = "pt-bench"
MODES = {"prefetch": "yes", "demand": "no"}


def main():
    size_mb = int(os.environ.get("SIZE_MB", "256"))
    rounds = int(os.environ.get("ROUNDS", "3"))
    tap = Tap()
    work = tempfile.mkdtemp(prefix="pt-bench-")
    tier = e2elib.create_tier(tap, "/dev/nvme0n1")
    e2elib.setup_cgroups(PARENT, list(MODES))
    conf = os.path.join(work, "etc")
    os.makedirs(os.path.join(conf, "containers.d"))
    with open(os.path.join(conf, "pagetierd.conf"), "w") as f:
        f.write(f"[daemon]\nruntime_dir = {conf}/run\npoll_interval = 200ms\n"
                "scan_interval = 1s\n")
    with open(os.path.join(conf, "containers.d", "bench.conf"), "w") as f:
        for name, pf in MODES.items():
            f.write(f"[{name}]\nmatch_cgroup = /{PARENT}/{name}\nidle_threshold = 2s\n"
                    f"prefetch = {pf}\n\n")
    e2elib.fix_perms(conf)
    runtime = os.path.join(conf, "run")
    daemon = subprocess.Popen([os.path.join(BIN, "pagetierd"), "--config-dir", conf],
                              stdout=open(os.path.join(work, "d.log"), "w"),
                              stderr=subprocess.STDOUT)
    wait_for(lambda: status_json(runtime) is not None, 10)
    results = {m: [] for m in MODES}
    try:
        for rnd in range(rounds):
            order = list(MODES) if rnd % 2 == 0 else list(reversed(list(MODES)))
            procs = {}
            for m in MODES:
                ready = os.path.join(work, f"{m}.{rnd}.ready")
                report = os.path.join(work, f"{m}.{rnd}.report")
                procs[m] = (e2elib.start_in_cgroup(PARENT, m, f"--size {size_mb}M --work-ms 3000 "
                                                   f"--ready {ready} --report {report}"),
                            ready, report)
            wait_for(lambda: all(os.path.exists(p[1]) for p in procs.values()), 180, step=0.1)
            # Both idle, offloaded and out of RAM before any wake.
            wait_for(lambda: all((status_json(runtime) or {}).get(m, {}).get("state") == "idle"
                                 and e2elib.cg_u64(m, "memory.current", PARENT) < 8 * MIB
                                 for m in MODES), 120, step=0.25)
            for m in order:
                procs[m][0].send_signal(signal.SIGUSR1)
                wait_for(lambda: os.path.exists(procs[m][2]) and os.path.getsize(procs[m][2]),
                         300, step=0.05)
                with open(procs[m][2]) as f:
                    r = json.loads(f.read())
                if r.get("mismatches") != 0:
                    print(f"# {m}: {r['mismatches']} mismatches!", flush=True)
                results[m].append(r["wake_ms"])
                print(f"# round {rnd + 1} {m}: wake {r['wake_ms']:.0f} ms", flush=True)
                time.sleep(1)
            for p in procs.values():
                p[0].send_signal(signal.SIGTERM)
                p[0].wait(30)
    finally:
        daemon.terminate()
        daemon.wait(20)
        e2elib.destroy_tier(tap, tier)
        e2elib.remove_cgroups(PARENT, list(MODES))
    med = {m: statistics.median(v) for m, v in results.items() if v}
    print(f"\n| wake of {size_mb} MiB (median of {rounds}) | ms | all rounds (ms) |")
    print("|---|---|---|")
    for m in MODES:
        print(f"| {m} | {med.get(m, 0):.0f} | {', '.join(f'{x:.0f}' for x in results[m])} |")
    if med.get("prefetch"):
        print(f"\ndemand / prefetch: {med['demand'] / med['prefetch']:.2f}x")


if __name__ == "__main__":
    main()
