#!/usr/bin/env python3
"""End-to-end: wake by packet (issue 5). A TCP service in an opted-in container goes idle
and is offloaded to the tier; a request to its port must start pagetierd's prefetch (the
ingress packet seen by BPF) before the application has begun to handle the request. Reports
the lead time. Runs as root inside the test VM with pagetier.ko loaded; prints TAP.
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


def main():
    tap = Tap()
    work = tempfile.mkdtemp(prefix="pt-net-")
    daemon = server = tier = None
    print("TAP version 13", flush=True)
    try:
        tier = e2elib.create_tier(tap, "/dev/nvme0n1")
        e2elib.setup_cgroups(PARENT, ["web"])
        conf = os.path.join(work, "etc")
        os.makedirs(os.path.join(conf, "containers.d"))
        with open(os.path.join(conf, "pagetierd.conf"), "w") as f:
            f.write(f"[daemon]\nruntime_dir = {conf}/run\npoll_interval = 200ms\n")
        with open(os.path.join(conf, "containers.d", "web.conf"), "w") as f:
            f.write(f"[web]\nmatch_cgroup = /{PARENT}/web\nidle_threshold = 2s\n")
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
    finally:
        if server:
            server.kill()
            server.wait()
        if daemon:
            daemon.terminate()
            tap.ok(daemon.wait(20) == 0, "pagetierd stops cleanly")
        time.sleep(0.5)
        if tier:
            e2elib.destroy_tier(tap, tier)
        e2elib.remove_cgroups(PARENT, ["web"])
    print(f"1..{tap.n}")
    print(f"# packet_wake: {tap.n - tap.failed} passed, {tap.failed} failed", flush=True)
    sys.exit(1 if tap.failed else 0)


if __name__ == "__main__":
    main()
