#!/usr/bin/env python3
"""End-to-end: real OCI containers run by crun, opted in by container id (issue 14). Runs as
root inside the test VM with pagetier.ko loaded; prints TAP.

Three containers from OCI bundles built here from files on the machine (no registry): a
root file system of Debian's static busybox and the ptwork workload (build/bin/ptwork, with
the shared libraries ldd lists copied in), config.json from `crun spec`, edited. Each gets
a random 64-hex-digit id, as Docker, Podman and containerd draw them, and crun's cgroupfs
manager (no systemd here) puts it in the cgroup its linux.cgroupsPath names, in the shapes
runtimes give crun:
  crun-a   /pt-crun/<id>          Docker's and containerd's cgroupfs drivers (/docker/<id>)
  crun-b   /pt-crun/libpod-<id>   Podman's cgroupfs driver (/libpod_parent/libpod-<id>)
  crun-c   /pt-crun/<id>          not opted in
crun-a opts in by its whole id, crun-b by its short id (the 12 digits `podman ps` shows),
both by `match_id` in a containers.d file. The opted-in containers go idle, their memory
goes to the tier and leaves RAM, a signal through `crun kill` wakes them, pagetierd
prefetches, and ptwork verifies every byte; crun-c is never touched.

Podman is not exercised: a TAP diagnostic ("# podman: not attempted: ...") says why.

  crun_containers.py [--size 64M] [--idle 2s] [--backing /dev/nvme0n1]
"""
import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading

import e2elib
from e2elib import BIN, CG, MIB, Tap, ctl, el, run, status_json, wait_for

PARENT = "pt-crun"
BUSYBOX = "/bin/busybox"
def cg_path(rel, f=None):
    return os.path.join(CG, rel.lstrip("/"), f) if f else os.path.join(CG, rel.lstrip("/"))


def cg_u64(rel, f):
    with open(cg_path(rel, f)) as fh:
        return int(fh.read().split()[0])


def cg_stat(rel, key):
    with open(cg_path(rel, "memory.stat")) as fh:
        for line in fh:
            k, v = line.split()
            if k == key:
                return int(v)
    raise KeyError(key)


def is_static(path):
    r = run(["file", "-L", path])
    return r.returncode == 0 and "statically linked" in r.stdout


class Crun:
    """crun with its state in the test's own directory (not /run/crun)."""

    def __init__(self, work):
        self.root = os.path.join(work, "crun-state")
        os.makedirs(self.root)
        self.no_pivot = False

    def cmd(self, *args, **kw):
        return run(["crun", "--root", self.root] + list(args), **kw)

    def state(self, cid):
        r = self.cmd("state", cid)
        return json.loads(r.stdout) if r.returncode == 0 else None


class Container:
    def __init__(self, name, cid, rel, opted, work):
        self.name, self.id, self.rel, self.opted = name, cid, rel, opted
        self.bundle = os.path.join(work, "bundles", cid)
        self.out = os.path.join(self.bundle, "out")
        self.ready = os.path.join(self.out, "ready")
        self.report = os.path.join(self.out, "report")
        self.log = os.path.join(self.bundle, "crun.log")
        self.pid = None
        self.cgid = None
        self.started = False


