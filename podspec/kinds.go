//go:build !podrun_lean

package podspec

import "sort"

// Kinds returns the kinds `apply` accepts, each with its apiVersion (the
// loader's table), sorted by kind; the README's kinds table is checked
// against it.
func Kinds() [][2]string {
	out := make([][2]string, 0, len(kinds))
	for k, info := range kinds {
		out = append(out, [2]string{k, info.apiVersion})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}
