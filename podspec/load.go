//go:build !podrun_lean

package podspec

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podrun/podrun/internal/lazyregexp"
)

// Manifest is the content of one manifest file.
type Manifest struct {
	Source     string        // file name for messages ("-" for stdin)
	Pods       []*corev1.Pod // decoded and DEFAULTED (not yet validated)
	ConfigMaps []*corev1.ConfigMap
	Secrets    []*corev1.Secret
	Services   []*corev1.Service // decoded and defaulted (SetServiceDefaults)
	// Workloads are the Deployments, ReplicaSets and DaemonSets, decoded and
	// defaulted with their templates (validated by Plans).
	Workloads  []*Workload
	Claims     []*corev1.PersistentVolumeClaim
	Namespaces []*corev1.Namespace
	// PriorityClasses (scheduling.k8s.io/v1), cluster-scoped.
	PriorityClasses []*schedulingv1.PriorityClass
	// Origins[i] tells where Pods[i] came from, so that errors name the
	// paths the user wrote (a Job's pod lives under spec.template).
	Origins []Origin
	// Objects lists every object as written, in order, with the namespace the
	// file gives it ("" when it names none), for kubectl's namespace rules.
	Objects []ObjectRef
}

// ObjectRef names an object of a manifest.
type ObjectRef struct {
	Kind, Namespace, Name string
}

// strictJSON is the API server's strict field validation: unknown and
// duplicate fields are errors, field names are case-sensitive. The scheme
// behind it is built on first use: registering core/v1, batch/v1, apps/v1 and scheduling/v1 at
// program start would cost every start of podrun-shim, the container init.
var strictJSON = sync.OnceValue(func() *sjson.Serializer {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := batchv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := appsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := schedulingv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	return sjson.NewSerializerWithOptions(sjson.DefaultMetaFactory, scheme, scheme, sjson.SerializerOptions{Strict: true})
})

// The workload kinds join the loader's table (jobs.go's init registers its
// kinds first: Go runs a package's files' init functions in file name order).
func init() {
	for k, v := range workloadKinds {
		kinds[k] = v
	}
}

// LoadFile reads a manifest from a file, or from stdin when path is "-".
func LoadFile(path string) (*Manifest, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading manifest %s: %w", path, err)
	}
	return Load(data, path)
}

// Load decodes every document of a manifest (multi-document YAML or a JSON
// stream) and applies the API server's defaults. All problems are collected:
// the error is an ErrorList of *LoadError.
func Load(data []byte, source string) (*Manifest, error) {
	l := &loader{m: &Manifest{Source: source}}
	docs, err := l.split(data)
	l.docs = len(docs)
	if err != nil {
		l.docs++ // the document that failed to split
		err.Docs = l.docs
		l.errs = append(l.errs, err)
	}
	for _, d := range docs {
		if len(d.data) > MaxObjectBytes {
			l.tooLarge(d, len(d.data))
			continue
		}
		l.loadDoc(d)
	}
	if len(l.errs) > 0 {
		return nil, l.errs
	}
	if len(l.m.Objects) == 0 {
		// A manifest of ConfigMaps or Secrets alone is fine: they are objects of their own.
		return nil, ErrorList{&LoadError{File: source, Msg: "no objects in the manifest"}}
	}
	return l.m, nil
}

// MaxObjectBytes is the largest object podrun accepts: the API server's
// limit on a request body (DefaultMaxRequestSizeBytes, 3 MiB), which kubectl
// sends one object at a time. Documents are measured before they are parsed,
// so an oversized manifest is refused quickly and in little memory.
const MaxObjectBytes = 3 * 1024 * 1024

func (l *loader) tooLarge(d rawDoc, size int) {
	l.fail(d.index, d.startLine, 0, "", "object is too large: %d bytes; the API server accepts at most %d bytes (3 MiB) per object (Request entity too large)", size, MaxObjectBytes)
}

type loader struct {
	m    *Manifest
	docs int
	errs ErrorList
	// tree is the positions of the object being added, for errors found then.
	tree *posTree
}

type rawDoc struct {
	index     int // 1-based
	startLine int // file line of the document's first byte
	data      []byte
	json      bool
}

