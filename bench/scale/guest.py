#!/usr/bin/env python3
"""Scale benchmark, one scanner, run inside the VM by bench/scale/run.sh (issue 15).

For each N (NS) it creates N opted-in cgroups below /sys/fs/cgroup/pt-scale, each with one
real process (build/bench/scale/ptsleeper: joins its cgroup, fills its anonymous memory,
sleeps): PROBES of them are probes (p-0, p-1, ...: woken by the bench, WAKER_KB), the
largest share's worth may wake periodically (w-00000, ...: WAKER_KB), the rest only sleep
(c-00000, ...: SLEEPER_KB). Then for each share of active containers (SHARES, percent of
N, in ascending order) that many w- containers wake every PERIOD_S and write their memory
for BURST_MS (ptsleeper's SIGUSR2), a fresh pagetierd is started, and:

  settle     until it tracks all N and every container that is not periodic is idle and its
             offload and settle passes are done (the log goes quiet), then until its
             samples per tick drop (the quiet containers' grace is over: its metrics),
             SETTLE_MAX_S at most
  window A   MEASURE_S: pagetierd's CPU (utime and stime of all its threads, and of its
             main thread alone, from /proc/PID/stat) as % of one CPU, its resident memory
             (VmRSS, VmHWM), the guest's CPU, the wakes it saw
  window B   PROBE_ROUNDS rounds: each probe, idle and offloaded, is woken (SIGUSR1) and
             writes its memory for BURST_MS; it notes when it first touched it and when it
             stopped. Wake detection latency: its first touch to pagetierd's
             "PROBE: wake detected by SOURCE" log line (both CLOCK_MONOTONIC); idle to
             offload start: its last touch to the start of the offload that follows
             ("PROBE: idle: paged out ... (P processes, D ms)" at T: started at T - D);
             each probe has its own policy so that its log lines are its own
  stop       pagetierd stopped, its log kept

    guest.py SCANNER          SCANNER: kmod (pagetier.ko loaded: its tier and accessed-bit
                              scanner) | fallback (no module: plain swap on the drive, the
                              /proc scanner). pagetierd picks its scanner by the module's
                              presence alone (daemon/pagetierd.c: open_module).

Environment: NS ("10 100 1000 3000"), SHARES ("0 5 20"), MEASURE_S (120), PROBES (4),
PROBE_ROUNDS (8), IDLE_S (5: the policies' idle_threshold), PERIOD_S (30), BURST_MS (200),
SLEEPER_KB (64), WAKER_KB (1024: the periodic containers' and the probes' memory),
WAKER_FILE (none: a file the periodic containers and the probes map and read, e.g. a
library of a few MiB, whose pages a wake reads back from pagetierd's spawner), SETTLE_MAX_S (900), MAX_S (12600: the guest's budget in seconds; later N are skipped past
it), HOST_CAL (a file: the host's `micro --calibrate` line, for the native-to-emulated
ratio), KB_PER_CT (the guest memory a container costs, until one N measured it: 400).
An N is skipped, with its reason in the results, when the guest has not the memory for it.

Results: $PT_OUT/scale-SCANNER-nN.json (one per N, rewritten after each share),
$PT_OUT/pagetierd-SCANNER-nN-sS.log, and a markdown table at the end (report.py).
"""
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "e2e"))
import e2elib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(TOP, "build", "bin")
# PAGETIERD_BIN: another build of pagetierd (a before-the-change run); default this tree's.
PAGETIERD = os.environ.get("PAGETIERD_BIN") or os.path.join(BIN, "pagetierd")
SLEEPER = os.path.join(TOP, "build", "bench", "scale", "ptsleeper")
MICRO = os.path.join(TOP, "build", "bench", "scale", "micro")
CG = "/sys/fs/cgroup"
PARENT = "pt-scale"
MIB = 1 << 20
# A quiet container is sampled each poll for this long (daemon/sample_pace.h's
# PT_PACE_QUIET_GRACE_MS) before its samples thin out.
GRACE_S = 10.0
# pagetierd's metrics endpoint (one daemon at a time) and the counters read from it.
METRICS = "127.0.0.1:9464"
COUNTERS = ("pagetier_ticks_total", "pagetier_samples_total", "pagetier_samples_skipped_total",
            "pagetier_samples_light_total", "pagetier_sample_batches_total",
            "pagetier_samples_batched_total",
            "pagetier_tier_usage_reads_total", "pagetier_cgroup_walks_total",
            "pagetier_container_scans_total", "pagetier_container_bpf_events_total",
            "pagetier_bpf_events_dropped_total")
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

# --- pure parts (bench/scale/test_scale.py) ----------------------------------------------


def parse_proc_stat(text):
    """/proc/PID/stat: (utime, stime) in clock ticks, threads, rss pages. The command name
    (field 2) may hold spaces and parentheses: the fields after it follow the last ')'."""
    f = text.rsplit(")", 1)[1].split()
    # f[0] is field 3 (state): utime is field 14, stime 15, cutime 16, cstime 17,
    # num_threads 20, rss 24
    return {"utime": int(f[11]), "stime": int(f[12]), "children": int(f[13]) + int(f[14]),
            "threads": int(f[17]), "rss_pages": int(f[21])}


