#!/usr/bin/env python3
"""Wake of real applications and of every kind of memory, run inside the VM by
bench/wake/apps.sh (not a test).

The NVMe namespace is split in three: p1 plain swap, p2 a pagetier tier, p3 an ext4 file
system for the containers' files. Every partition is on the same drive, so the device
profile (QEMU throttling) is the same for all three modes. For each workload, in its own
cgroup, three wakes in turn:

  never     it stays resident: a pause, then the wake (the baseline)
  swap      plain swap on p1 only: memory.reclaim until it is out (what a host's proactive
            reclaim does: Senpai, DAMON_RECLAIM, memory.high), then the wake, demand paging
  pagetier  the tier on p2 only, pagetierd running: idle detected, offloaded, then the wake,
            seen by pagetierd (packet, CPU or swap-in), prefetched
  paced     (MODES="... paced") as pagetier, with prefetch_rate at 80% of the drive's
            measured sequential read bandwidth
  nopf      (MODES="... nopf") as pagetier, with prefetch = no: demand paging from the
            tier, to tell the tier's part from the prefetch's

Workloads:
  kinds     ptwork: private anonymous memory, shared memory (MAP_SHARED anonymous and a
            memfd) and a mapped file on p3. Its wake reads and checks all of it: the time
            to have the whole working set back, and its bandwidth.
  redis     redis-server (Debian's, default configuration), ITEMS of 1 KiB.
  postgres  PostgreSQL 15 with shared buffers warm (pg_prewarm), data files on p3.
  pyweb     a Python web service (pyweb.py) holding its catalog in its heap.
For the servers the wake is an open-loop client at a third of the rate the server can serve
resident (RATE requests/s at most) over random items of the whole data set (a late request counts from when it was due): the first request's latency,
the p99 over the first 5 s, and, sampled every 50 ms for WINDOW_S, what is resident: the
lesser of memory.current (which counts a swap-in's page from its allocation, before its read
lands) and what was resident when out plus what the drive has read since the wake. The time
until 90% of the working set is resident again, if it is within the window.

Prints one JSON line per (workload, mode) and writes $PT_OUT/wake-apps.json.
"""
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import e2elib  # noqa: E402
import servers  # noqa: E402
from e2elib import BIN, CG, MIB, Tap, run, status_json, wait_for  # noqa: E402

PARENT = "pt-wake"
DEV = os.environ.get("DEV", "/dev/nvme0n1")
RATE = float(os.environ.get("RATE", "40"))
WINDOW_S = float(os.environ.get("WINDOW_S", "10"))
P99_S = 5.0
IDLE_S = float(os.environ.get("IDLE_S", "2"))
WARM_S = float(os.environ.get("WARM_S", "8"))	# pagetier: the server works this long first
MODES = os.environ.get("MODES", "never swap pagetier").split()
WORKLOADS = os.environ.get("WORKLOADS", "kinds redis postgres pyweb").split()
REDIS_ITEMS = int(os.environ.get("REDIS_ITEMS", "150000"))
PYWEB_ITEMS = int(os.environ.get("PYWEB_ITEMS", "24000"))
KINDS_ANON, KINDS_SHM, KINDS_FILE = 64, 32, 32	# MiB
OUT_FLOOR = 8 * MIB	# "out": at most this much resident besides the idle working set


def log(msg):
    print(f"# {time.strftime('%H:%M:%S')} {msg}", flush=True)


def cg(name):
    return os.path.join(CG, PARENT, name)


def current(name):
    return e2elib.cg_u64(name, "memory.current", PARENT)


def part(n):
    return f"{DEV}p{n}"


class PyWeb:
    name = "pyweb"

    def __init__(self, cgdir, work, port=8097, items=PYWEB_ITEMS, size=4096):
        self.cgdir, self.port, self.items, self.size = cgdir, port, items, size
        self.proc = self.conn = None

    def start(self):
        self.proc = servers.in_cgroup(self.cgdir, [sys.executable, os.path.join(HERE, "pyweb.py"),
                                                   str(self.port), str(self.items),
                                                   str(self.size)])
        if not servers.wait_port(self.port, 300):
            raise RuntimeError("pyweb did not start")

    def load(self):
        return self.items * self.size

    def request(self, i):
        t = time.monotonic()
        for attempt in (0, 1):
            try:
                if not self.conn:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                self.conn.request("GET", f"/item/{i}")
                r = self.conn.getresponse()
                body = r.read()
                return r.status == 200 and body == servers.value_of(i, self.size), \
                    time.monotonic() - t
            except (OSError, http.client.HTTPException):
                self.conn = None
                if attempt:
                    raise
        return False, 0.0

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait(30)