func (l *loader) fail(doc, line, col int, path, format string, args ...any) {
	l.errs = append(l.errs, &LoadError{
		File: l.m.Source, Doc: doc, Docs: l.docs, Line: line, Col: col, Path: path,
		Msg: fmt.Sprintf(format, args...),
	})
}

// split cuts the input into documents the way kubectl does: a stream that
// starts with '{' is a sequence of JSON objects, anything else is YAML whose
// documents are separated by lines starting with "---".
func (l *loader) split(data []byte) ([]rawDoc, *LoadError) {
	trimmed := bytes.TrimLeftFunc(data, unicode.IsSpace)
	if bytes.HasPrefix(trimmed, []byte("{")) {
		return l.splitJSON(data)
	}
	return l.splitYAML(data)
}

func (l *loader) splitJSON(data []byte) ([]rawDoc, *LoadError) {
	var docs []rawDoc
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		start := int(dec.InputOffset())
		for start < len(data) && unicode.IsSpace(rune(data[start])) {
			start++
		}
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			off := start
			var se *json.SyntaxError
			if errors.As(err, &se) {
				off = int(se.Offset) - 1
			} else if errors.Is(err, io.ErrUnexpectedEOF) {
				off = len(data)
			}
			line, col := offsetPos(data, max(off, 0))
			return docs, &LoadError{File: l.m.Source, Doc: len(docs) + 1, Line: line, Col: col,
				Msg: "JSON syntax error: " + strings.TrimPrefix(err.Error(), "json: ")}
		}
		line, _ := offsetPos(data, start)
		docs = append(docs, rawDoc{index: len(docs) + 1, startLine: line, data: raw, json: true})
	}
}

func (l *loader) splitYAML(data []byte) ([]rawDoc, *LoadError) {
	var docs []rawDoc
	// A document is the run of lines between separators: a slice of data, not
	// a copy, so that splitting a huge manifest costs no memory.
	curFrom, curTo := -1, -1
	curStart := 1
	lineNo := 0
	flush := func() {
		if curFrom >= 0 {
			docs = append(docs, rawDoc{index: len(docs) + 1, startLine: curStart, data: data[curFrom:curTo:curTo]})
		}
		curFrom = -1
	}
	for off := 0; off < len(data); {
		lineNo++
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		line := data[off:next]
		lineOff := off
		off = next
		if bytes.HasPrefix(line, []byte("---")) {
			after := strings.TrimSpace(string(line[3:]))
			if after != "" && after[0] != '#' {
				flush()
				return docs, &LoadError{File: l.m.Source, Doc: len(docs) + 1, Line: lineNo, Col: 1,
					Msg: fmt.Sprintf("invalid YAML document separator: %s", after)}
			}
			flush()
			continue
		}
		if curFrom < 0 {
			curFrom, curStart = lineOff, lineNo
		}
		curTo = next
	}
	flush()
	return docs, nil
}

func (l *loader) loadDoc(d rawDoc) {
	tree := &posTree{lineDelta: d.startLine - 1}
	js := d.data
	if !d.json {
		var err error
		js, err = sigsyaml.YAMLToJSON(d.data)
		if err != nil {
			msg := cleanYAMLError(err)
			line, col := 0, 0
			if _, v3err := parseV3(d.data); v3err != nil {
				if ln, c, ok := syntaxErrorPos(d.data, cleanYAMLError(v3err)); ok {
					line, col = ln+d.startLine-1, c
				}
			}
			if line == 0 {
				if m := yamlErrLine.FindStringSubmatch(err.Error()); m != nil {
					n, _ := strconv.Atoi(m[1])
					line = n + d.startLine - 1
				} else {
					line = d.startLine
				}
			}
			l.fail(d.index, line, col, "", "YAML syntax error: %s", msg)
			return
		}
	}
	if len(js) > MaxObjectBytes {
		// The API server measures the JSON kubectl sends.
		l.tooLarge(d, len(js))
		return
	}
	if root, err := parseV3(d.data); err == nil {
		tree.root = root
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return // empty document
	}
	if !d.json {
		dups := tree.duplicateKeys()
		for _, p := range dups {
			l.fail(d.index, p.line, p.col, p.path, "%s", p.msg)
		}
		if len(dups) > 0 {
			return
		}
	}
	l.decodeObject(js, tree, d, "")
}

