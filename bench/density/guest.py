#!/usr/bin/env python3
"""Density benchmark, one configuration, run inside the VM by bench/density/run.sh.

A critical service (redis-server holding a quarter of the guest's RAM, and nginx serving
files from ext4, in two containers) is driven by an open-loop client at a fixed rate, while
noise containers (redis-server instances each caching large objects in its memory) are
added two at a time and one noise client reads a random object from a random noise
container every 150 ms (the same total noise load whatever their number). After each
addition the critical service is measured for MEASURE_S.

Both clients are build/bench/density/loadgen (loadgen.c, built by make): `loadgen critical`
once per measuring window, `loadgen noise` for the whole run, fed the noise servers' ports
on its stdin. Python threads cost a quarter of the guest's CPU; this process keeps the
servers, the measurements and the sweep.

    guest.py CONFIG     CONFIG: noswap | swap | swap-low | senpai | damon | pagetier

Environment: STEPS (noise counts, "2 4 ... 16"), MEASURE_S (40), SETTLE_S (30),
SOLO_WINDOWS (3: the solo reference pooled from that many windows), RATE (40
transactions/s), CRIT_MB (200), NOISE_MB (96), TIME_SCALE (4: every policy's time constants
divided by it, so that minutes of steady state fit in a step), MAX_S (budget per run,
1020 s: the default sweep with its three solo windows),
PROFILE (a label for the results: unthrottled or cloud; the throttling is QEMU's),
LOADGEN (the load clients' binary: build/bench/density/loadgen of this tree; the guest
shares the host's filesystem, so make builds it there).
The drives are found by serial (pagetier-nvme for swap or the tier, pagetier-data for
nginx's ext4); on a real host, DENSITY_SWAP_DEV and DENSITY_DATA_DEV name them instead
(both are overwritten).

The sweep stops at the first N where the critical p99 exceeds 10x its solo figure, its
throughput falls below half the offered rate, a critical server is gone, anything was
OOM-killed or a noise request failed. Writes $PT_OUT/density-CONFIG.json, one line a step.
"""
import ctypes
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import e2elib  # noqa: E402
from e2elib import BIN, CG, MIB, Tap, run, status_json, wait_for  # noqa: E402
import damon_reclaim  # noqa: E402
from openloop import pool_windows, summarize  # noqa: E402
from senpai import SenpaiCgroup  # noqa: E402
from servers import Resp, in_cgroup, wait_port  # noqa: E402

PARENT = "pt-density"
CRIT = ("crit-db", "crit-web")
CRIT_VALUE = 4000		# bytes: one 4 KiB jemalloc size class per value
WEB_FILES, WEB_FILE_SIZE = 2000, 16 << 10
NOISE_CLIENT_SLEEP = 0.150
LOADGEN = os.environ.get("LOADGEN") or os.path.join(e2elib.TOP, "build", "bench", "density",
                                                    "loadgen")

# SET prefix..i to value(prefix, i, size) for i in [first, last], inside the server: a
# data set of hundreds of MiB loads in seconds under TCG instead of minutes over a socket.
LOAD_LUA = """
local first, last, prefix, size = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
for i = first, last do
  local pat = string.format('%08d;', (i * 2654435761) % 100000000)
  local v = prefix .. i .. ':' .. string.rep(pat, math.floor(size / 9) + 1)
  redis.call('SET', prefix .. i, string.sub(v, 1, size))
end
return last - first + 1
"""


