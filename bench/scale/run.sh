#!/bin/bash
# The scale benchmark (bench/scale/README.md, issue 15): one VM run per scanner (kmod:
# pagetier.ko loaded, its tier and accessed-bit scanner; fallback: no module, plain swap on
# the drive and the /proc scanner), each running bench/scale/guest.py over every N and
# share; one guest at a time (tests/vm/lib.sh's lock). Results under build/bench/scale/
# (each scanner's replace only its own earlier ones), then the table and the targets
# (report.py) in build/bench/scale/report.md. Emulated (QEMU TCG) figures: the native-to-
# emulated ratio of bench/scale/micro --calibrate, run on the host here and in the guest,
# scales them.
#
#   bench/scale/run.sh                     (make bench-scale; 3 to 4 hours, 9 at most)
#   env: SCANNERS ("kmod fallback"), KERNEL (6.12), SCALE_VM_MEM (guest memory, 4G: 3,000
#        containers need about 1.5 GiB of it), SCALE_VM_CPUS (2), NS, SHARES, MEASURE_S,
#        PROBES, PROBE_ROUNDS, IDLE_S, PERIOD_S, BURST_MS, SLEEPER_KB, WAKER_KB, WAKER_FILE,
#        SETTLE_MAX_S, MAX_S, KB_PER_CT (guest.py), SCALE_OUT (the results' directory),
#        PAGETIERD_LOG_LEVEL (info; debug at small N for a diagnosis), PAGETIERD_BIN (another
#        build of pagetierd, for a before-the-change run), SAMPLE_READER (pagetierd's
#        sample_reader: pread, the default, or io_uring)
#   QUICK=1: N = 10 and 1,000, 0% and 20% active, shorter windows (about 50 minutes)
#   SMOKE=1: N = 10, 20% active, short windows, both scanners (about 10 minutes): the
#            harness works end to end; its figures mean nothing
set -u
export PT_VM_MEM=${SCALE_VM_MEM:-4G}
export PT_VM_CPUS=${SCALE_VM_CPUS:-2}
. "$(dirname "$0")/../../tests/vm/lib.sh"

scanners=${SCANNERS:-kmod fallback}
out=${SCALE_OUT:-$PT_TOP/build/bench/scale}
timeout_s=${PT_VM_TIMEOUT:-16200}
if [ "${QUICK:-0}" = 1 ]; then
	export NS=${NS:-10 1000} SHARES=${SHARES:-0 20} MEASURE_S=${MEASURE_S:-60}
	export PROBE_ROUNDS=${PROBE_ROUNDS:-4}
	timeout_s=${PT_VM_TIMEOUT:-5400}
fi
if [ "${SMOKE:-0}" = 1 ]; then
	export NS=${NS:-10} SHARES=${SHARES:-20} MEASURE_S=${MEASURE_S:-10}
	export PROBES=${PROBES:-2} PROBE_ROUNDS=${PROBE_ROUNDS:-2} IDLE_S=${IDLE_S:-3}
	export PERIOD_S=${PERIOD_S:-10} SETTLE_MAX_S=${SETTLE_MAX_S:-240}
	out=${SCALE_OUT:-$PT_TOP/build/bench/scale-smoke}
	timeout_s=${PT_VM_TIMEOUT:-1200}
fi

k=${KERNEL:-6.12}
kv=$(grep -m1 "^$k" "$PT_TOP/build/kernels.txt" 2>/dev/null) ||
	pt_die "no kernel $k in build/kernels.txt: run make deps, then make"
# What the guest needs, checked here rather than found missing after a boot.
[ -x "$PT_TOP/.venv/bin/vng" ] || pt_die "virtme-ng missing (.venv/bin/vng): run make deps"
[ -f "/boot/vmlinuz-$kv" ] || pt_die "kernel image /boot/vmlinuz-$kv missing: run make deps"
for f in build/bin/pagetierd build/bin/pagetierctl "build/kmod/$kv/pagetier.ko"; do
	[ -e "$PT_TOP/$f" ] || pt_die "$f missing: run make first"
