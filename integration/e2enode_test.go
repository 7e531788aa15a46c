package integration

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/podrun/podrun/tools/mkimage/archive"
	corev1 "k8s.io/api/core/v1"
)

// Scenarios of the kubelet's conformance and node e2e tests
// (test/e2e/common/node/{runtime,container_probe,security_context,pods,
// containers}.go, test/e2e/node/{security_context,pod_hostnamefqdn}.go),
// run end to end through podrun. Their pods carry the tag "nd".

// ndEnv is newEnv with this file's bridge and cgroup names.
func ndEnv(t *testing.T) *env {
	e := newEnv(t)
	n := envCounter.Load()
	e.bridge = fmt.Sprintf("nd%d-%d", os.Getpid()%10000, n)
	e.cgroupParent = fmt.Sprintf("/podrun-nd-%d-%d", os.Getpid(), n)
	return e
}

// ndEvent reports whether the pod has an event of that type, reason and message.
func (e *env) ndEvent(p *corev1.Pod, typ, reason, message string) bool {
	for _, ev := range e.events(p) {
		if ev["type"] == typ && ev["reason"] == reason && ev["message"] == message {
			return true
		}
	}
	return false
}

// ndEventPrefix reports whether the pod has an event of that reason whose
// message starts with prefix.
func (e *env) ndEventPrefix(p *corev1.Pod, reason, prefix string) bool {
	for _, ev := range e.events(p) {
		msg, _ := ev["message"].(string)
		if ev["reason"] == reason && strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// runtime.go "should run with the expected status": a container that fails
// on its first run, succeeds on its second, then runs forever, under each
// restart policy.
func TestE2ENodeRestartPolicyPhases(t *testing.T) {
	e := ndEnv(t)
	const script = `f=/restart-count/restartCount
count=$(echo 'hello' >> $f ; wc -l $f | awk {'print $1'})
if [ $count -eq 1 ]; then
	exit 1
fi
if [ $count -eq 2 ]; then
	exit 0
fi
while true; do sleep 1; done
`
	var docs []string
	for _, c := range []struct{ name, policy string }{
		{"terminate-cmd-rpa", "Always"}, {"terminate-cmd-rpof", "OnFailure"}, {"terminate-cmd-rpn", "Never"},
	} {
		docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: %s
  terminationGracePeriodSeconds: 1
  volumes: [{name: restart-count, emptyDir: {medium: Memory}}]
  containers:
  - name: %s
    image: busybox:1.28
    volumeMounts: [{name: restart-count, mountPath: /restart-count}]
    command: [sh, -c, %q]
`, c.name, c.policy, c.name, script))
	}
	e.fast("apply", e.manifest(strings.Join(docs, "---\n")))
	for _, c := range []struct {
		name     string
		phase    corev1.PodPhase
		restarts int32
		ready    bool
		running  bool
	}{
		{"terminate-cmd-rpa", corev1.PodRunning, 2, true, true},
		{"terminate-cmd-rpof", corev1.PodSucceeded, 1, false, false},
		{"terminate-cmd-rpn", corev1.PodFailed, 0, false, false},
	} {
		p := e.waitFor(c.name, time.Minute, "as the conformance test expects", func(p *corev1.Pod) bool {
			s := containerState(p, c.name)
			return p.Status.Phase == c.phase && s.RestartCount == c.restarts && (s.State.Running != nil) == c.running &&
				(!c.running || s.Ready)
		})
		s := containerState(p, c.name)
		if s.Ready != c.ready || (s.State.Terminated != nil) == c.running {
			t.Errorf("%s: ready %v, state %+v", c.name, s.Ready, s.State)
		}
		if !c.running && hasCondition(p, corev1.PodReady, corev1.ConditionTrue) {
			t.Errorf("%s: finished pod is Ready", c.name)
		}
	}
	// Restarts are not counted on and on: Always stays at 2 while it runs.
	time.Sleep(2 * time.Second)
	if rc := containerState(e.pod("terminate-cmd-rpa"), "terminate-cmd-rpa").RestartCount; rc != 2 {
		t.Errorf("restart count moved to %d", rc)
	}
}

// runtime.go "on terminated container": termination messages from the file
// (as root and as a non-root user at a non-default path) and from the log
// with FallbackToLogsOnError.
func TestE2ENodeTerminationMessageCases(t *testing.T) {
	e := ndEnv(t)
	pod := func(name, sc, args, path, policy string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  containers:
  - name: termination-message-container
    image: busybox:1.28
    command: [/bin/sh, -c]
    args: [%q]
    terminationMessagePath: %s
    terminationMessagePolicy: %s
    securityContext: %s
`, name, args, path, policy, sc)
	}
	e.apply(strings.Join([]string{
		pod("root-file", "{runAsUser: 0}", "/bin/echo -n DONE > /dev/termination-log", "/dev/termination-log", "File"),
		pod("nonroot-custom", "{runAsUser: 10000}", "/bin/echo -n DONE > /dev/termination-custom-log", "/dev/termination-custom-log", "File"),
		pod("fallback-error", "{}", "/bin/echo -n DONE; /bin/false", "/dev/termination-log", "FallbackToLogsOnError"),
		pod("fallback-success", "{}", "/bin/echo -n DONE; /bin/true", "/dev/termination-log", "FallbackToLogsOnError"),
		pod("file-over-logs", "{}", "/bin/echo -n OK > /dev/termination-log; /bin/echo DONE; /bin/true", "/dev/termination-log", "FallbackToLogsOnError"),
	}, "---\n"))
	for _, c := range []struct {
		name  string
		phase corev1.PodPhase
		msg   string
	}{
		{"root-file", corev1.PodSucceeded, "DONE"},
		{"nonroot-custom", corev1.PodSucceeded, "DONE"},
		{"fallback-error", corev1.PodFailed, "DONE"},
		{"fallback-success", corev1.PodSucceeded, ""},
		{"file-over-logs", corev1.PodSucceeded, "OK"},
	} {
		p := e.waitFor(c.name, time.Minute, "finished", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		})
		term := containerState(p, "termination-message-container").State.Terminated
		if p.Status.Phase != c.phase || term == nil || term.Message != c.msg {
			t.Errorf("%s: phase %s, terminated %+v; want %s with message %q", c.name, p.Status.Phase, term, c.phase, c.msg)
		}
	}
}

