# shellcheck shell=bash
# The VM launcher shared by run-suite.sh, demo.sh and the benchmarks: boots a Debian kernel
# under QEMU (TCG: a KVM guest hangs on these machines) with the host's userspace through
# virtme-ng, an emulated NVMe drive backed by a fresh sparse file, and a read-write results
# directory. Everything else the guest sees of the host is read-only.

PT_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PT_VM_MEM=${PT_VM_MEM:-3G}
PT_VM_CPUS=${PT_VM_CPUS:-2}
PT_VM_NVME_SIZE=${PT_VM_NVME_SIZE:-4G}
# TCG's threading: "multi" (MTTCG, QEMU's default) gives each vCPU a host thread; "single"
# runs them all in one, taking turns. QEMU 7.2's MTTCG can run a vCPU through a stale
# translation of kernel text another vCPU has just live-patched (a static key, a tracepoint
# or BPF trampoline that pagetierd attaches or detaches): the guest dies of an int3 oops, a
# double fault or a general protection fault at a patch site (make test on 6.12: three
# guests of four in one session, at exc_page_fault's page_fault_user tracepoint, at
# __kmalloc_node_noprof). Single-threaded, that cannot happen, but the guest has half the
# CPU: the 6.1 suite did not finish in 900 s, and real_servers' light load was not served
# (nginx 310 requests of the 600 asked). So MTTCG it is, and pt_vm_run runs such a death
# again (PT_VM_EMULATOR_RETRIES).
PT_VM_TCG_THREAD=${PT_VM_TCG_THREAD:-multi}
# PT_VM_TIMEOUT (seconds a guest may run, default PT_VM_TIMEOUT_DEFAULT) is read by
# pt_vm_run itself, so that a caller's own default (PT_VM_TIMEOUT=${PT_VM_TIMEOUT:-2400}
# pt_vm_run ...) applies.
PT_VM_TIMEOUT_DEFAULT=900
# Free host disk a run needs for its sparse image: the suite writes 1.6 GiB of it at most
# (measured with du); a run that needs more sets it (the benchmarks ask for the whole image).
PT_VM_DISK_NEED=${PT_VM_DISK_NEED:-2G}
export PATH="$PT_TOP/.venv/bin:$PATH"

pt_die() { printf 'vm: error: %s\n' "$*" >&2; exit 1; }

# One guest at a time on this machine: a TCG guest takes every core, and two of them make
# each other's timings noise (and may not fit in memory together). pt_vm_run takes
# PT_VM_LOCK (flock) for the guest's lifetime and waits, saying so, while another run holds
# it. A script that runs several guests as one measurement takes it once for all of them
# with pt_vm_lock and sets PT_VM_LOCK_HELD=1; pt_vm_run then leaves it alone.
PT_VM_LOCK=${PT_VM_LOCK:-/tmp/pagetier-vm.lock}

pt_vm_lock() {
	[ "${PT_VM_LOCK_HELD:-0}" = 1 ] && return 0
	exec {PT_VM_LOCK_FD}>>"$PT_VM_LOCK" || pt_die "cannot open the VM lock $PT_VM_LOCK"
	if ! flock -n "$PT_VM_LOCK_FD"; then
		echo "vm: another guest runs on this machine (lock $PT_VM_LOCK held by: $(pt_vm_lock_holder)); waiting" >&2
		flock "$PT_VM_LOCK_FD"
	fi
	echo "$$ $(date -u +%FT%TZ) ${0##*/}" >"$PT_VM_LOCK.owner" 2>/dev/null
	PT_VM_LOCK_HELD=1
	PT_VM_LOCK_OWN=1
}

pt_vm_unlock() {
	[ "${PT_VM_LOCK_OWN:-0}" = 1 ] || return 0
	flock -u "$PT_VM_LOCK_FD"
	exec {PT_VM_LOCK_FD}>&-
	PT_VM_LOCK_HELD=0
	PT_VM_LOCK_OWN=0
}

pt_vm_lock_holder() {
	cat "$PT_VM_LOCK.owner" 2>/dev/null || echo unknown
}

# Drive options of every emulated disk: a host I/O error, ENOSPC included, reaches the guest
# as an I/O error. QEMU's default (werror=enospc) pauses the VM on a full host disk instead,
# and a paused guest prints nothing until the timeout. The suite grows its image to about
# 1.6 GiB (its e2e scenarios swap a 1 GiB container out through the log-structured tier).
PT_DRIVE_OPTS="werror=report,rerror=report"

