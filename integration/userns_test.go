package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// usernsPod is security_context.go's makePod: busybox printing its uid_map.
func usernsPod(name string, hostUsers bool) string {
	return `
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `}
spec:
  hostUsers: ` + map[bool]string{true: "true", false: "false"}[hostUsers] + `
  restartPolicy: Never
  containers:
  - name: c
    image: busybox:1.28
    command: ["cat", "/proc/self/uid_map"]
`
}

const usernsVolumesYAML = `
apiVersion: v1
kind: ConfigMap
metadata: {name: userns-cfg}
data: {data-1: value-1, data-2: value-2, data-3: value-3}
---
apiVersion: v1
kind: Secret
metadata: {name: userns-secret}
stringData: {data-1: value-1, data-2: value-2, data-3: value-3}
---
apiVersion: v1
kind: Pod
metadata: {name: userns-volumes}
spec:
  hostUsers: false
  restartPolicy: Never
  containers:
  - name: c
    image: busybox:1.28
    command: ["sh", "-c", "stat -c='%g' $(find /vol/ -type f)"]
    volumeMounts:
    - {name: cfg, mountPath: /vol/cfg/}
    - {name: secret, mountPath: /vol/secret/}
    - {name: downward, mountPath: /vol/downward/}
    - {name: projected, mountPath: /vol/projected/}
  volumes:
  - name: cfg
    configMap: {name: userns-cfg}
  - name: secret
    secret: {secretName: userns-secret}
  - name: downward
    downwardAPI: {items: [{path: name, fieldRef: {apiVersion: v1, fieldPath: metadata.name}}]}
  - name: projected
    projected:
      sources:
      - downwardAPI: {items: [{path: name, fieldRef: {apiVersion: v1, fieldPath: metadata.name}}]}
      - secret: {name: userns-secret}
---
apiVersion: v1
kind: Pod
metadata: {name: userns-fsgroup}
spec:
  hostUsers: false
  restartPolicy: Never
  securityContext: {fsGroup: 200}
  containers:
  - name: c
    image: busybox:1.28
    command: ["sh", "-c", "stat -c='%g' $(find /vol/ -type f)"]
    volumeMounts: [{name: cfg, mountPath: /vol/cfg/}]
  volumes:
  - name: cfg
    configMap: {name: userns-cfg}
---
apiVersion: v1
kind: Pod
metadata: {name: userns-rootfs}
spec:
  hostUsers: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:1.28
    command: ["sh", "-c", "echo written > /etc/written && ls -ln /etc/passwd && exec sleep 3600"]