def make_server(kind, work):
    d = cg(kind)
    if kind == "redis":
        return servers.Redis(d, work, items=REDIS_ITEMS, size=1024)
    if kind == "postgres":
        return servers.Postgres(d, work)
    return PyWeb(d, work)


def swap_only(dev):
    """@dev the only swap device (None: none)."""
    for line in open("/proc/swaps").read().splitlines()[1:]:
        name = line.split()[0]
        if name != dev:
            run(["swapoff", name], check=True)
    if dev and dev not in open("/proc/swaps").read():
        run(["swapon", "-p", "32767", dev], check=True)


def reclaim_out(name, floor):
    """memory.reclaim until @name holds at most @floor, or stops giving (demand-paging mode)."""
    last, stuck = current(name), 0
    while current(name) > floor and stuck < 5:
        try:
            with open(os.path.join(cg(name), "memory.reclaim"), "w") as f:
                f.write(str(max(current(name) - floor, MIB)))
        except OSError:
            pass	# EAGAIN: less than asked
        now = current(name)
        stuck = stuck + 1 if now >= last - MIB else 0
        last = now
    time.sleep(1)
    return current(name)


class Daemon:
    def __init__(self, work, name, prefetch_rate=None, prefetch=True):
        self.conf = os.path.join(work, f"etc-{name}")
        os.makedirs(os.path.join(self.conf, "containers.d"), exist_ok=True)
        self.runtime = os.path.join(self.conf, "run")
        with open(os.path.join(self.conf, "pagetierd.conf"), "w") as f:
            f.write(f"[daemon]\nruntime_dir = {self.runtime}\n"
                    f"log_level = {os.environ.get('PAGETIERD_LOG_LEVEL', 'info')}\n")
            if prefetch_rate:
                f.write(f"prefetch_rate = {prefetch_rate // MIB}M\n")
        with open(os.path.join(self.conf, "containers.d", "bench.conf"), "w") as f:
            f.write(f"[{name}]\nmatch_cgroup = /{PARENT}/{name}\nidle_threshold = 2s\n"
                    f"prefetch = {'yes' if prefetch else 'no'}\n")
        e2elib.fix_perms(self.conf)
        self.log = open(os.path.join(os.environ.get("PT_OUT", work), f"pagetierd-{name}.log"), "a")
        self.proc = subprocess.Popen([os.path.join(BIN, "pagetierd"), "--config-dir", self.conf],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: status_json(self.runtime) is not None, 60):
            raise RuntimeError("pagetierd did not start")

    def status(self, name):
        return (status_json(self.runtime) or {}).get(name, {})

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)
        self.log.close()


def sample_resident(name, out_bytes, stop, out):
    """Samples what is resident every 50 ms into @out[(t, bytes)] until @stop is set."""
    t0, r0 = time.monotonic(), dev_reads()
    while not stop.is_set():
        out.append((time.monotonic() - t0,
                    min(current(name), out_bytes + dev_reads() - r0)))
        time.sleep(0.05)


def t_resident(samples, want):
    for t, cur in samples:
        if cur >= want:
            return round(t, 2)
    return None


