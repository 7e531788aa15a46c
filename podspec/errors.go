package podspec

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// LoadError is one problem found while reading a manifest: a YAML or JSON
// syntax error, an unknown, duplicate or mistyped field, or an unsupported kind.
type LoadError struct {
	File string // file name as given to Load ("-" for stdin)
	Doc  int    // 1-based document index in the file; 0 if not tied to one
	Docs int    // number of documents in the file, to decide whether to name the document
	Line int    // 1-based line in the file; 0 if unknown
	Col  int    // 1-based column; 0 if unknown
	Path string // field path inside the document, e.g. spec.containers[0].imagee
	Msg  string
}

// Error prints `FILE:LINE: PATH: MSG` for field problems and `FILE:LINE:COL: MSG`
// for syntax problems; the document is named when the file holds several.
func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 && e.Path == "" {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Doc > 0 && e.Docs > 1 {
		fmt.Fprintf(&b, " (document %d)", e.Doc)
	}
	return b.String()
}

// ValidationError holds every field error of one object, in the API server's
// format. Error prints one line per problem: `FILE: pod "NAME": PATH: Type: detail`.
type ValidationError struct {
	File   string
	Kind   string // "pod", "configmap", "secret", "job"
	Name   string
	Errors field.ErrorList
}

func (e *ValidationError) Error() string {
	lines := make([]string, 0, len(e.Errors))
	for _, fe := range e.Errors {
		lines = append(lines, fmt.Sprintf("%s: %s %q: %s", e.File, e.Kind, e.Name, fe.Error()))
	}
	return strings.Join(lines, "\n")
}

// ErrorList collects every problem of a manifest so that they are reported
// together, one per line. errors.Is/As look into its members.
type ErrorList []error

func (l ErrorList) Error() string {
	lines := make([]string, 0, len(l))
	for _, e := range l {
		lines = append(lines, e.Error())
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the members to errors.Is and errors.As.
func (l ErrorList) Unwrap() []error { return l }

// IsInvalid reports whether err is (or wraps) a problem with the manifest
// itself, as opposed to an I/O error: the CLI exits with status 2 for these.
func IsInvalid(err error) bool {
	var le *LoadError
	var ve *ValidationError
	return errors.As(err, &le) || errors.As(err, &ve)
}
