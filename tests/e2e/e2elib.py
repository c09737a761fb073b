"""Helpers shared by the e2e scenarios (run as root inside the test VM): TAP output,
cgroup files, pagetierctl, waiting."""
import json
import struct
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(TOP, "build", "bin")
CG = "/sys/fs/cgroup"
MIB = 1 << 20


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, diag=None):
        self.n += 1
        if not cond:
            self.failed += 1
        print(f"{'ok' if cond else 'not ok'} {self.n} {name}", flush=True)
        if diag and not cond:
            for line in str(diag).splitlines():
                print(f"#   {line}", flush=True)
        return cond

    def diag(self, text):
        for line in str(text).splitlines():
            print(f"# {line}", flush=True)

    def bail(self, why):
        print(f"Bail out! {why}", flush=True)
        sys.exit(1)


def run(cmd, check=False, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


def cg_read(name, f, parent):
    with open(os.path.join(CG, parent, name, f)) as fh:
        return fh.read()


def cg_key(name, f, key, parent):
    for line in cg_read(name, f, parent).splitlines():
        k, v = line.split(" ", 1)
        if k == key:
            return int(v)
    raise KeyError(key)


def cg_u64(name, f, parent):
    return int(cg_read(name, f, parent).split()[0])


# When the scenario started (this module is imported first thing).
T0 = time.monotonic()


def el():
    """Seconds since the scenario started, for the diagnostics (where its time goes)."""
    return f"[{time.monotonic() - T0:.1f} s]"


# The guest suite's PT_STEP_SCALE (make test-debug: 4): a kernel whose checkers (KASAN,
# lockdep, kmemleak) make every fault and syscall several times slower gets as many times
# the wait. What is waited for is the same; only how long it may take changes.
TIME_SCALE = max(1.0, float(os.environ.get("PT_STEP_SCALE", "1") or 1))


def wait_for(pred, timeout, step=0.2):
    end = time.monotonic() + timeout * TIME_SCALE
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def wait_wake_applied(container_status, wakes0, timeout, step=0.2):
    """Waits for a wake past the @wakes0 counted before it to have its prefetch applied
    (the container's state out of "waking"): until then the status still shows an earlier
    wake's figures (its prefetch, its precision window). @container_status() gives the
    container's status dict. Returns that dict, or a false value at the timeout."""
    def applied():
        s = container_status()
        return s if s.get("wakes", 0) > wakes0 and s.get("state") != "waking" else None
    return wait_for(applied, timeout, step)


def free_port():
    """A TCP port on 127.0.0.1 nobody listens on now (for pagetierd's metrics_listen)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    """pagetierd's Prometheus text, or a comment saying why there is none."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return r.read().decode()
    except OSError as e:
        return f"# scrape failed: {e}"


def metric(text, name):
    """The value of sample @name (with its labels, as written) in @text, or None."""
    m = re.search(r"^" + re.escape(name) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def ctl(*args, runtime=None):
    cmd = [os.path.join(BIN, "pagetierctl")]
    if runtime:
        cmd += ["--runtime-dir", runtime]
    return run(cmd + list(args))


def status_json(runtime):
    r = ctl("--json", "status", runtime=runtime)
    if r.returncode != 0:
        return None
    return {c["name"]: c for c in json.loads(r.stdout)["containers"]}


def tier_cgroup_stats():
    """pagetierctl tier stats --json, summed over tiers: {cgroup_id: {counter: value}}."""
    r = ctl("--json", "tier", "stats")
    if r.returncode != 0:
        return {}
    out = {}
    for e in json.loads(r.stdout):
        acc = out.setdefault(e["cgroup_id"], {})
        for k, v in e.items():
            if isinstance(v, int) and k not in ("tier", "cgroup_id"):
                acc[k] = acc.get(k, 0) + v
    return out


def tier_bytes_by_cgroup():
    """Bytes each cgroup has stored on the tiers: {cgroup_id: bytes}."""
    return {cg: c.get("pages_stored", 0) * 4096 for cg, c in tier_cgroup_stats().items()}


def setup_cgroups(parent, names):
    """cgroup v2 memory and cpu controllers for @parent and its children @names."""
    for d in (CG, os.path.join(CG, parent)):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "cgroup.subtree_control"), "w") as f:
            f.write("+memory +cpu")
    for n in names:
        os.makedirs(os.path.join(CG, parent, n), exist_ok=True)
    return {n: os.stat(os.path.join(CG, parent, n)).st_ino for n in names}


