package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podrun/podrun/internal/errdefs"
)

// Kind is one kind of object the store keeps: its name as written in
// manifests, kubectl's resource names for it, and how to make and compare its
// objects. Pods have their own records (record.go); the kinds here are
// host-wide objects that pods refer to, and new kinds join this table.
type Kind struct {
	Name    string   // ConfigMap
	Plural  string   // configmaps
	Aliases []string // configmap, cm
	// newObject returns an empty object of the kind.
	newObject func() object
	// same reports whether two objects hold the same content (data, type,
	// labels); metadata the store sets does not count.
	same func(a, b object) bool
	// immutable reports whether an object may not change any more.
	immutable func(o object) bool
	// immutableUpdate, when set, lists what an update of an immutable
	// object changes that it may not (nil: it may change nothing).
	immutableUpdate func(old, cur object) field.ErrorList
	// Group and Version are the kind's API group ("" for core) and version.
	Group, Version string
	// update, when set, carries over from the stored object what an apply
	// does not set (the status the controllers wrote) and bumps the
	// generation when the spec changed, as the API server's update strategy
	// of the kind does.
	update func(old, obj object)
	// ClusterScoped kinds (Namespace) have no namespace:
	// <root>/objects/<plural>/<name>.json.
	ClusterScoped bool
	// prepare, when set, completes an object before it is stored: old is the
	// stored object it replaces, nil on create (the UID is set by then). An
	// error refuses the change.
	prepare func(l Layout, old, obj object) error
	// remove, when set, deletes the object (under its name's reservation)
	// instead of removing its file: a claim's directory goes with it, or
	// later while a pod uses it.
	remove func(l Layout, obj object) error
	// keepLive, when set, carries over to an applied object the podspec.KeptFields
	// its apply configuration does not own.
	keepLive func(old, obj object, owned map[string]bool)
}

// APIVersion is the kind's apiVersion ("v1", "apps/v1").
func (k *Kind) APIVersion() string {
	if k.Group == "" {
		return "v1"
	}
	return k.Group + "/" + k.Version
}

// Resource is kubectl's name of the kind in its output: "configmap",
// "deployment.apps" (kubectl apply's "deployment.apps/web created").
func (k *Kind) Resource() string {
	if k.Group == "" {
		return strings.ToLower(k.Name)
	}
	return strings.ToLower(k.Name) + "." + k.Group
}

// GroupResource is the API server's name of the kind's resource in its
// errors: "configmaps", "deployments.apps" (schema.GroupResource.String(),
// which apierrors.NewNotFound and NewAlreadyExists print).
func (k *Kind) GroupResource() string {
	if k.Group == "" {
		return k.Plural
	}
	return k.Plural + "." + k.Group
}

// object is what the store needs of an API object.
type object interface {
	metav1.Object
}

// Kinds is the table of object kinds the store keeps besides pods: these
// core/v1 kinds, then the workload kinds (workloads.go, which podrun-shim,
// built with podrun_lean, does not link: it never looks kinds up).
var Kinds = []*Kind{ConfigMapKind, SecretKind, ServiceKind, ClaimKind, NamespaceKind}

// ConfigMapKind and SecretKind are the core/v1 kinds pods take data from.
var (
	ConfigMapKind = &Kind{
		Name: "ConfigMap", Plural: "configmaps", Aliases: []string{"configmap", "cm"},
		newObject: func() object { return &corev1.ConfigMap{} },
		same: func(a, b object) bool {
			x, y := a.(*corev1.ConfigMap), b.(*corev1.ConfigMap)
			return reflect.DeepEqual(x.Data, y.Data) && reflect.DeepEqual(x.BinaryData, y.BinaryData) &&
				reflect.DeepEqual(x.Immutable, y.Immutable) && sameMeta(x, y)
		},
		immutable: func(o object) bool { im := o.(*corev1.ConfigMap).Immutable; return im != nil && *im },
		// The API server's ValidateConfigMapUpdate: only the metadata of an
		// immutable ConfigMap may change.
		immutableUpdate: func(a, b object) field.ErrorList {
			old, cur := a.(*corev1.ConfigMap), b.(*corev1.ConfigMap)
			var errs field.ErrorList
			if cur.Immutable == nil || !*cur.Immutable {
				errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
			}
			if !reflect.DeepEqual(cur.Data, old.Data) {
				errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
			}
			if !reflect.DeepEqual(cur.BinaryData, old.BinaryData) {
				errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableMsg))
			}
			return errs
		},
	}
	SecretKind = &Kind{
		Name: "Secret", Plural: "secrets", Aliases: []string{"secret"},
		newObject: func() object { return &corev1.Secret{} },
		same: func(a, b object) bool {
			x, y := a.(*corev1.Secret), b.(*corev1.Secret)
			return reflect.DeepEqual(x.Data, y.Data) && reflect.DeepEqual(x.StringData, y.StringData) &&
				x.Type == y.Type && reflect.DeepEqual(x.Immutable, y.Immutable) && sameMeta(x, y)
		},
		immutable: func(o object) bool { im := o.(*corev1.Secret).Immutable; return im != nil && *im },
		// ValidateSecretUpdate: data compared once stringData is merged in,
		// as the API server converts it before it validates.
		immutableUpdate: func(a, b object) field.ErrorList {
			old, cur := a.(*corev1.Secret), b.(*corev1.Secret)
			var errs field.ErrorList
			if cur.Immutable == nil || !*cur.Immutable {
				errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
			}
			if !reflect.DeepEqual(secretData(cur), secretData(old)) {
				errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
			}
			return errs
		},
	}
)

