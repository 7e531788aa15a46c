package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/store"
)

// leftovers lists what deleted pods must not leave on the host.
func leftovers(l store.Layout) []string { return runtime.Leftovers(l) }

// cgroupDirs are a cgroup path's directories in every mounted hierarchy.
func cgroupDirs(parent string) []string {
	var out []string
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	roots = append(roots, "/sys/fs/cgroup")
	for _, r := range roots {
		d := filepath.Join(r, parent)
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// removeCgroupTree removes a cgroup and its empty children, deepest first, in
// every hierarchy (rmdir only: a cgroup with processes stays and is reported).
func removeCgroupTree(path string) {
	for _, d := range cgroupDirs(path) {
		var dirs []string
		_ = filepath.WalkDir(d, func(p string, de fs.DirEntry, err error) error {
			if err == nil && de.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, dir := range dirs {
			_ = os.Remove(dir)
		}
	}
}