// runtime.go "when running a container with a new image": an image that
// cannot be pulled keeps the pod Pending in ErrImagePull/ImagePullBackOff;
// an absent image with pull policy Never waits in ErrImageNeverPull with the
// image manager's event (EnsureImageExists) and startContainer's "Error:
// ErrImageNeverPull"; the back-off is reported as "Error: ImagePullBackOff".
func TestE2ENodeImagePullFailures(t *testing.T) {
	e := ndEnv(t)
	e.fast("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: invalid-registry}
spec:
  restartPolicy: Never
  containers:
  - name: image-pull-test
    image: 127.0.0.1:1/nd/invalid:1
    imagePullPolicy: Always
    command: [/bin/sh, -c, 'while true; do sleep 1; done']
---
apiVersion: v1
kind: Pod
metadata: {name: never-pull}
spec:
  containers:
  - name: c
    image: nd-absent:1
    imagePullPolicy: Never
`))
	p := e.waitFor("invalid-registry", time.Minute, "in ImagePullBackOff", func(p *corev1.Pod) bool {
		w := containerState(p, "image-pull-test").State.Waiting
		return w != nil && w.Reason == "ImagePullBackOff"
	})
	if p.Status.Phase != corev1.PodPending {
		t.Errorf("phase %s, want Pending", p.Status.Phase)
	}
	if w := containerState(p, "image-pull-test").State.Waiting; w.Message != `Back-off pulling image "127.0.0.1:1/nd/invalid:1"` {
		t.Errorf("message %q", w.Message)
	}
	for _, want := range [][3]string{
		{"Warning", "Failed", "Error: ErrImagePull"},
		{"Normal", "BackOff", `Back-off pulling image "127.0.0.1:1/nd/invalid:1"`},
		{"Warning", "Failed", "Error: ImagePullBackOff"},
	} {
		if !e.ndEvent(p, want[0], want[1], want[2]) {
			t.Errorf("no event %v: %v", want, e.events(p))
		}
	}
	if !e.ndEventPrefix(p, "Failed", `Failed to pull image "127.0.0.1:1/nd/invalid:1": `) {
		t.Errorf("no Failed to pull image event: %v", e.events(p))
	}

	msg := `Container image "nd-absent:1" is not present with pull policy of Never`
	p = e.waitFor("never-pull", 30*time.Second, "in ErrImageNeverPull", func(p *corev1.Pod) bool {
		w := containerState(p, "c").State.Waiting
		return w != nil && w.Reason == "ErrImageNeverPull"
	})
	if w := containerState(p, "c").State.Waiting; w.Message != msg || p.Status.Phase != corev1.PodPending {
		t.Errorf("waiting %+v, phase %s", w, p.Status.Phase)
	}
	if !e.ndEvent(p, "Warning", "ErrImageNeverPull", msg) || !e.ndEvent(p, "Warning", "Failed", "Error: ErrImageNeverPull") {
		t.Errorf("events: %v", e.events(p))
	}
	if s := e.status("never-pull"); s != "ErrImageNeverPull" {
		t.Errorf("STATUS %s", s)
	}
}

// container_probe.go: startup probes hold liveness and readiness back and
// restart the container when they fail ("Container x failed startup probe,
// will be restarted"); a probe's own terminationGracePeriodSeconds overrides
// the pod's; an exec probe that outlives its timeout fails with "command ...
// timed out"; a pod that is never ready stays Running and is not restarted.
func TestE2ENodeProbeCases(t *testing.T) {
	e := ndEnv(t)
	e.fast("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: startup-fails}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: busybox
    image: busybox:1.28
    command: [/bin/sh, -c, 'sleep 600']
    livenessProbe:
      exec: {command: ['/bin/true']}
      periodSeconds: 1
      failureThreshold: 1
    startupProbe:
      exec: {command: ['/bin/false']}
      periodSeconds: 1
      failureThreshold: 3
---
apiVersion: v1
kind: Pod
metadata: {name: startup-late}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: busybox
    image: busybox:1.28
    command: [/bin/sh, -c, 'sleep 8; touch /tmp/startup; sleep 600']
    readinessProbe:
      exec: {command: ['/bin/true']}
      periodSeconds: 1
    startupProbe:
      exec: {command: ['cat', '/tmp/startup']}
      periodSeconds: 1
      failureThreshold: 60
---
apiVersion: v1
kind: Pod
metadata: {name: probe-grace}
spec:
  terminationGracePeriodSeconds: 600
  containers:
  - name: busybox
    image: busybox:1.28
    command: [/bin/sh, -c, 'trap "" TERM; sleep 1000 & while true; do wait; done']
    livenessProbe:
      exec: {command: ['/bin/false']}
      initialDelaySeconds: 2
      periodSeconds: 1
      failureThreshold: 1
      terminationGracePeriodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata: {name: exec-timeout}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: busybox
    image: busybox:1.28
    command: [/bin/sh, -c, 'sleep 600']
    livenessProbe:
      exec: {command: [/bin/sh, -c, 'sleep 10']}
      initialDelaySeconds: 1
      timeoutSeconds: 1
      failureThreshold: 1
---
apiVersion: v1
kind: Pod
metadata: {name: never-ready}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: busybox
    image: busybox:1.28
    command: [/bin/sh, -c, 'sleep 600']
    readinessProbe:
      exec: {command: ['/bin/false']}
      periodSeconds: 1
`))
	// not started nor ready until the startup probe succeeds.
	p := e.waitFor("startup-late", 30*time.Second, "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if s := containerState(p, "busybox"); s.Ready || s.Started == nil || *s.Started {
		t.Errorf("startup-late before its startup probe: ready %v started %v", s.Ready, s.Started)
	}
	p = e.waitFor("startup-late", 30*time.Second, "ready", func(p *corev1.Pod) bool { return containerState(p, "busybox").Ready })
	if s := containerState(p, "busybox"); s.Started == nil || !*s.Started || s.RestartCount != 0 {
		t.Errorf("startup-late: %+v", s)
	}

	// startup probe failure restarts the container; liveness never ran.
	p = e.waitFor("startup-fails", time.Minute, "restarted by its startup probe", func(p *corev1.Pod) bool {
		return containerState(p, "busybox").RestartCount >= 1
	})
	if !e.ndEvent(p, "Normal", "Killing", "Container busybox failed startup probe, will be restarted") ||
		!e.ndEvent(p, "Warning", "Unhealthy", "Startup probe failed: ") {
		t.Errorf("startup-fails events: %v", e.events(p))
	}
	if e.ndEventPrefix(p, "Unhealthy", "Liveness probe") {
		t.Errorf("the liveness probe ran before the startup probe succeeded: %v", e.events(p))
	}

	// The probe's grace period (1s), not the pod's (600s), bounds the kill.
	p = e.waitFor("probe-grace", 40*time.Second, "restarted within the probe's grace period", func(p *corev1.Pod) bool {
		return containerState(p, "busybox").RestartCount >= 1
	})
	if last := containerState(p, "busybox").LastTerminationState.Terminated; last == nil || last.ExitCode != 137 {
		t.Errorf("probe-grace last state %+v, want killed (137)", last)
	}

	p = e.waitFor("exec-timeout", 40*time.Second, "restarted by its timed-out probe", func(p *corev1.Pod) bool {
		return containerState(p, "busybox").RestartCount >= 1
	})
	if !e.ndEvent(p, "Warning", "Unhealthy", `Liveness probe failed: command "/bin/sh -c sleep 10" timed out`) {
		t.Errorf("exec-timeout events: %v", e.events(p))
	}

	p = e.pod("never-ready")
	if s := containerState(p, "busybox"); p.Status.Phase != corev1.PodRunning || s.Ready || s.RestartCount != 0 ||
		!hasCondition(p, corev1.PodReady, corev1.ConditionFalse) || !hasCondition(p, corev1.ContainersReady, corev1.ConditionFalse) {
		t.Errorf("never-ready: phase %s, %+v, conditions %+v", p.Status.Phase, s, p.Status.Conditions)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && (c.Reason != "ContainersNotReady" || c.Message != "containers with unready status: [busybox]") {
			t.Errorf("Ready condition %+v", c)
		}
	}
}