def wake_server(srv, name, warm, out_bytes, rate, mark=None):
    """The open-loop wake: returns the figures of one wake (@mark: the mode, for
    HOST_CPU=1)."""
    rnd = random.Random(7)
    lat, wrong = [], 0
    samples, stop = [], threading.Event()
    mon = threading.Thread(target=sample_resident, args=(name, out_bytes, stop, samples))
    if os.environ.get("HOST_CPU") == "1" and mark:
        # The wake's start on the host's clock: the file's time (host_cpu.py report).
        with open(os.path.join(os.environ["PT_OUT"], f"mark-{name}-{mark}"), "w"):
            pass
    t0 = time.monotonic()
    mon.start()
    k = 0
    while True:
        due = t0 + k / rate
        if due - t0 >= WINDOW_S:
            break
        now = time.monotonic()
        if now < due:
            time.sleep(due - now)
        ok, _ = srv.request(rnd.randrange(srv.items))
        lat.append((due - t0, time.monotonic() - due))
        wrong += not ok
        k += 1
    stop.set()
    mon.join()
    first5 = sorted(l for d, l in lat if d < P99_S)
    p99 = first5[min(len(first5) - 1, int(len(first5) * 0.99))]
    extra = {}
    if os.environ.get("WAKE_TRACE") == "1":
        # Each request's due time and latency (ms, from the client's first), and the
        # clock they are on, to be matched with the trace's.
        extra = {"t0_monotonic": t0,
                 "requests_ms": [[round(d * 1000, 1), round(x * 1000, 1)] for d, x in lat]}
    return {**extra, "first_ms": round(lat[0][1] * 1000, 1), "p99_5s_ms": round(p99 * 1000, 1),
            "p50_5s_ms": round(statistics.median(first5) * 1000, 1),
            "requests": len(lat), "wrong": wrong,
            "t90_resident_s": t_resident(samples, 0.9 * warm),
            "resident_at_5s_pct": round(100 * max((c for t, c in samples if t <= 5), default=0)
                                        / warm, 1)}


