#!/usr/bin/env python3
"""Fault injection on the debug kernel (make test-debug; issue 12): the kernel's own
fault injection into pagetier.ko's allocations and into its backing device's I/O, while
containers are offloaded and woken under memory pressure. Runs as root in the debug guest
with pagetier.ko loaded; prints TAP.

- failslab, limited by its stack filter to the module's text (require-start/-end), so that
  every slab allocation made from pagetier.ko fails and the rest of the kernel's do not:
  * at 100%, with a container waking (prefetch reads, demand reads waiting on them) while
    another is pushed out through the tier by its memory.max (writes): every bio the tier
    clones comes from its bio_sets' reserves. The swap-out stall of item 1 was this case:
    swap-out must still make progress and the wake must finish;
  * at 10%, through a second offload and wake.
- fail_make_request on the backing namespace: every 25th bio to it fails (interval, no
  randomness), through an offload and a wake under the same pressure. Writes that fail
  are kept in memory by swap; reads that fail are read again block by block by the tier.

Each phase ends with every byte of both containers verified. A hang is caught by the
suite's step limit and the kernel's hung-task detector (the console shows the stacks);
KASAN, lockdep, kmemleak and the rest are read from the kernel log by guest-suite.sh.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import e2elib
from e2elib import BIN, CG, MIB, Tap, ctl, run, status_json, wait_for

PARENT = "pt-dbgfault"
SLEEPER, PUSHER = "sleeper", "pusher"
SLEEPER_ANON, SLEEPER_SHM = 96 * MIB, 16 * MIB
PUSHER_SIZE, PUSHER_MAX = 160 * MIB, 48 * MIB
DBG = "/sys/kernel/debug"
FAILSLAB = os.path.join(DBG, "failslab")
FAILREQ = os.path.join(DBG, "fail_make_request")
BACKING = "/dev/nvme0n1"
# Injected failures are counted down from this (the attribute's "times").
TIMES = 1000000
# How often a wake still running says how far it got.
PROGRESS_S = 60


def put(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def get(path):
    with open(path) as f:
        return f.read().strip()


def kmsg(text):
    """A marker in the kernel log, so that what follows can be told apart."""
    try:
        put("/dev/kmsg", f"pagetier-test: {text}\n")
    except OSError:
        pass


def module_text():
    """[start, end) of pagetier.ko's .text: its load address and the section's size."""
    start = int(get("/sys/module/pagetier/sections/.text"), 16)
    ko = os.path.join(e2elib.TOP, "build", "kmod", os.uname().release, "pagetier.ko")
    out = run(["readelf", "-SW", ko], check=True).stdout
    for line in out.splitlines():
        m = re.search(r"\]\s+\.text\s+\S+\s+\S+\s+\S+\s+([0-9a-f]+)", line)
        if m:
            return start, start + int(m.group(1), 16)
    raise RuntimeError(f"no .text in {ko}")


def failslab_on(prob, text):
    put(os.path.join(FAILSLAB, "probability"), 0)
    put(os.path.join(FAILSLAB, "interval"), 1)
    put(os.path.join(FAILSLAB, "times"), TIMES)
    put(os.path.join(FAILSLAB, "space"), 0)
    put(os.path.join(FAILSLAB, "verbose"), 0)
    put(os.path.join(FAILSLAB, "task-filter"), "N")
    put(os.path.join(FAILSLAB, "cache-filter"), "N")
    # GFP_KERNEL and GFP_NOIO allocations too, not only atomic ones.
    put(os.path.join(FAILSLAB, "ignore-gfp-wait"), "N")
    put(os.path.join(FAILSLAB, "stacktrace-depth"), 32)
    put(os.path.join(FAILSLAB, "require-start"), text[0])
    put(os.path.join(FAILSLAB, "require-end"), text[1])
    put(os.path.join(FAILSLAB, "probability"), prob)


def failslab_off():
    put(os.path.join(FAILSLAB, "probability"), 0)
    return TIMES - int(get(os.path.join(FAILSLAB, "times")))


def failreq_on(dev, interval):
    name = os.path.basename(dev)
    put(os.path.join(FAILREQ, "probability"), 100)
    put(os.path.join(FAILREQ, "interval"), interval)
    put(os.path.join(FAILREQ, "times"), TIMES)
    put(os.path.join(FAILREQ, "verbose"), 0)
    put(f"/sys/block/{name}/make-it-fail", 1)


def failreq_off(dev):
    put(f"/sys/block/{os.path.basename(dev)}/make-it-fail", 0)
    put(os.path.join(FAILREQ, "probability"), 0)
    return TIMES - int(get(os.path.join(FAILREQ, "times")))


def progress(name, pid, elapsed, stacks):
    """A diagnostic line on a wake still running: what is still swapped, the swap-in
    count, the tier's counters and where the process waits."""
    def read(path):
        try:
            return get(path)
        except OSError as e:
            return f"({e.strerror})"
    vm = dict(l.split() for l in read("/proc/vmstat").splitlines() if l.startswith("psw"))
    tiers = " | ".join(f"{n}: {read(f'/sys/block/{n}/tier_stat')}"
                       for n in sorted(os.listdir("/sys/block")) if n.startswith("pagetier"))
    print(f"# {name}: wake running for {elapsed:.0f} s: swap.current "
          f"{e2elib.cg_u64(name, 'memory.swap.current', PARENT) // MIB} MiB, current "
          f"{e2elib.cg_u64(name, 'memory.current', PARENT) // MIB} MiB, {vm}; "
          f"wchan {read(f'/proc/{pid}/wchan')}; tier_stat {tiers}\n#   stack: "
          + read(f"/proc/{pid}/stack").replace("\n", "\n#   "), flush=True)
    if stacks:
        # The blocked tasks' stacks come at KERN_INFO, below the console's loglevel: read
        # back from the kernel log.
        try:
            put("/proc/sysrq-trigger", "w")
            time.sleep(1)
            log = run(["dmesg"]).stdout
            print("# blocked tasks (sysrq-w):\n#   " + "\n#   ".join(
                log[log.rfind("Show Blocked State"):].splitlines()[:200]), flush=True)
        except OSError as e:
            print(f"# sysrq-w: {e}", flush=True)