def value(prefix, i, size):
    """What LOAD_LUA stores (and the web files hold): names its item, no page of zeros."""
    pat = b"%08d;" % ((i * 2654435761) % 100000000)
    return (b"%s%d:" % (prefix, i) + pat * (size // 9 + 1))[:size]


def env_int(name, default):
    return int(os.environ.get(name, default))


def clocksource():
    """The guest's clocksource. Under QEMU TCG, 6.1 marks the TSC unstable at boot ("TSCs
    unsynchronized") and keeps time with the HPET, an emulated device whose every read (each
    clock_gettime and ktime_get: the network stack's timestamps, hrtimers, BPF's
    bpf_ktime_get_ns) is an exit to QEMU; 6.12 keeps the TSC, unless its watchdog marks it
    unstable later under load. Kept per window, so that a run whose clock changed under it
    shows."""
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            return f.read().strip()
    except OSError:
        return None


def log(msg):
    print(f"# [{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def cg(name):
    return os.path.join(CG, PARENT, name)


def cg_u64(name, f):
    return e2elib.cg_u64(name, f, PARENT)


def meminfo():
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":")
            out[k] = int(v.split()[0]) * 1024
    return out


def vmstat():
    with open("/proc/vmstat") as f:
        return {k: int(v) for k, v in (line.split() for line in f)}


def stall_us(name, resource="memory"):
    with open(os.path.join(cg(name), f"{resource}.pressure")) as f:
        return int(f.readline().split("total=")[1])


def cg_cpu_us(name):
    try:
        with open(os.path.join(cg(name), "cpu.stat")) as f:
            return int(f.readline().split()[1])	# usage_usec
    except OSError:
        return 0	# gone (OOM-killed): counted as nothing


def tasks_ticks():
    """{command name: utime + stime} of every process and kernel thread, summed by name
    (a process's threads are in its own figure; the kworkers as one)."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                text = f.read()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        if name.startswith("kworker/"):
            name = "kworkers"	# its name follows the work item it runs
        fields = text.rsplit(")", 1)[1].split()
        out[name] = out.get(name, 0) + int(fields[11]) + int(fields[12])
    return out


def kernel_threads_ticks(tasks, prefix):
    """utime + stime of the kernel threads whose name starts with @prefix (kswapd...), in
    a tasks_ticks() snapshot."""
    return sum(v for k, v in tasks.items() if k.startswith(prefix))


def top_tasks(before, after, hz, n=12):
    """The @n command names that took the most CPU between two tasks_ticks() (seconds);
    what the categories of a window's CPU do not name (a process gone meanwhile is not in
    it)."""
    d = {k: v - before.get(k, 0) for k, v in after.items()}
    return {k: round(v / hz, 2) for k, v in sorted(d.items(), key=lambda kv: -kv[1])[:n]
            if v > 0}


def cpu_busy_ticks():
    """The guest's CPU time not idle and not waiting for I/O, all CPUs, in ticks."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4]


def irq_ticks():
    """The guest's CPU time in hard and soft interrupts (I/O completions), all CPUs."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[5] + v[6]


def bpf_prog_stats():
    """{BPF program name: [run time ns, runs]} of every program loaded, with
    kernel.bpf_stats_enabled set (BPF_STATS=1); {} without it."""
    r = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    out = {}
    for p in json.loads(r.stdout or "[]") if r.returncode == 0 else []:
        if "run_time_ns" in p:
            v = out.setdefault(p.get("name", str(p.get("id"))), [0, 0])
            v[0] += p["run_time_ns"]
            v[1] += p.get("run_cnt", 0)
    return out


class RedisServer:
    """redis-server from the Debian package in its container: the package's defaults but
    the port, and no snapshots (--save ""): a cache, and a snapshot's fork would double its
    memory in the middle of a measurement."""

    def __init__(self, name, port, work):
        self.name, self.port = name, port
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir, exist_ok=True)
        self.proc = in_cgroup(cg(name), ["redis-server", "--port", str(port), "--dir", self.dir,
                                         "--save", ""])
        if not wait_port(port):
            raise RuntimeError(f"{name}: redis-server did not start")
        self.conn = Resp(port)
        self.sha = self.conn.cmd("SCRIPT", "LOAD", LOAD_LUA).decode()

    def load(self, prefix, sizes):
        """sizes: [(count, bytes)]; items numbered on across the groups."""
        i = 0
        for count, size in sizes:
            per = max(1, (4 << 20) // size)
            for first in range(i, i + count, per):
                last = min(i + count, first + per) - 1
                self.conn.cmd("EVALSHA", self.sha, 0, first, last, prefix, size)
            i += count

    def alive(self):
        return self.proc.poll() is None


class NginxServer:
    """nginx (Debian's defaults: sendfile, worker_processes auto) serving WEB_FILES files
    from ext4 on the data drive; its page cache is its container's."""

    def __init__(self, name, port, work, root):
        self.name, self.port, self.root = name, port, root
        conf = os.path.join(work, "nginx.conf")
        with open(conf, "w") as f:
            f.write("worker_processes auto;\n"
                    f"pid {work}/nginx.pid;\nerror_log {work}/nginx-error.log;\n"
                    "events { worker_connections 768; }\n"
                    "http {\n  sendfile on;\n  tcp_nopush on;\n"
                    "  types { application/octet-stream bin; }\n"
                    f"  access_log off;\n  server {{ listen 127.0.0.1:{port}; root {root}; }}\n"
                    "}\n")
        for j in range(WEB_FILES):
            with open(os.path.join(root, f"f{j}.bin"), "wb") as f:
                f.write(value(b"f", j, WEB_FILE_SIZE))
        run(["sync"])
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1")	# read back by nginx: charged to its container
        self.proc = in_cgroup(cg(name), ["nginx", "-c", conf, "-g", "daemon off;"])
        if not wait_port(port):
            raise RuntimeError("nginx did not start")
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for j in range(WEB_FILES):
            c.request("GET", f"/f{j}.bin")
            if c.getresponse().read() != value(b"f", j, WEB_FILE_SIZE):
                raise RuntimeError(f"nginx: f{j}.bin wrong")
        c.close()

    def alive(self):
        return self.proc.poll() is None


def noise_sizes(noise_mb):
    """The study's image mix (500 small, 100 medium, 80 large), scaled to noise_mb; sizes
    just under jemalloc's large classes (64K, 256K, 640K)."""
    base = 600 * 65000 + 120 * 260000 + 44 * 650000		# ~96 MiB
    k = noise_mb * MIB / base
    return [(max(1, round(600 * k)), 65000), (max(1, round(120 * k)), 260000),
            (max(1, round(44 * k)), 650000)]


def loadgen():
    """The load clients' binary, or a RuntimeError that says how to build it."""
    if not os.access(LOADGEN, os.X_OK):
        raise RuntimeError(f"{LOADGEN} is missing: run make (make bench-density builds it, "
                           "or make build/bench/density/loadgen)")
    return LOADGEN


class CriticalClient:
    """The critical service's open-loop client: each run() is one `loadgen critical`
    (transactions of a redis GET c:<k> and an nginx GET /f<j>.bin, zipf keys, both answers
    checked, due at a fixed rate: no coordinated omission), with a seed of its own per
    window so that windows do not replay the same keys."""

    def __init__(self, redis_port, http_port, rate, db_items, web_files, mlock=True,
                 workers=16, grace_s=30, seed_db=11, seed_web=12):
        self.argv = [loadgen(), "critical", "--redis-port", str(redis_port),
                     "--http-port", str(http_port), "--rate", str(rate),
                     "--workers", str(workers), "--grace", str(grace_s),
                     "--db-items", str(db_items), "--db-value-size", str(CRIT_VALUE),
                     "--web-files", str(web_files), "--web-size", str(WEB_FILE_SIZE),
                     "--zipf-s", "0.99"] + (["--mlock"] if mlock else [])
        self.rate, self.grace_s = rate, grace_s
        self.seeds, self.windows = (seed_db, seed_web), 0
        self.last_cpu_s = 0.0	# user + system CPU of the last window's loadgen

    def run(self, duration_s):
        """summarize()'s dict of one window of @duration_s, plus its latencies_ms."""
        w = self.windows
        self.windows += 1
        argv = self.argv + ["--duration", str(duration_s),
                            "--seed-db", str(self.seeds[0] + 2 * w),
                            "--seed-web", str(self.seeds[1] + 2 * w)]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE)
        # It ends itself grace_s after its last request; this is only against a hang.
        timer = threading.Timer(duration_s + self.grace_s + 60, p.kill)
        timer.start()
        try:
            out = p.stdout.read()
        finally:
            timer.cancel()
            p.stdout.close()
            # Reaped here (not by Popen) for its rusage: the harness's CPU counts it.
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            self.last_cpu_s = ru.ru_utime + ru.ru_stime
        if p.returncode != 0:
            raise RuntimeError(f"loadgen critical exited with {p.returncode} "
                               "(its message is above)")
        r = json.loads(out)
        lat, failed = r["latencies_ms"], r["failed"]
        if len(lat) != r["completed"] or r["completed"] + failed != int(duration_s * self.rate):
            raise RuntimeError(f"loadgen critical: {r['completed']} completed, {failed} "
                               f"failed, {len(lat)} latencies, of {int(duration_s * self.rate)}")
        res = summarize([x / 1000 for x in lat], failed, duration_s, self.rate)
        res["latencies_ms"] = lat
        return res


class NoiseClient:
    """The noise client, one `loadgen noise` for the whole run: a random noise container,
    a random object of it (the noise_sizes() mix, in that order), then 150 ms of sleep."""

    def __init__(self, sizes, mlock=True, seed=7):
        self.argv = [loadgen(), "noise", "--sleep-ms", str(round(NOISE_CLIENT_SLEEP * 1000)),
                     "--sizes", ",".join(f"{n}:{size}" for n, size in sizes),
                     "--seed", str(seed)] + (["--mlock"] if mlock else [])
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)

    def _send(self, line):
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise RuntimeError(f"loadgen noise is gone (exit {self.proc.poll()})") from None

    def add(self, port):
        """One more noise redis server to read from."""
        self._send(f"add {port}")

    def take(self):
        """(latencies in seconds, failed requests) since the last take()."""
        self._send("take")
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"loadgen noise is gone (exit {self.proc.wait()})")
        r = json.loads(line)
        return [x / 1000 for x in r["latencies_ms"]], r["failed"]

    def cpu_seconds(self):
        return cpu_seconds(self.proc.pid)

    def stop(self):
        self._send("quit")
        self.proc.stdin.close()
        self.proc.wait(30)
        self.proc.stdout.close()