def start_trace(w, mode):
    """WAKE_TRACE=1, a diagnosis: every task switch of the guest during the wake, with the
    kernel stack where each task left the CPU (perf sched record -g), so that the server's
    slow requests can be matched to where it waited. Under TCG perf takes seconds to
    start (it lists every process's mappings): it starts disabled and is enabled through
    its control FIFO once ready, and the wake waits for its ack."""
    if os.environ.get("WAKE_TRACE") != "1":
        return None
    out = os.environ.get("PT_OUT", "/tmp")
    path = os.path.join(out, f"sched-{w}-{mode}.data")
    # The FIFOs on the guest's own /tmp: PT_OUT is the host's directory (9p), where a
    # FIFO opens with ENXIO.
    ctl, ack = f"/tmp/perf-{w}-{mode}.ctl", f"/tmp/perf-{w}-{mode}.ack"
    for f in (ctl, ack):
        if os.path.exists(f):
            os.unlink(f)
        os.mkfifo(f)
    p = subprocess.Popen(["perf", "sched", "record", "-D", "-1", "--control",
                          f"fifo:{ctl},{ack}", "-g", "-o", path, "--", "sleep", "120"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(ctl, "w") as c, open(ack) as a:
        c.write("enable\n")
        c.flush()
        a.readline()
    return p, path, time.monotonic()


def end_trace(tracer, srv, w, mode):
    """The server's off-CPU periods from the trace: perf sched timehist of its process
    into sched-W-MODE.txt, next to its raw data."""
    p, path, t_enabled = tracer
    p.send_signal(signal.SIGINT)
    p.wait()
    pid = srv.proc.pid if getattr(srv, "proc", None) else None
    txt = path[:-5] + ".txt"
    with open(txt, "w") as f:
        args = ["perf", "sched", "timehist", "-i", path, "-g", "--max-stack", "14",
                "--kallsyms", "/proc/kallsyms"]
        if pid:
            args += ["-p", str(pid)]
        subprocess.run(args, stdout=f, stderr=subprocess.STDOUT)
    return {"perf_data": path, "timehist": txt, "pid": pid, "t_enabled": t_enabled}


def go_out(mode, name, daemon, srv=None):
    """Gets @name's memory out for @mode; returns memory.current once out."""
    if mode == "never":
        time.sleep(IDLE_S + 3)
        return current(name)
    if mode == "swap":
        time.sleep(IDLE_S)
        return reclaim_out(name, OUT_FLOOR)
    # pagetier, paced: pagetierd's idle path, after it saw the server work (as a daemon
    # that runs all along does; its model learns what the server touches).
    if srv:
        rnd, end = random.Random(3), time.monotonic() + WARM_S
        while time.monotonic() < end:
            srv.request(rnd.randrange(srv.items))

    def out():
        st = daemon.status(name)
        return st.get("state") == "idle" and st.get("offloads", 0) and \
            current(name) <= st.get("keep_bytes", 0) + OUT_FLOOR
    if not wait_for(out, 180, step=0.25):
        log(f"{name}: pagetier: not out after 180 s: {current(name) >> 20} MiB resident, "
            f"{json.dumps(daemon.status(name))}")
    time.sleep(1)
    return current(name)


def wake_kinds(mode, work, mnt, daemon, data):
    name = "kinds"
    ready, report = os.path.join(work, f"kinds-{mode}.ready"), os.path.join(work, f"kinds-{mode}.rep")
    p = e2elib.start_in_cgroup(PARENT, name, f"--size {KINDS_ANON}M --shm {KINDS_SHM}M "
                               f"--file {data} --work-ms 1000 --ready {ready} --report {report}")
    wait_for(lambda: os.path.exists(ready), 120, step=0.1)
    warm = current(name)
    out = go_out(mode, name, daemon)
    r0 = dev_reads()
    p.send_signal(signal.SIGUSR1)
    wait_for(lambda: os.path.exists(report) and os.path.getsize(report), 600, step=0.02)
    r = json.loads(open(report).read())
    read_mib = (dev_reads() - r0) / MIB
    p.send_signal(signal.SIGTERM)
    p.wait(30)
    total = (KINDS_ANON + KINDS_SHM + KINDS_FILE) * MIB
    return {"warm_MiB": warm >> 20, "out_MiB": out >> 20, "wake_ms": round(r["wake_ms"], 1),
            "mismatches": r.get("mismatches"), "major_faults": r.get("major_faults"),
            "read_MiB": round(read_mib, 1),
            "MBps": round(total / 1e6 / (r["wake_ms"] / 1000), 1)}


def dev_reads():
    """Bytes read from the whole namespace so far."""
    with open(f"/sys/block/{os.path.basename(DEV)}/stat") as f:
        return int(f.read().split()[2]) * 512


def seq_read_MBps():
    """The namespace's sequential read bandwidth: 256 MiB of 1 MiB direct reads of p1, with
    16 in flight (fio-like, with dd: 4 readers of 64 MiB each on disjoint ranges)."""
    t = time.monotonic()
    ps = [subprocess.Popen(["dd", f"if={part(1)}", "of=/dev/null", "bs=1M", "count=64",
                            f"skip={64 * i}", "iflag=direct"], stderr=subprocess.DEVNULL)
          for i in range(4)]
    for p in ps:
        p.wait()
    seq4 = 256 * MIB / 1e6 / (time.monotonic() - t)
    t = time.monotonic()
    run(["dd", f"if={part(1)}", "of=/dev/null", "bs=1M", "count=128", "skip=512",
         "iflag=direct"], check=True)
    seq1 = 128 * MIB / 1e6 / (time.monotonic() - t)
    return round(seq1, 1), round(seq4, 1)


def run_workload(w, res, results, work, mnt, data, tier):
    """Every mode's wake of workload @w, into @res."""
    srv = None
    if w != "kinds":
        srv = make_server(w, mnt)
        srv.start()
    try:
        if srv:
            t = time.monotonic()
            srv.load()
            # Its service time, resident: the open-loop rate keeps it at a third of what
            # it can serve (a light load, as in the study), RATE at most.
            svc = statistics.median(srv.request(i)[1] for i in
                                    range(0, srv.items, max(1, srv.items // 100)))
            rate = min(RATE, 1 / (3 * svc))
            res["rate"], res["service_ms"] = round(rate, 1), round(svc * 1000, 2)
            log(f"{w}: loaded in {time.monotonic() - t:.1f} s, {current(w) >> 20} MiB "
                f"resident; served in {svc * 1000:.1f} ms: {rate:.1f} requests/s")
        for mode in MODES:
            # Nothing carried over from the mode before: swapoff brings everything back.
            swap_only(None)
            swap_only(part(1) if mode == "swap" else None if mode == "never" else tier)
            pf_rate = int(0.8 * results["seq_read_MBps_qd1"] * 1e6) if mode == "paced" else None
            daemon = (Daemon(work, w, pf_rate, prefetch=mode != "nopf")
                      if mode in ("pagetier", "paced", "nopf") else None)
            try:
                if w == "kinds":
                    fig = wake_kinds(mode, work, mnt, daemon, data)
                else:
                    warm = current(w)
                    out = go_out(mode, w, daemon, srv)
                    r0 = dev_reads()
                    tracer = start_trace(w, mode) if daemon else None
                    ts0 = e2elib.tier_cgroup_stats() if tracer else {}
                    fig = wake_server(srv, w, warm, out, rate, mode)
                    if tracer:
                        fig["trace"] = end_trace(tracer, srv, w, mode)
                        # The tier's counters over the wake, all cgroups together: demand
                        # reads (and their pages: the size of each), staging hits, misses.
                        ts1 = e2elib.tier_cgroup_stats()
                        fig["tier_delta"] = {
                            k: sum(c.get(k, 0) for c in ts1.values()) -
                            sum(c.get(k, 0) for c in ts0.values())
                            for k in ("demand_reads", "demand_read_pages", "staging_hits",
                                      "staging_misses", "prefetch_bytes", "read_ios",
                                      "bytes_read")}
                    fig.update({"warm_MiB": warm >> 20, "out_MiB": out >> 20,
                                "read_MiB": round((dev_reads() - r0) / MIB, 1)})
                if daemon:
                    time.sleep(0.5)
                    st = daemon.status(w)
                    fig["prefetch"] = {k: st.get(k) for k in (
                        "wake_source", "last_wake_ms", "prefetch_requested_bytes",
                        "prefetch_file_bytes", "tier_prefetch_bytes", "rest_requested_bytes",
                        "tier_read_misses", "tier_read_miss_bytes", "anon_at_idle_bytes",
                        "shmem_at_idle_bytes", "file_at_idle_bytes")}
                    if pf_rate:
                        fig["prefetch"]["prefetch_rate"] = pf_rate
            finally:
                if daemon:
                    daemon.stop()
            res[mode] = fig
            print(json.dumps({"workload": w, "mode": mode, **fig}), flush=True)
            log(f"{w} {mode}: { {k: v for k, v in fig.items() if k != 'requests_ms'} }")
    finally:
        if srv:
            srv.stop()


def main():
    tap = Tap()
    work = tempfile.mkdtemp(prefix="pt-wake-")
    os.chmod(work, 0o755)	# PostgreSQL runs as its own user below it
    mnt = os.path.join(work, "mnt")
    results = {"profile": os.environ.get("PROFILE", "?"), "kernel": os.uname().release,
               "rate": RATE, "window_s": WINDOW_S, "workloads": {}}
    # p1 plain swap 1.25 GiB, p2 the tier 1.5 GiB, p3 ext4 for files.
    run(["sfdisk", "-q", DEV], input=",1280M,S\n,1536M,S\n,,L\n", check=True)
    run(["udevadm", "settle"])
    wait_for(lambda: os.path.exists(part(3)), 10)
    run(["mkswap", part(1)], check=True)
    run(["mkfs.ext4", "-q", part(3)], check=True)
    os.makedirs(mnt)
    run(["mount", part(3), mnt], check=True)
    results["seq_read_MBps_qd1"], results["seq_read_MBps_qd4"] = seq_read_MBps()
    log(f"device: sequential reads {results['seq_read_MBps_qd1']} MB/s (1 MiB, 1 in flight), "
        f"{results['seq_read_MBps_qd4']} MB/s (4 in flight)")
    r = e2elib.ctl("--json", "tier", "create", part(2))
    if r.returncode:
        tap.bail(f"tier create failed: {r.stderr}")
    tier = json.loads(r.stdout)["device"]
    run(["mkswap", tier], check=True)
    data = os.path.join(mnt, "kinds.data")
    run([os.path.join(BIN, "ptwork"), "--make-file", data, "--size", f"{KINDS_FILE}M"], check=True)
    run(["sync"])	# written back, so that drop_caches drops it: it is charged to us
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")
    e2elib.setup_cgroups(PARENT, WORKLOADS)
    try:
        for w in WORKLOADS:
            res = results["workloads"].setdefault(w, {})
            try:
                run_workload(w, res, results, work, mnt, data, tier)
            except Exception as e:	# one workload's failure is reported, the others run
                res["error"] = f"{type(e).__name__}: {e}"
                log(f"{w}: FAILED: {res['error']}")
                results["failed"] = True
            swap_only(None)
    finally:
        swap_only(None)
        e2elib.remove_cgroups(PARENT, WORKLOADS)
        with open(os.path.join(os.environ.get("PT_OUT", work), "wake-apps.json"), "w") as f:
            json.dump(results, f, indent=1)
        e2elib.ctl("tier", "destroy", tier.replace("/dev/pagetier", ""))
    sys.exit(1 if results.get("failed") else 0)


if __name__ == "__main__":
    main()
