package store

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NamespaceKind is core/v1 Namespace, cluster-scoped. podrun keeps the
// Namespaces that were applied; a namespace that holds objects exists
// whether or not it has one (podrun creates namespaces implicitly), and the
// namespaces a cluster always has exist too (SystemNamespaces).
var NamespaceKind = &Kind{
	Name: "Namespace", Plural: "namespaces", Aliases: []string{"namespace", "ns"},
	ClusterScoped: true,
	newObject:     func() object { return &corev1.Namespace{} },
	same: func(a, b object) bool {
		x, y := a.(*corev1.Namespace), b.(*corev1.Namespace)
		return reflect.DeepEqual(x.Spec, y.Spec) && sameMeta(x, y)
	},
	immutable: func(object) bool { return false },
	prepare: func(_ Layout, old, obj object) error {
		ns := obj.(*corev1.Namespace)
		// The label the API server sets on every namespace
		// (NamespaceDefaultLabelName), and the namespace lifecycle's
		// finalizer and status.
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
		ns.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
		ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
		if old != nil {
			ns.Status = old.(*corev1.Namespace).Status
			ns.DeletionTimestamp = old.GetDeletionTimestamp()
		}
		return nil
	},
}

// SystemNamespaces exist on every cluster; the first three cannot be
// deleted (the NamespaceLifecycle admission plugin's immortal namespaces).
var SystemNamespaces = []string{"default", "kube-node-lease", "kube-public", "kube-system"}

// ImmortalNamespace reports whether a namespace may never be deleted.
func ImmortalNamespace(name string) bool {
	return name == "default" || name == "kube-public" || name == "kube-system"
}

// UsedNamespaces returns the namespaces that hold a pod or an object of a
// namespaced kind, sorted.
func UsedNamespaces(l Layout) []string {
	seen := map[string]bool{}
	if entries, err := os.ReadDir(l.PodsDir()); err == nil {
		for _, e := range entries {
			if parts := strings.SplitN(e.Name(), "_", 3); e.IsDir() && !strings.HasPrefix(e.Name(), ".") && len(parts) == 3 {
				seen[parts[0]] = true
			}
		}
	}
	for _, k := range Kinds {
		if k.ClusterScoped {
			continue
		}
		dirs, _ := filepath.Glob(filepath.Join(l.objectsDir(k), "*", k.Plural, "*.json"))
		for _, d := range dirs {
			seen[filepath.Base(filepath.Dir(filepath.Dir(d)))] = true
		}
	}
	out := make([]string, 0, len(seen))
	for ns := range seen {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// MarkNamespaceTerminating records that a stored Namespace is being deleted
// (deletionTimestamp, phase Terminating); a namespace without a Namespace
// object has nothing to mark.
func (l Layout) MarkNamespaceTerminating(name string) error {
	lock, err := l.LockName("", NamespaceKind.Plural, name)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	o, err := l.Get(NamespaceKind, "", name)
	if err != nil {
		return nil
	}
	ns := o.(*corev1.Namespace)
	if ns.DeletionTimestamp == nil {
		now := metav1.Now()
		ns.DeletionTimestamp = &now
	}
	ns.Status.Phase = corev1.NamespaceTerminating
	return l.writeObject(NamespaceKind, l.objectPath(NamespaceKind, ns.GetNamespace(), ns.GetName()), ns, nil, nil)
}
