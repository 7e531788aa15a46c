package printers

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// DescribeConfigMap is kubectl's describe of a ConfigMap (describe.go
// ConfigMapDescriber): its data whole, binary data by size, keys sorted.
func DescribeConfigMap(w io.Writer, cm *corev1.ConfigMap) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", cm.Name)
	fmt.Fprintf(tw, "Namespace:\t%s\n", cm.Namespace)
	fmt.Fprintf(tw, "Labels:\t%s\n", mapLines(cm.Labels, "="))
	fmt.Fprintf(tw, "Annotations:\t%s\n", mapLines(cm.Annotations, ": "))
	fmt.Fprintf(tw, "\nData\n====\n")
	for _, k := range sortedKeys(cm.Data) {
		fmt.Fprintf(tw, "%s:\n----\n%s\n\n", k, cm.Data[k])
	}
	fmt.Fprintf(tw, "\nBinaryData\n====\n")
	for _, k := range sortedKeys(cm.BinaryData) {
		fmt.Fprintf(tw, "%s: %d bytes\n", k, len(cm.BinaryData[k]))
	}
	fmt.Fprintf(tw, "\nEvents:\t<none>\n")
	_ = tw.Flush()
}

// DescribeSecret is kubectl's describe of a Secret (SecretDescriber): the
// keys with their sizes, never the values.
func DescribeSecret(w io.Writer, s *corev1.Secret) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", s.Name)
	fmt.Fprintf(tw, "Namespace:\t%s\n", s.Namespace)
	fmt.Fprintf(tw, "Labels:\t%s\n", mapLines(s.Labels, "="))
	fmt.Fprintf(tw, "Annotations:\t%s\n", mapLines(s.Annotations, ": "))
	typ := s.Type
	if typ == "" {
		typ = corev1.SecretTypeOpaque
	}
	fmt.Fprintf(tw, "\nType:\t%s\n", typ)
	fmt.Fprintf(tw, "\nData\n====\n")
	for _, k := range sortedKeys(s.Data) {
		fmt.Fprintf(tw, "%s:\t%d bytes\n", k, len(s.Data[k]))
	}
	_ = tw.Flush()
}

// DescribeClaim is kubectl's describe of a PersistentVolumeClaim
// (PersistentVolumeClaimDescriber): binding, capacity, access modes and the
// pods that use it.
func DescribeClaim(w io.Writer, c *corev1.PersistentVolumeClaim, usedBy []string) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", c.Name)
	fmt.Fprintf(tw, "Namespace:\t%s\n", c.Namespace)
	sc := ""
	if c.Spec.StorageClassName != nil {
		sc = *c.Spec.StorageClassName
	}
	fmt.Fprintf(tw, "StorageClass:\t%s\n", sc)
	status := string(c.Status.Phase)
	if c.DeletionTimestamp != nil {
		status = fmt.Sprintf("Terminating (lasts %s)", c.DeletionTimestamp.Format("2006-01-02T15:04:05Z"))
	}
	fmt.Fprintf(tw, "Status:\t%s\n", status)
	fmt.Fprintf(tw, "Volume:\t%s\n", c.Spec.VolumeName)
	fmt.Fprintf(tw, "Labels:\t%s\n", mapLines(c.Labels, "="))
	fmt.Fprintf(tw, "Annotations:\t%s\n", mapLines(c.Annotations, ": "))
	fmt.Fprintf(tw, "Finalizers:\t%v\n", c.Finalizers)
	capacity := ""
	if q, ok := c.Status.Capacity[corev1.ResourceStorage]; ok {
		capacity = q.String()
	}
	fmt.Fprintf(tw, "Capacity:\t%s\n", capacity)
	fmt.Fprintf(tw, "Access Modes:\t%s\n", AccessModes(c.Status.AccessModes))
	mode := corev1.PersistentVolumeFilesystem
	if c.Spec.VolumeMode != nil {
		mode = *c.Spec.VolumeMode
	}
	fmt.Fprintf(tw, "VolumeMode:\t%s\n", mode)
	if len(usedBy) == 0 {
		fmt.Fprintf(tw, "Used By:\t<none>\n")
	} else {
		fmt.Fprintf(tw, "Used By:\t%s\n", strings.Join(usedBy, "\n\t"))
	}
	fmt.Fprintf(tw, "Events:\t<none>\n")
	_ = tw.Flush()
}

// AccessModes is kubectl's GetAccessModesAsString: the short forms in a
// fixed order (RWO, ROX, RWX, RWOP), comma-separated.
func AccessModes(modes []corev1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		if slices.Contains(modes, m.mode) {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

// DescribeNamespace is kubectl's describe of a Namespace (NamespaceDescriber);
// podrun has no resource quotas or limit ranges.
func DescribeNamespace(w io.Writer, ns *corev1.Namespace) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", ns.Name)
	fmt.Fprintf(tw, "Labels:\t%s\n", mapLines(ns.Labels, "="))
	fmt.Fprintf(tw, "Annotations:\t%s\n", mapLines(ns.Annotations, ": "))
	phase := ns.Status.Phase
	if phase == "" {
		phase = corev1.NamespaceActive
	}
	fmt.Fprintf(tw, "Status:\t%s\n", phase)
	fmt.Fprintf(tw, "\nNo resource quota.\n\nNo LimitRange resource.\n")
	_ = tw.Flush()
}

// DescribePriorityClass is kubectl's describe of a PriorityClass (describe.go
// describePriorityClass): the annotations on one line as labels.FormatLabels
// writes them, then the events (none are recorded for a class).
func DescribePriorityClass(w io.Writer, pc *schedulingv1.PriorityClass) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", pc.Name)
	fmt.Fprintf(tw, "Value:\t%v\n", pc.Value)
	fmt.Fprintf(tw, "GlobalDefault:\t%v\n", pc.GlobalDefault)
	policy := ""
	if pc.PreemptionPolicy != nil {
		policy = string(*pc.PreemptionPolicy)
	}
	fmt.Fprintf(tw, "PreemptionPolicy:\t%s\n", policy)
	fmt.Fprintf(tw, "Description:\t%s\n", pc.Description)
	fmt.Fprintf(tw, "Annotations:\t%s\n", labels.FormatLabels(pc.Annotations))
	fmt.Fprintf(tw, "Events:\t<none>\n")
	_ = tw.Flush()
}
