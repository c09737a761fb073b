#!/usr/bin/env bash
# make deps: install everything the build, the tests and the demo need, from Debian's
# packages and PyPI only. Idempotent: a second run checks and returns in seconds.
#
# Kernel versions are resolved at install time (the newest 6.1 and 6.12 images in the
# archive), never hard-coded: Debian's security updates replace them.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
state=build/deps.stamp
export DEBIAN_FRONTEND=noninteractive

log() { printf 'deps: %s\n' "$*" >&2; }
die() { printf 'deps: error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (apt-get install); try: sudo make deps"

PKGS=(
	build-essential gcc make pkg-config git perl python3 python3-venv python3-pip
	clang llvm lld libelf-dev zlib1g-dev
	bpftool libbpf-dev
	liburing-dev libnvme-dev libinih-dev libcmocka-dev
	# pagetierd's Prometheus metrics (libmicrohttpd); promtool checks them (prometheus)
	libmicrohttpd-dev prometheus
	qemu-system-x86 qemu-utils crun
	kmod cpio busybox-static iproute2 procps util-linux mount e2fsprogs fdisk file xz-utils bc
	sqlite3 redis-server redis-tools lua5.4 valgrind libclang-rt-14-dev
	memcached nginx-light postgresql-15 postgresql-contrib zstd
	python3-matplotlib
	# the man pages (scdoc); systemd-analyze verify of the unit and its man: links
	scdoc man-db systemd
	# the DKMS package built for both kernels in make test (tests/packaging/dkms_build.sh)
	dkms
	# the Kubernetes manifest's offline check (tests/packaging/check_kubernetes.py)
	python3-yaml
)

newest_kernel() { # $1 = regex over package names; prints the highest version
	apt-cache search --names-only "$1" | awk '{print $1}' | sort -V | tail -1
}

need_update=0
[ -n "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -1440 2>/dev/null | head -1)" ] || need_update=1
if [ "$need_update" = 1 ]; then
	log "apt-get update"
	apt-get update -qq || die "apt-get update failed; check the network and /etc/apt/sources.list"
fi

img61=$(newest_kernel '^linux-image-6\.1\.0-[0-9]+-amd64$')
img612=$(newest_kernel '^linux-image-6\.12\.[0-9]+\+deb12-amd64$')
[ -n "$img61" ] || die "no linux-image-6.1.0-*-amd64 in the apt archive"
[ -n "$img612" ] || die "no linux-image-6.12.*+deb12-amd64 in the apt archive"
kv61=${img61#linux-image-}
kv612=${img612#linux-image-}
src61=$(newest_kernel '^linux-source-6\.1$')
[ -n "$src61" ] || die "no linux-source-6.1 in the apt archive"
PKGS+=("$img61" "linux-headers-$kv61" "$img612" "linux-headers-$kv612" "$src61")

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	log "installing ${#missing[@]} packages: ${missing[*]}"
	# --no-install-recommends keeps firmware and initramfs tooling off the host; the
	# kernel images are used only by the VM harness, never booted on the host.
	# The servers among them (memcached, nginx, PostgreSQL) run only inside the test
	# guests, and prometheus is there for its promtool: keep the host's init from
	# starting them (invoke-rc.d asks policy-rc.d).
	own_policy=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
		own_policy=1
	fi
	rc=0
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
	[ "$own_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
	[ "$rc" = 0 ] || die "apt-get install failed for: ${missing[*]}"
fi

# The kernels the VM harness boots and the module is built for, recorded for make.
mkdir -p build
printf '%s\n' "$kv61" "$kv612" >build/kernels.txt

# virtme-ng in a venv under the git-ignored .venv/ (vng boots the Debian images).
if [ ! -x .venv/bin/vng ]; then
	log "creating .venv with virtme-ng"
	/usr/bin/python3 -m venv .venv || die "python3 -m venv failed"
	.venv/bin/pip install -q --disable-pip-version-check virtme-ng ||
		die "pip install virtme-ng failed"
fi

# kselftest harness headers and checkpatch.pl, from Debian's linux-source package.
if [ ! -f build/linux-src/tools/testing/selftests/kselftest_harness.h ] ||
   [ ! -x build/linux-src/scripts/checkpatch.pl ]; then
	tarball=$(ls /usr/src/linux-source-6.1*.tar.xz 2>/dev/null | sort -V | tail -1)
	[ -n "$tarball" ] || die "linux-source tarball not found in /usr/src"
	log "extracting kselftest headers and checkpatch.pl from $tarball"
	rm -rf build/linux-src && mkdir -p build/linux-src
	tar -xJf "$tarball" -C build/linux-src --strip-components=1 --wildcards \
		'*/tools/testing/selftests/kselftest.h' \
		'*/tools/testing/selftests/kselftest_harness.h' \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' '*/scripts/const_structs.checkpatch' ||
		die "extracting from $tarball failed"
fi

date -u +%FT%TZ >"$state"
log "ok: kernels $kv61 and $kv612; vng $(.venv/bin/vng --version 2>/dev/null | head -1)"
