package integration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The pods of test/e2e/common/node/container_restart_policy.go's "Container
// Restart Rules" (NodeConformance, ContainerRestartRules: beta and on by
// default since Kubernetes 1.35).
const restartRulesYAML = `
apiVersion: v1
kind: Pod
metadata: {name: rule-match}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main-container
    image: busybox:1.28
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "exit 42"]
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes: {operator: In, values: [42]}
---
apiVersion: v1
kind: Pod
metadata: {name: rule-mismatch}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main-container
    image: busybox:1.28
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "exit 1"]
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes: {operator: In, values: [42]}
---
apiVersion: v1
kind: Pod
metadata: {name: container-never}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 1
  containers:
  - name: main-container
    image: busybox:1.28
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "exit 1"]
    restartPolicy: Never
---
apiVersion: v1
kind: Pod
metadata: {name: container-always}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main-container
    image: busybox:1.28
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "exit 1"]
    restartPolicy: Always
`

func containerStatus(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if s.Name == name {
			return s
		}
	}
	return corev1.ContainerStatus{}
}

func TestContainerRestartRules(t *testing.T) {
	e := newEnv(t)
	// The API server's validation of the rules.
	r := e.podrunIn(`
apiVersion: v1
kind: Pod
metadata: {name: bad-rules}
spec:
  containers:
  - name: c
    image: busybox:1.28
    restartPolicyRules:
    - action: Stop
      exitCodes: {operator: In, values: [42]}
`, "apply", "-f", "-")
	if r.code != 2 || !strings.Contains(r.stderr, `spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used`) ||
		!strings.Contains(r.stderr, `spec.containers[0].restartPolicyRules[0].action: Unsupported value: "Stop": supported values: "Restart", "RestartAllContainers"`) {
		t.Fatalf("invalid rules: exit %d\n%s", r.code, r.stderr)
	}

	e.apply(restartRulesYAML)
	for _, name := range []string{"rule-match", "container-always"} {
		e.waitFor(name, 2*time.Minute, "main-container restarted", func(p *corev1.Pod) bool {
			return containerStatus(p, "main-container").RestartCount > 0
		})
	}
	for _, name := range []string{"rule-mismatch", "container-never"} {
		p := e.waitPhase(name, corev1.PodFailed, 2*time.Minute)
		if st := containerStatus(p, "main-container"); st.RestartCount != 0 || st.State.Terminated == nil || st.State.Terminated.ExitCode != 1 {
			t.Errorf("%s: %+v", name, st)
		}
	}
	if p := e.pod("rule-match"); p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		t.Errorf("rule-match is %s: its container restarts on exit 42", p.Status.Phase)
	}
	e.must("delete", "pods", "--all")
}

// The pods of container_restart_policy.go's "RestartAllContainers"
// (RestartAllContainersOnContainerExits, beta and on by default since 1.36):
// an exit that matches the rule kills and removes every container of the
// pod, which then runs again from its first init container, each container
// counting one restart.
const restartAllYAML = `
apiVersion: v1
kind: Pod
metadata: {name: restart-all}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: init
    image: busybox:1.28
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "exit 0"]
  - name: sidecar
    image: busybox:1.28
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "sleep 10000"]
    restartPolicy: Always
  containers:
  - name: source-container
    image: busybox:1.28
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "if [ -f /mnt/restart-complete ]; then sleep 10000; else touch /mnt/restart-complete; exit 42; fi"]
    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [42]}
    volumeMounts: [{name: workdir, mountPath: /mnt}]
  - name: regular
    image: busybox:1.28
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "sleep 10000"]
  volumes:
  - name: workdir
    emptyDir: {}
---
apiVersion: v1
kind: Pod
metadata: {name: restart-all-init}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: sidecar
    image: busybox:1.28
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "sleep 10000"]
    restartPolicy: Always
  - name: init
    image: busybox:1.28
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "exit 0"]
  - name: source-init
    image: busybox:1.28
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "if [ -f /mnt/init-complete ]; then exit 0; else touch /mnt/init-complete; exit 42; fi"]
    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [42]}
    volumeMounts: [{name: workdir, mountPath: /mnt}]
  containers:
  - name: regular
    image: busybox:1.28
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "sleep 10000"]
  volumes:
  - name: workdir
    emptyDir: {}
`

func TestRestartAllContainers(t *testing.T) {
	e := newEnv(t)
	e.apply(restartAllYAML)
	// validateAllContainersRestarted, then the containers run.
	check := func(pod string, restarted []string, running []string) {
		t.Helper()
		p := e.waitFor(pod, 3*time.Minute, "all containers restarted and running", func(p *corev1.Pod) bool {
			for _, n := range restarted {
				if containerStatus(p, n).RestartCount == 0 {
					return false
				}
			}
			for _, n := range running {
				if containerStatus(p, n).State.Running == nil {
					return false
				}
			}
			return true
		})
		for _, n := range restarted {
			st := containerStatus(p, n)
			if st.RestartCount != 1 || st.LastTerminationState.Terminated == nil || st.LastTerminationState.Terminated.Reason != "RestartingAllContainers" {
				t.Errorf("%s/%s: restartCount %d, lastState %+v", pod, n, st.RestartCount, st.LastTerminationState.Terminated)
			}
		}
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("%s: phase %s", pod, p.Status.Phase)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.AllContainersRestarting && c.Status != corev1.ConditionFalse {
				t.Errorf("%s: %+v after the reset", pod, c)
			}
			if c.Type == corev1.PodInitialized && c.Status != corev1.ConditionTrue {
				t.Errorf("%s: %+v", pod, c)
			}
		}
	}
	check("restart-all", []string{"init", "sidecar", "source-container", "regular"}, []string{"source-container", "regular"})
	check("restart-all-init", []string{"init", "sidecar", "source-init"}, []string{"regular"})
	if st := containerStatus(e.pod("restart-all-init"), "regular"); st.RestartCount != 0 {
		t.Errorf("regular never ran before the reset: restartCount %d", st.RestartCount)
	}
	// The removed runs' logs stay readable, as the kubelet keeps them.
	if r := e.must("logs", "restart-all", "-c", "source-container", "--previous"); r.code != 0 {
		t.Errorf("logs --previous: %+v", r)
	}
	e.eventually("AllContainersRestarting", true, "describe", "pod", "restart-all")
	e.must("delete", "pods", "--all")
}
