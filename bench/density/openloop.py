"""The latency statistics of the density benchmark's clients (pure, host-tested).

The clients themselves are loadgen.c (guest.py runs them): the critical service's is open
loop, each request due at its time whatever happened to the ones before it, and a late
request's latency counts from when it was due (no coordinated omission).
"""
import math


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
    guest.CriticalClient.run returns it (latencies_ms and failed): their requests together. A 40 s
    window's p99 rests on its 16 slowest requests, so the solo reference of the SLO is
    pooled from several."""
    lat = [x / 1000 for w in windows for x in w["latencies_ms"]]
    res = summarize(lat, sum(w["failed"] for w in windows), duration_s * len(windows),
                    offered_rate)
    res["windows"] = len(windows)
    return res
