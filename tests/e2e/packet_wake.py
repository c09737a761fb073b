#!/usr/bin/env python3
"""End-to-end: wake by packet (issue 5). A TCP service in an opted-in container goes idle
and is offloaded to the tier; a request to its port must start pagetierd's prefetch (the
ingress packet seen by BPF) before the application has begun to handle the request. Reports
the lead time. A unix stream service in a second opted-in container: the reads its event
loop makes when its own timer wakes it, which find nothing (-EAGAIN, as an idle PostgreSQL
backend's do when its statistics timer fires), are no request; its reads of requests are.
Runs as root inside the test VM with pagetier.ko loaded; prints TAP.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import e2elib
from e2elib import BIN, MIB, Tap, status_json, wait_for

PARENT = "pt-net"
PORT = 47011
SERVER = r'''
import os, socket, sys, time
data = bytearray(os.urandom(1 << 20)) * 64          # 64 MiB of the service's state
check = sum(data[::4096])
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(4)
open(sys.argv[2], "w").write("ready\n")
while True:
    c, _ = s.accept()
    req = c.recv(64)
    t_handle = time.monotonic()                      # the application starts handling
    ok = sum(data[::4096]) == check
    c.sendall(f"{t_handle:.6f} {ok}\n".encode()); c.close()
'''
UNIX_SERVER = r'''
import select, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(sys.argv[1]); s.listen(1)
open(sys.argv[2], "w").write("ready\n")
c, _ = s.accept(); c.setblocking(False)
while True:
    # An event loop that wakes on its own timer and tries the socket each time.
    select.select([c], [], [], 0.2)
    try:
        req = c.recv(64)
    except BlockingIOError:
        continue
    if not req:
        break
    c.sendall(b"ok\n")
'''


def net_events(runtime, name):
    return (status_json(runtime) or {}).get(name, {}).get("bpf_events", {}).get("net", -1)


def unix_requests(tap, work, runtime):
    """The unix stream service: empty reads are no request, reads of requests are.
    Returns its process."""
    path, ready = os.path.join(work, "sock.sock"), os.path.join(work, "sock.ready")
    procs = os.path.join(e2elib.CG, PARENT, "sock", "cgroup.procs")
    script = os.path.join(work, "unix_server.py")
    with open(script, "w") as f:
        f.write(UNIX_SERVER)
    proc = subprocess.Popen(["sh", "-c", f"echo $$ > {procs} && exec python3 {script} "
                             f"{path} {ready}"])
    if not wait_for(lambda: os.path.exists(ready), 60, step=0.1):
        tap.bail("the unix service did not start")
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    c.settimeout(60)
    wait_for(lambda: net_events(runtime, "sock") >= 0, 10)
    time.sleep(1)
    n0 = net_events(runtime, "sock")
    time.sleep(3)		# about 15 reads that find nothing
    time.sleep(0.6)		# its events reach the daemon at the next tick
    n1 = net_events(runtime, "sock")
    tap.ok(n0 >= 0 and n1 == n0,
           f"sock: a unix service's reads that find nothing are no request (net events "
           f"{n0} -> {n1} over 3 s of its loop's empty reads)")
    for _ in range(3):
        c.sendall(b"Q")
        ok = c.recv(8) == b"ok\n"
        time.sleep(0.15)
    time.sleep(0.6)
    n2 = net_events(runtime, "sock")
    tap.ok(ok and n2 > n1, f"sock: its reads of requests are (net events {n1} -> {n2})")
    c.close()
    return proc


def main():
    tap = Tap()
    work = tempfile.mkdtemp(prefix="pt-net-")
    daemon = server = unix_server = tier = None
    print("TAP version 13", flush=True)
    try:
        tier = e2elib.create_tier(tap, "/dev/nvme0n1")
        e2elib.setup_cgroups(PARENT, ["web", "sock"])
        conf = os.path.join(work, "etc")
        os.makedirs(os.path.join(conf, "containers.d"))
        with open(os.path.join(conf, "pagetierd.conf"), "w") as f:
            f.write(f"[daemon]\nruntime_dir = {conf}/run\npoll_interval = 200ms\n")
        with open(os.path.join(conf, "containers.d", "web.conf"), "w") as f:
            f.write(f"[web]\nmatch_cgroup = /{PARENT}/web\nidle_threshold = 2s\n\n"
                    f"[sock]\nmatch_cgroup = /{PARENT}/sock\n")
        e2elib.fix_perms(conf)
        runtime = os.path.join(conf, "run")
        daemon = subprocess.Popen([os.path.join(BIN, "pagetierd"), "--config-dir", conf],
                                  stdout=open(os.path.join(work, "d.log"), "w"),
                                  stderr=subprocess.STDOUT)
        if not wait_for(lambda: status_json(runtime) is not None, 10):
            tap.bail("pagetierd did not start")
        ready = os.path.join(work, "server.ready")
        procs = os.path.join(e2elib.CG, PARENT, "web", "cgroup.procs")
        script = os.path.join(work, "server.py")
        with open(script, "w") as f:
            f.write(SERVER)
        server = subprocess.Popen(["sh", "-c", f"echo $$ > {procs} && exec python3 {script} "
                                   f"{PORT} {ready}"])
        if not wait_for(lambda: os.path.exists(ready), 120, step=0.1):
            tap.bail("the service did not start")
        off = wait_for(lambda: (status_json(runtime) or {}).get("web", {}).get("state") == "idle"
                       and e2elib.cg_u64("web", "memory.current", PARENT) < 16 * MIB, 60, 0.25)
        tap.ok(bool(off), "web: idle, its memory on the tier",
               json.dumps((status_json(runtime) or {}).get("web")))
        t_send = time.monotonic()
        with socket.create_connection(("127.0.0.1", PORT), timeout=60) as c:
            c.sendall(b"GET\n")
            reply = c.makefile().readline().split()
        t_reply = time.monotonic()
        t_handle, ok = float(reply[0]), reply[1] == "True"
        tap.ok(ok, "web: the service's 64 MiB checked out after the wake")
        wait_for(lambda: (status_json(runtime) or {}).get("web", {}).get("wakes", 0) >= 1, 10)
        st = (status_json(runtime) or {}).get("web", {})
        woke = st.get("woke_at_ms", 0) / 1000.0
        lead_ms = (t_handle - woke) * 1000
        tap.diag(f"request sent at +0 ms; wake seen by pagetierd at +{(woke - t_send) * 1000:.1f} ms "
                 f"({st.get('wake_source')}); the application began handling at "
                 f"+{(t_handle - t_send) * 1000:.1f} ms; reply at +{(t_reply - t_send) * 1000:.1f} ms")
        # The packet is the earliest sign, but the CPU sampler may see the service's first
        # instructions and win the race on a loaded machine: both start the same prefetch.
        net = st.get("bpf_events", {}).get("net", 0)
        tap.ok(net >= 1 and lead_ms > 0,
               f"web: prefetch started {lead_ms:.1f} ms before the application handled the "
               f"request (detected by: {st.get('wake_source')}; ingress packets seen by BPF: "
               f"{net})", json.dumps(st))
        unix_server = unix_requests(tap, work, runtime)
    finally:
        for p in (server, unix_server):
            if p:
                p.kill()
                p.wait()
        if daemon:
            daemon.terminate()
            tap.ok(daemon.wait(20) == 0, "pagetierd stops cleanly")
        time.sleep(0.5)
        if tier:
            e2elib.destroy_tier(tap, tier)
        e2elib.remove_cgroups(PARENT, ["web", "sock"])
    print(f"1..{tap.n}")
    print(f"# packet_wake: {tap.n - tap.failed} passed, {tap.failed} failed", flush=True)
    sys.exit(1 if tap.failed else 0)


if __name__ == "__main__":
    main()
