#!/usr/bin/env python3
"""The density benchmark over repeated runs: one ranking from several runs of the same
matrix, since one run does not rank (the solo p99 of one configuration's run differs from
another's by as much as the SLO's 10% band, on the same machine and command).

    repeats.py OUT DIR[:CONFIG,...] [DIR[:CONFIG,...] ...]

Each DIR holds one repetition's density-KERNEL-PROFILE-CONFIG.json (a DENSITY_OUT of
run.sh; a configuration missing from a DIR is absent from that repetition); :CONFIG,...
takes only those configurations of it (a run made with another set-up). Writes
OUT/repeats.md (and prints it) and OUT/repeats.png:
- each repetition's density of each configuration, against its own solo and against that
  repetition's shared solo (report.py's two figures), and their median;
- the pooled density: each N's requests of every repetition together (as guest.py pools
  the solo windows), against the configuration's own pooled solo (each run's VM has a
  speed of its own under TCG, so its own solo is the reference), and beside it against
  the pooled solo of all configurations. A step after a repetition's stop (guest.py
  stopped its sweep) counts as out of the SLO; a step beyond a repetition's planned sweep
  (a run with more STEPS than the others) pools the repetitions that ran it, and says how
  many;
- the pooled p99 at each N over both solos, with each run's own ratio beside it; the
  pooled p99.9 and max.
"""
import os
import statistics
import sys

from openloop import percentile, summarize
import report


def pool_steps(steps, measure_s):
    """One step made of several repetitions' steps at the same N: every request of each
    (the solo's windows included), the throughput over their whole time, the failures and
    noise errors summed, alive only if alive in all."""
    lat, failed, duration = [], 0, 0.0
    for s in steps:
        lat += [x / 1000 for x in s["crit_latencies_ms"]]
        failed += s["crit"].get("failed") or 0
        duration += measure_s * max(1, len(s.get("solo_windows") or []))
    crit = summarize(lat, failed, duration, steps[0]["crit"].get("offered_per_s"))
    p999 = percentile(sorted(lat), 99.9)
    crit["p999_ms"] = None if p999 is None else round(p999 * 1000, 2)
    return {"noise": steps[0]["noise"], "crit": crit,
            "crit_alive": all(s["crit_alive"] for s in steps),
            "noise_alive": min(s.get("noise_alive", s["noise"]) for s in steps),
            "noise_client": {"failed": sum((s.get("noise_client") or {}).get("failed") or 0
                                           for s in steps)},
            "repetitions": len(steps)}


def pooled_run(runs, measure_s):
    """The steps of one configuration's repetitions pooled N by N (with its solo first);
    None without a solo in each. At each N, the repetitions whose sweep went there: one
    that stopped (guest.py's "stopped": the critical service died or its p99 went past
    10x solo) ends the pool at its last N, since the steps after would have been out; one
    whose sweep simply ended sooner (run with fewer STEPS) is left out of the N it did not
    plan, and each pooled step says how many repetitions it holds."""
    if not runs or any(not r["steps"] or r["steps"][0]["noise"] != 0 for r in runs):
        return None
    stopped = [r["steps"][-1]["noise"] for r in runs if r.get("stopped")]
    reached = min(stopped) if stopped else max(r["steps"][-1]["noise"] for r in runs)
    out = []
    for n in sorted({s["noise"] for r in runs for s in r["steps"]}):
        if n <= reached:
            out.append(pool_steps([s for r in runs for s in r["steps"] if s["noise"] == n],
                                  measure_s))
    return out


def pooled_solo(runs, measure_s):
    """The solo step of every run given (every configuration's, every repetition's),
    pooled: the critical service alone on that machine."""
    solos = [r["steps"][0] for r in runs if r["steps"] and r["steps"][0]["noise"] == 0 and
             r["steps"][0].get("crit_latencies_ms")]
    return pool_steps(solos, measure_s) if solos else None


