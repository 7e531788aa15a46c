package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const crashPod = `
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  terminationGracePeriodSeconds: 2
  initContainers: [{name: init, image: busybox:1.28, command: ['true']}]
  containers: [{name: app, image: busybox:1.28, command: ` + netIdle + `}]
`

// podrunCrashing runs podrun with PODRUN_TEST_CRASHPOINT=point: the command,
// or a supervisor it starts, kills itself with SIGKILL on reaching that
// point of the code (internal/crashpoint).
func (e *env) podrunCrashing(point string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, podrunBin, e.args(args...)...)
	cmd.Env = append(os.Environ(), "PODRUN_TEST_CRASHPOINT="+point)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("running podrun %v: %v", args, err)
	}
	if ctx.Err() != nil {
		e.t.Fatalf("podrun %v with crash point %s hung", args, point)
	}
	return r
}

// checkAfterCrash is what must hold whatever instant podrun was killed at:
// get works and shows the pod (at most once) with a STATUS, and a pod whose
// supervisor died is shown as Unknown with the reason.
// waitSupervisorsCrashed waits until the supervisors of the test's pods have
// reached a supervisor's crash point: apply waits only for its supervisor's
// readiness, so a point after it (the containers' start) comes after apply
// has returned, and applying again before it would find the pod still
// supervised ("unchanged") and then lost.
func (e *env) waitSupervisorsCrashed(point string) {
	t := e.t
	t.Helper()
	if !strings.HasPrefix(point, "supervisor:") && !strings.HasPrefix(point, "sandbox:") {
		return
	}
	pids, _ := filepath.Glob(filepath.Join(e.runRoot, "pods", "*", "supervisor.pid"))
	deadline := time.Now().Add(time.Minute)
	for _, f := range pids {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		stat := filepath.Join("/proc", strings.TrimSpace(string(data)), "stat")
		for {
			b, err := os.ReadFile(stat)
			if err != nil || strings.Contains(string(b), ") Z ") {
				break // gone, or dead and not yet reaped
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the supervisor (%s) has not reached its crash point after a minute", point, f)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func (e *env) checkAfterCrash(point string) {
	t := e.t
	t.Helper()
	r := e.must("get")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.stdout == "" {
		return
	}
	if len(lines) != 2 {
		t.Errorf("%s: get shows %d rows:\n%s", point, len(lines)-1, r.stdout)
	}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) != 5 || f[0] != "crash" {
			t.Errorf("%s: get row %q; want NAME READY STATUS RESTARTS AGE", point, l)
		}
	}
	var list struct{ Items []corev1.Pod }
	if err := json.Unmarshal([]byte(e.must("get", "-o", "json").stdout), &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("%s: get -o json: %v, %d pods", point, err, len(list.Items))
	}
	p := list.Items[0]
	run := filepath.Join(e.runRoot, "pods", string(p.UID))
	_, hadSupervisor := os.Stat(filepath.Join(run, "supervisor.pid"))
	alive := false
	if data, err := os.ReadFile(filepath.Join(run, "supervisor.pid")); err == nil {
		alive = syscall.Kill(atoi(t, strings.TrimSpace(string(data))), 0) == nil
	}
	terminal := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	if hadSupervisor == nil && !alive && !terminal && (p.Status.Phase != corev1.PodUnknown || !strings.Contains(p.Status.Message, "supervisor is not running")) {
		t.Errorf("%s: the pod's supervisor is dead but it shows phase %q (%q); want Unknown with the reason", point, p.Status.Phase, p.Status.Message)
	}
}

// TestCrashInjection kills podrun — apply, the pod's supervisor, delete —
// with SIGKILL at each named point of their code (PODRUN_TEST_CRASHPOINT,
// internal/crashpoint), one cycle per point: after the crash `get` shows the
// pod consistently, applying the manifest again (or deleting again)
// recovers, and after the delete nothing of the pod is left on the host
// (the leak check).
func TestCrashInjection(t *testing.T) {
	e := newEnv(t)
	manifest := e.manifest(crashPod)
	// Points reached by `apply` itself and by the supervisor it starts (the
	// supervisor inherits the environment).
	applyPoints := []string{
		"apply:reserved", "apply:before-record", "record:before-rename", "apply:recorded",
		"apply:supervisor-started", "supervisor:locked", "supervisor:recorded", "supervisor:ready",
		"sandbox:network", "supervisor:sandbox-ready", "supervisor:started:init", "supervisor:started:app",
		"apply:supervisor-ready",
	}
	// Points of the supervisor's teardown, reached on delete.
	teardownPoints := []string{"supervisor:containers-stopped", "teardown:killed", "supervisor:torn-down"}
	// Points of `delete`.
	deletePoints := []string{"delete:reserved", "delete:requested", "teardown:killed", "delete:released", "delete:half-removed"}
	ready := func(point string) {
		t.Helper()
		if r := e.podrun("wait", "--for=condition=Ready", "pod/crash", "--timeout", "90s"); r.code != 0 {
			t.Fatalf("%s: the pod did not become Ready after recovery: %s", point, r)
		}
	}
	leakCheck := func(point string) {
		t.Helper()
		if out := e.must("get").stdout; strings.TrimSpace(out) != "" {
			t.Errorf("%s: after delete, get shows %s", point, out)
		}
		if left := e.leftovers(); len(left) > 0 {
			t.Fatalf("%s: left behind after delete: %v", point, left)
		}
	}
	cycles := 0
	for _, point := range applyPoints {
		r := e.podrunCrashing(point, "apply", "-f", manifest)
		t.Logf("%s: apply exit %d %s", point, r.code, strings.TrimSpace(r.stderr))
		e.waitSupervisorsCrashed(point)
		e.checkAfterCrash(point)
		r = e.must("apply", "-f", manifest)
		if !strings.Contains(r.stdout, "pod/crash created") && !strings.Contains(r.stdout, "pod/crash unchanged") && !strings.Contains(r.stdout, "pod/crash restarted") {
			t.Errorf("%s: apply again: %s", point, r)
		}
		ready(point)
		e.must("delete", "crash")
		leakCheck(point)
		cycles++
	}
	for _, point := range teardownPoints {
		e.podrunCrashing(point, "apply", "-f", manifest)
		ready(point)
		r := e.podrun("delete", "crash")
		e.checkAfterCrash(point)
		if r.code != 0 {
			t.Errorf("%s: delete while the supervisor crashes in its teardown: %s", point, r)
		}
		e.must("delete", "crash", "--ignore-not-found")
		leakCheck(point)
		cycles++
	}
	for _, point := range deletePoints {
		e.must("apply", "-f", manifest)
		ready(point)
		r := e.podrunCrashing(point, "delete", "crash")
		t.Logf("%s: delete exit %d", point, r.code)
		e.checkAfterCrash(point)
		e.must("delete", "crash", "--ignore-not-found")
		leakCheck(point)
		cycles++
	}
	t.Logf("%d crash points, %d crash cycles, each followed by the leak check", len(applyPoints)+len(teardownPoints)+len(deletePoints), cycles)
}
