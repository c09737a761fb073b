#!/usr/bin/env python3
"""Unit tests of the density benchmark's pure parts: the open-loop client's schedule and
its accounting of late requests, the statistics, the key distribution, Senpai's control
law, and the report's flatness rule. Run by make unit."""
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from openloop import OpenLoop, Zipf, percentile, pool_windows, schedule, summarize  # noqa: E402
import report  # noqa: E402
from report import density  # noqa: E402
from senpai import SenpaiLaw  # noqa: E402


class Stats(unittest.TestCase):
    def test_percentile_nearest_rank(self):
        v = list(range(1, 101))
        self.assertEqual(percentile(v, 50), 50)
        self.assertEqual(percentile(v, 99), 99)
        self.assertEqual(percentile(v, 100), 100)
        self.assertEqual(percentile([7], 99), 7)
        self.assertIsNone(percentile([], 50))

    def test_summarize(self):
        s = summarize([0.001 * i for i in range(1, 101)], 3, 10, 10)
        self.assertEqual(s["completed"], 100)
        self.assertEqual(s["failed"], 3)
        self.assertEqual(s["throughput_per_s"], 10.0)
        self.assertEqual(s["p99_ms"], 99.0)
        self.assertEqual(s["max_ms"], 100.0)

    def test_pool_windows(self):
        """The solo reference over several windows: every request of each, the throughput
        over their whole time, failures summed."""
        a = {"latencies_ms": [10.0] * 98 + [50.0, 60.0], "failed": 1}
        b = {"latencies_ms": [12.0] * 100, "failed": 0}
        r = pool_windows([a, b], 10, 10)
        self.assertEqual((r["completed"], r["failed"], r["windows"]), (200, 1, 2))
        self.assertEqual(r["throughput_per_s"], 10.0)
        self.assertEqual(r["p99_ms"], 12.0)	# rank 198 of 200: a's tail is 2 of them
        self.assertEqual(r["max_ms"], 60.0)
        self.assertEqual(pool_windows([a], 10, 10)["p99_ms"], 50.0)

    def test_schedule_is_fixed_rate(self):
        t = schedule(100.0, 20, 2)
        self.assertEqual(len(t), 40)
        self.assertAlmostEqual(t[1] - t[0], 0.05)
        self.assertAlmostEqual(t[-1], 100.0 + 39 / 20)

    def test_zipf_is_skewed_and_in_range(self):
        z = Zipf(1000, seed=3)
        draws = [z.next() for _ in range(20000)]
        self.assertTrue(all(0 <= d < 1000 for d in draws))
        head = sum(d < 10 for d in draws) / len(draws)
        self.assertGreater(head, 0.25)		# 1% of the keys, about a third of the draws
        self.assertGreater(len(set(draws)), 500)	# and a long tail


class OpenLoopClient(unittest.TestCase):
    def test_a_stall_is_charged_to_every_request_it_held_back(self):
        """One worker, a server that stalls 0.5 s once: the requests due during the stall
        count from when they were due (no coordinated omission)."""
        calls = []
        lock = threading.Lock()

        def tx(state, item):
            with lock:
                calls.append(item)
                first = len(calls) == 1
            time.sleep(0.5 if first else 0.001)
            return True

        res = OpenLoop(lambda: None, tx, lambda: 1, rate=50, workers=1).run(1.0)
        self.assertEqual(res["completed"], 50)
        self.assertEqual(res["failed"], 0)
        lat = sorted(res["latencies_ms"])
        # ~25 requests were due while the first one stalled: all of them late, the first
        # of them by almost the whole stall.
        self.assertGreater(sum(x > 100 for x in lat), 15)
        self.assertGreater(lat[-2], 400)

    def test_failures_and_exceptions_count(self):
        n = [0]

        def tx(state, item):
            n[0] += 1
            if n[0] % 2:
                raise OSError("reset")
            return n[0] % 4 == 0

        res = OpenLoop(lambda: object(), tx, lambda: 0, rate=40, workers=2).run(0.5)
        self.assertEqual(res["completed"] + res["failed"], 20)
        self.assertGreater(res["failed"], 10)


