#!/usr/bin/env bash
# packaging/pagetierd.service: `systemd-analyze verify` (offline: it loads the unit file
# and checks its syntax, its dependencies, that the commands it runs exist and are
# executable, and that the man pages of Documentation= resolve), then the settings the
# daemon needs and the sandboxing that would break it.
#
# usage: tests/packaging/verify_unit.sh BUILD_DIR   (the build/ of make daemon man)
#
# The unit names the installed paths (/usr/sbin/pagetierd); the copy verified here names
# BUILD_DIR/bin instead, and man(1) looks in BUILD_DIR/man: nothing else is changed.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: verify_unit.sh BUILD_DIR}
unit=$top/packaging/pagetierd.service
pass=0
fail=0

ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

command -v systemd-analyze >/dev/null ||
	{ echo "verify_unit: systemd-analyze not found (Debian package systemd: make deps)" >&2; exit 1; }
[ -x "$build/bin/pagetierd" ] || { echo "verify_unit: $build/bin/pagetierd missing: make daemon" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s#/usr/sbin/pagetierd#$build/bin/pagetierd#g" "$unit" >"$tmp/pagetierd.service"

# 1. systemd-analyze verify: any message is a finding (some warnings leave the exit 0).
out=$(MANPATH="$build/man" SYSTEMD_LOG_LEVEL=notice systemd-analyze verify "$tmp/pagetierd.service" 2>&1)
rc=$?
if [ "$rc" = 0 ] && [ -z "$out" ]; then
	ok "systemd-analyze verify packaging/pagetierd.service"
else
	bad "systemd-analyze verify packaging/pagetierd.service (exit $rc):"
	sed 's/^/       /' <<<"$out"
fi

# 2. What the daemon needs, read from the unit as systemd would (last assignment wins;
# an empty one resets a list).
setting() { # $1 = key: the effective value
	awk -F= -v k="$1" '
		/^[[:space:]]*[#;]/ { next }
		$1 == k { v = substr($0, length(k) + 2); if (v == "") acc = ""; else acc = (acc == "" ? v : acc " " v) }
		END { print acc }' "$unit"
}
expect() { # $1 = key, $2 = extended regex over its value, $3 = why
	local v
	v=$(setting "$1")
	if [[ "$v" =~ $2 ]]; then ok "$1=$v ($3)"; else bad "$1='$v' does not match /$2/: $3"; fi
}
expect LimitMEMLOCK '^infinity$' 'mlockall(MCL_FUTURE) of the daemon and its BPF maps (kernels before 5.11)'
limit=$(setting LimitNOFILE)
if [[ "$limit" =~ ^[0-9]+$ ]] && [ "$limit" -ge 65536 ]; then
	ok "LimitNOFILE=$limit (a pidfd per process of every opted-in container)"
else
	bad "LimitNOFILE='$limit': at least 65536 (a pidfd per process of every opted-in container)"
fi
caps=$(setting CapabilityBoundingSet)
for c in CAP_SYS_ADMIN CAP_SYS_PTRACE CAP_SYS_NICE CAP_BPF CAP_PERFMON CAP_DAC_OVERRIDE CAP_IPC_LOCK; do
	if [[ " $caps " == *" $c "* ]]; then ok "CapabilityBoundingSet has $c"
	else bad "CapabilityBoundingSet lacks $c (PRIVILEGES in pagetierd(8))"; fi
done
expect User '^(root)?$' 'cgroup files, /proc of every container, BPF'
expect RuntimeDirectory '(^| )pagetier( |$)' 'runtime_dir: the control and preload sockets'
expect RuntimeDirectoryPreserve '^yes$' 'what pagetierd wrote on cgroups, for the next start to put back after a crash'

# 3. Sandboxing that would break the daemon (each says why); systemd's default is off.
refuse() { # $1 = key, $2 = extended regex of the values that break it, $3 = why
	local v
	v=$(setting "$1")
	if [[ "$v" =~ $2 ]]; then bad "$1=$v breaks the daemon: $3"; else ok "$1=${v:-(unset)} (not: $3)"; fi
}
refuse PrivateDevices '^(yes|true|on|1)$' '/dev/pagetier, the control device'
refuse DevicePolicy '^(closed|strict)$' '/dev/pagetier appears when the module loads'
refuse DeviceAllow '.' 'any DeviceAllow= restricts /dev to its list: /dev/pagetier'
refuse ProtectClock '^(yes|true|on|1)$' 'implies DeviceAllow=char-rtc, which hides /dev/pagetier'
refuse ProtectControlGroups '^(yes|true|on|1)$' 'memory.reclaim, memory.low and cgroup.procs writes'
refuse ProtectKernelTunables '^(yes|true|on|1)$' 'makes /sys, and the cgroup files below it, read-only'
refuse ProtectProc '^(invisible|noaccess|ptraceable)$' '/proc of every container process'
refuse ProcSubset '^pid$' '/proc/meminfo, /proc/swaps, /proc/kallsyms'
refuse PrivateUsers '^(yes|true|on|1)$' 'capabilities on the host'
refuse PrivatePIDs '^(yes|true|on|1)$' 'the processes of the containers'
refuse MemoryMax '.' 'the daemon is mlocked: a memory limit would OOM-kill it, not page it out'
refuse SystemCallFilter '^[^~]' 'an allow-list would have to name process_madvise, pidfd_open, bpf, perf_event_open; use a deny-list'
refuse RestrictAddressFamilies '^(none)$' 'the unix sockets'
families=$(setting RestrictAddressFamilies)
for f in AF_UNIX AF_INET AF_INET6; do
	if [ -z "$families" ] || { [[ "$families" != "~"* ]] && [[ " $families " == *" $f "* ]]; } ||
	   { [[ "$families" == "~"* ]] && [[ " ${families#\~} " != *" $f "* ]]; }; then
		ok "RestrictAddressFamilies allows $f"
	else
		bad "RestrictAddressFamilies='$families' denies $f: $([ $f = AF_UNIX ] && echo 'the control and preload sockets' || echo 'the Prometheus metrics (metrics_listen)')"
	fi
done

# 4. The exposure systemd computes (informational: a score, not a finding).
score=$(systemd-analyze security --offline=true "$tmp/pagetierd.service" 2>/dev/null |
	sed -n 's/.*Overall exposure level for [^:]*: *//p')
echo "     systemd-analyze security --offline: ${score:-(not available)}"

echo "unit: $pass passed, $fail failed"
[ "$fail" = 0 ]
