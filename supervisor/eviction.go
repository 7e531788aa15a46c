package supervisor

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/volumes"
)

// The kubelet's eviction manager for local storage limits
// (pkg/kubelet/eviction: eviction_manager.go localStorageEviction and
// helpers.go). Node pressure evictions have no counterpart here: podrun
// shares its host with everything else on it and ranks no pods against
// each other.
const (
	// ReasonEvicted is the pod status reason and event reason of an eviction.
	ReasonEvicted = "Evicted"
	// evictionMonitoringPeriod is how often the eviction manager looks (its
	// monitoringInterval, 10s).
	evictionMonitoringPeriod = 10 * time.Second
	// evictionGrace is immediateEvictionGracePeriodSeconds: a local storage
	// eviction kills the containers with a 1-second grace period.
	evictionGrace = time.Second

	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "

	// systemCriticalPriority is scheduling.SystemCriticalPriority: pods at or
	// above it are critical (kubelettypes.IsCriticalPodBasedOnPriority).
	systemCriticalPriority = 2 * 1000000000
)

// storageLimits are the local storage limits of one pod that the eviction
// manager enforces, with where their use is measured.
type storageLimits struct {
	emptyDirs []emptyDirLimit
	// pod is the pod's summed ephemeral-storage limit (resource.PodLimits),
	// nil when no container sets one.
	pod *resource.Quantity
	// containers are the app containers' own limits (only app containers:
	// containerEphemeralStorageLimitEviction walks pod.Spec.Containers).
	containers []containerLimit
	// all lists every container, whose writable layer and logs count
	// towards the pod's use.
	all   []string
	paths store.PodPaths
	// ephemeral are the volumes whose use counts towards the pod's (the
	// disk-backed emptyDirs), and etc holds the pod's hosts file.
	ephemeral []string
	etc       string
}

type emptyDirLimit struct {
	name, path string
	limit      resource.Quantity
}

type containerLimit struct {
	name  string
	limit resource.Quantity
}

// localStorageLimits collects what the eviction manager would check for pod;
// ok is false when there is nothing: no limit, or a critical pod (the
// eviction manager's evictPod never evicts one).
func localStorageLimits(pod *corev1.Pod, vols []volumes.Volume, paths store.PodPaths) (l storageLimits, ok bool) {
	if pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority {
		return l, false // kubelettypes.IsCriticalPod
	}
	l.paths, l.etc = paths, paths.EtcDir()
	byName := map[string]volumes.Volume{}
	for _, v := range vols {
		byName[v.Name] = v
	}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir == nil {
			continue
		}
		hv, found := byName[v.Name]
		if !found {
			continue
		}
		if hv.Medium != corev1.StorageMediumMemory {
			l.ephemeral = append(l.ephemeral, hv.Path)
		}
		if size := v.EmptyDir.SizeLimit; size != nil && size.Sign() == 1 {
			l.emptyDirs = append(l.emptyDirs, emptyDirLimit{name: v.Name, path: hv.Path, limit: size.DeepCopy()})
		}
	}
	if q, found := podspec.SummedLimits(pod)[corev1.ResourceEphemeralStorage]; found {
		l.pod = &q
	}
	for _, c := range pod.Spec.InitContainers {
		l.all = append(l.all, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		l.all = append(l.all, c.Name)
		if q := c.Resources.Limits.StorageEphemeral(); q != nil && q.Value() != 0 {
			l.containers = append(l.containers, containerLimit{name: c.Name, limit: q.DeepCopy()})
		}
	}
	return l, len(l.emptyDirs) > 0 || l.pod != nil || len(l.containers) > 0
}

// check is one pass of localStorageEviction for the pod, in its order: the
// emptyDir size limits, the pod's limit, then each container's. It returns
// the eviction message, or "" when every use is within its limit.
func (l storageLimits) check() string {
	for _, e := range l.emptyDirs {
		if used := diskUsage(e.path); used > e.limit.Value() {
			return fmt.Sprintf(emptyDirMessageFmt, e.name, e.limit.String())
		}
	}
	// The pod's use is what the stats summary counts: every container's
	// writable layer and logs, the disk-backed emptyDirs and the hosts file.
	if l.pod == nil && len(l.containers) == 0 {
		return "" // only emptyDir limits: no writable layer or log to walk
	}
	containerUse := map[string]int64{}
	for _, name := range l.all {
		containerUse[name] = diskUsage(filepath.Join(l.paths.ContainerDir(name), "upper")) +
			diskUsage(filepath.Dir(l.paths.LogFile(name, 0)))
	}
	if l.pod != nil {
		total := diskUsage(l.etc)
		for _, u := range containerUse {
			total += u
		}
		for _, p := range l.ephemeral {
			total += diskUsage(p)
		}
		if total > l.pod.Value() {
			return fmt.Sprintf(podEphemeralStorageMessageFmt, l.pod.String())
		}
	}
	for _, c := range l.containers {
		if containerUse[c.name] > c.limit.Value() {
			return fmt.Sprintf(containerEphemeralStorageMessageFmt, c.name, c.limit.String())
		}
	}
	return ""
}

// diskUsage is what `du` reports for a tree, in bytes: the blocks allocated
// to every file and directory under path (a file with several links counted
// once), without following symbolic links. The kubelet measures volumes and
// writable layers the same way (pkg/volume/util/fs.DiskUsage). A missing
// path uses nothing.
func diskUsage(path string) int64 {
	var total int64
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile, or unreadable: skip it
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if st.Nlink > 1 && !info.IsDir() {
			key := inode{uint64(st.Dev), st.Ino}
			if seen[key] {
				return nil
			}
			seen[key] = true
		}
		total += st.Blocks * 512
		return nil
	})
	return total
}

// monitorLocalStorage runs the eviction manager's local storage checks every
// evictionMonitoringPeriod until stop is closed, and tells the machine once
// the pod is to be evicted.
func monitorLocalStorage(l storageLimits, m *machine, stop <-chan struct{}) {
	t := time.NewTicker(evictionMonitoringPeriod)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if msg := l.check(); msg != "" {
			m.post(message{evict: msg})
			return
		}
	}
}

// evict is the eviction manager's evictPod: a Warning Evicted event, then
// the pod's containers are killed and never started again, and the pod ends
// Failed with reason Evicted and the message (shown once its containers have
// stopped, as the status manager's mergePodStatus delays a terminal phase).
// killContainer takes the grace period override only after the preStop
// hook: a hook still has the pod's grace period, the stop signal is
// followed by SIGKILL after the override.
func (m *machine) evict(msg string) {
	if m.terminal || m.deleting || m.state != stateRunning {
		return
	}
	m.events.add("Warning", ReasonEvicted, "", "%s", msg)
	m.evicted = msg
	m.terminal = true
	m.finalPhase = corev1.PodFailed
	m.killGrace = evictionGrace
	m.beginTermination(m.gracePeriod)
}
