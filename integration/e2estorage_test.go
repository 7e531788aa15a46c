package integration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Scenarios ported from Kubernetes' storage e2e tests (test/e2e/common/storage,
// test/e2e/storage/testsuites/subpath.go, test/e2e/storage/subpath.go and the
// subPathExpr cases of test/e2e/common/node/expansion.go), with busybox's
// stat, cat and id in place of agnhost's mounttest, run end to end against
// podrun. Many scenarios share a pod, one container each.

// waitContainer polls until the container of the pod has terminated or
// waits with a reason other than ContainerCreating and PodInitializing, and
// returns its status.
func (e *env) waitContainer(pod, name string) corev1.ContainerStatus {
	e.t.Helper()
	p := e.waitFor(pod, 60*time.Second, "done with container "+name, func(p *corev1.Pod) bool {
		s := containerState(p, name).State
		return s.Terminated != nil || (s.Waiting != nil && s.Waiting.Reason != "" && s.Waiting.Reason != "ContainerCreating" && s.Waiting.Reason != "PodInitializing")
	})
	return containerState(p, name)
}

// empty_dir.go's mode/uid/medium matrix and its FSGroup cases, with
// configmap_volume.go, secrets_volume.go, projected_*.go and
// downwardapi_volume.go's mode cases, in one pod.
//   - "nonexistent volume subPath should have the correct mode and owner
//     using FSGroup": a subPath the kubelet creates gets the volume root's
//     whole mode (dgtrwxrwxrwx on tmpfs with an fsGroup), owner 0, group
//     fsGroup, so a non-root user can write in it;
//   - "volume on tmpfs/default medium should have the correct mode
//     (using FSGroup)": -rwxrwxrwx, tmpfs for medium Memory;
//   - "new files should be created with FSGroup ownership": -rw-rw----, gid 123;
//   - "pod should support memory backed volumes of specified size": 10240 KiB;
//   - defaultMode 0400, items mode 0400, defaultMode 0440 with fsGroup
//     ("-r--r-----"), the ..data layout, binary data.
func TestE2EStorageVolumeModesAndOwnership(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
data: {data-1: value-1, data-2: value-2}
binaryData: {dump.bin: AAECAw==}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {data-1: value-1}
---
apiVersion: v1
kind: Pod
metadata: {name: modes}
spec:
  restartPolicy: Never
  securityContext: {fsGroup: 123}
  containers:
  - name: nonroot
    image: busybox:1.28
    securityContext: {runAsUser: 1001}
    command: ['sh', '-c', 'stat -c "%n %A %u %g" /mem-sub /disk-sub /mem /disk && echo x > /mem-sub/f && echo x > /disk-sub/f && stat -c "%n %u %g" /mem-sub/f /disk-sub/f && awk "\$2 == \"/mem\" || \$2 == \"/mem-sub\" {print \$2, \$3}" /proc/mounts && umask 0 && echo content > /mem/f660 && chmod 660 /mem/f660 && stat -c "%n %A %g" /mem/f660 && df /sized | awk "NR==2 {print \$2}"']
    volumeMounts:
    - {name: mem, mountPath: /mem-sub, subPath: test-sub}
    - {name: disk, mountPath: /disk-sub, subPath: a/b}
    - {name: mem, mountPath: /mem}
    - {name: disk, mountPath: /disk}
    - {name: sized, mountPath: /sized}
  - name: files
    image: busybox:1.28
    securityContext: {runAsUser: 1000}
    command: ['sh', '-c', 'stat -L -c "%n %A %g" /cm/data-1 /cm400/data-1 /cmi/path/to/data-2 /s/data-1 /s440/data-1 /si/new-path-data-1 /d/podname /p/cm/data-1 && readlink /cm/data-1 && cat /cm/data-1 /p/cm/data-1 /p/s/data-1 /d/podname && od -An -tx1 /cm/dump.bin']
    volumeMounts:
    - {name: cm, mountPath: /cm}
    - {name: cm400, mountPath: /cm400}
    - {name: cmi, mountPath: /cmi}
    - {name: s, mountPath: /s}
    - {name: s440, mountPath: /s440}
    - {name: si, mountPath: /si}
    - {name: d, mountPath: /d}
    - {name: p, mountPath: /p}
  volumes:
  - {name: mem, emptyDir: {medium: Memory}}
  - {name: disk, emptyDir: {}}
  - {name: sized, emptyDir: {medium: Memory, sizeLimit: 10Mi}}
  - {name: cm, configMap: {name: cm}}
  - {name: cm400, configMap: {name: cm, defaultMode: 0400}}
  - {name: cmi, configMap: {name: cm, items: [{key: data-2, path: path/to/data-2, mode: 0400}]}}
  - {name: s, secret: {secretName: sec}}
  - {name: s440, secret: {secretName: sec, defaultMode: 0440}}
  - {name: si, secret: {secretName: sec, items: [{key: data-1, path: new-path-data-1, mode: 0400}]}}
  - name: d
    downwardAPI: {items: [{path: podname, fieldRef: {fieldPath: metadata.name}, mode: 0400}]}
  - name: p
    projected:
      defaultMode: 0400
      sources:
      - configMap: {name: cm, items: [{key: data-1, path: cm/data-1}]}
      - secret: {name: sec, items: [{key: data-1, path: s/data-1}]}
`)
	e.waitPhase("modes", corev1.PodSucceeded, 60*time.Second)
	want := map[string]string{
		"nonroot": `/mem-sub drwxrwsrwt 0 123
/disk-sub drwxrwsrwx 0 123
/mem drwxrwsrwt 0 123
/disk drwxrwsrwx 0 123
/mem-sub/f 1001 123
/disk-sub/f 1001 123
/mem-sub tmpfs
/mem tmpfs
/mem/f660 -rw-rw---- 123
10240
`,
		// With an fsGroup every file gets group read (SetVolumeOwnership).
		"files": `/cm/data-1 -rw-r--r-- 123
/cm400/data-1 -r--r----- 123
/cmi/path/to/data-2 -r--r----- 123
/s/data-1 -rw-r--r-- 123
/s440/data-1 -r--r----- 123
/si/new-path-data-1 -r--r----- 123
/d/podname -r--r----- 123
/p/cm/data-1 -r--r----- 123
..data/data-1
value-1value-1value-1modes 00 01 02 03
`,
	}
	for c, w := range want {
		if got := e.must("logs", "modes", "-c", c).stdout; got != w {
			t.Errorf("container %s:\n%s\nwant:\n%s", c, got, w)
		}
	}
}

// Subpath failures of testsuites/subpath.go ("should fail if subpath
// directory/file/non-existent subpath/subpath with backstepping is outside
// the volume") and expansion.go ("should fail substituting values in a
// volume subpath with backticks/absolute path", a subPathExpr whose variable
// is empty): the container waits in CreateContainerConfigError with the
// kubelet's makeMounts message, which names no host path. Beside them the
// subpaths that work: a file of an atomic-writer volume (subpath.go
// "should support subpaths with configmap/secret/downward/projected pod",
// one with the mountPath of an existing file, /etc/resolv.conf), a readOnly
// file and directory, several subpaths of one volume.
func TestE2EStorageSubPaths(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: ConfigMap
metadata: {name: my-configmap}
data: {configmap-key: configmap-value}
---
apiVersion: v1
kind: Secret
metadata: {name: my-secret}
stringData: {secret-key: secret-value}
---
apiVersion: v1
kind: Pod
metadata: {name: subpaths, annotations: {notmysubpath: mypath}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: init
    image: busybox:1.28
    command: ['sh', '-c', 'cd /v && ln -s /bin dirout && ln -s /bin/sh fileout && ln -s /bin/notanexistingpath noneout && ln -s ../ back && mkdir -p sub1 sub2 ro && echo in-dir > ro/f && echo in-file > file']
    volumeMounts: [{name: v, mountPath: /v}]
  containers:
  - {name: dirout, image: busybox:1.28, command: ['true'], volumeMounts: [{name: v, mountPath: /t, subPath: dirout}]}
  - {name: fileout, image: busybox:1.28, command: ['true'], volumeMounts: [{name: v, mountPath: /t, subPath: fileout}]}
  - {name: noneout, image: busybox:1.28, command: ['true'], volumeMounts: [{name: v, mountPath: /t, subPath: noneout}]}
  - {name: back, image: busybox:1.28, command: ['true'], volumeMounts: [{name: v, mountPath: /t, subPath: back}]}
  - name: backticks
    image: busybox:1.28
    command: ['true']
    env: [{name: POD_NAME, value: '..'}]
    volumeMounts: [{name: v, mountPath: /logscontainer, subPathExpr: '$(POD_NAME)'}]
  - name: absolute
    image: busybox:1.28
    command: ['true']
    env: [{name: POD_NAME, value: '/tmp'}]
    volumeMounts: [{name: v, mountPath: /logscontainer, subPathExpr: '$(POD_NAME)'}]
  - name: unset
    image: busybox:1.28
    command: ['true']
    env:
    - {name: POD_NAME, value: foo}
    - {name: ANNOTATION, valueFrom: {fieldRef: {fieldPath: "metadata.annotations['mysubpath']"}}}
    volumeMounts: [{name: v, mountPath: /subpath_mount, subPathExpr: '$(ANNOTATION)/$(POD_NAME)'}]
  - name: works
    image: busybox:1.28
    command: ['sh', '-c', 'cat /cm /etc/resolv.conf /sec /dn /pj /ro/f /rofile; echo x > /s1/f && echo y > /s2/f && cat /v/sub1/f /v/sub2/f; (echo x > /ro/g) 2>/dev/null || echo ro-dir; (echo x >> /rofile) 2>/dev/null || echo ro-file']
    volumeMounts:
    - {name: cm, mountPath: /cm, subPath: configmap-key}
    - {name: cm, mountPath: /etc/resolv.conf, subPath: configmap-key}
    - {name: sec, mountPath: /sec, subPath: secret-key}
    - {name: dn, mountPath: /dn, subPath: downward/podname}
    - {name: pj, mountPath: /pj, subPath: projected/configmap-key}
    - {name: v, mountPath: /ro, subPath: ro, readOnly: true}
    - {name: v, mountPath: /rofile, subPath: file, readOnly: true}
    - {name: v, mountPath: /s1, subPath: sub1}
    - {name: v, mountPath: /s2, subPath: sub2}
    - {name: v, mountPath: /v}
  volumes:
  - {name: v, emptyDir: {}}
  - {name: cm, configMap: {name: my-configmap}}
  - {name: sec, secret: {secretName: my-secret}}
  - name: dn
    downwardAPI: {items: [{path: downward/podname, fieldRef: {fieldPath: metadata.name}}]}
  - name: pj
    projected: {sources: [{configMap: {name: my-configmap, items: [{key: configmap-key, path: projected/configmap-key}]}}]}
`)
	for c, want := range map[string]string{
		"dirout":    `failed to prepare subPath for volumeMount "v" of container "dirout"`,
		"fileout":   `failed to prepare subPath for volumeMount "v" of container "fileout"`,
		"back":      `failed to prepare subPath for volumeMount "v" of container "back"`,
		"noneout":   `failed to create subPath directory for volumeMount "v" of container "noneout"`,
		"backticks": "unable to provision SubPath `..`: must not contain '..'",
		"absolute":  "error SubPath `/tmp` must not be an absolute path",
		"unset":     "missing value for ANNOTATION",
	} {
		s := e.waitContainer("subpaths", c)
		if w := s.State.Waiting; w == nil || w.Reason != "CreateContainerConfigError" || w.Message != want {
			t.Errorf("container %s: %+v, want CreateContainerConfigError %q", c, s.State, want)
		}
	}
	// A container that never started keeps the pod Pending (getPhase: waiting > 0).
	if p := e.pod("subpaths"); p.Status.Phase != corev1.PodPending {
		t.Errorf("pod %s, want Pending", p.Status.Phase)
	}
	if ev := e.must("events", "--for", "pod/subpaths").stdout; !strings.Contains(ev, `Error: failed to create subPath directory for volumeMount "v" of container "noneout"`) {
		t.Errorf("no Failed event with the kubelet's message:\n%s", ev)
	}
	if s := e.waitContainer("subpaths", "works"); s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
		t.Fatalf("works: %+v\n%s", s.State, e.podrun("logs", "subpaths", "-c", "works"))
	}
	if got, want := e.must("logs", "subpaths", "-c", "works").stdout, "configmap-valueconfigmap-valuesecret-valuesubpathsconfigmap-valuein-dir\nin-file\nx\ny\nro-dir\nro-file\n"; got != want {
		t.Errorf("works: %q, want %q", got, want)
	}
}

