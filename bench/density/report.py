#!/usr/bin/env python3
"""The density benchmark's report, from every density-KERNEL-PROFILE-CONFIG.json in DIR:
density.csv (every point), density.md (the tables) and density.png (the plot, in the
manner of the study's Figure 1: critical throughput and p99 against N, one line per
configuration, the SLO band shaded; one row of panels per kernel and device profile).

    report.py DIR [--run LABEL] [--carry CSV] [--check]
        --run LABEL: the name of DIR's run in the tables and the CSV's run column (DIR's
                     own name by default: a results/ directory's date)
        --carry CSV: runs (kernel x profile x configuration) that DIR has no result of are
                     carried over from an earlier report's CSV (the committed
                     results/density.csv), so that the matrix accumulates across sessions;
                     they are marked "earlier" in the tables, with the run they came from
        --check:     exit 1 unless every run has its solo point and one point with noise
                     (make test's smoke run)

Density at SLO (issue 10's definition): the largest N such that at every N up to it the
critical p99 stays within SLO_P99 (110%) of its solo figure (N = 0, same run; guest.py pools
it from SOLO_WINDOWS windows) and its throughput within SLO_THROUGHPUT (95%) of solo, every
noise request succeeding. The tables also give each run's density against the shared
solo (shared_solo(): the median of the solo figures of every configuration of the same kernel,
profile and run), where a configuration's own cost at N = 0 does not count in its favour.
"""
import csv
import glob
import json
import os
import sys

SLO_P99 = 1.10
SLO_THROUGHPUT = 0.95
ORDER = ["noswap", "swap", "swap-low", "senpai", "damon", "pagetier"]
FIELDS = ["kernel", "profile", "config", "noise", "throughput_per_s", "offered_per_s", "failed",
          "min_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms", "within_slo", "noise_p50_ms",
          "noise_p99_ms", "noise_errors", "crit_stall_ms", "noise_resident_MiB",
          "swapped_MiB", "on_tier_MiB", "device_written_MiB", "pagetierd_cpu_s",
          "mem_available_MiB", "oom_kill", "run"]


def within_slo(step, solo):
    c, s = step["crit"], solo["crit"]
    return bool(step["crit_alive"] and c["p99_ms"] is not None and s["p99_ms"] and
                c["p99_ms"] <= SLO_P99 * s["p99_ms"] and
                c["throughput_per_s"] >= SLO_THROUGHPUT * s["throughput_per_s"] and
                not step.get("noise_client", {}).get("failed") and
                step.get("noise_alive", step["noise"]) >= step["noise"])


def density(steps):
    """The density at SLO of one run's steps (None without a solo point)."""
    return density_against(steps, steps[0] if steps else None)


def run_of(r):
    """The run a configuration's result belongs to (one VM session's matrix, side by side):
    its label, or for rows carried from a CSV older than the run column, "earlier"."""
    return r.get("run") or ("earlier" if r.get("carried") else "")


def shared_key(r):
    return (r["kernel"], r["profile"], run_of(r))


