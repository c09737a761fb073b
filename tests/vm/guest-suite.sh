#!/bin/bash
# Runs inside the test VM: load pagetier.ko, run the kselftests and the e2e scenarios, check
# that the module unloads and the kernel log is clean. TAP files go to $PT_OUT; the exit
# status to $PT_OUT/guest.rc (its absence tells the host the guest died or hung).
set -u
out=${PT_OUT:?} top=${PT_TOP:?}
kv=$(uname -r)
rc=0
echo "guest: Linux $kv, $(nproc) CPUs, $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) MiB"
modprobe loop 2>/dev/null

ko=$top/build/kmod/$kv/pagetier.ko
if ! insmod "$ko" 2>"$out/insmod.err"; then
	echo "Bail out! insmod $ko failed: $(cat "$out/insmod.err")" | tee "$out/module.tap"
	dmesg | tail -20 | sed 's/^/# /' | tee -a "$out/module.tap"
	echo 1 >"$out/guest.rc"
	exit 1
fi

# Every kselftest binary, each in its own TAP file (they clean up after themselves).
for t in "$top"/build/kselftest/*_test; do
	name=$(basename "$t")
	echo "== kselftest: $name"
	PAGETIER_TEST_BACKING=/dev/nvme0n1 "$t" 2>&1 | tee "$out/kselftest-$name.tap"
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
done

echo "== e2e: idle_wake"
python3 "$top/tests/e2e/idle_wake.py" 2>&1 | tee "$out/e2e.tap"
[ "${PIPESTATUS[0]}" = 0 ] || rc=1

echo "== e2e: hotness"
python3 "$top/tests/e2e/hotness.py" 2>&1 | tee "$out/e2e-hotness.tap"
[ "${PIPESTATUS[0]}" = 0 ] || rc=1

echo "== e2e: packet_wake"
python3 "$top/tests/e2e/packet_wake.py" 2>&1 | tee "$out/e2e-packet-wake.tap"
[ "${PIPESTATUS[0]}" = 0 ] || rc=1

echo "== e2e: preload_apps"
python3 "$top/tests/e2e/preload_apps.py" 2>&1 | tee "$out/e2e-preload-apps.tap"
[ "${PIPESTATUS[0]}" = 0 ] || rc=1

echo "== module"
{
	echo "TAP version 13"
	if rmmod pagetier 2>&1; then
		echo "ok 1 pagetier.ko unloads after the tests"
	else
		echo "not ok 1 pagetier.ko unloads after the tests"
	fi
	dmesg >"$out/dmesg.txt"
	bad=$(grep -E 'BUG:|WARNING:|Oops|general protection|Call Trace:|pagetier.*(leak|corrupt)' "$out/dmesg.txt")
	if [ -z "$bad" ]; then
		echo "ok 2 kernel log free of BUG, WARNING, Oops and call traces"
	else
		echo "not ok 2 kernel log free of BUG, WARNING, Oops and call traces"
		echo "$bad" | head -40 | sed 's/^/#   /'
	fi
	echo "1..2"
} 2>&1 | tee "$out/module.tap"
grep -q '^not ok' "$out/module.tap" && rc=1
echo "$rc" >"$out/guest.rc"
exit "$rc"
