#!/usr/bin/env python3
"""End-to-end: opted-in containers go idle, their memory moves to the pagetier tier, and
comes back verified byte for byte when they wake; a container that did not opt in is never
touched. Runs as root inside the test VM (tests/vm/guest-suite.sh); prints TAP.

  idle_wake.py [--demo] [--out DIR] [--size 256M] [--backing /dev/nvme0n1]
               [--sample-reader pread|io_uring]

--demo prints a report for people instead of only TAP diagnostics. --sample-reader io_uring
runs pagetierd with its batched reader (liburing, sample_batch.h) and checks from its
metrics that every tick's samples came through it.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import e2elib
from e2elib import (BIN, CG, MIB, Tap, ctl, run, status_json, tier_bytes_by_cgroup,
                    tier_cgroup_stats, wait_for)

PARENT = "pt-e2e"
OPTED_IN = ["alpha", "beta"]
LEFT_OUT = "gamma"


def cg_read(name, f):
    return e2elib.cg_read(name, f, PARENT)


def cg_key(name, f, key):
    return e2elib.cg_key(name, f, key, PARENT)


def cg_u64(name, f):
    return e2elib.cg_u64(name, f, PARENT)


def write_config(d, idle, reader, port):
    os.makedirs(os.path.join(d, "containers.d"))
    with open(os.path.join(d, "pagetierd.conf"), "w") as f:
        f.write(f"[daemon]\ncgroup_root = {CG}\nruntime_dir = {d}/run\n"
                "poll_interval = 200ms\nlog_level = info\n"
                f"sample_reader = {reader}\nmetrics_listen = 127.0.0.1:{port}\n")
    with open(os.path.join(d, "containers.d", "e2e.conf"), "w") as f:
        for name in OPTED_IN:
            f.write(f"[{name}]\nmatch_cgroup = /{PARENT}/{name}\nclass = besteffort\n"
                    f"idle_threshold = {idle}\nprefetch = yes\n\n")
    e2elib.fix_perms(d)


def check_bad_input(tap, backing, work):
    """Bad input: a clear message, a non-zero exit, and no change."""
    def tiers():
        return sorted(x for x in os.listdir("/sys/block") if x.startswith("pagetier"))

    before = tiers()
    r = ctl("tier", "create", "/dev/nonexistent-nvme")
    tap.ok(r.returncode != 0 and "No such file" in r.stderr and tiers() == before,
           "tier create over a missing device fails clearly", r.stderr)

    r = ctl("tier", "create", backing)
    tap.ok(r.returncode != 0 and "in use" in r.stderr and tiers() == before,
           "a second tier over the same device is refused", r.stderr)

    img = os.path.join(work, "mounted.img")
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt)
    loop = None
    try:
        with open(img, "wb") as f:
            f.truncate(32 * MIB)
        loop = run(["losetup", "-f", "--show", img], check=True).stdout.strip()
        run(["mkfs.ext4", "-q", loop], check=True)
        run(["mount", loop, mnt], check=True)
        r = ctl("tier", "create", loop)
        tap.ok(r.returncode != 0 and "mounted" in r.stderr and tiers() == before,
               "tier create over a mounted device is refused", r.stderr)
    except RuntimeError as e:
        tap.ok(False, "tier create over a mounted device is refused", e)
    finally:
        run(["umount", mnt])
        if loop:
            run(["losetup", "-d", loop])

    bad = os.path.join(work, "badconf")
    os.makedirs(os.path.join(bad, "containers.d"))
    with open(os.path.join(bad, "containers.d", "bad.conf"), "w") as f:
        f.write("[web]\nmatch_cgroup = /x\nclass = urgent\n")
    r = run([os.path.join(BIN, "pagetierd"), "--check-config", "--config-dir", bad])
    tap.ok(r.returncode != 0 and "bad.conf:3: class must be critical or besteffort" in r.stderr,
           "a malformed config file is rejected with file and line", r.stderr)


def check_sample_reader(tap, reader, port, log_path):
    """The tick samples came through the reader asked for: with io_uring, every one of them
    from a batched read (the files kept open), and no fall-back to pread."""
    m = e2elib.scrape(port)
    taken = e2elib.metric(m, "pagetier_samples_total") or 0
    batches = e2elib.metric(m, "pagetier_sample_batches_total")
    batched = e2elib.metric(m, "pagetier_samples_batched_total")
    with open(log_path) as f:
        fell_back = [l for l in f if "sample_reader = io_uring" in l and "with pread" in l]
    if reader == "io_uring":
        tap.ok(taken > 0 and batches and batched == taken and not fell_back,
               f"sample_reader = io_uring: {batched:.0f} of {taken:.0f} tick samples from "
               f"{batches:.0f} batched reads, no fall-back to pread",
               "".join(fell_back) or m[:2000])
    else:
        tap.ok(taken > 0 and batches == 0 and batched == 0,
               f"sample_reader = pread: {taken:.0f} tick samples, none batched")


def start_workload(name, size, work):
    ready = os.path.join(work, f"{name}.ready")
    report = os.path.join(work, f"{name}.report")
    p = e2elib.start_in_cgroup(PARENT, name, f"--size {size} --work-ms 1500 "
                               f"--ready {ready} --report {report}")
    return {"proc": p, "ready": ready, "report": report}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--demo", action="store_true")
    ap.add_argument("--size", default="256M")
    ap.add_argument("--backing", default="/dev/nvme0n1")
    ap.add_argument("--idle", default="2s")
    ap.add_argument("--sample-reader", default="pread", choices=["pread", "io_uring"])
    args = ap.parse_args()
    size_bytes = int(args.size[:-1]) * MIB if args.size.endswith("M") else int(args.size)

    tap = Tap()
    work = tempfile.mkdtemp(prefix="pt-e2e-")
    daemon = None
    loads = {}
    tier_dev = None
    swapped_on = False
    print("TAP version 13", flush=True)
    try:
        if not os.path.exists("/dev/pagetier"):
            tap.bail("/dev/pagetier missing: pagetier.ko is not loaded")
        if not os.path.exists(args.backing):
            tap.bail(f"{args.backing} missing: the VM has no emulated NVMe drive")

        # The tier: /dev/pagetier0 over the NVMe namespace, as the only swap device.
        r = ctl("--json", "tier", "create", args.backing)
        if r.returncode != 0:
            tap.bail(f"tier create failed: {r.stderr.strip()}")
        tier = json.loads(r.stdout)
        tier_dev = tier["device"]
        tap.ok(os.path.exists(tier_dev), f"tier {tier_dev} created over {args.backing}")
        run(["mkswap", tier_dev], check=True)
        run(["swapon", "--discard=pages", "-p", "32767", tier_dev], check=True)
        swapped_on = True
        with open("/proc/swaps") as f:
            swaps = f.read()
        tap.ok(os.path.basename(tier_dev) in swaps, "the kernel swaps to the tier", swaps)

        check_bad_input(tap, args.backing, work)

        # cgroups: three containers under one parent, memory and cpu controllers on.
        ids = e2elib.setup_cgroups(PARENT, OPTED_IN + [LEFT_OUT])

        conf = os.path.join(work, "etc")
        port = e2elib.free_port()
        write_config(conf, args.idle, args.sample_reader, port)
        runtime = os.path.join(conf, "run")
        r = run([os.path.join(BIN, "pagetierd"), "--check-config", "--config-dir", conf])
        tap.ok(r.returncode == 0, "pagetierd --check-config accepts the test config", r.stderr)
        log = open(os.path.join(work, "pagetierd.log"), "w")
        daemon = subprocess.Popen([os.path.join(BIN, "pagetierd"), "--config-dir", conf],
                                  stdout=log, stderr=subprocess.STDOUT)
        tap.ok(wait_for(lambda: status_json(runtime) is not None, 10),
               "pagetierd is up and answers pagetierctl")
        with open(os.path.join(work, "pagetierd.log")) as f:
            dlog = f.read()
        tap.ok("BPF wake sources attached" in dlog,
               "pagetierd attached its BPF wake sources on this kernel", dlog)
        tap.diag("".join(l for l in dlog.splitlines(True) if "BPF" in l))

        for name in OPTED_IN + [LEFT_OUT]:
            loads[name] = start_workload(name, args.size, work)
        # Peak anonymous memory per container before it idles: a fast container may go idle
        # (and be offloaded) before a slow one is ready, so a single late sample is wrong.
        before = {n: 0 for n in loads}

        def all_ready():
            for n in loads:
                before[n] = max(before[n], cg_key(n, "memory.stat", "anon"))
            return all(os.path.exists(l["ready"]) for l in loads.values())
        if not wait_for(all_ready, 120, step=0.1):
            tap.bail("workloads did not become ready within 120 s")
        tap.diag("anonymous memory before idle: " +
                 ", ".join(f"{n} {before[n] // MIB} MiB" for n in loads))

        # Idle: each opted-in container must end with >= 90% of its anon memory on the tier.
        def offloaded():
            st = status_json(runtime) or {}
            tb = tier_bytes_by_cgroup()
            done = all(st.get(n, {}).get("state") == "idle" and
                       tb.get(ids[n], 0) >= 0.9 * before[n] for n in OPTED_IN)
            return (st, tb) if done else None
        t_idle = time.monotonic()
        wait_for(offloaded, 90, step=0.5)
        st = status_json(runtime) or {}
        tb = tier_bytes_by_cgroup()
        idle_s = time.monotonic() - t_idle
        for n in OPTED_IN:
            tap.ok(st.get(n, {}).get("state") == "idle" and tb.get(ids[n], 0) >= 0.9 * before[n],
                   f"{n}: idle, >= 90% of its anonymous memory on the tier "
                   f"({tb.get(ids[n], 0) // MIB} of {before[n] // MIB} MiB)",
                   json.dumps(st.get(n)))
        # Offloaded memory must leave RAM, not linger in the swap cache.
        wait_for(lambda: all(cg_u64(n, "memory.current") <= 0.1 * before[n] for n in OPTED_IN),
                 30, step=0.5)
        for n in OPTED_IN:
            cur = cg_u64(n, "memory.current")
            tap.ok(cur <= 0.1 * before[n],
                   f"{n}: RAM given back while idle (resident {cur // MIB} of "
                   f"{before[n] // MIB} MiB)", cg_read(n, "memory.stat"))
        tb = tier_bytes_by_cgroup()
        status_table = ctl("status", runtime=runtime).stdout
        tap.diag("pagetierctl status while idle:\n" + status_table)
        tap.ok("idle" in status_table and "alpha" in status_table and "RESIDENT" in status_table,
               "pagetierctl status prints a table per container")
        idle_view = {n: {"tier": tb.get(ids[n], 0),
                         "resident": cg_u64(n, "memory.current"),
                         "anon": cg_key(n, "memory.stat", "anon")} for n in loads}

        # The container that did not opt in is never touched.
        g_swap = cg_u64(LEFT_OUT, "memory.swap.current")
        g_anon = cg_key(LEFT_OUT, "memory.stat", "anon")
        tap.ok(g_swap == 0 and tb.get(ids[LEFT_OUT], 0) == 0 and g_anon >= 0.99 * before[LEFT_OUT],
               f"{LEFT_OUT} (not opted in) untouched: swap {g_swap}, tier "
               f"{tb.get(ids[LEFT_OUT], 0)}, anon {g_anon // MIB} MiB")
        tap.ok(LEFT_OUT not in st, f"{LEFT_OUT} has no memory context in pagetierd")
        # gamma faulted in 256 MiB while busy: none of it may reach the daemon through BPF.
        r = ctl("--json", "status", runtime=runtime)
        unmatched = json.loads(r.stdout).get("bpf_unmatched_events", -1) if r.returncode == 0 else -1
        tap.ok(unmatched == 0, f"zero BPF events from the cgroup that did not opt in "
               f"({unmatched}; alpha {st.get('alpha', {}).get('bpf_events')})")

        # Wake: signal every workload; each verifies its memory byte for byte.
        for n in loads:
            loads[n]["proc"].send_signal(signal.SIGUSR1)
        # Memory back: sampled as each workload reports, before it can idle (and be
        # offloaded) again, idle_threshold later.
        back = {}

        def reported():
            for n, l in loads.items():
                if n not in back and os.path.exists(l["report"]) and os.path.getsize(l["report"]):
                    back[n] = cg_key(n, "memory.stat", "anon")
            return len(back) == len(loads)
        wait_for(reported, 120, step=0.1)
        reports = {}
        for n, l in loads.items():
            try:
                with open(l["report"]) as f:
                    reports[n] = json.loads(f.read())
            except (OSError, ValueError) as e:
                reports[n] = {"error": str(e)}
            r = reports[n]
            tap.ok(r.get("mismatches") == 0 and r.get("verified") == size_bytes,
                   f"{n}: all {size_bytes // MIB} MiB verified after wake "
                   f"(wake {r.get('wake_ms')} ms)", json.dumps(r))
        woke = wait_for(lambda: all((status_json(runtime) or {}).get(n, {}).get("wakes", 0) >= 1
                                    for n in OPTED_IN), 10)
        st = status_json(runtime) or {}
        tap.diag("wake detected by: " +
                 ", ".join(f"{n}: {st.get(n, {}).get('wake_source')}" for n in OPTED_IN))
        for n in OPTED_IN:
            tap.ok(bool(woke) and st.get(n, {}).get("prefetch_requested_bytes", 0) > 0,
                   f"{n}: pagetierd saw the wake and prefetched (MADV_WILLNEED)",
                   json.dumps(st.get(n)))
        # The wake went through the tier's prefetch: pagetierd asked the tier to stage each
        # container's newest segments, and the swap-ins found pages there. How much of one
        # container is staged is a race: the tier's bulk reads yield to demand reads, and
        # two containers reading 128 MiB each at once can demand-read one of them whole
        # before its bulk read runs (6.12, CI: alpha 0 MiB staged, beta 66; runs before
        # and after: 15-66 MiB each). So the staging is checked over both.
        ts = tier_cgroup_stats()
        for n in OPTED_IN:
            tap.ok(st.get(n, {}).get("tier_prefetch_bytes", 0) > 0,
                   f"{n}: wake asked the tier to stage it (PAGETIER_IOC_PREFETCH, "
                   f"{st.get(n, {}).get('tier_prefetch_bytes', 0) // MIB} MiB planned)",
                   json.dumps(st.get(n)))
        staged = {n: ts.get(ids[n], {}) for n in OPTED_IN}
        tap.ok(sum(c.get("prefetch_bytes", 0) for c in staged.values()) > 0 and
               sum(c.get("staging_hits", 0) for c in staged.values()) > 0,
               "wake staged by the tier: " + ", ".join(
                   f"{n} {c.get('prefetch_bytes', 0) // MIB} MiB read, {c.get('staging_hits', 0)} "
                   f"staging hits, {c.get('staging_misses', 0)} misses" for n, c in staged.items()),
               json.dumps(staged))
        # The module's event ring reached the daemon: one record per demand read.
        for n in OPTED_IN:
            ev = st.get(n, {}).get("tier_read_events", 0)
            tap.ok(ev > 0, f"{n}: pagetierd received the tier's demand-read events ({ev})")
        for n in OPTED_IN:
            tap.ok(back.get(n, 0) >= 0.9 * before[n],
                   f"{n}: memory back after wake ({back.get(n, 0) // MIB} of {before[n] // MIB} MiB)")
        tap.ok(cg_u64(LEFT_OUT, "memory.swap.current") == 0,
               f"{LEFT_OUT} still never swapped")
        check_sample_reader(tap, args.sample_reader, port, os.path.join(work, "pagetierd.log"))

        if args.demo:
            print_demo(loads, before, idle_view, back, reports, st, status_table, idle_s, ts, ids,
                       size_bytes // MIB)
    finally:
        for l in loads.values():
            l["proc"].terminate()
        for l in loads.values():
            try:
                l["proc"].wait(10)
            except subprocess.TimeoutExpired:
                l["proc"].kill()
        if daemon:
            daemon.terminate()
            rc = daemon.wait(10)
            tap.ok(rc == 0, "pagetierd stops cleanly on SIGTERM", f"exit {rc}")
            with open(os.path.join(work, "pagetierd.log")) as f:
                tap.diag("pagetierd log:\n" + f.read())
        if swapped_on:
            r = run(["swapoff", tier_dev])
            tap.ok(r.returncode == 0, "swapoff of the tier succeeds", r.stderr)
        if tier_dev:
            r = ctl("tier", "destroy", tier_dev.replace("/dev/pagetier", ""))
            tap.ok(r.returncode == 0, "tier destroyed", r.stderr)
        e2elib.remove_cgroups(PARENT, OPTED_IN + [LEFT_OUT])
        shutil.rmtree(work, ignore_errors=True)
    print(f"1..{tap.n}")
    print(f"# e2e: {tap.n - tap.failed} passed, {tap.failed} failed", flush=True)
    sys.exit(1 if tap.failed else 0)


def print_demo(loads, before, idle_view, back, reports, st, status_table, idle_s, ts, ids,
               size):
    w = sys.stdout.write
    w("\n================ pagetier demo report ================\n")
    w(f"Three containers (cgroups) each filled {size} MiB with a known pattern, worked, then\n"
      "went idle. alpha and beta opted in through containers.d/e2e.conf; gamma did not.\n\n")
    w(f"{'container':<10} {'opted in':<9} {'before idle':>12} {'on tier (idle)':>15} "
      f"{'resident (idle)':>16} {'back after wake':>16} {'verified':>10} {'wake':>10}\n")
    for n in loads:
        r = reports.get(n, {})
        pct = 100.0 * idle_view[n]["tier"] / before[n] if before[n] else 0
        w(f"{n:<10} {'yes' if n in OPTED_IN else 'no':<9} {before[n] // MIB:>8} MiB "
          f"{idle_view[n]['tier'] // MIB:>6} MiB {pct:3.0f}% {idle_view[n]['resident'] // MIB:>12} MiB "
          f"{back.get(n, 0) // MIB:>12} MiB {r.get('verified', 0) // MIB:>6} MiB {r.get('wake_ms', 0):>7.0f} ms\n")
    w(f"\nverified: every byte of each container's {size} MiB was re-read and compared with the\n"
      "pattern after wake (mismatches: " +
      ", ".join(f"{n} {reports.get(n, {}).get('mismatches')}" for n in loads) + ").\n")
    w("wake: time for the workload to touch and check all its memory after its wake signal;\n"
      "pagetierd finished the prefetch " +
      ", ".join(f"{n} {st.get(n, {}).get('last_wake_ms')} ms" for n in OPTED_IN) +
      " after it saw the wake.\n")
    w("tier prefetch at wake (PAGETIER_IOC_PREFETCH, newest segments first, then MADV_WILLNEED):\n")
    for n in OPTED_IN:
        c = ts.get(ids[n], {})
        hits, miss = c.get("staging_hits", 0), c.get("staging_misses", 0)
        w(f"  {n}: {c.get('prefetch_bytes', 0) // MIB} MiB read ahead in large reads; swap-ins "
          f"served from the staging cache {hits}, from the device {miss} "
          f"({100.0 * hits / max(1, hits + miss):.0f}% staged)\n")
    w("gamma did not opt in: never offloaded (memory.swap.current stayed 0); its wake time is\n"
      f"the baseline for touching {size} MiB that never left RAM, in this emulated VM.\n\n")
    w("pagetierctl status, while idle:\n" + status_table)
    w("======================================================\n\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
