package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	cg "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/cgroups/fs2"
	"github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/cgroups/systemd"

	// Container cgroups carry device rules; the manager that applies them (ours
	// in tests, libcontainer's in the supervisor) needs this backend registered.
	_ "github.com/opencontainers/cgroups/devices"
)

// DefaultParent is the cgroup every pod cgroup goes under unless told otherwise.
// Like the kubelet's kubepods it is created on first use and never removed by
// DestroyPod, so that concurrent pods never race on it; DestroyParent removes it.
const DefaultParent = "/podrun"

// Cgroup drivers, named as the kubelet's --cgroup-driver.
const (
	DriverCgroupfs = "cgroupfs"
	DriverSystemd  = "systemd"
)

// scopePrefix names container scopes under the systemd driver: podrun-<id>.scope.
const scopePrefix = "podrun"

// Mode reports the host's cgroup layout: "v2" (unified), "hybrid" (v1
// controllers plus a v2 mount at /sys/fs/cgroup/unified) or "v1".
func Mode() string {
	switch {
	case cg.IsCgroup2UnifiedMode():
		return "v2"
	case cg.IsCgroup2HybridMode():
		return "hybrid"
	default:
		return "v1"
	}
}

// Pod is a pod-level cgroup created by CreatePod.
type Pod struct {
	uid    string
	driver string
	path   string            // cgroupfs path, e.g. /podrun/pod<uid>
	slice  string            // systemd driver: the pod's slice unit
	paths  map[string]string // controller → host dir; "" is the v2 (or hybrid unified) dir
}

// CreatePod creates (or updates, when it exists) the pod cgroup
// <parent>/pod<podUID> with the values in r, through runc's cgroups manager:
// fs on cgroup v1 and hybrid hosts, fs2 on v2, the systemd driver when driver
// is "systemd" (the pod is then the slice <parent>-pod<uid>.slice and must run
// on a host where systemd is PID 1). parent "" means DefaultParent; driver ""
// means cgroupfs. Limits that r leaves unset are written as unlimited, so
// calling it again with other values converges. Call it before any container
// of the pod starts. A failure may leave the cgroup behind: DestroyPod removes it.
func CreatePod(parent, podUID string, r Resources, driver string) (*Pod, error) {
	parent, err := cleanParent(parent)
	if err != nil {
		return nil, err
	}
	if err := checkName("pod UID", podUID); err != nil {
		return nil, err
	}
	p := &Pod{uid: podUID, driver: driver}
	config := &cg.Cgroup{Resources: r.toLibcontainer(hostConvertOpts(true))}
	switch driver {
	case "", DriverCgroupfs:
		p.driver = DriverCgroupfs
		p.path = podPath(parent, podUID)
		config.Path = p.path
	case DriverSystemd:
		parentSlice, podSlice := systemdSlices(parent, podUID)
		p.slice = podSlice
		if p.path, err = systemd.ExpandSlice(podSlice); err != nil {
			return nil, fmt.Errorf("naming the systemd slice of pod %s: %w", podUID, err)
		}
		config.Systemd, config.Parent, config.Name = true, parentSlice, podSlice
	default:
		return nil, fmt.Errorf("unknown cgroup driver %q (want %q or %q)", driver, DriverCgroupfs, DriverSystemd)
	}
	m, err := manager.New(config)
	if err != nil {
		return nil, fmt.Errorf("creating the cgroup manager for pod cgroup %s: %w", p.path, err)
	}
	// Apply(-1) creates the cgroup in every hierarchy without moving anyone in.
	if err := m.Apply(-1); err != nil {
		return nil, fmt.Errorf("creating pod cgroup %s: %w", p.path, err)
	}
	if err := m.Set(config.Resources); err != nil {
		return nil, fmt.Errorf("setting the resources of pod cgroup %s: %w", p.path, err)
	}
	p.paths = make(map[string]string)
	for k, v := range m.GetPaths() {
		p.paths[k] = v
	}
	return p, nil
}

// Update writes new values to the pod cgroup (an in-place resize): CreatePod
// again, which converges on r's values.
func (p *Pod) Update(parent string, r Resources) error {
	_, err := CreatePod(parent, p.uid, r, p.driver)
	return err
}

// PodPath is where CreatePod puts pod podUID's cgroup for that parent and
// driver, without creating it: <parent>/pod<uid>, or under the systemd driver
// the directory of the slice <parent>-pod<uid>.slice (e.g.
// /podrun.slice/podrun-pod<uid>.slice). "" when the names are invalid.
func PodPath(parent, podUID, driver string) string {
	parent, err := cleanParent(parent)
	if err != nil || checkName("pod UID", podUID) != nil {
		return ""
	}
	if driver != DriverSystemd {
		return podPath(parent, podUID)
	}
	_, podSlice := systemdSlices(parent, podUID)
	p, err := systemd.ExpandSlice(podSlice)
	if err != nil {
		return ""
	}
	return p
}

