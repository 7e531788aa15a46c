// Package volumes builds a pod's volumes on the host as the kubelet's volume
// plugins do (emptyDir, hostPath, configMap, secret, downwardAPI, projected),
// computes each container's bind mounts (subPath, subPathExpr, propagation,
// read-only), and tears the volumes down again from nothing but the pod
// directory, so that `podrun delete` works after any crash.
//
// On-disk layout, under the pod's record directory:
//
//	<podDir>/volumes/<name>                         one directory (or tmpfs) per volume
//	<podDir>/volume-subpaths/<vol>/<container>/<i>  bind mounts of subPaths (as the kubelet)
//
// With Options.MemoryDir, secret, downwardAPI and projected volumes (tmpfs)
// and the subPath binds are made under MemoryDir instead, in the same layout,
// so that Secret values are never under the pod directory; Teardown(MemoryDir)
// releases them.
//
// hostPath volumes live where they are on the host, and persistentVolumeClaim
// volumes in the store's claim directories (Options.ClaimPath); Teardown
// never touches either. Image volumes are the runtime's read-only mounts of
// their images, which it passes to Mounts and releases itself.
package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	volumesDirName  = "volumes"
	subPathsDirName = "volume-subpaths"
)

// Kind names a volume source, spelled as in the Pod API.
type Kind string

// The volume kinds podrun supports.
const (
	KindEmptyDir    Kind = "emptyDir"
	KindHostPath    Kind = "hostPath"
	KindConfigMap   Kind = "configMap"
	KindSecret      Kind = "secret"
	KindDownwardAPI Kind = "downwardAPI"
	KindProjected   Kind = "projected"
	KindClaim       Kind = "persistentVolumeClaim"
	KindImage       Kind = "image"
)

// Objects are the ConfigMaps and Secrets a pod's volumes may reference, keyed by
// name (they come from the same manifest, so they are in the pod's namespace).
type Objects struct {
	ConfigMaps map[string]*corev1.ConfigMap
	Secrets    map[string]*corev1.Secret
}

// FieldResolver supplies downward API values (the caller owns the pod's runtime
// facts such as its IP, and the resource arithmetic). metadata.labels and
// metadata.annotations as whole maps are formatted here from the pod itself.
type FieldResolver interface {
	FieldRef(fieldPath string) (string, error)
	ResourceFieldRef(containerName string, ref *corev1.ResourceFieldSelector) (string, error)
}

// Options tell Setup where to build the volumes and what they may contain.
type Options struct {
	// PodDir is the pod's record directory; volumes go to PodDir/volumes/<name>.
	PodDir string
	// MemoryDir, when set, is where the tmpfs-backed secret, downwardAPI and
	// projected volumes (MemoryDir/volumes/<name>) and the subPath binds
	// (MemoryDir/volume-subpaths) go: a directory under the run root, as the
	// kubelet keeps secrets only in memory.
	MemoryDir string
	// Objects holds the ConfigMaps and Secrets referenced by the pod.
	Objects Objects
	// Fields resolves downward API references other than the label and
	// annotation maps; it may be nil when the pod has none.
	Fields FieldResolver
	// NodeAllocatableMemory bounds memory-backed volumes (bytes); 0 means the
	// host's total memory, which is what a node without reservations allocates.
	NodeAllocatableMemory int64
	// PodMemoryLimit is the pod-level memory limit (bytes) the pod cgroup gets,
	// 0 when the pod has none. Like the kubelet, a memory-backed volume is never
	// larger than what the pod may use.
	PodMemoryLimit int64
	// ClaimPath returns the host directory of a persistentVolumeClaim by the
	// claim's name (the store owns where claims live); nil refuses claims.
	ClaimPath func(claimName string) (string, error)
	// UserNSBase, for a pod with hostUsers: false, is the host ID its
	// container ID 0 maps to: its configMap, secret, downwardAPI and
	// projected files are owned by it (and by fsGroup's host ID), as the
	// kubelet writes them with the pod's mapped FsUser and FsGroup
	// (getHostIDsForPod), so that they are root's (and fsGroup's) inside.
	UserNSBase int64
	// Refresh brings the volumes of a running pod up to date, as the
	// kubelet's volume manager remounts each volume on its own: a volume that
	// fails (a non-optional ConfigMap deleted, say) is left as it was and
	// the others are still refreshed; the errors are joined.
	Refresh bool
}