class Senpais(threading.Thread):
    """Senpai on every noise container (as the study's peers run it: on the cgroups that
    may give memory back), ticking TIME_SCALE times a second."""

    def __init__(self, conf, tick_s):
        super().__init__(daemon=True)
        self.conf, self.tick_s, self.cgs = conf, tick_s, []
        self.lock = threading.Lock()

    def add(self, name):
        with self.lock:
            self.cgs.append(SenpaiCgroup(cg(name), self.conf))

    def run(self):
        while True:
            time.sleep(self.tick_s)
            with self.lock:
                for c in self.cgs:
                    try:
                        c.tick()
                    except OSError:
                        pass


def nvme_by_serial(serial):
    for ctrl in sorted(os.listdir("/sys/class/nvme")):
        with open(f"/sys/class/nvme/{ctrl}/serial") as f:
            if f.read().strip() == serial:
                return f"/dev/{ctrl}n1"
    raise RuntimeError(f"no NVMe drive with serial {serial}")


def setup_drives(config, tap, work):
    """The swap drive (or the tier's backing) and the data drive, ext4 for nginx's files."""
    swap = os.environ.get("DENSITY_SWAP_DEV") or nvme_by_serial("pagetier-nvme")
    data = os.environ.get("DENSITY_DATA_DEV") or nvme_by_serial("pagetier-data")
    run(["mkfs.ext4", "-q", data], check=True)
    root = os.path.join(work, "www")
    os.makedirs(root)
    run(["mount", data, root], check=True)
    os.chmod(root, 0o755)
    if config == "pagetier":
        return e2elib.create_tier(tap, swap), root, swap
    if config == "noswap":
        return None, root, swap
    run(["mkswap", swap], check=True)
    run(["swapon", swap], check=True)
    return swap, root, swap


