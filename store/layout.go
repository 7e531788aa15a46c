// Package store keeps the host's records: one record per object (pods today),
// with its spec, status, events and settings, and is the only package that
// knows the on-disk layout. Every CLI verb reads it; the supervisor writes a
// pod's status into it.
package store

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Layout says where podrun keeps things on this host. Root survives reboots
// (images, pod records, logs); RunRoot is volatile (libcontainer state, namespace
// pins, mount points, supervisor pid and lock).
type Layout struct {
	Root         string
	RunRoot      string
	CgroupParent string
	// CgroupDriver is "cgroupfs" or "systemd".
	CgroupDriver string
	// Bridge and Subnet configure the pod network (empty means the network package's defaults).
	Bridge string
	Subnet string
	// ClusterDNS is a pod's cluster DNS address (from its record's settings).
	ClusterDNS string
	// ResolvConf is the kubelet's --resolv-conf a pod was applied with
	// (from its record's settings); empty: the host's (network.HostResolvConf).
	ResolvConf string
}

// Defaults as documented in DESIGN.md.
const (
	DefaultRoot         = "/var/lib/podrun"
	DefaultRunRoot      = "/run/podrun"
	DefaultCgroupParent = "/podrun"
)

// PodsDir holds one record directory per pod.
func (l Layout) PodsDir() string { return filepath.Join(l.Root, "pods") }

// ImagesDir is the image store.
func (l Layout) ImagesDir() string { return filepath.Join(l.Root, "images") }

// SeccompDir holds Localhost profiles, as <kubelet root>/seccomp does on a node.
func (l Layout) SeccompDir() string { return filepath.Join(l.Root, "seccomp") }

// NetworkDir keeps IPAM and per-pod network state.
func (l Layout) NetworkDir() string { return filepath.Join(l.Root, "network") }

// uidLen is the length of the UIDs podrun gives pods.
const uidLen = 36

// PodDirName is the kubelet's log directory name: <namespace>_<name>_<uid>. A
// name too long for one directory name (valid pod names have up to 253
// characters) is shortened and ends in a hash of the whole name.
func PodDirName(namespace, name, uid string) string {
	return fmt.Sprintf("%s_%s_%s", namespace, fileName(name, maxFileName-len(namespace)-2-uidLen), uid)
}

// PodPaths are the paths of one pod.
type PodPaths struct {
	Dir    string // <root>/pods/<ns>_<name>_<uid>: spec, status, events, logs, volumes, upper dirs
	RunDir string // <run-root>/pods/<uid>: supervisor lock and pid, libcontainer state, mounts
}

// Pod returns the paths of a pod.
func (l Layout) Pod(namespace, name, uid string) PodPaths {
	return PodPaths{
		Dir:    filepath.Join(l.PodsDir(), PodDirName(namespace, name, uid)),
		RunDir: filepath.Join(l.RunRoot, "pods", uid),
	}
}

func (p PodPaths) SpecFile() string   { return filepath.Join(p.Dir, "pod.json") }
func (p PodPaths) StatusFile() string { return filepath.Join(p.Dir, "status.json") }

// ConditionsFile holds the pod conditions set through the status
// subresource (readiness gates' conditions, say), which the supervisor
// keeps in the status it writes, as the kubelet's status manager keeps the
// conditions it does not own.
func (p PodPaths) ConditionsFile() string { return filepath.Join(p.Dir, "conditions.json") }

// UserNSFile holds the first host ID of the block a pod with hostUsers:
// false holds (runtime's allocateUserNS), until the pod is removed.
func (p PodPaths) UserNSFile() string  { return filepath.Join(p.RunDir, "userns") }
func (p PodPaths) ObjectsFile() string { return filepath.Join(p.Dir, "objects.json") }

