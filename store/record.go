package store

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/moby/sys/atomicwriter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podrun/podrun/internal/atomicfile"
	"github.com/podrun/podrun/internal/crashpoint"
	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/podspec"
)

// ErrNotFound is returned when no pod matches.
var ErrNotFound = errdefs.ErrNotFound

// Objects are the ConfigMaps and Secrets the pod was applied with (its
// environment comes from these; its volumes follow the store's objects).
type Objects struct {
	ConfigMaps []*corev1.ConfigMap `json:"configMaps,omitempty"`
	Secrets    []*corev1.Secret    `json:"secrets,omitempty"`
}

// Request is what a CLI asks of a pod's supervisor (supervisor/client.go
// writes it, the supervisor reads it when rung). It lives under the run root,
// so asking writes nothing under --root.
type Request struct {
	// Delete asks the pod to stop within the grace period and be torn down.
	Delete *DeleteRequest `json:"delete,omitempty"`
	// Restart counts `podrun restart` requests; the supervisor restarts the
	// pod when it sees a count it has not handled.
	Restart int `json:"restart,omitempty"`
	// Update counts updates of the pod's spec through apply; the supervisor
	// reads pod.json again when it sees a count it has not handled.
	Update int `json:"update,omitempty"`
}

// DeleteRequest is written by `podrun delete` for the supervisor to act on.
type DeleteRequest struct {
	Timestamp          metav1.Time `json:"timestamp"`
	GracePeriodSeconds int64       `json:"gracePeriodSeconds"`
}

// RecordVersion is the version of the pod record this podrun writes.
const RecordVersion = 1

// header is a record's versioned identity and settings (record.json), written
// with the rest of the record and read first.
type header struct {
	Version   int      `json:"version"`
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	UID       string   `json:"uid"`
	Settings  Settings `json:"settings"`
}

// Record is everything on disk about one pod.
type Record struct {
	Paths PodPaths
	// Pod is the stored spec with the latest status written by the supervisor.
	Pod      *corev1.Pod
	Objects  *Objects
	Settings Settings
	// Broken says why the record cannot be read (a corrupt file): the pod is
	// shown as Unknown with this reason, and delete still releases it.
	Broken error
	// Request is the pending request to the supervisor, if any.
	Request Request
}

// Key is namespace/name.
func (r *Record) Key() string { return r.Pod.Namespace + "/" + r.Pod.Name }

// WriteJSON writes v to path atomically (a temporary file renamed into place).
func WriteJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data)
}

// ReplaceFile replaces path with data atomically (a temporary file in the same
// directory, then rename) but without fsync. It is for files the supervisor
// rewrites from memory (status.json, a container's process.json): their readers
// need atomicity, not durability, and a host crash ends the supervisor that
// would rewrite them anyway. Records that must survive a crash (the pod's record,
// objects, requests) go through WriteJSON, which fsyncs. Each
// fsync costs 0.3–7 ms on a busy disk, on the pod's start path.
func ReplaceFile(path string, data []byte) error {
	return atomicfile.Replace(path, data, 0o644)
}

func writeFileAtomic(path string, data []byte) error {
	return atomicwriter.WriteFile(path, data, 0o644)
}

// ReadJSON reads path into v.
func ReadJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// creatingPrefix names a record directory that is being written; it becomes
// the pod's directory by one rename, so no half-written pod is ever listed.
const creatingPrefix = ".creating-"

