#!/usr/bin/env python3
"""End-to-end: a full tier (issue 12, item 4). Runs as root inside the test VM with
pagetier.ko loaded; prints TAP.

A small tier, over a 256 MiB slice of the NVMe namespace (device-mapper linear), is the only
swap: 214 MiB of swap in 256 segments of 1 MiB. Two churn containers (64 MiB each) go idle
and are offloaded, then three sleepers (ptwork, 64 MiB each) fill the rest: 320 MiB of idle
memory for 214 MiB of swap, the tier 214 of 256 MiB live. Then churn, four cycles: each churn
container wakes, rewrites a random quarter of its pages and idles again. Swap frees the old
slots one by one and the tier keeps their blocks (a discard reaches it only for a whole free
swap cluster); the pages go out again into those slots, and the old blocks die wherever they
are: random overwrite, segments three quarters live that the collector leaves alone until a
writer waits (it takes victims at most half full otherwise). The first cycle takes the tier
to 4 free segments of 256.

What the fix (daemon/tier_fill.c, manager.c's check_fill) does, and what is checked here:
pagetierd reads the tiers' seg_stat once per scan interval (1 s). From the look that finds
under 2% of the segments free (or a write failed for want of one since the last look) it
starts no offload until there is room again: the level "full" in pagetierctl status and the
log. Offloads already running finish, and the kernel's own reclaim is not its to hold, so it
cannot promise that no write ever fails; in this scenario none does, with or without it:
before the fix swap's writes into the full tier waited for the collector (free segments
down to 1, below the 2 kept for it) and it moved segment after segment to make room. The
checks: the tier goes full; status shows the level and offloads held back; the log says so;
the churn cycles begun with under 2% free write (almost) nothing to the tier; no write
fails; when the sleeper with most on the tier exits (swap discards its slots) the level
leaves "full" and the offload held back goes out; every byte of every container left is
verified.

  tier_full.py [--backing /dev/nvme0n1] [--tier 256M] [--churners 2] [--churn 64M]
               [--rewrite-pct 25] [--sleepers 3] [--size 64M] [--cycles 4]

PT_E2E_BIN_DIR=DIR runs DIR/pagetierd instead of build/bin's (tests/vm/run-suite.sh passes
it into the guest): with a build from before the fix (4120fa8^) the checks of the fixed
behaviour fail. Either way the figures (lowest free segment count, writes failed for want
of a segment, write errors, offloads held back, MiB written to the full tier, collector
victims, bytes verified) end the run as a '# figures:' line.
"""
import argparse
import json
import mmap
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

import e2elib
from e2elib import BIN, CG, MIB, Tap, ctl, run, status_json, tier_bytes_by_cgroup, wait_for

PARENT = "pt-full"
DM_NAME = "pt-full"
PAGE = 4096
# seg_stat's columns (kmod/README.md), 0-based.
SEG_SEGMENTS, SEG_FREE, SEG_GC_VICTIMS, SEG_NOSPACE, SEG_LIVE = 1, 2, 5, 8, 9
TIER_WRITTEN, TIER_WRITE_ERRORS = 1, 7
# daemon/tier_fill.h: under 2% of the segments free, pagetierd holds all offload.
FREE_MIN_PM = 20
# pagetierctl status: "tiers: full, 200 of 256 MiB live, 4 of 256 segments free, 12 offloads
# held back" (daemon/ctl.c), from the daemon of the fix on.
TIERS_RE = re.compile(r"^tiers: (\S+), (\d+) of (\d+) MiB live, (\d+) of (\d+) segments free, "
                      r"(\d+) offloads held back$", re.M)
# pagetierd's line when the level drops (manager.c check_fill)
LEFT_FULL_RE = re.compile(r"info: tiers (ok|no-cold): \d+ of \d+ MiB live: ")


def size_arg(s):
    return int(s[:-1]) * MIB if s[-1] in "Mm" else int(s)


