#!/usr/bin/env python3
"""The scale benchmark's results as a markdown table, and issue 15's targets checked.

    report.py DIR [--check]

DIR holds scale-SCANNER-nN.json files (bench/scale/guest.py writes them; run.sh gathers
them). --check: only that the harness worked (every run measured CPU, memory, and at least
one probe wake, and none failed), for the smoke run: its figures mean nothing.
Targets (issue 15):
  - pagetierd's CPU at 1,000 idle containers (share 0%) at most 2x its CPU at 10;
  - ... under 1% of one CPU once divided by the emulation's slowdown (the ratio of
    `micro --calibrate` in the guest to the host's; the manager tick's ratio, as the idle
    daemon's work is the tick's);
  - wake detection under 100 ms at p99 at every N;
  - memory at most linear in what it tracks: RSS growth per container does not grow with N.
"""
import glob
import json
import os
import sys


def load(d):
    out = []
    for p in sorted(glob.glob(os.path.join(d, "scale-*.json"))):
        try:
            with open(p) as f:
                out.append(json.load(f))
        except (OSError, ValueError):
            pass
    return out


def runs(results):
    """Every run, with its file's context (scanner, calibration), sorted."""
    out = []
    for r in results:
        for x in r.get("runs", []):
            y = dict(x)
            y.setdefault("scanner", r.get("scanner"))
            y["ratio"] = ((r.get("calibrate") or {}).get("ratio") or {}).get("tick_ns_per_ctx")
            out.append(y)
    return sorted(out, key=lambda x: (x.get("scanner") or "", x.get("n", 0),
                                      x.get("share_pct", 0)))


def fmt(v, suffix=""):
    return "-" if v is None else f"{v}{suffix}"


def native_pct(run):
    pct = (run.get("cpu") or {}).get("pct_one_cpu")
    if pct is None or not run.get("ratio"):
        return None
    return round(pct / run["ratio"], 3)


