package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

// checkTerminating refuses, as the NamespaceLifecycle admission plugin
// does, new objects in a namespace that is being deleted.
func checkTerminating(l store.Layout, in *loaded) error {
	seen := map[string]bool{}
	var nss []string
	add := func(ns string) {
		if !seen[ns] {
			seen[ns] = true
			nss = append(nss, ns)
		}
	}
	for _, p := range in.plans {
		add(p.Pod.Namespace)
	}
	for _, o := range in.configMaps {
		add(o.Namespace)
	}
	for _, o := range in.secrets {
		add(o.Namespace)
	}
	for _, o := range in.services {
		add(o.Namespace)
	}
	for _, o := range in.claims {
		add(o.Namespace)
	}
	for _, ns := range nss {
		if o, err := l.Get(store.NamespaceKind, "", ns); err == nil && o.GetDeletionTimestamp() != nil {
			return failed("namespaces %q is forbidden: unable to create new content in namespace %s because it is being terminated", ns, ns)
		}
	}
	return nil
}

// namespaces lists the namespaces that exist: the stored Namespaces, those
// every cluster has (created with the store), and those that hold objects
// without a Namespace object (Active, with no creation time).
func namespaces(l store.Layout) []*corev1.Namespace {
	stored, _ := l.List(store.NamespaceKind, "")
	byName := map[string]*corev1.Namespace{}
	for _, o := range stored {
		byName[o.GetName()] = o.(*corev1.Namespace)
	}
	created := l.Created()
	for _, n := range append(slices.Clone(store.SystemNamespaces), store.UsedNamespaces(l)...) {
		if byName[n] == nil {
			byName[n] = &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{corev1.LabelMetadataName: n}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			}
			if slices.Contains(store.SystemNamespaces, n) && !created.IsZero() {
				// Made with the cluster (the API server's system namespaces).
				byName[n].CreationTimestamp = metav1.NewTime(created)
			}
		}
	}
	out := make([]*corev1.Namespace, 0, len(byName))
	for _, ns := range byName {
		out = append(out, ns)
	}
	slices.SortFunc(out, func(a, b *corev1.Namespace) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// getNamespace is one namespace, or kubectl's not-found error.
func getNamespace(l store.Layout, name string) (*corev1.Namespace, error) {
	for _, ns := range namespaces(l) {
		if ns.Name == name {
			return ns, nil
		}
	}
	return nil, fmt.Errorf("namespaces %q not found", name)
}

// objectHeader is kubectl's header for a kind's table.
func objectHeader(k *store.Kind) []string {
	switch k {
	case store.SecretKind:
		return []string{"NAME", "TYPE", "DATA", "AGE"}
	case store.ClaimKind:
		return []string{"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"}
	case store.NamespaceKind:
		return []string{"NAME", "STATUS", "AGE"}
	case store.ControllerRevisionKind:
		return []string{"NAME", "CONTROLLER", "REVISION", "AGE"}
	case store.PriorityClassKind:
		return []string{"NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"}
	}
	return []string{"NAME", "DATA", "AGE"}
}

// claimRow is kubectl's printPersistentVolumeClaim (1.31+).
func claimRow(c *corev1.PersistentVolumeClaim, now time.Time) []string {
	phase := string(c.Status.Phase)
	if c.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	capacity, modes := "", ""
	if c.Spec.VolumeName != "" {
		q := c.Status.Capacity[corev1.ResourceStorage]
		capacity = q.String()
		modes = accessModesString(c.Status.AccessModes)
	}
	class := ""
	if v, ok := c.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		class = v
	} else if c.Spec.StorageClassName != nil {
		class = *c.Spec.StorageClassName
	}
	vac := "<unset>"
	if c.Spec.VolumeAttributesClassName != nil && *c.Spec.VolumeAttributesClassName != "" {
		vac = *c.Spec.VolumeAttributesClassName
	}
	return []string{c.Name, phase, c.Spec.VolumeName, capacity, modes, class, vac, printers.Since(c.CreationTimestamp, now)}
}

// accessModesString is kubectl's GetAccessModesAsString: RWO,ROX,RWX,RWOP in that order.
func accessModesString(modes []corev1.PersistentVolumeAccessMode) string {
	return printers.AccessModes(modes)
}

// namespaceRow is kubectl's printNamespace.
func namespaceRow(ns *corev1.Namespace, now time.Time) []string {
	age := "<unknown>"
	if !ns.CreationTimestamp.IsZero() {
		age = printers.Since(ns.CreationTimestamp, now)
	}
	return []string{ns.Name, string(ns.Status.Phase), age}
}

// deleteNamespaces deletes namespaces as the namespace controller does:
// the namespace shows Terminating, every pod in it stops within its grace
// period, then every object of every namespaced kind of the store goes
// (claims once their pods are gone), then the Namespace itself. It returns
// when they are gone, as kubectl delete waits.
func deleteNamespaces(l store.Layout, names []string, opts supervisor.DeleteOptions, ignoreNotFound bool) []error {
	var errs []error
	for _, name := range names {
		if store.ImmortalNamespace(name) {
			errs = append(errs, fmt.Errorf("namespaces %q is forbidden: this namespace may not be deleted", name))
			continue
		}
		if _, err := getNamespace(l, name); err != nil {
			if !ignoreNotFound {
				errs = append(errs, err)
			}
			continue
		}
		if err := deleteNamespace(l, name, opts); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Printf("namespace %q deleted\n", name)
	}
	return errs
}

func deleteNamespace(l store.Layout, name string, opts supervisor.DeleteOptions) error {
	if err := l.MarkNamespaceTerminating(name); err != nil {
		return err
	}
	recs, err := store.ListPods(l, name)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, rec := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := supervisor.Delete(l, rec, opts); err != nil && !errors.Is(err, store.ErrNotFound) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, rec := range keptPods(recs) {
		// The namespace controller waits for every pod to go; podrun has
		// none running, so the command that deletes the namespace finishes it.
		errs = append(errs, fmt.Errorf("pod %q is kept for its finalizers %v: remove them, then delete the namespace again", rec.Pod.Name, rec.Pod.Finalizers))
	}
	if len(errs) > 0 {
		return fmt.Errorf("deleting namespace %s: %w", name, errors.Join(errs...))
	}
	for _, k := range store.Kinds {
		if k.ClusterScoped {
			continue
		}
		objs, err := l.List(k, name)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if err := l.Remove(k, name, o.GetName()); err != nil && !errors.Is(err, store.ErrNotFound) {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("deleting namespace %s: %w", name, errors.Join(errs...))
	}
	if err := l.Remove(store.NamespaceKind, "", name); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// checkUpdates finds the updates Put would refuse (the pods' are found by
// supervisor.Reservation.Conflicts).
func checkUpdates(l store.Layout, in *loaded) error {
	var errs []error
	for _, cm := range in.configMaps {
		errs = append(errs, l.CheckPut(store.ConfigMapKind, cm.DeepCopy()))
	}
	for _, s := range in.secrets {
		errs = append(errs, l.CheckPut(store.SecretKind, s.DeepCopy()))
	}
	for _, pvc := range in.claims {
		errs = append(errs, l.CheckPut(store.ClaimKind, pvc.DeepCopy()))
	}
	for _, pc := range in.priorityClasses {
		errs = append(errs, l.CheckPut(store.PriorityClassKind, pc.DeepCopy()))
	}
	return errors.Join(errs...)
}