// pods.go "should get a host IP", "should be submitted and removed" and the
// status the kubelet reports: hostIP(s), podIP(s), startTime, qosClass and the
// conditions, PodReadyToStartContainers included; the downward API's env
// agrees with it (downwardapi.go).
func TestE2ENodePodStatusFields(t *testing.T) {
	e := ndEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: status-fields, labels: {time: "1"}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:1.28
    command: [/bin/sh, -c, 'env; sleep 600']
    resources:
      limits: {cpu: 100m, memory: 64Mi}
    env:
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: POD_IPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: HOST_IPS, valueFrom: {fieldRef: {fieldPath: status.hostIPs}}}
    - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
    - {name: POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
    - {name: CPU_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: CPU_REQUEST, valueFrom: {resourceFieldRef: {resource: requests.cpu, divisor: 1m}}}
    - {name: MEMORY_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
`)
	p := e.waitFor("status-fields", 30*time.Second, "ready", func(p *corev1.Pod) bool { return hasCondition(p, corev1.PodReady, corev1.ConditionTrue) })
	st := p.Status
	if st.HostIP == "" || len(st.HostIPs) == 0 || st.HostIPs[0].IP != st.HostIP {
		t.Errorf("hostIP %q hostIPs %v", st.HostIP, st.HostIPs)
	}
	if st.PodIP == "" || len(st.PodIPs) == 0 || st.PodIPs[0].IP != st.PodIP {
		t.Errorf("podIP %q podIPs %v", st.PodIP, st.PodIPs)
	}
	if st.StartTime == nil || st.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("startTime %v qosClass %s", st.StartTime, st.QOSClass)
	}
	var types []string
	for _, c := range st.Conditions {
		if c.Status != corev1.ConditionTrue {
			t.Errorf("condition %+v", c)
		}
		types = append(types, string(c.Type))
	}
	if want := []string{"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"}; !reflect.DeepEqual(types, want) {
		t.Errorf("conditions %v, want %v", types, want)
	}
	out := e.logsOf("status-fields", "c")
	for _, want := range []string{
		"POD_NAME=status-fields\n", "POD_NAMESPACE=default\n", "POD_IP=" + st.PodIP + "\n", "POD_IPS=" + st.PodIP + "\n",
		"HOST_IP=" + st.HostIP + "\n", "HOST_IPS=" + st.HostIP + "\n", "NODE_NAME=" + p.Spec.NodeName + "\n",
		"SA=default\n", "POD_UID=" + string(p.UID) + "\n", "CPU_LIMIT=1\n", "CPU_REQUEST=100\n", "MEMORY_LIMIT=64\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("env lacks %q:\n%s", want, out)
		}
	}
	if p.Spec.NodeName == "" {
		t.Error("spec.nodeName is empty")
	}
}

// containers.go: command and args against the image's ENTRYPOINT and CMD.
func TestE2ENodeCommandAndArgsOverImage(t *testing.T) {
	e := ndEnv(t)
	base := imgDockerArchiveLayers(t, testImage)[0]
	cfg := imgBusyboxConfig
	cfg.Entrypoint = []string{"/bin/echo", "entrypoint"}
	cfg.Cmd = []string{"default", "arguments"}
	e.must("load", "-i", imgWriteArchive(t, archive.DockerArchive, "", cfg, archive.Layer{Tar: base}), "--tag", "busybox:nd-entrypoint")
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: cmdargs}
spec:
  restartPolicy: Never
  containers:
  - {name: image-defaults, image: 'busybox:nd-entrypoint'}
  - {name: args-only, image: 'busybox:nd-entrypoint', args: [override, arguments]}
  - {name: command-only, image: 'busybox:nd-entrypoint', command: [/bin/echo, command]}
  - {name: both, image: 'busybox:nd-entrypoint', command: [/bin/echo, command], args: [override, arguments]}
`)
	e.waitPhase("cmdargs", corev1.PodSucceeded, time.Minute)
	for name, want := range map[string]string{
		"image-defaults": "entrypoint default arguments\n",
		"args-only":      "entrypoint override arguments\n",
		"command-only":   "command\n",
		"both":           "command override arguments\n",
	} {
		if out := e.must("logs", "cmdargs", "-c", name).stdout; out != want {
			t.Errorf("%s printed %q, want %q", name, out, want)
		}
	}
}

