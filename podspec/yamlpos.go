//go:build !podrun_lean

package podspec

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	yaml "sigs.k8s.io/yaml/goyaml.v3"

	"github.com/podrun/podrun/internal/lazyregexp"
)

// The API server decodes YAML with sigs.k8s.io/yaml (go-yaml v2, YAML 1.1), which
// gives no field paths and few positions. podspec decodes with the same library
// so that it accepts and rejects exactly the same documents, and parses each
// document a second time with go-yaml v3 only to map field paths to lines.

// posTree is a go-yaml v3 node tree of one document, used to find positions.
type posTree struct {
	root      *yaml.Node // the document's top-level node; nil when v3 could not parse it
	lineDelta int        // added to node lines to get file lines
}

// pathSeg is one step of a field path: a key or an index.
type pathSeg struct {
	key     string
	index   int
	isIndex bool
}

// parseFieldPath splits "spec.containers[0].env[1].name" or "metadata.labels[app]"
// into steps.
func parseFieldPath(p string) []pathSeg {
	var segs []pathSeg
	for len(p) > 0 {
		switch p[0] {
		case '.':
			p = p[1:]
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				segs = append(segs, pathSeg{key: p[1:]})
				return segs
			}
			inner := p[1:end]
			if n, err := strconv.Atoi(inner); err == nil {
				segs = append(segs, pathSeg{index: n, isIndex: true})
			} else {
				segs = append(segs, pathSeg{key: inner})
			}
			p = p[end+1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			segs = append(segs, pathSeg{key: p[:end]})
			p = p[end:]
		}
	}
	return segs
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// mappingValue finds key in a mapping node; it returns the key node and the value node.
func mappingValue(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	m = resolveAlias(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// keyName returns the name of the last key on path as written in the
// document (a key may contain dots), or the path's last step.
func (t *posTree) keyName(path string) string {
	segs := parseFieldPath(path)
	if len(segs) == 0 {
		return path
	}
	last := segs[len(segs)-1].key
	if t == nil || t.root == nil {
		return last
	}
	// Try the longest dotted tail whose parent exists and holds that key.
	for i := 0; i < len(segs)-1; i++ {
		tail, ok := joinKeys(segs[i:])
		if !ok {
			continue
		}
		parent := t.node(pathString(segs[:i]))
		if k, _ := mappingValue(parent, tail); k != nil {
			return tail
		}
	}
	return last
}

func pathString(segs []pathSeg) string {
	var b strings.Builder
	for _, s := range segs {
		if s.isIndex {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

// pos returns the file position of the deepest node on path that exists
// (the key for mapping entries), so that an unknown field points at its key.
func (t *posTree) pos(path string) (line, col int) {
	if t == nil {
		return 0, 0
	}
	if t.root == nil {
		return t.lineDelta + 1, 0 // the document's first line
	}
	n := t.root
	line, col = n.Line, n.Column
	segs := parseFieldPath(path)
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		cur := resolveAlias(n)
		if cur == nil {
			break
		}
		if s.isIndex {
			if cur.Kind != yaml.SequenceNode || s.index < 0 || s.index >= len(cur.Content) {
				break
			}
			n = cur.Content[s.index]
			line, col = n.Line, n.Column
			continue
		}
		k, v := mappingValue(cur, s.key)
		// A key may itself contain dots (labels, annotations): try the
		// longest run of remaining key steps joined with ".".
		for j := len(segs) - 1; k == nil && j > i; j-- {
			joined, ok := joinKeys(segs[i : j+1])
			if !ok {
				continue
			}
			if k, v = mappingValue(cur, joined); k != nil {
				i = j
			}
		}
		if k == nil {
			break
		}
		n = v
		line, col = k.Line, k.Column
	}
	return line + t.lineDelta, col
}

func joinKeys(segs []pathSeg) (string, bool) {
	parts := make([]string, len(segs))
	for i, s := range segs {
		if s.isIndex {
			return "", false
		}
		parts[i] = s.key
	}
	return strings.Join(parts, "."), true
}

// node returns the node at path, or nil.
func (t *posTree) node(path string) *yaml.Node {
	if t == nil || t.root == nil {
		return nil
	}
	n := t.root
	for _, s := range parseFieldPath(path) {
		n = resolveAlias(n)
		if n == nil {
			return nil
		}
		if s.isIndex {
			if n.Kind != yaml.SequenceNode || s.index < 0 || s.index >= len(n.Content) {
				return nil
			}
			n = n.Content[s.index]
			continue
		}
		_, v := mappingValue(n, s.key)
		if v == nil {
			return nil
		}
		n = v
	}
	return n
}

// parseV3 parses one document with go-yaml v3. It returns the top-level node
// (nil for an empty document) or the error.
func parseV3(doc []byte) (*yaml.Node, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(doc, &n); err != nil {
		return nil, err
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		return n.Content[0], nil
	}
	return nil, nil
}

var yamlErrPrefix = lazyregexp.New(`^(yaml: )?(line \d+: )?`)

// cleanYAMLError removes go-yaml's "yaml: line N:" prefix, whose line is
// often off by one; podspec computes its own position.
func cleanYAMLError(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	return yamlErrPrefix.ReplaceAllString(msg, "")
}

var yamlErrLine = lazyregexp.New(`line (\d+)`)

// syntaxErrorPos finds where a YAML syntax error is: the shortest prefix of
// doc that fails with the same message ends at the offending character.
// go-yaml reports no column and sometimes the wrong line, so this bisects.
func syntaxErrorPos(doc []byte, msg string) (line, col int, ok bool) {
	fails := func(k int) bool {
		_, err := parseV3(doc[:k])
		return err != nil && cleanYAMLError(err) == msg
	}
	if !fails(len(doc)) {
		return 0, 0, false
	}
	k := sort.Search(len(doc)+1, fails)
	off := k - 1
	if off < 0 {
		off = 0
	}
	line, col = offsetPos(doc, off)
	return line, col, true
}

// offsetPos converts a byte offset into a 1-based line and rune column.
func offsetPos(b []byte, off int) (line, col int) {
	if off > len(b) {
		off = len(b)
	}
	line = bytes.Count(b[:off], []byte("\n")) + 1
	start := bytes.LastIndexByte(b[:off], '\n') + 1
	col = utf8.RuneCount(b[start:off]) + 1
	return line, col
}

// scalarKind says what JSON type sigs.k8s.io/yaml (YAML 1.1) gives a scalar:
// "null", "bool", "number" or "string".
func scalarKind(n *yaml.Node) string {
	if n.Style&yaml.TaggedStyle != 0 {
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!bool":
			return "bool"
		case "!!int", "!!float":
			return "number"
		}
		return "string"
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return "string"
	}
	return plainKind(n.Value)
}

var yaml11Float = lazyregexp.New(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// plainKind resolves an unquoted scalar the way go-yaml v2 does.
func plainKind(s string) string {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return "bool"
	case "", "~", "null", "Null", "NULL":
		return "null"
	case ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
		return "number"
	}
	switch c := s[0]; {
	case c == '.':
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return "number"
		}
	case c == '+' || c == '-' || (c >= '0' && c <= '9'):
		plain := strings.ReplaceAll(s, "_", "")
		if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return "number"
		}
		if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return "number"
		}
		if yaml11Float.MatchString(plain) {
			if _, err := strconv.ParseFloat(plain, 64); err == nil {
				return "number"
			}
		}
		if strings.HasPrefix(plain, "0b") || strings.HasPrefix(plain, "-0b") {
			digits := strings.TrimPrefix(strings.TrimPrefix(plain, "-"), "0b")
			if _, err := strconv.ParseUint(digits, 2, 64); err == nil {
				return "number"
			}
		}
	}
	return "string"
}

// numberText gives the text the JSON number for a plain YAML number would have
// (for quantities such as `cpu: 0x10`).
func numberText(s string) string {
	plain := strings.ReplaceAll(s, "_", "")
	if v, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return strconv.FormatInt(v, 10)
	}
	if v, err := strconv.ParseFloat(plain, 64); err == nil && !math.IsInf(v, 0) && !math.IsNaN(v) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return s
}

