"""Real servers from Debian packages in opted-in containers (cgroups), for the e2e scenarios
and the benchmarks: redis-server, memcached, nginx and PostgreSQL, each started with its
default configuration (only what must differ per instance is set: port, data directory),
each with a client that loads a data set, serves requests and checks every answer.

Each server has:
  start()              start in its cgroup (the cgroup exists), wait until it answers
  load()               fill its data set; returns the bytes loaded
  request(i)           one request for item i (0 <= i < items); returns (ok, seconds)
  stop()
"""
import http.client
import os
import select
import shutil
import socket
import subprocess
import time

from e2elib import CG, MIB, run

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PG_BIN = "/usr/lib/postgresql/15/bin"


def in_cgroup(cgdir, argv, **kw):
    """Starts argv with its first process already in cgroup @cgdir."""
    procs = os.path.join(cgdir, "cgroup.procs")
    cmd = f'echo $$ > {procs} && exec "$@"'
    return subprocess.Popen(["sh", "-c", cmd, "sh"] + argv, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, **kw)


def run_in_cgroup(cgdir, argv, timeout=300, user=None):
    procs = os.path.join(cgdir, "cgroup.procs")
    pre = ["runuser", "-u", user, "--"] if user else []
    cmd = f'echo $$ > {procs} && exec "$@"'
    return subprocess.run(["sh", "-c", cmd, "sh"] + pre + argv, capture_output=True, text=True,
                          timeout=timeout)


def wait_port(port, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.2)
    return False


