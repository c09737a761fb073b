#!/bin/bash
# The BPF programs on the host kernel (make test runs this before the VM suite): builds
# bpf_smoke, makes sure a swap device is active (a temporary 256 MiB swap file if none
# is, removed afterwards) so that swap-ins are exercised too, and runs it. Needs root.
#
#   tests/preload/bpf_host.sh [BUILD_DIR]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$ROOT/build}
bin=$B/preload/bpf_smoke
swapfile=

cleanup() {
	if [ -n "$swapfile" ]; then
		swapoff "$swapfile" 2>/dev/null
		rm -f "$swapfile"
	fi
}
trap cleanup EXIT

mkdir -p "$B/preload"
cc -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -I"$ROOT/include" -I"$ROOT/daemon" \
	-I"$B/bpf" -o "$bin" "$ROOT/tests/preload/bpf_smoke.c" "$ROOT/daemon/bpf_loader.c" \
	"$ROOT/daemon/log.c" -lbpf -lelf -lz || { echo "bpf_host: cannot build bpf_smoke" >&2; exit 1; }

echo "== BPF on the host kernel ($(uname -r))"
if [ "$(wc -l </proc/swaps)" -le 1 ]; then
	swapfile=$(mktemp /var/tmp/pagetier-bpf-XXXXXX.swap)
	if ! { dd if=/dev/zero of="$swapfile" bs=1M count=256 status=none &&
	       chmod 600 "$swapfile" && mkswap -q "$swapfile" >/dev/null &&
	       swapon "$swapfile"; }; then
		echo "bpf_host: cannot activate a temporary swap file $swapfile: swap-ins not exercised" >&2
		exit 1
	fi
	echo "# temporary swap file $swapfile"
fi
# A probe that never returns must fail the run, not hold it: it takes seconds.
timeout -k 5 300 "$bin"
