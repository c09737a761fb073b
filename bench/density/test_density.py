#!/usr/bin/env python3
"""Unit tests of the density benchmark's host-testable parts: the statistics, Senpai's
control law, the report's flatness rule, and the load clients (loadgen, and guest.py's
wrappers of it) against small servers in this process. Run by make unit, which builds
build/bench/density/loadgen first."""
import json
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import damon_reclaim  # noqa: E402
import guest  # noqa: E402
from guest import value  # noqa: E402
from openloop import percentile, pool_windows, summarize  # noqa: E402
import repeats  # noqa: E402
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


class TopTasks(unittest.TestCase):
    def test_most_cpu_first_and_only_what_ran(self):
        before = {"redis-server": 100, "kworkers": 50, "nginx": 10, "idle": 7}
        after = {"redis-server": 400, "kworkers": 250, "nginx": 10, "idle": 7, "new": 100}
        self.assertEqual(list(guest.top_tasks(before, after, 100).items()),
                         [("redis-server", 3.0), ("kworkers", 2.0), ("new", 1.0)])

    def test_at_most_n(self):
        after = {f"t{i}": i for i in range(1, 30)}
        self.assertEqual(len(guest.top_tasks({}, after, 100, n=5)), 5)


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


class DamonReclaim(unittest.TestCase):
    def test_parameters_scale_min_age_and_take_overrides(self):
        p = damon_reclaim.parameters(4)
        self.assertEqual(p["min_age"], 30_000_000)
        self.assertEqual((p["wmarks_high"], p["wmarks_mid"], p["wmarks_low"]), (300, 200, 5))
        self.assertEqual(p["quota_ms"], 10)		# the module's default, kept
        p = damon_reclaim.parameters(4, "min_age=5000000 quota_ms=100")
        self.assertEqual((p["min_age"], p["quota_ms"]), (5_000_000, 100))
        with self.assertRaises(ValueError):
            damon_reclaim.parameters(4, "min_ages=1")

    def test_regions_of_the_last_aggregation(self):
        line = ("  kdamond.0-222 [001] ..... 1.{t}: damon_aggregated: target_id=0 "
                "nr_regions={n} {lo}-{hi}: {acc} {age}")
        mib = 1 << 20
        lines = [line.format(t=0, n=2, lo=mib, hi=3 * mib, acc=0, age=10),
                 line.format(t=0, n=2, lo=3 * mib, hi=5 * mib, acc=4, age=2),
                 # the next aggregation: three regions, one idle for 40 s, one for 6 s
                 line.format(t=1, n=3, lo=mib, hi=2 * mib, acc=0, age=400),
                 line.format(t=1, n=3, lo=2 * mib, hi=3 * mib, acc=0, age=60),
                 line.format(t=1, n=3, lo=3 * mib, hi=5 * mib, acc=1, age=3),
                 "  python3-1 [000] ..... 1.2: some_other_event: x=1"]
        r = damon_reclaim.summarize_regions(lines, 0.1)
        self.assertEqual(r["nr_regions"], 3)
        self.assertEqual(r["accessed_MiB"], 2)
        self.assertEqual(r["idle_MiB_by_age"], {"lt_5s": 0, "5_30s": 1, "ge_30s": 1})
        self.assertEqual(r["oldest_idle_s"], 40.0)
        self.assertIsNone(damon_reclaim.summarize_regions([], 0.1))


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

    def test_density_against_the_shared_solo(self):
        """The shared solo is the median of the configurations' solo figures; a run whose
        own solo is slow is held to it."""
        s = self.step
        runs = [{"kernel": "6.12", "profile": "cloud", "config": c, "steps": st, "run": "a"}
                for c, st in (("swap", [s(0, 25, 10), s(4, 25, 12)]),
                              ("senpai", [s(0, 25, 12), s(4, 25, 12)]),
                              ("pagetier", [s(0, 25, 16), s(4, 25, 14)]))]
        # Another run's configuration (another day) is not pooled into run a's solo.
        other = {"kernel": "6.12", "profile": "cloud", "config": "damon", "run": "b",
                 "steps": [s(0, 25, 30), s(4, 25, 30)], "carried": True}
        solos = report.shared_solo(runs + [other])
        shared = solos[("6.12", "cloud", "a")]
        self.assertEqual(shared["crit"]["p99_ms"], 12)
        self.assertEqual(solos[("6.12", "cloud", "b")]["crit"]["p99_ms"], 30)
        self.assertEqual(density(runs[2]["steps"]), 4)			# 14 <= 1.1 x 16
        self.assertEqual(report.density_against(runs[2]["steps"], shared), 0)	# 14 > 1.1 x 12
        self.assertEqual(report.density_against(runs[1]["steps"], shared), 4)
        self.assertIsNone(report.density_against(runs[0]["steps"], None))

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
        run = {"kernel": "6.12", "profile": "cloud", "config": "swap", "run": "2026-12-01",
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
            self.assertEqual(back[0]["run"], "2026-12-01")
            self.assertEqual(density(back[0]["steps"]), density(run["steps"]))
            self.assertIn("over 10x solo", back[0]["stopped"])
            self.assertEqual(report.carried(f.name, {("6.12", "cloud", "swap")}), [])
        finally:
            os.unlink(f.name)


class Repeats(unittest.TestCase):
    """repeats.py: one ranking from several runs, their requests pooled N by N."""
    @staticmethod
    def step(n, lat, failed=0, noise_failed=0, solo_windows=0, alive=True):
        return {"noise": n, "crit_alive": alive, "noise_alive": n,
                "noise_client": {"failed": noise_failed}, "crit_latencies_ms": lat,
                "solo_windows": [{}] * solo_windows,
                "crit": {"offered_per_s": 10, "failed": failed, "throughput_per_s": 10,
                         "p99_ms": percentile(sorted(lat), 99)}}

    def density_run(self, config, steps):
        return {"kernel": "6.12", "profile": "cloud", "config": config, "measure_s": 10,
                "steps": steps}

    def test_pool_steps(self):
        """Every request of each repetition; the solo's windows count in its time; the
        failures and noise errors add up; alive only if alive in all."""
        a = self.step(0, [10.0] * 296 + [40.0] * 4, solo_windows=3)
        b = self.step(0, [10.0] * 300, failed=1, noise_failed=2, solo_windows=3)
        p = repeats.pool_steps([a, b], 10)
        self.assertEqual(p["crit"]["completed"], 600)
        self.assertEqual(p["crit"]["throughput_per_s"], 10.0)	# 600 over 2 x 3 x 10 s
        self.assertEqual(p["crit"]["p99_ms"], 10.0)		# a's slow 4 of 600: under 1%
        self.assertEqual(repeats.pool_steps([a], 10)["crit"]["p99_ms"], 40.0)
        self.assertEqual((p["crit"]["failed"], p["noise_client"]["failed"]), (1, 2))
        self.assertFalse(repeats.pool_steps([a, self.step(0, [1.0], alive=False)], 10)
                         ["crit_alive"])

    def test_a_lucky_run_does_not_decide(self):
        """Run 1's slow solo lets its N = 4 pass on its own; pooled with run 2, whose N = 4
        is slow, it does not: the pooled density is 0, each run's own 4 and 0."""
        fast, slow = [10.0] * 100, [10.0] * 95 + [30.0] * 5
        rep1 = [self.density_run("swap", [self.step(0, [10.0] * 95 + [20.0] * 5, solo_windows=1),
                                  self.step(4, [10.0] * 98 + [20.0] * 2)])]
        rep2 = [self.density_run("swap", [self.step(0, fast, solo_windows=1), self.step(4, slow)])]
        r = repeats.analyse([rep1, rep2])[("6.12", "cloud")]["configs"]["swap"]
        self.assertEqual(r["own"], [4, 0])
        self.assertEqual(r["pooled_own"], 0)
        self.assertEqual(r["ratios"][4], [1.0, 3.0])

    def test_a_step_after_a_stop_is_out(self):
        """A repetition that guest.py stopped at N = 4 caps the pooled sweep there."""
        ok = [10.0] * 100
        rep1 = [self.density_run("pagetier", [self.step(0, ok, solo_windows=1), self.step(4, ok),
                                      self.step(8, ok)])]
        rep2 = [self.density_run("pagetier", [self.step(0, ok, solo_windows=1), self.step(4, ok)])]
        rep2[0]["stopped"] = "N=4: critical p99 over 10x solo"
        r = repeats.analyse([rep1, rep2])[("6.12", "cloud")]["configs"]["pagetier"]
        self.assertEqual([s["noise"] for s in r["pooled"]], [0, 4])
        self.assertEqual(r["pooled_own"], 4)
        self.assertTrue(r["capped"])
        self.assertIn("a run stopped early", repeats.markdown(
            repeats.analyse([rep1, rep2]), ["a", "b"]))

    def test_a_longer_sweep_extends_the_pool(self):
        """A repetition run with more STEPS (to N = 8) pools alone beyond the others' planned
        end, and says so; its slow N = 8 decides there, the others' absence does not."""
        ok, slow = [10.0] * 100, [10.0] * 95 + [30.0] * 5
        short = [self.density_run("swap", [self.step(0, ok, solo_windows=1), self.step(4, ok)])]
        long = [self.density_run("swap", [self.step(0, ok, solo_windows=1), self.step(4, ok),
                                          self.step(8, ok)])]
        r = repeats.analyse([short, long])[("6.12", "cloud")]["configs"]["swap"]
        self.assertEqual([(s["noise"], s["repetitions"]) for s in r["pooled"]],
                         [(0, 2), (4, 2), (8, 1)])
        self.assertEqual(r["pooled_own"], 8)
        self.assertFalse(r["capped"])
        self.assertIn("8 (1 of 2 runs at N = 8)", repeats.markdown(
            repeats.analyse([short, long]), ["a", "b"]))
        long[0]["steps"][2] = self.step(8, slow)
        r = repeats.analyse([short, long])[("6.12", "cloud")]["configs"]["swap"]
        self.assertEqual(r["pooled_own"], 4)


# --- the load clients: build/bench/density/loadgen against servers in this process -------


def dead_port():
    """A port nothing listens on (bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class RespServer(socketserver.ThreadingTCPServer):
    """redis's part, GET only: c:<k> is value(b"c:", k, 4000), o:<i> value(b"o:", i, the size
    of object i of @noise_sizes ([(count, bytes)] numbered on, as guest.noise_sizes() gives
    them)); anything else nil. @corrupt: keys answered with their last byte wrong; @short:
    keys answered one byte short. @stall_first: seconds the first answer waits. Counts
    the GETs of each key."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, noise_sizes=(), corrupt=(), short=(), stall_first=0,
                 db_size=guest.CRIT_VALUE):
        self.db_size = db_size
        self.sizes = [size for n, size in noise_sizes for _ in range(n)]
        self.corrupt, self.short, self.stall = set(corrupt), set(short), stall_first
        self.counts, self.lock = {}, threading.Lock()
        super().__init__(("127.0.0.1", 0), RespHandler)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def answer(self, key):
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + 1
            stall, self.stall = self.stall, 0
        time.sleep(stall)
        kind, _, i = key.partition(b":")
        if kind == b"c" and i.isdigit():
            v = value(b"c:", int(i), self.db_size)
        elif kind == b"o" and i.isdigit() and int(i) < len(self.sizes):
            v = value(b"o:", int(i), self.sizes[int(i)])
        else:
            return b"$-1\r\n"
        if key in self.corrupt:
            v = v[:-1] + bytes([v[-1] ^ 1])
        if key in self.short:
            v = v[:-1]
        return b"$%d\r\n%s\r\n" % (len(v), v)

    def keys(self, kind):
        with self.lock:
            return {k: n for k, n in self.counts.items() if k.startswith(kind)}

    def stop(self):
        self.shutdown()
        self.server_close()


