#!/usr/bin/env python3
"""Tables of bench/wake/apps.sh's results: one per kernel x device profile, and the goals of
issue 11 checked against them (ratios within one run; absolute TCG times mean little).

    apps_report.py DIR     (DIR/wake-apps-<kernel>-<profile>.json)
"""
import glob
import json
import os
import sys


MODES = ("never", "swap", "pagetier", "paced", "nopf")


def fmt(v, unit=""):
    return "-" if v is None else f"{v}{unit}"


def kinds_table(r, seq):
    w = r["workloads"].get("kinds")
    if not w:
        return []
    out = ["| kinds: 64 MiB private, 32 MiB shared, 32 MiB mapped file | whole set back (ms) | MB/s | "
           "of the device's sequential read | major faults | read from the drive (MiB) |",
           "|---|---|---|---|---|---|"]
    for m in MODES:
        f = w.get(m)
        if f:
            pct = "-" if m == "never" else f"{100 * f['MBps'] / seq:.0f}%"
            out.append(f"| {m} | {f['wake_ms']} | {f['MBps']} | "
                       f"{pct} | {fmt(f.get('major_faults'))} | "
                       f"{f.get('read_MiB')} |")
    for m in ("pagetier", "paced"):
        if w.get("swap") and w.get(m):
            out.append(f"\ndemand paging / {m}: **{w['swap']['wake_ms'] / w[m]['wake_ms']:.2f}x**")
    return out


def server_table(r):
    out = ["| server | mode | first request (ms) | p50 first 5 s (ms) | p99 first 5 s (ms) | "
           "90% resident after (s) | resident at 5 s | wrong |",
           "|---|---|---|---|---|---|---|---|"]
    ratios = []
    for name, w in r["workloads"].items():
        if name == "kinds":
            continue
        if w.get("error"):
            out.append(f"| {name} | failed: {w['error']} | | | | | | |")
        for m in MODES:
            f = w.get(m)
            if f:
                out.append(f"| {name} ({f['warm_MiB']} MiB, {w.get('rate', '?')}/s) | {m} | {f['first_ms']} | "
                           f"{f['p50_5s_ms']} | {f['p99_5s_ms']} | {fmt(f['t90_resident_s'])} | "
                           f"{f['resident_at_5s_pct']}% | {f['wrong']} |")
        for m in ("pagetier", "paced"):
            if w.get("never") and w.get(m) and w.get("swap"):
                ratios.append(f"{name}, {m}: first request {w[m]['first_ms'] / max(w['never']['first_ms'], 0.1):.1f}x "
                              f"the never-offloaded one (swap: {w['swap']['first_ms'] / max(w['never']['first_ms'], 0.1):.1f}x); "
                              f"p99 over the first 5 s {w[m]['p99_5s_ms'] / max(w['never']['p99_5s_ms'], 0.1):.1f}x "
                              f"(swap: {w['swap']['p99_5s_ms'] / max(w['never']['p99_5s_ms'], 0.1):.1f}x)")
    return out + [""] + [f"- {x}" for x in ratios if x]


def main():
    d = sys.argv[1]
    files = sorted(glob.glob(os.path.join(d, "wake-apps-*.json")))
    if not files:
        print(f"no results in {d}", file=sys.stderr)
        return 1
    for p in files:
        r = json.load(open(p))
        seq = max(r.get("seq_read_MBps_qd4") or 0, r.get("seq_read_MBps_qd1") or 0) or 1
        print(f"\n## {r['kernel']}, {r['profile']} (sequential read {seq} MB/s)\n")
        print("\n".join(kinds_table(r, seq)))
        print()
        print("\n".join(server_table(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
