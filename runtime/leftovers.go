package runtime

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/podrun/podrun/cgroups"
	"github.com/podrun/podrun/network"
	"github.com/podrun/podrun/store"
)

// Leftovers lists what podrun still holds on the host for a layout: mounts,
// pod records and run directories, the network's IPs, netns, veths, bridge and
// nftables rules, cgroups, container processes and podrun processes. After
// `podrun delete --all` it must be empty; the tests and benchmarks check it.
func Leftovers(l store.Layout) []string {
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
	list("run dir", filepath.Join(l.RunRoot, "pods"))
	if left, err := network.Leftovers(networkConfig(l)); err != nil {
		out = append(out, err.Error())
	} else {
		out = append(out, left...)
	}
	// The addresses the services owner keeps on lo: the kube-dns ClusterIP
	// and the kubernetes Service's (the range's first address).
	if set, err := l.ReadServiceSettings(); err == nil {
		var ips []netip.Addr
		if ip, err := netip.ParseAddr(set.ClusterDNS); err == nil {
			ips = append(ips, ip)
		}
		if cidr, err := netip.ParsePrefix(set.ServiceCIDR); err == nil {
			ips = append(ips, cidr.Masked().Addr().Next())
		}
		if left, err := network.ServiceAddressLeftovers(ips...); err != nil {
			out = append(out, err.Error())
		} else {
			out = append(out, left...)
		}
	}
	parent := l.CgroupParent
	if parent == "" {
		parent = store.DefaultCgroupParent
	}
	if left, err := cgroups.Leftovers(parent); err != nil {
		out = append(out, err.Error())
	} else {
		for _, c := range left {
			out = append(out, "cgroup "+c)
		}
	}
	return append(out, processes(l)...)
}

// processes finds container processes (their root is a rootfs podrun mounted
// under the run root) and live podrun processes started with this --root.
func processes(l store.Layout) []string {
	var out []string
	self := os.Getpid()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if filepath.Base(p) == fmt.Sprint(self) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join(p, "stat")); err != nil || strings.Contains(string(stat), ") Z ") {
			continue // gone, or exited with only its parent's wait missing
		}
		if root, err := os.Readlink(filepath.Join(p, "root")); err == nil && strings.HasPrefix(root, l.RunRoot+"/") {
			comm, _ := os.ReadFile(filepath.Join(p, "comm"))
			out = append(out, fmt.Sprintf("process %s (%s) root %s", filepath.Base(p), strings.TrimSpace(string(comm)), root))
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err == nil && strings.Contains(string(cmdline), "\x00"+l.Root+"\x00") {
			out = append(out, fmt.Sprintf("podrun process %s: %s", filepath.Base(p), strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")))
		}
	}
	return out
}