// configmap_volume.go / secrets_volume.go "Should fail non-optional pod
// creation due to configMap object does not exist" and "... the key in the
// configMap object does not exist": the pod stays Pending, ContainerCreating,
// with the volume manager's FailedMount event; once the ConfigMap and the key
// exist, the kubelet's next mount attempt succeeds and the pod runs.
func TestE2EStorageMissingObjectsHoldThePodUntilCreated(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {data-1: value-1}
---
apiVersion: v1
kind: Pod
metadata: {name: waiting}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox:1.28
    command: ['sh', '-c', 'cat /cm/data-1 /s/data-2']
    volumeMounts: [{name: cmv, mountPath: /cm}, {name: sv, mountPath: /s}]
  volumes:
  - {name: cmv, configMap: {name: late}}
  - {name: sv, secret: {secretName: sec, items: [{key: data-2, path: data-2}]}}
---
apiVersion: v1
kind: Pod
metadata: {name: hostpath-dir}
spec:
  containers:
  - {name: c, image: busybox:1.28, command: ['true'], volumeMounts: [{name: dir, mountPath: /d}]}
  volumes:
  - {name: dir, hostPath: {path: /does-not-exist-dir, type: Directory}}
---
apiVersion: v1
kind: Pod
metadata: {name: hostpath-file}
spec:
  containers:
  - {name: c, image: busybox:1.28, command: ['true'], volumeMounts: [{name: file, mountPath: /f}]}
  volumes:
  - {name: file, hostPath: {path: /dev/null, type: File}}
`)
	// host_path_type.go "Should fail on mounting non-existent directory
	// 'does-not-exist-dir' when HostPathType is HostPathDirectory" and "...
	// character device 'achardev' when HostPathType is HostPathFile": a
	// FailedMount event with the kubelet's checkType message.
	for pod, want := range map[string]string{
		"hostpath-dir":  `MountVolume.SetUp failed for volume "dir" : hostPath type check failed: /does-not-exist-dir is not a directory`,
		"hostpath-file": `MountVolume.SetUp failed for volume "file" : hostPath type check failed: /dev/null is not a file`,
	} {
		e.waitFor(pod, 30*time.Second, "told of the hostPath type", func(*corev1.Pod) bool {
			ev := e.must("events", "--for", "pod/"+pod).stdout
			return strings.Contains(ev, want) && strings.Contains(ev, "FailedMount")
		})
	}
	e.waitFor("waiting", 30*time.Second, "told of the missing ConfigMap", func(*corev1.Pod) bool {
		return strings.Contains(e.must("events", "--for", "pod/waiting").stdout, `MountVolume.SetUp failed for volume "cmv" : configmap "late" not found`)
	})
	time.Sleep(2 * time.Second)
	p := e.pod("waiting")
	if w := containerState(p, "c").State.Waiting; p.Status.Phase != corev1.PodPending || w == nil || w.Reason != "ContainerCreating" {
		t.Fatalf("pod %s, container %+v; want Pending, ContainerCreating", p.Status.Phase, containerState(p, "c").State)
	}
	if ev := e.must("events", "--for", "pod/waiting").stdout; !strings.Contains(ev, "FailedMount") || strings.Contains(ev, "FailedCreatePodSandBox") {
		t.Errorf("events:\n%s", ev)
	}
	e.apply(`
apiVersion: v1
kind: ConfigMap
metadata: {name: late}
data: {data-1: late-1}
`)
	e.waitFor("waiting", 30*time.Second, "told of the missing key", func(*corev1.Pod) bool {
		return strings.Contains(e.must("events", "--for", "pod/waiting").stdout, `MountVolume.SetUp failed for volume "sv" : references non-existent secret key: data-2`)
	})
	e.apply(`
apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {data-1: value-1, data-2: value-2}
`)
	e.waitPhase("waiting", corev1.PodSucceeded, 60*time.Second)
	if got := e.must("logs", "waiting").stdout; got != "late-1value-2" {
		t.Errorf("logs: %q", got)
	}
}

// configmap_volume.go and projected_configmap.go "optional updates should be
// reflected in volume": in a running pod, an optional ConfigMap deleted
// takes its files away, one updated changes them, one created brings them;
// a deleted ConfigMap that is not optional fails the remount and leaves its
// files as they were (the pod keeps running). "should be immutable if
// `immutable` field is set": the data cannot change, the labels can.
func TestE2EStorageOptionalUpdatesReachThePod(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-del}
data: {data-1: value-1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-upd}
data: {data-1: value-1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-req}
data: {data-1: value-1}
`)
	e.must("--sync-frequency", "1s", "apply", "--wait", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: optional}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:1.28
    command: ['sleep', '3600']
    volumeMounts: [{name: del, mountPath: /del}, {name: upd, mountPath: /upd}, {name: create, mountPath: /create}, {name: req, mountPath: /req}, {name: proj, mountPath: /proj}]
  volumes:
  - {name: del, configMap: {name: cm-del, optional: true}}
  - {name: upd, configMap: {name: cm-upd, optional: true}}
  - {name: create, configMap: {name: cm-create, optional: true}}
  - {name: req, configMap: {name: cm-req}}
  - name: proj
    projected:
      sources:
      - configMap: {name: cm-del, optional: true, items: [{key: data-1, path: del-1}]}
      - configMap: {name: cm-upd, optional: true, items: [{key: data-3, path: upd-3}]}
      - configMap: {name: cm-create, optional: true}
