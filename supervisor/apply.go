package supervisor

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
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podrun/podrun/image"
	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/store"
)

// ApplyOptions say how to start supervisors.
type ApplyOptions struct {
	Force bool
	// Exe is podrun-shim, the supervisor's binary, run as `Exe --root R --run-root RR supervise UID`.
	Exe      string
	LogLevel string
	// Settings are the new pod's host settings, kept in its record.
	Settings store.Settings
}

// ApplyResult says what apply did with one pod: "created", "unchanged" or "replaced".
type ApplyResult struct {
	Record *store.Record
	Action string
}

// appliedHash identifies what was applied, so that applying the same manifest
// twice is a no-op as with kubectl.
func appliedHash(plan *podspec.Plan, settings store.Settings) string {
	h := sha256.New()
	spec := plan.Pod.DeepCopy()
	spec.UID, spec.CreationTimestamp, spec.Status = "", metav1.Time{}, corev1.PodStatus{}
	// Only the pod: its ConfigMaps and Secrets are objects of their own, and
	// changing one configures it without changing the pod (kubectl apply).
	_ = json.NewEncoder(h).Encode(spec)
	if len(settings.AllowedUnsafeSysctls) > 0 {
		// The node's settings are part of how the pod was applied.
		_ = json.NewEncoder(h).Encode(settings.AllowedUnsafeSysctls)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// SysctlAllowlist is the kubelet's sysctl admission on this host's kernel.
func SysctlAllowlist(allowedUnsafe []string) (*podspec.SysctlAllowlist, error) {
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	return podspec.NewSysctlAllowlist(unix.ByteSliceToString(uts.Release[:]), allowedUnsafe)
}

// CheckImages fails when a container's image must come from the local store
// (imagePullPolicy Never) and is not there.
func CheckImages(l store.Layout, plan *podspec.Plan) error {
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
		return errdefs.Invalid(errors.Join(errs...))
	}
	return nil
}

// Apply records a validated pod and starts its supervisor. It returns once the
// supervisor owns the pod. It holds the pod name's reservation throughout, so
// a concurrent apply or delete of the same name waits for it.
func Apply(l store.Layout, plan *podspec.Plan, opts ApplyOptions) (*ApplyResult, error) {
	lock, err := l.LockName(plan.Pod.Namespace, "pods", plan.Pod.Name)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	store.RemoveStaleCreations(l, 10*time.Minute)
	hash := appliedHash(plan, opts.Settings)
	action := "created"
	if old, err := store.FindPod(l, plan.Pod.Namespace, plan.Pod.Name); err == nil {
		prev, _ := os.ReadFile(old.Paths.AppliedFile())
		// Under the reservation no other apply is starting this pod, so a pod
		// without a live supervisor is lost even if it never started.
		lost := old.Broken == nil && !store.IsTerminal(old.Pod) && store.SupervisorPid(old.Paths) == 0
		if string(prev) == hash && lost {
			// Applied again after its supervisor was lost: run the same pod again,
			// from its first init container, as a node does after a reboot. A
			// reboot took the Secrets (kept under the run root) with it; the
			// manifest has them again, the same ones (the hash says so).
			old.Objects.Secrets = nil
			for _, s := range plan.Secrets {
				old.Objects.Secrets = append(old.Objects.Secrets, s)
			}
			if err := store.WriteSecrets(old.Paths, old.Objects.Secrets); err != nil {
				return nil, err
			}
			if err := revive(l, old, opts); err != nil {
				return nil, err
			}
			return &ApplyResult{Record: old, Action: "restarted"}, nil
		}
		if string(prev) == hash && old.Broken == nil && !store.IsTerminal(old.Pod) {
			return &ApplyResult{Record: old, Action: "unchanged"}, nil
		}
		if !opts.Force {
			if old.Broken != nil {
				return nil, errdefs.Class(errdefs.ErrAlreadyExists, fmt.Errorf("pod %q exists in namespace %q but its record cannot be read (%v): delete it first (podrun delete %s) or apply with --force to replace it", plan.Pod.Name, plan.Pod.Namespace, old.Broken, plan.Pod.Name))
			}
			return nil, errdefs.Invalid(errdefs.Class(errdefs.ErrAlreadyExists, fmt.Errorf("pod %q already exists in namespace %q and a pod's spec cannot be changed: delete it first (podrun delete %s) or apply with --force to replace it", plan.Pod.Name, plan.Pod.Namespace, plan.Pod.Name)))
		}
		if err := deleteLocked(l, old, DeleteOptions{}); err != nil {
			return nil, fmt.Errorf("replacing pod %s: %w", old.Key(), err)
		}
		action = "replaced"
	} else if !errors.Is(err, store.ErrNotFound) {
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
	// The kubelet's admission: a pod asking for sysctls that are neither safe
	// nor allowed is rejected before anything of it runs (kubelet rejectPod).
	allow, err := SysctlAllowlist(opts.Settings.AllowedUnsafeSysctls)
	if err != nil {
		return nil, errdefs.Invalid(fmt.Errorf("--allowed-unsafe-sysctls: %w", err))
	}
	rejected, admitted := allow.Admit(pod)
	if !admitted {
		pod.Status = corev1.PodStatus{
			Phase: corev1.PodFailed, Reason: podspec.ReasonSysctlForbidden, Message: "Pod was rejected: " + rejected,
			QOSClass: plan.QOS, StartTime: &now,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}},
		}
	}
	objs := &store.Objects{}
	for _, cm := range plan.ConfigMaps {
		objs.ConfigMaps = append(objs.ConfigMaps, cm)
	}
	for _, s := range plan.Secrets {
		objs.Secrets = append(objs.Secrets, s)
	}
	rec, err := store.CreateRecord(l, pod, objs, opts.Settings, hash)
	if err != nil {
		return nil, err
	}
	if !admitted {
		store.NewEventLog(rec.Paths.EventsFile(), time.Now).Add("Warning", podspec.ReasonSysctlForbidden, "", "%s", rejected)
		return &ApplyResult{Record: rec, Action: action}, nil
	}
	if err := startSupervisor(l, rec, opts); err != nil {
		_ = removePod(l, rec)
		return nil, fmt.Errorf("starting the supervisor of pod %s: %w", rec.Key(), err)
	}
	return &ApplyResult{Record: rec, Action: action}, nil
}

// revive releases what a lost pod may still hold and starts a new supervisor
// for it, which reports the pod as starting again before it says it runs.
func revive(l store.Layout, rec *store.Record, opts ApplyOptions) error {
	if err := runtime.TeardownSandbox(rec.PodLayout(l), rec.Paths, string(rec.Pod.UID)); err != nil {
		return fmt.Errorf("releasing what pod %s held before restarting it: %w", rec.Key(), err)
	}
	if err := startSupervisor(l, rec, opts); err != nil {
		return fmt.Errorf("restarting the supervisor of pod %s: %w", rec.Key(), err)
	}
	return nil
}

// startSupervisor starts the pod's supervisor detached in its own session and
// waits until it says it owns the pod.
func startSupervisor(l store.Layout, rec *store.Record, opts ApplyOptions) error {
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
	// The pod's settings are in its record: the supervisor needs only where
	// the records are and the pod's UID.
	args := []string{"--root", l.Root, "--run-root", l.RunRoot}
	if opts.LogLevel != "" {
		args = append(args, "--log-level", opts.LogLevel)
	}
	args = append(args, "supervise", string(rec.Pod.UID))
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