def shared_solo(runs):
    """{shared_key(): a solo step} whose critical p99 and throughput are the medians of the
    solo figures of the configurations of one kernel, profile and run: the critical service
    alone on that host, whatever the configuration. Each configuration's own solo includes
    its own cost at N = 0 (pagetierd and its BPF programs, kdamond, Senpai) and a window's
    chance; against the shared one, neither counts in its favour. Only runs side by side
    are pooled: solo figures of other days and machines differ by more than the SLO band."""
    groups = {}
    for r in runs:
        st = r["steps"]
        if st and st[0]["noise"] == 0 and st[0]["crit"]["p99_ms"]:
            groups.setdefault(shared_key(r), []).append(st[0]["crit"])
    out = {}
    for k, solos in groups.items():
        p99 = sorted(c["p99_ms"] for c in solos)
        tput = sorted(c["throughput_per_s"] for c in solos)
        median = (lambda v: (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2)
        out[k] = {"noise": 0, "crit": {"p99_ms": median(p99), "throughput_per_s": median(tput)}}
    return out


def density_against(steps, solo):
    """density(), each N measured against @solo (a step) instead of the run's own."""
    if not steps or steps[0]["noise"] != 0 or solo is None:
        return None
    best = 0
    for s in steps[1:]:
        if not within_slo(s, solo):
            break
        best = s["noise"]
    return best


def load(d, label=None):
    """The results in @d, each labelled with its run: @label, or @d's own name."""
    runs = []
    for p in glob.glob(os.path.join(d, "density-*.json")):
        with open(p) as f:
            r = json.load(f)
        r.setdefault("profile", "unthrottled")
        r["run"] = label or os.path.basename(os.path.normpath(d))
        runs.append(r)
    key = (lambda r: (r["kernel"], r["profile"] != "unthrottled",
                      ORDER.index(r["config"]) if r["config"] in ORDER else 99))
    return sorted(runs, key=key)


def _num(v):
    if v in ("", "None", None):
        return None
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v == "True" if v in ("True", "False") else v


def carried(csv_path, have):
    """Runs rebuilt from an earlier report's CSV rows, for the (kernel, profile, config)
    combinations not in @have: enough of each step for the tables, the density and the
    plot (the latency samples and per-container details stay in that run's JSON)."""
    runs = {}
    with open(csv_path, newline="") as f:
        for w in csv.DictReader(f):
            key = (w["kernel"], w["profile"], w["config"])
            if key in have:
                continue
            w = {k: _num(v) for k, v in w.items()}
            crit = {k: w[k] for k in ("throughput_per_s", "offered_per_s", "failed", "min_ms",
                                      "p50_ms", "p95_ms", "p99_ms", "max_ms")}
            crit["completed"] = bool(w["throughput_per_s"])
            step = {"noise": w["noise"], "crit": crit, "crit_alive": bool(w["throughput_per_s"]),
                    "noise_client": {"p50_ms": w["noise_p50_ms"], "p99_ms": w["noise_p99_ms"],
                                     "failed": w["noise_errors"]},
                    "noise_alive": w["noise"], "crit_stall_ms": {"all": w["crit_stall_ms"] or 0},
                    **{k: w[k] for k in ("noise_resident_MiB", "swapped_MiB", "on_tier_MiB",
                                         "device_written_MiB", "pagetierd_cpu_s",
                                         "mem_available_MiB", "oom_kill")}}
            r = runs.setdefault(key, {"kernel": key[0], "profile": key[1], "config": key[2],
                                      "steps": [], "carried": True,
                                      "run": w.get("run") or "earlier"})
            r["steps"].append(step)
    for r in runs.values():
        r["steps"].sort(key=lambda s: s["noise"])
        st = r["steps"]
        if st and st[0]["noise"] == 0 and st[-1]["crit"]["p99_ms"] and st[0]["crit"]["p99_ms"] \
                and st[-1]["crit"]["p99_ms"] > 10 * st[0]["crit"]["p99_ms"]:
            r["stopped"] = (f"N={st[-1]['noise']}: critical p99 {st[-1]['crit']['p99_ms']} ms, "
                            f"over 10x solo ({st[0]['crit']['p99_ms']} ms)")
    return list(runs.values())


def rows(runs):
    for r in runs:
        solo = r["steps"][0] if r["steps"] and r["steps"][0]["noise"] == 0 else None
        for s in r["steps"]:
            c, nc = s["crit"], s.get("noise_client", {})
            yield {"kernel": r["kernel"], "profile": r["profile"], "config": r["config"],
                   "run": run_of(r), "noise": s["noise"],
                   **{k: c.get(k) for k in ("throughput_per_s", "offered_per_s", "failed",
                                            "min_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms")},
                   "within_slo": within_slo(s, solo) if solo else None,
                   "noise_p50_ms": nc.get("p50_ms"), "noise_p99_ms": nc.get("p99_ms"),
                   "noise_errors": nc.get("failed"),
                   "crit_stall_ms": sum(s["crit_stall_ms"].values()),
                   **{k: s.get(k) for k in ("noise_resident_MiB", "swapped_MiB", "on_tier_MiB",
                                            "device_written_MiB", "pagetierd_cpu_s",
                                            "mem_available_MiB", "oom_kill")}}


def markdown(runs):
    out = []
    r0 = next((r for r in runs if not r.get("carried")), None)
    if r0 is None:
        out.append("(every run carried from an earlier report)\n")
        r0 = {k: "?" for k in ("ram_MiB", "crit_MiB", "rate", "noise_MiB", "settle_s",
                               "measure_s", "time_scale", "solo_windows")}
    windows = r0.get("solo_windows", 1)
    solo = "solo one window" if windows == 1 else f"solo pooled from {windows} windows"
    out.append(f"{r0['ram_MiB']} MiB guest; critical service {r0['crit_MiB']} MiB (redis) + "
               f"nginx at {r0['rate']} tx/s open loop; noise containers of {r0['noise_MiB']} MiB; "
               f"{r0['settle_s']} s settle + {r0['measure_s']} s measured per N, {solo}; time "
               f"constants / {r0['time_scale']}. SLO: p99 within {SLO_P99:.0%} and throughput "
               f"within {SLO_THROUGHPUT:.0%} of solo, no noise error.\n")
    out.append("| kernel | profile | configuration | density at SLO (N) | solo p99 ms | "
               "density against the shared solo (N) | shared solo p99 ms | last N run | "
               "why it stopped | run |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    shared = shared_solo(runs)
    for r in runs:
        solo = r["steps"][0]["crit"]["p99_ms"] if r["steps"] else None
        last = r["steps"][-1]["noise"] if r["steps"] else None
        common = shared.get(shared_key(r))
        out.append(f"| {r['kernel']} | {r['profile']} | {r['config']} | {density(r['steps'])} | "
                   f"{solo} | {density_against(r['steps'], common)} | "
                   f"{round(common['crit']['p99_ms'], 2) if common else None} | {last} | "
                   f"{r.get('stopped', 'end of the sweep')} | "
                   f"{run_of(r)}{' (carried)' if r.get('carried') else ''} |")
    out.append("")
    out.append("The shared solo: the median of the solo figures of the configurations of that "
               "kernel and profile in the same run (the column \"run\"): the critical service "
               "alone on that host, against which no configuration's own cost at N = 0 or "
               "its solo windows' chance counts in its favour.")
    out.append("")
    out.append("| kernel | profile | configuration | N | tx/s | p50 | p95 | p99 | max (ms) | "
               "in SLO | noise p99 ms / errors | noise resident MiB | swapped MiB | "
               "written MiB | pagetierd CPU s |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for w in rows(runs):
        out.append("| {kernel} | {profile} | {config} | {noise} | {throughput_per_s} | {p50_ms} | "
                   "{p95_ms} | {p99_ms} | {max_ms} | {slo} | {noise_p99_ms} / {noise_errors} | "
                   "{noise_resident_MiB} | {swapped_MiB} | {device_written_MiB} | "
                   "{cpu} |".format(slo="yes" if w["within_slo"] else "no",
                                    cpu=w["pagetierd_cpu_s"] if w["pagetierd_cpu_s"] is not None
                                    else "", **w))
    return "\n".join(out) + "\n"


def pyplot(who):
    """matplotlib's pyplot without a display, or None (said on stderr, as @who) without it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{who}: matplotlib missing (Debian: python3-matplotlib): no plot",
              file=sys.stderr)
        return None
    return plt


def plot(runs, path):
    plt = pyplot("report")
    if plt is None:
        return
    groups = {}
    for r in runs:
        groups.setdefault((r["kernel"], r["profile"]), []).append(r)
    fig, axes = plt.subplots(len(groups), 2, figsize=(12, 4.2 * len(groups)), squeeze=False)
    for row, ((kv, prof), rs) in enumerate(groups.items()):
        ax_t, ax_p = axes[row]
        for r in rs:
            st = r["steps"]
            if not st or st[0]["noise"] != 0:
                continue
            xs = [s["noise"] for s in st]
            solo = st[0]["crit"]
            # Relative to the run's own solo figures: the SLO band is the same for all.
            # One colour per configuration in every panel.
            color = f"C{ORDER.index(r['config']) if r['config'] in ORDER else len(ORDER)}"
            ax_t.plot(xs, [s["crit"]["throughput_per_s"] / solo["throughput_per_s"] for s in st],
                      "o-", color=color, label=f"{r['config']} (density {density(st)})")
            ax_p.plot(xs, [(s["crit"]["p99_ms"] or 0) / solo["p99_ms"] for s in st], "o-",
                      color=color, label=r["config"])
        ax_t.axhspan(SLO_THROUGHPUT, 1.2, color="green", alpha=0.08, label="SLO")
        ax_p.axhspan(0, SLO_P99, color="green", alpha=0.08, label="SLO")
        ax_t.set_ylim(0, 1.2)
        ax_p.set_yscale("log")
        ax_t.set_title(f"critical throughput / solo — {kv}, {prof}")
        ax_p.set_title(f"critical p99 / solo — {kv}, {prof}")
        for ax in (ax_t, ax_p):
            ax.set_xlabel("noise containers (N)")
            ax.grid(True, alpha=0.3)
        ax_t.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    d = sys.argv[1]
    runs = load(d, sys.argv[sys.argv.index("--run") + 1] if "--run" in sys.argv else None)
    if "--carry" in sys.argv:
        src = sys.argv[sys.argv.index("--carry") + 1]
        if os.path.exists(src):
            have = {(r["kernel"], r["profile"], r["config"]) for r in runs}
            runs += carried(src, have)
            key = (lambda r: (r["kernel"], r["profile"] != "unthrottled",
                              ORDER.index(r["config"]) if r["config"] in ORDER else 99))
            runs.sort(key=key)
    if not runs:
        sys.exit(f"report: no density-*.json in {d}")
    with open(os.path.join(d, "density.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for row in rows(runs):
            w.writerow(row)
    md = markdown(runs)
    with open(os.path.join(d, "density.md"), "w") as f:
        f.write(md)
    plot(runs, os.path.join(d, "density.png"))
    print(md)
    print(f"report: {d}/density.csv, density.md, density.png")
    if "--check" in sys.argv:
        bad = [r["config"] for r in runs
               if len(r["steps"]) < 2 or r["steps"][0]["noise"] != 0 or
               not r["steps"][1]["crit"]["completed"]]
        if bad:
            sys.exit(f"report: runs without a solo point and a point with noise: {bad}")


if __name__ == "__main__":
    main()