# pt_new_image IMAGE SIZE NEED: a fresh sparse IMAGE of SIZE (truncate's syntax, e.g. 4G),
# of which the guest will write NEED: refuse to start with less free space than that on
# its file system. Should it write more than there is, the guest gets I/O errors
# (PT_DRIVE_OPTS), and tests fail.
pt_new_image() {
	local img=$1 size=$2 need=$3 dir bytes avail
	dir=$(dirname "$img")
	bytes=$(numfmt --from=iec "$need") || pt_die "bad size '$need'"
	avail=$(df --output=avail -B1 "$dir" | tail -n 1)
	[ "$avail" -ge "$bytes" ] ||
		pt_die "$(numfmt --to=iec "$avail") free on $(df --output=target "$dir" | tail -n 1), but the guest will write up to $need of the emulated disk $img: free some space"
	rm -f "$img"
	truncate -s "$size" "$img"
}

# pt_qemu_pids IMAGE: the processes of the guest whose drive is IMAGE (qemu, and the
# virtme-ng and timeout above it, which carry its options). The path is matched literally:
# a kernel version such as 6.12.117+deb12 holds regex syntax.
pt_qemu_pids() {
	local re
	re=$(printf 'file=%s,' "$1" | sed 's/[][\.*^$+?(){}|]/\\&/g')
	pgrep -f -- "$re"
}

# pt_env_assignments VAR...: "VAR='value' " for each VAR set and not empty, to put before
# a guest command (how the benchmarks hand their knobs to the guest).
pt_env_assignments() {
	local v out=""

	for v in "$@"; do
		[ -n "${!v:-}" ] && out+="$v='${!v}' "
	done
	printf '%s' "$out"
}

# The cloud-disk profile of the benchmarks' drive: 3,000 IOPS and 125 MB/s (QEMU -drive
# throttling options; THROTTLE overrides).
PT_CLOUD_THROTTLE=${THROTTLE:-throttling.iops-total=3000,throttling.bps-total=125000000}

