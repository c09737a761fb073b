#!/bin/bash
# In the guest of tests/vm/harness_check.sh: a step that returns, then a step stuck in the
# kernel (a write to a frozen file system: uninterruptible sleep, as a module bug would
# leave a task). pt_step must report the stuck one with its stack and end the guest.
set -u
out=${PT_OUT:?} top=${PT_TOP:?}
. "$top/tests/vm/guest-lib.sh"
modprobe loop 2>/dev/null
truncate -s 64M /tmp/frozen.img && mkfs.ext4 -q /tmp/frozen.img && mkdir -p /tmp/frozen &&
	mount -o loop /tmp/frozen.img /tmp/frozen || { echo "Bail out! cannot mount a scratch ext4"; exit 1; }
pt_step "returning step" 60 "$out/returning.tap" sh -c 'echo "ok 1 returns"; exit 3'
echo "returning step: exit $?" >"$out/returning.rc"
fsfreeze -f /tmp/frozen || { echo "Bail out! fsfreeze failed"; exit 1; }
pt_step "stuck step" 10 "$out/stuck.tap" sh -c 'echo x >/tmp/frozen/x'
echo "after the stuck step" >"$out/not-reached"
