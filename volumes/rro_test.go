package volumes

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// TestRecursiveReadOnlyWithoutKernelSupport: IfPossible falls back to a plain
// read-only mount and Enabled fails, as the kubelet does when the runtime
// cannot do recursive read-only mounts.
func TestRecursiveReadOnlyWithoutKernelSupport(t *testing.T) {
	saved := recursiveReadOnlySupport
	t.Cleanup(func() { recursiveReadOnlySupport = saved })
	for _, tc := range []struct {
		support error
		mode    corev1.RecursiveReadOnlyMode
		want    bool
		wantErr string
	}{
		{nil, corev1.RecursiveReadOnlyEnabled, true, ""},
		{nil, corev1.RecursiveReadOnlyIfPossible, true, ""},
		{nil, corev1.RecursiveReadOnlyDisabled, false, ""},
		{errors.New("mount_setattr: function not implemented"), corev1.RecursiveReadOnlyIfPossible, false, ""},
		{errors.New("mount_setattr: function not implemented"), corev1.RecursiveReadOnlyEnabled, false,
			`volume "v" requires recursive read-only mounts, but the kernel does not support them: mount_setattr: function not implemented`},
	} {
		recursiveReadOnlySupport = func() error { return tc.support }
		mode := tc.mode
		got, err := resolveRecursiveReadOnly(&corev1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: &mode})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("support %v, %s: error %v, want %q", tc.support, tc.mode, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("support %v, %s: %v, %v; want %v", tc.support, tc.mode, got, err, tc.want)
		}
	}
}

// TestRecursiveReadOnlyProbe checks the probe on this kernel: mount_setattr
// exists since Linux 5.12, and the probe needs root to mount its tmpfs.
func TestRecursiveReadOnlyProbe(t *testing.T) {
	if !kernelHasMountSetattr() {
		t.Skip("kernel older than 5.12")
	}
	if err := recursiveReadOnlySupport(); err != nil {
		if strings.Contains(err.Error(), "operation not permitted") {
			t.Skip("needs root: ", err)
		}
		t.Errorf("probe on a kernel with mount_setattr: %v", err)
	}
}

func kernelHasMountSetattr() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var major, minor int
	fmt.Sscanf(string(bytes.TrimRight(u.Release[:], "\x00")), "%d.%d", &major, &minor)
	return major > 5 || major == 5 && minor >= 12
}

// A container's status lists its mounts, a read-only one with its
// recursive read-only mode as resolved (convertToAPIContainerStatuses).
func TestMountStatuses(t *testing.T) {
	saved := recursiveReadOnlySupport
	t.Cleanup(func() { recursiveReadOnlySupport = saved })
	recursiveReadOnlySupport = func() error { return nil }
	ifPossible := corev1.RecursiveReadOnlyIfPossible
	c := &corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "a", MountPath: "/a"},
		{Name: "b", MountPath: "/b", ReadOnly: true},
		{Name: "c", MountPath: "/c", ReadOnly: true, RecursiveReadOnly: &ifPossible},
	}}
	var got []string
	for _, st := range MountStatuses(c) {
		s := fmt.Sprintf("%s:%s:%v", st.Name, st.MountPath, st.ReadOnly)
		if st.RecursiveReadOnly != nil {
			s += ":" + string(*st.RecursiveReadOnly)
		}
		got = append(got, s)
	}
	if want := "a:/a:false b:/b:true:Disabled c:/c:true:Enabled"; strings.Join(got, " ") != want {
		t.Fatalf("MountStatuses = %v, want %s", got, want)
	}
}
