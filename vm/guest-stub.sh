#!/bin/sh
# In the guest's root filesystem: mounts the payload disk of `make test-vm`
# (podrun, the test binary, the test image and the script that runs them) and
# runs its guest-test.sh, so that changing the tests never rebuilds the image.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p /payload
mount -o ro LABEL=podrun-payload /payload 2>/dev/null || mount -o ro /dev/nvme1n1 /payload || {
	echo "PODRUN-VM-RESULT rc=99 (no payload disk)"
	exit 1
}
exec sh /payload/guest-test.sh
