package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// The EnvFiles e2e tests (test/e2e/common/node/file_key.go, KEP-3721) with
// busybox: fileKeyRef reads an env file an init container wrote in an
// emptyDir, when each container starts.

// envFilePod is file_key.go's pod: the init container setup-envfile runs
// write (a shell command, into /data of the emptyDir "config"), then the
// containers; volume is the pod's volume "config".
func envFilePod(name, write, volume, containers string) string {
	return `
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: setup-envfile
    image: busybox:1.28
    command: ["sh", "-c", "` + write + `"]
    volumeMounts: [{name: config, mountPath: /data}]
` + containers + `
  volumes:
  - name: config
    ` + volume + `
`
}

// fileKeyEnv is an env entry reading key from config.env of the volume "config".
func fileKeyEnv(name, key, optional string) string {
	s := `    - name: ` + name + `
      valueFrom:
        fileKeyRef: {volumeName: config, path: config.env, key: ` + key
	if optional != "" {
		s += `, optional: ` + optional
	}
	return s + "}\n"
}

const emptyDir = "emptyDir: {}"

// "should be consumable via FileKeyRef", "by multiple containers", "should
// handle optional keys", "should handle optional missing file or key",
// "should allow initContainer to consume fileKeyRef"; beside them what
// podrun's volumes add: a sidecar reading one, an emptyDir of medium Memory,
// and a pod with hostUsers: false, whose file is written by the pod's mapped
// root.
func TestEnvFilesConsumable(t *testing.T) {
	e := newEnv(t)
	// hostUsers: false needs a run root others can search (TestUserNamespaces).
	if err := os.Chmod(filepath.Dir(filepath.Dir(e.runRoot)), 0o711); err != nil {
		t.Fatal(err)
	}
	pods := []string{
		envFilePod("filekeyref-test", `echo CONFIG_1=\\'value1\\' > /data/config.env && echo CONFIG_2=\\'value2\\' >> /data/config.env`, emptyDir, `
  containers:
  - name: use-envfile
    image: busybox:1.28
    command: ["sh", "-c", "env | grep -E '(CONFIG_1|CONFIG_2)' | sort"]
    env:
`+fileKeyEnv("CONFIG_1", "CONFIG_1", "")+fileKeyEnv("CONFIG_2", "CONFIG_2", "")),
		envFilePod("filekeyref-multi", `echo CONFIG_1=\\'value1\\' > /data/config.env && echo CONFIG_2=\\'value2\\' >> /data/config.env && echo CONFIG_3=\\'value3\\' >> /data/config.env`, emptyDir, `
  containers:
  - name: container-1
    image: busybox:1.28
    command: ["sh", "-c", "echo $CONFIG_1"]
    env:
`+fileKeyEnv("CONFIG_1", "CONFIG_1", "")+`
  - name: container-2
    image: busybox:1.28
    command: ["sh", "-c", "echo $CONFIG_2"]
    env:
`+fileKeyEnv("CONFIG_2", "CONFIG_2", "")+`
  - name: container-3
    image: busybox:1.28
    command: ["sh", "-c", "echo $CONFIG_3"]
    env:
`+fileKeyEnv("CONFIG_3", "CONFIG_3", "")),
		envFilePod("filekeyref-optional", `echo EXISTING_KEY=\\'existing_value\\' > /data/config.env`, emptyDir, `
  containers:
  - name: optional-container
    image: busybox:1.28
    command: ["sh", "-c", "env | grep -E '(EXISTING_KEY|MISSING_KEY)' | sort"]
    env:
`+fileKeyEnv("EXISTING_KEY", "EXISTING_KEY", "")+fileKeyEnv("MISSING_KEY", "MISSING_KEY", "true")),
		envFilePod("filekeyref-optional-missing", `echo EXISTING_KEY=\\'value\\' > /data/config.env`, emptyDir, `
  containers:
  - name: use-envfile
    image: busybox:1.28
    command: ["sh", "-c", "env | grep -E '(EXISTING_KEY|OPTIONAL_MISSING_KEY)' | sort"]
    env:
`+fileKeyEnv("EXISTING_KEY", "EXISTING_KEY", "")+fileKeyEnv("OPTIONAL_MISSING_KEY", "OPTIONAL_MISSING_KEY", "true")),
		envFilePod("filekeyref-initconsumer", `echo CONFIG_1=\\'value1\\' > /data/config.env`, emptyDir, `
  - name: use-envfile1
    image: busybox:1.28
    command: ["sh", "-c", "env | grep CONFIG_1"]
    env:
`+fileKeyEnv("CONFIG_1", "CONFIG_1", "false")+`
    volumeMounts: [{name: config, mountPath: /data}]
  containers:
  - name: main
    image: busybox:1.28
    command: ["sh", "-c", "sleep 1"]`),
		// A sidecar, a value over two lines, a comment; the volume in memory.
		envFilePod("filekeyref-sidecar", `printf '# written by setup\\nMULTI='\\''one\\ntwo'\\'' # two lines\\n' > /data/config.env`, "emptyDir: {medium: Memory}", `
  - name: sidecar
    image: busybox:1.28
    restartPolicy: Always
    command: ["sh", "-c", "echo \"sidecar: $MULTI\"; trap 'exit 0' TERM; while true; do sleep 1; done"]
    env:
`+fileKeyEnv("MULTI", "MULTI", "")+`
  containers:
  - name: main
    image: busybox:1.28
    command: ["sh", "-c", "echo \"main: $MULTI\""]
    env:
`+fileKeyEnv("MULTI", "MULTI", "")),
	}
	userns := strings.Replace(envFilePod("filekeyref-userns", `echo USERNS=\\'mapped\\' > /data/config.env`, emptyDir, `
  containers:
  - name: main
    image: busybox:1.28
    command: ["sh", "-c", "echo $USERNS; trap 'exit 0' TERM; while true; do sleep 1; done"]
    env:
`+fileKeyEnv("USERNS", "USERNS", "")), "spec:\n", "spec:\n  hostUsers: false\n", 1)
	e.apply(strings.Join(append(pods, userns), "\n---\n"))

	for pod, logs := range map[string]map[string]string{
		"filekeyref-test":             {"use-envfile": "CONFIG_1=value1\nCONFIG_2=value2\n"},
		"filekeyref-multi":            {"container-1": "value1\n", "container-2": "value2\n", "container-3": "value3\n"},
		"filekeyref-optional":         {"optional-container": "EXISTING_KEY=existing_value\n"},
		"filekeyref-optional-missing": {"use-envfile": "EXISTING_KEY=value\n"},
		"filekeyref-initconsumer":     {"use-envfile1": "CONFIG_1=value1\n"},
		"filekeyref-sidecar":          {"sidecar": "sidecar: one\ntwo\n", "main": "main: one\ntwo\n"},
	} {
		e.waitPhase(pod, corev1.PodSucceeded, 2*time.Minute)
		for c, want := range logs {
			if got := e.must("logs", pod, "-c", c).stdout; got != want {
				t.Errorf("pod %s container %s printed %q, want %q", pod, c, got, want)
			}
		}
	}
	// The pod's mapped root wrote the file, not the host's root (seen while
	// the pod runs: its volumes go with it).
	e.eventually("mapped\n", false, "logs", "filekeyref-userns")
	p := e.pod("filekeyref-userns")
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(e.root, "pods", "default_filekeyref-userns_"+string(p.UID), "volumes", "config", "config.env"), &st); err != nil || st.Uid == 0 {
		t.Errorf("the env file of the hostUsers: false pod: owner %d (%v), want the pod's mapped root", st.Uid, err)
	}
	e.must("delete", "pod", "filekeyref-userns")
	// The containers created ahead of their turn, before the file was
	// written, left no trace (no container's Failed event, "Error: ..."):
	// the env is resolved when each one starts.
	if ev := e.must("events", "--for", "pod/filekeyref-test").stdout; strings.Contains(ev, "Error: ") || strings.Contains(ev, "env file") {
		t.Errorf("events of a pod that ran well:\n%s", ev)
	}
	// optional is defaulted to false, as the API server does.
	if p := e.pod("filekeyref-test"); p.Spec.Containers[0].Env[0].ValueFrom.FileKeyRef.Optional == nil || *p.Spec.Containers[0].Env[0].ValueFrom.FileKeyRef.Optional {
		t.Errorf("fileKeyRef.optional not defaulted to false: %+v", p.Spec.Containers[0].Env[0].ValueFrom.FileKeyRef)
	}
}