done
mkdir -p "$out" "$PT_TOP/build/bench/scale"
make -s -C "$PT_TOP" build/bench/scale/micro || pt_die "cannot build bench/scale/micro"
sleeper=$PT_TOP/build/bench/scale/ptsleeper
# Static: no shared library's relocations in each of thousands of processes.
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -static -o "$sleeper" \
	"$PT_TOP/bench/scale/ptsleeper.c" 2>/dev/null ||
	gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$sleeper" \
		"$PT_TOP/bench/scale/ptsleeper.c" || pt_die "cannot build bench/scale/ptsleeper.c"
# The guest's memory must fit beside what the host has left.
need_kb=$(( $(numfmt --from=iec "$PT_VM_MEM") / 1024 + 512 * 1024 ))
avail_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
[ "$avail_kb" -ge "$need_kb" ] ||
	pt_die "the host has $((avail_kb / 1024)) MiB available; a guest of $PT_VM_MEM needs about $((need_kb / 1024)) MiB: free memory or set SCALE_VM_MEM lower (fewer N will fit)"

# The host's side of the emulation ratio: the best of three (least disturbed) runs.
cal=$out/host-calibrate.json
for _ in 1 2 3; do "$PT_TOP/build/bench/scale/micro" --calibrate; done |
	python3 -c 'import json,sys
rs=[json.loads(l) for l in sys.stdin if l.startswith("{")]
print(json.dumps({k: min(r[k] for r in rs) for k in rs[0]}))' >"$cal" ||
	pt_die "micro --calibrate failed on the host"
echo "== scale: host calibration $(cat "$cal")"

pass=(NS SHARES MEASURE_S PROBES PROBE_ROUNDS IDLE_S PERIOD_S BURST_MS SLEEPER_KB WAKER_KB
      WAKER_FILE SETTLE_MAX_S MAX_S KB_PER_CT PAGETIERD_LOG_LEVEL PAGETIERD_BIN SAMPLE_READER)
envs="HOST_CAL='$cal' $(pt_env_assignments "${pass[@]}")"
rc=0 i=0 t0=$(date +%s)
set -- $scanners
for sc in "$@"; do
	i=$((i + 1))
	now=$(date +%s)
	eta=""
	[ $i -gt 1 ] && eta=", about $(( (now - t0) / (i - 1) * ($# - i + 1) / 60 )) min left"
	echo "== scale [$i/$#]: $sc, $kv, guest ${PT_VM_MEM} x ${PT_VM_CPUS} CPUs (elapsed $(( (now - t0) / 60 )) min$eta)"
	case $sc in
	kmod) load="insmod build/kmod/$kv/pagetier.ko" ;;
	fallback) load=true ;;
	*) pt_die "unknown scanner '$sc' (kmod or fallback)" ;;
	esac
	name=$kv-$sc
	PT_VM_DISK_NEED=${PT_VM_DISK_NEED:-2G} PT_VM_TIMEOUT=$timeout_s pt_vm_run "$kv" "$out/$name" \
		"$load && $envs python3 bench/scale/guest.py $sc 2>&1 | tee \$PT_OUT/result.txt" |
		grep --line-buffered -E '^# |^\||Traceback|Error|error:|Bail'
	vrc=${PIPESTATUS[0]}
	grc=$(cat "$out/$name/guest.rc" 2>/dev/null)
	rm -f "$out"/scale-"$sc"-n*.json
	cp "$out/$name"/scale-"$sc"-n*.json "$out/" 2>/dev/null
	if [ "$grc" = 0 ]; then
		continue
	fi
	rc=1
	if [ "$vrc" = 124 ]; then
		why="the guest ran out of time (PT_VM_TIMEOUT=${timeout_s}s): $out/$name/qmp-diag.txt says what it was doing"
	elif ! grep -q '^# scale guest started' "$out/$name/console.log" 2>/dev/null; then
		why="the guest did not boot, or did not get to guest.py (vng exit status $vrc)"
	elif [ -z "$grc" ]; then
		why="guest.py did not finish (vng exit status $vrc)"
	else
		why="guest.py failed (a run's error is in its JSON; the Bail out line says why)"
	fi
	echo "scale: $sc ($kv): $why; the end of its console ($out/$name/console.log):" >&2
	tail -30 "$out/$name/console.log" >&2 2>/dev/null || echo "  (no console.log)" >&2
done
echo "== scale: $i runs in $(( ($(date +%s) - t0) / 60 )) min"
python3 "$PT_TOP/bench/scale/report.py" "$out" >"$out/report.md" && cat "$out/report.md" || rc=1
exit $rc
