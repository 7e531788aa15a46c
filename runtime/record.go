package runtime

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"github.com/moby/sys/atomicwriter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrNotFound is returned when no pod matches.
var ErrNotFound = errors.New("not found")

// Objects are the ConfigMaps and Secrets that came with the pod in its manifest.
type Objects struct {
	ConfigMaps []*corev1.ConfigMap `json:"configMaps,omitempty"`
	Secrets    []*corev1.Secret    `json:"secrets,omitempty"`
}

// DeleteRequest is written by `podrun delete` for the supervisor to act on.
type DeleteRequest struct {
	Timestamp          metav1.Time `json:"timestamp"`
	GracePeriodSeconds int64       `json:"gracePeriodSeconds"`
}

// Record is everything on disk about one pod.
type Record struct {
	Paths PodPaths
	// Pod is the stored spec with the latest status written by the supervisor.
	Pod     *corev1.Pod
	Objects *Objects
}

// Key is namespace/name.
func (r *Record) Key() string { return r.Pod.Namespace + "/" + r.Pod.Name }

func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return atomicwriter.WriteFile(path, data, 0o644)
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// createRecord writes a new pod's record directory.
func createRecord(paths PodPaths, pod *corev1.Pod, objs *Objects) error {
	if err := os.MkdirAll(paths.Dir, 0o700); err != nil {
		return fmt.Errorf("creating pod record %s: %w", paths.Dir, err)
	}
	spec := pod.DeepCopy()
	spec.Status = corev1.PodStatus{}
	if err := writeJSON(paths.SpecFile(), spec); err != nil {
		return fmt.Errorf("writing pod record: %w", err)
	}
	if err := writeJSON(paths.ObjectsFile(), &Objects{ConfigMaps: objs.ConfigMaps}); err != nil {
		return fmt.Errorf("writing pod record: %w", err)
	}
	if err := writeSecrets(paths, objs.Secrets); err != nil {
		return fmt.Errorf("writing pod record: %w", err)
	}
	return writeJSON(paths.StatusFile(), pod.Status)
}

// writeSecrets keeps the pod's Secrets under the run root, readable by root only.
func writeSecrets(paths PodPaths, secrets []*corev1.Secret) error {
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

// loadRecord reads a pod record directory.
func loadRecord(l Layout, dir string) (*Record, error) {
	pod := &corev1.Pod{}
	if err := readJSON(filepath.Join(dir, "pod.json"), pod); err != nil {
		return nil, err
	}
	// The status may be missing for an instant while apply creates the record.
	if err := readJSON(filepath.Join(dir, "status.json"), &pod.Status); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	r := &Record{Paths: l.Pod(pod.Namespace, pod.Name, string(pod.UID)), Pod: pod, Objects: &Objects{}}
	if err := readJSON(r.Paths.ObjectsFile(), r.Objects); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var secrets []*corev1.Secret
	if err := readJSON(r.Paths.SecretsFile(), &secrets); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	r.Objects.Secrets = append(r.Objects.Secrets, secrets...)
	var del DeleteRequest
	if err := readJSON(r.Paths.DeleteFile(), &del); err == nil && pod.DeletionTimestamp == nil {
		pod.DeletionTimestamp = &del.Timestamp
		pod.DeletionGracePeriodSeconds = &del.GracePeriodSeconds
	}
	return r, nil
}

// ListPods returns the records of all pods in a namespace ("" = every namespace),
// sorted by namespace and name.
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
		if !e.IsDir() || len(parts) != 3 || (namespace != "" && parts[0] != namespace) {
			continue
		}
		r, err := loadRecord(l, filepath.Join(l.PodsDir(), e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // being created or deleted right now
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// FindPod returns the record of namespace/name.
func FindPod(l Layout, namespace, name string) (*Record, error) {
	matches, _ := filepath.Glob(filepath.Join(l.PodsDir(), PodDirName(namespace, name, "*")))
	for _, dir := range matches {
		r, err := loadRecord(l, dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	return nil, fmt.Errorf("pods %q %w in namespace %q", name, ErrNotFound, namespace)
}

// Lost reports whether the pod should be running but its supervisor is not:
// the host rebooted, or the supervisor was killed. Nothing runs its
// containers; `podrun apply` of the same manifest starts the pod again.
func (r *Record) Lost() bool {
	return r.Pod.Status.StartTime != nil && !isTerminal(r.Pod) && SupervisorPid(r.Paths) == 0
}

// View is the pod as `get` and `describe` show it: a lost pod's state is
// Unknown, as the kubelet's is when the node's state cannot be obtained.
func (r *Record) View() *corev1.Pod {
	p := r.Pod.DeepCopy()
	if r.Lost() {
		p.Status.Phase = corev1.PodUnknown
		p.Status.Message = "the pod's supervisor is not running (the host rebooted or it was killed): apply the manifest again to restart the pod, or delete it"
		for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for i := range list {
				list[i].Ready = false
			}
		}
	}
	return p
}

// Reload re-reads the record from disk.
func (r *Record) Reload(l Layout) (*Record, error) { return loadRecord(l, r.Paths.Dir) }

// SupervisorPid returns the pid of the pod's supervisor when it is alive, else 0.
// A live supervisor holds an exclusive lock on its lock file for its whole life.
func SupervisorPid(paths PodPaths) int {
	lock := flock.New(paths.LockFile())
	ok, err := lock.TryRLock()
	if err != nil {
		return 0 // no lock file: never started, or cleaned up
	}
	if ok {
		_ = lock.Unlock()
		return 0
	}
	data, err := os.ReadFile(paths.PidFile())
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

// Event is one entry of the pod's event list (kubectl describe's Events).
type Event struct {
	Time    metav1.MicroTime `json:"time"`
	Type    string           `json:"type"` // Normal | Warning
	Reason  string           `json:"reason"`
	Object  string           `json:"object,omitempty"` // e.g. spec.initContainers{init-mydb}
	Message string           `json:"message"`
}

// ReadEvents returns the pod's events in order: those in the record and those
// the supervisor could only write under the run root (a full disk).
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

// eventLog appends events to the pod's events file. An event that cannot be
// written there (the disk under --root is full) goes to the fallback file
// under the run root, so that it is still shown.
type eventLog struct {
	path     string
	fallback string
	now      func() time.Time
}

func (e *eventLog) add(typ, reason, object, format string, args ...any) {
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