// test/e2e/node/security_context.go "SupplementalGroupsPolicy": user 1000
// belongs to group 50000 in the image's /etc/group. Merge (the default) adds
// that group to the supplementalGroups, Strict does not; the container status
// reports the identity (status.containerStatuses[].user.linux).
func TestE2ENodeSupplementalGroupsPolicy(t *testing.T) {
	e := ndEnv(t)
	base := imgDockerArchiveLayers(t, testImage)[0]
	etc := imgDirLayer(t, map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nuser-defined-in-image:x:1000:1000:user:/home:/bin/sh\n",
		"etc/group":  "root:x:0:\nuser-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n",
	})
	e.must("load", "-i", imgWriteArchive(t, archive.DockerArchive, "", imgBusyboxConfig, archive.Layer{Tar: base}, etc), "--tag", "busybox:nd-groups")
	pod := func(name, policy string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 1000, supplementalGroups: [60000]%s}
  containers:
  - {name: test-container, image: 'busybox:nd-groups', command: [sh, -c, 'id -G; while :; do sleep 1; done']}
`, name, policy)
	}
	e.apply(strings.Join([]string{pod("merge-default", ""), pod("merge", ", supplementalGroupsPolicy: Merge"), pod("strict", ", supplementalGroupsPolicy: Strict")}, "---\n"))
	for name, groups := range map[string][]int64{
		"merge-default": {1000, 50000, 60000},
		"merge":         {1000, 50000, 60000},
		"strict":        {1000, 60000},
	} {
		p := e.waitPhase(name, corev1.PodRunning, 30*time.Second)
		var words []string
		for _, g := range groups {
			words = append(words, fmt.Sprint(g))
		}
		if out := e.logsOf(name, "test-container"); out != strings.Join(words, " ")+"\n" {
			t.Errorf("%s: id -G printed %q, want %v", name, out, groups)
		}
		want := &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{UID: 1000, GID: 1000, SupplementalGroups: groups}}
		if u := containerState(p, "test-container").User; !reflect.DeepEqual(u, want) {
			t.Errorf("%s: status user %+v, want %+v", name, u, want.Linux)
		}
	}
}

// security_context.go: no_new_privs as AddNoNewPrivileges decides it (unset:
// off; false: on; privileged: off), privileged against unprivileged network
// administration, runAsGroup without runAsUser, fsGroup among the groups,
// readOnlyRootFilesystem as a non-root user, safe sysctls (sysctl.go).
func TestE2ENodeSecurityContextCases(t *testing.T) {
	e := ndEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: secctx}
spec:
  restartPolicy: Never
  securityContext:
    fsGroup: 3000
    sysctls: [{name: kernel.shm_rmid_forced, value: "1"}]
  containers:
  - name: escalation-unset
    image: busybox:1.28
    securityContext: {runAsUser: 1000}
    command: [sh, -c, 'grep ^NoNewPrivs: /proc/self/status']
  - name: escalation-false
    image: busybox:1.28
    securityContext: {runAsUser: 1000, allowPrivilegeEscalation: false}
    command: [sh, -c, 'grep ^NoNewPrivs: /proc/self/status']
  - name: privileged
    image: busybox:1.28
    securityContext: {privileged: true}
    command: [sh, -c, 'ip link set lo mtu 65536 && echo added; grep ^NoNewPrivs: /proc/self/status']
  - name: unprivileged
    image: busybox:1.28
    securityContext: {privileged: false}
    command: [sh, -c, 'ip link set lo mtu 65536 2>/dev/null && echo added || echo refused']
  - name: group-only
    image: busybox:1.28
    securityContext: {runAsGroup: 2000}
    command: [sh, -c, 'id -u; id -g; id -G']
  - name: readonly-nonroot
    image: busybox:1.28
    securityContext: {runAsUser: 65534, readOnlyRootFilesystem: true}
    command: [sh, -c, 'touch /file 2>/dev/null && echo written || echo read-only; touch /tmp/x 2>/dev/null && echo tmp || echo tmp-read-only']
  - name: sysctl
    image: busybox:1.28
    command: [cat, /proc/sys/kernel/shm_rmid_forced]
`)
	e.waitFor("secctx", time.Minute, "finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	for name, want := range map[string]string{
		"escalation-unset": "NoNewPrivs:\t0\n",
		"escalation-false": "NoNewPrivs:\t1\n",
		"privileged":       "added\nNoNewPrivs:\t0\n",
		"unprivileged":     "refused\n",
		"group-only":       "0\n2000\n2000 3000\n",
		"readonly-nonroot": "read-only\ntmp-read-only\n",
		"sysctl":           "1\n",
	} {
		if out := e.must("logs", "secctx", "-c", name).stdout; out != want {
			t.Errorf("%s printed %q, want %q", name, out, want)
		}
	}
}

