package runtime

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// seccompProfile is the profile that applies to a container: its own
// securityContext's, else the pod's (nil: unconfined, the kubelet's default).
func seccompProfile(pod *corev1.Pod, c *corev1.Container) *corev1.SeccompProfile {
	if sc := c.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		return sc.SeccompProfile
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		return psc.SeccompProfile
	}
	return nil
}

// seccompFilter turns a profile into the OCI filter for spec s, as containerd
// does: RuntimeDefault is the default profile (which allows what the
// container's capabilities need), Localhost a JSON profile under dir, and a
// privileged container is never filtered.
func seccompFilter(p *corev1.SeccompProfile, privileged bool, dir string, s *specs.Spec) (*specs.LinuxSeccomp, error) {
	if p == nil || privileged {
		return nil, nil
	}
	switch p.Type {
	case corev1.SeccompProfileTypeUnconfined:
		return nil, nil
	case corev1.SeccompProfileTypeRuntimeDefault:
		return seccomp.GetDefaultProfile(s)
	case corev1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			return nil, fmt.Errorf("seccomp profile type Localhost needs localhostProfile")
		}
		path := filepath.Join(dir, filepath.Clean("/"+*p.LocalhostProfile))
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the Localhost seccomp profile: %w", err)
		}
		return seccomp.LoadProfile(string(data), s)
	}
	return nil, fmt.Errorf("unknown seccomp profile type %q", p.Type)
}
