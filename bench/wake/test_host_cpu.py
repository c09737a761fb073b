#!/usr/bin/env python3
"""Unit tests of host_cpu.py's arithmetic: a counter read between two samples, and a wake's
window split into the vCPUs' time on a CPU, their stolen time and QEMU's other threads,
on samples made up here. Run by make unit."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_cpu  # noqa: E402

S = 1_000_000_000


def samples(rates, t0=1000.0, n=101, period=0.1):
    """n samples, @period s apart, of threads whose counters grow at @rates
    {tid: (on-CPU s per s, waiting s per s)}."""
    return [[t0 + i * period, {str(tid): [int(on * i * period * S), int(w * i * period * S)]
                               for tid, (on, w) in rates.items()}]
            for i in range(n)]


class At(unittest.TestCase):
    def test_interpolates_between_samples(self):
        sm = samples({7: (1.0, 0.0)})
        self.assertAlmostEqual(host_cpu.at(sm, 1000.05, 7, 0) / S, 0.05, places=6)

    def test_before_and_after_the_samples(self):
        sm = samples({7: (1.0, 0.0)}, n=11)
        self.assertEqual(host_cpu.at(sm, 900.0, 7, 0), 0)
        self.assertAlmostEqual(host_cpu.at(sm, 2000.0, 7, 0) / S, 1.0, places=6)

    def test_thread_not_yet_there_counts_zero(self):
        sm = samples({7: (1.0, 0.0)})
        self.assertEqual(host_cpu.at(sm, 1005.0, 8, 0), 0)


class Window(unittest.TestCase):
    def test_splits_vcpus_main_and_workers(self):
        # main loop 100 (0.2 CPU), vCPUs 101 and 102 (0.8 and 0.5 on, 0.2 and 0.1 stolen),
        # a worker 103 (0.05).
        sm = samples({100: (0.2, 0.0), 101: (0.8, 0.2), 102: (0.5, 0.1), 103: (0.05, 0.0)})
        w = host_cpu.window(sm, [101, 102], 100, 1002.0, 1007.0)
        self.assertEqual(w["s"], 5.0)
        self.assertAlmostEqual(w["vcpu_on_s"], 6.5, places=2)
        self.assertAlmostEqual(w["vcpu_stolen_s"], 1.5, places=2)
        self.assertAlmostEqual(w["qemu_main_s"], 1.0, places=2)
        self.assertAlmostEqual(w["qemu_workers_s"], 0.25, places=2)
        self.assertAlmostEqual(w["stolen_pct"], 100 * 1.5 / 8.0, delta=0.05 + 1e-9)


class Report(unittest.TestCase):
    def test_each_mark_with_its_first_request_and_a_cut_last_line(self):
        with tempfile.TemporaryDirectory() as d:
            sm = samples({100: (0.1, 0.0), 101: (1.0, 0.5)}, t0=0.0, n=201)
            with open(os.path.join(d, "host-cpu.jsonl"), "w") as f:
                f.write(json.dumps({"pid": 100, "vcpus": [101]}) + "\n")
                for s in sm:
                    f.write(json.dumps(s) + "\n")
                f.write('[20.1, {"100": [1')	# cut when the sampler was stopped
            mark = os.path.join(d, "mark-postgres-nopf")
            open(mark, "w").close()
            os.utime(mark, ns=(3 * S, 3 * S))
            with open(os.path.join(d, "wake-apps.json"), "w") as f:
                json.dump({"workloads": {"postgres": {"nopf": {"first_ms": 500}}}}, f)
            self.assertEqual(host_cpu.report(os.path.join(d, "nowhere")), 1)
            sys.stdout, out = open(os.devnull, "w"), sys.stdout
            try:
                self.assertEqual(host_cpu.report(d), 0)
            finally:
                sys.stdout.close()
                sys.stdout = out
            with open(os.path.join(d, "host-cpu.json")) as f:
                r = json.load(f)["postgres nopf"]
            self.assertEqual(r["first_ms"], 500)
            self.assertAlmostEqual(r["first_request"]["vcpu_on_s"], 0.5, places=2)
            self.assertAlmostEqual(r["5s"]["vcpu_stolen_s"], 2.5, places=2)


if __name__ == "__main__":
    unittest.main()
