# A deterministic Python workload for the preload tests: allocation-heavy containers,
# threads, fork, fork+exec, anonymous mmap resized with mremap. Prints a digest.
import hashlib, json, mmap, os, subprocess, threading

h = hashlib.sha256()
d = {}
for i in range(200000):
    d["k%d" % i] = [i, str(i) * 3, {"v": i % 97}]
h.update(json.dumps(sorted(d.items())[:5000]).encode())
big = [bytearray(1 << 20) for _ in range(32)]          # 32 MiB in big blocks
for i, b in enumerate(big):
    b[i] = i
h.update(bytes(b[i] for i, b in enumerate(big)))
del big, d

results = [None] * 4
def worker(n):
    acc = []
    for i in range(50000):
        acc.append(("%d-%d" % (n, i)).encode() * 2)
    results[n] = hashlib.sha256(b"".join(acc)).hexdigest()
threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
for t in threads: t.start()
for t in threads: t.join()
h.update("".join(results).encode())

r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    s = sum(len(bytes(1000)) for _ in range(10000))
    os.write(w, str(s).encode())
    os._exit(0)
os.close(w)
h.update(os.read(r, 100))
os.waitpid(pid, 0)

h.update(subprocess.run(["/bin/echo", "from a child"], capture_output=True).stdout)

# Python's anonymous mmap is MAP_SHARED: resize it with mremap, but touch only the part that
# existed before (the shared object itself does not grow; beyond it is SIGBUS, with or
# without the library).
m = mmap.mmap(-1, 1 << 20)
m[:5] = b"hello"
m[(1 << 20) - 5:] = b"world"
m.resize(8 << 20)                                        # mremap
h.update(m[:5] + m[(1 << 20) - 5:1 << 20])
m.close()
print("python workload", h.hexdigest())
