//go:build !podrun_lean

package supervisor

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podrun/podrun/image"
	"github.com/podrun/podrun/internal/crashpoint"
	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/internal/ownerproc"
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
	// KeepApplied updates a pod in place without changing the record of its
	// last apply (kubectl patch leaves last-applied-configuration as it
	// was): the manifest applied again after a patch stays unchanged.
	KeepApplied bool
	// Resize is the pods/resize subresource (kubectl patch --subresource
	// resize): an existing pod's containers get new cpu and memory requests
	// and limits (podspec.DiffPodResize), which its supervisor applies in
	// place; nothing else changes, and the record of its last apply stays.
	Resize bool
	// Standby, when set, is a supervisor process started ahead
	// (SpawnStandby): the first pod this apply starts is given to it.
	Standby *Standby
}

// Standby is a supervisor started ahead of its pod (SpawnStandby): the CLI
// holds it without importing the process kit.
type Standby = ownerproc.Standby

// SpawnStandby starts a supervisor before its pod is recorded, so that the
// shim's start runs beside the CLI's validation instead of after it; apply
// gives it the first pod it starts (ApplyOptions.Standby) and discards it
// when it starts none. A failure to start it is only a lost head start.
func SpawnStandby(l store.Layout, opts ApplyOptions) *Standby {
	s, err := ownerproc.SpawnStandby(opts.Exe, supervisorArgs(l, opts, "--standby"), "the supervisor")
	if err != nil {
		return nil
	}
	return s
}