var strictErrRe = lazyregexp.New(`^(unknown|duplicate) field "(.*)"$`)

// decodeObject decodes one object (or a List's items) whose JSON is js and
// whose path in the document is prefix.
func (l *loader) decodeObject(js []byte, tree *posTree, d rawDoc, prefix string) {
	objPath := strings.TrimSuffix(prefix, ".")
	line, _ := tree.pos(objPath)
	if line == 0 {
		line = d.startLine
	}
	var head map[string]json.RawMessage
	if err := json.Unmarshal(js, &head); err != nil {
		l.fail(d.index, line, 0, objPath, "expected an object with apiVersion and kind")
		return
	}
	var apiVersion, kind string
	for _, f := range []struct {
		name string
		dst  *string
	}{{"apiVersion", &apiVersion}, {"kind", &kind}} {
		raw, ok := head[f.name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			ln, _ := tree.pos(prefix + f.name)
			l.fail(d.index, ln, 0, prefix+f.name, "must be a string")
			return
		}
	}
	var missing []string
	if apiVersion == "" {
		missing = append(missing, "apiVersion not set")
	}
	if kind == "" {
		missing = append(missing, "kind not set")
	}
	if len(missing) > 0 {
		l.fail(d.index, line, 0, objPath, "%s", strings.Join(missing, ", "))
		return
	}
	k, known := kinds[kind]
	want := k.apiVersion
	if !known || (kind == "List" && prefix != "") {
		ln, _ := tree.pos(prefix + "kind")
		l.fail(d.index, ln, 0, prefix+"kind", "kind %s is not supported%s", kind, unsupportedKindReason[kind])
		return
	}
	if apiVersion != want {
		ln, _ := tree.pos(prefix + "apiVersion")
		l.fail(d.index, ln, 0, prefix+"apiVersion", "apiVersion %q is not supported for kind %s (want %q)", apiVersion, kind, want)
		return
	}
	if kind == "List" {
		l.decodeList(head, tree, d, prefix)
		return
	}

	obj, _, err := strictJSON().Decode(js, nil, nil)
	if err != nil {
		if se, ok := runtime.AsStrictDecodingError(err); ok {
			for _, e := range se.Errors() {
				m := strictErrRe.FindStringSubmatch(e.Error())
				if m == nil {
					l.fail(d.index, line, 0, objPath, "%v", e)
					continue
				}
				p := prefix + m[2]
				ln, col := tree.pos(p)
				l.fail(d.index, ln, col, p, "%s field %q", m[1], tree.keyName(p))
			}
			return
		}
		typ := k.typ
		problems := tree.findTypeProblems(typ, prefix)
		for _, p := range problems {
			l.fail(d.index, p.line, p.col, p.path, "%s", p.msg)
		}
		if len(problems) == 0 {
			l.fail(d.index, line, 0, objPath, "decoding %s: %v", kind, err)
		}
		return
	}
	origin := Origin{Doc: d.index, Line: line, Kind: kind, Prefix: prefix}
	if mo, ok := obj.(metav1.Object); ok {
		l.m.Objects = append(l.m.Objects, ObjectRef{Kind: kind, Namespace: mo.GetNamespace(), Name: mo.GetName()})
	}
	if k.add == nil {
		l.fail(d.index, line, 0, objPath, "kind %s is not supported", kind)
		return
	}
	l.tree = tree
	k.add(l, obj, origin)
}

// kindInfo is what the loader knows of one kind: its apiVersion, its Go type
// (for the line numbers of type errors) and how its decoded object joins the
// manifest. New kinds (Service, Deployment…) are rows of this table.
type kindInfo struct {
	apiVersion string
	typ        reflect.Type
	add        func(l *loader, obj runtime.Object, origin Origin)
}

