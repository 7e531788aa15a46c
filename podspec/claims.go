//go:build !podrun_lean

package podspec

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The kinds of this file: PersistentVolumeClaim (a host directory, as the
// local-path provisioner makes) and Namespace.
func init() {
	kinds["PersistentVolumeClaim"] = kindInfo{"v1", reflect.TypeOf(corev1.PersistentVolumeClaim{}), func(l *loader, obj runtime.Object, _ Origin) {
		o := obj.(*corev1.PersistentVolumeClaim)
		prepareForCreate(&o.ObjectMeta)
		SetClaimDefaults(o)
		l.m.Claims = append(l.m.Claims, o)
	}}
	kinds["Namespace"] = kindInfo{"v1", reflect.TypeOf(corev1.Namespace{}), func(l *loader, obj runtime.Object, _ Origin) {
		o := obj.(*corev1.Namespace)
		prepareForCreate(&o.ObjectMeta)
		// A Namespace is cluster-scoped: the API server ignores a namespace
		// written in its metadata.
		o.Namespace = ""
		o.Status = corev1.NamespaceStatus{}
		l.m.Namespaces = append(l.m.Namespaces, o)
	}}
}

// SetClaimDefaults is SetDefaults_PersistentVolumeClaim(Spec): volumeMode
// Filesystem; the status is the store's to set.
func SetClaimDefaults(c *corev1.PersistentVolumeClaim) {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.Spec.VolumeMode == nil {
		fs := corev1.PersistentVolumeFilesystem
		c.Spec.VolumeMode = &fs
	}
	c.Status = corev1.PersistentVolumeClaimStatus{}
}

var supportedAccessModes = sets.New(corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod)

// ValidateClaim returns the API server's errors for creating a claim, as
// ValidatePersistentVolumeClaim (pkg/apis/core/validation) words them, and
// the fields podrun cannot honour.
func ValidateClaim(c *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := validateObjectMeta(&c.ObjectMeta, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	if len(c.Spec.AccessModes) == 0 {
		errs = append(errs, field.Required(spec.Child("accessModes"), "at least 1 access mode is required"))
	}
	for _, m := range c.Spec.AccessModes {
		if !supportedAccessModes.Has(m) {
			errs = append(errs, field.NotSupported(spec.Child("accessModes"), m, sets.List(supportedAccessModes)))
		}
	}
	if len(c.Spec.AccessModes) > 1 && sets.New(c.Spec.AccessModes...).Has(corev1.ReadWriteOncePod) {
		errs = append(errs, field.Forbidden(spec.Child("accessModes"), "may not use ReadWriteOncePod with other access modes"))
	}
	storagePath := spec.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storagePath, ""))
	} else if q.Sign() <= 0 {
		errs = append(errs, field.Invalid(storagePath, q.String(), "must be greater than zero"))
	}
	if sc := c.Spec.StorageClassName; sc != nil && *sc != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*sc, false) {
			errs = append(errs, field.Invalid(spec.Child("storageClassName"), *sc, msg))
		}
	}
	if vm := c.Spec.VolumeMode; vm != nil && *vm != corev1.PersistentVolumeFilesystem && *vm != corev1.PersistentVolumeBlock {
		errs = append(errs, field.NotSupported(spec.Child("volumeMode"), *vm, []string{string(corev1.PersistentVolumeBlock), string(corev1.PersistentVolumeFilesystem)}))
	}
	return append(errs, checkUnsupported("PersistentVolumeClaim", reflect.ValueOf(c).Elem())...)
}

// ValidateNamespace returns the API server's errors for creating a Namespace
// (ValidateNamespace: the name is a DNS label).
func ValidateNamespace(ns *corev1.Namespace) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMeta(&ns.ObjectMeta, false, apimachineryvalidation.ValidateNamespaceName, field.NewPath("metadata"))
}