def remove_cgroups(parent, names):
    for n in names:
        p = os.path.join(CG, parent, n)
        if os.path.isdir(p):
            os.rmdir(p)
    if os.path.isdir(os.path.join(CG, parent)):
        os.rmdir(os.path.join(CG, parent))


def fix_perms(d):
    """Config files as pagetierd wants them: writable by their owner only."""
    for root, dirs, files in os.walk(d):
        for x in dirs:
            os.chmod(os.path.join(root, x), 0o755)
        for x in files:
            os.chmod(os.path.join(root, x), 0o644)


def start_in_cgroup(parent, name, args):
    """Starts build/bin/ptwork ARGS inside cgroup @parent/@name."""
    return start_cmd_in_cgroup(parent, name, f"{BIN}/ptwork {args}")


def start_cmd_in_cgroup(parent, name, cmd):
    """Starts the shell command line CMD (one program and its arguments) inside cgroup
    @parent/@name."""
    procs = os.path.join(CG, parent, name, "cgroup.procs")
    # The shell moves itself into the cgroup, then becomes the workload.
    return subprocess.Popen(["sh", "-c", f"echo $$ > {procs} && exec {cmd}"])


def create_tier(tap, backing):
    """/dev/pagetierN over @backing as the only swap device; returns the device."""
    r = ctl("--json", "tier", "create", backing)
    if r.returncode != 0:
        tap.bail(f"tier create failed: {r.stderr.strip()}")
    dev = json.loads(r.stdout)["device"]
    run(["mkswap", dev], check=True)
    run(["swapon", "--discard=pages", "-p", "32767", dev], check=True)
    return dev


def destroy_tier(tap, dev):
    r = run(["swapoff", dev])
    tap.ok(r.returncode == 0, "swapoff of the tier succeeds", r.stderr)
    r = ctl("tier", "destroy", dev.replace("/dev/pagetier", ""))
    tap.ok(r.returncode == 0, "tier destroyed", r.stderr)


def pagemap_counts(pid, start, end):
    """(present, swapped) pages of [start, end) of process @pid, from /proc/PID/pagemap."""
    present = swapped = 0
    with open(f"/proc/{pid}/pagemap", "rb") as f:
        f.seek(start // 4096 * 8)
        left = (end - start) // 4096
        while left:
            n = min(left, 65536)
            for e in struct.unpack(f"<{n}Q", f.read(n * 8)):
                present += (e >> 63) & 1
                swapped += (e >> 62) & 1
            left -= n
    return present, swapped


def read_ready(path):
    """A hot-set ptwork's ready file: (address, size, hot bytes)."""
    with open(path) as f:
        _, addr, size, hot = f.read().split()
    return int(addr, 16), int(size), int(hot)


def spawner_of(pid):
    """pagetierd's readahead spawner: its child named pt-spawner (daemon/advise_spawner.h),
    or None."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
    except OSError:
        return None
    for kid in kids:
        try:
            with open(f"/proc/{kid}/comm") as f:
                if f.read().strip() == "pt-spawner":
                    return int(kid)
        except OSError:
            pass
    return None


def children_cpu_ticks(pid):
    """The CPU time (clock ticks) of the children @pid has reaped: cutime + cstime of
    /proc/PID/stat, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[13]) + int(fields[14])