const immutableMsg = "field is immutable when `immutable` is set"

// secretData is a Secret's data with its stringData merged in.
func secretData(s *corev1.Secret) map[string][]byte {
	if len(s.StringData) == 0 {
		return s.Data
	}
	out := map[string][]byte{}
	for k, v := range s.Data {
		out[k] = v
	}
	for k, v := range s.StringData {
		out[k] = []byte(v)
	}
	return out
}

// checkImmutable refuses a change of an immutable object as the API server
// does: with the kind's field errors, or without them, any change; worded as
// kubectl prints an Invalid error (cmdutil checkErr: "The %s %q is invalid"
// with the status details' kind, never its group).
func (k *Kind) checkImmutable(old, obj object) error {
	if !k.immutable(old) {
		return nil
	}
	if k.immutableUpdate == nil {
		return errdefs.Invalid(fmt.Errorf("The %s %q is invalid: the data of an immutable %s cannot be changed: delete it and create it again", k.Name, obj.GetName(), k.Name))
	}
	if errs := k.immutableUpdate(old, obj); len(errs) > 0 {
		return errdefs.Invalid(fmt.Errorf("The %s %q is invalid: %v", k.Name, obj.GetName(), errs.ToAggregate()))
	}
	return nil
}

func sameMeta(a, b object) bool {
	return reflect.DeepEqual(a.GetLabels(), b.GetLabels()) && reflect.DeepEqual(a.GetAnnotations(), b.GetAnnotations())
}

// KindFor finds a kind by any of kubectl's names for it (configmaps, cm, ConfigMap…).
func KindFor(word string) (*Kind, bool) {
	for _, k := range Kinds {
		if strings.EqualFold(word, k.Name) || word == k.Plural {
			return k, true
		}
		for _, a := range k.Aliases {
			if word == a {
				return k, true
			}
		}
	}
	return nil, false
}

// objectVersion is the version of the object records this podrun writes.
const objectVersion = 1

// objectRecord is the file of one stored object.
type objectRecord struct {
	Version int             `json:"version"`
	Kind    string          `json:"kind"`
	Object  json.RawMessage `json:"object"`
	// Settings are the host settings of the pods a workload object makes
	// (those of the command that applied it), as a pod's record keeps its own.
	Settings *Settings `json:"settings,omitempty"`
	// Applied are the fields of podspec.KeptFields the last apply's manifest set
	// (its part of kubectl's last-applied-configuration that podrun needs).
	Applied []string `json:"applied,omitempty"`
}

// ObjectsDir holds the host-wide objects: <root>/objects/<namespace>/<plural>/<name>.json.
func (l Layout) ObjectsDir() string { return filepath.Join(l.Root, "objects") }

// objectsDir is where objects of kind k live: Secrets under the run root (in
// memory where /run is a tmpfs), never under --root, as the kubelet keeps
// Secret values only in memory; a reboot forgets them until they are applied again.
func (l Layout) objectsDir(k *Kind) string {
	if k == SecretKind {
		return filepath.Join(l.RunRoot, "objects")
	}
	return l.ObjectsDir()
}

// KindDir is the directory that holds the objects of kind k in a namespace:
// a waiter watches it for the objects' changes (every write is a rename into it).
func (l Layout) KindDir(k *Kind, namespace string) string {
	return filepath.Join(l.objectsDir(k), namespace, k.Plural)
}