def parse_proc_status(text):
    """/proc/PID/status: the kB fields (VmRSS, VmHWM, RssAnon, ...) and Threads."""
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        v = v.split()
        if len(v) == 2 and v[1] == "kB":
            out[k] = int(v[0])
        elif k == "Threads" and v:
            out[k] = int(v[0])
    return out


def cpu_busy(text):
    """/proc/stat's first line: (busy, total) jiffies of all CPUs."""
    v = [int(x) for x in text.splitlines()[0].split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v) - idle, sum(v)


LOG_RE = re.compile(r"^(?:<\d>)?\[\s*(\d+)\.(\d{3})\] (\w+): (.*)$")
# "by swap-ins (bpf): 64 pages in 12 ms, read 1 ms after the last" for a wake by refaults.
WAKE_RE = re.compile(r"^([\w.-]+): wake detected by ([^:]+?)"
                     r"(?:: (\d+) pages in (\d+) ms, read (\d+) ms after the last)?$")
QUIET_RE = re.compile(r"^([\w.-]+): idle: quiet for (\d+) ms")
PAGED_RE = re.compile(r"^([\w.-]+): idle: paged out (\d+) MiB .*\((\d+) processes, (\d+) ms\)")
SETTLED_RE = re.compile(r"^([\w.-]+): idle: resident ")
TRACK_RE = re.compile(r"^([\w.-]+): tracking cgroup (\S+) ")


def parse_log_line(line):
    """A pagetierd log line: (seconds, level, message), or None."""
    m = LOG_RE.match(line.rstrip("\n"))
    if not m:
        return None
    return int(m.group(1)) + int(m.group(2)) / 1000.0, m.group(3), m.group(4)


def classify(msg):
    """(kind, policy, detail) of the log messages the bench follows, or None."""
    m = WAKE_RE.match(msg)
    if m:
        n = [None if x is None else int(x) for x in m.group(3, 4, 5)]
        return "wake", m.group(1), {"source": m.group(2), "pages": n[0], "span_ms": n[1],
                                    "read_ms": n[2]}
    m = QUIET_RE.match(msg)
    if m:
        return "quiet", m.group(1), int(m.group(2))
    m = PAGED_RE.match(msg)
    if m:
        return "paged", m.group(1), {"mib": int(m.group(2)), "procs": int(m.group(3)),
                                     "ms": int(m.group(4))}
    m = SETTLED_RE.match(msg)
    if m:
        return "settled", m.group(1), None
    m = TRACK_RE.match(msg)
    if m:
        return "track", m.group(1), m.group(2)
    return None


