#!/bin/bash
# Fault injection: QEMU's blkdebug makes the backing file of a second emulated NVMe
# namespace fail writes of [4, 8) MiB and reads of [12, 13) MiB; tests/vm/faults/guest.sh
# runs fault_test (raw I/O and swap through a tier over that namespace) and checks that
# the module unloads and the kernel log holds the errors and no oops. TAP per kernel in
# build/vm/faults-<KV>/.
#
#   tests/vm/faults/run.sh [KERNEL_VERSION...]      (default: build/kernels.txt)
set -u
. "$(dirname "$0")/../lib.sh"
kernels=${*:-$(cat "$PT_TOP/build/kernels.txt")}
bin=$PT_TOP/build/faults/fault_test

mkdir -p "$(dirname "$bin")"
gcc -O2 -g -Wall -Wextra -Werror -std=gnu11 -I"$PT_TOP/kmod/uapi" -I"$PT_TOP/tests/kselftest" -o "$bin" \
	"$PT_TOP/tests/vm/faults/fault_test.c" || pt_die "cannot build fault_test"

# One rule per 4 KiB block: blkdebug matches a request that covers a rule's sector.
# Rules of event "none" are armed when the image opens and stay armed.
blkdebug_conf() {
	local s
	for ((s = 4 * 2048; s < 8 * 2048; s += 8)); do
		printf '[inject-error]\nevent = "none"\niotype = "write"\nerrno = "5"\nsector = "%d"\n\n' "$s"
	done
	for ((s = 12 * 2048; s < 13 * 2048; s += 8)); do
		printf '[inject-error]\nevent = "none"\niotype = "read"\nerrno = "5"\nsector = "%d"\n\n' "$s"
	done
}

rc=0
for kv in $kernels; do
	out=$PT_TOP/build/vm/faults-$kv
	imgdir=$out.img		# pt_vm_run empties $out
	mkdir -p "$imgdir"
	pt_new_image "$imgdir/faulty.img" 4G 512M	# fault_test writes a few MiB of it
	blkdebug_conf >"$imgdir/blkdebug.conf"
	echo "==== fault injection on Linux $kv ===="
	# About 30 s normally: the suite's 900 s would be too long to wait for a hang.
	PT_VM_TIMEOUT=${PT_FAULTS_TIMEOUT:-300} pt_vm_run "$kv" "$out" "tests/vm/faults/guest.sh $bin" \
		"-drive driver=blkdebug,config=$imgdir/blkdebug.conf,image.filename=$imgdir/faulty.img,if=none,id=nvf,$PT_DRIVE_OPTS -device nvme,serial=pagetier-faulty,drive=nvf" >/dev/null
	rm -f "$imgdir/faulty.img"
	p=$(cat "$out"/*.tap 2>/dev/null | grep -c '^ok ')
	f=$(cat "$out"/*.tap 2>/dev/null | grep -c '^not ok ')
	if [ ! -f "$out/guest.rc" ] || [ "$(cat "$out/guest.rc")" != 0 ] || [ "$f" != 0 ]; then
		rc=1
		grep -h '^not ok\|^Bail' "$out"/*.tap 2>/dev/null
		[ -f "$out/guest.rc" ] || { echo "guest did not finish:"; tail -n 80 "$out/console.log"; }
	fi
	echo "==== Linux $kv: $p passed, $f failed (TAP in $out)"
done
exit $rc