// Path is the pod cgroup's path below the cgroup mounts: /podrun/pod<uid>
// (systemd driver: /podrun.slice/podrun-pod<uid>.slice).
func (p *Pod) Path() string { return p.path }

// Driver is "cgroupfs" or "systemd".
func (p *Pod) Driver() string { return p.driver }

// ContainerPath is the cgroup path of container id inside the pod, as
// ContainerConfig places it and as OOMKilled takes it.
func (p *Pod) ContainerPath(id string) string {
	if p.driver == DriverSystemd {
		return p.path + "/" + scopePrefix + "-" + id + ".scope"
	}
	return p.path + "/" + id
}

// ContainerCgroupsPath is the OCI spec's linux.cgroupsPath for container id,
// for callers that build their libcontainer config through runc's specconv
// (with Resources.LinuxResources).
func (p *Pod) ContainerCgroupsPath(id string) string {
	if p.driver == DriverSystemd {
		return p.slice + ":" + scopePrefix + ":" + id
	}
	return p.ContainerPath(id)
}

// ContainerConfig is the cgroup config of container id (a single path
// component, e.g. the container's name or libcontainer id) for
// libcontainer's configs.Config.Cgroups: a child of the pod cgroup with r's
// values, runc's default device rules, no swap beyond the memory limit, and
// memory.oom.group on v2 (the kubelet's defaults). libcontainer creates and
// removes it.
func (p *Pod) ContainerConfig(id string, r Resources) *cg.Cgroup {
	res := r.toLibcontainer(hostConvertOpts(false))
	if p.driver == DriverSystemd {
		return &cg.Cgroup{Systemd: true, Parent: p.slice, ScopePrefix: scopePrefix, Name: id, Resources: res}
	}
	return &cg.Cgroup{Path: p.ContainerPath(id), Resources: res}
}

// Files is the host directory of the pod cgroup for a controller ("cpu",
// "memory", "pids", ...): /sys/fs/cgroup/<controller>/podrun/pod<uid> on v1,
// the one unified directory on v2 whatever the controller. On a hybrid host
// "unified" (or "") names the v2 directory. "" when the controller has no
// hierarchy here.
func (p *Pod) Files(controller string) string {
	if cg.IsCgroup2UnifiedMode() || controller == "unified" {
		return p.paths[""]
	}
	return p.paths[controller]
}

// Paths returns every host directory of the pod cgroup, by controller.
func (p *Pod) Paths() map[string]string {
	out := make(map[string]string, len(p.paths))
	for k, v := range p.paths {
		out[k] = v
	}
	return out
}

func podPath(parent, podUID string) string {
	return path.Join(parent, "pod"+podUID)
}

// CheckParent is cleanParent's verdict on a --cgroup-parent, for the CLI to
// refuse it before anything is recorded.
func CheckParent(parent string) error {
	_, err := cleanParent(parent)
	return err
}

// cleanParent validates a cgroup parent: absolute, because a relative cgroup
// path lands below the caller's own cgroup.
func cleanParent(parent string) (string, error) {
	if parent == "" {
		return DefaultParent, nil
	}
	if !path.IsAbs(parent) {
		return "", fmt.Errorf("cgroup parent %q must be an absolute path", parent)
	}
	return path.Clean(parent), nil
}

func checkName(what, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("invalid %s %q", what, name)
	}
	return nil
}

// systemdSlices names the slices of the systemd driver as the kubelet does
// (CgroupName.ToSystemd): each path component with '-' escaped to '_', joined
// by '-': parent /podrun → podrun.slice, the pod → podrun-pod<uid>.slice.
func systemdSlices(parent, podUID string) (parentSlice, podSlice string) {
	var parts []string
	for _, c := range strings.Split(strings.Trim(parent, "/"), "/") {
		if c != "" {
			parts = append(parts, strings.ReplaceAll(c, "-", "_"))
		}
	}
	parentSlice = "-.slice"
	if len(parts) > 0 {
		parentSlice = strings.Join(parts, "-") + ".slice"
	}
	podSlice = strings.Join(append(parts, "pod"+strings.ReplaceAll(podUID, "-", "_")), "-") + ".slice"
	return parentSlice, podSlice
}

// systemdParentPath is the cgroupfs path of the systemd form of parent ("" for "/").
func systemdParentPath(parent string) string {
	slice, _ := systemdSlices(parent, "x")
	if slice == "-.slice" {
		return ""
	}
	p, err := systemd.ExpandSlice(slice)
	if err != nil {
		return ""
	}
	return p
}

