#!/bin/bash
# Builds the debug guest kernel of make test-debug: Debian's 6.12 source (linux-source-6.12),
# configured as Debian configures it (/boot/config-KV of the 6.12 image make deps installed),
# cut down to the modules the test guests load (make localmodconfig with the list in
# tests/vm/debug-kernel.lsmod), with the kernel's checkers on: KASAN, lockdep
# (PROVE_LOCKING), DEBUG_ATOMIC_SLEEP, KMEMLEAK, and fault injection (FAILSLAB,
# FAIL_MAKE_REQUEST). Then pagetier.ko against it. Cached under build/debug-kernel/: a
# second run with the same source, config inputs and module sources only checks.
#
#   tests/vm/debug-kernel.sh       prints the kernel's release (uname -r) on its last line
#
# The kernel is installed as /boot/vmlinuz-KV with its modules in /lib/modules/KV, where
# the VM harness finds Debian's kernels, and pagetier.ko goes to build/kmod/KV/.
#
# The build is niced: it yields the CPU to a guest running meanwhile.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$top/build/debug-kernel
log() { printf 'debug-kernel: %s\n' "$*" >&2; }
die() { printf 'debug-kernel: error: %s\n' "$*" >&2; exit 1; }

# What building a kernel needs beyond make deps (make test-debug alone needs them).
need=(linux-source-6.12 dwarves flex bison libssl-dev bc)
missing=()
for p in "${need[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
		>/dev/null || die "apt-get install ${missing[*]} failed (apt-get update first?)"
fi
tarball=$(ls /usr/src/linux-source-6.12*.tar.xz 2>/dev/null | sort -V | tail -1)
[ -n "$tarball" ] || die "no /usr/src/linux-source-6.12*.tar.xz after installing linux-source-6.12"
kv612=$(grep -E '^6\.12\.' "$top/build/kernels.txt" | tail -1)
[ -n "$kv612" ] || die "no 6.12 kernel in build/kernels.txt: run make deps"
base=/boot/config-$kv612
[ -f "$base" ] || die "$base missing: run make deps"
src=$out/$(basename "$tarball" .tar.xz)

# The checkers, and what the suite needs that a module list cannot say.
debug_opts=(
	--enable KASAN --enable KASAN_GENERIC --enable KASAN_INLINE
	--enable PROVE_LOCKING --enable DEBUG_ATOMIC_SLEEP --enable DEBUG_LOCKDEP
	--enable DEBUG_KMEMLEAK --set-val DEBUG_KMEMLEAK_MEM_POOL_SIZE 16000
	--disable DEBUG_KMEMLEAK_DEFAULT_OFF
	--enable FAULT_INJECTION --enable FAILSLAB --enable FAIL_MAKE_REQUEST
	--enable FAULT_INJECTION_DEBUG_FS --enable DEBUG_FS
	# failslab limited to allocations whose stack passes through pagetier.ko's text
	# (require-start/require-end): the module's own allocations, not the whole kernel's.
	--enable FAULT_INJECTION_STACKTRACE_FILTER
	# Hung tasks are reported (a swap-out stall is a hang, not a crash).
	--enable DETECT_HUNG_TASK --set-val DEFAULT_HUNG_TASK_TIMEOUT 120
	--enable DEBUG_VM --enable DEBUG_LIST
	# Smaller and faster to build: no debug info beyond what BTF needs.
	--enable DEBUG_INFO_BTF --enable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT
	--disable DEBUG_INFO_REDUCED --disable DEBUG_INFO_SPLIT
	--disable MODULE_SIG --disable MODULE_SIG_ALL --set-str MODULE_SIG_KEY ""
	--set-str SYSTEM_TRUSTED_KEYS "" --set-str SYSTEM_REVOCATION_KEYS ""
	--set-str LOCALVERSION "-pagetier-debug"
)
# The build's inputs: the source, Debian's config, the module list and the checkers' options
# (not this script's text: editing a comment here must not rebuild a kernel for 40 minutes).
stamp_in=$( { sha256sum "$tarball" "$base" "$top/tests/vm/debug-kernel.lsmod"; printf '%s\n' "${debug_opts[@]}"; } | sha256sum)

