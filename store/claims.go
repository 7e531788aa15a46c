package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/internal/errdefs"
)

// PVCProtectionFinalizer is the finalizer the API server's admission plugin
// puts on every claim: a claim a pod uses is deleted only once no pod does.
const PVCProtectionFinalizer = "kubernetes.io/pvc-protection"

// ClaimKind is core/v1 PersistentVolumeClaim: a named host directory,
// <root>/volumes/<namespace>/<claim>, made when the claim is created (Bound
// at once, as the local-path provisioner's WaitForFirstConsumer claims are by
// their first pod) and removed when the claim is deleted and no pod uses it.
var ClaimKind = &Kind{
	Name: "PersistentVolumeClaim", Plural: "persistentvolumeclaims", Aliases: []string{"persistentvolumeclaim", "pvc"},
	newObject: func() object { return &corev1.PersistentVolumeClaim{} },
	same: func(a, b object) bool {
		x, y := a.(*corev1.PersistentVolumeClaim), b.(*corev1.PersistentVolumeClaim)
		return reflect.DeepEqual(claimSpec(x), claimSpec(y)) && sameMeta(x, y)
	},
	immutable: func(object) bool { return false },
}

func init() { ClaimKind.prepare, ClaimKind.remove = prepareClaim, removeClaim }

// claimSpec is the spec a user writes: the bound volume's name is the store's.
func claimSpec(c *corev1.PersistentVolumeClaim) corev1.PersistentVolumeClaimSpec {
	s := *c.Spec.DeepCopy()
	s.VolumeName = ""
	return s
}

// ClaimDir is the directory of a claim.
func (l Layout) ClaimDir(namespace, name string) string {
	return filepath.Join(l.Root, "volumes", namespace, fileName(name, maxFileName))
}

// prepareClaim binds a new claim to a new directory, or keeps a stored
// claim's binding when it is applied again. A bound claim's spec is
// immutable, as the API server's ValidatePersistentVolumeClaimUpdate says; a
// larger request is a resize, which a host directory's storage class (like
// local-path's) does not allow.
func prepareClaim(l Layout, oldObj, obj object) error {
	c := obj.(*corev1.PersistentVolumeClaim)
	if oldObj != nil {
		old := oldObj.(*corev1.PersistentVolumeClaim)
		oldSpec, newSpec := claimSpec(old), claimSpec(c)
		if !reflect.DeepEqual(oldSpec, newSpec) {
			oldSpec.Resources.Requests, newSpec.Resources.Requests = nil, nil
			oldSpec.VolumeAttributesClassName, newSpec.VolumeAttributesClassName = nil, nil
			if !reflect.DeepEqual(oldSpec, newSpec) {
				return errdefs.Invalid(fmt.Errorf("The PersistentVolumeClaim %q is invalid: spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims", c.Name))
			}
			if !reflect.DeepEqual(old.Spec.Resources.Requests, c.Spec.Resources.Requests) {
				return errdefs.Invalid(fmt.Errorf("persistentvolumeclaims %q is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize", c.Name))
			}
		}
		c.Spec.VolumeName = old.Spec.VolumeName
		c.Status = old.Status
		c.Finalizers = old.Finalizers
		c.DeletionTimestamp = old.DeletionTimestamp
		return nil
	}
	c.Spec.VolumeName = "pvc-" + string(c.UID)
	if !slices.Contains(c.Finalizers, PVCProtectionFinalizer) {
		c.Finalizers = append(c.Finalizers, PVCProtectionFinalizer)
	}
	c.Status = corev1.PersistentVolumeClaimStatus{
		Phase:       corev1.ClaimBound,
		AccessModes: c.Spec.AccessModes,
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: c.Spec.Resources.Requests[corev1.ResourceStorage]},
	}
	dir := l.ClaimDir(c.Namespace, c.Name)
	// A directory left by a claim of the same name whose removal failed is
	// not this claim's: start empty, as a new volume does.
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("provisioning the volume of claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("provisioning the volume of claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	// The local-path provisioner makes its directories with mode 0777, so
	// that any user a pod runs as can write.
	if err := os.Mkdir(dir, 0o777); err != nil {
		return fmt.Errorf("provisioning the volume of claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	return os.Chmod(dir, 0o777)
}

// removeClaim deletes a claim: at once when no pod uses it, else it is
// marked for deletion (Terminating) and goes when the last pod that uses it
// is deleted (ReleaseClaims), as the pvc-protection controller does.
func removeClaim(l Layout, obj object) error {
	c := obj.(*corev1.PersistentVolumeClaim)
	if ClaimInUse(l, c.Namespace, c.Name) {
		if c.DeletionTimestamp == nil {
			now := metav1.Now()
			c.DeletionTimestamp = &now
			return l.writeObject(ClaimKind, l.objectPath(ClaimKind, c.GetNamespace(), c.GetName()), c, nil, nil)
		}
		return nil
	}
	if err := os.RemoveAll(l.ClaimDir(c.Namespace, c.Name)); err != nil {
		return fmt.Errorf("removing the volume of claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	return os.Remove(l.objectPath(ClaimKind, c.Namespace, c.Name))
}

// ClaimInUse reports whether a pod of the namespace uses the claim. Every
// pod that exists counts, finished or not, as for the pvc-protection
// controller (a pod is done with its volumes when it is deleted); a record
// that cannot be read counts too.
func ClaimInUse(l Layout, namespace, name string) bool {
	recs, _ := ListPods(l, namespace)
	for _, r := range recs {
		if r.Broken != nil {
			return true
		}
		if slices.Contains(PodClaims(r.Pod), name) {
			return true
		}
	}
	return false
}

// PodClaims are the names of the claims a pod's volumes use.
func PodClaims(pod *corev1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

// ReleaseClaims removes the claims of a namespace that were deleted while a
// pod used them and that no pod uses any more. Pod deletion calls it; so
// does listing claims, which finishes what a crash interrupted.
func ReleaseClaims(l Layout, namespace string) error {
	objs, err := l.List(ClaimKind, namespace)
	if err != nil {
		return err
	}
	var errs []error
	for _, o := range objs {
		if o.GetDeletionTimestamp() == nil || ClaimInUse(l, o.GetNamespace(), o.GetName()) {
			continue
		}
		err := l.Remove(ClaimKind, o.GetNamespace(), o.GetName())
		if err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Claim returns a stored claim, or an error of class not found worded as the
// scheduler's volume binding plugin words it.
func (l Layout) Claim(namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	o, err := l.Get(ClaimKind, namespace, name)
	if errors.Is(err, ErrNotFound) {
		return nil, errdefs.Class(ErrNotFound, fmt.Errorf("persistentvolumeclaim %q not found", name))
	}
	if err != nil {
		return nil, err
	}
	return o.(*corev1.PersistentVolumeClaim), nil
}
