#!/bin/bash
# Runs inside the demo VM: load pagetier.ko and run the e2e scenario with its report.
set -u
out=${PT_OUT:?} top=${PT_TOP:?}
modprobe loop 2>/dev/null
if ! insmod "$top/build/kmod/$(uname -r)/pagetier.ko"; then
	echo "Bail out! pagetier.ko does not load on $(uname -r)"
	exit 1
fi
python3 "$top/tests/e2e/idle_wake.py" --demo >"$out/demo.txt" 2>&1
echo $? >"$out/guest.rc"
