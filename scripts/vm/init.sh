#!/bin/sh
# /init of the VM test tier's initramfs (busybox sh, PID 1). Loads the modules listed in
# /lib/modules/order, mounts the host's root read-only over 9p (mount tag "host"), puts tmpfs
# on the places node, npm and ip netns write, chroots into it and runs the host script named by
# `svcnet.run=PATH` on the kernel command line. Prints "SVCNET-VM-EXIT <status>" on the console
# for scripts/vm/run.ts, then powers the VM off.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
while read -r m; do
  insmod "/lib/modules/${m}" 2>/dev/null || echo "vm-init: insmod ${m} failed"
done </lib/modules/order

finish() {
  echo "SVCNET-VM-EXIT $1"
  sync
  poweroff -f
  sleep 5
  echo o >/proc/sysrq-trigger
}

run=
keep=
for arg in $(cat /proc/cmdline); do
  case "$arg" in
  svcnet.run=*) run=${arg#svcnet.run=} ;;
  svcnet.keep=*) keep=${arg#svcnet.keep=} ;;
  esac
done
[ -n "$run" ] || {
  echo "vm-init: no svcnet.run=PATH on the kernel command line"
  finish 2
}

r=/newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose host "$r" || {
  echo "vm-init: cannot mount the host's root over 9p"
  finish 2
}
mount -t proc proc "$r/proc"
mount -t sysfs sys "$r/sys"
mount -t devtmpfs dev "$r/dev"
mkdir -p "$r/dev/pts" 2>/dev/null
mount -t devpts devpts "$r/dev/pts" 2>/dev/null
# A project checked out under /tmp (svcnet.keep=DIR) is held aside while the tmpfs goes on,
# then bound back at its path.
if [ -n "$keep" ]; then
  mkdir -p /keep
  mount -o bind "$r$keep" /keep || echo "vm-init: cannot hold $keep aside"
fi
for d in /tmp /run /var/tmp; do
  mount -t tmpfs -o mode=1777 tmpfs "$r$d" || echo "vm-init: no tmpfs on $d"
done
if [ -n "$keep" ]; then
  mkdir -p "$r$keep" && mount -o bind /keep "$r$keep" || echo "vm-init: cannot keep $keep"
fi
ip link set lo up
# A line of its own: the firmware's last message has no newline.
echo
echo "vm-init: kernel $(uname -r), $(grep -c . /lib/modules/order) modules; running ${run}"
chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/tmp TERM=dumb SVCNET_VM=1 /bin/sh "$run" </dev/console >/dev/console 2>&1
finish $?