// SetupError is a volume that could not be set up; the kubelet reports it as
// a FailedMount event, "MountVolume.SetUp failed for volume "<Volume>" : <Err>".
type SetupError struct {
	Volume string
	Pod    string
	Err    error
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("setting up volume %q of pod %s: %v", e.Volume, e.Pod, e.Err)
}

func (e *SetupError) Unwrap() error { return e.Err }

// Volume describes one built volume.
type Volume struct {
	Name string
	Kind Kind
	// Path is the host path: the directory under <podDir>/volumes, or the
	// hostPath itself; empty for an image volume (the runtime's mount of
	// the image, given to Mounts).
	Path string
	// Medium is corev1.StorageMediumMemory when Path is a tmpfs.
	Medium corev1.StorageMedium
	// ReadOnly volumes (configMap, secret, downwardAPI, projected) are always
	// mounted read-only, whatever the volumeMount says.
	ReadOnly bool
	// SizeBytes is the tmpfs size for memory-backed volumes (0: kernel default).
	SizeBytes int64

	hostPathType corev1.HostPathType
}

// Set is the result of Setup: the pod's volumes by name.
type Set struct {
	podDir  string
	memDir  string // where subPath binds go: MemoryDir, else podDir
	volumes map[string]*Volume
	order   []string
	// serviceAccount is the service-account volume, nil when the pod opts out.
	serviceAccount *Volume
}

// Volume returns the named volume.
func (s *Set) Volume(name string) (Volume, bool) {
	v, ok := s.volumes[name]
	if !ok {
		return Volume{}, false
	}
	return *v, true
}

// Volumes returns all volumes in the order of pod.spec.volumes.
func (s *Set) Volumes() []Volume {
	out := make([]Volume, 0, len(s.order))
	for _, n := range s.order {
		out = append(out, *s.volumes[n])
	}
	return out
}

// PodDir returns the pod directory the set was built in.
func (s *Set) PodDir() string { return s.podDir }

// Setup builds all volumes of pod under opts.PodDir. It is idempotent: run again
// for the same pod (after a supervisor crash, say), it keeps emptyDir contents and
// existing tmpfs mounts and rewrites configMap/secret/downwardAPI/projected data
// atomically. The notes say what podrun does differently from the kubelet. On error,
// the volumes this call created are torn down again and the error names the volume.
func Setup(pod *corev1.Pod, opts Options) (_ *Set, notes []string, err error) {
	if pod == nil {
		return nil, nil, errors.New("setting up volumes: no pod given")
	}
	if opts.PodDir == "" {
		return nil, nil, fmt.Errorf("setting up volumes for pod %s: no pod directory given", podRef(pod))
	}
	podDir, err := filepath.Abs(opts.PodDir)
	if err != nil {
		return nil, nil, fmt.Errorf("setting up volumes for pod %s: %w", podRef(pod), err)
	}
	volumesDir := filepath.Join(podDir, volumesDirName)
	if err := os.MkdirAll(volumesDir, 0o750); err != nil {
		return nil, nil, fmt.Errorf("setting up volumes for pod %s: %w", podRef(pod), err)
	}

	memVolumesDir := volumesDir
	s := &Set{podDir: podDir, memDir: podDir, volumes: map[string]*Volume{}}
	if opts.MemoryDir != "" {
		if s.memDir, err = filepath.Abs(opts.MemoryDir); err != nil {
			return nil, nil, fmt.Errorf("setting up volumes for pod %s: %w", podRef(pod), err)
		}
		memVolumesDir = filepath.Join(s.memDir, volumesDirName)
		if err := os.MkdirAll(memVolumesDir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("setting up volumes for pod %s: %w", podRef(pod), err)
		}
	}
	var created []string
	defer func() {
		if err == nil || opts.Refresh {
			return
		}
		for i := len(created) - 1; i >= 0; i-- {
			if terr := tearDownDir(created[i]); terr != nil {
				err = errors.Join(err, fmt.Errorf("cleaning up after failed setup: %w", terr))
			}
		}
	}()

	b := &builder{pod: pod, opts: opts}
	var refreshErrs []error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if errs := validation.IsDNS1123Label(v.Name); len(errs) != 0 {
			return nil, nil, fmt.Errorf("setting up volume %q of pod %s: invalid name: %s", v.Name, podRef(pod), strings.Join(errs, "; "))
		}
		if _, dup := s.volumes[v.Name]; dup {
			return nil, nil, fmt.Errorf("setting up volumes of pod %s: duplicate volume name %q", podRef(pod), v.Name)
		}
		vol := &Volume{Name: v.Name}
		dir := filepath.Join(volumesDir, v.Name)
		if v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil {
			dir = filepath.Join(memVolumesDir, v.Name)
		}
		if v.HostPath == nil && v.PersistentVolumeClaim == nil && v.Image == nil {
			if _, statErr := os.Lstat(dir); errors.Is(statErr, os.ErrNotExist) {
				created = append(created, dir)
			}
		}
		vnotes, err := b.build(v, vol, dir)
		if err != nil {
			if opts.Refresh {
				refreshErrs = append(refreshErrs, &SetupError{Volume: v.Name, Pod: podRef(pod), Err: err})
				continue
			}
			return nil, nil, &SetupError{Volume: v.Name, Pod: podRef(pod), Err: err}
		}
		notes = append(notes, vnotes...)
		s.volumes[v.Name] = vol
		s.order = append(s.order, v.Name)
	}
	if err := b.setupServiceAccount(s, volumesDir, &created); err != nil {
		return nil, nil, fmt.Errorf("setting up the service-account volume of pod %s: %w", podRef(pod), err)
	}
	return s, notes, errors.Join(refreshErrs...)
}