# pt_vm_run KERNEL_VERSION OUT_DIR GUEST_COMMAND [EXTRA_QEMU_OPTS]
# Runs GUEST_COMMAND in the guest with $PT_OUT=OUT_DIR; the console goes to
# OUT_DIR/console.log and to stdout. Returns vng's exit status, 124 if the guest outlived
# PT_VM_TIMEOUT: then OUT_DIR/qmp-diag.txt says what QEMU saw, and the console ends with
# the guest's panic on the NMI that qmp_diag.py sent, with the backtrace of the CPU it
# interrupted.
pt_vm_run() {
	local out=$2 rc kind try=0 i retries=${PT_VM_EMULATOR_RETRIES:-3}
	pt_vm_run_once "$@"
	rc=$?
	# QEMU 7.2's multi-threaded TCG can run a vCPU through a stale translation of kernel
	# text that the other vCPU just live-patched (a static key, a BPF trampoline; see
	# cgroup.memory=nokmem below): the guest dies of an int3 oops at the patched site (as
	# in ttwu_do_activate while pagetierd attached its sched_wakeup program, two CI runs of
	# twenty; at exc_page_fault's tracepoint site and a double fault in
	# __kmalloc_node_noprof in one make test on 6.12), or of an invalid opcode or a general
	# protection fault in a half-written instruction. console_crash.py tells those from
	# everything else: a report that names pagetier.ko, or any other kind, is the run's
	# result. An emulator's death is run again, up to PT_VM_EMULATOR_RETRIES (3) times, and says so; each such console stays
	# beside the output (emulator-console-N.log), and its report is printed. 0: no retry.
	# Three: one make test on 2026-12-02 lost its 6.12 guest twice (an int3 at
	# exc_page_fault's static key 504 s in, then at sched_clock_cpu's 3 s into the boot, "Not
	# tainted") and passed on the third.
	# The steps the dead guest finished (guest-lib.sh: pt_step, a TAP file and its .rc) are
	# kept, and the guest runs only the rest: a retry costs the boot and the step the
	# emulator killed, not the whole guest again (CI passed one make test in 1,738 s where
	# others took 926-1,072). The kernel-log check at the end of a suite then reads the last
	# boot's log; the dead boot's first report was the emulator's, or there is no retry.
	while [ "$try" -lt "$retries" ]; do
		kind=$(python3 "$PT_TOP/tests/vm/console_crash.py" --kind "$out/console.log" 2>/dev/null)
		[ "$kind" = emulator ] || break
		try=$((try + 1))
		cp "$out/console.log" "$out.emulator-console-$try.log"
		rm -rf "$out.kept" && mkdir -p "$out.kept"
		local rcf kept=0
		for rcf in "$out"/*.rc; do
			[ -f "$rcf" ] && [ -f "${rcf%.rc}" ] || continue
			cp -a "$rcf" "${rcf%.rc}" "$out.kept/" && kept=$((kept + 1))
		done
		{
			echo "vm: the guest died of the emulator's bug (QEMU 7.2 MTTCG, stale translation of patched kernel text; its console: $out.emulator-console-$try.log): running it again ($try of $retries), keeping the steps it finished ($kept). Its report:"
			python3 "$PT_TOP/tests/vm/console_crash.py" "$out.emulator-console-$try.log" | sed 1d | head -n 25 | sed 's/^/vm:   /'
		} >&2
		PT_VM_KEPT=$out.kept pt_vm_run_once "$@"
		rc=$?
	done
	rm -rf "$out.kept"
	for ((i = 1; i <= try; i++)); do
		mv "$out.emulator-console-$i.log" "$out/emulator-console-$i.log" 2>/dev/null
	done
	return "$rc"
}

pt_vm_run_once() {
	local kv=$1 out=$2 cmd=$3 extra=${4:-}
	local vmlinuz=/boot/vmlinuz-$kv img="$out/nvme.img" qmp="$out/qmp.sock" wd rc
	local limit=${PT_VM_TIMEOUT:-$PT_VM_TIMEOUT_DEFAULT}

	[ -x "$PT_TOP/.venv/bin/vng" ] || pt_die "virtme-ng missing (.venv/bin/vng): run make deps"
	[ -f "$vmlinuz" ] || pt_die "kernel image $vmlinuz missing: run make deps"
	[ -f "$PT_TOP/build/kmod/$kv/pagetier.ko" ] ||
		pt_die "pagetier.ko for $kv not built (build/kmod/$kv): run make"
	local locked_here=0
	[ "${PT_VM_LOCK_HELD:-0}" = 1 ] || { pt_vm_lock; locked_here=1; }
	rm -rf "$out" && mkdir -p "$out"
	# A run again after the emulator's death: the steps the dead guest finished (pt_vm_run).
	[ -n "${PT_VM_KEPT:-}" ] && cp -a "$PT_VM_KEPT"/. "$out"/
	pt_new_image "$img" "$PT_VM_NVME_SIZE" "$PT_VM_DISK_NEED"

	# The watchdog: at PT_VM_TIMEOUT it asks QEMU what the guest is doing (qmp_diag.py).
	# Its sleep dies with it: an orphan would hold the caller's output open. Nor does it
	# hold the VM lock: a run killed from outside left its watchdog's sleep holding it, and
	# the next run waited for that sleep.
	(
		[ -n "${PT_VM_LOCK_FD:-}" ] && exec {PT_VM_LOCK_FD}>&-
		trap 'kill "$sp" 2>/dev/null; exit 0' TERM
		sleep "$limit" & sp=$!
		wait "$sp"
		touch "$out/timed-out"
		{
			echo "vm: the guest is still running after ${limit}s; asking QEMU (QMP)"
			python3 "$PT_TOP/tests/vm/qmp_diag.py" "$qmp"
		} 2>&1 | tee "$out/qmp-diag.txt" >&2
	) &
	wd=$!
	# Guest kernel arguments:
	local kargs=(
		# The console joins the stream (vng --verbose) at loglevel 5: errors and warnings
		# (hung tasks, lockups, WARN, oops, panic) show where they happen.
		loglevel=5
		# The watchdog's NMI panics the guest with the interrupted CPU's backtrace.
		unknown_nmi_panic=1 panic_print=0x40
		# Soft lockups are reported after 2 x 60 s, not 2 x 10: under TCG a vCPU's thread
		# can get no host CPU for tens of seconds (two host cores for two vCPU threads,
		# QEMU's I/O threads and the 9p server): "soft lockup - CPU#0 stuck for 23s" in
		# clear_page_erms, zeroing a huge page for critical_low's memory hog, no pagetier
		# frame, failed a make test on 6.12. A real lockup lasts; the step limits and the
		# hung-task detector stay as they are.
		watchdog_thresh=60
		# The first memory cgroup a guest creates turns on the memcg kmem static key, and
		# the kernel live-patches every site of it (int3, then the new bytes). QEMU 7.2's
		# multi-threaded TCG can run the other vCPU through a stale translation of a
		# patched site afterwards: "Oops: int3" in __kmalloc_noprof, caught in CI at the
		# start of tier_log_test's placement_two_cgroups, the first test that creates a
		# cgroup (an oops under cgroup_mutex: the guest hangs or panics). Without kmem
		# accounting that key never flips. Pages of user memory, all the tier ever
		# stores, are charged to their memcg as before.
		cgroup.memory=nokmem
		# The same for the cpuset controller's static key (cpusets_enabled_key), which the
		# page allocator tests on every allocation: it flips when the first cpuset cgroup
		# comes online and when the last goes. crun enables every controller the root
		# offers, so crun_containers flipped it twice, and a make test on 6.12 died of
		# "Oops: int3" at __alloc_pages_noprof+0xe2, its cpusets_enabled() site (after
		# gfp_migratetype()), the moment crun had deleted its containers. Nothing here uses
		# cpusets.
		cgroup_disable=cpuset
		# udev loads a driver for every device QEMU's q35 machine has; each module load
		# (xz-compressed, relocated) is slow under TCG, and virtme-ng-init waited 15 s of a
		# 26 s boot for them. None of these is used here (the SATA CD-ROM, KVM, the
		# watchdogs, the chipset's SMBus and LPC, the PC speaker, AES-NI, the CPU's
		# frequency driver); an explicit modprobe still loads any of them.
		modprobe.blacklist=ahci,libahci,sr_mod,cdrom,sg,kvm_amd,kvm_intel,kvm,iTCO_wdt,iTCO_vendor_support,i6300esb,i2c_i801,lpc_ich,pcspkr,aesni_intel,powernow_k8,psmouse
	)
	# Not --foreground: vng starts virtme-run, which starts qemu, and with --foreground
	# timeout signals vng alone. qemu then runs on, keeps the console pipe open and tee
	# waits for it forever. Without it, timeout leads a process group of its own and
	# signals all of it. stdin is /dev/null and stdout a pipe, so a background process
	# group never touches the terminal. It fires 30 s after the watchdog, time for the
	# guest to print its panic. --verbose also makes virtme-run tell of its virtiofsd
	# attempts (it falls back to 9p): filtered.
	timeout -k 10 $((limit + 30)) \
		vng --run "$vmlinuz" --disable-kvm --memory "$PT_VM_MEM" --cpus "$PT_VM_CPUS" \
		--cwd "$PT_TOP" --rwdir "$out" --verbose --append "${kargs[*]}" \
		--qemu-opts="-accel tcg,thread=$PT_VM_TCG_THREAD -qmp unix:$qmp,server=on,wait=off -drive file=$img,if=none,id=nv0,format=raw,cache=none,aio=threads,$PT_DRIVE_OPTS -device nvme,serial=pagetier-nvme,drive=nv0 $extra" \
		--exec "export PT_OUT=$out PT_TOP=$PT_TOP; $cmd" </dev/null 2>&1 |
		sed -u -e 's/^virtme-run: failed to start virtiofsd, fallback to 9p//' \
			-e '/^virtme: waiting for virtiofsd/d' -e '/^fuse: invalid argument/d' |
		tee "$out/console.log"
	rc=${PIPESTATUS[0]}
	kill "$wd" 2>/dev/null
	wait "$wd" 2>/dev/null
	[ -e "$out/timed-out" ] && rc=124
	# A qemu left over would hold the image and a CPU: its drive path names this run's.
	pt_qemu_pids "$img" | xargs -r kill -KILL 2>/dev/null
	rm -f "$img" "$qmp" "$out/timed-out"
	[ "$locked_here" = 1 ] && pt_vm_unlock
	return "$rc"
}