// "should be consumable in postStart lifecycle hooks" and "in preStop
// lifecycle hooks": a hook runs with its container's environment.
func TestEnvFilesHooks(t *testing.T) {
	e := newEnv(t)
	poststart := envFilePod("filekeyref-poststart", `echo HOOK_CONFIG=\\'hook_value\\' > /data/config.env`, emptyDir, `
  containers:
  - name: main-container
    image: busybox:1.28
    command: ["sh", "-c", "sleep 3 && cat /tmp/config.env"]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "echo PostStart: $HOOK_CONFIG > /tmp/config.env"]}
    env:
`+fileKeyEnv("HOOK_CONFIG", "HOOK_CONFIG", ""))
	prestop := strings.Replace(envFilePod("filekeyref-prestop", `echo HOOK_CONFIG=\\'hook_value\\' > /data/config.env`, emptyDir, `
  containers:
  - name: main-container
    image: busybox:1.28
    command: ["sh", "-c", "trap 'sleep 30' TERM; while true; do sleep 1; done"]
    lifecycle:
      preStop:
        exec: {command: ["sh", "-c", "echo PreStop: $HOOK_CONFIG >> /proc/1/fd/1 && sleep 10"]}
    env:
`+fileKeyEnv("HOOK_CONFIG", "HOOK_CONFIG", "")), "terminationGracePeriodSeconds: 2", "terminationGracePeriodSeconds: 60", 1)
	e.apply(poststart + "\n---\n" + prestop)

	e.waitPhase("filekeyref-poststart", corev1.PodSucceeded, 2*time.Minute)
	if got := e.must("logs", "filekeyref-poststart").stdout; !strings.Contains(got, "PostStart: hook_value") {
		t.Errorf("postStart hook's output %q, want PostStart: hook_value", got)
	}

	e.waitPhase("filekeyref-prestop", corev1.PodRunning, 2*time.Minute)
	e.must("delete", "pod", "filekeyref-prestop", "--wait=false")
	e.eventually("PreStop: hook_value", true, "logs", "filekeyref-prestop")
	// Not the 60 s grace period: the hook's output is what was to be seen.
	e.must("delete", "pod", "filekeyref-prestop", "--force", "--grace-period=0")
}