def value_of(i, size):
    """The value of item i: a deterministic pattern that names its item."""
    head = f"item-{i}:".encode()
    body = (b"%08d" % (i * 2654435761 % 100000000)) * (size // 8 + 1)
    return (head + body)[:size]


class Resp:
    """A minimal RESP (redis) client over one connection."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.f = self.s.makefile("rb")

    def cmd(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return self.reply()

    def reply(self):
        line = self.f.readline()
        t, rest = line[:1], line[1:-2]
        if t in (b"+", b"-", b":"):
            return rest if t != b":" else int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            return data[:-2]
        raise RuntimeError(f"unexpected reply {line!r}")

    def close(self):
        self.s.close()


class Redis:
    name = "redis"

    def __init__(self, cgdir, work, port=6390, items=48000, size=1024):
        self.cgdir, self.port, self.items, self.size = cgdir, port, items, size
        self.dir = os.path.join(work, "redis")
        self.proc = None
        self.conn = None

    def start(self):
        os.makedirs(self.dir, exist_ok=True)
        # The package's defaults, but where this instance listens and keeps its files.
        self.proc = in_cgroup(self.cgdir, ["redis-server", "--port", str(self.port),
                                           "--dir", self.dir])
        if not wait_port(self.port):
            raise RuntimeError("redis-server did not start")
        self.conn = Resp(self.port)

    def load(self):
        buf = bytearray()
        for i in range(self.items):
            k = b"key:%d" % i
            v = value_of(i, self.size)
            buf += b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v)
        r = subprocess.run(["redis-cli", "-p", str(self.port), "--pipe"], input=bytes(buf),
                           capture_output=True, timeout=300)
        if b"errors: 0" not in r.stdout:
            raise RuntimeError(f"redis load failed: {r.stdout[-300:]!r}")
        # The snapshot its default save rules would take a minute after these writes,
        # taken now, so that it does not happen in the middle of the scenario.
        if self.conn.cmd("SAVE") != b"OK":
            raise RuntimeError("redis SAVE failed")
        return self.items * self.size

    def request(self, i):
        t = time.monotonic()
        v = self.conn.cmd("GET", "key:%d" % i)
        return v == value_of(i, self.size), time.monotonic() - t

    def stop(self):
        if self.conn:
            # Not SIGTERM first: with the package's save rules redis snapshots its data
            # set on the way out, reading back all of it that was offloaded (more than
            # 30 s for 200 MiB demand-paged under TCG). The data is the test's own.
            try:
                self.conn.cmd("SHUTDOWN", "NOSAVE")
            except (OSError, RuntimeError):
                pass	# it closes the connection without a reply
            self.conn.close()
        if self.proc:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                self.proc.wait(30)


class Memcached:
    name = "memcached"

    def __init__(self, cgdir, work, port=11299, items=20000, size=2048):
        self.cgdir, self.port, self.items, self.size = cgdir, port, items, size
        self.proc = None
        self.s = None

    def start(self):
        # Defaults (64 MiB of item memory), but the port.
        self.proc = in_cgroup(self.cgdir, ["memcached", "-u", "nobody", "-p", str(self.port),
                                           "-U", "0"])
        if not wait_port(self.port):
            raise RuntimeError("memcached did not start")
        self.s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        self.f = self.s.makefile("rb")

    def load(self):
        for i in range(self.items):
            v = value_of(i, self.size)
            self.s.sendall(b"set m%d 0 0 %d noreply\r\n%s\r\n" % (i, len(v), v))
        ok, _ = self.request(self.items - 1)
        if not ok:
            raise RuntimeError("memcached load failed")
        return self.items * self.size

    def stats(self):
        """A few of memcached's own counters: what its background threads did."""
        self.s.sendall(b"stats\r\n")
        out = {}
        while True:
            line = self.f.readline().decode().strip()
            if line == "END" or not line:
                return out
            _, k, v = line.split(" ", 2)
            if k in ("lru_crawler_starts", "crawler_items_checked", "lru_maintainer_juggles",
                     "moves_to_cold", "moves_to_warm", "moves_within_lru", "lru_bumps_dropped",
                     "get_hits", "curr_items", "hash_is_expanding", "slab_reassign_running"):
                out[k] = v

    def request(self, i):
        t = time.monotonic()
        self.s.sendall(b"get m%d\r\n" % i)
        head = self.f.readline()
        data = None
        if head.startswith(b"VALUE"):
            n = int(head.split()[3])
            data = self.f.read(n + 2)[:-2]
            self.f.readline()			# END
        return data == value_of(i, self.size), time.monotonic() - t

    def stop(self):
        if self.s:
            self.s.close()
        if self.proc:
            self.proc.terminate()
            self.proc.wait(30)


class Nginx:
    """nginx serving files from an ext4 file system; its data is the page cache they use."""
    name = "nginx"

    def __init__(self, cgdir, work, port=8089, items=24, size=1 << 20):
        self.cgdir, self.port, self.items, self.size = cgdir, port, items, size
        self.work = os.path.join(work, "nginx")
        self.proc = None
        self.loop = None

    def start(self):
        os.makedirs(self.work, exist_ok=True)
        img, root = os.path.join(self.work, "fs.img"), os.path.join(self.work, "www")
        with open(img, "wb") as f:
            f.truncate((self.items * self.size * 2) + (16 << 20))
        run(["modprobe", "loop"])
        self.loop = run(["losetup", "-f", "--show", img], check=True).stdout.strip()
        run(["mkfs.ext4", "-q", self.loop], check=True)
        os.makedirs(root, exist_ok=True)
        run(["mount", self.loop, root], check=True)
        self.root = root
        conf = os.path.join(self.work, "nginx.conf")
        # Debian's nginx.conf defaults (worker_processes auto, sendfile on), one server.
        with open(conf, "w") as f:
            f.write("worker_processes auto;\n"
                    f"pid {self.work}/nginx.pid;\n"
                    f"error_log {self.work}/error.log;\n"
                    "events { worker_connections 768; }\n"
                    "http {\n  sendfile on;\n  tcp_nopush on;\n"
                    "  types { application/octet-stream bin; }\n"
                    f"  access_log off;\n  server {{ listen 127.0.0.1:{self.port}; root {root}; }}\n"
                    "}\n")
        self.proc = in_cgroup(self.cgdir, ["nginx", "-c", conf, "-g", "daemon off;"])
        if not wait_port(self.port):
            raise RuntimeError("nginx did not start")
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def load(self):
        for i in range(self.items):
            with open(os.path.join(self.root, f"f{i}.bin"), "wb") as f:
                f.write(value_of(i, self.size))
        # Written by this script: drop them from the page cache so that nginx reads them
        # in, charged to its own cgroup, as a container's files would be.
        run(["sync"])
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1")
        for i in range(self.items):
            ok, _ = self.request(i)
            if not ok:
                raise RuntimeError(f"nginx: f{i}.bin wrong")
        return self.items * self.size

    def request(self, i):
        t = time.monotonic()
        # A keep-alive connection the server closed meanwhile is retried once, as any
        # HTTP client does for a GET.
        for attempt in (0, 1):
            try:
                self.conn.request("GET", f"/f{i}.bin")
                r = self.conn.getresponse()
                data = r.read()
                break
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                if attempt:
                    return False, time.monotonic() - t
        return r.status == 200 and data == value_of(i, self.size), time.monotonic() - t

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait(30)
        if self.loop:
            run(["umount", self.root])
            run(["losetup", "-d", self.loop])


class Postgres:
    """PostgreSQL 15 with a pgbench database (scale 4, 400,000 accounts), shared buffers
    warm. Requests are SELECTs of one account through one psql session."""
    name = "postgres"

    def __init__(self, cgdir, work, port=5439, scale=4, template=None):
        self.cgdir, self.port, self.scale = cgdir, port, scale
        self.items = scale * 100000
        self.dir = os.path.join(work, "pg")
        self.template = template or os.path.join(TOP, "build", "pgdata.tar.zst")
        self.psql = None

    def start(self):
        if not os.path.isfile(self.template):
            raise RuntimeError(f"no PostgreSQL template at {self.template}: run "
                               "tests/e2e/pg_template.sh (make does)")
        os.makedirs(self.dir, exist_ok=True)
        shutil.rmtree(os.path.join(self.dir, "data"), ignore_errors=True)
        # Unpacked inside the container: its files (tmpfs) are charged to it.
        r = run_in_cgroup(self.cgdir, ["tar", "-I", "zstd", "-C", self.dir, "-xf", self.template])
        if r.returncode:
            raise RuntimeError(f"unpacking the template failed: {r.stderr}")
        run(["chown", "-R", "postgres:postgres", self.dir], check=True)
        os.chmod(os.path.join(self.dir, "data"), 0o700)
        r = run_in_cgroup(self.cgdir, [os.path.join(PG_BIN, "pg_ctl"), "-D",
                                       os.path.join(self.dir, "data"), "-o",
                                       f"-k {self.dir} -p {self.port}", "-l",
                                       os.path.join(self.dir, "log"), "start", "-w"],
                          user="postgres", timeout=120)
        if r.returncode:
            raise RuntimeError(f"pg_ctl start failed: {r.stdout} {r.stderr}")
        self.psql = subprocess.Popen(["psql", "-h", self.dir, "-p", str(self.port), "-U",
                                      "postgres", "-X", "-A", "-t", "-q", "postgres"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, bufsize=0)
        self.pending = b""

    def query(self, sql, timeout=120):
        """The first line of @sql's output ('' if none), within @timeout seconds."""
        self.psql.stdin.write((sql.rstrip(";") + ";\nSELECT 'pt-end';\n").encode())
        self.psql.stdin.flush()
        out, end, fd = [], time.monotonic() + timeout, self.psql.stdout.fileno()
        while True:
            # Whole lines from what was read so far, then more from the pipe (raw reads:
            # a buffered reader would hide lines it holds from select()).
            while b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                line = line.decode().strip()
                if line == "pt-end":
                    return out[0] if out else ""
                out.append(line)
            if not select.select([fd], [], [], max(0, end - time.monotonic()))[0]:
                raise RuntimeError(f"postgres: no answer to '{sql}' in {timeout} s")
            data = os.read(fd, 65536)
            if not data:
                raise RuntimeError(f"postgres: psql exited during '{sql}'")
            self.pending += data

    def load(self):
        # Shared buffers warm: the accounts table and its index read through them.
        self.query("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        self.query("SELECT pg_prewarm('pgbench_accounts')")
        self.query("SELECT pg_prewarm('pgbench_accounts_pkey')")
        n = self.query("SELECT count(*) FROM pgbench_accounts")
        if n != str(self.items):
            raise RuntimeError(f"postgres: {n} accounts, expected {self.items}")
        size = self.query("SELECT pg_relation_size('pgbench_accounts')")
        return int(size)

    def request(self, i):
        aid = i + 1
        t = time.monotonic()
        got = self.query(f"SELECT aid, bid, abalance FROM pgbench_accounts WHERE aid = {aid}")
        want = f"{aid}|{(aid - 1) // 100000 + 1}|0"
        return got == want, time.monotonic() - t

    def stop(self):
        if self.psql:
            self.psql.stdin.close()
            self.psql.wait(30)
        run(["runuser", "-u", "postgres", "--", os.path.join(PG_BIN, "pg_ctl"), "-D",
             os.path.join(self.dir, "data"), "stop", "-m", "fast", "-w"])


def kb(x):
    return f"{x / MIB:.1f} MiB"


CG_ROOT = CG