`

// Pods with hostUsers: false, as security_context.go's "When creating a pod
// with HostUsers" tests run them (user namespaces, GA in Kubernetes 1.36):
// each pod gets its own 65536 IDs, a pod with hostUsers: true the host's;
// its volumes' files are root's (or fsGroup's) inside; its image's files
// are root's and its writable layer is written by its root; the host sees
// none of its IDs as root; and its block of IDs is given back when it goes.
func TestUserNamespaces(t *testing.T) {
	e := newEnv(t)
	// runc's init reaches the rootfs from inside the user namespace: a run
	// root under a directory others cannot search is refused by name.
	e.apply(usernsPod("userns-refused", false))
	e.eventually("is not searchable by other users", true, "describe", "pod", "userns-refused")
	e.must("delete", "pod", "userns-refused", "--now")
	top := filepath.Dir(filepath.Dir(e.runRoot)) // t.TempDir()'s parent, 0700
	if err := os.Chmod(top, 0o711); err != nil {
		t.Fatal(err)
	}

	logs := func(name string) string {
		t.Helper()
		e.waitPhase(name, corev1.PodSucceeded, time.Minute)
		return e.must("logs", name).stdout
	}
	e.apply(usernsPod("userns-1", false))
	e.apply(usernsPod("userns-2", false))
	e.apply(usernsPod("userns-host", true))
	l1, l2 := logs("userns-1"), logs("userns-2")
	if !strings.Contains(l1, "65536") || !strings.Contains(l2, "65536") {
		t.Errorf("user namespaces not created:\n%s\n%s", l1, l2)
	}
	if l1 == l2 {
		t.Errorf("two pods run with the same user namespace mapping: %q", l1)
	}
	if f := strings.Fields(l1); len(f) != 3 || f[0] != "0" || f[1] == "0" || f[2] != "65536" {
		t.Errorf("uid_map %q: want container ID 0 mapped to 65536 host IDs of the pod's own", l1)
	}
	if l := logs("userns-host"); !strings.Contains(l, "4294967295") {
		t.Errorf("hostUsers: true: uid_map %q, want the host's", l)
	}

	e.apply(usernsVolumesYAML)
	// 3 configMap, 3 secret, 1 downwardAPI, 3+1 projected files, all root's.
	if l := logs("userns-volumes"); l != strings.Repeat("=0\n", 11) {
		t.Errorf("volume files' groups inside the pod:\n%s\nwant 11 lines =0", l)
	}
	if l := logs("userns-fsgroup"); l != strings.Repeat("=200\n", 3) {
		t.Errorf("volume files' groups with fsGroup 200:\n%s\nwant 3 lines =200", l)
	}
	p := e.waitPhase("userns-rootfs", corev1.PodRunning, time.Minute)
	e.eventually("0        0", true, "logs", "userns-rootfs")
	if r := e.must("exec", "userns-rootfs", "--", "sh", "-c", "cat /etc/written; id -u; cat /proc/self/uid_map"); !strings.HasPrefix(r.stdout, "written\n0\n") || strings.Contains(r.stdout, "4294967295") {
		t.Errorf("exec in the pod: %s", r)
	}
	if st := containerState(p, "c"); st.User == nil || st.User.Linux == nil || st.User.Linux.UID != 0 {
		t.Errorf("status user %+v: want uid 0 (inside the pod's user namespace)", st.User)
	}

	// What podrun cannot give such a pod is refused by name.
	e.mustFail(failure{[]string{"apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: userns-shared}
spec:
  hostUsers: false
  shareProcessNamespace: true
  containers: [{name: c, image: busybox:1.28}]
`)}, 2, "spec.shareProcessNamespace: Forbidden: not supported by podrun: a shared PID namespace with hostUsers: false"})

	// Each pod holds its block until it is removed, then gives it back.
	held, _ := os.ReadDir(filepath.Join(e.runRoot, "userns"))
	if len(held) != 5 {
		t.Errorf("%d blocks of host IDs held by 5 pods with hostUsers: false", len(held))
	}
	e.must("delete", "pods", "--all", "--now")
	if held, _ := os.ReadDir(filepath.Join(e.runRoot, "userns")); len(held) != 0 {
		t.Errorf("blocks of host IDs left after the pods went: %d", len(held))
	}
}

// proc_mount_test.go's pods (ProcMountType, GA in Kubernetes 1.36): the
// default /proc has masked and read-only paths; procMount: Unmasked, which
// the API server allows with hostUsers: false only, has none.
func TestProcMount(t *testing.T) {
	e := newEnv(t)
	if err := os.Chmod(filepath.Dir(filepath.Dir(e.runRoot)), 0o711); err != nil {
		t.Fatal(err)
	}
	pod := func(name, procMount string, hostUsers bool) string {
		return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  hostUsers: %v
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:1.28
    command: ["/bin/sleep", "10000"]
    securityContext: {procMount: %s}
`, name, hostUsers, procMount)
	}
	e.mustFail(failure{[]string{"apply", "-f", e.manifest(pod("unmasked-host", "Unmasked", true))}, 2,
		"spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`"})
	for _, tc := range []struct {
		name, procMount string
		hostUsers       bool
		lines           func(int) bool
		readOnly        func(int) bool
	}{
		{"default", "Default", true, func(n int) bool { return n > 1 }, func(n int) bool { return n > 0 }},
		{"unmasked", "Unmasked", false, func(n int) bool { return n == 1 }, func(n int) bool { return n == 0 }},
	} {
		e.apply(pod(tc.name, tc.procMount, tc.hostUsers))
		e.waitFor(tc.name, time.Minute, "running", func(p *corev1.Pod) bool { return containerState(p, "c").State.Running != nil })
		out := strings.TrimSpace(e.must("exec", tc.name, "--", "/bin/sh", "-ec", "mount | grep /proc").stdout)
		if n, ro := len(strings.Split(out, "\n")), strings.Count(out, "(ro"); !tc.lines(n) || !tc.readOnly(ro) {
			t.Errorf("%s: %d /proc mounts, %d read-only:\n%s", tc.name, n, ro, out)
		}
	}
	e.must("delete", "pods", "--all")
}
