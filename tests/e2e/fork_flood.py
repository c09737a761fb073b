#!/usr/bin/env python3
"""End-to-end: issue 12, item 6 under load. One opted-in container forks 1,000 processes that
each load libpagetier.so and register with pagetierd, and keep running; pagetierd must not
run out of descriptors, must keep every other container as it was, and must go on working.
Runs as root inside the test VM with pagetier.ko loaded; prints TAP, the figures as `#`
diagnostics.

pagetierd runs with RLIMIT_NOFILE 1024:4096 (PT_FORK_FLOOD_NOFILE="soft:hard"): systemd's
soft default without the unit's LimitNOFILE, and a hard limit low enough to mean something.
pagetierd raises its soft limit to the hard one at start-up (systemd 240 and later give
524288, which no thousand processes exhaust); at 4096, a thousand registered processes (a
socket and a pidfd each) with the pidfds pagetierd pins for every process it scans would
reach it: only the caps keep it away. The preload server's table is then 512 peers (a
quarter of the limit, two descriptors a peer), of which one cgroup may take 256; the pidfds
that pin processes are at most another quarter, 64 per holder (daemon/pidfd.h), the other
processes named by pid and start time. Three containers:

  critical  class critical (pagetierd sets memory.low=max), 32 MiB: memory.low must stay
            set the whole time, and nothing of it swapped;
  victim    besteffort, 64 MiB, idle after 2 s: while the flood's processes live, it must be
            offloaded to the tier and woken with every byte verified;
  hostile   besteffort: one process, started with LD_PRELOAD=libpagetier.so, forks
            PT_FORK_FLOOD_CHILDREN (1000) children; each registers a ring of its own with
            pagetierd (the library's fork path) and stays.

Measured: pagetierd's open descriptors (/proc/PID/fd, sampled every 200 ms: the peak), the
connections it holds per container (its sockets' peers, through ss(8)), the registrations it
refused (its log), contexts dropped (its log), memory.low, the victim's offload and wake, and
pagetierd's CPU during the flood.

The daemon and library under test: PT_E2E_BIN_DIR (pagetierd, pagetierctl; default
build/bin) and PT_E2E_LIB (default build/lib/libpagetier.so), so that the same scenario runs
against binaries built from another commit.

  fork_flood.py                       the scenario
  fork_flood.py --flood N --ready F   (internal) the hostile container's process
"""
import os
import sys


# --- the hostile container's process ---------------------------------------------------

def flood(n, ready):
    """Forks @n children and keeps them: this process runs under LD_PRELOAD=libpagetier.so, so
    each child has the library and registers a ring of its own at its first allocation
    after fork (no exec: nothing to read from the file system per child). At most 8
    children have not yet sent their registration at a time: a hostile process paces
    itself, so that none is turned away for crowding the pending registrations. Then waits
    for its end (the test kills the cgroup)."""
    import gc
    import select
    import signal
    import time

    r, w = os.pipe()
    marks, kids, outstanding = [], 0, 0
    t0 = time.monotonic()

    def sent():
        """One child said it sent its registration (False: none within 5 s)."""
        if select.select([r], [], [], 5)[0]:
            os.read(r, 1)
            return True
        return False

    gc.freeze()		# the children share the heap: no collection touching all of it
    for _ in range(n):
        while outstanding >= 8 and sent():
            outstanding -= 1
        outstanding = min(outstanding, 7)	# a child that said nothing in 5 s
        if os.fork() == 0:
            gc.disable()
            # An allocation after fork: the library registers this process (connect and
            # hello, synchronously, inside the allocation).
            keep = bytearray(4096)
            os.write(w, b".")
            os.close(r)
            os.close(w)
            while keep:
                signal.pause()
        kids += 1
        outstanding += 1
        if kids % 100 == 0:
            marks.append(f"{kids}:{time.monotonic() - t0:.0f}s")
    while outstanding and sent():
        outstanding -= 1
    with open(ready + ".tmp", "w") as f:
        f.write(" ".join(marks) + "\n")
    os.rename(ready + ".tmp", ready)
    while True:
        signal.pause()


