package podspec

import "strings"

// Origin locates a pod in its manifest.
type Origin struct {
	Doc  int    // 1-based document index
	Line int    // line of the object's first key
	Kind string // "Pod"
	// Prefix is the path of the object inside its document: "" or "items[2].".
	Prefix string
	// InitFromAnnotation names the pre-1.8 annotation that became spec.initContainers.
	InitFromAnnotation string
	// Template says the pod is the spec.template of a workload object.
	Template bool
}

// SourcePath turns a field path of the pod into the path the user wrote.
func (o Origin) SourcePath(p string) string {
	if !o.Template {
		return o.Prefix + p
	}
	switch {
	case p == "metadata.name" || p == "metadata.namespace" || p == "metadata.generateName":
		return o.Prefix + p
	case strings.HasPrefix(p, "metadata"), strings.HasPrefix(p, "spec"):
		return o.Prefix + "spec.template." + p
	}
	return o.Prefix + p
}
