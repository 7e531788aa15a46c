package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/moby/sys/mountinfo"
	"github.com/vishvananda/netlink"

	"github.com/podrun/podrun/runtime"
)

// leftovers lists what deleted pods must not leave on the host: mounts,
// records, pinned namespaces, veths, cgroups, IP allocations, nftables
// rules and processes (the checks of integration/harness_test.go, plus IPs,
// nftables and supervisors).
func leftovers(l runtime.Layout) []string {
	var out []string
	for _, dir := range []string{l.Root, l.RunRoot} {
		mounts, _ := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
		for _, m := range mounts {
			out = append(out, "mount "+m.Mountpoint)
		}
	}
	list := func(what, dir string) {
		entries, _ := os.ReadDir(dir)
		for _, en := range entries {
			out = append(out, what+" "+filepath.Join(dir, en.Name()))
		}
	}
	list("pod record", l.PodsDir())
	list("netns", filepath.Join(l.RunRoot, "netns"))
	list("run dir", filepath.Join(l.RunRoot, "pods"))
	// network.Setup records each pod's IP under <root>/network/pods.
	list("IP allocation", filepath.Join(l.NetworkDir(), "pods"))
	if br, err := netlink.LinkByName(l.Bridge); err == nil {
		links, _ := netlink.LinkList()
		for _, link := range links {
			if link.Attrs().MasterIndex == br.Attrs().Index {
				out = append(out, "veth "+link.Attrs().Name)
			}
		}
		// The network package removes the bridge it made with its last pod.
		out = append(out, "bridge "+l.Bridge+" (kept after its last pod)")
	}
	for _, d := range cgroupDirs(l.CgroupParent) {
		sub, _ := os.ReadDir(d)
		for _, s := range sub {
			if s.IsDir() {
				out = append(out, "cgroup "+filepath.Join(d, s.Name()))
			}
		}
	}
	for _, p := range processesUnder(l.RunRoot) {
		out = append(out, "process "+p)
	}
	for _, p := range supervisorsOf(l.Root) {
		out = append(out, "supervisor "+p)
	}
	out = append(out, nftLeftovers(l.Bridge)...)
	return out
}

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

// processesUnder finds processes whose root directory is under dir: the
// processes of containers whose rootfs podrun mounted there.
func processesUnder(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		root, err := os.Readlink(filepath.Join(p, "root"))
		if err != nil || !strings.HasPrefix(root, dir) {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join(p, "comm"))
		out = append(out, fmt.Sprintf("%s (%s) root %s", filepath.Base(p), strings.TrimSpace(string(comm)), root))
	}
	return out
}

// supervisorsOf finds live podrun processes started with this --root
// (supervisors, or CLI verbs that never returned).
func supervisorsOf(root string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), "\x00"+root+"\x00") {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join(p, "stat")); err == nil && strings.Contains(string(stat), ") Z ") {
			continue // exited; only its parent's wait is missing
		}
		out = append(out, fmt.Sprintf("%s: %s", filepath.Base(p), strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")))
	}
	return out
}

// nftLeftovers reports the nftables table that the network package keeps for
// this bridge ("podrun_<bridge>"): it removes the table with its last pod.
func nftLeftovers(bridge string) []string {
	c, err := nftables.New()
	if err != nil {
		return []string{fmt.Sprintf("nftables: %v", err)}
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return []string{fmt.Sprintf("listing nftables tables: %v", err)}
	}
	var out []string
	for _, t := range tables {
		if t.Name == "podrun_"+bridge {
			out = append(out, "nftables table ip "+t.Name)
		}
	}
	return out
}
