#!/usr/bin/env python3
"""packaging/kubernetes/, offline: run by `make unit`.

1. pagetier.yaml against the fields the API server would require and the references
   between its objects (no API server is reachable here, and `kubectl apply
   --dry-run=client` needs one for its discovery): every object's apiVersion, kind and
   metadata; the DaemonSet's selector against its template's labels; containers with a
   name, an image and a securityContext; volume mounts against volumes; label, annotation
   and nodeSelector values that are strings; the service account, role and binding that
   the opt-in container lists pods with; pagetierd privileged in the host's PID namespace
   with the host's cgroup fs, /run/pagetier and /etc/pagetier; the pid file and the
   metrics port the same wherever they appear; flags the opt-in script takes.
2. pagetier-k8s-optin over PodList fixtures: the containers.d files it writes (match_id =
   the container id, the annotations as keys), accepted by the real `pagetierd
   --check-config`; a pod pagetierd refuses left out; SIGHUP to pagetierd only when the
   files changed; files of pods gone removed, the administrator's own files untouched.

usage: check_kubernetes.py --bin BUILD/bin
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import yaml

top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
kdir = os.path.join(top, "packaging", "kubernetes")
optin = os.path.join(kdir, "pagetier-k8s-optin")
results = []

API = {"Namespace": "v1", "ServiceAccount": "v1", "ConfigMap": "v1",
       "ClusterRole": "rbac.authorization.k8s.io/v1",
       "ClusterRoleBinding": "rbac.authorization.k8s.io/v1", "DaemonSet": "apps/v1"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def check(name, problems):
    results.append((name, problems))
    print(f"{'ok  ' if not problems else 'FAIL'} {name}")
    for p in problems:
        print(f"       {p}")


def string_map(where, m, values_re=None, p=None):
    for k, v in (m or {}).items():
        if not LABEL_KEY.match(str(k)):
            p.append(f"{where}: key '{k}' is not a valid label/annotation key")
        if not isinstance(v, str):
            p.append(f"{where}: value of {k} is a {type(v).__name__} ({v!r}): quote it, the API wants strings")
        elif values_re and not values_re.match(v):
            p.append(f"{where}: value '{v}' of {k} is not a valid label value")


def check_manifest(docs):
    p = []
    names = {}
    for i, d in enumerate(docs):
        if not isinstance(d, dict):
            p.append(f"document {i + 1} is not a mapping")
            continue
        kind, meta = d.get("kind"), d.get("metadata") or {}
        where = f"{kind}/{meta.get('name')}"
        if kind not in API:
            p.append(f"document {i + 1}: kind {kind!r} is not one this check knows")
            continue
        if d.get("apiVersion") != API[kind]:
            p.append(f"{where}: apiVersion {d.get('apiVersion')!r}, expected {API[kind]}")
        if not isinstance(meta.get("name"), str) or not DNS_SUBDOMAIN.match(meta["name"]):
            p.append(f"{where}: metadata.name missing or not a DNS subdomain")
        if kind in CLUSTER_SCOPED and "namespace" in meta:
            p.append(f"{where}: a cluster-scoped object has no namespace")
        if kind not in CLUSTER_SCOPED and not meta.get("namespace"):
            p.append(f"{where}: a namespaced object without metadata.namespace lands in the kubectl context's namespace")
        string_map(f"{where} labels", meta.get("labels"), LABEL_VALUE, p)
        string_map(f"{where} annotations", meta.get("annotations"), None, p)
        names[(kind, meta.get("namespace"), meta.get("name"))] = d
    nss = {n for (k, _, n) in names if k == "Namespace"}
    for (k, ns, n) in names:
        if ns and ns not in nss:
            p.append(f"{k}/{n}: namespace {ns} is not defined in the manifest")

    roles = {n: d for (k, _, n), d in names.items() if k == "ClusterRole"}
    sas = {(ns, n) for (k, ns, n) in names if k == "ServiceAccount"}
    bound = set()
    for (k, _, n), d in names.items():
        if k == "ClusterRole":
            for r in d.get("rules") or []:
                for key in ("apiGroups", "resources", "verbs"):
                    if not isinstance(r.get(key), list) or not r[key]:
                        p.append(f"ClusterRole/{n}: a rule without {key}")
        if k == "ClusterRoleBinding":
            ref = d.get("roleRef") or {}
            if ref.get("apiGroup") != "rbac.authorization.k8s.io" or ref.get("kind") != "ClusterRole" \
                    or ref.get("name") not in roles:
                p.append(f"ClusterRoleBinding/{n}: roleRef {ref} names no ClusterRole of the manifest")
            for s in d.get("subjects") or []:
                if s.get("kind") != "ServiceAccount" or (s.get("namespace"), s.get("name")) not in sas:
                    p.append(f"ClusterRoleBinding/{n}: subject {s} is no ServiceAccount of the manifest")
                else:
                    rules = (roles.get(ref.get("name")) or {}).get("rules") or []
                    if any("" in r.get("apiGroups", []) and "pods" in r.get("resources", [])
                           and "list" in r.get("verbs", []) for r in rules):
                        bound.add((s["namespace"], s["name"]))

    dss = [(ns, n, d) for (k, ns, n), d in names.items() if k == "DaemonSet"]
    if len(dss) != 1:
        p.append(f"{len(dss)} DaemonSets, expected 1")
        return p
    ns, n, ds = dss[0]
    where = f"DaemonSet/{n}"
    spec = ds.get("spec") or {}
    tmpl = spec.get("template") or {}
    tlabels = (tmpl.get("metadata") or {}).get("labels") or {}
    string_map(f"{where} template labels", tlabels, LABEL_VALUE, p)
    string_map(f"{where} template annotations", (tmpl.get("metadata") or {}).get("annotations"), None, p)
    sel = (spec.get("selector") or {}).get("matchLabels") or {}
    if not sel:
        p.append(f"{where}: spec.selector.matchLabels is required (apps/v1)")
    for k, v in sel.items():
        if tlabels.get(k) != v:
            p.append(f"{where}: selector {k}={v} does not match the template's labels {tlabels}")
    pod = tmpl.get("spec") or {}
    string_map(f"{where} nodeSelector", pod.get("nodeSelector"), LABEL_VALUE, p)
    if (ns, pod.get("serviceAccountName")) not in sas:
        p.append(f"{where}: serviceAccountName {pod.get('serviceAccountName')!r} is no ServiceAccount in {ns}")
    elif (ns, pod.get("serviceAccountName")) not in bound:
        p.append(f"{where}: its service account may not list pods (no ClusterRoleBinding to a role that allows it)")
    if pod.get("hostPID") is not True:
        p.append(f"{where}: pagetierd needs hostPID: true (the containers' processes)")
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    used = set()
    containers = pod.get("containers") or []
    inits = pod.get("initContainers") or []
    if not containers:
        p.append(f"{where}: no containers")
    seen = set()
    for c in inits + containers:
        cw = f"{where} container {c.get('name')!r}"
        if not isinstance(c.get("name"), str) or not DNS_LABEL.match(c["name"]) or c["name"] in seen:
            p.append(f"{cw}: name missing, not a DNS label or not unique")
        seen.add(c.get("name"))
        if not isinstance(c.get("image"), str) or not c["image"]:
            p.append(f"{cw}: no image")
        if not isinstance(c.get("securityContext"), dict):
            p.append(f"{cw}: no securityContext")
        for key in ("command", "args"):
            if key in c and not all(isinstance(x, str) for x in c[key]):
                p.append(f"{cw}: {key} has a non-string element")
        for port in c.get("ports") or []:
            if not isinstance(port.get("containerPort"), int) or not 0 < port["containerPort"] < 65536:
                p.append(f"{cw}: containerPort {port.get('containerPort')!r} is not a port number")
        mounts = set()
        for m in c.get("volumeMounts") or []:
            if m.get("name") not in volumes:
                p.append(f"{cw}: volumeMount {m.get('name')!r} names no volume")
            if not str(m.get("mountPath", "")).startswith("/") or m.get("mountPath") in mounts:
                p.append(f"{cw}: mountPath {m.get('mountPath')!r} not absolute or twice")
            mounts.add(m.get("mountPath"))
            used.add(m.get("name"))
        for e in c.get("env") or []:
            if "value" in e and not isinstance(e["value"], str):
                p.append(f"{cw}: env {e.get('name')} value must be a string")
    for v in set(volumes) - used:
        p.append(f"{where}: volume {v} is mounted nowhere")
    for name, v in volumes.items():
        hp = v.get("hostPath")
        if hp is not None and not str(hp.get("path", "")).startswith("/"):
            p.append(f"{where}: volume {name}: hostPath.path must be absolute")

    # pagetierd and the opt-in container, as the daemon and the script need them.
    by = {c.get("name"): c for c in containers}
    d, o = by.get("pagetierd"), by.get("optin")
    if not d or not o:
        p.append(f"{where}: containers 'pagetierd' and 'optin' expected, found {sorted(by)}")
        return p

    def host_mounts(c):
        return {m["mountPath"]: (volumes.get(m["name"]) or {}).get("hostPath", {}).get("path")
                for m in c.get("volumeMounts") or []}
    dm, om = host_mounts(d), host_mounts(o)
    for path in ("/sys/fs/cgroup", "/run/pagetier", "/etc/pagetier", "/dev"):
        if dm.get(path) != path:
            p.append(f"{where}: pagetierd needs the host's {path} at {path} (hostPath), has {dm.get(path)}")
    for path in ("/run/pagetier", "/etc/pagetier"):
        if om.get(path) != path:
            p.append(f"{where}: optin needs the host's {path} at {path}, has {om.get(path)}")
    if (d.get("securityContext") or {}).get("privileged") is not True:
        p.append(f"{where}: pagetierd must be privileged (process_madvise, BPF, /dev/pagetier, cgroup writes)")
    if ((d.get("resources") or {}).get("limits") or {}).get("memory"):
        p.append(f"{where}: pagetierd is mlocked: a memory limit would OOM-kill it")
    dcmd = " ".join(d.get("command") or [])
    ocmd = o.get("command") or []
    pidfiles = re.findall(r">\s*(\S+\.pid)", dcmd)
    opid = [a.split("=", 1)[1] for a in ocmd if a.startswith("--pidfile=")]
    if not pidfiles or opid != pidfiles:
        p.append(f"{where}: pagetierd writes pid file {pidfiles}, optin reads {opid}")
    if "exec /usr/sbin/pagetierd" not in dcmd:
        p.append(f"{where}: pagetierd's command must exec it (the pid file is the shell's pid)")
    if not ocmd or os.path.basename(ocmd[0]) != "pagetier-k8s-optin":
        p.append(f"{where}: optin runs {ocmd[:1]}, not pagetier-k8s-optin")
    helptext = subprocess.run([sys.executable, optin, "--help"], capture_output=True, text=True,
                              timeout=30).stdout
    for a in ocmd[1:]:
        flag = a.split("=", 1)[0]
        if flag.startswith("--") and flag not in helptext:
            p.append(f"{where}: optin flag {flag} is not one pagetier-k8s-optin takes")
    env = {e.get("name"): e for e in o.get("env") or []}
    if ((env.get("NODE_NAME") or {}).get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath") != "spec.nodeName":
        p.append(f"{where}: optin needs NODE_NAME from the downward API (spec.nodeName)")
    port = str(((tmpl.get("metadata") or {}).get("annotations") or {}).get("prometheus.io/port"))
    if port not in {str(x.get("containerPort")) for x in d.get("ports") or []}:
        p.append(f"{where}: prometheus.io/port {port} is not a port of pagetierd")
    return p


# --- the opt-in script ----------------------------------------------------------------

ID = {n: f"{n:x}" * 64 for n in range(1, 10)}
ID = {n: v[:64] for n, v in ID.items()}


def pod(ns, name, uid, containers, labels=None, annotations=None):
    return {"metadata": {"namespace": ns, "name": name, "uid": uid,
                         "labels": {"pagetier.io/opt-in": "true"} if labels is None else labels,
                         "annotations": annotations or {}},
            "status": {"containerStatuses": containers}}


def running(name, cid):
    return {"name": name, "containerID": cid, "state": {"running": {"startedAt": "x"}}}


def fixture(gone=False):
    long_name = "a-very-long-deployment-name-that-goes-on-7f9c8d6b5-x2k4q"
    items = [
        pod("shop", "api-7f9c8d6b5-x2k4q", "0b6f4c1e-5a9d-4e0b-9c3d-2f1a8e7b6c5d",
            [running("api", "containerd://" + ID[1]), running("istio-proxy", "containerd://" + ID[2])],
            annotations={"pagetier.io/class": "besteffort", "pagetier.io/idle-threshold": "60s",
                         "pagetier.io/idle-packets": "6", "pagetier.io/resident-floor": "64M",
                         "pagetier.io/exclude": "istio-proxy",
                         "pagetier.io/offload-cap": "lots"}),	# invalid: left out
        pod("db", "pg-0", "1c2d3e4f-0000-4000-8000-000000000001",
            [running("postgres", "cri-o://" + ID[3])],
            annotations={"pagetier.io/class": "critical"}),
        # refused by pagetierd (idle_threshold below 100ms), not by the script's syntax check
        pod("shop", "bad-0", "2c2d3e4f-0000-4000-8000-000000000002",
            [running("bad", "containerd://" + ID[4])],
            annotations={"pagetier.io/idle-threshold": "50ms"}),
        # not opted in; a container not running yet; no id yet
        pod("shop", "other", "3c2d3e4f-0000-4000-8000-000000000003",
            [running("other", "containerd://" + ID[5])], labels={"app": "other"}),
        pod("shop", "starting", "4c2d3e4f-0000-4000-8000-000000000004",
            [{"name": "s", "containerID": "containerd://" + ID[6], "state": {"waiting": {}}},
             {"name": "t", "state": {"waiting": {}}}]),
        pod("team-with-a-long-namespace-name", long_name, "5c2d3e4f-0000-4000-8000-000000000005",
            [running("worker", "docker://" + ID[7])]),
    ]
    if gone:
        items = items[1:2]
    return {"kind": "PodList", "apiVersion": "v1", "items": items}


def run_optin(tmp, pagetierd, pods):
    path = os.path.join(tmp, "pods.json")
    with open(path, "w") as f:
        json.dump(pods, f)
    return subprocess.run([sys.executable, optin, "--pods-json", path, "--config-dir",
                           os.path.join(tmp, "etc"), "--pidfile", os.path.join(tmp, "pagetierd.pid"),
                           "--pagetierd", pagetierd], capture_output=True, text=True, timeout=120)


def fake_daemon(tmp):
    """A process named pagetierd (a copy of sleep) whose pid is in the pid file."""
    exe = os.path.join(tmp, "pagetierd")
    shutil.copy(shutil.which("sleep"), exe)
    # SIGHUP as the default action, whatever the caller inherited (make test run under
    # nohup ignores it, and an ignored signal stays ignored across exec).
    d = subprocess.Popen([exe, "60"],
                         preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
    with open(os.path.join(tmp, "pagetierd.pid"), "w") as f:
        f.write(f"{d.pid}\n")
    return d


def hupped(d):
    try:
        return d.wait(timeout=5) == -signal.SIGHUP
    except subprocess.TimeoutExpired:
        d.kill()
        d.wait()
        return False


def check_optin(pagetierd):
    with tempfile.TemporaryDirectory(prefix="pagetier-k8s-") as tmp:
        os.chmod(tmp, 0o755)
        etc = os.path.join(tmp, "etc")
        cd = os.path.join(etc, "containers.d")
        os.makedirs(cd)
        for dd in (etc, cd):
            os.chmod(dd, 0o755)
        own = os.path.join(cd, "admin.conf")
        with open(own, "w") as f:
            f.write("[batch]\nmatch_cgroup = /system.slice/batch-*.scope\n")
        os.chmod(own, 0o644)

        # 1. First pass: files for the opted-in pods, SIGHUP.
        d = fake_daemon(tmp)
        r = run_optin(tmp, pagetierd, fixture())
        p = [] if r.returncode == 0 else [f"exit {r.returncode}: {r.stderr}"]
        files = sorted(n for n in os.listdir(cd) if n.startswith("k8s-"))
        want = ["k8s-0b6f4c1e-5a9d-4e0b-9c3d-2f1a8e7b6c5d.conf",
                "k8s-1c2d3e4f-0000-4000-8000-000000000001.conf",
                "k8s-5c2d3e4f-0000-4000-8000-000000000005.conf"]
        if files != want:
            p.append(f"files {files}, expected {want}")
        text = {n: open(os.path.join(cd, n)).read() for n in files}
        api = text.get(want[0], "")
        for line in ("[shop.api-7f9c8d6b5-x2k4q.api]", f"match_id = {ID[1]}", "class = besteffort",
                     "idle_threshold = 60s", "idle_packets = 6", "resident_floor = 64M"):
            if line not in api.splitlines():
                p.append(f"no line '{line}' in {want[0]}:\n{api}")
        if ID[2] in api or "offload_cap" in api:
            p.append(f"the excluded container or the invalid annotation is in {want[0]}:\n{api}")
        if f"match_id = {ID[3]}" not in text.get(want[1], "") or "class = critical" not in text.get(want[1], ""):
            p.append(f"{want[1]}:\n{text.get(want[1])}")
        sect = re.findall(r"^\[(.*)\]$", text.get(want[2], ""), re.M)
        if len(sect) != 1 or len(sect[0]) > 63 or not re.fullmatch(r"[A-Za-z0-9_.-]+", sect[0]):
            p.append(f"the long pod's section name {sect} is not a valid pagetierd name")
        for msg in ("offload-cap='lots' is not a valid offload_cap",
                    "k8s-2c2d3e4f-0000-4000-8000-000000000002.conf: the new version is left out, pagetierd refuses it"):
            if msg not in r.stderr:
                p.append(f"no message '{msg}' in:\n{r.stderr}")
        cc = subprocess.run([pagetierd, "--check-config", "--config-dir", etc], capture_output=True,
                            text=True, timeout=60)
        if cc.returncode != 0 or "4 container policies" not in cc.stdout:
            p.append(f"pagetierd --check-config on the result: exit {cc.returncode}: {cc.stdout}{cc.stderr}")
        if not hupped(d):
            p.append("pagetierd got no SIGHUP after the files changed")
        check("pagetier-k8s-optin writes containers.d files pagetierd accepts, and reloads it", p)
        print("       " + "\n       ".join(api.splitlines()))

        # 2. Nothing changed: no file rewritten, no SIGHUP.
        d = fake_daemon(tmp)
        mtimes = {n: os.stat(os.path.join(cd, n)).st_mtime_ns for n in files}
        r = run_optin(tmp, pagetierd, fixture())
        p = [] if r.returncode == 0 else [f"exit {r.returncode}: {r.stderr}"]
        if {n: os.stat(os.path.join(cd, n)).st_mtime_ns for n in files} != mtimes:
            p.append("files rewritten although nothing changed")
        d.send_signal(signal.SIGTERM)
        if d.wait(timeout=5) != -signal.SIGTERM:
            p.append("pagetierd got a SIGHUP although nothing changed")
        check("pagetier-k8s-optin: nothing changed, nothing written, no reload", p)

        # 3. Pods gone: their files removed, the administrator's kept; an unreadable pod
        #    list changes nothing.
        d = fake_daemon(tmp)
        r = run_optin(tmp, pagetierd, fixture(gone=True))
        left = sorted(os.listdir(cd))
        p = [] if r.returncode == 0 else [f"exit {r.returncode}: {r.stderr}"]
        if left != ["admin.conf", want[1]]:
            p.append(f"containers.d has {left}, expected admin.conf and {want[1]}")
        if not hupped(d):
            p.append("pagetierd got no SIGHUP after files were removed")
        bad = os.path.join(tmp, "pods.json")
        with open(bad, "w") as f:
            f.write("{not json")
        r2 = subprocess.run([sys.executable, optin, "--pods-json", bad, "--config-dir", etc,
                             "--pidfile", os.path.join(tmp, "pagetierd.pid")],
                            capture_output=True, text=True, timeout=60)
        if r2.returncode == 0 or sorted(os.listdir(cd)) != left or "containers.d unchanged" not in r2.stderr:
            p.append(f"an unreadable pod list: exit {r2.returncode}, {sorted(os.listdir(cd))}: {r2.stderr}")
        check("pagetier-k8s-optin removes the files of pods gone, never others', and keeps them on API errors", p)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the build's bin/ (pagetierd)")
    a = ap.parse_args()
    with open(os.path.join(kdir, "pagetier.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    check(f"pagetier.yaml: {len(docs)} objects, their required fields and references "
          "(schema check: kubectl --dry-run=client needs an API server)", check_manifest(docs))
    check_optin(os.path.abspath(os.path.join(a.bin, "pagetierd")))
    failed = sum(1 for _, p in results if p)
    print(f"kubernetes: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
