package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/runtime/image"
)

// InputError is a problem with what the user asked for (exit code 2): nothing
// was created.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// IsInputError reports whether err is bad input.
func IsInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie) || podspec.IsInvalid(err)
}

// ApplyOptions say how to start supervisors.
type ApplyOptions struct {
	Force bool
	// Exe and GlobalArgs re-execute this binary as `Exe GlobalArgs... supervise ...`.
	Exe        string
	GlobalArgs []string
}

// ApplyResult says what apply did with one pod: "created", "unchanged" or "replaced".
type ApplyResult struct {
	Record *Record
	Action string
}

// appliedHash identifies what was applied, so that applying the same manifest
// twice is a no-op as with kubectl.
func appliedHash(plan *podspec.Plan) string {
	h := sha256.New()
	spec := plan.Pod.DeepCopy()
	spec.UID, spec.CreationTimestamp, spec.Status = "", metav1.Time{}, corev1.PodStatus{}
	_ = json.NewEncoder(h).Encode(spec)
	_ = json.NewEncoder(h).Encode(plan.ConfigMaps)
	_ = json.NewEncoder(h).Encode(plan.Secrets)
	return hex.EncodeToString(h.Sum(nil))
}

func (p PodPaths) appliedFile() string { return filepath.Join(p.Dir, "applied.sha256") }

// CheckImages fails when a container's image must come from the local store
// (imagePullPolicy Never) and is not there.
func CheckImages(l Layout, plan *podspec.Plan) error {
	var store *image.Store
	var errs []error
	for _, list := range []struct {
		path string
		cs   []corev1.Container
	}{{"spec.initContainers", plan.Pod.Spec.InitContainers}, {"spec.containers", plan.Pod.Spec.Containers}} {
		for i, c := range list.cs {
			if c.ImagePullPolicy != corev1.PullNever {
				continue
			}
			if store == nil {
				s, err := image.Open(l.ImagesDir())
				if err != nil {
					return err
				}
				store = s
			}
			if _, err := store.Lookup(c.Image); err != nil {
				errs = append(errs, fmt.Errorf("pod %q: %s[%d].image: image %q is not in the local store and imagePullPolicy is Never (load it with `podrun load -i ARCHIVE`)", plan.Pod.Name, list.path, i, c.Image))
			}
		}
	}
	if len(errs) > 0 {
		return &InputError{errors.Join(errs...)}
	}
	return nil
}

// Apply records a validated pod and starts its supervisor. It returns once the
// supervisor owns the pod.
func Apply(l Layout, plan *podspec.Plan, opts ApplyOptions) (*ApplyResult, error) {
	hash := appliedHash(plan)
	action := "created"
	if old, err := FindPod(l, plan.Pod.Namespace, plan.Pod.Name); err == nil {
		prev, _ := os.ReadFile(old.Paths.appliedFile())
		if string(prev) == hash && old.Lost() {
			// Applied again after its supervisor was lost: run the same pod again,
			// from its first init container, as a node does after a reboot. A
			// reboot took the Secrets (kept under the run root) with it; the
			// manifest has them again, the same ones (the hash says so).
			old.Objects.Secrets = nil
			for _, s := range plan.Secrets {
				old.Objects.Secrets = append(old.Objects.Secrets, s)
			}
			if err := writeSecrets(old.Paths, old.Objects.Secrets); err != nil {
				return nil, err
			}
			if err := revive(l, old, opts); err != nil {
				return nil, err
			}
			return &ApplyResult{Record: old, Action: "restarted"}, nil
		}
		if string(prev) == hash && !isTerminal(old.Pod) {
			return &ApplyResult{Record: old, Action: "unchanged"}, nil
		}
		if !opts.Force {
			return nil, &InputError{fmt.Errorf("pod %q already exists in namespace %q and a pod's spec cannot be changed: delete it first (podrun delete %s) or apply with --force to replace it", plan.Pod.Name, plan.Pod.Namespace, plan.Pod.Name)}
		}
		if err := Delete(l, old, DeleteOptions{}); err != nil {
			return nil, fmt.Errorf("replacing pod %s: %w", old.Key(), err)
		}
		action = "replaced"
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if err := CheckImages(l, plan); err != nil {
		return nil, err
	}

	pod := plan.Pod.DeepCopy()
	pod.UID = types.UID(uuid.NewString())
	now := metav1.Now()
	pod.CreationTimestamp = now
	if pod.Spec.NodeName == "" {
		// What the scheduler would do: this host is the only node.
		pod.Spec.NodeName, _ = os.Hostname()
	}
	pod.Status = initialStatus(pod, now)
	paths := l.Pod(pod.Namespace, pod.Name, string(pod.UID))
	objs := &Objects{}
	for _, cm := range plan.ConfigMaps {
		objs.ConfigMaps = append(objs.ConfigMaps, cm)
	}
	for _, s := range plan.Secrets {
		objs.Secrets = append(objs.Secrets, s)
	}
	if err := createRecord(paths, pod, objs); err != nil {
		_ = os.RemoveAll(paths.Dir)
		_ = os.RemoveAll(paths.RunDir)
		return nil, err
	}
	_ = os.WriteFile(paths.appliedFile(), []byte(hash), 0o644)
	rec := &Record{Paths: paths, Pod: pod, Objects: objs}
	if err := startSupervisor(rec, opts); err != nil {
		_ = removePod(l, rec)
		return nil, fmt.Errorf("starting the supervisor of pod %s: %w", rec.Key(), err)
	}
	return &ApplyResult{Record: rec, Action: action}, nil
}

// revive releases what a lost pod may still hold and starts a new supervisor for it.
func revive(l Layout, rec *Record, opts ApplyOptions) error {
	if err := teardownSandbox(l, rec.Paths, string(rec.Pod.UID)); err != nil {
		return fmt.Errorf("releasing what pod %s held before restarting it: %w", rec.Key(), err)
	}
	// Until the new supervisor reports, nothing of the pod is ready (`apply
	// --wait` must not take the lost run's readiness for the new one's).
	st := rec.View().Status
	for i := range st.Conditions {
		if t := st.Conditions[i].Type; t == corev1.PodReady || t == corev1.ContainersReady {
			st.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	st.Phase, st.Message = corev1.PodPending, ""
	if err := writeJSON(rec.Paths.StatusFile(), st); err != nil {
		return err
	}
	if err := startSupervisor(rec, opts); err != nil {
		return fmt.Errorf("restarting the supervisor of pod %s: %w", rec.Key(), err)
	}
	return nil
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// startSupervisor starts the pod's supervisor detached in its own session and
// waits until it says it owns the pod.
func startSupervisor(rec *Record, opts ApplyOptions) error {
	logf, err := os.OpenFile(rec.Paths.SupervisorLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	args := append(append([]string{}, opts.GlobalArgs...), "supervise", "--uid", string(rec.Pod.UID), rec.Pod.Namespace, rec.Pod.Name)
	cmd := exec.Command(opts.Exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	w.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, 64))
		got <- string(b)
	}()
	select {
	case s := <-got:
		if strings.HasPrefix(s, "ok") {
			return nil
		}
		err := <-exited
		return fmt.Errorf("supervisor exited (%v): %s", err, tailFile(rec.Paths.SupervisorLog(), 2048))
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		return fmt.Errorf("supervisor did not start within 60s: %s", tailFile(rec.Paths.SupervisorLog(), 2048))
	}
}

func tailFile(path string, n int64) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if int64(len(data)) > n {
		data = data[int64(len(data))-n:]
	}
	return string(bytes.TrimSpace(data))
}