# The hostile container's process runs this file as `python3 -S -I fork_flood.py --flood N
# --ready F`: no site packages and none of the modules below, only what flood() imports. A
# fork's cost (page tables copied, the heap's pages copied on write by the child's reference
# counting) grows with the process, and a thousand forks of the lean interpreter take about a
# third of the time of the full one's (natively 0.9 against 3.4 ms a child).
if __name__ == "__main__" and sys.argv[1:2] == ["--flood"] and len(sys.argv) == 5 and \
        sys.argv[3] == "--ready":
    flood(int(sys.argv[2]), sys.argv[4])
    raise SystemExit(0)

import argparse
import json
import re
import resource
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import e2elib
from e2elib import BIN, CG, MIB, TOP, Tap, run, wait_for

PARENT = "pt-flood"
CRIT, VICTIM, HOSTILE = "critical", "victim", "hostile"
NAMES = [CRIT, VICTIM, HOSTILE]
DAEMON_DIR = os.environ.get("PT_E2E_BIN_DIR") or BIN
LIB = os.environ.get("PT_E2E_LIB") or os.path.join(TOP, "build", "lib", "libpagetier.so")
NOFILE = os.environ.get("PT_FORK_FLOOD_NOFILE") or "1024:4096"
CHILDREN = int(os.environ.get("PT_FORK_FLOOD_CHILDREN") or 1000)
CAP_PER_CGROUP = 256		# preload_server.c's max_peers_per_cgroup
CRIT_SIZE, VICTIM_SIZE = 32 * MIB, 64 * MIB


# --- measurements ----------------------------------------------------------------------

def ctl(*args, runtime):
    """pagetierctl of the daemon under test (its control protocol)."""
    return run([os.path.join(DAEMON_DIR, "pagetierctl"), "--runtime-dir", runtime] + list(args))


def status(runtime):
    r = ctl("--json", "status", runtime=runtime)
    if r.returncode != 0:
        return None
    try:
        return {c["name"]: c for c in json.loads(r.stdout)["containers"]}
    except (ValueError, KeyError):
        return None


def nfds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def fd_kinds(pid):
    """pagetierd's descriptors by kind: {"socket": n, "pidfd": n, ...}."""
    kinds = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return kinds
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        k = ("socket" if link.startswith("socket:") else
             link[len("anon_inode:"):].strip("[]") if link.startswith("anon_inode:") else
             "cgroupfs" if link.startswith(CG) else
             "/proc" if link.startswith("/proc") else "other")
        kinds[k] = kinds.get(k, 0) + 1
    return kinds