`))
	read := func() string {
		return e.must("exec", "optional", "--", "sh", "-c",
			"for f in /del/data-1 /upd/data-1 /upd/data-3 /create/data-1 /req/data-1 /proj/del-1 /proj/upd-3 /proj/data-1; do cat $f 2>/dev/null || echo -n -; echo; done").stdout
	}
	if got, want := read(), "value-1\nvalue-1\n-\n-\nvalue-1\nvalue-1\n-\n-\n"; got != want {
		t.Fatalf("before the updates: %q, want %q", got, want)
	}
	e.must("delete", "configmap", "cm-del", "cm-req")
	e.apply(`
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-upd}
data: {data-3: value-3}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-create}
data: {data-1: value-1}
`)
	want := "-\n-\nvalue-3\nvalue-1\nvalue-1\n-\nvalue-3\nvalue-1\n"
	deadline := time.Now().Add(20 * time.Second * timeoutScale)
	for got := read(); got != want; got = read() {
		if time.Now().After(deadline) {
			t.Fatalf("after the updates: %q, want %q", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if p := e.pod("optional"); p.Status.Phase != corev1.PodRunning || containerState(p, "c").RestartCount != 0 {
		t.Errorf("pod %s, restarts %d", p.Status.Phase, containerState(p, "c").RestartCount)
	}
	// The failed remount is a FailedMount event, told once while it lasts.
	time.Sleep(2 * time.Second)
	ev := e.must("events", "--for", "pod/optional").stdout
	if n := strings.Count(ev, `MountVolume.SetUp failed for volume "req" : configmap "cm-req" not found`); n != 1 {
		t.Errorf("%d FailedMount events for the deleted ConfigMap, want 1:\n%s", n, ev)
	}

	immutable := func(data, extra string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: imm" + extra + "}\nimmutable: true\ndata: {data-1: " + data + "}\n"
	}
	e.apply(immutable("value-1", ""))
	if r := e.podrun("apply", "-f", e.manifest(immutable("value-2", ""))); r.code == 0 ||
		!strings.Contains(r.stderr, "ConfigMap \"imm\" is invalid: data: Forbidden: field is immutable when `immutable` is set") {
		t.Errorf("changing an immutable ConfigMap: %s", r)
	}
	if r := e.apply(immutable("value-1", ", labels: {label1: value1}")); r.stdout != "configmap/imm configured\n" {
		t.Errorf("relabelling an immutable ConfigMap: %s", r)
	}
}
