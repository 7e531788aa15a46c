//go:build !podrun_lean

package podspec

import (
	"fmt"
	"path"
	"reflect"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// UnsupportedField is a field the API server accepts but podrun cannot honour
// on one host; a manifest that sets it is rejected with a Forbidden error
// "not supported by podrun: REASON" at its path. Fields podrun merely ignores
// (nodeSelector, affinity, tolerations, priority…) are not listed.
type UnsupportedField struct {
	Kind string // "Pod" or "Job"
	// Path is the field path, "[*]" standing for every index and {a,b} for
	// alternatives.
	Path   string
	When   string // the values rejected, in words; "" means any value
	Reason string
	match  func(v reflect.Value) bool // nil: isSet
}

// Unsupported is the one list of fields podrun rejects. The README table is
// generated from it (UnsupportedMarkdown); a test keeps the two in sync.
var Unsupported = []UnsupportedField{
	{Kind: "Pod", Path: "spec.os.name", When: "windows", Reason: "podrun runs Linux containers", match: stringIs("windows")},
	{Kind: "Pod", Path: "spec.runtimeClassName", Reason: "there is one runtime, runc"},
	{Kind: "Pod", Path: "spec.overhead", Reason: "pod overhead comes from a RuntimeClass"},
	{Kind: "Pod", Path: "spec.resources.{requests,limits}", When: "hugepages-*", Reason: "pod-level hugepages are not supported; set them on the containers", match: hasHugePages},
	{Kind: "Pod", Path: "spec.resourceClaims", Reason: "dynamic resource allocation needs a cluster"},
	{Kind: "Pod", Path: "spec.schedulingGates", Reason: "there is no scheduler to remove the gates, the pod would never start"},
	{Kind: "Pod", Path: "spec.schedulingGroup", Reason: "alpha field, needs the scheduler"},
	{Kind: "Pod", Path: "spec.evictionResponders", Reason: "alpha field, needs the eviction API"},
	{Kind: "Pod", Path: "spec.securityContext.windowsOptions.hostProcess", When: "true", Reason: "Windows HostProcess containers", match: boolIs(true)},
	{Kind: "Pod", Path: "spec.volumes[*].ephemeral", Reason: "generic ephemeral volumes need a storage provisioner; use emptyDir"},
	{Kind: "Pod", Path: "spec.volumes[*].csi", Reason: "CSI drivers are not supported"},
	{Kind: "Pod", Path: "spec.volumes[*].gitRepo", Reason: "deprecated volume type; clone in an init container"},
	{Kind: "Pod", Path: "spec.volumes[*].{nfs,iscsi,rbd,cephfs,glusterfs,fc,flexVolume,flocker,quobyte,storageos,scaleIO,portworxVolume,photonPersistentDisk,vsphereVolume,gcePersistentDisk,awsElasticBlockStore,azureDisk,azureFile,cinder}",
		Reason: "network and cloud volume plugins are not supported; mount on the host and use hostPath"},
	{Kind: "Pod", Path: "spec.volumes[*].hostPath.path", When: "relative", Reason: "a host path must be absolute: the kubelet would fail to mount it, forever", match: relativePath},
	{Kind: "Pod", Path: "spec.volumes[*].projected.sources[*].{serviceAccountToken,clusterTrustBundle,podCertificate}", Reason: "needs the API server"},
	{Kind: "Pod", Path: "spec.{initContainers,containers,ephemeralContainers}[*].volumeDevices", Reason: "raw block devices are not supported (claims are host directories)"},
	{Kind: "Pod", Path: "spec.{initContainers,containers}[*].resources.claims", Reason: "dynamic resource allocation needs a cluster"},
	{Kind: "Pod", Path: "spec.{initContainers,containers,ephemeralContainers}[*].volumeMounts[*].mountPath", When: "relative", Reason: "runc mounts at absolute paths only", match: relativePath},
	{Kind: "Pod", Path: "spec.{initContainers,containers,ephemeralContainers}[*].securityContext.windowsOptions.hostProcess", When: "true", Reason: "Windows HostProcess containers", match: boolIs(true)},
	{Kind: "Job", Path: "spec.managedBy", Reason: "Jobs managed by another controller"},
	{Kind: "PersistentVolumeClaim", Path: "spec.volumeMode", When: "Block", Reason: "a claim is a host directory; raw block devices are not supported", match: stringIs(string(corev1.PersistentVolumeBlock))},
	{Kind: "PersistentVolumeClaim", Path: "spec.{dataSource,dataSourceRef}", Reason: "claims are provisioned empty; cloning and snapshots need a CSI driver"},
	{Kind: "PersistentVolumeClaim", Path: "spec.{selector,volumeName}", Reason: "there are no PersistentVolumes to bind to: every claim gets a new directory"},
}

// isSet reports whether a field was given: a non-nil pointer, a non-empty
// list or map, a non-zero value.
func isSet(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() > 0
	case reflect.Pointer:
		return !v.IsNil()
	}
	return !v.IsZero()
}

