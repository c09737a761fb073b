#!/usr/bin/env bash
# The DKMS package end to end, short of loading anything: `make install-dkms` (what
# `make install` installs as /usr/src/pagetier-VERSION) into a temporary root, then
# `dkms add` and `dkms build` for every target kernel of build/kernels.txt against its
# headers (/lib/modules/KV/build, from make deps), and each built module's vermagic.
#
# usage: tests/packaging/dkms_build.sh BUILD_DIR   (the build/ holding kernels.txt)
#        PT_DKMS_JOBS=N  make -jN inside dkms (default: the CPUs)
#
# Nothing outside one temporary directory is touched: the dkms tree, the source tree, the
# install tree and TMPDIR all live there (--dkmstree, --sourcetree, --installtree), and the
# module signing key dkms would otherwise create in /var/lib/dkms is a throwaway one there
# too. No module is installed or loaded; depmod and the initramfs are never run.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: dkms_build.sh BUILD_DIR}
pass=0
fail=0

ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
die() { echo "dkms_build: $*" >&2; exit 1; }

command -v dkms >/dev/null || die "dkms not found (Debian package dkms: make deps)"
[ "$(id -u)" = 0 ] || die "dkms build needs root (it checks its tree's ownership): run as root"
[ -s "$build/kernels.txt" ] || die "$build/kernels.txt missing: run make deps"
mapfile -t kernels <"$build/kernels.txt"
[ "${#kernels[@]}" -gt 0 ] || die "$build/kernels.txt lists no kernel: run make deps"

version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$top/packaging/dkms.conf")
[ -n "$version" ] || die "packaging/dkms.conf has no PACKAGE_VERSION=\"...\""

tmp=$(mktemp -d /tmp/pagetier-dkms.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/root" "$tmp/dkms" "$tmp/modules" "$tmp/tmp"
src=$tmp/root/usr/src
trees=(--dkmstree "$tmp/dkms" --sourcetree "$src" --installtree "$tmp/modules")
# dkms reads these from its framework.conf or, failing that, the environment.
export TMPDIR=$tmp/tmp mok_signing_key=$tmp/mok.key mok_certificate=$tmp/mok.pub

# What a host must not see afterwards (compared at the end).
host_state() {
	ls -d /var/lib/dkms/pagetier /usr/src/pagetier-"$version" 2>/dev/null
	for kv in "${kernels[@]}"; do ls /lib/modules/"$kv"/updates/dkms/pagetier.ko* 2>/dev/null; done
	awk '$1 == "pagetier"' /proc/modules 2>/dev/null
}
before=$(host_state)

# 1. The source tree exactly as make install lays it out.
if make -s -C "$top" install-dkms DESTDIR="$tmp/root" >"$tmp/install.log" 2>&1 &&
   [ -f "$src/pagetier-$version/dkms.conf" ] && [ -f "$src/pagetier-$version/kmod/Kbuild" ]; then
	ok "make install-dkms: $(find "$src/pagetier-$version" -type f | wc -l) files in /usr/src/pagetier-$version"
else
	bad "make install-dkms DESTDIR=$tmp/root:"
	sed 's/^/       /' "$tmp/install.log"
	die "no DKMS source tree to build"
fi

# 2. dkms add: the source is registered in the temporary dkms tree.
if out=$(dkms add -m pagetier -v "$version" "${trees[@]}" 2>&1); then
	ok "dkms add -m pagetier -v $version"
else
	bad "dkms add -m pagetier -v $version:"
	sed 's/^/       /' <<<"$out"
	die "dkms add failed: check packaging/dkms.conf"
fi

# 3. dkms build per kernel, timed; the module's vermagic names that kernel.
jobs=${PT_DKMS_JOBS:-$(nproc)}
t_all=$(date +%s.%N)
for kv in "${kernels[@]}"; do
	kdir=/lib/modules/$kv/build
	if [ ! -d "$kdir" ]; then
		bad "dkms build for $kv: headers missing ($kdir): run make deps"
		continue
	fi
	t0=$(date +%s.%N)
	out=$(dkms build -m pagetier -v "$version" -k "$kv" --kernelsourcedir "$kdir" \
		-j "$jobs" "${trees[@]}" 2>&1)
	rc=$?
	secs=$(echo "$(date +%s.%N) - $t0" | bc)
	signed=$(grep -c "^Signing module" <<<"$out")
	ko=$(ls "$tmp/dkms/pagetier/$version/$kv"/*/module/pagetier.ko* 2>/dev/null | head -1)
	if [ "$rc" != 0 ] || [ -z "$ko" ]; then
		bad "dkms build -m pagetier -v $version -k $kv (exit $rc, ${secs}s):"
		sed 's/^/       /' <<<"$out"
		log=$(ls "$tmp/dkms/pagetier/$version/build/make.log" 2>/dev/null)
		[ -n "$log" ] && { echo "       --- $log (last 40 lines)"; tail -40 "$log" | sed 's/^/       /'; }
		continue
	fi
	vermagic=$(modinfo -F vermagic "$ko" 2>/dev/null)
	if [[ "$vermagic" == "$kv "* ]]; then
		ok "dkms build -k $kv: $(basename "$ko"), vermagic '$vermagic'$([ "$signed" -gt 0 ] && echo ', signed with a throwaway key') ($(printf '%.1f' "$secs") s)"
	else
		bad "dkms build -k $kv: $ko has vermagic '$vermagic', not $kv"
	fi
done
total=$(echo "$(date +%s.%N) - $t_all" | bc)

# 4. dkms status agrees, and the host is as it was.
st=$(dkms status -m pagetier -v "$version" "${trees[@]}" 2>&1)
for kv in "${kernels[@]}"; do
	if grep -q "pagetier/$version, $kv, .*: built" <<<"$st"; then ok "dkms status: built for $kv"
	else bad "dkms status does not say built for $kv: $st"; fi
done
after=$(host_state)
if [ "$before" = "$after" ]; then
	ok "host untouched (no /var/lib/dkms/pagetier, /usr/src/pagetier-$version, installed or loaded module)"
else
	bad "the host changed: before '$before', after '$after'"
fi

echo "dkms: $pass passed, $fail failed; ${#kernels[@]} kernels built in $(printf '%.1f' "$total") s (-j$jobs)"
[ "$fail" = 0 ]
