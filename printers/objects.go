package printers

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
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