def free_watermark_mib():
    """pagetierd's free_watermark here: the guest's RAM / FREE_WATERMARK_DIV (default 8)."""
    return meminfo()['MemTotal'] // env_int("FREE_WATERMARK_DIV", 8) // MIB


def start_pagetierd(work, scale):
    conf = os.path.join(work, "etc")
    os.makedirs(os.path.join(conf, "containers.d"))
    with open(os.path.join(conf, "pagetierd.conf"), "w") as f:
        # free_watermark: an eighth of the guest's RAM kept available, by offloading the
        # host's coldest chunks before the kernel has to reclaim. poll_interval is the
        # product's default (500 ms): a sampling period, not a policy's time constant, so
        # not time-scaled (the watermark is checked each scan_interval whatever it is).
        # write_budget off: the emulated swap drive is 4 GiB, 4x the guest's RAM where a
        # host's drive is tens of times its RAM, and a run of minutes stands for hours, so
        # the default (1 drive write per day) would bind at about N = 18 on what a real
        # drive would not notice. The budget is a test of its own (tests/e2e/wear_budget.py).
        f.write(f"[daemon]\nruntime_dir = {conf}/run\n"
                f"free_watermark = {free_watermark_mib()}M\nwrite_budget = off\n"
                f"log_level = {os.environ.get('PAGETIERD_LOG_LEVEL', 'info')}\n")
    with open(os.path.join(conf, "containers.d", "density.conf"), "w") as f:
        for c in CRIT:
            f.write(f"[{c}]\nmatch_cgroup = /{PARENT}/{c}\nclass = critical\n\n")
        f.write(f"[noise]\nmatch_cgroup = /{PARENT}/noise-*\n"
                f"cold_after = {120 // scale}s\n")
    e2elib.fix_perms(conf)
    # PAGETIERD_ARGS: more options, for a diagnosis (--no-bpf: no BPF wake sources).
    d = subprocess.Popen([os.path.join(BIN, "pagetierd"), "--config-dir", conf]
                         + os.environ.get("PAGETIERD_ARGS", "").split(),
                         stdout=open(os.path.join(work, "pagetierd.log"), "w"),
                         stderr=subprocess.STDOUT)
    runtime = os.path.join(conf, "run")
    if not wait_for(lambda: status_json(runtime) is not None, 20):
        raise RuntimeError("pagetierd did not start")
    return d, runtime


def sectors_written(dev):
    """Sectors written to block device @dev (/dev/X) since boot: the drive's wear."""
    with open(f"/sys/block/{os.path.basename(dev)}/stat") as f:
        return int(f.read().split()[6])