def stat(name, key):
    return e2elib.cg_key(name, "memory.stat", key, PARENT)


class Work:
    """One ptwork in its cgroup, woken and verified cycle after cycle."""

    def __init__(self, work, name, args):
        self.name = name
        self.ready = os.path.join(work, f"{name}.ready")
        self.report = os.path.join(work, f"{name}.report")
        # Each phase's pusher has the same name: the last one's files must not count for
        # this one (ptwork without --cycles rewrites its report, so a stale line would
        # hide its own forever).
        for f in (self.ready, self.report):
            if os.path.exists(f):
                os.remove(f)
        self.proc = e2elib.start_in_cgroup(PARENT, name, f"{args} --ready {self.ready} "
                                           f"--report {self.report}")

    def wait_ready(self, timeout):
        return wait_for(lambda: os.path.exists(self.ready), timeout, step=0.2)

    def lines(self):
        try:
            with open(self.report) as f:
                return [l for l in f.read().splitlines() if l.strip()]
        except FileNotFoundError:
            return []

    def verify(self, timeout):
        """Wakes it (SIGUSR1) and returns its report of every byte (the line this wake
        appended: ptwork --cycles appends one per wake), or None."""
        seen = len(self.lines())
        self.proc.send_signal(signal.SIGUSR1)
        start = time.monotonic()
        end = start + timeout * e2elib.TIME_SCALE
        next_look, stacks = start + PROGRESS_S, False
        while len(self.lines()) <= seen:
            now = time.monotonic()
            if now >= end:
                return None
            if now >= next_look:
                # A slow wake under injected faults: is it progressing, and where does it
                # wait? The blocked tasks' stacks once (sysrq-w, on the console).
                progress(self.name, self.proc.pid, now - start, not stacks)
                stacks = True
                next_look = now + PROGRESS_S
            time.sleep(0.2)
        return json.loads(self.lines()[-1])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def verified(tap, rep, total, what):
    tap.ok(rep is not None and rep.get("mismatches") == 0 and rep.get("verified") == total,
           f"{what}: all {total // MIB} MiB verified byte for byte"
           + (f" ({rep.get('wake_ms')} ms)" if rep else ""), json.dumps(rep))


