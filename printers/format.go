package printers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"text/template"

	"k8s.io/client-go/util/jsonpath"
)

// The outputs of kubectl get that take a template (-o jsonpath=…,
// -o custom-columns=…, -o go-template=…), over the objects' JSON form, with
// client-go's jsonpath as kubectl uses it.

// JSONPath prints obj with a jsonpath template, as kubectl's JSONPathPrinter
// (missing keys allowed, as --allow-missing-template-keys defaults to true).
func JSONPath(w io.Writer, tmpl string, obj any) error {
	j := jsonpath.New("out").AllowMissingKeys(true)
	if err := j.Parse(tmpl); err != nil {
		return fmt.Errorf("error parsing jsonpath %s, %w", tmpl, err)
	}
	data, err := toJSONObject(obj)
	if err != nil {
		return err
	}
	return j.Execute(w, data)
}

// GoTemplate prints obj with a Go template, as kubectl's GoTemplatePrinter,
// with its base64decode and exists functions.
func GoTemplate(w io.Writer, tmpl string, obj any) error {
	t, err := template.New("output").Funcs(template.FuncMap{
		"exists": exists,
		"base64decode": func(v string) (string, error) {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return "", fmt.Errorf("base64 decode failed: %w", err)
			}
			return string(b), nil
		},
	}).Parse(tmpl)
	if err != nil {
		return fmt.Errorf("error parsing template %s, %w", tmpl, err)
	}
	data, err := toJSONObject(obj)
	if err != nil {
		return err
	}
	if err := t.Execute(w, data); err != nil {
		return fmt.Errorf("error executing template %q: %w", tmpl, err)
	}
	return nil
}

// exists is kubectl's template function: whether a path of keys or indexes exists.
func exists(item any, indices ...any) bool {
	v := reflect.ValueOf(item)
	for _, i := range indices {
		for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		idx := reflect.ValueOf(i)
		switch v.Kind() {
		case reflect.Map:
			v = v.MapIndex(idx)
		case reflect.Slice, reflect.Array:
			if !idx.CanInt() || idx.Int() < 0 || int(idx.Int()) >= v.Len() {
				return false
			}
			v = v.Index(int(idx.Int()))
		default:
			return false
		}
		if !v.IsValid() {
			return false
		}
	}
	return true
}

// Column is one custom column: a header and a jsonpath.
type Column struct {
	Header string
	Path   *jsonpath.JSONPath
}

// ParseCustomColumns parses "NAME:.metadata.name,STATUS:.status.phase" as
// kubectl's NewCustomColumnsPrinterFromSpec.
func ParseCustomColumns(spec string) ([]Column, error) {
	if spec == "" {
		return nil, fmt.Errorf("custom-columns format specified but no custom columns given")
	}
	var cols []Column
	for _, part := range strings.Split(spec, ",") {
		header, path, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
		}
		expr, err := RelaxedJSONPath(path)
		if err != nil {
			return nil, err
		}
		j := jsonpath.New(header).AllowMissingKeys(true)
		if err := j.Parse(expr); err != nil {
			return nil, err
		}
		cols = append(cols, Column{Header: header, Path: j})
	}
	return cols, nil
}

// CustomColumns prints one row per object, as kubectl's CustomColumnsPrinter:
// a missing value is <none>, several values are joined with commas.
func CustomColumns(w io.Writer, cols []Column, objs []any, noHeaders bool) error {
	tw := NewTabWriter(w)
	if !noHeaders {
		var hs []string
		for _, c := range cols {
			hs = append(hs, c.Header)
		}
		fmt.Fprintln(tw, strings.Join(hs, "\t"))
	}
	for _, obj := range objs {
		data, err := toJSONObject(obj)
		if err != nil {
			return err
		}
		var fields []string
		for _, c := range cols {
			results, err := c.Path.FindResults(data)
			if err != nil {
				return err
			}
			var vals []string
			for _, r := range results {
				for _, v := range r {
					vals = append(vals, printValue(v))
				}
			}
			if len(vals) == 0 {
				fields = append(fields, "<none>")
			} else {
				fields = append(fields, strings.Join(vals, ","))
			}
		}
		fmt.Fprintln(tw, strings.Join(fields, "\t"))
	}
	return tw.Flush()
}

func printValue(v reflect.Value) string {
	for v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	if !v.IsValid() {
		return "<none>"
	}
	switch v.Kind() {
	case reflect.Map, reflect.Slice:
		b, _ := json.Marshal(v.Interface())
		return string(b)
	}
	return fmt.Sprint(v.Interface())
}

var jsonRegexp = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// RelaxedJSONPath is kubectl's RelaxedJSONPathExpression: ".a.b", "a.b" and
// "{.a.b}" all mean "{.a.b}".
func RelaxedJSONPath(path string) (string, error) {
	if len(path) == 0 {
		return path, nil
	}
	m := jsonRegexp.FindStringSubmatch(path)
	if m == nil {
		return "", fmt.Errorf("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'")
	}
	if len(m) != 3 {
		return "", fmt.Errorf("unexpected submatch list: %v", m)
	}
	var field string
	if len(m[1]) != 0 {
		field = m[1]
	} else {
		field = m[2]
	}
	return fmt.Sprintf("{.%s}", field), nil
}

// toJSONObject is obj as kubectl's printers see it: its JSON form, decoded.
func toJSONObject(obj any) (any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var out any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}