// test/e2e/node/pod_hostnamefqdn.go: hostname and `hostname -f` with and
// without a subdomain and setHostnameAsFQDN; an FQDN over 64 characters
// keeps the pod Pending with FailedCreatePodSandBox events.
func TestE2ENodeHostnameAndFQDN(t *testing.T) {
	e := ndEnv(t)
	long := "nd-" + strings.Repeat("x", 50)
	e.apply(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: shortname-only}
spec:
  restartPolicy: Never
  setHostnameAsFQDN: true
  containers:
  - {name: c, image: busybox:1.28, command: [sh, -c, "echo $(hostname)';'$(hostname -f)';'"]}
---
apiVersion: v1
kind: Pod
metadata: {name: with-subdomain}
spec:
  restartPolicy: Never
  subdomain: t
  containers:
  - {name: c, image: busybox:1.28, command: [sh, -c, "echo $(hostname)';'$(hostname -f)';'"]}
---
apiVersion: v1
kind: Pod
metadata: {name: as-fqdn}
spec:
  restartPolicy: Never
  subdomain: t
  setHostnameAsFQDN: true
  containers:
  - {name: c, image: busybox:1.28, command: [sh, -c, "echo $(hostname)';'$(hostname -f)';'"]}
---
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  subdomain: t
  setHostnameAsFQDN: true
  containers:
  - {name: c, image: busybox:1.28, command: ['true']}
`, long))
	for name, want := range map[string]string{
		"shortname-only": "shortname-only;shortname-only;\n",
		"with-subdomain": "with-subdomain;with-subdomain.t.default.svc.cluster.local;\n",
		"as-fqdn":        "as-fqdn.t.default.svc.cluster.local;as-fqdn.t.default.svc.cluster.local;\n",
	} {
		e.waitPhase(name, corev1.PodSucceeded, time.Minute)
		if out := e.must("logs", name, "-c", "c").stdout; out != want {
			t.Errorf("%s printed %q, want %q", name, out, want)
		}
	}
	fqdn := long + ".t.default.svc.cluster.local"
	msg := fmt.Sprintf("Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (64 characters is the max, %d characters requested)", fqdn, len(fqdn))
	p := e.waitFor(long, 30*time.Second, "refused its sandbox", func(p *corev1.Pod) bool { return e.ndEvent(p, "Warning", "FailedCreatePodSandBox", msg) })
	if p.Status.Phase != corev1.PodPending {
		t.Errorf("phase %s, want Pending", p.Status.Phase)
	}
}

// container_probe.go "should mark readiness on pods to false and disable
// liveness probes while pod is in progress of terminating": a deleted pod
// goes unready within its grace period, and its liveness probe no longer
// kills it (the kubelet stops the probe workers of a terminating pod).
func TestE2ENodeProbesWhileTerminating(t *testing.T) {
	e := ndEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: probe-terminating}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: probe-terminating
    image: busybox:1.28
    command: [/bin/sh, -c]
    args:
    - |
      _term() {
        rm -f /tmp/ready
        rm -f /tmp/liveness
        sleep 8
        exit 0
      }
      trap _term TERM
      touch /tmp/ready
      touch /tmp/liveness
      while true; do echo hello; sleep 10 & wait; done
    readinessProbe:
      exec: {command: [cat, /tmp/ready]}
      failureThreshold: 1
      initialDelaySeconds: 2
      periodSeconds: 2
    livenessProbe:
      exec: {command: [cat, /tmp/liveness]}
      failureThreshold: 1
      initialDelaySeconds: 2
      periodSeconds: 1
`)
	p := e.waitFor("probe-terminating", 30*time.Second, "ready", func(p *corev1.Pod) bool { return hasCondition(p, corev1.PodReady, corev1.ConditionTrue) })
	e.must("delete", "probe-terminating", "--wait=false")
	e.waitFor("probe-terminating", 20*time.Second, "unready while terminating", func(p *corev1.Pod) bool {
		return p.DeletionTimestamp != nil && !hasCondition(p, corev1.PodReady, corev1.ConditionTrue)
	})
	time.Sleep(4 * time.Second)
	for _, ev := range e.events(p) {
		if msg, _ := ev["message"].(string); strings.Contains(msg, "failed liveness probe") || strings.HasPrefix(msg, "Liveness probe failed") {
			t.Errorf("a liveness probe ran while the pod terminated: %v", ev)
		}
	}
	if p := e.pod("probe-terminating"); containerState(p, "probe-terminating").RestartCount != 0 {
		t.Errorf("restarted while terminating: %+v", containerState(p, "probe-terminating"))
	}
}