def cpu_ticks(pid):
    """utime + stime of @pid, all its threads, in clock ticks."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read().rsplit(")", 1)[1].split()
        return int(st[11]) + int(st[12])
    except (OSError, IndexError, ValueError):
        return 0


def fd_limit(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return int(soft), int(hard)
    return 0, 0


def cgroup_pids(name):
    try:
        with open(os.path.join(CG, PARENT, name, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def sockets_of(pid):
    """Socket inodes open in @pid."""
    out = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                out.add(int(link[8:-1]))
    except OSError:
        pass
    return out


def connections_by_container(daemon_pid, sock):
    """The preload connections pagetierd holds, by the container of the process at their
    other end: {container: n}, plus "?" for peers in none of ours (gone, or elsewhere). None
    when ss(8) cannot say (no unix_diag)."""
    r = run(["ss", "-xnH"])
    if r.returncode != 0:
        return None
    mine = sockets_of(daemon_pid)
    peer_of = {}
    for line in r.stdout.splitlines():
        t = line.split()
        # u_str ESTAB 0 0 /path/preload.sock 1234 * 1235
        if len(t) >= 8 and t[4] == sock and t[5].isdigit() and t[7].isdigit():
            if int(t[5]) in mine and int(t[7]):
                peer_of[int(t[7])] = int(t[5])
    counts = {n: 0 for n in NAMES}
    found = set()
    for n in NAMES:
        for pid in cgroup_pids(n):
            hit = sockets_of(pid) & peer_of.keys()
            counts[n] += len(hit)
            found |= hit
    counts["?"] = len(peer_of) - len(found)
    return counts


class Monitor(threading.Thread):
    """Samples pagetierd's descriptors and CPU and the critical container's memory.low."""

    def __init__(self, pid, runtime):
        super().__init__(daemon=True)
        self.pid, self.runtime = pid, runtime
        self.pidfds = {"peak": 0, "limit": 0}	# pagetierctl status's, once a second
        self.stop = threading.Event()
        self.samples = 0
        self.peak = self.peak_t = 0
        self.peak_kinds = {}
        self.low_lost = []	# (time, value) samples where memory.low was not max
        self.t0 = time.monotonic()

    def run(self):
        low = os.path.join(CG, PARENT, CRIT, "memory.low")
        while not self.stop.is_set():
            n = nfds(self.pid)
            t = time.monotonic() - self.t0
            if n > self.peak:
                self.peak, self.peak_t = n, t
                self.peak_kinds = fd_kinds(self.pid)
            try:
                with open(low) as f:
                    v = f.read().strip()
            except OSError as e:
                v = f"unreadable ({e})"
            if v != "max" and len(self.low_lost) < 1000:
                self.low_lost.append((round(t, 1), v))
            if self.samples % 5 == 0:
                self.sample_pidfds()
            self.samples += 1
            self.stop.wait(0.2)

    def sample_pidfds(self):
        r = ctl("--json", "status", runtime=self.runtime)
        try:
            p = json.loads(r.stdout)["pidfds"]
        except (ValueError, KeyError, TypeError):
            return	# an older pagetierd: no such member
        self.pidfds["limit"] = p["limit"]
        self.pidfds["peak"] = max(self.pidfds["peak"], p["open"])


# --- the scenario ----------------------------------------------------------------------

def write_config(d):
    """Keys every pagetierd since issue 12 knows: the scenario runs against older ones too."""
    os.makedirs(os.path.join(d, "containers.d"))
    with open(os.path.join(d, "pagetierd.conf"), "w") as f:
        f.write(f"[daemon]\ncgroup_root = {CG}\nruntime_dir = {d}/run\n"
                "poll_interval = 200ms\nlog_level = info\n")
    with open(os.path.join(d, "containers.d", "flood.conf"), "w") as f:
        f.write(f"[{CRIT}]\nmatch_cgroup = /{PARENT}/{CRIT}\nclass = critical\n\n"
                f"[{VICTIM}]\nmatch_cgroup = /{PARENT}/{VICTIM}\nclass = besteffort\n"
                "idle_threshold = 2s\nprefetch = yes\n\n"
                f"[{HOSTILE}]\nmatch_cgroup = /{PARENT}/{HOSTILE}\nclass = besteffort\n"
                "idle_threshold = 10m\n")
    e2elib.fix_perms(d)


def start_ptwork(name, size, work, work_ms=1500):
    ready, report = os.path.join(work, f"{name}.ready"), os.path.join(work, f"{name}.report")
    p = e2elib.start_in_cgroup(PARENT, name, f"--size {size // MIB}M --work-ms {work_ms} "
                               f"--ready {ready} --report {report}")
    return {"proc": p, "ready": ready, "report": report}


def read_report(w, timeout):
    wait_for(lambda: os.path.exists(w["report"]) and os.path.getsize(w["report"]), timeout,
             step=0.2)
    try:
        with open(w["report"]) as f:
            return json.loads(f.read())
    except (OSError, ValueError) as e:
        return {"error": str(e)}


def log_count(log, pattern):
    return len(re.findall(pattern, log))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flood", type=int)
    ap.add_argument("--ready")
    args = ap.parse_args()
    if args.flood:
        flood(args.flood, args.ready)
        return

    tap = Tap()
    print("TAP version 13", flush=True)
    work = tempfile.mkdtemp(prefix="pt-flood-")
    daemon = tier = mon = hostile = None
    loads = {}
    fig = {}
    soft, hard = (int(x) for x in NOFILE.split(":"))
    log_path = os.path.join(work, "pagetierd.log")
    try:
        for f in (os.path.join(DAEMON_DIR, "pagetierd"), os.path.join(DAEMON_DIR, "pagetierctl"),
                  LIB):
            if not os.path.exists(f):
                tap.bail(f"{f} missing (PT_E2E_BIN_DIR, PT_E2E_LIB)")
        if not os.path.exists("/dev/pagetier"):
            tap.bail("/dev/pagetier missing: pagetier.ko is not loaded")
        tap.diag(f"pagetierd {DAEMON_DIR}/pagetierd, library {LIB}; RLIMIT_NOFILE {soft}:{hard}, "
                 f"{CHILDREN} registering processes")
        tier = e2elib.create_tier(tap, "/dev/nvme0n1")
        ids = e2elib.setup_cgroups(PARENT, NAMES)
        conf = os.path.join(work, "etc")
        write_config(conf)
        runtime = os.path.join(conf, "run")
        sock = os.path.join(runtime, "preload.sock")
        daemon = subprocess.Popen(
            [os.path.join(DAEMON_DIR, "pagetierd"), "--config-dir", conf],
            stdout=open(log_path, "w"), stderr=subprocess.STDOUT,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard)))
        if not wait_for(lambda: (status(runtime) or {}).keys() >= set(NAMES) and
                        os.path.exists(sock), 30):
            tap.bail("pagetierd did not start, or does not track the three containers")
        fig["limit"] = fd_limit(daemon.pid)
        tap.ok(fig["limit"][0] <= hard,
               f"pagetierd runs with RLIMIT_NOFILE {fig['limit'][0]}:{fig['limit'][1]} "
               f"(given {soft}:{hard})")
        tap.ok(wait_for(lambda: e2elib.cg_read(CRIT, "memory.low", PARENT).strip() == "max", 10),
               "critical: pagetierd set memory.low=max")
        mon = Monitor(daemon.pid, runtime)
        mon.start()
        loads[CRIT] = start_ptwork(CRIT, CRIT_SIZE, work)
        if not wait_for(lambda: os.path.exists(loads[CRIT]["ready"]), 120):
            tap.bail("the critical container's workload did not become ready")
        time.sleep(1)
        fig["fds_before"] = nfds(daemon.pid)

        # The flood: one process of the hostile container forks the registering children.
        ready = os.path.join(work, "flood.ready")
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        procs = os.path.join(CG, PARENT, HOSTILE, "cgroup.procs")
        cpu0, t0 = cpu_ticks(daemon.pid), time.monotonic()
        hostile = subprocess.Popen(
            ["sh", "-c", f"echo $$ > {procs} && exec python3 -S -I {os.path.abspath(__file__)} "
             f"--flood {CHILDREN} --ready {ready}"],
            env=dict(env, LD_PRELOAD=LIB, PAGETIER_PRELOAD_SOCK=sock))
        flooded = wait_for(lambda: os.path.exists(ready) or hostile.poll() is not None, 900,
                           step=0.5)
        if not os.path.exists(ready):
            tap.bail(f"the hostile container's process did not fork its {CHILDREN} children "
                     f"(exit {hostile.poll()})")
        fig["flood_s"] = time.monotonic() - t0
        with open(ready) as f:
            tap.diag(f"forked (children:time): {f.read().strip()}")
        # The victim starts now, with the flood's processes alive: it fills its memory and
        # works while the registrations settle and the checks below run, and goes idle
        # after them. Busy for 6 s: still active when the neighbour below joins its cgroup
        # (a process attached to an idle container is a wake; one that came earlier would
        # cost a wake and a second offload, no more).
        loads[VICTIM] = start_ptwork(VICTIM, VICTIM_SIZE, work, work_ms=6000)
        peak_anon = [0]

        def victim_ready():
            try:
                peak_anon[0] = max(peak_anon[0], e2elib.cg_key(VICTIM, "memory.stat", "anon",
                                                               PARENT))
            except (OSError, KeyError):
                pass
            return os.path.exists(loads[VICTIM]["ready"])
        # Registrations not answered within 5 s are dropped by the server: past that, what
        # pagetierd holds is registered peers. (The victim's memory sampled meanwhile.)
        settle_end = time.monotonic() + 6
        while time.monotonic() < settle_end:
            victim_ready()
            time.sleep(0.1)
        fig["cpu_pct"] = (100.0 * (cpu_ticks(daemon.pid) - cpu0) / os.sysconf("SC_CLK_TCK") /
                          (time.monotonic() - t0))
        kids = [p for p in cgroup_pids(HOSTILE) if p != hostile.pid]
        with_lib = 0
        for p in kids:
            try:
                with open(f"/proc/{p}/maps") as f:
                    with_lib += "libpagetier" in f.read()
            except OSError:
                pass
        fig["hostile_mem"] = e2elib.cg_u64(HOSTILE, "memory.current", PARENT)
        tap.ok(flooded and len(kids) == CHILDREN and with_lib == CHILDREN,
               f"hostile: {len(kids)} children alive, {with_lib} with libpagetier.so loaded "
               f"(forked in {fig['flood_s']:.0f} s; the container holds "
               f"{fig['hostile_mem'] // MIB} MiB)")
        conns = connections_by_container(daemon.pid, sock)
        fig["peers"] = conns
        fig["fds_flood"] = nfds(daemon.pid)
        fig["kinds_flood"] = fd_kinds(daemon.pid)
        st = status(runtime)
        fig["ctl_at_peak"] = st is not None
        tap.ok(st is not None, "pagetierctl status answers with the flood's processes alive")
        if conns is None:
            tap.ok(False, "pagetierd's connections per container (ss -x failed: no unix_diag?)")
        else:
            cap = min(CAP_PER_CGROUP, max(1, fig["limit"][0] // 8))
            tap.ok(0 < conns[HOSTILE] <= cap,
                   f"hostile: pagetierd holds {conns[HOSTILE]} registered processes of "
                   f"{CHILDREN} (at most {cap}: the cgroup's cap, or a quarter of the fd limit)",
                   json.dumps(conns))
            tap.diag("preload connections held, by container: " + json.dumps(conns))

        # Another container's preloaded process, once the flood has taken what it could.
        vprocs = os.path.join(CG, PARENT, VICTIM, "cgroup.procs")
        neighbour = subprocess.Popen(["sh", "-c", f"echo $$ > {vprocs} && exec sleep 100000"],
                                     env=dict(env, LD_PRELOAD=LIB, PAGETIER_PRELOAD_SOCK=sock))
        held = wait_for(lambda: (connections_by_container(daemon.pid, sock) or {})
                        .get(VICTIM, 0) >= 1, 10, step=0.5)
        fig["neighbour"] = bool(held)
        tap.ok(bool(held), "victim: a preloaded process of this other container still registers "
               "with the flood's processes alive",
               json.dumps(connections_by_container(daemon.pid, sock)))
        neighbour.kill()
        neighbour.wait()

        # The victim goes idle with the flood's processes alive: offloaded, woken, verified.
        if not wait_for(victim_ready, 120, step=0.1):
            tap.bail("the victim's workload did not become ready")
        t_idle = time.monotonic()
        # Its memory at the fill, at least: the samples may have begun after it.
        peak_anon[0] = max(peak_anon[0], VICTIM_SIZE)

        def offloaded():
            s = (status(runtime) or {}).get(VICTIM, {})
            return (s.get("state") == "idle" and
                    e2elib.tier_bytes_by_cgroup().get(ids[VICTIM], 0) >= 0.9 * peak_anon[0])
        wait_for(offloaded, 120, step=0.5)
        on_tier = e2elib.tier_bytes_by_cgroup().get(ids[VICTIM], 0)
        vst = (status(runtime) or {}).get(VICTIM, {})
        fig["victim_tier"] = on_tier
        tap.ok(vst.get("state") == "idle" and on_tier >= 0.9 * peak_anon[0],
               f"victim: idle and offloaded with the flood alive ({on_tier // MIB} of "
               f"{peak_anon[0] // MIB} MiB on the tier, {time.monotonic() - t_idle:.0f} s)",
               json.dumps(vst))
        wakes0 = vst.get("wakes", 0)
        loads[VICTIM]["proc"].send_signal(signal.SIGUSR1)
        rep = read_report(loads[VICTIM], 180)
        fig["victim_verified"] = rep.get("verified", 0)
        tap.ok(rep.get("mismatches") == 0 and rep.get("verified") == VICTIM_SIZE,
               f"victim: woken, {rep.get('verified', 0) // MIB} of {VICTIM_SIZE // MIB} MiB "
               f"verified byte for byte, {rep.get('mismatches')} mismatches "
               f"(wake {rep.get('wake_ms')} ms)", json.dumps(rep))
        # This wake's prefetch, not an earlier wake's count: the wake ends when its prefetch
        # is applied, which on the debug kernel (swap-in at 0.5 MB/s) came after the
        # process had read its 64 MiB back by itself.
        woke = e2elib.wait_wake_applied(lambda: (status(runtime) or {}).get(VICTIM, {}),
                                        wakes0, 60)
        vst = (status(runtime) or {}).get(VICTIM, {})
        tap.ok(bool(woke) and vst.get("prefetch_requested_bytes", 0) > 0,
               f"victim: pagetierd saw the wake ({vst.get('wake_source')}) and prefetched "
               f"{vst.get('prefetch_requested_bytes', 0) // MIB} MiB", json.dumps(vst))

        # The critical container: never offloaded, every byte intact.
        loads[CRIT]["proc"].send_signal(signal.SIGUSR1)
        rep = read_report(loads[CRIT], 120)
        swap = e2elib.cg_u64(CRIT, "memory.swap.current", PARENT)
        tap.ok(rep.get("mismatches") == 0 and rep.get("verified") == CRIT_SIZE and swap == 0,
               f"critical: nothing swapped ({swap} bytes), {rep.get('verified', 0) // MIB} MiB "
               "verified", json.dumps(rep))
        fig["fds_end"] = nfds(daemon.pid)
        st = status(runtime)
        fig["tracked_end"] = sorted(st) if st is not None else None
    finally:
        if mon:
            mon.stop.set()
            mon.join()
        kill = os.path.join(CG, PARENT, HOSTILE, "cgroup.kill")
        if os.path.exists(kill):
            with open(kill, "w") as f:
                f.write("1")
        if hostile:
            try:
                hostile.wait(60)
            except subprocess.TimeoutExpired:
                pass
        for w in loads.values():
            w["proc"].kill()
            w["proc"].wait()
        wait_for(lambda: not cgroup_pids(HOSTILE), 60)
        log = ""
        if daemon:
            daemon.terminate()
            try:
                rc = daemon.wait(60)
            except subprocess.TimeoutExpired:
                daemon.kill()
                rc = daemon.wait()
            tap.ok(rc == 0, "pagetierd stops cleanly on SIGTERM", f"exit {rc}")
            with open(log_path) as f:
                log = f.read()
        if mon and log:
            report_figures(tap, mon, fig, log)
        if tier:
            e2elib.destroy_tier(tap, tier)
        try:
            e2elib.remove_cgroups(PARENT, NAMES)
        except OSError as e:
            tap.diag(f"cgroups not removed: {e}")
        shutil.rmtree(work, ignore_errors=True)
    print(f"1..{tap.n}")
    print(f"# fork_flood: {tap.n - tap.failed} passed, {tap.failed} failed", flush=True)
    sys.exit(1 if tap.failed else 0)


def report_figures(tap, mon, fig, log):
    """The checks that read pagetierd's log (written out at its exit), and the figures."""
    limit = fig.get("limit", (0, 0))[0]
    emfile = log_count(log, r"Too many open files")
    accept = log_count(log, r"cannot accept")
    dropped = re.findall(r"no longer tracking (\S+) \(([^)]*)\)", log)
    walk = log_count(log, r"walking \S+ failed")
    m = re.search(r"preload: (\d+) peers registered, (\d+) not opted in, (\d+) bad", log)
    registered, not_in, bad = (int(x) for x in m.groups()) if m else (None, None, None)
    m = re.search(r"(\d+) connections refused \((\d+) for their cgroup's pending slots\), "
                  r"(\d+) registrations over a cgroup's cap", log)
    refused, refused_pending, over_cap = (int(x) for x in m.groups()) if m else (0, 0, 0)
    # Sampled every 200 ms, the peak may miss a scan's: it must leave a tenth of the limit.
    tap.ok(0 < mon.peak <= 0.9 * limit and emfile == 0 and accept == 0,
           f"pagetierd never ran out of descriptors: peak {mon.peak} of {limit} open, "
           f"{emfile} 'Too many open files' and {accept} 'cannot accept' in its log",
           "\n".join(l for l in log.splitlines() if "open files" in l or "accept" in l)[-3000:])
    # The pidfds that pin processes stay within their limits (daemon/pidfd.h): the daemon's
    # (a quarter of the descriptors) and each holder's (PT_PIDFD_HOLDER_MAX = 64: the hostile
    # container's model, its wake set, its mapped-file set and a scan in flight); the status
    # counts them. /proc/PID/fd also shows the held clients' (SO_PEERPIDFD, 6.5 and later).
    pins = mon.pidfds
    tap.ok(pins.get("limit", 0) > 0 and 0 < pins["peak"] <= min(pins["limit"], 4 * 64 + 16),
           f"pidfds pinning processes within their limits: {pins.get('peak')} at the most seen "
           f"by pagetierctl status (limit {pins.get('limit')}; 4 holders of 64 in the hostile "
           f"container, a few for the others)", json.dumps(pins))
    need = CHILDREN - (fig.get("peers") or {}).get(HOSTILE, 0)
    tap.ok(over_cap + refused >= need > 0,
           f"hostile: the registrations beyond the cap refused and counted ({over_cap} over the "
           f"cgroup's cap, {refused} connections refused, of {need} not held)",
           "\n".join(l for l in log.splitlines() if "preload" in l)[-3000:])
    tap.ok(not dropped and fig.get("tracked_end") == sorted(NAMES),
           f"no context dropped ({len(dropped)} in the log: "
           f"{', '.join(f'{p} ({w})' for p, w in dropped[:5])}); tracked at the end: "
           f"{fig.get('tracked_end')}")
    tap.ok(mon.samples > 0 and not mon.low_lost,
           f"critical: memory.low stayed max in all {mon.samples} samples (200 ms apart) "
           f"({len(mon.low_lost)} not)", json.dumps(mon.low_lost[:20]))
    conns = fig.get("peers") or {}
    tap.diag("figures:")
    tap.diag(f"  RLIMIT_NOFILE of pagetierd: {fig.get('limit')}")
    tap.diag(f"  open fds: {fig.get('fds_before')} before the flood, peak {mon.peak} "
             f"(at {mon.peak_t:.0f} s), {fig.get('fds_flood')} with the flood settled, "
             f"{fig.get('fds_end')} at the end")
    tap.diag(f"  by kind: at the peak {json.dumps(mon.peak_kinds)}, with the flood settled "
             f"{json.dumps(fig.get('kinds_flood'))}")
    tap.diag(f"  preload connections held per container: {json.dumps(conns)}; another "
             f"container's preloaded process registered during the flood: {fig.get('neighbour')}")
    tap.diag(f"  registrations: {registered} registered, {not_in} not opted in, {bad} bad; "
             f"{over_cap} over the cgroup's cap, {refused} connections refused "
             f"({refused_pending} for the cgroup's pending slots)")
    tap.diag(f"  contexts dropped: {len(dropped)}; failed cgroup walks logged: {walk}; "
             f"'Too many open files' {emfile}, 'cannot accept' {accept}")
    tap.diag(f"  memory.low of the critical container: "
             f"{'max throughout' if not mon.low_lost else 'lost ' + json.dumps(mon.low_lost[:5])}")
    tap.diag(f"  victim: {fig.get('victim_tier', 0) // MIB} MiB on the tier while idle, "
             f"{fig.get('victim_verified', 0) // MIB} of {VICTIM_SIZE // MIB} MiB verified "
             "after the wake")
    tap.diag(f"  pagetierd CPU during the flood: {fig.get('cpu_pct', 0):.1f}% of one CPU "
             f"over {fig.get('flood_s', 0):.0f} s of forking and 6 s settling; "
             f"pagetierctl answered at the peak: {fig.get('ctl_at_peak')}")
    warn = [l for l in log.splitlines() if l.startswith(("<3>", "<4>"))]
    tap.diag("pagetierd's warnings and errors (first 40):\n" + "\n".join(warn[:40]))


if __name__ == "__main__":
    main()
