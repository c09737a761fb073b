#!/bin/bash
# make test's VM half: for each kernel, boot a VM with an emulated NVMe drive, run
# guest-suite.sh inside, collect the TAP and print a summary. Any failure, any skip, a guest
# that does not boot or a module that does not load fails the run, with the reason.
#
#   tests/vm/run-suite.sh KERNEL_VERSION...
#   PT_ONLY="real_servers ...": only these kselftests and e2e scenarios (while developing)
#   PT_STEP_SCALE=N: each step's time limit times N (make test-debug's slow kernel)
#   PT_KO=PATH: load this pagetier.ko instead of build/kmod/KV's (a before-the-fix run)
#   PT_E2E_BIN_DIR=DIR, PT_E2E_LIB=PATH: the pagetierd/pagetierctl and libpagetier.so the e2e
#     scenarios that take them run (fork_flood; a before-the-fix run); default build/'s
#   PT_FORK_FLOOD_NOFILE=SOFT:HARD: pagetierd's RLIMIT_NOFILE in fork_flood (default 1024:4096)
#   PT_REAL_IDLE_S=N: real_servers's idle phase goes on N s more, and says what the servers'
#     own background made pagetierd do (with PT_STEP_SCALE for its step limit);
#     PT_REAL_IDLE_THRESHOLD=30s: its idle_threshold instead of 3s
#   PT_SUITE_OUT=DIR: the guests' output under DIR/KV, not build/vm/KV (runs of different
#     scenarios, one after the other on the VM lock, each reading its own results)
set -u
. "$(dirname "$0")/lib.sh"
[ $# -gt 0 ] || pt_die "no kernels given (make deps records them in build/kernels.txt)"
# The whole suite in one guest: 714-898 s in the last runs, against lib.sh's 900 s
# default for any guest; each step has its own hang limit inside (guest-suite.sh).
export PT_VM_TIMEOUT=${PT_VM_TIMEOUT:-1500}

declare -A RUN PASS FAIL SKIP WHY
total_pass=0 total_fail=0
for kv in "$@"; do
	out=${PT_SUITE_OUT:-$PT_TOP/build/vm}/$kv
	echo "==== VM suite on Linux $kv (QEMU TCG, emulated NVMe) ===="
	start=$(date +%s)
	pt_vm_run "$kv" "$out" "${PT_ONLY:+PT_ONLY='$PT_ONLY' }${PT_STEP_SCALE:+PT_STEP_SCALE='$PT_STEP_SCALE' }${PT_KO:+PT_KO='$PT_KO' }${PT_E2E_BIN_DIR:+PT_E2E_BIN_DIR='$PT_E2E_BIN_DIR' }${PT_E2E_LIB:+PT_E2E_LIB='$PT_E2E_LIB' }${PT_FORK_FLOOD_NOFILE:+PT_FORK_FLOOD_NOFILE='$PT_FORK_FLOOD_NOFILE' }${PT_REAL_IDLE_S:+PT_REAL_IDLE_S='$PT_REAL_IDLE_S' }${PT_REAL_IDLE_THRESHOLD:+PT_REAL_IDLE_THRESHOLD='$PT_REAL_IDLE_THRESHOLD' }tests/vm/guest-suite.sh"
	vrc=$?
	p=0 f=0 s=0
	for tap in "$out"/*.tap; do
		[ -f "$tap" ] || continue
		p=$((p + $(grep -cE '^ok [0-9]+' "$tap" | head -1)))
		f=$((f + $(grep -cE '^not ok [0-9]+' "$tap" | head -1)))
		s=$((s + $(grep -ciE '^(not )?ok [0-9]+.*# SKIP' "$tap" | head -1)))
		grep -q '^Bail out!' "$tap" && { f=$((f + 1)); WHY[$kv]+="$(grep -m1 '^Bail out!' "$tap"); "; }
	done
	p=$((p - s))
	if [ ! -f "$out/guest.rc" ]; then
		f=$((f + 1))
		if [ "$vrc" = 124 ]; then
			WHY[$kv]+="guest timed out after ${PT_VM_TIMEOUT}s (hang or panic); "
		else
			WHY[$kv]+="guest did not finish (exit $vrc): boot failure or kernel crash; "
		fi
		WHY[$kv]+="console: $out/console.log"
		# The kernel's first report (an oops, a BUG), which the NMI backtraces of a panic
		# push out of the console's last lines; then those lines.
		echo "---- the kernel's first report ----"
		python3 "$PT_TOP/tests/vm/console_crash.py" "$out/console.log"
		echo "---- last console lines ----"; tail -n 60 "$out/console.log"
		[ -f "$out/qmp-diag.txt" ] && { echo "---- QEMU ----"; cat "$out/qmp-diag.txt"; }
	elif [ "$(cat "$out/guest.rc")" != 0 ] && [ "$f" = 0 ]; then
		f=1; WHY[$kv]+="guest suite exited non-zero; "
	fi
	[ "$s" -gt 0 ] && WHY[$kv]+="$s skipped: a skip in the VM suite is a failure; "
	RUN[$kv]=$((p + f + s)) PASS[$kv]=$p FAIL[$kv]=$f SKIP[$kv]=$s
	total_pass=$((total_pass + p)); total_fail=$((total_fail + f + s))
	echo "==== Linux $kv: ${RUN[$kv]} run, $p passed, $f failed, $s skipped ($(( $(date +%s) - start )) s)"
done

echo
echo "VM suite summary"
printf '  %-28s %5s %7s %7s %8s\n' kernel run passed failed skipped
for kv in "$@"; do
	printf '  %-28s %5s %7s %7s %8s\n' "$kv" "${RUN[$kv]}" "${PASS[$kv]}" "${FAIL[$kv]}" "${SKIP[$kv]}"
	[ -n "${WHY[$kv]:-}" ] && printf '    FAILED: %s\n' "${WHY[$kv]}"
done
echo "vm: $total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