def table(results):
    lines = ["| scanner | N | active | pagetierd CPU % (user+sys) | main thread % | "
             "native-equiv. % | RSS MiB | wake p50 / p99 / max ms (n, missed) | "
             "idle to offload start p50 / p99 s | settle s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for x in runs(results):
        if x.get("error"):
            lines.append(f"| {x.get('scanner')} | {x.get('n')} | {x.get('share_pct')}% | "
                         f"FAILED: {x['error'][:80]} | | | | | | |")
            continue
        c, w, o = x.get("cpu") or {}, x.get("wake_latency_ms") or {}, \
            x.get("idle_to_offload_s") or {}
        rss = x.get("rss_kib")
        lines.append(
            f"| {x['scanner']} | {x['n']} | {x['share_pct']}% | {fmt(c.get('pct_one_cpu'))} "
            f"({fmt(c.get('user_s'))} + {fmt(c.get('sys_s'))} s / {fmt(c.get('window_s'))} s)"
            f" | {fmt(c.get('main_thread_pct'))} | {fmt(native_pct(x))} | "
            f"{fmt(None if rss is None else rss // 1024)} | "
            f"{fmt(w.get('p50'))} / {fmt(w.get('p99'))} / {fmt(w.get('max'))} "
            f"({w.get('n', 0)}, {x.get('wake_missed', 0)}) | "
            f"{fmt(o.get('p50'))} / {fmt(o.get('p99'))} | "
            f"{fmt(x.get('settle_s'))}{'' if x.get('settled', True) else ' (not settled)'} |")
    for r in results:
        if r.get("skipped"):
            lines.append(f"| {r.get('scanner')} | {r.get('n')} | all | skipped: "
                         f"{r['skipped']} | | | | | | |")
    return "\n".join(lines) + "\n"


DID = ("ticks", "samples", "samples_skipped", "samples_light", "tier_usage_reads", "cgroup_walks",
       "container_scans", "container_bpf_events", "bpf_events_dropped")


def did_table(results):
    """What pagetierd did in each steady window, per minute (its metrics' growth), or ""
    when no run has them (runs before the counters existed)."""
    rows = []
    for x in runs(results):
        did, secs = x.get("did"), (x.get("cpu") or {}).get("window_s")
        if not did or not secs:
            continue
        per_min = [fmt(round(did[k] * 60.0 / secs, 1)) if k in did else "-" for k in DID]
        rows.append(f"| {x['scanner']} | {x['n']} | {x['share_pct']}% | "
                    + " | ".join(per_min) + " |")
    if not rows:
        return ""
    return ("| scanner | N | active | " + " | ".join(f"{k} /min" for k in DID) + " |\n|"
            + "---|" * (3 + len(DID)) + "\n" + "\n".join(rows) + "\n")


def rss_slopes(rs):
    """KiB of RSS per added container between successive N (idle runs of one scanner)."""
    pts = sorted((x["n"], x["rss_kib"]) for x in rs if x.get("rss_kib") is not None)
    return [((n0, n1), (r1 - r0) / (n1 - n0)) for (n0, r0), (n1, r1) in zip(pts, pts[1:])
            if n1 > n0]


def targets(results):
    """[(target, verdict, detail)], verdict PASS, FAIL or n/a."""
    out = []
    rs = [x for x in runs(results) if not x.get("error")]
    for sc in sorted({x["scanner"] for x in rs}):
        idle = {x["n"]: x for x in rs if x["scanner"] == sc and x["share_pct"] == 0}
        c10, c1k = idle.get(10), idle.get(1000)
        if c10 and c1k and c10.get("cpu") and c1k.get("cpu"):
            a, b = c10["cpu"]["pct_one_cpu"], c1k["cpu"]["pct_one_cpu"]
            ok = b <= 2 * max(a, 0.01)
            out.append((f"{sc}: CPU at 1,000 idle <= 2x CPU at 10", "PASS" if ok else "FAIL",
                        f"{b}% vs {a}% ({b / a:.1f}x)" if a else f"{b}% vs {a}%"))
        else:
            out.append((f"{sc}: CPU at 1,000 idle <= 2x CPU at 10", "n/a",
                        "needs share-0 runs at N=10 and N=1000"))
        if c1k and native_pct(c1k) is not None:
            v = native_pct(c1k)
            out.append((f"{sc}: CPU at 1,000 idle < 1% of a CPU, native-equivalent",
                        "PASS" if v < 1 else "FAIL",
                        f"{c1k['cpu']['pct_one_cpu']}% / {c1k['ratio']} = {v}%"))
        else:
            out.append((f"{sc}: CPU at 1,000 idle < 1% of a CPU, native-equivalent", "n/a",
                        "needs the N=1000 idle run and both calibrations"))
        p99 = [(x["n"], x["share_pct"], (x.get("wake_latency_ms") or {}).get("p99"),
                x.get("wake_missed", 0)) for x in rs if x["scanner"] == sc]
        bad = [p for p in p99 if p[2] is None or p[2] >= 100 or p[3]]
        out.append((f"{sc}: wake detection p99 < 100 ms at every N",
                    "n/a" if not p99 else "FAIL" if bad else "PASS",
                    "; ".join(f"N={n} {s}%: {fmt(v, ' ms')}" + (f", {m} missed" if m else "")
                              for n, s, v, m in (bad or p99))))
        sl = rss_slopes(idle.values())
        grows = any(b > 1.5 * max(a, 1.0) + 64 for (_, a), (_, b) in zip(sl, sl[1:]))
        out.append((f"{sc}: memory at most linear (RSS per added container)",
                    "n/a" if len(sl) < 2 else "FAIL" if grows else "PASS",
                    ", ".join(f"N {a}->{b}: {s:.0f} KiB" for (a, b), s in sl)))
    return out


def check(results):
    """Problems that say the harness did not work (the smoke run's test)."""
    probs = []
    rs = runs(results)
    if not rs:
        probs.append("no run at all")
    for x in rs:
        tag = f"{x.get('scanner')} N={x.get('n')} {x.get('share_pct')}%"
        if x.get("error"):
            probs.append(f"{tag}: {x['error']}")
            continue
        if not (x.get("cpu") or {}).get("window_s"):
            probs.append(f"{tag}: no CPU window")
        if not x.get("rss_kib"):
            probs.append(f"{tag}: no RSS")
        if not (x.get("wake_latency_ms") or {}).get("n"):
            probs.append(f"{tag}: no probe wake was detected")
        if not x.get("settled"):
            probs.append(f"{tag}: did not settle ({x.get('settle_problem')})")
    return probs


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit("usage: report.py DIR [--check]")
    res = load(args[0])
    if "--check" in sys.argv:
        probs = check(res)
        for p in probs:
            print(f"scale: {p}", file=sys.stderr)
        sys.exit(1 if probs else 0)
    print(table(res))
    did = did_table(res)
    if did:
        print(did)
    print("| target | verdict | detail |\n|---|---|---|")
    for t, v, d in targets(res):
        print(f"| {t} | {v} | {d} |")


if __name__ == "__main__":
    main()