var kinds = map[string]kindInfo{
	"List": {apiVersion: "v1"},
	"Pod": {"v1", reflect.TypeOf(corev1.Pod{}), func(l *loader, obj runtime.Object, origin Origin) {
		o := obj.(*corev1.Pod)
		prepareForCreate(&o.ObjectMeta)
		o.Status = corev1.PodStatus{}
		if !l.initAnnotations(o, &origin) {
			return
		}
		SetDefaults(o)
		admitPod(o)
		l.m.Pods = append(l.m.Pods, o)
		l.m.Origins = append(l.m.Origins, origin)
	}},
	"ConfigMap": {"v1", reflect.TypeOf(corev1.ConfigMap{}), func(l *loader, obj runtime.Object, _ Origin) {
		o := obj.(*corev1.ConfigMap)
		prepareForCreate(&o.ObjectMeta)
		setConfigMapDefaults(o)
		l.m.ConfigMaps = append(l.m.ConfigMaps, o)
	}},
	"Secret": {"v1", reflect.TypeOf(corev1.Secret{}), func(l *loader, obj runtime.Object, _ Origin) {
		o := obj.(*corev1.Secret)
		prepareForCreate(&o.ObjectMeta)
		setSecretDefaults(o)
		l.m.Secrets = append(l.m.Secrets, o)
	}},
	"Service": {"v1", reflect.TypeOf(corev1.Service{}), func(l *loader, obj runtime.Object, _ Origin) {
		o := obj.(*corev1.Service)
		prepareForCreate(&o.ObjectMeta)
		SetServiceDefaults(o)
		l.m.Services = append(l.m.Services, o)
	}},
}

// initAnnotations turns the pre-1.8 init-container annotations into spec.initContainers;
// false when the annotation's value is not a container list (an error is recorded).
func (l *loader) initAnnotations(pod *corev1.Pod, origin *Origin) bool {
	used, bad, msg := convertInitContainerAnnotations(pod.Annotations, &pod.Spec)
	if bad != "" {
		path := origin.SourcePath(bad)
		ln, _ := l.tree.pos(path)
		if ln == 0 {
			ln = origin.Line
		}
		l.fail(origin.Doc, ln, 0, path, "%s", msg)
		return false
	}
	origin.InitFromAnnotation = used
	return true
}

func (l *loader) decodeList(head map[string]json.RawMessage, tree *posTree, d rawDoc, prefix string) {
	for k := range head {
		switch k {
		case "apiVersion", "kind", "metadata", "items":
		default:
			ln, _ := tree.pos(prefix + k)
			l.fail(d.index, ln, 0, prefix+k, "unknown field %q", k)
		}
	}
	raw, ok := head["items"]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		ln, _ := tree.pos(prefix + "items")
		l.fail(d.index, ln, 0, prefix+"items", "must be a list of objects")
		return
	}
	for i, item := range items {
		l.decodeObject(item, tree, d, fmt.Sprintf("%sitems[%d].", prefix, i))
	}
}

// prepareForCreate does what the API server does to an object it creates that
// matters here: system fields are its to set, and a generateName becomes a name.
func prepareForCreate(meta *metav1.ObjectMeta) {
	meta.UID = ""
	meta.ResourceVersion = ""
	meta.Generation = 0
	meta.DeletionTimestamp = nil
	meta.DeletionGracePeriodSeconds = nil
	if meta.Name == "" && meta.GenerateName != "" {
		meta.Name = generateName(meta.GenerateName)
	}
}

// GenerateName is the name the API server gives an object created with
// metadata.generateName base.
func GenerateName(base string) string { return generateName(base) }

// generateName appends 5 random characters as the API server's
// SimpleNameGenerator does.
func generateName(base string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	const maxGeneratedNameLength = validation.DNS1123SubdomainMaxLength - 5
	if len(base) > maxGeneratedNameLength {
		base = base[:maxGeneratedNameLength]
	}
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Errorf("reading random bytes for a generated name: %w", err))
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return base + string(b)
}

// unsupportedKindReason says why a kind a user may expect is refused.
var unsupportedKindReason = map[string]string{
	// The endpoints of a Service are what podrun's EndpointSlice and
	// endpoints controllers compute from its selector; objects written by
	// hand (for a Service without a selector) are not kept, so such a
	// Service has no endpoints.
	"EndpointSlice": ": podrun computes a Service's EndpointSlices from its selector; a Service without a selector has no endpoints",
	"Endpoints":     ": podrun computes a Service's Endpoints from its selector; a Service without a selector has no endpoints",
}