// container_probe.go: a readiness probe's initialDelaySeconds holds Ready
// back (the Ready condition's transition comes at least that long after the
// container started); a readiness probe with a long period runs at once when
// the startup probe succeeds ("should be ready immediately after startupProbe
// succeeds", the prober manager's manual trigger); a startup probe's own
// terminationGracePeriodSeconds overrides the pod's.
func TestE2ENodeProbeDelaysAndStartup(t *testing.T) {
	e := ndEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: initial-delay}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: test-webserver
    image: busybox:1.28
    command: [/bin/sh, -c, 'sleep 600']
    readinessProbe:
      exec: {command: [/bin/true]}
      initialDelaySeconds: 5
      periodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata: {name: ready-after-startup}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: busybox
    image: busybox:1.28
    command: [/bin/sh, -c, 'echo ok >/tmp/health; sleep 4; echo ok >/tmp/startup; sleep 600']
    readinessProbe:
      exec: {command: [/bin/cat, /tmp/health]}
      periodSeconds: 30
    startupProbe:
      exec: {command: [/bin/cat, /tmp/startup]}
      periodSeconds: 1
      failureThreshold: 120
---
apiVersion: v1
kind: Pod
metadata: {name: startup-grace}
spec:
  terminationGracePeriodSeconds: 500
  containers:
  - name: busybox
    image: busybox:1.28
    command: [/bin/sh, -c, 'trap "" TERM; sleep 1000 & while true; do wait; done']
    livenessProbe:
      exec: {command: [/bin/true]}
      initialDelaySeconds: 1
      failureThreshold: 1
    startupProbe:
      exec: {command: [/bin/cat, /tmp/startup]}
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 1
      terminationGracePeriodSeconds: 2
`)
	p := e.waitFor("initial-delay", 30*time.Second, "ready", func(p *corev1.Pod) bool { return hasCondition(p, corev1.PodReady, corev1.ConditionTrue) })
	started := containerState(p, "test-webserver").State.Running.StartedAt.Time
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.LastTransitionTime.Time.Sub(started) < 5*time.Second {
			t.Errorf("ready at %s, %s after the start at %s: before the initial delay", c.LastTransitionTime, c.LastTransitionTime.Time.Sub(started), started)
		}
	}
	if rc := containerState(p, "test-webserver").RestartCount; rc != 0 {
		t.Errorf("restart count %d", rc)
	}

	p = e.waitFor("ready-after-startup", 30*time.Second, "started", func(p *corev1.Pod) bool {
		s := containerState(p, "busybox")
		return s.Started != nil && *s.Started
	})
	startedAt := time.Now()
	p = e.waitFor("ready-after-startup", 30*time.Second, "ready", func(p *corev1.Pod) bool { return hasCondition(p, corev1.PodReady, corev1.ConditionTrue) })
	if in := time.Since(startedAt); in > 5*time.Second {
		t.Errorf("ready %s after the startup probe succeeded: the readiness probe waited for its period", in)
	}

	p = e.waitFor("startup-grace", 40*time.Second, "restarted within the startup probe's grace period", func(p *corev1.Pod) bool {
		return containerState(p, "busybox").RestartCount >= 1
	})
	if !e.ndEvent(p, "Normal", "Killing", "Container busybox failed startup probe, will be restarted") {
		t.Errorf("events: %v", e.events(p))
	}
}

// container_probe.go "Probing restartable init container": a sidecar whose
// readiness probe fails keeps the pod unready without restarts; a sidecar
// whose liveness probe fails is restarted with the kubelet's events.
func TestE2ENodeSidecarProbes(t *testing.T) {
	e := ndEnv(t)
	e.fast("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: sidecar-never-ready}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: sidecar
    image: busybox:1.28
    restartPolicy: Always
    command: [/bin/sh, -c, 'sleep 600']
    readinessProbe:
      exec: {command: [/bin/false]}
      periodSeconds: 1
  containers:
  - {name: main, image: busybox:1.28, command: [/bin/sh, -c, 'sleep 600']}
---
apiVersion: v1
kind: Pod
metadata: {name: sidecar-liveness}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: sidecar
    image: busybox:1.28
    restartPolicy: Always
    command: [/bin/sh, -c, 'echo ok >/tmp/health; sleep 3; rm -rf /tmp/health; sleep 600']
    livenessProbe:
      exec: {command: [cat, /tmp/health]}
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 1
  containers:
  - {name: main, image: busybox:1.28, command: [/bin/sh, -c, 'sleep 600']}
`))
	p := e.waitFor("sidecar-liveness", time.Minute, "sidecar restarted", func(p *corev1.Pod) bool {
		return containerState(p, "sidecar").RestartCount >= 1
	})
	if !e.ndEvent(p, "Normal", "Killing", "Container sidecar failed liveness probe, will be restarted") ||
		!e.ndEventPrefix(p, "Unhealthy", "Liveness probe failed: ") {
		t.Errorf("sidecar-liveness events: %v", e.events(p))
	}
	if rc := containerState(p, "main").RestartCount; rc != 0 {
		t.Errorf("main restarted %d times", rc)
	}
	p = e.pod("sidecar-never-ready")
	if s := containerState(p, "sidecar"); p.Status.Phase != corev1.PodRunning || s.Ready || s.RestartCount != 0 ||
		!hasCondition(p, corev1.PodReady, corev1.ConditionFalse) || containerState(p, "main").State.Running == nil {
		t.Errorf("sidecar-never-ready: phase %s, sidecar %+v, conditions %+v", p.Status.Phase, s, p.Status.Conditions)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.ContainersReady && c.Message != "containers with unready status: [sidecar]" {
			t.Errorf("ContainersReady %+v", c)
		}
	}
}

