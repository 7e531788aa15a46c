package main

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/google/nftables"
	cg "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/systemd"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/cgroups"
	"github.com/podrun/podrun/network"
)

// infoLibraries are the modules whose versions `podrun info` reports.
var infoLibraries = []string{
	"github.com/opencontainers/runc",
	"github.com/opencontainers/cgroups",
	"github.com/opencontainers/runtime-spec",
	"go.podman.io/image/v5", // linked into podrun-image: read from its build info
	"go.podman.io/storage",
	"github.com/seccomp/libseccomp-golang",
	"github.com/google/nftables",
	"github.com/vishvananda/netlink",
	"k8s.io/api",
}

// Info is what `podrun info -o json` prints.
type Info struct {
	Version   string            `json:"version"`
	Go        string            `json:"go"`
	Platform  string            `json:"platform"`
	Libraries map[string]string `json:"libraries"`
	Shim      HelperInfo        `json:"shim"`
	Image     HelperInfo        `json:"imageHelper"`
	Host      HostInfo          `json:"host"`
	Warnings  []string          `json:"warnings"`
}

// HostInfo are the facts about the host that decide whether pods work.
type HostInfo struct {
	Kernel          string   `json:"kernel"`
	CgroupVersion   string   `json:"cgroupVersion"` // v2, hybrid or v1
	CgroupDriver    string   `json:"cgroupDriver"`  // what podrun uses with these flags
	Systemd         bool     `json:"systemd"`       // systemd is PID 1
	Controllers     []string `json:"controllers"`   // cgroup v2 controllers of the root (v2 and hybrid)
	Nftables        string   `json:"nftables"`      // "available" or why not
	Iptables        string   `json:"iptables"`      // the iptables command, "" when absent
	Forward         string   `json:"forwardPolicy"` // iptables FORWARD policy, "" when unknown
	ForwardRules    int      `json:"forwardRules"`  // FORWARD rules that are not podrun's
	NftForwardDrops []string `json:"nftForwardDrops,omitempty"`
	BrNetfilter     string   `json:"brNetfilter"` // "not loaded" or bridge-nf-call-iptables=N
	IPForward       string   `json:"ipForward"`
}

func infoCommand() *cli.Command {
	return &cli.Command{
		Name:  "info",
		Usage: "print podrun's version, its libraries and the host facts pods depend on, with a warning for each that will break pods",
		Flags: []cli.Flag{&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "json, or empty for text"}},
		Action: func(c *cli.Context) error {
			info := gatherInfo(cgroupDriver(c))
			switch c.String("output") {
			case "json":
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			case "":
				printInfo(info)
				return nil
			default:
				return usageError("--output %q: want json or nothing", c.String("output"))
			}
		},
	}
}

func gatherInfo(driver string) Info {
	info := Info{
		Version:   version,
		Go:        goruntime.Version(),
		Platform:  goruntime.GOOS + "/" + goruntime.GOARCH,
		Libraries: map[string]string{},
	}
	for path, v := range moduleVersions(infoLibraries) {
		info.Libraries[path] = v
	}
	if v := libseccompVersion(); v != "" {
		info.Libraries["libseccomp"] = v
	}
	info.Shim = helperInfo(shimName)
	info.Image = helperInfo(imageName)
	info.Host, info.Warnings = hostInfo(driver, true)
	if info.Image.Problem != "" {
		info.Warnings = append([]string{imageName + " " + info.Image.Problem}, info.Warnings...)
	}
	if info.Shim.Problem != "" {
		info.Warnings = append([]string{shimName + " " + info.Shim.Problem}, info.Warnings...)
	}
	return info
}