// SecretsFile keeps the pod's Secrets under the run root (in memory on a
// host whose /run is a tmpfs), never under --root, as the kubelet keeps them.
func (p PodPaths) SecretsFile() string { return filepath.Join(p.RunDir, "secrets.json") }
func (p PodPaths) EventsFile() string  { return filepath.Join(p.Dir, "events.jsonl") }
func (p PodPaths) RequestFile() string { return filepath.Join(p.RunDir, "request.json") }
func (p PodPaths) SupervisorLog() string {
	return filepath.Join(p.Dir, "supervisor.log")
}

// EtcDir holds the pod's hosts, resolv.conf and hostname files, bind-mounted into containers.
func (p PodPaths) EtcDir() string { return filepath.Join(p.Dir, "etc") }

// LogFile is where a container run's output goes, as the kubelet lays it out.
func (p PodPaths) LogFile(container string, restartCount int32) string {
	return filepath.Join(p.Dir, container, fmt.Sprintf("%d.log", restartCount))
}

// ContainerDir holds a container's writable layer and termination-log file.
func (p PodPaths) ContainerDir(container string) string {
	return filepath.Join(p.Dir, "containers", container)
}

// AppliedFile holds the hash of what was applied (see AppliedHash).
func (p PodPaths) AppliedFile() string { return filepath.Join(p.Dir, "applied.sha256") }

// ProcessFile is what `podrun exec` needs to run a process like the container's own.
// ProcessFile is under the run root: the environment may hold Secret values.
func (p PodPaths) ProcessFile(container string) string {
	return filepath.Join(p.RunDir, "process", container+".json")
}

// StdinFifo is the named pipe a container with stdin: true reads from;
// `podrun run -i` writes to it.
func (p PodPaths) StdinFifo(container string) string {
	return filepath.Join(p.RunDir, "stdin", container)
}

func (p PodPaths) LockFile() string { return filepath.Join(p.RunDir, "supervisor.lock") }
func (p PodPaths) PidFile() string  { return filepath.Join(p.RunDir, "supervisor.pid") }

// StartTimeFile holds the supervisor's process start time (see SupervisorPid).
func (p PodPaths) StartTimeFile() string { return filepath.Join(p.RunDir, "supervisor.start") }

// RunEventsFile holds the events that could not be written to EventsFile (a full disk).
func (p PodPaths) RunEventsFile() string { return filepath.Join(p.RunDir, "events.jsonl") }

// StateRoot is libcontainer's state root for the pod's containers.
func (p PodPaths) StateRoot() string { return filepath.Join(p.RunDir, "containers") }

// RootfsDir is where a container's overlay rootfs is mounted.
func (p PodPaths) RootfsDir(container string) string {
	return filepath.Join(p.RunDir, "rootfs", container)
}

// ImageVolumesDir holds the read-only mounts of the pod's image volumes, one
// per image (ImageVolumeDir), shared by every volume and container of the pod
// that uses the image, as containerd keeps them per sandbox and image.
func (p PodPaths) ImageVolumesDir() string { return filepath.Join(p.RunDir, "image-volumes") }

// ImageVolumeDir is where the image with config digest id is mounted for
// the pod's image volumes.
func (p PodPaths) ImageVolumeDir(id string) string {
	_, hex, _ := strings.Cut(id, ":")
	if hex == "" {
		hex = id
	}
	return filepath.Join(p.ImageVolumesDir(), hex)
}

// NSDir holds the pinned IPC and UTS namespaces and the pod's /dev/shm.
func (p PodPaths) NSDir() string { return filepath.Join(p.RunDir, "ns") }

// Created is when the store was made: the birth time of its root directory
// (statx), zero when the file system does not record one. The objects every
// cluster has from its start (the system PriorityClasses, the system
// namespaces) were created then, as the API server creates them when it
// first starts on an empty etcd (scheduling's PostStartHook
// AddSystemPriorityClasses, the system namespaces controller).
func (l Layout) Created() time.Time {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, l.Root, 0, unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 || st.Btime.Sec <= 0 {
		return time.Time{}
	}
	return time.Unix(st.Btime.Sec, int64(st.Btime.Nsec))
}