// sysctl.go, configmap.go, secrets.go, test/e2e/node/pods.go: what the API
// server refuses (invalid sysctl names, empty ConfigMap and Secret keys) with
// its messages, sysctls written with slashes, a hostNetwork pod's downward API IPs, and an app
// container never started after its init container failed.
func TestE2ENodeAPIEdgeCases(t *testing.T) {
	e := ndEnv(t)
	r := e.podrun("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: invalid-sysctls}
spec:
  securityContext:
    sysctls:
    - {name: foo-, value: bar}
    - {name: kernel.shmmax, value: "100000000"}
    - {name: safe-and-unsafe, value: "100000000"}
    - {name: bar.., value: "42"}
  containers:
  - {name: c, image: busybox:1.28}
`))
	if r.code != 2 || !strings.Contains(r.stderr, `Invalid value: "foo-"`) || !strings.Contains(r.stderr, `Invalid value: "bar.."`) ||
		strings.Contains(r.stderr, "safe-and-unsafe") || strings.Contains(r.stderr, "kernel.shmmax") {
		t.Errorf("invalid sysctls: %s", r)
	}
	for _, kind := range []string{"ConfigMap", "Secret"} {
		r := e.podrun("apply", e.manifest(fmt.Sprintf(`
apiVersion: v1
kind: %s
metadata: {name: empty-key}
data: {"": dmFsdWUtMQ==}
`, kind)))
		if r.code != 2 || !strings.Contains(r.stderr, `data[]: Invalid value: "": a valid config key must consist of alphanumeric characters, '-', '_' or '.'`) {
			t.Errorf("%s with an empty key: %s", kind, r)
		}
	}

	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: negative-grace}
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    sysctls: [{name: kernel/shm_rmid_forced, value: "1"}]
  containers:
  - {name: c, image: busybox:1.28, command: [sh, -c, 'cat /proc/sys/kernel/shm_rmid_forced; sleep 600']}
---
apiVersion: v1
kind: Pod
metadata: {name: host-network-ips}
spec:
  hostNetwork: true
  restartPolicy: Never
  containers:
  - name: c
    image: busybox:1.28
    command: [sh, -c, 'echo "$POD_IP $HOST_IP"']
    env:
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
---
apiVersion: v1
kind: Pod
metadata: {name: init-fails}
spec:
  restartPolicy: Never
  initContainers:
  - {name: init, image: busybox:1.28, command: ['false']}
  containers:
  - {name: app, image: busybox:1.28, command: ['true']}
`)
	if out := e.logsOf("negative-grace", "c"); out != "1\n" {
		t.Errorf("kernel/shm_rmid_forced: %q", out)
	}

	p := e.waitPhase("host-network-ips", corev1.PodSucceeded, time.Minute)
	if out := e.must("logs", "host-network-ips").stdout; p.Status.PodIP == "" || p.Status.PodIP != p.Status.HostIP || out != p.Status.PodIP+" "+p.Status.HostIP+"\n" {
		t.Errorf("hostNetwork pod: podIP %q hostIP %q, env %q", p.Status.PodIP, p.Status.HostIP, out)
	}

	p = e.waitPhase("init-fails", corev1.PodFailed, time.Minute)
	if s := containerState(p, "app"); s.State.Waiting == nil || s.State.Waiting.Reason != "PodInitializing" || s.Started == nil || *s.Started || s.Ready {
		t.Errorf("app after a failed init container: %+v", s)
	}
	if s := containerState(p, "init"); s.State.Terminated == nil || s.State.Terminated.ExitCode != 1 || s.State.Terminated.Reason != "Error" {
		t.Errorf("init: %+v", s)
	}
}

// kubelet.go: a busybox that writes to a read-only root filesystem sees the
// kernel's error, and one whose command always fails is terminated with the
// reason Error; security_context.go: container runAsUser/runAsGroup over the
// pod's, allowPrivilegeEscalation true as a non-root user.
func TestE2ENodeKubeletBusyboxCases(t *testing.T) {
	e := ndEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: busybox-cases}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1001, runAsGroup: 2001}
  containers:
  - name: readonly
    image: busybox:1.28
    securityContext: {readOnlyRootFilesystem: true, runAsUser: 0}
    command: [/bin/sh, -c, 'echo test > /file']
  - name: writable
    image: busybox:1.28
    securityContext: {readOnlyRootFilesystem: false, runAsUser: 0}
    command: [/bin/sh, -c, 'echo test > /file && cat /file']
  - name: always-fails
    image: busybox:1.28
    command: [/bin/false]
  - name: ids
    image: busybox:1.28
    securityContext: {runAsUser: 1002, runAsGroup: 2002}
    command: [sh, -c, 'id -u; id -g']
  - name: pod-ids
    image: busybox:1.28
    command: [sh, -c, 'id -u; id -g']
  - name: escalation-true
    image: busybox:1.28
    securityContext: {allowPrivilegeEscalation: true}
    command: [sh, -c, 'grep ^NoNewPrivs: /proc/self/status']
