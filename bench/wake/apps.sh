#!/bin/bash
# Wake of real applications and of every kind of memory: never offloaded, plain swap
# (demand paging) and pagetier, side by side in one VM run per kernel x device profile.
# Emulated (QEMU TCG) figures: compare the rows of one run, not the absolute times.
#
#   bench/wake/apps.sh     env: KERNELS ("6.12 6.1"), PROFILES ("unthrottled cloud"),
#                          WORKLOADS, MODES, RATE, WINDOW_S, REDIS_ITEMS (see apps.py)
#                          PT_KMOD_PARAMS: pagetier.ko's parameters (e.g. staging_mib=256)
#                          WAKE_TRACE=1: perf sched record of each pagetierd wake, a diagnosis
#                          PAGETIERD_LOG_LEVEL=debug: pagetierd's log (pagetierd-NAME.log) in detail
#                          HOST_CPU=1: where the host's cores went during each wake
#                          (host_cpu.py: the vCPUs' stolen time, QEMU's I/O threads)
set -u
. "$(dirname "$0")/../../tests/vm/lib.sh"
out=${WAKE_OUT:-$PT_TOP/build/bench/wake-apps}
pass=(WORKLOADS MODES RATE WINDOW_S REDIS_ITEMS PYWEB_ITEMS WAKE_TRACE PAGETIERD_LOG_LEVEL HOST_CPU)
base=$PT_DRIVE_OPTS
mkdir -p "$out"
rc=0
for k in ${KERNELS:-6.12 6.1}; do
	kv=$(grep -m1 "^$k" "$PT_TOP/build/kernels.txt") || pt_die "no kernel $k in build/kernels.txt"
	for p in ${PROFILES:-unthrottled cloud}; do
		echo "== wake apps: $p, $kv"
		envs="PROFILE=$p $(pt_env_assignments "${pass[@]}")"
		PT_DRIVE_OPTS=$base
		[ "$p" = cloud ] && PT_DRIVE_OPTS+=",$PT_CLOUD_THROTTLE"
		sampler=
		if [ "${HOST_CPU:-}" = 1 ]; then
			python3 "$PT_TOP/bench/wake/host_cpu.py" record "$out/$kv-$p" & sampler=$!
		fi
		PT_VM_TIMEOUT=${PT_VM_TIMEOUT:-3000} pt_vm_run "$kv" "$out/$kv-$p" \
			"insmod build/kmod/$kv/pagetier.ko ${PT_KMOD_PARAMS:-} && $envs python3 bench/wake/apps.py 2>&1 | tee \$PT_OUT/result.txt" |
			grep --line-buffered -E '^# |Traceback|Error|error:|Bail' || true
		if [ -n "$sampler" ]; then
			# The guest's QEMU is gone (pt_vm_run kills what is left of it): the sampler
			# has ended, or never found it (the guest did not start).
			sleep 1
			kill "$sampler" 2>/dev/null
			wait "$sampler" 2>/dev/null
			python3 "$PT_TOP/bench/wake/host_cpu.py" report "$out/$kv-$p" |
				tee "$out/host-cpu-$kv-$p.txt"
		fi
		if [ -s "$out/$kv-$p/wake-apps.json" ]; then
			cp "$out/$kv-$p/wake-apps.json" "$out/wake-apps-$kv-$p.json"
		else
			echo "wake apps: no result ($p, $kv); the end of its console:" >&2
			tail -30 "$out/$kv-$p/console.log" >&2
			rc=1
		fi
	done
done
python3 "$PT_TOP/bench/wake/apps_report.py" "$out" || rc=1
exit $rc
