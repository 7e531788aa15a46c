#!/bin/sh
# PID 1 of the minimal-init variant of `make test-vm`: the mounts an init
# makes, a pure cgroup v2 hierarchy at /sys/fs/cgroup, then the tests.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs -o mode=755 tmpfs /run
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
mount -o remount,rw /
hostname podrun-vm
/usr/local/sbin/podrun-vm-test
sync
echo o > /proc/sysrq-trigger
sleep 60
