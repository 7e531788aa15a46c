package runtime

import (
	"testing"

	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/volumes"
)

// TestVolumeMountOptionsReachTheRuntime: every option computed for a volume
// (read-only, recursive read-only, bind flags, propagation) is in the
// container's spec and in the libcontainer config made from it.
func TestVolumeMountOptionsReachTheRuntime(t *testing.T) {
	cfg := &containerConfig{ID: "c1", Rootfs: t.TempDir(), Args: []string{"true"}, Cwd: "/"}
	cfg.Mounts = []specs.Mount{
		volumeMountSpec(volumes.Mount{Source: "/srv/data", Destination: "/data", ReadOnly: true, RecursiveReadOnly: true, Propagation: volumes.PropagationPrivate, Options: []string{"noexec", "nosuid", "nodev"}}),
		volumeMountSpec(volumes.Mount{Source: "/srv/plain", Destination: "/plain", Propagation: volumes.PropagationSlave}),
	}
	lc, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{CgroupName: "c1", Spec: cfg.spec()})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, m := range lc.Mounts {
		switch m.Destination {
		case "/data":
			found++
			for flag, name := range map[int]string{unix.MS_RDONLY: "ro", unix.MS_NOEXEC: "noexec", unix.MS_NOSUID: "nosuid", unix.MS_NODEV: "nodev", unix.MS_BIND | unix.MS_REC: "rbind"} {
				if m.Flags&flag != flag {
					t.Errorf("/data: flag %s missing: %#x", name, m.Flags)
				}
			}
			if m.RecAttr == nil || m.RecAttr.Attr_set&unix.MOUNT_ATTR_RDONLY == 0 {
				t.Errorf("/data: recursive read-only (rro) missing: %+v", m.RecAttr)
			}
			if len(m.PropagationFlags) != 1 || m.PropagationFlags[0] != unix.MS_PRIVATE|unix.MS_REC {
				t.Errorf("/data: propagation %v", m.PropagationFlags)
			}
		case "/plain":
			found++
			if m.Flags&(unix.MS_RDONLY|unix.MS_NOEXEC) != 0 || m.RecAttr != nil {
				t.Errorf("/plain: unexpected flags %#x %+v", m.Flags, m.RecAttr)
			}
			if len(m.PropagationFlags) != 1 || m.PropagationFlags[0] != unix.MS_SLAVE|unix.MS_REC {
				t.Errorf("/plain: propagation %v", m.PropagationFlags)
			}
		}
	}
	if found != 2 {
		t.Errorf("found %d of the 2 volume mounts", found)
	}
}