// hasHugePages matches a resource list with a hugepages-* entry.
func hasHugePages(v reflect.Value) bool {
	if v.Kind() != reflect.Map {
		return false
	}
	for _, k := range v.MapKeys() {
		if strings.HasPrefix(k.String(), corev1.ResourceHugePagesPrefix) {
			return true
		}
	}
	return false
}

func stringIs(want string) func(reflect.Value) bool {
	return func(v reflect.Value) bool {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return false
			}
			v = v.Elem()
		}
		return v.Kind() == reflect.String && v.String() == want
	}
}

func boolIs(want bool) func(reflect.Value) bool {
	return func(v reflect.Value) bool {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return false
			}
			v = v.Elem()
		}
		return v.Kind() == reflect.Bool && v.Bool() == want
	}
}

func intAbove(n int64) func(reflect.Value) bool {
	return func(v reflect.Value) bool {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return false
			}
			v = v.Elem()
		}
		return v.CanInt() && v.Int() > n
	}
}

func relativePath(v reflect.Value) bool {
	return v.Kind() == reflect.String && v.String() != "" && !path.IsAbs(v.String())
}

// CheckUnsupported returns a Forbidden error for every field of the pod that
// podrun cannot honour (the Pod rows of Unsupported).
func CheckUnsupported(pod *corev1.Pod) field.ErrorList {
	errs := checkUnsupported("Pod", reflect.ValueOf(pod).Elem())
	if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		// The pod's user namespace is made per container, after the pod's
		// namespaces (pinned by podrun, owned by the host's user namespace)
		// are joined: a shared PID namespace's /proc and the network
		// namespace's sysctls are not the pod's to set up.
		if p := pod.Spec.ShareProcessNamespace; p != nil && *p {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "shareProcessNamespace"), "not supported by podrun: a shared PID namespace with hostUsers: false"))
		}
		if sc := pod.Spec.SecurityContext; sc != nil && len(sc.Sysctls) > 0 {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "securityContext", "sysctls"), "not supported by podrun: sysctls with hostUsers: false"))
		}
	}
	return errs
}

func checkUnsupportedJob(job *batchv1.Job) field.ErrorList {
	return checkUnsupported("Job", reflect.ValueOf(job).Elem())
}

func checkUnsupported(kind string, obj reflect.Value) field.ErrorList {
	var errs field.ErrorList
	for _, u := range Unsupported {
		if u.Kind != kind {
			continue
		}
		walkPattern(obj, splitPattern(u.Path), nil, func(v reflect.Value, p *field.Path) {
			match := u.match
			if match == nil {
				match = isSet
			}
			if match(v) {
				errs = append(errs, field.Forbidden(p, "not supported by podrun: "+u.Reason))
			}
		})
	}
	return errs
}

// splitPattern splits a path pattern at the dots outside braces.
func splitPattern(p string) []string {
	var segs []string
	depth, start := 0, 0
	for i, r := range p {
		switch r {
		case '{':
			depth++
		case '}':
			depth--
		case '.':
			if depth == 0 {
				segs = append(segs, p[start:i])
				start = i + 1
			}
		}
	}
	return append(segs, p[start:])
}

// walkPattern visits the values matching the pattern segments, with their paths.
func walkPattern(v reflect.Value, segs []string, p *field.Path, visit func(reflect.Value, *field.Path)) {
	if len(segs) == 0 {
		visit(v, p) // a pointer stays one: a set but empty struct is set
		return
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	seg := segs[0]
	each := strings.HasSuffix(seg, "[*]")
	seg = strings.TrimSuffix(seg, "[*]")
	names := []string{seg}
	if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
		names = strings.Split(seg[1:len(seg)-1], ",")
	}
	if v.Kind() != reflect.Struct {
		return
	}
	for _, name := range names {
		f, ok := fieldByJSONName(v, name)
		if !ok {
			panic(fmt.Sprintf("podspec: Unsupported names unknown field %q of %s", name, v.Type()))
		}
		child := field.NewPath(name)
		if p != nil {
			child = p.Child(name)
		}
		if !each {
			walkPattern(f, segs[1:], child, visit)
			continue
		}
		for i := 0; i < f.Len(); i++ {
			walkPattern(f.Index(i), segs[1:], child.Index(i), visit)
		}
	}
}

// fieldByJSONName finds a struct field by its JSON name, looking into
// inline structs.
func fieldByJSONName(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name {
			return v.Field(i), true
		}
		if (f.Anonymous && tag == "") || strings.Contains(","+opts+",", ",inline,") {
			inner := v.Field(i)
			if inner.Kind() == reflect.Struct {
				if fv, ok := fieldByJSONName(inner, name); ok {
					return fv, true
				}
			}
		}
	}
	return reflect.Value{}, false
}

// UnsupportedMarkdown renders Unsupported as a Markdown table for the README.
func UnsupportedMarkdown() string {
	var b strings.Builder
	b.WriteString("| Kind | Field | Rejected values | Why |\n|---|---|---|---|\n")
	for _, u := range Unsupported {
		when := u.When
		if when == "" {
			when = "any"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", u.Kind, u.Path, when, u.Reason)
	}
	return b.String()
}
