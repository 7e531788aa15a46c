// Package controllers is the workload controllers process: what
// kube-controller-manager does for the workload kinds (ReplicaSet,
// Deployment, DaemonSet), in one process per host store that commands start
// on demand (Ensure) when a workload object is stored, as the services owner
// is started, and that exits once no workload object remains. It watches the
// store (pod records and workload objects) with fsnotify plus a resync tick
// and reconciles every workload object on each change. Pods are made through
// supervisor.Apply and deleted through supervisor.Delete, the paths `podrun
// apply` and `podrun delete` take.
package controllers

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podrun/podrun/internal/ownerproc"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/serviceowner"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

// Kind is one workload kind the controllers process keeps: its stored kind
// and its controller's sync. Kinds whose objects own objects of another
// workload kind come first in Kinds (a Deployment before its ReplicaSets).
type Kind struct {
	Store *store.Kind
	// Sync reconciles one object: makes and deletes its pods (or its owned
	// objects) through c and writes its status with c.UpdateStatus. It is
	// called for every object of the kind on every pass.
	Sync func(c *Context, obj store.Object) error
}

// Kinds is the table of the workload kinds, in sync order.
var Kinds = []*Kind{deploymentKind, replicaSetKind, daemonSetKind, statefulSetKind, cronJobKind, jobKind}

// KindOf returns the workload kind of a stored kind, nil for another kind.
func KindOf(k *store.Kind) *Kind {
	for _, w := range Kinds {
		if w.Store == k {
			return w
		}
	}
	return nil
}

// resyncEvery is the level-triggered fallback of the controllers' watch (the
// informers' resync).
const resyncEvery = 10 * time.Second

// HasObjects reports whether any workload object is stored: the controllers
// process is started then.
func HasObjects(l store.Layout) bool {
	for _, k := range Kinds {
		if objs, _ := l.List(k.Store, ""); len(objs) > 0 {
			return true
		}
	}
	return false
}

// hasOwnedPods reports whether a pod whose controller is a workload object
// remains: a running controllers process stays until its garbage collection
// has deleted them. A pod already being deleted needs nothing of it (one
// kept for its finalizers may stay long after its owner went).
func hasOwnedPods(l store.Layout) bool {
	recs, _ := store.ListPods(l, "")
	for _, r := range recs {
		if r.Broken != nil || r.Pod.DeletionTimestamp != nil {
			continue
		}
		if ref := metav1.GetControllerOf(r.Pod); ref != nil && isWorkloadKind(ref.Kind) {
			return true
		}
	}
	return false
}

// Dir holds the controllers process's log under --root.
func Dir(l store.Layout) string { return filepath.Join(l.Root, "controllers") }

func process(l store.Layout, logLevel string) ownerproc.Process {
	args := []string{"--root", l.Root, "--run-root", l.RunRoot}
	if logLevel != "" {
		args = append(args, "--log-level", logLevel)
	}
	return ownerproc.Process{
		Paths: store.OwnerPaths{Dir: filepath.Join(l.RunRoot, "controllers")}, What: "the workload controllers",
		Needed:  func() bool { return HasObjects(l) },
		Stay:    func() bool { return hasOwnedPods(l) },
		Args:    append(args, "controllers"),
		LogPath: filepath.Join(Dir(l), "controllers.log"),
	}
}

// Ensure starts the controllers process when a workload object exists and
// none runs (none yet, or the last one crashed), and waits until it serves.
// exe is this binary, re-executed as `exe --root R --run-root RR controllers`.
func Ensure(l store.Layout, exe, logLevel string) error {
	p := process(l, logLevel)
	if store.OwnerPid(p.Paths) != 0 {
		return nil
	}
	if err := os.MkdirAll(Dir(l), 0o700); err != nil {
		return err
	}
	return p.Ensure(exe)
}

// WaitGone waits, once no workload object is left, until the controllers
// process has exited.
func WaitGone(l store.Layout, timeout time.Duration) error {
	return process(l, "").WaitGone(timeout)
}

// Context is what a kind's Sync works with during one pass: the pods of the
// store as read at the start of the pass, and the ways to change them.
type Context struct {
	L        store.Layout
	Exe      string // the podrun CLI
	Shim     string // podrun-shim, which supervises pods
	LogLevel string
	Log      *slog.Logger
	Now      time.Time
	// pods are the pods of the store at the start of the pass.
	pods []*corev1.Pod
	// objects are the workload objects by UID, read after the pods (so an
	// owner of a listed pod, still stored, is among them).
	objects map[types.UID]bool
	ctrl    *controllers
	// next is when a pass must run again at the latest (minReadySeconds).
	next time.Time
}