`)
	p := e.waitPhase("busybox-cases", corev1.PodFailed, time.Minute)
	for name, want := range map[string]string{
		"readonly":        "/bin/sh: can't create /file: Read-only file system\n",
		"writable":        "test\n",
		"ids":             "1002\n2002\n",
		"pod-ids":         "1001\n2001\n",
		"escalation-true": "NoNewPrivs:\t0\n",
	} {
		if out := e.must("logs", "busybox-cases", "-c", name).stdout; out != want {
			t.Errorf("%s printed %q, want %q", name, out, want)
		}
	}
	if s := containerState(p, "always-fails").State.Terminated; s == nil || s.Reason != "Error" || s.ExitCode != 1 {
		t.Errorf("always-fails: %+v", s)
	}
}

// test/e2e/node/pods.go "Pods Extended (pod generation)" and "Pod
// TerminationGracePeriodSeconds is negative": a new pod is generation 1
// whatever the manifest says, a spec update moves it (a metadata update does
// not), the kubelet reports the generation it acted on in
// status.observedGeneration and in each condition, a graceful delete moves it
// again; a negative grace period is stored as 1.
func TestE2ENodePodGeneration(t *testing.T) {
	e := ndEnv(t)
	manifest := func(deadline int, label string) string {
		return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: pod-generation, generation: 100, labels: {time: %q}}
spec:
  terminationGracePeriodSeconds: 5
  activeDeadlineSeconds: %d
  containers:
  - {name: c, image: busybox:1.28, command: [sleep, '600']}
`, label, deadline)
	}
	observed := func(gen int64) *corev1.Pod {
		t.Helper()
		return e.waitFor("pod-generation", 20*time.Second, fmt.Sprintf("observed at generation %d", gen), func(p *corev1.Pod) bool {
			if p.Generation != gen || p.Status.ObservedGeneration != gen || len(p.Status.Conditions) == 0 {
				return false
			}
			for _, c := range p.Status.Conditions {
				if c.ObservedGeneration != gen {
					return false
				}
			}
			return true
		})
	}
	e.apply(manifest(5000, "a"))
	e.waitPhase("pod-generation", corev1.PodRunning, 30*time.Second)
	observed(1)
	e.apply(manifest(5000, "b")) // metadata only
	observed(1)
	e.apply(manifest(4999, "b"))
	observed(2)
	e.must("delete", "pod-generation", "--wait=false")
	if p := e.pod("pod-generation"); p.Generation != 3 || p.DeletionTimestamp == nil {
		t.Errorf("after a graceful delete: generation %d, deletionTimestamp %v", p.Generation, p.DeletionTimestamp)
	}

	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: negative-grace-period}
spec:
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: -1
  containers:
  - {name: foo, image: busybox:1.28, command: [/bin/sh, -c, 'sleep 10000']}
`)
	if g := e.pod("negative-grace-period").Spec.TerminationGracePeriodSeconds; g == nil || *g != 1 {
		t.Errorf("terminationGracePeriodSeconds %v, want 1", g)
	}
}

// test/e2e_node/pod_conditions_test.go: the conditions' transitions come in
// the kubelet's order (Scheduled, then Initialized and PodReadyToStartContainers
// in the order that depends on init containers, then ContainersReady, then
// Ready); a pod whose volume cannot be set up has only PodScheduled (and
// Initialized when it has no init containers) True.
func TestE2ENodePodConditionsOrder(t *testing.T) {
	e := ndEnv(t)
	pod := func(name string, init, failingMount bool) string {
		s := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web1
    image: busybox:1.28
    command: [sh, -c, 'sleep 600']
`, name)
		if failingMount {
			s += "    volumeMounts: [{name: cm, mountPath: /config}]\n  volumes: [{name: cm, configMap: {name: does-not-exist}}]\n"
		}
		if init {
			s += "  initContainers:\n  - {name: init1, image: busybox:1.28, command: [sh, -c, 'sleep 2']}\n"
		}
		return s
	}
	e.apply(strings.Join([]string{
		pod("ready-no-init", false, false), pod("ready-init", true, false),
		pod("mount-no-init", false, true), pod("mount-init", true, true),
	}, "---\n"))
	at := func(p *corev1.Pod, typ corev1.PodConditionType, status corev1.ConditionStatus) time.Time {
		t.Helper()
		for _, c := range p.Status.Conditions {
			if c.Type == typ {
				if c.Status != status {
					t.Errorf("%s: %s is %s, want %s", p.Name, typ, c.Status, status)
				}
				return c.LastTransitionTime.Time
			}
		}
		t.Errorf("%s: no %s condition", p.Name, typ)
		return time.Time{}
	}
	for _, name := range []string{"ready-no-init", "ready-init"} {
		p := e.waitFor(name, time.Minute, "ready", func(p *corev1.Pod) bool { return hasCondition(p, corev1.PodReady, corev1.ConditionTrue) })
		scheduled := at(p, corev1.PodScheduled, corev1.ConditionTrue)
		initialized := at(p, corev1.PodInitialized, corev1.ConditionTrue)
		toStart := at(p, corev1.PodReadyToStartContainers, corev1.ConditionTrue)
		containersReady := at(p, corev1.ContainersReady, corev1.ConditionTrue)
		ready := at(p, corev1.PodReady, corev1.ConditionTrue)
		before := initialized
		if name == "ready-init" {
			if toStart.Before(scheduled) || initialized.Before(toStart) {
				t.Errorf("%s: scheduled %s, ready to start %s, initialized %s", name, scheduled, toStart, initialized)
			}
		} else {
			if initialized.Before(scheduled) || toStart.Before(initialized) {
				t.Errorf("%s: scheduled %s, initialized %s, ready to start %s", name, scheduled, initialized, toStart)
			}
			before = toStart
		}
		if containersReady.Before(before) || ready.Before(containersReady) {
			t.Errorf("%s: containers ready %s, ready %s, before %s", name, containersReady, ready, before)
		}
	}
	for _, name := range []string{"mount-no-init", "mount-init"} {
		p := e.waitFor(name, time.Minute, "failing to mount", func(p *corev1.Pod) bool {
			return e.ndEventPrefix(p, "FailedMount", "MountVolume.SetUp failed for volume")
		})
		p = e.pod(name)
		scheduled := at(p, corev1.PodScheduled, corev1.ConditionTrue)
		at(p, corev1.PodReadyToStartContainers, corev1.ConditionFalse)
		if name == "mount-init" {
			at(p, corev1.PodInitialized, corev1.ConditionFalse)
		} else if initialized := at(p, corev1.PodInitialized, corev1.ConditionTrue); initialized.Before(scheduled) {
			t.Errorf("%s: initialized %s before scheduled %s", name, initialized, scheduled)
		}
		at(p, corev1.ContainersReady, corev1.ConditionFalse)
		at(p, corev1.PodReady, corev1.ConditionFalse)
	}
}
