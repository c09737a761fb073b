#!/bin/bash
# In the guest of bench/tier/prio.sh: prio_bench on the benchmark device raw, then on a
# tier over it. The device is the NVMe namespace of serial pagetier-bench, or for the
# profile nullb a memory-backed null_blk throttled to NULLB_MBPS (120) MiB/s.
# Results: $PT_OUT/results.txt.
#
#   prio-guest.sh PROFILE PRIO_BENCH FLOOD_MIB
set -u
out=${PT_OUT:?} top=${PT_TOP:?} profile=$1 bin=$2 mib=$3
kv=$(uname -r)
res=$out/results.txt
fail() { echo "prio-guest: $*" | tee -a "$res"; echo 1 >"$out/guest.rc"; exit 1; }

dev=
if [ "$profile" = nullb ]; then
	# One bandwidth bucket for reads and writes, served in order: a FIFO disk.
	modprobe null_blk queue_mode=2 gb=2 memory_backed=1 mbps=${NULLB_MBPS:-120} \
		irqmode=2 completion_nsec=100000 nr_devices=1 || fail "modprobe null_blk failed"
	dev=/dev/nullb0
	for i in $(seq 50); do [ -b $dev ] && break; sleep 0.1; done
else
	for c in /sys/class/nvme/nvme*; do
		[ "$(tr -d ' ' <"$c/serial")" = pagetier-bench ] && dev=/dev/$(basename "$c")n1
	done
fi
[ -n "$dev" ] && [ -b "$dev" ] || fail "no benchmark device"
insmod "${PT_KO:-$top/build/kmod/$kv/pagetier.ko}" || fail "insmod failed"
echo "# Linux $kv, profile $profile, $(nproc) CPUs, $dev" | tee "$res"
"$bin" "$dev" "$mib" | sed 's/^RESULT /RESULT what=raw /' | tee -a "$res"
[ "${PIPESTATUS[0]}" = 0 ] || fail "prio_bench on $dev failed"
id=$("$top/build/bin/pagetierctl" --json tier create "$dev" | sed -n 's/.*"tier_id":\([0-9]*\).*/\1/p')
[ -n "$id" ] || fail "tier create over $dev failed"
for i in $(seq 50); do [ -b /dev/pagetier$id ] && break; sleep 0.1; done
"$bin" /dev/pagetier$id "$mib" | sed 's/^RESULT /RESULT what=tier /' | tee -a "$res"
[ "${PIPESTATUS[0]}" = 0 ] || fail "prio_bench on the tier failed"
sed 's/^/# io_stat /' /sys/block/pagetier$id/io_stat | tee -a "$res"
"$top/build/bin/pagetierctl" tier destroy "$id" || fail "tier destroy failed"
rmmod pagetier
dmesg | grep -E 'BUG:|WARNING:|Oops|Call Trace:' && fail "kernel log has errors"
echo 0 >"$out/guest.rc"