// controllers is the process's state across passes.
type controllers struct {
	mu sync.Mutex
	// deleting are the pods being deleted (in the background, each within
	// its grace period), which the controllers count as gone.
	deleting map[types.UID]bool
	// backoff delays making a replacement for an owner whose pods failed.
	backoff map[types.UID]backoffState
	wake    chan struct{}
}

type backoffState struct {
	until time.Time
	delay time.Duration
}

// RequeueAfter asks for another pass within d (a pod becoming available
// after minReadySeconds).
func (c *Context) RequeueAfter(d time.Duration) {
	t := c.Now.Add(d)
	if c.next.IsZero() || t.Before(c.next) {
		c.next = t
	}
}

// OwnedPods returns the pods whose controller is the object with uid, those
// being deleted left out, sorted by name.
func (c *Context) OwnedPods(uid types.UID) []*corev1.Pod {
	c.ctrl.mu.Lock()
	defer c.ctrl.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range c.pods {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == uid && !c.ctrl.deleting[p.UID] {
			out = append(out, p)
		}
	}
	return out
}

// AllOwnedPods returns the pods whose controller is uid, also those being
// deleted (a Recreate rollout waits for them).
func (c *Context) AllOwnedPods(uid types.UID) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range c.pods {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == uid {
			out = append(out, p)
		}
	}
	return out
}

// ControllerRef is the ownerReference a controller sets on what it makes.
func ControllerRef(k *store.Kind, owner store.Object) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: k.APIVersion(), Kind: k.Name, Name: owner.GetName(), UID: owner.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}
}

// CreatePod makes a pod from the owner's template through supervisor.Apply,
// with the settings recorded with the owner (or with its own controller, for
// a ReplicaSet a Deployment made) and the owner as its controller: named
// `generateName` + 5 random characters, as the API server names it.
func (c *Context) CreatePod(k *store.Kind, owner store.Object, tmpl *corev1.PodTemplateSpec, generateName string) (*corev1.Pod, error) {
	return c.createPod(k, owner, tmpl, podspec.GenerateName(generateName))
}

// CreatePodNamed is CreatePod with a fixed name (a StatefulSet's web-0).
func (c *Context) CreatePodNamed(k *store.Kind, owner store.Object, tmpl *corev1.PodTemplateSpec, name string) (*corev1.Pod, error) {
	return c.createPod(k, owner, tmpl, name)
}

func (c *Context) createPod(k *store.Kind, owner store.Object, tmpl *corev1.PodTemplateSpec, name string) (*corev1.Pod, error) {
	if b, ok := c.ctrl.backoffFor(owner.GetUID()); ok && c.Now.Before(b.until) {
		c.RequeueAfter(b.until.Sub(c.Now))
		return nil, nil
	}
	pod := podspec.PodFromTemplate(tmpl, owner.GetNamespace(), name)
	if err := podspec.AdmitPriority(pod, c.L.PriorityClasses()); err != nil {
		return nil, err
	}
	pod.OwnerReferences = []metav1.OwnerReference{ControllerRef(k, owner)}
	plan, err := podspec.PlanFor(pod, c.L.ConfigMaps(pod.Namespace), c.L.Secrets(pod.Namespace))
	if err != nil {
		return nil, fmt.Errorf("the pod template of %s %s/%s: %w", k.Name, owner.GetNamespace(), owner.GetName(), err)
	}
	settings := c.L.ObjectSettings(k, owner.GetNamespace(), owner.GetName())
	if settings == nil {
		for _, ref := range owner.GetOwnerReferences() {
			if sk, ok := store.KindFor(ref.Kind); ok {
				if settings = c.L.ObjectSettings(sk, owner.GetNamespace(), ref.Name); settings != nil {
					break
				}
			}
		}
	}
	opts := supervisor.ApplyOptions{Exe: c.Shim, LogLevel: c.LogLevel}
	if settings != nil {
		opts.Settings = *settings
	}
	res, err := supervisor.Apply(c.L, plan, opts)
	if err != nil {
		return nil, fmt.Errorf("creating pod %s/%s for %s %s: %w", pod.Namespace, pod.Name, k.Name, owner.GetName(), err)
	}
	c.Log.Info("created pod", "pod", pod.Namespace+"/"+pod.Name, "owner", k.Name+"/"+owner.GetName())
	// The services owner (cluster DNS, Service rules) runs while pods exist.
	if err := serviceowner.Ensure(c.L, c.Shim, c.LogLevel); err != nil {
		c.Log.Warn("starting the services owner", "err", err)
	}
	return res.Record.Pod, nil
}