// supervisorArgs is the supervisor's command line after its binary. The
// pod's settings are in its record: the supervisor needs only where the
// records are and the pod's UID (or --standby, to read it from fd 4).
func supervisorArgs(l store.Layout, opts ApplyOptions, uid string) []string {
	args := []string{"--root", l.Root, "--run-root", l.RunRoot}
	if opts.LogLevel != "" {
		args = append(args, "--log-level", opts.LogLevel)
	}
	return append(args, "supervise", uid)
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

// CheckImages fails when a container's image, or an image volume's, must
// come from the local store (pull policy Never) and is not there.
func CheckImages(l store.Layout, plan *podspec.Plan) error {
	var images *image.Store
	// missing opens the store at the first image to look up.
	missing := func(ref string) (bool, error) {
		if images == nil {
			s, err := image.Open(l.ImagesDir())
			if err != nil {
				return false, err
			}
			images = s
		}
		_, err := images.Lookup(ref)
		return err != nil, nil
	}
	var errs []error
	for i, v := range plan.Pod.Spec.Volumes {
		if v.Image == nil || v.Image.PullPolicy != corev1.PullNever {
			continue
		}
		if gone, err := missing(v.Image.Reference); err != nil {
			return err
		} else if gone {
			errs = append(errs, fmt.Errorf("pod %q: spec.volumes[%d].image.reference: image %q is not in the local store and pullPolicy is Never (load it with `podrun load -i ARCHIVE`)", plan.Pod.Name, i, v.Image.Reference))
		}
	}
	for _, list := range []struct {
		path string
		cs   []corev1.Container
	}{{"spec.initContainers", plan.Pod.Spec.InitContainers}, {"spec.containers", plan.Pod.Spec.Containers}} {
		for i, c := range list.cs {
			if c.ImagePullPolicy != corev1.PullNever {
				continue
			}
			if gone, err := missing(c.Image); err != nil {
				return err
			} else if gone {
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
	return applyLocked(l, plan, opts)
}

// Reservation holds the names of several pods for one transaction: apply
// checks every pod against what exists (Conflicts) before it creates any
// (ApplyReserved), so a conflict anywhere in a file creates nothing, as the
// API server refuses a request whole.
type Reservation struct {
	l     store.Layout
	locks []*store.NameLock
}

// Reserve takes the names of every plan's pod, in one order (namespace,
// name) so that two transactions never wait for each other.
func Reserve(l store.Layout, plans []*podspec.Plan) (*Reservation, error) {
	keys := make([][2]string, 0, len(plans))
	seen := map[[2]string]bool{}
	for _, p := range plans {
		k := [2]string{p.Pod.Namespace, p.Pod.Name}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
	r := &Reservation{l: l}
	for _, k := range keys {
		lock, err := l.LockName(k[0], "pods", k[1])
		if err != nil {
			r.Release()
			return nil, err
		}
		r.locks = append(r.locks, lock)
	}
	return r, nil
}

// Release gives the names back.
func (r *Reservation) Release() {
	for _, lock := range r.locks {
		lock.Unlock()
	}
	r.locks = nil
}

// Conflicts reports, for every plan, what Apply would refuse because of a pod
// that exists (a different spec without Force, a record that cannot be read),
// joined; nil when every pod can be applied.
func (r *Reservation) Conflicts(plans []*podspec.Plan, opts ApplyOptions) error {
	var errs []error
	for _, plan := range plans {
		if err := conflict(r.l, plan, opts); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	err := errors.Join(errs...)
	for _, e := range errs {
		if !errdefs.IsInvalid(e) {
			return err
		}
	}
	return errdefs.Invalid(err)
}

// ApplyReserved is Apply for a pod whose name r holds.
func (r *Reservation) ApplyReserved(plan *podspec.Plan, opts ApplyOptions) (*ApplyResult, error) {
	return applyLocked(r.l, plan, opts)
}

// conflict is Apply's refusal of a pod that exists, checked alone.
func conflict(l store.Layout, plan *podspec.Plan, opts ApplyOptions) error {
	old, err := store.FindPod(l, plan.Pod.Namespace, plan.Pod.Name)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if opts.Force {
		return nil
	}
	if old.Broken == nil {
		plan = plan.ForUpdate(old.Pod) // admission applies on create only
	}
	if opts.Resize {
		if _, err := podspec.DiffPodResize(old.Pod, plan.Pod); err != nil {
			return errdefs.Invalid(err)
		}
		return nil
	}
	prev, _ := os.ReadFile(old.Paths.AppliedFile())
	if string(prev) == appliedHash(plan, opts.Settings) && old.Broken == nil {
		return nil // unchanged (a finished pod too), or run again after its supervisor was lost
	}
	if live(old) || stopped(old) {
		// An update in place, as far as the API server allows one.
		if _, err := podspec.DiffPodUpdate(old.Pod, plan.Pod); err != nil {
			return errdefs.Invalid(fmt.Errorf("%w\n(podrun apply --force deletes the pod and creates it again)", err))
		}
		return nil
	}
	return existsError(plan, old)
}

func existsError(plan *podspec.Plan, old *store.Record) error {
	if old.Broken != nil {
		return errdefs.Class(errdefs.ErrAlreadyExists, fmt.Errorf("pod %q exists in namespace %q but its record cannot be read (%v): delete it first (podrun delete %s) or apply with --force to replace it", plan.Pod.Name, plan.Pod.Namespace, old.Broken, plan.Pod.Name))
	}
	return errdefs.Invalid(errdefs.Class(errdefs.ErrAlreadyExists, fmt.Errorf("pod %q already exists in namespace %q and a pod's spec cannot be changed: delete it first (podrun delete %s) or apply with --force to replace it", plan.Pod.Name, plan.Pod.Namespace, plan.Pod.Name)))
}

// applyLocked is Apply under the pod name's reservation.
func applyLocked(l store.Layout, plan *podspec.Plan, opts ApplyOptions) (*ApplyResult, error) {
	crashpoint.Hit("apply:reserved")
	store.RemoveStaleCreations(l, 10*time.Minute)
	store.RemoveInterruptedCreations(l, plan.Pod.Namespace, plan.Pod.Name)
	podspec.PrepareForStore(plan.Pod)
	hash := appliedHash(plan, opts.Settings)
	action := "created"
	if old, err := store.FindPod(l, plan.Pod.Namespace, plan.Pod.Name); err == nil {
		created := plan // what a replacement (--force) creates, admitted
		if old.Broken == nil {
			plan = plan.ForUpdate(old.Pod) // admission applies on create only
			hash = appliedHash(plan, opts.Settings)
		}
		prev, _ := os.ReadFile(old.Paths.AppliedFile())
		if opts.Resize {
			return resize(old, plan, string(prev))
		}
		// Under the reservation no other apply is starting this pod, so a pod
		// without a live supervisor is lost even if it never started.
		lost := old.Broken == nil && !store.IsTerminal(old.Pod) && store.SupervisorPid(old.Paths) == 0 && old.Pod.DeletionTimestamp == nil
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
		if string(prev) == hash && old.Broken == nil {
			// The API server answers an apply of the same object "unchanged",
			// whether or not its pod has finished: a finished pod stays as it is.
			return &ApplyResult{Record: old, Action: "unchanged"}, nil
		}
		if !opts.Force && (live(old) || stopped(old)) {
			// An update in place, as the API server allows one of a pod,
			// running or not.
			if opts.KeepApplied {
				hash = string(prev)
			}
			return update(l, old, plan, hash)
		}
		if !opts.Force {
			return nil, existsError(plan, old)
		}
		if err := deleteLocked(l, old, DeleteOptions{}); err != nil {
			return nil, fmt.Errorf("replacing pod %s: %w", old.Key(), err)
		}
		if _, err := os.Stat(old.Paths.Dir); err == nil {
			// Kept for its finalizers: the API server's create of the
			// replacement fails the same way.
			return nil, errdefs.Class(errdefs.ErrAlreadyExists, fmt.Errorf("object is being deleted: pods %q already exists (its finalizers %v keep it: remove them to let it go)", old.Pod.Name, old.Pod.Finalizers))
		}
		plan, hash = created, appliedHash(created, opts.Settings)
		action = "replaced"
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	} else if opts.Resize {
		return nil, errdefs.Class(errdefs.ErrNotFound, fmt.Errorf("pods %q not found", plan.Pod.Name))
	}
	pod := plan.Pod.DeepCopy()
	pod.UID = types.UID(uuid.NewString())
	pod.Generation = 1 // the API server's: a new pod is generation 1
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
			QOSClass: plan.QOS, StartTime: &now, ObservedGeneration: pod.Generation,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now, ObservedGeneration: pod.Generation}},
		}
	}
	objs := &store.Objects{}
	for _, cm := range plan.ConfigMaps {
		objs.ConfigMaps = append(objs.ConfigMaps, cm)
	}
	for _, s := range plan.Secrets {
		objs.Secrets = append(objs.Secrets, s)
	}
	crashpoint.Hit("apply:before-record")
	rec, err := store.CreateRecord(l, pod, objs, opts.Settings, hash)
	if err != nil {
		return nil, err
	}
	crashpoint.Hit("apply:recorded")
	if !admitted {
		store.NewEventLog(rec.Paths.EventsFile(), time.Now).Add("Warning", podspec.ReasonSysctlForbidden, "", "%s", rejected)
		return &ApplyResult{Record: rec, Action: action}, nil
	}
	if err := startSupervisor(l, rec, opts); err != nil {
		_ = removePod(l, rec)
		return nil, fmt.Errorf("starting the supervisor of pod %s: %w", rec.Key(), err)
	}
	crashpoint.Hit("apply:supervisor-ready")
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

// SpawnError is a supervisor that did not come up. The CLI adds what it
// knows of podrun-shim to it: a shim of another release may fail before it
// writes a word to its log.
type SpawnError struct{ Err error }

func (e *SpawnError) Error() string { return e.Err.Error() }
func (e *SpawnError) Unwrap() error { return e.Err }

// startSupervisor starts the pod's supervisor detached in its own session and
// waits until it says it owns the pod.
func startSupervisor(l store.Layout, rec *store.Record, opts ApplyOptions) error {
	started := func() { crashpoint.Hit("apply:supervisor-started") }
	ok, err := opts.Standby.Give(string(rec.Pod.UID), rec.Paths.SupervisorLog(), 60*time.Second, started)
	if !ok {
		err = ownerproc.Spawn(opts.Exe, supervisorArgs(l, opts, string(rec.Pod.UID)), rec.Paths.SupervisorLog(), "the supervisor", 60*time.Second, started)
	}
	if err != nil {
		return &SpawnError{Err: err}
	}
	return nil
}

// live says the pod's supervisor runs it: an update is acted on.
func live(rec *store.Record) bool {
	return rec.Broken == nil && !store.IsTerminal(rec.Pod) && store.SupervisorPid(rec.Paths) > 0
}

// stopped says nothing runs the pod any more and nothing will: it has
// finished, or it is being deleted (a record kept for its finalizers). An
// update only changes its record, as the API server updates a pod the
// kubelet is done with.
func stopped(rec *store.Record) bool {
	return rec.Broken == nil && store.SupervisorPid(rec.Paths) == 0 && (store.IsTerminal(rec.Pod) || rec.Pod.DeletionTimestamp != nil)
}

// resize stores new cpu and memory requests and limits of a pod's
// containers (the pods/resize subresource, podspec.DiffPodResize) and asks
// its supervisor to apply them, as the kubelet actuates a resize: in place,
// or by restarting a container whose resizePolicy says RestartContainer.
// metadata.generation moves; the record of the last apply does not.
func resize(old *store.Record, plan *podspec.Plan, hash string) (*ApplyResult, error) {
	if old.Broken != nil {
		return nil, existsError(plan, old)
	}
	changed, err := podspec.DiffPodResize(old.Pod, plan.Pod)
	if err != nil {
		return nil, errdefs.Invalid(err)
	}
	if len(changed) == 0 {
		return &ApplyResult{Record: old, Action: "unchanged"}, nil
	}
	if err := storeSpec(old, podspec.ApplyPodResize(old.Pod, plan.Pod), hash, true); err != nil {
		return nil, fmt.Errorf("resizing pod %s: %w", old.Key(), err)
	}
	return &ApplyResult{Record: old, Action: "configured"}, nil
}

// UpdateEphemeralContainers is the pods/ephemeralcontainers subresource
// (kubectl debug, kubectl patch --subresource ephemeralcontainers): the
// stored pod gets updated's ephemeral containers and nothing else of it
// (podspec.DiffEphemeralContainers checks them as the API server does:
// existing ones stay as they are), and its supervisor starts the new ones.
// metadata.generation moves; the record of the last apply does not.
// updated must be defaulted (podspec.SetDefaults).
func UpdateEphemeralContainers(l store.Layout, namespace, name string, updated *corev1.Pod) (*ApplyResult, error) {
	old, unlock, err := lockPod(l, namespace, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	added, err := podspec.DiffEphemeralContainers(old.Pod, updated)
	if err != nil {
		return nil, errdefs.Invalid(err)
	}
	if len(added) == 0 {
		return &ApplyResult{Record: old, Action: "unchanged"}, nil
	}
	prev, _ := os.ReadFile(old.Paths.AppliedFile())
	if err := storeSpec(old, podspec.ApplyEphemeralContainers(old.Pod, updated), string(prev), true); err != nil {
		return nil, fmt.Errorf("updating the ephemeral containers of pod %s: %w", old.Key(), err)
	}
	return &ApplyResult{Record: old, Action: "configured"}, nil
}

// lockPod takes the pod name's reservation and reads the pod's record, for
// a subresource's write: NotFound as the API server says it, an unreadable
// record refused.
func lockPod(l store.Layout, namespace, name string) (*store.Record, func(), error) {
	lock, err := l.LockName(namespace, "pods", name)
	if err != nil {
		return nil, nil, err
	}
	rec, err := store.FindPod(l, namespace, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		err = errdefs.Class(errdefs.ErrNotFound, fmt.Errorf("pods %q not found", name))
	case err == nil && rec.Broken != nil:
		err = fmt.Errorf("pod %q in namespace %q: its record cannot be read (%v)", name, namespace, rec.Broken)
	}
	if err != nil {
		lock.Unlock()
		return nil, nil, err
	}
	return rec, func() { lock.Unlock() }, nil
}

// SetPodConditions is the pods/status subresource as far as podrun lets a
// client write a pod's status: the conditions the kubelet does not own
// (readiness gates' conditions) are stored (store.ConditionsFile) and the
// supervisor, told as for an update, keeps them in every status it writes
// and weighs them in the Ready condition; the rest of the status is the
// supervisor's, as the kubelet's status manager reasserts its own. A pod
// without a supervisor (finished) has them written into its status at once.
func SetPodConditions(l store.Layout, namespace, name string, conds []corev1.PodCondition) error {
	rec, unlock, err := lockPod(l, namespace, name)
	if err != nil {
		return err
	}
	defer unlock()
	var ext []corev1.PodCondition
	for _, c := range conds {
		if !store.PodConditionByKubelet(c.Type) {
			ext = append(ext, c)
		}
	}
	if err := store.WriteJSON(rec.Paths.ConditionsFile(), ext); err != nil {
		return err
	}
	if pid := store.SupervisorPid(rec.Paths); pid > 0 {
		return request(rec.Paths, pid, func(r *store.Request) { r.Update++ })
	}
	st := rec.Pod.Status
	var kept []corev1.PodCondition
	for _, c := range st.Conditions {
		if store.PodConditionByKubelet(c.Type) {
			kept = append(kept, c)
		}
	}
	st.Conditions = append(kept, ext...)
	return store.WriteJSON(rec.Paths.StatusFile(), st)
}

// storeSpec writes pod, old's pod with an update or a resize made, as old's
// record (keeping its status) and, with notify, asks its supervisor, if one
// runs, to act on it. metadata.generation moves with every change of the
// spec, not of the metadata (PodObservedGenerationTracking:
// podStrategy.PrepareForUpdate).
func storeSpec(old *store.Record, pod *corev1.Pod, hash string, notify bool) error {
	if pod.Generation == 0 {
		pod.Generation = 1 // a record from before podrun kept generations
	}
	if !apiequality.Semantic.DeepEqual(old.Pod.Spec, pod.Spec) {
		pod.Generation++
	}
	if err := store.UpdateSpec(old.Paths, pod, hash); err != nil {
		return err
	}
	pod.Status = old.Pod.Status
	old.Pod = pod
	if pid := store.SupervisorPid(old.Paths); notify && pid > 0 {
		return request(old.Paths, pid, func(r *store.Request) { r.Update++ })
	}
	return nil
}

// update changes a running pod as far as the API server lets an update change
// a pod (podspec.DiffPodUpdate): the record gets the new labels, annotations,
// images and deadline, and the supervisor is asked to act on them (restart
// the containers whose image changed, as the kubelet does on a changed
// container hash).
//
// A stopped pod being deleted whose last finalizer the update removes goes,
// as the API server removes such an object.
func update(l store.Layout, old *store.Record, plan *podspec.Plan, hash string) (*ApplyResult, error) {
	u, err := podspec.DiffPodUpdate(old.Pod, plan.Pod)
	if err != nil {
		return nil, errdefs.Invalid(fmt.Errorf("%w\n(podrun apply --force deletes the pod and creates it again)", err))
	}
	if err := storeSpec(old, podspec.ApplyPodUpdate(old.Pod, plan.Pod), hash, u.Changed()); err != nil {
		return nil, fmt.Errorf("updating pod %s: %w", old.Key(), err)
	}
	pod := old.Pod
	if pod.DeletionTimestamp != nil && len(pod.Finalizers) == 0 && stopped(old) {
		if err := removePod(l, old); err != nil {
			return nil, err
		}
	}
	action := "configured"
	if !u.Changed() {
		action = "unchanged"
	}
	return &ApplyResult{Record: old, Action: action}, nil
}
