#!/bin/bash
# In the guest of tests/vm/faults/run.sh: load pagetier.ko, find the namespace blkdebug
# makes fail (serial pagetier-faulty), run fault_test on it, then check that the module
# unloads and that the kernel log reports the errors and has no oops.
set -u
out=${PT_OUT:?} top=${PT_TOP:?} bin=$1
kv=$(uname -r)
ko=${PT_KO:-$top/build/kmod/$kv/pagetier.ko}
rc=0
. "$top/tests/vm/guest-lib.sh"

dev=
for c in /sys/class/nvme/nvme*; do
	[ "$(tr -d ' ' <"$c/serial")" = pagetier-faulty ] && dev=/dev/$(basename "$c")n1
done
if [ -z "$dev" ] || ! insmod "$ko"; then
	echo "Bail out! no faulty namespace ($dev) or insmod $ko failed" | tee "$out/faults.tap"
	echo 1 >"$out/guest.rc"
	exit 1
fi
echo "guest: Linux $kv, faulty namespace $dev"
# A task stuck on a failed I/O is exactly what this run looks for: time-limited (it takes
# about 5 s under TCG on the 2-core build machine).
pt_step "fault_test" 120 "$out/faults.tap" "$bin" "$dev" || rc=1

{
	echo "TAP version 13"
	if rmmod pagetier; then
		echo "ok 1 pagetier.ko unloads after the faults"
	else
		echo "not ok 1 pagetier.ko unloads after the faults"
	fi
	dmesg >"$out/dmesg.txt"
	n=$(grep -c 'pagetier: pagetier[0-9]*: write of .* failed' "$out/dmesg.txt")
	[ "$n" -gt 0 ] && echo "ok 2 write errors are logged ($n lines)" ||
		echo "not ok 2 write errors are logged"
	n=$(grep -c 'pagetier: pagetier[0-9]*: write-back of .* failed' "$out/dmesg.txt")
	[ "$n" -gt 0 ] && echo "ok 3 write-back errors of the write buffer are logged ($n lines)" ||
		echo "not ok 3 write-back errors of the write buffer are logged"
	n=$(grep -c 'pagetier: pagetier[0-9]*: read of .* failed' "$out/dmesg.txt")
	[ "$n" -gt 0 ] && echo "ok 4 read errors are logged ($n lines)" ||
		echo "not ok 4 read errors are logged"
	bad=$(pt_kernel_log_problems "$out/dmesg.txt")
	if [ -z "$bad" ]; then
		echo "ok 5 kernel log free of BUG, WARNING, Oops and call traces"
	else
		echo "not ok 5 kernel log free of BUG, WARNING, Oops and call traces"
		echo "$bad" | head -20 | sed 's/^/#   /'
	fi
	grep -E 'pagetier|Write-error|Read-error|I/O error' "$out/dmesg.txt" | head -12 | sed 's/^/# /'
	echo "1..5"
} 2>&1 | tee "$out/module.tap"
grep -q '^not ok' "$out/module.tap" && rc=1
echo "$rc" >"$out/guest.rc"
exit "$rc"