if [ ! -f "$out/stamp" ] || [ "$(cat "$out/stamp")" != "$stamp_in" ] ||
   [ ! -f "$src/arch/x86/boot/bzImage" ]; then
	mkdir -p "$out"
	if [ ! -d "$src" ]; then
		log "extracting $tarball"
		tar -C "$out" -xJf "$tarball"
	fi
	command -v pahole >/dev/null || die "pahole missing (dwarves): run make deps"
	log "configuring from $base, modules of tests/vm/debug-kernel.lsmod, checkers on"
	cp "$base" "$src/.config"
	# New options take their defaults (yes ends with SIGPIPE: not a failure here).
	(cd "$src" && set +o pipefail && yes '' |
		make -s LSMOD="$top/tests/vm/debug-kernel.lsmod" localmodconfig >"$out/config.log" 2>&1) ||
		{ tail -20 "$out/config.log" >&2; die "make localmodconfig failed (build/debug-kernel/config.log)"; }
	(cd "$src" && scripts/config "${debug_opts[@]}" && make -s olddefconfig >>"$out/config.log" 2>&1) ||
		{ tail -20 "$out/config.log" >&2; die "configuring the checkers failed (build/debug-kernel/config.log)"; }
	for opt in KASAN PROVE_LOCKING DEBUG_ATOMIC_SLEEP DEBUG_KMEMLEAK FAILSLAB FAIL_MAKE_REQUEST \
		FAULT_INJECTION_STACKTRACE_FILTER DEBUG_INFO_BTF MEMCG BLK_DEV_NVME DM_DELAY; do
		grep -qE "^CONFIG_$opt=(y|m)" "$src/.config" || die "CONFIG_$opt did not stay on"
	done
	log "building (nice 19, $(nproc) jobs; about 40 minutes on a 2-core machine)"
	t0=$SECONDS
	(cd "$src" && nice -n 19 make -s -j"$(nproc)" bzImage modules >"$out/build.log" 2>&1) ||
		{ tail -30 "$out/build.log" >&2; die "kernel build failed (build/debug-kernel/build.log)"; }
	# An object left by a build killed part way can export its symbols without their
	# versions (modpost: "has no CRC"): the guest then refuses every module that uses them
	# ("no symbol version for blk_mq_...", seen once with block/blk-mq.o). Rebuilt here.
	# (grep finds nothing in a clean build: not a failure under pipefail.)
	stale=$( { grep -o '"[A-Za-z0-9_]*" \[.*\] has no CRC' "$out/build.log" || true; } |
		cut -d'"' -f2 | sort -u)
	if [ -n "$stale" ]; then
		objs=$(cd "$src" && grep -rlE --include='*.c' \
			"EXPORT_SYMBOL[A-Z_]*\(($(echo $stale | tr ' ' '|'))\)" block kernel mm fs lib drivers |
			sed 's/\.c$/.o/' | sort -u)
		log "exports without versions ($(echo "$stale" | wc -l) symbols): rebuilding $objs"
		(cd "$src" && rm -f $objs && nice -n 19 make -s -j"$(nproc)" bzImage modules >"$out/build.log" 2>&1) ||
			{ tail -30 "$out/build.log" >&2; die "kernel build failed (build/debug-kernel/build.log)"; }
		! grep -q 'has no CRC' "$out/build.log" ||
			die "exports without versions after a rebuild (build/debug-kernel/build.log): rm -rf build/debug-kernel and build again"
	fi
	log "built in $(( (SECONDS - t0) / 60 )) min $(( (SECONDS - t0) % 60 )) s"
	echo "$(( SECONDS - t0 ))" >"$out/build-seconds"
	echo "$stamp_in" >"$out/stamp"
fi

# The kernel release, as the guest's uname -r will say it.
kv=$(cd "$src" && make -s kernelrelease)
[ -n "$kv" ] || die "cannot tell the debug kernel's release"

# Installed as a Debian kernel is, so that the VM harness boots it like the others
# (tests/vm/lib.sh: /boot/vmlinuz-KV, its modules from /lib/modules/KV through virtme-ng).
# A build that added only a module leaves bzImage as it was: the stamp of the build
# installed says whether the modules are current too.
if [ ! -f "/boot/vmlinuz-$kv" ] || ! cmp -s "$src/arch/x86/boot/bzImage" "/boot/vmlinuz-$kv" ||
   [ ! -f "/lib/modules/$kv/modules.dep" ] ||
   ! cmp -s "$out/stamp" "/lib/modules/$kv/pagetier-debug.stamp"; then
	log "installing /boot/vmlinuz-$kv and /lib/modules/$kv"
	(cd "$src" && make -s modules_install >"$out/install.log" 2>&1) ||
		{ tail -20 "$out/install.log" >&2; die "modules_install failed (build/debug-kernel/install.log)"; }
	cp "$src/arch/x86/boot/bzImage" "/boot/vmlinuz-$kv"
	cp "$src/.config" "/boot/config-$kv"
	cp "$out/stamp" "/lib/modules/$kv/pagetier-debug.stamp"
fi

# pagetier.ko for the debug kernel, from the current sources, where the harness looks.
mkdir -p "$out/kmod" "$top/build/kmod/$kv"
rm -rf "$out/kmod/src" && cp -r "$top/kmod" "$out/kmod/src"
nice -n 19 make -s -C "$src" M="$out/kmod/src" modules >"$out/kmod/build.log" 2>&1 ||
	{ cat "$out/kmod/build.log" >&2; die "pagetier.ko does not build against the debug kernel"; }
cp "$out/kmod/src/pagetier.ko" "$top/build/kmod/$kv/pagetier.ko"
log "pagetier.ko for $kv: build/kmod/$kv/pagetier.ko"
echo "$kv"
