#!/bin/bash
# Runs bench/scale/readers.c (open/read/close against kept-open pread against one io_uring
# submission, per tick, over N cgroups' cpu.stat) on a cgroup v2 tree: below
# /sys/fs/cgroup where that is cgroup v2, else on a cgroup v2 hierarchy mounted for the
# run (one with no controllers: the build host's controllers are on v1, and stay there).
#
#   bench/scale/readers.sh BINARY [N...]
set -euo pipefail
bin=${1:?usage: readers.sh BINARY [N...]}
shift
[ "$(id -u)" = 0 ] || { echo "readers.sh: needs root (it creates cgroups)" >&2; exit 1; }
if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
	dir=/sys/fs/cgroup/pt-readers
	mkdir -p "$dir"
	trap 'rmdir "$dir"' EXIT
else
	dir=$(mktemp -d /tmp/pt-readers-XXXXXX)
	mount -t cgroup2 none "$dir" || { echo "readers.sh: cannot mount cgroup2 on $dir" >&2; exit 1; }
	trap 'umount "$dir"; rmdir "$dir"' EXIT
fi
"$bin" "$dir" "$@"