def main():
    tap = Tap()
    print("TAP version 13", flush=True)
    if not os.path.isdir(os.path.join(DBG, "tracing")) and not os.path.isdir(FAILSLAB):
        run(["mount", "-t", "debugfs", "none", DBG])
    for d in (FAILSLAB, FAILREQ):
        if not os.path.isdir(d):
            tap.bail(f"{d} missing: this scenario runs on the debug kernel of make test-debug "
                     "(CONFIG_FAILSLAB, CONFIG_FAIL_MAKE_REQUEST, debugfs)")
    if not os.path.exists("/dev/pagetier"):
        tap.bail("/dev/pagetier missing: pagetier.ko is not loaded")
    work = tempfile.mkdtemp(prefix="pt-dbgfault-")
    daemon = tier = None
    procs = []
    try:
        text = module_text()
        tap.diag(f"pagetier.ko .text: {text[0]:#x}-{text[1]:#x}")
        tier = e2elib.create_tier(tap, BACKING)
        e2elib.setup_cgroups(PARENT, [SLEEPER, PUSHER])
        # The pusher: a container squeezed by its own limit, which swap-out serves through
        # the tier (the kernel's reclaim, not pagetierd's: it is not opted in).
        put(os.path.join(CG, PARENT, PUSHER, "memory.max"), PUSHER_MAX)

        conf = os.path.join(work, "etc")
        os.makedirs(os.path.join(conf, "containers.d"))
        with open(os.path.join(conf, "pagetierd.conf"), "w") as f:
            f.write(f"[daemon]\ncgroup_root = {CG}\nruntime_dir = {conf}/run\n"
                    "poll_interval = 200ms\nlog_level = debug\nwrite_budget = off\n")
        with open(os.path.join(conf, "containers.d", "sleeper.conf"), "w") as f:
            f.write(f"[{SLEEPER}]\nmatch_cgroup = /{PARENT}/{SLEEPER}\nidle_threshold = 2s\n")
        e2elib.fix_perms(conf)
        runtime = os.path.join(conf, "run")
        log = open(os.path.join(work, "pagetierd.log"), "w")
        daemon = subprocess.Popen([os.path.join(BIN, "pagetierd"), "--config-dir", conf],
                                  stdout=log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: status_json(runtime) is not None, 60):
            tap.bail("pagetierd did not start")

        # Three wakes, one per phase (ptwork --cycles): it rewrites its private memory
        # between them, so that a stale copy coming back would be caught.
        sleeper = Work(work, SLEEPER, f"--size {SLEEPER_ANON // MIB}M "
                       f"--shm {SLEEPER_SHM // MIB}M --work-ms 2000 --cycles 3")
        procs.append(sleeper)
        if not sleeper.wait_ready(300):
            tap.bail("the sleeper did not become ready")
        sleeper_total = SLEEPER_ANON + SLEEPER_SHM

        def offloaded():
            st = (status_json(runtime) or {}).get(SLEEPER, {})
            return (st.get("state") == "idle" and
                    e2elib.cg_u64(SLEEPER, "memory.swap.current", PARENT) >= 0.8 * sleeper_total)

        def cycle(what, timeout=600):
            """Idle, offload, then a wake of the sleeper while the pusher is pushed out."""
            ok = wait_for(offloaded, timeout, step=1)
            swapped = e2elib.cg_u64(SLEEPER, "memory.swap.current", PARENT)
            tap.ok(bool(ok), f"{what}: the sleeper went idle and was offloaded "
                   f"({swapped // MIB} MiB swapped)",
                   e2elib.cg_read(SLEEPER, "memory.stat", PARENT))
            # The pusher fills more than its limit: swap-out writes all through the wake.
            pusher = Work(work, f"{PUSHER}", f"--size {PUSHER_SIZE // MIB}M --work-ms 0")
            procs.append(pusher)
            time.sleep(1)
            r = ctl("prefetch", SLEEPER, runtime=runtime)
            tap.ok(r.returncode == 0, f"{what}: a wake (prefetch) starts while the pusher is "
                   "being pushed out", r.stdout + r.stderr)
            rep = sleeper.verify(timeout)
            verified(tap, rep, sleeper_total, f"{what}: the woken sleeper")
            ok = pusher.wait_ready(timeout)
            tap.ok(bool(ok), f"{what}: the pusher's fill finished through swap-out "
                   f"({e2elib.cg_u64(PUSHER, 'memory.swap.current', PARENT) // MIB} MiB swapped)")
            verified(tap, pusher.verify(timeout), PUSHER_SIZE, f"{what}: the pusher")
            pusher.stop()
            procs.remove(pusher)

        # 1. Every slab allocation of the module fails: the bio_sets' reserves carry it all.
        kmsg("failslab 100% on pagetier.ko begins")
        failslab_on(100, text)
        try:
            cycle("failslab 100%")
        finally:
            n = failslab_off()
            kmsg("failslab ends")
        tap.ok(n > 0, f"failslab 100%: {n} allocations of pagetier.ko failed (injected)")

        # 2. One in ten fails, through the next idle period and wake.
        kmsg("failslab 10% on pagetier.ko begins")
        failslab_on(10, text)
        try:
            cycle("failslab 10%")
        finally:
            n = failslab_off()
            kmsg("failslab ends")
        tap.ok(n > 0, f"failslab 10%: {n} allocations of pagetier.ko failed (injected)")

        # 3. The backing namespace fails every 25th bio, reads and writes.
        before = tier_errors()
        kmsg(f"fail_make_request on {BACKING} begins")
        failreq_on(BACKING, 25)
        try:
            cycle(f"fail_make_request 1/25 on {BACKING}")
        finally:
            n = failreq_off(BACKING)
            kmsg("fail_make_request ends")
        after = tier_errors()
        tap.ok(n > 0, f"fail_make_request: {n} bios to {BACKING} failed (injected); the tier "
               f"counted {after[0] - before[0]} read and {after[1] - before[1]} write errors")

        st = (status_json(runtime) or {}).get(SLEEPER, {})
        tap.ok(daemon.poll() is None, "pagetierd still runs after the faults",
               json.dumps(st))
    finally:
        for p in procs:
            p.stop()
        for path in (os.path.join(FAILSLAB, "probability"), os.path.join(FAILREQ, "probability")):
            try:
                put(path, 0)
            except OSError:
                pass
        if daemon:
            daemon.terminate()
            tap.ok(daemon.wait(60) == 0, "pagetierd stops cleanly on SIGTERM")
            with open(os.path.join(work, "pagetierd.log")) as f:
                lines = [l for l in f.read().splitlines() if "debug" not in l]
                tap.diag("pagetierd log (info, last 40):\n" + "\n".join(lines[-40:]))
        if tier:
            e2elib.destroy_tier(tap, tier)
        try:
            e2elib.remove_cgroups(PARENT, [SLEEPER, PUSHER])
        except OSError as e:
            tap.diag(f"cgroups not removed: {e}")
        shutil.rmtree(work, ignore_errors=True)
    print(f"1..{tap.n}")
    sys.exit(1 if tap.failed else 0)


def tier_errors():
    """(read errors, write errors) the tiers counted: tier_stat's columns 7 and 8."""
    rd = wr = 0
    for name in os.listdir("/sys/block"):
        if name.startswith("pagetier"):
            cols = get(f"/sys/block/{name}/tier_stat").split()
            rd += int(cols[6])
            wr += int(cols[7])
    return rd, wr


if __name__ == "__main__":
    main()
