"""The critical service's open-loop client and the latency statistics (pure, host-tested).

Open loop: request i is due at start + i / rate whatever happened to the ones before it. A
pool of workers sends them; when every worker is busy a due request waits, and its latency
counts from when it was due, not from when a worker took it (no coordinated omission: a
stalled server is charged for every request it held back).
"""
import bisect
import math
import queue
import random
import threading
import time


def percentile(sorted_values, p):
    """The p-th percentile (0 < p <= 100) of an ascending list, nearest rank; None if empty."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def summarize(latencies, failures, duration_s, offered_rate):
    """Throughput and latency figures of one measuring window (latencies in seconds)."""
    lat = sorted(latencies)
    ms = (lambda x: None if x is None else round(x * 1000, 2))
    return {
        "offered_per_s": offered_rate,
        "completed": len(lat),
        "failed": failures,
        "throughput_per_s": round(len(lat) / duration_s, 2) if duration_s > 0 else 0.0,
        "min_ms": ms(lat[0] if lat else None),
        "p50_ms": ms(percentile(lat, 50)),
        "p95_ms": ms(percentile(lat, 95)),
        "p99_ms": ms(percentile(lat, 99)),
        "max_ms": ms(lat[-1] if lat else None),
    }


def pool_windows(windows, duration_s, offered_rate):
    """One summary over several measuring windows of the same load, each given as
    OpenLoop.run returns it (latencies_ms and failed): their requests together. A 40 s
    window's p99 rests on its 16 slowest requests, so the solo reference of the SLO is
    pooled from several."""
    lat = [x / 1000 for w in windows for x in w["latencies_ms"]]
    res = summarize(lat, sum(w["failed"] for w in windows), duration_s * len(windows),
                    offered_rate)
    res["windows"] = len(windows)
    return res


class Zipf:
    """Item indices 0..n-1 with P(i) proportional to 1/(i+1)^s: a few hot, a long cold tail."""

    def __init__(self, n, s=0.99, seed=1):
        self.cum = []
        total = 0.0
        for i in range(n):
            total += 1.0 / (i + 1) ** s
            self.cum.append(total)
        self.rng = random.Random(seed)

    def next(self):
        return bisect.bisect_left(self.cum, self.rng.random() * self.cum[-1])


def schedule(start, rate, duration_s):
    """When each request of the window is due: start + i / rate, for i while < duration."""
    n = int(duration_s * rate)
    return [start + i / rate for i in range(n)]


class OpenLoop:
    """Sends transaction(worker_state, item) at a fixed rate for duration_s with @workers
    threads; make_state() gives each worker its connections. Returns summarize()'s dict
    plus the raw latencies."""

    def __init__(self, make_state, transaction, keys, rate, workers=16):
        self.make_state, self.transaction, self.keys = make_state, transaction, keys
        self.rate, self.workers = rate, workers

    def run(self, duration_s, grace_s=30):
        jobs = queue.Queue()
        lat, lock = [], threading.Lock()
        failures = [0]

        def worker():
            state = None
            while True:
                job = jobs.get()
                if job is None:
                    return
                due, item = job
                try:
                    if state is None:
                        state = self.make_state()
                    ok = self.transaction(state, item)
                except Exception:	# a broken connection is a failed request
                    ok, state = False, None
                done = time.monotonic()
                with lock:
                    if ok:
                        lat.append(done - due)
                    else:
                        failures[0] += 1

        threads = [threading.Thread(target=worker, daemon=True) for _ in range(self.workers)]
        for t in threads:
            t.start()
        start = time.monotonic() + 0.05
        for due in schedule(start, self.rate, duration_s):
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            jobs.put((due, self.keys()))
        for _ in threads:
            jobs.put(None)
        end = time.monotonic() + grace_s
        for t in threads:
            t.join(max(0.0, end - time.monotonic()))
        with lock:
            unfinished = int(duration_s * self.rate) - len(lat) - failures[0]
            res = summarize(lat, failures[0] + max(0, unfinished), duration_s, self.rate)
            res["latencies_ms"] = [round(x * 1000, 2) for x in lat]
        return res