def thread_cpu_seconds(pid):
    """{thread name: [user s, system s]} of @pid's threads (pagetierd names its pools), and
    pagetierd's spawner with the readers it reaped ("pt-spawner")."""
    hz, out = os.sysconf("SC_CLK_TCK"), {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                head, tail = f.read().rsplit(")", 1)
        except OSError:
            continue	# the thread ended
        name, fields = head.split("(", 1)[1], tail.split()
        t = out.setdefault(name, [0.0, 0.0])
        t[0] += int(fields[11]) / hz
        t[1] += int(fields[12]) / hz
    sp = e2elib.spawner_of(pid)
    try:
        with open(f"/proc/{sp}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        out["pt-spawner"] = [(int(fields[11]) + int(fields[13])) / hz,
                             (int(fields[12]) + int(fields[14])) / hz]
    except (OSError, TypeError):
        pass	# none (not pagetierd, or it is gone)
    return out


def cpu_seconds(pid, children=False):
    """User + system seconds of @pid; with @children, also of the children it has reaped,
    and of pagetierd's spawner with the readers it reaped."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
        sp = e2elib.spawner_of(pid)
        try:
            if sp:
                ticks += (round(cpu_seconds(sp) * os.sysconf("SC_CLK_TCK")) +
                          (e2elib.children_cpu_ticks(sp) or 0))
        except OSError:
            pass	# it ended meanwhile
    return ticks / os.sysconf("SC_CLK_TCK")


# The harness (this process: the critical service's load client, the noise client, Senpai)
# stands for machines and daemons a host would not reclaim from: a real load client runs on
# another machine. Left reclaimable, its Python pages were the memory a configuration that
# protects the critical containers made the kernel take instead, and a refault of the
# client's own code read as the critical service's latency. Locked in every configuration
# alike; MCL_ONFAULT so that thread stacks lock only what they touch.
MCL_CURRENT, MCL_FUTURE, MCL_ONFAULT = 1, 2, 4


def lock_harness_memory():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0:
        raise OSError(ctypes.get_errno(), "mlockall of the harness failed")
    with open("/proc/self/status") as f:
        locked = next((ln.split()[1] for ln in f if ln.startswith("VmLck:")), "?")
    log(f"harness: memory locked (mlockall: {int(locked) // 1024} MiB of mappings, each page "
        "as it is touched)")


def main():
    config = sys.argv[1]
    loadgen()	# before minutes of set-up: the clients' binary is there
    steps = [int(x) for x in os.environ.get("STEPS", "2 4 6 8 10 12 14 16").split()]
    measure_s, settle_s = env_int("MEASURE_S", 40), env_int("SETTLE_S", 30)
    solo_windows = max(1, env_int("SOLO_WINDOWS", 3))
    rate, scale = env_int("RATE", 40), env_int("TIME_SCALE", 4)
    crit_mb, noise_mb, max_s = env_int("CRIT_MB", 200), env_int("NOISE_MB", 96), env_int("MAX_S", 1020)
    profile = os.environ.get("PROFILE", "unthrottled")
    out_path = os.path.join(os.environ.get("PT_OUT", "/tmp"), f"density-{config}.json")
    tap = Tap()
    t_begin = time.monotonic()
    work = tempfile.mkdtemp(prefix="pt-density-")
    os.chmod(work, 0o755)	# nginx's workers run as nobody
    with open("/sys/kernel/mm/lru_gen/enabled") as f:
        lru_gen = f.read().strip()
    log(f"{config} ({profile}): kernel {os.uname().release}, MGLRU {lru_gen}, "
        f"{meminfo()['MemTotal'] // MIB} MiB RAM, clocksource {clocksource()}")
    lock_harness_memory()
    # BPF_STATS=1: each window also records the BPF programs' run time (a diagnosis: the
    # kernel then times every run of every program, which costs a little itself).
    bpf_stats = os.environ.get("BPF_STATS") == "1"
    if bpf_stats:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
    swapdev, www, backing = setup_drives(config, tap, work)
    e2elib.setup_cgroups(PARENT, list(CRIT))
    daemon = runtime = damon = senpais = None
    damon_params = None
    if config == "pagetier":
        daemon, runtime = start_pagetierd(work, scale)
    elif config == "damon":
        damon, damon_params = damon_reclaim.start(scale)
    elif config == "senpai":
        senpais = Senpais({"interval": 6, "pressure_us": 10_000 // scale,
                           "min_size": 8 << 20}, 1.0 / scale)
        senpais.start()
    elif config not in ("noswap", "swap", "swap-low"):
        tap.bail(f"unknown configuration {config}")

    db = RedisServer("crit-db", 6400, work)
    n_crit = crit_mb * MIB // CRIT_VALUE
    db.load(b"c:", [(n_crit, CRIT_VALUE)])
    web = NginxServer("crit-web", 8090, work, www)
    if config == "swap-low":
        for c in CRIT:
            with open(os.path.join(cg(c), "memory.low"), "w") as f:
                f.write("max")
    log(f"critical service up: crit-db {cg_u64('crit-db', 'memory.current') // MIB} MiB, "
        f"crit-web {cg_u64('crit-web', 'memory.current') // MIB} MiB")

    client = CriticalClient(6400, 8090, rate, n_crit, WEB_FILES)
    sizes = noise_sizes(noise_mb)
    noise = NoiseClient(sizes)
    noise.start()
    servers = []
    results = {"config": config, "profile": profile, "kernel": os.uname().release,
               "lru_gen": lru_gen, "clocksource": clocksource(),
               "ram_MiB": meminfo()["MemTotal"] // MIB, "rate": rate,
               "measure_s": measure_s, "settle_s": settle_s, "time_scale": scale,
               "solo_windows": solo_windows,
               "crit_MiB": crit_mb, "noise_MiB": noise_mb, "noise_sizes": sizes,
               "damon_reclaim": damon_params, "steps": [],
               "free_watermark_MiB": free_watermark_mib() if config == "pagetier" else None}
    sectors0 = sectors_written(backing)
    step_times = []

    def jobs_cpu_ms():
        """pagetierd's worker CPU time by kind of job (ms), summed over the critical
        containers and over the noise ones (a container gone takes its share with it)."""
        r = e2elib.ctl("--json", "status", runtime=runtime)
        out = {"critical": {}, "noise": {}}
        if r.returncode != 0:
            return out
        for c in json.loads(r.stdout)["containers"]:
            side = out["critical" if c["class"] == "critical" else "noise"]
            for kind, ms in c.get("job_cpu_ms", {}).items():
                side[kind] = side.get(kind, 0) + ms
        return out

    def measure(n):
        vm0, st0 = vmstat(), {c: stall_us(c) for c in CRIT}
        names0 = [s.name for s in servers if os.path.isdir(cg(s.name))]
        # Where the guest's CPU went in the window: the critical service's wait for a CPU
        # (cpu.pressure), the noise containers', kswapd's and pagetierd's time.
        cw0 = {c: stall_us(c, "cpu") for c in CRIT}
        cc0 = {x: cg_cpu_us(x) for x in list(CRIT) + names0}
        tasks0, busy0, irq0 = tasks_ticks(), cpu_busy_ticks(), irq_ticks()
        pd0 = cpu_seconds(daemon.pid, children=True) if daemon else 0
        pt0 = thread_cpu_seconds(daemon.pid) if daemon else {}
        bpf0 = bpf_prog_stats() if bpf_stats else {}
        jobs0 = jobs_cpu_ms() if daemon else None
        h0, nz0 = cpu_seconds(os.getpid()), noise.cpu_seconds()
        noise.take()
        res = client.run(measure_s)
        nz1 = noise.cpu_seconds()
        vm1, mi, tasks1 = vmstat(), meminfo(), tasks_ticks()
        hz = os.sysconf("SC_CLK_TCK")
        window_cpu = {
            "crit_cpu_wait_ms": {c: (stall_us(c, "cpu") - cw0[c]) // 1000 for c in CRIT},
            "crit_cpu_s": round(sum(cg_cpu_us(c) - cc0[c] for c in CRIT) / 1e6, 2),
            "noise_cpu_s": round(sum(cg_cpu_us(x) - cc0[x] for x in names0) / 1e6, 2),
            "kswapd_cpu_s": round((kernel_threads_ticks(tasks1, "kswapd")
                                   - kernel_threads_ticks(tasks0, "kswapd")) / hz, 2),
            # The block layer's and the tier's deferred work (kworkers), and interrupts.
            "kworker_cpu_s": round((kernel_threads_ticks(tasks1, "kworker")
                                    - kernel_threads_ticks(tasks0, "kworker")) / hz, 2),
            "irq_cpu_s": round((irq_ticks() - irq0) / hz, 2),
            "busy_cpu_s": round((cpu_busy_ticks() - busy0) / hz, 2),
            "pagetierd_window_cpu_s": round(cpu_seconds(daemon.pid, children=True) - pd0, 2) if daemon else None,
            # The harness: this process (Senpai's controller, the measurements) and both
            # load clients (loadgen: the window's critical one, reaped by its run(), and
            # the noise one), which a real experiment runs on other machines, but which
            # share the guest's CPUs here.
            "harness_cpu_s": round(cpu_seconds(os.getpid()) - h0 + nz1 - nz0
                                   + client.last_cpu_s, 2),
            "loadgen_cpu_s": {"critical": round(client.last_cpu_s, 2),
                              "noise": round(nz1 - nz0, 2)},
            "top_tasks_cpu_s": top_tasks(tasks0, tasks1, hz),
        }
        if bpf_stats:
            # The BPF programs' own time in the window (all programs, pagetierd's and any
            # other), and how often each ran: they run in the tasks and softirqs they trace.
            window_cpu["bpf_prog_s_runs"] = {
                k: [round((v[0] - bpf0.get(k, [0, 0])[0]) / 1e9, 3), v[1] - bpf0.get(k, [0, 0])[1]]
                for k, v in bpf_prog_stats().items()}
        if daemon:
            # Which of its threads, user and system: the main loop (samples, policy) runs
            # at the default priority, the offload/scan pool at nice 19.
            window_cpu["pagetierd_threads_cpu_s"] = {
                k: [round(u - pt0.get(k, [0, 0])[0], 2), round(y - pt0.get(k, [0, 0])[1], 2)]
                for k, (u, y) in thread_cpu_seconds(daemon.pid).items()}
            # Of its worker threads' time, each kind of job's, for the critical
            # containers and the noise ones (ctl status' job_cpu_ms).
            jobs1 = jobs_cpu_ms()
            window_cpu["pagetierd_jobs_cpu_s"] = {
                side: {k: round((v - jobs0[side].get(k, 0)) / 1000, 2)
                       for k, v in jobs1[side].items() if v - jobs0[side].get(k, 0) > 0}
                for side in jobs1}
        nlat, nfail = noise.take()
        nsum = summarize(nlat, nfail, measure_s, 1 / NOISE_CLIENT_SLEEP)
        alive = [s.name for s in servers if s.alive()]
        names = list(CRIT) + [s.name for s in servers if os.path.isdir(cg(s.name))]
        step = {"noise": n, "crit": {k: v for k, v in res.items() if k != "latencies_ms"},
                "crit_latencies_ms": res["latencies_ms"],
                "noise_client": nsum, "noise_alive": len(alive),
                "crit_alive": db.alive() and web.alive(),
                "crit_stall_ms": {c: (stall_us(c) - st0[c]) // 1000 for c in CRIT},
                "crit_MiB": {c: cg_u64(c, "memory.current") // MIB for c in CRIT},
                "noise_resident_MiB": sum(cg_u64(x, "memory.current") for x in names
                                          if x not in CRIT) // MIB,
                "swapped_MiB": sum(cg_u64(x, "memory.swap.current") for x in names) // MIB,
                "mem_available_MiB": mi["MemAvailable"] // MIB,
                "swap_used_MiB": (mi["SwapTotal"] - mi["SwapFree"]) // MIB,
                "device_written_MiB": (sectors_written(backing) - sectors0) * 512 // MIB,
                "pswpin": vm1.get("pswpin", 0) - vm0.get("pswpin", 0),
                "pswpout": vm1.get("pswpout", 0) - vm0.get("pswpout", 0),
                "oom_kill": vm1.get("oom_kill", 0),
                "window_cpu": window_cpu,
                "clocksource": clocksource(),
                "elapsed_s": round(time.monotonic() - t_begin)}
        if daemon:
            step["on_tier_MiB"] = sum(e2elib.tier_bytes_by_cgroup().values()) // MIB
            step["pagetierd_cpu_s"] = round(cpu_seconds(daemon.pid, children=True), 2)
        if damon:
            step["damon"] = damon_reclaim.window_stats(damon, meminfo())
        c, nc = step["crit"], step["noise_client"]
        step_times.append(time.monotonic())
        per = ((step_times[-1] - step_times[0]) / (len(step_times) - 1)
               if len(step_times) > 1 else 0)
        left = sum(1 for x in steps if x > n)
        log(f"{config} N={n:2d}: {c['throughput_per_s']:.1f}/{rate} tx/s, p50 {c['p50_ms']} "
            f"p95 {c['p95_ms']} p99 {c['p99_ms']} max {c['max_ms']} ms, failed {c['failed']}; "
            f"noise {step['noise_alive']}/{n} alive, p99 {nc['p99_ms']} ms, "
            f"{nc['failed']} errors, {step['noise_resident_MiB']} MiB resident, "
            f"{step['swapped_MiB']} MiB swapped; written {step['device_written_MiB']} MiB; "
            f"CPU s busy {window_cpu['busy_cpu_s']}, critical {window_cpu['crit_cpu_s']} "
            f"(waited {sum(window_cpu['crit_cpu_wait_ms'].values())} ms), noise "
            f"{window_cpu['noise_cpu_s']}, kswapd {window_cpu['kswapd_cpu_s']}, kworkers "
            f"{window_cpu['kworker_cpu_s']}, interrupts {window_cpu['irq_cpu_s']}, pagetierd "
            f"{window_cpu['pagetierd_window_cpu_s']}, harness {window_cpu['harness_cpu_s']}; "
            f"elapsed {step['elapsed_s']} s" + (f", about {per * left:.0f} s left" if per else ""))
        if daemon:
            log("  pagetierd's jobs (CPU s): " + "; ".join(
                f"{side} " + (", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) or "none")
                for side, kinds in window_cpu["pagetierd_jobs_cpu_s"].items()))
        log("  top tasks (CPU s): " + ", ".join(
            f"{k} {v}" for k, v in window_cpu["top_tasks_cpu_s"].items()))
        if step["clocksource"] != results["clocksource"]:
            log(f"  the guest's clocksource is {step['clocksource']} now, "
                f"{results['clocksource']} at the start: its figures are not comparable")
        if bpf_stats:
            log("  BPF programs (s, runs): " + ", ".join(
                f"{k} {v[0]} {v[1]}" for k, v in sorted(
                    window_cpu["bpf_prog_s_runs"].items(), key=lambda kv: -kv[1][0]) if v[1]))
        return step

    def save():
        with open(out_path, "w") as f:
            json.dump(results, f)

    def record(step):
        """@step becomes a point of the results, written out at once."""
        results["steps"].append(step)
        save()
        return step

    # The solo reference (N = 0): after the same settle as every N, SOLO_WINDOWS windows
    # pooled into one point. One 40 s window's p99 is its 16 slowest requests; over a
    # session's runs it spread as wide as the SLO's 10% band, which made the density a
    # draw of the solo window. The windows stay in the point, each with its figures.
    time.sleep(settle_s)
    windows = [measure(0) for _ in range(solo_windows)]
    point = dict(windows[-1])
    point["crit"] = pool_windows([{"latencies_ms": w["crit_latencies_ms"],
                                   "failed": w["crit"]["failed"]} for w in windows],
                                 measure_s, rate)
    point["crit_latencies_ms"] = [x for w in windows for x in w["crit_latencies_ms"]]
    point["solo_windows"] = [{"crit": w["crit"], "window_cpu": w["window_cpu"]}
                             for w in windows]
    solo = record(point)["crit"]
    log(f"{config} solo: {solo_windows} windows pooled: p50 {solo['p50_ms']} p95 "
        f"{solo['p95_ms']} p99 {solo['p99_ms']} ms (each window's p99: "
        f"{', '.join(str(w['crit']['p99_ms']) for w in windows)})")
    oom0 = results["steps"][0]["oom_kill"]
    for n in steps:
        while len(servers) < n:
            name = f"noise-{len(servers) + 1}"
            os.makedirs(cg(name), exist_ok=True)
            s = RedisServer(name, 7001 + len(servers), work)
            s.load(b"o:", sizes)
            servers.append(s)
            noise.add(s.port)
            if senpais:
                senpais.add(name)
        time.sleep(settle_s)
        step = record(measure(n))
        c = step["crit"]
        why = None
        if not step["crit_alive"]:
            why = "a critical server is gone"
        elif step["oom_kill"] > oom0:
            why = f"{step['oom_kill'] - oom0} processes OOM-killed"
        elif step["noise_alive"] < n or step["noise_client"]["failed"]:
            why = f"noise requests failed ({step['noise_client']['failed']})"
        elif c["throughput_per_s"] < rate / 2:
            why = "critical throughput below half the offered rate"
        elif c["p99_ms"] is None or c["p99_ms"] > 10 * solo["p99_ms"]:
            why = f"critical p99 {c['p99_ms']} ms, over 10x solo ({solo['p99_ms']} ms)"
        elif time.monotonic() - t_begin > max_s:
            why = f"the time budget of {max_s} s is spent"
        if why:
            results["stopped"] = f"N={n}: {why}"
            log(f"{config}: stopping at N={n}: {why}")
            break
    if runtime:
        # Every container's figures (a policy with a glob matches many cgroups).
        r = e2elib.ctl("--json", "status", runtime=runtime)
        results["pagetierd_status"] = json.loads(r.stdout) if r.returncode == 0 else None
    save()
    noise.stop()
    if damon:
        damon.stop()	# on a real host it would run on
    if daemon:
        daemon.terminate()
        daemon.wait(30)
        # Its log beside the results: what it offloaded, woke and held back, and when.
        shutil.copy(os.path.join(work, "pagetierd.log"),
                    os.path.join(os.environ.get("PT_OUT", "/tmp"), "pagetierd.log"))
    log(f"{config}: done in {time.monotonic() - t_begin:.0f} s")


if __name__ == "__main__":
    main()
