#!/bin/busybox sh
# /init of the testbed's initramfs: mount the kernel file systems, run the checks, power off.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t debugfs debug /sys/kernel/debug 2>/dev/null
echo "kernel $(uname -r), $(ls -d /sys/devices/system/node/node* | wc -l) nodes"
sh /checks.sh
sync
poweroff -f