def own_ratios(runs, n):
    """Each run's p99 at N = @n over its own solo, in the runs' order."""
    return [round(x["crit"]["p99_ms"] / r["steps"][0]["crit"]["p99_ms"], 2)
            for r in runs for x in r["steps"] if x["noise"] == n and x["crit"]["p99_ms"]]


def analyse(repetitions):
    """{(kernel, profile): {"solo": pooled solo step, "configs": {config: {...}}}} from
    @repetitions, a list of lists of runs (report.load of each DIR)."""
    groups = {}
    for runs in repetitions:
        shared = report.shared_solo(runs)
        for r in runs:
            g = groups.setdefault((r["kernel"], r["profile"]), {})
            c = g.setdefault(r["config"], {"runs": [], "own": [], "shared": []})
            c["runs"].append(r)
            c["own"].append(report.density(r["steps"]))
            c["shared"].append(report.density_against(r["steps"],
                                                      shared.get(report.shared_key(r))))
    out = {}
    for key, configs in groups.items():
        measure_s = next(r["measure_s"] for c in configs.values() for r in c["runs"])
        solo = pooled_solo([r for c in configs.values() for r in c["runs"]], measure_s)
        res = {}
        for name, c in configs.items():
            pooled = pooled_run(c["runs"], measure_s)
            res[name] = {
                "runs": c["runs"], "repetitions": len(c["runs"]), "own": c["own"],
                "shared": c["shared"],
                "pooled": pooled,
                "pooled_own": report.density(pooled) if pooled else None,
                "pooled_shared": report.density_against(pooled, solo) if pooled else None,
                "ratios": {s["noise"]: own_ratios(c["runs"], s["noise"]) for s in (pooled or [])},
                # A run that stopped before the sweep's end caps the pooled density.
                "capped": bool(pooled) and pooled[-1]["noise"] < max(
                    s["noise"] for r in c["runs"] for s in r["steps"]),
            }
        out[key] = {"solo": solo, "configs": res}
    return out


def _median(v):
    """The median of the densities that exist (None: a run without a solo)."""
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def _thin(c, n):
    """" (k of m runs)" when the pooled step at density @n holds fewer than all of the
    configuration's repetitions (the others' sweeps ended sooner), else ""."""
    st = next((s for s in (c["pooled"] or []) if s["noise"] == n), None)
    if not n or st is None or st["repetitions"] >= c["repetitions"]:
        return ""
    return f" ({st['repetitions']} of {c['repetitions']} runs at N = {n})"


