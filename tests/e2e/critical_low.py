#!/usr/bin/env python3
"""End-to-end: a critical container is protected from the kernel's reclaim, under a parent
cgroup that nobody protected.

memory.low protects a cgroup only as far as its ancestors' memory.low allows: the kernel
limits a child's effective protection by its parent's. So memory.low=max on a critical
container under a parent at 0 (what a runtime or a fresh cgroup leaves) protects nothing.
With the multi-gen LRU (6.12), memory.low is only a hint: a protected cgroup is passed over
once, then reclaimed; memory.min is kept. pagetierd (daemon/protect_path.h) gives the parent
memory.low and memory.min, and the critical container memory.min, covering its use.

  1. control, without pagetierd: memory.low=max on the critical container alone; a
     host-wide reclaim (the root cgroup's memory.reclaim, as global reclaim would) takes
     its memory anyway. This is the kernel behaviour the fix answers; if it ever stops
     taking it, the check below proves nothing and this one says so.
  2. with pagetierd: the parent's memory.low and memory.min and the critical container's
     memory.min cover its use; the same shortage leaves the critical container whole and
     takes the unprotected neighbour's.
  3. pagetierd stops: every value is back as it was.
  4. pagetierd is killed (SIGKILL): the next one, started with no critical container, puts
     back what the killed one had written (runtime_dir/protection).
Runs as root inside the test VM with pagetier.ko loaded (the tier is the swap); prints TAP.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

import e2elib
from e2elib import BIN, MIB, Tap, el, status_json, wait_for

PARENT = "pt-low"
SIZE_MIB = 96
# The host's free memory is cut to HEADROOM_MIB (a balloon of locked memory; huge pages
# would need compaction, which ran for 50 s under TCG in a fragmented guest and tripped the
# soft-lockup watchdog), then a hog in the unprotected neighbour allocates HOG_MIB: the
# kernel's own reclaim (kswapd, then direct reclaim) has to find about HOG_MIB - HEADROOM_MIB plus its
# watermarks, and there is more than that unprotected (the neighbour's and the hog's).
HEADROOM_MIB = 160
HOG_MIB = 288
# The hog: writes HOG_MIB once, then says so and holds it. It does not read it all again (as
# the holders do): with crit protected, the hog's 288 MiB do not all fit beside it, and a
# second pass over them swapped them out and in again (the shortage with pagetierd took 36 s
# under TCG with that pass, 26 s without), where the check needs only the shortage its
# allocation makes.
HOG = r'''
import os, sys, time
data = bytearray(os.urandom(1 << 20)) * int(sys.argv[1])
open(sys.argv[2], "a").write("touched\n")
while True:
    time.sleep(3600)
'''
# Holds SIZE_MIB of its own memory; on SIGUSR1 touches all of it again (back from swap).
HOLDER = r'''
import os, signal, sys, time
data = bytearray(os.urandom(1 << 20)) * int(sys.argv[1])
def touch(*_):
    sum(data[::4096])
    open(sys.argv[2], "a").write("touched\n")
signal.signal(signal.SIGUSR1, touch)
touch()
while True:
    time.sleep(3600)
'''


def cg(rel):
    return os.path.join(e2elib.CG, PARENT, rel) if rel else os.path.join(e2elib.CG, PARENT)


def read(rel, f):
    with open(os.path.join(cg(rel), f)) as fh:
        return fh.read().strip()


def write(rel, f, v):
    with open(os.path.join(cg(rel), f), "w") as fh:
        fh.write(v)


def mib(rel):
    return int(read(rel, "memory.current")) // MIB


def meminfo(key):
    with open("/proc/meminfo") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith(key + ":"))


# Holds NBYTES locked in memory (mlock faults every page in and keeps it off every LRU).
BALLOON = r'''
import ctypes, mmap, os, sys, time
n = int(sys.argv[1])
m = mmap.mmap(-1, n)
addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
if ctypes.CDLL(None, use_errno=True).mlock(ctypes.c_void_p(addr), ctypes.c_size_t(n)):
    sys.exit("mlock: " + os.strerror(ctypes.get_errno()))
open(sys.argv[2], "w").write("touched\n")
time.sleep(3600)
'''


def start_balloon(tap, work):
    """Cuts the host's free memory to HEADROOM_MIB with a balloon of locked memory, in the
    test's own cgroup (outside the containers). Kept for both shortages below: filling it
    is most of this test's time under TCG (55 s for 2.4 GiB from one process), so one
    process per CPU fills a share side by side. Returns the processes."""
    want = max(0, meminfo("MemFree") - HEADROOM_MIB * MIB)
    n = max(1, os.cpu_count() or 1)
    bscript = os.path.join(work, "balloon.py")
    with open(bscript, "w") as f:
        f.write(BALLOON)
    marks = [os.path.join(work, f"balloon{i}.ready") for i in range(n)]
    balloon = [subprocess.Popen(["python3", bscript, str(want // n // 4096 * 4096), m])
               for m in marks]
    if not wait_for(lambda: all(touched(m, 1)() for m in marks), 180, 0.2):
        for b in balloon:
            b.kill()
        tap.bail(f"the balloon could not lock {want // MIB} MiB")
    tap.diag(f"{el()} {want // MIB} MiB locked by the balloon ({n} processes), "
             f"{meminfo('MemFree') // MIB} MiB free")
    return balloon


def host_pressure(tap, work, hogscript):
    """The host runs short, as a dense host does: with the balloon up, a hog in the
    unprotected neighbour allocates HOG_MIB, and the kernel's own reclaim finds the memory.
    The hog goes after. Returns (MiB crit lost, MiB be lost, whether the hog got it all)."""
    hmark = os.path.join(work, "hog.touched")
    if os.path.exists(hmark):
        os.unlink(hmark)
    c0, b0 = mib("crit"), mib("be")
    hog = e2elib.start_cmd_in_cgroup(PARENT, "be", f"python3 {hogscript} {HOG_MIB} {hmark}")
    try:
        ok = wait_for(touched(hmark, 1), 180, 0.2)
        c1, b1 = mib("crit"), mib("be")
    finally:
        hog.kill()
        hog.wait()
    tap.diag(f"{el()} the hog {'allocated' if ok else 'did not finish allocating'} "
             f"{HOG_MIB} MiB; crit {c0} -> {c1} MiB, be {b0} -> {b1} MiB (the hog's "
             f"included); crit memory.events {read('crit', 'memory.events').split()[:2]}")
    return c0 - c1, b0 + HOG_MIB - b1, bool(ok)


# Without the BPF wake sources: what this test checks (protection) does not use them, and
# every other scenario attaches and detaches them on both kernels. Here, under the locked
# balloon, pagetierd's stop twice went past 20 s in the full 6.12 suite (never when the
# test ran alone, nor when stopped during the hog's allocation), and the emulator's one
# kernel-mode single-step trap (QEMU's multi-threaded TCG running a stale translation of
# kernel text that was just patched; tests/vm/lib.sh) came from this test too. Attaching
# and detaching the probes is where kernel text is patched.
PAGETIERD = [os.path.join(BIN, "pagetierd"), "--no-bpf"]


def uptime():
    """Seconds since boot: the clock of pagetierd's log lines."""
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def stop(tap, daemon, logpath, what):
    """SIGTERM, 20 s to exit with 0. One that does not is reported with where its threads
    wait (their kernel stacks) and its log, then killed, so that the tests after this one
    (the module's unload) do not fail behind it."""
    t0, up0 = time.monotonic(), uptime()
    daemon.terminate()
    try:
        rc = daemon.wait(20)
        tap.diag(f"{what}: pagetierd exited {rc} {time.monotonic() - t0:.1f} s after SIGTERM" +
                 "".join(f"; {l.strip()}" for l in open(logpath) if "stopping: " in l))
    except subprocess.TimeoutExpired:
        rc = None
        where = []
        try:
            tids = sorted(os.listdir(f"/proc/{daemon.pid}/task"))
        except OSError:     # it exited just after the 20 s: still a failure
            tids = []
        for tid in tids:
            t = f"/proc/{daemon.pid}/task/{tid}"
            try:
                with open(f"{t}/comm") as f, open(f"{t}/wchan") as w, open(f"{t}/stack") as k:
                    where.append(f"{tid} {f.read().strip()} in {w.read().strip()}:\n{k.read()}")
            except OSError as e:
                where.append(f"{tid}: {e}")
        with open("/proc/meminfo") as f:
            mem = "".join(l for l in f if l.split(":")[0] in ("MemFree", "MemAvailable"))
        # The stacks last: a CI log keeps a failure's tail.
        tap.diag(f"{what}: pagetierd still runs 20 s after SIGTERM (sent at {up0:.1f} s of the "
                 f"guest's uptime, now {uptime():.1f} s); its log:\n" +
                 open(logpath).read()[-3000:] + f"\n{mem}" + "\n".join(where))
        daemon.kill()
        daemon.wait(20)
    return rc


