//go:build !podrun_lean

package podspec

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func debugContainer(name string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox:1.28"}}
}

func fileKeyEnv(volume string) []corev1.EnvVar {
	return []corev1.EnvVar{{Name: "V", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: volume, Path: "config.env", Key: "K"}}}}
}

// DiffEphemeralContainers follows ValidatePodEphemeralContainersUpdate and
// validateEphemeralContainers: what may be added, and the API server's
// messages for what may not.
func TestDiffEphemeralContainers(t *testing.T) {
	base := func() *corev1.Pod {
		p := basePod()
		p.Spec.Volumes = []corev1.Volume{emptyDirVolume("data")}
		SetDefaults(p)
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("debugger")}
		SetDefaults(p)
		return p
	}
	for _, tc := range []struct {
		name   string
		change func(p *corev1.Pod)
		added  []string
		err    []string
	}{
		{name: "nothing added", change: func(*corev1.Pod) {}},
		{name: "one added, targeting an app container", change: func(p *corev1.Pod) {
			ec := debugContainer("debugger2")
			ec.TargetContainerName = p.Spec.Containers[0].Name
			ec.VolumeMounts = []corev1.VolumeMount{volumeMount("data", "/data")}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, added: []string{"debugger2"}},
		{name: "the rest of the pod is not taken", change: func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = "other"
			p.Labels = map[string]string{"x": "y"}
		}},
		{name: "an existing one removed", change: func(p *corev1.Pod) { p.Spec.EphemeralContainers = nil },
			err: []string{`spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be removed`}},
		{name: "an existing one changed", change: func(p *corev1.Pod) { p.Spec.EphemeralContainers[0].Image = "other" },
			err: []string{`spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be changed`}},
		{name: "fields an ephemeral container may not have", change: func(p *corev1.Pod) {
			ec := debugContainer("bad")
			ec.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
			ec.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			ec.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			ec.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "x"}}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, err: []string{
			`spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container`,
			`spec.ephemeralContainers[1].readinessProbe: Forbidden: cannot be set for an Ephemeral Container`,
			`spec.ephemeralContainers[1].lifecycle: Forbidden: cannot be set for an Ephemeral Container`,
			`spec.ephemeralContainers[1].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container`,
		}},
		{name: "a name taken, an unknown target, an unknown volume", change: func(p *corev1.Pod) {
			dup := debugContainer(p.Spec.Containers[0].Name)
			ec := debugContainer("d2")
			ec.TargetContainerName = "nope"
			ec.VolumeMounts = []corev1.VolumeMount{volumeMount("missing", "/m")}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, dup, ec)
		}, err: []string{
			`spec.ephemeralContainers[1].name: Duplicate value: "` + base().Spec.Containers[0].Name + `"`,
			`spec.ephemeralContainers[2].targetContainerName: Not found: "nope"`,
			`spec.ephemeralContainers[2].volumeMounts[0].name: Not found: "missing"`,
		}},
		{name: "a fileKeyRef to an emptyDir", change: func(p *corev1.Pod) {
			ec := debugContainer("d2")
			ec.Env = fileKeyEnv("data")
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, added: []string{"d2"}},
		{name: "a fileKeyRef to no volume of the pod", change: func(p *corev1.Pod) {
			ec := debugContainer("d2")
			ec.Env = fileKeyEnv("config")
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, err: []string{`spec.ephemeralContainers[1].env[0].valueFrom.fileKeyRef.volumeName: Not found: "config"`}},
		{name: "what podrun cannot honour", change: func(p *corev1.Pod) {
			ec := debugContainer("d2")
			ec.VolumeMounts = []corev1.VolumeMount{volumeMount("data", "rel")}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, err: []string{`spec.ephemeralContainers[1].volumeMounts[0].mountPath: Forbidden: not supported by podrun: runc mounts at absolute paths only`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := base()
			updated := old.DeepCopy()
			tc.change(updated)
			SetDefaults(updated)
			added, err := DiffEphemeralContainers(old, updated)
			if len(tc.err) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if !slices.Equal(added, tc.added) {
					t.Fatalf("added %v, want %v", added, tc.added)
				}
				got := ApplyEphemeralContainers(old, updated)
				if !slices.Equal(got.Spec.Containers[0].Command, old.Spec.Containers[0].Command) || got.Spec.Containers[0].Image != old.Spec.Containers[0].Image || len(got.Labels) != len(old.Labels) {
					t.Fatalf("ApplyEphemeralContainers took more than the ephemeral containers: %+v", got.Spec.Containers[0])
				}
				if len(got.Spec.EphemeralContainers) != len(updated.Spec.EphemeralContainers) {
					t.Fatalf("ephemeral containers %d, want %d", len(got.Spec.EphemeralContainers), len(updated.Spec.EphemeralContainers))
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.err)
			}
			if !strings.HasPrefix(err.Error(), `The Pod "`+old.Name+`" is invalid: `) {
				t.Errorf("error %q does not name the pod as the API server does", err)
			}
			for _, w := range tc.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

// An apply of the pod's manifest (which has no ephemeral containers) leaves
// those the subresource added, as kubectl apply's three-way merge does.
func TestPodUpdateKeepsEphemeralContainers(t *testing.T) {
	old := basePod()
	SetDefaults(old)
	manifest := old.DeepCopy()
	old.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("debugger")}
	SetDefaults(old)
	manifest.Spec.Containers[0].Image = "busybox:1.36"
	u, err := DiffPodUpdate(old, manifest)
	if err != nil {
		t.Fatalf("DiffPodUpdate: %v", err)
	}
	if len(u.Images) != 1 {
		t.Fatalf("images changed %v, want the app container's", u.Images)
	}
	if got := ApplyPodUpdate(old, manifest); len(got.Spec.EphemeralContainers) != 1 {
		t.Fatalf("the update dropped the ephemeral containers: %+v", got.Spec.EphemeralContainers)
	}
}
