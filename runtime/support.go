package runtime

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Unhonoured lists the fields of a valid pod that podrun accepts but does
// not act on yet, so that apply can say so instead of silently ignoring them.
// Keep it in step with the README's "Not yet supported" list.
func Unhonoured(pod *corev1.Pod) []string {
	var out []string
	add := func(path, what string) {
		out = append(out, fmt.Sprintf("%s: %s is not supported by podrun yet and is ignored", path, what))
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		if sc.AppArmorProfile != nil && sc.AppArmorProfile.Type != corev1.AppArmorProfileTypeUnconfined {
			add("spec.securityContext.appArmorProfile", "AppArmor")
		}
		if sc.SELinuxOptions != nil {
			add("spec.securityContext.seLinuxOptions", "SELinux")
		}
	}
	for _, list := range []struct {
		path string
		cs   []corev1.Container
	}{{"spec.initContainers", pod.Spec.InitContainers}, {"spec.containers", pod.Spec.Containers}} {
		for i, c := range list.cs {
			p := fmt.Sprintf("%s[%d]", list.path, i)
			if c.TTY {
				add(p+".tty", "attaching a terminal")
			}
			if sc := c.SecurityContext; sc != nil {
				if sc.AppArmorProfile != nil && sc.AppArmorProfile.Type != corev1.AppArmorProfileTypeUnconfined {
					add(p+".securityContext.appArmorProfile", "AppArmor")
				}
				if sc.SELinuxOptions != nil {
					add(p+".securityContext.seLinuxOptions", "SELinux")
				}
			}
		}
	}
	return out
}