// "should fail when volumeName does not exist", "when volume is not
// emptyDir", "when initContainer consumes fileKeyRef from non-emptyDir
// volume": the API server refuses the pod (podrun's exit code 2).
func TestEnvFilesValidation(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Secret
metadata: {name: filekeyref-non-emptydir}
stringData: {data-1: value-1}
`)
	use := `
  containers:
  - name: use-envfile
    image: busybox:1.28
    command: ["sh", "-c", "echo $CONFIG_1"]
    env:
`
	noVolume := envFilePod("filekeyref-invalid-volume", `echo CONFIG_1=\\'value1\\' > /data/config.env`, emptyDir, use+
		strings.Replace(fileKeyEnv("CONFIG_1", "CONFIG_1", ""), "volumeName: config", "volumeName: nonexistent-volume", 1))
	secret := envFilePod("filekeyref-non-emptydir", `echo CONFIG_1=\\'value1\\' > /data/config.env`, "secret: {secretName: filekeyref-non-emptydir}", use+
		fileKeyEnv("CONFIG_1", "CONFIG_1", ""))
	initHostPath := envFilePod("filekeyref-initfail", `echo CONFIG_INIT=\\'fail\\' > /data/config.env`, "hostPath: {path: /tmp}", `
  - name: use-envfile1
    image: busybox:1.28
    command: ["sh", "-c", "env | grep CONFIG_MAIN"]
    env:
`+fileKeyEnv("CONFIG_MAIN", "CONFIG_INIT", "false")+`
    volumeMounts: [{name: config, mountPath: /data}]
  containers:
  - name: main
    image: busybox:1.28
    command: ["sh", "-c", "sleep 1"]`)
	badFields := envFilePod("filekeyref-bad-fields", "true", emptyDir, use+`    - name: V
      valueFrom:
        fileKeyRef: {volumeName: config, path: ../config.env, key: "A=B"}
`)
	e.mustFail(
		failure{[]string{"apply", "-f", e.manifest(noVolume)}, 2,
			`pod "filekeyref-invalid-volume": spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Not found: "nonexistent-volume"`},
		failure{[]string{"apply", "-f", e.manifest(secret)}, 2,
			`pod "filekeyref-non-emptydir": spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: "config": referenced volume must be of type emptyDir`},
		failure{[]string{"apply", "-f", e.manifest(initHostPath)}, 2,
			`pod "filekeyref-initfail": spec.initContainers[1].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: "config": referenced volume must be of type emptyDir`},
		failure{[]string{"apply", "-f", e.manifest(badFields)}, 2,
			`spec.containers[0].env[0].valueFrom.fileKeyRef.key: Invalid value: "A=B"`},
		failure{[]string{"apply", "-f", e.manifest(badFields)}, 2,
			`spec.containers[0].env[0].valueFrom.fileKeyRef.path: Invalid value: "../config.env": must not contain '..'`},
	)
	if r := e.must("get", "pods", "-o", "name"); r.stdout != "" {
		t.Errorf("pods stored after refused applies: %q", r.stdout)
	}
}

// "should fail when file or key does not exist": the container waits in
// CreateContainerConfigError with the kubelet's message (the key, and the
// file's host path), a Failed event says it, and the pod stays Pending;
// a file that does not exist is "couldn't parse env file", optional or
// not. The kubelet reads the file at every start: a container whose key
// appears later starts at its next try.
func TestEnvFilesMissing(t *testing.T) {
	e := newEnv(t)
	missingKey := envFilePod("filekeyref-missing-file-key", `echo EXISTING_KEY=\\'value\\' > /data/config.env`, emptyDir, `
  containers:
  - name: use-envfile
    image: busybox:1.28
    command: ["sh", "-c", "echo $MISSING_KEY"]
    env:
`+fileKeyEnv("MISSING_KEY", "MISSING_KEY", ""))
	missingFile := envFilePod("filekeyref-missing-file", `true`, emptyDir, `
  containers:
  - name: required
    image: busybox:1.28
    command: ["sh", "-c", "echo $A"]
    env:
`+fileKeyEnv("A", "A", "")+`
  - name: optional
    image: busybox:1.28
    command: ["sh", "-c", "echo $A"]
    env:
`+fileKeyEnv("A", "A", "true"))
	late := envFilePod("filekeyref-late", `true`, emptyDir, `
  containers:
  - name: writer
    image: busybox:1.28
    command: ["sh", "-c", "sleep 2; echo LATE=\\'late\\' > /data/config.env; trap 'exit 0' TERM; while true; do sleep 1; done"]
    volumeMounts: [{name: config, mountPath: /data}]
  - name: reader
    image: busybox:1.28
    command: ["sh", "-c", "echo $LATE"]
    env:
`+fileKeyEnv("LATE", "LATE", ""))
	e.apply(missingKey + "\n---\n" + missingFile + "\n---\n" + late)

	p := e.pod("filekeyref-missing-file-key")
	hostFile := filepath.Join(e.root, "pods", "default_filekeyref-missing-file-key_"+string(p.UID), "volumes", "config", "config.env")
	for _, c := range []struct{ pod, container, msg string }{
		{"filekeyref-missing-file-key", "use-envfile", `environment variable key "MISSING_KEY" not found in file "` + hostFile + `"`},
		{"filekeyref-missing-file", "required", "couldn't parse env file"},
		{"filekeyref-missing-file", "optional", "couldn't parse env file"},
	} {
		s := e.waitContainer(c.pod, c.container)
		if w := s.State.Waiting; w == nil || w.Reason != "CreateContainerConfigError" || w.Message != c.msg {
			t.Errorf("pod %s container %s: %+v, want CreateContainerConfigError %q", c.pod, c.container, s.State, c.msg)
		}
		e.eventually("Error: "+c.msg, true, "events", "--for", "pod/"+c.pod)
	}
	if _, err := os.Stat(hostFile); err != nil {
		t.Errorf("the message names %s: %v", hostFile, err)
	}
	if p := e.pod("filekeyref-missing-file-key"); p.Status.Phase != corev1.PodPending {
		t.Errorf("pod %s, want Pending", p.Status.Phase)
	}

	// The reader's retry reads the file the writer wrote since.
	e.waitFor("filekeyref-late", 2*time.Minute, "reader done", func(p *corev1.Pod) bool {
		return containerState(p, "reader").State.Terminated != nil
	})
	if got := e.must("logs", "filekeyref-late", "-c", "reader").stdout; got != "late\n" {
		t.Errorf("reader printed %q, want late", got)
	}
}

// "should allow ephemeralContainer to consume fileKeyRef", through the
// ephemeralcontainers subresource; one naming no volume of the pod is
// refused as the API server's ValidatePodSpec refuses it.
func TestEnvFilesEphemeral(t *testing.T) {
	e := newEnv(t)
	const pod = "filekeyref-ephemeralconsumer"
	e.apply(envFilePod(pod, `echo CONFIG_EPH=\\'ephemeral\\' > /data/config.env`, emptyDir, `
  containers:
  - name: main
    image: busybox:1.28
    command: ["sh", "-c", "sleep 1000"]`))
	e.waitPhase(pod, corev1.PodRunning, 2*time.Minute)
	debugger := `{"name":"debugger","image":"busybox:1.28","imagePullPolicy":"IfNotPresent","terminationMessagePolicy":"File",` +
		`"command":["sh","-c","env | grep CONFIG_EPH_MAIN && sleep 10"],` +
		`"env":[{"name":"CONFIG_EPH_MAIN","valueFrom":{"fileKeyRef":{"volumeName":"VOLUME","path":"config.env","key":"CONFIG_EPH","optional":false}}}],` +
		`"volumeMounts":[{"name":"config","mountPath":"/data"}]}`
	e.mustFail(failure{[]string{"patch", "pod", pod, "--subresource", "ephemeralcontainers", "-p",
		`{"spec":{"ephemeralContainers":[` + strings.Replace(debugger, "VOLUME", "other", 1) + `]}}`}, 2,
		`spec.ephemeralContainers[0].env[0].valueFrom.fileKeyRef.volumeName: Not found: "other"`})
	e.must("patch", "pod", pod, "--subresource", "ephemeralcontainers", "-p",
		`{"spec":{"ephemeralContainers":[`+strings.Replace(debugger, "VOLUME", "config", 1)+`]}}`)
	e.waitFor(pod, time.Minute, "the debugger started", func(p *corev1.Pod) bool {
		s := containerState(p, "debugger").State
		return s.Running != nil || s.Terminated != nil
	})
	e.eventually("CONFIG_EPH_MAIN=ephemeral", true, "logs", pod, "-c", "debugger")

	// One whose key is missing waits as the others do.
	missing := strings.NewReplacer(`"name":"debugger"`, `"name":"debugger-missing"`, "VOLUME", "config", `"key":"CONFIG_EPH"`, `"key":"NOPE"`).Replace(debugger)
	e.must("patch", "pod", pod, "--subresource", "ephemeralcontainers", "-p",
		`{"spec":{"ephemeralContainers":[`+strings.Replace(debugger, "VOLUME", "config", 1)+`,`+missing+`]}}`)
	s := e.waitContainer(pod, "debugger-missing")
	if w := s.State.Waiting; w == nil || w.Reason != "CreateContainerConfigError" || !strings.HasPrefix(w.Message, `environment variable key "NOPE" not found in file "`) {
		t.Errorf("debugger-missing: %+v, want CreateContainerConfigError", s.State)
	}
}