// StoreRoot is the directory under which KindDir(k, …) lies (--root or --run-root).
func (l Layout) StoreRoot(k *Kind) string { return filepath.Dir(l.objectsDir(k)) }

// ObjectPath is the file of one object of kind k.
func (l Layout) ObjectPath(k *Kind, namespace, name string) string {
	return l.objectPath(k, namespace, name)
}

func (l Layout) objectPath(k *Kind, namespace, name string) string {
	if k.ClusterScoped {
		return filepath.Join(l.objectsDir(k), k.Plural, fileName(name, maxFileName-len(".json"))+".json")
	}
	return filepath.Join(l.objectsDir(k), namespace, k.Plural, fileName(name, maxFileName-len(".json"))+".json")
}

func (l Layout) readObject(k *Kind, path string) (object, error) {
	var rec objectRecord
	if err := ReadJSON(path, &rec); err != nil {
		return nil, err
	}
	if rec.Version > objectVersion {
		return nil, fmt.Errorf("reading %s: record version %d is newer than this podrun's (%d)", path, rec.Version, objectVersion)
	}
	obj := k.newObject()
	if err := json.Unmarshal(rec.Object, obj); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return obj, nil
}

// Put creates or updates an object under its name's reservation and says
// what it did as kubectl apply does: "created", "configured" or "unchanged".
func (l Layout) Put(k *Kind, obj object) (string, error) {
	return l.PutWithSettings(k, obj, nil)
}

// PutWithSettings is Put that also records the host settings of the pods
// the object makes (a workload); nil keeps those recorded before.
func (l Layout) PutWithSettings(k *Kind, obj object, settings *Settings) (string, error) {
	return l.put(k, obj, settings, nil)
}

// PutApplied is PutWithSettings for `apply`: set are the fields of
// podspec.KeptFields its manifest sets. A field of them that neither this manifest
// nor the last applied one set keeps its live value (a Deployment paused by
// `rollout pause`); one that either sets takes the manifest's value, its
// default when the manifest no longer has it, as kubectl apply's three-way
// merge patches it.
func (l Layout) PutApplied(k *Kind, obj object, settings *Settings, set []string) (string, error) {
	if set == nil {
		set = []string{}
	}
	return l.put(k, obj, settings, set)
}

func (l Layout) put(k *Kind, obj object, settings *Settings, set []string) (string, error) {
	lock, err := l.LockName(obj.GetNamespace(), k.Plural, obj.GetName())
	if err != nil {
		return "", err
	}
	defer lock.Unlock()
	path := l.objectPath(k, obj.GetNamespace(), obj.GetName())
	action := "created"
	var prev objectRecord
	_ = ReadJSON(path, &prev)
	if settings == nil {
		settings = prev.Settings
	}
	applied := prev.Applied
	if set != nil {
		applied = set
	}
	old, err := l.readObject(k, path)
	switch {
	case err == nil && old.GetName() == obj.GetName():
		owned := map[string]bool{}
		for _, f := range applied {
			owned[f] = true
		}
		if set != nil {
			for _, f := range prev.Applied {
				owned[f] = true
			}
		}
		if k.keepLive != nil {
			k.keepLive(old, obj, owned)
		}
		if k.same(old, obj) {
			return "unchanged", nil
		}
		if err := k.checkImmutable(old, obj); err != nil {
			return "", err
		}
		obj.SetUID(old.GetUID())
		obj.SetCreationTimestamp(old.GetCreationTimestamp())
		if k.update != nil {
			k.update(old, obj)
		}
		if k.prepare != nil {
			if err := k.prepare(l, old, obj); err != nil {
				return "", err
			}
			if k.same(old, obj) {
				return "unchanged", nil
			}
		}
		action = "configured"
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		// A record that cannot be read is replaced by the new one.
	}
	if action == "created" {
		obj.SetUID(types.UID(uuid.NewString()))
		obj.SetCreationTimestamp(metav1.Now())
		if k.update != nil {
			obj.SetGeneration(1)
		}
		if k.prepare != nil {
			if err := k.prepare(l, nil, obj); err != nil {
				return "", err
			}
		}
	}
	return action, l.writeObject(k, path, obj, settings, applied)
}