def touched(path, n):
    return lambda: os.path.exists(path) and open(path).read().count("touched") >= n


def main():
    tap = Tap()
    work = tempfile.mkdtemp(prefix="pt-low-")
    daemon = tier = None
    balloon = []
    procs = {}
    print("TAP version 13", flush=True)
    try:
        tier = e2elib.create_tier(tap, "/dev/nvme0n1")
        e2elib.setup_cgroups(PARENT, ["crit", "be"])
        script, hogscript = os.path.join(work, "holder.py"), os.path.join(work, "hog.py")
        with open(script, "w") as f:
            f.write(HOLDER)
        with open(hogscript, "w") as f:
            f.write(HOG)
        for n in ("crit", "be"):
            mark = os.path.join(work, f"{n}.touched")
            procs[n] = (e2elib.start_cmd_in_cgroup(
                PARENT, n, f"python3 {script} {SIZE_MIB} {mark}"), mark)
        if not wait_for(lambda: all(touched(m, 1)() for _, m in procs.values()), 120, 0.2):
            tap.bail("the memory holders did not start")
        mount = next((l.split()[3] for l in open("/proc/mounts")
                      if l.split()[1] == e2elib.CG), "?")
        tap.diag(f"{el()} cgroup2 mounted with {mount}; parent memory.low "
                 f"{read('', 'memory.low')}; crit {mib('crit')} MiB, be {mib('be')} MiB")

        balloon = start_balloon(tap, work)

        # 1. The control: the critical container's own memory.low alone.
        write("crit", "memory.low", "max")
        c_lost, b_lost, hog_ok = host_pressure(tap, work, hogscript)
        tap.ok(hog_ok and c_lost >= 8,
               f"control: memory.low=max on crit alone, its parent at 0: the host's reclaim "
               f"takes {c_lost} MiB of crit's (the parent bounds the child's protection)")
        write("crit", "memory.low", "0")
        for n, (p, mark) in procs.items():
            p.send_signal(signal.SIGUSR1)
        wait_for(lambda: all(touched(m, 2)() for _, m in procs.values()), 120, 0.2)
        tap.diag(f"{el()} crit {mib('crit')} MiB, be {mib('be')} MiB again")

        # 2. With pagetierd: crit is critical, be is not opted in (nobody protects it).
        conf = os.path.join(work, "etc")
        os.makedirs(os.path.join(conf, "containers.d"))
        with open(os.path.join(conf, "pagetierd.conf"), "w") as f:
            f.write(f"[daemon]\nruntime_dir = {conf}/run\npoll_interval = 200ms\n")
        with open(os.path.join(conf, "containers.d", "crit.conf"), "w") as f:
            f.write(f"[crit]\nmatch_cgroup = /{PARENT}/crit\nclass = critical\n")
        e2elib.fix_perms(conf)
        runtime = os.path.join(conf, "run")
        logpath = os.path.join(work, "d.log")
        daemon = subprocess.Popen(PAGETIERD + ["--config-dir", conf],
                                  stdout=open(logpath, "w"), stderr=subprocess.STDOUT)
        if not wait_for(lambda: status_json(runtime) is not None, 20):
            tap.bail("pagetierd did not start")
        need = mib("crit")

        def covered():
            v = {f: read("", f) for f in ("memory.low", "memory.min")}
            v["crit memory.min"] = read("crit", "memory.min")
            return all(x.isdigit() and int(x) // MIB >= mib("crit") for x in v.values()) and v
        held = wait_for(covered, 20, 0.25)
        tap.diag(f"{el()} pagetierd started")
        st = e2elib.ctl("status", runtime=runtime).stdout
        tap.ok(f"protection: /{PARENT} memory.low " in st and f"protection: /{PARENT}/crit "
               f"memory.low max, memory.min " in st,
               "pagetierctl status shows the protection it holds", st)
        tap.ok(bool(held) and read("crit", "memory.low") == "max",
               f"pagetierd: crit memory.low {read('crit', 'memory.low')}, memory.min "
               f"{int(read('crit', 'memory.min')) // MIB} MiB; its parent's memory.low "
               f"{int(read('', 'memory.low')) // MIB} MiB and memory.min "
               f"{int(read('', 'memory.min')) // MIB} MiB, for crit's {need} MiB",
               open(logpath).read())
        c0 = mib("crit")
        c_lost, b_lost, hog_ok = host_pressure(tap, work, hogscript)
        tap.ok(hog_ok and c_lost <= max(2, c0 // 20) and b_lost >= 32,
               f"with pagetierd: the same shortage takes {c_lost} MiB of crit's {c0} and "
               f"{b_lost} MiB of the unprotected neighbour's")

        # 3. Stopped: as it was.
        rc = stop(tap, daemon, logpath, "stopped")
        daemon = None
        tap.ok(rc == 0, f"pagetierd stops cleanly (exit {rc})")
        back = {f"{w or 'parent'} {f}": read(w, f) for w in ("", "crit")
                for f in ("memory.low", "memory.min")}
        tap.ok(all(v == "0" for v in back.values()),
               f"protection put back: {back}")

        # 4. Killed (no clean stop): the next pagetierd, with crit no longer critical, puts
        # the values back from what the killed one kept in its runtime_dir.
        daemon = subprocess.Popen(PAGETIERD + ["--config-dir", conf],
                                  stdout=open(logpath, "w"), stderr=subprocess.STDOUT)
        wait_for(covered, 20, 0.25)
        daemon.kill()
        daemon.wait(20)
        left = {f: read("", f) for f in ("memory.low", "memory.min")}
        left["crit memory.low"] = read("crit", "memory.low")
        os.unlink(os.path.join(conf, "containers.d", "crit.conf"))
        daemon = subprocess.Popen(PAGETIERD + ["--config-dir", conf],
                                  stdout=open(logpath, "w"), stderr=subprocess.STDOUT)
        wait_for(lambda: status_json(runtime) is not None, 20)
        back = {f"parent {f}": read("", f) for f in ("memory.low", "memory.min")}
        back["crit memory.min"] = read("crit", "memory.min")
        back["crit memory.low"] = read("crit", "memory.low")
        tap.diag(f"{el()} the next pagetierd started")
        tap.ok(all(v != "0" for v in left.values()) and all(v == "0" for v in back.values()),
               f"after a SIGKILL ({left} left), the next pagetierd puts them back: {back}",
               open(logpath).read())
        stop(tap, daemon, logpath, "at the end")
        daemon = None
    finally:
        # Killed together, then waited for: they exit (the balloon's GiBs freed) side by side.
        mine = [p for p, _ in procs.values()] + balloon
        for p in mine:
            p.kill()
        for p in mine:
            p.wait()
        if daemon:
            stop(tap, daemon, logpath, "after a failure")
        time.sleep(0.5)
        if tier:
            e2elib.destroy_tier(tap, tier)
        e2elib.remove_cgroups(PARENT, ["crit", "be"])
        tap.diag(f"{el()} cleaned up")
    print(f"1..{tap.n}")
    print(f"# critical_low: {tap.n - tap.failed} passed, {tap.failed} failed", flush=True)
    sys.exit(1 if tap.failed else 0)


if __name__ == "__main__":
    main()