def build_rootfs(tap, work):
    """The image: busybox (static), and build/bin/ptwork with the shared libraries it links
    (its interpreter and libc, as ldd lists them), copied in: the bundle holds everything it
    runs. (Compiling ptwork with cc -static in the guest took 38 s under TCG.)"""
    rootfs = os.path.join(work, "rootfs")
    for d in ("bin", "out", "proc", "dev", "sys", "tmp", "etc"):
        os.makedirs(os.path.join(rootfs, d))
    if not is_static(BUSYBOX):
        tap.bail(f"{BUSYBOX} is not a static binary: install busybox-static (make deps)")
    shutil.copy2(BUSYBOX, os.path.join(rootfs, "bin", "busybox"))
    for applet in ("sh", "cat", "ls", "sleep"):
        os.symlink("busybox", os.path.join(rootfs, "bin", applet))
    with open(os.path.join(rootfs, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/:/bin/sh\n")
    ptwork = os.path.join(rootfs, "ptwork")
    shutil.copy2(os.path.join(BIN, "ptwork"), ptwork)
    libs = []
    if not is_static(ptwork):
        r = run(["ldd", ptwork])
        # "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)", "\t/lib64/ld-linux-x86-64.so.2
        # (0x...)"; linux-vdso.so.1 has no file.
        libs = [w for line in r.stdout.splitlines() for w in line.split()[:3]
                if w.startswith("/")]
        if r.returncode != 0 or not libs:
            tap.bail(f"ldd {ptwork}: {r.returncode}: {r.stdout.strip()} {r.stderr.strip()}")
        for lib in libs:
            # At the same path in the image, the file itself (not a symlink to the host's).
            dest = os.path.join(rootfs, lib.lstrip("/"))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy2(lib, dest)
    tap.diag("image: busybox-static and ptwork" +
             (f" with {', '.join(libs)} copied in" if libs else " (static)") +
             ": the bundle holds everything it runs")
    return rootfs


def make_bundle(crun, c, rootfs, size, work):
    """An OCI bundle for @c: config.json from `crun spec`, edited."""
    os.makedirs(c.out)
    shutil.copytree(rootfs, os.path.join(c.bundle, "rootfs"), symlinks=True)
    r = run(["crun", "spec"], cwd=c.bundle)
    if r.returncode != 0:
        raise RuntimeError(f"crun spec failed: {r.stderr.strip()}")
    with open(os.path.join(c.bundle, "config.json")) as f:
        spec = json.load(f)
    proc = spec["process"]
    proc["terminal"] = False
    proc["args"] = ["/ptwork", "--size", size, "--work-ms", "1500",
                    "--ready", "/out/ready", "--report", "/out/report"]
    proc["env"] = ["PATH=/bin", "HOME=/"]
    spec["hostname"] = c.name
    spec["mounts"].append({"destination": "/out", "type": "bind", "source": c.out,
                           "options": ["rbind", "rw"]})
    spec["linux"]["cgroupsPath"] = c.rel
    spec.setdefault("annotations", {})["io.pagetier.test"] = "crun_containers"
    with open(os.path.join(c.bundle, "config.json"), "w") as f:
        json.dump(spec, f, indent=1)


def start(tap, crun, c):
    """crun run -d: one container (the containers start side by side, one thread each)."""
    def attempt(no_pivot):
        # Detached, without a terminal: the container keeps crun's stdio, so it goes to a
        # file (a pipe would stay open as long as the container runs).
        args = ["crun", "--root", crun.root, "run", "-d", "--bundle", c.bundle]
        if no_pivot:
            args.append("--no-pivot")
        with open(c.log, "a") as log:
            return subprocess.run(args + [c.id], stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=log, timeout=120)
    no_pivot = crun.no_pivot
    r = attempt(no_pivot)
    if r.returncode != 0 and not no_pivot and "pivot_root" in open(c.log).read():
        # A root file system pivot_root cannot leave (an initramfs): crun's fallback.
        tap.diag(f"{c.name}: pivot_root refused here; crun run --no-pivot")
        crun.no_pivot = True
        crun.cmd("delete", "-f", c.id)
        r = attempt(True)
    c.started = True	# whatever happened, the cleanup asks crun to delete it
    with open(c.log) as f:
        log = f.read()
    if r.returncode != 0:
        return f"crun run exited {r.returncode}: {log.strip()}"
    st = crun.state(c.id)
    if not st or st.get("status") != "running" or not st.get("pid"):
        return f"crun state: {st}; log: {log.strip()}"
    c.pid = st["pid"]
    c.cgid = os.stat(cg_path(c.rel)).st_ino
    return None


def stop(tap, crun, conts):
    """SIGTERM through crun to every container (ptwork exits 0), then crun delete; -f for
    one that did not stop. The containers stop side by side."""
    conts = [c for c in conts if c.started and crun.state(c.id) is not None]
    for c in conts:
        crun.cmd("kill", c.id, "TERM")
    for c in conts:
        wait_for(lambda: (crun.state(c.id) or {}).get("status") in ("stopped", None), 15)
        delete(tap, crun, c)


def delete(tap, crun, c):
    """crun delete; -f if that fails."""
    r = crun.cmd("delete", c.id)
    if r.returncode != 0:
        r = crun.cmd("delete", "-f", c.id)
    if r.returncode != 0:
        tap.diag(f"{c.name}: crun delete failed: {r.stderr.strip()}")
    c.started = False


def write_config(d, conts, idle):
    os.makedirs(os.path.join(d, "containers.d"))
    with open(os.path.join(d, "pagetierd.conf"), "w") as f:
        f.write(f"[daemon]\ncgroup_root = {CG}\nruntime_dir = {d}/run\n"
                "poll_interval = 200ms\nlog_level = info\n")
    with open(os.path.join(d, "containers.d", "crun.conf"), "w") as f:
        f.write("# Containers run by crun, opted in by id (crun state ID, podman ps).\n")
        for c in conts:
            if c.opted:
                f.write(f"[{c.name}]\nmatch_id = {c.opted}\nclass = besteffort\n"
                        f"idle_threshold = {idle}\nprefetch = yes\n\n")
    e2elib.fix_perms(d)


def podman_note(tap):
    """Podman is not exercised: say why, as a diagnostic (neither a pass nor a skip)."""
    if shutil.which("podman"):
        why = ("podman is installed, but this scenario drives crun only: podman's own "
               "storage, conmon and events setup in this guest (no systemd, read-only root, "
               "no registry) has not been validated")
    else:
        why = ("podman is not installed: it is not in scripts/deps.sh, because Debian 12's "
               "podman pulls in netavark, iptables/nftables and a newer login/passwd on the "
               "host whose userspace the test VM shares; crun, the runtime under Podman, is "
               "exercised here with Podman's cgroupfs cgroup name (libpod-<id>)")
    tap.diag(f"podman: not attempted: {why}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="64M")
    ap.add_argument("--idle", default="2s")
    ap.add_argument("--backing", default="/dev/nvme0n1")
    args = ap.parse_args()
    size_bytes = int(args.size[:-1]) * MIB

    tap = Tap()
    print("TAP version 13", flush=True)
    work = tempfile.mkdtemp(prefix="pt-crun-")
    os.chmod(work, 0o755)
    crun = daemon = tier = None
    conts = []
    try:
        if not os.path.exists("/dev/pagetier"):
            tap.bail("/dev/pagetier missing: pagetier.ko is not loaded")
        if not os.path.exists(args.backing):
            tap.bail(f"{args.backing} missing: the VM has no emulated NVMe drive")
        if not shutil.which("crun"):
            tap.bail("crun is not installed (make deps)")
        if run(["stat", "-fc", "%T", CG]).stdout.strip() != "cgroup2fs":
            tap.bail(f"{CG} is not cgroup v2")
        tap.diag(run(["crun", "--version"]).stdout.splitlines()[0])
        podman_note(tap)

        tier = e2elib.create_tier(tap, args.backing)
        crun = Crun(work)

        ids = [secrets.token_hex(32) for _ in range(3)]
        conts = [Container("crun-a", ids[0], f"/{PARENT}/{ids[0]}", ids[0], work),
                 Container("crun-b", ids[1], f"/{PARENT}/libpod-{ids[1]}", ids[1][:12], work),
                 Container("crun-c", ids[2], f"/{PARENT}/{ids[2]}", None, work)]
        opted = [c for c in conts if c.opted]
        left = conts[2]
        # The parent with the memory controller delegated; crun creates the containers'
        # cgroups below it (cgroupfs manager: there is no systemd to ask).
        e2elib.setup_cgroups(PARENT, [])

        conf = os.path.join(work, "etc")
        write_config(conf, conts, args.idle)
        runtime = os.path.join(conf, "run")
        r = run([os.path.join(BIN, "pagetierd"), "--check-config", "--config-dir", conf])
        tap.ok(r.returncode == 0, "pagetierd --check-config accepts match_id by whole and "
               "short container id", r.stderr)
        logf = open(os.path.join(work, "pagetierd.log"), "w")
        daemon = subprocess.Popen([os.path.join(BIN, "pagetierd"), "--config-dir", conf],
                                  stdout=logf, stderr=subprocess.STDOUT)
        # The bundles while pagetierd starts (its BPF programs load for seconds under TCG).
        rootfs = build_rootfs(tap, work)
        for c in conts:
            make_bundle(crun, c, rootfs, args.size, work)
            tap.diag(f"{c.name}: id {c.id}, cgroupsPath {c.rel}, "
                     + (f"opted in by match_id = {c.opted}" if c.opted else "not opted in"))
        if not wait_for(lambda: status_json(runtime) is not None, 15):
            tap.bail("pagetierd did not start")
        tap.diag(f"{el()} pagetierd started, the bundles built")

        # The containers, run by crun, side by side (each crun run takes seconds under TCG).
        errs = {}

        def run_one(c):
            try:
                errs[c.name] = start(tap, crun, c)
            except Exception as e:      # reported below, as crun's own failure would be
                errs[c.name] = f"{type(e).__name__}: {e}"
        threads = [threading.Thread(target=run_one, args=(c,)) for c in conts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for c in conts:
            err = errs.get(c.name, "did not run")
            if err:
                tap.ok(False, f"{c.name}: crun runs the container", err)
                tap.bail(f"{c.name}: crun could not run the container")
            with open(f"/proc/{c.pid}/cgroup") as f:
                where = f.read().strip()
            tap.ok(where == f"0::{c.rel}", f"{c.name}: crun runs it (pid {c.pid}) in cgroup "
                   f"{c.rel}", where)
        before = {c.name: 0 for c in conts}

        def all_ready():
            for c in conts:
                before[c.name] = max(before[c.name], cg_stat(c.rel, "anon"))
            return all(os.path.exists(c.ready) for c in conts)
        if not wait_for(all_ready, 180, step=0.1):
            for c in conts:
                with open(c.log) as f:
                    tap.diag(f"{c.name} output:\n{f.read()}")
            tap.bail("the containers' workloads did not become ready within 180 s")
        left_current = cg_u64(left.rel, "memory.current")
        tap.diag(f"{el()} anonymous memory before idle: " +
                 ", ".join(f"{c.name} {before[c.name] // MIB} MiB" for c in conts))

        # match_id found each opted-in container's own cgroup, and nothing else.
        def tracked():
            st = status_json(runtime) or {}
            return st if all(st.get(c.name, {}).get("cgroup") == c.rel for c in opted) else None
        st = wait_for(tracked, 15) or status_json(runtime) or {}
        for c in opted:
            tap.ok(st.get(c.name, {}).get("cgroup") == c.rel,
                   f"{c.name}: match_id = {c.opted} tracks the container's cgroup {c.rel}",
                   json.dumps(st.get(c.name)))
        tap.ok(not any(s.get("cgroup", "").endswith(left.id) for s in st.values()),
               f"{left.name} (not opted in) has no memory context in pagetierd",
               json.dumps(list(st)))
        tap.diag("pagetierctl containers:\n" + ctl("containers", runtime=runtime).stdout)

        # Idle: each opted-in container ends with >= 90% of its anonymous memory on the tier.
        def offloaded():
            st = status_json(runtime) or {}
            tb = e2elib.tier_bytes_by_cgroup()
            return all(st.get(c.name, {}).get("state") == "idle" and
                       tb.get(c.cgid, 0) >= 0.9 * before[c.name] for c in opted)
        wait_for(offloaded, 120, step=0.5)
        tap.diag(f"{el()} idle")
        st = status_json(runtime) or {}
        tb = e2elib.tier_bytes_by_cgroup()
        for c in opted:
            tap.ok(st.get(c.name, {}).get("state") == "idle" and
                   tb.get(c.cgid, 0) >= 0.9 * before[c.name],
                   f"{c.name}: idle, >= 90% of its anonymous memory on the tier "
                   f"({tb.get(c.cgid, 0) // MIB} of {before[c.name] // MIB} MiB)",
                   json.dumps(st.get(c.name)))
        wait_for(lambda: all(cg_u64(c.rel, "memory.current") <= 0.1 * before[c.name]
                             for c in opted), 30, step=0.5)
        for c in opted:
            cur = cg_u64(c.rel, "memory.current")
            tap.ok(cur <= 0.1 * before[c.name],
                   f"{c.name}: RAM given back while idle (memory.current {cur // MIB} of "
                   f"{before[c.name] // MIB} MiB)", open(cg_path(c.rel, "memory.stat")).read())
        table = ctl("status", runtime=runtime).stdout
        tap.diag("pagetierctl status, containers run by crun, while idle:\n" + table)
        tap.ok(all(c.name in table for c in opted) and "idle" in table,
               "pagetierctl status shows the crun containers idle")

        # The container that did not opt in is never touched.
        tb = e2elib.tier_bytes_by_cgroup()
        swap = cg_u64(left.rel, "memory.swap.current")
        anon = cg_stat(left.rel, "anon")
        cur = cg_u64(left.rel, "memory.current")
        tap.ok(swap == 0 and tb.get(left.cgid, 0) == 0 and anon >= 0.99 * before[left.name] and
               cur >= 0.95 * left_current,
               f"{left.name} (not opted in) untouched: memory.swap.current {swap}, on the tier "
               f"{tb.get(left.cgid, 0)}, anon {anon // MIB} MiB, memory.current "
               f"{cur // MIB} MiB (was {left_current // MIB})")

        # Wake: the signal goes through the runtime; each workload verifies its memory.
        for c in conts:
            r = crun.cmd("kill", c.id, "USR1")
            tap.ok(r.returncode == 0, f"{c.name}: crun kill {c.id[:12]} USR1 wakes it", r.stderr)
        back = {}

        def reported():
            for c in conts:
                if c.name not in back and os.path.exists(c.report) and os.path.getsize(c.report):
                    back[c.name] = cg_stat(c.rel, "anon")
            return len(back) == len(conts)
        wait_for(reported, 180, step=0.1)
        tap.diag(f"{el()} every workload reported")
        for c in conts:
            try:
                with open(c.report) as f:
                    rep = json.loads(f.read())
            except (OSError, ValueError) as e:
                rep = {"error": str(e)}
            tap.ok(rep.get("mismatches") == 0 and rep.get("verified") == size_bytes,
                   f"{c.name}: all {size_bytes // MIB} MiB verified byte for byte after the wake "
                   f"(wake {rep.get('wake_ms')} ms)", json.dumps(rep))
        woke = wait_for(lambda: all((status_json(runtime) or {}).get(c.name, {}).get("wakes", 0)
                                    >= 1 for c in opted), 15)
        st = status_json(runtime) or {}
        ts = e2elib.tier_cgroup_stats()
        tap.diag("wake detected by: " +
                 ", ".join(f"{c.name}: {st.get(c.name, {}).get('wake_source')}" for c in opted))
        for c in opted:
            s, k = st.get(c.name, {}), ts.get(c.cgid, {})
            tap.ok(bool(woke) and s.get("prefetch_requested_bytes", 0) > 0,
                   f"{c.name}: pagetierd saw the wake and prefetched "
                   f"({s.get('prefetch_requested_bytes', 0) // MIB} MiB advised)", json.dumps(s))
            tap.ok(k.get("prefetch_bytes", 0) > 0 and k.get("staging_hits", 0) > 0,
                   f"{c.name}: the tier staged the wake ({k.get('prefetch_bytes', 0) // MIB} MiB "
                   f"read ahead, {k.get('staging_hits', 0)} staging hits, "
                   f"{k.get('staging_misses', 0)} misses)", json.dumps(k))
            tap.ok(back.get(c.name, 0) >= 0.9 * before[c.name],
                   f"{c.name}: memory back after the wake ({back.get(c.name, 0) // MIB} of "
                   f"{before[c.name] // MIB} MiB)")
        tap.ok(cg_u64(left.rel, "memory.swap.current") == 0 and
               e2elib.tier_bytes_by_cgroup().get(left.cgid, 0) == 0,
               f"{left.name} still never swapped")
        tap.diag("pagetierctl status after the wake:\n" + ctl("status", runtime=runtime).stdout)
    finally:
        if crun:
            stop(tap, crun, conts)
            left_over = [c.name for c in conts if os.path.isdir(cg_path(c.rel))]
            tap.ok(not left_over and not crun.cmd("list", "-q").stdout.strip(),
                   "crun stopped and deleted every container, and their cgroups",
                   f"left: {left_over} {crun.cmd('list').stdout}")
        if daemon:
            daemon.terminate()
            try:
                rc = daemon.wait(15)
            except subprocess.TimeoutExpired:
                daemon.kill()
                rc = daemon.wait()
            tap.ok(rc == 0, "pagetierd stops cleanly on SIGTERM", f"exit {rc}")
            tap.diag(f"{el()} pagetierd stopped")
            with open(os.path.join(work, "pagetierd.log")) as f:
                tap.diag("pagetierd log:\n" + f.read())
        if tier:
            e2elib.destroy_tier(tap, tier)
        try:
            if os.path.isdir(cg_path(PARENT)):
                os.rmdir(cg_path(PARENT))
        except OSError as e:
            tap.diag(f"{PARENT} cgroup not removed: {e}")
        shutil.rmtree(work, ignore_errors=True)
    print(f"1..{tap.n}")
    print(f"# e2e crun: {tap.n - tap.failed} passed, {tap.failed} failed", flush=True)
    sys.exit(1 if tap.failed else 0)


if __name__ == "__main__":
    main()
