#!/bin/bash
# Runs inside the demo VM: load pagetier.ko and run the e2e scenario with its report.
set -u
out=${PT_OUT:?} top=${PT_TOP:?}
modprobe loop 2>/dev/null
if ! insmod "$top/build/kmod/$(uname -r)/pagetier.ko"; then
	echo "Bail out! pagetier.ko does not load on $(uname -r)"
	exit 1
fi
. "$top/tests/vm/guest-lib.sh"
# It takes about 30 s under TCG on the 2-core build machine; a hang ends the guest.
pt_step "demo" 400 "$out/demo.txt" python3 "$top/tests/e2e/idle_wake.py" --demo >/dev/null
echo $? >"$out/guest.rc"