# --- the churn container's workload -------------------------------------------------------
def churn_page(i, gen):
    """Page @i's content at generation @gen: its number and generation, 256 times."""
    return struct.pack("<QQ", i, gen) * (PAGE // 16)


def churn_worker(size, pct, ready, report, seed):
    """Fills SIZE bytes of private anonymous memory, then on each SIGUSR1 rewrites a random
    PCT% of its pages (their next generation) and writes the cycle number to READY; on
    SIGUSR2 verifies every page against its generation and writes a JSON report to REPORT;
    SIGTERM ends it. Between signals it sleeps: idle."""
    n = size // PAGE
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    gen = bytearray(n)
    for i in range(n):
        m[i * PAGE:(i + 1) * PAGE] = churn_page(i, 0)
    sigs = {signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    rnd = random.Random(seed)
    cycle = 0

    def put(path, text):
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.rename(path + ".tmp", path)
    put(ready, "0\n")
    while True:
        sig = signal.sigwait(sigs)
        if sig == signal.SIGUSR1:
            cycle += 1
            for i in rnd.sample(range(n), n * pct // 100):
                gen[i] = (gen[i] + 1) & 0xff
                m[i * PAGE:(i + 1) * PAGE] = churn_page(i, gen[i])
            put(ready, f"{cycle}\n")
        elif sig == signal.SIGUSR2:
            t0 = time.monotonic()
            bad = sum(m[i * PAGE:(i + 1) * PAGE] != churn_page(i, gen[i]) for i in range(n))
            put(report, json.dumps({"bytes": size, "verified": (n - bad) * PAGE,
                                    "mismatches": bad, "cycles": cycle,
                                    "wake_ms": round((time.monotonic() - t0) * 1e3, 1)}) + "\n")
        else:
            return


# --- the tier, seen from sysfs --------------------------------------------------------------
class Watch:
    """Samples the tier's seg_stat and tier_stat (every 0.25 s) and pagetierd's status
    (every second) in a thread: the extremes and the first times things happened."""

    def __init__(self, disk, runtime):
        self.disk, self.runtime = disk, runtime
        self.t0 = time.monotonic()
        self.min_free = None
        self.first_nospace = None	# monotonic time of the first sample that saw one
        self.levels = {}		# level -> first monotonic time pagetierctl status showed it
        self.level = None		# as status said last (None: no "tiers:" line)
        self.held = 0			# offloads held back, as status says
        self.series = []
        self.tier = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def sysfs(self, f):
        with open(f"/sys/block/{self.disk}/{f}") as fh:
            return [int(x) for x in fh.read().split()]

    def sample(self):
        """The tier now: {free, segments, live_mib, nospace, write_errors, written_mib,
        gc_victims}."""
        seg = self.sysfs("seg_stat")
        ts = self.sysfs("tier_stat")
        now = time.monotonic()
        t = {"free": seg[SEG_FREE], "segments": seg[SEG_SEGMENTS],
             "live_mib": seg[SEG_LIVE] * PAGE // MIB, "nospace": seg[SEG_NOSPACE],
             "write_errors": ts[TIER_WRITE_ERRORS], "written_mib": ts[TIER_WRITTEN] // MIB,
             "gc_victims": seg[SEG_GC_VICTIMS]}
        with self.lock:
            self.min_free = t["free"] if self.min_free is None else min(self.min_free, t["free"])
            if t["nospace"] and self.first_nospace is None:
                self.first_nospace = now
            self.tier = t
        return t

    def status(self):
        r = ctl("status", runtime=self.runtime)
        m = TIERS_RE.search(r.stdout) if r.returncode == 0 else None
        if m:
            with self.lock:
                self.levels.setdefault(m.group(1), time.monotonic())
                self.level, self.held = m.group(1), int(m.group(6))
        return m

    def line(self):
        with self.lock:
            t = dict(self.tier)
            if self.level:
                t.update(level=self.level, held=self.held)
        return " ".join(f"{k} {v}" for k, v in t.items())

    def loop(self):
        n = 0
        while not self.stop.wait(0.25):
            try:
                self.sample()
                if n % 4 == 0:
                    self.status()
                if n % 8 == 0:
                    self.series.append(f"{time.monotonic() - self.t0:6.1f}s {self.line()}")
            except (OSError, ValueError):
                pass
            n += 1

    def start(self):
        self.sample()
        self.thread.start()

    def finish(self):
        self.stop.set()
        self.thread.join(10)
        self.sample()


# --- the scenario -----------------------------------------------------------------------------
def write_config(d, names, daemon):
    os.makedirs(os.path.join(d, "containers.d"))
    conf = os.path.join(d, "pagetierd.conf")

    def daemon_section(extra):
        with open(conf, "w") as f:
            f.write(f"[daemon]\ncgroup_root = {CG}\nruntime_dir = {d}/run\n"
                    f"poll_interval = 200ms\nlog_level = info\n{extra}")
    with open(os.path.join(d, "containers.d", "full.conf"), "w") as f:
        for n in names:
            # cold_after = 0: only the idle offload writes, so the test knows what does.
            f.write(f"[{n}]\nmatch_cgroup = /{PARENT}/{n}\nclass = besteffort\n"
                    "idle_threshold = 2s\ncold_after = 0\nprefetch = yes\n\n")
    # No NVMe write budget: only the tiers' fill may hold offload here. A pagetierd from
    # before the budget existed does not know the key (and has no budget).
    daemon_section("write_budget = off\n")
    e2elib.fix_perms(d)
    if run([daemon, "--check-config", "--config-dir", d]).returncode != 0:
        daemon_section("")
        e2elib.fix_perms(d)


def dm_create(backing, sectors):
    run(["modprobe", "dm-mod"])
    run(["dmsetup", "create", DM_NAME, "--noudevsync"],
        input=f"0 {sectors} linear {backing} 0\n", check=True)
    run(["dmsetup", "mknodes", DM_NAME])
    return f"/dev/mapper/{DM_NAME}"


def dm_remove():
    for _ in range(20):
        if run(["dmsetup", "remove", "--retry", DM_NAME]).returncode == 0:
            return True
        time.sleep(0.5)
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backing", default="/dev/nvme0n1")
    ap.add_argument("--tier", default="256M")
    ap.add_argument("--churners", type=int, default=2)
    ap.add_argument("--churn", default="64M")
    ap.add_argument("--rewrite-pct", type=int, default=25)
    ap.add_argument("--sleepers", type=int, default=3)
    ap.add_argument("--size", default="64M")
    ap.add_argument("--cycles", type=int, default=4)
    ap.add_argument("--churn-worker", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.churn_worker:
        s, pct, ready, report, seed = args.churn_worker
        churn_worker(int(s), int(pct), ready, report, int(seed))
        return

    daemon_bin = os.path.join(os.environ.get("PT_E2E_BIN_DIR") or BIN, "pagetierd")
    size, churn_size, tier_bytes = size_arg(args.size), size_arg(args.churn), size_arg(args.tier)
    churners = [f"churn{i}" for i in range(args.churners)]
    sleepers = [f"s{i}" for i in range(args.sleepers)]
    names = churners + sleepers
    tap = Tap()
    print("TAP version 13", flush=True)
    tap.diag(f"pagetierd: {daemon_bin}")
    work = tempfile.mkdtemp(prefix="pt-full-")
    logpath = os.path.join(work, "pagetierd.log")
    daemon = watch = tier_dev = dm = None
    swapped_on = False
    loads = {}
    try:
        if not os.path.exists("/dev/pagetier"):
            tap.bail("/dev/pagetier missing: pagetier.ko is not loaded")
        if not os.path.exists(args.backing):
            tap.bail(f"{args.backing} missing: the VM has no emulated NVMe drive")
        with open("/proc/swaps") as f:
            if len(f.read().splitlines()) > 1:
                tap.bail("another swap device is on: the tier must be the only one")
        dm = dm_create(args.backing, tier_bytes // 512)
        tier_dev = e2elib.create_tier(tap, dm)
        swapped_on = True
        disk = os.path.basename(tier_dev)
        with open("/proc/swaps") as f:
            swaps = f.read()
        swap_mib = int(swaps.splitlines()[1].split()[2]) // 1024
        with open(f"/sys/block/{disk}/seg_stat") as f:
            seg = [int(x) for x in f.read().split()]
        segs = seg[SEG_SEGMENTS]
        tap.ok(len(swaps.splitlines()) == 2 and disk in swaps,
               f"{disk} over a {tier_bytes // MIB} MiB slice of {args.backing} is the only swap: "
               f"{swap_mib} MiB of swap in {segs} segments of {seg[0] // 1024} KiB", swaps)
        idle_total = args.churners * churn_size + args.sleepers * size
        tap.diag(f"containers: {args.churners} churn containers of {churn_size // MIB} MiB "
                 f"(rewriting {args.rewrite_pct}% of it a cycle), {args.sleepers} sleepers of "
                 f"{size // MIB} MiB: {idle_total // MIB} MiB to offload, "
                 f"{100 * idle_total // (swap_mib * MIB)}% of the tier's capacity")

        ids = e2elib.setup_cgroups(PARENT, names)
        conf = os.path.join(work, "etc")
        write_config(conf, names, daemon_bin)
        runtime = os.path.join(conf, "run")
        log = open(logpath, "w")
        daemon = subprocess.Popen([daemon_bin, "--config-dir", conf],
                                  stdout=log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: status_json(runtime) is not None, 15):
            tap.bail("pagetierd did not start")
        watch = Watch(disk, runtime)
        watch.start()

        def start(n, cmd, sz):
            ready, report = os.path.join(work, f"{n}.ready"), os.path.join(work, f"{n}.report")
            loads[n] = {"ready": ready, "report": report, "size": sz,
                        "proc": e2elib.start_cmd_in_cgroup(PARENT, n, cmd.format(ready=ready,
                                                                                report=report))}

        def ctx(n):
            return (status_json(runtime) or {}).get(n, {})

        def settled(secs=2, limit=60):
            """Waits until the tier's live pages and free segments stay put for @secs."""
            last, since, end = None, time.monotonic(), time.monotonic() + limit
            while time.monotonic() < end:
                t = watch.sample()
                cur = (t["live_mib"], t["free"], t["written_mib"])
                if cur != last:
                    last, since = cur, time.monotonic()
                elif time.monotonic() - since >= secs:
                    return True
                time.sleep(0.25)
            return False

        def where():
            tb = tier_bytes_by_cgroup()
            return ", ".join(f"{n} {tb.get(ids[n], 0) // MIB}" for n in loads)

        def ready(group, what):
            if not wait_for(lambda: all(os.path.exists(loads[n]["ready"]) for n in group), 180,
                            step=0.2):
                tap.bail(f"the {what} did not become ready within 180 s")
            wait_for(lambda: all(ctx(n).get("state") == "idle" for n in group), 60, step=0.5)
            settled()

        # The churn containers first: their memory on the tier is what churn rewrites. Then
        # the sleepers, more than the tier has left: swap fills up.
        for i, n in enumerate(churners):
            start(n, f"{sys.executable} {os.path.abspath(__file__)} --churn-worker "
                  f"{churn_size} {args.rewrite_pct} {{ready}} {{report}} {12 + i}", churn_size)
        ready(churners, "churn containers")
        tap.diag(f"churn containers idle: tier {watch.line()}; MiB on the tier: {where()}")
        for n in sleepers:
            start(n, f"{BIN}/ptwork --size {size // MIB}M --work-ms 1000 --ready {{ready}} "
                  f"--report {{report}}", size)
        ready(sleepers, "sleepers")
        t = watch.sample()
        tap.diag(f"sleepers idle: tier {watch.line()}; MiB on the tier: {where()}")
        tap.ok(t["live_mib"] >= 0.95 * swap_mib,
               f"the containers fill the tier: {t['live_mib']} of {swap_mib} MiB live, "
               f"{t['free']} of {segs} segments free")

        # Churn: each churn container wakes, rewrites part of its memory and idles again:
        # swap frees the old slots one by one (the tier keeps their blocks: no discard
        # while the rest of a cluster is in use) and writes the pages elsewhere when they
        # go out again, over those blocks, which die wherever they are.
        rewritten = args.churners * churn_size * args.rewrite_pct // 100
        on_full = {"cycles": 0, "written_mib": 0}
        for c in range(1, args.cycles + 1):
            t0 = watch.sample()
            wakes = {n: ctx(n).get("wakes", 0) for n in churners}
            for n in churners:
                loads[n]["proc"].send_signal(signal.SIGUSR1)
                wait_for(lambda: open(loads[n]["ready"]).read().strip() == str(c), 60, step=0.2)
            # A rewrite the swap cache serves (pages a held offload left there) is no wake
            # for pagetierd: no swap-in, and too little CPU.
            wait_for(lambda: all(ctx(n).get("wakes", 0) > wakes[n] for n in churners), 6,
                     step=0.3)
            wait_for(lambda: all(ctx(n).get("state") == "idle" for n in churners), 30, step=0.3)
            settled()
            t1 = watch.sample()
            full = t0["free"] * 1000 // segs < FREE_MIN_PM
            if full:
                on_full["cycles"] += 1
                on_full["written_mib"] += t1["written_mib"] - t0["written_mib"]
            tap.diag(f"churn cycle {c}, begun with {t0['free']} segments free"
                     f"{' (under 2%)' if full else ''}: {t1['written_mib'] - t0['written_mib']} "
                     f"MiB written to the tier; tier {watch.line()}; MiB on the tier: {where()}")
        watch.status()
        at_full = (watch.level, watch.held)
        st_text = ctl("status", runtime=runtime).stdout
        tap.diag("pagetierctl status after the churn:\n" + st_text)

        tap.ok(watch.min_free * 1000 // segs < FREE_MIN_PM and on_full["cycles"] > 0,
               f"churn drives the tier full: {watch.min_free} of {segs} segments free at the "
               f"lowest, {on_full['cycles']} of {args.cycles} cycles begun with under 2% free")
        tap.ok(at_full[0] == "full" and TIERS_RE.search(st_text) is not None,
               f"pagetierctl status shows the tiers' level: {at_full[0]}, "
               f"{at_full[1]} offloads held back", st_text)
        with open(logpath) as f:
            dlog = f.read()
        tap.ok(re.search(r"warn: tiers full: .* segments free, \d+ writes failed for want of "
                         r"one: all offload stops until there is room", dlog) is not None,
               "pagetierd logs that the tiers are full and offload stops",
               "\n".join(l for l in dlog.splitlines() if "tiers" in l))
        # Held: the churn containers' rewritten pages stay in memory instead of going to a
        # tier that has no segment to put them in.
        tap.ok(on_full["cycles"] > 0 and at_full[1] > 0 and
               on_full["written_mib"] * MIB <= 0.1 * on_full["cycles"] * rewritten,
               f"pagetierd held offload while the tier was full: {on_full['written_mib']} MiB "
               f"written to the tier in the {on_full['cycles']} churn cycles begun with under 2% "
               f"free, against {on_full['cycles'] * rewritten // MIB} MiB rewritten")
        t = watch.sample()
        tap.ok(t["nospace"] == 0 and t["write_errors"] == 0,
               f"no write failed: {t['nospace']} for want of a free segment, "
               f"{t['write_errors']} write errors (seg_stat, tier_stat)")

        # Room comes back: the sleeper with the most on the tier exits, swap frees and
        # discards its slots.
        tb = tier_bytes_by_cgroup()
        gone = max(sleepers, key=lambda n: tb.get(ids[n], 0))
        t0 = watch.sample()
        log_at = os.path.getsize(logpath)
        loads[gone]["proc"].terminate()
        loads[gone]["proc"].wait(30)
        loads[gone]["exited"] = True
        wait_for(lambda: watch.sample()["free"] > t0["free"] + 8, 30, step=0.25)
        t_room = watch.sample()

        # The level leaves "full" in pagetierd's own log line: the offload it held then
        # resumes and may fill the tier again within a second, before a status poll would
        # see the room (CI saw 4 -> 62 -> 4 segments free between two polls).
        def left_full():
            with open(logpath) as f:
                f.seek(log_at)
                return LEFT_FULL_RE.search(f.read())
        left = wait_for(left_full, 15, step=0.5)
        settled(3)
        t1 = watch.sample()
        tap.diag(f"{gone} exited: tier {watch.line()}; MiB on the tier: {where()}")
        tap.ok(bool(left),
               f"room comes back when {gone} exits: {t0['free']} -> {t_room['free']} segments "
               f"free, level {at_full[0]} -> {left.group(1) if left else at_full[0]}",
               "pagetierd logged no level below full after the exit")
        tap.ok(t1["written_mib"] - t0["written_mib"] >= 8,
               f"the offload held back resumes: {t1['written_mib'] - t0['written_mib']} MiB "
               f"written to the tier once there was room")

        # Every byte of every container still running.
        live = [n for n in names if not loads[n].get("exited")]
        for n in live:
            loads[n]["proc"].send_signal(signal.SIGUSR2 if n in churners else signal.SIGUSR1)
        wait_for(lambda: all(os.path.exists(loads[n]["report"]) and
                             os.path.getsize(loads[n]["report"]) for n in live), 180, step=0.5)
        verified = total = 0
        for n in live:
            try:
                with open(loads[n]["report"]) as f:
                    r = json.loads(f.readline())
            except (OSError, ValueError) as e:
                r = {"error": str(e)}
            total += loads[n]["size"]
            verified += r.get("verified", 0) if r.get("mismatches") == 0 else 0
            tap.ok(r.get("mismatches") == 0 and r.get("verified") == loads[n]["size"],
                   f"{n}: all {loads[n]['size'] // MIB} MiB verified", json.dumps(r))
        watch.finish()
        t = watch.tier
        tap.ok(t["nospace"] == 0 and t["write_errors"] == 0,
               f"no write failed in the whole run: {t['nospace']} for want of a free segment, "
               f"{t['write_errors']} write errors")
        if watch.first_nospace is not None and "full" in watch.levels:
            tap.diag(f"first write failed for want of a segment at {watch.first_nospace - watch.t0:.1f} s, "
                     f"level full first shown at {watch.levels['full'] - watch.t0:.1f} s")
        tap.diag("tier over time:\n" + "\n".join(watch.series))
        tap.diag("figures: " + json.dumps({
            "pagetierd": daemon_bin, "kernel": os.uname().release,
            "lowest_free_segments": watch.min_free, "segments": segs,
            "nospace_errors": t["nospace"], "write_errors": t["write_errors"],
            "offloads_held": watch.held, "levels": sorted(watch.levels),
            "written_on_full_mib": on_full["written_mib"], "gc_victims": t["gc_victims"],
            "bytes_verified": verified, "bytes": total}))
    finally:
        if watch:
            watch.stop.set()
        for l in loads.values():
            l["proc"].terminate()
        for l in loads.values():
            try:
                l["proc"].wait(10)
            except subprocess.TimeoutExpired:
                l["proc"].kill()
                l["proc"].wait()
        if daemon:
            daemon.terminate()
            rc = daemon.wait(15)
            tap.ok(rc == 0, "pagetierd stops cleanly on SIGTERM", f"exit {rc}")
            with open(logpath) as f:
                tap.diag("pagetierd log (info and up):\n" +
                         "\n".join(l for l in f.read().splitlines() if "debug:" not in l))
        if swapped_on:
            r = run(["swapoff", tier_dev])
            tap.ok(r.returncode == 0, "swapoff of the tier succeeds", r.stderr)
        if tier_dev:
            r = ctl("tier", "destroy", tier_dev.replace("/dev/pagetier", ""))
            tap.ok(r.returncode == 0, "tier destroyed", r.stderr)
        if dm:
            tap.ok(dm_remove(), f"{dm} removed: {args.backing} is free for the next test")
        try:
            e2elib.remove_cgroups(PARENT, names)
        except OSError as e:
            tap.diag(f"cgroups not removed: {e}")
        shutil.rmtree(work, ignore_errors=True)
    print(f"1..{tap.n}")
    print(f"# e2e: {tap.n - tap.failed} passed, {tap.failed} failed", flush=True)
    sys.exit(1 if tap.failed else 0)


if __name__ == "__main__":
    main()