// hostConvertOpts describes this host for a conversion.
func hostConvertOpts(pod bool) convertOpts {
	o := convertOpts{pod: pod, unified: cg.IsCgroup2UnifiedMode()}
	if o.unified {
		if data, err := os.ReadFile(filepath.Join(fs2.UnifiedMountpoint, "cgroup.controllers")); err == nil {
			for _, c := range strings.Fields(string(data)) {
				if c == "hugetlb" {
					o.hugePageSizes = nonNil(cg.HugePageSizes())
				}
			}
		}
		return o
	}
	if mnt, err := cg.FindCgroupMountpoint("", "memory"); err == nil {
		_, err := os.Stat(filepath.Join(mnt, "memory.memsw.limit_in_bytes"))
		o.swapAccounting = err == nil
	}
	// Only a v1 hugetlb hierarchy is usable by the fs manager; on a hybrid host
	// hugetlb may sit on the v2 mount alone, where the kubelet skips it too.
	if _, err := cg.FindCgroupMountpoint("", "hugetlb"); err == nil {
		o.hugePageSizes = nonNil(cg.HugePageSizes())
	}
	return o
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// hierarchyDirs returns the host directories of cgroup path rel in every
// hierarchy (deduplicated, existing or not): the unified dir on v2; on v1 one
// per mounted controller, plus the named systemd and the hybrid unified dirs.
func hierarchyDirs(rel string) ([]string, error) {
	if cg.IsCgroup2UnifiedMode() {
		return []string{filepath.Join(fs2.UnifiedMountpoint, rel)}, nil
	}
	m, err := fs.NewManager(&cg.Cgroup{Path: rel, Resources: &cg.Resources{SkipDevices: true}}, nil)
	if err != nil {
		return nil, fmt.Errorf("finding the cgroup hierarchies of %s: %w", rel, err)
	}
	seen := map[string]bool{}
	var dirs []string
	for _, d := range m.GetPaths() {
		if d != "" && !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	return dirs, nil
}

// existing keeps the dirs that exist.
func existing(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// Leftovers lists the cgroup directories (host paths, in every hierarchy and
// in both the cgroupfs and systemd layouts) left below parent, deepest last;
// parent itself is not listed. Empty once every pod has been destroyed.
func Leftovers(parent string) ([]string, error) {
	parent, err := cleanParent(parent)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rel := range []string{parent, systemdParentPath(parent)} {
		if rel == "" || rel == "/" {
			continue
		}
		dirs, err := hierarchyDirs(rel)
		if err != nil {
			return nil, err
		}
		for _, d := range existing(dirs) {
			sub, err := subdirs(d)
			if err != nil {
				return nil, fmt.Errorf("listing cgroups below %s: %w", d, err)
			}
			out = append(out, sub...)
		}
	}
	return out, nil
}

// subdirs lists the directories below dir, parents before children.
func subdirs(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() && p != dir {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// sandboxName is the pod's own cgroup for its helpers, the kubelet's pause
// container's place: <pod>/sandbox, or podrun-sandbox-<uid>.scope in the pod
// slice under the systemd driver (scope names are global, hence the uid).
// Container IDs are random hex, so the name never collides with one.
const sandboxName = "sandbox"

// AddSandboxProcess moves a pod helper (the PID-namespace holder of a pod
// sharing its process namespace) into the pod's sandbox cgroup, a child of
// the pod cgroup, as the kubelet's pause container has its own cgroup (a
// containerd sandbox scope) beside the containers'. On cgroup v2 a cgroup that
// holds processes cannot hand controllers to its children (the
// no-internal-process rule): in the pod cgroup itself the holder would keep
// every container cgroup from getting its limits. DestroyPod removes it.
func (p *Pod) AddSandboxProcess(pid int) error {
	id := sandboxName
	if p.driver == DriverSystemd {
		id = sandboxName + "-" + p.uid
	}
	config := p.ContainerConfig(id, Resources{})
	m, err := manager.New(config)
	if err != nil {
		return fmt.Errorf("creating the cgroup manager for the sandbox of pod %s: %w", p.uid, err)
	}
	if err := m.Apply(pid); err != nil {
		return fmt.Errorf("moving pid %d into the sandbox cgroup of pod %s: %w", pid, p.uid, err)
	}
	return nil
}

// AddProcess moves a process into the pod cgroup (every hierarchy): for the
// pod's own helpers, such as the PID-namespace holder of a pod that shares
// its process namespace.
func (p *Pod) AddProcess(pid int) error {
	for ctl, dir := range p.paths {
		if _, err := os.Stat(dir); dir == "" || err != nil {
			continue // a hierarchy the pod cgroup does not use (devices, on v1)
		}
		if err := cg.WriteCgroupProc(dir, pid); err != nil {
			return fmt.Errorf("moving pid %d into the %s cgroup of pod %s: %w", pid, ctl, p.path, err)
		}
	}
	return nil
}