// DeletePod deletes a pod through supervisor.Delete, in the background and
// within its grace period; the pod counts as gone from now on. failed says
// it is deleted because it failed: the owner's next replacement backs off.
// As the API server's DELETE, it returns once the pod reads as Terminating
// (its deletionTimestamp set), so that no status the controller writes next
// (a ReplicaSet's replicas, a finished rollout) runs ahead of what `get`
// shows; it waits at most requestWait for that (another command holding
// the pod's name, an apply of it, must not stall every controller).
func (c *Context) DeletePod(pod *corev1.Pod, ownerUID types.UID, failed bool) {
	ct := c.ctrl
	ct.mu.Lock()
	if ct.deleting[pod.UID] {
		ct.mu.Unlock()
		return
	}
	ct.deleting[pod.UID] = true
	if failed {
		b := ct.backoff[ownerUID]
		b.delay = min(max(2*b.delay, time.Second), 5*time.Minute)
		b.until = c.Now.Add(b.delay)
		ct.backoff[ownerUID] = b
	}
	ct.mu.Unlock()
	c.Log.Info("deleting pod", "pod", pod.Namespace+"/"+pod.Name, "failed", failed)
	requested := make(chan struct{})
	var once sync.Once
	mark := func() { once.Do(func() { close(requested) }) }
	go func() {
		defer func() {
			ct.mu.Lock()
			delete(ct.deleting, pod.UID)
			ct.mu.Unlock()
			ct.poke()
		}()
		defer mark()
		rec, err := store.FindPod(c.L, pod.Namespace, pod.Name)
		if err != nil || rec.Pod.UID != pod.UID {
			return
		}
		if err := supervisor.Delete(c.L, rec, supervisor.DeleteOptions{Requested: mark}); err != nil {
			c.Log.Error("deleting pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
	}()
	select {
	case <-requested:
	case <-time.After(requestWait):
		c.Log.Info("pod not yet marked for deletion; its deletion goes on", "pod", pod.Namespace+"/"+pod.Name)
	}
}

// requestWait bounds DeletePod's wait for a pod to read as Terminating.
const requestWait = 5 * time.Second

func (ct *controllers) backoffFor(uid types.UID) (backoffState, bool) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	b, ok := ct.backoff[uid]
	return b, ok
}

func (ct *controllers) poke() {
	select {
	case ct.wake <- struct{}{}:
	default:
	}
}

// UpdateStatus writes an object's status when change reports it changed.
func (c *Context) UpdateStatus(k *store.Kind, obj store.Object, change func(cur store.Object) bool) error {
	err := c.L.Update(k, obj.GetNamespace(), obj.GetName(), func(cur store.Object) error {
		if cur.GetUID() != obj.GetUID() || !change(cur) {
			return errUnchanged
		}
		return nil
	})
	if err == errUnchanged {
		return nil
	}
	return err
}

var errUnchanged = fmt.Errorf("unchanged")

// SetStatus writes status (the value of the object's Status field) when it
// differs from the stored one.
func (c *Context) SetStatus(k *store.Kind, obj store.Object, status any) error {
	return c.UpdateStatus(k, obj, func(cur store.Object) bool {
		f := reflect.ValueOf(cur).Elem().FieldByName("Status")
		if reflect.DeepEqual(f.Interface(), status) {
			return false
		}
		f.Set(reflect.ValueOf(status))
		return true
	})
}

// Exists reports whether a workload object with uid was stored at the start
// of the pass.
func (c *Context) Exists(uid types.UID) bool { return c.objects[uid] }

// IsPodActive is the controllers' filter of pods that count
// (controller.IsPodActive): not finished, not being deleted.
func IsPodActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// IsPodReady is the pod's Ready condition.
func IsPodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// IsPodAvailable is podutil.IsPodAvailable: Ready for at least
// minReadySeconds; when not yet, c is asked for a pass when it will be.
func (c *Context) IsPodAvailable(p *corev1.Pod, minReadySeconds int32) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type != corev1.PodReady || cond.Status != corev1.ConditionTrue {
			continue
		}
		if minReadySeconds == 0 {
			return true
		}
		at := cond.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second)
		if !at.After(c.Now) {
			return true
		}
		c.RequeueAfter(at.Sub(c.Now))
	}
	return false
}

