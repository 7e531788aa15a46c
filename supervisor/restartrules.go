package supervisor

import (
	corev1 "k8s.io/api/core/v1"
)

// Container restart policies and rules (ContainerRestartRules, beta and on
// by default since Kubernetes 1.35; RestartAllContainersOnContainerExits,
// beta since 1.36), as pkg/api/v1/pod/util.go decides them.

// What the kubelet reports of containers that a RestartAllContainers rule
// removed (kubelet_pods.go RestartingAllContainers, convertToAPIContainerStatuses),
// and its AllContainersRestarting condition (status/generate.go).
const (
	ReasonRestartingAllContainers  = "RestartingAllContainers"
	messageRestartingAllContainers = "The container is removed because RestartAllContainers in place"
	reasonRestartAllStarted        = "RestartAllContainersStarted"
	messageRestartAllStarted       = "container exited with restart policy rule"
)

// containerShouldRestart is podutil.ContainerShouldRestart: the first of the
// container's rules that matches the exit code decides, then its own restart
// policy, then the pod's.
func containerShouldRestart(c *corev1.Container, spec *corev1.PodSpec, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if _, ok := MatchingRestartRule(c, exitCode); ok {
			return true // Restart and RestartAllContainers both run it again
		}
		switch *c.RestartPolicy {
		case corev1.ContainerRestartPolicyAlways:
			return true
		case corev1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case corev1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch spec.RestartPolicy {
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	case corev1.RestartPolicyNever:
		return false
	}
	return true
}

// restartOnKill is whether a container killed while running (a failed
// liveness or startup probe) starts again: its own restart policy, else the
// pod's (computePodActions: the rules are not evaluated, there is no exit code).
func restartOnKill(c *corev1.Container, spec *corev1.PodSpec) bool {
	if c.RestartPolicy != nil {
		return *c.RestartPolicy != corev1.ContainerRestartPolicyNever
	}
	return spec.RestartPolicy != corev1.RestartPolicyNever
}

// MatchingRestartRule is podutil.FindMatchingContainerRestartRule: the first
// rule whose exit codes match (an unknown action is returned all the same).
func MatchingRestartRule(c *corev1.Container, exitCode int32) (corev1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		in := false
		for _, v := range rule.ExitCodes.Values {
			in = in || v == exitCode
		}
		switch rule.ExitCodes.Operator {
		case corev1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return rule, true
			}
		case corev1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return rule, true
			}
		}
	}
	return corev1.ContainerRestartRule{}, false
}

// restartsAllContainers: c's exit with exitCode restarts the whole pod in place.
func restartsAllContainers(c *corev1.Container, exitCode int32) bool {
	rule, ok := MatchingRestartRule(c, exitCode)
	return ok && rule.Action == corev1.ContainerRestartRuleActionRestartAllContainers
}

// allContainersCouldRestart is podutil.AllContainersCouldRestart: a rule of an
// init or app container restarts all containers, so the pod has an
// AllContainersRestarting condition.
func allContainersCouldRestart(spec *corev1.PodSpec) bool {
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			for _, rule := range list[i].RestartPolicyRules {
				if rule.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}
