#!/usr/bin/env python3
"""pagetierd's Prometheus metrics, end to end on the host: run by `make unit`.

Starts the real pagetierd (--no-bpf --no-mlock) with a temporary configuration directory
whose cgroup_root is a fake cgroup tree (the files the unit tests fabricate: cpu.stat,
memory.current, memory.stat, memory.swap.current, cgroup.procs, memory.low), runtime_dir
a temporary directory and metrics_listen 127.0.0.1 on a free port; scrapes /metrics over
HTTP and runs `promtool check metrics` on the scrape. Then the same for the rendering with
every part present that the unit test writes (tiers with a latency histogram, BPF,
preload: the host has none of them). Also: the other paths and methods, a bad
metrics_listen refused by --check-config, a clean stop on SIGTERM.

promtool comes from Debian's prometheus package (make deps); without it this fails.
No root needed, no kernel module, no BPF: the daemon finds no tier and plain swap.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

results = []
pagetierd_path = None


def check(name, problems):
    results.append((name, problems))
    print(f"{'ok  ' if not problems else 'FAIL'} {name}")
    for p in problems:
        print(f"       {p}")


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def fake_cgroup(root, rel, anon=256 << 20, file=0, shmem=0, kernel=0, other=0):
    """memory.current = anon + file (shmem included) + kernel + other, as the kernel's."""
    d = os.path.join(root, rel.lstrip("/"))
    write(os.path.join(d, "cgroup.procs"), "")
    write(os.path.join(d, "cpu.stat"), "usage_usec 1000\n")
    write(os.path.join(d, "memory.current"), f"{anon + file + kernel + other}\n")
    write(os.path.join(d, "memory.stat"),
          f"anon {anon}\nfile {file}\nkernel {kernel}\nsock 0\nshmem {shmem}\nswapcached 0\n")
    write(os.path.join(d, "memory.swap.current"), "0\n")
    write(os.path.join(d, "memory.low"), "0\n")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(url, method="GET"):
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def promtool(promtool_bin, text):
    p = subprocess.run([promtool_bin, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    out = (p.stdout + p.stderr).strip()
    return ([] if p.returncode == 0 and not out else
            [f"promtool check metrics exited {p.returncode}: {out or '(no output)'}"])


def make_config(top, port, listen=None):
    cg, etc, run = (os.path.join(top, x) for x in ("cgroup", "etc", "run"))
    # web: 180 MiB anon, 40 MiB page cache, 16 MiB shmem, 12 MiB kernel, 8 MiB other.
    fake_cgroup(cg, "/ct/web", 180 << 20, 56 << 20, 16 << 20, 12 << 20, 8 << 20)
    fake_cgroup(cg, "/ct/db", 64 << 20)
    fake_cgroup(cg, "/other")
    os.makedirs(os.path.join(etc, "containers.d"), exist_ok=True)
    for d in (top, etc, os.path.join(etc, "containers.d")):
        os.chmod(d, 0o755)
    listen = listen or f"127.0.0.1:{port}"
    write(os.path.join(etc, "pagetierd.conf"),
          f"[daemon]\ncgroup_root = {cg}\nruntime_dir = {run}\npoll_interval = 100ms\n"
          f"metrics_listen = {listen}\n")
    write(os.path.join(etc, "containers.d", "ct.conf"),
          "[web]\nmatch_cgroup = /ct/web\n\n[db]\nmatch_cgroup = /ct/db\nclass = critical\n")
    return etc


def scrape_daemon(pagetierd, promtool_bin):
    with tempfile.TemporaryDirectory(prefix="pagetier-metrics-") as top:
        port = free_port()
        etc = make_config(top, port)
        log = open(os.path.join(top, "pagetierd.log"), "w+")
        d = subprocess.Popen([pagetierd, "--config-dir", etc, "--no-bpf", "--no-mlock"],
                             stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            body, problems = None, []
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and d.poll() is None:
                try:
                    status, headers, text = http(base + "/metrics")
                except OSError:
                    time.sleep(0.1)
                    continue
                # Both contexts found (the first walk may follow the first scrape).
                if 'container="db"' in text and 'container="web"' in text:
                    body = text
                    break
                time.sleep(0.1)
            if body is None:
                log.seek(0)
                check("pagetierd serves /metrics with both containers",
                      [f"no such scrape within 15 s (pagetierd {'exited ' + str(d.returncode) if d.poll() is not None else 'running'}); its log:\n"
                       + log.read()])
                return
            check("pagetierd serves /metrics with both containers", [])
            ctype = headers.get("Content-Type", "")
            check("/metrics is the text exposition format 0.0.4",
                  [] if status == 200 and ctype.startswith("text/plain; version=0.0.4") else
                  [f"status {status}, Content-Type '{ctype}'"])
            check("promtool check metrics passes on the daemon's scrape",
                  promtool(promtool_bin, body))
            want = [
                'pagetier_container_state{container="web",cgroup="/ct/web",class="besteffort",state="active"} 1',
                'pagetier_container_resident_bytes{container="web",cgroup="/ct/web",class="besteffort"} 268435456',
                'pagetier_container_resident_bytes{container="db",cgroup="/ct/db",class="critical"} 67108864',
                'pagetier_container_memory_bytes{container="web",cgroup="/ct/web",class="besteffort",kind="anon"} 188743680',
                'pagetier_container_memory_bytes{container="web",cgroup="/ct/web",class="besteffort",kind="file"} 41943040',
                'pagetier_container_memory_bytes{container="web",cgroup="/ct/web",class="besteffort",kind="shmem"} 16777216',
                'pagetier_container_memory_bytes{container="web",cgroup="/ct/web",class="besteffort",kind="kernel"} 12582912',
                'pagetier_container_memory_bytes{container="web",cgroup="/ct/web",class="besteffort",kind="other"} 8388608',
                'pagetier_host_offloaded_bytes 0',
                'pagetier_host_offloaded_ratio 0',
                'pagetier_containers 2',
                'pagetier_info{backend="swap"} 1',
                'pagetier_bpf_enabled 0',
                'pagetier_tiers_fill_level{level="ok"} 1',
            ]
            lines = set(body.splitlines())
            missing = [f"no line '{w}'" for w in want if w not in lines]
            missing += [f"no sample of {n}" for n in ("process_cpu_seconds_total",
                                                     "process_resident_memory_bytes",
                                                     "pagetier_preload_peers",
                                                     "pagetier_host_memory_total_bytes",
                                                     "pagetier_host_memory_used_bytes")
                        if not any(l.startswith(n + " ") for l in lines)]
            check("the scrape has the fake tree's containers and the daemon's figures", missing)
            print("       scrape excerpt:")
            for l in body.splitlines():
                if l.startswith(("pagetier_container_state{container=\"web\"",
                                 "pagetier_container_resident_bytes", "process_",
                                 "pagetier_container_memory_bytes{container=\"web\"",
                                 "pagetier_host_", "pagetier_containers")):
                    print(f"         {l}")
            status_table(os.path.join(top, "run"))
            problems = []
            for path, method, code in (("/", "GET", 200), ("/nope", "GET", 404),
                                       ("/metrics", "POST", 405), ("/metrics", "HEAD", 200)):
                s, _, _ = http(base + path, method)
                if s != code:
                    problems.append(f"{method} {path}: {s}, expected {code}")
            check("other paths and methods: 404, 405; HEAD and / answered", problems)
            # One loop thread serves everything: a client that stalls mid-request must not
            # hold up the next scrape (nor the daemon's ticks).
            stalled = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(3)]
            for c in stalled:
                c.sendall(b"GET /metr")
            t0 = time.monotonic()
            s, _, text = http(base + "/metrics")
            took = time.monotonic() - t0
            for c in stalled:
                c.close()
            check("clients stalled mid-request do not hold up a scrape",
                  [] if s == 200 and "pagetier_containers 2" in text and took < 2 else
                  [f"status {s} after {took:.1f} s"])
        finally:
            if d.poll() is None:
                d.send_signal(signal.SIGTERM)
                try:
                    rc = d.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    d.kill()
                    d.wait()
                    rc = "killed after 15 s"
                check("pagetierd stops cleanly on SIGTERM", [] if rc == 0 else [f"exit {rc}"])
            log.close()


def status_table(run):
    """pagetierctl status from the same daemon: the memory split and the host line."""
    ctl = os.path.join(os.path.dirname(pagetierd_path), "pagetierctl")
    p = subprocess.run([ctl, "--runtime-dir", run, "status"], capture_output=True, text=True,
                       timeout=30)
    j = subprocess.run([ctl, "--runtime-dir", run, "--json", "status"], capture_output=True,
                       text=True, timeout=30)
    problems = [] if p.returncode == 0 and j.returncode == 0 else \
        [f"pagetierctl status: exit {p.returncode}/{j.returncode}: {p.stderr}{j.stderr}"]
    web = [l.split() for l in p.stdout.splitlines() if l.startswith("web ")]
    # RESIDENT ANON FILE SHMEM KERNEL, as the fake tree has them
    if not web or web[0][3:8] != ["256.0M", "180.0M", "40.0M", "16.0M", "12.0M"]:
        problems.append(f"no row 'web ... 256.0M 180.0M 40.0M 16.0M 12.0M' in:\n{p.stdout}")
    if "offloaded by pagetier" not in p.stdout:
        problems.append(f"no host line in:\n{p.stdout}")
    try:
        doc = json.loads(j.stdout)
        w = [c for c in doc["containers"] if c["name"] == "web"][0]
        parts = sum(w[k] for k in ("anon_bytes", "file_bytes", "shmem_bytes", "kernel_bytes",
                                   "other_bytes"))
        if parts != w["resident_bytes"] or w["other_bytes"] != 8 << 20:
            problems.append(f"web's kinds add up to {parts}, not {w['resident_bytes']}")
        if doc["host"]["memory_total_bytes"] <= 0:
            problems.append(f"host: {doc['host']}")
    except (ValueError, KeyError, IndexError) as e:
        problems.append(f"pagetierctl --json status: {e!r}: {j.stdout}")
    check("pagetierctl status: memory.current by kind, the host line (table and JSON)", problems)
    print("       pagetierctl status:")
    for l in p.stdout.splitlines():
        print(f"         {l}")


def bad_listen(pagetierd):
    problems = []
    for value, why in (("localhost:9464", "must be numeric, not a host name"),
                       ("::1:9464", "an IPv6 address goes in brackets"),
                       ("127.0.0.1", "has no port")):
        with tempfile.TemporaryDirectory(prefix="pagetier-metrics-") as top:
            etc = make_config(top, 0, value)
            p = subprocess.run([pagetierd, "--check-config", "--config-dir", etc],
                               capture_output=True, text=True, timeout=30)
            out = p.stdout + p.stderr
            if p.returncode == 0 or "pagetierd.conf:5: metrics_listen must be" not in out \
                    or why not in out:
                problems.append(f"metrics_listen = {value}: exit {p.returncode}: {out.strip()}")
    check("pagetierd --check-config refuses bad metrics_listen values, with file:line", problems)


def unit_sample(unit_bin, promtool_bin):
    with tempfile.TemporaryDirectory(prefix="pagetier-metrics-") as top:
        path = os.path.join(top, "sample.prom")
        env = dict(os.environ, PT_METRICS_SAMPLE=path, ASAN_OPTIONS="detect_leaks=1")
        p = subprocess.run([unit_bin], cwd=os.path.join(os.path.dirname(__file__), "..", "unit"),
                           env=env, capture_output=True, text=True, timeout=300)
        if p.returncode != 0 or not os.path.exists(path):
            check("promtool check metrics passes on a rendering with tiers, BPF and preload",
                  [f"{unit_bin} exited {p.returncode}: {(p.stdout + p.stderr)[-2000:]}"])
            return
        text = open(path).read()
        problems = promtool(promtool_bin, text)
        for needed in ("pagetier_tier_demand_read_duration_seconds_bucket",
                       "pagetier_bpf_events_seen_total", "pagetier_preload_peers",
                       "pagetier_tier_capacity_bytes"):
            if needed not in text:
                problems.append(f"the sample has no {needed}")
        check("promtool check metrics passes on a rendering with tiers, BPF and preload",
              problems)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="directory of pagetierd")
    ap.add_argument("--unit", help="build/unit/test_metrics: also check its full rendering")
    a = ap.parse_args()
    promtool_bin = shutil.which("promtool")
    if not promtool_bin:
        print("FAIL promtool not found: it comes with Debian's prometheus package; run make deps",
              file=sys.stderr)
        print("metrics: 0 passed, 1 failed")
        return 1
    global pagetierd_path
    pagetierd = pagetierd_path = os.path.abspath(os.path.join(a.bin, "pagetierd"))
    scrape_daemon(pagetierd, promtool_bin)
    bad_listen(pagetierd)
    if a.unit:
        unit_sample(os.path.abspath(a.unit), promtool_bin)
    failed = sum(1 for _, p in results if p)
    print(f"metrics: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
