# shellcheck shell=bash
# Sourced by the guest scripts (guest-suite.sh, faults/guest.sh): each step of a suite runs
# under a time limit. A step still running past its limit has hung, most likely a task stuck
# in the kernel in uninterruptible sleep, which no signal ends and the kselftest harness's
# own timeout cannot reap. The step then fails with what the kernel knows of the stuck
# tasks, on the console and in its TAP file, and the suite stops: the rest of the guest
# shares the stuck module and would only hang again, or report unrelated failures.

# A task blocked this long is reported by the kernel itself, with its stack, on the console
# and in dmesg (which the final check of each suite reads for call traces). Under TCG an
# honest wait for I/O stays far below it.
echo 90 >/proc/sys/kernel/hung_task_timeout_secs 2>/dev/null

. "$(dirname "${BASH_SOURCE[0]}")/kernel-log.sh"

# pt_stat PID: the fields of /proc/PID/stat after the command name (state first).
pt_stat() {
	sed 's/.*) //' "/proc/$1/stat" 2>/dev/null
}

# pt_alive PID: whether PID still runs (a zombie does not: kill -0 succeeds on one).
pt_alive() {
	local st
	st=$(pt_stat "$1") || return 1
	[ "${st%% *}" != Z ]
}

# pt_stuck_tasks SID: every task in uninterruptible sleep, and every task of the session
# SID, with where it waits and its kernel stack.
pt_stuck_tasks() {
	local sid=$1 p st pid state comm
	for p in /proc/[0-9]*; do
		pid=${p#/proc/}
		st=$(pt_stat "$pid") || continue
		state=${st%% *}
		# Field 6 of stat is the session; 4 after the state here.
		set -- $st
		[ "$state" = D ] || [ "${4:-}" = "$sid" ] || continue
		comm=$(cat "$p/comm" 2>/dev/null)
		echo "# task $pid ($comm) state $state, waiting in $(cat "$p/wchan" 2>/dev/null):"
		sed 's/^/#     /' "$p/stack" 2>/dev/null
	done
}

# pt_step NAME LIMIT_S TAP CMD...: runs CMD in a session of its own, with its output on the
# console and in TAP. Returns CMD's exit status; past LIMIT_S, reports the hang, marks the
# guest failed ($PT_OUT/guest.rc) and exits. A step that ends records its status in TAP.rc.
# A TAP.rc there already is a step the boot before this one finished, before the guest
# died of the emulator's bug (lib.sh: pt_vm_run keeps the finished steps' output when it
# runs the guest again): its TAP and status stand, and the step is not run again.
pt_step() {
	local name=$1 limit=$2 tap=$3 t0=$SECONDS pid tailpid rc
	shift 3
	if [ -f "$tap.rc" ]; then
		rc=$(cat "$tap.rc")
		echo "== $name: finished before the emulator's death of the boot before this one (exit $rc); its TAP stands:"
		cat "$tap"
		return "$rc"
	fi
	echo "== $name"
	setsid "$@" >"$tap" 2>&1 </dev/null &
	pid=$!
	tail -n +1 -f --pid="$pid" "$tap" &
	tailpid=$!
	while pt_alive "$pid"; do
		if ((SECONDS - t0 >= limit)); then
			kill "$tailpid" 2>/dev/null
			wait "$tailpid" 2>/dev/null
			{
				echo "not ok 999 $name still running after $limit s: hung"
				echo "# blocked tasks and the step's tasks, with their kernel stacks:"
				pt_stuck_tasks "$pid"
				echo "Bail out! $name hung (no progress in $limit s); kernel stacks above"
			} | tee -a "$tap"
			# All blocked tasks' stacks into the kernel log too.
			echo w >/proc/sysrq-trigger 2>/dev/null
			sleep 2
			dmesg >"$PT_OUT/dmesg-hang.txt"
			echo 1 >"$PT_OUT/guest.rc"
			exit 1
		fi
		sleep 1
	done
	wait "$pid"
	rc=$?
	wait "$tailpid"
	echo "$rc" >"$tap.rc"
	echo "== $name: exit $rc after $((SECONDS - t0)) s"
	return "$rc"
}
