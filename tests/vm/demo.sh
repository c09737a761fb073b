#!/bin/bash
# make demo: boot a VM with an emulated NVMe drive, run three containers, two of them opted
# in, and show their memory going to the pagetier tier while idle and coming back, verified.
#
#   tests/vm/demo.sh [KERNEL_VERSION]   (default: the newest target kernel)
set -u
. "$(dirname "$0")/lib.sh"
kv=${1:-$(tail -1 "$PT_TOP/build/kernels.txt" 2>/dev/null)}
[ -n "$kv" ] || pt_die "no kernel: run make deps"
out=$PT_TOP/build/vm/demo-$kv
echo "demo: booting Linux $kv under QEMU (software emulation, about a minute) ..."
pt_vm_run "$kv" "$out" "tests/vm/guest-demo.sh" >/dev/null
if [ ! -f "$out/demo.txt" ]; then
	echo "demo: the guest did not run the scenario; last console lines:" >&2
	tail -n 80 "$out/console.log" >&2
	exit 1
fi
# The report, without the TAP bookkeeping (that is in $out/demo.txt).
sed -n '/==== pagetier demo report ====/,/^=====/p' "$out/demo.txt"
fails=$(grep -c '^not ok' "$out/demo.txt")
checks=$(grep -cE '^(not )?ok [0-9]' "$out/demo.txt")
if [ "$(cat "$out/guest.rc" 2>/dev/null)" = 0 ] && [ "$fails" = 0 ]; then
	echo "demo: all $checks checks passed (details: $out/demo.txt)"
else
	echo "demo: FAILED: $fails of $checks checks failed:" >&2
	grep -A3 '^not ok' "$out/demo.txt" >&2
	exit 1
fi
