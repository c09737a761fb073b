#!/bin/bash
# The density benchmark: one VM run per kernel x device profile x configuration (a fresh
# guest each, one after the other, never two at once); each run's result is kept under
# build/bench/density/ and replaces only its own earlier result, so that the matrix can be
# completed in parts. Then the CSV, the tables and the plot of everything there (report.py),
# with the runs it lacks carried from the committed results/density.csv. To publish: copy
# build/bench/density/density.{csv,md,png} to bench/density/results/.
# Emulated (QEMU TCG) figures: compare configurations measured on the same machine.
#
#   bench/density/run.sh                      (make bench-density)
#   env: KERNELS ("6.12"; also "6.1"), PROFILES ("unthrottled cloud"),
#        CONFIGS ("noswap swap senpai damon pagetier swap-low"; damon needs 6.12),
#        STEPS, MEASURE_S, SETTLE_S, SOLO_WINDOWS, RATE, CRIT_MB, NOISE_MB, TIME_SCALE, MAX_S,
#        FREE_WATERMARK_DIV (pagetierd's free_watermark: RAM / it, default 8),
#        PAGETIERD_LOG_LEVEL (info; debug logs each scan: its CPU shows in the figures),
#        PAGETIERD_ARGS (more options for pagetierd: --no-bpf), BPF_STATS=1 (each window
#        records the BPF programs' run time)
#        DAMON_INTERFACE (sysfs: DAMON_RECLAIM's scheme through DAMON's sysfs interface;
#        module: the built-in module), DAMON_PARAMS ("min_age=5000000 quota_ms=100": other
#        values than damon_reclaim.py's, for a diagnosis)
#        (guest.py); pagetierd's log is kept beside the results
#   QUICK=1: swap and pagetier, unthrottled, N = 0, 2, 4, short windows (a few minutes)
#   SMOKE=1: what make test runs: pagetier, N = 0, 2, tiny data sets (the harness works
#            end to end; its figures mean nothing; the other configurations share all of
#            guest.py but their few lines of set-up, and a guest each would cost make test
#            a minute apiece)
set -u
# A small guest: the critical service is a quarter of it and a few noise containers fill it.
export PT_VM_MEM=${PT_VM_MEM:-1G}
. "$(dirname "$0")/../../tests/vm/lib.sh"

profiles=${PROFILES:-unthrottled cloud}
configs=${CONFIGS:-noswap swap senpai damon pagetier swap-low}
out=${DENSITY_OUT:-$PT_TOP/build/bench/density}
if [ "${QUICK:-0}" = 1 ]; then
	profiles=${PROFILES:-unthrottled}; configs=${CONFIGS:-swap pagetier}
	export STEPS=${STEPS:-2 4} MEASURE_S=${MEASURE_S:-20} SETTLE_S=${SETTLE_S:-15}
	export SOLO_WINDOWS=${SOLO_WINDOWS:-1}
fi
if [ "${SMOKE:-0}" = 1 ]; then
	profiles=${PROFILES:-unthrottled}; configs=${CONFIGS:-pagetier}
	export STEPS=${STEPS:-2} MEASURE_S=${MEASURE_S:-5} SETTLE_S=${SETTLE_S:-3}
	export SOLO_WINDOWS=${SOLO_WINDOWS:-1}
	export CRIT_MB=${CRIT_MB:-32} NOISE_MB=${NOISE_MB:-16} RATE=${RATE:-20}
	out=${DENSITY_OUT:-$PT_TOP/build/bench/density-smoke}
fi

kernels=()
for k in ${KERNELS:-6.12}; do
	kv=$(grep -m1 "^$k" "$PT_TOP/build/kernels.txt") || pt_die "no kernel $k in build/kernels.txt"
	kernels+=("$kv")
done
runs=()
for kv in "${kernels[@]}"; do
	for p in $profiles; do
		for c in $configs; do
			# DAMON_RECLAIM is not in Debian's 6.1.
			[ "$c" = damon ] && ! grep -q '^CONFIG_DAMON_RECLAIM=y' "/boot/config-$kv" && continue
			runs+=("$kv $p $c")
		done
	done
done
mkdir -p "$out"
pass=(STEPS MEASURE_S SETTLE_S SOLO_WINDOWS RATE CRIT_MB NOISE_MB TIME_SCALE MAX_S FREE_WATERMARK_DIV
	PAGETIERD_LOG_LEVEL PAGETIERD_ARGS BPF_STATS DAMON_PARAMS DAMON_INTERFACE)
base_drive_opts=$PT_DRIVE_OPTS
rc=0 i=0 t0=$(date +%s)
for r in "${runs[@]}"; do
	read -r kv p c <<<"$r"
	i=$((i + 1))
	now=$(date +%s)
	eta=""
	[ $i -gt 1 ] && eta=", about $(( (now - t0) / (i - 1) * (${#runs[@]} - i + 1) / 60 )) min left"
	echo "== density [$i/${#runs[@]}]: $c, $p, $kv (elapsed $(( (now - t0) / 60 )) min$eta)"
	envs="PROFILE=$p $(pt_env_assignments "${pass[@]}")"
	load=true
	[ "$c" = pagetier ] && load="insmod build/kmod/$kv/pagetier.ko"
	PT_DRIVE_OPTS=$base_drive_opts
	[ "$p" = cloud ] && PT_DRIVE_OPTS+=",$PT_CLOUD_THROTTLE"
	name=$kv-$p-$c
	# A second drive for the containers' files (nginx's), as a host's root disk beside its
	# dedicated swap drive; pt_vm_run recreates its output directory, so the image lives
	# beside it.
	data=$out/data-$name.img
	rm -f "$data"; truncate -s 1G "$data"
	PT_VM_TIMEOUT=${PT_VM_TIMEOUT:-2400} pt_vm_run "$kv" "$out/$name" \
		"$load && $envs python3 bench/density/guest.py $c 2>&1 | tee \$PT_OUT/result.txt" \
		"-drive file=$data,if=none,id=nv1,format=raw,cache=none -device nvme,serial=pagetier-data,drive=nv1" |
		grep --line-buffered -E '^# |Traceback|Error|error:|Bail' || true
	rm -f "$data"
	if [ -s "$out/$name/density-$c.json" ]; then
		cp "$out/$name/density-$c.json" "$out/density-$name.json"
	else
		echo "density: $c ($p, $kv) produced no result; the end of its console:" >&2
		tail -30 "$out/$name/console.log" >&2
		rc=1
	fi
done
echo "== density: $i runs in $(( ($(date +%s) - t0) / 60 )) min"
# The plot needs matplotlib: Debian's python3-matplotlib, for Debian's python3. Runs this
# machine has no result of are carried from the committed CSV (bench/density/results/),
# so that a matrix completed over several sessions reports whole; not for the smoke run.
carry=()
[ "${SMOKE:-0}" = 1 ] || carry=(--carry "$PT_TOP/bench/density/results/density.csv")
"${PT_REPORT_PYTHON:-/usr/bin/python3}" "$PT_TOP/bench/density/report.py" "$out" "${carry[@]}" || rc=1
exit $rc
