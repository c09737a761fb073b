#!/usr/bin/env python3
"""What a guest that outlived its time limit was doing, asked of QEMU through QMP.

  qmp_diag.py QMP_SOCKET

Prints QEMU's run state: a guest paused by QEMU (an I/O error, a full host disk) prints
nothing, and only QEMU can say so. A running guest gets an NMI: the guest kernel, booted
with unknown_nmi_panic and panic_print=0x40 (tests/vm/lib.sh), panics and prints the
backtrace of the CPU it interrupted on the console (the other CPU takes the NMI too and
prints no stack of its own), which shows a CPU spinning with interrupts off that no
watchdog inside the guest could report. Called by pt_vm_run before it kills the
guest.
"""
import json
import socket
import sys


def qmp_connect(path: str, timeout: float = 10):
    """A QMP session with the QEMU at socket @path: returns ask(command) -> its reply
    (asynchronous events skipped), once the greeting is read and the capabilities
    negotiated. Raises OSError or ValueError. Also used by bench/wake/host_cpu.py."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.connect(path)
    stream = sock.makefile("rw")

    def ask(command: str) -> dict:
        stream.write(json.dumps({"execute": command}) + "\n")
        stream.flush()
        while True:  # skip asynchronous events
            reply = json.loads(stream.readline())
            if "return" in reply or "error" in reply:
                return reply

    json.loads(stream.readline())  # the greeting
    ask("qmp_capabilities")
    return ask


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        ask = qmp_connect(sys.argv[1])
    except (OSError, ValueError) as e:
        print(f"qmp: cannot reach QEMU at {sys.argv[1]}: {e}")
        return 1

    try:
        status = ask("query-status").get("return", {})
        state = status.get("status", "unknown")
        print(f"qmp: QEMU reports the guest {state}"
              f"{' (running)' if status.get('running') else ''}")
        if state in ("io-error", "paused", "internal-error", "guest-panicked"):
            print("qmp: QEMU stopped the guest: "
                  + ("a drive's host I/O failed (a full host disk?)" if state == "io-error"
                     else state))
            return 0
        reply = ask("inject-nmi")
        print("qmp: NMI sent: the guest should panic with a CPU's backtrace"
              if "return" in reply else f"qmp: inject-nmi failed: {reply.get('error')}")
    except (OSError, ValueError) as e:
        print(f"qmp: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