class RespHandler(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            line = self.rfile.readline()
            if not line.startswith(b"*"):
                return
            args = []
            for _ in range(int(line[1:])):
                n = int(self.rfile.readline()[1:])
                args.append(self.rfile.read(n + 2)[:-2])
            if len(args) != 2 or args[0].upper() != b"GET":
                self.wfile.write(b"-ERR unknown command\r\n")
            else:
                self.wfile.write(self.server.answer(args[1]))


class WebServer:
    """nginx's part: HTTP/1.1 keep-alive, /f<j>.bin is value(b"f", j, 16384). Every third
    answer closes its connection, alternately with Connection: close and silently (as an
    idle or keep-alive limit does: the client finds out on its next request). @corrupt:
    paths answered with their last byte wrong. Counts the answers of each path."""

    def __init__(self, corrupt=(), size=guest.WEB_FILE_SIZE):
        import http.server
        self.counts, self.closed_silently, self.size = {}, 0, size
        lock, served = threading.Lock(), [0]
        srv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                with lock:
                    served[0] += 1
                    n = served[0]
                    srv.counts[self.path] = srv.counts.get(self.path, 0) + 1
                name = os.path.basename(self.path)
                ok = name.startswith("f") and name.endswith(".bin") and name[1:-4].isdigit()
                body = value(b"f", int(name[1:-4]), srv.size) if ok else b"no"
                if self.path in corrupt:
                    body = body[:-1] + bytes([body[-1] ^ 1])
                self.send_response(200 if ok else 404)
                self.send_header("Content-Length", str(len(body)))
                if n % 6 == 3:
                    self.send_header("Connection", "close")
                if n % 3 == 0:
                    self.close_connection = True
                    if n % 6 == 0:
                        with lock:
                            srv.closed_silently += 1
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class SilentServer:
    """Accepts connections and never answers: a stalled server."""

    def __init__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(64)
        self.port, self.conns = self.s.getsockname()[1], []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                self.conns.append(self.s.accept()[0])
            except OSError:
                return

    def stop(self):
        self.s.close()
        for c in self.conns:
            c.close()


def need_loadgen(test):
    if not os.access(guest.LOADGEN, os.X_OK):
        test.fail(f"{guest.LOADGEN} is missing: run make build/bench/density/loadgen")


class LoadgenCritical(unittest.TestCase):
    """loadgen critical: the open loop, the checks of every answer, the accounting."""

    def setUp(self):
        need_loadgen(self)
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.stop()

    def serve(self, server):
        self.servers.append(server)
        return server

    def critical(self, redis_port, http_port, rate=50, duration=2, grace=5, db_items=1000,
                 web_files=100, extra=(), db_size=4000, web_size=16384):
        argv = [guest.LOADGEN, "critical", "--redis-port", str(redis_port),
                "--http-port", str(http_port), "--rate", str(rate), "--duration", str(duration),
                "--grace", str(grace), "--db-items", str(db_items),
                "--db-value-size", str(db_size), "--web-files", str(web_files),
                "--web-size", str(web_size), "--zipf-s", "0.99",
                "--seed-db", "11", "--seed-web", "12"] + list(extra)
        t = time.monotonic()
        r = subprocess.run(argv, capture_output=True, text=True, timeout=duration + grace + 30)
        elapsed = time.monotonic() - t
        self.assertEqual(r.returncode, 0, r.stderr)
        res = json.loads(r.stdout)
        self.assertEqual(set(res), {"completed", "failed", "latencies_ms"})
        self.assertEqual(len(res["latencies_ms"]), res["completed"])
        self.assertEqual(res["completed"] + res["failed"], int(duration * rate))
        return res, elapsed

    def test_every_transaction_answered_and_checked(self):
        """Rate 50 for 2 s: 100 transactions, each a GET of both servers, the web server's
        connections closed every third answer (half of them without telling)."""
        db, web = self.serve(RespServer()), self.serve(WebServer())
        res, elapsed = self.critical(db.port, web.port)
        self.assertEqual((res["completed"], res["failed"]), (100, 0))
        self.assertTrue(all(0 < x < 2000 for x in res["latencies_ms"]), res["latencies_ms"])
        self.assertLess(elapsed, 2 + 2)
        self.assertEqual(sum(db.keys(b"c:").values()), 100)
        self.assertEqual(sum(web.counts.values()), 100)
        # Connections the server closed silently were opened again, the request resent.
        self.assertGreater(web.closed_silently, 5)
        # Zipf(0.99) over 1,000 keys: the 10 hottest are about 40% of the draws, and a tail.
        keys = [int(k[2:]) for k, n in db.keys(b"c:").items() for _ in range(n)]
        self.assertTrue(all(0 <= k < 1000 for k in keys))
        self.assertGreater(sum(k < 10 for k in keys), 20)
        self.assertGreater(len(set(keys)), 30)

    def test_wrong_values_fail(self):
        """One wrong byte in c:1, and in /f0.bin: each transaction that read one failed,
        and only those (a transaction whose redis GET failed does not send its HTTP GET)."""
        db = self.serve(RespServer(corrupt={b"c:1"}))
        web = self.serve(WebServer(corrupt={"/f0.bin"}))
        res, _ = self.critical(db.port, web.port, duration=1, db_items=2, web_files=2)
        bad_db, bad_web = db.keys(b"c:").get(b"c:1", 0), web.counts.get("/f0.bin", 0)
        self.assertGreater(bad_db, 0)
        self.assertGreater(bad_web, 0)
        self.assertEqual(res["failed"], bad_db + bad_web)
        self.assertEqual(res["completed"], 50 - bad_db - bad_web)

    def test_values_of_every_length(self):
        """value() as guest.py has it, cut inside the item's name, inside and at the end of
        its first pattern, and long; keys with 1 to 5 digits."""
        db, web = self.serve(RespServer()), self.serve(WebServer())
        for size in (1, 4, 9, 13, 14, 100, 4001):
            db.db_size, web.size = size, size + 1
            res, _ = self.critical(db.port, web.port, rate=100, duration=0.2, db_items=99999,
                                   web_files=99999, db_size=size, web_size=size + 1)
            self.assertEqual((res["completed"], res["failed"]), (20, 0), size)
        res, _ = self.critical(db.port, web.port, rate=100, duration=0.2, db_size=4002,
                               web_size=4002)
        self.assertEqual((res["completed"], res["failed"]), (0, 20))	# wrong lengths

    def test_dead_ports_fail_every_request(self):
        res, elapsed = self.critical(dead_port(), dead_port(), duration=1, grace=2)
        self.assertEqual((res["completed"], res["failed"]), (0, 50))
        self.assertLess(elapsed, 1 + 2)

    def test_unanswered_requests_fail_at_the_grace(self):
        """A server that never answers: the requests still out grace seconds after the last
        was due count as failed, and the client does not wait for its 60 s timeouts."""
        silent = self.serve(SilentServer())
        res, elapsed = self.critical(silent.port, silent.port, rate=20, duration=1, grace=1,
                                     extra=["--workers", "4"])
        self.assertEqual((res["completed"], res["failed"]), (0, 20))
        self.assertGreater(elapsed, 1 + 1 - 0.1)
        self.assertLess(elapsed, 1 + 1 + 1.5)

    def test_a_stall_is_charged_to_every_request_it_held_back(self):
        """One worker, a redis that stalls 0.5 s once: the requests due during the stall
        count from when they were due (no coordinated omission)."""
        db, web = self.serve(RespServer(stall_first=0.5)), self.serve(WebServer())
        res, _ = self.critical(db.port, web.port, duration=1, extra=["--workers", "1"])
        self.assertEqual((res["completed"], res["failed"]), (50, 0))
        lat = sorted(res["latencies_ms"])
        # ~25 requests were due while the first one stalled: all of them late, the first
        # of them by almost the whole stall.
        self.assertGreater(sum(x > 100 for x in lat), 15)
        self.assertGreater(lat[-2], 400)

    def test_bad_arguments(self):
        ok = ["--redis-port", "1", "--http-port", "2", "--rate", "5", "--duration", "1",
              "--db-items", "10", "--web-files", "10"]
        bad = [[], ["frob"], ["critical"], ["critical"] + ok[2:],
               ["critical"] + ok + ["--rate", "6"], ["critical"] + ok[:5] + ["0"] + ok[6:],
               ["critical"] + ok[:1] + ["x"] + ok[2:], ["critical"] + ok + ["--frob", "1"],
               ["critical"] + ok + ["--workers", "0"], ["critical"] + ok + ["--grace"],
               ["critical"] + ok + ["stray"],
               ["noise"], ["noise", "--sizes", "5"], ["noise", "--sizes", "1:0"],
               ["noise", "--sizes", "1:10,"], ["noise", "--sizes", "1:10", "--sleep-ms", "-1"]]
        for argv in bad:
            r = subprocess.run([guest.LOADGEN] + argv, capture_output=True, text=True,
                               timeout=10, input="")
            self.assertNotEqual(r.returncode, 0, argv)
            self.assertEqual(r.stdout, "", argv)
            self.assertIn("loadgen", r.stderr, argv)
        r = subprocess.run([guest.LOADGEN, "noise", "--sizes", "1:10"], input="frob\n",
                           capture_output=True, text=True, timeout=10)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("unknown command 'frob'", r.stderr)


class LoadgenNoise(unittest.TestCase):
    """loadgen noise: one GET o:<i> every sleep-ms from a random server, results by take."""

    SIZES = [(3, 1000), (2, 5000)]

    def setUp(self):
        need_loadgen(self)
        self.p = subprocess.Popen([guest.LOADGEN, "noise", "--sleep-ms", "150", "--sizes",
                                   ",".join(f"{n}:{s}" for n, s in self.SIZES), "--seed", "7"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.servers = []

    def tearDown(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        self.p.stdin.close()
        self.p.stdout.close()
        for s in self.servers:
            s.stop()

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def take(self):
        self.cmd("take")
        return json.loads(self.p.stdout.readline())

    def test_one_object_every_sleep(self):
        self.assertEqual(self.take(), {"latencies_ms": [], "failed": 0})	# no server yet
        a, b = RespServer(self.SIZES), RespServer(self.SIZES)
        self.servers += [a, b]
        self.cmd(f"add {a.port}")
        self.cmd(f"add {b.port}")
        time.sleep(1.0)
        t = self.take()
        self.assertEqual(t["failed"], 0)
        self.assertTrue(4 <= len(t["latencies_ms"]) <= 8, t)
        self.assertTrue(all(0 < x < 1000 for x in t["latencies_ms"]), t)
        keys = {**a.keys(b"o:"), **b.keys(b"o:")}
        self.assertTrue(set(keys) <= {b"o:%d" % i for i in range(5)}, keys)
        self.assertEqual(sum(a.keys(b"o:").values()) + sum(b.keys(b"o:").values()),
                         len(t["latencies_ms"]))
        time.sleep(0.2)
        self.assertLessEqual(len(self.take()["latencies_ms"]), 3)	# reset by the take
        self.cmd("quit")
        self.assertEqual(self.p.wait(5), 0)

    def test_wrong_size_and_dead_server_fail(self):
        srv = RespServer(self.SIZES, short={b"o:1", b"o:3"})
        self.servers.append(srv)
        self.cmd(f"add {srv.port}")
        time.sleep(1.5)
        t = self.take()
        counts = srv.keys(b"o:")
        bad = counts.get(b"o:1", 0) + counts.get(b"o:3", 0)
        self.assertEqual(t["failed"], bad)
        self.assertEqual(len(t["latencies_ms"]), sum(counts.values()) - bad)
        self.assertGreater(sum(counts.values()), 6)
        # An object of the wrong group's size (o:3 is 5000 bytes, one short) counts too.
        self.assertGreater(bad, 0)

    def test_dead_server_and_end_of_input(self):
        self.cmd(f"add {dead_port()}")
        time.sleep(0.8)
        t = self.take()
        self.assertEqual(t["latencies_ms"], [])
        self.assertTrue(4 <= t["failed"] <= 7, t)
        self.p.stdin.close()
        self.assertEqual(self.p.wait(5), 0)


class GuestClients(unittest.TestCase):
    """guest.py's wrappers of loadgen: what measure() gets from them."""

    def setUp(self):
        need_loadgen(self)
        self.db, self.web = RespServer(guest.noise_sizes(1)), WebServer()

    def tearDown(self):
        self.db.stop()
        self.web.stop()

    def test_critical_windows(self):
        c = guest.CriticalClient(self.db.port, self.web.port, 40, 1000, 100, mlock=False)
        res = c.run(1)
        self.assertEqual((res["completed"], res["failed"], res["offered_per_s"]), (40, 0, 40))
        self.assertEqual(len(res["latencies_ms"]), 40)
        self.assertEqual(res["max_ms"], max(res["latencies_ms"]))
        self.assertTrue(0 <= c.last_cpu_s < 1, c.last_cpu_s)
        first = dict(self.db.keys(b"c:"))
        c.run(1)
        second = {k: n - first.get(k, 0) for k, n in self.db.keys(b"c:").items()
                  if n > first.get(k, 0)}
        self.assertEqual(sum(second.values()), 40)
        self.assertNotEqual(first, second)	# a seed of its own per window

    def test_noise(self):
        n = guest.NoiseClient(guest.noise_sizes(1), mlock=False)
        n.start()
        try:
            n.add(self.db.port)
            time.sleep(0.8)
            lat, failed = n.take()
            self.assertEqual(failed, 0)
            self.assertTrue(3 <= len(lat) <= 7, lat)
            self.assertTrue(all(0 < x < 1 for x in lat), lat)	# seconds
            self.assertGreaterEqual(n.cpu_seconds(), 0)
        finally:
            n.stop()
        self.assertEqual(n.proc.returncode, 0)


if __name__ == "__main__":
    unittest.main()
