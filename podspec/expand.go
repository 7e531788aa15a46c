package podspec

import "strings"

// Expand replaces $(VAR) references in s with values from env, with the rules
// of Kubernetes' third_party/forked/golang/expansion: `$$` is an escaped `$`,
// a reference to an undefined variable is left as written, an unterminated
// `$(` is literal, and replacement values are not expanded again.
func Expand(s string, env map[string]string) string {
	return ExpandFunc(s, func(name string) string {
		if v, ok := env[name]; ok {
			return v
		}
		return "$(" + name + ")"
	})
}

// ExpandFunc is the same expansion with the value of each $(NAME) given by
// mapping (used where a missing variable is an error, as in subPathExpr).
func ExpandFunc(input string, mapping func(string) string) string {
	var buf strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		buf.WriteString(input[checkpoint:cursor])
		read, isVar, advance := readVariableName(input[cursor+1:])
		if isVar {
			buf.WriteString(mapping(read))
		} else {
			buf.WriteString(read)
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return buf.String() + input[checkpoint:]
}

// readVariableName reads what follows a '$': it returns the text to emit (or
// the variable name), whether it is a variable, and how many bytes it used.
func readVariableName(input string) (string, bool, int) {
	switch input[0] {
	case '$':
		return "$", false, 1
	case '(':
		for i := 1; i < len(input); i++ {
			if input[i] == ')' {
				return input[1:i], true, i + 1
			}
		}
		return "$(", false, 1
	default:
		return "$" + input[0:1], false, 1
	}
}

// envMap turns "K=V" entries into a map; later entries win, entries without
// "=" are ignored.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, e := range env {
		if k, v, ok := strings.Cut(e, "="); ok {
			m[k] = v
		}
	}
	return m
}
