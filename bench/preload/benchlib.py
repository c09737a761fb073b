"""Helpers of the preload benchmarks that run inside the VM (trim-guest.py,
daemon_cpu-guest.py): the tier, pagetierd with a config, opted-in cgroups, processes under
libpagetier.so, and reading a preloaded process's ring header (its counters) from outside."""
import json
import os
import shutil
import struct
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "tests", "e2e"))
import e2elib  # noqa: E402
from e2elib import BIN, CG, ctl, run, status_json, wait_for  # noqa: E402,F401

LIB = os.path.join(TOP, "build", "lib", "libpagetier.so")
RING_MAGIC = 0x4c505450   # PT_PRELOAD_MAGIC


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def insmod():
    ko = os.path.join(TOP, "build", "kmod", os.uname().release, "pagetier.ko")
    if not os.path.exists("/dev/pagetier"):
        run(["insmod", ko], check=True)


def create_tier(backing="/dev/nvme0n1"):
    """/dev/pagetierN over @backing as the only swap device (as tests/e2e do)."""
    r = ctl("--json", "tier", "create", backing)
    if r.returncode != 0:
        raise RuntimeError(f"tier create failed: {r.stderr.strip()}")
    dev = json.loads(r.stdout)["device"]
    wait_for(lambda: os.path.exists(dev), 5)
    run(["mkswap", dev], check=True)
    run(["swapon", "--discard=pages", "-p", "32767", dev], check=True)
    return dev


def destroy_tier(dev):
    run(["swapoff", dev])
    ctl("tier", "destroy", dev.replace("/dev/pagetier", ""))


def start_daemon(work, parent, names, idle_threshold, log_level="info", poll="200ms"):
    """pagetierd with each of @names (cgroups below /@parent) opted in; returns
    (Popen, runtime dir, log path) once it tracks them all."""
    conf = os.path.join(work, "etc")
    os.makedirs(os.path.join(conf, "containers.d"), exist_ok=True)
    runtime = os.path.join(conf, "run")
    with open(os.path.join(conf, "pagetierd.conf"), "w") as f:
        f.write(f"[daemon]\ncgroup_root = {CG}\nruntime_dir = {runtime}\n"
                f"poll_interval = {poll}\nlog_level = {log_level}\n")
    with open(os.path.join(conf, "containers.d", "bench.conf"), "w") as f:
        for n in names:
            f.write(f"[{n}]\nmatch_cgroup = /{parent}/{n}\nclass = besteffort\n"
                    f"idle_threshold = {idle_threshold}\nprefetch = yes\n\n")
    e2elib.fix_perms(conf)
    logpath = os.path.join(work, "pagetierd.log")
    d = subprocess.Popen([os.path.join(BIN, "pagetierd"), "--config-dir", conf],
                         stdout=open(logpath, "w"), stderr=subprocess.STDOUT)
    sock = os.path.join(runtime, "preload.sock")
    ok = wait_for(lambda: os.path.exists(sock) and
                  set(names) <= set((status_json(runtime) or {}).keys()), 30)
    if not ok:
        d.terminate()
        raise RuntimeError("pagetierd did not start or does not track the cgroups: "
                           + open(logpath).read()[-2000:])
    return d, runtime, logpath


def stop_daemon(d):
    d.terminate()
    try:
        return d.wait(30)
    except subprocess.TimeoutExpired:
        d.kill()
        return d.wait()


def teardown(daemon, parent, names, tier, work):
    """The common end of a guest benchmark: pagetierd stopped, its cgroups removed, the
    tier destroyed, the work directory gone. Each step runs whatever the others did."""
    if daemon:
        stop_daemon(daemon)
    time.sleep(0.5)
    try:
        e2elib.remove_cgroups(parent, names)
    except OSError as e:
        log(f"cgroup cleanup: {e}")
    if tier:
        destroy_tier(tier)
    shutil.rmtree(work, ignore_errors=True)


def start_in_cgroup(parent, name, argv, env):
    """Starts @argv inside cgroup /@parent/@name with environment @env. The child moves
    itself into the cgroup before exec, so that the library registers from inside it."""
    procs = os.path.join(CG, parent, name, "cgroup.procs")

    def enter():
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    return subprocess.Popen(list(argv), env=env, stdout=subprocess.DEVNULL,
                            preexec_fn=enter)


def preload_env(runtime, **extra):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env.update(LD_PRELOAD=LIB, PAGETIER_PRELOAD_SOCK=os.path.join(runtime, "preload.sock"))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def ring_state(pid):
    """The ring(s) libpagetier.so registered in process @pid, read from /proc/PID/mem
    (struct pt_preload_hdr and pt_preload_ctl of include/pagetier/preload_proto.h). The ctl
    page is the daemon's: trim_seq/idle_seq are requests the daemon sent; trim_done/trims
    are what the library did with them. None if the process has no ring."""
    rings = []
    try:
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb")
    except OSError:
        return None
    with mem:
        for line in maps:
            if "memfd:pagetier-ring" not in line:
                continue
            f = line.split()
            if int(f[2], 16) != 0:
                continue
            start = int(f[0].split("-")[0], 16)
            try:
                mem.seek(start)
                h = mem.read(112)
                mem.seek(start + 4096)
                c = mem.read(32)
            except OSError:
                continue
            if struct.unpack_from("<I", h, 0)[0] != RING_MAGIC:
                continue
            reserve, dropped, _act, alloc_units = struct.unpack_from("<4Q", h, 64)
            idle_ack, trim_done = struct.unpack_from("<2I", h, 96)
            trims, = struct.unpack_from("<Q", h, 104)
            tail, req_seq = struct.unpack_from("<2Q", c, 0)
            idle_seq, trim_seq = struct.unpack_from("<2I", c, 16)
            rings.append(dict(reserve=reserve, dropped=dropped, alloc_units=alloc_units,
                              idle_ack=idle_ack, trim_done=trim_done, trims=trims, tail=tail,
                              req_seq=req_seq, idle_seq=idle_seq, trim_seq=trim_seq))
    if not rings:
        return None
    # After a re-registration the old ring stays mapped: the live one has the most records.
    return max(rings, key=lambda r: r["reserve"])


def tier_stats(cgroup_id):
    return e2elib.tier_cgroup_stats().get(cgroup_id, {})


def proc_status(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, v = line.split(":", 1)
                if k in ("VmRSS", "RssAnon", "VmSwap"):
                    out[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return out


def cg_file(parent, name, f):
    with open(os.path.join(CG, parent, name, f)) as fh:
        return fh.read()


def cg_stat(parent, name, key):
    for line in cg_file(parent, name, "memory.stat").splitlines():
        k, v = line.split()
        if k == key:
            return int(v)
    return 0


def cpu_ticks(pid, tid=None):
    """utime + stime in clock ticks of process @pid (all its threads), or of its thread
    @tid."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    with open(path) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])