def markdown(result, dirs):
    out = [f"Repetitions: {', '.join(dirs)}.", ""]
    for (kernel, profile), g in sorted(result.items()):
        solo = g["solo"]["crit"] if g["solo"] else None
        out.append(f"### {kernel}, {profile}")
        out.append("")
        if solo:
            out.append(f"Pooled solo (every configuration's solo windows, every repetition: "
                       f"{solo['completed']} requests): p50 {solo['p50_ms']} ms, p99 "
                       f"{solo['p99_ms']} ms.")
            out.append("")
        out.append("| configuration | repetitions | density, each run's own solo (median) | "
                   "against each run's shared solo (median) | pooled, own solo | "
                   "pooled, shared solo |")
        out.append("|---|---|---|---|---|---|")
        order = sorted(g["configs"], key=lambda c: report.ORDER.index(c)
                       if c in report.ORDER else 99)
        for name in order:
            c = g["configs"][name]
            cap = " (a run stopped early)" if c["capped"] else ""
            out.append(f"| {name} | {c['repetitions']} | {', '.join(map(str, c['own']))} "
                       f"({_median(c['own'])}) | {', '.join(map(str, c['shared']))} "
                       f"({_median(c['shared'])}) | {c['pooled_own']}{cap}"
                       f"{_thin(c, c['pooled_own'])} | "
                       f"{c['pooled_shared']}{cap}{_thin(c, c['pooled_shared'])} |")
        out.append("")
        ns = sorted({s["noise"] for c in g["configs"].values() for s in (c["pooled"] or [])})
        out.append("At each N: the pooled p99 over the configuration's own pooled solo / "
                   "over the pooled solo of all; in brackets each run's p99 over its own solo.")
        out.append("")
        out.append("| configuration | " + " | ".join(f"N = {n}" for n in ns) + " |")
        out.append("|---|" + "---|" * len(ns))
        for name in order:
            c = g["configs"][name]
            cells = []
            for n in ns:
                st = next((s for s in (c["pooled"] or []) if s["noise"] == n), None)
                if st is None or not solo or st["crit"]["p99_ms"] is None:
                    cells.append("")
                    continue
                own = c["pooled"][0]["crit"]["p99_ms"]
                fewer = (f", {st['repetitions']} of {c['repetitions']} runs"
                         if st["repetitions"] < c["repetitions"] else "")
                cells.append(f"{st['crit']['p99_ms'] / own:.2f} / "
                             f"{st['crit']['p99_ms'] / solo['p99_ms']:.2f} "
                             f"({', '.join(f'{x:.2f}' for x in c['ratios'].get(n, []))}{fewer})")
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("")
        out.append("The tail beyond the SLO's p99: the pooled p99.9 and max (ms) at each N.")
        out.append("")
        out.append("| configuration | " + " | ".join(f"N = {n}" for n in ns) + " |")
        out.append("|---|" + "---|" * len(ns))
        for name in order:
            pooled = {s["noise"]: s["crit"] for s in (g["configs"][name]["pooled"] or [])}
            out.append(f"| {name} | " + " | ".join(
                f"{pooled[n]['p999_ms']} / {pooled[n]['max_ms']}" if n in pooled else ""
                for n in ns) + " |")
        out.append("")
    return "\n".join(out) + "\n"


def plot(result, path):
    plt = report.pyplot("repeats")
    if plt is None:
        return
    keys = sorted(result)
    fig, axes = plt.subplots(1, len(keys), figsize=(6.5 * len(keys), 4.5), squeeze=False)
    for ax, key in zip(axes[0], keys):
        g = result[key]
        for name, c in g["configs"].items():
            if not c["pooled"] or not c["pooled"][0]["crit"]["p99_ms"]:
                continue
            color = f"C{report.ORDER.index(name) if name in report.ORDER else len(report.ORDER)}"
            xs = [s["noise"] for s in c["pooled"]]
            own = c["pooled"][0]["crit"]["p99_ms"]
            ax.plot(xs, [(s["crit"]["p99_ms"] or 0) / own for s in c["pooled"]], "o-",
                    color=color, label=f"{name} (pooled density {c['pooled_own']})")
            for n, ratios in c["ratios"].items():
                ax.plot([n] * len(ratios), ratios, ".", color=color, alpha=0.4)
        ax.axhspan(0, report.SLO_P99, color="green", alpha=0.08, label="SLO")
        ax.set_ylim(0.7, 2.0)
        ax.set_title(f"critical p99 / solo — {key[0]}, {key[1]}\n"
                     "(lines: the runs pooled; dots: each run over its own solo)")
        ax.set_xlabel("noise containers (N)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def load(arg):
    """One repetition's runs: DIR, or DIR:CONFIG,... for only those configurations."""
    d, _, only = arg.partition(":")
    runs = report.load(d)
    return [r for r in runs if r["config"] in only.split(",")] if only else runs


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: repeats.py OUT DIR[:CONFIG,...] [DIR[:CONFIG,...] ...]")
    out, dirs = sys.argv[1], sys.argv[2:]
    repetitions = [load(d) for d in dirs]
    empty = [d for d, runs in zip(dirs, repetitions) if not runs]
    if empty:
        sys.exit(f"repeats: no density-*.json in {', '.join(empty)}")
    result = analyse(repetitions)
    md = markdown(result, [os.path.basename(os.path.normpath(d)) for d in dirs])
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "repeats.md"), "w") as f:
        f.write(md)
    plot(result, os.path.join(out, "repeats.png"))
    print(md)
    print(f"repeats: {out}/repeats.md, repeats.png")


if __name__ == "__main__":
    main()
