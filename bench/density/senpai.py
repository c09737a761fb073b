"""Senpai (Meta's TMO userspace agent) as published (facebookincubator/senpai), for the
density benchmark's peer configuration: per cgroup, memory.high is tightened while the
cgroup's memory pressure (PSI "some" total) stays below a target, and loosened as it
exceeds it, each step scaled quadratically with the error and bounded.

The control law is kept apart from cgroupfs (SenpaiLaw), so that it is unit tested.
"""
import os

# The published defaults, but for the time scale (INTERVAL) and sizes (MIN_SIZE) that the
# benchmark compresses: see bench/density/README.md.
DEFAULTS = {
    "interval": 6,			# ticks (1 s each) between adjustments
    "pressure_us": 10_000,		# target memory stall per interval
    "max_probe": 0.01,
    "max_backoff": 1.0,
    "coeff_probe": 10,
    "coeff_backoff": 20,
    "min_size": 100 << 20,
    "max_size": 100 << 30,
}


class SenpaiLaw:
    """One cgroup's controller state. tick(stall_delta_us) -> the factor to scale
    memory.high by (limit += limit * factor), or None to leave it."""

    def __init__(self, conf):
        self.c = dict(DEFAULTS, **conf)
        self.integral = 0
        self.grace = self.c["interval"]

    def tick(self, delta_us):
        c = self.c
        self.integral += delta_us
        if self.integral > c["pressure_us"]:
            # Over the target: back off, quadratically in the error, at most max_backoff.
            err = self.integral / c["pressure_us"]
            adj = min((err / c["coeff_backoff"]) ** 2 * c["max_backoff"], c["max_backoff"])
            self.integral = 0
            self.grace = c["interval"] - 1
            return adj
        if self.grace:
            self.grace -= 1
            return None
        # Under the target: probe (tighten), harder the further below it.
        err = c["pressure_us"] / max(self.integral, 1)
        adj = min((err / c["coeff_probe"]) ** 2 * c["max_probe"], c["max_probe"])
        self.integral = 0
        self.grace = c["interval"] - 1
        return -adj

    def clamp(self, limit):
        return max(self.c["min_size"], min(self.c["max_size"], int(limit))) & ~4095


class SenpaiCgroup:
    """SenpaiLaw applied to one cgroup directory through memory.pressure and memory.high."""

    def __init__(self, path, conf):
        self.path, self.law = path, SenpaiLaw(conf)
        self.last_total = self._stall_total()
        self.limit = None

    def _read(self, f):
        with open(os.path.join(self.path, f)) as fh:
            return fh.read()

    def _stall_total(self):
        # "some avg10=.. avg60=.. avg300=.. total=N"
        return int(self._read("memory.pressure").split("\n")[0].split("total=")[1])

    def _high(self):
        v = self._read("memory.high").strip()
        return None if v == "max" else int(v)

    def tick(self):
        total = self._stall_total()
        factor = self.law.tick(total - self.last_total)
        self.last_total = total
        if factor is None:
            return
        # Started, or someone else changed it: from memory.current, as Senpai does.
        base = self.limit if self.limit is not None and self._high() == self.limit else \
            int(self._read("memory.current"))
        self.limit = self.law.clamp(base + base * factor)
        with open(os.path.join(self.path, "memory.high"), "w") as fh:
            fh.write(str(self.limit))