// pass reads the store and syncs every workload object once.
func (ct *controllers) pass(l store.Layout, exe, shim, logLevel string, log *slog.Logger) time.Time {
	c := &Context{L: l, Exe: exe, Shim: shim, LogLevel: logLevel, Log: log, Now: time.Now(), ctrl: ct, objects: map[types.UID]bool{}}
	recs, _ := store.ListPods(l, "")
	for _, r := range recs {
		if r.Broken == nil {
			c.pods = append(c.pods, r.View())
		}
	}
	type item struct {
		k   *Kind
		obj store.Object
	}
	var items []item
	for _, k := range Kinds {
		objs, _ := l.List(k.Store, "")
		for _, o := range objs {
			c.objects[o.GetUID()] = true
			items = append(items, item{k, o})
		}
	}
	// The garbage collector: pods and objects whose controller is a workload
	// object that no longer exists go (its delete cascades to them).
	for _, p := range c.pods {
		if ref := metav1.GetControllerOf(p); ref != nil && isWorkloadKind(ref.Kind) && !c.objects[ref.UID] && p.DeletionTimestamp == nil {
			c.DeletePod(p, "", false)
		}
	}
	// So do the ControllerRevisions of a StatefulSet or DaemonSet.
	revs, _ := l.List(store.ControllerRevisionKind, "")
	for _, r := range revs {
		if ref := metav1.GetControllerOf(r); ref != nil && isWorkloadKind(ref.Kind) && !c.objects[ref.UID] {
			_ = l.Remove(store.ControllerRevisionKind, r.GetNamespace(), r.GetName())
		}
	}
	c.collectClaims()
	// The Jobs' deleted-pod tracking is kept while they run.
	runningJobs := map[types.UID]bool{}
	for _, it := range items {
		if j, ok := it.obj.(*batchv1.Job); ok {
			if _, done := jobFinished(j); !done {
				runningJobs[j.UID] = true
			}
		}
	}
	c.forgetJobTracking(runningJobs)
	for _, it := range items {
		if ref := metav1.GetControllerOf(it.obj); ref != nil && isWorkloadKind(ref.Kind) && !c.objects[ref.UID] {
			_ = l.Remove(it.k.Store, it.obj.GetNamespace(), it.obj.GetName())
			continue
		}
		if err := it.k.Sync(c, it.obj); err != nil {
			log.Error("sync", "kind", it.k.Store.Name, "object", it.obj.GetNamespace()+"/"+it.obj.GetName(), "err", err)
			c.RequeueAfter(5 * time.Second)
		}
	}
	return c.next
}

func isWorkloadKind(kind string) bool {
	for _, k := range Kinds {
		if k.Store.Name == kind {
			return true
		}
	}
	return false
}

// Run is the body of the hidden `podrun controllers` command. ready is
// written to and closed once the process serves.
// exe is the podrun CLI (the services owner's binary), shim the lean binary
// that supervises pods (podrun-shim, found next to exe).
func Run(l store.Layout, exe, shim, logLevel string, ready *os.File) error {
	p := process(l, logLevel)
	release, err := p.Hold()
	if err != nil {
		return err
	}
	defer release()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	for _, d := range []string{l.PodsDir(), l.ObjectsDir()} {
		_ = os.MkdirAll(d, 0o700)
	}
	var plurals []string
	for _, k := range Kinds {
		plurals = append(plurals, k.Store.Plural)
	}
	watcher, err := ownerproc.NewWatcher(func() []string { return ownerproc.StoreDirs(l, plurals...) })
	if err != nil {
		return err
	}
	defer watcher.Close()
	ct := &controllers{deleting: map[types.UID]bool{}, backoff: map[types.UID]backoffState{}, wake: make(chan struct{}, 1)}
	if err := p.Serving(ready); err != nil {
		return err
	}
	events := make(chan bool, 1)
	go func() {
		for {
			ok := watcher.Wait(time.Hour, func(err error) { log.Warn("watching the store", "err", err) })
			events <- ok
			if !ok {
				return
			}
		}
	}()
	for {
		next := ct.pass(l, exe, shim, logLevel, log)
		// The last object gone and its pods deleted: exit, when still so
		// under the start lock.
		if !HasObjects(l) && ct.idle() && !hasOwnedPods(l) && p.ExitIfIdle(nil) {
			return nil
		}
		wait := resyncEvery
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next), 10*time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case ok := <-events:
			if !ok {
				t.Stop()
				return nil
			}
		case <-ct.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// idle reports whether no pod deletion is under way.
func (ct *controllers) idle() bool {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return len(ct.deleting) == 0
}
