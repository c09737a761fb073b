#!/bin/bash
# In the guest of bench/tier/run.sh: restore a cgroup's offloaded memory from the
# benchmark namespace (serial pagetier-bench) in three ways, RUNS times each:
#   fault     plain swap on the namespace, demand faults
#   willneed  plain swap on the namespace, MADV_WILLNEED then touch
#   prefetch  a pagetier tier over the namespace, PREFETCH + MADV_WILLNEED then touch
#   ramswap   plain swap on a RAM disk (brd), MADV_WILLNEED then touch: no drive at all,
#             the guest CPU's own cost of a restore through the kernel's swap-in
# and the namespace's raw sequential read bandwidth. Results: $PT_OUT/results.txt.
#
# With FRAG=N (run.sh passes it), (b) and (c) once more, the container offloaded
# interleaved with N others (tier_bench.c).
#
#   guest.sh PROFILE RUNS TIER_BENCH MIB
set -u
out=${PT_OUT:?} top=${PT_TOP:?} profile=$1 runs=$2 bin=$3 mib=$4
frag=${FRAG:-0}
unset FRAG	# tier_bench reads it: only the runs below that pass it get it
kv=$(uname -r)
ko=${PT_KO:-$top/build/kmod/$kv/pagetier.ko}
res=$out/results.txt
cg=/sys/fs/cgroup/tierbench

dev=
for c in /sys/class/nvme/nvme*; do
	[ "$(tr -d ' ' <"$c/serial")" = pagetier-bench ] && dev=/dev/$(basename "$c")n1
done
[ -n "$dev" ] || { echo "no benchmark namespace"; echo 1 >"$out/guest.rc"; exit 1; }
insmod "$ko" || { echo 1 >"$out/guest.rc"; exit 1; }
echo N >/sys/module/zswap/parameters/enabled 2>/dev/null
grep -q cgroup2 /proc/mounts || mount -t cgroup2 none /sys/fs/cgroup
echo +memory >/sys/fs/cgroup/cgroup.subtree_control
mkdir -p $cg
echo "# Linux $kv, profile $profile, $(nproc) CPUs, $dev" | tee "$res"

# Raw sequential bandwidth: write, then read back, 1 MiB direct I/O, queue depth 1.
dd if=/dev/urandom of=/tmp/rand bs=1M count=64 status=none
for i in 0 1 2 3; do dd if=/tmp/rand of="$dev" bs=1M seek=$((i * 64)) oflag=direct status=none; done
t0=$(date +%s.%N)
dd if="$dev" of=/dev/null bs=1M count=256 iflag=direct status=none
t1=$(date +%s.%N)
echo "RESULT mode=rawseq mib=256 secs=$(echo "$t1 - $t0" | bc) mbps=$(echo "scale=1; 268.435456 / ($t1 - $t0)" | bc)" | tee -a "$res"

# plain MODES [ENV]: plain swap on the namespace; tier [ENV]: swap on a tier over it.
plain() {
	local mode
	for mode in $1; do
		mkswap -q "$dev" >/dev/null && swapon -p 32767 "$dev"
		env $2 "$bin" restore $mode "$mib" $cg "$dev" | tee -a "$res"
		swapoff "$dev"
	done
}
tier() {
	local id i
	id=$("$bin" create "$dev")
	for i in $(seq 50); do [ -b /dev/pagetier$id ] && break; sleep 0.1; done
	mkswap -q /dev/pagetier$id >/dev/null && swapon --discard=pages -p 32767 /dev/pagetier$id
	env $1 "$bin" restore prefetch "$mib" $cg "$dev" "$id" | tee -a "$res"
	cat /sys/block/pagetier$id/read_stat /sys/block/pagetier$id/io_stat | sed 's/^/# /' | tee -a "$res"
	swapoff /dev/pagetier$id
	"$bin" destroy "$id"
}

# No drive: the same restore from swap in RAM (brd, sized for the container), so that what
# is left is the guest CPU's cost of swapping pages in (the page faults, the swap cache, the
# memcg charge, the LRU) and a copy per page. brd reads synchronously, in the caller: this
# bounds the cost of a page, not the overlap of reads with faults that a drive allows.
ramswap() {
	modprobe brd rd_nr=1 rd_size=$(((mib + 64) * 1024)) max_part=0 || {
		echo "# ramswap: modprobe brd failed" | tee -a "$res"; return; }
	mkswap -q /dev/ram0 >/dev/null && swapon -p 32767 /dev/ram0
	"$bin" restore willneed "$mib" $cg /dev/ram0 | sed 's/mode=willneed/mode=ramswap/' | tee -a "$res"
	swapoff /dev/ram0
	rmmod brd
}

for r in $(seq "$runs"); do
	plain "fault willneed" ""
	tier ""
	ramswap
	if [ "$frag" -gt 0 ]; then
		plain willneed "FRAG=$frag"
		tier "FRAG=$frag"
	fi
done
rmdir $cg $cg-f* 2>/dev/null
rmmod pagetier
dmesg | grep -E 'BUG:|WARNING:|Oops|Call Trace:' && { echo 1 >"$out/guest.rc"; exit 1; }
echo 0 >"$out/guest.rc"
