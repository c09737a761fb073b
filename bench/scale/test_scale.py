#!/usr/bin/env python3
"""Unit tests of the scale benchmark's pure parts: /proc parsing, pagetierd's log lines,
matching probe wakes and offloads to them, the plan of a run, the ETA, the report's table,
targets and smoke check. Run by make unit."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guest as G  # noqa: E402
import report as R  # noqa: E402

# A real 6.12 /proc/PID/stat line, with a command name that has a space and a ')'.
STAT = ("4242 (pagetierd x)) S 1 4242 4242 0 -1 4194560 1234 0 5 0 "
        "731 262 0 0 20 0 5 0 12345 45678592 5120 18446744073709551615 1 1 0 0 0 0 0 "
        "0 0 0 0 0 17 1 0 0 0 0 0\n")


class Tier(unittest.TestCase):
    def test_tier_counters_and_their_window(self):
        a = G.parse_tier_stat("tier_stat", "     100 4096 0 1 0 0 0 0 1024 0 5 640\n")
        self.assertEqual(a, {"cgroups": 1024, "cgroup_evictions": 5,
                             "cgroup_evicted_pages": 640})
        a.update(G.parse_tier_stat("read_stat", "1 8 9 3 5 0 4096 1 0 0 0 0 0 16384 2\n"))
        self.assertEqual(a["staging_misses"], 5)
        self.assertEqual(a["prefetch_bytes"], 4096)
        b = dict(a, cgroups=1000, cgroup_evictions=905, staging_misses=7)
        w = G.tier_window(a, b)
        self.assertEqual((w["cgroups"], w["cgroup_evictions"], w["staging_misses"],
                          w["staging_hits"]), (1000, 900, 2, 0))


class Proc(unittest.TestCase):
    def test_stat_fields_after_the_last_paren(self):
        s = G.parse_proc_stat(STAT)
        self.assertEqual((s["utime"], s["stime"], s["threads"], s["rss_pages"]),
                         (731, 262, 5, 5120))
        self.assertEqual(s["children"], 0)
        # cutime and cstime: the CPU of the children it reaped (a wake's file readers).
        self.assertEqual(G.parse_proc_stat(STAT.replace(" 731 262 0 0 ", " 731 262 11 4 "))
                         ["children"], 15)

    def test_status_kb_fields(self):
        st = G.parse_proc_status("Name:\tpagetierd\nVmHWM:\t   30000 kB\nVmRSS:\t   20480 kB\n"
                                 "RssAnon:\t    9000 kB\nThreads:\t5\n")
        self.assertEqual(st, {"VmHWM": 30000, "VmRSS": 20480, "RssAnon": 9000, "Threads": 5})

    def test_cpu_busy(self):
        busy, total = G.cpu_busy("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4\n")
        self.assertEqual((busy, total), (150, 1000))

    def test_metrics_parsed_and_labelled_series_summed(self):
        text = ("# HELP pagetier_ticks_total Policy ticks.\n# TYPE pagetier_ticks_total counter\n"
                "pagetier_ticks_total 120\n"
                'pagetier_container_scans_total{container="a",cgroup="/x/a b"} 3\n'
                'pagetier_container_scans_total{container="b",cgroup="/x/b"} 4\n'
                "pagetier_ticks_totalx 9\n")
        m = G.parse_metrics(text, G.COUNTERS)
        self.assertEqual(m, {"pagetier_ticks_total": 120.0,
                             "pagetier_container_scans_total": 7.0})
        later = dict(m, pagetier_ticks_total=360.0)
        self.assertEqual(G.counters_window(m, later), {"ticks": 240, "container_scans": 0})
        self.assertEqual(G.counters_window({}, later), {})

    def test_cpu_window(self):
        a = {"t": 10.0, "cpu": 100, "utime": 80, "stime": 20, "main": 50, "host": (0, 1000)}
        b = {"t": 20.0, "cpu": 150, "utime": 110, "stime": 40, "main": 60, "host": (500, 3000)}
        w = G.cpu_window(a, b)
        tck = G.CLK_TCK
        self.assertAlmostEqual(w["pct_one_cpu"], round(100 * 50 / tck / 10, 2))
        self.assertAlmostEqual(w["main_thread_pct"], round(100 * 10 / tck / 10, 2))
        self.assertEqual(w["guest_busy_pct"], 25.0)
        self.assertEqual(w["file_readers_pct"], 0)
        w = G.cpu_window(dict(a, readers=7), dict(b, readers=7 + 30))
        self.assertAlmostEqual(w["file_readers_pct"], round(100 * 30 / tck / 10, 2))


class Log(unittest.TestCase):
    def test_lines(self):
        self.assertEqual(G.parse_log_line("<6>[  123.045] info: p-1: wake detected by swap-ins (bpf)\n"),
                         (123.045, "info", "p-1: wake detected by swap-ins (bpf)"))
        self.assertEqual(G.parse_log_line("[99999.999] warn: x")[0], 99999.999)
        self.assertIsNone(G.parse_log_line("garbage"))
        self.assertIsNone(G.parse_log_line("<6>[  12.3] info: short ms"))

    def test_classify(self):
        c = G.classify
        self.assertEqual(c("p-0: wake detected by cpu usage"),
                         ("wake", "p-0", {"source": "cpu usage", "pages": None, "span_ms": None,
                                          "read_ms": None}))
        self.assertEqual(c("p-0: wake detected by swap-ins (bpf): 64 pages in 12 ms, read 3 ms "
                           "after the last"),
                         ("wake", "p-0", {"source": "swap-ins (bpf)", "pages": 64, "span_ms": 12,
                                          "read_ms": 3}))
        self.assertEqual(c("containers: idle: quiet for 5000 ms (last busy: cpu)"),
                         ("quiet", "containers", 5000))
        self.assertEqual(c("p-3: idle: paged out 1 MiB of anonymous memory (1 processes, 37 ms), "
                           "kept its idle working set of 0 KiB"),
                         ("paged", "p-3", {"mib": 1, "procs": 1, "ms": 37}))
        self.assertEqual(c("wakers: idle: resident 0 MiB after dropping 0 MiB of written-back "
                           "memory; 1 MiB freed since it went idle")[0], "settled")
        self.assertEqual(c("containers: tracking cgroup /pt-scale/c-00001 (id 5, besteffort, ...)"),
                         ("track", "containers", "/pt-scale/c-00001"))
        self.assertIsNone(c("p-0: wake: prefetched 1 MiB (tier staged 1 MiB, ...)"))

    def test_log_tail_reads_as_it_grows(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "log")
            with open(p, "w") as f:
                f.write("<6>[   10.000] info: p-0: wake detected by cpu usage\n<6>[   1")
            t = G.LogTail(p)
            t.poll()
            self.assertEqual(t.of("wake", "p-0")[0][1]["source"], "cpu usage")
            with open(p, "a") as f:
                f.write("1.500] info: p-0: idle: quiet for 5000 ms (last busy: cpu)\n")
            t.poll()
            self.assertEqual(t.of("quiet"), [(11.5, 5000)])
            self.assertEqual(t.lines, 2)
            self.assertEqual(t.last_ts(("quiet", "wake")), 11.5)
            self.assertIsNone(t.last_ts(("quiet",), exclude=("p-0",)))


class Matching(unittest.TestCase):
    def test_probe_file(self):
        self.assertEqual(G.read_bursts("1000.000 1200.500\n\n3000.000 3200.000\n"),
                         [(1.0, 1.2005), (3.0, 3.2)])

    def test_wakes(self):
        bursts = [(100.0, 100.2), (200.0, 200.2), (300.0, 300.2)]
        def w(source, span=None, read=None):
            return {"source": source, "pages": None if span is None else 64, "span_ms": span,
                    "read_ms": read}

        wakes = [(100.0345, w("swap-ins (bpf)", 30, 2)), (99.0, w("stale")),
                 (199.9995, w("cpu usage")),	# truncated to the ms: still this one
                 (250.0, w("late"))]		# the second burst's only line after it: taken
        m = G.match_wakes(bursts, wakes)
        self.assertAlmostEqual(m[0]["latency_ms"], 34.5, places=3)
        self.assertEqual(m[0]["source"], "swap-ins (bpf)")
        self.assertEqual((m[0]["span_ms"], m[0]["read_ms"]), (30, 2))
        self.assertIsNone(m[1]["span_ms"])
        self.assertEqual(m[1]["latency_ms"], 0.0)
        self.assertEqual(m[1]["source"], "cpu usage")
        self.assertIsNone(m[2])	# none after the third: missed

    def test_offloads(self):
        bursts = [(100.0, 100.2), (200.0, 200.2)]
        quiets = [105.4, 205.9]
        pageds = [(105.6, {"ms": 100, "mib": 1, "procs": 1})]
        m = G.match_offloads(bursts, quiets, pageds)
        self.assertAlmostEqual(m[0]["idle_verdict_s"], 5.2)
        self.assertAlmostEqual(m[0]["offload_start_s"], 5.3)
        self.assertAlmostEqual(m[1]["idle_verdict_s"], 5.7)
        self.assertIsNone(m[1]["offload_start_s"])

    def test_percentile_and_summary(self):
        v = list(range(1, 101))
        self.assertEqual(G.percentile(v, 50), 50)
        self.assertEqual(G.percentile(v, 99), 99)
        self.assertEqual(G.percentile([7.0], 99), 7.0)
        self.assertIsNone(G.percentile([], 50))
        self.assertEqual(G.summary([1.0, 2.0, 3.0]), {"n": 3, "p50": 2.0, "p99": 3.0, "max": 3.0})
        self.assertEqual(G.summary([])["n"], 0)


class Plan(unittest.TestCase):
    def test_counts(self):
        self.assertEqual(G.plan(10, 0, 4), (4, 0, 6))
        self.assertEqual(G.plan(10, 20, 4), (4, 2, 6))
        self.assertEqual(G.plan(3000, 20, 4), (4, 600, 2996))
        self.assertEqual(G.plan(3000, 5, 4), (4, 150, 2996))
        self.assertEqual(G.plan(2, 100, 4), (1, 1, 1))	# never more than N

    def test_eta(self):
        # No run yet: base plus a default per container.
        self.assertAlmostEqual(G.eta_s([], [10, 1000], 100), 200 + 0.15 * 1010)
        # Fitted: 1000 containers took 100 s over the base.
        self.assertAlmostEqual(G.eta_s([(1000, 200.0)], [3000], 100), 100 + 300)


def result(scanner, n, share, pct, rss, p99=20.0, ratio=25.0, **kw):
    r = {"n": n, "share_pct": share, "scanner": scanner, "settled": True, "settle_s": 30,
         "cpu": {"pct_one_cpu": pct, "user_s": 1, "sys_s": 1, "window_s": 120,
                 "main_thread_pct": pct / 2},
         "rss_kib": rss, "wake_latency_ms": {"n": 32, "p50": 5.0, "p99": p99, "max": p99},
         "wake_missed": 0, "idle_to_offload_s": {"p50": 5.5, "p99": 6.0}}
    r.update(kw)
    return r


class Report(unittest.TestCase):
    def write(self, d, scanner, n, runs, ratio=25.0, **kw):
        with open(os.path.join(d, f"scale-{scanner}-n{n}.json"), "w") as f:
            json.dump(dict({"scanner": scanner, "n": n, "runs": runs,
                            "calibrate": {"ratio": {"tick_ns_per_ctx": ratio}}}, **kw), f)

    def test_table_targets_and_check(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(d, "kmod", 10, [result("kmod", 10, 0, 2.0, 20000)])
            self.write(d, "kmod", 100, [result("kmod", 100, 0, 3.0, 24500)])
            self.write(d, "kmod", 1000, [result("kmod", 1000, 0, 10.0, 70000, p99=150.0),
                                         result("kmod", 1000, 20, 30.0, 72000)])
            self.write(d, "kmod", 3000, [], skipped="the guest has 100 MiB available")
            res = R.load(d)
            t = R.table(res)
            self.assertIn("| kmod | 1000 | 20% | 30.0 ", t)
            self.assertIn("skipped: the guest has 100 MiB", t)
            self.assertIn("| 0.4 |", t)	# 10% / 25: native-equivalent
            v = {k: (verdict, detail) for k, verdict, detail in R.targets(res)}
            self.assertEqual(v["kmod: CPU at 1,000 idle <= 2x CPU at 10"][0], "FAIL")
            self.assertEqual(v["kmod: CPU at 1,000 idle < 1% of a CPU, native-equivalent"][0],
                             "PASS")
            self.assertEqual(v["kmod: wake detection p99 < 100 ms at every N"][0], "FAIL")
            self.assertIn("N=1000 0%: 150.0 ms", v["kmod: wake detection p99 < 100 ms at every N"][1])
            # RSS per added container: 50 KiB from 10 to 100, 50.6 from 100 to 1000: linear.
            self.assertEqual(v["kmod: memory at most linear (RSS per added container)"][0], "PASS")
            self.assertEqual(R.check(res), [])
            self.assertEqual(R.did_table(res), "")	# runs without the counters

    def test_did_table_per_minute(self):
        with tempfile.TemporaryDirectory() as d:
            r = result("kmod", 1000, 0, 1.0, 70000)
            r["cpu"]["window_s"] = 120.0
            r["did"] = {"ticks": 240, "samples": 2000, "cgroup_walks": 1}
            self.write(d, "kmod", 1000, [r])
            t = R.did_table(R.load(d))
            self.assertIn("| kmod | 1000 | 0% | 120.0 | 1000.0 | - | - | - | 0.5 | - | - |", t)

    def test_superlinear_memory_and_failed_runs(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(d, "fallback", 10, [result("fallback", 10, 0, 1.0, 20000)])
            self.write(d, "fallback", 100, [result("fallback", 100, 0, 1.5, 20900)])
            self.write(d, "fallback", 1000, [result("fallback", 1000, 0, 1.9, 120000),
                                             {"n": 1000, "share_pct": 5, "error": "boom"}])
            res = R.load(d)
            v = {k: verdict for k, verdict, _ in R.targets(res)}
            self.assertEqual(v["fallback: memory at most linear (RSS per added container)"],
                             "FAIL")
            self.assertEqual(v["fallback: CPU at 1,000 idle <= 2x CPU at 10"], "PASS")
            self.assertIn("FAILED: boom", R.table(res))
            self.assertEqual(R.check(res), ["fallback N=1000 5%: boom"])

    def test_check_catches_a_silent_harness(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(R.check(R.load(d)), ["no run at all"])
            r = result("kmod", 10, 20, 1.0, 20000, settled=False, settle_problem="after 240 s")
            r["wake_latency_ms"] = {"n": 0}
            self.write(d, "kmod", 10, [r])
            probs = R.check(R.load(d))
            self.assertIn("kmod N=10 20%: no probe wake was detected", probs)
            self.assertIn("kmod N=10 20%: did not settle (after 240 s)", probs)


if __name__ == "__main__":
    unittest.main(verbosity=1)