class Senpai(unittest.TestCase):
    def test_probes_after_grace_then_backs_off_under_pressure(self):
        law = SenpaiLaw({"interval": 3, "pressure_us": 1000})
        # No stall: nothing for the grace ticks, then a tightening of at most max_probe.
        self.assertEqual([law.tick(0) for _ in range(3)], [None, None, None])
        adj = law.tick(0)
        self.assertAlmostEqual(adj, -0.01)
        # Stall far over the target: loosen at once, bounded by max_backoff.
        self.assertAlmostEqual(law.tick(1_000_000), 1.0)
        # Twice the target: (2/20)^2 = 1%.
        law2 = SenpaiLaw({"interval": 3, "pressure_us": 1000})
        self.assertAlmostEqual(law2.tick(2000), 0.01)

    def test_probe_scales_with_how_far_below_target(self):
        law = SenpaiLaw({"interval": 1, "pressure_us": 1000})
        law.tick(0)				# grace
        self.assertAlmostEqual(law.tick(500), -(2 / 10) ** 2 * 0.01)

    def test_clamp(self):
        law = SenpaiLaw({"min_size": 8 << 20})
        self.assertEqual(law.clamp(1), 8 << 20)
        self.assertEqual(law.clamp((64 << 20) + 5), 64 << 20)


class Report(unittest.TestCase):
    @staticmethod
    def step(n, tput, p99, alive=True, noise_failed=0):
        return {"noise": n, "crit_alive": alive, "noise_alive": n,
                "noise_client": {"failed": noise_failed},
                "crit": {"throughput_per_s": tput, "offered_per_s": 25, "p99_ms": p99}}

    def test_density_at_slo(self):
        """Within 110% of solo p99 and 95% of solo throughput, up to the first miss."""
        s = self.step
        self.assertEqual(density([s(0, 25, 10), s(2, 25, 10.9), s(4, 24, 11), s(6, 25, 11.2),
                                  s(8, 25, 10)]), 4)
        self.assertEqual(density([s(0, 25, 10), s(2, 23.5, 10)]), 0)		# throughput
        self.assertEqual(density([s(0, 25, 10), s(2, 25, 10, alive=False)]), 0)
        self.assertEqual(density([s(0, 25, 10), s(2, 25, 10, noise_failed=1)]), 0)
        self.assertIsNone(density([s(2, 25, 10)]))			# no solo point

    def test_carry_from_csv(self):
        """A run written to the CSV and carried back has the same density; a run the new
        results have is not carried."""
        import csv
        import tempfile

        def full(n, tput, p99):
            st = self.step(n, tput, p99)
            st["crit"].update(failed=0, min_ms=1, p50_ms=2, p95_ms=3, max_ms=p99 + 1,
                              completed=True)
            st.update(crit_stall_ms={"crit-db": 5}, noise_resident_MiB=10, swapped_MiB=0,
                      on_tier_MiB=0, device_written_MiB=0, pagetierd_cpu_s=None,
                      mem_available_MiB=100, oom_kill=0)
            st["noise_client"].update(p50_ms=1, p99_ms=2)
            return st
        run = {"kernel": "6.12", "profile": "cloud", "config": "swap",
               "steps": [full(0, 25, 10), full(2, 25, 10.5), full(4, 25, 120)]}
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, newline="") as f:
            w = csv.DictWriter(f, fieldnames=report.FIELDS)
            w.writeheader()
            for row in report.rows([run]):
                w.writerow(row)
        try:
            back = report.carried(f.name, set())
            self.assertEqual(len(back), 1)
            self.assertTrue(back[0]["carried"])
            self.assertEqual(density(back[0]["steps"]), density(run["steps"]))
            self.assertIn("over 10x solo", back[0]["stopped"])
            self.assertEqual(report.carried(f.name, {("6.12", "cloud", "swap")}), [])
        finally:
            os.unlink(f.name)


class HttpGetClient(unittest.TestCase):
    """The critical client's HTTP GET (tests/e2e/servers.py) against a local HTTP/1.1
    server that closes the connection after every third answer, as nginx does after its
    keep-alive limit."""

    def setUp(self):
        import http.server
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "..", "..", "tests", "e2e"))
        served = [0]

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                served[0] += 1
                body = self.path.encode() * 1000
                self.send_response(200 if self.path.startswith("/f") else 404)
                self.send_header("Content-Length", str(len(body)))
                if served[0] % 3 == 0:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def tearDown(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def test_keep_alive_closes_and_errors(self):
        from servers import HttpGet
        h = HttpGet(self.httpd.server_address[1])
        for i in range(10):
            self.assertEqual(h.get(f"/f{i}.bin"), f"/f{i}.bin".encode() * 1000)
        with self.assertRaises(RuntimeError):
            h.get("/missing")
        self.assertEqual(h.get("/f1.bin"), b"/f1.bin" * 1000)
        h.close()


if __name__ == "__main__":
    unittest.main()