// CreateRecord writes a new pod's record: the spec, its objects, its initial
// status, the applied hash and its settings, all at once.
func CreateRecord(l Layout, pod *corev1.Pod, objs *Objects, settings Settings, applied string) (*Record, error) {
	uid := string(pod.UID)
	paths := l.Pod(pod.Namespace, pod.Name, uid)
	tmp := filepath.Join(l.PodsDir(), creatingPrefix+uid)
	err := func() error {
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			return err
		}
		spec := pod.DeepCopy()
		spec.Status = corev1.PodStatus{}
		settings.Version = SettingsVersion
		h := header{Version: RecordVersion, Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: uid, Settings: settings}
		// Secret values stay off --root: they are kept under the run root (in
		// memory where /run is a tmpfs), as the kubelet keeps them only in memory.
		if err := WriteSecrets(paths, objs.Secrets); err != nil {
			return err
		}
		onDisk := &Objects{ConfigMaps: objs.ConfigMaps}
		for name, v := range map[string]any{"pod.json": spec, "objects.json": onDisk, "status.json": pod.Status, "record.json": h} {
			if err := WriteJSON(filepath.Join(tmp, name), v); err != nil {
				return err
			}
		}
		if err := writeFileAtomic(filepath.Join(tmp, filepath.Base(paths.AppliedFile())), []byte(applied)); err != nil {
			return err
		}
		crashpoint.Hit("record:before-rename")
		return os.Rename(tmp, paths.Dir)
	}()
	if err != nil {
		_ = os.RemoveAll(tmp)
		_ = os.Remove(paths.SecretsFile())
		return nil, fmt.Errorf("writing the record of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return &Record{Paths: paths, Pod: pod, Objects: objs, Settings: settings}, nil
}

// RemoveStaleCreations removes record directories whose apply was killed
// before it finished (older than age); nothing else was made for them yet.
func RemoveStaleCreations(l Layout, age time.Duration) {
	entries, _ := os.ReadDir(l.PodsDir())
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && Removing(filepath.Join(l.PodsDir(), e.Name())) {
			// A removal a crash cut short (after the pod's teardown).
			if ns, name, uid := parseDirName(e.Name()); uid != "" {
				_ = os.RemoveAll(l.Pod(ns, name, uid).RunDir)
			}
			_ = RemoveRecordDir(filepath.Join(l.PodsDir(), e.Name()))
			continue
		}
		if !strings.HasPrefix(e.Name(), creatingPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > age {
			_ = os.RemoveAll(filepath.Join(l.PodsDir(), e.Name()))
		}
	}
}

// removingMarker, in a record directory, says it is being removed: its
// readers take it as gone, so none loads a half-removed record (which would
// read as a pod Unknown, its record unreadable). The directory is removed
// in place (renaming it away would confuse the inotify watches the owner
// processes hold on it).
const removingMarker = ".removing"

// Removing reports whether the record directory dir is being removed:
// marked, or already emptied of both pod.json and record.json (the marker's
// own last moment: a record is renamed into place whole, so a live one always
// has one of the two).
func Removing(dir string) bool {
	if _, err := os.Lstat(filepath.Join(dir, removingMarker)); err == nil {
		return true
	}
	for _, f := range []string{"pod.json", "record.json"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return dirExists(dir)
}

// MarkRemoving marks the record directory dir as being removed: from now on
// every reader takes the pod as gone (its removal takes its run directory,
// and with it the delete request, first).
func MarkRemoving(dir string) error {
	err := os.WriteFile(filepath.Join(dir, removingMarker), nil, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// RemoveRecordDir removes a pod's record directory dir: marked first, its
// contents then, the marker last.
func RemoveRecordDir(dir string) error {
	if err := MarkRemoving(dir); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != removingMarker {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return os.RemoveAll(dir)
}

// RemoveInterruptedCreations removes the record directories of namespace/name
// whose apply was killed before it renamed them into place, with the
// Secrets it had written for them under the run root. Call it holding the
// name's reservation: no apply of that name is writing one then.
func RemoveInterruptedCreations(l Layout, namespace, name string) {
	entries, _ := os.ReadDir(l.PodsDir())
	for _, e := range entries {
		uid, ok := strings.CutPrefix(e.Name(), creatingPrefix)
		if !ok {
			continue
		}
		var h header
		dir := filepath.Join(l.PodsDir(), e.Name())
		if ReadJSON(filepath.Join(dir, "record.json"), &h) != nil || h.Namespace != namespace || h.Name != name || h.UID != uid {
			continue
		}
		_ = os.RemoveAll(l.Pod(namespace, name, uid).RunDir)
		_ = os.RemoveAll(dir)
	}
}

// LoadRecord reads a pod record directory. A record it cannot read comes back
// Broken, with what its directory name says about the pod.
func LoadRecord(l Layout, dir string) (*Record, error) {
	r := &Record{Pod: &corev1.Pod{}, Objects: &Objects{}}
	var h header
	herr := ReadJSON(filepath.Join(dir, "record.json"), &h)
	if herr != nil && !errors.Is(herr, fs.ErrNotExist) {
		r.Broken = herr
	}
	if herr == nil && h.Version > RecordVersion {
		r.Broken = fmt.Errorf("record version %d is newer than this podrun's (%d)", h.Version, RecordVersion)
	}
	r.Settings = h.Settings
	if Removing(dir) {
		return nil, fs.ErrNotExist // being deleted
	}
	if err := ReadJSON(filepath.Join(dir, "pod.json"), r.Pod); err != nil {
		if errors.Is(err, fs.ErrNotExist) && (!dirExists(dir) || errors.Is(herr, fs.ErrNotExist)) {
			return nil, err // deleted meanwhile (a record always has one of the two: Removing)
		}
		r.Broken = errors.Join(r.Broken, err)
	}
	// A record without its identity is named from its directory and header.
	if r.Pod.UID == "" || r.Pod.Name == "" {
		ns, name, uid := parseDirName(filepath.Base(dir))
		if herr == nil && h.Name != "" && h.UID != "" {
			ns, name, uid = h.Namespace, h.Name, h.UID
		} else if r.Broken == nil {
			// A header without the identity (null, {}) is as corrupt as an unreadable one.
			r.Broken = fmt.Errorf("the record of %s names no pod", dir)
		}
		r.Pod.Namespace, r.Pod.Name, r.Pod.UID = ns, name, types.UID(uid)
	}
	if err := ReadJSON(filepath.Join(dir, "status.json"), &r.Pod.Status); err != nil {
		r.Broken = errors.Join(r.Broken, err)
	}
	r.Paths = l.Pod(r.Pod.Namespace, r.Pod.Name, string(r.Pod.UID))
	r.Paths.Dir = dir
	if err := ReadJSON(r.Paths.ObjectsFile(), r.Objects); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.Broken = errors.Join(r.Broken, err)
	}
	var secrets []*corev1.Secret
	if err := ReadJSON(r.Paths.SecretsFile(), &secrets); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.Broken = errors.Join(r.Broken, err)
	}
	r.Objects.Secrets = append(r.Objects.Secrets, secrets...)
	if err := ReadJSON(r.Paths.RequestFile(), &r.Request); err == nil && r.Request.Delete != nil && r.Pod.DeletionTimestamp == nil {
		del := r.Request.Delete
		r.Pod.DeletionTimestamp = &del.Timestamp
		r.Pod.DeletionGracePeriodSeconds = &del.GracePeriodSeconds
		if r.Pod.Generation > 0 {
			r.Pod.Generation++ // rest.BeforeDelete: a graceful deletion is a new generation
		}
	}
	return r, nil
}

func dirExists(dir string) bool {
	info, err := os.Stat(dir)
	return err == nil && info.IsDir()
}

// parseDirName splits <namespace>_<name>_<uid>.
func parseDirName(base string) (ns, name, uid string) {
	first := strings.IndexByte(base, '_')
	last := strings.LastIndexByte(base, '_')
	if first < 0 || last <= first {
		return "", base, ""
	}
	return base[:first], base[first+1 : last], base[last+1:]
}

// ListPods returns the records of all pods in a namespace ("" = every namespace),
// sorted by namespace and name. A record that cannot be read is listed Broken;
// it never hides the others.
func ListPods(l Layout, namespace string) ([]*Record, error) {
	entries, err := os.ReadDir(l.PodsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	var out []*Record
	for _, e := range entries {
		parts := strings.SplitN(e.Name(), "_", 3)
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || len(parts) != 3 || (namespace != "" && parts[0] != namespace) {
			continue
		}
		r, err := LoadRecord(l, filepath.Join(l.PodsDir(), e.Name()))
		if err != nil {
			continue // deleted right now
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// FindPod returns the record of namespace/name. The name is a name, never a
// pattern.
func FindPod(l Layout, namespace, name string) (*Record, error) {
	prefix := PodDirName(namespace, name, "")
	entries, _ := os.ReadDir(l.PodsDir())
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || rest == "" || strings.Contains(rest, "_") || !e.IsDir() {
			continue
		}
		r, err := LoadRecord(l, filepath.Join(l.PodsDir(), e.Name()))
		if err != nil {
			continue
		}
		if r.Broken == nil && r.Pod.Name != name {
			continue // another long name with the same directory prefix
		}
		return r, nil
	}
	return nil, errdefs.Class(ErrNotFound, fmt.Errorf("pods %q not found in namespace %q", name, namespace))
}

// startTimeout is how long apply waits for a new supervisor to say it runs.
const startTimeout = 60 * time.Second

// Lost reports whether the pod should be running but its supervisor is not:
// the host rebooted, the supervisor was killed (also while it was building the
// sandbox), or apply was killed before it started one. Nothing runs its
// containers; `podrun apply` of the same manifest starts the pod again.
func (r *Record) Lost() bool {
	if IsTerminal(r.Pod) || SupervisorPid(r.Paths) != 0 {
		return false
	}
	if r.Pod.Status.StartTime != nil {
		return true
	}
	// It had a supervisor (its pid was recorded), which died before the pod
	// started: killed while it built the sandbox.
	if _, err := os.Stat(r.Paths.PidFile()); err == nil {
		return true
	}
	// Never started: lost once apply cannot be starting it any more.
	return time.Since(r.Pod.CreationTimestamp.Time) > startTimeout
}

// View is the pod as `get` and `describe` show it: a lost pod's state is
// Unknown, as the kubelet's is when the node's state cannot be obtained, and
// so is the state of a pod whose record cannot be read, with the reason.
func (r *Record) View() *corev1.Pod {
	p := r.Pod.DeepCopy()
	unknown := func(reason, message string) {
		p.Status.Phase = corev1.PodUnknown
		p.Status.Reason, p.Status.Message = reason, message
		for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for i := range list {
				list[i].Ready = false
			}
		}
	}
	switch {
	case r.Broken != nil:
		unknown("", fmt.Sprintf("the pod's record cannot be read (%v): delete the pod", r.Broken))
	case r.Lost():
		unknown("", "the pod's supervisor is not running (the host rebooted or it was killed): apply the manifest again to restart the pod, or delete it")
	}
	return p
}

// Plan rebuilds the pod plan from the record.
func (r *Record) Plan() (*podspec.Plan, error) {
	if r.Broken != nil {
		return nil, r.Broken
	}
	// apply validated the pod before it wrote the record; as the kubelet, the
	// supervisor does not validate it again (that would link the API
	// server's validation into podrun-shim).
	return podspec.NewPlan(r.Pod, r.Objects.ConfigMaps, r.Objects.Secrets, podspec.Origin{Kind: "Pod"}), nil
}

// Reload re-reads the record from disk.
func (r *Record) Reload(l Layout) (*Record, error) { return LoadRecord(l, r.Paths.Dir) }

// Event is one entry of the pod's event list (kubectl describe's Events).
type Event struct {
	Time    metav1.MicroTime `json:"time"`
	Type    string           `json:"type"` // Normal | Warning
	Reason  string           `json:"reason"`
	Object  string           `json:"object,omitempty"` // e.g. spec.initContainers{init-mydb}
	Message string           `json:"message"`
}

// ReadEvents returns the pod's events in order.
// Those the supervisor could only write under the run root (a full disk) are
// merged in by time.
func ReadEvents(paths PodPaths) ([]Event, error) {
	out, err := readEventsFile(paths.EventsFile())
	if err != nil {
		return nil, err
	}
	spilled, err := readEventsFile(paths.RunEventsFile())
	if err != nil || len(spilled) == 0 {
		return out, err
	}
	out = append(out, spilled...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(&out[j].Time) })
	return out, nil
}

func readEventsFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// EventLog appends events to the pod's events file. An event that cannot be
// written there (the disk under --root is full) goes to the fallback file
// under the run root, so that it is still shown.
type EventLog struct {
	path     string
	fallback string
	now      func() time.Time
}

// NewEventLog appends to path, stamping events with now.
func NewEventLog(path string, now func() time.Time) *EventLog { return &EventLog{path: path, now: now} }

// NewPodEventLogAt appends to path, falling back to fallback (under the run root).
func NewPodEventLogAt(path, fallback string, now func() time.Time) *EventLog {
	return &EventLog{path: path, fallback: fallback, now: now}
}

// Add appends one event.
func (e *EventLog) Add(typ, reason, object, format string, args ...any) {
	ev := Event{Time: metav1.NewMicroTime(e.now()), Type: typ, Reason: reason, Object: object, Message: fmt.Sprintf(format, args...)}
	data, _ := json.Marshal(ev)
	if appendLine(e.path, data) != nil && e.fallback != "" {
		_ = appendLine(e.fallback, data)
	}
}

func appendLine(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil {
		if _, err = f.Write(append(data, '\n')); err != nil {
			_ = f.Truncate(fi.Size()) // no torn line
		}
	}
	return errors.Join(err, f.Close())
}

// WriteSecrets keeps a pod's Secrets under the run root, readable by root only.
func WriteSecrets(paths PodPaths, secrets []*corev1.Secret) error {
	if len(secrets) == 0 {
		return nil
	}
	if err := os.MkdirAll(paths.RunDir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(secrets)
	if err != nil {
		return err
	}
	return atomicwriter.WriteFile(paths.SecretsFile(), data, 0o600)
}

// FindPodByUID returns the record of the pod with this UID (the supervisor
// finds its pod so, whatever its name).
func FindPodByUID(l Layout, uid string) (*Record, error) {
	entries, _ := os.ReadDir(l.PodsDir())
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), "_"+uid) {
			continue
		}
		if r, err := LoadRecord(l, filepath.Join(l.PodsDir(), e.Name())); err == nil {
			return r, nil
		}
	}
	return nil, errdefs.Class(ErrNotFound, fmt.Errorf("no pod has uid %q", uid))
}

// UpdateSpec replaces a pod's stored spec and metadata (an update through
// apply: labels, annotations, images, deadline) and the hash of what was
// applied; the supervisor reads the spec again when asked (Request.Update).
func UpdateSpec(paths PodPaths, pod *corev1.Pod, applied string) error {
	spec := pod.DeepCopy()
	spec.Status = corev1.PodStatus{}
	if err := WriteJSON(paths.SpecFile(), spec); err != nil {
		return fmt.Errorf("updating the record of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return writeFileAtomic(paths.AppliedFile(), []byte(applied))
}

// WarmCodecs builds encoding/json's per-type caches for every file of a pod
// record (its encoders are built eagerly for all nested types, and the decoder
// shares their field lists). A process that will read and write records soon
// but is idle now (a standby supervisor waiting for its pod) calls it, so
// that the reflection over core/v1's types, a few milliseconds of CPU, is not
// paid on the pod's start.
func WarmCodecs() {
	for _, v := range []any{&header{}, &corev1.Pod{}, &Objects{}, &corev1.PodStatus{}} {
		_, _ = json.Marshal(v)
	}
}