func (l Layout) writeObject(k *Kind, path string, obj object, settings *Settings, applied []string) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := WriteJSON(path, objectRecord{Version: objectVersion, Kind: k.Name, Object: data, Settings: settings, Applied: applied}); err != nil {
		return fmt.Errorf("storing %s %s/%s: %w", k.Name, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// Update changes a stored object under its name's reservation: change gets
// the object as stored and edits it in place (a controller's status, `scale`'s
// replicas); its error leaves the object as it was. The recorded settings stay.
func (l Layout) Update(k *Kind, namespace, name string, change func(obj object) error) error {
	lock, err := l.LockName(namespace, k.Plural, name)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	obj, err := l.Get(k, namespace, name)
	if err != nil {
		return err
	}
	path := l.objectPath(k, namespace, name)
	var prev objectRecord
	_ = ReadJSON(path, &prev)
	if err := change(obj); err != nil {
		return err
	}
	return l.writeObject(k, path, obj, prev.Settings, prev.Applied)
}

// ObjectSettings returns the host settings recorded with an object (nil when
// none were).
func (l Layout) ObjectSettings(k *Kind, namespace, name string) *Settings {
	var rec objectRecord
	if err := ReadJSON(l.objectPath(k, namespace, name), &rec); err != nil {
		return nil
	}
	return rec.Settings
}

// Object is an API object the store keeps (metav1.Object).
type Object = object

// NewObject returns an empty object of the kind.
func (k *Kind) NewObject() Object { return k.newObject() }

// CheckPut says whether Put would refuse obj (an immutable object changed,
// a claim's spec changed), without changing anything, so that apply refuses
// a manifest before it stores any of it.
func (l Layout) CheckPut(k *Kind, obj object) error {
	old, err := l.Get(k, obj.GetNamespace(), obj.GetName())
	if err != nil || k.same(old, obj) {
		return nil
	}
	if err := k.checkImmutable(old, obj); err != nil {
		return err
	}
	if k.prepare != nil {
		// On an update, prepare only reads (claims, namespaces).
		return k.prepare(l, old, obj)
	}
	return nil
}

// Get returns one object, or an error of class not found.
func (l Layout) Get(k *Kind, namespace, name string) (object, error) {
	obj, err := l.readObject(k, l.objectPath(k, namespace, name))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && obj.GetName() != name) {
		if k.ClusterScoped {
			return nil, errdefs.Class(errdefs.ErrNotFound, fmt.Errorf("%s %q not found", k.GroupResource(), name))
		}
		return nil, errdefs.Class(errdefs.ErrNotFound, fmt.Errorf("%s %q not found in namespace %q", k.GroupResource(), name, namespace))
	}
	return obj, err
}

// List returns the objects of a kind in a namespace ("" = every namespace),
// sorted by namespace and name; one that cannot be read is left out.
func (l Layout) List(k *Kind, namespace string) ([]object, error) {
	pattern := filepath.Join(l.objectsDir(k), "*", k.Plural, "*.json")
	if k.ClusterScoped {
		pattern = filepath.Join(l.objectsDir(k), k.Plural, "*.json")
	} else if namespace != "" {
		pattern = filepath.Join(l.objectsDir(k), namespace, k.Plural, "*.json")
	}
	paths, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []object
	for _, p := range paths {
		if obj, err := l.readObject(k, p); err == nil {
			out = append(out, obj)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out, nil
}

// Remove deletes an object under its name's reservation.
func (l Layout) Remove(k *Kind, namespace, name string) error {
	lock, err := l.LockName(namespace, k.Plural, name)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	obj, err := l.Get(k, namespace, name)
	if err != nil {
		return err
	}
	if k.remove != nil {
		return k.remove(l, obj)
	}
	return os.Remove(l.objectPath(k, namespace, name))
}

// ConfigMaps returns the stored ConfigMaps of a namespace by name.
func (l Layout) ConfigMaps(namespace string) map[string]*corev1.ConfigMap {
	objs, _ := l.List(ConfigMapKind, namespace)
	out := map[string]*corev1.ConfigMap{}
	for _, o := range objs {
		out[o.GetName()] = o.(*corev1.ConfigMap)
	}
	return out
}

// Secrets returns the stored Secrets of a namespace by name.
func (l Layout) Secrets(namespace string) map[string]*corev1.Secret {
	objs, _ := l.List(SecretKind, namespace)
	out := map[string]*corev1.Secret{}
	for _, o := range objs {
		out[o.GetName()] = o.(*corev1.Secret)
	}
	return out
}