// typeProblem is a value that cannot be decoded into its Go field.
type typeProblem struct {
	path      string
	line, col int
	msg       string
}

var (
	quantityType    = reflect.TypeOf(resource.Quantity{})
	intOrStringType = reflect.TypeOf(intstr.IntOrString{})
	timeType        = reflect.TypeOf(metav1.Time{})
	microTimeType   = reflect.TypeOf(metav1.MicroTime{})
	rawExtType      = reflect.TypeOf(runtime.RawExtension{})
	durationType    = reflect.TypeOf(metav1.Duration{})
)

// findTypeProblems walks the node tree along the Go type of the object and
// reports values the JSON decoder rejects, with their field paths and lines.
// The decoder itself names neither (or only an index-less path), so this runs
// after it failed, to say where.
func (t *posTree) findTypeProblems(typ reflect.Type, prefix string) []typeProblem {
	if t == nil || t.root == nil {
		return nil
	}
	var out []typeProblem
	budget := maxWalkNodes
	t.walkType(t.node(prefix), typ, strings.TrimSuffix(prefix, "."), &out, 0, &budget)
	return out
}

// maxWalkNodes bounds the work on documents built from many aliases.
const maxWalkNodes = 100000

func (t *posTree) problem(out *[]typeProblem, n *yaml.Node, path, msg string) {
	*out = append(*out, typeProblem{path: path, line: n.Line + t.lineDelta, col: n.Column, msg: msg})
}

func jsonKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "object"
	case yaml.SequenceNode:
		return "array"
	}
	return scalarKind(n)
}

func childPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func (t *posTree) walkType(n *yaml.Node, typ reflect.Type, path string, out *[]typeProblem, depth int, budget *int) {
	n = resolveAlias(n)
	if n == nil || depth > 64 || *budget <= 0 {
		return
	}
	*budget--
	kind := jsonKind(n)
	if kind == "null" {
		return
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	mismatch := func(want string) {
		msg := fmt.Sprintf("cannot unmarshal %s into a field of type %s", kind, want)
		if want == "string" && (kind == "number" || kind == "bool") {
			msg += " (quote the value)"
		}
		t.problem(out, n, path, msg)
	}
	switch typ {
	case quantityType:
		if kind != "string" && kind != "number" {
			mismatch("quantity")
			return
		}
		text := n.Value
		if kind == "number" {
			text = numberText(text)
		}
		if _, err := resource.ParseQuantity(strings.TrimSpace(text)); err != nil {
			t.problem(out, n, path, fmt.Sprintf("invalid quantity %q: %v", n.Value, err))
		}
		return
	case intOrStringType:
		if kind != "string" && kind != "number" {
			mismatch("integer or string")
		} else if kind == "number" {
			if _, err := strconv.ParseInt(numberText(n.Value), 10, 32); err != nil {
				t.problem(out, n, path, fmt.Sprintf("cannot unmarshal number %s into an integer or string", n.Value))
			}
		}
		return
	case timeType, microTimeType:
		if kind != "string" {
			mismatch("time")
			return
		}
		if _, err := time.Parse(time.RFC3339, n.Value); err != nil {
			t.problem(out, n, path, fmt.Sprintf("invalid time %q: want RFC 3339", n.Value))
		}
		return
	case durationType:
		if kind != "string" {
			mismatch("duration")
			return
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			t.problem(out, n, path, fmt.Sprintf("invalid duration %q", n.Value))
		}
		return
	case rawExtType:
		return
	}
	switch typ.Kind() {
	case reflect.Struct:
		if kind != "object" {
			mismatch("object")
			return
		}
		fields := jsonFields(typ)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fields[k.Value]
			if !ok {
				// The strict decoder reports these too, but only when the
				// object decodes; here they come with the type problems.
				*out = append(*out, typeProblem{path: childPath(path, k.Value), line: k.Line + t.lineDelta, col: k.Column,
					msg: fmt.Sprintf("unknown field %q", k.Value)})
				continue
			}
			t.walkType(v, f, childPath(path, k.Value), out, depth+1, budget)
		}
	case reflect.Map:
		if kind != "object" {
			mismatch("object")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			t.walkType(v, typ.Elem(), path+"["+k.Value+"]", out, depth+1, budget)
		}
	case reflect.Slice:
		if typ.Elem().Kind() == reflect.Uint8 { // []byte is base64 text
			if kind != "string" {
				mismatch("base64 string")
				return
			}
			if _, err := base64.StdEncoding.DecodeString(n.Value); err != nil {
				t.problem(out, n, path, fmt.Sprintf("invalid base64 data: %v", err))
			}
			return
		}
		if kind != "array" {
			mismatch("array")
			return
		}
		for i, item := range n.Content {
			t.walkType(item, typ.Elem(), fmt.Sprintf("%s[%d]", path, i), out, depth+1, budget)
		}
	case reflect.String:
		if kind != "string" {
			mismatch("string")
		}
	case reflect.Bool:
		if kind != "bool" {
			mismatch("boolean")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if kind != "number" {
			mismatch("integer")
			return
		}
		if _, err := strconv.ParseInt(numberText(n.Value), 10, typ.Bits()); err != nil {
			t.problem(out, n, path, fmt.Sprintf("cannot unmarshal number %s into a field of type %s", n.Value, typ.Kind()))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if kind != "number" {
			mismatch("integer")
			return
		}
		if _, err := strconv.ParseUint(numberText(n.Value), 10, typ.Bits()); err != nil {
			t.problem(out, n, path, fmt.Sprintf("cannot unmarshal number %s into a field of type %s", n.Value, typ.Kind()))
		}
	case reflect.Float32, reflect.Float64:
		if kind != "number" {
			mismatch("number")
		}
	}
}

// jsonFields maps the JSON names of a struct's fields (following inline and
// embedded structs) to their types.
func jsonFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		if (f.Anonymous && name == "") || strings.Contains(","+opts+",", ",inline,") {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, dup := out[k]; !dup {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = ft
	}
	return out
}

// duplicateKeys reports mapping keys that appear twice; the API server's strict
// field validation rejects them.
func (t *posTree) duplicateKeys() []typeProblem {
	if t == nil || t.root == nil {
		return nil
	}
	var out []typeProblem
	var walk func(n *yaml.Node, path string, depth int)
	walk = func(n *yaml.Node, path string, depth int) {
		if n == nil || depth > 64 {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			seen := map[string]int{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if prev, dup := seen[k.Value]; dup && k.Value != "<<" {
					out = append(out, typeProblem{
						path: childPath(path, k.Value), line: k.Line + t.lineDelta, col: k.Column,
						msg: fmt.Sprintf("duplicate field %q (first defined at line %d)", k.Value, prev+t.lineDelta),
					})
				} else {
					seen[k.Value] = k.Line
				}
				walk(n.Content[i+1], childPath(path, k.Value), depth+1)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i), depth+1)
			}
		}
	}
	walk(t.root, "", 0)
	return out
}