def percentile(values, p):
    """Nearest rank; None when empty."""
    if not values:
        return None
    v = sorted(values)
    k = max(0, min(len(v) - 1, -(-len(v) * p // 100) - 1))
    return v[int(k)]


def summary(values, digits=1):
    if not values:
        return {"n": 0, "p50": None, "p99": None, "max": None}
    return {"n": len(values), "p50": round(percentile(values, 50), digits),
            "p99": round(percentile(values, 99), digits), "max": round(max(values), digits)}


# Log time stamps are truncated to the millisecond: a line may read up to 1 ms before the
# event it follows.
TS_SLACK_S = 0.002


def match_wakes(bursts, wakes):
    """bursts: [(t_wake_s, t_quiet_s)] of one probe, in order; wakes: [(ts_s, detail)] of
    its "wake detected" lines (classify's). For each burst, the first wake line at or after
    its first touch and before the next burst: {"latency_ms", "source", "span_ms",
    "read_ms"} (the last two of a wake by refaults: over how long they came, and how late
    pagetierd read the one that decided it; else None), or None (missed)."""
    out = []
    for i, (t0, _) in enumerate(bursts):
        end = bursts[i + 1][0] if i + 1 < len(bursts) else float("inf")
        hit = next(((ts, src) for ts, src in sorted(wakes)
                    if t0 - TS_SLACK_S <= ts < end), None)
        out.append(None if hit is None else
                   {"latency_ms": max(0.0, (hit[0] - t0) * 1000), "source": hit[1]["source"],
                    "span_ms": hit[1]["span_ms"], "read_ms": hit[1]["read_ms"]})
    return out


def match_offloads(bursts, quiets, pageds):
    """For each burst's end (the probe's last touch): the idle verdict after it (s) and the
    start of the offload that followed (s; a paged-out line at T of D ms started at T - D),
    before the next burst; None where there was none."""
    out = []
    for i, (_, t1) in enumerate(bursts):
        end = bursts[i + 1][0] if i + 1 < len(bursts) else float("inf")
        q = next((ts for ts in sorted(quiets) if t1 - TS_SLACK_S <= ts < end), None)
        p = next(((ts, d) for ts, d in sorted(pageds) if t1 - TS_SLACK_S <= ts < end), None)
        out.append({"idle_verdict_s": None if q is None else max(0.0, q - t1),
                    "offload_start_s": None if p is None else
                    max(0.0, p[0] - p[1]["ms"] / 1000.0 - t1)})
    return out


def read_bursts(text):
    """A probe's file: [(t_wake_s, t_quiet_s)] (it writes milliseconds)."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            out.append((float(parts[0]) / 1000.0, float(parts[1]) / 1000.0))
    return out


def plan(n, share_pct, probes):
    """(probes, periodic containers, containers in all) for N and a share in percent: the
    share is of all N; probes are part of N, never periodic."""
    k = min(probes, max(1, n // 2))
    active = min(n - k, round(n * share_pct / 100.0))
    return k, active, n - k


def eta_s(done, remaining_ns, base_s):
    """Seconds left: @done [(n, seconds)] of finished runs, @remaining_ns the N of the runs
    left; each run costs base_s plus a per-container part fitted on the finished runs."""
    per = [max(0.0, s - base_s) / n for n, s in done if n > 0]
    per_ct = sum(per) / len(per) if per else 0.15
    return sum(base_s + per_ct * n for n in remaining_ns)


# --- the guest ---------------------------------------------------------------------------


def env_int(name, default):
    return int(os.environ.get(name, default))


def log(msg):
    print(f"# [{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def read(path):
    with open(path) as f:
        return f.read()


def meminfo():
    return {k: int(v.split()[0]) for k, v in
            (line.split(":") for line in read("/proc/meminfo").splitlines())}


def run(cmd, check=False):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


def ctl(*args, runtime=None):
    cmd = [os.path.join(BIN, "pagetierctl")]
    if runtime:
        cmd += ["--runtime-dir", runtime]
    return run(cmd + list(args))


def status_list(runtime):
    r = ctl("--json", "status", runtime=runtime)
    if r.returncode:
        return None
    return json.loads(r.stdout)["containers"]


def nvme_by_serial(serial):
    for c in sorted(os.listdir("/sys/class/nvme")):
        if read(f"/sys/class/nvme/{c}/serial").strip() == serial:
            return f"/dev/{c}n1"
    raise RuntimeError(f"no NVMe drive with serial {serial}")


def setup_swap(scanner):
    dev = os.environ.get("SCALE_SWAP_DEV") or nvme_by_serial("pagetier-nvme")
    if scanner == "kmod":
        if not os.path.exists("/dev/pagetier"):
            raise RuntimeError("kmod: /dev/pagetier missing: pagetier.ko is not loaded")
        r = ctl("--json", "tier", "create", dev)
        if r.returncode:
            raise RuntimeError(f"tier create failed: {r.stderr.strip()}")
        tier = json.loads(r.stdout)["device"]
        for _ in range(50):
            if os.path.exists(tier):
                break
            time.sleep(0.1)
        run(["mkswap", tier], check=True)
        run(["swapon", "--discard=pages", "-p", "32767", tier], check=True)
        return tier
    if os.path.exists("/dev/pagetier"):
        raise RuntimeError("fallback: pagetier.ko is loaded; the fallback run needs it absent")
    run(["mkswap", dev], check=True)
    run(["swapon", dev], check=True)
    return dev


# The tier's counters worth a window's difference (tier_stat, read_stat: kmod/tier.c).
TIER_STATS = {"tier_stat": ("cgroups", "cgroup_evictions", "cgroup_evicted_pages"),
              "read_stat": ("demand_read_pages", "staging_hits", "staging_misses",
                            "prefetch_bytes")}
TIER_COLUMNS = {
    "tier_stat": ("pages_stored", "bytes_written", "bytes_read", "write_ios", "read_ios",
                  "discard_pages", "read_errors", "write_errors", "cgroups",
                  "cgroup_overflows", "cgroup_evictions", "cgroup_evicted_pages"),
    "read_stat": ("demand_reads", "demand_read_pages", "demand_read_ns", "staging_hits",
                  "staging_misses", "staged_pages", "prefetch_bytes", "prefetch_ios",
                  "prefetch_errors", "staging_evicted", "staging_expired",
                  "staging_dropped", "zero_pages", "staging_max", "prefetch_preempted")}


def parse_tier_stat(f, text):
    """The counters of TIER_STATS[f] in the text of the tier's sysfs file f."""
    cols = dict(zip(TIER_COLUMNS[f], (int(v) for v in text.split())))
    return {k: cols[k] for k in TIER_STATS[f] if k in cols}


def tier_sample(swapdev):
    """The tier's counters (TIER_STATS) now; {} without the module's tier."""
    name = os.path.basename(swapdev or "")
    out = {}
    for f in TIER_STATS:
        try:
            out.update(parse_tier_stat(f, read(f"/sys/block/{name}/{f}")))
        except OSError:
            return {}
    return out


def tier_window(a, b):
    """Counters' growth over a window; 'cgroups' as it is at the end."""
    return {k: (b[k] if k == "cgroups" else b[k] - a.get(k, 0)) for k in b}


def calibrate():
    r = run([MICRO, "--calibrate"])
    try:
        return json.loads(r.stdout)
    except ValueError:
        log(f"micro --calibrate failed: {r.stderr.strip()[-300:]}")
        return None


class LogTail:
    """pagetierd's log, read as it grows; events of interest by kind."""

    def __init__(self, path):
        self.path, self.pos, self.rest = path, 0, ""
        self.events = []	# (ts, kind, policy, detail)
        self.lines = 0

    def poll(self):
        try:
            with open(self.path) as f:
                f.seek(self.pos)
                data = f.read()
                self.pos = f.tell()
        except OSError:
            return
        data = self.rest + data
        lines = data.split("\n")
        self.rest = lines.pop()
        for line in lines:
            self.lines += 1
            p = parse_log_line(line)
            if not p:
                continue
            c = classify(p[2])
            if c:
                self.events.append((p[0], c[0], c[1], c[2]))

    def of(self, kind, policy=None, since=0.0):
        return [(ts, d) for ts, k, pol, d in self.events
                if k == kind and (policy is None or pol == policy) and ts >= since]

    def last_ts(self, kinds, exclude=(), since=0.0):
        ts = [e[0] for e in self.events if e[1] in kinds and e[2] not in exclude and
              e[0] >= since]
        return max(ts) if ts else None


class Containers:
    """N cgroups below /pt-scale, one ptsleeper each: probes p-I; w-IIIII, the containers
    that may wake periodically (the largest share's worth, with WAKER_KB); c-IIIII, the
    others (SLEEPER_KB)."""

    def __init__(self, n, n_probes, n_wakers, work, sleeper_kb, waker_kb, period_s, burst_ms,
                 waker_file=None):
        self.work = work
        self.probes = [f"p-{i}" for i in range(n_probes)]
        self.wakers = [f"w-{i:05d}" for i in range(n_wakers)]
        self.names = [f"c-{i:05d}" for i in range(n - n_probes - n_wakers)]
        self.pids, self.periodic = {}, []
        self.probe_files = {p: os.path.join(work, f"{p}.bursts") for p in self.probes}
        rfd, wfd = os.pipe()
        os.set_inheritable(wfd, True)
        t0 = time.monotonic()
        try:
            for i, name in enumerate(self.probes + self.wakers + self.names):
                d = os.path.join(CG, PARENT, name)
                os.makedirs(d, exist_ok=True)
                kb = sleeper_kb if name.startswith("c-") else waker_kb
                args = [SLEEPER, "--cgroup", d, "--kb", str(kb), "--ready-fd", str(wfd),
                        "--period-ms", str(period_s * 1000), "--burst-ms", str(burst_ms),
                        "--seed", str(i + 1)]
                if name in self.probe_files:
                    args += ["--probe", self.probe_files[name]]
                if waker_file and not name.startswith("c-"):
                    args += ["--file", waker_file]
                self.pids[name] = os.posix_spawn(SLEEPER, args, os.environ)
                if (i + 1) % 500 == 0:
                    log(f"  {i + 1}/{n} containers started ({time.monotonic() - t0:.0f} s)")
        finally:
            os.close(wfd)
        got = 0
        while got < len(self.pids):
            b = os.read(rfd, 4096)
            if not b:
                break
            got += len(b)
        os.close(rfd)
        if got < len(self.pids):
            raise RuntimeError(f"only {got} of {len(self.pids)} containers became ready")

    def all_names(self):
        return self.probes + self.wakers + self.names

    def set_periodic(self, count):
        """The first @count of the w- containers wake periodically."""
        if count > len(self.wakers):
            raise RuntimeError(f"{count} periodic containers asked, {len(self.wakers)} made")
        while len(self.periodic) < count:
            name = self.wakers[len(self.periodic)]
            os.kill(self.pids[name], signal.SIGUSR2)
            self.periodic.append(name)
        while len(self.periodic) > count:
            os.kill(self.pids[self.periodic.pop()], signal.SIGUSR2)

    def alive(self):
        n = 0
        for pid in self.pids.values():
            try:
                os.kill(pid, 0)
                n += 1
            except ProcessLookupError:
                pass
        return n

    def stop(self):
        try:
            with open(os.path.join(CG, PARENT, "cgroup.kill"), "w") as f:
                f.write("1")
        except OSError:
            for pid in self.pids.values():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for pid in self.pids.values():
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        for name in self.all_names():
            d = os.path.join(CG, PARENT, name)
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


def start_daemon(work, tag, probes, idle_s):
    conf = os.path.join(work, f"etc-{tag}")
    os.makedirs(os.path.join(conf, "containers.d"))
    runtime = os.path.join(conf, "run")
    with open(os.path.join(conf, "pagetierd.conf"), "w") as f:
        # The product's defaults (poll_interval 500 ms, scan_interval 1 s, ...) but the
        # log level, which the bench reads: info, or PAGETIERD_LOG_LEVEL (debug logs each
        # scan and sample: for a diagnosis at small N, its cost shows in the figures).
        # SAMPLE_READER: its sample_reader (pread, the default, or io_uring).
        level = os.environ.get("PAGETIERD_LOG_LEVEL", "info")
        reader = os.environ.get("SAMPLE_READER", "pread")
        f.write(f"[daemon]\ncgroup_root = {CG}\nruntime_dir = {runtime}\nlog_level = {level}\n"
                f"metrics_listen = {METRICS}\nsample_reader = {reader}\n")
    with open(os.path.join(conf, "containers.d", "scale.conf"), "w") as f:
        for p in probes:
            f.write(f"[{p}]\nmatch_cgroup = /{PARENT}/{p}\nidle_threshold = {idle_s}s\n\n")
        f.write(f"[wakers]\nmatch_cgroup = /{PARENT}/w-*\nidle_threshold = {idle_s}s\n\n")
        f.write(f"[containers]\nmatch_cgroup = /{PARENT}/c-*\nidle_threshold = {idle_s}s\n")
    for root, dirs, files in os.walk(conf):
        for x in dirs:
            os.chmod(os.path.join(root, x), 0o755)
        for x in files:
            os.chmod(os.path.join(root, x), 0o644)
    logpath = os.path.join(work, f"pagetierd-{tag}.log")

    def limits():
        # What packaging/pagetierd.service gives it (LimitNOFILE, LimitMEMLOCK), as far as
        # this kernel allows.
        for lim, v in ((resource.RLIMIT_NOFILE, 524288),
                       (resource.RLIMIT_MEMLOCK, resource.RLIM_INFINITY)):
            try:
                resource.setrlimit(lim, (v, v))
            except (ValueError, OSError):
                pass

    d = subprocess.Popen([PAGETIERD, "--config-dir", conf],
                         stdout=open(logpath, "w"), stderr=subprocess.STDOUT,
                         preexec_fn=limits)
    end = time.monotonic() + 60
    while time.monotonic() < end and d.poll() is None and status_list(runtime) is None:
        time.sleep(0.5)
    if d.poll() is not None or status_list(runtime) is None:
        raise RuntimeError("pagetierd did not start: " + read(logpath)[-2000:])
    return d, runtime, logpath


def metrics_sample():
    """pagetierd's own counters of what its ticks did (the metrics endpoint), or {}: what a
    window's CPU was spent on."""
    try:
        with urllib.request.urlopen(f"http://{METRICS}/metrics", timeout=10) as r:
            text = r.read().decode()
    except OSError as e:
        log(f"metrics: {e}")
        return {}
    return parse_metrics(text, COUNTERS)


def parse_metrics(text, names):
    """{name: value} of the metrics @names in Prometheus text, a labelled one's series
    summed (a per-container counter: over the containers)."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        series, value = line.rsplit(" ", 1)
        name = series.split("{", 1)[0]
        if name in names:
            out[name] = out.get(name, 0.0) + float(value)
    return out


def counters_window(a, b):
    """What the daemon did in a window: each counter's growth, short names."""
    return {k.replace("pagetier_", "").replace("_total", ""): int(b[k] - a[k])
            for k in COUNTERS if k in a and k in b}


def readers_ticks(pid, st):
    """CPU ticks of the processes that read a wake's mapped files, whoever forked them:
    pagetierd's reaped children (before its spawner, and when the spawner is gone), and
    its spawner (daemon/advise_spawner.h) with the readers it reaped."""
    ticks = st["children"]
    sp = e2elib.spawner_of(pid)
    try:
        if sp:
            sst = parse_proc_stat(read(f"/proc/{sp}/stat"))
            ticks += sst["utime"] + sst["stime"] + sst["children"]
    except OSError:
        pass	# it ended meanwhile
    return ticks


def proc_sample(pid):
    st = parse_proc_stat(read(f"/proc/{pid}/stat"))
    main = parse_proc_stat(read(f"/proc/{pid}/task/{pid}/stat"))
    return {"t": time.monotonic(), "cpu": st["utime"] + st["stime"],
            "readers": readers_ticks(pid, st), "utime": st["utime"],
            "stime": st["stime"], "main": main["utime"] + main["stime"],
            "status": parse_proc_status(read(f"/proc/{pid}/status")),
            "host": cpu_busy(read("/proc/stat"))}


def cpu_window(a, b):
    dt = b["t"] - a["t"]
    busy = b["host"][0] - a["host"][0]
    total = b["host"][1] - a["host"][1]
    return {"window_s": round(dt, 1),
            "user_s": round((b["utime"] - a["utime"]) / CLK_TCK, 2),
            "sys_s": round((b["stime"] - a["stime"]) / CLK_TCK, 2),
            "pct_one_cpu": round(100.0 * (b["cpu"] - a["cpu"]) / CLK_TCK / dt, 2),
            "main_thread_pct": round(100.0 * (b["main"] - a["main"]) / CLK_TCK / dt, 2),
            "file_readers_pct": round(100.0 * (b.get("readers", 0) - a.get("readers", 0))
                                      / CLK_TCK / dt, 2),
            "guest_busy_pct": round(100.0 * busy / total, 1) if total else None}


def polled_by_kind(containers):
    """Of pagetierd's status, the containers it samples at every poll, counted by kind
    (c-, w-, p-), state and what each waits for (its "waiting_for"): why the polls do
    not pass them by. The ones passed by (quiet, or active at their own steady pace) are
    counted as "passed by"."""
    out = {}
    for c in containers:
        if c.get("sampled_each_poll") is False:
            key = "passed by"
        else:
            key = (f"{os.path.basename(c['cgroup'])[:2]} {c['state']}: "
                   f"{c.get('waiting_for') or 'nothing'}")
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def settle(d, runtime, tail, n, periodic, max_s, quiet_s=5.0):
    """Until pagetierd tracks all N and every non-periodic container is idle, with the
    offloads and settle passes of the sleeping ones done (no such line of theirs for
    quiet_s; the w- containers, some periodic, have a policy of their own, "wakers").
    Returns (seconds, ok, why)."""
    t0 = time.monotonic()
    every = max(3.0, n / 300.0)
    next_status, idle, tracked = 0.0, 0, 0
    while time.monotonic() - t0 < max_s:
        if d.poll() is not None:
            return time.monotonic() - t0, False, "pagetierd exited"
        tail.poll()
        tracked = len([1 for _, c in tail.of("track") if c.startswith(f"/{PARENT}/")])
        now = time.monotonic()
        if tracked >= n and now >= next_status:
            next_status = now + every
            st = status_list(runtime) or []
            idle = sum(1 for c in st if c["state"] == "idle" and
                       os.path.basename(c["cgroup"]) not in periodic)
            # Log time stamps are CLOCK_MONOTONIC, as time.monotonic() is.
            last = tail.last_ts(("paged", "settled", "quiet"), exclude=("wakers",))
            if idle >= n - len(periodic) and (last is None or now - last >= quiet_s):
                sampling_settled(n)
                return time.monotonic() - t0, True, ""
        time.sleep(1.0)
    return (time.monotonic() - t0, False,
            f"after {max_s} s: {tracked}/{n} tracked, {idle}/{n - len(periodic)} idle")


def sampling_settled(n, max_s=GRACE_S + 10.0):
    """Until pagetierd stops sampling every container each tick: a container that went
    quiet is still sampled each poll for its grace (PT_PACE_QUIET_GRACE_MS), and a window
    that starts within it measures that, not the steady state (a run's 1,000 idle
    containers cost 0.5% or 1.3% of a CPU by when the window began). At most @max_s, for
    a daemon that samples every poll whatever (no BPF)."""
    end = time.monotonic() + max_s
    a = metrics_sample()
    while a and time.monotonic() < end:
        time.sleep(2.0)
        b = metrics_sample()
        if not b:
            return
        if b.get("pagetier_samples_total", 0) - a.get("pagetier_samples_total", 0) <= n / 20 + 3:
            return
        a = b


def probe_rounds(cts, tail, rounds, idle_s, log_prefix):
    """Wakes every probe ROUNDS times, one round at a time: each round waits for every
    probe to be idle and offloaded again. Returns the per-probe bursts."""
    timeout = idle_s + 120
    base = {}
    for p in cts.probes:
        try:
            base[p] = len(read_bursts(read(cts.probe_files[p])))
        except OSError:
            base[p] = 0
    for r in range(rounds):
        t_round = time.monotonic()
        for p in cts.probes:
            os.kill(cts.pids[p], signal.SIGUSR1)
            time.sleep(0.3)

        def done():
            tail.poll()
            for p in cts.probes:
                try:
                    b = read_bursts(read(cts.probe_files[p]))
                except OSError:
                    return False
                i = base[p] + r
                if len(b) <= i or not tail.of("paged", p, since=b[i][1] - TS_SLACK_S):
                    return False
            return True
        while not done() and time.monotonic() - t_round < timeout:
            time.sleep(0.5)
        log(f"{log_prefix}probe round {r + 1}/{rounds}: {time.monotonic() - t_round:.1f} s"
            + ("" if done() else " (timed out: a probe was not offloaded again)"))
    out = {}
    for p in cts.probes:
        try:
            out[p] = read_bursts(read(cts.probe_files[p]))
        except OSError:
            out[p] = []
    return out


def run_share(cts, n, share, scanner, work, out, cfg, t_begin, swapdev):
    k, active, _ = plan(n, share, cfg["probes"])
    cts.set_periodic(active)
    tag = f"{scanner}-n{n}-s{share}"
    pre = f"{scanner} N={n} {share}%: "
    res = {"n": n, "share_pct": share, "scanner": scanner, "probes": k, "periodic": active,
           "sleeping": n - k - active, "idle_s": cfg["idle_s"], "period_s": cfg["period_s"],
           "burst_ms": cfg["burst_ms"]}
    mi0 = meminfo()
    t0 = time.monotonic()
    d, runtime, logpath = start_daemon(work, tag, cts.probes, cfg["idle_s"])
    tail = LogTail(logpath)
    try:
        secs, ok, why = settle(d, runtime, tail, n, set(cts.periodic), cfg["settle_max_s"])
        tail.poll()
        tr = [ts for ts, c in tail.of("track") if c.startswith(f"/{PARENT}/")]
        secs = time.monotonic() - t0	# from the launch of pagetierd
        res.update({"settle_s": round(secs, 1), "settled": ok, "settle_problem": why,
                    "tracked": len(tr),
                    "track_all_s": round(max(tr) - t0, 1) if len(tr) >= n else None})
        pg = tail.of("paged")
        if pg:
            res["offload_storm"] = {"offloads": len(pg),
                                    "first_to_last_s": round(pg[-1][0] - pg[0][0], 1)}
        log(pre + f"settled in {secs:.0f} s" + ("" if ok else f" (NOT settled: {why})"))

        # Window A: steady state.
        ma = metrics_sample()
        ta = tier_sample(swapdev)
        a = proc_sample(d.pid)
        wakes0 = len(tail.of("wake"))
        end = time.monotonic() + cfg["measure_s"]
        while time.monotonic() < end and d.poll() is None:
            time.sleep(min(10.0, max(0.1, end - time.monotonic())))
            tail.poll()
        if d.poll() is not None:
            raise RuntimeError("pagetierd exited during the measurement: "
                               + read(logpath)[-2000:])
        b = proc_sample(d.pid)
        tail.poll()
        res["cpu"] = cpu_window(a, b)
        res["did"] = counters_window(ma, metrics_sample())
        res["tier"] = tier_window(ta, tier_sample(swapdev))
        res["rss_kib"] = b["status"].get("VmRSS")
        res["hwm_kib"] = b["status"].get("VmHWM")
        res["rss_anon_kib"] = b["status"].get("RssAnon")
        res["threads"] = b["status"].get("Threads")
        res["wakes_in_window"] = len(tail.of("wake")) - wakes0
        res["polled"] = polled_by_kind(status_list(runtime) or [])
        log(pre + f"pagetierd {res['cpu']['pct_one_cpu']}% of one CPU "
            f"(user {res['cpu']['user_s']} s, sys {res['cpu']['sys_s']} s in "
            f"{res['cpu']['window_s']} s; main thread {res['cpu']['main_thread_pct']}%; "
            f"file readers {res['cpu']['file_readers_pct']}%), "
            f"RSS {res['rss_kib'] // 1024} MiB, {res['wakes_in_window']} wakes seen; "
            f"guest {res['cpu']['guest_busy_pct']}% busy; did {res['did']}; "
            f"the tier: {res['tier']}; "
            f"sampled each poll at the end: {res['polled']}")

        # Window B: the probes.
        a = proc_sample(d.pid)
        bursts = probe_rounds(cts, tail, cfg["probe_rounds"], cfg["idle_s"], pre)
        b = proc_sample(d.pid)
        tail.poll()
        res["cpu_probes"] = cpu_window(a, b)
        lat, missed, sources, verdict, offl, spans, reads = [], 0, {}, [], [], [], []
        for p in cts.probes:
            mine = [x for x in bursts[p] if x[0] >= t0]
            for m in match_wakes(mine, [(ts, src) for ts, src in tail.of("wake", p)]):
                if m is None:
                    missed += 1
                else:
                    lat.append(m["latency_ms"])
                    sources[m["source"]] = sources.get(m["source"], 0) + 1
                    if m["span_ms"] is not None:
                        spans.append(m["span_ms"])
                        reads.append(m["read_ms"])
            for m in match_offloads(mine, [ts for ts, _ in tail.of("quiet", p)],
                                    tail.of("paged", p)):
                if m["idle_verdict_s"] is not None:
                    verdict.append(m["idle_verdict_s"])
                if m["offload_start_s"] is not None:
                    offl.append(m["offload_start_s"])
        res["wake_latency_ms"] = summary(lat)
        res["wake_latency_ms"]["all"] = [round(x, 1) for x in lat]
        # What a wake by refaults waited for: the probe's refaults to add up to the
        # policy's wake_refaults, and pagetierd reading the last of them.
        res["wake_refault_span_ms"] = summary(spans)
        res["wake_read_ms"] = summary(reads)
        res["wake_missed"] = missed
        res["wake_sources"] = sources
        res["idle_verdict_s"] = summary(verdict, 2)
        res["idle_to_offload_s"] = summary(offl, 2)
        res["idle_to_offload_s"]["all"] = [round(x, 2) for x in offl]
        w = res["wake_latency_ms"]
        log(pre + f"wake detection p50 {w['p50']} p99 {w['p99']} max {w['max']} ms "
            f"({w['n']} wakes, {missed} missed; {sources}; refaults over p50 "
            f"{res['wake_refault_span_ms']['p50']} p99 {res['wake_refault_span_ms']['p99']} ms, "
            f"the last read p99 {res['wake_read_ms']['p99']} ms after); idle to offload start "
            f"p50 {res['idle_to_offload_s']['p50']} s p99 {res['idle_to_offload_s']['p99']} s "
            f"(idle_threshold {cfg['idle_s']} s)")
    finally:
        d.terminate()
        try:
            d.wait(60)
        except subprocess.TimeoutExpired:
            d.kill()
            d.wait()
        res["log_lines"] = tail.lines
        try:
            with open(logpath, "rb") as src, \
                    open(os.path.join(out, f"pagetierd-{tag}.log"), "wb") as dst:
                dst.write(src.read())
        except OSError:
            pass
    mi1 = meminfo()
    res["guest_mem_available_mib"] = [mi0["MemAvailable"] // 1024, mi1["MemAvailable"] // 1024]
    res["containers_alive"] = cts.alive()
    res["elapsed_s"] = round(time.monotonic() - t_begin)
    return res


def main():
    scanner = sys.argv[1] if len(sys.argv) > 1 else ""
    if scanner not in ("kmod", "fallback"):
        sys.exit("usage: guest.py kmod|fallback")
    out = os.environ.get("PT_OUT", "/tmp")
    ns = [int(x) for x in os.environ.get("NS", "10 100 1000 3000").split()]
    shares = sorted(int(x) for x in os.environ.get("SHARES", "0 5 20").split())
    cfg = {"measure_s": env_int("MEASURE_S", 120), "probes": env_int("PROBES", 4),
           "probe_rounds": env_int("PROBE_ROUNDS", 8), "idle_s": env_int("IDLE_S", 5),
           "period_s": env_int("PERIOD_S", 30), "burst_ms": env_int("BURST_MS", 200),
           "sleeper_kb": env_int("SLEEPER_KB", 64), "waker_kb": env_int("WAKER_KB", 1024),
           "settle_max_s": env_int("SETTLE_MAX_S", 900),
           "waker_file": os.environ.get("WAKER_FILE") or None,
           "sample_reader": os.environ.get("SAMPLE_READER", "pread")}
    max_s = env_int("MAX_S", 12600)
    kb_per_ct = env_int("KB_PER_CT", 400)
    t_begin = time.monotonic()
    print(f"# scale guest started: {scanner}", flush=True)
    mi = meminfo()
    log(f"{scanner}: kernel {os.uname().release}, {mi['MemTotal'] // 1024} MiB RAM, "
        f"{os.cpu_count()} CPUs; N {ns}, shares {shares}%, {cfg}")
    for f in (SLEEPER, MICRO, PAGETIERD):
        if not os.access(f, os.X_OK):
            raise RuntimeError(f"{f} missing: bench/scale/run.sh builds it")
    host_cal = None
    if os.environ.get("HOST_CAL"):
        try:
            host_cal = json.loads(read(os.environ["HOST_CAL"]))
        except (OSError, ValueError) as e:
            log(f"no host calibration ({e})")
    guest_cal = calibrate()
    ratio = None
    if host_cal and guest_cal:
        ratio = {k: round(guest_cal[k] / host_cal[k], 1) for k in
                 ("apply_ns_per_chunk", "tick_ns_per_ctx", "rescan_ns_per_ctx")
                 if host_cal.get(k) and guest_cal.get(k)}
        log(f"emulated / native (micro --calibrate): {ratio}")
    swapdev = setup_swap(scanner)
    log(f"swap on {swapdev}")
    for d in (CG, os.path.join(CG, PARENT)):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "cgroup.subtree_control"), "w") as f:
            f.write("+memory +cpu")
    common = {"scanner": scanner, "kernel": os.uname().release,
              "ram_mib": mi["MemTotal"] // 1024, "cpus": os.cpu_count(), "config": cfg,
              "calibrate": {"host": host_cal, "guest": guest_cal, "ratio": ratio},
              "swap": swapdev}
    work = tempfile.mkdtemp(prefix="pt-scale-")
    done, all_runs, failed = [], [], False
    base_s = cfg["measure_s"] + cfg["probe_rounds"] * (cfg["idle_s"] + 10) + 30
    total = len(ns) * len(shares)
    k = 0
    for n in ns:
        result = dict(common, n=n, runs=[])
        path = os.path.join(out, f"scale-{scanner}-n{n}.json")
        mi = meminfo()
        need = n * kb_per_ct + sum(plan(n, max(shares), cfg["probes"])[:2]) * \
            cfg["waker_kb"] + 256 * 1024
        why = None
        if mi["MemAvailable"] < need:
            why = (f"the guest has {mi['MemAvailable'] // 1024} MiB available, N={n} needs "
                   f"about {need // 1024} MiB ({kb_per_ct} KiB a container): give it more "
                   "(SCALE_VM_MEM)")
        elif time.monotonic() - t_begin > max_s:
            why = f"the time budget MAX_S={max_s} s is spent"
        if why:
            result["skipped"] = why
            log(f"{scanner}: N={n} skipped: {why}")
            with open(path, "w") as f:
                json.dump(result, f, indent=1)
            k += len(shares)
            continue
        k_probes = plan(n, 0, cfg["probes"])[0]
        n_wakers = plan(n, max(shares), cfg["probes"])[1]
        t_n = time.monotonic()
        log(f"{scanner}: N={n}: starting {n} containers ({k_probes} probes, {n_wakers} "
            "that may wake periodically)")
        avail0 = mi["MemAvailable"]
        cts = Containers(n, k_probes, n_wakers, work, cfg["sleeper_kb"], cfg["waker_kb"],
                         cfg["period_s"], cfg["burst_ms"], cfg["waker_file"])
        used = max(0, avail0 - meminfo()["MemAvailable"])
        result["setup_s"] = round(time.monotonic() - t_n, 1)
        result["guest_kib_per_container"] = round(used / n)
        kb_per_ct = max(kb_per_ct, int(used / n * 1.15))
        log(f"{scanner}: N={n}: containers up in {result['setup_s']} s, "
            f"{used // 1024} MiB of guest memory ({used // n} KiB each)")
        try:
            for share in shares:
                k += 1
                t_run = time.monotonic()
                left = eta_s(done, [x for x in ns for _ in shares][k:], base_s)
                log(f"== [{k}/{total}] {scanner} N={n} share={share}% (elapsed "
                    f"{(t_run - t_begin) / 60:.0f} min, about {left / 60:.0f} min left)")
                try:
                    r = run_share(cts, n, share, scanner, work, out, cfg, t_begin, swapdev)
                except (RuntimeError, OSError) as e:
                    failed = True
                    r = {"n": n, "share_pct": share, "scanner": scanner, "error": str(e)}
                    log(f"{scanner} N={n} {share}%: FAILED: {e}")
                result["runs"].append(r)
                all_runs.append(r)
                done.append((n, time.monotonic() - t_run))
                with open(path, "w") as f:
                    json.dump(result, f, indent=1)
        finally:
            t_stop = time.monotonic()
            cts.stop()
            result["teardown_s"] = round(time.monotonic() - t_stop, 1)
            with open(path, "w") as f:
                json.dump(result, f, indent=1)
    sys.path.insert(0, HERE)
    import report  # noqa: E402
    print(report.table(report.load(out)), flush=True)
    log(f"{scanner}: done in {(time.monotonic() - t_begin) / 60:.1f} min")
    with open(os.path.join(out, "guest.rc"), "w") as f:
        f.write("1\n" if failed else "0\n")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # noqa: BLE001: the reason goes to the console, loudly
        print(f"Bail out! scale guest: {type(e).__name__}: {e}", flush=True)
        try:
            with open(os.path.join(os.environ.get("PT_OUT", "/tmp"), "guest.rc"), "w") as f:
                f.write("1\n")
        except OSError:
            pass
        raise
