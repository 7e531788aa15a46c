//go:build !podrun_lean

package podspec

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// allowedEphemeralContainerFields are the fields of an ephemeral container
// the API server lets be set (pkg/apis/core/validation
// allowedEphemeralContainerFields): an ephemeral container is no part of the
// pod's workload, so it has no ports, probes, lifecycle hooks, resources or
// restart policy.
var allowedEphemeralContainerFields = sets.New(
	"Name", "Image", "Command", "Args", "WorkingDir", "EnvFrom", "Env", "VolumeMounts", "VolumeDevices",
	"TerminationMessagePath", "TerminationMessagePolicy", "ImagePullPolicy", "SecurityContext",
	"Stdin", "StdinOnce", "TTY",
)

const ephemeralForbiddenMsg = "cannot be set for an Ephemeral Container"

// validateEphemeralContainers is the API server's validateEphemeralContainers:
// each is a container (validateContainerCommon), its name unique across every
// kind of container, its target one of the pod's init or app containers,
// only the allowed fields set and no subPath.
func validateEphemeralContainers(ecs []corev1.EphemeralContainer, containers, inits []corev1.Container, vols map[string]corev1.VolumeSource,
	claims sets.Set[string], fldPath *field.Path, restartPolicy corev1.RestartPolicy, hostUsers bool) field.ErrorList {
	var errs field.ErrorList
	others, all := sets.New[string](), sets.New[string]()
	for _, c := range append(append([]corev1.Container{}, containers...), inits...) {
		others.Insert(c.Name)
		all.Insert(c.Name)
	}
	for i := range ecs {
		ec := &ecs[i]
		p := fldPath.Index(i)
		c := (*corev1.Container)(&ec.EphemeralContainerCommon)
		errs = append(errs, validateContainerCommon(c, vols, claims, p, restartPolicy, hostUsers)...)
		if len(c.Image) != len(strings.TrimSpace(c.Image)) { // validateContainerOnlyForPod
			errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
		if all.Has(ec.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), ec.Name))
		} else {
			all.Insert(ec.Name)
		}
		if ec.TargetContainerName != "" && !others.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
		errs = append(errs, allowedFieldsOnly(ec.EphemeralContainerCommon, p)...)
		for j, vm := range ec.VolumeMounts {
			if vm.SubPath != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPath"), ephemeralForbiddenMsg))
			}
			if vm.SubPathExpr != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPathExpr"), ephemeralForbiddenMsg))
			}
		}
	}
	return errs
}

// allowedFieldsOnly is validateFieldAllowList: a Forbidden error for every
// field of the ephemeral container that is set and not allowed.
func allowedFieldsOnly(ec corev1.EphemeralContainerCommon, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	t, v := reflect.TypeOf(ec), reflect.ValueOf(ec)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if allowedEphemeralContainerFields.Has(f.Name) || v.Field(i).IsZero() {
			continue
		}
		r, n := utf8.DecodeRuneInString(f.Name)
		errs = append(errs, field.Forbidden(p.Child(string(unicode.ToLower(r))+f.Name[n:]), ephemeralForbiddenMsg))
	}
	return errs
}

// DiffEphemeralContainers checks the ephemeralcontainers subresource's update
// of old (the stored pod) to the ephemeral containers of updated, as the API
// server's ValidatePodEphemeralContainersUpdate does (nothing else of updated
// is taken: dropNonEphemeralContainerUpdates), and names the ephemeral
// containers it adds. Existing ones may be neither changed nor removed; new
// ones are validated as the pod's containers are, and must ask for nothing
// podrun cannot honour. updated's ephemeral containers must be defaulted
// (SetDefaults). The error is the API server's, naming the pod.
func DiffEphemeralContainers(old, updated *corev1.Pod) ([]string, error) {
	specPath := field.NewPath("spec")
	ecPath := specPath.Child("ephemeralContainers")
	spec := ApplyEphemeralContainers(old, updated).Spec
	vols, _ := validateVolumes(spec.Volumes, specPath.Child("volumes"))
	claims := sets.New[string]()
	for _, c := range spec.ResourceClaims {
		claims.Insert(c.Name)
	}
	hostUsers := spec.HostUsers == nil || *spec.HostUsers
	errs := validateEphemeralContainers(spec.EphemeralContainers, spec.Containers, spec.InitContainers, vols, claims, ecPath, spec.RestartPolicy, hostUsers)
	// ValidatePodSpec's last check, of the new ephemeral containers too.
	errs = append(errs, validateFileKeyRefVolumes(&spec, specPath)...)
	// Only the ephemeral containers' rows of Unsupported: the rest of the
	// pod was checked when it was created.
	for _, e := range CheckUnsupported(&corev1.Pod{Spec: corev1.PodSpec{EphemeralContainers: spec.EphemeralContainers}}) {
		if strings.HasPrefix(e.Field, ecPath.String()) {
			errs = append(errs, e)
		}
	}
	byName := map[string]*corev1.EphemeralContainer{}
	for i := range spec.EphemeralContainers {
		byName[spec.EphemeralContainers[i].Name] = &spec.EphemeralContainers[i]
	}
	for _, o := range old.Spec.EphemeralContainers {
		n, ok := byName[o.Name]
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(ecPath, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", o.Name)))
		case !equality.Semantic.DeepEqual(o, *n):
			errs = append(errs, field.Forbidden(ecPath, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%v", o.Name, cmp.Diff(o, *n))))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("The Pod %q is invalid: %s", old.Name, errs.ToAggregate().Error())
	}
	existing := sets.New[string]()
	for _, o := range old.Spec.EphemeralContainers {
		existing.Insert(o.Name)
	}
	var added []string
	for _, ec := range spec.EphemeralContainers {
		if !existing.Has(ec.Name) {
			added = append(added, ec.Name)
		}
	}
	return added, nil
}

// ApplyEphemeralContainers is old with updated's ephemeral containers and
// nothing else of updated (the ephemeralcontainers strategy's
// dropNonEphemeralContainerUpdates).
func ApplyEphemeralContainers(old, updated *corev1.Pod) *corev1.Pod {
	out := old.DeepCopy()
	out.Spec.EphemeralContainers = nil
	for _, ec := range updated.Spec.EphemeralContainers {
		out.Spec.EphemeralContainers = append(out.Spec.EphemeralContainers, *ec.DeepCopy())
	}
	return out
}