// builder carries what every volume plugin needs.
type builder struct {
	pod  *corev1.Pod
	opts Options
}

func (b *builder) build(v *corev1.Volume, vol *Volume, dir string) ([]string, error) {
	src := &v.VolumeSource
	switch {
	case src.EmptyDir != nil:
		vol.Kind, vol.Path, vol.Medium = KindEmptyDir, dir, src.EmptyDir.Medium
		return b.setupEmptyDir(vol, src.EmptyDir)
	case src.HostPath != nil:
		vol.Kind = KindHostPath
		return nil, setupHostPath(vol, src.HostPath)
	case src.ConfigMap != nil:
		vol.Kind, vol.Path, vol.ReadOnly = KindConfigMap, dir, true
		return nil, b.setupConfigMap(vol, src.ConfigMap)
	case src.Secret != nil:
		vol.Kind, vol.Path, vol.ReadOnly, vol.Medium = KindSecret, dir, true, corev1.StorageMediumMemory
		return nil, b.setupSecret(vol, src.Secret)
	case src.DownwardAPI != nil:
		vol.Kind, vol.Path, vol.ReadOnly, vol.Medium = KindDownwardAPI, dir, true, corev1.StorageMediumMemory
		return nil, b.setupDownwardAPI(vol, src.DownwardAPI)
	case src.Projected != nil:
		vol.Kind, vol.Path, vol.ReadOnly, vol.Medium = KindProjected, dir, true, corev1.StorageMediumMemory
		return nil, b.setupProjected(vol, src.Projected)
	case src.PersistentVolumeClaim != nil:
		// The claim's directory itself, bind-mounted as the local-path
		// provisioner's hostPath volume is; readOnly makes every mount of it
		// read-only (the kubelet's volume spec ReadOnly).
		vol.Kind, vol.ReadOnly = KindClaim, src.PersistentVolumeClaim.ReadOnly
		if b.opts.ClaimPath == nil {
			return nil, errors.New("persistentVolumeClaim volumes are not available here")
		}
		p, err := b.opts.ClaimPath(src.PersistentVolumeClaim.ClaimName)
		if err != nil {
			return nil, err
		}
		vol.Path = p
		return nil, nil
	case src.Image != nil:
		// Nothing to set up: the kubelet's image plugin does nothing either
		// (pkg/volume/image), and the runtime mounts the pulled image when a
		// container that uses it is created (Mounts' images); always read-only.
		vol.Kind, vol.ReadOnly = KindImage, true
		return nil, nil
	}
	if name := sourceName(src); name != "" {
		return nil, fmt.Errorf("volume type %s is not supported by podrun (supported: emptyDir, hostPath, configMap, secret, downwardAPI, projected, persistentVolumeClaim, image)", name)
	}
	return nil, errors.New("no volume source set")
}

// sourceName returns the API name of the (first) volume source set in src.
func sourceName(src *corev1.VolumeSource) string {
	rv := reflect.ValueOf(src).Elem()
	for i := 0; i < rv.NumField(); i++ {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			return strings.Split(rv.Type().Field(i).Tag.Get("json"), ",")[0]
		}
	}
	return ""
}

func podRef(pod *corev1.Pod) string {
	ns := pod.Namespace
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + pod.Name
}

// sortedKeys returns m's keys in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
