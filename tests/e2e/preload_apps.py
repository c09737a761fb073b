#!/usr/bin/env python3
"""End-to-end: real programs, unmodified, under libpagetier.so inside an opted-in container
with pagetierd running (issue 5). python3 running a workload, sqlite3 on a database, and
redis-server driven by redis-benchmark (loopback, bounded) and redis-cli run twice in the
container: plain, and with LD_PRELOAD=libpagetier.so registered with pagetierd's preload
socket. Their output must be identical, and pagetierd must have taken records from them
(pagetierctl status: preload_records of the container). A critical container's preloaded
python3 must be left a pass-through: identical output, no records.
The plain and the preloaded run of python3 and sqlite3 run side by side (the guest has 2
vCPUs): only their outputs are compared, never their times, and the plain one brings no
records. redis' two runs stay one after the other: server and benchmark already take both
vCPUs, and two pairs side by side served 850 requests/s each against 2500 alone.
Runs as root inside the test VM; prints TAP.
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import e2elib
from e2elib import BIN, TOP, Tap, status_json, wait_for

PARENT = "pt-apps"
LIB = os.path.join(TOP, "build", "lib", "libpagetier.so")
PRE = os.path.join(TOP, "tests", "preload")


def in_cgroup(script, env, timeout=300, cg="apps"):
    """Runs the shell @script inside the container's cgroup; returns (rc, stdout, stderr)."""
    procs = os.path.join(e2elib.CG, PARENT, cg, "cgroup.procs")
    r = subprocess.run(["sh", "-c", f"echo $$ > {procs} && {script}"], env=env,
                       capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def both_modes(scripts, envs, cg="apps", side_by_side=True):
    """Runs each mode's script (plain, preloaded) inside the container, at the same time
    unless not @side_by_side; returns {mode: (rc, stdout, stderr, seconds)}."""
    res = {}

    def one(mode):
        t0 = time.monotonic()
        try:
            rc, o, e = in_cgroup(scripts[mode], envs[mode], cg=cg)
        except subprocess.TimeoutExpired as x:
            rc, o, e = -1, "", f"timed out: {x}"
        res[mode] = (rc, o, e, time.monotonic() - t0)
    if not side_by_side:
        for m in scripts:
            one(m)
        return res
    threads = [threading.Thread(target=one, args=(m,)) for m in scripts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return res


def sqlite_workload(work):
    """tests/preload/workload.sql with half its rows (100000): about 27 MiB of table, still
    more than its 20 MiB page cache (cache_size), so sqlite3 recycles its cache the same way
    and every statement runs as in the whole one, in half the time."""
    with open(os.path.join(PRE, "workload.sql")) as f:
        sql = f.read()
    rows = "WHERE i < 200000)"
    assert sql.count(rows) == 1, f"workload.sql no longer has '{rows}'"
    path = os.path.join(work, "workload.sql")
    with open(path, "w") as f:
        f.write(sql.replace(rows, "WHERE i < 100000)"))
    return path


def redis_script(work, port):
    d = tempfile.mkdtemp(prefix="redis-", dir=work)
    return (f"redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no "
            f"--dir {d} --daemonize no --loglevel warning >{d}/log 2>&1 & pid=$!; "
            f"for i in $(seq 100); do redis-cli -p {port} PING 2>/dev/null | grep -q PONG "
            f"&& break; sleep 0.1; done; "
            f"timeout 240 redis-benchmark -h 127.0.0.1 -p {port} -n 4000 -c 8 -q "
            f"-t set,get,incr,lpush,lpop >{d}/bench 2>&1 || echo 'redis-benchmark failed'; "
            f"redis-cli -p {port} <{PRE}/redis.cmds; "
            f"redis-cli -p {port} SHUTDOWN NOSAVE >/dev/null 2>&1; wait $pid; "
            f"tr '\\r' '\\n' <{d}/bench | grep 'requests per second' >&2")


def main():
    tap = Tap()
    work = tempfile.mkdtemp(prefix="pt-apps-")
    daemon = None
    print("TAP version 13", flush=True)
    try:
        if not os.path.exists(LIB):
            tap.bail(f"{LIB} missing: make libpreload")
        e2elib.setup_cgroups(PARENT, ["apps", "crit"])
        conf = os.path.join(work, "etc")
        os.makedirs(os.path.join(conf, "containers.d"))
        runtime = os.path.join(conf, "run")
        with open(os.path.join(conf, "pagetierd.conf"), "w") as f:
            f.write(f"[daemon]\nruntime_dir = {runtime}\npoll_interval = 200ms\n")
        # A long idle threshold: this is about the library, not about offloading.
        with open(os.path.join(conf, "containers.d", "apps.conf"), "w") as f:
            f.write(f"[apps]\nmatch_cgroup = /{PARENT}/apps\nidle_threshold = 10m\n\n"
                    f"[crit]\nmatch_cgroup = /{PARENT}/crit\nclass = critical\n")
        e2elib.fix_perms(conf)
        daemon = subprocess.Popen([os.path.join(BIN, "pagetierd"), "--config-dir", conf],
                                  stdout=open(os.path.join(work, "d.log"), "w"),
                                  stderr=subprocess.STDOUT)
        sock = os.path.join(runtime, "preload.sock")
        if not wait_for(lambda: status_json(runtime) is not None and os.path.exists(sock), 20):
            tap.bail("pagetierd did not start, or has no preload socket")
        if not wait_for(lambda: "apps" in (status_json(runtime) or {}), 20):
            tap.bail("pagetierd does not track the container")

        plain_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        pre_env = dict(plain_env, LD_PRELOAD=LIB, PAGETIER_PRELOAD_SOCK=sock)
        envs = {"plain": plain_env, "preloaded": pre_env}
        # Each mode its own database file and redis port: the two run at the same time.
        db = {m: os.path.join(work, f"db-{m}") for m in envs}
        port = 20000 + random.randrange(20000)
        ports = {"plain": port, "preloaded": port + 1}
        sql = sqlite_workload(work)
        apps = [("python3", {m: f"exec python3 {PRE}/workload.py" for m in envs}),
                ("sqlite3", {m: f"rm -f {db[m]} && exec sqlite3 {db[m]} <{sql}"
                             for m in envs})]
        if shutil.which("redis-server") and shutil.which("redis-benchmark"):
            apps.append(("redis", {m: redis_script(work, ports[m]) for m in envs}))
        else:
            tap.ok(True, "# SKIP redis-server or redis-benchmark not installed")
        for name, scripts in apps:
            before = (status_json(runtime) or {}).get("apps", {}).get("preload_records", 0)
            out = {}
            res = both_modes(scripts, envs, side_by_side=name != "redis")
            for mode in envs:
                rc, o, e, secs = res[mode]
                out[mode] = o
                tap.ok(rc == 0, f"{name} {mode}: exit status 0 in the container "
                       f"({secs:.1f} s{'' if name == 'redis' else ', side by side'})",
                       e[-2000:])
                for line in e.splitlines()[:6] if name == "redis" else []:
                    tap.diag(f"{name} {mode}: {line.strip()}")
            tap.ok(out["plain"] == out["preloaded"] and out["plain"] != "",
                   f"{name}: output under the library identical to plain "
                   f"({len(out['plain'])} bytes)",
                   f"plain:\n{out['plain'][-800:]}\npreloaded:\n{out['preloaded'][-800:]}")
            # Rings are drained every tick and at exit: give the daemon one.
            got = wait_for(lambda: (status_json(runtime) or {}).get("apps", {})
                           .get("preload_records", 0) > before, 10)
            after = (status_json(runtime) or {}).get("apps", {}).get("preload_records", 0)
            tap.ok(bool(got), f"{name}: pagetierd registered it and took {after - before} "
                   f"records from it")
        # Critical: the library is refused (a pass-through), where the same program in
        # "apps" above registered.
        out = {}
        res = both_modes({m: f"exec python3 {PRE}/workload.py" for m in envs}, envs,
                         cg="crit")
        for mode in envs:
            rc, o, e, _ = res[mode]
            out[mode] = o
            tap.ok(rc == 0, f"critical container, python3 {mode}: exit status 0", e[-2000:])
        tap.ok(out["plain"] == out["preloaded"] and out["plain"] != "",
               "critical container: output under the library identical to plain",
               f"plain:\n{out['plain'][-800:]}\npreloaded:\n{out['preloaded'][-800:]}")
        time.sleep(1)
        crit = (status_json(runtime) or {}).get("crit", {})
        tap.ok("crit" in (status_json(runtime) or {}) and crit.get("preload_records", 0) == 0,
               f"critical container: pass-through, pagetierd took "
               f"{crit.get('preload_records')} records from it")
        with open(os.path.join(work, "d.log")) as f:
            log = f.read()
        tap.ok("preload socket" in log, "pagetierd listened on its preload socket",
               log[-2000:])
    finally:
        if daemon:
            daemon.terminate()
            tap.ok(daemon.wait(20) == 0, "pagetierd stops cleanly")
        time.sleep(0.5)
        e2elib.remove_cgroups(PARENT, ["apps", "crit"])
        shutil.rmtree(work, ignore_errors=True)
    print(f"1..{tap.n}")
    print(f"# preload_apps: {tap.n - tap.failed} passed, {tap.failed} failed", flush=True)
    sys.exit(1 if tap.failed else 0)


if __name__ == "__main__":
    main()