// hostInfo gathers the host facts and a warning for each that breaks pods.
// hostInfo reads the host's facts and what in them keeps pods from working.
// Without iptables it leaves out the iptables FORWARD chain: apply asks so,
// since reading it costs an iptables process on every apply and the pod's
// network setup reads it anyway (and fails with the reason when it cannot).
func hostInfo(driver string, iptables bool) (HostInfo, []string) {
	var h HostInfo
	var warn []string
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		h.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	h.CgroupVersion = cgroups.Mode()
	h.CgroupDriver = driver
	h.Systemd = systemd.IsRunningSystemd()
	if data, err := os.ReadFile(unifiedRoot() + "/cgroup.controllers"); err == nil {
		h.Controllers = strings.Fields(string(data))
	}
	switch {
	case driver == cgroups.DriverSystemd && !h.Systemd:
		warn = append(warn, "cgroup driver systemd, but systemd is not PID 1 here: pods fail to start (use --cgroup-manager cgroupfs)")
	case driver == cgroups.DriverCgroupfs && h.Systemd && h.CgroupVersion == "v2":
		warn = append(warn, "cgroup driver cgroupfs on a cgroup v2 host run by systemd: systemd may move or remove podrun's cgroups (the kubelet and containerd use the systemd driver here; drop --cgroup-manager)")
	case driver != cgroups.DriverCgroupfs && driver != cgroups.DriverSystemd:
		warn = append(warn, fmt.Sprintf("unknown cgroup driver %q: pods fail to start (want cgroupfs or systemd)", driver))
	}
	if h.CgroupVersion == "v2" {
		for _, c := range []string{"cpu", "memory", "pids"} {
			if !slices.Contains(h.Controllers, c) {
				warn = append(warn, fmt.Sprintf("the cgroup v2 %s controller is not available: pods with %s limits fail to start", c, c))
			}
		}
	} else {
		for _, c := range []string{"cpu", "memory", "pids"} {
			if _, err := cg.FindCgroupMountpoint("", c); err != nil {
				warn = append(warn, fmt.Sprintf("no cgroup v1 %s hierarchy is mounted: pods with %s limits fail to start", c, c))
			}
		}
	}

	h.Nftables = "available"
	if conn, err := nftables.New(); err != nil {
		h.Nftables = err.Error()
	} else if _, err := conn.ListTablesOfFamily(nftables.TableFamilyIPv4); err != nil {
		h.Nftables = err.Error()
	}
	if h.Nftables != "available" {
		warn = append(warn, "nftables is not usable ("+h.Nftables+"): pods without hostNetwork fail to start (load the nf_tables module)")
	}
	if drops, err := network.NftForwardDrops(); err == nil {
		h.NftForwardDrops = drops
		for _, d := range drops {
			warn = append(warn, "the nftables chain "+d+" drops forwarded traffic and podrun does not open it: pod egress, pod-to-pod traffic over bridge netfilter and hostPorts from other hosts are dropped (accept the pod subnet there)")
		}
	}
	if iptables {
		fw, err := network.ReadForward()
		h.Iptables, h.Forward, h.ForwardRules = fw.Iptables, fw.Policy, fw.Rules
		if err != nil {
			warn = append(warn, "reading the iptables FORWARD chain: "+err.Error())
		}
	}
	h.BrNetfilter = "not loaded"
	if v, err := os.ReadFile("/proc/sys/net/bridge/bridge-nf-call-iptables"); err == nil {
		h.BrNetfilter = "bridge-nf-call-iptables=" + strings.TrimSpace(string(v))
	}
	if v, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); err == nil {
		h.IPForward = strings.TrimSpace(string(v))
	}
	return h, warn
}

func unifiedRoot() string {
	if cg.IsCgroup2UnifiedMode() {
		return "/sys/fs/cgroup"
	}
	return "/sys/fs/cgroup/unified"
}

func printInfo(info Info) {
	fmt.Printf("podrun %s\n", info.Version)
	fmt.Printf("%s: %s\n", shimName, info.Shim)
	fmt.Printf("%s: %s\n", imageName, info.Image)
	fmt.Printf("go: %s %s\n", info.Go, info.Platform)
	fmt.Println("libraries:")
	for _, l := range append(append([]string{}, infoLibraries...), "libseccomp") {
		if v, ok := info.Libraries[l]; ok {
			fmt.Printf("  %s %s\n", l, v)
		}
	}
	h := info.Host
	fmt.Println("host:")
	fmt.Printf("  kernel: %s\n", h.Kernel)
	init := "not systemd"
	if h.Systemd {
		init = "systemd"
	}
	fmt.Printf("  cgroups: %s, driver %s (PID 1 is %s)\n", h.CgroupVersion, h.CgroupDriver, init)
	if len(h.Controllers) > 0 {
		fmt.Printf("  cgroup v2 controllers: %s\n", strings.Join(h.Controllers, " "))
	}
	fmt.Printf("  nftables: %s\n", h.Nftables)
	switch {
	case h.Iptables == "":
		fmt.Println("  iptables FORWARD: no iptables command")
	case h.Forward == "ACCEPT" && h.ForwardRules == 0:
		fmt.Println("  iptables FORWARD: policy ACCEPT, no rules")
	default:
		fmt.Printf("  iptables FORWARD: policy %s, %d rules (podrun adds accept rules for its pod subnet)\n", h.Forward, h.ForwardRules)
	}
	for _, d := range h.NftForwardDrops {
		fmt.Printf("  nftables forward chain with policy drop: %s\n", d)
	}
	fmt.Printf("  br_netfilter: %s\n", h.BrNetfilter)
	fmt.Printf("  ip_forward: %s\n", h.IPForward)
	for _, w := range info.Warnings {
		fmt.Printf("Warning: %s\n", w)
	}
}

// moduleVersions are the versions of the modules in want that this binary or
// podrun-image (next to it: the registry client and the image store's writer
// live there) is built with.
func moduleVersions(want []string) map[string]string {
	out := map[string]string{}
	add := func(bi *debug.BuildInfo) {
		for _, d := range bi.Deps {
			if !slices.Contains(want, d.Path) {
				continue
			}
			v := d.Version
			if d.Replace != nil {
				v = d.Replace.Version
			}
			out[d.Path] = v
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		add(bi)
	}
	if p, err := helperPath(imageName); err == nil {
		if bi, err := buildinfo.ReadFile(p); err == nil {
			add(bi)
		}
	}
	return out
}
